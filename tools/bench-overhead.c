/*
 * clfleet-bench overhead: what a small launch costs. Two tiny kernels, one over --items floats
 * in-out (x = x * a + 1) and one with no arrays (a scalar only), each run
 *
 *   raw       plain OpenCL on the fastest device: write, kernel, blocking read (in-out), or
 *             the kernel and clFinish (no arrays), on a buffer and kernel made beforehand: the
 *             round trip no runtime can beat
 *   one       clf_launch() on that device alone
 *   static, dynamic, auto   clf_launch() on it and one other device (on a fleet of one
 *             device: on that device alone, where dynamic still cuts chunks)
 *
 * The fastest device is found by measurement: the in-out round trip of clf_launch() on each
 * kind of device alone (clf_bench_same_kind()), the shortest median wins (device 0 may be a CPU beside a
 * GPU, issue 27).
 *
 * in rounds: each round times a batch of launches of every variant, one variant after the
 * other, so that a change in the machine's load hits all of them alike. Reported: the median
 * over the rounds of the time per launch, of its ratio to raw in the same round, and the time
 * per chunk (per launch / chunks per launch). The in-out array is checked at the end: every
 * launch of every variant adds 1 to each element.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "clfleet.h"
#include "clfleet/opencl.h"

#define MAX_REPS CLF_BENCH_MAX_REPS

static const char SRC[] = "__kernel void inout(__global float *x, float a)\n"
                          "{\n"
                          "    size_t i = get_global_id(0);\n"
                          "    x[i] = x[i] * a + 1.0f;\n"
                          "}\n"
                          "__kernel void noarr(int n)\n"
                          "{\n"
                          "    if ((int)get_global_id(0) == n)\n"
                          "        return;\n"
                          "}\n";

enum { V_RAW, V_ONE, V_STATIC, V_DYNAMIC, V_AUTO, NVAR };
static const char *const VAR_NAMES[NVAR] = {"raw", "one", "static", "dynamic", "auto"};
static const clf_strategy VAR_STRATEGY[NVAR] = {0, CLF_STRATEGY_STATIC, CLF_STRATEGY_STATIC,
                                                CLF_STRATEGY_DYNAMIC, CLF_STRATEGY_AUTO};

typedef struct bench {
    clf_bench_common opt;
    size_t items, batch;
    clf_fleet *fl;
    clf_program *prog;
    size_t dev[2], ndev; /* dev[0]: the fastest device; ndev: 2, or 1 on a one-device fleet */
    float *x, a;
    int n;
    uint64_t launches; /* of the in-out kernel, each adding 1 */
    double alone_us[2]; /* clf_launch()'s in-out round trip alone on dev[0] and dev[1] */
    /* raw OpenCL state on dev[0] */
    cl_kernel kin, knoarr;
    cl_mem buf;
    cl_command_queue q;
} bench;

typedef struct figures {
    double t[2][NVAR][MAX_REPS]; /* seconds per launch, per kernel, variant and round */
    double med_us[2][NVAR], ratio[2][NVAR], chunks[2][NVAR], per_chunk_us[2][NVAR];
    clf_strategy ran_as[2][NVAR];
    unsigned rounds;
} figures;

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench overhead [--json] [--quick] [--verbose] [--reps N]\n"
          "                              [--items N] [--devices SELECTION] [--trace PATH]\n"
          "                              [--simulate RULES]\n"
          "  --json              one JSON document on standard output\n"
          "  --quick             fewer rounds and launches (a smoke test)\n"
          "  --verbose           also the issue's targets, and whether they are met\n"
          "  --reps N            rounds, 1 to 64; each times a batch of launches of every\n"
          "                      variant, and the medians over the rounds are reported (15)\n"
          "  --items N           floats of the in-out kernel, 1 to 16M, K and M suffixes (4096)\n"
          "  --devices S         the devices (the fastest and one other are used; default\n"
          "                      $CLFLEET_DEVICES, else the library's default; CPU devices\n"
          "                      are split when there are too few; one device runs alone)\n"
          "  --simulate R        set CLFLEET_SIMULATE=R for the fleet (a testing tool)\n"
          "  --trace PATH        a Perfetto timeline per fleet, PATH-N.json\n"
          "  -h, --help          this text; -V, --version: the version\n"
          "Variants: raw OpenCL on the fastest device by measurement (write, kernel, blocking\n"
          "read; or kernel and clFinish), clf_launch() on it alone, and on two devices with static,\n"
          "dynamic and auto. Exit status: 0 success, 1 failure or a wrong result, 2 bad\n"
          "command line, 77 no suitable device.\n",
          to);
}

enum { OPT_ITEMS = CLF_BENCH_OWN };
static const struct option OWN[] = {{"items", required_argument, NULL, OPT_ITEMS},
                                    {NULL, 0, NULL, 0}};

static int own_option(void *b_, int val, const char *arg)
{
    bench *b = b_;
    (void)val;
    return clf_bench_number(arg, 10, 1, (size_t)16 << 20, &b->items);
}

static clf_status raw_setup(bench *b)
{
    cl_int err;
    cl_program p = clf_cl_program(b->prog, b->dev[0]);
    b->q = clf_cl_compute_queue(b->fl, b->dev[0]);
    b->kin = clCreateKernel(p, "inout", &err);
    if (err == CL_SUCCESS)
        b->knoarr = clCreateKernel(p, "noarr", &err);
    if (err == CL_SUCCESS)
        b->buf = clCreateBuffer(clf_cl_context(b->fl, b->dev[0]), CL_MEM_READ_WRITE,
                                b->items * sizeof(float), NULL, &err);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(b->kin, 0, sizeof b->buf, &b->buf);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(b->kin, 1, sizeof b->a, &b->a);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(b->knoarr, 0, sizeof b->n, &b->n);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clfleet-bench overhead: raw OpenCL setup: %d\n", err);
        return CLF_ERROR_OPENCL;
    }
    return CLF_SUCCESS;
}

/* One launch of kernel k (0: in-out, 1: no arrays) as variant v. */
static clf_status launch(bench *b, int k, int v, clf_launch_report *rep)
{
    if (v == V_RAW) {
        size_t g = k == 0 ? b->items : 1, bytes = b->items * sizeof(float);
        cl_int err = CL_SUCCESS;
        if (k == 0)
            err = clEnqueueWriteBuffer(b->q, b->buf, CL_FALSE, 0, bytes, b->x, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(b->q, k == 0 ? b->kin : b->knoarr, 1, NULL, &g, NULL,
                                         0, NULL, NULL);
        if (err == CL_SUCCESS && k == 0)
            err = clEnqueueReadBuffer(b->q, b->buf, CL_TRUE, 0, bytes, b->x, 0, NULL, NULL);
        else if (err == CL_SUCCESS)
            err = clFinish(b->q);
        if (err != CL_SUCCESS) {
            fprintf(stderr, "clfleet-bench overhead: raw OpenCL launch: %d\n", err);
            return CLF_ERROR_OPENCL;
        }
        memset(rep, 0, sizeof *rep);
        b->launches += k == 0;
        return CLF_SUCCESS;
    }
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = k == 0 ? "inout" : "noarr";
    d.dims = 1;
    d.global[0] = k == 0 ? b->items : 1;
    d.strategy = VAR_STRATEGY[v];
    d.devices = b->dev;
    d.num_devices = v == V_ONE ? 1 : b->ndev;
    clf_arg in[] = {CLF_INOUT(b->x, b->items * sizeof(float), sizeof(float)), CLF_SCALAR(&b->a)};
    clf_arg no[] = {CLF_SCALAR(&b->n)};
    clf_status st = k == 0 ? clf_launch(b->fl, b->prog, &d, in, 2, rep)
                           : clf_launch(b->fl, b->prog, &d, no, 1, rep);
    b->launches += k == 0 && st == CLF_SUCCESS;
    return st;
}

static void raw_teardown(bench *b)
{
    if (b->kin)
        clReleaseKernel(b->kin);
    if (b->knoarr)
        clReleaseKernel(b->knoarr);
    if (b->buf)
        clReleaseMemObject(b->buf);
    b->kin = b->knoarr = NULL;
    b->buf = NULL;
}

/* The median in-out round trip of clf_launch() on device dev alone, in microseconds;
 * negative on error. clfleet's launch, not raw OpenCL: CLFLEET_SIMULATE acts on the first
 * and not on the second, and the device chosen must be the fastest the fleet sees. */
static double probe(bench *b, size_t dev, unsigned n)
{
    double t[16];
    static clf_launch_report rep;
    b->dev[0] = dev;
    for (unsigned i = 0; i < n + 2; i++) { /* two to warm up */
        double t0 = clf_bench_now();
        clf_status st = launch(b, 0, V_ONE, &rep);
        if (st != CLF_SUCCESS) {
            clf_bench_fail("overhead", "one device", st);
            return -1;
        }
        if (i >= 2)
            t[i - 2] = (clf_bench_now() - t0) * 1e6;
    }
    return clf_bench_median(t, n);
}

/* dev[0]: the device with the shortest round trip alone, timed on one device of each kind;
 * dev[1]: the first other device (of another kind when there is one). */
static int pick_devices(bench *b)
{
    size_t n = clf_fleet_device_count(b->fl), kinds[64], nk = 0;
    double us[64];
    for (size_t i = 0; i < n && nk < 64; i++) {
        size_t k = 0;
        while (k < nk && !clf_bench_same_kind(b->fl, kinds[k], i))
            k++;
        if (k < nk)
            continue;
        kinds[nk] = i;
        if ((us[nk] = probe(b, i, b->opt.quick ? 5 : 15)) < 0)
            return EXIT_FAILURE;
        nk++;
    }
    if (nk == 0)
        return EXIT_FAILURE;
    size_t best = clf_bench_fastest(us, nk);
    b->dev[0] = kinds[best < nk ? best : 0];
    b->alone_us[0] = us[best < nk ? best : 0];
    b->ndev = n >= 2 ? 2 : 1;
    b->dev[1] = b->dev[0];
    b->alone_us[1] = NAN;
    if (b->ndev == 2) {
        size_t other = nk >= 2 ? kinds[best == 0] : b->dev[0] == 0 ? 1 : 0;
        b->dev[1] = other;
        for (size_t k = 0; k < nk; k++)
            if (kinds[k] == other)
                b->alone_us[1] = us[k];
    }
    return raw_setup(b) == CLF_SUCCESS ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int measure(bench *b, figures *f)
{
    static clf_launch_report rep;
    unsigned warm = b->opt.quick ? 2 : 5;
    /* Warm up every variant: builds, first allocations, and what auto learns. */
    for (int k = 0; k < 2; k++)
        for (int v = 0; v < NVAR; v++)
            for (unsigned i = 0; i < warm; i++) {
                clf_status st = launch(b, k, v, &rep);
                if (st != CLF_SUCCESS)
                    return clf_bench_fail("overhead", VAR_NAMES[v], st);
            }
    for (unsigned r = 0; r < f->rounds; r++)
        for (int k = 0; k < 2; k++)
            for (int v = 0; v < NVAR; v++) {
                double t0 = clf_bench_now();
                unsigned chunks = 0;
                for (size_t i = 0; i < b->batch; i++) {
                    clf_status st = launch(b, k, v, &rep);
                    if (st != CLF_SUCCESS)
                        return clf_bench_fail("overhead", VAR_NAMES[v], st);
                    for (size_t j = 0; j < rep.num_devices; j++)
                        chunks += rep.dev[j].chunks;
                }
                f->t[k][v][r] = (clf_bench_now() - t0) / (double)b->batch;
                f->chunks[k][v] = v == V_RAW ? 1 : (double)chunks / (double)b->batch;
                f->ran_as[k][v] = rep.strategy;
            }
    for (int k = 0; k < 2; k++)
        for (int v = 0; v < NVAR; v++) {
            double ratio[MAX_REPS], tv[MAX_REPS];
            for (unsigned r = 0; r < f->rounds; r++) {
                ratio[r] = f->t[k][v][r] / f->t[k][V_RAW][r];
                tv[r] = f->t[k][v][r];
            }
            f->med_us[k][v] = clf_bench_median(tv, f->rounds) * 1e6;
            f->ratio[k][v] = clf_bench_median(ratio, f->rounds);
            f->per_chunk_us[k][v] = f->med_us[k][v] / (f->chunks[k][v] > 0 ? f->chunks[k][v] : 1);
        }
    return EXIT_SUCCESS;
}

static int check(const bench *b)
{
    for (size_t i = 0; i < b->items; i++)
        if (b->x[i] != (float)(i % 100) + (float)b->launches) {
            fprintf(stderr, "clfleet-bench overhead: element %zu is %g, expected %g\n", i,
                    (double)b->x[i], (double)((float)(i % 100) + (float)b->launches));
            return 0;
        }
    return 1;
}

static const char *const KERNEL_LABEL[2] = {"in-out floats", "no arrays"};

static void print_table(const bench *b, const figures *f)
{
    clf_device_info in, other;
    clf_device_get_info(&in, b->fl, b->dev[0]);
    clf_device_get_info(&other, b->fl, b->dev[1]);
    if (b->ndev == 2)
        printf("overhead: launches of tiny kernels on devices %zu (%s) and %zu (%s), %u rounds "
               "of %zu launches each\n",
               b->dev[0], in.name, b->dev[1], other.name, f->rounds, b->batch);
    else
        printf("overhead: launches of tiny kernels on a fleet of one device, %zu (%s), %u "
               "rounds of %zu launches each\n",
               b->dev[0], in.name, f->rounds, b->batch);
    printf("raw and one: device %zu, the fastest alone by clf_launch()'s round trip (%.1f us",
           b->dev[0], b->alone_us[0]);
    if (b->ndev == 2 && !isnan(b->alone_us[1]))
        printf("; device %zu: %.1f us", b->dev[1], b->alone_us[1]);
    printf(")\n");
    if (clf_bench_simulation())
        printf("simulated: CLFLEET_SIMULATE='%s'\n", clf_bench_simulation());
    for (int k = 0; k < 2; k++) {
        printf("\n%s (%zu items)\n", KERNEL_LABEL[k], k == 0 ? b->items : (size_t)1);
        printf("  %-10s %-10s %12s %10s %8s %14s\n", "variant", "ran as", "us/launch",
               "x raw", "chunks", "us/chunk");
        for (int v = 0; v < NVAR; v++)
            printf("  %-10s %-10s %12.1f %10.2f %8.1f %14.1f\n", VAR_NAMES[v],
                   v == V_RAW ? "-" : clf_strategy_name(f->ran_as[k][v]), f->med_us[k][v],
                   f->ratio[k][v], f->chunks[k][v], f->per_chunk_us[k][v]);
    }
    printf("  (medians over the rounds; x raw: the median of the per-round ratios)\n");
    if (b->opt.verbose) {
        /* The targets: auto no slower than the device alone (5% for noise); a launch
         * on two devices within twice the raw round trip (the copies are the same bytes). */
        double a = f->ratio[0][V_AUTO] / f->ratio[0][V_ONE];
        printf("targets: auto / one device %.2f (<= 1: %s); static on two devices / raw %.2f "
               "in-out, %.2f no arrays (<= 2: %s)\n",
               a, a <= 1.05 ? "yes" : "no", f->ratio[0][V_STATIC], f->ratio[1][V_STATIC],
               fmax(f->ratio[0][V_STATIC], f->ratio[1][V_STATIC]) <= 2 ? "yes" : "no");
    }
}

static void print_json(const bench *b, const figures *f)
{
    printf("{\"benchmark\": \"overhead\", \"clfleet_version\": ");
    clf_tool_json_string(clf_version_string());
    if (b->ndev == 2)
        printf(", \"quick\": %s, \"devices\": [%zu, %zu]", b->opt.quick ? "true" : "false",
               b->dev[0], b->dev[1]);
    else
        printf(", \"quick\": %s, \"devices\": [%zu]", b->opt.quick ? "true" : "false",
               b->dev[0]);
    clf_device_info in;
    clf_device_get_info(&in, b->fl, b->dev[0]);
    printf(", \"baseline_device\": %zu, \"baseline_device_name\": ", b->dev[0]);
    clf_tool_json_string(in.name);
    printf(", \"baseline_alone_us\": ");
    clf_tool_json_num(b->alone_us[0]);
    printf(", \"simulate\": ");
    if (clf_bench_simulation())
        clf_tool_json_string(clf_bench_simulation());
    else
        printf("null");
    printf(", \"rounds\": %u, \"batch\": %zu,\n \"kernels\": [", f->rounds, b->batch);
    for (int k = 0; k < 2; k++) {
        printf("%s\n  {\"kernel\": \"%s\", \"items\": %zu, \"variants\": [", k ? "," : "",
               k == 0 ? "inout" : "noarr", k == 0 ? b->items : (size_t)1);
        for (int v = 0; v < NVAR; v++) {
            printf("%s\n    {\"variant\": \"%s\", \"ran_as\": \"%s\", \"us_per_launch\": ",
                   v ? "," : "", VAR_NAMES[v],
                   v == V_RAW ? "raw" : clf_strategy_name(f->ran_as[k][v]));
            clf_tool_json_num(f->med_us[k][v]);
            printf(", \"ratio_to_raw\": ");
            clf_tool_json_num(f->ratio[k][v]);
            printf(", \"chunks_per_launch\": ");
            clf_tool_json_num(f->chunks[k][v]);
            printf(", \"us_per_chunk\": ");
            clf_tool_json_num(f->per_chunk_us[k][v]);
            printf("}");
        }
        printf("]}");
    }
    printf("]}\n");
}

int clf_bench_overhead(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){.name = "overhead", .usage = usage, .quick_reps = 3};
    b.items = 4096;
    b.a = 1.0f;
    b.n = -1;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    static figures f;
    memset(&f, 0, sizeof f);
    f.rounds = b.opt.reps ? b.opt.reps : b.opt.quick ? 3 : 15;
    b.batch = b.opt.quick ? 5 : 50;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_status st = clf_bench_fleet_want(&b.fl, &b.opt, &o, 2, 1);
    if (st != CLF_SUCCESS) /* clf_bench_fleet() said why */
        return st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                        : EXIT_FAILURE;
    rc = EXIT_SUCCESS;
    if (!(b.x = malloc(b.items * sizeof *b.x))) {
        rc = clf_bench_fail("overhead", "memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        goto out;
    }
    for (size_t i = 0; i < b.items; i++)
        b.x[i] = (float)(i % 100);
    if ((st = clf_program_build_source(&b.prog, b.fl, SRC, NULL)) != CLF_SUCCESS) {
        rc = clf_bench_fail("overhead", "building the kernels", st);
        goto out;
    }
    if (pick_devices(&b) != EXIT_SUCCESS) {
        rc = EXIT_FAILURE;
        goto out;
    }
    rc = measure(&b, &f);
    if (rc == EXIT_SUCCESS && !check(&b))
        rc = EXIT_FAILURE;
    if (rc == EXIT_SUCCESS && b.opt.json)
        print_json(&b, &f);
    else if (rc == EXIT_SUCCESS)
        print_table(&b, &f);
out:
    raw_teardown(&b);
    clf_program_destroy(b.prog);
    clf_fleet_destroy(b.fl);
    free(b.x);
    return rc;
}

/*
 * clfleet-bench gemm: clf_sgemm() (or clf_dgemm()) on each device alone against the fleet
 * with each strategy, in GFLOP/s.
 *
 * The runs are interleaved: each round runs each device alone, then the fleet with every
 * strategy, so that load from other jobs falls on all of them alike. The baseline is the
 * fastest device alone, by the median of its times (on a GPU + CPU fleet device 0 may be the
 * CPU: comparing with it gave 138x "speedups", issue 27); the speedup of a run is the median
 * over rounds of (the baseline's time / the run's time in the same round). Devices of the
 * same kind (clf_bench_same_kind(): sixteen sub-devices of one CPU) are timed alone once, by
 * the first of them. A fleet of one device runs too: its strategies show what the fleet's
 * machinery costs on one device. Times are host
 * wall-clock times of whole calls (planning, transfers, clBLAST, reading C back). After a
 * warm-up call per configuration (clBLAST builds its kernels on first use), --reps rounds
 * are timed. One result is checked against a C reference on a sample of elements.
 *
 * The devices are every device of --devices, else of $CLFLEET_DEVICES, else of the
 * library's default; a single CPU root device is split into sub-devices of one compute unit, and
 * then the sub-devices of the first split device are used (sub-devices of one PoCL device
 * run at once; separate root devices share one thread pool).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "clfleet.h"
#include "clfleet/blas.h"

#define MAX_REPS CLF_BENCH_MAX_REPS
#define MAX_DEV 64
#define NSTRAT 5
#define NRUNS (MAX_DEV + NSTRAT) /* each kind of device alone, then each strategy */
#define SAMPLES 512

static const clf_strategy STRATEGIES[NSTRAT] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                                   CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                                   CLF_STRATEGY_AUTO};

typedef struct bench {
    clf_bench_common opt;
    int dbl;
    size_t n;
    clf_fleet *fl;
    size_t dev[MAX_DEV], ndev;
    size_t alone[MAX_DEV], nalone; /* the devices timed alone: one of each kind */
    int self_split; /* clf_bench_fleet() split the CPU devices */
    void *a, *b, *c;
} bench;

typedef struct figures {
    double t[NRUNS][MAX_REPS]; /* seconds, per round */
    double median[NRUNS], best[NRUNS], worst[NRUNS], speedup[NRUNS];
    clf_launch_report rep[NRUNS]; /* of the last round */
    size_t base;                  /* the run of the fastest device alone */
    double max_err;
} figures;

/* Runs [0, nalone) are the devices alone, then one per strategy on the fleet. */
static size_t nruns(const bench *b)
{
    return b->nalone + NSTRAT;
}

static clf_status call(bench *b, int run, clf_launch_report *rep)
{
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    int alone = (size_t)run < b->nalone;
    o.devices = alone ? &b->alone[run] : b->dev;
    o.num_devices = alone ? 1 : b->ndev;
    o.strategy = alone ? CLF_STRATEGY_STATIC : STRATEGIES[(size_t)run - b->nalone];
    size_t n = b->n;
    if (b->dbl)
        return clf_dgemm(b->fl, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, n, n, n, 1.0, b->a, n,
                         b->b, n, 0.0, b->c, n, &o, rep);
    return clf_sgemm(b->fl, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, n, n, n, 1.0f, b->a, n, b->b,
                     n, 0.0f, b->c, n, &o, rep);
}

static double elem(const bench *b, const void *x, size_t i)
{
    return b->dbl ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

/* The largest relative error of sampled elements of C against dot products in double. */
static double check(const bench *b)
{
    unsigned long long x = 0x2545f4914f6cdd1dull;
    double worst = 0;
    size_t n = b->n;
    for (int s = 0; s < SAMPLES; s++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t i = (size_t)(x % n), j = (size_t)((x >> 32) % n);
        double sum = 0, mag = 0;
        for (size_t k = 0; k < n; k++) {
            double t = elem(b, b->a, i * n + k) * elem(b, b->b, k * n + j);
            sum += t;
            mag += fabs(t);
        }
        double err = fabs(elem(b, b->c, i * n + j) - sum) / (mag > 0 ? mag : 1);
        if (!(err <= worst))
            worst = isnan(err) ? INFINITY : err;
    }
    return worst;
}

/* The devices: every device of the fleet, or when the bench split them, the sub-devices of
 * the first split device. */
static void choose_devices(bench *b)
{
    size_t n = clf_fleet_device_count(b->fl);
    clf_device_info first, in;
    clf_device_get_info(&first, b->fl, 0);
    b->ndev = 0;
    for (size_t i = 0; i < n && b->ndev < MAX_DEV; i++) {
        clf_device_get_info(&in, b->fl, i);
        if (!b->self_split || !first.is_sub_device ||
            (in.is_sub_device && in.parent_index == first.parent_index))
            b->dev[b->ndev++] = i;
    }
    b->nalone = 0;
    for (size_t i = 0; i < b->ndev; i++) {
        size_t k = 0;
        while (k < b->nalone && !clf_bench_same_kind(b->fl, b->alone[k], b->dev[i]))
            k++;
        if (k == b->nalone)
            b->alone[b->nalone++] = b->dev[i];
    }
}

static clf_status measure(bench *b, figures *f)
{
    clf_status st;
    int n = (int)nruns(b);
    for (int r = 0; r < n; r++) /* warm-up: clBLAST's kernels, learned weights */
        if ((st = call(b, r, &f->rep[r])) != CLF_SUCCESS)
            return st;
    for (unsigned k = 0; k < b->opt.reps; k++)
        for (int r = 0; r < n; r++) {
            double t0 = clf_bench_now();
            if ((st = call(b, r, &f->rep[r])) != CLF_SUCCESS)
                return st;
            f->t[r][k] = clf_bench_now() - t0;
        }
    f->max_err = check(b);
    double alone[MAX_DEV];
    for (size_t r = 0; r < b->nalone; r++) {
        double v[MAX_REPS];
        memcpy(v, f->t[r], b->opt.reps * sizeof *v);
        alone[r] = clf_bench_median(v, b->opt.reps);
    }
    f->base = clf_bench_fastest(alone, b->nalone);
    if (f->base >= b->nalone)
        f->base = 0;
    for (int r = 0; r < n; r++) {
        double v[MAX_REPS], ratio[MAX_REPS];
        memcpy(v, f->t[r], b->opt.reps * sizeof *v);
        for (unsigned k = 0; k < b->opt.reps; k++)
            ratio[k] = f->t[f->base][k] / f->t[r][k];
        f->median[r] = clf_bench_median(v, b->opt.reps);
        f->best[r] = v[0]; /* sorted by clf_bench_median() */
        f->worst[r] = v[b->opt.reps - 1];
        f->speedup[r] = clf_bench_median(ratio, b->opt.reps);
    }
    return CLF_SUCCESS;
}

static const char *run_name(const bench *b, const figures *f, size_t r, char *buf, size_t len)
{
    if (r < b->nalone)
        snprintf(buf, len, "device %zu alone%s", b->alone[r], r == f->base ? " (base)" : "");
    else if (STRATEGIES[r - b->nalone] == CLF_STRATEGY_AUTO)
        snprintf(buf, len, "auto (%s)", clf_strategy_name(f->rep[r].strategy));
    else
        snprintf(buf, len, "%s", clf_strategy_name(STRATEGIES[r - b->nalone]));
    return buf;
}

/* A device's name, or "?". */
static const char *dev_name(const bench *b, size_t dev, clf_device_info *in)
{
    return clf_device_get_info(in, b->fl, dev) == CLF_SUCCESS ? in->name : "?";
}

static void print_table(const bench *b, const figures *f)
{
    double gflop = 2.0 * (double)b->n * (double)b->n * (double)b->n * 1e-9;
    printf("clfleet-bench gemm: %s %zu x %zu x %zu, %u interleaved rounds, %zu device(s):\n",
           b->dbl ? "dgemm" : "sgemm", b->n, b->n, b->n, b->opt.reps, b->ndev);
    if (clf_bench_simulation())
        printf("  simulated: CLFLEET_SIMULATE='%s'\n", clf_bench_simulation());
    for (size_t i = 0; i < b->ndev; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl, b->dev[i]) == CLF_SUCCESS)
            printf("  %zu: %s (%u compute unit(s))\n", b->dev[i], in.name, in.compute_units);
    }
    printf("\n%-22s %10s %19s %9s %9s %9s %7s\n", "run", "median s", "[best..worst]",
           "GFLOP/s", "best", "speedup", "eff.");
    for (size_t r = 0; r < nruns(b); r++) {
        char name[64], spread[48];
        if (r == b->nalone)
            printf("fleet of %zu device(s):\n", b->ndev);
        snprintf(spread, sizeof spread, "[%.4f..%.4f]", f->best[r], f->worst[r]);
        printf("%-22s %10.4f %19s %9.2f %9.2f %8.2fx %7.2f\n",
               run_name(b, f, r, name, sizeof name), f->median[r], spread, gflop / f->median[r],
               gflop / f->best[r], f->speedup[r], f->rep[r].efficiency);
    }
    clf_device_info in;
    printf("\nbase: the fastest device alone, device %zu (%s), by its median time\n"
           "speedup: median over rounds of the base's time / the run's time in the same round\n",
           b->alone[f->base], dev_name(b, b->alone[f->base], &in));
    if (b->nalone < b->ndev)
        printf("devices alike (same name, type and compute units) were timed alone once, by "
               "the first of them\n");
    printf("largest relative error of %d sampled elements: %.2g\n", SAMPLES, f->max_err);
}

static void print_json(const bench *b, const figures *f)
{
    double gflop = 2.0 * (double)b->n * (double)b->n * (double)b->n * 1e-9;
    printf("{\n  \"benchmark\": \"gemm\",\n  \"precision\": \"%s\",\n  \"size\": %zu,\n"
           "  \"rounds\": %u,\n  \"devices\": %zu,\n  \"max_relative_error\": ",
           b->dbl ? "double" : "single", b->n, b->opt.reps, b->ndev);
    clf_tool_json_num(f->max_err);
    clf_device_info in;
    printf(",\n  \"baseline_device\": %zu, \"baseline_device_name\": ", b->alone[f->base]);
    clf_tool_json_string(dev_name(b, b->alone[f->base], &in));
    printf(",\n  \"simulate\": ");
    if (clf_bench_simulation())
        clf_tool_json_string(clf_bench_simulation());
    else
        printf("null");
    printf(",\n  \"runs\": [");
    for (size_t r = 0; r < nruns(b); r++) {
        int alone = r < b->nalone;
        printf("%s\n    {\"devices\": %zu, \"strategy\": \"%s\", \"ran_as\": \"%s\", ",
               r ? "," : "", alone ? (size_t)1 : b->ndev,
               clf_strategy_name(alone ? CLF_STRATEGY_STATIC : STRATEGIES[r - b->nalone]),
               clf_strategy_name(f->rep[r].strategy));
        if (alone) {
            printf("\"device\": %zu, \"device_name\": ", b->alone[r]);
            clf_tool_json_string(dev_name(b, b->alone[r], &in));
            printf(", \"baseline\": %s, ", r == f->base ? "true" : "false");
        }
        printf("\"median_s\": ");
        clf_tool_json_num(f->median[r]);
        printf(", \"median_gflops\": ");
        clf_tool_json_num(gflop / f->median[r]);
        printf(", \"worst_s\": ");
        clf_tool_json_num(f->worst[r]);
        printf(", \"best_s\": ");
        clf_tool_json_num(f->best[r]);
        printf(", \"best_gflops\": ");
        clf_tool_json_num(gflop / f->best[r]);
        printf(", \"speedup\": ");
        clf_tool_json_num(f->speedup[r]);
        printf(", \"efficiency\": ");
        clf_tool_json_num(f->rep[r].efficiency);
        printf("}");
    }
    printf("\n  ]\n}\n");
}

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench gemm [--json] [--quick] [--verbose] [--double] [--size N]\n"
          "                          [--reps N] [--devices SELECTION] [--trace PATH]\n"
          "                          [--simulate RULES]\n"
          "GEMM (C = A B, N x N) on each device alone against the fleet with each strategy,\n"
          "in interleaved rounds; speedups over the fastest device alone.\n"
          "  --json       one JSON document on standard output\n"
          "  --quick      N = 192, three rounds (a smoke test)\n"
          "  --double     clf_dgemm() instead of clf_sgemm()\n"
          "  --size N     matrix side (768)\n"
          "  --reps N     timed rounds, medians reported (15)\n"
          "  --verbose    developer lines (targets met or missed), where any\n"
          "  --devices S  every device of S (default: $CLFLEET_DEVICES, else the library's\n"
          "               default; CPU devices are split when there is only one; one\n"
          "               device that cannot be split runs alone)\n"
          "  --simulate R set CLFLEET_SIMULATE=R for the fleet (a testing tool: e.g.\n"
          "               'device=1,compute=0.02,latency=60us' makes device 1 slow)\n"
          "  --trace PATH a Perfetto timeline per fleet, PATH-N.json\n"
          "  -h, --help   this text; -V, --version: the version\n"
          "Exit status 77 when no suitable device exists or clBLAST cannot be loaded.\n",
          to);
}

enum { OPT_DOUBLE = CLF_BENCH_OWN, OPT_SIZE };
static const struct option OWN[] = {{"double", no_argument, NULL, OPT_DOUBLE},
                                    {"size", required_argument, NULL, OPT_SIZE},
                                    {NULL, 0, NULL, 0}};

/* --double and --size N. */
static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    if (val == OPT_DOUBLE)
        return b->dbl = 1;
    return clf_bench_number(arg, 10, 1, 16384, &b->n);
}

int clf_bench_gemm(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){
        .name = "gemm", .usage = usage, .reps = 15, .quick_reps = 3};
    b.n = 768;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick)
        b.n = b.n < 192 ? b.n : 192;
    if (!clf_blas_available()) {
        /* Built without its header, or the library cannot be loaded: the detail says which. */
        fprintf(stderr, "clfleet-bench gemm: without clBLAST%s%s\n",
                clf_last_error()[0] ? ": " : " (clfleet was built without it)",
                clf_last_error());
        return CLF_BENCH_SKIP;
    }
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_status st = clf_bench_fleet_want(&b.fl, &b.opt, &o, 2, 1);
    if (st != CLF_SUCCESS) /* clf_bench_fleet() said why */
        return st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                        : EXIT_FAILURE;
    b.self_split = o.split_cpu_units != 0;
    choose_devices(&b);
    size_t es = b.dbl ? sizeof(double) : sizeof(float);
    rc = 0;
    figures *f = calloc(1, sizeof *f);
    b.a = malloc(b.n * b.n * es);
    b.b = malloc(b.n * b.n * es);
    b.c = malloc(b.n * b.n * es);
    if (!f || !b.a || !b.b || !b.c) {
        rc = clf_bench_fail("gemm", "memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        goto out;
    }
    for (size_t i = 0; i < b.n * b.n; i++) {
        double x = (double)((i * 7919) % 1009) / 1009.0 - 0.5;
        double y = (double)((i * 104729) % 997) / 997.0 - 0.5;
        if (b.dbl) {
            ((double *)b.a)[i] = x;
            ((double *)b.b)[i] = y;
        } else {
            ((float *)b.a)[i] = (float)x;
            ((float *)b.b)[i] = (float)y;
        }
    }
    if ((st = measure(&b, f)) != CLF_SUCCESS) {
        rc = clf_bench_fail("gemm", "gemm", st);
        goto out;
    }
    if (!(f->max_err <= (b.dbl ? 1e-10 : 1e-4))) {
        fprintf(stderr, "clfleet-bench gemm: wrong result (relative error %g)\n", f->max_err);
        rc = EXIT_FAILURE;
        goto out;
    }
    if (b.opt.json)
        print_json(&b, f);
    else
        print_table(&b, f);
out:
    free(f);
    free(b.a);
    free(b.b);
    free(b.c);
    clf_fleet_destroy(b.fl);
    return rc;
}

/*
 * clfleet-bench stencil: Jacobi steps (5-point, 2D floats) three ways, with the bytes each
 * moves (clf_metrics_fleet()) and its time per step:
 *
 *   (a) one device   clf_kernel_enqueue() per step on two clf_buffers of one device: each
 *                    device alone (one of each kind, clf_bench_same_kind()), and the fastest
 *                    of them is the form's figure and the base of every speedup (device 0
 *                    may be the slowest: a CPU beside a GPU, issue 27)
 *   (b) host arrays  clf_launch() per step over the fleet (CLF_IN_HALO, CLF_OUT): the whole
 *                    grid goes to the devices and back every step
 *   (c) resident     clf_array_launch() per step over block arrays with a halo of one row,
 *                    CLF_ARRAY_EXCHANGE_AFTER: only halo rows move, device to device, while
 *                    the interiors compute
 *   (c0) interior    (c) with no exchange at all: the compute alone, the bound of (c)
 *
 * With --strategy (not static or default), (c) and (c0) run that strategy of
 * clf_array_launch_desc: the parts move by their measured device times. Each run's arrays
 * then first take untimed steps, each waited for (BALANCE_WARMUP after the last move, up
 * to BALANCE_WARMUP_MAX until a first one), so that the parts are measured and moved
 * before the timing (the steady state is timed; the moves are not).
 *
 * The forms' repetitions are interleaved (measure()), so that the host's drift falls on all
 * of them alike. The three results are compared bit for bit (same arithmetic in the same
 * order), and with a plain C loop when the grid is small. The devices are those of --devices, else
 * $CLFLEET_DEVICES, else the library's default; CPU devices are split into sub-devices of
 * one compute unit when there are fewer than 2; one device that cannot be split runs alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "clfleet.h"

#define MAX_DEV 64

enum { FORM_ONE, FORM_HOST, FORM_RESIDENT, FORM_INTERIOR, NFORM };
static const char *const FORM_NAMES[NFORM] = {"one device (clf_kernel_enqueue)",
                                              "host arrays (clf_launch)",
                                              "resident arrays, exchange after",
                                              "resident interior alone"};
static const char *const FORM_KEYS[NFORM] = {"one_device", "host_arrays", "resident",
                                             "interior_alone"};

typedef struct figures {
    double step_s;                    /* median time per step */
    uint64_t to_dev, from_dev, peer;  /* bytes of one run */
    double util; /* kernel time over timed time x devices used: 1 when all are always busy */
} figures;

typedef struct bench {
    clf_bench_common opt;
    size_t w, h, steps;
    clf_fleet *fl;
    clf_program *prog;
    size_t ndev;
    float *init, *res[NFORM];
    figures f[NFORM];
    size_t one_dev;                  /* the device of run_one() */
    size_t alone[MAX_DEV], nalone;   /* the devices timed alone: one of each kind */
    double alone_s[MAX_DEV];         /* their median times per step */
    size_t base;                     /* the fastest of them: (a)'s figures are its own */
    clf_strategy strategy;           /* --strategy: the resident forms' */
    char parts[256];                 /* the resident arrays' parts after the last run */
} bench;

/* Untimed steps before a balanced run's timing, each waited for (the balancer measures
 * finished steps only): BALANCE_WARMUP after the last move (its trial, a next move), and
 * until a first move up to BALANCE_WARMUP_MAX: a move pays over the steps already run, so
 * on a fast GPU, where a step gains a fraction of a millisecond for megabytes to move, the
 * first move may come after 40 steps. */
#define BALANCE_WARMUP 40
#define BALANCE_WARMUP_MAX 200

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench stencil [--json] [--quick] [--verbose] [--reps N]\n"
          "                             [--devices SELECTION] [--trace PATH]\n"
          "                             [--size N] [--steps N] [--simulate RULES]\n"
          "Jacobi steps on an N x N float grid: each device alone, host arrays through\n"
          "clf_launch(), and arrays resident on the devices with overlapped halo exchange;\n"
          "speedups over the fastest device alone.\n"
          "  --json          one JSON document on standard output\n"
          "  --quick         a 512 x 512 grid, 10 steps, one repetition\n"
          "  --reps N        timed repetitions, medians reported (3)\n"
          "  --devices S     devices (default: $CLFLEET_DEVICES, else the library's default)\n"
          "  --trace PATH    a Perfetto timeline, PATH-N.json\n"
          "  --size N        grid side (default 4096)\n"
          "  --steps N       steps per run (default 200)\n"
          "  --simulate R    set CLFLEET_SIMULATE=R for the fleet (a testing tool: e.g.\n"
          "                  'device=1,compute=0.02,latency=60us' makes device 1 slow)\n"
          "  --strategy S    the resident forms' clf_array_launch strategy (default: the\n"
          "                  parts as distributed); a balancing one moves the parts by\n"
          "                  measured speed during untimed steps first (40 after\n"
          "                  the last move, up to 200 until a first move)\n"
          "  -h, --help      this text; -V, --version: the version\n",
          to);
}

enum { OPT_STRATEGY = CLF_BENCH_OWN };
static const struct option OWN[] = {CLF_BENCH_GRID_OPTIONS,
                                    {"strategy", required_argument, NULL, OPT_STRATEGY},
                                    {NULL, 0, NULL, 0}};

static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    if (val == OPT_STRATEGY)
        return clf_strategy_parse(&b->strategy, arg) == CLF_SUCCESS;
    return clf_bench_grid_option(val, arg, &b->w, &b->h, &b->steps);
}

/* Whether the resident forms balance (a strategy that moves parts). */
static int balancing(const bench *b)
{
    return b->strategy != CLF_STRATEGY_DEFAULT && b->strategy != CLF_STRATEGY_STATIC;
}

/* Bytes to, from and between devices, and kernel seconds, so far. */
static void counters(const bench *b, uint64_t v[3], double *busy)
{
    clf_fleet_metrics m;
    memset(v, 0, 3 * sizeof *v);
    *busy = 0;
    if (clf_metrics_fleet(&m, b->fl) != CLF_SUCCESS)
        return;
    v[0] = m.dir[CLF_DIRECTION_TO_DEVICE].bytes;
    v[1] = m.dir[CLF_DIRECTION_FROM_DEVICE].bytes;
    v[2] = m.dir[CLF_DIRECTION_PEER].bytes;
    *busy = m.busy_s;
}

/* (a): one device, two buffers, a kernel per step; upload and download not timed. */
static clf_status run_one(bench *b, double *secs, float *out)
{
    size_t n = b->w * b->h, bytes = n * sizeof(float);
    clf_buffer *buf[2] = {NULL, NULL};
    clf_status st = clf_buffer_create(&buf[0], b->fl, b->one_dev, bytes, 0);
    if (st == CLF_SUCCESS)
        st = clf_buffer_create(&buf[1], b->fl, b->one_dev, bytes, 0);
    if (st == CLF_SUCCESS)
        st = clf_buffer_write(buf[0], 0, bytes, b->init);
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "jac2";
    d.dims = 2;
    d.global[0] = b->w;
    d.global[1] = b->h;
    /* The work-group clf_array_launch() picks for the resident forms (the largest divisor
     * of the width up to 64, one row), so that the base runs the kernel as they do: with
     * the driver's choice PoCL ran a 2048 x 2048 step 1.5x slower than the resident form
     * on the same one device, and every speedup over this base came out that much high. */
    d.local[1] = 1;
    for (size_t c = 64; c >= 1 && !d.local[0]; c--)
        if (b->w % c == 0)
            d.local[0] = c;
    double t0 = clf_bench_now();
    for (size_t k = 0; k < b->steps && st == CLF_SUCCESS; k++) {
        clf_arg a[] = {CLF_BUF_IN(buf[k % 2]), CLF_BUF_OUT(buf[(k + 1) % 2])};
        st = k + 1 < b->steps
                 ? clf_kernel_enqueue(b->fl, b->prog, b->one_dev, &d, a, 2, NULL, 0, NULL)
                 : clf_kernel_run(b->fl, b->prog, b->one_dev, &d, a, 2);
    }
    *secs = (clf_bench_now() - t0) / (double)b->steps;
    if (st == CLF_SUCCESS)
        st = clf_buffer_read(buf[b->steps % 2], 0, bytes, out);
    clf_buffer_destroy(buf[0]);
    clf_buffer_destroy(buf[1]);
    return st;
}

/* (b): clf_launch() per step, the grid through the host. */
static clf_status run_host(bench *b, double *secs, float *out)
{
    size_t n = b->w * b->h, bytes = n * sizeof(float), row = b->w * sizeof(float);
    float *g[2] = {malloc(bytes), malloc(bytes)};
    clf_status st = g[0] && g[1] ? CLF_SUCCESS : CLF_ERROR_OUT_OF_HOST_MEMORY;
    if (st == CLF_SUCCESS)
        memcpy(g[0], b->init, bytes);
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "jac2";
    d.dims = 2;
    d.global[0] = b->w;
    d.global[1] = b->h;
    d.strategy = CLF_STRATEGY_STATIC;
    double t0 = clf_bench_now();
    for (size_t k = 0; k < b->steps && st == CLF_SUCCESS; k++) {
        clf_arg a[] = {CLF_IN_HALO(g[k % 2], bytes, row, 1, 1),
                       CLF_OUT(g[(k + 1) % 2], bytes, row)};
        st = clf_launch(b->fl, b->prog, &d, a, 2, NULL);
    }
    *secs = (clf_bench_now() - t0) / (double)b->steps;
    if (st == CLF_SUCCESS)
        memcpy(out, g[b->steps % 2], bytes);
    free(g[0]);
    free(g[1]);
    return st;
}

/* (c) and (c0): resident arrays; exchange after each step, or none at all. */
static clf_status run_resident(bench *b, int exchange, double *secs, float *out)
{
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = sizeof(float);
    ad.dims = 2;
    ad.shape[0] = b->w;
    ad.shape[1] = b->h;
    ad.halo_before = ad.halo_after = 1;
    clf_array *a[2] = {NULL, NULL};
    clf_status st = clf_array_create(&a[0], b->fl, &ad);
    if (st == CLF_SUCCESS)
        st = clf_array_create(&a[1], b->fl, &ad);
    if (st == CLF_SUCCESS)
        st = clf_array_write(a[0], NULL, NULL, b->init);
    if (st == CLF_SUCCESS) /* the upload, out of the timing */
        st = clf_array_exchange(a[0]);
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a[0]);
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "jac2";
    d.dims = 2;
    d.global[0] = b->w;
    d.global[1] = b->h;
    d.flags = exchange ? CLF_ARRAY_EXCHANGE_AFTER : 0;
    d.strategy = b->strategy;
    /* A balancing strategy: steps waited for one by one until the parts have moved (the
     * run's steps are even, so the result is the same grid's). */
    size_t moves = 0, last_move = 0;
    for (size_t k = 0; balancing(b) && k < BALANCE_WARMUP_MAX && st == CLF_SUCCESS; k++) {
        if (k - last_move >= BALANCE_WARMUP && moves > 0)
            break; /* moved, and quiet since */
        clf_arg args[] = {CLF_ARRAY_IN(a[k % 2]), CLF_ARRAY_OUT(a[(k + 1) % 2])};
        st = clf_array_launch(b->fl, b->prog, &d, args, 2);
        if (st == CLF_SUCCESS)
            st = clf_array_finish(a[(k + 1) % 2]);
        clf_array_balance bal;
        if (st == CLF_SUCCESS && clf_array_balance_info(&bal, a[0]) == CLF_SUCCESS &&
            bal.migrations != moves) {
            moves = bal.migrations;
            last_move = k + 1;
        }
    }
    /* The timed steps start again from the initial grid, on the parts as moved. */
    if (balancing(b) && st == CLF_SUCCESS)
        st = clf_array_write(a[0], NULL, NULL, b->init);
    if (balancing(b) && st == CLF_SUCCESS)
        st = clf_array_exchange(a[0]);
    if (balancing(b) && st == CLF_SUCCESS)
        st = clf_array_finish(a[0]);
    double t0 = clf_bench_now();
    for (size_t k = 0; k < b->steps && st == CLF_SUCCESS; k++) {
        clf_arg args[] = {CLF_ARRAY_IN(a[k % 2]), CLF_ARRAY_OUT(a[(k + 1) % 2])};
        st = clf_array_launch(b->fl, b->prog, &d, args, 2);
    }
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a[0]);
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a[1]);
    *secs = (clf_bench_now() - t0) / (double)b->steps;
    if (st == CLF_SUCCESS)
        st = clf_array_read(a[b->steps % 2], NULL, NULL, out);
    size_t len = 0;
    b->parts[0] = 0;
    for (size_t q = 0; st == CLF_SUCCESS && q < clf_array_part_count(a[0]); q++) {
        clf_array_part pi;
        if (clf_array_part_info(&pi, a[0], q) == CLF_SUCCESS && len < sizeof b->parts)
            len += (size_t)snprintf(b->parts + len, sizeof b->parts - len, "%sdevice %zu: %zu",
                                    q ? ", " : "", pi.device, pi.count);
    }
    clf_array_destroy(a[0]);
    clf_array_destroy(a[1]);
    return st;
}

/* One run of a form (FORM_ONE: on device dev alone) into out, its time per step in *secs. */
static clf_status run_any(bench *b, int form, size_t dev, double *secs, float *out)
{
    b->one_dev = dev;
    return form == FORM_ONE    ? run_one(b, secs, out)
           : form == FORM_HOST ? run_host(b, secs, out)
                               : run_resident(b, form == FORM_RESIDENT, secs, out);
}

/* What is timed: each kind of device alone (FORM_ONE), then the fleet's forms. */
typedef struct slot {
    int form;
    size_t dev;                     /* FORM_ONE's device */
    double t[CLF_BENCH_MAX_REPS];   /* seconds per step of each repetition */
    uint64_t bytes[3];              /* to, from and between devices, over the repetitions */
    double busy;                    /* kernel seconds over the repetitions */
} slot;

/*
 * Every slot's repetitions interleaved: repetition r runs each slot once, starting from slot
 * r (mod their number), so that a drift of the host's speed (a shared, noisy machine) falls
 * on every form alike and the ratios between them stay steady; timing one form's repetitions
 * after another's once measured a 2:1 pair's resident Jacobi at 1.23x and 1.39x the fastest
 * device alone in two runs, the base moving by 13 %. Each slot first takes a short untimed
 * run: builds (the array variant), PoCL's kernel compilations for each work-group size and
 * offset, buffers. The fastest device alone is the base, and its result (a), run again if
 * another device ran last, is the one the forms are compared with.
 */
static clf_status measure(bench *b, int *failed)
{
    slot *sl = calloc(MAX_DEV + NFORM, sizeof *sl);
    size_t n = 0;
    clf_status st = sl ? CLF_SUCCESS : CLF_ERROR_OUT_OF_HOST_MEMORY;
    b->nalone = 0;
    for (size_t i = 0; sl && i < b->ndev && b->nalone < MAX_DEV; i++) {
        size_t k = 0;
        while (k < b->nalone && !clf_bench_same_kind(b->fl, b->alone[k], i))
            k++;
        if (k == b->nalone) {
            b->alone[b->nalone++] = i;
            sl[n++] = (slot){.form = FORM_ONE, .dev = i};
        }
    }
    for (int k = FORM_HOST; sl && k < NFORM; k++)
        sl[n++] = (slot){.form = k};
    size_t steps = b->steps;
    b->steps = 2;
    for (size_t i = 0; i < n && st == CLF_SUCCESS; i++)
        if ((st = run_any(b, sl[i].form, sl[i].dev, &sl[i].t[0], b->res[sl[i].form])) !=
            CLF_SUCCESS)
            *failed = sl[i].form;
    b->steps = steps;
    for (unsigned r = 0; r < b->opt.reps && st == CLF_SUCCESS; r++) {
        for (size_t j = 0; j < n && st == CLF_SUCCESS; j++) {
            slot *x = &sl[(r + j) % n];
            uint64_t c0[3], c1[3];
            double busy0, busy1;
            counters(b, c0, &busy0);
            if ((st = run_any(b, x->form, x->dev, &x->t[r], b->res[x->form])) != CLF_SUCCESS)
                *failed = x->form;
            counters(b, c1, &busy1);
            for (int q = 0; q < 3; q++)
                x->bytes[q] += c1[q] - c0[q];
            x->busy += busy1 - busy0;
        }
    }
    b->base = 0;
    for (size_t i = 0; i < n && st == CLF_SUCCESS; i++) {
        double timed = 0;
        for (unsigned r = 0; r < b->opt.reps; r++)
            timed += sl[i].t[r] * (double)b->steps;
        figures f = {.step_s = clf_bench_median(sl[i].t, b->opt.reps),
                     .to_dev = sl[i].bytes[0] / b->opt.reps,
                     .from_dev = sl[i].bytes[1] / b->opt.reps,
                     .peer = sl[i].bytes[2] / b->opt.reps};
        f.util = sl[i].busy / (timed * (double)(sl[i].form == FORM_ONE ? 1 : b->ndev));
        if (sl[i].form != FORM_ONE) {
            b->f[sl[i].form] = f;
            continue;
        }
        b->alone_s[i] = f.step_s; /* the alone slots come first, in b->alone's order */
        if (i == 0 || f.step_s < b->alone_s[b->base]) {
            b->base = i;
            b->f[FORM_ONE] = f;
        }
    }
    /* (a)'s result from the base: the last repetition's last alone slot may be another. */
    double ignored;
    if (st == CLF_SUCCESS && b->nalone > 1 &&
        (st = run_any(b, FORM_ONE, b->alone[b->base], &ignored, b->res[FORM_ONE])) != CLF_SUCCESS)
        *failed = FORM_ONE;
    free(sl);
    return st;
}

/* A device's name, or "?". */
static const char *dev_name(const bench *b, size_t dev, clf_device_info *in)
{
    return clf_device_get_info(in, b->fl, dev) == CLF_SUCCESS ? in->name : "?";
}

static void print_table(const bench *b)
{
    const figures *f = b->f;
    clf_device_info in;
    printf("clfleet-bench stencil: %zu x %zu floats, %zu steps, %zu devices, median of %u\n",
           b->w, b->h, b->steps, b->ndev, b->opt.reps);
    if (clf_bench_simulation())
        printf("simulated: CLFLEET_SIMULATE='%s'\n", clf_bench_simulation());
    for (size_t k = 0; k < b->nalone; k++)
        printf("  device %zu alone (%s): %.3f ms/step%s\n", b->alone[k],
               dev_name(b, b->alone[k], &in), b->alone_s[k] * 1e3,
               k == b->base ? " (the fastest: the base)" : "");
    if (b->nalone < b->ndev)
        printf("  (devices alike were timed alone once, by the first of them)\n");
    printf("\n");
    printf("%-34s %9s %8s %13s %13s %12s %6s\n", "form", "ms/step", "speedup", "host->dev MB",
           "dev->host MB", "dev->dev MB", "busy");
    for (int k = 0; k < NFORM; k++)
        printf("%-34s %9.3f %7.2fx %13.3f %13.3f %12.3f %5.0f%%\n",
               k == FORM_ONE ? "fastest device alone (enqueue)" : FORM_NAMES[k],
               f[k].step_s * 1e3, f[FORM_ONE].step_s / f[k].step_s, (double)f[k].to_dev / 1e6,
               (double)f[k].from_dev / 1e6, (double)f[k].peer / 1e6, f[k].util * 100);
    printf("(speedup: over the fastest device alone, device %zu; busy: kernel time over the "
           "timed time of the devices used)\n", b->alone[b->base]);
    printf("\nresident / interior alone: %.2f (1.00: the exchange hides behind the compute)\n",
           f[FORM_RESIDENT].step_s / f[FORM_INTERIOR].step_s);
    printf("resident strategy: %s; units per part after the last run: %s\n",
           b->strategy == CLF_STRATEGY_DEFAULT ? "default (parts as distributed)"
                                               : clf_strategy_name(b->strategy),
           b->parts);
}

static void print_json(const bench *b)
{
    const figures *f = b->f;
    printf("{\n  \"benchmark\": \"stencil\",\n  \"width\": %zu,\n  \"height\": %zu,\n"
           "  \"steps\": %zu,\n  \"devices\": %zu,\n  \"repetitions\": %u,\n  \"alone\": [",
           b->w, b->h, b->steps, b->ndev, b->opt.reps);
    clf_device_info in;
    for (size_t k = 0; k < b->nalone; k++) {
        printf("%s\n    {\"form\": \"device_alone\", \"device\": %zu, \"device_name\": ",
               k ? "," : "", b->alone[k]);
        clf_tool_json_string(dev_name(b, b->alone[k], &in));
        printf(", \"step_s\": ");
        clf_tool_json_num(b->alone_s[k]);
        printf(", \"baseline\": %s}", k == b->base ? "true" : "false");
    }
    printf("\n  ],\n  \"baseline_device\": %zu, \"baseline_device_name\": ",
           b->alone[b->base]);
    clf_tool_json_string(dev_name(b, b->alone[b->base], &in));
    printf(",\n  \"simulate\": ");
    if (clf_bench_simulation())
        clf_tool_json_string(clf_bench_simulation());
    else
        printf("null");
    printf(",\n  \"forms\": [");
    for (int k = 0; k < NFORM; k++) {
        printf("%s\n    {\"form\": \"%s\", \"step_s\": ", k ? "," : "", FORM_KEYS[k]);
        clf_tool_json_num(f[k].step_s);
        printf(", \"speedup\": ");
        clf_tool_json_num(f[FORM_ONE].step_s / f[k].step_s);
        printf(", \"host_to_device_bytes\": %llu, \"device_to_host_bytes\": %llu, "
               "\"device_to_device_bytes\": %llu",
               (unsigned long long)f[k].to_dev, (unsigned long long)f[k].from_dev,
               (unsigned long long)f[k].peer);
        printf(", \"busy_fraction\": ");
        clf_tool_json_num(f[k].util);
        printf("}");
    }
    printf("\n  ],\n  \"resident_over_interior\": ");
    clf_tool_json_num(f[FORM_RESIDENT].step_s / f[FORM_INTERIOR].step_s);
    printf("\n}\n");
}

int clf_bench_stencil(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){.name = "stencil", .usage = usage, .reps = 3, .quick_reps = 1};
    b.w = b.h = 4096;
    b.steps = 200;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick) {
        b.w = b.h = b.w < 512 ? b.w : 512;
        b.steps = b.steps < 10 ? b.steps : 10;
    }
    rc = 0;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_status st = clf_bench_fleet_want(&b.fl, &b.opt, &o, 2, 1);
    if (st != CLF_SUCCESS)
        return st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                        : EXIT_FAILURE;
    b.ndev = clf_fleet_device_count(b.fl);
    size_t n = b.w * b.h;
    b.init = malloc(n * sizeof(float));
    for (int k = 0; k < NFORM; k++)
        b.res[k] = malloc(n * sizeof(float));
    if (!b.init || !b.res[0] || !b.res[1] || !b.res[2] || !b.res[3]) {
        rc = clf_bench_fail("stencil", "memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        goto out;
    }
    clf_bench_jacobi_init(b.init, n);
    if ((st = clf_program_build_source(&b.prog, b.fl, CLF_BENCH_JACOBI_CL, NULL)) !=
        CLF_SUCCESS) {
        rc = clf_bench_fail("stencil", "build", st);
        goto out;
    }
    int failed = FORM_ONE;
    if ((st = measure(&b, &failed)) != CLF_SUCCESS)
        rc = clf_bench_fail("stencil", FORM_NAMES[failed], st);
    if (!rc && (memcmp(b.res[FORM_ONE], b.res[FORM_HOST], n * sizeof(float)) ||
                memcmp(b.res[FORM_ONE], b.res[FORM_RESIDENT], n * sizeof(float)) ||
                (n <= 1024 * 1024 &&
                 !clf_bench_jacobi_ok(b.init, b.w, b.h, b.steps, b.res[FORM_ONE])))) {
        fprintf(stderr, "clfleet-bench stencil: the forms' results differ (or differ from the C "
                        "reference)\n");
        rc = EXIT_FAILURE;
    }
    if (!rc) {
        if (b.opt.json)
            print_json(&b);
        else
            print_table(&b);
    }
out:
    clf_program_destroy(b.prog);
    clf_fleet_destroy(b.fl);
    free(b.init);
    for (int k = 0; k < NFORM; k++)
        free(b.res[k]);
    return rc;
}

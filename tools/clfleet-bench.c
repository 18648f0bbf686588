/*
 * clfleet-bench: benchmarks of the fleet, as a table or JSON.
 *
 *   balance  every load-balancing strategy on an irregular kernel (Mandelbrot) and a regular
 *            compute-bound one (busy), on homogeneous and heterogeneous PoCL sub-devices
 *            (with --simulate also a per-group one, group_sum: work-groups of 64, one output
 *            per group, the third kernel of issue 27's mixed-fleet table):
 *            makespan, shares, efficiency, speedup over the best single device, overhead
 *            against raw OpenCL, and the cost of one chunk.
 *   scale    the same kernels on 1, 2, 4, ... sub-devices of one compute unit.
 *
 * Mandelbrot uses the classic view of the whole set (re -2..1, im -1.5..1.5): 95% of the work
 * lies in the middle half of the rows, so equal chunks are very unequal work. `--view offaxis`
 * (re -2.2..0.8, im -0.6..1.4) puts 37% of the work in the first quarter of the rows, where
 * guided's first chunk (R/4 on two equal devices, K = 2) lands and then outlasts all the rest:
 * a simulation of that schedule with no overhead at all bounds guided's efficiency there by
 * 0.84 (K = 3 would give 0.99). `--view band` (re -2..1, im 0..1.2, issue 14) puts 55% of the
 * work in the first quarter of the rows: guided with K = 2 reached 0.83 there, hence K = 4
 * (partition.h). The bench keeps both views to show it.
 *
 * With --simulate RULES (or CLFLEET_SIMULATE set), balance runs one configuration instead,
 * "simulated": the homogeneous pair, made unequal by the library's simulation (e.g.
 * 'device=1,compute=0.02,latency=60us': a GPU + CPU pair out of two equal CPU units), and adds
 * a table of every strategy's time against the fastest device alone, measured, with the
 * shares (issue 27: adding a slow device must not slow a launch down).
 *
 * With --devices SELECTION, balance runs one configuration, "selected": exactly the devices
 * the selection gives (a GPU and a CPU, say; nothing split, no PoCL environment), each alone
 * and together, with the same table (against the fastest device alone, measured, and raw
 * OpenCL on it: on one device, the library's one-device overhead). --simulate applies its
 * rules to those devices. busy is sized for the fastest device, but at most 20x that time on
 * the slowest (a CPU beside a GPU may be 1,000x slower, and runs it alone too).
 *
 * The heterogeneous configuration runs 4 PoCL threads: on a host with fewer than 4 CPUs they
 * share cores, and the pair cannot beat its fast device.
 *
 * PoCL reads its environment (POCL_MAX_PTHREAD_COUNT) once, when OpenCL starts, so each
 * configuration of `balance` runs in a child process (this program again, with --config and
 * the environment it needs); the parent only collects their output.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clfleet.h"
#include "notes.h"
#include "bench.h"
#include "json.h"
#include "plot.h"
#include "clfleet/opencl.h"

#define EXIT_SKIP CLF_BENCH_SKIP /* no suitable devices (automake's "skipped") */
#define MAX_DEV 64
#define NSTRAT 5
#define MAX_SEL 8 /* devices of a "selected" configuration (balance --devices) */

static const clf_strategy STRATEGIES[NSTRAT] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                                CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                                CLF_STRATEGY_AUTO};

typedef struct opts {
    int json, quick, verbose;
    int view;            /* Mandelbrot's view: VIEW_WHOLE, VIEW_OFFAXIS or VIEW_BAND (--view) */
    size_t size;         /* image side (Mandelbrot); busy runs size * size items; 0: default */
    unsigned reps;       /* timed repetitions, the median is reported; 0: default */
    const char *devices; /* --devices; NULL: $CLFLEET_DEVICES, else the library's default */
    const char *config;  /* balance: run this configuration only, in this process */
    const char *self;    /* how to run this program again */
    const char *trace;   /* --trace PATH: a Perfetto timeline per fleet; NULL: none */
    const char *plot;    /* --plot FILE.svg (balance: FILE-CONFIG.svg); NULL: none */
} opts;

/* ---- small utilities ------------------------------------------------------------------- */

/* The index of the median of v[0..n) (the lower one for even n). */
static size_t median_index(const double *v, size_t n)
{
    double sorted[64];
    if (n > 64)
        n = 64;
    memcpy(sorted, v, n * sizeof *v);
    qsort(sorted, n, sizeof *sorted, clf_bench_cmp_double);
    double m = sorted[(n - 1) / 2];
    for (size_t i = 0; i < n; i++)
        if (v[i] == m)
            return i;
    return 0;
}

/* ---- workloads ----------------------------------------------------------------------------- */

typedef struct workload {
    const char *name; /* kernel and shipped file */
    char params[128]; /* for people */
    unsigned dims;
    size_t global[2];
    size_t local; /* work-group size along dimension 0, or 0: the library's choice */
    clf_arg args[8];
    size_t nargs;
    void *out;
    size_t out_bytes;
    void *in; /* group_sum's input, or NULL */
    /* scalar storage the args point to */
    int width, height, max_iter, iters;
    float x0, y0, dx, dy;
} workload;

enum { VIEW_WHOLE, VIEW_OFFAXIS, VIEW_BAND };
static const char *const VIEW_NAMES[] = {"whole", "offaxis", "band"};

static void mandelbrot_init(workload *w, size_t side, int max_iter, int view)
{
    memset(w, 0, sizeof *w);
    w->name = "mandelbrot";
    w->dims = 2;
    w->global[0] = w->global[1] = side;
    w->width = w->height = (int)side;
    w->max_iter = max_iter;
    if (view == VIEW_BAND) { /* the costliest rows at the start (see the comment at the top) */
        w->x0 = -2.0f;
        w->y0 = 0.0f;
        w->dx = 3.0f / (float)side;
        w->dy = 1.2f / (float)side;
    } else if (view == VIEW_OFFAXIS) { /* the costly rows bunch up at the top */
        w->x0 = -2.2f;
        w->y0 = -0.6f;
        w->dx = 3.0f / (float)side;
        w->dy = 2.0f / (float)side;
    } else { /* the whole set */
        w->x0 = -2.0f;
        w->y0 = -1.5f;
        w->dx = 3.0f / (float)side;
        w->dy = 3.0f / (float)side;
    }
    w->out_bytes = side * side * sizeof(uint32_t);
    w->out = calloc(1, w->out_bytes);
    snprintf(w->params, sizeof w->params, "%zux%zu, max_iter %d, %s view", side, side, max_iter,
             view == VIEW_BAND ? "band" : view == VIEW_OFFAXIS ? "off-axis" : "whole-set");
    clf_arg a[] = {CLF_OUT(w->out, w->out_bytes, side * sizeof(uint32_t)),
                   CLF_SCALAR(&w->width),
                   CLF_SCALAR(&w->height),
                   CLF_SCALAR(&w->x0),
                   CLF_SCALAR(&w->y0),
                   CLF_SCALAR(&w->dx),
                   CLF_SCALAR(&w->dy),
                   CLF_SCALAR(&w->max_iter)};
    memcpy(w->args, a, sizeof a);
    w->nargs = 8;
}

static void busy_init(workload *w, size_t items, int iters)
{
    memset(w, 0, sizeof *w);
    w->name = "busy";
    w->dims = 1;
    w->global[0] = items;
    w->global[1] = 1;
    w->iters = iters;
    w->out_bytes = items * sizeof(float);
    w->out = calloc(1, w->out_bytes);
    snprintf(w->params, sizeof w->params, "%zu items, %d iterations", items, iters);
    clf_arg a[] = {CLF_OUT(w->out, w->out_bytes, sizeof(float)), CLF_SCALAR(&w->iters)};
    memcpy(w->args, a, sizeof a);
    w->nargs = 2;
}

#define GROUP_SUM_LOCAL 64

/* Per-group work: group_sum over `items` floats (a multiple of GROUP_SUM_LOCAL), one
 * partial sum per work-group. */
static void group_init(workload *w, size_t items)
{
    memset(w, 0, sizeof *w);
    w->name = "group_sum";
    w->dims = 1;
    w->global[0] = items;
    w->global[1] = 1;
    w->local = GROUP_SUM_LOCAL;
    size_t groups = items / GROUP_SUM_LOCAL;
    w->out_bytes = groups * sizeof(float);
    w->out = calloc(1, w->out_bytes);
    w->in = malloc(items * sizeof(float));
    for (size_t i = 0; w->in && i < items; i++)
        ((float *)w->in)[i] = (float)(i % 17);
    snprintf(w->params, sizeof w->params, "%zu items, %zu groups of %d", items, groups,
             GROUP_SUM_LOCAL);
    clf_arg a[] = {CLF_IN(w->in, items * sizeof(float), sizeof(float)),
                   CLF_OUT_PER_GROUP(w->out, w->out_bytes, sizeof(float))};
    memcpy(w->args, a, sizeof a);
    w->nargs = 2;
}

static void busy_set_iters(workload *w, int iters)
{
    w->iters = iters;
    snprintf(w->params, sizeof w->params, "%zu items, %d iterations", w->global[0], iters);
}

static clf_launch_desc desc_for(const workload *w, clf_strategy s, const size_t *devs, size_t ndev)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = w->name;
    d.dims = w->dims;
    d.global[0] = w->global[0];
    d.global[1] = w->global[1];
    d.local[0] = w->local;
    d.strategy = s;
    d.devices = devs;
    d.num_devices = ndev;
    return d;
}

/*
 * The same work with plain OpenCL on one device: the inputs written, one NDRange over the
 * whole range and the outputs read back (the last read blocking), on the device's compute
 * queue. Buffers and the kernel are made before the clock starts; returns the median wall
 * time, or a negative value on error.
 */
static int is_array(const clf_arg *a)
{
    return a->kind == CLF_ARG_KIND_IN || a->kind == CLF_ARG_KIND_OUT ||
           a->kind == CLF_ARG_KIND_OUT_PER_GROUP;
}

static double raw_opencl(clf_fleet *f, clf_program *p, size_t dev, const workload *w, unsigned reps)
{
    cl_int err;
    cl_mem mem[8] = {0};
    size_t last_out = w->nargs;
    cl_kernel k = clCreateKernel(clf_cl_program(p, dev), w->name, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clfleet-bench: clCreateKernel(%s): %d\n", w->name, err);
        return -1;
    }
    for (size_t i = 0; i < w->nargs && err == CL_SUCCESS; i++) {
        const clf_arg *a = &w->args[i];
        if (!is_array(a)) {
            err = clSetKernelArg(k, (cl_uint)i, a->size, a->host);
            continue;
        }
        int in = a->kind == CLF_ARG_KIND_IN;
        mem[i] = clCreateBuffer(clf_cl_context(f, dev), in ? CL_MEM_READ_ONLY : CL_MEM_WRITE_ONLY,
                                a->size, NULL, &err);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(k, (cl_uint)i, sizeof mem[i], &mem[i]);
        if (!in)
            last_out = i;
    }
    cl_command_queue q = clf_cl_compute_queue(f, dev);
    double t[64];
    reps = reps > 64 ? 64 : reps;
    for (unsigned r = 0; r <= reps && err == CL_SUCCESS; r++) { /* r = 0: warm-up */
        double t0 = clf_bench_now();
        for (size_t i = 0; i < w->nargs && err == CL_SUCCESS; i++)
            if (w->args[i].kind == CLF_ARG_KIND_IN)
                err = clEnqueueWriteBuffer(q, mem[i], CL_FALSE, 0, w->args[i].size,
                                           w->args[i].host, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(q, k, w->dims, NULL, w->global,
                                         w->local ? &w->local : NULL, 0, NULL, NULL);
        for (size_t i = 0; i < w->nargs && err == CL_SUCCESS; i++)
            if (is_array(&w->args[i]) && w->args[i].kind != CLF_ARG_KIND_IN)
                err = clEnqueueReadBuffer(q, mem[i], i == last_out ? CL_TRUE : CL_FALSE, 0,
                                          w->args[i].size, w->args[i].host, 0, NULL, NULL);
        if (r > 0)
            t[r - 1] = clf_bench_now() - t0;
    }
    for (size_t i = 0; i < w->nargs; i++)
        if (mem[i])
            clReleaseMemObject(mem[i]);
    clReleaseKernel(k);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clfleet-bench: raw OpenCL run of %s: %d\n", w->name, err);
        return -1;
    }
    return t[median_index(t, reps)];
}

/* One timed strategy: the median run by wall time, with its report. */
typedef struct run_result {
    double wall;               /* the median */
    double wall_min, wall_max; /* the spread over the repetitions */
    clf_launch_report rep;
} run_result;

/* balance --verbose: every repetition of timed_launch() on standard error. */
static int each_rep;

static clf_status timed_launch(clf_fleet *f, clf_program *p, const clf_launch_desc *d,
                               const workload *w, unsigned warmup, unsigned reps, run_result *out)
{
    static clf_launch_report reps_rep[64];
    double t[64];
    reps = reps > 64 ? 64 : reps;
    for (unsigned r = 0; r < warmup + reps; r++) {
        clf_launch_report *rep = &reps_rep[r < warmup ? 0 : r - warmup];
        double t0 = clf_bench_now();
        clf_status st = clf_launch(f, p, d, w->args, w->nargs, rep);
        if (st != CLF_SUCCESS)
            return st;
        if (r >= warmup)
            t[r - warmup] = clf_bench_now() - t0;
        if (each_rep) { /* --verbose: a median hides the repetition that went wrong */
            fprintf(stderr, "%s rep %u%s: %.4f s |", w->name, r, r < warmup ? " (warm-up)" : "",
                    clf_bench_now() - t0);
            for (size_t i = 0; i < rep->num_devices; i++)
                fprintf(stderr, " device %zu: %llu units, %u chunks, kernel %.4f s, done %.4f s;",
                        rep->dev[i].device, (unsigned long long)rep->dev[i].units,
                        rep->dev[i].chunks, rep->dev[i].busy_s, rep->dev[i].finish_s);
            fprintf(stderr, " %s\n", rep->reason);
        }
    }
    size_t m = median_index(t, reps);
    out->wall = t[m];
    out->wall_min = out->wall_max = t[0];
    for (unsigned r = 1; r < reps; r++) {
        out->wall_min = fmin(out->wall_min, t[r]);
        out->wall_max = fmax(out->wall_max, t[r]);
    }
    out->rep = reps_rep[m];
    return CLF_SUCCESS;
}

/* ---- balance ----------------------------------------------------------------------------- */

typedef struct workload_result {
    char name[32], params[128];
    double single[MAX_SEL]; /* each device alone, through clfleet (static, one chunk) */
    size_t best;            /* the fastest of them (an index into dev[]) */
    double raw;       /* raw OpenCL on the best device */
    double clf_one;   /* clfleet on the best device, alternating with the raw runs */
    double overhead;  /* median of (clfleet / raw) over the alternating pairs, - 1 */
    run_result s[NSTRAT];
} workload_result;

typedef struct config_result {
    const char *name, *description;
    size_t ndev;                   /* 2, or the selection's count ("selected") */
    size_t dev[MAX_SEL];           /* fleet indices */
    clf_device_info info[MAX_SEL];
    workload_result w[3]; /* mandelbrot, busy, and (simulated, selected) group_sum */
    size_t nwork;
    double chunk_us; /* per-chunk overhead */
    unsigned chunk_count;
    double chunk_raw, chunk_wall;
    /* Metrics on/off: the same launches on a second fleet built with CLFLEET_METRICS=0. */
    double metrics_ratio;        /* median of (metrics on / off) over alternating pairs */
    double metrics_on, metrics_off; /* their median wall times */
    char *metrics_json;          /* the fleet's counters after the runs (clf_metrics_json) */
} config_result;

/* The configuration of the two equal one-unit sub-devices, made unequal by simulation. */
#define SIMULATED "simulated"
/* The configuration of exactly the devices --devices selects (a real mixed fleet). */
#define SELECTED "selected"

static const char *sub_env(const char *config)
{
    return !strcmp(config, "heterogeneous") ? "4" : NULL;
}

/* The two sub-devices of the first root device that was split. */
static int pick_pair(clf_fleet *f, size_t dev[2], clf_device_info info[2])
{
    size_t n = clf_fleet_device_count(f);
    for (size_t i = 0; i < n; i++) {
        if (clf_device_get_info(&info[0], f, i) != CLF_SUCCESS || !info[0].is_sub_device)
            continue;
        for (size_t j = i + 1; j < n; j++)
            if (clf_device_get_info(&info[1], f, j) == CLF_SUCCESS && info[1].is_sub_device &&
                info[1].parent_index == info[0].parent_index) {
                dev[0] = i;
                dev[1] = j;
                return 1;
            }
    }
    return 0;
}

static int run_workload(clf_fleet *f, clf_program *p, const config_result *c, workload *w,
                        const opts *o, workload_result *r)
{
    unsigned reps = o->reps ? o->reps : o->quick ? 1 : 5, warmup = o->quick ? 1 : 2;
    clf_status st;
    snprintf(r->name, sizeof r->name, "%s", w->name);
    snprintf(r->params, sizeof r->params, "%s", w->params);
    r->best = 0;
    for (size_t k = 0; k < c->ndev; k++) {
        clf_launch_desc d = desc_for(w, CLF_STRATEGY_STATIC, &c->dev[k], 1);
        run_result one;
        if ((st = timed_launch(f, p, &d, w, 1, reps, &one)) != CLF_SUCCESS)
            return clf_bench_fail(NULL, "single-device launch", st);
        r->single[k] = one.wall;
        if (r->single[k] < r->single[r->best])
            r->best = k;
    }
    /* Raw and clfleet runs alternate, so a drift in the machine's load hits both alike. */
    double traw[64], tclf[64], ratio[64];
    for (unsigned k = 0; k < reps && k < 64; k++) {
        clf_launch_desc d = desc_for(w, CLF_STRATEGY_STATIC, &c->dev[r->best], 1);
        run_result one;
        traw[k] = raw_opencl(f, p, c->dev[r->best], w, 1);
        if (traw[k] < 0)
            return EXIT_FAILURE;
        if ((st = timed_launch(f, p, &d, w, 0, 1, &one)) != CLF_SUCCESS)
            return clf_bench_fail(NULL, "single-device launch", st);
        tclf[k] = one.wall;
        ratio[k] = tclf[k] / traw[k];
    }
    r->raw = traw[median_index(traw, reps)];
    r->clf_one = tclf[median_index(tclf, reps)];
    r->overhead = ratio[median_index(ratio, reps)] - 1;
    for (size_t s = 0; s < NSTRAT; s++) {
        clf_launch_desc d = desc_for(w, STRATEGIES[s], c->dev, c->ndev);
        if ((st = timed_launch(f, p, &d, w, warmup, reps, &r->s[s])) != CLF_SUCCESS)
            return clf_bench_fail(NULL, clf_strategy_name(STRATEGIES[s]), st);
    }
    return EXIT_SUCCESS;
}

/* The cost of one chunk: a trivial kernel cut into many chunks on one device. */
static int chunk_overhead(clf_fleet *f, clf_program *p, config_result *c, const opts *o)
{
    workload w;
    busy_init(&w, o->quick ? (1u << 16) : (1u << 20), 0);
    unsigned reps = o->reps ? o->reps : o->quick ? 1 : 5;
    double raw = raw_opencl(f, p, c->dev[0], &w, reps);
    clf_launch_desc d = desc_for(&w, CLF_STRATEGY_DYNAMIC, c->dev, 1);
    d.chunks_per_device = o->quick ? 64 : 1024;
    run_result many;
    clf_status st = timed_launch(f, p, &d, &w, 1, reps, &many);
    free(w.out);
    if (raw < 0)
        return EXIT_FAILURE;
    if (st != CLF_SUCCESS)
        return clf_bench_fail(NULL, "many-chunk launch", st);
    c->chunk_count = many.rep.dev[0].chunks;
    c->chunk_raw = raw;
    c->chunk_wall = many.wall;
    c->chunk_us = c->chunk_count ? (many.wall - raw) / c->chunk_count * 1e6 : NAN;
    return EXIT_SUCCESS;
}

/*
 * What counting costs: the Mandelbrot launch under dynamic balancing (the most chunks, so the
 * most counted events) alternately on this fleet and on its twin `off`, made with metrics off
 * (CLFLEET_METRICS=0, no trace); the median of the pairs' ratios on / off.
 */
static int metrics_overhead(clf_fleet *f, clf_program *p, clf_fleet *off, clf_program *poff,
                            config_result *c, const workload *w, const opts *o)
{
    unsigned pairs = o->reps ? o->reps : o->quick ? 1 : 9;
    double ton[64], toff[64], ratio[64];
    pairs = pairs > 64 ? 64 : pairs;
    clf_launch_desc d = desc_for(w, CLF_STRATEGY_DYNAMIC, c->dev, c->ndev);
    run_result r;
    clf_status st;
    /* One warm-up each: the first launch of a kernel builds and uploads. */
    if ((st = timed_launch(f, p, &d, w, 1, 1, &r)) != CLF_SUCCESS ||
        (st = timed_launch(off, poff, &d, w, 1, 1, &r)) != CLF_SUCCESS)
        return clf_bench_fail(NULL, "metrics on/off warm-up", st);
    for (unsigned k = 0; k < pairs; k++) {
        /* Alternate which goes first, so neither always runs on a warmer machine. */
        for (int j = 0; j < 2; j++) {
            int on = (j == 0) == (k % 2 == 0);
            if ((st = timed_launch(on ? f : off, on ? p : poff, &d, w, 0, 1, &r)) != CLF_SUCCESS)
                return clf_bench_fail(NULL, "metrics on/off", st);
            (on ? ton : toff)[k] = r.wall;
        }
        ratio[k] = ton[k] / toff[k];
    }
    c->metrics_ratio = ratio[median_index(ratio, pairs)];
    c->metrics_on = ton[median_index(ton, pairs)];
    c->metrics_off = toff[median_index(toff, pairs)];
    return EXIT_SUCCESS;
}

/* The twin of a fleet with metrics off: CLFLEET_METRICS=0 is read when a fleet is made. */
static clf_status create_metrics_off(clf_fleet **out, const clf_fleet_options *fo)
{
    clf_fleet_options off = *fo;
    off.trace = ""; /* a trace turns the counters on */
    const char *was = getenv("CLFLEET_METRICS");
    char *saved = was ? strdup(was) : NULL;
    setenv("CLFLEET_METRICS", "0", 1);
    clf_status st = clf_fleet_create(out, &off);
    if (saved)
        setenv("CLFLEET_METRICS", saved, 1);
    else
        unsetenv("CLFLEET_METRICS");
    free(saved);
    return st;
}

/*
 * The targets, from this configuration's figures: the least efficiency of dynamic and
 * guided over both workloads, the speedup of the best strategy on the regular kernel, and the
 * overhead against raw OpenCL of a kernel that runs at least 100 ms (the larger of the two
 * workloads' overheads where both do).
 */
typedef struct targets {
    double min_efficiency;  /* >= 0.95 */
    double regular_speedup; /* >= 1.85 with two single-unit sub-devices */
    double overhead;        /* <= 0.02, kernels of 100 ms or more; NAN when none ran that long */
} targets;

static targets config_targets(const config_result *c)
{
    targets t = {INFINITY, 0, NAN};
    for (size_t i = 0; i < 2; i++) {
        const workload_result *r = &c->w[i];
        t.min_efficiency = fmin(t.min_efficiency, r->s[1].rep.efficiency);
        t.min_efficiency = fmin(t.min_efficiency, r->s[2].rep.efficiency);
        if (r->raw >= 0.1)
            t.overhead = isnan(t.overhead) ? r->overhead : fmax(t.overhead, r->overhead);
    }
    for (size_t s = 0; s < NSTRAT; s++)
        t.regular_speedup =
            fmax(t.regular_speedup, c->w[1].single[c->w[1].best] / c->w[1].s[s].wall);
    return t;
}

/* Below this one-device time a launch's fixed costs (threads woken, chunks handed out,
 * results read back) weigh as much as the work, and speedups say nothing of balancing. */
#define SMALL_PROBLEM_S 0.01

/*
 * Why a workload's figures cannot show balancing, in one line (issue 29: `balance --quick`
 * printed speedups of 0.16-0.96 with no word why): the work is too small, auto kept it on one
 * device (the launch report's reason says so), or a strategy left a device without work.
 * Returns 0 when there is nothing to say.
 */
static int workload_note(const workload_result *r, char *buf, size_t len)
{
    double one = r->single[r->best];
    int small = one < SMALL_PROBLEM_S, pos = 0;
    const char *alone = NULL, *idle = NULL;
    for (size_t s = 0; s < NSTRAT; s++) {
        const clf_launch_report *rep = &r->s[s].rep;
        if (strstr(rep->reason, "too small to split"))
            alone = clf_strategy_name(STRATEGIES[s]);
        else if (!idle && rep->num_devices >= 2)
            for (size_t k = 0; k < rep->num_devices && k < CLF_MAX_LAUNCH_DEVICES; k++)
                if (rep->dev[k].units == 0)
                    idle = clf_strategy_name(STRATEGIES[s]);
    }
    if (!small && !alone && !idle)
        return 0;
    buf[0] = 0;
    if (small)
        pos += snprintf(buf + pos, len - (size_t)pos,
                        "too small to show balancing: one device takes %.1f ms (under %.0f ms), "
                        "so a launch's fixed cost weighs as much as the work",
                        one * 1e3, SMALL_PROBLEM_S * 1e3);
    if (alone && pos >= 0 && (size_t)pos < len)
        pos += snprintf(buf + pos, len - (size_t)pos, "%s%s ran on one device alone (its reason "
                        "says: too small to split)", pos ? "; " : "", alone);
    if (idle && pos >= 0 && (size_t)pos < len)
        pos += snprintf(buf + pos, len - (size_t)pos, "%s%s gave one device no work",
                        pos ? "; " : "", idle);
    if (pos >= 0 && (size_t)pos < len)
        snprintf(buf + pos, len - (size_t)pos, "; %s", small ? "run without --quick, or with a "
                 "larger --size, to see balancing" : "these speedups are not balancing's");
    return 1;
}

/* Above this many times the fastest device alone, a strategy lost time to the slow device
 * (issue 27's bound for every strategy on a simulated GPU + CPU pair). */
#define SLOWER_THAN_ALONE 1.10

/*
 * The fastest device alone for the simulated table: the shorter of its two measurements
 * (single[], then clf_one, alternating with raw OpenCL), so that a slow moment of a loaded
 * host in one of them never flatters the fleet.
 */
static double fastest_alone(const workload_result *r)
{
    return fmin(r->single[r->best], r->clf_one);
}

/* The per-device figures of a report, "a/b/c", into buf. */
static void per_device(char *buf, size_t len, const config_result *c, const clf_launch_report *rep,
                       int chunks)
{
    size_t pos = 0;
    buf[0] = 0;
    for (size_t k = 0; k < c->ndev && pos < len; k++) {
        int n = chunks ? snprintf(buf + pos, len - pos, "%s%u", k ? "/" : "", rep->dev[k].chunks)
                       : snprintf(buf + pos, len - pos, "%s%.3f", k ? "/" : "", rep->dev[k].share);
        if (n < 0)
            break;
        pos += (size_t)n;
    }
}

/*
 * The mixed-fleet table ("heterogeneous (simulated)" or "selected devices"): per strategy,
 * its time against the fastest device alone (measured in this run) and against raw OpenCL
 * on it, with the shares and chunks, so that a strategy that lets a slow device hold the
 * launch up shows at once. On a fleet of one device, "x raw" is the library's one-device
 * overhead, the useful figure there.
 */
static void print_fleet_table(const config_result *c, const workload_result *r)
{
    size_t fast = c->dev[r->best];
    const char *sim = clf_bench_simulation();
    if (!strcmp(c->name, SELECTED))
        printf("  selected devices (%zu%s%s%s):\n", c->ndev, sim ? ", CLFLEET_SIMULATE='" : "",
               sim ? sim : "", sim ? "'" : "");
    else
        printf("  heterogeneous (simulated, CLFLEET_SIMULATE='%s'):\n", sim ? sim : "");
    printf("  fastest device alone: device %zu (%s), %.4f s (the shorter of its two "
           "measurements above)", fast, c->info[r->best].name, fastest_alone(r));
    for (size_t k = 0; k < c->ndev; k++)
        if (k != r->best)
            printf("; device %zu: %.4f s, %.1fx slower", c->dev[k], r->single[k],
                   r->single[k] / fastest_alone(r));
    printf("\n    %-22s %10s %14s %8s  %-20s %s\n", "strategy", "wall s", "x fastest alone",
           "x raw", "shares", "chunks");
    for (size_t s = 0; s < NSTRAT; s++) {
        const run_result *x = &r->s[s];
        double ratio = x->wall / fastest_alone(r);
        char shares[128], chunks[128];
        per_device(shares, sizeof shares, c, &x->rep, 0);
        per_device(chunks, sizeof chunks, c, &x->rep, 1);
        if (ratio > SLOWER_THAN_ALONE && c->ndev > 1)
            printf("    %-22s %10.4f %14.2f %8.2f  %-20s %-12s slower than the fastest alone\n",
                   clf_strategy_name(STRATEGIES[s]), x->wall, ratio, x->wall / r->raw, shares,
                   chunks);
        else
            printf("    %-22s %10.4f %14.2f %8.2f  %-20s %s\n", clf_strategy_name(STRATEGIES[s]),
                   x->wall, ratio, x->wall / r->raw, shares, chunks);
    }
    printf("    (x fastest alone: wall / the fastest device's time alone; above %.2f a slower "
           "device held the launch up; x raw: wall / raw OpenCL on the fastest device)\n",
           SLOWER_THAN_ALONE);
}

static void print_config_table(const config_result *c, int verbose)
{
    printf("== %s: %s (host: %ld CPUs online)\n", c->name, c->description,
           sysconf(_SC_NPROCESSORS_ONLN));
    unsigned cpu_units = 0;
    for (size_t k = 0; k < c->ndev; k++) {
        printf("   device %zu: %s, %s, %u compute unit(s)\n", c->dev[k], c->info[k].name,
               clf_device_type_name(c->info[k].type), c->info[k].compute_units);
        if (c->info[k].type == CLF_DEVICE_CPU)
            cpu_units += c->info[k].compute_units;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* Only CPU devices run on the host's cores (a GPU's units are its own). */
    if (cpus > 0 && cpu_units > (unsigned long)cpus && c->ndev > 1)
        printf("   note: the CPU devices run %u compute units on %ld CPUs: they share cores, so "
               "the fleet cannot beat its fastest device\n", cpu_units, cpus);
    for (size_t i = 0; i < c->nwork; i++) {
        const workload_result *r = &c->w[i];
        printf("\n%s (%s)\n", r->name, r->params);
        printf("  alone:");
        for (size_t k = 0; k < c->ndev; k++)
            printf("%s device %zu %.4f s", k ? "," : "", c->dev[k], r->single[k]);
        printf("; raw OpenCL on device %zu %.4f s; clfleet on it %.4f s (overhead %+.2f%%)\n",
               c->dev[r->best], r->raw, r->clf_one, r->overhead * 100);
        printf("  %-22s %-24s %10s %8s %6s %6s  %-13s %s\n", "strategy", "wall s [min..max]",
               "makespan s", "speedup", "effic", "imbal", "shares", "chunks");
        for (size_t s = 0; s < NSTRAT; s++) {
            const run_result *x = &r->s[s];
            char label[48], wall[64], shares[128], chunks[128];
            /* "auto -> guided": what a strategy that chooses ran as. */
            if (x->rep.strategy != STRATEGIES[s] && clf_strategy_name(x->rep.strategy))
                snprintf(label, sizeof label, "%s -> %s", clf_strategy_name(STRATEGIES[s]),
                         clf_strategy_name(x->rep.strategy));
            else
                snprintf(label, sizeof label, "%s", clf_strategy_name(STRATEGIES[s]));
            snprintf(wall, sizeof wall, "%.4f [%.4f..%.4f]", x->wall, x->wall_min, x->wall_max);
            per_device(shares, sizeof shares, c, &x->rep, 0);
            per_device(chunks, sizeof chunks, c, &x->rep, 1);
            printf("  %-22s %-24s %10.4f %8.2f %6.3f %6.3f  %-13s %s\n", label, wall,
                   x->rep.makespan_s, r->single[r->best] / x->wall, x->rep.efficiency,
                   x->rep.imbalance, shares, chunks);
        }
        printf("  (wall: median of the repetitions [fastest..slowest]; speedup: over the faster "
               "device alone;\n   effic: earliest / latest finish; imbal: latest / mean finish "
               "- 1; shares and chunks: per device)\n");
        for (size_t s = 0; s < NSTRAT; s++)
            if (r->s[s].rep.reason[0])
                printf("    %s: %s\n", clf_strategy_name(STRATEGIES[s]), r->s[s].rep.reason);
        char note[512];
        if (workload_note(r, note, sizeof note))
            printf("  note: %s\n", note);
        if (clf_bench_simulation() || !strcmp(c->name, SELECTED))
            print_fleet_table(c, r);
    }
    printf("\nper-chunk overhead: %.1f us (dynamic, %u chunks of a trivial kernel on device %zu: "
           "%.4f s vs raw %.4f s)\n",
           c->chunk_us, c->chunk_count, c->dev[0], c->chunk_wall, c->chunk_raw);
    printf("metrics on/off: %.4f (dynamic Mandelbrot, median of pairs: %.4f s with counters, "
           "%.4f s without)\n",
           c->metrics_ratio, c->metrics_on, c->metrics_off);
    if (!verbose) {
        printf("\n");
        return;
    }
    targets t = config_targets(c);
    char ovh[32];
    snprintf(ovh, sizeof ovh, isnan(t.overhead) ? "n/a" : "%+.2f%%", t.overhead * 100);
    printf("targets: dynamic/guided efficiency %.3f (>= 0.95: %s); busy speedup %.2fx (>= 1.85: "
           "%s); overhead of a >= 100 ms kernel %s (<= 2%%: %s)\n\n",
           t.min_efficiency, t.min_efficiency >= 0.95 ? "yes" : "no", t.regular_speedup,
           t.regular_speedup >= 1.85 ? "yes" : "no", ovh,
           isnan(t.overhead)    ? "not measured"
           : t.overhead <= 0.02 ? "yes"
                                : "no");
}

static void print_config_json(const config_result *c)
{
    printf("{\"name\": ");
    clf_tool_json_string(c->name);
    printf(", \"description\": ");
    clf_tool_json_string(c->description);
    printf(", \"simulate\": ");
    if (clf_bench_simulation())
        clf_tool_json_string(clf_bench_simulation());
    else
        printf("null");
    printf(",\n   \"devices\": [");
    for (size_t k = 0; k < c->ndev; k++) {
        printf("%s{\"index\": %zu, \"name\": ", k ? ", " : "", c->dev[k]);
        clf_tool_json_string(c->info[k].name);
        printf(", \"type\": ");
        clf_tool_json_string(clf_device_type_name(c->info[k].type));
        printf(", \"compute_units\": %u}", c->info[k].compute_units);
    }
    printf("],\n   \"workloads\": [");
    for (size_t i = 0; i < c->nwork; i++) {
        const workload_result *r = &c->w[i];
        printf("%s\n    {\"kernel\": ", i ? "," : "");
        clf_tool_json_string(r->name);
        printf(", \"params\": ");
        clf_tool_json_string(r->params);
        printf(", \"single_device_s\": [");
        for (size_t k = 0; k < c->ndev; k++) {
            printf("%s", k ? ", " : "");
            clf_tool_json_num(r->single[k]);
        }
        printf("], \"best_single_device\": %zu, \"best_single_device_name\": ", c->dev[r->best]);
        clf_tool_json_string(c->info[r->best].name);
        printf(", \"raw_opencl_s\": ");
        clf_tool_json_num(r->raw);
        printf(", \"clfleet_one_device_s\": ");
        clf_tool_json_num(r->clf_one);
        printf(", \"fastest_alone_s\": ");
        clf_tool_json_num(fastest_alone(r));
        printf(", \"overhead_ratio\": ");
        clf_tool_json_num(r->overhead + 1);
        char note[512];
        printf(", \"note\": ");
        if (workload_note(r, note, sizeof note))
            clf_tool_json_string(note);
        else
            printf("null");
        printf(",\n     \"strategies\": [");
        for (size_t s = 0; s < NSTRAT; s++) {
            const run_result *x = &r->s[s];
            printf("%s\n      {\"strategy\": \"%s\", \"ran_as\": \"%s\", \"reason\": ",
                   s ? "," : "", clf_strategy_name(STRATEGIES[s]),
                   clf_strategy_name(x->rep.strategy) ? clf_strategy_name(x->rep.strategy) : "?");
            clf_tool_json_string(x->rep.reason);
            printf(", \"wall_s\": ");
            clf_tool_json_num(x->wall);
            printf(", \"wall_min_s\": ");
            clf_tool_json_num(x->wall_min);
            printf(", \"wall_max_s\": ");
            clf_tool_json_num(x->wall_max);
            printf(", \"makespan_s\": ");
            clf_tool_json_num(x->rep.makespan_s);
            printf(", \"speedup\": ");
            clf_tool_json_num(r->single[r->best] / x->wall);
            printf(", \"vs_fastest_alone\": ");
            clf_tool_json_num(x->wall / fastest_alone(r));
            printf(", \"vs_raw_opencl\": ");
            clf_tool_json_num(x->wall / r->raw);
            printf(", \"efficiency\": ");
            clf_tool_json_num(x->rep.efficiency);
            printf(", \"imbalance\": ");
            clf_tool_json_num(x->rep.imbalance);
            printf(",\n       \"share\": [");
            for (size_t k = 0; k < c->ndev; k++) {
                printf("%s", k ? ", " : "");
                clf_tool_json_num(x->rep.dev[k].share);
            }
            printf("], \"items\": [");
            for (size_t k = 0; k < c->ndev; k++)
                printf("%s%llu", k ? ", " : "", (unsigned long long)x->rep.dev[k].items);
            printf("], \"chunks\": [");
            for (size_t k = 0; k < c->ndev; k++)
                printf("%s%u", k ? ", " : "", x->rep.dev[k].chunks);
            printf("], \"busy_s\": [");
            for (size_t k = 0; k < c->ndev; k++) {
                printf("%s", k ? ", " : "");
                clf_tool_json_num(x->rep.dev[k].busy_s);
            }
            printf("]}");
        }
        printf("]}");
    }
    printf("],\n   \"per_chunk_overhead_us\": ");
    clf_tool_json_num(c->chunk_us);
    printf(", \"overhead_chunks\": %u, \"overhead_wall_s\": ", c->chunk_count);
    clf_tool_json_num(c->chunk_wall);
    printf(", \"overhead_raw_s\": ");
    clf_tool_json_num(c->chunk_raw);
    printf(",\n   \"metrics_on_off_ratio\": ");
    clf_tool_json_num(c->metrics_ratio);
    printf(", \"metrics_on_s\": ");
    clf_tool_json_num(c->metrics_on);
    printf(", \"metrics_off_s\": ");
    clf_tool_json_num(c->metrics_off);
    printf(",\n   \"metrics\": %s", c->metrics_json ? c->metrics_json : "null");
    targets t = config_targets(c);
    printf(",\n   \"targets\": {\"min_dynamic_guided_efficiency\": ");
    clf_tool_json_num(t.min_efficiency);
    printf(", \"regular_speedup\": ");
    clf_tool_json_num(t.regular_speedup);
    printf(", \"overhead_100ms\": ");
    clf_tool_json_num(t.overhead);
    printf(",\n     \"efficiency_met\": %s, \"speedup_met\": %s, \"overhead_met\": %s}}\n",
           t.min_efficiency >= 0.95 ? "true" : "false",
           t.regular_speedup >= 1.85 ? "true" : "false",
           isnan(t.overhead)    ? "null"
           : t.overhead <= 0.02 ? "true"
                                : "false");
}

/* Build both shipped kernels; CLFLEET_KERNEL_DIR may point at a source tree's cl/. */
static int build(clf_fleet *f, clf_program **mandel, clf_program **busy)
{
    clf_status st = clf_program_build_shipped(mandel, f, "mandelbrot", NULL);
    if (st != CLF_SUCCESS)
        return clf_bench_fail(NULL, "building mandelbrot", st);
    st = clf_program_build_shipped(busy, f, "busy", NULL);
    if (st != CLF_SUCCESS)
        return clf_bench_fail(NULL, "building busy", st);
    return EXIT_SUCCESS;
}

/*
 * Pick busy's iteration count so that it runs about `seconds` on one device: a short probe
 * with raw OpenCL, then scale. Returns the count (at least 1), or -1.
 */
static int calibrate_busy(clf_fleet *f, clf_program *p, size_t dev, workload *w, double seconds)
{
    int iters = 64;
    for (int tries = 0; tries < 4; tries++) {
        busy_set_iters(w, iters);
        double t = raw_opencl(f, p, dev, w, 1);
        if (t < 0)
            return -1;
        if (t > seconds * 0.5 || iters >= 1 << 24) {
            double scaled = iters * seconds / t;
            return scaled < 1 ? 1 : scaled > 1 << 24 ? 1 << 24 : (int)scaled;
        }
        iters *= 8;
    }
    return iters;
}

/* How much longer than the fastest device's `seconds` the slowest may run busy alone. */
#define SLOWEST_BUSY_FACTOR 20

/*
 * busy's iterations on the selected devices, which may be very unequal (a GPU beside a CPU
 * ran it 1,600x faster): about `seconds` on the fastest device, but at most
 * SLOWEST_BUSY_FACTOR x `seconds` on the slowest, since each device alone runs it for the
 * table. Returns the count (at least 1), or -1.
 */
static int calibrate_busy_fleet(clf_fleet *f, clf_program *p, const config_result *c,
                                workload *w, double seconds)
{
    int fast = 0, slow = 0;
    for (size_t k = 0; k < c->ndev; k++) {
        int it = calibrate_busy(f, p, c->dev[k], w, seconds);
        if (it < 0)
            return -1;
        if (it > fast)
            fast = it;
        if (k == 0 || it < slow)
            slow = it;
    }
    double cap = (double)slow * SLOWEST_BUSY_FACTOR;
    return fast <= cap ? fast : cap < 1 ? 1 : (int)cap;
}

/*
 * The selected configuration's devices: every device of the fleet made from --devices, in
 * fleet order. Returns EXIT_SUCCESS, EXIT_SKIP (no device) or EXIT_FAILURE (too many),
 * after a message.
 */
static int pick_selected(const opts *o, clf_fleet *f, clf_status st, config_result *c)
{
    char what[1200];
    snprintf(what, sizeof what, "the fleet of --devices '%s'", o->devices);
    /* No device or platform: skipped (77); a refused selection or simulation: a failure. */
    if (st != CLF_SUCCESS)
        return clf_bench_setup_failed("balance", what, st);
    size_t n = clf_fleet_device_count(f);
    if (n == 0) {
        fprintf(stderr, "clfleet-bench balance: --devices '%s' selects no device\n", o->devices);
        return EXIT_SKIP;
    }
    if (n > MAX_SEL) {
        fprintf(stderr, "clfleet-bench balance: --devices '%s' selects %zu devices, at most %d "
                        "are timed (each alone, then together): select fewer\n",
                o->devices, n, MAX_SEL);
        return EXIT_FAILURE;
    }
    c->ndev = n;
    for (size_t k = 0; k < n; k++) {
        c->dev[k] = k;
        if ((st = clf_device_get_info(&c->info[k], f, k)) != CLF_SUCCESS)
            return clf_bench_fail("balance", "device info", st);
    }
    fprintf(stderr, "clfleet-bench balance: %s: %zu device(s) of --devices '%s', as selected\n",
            c->name, n, o->devices);
    return EXIT_SUCCESS;
}

/*
 * Why balance or scale found no CPU device to split (st: the fleet's status, or success when
 * the fleet had none), and what to set instead; on stderr.
 */
static void no_split_device(const opts *o, const char *what, unsigned min_cu, clf_status st)
{
    clf_bench_common c = {.name = "balance", .devices = o->devices};
    char src[1100], detail[1024] = "";
    if (st != CLF_SUCCESS)
        snprintf(detail, sizeof detail, " (%s: %s)", clf_status_name(st), clf_last_error());
    /* balance's --devices runs the selection as it is; its split configurations take
     * CLFLEET_DEVICES (or --devices beside --config). */
    int scale = !strcmp(what, "scale");
    fprintf(stderr,
            "clfleet-bench: %s: %s has no CPU device of %u or more compute units to split%s; "
            "%s, e.g. %s'type=cpu'%s\n",
            what, clf_bench_selection_source(&c, src, sizeof src), min_cu, detail,
            scale ? "set CLFLEET_DEVICES or pass --devices to select one"
                  : "set CLFLEET_DEVICES to select one",
            scale ? "--devices " : "CLFLEET_DEVICES=",
            scale ? "" : " (or run the devices as they are: balance --devices SELECTION)");
}

/* One kernel chunk of a launch: its device (fleet index) and its span, in ms from the
 * launch's start. */
typedef struct chunk_span {
    size_t dev;
    double t0, t1;
} chunk_span;
#define MAX_SPANS 4096

/*
 * The kernel chunks of the last launch in the trace file at `path` (clfleet's trace-event
 * JSON: one event per line, a launch on process 0, each device's kernels on process
 * device + 1), into spans; *launch_ms receives the launch's length. Returns how many, or -1
 * when the file holds no launch.
 */
static long read_trace_chunks(const char *path, chunk_span *spans, size_t max, double *launch_ms)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    /* The trace's numbers are C-locale text: read them in that locale. */
    locale_t cl = newlocale(LC_ALL_MASK, "C", (locale_t)0), old = cl ? uselocale(cl) : 0;
    char *line = NULL;
    size_t cap = 0;
    double l0 = -1, l1 = -1;
    long n = 0;
    for (int pass = 0; pass < 2 && cl; pass++) {
        rewind(f);
        while (getline(&line, &cap, f) > 0) {
            int pid;
            unsigned tid;
            double ts, dur;
            const char *ev = strstr(line, "{\"ph\":\"X\"");
            if (!ev || sscanf(ev, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%lf,\"dur\":%lf",
                              &pid, &tid, &ts, &dur) != 4)
                continue;
            if (pass == 0 && pid == 0 && strstr(ev, "\"cat\":\"launch\"") && ts >= l0) {
                l0 = ts; /* microseconds */
                l1 = ts + dur;
            } else if (pass == 1 && pid > 0 && strstr(ev, "\"cat\":\"kernel\"") && ts >= l0 &&
                       ts <= l1 && (size_t)n < max) {
                spans[n].dev = (size_t)pid - 1;
                spans[n].t0 = (ts - l0) / 1e3;
                spans[n].t1 = (ts + dur - l0) / 1e3;
                n++;
            }
        }
        if (l0 < 0)
            break;
    }
    free(line);
    if (cl) {
        uselocale(old);
        freelocale(cl);
    }
    fclose(f);
    *launch_ms = (l1 - l0) / 1e3;
    return l0 < 0 ? -1 : n;
}

/*
 * One dynamic Mandelbrot launch on a traced twin of the configuration's fleet (after a
 * warm-up, which builds and uploads), and its chunks from the trace: what --plot draws as
 * the timeline. The trace goes to a temporary file, removed after. Returns the number of
 * spans, or -1 after a message.
 */
static long balance_timeline(const clf_fleet_options *fo, const config_result *c,
                             const workload *mw, chunk_span *spans, double *launch_ms)
{
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/clfleet-bench-timeline-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "clfleet-bench balance: --plot: temporary file %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    close(fd);
    clf_fleet_options traced = *fo;
    traced.trace = path;
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    long n = -1;
    clf_status st = clf_fleet_create(&f, &traced);
    if (st == CLF_SUCCESS)
        st = clf_program_build_shipped(&p, f, "mandelbrot", NULL);
    clf_launch_desc d = desc_for(mw, CLF_STRATEGY_DYNAMIC, c->dev, c->ndev);
    for (int k = 0; k < 2 && st == CLF_SUCCESS; k++)
        st = clf_launch(f, p, &d, mw->args, mw->nargs, NULL);
    if (st == CLF_SUCCESS)
        st = clf_trace_flush(f);
    if (st != CLF_SUCCESS)
        clf_bench_fail("balance", "--plot: the traced launch", st);
    else if ((n = read_trace_chunks(path, spans, MAX_SPANS, launch_ms)) < 0)
        fprintf(stderr, "clfleet-bench balance: --plot: no launch in the trace %s\n", path);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    unlink(path);
    return n;
}

/*
 * --plot for one configuration, to PLOT-CONFIG.svg: each strategy's per-device shares of
 * both workloads, and the timeline of one dynamic Mandelbrot launch (a row per device, a bar
 * per chunk).
 */
static int balance_plot(const opts *o, const clf_fleet_options *fo, const config_result *c,
                        const workload *mw)
{
    static chunk_span spans[MAX_SPANS];
    double launch_ms = 0;
    long nspans = balance_timeline(fo, c, mw, spans, &launch_ms);
    if (nspans < 0)
        return EXIT_FAILURE;
    char title[256], row[128], label[32];
    snprintf(title, sizeof title, "clfleet-bench balance: %s (%s)", c->name, c->description);
    clf_plot *p = clf_plot_create(title);
    clf_plot_panel(p, CLF_PLOT_ROWS, "per-device shares of the work, each strategy",
                   "share of the range", NULL);
    for (size_t k = 0; k < c->ndev; k++) {
        snprintf(row, sizeof row, "device %zu (%u compute unit%s)", c->dev[k],
                 c->info[k].compute_units, c->info[k].compute_units == 1 ? "" : "s");
        clf_plot_key(p, (unsigned)k, row);
    }
    for (size_t i = 0; i < c->nwork; i++)
        for (size_t s = 0; s < NSTRAT; s++) {
            const clf_launch_report *rep = &c->w[i].s[s].rep;
            double at = 0;
            snprintf(row, sizeof row, "%s %s", c->w[i].name, clf_strategy_name(STRATEGIES[s]));
            for (size_t k = 0; k < c->ndev; k++) {
                snprintf(label, sizeof label, "%.2f", rep->dev[k].share);
                clf_plot_bar(p, row, at, at + rep->dev[k].share, (unsigned)k, label);
                at += rep->dev[k].share;
            }
        }
    snprintf(title, sizeof title, "timeline of one dynamic %s launch: %ld chunks", mw->name,
             nspans);
    clf_plot_panel(p, CLF_PLOT_ROWS, title, "time from the launch's start (ms)", NULL);
    clf_plot_bar(p, "launch (host)", 0, launch_ms, 7, "launch");
    for (size_t k = 0; k < c->ndev; k++) {
        snprintf(row, sizeof row, "device %zu", c->dev[k]);
        for (long j = 0; j < nspans; j++)
            if (spans[j].dev == c->dev[k])
                clf_plot_bar(p, row, spans[j].t0, spans[j].t1, (unsigned)k, NULL);
    }
    clf_plot_key(p, 7, "the launch, host time");
    for (size_t k = 0; k < c->ndev; k++) {
        snprintf(row, sizeof row, "device %zu: a chunk", c->dev[k]);
        clf_plot_key(p, (unsigned)k, row);
    }
    clf_bench_common bc = {.name = "balance"};
    char *path = clf_bench_trace_name(o->plot, c->name);
    int rc = !path || clf_bench_plot_write(&bc, p, path) ? EXIT_FAILURE : EXIT_SUCCESS;
    if (!path)
        fprintf(stderr, "clfleet-bench balance: --plot: out of memory\n");
    free(path);
    clf_plot_destroy(p);
    return rc;
}

/* One configuration, in this process (PoCL's environment already set). */
static int balance_config(const opts *o)
{
    config_result c;
    memset(&c, 0, sizeof c);
    c.name = o->config;
    unsigned counts[2] = {3, 1};
    clf_fleet_options fo = CLF_FLEET_OPTIONS_INIT;
    fo.devices = o->devices;
    /* Devices that cannot be cut as asked (PoCL's basic device has one unit) are left out. */
    char simulated[1200];
    int selected = !strcmp(o->config, SELECTED);
    if (selected && !o->devices) {
        fprintf(stderr, "clfleet-bench balance: --config %s needs --devices SELECTION\n",
                SELECTED);
        return EXIT_FAILURE;
    }
    if (!strcmp(o->config, SIMULATED) && !clf_bench_simulation()) {
        fprintf(stderr, "clfleet-bench balance: --config %s needs --simulate RULES (or "
                        "CLFLEET_SIMULATE)\n", SIMULATED);
        return EXIT_FAILURE;
    }
    if (selected) {
        /* Exactly the selected devices: no splitting, no PoCL environment (a GPU + CPU). */
        snprintf(simulated, sizeof simulated, "the devices of --devices '%s'%s%s%s", o->devices,
                 clf_bench_simulation() ? ", made unequal by CLFLEET_SIMULATE='" : "",
                 clf_bench_simulation() ? clf_bench_simulation() : "",
                 clf_bench_simulation() ? "'" : "");
        c.description = simulated;
    } else if (!strcmp(o->config, SIMULATED)) {
        snprintf(simulated, sizeof simulated, "two sub-devices of one compute unit each, made "
                 "unequal by CLFLEET_SIMULATE='%s'", clf_bench_simulation());
        c.description = simulated;
        fo.split_cpu_units = 1;
        fo.min_compute_units = 2;
    } else if (!strcmp(o->config, "homogeneous")) {
        c.description = "two sub-devices of one compute unit each";
        fo.split_cpu_units = 1;
        fo.min_compute_units = 2;
    } else if (!strcmp(o->config, "heterogeneous")) {
        c.description = "POCL_MAX_PTHREAD_COUNT=4, sub-devices of 3 and 1 compute units";
        fo.split_cpu_counts = counts;
        fo.num_split_cpu_counts = 2;
        fo.min_compute_units = 4;
    } else {
        fprintf(stderr,
                "clfleet-bench: unknown configuration '%s' (homogeneous, "
                "heterogeneous, " SIMULATED ", " SELECTED ")\n",
                o->config);
        return EXIT_FAILURE;
    }
    clf_fleet *f;
    clf_status st = clf_fleet_create(&f, &fo);
    if (selected) {
        int rc = pick_selected(o, f, st, &c);
        if (rc != EXIT_SUCCESS) {
            clf_fleet_destroy(f);
            return rc;
        }
    } else if (st != CLF_SUCCESS || !pick_pair(f, c.dev, c.info)) {
        no_split_device(o, c.name, fo.min_compute_units, st);
        clf_fleet_destroy(f);
        return EXIT_SKIP;
    } else {
        c.ndev = 2;
        fprintf(stderr, "clfleet-bench balance: %s: split CPU device %d into sub-devices (%s)\n",
                c.name, c.info[0].parent_index, c.description);
    }
    clf_program *pm = NULL, *pb = NULL;
    int rc = build(f, &pm, &pb);
    size_t side = o->size ? o->size : o->quick ? 128 : 1024;
    workload mw, bw, gw;
    mandelbrot_init(&mw, side, o->quick ? 64 : 512, o->view);
    busy_init(&bw, side * side, 1);
    /* The per-group kernel on the simulated pair and the selected devices (issue 27's table):
     * 16 items per pixel of the Mandelbrot side, 16M at the default size, as in the issue's
     * measurement. */
    int sim_pair = !strcmp(c.name, SIMULATED) || selected;
    memset(&gw, 0, sizeof gw);
    if (sim_pair)
        group_init(&gw, side * side * 16);
    if (sim_pair && !gw.in)
        rc = clf_bench_fail(NULL, "group_sum's input", CLF_ERROR_OUT_OF_HOST_MEMORY);
    if (rc == EXIT_SUCCESS) {
        /* A >= 100 ms kernel on one device for the overhead figure, unless --quick. */
        double want = o->quick ? 0.01 : 0.2;
        int iters = selected ? calibrate_busy_fleet(f, pb, &c, &bw, want)
                             : calibrate_busy(f, pb, c.dev[0], &bw, want);
        if (iters < 0)
            rc = EXIT_FAILURE;
        else
            busy_set_iters(&bw, iters);
    }
    if (rc == EXIT_SUCCESS)
        rc = run_workload(f, pm, &c, &mw, o, &c.w[0]);
    if (rc == EXIT_SUCCESS)
        rc = run_workload(f, pb, &c, &bw, o, &c.w[1]);
    c.nwork = 2;
    if (rc == EXIT_SUCCESS && sim_pair) {
        rc = run_workload(f, pb, &c, &gw, o, &c.w[2]);
        c.nwork = 3;
    }
    if (rc == EXIT_SUCCESS)
        rc = chunk_overhead(f, pb, &c, o);
    clf_fleet *off = NULL;
    clf_program *poff = NULL;
    if (rc == EXIT_SUCCESS) {
        if ((st = create_metrics_off(&off, &fo)) != CLF_SUCCESS ||
            (st = clf_program_build_shipped(&poff, off, "mandelbrot", NULL)) != CLF_SUCCESS)
            rc = clf_bench_fail(NULL, "the fleet without metrics", st);
        else
            rc = metrics_overhead(f, pm, off, poff, &c, &mw, o);
    }
    if (rc == EXIT_SUCCESS && (st = clf_metrics_json(&c.metrics_json, f)) != CLF_SUCCESS)
        rc = clf_bench_fail(NULL, "metrics", st);
    if (rc == EXIT_SUCCESS && o->plot)
        rc = balance_plot(o, &fo, &c, &mw);
    if (rc == EXIT_SUCCESS) {
        if (o->json) {
            print_config_json(&c);
        } else {
            print_config_table(&c, o->verbose);
            printf("per-device metrics over this configuration's runs:\n");
            clf_metrics_print(f, stdout);
            printf("\n");
        }
    }
    clf_free(c.metrics_json);
    free(mw.out);
    free(bw.out);
    free(gw.out);
    free(gw.in);
    clf_program_destroy(poff);
    clf_fleet_destroy(off);
    clf_program_destroy(pm);
    clf_program_destroy(pb);
    clf_fleet_destroy(f);
    return rc;
}

/* Run this program again as `balance --config NAME ...`; its standard output into *buf. */
static int run_child(const opts *o, const char *config, char **buf, size_t *len)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDOUT_FILENO);
        close(fd[1]);
        char size[32], reps[32];
        snprintf(size, sizeof size, "%zu", o->size);
        snprintf(reps, sizeof reps, "%u", o->reps);
        const char *argv[24];
        int n = 0;
        argv[n++] = o->self;
        argv[n++] = "balance";
        argv[n++] = "--config";
        argv[n++] = config;
        if (o->devices) {
            argv[n++] = "--devices";
            argv[n++] = o->devices;
        }
        if (o->size) {
            argv[n++] = "--size";
            argv[n++] = size;
        }
        if (o->reps) {
            argv[n++] = "--reps";
            argv[n++] = reps;
        }
        if (o->verbose)
            argv[n++] = "--verbose";
        if (o->json)
            argv[n++] = "--json";
        if (o->quick)
            argv[n++] = "--quick";
        if (o->view != VIEW_WHOLE) {
            argv[n++] = "--view";
            argv[n++] = (char *)VIEW_NAMES[o->view];
        }
        if (o->plot) { /* the child names its file after its configuration */
            argv[n++] = "--plot";
            argv[n++] = o->plot;
        }
        argv[n] = NULL;
        const char *pthreads = sub_env(config);
        if (pthreads)
            setenv("POCL_MAX_PTHREAD_COUNT", pthreads, 1);
        if (o->trace) { /* a timeline per configuration and fleet */
            char tag[64];
            snprintf(tag, sizeof tag, "%s-%%n", config);
            char *path = clf_bench_trace_name(o->trace, tag);
            if (path)
                setenv("CLFLEET_TRACE", path, 1);
            free(path);
        }
        execv(o->self, (char *const *)argv);
        fprintf(stderr, "clfleet-bench: cannot run %s: %s\n", o->self, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 4096;
    *buf = malloc(cap);
    *len = 0;
    for (;;) {
        if (*len + 1024 > cap)
            *buf = realloc(*buf, cap *= 2);
        ssize_t got = read(fd[0], *buf + *len, cap - *len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        *len += (size_t)got;
    }
    (*buf)[*len] = 0;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cmd_balance(const opts *o)
{
    if (o->config) {
        /* Asked for one configuration directly: make sure PoCL will see its environment. */
        const char *want = sub_env(o->config), *have = getenv("POCL_MAX_PTHREAD_COUNT");
        if (want && (!have || strcmp(have, want))) {
            char *buf;
            size_t len;
            int rc = run_child(o, o->config, &buf, &len);
            fwrite(buf, 1, len, stdout);
            free(buf);
            return rc < 0 ? EXIT_FAILURE : rc;
        }
        return balance_config(o);
    }
    /* Simulated devices: the one configuration they apply to (the real 3+1 split would mix
     * two kinds of heterogeneity). */
    static const char *const real[] = {"homogeneous", "heterogeneous"};
    static const char *const sim[] = {SIMULATED};
    static const char *const sel[] = {SELECTED};
    /* --devices: exactly those devices, one configuration (simulated too, when asked). */
    const char *const *configs = o->devices ? sel : clf_bench_simulation() ? sim : real;
    int nconf = o->devices || clf_bench_simulation() ? 1 : 2;
    int rc[2] = {0, 0}, skipped = 0, failed = 0;
    char *out[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    for (int i = 0; i < nconf; i++) {
        rc[i] = run_child(o, configs[i], &out[i], &len[i]);
        skipped += rc[i] == EXIT_SKIP;
        failed += rc[i] != 0 && rc[i] != EXIT_SKIP;
    }
    if (o->json) {
        printf("{\"benchmark\": \"balance\", \"clfleet_version\": ");
        clf_tool_json_string(clf_version_string());
        printf(", \"quick\": %s, \"host_cpus\": %ld, \"simulate\": ",
               o->quick ? "true" : "false", sysconf(_SC_NPROCESSORS_ONLN));
        if (clf_bench_simulation())
            clf_tool_json_string(clf_bench_simulation());
        else
            printf("null");
        printf(",\n \"configurations\": [");
        int first = 1;
        for (int i = 0; i < nconf; i++) {
            printf("%s\n  ", first ? "" : ",");
            first = 0;
            if (rc[i] == 0 && len[i]) {
                fwrite(out[i], 1, len[i], stdout);
            } else {
                printf("{\"name\": \"%s\", \"%s\": %d}\n", configs[i],
                       rc[i] == EXIT_SKIP ? "skipped" : "error", rc[i]);
            }
        }
        printf("]}\n");
    } else {
        for (int i = 0; i < nconf; i++) {
            fwrite(out[i], 1, len[i], stdout);
            if (rc[i])
                printf("== %s: %s (exit %d)\n", configs[i],
                       rc[i] == EXIT_SKIP ? "skipped" : "failed", rc[i]);
        }
    }
    free(out[0]);
    free(out[1]);
    return failed ? EXIT_FAILURE : skipped == nconf ? EXIT_SKIP : EXIT_SUCCESS;
}

/* ---- scale ------------------------------------------------------------------------------- */

/* --plot: speedup over the best one-device time against the device count, a panel per
 * workload, a line per strategy and the ideal (speedup = devices). */
static int scale_plot(const opts *o, const workload w[2], const double base[2],
                      const size_t *counts, size_t ncounts, run_result res[2][16][NSTRAT])
{
    clf_bench_common c = {.name = "scale"};
    clf_plot *p = clf_plot_create("clfleet-bench scale: speedup against devices");
    double x[16], y[16];
    for (size_t i = 0; i < 2; i++) {
        char title[192];
        snprintf(title, sizeof title, "%s (%s)", w[i].name, w[i].params);
        clf_plot_panel(p, CLF_PLOT_Y_ZERO | CLF_PLOT_X_WHOLE, title,
                       "devices (sub-devices of one compute unit)",
                       "speedup (x)");
        for (size_t s = 0; s <= NSTRAT; s++) {
            for (size_t k = 0; k < ncounts; k++) {
                x[k] = (double)counts[k];
                y[k] = s < NSTRAT ? base[i] / res[i][k][s].wall : (double)counts[k];
            }
            clf_plot_line(p, s < NSTRAT ? clf_strategy_name(STRATEGIES[s]) : "ideal", x, y,
                          ncounts);
        }
    }
    int rc = clf_bench_plot_write(&c, p, o->plot) ? EXIT_FAILURE : EXIT_SUCCESS;
    clf_plot_destroy(p);
    return rc;
}

static int cmd_scale(const opts *o)
{
    clf_fleet_options fo = CLF_FLEET_OPTIONS_INIT;
    fo.devices = o->devices;
    fo.split_cpu_units = 1;
    fo.min_compute_units = 2; /* one that can be split */
    clf_fleet *f;
    clf_status st = clf_fleet_create(&f, &fo);
    if (st != CLF_SUCCESS) {
        no_split_device(o, "scale", 2, st);
        return EXIT_SKIP;
    }
    /* The single-unit sub-devices of the first root device. */
    size_t devs[MAX_DEV], ndev = 0;
    clf_device_info first, in;
    for (size_t i = 0; i < clf_fleet_device_count(f) && ndev < MAX_DEV; i++)
        if (clf_device_get_info(&in, f, i) == CLF_SUCCESS && in.is_sub_device) {
            if (ndev == 0)
                first = in;
            if (in.parent_index == first.parent_index)
                devs[ndev++] = i;
        }
    if (ndev < 1) {
        no_split_device(o, "scale", 2, CLF_SUCCESS);
        clf_fleet_destroy(f);
        return EXIT_SKIP;
    }
    fprintf(stderr, "clfleet-bench scale: split CPU device %d into %zu sub-devices of one "
                    "compute unit\n", first.parent_index, ndev);
    size_t counts[16], ncounts = 0;
    for (size_t k = 1; k < ndev && ncounts < 15; k *= 2)
        counts[ncounts++] = k;
    counts[ncounts++] = ndev;

    clf_program *pm = NULL, *pb = NULL;
    int rc = build(f, &pm, &pb);
    unsigned reps = o->reps ? o->reps : o->quick ? 1 : 3, warmup = 1;
    size_t side = o->size ? o->size : o->quick ? 128 : 1024;
    workload w[2];
    mandelbrot_init(&w[0], side, o->quick ? 64 : 512, o->view);
    busy_init(&w[1], side * side, 1);
    if (rc == EXIT_SUCCESS) {
        int iters = calibrate_busy(f, pb, devs[0], &w[1], o->quick ? 0.01 : 0.2);
        if (iters < 0)
            rc = EXIT_FAILURE;
        else
            busy_set_iters(&w[1], iters);
    }
    static run_result res[2][16][NSTRAT];
    double base[2] = {INFINITY, INFINITY}; /* the best one-device time, whatever the strategy */
    for (size_t i = 0; i < 2 && rc == EXIT_SUCCESS; i++)
        for (size_t c = 0; c < ncounts && rc == EXIT_SUCCESS; c++)
            for (size_t s = 0; s < NSTRAT && rc == EXIT_SUCCESS; s++) {
                clf_launch_desc d = desc_for(&w[i], STRATEGIES[s], devs, counts[c]);
                st = timed_launch(f, i ? pb : pm, &d, &w[i], warmup, reps, &res[i][c][s]);
                if (st != CLF_SUCCESS)
                    rc = clf_bench_fail(NULL, clf_strategy_name(STRATEGIES[s]), st);
                else if (c == 0)
                    base[i] = fmin(base[i], res[i][c][s].wall);
            }
    if (rc == EXIT_SUCCESS && o->json) {
        printf("{\"benchmark\": \"scale\", \"clfleet_version\": ");
        clf_tool_json_string(clf_version_string());
        printf(", \"quick\": %s, \"host_cpus\": %ld, \"device\": ", o->quick ? "true" : "false",
               sysconf(_SC_NPROCESSORS_ONLN));
        clf_tool_json_string(first.name);
        /* The sub-devices are equal parts of one device: the first one alone is the fastest
         * device alone that the other benchmarks compare with. */
        printf(", \"sub_devices\": %zu, \"baseline_device\": %zu, \"baseline_device_name\": ",
               ndev, devs[0]);
        clf_tool_json_string(first.name);
        printf(", \"simulate\": ");
        if (clf_bench_simulation())
            clf_tool_json_string(clf_bench_simulation());
        else
            printf("null");
        printf(",\n \"workloads\": [");
        for (size_t i = 0; i < 2; i++) {
            printf("%s\n  {\"kernel\": \"%s\", \"params\": ", i ? "," : "", w[i].name);
            clf_tool_json_string(w[i].params);
            printf(", \"best_one_device_s\": ");
            clf_tool_json_num(base[i]);
            printf(", \"runs\": [");
            for (size_t c = 0; c < ncounts; c++)
                for (size_t s = 0; s < NSTRAT; s++) {
                    const run_result *x = &res[i][c][s];
                    printf("%s\n    {\"devices\": %zu, \"strategy\": \"%s\", \"wall_s\": ",
                           c || s ? "," : "", counts[c], clf_strategy_name(STRATEGIES[s]));
                    clf_tool_json_num(x->wall);
                    printf(", \"wall_min_s\": ");
                    clf_tool_json_num(x->wall_min);
                    printf(", \"wall_max_s\": ");
                    clf_tool_json_num(x->wall_max);
                    printf(", \"makespan_s\": ");
                    clf_tool_json_num(x->rep.makespan_s);
                    printf(", \"speedup\": ");
                    clf_tool_json_num(base[i] / x->wall);
                    printf(", \"parallel_efficiency\": ");
                    clf_tool_json_num(base[i] / x->wall / (double)counts[c]);
                    printf(", \"efficiency\": ");
                    clf_tool_json_num(x->rep.efficiency);
                    printf("}");
                }
            printf("]}");
        }
        printf("]}\n");
    } else if (rc == EXIT_SUCCESS) {
        printf("scale: %zu sub-devices of one compute unit (%s; host: %ld CPUs online)\n", ndev,
               first.name, sysconf(_SC_NPROCESSORS_ONLN));
        for (size_t i = 0; i < 2; i++) {
            printf("\n%s (%s): speedup over the best one-device time (%.4f s, device %zu "
                   "alone)\n", w[i].name, w[i].params, base[i], devs[0]);
            printf("  %-7s  %-13s %9s %10s %9s %10s\n", "devices", "strategy", "wall", "spread",
                   "speedup", "efficiency");
            printf("  %-7s  %-13s %9s %10s %9s %10s\n", "", "", "(s)", "(+-%)", "(x)", "");
            for (size_t c = 0; c < ncounts; c++)
                for (size_t s = 0; s < NSTRAT; s++) {
                    const run_result *x = &res[i][c][s];
                    /* The spread as +- half of (slowest - fastest), in % of the median. */
                    printf("  %-7zu  %-13s %9.4f %10.0f %9.2f %10.2f\n", counts[c],
                           clf_strategy_name(STRATEGIES[s]), x->wall,
                           50 * (x->wall_max - x->wall_min) / x->wall, base[i] / x->wall,
                           x->rep.efficiency);
                }
            printf("  (wall: median of the repetitions; efficiency: earliest / latest device "
                   "finish)\n");
            if (base[i] < SMALL_PROBLEM_S)
                printf("  note: too small to show scaling: one device takes %.1f ms (under %.0f "
                       "ms), so a launch's fixed cost weighs as much as the work; run without "
                       "--quick, or with a larger --size\n",
                       base[i] * 1e3, SMALL_PROBLEM_S * 1e3);
        }
    }
    if (rc == EXIT_SUCCESS && o->plot)
        rc = scale_plot(o, w, base, counts, ncounts, res);
    free(w[0].out);
    free(w[1].out);
    clf_program_destroy(pm);
    clf_program_destroy(pb);
    clf_fleet_destroy(f);
    return rc;
}

/* ---- main -------------------------------------------------------------------------------- */

typedef struct subcommand {
    const char *name;
    int (*run)(const opts *); /* options parsed by run_opts() */
    /* Or a command that parses its own options (argv[0] is the command's name), such as one
     * in a file of its own: {"p2p", NULL, clf_bench_p2p, "..."}. */
    int (*run_argv)(int argc, char **argv);
    const char *help;
} subcommand;

/* Later benchmarks (p2p, allreduce, pipeline) add a row here. */
static const subcommand COMMANDS[] = {
    {"balance", cmd_balance, NULL,
     "every strategy on Mandelbrot and a compute-bound kernel, homogeneous and\n"
     "            heterogeneous sub-devices (or --devices: exactly the selected ones):\n"
     "            makespan, shares, efficiency, speedup, overhead against raw OpenCL,\n"
     "            per-chunk overhead"},
    {"scale", cmd_scale, NULL, "the same kernels on 1, 2, 4, ... sub-devices of one compute unit"},
    {"p2p", NULL, clf_bench_p2p,
     "device-to-device copies of every ordered pair, 4 KiB to 256 MiB: chosen\n"
     "            path, forced staging and the naive read-then-write, against memcpy"},
    {"allreduce", NULL, clf_bench_allreduce,
     "clf_allreduce against gather-combine-write on 2 and 3 devices, in\n"
     "            nccl-tests' form: -b/-e/-f, -d type, -o op, busbw, #wrong"},
    {"pipeline", NULL, clf_bench_pipeline,
     "a 3-stage pipeline against the stages one after another and the ideal"},
    {"gemm", NULL, clf_bench_gemm,
     "multi-device GEMM through clBLAST: one device against the fleet with each\n"
     "            strategy, GFLOP/s in interleaved rounds"},
    {"stencil", NULL, clf_bench_stencil,
     "Jacobi steps: one device, host arrays per step, and resident arrays with\n"
     "            overlapped halo exchange: time per step, host and peer bytes"},
    {"graph", NULL, clf_bench_graph,
     "a DAG of 144 tile kernels: clfleet's graph, hand-placed enqueues and StarPU\n"
     "            dmda, median makespans against each device alone and the ideal"},
    {"overhead", NULL, clf_bench_overhead,
     "what a tiny launch costs: one device and two (static, dynamic, auto)\n"
     "            against the raw OpenCL round trip, per launch and per chunk"},
#ifdef CLF_BENCH_MPI
    {"mpi-allreduce", NULL, clf_bench_mpi_allreduce,
     "across MPI ranks (under mpirun): clf_comm_allreduce against device -> host,\n"
     "            MPI_Allreduce, host -> device, 4 KiB to 256 MiB: bus bandwidth"},
    {"mpi-stencil", NULL, clf_bench_mpi_stencil,
     "across MPI ranks (under mpirun): Jacobi steps on rank 0 alone against every\n"
     "            rank's devices, halos by MPI overlapped or before: time per step, bytes\n"
     "            per rank"},
#endif
};
#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench COMMAND [OPTION]...\n"
          "       clfleet-bench --help | --version\n"
          "commands:\n",
          to);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(to, "  %-9s %s\n", COMMANDS[i].name, COMMANDS[i].help);
    fputs("'clfleet-bench COMMAND --help' lists a command's options. Every command takes\n"
          "--json, --quick, --verbose, --reps N, --devices SELECTION, --trace PATH and\n"
          "--simulate RULES (CLFLEET_SIMULATE for the fleets: simulated slow devices);\n"
          "p2p, allreduce, scale and balance also --plot FILE.svg (a chart).\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 77 no suitable device\n"
          "(automake's \"skipped\").\n",
          to);
}

/* The options of balance and scale, which main() parses (run_opts()). */
static void usage_balance_scale(FILE *to, const char *cmd)
{
    fprintf(to,
            "usage: clfleet-bench %s [--json] [--quick] [--verbose] [--size N] [--reps N]\n"
            "                     [--devices SELECTION]%s [--view whole|offaxis|band]\n"
            "                     [--trace PATH] [--plot FILE.svg] [--simulate RULES]\n",
            cmd, strcmp(cmd, "balance") ? "" : " [--config NAME]");
    fputs("  --json       one JSON document on standard output\n"
          "  --quick      small sizes, one repetition (a smoke test)\n"
          "  --verbose    also the developer targets, and whether they are met (balance:\n"
          "               and every launch on standard error: its time, each device's\n"
          "               units, chunks and kernel time, and the reason)\n"
          "  --size N     Mandelbrot image side, 16 to 65536, K suffix; the busy kernel runs\n"
          "               N*N items (1024)\n"
          "  --reps N     timed repetitions, 1 to 64: median [min..max] reported (5)\n"
          "  --devices S  ", to);
    if (!strcmp(cmd, "balance"))
        fputs("run one configuration, 'selected', on exactly these devices\n"
              "               (e.g. 'type=gpu,cpu': a real mixed fleet; no splitting), each\n"
              "               alone and together: every strategy against the fastest alone\n"
              "               and raw OpenCL (with --config: the CPU devices to split)\n"
              "  --config C   only 'homogeneous' or 'heterogeneous' (or 'simulated', with\n"
              "               --simulate; 'selected', with --devices)\n", to);
    else
        fputs("the CPU devices to split (default: $CLFLEET_DEVICES, else the\n"
              "               library's default; devices of fewer than 2 compute units are\n"
              "               left out, as they cannot be split)\n", to);
    fputs("  --simulate R set CLFLEET_SIMULATE=R for every fleet (a testing tool: the library\n"
          "               makes real devices behave like slower ones, e.g.\n"
          "               'device=1,compute=0.02,latency=60us')", to);
    if (!strcmp(cmd, "balance"))
        fputs(": balance then runs one\n"
              "               configuration, 'simulated' (two equal sub-devices made unequal,\n"
              "               or with --devices the selected ones), with a table of each\n"
              "               strategy against the fastest device alone\n",
              to);
    else
        fputs("\n", to);
    fputs("  --view V     Mandelbrot's view: 'whole' (the whole set, default), 'offaxis' or\n"
          "               'band' (im 0..1.2: the costliest rows first)\n"
          "  --trace PATH a Perfetto timeline per fleet, PATH-N.json\n"
          "               (balance: PATH-CONFIG-N.json)\n"
          "  --plot FILE.svg  a chart: scale: speedup against the device count, per\n"
          "               strategy; balance: per configuration (FILE-CONFIG.svg), each\n"
          "               strategy's per-device shares and the timeline of one dynamic\n"
          "               Mandelbrot launch (its chunks on each device, from a trace)\n"
          "  -h, --help   this text; -V, --version: the version\n"
          "Exit status: 0 success, 1 failure, 2 bad command line, 77 no suitable device.\n",
          to);
}

static void usage_balance(FILE *to)
{
    usage_balance_scale(to, "balance");
}

static void usage_scale(FILE *to)
{
    usage_balance_scale(to, "scale");
}

static int run_opts(const subcommand *cmd, int argc, char **argv);

/* After the one line that says what was wrong: where to look, as every command does. */
static int usage_error(void)
{
    fputs("Try 'clfleet-bench --help'.\n", stderr);
    return CLF_BENCH_USAGE;
}

int main(int argc, char **argv)
{
    clf_tool_show_slow_steps();
    /* Options before the command: only --help and --version ("+": stop at the command). */
    static const struct option global[] = {{"help", no_argument, NULL, 'h'},
                                           {"version", no_argument, NULL, 'V'},
                                           {NULL, 0, NULL, 0}};
    int val;
    opterr = 0;
    while ((val = getopt_long(argc, argv, "+hV", global, NULL)) != -1) {
        switch (val) {
        case 'h':
            usage(stdout);
            return EXIT_SUCCESS;
        case 'V':
            printf("clfleet-bench %s\n", clf_version_string());
            return EXIT_SUCCESS;
        default:
            fprintf(stderr, "clfleet-bench: unknown option '%s'\n", argv[optind - 1]);
            return usage_error();
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "clfleet-bench: which benchmark? ");
        for (size_t i = 0; i < NCOMMANDS; i++)
            fprintf(stderr, "%s%s", COMMANDS[i].name, i + 1 < NCOMMANDS ? ", " : "\n");
        return usage_error();
    }
    const subcommand *cmd = NULL;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[optind], COMMANDS[i].name))
            cmd = &COMMANDS[i];
    if (!cmd) {
        fprintf(stderr, "clfleet-bench: unknown command '%s'\n", argv[optind]);
        return usage_error();
    }
    argc -= optind;
    argv += optind;
    int rc = cmd->run_argv ? cmd->run_argv(argc, argv) : run_opts(cmd, argc, argv);
    /* --trace PATH (clf_bench_parse()): each fleet the benchmark made wrote its timeline to
     * PATH with "-N" (the fleet's number) before the extension; balance adds the
     * configuration's name. */
    const char *trace = clf_bench_trace();
    if (trace && rc != EXIT_FAILURE && rc != CLF_BENCH_USAGE) {
        char *where = clf_bench_trace_name(trace, "*");
        fprintf(stderr, "clfleet-bench: timelines written to %s, one per fleet (open them in "
                        "https://ui.perfetto.dev)\n", where ? where : trace);
        free(where);
    }
    return rc;
}

enum { OPT_SIZE = CLF_BENCH_OWN, OPT_CONFIG, OPT_VIEW };

/* --size N, --config NAME (balance) and --view V. */
static int own_option(void *o_, int val, const char *arg)
{
    opts *o = o_;
    switch (val) {
    case OPT_SIZE:
        return clf_bench_number(arg, 10, 16, 65536, &o->size);
    case OPT_CONFIG:
        o->config = arg;
        return !strcmp(arg, "homogeneous") || !strcmp(arg, "heterogeneous") ||
               !strcmp(arg, SIMULATED) || !strcmp(arg, SELECTED);
    default: /* OPT_VIEW */
        for (int v = VIEW_WHOLE; v <= VIEW_BAND; v++)
            if (!strcmp(arg, VIEW_NAMES[v])) {
                o->view = v;
                return 1;
            }
        return 0;
    }
}

/* The commands whose options main() parses. */
static int run_opts(const subcommand *cmd, int argc, char **argv)
{
    static const struct option own[] = {{"size", required_argument, NULL, OPT_SIZE},
                                        {"config", required_argument, NULL, OPT_CONFIG},
                                        {"view", required_argument, NULL, OPT_VIEW},
                                        {NULL, 0, NULL, 0}};
    static const struct option own_scale[] = {{"size", required_argument, NULL, OPT_SIZE},
                                              {"view", required_argument, NULL, OPT_VIEW},
                                              {NULL, 0, NULL, 0}};
    int balance = cmd->run == cmd_balance;
    opts o = {0};
    /* reps 0: each measurement's own default; --quick never caps an explicit --reps. */
    clf_bench_common c = {.name = cmd->name,
                          .usage = balance ? usage_balance : usage_scale,
                          .quick_reps = CLF_BENCH_MAX_REPS,
                          .can_plot = 1};
    int rc = clf_bench_parse(&c, argc, argv, balance ? own : own_scale, own_option, &o);
    if (rc >= 0)
        return rc;
    o.json = c.json;
    o.quick = c.quick;
    o.verbose = c.verbose;
    each_rep = balance && c.verbose;
    o.reps = c.reps;
    o.devices = c.devices;
    o.trace = c.trace;
    o.plot = c.plot;
    /* /proc/self/exe survives a relative argv[0] and a changed directory. */
    o.self = access("/proc/self/exe", X_OK) == 0 ? "/proc/self/exe" : argv[0];
    return cmd->run(&o);
}

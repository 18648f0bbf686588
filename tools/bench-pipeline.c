/*
 * clfleet-bench pipeline: a 3-stage pipeline (clf_pipeline) on 3 devices that run at once,
 * against running the stages one after another, and against the ideal: the slowest stage
 * running alone.
 *
 * Each stage is a compute-bound kernel (a fixed loop of multiply-adds per item, the count
 * per stage set by --costs) over batches of --items floats. Three runs of --batches
 * batches, each the median of a few repetitions:
 *
 *   pipelined   clf_pipeline_run(): stage s works on batch b while stage s+1 works on b-1
 *   serial      the same stages, one batch at a time through all of them (no overlap)
 *   alone       each stage as a pipeline of its own on its device; the slowest sets the
 *               ideal throughput of the pipeline
 *
 * and reports batches/s of each, the pipelined/serial speedup (3 for three equal stages
 * at best) and the ratio of the pipelined throughput to the ideal (target: 0.9 or more).
 * The devices are those of --devices, else $CLFLEET_DEVICES, else the library's default;
 * CPU devices are split into sub-devices of one compute unit when there are fewer than the
 * stages need. CPU devices only run at once when the host has a core for each (and PoCL's
 * root devices share one thread pool: split them with ';split=1'). On CPU devices the bench
 * also prints the host bound, the best ratio to ideal that the host's cores allow (see
 * host_bound()). Built with -DCLF_BENCH_PIPELINE_MAIN it is a program of its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "json.h"
#include "clfleet.h"

#define MAX_REPS CLF_BENCH_MAX_REPS
#define NSTAGE 3

static const char SRC[] =
    "__kernel void stage(__global const float *in, __global float *out, int iters)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    float a = in[i], b = a * 0.5f + 0.25f, c = a * 0.25f + 0.5f, d = 1.0f - a * 0.125f;\n"
    "    for (int k = 0; k < iters; k++) {\n"
    "        a = a * 0.999f + 0.001f;\n"
    "        b = b * 0.998f + 0.002f;\n"
    "        c = c * 0.997f + 0.003f;\n"
    "        d = d * 0.996f + 0.004f;\n"
    "    }\n"
    "    out[i] = 0.25f * (a + b + c + d);\n"
    "}\n";

typedef struct bench {
    clf_bench_common opt;
    size_t items, batches;
    double costs[NSTAGE];
    int iters[NSTAGE];
    size_t dev[NSTAGE];
    double target_ms; /* the cost-1 stage's time per batch */
    clf_fleet *fl;
    clf_program *prog;
    float *in, *out;
} bench;

typedef struct figures {
    double pipe_s, serial_s, alone_s[NSTAGE];             /* medians */
    double pipe_mm[2], serial_mm[2], alone_mm[NSTAGE][2]; /* fastest and slowest runs */
    clf_pipeline_report rep; /* of the median pipelined run */
    long cores;              /* online host cores */
    double host_bound;       /* the best ratio to ideal the host's cores allow; 0: no bound */
} figures;

/*
 * When every stage runs on a CPU device, the stages share the host's cores: a stage alone
 * for t seconds a batch on a device of u compute units keeps min(u, cores) cores busy, so
 * the pipeline needs sum(t * min(u, cores)) core-seconds a batch and cannot beat cores
 * over that, whatever the runtime does. The best ratio to the ideal is then
 * min(1, cores * max(t) / sum(t * min(u, cores))): 2/3 for three equal one-core stages on
 * two cores.
 */
static void host_bound(const bench *b, figures *f)
{
    double work = 0, worst = 0;
    f->cores = sysconf(_SC_NPROCESSORS_ONLN);
    f->host_bound = 0;
    if (f->cores < 1)
        return;
    for (int s = 0; s < NSTAGE; s++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl, b->dev[s]) != CLF_SUCCESS ||
            !(in.type & CLF_DEVICE_CPU))
            return;
        double u = in.compute_units < (unsigned long)f->cores ? in.compute_units
                                                               : (double)f->cores;
        work += f->alone_s[s] * u;
        worst = f->alone_s[s] > worst ? f->alone_s[s] : worst;
    }
    double bound = work > 0 ? (double)f->cores * worst / work : 0;
    f->host_bound = bound < 1 ? bound : 1;
}

/* A pipeline of stages first..first+n-1 (n = 1: one stage alone). */
static clf_status make(bench *b, size_t first, size_t n, int serial, clf_pipeline **out)
{
    clf_stage_desc st[NSTAGE];
    clf_arg args[NSTAGE][1];
    for (size_t i = 0; i < n; i++) {
        size_t s = first + i;
        clf_stage_desc d = CLF_STAGE_DESC_INIT;
        clf_arg a = CLF_SCALAR(&b->iters[s]);
        args[i][0] = a;
        d.device = b->dev[s];
        d.program = b->prog;
        d.kernel = "stage";
        d.in_bytes = d.out_bytes = b->items * sizeof(float);
        d.global[0] = b->items;
        d.local[0] = 64;
        d.args = args[i];
        d.nargs = 1;
        st[i] = d;
    }
    clf_pipeline_options o = CLF_PIPELINE_OPTIONS_INIT;
    o.serial = serial;
    return clf_pipeline_create(out, b->fl, st, n, &o);
}

/* Median wall time of runs of the pipeline, with the fastest and slowest in minmax; its
 * report from the median run. */
static clf_status timed(bench *b, clf_pipeline *pl, size_t batches, double *secs,
                        double minmax[2], clf_pipeline_report *rep)
{
    double t[MAX_REPS];
    clf_pipeline_report reps[MAX_REPS];
    clf_status st = clf_pipeline_run(pl, b->in, b->out, batches < 4 ? batches : 4, NULL);
    for (unsigned k = 0; k < b->opt.reps && st == CLF_SUCCESS; k++) {
        double t0 = clf_bench_now();
        st = clf_pipeline_run(pl, b->in, b->out, batches, &reps[k]);
        t[k] = clf_bench_now() - t0;
    }
    if (st != CLF_SUCCESS)
        return st;
    double sorted[MAX_REPS];
    memcpy(sorted, t, b->opt.reps * sizeof *t);
    *secs = clf_bench_median(sorted, b->opt.reps); /* sorts sorted */
    minmax[0] = sorted[0];
    minmax[1] = sorted[b->opt.reps - 1];
    if (rep) {
        size_t best = 0;
        for (unsigned k = 1; k < b->opt.reps; k++)
            if (fabs(t[k] - *secs) < fabs(t[best] - *secs))
                best = k;
        *rep = reps[best];
    }
    return CLF_SUCCESS;
}

/* Iterations for target_ms per batch on the first stage's device, alone. */
static clf_status calibrate(bench *b)
{
    int base = 64;
    for (int round = 0; round < 12; round++) {
        for (int s = 0; s < NSTAGE; s++)
            b->iters[s] = base;
        clf_pipeline *pl;
        clf_status st = make(b, 0, 1, 0, &pl);
        if (st != CLF_SUCCESS)
            return st;
        clf_pipeline_report r;
        st = clf_pipeline_run(pl, b->in, b->out, 4, &r);
        clf_pipeline_destroy(pl);
        if (st != CLF_SUCCESS)
            return st;
        double per = r.stage[0].busy_s / 4 * 1e3;
        if (per > b->target_ms / 4 || round == 11) {
            base = (int)(base * (b->target_ms / per));
            break;
        }
        base *= 4;
    }
    for (int s = 0; s < NSTAGE; s++)
        b->iters[s] = (int)(base * b->costs[s]) > 0 ? (int)(base * b->costs[s]) : 1;
    return CLF_SUCCESS;
}

/* The result of the stages one after another on the host, for a check of the pipeline. */
static int check(const bench *b)
{
    for (size_t bt = 0; bt < b->batches; bt += b->batches - 1) {
        for (size_t i = 0; i < b->items; i += 97) {
            float x = b->in[bt * b->items + i];
            for (int s = 0; s < NSTAGE; s++) {
                float a = x, p = a * 0.5f + 0.25f, c = a * 0.25f + 0.5f, d = 1.0f - a * 0.125f;
                for (int k = 0; k < b->iters[s]; k++) {
                    a = a * 0.999f + 0.001f;
                    p = p * 0.998f + 0.002f;
                    c = c * 0.997f + 0.003f;
                    d = d * 0.996f + 0.004f;
                }
                x = 0.25f * (a + p + c + d);
            }
            if (fabsf(x - b->out[bt * b->items + i]) > 1e-3f * (1.0f + fabsf(x)))
                return 0;
        }
        if (b->batches == 1)
            break;
    }
    return 1;
}

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench pipeline [--json] [--quick] [--verbose] [--reps N]\n"
          "                              [--devices SELECTION] [--trace PATH]\n"
          "                              [--stage-devices A,B,C] [--costs X,Y,Z]\n"
          "                              [--batches N] [--items N] [--ms T]\n"
          "A 3-stage pipeline on 3 devices at once, against the stages one after another and\n"
          "against the slowest stage alone (the ideal).\n"
          "  --json              one JSON document on standard output\n"
          "  --quick             16 batches, two repetitions (a smoke test)\n"
          "  --reps N            timed repetitions, medians reported (3)\n"
          "  --verbose           also compare with the target ratio to the ideal (0.9)\n"
          "  --devices S         devices (default: $CLFLEET_DEVICES, else the library's\n"
          "                      default; CPU devices are split when there are too few)\n"
          "  --trace PATH        a Perfetto timeline per fleet, PATH-N.json\n"
          "  --stage-devices L   fleet indices of the three stages (default 0,1,2)\n"
          "  --costs L           relative work of the three stages (default 1,1,1)\n"
          "  --batches N         batches per run (default 64)\n"
          "  --items N           floats per batch (default 65536)\n"
          "  --ms T              time per batch of a stage of cost 1 (default 5)\n"
          "  -h, --help          this text; -V, --version: the version\n",
          to);
}

static int parse_list(const char *s, double *v, int integers)
{
    char *end;
    for (int i = 0; i < NSTAGE; i++) {
        v[i] = strtod(s, &end);
        if (end == s || !(v[i] >= 0) || (integers && v[i] != floor(v[i])) ||
            (!integers && v[i] <= 0))
            return 0;
        s = end;
        if (i + 1 < NSTAGE && *s++ != ',')
            return 0;
    }
    return *s == '\0';
}

enum { OPT_BATCHES = CLF_BENCH_OWN, OPT_ITEMS, OPT_MS, OPT_COSTS, OPT_STAGE_DEVICES };
static const struct option OWN[] = {{"batches", required_argument, NULL, OPT_BATCHES},
                                    {"items", required_argument, NULL, OPT_ITEMS},
                                    {"ms", required_argument, NULL, OPT_MS},
                                    {"costs", required_argument, NULL, OPT_COSTS},
                                    {"stage-devices", required_argument, NULL, OPT_STAGE_DEVICES},
                                    {NULL, 0, NULL, 0}};

/* --batches N, --items N, --ms T, --costs L and --stage-devices L. */
static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    char *end = NULL;
    double v[NSTAGE];
    switch (val) {
    case OPT_BATCHES:
        return clf_bench_number(arg, 10, 2, 100000, &b->batches);
    case OPT_ITEMS:
        return clf_bench_number(arg, 10, 64, (size_t)1 << 26, &b->items) && b->items % 64 == 0;
    case OPT_MS:
        b->target_ms = strtod(arg, &end);
        return end != arg && *end == '\0' && b->target_ms > 0 && b->target_ms <= 1000;
    case OPT_COSTS:
        if (!parse_list(arg, v, 0))
            return 0;
        memcpy(b->costs, v, sizeof v);
        return 1;
    default: /* OPT_STAGE_DEVICES */
        if (!parse_list(arg, v, 1))
            return 0;
        for (int s = 0; s < NSTAGE; s++)
            b->dev[s] = (size_t)v[s];
        return 1;
    }
}

/* A run's batches/s, median [slowest..fastest run], and ms per batch. */
static void print_row(const char *name, double nb, double s, const double minmax[2])
{
    char spread[48];
    snprintf(spread, sizeof spread, "[%.1f..%.1f]", nb / minmax[1], nb / minmax[0]);
    printf("%-22s %10.1f %17s %12.3f\n", name, nb / s, spread, s / nb * 1e3);
}

static void print_table(const bench *b, const figures *f)
{
    double nb = (double)b->batches;
    double worst = 0;
    for (int s = 0; s < NSTAGE; s++)
        worst = f->alone_s[s] > worst ? f->alone_s[s] : worst;
    printf("clfleet-bench pipeline: 3 stages, %zu batches of %zu floats, costs %g,%g,%g, "
           "median of %u\n",
           b->batches, b->items, b->costs[0], b->costs[1], b->costs[2], b->opt.reps);
    for (int s = 0; s < NSTAGE; s++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl, b->dev[s]) == CLF_SUCCESS)
            printf("  stage %d: device %zu (%s, %u compute unit(s)), %d iterations\n", s, b->dev[s],
                   in.name, in.compute_units, b->iters[s]);
    }
    printf("\n%-22s %10s %17s %12s\n", "run", "batches/s", "[min..max]", "ms/batch");
    print_row("serial (one by one)", nb, f->serial_s, f->serial_mm);
    for (int s = 0; s < NSTAGE; s++) {
        char name[32];
        snprintf(name, sizeof name, "stage %d alone", s);
        print_row(name, nb, f->alone_s[s], f->alone_mm[s]);
    }
    print_row("pipelined", nb, f->pipe_s, f->pipe_mm);
    printf("\nspeedup over serial: %.2fx; throughput / ideal (slowest stage alone): %.2f%s\n",
           f->serial_s / f->pipe_s, worst / f->pipe_s,
           !b->opt.verbose ? "" : worst / f->pipe_s >= 0.9 ? " (target 0.9: met)"
                                                           : " (target 0.9: missed)");
    if (f->host_bound > 0)
        printf("host bound: %.2f (the CPU devices share %ld cores); throughput / ideal / host "
               "bound: %.2f\n",
               f->host_bound, f->cores, worst / f->pipe_s / f->host_bound);
    printf("\nper stage, pipelined: %-8s %10s %12s %12s\n", "busy s", "batches/s", "items/s",
           "utilization");
    for (size_t s = 0; s < f->rep.num_stages; s++) {
        const clf_stage_report *r = &f->rep.stage[s];
        printf("  stage %zu%s            %8.3f %10.1f %12.3g %12.2f\n", s,
               s == f->rep.bottleneck ? "*" : " ", r->busy_s, r->batches_per_s, r->items_per_s,
               r->utilization);
    }
    printf("  (* bottleneck; pipeline efficiency from the report: %.2f)\n", f->rep.efficiency);
}

static void print_json(const bench *b, const figures *f)
{
    double nb = (double)b->batches, worst = 0;
    for (int s = 0; s < NSTAGE; s++)
        worst = f->alone_s[s] > worst ? f->alone_s[s] : worst;
    printf("{\n  \"benchmark\": \"pipeline\",\n  \"stages\": 3,\n  \"batches\": %zu,\n"
           "  \"items\": %zu,\n  \"repetitions\": %u,\n  \"costs\": [%g, %g, %g],\n",
           b->batches, b->items, b->opt.reps, b->costs[0], b->costs[1], b->costs[2]);
    printf("  \"serial_batches_per_s\": ");
    clf_tool_json_num(nb / f->serial_s);
    printf(",\n  \"pipelined_batches_per_s\": ");
    clf_tool_json_num(nb / f->pipe_s);
    printf(", \"pipelined_batches_per_s_min\": ");
    clf_tool_json_num(nb / f->pipe_mm[1]);
    printf(", \"pipelined_batches_per_s_max\": ");
    clf_tool_json_num(nb / f->pipe_mm[0]);
    printf(",\n  \"alone_batches_per_s\": [");
    for (int s = 0; s < NSTAGE; s++) {
        printf("%s", s ? ", " : "");
        clf_tool_json_num(nb / f->alone_s[s]);
    }
    printf("],\n  \"speedup_over_serial\": ");
    clf_tool_json_num(f->serial_s / f->pipe_s);
    printf(",\n  \"ratio_to_ideal\": ");
    clf_tool_json_num(worst / f->pipe_s);
    printf(",\n  \"host_cores\": %ld,\n  \"host_bound\": ", f->cores);
    if (f->host_bound > 0)
        clf_tool_json_num(f->host_bound);
    else
        printf("null");
    printf(",\n  \"report_efficiency\": ");
    clf_tool_json_num(f->rep.efficiency);
    printf(",\n  \"stage_reports\": [");
    for (size_t s = 0; s < f->rep.num_stages; s++) {
        const clf_stage_report *r = &f->rep.stage[s];
        printf("%s\n    {\"device\": %zu, \"iterations\": %d, \"busy_s\": ", s ? "," : "",
               r->device, b->iters[s]);
        clf_tool_json_num(r->busy_s);
        printf(", \"batches_per_s\": ");
        clf_tool_json_num(r->batches_per_s);
        printf(", \"items_per_s\": ");
        clf_tool_json_num(r->items_per_s);
        printf(", \"utilization\": ");
        clf_tool_json_num(r->utilization);
        printf("}");
    }
    printf("\n  ]\n}\n");
}

int clf_bench_pipeline(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){.name = "pipeline", .usage = usage, .reps = 3, .quick_reps = 2};
    b.items = 65536;
    b.batches = 64;
    b.target_ms = 5;
    for (int s = 0; s < NSTAGE; s++) {
        b.costs[s] = 1;
        b.dev[s] = (size_t)s;
    }
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick) {
        b.batches = b.batches < 16 ? b.batches : 16;
        b.target_ms = b.target_ms < 1 ? b.target_ms : 1;
    }
    rc = 0;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    size_t need = 0;
    for (int s = 0; s < NSTAGE; s++)
        need = b.dev[s] + 1 > need ? b.dev[s] + 1 : need;
    clf_status st = clf_bench_fleet(&b.fl, &b.opt, &o, need);
    if (st != CLF_SUCCESS) /* clf_bench_fleet() said why */
        return st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                        : EXIT_FAILURE;
    b.in = malloc(b.batches * b.items * sizeof(float));
    b.out = malloc(b.batches * b.items * sizeof(float));
    figures f;
    memset(&f, 0, sizeof f);
    clf_pipeline *pl = NULL;
    if (!b.in || !b.out) {
        rc = clf_bench_fail("pipeline", "memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        goto out;
    }
    for (size_t i = 0; i < b.batches * b.items; i++)
        b.in[i] = (float)(i % 1000) * 0.001f;
    if ((st = clf_program_build_source(&b.prog, b.fl, SRC, NULL)) != CLF_SUCCESS ||
        (st = calibrate(&b)) != CLF_SUCCESS) {
        rc = clf_bench_fail("pipeline", "setup", st);
        goto out;
    }
    for (int s = 0; s < NSTAGE && !rc; s++) {
        if ((st = make(&b, (size_t)s, 1, 0, &pl)) != CLF_SUCCESS ||
            (st = timed(&b, pl, b.batches, &f.alone_s[s], f.alone_mm[s], NULL)) != CLF_SUCCESS)
            rc = clf_bench_fail("pipeline", "stage alone", st);
        clf_pipeline_destroy(pl);
        pl = NULL;
    }
    if (!rc && ((st = make(&b, 0, NSTAGE, 1, &pl)) != CLF_SUCCESS ||
                (st = timed(&b, pl, b.batches, &f.serial_s, f.serial_mm, NULL)) != CLF_SUCCESS))
        rc = clf_bench_fail("pipeline", "serial", st);
    clf_pipeline_destroy(pl);
    pl = NULL;
    if (!rc && ((st = make(&b, 0, NSTAGE, 0, &pl)) != CLF_SUCCESS ||
                (st = timed(&b, pl, b.batches, &f.pipe_s, f.pipe_mm, &f.rep)) != CLF_SUCCESS))
        rc = clf_bench_fail("pipeline", "pipelined", st);
    if (!rc && !check(&b)) {
        fprintf(stderr, "clfleet-bench pipeline: wrong result\n");
        rc = EXIT_FAILURE;
    }
    if (!rc) {
        host_bound(&b, &f);
        if (b.opt.json)
            print_json(&b, &f);
        else
            print_table(&b, &f);
    }
out:
    clf_pipeline_destroy(pl);
    clf_program_destroy(b.prog);
    clf_fleet_destroy(b.fl);
    free(b.in);
    free(b.out);
    return rc;
}

#ifdef CLF_BENCH_PIPELINE_MAIN
int main(int argc, char **argv)
{
    return clf_bench_pipeline(argc, argv);
}
#endif

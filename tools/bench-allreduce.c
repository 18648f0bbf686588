/*
 * clfleet-bench allreduce: clf_allreduce() (the ring or the host combine, chosen per call by
 * measured times; doc/06-collectives.md), each algorithm forced, and the naive way (read every device's buffer to the host, combine there, write the result back
 * to every device), from 4 KiB to 256 MiB in steps of 4x, on 2 and 3 devices, in the
 * conventions of nccl-tests' all_reduce_perf: -b/-e/-f for the sizes, -w warm-up and -n timed
 * iterations, -d the type and -o the operation, and per size the columns
 *
 *   size count type redop root | out-of-place: time algbw busbw #wrong | in-place: ... |
 *   naive: time busbw #wrong | alg: the algorithm chosen after the timed iterations, then the
 *   medians of clf_allreduce() and of the ring and the host combine forced
 *
 * with time the mean of the timed iterations, algbw = size / time and busbw as NCCL defines
 * it for all-reduce, algbw x 2(n-1)/n (the bytes each device must send and receive, so that
 * the figure compares with the links' bandwidth whatever n). clf_allreduce() works in place
 * only, so the out-of-place columns say n/a. The buffers are written afresh (untimed) before
 * every iteration, so that every iteration reduces the same values; #wrong counts the
 * elements of every device's buffer that differ from a host reference after the last one
 * (the values are small integers, so every result is exact in any order and any type).
 * The footer gives the out-of-bounds total and the mean bus bandwidth, as nccl-tests does.
 *
 * The devices are those of --devices, else $CLFLEET_DEVICES, else the library's default (a
 * single CPU device is split into sub-devices of one compute unit), in one context per
 * platform (the copies stay in the context); --context-per-device makes every copy cross
 * contexts through pinned host staging. Built with -DCLF_BENCH_ALLREDUCE_MAIN it is a
 * program of its own.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "json.h"
#include "plot.h"
#include "clfleet.h"

#define MAX_REPS CLF_BENCH_MAX_REPS
#define MAX_DEV 3
#define MAX_RUNS 256

typedef struct run {
    size_t ndev, bytes, count;
    double time_s, min_s, max_s; /* clf_allreduce(): mean, fastest and slowest iteration */
    double naive_s;              /* the naive way: mean */
    size_t wrong, naive_wrong;   /* elements that differ from the reference, every device */
    /* The algorithm clf_allreduce() chose, and the medians of it and of each algorithm
     * forced (clf_collective_options.algorithm), timed in the same alternation. */
    clf_allreduce_algorithm chosen;
    double auto_med_s, ring_med_s, host_med_s;
    size_t forced_wrong; /* elements wrong after the forced runs' last iterations */
} run;

typedef struct bench {
    clf_bench_common opt;
    int per_device;
    clf_type type;
    clf_reduce_op op;
    size_t esz;                      /* bytes of one element */
    size_t min_bytes, max_bytes, factor;
    size_t warmup, only_n;           /* -w; -g (0: 2 and 3 devices) */
    size_t chunk;
    clf_fleet *fl;
    size_t nfleet;
    clf_buffer *buf[MAX_DEV];
    unsigned char *host[MAX_DEV], *sum, *init[MAX_DEV];
    double memcpy_gbps;
} bench;

static double busbw(size_t bytes, double s, size_t n)
{
    return clf_bench_gbps(bytes, s) * 2.0 * (double)(n - 1) / (double)n;
}

/* Device d's element i before the reduction (clf_bench_reduce_value()). */
static double value(const bench *b, size_t d, size_t i)
{
    return clf_bench_reduce_value(b->type, b->op, d, i);
}

static void fill(bench *b, size_t count)
{
    for (size_t d = 0; d < MAX_DEV; d++)
        for (size_t i = 0; i < count; i++)
            clf_bench_store(b->type, b->init[d], i, value(b, d, i));
}

static clf_status upload(bench *b, size_t n, size_t bytes)
{
    for (size_t d = 0; d < n; d++) {
        clf_status st = clf_buffer_write(b->buf[d], 0, bytes, b->init[d]);
        if (st != CLF_SUCCESS)
            return st;
    }
    return CLF_SUCCESS;
}

/* The elements of the n buffers that differ from the reduction of the initial values (a
 * buffer that cannot be read counts wholly); 0 when all hold it. */
static size_t count_wrong(bench *b, size_t n, size_t count)
{
    size_t wrong = 0;
    for (size_t d = 0; d < n; d++) {
        if (clf_buffer_read(b->buf[d], 0, count * b->esz, b->host[d]) != CLF_SUCCESS) {
            wrong += count;
            continue;
        }
        for (size_t i = 0; i < count; i++) {
            double want = value(b, 0, i);
            for (size_t k = 1; k < n; k++)
                want = clf_bench_combine(b->op, want, value(b, k, i));
            wrong += clf_bench_load(b->type, b->host[d], i) != want;
        }
    }
    return wrong;
}

/* Wait for every event of ev[0..n) and release it; the first failure, else success. */
static clf_status wait_all(clf_event **ev, size_t n, clf_status st)
{
    for (size_t d = 0; d < n; d++) {
        clf_status s = clf_event_wait(ev[d]);
        st = st == CLF_SUCCESS ? s : st;
        clf_event_release(ev[d]);
    }
    return st;
}

/* The naive way: everything to the host, combine there, everything back. */
static clf_status naive(bench *b, size_t n, size_t count)
{
    size_t bytes = count * b->esz;
    clf_event *ev[MAX_DEV];
    size_t started = 0;
    clf_status st = CLF_SUCCESS;
    for (; started < n && st == CLF_SUCCESS; started++)
        if ((st = clf_buffer_read_async(b->buf[started], 0, bytes, b->host[started],
                                        &ev[started])) != CLF_SUCCESS)
            break;
    if ((st = wait_all(ev, started, st)) != CLF_SUCCESS)
        return st;
    memcpy(b->sum, b->host[0], bytes);
    for (size_t d = 1; d < n; d++)
        clf_bench_host_combine(b->type, b->op, b->sum, b->host[d], count);
    for (started = 0; started < n && st == CLF_SUCCESS; started++)
        if ((st = clf_buffer_write_async(b->buf[started], 0, bytes, b->sum, &ev[started])) !=
            CLF_SUCCESS)
            break;
    return wait_all(ev, started, st);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One timed clf_allreduce() with options o from the initial values; *wrong counted when
 * last. */
static clf_status timed_allreduce(bench *b, size_t n, size_t count, const clf_collective_options *o,
                                  double *s, int last, size_t *wrong)
{
    clf_status st = upload(b, n, count * b->esz);
    if (st != CLF_SUCCESS)
        return st;
    double t = clf_bench_now();
    st = clf_allreduce(b->buf, n, count, b->type, b->op, o);
    *s = clf_bench_now() - t;
    if (st == CLF_SUCCESS && last)
        *wrong += count_wrong(b, n, count);
    return st;
}

static clf_status measure(bench *b, size_t n, size_t count, run *r)
{
    size_t bytes = count * b->esz;
    double ring[MAX_REPS], nv[MAX_REPS], fr[MAX_REPS], fh[MAX_REPS], au[MAX_REPS];
    unsigned iters = b->opt.reps;
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT, oring, ohost;
    o.chunk_bytes = b->chunk;
    oring = ohost = o;
    oring.algorithm = CLF_ALLREDUCE_RING;
    ohost.algorithm = CLF_ALLREDUCE_HOST;
    clf_status st;
    r->ndev = n;
    r->bytes = bytes;
    r->count = count;
    /* Untimed warm-ups of every method: they build the kernels and make the staging
     * buffers. */
    for (size_t k = 0; k < b->warmup; k++)
        if ((st = upload(b, n, bytes)) != CLF_SUCCESS ||
            (st = clf_allreduce(b->buf, n, count, b->type, b->op, &oring)) != CLF_SUCCESS ||
            (st = upload(b, n, bytes)) != CLF_SUCCESS ||
            (st = clf_allreduce(b->buf, n, count, b->type, b->op, &ohost)) != CLF_SUCCESS ||
            (st = upload(b, n, bytes)) != CLF_SUCCESS || (st = naive(b, n, count)) != CLF_SUCCESS)
            return st;
    /* The methods alternate, so that a drift in the machine's load hits all alike; each
     * iteration starts from the initial values (written before the clock starts). */
    for (unsigned k = 0; k < iters; k++) {
        int last = k + 1 == iters;
        if ((st = timed_allreduce(b, n, count, &o, &ring[k], last, &r->wrong)) != CLF_SUCCESS)
            return st;
        au[k] = ring[k];
        if ((st = upload(b, n, bytes)) != CLF_SUCCESS)
            return st;
        double t = clf_bench_now();
        st = naive(b, n, count);
        nv[k] = clf_bench_now() - t;
        if (st != CLF_SUCCESS)
            return st;
        if (last)
            r->naive_wrong = count_wrong(b, n, count);
        if ((st = timed_allreduce(b, n, count, &oring, &fr[k], last, &r->forced_wrong)) !=
                CLF_SUCCESS ||
            (st = timed_allreduce(b, n, count, &ohost, &fh[k], last, &r->forced_wrong)) !=
                CLF_SUCCESS)
            return st;
    }
    /* The algorithm clf_allreduce() settled on, by the times measured meanwhile (the forced
     * runs' too). */
    if ((st = clf_allreduce_choice(&r->chosen, b->buf, n, count, b->type, b->op, &o, NULL,
                                   NULL)) != CLF_SUCCESS)
        return st;
    double sum = 0, nsum = 0;
    r->min_s = INFINITY;
    r->max_s = 0;
    for (unsigned k = 0; k < iters; k++) {
        sum += ring[k];
        nsum += nv[k];
        r->min_s = fmin(r->min_s, ring[k]);
        r->max_s = fmax(r->max_s, ring[k]);
    }
    r->time_s = sum / iters;
    r->naive_s = nsum / iters;
    r->auto_med_s = median(au, iters);
    r->ring_med_s = median(fr, iters);
    r->host_med_s = median(fh, iters);
    return CLF_SUCCESS;
}

/* memcpy() of the largest size between host arrays: the bound for copies on CPU devices. */
static double memcpy_rate(bench *b, size_t bytes)
{
    double best = 0;
    memcpy(b->host[1], b->host[0], bytes);
    for (int k = 0; k < 3; k++) {
        double t = clf_bench_now();
        memcpy(b->host[1], b->host[0], bytes);
        t = clf_bench_now() - t;
        best = clf_bench_gbps(bytes, t) > best ? clf_bench_gbps(bytes, t) : best;
    }
    return best;
}

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench allreduce [-b BYTES] [-e BYTES] [-f FACTOR] [-w N] [-n N]\n"
          "                               [-d TYPE] [-o OP] [-g N] [--json] [--quick]\n"
          "                               [--verbose] [--devices SELECTION] [--trace PATH]\n"
          "                               [--plot FILE.svg] [--context-per-device]\n"
          "                               [--chunk BYTES]\n"
          "All-reduce in nccl-tests' conventions (all_reduce_perf): clf_allreduce (its\n"
          "algorithm chosen by measured times), the ring and the host combine forced,\n"
          "and the naive gather-combine-write on 2 and 3 devices. Per size:\n"
          "time (mean of the iterations, us), algbw = size / time and busbw = algbw x\n"
          "2(n-1)/n, in GB/s (1e9 bytes/s), and #wrong: the elements of all devices that\n"
          "differ from a host reference after the last iteration. The out-of-place\n"
          "columns say n/a: clf_allreduce() reduces in place only (every buffer is input\n"
          "and output); the in-place columns are clf_allreduce. The buffers are rewritten\n"
          "before every iteration, untimed. Last columns: the algorithm clf_allreduce\n"
          "settled on, and the medians (us) of it and of the ring and host combine forced.\n"
          "Footer: the out-of-bounds total and the mean in-place busbw.\n"
          "  -b, --minbytes B      smallest size in bytes, K, M or G suffix (4K)\n"
          "  -e, --maxbytes B      largest size (256M; --quick: 1M); also --max-size B\n"
          "  -f, --stepfactor F    multiply the size by F, 2 to 1024, each step (4)\n"
          "  -w, --warmup_iters N  untimed iterations of each method per size, 0 to 64 (1)\n"
          "  -n, --iters N         timed iterations per size, 1 to 64 (5; --quick: 2);\n"
          "                        also --reps N\n"
          "  -d, --datatype T      int32, uint32, int64, float or double (float); also\n"
          "                        --type T\n"
          "  -o, --op OP           sum, prod, min or max (sum)\n"
          "  -g, --ngpus N         only N devices, 2 or 3 (default: 2, then 3 if there are)\n"
          "  --json                one JSON document on standard output\n"
          "  --quick               sizes up to 1 MiB, two iterations (a smoke test)\n"
          "  --verbose             developer lines (targets met or missed), where any\n"
          "  --devices S           devices (default: $CLFLEET_DEVICES, else the library's\n"
          "                        default; CPU devices are split when there is only one)\n"
          "  --trace PATH          a Perfetto timeline per fleet, PATH-N.json\n"
          "  --plot FILE.svg       a chart: busbw and algbw against size, per device count\n"
          "  --context-per-device  one context per device: every copy is staged through\n"
          "                        the host (default: one per platform)\n"
          "  --chunk B             pipelining chunk of the ring (default: automatic)\n"
          "  -h, --help            this text; -V, --version: the version\n",
          to);
}

enum { OPT_PER_DEVICE = CLF_BENCH_OWN, OPT_MAX_SIZE, OPT_CHUNK, OPT_TYPE, OPT_REPS };
static const struct option OWN[] = {{"context-per-device", no_argument, NULL, OPT_PER_DEVICE},
                                    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
                                    {"chunk", required_argument, NULL, OPT_CHUNK},
                                    {"minbytes", required_argument, NULL, 'b'},
                                    {"maxbytes", required_argument, NULL, 'e'},
                                    {"stepfactor", required_argument, NULL, 'f'},
                                    {"warmup_iters", required_argument, NULL, 'w'},
                                    {"iters", required_argument, NULL, 'n'},
                                    {"datatype", required_argument, NULL, 'd'},
                                    {"type", required_argument, NULL, OPT_TYPE},
                                    {"op", required_argument, NULL, 'o'},
                                    {"ngpus", required_argument, NULL, 'g'},
                                    {NULL, 0, NULL, 0}};

/* The options above; 1 when the value is good. */
static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    size_t v;
    switch (val) {
    case OPT_PER_DEVICE:
        return b->per_device = 1;
    case OPT_MAX_SIZE:
    case 'e':
        return clf_bench_number(arg, 0, 4, (size_t)1 << 32, &b->max_bytes);
    case 'b':
        return clf_bench_number(arg, 0, 4, (size_t)1 << 32, &b->min_bytes);
    case 'f':
        return clf_bench_number(arg, 10, 2, 1024, &b->factor);
    case 'w':
        return clf_bench_number(arg, 10, 0, MAX_REPS, &b->warmup);
    case 'n': /* as --reps, and capped under --quick alike */
        if (!clf_bench_number(arg, 10, 1, MAX_REPS, &v))
            return 0;
        b->opt.reps = (unsigned)v;
        return 1;
    case 'g':
        return clf_bench_number(arg, 10, 2, MAX_DEV, &b->only_n);
    case 'd':
    case OPT_TYPE:
        return clf_bench_type_parse(arg, &b->type);
    case 'o':
        return clf_bench_op_parse(arg, &b->op);
    default: /* OPT_CHUNK */
        return clf_bench_number(arg, 0, 4, SIZE_MAX, &b->chunk);
    }
}

static void print_header(const bench *b)
{
    printf("# clfleet-bench allreduce: %s %s, %s\n", clf_bench_type_name(b->type),
           clf_bench_op_name(b->op),
           b->per_device ? "one context per device (staged copies)" : "one context per platform");
    for (size_t d = 0; d < b->nfleet && d < MAX_DEV; d++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl, d) == CLF_SUCCESS)
            printf("#  device %zu: %s, %u compute unit(s)\n", d, in.name, in.compute_units);
    }
    printf("#  memcpy on this host: %.2f GB/s\n", b->memcpy_gbps);
    printf("# time: mean of %u iteration(s) after %zu warm-up(s); algbw = size / time; busbw = "
           "algbw x 2(n-1)/n; GB/s = 1e9 bytes/s\n",
           b->opt.reps, b->warmup);
    printf("# out-of-place: n/a, clf_allreduce() reduces in place only\n");
}

static void print_columns(size_t n)
{
    printf("#\n# %zu devices\n", n);
    printf("# %47s%-33s%-33s%-27s%s\n", "", "out-of-place", "in-place",
           "naive gather-combine-write", "algorithm: chosen, medians");
    printf("# %10s %12s %8s %6s %5s  %8s %7s %7s %6s  %8s %7s %7s %6s  %8s %7s %6s  %5s %8s %8s "
           "%8s\n",
           "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
           "algbw", "busbw", "#wrong", "time", "busbw", "#wrong", "alg", "chosen", "ring",
           "host");
    printf("# %10s %12s %8s %6s %5s  %8s %7s %7s %6s  %8s %7s %7s %6s  %8s %7s %6s  %5s %8s %8s "
           "%8s\n",
           "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
           "(GB/s)", "", "(us)", "(GB/s)", "", "", "(us)", "(us)", "(us)");
}

static void print_row(const bench *b, const run *r)
{
    printf("  %10zu %12zu %8s %6s %5d  %8s %7s %7s %6s  %8.1f %7.3f %7.3f %6zu  %8.1f %7.3f "
           "%6zu  %5s %8.1f %8.1f %8.1f\n",
           r->bytes, r->count, clf_bench_type_name(b->type), clf_bench_op_name(b->op), -1, "n/a",
           "n/a", "n/a", "n/a", r->time_s * 1e6, clf_bench_gbps(r->bytes, r->time_s),
           busbw(r->bytes, r->time_s, r->ndev), r->wrong, r->naive_s * 1e6,
           busbw(r->bytes, r->naive_s, r->ndev), r->naive_wrong,
           clf_allreduce_algorithm_name(r->chosen), r->auto_med_s * 1e6, r->ring_med_s * 1e6,
           r->host_med_s * 1e6);
}

/* nccl-tests' footer: every wrong element, and the mean bus bandwidth of the in-place runs. */
static void footer(const run *r, size_t nr, size_t *wrong, double *avg)
{
    double sum = 0;
    size_t n = 0;
    *wrong = 0;
    for (size_t i = 0; i < nr; i++) {
        *wrong += r[i].wrong + r[i].naive_wrong + r[i].forced_wrong;
        double bw = busbw(r[i].bytes, r[i].time_s, r[i].ndev);
        if (isfinite(bw))
            sum += bw, n++;
    }
    *avg = n ? sum / (double)n : NAN;
}

static void print_table(const bench *b, const run *r, size_t nr)
{
    print_header(b);
    for (size_t i = 0; i < nr; i++) {
        if (i == 0 || r[i].ndev != r[i - 1].ndev)
            print_columns(r[i].ndev);
        print_row(b, &r[i]);
    }
    size_t wrong;
    double avg;
    footer(r, nr, &wrong, &avg);
    printf("# Out of bounds values : %zu %s\n", wrong, wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %.3f GB/s (in-place)\n", avg);
    printf("#\n");
}

/* One method's figures: {"time_s": ..., "algbw_gbps": ..., "busbw_gbps": ..., "wrong": ...}. */
static void json_method(const run *r, double s, size_t wrong)
{
    printf("{\"time_s\": ");
    clf_tool_json_num(s);
    printf(", \"algbw_gbps\": ");
    clf_tool_json_num(clf_bench_gbps(r->bytes, s));
    printf(", \"busbw_gbps\": ");
    clf_tool_json_num(busbw(r->bytes, s, r->ndev));
    printf(", \"wrong\": %zu}", wrong);
}

static void print_json(const bench *b, const run *r, size_t nr)
{
    printf("{\n  \"benchmark\": \"allreduce\",\n  \"type\": \"%s\",\n  \"op\": \"%s\",\n",
           clf_bench_type_name(b->type), clf_bench_op_name(b->op));
    printf("  \"context\": \"%s\",\n  \"warmup_iters\": %zu,\n  \"iters\": %u,\n",
           b->per_device ? "per-device" : "per-platform", b->warmup, b->opt.reps);
    printf("  \"out_of_place\": null,\n  \"memcpy_gbps\": ");
    clf_tool_json_num(b->memcpy_gbps);
    printf(",\n  \"results\": [");
    for (size_t i = 0; i < nr; i++) {
        printf("%s\n    {\"devices\": %zu, \"bytes\": %zu, \"count\": %zu, \"in_place\": ",
               i ? "," : "", r[i].ndev, r[i].bytes, r[i].count);
        json_method(&r[i], r[i].time_s, r[i].wrong);
        printf(", \"in_place_min_s\": ");
        clf_tool_json_num(r[i].min_s);
        printf(", \"in_place_max_s\": ");
        clf_tool_json_num(r[i].max_s);
        printf(",\n     \"naive\": ");
        json_method(&r[i], r[i].naive_s, r[i].naive_wrong);
        printf(", \"speedup\": ");
        clf_tool_json_num(r[i].naive_s / r[i].time_s);
        printf(",\n     \"algorithm\": \"%s\", \"chosen_median_s\": ",
               clf_allreduce_algorithm_name(r[i].chosen));
        clf_tool_json_num(r[i].auto_med_s);
        printf(", \"ring_median_s\": ");
        clf_tool_json_num(r[i].ring_med_s);
        printf(", \"host_median_s\": ");
        clf_tool_json_num(r[i].host_med_s);
        printf(", \"forced_wrong\": %zu", r[i].forced_wrong);
        printf("}");
    }
    size_t wrong;
    double avg;
    footer(r, nr, &wrong, &avg);
    printf("\n  ],\n  \"out_of_bounds\": %zu,\n  \"avg_busbw_gbps\": ", wrong);
    clf_tool_json_num(avg);
    printf("\n}\n");
}

/* --plot: busbw and algbw against size, a line per method and device count. */
static int plot(const bench *b, const run *r, size_t nr)
{
    if (!b->opt.plot)
        return 0;
    char title[128];
    snprintf(title, sizeof title, "clfleet-bench allreduce: %s %s",
             clf_bench_type_name(b->type), clf_bench_op_name(b->op));
    clf_plot *p = clf_plot_create(title);
    double x[MAX_RUNS], y[MAX_RUNS];
    for (int panel = 0; panel < 2; panel++) {
        clf_plot_panel(p, CLF_PLOT_LOG_X | CLF_PLOT_X_BYTES | CLF_PLOT_Y_ZERO,
                       panel ? "algorithm bandwidth (size / time)"
                             : "bus bandwidth (algbw x 2(n-1)/n)",
                       "size (bytes)", panel ? "algbw (GB/s)" : "busbw (GB/s)");
        for (size_t n = 2; n <= MAX_DEV; n++)
            for (int naive_way = 0; naive_way < 2; naive_way++) {
                size_t k = 0;
                for (size_t i = 0; i < nr; i++)
                    if (r[i].ndev == n) {
                        double s = naive_way ? r[i].naive_s : r[i].time_s;
                        x[k] = (double)r[i].bytes;
                        y[k++] = panel ? clf_bench_gbps(r[i].bytes, s) : busbw(r[i].bytes, s, n);
                    }
                char name[64];
                snprintf(name, sizeof name, "%s, %zu devices",
                         naive_way ? "naive" : "clf_allreduce", n);
                if (k)
                    clf_plot_line(p, name, x, y, k);
            }
    }
    int rc = clf_bench_plot_write(&b->opt, p, b->opt.plot);
    clf_plot_destroy(p);
    return rc;
}

static void teardown(bench *b)
{
    for (size_t d = 0; d < MAX_DEV; d++) {
        clf_buffer_destroy(b->buf[d]);
        free(b->host[d]);
        free(b->init[d]);
    }
    free(b->sum);
    clf_fleet_destroy(b->fl);
}

static clf_status setup(bench *b)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.context_per_device = b->per_device;
    clf_status st = clf_bench_fleet(&b->fl, &b->opt, &o, b->only_n ? b->only_n : 2);
    if (st != CLF_SUCCESS)
        return st;
    b->nfleet = clf_fleet_device_count(b->fl);
    for (size_t d = 0; d < MAX_DEV && d < b->nfleet; d++)
        if ((st = clf_buffer_create(&b->buf[d], b->fl, d, b->max_bytes, 0)) != CLF_SUCCESS)
            return st;
    for (size_t d = 0; d < MAX_DEV; d++) {
        b->host[d] = malloc(b->max_bytes);
        b->init[d] = malloc(b->max_bytes);
        if (!b->host[d] || !b->init[d])
            return CLF_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (!(b->sum = malloc(b->max_bytes)))
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    fill(b, b->max_bytes / b->esz);
    return CLF_SUCCESS;
}

int clf_bench_allreduce(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){
        .name = "allreduce", .usage = usage, .reps = 5, .quick_reps = 2, .can_plot = 1};
    b.type = CLF_TYPE_FLOAT;
    b.op = CLF_REDUCE_SUM;
    b.min_bytes = 4096;
    b.max_bytes = (size_t)256 << 20;
    b.factor = 4;
    b.warmup = 1;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick && b.max_bytes > ((size_t)1 << 20))
        b.max_bytes = (size_t)1 << 20;
    b.esz = clf_type_size(b.type);
    if (b.min_bytes > b.max_bytes || b.max_bytes < b.esz) {
        fprintf(stderr, "clfleet-bench allreduce: the smallest size (-b %zu) is above the "
                        "largest (-e %zu), or the largest holds no %s\n"
                        "Try 'clfleet-bench allreduce --help'.\n",
                b.min_bytes, b.max_bytes, clf_bench_type_name(b.type));
        return CLF_BENCH_USAGE;
    }
    clf_status st = setup(&b);
    if (st != CLF_SUCCESS) {
        /* Without a fleet, clf_bench_fleet() said what went wrong. */
        rc = b.fl ? clf_bench_setup_failed("allreduce", "setup", st)
             : st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                          : EXIT_FAILURE;
        teardown(&b);
        return rc;
    }
    b.memcpy_gbps = memcpy_rate(&b, b.max_bytes);
    static run res[MAX_RUNS];
    size_t nr = 0;
    rc = 0;
    size_t lo_n = b.only_n ? b.only_n : 2, hi_n = b.only_n ? b.only_n : MAX_DEV;
    for (size_t n = lo_n; n <= hi_n && n <= b.nfleet && !rc; n++)
        for (size_t bytes = b.min_bytes; bytes <= b.max_bytes && nr < MAX_RUNS && !rc;) {
            /* Whole elements only, as nccl-tests counts them; a size below one is skipped. */
            size_t count = bytes / b.esz;
            if (count && (nr == 0 || res[nr - 1].ndev != n || res[nr - 1].count != count)) {
                if ((st = measure(&b, n, count, &res[nr])) != CLF_SUCCESS)
                    rc = clf_bench_fail("allreduce", "measure", st);
                else
                    nr++;
            }
            if (bytes > SIZE_MAX / b.factor)
                break;
            bytes *= b.factor;
        }
    if (!rc) {
        if (b.opt.json)
            print_json(&b, res, nr);
        else
            print_table(&b, res, nr);
        for (size_t i = 0; i < nr; i++)
            if (res[i].wrong || res[i].naive_wrong) {
                fprintf(stderr,
                        "clfleet-bench allreduce: %zu bytes on %zu devices: %zu wrong "
                        "element(s) from clf_allreduce, %zu from the naive way\n",
                        res[i].bytes, res[i].ndev, res[i].wrong, res[i].naive_wrong);
                rc = EXIT_FAILURE;
            }
        if (plot(&b, res, nr))
            rc = EXIT_FAILURE;
    }
    teardown(&b);
    return rc;
}

#ifdef CLF_BENCH_ALLREDUCE_MAIN
int main(int argc, char **argv)
{
    return clf_bench_allreduce(argc, argv);
}
#endif

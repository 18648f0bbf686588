/*
 * clfleet-bench p2p: device-to-device copies, every ordered pair of devices, 4 KiB to
 * 256 MiB in steps of 4x. For each size it times
 *
 *   chosen  clf_copy() on the path the fleet chose for the pair,
 *   staged  clf_copy() with every direct path disabled (CLFLEET_TRANSFER=staged),
 *   pinned  the same through the pinned-slot pipeline only (two copies, overlapped),
 *   naive   a blocking read of the whole region into host memory, then a blocking write,
 *   memcpy  plain memcpy() between two host buffers, in the same run,
 *
 * reporting the median of a few repetitions as GB/s (10^9 bytes/s) and latency, and checks
 * each method's result once. Each repetition runs every method back to back; the ratios
 * (chosen against memcpy and against naive) are medians of each repetition's own ratio. The
 * devices are those of --devices, else $CLFLEET_DEVICES, else the library's default (a single
 * CPU device is split in two), one context each, so that the bytes really cross between
 * contexts. Built with -DCLF_BENCH_P2P_MAIN it
 * is a program of its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "json.h"
#include "plot.h"
#include "clfleet.h"

#define MAX_REPS CLF_BENCH_MAX_REPS
#define TARGET_BYTES ((size_t)256 << 20)

enum { CHOSEN, STAGED, PINNED, NAIVE, NMETHODS };
static const char *const METHOD[NMETHODS] = {"chosen", "staged", "pinned", "naive"};

typedef struct result {
    size_t src, dst, bytes;
    clf_path path;
    int direct;
    double s[NMETHODS]; /* seconds per copy (median) */
    double chosen_min, chosen_max; /* the chosen path's fastest and slowest repetition */
    int ok[NMETHODS];   /* the copy's bytes checked */
    double memcpy_s;
    /* Median over repetitions of each repetition's ratio: the methods of one repetition run
     * back to back, so a paired ratio shrugs off load that comes and goes between them. */
    double vs_memcpy, vs_naive;
} result;

typedef struct bench {
    clf_bench_common opt;
    int shared;
    clf_fleet *fl[3]; /* chosen, staged, pinned */
    size_t ndev, max_bytes;
    clf_buffer **buf[3]; /* [fleet][device], max_bytes each */
    unsigned char *pattern, *host, *check, *h1, *h2;
} bench;

/* Copies per timed repetition: enough bytes that the clock resolves them. */
static unsigned inner_count(size_t bytes)
{
    size_t n = ((size_t)32 << 20) / bytes;
    return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

/* One copy by a method; the buffers hold max_bytes each. */
static clf_status one_copy(bench *b, int m, size_t s, size_t d, size_t bytes)
{
    if (m == NAIVE) {
        clf_status st = clf_buffer_read(b->buf[0][s], 0, bytes, b->host);
        return st != CLF_SUCCESS ? st : clf_buffer_write(b->buf[0][d], 0, bytes, b->host);
    }
    int f = m == CHOSEN ? 0 : m == STAGED ? 1 : 2;
    return clf_copy(b->buf[f][d], 0, b->buf[f][s], 0, bytes);
}

static double time_memcpy(bench *b, size_t bytes, unsigned inner)
{
    double t0 = clf_bench_now();
    for (unsigned i = 0; i < inner; i++) {
        memcpy(b->h2, b->h1, bytes);
        /* Keep the compiler from merging or dropping the copies. */
        __asm__ __volatile__("" : : "r"(b->h2) : "memory");
    }
    return (clf_bench_now() - t0) / inner;
}

/*
 * Each repetition times every method once, then memcpy, so that whatever else the machine
 * does at the time weighs on all of them alike; the first repetition is a warm-up. Then
 * each method's result is checked once, from a destination set to other bytes.
 */
static clf_status measure(bench *b, result *r)
{
    double t[NMETHODS + 1][MAX_REPS];
    unsigned inner = inner_count(r->bytes);
    clf_status st = CLF_SUCCESS;
    for (unsigned k = 0; k < 1 + b->opt.reps; k++) {
        for (int m = 0; m < NMETHODS; m++) {
            double t0 = clf_bench_now();
            for (unsigned i = 0; st == CLF_SUCCESS && i < inner; i++)
                st = one_copy(b, m, r->src, r->dst, r->bytes);
            if (st != CLF_SUCCESS)
                return st;
            if (k > 0)
                t[m][k - 1] = (clf_bench_now() - t0) / inner;
        }
        double tm = time_memcpy(b, r->bytes, inner);
        if (k > 0)
            t[NMETHODS][k - 1] = tm;
    }
    double rm[MAX_REPS], rn[MAX_REPS];
    for (unsigned k = 0; k < b->opt.reps; k++) {
        rm[k] = t[NMETHODS][k] / t[CHOSEN][k];
        rn[k] = t[NAIVE][k] / t[CHOSEN][k];
    }
    r->vs_memcpy = clf_bench_median(rm, b->opt.reps);
    r->vs_naive = clf_bench_median(rn, b->opt.reps);
    for (int m = 0; m < NMETHODS; m++) {
        r->s[m] = clf_bench_median(t[m], b->opt.reps); /* sorts t[m] */
        if (m == CHOSEN) {
            r->chosen_min = t[m][0];
            r->chosen_max = t[m][b->opt.reps - 1];
        }
        int f = m == NAIVE || m == CHOSEN ? 0 : m == STAGED ? 1 : 2;
        st = clf_buffer_write(b->buf[f][r->dst], 0, r->bytes, b->check);
        if (st == CLF_SUCCESS)
            st = one_copy(b, m, r->src, r->dst, r->bytes);
        if (st == CLF_SUCCESS)
            st = clf_buffer_read(b->buf[f][r->dst], 0, r->bytes, b->check);
        if (st != CLF_SUCCESS)
            return st;
        r->ok[m] = memcmp(b->check, b->pattern, r->bytes) == 0;
        memset(b->check, 0xa5, r->bytes);
    }
    r->memcpy_s = clf_bench_median(t[NMETHODS], b->opt.reps);
    return CLF_SUCCESS;
}

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench p2p [--json] [--quick] [--verbose] [--reps N]\n"
          "                         [--devices SELECTION] [--trace PATH]\n"
          "                         [--plot FILE.svg] [--shared-context] [--max-size BYTES]\n"
          "Copies between every ordered pair of devices, 4 KiB to 256 MiB: GB/s and latency\n"
          "of the chosen path, forced staging, the pinned pipeline and the naive baseline\n"
          "(blocking read, then write), and memcpy() in the same run.\n"
          "  --json            one JSON document on standard output\n"
          "  --quick           three sizes, two repetitions (a smoke test)\n"
          "  --reps N          timed repetitions, medians reported (5)\n"
          "  --verbose         also say whether the 256 MiB targets are met\n"
          "  --devices S       devices (default: $CLFLEET_DEVICES, else the library's\n"
          "                    default; CPU devices are split when there is only one)\n"
          "  --trace PATH      a Perfetto timeline per fleet, PATH-N.json\n"
          "  --plot FILE.svg   a chart: GB/s against size, a panel per pair\n"
          "  --shared-context  one context per platform (default: one per device)\n"
          "  --max-size B      largest size in bytes, K, M or G suffix (default 256M)\n"
          "  -h, --help        this text; -V, --version: the version\n",
          to);
}

enum { OPT_SHARED = CLF_BENCH_OWN, OPT_MAX_SIZE };
static const struct option OWN[] = {{"shared-context", no_argument, NULL, OPT_SHARED},
                                    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
                                    {NULL, 0, NULL, 0}};

/* --shared-context and --max-size B. */
static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    if (val == OPT_SHARED)
        return b->shared = 1;
    return clf_bench_number(arg, 0, 4096, SIZE_MAX, &b->max_bytes);
}

static void print_table(const bench *b, const result *res, size_t nres)
{
    printf("clfleet-bench p2p: %zu device(s), %s, median of %u [slowest..fastest]; GB/s = 1e9 "
           "bytes/s\n", b->ndev, b->shared ? "one context per platform" : "one context per device",
           b->opt.reps);
    for (size_t i = 0; i < b->ndev; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl[0], i) == CLF_SUCCESS)
            printf("  device %zu: %s (%s)\n", i, in.name, in.platform);
    }
    printf("  CUDA: %s\n\n", clf_transfer_cuda_status(b->fl[0]));
    /* One figure per column, its unit in the second header line. */
    printf("%-7s %-12s %9s  %8s %9s %17s %8s %8s %8s %8s  %7s %7s\n", "pair", "path", "size",
           "chosen", "latency", "chosen range", "staged", "pinned", "naive", "memcpy", "chosen/",
           "chosen/");
    printf("%-7s %-12s %9s  %8s %9s %17s %8s %8s %8s %8s  %7s %7s\n", "", "", "", "(GB/s)",
           "(us)", "(GB/s)", "(GB/s)", "(GB/s)", "(GB/s)", "(GB/s)", "memcpy", "naive");
    for (size_t i = 0; i < nres; i++) {
        const result *r = &res[i];
        char pair[48], size[32], spread[48];
        snprintf(pair, sizeof pair, "%zu->%zu", r->src, r->dst);
        clf_bench_size_label(size, sizeof size, r->bytes);
        snprintf(spread, sizeof spread, "[%.2f..%.2f]", clf_bench_gbps(r->bytes, r->chosen_max),
                 clf_bench_gbps(r->bytes, r->chosen_min));
        int bad = !r->ok[CHOSEN] || !r->ok[STAGED] || !r->ok[PINNED] || !r->ok[NAIVE];
        printf("%-7s %-12s %9s  %8.2f %9.1f %17s %8.2f %8.2f %8.2f %8.2f  %7.2f %7.2f%s\n", pair,
               clf_path_name(r->path), size, clf_bench_gbps(r->bytes, r->s[CHOSEN]),
               r->s[CHOSEN] * 1e6, spread, clf_bench_gbps(r->bytes, r->s[STAGED]),
               clf_bench_gbps(r->bytes, r->s[PINNED]), clf_bench_gbps(r->bytes, r->s[NAIVE]),
               clf_bench_gbps(r->bytes, r->memcpy_s), r->vs_memcpy, r->vs_naive,
               bad ? "  WRONG RESULT" : "");
    }
    printf("(chosen range: the slowest and fastest repetition; chosen/memcpy, chosen/naive: "
           "medians of the\n repetitions' speed ratios)\n");
}

/* --plot: GB/s against size, a panel per ordered pair with a line per method and memcpy. */
static int plot(const bench *b, const result *res, size_t nres)
{
    if (!b->opt.plot)
        return 0;
    clf_plot *p = clf_plot_create("clfleet-bench p2p: device-to-device copies");
    double *x = malloc((nres ? nres : 1) * sizeof *x), *y = malloc((nres ? nres : 1) * sizeof *y);
    for (size_t i = 0; x && y && i < nres; i++) {
        if (i && res[i].src == res[i - 1].src && res[i].dst == res[i - 1].dst)
            continue; /* a pair's sizes are consecutive: one panel at its first */
        char title[96];
        snprintf(title, sizeof title, "device %zu -> device %zu (chosen path: %s)", res[i].src,
                 res[i].dst, clf_path_name(res[i].path));
        /* Log y: memcpy within the cache runs 100 times faster than a small copy. */
        clf_plot_panel(p, CLF_PLOT_LOG_X | CLF_PLOT_X_BYTES | CLF_PLOT_LOG_Y, title,
                       "size (bytes)", "bandwidth (GB/s)");
        for (int m = 0; m <= NMETHODS; m++) {
            size_t k = 0;
            for (size_t j = i; j < nres && res[j].src == res[i].src && res[j].dst == res[i].dst;
                 j++) {
                x[k] = (double)res[j].bytes;
                y[k++] = clf_bench_gbps(res[j].bytes, m < NMETHODS ? res[j].s[m] : res[j].memcpy_s);
            }
            clf_plot_line(p, m < NMETHODS ? METHOD[m] : "memcpy (host)", x, y, k);
        }
    }
    int rc;
    if (!x || !y) {
        fprintf(stderr, "clfleet-bench p2p: --plot: out of memory\n");
        rc = 1;
    } else {
        rc = clf_bench_plot_write(&b->opt, p, b->opt.plot);
    }
    free(x);
    free(y);
    clf_plot_destroy(p);
    return rc;
}

static void print_json(const bench *b, const result *res, size_t nres)
{
    printf("{\n  \"benchmark\": \"p2p\",\n  \"context_per_device\": %s,\n  \"reps\": %u,\n"
           "  \"gb\": 1e9,\n  \"devices\": [",
           b->shared ? "false" : "true", b->opt.reps);
    for (size_t i = 0; i < b->ndev; i++) {
        clf_device_info in;
        clf_device_get_info(&in, b->fl[0], i);
        printf("%s", i ? ", " : "");
        clf_tool_json_string(in.name);
    }
    printf("],\n  \"cuda\": ");
    clf_tool_json_string(clf_transfer_cuda_status(b->fl[0]));
    printf(",\n  \"results\": [");
    for (size_t i = 0; i < nres; i++) {
        const result *r = &res[i];
        printf("%s\n    {\"src\": %zu, \"dst\": %zu, \"bytes\": %zu, \"path\": \"%s\", "
               "\"direct\": %s",
               i ? "," : "", r->src, r->dst, r->bytes, clf_path_name(r->path),
               r->direct ? "true" : "false");
        for (int m = 0; m < NMETHODS; m++) {
            printf(",\n     \"%s\": {\"gbps\": ", METHOD[m]);
            clf_tool_json_num(clf_bench_gbps(r->bytes, r->s[m]));
            printf(", \"latency_us\": ");
            clf_tool_json_num(r->s[m] * 1e6);
            printf(", \"correct\": %s}", r->ok[m] ? "true" : "false");
        }
        printf(",\n     \"chosen_gbps_min\": ");
        clf_tool_json_num(clf_bench_gbps(r->bytes, r->chosen_max));
        printf(", \"chosen_gbps_max\": ");
        clf_tool_json_num(clf_bench_gbps(r->bytes, r->chosen_min));
        printf(", \"memcpy_gbps\": ");
        clf_tool_json_num(clf_bench_gbps(r->bytes, r->memcpy_s));
        printf(", \"chosen_vs_memcpy\": ");
        clf_tool_json_num(r->vs_memcpy);
        printf(", \"chosen_vs_naive\": ");
        clf_tool_json_num(r->vs_naive);
        printf("}");
    }
    printf("\n  ],\n  \"target\": ");
    int any = 0, met = 1;
    for (size_t i = 0; i < nres; i++)
        if (res[i].bytes == TARGET_BYTES) {
            any = 1;
            met &= res[i].vs_memcpy >= 0.9 && res[i].vs_naive >= 1.6;
        }
    if (any)
        printf("{\"bytes\": %zu, \"vs_memcpy\": 0.9, \"vs_naive\": 1.6, \"met\": %s}", TARGET_BYTES,
               met ? "true" : "false");
    else
        printf("null");
    printf("\n}\n");
}

static void print_target(const result *res, size_t nres)
{
    for (size_t i = 0; i < nres; i++) {
        const result *r = &res[i];
        if (r->bytes != TARGET_BYTES)
            continue;
        double vm = r->vs_memcpy, vn = r->vs_naive;
        printf("target %zu->%zu at 256 MiB: %.2fx memcpy (>= 0.9), %.2fx naive (>= 1.6): %s\n",
               r->src, r->dst, vm, vn, vm >= 0.9 && vn >= 1.6 ? "met" : "MISSED");
    }
}

static clf_status setup(bench *b)
{
    static const char *const transfer[3] = {NULL, "staged", "staged"};
    /* The first fleet settles the devices (split when there is one CPU device); the other
     * two take the same options. */
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.context_per_device = !b->shared;
    for (int f = 0; f < 3; f++) {
        o.transfer = transfer[f] ? transfer[f] : "auto";
        /* The pinned pipeline is the staging path without its mapped shortcut. */
        if (f == 2)
            setenv("CLFLEET_TRANSFER_STAGING", "pipeline", 1);
        clf_status st = f == 0 ? clf_bench_fleet(&b->fl[f], &b->opt, &o, 2)
                               : clf_fleet_create(&b->fl[f], &o);
        if (f == 2)
            unsetenv("CLFLEET_TRANSFER_STAGING");
        if (st != CLF_SUCCESS)
            return st;
    }
    b->ndev = clf_fleet_device_count(b->fl[0]);
    for (size_t i = 0; i < b->ndev; i++) {
        clf_device_info in;
        clf_device_get_info(&in, b->fl[0], i);
        if (b->max_bytes > in.max_alloc)
            b->max_bytes = (size_t)in.max_alloc;
    }
    size_t n = b->max_bytes;
    b->pattern = malloc(n);
    b->host = malloc(n);
    b->check = malloc(n);
    b->h1 = malloc(n);
    b->h2 = malloc(n);
    if (!b->pattern || !b->host || !b->check || !b->h1 || !b->h2)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        b->pattern[i] = (unsigned char)x;
    }
    /* Every page touched once before any timing. */
    memset(b->host, 0, n);
    memset(b->check, 0xa5, n);
    memcpy(b->h1, b->pattern, n);
    memset(b->h2, 0, n);
    for (int f = 0; f < 3; f++) {
        b->buf[f] = calloc(b->ndev, sizeof *b->buf[f]);
        if (!b->buf[f])
            return CLF_ERROR_OUT_OF_HOST_MEMORY;
        for (size_t i = 0; i < b->ndev; i++) {
            clf_status st = clf_buffer_create(&b->buf[f][i], b->fl[f], i, n, 0);
            if (st == CLF_SUCCESS)
                st = clf_buffer_write(b->buf[f][i], 0, n, b->pattern);
            if (st != CLF_SUCCESS)
                return st;
        }
    }
    return CLF_SUCCESS;
}

static void teardown(bench *b)
{
    for (int f = 0; f < 3; f++) {
        for (size_t i = 0; b->buf[f] && i < b->ndev; i++)
            clf_buffer_destroy(b->buf[f][i]);
        free(b->buf[f]);
        clf_fleet_destroy(b->fl[f]);
    }
    free(b->pattern);
    free(b->host);
    free(b->check);
    free(b->h1);
    free(b->h2);
}

int clf_bench_p2p(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){
        .name = "p2p", .usage = usage, .reps = 5, .quick_reps = 2, .can_plot = 1};
    b.max_bytes = TARGET_BYTES;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick && b.max_bytes > ((size_t)16 << 20))
        b.max_bytes = (size_t)16 << 20;
    clf_status st = setup(&b);
    if (st != CLF_SUCCESS) {
        /* clf_bench_fleet() said what went wrong with the first fleet. */
        rc = b.fl[0] ? clf_bench_setup_failed("p2p", "setup", st)
             : st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                          : EXIT_FAILURE;
        teardown(&b);
        return rc;
    }
    size_t sizes[16], nsizes = 0;
    for (size_t s = 4096; s <= b.max_bytes && nsizes < 16; s *= 4)
        if (!b.opt.quick || s == 4096 || s == ((size_t)256 << 10) || s == ((size_t)16 << 20))
            sizes[nsizes++] = s;
    size_t npairs = b.ndev * (b.ndev - 1);
    result *res = calloc(npairs * nsizes, sizeof *res);
    size_t nres = 0;
    if (!res) {
        teardown(&b);
        return clf_bench_fail("p2p", "results", CLF_ERROR_OUT_OF_HOST_MEMORY);
    }
    rc = 0;
    for (size_t s = 0; s < b.ndev && !rc; s++)
        for (size_t d = 0; d < b.ndev && !rc; d++) {
            if (s == d)
                continue;
            for (size_t k = 0; k < nsizes && !rc; k++) {
                result *r = &res[nres];
                r->src = s, r->dst = d, r->bytes = sizes[k];
                clf_transfer_path(&r->path, &r->direct, b.fl[0], s, d);
                st = measure(&b, r);
                if (st != CLF_SUCCESS)
                    rc = clf_bench_fail("p2p", "copy", st);
                else
                    nres++;
            }
        }
    if (!rc) {
        if (b.opt.json) {
            print_json(&b, res, nres);
        } else {
            print_table(&b, res, nres);
            if (b.opt.verbose)
                print_target(res, nres);
        }
        for (size_t i = 0; i < nres; i++)
            for (int m = 0; m < NMETHODS; m++)
                if (!res[i].ok[m]) {
                    fprintf(stderr, "clfleet-bench p2p: %s copy %zu->%zu of %zu bytes: wrong "
                            "result\n",
                            METHOD[m], res[i].src, res[i].dst, res[i].bytes);
                    rc = EXIT_FAILURE;
                }
        if (plot(&b, res, nres))
            rc = EXIT_FAILURE;
    }
    free(res);
    teardown(&b);
    return rc;
}

#ifdef CLF_BENCH_P2P_MAIN
int main(int argc, char **argv)
{
    return clf_bench_p2p(argc, argv);
}
#endif

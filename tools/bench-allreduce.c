/*
 * clfleet-bench allreduce: the ring all-reduce of clf_allreduce() against the naive way
 * (read every device's buffer to the host, add there, write the sum back to every device),
 * float sums of 4 KiB to 256 MiB in steps of 4x, on 2 and 3 devices.
 *
 * Reported per size, the median of a few repetitions: time, algorithm bandwidth
 * (algbw = size / time) and bus bandwidth as NCCL defines it for all-reduce
 * (busbw = algbw x 2(n-1)/n: the bytes each device must send and receive, so that the
 * figure compares with the links' bandwidth whatever n), and the naive way's time and
 * bandwidth. Each method's result is checked once per size (integer-valued floats, so the
 * sums are exact in any order). The devices are those of --devices, else $CLFLEET_DEVICES,
 * else the library's default (a single CPU device is split into sub-devices of one compute
 * unit), in one context per platform (the copies stay in the context); --context-per-device
 * makes every copy cross contexts through pinned host staging. Built with
 * -DCLF_BENCH_ALLREDUCE_MAIN it
 * is a program of its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "json.h"
#include "clfleet.h"

#define MAX_REPS CLF_BENCH_MAX_REPS
#define MAX_DEV 3

typedef struct run {
    size_t ndev, bytes;
    double ring_s, naive_s;         /* medians */
    double ring_min_s, ring_max_s;  /* the ring's fastest and slowest repetition */
    int ring_ok, naive_ok;
} run;

typedef struct bench {
    clf_bench_common opt;
    int per_device;
    size_t max_bytes, chunk;
    clf_fleet *fl;
    size_t nfleet;
    clf_buffer *buf[MAX_DEV];
    float *host[MAX_DEV], *sum, *init[MAX_DEV];
    double memcpy_gbps;
} bench;

static double busbw(size_t bytes, double s, size_t n)
{
    return clf_bench_gbps(bytes, s) * 2.0 * (double)(n - 1) / (double)n;
}

/* Small integers, different on every device: every sum is exact. */
static void fill(bench *b, size_t count)
{
    for (size_t d = 0; d < MAX_DEV; d++)
        for (size_t i = 0; i < count; i++)
            b->init[d][i] = (float)((i * 7 + d * 13) % 101);
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

/* Every buffer holds the sum of the initial values. */
static int check(bench *b, size_t n, size_t count)
{
    for (size_t d = 0; d < n; d++) {
        if (clf_buffer_read(b->buf[d], 0, count * sizeof(float), b->host[d]) != CLF_SUCCESS)
            return 0;
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (size_t k = 0; k < n; k++)
                want += b->init[k][i];
            if (b->host[d][i] != want)
                return 0;
        }
    }
    return 1;
}

/* The naive way: everything to the host, add there, everything back. */
static clf_status naive(bench *b, size_t n, size_t count)
{
    size_t bytes = count * sizeof(float);
    clf_event *ev[MAX_DEV];
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < n; d++)
        if ((st = clf_buffer_read_async(b->buf[d], 0, bytes, b->host[d], &ev[d])) != CLF_SUCCESS)
            return st;
    for (size_t d = 0; d < n; d++) {
        clf_status s = clf_event_wait(ev[d]);
        st = st == CLF_SUCCESS ? s : st;
        clf_event_release(ev[d]);
    }
    if (st != CLF_SUCCESS)
        return st;
    memcpy(b->sum, b->host[0], bytes);
    for (size_t d = 1; d < n; d++)
        for (size_t i = 0; i < count; i++)
            b->sum[i] += b->host[d][i];
    for (size_t d = 0; d < n; d++)
        if ((st = clf_buffer_write_async(b->buf[d], 0, bytes, b->sum, &ev[d])) != CLF_SUCCESS)
            return st;
    for (size_t d = 0; d < n; d++) {
        clf_status s = clf_event_wait(ev[d]);
        st = st == CLF_SUCCESS ? s : st;
        clf_event_release(ev[d]);
    }
    return st;
}

static clf_status measure(bench *b, size_t n, size_t bytes, run *r)
{
    size_t count = bytes / sizeof(float);
    double ring[MAX_REPS], nv[MAX_REPS];
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
    o.chunk_bytes = b->chunk;
    clf_status st;
    r->ndev = n;
    r->bytes = bytes;
    /* One untimed round of each, checked: warms the kernels and the staging buffers. */
    if ((st = upload(b, n, bytes)) != CLF_SUCCESS ||
        (st = clf_allreduce(b->buf, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o)) != CLF_SUCCESS)
        return st;
    r->ring_ok = check(b, n, count);
    if ((st = upload(b, n, bytes)) != CLF_SUCCESS || (st = naive(b, n, count)) != CLF_SUCCESS)
        return st;
    r->naive_ok = check(b, n, count);
    /* Short operations repeat inside one timing so that the clock resolves them. */
    unsigned inner = bytes >= ((size_t)4 << 20) ? 1 : (unsigned)(((size_t)4 << 20) / bytes);
    if (inner > 32)
        inner = 32;
    for (unsigned k = 0; k < b->opt.reps; k++) {
        if ((st = upload(b, n, bytes)) != CLF_SUCCESS)
            return st;
        double t = clf_bench_now();
        for (unsigned j = 0; j < inner && st == CLF_SUCCESS; j++)
            st = clf_allreduce(b->buf, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o);
        ring[k] = (clf_bench_now() - t) / inner;
        if (st != CLF_SUCCESS || (st = upload(b, n, bytes)) != CLF_SUCCESS)
            return st;
        t = clf_bench_now();
        for (unsigned j = 0; j < inner && st == CLF_SUCCESS; j++)
            st = naive(b, n, count);
        nv[k] = (clf_bench_now() - t) / inner;
        if (st != CLF_SUCCESS)
            return st;
    }
    r->ring_s = clf_bench_median(ring, b->opt.reps); /* sorts ring */
    r->ring_min_s = ring[0];
    r->ring_max_s = ring[b->opt.reps - 1];
    r->naive_s = clf_bench_median(nv, b->opt.reps);
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
    fputs("usage: clfleet-bench allreduce [--json] [--quick] [--verbose] [--reps N]\n"
          "                               [--devices SELECTION] [--trace PATH]\n"
          "                               [--context-per-device] [--max-size BYTES]\n"
          "                               [--chunk BYTES]\n"
          "Ring all-reduce (clf_allreduce, float sum) against the naive gather-add-broadcast\n"
          "on 2 and 3 devices, 4 KiB to 256 MiB: time, algbw = size / time and\n"
          "busbw = algbw x 2(n-1)/n, in GB/s (1e9 bytes/s).\n"
          "  --json                one JSON document on standard output\n"
          "  --quick               sizes up to 1 MiB, two repetitions (a smoke test)\n"
          "  --reps N              timed repetitions, medians reported (5)\n"
          "  --verbose             developer lines (targets met or missed), where any\n"
          "  --devices S           devices (default: $CLFLEET_DEVICES, else the library's\n"
          "                        default; CPU devices are split when there is only one)\n"
          "  --trace PATH          a Perfetto timeline per fleet, PATH-N.json\n"
          "  --context-per-device  one context per device: every copy is staged through\n"
          "                        the host (default: one per platform)\n"
          "  --max-size B          largest size in bytes, K, M or G suffix (default 256M)\n"
          "  --chunk B             pipelining chunk of the ring (default: automatic)\n"
          "  -h, --help            this text; -V, --version: the version\n",
          to);
}

enum { OPT_PER_DEVICE = CLF_BENCH_OWN, OPT_MAX_SIZE, OPT_CHUNK };
static const struct option OWN[] = {{"context-per-device", no_argument, NULL, OPT_PER_DEVICE},
                                    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
                                    {"chunk", required_argument, NULL, OPT_CHUNK},
                                    {NULL, 0, NULL, 0}};

/* --context-per-device, --max-size B and --chunk B. */
static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    if (val == OPT_PER_DEVICE)
        return b->per_device = 1;
    if (val == OPT_MAX_SIZE)
        return clf_bench_number(arg, 0, 4096, (size_t)1 << 32, &b->max_bytes);
    return clf_bench_number(arg, 0, 4, SIZE_MAX, &b->chunk);
}

static void print_table(const bench *b, const run *r, size_t nr)
{
    printf("clfleet-bench allreduce: float sum, %s, median of %u [fastest..slowest]; GB/s = 1e9 "
           "bytes/s\n",
           b->per_device ? "one context per device (staged copies)" : "one context per platform",
           b->opt.reps);
    for (size_t d = 0; d < b->nfleet && d < MAX_DEV; d++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl, d) == CLF_SUCCESS)
            printf("  device %zu: %s, %u compute unit(s)\n", d, in.name, in.compute_units);
    }
    printf("  memcpy on this host: %.2f GB/s\n\n", b->memcpy_gbps);
    printf("%-4s %9s  %10s %21s %8s %8s  %10s %8s %8s  %7s\n", "devs", "size", "ring us",
           "[min..max]", "algbw", "busbw", "naive us", "algbw", "busbw", "speedup");
    for (size_t i = 0; i < nr; i++) {
        char size[32], spread[48];
        clf_bench_size_label(size, sizeof size, r[i].bytes);
        snprintf(spread, sizeof spread, "[%.1f..%.1f]", r[i].ring_min_s * 1e6,
                 r[i].ring_max_s * 1e6);
        printf("%-4zu %9s  %10.1f %21s %8.2f %8.2f  %10.1f %8.2f %8.2f  %7.2f%s\n", r[i].ndev,
               size, r[i].ring_s * 1e6, spread, clf_bench_gbps(r[i].bytes, r[i].ring_s),
               busbw(r[i].bytes, r[i].ring_s, r[i].ndev), r[i].naive_s * 1e6,
               clf_bench_gbps(r[i].bytes, r[i].naive_s), busbw(r[i].bytes, r[i].naive_s, r[i].ndev),
               r[i].naive_s / r[i].ring_s, r[i].ring_ok && r[i].naive_ok ? "" : "  WRONG RESULT");
    }
}

/* One method's figures: {"time_s": ..., "algbw_gbps": ..., "busbw_gbps": ..., "correct": ...}. */
static void json_method(const run *r, double s, int ok)
{
    printf("{\"time_s\": ");
    clf_tool_json_num(s);
    printf(", \"algbw_gbps\": ");
    clf_tool_json_num(clf_bench_gbps(r->bytes, s));
    printf(", \"busbw_gbps\": ");
    clf_tool_json_num(busbw(r->bytes, s, r->ndev));
    printf(", \"correct\": %s}", ok ? "true" : "false");
}

static void print_json(const bench *b, const run *r, size_t nr)
{
    printf("{\n  \"benchmark\": \"allreduce\",\n  \"type\": \"float\",\n  \"op\": \"sum\",\n");
    printf("  \"context\": \"%s\",\n  \"repetitions\": %u,\n  \"memcpy_gbps\": ",
           b->per_device ? "per-device" : "per-platform", b->opt.reps);
    clf_tool_json_num(b->memcpy_gbps);
    printf(",\n  \"results\": [");
    for (size_t i = 0; i < nr; i++) {
        printf("%s\n    {\"devices\": %zu, \"bytes\": %zu, \"ring\": ", i ? "," : "", r[i].ndev,
               r[i].bytes);
        json_method(&r[i], r[i].ring_s, r[i].ring_ok);
        printf(", \"naive\": ");
        json_method(&r[i], r[i].naive_s, r[i].naive_ok);
        printf(", \"ring_min_s\": ");
        clf_tool_json_num(r[i].ring_min_s);
        printf(", \"ring_max_s\": ");
        clf_tool_json_num(r[i].ring_max_s);
        printf(", \"speedup\": ");
        clf_tool_json_num(r[i].naive_s / r[i].ring_s);
        printf("}");
    }
    printf("\n  ]\n}\n");
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
    clf_status st = clf_bench_fleet(&b->fl, &b->opt, &o, 2);
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
    fill(b, b->max_bytes / sizeof(float));
    return CLF_SUCCESS;
}

int clf_bench_allreduce(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){.name = "allreduce", .usage = usage, .reps = 5, .quick_reps = 2};
    b.max_bytes = (size_t)256 << 20;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick && b.max_bytes > ((size_t)1 << 20))
        b.max_bytes = (size_t)1 << 20;
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
    run res[2 * 16];
    size_t nr = 0;
    rc = 0;
    for (size_t n = 2; n <= MAX_DEV && n <= b.nfleet && !rc; n++)
        for (size_t bytes = 4096; bytes <= b.max_bytes && !rc; bytes *= 4) {
            if ((st = measure(&b, n, bytes, &res[nr])) != CLF_SUCCESS)
                rc = clf_bench_fail("allreduce", "measure", st);
            else
                nr++;
        }
    if (!rc) {
        if (b.opt.json)
            print_json(&b, res, nr);
        else
            print_table(&b, res, nr);
        for (size_t i = 0; i < nr; i++)
            if (!res[i].ring_ok || !res[i].naive_ok) {
                fprintf(stderr,
                        "clfleet-bench allreduce: %zu bytes on %zu devices: wrong "
                        "result\n",
                        res[i].bytes, res[i].ndev);
                rc = EXIT_FAILURE;
            }
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

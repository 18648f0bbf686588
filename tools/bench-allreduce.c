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
 * sums are exact in any order). By default the devices are PoCL sub-devices of one compute
 * unit in one context (the copies stay in the context); --context-per-device makes every
 * copy cross contexts through pinned host staging. Built with -DCLF_BENCH_ALLREDUCE_MAIN it
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

#define SKIP 77
#define DEFAULT_SELECTION "type=cpu;platform=portable;name=pthread;split=1"
#define MAX_REPS 64
#define MAX_DEV 3

typedef struct run {
    size_t ndev, bytes;
    double ring_s, naive_s; /* medians */
    int ring_ok, naive_ok;
} run;

typedef struct bench {
    int json, quick, per_device;
    unsigned reps;
    size_t max_bytes, chunk;
    const char *devices;
    clf_fleet *fl;
    size_t nfleet;
    clf_buffer *buf[MAX_DEV];
    float *host[MAX_DEV], *sum, *init[MAX_DEV];
    double memcpy_gbps;
} bench;

static double gbps(size_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e9 : NAN;
}

static double busbw(size_t bytes, double s, size_t n)
{
    return gbps(bytes, s) * 2.0 * (double)(n - 1) / (double)n;
}

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "clfleet-bench allreduce: %s: %s: %s\n", what, clf_status_name(st),
            clf_last_error());
    return EXIT_FAILURE;
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
        (st = clf_allreduce(b->buf, n, count, CLF_FLOAT, CLF_SUM, &o)) != CLF_SUCCESS)
        return st;
    r->ring_ok = check(b, n, count);
    if ((st = upload(b, n, bytes)) != CLF_SUCCESS || (st = naive(b, n, count)) != CLF_SUCCESS)
        return st;
    r->naive_ok = check(b, n, count);
    /* Short operations repeat inside one timing so that the clock resolves them. */
    unsigned inner = bytes >= ((size_t)4 << 20) ? 1 : (unsigned)(((size_t)4 << 20) / bytes);
    if (inner > 32)
        inner = 32;
    for (unsigned k = 0; k < b->reps; k++) {
        if ((st = upload(b, n, bytes)) != CLF_SUCCESS)
            return st;
        double t = clf_bench_now();
        for (unsigned j = 0; j < inner && st == CLF_SUCCESS; j++)
            st = clf_allreduce(b->buf, n, count, CLF_FLOAT, CLF_SUM, &o);
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
    r->ring_s = clf_bench_median(ring, b->reps);
    r->naive_s = clf_bench_median(nv, b->reps);
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
        best = gbps(bytes, t) > best ? gbps(bytes, t) : best;
    }
    return best;
}

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench allreduce [--json] [--quick] [--reps N] [--devices SELECTION]\n"
          "                               [--context-per-device] [--max-size BYTES]\n"
          "                               [--chunk BYTES]\n"
          "Ring all-reduce (clf_allreduce, float sum) against the naive gather-add-broadcast\n"
          "on 2 and 3 devices, 4 KiB to 256 MiB: time, algbw = size / time and\n"
          "busbw = algbw x 2(n-1)/n, in GB/s (1e9 bytes/s).\n"
          "  --json                one JSON document on standard output\n"
          "  --quick               sizes up to 1 MiB, two repetitions (a smoke test)\n"
          "  --reps N              timed repetitions, medians reported (5)\n"
          "  --devices S           devices (default \"" DEFAULT_SELECTION "\")\n"
          "  --context-per-device  one context per device: every copy is staged through\n"
          "                        the host (default: one per platform)\n"
          "  --max-size B          largest size in bytes (default 256 MiB)\n"
          "  --chunk B             pipelining chunk of the ring (default: automatic)\n",
          to);
}

static void print_table(const bench *b, const run *r, size_t nr)
{
    printf("clfleet-bench allreduce: float sum, %s, median of %u; GB/s = 1e9 bytes/s\n",
           b->per_device ? "one context per device (staged copies)" : "one context per platform",
           b->reps);
    for (size_t d = 0; d < b->nfleet && d < MAX_DEV; d++) {
        clf_device_info in;
        if (clf_device_get_info(b->fl, d, &in) == CLF_SUCCESS)
            printf("  device %zu: %s, %u compute unit(s)\n", d, in.name, in.compute_units);
    }
    printf("  memcpy on this host: %.2f GB/s\n\n", b->memcpy_gbps);
    printf("%-4s %9s  %10s %8s %8s  %10s %8s %8s  %7s\n", "devs", "size", "ring us", "algbw",
           "busbw", "naive us", "algbw", "busbw", "speedup");
    for (size_t i = 0; i < nr; i++) {
        char size[32];
        if (r[i].bytes >= (1u << 20))
            snprintf(size, sizeof size, "%zu MiB", r[i].bytes >> 20);
        else
            snprintf(size, sizeof size, "%zu KiB", r[i].bytes >> 10);
        printf("%-4zu %9s  %10.1f %8.2f %8.2f  %10.1f %8.2f %8.2f  %7.2f%s\n", r[i].ndev, size,
               r[i].ring_s * 1e6, gbps(r[i].bytes, r[i].ring_s),
               busbw(r[i].bytes, r[i].ring_s, r[i].ndev), r[i].naive_s * 1e6,
               gbps(r[i].bytes, r[i].naive_s), busbw(r[i].bytes, r[i].naive_s, r[i].ndev),
               r[i].naive_s / r[i].ring_s, r[i].ring_ok && r[i].naive_ok ? "" : "  WRONG RESULT");
    }
}

static void print_json(const bench *b, const run *r, size_t nr)
{
    printf("{\n  \"benchmark\": \"allreduce\",\n  \"type\": \"float\",\n  \"op\": \"sum\",\n");
    printf("  \"context\": \"%s\",\n  \"repetitions\": %u,\n  \"memcpy_gbps\": ",
           b->per_device ? "per-device" : "per-platform", b->reps);
    clf_tool_json_num(b->memcpy_gbps);
    printf(",\n  \"results\": [");
    for (size_t i = 0; i < nr; i++) {
        printf("%s\n    {\"devices\": %zu, \"bytes\": %zu, \"ring\": {\"time_s\": ", i ? "," : "",
               r[i].ndev, r[i].bytes);
        clf_tool_json_num(r[i].ring_s);
        printf(", \"algbw_gbps\": ");
        clf_tool_json_num(gbps(r[i].bytes, r[i].ring_s));
        printf(", \"busbw_gbps\": ");
        clf_tool_json_num(busbw(r[i].bytes, r[i].ring_s, r[i].ndev));
        printf(", \"correct\": %s}, \"naive\": {\"time_s\": ", r[i].ring_ok ? "true" : "false");
        clf_tool_json_num(r[i].naive_s);
        printf(", \"algbw_gbps\": ");
        clf_tool_json_num(gbps(r[i].bytes, r[i].naive_s));
        printf(", \"busbw_gbps\": ");
        clf_tool_json_num(busbw(r[i].bytes, r[i].naive_s, r[i].ndev));
        printf(", \"correct\": %s}, \"speedup\": ", r[i].naive_ok ? "true" : "false");
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
    o.devices = b->devices;
    o.context_per_device = b->per_device;
    clf_status st = clf_fleet_create(&b->fl, &o);
    if (st != CLF_SUCCESS)
        return st;
    b->nfleet = clf_fleet_device_count(b->fl);
    if (b->nfleet < 2)
        return CLF_ERROR_NO_DEVICE;
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
    b.reps = 5;
    b.devices = DEFAULT_SELECTION;
    b.max_bytes = (size_t)256 << 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (!strcmp(a, "--json"))
            b.json = 1;
        else if (!strcmp(a, "--quick"))
            b.quick = 1;
        else if (!strcmp(a, "--context-per-device"))
            b.per_device = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--devices") && i + 1 < argc)
            b.devices = argv[++i];
        else if (!strcmp(a, "--reps") && i + 1 < argc &&
                 (b.reps = (unsigned)strtoul(argv[i + 1], &end, 10), *end == '\0') && b.reps >= 1 &&
                 b.reps <= MAX_REPS)
            i++;
        else if (!strcmp(a, "--max-size") && i + 1 < argc &&
                 (b.max_bytes = (size_t)strtoull(argv[i + 1], &end, 0), *end == '\0') &&
                 b.max_bytes >= 4096 && b.max_bytes <= ((size_t)1 << 32))
            i++;
        else if (!strcmp(a, "--chunk") && i + 1 < argc &&
                 (b.chunk = (size_t)strtoull(argv[i + 1], &end, 0), *end == '\0') && b.chunk >= 4)
            i++;
        else {
            fprintf(stderr, "clfleet-bench allreduce: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (b.quick) {
        b.reps = b.reps < 2 ? b.reps : 2;
        if (b.max_bytes > ((size_t)1 << 20))
            b.max_bytes = (size_t)1 << 20;
    }
    clf_status st = setup(&b);
    if (st != CLF_SUCCESS) {
        int skip = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
        if (skip && b.fl)
            fprintf(stderr, "clfleet-bench allreduce: need two devices, '%s' gives %zu\n",
                    b.devices, b.nfleet);
        else
            fail("setup", st);
        teardown(&b);
        return skip ? SKIP : EXIT_FAILURE;
    }
    b.memcpy_gbps = memcpy_rate(&b, b.max_bytes);
    run res[2 * 16];
    size_t nr = 0;
    int rc = 0;
    for (size_t n = 2; n <= MAX_DEV && n <= b.nfleet && !rc; n++)
        for (size_t bytes = 4096; bytes <= b.max_bytes && !rc; bytes *= 4) {
            if ((st = measure(&b, n, bytes, &res[nr])) != CLF_SUCCESS)
                rc = fail("measure", st);
            else
                nr++;
        }
    if (!rc) {
        if (b.json)
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

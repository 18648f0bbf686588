/*
 * Example 3: copy bandwidth between every ordered pair of devices.
 *
 *   p2p-bench [MiB]        size of each copy, default 16
 *
 * For each pair (a device to itself included) clf_copy() moves the bytes by the path
 * the fleet chose for the pair when it was created (see list-devices), and the
 * program times it against the naive way: a blocking read of the whole region into
 * host memory, then a blocking write of it. Both are the best of a few runs, after
 * one warm-up copy. Every chosen copy's bytes are read back and compared with what
 * the source holds; a mismatch makes the exit status 1. (tools/clfleet-bench p2p is
 * the thorough benchmark: many sizes, medians, memcpy for scale.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clfleet.h>

enum { RUNS = 3 };

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The bytes device s's source buffer holds: different for every device. */
static void pattern(unsigned char *p, size_t n, size_t s)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + (i >> 12) + s * 29u + 1u);
}

typedef struct pair_result {
    double chosen_s, naive_s; /* best of RUNS */
    int bytes_ok;
} pair_result;

static clf_status measure(clf_buffer *dst, clf_buffer *src, size_t bytes, unsigned char *host,
                          const unsigned char *want, pair_result *r)
{
    clf_status st;
    unsigned char zero = 0;
    r->chosen_s = r->naive_s = 1e30;
    if ((st = clf_buffer_fill(dst, &zero, 1, 0, bytes)) != CLF_SUCCESS ||
        (st = clf_copy(dst, 0, src, 0, bytes)) != CLF_SUCCESS) /* warm-up */
        return st;
    for (int run = 0; run < RUNS; run++) {
        double t0 = now();
        if ((st = clf_copy(dst, 0, src, 0, bytes)) != CLF_SUCCESS)
            return st;
        double t1 = now();
        r->chosen_s = t1 - t0 < r->chosen_s ? t1 - t0 : r->chosen_s;
    }
    memset(host, 0, bytes);
    if ((st = clf_buffer_read(dst, 0, bytes, host)) != CLF_SUCCESS)
        return st;
    r->bytes_ok = memcmp(host, want, bytes) == 0;
    for (int run = 0; run < RUNS; run++) {
        double t0 = now();
        if ((st = clf_buffer_read(src, 0, bytes, host)) != CLF_SUCCESS ||
            (st = clf_buffer_write(dst, 0, bytes, host)) != CLF_SUCCESS)
            return st;
        double t1 = now();
        r->naive_s = t1 - t0 < r->naive_s ? t1 - t0 : r->naive_s;
    }
    return CLF_SUCCESS;
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "p2p-bench: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

int main(int argc, char **argv)
{
    long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 16;
    if (mib < 1 || mib > 4096) {
        fprintf(stderr, "usage: p2p-bench [MiB]   (1 to 4096, default 16)\n");
        return 2;
    }
    const size_t bytes = (size_t)mib << 20;
    clf_fleet *f;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    size_t n = clf_fleet_device_count(f), bad = 0;
    clf_buffer **src = calloc(n, sizeof *src), **dst = calloc(n, sizeof *dst);
    unsigned char *want = malloc(bytes), *host = malloc(bytes);
    if (!src || !dst || !want || !host) {
        st = CLF_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    for (size_t d = 0; d < n && st == CLF_SUCCESS; d++) {
        pattern(want, bytes, d);
        if ((st = clf_buffer_create(&src[d], f, d, bytes, CLF_MEM_READ_ONLY)) == CLF_SUCCESS &&
            (st = clf_buffer_create(&dst[d], f, d, bytes, CLF_MEM_READ_WRITE)) == CLF_SUCCESS)
            st = clf_buffer_write(src[d], 0, bytes, want);
    }
    printf("%ld MiB copies between %zu device(s), best of %d (GB/s = 10^9 bytes/s)\n\n", mib, n,
           RUNS);
    printf("from  to  path           chosen GB/s  naive GB/s  chosen/naive  bytes\n");
    for (size_t s = 0; s < n && st == CLF_SUCCESS; s++) {
        pattern(want, bytes, s);
        for (size_t d = 0; d < n && st == CLF_SUCCESS; d++) {
            clf_path path = CLF_PATH_STAGED;
            int direct = 0;
            pair_result r = {0, 0, 0};
            if ((st = clf_transfer_path(&path, &direct, f, s, d)) != CLF_SUCCESS ||
                (st = measure(dst[d], src[s], bytes, host, want, &r)) != CLF_SUCCESS)
                break;
            printf("%4zu %3zu  %-12s%s %11.2f %11.2f %12.2fx  %s\n", s, d, clf_path_name(path),
                   direct ? "*" : " ", (double)bytes / r.chosen_s * 1e-9,
                   (double)bytes / r.naive_s * 1e-9, r.naive_s / r.chosen_s,
                   r.bytes_ok ? "ok" : "WRONG");
            bad += !r.bytes_ok;
        }
    }
    printf("(* = no copy through host memory)\n");
out:
    if (st != CLF_SUCCESS)
        fail("measuring", st);
    for (size_t d = 0; d < n && src && dst; d++) {
        clf_buffer_destroy(src[d]);
        clf_buffer_destroy(dst[d]);
    }
    free(src);
    free(dst);
    free(want);
    free(host);
    clf_fleet_destroy(f);
    if (bad)
        fprintf(stderr, "p2p-bench: %zu copies delivered wrong bytes\n", bad);
    return st == CLF_SUCCESS && bad == 0 ? 0 : 1;
}

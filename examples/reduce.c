/*
 * Example 5: reductions across devices, and a ring all-reduce.
 *
 * Every device holds one vector of COUNT elements in its own buffer (as each GPU
 * would hold its gradients in data-parallel training). Then:
 *
 *   clf_reduce()          the element-wise sum lands in one device's buffer (the root);
 *   clf_reduce_to_host()  the element-wise maximum lands in host memory;
 *   clf_allreduce()       every buffer ends up holding the element-wise sum (a ring:
 *                         each device sends and receives 2(n-1)/n of the data).
 *
 * The arithmetic runs on the devices; every result is compared with a plain C loop
 * (the values are small integers, so float sums are exact in any order), and the
 * buffers a collective must not change are checked too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clfleet.h>

enum { COUNT = 1 << 20 };

/* Element i of device d's vector: an integer below 2^12, as a float. */
static float value(size_t d, size_t i)
{
    return (float)((i * 7 + d * 1031) % 4093);
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "reduce: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

/* Compare a device buffer (or host array, when buf is NULL) with the expected floats. */
static int same(clf_buffer *buf, const float *host, const float *want, float *tmp, const char *what)
{
    if (buf && clf_buffer_read(buf, 0, COUNT * sizeof(float), tmp) != CLF_SUCCESS)
        return fail("reading back", CLF_ERROR_OPENCL), 0;
    const float *got = buf ? tmp : host;
    for (size_t i = 0; i < COUNT; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "reduce: %s: element %zu is %g, want %g\n", what, i, got[i], want[i]);
            return 0;
        }
    return 1;
}

static clf_status fill(clf_buffer *const *bufs, size_t n, float *tmp)
{
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < n && st == CLF_SUCCESS; d++) {
        for (size_t i = 0; i < COUNT; i++)
            tmp[i] = value(d, i);
        st = clf_buffer_write(bufs[d], 0, COUNT * sizeof(float), tmp);
    }
    return st;
}

int main(void)
{
    clf_fleet *f;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    size_t n = clf_fleet_device_count(f), root = n - 1;
    clf_buffer **bufs = calloc(n, sizeof *bufs);
    float *sum = malloc(COUNT * sizeof *sum), *max = malloc(COUNT * sizeof *max);
    float *tmp = malloc(COUNT * sizeof *tmp), *host = malloc(COUNT * sizeof *host);
    int ok = 0;
    if (!bufs || !sum || !max || !tmp || !host)
        goto out;
    for (size_t d = 0; d < n && st == CLF_SUCCESS; d++)
        st = clf_buffer_create(&bufs[d], f, d, COUNT * sizeof(float), CLF_MEM_READ_WRITE);
    if (st != CLF_SUCCESS || (st = fill(bufs, n, tmp)) != CLF_SUCCESS) {
        fail("setting up the buffers", st);
        goto out;
    }
    /* The references. */
    for (size_t i = 0; i < COUNT; i++) {
        sum[i] = max[i] = value(0, i);
        for (size_t d = 1; d < n; d++) {
            sum[i] += value(d, i);
            max[i] = value(d, i) > max[i] ? value(d, i) : max[i];
        }
    }
    printf("%zu device(s), %d floats (%d MiB) each\n", n, COUNT, COUNT * 4 >> 20);

    if ((st = clf_reduce(bufs, n, COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, root, NULL)) !=
        CLF_SUCCESS) {
        fail("clf_reduce", st);
        goto out;
    }
    ok = same(bufs[root], NULL, sum, tmp, "sum on the root");
    for (size_t d = 0; d < n && ok; d++) { /* the others are unchanged */
        if (d == root)
            continue;
        for (size_t i = 0; i < COUNT; i++)
            host[i] = value(d, i);
        ok = same(bufs[d], NULL, host, tmp, "a buffer besides the root");
    }
    printf("clf_reduce(sum) into device %zu:    %s\n", root, ok ? "ok" : "WRONG");

    if (ok && ((st = fill(bufs, n, tmp)) != CLF_SUCCESS || /* the root holds the sum */
               (st = clf_reduce_to_host(host, bufs, n, COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_MAX,
                                        NULL)) != CLF_SUCCESS)) {
        fail("clf_reduce_to_host", st);
        goto out;
    }
    ok = ok && same(NULL, host, max, tmp, "maximum on the host");
    printf("clf_reduce_to_host(max):          %s\n", ok ? "ok" : "WRONG");

    if (ok && (st = fill(bufs, n, tmp)) == CLF_SUCCESS) {
        struct timespec t0, t1;
        timespec_get(&t0, TIME_UTC);
        st = clf_allreduce(bufs, n, COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL);
        timespec_get(&t1, TIME_UTC);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        if (st != CLF_SUCCESS) {
            fail("clf_allreduce", st);
            goto out;
        }
        for (size_t d = 0; d < n && ok; d++)
            ok = same(bufs[d], NULL, sum, tmp, "all-reduced sum");
        /* NCCL's bus bandwidth: what each link carried, comparable across device counts. */
        printf("clf_allreduce(sum) on every device: %s, %.1f ms, bus bandwidth %.2f GB/s\n",
               ok ? "ok" : "WRONG", s * 1e3,
               COUNT * 4.0 / s * 2.0 * (double)(n - 1) / (double)n * 1e-9);
    }
    if (st != CLF_SUCCESS)
        fail("refilling the buffers", st);
out:
    ok = ok && st == CLF_SUCCESS;
    printf(ok ? "every result equals the C loop's\n" : "reduce FAILED\n");
    for (size_t d = 0; d < n && bufs; d++)
        clf_buffer_destroy(bufs[d]);
    free(bufs);
    free(sum);
    free(max);
    free(tmp);
    free(host);
    clf_fleet_destroy(f);
    return ok ? 0 : 1;
}

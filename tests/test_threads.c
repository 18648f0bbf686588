/*
 * Four host threads sharing one fleet, all at once: launches (each thread its
 * own strategy, kernel and arrays; one of them asynchronous), programs built
 * concurrently, copies between devices (clf_copy), buffer writes and reads
 * (blocking and asynchronous), fills and metrics reads. Every result is
 * compared with plain C. Run under ThreadSanitizer too (.ci/run).
 *
 * Check is not thread-safe: workers record their first failure as text and
 * the main thread asserts.
 */
#include "common.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#define NTHREADS 4

typedef struct worker {
    int id;
    clf_fleet *f;
    clf_program *shared; /* cl/vector.cl, built once before the threads start */
    int iters;
    unsigned launches, copies, ios;
    char err[1024];
} worker;

static int failf(worker *w, const char *fmt, ...)
{
    if (w->err[0])
        return 1;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(w->err, sizeof w->err, "thread %d: ", w->id);
    vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
    va_end(ap);
    return 1;
}

/* Record a failed call with its detail message (thread-local: this thread's). */
#define CALL(w, expr)                                                                      \
    do {                                                                                   \
        clf_status st_ = (expr);                                                           \
        if (st_ != CLF_SUCCESS) {                                                          \
            failf((w), "%s: %s (%s)", #expr, clf_status_name(st_), clf_last_error());      \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

static uint32_t rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Waits for an asynchronous call's event and releases it: the call's outcome. */
static clf_status wait_release(clf_event **ev)
{
    clf_status st = clf_event_wait(*ev);
    clf_event_release(*ev);
    *ev = NULL;
    return st;
}

static const clf_strategy strategies[NTHREADS] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                                  CLF_STRATEGY_GUIDED, CLF_STRATEGY_AUTO};

/* One launch of the thread's kernel; checks the result. */
static int one_launch(worker *w, clf_program *own, int it, uint32_t *seed)
{
    int bad = 1;
    size_t n = 1000 + (size_t)(37 * it) + (size_t)(101 * w->id);
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    uint32_t *h = malloc(n * 4);
    if (!a || !b || !c || !h) {
        failf(w, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(rnd(seed) % 100000);
        b[i] = (float)(rnd(seed) % 100000);
        c[i] = -1;
        h[i] = 0;
    }
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.global[0] = n;
    d.strategy = strategies[w->id];
    clf_launch_report rep;
    switch (w->id) {
    case 0: { /* vadd of the shared program, static */
        clf_arg args[] = {CLF_IN(a, n * 4, 4), CLF_IN(b, n * 4, 4), CLF_OUT(c, n * 4, 4)};
        d.kernel = "vadd";
        CALL(w, clf_launch(w->f, w->shared, &d, args, 3, &rep));
        for (size_t i = 0; i < n; i++)
            if (c[i] != a[i] + b[i]) {
                failf(w, "iteration %d: vadd c[%zu] = %g, want %g", it, i, (double)c[i],
                      (double)(a[i] + b[i]));
                goto out;
            }
        break;
    }
    case 1: { /* saxpy of the shared program, dynamic; small integers keep it exact */
        float alpha = 3.0f;
        memcpy(c, b, n * 4);
        clf_arg args[] = {CLF_SCALAR(&alpha), CLF_IN(a, n * 4, 4), CLF_INOUT(c, n * 4, 4)};
        d.kernel = "saxpy";
        CALL(w, clf_launch(w->f, w->shared, &d, args, 3, &rep));
        for (size_t i = 0; i < n; i++)
            if (c[i] != 3.0f * a[i] + b[i]) {
                failf(w, "iteration %d: saxpy y[%zu] = %g, want %g", it, i, (double)c[i],
                      (double)(3.0f * a[i] + b[i]));
                goto out;
            }
        break;
    }
    case 2: { /* the thread's own program, guided */
        int k = it % 7;
        clf_arg args[] = {CLF_IN(a, n * 4, 4), CLF_OUT(c, n * 4, 4), CLF_SCALAR(&k)};
        d.kernel = "affine2";
        CALL(w, clf_launch(w->f, own, &d, args, 3, &rep));
        for (size_t i = 0; i < n; i++)
            if (c[i] != 2.0f * a[i] + (float)k + 2.0f) {
                failf(w, "iteration %d: affine2 y[%zu] = %g", it, i, (double)c[i]);
                goto out;
            }
        break;
    }
    default: { /* hash32, auto, asynchronous */
        uint32_t s = (uint32_t)it * 2654435761u;
        clf_arg args[] = {CLF_OUT(h, n * 4, 4), CLF_SCALAR(&s)};
        clf_event *ev = NULL;
        d.kernel = "hash32";
        CALL(w, clf_launch_async(w->f, own, &d, args, 2, &rep, &ev));
        CALL(w, wait_release(&ev));
        for (size_t i = 0; i < n; i++)
            if (h[i] != lowbias32((uint32_t)i ^ s)) {
                failf(w, "iteration %d: hash32 out[%zu] = %u", it, i, h[i]);
                goto out;
            }
        break;
    }
    }
    uint64_t units = 0;
    for (size_t i = 0; i < rep.num_devices; i++)
        units += rep.dev[i].units;
    if (units != n) {
        failf(w, "iteration %d: the report covers %llu of %zu units", it,
              (unsigned long long)units, n);
        goto out;
    }
    w->launches++;
    bad = 0;
out:
    free(a);
    free(b);
    free(c);
    free(h);
    return bad;
}

/* Buffers on two devices: write, copy one to the other at offsets, fill, read back. */
static int copies(worker *w, int it, uint32_t *seed)
{
    int bad = 1;
    size_t ndev = clf_fleet_device_count(w->f);
    size_t src = (size_t)(w->id + it) % ndev, dst = (size_t)(w->id + 2 * it + 1) % ndev;
    size_t size = 4096 + (size_t)(977 * (it % 13)) + (size_t)(w->id * 64);
    size_t soff = (size_t)(rnd(seed) % 256), doff = (size_t)(rnd(seed) % 256);
    size_t len = size - 256;
    unsigned char *in = malloc(size), *back = malloc(size);
    clf_buffer *bs = NULL, *bd = NULL;
    clf_event *ev = NULL;
    if (!in || !back) {
        failf(w, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < size; i++)
        in[i] = (unsigned char)rnd(seed);
    CALL(w, clf_buffer_create(&bs, w->f, src, size, CLF_MEM_READ_WRITE));
    CALL(w, clf_buffer_create(&bd, w->f, dst, size, CLF_MEM_READ_WRITE));
    uint32_t pattern = 0xA5000000u | (uint32_t)w->id;
    CALL(w, clf_buffer_fill(bd, &pattern, 4, 0, size / 4 * 4));
    if (it % 2) {
        CALL(w, clf_buffer_write(bs, 0, size, in));
    } else {
        CALL(w, clf_buffer_write_async(bs, 0, size, in, &ev));
        CALL(w, wait_release(&ev));
    }
    w->ios++;
    CALL(w, clf_copy(bd, doff, bs, soff, len));
    w->copies++;
    if (it % 3) {
        CALL(w, clf_buffer_read(bd, 0, size, back));
    } else {
        CALL(w, clf_buffer_read_async(bd, 0, size, back, &ev));
        CALL(w, wait_release(&ev));
    }
    w->ios++;
    for (size_t i = 0; i < size; i++) {
        unsigned char want = i >= doff && i < doff + len
                                 ? in[soff + i - doff]
                                 : (i / 4 * 4 + 4 <= size / 4 * 4
                                        ? (unsigned char)(pattern >> (8 * (i % 4)))
                                        : back[i]); /* the tail past the fill: any */
        if (back[i] != want) {
            failf(w, "iteration %d: copy %zu->%zu (%zu bytes at %zu->%zu): byte %zu is %u, "
                     "want %u",
                  it, src, dst, len, soff, doff, i, back[i], want);
            goto out;
        }
    }
    bad = 0;
out:
    clf_buffer_destroy(bs);
    clf_buffer_destroy(bd);
    free(in);
    free(back);
    return bad;
}

static void *run(void *arg)
{
    worker *w = arg;
    clf_program *own = NULL;
    uint32_t seed = 0x9e3779b9u * (uint32_t)(w->id + 1);
    /* Built concurrently with the other threads' programs (threads 2 and 3 share a source,
     * so they also race on the same cache entry). */
    const char *src = w->id >= 2 ? TEST_CL_LOWBIAS32
                                   "__kernel void affine2(__global const float *x, "
                                   "__global float *y, int k)\n"
                                   "{ size_t i = get_global_id(0); y[i] = 2.0f * x[i] + k + "
                                   "2.0f; }\n"
                                   "__kernel void hash32(__global uint *out, uint seed)\n"
                                   "{ out[get_global_id(0)] = "
                                   "lowbias32((uint)get_global_id(0) ^ seed); }\n"
                                 : "__kernel void unused(__global int *x) { x[0] = 1; }\n";
    CALL(w, clf_program_build_source(&own, w->f, src, w->id == 1 ? "-DONE" : NULL));
    for (int it = 0; it < w->iters && !w->err[0]; it++) {
        if (one_launch(w, own, it, &seed) || copies(w, it, &seed))
            break;
        clf_device_metrics m;
        clf_fleet_metrics fm;
        CALL(w, clf_metrics_device(&m, w->f, (size_t)it % clf_fleet_device_count(w->f)));
        CALL(w, clf_metrics_fleet(&fm, w->f));
    }
out:
    clf_program_destroy(own);
    return NULL;
}

static int iterations(void)
{
    const char *e = getenv("CLFLEET_TEST_THREAD_ITERS");
    int n = e ? atoi(e) : 0;
    return n > 0 ? n : 24;
}

static void run_threads(const char *selection, int per_device)
{
    clf_fleet *f = test_fleet(selection, per_device);
    clf_program *shared = NULL;
    ck_assert_ok(clf_program_build_shipped(&shared, f, "vector", NULL));
    worker w[NTHREADS];
    pthread_t t[NTHREADS];
    memset(w, 0, sizeof w);
    test_watchdog(1800); /* four threads on one fleet could deadlock: fail, not hang */
    for (int i = 0; i < NTHREADS; i++) {
        w[i].id = i;
        w[i].f = f;
        w[i].shared = shared;
        w[i].iters = iterations();
        ck_assert_int_eq(pthread_create(&t[i], NULL, run, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    test_watchdog(0);
    for (int i = 0; i < NTHREADS; i++) {
        ck_assert_msg(w[i].err[0] == '\0', "%s", w[i].err);
        ck_assert_uint_eq(w[i].launches, (unsigned)w[i].iters);
        ck_assert_uint_eq(w[i].copies, (unsigned)w[i].iters);
    }
    /* The fleet's counters saw every launch of every thread. */
    clf_fleet_metrics fm;
    ck_assert_ok(clf_metrics_fleet(&fm, f));
    ck_assert_uint_eq(fm.launches, (uint64_t)NTHREADS * (uint64_t)iterations());
    ck_assert_ok(clf_fleet_finish(f));
    clf_program_destroy(shared);
    clf_fleet_destroy(f);
}

/* Root devices, one context per platform (the basic device included). */
START_TEST(four_threads_root_devices)
{
    run_threads(TEST_CPUS, 0);
}
END_TEST

/* Sub-devices that really run at once, one context per device (cross-context copies). */
START_TEST(four_threads_sub_devices)
{
    run_threads(TEST_CPUS ";name=pthread;split=1", 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, four_threads_root_devices);
    tcase_add_test(tc, four_threads_sub_devices);
    suite_add_tcase(s, tc);
    return test_run(s, TEST_CPUS, 3);
}

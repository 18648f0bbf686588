/*
 * Object lifetime: a fleet stays alive until its last child goes (the OpenCL model).
 *
 * For every kind of object that points at its fleet (buffer, program, pipeline, task queue,
 * and the events of asynchronous writes, copies and launches), the fleet is destroyed first;
 * the object is still used once, then destroyed. Several children destroyed in mixed order
 * and from several threads; a collective on the buffers of a destroyed fleet (the fleet's own
 * program and scratch buffers must not keep it alive); the trace is written when the last
 * child goes. Run under ASan (--enable-sanitizers) to catch a use-after-free; LSan catches a
 * fleet that never goes.
 */
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

static const char SRC[] = "__kernel void affine(__global const uint *in, __global uint *out,\n"
                          "                     uint mul, uint add)\n"
                          "{\n"
                          "    size_t i = get_global_id(0);\n"
                          "    out[i] = in[i] * mul + add;\n"
                          "}\n"
                          "__kernel void fill(__global uint *out, uint add)\n"
                          "{\n"
                          "    size_t i = get_global_id(0);\n"
                          "    out[i] = (uint)i * 3u + add;\n"
                          "}\n";

#define N 1024

/* Wait for each event (it must succeed) and release it: after the fleet has gone. */
static void wait_release_all(clf_event *const *all, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_ok(clf_event_wait(all[i]));
        clf_event_release(all[i]);
    }
}

static clf_program *build(clf_fleet *f)
{
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    return p;
}

START_TEST(buffer_outlives_fleet)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = lowbias32(i);
    clf_buffer *b;
    ck_assert_ok(clf_buffer_create(&b, f, 0, sizeof in, 0));
    ck_assert_ok(clf_buffer_write(b, 0, sizeof in, in));
    clf_fleet_destroy(f);
    ck_assert_uint_eq(clf_buffer_size(b), sizeof in);
    ck_assert_ok(clf_buffer_read(b, 0, sizeof out, out));
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    uint32_t pat = 7;
    ck_assert_ok(clf_buffer_fill(b, &pat, sizeof pat, 0, sizeof pat));
    ck_assert_ok(clf_buffer_read(b, 0, sizeof pat, out));
    ck_assert_uint_eq(out[0], 7);
    clf_buffer_destroy(b);
}
END_TEST

START_TEST(program_outlives_fleet)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    size_t n = clf_fleet_device_count(f);
    clf_program *p = build(f);
    clf_fleet_destroy(f);
    for (size_t d = 0; d < n; d++) {
        ck_assert_int_ne(clf_program_device_ok(p, d), 0);
        ck_assert_ptr_null(clf_program_build_log(p, d));
    }
    ck_assert_int_eq(clf_program_device_ok(p, n), 0);
    clf_program_destroy(p);
}
END_TEST

/* Two stages on two devices: out = (in * 2 + 1) * 3 + 5. */
static clf_pipeline *two_stages(clf_fleet *f, clf_program *p)
{
    static const uint32_t mul[2] = {2, 3}, add[2] = {1, 5};
    static clf_arg args[2][2];
    clf_stage_desc st[2] = {CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT};
    for (int s = 0; s < 2; s++) {
        clf_arg a[2] = {CLF_SCALAR(&mul[s]), CLF_SCALAR(&add[s])};
        memcpy(args[s], a, sizeof a);
        st[s].program = p;
        st[s].kernel = "affine";
        st[s].device = (size_t)s;
        st[s].in_bytes = st[s].out_bytes = N * 4;
        st[s].global[0] = N;
        st[s].args = args[s];
        st[s].nargs = 2;
    }
    clf_pipeline *pl = NULL;
    ck_assert_ok(clf_pipeline_create(&pl, f, st, 2, NULL));
    return pl;
}

static void run_pipeline(clf_pipeline *pl)
{
    const size_t nb = 3;
    uint32_t *in = malloc(nb * N * 4), *out = malloc(nb * N * 4);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < nb * N; i++)
        in[i] = lowbias32((uint32_t)i);
    ck_assert_ok(clf_pipeline_run(pl, in, out, nb, NULL));
    for (size_t i = 0; i < nb * N; i++)
        expect(out[i] == (in[i] * 2 + 1) * 3 + 5, "pipeline: element %zu is %u", i, out[i]);
    free(in);
    free(out);
}

START_TEST(pipeline_outlives_fleet)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    clf_program *p = build(f);
    clf_pipeline *pl = two_stages(f, p);
    clf_fleet_destroy(f);
    clf_program_destroy(p); /* the stages have their kernels */
    run_pipeline(pl);
    clf_pipeline_destroy(pl);
}
END_TEST

static void run_taskq(clf_taskq *q)
{
    uint32_t out[4][N];
    uint32_t add[4];
    for (uint32_t t = 0; t < 4; t++) {
        add[t] = t * 100;
        clf_arg a[] = {CLF_WHOLE_OUT(out[t], sizeof out[t]), CLF_SCALAR(&add[t])};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "fill";
        d.global[0] = N;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 2, NULL));
    }
    ck_assert_ok(clf_taskq_run(q, NULL));
    for (uint32_t t = 0; t < 4; t++)
        for (uint32_t i = 0; i < N; i++)
            expect(out[t][i] == i * 3u + t * 100, "task %u: element %u is %u", t, i, out[t][i]);
}

START_TEST(taskq_outlives_fleet)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    clf_program *p = build(f);
    clf_taskq *q = NULL;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    clf_fleet_destroy(f);
    run_taskq(q);
    clf_taskq_destroy(q);
    clf_program_destroy(p); /* after the queue, which launches with it */
}
END_TEST

/*
 * Events of an asynchronous write, of copies (ones the runtime does, ones the helper pool
 * runs: to the basic device after a wait list; one after a launch, bridged by a thread), of
 * an asynchronous read and of an asynchronous launch, some still pending when the fleet and
 * every other child have gone: the last child's destroy tears the fleet down, which
 * completes their work; they are waited for and released afterwards.
 */
START_TEST(events_outlive_fleet)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    size_t basic, other[2];
    if (!test_find_basic(f, &basic, other, "events_outlive_fleet")) {
        clf_fleet_destroy(f);
        return;
    }
    static uint32_t in[N], back[N], back2[N], launched[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = lowbias32(i + 1);
    memset(back2, 0, sizeof back2);
    clf_program *p = build(f);
    clf_buffer *a, *b, *c, *d;
    ck_assert_ok(clf_buffer_create(&a, f, other[0], sizeof in, 0));
    ck_assert_ok(clf_buffer_create(&b, f, other[1], sizeof in, 0));
    ck_assert_ok(clf_buffer_create(&c, f, basic, sizeof in, 0));
    ck_assert_ok(clf_buffer_create(&d, f, other[0], sizeof in, 0));
    clf_event *w, *cp1, *cp2, *ln, *rd, *cp3;
    ck_assert_ok(clf_buffer_write_async(a, 0, sizeof in, in, &w));
    ck_assert_ok(clf_copy_async(b, 0, a, 0, sizeof in, &w, 1, &cp1));
    ck_assert_ok(clf_copy_async(c, 0, b, 0, sizeof in, &cp1, 1, &cp2));
    uint32_t add = 11;
    clf_arg args[] = {CLF_OUT(launched, sizeof launched, 4), CLF_SCALAR(&add)};
    clf_launch_desc desc = CLF_LAUNCH_DESC_INIT;
    desc.kernel = "fill";
    desc.global[0] = N;
    ck_assert_ok(clf_launch_async(f, p, &desc, args, 2, NULL, &ln));

    clf_fleet_destroy(f);
    clf_buffer_destroy(a); /* OpenCL keeps the memory until the copies are done */
    clf_buffer_destroy(b);
    ck_assert_ok(clf_event_wait(cp2));
    ck_assert_ok(clf_buffer_read(c, 0, sizeof back, back)); /* the fleet is still here */
    ck_assert_int_eq(memcmp(in, back, sizeof in), 0);
    ck_assert_ok(clf_buffer_read_async(c, 0, sizeof back2, back2, &rd));
    ck_assert_ok(clf_copy_async(d, 0, c, 0, sizeof in, &ln, 1, &cp3));
    clf_buffer_destroy(d);
    ck_assert_ok(clf_event_wait(ln)); /* the launch uses the program */
    clf_program_destroy(p);
    clf_buffer_destroy(c); /* the last child: the fleet goes */

    clf_event *all[] = {w, cp1, cp2, ln, rd, cp3};
    wait_release_all(all, sizeof all / sizeof *all);
    ck_assert_int_eq(memcmp(in, back2, sizeof in), 0);
    for (uint32_t i = 0; i < N; i++)
        expect(launched[i] == i * 3u + 11, "launch: element %u is %u", i, launched[i]);
}
END_TEST

/* The same on sub-devices (PoCL 3 must not see an event released after its sub-device): the
 * events are released after the teardown has released the sub-devices. */
START_TEST(events_outlive_split_fleet)
{
    clf_fleet *f = test_fleet(FLEET4, _i);
    static uint32_t in[N], back[N], launched[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = lowbias32(i + 5);
    memset(back, 0, sizeof back);
    clf_program *p = build(f);
    clf_buffer *a, *b;
    ck_assert_ok(clf_buffer_create(&a, f, 0, sizeof in, 0));
    ck_assert_ok(clf_buffer_create(&b, f, 1, sizeof in, 0));
    clf_event *w, *cp, *rd, *ln;
    ck_assert_ok(clf_buffer_write_async(a, 0, sizeof in, in, &w));
    ck_assert_ok(clf_copy_async(b, 0, a, 0, sizeof in, &w, 1, &cp));
    uint32_t add = 3;
    clf_arg args[] = {CLF_OUT(launched, sizeof launched, 4), CLF_SCALAR(&add)};
    clf_launch_desc desc = CLF_LAUNCH_DESC_INIT;
    desc.kernel = "fill";
    desc.global[0] = N;
    ck_assert_ok(clf_launch_async(f, p, &desc, args, 2, NULL, &ln));
    clf_fleet_destroy(f);
    ck_assert_ok(clf_event_wait(cp));
    ck_assert_ok(clf_buffer_read_async(b, 0, sizeof back, back, &rd));
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    ck_assert_ok(clf_event_wait(ln));
    clf_program_destroy(p); /* the last child: the fleet goes */
    clf_event *all[] = {w, cp, rd, ln};
    wait_release_all(all, sizeof all / sizeof *all);
    ck_assert_int_eq(memcmp(in, back, sizeof in), 0);
    for (uint32_t i = 0; i < N; i++)
        expect(launched[i] == i * 3u + 3, "launch: element %u is %u", i, launched[i]);
}
END_TEST

/* Every kind at once, the fleet first, the others in an order unlike their creation's. */
START_TEST(mixed_order)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    clf_program *p = build(f);
    clf_buffer *b0, *b1;
    ck_assert_ok(clf_buffer_create(&b0, f, 0, N * 4, 0));
    ck_assert_ok(clf_buffer_create(&b1, f, 1, N * 4, 0));
    clf_pipeline *pl = two_stages(f, p);
    clf_taskq *q = NULL;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    clf_fleet_destroy(f);

    uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = i ^ 0x5a5a5a5au;
    ck_assert_ok(clf_buffer_write(b1, 0, sizeof in, in));
    ck_assert_ok(clf_copy(b0, 0, b1, 0, sizeof in));
    clf_buffer_destroy(b1);
    run_taskq(q);
    clf_taskq_destroy(q);
    run_pipeline(pl);
    ck_assert_ok(clf_buffer_read(b0, 0, sizeof out, out));
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    clf_program_destroy(p);
    clf_pipeline_destroy(pl);
    clf_buffer_destroy(b0);
}
END_TEST

/* Threads use and destroy the buffers of a destroyed fleet at once: one of them, whichever
 * comes last, tears the fleet down. */
#define NTHREADS 4
#define PER_THREAD 4

typedef struct worker_arg {
    clf_buffer *b[PER_THREAD];
    uint32_t seed;
    int ok;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *w = arg;
    uint32_t in[64], out[64];
    w->ok = 1;
    for (int k = 0; k < PER_THREAD; k++) {
        for (uint32_t i = 0; i < 64; i++)
            in[i] = lowbias32(w->seed + (uint32_t)k * 64 + i);
        if (clf_buffer_write(w->b[k], 0, sizeof in, in) != CLF_SUCCESS ||
            clf_buffer_read(w->b[k], 0, sizeof out, out) != CLF_SUCCESS ||
            memcmp(in, out, sizeof in) != 0)
            w->ok = 0;
        clf_buffer_destroy(w->b[k]);
    }
    return NULL;
}

START_TEST(threads_destroy_children)
{
    test_watchdog(120);
    for (int round = 0; round < 3; round++) {
        clf_fleet *f = test_fleet(TEST_CPUS, _i);
        size_t n = clf_fleet_device_count(f);
        worker_arg w[NTHREADS];
        for (int t = 0; t < NTHREADS; t++) {
            w[t].seed = (uint32_t)(round * 1000 + t * 100);
            for (int k = 0; k < PER_THREAD; k++)
                ck_assert_ok(clf_buffer_create(&w[t].b[k], f, (size_t)(t + k) % n, 256, 0));
        }
        clf_fleet_destroy(f);
        pthread_t th[NTHREADS];
        for (int t = 0; t < NTHREADS; t++)
            ck_assert_int_eq(pthread_create(&th[t], NULL, worker, &w[t]), 0);
        for (int t = 0; t < NTHREADS; t++) {
            pthread_join(th[t], NULL);
            ck_assert_msg(w[t].ok, "thread %d: a round trip failed", t);
        }
    }
}
END_TEST

/* A collective builds the fleet's program and keeps scratch buffers: they belong to the
 * fleet, which goes with the user's last buffer (LSan reports the fleet if it does not). */
START_TEST(collective_after_fleet)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    clf_buffer *b[2];
    uint32_t x[2][N], out[N];
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < N; i++)
            x[k][i] = i * (uint32_t)(k + 1);
        ck_assert_ok(clf_buffer_create(&b[k], f, (size_t)k, sizeof x[k], 0));
        ck_assert_ok(clf_buffer_write(b[k], 0, sizeof x[k], x[k]));
    }
    clf_fleet_destroy(f);
    ck_assert_ok(clf_allreduce(b, 2, N, CLF_TYPE_UINT32, CLF_REDUCE_SUM, NULL));
    ck_assert_ok(clf_buffer_read(b[1], 0, sizeof out, out));
    for (uint32_t i = 0; i < N; i++)
        expect(out[i] == i * 3u, "allreduce: element %u is %u", i, out[i]);
    clf_buffer_destroy(b[1]);
    clf_buffer_destroy(b[0]);
}
END_TEST

/* The trace is written by the teardown: when the last child goes, not at clf_fleet_destroy(). */
START_TEST(trace_at_last_child)
{
    char path[256];
    snprintf(path, sizeof path, "%s/lifetime-trace-%d.json",
             getenv("CLFLEET_CACHE_DIR") ? getenv("CLFLEET_CACHE_DIR") : "/tmp", (int)getpid());
    unlink(path);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.trace = path;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    clf_buffer *b;
    uint32_t v = 1;
    ck_assert_ok(clf_buffer_create(&b, f, 0, sizeof v, 0));
    ck_assert_ok(clf_buffer_write(b, 0, sizeof v, &v));
    clf_fleet_destroy(f);
    struct stat sb;
    ck_assert_int_ne(stat(path, &sb), 0); /* still alive: not written yet */
    clf_buffer_destroy(b);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_gt(sb.st_size, 0);
    unlink(path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lifetime");
    TCase *tc = tcase_create("lifetime");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, test_watchdog_off);
    /* One context for every device, then one per device. */
    tcase_add_loop_test(tc, buffer_outlives_fleet, 0, 2);
    tcase_add_loop_test(tc, program_outlives_fleet, 0, 2);
    tcase_add_loop_test(tc, pipeline_outlives_fleet, 0, 2);
    tcase_add_loop_test(tc, taskq_outlives_fleet, 0, 2);
    tcase_add_loop_test(tc, events_outlive_fleet, 0, 2);
    tcase_add_loop_test(tc, events_outlive_split_fleet, 0, 2);
    tcase_add_loop_test(tc, mixed_order, 0, 2);
    tcase_add_loop_test(tc, threads_destroy_children, 0, 2);
    tcase_add_loop_test(tc, collective_after_fleet, 0, 2);
    tcase_add_test(tc, trace_at_last_child);
    suite_add_tcase(s, tc);
    return test_run(s, TEST_CPUS, 3);
}

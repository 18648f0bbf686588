/*
 * Synchronisation across devices: an event recorded on one device that another waits for,
 * in one shared context and with one context per device (user-event bridge); a
 * producer/consumer chain across three contexts repeated 100 times; a barrier where a
 * late device must be waited for; waiting for a host-side event (an asynchronous launch),
 * from clfleet's calls and from a raw command on the queue clf_cl_compute_queue() hands out;
 * one wait list that mixes launches, copies the host drives and OpenCL events; every bad
 * input.
 *
 * Ordering is checked by state, not by timing alone: when a device's marker completes, the
 * slow kernel it was told to wait for must have completed too, whereas without the wait
 * the marker completes while that kernel still runs.
 */
#include "common.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "clfleet/opencl.h"

static const char SRC[] =
    TEST_CL_LOWBIAS32
    /* Busy work converging to 1 (exactly, after some 25 steps): the output does not
     * depend on iters, and the start value keeps the compiler from folding the loop. */
    "float spin_for(int iters, float a)\n"
    "{\n"
    "    for (int k = 0; k < iters; k++) a = a * 0.5f + 0.5f;\n"
    "    return a;\n"
    "}\n"
    "__kernel void spin(__global float *out, int iters)\n"
    "{\n"
    "    out[get_global_id(0)] = spin_for(iters, (float)get_global_id(0));\n"
    "}\n"
    "__kernel void produce(__global uint *out, uint seed, int iters)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    float one = spin_for(iters, 1.0f + (float)(i & 1));\n"
    "    out[i] = lowbias32((uint)i ^ seed) + (uint)(one - 1.0f);\n"
    "}\n"
    "__kernel void consume(__global const uint *in, __global uint *out, uint add)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * 3u + add;\n"
    "}\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct rig {
    clf_fleet *f;
    clf_program *p;
    cl_kernel spin[4];
    clf_buffer *scratch[4];
    int iters; /* spin iterations for about 300 ms on one device */
} rig;

static void rig_up(rig *r, const char *sel, int per_device)
{
    memset(r, 0, sizeof *r);
    r->f = test_fleet(sel, per_device);
    ck_assert_uint_ge(clf_fleet_device_count(r->f), 3);
    ck_assert_ok(clf_program_build_source(&r->p, r->f, SRC, NULL));
    for (size_t d = 0; d < 3; d++) {
        cl_int err;
        r->spin[d] = clCreateKernel(clf_cl_program(r->p, d), "spin", &err);
        ck_assert_int_eq(err, CL_SUCCESS);
        ck_assert_ok(clf_buffer_create(&r->scratch[d], r->f, d, 64 * sizeof(float), 0));
    }
    r->iters = 1000;
}

static void rig_down(rig *r)
{
    for (size_t d = 0; d < 3; d++) {
        clReleaseKernel(r->spin[d]);
        clf_buffer_destroy(r->scratch[d]);
    }
    clf_program_destroy(r->p);
    clf_fleet_destroy(r->f);
}

/* Enqueue the slow kernel on device d's compute queue after event gate (or at once when
 * NULL); returns its event. */
static cl_event gated_spin(rig *r, size_t d, int iters, cl_event gate)
{
    cl_mem m = clf_cl_mem(r->scratch[d]);
    size_t g = 64;
    cl_event ev;
    ck_assert_int_eq(clSetKernelArg(r->spin[d], 0, sizeof m, &m), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(r->spin[d], 1, sizeof iters, &iters), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueNDRangeKernel(clf_cl_compute_queue(r->f, d), r->spin[d], 1, NULL,
                                            &g, NULL, gate ? 1 : 0, gate ? &gate : NULL, &ev),
                     CL_SUCCESS);
    clFlush(clf_cl_compute_queue(r->f, d));
    return ev;
}

static cl_event spin(rig *r, size_t d, int iters)
{
    return gated_spin(r, d, iters, NULL);
}

static int complete(cl_event ev)
{
    cl_int st = CL_QUEUED;
    ck_assert_int_eq(
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL), CL_SUCCESS);
    ck_assert_int_ge(st, CL_COMPLETE); /* no failure */
    return st == CL_COMPLETE;
}

/* Scale the slow kernel to about 300 ms on device 0. */
static void calibrate(rig *r)
{
    for (;;) {
        double t = now();
        cl_event ev = spin(r, 0, r->iters);
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
        t = now() - t;
        if (t > 0.05) {
            r->iters = (int)(r->iters * (0.3 / t));
            return;
        }
        r->iters *= 8;
    }
}

static void wait_release(clf_event *e)
{
    ck_assert_ok(clf_event_wait(e));
    clf_event_release(e);
}

/* ---- record and wait --------------------------------------------------------------------- */

START_TEST(record_and_wait)
{
    /* Devices 0 and 1 are sub-devices of one root device: PoCL runs them at once (sub-devices
     * of different roots share one worker pool). */
    rig r;
    rig_up(&r, FLEET4, _i);
    calibrate(&r);
    /* Without a wait, device 1's marker completes while device 0's work has not: that work
     * is held behind a user event until the marker is done (a timed race would fail on a
     * loaded host). A marker that waited for device 0 would hang: the watchdog says so. */
    cl_int err;
    cl_event gate = clCreateUserEvent(clf_cl_context(r.f, 0), &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_event k = gated_spin(&r, 0, r.iters, gate);
    clf_event *e;
    test_watchdog(120);
    ck_assert_ok(clf_event_record(&e, r.f, 1));
    wait_release(e);
    test_watchdog_off();
    ck_assert_msg(!complete(k), "device 0's held work ran before its user event completed");
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    ck_assert_int_eq(clWaitForEvents(1, &k), CL_SUCCESS);
    clReleaseEvent(k);
    clReleaseEvent(gate);

    /* With it, device 1 goes on only after device 0's recorded work. */
    k = spin(&r, 0, r.iters);
    clf_event *rec;
    ck_assert_ok(clf_event_record(&rec, r.f, 0));
    ck_assert_ok(clf_device_wait_events(r.f, 1, &rec, 1));
    clf_event_release(rec); /* the wait holds what it needs */
    ck_assert_ok(clf_event_record(&e, r.f, 1));
    wait_release(e);
    ck_assert_msg(complete(k), "device 1 went on before device 0's recorded work ended");
    clReleaseEvent(k);

    /* A launch on device 1 queued after the wait runs after device 0's work. */
    k = spin(&r, 0, r.iters);
    ck_assert_ok(clf_event_record(&rec, r.f, 0));
    ck_assert_ok(clf_device_wait_events(r.f, 1, &rec, 1));
    float out[64];
    const int one = 1;
    clf_arg args[] = {CLF_OUT(out, sizeof out, sizeof out[0]), CLF_SCALAR(&one)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    const size_t dev1 = 1;
    d.kernel = "spin";
    d.global[0] = 64;
    d.devices = &dev1;
    d.num_devices = 1;
    ck_assert_ok(clf_launch(r.f, r.p, &d, args, 2, NULL));
    ck_assert_msg(complete(k), "a launch on device 1 went on before device 0's work ended");
    clReleaseEvent(k);
    wait_release(rec);

    /* The other way round, to a device of the other root. */
    k = spin(&r, 2, r.iters);
    ck_assert_ok(clf_event_record(&rec, r.f, 2));
    ck_assert_ok(clf_device_wait_events(r.f, 0, &rec, 1));
    clf_event_release(rec);
    ck_assert_ok(clf_event_record(&e, r.f, 0));
    wait_release(e);
    ck_assert_msg(complete(k), "device 0 went on before device 2's recorded work ended");
    clReleaseEvent(k);

    ck_assert_ok(clf_device_finish(r.f, 2));
    ck_assert_ok(clf_fleet_finish(r.f));
    rig_down(&r);
}
END_TEST

/* ---- barrier ----------------------------------------------------------------------------- */

START_TEST(barrier_waits_for_the_late_device)
{
    rig r;
    rig_up(&r, FLEET4, _i);
    calibrate(&r);
    const size_t devs[3] = {2, 0, 1};
    for (size_t late = 0; late < 3; late++) {
        cl_event slow = spin(&r, devs[late], r.iters);
        cl_event quick[3];
        for (size_t i = 0; i < 3; i++)
            quick[i] = spin(&r, devs[i], 1);
        clf_event *all;
        ck_assert_ok(clf_barrier(r.f, devs, 3, &all));
        clf_event *after[3];
        for (size_t i = 0; i < 3; i++)
            ck_assert_ok(clf_event_record(&after[i], r.f, devs[i]));
        for (size_t i = 0; i < 3; i++) {
            wait_release(after[i]);
            ck_assert_msg(complete(slow), "device %zu passed the barrier before late device %zu",
                          devs[i], devs[late]);
        }
        wait_release(all);
        for (size_t i = 0; i < 3; i++) {
            ck_assert(complete(quick[i]));
            clReleaseEvent(quick[i]);
        }
        clReleaseEvent(slow);
    }
    /* Every device of the fleet (devices NULL), no event. */
    cl_event slow = spin(&r, 1, r.iters);
    ck_assert_ok(clf_barrier(r.f, NULL, 0, NULL));
    clf_event *e;
    ck_assert_ok(clf_event_record(&e, r.f, 3));
    wait_release(e);
    ck_assert(complete(slow));
    clReleaseEvent(slow);
    rig_down(&r);
}
END_TEST

/* ---- producer / consumer ------------------------------------------------------------------ */

/* Kernel k on device d: (bufs..., scalars...) as given; returns nothing, ordered by waits. */
static void run_kernel(rig *r, size_t d, const char *name, clf_buffer *a, clf_buffer *b,
                       uint32_t u, int iters, size_t n)
{
    cl_int err;
    cl_kernel k = clCreateKernel(clf_cl_program(r->p, d), name, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem ma = clf_cl_mem(a);
    clSetKernelArg(k, 0, sizeof ma, &ma);
    if (b) {
        cl_mem mb = clf_cl_mem(b);
        clSetKernelArg(k, 1, sizeof mb, &mb);
        clSetKernelArg(k, 2, sizeof u, &u);
    } else {
        clSetKernelArg(k, 1, sizeof u, &u);
        clSetKernelArg(k, 2, sizeof iters, &iters);
    }
    ck_assert_int_eq(clEnqueueNDRangeKernel(clf_cl_compute_queue(r->f, d), k, 1, NULL, &n, NULL,
                                            0, NULL, NULL),
                     CL_SUCCESS);
    clFlush(clf_cl_compute_queue(r->f, d));
    clReleaseKernel(k);
}

/*
 * Device 0 produces, device 1 transforms, device 2 transforms again; every hop is an event
 * recorded on one device, a copy that waits for it, and a device that waits for the copy.
 * No host wait inside an iteration: a missing wait shows as last iteration's data.
 */
START_TEST(producer_consumer_chain)
{
    rig r;
    rig_up(&r, FLEET4, _i);
    const size_t n = 4099;
    clf_buffer *prod, *in1, *out1, *in2, *out2;
    ck_assert_ok(clf_buffer_create(&prod, r.f, 0, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&in1, r.f, 1, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&out1, r.f, 1, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&in2, r.f, 2, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&out2, r.f, 2, n * 4, 0));
    uint32_t *back = malloc(n * 4);
    for (uint32_t it = 0; it < 100; it++) {
        run_kernel(&r, 0, "produce", prod, NULL, it * 7919u, 2000, n);
        clf_event *e0, *c1, *e1, *c2, *e2;
        ck_assert_ok(clf_event_record(&e0, r.f, 0));
        ck_assert_ok(clf_copy_async(in1, 0, prod, 0, n * 4, &e0, 1, &c1));
        ck_assert_ok(clf_device_wait_events(r.f, 1, &c1, 1));
        run_kernel(&r, 1, "consume", in1, out1, it, 0, n);
        ck_assert_ok(clf_event_record(&e1, r.f, 1));
        ck_assert_ok(clf_copy_async(in2, 0, out1, 0, n * 4, &e1, 1, &c2));
        ck_assert_ok(clf_device_wait_events(r.f, 2, &c2, 1));
        run_kernel(&r, 2, "consume", in2, out2, 5, 0, n);
        ck_assert_ok(clf_event_record(&e2, r.f, 2));
        wait_release(e2);
        ck_assert_ok(clf_buffer_read(out2, 0, n * 4, back));
        for (size_t i = 0; i < n; i++) {
            uint32_t want = (lowbias32((uint32_t)i ^ (it * 7919u)) * 3u + it) * 3u + 5u;
            if (back[i] != want)
                ck_abort_msg("iteration %u element %zu: %u, expected %u", it, i, back[i], want);
        }
        clf_event *done[5] = {e0, c1, e1, c2, NULL};
        ck_assert_ok(clf_events_wait(done, 4));
        for (int k = 0; k < 4; k++)
            clf_event_release(done[k]);
    }
    free(back);
    clf_buffer_destroy(prod);
    clf_buffer_destroy(in1);
    clf_buffer_destroy(out1);
    clf_buffer_destroy(in2);
    clf_buffer_destroy(out2);
    rig_down(&r);
}
END_TEST

/* A device waits for a host-side event: an asynchronous launch on another device. */
START_TEST(wait_for_a_launch)
{
    rig r;
    rig_up(&r, FLEET4, _i);
    const size_t n = 1 << 16;
    uint32_t *out = calloc(n, 4);
    const uint32_t seed = 77;
    const int iters = 3000;
    clf_arg args[] = {CLF_OUT(out, n * 4, 4), CLF_SCALAR(&seed), CLF_SCALAR(&iters)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    const size_t dev0 = 0;
    d.kernel = "produce";
    d.global[0] = n;
    d.devices = &dev0;
    d.num_devices = 1;
    clf_event *launch;
    ck_assert_ok(clf_launch_async(r.f, r.p, &d, args, 3, NULL, &launch));
    ck_assert_ok(clf_device_wait_events(r.f, 2, &launch, 1));
    clf_event *e;
    ck_assert_ok(clf_event_record(&e, r.f, 2));
    wait_release(e);
    /* The launch is complete, results on the host, once device 2 went on. */
    for (size_t i = 0; i < n; i++)
        if (out[i] != lowbias32((uint32_t)i ^ seed))
            ck_abort_msg("element %zu not written when device 2 went on", i);
    wait_release(launch);
    free(out);
    rig_down(&r);
}
END_TEST

/* ---- a raw command that waits for a launch, on the queue clfleet hands out -------------- */

/*
 * 200 asynchronous launches on devices 0 and 1 (sub-devices of one root), each followed by a
 * one-item kernel that the caller enqueues on device 0's clf_cl_compute_queue(), waiting
 * through clf_event_cl_for() for that launch. The launch's chunks are enqueued later, by the
 * fleet's dispatcher: when that queue was the one clfleet enqueues its launches on, they
 * queued behind the caller's kernel, which waited for them, and nothing ever finished. The
 * watchdog turns such a hang into a failure. Loop: shared context, then one per device.
 */
START_TEST(raw_wait_for_a_launch_on_the_handed_out_queue)
{
    rig r;
    rig_up(&r, FLEET4, _i);
    enum { ROUNDS = 200, N = 4096 };
    uint32_t *out = calloc(N, 4);
    ck_assert_ptr_nonnull(out);
    const int iters = 4, one_iter = 1;
    const size_t devs[2] = {0, 1}, one = 1;
    cl_command_queue q = clf_cl_compute_queue(r.f, 0);
    ck_assert_ptr_nonnull(q);
    cl_mem m = clf_cl_mem(r.scratch[0]);
    ck_assert_int_eq(clSetKernelArg(r.spin[0], 0, sizeof m, &m), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(r.spin[0], 1, sizeof one_iter, &one_iter), CL_SUCCESS);
    test_watchdog(120);
    for (uint32_t round = 0; round < ROUNDS; round++) {
        const uint32_t seed = round;
        clf_arg args[] = {CLF_OUT(out, N * 4, 4), CLF_SCALAR(&seed), CLF_SCALAR(&iters)};
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "produce";
        d.global[0] = N;
        d.devices = devs;
        d.num_devices = 2;
        clf_event *launch;
        ck_assert_ok(clf_launch_async(r.f, r.p, &d, args, 3, NULL, &launch));
        cl_event ready, k;
        ck_assert_ok(clf_event_cl_for(launch, r.f, 0, &ready));
        ck_assert_int_eq(clEnqueueNDRangeKernel(q, r.spin[0], 1, NULL, &one, NULL, 1, &ready, &k),
                         CL_SUCCESS);
        clReleaseEvent(ready);
        clFlush(q);
        ck_assert_int_eq(clWaitForEvents(1, &k), CL_SUCCESS);
        clReleaseEvent(k);
        wait_release(launch);
        for (size_t i = 0; i < N; i += 1 + i % 61)
            if (out[i] != lowbias32((uint32_t)i ^ seed))
                ck_abort_msg("round %u: element %zu is %u", round, i, out[i]);
    }
    test_watchdog_off();
    free(out);
    rig_down(&r);
}
END_TEST

/* ---- many launches in device commands' wait lists: no thread per wait (issue 26) ------- */

/* The process's threads now: the entries of /proc/self/task. */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_msg(d != NULL, "cannot count threads: /proc/self/task");
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The helper pool's bound, as lib/util/pool.c reads it. */
static int pool_bound(void)
{
    const char *v = getenv("CLFLEET_THREADPOOL_SIZE");
    return v && *v ? atoi(v) : 4;
}

/*
 * 200 asynchronous launches on devices 0 and 1, each followed by a kernel on device 2
 * (clf_kernel_enqueue()) that waits for that launch through its wait list. A bridge thread per
 * wait (as there was) added up to 200 threads while the launches were queued; now the launch's
 * completion sets the device command's user event, and the launches run on the fleet's
 * per-device workers and the process's helper pool. The count is taken after a warm-up that
 * made the workers and the driver's threads, at its peak (every launch queued, most still
 * waiting) and at the end; each kernel's result is checked (it copies its launch's output).
 */
START_TEST(many_launches_in_wait_lists_add_no_thread_each)
{
    rig r;
    rig_up(&r, FLEET4, _i);
    enum { ROUNDS = 200, N = 256 };
    const int iters = 200;
    const size_t devs[2] = {0, 1};
    uint32_t *out = calloc((size_t)ROUNDS * N, 4);
    uint32_t *back = calloc((size_t)ROUNDS * N, 4);
    clf_buffer **bin = calloc(ROUNDS, sizeof *bin), **bout = calloc(ROUNDS, sizeof *bout);
    clf_event **launch = calloc(ROUNDS, sizeof *launch), **k = calloc(ROUNDS, sizeof *k);
    uint32_t *seeds = calloc(ROUNDS, sizeof *seeds);
    ck_assert(out && back && bin && bout && launch && k && seeds);
    for (int i = 0; i < ROUNDS; i++) {
        ck_assert_ok(clf_buffer_create(&bin[i], r.f, 2, N * 4, 0));
        ck_assert_ok(clf_buffer_create(&bout[i], r.f, 2, N * 4, 0));
        ck_assert_ok(clf_buffer_write(bin[i], 0, N * 4, back)); /* zeros */
        seeds[i] = (uint32_t)i * 7919u;
    }
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "produce";
    d.global[0] = N;
    d.devices = devs;
    d.num_devices = 2;
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = "consume";
    kd.global[0] = N;
    const uint32_t add = 5;
    /* Warm-up: the same shape once, waited for. */
    {
        clf_event *w;
        clf_arg la[] = {CLF_OUT(out, N * 4, 4), CLF_SCALAR(&seeds[0]), CLF_SCALAR(&iters)};
        ck_assert_ok(clf_launch_async(r.f, r.p, &d, la, 3, NULL, &w));
        clf_arg ka[] = {CLF_BUF_IN(bin[0]), CLF_BUF_OUT(bout[0]), CLF_SCALAR(&add)};
        clf_event *we;
        ck_assert_ok(clf_kernel_enqueue(r.f, r.p, 2, &kd, ka, 3, &w, 1, &we));
        wait_release(we);
        wait_release(w);
    }
    int before = count_threads();
    test_watchdog(120);
    for (int i = 0; i < ROUNDS; i++) {
        clf_arg la[] = {CLF_OUT(out + (size_t)i * N, N * 4, 4), CLF_SCALAR(&seeds[i]),
                        CLF_SCALAR(&iters)};
        ck_assert_ok(clf_launch_async(r.f, r.p, &d, la, 3, NULL, &launch[i]));
        /* The kernel reads a buffer the launch does not write: the wait list alone orders
         * them (checked below by the launch's output on the host). */
        clf_arg ka[] = {CLF_BUF_IN(bin[i]), CLF_BUF_OUT(bout[i]), CLF_SCALAR(&add)};
        ck_assert_ok(clf_kernel_enqueue(r.f, r.p, 2, &kd, ka, 3, &launch[i], 1, &k[i]));
    }
    int peak = count_threads();
    for (int i = 0; i < ROUNDS; i++) {
        ck_assert_ok(clf_event_wait(k[i]));
        /* The launch is complete, its results on the host, once the kernel has run. */
        for (size_t j = 0; j < N; j++)
            if (out[(size_t)i * N + j] != lowbias32((uint32_t)j ^ seeds[i]))
                ck_abort_msg("round %d: element %zu not written when the kernel that waited "
                             "for its launch had run", i, j);
        ck_assert_ok(clf_buffer_read(bout[i], 0, N * 4, back + (size_t)i * N));
    }
    int after = count_threads();
    test_watchdog_off();
    ck_assert_msg(peak - before <= pool_bound() && after - before <= pool_bound(),
                  "%d threads after the warm-up, %d with %d launches in wait lists, %d after: "
                  "more than the helper pool's %d added",
                  before, peak, ROUNDS, after, pool_bound());
    /* The kernels ran: consume of bin's zeros gives add. */
    for (int i = 0; i < ROUNDS; i++)
        for (size_t j = 0; j < N; j += 1 + j % 17)
            ck_assert_msg(back[(size_t)i * N + j] == add, "round %d: kernel element %zu", i, j);
    for (int i = 0; i < ROUNDS; i++) {
        clf_event_release(k[i]);
        clf_event_release(launch[i]);
        clf_buffer_destroy(bin[i]);
        clf_buffer_destroy(bout[i]);
    }
    free(out);
    free(back);
    free(bin);
    free(bout);
    free(launch);
    free(k);
    free(seeds);
    rig_down(&r);
}
END_TEST

/* ---- a host-driven copy that a device waits for ------------------------------------------ */

/*
 * A staged copy into device 1 whose wait list has not completed (a slow launch on device
 * 2), device 1 told to wait for the copy, then a launch on device 1: the launch's result
 * reads queue behind its kernel, which waits for the copy. The copy's commands must not
 * queue behind those reads (they did: nothing moved). Loop: shared context, then one
 * context per device; with both the staged copy's slot pipeline and a single slot; then
 * the same with PoCL's basic device as device 1 and every path allowed (it hung there, and
 * read stale data), followed by a barrier across all devices.
 */
START_TEST(copy_then_launch)
{
    const int per_device = _i & 1, big = (_i >> 1) & 1, basic = _i >> 2;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = basic ? TEST_CPUS : FLEET4;
    o.context_per_device = per_device;
    o.transfer = basic ? "auto" : "staged";
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    /* Devices 0 (source), 1 (destination, waits) and 2 (the slow launch). */
    size_t dev0 = 0, dev1 = 1, dev2 = 2, nd = clf_fleet_device_count(f);
    ck_assert_uint_ge(nd, 3);
    if (basic) {
        size_t others[2];
        if (!test_find_basic(f, &dev1, others, "copy_then_launch")) {
            clf_fleet_destroy(f);
            return;
        }
        dev0 = others[0];
        dev2 = others[1];
    } else {
        clf_path path;
        ck_assert_ok(clf_transfer_path(&path, NULL, f, 0, 1));
        ck_assert_int_eq(path, CLF_PATH_STAGED);
    }
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    const size_t count = big ? (size_t)3 << 20 : 1000; /* 12 MiB: three staging chunks */
    uint32_t *src = malloc(count * 4), *back = calloc(count, 4);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(back);
    for (size_t i = 0; i < count; i++)
        src[i] = lowbias32((uint32_t)i ^ 5u);
    clf_buffer *a = NULL, *b = NULL;
    ck_assert_ok(clf_buffer_create(&a, f, dev0, count * 4, 0));
    ck_assert_ok(clf_buffer_create(&b, f, dev1, count * 4, 0));
    ck_assert_ok(clf_buffer_write(a, 0, count * 4, src));

    test_watchdog(600);
    const size_t n = 1 << 14;
    uint32_t *slow_out = calloc(n, 4), *out = calloc(n, 4);
    const uint32_t seed = 9;
    const int slow_iters = 200000, iters = 10;
    clf_arg slow_args[] = {CLF_OUT(slow_out, n * 4, 4), CLF_SCALAR(&seed),
                           CLF_SCALAR(&slow_iters)};
    clf_arg args[] = {CLF_OUT(out, n * 4, 4), CLF_SCALAR(&seed), CLF_SCALAR(&iters)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "produce";
    d.global[0] = n;
    d.devices = &dev2;
    d.num_devices = 1;
    clf_event *slow = NULL, *copied = NULL;
    ck_assert_ok(clf_launch_async(f, p, &d, slow_args, 3, NULL, &slow));
    ck_assert_ok(clf_copy_async(b, 0, a, 0, count * 4, &slow, 1, &copied));
    ck_assert_ok(clf_device_wait_events(f, dev1, &copied, 1));
    d.devices = &dev1;
    ck_assert_ok(clf_launch(f, p, &d, args, 3, NULL));
    ck_assert_ok(clf_buffer_read(b, 0, count * 4, back));
    if (basic) {
        clf_event *all = NULL;
        ck_assert_ok(clf_barrier(f, NULL, 0, &all));
        wait_release(all);
    }

    /* The slow launch (the copy's wait list) was done, its results on the host, before
     * device 1 ran: the copy waited for it, and device 1 for the copy. */
    for (size_t i = 0; i < n; i++)
        if (slow_out[i] != lowbias32((uint32_t)i ^ seed) || out[i] != slow_out[i])
            ck_abort_msg("element %zu: slow launch not done, or wrong", i);
    ck_assert_mem_eq(back, src, count * 4);
    wait_release(copied);
    wait_release(slow);
    free(slow_out);
    free(out);
    free(src);
    free(back);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- one wait list of every kind -------------------------------------------------------- */

/*
 * One wait list that mixes the kinds of event: an asynchronous launch and a copy the host
 * drives (staged; its own wait list holds the launch), both host-side completions, and a
 * marker recorded on another device (an OpenCL event, of another context in the loop's
 * second run). A kernel waits for the list and reads what the copy wrote; a device told to
 * wait for the same list (clf_device_wait_events()) goes on only after the launch, whose
 * results are then on the host. Last, a launch's event released before the launch has run:
 * the release waits for it, since the launch writes the caller's array.
 */
START_TEST(one_wait_list_mixes_every_kind)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = FLEET4;
    o.context_per_device = _i;
    o.transfer = "staged";
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_uint_ge(clf_fleet_device_count(f), 3);
    clf_path path;
    ck_assert_ok(clf_transfer_path(&path, NULL, f, 0, 1));
    ck_assert_int_eq(path, CLF_PATH_STAGED); /* the host drives the copy */
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    test_watchdog(300);
    const size_t n = 1 << 14;
    uint32_t *src = malloc(n * 4), *slow_out = calloc(n, 4), *back = calloc(n, 4);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(slow_out);
    ck_assert_ptr_nonnull(back);
    for (size_t i = 0; i < n; i++)
        src[i] = lowbias32((uint32_t)i ^ 11u);
    clf_buffer *a = NULL, *b = NULL, *c = NULL;
    ck_assert_ok(clf_buffer_create(&a, f, 0, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&b, f, 1, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&c, f, 1, n * 4, 0));
    ck_assert_ok(clf_buffer_write(a, 0, n * 4, src));

    const uint32_t seed = 3, add = 7;
    const int slow_iters = 200000;
    clf_arg slow_args[] = {CLF_OUT(slow_out, n * 4, 4), CLF_SCALAR(&seed),
                           CLF_SCALAR(&slow_iters)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    const size_t dev2 = 2;
    d.kernel = "produce";
    d.global[0] = n;
    d.devices = &dev2;
    d.num_devices = 1;
    clf_event *w[3] = {NULL, NULL, NULL}, *k = NULL, *after = NULL;
    ck_assert_ok(clf_launch_async(f, p, &d, slow_args, 3, NULL, &w[0]));
    ck_assert_ok(clf_copy_async(b, 0, a, 0, n * 4, &w[0], 1, &w[1]));
    ck_assert_ok(clf_event_record(&w[2], f, 0));
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = "consume";
    kd.global[0] = n;
    clf_arg ka[] = {CLF_BUF_IN(b), CLF_BUF_OUT(c), CLF_SCALAR(&add)};
    ck_assert_ok(clf_kernel_enqueue(f, p, 1, &kd, ka, 3, w, 3, &k));
    ck_assert_ok(clf_device_wait_events(f, 0, w, 3));
    ck_assert_ok(clf_event_record(&after, f, 0));
    wait_release(after);
    for (size_t i = 0; i < n; i++)
        if (slow_out[i] != lowbias32((uint32_t)i ^ seed))
            ck_abort_msg("element %zu: the launch not done when device 0 went on", i);
    wait_release(k);
    ck_assert_ok(clf_buffer_read(c, 0, n * 4, back));
    for (size_t i = 0; i < n; i++)
        if (back[i] != src[i] * 3u + add)
            ck_abort_msg("element %zu: %u, want %u (the kernel ran before the copy)", i,
                         back[i], src[i] * 3u + add);
    for (size_t i = 0; i < 3; i++)
        wait_release(w[i]);

    /* Released at once: the release returns only once the launch has written the array. */
    memset(slow_out, 0, n * 4);
    ck_assert_ok(clf_launch_async(f, p, &d, slow_args, 3, NULL, &w[0]));
    clf_event_release(w[0]);
    for (size_t i = 0; i < n; i++)
        if (slow_out[i] != lowbias32((uint32_t)i ^ seed))
            ck_abort_msg("element %zu: the launch not done when its event was released", i);
    test_watchdog_off();
    free(src);
    free(slow_out);
    free(back);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    clf_buffer_destroy(c);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- bad input --------------------------------------------------------------------------- */

START_TEST(bad_input)
{
    clf_fleet *f = test_fleet(FLEET4, 0);
    size_t n = clf_fleet_device_count(f);
    clf_event *e = (clf_event *)f;
    ck_assert_status(clf_event_record(NULL, f, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_event_record(&e, NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(e);
    ck_assert_status(clf_event_record(&e, f, n), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ok(clf_event_record(&e, f, 0));
    ck_assert_status(clf_device_wait_events(NULL, 0, &e, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_device_wait_events(f, n, &e, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_device_wait_events(f, 0, NULL, 1), CLF_ERROR_NULL_POINTER);
    clf_event *with_null[2] = {e, NULL};
    ck_assert_status(clf_device_wait_events(f, 1, with_null, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_device_wait_events(f, 1, NULL, 0)); /* nothing to wait for */
    ck_assert_ok(clf_device_wait_events(f, 1, &e, 1));
    const size_t twice[2] = {1, 1}, out_of_range[2] = {0, 99};
    clf_event *b = (clf_event *)f;
    ck_assert_status(clf_barrier(NULL, NULL, 0, &b), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(b);
    ck_assert_status(clf_barrier(f, twice, 2, NULL), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_barrier(f, out_of_range, 2, NULL), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_barrier(f, twice, 0, NULL), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_barrier(f, twice, 1, NULL)); /* one device: a barrier with itself */
    ck_assert_status(clf_device_finish(NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_device_finish(f, n), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_events_wait(NULL, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_events_wait(with_null, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_events_wait(NULL, 0));
    ck_assert_ok(clf_events_wait(&e, 1));
    clf_event_release(e);
    clf_fleet_destroy(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync");
    TCase *tc = tcase_create("sync");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, NULL, test_watchdog_off);
    tcase_add_loop_test(tc, record_and_wait, 0, 2);
    tcase_add_loop_test(tc, barrier_waits_for_the_late_device, 0, 2);
    tcase_add_loop_test(tc, producer_consumer_chain, 0, 2);
    tcase_add_loop_test(tc, wait_for_a_launch, 0, 2);
    tcase_add_loop_test(tc, raw_wait_for_a_launch_on_the_handed_out_queue, 0, 2);
    tcase_add_loop_test(tc, copy_then_launch, 0, 8);
    tcase_add_loop_test(tc, many_launches_in_wait_lists_add_no_thread_each, 0, 2);
    tcase_add_loop_test(tc, one_wait_list_mixes_every_kind, 0, 2);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET4, 4);
}

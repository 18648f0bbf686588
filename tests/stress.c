/*
 * stress: drive one fleet hard and check every result against plain C.
 *
 *   stress [--rounds N] [--mixed] [--threads T] [--pingpong STEPS] [--seed S]
 *          [--timeout SECONDS] [--expect-cached]
 *
 * The fleet is the default one: set the devices with POCL_DEVICES and CLFLEET_DEVICES
 * (tests/test_matrix.sh runs it on every PoCL configuration people use). Each round runs,
 * in order, launches with every strategy (a Mandelbrot image and another 2D out-only
 * kernel of uneven cost, and a 1D in/out one), a halo
 * exchange between the devices (kernels through the OpenCL interop, then clf_copy_async()
 * of the boundary rows with the kernels' events as wait lists, then clf_fleet_finish()),
 * copies both ways between every pair of devices, an all-reduce, a pipeline over the
 * devices and a task queue. With --mixed, each round is one of those picked at random
 * instead, with random sizes. With --threads T (and --mixed), T host threads each run
 * --rounds random operations on the one fleet at once, array steps among them: launches
 * next to pipelines, copies, halo exchanges, task queues and collectives, the mix that once
 * deadlocked on PoCL's basic device. A watchdog ends the run if one operation takes longer
 * than the timeout, naming it (every thread's, with --threads). With --pingpong STEPS, the
 * run is one halo ping-pong of STEPS steps between devices 0 and 1 (interop kernels and
 * clf_copy_async() waiting for each other, no host synchronisation between steps). With
 * --expect-cached, every device's program must come from
 * clfleet's binary cache (a second process, after a first one built it).
 *
 * Prints one line per kind of operation, and exits 0 when every result matched, 1 on a
 * wrong result, a failed call or a hang, 2 on bad usage, 77 without devices (unless
 * CLFLEET_REQUIRE_DEVICES=1).
 */
#include "clfleet/opencl.h"
#include "common.h" /* lowbias32, xorshift64, test_devices_required (not Check itself) */

#include <pthread.h>

#define mix lowbias32

/* The array steps' kernels, apart: their get_global_size() gives every kernel of their
 * program a hidden range parameter, which the interop kernel "inc" must not have. */
static const char JACOBI[] = TEST_CL_JACOBI;

static const char SOURCE[] = TEST_CL_LOWBIAS32
    "#define mix lowbias32\n"
    "__kernel void grid(__global uint *out, uint width, uint seed, uint iters)\n"
    "{\n"
    "    uint x = get_global_id(0), y = get_global_id(1);\n"
    "    uint v = x ^ (y << 16) ^ seed;\n"
    "    for (uint k = 0; k < iters * (1 + y % 4); k++)\n"
    "        v = mix(v + k);\n"
    "    out[y * width + x] = v;\n"
    "}\n"
    "__kernel void scale(__global const uint *in, __global uint *out, uint a)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = mix(in[i]) * a + (uint)i;\n"
    "}\n"
    "__kernel void mandel(__global uint *out, int width, long x0, long y0, long step,\n"
    "                     int max_iter)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    long cr = x0 + x * step, ci = y0 + y * step, zr = 0, zi = 0;\n"
    "    int i = 0;\n"
    "    for (; i < max_iter; i++) {\n"
    "        long zr2 = zr * zr / (1L << 28), zi2 = zi * zi / (1L << 28);\n"
    "        if (zr2 + zi2 > 4 * (1L << 28))\n"
    "            break;\n"
    "        zi = 2 * zr * zi / (1L << 28) + ci;\n"
    "        zr = zr2 - zi2 + cr;\n"
    "    }\n"
    "    out[y * width + x] = i;\n"
    "}\n"
    "__kernel void inc(__global const uint *in, __global uint *out, uint add)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] + add;\n"
    "}\n";

/* Each thread its own generator (--threads): the sequence of one seed stays reproducible. */
static _Thread_local uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    return (uint32_t)(xorshift64(&rng) % n);
}

/* ---- the watchdog ---- */

#define MAX_THREADS 8

/* What each thread is doing; the main thread is slot 0 without --threads. */
static const char *volatile doing[MAX_THREADS] = {"start-up"};
static _Thread_local unsigned slot;
#define current doing[slot]

static void watchdog_fired(int sig)
{
    (void)sig;
    for (unsigned t = 0; t < MAX_THREADS; t++) {
        const char *c = doing[t];
        if (!c)
            continue;
        const char *a = "stress: HANG: no progress in '";
        ssize_t w = write(2, a, strlen(a));
        w = write(2, c, strlen(c));
        w = write(2, "' before the watchdog fired\n", 28);
        (void)w;
    }
    _exit(1);
}

/* ---- counting ---- */

enum {
    OP_LAUNCH,
    OP_HALO,
    OP_COPY,
    OP_ALLREDUCE,
    OP_PIPELINE,
    OP_TASKQ,
    OP_ARRAY,
    OP_PINGPONG,
    NOPS
};
static const char *const op_names[NOPS] = {"launch", "halo",  "copy",  "allreduce",
                                           "pipeline", "taskq", "array", "ping-pong"};
static unsigned long done[NOPS], wrong[NOPS];

static int failed_call(clf_status st, const char *what)
{
    if (st == CLF_SUCCESS)
        return 0;
    fprintf(stderr, "stress: %s: %s: %s\n", what, clf_status_name(st), clf_last_error());
    return 1;
}

/* ---- operations: each returns 0 when the result matched ---- */

typedef struct ctx {
    clf_fleet *f;
    clf_program *p, *jacobi;
    size_t ndev;
} ctx;

static clf_status new_buffer(ctx *c, size_t device, size_t bytes, clf_buffer **out)
{
    return clf_buffer_create(out, c->f, device, bytes, CLF_MEM_READ_WRITE);
}

static const clf_strategy strategies[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};

static int op_launch_grid(ctx *c, clf_strategy s, uint32_t w, uint32_t h, uint32_t seed)
{
    uint32_t iters = 8;
    size_t n = (size_t)w * h;
    uint32_t *out = malloc(n * sizeof *out);
    int bad = 0;
    if (!out)
        return 1;
    memset(out, 0xab, n * sizeof *out);
    clf_arg a[] = {CLF_OUT(out, n * sizeof *out, w * sizeof *out), CLF_SCALAR(&w),
                   CLF_SCALAR(&seed), CLF_SCALAR(&iters)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "grid";
    d.dims = 2;
    d.global[0] = w;
    d.global[1] = h;
    d.strategy = s;
    if (failed_call(clf_launch(c->f, c->p, &d, a, 4, NULL), "clf_launch grid"))
        bad = 1;
    for (uint32_t y = 0; !bad && y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t v = x ^ (y << 16) ^ seed;
            for (uint32_t k = 0; k < iters * (1 + y % 4); k++)
                v = mix(v + k);
            if (out[(size_t)y * w + x] != v) {
                fprintf(stderr, "stress: grid (%s) wrong at (%u, %u)\n", clf_strategy_name(s),
                        x, y);
                bad = 1;
                break;
            }
        }
    free(out);
    return bad;
}

/* The Mandelbrot set in 28-bit fixed point (exact, so bit for bit), as
 * examples/mandelbrot.c: rows split over the devices with a local size of 64 x 1. */
enum { MB_W = 256, MB_H = 160, MB_ITER = 192 };
#define MB_ONE ((int64_t)1 << 28)

static int op_launch_mandel(ctx *c, clf_strategy s)
{
    /* Each thread its own (--threads). */
    static _Thread_local uint32_t ref[MB_H][MB_W], img[MB_H][MB_W];
    static _Thread_local int have_ref;
    int64_t step = (7 * MB_ONE / 2) / MB_W, x0 = -9 * MB_ONE / 4, y0 = -3 * MB_ONE / 2;
    int width = MB_W, max_iter = MB_ITER;
    for (int y = 0; !have_ref && y < MB_H; y++)
        for (int x = 0; x < MB_W; x++) {
            int64_t cr = x0 + x * step, ci = y0 + y * step, zr = 0, zi = 0;
            int i = 0;
            for (; i < MB_ITER; i++) {
                int64_t zr2 = zr * zr / MB_ONE, zi2 = zi * zi / MB_ONE;
                if (zr2 + zi2 > 4 * MB_ONE)
                    break;
                zi = 2 * zr * zi / MB_ONE + ci;
                zr = zr2 - zi2 + cr;
            }
            ref[y][x] = (uint32_t)i;
        }
    have_ref = 1;
    memset(img, 0xff, sizeof img);
    clf_arg a[] = {CLF_OUT(img, sizeof img, sizeof img[0]), CLF_SCALAR(&width), CLF_SCALAR(&x0),
                   CLF_SCALAR(&y0), CLF_SCALAR(&step), CLF_SCALAR(&max_iter)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "mandel";
    d.dims = 2;
    d.global[0] = MB_W;
    d.global[1] = MB_H;
    d.local[0] = 64;
    d.local[1] = 1;
    d.strategy = s;
    if (failed_call(clf_launch(c->f, c->p, &d, a, 6, NULL), "clf_launch mandel"))
        return 1;
    if (memcmp(img, ref, sizeof img) != 0) {
        fprintf(stderr, "stress: Mandelbrot (%s) differs from the C loop\n",
                clf_strategy_name(s));
        return 1;
    }
    return 0;
}

static int op_launch_scale(ctx *c, clf_strategy s, size_t n, uint32_t a)
{
    uint32_t *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    int bad = !in || !out;
    for (size_t i = 0; !bad && i < n; i++) {
        in[i] = (uint32_t)(i * 2654435761u);
        out[i] = 0xdeadbeef;
    }
    clf_arg args[] = {CLF_IN(in, n * sizeof *in, sizeof *in),
                      CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&a)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "scale";
    d.global[0] = n;
    d.strategy = s;
    if (!bad && failed_call(clf_launch(c->f, c->p, &d, args, 3, NULL), "clf_launch scale"))
        bad = 1;
    for (size_t i = 0; !bad && i < n; i++)
        if (out[i] != mix(in[i]) * a + (uint32_t)i) {
            fprintf(stderr, "stress: scale (%s) wrong at %zu\n", clf_strategy_name(s), i);
            bad = 1;
        }
    free(in);
    free(out);
    return bad;
}

/* A kernel through the interop header on device d's compute queue: buf[off + i] += add for
 * i < n, in place, after the clfleet events wait[0 .. nwait) (through clf_event_cl_for()). */
static int interop_inc_after(ctx *c, size_t d, clf_buffer *buf, size_t off, size_t n,
                             uint32_t add, clf_event *const *wait, size_t nwait, clf_event **ev)
{
    cl_event cw[4] = {0};
    cl_uint nw = 0;
    for (size_t i = 0; i < nwait && i < 4; i++)
        if (wait[i] && failed_call(clf_event_cl_for(wait[i], c->f, d, &cw[nw++]),
                                   "clf_event_cl_for"))
            nw--;
    cl_int err;
    cl_kernel k = clCreateKernel(clf_cl_program(c->p, d), "inc", &err);
    cl_mem m = clf_cl_mem(buf);
    cl_event e = NULL;
    cl_command_queue q = clf_cl_compute_queue(c->f, d);
    if (err == CL_SUCCESS) {
        err = clSetKernelArg(k, 0, sizeof m, &m);
        err |= clSetKernelArg(k, 1, sizeof m, &m);
        err |= clSetKernelArg(k, 2, sizeof add, &add);
        /* Other threads of this process enqueue to the device too (--threads). */
        clf_cl_lock(c->f, d);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(q, k, 1, &off, &n, NULL, nw, nw ? cw : NULL, &e);
        if (err == CL_SUCCESS)
            clFlush(q);
        clf_cl_unlock(c->f, d);
        clReleaseKernel(k);
    }
    for (cl_uint i = 0; i < nw; i++)
        clReleaseEvent(cw[i]);
    if (err != CL_SUCCESS)
        return fprintf(stderr, "stress: interop kernel: %d\n", err), 1;
    return failed_call(clf_event_from_cl(e, ev), "clf_event_from_cl");
}

/*
 * The halo ping-pong of two devices, with no host synchronisation until the end: each step
 * an interop kernel per device (in place, +1 on its n own values) waits through
 * clf_event_cl_for() for the copies of the step before, then clf_copy_async() puts each
 * device's first h values into the other's halo, waiting for both kernels. Once hung on
 * PoCL's basic device at its first steps.
 */
static int op_pingpong(ctx *c, size_t n, size_t h, unsigned steps)
{
    clf_buffer *x[2] = {0};
    clf_event *k[2] = {0}, *cp[2] = {0};
    uint32_t *ref = calloc(2 * (n + h), 4), *got = calloc(n + h, 4);
    int bad = !ref || !got;
    for (size_t d = 0; !bad && d < 2; d++) {
        for (size_t i = 0; i < n + h; i++)
            ref[d * (n + h) + i] = (uint32_t)(d * 7777u + i);
        bad = failed_call(new_buffer(c, d, (n + h) * 4, &x[d]), "clf_buffer_create") ||
              failed_call(clf_buffer_write(x[d], 0, (n + h) * 4, &ref[d * (n + h)]),
                          "clf_buffer_write");
    }
    for (unsigned s = 0; !bad && s < steps; s++) {
        for (size_t d = 0; !bad && d < 2; d++) {
            clf_event *w[1] = {cp[d]};
            bad = interop_inc_after(c, d, x[d], 0, n, 1, w, cp[d] ? 1 : 0, &k[d]);
        }
        for (size_t d = 0; d < 2; d++) {
            clf_event_release(cp[d]);
            cp[d] = NULL;
        }
        /* cp[d]: into device d's halo, from the other device's first h values. */
        for (size_t d = 0; !bad && d < 2; d++)
            bad = failed_call(clf_copy_async(x[d], n * 4, x[1 - d], 0, h * 4, k, 2, &cp[d]),
                              "clf_copy_async (ping-pong)");
        for (size_t d = 0; d < 2; d++) {
            clf_event_release(k[d]);
            k[d] = NULL;
        }
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < n; i++)
                ref[d * (n + h) + i]++;
        for (size_t d = 0; d < 2; d++)
            memcpy(&ref[d * (n + h) + n], &ref[(1 - d) * (n + h)], h * 4);
    }
    for (size_t d = 0; d < 2; d++)
        bad |= cp[d] && failed_call(clf_event_wait(cp[d]), "clf_event_wait (ping-pong)");
    for (size_t d = 0; !bad && d < 2; d++) {
        bad = failed_call(clf_buffer_read(x[d], 0, (n + h) * 4, got), "clf_buffer_read");
        if (!bad && memcmp(got, &ref[d * (n + h)], (n + h) * 4) != 0) {
            fprintf(stderr, "stress: ping-pong wrong on device %zu\n", d);
            bad = 1;
        }
    }
    for (size_t d = 0; d < 2; d++) {
        clf_event_release(k[d]);
        clf_event_release(cp[d]);
        clf_buffer_destroy(x[d]);
    }
    free(ref);
    free(got);
    return bad;
}

/* As interop_inc_after(), with no wait list. */
static int interop_inc(ctx *c, size_t d, clf_buffer *buf, size_t off, size_t n, uint32_t add,
                       clf_event **ev)
{
    return interop_inc_after(c, d, buf, off, n, add, NULL, 0, ev);
}

/*
 * Steps of a 1D halo exchange, one buffer per device: [h halo | n own values | h halo]. A
 * step adds 1 to every device's own values (an interop kernel, in place), then copies each
 * device's first and last h own values into its neighbours' halos, both ways
 * (clf_copy_async() waiting for both devices' kernels), then clf_fleet_finish().
 */
static int op_halo(ctx *c, size_t n, size_t h, unsigned steps)
{
    size_t nd = c->ndev, w = n + 2 * h;
    int bad = 0;
    clf_buffer *x[CLF_MAX_LAUNCH_DEVICES] = {0};
    clf_event *k[CLF_MAX_LAUNCH_DEVICES] = {0};
    uint32_t *ref = calloc(nd * w, sizeof *ref), *tmp = calloc(w, sizeof *tmp);
    if (!ref || !tmp || nd > CLF_MAX_LAUNCH_DEVICES)
        bad = 1;
    for (size_t d = 0; !bad && d < nd; d++) {
        for (size_t i = 0; i < w; i++)
            ref[d * w + i] = (uint32_t)(d * 1000003u + i);
        bad |= failed_call(new_buffer(c, d, w * 4, &x[d]), "clf_buffer_create") ||
               failed_call(clf_buffer_write(x[d], 0, w * 4, &ref[d * w]), "clf_buffer_write");
    }
    for (unsigned s = 0; !bad && s < steps; s++) {
        for (size_t d = 0; !bad && d < nd; d++)
            bad |= interop_inc(c, d, x[d], h, n, 1, &k[d]);
        for (size_t d = 0; !bad && d + 1 < nd; d++) {
            clf_event *wl[2] = {k[d], k[d + 1]};
            /* Up: d's last own values into d+1's lower halo; down: d+1's first into d's. */
            bad |= failed_call(clf_copy_async(x[d + 1], 0, x[d], n * 4, h * 4, wl, 2, NULL),
                               "clf_copy_async (halo up)") ||
                   failed_call(clf_copy_async(x[d], (h + n) * 4, x[d + 1], h * 4, h * 4, wl, 2,
                                              NULL),
                               "clf_copy_async (halo down)");
        }
        bad |= !bad && failed_call(clf_fleet_finish(c->f), "clf_fleet_finish");
        for (size_t d = 0; d < nd; d++) {
            clf_event_release(k[d]);
            k[d] = NULL;
        }
        /* The reference step. */
        for (size_t d = 0; d < nd; d++)
            for (size_t i = h; i < h + n; i++)
                ref[d * w + i]++;
        for (size_t d = 0; d + 1 < nd; d++) {
            memcpy(&ref[(d + 1) * w], &ref[d * w + n], h * 4);
            memcpy(&ref[d * w + h + n], &ref[(d + 1) * w + h], h * 4);
        }
    }
    for (size_t d = 0; !bad && d < nd; d++) {
        bad |= failed_call(clf_buffer_read(x[d], 0, w * 4, tmp), "clf_buffer_read");
        if (!bad && memcmp(tmp, &ref[d * w], w * 4) != 0) {
            fprintf(stderr, "stress: halo exchange wrong on device %zu\n", d);
            bad = 1;
        }
    }
    for (size_t d = 0; d < nd; d++) {
        clf_event_release(k[d]);
        clf_buffer_destroy(x[d]);
    }
    free(ref);
    free(tmp);
    return bad;
}

/* A copy from a to b, then back from b into a's buffer at another offset. */
static int op_copy(ctx *c, size_t a, size_t b, size_t n)
{
    clf_buffer *ba = NULL, *bb = NULL;
    uint32_t *v = malloc(2 * n * 4), *r = malloc(2 * n * 4);
    int bad = !v || !r;
    for (size_t i = 0; !bad && i < n; i++)
        v[i] = mix((uint32_t)(i + a * 7919 + b));
    bad = bad || failed_call(new_buffer(c, a, 2 * n * 4, &ba), "clf_buffer_create") ||
          failed_call(new_buffer(c, b, n * 4, &bb), "clf_buffer_create") ||
          failed_call(clf_buffer_write(ba, 0, n * 4, v), "clf_buffer_write") ||
          failed_call(clf_copy(bb, 0, ba, 0, n * 4), "clf_copy a->b") ||
          failed_call(clf_copy(ba, n * 4, bb, 0, n * 4), "clf_copy b->a") ||
          failed_call(clf_buffer_read(ba, 0, 2 * n * 4, r), "clf_buffer_read");
    if (!bad && (memcmp(r, v, n * 4) != 0 || memcmp(r + n, v, n * 4) != 0)) {
        fprintf(stderr, "stress: copy %zu <-> %zu of %zu values wrong\n", a, b, n);
        bad = 1;
    }
    clf_buffer_destroy(ba);
    clf_buffer_destroy(bb);
    free(v);
    free(r);
    return bad;
}

static int op_allreduce(ctx *c, size_t n)
{
    size_t nd = c->ndev;
    clf_buffer *b[CLF_MAX_LAUNCH_DEVICES] = {0};
    int32_t *v = malloc(n * 4), *sum = calloc(n, 4);
    int bad = !v || !sum || nd > CLF_MAX_LAUNCH_DEVICES;
    for (size_t d = 0; !bad && d < nd; d++) {
        for (size_t i = 0; i < n; i++) {
            v[i] = (int32_t)(mix((uint32_t)(i * 31 + d)) % 2001) - 1000;
            sum[i] += v[i];
        }
        bad |= failed_call(new_buffer(c, d, n * 4, &b[d]), "clf_buffer_create") ||
               failed_call(clf_buffer_write(b[d], 0, n * 4, v), "clf_buffer_write");
    }
    bad = bad || failed_call(clf_allreduce(b, nd, n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL),
                             "clf_allreduce");
    for (size_t d = 0; !bad && d < nd; d++) {
        bad |= failed_call(clf_buffer_read(b[d], 0, n * 4, v), "clf_buffer_read");
        if (!bad && memcmp(v, sum, n * 4) != 0) {
            fprintf(stderr, "stress: all-reduce of %zu wrong on device %zu\n", n, d);
            bad = 1;
        }
    }
    for (size_t d = 0; d < nd; d++)
        clf_buffer_destroy(b[d]);
    free(v);
    free(sum);
    return bad;
}

/* One stage per device (at most 4), each adding its position + 1. */
static int op_pipeline(ctx *c, size_t n, size_t batches)
{
    size_t ns = c->ndev < 4 ? c->ndev : 4;
    clf_stage_desc sd[4];
    uint32_t add[4];
    clf_arg extra[4][1];
    uint32_t *in = malloc(batches * n * 4), *out = malloc(batches * n * 4);
    int bad = !in || !out;
    uint32_t total = 0;
    for (size_t s = 0; s < ns; s++) {
        add[s] = (uint32_t)s + 1;
        total += add[s];
        clf_arg a = CLF_SCALAR(&add[s]);
        extra[s][0] = a;
        clf_stage_desc d = CLF_STAGE_DESC_INIT;
        d.device = s;
        d.program = c->p;
        d.kernel = "inc";
        d.in_bytes = d.out_bytes = n * 4;
        d.global[0] = n;
        d.args = extra[s];
        d.nargs = 1;
        sd[s] = d;
    }
    for (size_t i = 0; !bad && i < batches * n; i++)
        in[i] = mix((uint32_t)i);
    clf_pipeline *pl = NULL;
    bad = bad ||
          failed_call(clf_pipeline_create(&pl, c->f, sd, ns, NULL), "clf_pipeline_create") ||
          failed_call(clf_pipeline_run(pl, in, out, batches, NULL), "clf_pipeline_run");
    for (size_t i = 0; !bad && i < batches * n; i++)
        if (out[i] != in[i] + total) {
            fprintf(stderr, "stress: pipeline wrong at %zu\n", i);
            bad = 1;
        }
    clf_pipeline_destroy(pl);
    free(in);
    free(out);
    return bad;
}

static int op_taskq(ctx *c, size_t n, size_t ntasks)
{
    uint32_t *in = malloc(ntasks * n * 4), *out = malloc(ntasks * n * 4);
    uint32_t *add = malloc(ntasks * 4);
    int bad = !in || !out || !add;
    clf_taskq *q = NULL;
    bad = bad || failed_call(clf_taskq_create(&q, c->f, c->p, NULL, 0), "clf_taskq_create");
    for (size_t t = 0; !bad && t < ntasks; t++) {
        for (size_t i = 0; i < n; i++)
            in[t * n + i] = mix((uint32_t)(t * n + i));
        add[t] = (uint32_t)t * 3 + 1;
        clf_arg a[] = {CLF_WHOLE_IN(&in[t * n], n * 4), CLF_WHOLE_OUT(&out[t * n], n * 4),
                       CLF_SCALAR(&add[t])};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "inc";
        d.global[0] = n;
        bad |= failed_call(clf_taskq_submit(q, &d, a, 3, NULL), "clf_taskq_submit");
    }
    bad = bad || failed_call(clf_taskq_run(q, NULL), "clf_taskq_run");
    for (size_t i = 0; !bad && i < ntasks * n; i++)
        if (out[i] != in[i] + add[i / n]) {
            fprintf(stderr, "stress: task queue wrong at %zu\n", i);
            bad = 1;
        }
    clf_taskq_destroy(q);
    free(in);
    free(out);
    free(add);
    return bad;
}

/* Steps of a 1D Jacobi on block arrays with a halo of 1 over every device (exchange, then
 * clf_array_launch()), against the plain C reference. */
static int op_array(ctx *c, size_t n, unsigned steps)
{
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = 4;
    ad.dims = 1;
    ad.shape[0] = n;
    ad.halo_before = ad.halo_after = 1;
    clf_array *a = NULL, *b = NULL;
    float *x = malloc(n * 4), *y = malloc(n * 4), *got = malloc(n * 4);
    for (size_t i = 0; x && i < n; i++) /* multiples of 1/8: the sums stay exact */
        x[i] = (float)(mix((uint32_t)(i + steps)) % 1000) / 8.0f;
    int bad = !x || !y || !got ||
              failed_call(clf_array_create(&a, c->f, &ad), "clf_array_create") ||
              failed_call(clf_array_create(&b, c->f, &ad), "clf_array_create") ||
              failed_call(clf_array_write(a, NULL, NULL, x), "clf_array_write");
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "jac1";
    d.global[0] = n;
    for (unsigned k = 0; !bad && k < steps; k++) {
        clf_arg args[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(b)};
        bad = failed_call(clf_array_exchange(a), "clf_array_exchange") ||
              failed_call(clf_array_launch(c->f, c->jacobi, &d, args, 2), "clf_array_launch");
        clf_array *t = a;
        a = b;
        b = t;
        jacobi_ref_step(&x, &y, 1, n, 1, 0);
    }
    bad = bad || failed_call(clf_array_read(a, NULL, NULL, got), "clf_array_read");
    if (!bad && memcmp(got, x, n * 4) != 0) {
        fprintf(stderr, "stress: array Jacobi of %zu units wrong\n", n);
        bad = 1;
    }
    clf_array_destroy(a);
    clf_array_destroy(b);
    free(x);
    free(y);
    free(got);
    return bad;
}

/* ---- the driver ---- */

static void count(int op, int bad)
{
    __atomic_add_fetch(&done[op], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&wrong[op], bad != 0, __ATOMIC_RELAXED);
}

static void round_all(ctx *c, unsigned r)
{
    for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++) {
        current = "launch (grid)";
        count(OP_LAUNCH, op_launch_grid(c, strategies[s], 256, 160 + r % 5, 0x1234u + r));
        current = "launch (Mandelbrot)";
        count(OP_LAUNCH, op_launch_mandel(c, strategies[s]));
        current = "launch (scale)";
        count(OP_LAUNCH, op_launch_scale(c, strategies[s], 40000 + 17 * r, 3 + r));
    }
    current = "halo exchange";
    count(OP_HALO, op_halo(c, (size_t)1 << 20, 2048, 10));
    current = "copy";
    for (size_t a = 0; a < c->ndev; a++)
        for (size_t b = 0; b < c->ndev; b++)
            if (a != b)
                count(OP_COPY, op_copy(c, a, b, 10000 + r));
    current = "all-reduce";
    count(OP_ALLREDUCE, op_allreduce(c, 30000 + r));
    current = "pipeline";
    count(OP_PIPELINE, op_pipeline(c, 4096, 6));
    current = "task queue";
    count(OP_TASKQ, op_taskq(c, 2048, 8));
    current = "array steps";
    count(OP_ARRAY, op_array(c, 50000 + r, 4));
    current = "ping-pong";
    count(OP_PINGPONG, op_pingpong(c, 4096 + r, 64, 20));
}

static void round_mixed(ctx *c)
{
    int op = (int)rnd(NOPS);
    switch (op) {
    case OP_LAUNCH:
        current = "launch";
        if (rnd(3) == 0)
            count(op, op_launch_mandel(c, strategies[rnd(5)]));
        else if (rnd(2))
            count(op, op_launch_grid(c, strategies[rnd(5)], 1 + rnd(200), 1 + rnd(100),
                                     rnd(1u << 31)));
        else
            count(op, op_launch_scale(c, strategies[rnd(5)], 1 + rnd(100000), rnd(100)));
        break;
    case OP_HALO: {
        current = "halo exchange";
        size_t n = 64 + rnd(8192);
        count(op, op_halo(c, n, 1 + rnd((uint32_t)(n / 2)), 1 + rnd(6)));
        break;
    }
    case OP_COPY: {
        current = "copy";
        size_t a = rnd((uint32_t)c->ndev), b = rnd((uint32_t)c->ndev);
        if (a == b)
            b = (a + 1) % c->ndev;
        count(op, op_copy(c, a, b, 1 + rnd(1u << 18)));
        break;
    }
    case OP_ALLREDUCE:
        current = "all-reduce";
        count(op, op_allreduce(c, 1 + rnd(1u << 17)));
        break;
    case OP_PIPELINE:
        current = "pipeline";
        count(op, op_pipeline(c, 1 + rnd(8192), 1 + rnd(8)));
        break;
    case OP_ARRAY:
        current = "array steps";
        count(op, op_array(c, 64 + rnd(1u << 16), 1 + rnd(6)));
        break;
    case OP_PINGPONG: {
        current = "ping-pong";
        size_t n = 16 + rnd(8192);
        count(op, op_pingpong(c, n, 1 + rnd((uint32_t)n), 1 + rnd(20)));
        break;
    }
    default:
        current = "task queue";
        count(op, op_taskq(c, 1 + rnd(8192), 1 + rnd(12)));
        break;
    }
}

/* --threads: one thread's random operations. */
typedef struct thread_arg {
    ctx *c;
    unsigned index;
    unsigned long rounds, seed;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *t = p;
    slot = t->index;
    rng ^= (t->seed + 7919 * t->index) * 0x2545f4914f6cdd1dull;
    if (!rng)
        rng = 1;
    for (unsigned long r = 0; r < t->rounds; r++)
        round_mixed(t->c);
    current = NULL; /* finished: nothing to name if the watchdog fires */
    return NULL;
}

/* T threads at once; the watchdog is re-armed while any thread still makes progress. */
static int run_threads(ctx *c, unsigned threads, unsigned long rounds, unsigned long seed,
                       unsigned long timeout)
{
    pthread_t tid[MAX_THREADS];
    thread_arg ta[MAX_THREADS];
    unsigned started = 0;
    for (unsigned t = 0; t < threads; t++) {
        ta[t] = (thread_arg){c, t, rounds, seed};
        doing[t] = "start-up";
        if (pthread_create(&tid[t], NULL, thread_main, &ta[t]) != 0) {
            fprintf(stderr, "stress: cannot start thread %u\n", t);
            doing[t] = NULL;
            break;
        }
        started++;
    }
    /* Progress is any operation counted; the alarm fires after `timeout` seconds without. */
    unsigned long last = ~0ul;
    for (;;) {
        unsigned long total = 0;
        for (int op = 0; op < NOPS; op++)
            total += __atomic_load_n(&done[op], __ATOMIC_RELAXED);
        if (total != last) {
            alarm((unsigned)timeout);
            last = total;
        }
        int running = 0;
        for (unsigned t = 0; t < started; t++)
            running |= doing[t] != NULL;
        if (!running)
            break;
        usleep(100000);
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    return started == threads ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: stress [--rounds N] [--mixed] [--threads T] [--pingpong STEPS] "
                    "[--seed S] [--timeout SECONDS] [--expect-cached]\n");
    return 2;
}

int main(int argc, char **argv)
{
    unsigned long rounds = 20, seed = 1, timeout = 120, threads = 0, pingpong = 0;
    int mixed = 0, cached = 0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        unsigned long *v = !strcmp(argv[i], "--rounds")    ? &rounds
                           : !strcmp(argv[i], "--seed")    ? &seed
                           : !strcmp(argv[i], "--timeout") ? &timeout
                           : !strcmp(argv[i], "--threads") ? &threads
                           : !strcmp(argv[i], "--pingpong") ? &pingpong
                                                           : NULL;
        if (!strcmp(argv[i], "--mixed"))
            mixed = 1;
        else if (!strcmp(argv[i], "--expect-cached"))
            cached = 1;
        else if (!v || i + 1 >= argc || (*v = strtoul(argv[++i], &end, 10), *end) || !*v)
            return usage();
    }
    if (threads > MAX_THREADS || (threads && !mixed))
        return usage();
    rng ^= seed * 0x2545f4914f6cdd1dull; /* never 0: the constant is odd */
    signal(SIGALRM, watchdog_fired);
    alarm((unsigned)timeout);

    ctx c = {0};
    clf_status st = clf_fleet_create(&c.f, NULL);
    if (st != CLF_SUCCESS) {
        int required = test_devices_required();
        fprintf(stderr, "stress: %s: no fleet: %s: %s\n", required ? "FAIL" : "SKIP",
                clf_status_name(st), clf_last_error());
        return required ? 1 : 77;
    }
    c.ndev = clf_fleet_device_count(c.f);
    int rc = 0;
    if (c.ndev < 2) {
        fprintf(stderr, "stress: FAIL: the fleet has %zu device; it needs two\n", c.ndev);
        rc = 1;
    } else if (failed_call(clf_program_build_source(&c.p, c.f, SOURCE, NULL), "build") ||
               failed_call(clf_program_build_source(&c.jacobi, c.f, JACOBI, NULL), "build")) {
        rc = 1;
    }
    for (size_t d = 0; rc == 0 && cached && d < c.ndev; d++)
        if (!clf_program_from_cache(c.p, d)) {
            fprintf(stderr, "stress: FAIL: device %zu's program did not come from the cache\n",
                    d);
            rc = 1;
        }
    if (rc == 0 && cached)
        printf("stress: every device's program came from clfleet's binary cache\n");
    if (rc == 0 && threads)
        rc = run_threads(&c, (unsigned)threads, rounds, seed, timeout);
    if (rc == 0 && pingpong) {
        current = "ping-pong";
        count(OP_PINGPONG, op_pingpong(&c, 1 << 16, 256, (unsigned)pingpong));
    }
    for (unsigned long r = 0; rc == 0 && !threads && !pingpong && r < rounds; r++) {
        alarm((unsigned)timeout); /* per round: a hang ends the run, slowness does not */
        if (mixed)
            round_mixed(&c);
        else
            round_all(&c, (unsigned)r);
    }
    current = "teardown";
    clf_program_destroy(c.p);
    clf_program_destroy(c.jacobi);
    clf_fleet_destroy(c.f);
    alarm(0);
    unsigned long total = 0, bad = 0;
    for (int op = 0; op < NOPS; op++) {
        total += done[op];
        bad += wrong[op];
        if (done[op])
            printf("stress: %-9s %5lu run, %lu wrong\n", op_names[op], done[op], wrong[op]);
    }
    if (mixed)
        printf("stress: random operations from seed %lu\n", seed);
    printf("stress: %lu passed, %lu failed (%zu devices, %s%s)\n", total - bad, bad, c.ndev,
           mixed ? "mixed" : "every kind each round", threads ? ", threads at once" : "");
    return rc || bad ? 1 : 0;
}

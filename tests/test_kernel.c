/*
 * clf_kernel_enqueue() and clf_kernel_run(): a kernel on one device, on clf_buffers. Every
 * argument kind and access mode, 1 to 3 dimensions with offsets and local sizes (the
 * NDRange built-ins against plain C), event chains across devices and contexts, metrics,
 * an injected fault, every bad input (refused, nothing run), and PoCL's basic device.
 * References are plain C loops on the host.
 */
#include <pthread.h>
#include <time.h>

#include "common.h"

static const char *SRC =
    TEST_CL_LOWBIAS32
    /* Every argument kind: const input, output, in-out, scalar, local memory. */
    "__kernel void all_kinds(__global const uint *in, __global uint *out, __global uint *io,\n"
    "                        uint s, __local uint *tmp)\n"
    "{\n"
    "    size_t g = get_global_id(0), l = get_local_id(0), n = get_local_size(0);\n"
    "    tmp[l] = in[g];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    out[g] = tmp[(l + 1) % n] + s;\n"
    "    io[g] += 2u * in[g];\n"
    "}\n"
    /* Slow on purpose: a kernel that waits for it sees the wrong data if it runs early. */
    "__kernel void fill(__global uint *out, uint seed, uint rounds)\n"
    "{\n"
    "    uint x = (uint)get_global_id(0) ^ seed;\n"
    "    for (uint r = 0; r < rounds; r++)\n"
    "        x = lowbias32(x);\n"
    "    out[get_global_id(0)] = x;\n"
    "}\n"
    "__kernel void twice(__global const uint *in, __global uint *out)\n"
    "{\n"
    "    out[get_global_id(0)] = 2u * in[get_global_id(0)] + 1u;\n"
    "}\n"
    "__kernel void plain(__global uint *out) { out[get_global_id(0)] = 7u; }\n";

/* Names get_global_size and get_num_groups: every kernel gets the hidden range parameter. */
#define NS 14
static const char *IDS_SRC =
    "__kernel void ids(__global uint *o)\n"
    "{\n"
    "    size_t x = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    size_t y = get_global_id(1) - CLF_CHUNK_OFFSET(1);\n"
    "    size_t z = get_global_id(2) - CLF_CHUNK_OFFSET(2);\n"
    "    __global uint *p = o + ((z * get_global_size(1) + y) * get_global_size(0) + x) * 14;\n"
    "    for (uint d = 0; d < 3; d++) {\n"
    "        p[d] = (uint)get_global_id(d);\n"
    "        p[3 + d] = (uint)get_group_id(d);\n"
    "        p[6 + d] = (uint)get_local_id(d);\n"
    "        p[9 + d] = (uint)get_global_size(d);\n"
    "    }\n"
    "    p[12] = (uint)get_num_groups(get_work_dim() - 1);\n"
    "    p[13] = (uint)(get_global_offset(0) + get_global_offset(1) + get_global_offset(2));\n"
    "}\n";
/* The same without the built-ins the prelude counts from the range's start (get_group_id,
 * get_global_offset), which a program naming them cannot have with an offset. */
static const char *IDS_OFFSET_SRC =
    "__kernel void ids(__global uint *o)\n"
    "{\n"
    "    size_t x = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    size_t y = get_global_id(1) - CLF_CHUNK_OFFSET(1);\n"
    "    size_t z = get_global_id(2) - CLF_CHUNK_OFFSET(2);\n"
    "    __global uint *p = o + ((z * get_global_size(1) + y) * get_global_size(0) + x) * 14;\n"
    "    for (uint d = 0; d < 3; d++) {\n"
    "        p[d] = (uint)get_global_id(d);\n"
    "        p[3 + d] = 0xFFFFFFFFu;\n"
    "        p[6 + d] = (uint)get_local_id(d);\n"
    "        p[9 + d] = (uint)get_global_size(d);\n"
    "    }\n"
    "    p[12] = (uint)get_num_groups(get_work_dim() - 1);\n"
    "    p[13] = 0;\n"
    "}\n";

static clf_program *build(clf_fleet *f, const char *src)
{
    clf_program *p = NULL;
    clf_status st = clf_program_build_source(&p, f, src, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "build: %s: %s", clf_status_name(st), clf_last_error());
    return p;
}

static clf_buffer *buffer(clf_fleet *f, size_t dev, size_t bytes)
{
    clf_buffer *b = NULL;
    ck_assert_ok(clf_buffer_create(&b, f, dev, bytes, CLF_MEM_READ_WRITE));
    return b;
}

/* ---- every argument kind and access mode ----------------------------------------------- */

START_TEST(argument_kinds)
{
    enum { N = 4096, L = 64 };
    clf_fleet *f = test_fleet(FLEET4, _i);
    clf_program *p = build(f, SRC);
    uint32_t *in = malloc(N * 4), *out = malloc(N * 4), *io = malloc(N * 4);
    ck_assert(in && out && io);
    for (size_t dev = 0; dev < clf_fleet_device_count(f); dev++) {
        for (uint32_t i = 0; i < N; i++) {
            in[i] = lowbias32(i + (uint32_t)dev);
            io[i] = i * 3u;
        }
        clf_buffer *bi = buffer(f, dev, N * 4), *bo = buffer(f, dev, N * 4),
                   *bio = buffer(f, dev, N * 4);
        ck_assert_ok(clf_buffer_write(bi, 0, N * 4, in));
        ck_assert_ok(clf_buffer_write(bio, 0, N * 4, io));
        uint32_t s = 1000u + (uint32_t)dev;
        clf_arg args[] = {CLF_BUF_IN(bi), CLF_BUF_OUT(bo), CLF_BUF_INOUT(bio), CLF_SCALAR(&s),
                          CLF_LOCAL(L * 4)};
        clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
        d.kernel = "all_kinds";
        d.global[0] = N;
        d.local[0] = L;
        ck_assert_ok(clf_kernel_run(f, p, dev, &d, args, 5));
        ck_assert_ok(clf_buffer_read(bo, 0, N * 4, out));
        ck_assert_ok(clf_buffer_read(bio, 0, N * 4, io));
        for (uint32_t i = 0; i < N; i++) {
            uint32_t nb = (i / L) * L + (i % L + 1) % L;
            expect(out[i] == in[nb] + s, "dev %zu out[%u] = %u, want %u", dev, i, out[i],
                   in[nb] + s);
            expect(io[i] == i * 3u + 2u * in[i], "dev %zu io[%u] = %u", dev, i, io[i]);
        }
        clf_buffer_destroy(bi);
        clf_buffer_destroy(bo);
        clf_buffer_destroy(bio);
    }
    free(in);
    free(out);
    free(io);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- dimensions, offsets, local sizes: the built-ins against plain C -------------------- */

typedef struct ndr {
    unsigned dims;
    size_t off[3], g[3], l[3];
} ndr;

static const ndr NDRS[] = {
    {1, {0, 0, 0}, {64, 1, 1}, {8, 1, 1}},    {1, {40, 0, 0}, {96, 1, 1}, {8, 1, 1}},
    {1, {5, 0, 0}, {60, 1, 1}, {4, 1, 1}},    {2, {16, 8, 0}, {16, 12, 1}, {4, 3, 1}},
    {2, {0, 0, 0}, {10, 6, 1}, {5, 2, 1}},    {3, {4, 2, 6}, {8, 4, 6}, {2, 2, 3}},
    {3, {0, 0, 0}, {4, 4, 4}, {2, 4, 1}},     {2, {7, 3, 0}, {12, 5, 1}, {0, 0, 0}},
};
#define NNDR (sizeof NDRS / sizeof *NDRS)

START_TEST(ndrange_builtins)
{
    const ndr *r = &NDRS[_i];
    clf_fleet *f = test_fleet(FLEET2, 0);
    size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1}, o[3] = {0, 0, 0};
    int has_offset = 0;
    for (unsigned j = 0; j < r->dims; j++) {
        g[j] = r->g[j];
        l[j] = r->l[j];
        o[j] = r->off[j];
        has_offset |= o[j] != 0;
    }
    clf_program *p = build(f, IDS_SRC);
    size_t items = g[0] * g[1] * g[2], bytes = items * NS * 4;
    uint32_t *h = malloc(bytes);
    ck_assert(h);
    memset(h, 0xAB, bytes);
    clf_buffer *b = buffer(f, 1, bytes);
    ck_assert_ok(clf_buffer_write(b, 0, bytes, h));
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "ids";
    d.dims = r->dims;
    memcpy(d.offset, r->off, sizeof d.offset);
    memcpy(d.global, r->g, sizeof d.global);
    memcpy(d.local, r->l, sizeof d.local);
    clf_arg a = CLF_BUF_OUT(b);
    if (has_offset) {
        /* get_group_id() would count from index 0, OpenCL's from the offset: refused. */
        ck_assert_status(clf_kernel_run(f, p, 1, &d, &a, 1), CLF_ERROR_UNSUPPORTED);
        ck_assert_msg(strstr(clf_last_error(), "get_group_id()"), "%s", clf_last_error());
        clf_program_destroy(p);
        p = build(f, IDS_OFFSET_SRC);
    }
    ck_assert_ok(clf_kernel_run(f, p, 1, &d, &a, 1));
    ck_assert_ok(clf_buffer_read(b, 0, bytes, h));
    int local_given = r->l[0] != 0;
    for (size_t z = 0; z < g[2]; z++)
        for (size_t y = 0; y < g[1]; y++)
            for (size_t x = 0; x < g[0]; x++) {
                const uint32_t *q = h + ((z * g[1] + y) * g[0] + x) * NS;
                size_t xs[3] = {x, y, z};
                for (unsigned j = 0; j < 3; j++) {
                    expect(q[j] == o[j] + xs[j], "case %d (%zu,%zu,%zu): global id %u = %u",
                           _i, x, y, z, j, q[j]);
                    expect(q[9 + j] == g[j], "case %d: global size %u = %u", _i, j, q[9 + j]);
                    if (!local_given)
                        continue;
                    /* OpenCL's group id (without an offset, the only case it is read). */
                    size_t grp = has_offset ? 0xFFFFFFFFu : xs[j] / l[j];
                    expect(q[3 + j] == grp, "case %d (%zu,%zu,%zu): group id %u = %u, want %zu",
                           _i, x, y, z, j, q[3 + j], grp);
                    expect(q[6 + j] == xs[j] % l[j], "case %d: local id %u = %u", _i, j,
                           q[6 + j]);
                }
                if (local_given)
                    expect(q[12] == g[r->dims - 1] / l[r->dims - 1], "case %d: num groups %u",
                           _i, q[12]);
                expect(q[13] == 0, "case %d: get_global_offset sum %u", _i, q[13]);
            }
    free(h);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- event chains across devices ------------------------------------------------------- */

enum { CN = 1 << 15, ROUNDS = 400 };

static uint32_t fill_ref(uint32_t i, uint32_t seed)
{
    uint32_t x = i ^ seed;
    for (int r = 0; r < ROUNDS; r++)
        x = lowbias32(x);
    return x;
}

/* fill on dev a -> copy to dev b -> twice on dev b -> copy back to dev a -> twice on a. */
static void chain(clf_fleet *f, clf_program *p, size_t a, size_t b)
{
    clf_buffer *x = buffer(f, a, CN * 4), *y = buffer(f, b, CN * 4), *z = buffer(f, b, CN * 4),
               *w = buffer(f, a, CN * 4), *v = buffer(f, a, CN * 4);
    uint32_t seed = 0x1234u, rounds = ROUNDS;
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.global[0] = CN;
    d.kernel = "fill";
    clf_arg fa[] = {CLF_BUF_OUT(x), CLF_SCALAR(&seed), CLF_SCALAR(&rounds)};
    clf_event *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL, *e5 = NULL;
    ck_assert_ok(clf_kernel_enqueue(f, p, a, &d, fa, 3, NULL, 0, &e1));
    ck_assert_ok(clf_copy_async(y, 0, x, 0, CN * 4, &e1, 1, &e2));
    d.kernel = "twice";
    clf_arg ta[] = {CLF_BUF_IN(y), CLF_BUF_OUT(z)};
    ck_assert_ok(clf_kernel_enqueue(f, p, b, &d, ta, 2, &e2, 1, &e3));
    ck_assert_ok(clf_copy_async(w, 0, z, 0, CN * 4, &e3, 1, &e4));
    clf_arg tb[] = {CLF_BUF_IN(w), CLF_BUF_OUT(v)};
    clf_event *both[] = {e4, e1};
    ck_assert_ok(clf_kernel_enqueue(f, p, a, &d, tb, 2, both, 2, &e5));
    ck_assert_ok(clf_event_wait(e5));
    uint32_t *h = malloc(CN * 4);
    ck_assert(h);
    ck_assert_ok(clf_buffer_read(v, 0, CN * 4, h));
    for (uint32_t i = 0; i < CN; i++) {
        uint32_t want = 2u * (2u * fill_ref(i, seed) + 1u) + 1u;
        expect(h[i] == want, "devices %zu,%zu: v[%u] = %u, want %u", a, b, i, h[i], want);
    }
    free(h);
    clf_event_release(e1);
    clf_event_release(e2);
    clf_event_release(e3);
    clf_event_release(e4);
    clf_event_release(e5);
    clf_buffer_destroy(x);
    clf_buffer_destroy(y);
    clf_buffer_destroy(z);
    clf_buffer_destroy(w);
    clf_buffer_destroy(v);
}

START_TEST(event_chain)
{
    test_watchdog(120);
    clf_fleet *f = test_fleet(FLEET4, _i);
    clf_program *p = build(f, SRC);
    chain(f, p, 0, 1);
    chain(f, p, 3, 2);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* On PoCL's basic device (it runs commands inside clEnqueue*): both directions. */
START_TEST(event_chain_basic)
{
    test_watchdog(120);
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    size_t basic, other[2];
    if (test_find_basic(f, &basic, other, "event_chain_basic")) {
        clf_program *p = build(f, SRC);
        chain(f, p, basic, other[0]);
        chain(f, p, other[1], basic);
        clf_program_destroy(p);
    }
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* ---- threads: each call has its own cl_kernel, so concurrent calls need no lock -------- */

enum { TN = 4096, TCALLS = 40, TTHREADS = 4 };

typedef struct tjob {
    clf_fleet *f;
    clf_program *p;
    size_t dev;
    clf_buffer *b;
    uint32_t seed;
    clf_status st;
} tjob;

/* Each thread: TCALLS kernels with its own seed on its own buffer, the last one waited for;
 * the kernels of one thread are ordered by the device's in-order compute queue. */
static void *tjob_main(void *arg)
{
    tjob *j = arg;
    uint32_t rounds = 1;
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "fill";
    d.global[0] = TN;
    j->st = CLF_SUCCESS;
    for (int c = 0; c < TCALLS && j->st == CLF_SUCCESS; c++) {
        uint32_t seed = j->seed + (uint32_t)c; /* copied by the call */
        clf_arg a[] = {CLF_BUF_OUT(j->b), CLF_SCALAR(&seed), CLF_SCALAR(&rounds)};
        j->st = c + 1 < TCALLS ? clf_kernel_enqueue(j->f, j->p, j->dev, &d, a, 3, NULL, 0, NULL)
                               : clf_kernel_run(j->f, j->p, j->dev, &d, a, 3);
    }
    return NULL;
}

START_TEST(concurrent_calls)
{
    test_watchdog(120);
    clf_fleet *f = test_fleet(_i ? TEST_CPUS : FLEET2, 0);
    clf_program *p = build(f, SRC);
    size_t basic = 0, other[2] = {0, 1};
    if (_i && !test_find_basic(f, &basic, other, "concurrent_calls")) {
        clf_program_destroy(p);
        clf_fleet_destroy(f);
        test_watchdog_off();
        return;
    }
    tjob jobs[TTHREADS];
    pthread_t th[TTHREADS];
    for (int t = 0; t < TTHREADS; t++) {
        /* Two threads per device: on the basic device too when there is one. */
        size_t dev = _i ? (t & 1 ? basic : other[0]) : (size_t)(t & 1);
        jobs[t] = (tjob){f, p, dev, buffer(f, dev, TN * 4), 1000u * (uint32_t)t, CLF_SUCCESS};
    }
    for (int t = 0; t < TTHREADS; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, tjob_main, &jobs[t]), 0);
    for (int t = 0; t < TTHREADS; t++)
        pthread_join(th[t], NULL);
    uint32_t *h = malloc(TN * 4);
    ck_assert(h);
    for (int t = 0; t < TTHREADS; t++) {
        ck_assert_msg(jobs[t].st == CLF_SUCCESS, "thread %d: %s", t,
                      clf_status_name(jobs[t].st));
        ck_assert_ok(clf_buffer_read(jobs[t].b, 0, TN * 4, h));
        uint32_t seed = jobs[t].seed + TCALLS - 1;
        for (uint32_t i = 0; i < TN; i++)
            expect(h[i] == lowbias32(i ^ seed), "thread %d: x[%u] = %u", t, i, h[i]);
        clf_buffer_destroy(jobs[t].b);
    }
    free(h);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* ---- lifetime: the event outlives the buffer, the program and the fleet ---------------- */

START_TEST(event_outlives_objects)
{
    clf_fleet *f = test_fleet(FLEET2, _i);
    clf_program *p = build(f, SRC);
    clf_buffer *b = buffer(f, 1, CN * 4), *c = buffer(f, 1, CN * 4);
    uint32_t seed = 5, rounds = ROUNDS;
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "fill";
    d.global[0] = CN;
    clf_arg a[] = {CLF_BUF_OUT(b), CLF_SCALAR(&seed), CLF_SCALAR(&rounds)};
    clf_event *e1 = NULL, *e2 = NULL;
    ck_assert_ok(clf_kernel_enqueue(f, p, 1, &d, a, 3, NULL, 0, &e1));
    d.kernel = "twice";
    clf_arg t[] = {CLF_BUF_IN(b), CLF_BUF_OUT(c)};
    ck_assert_ok(clf_kernel_enqueue(f, p, 1, &d, t, 2, &e1, 1, &e2));
    seed = rounds = 0; /* scalars were copied */
    clf_buffer_destroy(b);
    clf_buffer_destroy(c);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    ck_assert_ok(clf_event_wait(e2));
    ck_assert_ok(clf_event_wait(e1));
    clf_event_release(e1);
    clf_event_release(e2);
}
END_TEST

/* ---- metrics ---------------------------------------------------------------------------- */

static uint64_t kernels_of(clf_fleet *f, size_t dev)
{
    clf_device_metrics m;
    ck_assert_ok(clf_metrics_device(&m, f, dev));
    return m.kernels;
}

START_TEST(metrics_count)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = build(f, SRC);
    clf_buffer *b = buffer(f, 1, 256 * 4);
    uint64_t k0 = kernels_of(f, 0), k1 = kernels_of(f, 1);
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "plain";
    d.global[0] = 256;
    clf_arg a = CLF_BUF_OUT(b);
    for (int i = 0; i < 3; i++)
        ck_assert_ok(clf_kernel_run(f, p, 1, &d, &a, 1));
    ck_assert_ok(clf_kernel_enqueue(f, p, 1, &d, &a, 1, NULL, 0, NULL));
    ck_assert_ok(clf_device_finish(f, 1));
    /* Counted by the commands' completion callbacks: give them a moment. */
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int t = 0; t < 300 && kernels_of(f, 1) < k1 + 4; t++)
        nanosleep(&ts, NULL);
    ck_assert_uint_eq(kernels_of(f, 1), k1 + 4);
    ck_assert_uint_eq(kernels_of(f, 0), k0);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- an injected enqueue fault ---------------------------------------------------------- */

START_TEST(injected_fault)
{
    clf_fleet *f = test_fault_fleet(FLEET2, "device=1,call=enqueue,after=1,count=1");
    clf_program *p = build(f, SRC);
    uint32_t h[64], zero[64] = {0};
    clf_buffer *b = buffer(f, 1, sizeof h);
    ck_assert_ok(clf_buffer_write(b, 0, sizeof zero, zero));
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "plain";
    d.global[0] = 32; /* the first half first */
    clf_arg a = CLF_BUF_OUT(b);
    ck_assert_ok(clf_kernel_run(f, p, 1, &d, &a, 1));
    d.offset[0] = 32;
    clf_event *e = (clf_event *)&d; /* must be cleared */
    ck_assert_status(clf_kernel_enqueue(f, p, 1, &d, &a, 1, NULL, 0, &e), CLF_ERROR_OPENCL);
    ck_assert_ptr_null(e);
    ck_assert_msg(strstr(clf_last_error(), "plain") && strstr(clf_last_error(), "injected") &&
                      strstr(clf_last_error(), "device 1"),
                  "%s", clf_last_error());
    ck_assert_ok(clf_buffer_read(b, 0, sizeof h, h));
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(h[i], i < 32 ? 7u : 0u);
    ck_assert_ok(clf_kernel_run(f, p, 1, &d, &a, 1)); /* count=1: the next one runs */
    ck_assert_ok(clf_buffer_read(b, 0, sizeof h, h));
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(h[i], 7u);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* A device a launch found failed is refused until readmitted (its results could be wrong). */
START_TEST(failed_device_refused)
{
    clf_fleet *f = test_fault_fleet(FLEET2, "device=1,call=enqueue,lost");
    clf_program *p = build(f, SRC);
    uint32_t h[256];
    clf_launch_desc ld = CLF_LAUNCH_DESC_INIT;
    ld.kernel = "plain";
    ld.global[0] = 256;
    ld.strategy = CLF_STRATEGY_STATIC;
    clf_arg la = CLF_OUT(h, sizeof h, 4);
    ck_assert_ok(clf_launch(f, p, &ld, &la, 1, NULL)); /* device 0 does the work */
    ck_assert(clf_device_is_failed(f, 1));
    clf_buffer *b = buffer(f, 1, sizeof h);
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "plain";
    d.global[0] = 256;
    clf_arg a = CLF_BUF_OUT(b);
    ck_assert_status(clf_kernel_run(f, p, 1, &d, &a, 1), CLF_ERROR_DEVICE_FAILED);
    ck_assert_msg(strstr(clf_last_error(), "plain") && strstr(clf_last_error(), "device 1"),
                  "%s", clf_last_error());
    ck_assert_ok(clf_device_readmit(f, 1));
    ck_assert_ok(clf_kernel_run(f, p, 1, &d, &a, 1));
    ck_assert_ok(clf_buffer_read(b, 0, sizeof h, h));
    for (int i = 0; i < 256; i++)
        ck_assert_uint_eq(h[i], 7u);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* A program that did not build for the device: CLF_ERROR_BUILD, naming the device. */
START_TEST(not_built_there)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = FLEET2;
    o.disable_cache = 1;
    setenv("CLFLEET_FAULT_INJECT", "device=1,call=build", 1);
    clf_fleet *f = NULL;
    clf_status cst = clf_fleet_create(&f, &o);
    unsetenv("CLFLEET_FAULT_INJECT");
    ck_assert_ok(cst);
    clf_program *p = build(f, SRC);
    ck_assert(clf_program_device_ok(p, 0) && !clf_program_device_ok(p, 1));
    clf_buffer *b0 = buffer(f, 0, 64 * 4), *b1 = buffer(f, 1, 64 * 4);
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "plain";
    d.global[0] = 64;
    clf_arg a0 = CLF_BUF_OUT(b0), a1 = CLF_BUF_OUT(b1);
    ck_assert_status(clf_kernel_run(f, p, 1, &d, &a1, 1), CLF_ERROR_BUILD);
    ck_assert_msg(strstr(clf_last_error(), "device 1") && strstr(clf_last_error(), "plain"),
                  "%s", clf_last_error());
    ck_assert_ok(clf_kernel_run(f, p, 0, &d, &a0, 1));
    clf_buffer_destroy(b0);
    clf_buffer_destroy(b1);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- bad input: refused with its status, nothing run ------------------------------------ */

/*
 * A kernel whose name is a macro: the source scan gives it the hidden range parameter under
 * the macro's name, the driver knows it by its own. clf_launch (in chunks over the devices)
 * and clf_kernel_enqueue run it with the result one device gives, and a typo of its name
 * lists the driver's names.
 */
static const char *MACRO_SRC =
    "#define KNAME my_kernel\n"
    "__kernel void KNAME(__global uint *o, uint add)\n"
    "{\n"
    "    o[get_global_id(0)] = (uint)get_global_size(0) * 10u + (uint)get_global_id(0) + add;\n"
    "}\n"
    "__kernel void named(__global uint *o) { o[get_global_id(0)] = (uint)get_global_size(0); }\n";

START_TEST(macro_named_kernel)
{
    enum { N = 4096 };
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = build(f, MACRO_SRC);
    static uint32_t h[N];
    uint32_t add = 5;
    clf_launch_desc ld = CLF_LAUNCH_DESC_INIT;
    ld.kernel = "my_kernel";
    ld.global[0] = N;
    ld.local[0] = 64;
    ld.strategy = CLF_STRATEGY_STATIC; /* a chunk per device: each needs the whole range */
    clf_arg la[2] = {CLF_OUT(h, sizeof h, 4), CLF_SCALAR(&add)};
    clf_status st = clf_launch(f, p, &ld, la, 2, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "clf_launch: %s: %s", clf_status_name(st), clf_last_error());
    for (uint32_t i = 0; i < N; i++)
        ck_assert_msg(h[i] == N * 10u + i + add, "h[%u] = %u", i, h[i]);
    /* One device, through clf_kernel_enqueue (clf_kernel_run waits for it). */
    for (size_t dev = 0; dev < clf_fleet_device_count(f); dev++) {
        clf_buffer *b = buffer(f, dev, sizeof h);
        clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
        d.kernel = "my_kernel";
        d.global[0] = 1000;
        clf_arg a[2] = {CLF_BUF_OUT(b), CLF_SCALAR(&add)};
        st = clf_kernel_run(f, p, dev, &d, a, 2);
        ck_assert_msg(st == CLF_SUCCESS, "device %zu: %s: %s", dev, clf_status_name(st),
                      clf_last_error());
        ck_assert_ok(clf_buffer_read(b, 0, 1000 * sizeof *h, h));
        for (uint32_t i = 0; i < 1000; i++)
            ck_assert_msg(h[i] == 10000u + i + add, "device %zu h[%u] = %u", dev, i, h[i]);
        /* The scanned name is no kernel; the refusal lists the driver's names. */
        d.kernel = "KNAME";
        ck_assert_status(clf_kernel_run(f, p, dev, &d, a, 2), CLF_ERROR_NOT_FOUND);
        ck_assert_msg(strstr(clf_last_error(), "no kernel 'KNAME' in the program (it has: ") &&
                          strstr(clf_last_error(), "my_kernel") &&
                          strstr(clf_last_error(), "named"),
                      "%s", clf_last_error());
        clf_buffer_destroy(b);
    }
    /* Over a block array (the array variant, whose kernels also move their pointers). */
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = 4;
    ad.shape[0] = N;
    clf_array *arr = NULL;
    ck_assert_ok(clf_array_create(&arr, f, &ad));
    clf_array_launch_desc al = CLF_ARRAY_LAUNCH_DESC_INIT;
    al.kernel = "my_kernel";
    al.global[0] = N;
    clf_arg aa[2] = {CLF_ARRAY_OUT(arr), CLF_SCALAR(&add)};
    st = clf_array_launch(f, p, &al, aa, 2);
    ck_assert_msg(st == CLF_SUCCESS, "clf_array_launch: %s: %s", clf_status_name(st),
                  clf_last_error());
    ck_assert_ok(clf_array_read(arr, NULL, NULL, h));
    for (uint32_t i = 0; i < N; i++)
        ck_assert_msg(h[i] == N * 10u + i + add, "array h[%u] = %u", i, h[i]);
    clf_array_destroy(arr);
    /* The kernel defined under its own name beside it is unaffected. */
    ld.kernel = "named";
    clf_arg ln = CLF_OUT(h, sizeof h, 4);
    ck_assert_ok(clf_launch(f, p, &ld, &ln, 1, NULL));
    for (uint32_t i = 0; i < N; i++)
        ck_assert_msg(h[i] == N, "named h[%u] = %u", i, h[i]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

static const char *BAD_SRC =
    "__kernel void two(__global const uint *in, __global uint *out)\n"
    "{ out[get_global_id(0)] = in[get_global_id(0)] + 1u; }\n"
    "__kernel void wr(__global uint *out) { out[get_global_id(0)] = 5u; }\n"
    "__kernel void loc(__global uint *out, __local uint *t)\n"
    "{ t[0] = 1u; out[get_global_id(0)] = t[0]; }\n"
    "__kernel void sizes(__global uint *out) { out[get_global_id(0)] = get_global_size(0); }\n";

START_TEST(bad_input)
{
    enum { N = 64 };
    clf_fleet *f = test_fleet(FLEET2, 0), *g = test_fleet(FLEET2, 0);
    clf_program *p = build(f, BAD_SRC), *pg = build(g, BAD_SRC);
    clf_buffer *in = buffer(f, 0, N * 4), *out = buffer(f, 0, N * 4), *far = buffer(f, 1, N * 4),
               *alien = buffer(g, 0, N * 4);
    uint32_t h[N], sentinel[N];
    for (int i = 0; i < N; i++)
        sentinel[i] = 0xDEAD0000u + (uint32_t)i;
    ck_assert_ok(clf_buffer_write(in, 0, sizeof h, sentinel));
    ck_assert_ok(clf_buffer_write(out, 0, sizeof h, sentinel));
    clf_event *done = NULL;
    ck_assert_ok(clf_event_record(&done, f, 0));
    clf_kernel_desc ok = CLF_KERNEL_DESC_INIT;
    ok.kernel = "two";
    ok.global[0] = N;
    clf_arg good[] = {CLF_BUF_IN(in), CLF_BUF_OUT(out)};
    uint32_t s = 1;

#define REFUSE(want, ...)                                                                       \
    do {                                                                                        \
        clf_event *e_ = (clf_event *)&ok;                                                       \
        ck_assert_status(clf_kernel_enqueue(__VA_ARGS__, &e_), want);                           \
        ck_assert_ptr_null(e_);                                                                 \
        ck_assert_msg(clf_last_error()[0], "no message");                                       \
    } while (0)

    REFUSE(CLF_ERROR_NULL_POINTER, NULL, p, 0, &ok, good, 2, NULL, 0);
    REFUSE(CLF_ERROR_OUT_OF_RANGE, f, p, 2, &ok, good, 2, NULL, 0);
    REFUSE(CLF_ERROR_NULL_POINTER, f, NULL, 0, &ok, good, 2, NULL, 0);
    REFUSE(CLF_ERROR_NULL_POINTER, f, p, 0, NULL, good, 2, NULL, 0);
    REFUSE(CLF_ERROR_INVALID_ARGUMENT, f, pg, 0, &ok, good, 2, NULL, 0); /* another fleet's */
    REFUSE(CLF_ERROR_NULL_POINTER, f, p, 0, &ok, NULL, 2, NULL, 0);
    REFUSE(CLF_ERROR_NULL_POINTER, f, p, 0, &ok, good, 2, NULL, 1);
    clf_event *nullev = NULL;
    REFUSE(CLF_ERROR_NULL_POINTER, f, p, 0, &ok, good, 2, &nullev, 1);

    /* The description. */
    struct {
        clf_status want;
        const char *kernel;
        unsigned version, dims;
        size_t off0, g0, g1, l0, l1;
        const char *says;
    } descs[] = {
        {CLF_ERROR_NULL_POINTER, NULL, 1, 1, 0, N, 1, 0, 0, "kernel is NULL"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", 0, 1, 0, N, 1, 0, 0, "version"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", 99, 1, 0, N, 1, 0, 0, "version"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", 1, 0, 0, N, 1, 0, 0, "dims"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", 1, 4, 0, N, 1, 0, 0, "dims"},
        {CLF_ERROR_ZERO_SIZE, "two", 1, 1, 0, 0, 1, 0, 0, "global size"},
        {CLF_ERROR_ZERO_SIZE, "two", 1, 2, 0, N, 0, 0, 0, "dimension 1"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", 1, 1, 0, N, 1, 5, 0, "does not divide"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", 1, 2, 0, N, 2, 8, 0, "local size"},
        {CLF_ERROR_SIZE_OVERFLOW, "two", 1, 1, SIZE_MAX - 2, N, 1, 0, 0, "overflow"},
        {CLF_ERROR_NOT_FOUND, "nope", 1, 1, 0, N, 1, 0, 0, "nope"},
    };
    for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
        clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
        d.kernel = descs[i].kernel;
        d.version = descs[i].version;
        d.dims = descs[i].dims;
        d.offset[0] = descs[i].off0;
        d.global[0] = descs[i].g0;
        d.global[1] = descs[i].g1;
        d.local[0] = descs[i].l0;
        d.local[1] = descs[i].l1;
        REFUSE(descs[i].want, f, p, 0, &d, good, 2, NULL, 0);
        ck_assert_msg(strstr(clf_last_error(), descs[i].says), "desc %zu: %s", i,
                      clf_last_error());
        if (descs[i].kernel)
            ck_assert_msg(strstr(clf_last_error(), descs[i].kernel), "desc %zu: %s", i,
                          clf_last_error());
    }

    /* The arguments. */
    /* A local size the device cannot take (limits well below 2^20 items). */
    clf_kernel_desc big = ok;
    big.global[0] = (size_t)1 << 20;
    big.local[0] = (size_t)1 << 20;
    REFUSE(CLF_ERROR_INVALID_ARGUMENT, f, p, 0, &big, good, 2, NULL, 0);
    ck_assert_msg(strstr(clf_last_error(), "exceeds the maximum"), "%s", clf_last_error());
    /* Access against the buffer's own flags. */
    clf_buffer *ro = NULL, *wo = NULL;
    ck_assert_ok(clf_buffer_create(&ro, f, 0, N * 4, CLF_MEM_READ_ONLY));
    ck_assert_ok(clf_buffer_create(&wo, f, 0, N * 4, CLF_MEM_WRITE_ONLY));
    clf_arg to_ro[] = {CLF_BUF_IN(in), CLF_BUF_OUT(ro)}, from_wo[] = {CLF_BUF_IN(wo),
                                                                       CLF_BUF_OUT(out)};
    REFUSE(CLF_ERROR_INVALID_ARGUMENT, f, p, 0, &ok, to_ro, 2, NULL, 0);
    ck_assert_msg(strstr(clf_last_error(), "CLF_MEM_READ_ONLY"), "%s", clf_last_error());
    REFUSE(CLF_ERROR_INVALID_ARGUMENT, f, p, 0, &ok, from_wo, 2, NULL, 0);
    ck_assert_msg(strstr(clf_last_error(), "CLF_MEM_WRITE_ONLY"), "%s", clf_last_error());
    clf_buffer_destroy(ro);
    clf_buffer_destroy(wo);

    clf_arg in_ok = CLF_BUF_IN(in), in_reserved = CLF_BUF_IN(in);
    in_reserved.reserved[1] = 1;
    struct {
        clf_status want;
        const char *kernel;
        clf_arg a0, a1;
        size_t nargs;
        const char *says;
    } bad[] = {
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_BUF_IN(in), CLF_BUF_OUT(out), 1, "takes 2"},
        {CLF_ERROR_INVALID_ARGUMENT, "wr", CLF_BUF_OUT(out), CLF_BUF_OUT(out), 2, "takes 1"},
        {CLF_ERROR_NULL_POINTER, "two", CLF_BUF_IN(NULL), CLF_BUF_OUT(out), 2, "argument 0"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_BUF_IN(far), CLF_BUF_OUT(out), 2, "device 1"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_BUF_IN(in), CLF_BUF_OUT(alien), 2,
         "another fleet"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF__ARG(CLF_ARG_KIND_BUFFER, 0, in, 0, 0, 0, 0),
         CLF_BUF_OUT(out), 2, "access"},
        {CLF_ERROR_UNSUPPORTED, "two", CLF_IN(sentinel, sizeof sentinel, 4), CLF_BUF_OUT(out),
         2, "clf_launch"},
        {CLF_ERROR_UNSUPPORTED, "two", CLF_BUF_IN(in),
         CLF_REDUCE(sentinel, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM), 2, "clf_launch"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF__ARG(99, 0, in, 0, 0, 0, 0), CLF_BUF_OUT(out), 2,
         "unknown kind"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", in_reserved, CLF_BUF_OUT(out), 2, "reserved"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_BUF_OUT(in), CLF_BUF_OUT(out), 2, "const"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_BUF_IN(in), CLF_BUF_IN(out), 2, "const"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_LOCAL(16), CLF_BUF_OUT(out), 2, "__local"},
        {CLF_ERROR_INVALID_ARGUMENT, "loc", CLF_BUF_OUT(out), CLF_BUF_OUT(out), 2, "__global"},
        {CLF_ERROR_ZERO_SIZE, "loc", CLF_BUF_OUT(out), CLF_LOCAL(0), 2, "0 bytes"},
        {CLF_ERROR_INVALID_ARGUMENT, "two", CLF_SCALAR(&s), CLF_BUF_OUT(out), 2, "pointer"},
        {CLF_ERROR_NULL_POINTER, "two", in_ok, CLF__ARG(CLF_ARG_KIND_SCALAR, 0, NULL, 4, 0, 0, 0),
         2, "scalar"},
        {CLF_ERROR_INVALID_ARGUMENT, "sizes", CLF_BUF_OUT(out), CLF_SCALAR(&s), 2, "takes 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clf_kernel_desc d = ok;
        d.kernel = bad[i].kernel;
        clf_arg args[2] = {bad[i].a0, bad[i].a1};
        REFUSE(bad[i].want, f, p, 0, &d, args, bad[i].nargs, &done, 1);
        ck_assert_msg(strstr(clf_last_error(), bad[i].says) &&
                          strstr(clf_last_error(), bad[i].kernel),
                      "arg case %zu: %s", i, clf_last_error());
    }
#undef REFUSE
    /* A buffer argument is not a launch's. */
    clf_launch_desc ld = CLF_LAUNCH_DESC_INIT;
    ld.kernel = "two";
    ld.global[0] = N;
    ck_assert_status(clf_launch(f, p, &ld, good, 2, NULL), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(clf_last_error(), "clf_kernel_enqueue"), "%s", clf_last_error());
    /* Nothing ran: both buffers still hold the sentinel. */
    ck_assert_ok(clf_device_finish(f, 0));
    ck_assert_ok(clf_buffer_read(out, 0, sizeof h, h));
    ck_assert_mem_eq(h, sentinel, sizeof h);
    ck_assert_ok(clf_buffer_read(in, 0, sizeof h, h));
    ck_assert_mem_eq(h, sentinel, sizeof h);
    /* And the good call runs; the hidden range parameter is not the caller's. */
    ck_assert_ok(clf_kernel_run(f, p, 0, &ok, good, 2));
    ck_assert_ok(clf_buffer_read(out, 0, sizeof h, h));
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(h[i], sentinel[i] + 1u);
    clf_kernel_desc sz = ok;
    sz.kernel = "sizes";
    sz.global[0] = N / 2;
    sz.offset[0] = N / 2;
    clf_arg one = CLF_BUF_OUT(out);
    ck_assert_ok(clf_kernel_run(f, p, 0, &sz, &one, 1));
    ck_assert_ok(clf_buffer_read(out, 0, sizeof h, h));
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(h[i], i < N / 2 ? sentinel[i] + 1u : N / 2);
    clf_event_release(done);
    clf_buffer_destroy(in);
    clf_buffer_destroy(out);
    clf_buffer_destroy(far);
    clf_buffer_destroy(alien);
    clf_program_destroy(p);
    clf_program_destroy(pg);
    clf_fleet_destroy(f);
    clf_fleet_destroy(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel");
    TCase *tc = tcase_create("kernel");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, argument_kinds, 0, 2);
    tcase_add_loop_test(tc, ndrange_builtins, 0, (int)NNDR);
    tcase_add_loop_test(tc, event_chain, 0, 2);
    tcase_add_loop_test(tc, event_chain_basic, 0, 2);
    tcase_add_loop_test(tc, concurrent_calls, 0, 2);
    tcase_add_loop_test(tc, event_outlives_objects, 0, 2);
    tcase_add_test(tc, metrics_count);
    tcase_add_test(tc, injected_fault);
    tcase_add_test(tc, failed_device_refused);
    tcase_add_test(tc, not_built_there);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, macro_named_kernel);
    suite_add_tcase(s, tc);
    return test_run_fleet4_fleet2(s);
}

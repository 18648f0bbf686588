/*
 * NDRange built-ins under clf_launch(): every item of every chunk, under every strategy, in
 * 1, 2 and 3 dimensions, must see what it sees on one device (get_global_size,
 * get_num_groups, get_group_id, get_global_offset, get_global_id, get_local_id/size,
 * get_work_dim, the group-derived index and a loop up to get_global_size), compared with
 * values the host computes in plain C. Also: helper functions (n-body loops over
 * get_global_size, every built-in through two levels of helpers) give what they give on one
 * device, compared with plain OpenCL; local sizes OpenCL would refuse are refused before any
 * work runs; a kernel clfleet cannot give the range's sizes is refused in chunks; task
 * queues get them.
 */
#include "common.h"

#include <CL/cl.h>

/* The loop index _i picks one of these (FLEET2, FLEET4, DEV3: common.h). */
static const fleet_cfg CFGS[] = {
    {FLEET2, 0, NULL, 2, "2 devices, shared context"},
    {FLEET2, 1, NULL, 2, "2 devices, context per device"},
    {FLEET4, 0, DEV3, 3, "3 of 4 devices, shared context"},
};
#define NCFGS ((int)(sizeof CFGS / sizeof CFGS[0]))

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};
#define NSTRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])

/* Per item, per dimension d (0..2): these fields at F * d + field; then work_dim, loop. */
enum { F_GSIZE, F_NGROUPS, F_GROUP, F_OFFSET, F_GID, F_LID, F_LSIZE, F_DERIVED, F };
enum { R_DIM = 3 * F, R_LOOP, R_ALL = 32 };

#define RECORD_BODY(gsize, ngroups)                                                             \
    "    size_t i = (get_global_id(2) * g1 + get_global_id(1)) * g0 + get_global_id(0);\n"     \
    "    __global uint *r = rec + 32 * i;\n"                                                      \
    "    for (uint d = 0; d < 3; d++) {\n"                                                        \
    "        r[8 * d + 0] = (uint)" gsize ";\n"                                                   \
    "        r[8 * d + 1] = (uint)" ngroups ";\n"                                                 \
    "        r[8 * d + 2] = (uint)get_group_id(d);\n"                                             \
    "        r[8 * d + 3] = (uint)get_global_offset(d);\n"                                        \
    "        r[8 * d + 4] = (uint)get_global_id(d);\n"                                            \
    "        r[8 * d + 5] = (uint)get_local_id(d);\n"                                             \
    "        r[8 * d + 6] = (uint)get_local_size(d);\n"                                           \
    "        r[8 * d + 7] = (uint)(get_group_id(d) * get_local_size(d) + get_local_id(d));\n"     \
    "    }\n"                                                                                     \
    "    r[24] = get_work_dim();\n"

static const char SRC[] =
    /* Every built-in of every dimension, and a loop bounded by get_global_size(). */
    "__kernel void record(__global uint *rec, uint g0, uint g1)\n"
    "{\n" RECORD_BODY("get_global_size(d)", "get_num_groups(d)")
    "    uint s = 0;\n"
    "    for (size_t j = 0; j < get_global_size(get_work_dim() - 1); j++)\n"
    "        s += (uint)j + 1;\n"
    "    r[25] = s;\n"
    "}\n"
    /* The textbook reduction: one partial per work-group, indexed by its group id. */
    "__kernel void partial_sums(__global const int *x, __local int *tmp,\n"
    "                           __global int *partial)\n"
    "{\n"
    "    size_t l = get_local_id(0);\n"
    "    tmp[l] = x[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {\n"
    "        if (l < s)\n"
    "            tmp[l] += tmp[l + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0 && get_group_id(0) < get_num_groups(0))\n"
    "        partial[get_group_id(0)] = tmp[0];\n"
    "}\n";

/* No get_global_size / get_num_groups anywhere: no hidden parameter, the prelude alone. */
static const char SRC_PLAIN[] =
    "__kernel void groups(__global uint *rec, uint g0, uint g1)\n"
    "{\n" RECORD_BODY("0", "0") "}\n";

typedef struct env {
    const fleet_cfg *cfg;
    clf_fleet *f;
    clf_program *p, *plain;
} env;

static void env_open(env *e, int i)
{
    e->cfg = &CFGS[i];
    e->f = test_fleet(e->cfg->selection, e->cfg->context_per_device);
    ck_assert_ok(clf_program_build_source(&e->p, e->f, SRC, NULL));
    ck_assert_ok(clf_program_build_source(&e->plain, e->f, SRC_PLAIN, NULL));
}

static void env_close(env *e)
{
    clf_program_destroy(e->p);
    clf_program_destroy(e->plain);
    clf_fleet_destroy(e->f);
}

typedef struct shape {
    unsigned dims;
    size_t global[3], local[3]; /* local all 0: none given */
} shape;

static const shape SHAPES[] = {
    {1, {4096, 1, 1}, {64, 1, 1}},  {1, {3 * 37, 1, 1}, {37, 1, 1}},
    {2, {24, 40, 1}, {8, 4, 1}},    {3, {6, 10, 14}, {3, 5, 7}},
    {1, {4099, 1, 1}, {0, 0, 0}},   {2, {13, 101, 1}, {0, 0, 0}},
    {3, {5, 7, 11}, {0, 0, 0}},     {1, {4096, 1, 1}, {0, 0, 0}},
};
#define NSHAPES (sizeof SHAPES / sizeof SHAPES[0])

/*
 * Compare every item's record with one device's values. full: the kernel reads
 * get_global_size/get_num_groups (one local size in every chunk, which must divide the
 * range); else (no local size given) only the group-derived values are checked per item.
 */
static void check_records(const shape *sh, const uint32_t *rec, int full, const char *what)
{
    size_t n = sh->global[0] * sh->global[1] * sh->global[2];
    size_t L[3];
    for (unsigned d = 0; d < 3; d++) /* the local size: the user's, else what item 0 saw */
        L[d] = sh->local[0] ? sh->local[d] : rec[F * d + F_LSIZE];
    for (unsigned d = 0; full && d < sh->dims; d++)
        expect(L[d] && sh->global[d] % L[d] == 0, "%s: local size %zu does not divide %zu", what,
               L[d], sh->global[d]);
    for (size_t i = 0; i < n; i++) {
        const uint32_t *r = rec + R_ALL * i;
        size_t id[3] = {i % sh->global[0], i / sh->global[0] % sh->global[1],
                        i / sh->global[0] / sh->global[1]};
        for (unsigned d = 0; d < 3; d++) {
            const uint32_t *q = r + F * d;
            int in = d < sh->dims;
            size_t G = in ? sh->global[d] : 1, l = in ? (full || sh->local[0] ? L[d]
                                                                          : q[F_LSIZE]) : 1;
            uint32_t want[F] = {(uint32_t)G, (uint32_t)(G / l), (uint32_t)(id[d] / l), 0,
                                (uint32_t)id[d], (uint32_t)(id[d] % l), (uint32_t)l,
                                (uint32_t)id[d]};
            for (unsigned k = 0; k < F; k++) {
                if (!full && (k == F_GSIZE || k == F_NGROUPS))
                    continue; /* the real built-ins: the chunk's, not read here */
                expect(q[k] == want[k], "%s: item %zu dim %u field %u = %u, want %u", what, i,
                       d, k, q[k], want[k]);
            }
        }
        expect(r[R_DIM] == sh->dims, "%s: item %zu work_dim %u", what, i, r[R_DIM]);
        if (full) {
            uint32_t G = (uint32_t)sh->global[sh->dims - 1];
            uint32_t s = (uint32_t)((uint64_t)G * (G + 1) / 2);
            expect(r[R_LOOP] == s, "%s: item %zu loop sum %u, want %u", what, i, r[R_LOOP], s);
        }
    }
}

static clf_launch_desc shape_desc(const env *e, const shape *sh, const char *k, clf_strategy s)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = k;
    d.strategy = s;
    d.dims = sh->dims;
    memcpy(d.global, sh->global, sizeof d.global);
    if (sh->local[0])
        memcpy(d.local, sh->local, sizeof d.local);
    d.devices = e->cfg->devices;
    d.num_devices = e->cfg->devices ? e->cfg->ndev : 0;
    d.chunks_per_device = 4;
    return d;
}

static void run_shapes(int i, int full)
{
    env e;
    env_open(&e, i);
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < NSHAPES; k++) {
            const shape *sh = &SHAPES[k];
            size_t n = sh->global[0] * sh->global[1] * sh->global[2];
            size_t unit = R_ALL * sizeof(uint32_t) * (n / sh->global[sh->dims - 1]);
            uint32_t *rec = malloc(n * R_ALL * sizeof *rec), g0 = (uint32_t)sh->global[0],
                     g1 = (uint32_t)sh->global[1];
            ck_assert_ptr_nonnull(rec);
            memset(rec, 0xee, n * R_ALL * sizeof *rec);
            clf_arg args[] = {CLF_OUT(rec, n * R_ALL * sizeof *rec, unit), CLF_SCALAR(&g0),
                              CLF_SCALAR(&g1)};
            clf_launch_desc d = shape_desc(&e, sh, full ? "record" : "groups", STRATEGIES[s]);
            clf_launch_report rep;
            clf_status st = clf_launch(e.f, full ? e.p : e.plain, &d, args, 3, &rep);
            char what[200];
            snprintf(what, sizeof what, "%s, %s, %s, %uD %zu x %zu x %zu local %zu", e.cfg->label,
                     d.kernel, clf_strategy_name(STRATEGIES[s]), sh->dims, sh->global[0],
                     sh->global[1], sh->global[2], sh->local[0]);
            expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());
            unsigned chunks = 0;
            for (size_t j = 0; j < rep.num_devices; j++)
                chunks += rep.dev[j].chunks;
            /* The test means something only if ranges were really cut. */
            if (STRATEGIES[s] == CLF_STRATEGY_DYNAMIC && sh->global[sh->dims - 1] >= 16 * 8)
                expect(chunks > 1, "%s: one chunk only", what);
            check_records(sh, rec, full, what);
            free(rec);
        }
    env_close(&e);
}

START_TEST(builtins_as_on_one_device)
{
    run_shapes(_i, 1);
}
END_TEST

/* Without the hidden parameter (no get_global_size in the source): group ids, offsets and
 * the group-derived index, also where the last chunk runs with a smaller local size. */
START_TEST(group_ids_without_range_arg)
{
    run_shapes(_i, 0);
}
END_TEST

/* partial[get_group_id(0)] = ...: every group's partial, as one device computes it. */
START_TEST(textbook_partial_sums)
{
    env e;
    env_open(&e, _i);
    enum { N = 4096, LO = 64, NG = N / LO };
    int32_t *x = malloc(N * sizeof *x), partial[NG];
    for (size_t k = 0; k < N; k++)
        x[k] = (int32_t)(lowbias32((uint32_t)k) % 2001) - 1000;
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_arg args[] = {CLF_IN(x, N * sizeof *x, sizeof *x), CLF_LOCAL(LO * sizeof(int32_t)),
                          CLF_REDUCE(partial, NG, CLF_TYPE_INT32, CLF_REDUCE_SUM)};
        shape sh = {1, {N, 1, 1}, {LO, 1, 1}};
        clf_launch_desc d = shape_desc(&e, &sh, "partial_sums", STRATEGIES[s]);
        clf_launch_report rep;
        ck_assert_ok(clf_launch(e.f, e.p, &d, args, 3, &rep));
        for (size_t g = 0; g < NG; g++) {
            int32_t want = 0;
            for (size_t k = g * LO; k < (g + 1) * LO; k++)
                want += x[k];
            expect(partial[g] == want, "%s, %s: partial[%zu] = %d, want %d", e.cfg->label,
                   clf_strategy_name(STRATEGIES[s]), g, partial[g], want);
        }
    }
    free(x);
    env_close(&e);
}
END_TEST

/* A helper function that calls get_global_size() gets the range's sizes too, in chunks;
 * line numbers stay the user's. */
START_TEST(helper_function_gets_the_range)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = NULL;
    static const char helper[] =
        "size_t halfsize(void) { return get_global_size(0) / 2; }\n"
        "__kernel void k(__global uint *o) { o[get_global_id(0)] = (uint)halfsize(); }\n";
    ck_assert_ok(clf_program_build_source(&p, f, helper, NULL));
    enum { N = 1000 };
    uint32_t out[N];
    memset(out, 0xee, sizeof out);
    clf_arg args[] = {CLF_OUT(out, sizeof out, sizeof out[0])};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "k";
    d.global[0] = N;
    d.strategy = CLF_STRATEGY_DYNAMIC;
    d.chunks_per_device = 4; /* chunks asked for: kept even once the cost model knows both */
    clf_launch_report rep;
    ck_assert_ok(clf_launch(f, p, &d, args, 1, &rep));
    ck_assert_uint_gt(rep.dev[0].chunks + rep.dev[1].chunks, 1);
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], N / 2);
    /* One kernel on one device (clf_kernel_run) sets the parameter the helper reads too. */
    clf_buffer *b = NULL;
    ck_assert_ok(clf_buffer_create(&b, f, 1, 64 * sizeof(uint32_t), 0));
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = "k";
    kd.global[0] = 64;
    clf_arg bargs[] = {CLF_BUF_OUT(b)};
    ck_assert_ok(clf_kernel_run(f, p, 1, &kd, bargs, 1));
    ck_assert_ok(clf_buffer_read(b, 0, 64 * sizeof(uint32_t), out));
    for (size_t i = 0; i < 64; i++)
        ck_assert_uint_eq(out[i], 32);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    p = NULL;
    const char *msg;
    /* An error on line 3 of a rewritten source is reported on line 3. */
    static const char line3[] = "__kernel void k(__global uint *o)\n"
                                "{\n"
                                "    o[get_global_id(0)] = (uint)get_global_size(0) + oops;\n"
                                "}\n";
    ck_assert_status(clf_program_build_source(&p, f, line3, NULL), CLF_ERROR_BUILD);
    msg = clf_last_error();
    ck_assert_msg(strstr(msg, ":3:") && strstr(msg, "oops") && !strstr(msg, "hint:"),
                  "not on line 3: %s", msg);
    /* Kernels in every form the scan must follow still build and get the parameter. */
    static const char forms[] =
        "/* __kernel void not_me(int x) */ // kernel void nor_me(\n"
        "#define K __kernel\n"
        "__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void a(void);\n"
        "__kernel __attribute__((reqd_work_group_size(1, 1, 1))) void a(void)\n"
        "{ if (get_global_size(0) == 0) (void)get_num_groups(0); }\n"
        "__constant char str[] = \"kernel void x(\";\n"
        "kernel void b() { char c = '('; (void)c; }\n"
        "__kernel void\n  c(__global uint *o,\n  uint n) { o[0] = get_num_groups(0) + n; }\n";
    ck_assert_ok(clf_program_build_source(&p, f, forms, NULL));
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- helper functions (core/rangearg.c threads the range down the call graph) ---- */

/*
 * Run kernel of src with plain OpenCL on the first PoCL CPU device, over global (local: 0
 * for the driver's choice): arg 0 is in (in_bytes, a read-only buffer), arg 1 out
 * (out_bytes, written), then the scalars (nsc of them, each 4 bytes). The one-device
 * reference that clf_launch must match.
 */
static void plain_opencl_run(const char *src, const char *options, const char *kernel,
                             const void *in, size_t in_bytes, void *out, size_t out_bytes,
                             const uint32_t *sc, unsigned nsc, unsigned dims,
                             const size_t *global, const size_t *local)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    ck_assert_int_eq(clGetPlatformIDs(8, plats, &np), CL_SUCCESS);
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, "Portable") &&
            clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    }
    ck_assert_msg(dev != NULL, "no PoCL CPU device for the plain OpenCL reference");
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4000] = "";
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        ck_abort_msg("plain OpenCL build failed: %s", log);
    }
    cl_kernel k = clCreateKernel(prog, kernel, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in_bytes,
                              (void *)in, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, out_bytes, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 0, sizeof a, &a), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 1, sizeof b, &b), CL_SUCCESS);
    for (unsigned i = 0; i < nsc; i++)
        ck_assert_int_eq(clSetKernelArg(k, 2 + i, sizeof sc[i], &sc[i]), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, dims, NULL, global,
                                            local && local[0] ? local : NULL, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(q, b, CL_TRUE, 0, out_bytes, out, 0, NULL, NULL),
                     CL_SUCCESS);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}

/* An n-body step as published codes write it: the helpers loop over get_global_size(). */
static const char NBODY[] =
    "float3 pull(float4 me, float4 other)\n"
    "{\n"
    "    float3 d = other.xyz - me.xyz;\n"
    "    float r2 = dot(d, d) + 0.01f;\n"
    "    return d * (other.w / (r2 * sqrt(r2)));\n"
    "}\n"
    "float3 accel(__global const float4 *pos, float4 me)\n"
    "{\n"
    "    float3 a = (float3)(0.0f);\n"
    "    for (int i = 0; i < get_global_size(0); i++)\n"
    "        a += pull(me, pos[i]);\n"
    "    return a;\n"
    "}\n"
    "float mass_total(__global const float4 *pos)\n"
    "{\n"
    "    float m = 0.0f;\n"
    "    for (size_t i = 0; i < get_global_size(0); i++)\n"
    "        m += pos[i].w;\n"
    "    return m;\n"
    "}\n"
    "__kernel void nbody(__global const float4 *pos, __global float4 *acc)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    acc[i] = (float4)(accel(pos, pos[i]), mass_total(pos));\n"
    "}\n";

/* n-body, split over 2 and 3 devices with every strategy: bit for bit the plain one-device
 * run (same PoCL device kind, same compiler). */
START_TEST(helpers_nbody)
{
    const fleet_cfg *cfg = &CFGS[_i];
    clf_fleet *f = test_fleet(cfg->selection, cfg->context_per_device);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, NBODY, NULL));
    enum { N = 1536 };
    float *pos = malloc(N * 4 * sizeof *pos), *ref = malloc(N * 4 * sizeof *ref),
          *acc = malloc(N * 4 * sizeof *acc);
    ck_assert(pos && ref && acc);
    uint64_t seed = 42;
    for (size_t i = 0; i < 4 * N; i++)
        pos[i] = (float)(xorshift64(&seed) % 20000) / 1000.0f - (i % 4 == 3 ? -1.0f : 10.0f);
    size_t g = N, l = 64;
    plain_opencl_run(NBODY, NULL, "nbody", pos, N * 4 * sizeof *pos, ref, N * 4 * sizeof *ref,
                     NULL, 0, 1, &g, &l);
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(acc, 0xee, N * 4 * sizeof *acc);
        clf_arg args[] = {CLF_BROADCAST(pos, N * 4 * sizeof *pos),
                          CLF_OUT(acc, N * 4 * sizeof *acc, 4 * sizeof *acc)};
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "nbody";
        d.global[0] = N;
        d.local[0] = l;
        d.strategy = STRATEGIES[s];
        d.devices = cfg->devices;
        d.num_devices = cfg->devices ? cfg->ndev : 0;
        d.chunks_per_device = 4;
        clf_launch_report rep;
        ck_assert_ok(clf_launch(f, p, &d, args, 2, &rep));
        size_t used = 0;
        for (size_t j = 0; j < rep.num_devices; j++)
            used += rep.dev[j].chunks > 0;
        if (STRATEGIES[s] == CLF_STRATEGY_STATIC || STRATEGIES[s] == CLF_STRATEGY_DYNAMIC)
            expect(used > 1, "%s, %s: one device ran it all", cfg->label,
                   clf_strategy_name(STRATEGIES[s]));
        for (size_t i = 0; i < 4 * N; i++)
            expect(!memcmp(&acc[i], &ref[i], sizeof acc[i]), "%s, %s: acc[%zu] = %.9g, want %.9g",
                   cfg->label, clf_strategy_name(STRATEGIES[s]), i, acc[i], ref[i]);
    }
    free(pos);
    free(ref);
    free(acc);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/*
 * Every range built-in through two levels of helpers, with a prototype before its
 * definition, a helper called twice in one expression and one that uses no built-in (left
 * as it is: it is also called with a literal argument list of its own).
 */
static const char LEVELS[] =
    "uint level2(uint d);\n"
    "uint plain_mix(uint a, uint b) { return a * 31u + b; }\n"
    "#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200\n"
    "#define ENQ(d) get_enqueued_local_size(d)\n"
    "#else\n"
    "#define ENQ(d) get_local_size(d)\n"
    "#endif\n"
    "uint level1(__global uint *r, uint d)\n"
    "{\n"
    "    r[0] = level2(d);\n"
    "    r[1] = (uint)get_num_groups(d) + 0 * level2(d) + level2(d) - level2(d);\n"
    "    return plain_mix(r[0], r[1]);\n"
    "}\n"
    "uint level2(uint d)\n"
    "{\n"
    "    return (uint)get_global_size(d);\n"
    "}\n"
    "void groups(__global uint *r, uint d)\n"
    "{\n"
    "    r[2] = (uint)get_group_id(d);\n"
    "    r[3] = (uint)get_global_offset(d);\n"
    "    r[4] = (uint)ENQ(d);\n"
    "    r[5] = (uint)get_num_groups(d);\n"
    "}\n"
    "uint via(__global uint *r, uint d) { groups(r, d); return level1(r, d); }\n"
    "__kernel void levels(__global const uint *unused, __global uint *rec, uint g0)\n"
    "{\n"
    "    size_t i = get_global_id(1) * g0 + get_global_id(0);\n"
    "    __global uint *r = rec + 16 * i;\n"
    "    r[6] = via(r + 8, 0);\n"
    "    r[7] = via(r, 1);\n"
    "}\n";

START_TEST(helpers_two_levels)
{
    const fleet_cfg *cfg = &CFGS[_i];
    clf_fleet *f = test_fleet(cfg->selection, cfg->context_per_device);
    clf_program *p = NULL;
    const char *opts = "-cl-std=CL2.0";
    if (clf_program_build_source(&p, f, LEVELS, opts) == CLF_ERROR_BUILD) {
        opts = NULL; /* no OpenCL C 2.0: get_local_size stands in */
        ck_assert_ok(clf_program_build_source(&p, f, LEVELS, opts));
    }
    enum { W = 24, H = 60, LW = 4, LH = 5 };
    size_t g[2] = {W, H}, l[2] = {LW, LH};
    uint32_t *rec = malloc(W * H * 16 * sizeof *rec), *ref = malloc(W * H * 16 * sizeof *ref);
    uint32_t unused = 0, g0 = W;
    ck_assert(rec && ref);
    memset(ref, 0, W * H * 16 * sizeof *ref);
    plain_opencl_run(LEVELS, opts, "levels", &unused, sizeof unused, ref,
                     W * H * 16 * sizeof *ref, &g0, 1, 2, g, l);
    /* The plain run itself, against what OpenCL says. */
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++) {
            const uint32_t *r = ref + 16 * (y * W + x);
            expect(r[0] == H && r[1] == H / LH && r[2] == y / LH && r[3] == 0 && r[4] == LH &&
                       r[5] == H / LH && r[8] == W && r[9] == W / LW && r[10] == x / LW &&
                       r[11] == 0 && r[12] == LW && r[13] == W / LW &&
                       r[6] == W * 31u + W / LW && r[7] == H * 31u + H / LH,
                   "plain reference wrong at (%zu, %zu)", x, y);
        }
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(rec, 0xee, W * H * 16 * sizeof *rec);
        clf_arg args[] = {CLF_BROADCAST(&unused, sizeof unused),
                          CLF_OUT(rec, W * H * 16 * sizeof *rec, W * 16 * sizeof *rec),
                          CLF_SCALAR(&g0)};
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "levels";
        d.dims = 2;
        memcpy(d.global, g, sizeof g);
        memcpy(d.local, l, sizeof l);
        d.strategy = STRATEGIES[s];
        d.devices = cfg->devices;
        d.num_devices = cfg->devices ? cfg->ndev : 0;
        d.chunks_per_device = 4;
        ck_assert_ok(clf_launch(f, p, &d, args, 3, NULL));
        for (size_t i = 0; i < W * H * 16; i++)
            expect(i % 16 >= 14 || rec[i] == ref[i], /* 14, 15: not written */ "%s, %s: rec[%zu] (item %zu field %zu) = %u, want %u",
                   cfg->label, clf_strategy_name(STRATEGIES[s]), i, i / 16, i % 16, rec[i],
                   ref[i]);
    }
    free(rec);
    free(ref);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* Local sizes OpenCL would refuse: a clear status naming the problem, before any work. */
START_TEST(bad_local_sizes_refused)
{
    env e;
    env_open(&e, _i);
    enum { N = 8192 };
    uint32_t *rec = malloc(N * R_ALL * sizeof *rec), g0, g1 = 1;
    static const shape bad[] = {
        {1, {100, 1, 1}, {8, 1, 1}},     /* 100 % 8 along the split dimension */
        {2, {24, 40, 1}, {5, 4, 1}},     /* 24 % 5 */
        {3, {6, 10, 14}, {3, 5, 4}},     /* 14 % 4 */
        {1, {8192, 1, 1}, {8192, 1, 1}}, /* more than any PoCL work-group */
        {2, {8192, 1, 1}, {8192, 1, 1}}, /* too many items along dimension 0 */
    };
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            const shape *sh = &bad[k];
            size_t n = sh->global[0] * sh->global[1] * sh->global[2];
            memset(rec, 0xee, N * R_ALL * sizeof *rec);
            g0 = (uint32_t)sh->global[0];
            clf_arg args[] = {
                CLF_OUT(rec, n * R_ALL * sizeof *rec,
                        R_ALL * sizeof *rec * (n / sh->global[sh->dims - 1])),
                CLF_SCALAR(&g0), CLF_SCALAR(&g1)};
            clf_launch_desc d = shape_desc(&e, sh, "record", STRATEGIES[s]);
            clf_clear_error();
            clf_status st = clf_launch(e.f, e.p, &d, args, 3, NULL);
            const char *msg = clf_last_error();
            expect(st == CLF_ERROR_INVALID_ARGUMENT, "case %zu, %s: %s", k,
                   clf_status_name(st), msg);
            expect(strstr(msg, "record") && (strstr(msg, "local size") ||
                                             strstr(msg, "work-groups")),
                   "case %zu: %s", k, msg);
            if (k >= 3)
                expect(strstr(msg, "device") != NULL, "case %zu names no device: %s", k, msg);
            for (size_t j = 0; j < N * R_ALL; j++)
                expect(rec[j] == 0xeeeeeeeeu, "case %zu: rec[%zu] written", k, j);
        }
    free(rec);
    env_close(&e);
}
END_TEST

/* A kernel made by a macro is not found by the scan: it has no hidden parameter, so clfleet
 * refuses to cut it into chunks (one device runs it), and says so. */
START_TEST(unknown_kernel_refused_in_chunks)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = NULL;
    static const char src[] =
        "#define MAKE(name) __kernel void name(__global uint *o) { o[get_global_id(0)] = 7; }\n"
        "MAKE(viamacro)\n"
        "__kernel void size(__global uint *o) { o[get_global_id(0)] = get_global_size(0); }\n";
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    enum { N = 1000 };
    uint32_t out[N];
    memset(out, 0xee, sizeof out);
    clf_arg args[] = {CLF_OUT(out, sizeof out, sizeof out[0])};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "viamacro";
    d.global[0] = N;
    d.strategy = CLF_STRATEGY_DYNAMIC;
    ck_assert_status(clf_launch(f, p, &d, args, 1, NULL), CLF_ERROR_UNSUPPORTED);
    const char *msg = clf_last_error();
    ck_assert_msg(strstr(msg, "viamacro") && strstr(msg, "get_global_size") &&
                      strstr(msg, "one device"),
                  "%s", msg);
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], 0xeeeeeeeeu);
    size_t one = 1;
    d.devices = &one;
    d.num_devices = 1;
    d.strategy = CLF_STRATEGY_STATIC;
    ck_assert_ok(clf_launch(f, p, &d, args, 1, NULL));
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], 7);
    d.kernel = "size";
    d.devices = NULL;
    d.num_devices = 0;
    d.strategy = CLF_STRATEGY_DYNAMIC;
    ck_assert_ok(clf_launch(f, p, &d, args, 1, NULL));
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], N);
    clf_program_destroy(p);

    /* Kernels of an included file are not found either. Those that call the built-ins fail
     * to build (the macros name a parameter they lack); the others run in chunks. */
    char dir[] = "/tmp/clf-builtins-XXXXXX", path[64], opts[80];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/inc.cl", dir);
    snprintf(opts, sizeof opts, "-I %s", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("__kernel void inc(__global uint *o) { o[get_global_id(0)] = get_group_id(0); }\n",
          fp);
    fclose(fp);
    static const char inc[] = "#include \"inc.cl\"\n";
    ck_assert_ok(clf_program_build_source(&p, f, inc, opts));
    d.kernel = "inc";
    d.local[0] = 10;
    ck_assert_ok(clf_launch(f, p, &d, args, 1, NULL));
    for (size_t i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], i / 10);
    clf_program_destroy(p);
    unlink(path);
    /* Another name: the binary cache knows the source, not what it includes. */
    snprintf(path, sizeof path, "%s/inc2.cl", dir);
    fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("__kernel void inc(__global uint *o) { o[get_global_id(0)] = get_global_size(0); }\n",
          fp);
    fclose(fp);
    ck_assert_status(clf_program_build_source(&p, f, "#include \"inc2.cl\"\n", opts),
                     CLF_ERROR_BUILD);
    ck_assert_msg(strstr(clf_last_error(), "hint:") != NULL, "%s", clf_last_error());
    unlink(path);
    rmdir(dir);
    clf_fleet_destroy(f);
}
END_TEST

/* OpenCL C 2.0's get_global_linear_id() counts from the range's start too. */
START_TEST(global_linear_id)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = NULL;
    static const char src[] = "__kernel void lin(__global uint *o, uint g0)\n"
                              "{\n"
                              "    o[get_global_id(1) * g0 + get_global_id(0)] =\n"
                              "        (uint)get_global_linear_id();\n"
                              "}\n";
    clf_status st = clf_program_build_source(&p, f, src, "-cl-std=CL2.0");
    if (st == CLF_ERROR_BUILD) { /* a device without OpenCL C 2.0 */
        fprintf(stderr, "global_linear_id: no OpenCL C 2.0, not run: %.300s\n",
                clf_last_error());
        clf_fleet_destroy(f);
        return;
    }
    ck_assert_ok(st);
    enum { W = 40, H = 24 };
    uint32_t out[W * H], g0 = W;
    clf_arg args[] = {CLF_OUT(out, sizeof out, W * sizeof out[0]), CLF_SCALAR(&g0)};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(out, 0xee, sizeof out);
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "lin";
        d.dims = 2;
        d.global[0] = W;
        d.global[1] = H;
        d.strategy = STRATEGIES[s];
        d.chunks_per_device = 4;
        ck_assert_ok(clf_launch(f, p, &d, args, 2, NULL));
        for (uint32_t i = 0; i < W * H; i++)
            expect(out[i] == i, "%s: out[%u] = %u", clf_strategy_name(STRATEGIES[s]), i, out[i]);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* Task queues set the hidden parameter to each task's own range. */
START_TEST(taskq_gets_the_range)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    clf_taskq *q = NULL;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    enum { NT = 6 };
    uint32_t *rec[NT], g0[NT], g1 = 1;
    for (size_t t = 0; t < NT; t++) {
        size_t n = 50 + 17 * t;
        g0[t] = (uint32_t)n;
        rec[t] = calloc(n * R_ALL, sizeof **rec);
        clf_arg a[] = {CLF_WHOLE_OUT(rec[t], n * R_ALL * sizeof **rec),
                       CLF_SCALAR(&g0[t]), CLF_SCALAR(&g1)};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "record";
        d.global[0] = n;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 3, NULL));
    }
    ck_assert_ok(clf_taskq_run(q, NULL));
    for (size_t t = 0; t < NT; t++) {
        for (size_t i = 0; i < g0[t]; i++) {
            const uint32_t *r = rec[t] + R_ALL * i;
            ck_assert_uint_eq(r[F_GSIZE], g0[t]);
            ck_assert_uint_eq(r[F + F_GSIZE], 1);
            ck_assert_uint_eq(r[F_NGROUPS] * r[F_LSIZE], g0[t]);
            ck_assert_uint_eq(r[R_LOOP], g0[t] * (g0[t] + 1) / 2);
        }
        free(rec[t]);
    }
    clf_taskq_destroy(q);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("builtins");
    TCase *tc = tcase_create("builtins");
    tcase_add_loop_test(tc, builtins_as_on_one_device, 0, NCFGS);
    tcase_add_loop_test(tc, group_ids_without_range_arg, 0, NCFGS);
    tcase_add_loop_test(tc, textbook_partial_sums, 0, NCFGS);
    tcase_add_test(tc, helper_function_gets_the_range);
    tcase_add_loop_test(tc, helpers_nbody, 0, NCFGS);
    tcase_add_loop_test(tc, helpers_two_levels, 0, NCFGS);
    tcase_add_loop_test(tc, bad_local_sizes_refused, 0, 1);
    tcase_add_loop_test(tc, bad_local_sizes_refused, 2, 3);
    tcase_add_test(tc, unknown_kernel_refused_in_chunks);
    tcase_add_test(tc, global_linear_id);
    tcase_add_test(tc, taskq_gets_the_range);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run_fleet4_fleet2(suite());
}

/*
 * One kernel launch across the fleet: every strategy, awkward sizes, halos, reductions,
 * memory limits, asynchronous launches and every bad-input case, compared exactly with a
 * plain C reference (integer data, or float data whose results are exactly representable,
 * so no rounding or contraction can hide a wrong chunk).
 */
#include "common.h"

#include <dirent.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

/* The loop index _i of the device tests picks one of these (FLEET2, FLEET4, DEV3: common.h). */
static const fleet_cfg CFGS[] = {
    {FLEET2, 0, NULL, 2, "2 devices, shared context"},
    {FLEET2, 1, NULL, 2, "2 devices, context per device"},
    {FLEET4, 0, DEV3, 3, "3 of 4 devices, shared context"},
    {FLEET4, 1, DEV3, 3, "3 of 4 devices, context per device"},
};
#define NCFGS ((int)(sizeof CFGS / sizeof CFGS[0]))

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};
#define NSTRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])

/* 1, primes, fewer items than devices, not a multiple of any local size. */
static const size_t SIZES[] = {1, 2, 3, 7, 13, 101, 1000, 4099, 65537};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])

/*
 * Kernels. Chunk-indexed ones use explicit arithmetic (the chunk's offset, CLF_CHUNK_OFFSET,
 * and the halo passed as a scalar) rather than CLF_CHUNK_UNIT, so the test states the layout
 * itself.
 */
static const char SRC[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    TEST_CL_LOWBIAS32
    "__kernel void vadd(__global const float *a, __global const float *b, __global float *c)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void saxpy(float alpha, __global const float *x, __global float *y)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = alpha * x[i] + y[i];\n"
    "}\n"
    "__kernel void hash32(__global uint *out, uint seed)\n"
    "{\n"
    "    out[get_global_id(0)] = lowbias32((uint)get_global_id(0) ^ seed);\n"
    "}\n"
    /* Irregular work: the last sixteenth of the range costs thousands of times the rest. */
    "__kernel void tail_heavy(__global uint *out, uint n)\n"
    "{\n"
    "    uint i = get_global_id(0), x = i, reps = i >= n - n / 16 ? 20000 : 1;\n"
    "    for (uint r = 0; r < reps; r++) x = lowbias32(x + r);\n"
    "    out[i] = x;\n"
    "}\n"
    "__kernel void hash3d(__global uint *out, uint seed, uint w, uint h)\n"
    "{\n"
    "    size_t i = (get_global_id(2) * h + get_global_id(1)) * w + get_global_id(0);\n"
    "    out[i] = lowbias32((uint)i ^ seed);\n"
    "}\n"
    "__kernel void affine(__global uint *y, uint m, uint c)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = y[i] * m + c;\n"
    "}\n"
    /* A 5x5 integer Gaussian (1 4 6 4 1 squared, / 256), clamp-to-edge. */
    "__constant uint GW[5] = {1, 4, 6, 4, 1};\n"
    "__kernel void blur(__global const uint *in, __global uint *out, int w, int h)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    uint s = 0;\n"
    "    for (int dy = -2; dy <= 2; dy++) {\n"
    "        int yy = clamp(y + dy, 0, h - 1);\n"
    "        for (int dx = -2; dx <= 2; dx++)\n"
    "            s += GW[dy + 2] * GW[dx + 2] * in[yy * w + clamp(x + dx, 0, w - 1)];\n"
    "    }\n"
    "    out[y * w + x] = s >> 8;\n"
    "}\n"
    /* The same with chunk-indexed buffers: row r of the image is row r - y0 + hb of in. */
    "__kernel void blur_chunk(__global const uint *in, __global uint *out, int w, int h,\n"
    "                         int hb)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1), y0 = CLF_CHUNK_OFFSET(1);\n"
    "    uint s = 0;\n"
    "    for (int dy = -2; dy <= 2; dy++) {\n"
    "        int yy = clamp(y + dy, 0, h - 1) - y0 + hb;\n"
    "        for (int dx = -2; dx <= 2; dx++)\n"
    "            s += GW[dy + 2] * GW[dx + 2] * in[yy * w + clamp(x + dx, 0, w - 1)];\n"
    "    }\n"
    "    out[(y - y0) * w + x] = s >> 8;\n"
    "}\n"
    "__kernel void addmul_chunk(__global const uint *a, __global const uint *b,\n"
    "                           __global uint *s, __global uint *p)\n"
    "{\n"
    "    size_t i = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    s[i] = a[i] + b[i];\n"
    "    p[i] = a[i] * b[i];\n"
    "}\n"
    "__kernel void sum_min(__global const int *x, __global uint *sum, __global int *mn)\n"
    "{\n"
    "    int v = x[get_global_id(0)];\n"
    "    atomic_add(sum, (uint)v);\n"
    "    atomic_min(mn, v);\n"
    "}\n"
    /* Per work-group partials: group ids count from the range's start in every chunk, as on
     * one device, so each group's partial lands in its own element (the other devices hold
     * the identity there, which += and max= keep). */
    "__kernel void group_sum_max(__global const int *x, __local long *ls, __local float *lm,\n"
    "                            __global long *sum, __global float *mx)\n"
    "{\n"
    "    size_t l = get_local_id(0), g = get_group_id(0);\n"
    "    int v = x[get_global_id(0)];\n"
    "    ls[l] = v;\n"
    "    lm[l] = (float)v;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {\n"
    "        if (l < s) {\n"
    "            ls[l] += ls[l + s];\n"
    "            lm[l] = fmax(lm[l], lm[l + s]);\n"
    "        }\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0) {\n"
    "        sum[g] += ls[0];\n"
    "        mx[g] = fmax(mx[g], lm[0]);\n"
    "    }\n"
    "}\n"
    "__kernel void lookup(__global const uint *table, __global const uint *in,\n"
    "                     __global uint *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = table[in[i] & 255] + (uint)i;\n"
    "}\n"
    /* Where each item ran: its chunk's offset and the local size it was launched with. */
    "__kernel void whereami(__global uint *off, __global uint *lsz)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    off[i] = (uint)CLF_CHUNK_OFFSET(0);\n"
    "    lsz[i] = (uint)get_local_size(0);\n"
    "}\n"
    /* One reduction element per work-item: the host must get exactly the value written,
     * whatever the type and operation, since every other device holds the identity there. */
    "__kernel void red_i32(__global int *r) { uint i = get_global_id(0); r[i] = (int)lowbias32(i); "
    "}\n"
    "__kernel void red_u32(__global uint *r) { uint i = get_global_id(0); r[i] = lowbias32(i); }\n"
    "__kernel void red_i64(__global long *r)\n"
    "{ uint i = get_global_id(0); r[i] = (long)lowbias32(i) * 3 - 8589934592L; }\n"
    "__kernel void red_f32(__global float *r)\n"
    "{ uint i = get_global_id(0); r[i] = (float)(int)(lowbias32(i) >> 8) - 8388608.0f; }\n"
    "__kernel void red_f64(__global double *r)\n"
    "{ uint i = get_global_id(0); r[i] = (double)lowbias32(i) * 0.5; }\n"
    /* In place with a halo: unit i is {in, out}; out reads the neighbours' in. */
    "__kernel void pairs(__global uint *p, uint n)\n"
    "{\n"
    "    uint i = get_global_id(0), l = i ? i - 1 : 0, r = i + 1 < n ? i + 1 : n - 1;\n"
    "    p[2 * i + 1] = p[2 * l] + 2 * p[2 * i] + p[2 * r];\n"
    "}\n"
    "__kernel void scalars(__global ulong *out, ulong a, uint b, float c)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = a + b * (ulong)i + (ulong)c;\n"
    "}\n";

/* ---- helpers --------------------------------------------------------------------------- */

typedef test_env env;

static void env_open(env *e, int i)
{
    test_env_open(e, &CFGS[i], SRC);
    size_t n = clf_fleet_device_count(e->f);
    if (e->cfg->devices)
        ck_assert_uint_ge(n, 4);
    else
        ck_assert_uint_eq(n, e->cfg->ndev);
}

#define env_close test_env_close

static clf_launch_desc make_desc(const env *e, const char *kernel, clf_strategy s, unsigned dims,
                                 size_t g0, size_t g1, size_t g2)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = kernel;
    d.strategy = s;
    d.dims = dims;
    d.global[0] = g0;
    d.global[1] = g1;
    d.global[2] = g2;
    d.devices = e->cfg->devices;
    d.num_devices = e->cfg->devices ? e->cfg->ndev : 0;
    return d;
}

/* A chunk-indexed partitioned argument (there is no macro for the flag). */
static clf_arg chunked(clf_arg a)
{
    a.flags |= CLF_ARG_CHUNK_INDEXED;
    return a;
}

/* One line per device, for failure messages: what the runtime did. */
static const char *describe(const clf_launch_report *r)
{
    static char buf[1024];
    int n = snprintf(buf, sizeof buf, "[%s->%s '%s'", clf_strategy_name(r->requested),
                     clf_strategy_name(r->strategy), r->reason);
    for (size_t i = 0;
         i < r->num_devices && i < CLF_MAX_LAUNCH_DEVICES && n > 0 && (size_t)n < sizeof buf; i++)
        n += snprintf(
            buf + n, sizeof buf - (size_t)n, " dev%zu:units=%llu,chunks=%u,peak=%llu,budget=%llu",
            r->dev[i].device, (unsigned long long)r->dev[i].units, r->dev[i].chunks,
            (unsigned long long)r->dev[i].mem_peak, (unsigned long long)r->dev[i].mem_budget);
    if (n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return buf;
}

/* What a case is, for failure messages. */
static char what[512];

static void set_what(const env *e, const clf_launch_desc *d, const char *extra)
{
    snprintf(what, sizeof what, "%s: %s %uD %zux%zux%zu local %zu/%zu/%zu %s%s%s", e->cfg->label,
             d->kernel, d->dims, d->global[0], d->global[1], d->global[2], d->local[0], d->local[1],
             d->local[2], clf_strategy_name(d->strategy), extra ? " " : "", extra ? extra : "");
}

static void launch_ok(const env *e, const clf_launch_desc *d, const clf_arg *args, size_t nargs,
                      clf_launch_report *rep, const char *extra)
{
    set_what(e, d, extra);
    memset(rep, 0xa5, sizeof *rep); /* stale fields would show */
    clf_status st = clf_launch(e->f, e->p, d, args, nargs, rep);
    expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());
}

/* The invariants every report must satisfy. */
static void check_report(const clf_launch_desc *d, const clf_launch_report *r)
{
    size_t split = d->dims - 1;
    uint64_t range = d->global[split], other = 1;
    for (size_t k = 0; k < split; k++)
        other *= d->global[k];
    size_t ndev = d->devices ? d->num_devices : r->num_devices;
    expect(r->num_devices == ndev, "%s: %zu devices in the report %s", what, r->num_devices,
           describe(r));
    expect(r->total_units == range, "%s: total_units %llu %s", what,
           (unsigned long long)r->total_units, describe(r));
    clf_strategy want = d->strategy;
    expect(r->requested == want, "%s: requested %d %s", what, (int)r->requested, describe(r));
    if (want == CLF_STRATEGY_AUTO)
        expect(r->strategy >= CLF_STRATEGY_STATIC && r->strategy <= CLF_STRATEGY_MEMORY_AWARE,
               "%s: AUTO resolved to %d %s", what, (int)r->strategy, describe(r));
    else
        expect(r->strategy == want, "%s: ran as %d %s", what, (int)r->strategy, describe(r));
    uint64_t units = 0;
    unsigned chunks = 0, workers = 0;
    double first = INFINITY, last = 0, share = 0;
    for (size_t i = 0; i < r->num_devices; i++) {
        const clf_device_report *v = &r->dev[i];
        if (d->devices)
            expect(v->device == d->devices[i], "%s: dev[%zu].device %zu %s", what, i, v->device,
                   describe(r));
        else
            expect(v->device == i, "%s: dev[%zu].device %zu", what, i, v->device);
        expect(!v->failed, "%s: device %zu failed %s", what, i, describe(r));
        expect(v->items == v->units * other, "%s: dev %zu items %llu units %llu %s", what, i,
               (unsigned long long)v->items, (unsigned long long)v->units, describe(r));
        expect((v->units == 0) == (v->chunks == 0), "%s: dev %zu units %llu chunks %u %s", what, i,
               (unsigned long long)v->units, v->chunks, describe(r));
        if (v->mem_budget)
            expect(v->mem_peak <= v->mem_budget, "%s: dev %zu peak over budget %s", what, i,
                   describe(r));
        expect(v->busy_s >= 0 && v->finish_s >= 0, "%s: negative times", what);
        units += v->units;
        chunks += v->chunks;
        share += v->share;
        if (v->units) {
            workers++;
            first = fmin(first, v->finish_s);
            last = fmax(last, v->finish_s);
            expect(v->finish_s <= r->makespan_s * (1 + 1e-9) + 1e-9, "%s: finish after makespan",
                   what);
        }
        /* Static: one chunk per device unless a memory budget forces rounds, or the share is
         * timed in pieces for the kernel's work profile (at most 16, CLF__WPROF_PIECES; the
         * reason says "in pieces"). */
        if (r->strategy == CLF_STRATEGY_STATIC && !d->mem_limits)
            expect(v->chunks <= (strstr(r->reason, "in pieces") ? 16u : 1u),
                   "%s: static gave dev %zu %u chunks %s", what, i, v->chunks, describe(r));
    }
    expect(units == range, "%s: units sum to %llu, range %llu %s", what, (unsigned long long)units,
           (unsigned long long)range, describe(r));
    expect(chunks >= workers && workers >= 1, "%s: %u chunks, %u workers", what, chunks, workers);
    expect(fabs(share - 1.0) < 1e-6, "%s: shares sum to %g", what, share);
    expect(r->efficiency > 0 && r->efficiency <= 1, "%s: efficiency %g", what, r->efficiency);
    expect(fabs(r->efficiency - first / last) < 1e-6 || last == 0,
           "%s: efficiency %g, finishes say %g", what, r->efficiency, first / last);
    expect(fabs(r->makespan_s - last) <= 1e-6 * last + 1e-9, "%s: makespan %g, last %g", what,
           r->makespan_s, last);
    expect(r->imbalance >= -1e-9, "%s: imbalance %g", what, r->imbalance);
    expect(memchr(r->reason, 0, sizeof r->reason) != NULL, "%s: reason unterminated", what);
}

/* ---- element-wise kernels ---------------------------------------------------------------- */

START_TEST(vadd_every_strategy_and_size)
{
    env e;
    env_open(&e, _i);
    size_t nmax = SIZES[NSIZES - 1];
    float *a = malloc(nmax * sizeof *a), *b = malloc(nmax * sizeof *b);
    float *c = malloc(nmax * sizeof *c);
    for (size_t i = 0; i < nmax; i++)
        a[i] = (float)(i % 1000) * 0.5f, b[i] = (float)(i % 777);
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = SIZES[k];
            for (size_t i = 0; i < nmax; i++)
                c[i] = -1.0f;
            clf_arg args[] = {CLF_IN(a, n * sizeof *a, sizeof *a),
                              CLF_IN(b, n * sizeof *b, sizeof *b),
                              CLF_OUT(c, n * sizeof *c, sizeof *c)};
            clf_launch_desc d = make_desc(&e, "vadd", STRATEGIES[s], 1, n, 1, 1);
            clf_launch_report r;
            launch_ok(&e, &d, args, 3, &r, NULL);
            check_report(&d, &r);
            for (size_t i = 0; i < n; i++)
                expect(c[i] == a[i] + b[i], "%s: c[%zu] = %g, want %g %s", what, i, (double)c[i],
                       (double)(a[i] + b[i]), describe(&r));
            /* Nothing past the range is touched. */
            for (size_t i = n; i < nmax; i++)
                expect(c[i] == -1.0f, "%s: c[%zu] written past the range", what, i);
        }
    free(a);
    free(b);
    free(c);
    env_close(&e);
}
END_TEST

/* Local sizes, every chunk (the last too) a multiple of them. */
START_TEST(vadd_local_sizes)
{
    env e;
    env_open(&e, _i);
    static const size_t locals[] = {8, 16, 64};
    static const size_t sizes[] = {1, 13, 100, 1000, 4099, 65537, 64 * 50};
    enum { NMAX = 65537 + 63 };
    float *a = malloc(NMAX * sizeof *a), *b = malloc(NMAX * sizeof *b);
    float *c = malloc(NMAX * sizeof *c);
    for (size_t i = 0; i < NMAX; i++)
        a[i] = (float)(i % 4096), b[i] = -(float)(i % 333) * 0.25f;
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t l = 0; l < 3; l++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                /* A local size must divide the range (as in OpenCL): round up to one. */
                size_t n = (sizes[k] + locals[l] - 1) / locals[l] * locals[l];
                memset(c, 0, NMAX * sizeof *c);
                clf_arg args[] = {CLF_IN(a, n * sizeof *a, sizeof *a),
                                  CLF_IN(b, n * sizeof *b, sizeof *b),
                                  CLF_OUT(c, n * sizeof *c, sizeof *c)};
                clf_launch_desc d = make_desc(&e, "vadd", STRATEGIES[s], 1, n, 1, 1);
                d.local[0] = locals[l];
                clf_launch_report r;
                launch_ok(&e, &d, args, 3, &r, NULL);
                check_report(&d, &r);
                for (size_t i = 0; i < n; i++)
                    expect(c[i] == a[i] + b[i], "%s: c[%zu] = %g %s", what, i, (double)c[i],
                           describe(&r));
            }
    free(a);
    free(b);
    free(c);
    env_close(&e);
}
END_TEST

START_TEST(saxpy_every_strategy_and_size)
{
    env e;
    env_open(&e, _i);
    size_t nmax = SIZES[NSIZES - 1];
    float *x = malloc(nmax * sizeof *x), *y = malloc(nmax * sizeof *y);
    /* Small integers: alpha * x + y is exact with or without a fused multiply-add. */
    const float alpha = 3.0f;
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = SIZES[k];
            for (size_t i = 0; i < nmax; i++)
                x[i] = (float)(i % 1001), y[i] = (float)(i % 513) - 256.0f;
            clf_arg args[] = {CLF_SCALAR(&alpha), CLF_IN(x, n * sizeof *x, sizeof *x),
                              CLF_INOUT(y, n * sizeof *y, sizeof *y)};
            clf_launch_desc d = make_desc(&e, "saxpy", STRATEGIES[s], 1, n, 1, 1);
            clf_launch_report r;
            launch_ok(&e, &d, args, 3, &r, NULL);
            check_report(&d, &r);
            for (size_t i = 0; i < nmax; i++) {
                float want = (float)(i % 513) - 256.0f;
                if (i < n)
                    want += alpha * (float)(i % 1001);
                expect(y[i] == want, "%s: y[%zu] = %g, want %g %s", what, i, (double)y[i],
                       (double)want, describe(&r));
            }
        }
    free(x);
    free(y);
    env_close(&e);
}
END_TEST

START_TEST(hash_every_strategy_and_size)
{
    env e;
    env_open(&e, _i);
    size_t nmax = SIZES[NSIZES - 1];
    uint32_t *out = malloc(nmax * sizeof *out);
    const uint32_t seed = 0x1234abcdu;
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = SIZES[k];
            memset(out, 0, nmax * sizeof *out);
            clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&seed)};
            clf_launch_desc d = make_desc(&e, "hash32", STRATEGIES[s], 1, n, 1, 1);
            clf_launch_report r;
            launch_ok(&e, &d, args, 2, &r, NULL);
            check_report(&d, &r);
            for (size_t i = 0; i < n; i++)
                expect(out[i] == lowbias32((uint32_t)i ^ seed), "%s: out[%zu] %s", what, i,
                       describe(&r));
        }
    free(out);
    env_close(&e);
}
END_TEST

/* 3D: split along dimension 2; a unit is a whole w x h plane. */
START_TEST(hash_3d)
{
    env e;
    env_open(&e, _i);
    const uint32_t w = 5, h = 3, seed = 77;
    static const size_t depths[] = {1, 2, 7, 101, 1000};
    uint32_t *out = malloc(1000 * w * h * sizeof *out);
    for (size_t s = 0; s < 2 * NSTRATEGIES; s++)
        for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
            size_t n = depths[k], plane = w * h * sizeof *out;
            memset(out, 0, 1000 * plane);
            clf_arg args[] = {CLF_OUT(out, n * plane, plane), CLF_SCALAR(&seed), CLF_SCALAR(&w),
                              CLF_SCALAR(&h)};
            clf_launch_desc d = make_desc(&e, "hash3d", STRATEGIES[s % NSTRATEGIES], 3, w, h, n);
            if (s >= NSTRATEGIES) { /* whole work-groups in every dimension */
                d.local[0] = 5;
                d.local[1] = 3;
                d.local[2] = 1; /* divides every depth */
            }
            clf_launch_report r;
            launch_ok(&e, &d, args, 4, &r, NULL);
            check_report(&d, &r);
            for (size_t i = 0; i < n * w * h; i++)
                expect(out[i] == lowbias32((uint32_t)i ^ seed), "%s: out[%zu] %s", what, i,
                       describe(&r));
        }
    free(out);
    env_close(&e);
}
END_TEST

/* Scalars of several sizes reach every device unchanged. */
START_TEST(scalars_of_every_size)
{
    env e;
    env_open(&e, _i);
    enum { N = 4099 };
    uint64_t *out = malloc(N * sizeof *out);
    const uint64_t a = 0x100000000ull + 5;
    const uint32_t b = 3;
    const float c = 1000.0f;
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_arg args[] = {CLF_OUT(out, N * sizeof *out, sizeof *out), CLF_SCALAR(&a),
                          CLF_SCALAR(&b), CLF_SCALAR(&c)};
        clf_launch_desc d = make_desc(&e, "scalars", STRATEGIES[s], 1, N, 1, 1);
        clf_launch_report r;
        launch_ok(&e, &d, args, 4, &r, NULL);
        check_report(&d, &r);
        for (size_t i = 0; i < N; i++)
            expect(out[i] == a + b * i + 1000, "%s: out[%zu] %s", what, i, describe(&r));
    }
    free(out);
    env_close(&e);
}
END_TEST

/* ---- chunk boundaries -------------------------------------------------------------------- */

/*
 * Reconstruct the chunks from each item's global offset: every chunk starts at a multiple of
 * the granularity and the local size, is non-empty, the chunks tile the range, their number
 * is the report's, and every chunk but the last uses the requested local size.
 */
static void check_chunks(const clf_launch_desc *d, const clf_launch_report *r, const uint32_t *off,
                         const uint32_t *lsz, size_t align)
{
    size_t n = d->global[0], runs = 0;
    for (size_t i = 0; i < n;) {
        size_t start = i;
        expect(off[i] == start, "%s: item %zu ran with offset %u %s", what, i, off[i], describe(r));
        while (i < n && off[i] == start)
            i++;
        runs++;
        size_t len = i - start;
        expect(start % align == 0, "%s: chunk at %zu not aligned to %zu %s", what, start, align,
               describe(r));
        expect(len % align == 0 || i == n, "%s: chunk [%zu, +%zu) not a multiple of %zu", what,
               start, len, align);
        if (d->local[0] && (len % d->local[0] == 0))
            for (size_t j = start; j < i; j++)
                expect(lsz[j] == d->local[0], "%s: chunk at %zu ran with local %u", what, start,
                       lsz[j]);
    }
    unsigned chunks = 0;
    for (size_t k = 0; k < r->num_devices; k++)
        chunks += r->dev[k].chunks;
    expect(runs == chunks, "%s: %zu chunks ran, the report says %u %s", what, runs, chunks,
           describe(r));
}

START_TEST(chunks_tile_the_range)
{
    env e;
    env_open(&e, _i);
    enum { NMAX = 20011 + 63 };
    uint32_t *off = malloc(NMAX * sizeof *off), *lsz = malloc(NMAX * sizeof *lsz);
    /* {local, granularity, alignment the chunks must have} */
    static const size_t cases[][3] = {{0, 0, 1},    {0, 7, 7},   {16, 0, 16},
                                      {16, 32, 32}, {8, 12, 24}, {64, 0, 64}};
    static const size_t sizes[] = {1, 3, 7, 100, 1000, 20011};
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                /* A local size must divide the range (as in OpenCL): round up to one. */
                size_t lo = cases[c][0], n = lo ? (sizes[k] + lo - 1) / lo * lo : sizes[k];
                memset(off, 0xff, NMAX * sizeof *off);
                clf_arg args[] = {CLF_OUT(off, n * sizeof *off, sizeof *off),
                                  CLF_OUT(lsz, n * sizeof *lsz, sizeof *lsz)};
                clf_launch_desc d = make_desc(&e, "whereami", STRATEGIES[s], 1, n, 1, 1);
                d.local[0] = cases[c][0];
                d.granularity = cases[c][1];
                d.chunks_per_device = 8;
                char extra[64];
                snprintf(extra, sizeof extra, "granularity %zu", d.granularity);
                clf_launch_report r;
                launch_ok(&e, &d, args, 2, &r, extra);
                check_report(&d, &r);
                check_chunks(&d, &r, off, lsz, cases[c][2]);
            }
    free(off);
    free(lsz);
    env_close(&e);
}
END_TEST

/* ---- 2D blur with halos ------------------------------------------------------------------ */

static void blur_ref(const uint32_t *in, uint32_t *out, int w, int h)
{
    static const uint32_t gw[5] = {1, 4, 6, 4, 1};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint32_t s = 0;
            for (int dy = -2; dy <= 2; dy++) {
                int yy = y + dy < 0 ? 0 : y + dy >= h ? h - 1 : y + dy;
                for (int dx = -2; dx <= 2; dx++) {
                    int xx = x + dx < 0 ? 0 : x + dx >= w ? w - 1 : x + dx;
                    s += gw[dy + 2] * gw[dx + 2] * in[yy * w + xx];
                }
            }
            out[y * w + x] = s >> 8;
        }
}

static uint32_t *test_image(size_t w, size_t h)
{
    uint32_t *img = malloc(w * h * sizeof *img);
    ck_assert_ptr_nonnull(img);
    for (size_t i = 0; i < w * h; i++)
        img[i] = lowbias32((uint32_t)i) & 0xffff;
    return img;
}

/*
 * _i: the fleet; chunk: chunk-indexed buffers (blur_chunk) or global-indexed (blur);
 * local: {lx, ly} or {0, 0}.
 */
static void blur_cases(int i, int chunk, size_t w, size_t lx, size_t ly)
{
    env e;
    env_open(&e, i);
    static const size_t heights[] = {1, 2, 3, 7, 13, 101, 1000, 4099};
    const size_t hmax = 4100, row = w * sizeof(uint32_t);
    uint32_t *in = test_image(w, hmax), *out = malloc(hmax * row), *want = malloc(hmax * row);
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < sizeof heights / sizeof heights[0]; k++) {
            /* A local size must divide the range (as in OpenCL): round up to one. */
            size_t h = ly ? (heights[k] + ly - 1) / ly * ly : heights[k];
            int iw = (int)w, ih = (int)h, hb = 2;
            memset(out, 0, hmax * row);
            clf_arg args[5] = {CLF_IN_HALO(in, h * row, row, 2, 2), CLF_OUT(out, h * row, row),
                               CLF_SCALAR(&iw), CLF_SCALAR(&ih), CLF_SCALAR(&hb)};
            if (chunk) {
                args[0] = chunked(args[0]);
                args[1] = chunked(args[1]);
            }
            clf_launch_desc d =
                make_desc(&e, chunk ? "blur_chunk" : "blur", STRATEGIES[s], 2, w, h, 1);
            d.local[0] = lx;
            d.local[1] = ly;
            clf_launch_report r;
            launch_ok(&e, &d, args, chunk ? 5 : 4, &r, NULL);
            check_report(&d, &r);
            blur_ref(in, want, iw, ih);
            for (size_t p = 0; p < w * h; p++)
                expect(out[p] == want[p], "%s: pixel (%zu, %zu) = %u, want %u %s", what, p % w,
                       p / w, out[p], want[p], describe(&r));
        }
    free(in);
    free(out);
    free(want);
    env_close(&e);
}

START_TEST(blur_global_indexed)
{
    blur_cases(_i, 0, 37, 0, 0);
}
END_TEST

START_TEST(blur_chunk_indexed)
{
    blur_cases(_i, 1, 37, 0, 0);
}
END_TEST

START_TEST(blur_with_local_size)
{
    blur_cases(_i, 0, 40, 8, 2);
    blur_cases(_i, 1, 32, 16, 4);
}
END_TEST

/*
 * clf_launch_desc version 3: a sub-range [first, first + units) of the split dimension runs
 * with the global ids of the whole range; outputs outside it keep their host values, halos
 * are read from the whole range's host array, reductions cover the sub-range only.
 */
static int32_t *signed_data(size_t n);

START_TEST(sub_range_global_ids)
{
    env e;
    env_open(&e, _i);
    static const size_t subs[][2] = {{0, 1}, {1, 7}, {64, 1000}, {1000, 3099}, {4098, 1}};
    const size_t n = 4099, w = 37, h = 1003, row = w * sizeof(uint32_t);
    const uint32_t seed = 0x5eedu, SENT = 0xdeadbeefu;
    uint32_t *out = malloc(n * sizeof *out), *img = test_image(w, h);
    uint32_t *bout = malloc(h * row), *bwant = malloc(h * row);
    int32_t *x = signed_data(n);
    blur_ref(img, bwant, (int)w, (int)h);
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++) {
            size_t first = subs[k][0], units = subs[k][1];
            for (size_t i = 0; i < n; i++)
                out[i] = SENT;
            clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&seed)};
            clf_launch_desc d = make_desc(&e, "hash32", STRATEGIES[s], 1, n, 1, 1);
            d.range_first = first;
            d.range_units = units;
            clf_launch_report r;
            char sub[64];
            snprintf(sub, sizeof sub, "sub-range [%zu, +%zu)", first, units);
            launch_ok(&e, &d, args, 2, &r, sub);
            expect(r.total_units == units && r.done_units == units, "%s: total_units %llu",
                   what, (unsigned long long)r.total_units);
            uint64_t did = 0;
            for (size_t i = 0; i < r.num_devices; i++)
                did += r.dev[i].units;
            expect(did == units, "%s: devices did %llu units %s", what,
                   (unsigned long long)did, describe(&r));
            for (size_t i = 0; i < n; i++) {
                uint32_t want = i >= first && i < first + units ? lowbias32((uint32_t)i ^ seed)
                                                                : SENT;
                expect(out[i] == want, "%s: out[%zu] = %#x, want %#x %s", what, i, out[i],
                       want, describe(&r));
            }
            /* Rows of a blur: the halo rows come from outside the sub-range. */
            size_t rf = first < h ? first : h - 1, ru = rf + units > h ? h - rf : units;
            int iw = (int)w, ih = (int)h;
            memset(bout, 0xab, h * row);
            clf_arg bargs[] = {CLF_IN_HALO(img, h * row, row, 2, 2), CLF_OUT(bout, h * row, row),
                               CLF_SCALAR(&iw), CLF_SCALAR(&ih)};
            d = make_desc(&e, "blur", STRATEGIES[s], 2, w, h, 1);
            d.range_first = rf;
            d.range_units = ru;
            launch_ok(&e, &d, bargs, 4, &r, sub);
            for (size_t p = 0; p < w * h; p++) {
                uint32_t want = p / w >= rf && p / w < rf + ru ? bwant[p] : 0xababababu;
                expect(bout[p] == want, "%s: pixel (%zu, %zu) = %#x, want %#x %s", what, p % w,
                       p / w, bout[p], want, describe(&r));
            }
            /* A reduction over the sub-range only. */
            uint32_t sum = 1, want_sum = 0;
            int32_t mn = 1, want_mn = INT32_MAX;
            for (size_t i = first; i < first + units; i++) {
                want_sum += (uint32_t)x[i];
                want_mn = x[i] < want_mn ? x[i] : want_mn;
            }
            clf_arg rargs[] = {CLF_IN(x, n * sizeof *x, sizeof *x),
                               CLF_REDUCE(&sum, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM),
                               CLF_REDUCE(&mn, 1, CLF_TYPE_INT32, CLF_REDUCE_MIN)};
            d = make_desc(&e, "sum_min", STRATEGIES[s], 1, n, 1, 1);
            d.range_first = first;
            d.range_units = units;
            launch_ok(&e, &d, rargs, 3, &r, sub);
            expect(sum == want_sum && mn == want_mn, "%s: sum %u min %d, want %u %d %s", what,
                   sum, mn, want_sum, want_mn, describe(&r));
        }
    /* With a local size: the sub-range is made of whole groups, else it is refused. */
    memset(bout, 0xab, h * row);
    int iw = (int)w, ih = 1000;
    clf_arg bargs[] = {CLF_IN_HALO(img, h * row, row, 2, 2), CLF_OUT(bout, h * row, row),
                       CLF_SCALAR(&iw), CLF_SCALAR(&ih)};
    clf_launch_desc d = make_desc(&e, "blur", CLF_STRATEGY_DYNAMIC, 2, w, 1000, 1);
    d.local[0] = 1;
    d.local[1] = 4;
    d.range_first = 400;
    d.range_units = 200;
    clf_launch_report r;
    blur_ref(img, bwant, iw, ih);
    launch_ok(&e, &d, bargs, 4, &r, "sub-range [400, +200) local 1x4");
    for (size_t p = 0; p < w * 1000; p++) {
        uint32_t want = p / w >= 400 && p / w < 600 ? bwant[p] : 0xababababu;
        expect(bout[p] == want, "%s: pixel (%zu, %zu) = %#x, want %#x", what, p % w, p / w,
               bout[p], want);
    }
    d.range_first = 402;
    clf_status st = clf_launch(e.f, e.p, &d, bargs, 4, NULL);
    expect(st == CLF_ERROR_INVALID_ARGUMENT && strstr(clf_last_error(), "sub-range"),
           "misaligned sub-range: %s: %s", clf_status_name(st), clf_last_error());
    d.range_first = 900;
    d.range_units = 200;
    st = clf_launch(e.f, e.p, &d, bargs, 4, NULL);
    expect(st == CLF_ERROR_OUT_OF_RANGE && strstr(clf_last_error(), "sub-range"),
           "sub-range past the end: %s: %s", clf_status_name(st), clf_last_error());
    d.range_first = 4;
    d.range_units = 0;
    st = clf_launch(e.f, e.p, &d, bargs, 4, NULL);
    expect(st == CLF_ERROR_OUT_OF_RANGE, "empty sub-range: %s", clf_status_name(st));
    /* Asynchronous: the description (sub-range included) is copied. */
    memset(bout, 0xab, h * row);
    d.range_first = 200;
    d.range_units = 100;
    clf_event *ev = NULL;
    st = clf_launch_async(e.f, e.p, &d, bargs, 4, NULL, &ev);
    expect(st == CLF_SUCCESS, "async: %s: %s", clf_status_name(st), clf_last_error());
    d.range_first = 0; /* the queued launch keeps its own copy */
    expect(clf_event_wait(ev) == CLF_SUCCESS, "async wait: %s", clf_last_error());
    clf_event_release(ev);
    for (size_t p = 0; p < w * 1000; p++) {
        uint32_t want = p / w >= 200 && p / w < 300 ? bwant[p] : 0xababababu;
        expect(bout[p] == want, "async: pixel (%zu, %zu) = %#x, want %#x", p % w, p / w,
               bout[p], want);
    }
    /* A version-2 caller's struct ends before range_first: the whole range runs. */
    memset(bout, 0, h * row);
    d.version = 2;
    d.range_first = 402;
    launch_ok(&e, &d, bargs, 4, &r, "version 2");
    expect(memcmp(bout, bwant, 1000 * row) == 0, "%s: version 2 ran a sub-range", what);
    free(out);
    free(img);
    free(bout);
    free(bwant);
    free(x);
    env_close(&e);
}
END_TEST

/* ---- reductions -------------------------------------------------------------------------- */

static int32_t *signed_data(size_t n)
{
    int32_t *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    /* |x| < 2^24, so (float)x is exact. */
    for (size_t i = 0; i < n; i++)
        x[i] = (int32_t)(lowbias32((uint32_t)i + 99) % 16000001u) - 8000000;
    return x;
}

START_TEST(reduce_with_atomics)
{
    env e;
    env_open(&e, _i);
    size_t nmax = SIZES[NSIZES - 1];
    int32_t *x = signed_data(nmax);
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = SIZES[k];
            uint32_t sum = 12345, want_sum = 0;
            int32_t mn = 12345, want_mn = INT32_MAX;
            for (size_t i = 0; i < n; i++) {
                want_sum += (uint32_t)x[i];
                want_mn = x[i] < want_mn ? x[i] : want_mn;
            }
            clf_arg args[] = {CLF_IN(x, n * sizeof *x, sizeof *x),
                              CLF_REDUCE(&sum, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM),
                              CLF_REDUCE(&mn, 1, CLF_TYPE_INT32, CLF_REDUCE_MIN)};
            clf_launch_desc d = make_desc(&e, "sum_min", STRATEGIES[s], 1, n, 1, 1);
            clf_launch_report r;
            launch_ok(&e, &d, args, 3, &r, NULL);
            check_report(&d, &r);
            expect(sum == want_sum, "%s: sum %u, want %u %s", what, sum, want_sum, describe(&r));
            expect(mn == want_mn, "%s: min %d, want %d %s", what, mn, want_mn, describe(&r));
        }
    free(x);
    env_close(&e);
}
END_TEST

/* Per-group partials with local memory: int64 sum and float max, element-wise over devices. */
START_TEST(reduce_per_group)
{
    env e;
    env_open(&e, _i);
    static const size_t locals[] = {16, 64};
    static const size_t groups[] = {1, 2, 3, 13, 101, 1024};
    int32_t *x = signed_data(64 * 1024);
    for (size_t s = 0; s < NSTRATEGIES; s++)
        for (size_t l = 0; l < 2; l++)
            for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
                size_t lo = locals[l], ng = groups[k], n = lo * ng;
                int64_t *sum = malloc(ng * sizeof *sum), want_sum = 0, got_sum = 0;
                float *mx = malloc(ng * sizeof *mx), want_mx = -INFINITY, got_mx = -INFINITY;
                for (size_t i = 0; i < n; i++) {
                    want_sum += x[i];
                    want_mx = fmaxf(want_mx, (float)x[i]);
                }
                clf_arg args[] = {CLF_IN(x, n * sizeof *x, sizeof *x),
                                  CLF_LOCAL(lo * sizeof(int64_t)), CLF_LOCAL(lo * sizeof(float)),
                                  CLF_REDUCE(sum, ng, CLF_TYPE_INT64, CLF_REDUCE_SUM),
                                  CLF_REDUCE(mx, ng, CLF_TYPE_FLOAT, CLF_REDUCE_MAX)};
                clf_launch_desc d = make_desc(&e, "group_sum_max", STRATEGIES[s], 1, n, 1, 1);
                d.local[0] = lo;
                clf_launch_report r;
                launch_ok(&e, &d, args, 5, &r, NULL);
                check_report(&d, &r);
                for (size_t g = 0; g < ng; g++) {
                    got_sum += sum[g];
                    got_mx = fmaxf(got_mx, mx[g]);
                    /* Each group's own partial, as one device computes it. */
                    int64_t gs = 0;
                    float gm = -INFINITY;
                    for (size_t i = g * lo; i < (g + 1) * lo; i++) {
                        gs += x[i];
                        gm = fmaxf(gm, (float)x[i]);
                    }
                    expect(sum[g] == gs && mx[g] == gm,
                           "%s: group %zu: sum %lld max %g, want %lld %g %s", what, g,
                           (long long)sum[g], (double)mx[g], (long long)gs, (double)gm,
                           describe(&r));
                }
                expect(got_sum == want_sum, "%s: sum %lld, want %lld %s", what, (long long)got_sum,
                       (long long)want_sum, describe(&r));
                expect(got_mx == want_mx, "%s: max %g, want %g %s", what, (double)got_mx,
                       (double)want_mx, describe(&r));
                free(sum);
                free(mx);
            }
    free(x);
    env_close(&e);
}
END_TEST

/* ---- broadcast --------------------------------------------------------------------------- */

/* A broadcast input is cached between launches, but a change to it must be seen. */
START_TEST(broadcast_sees_changes)
{
    env e;
    env_open(&e, _i);
    enum { N = 10007 };
    uint32_t table[256], *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    for (size_t i = 0; i < N; i++)
        in[i] = lowbias32((uint32_t)i);
    for (int round = 0; round < 3; round++)
        for (size_t s = 0; s < NSTRATEGIES; s++) {
            for (int t = 0; t < 256; t++)
                table[t] = (uint32_t)(t * 1000 + round * 7 + (int)s);
            clf_arg args[] = {CLF_BROADCAST(table, sizeof table),
                              CLF_IN(in, N * sizeof *in, sizeof *in),
                              CLF_OUT(out, N * sizeof *out, sizeof *out)};
            clf_launch_desc d = make_desc(&e, "lookup", STRATEGIES[s], 1, N, 1, 1);
            char extra[32];
            snprintf(extra, sizeof extra, "round %d", round);
            clf_launch_report r;
            launch_ok(&e, &d, args, 3, &r, extra);
            check_report(&d, &r);
            for (size_t i = 0; i < N; i++)
                expect(out[i] == table[in[i] & 255] + (uint32_t)i,
                       "%s: out[%zu] = %u, want %u (stale broadcast?) %s", what, i, out[i],
                       table[in[i] & 255] + (uint32_t)i, describe(&r));
        }
    free(in);
    free(out);
    env_close(&e);
}
END_TEST


/*
 * Broadcasts whose parameters are not const, as much published code writes them: a GEMM
 * whose B is `__global float *b` (read only) and a 3x3 median filter given its width and
 * height as `__global int *` buffers. Accepted, split over 2-3 devices with every strategy,
 * against plain C; the source scan sees them read only, so their copies are kept.
 */
static const char NONCONST_SRC[] =
    "__kernel void gemm_nc(__global float *a, __global float *b, __global float *c, int n)\n"
    "{\n"
    "    int i = get_global_id(1), j = get_global_id(0);\n"
    "    float s = 0.0f;\n"
    "    for (int k = 0; k < n; k++)\n"
    "        s += a[i * n + k] * b[k * n + j];\n"
    "    c[i * n + j] = s;\n"
    "}\n"
    "__kernel void median_nc(__global uchar *in, __global uchar *out, __global int *width,\n"
    "                        __global int *height)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1), w = *width, h = height[0];\n"
    "    uchar v[9];\n"
    "    int n = 0;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++) {\n"
    "            int xx = clamp(x + dx, 0, w - 1), yy = clamp(y + dy, 0, h - 1);\n"
    "            v[n++] = in[yy * w + xx];\n"
    "        }\n"
    "    for (int p = 0; p < 9; p++)\n"
    "        for (int q = p + 1; q < 9; q++)\n"
    "            if (v[q] < v[p]) { uchar t = v[p]; v[p] = v[q]; v[q] = t; }\n"
    "    out[y * w + x] = v[4];\n"
    "}\n"
    /* A kernel that (wrongly) writes its broadcast: each item reads then clobbers its own
     * element. A kept copy would show the clobbered values to the next launch. */
    "__kernel void scribble(__global int *t, __global int *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = t[i];\n"
    "    t[i] = -1;\n"
    "}\n"
    "__kernel void copy_c(__global const int *t, __global int *out)\n"
    "{\n"
    "    out[get_global_id(0)] = t[get_global_id(0)];\n"
    "}\n";

static int median9(const uint8_t *img, int w, int h, int x, int y)
{
    uint8_t v[9];
    int n = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = x + dx < 0 ? 0 : x + dx >= w ? w - 1 : x + dx;
            int yy = y + dy < 0 ? 0 : y + dy >= h ? h - 1 : y + dy;
            v[n++] = img[yy * w + xx];
        }
    for (int p = 0; p < 9; p++)
        for (int q = p + 1; q < 9; q++)
            if (v[q] < v[p]) {
                uint8_t t = v[p];
                v[p] = v[q];
                v[q] = t;
            }
    return v[4];
}

static clf_launch_desc nc_desc(const fleet_cfg *cfg, const char *k, clf_strategy s,
                               unsigned dims, size_t g0, size_t g1)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = k;
    d.strategy = s;
    d.dims = dims;
    d.global[0] = g0;
    d.global[1] = g1;
    d.devices = cfg->devices;
    d.num_devices = cfg->devices ? cfg->ndev : 0;
    d.chunks_per_device = 4;
    return d;
}

START_TEST(broadcast_not_const)
{
    const fleet_cfg *cfg = &CFGS[_i];
    clf_fleet *f = test_fleet(cfg->selection, cfg->context_per_device);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, NONCONST_SRC, NULL));
    enum { N = 96, W = 61, H = 47 };
    float *a = malloc(N * N * sizeof *a), *b = malloc(N * N * sizeof *b),
          *c = malloc(N * N * sizeof *c);
    uint8_t *img = malloc(W * H), *med = malloc(W * H);
    ck_assert(a && b && c && img && med);
    uint64_t seed = 7;
    for (size_t i = 0; i < N * N; i++) { /* small integers: every sum exact */
        a[i] = (float)(xorshift64(&seed) % 9) - 4.0f;
        b[i] = (float)(xorshift64(&seed) % 9) - 4.0f;
    }
    for (size_t i = 0; i < W * H; i++)
        img[i] = (uint8_t)xorshift64(&seed);
    int32_t n = N, w = W, h = H;
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(c, 0xee, N * N * sizeof *c);
        clf_arg ga[] = {CLF_IN(a, N * N * sizeof *a, N * sizeof *a),
                        CLF_BROADCAST(b, N * N * sizeof *b),
                        CLF_OUT(c, N * N * sizeof *c, N * sizeof *c), CLF_SCALAR(&n)};
        clf_launch_desc d = nc_desc(cfg, "gemm_nc", STRATEGIES[s], 2, N, N);
        clf_launch_report rep;
        clf_status st = clf_launch(f, p, &d, ga, 4, &rep);
        expect(st == CLF_SUCCESS, "%s, gemm, %s: %s", cfg->label,
               clf_strategy_name(STRATEGIES[s]), clf_last_error());
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++) {
                float want = 0.0f;
                for (size_t k = 0; k < N; k++)
                    want += a[i * N + k] * b[k * N + j];
                expect(c[i * N + j] == want, "%s, gemm, %s: c[%zu][%zu] = %g, want %g",
                       cfg->label, clf_strategy_name(STRATEGIES[s]), i, j, c[i * N + j], want);
            }
        memset(med, 0, W * H);
        clf_arg ma[] = {CLF_IN_HALO(img, W * H, W, 1, 1), CLF_OUT(med, W * H, W),
                        CLF_BROADCAST(&w, sizeof w), CLF_BROADCAST(&h, sizeof h)};
        d = nc_desc(cfg, "median_nc", STRATEGIES[s], 2, W, H);
        st = clf_launch(f, p, &d, ma, 4, &rep);
        expect(st == CLF_SUCCESS, "%s, median, %s: %s", cfg->label,
               clf_strategy_name(STRATEGIES[s]), clf_last_error());
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                expect(med[y * W + x] == median9(img, W, H, x, y),
                       "%s, median, %s: (%d, %d) = %d, want %d", cfg->label,
                       clf_strategy_name(STRATEGIES[s]), x, y, med[y * W + x],
                       median9(img, W, H, x, y));
    }
    free(a);
    free(b);
    free(c);
    free(img);
    free(med);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* What the log said, for the test below. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen_warn[1024];
static void keep_warning(void *user, clf_log_level level, const char *msg)
{
    (void)user;
    pthread_mutex_lock(&seen_lock);
    if (level == CLF_LOG_WARN && strstr(msg, "broadcast"))
        snprintf(seen_warn, sizeof seen_warn, "%s", msg);
    pthread_mutex_unlock(&seen_lock);
}

/* Allocations on the launch's devices since the last clf_metrics_reset(). */
static uint64_t launch_allocations(clf_fleet *f, const clf_launch_report *rep)
{
    uint64_t n = 0;
    for (size_t i = 0; i < rep->num_devices; i++) {
        clf_device_metrics m;
        ck_assert_ok(clf_metrics_device(&m, f, rep->dev[i].device));
        n += m.allocations;
    }
    return n;
}

/*
 * A kernel that writes its non-const broadcast (the user's bug): the launch runs, the log
 * says so, and the copy is not kept: the next launch, with the same or changed host data,
 * sees the host's values. A read-only non-const broadcast (the scan proves it) and a const
 * one are kept: their second launch allocates one buffer less per device.
 */
START_TEST(broadcast_written_not_kept)
{
    const fleet_cfg *cfg = &CFGS[_i];
    clf_fleet *f = test_fleet(cfg->selection, cfg->context_per_device);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, NONCONST_SRC, NULL));
    enum { N = 4096 };
    int32_t *t = malloc(N * sizeof *t), *out = malloc(N * sizeof *out);
    ck_assert(t && out);
    seen_warn[0] = 0;
    clf_log_set_handler(keep_warning, NULL);
    for (int round = 0; round < 4; round++) {
        /* Rounds 0 and 1: the same host data; then changed. */
        for (size_t i = 0; i < N; i++)
            t[i] = (int32_t)(i * 3 + (round >= 2 ? (size_t)round : 0));
        memset(out, 0xee, N * sizeof *out);
        clf_arg args[] = {CLF_BROADCAST(t, N * sizeof *t), CLF_OUT(out, N * sizeof *out, 4)};
        clf_launch_desc d = nc_desc(cfg, "scribble", CLF_STRATEGY_DYNAMIC, 1, N, 1);
        clf_launch_report rep;
        ck_assert_ok(clf_launch(f, p, &d, args, 2, &rep));
        for (size_t i = 0; i < N; i++)
            expect(out[i] == t[i], "%s, round %d: out[%zu] = %d, want %d (a kept copy?)",
                   cfg->label, round, i, out[i], t[i]);
        for (size_t i = 0; i < N; i++) /* the host array is the caller's: never written */
            expect(t[i] == (int32_t)(i * 3 + (round >= 2 ? (size_t)round : 0)),
                   "%s: t[%zu] written", cfg->label, i);
    }
    clf_log_set_handler(NULL, NULL);
    ck_assert_msg(strstr(seen_warn, "scribble") && strstr(seen_warn, "'t'"),
                  "no warning about the store: '%s'", seen_warn);
    /* Kept copies: the scan-proved gemm_nc's b, and copy_c's const t. */
    enum { M = 32 };
    float a[M * M], b[M * M], c[M * M];
    for (size_t i = 0; i < M * M; i++)
        a[i] = b[i] = (float)(i % 5);
    int32_t m = M;
    /* Equal user weights: every device runs a share in both rounds, so each can keep its
     * copy. Learned weights (the default) leave a device far slower than the others out (a
     * CPU beside a GPU) once measured: it ran in round 0 and not in round 1, and the counts
     * would not compare ("6 then 4 allocations on 1 devices" on an H200 + CPU). */
    double even[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < CLF_MAX_LAUNCH_DEVICES; i++)
        even[i] = 1;
    for (int k = 0; k < 2; k++) {
        uint64_t allocs[2];
        for (int round = 0; round < 2; round++) {
            clf_launch_report rep;
            ck_assert_ok(clf_metrics_reset(f));
            if (k == 0) {
                clf_arg ga[] = {CLF_IN(a, sizeof a, M * sizeof *a), CLF_BROADCAST(b, sizeof b),
                                CLF_OUT(c, sizeof c, M * sizeof *c), CLF_SCALAR(&m)};
                clf_launch_desc d = nc_desc(cfg, "gemm_nc", CLF_STRATEGY_STATIC, 2, M, M);
                d.weights_mode = CLF_WEIGHTS_USER;
                d.weights = even;
                ck_assert_ok(clf_launch(f, p, &d, ga, 4, &rep));
            } else {
                clf_arg ca[] = {CLF_BROADCAST(t, N * sizeof *t), CLF_OUT(out, N * sizeof *out, 4)};
                clf_launch_desc d = nc_desc(cfg, "copy_c", CLF_STRATEGY_STATIC, 1, N, 1);
                d.weights_mode = CLF_WEIGHTS_USER;
                d.weights = even;
                ck_assert_ok(clf_launch(f, p, &d, ca, 2, &rep));
            }
            allocs[round] = launch_allocations(f, &rep);
            size_t ran = 0;
            for (size_t i = 0; i < rep.num_devices; i++)
                ran += rep.dev[i].chunks > 0;
            if (round == 1) /* one buffer less on every device that ran */
                expect(ran > 1 && allocs[1] + ran == allocs[0],
                       "%s, %s: %llu then %llu allocations on %zu devices: not kept",
                       cfg->label, k ? "const" : "read-only non-const",
                       (unsigned long long)allocs[0], (unsigned long long)allocs[1], ran);
        }
    }
    /* scribble's copies are not kept: every launch allocates them again. */
    uint64_t allocs[2];
    for (int round = 0; round < 2; round++) {
        clf_launch_report rep;
        ck_assert_ok(clf_metrics_reset(f));
        clf_arg args[] = {CLF_BROADCAST(t, N * sizeof *t), CLF_OUT(out, N * sizeof *out, 4)};
        clf_launch_desc d = nc_desc(cfg, "scribble", CLF_STRATEGY_STATIC, 1, N, 1);
        clf_log_set_handler(keep_warning, NULL);
        ck_assert_ok(clf_launch(f, p, &d, args, 2, &rep));
        clf_log_set_handler(NULL, NULL);
        allocs[round] = launch_allocations(f, &rep);
    }
    ck_assert_uint_eq(allocs[0], allocs[1]);
    free(t);
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- memory limits ----------------------------------------------------------------------- */

static void check_limits(const clf_launch_report *r, const uint64_t *limits)
{
    for (size_t i = 0; i < r->num_devices; i++) {
        expect(r->dev[i].mem_budget > 0 && r->dev[i].mem_budget <= limits[i],
               "%s: dev %zu budget %llu, limit %llu %s", what, i,
               (unsigned long long)r->dev[i].mem_budget, (unsigned long long)limits[i],
               describe(r));
        expect(r->dev[i].mem_peak <= limits[i], "%s: dev %zu held %llu, limit %llu %s", what, i,
               (unsigned long long)r->dev[i].mem_peak, (unsigned long long)limits[i], describe(r));
        if (r->dev[i].units)
            expect(r->dev[i].mem_peak > 0, "%s: dev %zu held nothing", what, i);
    }
}

/*
 * The data of the memory-limit tests: addmul_chunk over n units (a and b in, sum and prod
 * out, 16 bytes a unit) and blur_chunk over a w x h image (rows with a halo of 2 + 2), all
 * chunk-indexed so that they can stream through small limits.
 */
typedef struct limited {
    size_t n, w, h;
    uint32_t *a, *b, *sum, *prod;
    uint32_t *img, *out, *want;
} limited;

/* b[i] = i * bmul. */
static void limited_new(limited *l, size_t n, uint32_t bmul, size_t w, size_t h)
{
    l->n = n;
    l->w = w;
    l->h = h;
    l->a = malloc(n * 4);
    l->b = malloc(n * 4);
    l->sum = malloc(n * 4);
    l->prod = malloc(n * 4);
    ck_assert(l->a && l->b && l->sum && l->prod);
    for (size_t i = 0; i < n; i++)
        l->a[i] = lowbias32((uint32_t)i), l->b[i] = (uint32_t)i * bmul;
    l->img = test_image(w, h);
    l->out = malloc(h * w * 4);
    l->want = malloc(h * w * 4);
    ck_assert(l->img && l->out && l->want);
    blur_ref(l->img, l->want, (int)w, (int)h);
}

static void limited_free(limited *l)
{
    free(l->a);
    free(l->b);
    free(l->sum);
    free(l->prod);
    free(l->img);
    free(l->out);
    free(l->want);
}

/* addmul_chunk under limits with strategy s: the report is checked and every item compared. */
static void limited_addmul(const env *e, limited *l, clf_strategy s, const uint64_t *limits,
                           clf_launch_report *r, const char *extra)
{
    size_t n = l->n;
    memset(l->sum, 0, n * 4);
    memset(l->prod, 0, n * 4);
    clf_arg args[] = {chunked((clf_arg)CLF_IN(l->a, n * 4, 4)),
                      chunked((clf_arg)CLF_IN(l->b, n * 4, 4)),
                      chunked((clf_arg)CLF_OUT(l->sum, n * 4, 4)),
                      chunked((clf_arg)CLF_OUT(l->prod, n * 4, 4))};
    clf_launch_desc d = make_desc(e, "addmul_chunk", s, 1, n, 1, 1);
    d.mem_limits = limits;
    launch_ok(e, &d, args, 4, r, extra);
    check_report(&d, r);
    for (size_t i = 0; i < n; i++)
        expect(l->sum[i] == l->a[i] + l->b[i] && l->prod[i] == l->a[i] * l->b[i],
               "%s: item %zu %s", what, i, describe(r));
}

/* blur_chunk under limits with strategy s: the report is checked and every pixel compared. */
static void limited_blur(const env *e, limited *l, clf_strategy s, const uint64_t *limits,
                         clf_launch_report *r, const char *extra)
{
    size_t w = l->w, h = l->h, row = w * 4;
    int iw = (int)w, ih = (int)h, hb = 2;
    memset(l->out, 0, h * row);
    clf_arg args[] = {chunked((clf_arg)CLF_IN_HALO(l->img, h * row, row, 2, 2)),
                      chunked((clf_arg)CLF_OUT(l->out, h * row, row)), CLF_SCALAR(&iw),
                      CLF_SCALAR(&ih), CLF_SCALAR(&hb)};
    clf_launch_desc d = make_desc(e, "blur_chunk", s, 2, w, h, 1);
    d.mem_limits = limits;
    launch_ok(e, &d, args, 5, r, extra);
    check_report(&d, r);
    for (size_t p = 0; p < w * h; p++)
        expect(l->out[p] == l->want[p], "%s: pixel %zu %s", what, p, describe(r));
}

/* 4 MiB of inputs and outputs through 64 KiB per device: chunk-indexed streaming. */
START_TEST(memory_limits_stream)
{
    env e;
    env_open(&e, _i);
    limited l;
    /* A 1 MiB image (64 x 4096) for the second part. */
    limited_new(&l, 1 << 18, 2654435761u, 64, 4096);
    uint64_t limits[3] = {64 << 10, 64 << 10, 96 << 10};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_launch_report r;
        limited_addmul(&e, &l, STRATEGIES[s], limits, &r, "64 KiB limits");
        check_limits(&r, limits);
        unsigned chunks = 0;
        for (size_t i = 0; i < r.num_devices; i++)
            chunks += r.dev[i].chunks;
        /* 16 bytes a unit, 64 KiB: at least 4096 units a chunk is impossible. */
        expect(chunks >= l.n / 4096, "%s: %u chunks cannot fit %s", what, chunks, describe(&r));
    }
    /* A halo counts too: blur 1 MiB in and out through 48 KiB. */
    uint64_t small[3] = {48 << 10, 48 << 10, 48 << 10};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_launch_report r;
        limited_blur(&e, &l, STRATEGIES[s], small, &r, "48 KiB limits");
        check_limits(&r, small);
    }
    limited_free(&l);
    env_close(&e);
}
END_TEST

/*
 * Limits the data cannot meet: a global-indexed buffer spans the whole array, so 1 MiB through
 * 64 KiB cannot work; and one unit larger than the limit cannot either. The runtime must
 * refuse (never exceed a limit) or, where it can, succeed within the limit.
 */
START_TEST(memory_limits_impossible)
{
    env e;
    env_open(&e, _i);
    enum { N = 1 << 18 };
    uint32_t *out = malloc(N * 4);
    const uint32_t seed = 5;
    uint64_t limits[3] = {64 << 10, 64 << 10, 64 << 10};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_arg args[] = {CLF_OUT(out, N * 4, 4), CLF_SCALAR(&seed)};
        clf_launch_desc d = make_desc(&e, "hash32", STRATEGIES[s], 1, N, 1, 1);
        d.mem_limits = limits;
        set_what(&e, &d, "global-indexed over the limit");
        clf_launch_report r;
        clf_status st = clf_launch(e.f, e.p, &d, args, 2, &r);
        if (st == CLF_SUCCESS) {
            check_report(&d, &r);
            check_limits(&r, limits);
            for (size_t i = 0; i < N; i++)
                expect(out[i] == lowbias32((uint32_t)i ^ seed), "%s: out[%zu]", what, i);
        } else {
            expect(clf_last_error()[0] != 0, "%s: %s without detail", what, clf_status_name(st));
        }
    }
    /* One 1 KiB row per unit, 512 bytes allowed. */
    uint64_t tiny[3] = {512, 512, 512};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_arg args[] = {chunked((clf_arg)CLF_OUT(out, N * 4, 1024)), CLF_SCALAR(&seed)};
        clf_launch_desc d = make_desc(&e, "hash32", STRATEGIES[s], 1, N / 256, 1, 1);
        d.mem_limits = tiny;
        set_what(&e, &d, "a unit over the limit");
        clf_status st = clf_launch(e.f, e.p, &d, args, 2, NULL);
        expect(st != CLF_SUCCESS, "%s: succeeded", what);
        expect(clf_last_error()[0] != 0, "%s: %s without detail", what, clf_status_name(st));
    }
    free(out);
    env_close(&e);
}
END_TEST

/* ---- weights ----------------------------------------------------------------------------- */

START_TEST(static_user_and_equal_weights)
{
    env e;
    env_open(&e, 0);
    enum { N = 4000 };
    uint32_t *out = malloc(N * 4);
    const uint32_t seed = 9;
    clf_arg args[] = {CLF_OUT(out, N * 4, 4), CLF_SCALAR(&seed)};
    clf_launch_report r;

    clf_launch_desc d = make_desc(&e, "hash32", CLF_STRATEGY_STATIC, 1, N, 1, 1);
    /* Exact shares need chunks of any length: without a granularity or a local size,
     * clfleet would choose a work-group size and round the shares to it. */
    d.granularity = 1;
    d.weights_mode = CLF_WEIGHTS_USER;
    double w31[2] = {3, 1};
    d.weights = w31;
    launch_ok(&e, &d, args, 2, &r, "weights 3:1");
    check_report(&d, &r);
    /* Without a local size the runtime may pick one (up to 64) and align chunks to it. */
    expect(r.dev[0].units >= 3000 - 64 && r.dev[0].units <= 3000 + 64, "%s: %s", what,
           describe(&r));

    double w10[2] = {1, 0};
    d.weights = w10;
    launch_ok(&e, &d, args, 2, &r, "weights 1:0");
    check_report(&d, &r);
    expect(r.dev[0].units == N && r.dev[1].units == 0, "%s: %s", what, describe(&r));

    /* Guided follows user weights too: the heavier device does more. */
    d.strategy = CLF_STRATEGY_GUIDED;
    d.weights = w31;
    launch_ok(&e, &d, args, 2, &r, "guided 3:1");
    check_report(&d, &r);

    d.strategy = CLF_STRATEGY_STATIC;
    d.weights_mode = CLF_WEIGHTS_EQUAL;
    d.weights = NULL;
    launch_ok(&e, &d, args, 2, &r, "equal weights");
    check_report(&d, &r);
    expect(r.dev[0].units >= N / 2 - 64 && r.dev[0].units <= N / 2 + 64, "%s: %s", what,
           describe(&r));
    for (size_t i = 0; i < N; i++)
        expect(out[i] == lowbias32((uint32_t)i ^ seed), "out[%zu] = %u", i, out[i]);

    /* Dynamic: about chunks_per_device chunks each. */
    d.strategy = CLF_STRATEGY_DYNAMIC;
    d.chunks_per_device = 8;
    launch_ok(&e, &d, args, 2, &r, "dynamic, 8 a device");
    check_report(&d, &r);
    unsigned chunks = r.dev[0].chunks + r.dev[1].chunks;
    expect(chunks >= 8 && chunks <= 32, "%s: %u chunks %s", what, chunks, describe(&r));
    free(out);
    env_close(&e);
}
END_TEST

static char learn_dir[256];

static void remove_dir(const char *dir)
{
    DIR *dd = opendir(dir);
    if (!dd)
        return;
    struct dirent *ent;
    char path[512];
    while ((ent = readdir(dd)))
        if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
            unlink(path);
        }
    closedir(dd);
    rmdir(dir);
}

static int mentions_learned(const char *reason)
{
    char low[sizeof((clf_launch_report *)0)->reason];
    size_t i = 0;
    for (; reason[i] && i + 1 < sizeof low; i++)
        low[i] = (char)(reason[i] >= 'A' && reason[i] <= 'Z' ? reason[i] + 32 : reason[i]);
    low[i] = 0;
    return strstr(low, "learn") != NULL;
}

/* A fleet of the suites' pair (CLFLEET_TEST_DEVICES_PAIR's, when set) whose cache directory,
 * and so cost model, is learn_dir, with SRC built. */
static void learn_open(env *e)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = test_selection(FLEET2);
    o.cache_dir = learn_dir;
    *e = (env){&CFGS[0], NULL, NULL};
    ck_assert_ok(clf_fleet_create(&e->f, &o));
    ck_assert_ok(clf_program_build_source(&e->p, e->f, SRC, NULL));
}

/* Learned weights: after a warm-up the static split says it used them, and a new fleet on
 * the same cache directory starts with them. */
START_TEST(learned_weights)
{
    snprintf(learn_dir, sizeof learn_dir, "%s/clfleet-learn-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(learn_dir));
    enum { N = 1 << 20 };
    uint32_t *out = malloc(N * 4);
    const uint32_t seed = 11;
    clf_arg args[] = {CLF_OUT(out, N * 4, 4), CLF_SCALAR(&seed)};
    for (int process = 0; process < 2; process++) {
        env e;
        learn_open(&e);
        for (int run = 0; run < (process ? 1 : 4); run++) {
            clf_launch_desc d = make_desc(&e, "hash32", CLF_STRATEGY_STATIC, 1, N, 1, 1);
            d.weights_mode = CLF_WEIGHTS_LEARNED;
            char extra[48];
            snprintf(extra, sizeof extra, "learned, fleet %d, run %d", process, run);
            clf_launch_report r;
            launch_ok(&e, &d, args, 2, &r, extra);
            check_report(&d, &r);
            if (process == 1 || run == 3)
                expect(mentions_learned(r.reason), "%s: reason '%s' %s", what, r.reason,
                       describe(&r));
            if (run == 3)
                fprintf(stderr, "learned weights: shares %.3f %.3f (%s)\n", r.dev[0].share,
                        r.dev[1].share, r.reason);
        }
        for (size_t i = 0; i < N; i += 997)
            expect(out[i] == lowbias32((uint32_t)i ^ seed), "out[%zu] = %u", i, out[i]);
        env_close(&e);
    }
    free(out);
}
END_TEST

/* The number after "key": in the JSON entry e, or NAN when absent or null. */
static double entry_number(const char *e, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *v = strstr(e, pat);
    if (!v || strncmp(v + strlen(pat), "null", 4) == 0)
        return NAN;
    return strtod(v + strlen(pat), NULL);
}

/* One round of the cost model's lesson: a fleet on learn_dir runs static shares of ranges
 * from 32K to 1M items, then closes, which saves the model. The first round's first launch
 * goes by learned weights: it opens the fleet's model, which every later launch feeds,
 * whatever its weights. Every other launch goes by equal user weights: both devices run every
 * launch, so each learns a chunk line from shares of every size. Learned weights would leave a
 * device far slower than the other (a CPU beside a GPU) out after the first launches, with
 * too few chunks for a line. */
static void learn_round(int round, uint32_t *out, size_t N, uint32_t seed)
{
    env e;
    learn_open(&e);
    double even[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < CLF_MAX_LAUNCH_DEVICES; i++)
        even[i] = 1;
    for (size_t n = N >> 5; n <= N; n <<= 1) {
        clf_arg args[] = {CLF_OUT(out, n * 4, 4), CLF_SCALAR(&seed)};
        clf_launch_desc d = make_desc(&e, "hash32", CLF_STRATEGY_STATIC, 1, n, 1, 1);
        if (round || n != N >> 5) {
            d.weights_mode = CLF_WEIGHTS_USER;
            d.weights = even;
        }
        char extra[48];
        snprintf(extra, sizeof extra, "cost model, round %d, %zu items", round, n);
        clf_launch_report r;
        launch_ok(&e, &d, args, 2, &r, extra);
        check_report(&d, &r);
    }
    for (size_t i = 0; i < N; i += 997)
        expect(out[i] == lowbias32((uint32_t)i ^ seed), "out[%zu] = %u", i, out[i]);
    env_close(&e); /* saves the model */
}

/* Whether every hash32 entry of the model's JSON doc has a throughput and a chunk line. */
static bool hash32_lines(const char *doc, bool say)
{
    bool all = true;
    for (const char *p = strstr(doc, "\n{"); p; p = strstr(p + 1, "\n{")) {
        char entry[2048];
        snprintf(entry, sizeof entry, "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
        if (!strstr(entry, "\"kernel\":\"hash32@"))
            continue;
        double thr = entry_number(entry, "units_per_s"), rate = entry_number(entry, "rate_units_per_s"),
               fixed = entry_number(entry, "fixed_us"), chunks = entry_number(entry, "chunks");
        bool line = thr > 0 && rate > 0 && fixed >= 0 && chunks >= 10;
        all = all && line;
        if (say) {
            fprintf(stderr, "cost model: %s\n", entry);
            expect(line, "a device without a throughput and a chunk line: %s", entry);
        }
    }
    return all;
}

/* The cost model: after launches whose chunks differ in size (learn_round()), each device of
 * the pair has a throughput and a fitted chunk line (a rate and a fixed cost per chunk),
 * persisted in the cache directory and shown by clf_perf_model_json(). The line fit refuses
 * chunks timed so unevenly that their slope is not positive, which a loaded host can cause
 * (distcheck beside a build did): more rounds, up to six, replace the model's chunk samples
 * (a ring of 16) with fresh ones until every device has its line. A model that never fits one
 * fails. */
START_TEST(cost_model_learned)
{
    snprintf(learn_dir, sizeof learn_dir, "%s/clfleet-model-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(learn_dir));
    enum { N = 1 << 20 };
    uint32_t *out = malloc(N * 4);
    ck_assert_ptr_nonnull(out);
    char *doc = NULL;
    for (int round = 0; round < 6; round++) {
        learn_round(round, out, N, 5);
        clf_free(doc);
        doc = NULL;
        ck_assert_ok(clf_perf_model_json(&doc, learn_dir));
        if (round >= 1 && hash32_lines(doc, false))
            break;
        if (round >= 1)
            fprintf(stderr, "cost model: no chunk line for every device after round %d\n", round);
    }
    free(out);
    size_t seen = 0, links = 0;
    for (const char *p = strstr(doc, "\n{"); p; p = strstr(p + 1, "\n{")) {
        char entry[2048];
        snprintf(entry, sizeof entry, "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
        if (strstr(entry, "\"kernel\":\"link:d2h\"")) {
            /* The results came back in chunks of 1 MiB and more: the link is learned. */
            links++;
            expect(entry_number(entry, "units_per_s") > 0, "link without a speed: %s", entry);
        }
        seen += strstr(entry, "\"kernel\":\"hash32@") != NULL;
    }
    hash32_lines(doc, true);
    /* One entry per kind of device: the pair's two identical sub-devices share a key. */
    expect(seen >= 1 && seen <= 2, "%zu hash32 entries in the model: %s", seen, doc);
    expect(links >= 1, "no device-to-host link learned: %s", doc);
    clf_free(doc);
}
END_TEST

static void learned_teardown(void)
{
    if (learn_dir[0])
        remove_dir(learn_dir);
    learn_dir[0] = 0;
}

/* ---- asynchronous launches ------------------------------------------------------------- */

START_TEST(async_in_order)
{
    env e;
    env_open(&e, _i);
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint32_t *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++)
        x[i] = (float)(i % 1000), y[i] = (float)(i % 77), v[i] = (uint32_t)i;
    const float alpha = 2.0f;
    const uint32_t mc[3][2] = {{3, 1}, {5, 7}, {2, 11}};
    clf_launch_report rep[6];
    clf_event *ev[6];
    for (int k = 0; k < 3; k++) {
        /* Non-commuting updates of v: y*m+c in another order gives other numbers. */
        clf_arg aff[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&mc[k][0]),
                         CLF_SCALAR(&mc[k][1])};
        clf_launch_desc d = make_desc(&e, "affine", STRATEGIES[k + 1], 1, N, 1, 1);
        set_what(&e, &d, "async");
        ck_assert_ok(clf_launch_async(e.f, e.p, &d, aff, 3, &rep[2 * k], &ev[2 * k]));
        clf_arg sax[] = {CLF_SCALAR(&alpha), CLF_IN(x, N * sizeof *x, sizeof *x),
                         CLF_INOUT(y, N * sizeof *y, sizeof *y)};
        clf_launch_desc d2 = make_desc(&e, "saxpy", STRATEGIES[k], 1, N, 1, 1);
        ck_assert_ok(clf_launch_async(e.f, e.p, &d2, sax, 3, &rep[2 * k + 1], &ev[2 * k + 1]));
        /* desc and args were copied: clobbering them changes nothing. */
        memset(&d, 0, sizeof d);
        memset(&d2, 0, sizeof d2);
        memset(aff, 0, sizeof aff);
        memset(sax, 0, sizeof sax);
    }
    /* Wait in reverse: the last one completing means all are done, in order. */
    for (int k = 5; k >= 0; k--) {
        ck_assert_ok(clf_event_wait(ev[k]));
        clf_event_release(ev[k]);
    }
    for (int k = 0; k < 6; k++)
        expect(rep[k].total_units == N, "launch %d: total_units %llu", k,
               (unsigned long long)rep[k].total_units);
    for (size_t i = 0; i < N; i++) {
        uint32_t want = (uint32_t)i;
        for (int k = 0; k < 3; k++)
            want = want * mc[k][0] + mc[k][1];
        expect(v[i] == want, "%s: v[%zu] = %u, want %u", e.cfg->label, i, v[i], want);
        float fy = (float)(i % 77) + 3 * alpha * (float)(i % 1000);
        expect(y[i] == fy, "%s: y[%zu] = %g, want %g", e.cfg->label, i, (double)y[i], (double)fy);
    }
    free(x);
    free(y);
    free(v);
    env_close(&e);
}
END_TEST

/* A launch that fails at run time (a kernel argument missing) between two good ones. */
START_TEST(async_failure_does_not_block)
{
    env e;
    env_open(&e, 0);
    enum { N = 4099 };
    uint32_t *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++)
        v[i] = (uint32_t)i;
    const uint32_t m = 3, c = 1;
    clf_arg aff[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&m), CLF_SCALAR(&c)};
    clf_launch_desc d = make_desc(&e, "affine", CLF_STRATEGY_DYNAMIC, 1, N, 1, 1);
    clf_event *e1 = NULL, *e2 = NULL, *e3 = NULL;
    clf_launch_report r1, r2, r3;
    ck_assert_ok(clf_launch_async(e.f, e.p, &d, aff, 3, &r1, &e1));
    clf_status st2 = clf_launch_async(e.f, e.p, &d, aff, 2, &r2, &e2);
    ck_assert_ok(clf_launch_async(e.f, e.p, &d, aff, 3, &r3, &e3));
    ck_assert_ok(clf_event_wait(e1));
    if (st2 == CLF_SUCCESS) {
        clf_status w = clf_event_wait(e2);
        expect(w != CLF_SUCCESS, "a launch with a missing argument succeeded");
        clf_event_release(e2);
    } else {
        ck_assert_ptr_null(e2);
    }
    ck_assert_ok(clf_event_wait(e3));
    clf_event_release(e1);
    clf_event_release(e3);
    /* Whether the failed launch touched v is not defined; the two good ones ran. */
    if (st2 != CLF_SUCCESS)
        for (size_t i = 0; i < N; i++)
            expect(v[i] == ((uint32_t)i * 3 + 1) * 3 + 1, "v[%zu] = %u", i, v[i]);
    free(v);
    env_close(&e);
}
END_TEST

/* ---- more reductions, in-place halos, per-device limits, concurrency --------------------- */

/* Every type with every operation: a host value differing from the one written means a wrong
 * identity or a wrong combination. Elements past the range hold the combined identity. */
static int equal_or_both_nan(double got, double want)
{
    return got == want || (isnan(got) && isnan(want));
}

START_TEST(reduce_every_type_and_op)
{
    env e;
    env_open(&e, _i);
    static const struct {
        const char *kernel;
        clf_type type;
    } types[] = {{"red_i32", CLF_TYPE_INT32},
                 {"red_u32", CLF_TYPE_UINT32},
                 {"red_i64", CLF_TYPE_INT64},
                 {"red_f32", CLF_TYPE_FLOAT},
                 {"red_f64", CLF_TYPE_DOUBLE}};
    static const clf_reduce_op ops[] = {CLF_REDUCE_SUM, CLF_REDUCE_PROD, CLF_REDUCE_MIN,
                                        CLF_REDUCE_MAX};
    enum { N = 1000, EXTRA = 3 };
    void *host = malloc((N + EXTRA) * 8);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t o = 0; o < 4; o++) {
            clf_strategy st = STRATEGIES[(t * 4 + o) % NSTRATEGIES];
            memset(host, 0x5a, (N + EXTRA) * 8);
            clf_arg args[] = {CLF_REDUCE(host, N + EXTRA, types[t].type, ops[o])};
            clf_launch_desc d = make_desc(&e, types[t].kernel, st, 1, N, 1, 1);
            char extra[32];
            snprintf(extra, sizeof extra, "op %d", (int)ops[o]);
            clf_launch_report r;
            launch_ok(&e, &d, args, 1, &r, extra);
            check_report(&d, &r);
            for (size_t i = 0; i < N + EXTRA; i++) {
                uint32_t x = lowbias32((uint32_t)i);
                double got, want;
                int in = i < N;
                clf_reduce_op op = ops[o];
                switch (types[t].type) {
                case CLF_TYPE_INT32:
                    got = ((int32_t *)host)[i];
                    want = in               ? (int32_t)x
                           : op == CLF_REDUCE_SUM  ? 0
                           : op == CLF_REDUCE_PROD ? 1
                           : op == CLF_REDUCE_MIN  ? INT32_MAX
                                            : INT32_MIN;
                    break;
                case CLF_TYPE_UINT32:
                    got = ((uint32_t *)host)[i];
                    want = in               ? x
                           : op == CLF_REDUCE_SUM  ? 0
                           : op == CLF_REDUCE_PROD ? 1
                           : op == CLF_REDUCE_MIN  ? UINT32_MAX
                                            : 0;
                    break;
                case CLF_TYPE_INT64: {
                    int64_t g = ((int64_t *)host)[i];
                    int64_t w = in               ? (int64_t)x * 3 - 8589934592LL
                                : op == CLF_REDUCE_SUM  ? 0
                                : op == CLF_REDUCE_PROD ? 1
                                : op == CLF_REDUCE_MIN  ? INT64_MAX
                                                 : INT64_MIN;
                    expect(g == w, "%s: %s op %d [%zu] = %lld, want %lld %s", what, types[t].kernel,
                           (int)op, i, (long long)g, (long long)w, describe(&r));
                    continue;
                }
                case CLF_TYPE_FLOAT:
                    got = ((float *)host)[i];
                    want = in               ? (float)(int32_t)(x >> 8) - 8388608.0f
                           : op == CLF_REDUCE_SUM  ? 0
                           : op == CLF_REDUCE_PROD ? 1
                           : op == CLF_REDUCE_MIN  ? INFINITY
                                            : -INFINITY;
                    /* FLT_MAX is an acceptable identity for min/max too. */
                    if (!in && op == CLF_REDUCE_MIN && got == FLT_MAX)
                        got = INFINITY;
                    if (!in && op == CLF_REDUCE_MAX && got == -FLT_MAX)
                        got = -INFINITY;
                    break;
                default:
                    got = ((double *)host)[i];
                    want = in               ? (double)x * 0.5
                           : op == CLF_REDUCE_SUM  ? 0
                           : op == CLF_REDUCE_PROD ? 1
                           : op == CLF_REDUCE_MIN  ? INFINITY
                                            : -INFINITY;
                    if (!in && op == CLF_REDUCE_MIN && got == DBL_MAX)
                        got = INFINITY;
                    if (!in && op == CLF_REDUCE_MAX && got == -DBL_MAX)
                        got = -INFINITY;
                    break;
                }
                expect(equal_or_both_nan(got, want), "%s: %s op %d [%zu] = %.17g, want %.17g %s",
                       what, types[t].kernel, (int)op, i, got, want, describe(&r));
            }
        }
    free(host);
    env_close(&e);
}
END_TEST

/*
 * An in-place argument with a halo: each device writes back only its chunk, never the halo
 * it read (a stale halo written back would undo a neighbour's results).
 */
START_TEST(inout_halo_writes_only_the_chunk)
{
    env e;
    env_open(&e, _i);
    static const size_t sizes[] = {1, 2, 3, 101, 4099, 65537};
    enum { NMAX = 65537 };
    uint32_t *p = malloc(NMAX * 8);
    for (size_t rep = 0; rep < 2; rep++)
        for (size_t s = 0; s < NSTRATEGIES; s++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                uint32_t n = (uint32_t)sizes[k];
                for (uint32_t i = 0; i < n; i++)
                    p[2 * i] = lowbias32(i) & 0xffffff, p[2 * i + 1] = 0;
                clf_arg args[] = {CLF_INOUT(p, (size_t)n * 8, 8), CLF_SCALAR(&n)};
                args[0].halo_before = args[0].halo_after = 1;
                clf_launch_desc d = make_desc(&e, "pairs", STRATEGIES[s], 1, n, 1, 1);
                d.chunks_per_device = 16; /* many boundaries */
                clf_launch_report r;
                launch_ok(&e, &d, args, 2, &r, "inout with halo");
                check_report(&d, &r);
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t l = i ? i - 1 : 0, rr = i + 1 < n ? i + 1 : n - 1;
                    uint32_t in = lowbias32(i) & 0xffffff;
                    uint32_t want = (lowbias32(l) & 0xffffff) + 2 * in + (lowbias32(rr) & 0xffffff);
                    expect(p[2 * i] == in && p[2 * i + 1] == want,
                           "%s: unit %u = {%u, %u}, want {%u, %u} %s", what, i, p[2 * i],
                           p[2 * i + 1], in, want, describe(&r));
                }
            }
    free(p);
    env_close(&e);
}
END_TEST

/* Limits for some devices only (0: none), and a device too small for one unit: the others
 * do its work. */
START_TEST(memory_limits_per_device)
{
    env e;
    env_open(&e, 0);
    limited l;
    /* Rows of 1 KiB with a halo of 2 + 2 rows: 512 bytes holds no chunk on device 0. */
    limited_new(&l, 1 << 16, 1, 256, 300);
    uint64_t one[2] = {0, 64 << 10};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_launch_report r;
        limited_addmul(&e, &l, STRATEGIES[s], one, &r, "limit on device 1 only");
        expect(r.dev[1].mem_peak <= one[1] && r.dev[1].mem_budget <= one[1], "%s: %s", what,
               describe(&r));
    }
    uint64_t small0[2] = {512, 0};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        clf_launch_report r;
        limited_blur(&e, &l, STRATEGIES[s], small0, &r, "device 0 too small");
        expect(r.dev[0].units == 0 && r.dev[0].mem_peak <= 512, "%s: %s", what, describe(&r));
    }
    limited_free(&l);
    env_close(&e);
}
END_TEST

/* Two host threads launching on one fleet at once, each with its own arrays. */
typedef struct racer {
    env *e;
    uint32_t seed;
    clf_strategy strategy;
    int bad; /* failed launches or wrong elements; asserted by the main thread */
    char msg[256];
} racer;

static void *race(void *arg)
{
    racer *rc = arg;
    enum { N = 50021 };
    uint32_t *out = malloc(N * 4);
    for (int it = 0; it < 20 && !rc->bad; it++) {
        uint32_t seed = rc->seed + (uint32_t)it;
        clf_arg args[] = {CLF_OUT(out, N * 4, 4), CLF_SCALAR(&seed)};
        clf_launch_desc d = make_desc(rc->e, "hash32", rc->strategy, 1, N, 1, 1);
        clf_status st = clf_launch(rc->e->f, rc->e->p, &d, args, 2, NULL);
        if (st != CLF_SUCCESS) {
            rc->bad = 1;
            snprintf(rc->msg, sizeof rc->msg, "launch %d: %s: %s", it, clf_status_name(st),
                     clf_last_error());
        }
        for (size_t i = 0; i < N && !rc->bad; i++)
            if (out[i] != lowbias32((uint32_t)i ^ seed)) {
                rc->bad = 1;
                snprintf(rc->msg, sizeof rc->msg, "launch %d: out[%zu] = %u, want %u", it, i,
                         out[i], lowbias32((uint32_t)i ^ seed));
            }
    }
    free(out);
    return NULL;
}

START_TEST(concurrent_launches)
{
    env e;
    env_open(&e, _i);
    racer rc[2] = {{&e, 1000, CLF_STRATEGY_DYNAMIC, 0, ""}, {&e, 5000, CLF_STRATEGY_GUIDED, 0, ""}};
    pthread_t t[2];
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, race, &rc[k]), 0);
    for (int k = 0; k < 2; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++)
        expect(!rc[k].bad, "%s: thread %d: %s", e.cfg->label, k, rc[k].msg);
    env_close(&e);
}
END_TEST

/* A blocking launch queued behind asynchronous ones on the same array runs after them. */
START_TEST(sync_after_async)
{
    env e;
    env_open(&e, _i);
    enum { N = 100003 };
    uint32_t *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++)
        v[i] = (uint32_t)i;
    const uint32_t mc[3][2] = {{3, 1}, {5, 7}, {7, 3}};
    clf_event *ev[2];
    clf_launch_report rep[3];
    for (int k = 0; k < 3; k++) {
        clf_arg aff[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&mc[k][0]),
                         CLF_SCALAR(&mc[k][1])};
        clf_launch_desc d = make_desc(&e, "affine", STRATEGIES[k], 1, N, 1, 1);
        if (k < 2)
            ck_assert_ok(clf_launch_async(e.f, e.p, &d, aff, 3, &rep[k], &ev[k]));
        else
            launch_ok(&e, &d, aff, 3, &rep[k], "blocking, after two async");
    }
    for (int k = 0; k < 2; k++) {
        ck_assert_ok(clf_event_wait(ev[k]));
        clf_event_release(ev[k]);
    }
    for (size_t i = 0; i < N; i++) {
        uint32_t want = (uint32_t)i;
        for (int k = 0; k < 3; k++)
            want = want * mc[k][0] + mc[k][1];
        expect(v[i] == want, "%s: v[%zu] = %u, want %u", e.cfg->label, i, v[i], want);
    }
    free(v);
    env_close(&e);
}
END_TEST

/* The process's threads now (Linux: /proc/self/task), or 0 when they cannot be counted. */
static size_t count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    size_t n = 0;
    if (!d)
        return 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/*
 * Many asynchronous launches queued at once are queue entries, not threads: the process's
 * thread count stays within a few of what it was (one dispatcher per fleet; a thread per
 * launch would add up to 200). They run in submission order, blocking launches among them
 * too: non-commuting updates of one array, checked against the same updates on the host.
 */
START_TEST(async_many_bounded_threads)
{
    env e;
    env_open(&e, _i);
    enum { N = 4099, K = 200 };
    uint32_t *v = malloc(N * sizeof *v);
    uint32_t (*mc)[2] = malloc(K * sizeof *mc);
    clf_launch_report *rep = calloc(K, sizeof *rep);
    clf_event **ev = calloc(K, sizeof *ev);
    ck_assert(v && mc && rep && ev);
    for (size_t i = 0; i < N; i++)
        v[i] = (uint32_t)i;
    for (uint32_t k = 0; k < K; k++) {
        mc[k][0] = 2 * k + 3;
        mc[k][1] = k ^ 0x55u;
    }
    /* A first launch makes the fleet's per-device threads; count from there. */
    uint32_t one = 1, zero = 0;
    clf_arg warm[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&one),
                      CLF_SCALAR(&zero)};
    clf_launch_desc dw = make_desc(&e, "affine", CLF_STRATEGY_DYNAMIC, 1, N, 1, 1);
    clf_launch_report rw;
    launch_ok(&e, &dw, warm, 3, &rw, "warm-up (identity)");
    size_t before = count_threads(), most = before;
    for (int k = 0; k < K; k++) {
        clf_arg aff[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&mc[k][0]),
                         CLF_SCALAR(&mc[k][1])};
        clf_launch_desc d = make_desc(&e, "affine", STRATEGIES[k % NSTRATEGIES], 1, N, 1, 1);
        if (k % 50 == 49) {
            launch_ok(&e, &d, aff, 3, &rep[k], "blocking, among asynchronous ones");
        } else {
            ck_assert_ok(clf_launch_async(e.f, e.p, &d, aff, 3, &rep[k], &ev[k]));
        }
        size_t now = count_threads();
        most = now > most ? now : most;
    }
    /* Wait for the last first: once it is done, all are (they run in order). */
    for (int k = K - 1; k >= 0; k--)
        if (ev[k]) {
            ck_assert_ok(clf_event_wait(ev[k]));
            clf_event_release(ev[k]);
        }
    if (before)
        expect(most <= before + 4, "%s: %zu threads before %d queued launches, %zu while queued",
               e.cfg->label, before, K, most);
    for (int k = 0; k < K; k++)
        expect(rep[k].total_units == N && rep[k].done_units == N,
               "%s: launch %d: total_units %llu, done_units %llu", e.cfg->label, k,
               (unsigned long long)rep[k].total_units, (unsigned long long)rep[k].done_units);
    for (size_t i = 0; i < N; i++) {
        uint32_t want = (uint32_t)i;
        for (int k = 0; k < K; k++)
            want = want * mc[k][0] + mc[k][1];
        if (v[i] != want) {
            expect(0, "%s: v[%zu] = %u, want %u", e.cfg->label, i, v[i], want);
            break;
        }
    }
    free(v);
    free(mc);
    free(rep);
    free(ev);
    env_close(&e);
}
END_TEST

/* ---- $CLFLEET_STRATEGY ------------------------------------------------------------------- */

static void unset_strategy(void)
{
    unsetenv("CLFLEET_STRATEGY");
}

START_TEST(strategy_from_environment)
{
    env e;
    env_open(&e, 0);
    enum { N = 1000 };
    uint32_t out[N];
    const uint32_t seed = 3;
    clf_arg args[] = {CLF_OUT(out, sizeof out, 4), CLF_SCALAR(&seed)};
    clf_launch_report r;
    clf_launch_desc d = make_desc(&e, "hash32", CLF_STRATEGY_DEFAULT, 1, N, 1, 1);

    unsetenv("CLFLEET_STRATEGY");
    ck_assert_ok(clf_launch(e.f, e.p, &d, args, 2, &r));
    ck_assert_int_eq(r.requested, CLF_STRATEGY_AUTO);
    expect(r.strategy >= CLF_STRATEGY_STATIC && r.strategy <= CLF_STRATEGY_MEMORY_AWARE, "%d",
           (int)r.strategy);
    expect(r.reason[0] != 0, "AUTO says why");

    static const struct {
        const char *value;
        clf_strategy want;
    } names[] = {{"dynamic", CLF_STRATEGY_DYNAMIC},
                 {"STATIC", CLF_STRATEGY_STATIC},
                 {"guided", CLF_STRATEGY_GUIDED},
                 {"memory-aware", CLF_STRATEGY_MEMORY_AWARE}};
    /* The variable is read once, by clf_fleet_create(): a fleet per value. */
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        setenv("CLFLEET_STRATEGY", names[k].value, 1);
        env_close(&e);
        env_open(&e, 0);
        setenv("CLFLEET_STRATEGY", "banana", 1); /* too late: the fleet has its strategy */
        ck_assert_ok(clf_launch(e.f, e.p, &d, args, 2, &r));
        expect(r.strategy == names[k].want && r.requested == names[k].want,
               "CLFLEET_STRATEGY=%s ran %d (asked %d)", names[k].value, (int)r.strategy,
               (int)r.requested);
    }
    /* An explicit strategy wins over the environment. */
    setenv("CLFLEET_STRATEGY", "dynamic", 1);
    env_close(&e);
    env_open(&e, 0);
    d.strategy = CLF_STRATEGY_GUIDED;
    ck_assert_ok(clf_launch(e.f, e.p, &d, args, 2, &r));
    ck_assert_int_eq(r.strategy, CLF_STRATEGY_GUIDED);
    d.strategy = CLF_STRATEGY_DEFAULT;

    /* A bad value fails the fleet's creation, naming the value. */
    setenv("CLFLEET_STRATEGY", "banana", 1);
    clf_fleet *bad = NULL;
    ck_assert_status(clf_fleet_create(&bad, NULL), CLF_ERROR_PARSE);
    ck_assert_ptr_null(bad);
    expect(strstr(clf_last_error(), "banana") != NULL, "detail: %s", clf_last_error());
    unsetenv("CLFLEET_STRATEGY");
    for (size_t i = 0; i < N; i++)
        expect(out[i] == lowbias32((uint32_t)i ^ seed), "out[%zu] = %u", i, out[i]);
    env_close(&e);
}
END_TEST

/* Whether a static report's reason names fleet device dev as left out by speed ("device 1
 * left out (its share by speed ...)" or "devices 1, 3 left out (too slow to help ...)"). */
static int named_left_out(const char *reason, size_t dev)
{
    char pat[48];
    snprintf(pat, sizeof pat, "device %zu left out", dev);
    if (strstr(reason, pat))
        return 1;
    const char *l = strstr(reason, "; devices "), *end = l ? strstr(l, " left out") : NULL;
    for (l = end ? l + strlen("; devices ") : NULL; l && l < end;) {
        char *next;
        unsigned long v = strtoul(l, &next, 10);
        if (next == l)
            break;
        if (v == dev)
            return 1;
        for (l = next; *l == ',' || *l == ' '; l++)
            ;
    }
    return 0;
}

/* A launch that was split, as far as the fleet allows: no "too small", and two devices or
 * more ran, or each idle one is named as left out by speed (a CPU beside a GPU: static's
 * rules drop a device whose share could not help). */
static int split_as_allowed(const clf_launch_report *r)
{
    size_t busy = 0, unexplained = 0;
    for (size_t i = 0; i < r->num_devices; i++) {
        busy += r->dev[i].units > 0;
        unexplained += !r->dev[i].units && !named_left_out(r->reason, r->dev[i].device);
    }
    return !strstr(r->reason, "too small") && busy >= 1 && (busy >= 2 || unexplained == 0);
}

/* AUTO on a launch too small to split: one chunk on one device, the others idle; a large
 * launch of the same kernel is split. Results against the host reference. */
START_TEST(auto_small_runs_on_one_device)
{
    env e;
    env_open(&e, _i);
    enum { SMALL = 1000, LARGE = 1 << 22 };
    uint32_t *out = malloc(LARGE * sizeof *out);
    ck_assert_ptr_nonnull(out);
    const uint32_t seed = 5;
    double ran_s = -1; /* the kernel's time in the first run, from its report */
    for (int run = 0; run < 3; run++) {
        size_t n = run < 2 ? SMALL : LARGE;
        memset(out, 0, n * sizeof *out);
        clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&seed)};
        clf_launch_desc d = make_desc(&e, "hash32", CLF_STRATEGY_AUTO, 1, n, 1, 1);
        char extra[32];
        snprintf(extra, sizeof extra, "auto, run %d", run);
        clf_launch_report r;
        launch_ok(&e, &d, args, 2, &r, extra);
        check_report(&d, &r);
        size_t busy = 0;
        for (size_t i = 0; i < r.num_devices; i++)
            busy += r.dev[i].units > 0;
        /* The first run knows only the size; the second the kernel's measured time, which
         * a loaded machine (or a sanitizer build) can push over the 100 us threshold: then
         * the launch must split, and in between either is right. */
        int small_by_time = run == 1 && ran_s >= 0 && ran_s < 80e-6;
        int large_by_time = run == 1 && ran_s >= 120e-6;
        /* Once the cost model has a chunk line for every device (learned by earlier launches
         * and persisted in the cache directory), it decides instead, at any size: alone when
         * it predicts that no later than split. On equal devices it never does; beside a
         * device far slower (a GPU and a CPU) it does, for the large run too. */
        const char *pred = strstr(r.reason, "(too small to split: predicted ");
        double alone_us = 0, split_us = 0;
        if (pred && sscanf(pred, "(too small to split: predicted %lf us on it alone, %lf us split",
                           &alone_us, &split_us) == 2) {
            expect(r.strategy == CLF_STRATEGY_STATIC && busy == 1 && alone_us <= split_us,
                   "%s: reason '%s' %s", what, r.reason, describe(&r));
            if (run == 0)
                for (size_t i = 0; i < r.num_devices; i++)
                    if (r.dev[i].units)
                        ran_s = r.dev[i].busy_s;
        } else if (run == 0 || small_by_time) {
            expect(r.strategy == CLF_STRATEGY_STATIC && busy == 1 &&
                       strstr(r.reason, "too small") &&
                       strstr(r.reason, run ? "kernel ran" : "work-items"),
                   "%s: reason '%s' %s", what, r.reason, describe(&r));
            if (run == 0)
                for (size_t i = 0; i < r.num_devices; i++)
                    if (r.dev[i].units)
                        ran_s = r.dev[i].busy_s;
        } else if (large_by_time) {
            expect(split_as_allowed(&r), "%s: the kernel ran %.0f us, yet: reason '%s' %s",
                   what, ran_s * 1e6, r.reason, describe(&r));
        } else if (run == 2) {
            expect(split_as_allowed(&r), "%s: reason '%s' %s", what, r.reason, describe(&r));
        }
        for (size_t i = 0; i < n; i++)
            if (out[i] != lowbias32((uint32_t)i ^ seed))
                ck_abort_msg("%s: out[%zu] = %u", what, i, out[i]);
    }
    free(out);
    env_close(&e);
}
END_TEST

/* AUTO on irregular work: once static (or guided) has balanced the kernel badly, AUTO tries
 * dynamic, then chooses between them by the makespans they measured (never by efficiency
 * alone: issue 27). */
START_TEST(auto_leaves_static_for_dynamic)
{
    env e;
    env_open(&e, 0);
    enum { N = 16384, RUNS = 7 };
    uint32_t *out = malloc(N * sizeof *out), *want = malloc(N * sizeof *want);
    ck_assert(out && want);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t x = i, reps = i >= N - N / 16 ? 20000 : 1;
        for (uint32_t r = 0; r < reps; r++)
            x = lowbias32(x + r);
        want[i] = x;
    }
    const uint32_t n = N;
    int dynamic_from = -1, bad = 0;
    for (int run = 0; run < RUNS; run++) {
        memset(out, 0, N * sizeof *out);
        clf_arg args[] = {CLF_OUT(out, N * sizeof *out, sizeof *out), CLF_SCALAR(&n)};
        clf_launch_desc d = make_desc(&e, "tail_heavy", CLF_STRATEGY_AUTO, 1, N, 1, 1);
        char extra[32];
        snprintf(extra, sizeof extra, "run %d", run);
        clf_launch_report r;
        launch_ok(&e, &d, args, 2, &r, extra);
        check_report(&d, &r);
        ck_assert_msg(memcmp(out, want, N * sizeof *out) == 0, "%s: wrong result", what);
        /* The case needs devices of similar speed: static leaving all but one out by speed (a
         * CPU beside a GPU 100x faster) has nothing to balance, and auto rightly keeps it.
         * Said, not passed silently; PoCL's equal sub-devices never take this way. */
        size_t busy = 0;
        for (size_t i = 0; i < r.num_devices; i++)
            busy += r.dev[i].units > 0;
        if (r.strategy == CLF_STRATEGY_STATIC && busy == 1 && strstr(r.reason, "left out")) {
            fprintf(stderr, "SKIP auto_leaves_static_for_dynamic (%s), run %d: static runs on one "
                    "device, the others left out by speed ('%s'); the case needs devices of "
                    "similar speed\n", what, run, r.reason);
            goto done;
        }
        bad |= (r.strategy == CLF_STRATEGY_STATIC || r.strategy == CLF_STRATEGY_GUIDED) &&
               r.efficiency < 0.9;
        if (r.strategy == CLF_STRATEGY_DYNAMIC && dynamic_from < 0)
            dynamic_from = run;
        /* Once dynamic has run, auto chooses by the makespans measured: dynamic when
         * static's (or guided's) per unit was over 1.05x dynamic's, else the other. */
        const char *m = strstr(r.reason, "makespan per unit: ");
        if (dynamic_from >= 0 && run > dynamic_from) {
            char other[16];
            double t = 0, dyn_t = 0;
            expect(m && sscanf(m, "makespan per unit: %15s %lf ns, dynamic %lf ns", other, &t,
                               &dyn_t) == 3,
                   "%s: after dynamic from run %d: reason '%s' %s", what, dynamic_from,
                   r.reason, describe(&r));
            expect((r.strategy == CLF_STRATEGY_DYNAMIC) == (t > dyn_t * 1.05),
                   "%s: auto chose %s: reason '%s'", what, clf_strategy_name(r.strategy),
                   r.reason);
        }
    }
    expect(bad && dynamic_from >= 0 && dynamic_from < RUNS - 2,
           "%s: static or guided badly balanced %d, dynamic from run %d", what, bad,
           dynamic_from);
done:
    free(out);
    free(want);
    env_close(&e);
}
END_TEST

START_TEST(strategy_names)
{
    static const clf_strategy all[] = {CLF_STRATEGY_DEFAULT,      CLF_STRATEGY_STATIC,
                                       CLF_STRATEGY_DYNAMIC,      CLF_STRATEGY_GUIDED,
                                       CLF_STRATEGY_MEMORY_AWARE, CLF_STRATEGY_AUTO};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        const char *name = clf_strategy_name(all[k]);
        ck_assert_ptr_nonnull(name);
        clf_strategy back = (clf_strategy)-1;
        ck_assert_ok(clf_strategy_parse(&back, name));
        ck_assert_int_eq(back, all[k]);
    }
    ck_assert_ptr_null(clf_strategy_name((clf_strategy)42));
    clf_strategy s;
    ck_assert_int_ne(clf_strategy_parse(&s, "nope"), CLF_SUCCESS);
    ck_assert_int_ne(clf_strategy_parse(&s, NULL), CLF_SUCCESS);
    ck_assert_int_ne(clf_strategy_parse(NULL, "static"), CLF_SUCCESS);
    ck_assert_uint_eq(clf_type_size(CLF_TYPE_INT32), 4);
    ck_assert_uint_eq(clf_type_size(CLF_TYPE_UINT32), 4);
    ck_assert_uint_eq(clf_type_size(CLF_TYPE_INT64), 8);
    ck_assert_uint_eq(clf_type_size(CLF_TYPE_FLOAT), 4);
    ck_assert_uint_eq(clf_type_size(CLF_TYPE_DOUBLE), 8);
    ck_assert_uint_eq(clf_type_size((clf_type)0), 0);
    ck_assert_uint_eq(clf_type_size((clf_type)99), 0);
}
END_TEST

/* ---- bad input --------------------------------------------------------------------------- */

/* The call fails with one of the statuses and says why. */
#define expect_fail(call, want1, want2)                                                            \
    do {                                                                                           \
        clf_clear_error();                                                                         \
        clf_status st_ = (call);                                                                   \
        expect(st_ == (want1) || st_ == (want2), "%s returned %s, expected %s", #call,             \
               clf_status_name(st_), clf_status_name(want1));                                      \
        expect(clf_last_error()[0] != 0, "%s: %s without detail", #call, clf_status_name(st_));    \
    } while (0)

START_TEST(bad_input)
{
    env e;
    env_open(&e, 0);
    enum { N = 64 };
    uint32_t out[N], in[N] = {0};
    float fout[N];
    const uint32_t seed = 1;
    clf_arg args[] = {CLF_OUT(out, sizeof out, 4), CLF_SCALAR(&seed)};
    clf_launch_desc good = make_desc(&e, "hash32", CLF_STRATEGY_DYNAMIC, 1, N, 1, 1);
    clf_launch_desc d;
    clf_launch_report r;
    clf_fleet *f = e.f;
    clf_program *p = e.p;
    const int EINV = CLF_ERROR_INVALID_ARGUMENT, ENULL = CLF_ERROR_NULL_POINTER;

    ck_assert_ok(clf_launch(f, p, &good, args, 2, NULL)); /* the report is optional */

    expect_fail(clf_launch(NULL, p, &good, args, 2, &r), ENULL, ENULL);
    expect_fail(clf_launch(f, NULL, &good, args, 2, &r), ENULL, ENULL);
    expect_fail(clf_launch(f, p, NULL, args, 2, &r), ENULL, ENULL);
    expect_fail(clf_launch(f, p, &good, NULL, 2, &r), ENULL, ENULL);
    clf_event *ev = (clf_event *)f;
    expect_fail(clf_launch_async(NULL, p, &good, args, 2, &r, &ev), ENULL, ENULL);
    ck_assert_ptr_null(ev);

    d = good, d.kernel = NULL;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), ENULL, EINV);
    d = good, d.dims = 0;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.dims = 4;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.global[0] = 0;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), CLF_ERROR_ZERO_SIZE, CLF_ERROR_ZERO_SIZE);
    d = good, d.dims = 2, d.global[0] = N, d.global[1] = 0;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), CLF_ERROR_ZERO_SIZE, CLF_ERROR_ZERO_SIZE);
    d = good, d.dims = 2, d.global[0] = 0, d.global[1] = 1;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), CLF_ERROR_ZERO_SIZE, CLF_ERROR_ZERO_SIZE);
    d = good, d.kernel = "no_such_kernel";
    expect_fail(clf_launch(f, p, &d, args, 2, &r), CLF_ERROR_NOT_FOUND, CLF_ERROR_OPENCL);
    expect(strstr(clf_last_error(), "no_such_kernel") != NULL, "detail: %s", clf_last_error());
    d = good, d.strategy = (clf_strategy)42;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.strategy = (clf_strategy)-1;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.version = 999;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, CLF_ERROR_UNSUPPORTED);
    d = good, d.version = 0;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, CLF_ERROR_UNSUPPORTED);

    /* Devices. */
    size_t bad_dev[] = {0, 7};
    d = good, d.devices = bad_dev, d.num_devices = 2;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), CLF_ERROR_OUT_OF_RANGE, EINV);
    size_t twice[] = {1, 1};
    d = good, d.devices = twice, d.num_devices = 2;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.devices = bad_dev, d.num_devices = 0;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, CLF_ERROR_ZERO_SIZE);
    size_t many[CLF_MAX_LAUNCH_DEVICES + 1] = {0};
    d = good, d.devices = many, d.num_devices = CLF_MAX_LAUNCH_DEVICES + 1;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, CLF_ERROR_OUT_OF_RANGE);

    /* Weights. */
    d = good, d.strategy = CLF_STRATEGY_STATIC, d.weights_mode = CLF_WEIGHTS_USER, d.weights = NULL;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), ENULL, EINV);
    double neg[2] = {1, -1}, nan2[2] = {1, NAN}, zero[2] = {0, 0};
    d.weights = neg;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d.weights = nan2;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d.weights = zero;
    clf_status stz = clf_launch(f, p, &d, args, 2, &r); /* all zero: equal, or refused */
    expect(stz == CLF_SUCCESS || stz == CLF_ERROR_INVALID_ARGUMENT, "zero weights: %s",
           clf_status_name(stz));
    d = good, d.weights_mode = (clf_weights)9;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.mem_safety = -0.5;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);
    d = good, d.mem_safety = 1.5;
    expect_fail(clf_launch(f, p, &d, args, 2, &r), EINV, EINV);

    /* Local sizes: every dimension must be a multiple, the split one too. */
    clf_arg args2[] = {CLF_OUT(out, sizeof out, 4 * 8), CLF_SCALAR(&seed)};
    d = good, d.dims = 2, d.global[0] = 8, d.global[1] = 8, d.local[0] = 3, d.local[1] = 1;
    expect_fail(clf_launch(f, p, &d, args2, 2, &r), EINV, EINV);
    d.local[0] = 0, d.local[1] = 2; /* some but not all local sizes given */
    expect_fail(clf_launch(f, p, &d, args2, 2, &r), EINV, EINV);
    d.local[0] = 1, d.local[1] = 3; /* 8 % 3 along the split dimension */
    expect_fail(clf_launch(f, p, &d, args2, 2, &r), EINV, EINV);

    /* Partitioned arrays. */
    clf_arg shortarr[] = {CLF_OUT(out, sizeof out - 4, 4), CLF_SCALAR(&seed)};
    expect_fail(clf_launch(f, p, &good, shortarr, 2, &r), EINV, CLF_ERROR_OUT_OF_RANGE);
    clf_arg nullarr[] = {CLF_OUT(NULL, sizeof out, 4), CLF_SCALAR(&seed)};
    expect_fail(clf_launch(f, p, &good, nullarr, 2, &r), ENULL, EINV);
    clf_arg zerounit[] = {CLF_OUT(out, sizeof out, 0), CLF_SCALAR(&seed)};
    expect_fail(clf_launch(f, p, &good, zerounit, 2, &r), EINV, CLF_ERROR_ZERO_SIZE);
    clf_arg overflow[] = {CLF_OUT(out, sizeof out, SIZE_MAX / 2), CLF_SCALAR(&seed)};
    expect_fail(clf_launch(f, p, &good, overflow, 2, &r), CLF_ERROR_SIZE_OVERFLOW, EINV);
    clf_arg halo_out[] = {CLF_OUT(out, sizeof out, 4), CLF_SCALAR(&seed)};
    halo_out[0].halo_before = 1;
    expect_fail(clf_launch(f, p, &good, halo_out, 2, &r), EINV, EINV);
    clf_arg badkind[] = {CLF_OUT(out, sizeof out, 4), CLF_SCALAR(&seed)};
    badkind[1].kind = 99;
    expect_fail(clf_launch(f, p, &good, badkind, 2, &r), EINV, EINV);
    clf_arg badflag[] = {CLF_OUT(out, sizeof out, 4), CLF_SCALAR(&seed)};
    badflag[0].flags = 0x80;
    expect_fail(clf_launch(f, p, &good, badflag, 2, &r), EINV, EINV);
    clf_arg nullscalar[] = {CLF_OUT(out, sizeof out, 4), CLF_SCALAR(&seed)};
    nullscalar[1].host = NULL;
    expect_fail(clf_launch(f, p, &good, nullscalar, 2, &r), ENULL, EINV);

    /* Reductions. */
    int32_t x[N] = {0};
    uint32_t sum = 0;
    int32_t mn = 0;
    clf_launch_desc dr = make_desc(&e, "sum_min", CLF_STRATEGY_DYNAMIC, 1, N, 1, 1);
    clf_arg red[] = {CLF_IN(x, sizeof x, 4), CLF_REDUCE(&sum, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM),
                     CLF_REDUCE(&mn, 1, CLF_TYPE_INT32, CLF_REDUCE_MIN)};
    ck_assert_ok(clf_launch(f, p, &dr, red, 3, &r));
    red[1].type = 99;
    expect_fail(clf_launch(f, p, &dr, red, 3, &r), EINV, EINV);
    red[1].type = CLF_TYPE_UINT32, red[1].op = 0;
    expect_fail(clf_launch(f, p, &dr, red, 3, &r), EINV, EINV);
    red[1].op = 77;
    expect_fail(clf_launch(f, p, &dr, red, 3, &r), EINV, EINV);
    red[1].op = CLF_REDUCE_SUM, red[1].host = NULL;
    expect_fail(clf_launch(f, p, &dr, red, 3, &r), ENULL, EINV);
    red[1].host = &sum, red[1].size = 0;
    expect_fail(clf_launch(f, p, &dr, red, 3, &r), CLF_ERROR_ZERO_SIZE, EINV);
    red[1].size = 1;

    /* A kernel whose arguments do not match: fails, with detail, and nothing hangs. */
    clf_arg missing[] = {CLF_OUT(out, sizeof out, 4)};
    clf_status stm = clf_launch(f, p, &good, missing, 1, &r);
    expect(stm != CLF_SUCCESS && clf_last_error()[0], "missing argument: %s", clf_status_name(stm));
    clf_arg wrongtype[] = {CLF_OUT(fout, sizeof fout, 4), CLF_OUT(in, sizeof in, 4)};
    stm = clf_launch(f, p, &good, wrongtype, 2, &r); /* a buffer where a uint goes */
    expect(stm != CLF_SUCCESS && clf_last_error()[0], "buffer for a scalar: %s",
           clf_status_name(stm));

    /* A program from another fleet. */
    env other;
    env_open(&other, 0);
    expect_fail(clf_launch(f, other.p, &good, args, 2, &r), EINV, EINV);
    env_close(&other);

    /* After all that, a good launch still works. */
    memset(out, 0, sizeof out);
    ck_assert_ok(clf_launch(f, p, &good, args, 2, &r));
    for (size_t i = 0; i < N; i++)
        expect(out[i] == lowbias32((uint32_t)i ^ seed), "out[%zu] = %u", i, out[i]);
    env_close(&e);
}
END_TEST

/* ---- $CLFLEET_HOST_STAGING ---------------------------------------------------------------- */

/* The variables as the test run found them (check.sh re-runs this suite with them set). */
static char *saved_staging, *saved_chunk;

static void save_host_staging(void)
{
    const char *v = getenv("CLFLEET_HOST_STAGING"), *c = getenv("CLFLEET_TRANSFER_CHUNK");
    saved_staging = v ? strdup(v) : NULL;
    saved_chunk = c ? strdup(c) : NULL;
}

static void restore_host_staging(void)
{
    if (saved_staging)
        setenv("CLFLEET_HOST_STAGING", saved_staging, 1);
    else
        unsetenv("CLFLEET_HOST_STAGING");
    if (saved_chunk)
        setenv("CLFLEET_TRANSFER_CHUNK", saved_chunk, 1);
    else
        unsetenv("CLFLEET_TRANSFER_CHUNK");
    free(saved_staging);
    free(saved_chunk);
    saved_staging = saved_chunk = NULL;
}

/*
 * Forced pinned staging on PoCL (which shares the host's memory, so `auto` is direct there):
 * the same sums as the direct path, the same bytes, in more commands (one per 64 KiB slot
 * piece instead of one per argument and chunk), which shows the slots were used. A bad word
 * fails the fleet's creation naming the variable.
 */
START_TEST(host_staging_from_environment)
{
    enum { N = 100003 }; /* not a multiple of a slot: a short last piece */
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    ck_assert(a && b && c);
    for (size_t i = 0; i < N; i++)
        a[i] = (float)(i % 1000), b[i] = (float)(i % 313) * 0.25f;
    static const char *const modes[] = {"direct", "pinned"};
    uint64_t count[2] = {0, 0}, bytes[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
        setenv("CLFLEET_HOST_STAGING", modes[m], 1);
        setenv("CLFLEET_TRANSFER_CHUNK", "64K", 1);
        env e;
        env_open(&e, 0);
        for (size_t s = 0; s < NSTRATEGIES; s++) {
            for (size_t i = 0; i < N; i++)
                c[i] = -1.0f;
            clf_arg args[] = {CLF_IN(a, N * sizeof *a, sizeof *a),
                              CLF_IN(b, N * sizeof *b, sizeof *b),
                              CLF_OUT(c, N * sizeof *c, sizeof *c)};
            clf_launch_desc d = make_desc(&e, "vadd", STRATEGIES[s], 1, N, 1, 1);
            clf_launch_report r;
            ck_assert_ok(clf_metrics_reset(e.f));
            ck_assert_ok(clf_launch(e.f, e.p, &d, args, 3, &r));
            for (size_t i = 0; i < N; i++)
                if (c[i] != a[i] + b[i])
                    ck_abort_msg("%s, strategy %d: c[%zu] = %g, not %g", modes[m],
                                 (int)STRATEGIES[s], i, (double)c[i], (double)(a[i] + b[i]));
            if (STRATEGIES[s] != CLF_STRATEGY_STATIC)
                continue;
            for (size_t dv = 0; dv < clf_fleet_device_count(e.f); dv++) {
                clf_device_metrics dm;
                ck_assert_ok(clf_metrics_device(&dm, e.f, dv));
                count[m] += dm.dir[CLF_DIRECTION_TO_DEVICE].count +
                            dm.dir[CLF_DIRECTION_FROM_DEVICE].count;
                bytes[m] += dm.dir[CLF_DIRECTION_TO_DEVICE].bytes +
                            dm.dir[CLF_DIRECTION_FROM_DEVICE].bytes;
            }
        }
        env_close(&e);
    }
    ck_assert_uint_eq(bytes[0], 3 * (uint64_t)N * sizeof(float));
    /* A look-ahead chunk that another device stole may have counted some pieces. */
    ck_assert_uint_ge(bytes[1], bytes[0]);
    /* Each 64 KiB piece is a command of its own: at least the bytes' worth of slots. */
    ck_assert_uint_ge(count[1], (bytes[1] + 65535) / 65536);
    ck_assert_uint_gt(count[1], count[0]);

    setenv("CLFLEET_HOST_STAGING", "banana", 1);
    clf_fleet *bad = NULL;
    ck_assert_status(clf_fleet_create(&bad, NULL), CLF_ERROR_PARSE);
    ck_assert_ptr_null(bad);
    expect(strstr(clf_last_error(), "CLFLEET_HOST_STAGING") &&
               strstr(clf_last_error(), "banana") && strstr(clf_last_error(), "pinned"),
           "detail: %s", clf_last_error());
    free(a);
    free(b);
    free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("launch");
    tcase_set_timeout(tc, 300);
    /* _i: the fleet, see CFGS (2 or 3 devices, shared or per-device contexts). */
    tcase_add_loop_test(tc, vadd_every_strategy_and_size, 0, NCFGS);
    tcase_add_loop_test(tc, vadd_local_sizes, 0, NCFGS);
    tcase_add_loop_test(tc, saxpy_every_strategy_and_size, 0, NCFGS);
    tcase_add_loop_test(tc, hash_every_strategy_and_size, 0, NCFGS);
    tcase_add_loop_test(tc, hash_3d, 0, NCFGS);
    tcase_add_loop_test(tc, scalars_of_every_size, 0, NCFGS);
    tcase_add_loop_test(tc, chunks_tile_the_range, 0, NCFGS);
    tcase_add_loop_test(tc, blur_global_indexed, 0, NCFGS);
    tcase_add_loop_test(tc, blur_chunk_indexed, 0, NCFGS);
    tcase_add_loop_test(tc, blur_with_local_size, 0, NCFGS);
    tcase_add_loop_test(tc, sub_range_global_ids, 0, NCFGS);
    tcase_add_loop_test(tc, reduce_with_atomics, 0, NCFGS);
    tcase_add_loop_test(tc, reduce_per_group, 0, NCFGS);
    tcase_add_loop_test(tc, broadcast_sees_changes, 0, NCFGS);
    tcase_add_loop_test(tc, broadcast_not_const, 0, NCFGS);
    tcase_add_loop_test(tc, broadcast_written_not_kept, 0, NCFGS);
    tcase_add_loop_test(tc, memory_limits_stream, 0, NCFGS);
    tcase_add_loop_test(tc, memory_limits_impossible, 0, NCFGS);
    tcase_add_test(tc, static_user_and_equal_weights);
    tcase_add_loop_test(tc, async_in_order, 0, NCFGS);
    tcase_add_test(tc, async_failure_does_not_block);
    tcase_add_loop_test(tc, reduce_every_type_and_op, 0, NCFGS);
    tcase_add_loop_test(tc, inout_halo_writes_only_the_chunk, 0, NCFGS);
    tcase_add_test(tc, memory_limits_per_device);
    tcase_add_loop_test(tc, concurrent_launches, 0, NCFGS);
    tcase_add_loop_test(tc, sync_after_async, 0, NCFGS);
    tcase_add_loop_test(tc, async_many_bounded_threads, 0, NCFGS);
    tcase_add_test(tc, strategy_names);
    tcase_add_loop_test(tc, auto_small_runs_on_one_device, 0, NCFGS);
    tcase_add_test(tc, auto_leaves_static_for_dynamic);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);

    /* Tests that change the environment or a cache directory undo it even when they fail. */
    TCase *te = tcase_create("environment");
    tcase_set_timeout(te, 120);
    tcase_add_checked_fixture(te, NULL, unset_strategy);
    tcase_add_test(te, strategy_from_environment);
    suite_add_tcase(s, te);
    TCase *th = tcase_create("host-staging");
    tcase_set_timeout(th, 120);
    tcase_add_checked_fixture(th, save_host_staging, restore_host_staging);
    tcase_add_test(th, host_staging_from_environment);
    suite_add_tcase(s, th);
    TCase *tl = tcase_create("learned");
    tcase_set_timeout(tl, 120);
    tcase_add_checked_fixture(tl, NULL, learned_teardown);
    tcase_add_test(tl, learned_weights);
    tcase_add_test(tl, cost_model_learned);
    suite_add_tcase(s, tl);

    /* Both fleets must exist (FLEET2 needs a second pthread device). */
    return test_run_fleet4_fleet2(s);
}

/*
 * Data layouts of a launch: the split dimension (an image with its rows in dimension 0),
 * strided arrays (a row-major image split by columns), per-work-group outputs, outputs the
 * kernel writes only in part (CLF_ARG_PRESERVE), and version-1 launch descriptions. Every
 * result is compared bit for bit with a plain C reference on the host (integer data).
 */
#include "common.h"

#include <stddef.h>

/* FLEET2, and three devices of FLEET4 in an order that is not the fleet's. */
static const fleet_cfg CFGS[] = {
    {FLEET2, 0, NULL, 2, "2 devices"},
    {FLEET4, 1, DEV3, 3, "3 of 4 devices, context per device"},
};
#define NCFGS ((int)(sizeof CFGS / sizeof CFGS[0]))

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};
#define NSTRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])

static const char SRC[] =
    TEST_CL_LOWBIAS32
    /* A 3x3 box sum, clamp-to-edge; the row y is dimension 0 (NumPy's order). */
    "__kernel void box_rows(__global const uint *in, __global uint *out, int w, int h)\n"
    "{\n"
    "    int y = get_global_id(0), x = get_global_id(1);\n"
    "    uint s = 0;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++)\n"
    "            s += in[clamp(y + dy, 0, h - 1) * w + clamp(x + dx, 0, w - 1)]\n"
    "                 * (4 + dx + 3 * dy);\n"
    "    out[y * w + x] = s;\n"
    "}\n"
    /* The same with the column x in dimension 0, in rows of p elements (p >= w). */
    "__kernel void box_cols(__global const uint *in, __global uint *out, int w, int h, int p)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    uint s = 0;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++)\n"
    "            s += in[clamp(y + dy, 0, h - 1) * p + clamp(x + dx, 0, w - 1)]\n"
    "                 * (4 + dx + 3 * dy);\n"
    "    out[y * p + x] = s;\n"
    "}\n"
    "__kernel void affine_cols(__global uint *a, int p)\n"
    "{\n"
    "    size_t i = get_global_id(1) * p + get_global_id(0);\n"
    "    a[i] = a[i] * 3u + (uint)get_global_id(0);\n"
    "}\n"
    /* Writes only the interior: the border of out is whatever it was. */
    "__kernel void interior(__global const uint *in, __global uint *out, int w, int h)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    if (x < 1 || x >= w - 1 || y < 1 || y >= h - 1) return;\n"
    "    out[y * w + x] = in[y * w + x - 1] + 2u * in[y * w + x + 1] + 3u * in[(y - 1) * w + x]\n"
    "                     + 5u * in[(y + 1) * w + x];\n"
    "}\n"
    /* One uint2 per work-group at its linear id: {sum of the hashes of its items' linear
     * indices, the id}. Group ids are computed from global ids: the range is whole here. */
    "__kernel void per_group(__global uint2 *out, uint n0, uint n1, uint g0, uint g1, uint skip)\n"
    "{\n"
    "    if (get_local_id(0) || get_local_id(1) || get_local_id(2)) return;\n"
    "    size_t l0 = get_local_size(0), l1 = get_local_size(1), l2 = get_local_size(2);\n"
    "    size_t x0 = get_global_id(0), y0 = get_global_id(1), z0 = get_global_id(2);\n"
    "    uint s = 0;\n"
    "    for (size_t z = z0; z < z0 + l2; z++)\n"
    "        for (size_t y = y0; y < y0 + l1; y++)\n"
    "            for (size_t x = x0; x < x0 + l0; x++)\n"
    "                s += lowbias32((uint)((z * g1 + y) * g0 + x));\n"
    "    uint g = (uint)(x0 / l0 + n0 * (y0 / l1 + n1 * (z0 / l2)));\n"
    "    if (skip && g % 3 == 1) return; /* left alone: CLF_ARG_PRESERVE keeps it */\n"
    "    out[g] = (uint2)(s, g);\n"
    "}\n"
    "__kernel void hash1(__global uint *out)\n"
    "{ out[get_global_id(0)] = lowbias32(get_global_id(0)); }\n"
    /* Chunk-indexed: writes only the even items of its chunk. */
    "__kernel void evens_chunk(__global uint *out)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i % 2 == 0) out[CLF_CHUNK_INDEX(0)] = lowbias32(i);\n"
    "}\n"
    "__kernel void bcast_const(__constant uint *t, __global uint *out)\n"
    "{ out[get_global_id(0)] = t[get_global_id(0) & 7]; }\n"
    "__kernel void bcast_written(__global uint *t, __global uint *out)\n"
    "{ out[get_global_id(0)] = t[0]; t[0] = 1; }\n";

typedef test_env env;

static void env_open(env *e, int i)
{
    test_env_open(e, &CFGS[i], SRC);
}

#define env_close test_env_close

static clf_launch_desc desc2(const env *e, const char *kernel, clf_strategy s, size_t g0,
                             size_t g1, unsigned split_dim)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = kernel;
    d.strategy = s;
    d.dims = 2;
    d.global[0] = g0;
    d.global[1] = g1;
    d.split_dim = split_dim;
    d.devices = e->cfg->devices;
    d.num_devices = e->cfg->devices ? e->cfg->ndev : 0;
    d.chunks_per_device = 5; /* several chunks each: halos and strides cross them */
    return d;
}

/* Run, and check the report: the units are the split dimension's, the items all of them. */
static void launch_ok(const env *e, const clf_launch_desc *d, const clf_arg *a, size_t n,
                      const char *what)
{
    clf_launch_report r;
    clf_status st = clf_launch(e->f, e->p, d, a, n, &r);
    expect(st == CLF_SUCCESS, "%s (%s, %s): %s: %s", what, e->cfg->label,
           clf_strategy_name(d->strategy), clf_status_name(st), clf_last_error());
    unsigned s = d->split_dim ? d->split_dim - 1 : d->dims - 1;
    uint64_t items = 0, units = 0, all = 1, chunks = 0;
    for (unsigned k = 0; k < d->dims; k++)
        all *= d->global[k];
    for (size_t i = 0; i < r.num_devices; i++)
        items += r.dev[i].items, units += r.dev[i].units, chunks += r.dev[i].chunks;
    /* Dynamic cuts a range of 64 or more into several chunks: boundaries are crossed. */
    expect(d->strategy != CLF_STRATEGY_DYNAMIC || d->global[s] < 64 || chunks >= 4,
           "%s (%s): %llu chunks", what, e->cfg->label, (unsigned long long)chunks);
    expect(r.total_units == d->global[s] && units == d->global[s] && items == all,
           "%s (%s, %s): report: %llu of %llu units, %llu of %llu items", what, e->cfg->label,
           clf_strategy_name(d->strategy), (unsigned long long)units,
           (unsigned long long)r.total_units, (unsigned long long)items,
           (unsigned long long)all);
}

/* The host's box sum: element (x, y) of a w x h image in rows of p elements. */
static uint32_t box_ref(const uint32_t *in, int w, int h, int p, int x, int y)
{
    uint32_t s = 0;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int yy = y + dy < 0 ? 0 : y + dy >= h ? h - 1 : y + dy;
            int xx = x + dx < 0 ? 0 : x + dx >= w ? w - 1 : x + dx;
            s += in[yy * p + xx] * (uint32_t)(4 + dx + 3 * dy);
        }
    return s;
}

/* An image whose rows are dimension 0, split along it (by rows), with a one-row halo. */
START_TEST(rows_in_dimension_0)
{
    env e;
    env_open(&e, _i);
    static const int sizes[][2] = {{97, 61}, {3, 130}, {256, 16}}; /* h, w */
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int h = sizes[z][0], w = sizes[z][1];
        size_t n = (size_t)w * h, bytes = n * 4;
        uint32_t *in = malloc(bytes), *out = malloc(bytes);
        for (size_t i = 0; i < n; i++)
            in[i] = lowbias32((uint32_t)i) >> 8;
        for (size_t s = 0; s < NSTRATEGIES; s++) {
            memset(out, 0xee, bytes);
            clf_arg a[] = {CLF_IN_HALO(in, bytes, (size_t)w * 4, 1, 1),
                           CLF_OUT(out, bytes, (size_t)w * 4), CLF_SCALAR(&w), CLF_SCALAR(&h)};
            clf_launch_desc d = desc2(&e, "box_rows", STRATEGIES[s], (size_t)h, (size_t)w,
                                      CLF_SPLIT_DIM(0));
            launch_ok(&e, &d, a, 4, "box_rows");
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    expect(out[y * w + x] == box_ref(in, w, h, w, x, y),
                           "%s %s %dx%d: out(%d, %d) = %u, want %u", e.cfg->label,
                           clf_strategy_name(STRATEGIES[s]), h, w, x, y, out[y * w + x],
                           box_ref(in, w, h, w, x, y));
        }
        free(in);
        free(out);
    }
    env_close(&e);
}
END_TEST

/* A row-major image (rows padded to p elements) split by columns: strided arrays. */
START_TEST(columns_by_pitch)
{
    env e;
    env_open(&e, _i);
    static const int sizes[][3] = {{77, 41, 77}, {130, 5, 133}, {3, 64, 8}}; /* w, h, p */
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int w = sizes[z][0], h = sizes[z][1], p = sizes[z][2];
        size_t n = (size_t)p * h, bytes = n * 4, pitch = (size_t)p * 4;
        uint32_t *in = malloc(bytes), *out = malloc(bytes), *io = malloc(bytes);
        for (size_t i = 0; i < n; i++)
            in[i] = lowbias32((uint32_t)i + 7) >> 8;
        for (size_t s = 0; s < NSTRATEGIES; s++) {
            memset(out, 0xee, bytes);
            clf_arg a[] = {CLF_IN_STRIDED_HALO(in, bytes, 4, pitch, 1, 1),
                           CLF_OUT_STRIDED(out, bytes, 4, pitch), CLF_SCALAR(&w), CLF_SCALAR(&h),
                           CLF_SCALAR(&p)};
            clf_launch_desc d = desc2(&e, "box_cols", STRATEGIES[s], (size_t)w, (size_t)h,
                                      CLF_SPLIT_DIM(0));
            launch_ok(&e, &d, a, 5, "box_cols");
            for (int y = 0; y < h; y++)
                for (int x = 0; x < p; x++) {
                    uint32_t want = x < w ? box_ref(in, w, h, p, x, y) : 0xeeeeeeeeu;
                    expect(out[y * p + x] == want, "%s %s %dx%d/%d: out(%d, %d) = %u, want %u",
                           e.cfg->label, clf_strategy_name(STRATEGIES[s]), w, h, p, x, y,
                           out[y * p + x], want);
                }
            /* In place: the padding beyond column w must stay as it was. */
            memcpy(io, in, bytes);
            clf_arg b[] = {CLF_INOUT_STRIDED(io, bytes, 4, pitch), CLF_SCALAR(&p)};
            d.kernel = "affine_cols";
            launch_ok(&e, &d, b, 2, "affine_cols");
            for (size_t i = 0; i < n; i++) {
                uint32_t x = (uint32_t)(i % (size_t)p);
                uint32_t want = (int)x < w ? in[i] * 3u + x : in[i];
                expect(io[i] == want, "%s affine_cols %dx%d/%d: [%zu] = %u, want %u",
                       e.cfg->label, w, h, p, i, io[i], want);
            }
        }
        free(in);
        free(out);
        free(io);
    }
    env_close(&e);
}
END_TEST

/* The host's reference of one per_group element. */
static void group_ref(uint32_t out[2], const size_t *gl, const size_t *lo, size_t g)
{
    size_t n0 = gl[0] / lo[0], n1 = gl[1] / lo[1];
    size_t gx = g % n0, gy = g / n0 % n1, gz = g / n0 / n1;
    uint32_t s = 0;
    for (size_t z = gz * lo[2]; z < (gz + 1) * lo[2]; z++)
        for (size_t y = gy * lo[1]; y < (gy + 1) * lo[1]; y++)
            for (size_t x = gx * lo[0]; x < (gx + 1) * lo[0]; x++)
                s += lowbias32((uint32_t)((z * gl[1] + y) * gl[0] + x));
    out[0] = s;
    out[1] = (uint32_t)g;
}

/* Per-group outputs in 1, 2 and 3 dimensions, split along each dimension; with
 * CLF_ARG_PRESERVE, groups the kernel skips keep the host's values. */
START_TEST(per_group_outputs)
{
    env e;
    env_open(&e, _i);
    static const size_t shapes[][6] = {
        {64 * 37, 1, 1, 64, 1, 1}, {48, 40, 1, 8, 4, 1}, {24, 18, 10, 4, 3, 2}};
    for (size_t z = 0; z < 3; z++) {
        const size_t *gl = shapes[z], *lo = shapes[z] + 3;
        unsigned dims = z + 1;
        size_t groups = (gl[0] / lo[0]) * (gl[1] / lo[1]) * (gl[2] / lo[2]);
        size_t bytes = (groups + 3) * 8; /* longer than needed: the rest stays */
        uint32_t *out = malloc(bytes), want[2];
        uint32_t sc[4] = {(uint32_t)(gl[0] / lo[0]), (uint32_t)(gl[1] / lo[1]), (uint32_t)gl[0],
                          (uint32_t)gl[1]};
        for (unsigned split = 0; split < dims; split++)
            for (size_t s = 0; s < NSTRATEGIES + 1; s++) {
                uint32_t skip = s == NSTRATEGIES; /* the last round: dynamic, preserving */
                memset(out, 0xee, bytes);
                clf_arg a[] = {CLF_OUT_PER_GROUP(out, bytes, 8), CLF_SCALAR(&sc[0]),
                               CLF_SCALAR(&sc[1]), CLF_SCALAR(&sc[2]), CLF_SCALAR(&sc[3]),
                               CLF_SCALAR(&skip)};
                if (skip)
                    a[0].flags |= CLF_ARG_PRESERVE;
                clf_launch_desc d =
                    desc2(&e, "per_group", skip ? CLF_STRATEGY_DYNAMIC : STRATEGIES[s], gl[0],
                          gl[1], CLF_SPLIT_DIM(split));
                d.dims = dims;
                d.global[2] = gl[2];
                memcpy(d.local, lo, 3 * sizeof *lo);
                launch_ok(&e, &d, a, 6, "per_group");
                for (size_t g = 0; g < groups + 3; g++) {
                    if (g < groups && !(skip && g % 3 == 1))
                        group_ref(want, gl, lo, g);
                    else
                        want[0] = want[1] = 0xeeeeeeeeu;
                    expect(out[2 * g] == want[0] && out[2 * g + 1] == want[1],
                           "%s %s %uD split %u: group %zu = {%u, %u}, want {%u, %u}",
                           e.cfg->label, clf_strategy_name(d.strategy), dims, split, g,
                           out[2 * g], out[2 * g + 1], want[0], want[1]);
                }
            }
        free(out);
    }
    env_close(&e);
}
END_TEST

static uint32_t interior_ref(const uint32_t *in, int w, int x, int y)
{
    return in[y * w + x - 1] + 2u * in[y * w + x + 1] + 3u * in[(y - 1) * w + x] +
           5u * in[(y + 1) * w + x];
}

/*
 * A stencil that writes only the interior. Without CLF_ARG_PRESERVE only the interior is
 * defined; with it the border keeps the host's values, split by rows (contiguous) and by
 * columns (strided: the preserved region moves as rectangles).
 */
START_TEST(interior_stencil_preserve)
{
    env e;
    env_open(&e, _i);
    const int w = 83, h = 57;
    size_t n = (size_t)w * h, bytes = n * 4, row = (size_t)w * 4;
    uint32_t *in = malloc(bytes), *out = malloc(bytes), *init = malloc(bytes);
    for (size_t i = 0; i < n; i++) {
        in[i] = lowbias32((uint32_t)i) >> 4;
        init[i] = lowbias32((uint32_t)i ^ 0xdeadu);
    }
    for (int mode = 0; mode < 4; mode++) { /* bit 0: preserve, bit 1: split by columns */
        int preserve = mode & 1, cols = mode & 2;
        for (size_t s = 0; s < NSTRATEGIES; s++) {
            memcpy(out, init, bytes);
            clf_arg a[] = {cols ? (clf_arg)CLF_IN_STRIDED_HALO(in, bytes, 4, row, 1, 1)
                                : (clf_arg)CLF_IN_HALO(in, bytes, row, 1, 1),
                           cols ? (clf_arg)CLF_OUT_STRIDED(out, bytes, 4, row)
                                : (clf_arg)CLF_OUT(out, bytes, row),
                           CLF_SCALAR(&w), CLF_SCALAR(&h)};
            if (preserve)
                a[1].flags |= CLF_ARG_PRESERVE;
            clf_launch_desc d = desc2(&e, "interior", STRATEGIES[s], (size_t)w, (size_t)h,
                                      cols ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DEFAULT);
            launch_ok(&e, &d, a, 4, "interior");
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int inside = x >= 1 && x < w - 1 && y >= 1 && y < h - 1;
                    if (!inside && !preserve)
                        continue; /* undefined */
                    uint32_t want = inside ? interior_ref(in, w, x, y) : init[y * w + x];
                    expect(out[y * w + x] == want, "%s %s mode %d: out(%d, %d) = %u, want %u",
                           e.cfg->label, clf_strategy_name(STRATEGIES[s]), mode, x, y,
                           out[y * w + x], want);
                }
        }
    }
    /* Preserving costs an upload of the output: the report counts it. */
    clf_arg a[] = {CLF_IN_HALO(in, bytes, row, 1, 1), CLF_OUT_PRESERVE(out, bytes, row),
                   CLF_SCALAR(&w), CLF_SCALAR(&h)};
    clf_launch_desc d = desc2(&e, "interior", CLF_STRATEGY_STATIC, (size_t)w, (size_t)h, 0);
    clf_launch_report r;
    ck_assert_ok(clf_launch(e.f, e.p, &d, a, 4, &r));
    uint64_t to = 0, from = 0;
    for (size_t i = 0; i < r.num_devices; i++)
        to += r.dev[i].bytes_to_device, from += r.dev[i].bytes_from_device;
    ck_assert_uint_eq(from, bytes);
    ck_assert_uint_ge(to, 2 * bytes);
    ck_assert_uint_le(to, 2 * bytes + 2 * row * r.num_devices * 5);
    free(in);
    free(out);
    free(init);
    env_close(&e);
}
END_TEST

/* CLF_ARG_PRESERVE on a chunk-indexed output: the slot gets the chunk's host values first. */
START_TEST(chunk_indexed_preserve)
{
    env e;
    env_open(&e, _i);
    enum { N = 10007 };
    uint32_t *out = malloc(N * 4);
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        for (uint32_t i = 0; i < N; i++)
            out[i] = ~i;
        clf_arg a[] = {CLF_OUT_PRESERVE(out, N * 4, 4)};
        a[0].flags |= CLF_ARG_CHUNK_INDEXED;
        clf_launch_desc d = desc2(&e, "evens_chunk", STRATEGIES[s], N, 1, 0);
        d.dims = 1;
        launch_ok(&e, &d, a, 1, "evens_chunk");
        for (uint32_t i = 0; i < N; i++)
            expect(out[i] == (i % 2 ? ~i : lowbias32(i)), "%s %s: out[%u] = %u", e.cfg->label,
                   clf_strategy_name(STRATEGIES[s]), i, out[i]);
    }
    free(out);
    env_close(&e);
}
END_TEST

/* Traffic and memory of a strided argument: what really moves (rectangles, not whole rows). */
START_TEST(strided_bytes_counted)
{
    env e;
    env_open(&e, _i);
    int w = 64, h = 32, p = 100;
    size_t bytes = (size_t)p * h * 4, pitch = (size_t)p * 4;
    uint32_t *in = calloc(1, bytes), *out = calloc(1, bytes);
    clf_arg a[] = {CLF_IN_STRIDED(in, bytes, 4, pitch), CLF_OUT_STRIDED(out, bytes, 4, pitch),
                   CLF_SCALAR(&w), CLF_SCALAR(&h), CLF_SCALAR(&p)};
    clf_launch_desc d =
        desc2(&e, "box_cols", CLF_STRATEGY_STATIC, (size_t)w, (size_t)h, CLF_SPLIT_DIM(0));
    clf_launch_report r;
    ck_assert_ok(clf_launch(e.f, e.p, &d, a, 5, &r));
    uint64_t to = 0, from = 0;
    for (size_t i = 0; i < r.num_devices; i++)
        to += r.dev[i].bytes_to_device, from += r.dev[i].bytes_from_device;
    ck_assert_uint_eq(to, (uint64_t)w * h * 4);
    ck_assert_uint_eq(from, (uint64_t)w * h * 4);
    /* On the device, both arrays are whole (global-indexed), padding included. */
    for (size_t i = 0; i < r.num_devices; i++)
        if (r.dev[i].units)
            ck_assert_uint_eq(r.dev[i].mem_peak, 2 * (uint64_t)bytes);
    free(in);
    free(out);
    env_close(&e);
}
END_TEST

/* A device that fails mid-launch: its strided and per-chunk work runs on the others, and the
 * result is still exact (rectangles are re-read for the chunks that move). */
START_TEST(strided_survives_a_failed_device)
{
    const fleet_cfg *cfg = &CFGS[_i];
    char rules[64];
    snprintf(rules, sizeof rules, "device=%zu,call=read",
             cfg->devices ? cfg->devices[0] : (size_t)0);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = cfg->selection;
    o.context_per_device = cfg->context_per_device;
    setenv("CLFLEET_FAULT_INJECT", rules, 1);
    env e = {cfg, NULL, NULL};
    clf_status st = clf_fleet_create(&e.f, &o);
    unsetenv("CLFLEET_FAULT_INJECT");
    ck_assert_msg(st == CLF_SUCCESS, "%s", clf_last_error());
    ck_assert_ok(clf_program_build_source(&e.p, e.f, SRC, NULL));
    int w = 130, h = 41, p = 133;
    size_t n = (size_t)p * h, bytes = n * 4, pitch = (size_t)p * 4;
    uint32_t *in = malloc(bytes), *out = malloc(bytes);
    for (size_t i = 0; i < n; i++)
        in[i] = lowbias32((uint32_t)i) >> 8;
    memset(out, 0xee, bytes);
    clf_arg a[] = {CLF_IN_STRIDED_HALO(in, bytes, 4, pitch, 1, 1),
                   CLF_OUT_STRIDED(out, bytes, 4, pitch), CLF_SCALAR(&w), CLF_SCALAR(&h),
                   CLF_SCALAR(&p)};
    /* Static with equal weights: the failing device surely takes a chunk. */
    clf_launch_desc d =
        desc2(&e, "box_cols", CLF_STRATEGY_STATIC, (size_t)w, (size_t)h, CLF_SPLIT_DIM(0));
    d.weights_mode = CLF_WEIGHTS_EQUAL;
    clf_launch_report r;
    ck_assert_ok(clf_launch(e.f, e.p, &d, a, 5, &r));
    ck_assert_uint_eq(r.failed_devices, 1);
    ck_assert_uint_eq(r.done_units, (uint64_t)w);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            expect(out[y * p + x] == box_ref(in, w, h, p, x, y), "%s: out(%d, %d) = %u, want %u",
                   cfg->label, x, y, out[y * p + x], box_ref(in, w, h, p, x, y));
    free(in);
    free(out);
    env_close(&e);
}
END_TEST

/* clf_launch_desc as version 1 laid it out: a caller built against it still launches, and
 * nothing past its end is read. */
typedef struct desc_v1 {
    unsigned version;
    const char *kernel;
    unsigned dims;
    size_t global[3];
    size_t local[3];
    size_t granularity;
    clf_strategy strategy;
    const size_t *devices;
    size_t num_devices;
    clf_weights weights_mode;
    const double *weights;
    const uint64_t *mem_limits;
    double mem_safety;
    unsigned chunks_per_device;
    size_t min_chunk;
} desc_v1;

START_TEST(version_1_descriptions)
{
    env e;
    env_open(&e, _i);
    ck_assert_uint_eq(offsetof(desc_v1, min_chunk), offsetof(clf_launch_desc, min_chunk));
    enum { N = 4099 };
    uint32_t *out = malloc(N * 4);
    /* On the heap, exactly as long as a version-1 struct: a read past it would show under
     * ASan or valgrind. */
    desc_v1 *d = malloc(sizeof *d);
    memset(d, 0, sizeof *d);
    d->version = 1;
    d->kernel = "hash1";
    d->dims = 1;
    d->global[0] = N;
    d->global[1] = d->global[2] = 1;
    d->devices = e.cfg->devices;
    d->num_devices = e.cfg->devices ? e.cfg->ndev : 0;
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        d->strategy = STRATEGIES[s];
        memset(out, 0, N * 4);
        clf_arg a[] = {CLF_OUT(out, N * 4, 4)};
        clf_launch_report r;
        ck_assert_ok(clf_launch(e.f, e.p, (const clf_launch_desc *)(void *)d, a, 1, &r));
        ck_assert_uint_eq(r.total_units, N);
        for (uint32_t i = 0; i < N; i++)
            expect(out[i] == lowbias32(i), "v1 %s: out[%u] = %u", clf_strategy_name(d->strategy),
                   i, out[i]);
        clf_event *ev = NULL;
        memset(out, 0, N * 4);
        ck_assert_ok(clf_launch_async(e.f, e.p, (const clf_launch_desc *)(void *)d, a, 1, NULL,
                                      &ev));
        ck_assert_ok(clf_event_wait(ev));
        clf_event_release(ev);
        for (uint32_t i = 0; i < N; i++)
            expect(out[i] == lowbias32(i), "v1 async: out[%u] = %u", i, out[i]);
    }
    free(d);
    free(out);
    env_close(&e);
}
END_TEST

/* A broadcast whose kernel writes it is the kernel's bug, not a refusal (issue 28: valid code
 * omits const): the launch runs with a copy of its own on each device, the stores stay there
 * (the host array is untouched) and the log says so. */
START_TEST(broadcast_must_be_const)
{
    env e;
    env_open(&e, _i);
    enum { N = 256 };
    uint32_t t[8], t0[8], out[N];
    for (int i = 0; i < 8; i++)
        t[i] = t0[i] = lowbias32((uint32_t)i);
    memset(out, 0, sizeof out);
    clf_arg a[] = {CLF_BROADCAST(t, sizeof t), CLF_OUT(out, sizeof out, 4)};
    clf_launch_desc d = desc2(&e, "bcast_const", CLF_STRATEGY_DYNAMIC, N, 1, 0);
    d.dims = 1;
    ck_assert_ok(clf_launch(e.f, e.p, &d, a, 2, NULL));
    for (int i = 0; i < N; i++)
        expect(out[i] == t[i & 7], "out[%d] = %u", i, out[i]);
    memset(out, 0xab, sizeof out);
    d.kernel = "bcast_written";
    ck_assert_ok(clf_launch(e.f, e.p, &d, a, 2, NULL));
    /* Each work-item read t[0] before or after another stored 1 there: either is the kernel's
     * race, as on one device; nothing else may appear, and the host copy keeps its value. */
    for (int i = 0; i < N; i++)
        expect(out[i] == t0[0] || out[i] == 1, "out[%d] = %u", i, out[i]);
    expect(!memcmp(t, t0, sizeof t), "the kernel's stores reached the host's broadcast");
    env_close(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("layout");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, rows_in_dimension_0, 0, NCFGS);
    tcase_add_loop_test(tc, columns_by_pitch, 0, NCFGS);
    tcase_add_loop_test(tc, per_group_outputs, 0, NCFGS);
    tcase_add_loop_test(tc, interior_stencil_preserve, 0, NCFGS);
    tcase_add_loop_test(tc, strided_bytes_counted, 0, NCFGS);
    tcase_add_loop_test(tc, chunk_indexed_preserve, 0, NCFGS);
    tcase_add_loop_test(tc, strided_survives_a_failed_device, 0, NCFGS);
    tcase_add_loop_test(tc, version_1_descriptions, 0, NCFGS);
    tcase_add_loop_test(tc, broadcast_must_be_const, 0, NCFGS);
    suite_add_tcase(s, tc);
    return test_run_fleet4_fleet2(s);
}

/*
 * clfleet-bench graph: one DAG of tile kernels run three ways, makespans side by side in
 * one run (issue 30), in interleaved rounds:
 *
 *   (a) graph        a clf_graph recorded once and run --reps times (after --warmup untimed
 *                    runs, in which it plans and its cost model measures the kernels), with
 *                    CLF_GRAPH_KEEP_COPIES: the inputs do not change between runs, so a copy
 *                    a run left on a device stays current for the next, as StarPU's do
 *   (b) hand-placed  the same DAG with clf_kernel_enqueue(), owner computes written by hand:
 *                    tile row i of every matrix on device i mod n, the shared right-hand
 *                    matrices copied to every device once before the timing; a row's nodes
 *                    run in order on its device's queue, so no edge crosses devices
 *   (c) StarPU       StarPU 1.3's dmda scheduler with one OpenCL worker per device
 *                    (STARPU_NCPU=0), the same kernel source through
 *                    starpu_opencl_load_opencl_from_file(), history-based performance models
 *                    calibrated in the --warmup runs, STARPU_HOME in a temporary directory;
 *                    built when configure found starpu-1.3, and only on a fleet of root
 *                    devices without CLFLEET_SIMULATE (StarPU sees neither sub-devices nor
 *                    the simulation)
 *
 * and each device alone (the DAG in order on one device's queue, one device of each kind,
 * clf_bench_same_kind()): the fastest is the base of every speedup, and from all of them
 * the ideal, every device busy all the time (1 / the sum of 1/alone). Each round runs
 * every one of them once (set up before the first round), so a change in the host's load
 * weighs on them alike, and graph / StarPU is the median of the rounds' ratios.
 *
 * The DAG: two layers of a tiled matrix product over T x T tiles of S x S floats,
 *     C = relu(A B),  D = C E
 * where an output tile is a chain of tile products, the first writing it (tgemm) and the
 * others adding to it (tgemm_acc), and each C tile goes through trelu in place before the
 * second layer reads it: 2 T^3 + T^2 nodes of three kernels, every A, B, C and E tile read
 * by T nodes. Every run's D is checked against a plain C product (a few ulps apart: a
 * device may contract a multiply and an add).
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* nftw(), mkdtemp(), setenv() */
#endif
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "json.h"
#include "clfleet.h"
#include "clfleet/graph.h"

#ifdef CLF_BENCH_STARPU
#include <ftw.h>
#include <starpu.h>
#endif

/* The tile kernels: the same source for clfleet and for StarPU. */
static const char GRAPH_CL[] =
    "kernel void tgemm(global const float *a, global const float *b, global float *c,\n"
    "                  uint n)\n"
    "{\n"
    "    size_t j = get_global_id(0), i = get_global_id(1);\n"
    "    float s = 0.0f;\n"
    "    for (uint k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];\n"
    "    c[i * n + j] = s;\n"
    "}\n"
    "kernel void tgemm_acc(global const float *a, global const float *b, global float *c,\n"
    "                      uint n)\n"
    "{\n"
    "    size_t j = get_global_id(0), i = get_global_id(1);\n"
    "    float s = 0.0f;\n"
    "    for (uint k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];\n"
    "    c[i * n + j] += s;\n"
    "}\n"
    "kernel void trelu(global float *c)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = fmax(c[i], 0.0f);\n"
    "}\n";

#define MAX_DEV 64
#define MAX_TILES 16

enum { MAT_A, MAT_B, MAT_E, MAT_C, MAT_D, NMAT };
enum { FORM_GRAPH, FORM_HAND, FORM_STARPU, NFORM };
static const char *const FORM_NAMES[NFORM] = {"clfleet graph", "hand-placed (enqueue)",
                                              "StarPU 1.3 dmda"};
static const char *const FORM_KEYS[NFORM] = {"graph", "hand_placed", "starpu_dmda"};

typedef struct bench {
    clf_bench_common opt;
    size_t tile, tiles, warmup;
    clf_fleet *fl;
    clf_program *prog;
    size_t ndev;
    float *host[NMAT];   /* T*T tiles of S*S floats each, tile (i, j) at (i*T + j)*S*S */
    float *ref;          /* D by plain C */
    double form_s[NFORM];
    int form_ran[NFORM];
    const char *form_note[NFORM]; /* why a form has no figure */
    size_t all[MAX_DEV];            /* 0, 1, ...: the hand-placed form's devices */
    size_t alone[MAX_DEV], nalone;
    double alone_s[MAX_DEV];
    size_t base;
    double graph_over_starpu; /* median of the rounds' ratios */
    clf_graph_report rep; /* the graph's last timed run */
    /* Per kernel and device, from clf_graph_node_info() after the last timed run: nodes,
     * and the sums of their measured kernel times and of their predicted times (finish -
     * start): --verbose prints them, the profile that says where the plan went wrong. */
    size_t prof_n[3][MAX_DEV];
    double prof_kernel_s[3][MAX_DEV], prof_pred_s[3][MAX_DEV];
    size_t wrong;         /* runs whose D differed from the reference */
} bench;

static void usage(FILE *to)
{
    fputs("usage: clfleet-bench graph [--json] [--quick] [--verbose] [--reps N]\n"
          "                           [--devices SELECTION] [--trace PATH] [--simulate RULES]\n"
          "                           [--tile S] [--tiles T] [--warmup N]\n"
          "A DAG of tile kernels, C = relu(A B), D = C E over T x T tiles of S x S floats\n"
          "(2 T^3 + T^2 nodes of three kernels), run by clfleet's graph, by hand-placed\n"
          "clf_kernel_enqueue() calls (owner computes) and by StarPU 1.3's dmda scheduler\n"
          "on the same devices: median makespans side by side, against each device alone.\n"
          "  --json          one JSON document on standard output\n"
          "  --quick         tiles of 32 floats, 3 x 3 tiles, one repetition, one warm-up\n"
          "  --reps N        timed repetitions, medians reported (5)\n"
          "  --devices S     devices (default: $CLFLEET_DEVICES, else the library's default)\n"
          "  --trace PATH    a Perfetto timeline, PATH-N.json\n"
          "  --simulate R    set CLFLEET_SIMULATE=R for the fleet (a testing tool: e.g.\n"
          "                  'device=1,compute=0.02,latency=60us' makes device 1 slow);\n"
          "                  StarPU does not run then (it would not see the simulation)\n"
          "  --tile S        tile side in floats (default 128)\n"
          "  --tiles T       tiles per matrix side, 1 to 16 (default 4: 144 nodes)\n"
          "  --warmup N      untimed runs of the graph and of StarPU first, where they\n"
          "                  plan and calibrate their models (default 3)\n"
          "  --verbose       also the graph's profile: per kernel and device, its nodes'\n"
          "                  measured and predicted times; StarPU's messages\n"
          "  -h, --help      this text; -V, --version: the version\n",
          to);
}

enum { OPT_TILE = CLF_BENCH_OWN, OPT_TILES, OPT_WARMUP };
static const struct option OWN[] = {{"tile", required_argument, NULL, OPT_TILE},
                                    {"tiles", required_argument, NULL, OPT_TILES},
                                    {"warmup", required_argument, NULL, OPT_WARMUP},
                                    {NULL, 0, NULL, 0}};

static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    if (val == OPT_TILE)
        return clf_bench_number(arg, 10, 1, 4096, &b->tile);
    if (val == OPT_TILES)
        return clf_bench_number(arg, 10, 1, MAX_TILES, &b->tiles);
    if (val == OPT_WARMUP)
        return clf_bench_number(arg, 10, 0, 100, &b->warmup);
    return 0;
}

static size_t tile_elems(const bench *b)
{
    return b->tile * b->tile;
}

/* Tile (i, j) of host matrix m. */
static float *host_tile(const bench *b, int m, size_t i, size_t j)
{
    return b->host[m] + (i * b->tiles + j) * tile_elems(b);
}

static size_t node_count(const bench *b)
{
    return 2 * b->tiles * b->tiles * b->tiles + b->tiles * b->tiles;
}

/* The DAG in recording order, as calls of `node` (kernel 0 tgemm, 1 tgemm_acc, 2 trelu;
 * its input tiles x, y and output tile z, or only z for trelu): every form walks it so,
 * and so runs the same nodes in the same order. Returns the first failure. */
typedef clf_status (*node_fn)(void *ctx, int kernel, int mx, size_t xi, size_t xj, int my,
                              size_t yi, size_t yj, int mz, size_t zi, size_t zj);

static const char *const KERNELS[3] = {"tgemm", "tgemm_acc", "trelu"};

static clf_status walk_dag(const bench *b, node_fn node, void *ctx)
{
    size_t t = b->tiles;
    clf_status st = CLF_SUCCESS;
    for (int layer = 0; layer < 2 && st == CLF_SUCCESS; layer++) {
        int mx = layer ? MAT_C : MAT_A, my = layer ? MAT_E : MAT_B, mz = layer ? MAT_D : MAT_C;
        for (size_t i = 0; i < t && st == CLF_SUCCESS; i++)
            for (size_t j = 0; j < t && st == CLF_SUCCESS; j++) {
                for (size_t k = 0; k < t && st == CLF_SUCCESS; k++)
                    st = node(ctx, k ? 1 : 0, mx, i, k, my, k, j, mz, i, j);
                if (!layer && st == CLF_SUCCESS)
                    st = node(ctx, 2, 0, 0, 0, 0, 0, 0, MAT_C, i, j);
            }
    }
    return st;
}

/* ---- the plain C reference --------------------------------------------------------------- */

static void ref_layer(const bench *b, const float *x, const float *y, float *z, int relu)
{
    size_t t = b->tiles, s = b->tile, ee = tile_elems(b);
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < t; j++) {
            float *zt = z + (i * t + j) * ee;
            memset(zt, 0, ee * sizeof(float));
            /* As the kernels: a tile product summed over its own k, then added. */
            for (size_t k = 0; k < t; k++) {
                const float *xt = x + (i * t + k) * ee, *yt = y + (k * t + j) * ee;
                for (size_t r = 0; r < s; r++)
                    for (size_t c = 0; c < s; c++) {
                        float acc = 0.0f;
                        for (size_t q = 0; q < s; q++)
                            acc += xt[r * s + q] * yt[q * s + c];
                        zt[r * s + c] = k ? zt[r * s + c] + acc : acc;
                    }
            }
            for (size_t e = 0; relu && e < ee; e++)
                zt[e] = zt[e] > 0.0f ? zt[e] : 0.0f;
        }
}

static void fill(float *v, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
    }
}

/* 1 when d matches the reference (relative 1e-3: contraction into FMA moves a few ulps). */
static int check(bench *b, const float *d)
{
    size_t n = b->tiles * b->tiles * tile_elems(b);
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(d[i] - b->ref[i]) <= 1e-3f * (1.0f + fabsf(b->ref[i])))) {
            if (b->wrong++ == 0)
                fprintf(stderr, "clfleet-bench graph: D[%zu] = %g, want %g\n", i, (double)d[i],
                        (double)b->ref[i]);
            return 0;
        }
    return 1;
}

/* ---- clfleet buffers: one per tile ------------------------------------------------------- */

typedef struct tiles {
    clf_buffer *buf[NMAT][MAX_TILES * MAX_TILES];
} tiles;

static void tiles_destroy(tiles *tl)
{
    for (int m = 0; m < NMAT; m++)
        for (size_t k = 0; k < MAX_TILES * MAX_TILES; k++) {
            clf_buffer_destroy(tl->buf[m][k]);
            tl->buf[m][k] = NULL;
        }
}

/* The matrices of tiles_create(): a bit per MAT_*. */
#define MATS_ALL ((1u << NMAT) - 1)
#define MATS_SHARED ((1u << MAT_B) | (1u << MAT_E))

/* Tiles of the matrices in `mats`, tile (i, j) of matrix m on device dev(m, i, j, ctx); the
 * inputs written from the host. */
static clf_status tiles_create(tiles *tl, const bench *b, unsigned mats,
                               size_t (*dev)(int m, size_t i, size_t j, const void *ctx),
                               const void *ctx)
{
    size_t bytes = tile_elems(b) * sizeof(float);
    clf_status st = CLF_SUCCESS;
    memset(tl, 0, sizeof *tl);
    for (int m = 0; m < NMAT && st == CLF_SUCCESS; m++)
        for (size_t i = 0; (mats >> m & 1u) && i < b->tiles && st == CLF_SUCCESS; i++)
            for (size_t j = 0; j < b->tiles && st == CLF_SUCCESS; j++) {
                clf_buffer **p = &tl->buf[m][i * b->tiles + j];
                st = clf_buffer_create(p, b->fl, dev(m, i, j, ctx), bytes, 0);
                if (st == CLF_SUCCESS && m <= MAT_E)
                    st = clf_buffer_write(*p, 0, bytes, host_tile(b, m, i, j));
            }
    return st;
}

/* D, tile by tile, into out. */
static clf_status tiles_read_d(const tiles *tl, const bench *b, float *out)
{
    size_t bytes = tile_elems(b) * sizeof(float);
    clf_status st = CLF_SUCCESS;
    for (size_t k = 0; k < b->tiles * b->tiles && st == CLF_SUCCESS; k++)
        st = clf_buffer_read(tl->buf[MAT_D][k], 0, bytes, out + k * tile_elems(b));
    return st;
}

/* ---- (a) the graph ----------------------------------------------------------------------- */

/* The graph's buffers: the inputs where a program would have loaded them (device 0), the
 * outputs' tiles dealt over the devices; where the nodes run is the scheduler's business. */
static size_t graph_home(int m, size_t i, size_t j, const void *ctx)
{
    const bench *b = ctx;
    return m <= MAT_E ? 0 : (i * b->tiles + j) % b->ndev;
}

typedef struct graph_ctx {
    const bench *b;
    clf_graph *g;
    tiles *tl;
    unsigned n;
} graph_ctx;

static clf_status graph_node(void *ctx_, int kernel, int mx, size_t xi, size_t xj, int my,
                             size_t yi, size_t yj, int mz, size_t zi, size_t zj)
{
    graph_ctx *c = ctx_;
    size_t t = c->b->tiles;
    clf_graph_node_desc d = CLF_GRAPH_NODE_DESC_INIT;
    d.kernel = KERNELS[kernel];
    clf_buffer *z = c->tl->buf[mz][zi * t + zj];
    if (kernel == 2) {
        d.global[0] = tile_elems(c->b);
        clf_arg a[] = {CLF_BUF_INOUT(z)};
        return clf_graph_add_kernel(NULL, c->g, &d, a, 1);
    }
    d.dims = 2;
    d.global[0] = d.global[1] = c->b->tile;
    clf_arg a[] = {CLF_BUF_IN(c->tl->buf[mx][xi * t + xj]),
                   CLF_BUF_IN(c->tl->buf[my][yi * t + yj]), CLF_BUF_INOUT(z),
                   CLF_SCALAR(&c->n)};
    if (!kernel) /* tgemm writes all of its tile: its old contents need not move */
        a[2] = (clf_arg)CLF_BUF_OUT(z);
    return clf_graph_add_kernel(NULL, c->g, &d, a, 4);
}

typedef struct graph_state {
    tiles tl;
    clf_graph *g;
    graph_ctx c;
} graph_state;

static clf_status graph_setup(bench *b, void **out)
{
    graph_state *gs = calloc(1, sizeof *gs);
    if (!gs)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    *out = gs;
    clf_status st = tiles_create(&gs->tl, b, MATS_ALL, graph_home, b);
    if (st == CLF_SUCCESS)
        st = clf_graph_create(&gs->g, b->fl, b->prog);
    if (st == CLF_SUCCESS)
        st = clf_graph_set_flags(gs->g, CLF_GRAPH_KEEP_COPIES);
    gs->c = (graph_ctx){b, gs->g, &gs->tl, (unsigned)b->tile};
    if (st == CLF_SUCCESS)
        st = walk_dag(b, graph_node, &gs->c);
    return st;
}

static clf_status graph_run(bench *b, void *state, double *secs, float *out)
{
    graph_state *gs = state;
    double t0 = clf_bench_now();
    clf_status st = clf_graph_run(gs->g, NULL);
    if (st == CLF_SUCCESS)
        st = clf_graph_wait(gs->g);
    *secs = clf_bench_now() - t0;
    if (st == CLF_SUCCESS)
        st = tiles_read_d(&gs->tl, b, out);
    return st;
}

/* The report and the profile of the last run, then the graph goes. */
static void graph_teardown(bench *b, void *state)
{
    graph_state *gs = state;
    if (!gs)
        return;
    if (gs->g && clf_graph_report_get(&b->rep, gs->g) == CLF_SUCCESS) {
        /* Nodes are recorded in walk_dag()'s order: the kernel of node k is found so. */
        size_t k = 0, t = b->tiles;
        for (int layer = 0; layer < 2; layer++)
            for (size_t ij = 0; ij < t * t; ij++)
                for (size_t q = 0; q < t + (layer ? 0 : 1); q++, k++) {
                    clf_graph_node_report nr;
                    int kern = q == t ? 2 : q ? 1 : 0;
                    if (clf_graph_node_info(&nr, gs->g, k) != CLF_SUCCESS ||
                        nr.device >= MAX_DEV)
                        continue;
                    b->prof_n[kern][nr.device]++;
                    b->prof_kernel_s[kern][nr.device] += nr.kernel_s;
                    b->prof_pred_s[kern][nr.device] +=
                        nr.predicted_finish_s - nr.predicted_start_s;
                }
    }
    clf_graph_destroy(gs->g);
    tiles_destroy(&gs->tl);
    free(gs);
}

/* ---- (b) hand-placed, and each device alone ---------------------------------------------- */

typedef struct hand_ctx {
    const bench *b;
    const size_t *devs; /* the devices used: tile row i on devs[i mod ndevs] */
    size_t ndevs;
    /* Tiles of the row-owned matrices (A, C, D) on their owners; the shared right-hand
     * matrices (B, E) on every device used. */
    tiles own;
    tiles shared[MAX_DEV];
    unsigned n;
} hand_ctx;

static size_t hand_home(int m, size_t i, size_t j, const void *ctx)
{
    const hand_ctx *h = ctx;
    (void)m;
    (void)j;
    return h->devs[i % h->ndevs];
}

static size_t hand_shared_home(int m, size_t i, size_t j, const void *ctx)
{
    (void)m;
    (void)i;
    (void)j;
    return *(const size_t *)ctx;
}

static clf_status hand_node(void *ctx_, int kernel, int mx, size_t xi, size_t xj, int my,
                            size_t yi, size_t yj, int mz, size_t zi, size_t zj)
{
    hand_ctx *h = ctx_;
    size_t t = h->b->tiles, owner = zi % h->ndevs, dev = h->devs[owner];
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = KERNELS[kernel];
    clf_buffer *z = h->own.buf[mz][zi * t + zj];
    /* Owner computes: the node runs where its output row lives; its left input is of the
     * same row (A or C, owned alike), its right one a replica on this device. Nodes of a
     * row follow each other on the device's in-order queue: no event is needed. */
    if (kernel == 2) {
        d.global[0] = tile_elems(h->b);
        clf_arg a[] = {CLF_BUF_INOUT(z)};
        return clf_kernel_enqueue(h->b->fl, h->b->prog, dev, &d, a, 1, NULL, 0, NULL);
    }
    d.dims = 2;
    d.global[0] = d.global[1] = h->b->tile;
    clf_arg a[] = {CLF_BUF_IN(h->own.buf[mx][xi * t + xj]),
                   CLF_BUF_IN(h->shared[owner].buf[my][yi * t + yj]), CLF_BUF_INOUT(z),
                   CLF_SCALAR(&h->n)};
    if (!kernel)
        a[2] = (clf_arg)CLF_BUF_OUT(z);
    return clf_kernel_enqueue(h->b->fl, h->b->prog, dev, &d, a, 4, NULL, 0, NULL);
}

/* The DAG by hand on devs (one device: the sequential run). */
static clf_status hand_setup(bench *b, const size_t *devs, size_t ndevs, void **out)
{
    hand_ctx *h = calloc(1, sizeof *h);
    if (!h)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    *out = h;
    h->b = b;
    h->devs = devs;
    h->ndevs = ndevs;
    h->n = (unsigned)b->tile;
    clf_status st = tiles_create(&h->own, b, MATS_ALL & ~MATS_SHARED, hand_home, h);
    for (size_t k = 0; k < ndevs && st == CLF_SUCCESS; k++)
        st = tiles_create(&h->shared[k], b, MATS_SHARED, hand_shared_home, &devs[k]);
    return st;
}

static clf_status hand_run(bench *b, void *state, double *secs, float *out)
{
    hand_ctx *h = state;
    clf_event *done[MAX_DEV] = {NULL};
    double t0 = clf_bench_now();
    clf_status st = walk_dag(b, hand_node, h);
    /* The run ends when every device used has done its part. */
    for (size_t k = 0; k < h->ndevs && st == CLF_SUCCESS; k++)
        st = clf_event_record(&done[k], b->fl, h->devs[k]);
    if (st == CLF_SUCCESS)
        st = clf_events_wait(done, h->ndevs);
    else
        clf_fleet_finish(b->fl);
    *secs = clf_bench_now() - t0;
    for (size_t k = 0; k < h->ndevs; k++)
        clf_event_release(done[k]);
    if (st == CLF_SUCCESS)
        st = tiles_read_d(&h->own, b, out);
    return st;
}

static void hand_teardown(void *state)
{
    hand_ctx *h = state;
    if (!h)
        return;
    tiles_destroy(&h->own);
    for (size_t k = 0; k < h->ndevs; k++)
        tiles_destroy(&h->shared[k]);
    free(h);
}

/* ---- (c) StarPU -------------------------------------------------------------------------- */

#ifdef CLF_BENCH_STARPU
static struct starpu_opencl_program sp_prog;
static int sp_failed; /* a codelet's OpenCL call failed (codelets return nothing) */

/* One tile kernel on this worker's device: the buffers in order, then the tile side for
 * the products. Synchronous (clFinish), so StarPU's own timing of the codelet is the
 * kernel's, as its history-based models want. */
static void sp_kernel(void *buffers[], void *cl_arg, const char *name, unsigned nbuf,
                      size_t global0, unsigned dims)
{
    unsigned n = 0;
    if (dims == 2)
        starpu_codelet_unpack_args(cl_arg, &n);
    int devid = starpu_worker_get_devid(starpu_worker_get_id_check());
    cl_kernel k = NULL;
    cl_command_queue q = NULL;
    cl_int err = starpu_opencl_load_kernel(&k, &q, &sp_prog, name, devid);
    for (unsigned i = 0; i < nbuf && err == CL_SUCCESS; i++) {
        cl_mem m = (cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(buffers[i]);
        err = clSetKernelArg(k, i, sizeof m, &m);
    }
    if (err == CL_SUCCESS && dims == 2)
        err = clSetKernelArg(k, nbuf, sizeof n, &n);
    size_t global[2] = {global0, global0};
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(q, k, dims, NULL, global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(q);
    if (k)
        starpu_opencl_release_kernel(k);
    if (err != CL_SUCCESS && !sp_failed) {
        sp_failed = 1;
        fprintf(stderr, "clfleet-bench graph: StarPU worker: %s: OpenCL error %d\n", name,
                (int)err);
    }
}

static void sp_tgemm(void *buffers[], void *cl_arg)
{
    unsigned n;
    starpu_codelet_unpack_args(cl_arg, &n);
    sp_kernel(buffers, cl_arg, "tgemm", 3, n, 2);
}

static void sp_tgemm_acc(void *buffers[], void *cl_arg)
{
    unsigned n;
    starpu_codelet_unpack_args(cl_arg, &n);
    sp_kernel(buffers, cl_arg, "tgemm_acc", 3, n, 2);
}

static void sp_trelu(void *buffers[], void *cl_arg)
{
    (void)cl_arg;
    sp_kernel(buffers, NULL, "trelu", 1, STARPU_VECTOR_GET_NX(buffers[0]), 1);
}

static struct starpu_perfmodel sp_model[3];
static struct starpu_codelet sp_cl[3];

static void sp_codelets(void)
{
    static const char *const symbols[3] = {"clfleet_bench_tgemm", "clfleet_bench_tgemm_acc",
                                           "clfleet_bench_trelu"};
    starpu_opencl_func_t fns[3] = {sp_tgemm, sp_tgemm_acc, sp_trelu};
    for (int k = 0; k < 3; k++) {
        memset(&sp_model[k], 0, sizeof sp_model[k]);
        sp_model[k].type = STARPU_HISTORY_BASED;
        sp_model[k].symbol = symbols[k];
        starpu_codelet_init(&sp_cl[k]);
        sp_cl[k].where = STARPU_OPENCL;
        sp_cl[k].opencl_funcs[0] = fns[k];
        sp_cl[k].name = KERNELS[k];
        sp_cl[k].model = &sp_model[k];
        if (k == 2) {
            sp_cl[k].nbuffers = 1;
            sp_cl[k].modes[0] = STARPU_RW;
        } else {
            sp_cl[k].nbuffers = 3;
            sp_cl[k].modes[0] = STARPU_R;
            sp_cl[k].modes[1] = STARPU_R;
            sp_cl[k].modes[2] = k ? STARPU_RW : STARPU_W;
        }
    }
}

typedef struct sp_ctx {
    const bench *b;
    starpu_data_handle_t h[NMAT][MAX_TILES * MAX_TILES];
    unsigned n;
} sp_ctx;

static clf_status sp_node(void *ctx_, int kernel, int mx, size_t xi, size_t xj, int my,
                          size_t yi, size_t yj, int mz, size_t zi, size_t zj)
{
    sp_ctx *c = ctx_;
    size_t t = c->b->tiles;
    int ret;
    /* Dependencies are StarPU's, from the access modes (sequential consistency). */
    if (kernel == 2)
        ret = starpu_task_insert(&sp_cl[2], STARPU_RW, c->h[mz][zi * t + zj], 0);
    else
        ret = starpu_task_insert(&sp_cl[kernel], STARPU_R, c->h[mx][xi * t + xj], STARPU_R,
                                 c->h[my][yi * t + yj], kernel ? STARPU_RW : STARPU_W,
                                 c->h[mz][zi * t + zj], STARPU_VALUE, &c->n, sizeof c->n, 0);
    if (ret != 0) {
        fprintf(stderr, "clfleet-bench graph: starpu_task_insert: %d\n", ret);
        return CLF_ERROR_INVALID_ARGUMENT;
    }
    return CLF_SUCCESS;
}

static int sp_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The kernel source as a file in dir, for starpu_opencl_load_opencl_from_file(). */
static int sp_source_file(char *path, size_t len, const char *dir)
{
    snprintf(path, len, "%s/graph-tiles.cl", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    int ok = fputs(GRAPH_CL, f) >= 0;
    return fclose(f) == 0 && ok;
}

typedef struct sp_state {
    sp_ctx c;
    char home[32];
    int started, loaded, registered, paused;
    float *all; /* the five matrices, from starpu_malloc() */
} sp_state;

static clf_status sp_setup(bench *b, void **out)
{
    char src[64], n[32];
    sp_state *s = calloc(1, sizeof *s);
    if (!s)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    *out = s;
    snprintf(s->home, sizeof s->home, "/tmp/clf-bench-starpu.XXXXXX");
    if (!mkdtemp(s->home)) {
        fprintf(stderr, "clfleet-bench graph: StarPU: mkdtemp: %s\n", strerror(errno));
        s->home[0] = 0;
        return CLF_ERROR_IO;
    }
    /* StarPU reads its configuration from the environment at starpu_init(): dmda, one
     * OpenCL worker per device of the fleet (PoCL's are CPU devices, which StarPU skips
     * unless told), no CPU worker, and its models and bus samples in the temporary home.
     * STARPU_CALIBRATE stays unset: StarPU then calibrates a model until it has enough
     * samples (in the warm-up runs) and stops; with 1 it would go on calibrating in the
     * timed runs, and on a busy host flush a model at each deviation over 50% and go back
     * to placing tasks for calibration instead of by predicted finish. */
    snprintf(n, sizeof n, "%zu", b->ndev);
    setenv("STARPU_SCHED", "dmda", 1);
    setenv("STARPU_NCPU", "0", 1);
    setenv("STARPU_NCUDA", "0", 1);
    setenv("STARPU_NOPENCL", n, 1);
    setenv("STARPU_OPENCL_ON_CPUS", "1", 1);
    setenv("STARPU_HOME", s->home, 1);
    if (!b->opt.verbose)
        setenv("STARPU_SILENT", "1", 1);
    s->c.b = b;
    s->c.n = (unsigned)b->tile;
    if (!sp_source_file(src, sizeof src, s->home)) {
        fprintf(stderr, "clfleet-bench graph: StarPU: cannot write %s\n", src);
        return CLF_ERROR_IO;
    }
    if (starpu_init(NULL) != 0) {
        fprintf(stderr, "clfleet-bench graph: starpu_init failed\n");
        return CLF_ERROR_NO_DEVICE;
    }
    s->started = 1;
    if (starpu_opencl_worker_get_count() != b->ndev) {
        fprintf(stderr, "clfleet-bench graph: StarPU has %u OpenCL workers, the fleet %zu "
                        "devices\n",
                starpu_opencl_worker_get_count(), b->ndev);
        return CLF_ERROR_NO_DEVICE;
    }
    if (starpu_opencl_load_opencl_from_file(src, &sp_prog, NULL) != 0) {
        fprintf(stderr, "clfleet-bench graph: StarPU: the kernels did not build\n");
        return CLF_ERROR_BUILD;
    }
    s->loaded = 1;
    sp_codelets();
    size_t ee = tile_elems(b), nt = b->tiles * b->tiles;
    /* StarPU's matrices in memory from starpu_malloc() (pinned, as StarPU asks for
     * overlapped transfers), the inputs copied in. */
    if (starpu_malloc((void **)&s->all, NMAT * nt * ee * sizeof(float)) != 0) {
        s->all = NULL;
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (int m = 0; m < NMAT; m++) {
        float *p = s->all + (size_t)m * nt * ee;
        if (m <= MAT_E)
            memcpy(p, b->host[m], nt * ee * sizeof(float));
        for (size_t k = 0; k < nt; k++)
            starpu_vector_data_register(&s->c.h[m][k], STARPU_MAIN_RAM,
                                        (uintptr_t)(p + k * ee), ee, sizeof(float));
    }
    s->registered = 1;
    /* Between its own runs StarPU's workers would poll for tasks in a tight loop and take
     * the CPU from the other forms of the round (a PoCL device alone ran 3x slower beside
     * them): they wait paused, and the timing of a run starts before they resume. */
    starpu_pause();
    s->paused = 1;
    return CLF_SUCCESS;
}

static clf_status sp_run(bench *b, void *state, double *secs, float *out)
{
    sp_state *s = state;
    size_t ee = tile_elems(b), nt = b->tiles * b->tiles;
    double t0 = clf_bench_now();
    starpu_resume();
    s->paused = 0;
    clf_status st = walk_dag(b, sp_node, &s->c);
    starpu_task_wait_for_all();
    *secs = clf_bench_now() - t0;
    if (sp_failed && st == CLF_SUCCESS)
        st = CLF_ERROR_OPENCL;
    /* D back to the host, untimed, to check it (the devices' replicas stay valid). */
    for (size_t k = 0; k < nt && st == CLF_SUCCESS; k++) {
        if (starpu_data_acquire(s->c.h[MAT_D][k], STARPU_R) != 0)
            st = CLF_ERROR_INVALID_ARGUMENT;
        else
            starpu_data_release(s->c.h[MAT_D][k]);
    }
    if (st == CLF_SUCCESS)
        memcpy(out, s->all + (size_t)MAT_D * nt * ee, nt * ee * sizeof(float));
    starpu_pause();
    s->paused = 1;
    return st;
}

static void sp_teardown(bench *b, void *state)
{
    sp_state *s = state;
    if (!s)
        return;
    if (s->paused) /* unregistering brings data home: the workers move it */
        starpu_resume();
    for (int m = 0; s->registered && m < NMAT; m++)
        for (size_t k = 0; k < b->tiles * b->tiles; k++)
            starpu_data_unregister(s->c.h[m][k]);
    if (s->all)
        starpu_free(s->all);
    if (s->loaded)
        starpu_opencl_unload_opencl(&sp_prog);
    if (s->started)
        starpu_shutdown();
    if (s->home[0])
        nftw(s->home, sp_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(s);
}
#endif

/* Why StarPU has no figure on this fleet, or NULL when it can run. */
static const char *starpu_note(const bench *b)
{
#ifndef CLF_BENCH_STARPU
    (void)b;
    return "not built (libstarpu-dev)";
#else
    if (clf_bench_simulation())
        return "not run under CLFLEET_SIMULATE (StarPU would not see the simulation)";
    for (size_t i = 0; i < b->ndev; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, b->fl, i) != CLF_SUCCESS || in.is_sub_device)
            return "not run on sub-devices (StarPU takes whole devices)";
    }
    return NULL;
#endif
}

/* ---- the rounds ------------------------------------------------------------------------- */

/* What runs in each round: each kind of device alone, then the forms. Every runner runs
 * once per round, rounds one after another (--warmup untimed ones first), so that a
 * change of the host's load between rounds weighs on every figure alike. */
enum { R_ALONE, R_GRAPH, R_HAND, R_STARPU };
typedef struct runner {
    int kind;
    size_t alone; /* R_ALONE: its index in bench.alone */
    void *state;
    double t[CLF_BENCH_MAX_REPS];
} runner;

static clf_status runner_setup(bench *b, runner *r)
{
    switch (r->kind) {
    case R_ALONE:
        return hand_setup(b, &b->alone[r->alone], 1, &r->state);
    case R_GRAPH:
        return graph_setup(b, &r->state);
    case R_HAND:
        return hand_setup(b, b->all, b->ndev < MAX_DEV ? b->ndev : MAX_DEV, &r->state);
    default:
#ifdef CLF_BENCH_STARPU
        return sp_setup(b, &r->state);
#else
        return CLF_ERROR_UNSUPPORTED;
#endif
    }
}

static clf_status runner_run(bench *b, runner *r, double *secs, float *out)
{
    switch (r->kind) {
    case R_GRAPH:
        return graph_run(b, r->state, secs, out);
    case R_STARPU:
#ifdef CLF_BENCH_STARPU
        return sp_run(b, r->state, secs, out);
#else
        return CLF_ERROR_UNSUPPORTED;
#endif
    default:
        return hand_run(b, r->state, secs, out);
    }
}

static void runner_teardown(bench *b, runner *r)
{
    switch (r->kind) {
    case R_GRAPH:
        graph_teardown(b, r->state);
        break;
    case R_STARPU:
#ifdef CLF_BENCH_STARPU
        sp_teardown(b, r->state);
#endif
        break;
    default:
        hand_teardown(r->state);
    }
    r->state = NULL;
}

static const char *runner_name(const runner *r)
{
    return r->kind == R_ALONE ? "one device alone" : FORM_NAMES[r->kind - R_GRAPH];
}

/* Every runner set up, the rounds, the medians; then every runner torn down. On a
 * failure, *rc is the exit status and the message has been printed. */
static clf_status run_rounds(bench *b, float *out, int *rc)
{
    runner rs[MAX_DEV + NFORM];
    size_t nr = 0, graph = 0, failed = 0;
    memset(rs, 0, sizeof rs);
    b->nalone = 0;
    for (size_t i = 0; i < b->ndev && i < MAX_DEV; i++) {
        b->all[i] = i;
        size_t k = 0;
        while (k < b->nalone && !clf_bench_same_kind(b->fl, b->alone[k], i))
            k++;
        if (k == b->nalone) {
            rs[nr].kind = R_ALONE;
            rs[nr++].alone = b->nalone;
            b->alone[b->nalone++] = i;
        }
    }
    graph = nr;
    rs[nr++].kind = R_GRAPH;
    rs[nr++].kind = R_HAND;
    b->form_note[FORM_STARPU] = starpu_note(b);
    if (!b->form_note[FORM_STARPU])
        rs[nr++].kind = R_STARPU;
    clf_status st = CLF_SUCCESS;
    for (size_t k = 0; k < nr && st == CLF_SUCCESS; k++)
        if ((st = runner_setup(b, &rs[k])) != CLF_SUCCESS)
            failed = k;
    for (size_t round = 0; round < b->warmup + b->opt.reps && st == CLF_SUCCESS; round++)
        for (size_t k = 0; k < nr && st == CLF_SUCCESS; k++) {
            double secs = 0;
            if ((st = runner_run(b, &rs[k], &secs, out)) != CLF_SUCCESS) {
                failed = k;
                break;
            }
            check(b, out);
            if (round >= b->warmup)
                rs[k].t[round - b->warmup] = secs;
        }
    if (st != CLF_SUCCESS)
        *rc = clf_bench_fail("graph", runner_name(&rs[failed]), st);
    /* The per-round ratio first: the medians sort each runner's times in place. */
    for (size_t k = 0; k < nr && st == CLF_SUCCESS; k++)
        if (rs[k].kind == R_STARPU) {
            double ratio[CLF_BENCH_MAX_REPS];
            for (size_t q = 0; q < b->opt.reps; q++)
                ratio[q] = rs[graph].t[q] / rs[k].t[q];
            b->graph_over_starpu = clf_bench_median(ratio, b->opt.reps);
        }
    for (size_t k = 0; k < nr && st == CLF_SUCCESS; k++) {
        double med = clf_bench_median(rs[k].t, b->opt.reps);
        if (rs[k].kind == R_ALONE) {
            b->alone_s[rs[k].alone] = med;
        } else {
            b->form_s[rs[k].kind - R_GRAPH] = med;
            b->form_ran[rs[k].kind - R_GRAPH] = 1;
        }
    }
    for (size_t k = 0; k < nr; k++)
        runner_teardown(b, &rs[k]);
    b->base = clf_bench_fastest(b->alone_s, b->nalone);
    if (b->base == b->nalone)
        b->base = 0;
    return st;
}

/* ---- output
 ------------------------------------------------------------------------------ */

static double ideal_s(const bench *b)
{
    /* Every device busy all the time: rates add up. Devices alike count once each. */
    double rate = 0;
    for (size_t i = 0; i < b->ndev; i++) {
        size_t k = 0;
        while (k < b->nalone && !clf_bench_same_kind(b->fl, b->alone[k], i))
            k++;
        if (k < b->nalone && b->alone_s[k] > 0)
            rate += 1.0 / b->alone_s[k];
    }
    return rate > 0 ? 1.0 / rate : NAN;
}

static const char *dev_name(const bench *b, size_t dev, clf_device_info *in)
{
    return clf_device_get_info(in, b->fl, dev) == CLF_SUCCESS ? in->name : "?";
}

static void print_table(const bench *b)
{
    clf_device_info in;
    double base = b->alone_s[b->base], ideal = ideal_s(b);
    printf("clfleet-bench graph: C = relu(A B), D = C E; %zu x %zu tiles of %zu x %zu floats, "
           "%zu nodes, %zu devices, median of %u (after %zu warm-up runs)\n",
           b->tiles, b->tiles, b->tile, b->tile, node_count(b), b->ndev, b->opt.reps, b->warmup);
    if (clf_bench_simulation())
        printf("simulated: CLFLEET_SIMULATE='%s'\n", clf_bench_simulation());
    for (size_t k = 0; k < b->nalone; k++)
        printf("  device %zu alone (%s): %.2f ms%s\n", b->alone[k],
               dev_name(b, b->alone[k], &in), b->alone_s[k] * 1e3,
               k == b->base ? " (the fastest: the base)" : "");
    if (b->nalone < b->ndev)
        printf("  (devices alike were timed alone once, by the first of them)\n");
    printf("  ideal (every device busy all the time): %.2f ms\n\n", ideal * 1e3);
    printf("%-28s %11s %9s %10s\n", "form", "makespan ms", "speedup", "of ideal");
    for (int f = 0; f < NFORM; f++) {
        if (!b->form_ran[f]) {
            printf("%-28s %s\n", FORM_NAMES[f], b->form_note[f]);
            continue;
        }
        printf("%-28s %11.2f %8.2fx %9.2f\n", FORM_NAMES[f], b->form_s[f] * 1e3,
               base / b->form_s[f], ideal / b->form_s[f]);
    }
    printf("(speedup: over the fastest device alone; of ideal: the ideal over the makespan)\n");
    if (b->form_ran[FORM_STARPU])
        printf("\ngraph / StarPU dmda: %.2f, median of the rounds' ratios (<= 1: clfleet's "
               "graph is as fast or faster)\n",
               b->graph_over_starpu);
    printf("%sgraph / the fastest device alone: %.2f; the ideal / graph: %.2f\n",
           b->form_ran[FORM_STARPU] ? "" : "\n", b->form_s[FORM_GRAPH] / base,
           ideal / b->form_s[FORM_GRAPH]);
    const clf_graph_report *r = &b->rep;
    printf("graph, last run: %zu copies (%llu bytes), plan %s, predicted %.2f ms, critical "
           "path %.2f ms%s; nodes per device:",
           r->copies, (unsigned long long)r->copy_bytes,
           r->plan_reused ? "reused" : "made again", r->predicted_makespan_s * 1e3,
           r->critical_path_s * 1e3, r->guessed ? " (some kernel times guessed)" : "");
    for (size_t d = 0; d < b->ndev && d < CLF_MAX_LAUNCH_DEVICES; d++)
        printf(" %zu", r->device_nodes[d]);
    /* Busy against the makespan shows idle devices; the lanes, where the kernels of a device
     * that runs them inside the enqueue were queued from (lib/graph/lane.c). */
    printf("; busy ms per device:");
    for (size_t d = 0; d < b->ndev && d < CLF_MAX_LAUNCH_DEVICES; d++)
        printf(" %.2f", r->device_busy_s[d] * 1e3);
    printf(" of %.2f; nodes queued by lanes: %llu\n", r->makespan_s * 1e3,
           (unsigned long long)r->lane_nodes);
    if (!b->opt.verbose)
        return;
    printf("graph, last run, per kernel and device: nodes, mean measured kernel ms, mean "
           "predicted ms\n");
    for (int k = 0; k < 3; k++)
        for (size_t d = 0; d < b->ndev && d < MAX_DEV; d++)
            if (b->prof_n[k][d])
                printf("  %-10s device %zu: %4zu nodes, measured %.3f ms, predicted %.3f ms\n",
                       KERNELS[k], d, b->prof_n[k][d],
                       b->prof_kernel_s[k][d] / (double)b->prof_n[k][d] * 1e3,
                       b->prof_pred_s[k][d] / (double)b->prof_n[k][d] * 1e3);
}

static void print_json(const bench *b)
{
    clf_device_info in;
    double base = b->alone_s[b->base], ideal = ideal_s(b);
    printf("{\n  \"benchmark\": \"graph\",\n  \"tile\": %zu,\n  \"tiles\": %zu,\n"
           "  \"nodes\": %zu,\n  \"devices\": %zu,\n  \"repetitions\": %u,\n"
           "  \"warmup\": %zu,\n  \"starpu_built\": %s,\n  \"simulate\": ",
           b->tile, b->tiles, node_count(b), b->ndev, b->opt.reps, b->warmup,
#ifdef CLF_BENCH_STARPU
           "true"
#else
           "false"
#endif
    );
    if (clf_bench_simulation())
        clf_tool_json_string(clf_bench_simulation());
    else
        printf("null");
    printf(",\n  \"alone\": [");
    for (size_t k = 0; k < b->nalone; k++) {
        printf("%s\n    {\"device\": %zu, \"device_name\": ", k ? "," : "", b->alone[k]);
        clf_tool_json_string(dev_name(b, b->alone[k], &in));
        printf(", \"makespan_s\": ");
        clf_tool_json_num(b->alone_s[k]);
        printf(", \"baseline\": %s}", k == b->base ? "true" : "false");
    }
    printf("\n  ],\n  \"ideal_s\": ");
    clf_tool_json_num(ideal);
    printf(",\n  \"forms\": [");
    for (int f = 0; f < NFORM; f++) {
        printf("%s\n    {\"form\": \"%s\", ", f ? "," : "", FORM_KEYS[f]);
        if (!b->form_ran[f]) {
            printf("\"makespan_s\": null, \"note\": ");
            clf_tool_json_string(b->form_note[f]);
            printf("}");
            continue;
        }
        printf("\"makespan_s\": ");
        clf_tool_json_num(b->form_s[f]);
        printf(", \"speedup\": ");
        clf_tool_json_num(base / b->form_s[f]);
        printf(", \"of_ideal\": ");
        clf_tool_json_num(ideal / b->form_s[f]);
        printf("}");
    }
    printf("\n  ],\n  \"graph_over_starpu\": ");
    if (b->form_ran[FORM_STARPU])
        clf_tool_json_num(b->graph_over_starpu);
    else
        printf("null");
    printf(",\n  \"graph_report\": {\"copies\": %zu, \"copy_bytes\": %llu, "
           "\"plan_reused\": %s, \"predicted_makespan_s\": ",
           b->rep.copies, (unsigned long long)b->rep.copy_bytes,
           b->rep.plan_reused ? "true" : "false");
    clf_tool_json_num(b->rep.predicted_makespan_s);
    printf(", \"critical_path_s\": ");
    clf_tool_json_num(b->rep.critical_path_s);
    printf(", \"device_nodes\": [");
    for (size_t d = 0; d < b->ndev && d < CLF_MAX_LAUNCH_DEVICES; d++)
        printf("%s%zu", d ? ", " : "", b->rep.device_nodes[d]);
    printf("]}\n}\n");
}

int clf_bench_graph(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){.name = "graph", .usage = usage, .reps = 5, .quick_reps = 1};
    b.tile = 128;
    b.tiles = 4;
    b.warmup = 3;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick) {
        b.tile = b.tile < 32 ? b.tile : 32;
        b.tiles = b.tiles < 3 ? b.tiles : 3;
        b.warmup = b.warmup < 1 ? b.warmup : 1;
    }
    rc = 0;
    float *out = NULL;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_status st = clf_bench_fleet_want(&b.fl, &b.opt, &o, 2, 1);
    if (st != CLF_SUCCESS)
        return clf_bench_setup_failed("graph", "fleet", st);
    b.ndev = clf_fleet_device_count(b.fl);
    size_t n = b.tiles * b.tiles * tile_elems(&b);
    for (int m = 0; m < NMAT; m++)
        b.host[m] = calloc(n, sizeof(float));
    b.ref = malloc(n * sizeof(float));
    out = malloc(n * sizeof(float));
    float *c = malloc(n * sizeof(float));
    if (!b.host[0] || !b.host[1] || !b.host[2] || !b.host[3] || !b.host[4] || !b.ref || !out ||
        !c) {
        free(c);
        rc = clf_bench_fail("graph", "memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        goto out;
    }
    fill(b.host[MAT_A], n, 1);
    fill(b.host[MAT_B], n, 2);
    fill(b.host[MAT_E], n, 3);
    ref_layer(&b, b.host[MAT_A], b.host[MAT_B], c, 1);
    ref_layer(&b, c, b.host[MAT_E], b.ref, 0);
    free(c);
    if ((st = clf_program_build_source(&b.prog, b.fl, GRAPH_CL, NULL)) != CLF_SUCCESS) {
        rc = clf_bench_fail("graph", "build", st);
        goto out;
    }
    if ((st = run_rounds(&b, out, &rc)) != CLF_SUCCESS)
        goto out;
    if (b.wrong) {
        fprintf(stderr, "clfleet-bench graph: %zu run(s) gave a wrong D (against the C "
                        "reference)\n",
                b.wrong);
        rc = EXIT_FAILURE;
        goto out;
    }
    if (b.opt.json)
        print_json(&b);
    else
        print_table(&b);
out:
    clf_program_destroy(b.prog);
    clf_fleet_destroy(b.fl);
    for (int m = 0; m < NMAT; m++)
        free(b.host[m]);
    free(b.ref);
    free(out);
    return rc;
}

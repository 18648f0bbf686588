/* Launches across ranks (clf_comm_launch): shares by speed and dealt on demand, outputs
 * gathered to a root or left distributed, reductions combined across ranks, a 2D stencil
 * with halos and a local size, a device failure on one rank and bad input on one rank
 * reported on every rank; each against a plain C reference on the host. Run by
 * tests/mpi-run.sh under mpirun -np 2 and -np 3. */
#include "common.h"

#include <limits.h>

static const char SRC[] =
    TEST_CL_LOWBIAS32
    "__kernel void hash32(__global uint *out, uint seed)\n"
    "{\n"
    "    out[get_global_id(0)] = lowbias32((uint)get_global_id(0) ^ seed);\n"
    "}\n"
    "__kernel void mixsum(__global const uint *a, __global uint *out, __global uint *sum,\n"
    "                  __global int *mn)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint v = lowbias32(a[i]);\n"
    "    out[i] = v;\n"
    "    atomic_add(sum, v);\n"
    "    atomic_min(mn, (int)v);\n"
    "}\n"
    /* A 3x3 box sum over a w x h image, clamp to edge; split along y. */
    "__kernel void box(__global const uint *in, __global uint *out, int w, int h)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    uint s = 0;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++)\n"
    "            s += in[clamp(y + dy, 0, h - 1) * w + clamp(x + dx, 0, w - 1)];\n"
    "    out[y * w + x] = s;\n"
    "}\n"
    "__kernel void grp(__global const uint *a, __global uint *out)\n"
    "{\n"
    "    if (get_local_id(0) == 0)\n"
    "        out[get_group_id(0)] = a[get_global_id(0)] ^ (uint)get_num_groups(0);\n"
    "}\n"
    "__kernel void cols(__global uint *o, int w)\n"
    "{\n"
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"
    "    o[y * w + x] = lowbias32((uint)(y * w + x));\n"
    "}\n";

static const uint32_t SENT = 0xdeadbeefu;

typedef struct {
    clf_fleet *f;
    clf_comm *c;
    clf_program *p;
} env;

static void env_open(env *e)
{
    ck_assert_int_eq(mpi_size, atoi(getenv("CLF_TEST_NP")));
    e->f = mpi_test_fleet();
    e->c = mpi_test_comm(e->f, 60);
    ck_assert_int_eq(clf_comm_size(e->c), mpi_size);
    clf_status st = clf_program_build_source(&e->p, e->f, SRC, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "build: %s: %s", clf_status_name(st), clf_last_error());
}

static void env_close(env *e)
{
    clf_program_destroy(e->p);
    clf_comm_destroy(e->c);
    clf_fleet_destroy(e->f);
}

/* The ranks' shares tile [0, n) in rank order (static), or their units sum to n (dynamic). */
static void check_shares(const clf_comm_launch_report *r, size_t n, int dynamic)
{
    ck_assert_int_eq(r->num_ranks, mpi_size);
    ck_assert_ptr_nonnull(r->rank);
    uint64_t at = 0, units = 0;
    for (int k = 0; k < mpi_size; k++) {
        if (!dynamic) {
            ck_assert_msg(r->rank[k].first == at, "rank %d starts at %llu, want %llu", k,
                          (unsigned long long)r->rank[k].first, (unsigned long long)at);
            at += r->rank[k].units;
        }
        units += r->rank[k].units;
        ck_assert(r->rank[k].seconds >= 0 && r->rank[k].seconds <= r->makespan_s);
    }
    ck_assert_msg(units == n, "units sum to %llu, want %zu", (unsigned long long)units, n);
    ck_assert(r->imbalance >= -1e-9);
    ck_assert_uint_eq(r->local.total_units, r->rank[mpi_rank].units);
}

/* Static shares, outputs gathered (on rank 0, then the last rank) or left distributed. */
START_TEST(static_hash)
{
    env e;
    env_open(&e);
    static const size_t sizes[] = {1, 2, 7, 1000, 65537};
    const size_t nmax = 65537;
    uint32_t *out = malloc(nmax * sizeof *out);
    const uint32_t seed = 0xc0ffeeu;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int rep = 0; rep < 3; rep++) { /* later launches use the learned speeds */
            size_t n = sizes[k];
            unsigned flags = rep == 2 ? 0 : CLF_COMM_GATHER;
            int root = rep == 0 ? 0 : mpi_size - 1;
            for (size_t i = 0; i < nmax; i++)
                out[i] = SENT;
            clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&seed)};
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = "hash32";
            d.global[0] = n;
            clf_comm_launch_report r;
            clf_status st = clf_comm_launch(e.c, e.p, &d, args, 2, flags, root, &r);
            ck_assert_msg(st == CLF_SUCCESS, "n %zu: %s: %s", n, clf_status_name(st),
                          clf_last_error());
            check_shares(&r, n, 0);
            uint64_t lo = r.rank[mpi_rank].first, hi = lo + r.rank[mpi_rank].units;
            int all = (flags & CLF_COMM_GATHER) && mpi_rank == root;
            for (size_t i = 0; i < nmax; i++) {
                uint32_t want = i < n && (all || (i >= lo && i < hi))
                                    ? lowbias32((uint32_t)i ^ seed) : SENT;
                ck_assert_msg(out[i] == want, "n %zu rep %d rank %d: out[%zu] = %#x, want %#x",
                              n, rep, mpi_rank, i, out[i], want);
            }
            clf_free(r.rank);
        }
    free(out);
    env_close(&e);
}
END_TEST

/* Inputs everywhere, an output gathered and two reductions combined across ranks, dealt on
 * demand and by share. */
START_TEST(dynamic_and_static_mix)
{
    env e;
    env_open(&e);
    static const size_t sizes[] = {1, 13, 4099, 100003};
    const size_t nmax = 100003;
    uint32_t *a = malloc(nmax * sizeof *a), *out = malloc(nmax * sizeof *out);
    for (size_t i = 0; i < nmax; i++)
        a[i] = (uint32_t)(i * 2654435761u);
    for (int dyn = 0; dyn < 2; dyn++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            uint32_t sum = 7, want_sum = 0;
            int32_t mn = 7, want_mn = INT32_MAX;
            for (size_t i = 0; i < n; i++) {
                uint32_t v = lowbias32(a[i]);
                want_sum += v;
                want_mn = (int32_t)v < want_mn ? (int32_t)v : want_mn;
            }
            for (size_t i = 0; i < nmax; i++)
                out[i] = SENT;
            clf_arg args[] = {CLF_IN(a, n * sizeof *a, sizeof *a),
                              CLF_OUT(out, n * sizeof *out, sizeof *out),
                              CLF_REDUCE(&sum, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM),
                              CLF_REDUCE(&mn, 1, CLF_TYPE_INT32, CLF_REDUCE_MIN)};
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = "mixsum";
            d.global[0] = n;
            unsigned flags = CLF_COMM_GATHER | (dyn ? CLF_COMM_DYNAMIC : 0);
            clf_comm_launch_report r;
            clf_status st = clf_comm_launch(e.c, e.p, &d, args, 4, flags, 0, &r);
            ck_assert_msg(st == CLF_SUCCESS, "dyn %d n %zu: %s: %s", dyn, n, clf_status_name(st),
                          clf_last_error());
            check_shares(&r, n, dyn);
            ck_assert_msg(sum == want_sum && mn == want_mn,
                          "dyn %d n %zu rank %d: sum %u min %d, want %u %d", dyn, n, mpi_rank,
                          sum, mn, want_sum, want_mn);
            if (mpi_rank == 0)
                for (size_t i = 0; i < nmax; i++) {
                    uint32_t want = i < n ? lowbias32(a[i]) : SENT;
                    ck_assert_msg(out[i] == want, "dyn %d n %zu: out[%zu] = %#x, want %#x", dyn,
                                  n, i, out[i], want);
                }
            if (dyn && n == 100003) {
                uint64_t chunks = 0;
                for (int q = 0; q < mpi_size; q++)
                    chunks += r.rank[q].chunks;
                ck_assert_msg(chunks >= (uint64_t)mpi_size, "%llu chunks",
                              (unsigned long long)chunks);
            }
            clf_free(r.rank);
        }
    free(a);
    free(out);
    env_close(&e);
}
END_TEST

/* A 2D stencil split along y with a halo of one row and a local size of 4 x 2: shares are
 * whole groups, the halo rows come from the neighbours' part of the input. */
START_TEST(stencil_halo)
{
    env e;
    env_open(&e);
    const int w = 36, h = 202;
    size_t bytes = (size_t)w * h * sizeof(uint32_t), row = (size_t)w * sizeof(uint32_t);
    uint32_t *in = malloc(bytes), *out = malloc(bytes), *want = malloc(bytes);
    for (size_t i = 0; i < (size_t)w * h; i++)
        in[i] = lowbias32((uint32_t)i) & 0xffffu;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint32_t s = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy < 0 ? 0 : y + dy >= h ? h - 1 : y + dy;
                    int xx = x + dx < 0 ? 0 : x + dx >= w ? w - 1 : x + dx;
                    s += in[yy * w + xx];
                }
            want[y * w + x] = s;
        }
    for (int dyn = 0; dyn < 2; dyn++) {
        memset(out, 0xff, bytes);
        clf_arg args[] = {CLF_IN_HALO(in, bytes, row, 1, 1), CLF_OUT(out, bytes, row),
                          CLF_SCALAR(&w), CLF_SCALAR(&h)};
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "box";
        d.dims = 2;
        d.global[0] = (size_t)w;
        d.global[1] = (size_t)h;
        d.local[0] = 4;
        d.local[1] = 2;
        clf_comm_launch_report r;
        clf_status st = clf_comm_launch(e.c, e.p, &d, args, 4,
                                        CLF_COMM_GATHER | (dyn ? CLF_COMM_DYNAMIC : 0), 0, &r);
        ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
        check_shares(&r, (size_t)h, dyn);
        for (int k = 0; k < mpi_size && !dyn; k++)
            ck_assert_msg(r.rank[k].first % 2 == 0, "rank %d starts at row %llu", k,
                          (unsigned long long)r.rank[k].first);
        if (mpi_rank == 0)
            for (size_t i = 0; i < (size_t)w * h; i++)
                ck_assert_msg(out[i] == want[i], "dyn %d: (%zu, %zu) = %u, want %u", dyn,
                              i % (size_t)w, i / (size_t)w, out[i], want[i]);
        clf_free(r.rank);
    }
    free(in);
    free(out);
    free(want);
    env_close(&e);
}
END_TEST

/* Outputs laid out other than one run per share: one element per work-group, and an image
 * split by columns (rows of a pitch); gathered to the root, by share and dealt. */
START_TEST(per_group_and_strided)
{
    env e;
    env_open(&e);
    const size_t groups = 101, l = 64, n = groups * l, W = 301, H = 7;
    uint32_t *a = malloc(n * sizeof *a), *out = malloc(groups * sizeof *out);
    uint32_t *img = malloc(W * H * sizeof *img);
    for (size_t i = 0; i < n; i++)
        a[i] = lowbias32((uint32_t)i + 5);
    int iw = (int)W;
    for (int dyn = 0; dyn < 2; dyn++) {
        unsigned flags = CLF_COMM_GATHER | (dyn ? CLF_COMM_DYNAMIC : 0);
        memset(out, 0, groups * sizeof *out);
        clf_arg args[] = {CLF_IN(a, n * sizeof *a, sizeof *a),
                          CLF_OUT_PER_GROUP(out, groups * sizeof *out, sizeof *out)};
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "grp";
        d.global[0] = n;
        d.local[0] = l;
        clf_status st = clf_comm_launch(e.c, e.p, &d, args, 2, flags, 0, NULL);
        ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
        for (size_t g = 0; mpi_rank == 0 && g < groups; g++)
            ck_assert_msg(out[g] == (a[g * l] ^ (uint32_t)groups), "dyn %d group %zu: %#x", dyn,
                          g, out[g]);
        memset(img, 0, W * H * sizeof *img);
        clf_arg cargs[] = {CLF_OUT_STRIDED(img, W * H * sizeof *img, sizeof *img,
                                           W * sizeof *img),
                           CLF_SCALAR(&iw)};
        d = (clf_launch_desc)CLF_LAUNCH_DESC_INIT;
        d.kernel = "cols";
        d.dims = 2;
        d.global[0] = W;
        d.global[1] = H;
        d.split_dim = CLF_SPLIT_DIM(0);
        st = clf_comm_launch(e.c, e.p, &d, cargs, 2, flags, mpi_size - 1, NULL);
        ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
        for (size_t i = 0; mpi_rank == mpi_size - 1 && i < W * H; i++)
            ck_assert_msg(img[i] == lowbias32((uint32_t)i), "dyn %d pixel (%zu, %zu): %#x", dyn,
                          i % W, i / W, img[i]);
    }
    free(a);
    free(out);
    free(img);
    env_close(&e);
}
END_TEST

/* Every device of rank 1 fails: every rank gets CLF_ERROR_DEVICE_FAILED naming rank 1 (or,
 * dealt on demand, the right answer without rank 1 when it took no chunk). Bad
 * input on one rank only fails every rank too; a good launch works afterwards. */
START_TEST(failure_on_one_rank)
{
    if (mpi_rank == 1)
        setenv("CLFLEET_FAULT_INJECT", "device=*,call=enqueue,lost", 1);
    env e;
    env_open(&e);
    unsetenv("CLFLEET_FAULT_INJECT");
    const size_t n = 5000;
    uint32_t *out = malloc(n * sizeof *out);
    const uint32_t seed = 3;
    clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&seed)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "hash32";
    d.global[0] = n;
    for (int dyn = 0; dyn < 2; dyn++) {
        for (size_t i = 0; i < n; i++)
            out[i] = SENT;
        clf_comm_launch_report r;
        clf_status st = clf_comm_launch(e.c, e.p, &d, args, 2,
                                        CLF_COMM_GATHER | (dyn ? CLF_COMM_DYNAMIC : 0), 0, &r);
        if (dyn && st == CLF_SUCCESS) {
            /* Dealt on demand, rank 0 may take every chunk before rank 1 asks for one (a
             * loaded machine, a sanitizer): then nothing ran on the failed devices and the
             * root must hold the whole, right answer. */
            ck_assert_int_eq(r.num_ranks, mpi_size);
            ck_assert_msg(r.rank[1].chunks == 0, "rank 1 ran %llu chunks on failed devices",
                          (unsigned long long)r.rank[1].chunks);
            for (size_t i = 0; mpi_rank == 0 && i < n; i++)
                ck_assert_uint_eq(out[i], lowbias32((uint32_t)i ^ seed));
            clf_free(r.rank);
            continue;
        }
        ck_assert_msg(st == CLF_ERROR_DEVICE_FAILED && strstr(clf_last_error(), "rank 1"),
                      "dyn %d rank %d: %s: %s", dyn, mpi_rank, clf_status_name(st),
                      clf_last_error());
        ck_assert_ptr_null(r.rank);
    }
    /* Bad flags on the last rank only; a root out of range on rank 0 only. */
    clf_status st = clf_comm_launch(e.c, e.p, &d, args, 2, mpi_rank == mpi_size - 1 ? 64 : 0,
                                    0, NULL);
    ck_assert_int_eq(st, CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "flags"), "%s", clf_last_error());
    st = clf_comm_launch(e.c, e.p, &d, args, 2, CLF_COMM_GATHER, mpi_rank == 0 ? 99 : 0, NULL);
    ck_assert_int_eq(st, CLF_ERROR_INVALID_ARGUMENT);
    d.range_units = 3;
    st = clf_comm_launch(e.c, e.p, &d, args, 2, 0, 0, NULL);
    ck_assert_int_eq(st, CLF_ERROR_INVALID_ARGUMENT);
    d.range_units = 0;
    ck_assert_int_eq(clf_comm_launch(NULL, e.p, &d, args, 2, 0, 0, NULL), CLF_ERROR_NULL_POINTER);
    /* Ranks that disagree on the range (or the root) would cut it wrongly: refused on all. */
    d.global[0] = mpi_rank == mpi_size - 1 ? n - 1 : n;
    st = clf_comm_launch(e.c, e.p, &d, args, 2, 0, 0, NULL);
    ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT && strstr(clf_last_error(), "disagree"),
                  "%s: %s", clf_status_name(st), clf_last_error());
    d.global[0] = n;
    st = clf_comm_launch(e.c, e.p, &d, args, 2, CLF_COMM_GATHER, mpi_rank ? 1 : 0, NULL);
    ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT && strstr(clf_last_error(), "root"), "%s",
                  clf_last_error());
    free(out);
    env_close(&e);
    /* A fleet without faults: the same launch succeeds on every rank. */
    env_open(&e);
    out = malloc(n * sizeof *out);
    clf_arg ok[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&seed)};
    st = clf_comm_launch(e.c, e.p, &d, ok, 2, CLF_COMM_GATHER, 0, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
    for (size_t i = 0; mpi_rank == 0 && i < n; i++)
        ck_assert_uint_eq(out[i], lowbias32((uint32_t)i ^ seed));
    free(out);
    env_close(&e);
}
END_TEST

static Suite *make(void)
{
    Suite *s = suite_create("mpi_launch");
    TCase *tc = tcase_create("mpi_launch");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, static_hash);
    tcase_add_test(tc, dynamic_and_static_mix);
    tcase_add_test(tc, stencil_halo);
    tcase_add_test(tc, per_group_and_strided);
    tcase_add_test(tc, failure_on_one_rank);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_test_main(argc, argv, make);
}

/* Collectives across ranks (all-reduce, reduce, broadcast, all-gather) against C loops on
 * the host: every rank makes every rank's data from (rank, buffer, element), so each can
 * compute the whole reference. Each rank has two PoCL devices (pthread, basic); some tests
 * give ranks different buffer counts (the rank-level fallback). Small chunks make the large
 * cases pipelined over many chunks and every device lane. */
#include "common.h"

#include <stdint.h>

static clf_fleet *fleet;
static clf_comm *comm;

static void setup(void)
{
    fleet = mpi_test_fleet();
    clf_comm_options o = CLF_COMM_OPTIONS_INIT;
    o.timeout_s = 60;
    o.chunk_bytes = 4096 * 3; /* many chunks */
    ck_assert_ok(clf_comm_create(&comm, MPI_COMM_WORLD, fleet, &o));
}

static void teardown(void)
{
    clf_comm_destroy(comm);
    clf_fleet_destroy(fleet);
    comm = NULL;
    fleet = NULL;
}

/* How many buffers rank r uses: all devices, or with `uneven` one fewer on odd ranks. */
static size_t nbufs_of(int r, int uneven)
{
    size_t n = clf_fleet_device_count(fleet);
    if (n > 2)
        n = 2;
    return uneven && (r & 1) && n > 1 ? n - 1 : n;
}

/* Element i of buffer b of rank r: small integers (exact in float sums and products). */
static long long value(int r, size_t b, size_t i, clf_reduce_op op)
{
    uint32_t h = lowbias32((uint32_t)(r * 7919 + (int)b * 104729) ^ (uint32_t)i * 2654435761u);
    if (op == CLF_REDUCE_PROD)
        return (h & 7) == 0 ? 2 : ((h & 1) ? 1 : -1);
    return (long long)(h % 2001) - 1000;
}

static void put(void *a, size_t i, clf_type t, long long v)
{
    switch (t) {
    case CLF_TYPE_INT32: ((int32_t *)a)[i] = (int32_t)v; break;
    case CLF_TYPE_UINT32: ((uint32_t *)a)[i] = (uint32_t)v; break;
    case CLF_TYPE_INT64: ((int64_t *)a)[i] = v; break;
    case CLF_TYPE_FLOAT: ((float *)a)[i] = (float)v; break;
    default: ((double *)a)[i] = (double)v; break;
    }
}

static long long combine(long long a, long long b, clf_reduce_op op, clf_type t)
{
    if (t == CLF_TYPE_UINT32) {
        uint32_t x = (uint32_t)a, y = (uint32_t)b;
        switch (op) {
        case CLF_REDUCE_SUM: return (uint32_t)(x + y);
        case CLF_REDUCE_PROD: return (uint32_t)(x * y);
        case CLF_REDUCE_MIN: return x < y ? x : y;
        default: return x > y ? x : y;
        }
    }
    switch (op) {
    case CLF_REDUCE_SUM: return a + b;
    case CLF_REDUCE_PROD: return a * b;
    case CLF_REDUCE_MIN: return a < b ? a : b;
    default: return a > b ? a : b;
    }
}

/* The reduction of every buffer of `ranks` ranks (or only those of `only` >= 0). */
static void *reference(size_t count, clf_type t, clf_reduce_op op, int uneven, int only)
{
    void *ref = malloc(count * clf_type_size(t));
    ck_assert_ptr_nonnull(ref);
    for (size_t i = 0; i < count; i++) {
        int first = 1;
        long long acc = 0;
        for (int r = 0; r < mpi_size; r++) {
            if (only >= 0 && r != only)
                continue;
            for (size_t b = 0; b < nbufs_of(r, uneven); b++) {
                long long v = value(r, b, i, op);
                if (t == CLF_TYPE_UINT32)
                    v = (uint32_t)v;
                acc = first ? v : combine(acc, v, op, t);
                first = 0;
            }
        }
        put(ref, i, t, acc);
    }
    return ref;
}

/* This rank's buffers filled with its values. */
static clf_buffer **make_bufs(size_t n, size_t count, clf_type t, clf_reduce_op op, size_t extra)
{
    size_t es = clf_type_size(t);
    clf_buffer **b = calloc(n, sizeof *b);
    void *h = malloc(count * es + extra);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(h);
    for (size_t d = 0; d < n; d++) {
        ck_assert_ok(clf_buffer_create(&b[d], fleet, d, count * es + extra, CLF_MEM_READ_WRITE));
        for (size_t i = 0; i < count; i++)
            put(h, i, t, value(mpi_rank, d, i, op));
        memset((char *)h + count * es, 0x5a, extra);
        ck_assert_ok(clf_buffer_write(b[d], 0, count * es + extra, h));
    }
    free(h);
    return b;
}

static void free_bufs(clf_buffer **b, size_t n)
{
    for (size_t d = 0; d < n; d++)
        clf_buffer_destroy(b[d]);
    free(b);
}

/* Buffer d holds `want` (count elements), and its `extra` bytes after them are untouched. */
static void expect_buf(clf_buffer *b, const void *want, size_t bytes, size_t extra,
                       const char *what)
{
    unsigned char *h = malloc(bytes + extra);
    ck_assert_ptr_nonnull(h);
    ck_assert_ok(clf_buffer_read(b, 0, bytes + extra, h));
    if (memcmp(h, want, bytes) != 0) {
        size_t i = 0;
        while (((const unsigned char *)want)[i] == h[i])
            i++;
        ck_abort_msg("%s: rank %d device %zu: byte %zu of %zu differs", what, mpi_rank,
                     clf_buffer_device(b), i, bytes);
    }
    for (size_t i = 0; i < extra; i++)
        expect(h[bytes + i] == 0x5a, "%s: rank %d: byte %zu past the data was written", what,
               mpi_rank, i);
    free(h);
}

static const clf_type types[] = {CLF_TYPE_INT32, CLF_TYPE_UINT32, CLF_TYPE_INT64,
                                 CLF_TYPE_FLOAT, CLF_TYPE_DOUBLE};
static const clf_reduce_op ops[] = {CLF_REDUCE_SUM, CLF_REDUCE_PROD, CLF_REDUCE_MIN,
                                    CLF_REDUCE_MAX};

static void allreduce_case(size_t count, clf_type t, clf_reduce_op op, int uneven)
{
    size_t n = nbufs_of(mpi_rank, uneven), es = clf_type_size(t);
    clf_buffer **b = make_bufs(n, count, t, op, 16);
    void *ref = reference(count, t, op, uneven, -1);
    clf_status st = clf_comm_allreduce(comm, b, n, count, t, op);
    ck_assert_msg(st == CLF_SUCCESS, "allreduce count %zu type %d op %d uneven %d: %s: %s",
                  count, t, op, uneven, clf_status_name(st), clf_last_error());
    for (size_t d = 0; d < n; d++)
        expect_buf(b[d], ref, count * es, 16, "allreduce");
    free(ref);
    free_bufs(b, n);
}

START_TEST(test_allreduce)
{
    /* Every type and operation, small (one message), large (lanes, many chunks), and from
     * 256 KiB on devices using the host's memory (mapped, no staging: 70001 elements). */
    static const size_t counts[] = {1, 1000, 50021, 70001};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                allreduce_case(counts[ci], types[ti], ops[oi], 0);
}
END_TEST

START_TEST(test_allreduce_uneven)
{
    /* Ranks with different device counts: the rank-level algorithm, the same result. */
    allreduce_case(50021, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, 1);
    allreduce_case(3, CLF_TYPE_INT64, CLF_REDUCE_MAX, 1);
    allreduce_case(20000, CLF_TYPE_INT32, CLF_REDUCE_MIN, 1);
}
END_TEST

START_TEST(test_allreduce_plans)
{
    /* CPU devices map their buffers for large data; $CLFLEET_MPI_ALLREDUCE forces the
     * chunked pipeline (device lanes, many chunks: the plan of discrete devices), one staged
     * chunk, the rank level, or the map. Each must give the same result, with even and
     * uneven device counts. */
    static const char *const plans[] = {"pipelined", "single", "flat", "mapped", NULL};
    for (size_t pi = 0; pi < sizeof plans / sizeof plans[0]; pi++) {
        if (plans[pi])
            setenv("CLFLEET_MPI_ALLREDUCE", plans[pi], 1);
        allreduce_case(50021, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, 0);
        allreduce_case(3001, CLF_TYPE_DOUBLE, CLF_REDUCE_MAX, 0);
        allreduce_case(20000, CLF_TYPE_INT32, CLF_REDUCE_MIN, 1);
        allreduce_case(3072, CLF_TYPE_UINT32, CLF_REDUCE_PROD, 0); /* one chunk exactly */
        unsetenv("CLFLEET_MPI_ALLREDUCE");
    }
}
END_TEST

START_TEST(test_allreduce_default_chunk)
{
    /* The default chunk (4 MiB): one chunk with its status element, and just above it the
     * large path (one chunk too on CPU devices, after the arguments' agreement). */
    clf_comm *saved = comm;
    clf_comm_options o = CLF_COMM_OPTIONS_INIT;
    o.timeout_s = 60;
    ck_assert_ok(clf_comm_create(&comm, MPI_COMM_WORLD, fleet, &o));
    allreduce_case((size_t)1 << 20, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, 0);
    allreduce_case(((size_t)1 << 20) + 1, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, 0);
    allreduce_case((size_t)1 << 19, CLF_TYPE_INT64, CLF_REDUCE_MIN, 1);
    allreduce_case(((size_t)1 << 19) + 1, CLF_TYPE_INT64, CLF_REDUCE_MAX, 1);
    clf_comm_destroy(comm);
    comm = saved;
}
END_TEST

START_TEST(test_reduce)
{
    static const size_t counts[] = {7, 30011};
    for (int root = 0; root < mpi_size; root++)
        for (size_t ci = 0; ci < 2; ci++) {
            size_t count = counts[ci], n = nbufs_of(mpi_rank, root & 1);
            clf_type t = root & 1 ? CLF_TYPE_DOUBLE : CLF_TYPE_INT32;
            size_t es = clf_type_size(t), rb = nbufs_of(root, root & 1) - 1;
            clf_buffer **b = make_bufs(n, count, t, CLF_REDUCE_SUM, 8);
            void *ref = reference(count, t, CLF_REDUCE_SUM, root & 1, -1);
            ck_assert_ok(clf_comm_reduce(comm, b, n, count, t, CLF_REDUCE_SUM, root, rb));
            for (size_t d = 0; d < n; d++) {
                if (mpi_rank == root && d == rb) {
                    expect_buf(b[d], ref, count * es, 8, "reduce (root)");
                } else {
                    /* Unchanged: its own values. */
                    void *own = malloc(count * es);
                    for (size_t i = 0; i < count; i++)
                        put(own, i, t, value(mpi_rank, d, i, CLF_REDUCE_SUM));
                    expect_buf(b[d], own, count * es, 8, "reduce (not the root)");
                    free(own);
                }
            }
            free(ref);
            free_bufs(b, n);
        }
}
END_TEST

START_TEST(test_broadcast)
{
    static const size_t sizes[] = {1, 12287, 100003};
    for (int root = 0; root < mpi_size; root++)
        for (size_t si = 0; si < 3; si++) {
            size_t size = sizes[si], n = nbufs_of(mpi_rank, 1), rb = nbufs_of(root, 1) - 1;
            /* Bytes: rank, buffer and position mixed. */
            clf_buffer **b = make_bufs(n, size, CLF_TYPE_INT32, CLF_REDUCE_SUM, 0);
            unsigned char *want = malloc(size * 4);
            for (size_t i = 0; i < size; i++)
                put(want, i, CLF_TYPE_INT32, value(root, rb, i, CLF_REDUCE_SUM));
            ck_assert_ok(clf_comm_broadcast(comm, b, n, size, root, rb));
            for (size_t d = 0; d < n; d++) {
                /* The first `size` bytes are the root's, the rest the buffer's own. */
                unsigned char *own = malloc(size * 4);
                for (size_t i = 0; i < size; i++)
                    put(own, i, CLF_TYPE_INT32, value(mpi_rank, d, i, CLF_REDUCE_SUM));
                memcpy(own, want, size);
                expect_buf(b[d], own, size * 4, 0, "broadcast");
                free(own);
            }
            free(want);
            free_bufs(b, n);
        }
}
END_TEST

START_TEST(test_allgather)
{
    static const size_t counts[] = {1, 5000};
    static const size_t sizes[] = {4, 3};
    for (int uneven = 0; uneven < 2; uneven++)
        for (size_t ci = 0; ci < 2; ci++)
            for (size_t si = 0; si < 2; si++) {
                size_t count = counts[ci], es = sizes[si], n = nbufs_of(mpi_rank, uneven);
                size_t total = 0, before = 0;
                for (int r = 0; r < mpi_size; r++) {
                    if (r < mpi_rank)
                        before += nbufs_of(r, uneven);
                    total += nbufs_of(r, uneven);
                }
                size_t bytes = total * count * es;
                unsigned char *want = malloc(bytes);
                size_t p = 0;
                for (int r = 0; r < mpi_size; r++)
                    for (size_t d = 0; d < nbufs_of(r, uneven); d++, p++)
                        for (size_t i = 0; i < count * es; i++)
                            want[p * count * es + i] =
                                (unsigned char)lowbias32((uint32_t)(r * 31 + (int)d) * 1000003u +
                                                         (uint32_t)i);
                clf_buffer **b = calloc(n, sizeof *b);
                unsigned char *h = malloc(bytes + 8);
                for (size_t d = 0; d < n; d++) {
                    ck_assert_ok(clf_buffer_create(&b[d], fleet, d, bytes + 8,
                                                   CLF_MEM_READ_WRITE));
                    memset(h, 0x5a, bytes + 8);
                    memcpy(h + (before + d) * count * es, want + (before + d) * count * es,
                           count * es);
                    ck_assert_ok(clf_buffer_write(b[d], 0, bytes + 8, h));
                }
                ck_assert_ok(clf_comm_allgather(comm, b, n, count, es));
                for (size_t d = 0; d < n; d++)
                    expect_buf(b[d], want, bytes, 8, "allgather");
                free(h);
                free(want);
                free_bufs(b, n);
            }
}
END_TEST

/* Bad input on one rank only: every rank fails with its status, the message naming it, and
 * the communicator still works afterwards. */
START_TEST(test_one_rank_bad)
{
    size_t n = nbufs_of(mpi_rank, 0);
    int bad = mpi_size - 1;
    for (int large = 0; large < 2; large++) {
        size_t count = large ? 40000 : 100;
        clf_buffer **b = make_bufs(n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, 0);
        size_t use = mpi_rank == bad ? count + 1 : count; /* its buffers are too small */
        (void)use;
        clf_buffer *keep = b[0];
        if (mpi_rank == bad)
            b[0] = NULL;
        clf_status st = clf_comm_allreduce(comm, b, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM);
        b[0] = keep;
        ck_assert_int_eq(st, CLF_ERROR_NULL_POINTER);
        char want[64];
        snprintf(want, sizeof want, "failed on rank %d", bad);
        ck_assert_msg(strstr(clf_last_error(), want) && strstr(clf_last_error(), "bufs[0]"),
                      "message: %s", clf_last_error());
        /* Reduce, broadcast, all-gather likewise. */
        if (mpi_rank == bad)
            b[0] = NULL;
        ck_assert_int_eq(clf_comm_reduce(comm, b, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, 0, 0),
                         CLF_ERROR_NULL_POINTER);
        ck_assert_int_eq(clf_comm_broadcast(comm, b, n, count, 0, 0), CLF_ERROR_NULL_POINTER);
        ck_assert_int_eq(clf_comm_allgather(comm, b, n, 1, 4), CLF_ERROR_NULL_POINTER);
        b[0] = keep;
        free_bufs(b, n);
    }
    /* Still usable. */
    allreduce_case(40000, CLF_TYPE_INT32, CLF_REDUCE_SUM, 0);
    /* The same bad argument everywhere: every rank says so without MPI. */
    ck_assert_int_eq(clf_comm_allreduce(comm, NULL, 1, 0, CLF_TYPE_INT32, CLF_REDUCE_SUM),
                     CLF_ERROR_ZERO_SIZE);
    ck_assert_int_eq(clf_comm_allreduce(comm, NULL, 1, 1, (clf_type)99, CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_comm_reduce(comm, NULL, 1, 1, CLF_TYPE_INT32, CLF_REDUCE_SUM,
                                     mpi_size, 0),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf_comm_allreduce(NULL, NULL, 1, 1, CLF_TYPE_INT32, CLF_REDUCE_SUM),
                     CLF_ERROR_NULL_POINTER);
    allreduce_case(100, CLF_TYPE_INT32, CLF_REDUCE_SUM, 0);
}
END_TEST

/* CLFLEET_MPI_CHECK=1: arguments that differ across ranks fail on every rank, naming them. */
START_TEST(test_mismatch_checked)
{
    setenv("CLFLEET_MPI_CHECK", "1", 1);
    clf_comm *cc = mpi_test_comm(fleet, 30);
    unsetenv("CLFLEET_MPI_CHECK");
    size_t n = nbufs_of(mpi_rank, 0);
    clf_buffer **b = make_bufs(n, 1000, CLF_TYPE_INT32, CLF_REDUCE_SUM, 0);
    int odd = mpi_size - 1;
    ck_assert_int_eq(clf_comm_allreduce(cc, b, n, mpi_rank == odd ? 999 : 1000, CLF_TYPE_INT32,
                                        CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT);
    char want[128];
    snprintf(want, sizeof want, "count is 1000 on rank 0 but 999 on rank %d", odd);
    ck_assert_msg(strstr(clf_last_error(), want), "message: %s", clf_last_error());
    ck_assert_int_eq(clf_comm_allreduce(cc, b, n, 1000, CLF_TYPE_INT32,
                                        mpi_rank == odd ? CLF_REDUCE_MAX : CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "op is"), "message: %s", clf_last_error());
    ck_assert_int_eq(clf_comm_reduce(cc, b, n, 1000, CLF_TYPE_INT32, CLF_REDUCE_SUM,
                                     mpi_rank == odd ? 0 : odd, 0),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "root is"), "message: %s", clf_last_error());
    ck_assert_int_eq(clf_comm_broadcast(cc, b, n, mpi_rank == odd ? 10 : 11, 0, 0),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_comm_allgather(cc, b, n, 1, mpi_rank == odd ? 4 : 8),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "elem_size is"), "message: %s", clf_last_error());
    /* Matching arguments pass the check. */
    ck_assert_ok(clf_comm_allreduce(cc, b, n, 1000, CLF_TYPE_INT32, CLF_REDUCE_SUM));
    free_bufs(b, n);
    clf_comm_destroy(cc);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("mpi_coll");
    TCase *tc = tcase_create("coll");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_allreduce);
    tcase_add_test(tc, test_allreduce_uneven);
    tcase_add_test(tc, test_allreduce_plans);
    tcase_add_test(tc, test_allreduce_default_chunk);
    tcase_add_test(tc, test_reduce);
    tcase_add_test(tc, test_broadcast);
    tcase_add_test(tc, test_allgather);
    tcase_add_test(tc, test_one_rank_bad);
    tcase_add_test(tc, test_mismatch_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_test_main(argc, argv, make_suite);
}

/* Failures across ranks: a device failure on one rank fails the collective on every rank
 * (naming the rank), and a rank that is stuck makes the others fail with CLF_ERROR_TIMEOUT
 * within the communicator's timeout, then itself too; neither hangs. */
#include "common.h"

#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static clf_buffer **bufs_of(clf_fleet *f, size_t n, size_t bytes)
{
    clf_buffer **b = calloc(n, sizeof *b);
    ck_assert_ptr_nonnull(b);
    for (size_t d = 0; d < n; d++) {
        ck_assert_ok(clf_buffer_create(&b[d], f, d, bytes, CLF_MEM_READ_WRITE));
        float one = 1.0f;
        ck_assert_ok(clf_buffer_fill(b[d], &one, sizeof one, 0, bytes));
    }
    return b;
}

static void free_bufs(clf_buffer **b, size_t n)
{
    for (size_t d = 0; d < n; d++)
        clf_buffer_destroy(b[d]);
    free(b);
}

/* Rank size-1's device 0 fails every transfer (fault injection, call=buffer): each
 * collective fails on every rank with one status, the message naming that rank. */
START_TEST(test_device_failure)
{
    int bad = mpi_size - 1;
    if (mpi_rank == bad)
        setenv("CLFLEET_FAULT_INJECT", "device=0,call=buffer,count=all", 1);
    clf_fleet *f = mpi_test_fleet();
    unsetenv("CLFLEET_FAULT_INJECT");
    clf_comm *c = mpi_test_comm(f, 30);
    size_t n = clf_fleet_device_count(f) < 2 ? clf_fleet_device_count(f) : 2;
    /* Every collective, small (rank level) and large (device lanes, many chunks). */
    static const size_t counts[] = {100, 200000};
    char want[64];
    snprintf(want, sizeof want, "failed on rank %d", bad);
    for (int i = 0; i < 2; i++) {
        size_t count = counts[i];
        clf_buffer **b = bufs_of(f, n, count * 4);
        for (int k = 0; k < 4; k++) {
            clf_status st =
                k == 0 ? clf_comm_allreduce(c, b, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM)
                : k == 1
                    ? clf_comm_reduce(c, b, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, bad, 0)
                : k == 2 ? clf_comm_broadcast(c, b, n, count * 4, 0, 0)
                         : clf_comm_allgather(c, b, n, count / (size_t)mpi_size / 2, 4);
            ck_assert_msg(st != CLF_SUCCESS && strstr(clf_last_error(), want),
                          "collective %d, count %zu: %s: %s", k, count, clf_status_name(st),
                          clf_last_error());
            /* The same status on every rank. */
            int mine = (int)st, lo = 0, hi = 0;
            MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            ck_assert_int_eq(lo, hi);
        }
        free_bufs(b, n);
    }
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
}
END_TEST

/* The last rank is late by more than the timeout: the others fail with CLF_ERROR_TIMEOUT
 * within about the timeout, and the communicator stays failed (no hang, at once); the late
 * rank then times out too. */
START_TEST(test_stuck_rank)
{
    clf_fleet *f = mpi_test_fleet();
    const double timeout = 2.0;
    clf_comm *c = mpi_test_comm(f, timeout);
    size_t n = clf_fleet_device_count(f) < 2 ? clf_fleet_device_count(f) : 2;
    clf_buffer **b = bufs_of(f, n, 200000 * 4);
    ck_assert_ok(clf_comm_allreduce(c, b, n, 200000, CLF_TYPE_FLOAT, CLF_REDUCE_SUM));
    int late = mpi_size - 1;
    if (mpi_rank == late) {
        struct timespec ts = {(time_t)(timeout * 2 + 1), 0};
        nanosleep(&ts, NULL);
    }
    double t0 = now();
    clf_status st = clf_comm_allreduce(c, b, n, 200000, CLF_TYPE_FLOAT, CLF_REDUCE_SUM);
    double took = now() - t0;
    ck_assert_msg(st == CLF_ERROR_TIMEOUT || st == CLF_ERROR_MPI, "%s after %.1f s: %s",
                  clf_status_name(st), took, clf_last_error());
    ck_assert_msg(took < timeout * 3 + 5, "failed after %.1f s (timeout %.1f s)", took, timeout);
    if (st == CLF_ERROR_TIMEOUT)
        ck_assert_msg(strstr(clf_last_error(), "waited"), "%s", clf_last_error());
    /* Failed for good, at once. */
    t0 = now();
    ck_assert_int_eq(clf_comm_allreduce(c, b, n, 100, CLF_TYPE_FLOAT, CLF_REDUCE_SUM),
                     CLF_ERROR_MPI);
    ck_assert_msg(strstr(clf_last_error(), "failed earlier"), "%s", clf_last_error());
    ck_assert(now() - t0 < 1.0);
    free_bufs(b, n);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("mpi_fail");
    TCase *tc = tcase_create("fail");
    tcase_add_test(tc, test_device_failure);
    tcase_add_test(tc, test_stuck_rank);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_test_main(argc, argv, make_suite);
}

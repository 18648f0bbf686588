/* A rank that dies: the last rank calls _exit() before a collective, and every other rank's
 * collective fails with CLF_ERROR_TIMEOUT or CLF_ERROR_MPI within the communicator's timeout
 * (a short one here), then fails at once, and the communicator and fleet are released
 * without hanging. tests/mpi-run.sh runs this one with Open MPI's --enable-recovery (else
 * mpirun kills every rank when one dies) and, as mpirun's status then says nothing, takes
 * the verdict from the PASS lines the surviving ranks write to $CLF_TEST_RESULT. */
#include <mpi.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clfleet/mpi.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int rank;

static void fail(const char *what, clf_status st)
{
    fprintf(stderr, "FAIL: rank %d: %s: %s: %s\n", rank, what, clf_status_name(st),
            clf_last_error());
    _exit(1);
}

int main(int argc, char **argv)
{
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *want = getenv("CLF_TEST_NP"), *out = getenv("CLF_TEST_RESULT");
    if (!want || atoi(want) != size || !out) {
        fprintf(stderr, "FAIL: %d ranks, CLF_TEST_NP='%s', CLF_TEST_RESULT='%s' (run through "
                "tests/mpi-run.sh)\n", size, want ? want : "", out ? out : "");
        return 1;
    }
    clf_fleet_options fo = CLF_FLEET_OPTIONS_INIT;
    fo.devices = "type=cpu;platform=portable";
    clf_fleet *f = NULL;
    clf_status st = clf_fleet_create(&f, &fo);
    if (st != CLF_SUCCESS)
        fail("clf_fleet_create", st);
    const double timeout = 3.0;
    clf_comm_options o = CLF_COMM_OPTIONS_INIT;
    o.timeout_s = timeout;
    clf_comm *c = NULL;
    if ((st = clf_comm_create(&c, MPI_COMM_WORLD, f, &o)) != CLF_SUCCESS)
        fail("clf_comm_create", st);
    size_t n = clf_fleet_device_count(f) < 2 ? clf_fleet_device_count(f) : 2, count = 300000;
    clf_buffer *b[2] = {NULL, NULL};
    for (size_t d = 0; d < n; d++) {
        if ((st = clf_buffer_create(&b[d], f, d, count * 4, CLF_MEM_READ_WRITE)) != CLF_SUCCESS)
            fail("clf_buffer_create", st);
        float one = 1.0f;
        clf_buffer_fill(b[d], &one, 4, 0, count * 4);
    }
    if ((st = clf_comm_allreduce(c, b, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM)) != CLF_SUCCESS)
        fail("the first all-reduce", st);
    if (rank == size - 1)
        _exit(0); /* dies: no MPI_Finalize, no more messages */
    double t0 = now();
    st = clf_comm_allreduce(c, b, n, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM);
    double took = now() - t0;
    if (st != CLF_ERROR_TIMEOUT && st != CLF_ERROR_MPI)
        fail("the all-reduce with a dead rank", st);
    if (took > timeout * 2 + 5) {
        fprintf(stderr, "FAIL: rank %d: failed after %.1f s, the timeout is %.1f s\n", rank,
                took, timeout);
        _exit(1);
    }
    fprintf(stderr, "rank %d: %s after %.1f s: %s\n", rank, clf_status_name(st), took,
            clf_last_error());
    /* At once from now on, for every collective. */
    t0 = now();
    if ((st = clf_comm_broadcast(c, b, n, 64, 0, 0)) != CLF_ERROR_MPI || now() - t0 > 1)
        fail("a broadcast after the failure", st);
    if ((st = clf_comm_allgather(c, b, n, 1, 4)) != CLF_ERROR_MPI)
        fail("an all-gather after the failure", st);
    for (size_t d = 0; d < n; d++)
        clf_buffer_destroy(b[d]);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
    char line[64];
    int len = snprintf(line, sizeof line, "PASS rank %d\n", rank);
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line, (size_t)len) != len)
        return 1;
    close(fd);
    /* No MPI_Finalize: it could wait for the dead rank. */
    _exit(0);
}

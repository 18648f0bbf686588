/* Shared by the MPI layer's test programs (run by tests/mpi-run.sh under mpirun): MPI set-up,
 * the size check, the devices of each rank, and one verdict for every rank. */
#ifndef CLF_TESTS_MPI_COMMON_H
#define CLF_TESTS_MPI_COMMON_H

#include <mpi.h>

#include "../common.h"
#include "clfleet/mpi.h"

/* Each rank's PoCL devices (tests/mpi-run.sh: a pthread device and a basic one). */
#define MPI_TEST_DEVICES "type=cpu;platform=portable"

static int mpi_rank, mpi_size;

/* A fleet of this rank's test devices; fails the test on error. */
static inline clf_fleet *mpi_test_fleet(void)
{
    return test_fleet(MPI_TEST_DEVICES, 0);
}

/* A communicator over `f` with a short timeout (a failing test must not wait a minute). */
static inline clf_comm *mpi_test_comm(clf_fleet *f, double timeout_s)
{
    clf_comm_options o = CLF_COMM_OPTIONS_INIT;
    o.timeout_s = timeout_s;
    clf_comm *c = NULL;
    clf_status st = clf_comm_create(&c, MPI_COMM_WORLD, f, &o);
    ck_assert_msg(st == CLF_SUCCESS, "clf_comm_create: %s: %s", clf_status_name(st),
                  clf_last_error());
    return c;
}

/*
 * The whole program: MPI with MPI_THREAD_MULTIPLE, the size tests/mpi-run.sh asked for
 * ($CLF_TEST_NP; no launcher makes N jobs of size 1 pass), devices on every rank (else every
 * rank skips, or fails with CLFLEET_REQUIRE_DEVICES), the suite without fork, and one exit
 * status for all ranks (a failure on any rank fails all).
 */
static inline int mpi_test_main(int argc, char **argv, Suite *(*make)(void))
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    const char *want = getenv("CLF_TEST_NP");
    if (!want || atoi(want) != mpi_size) {
        fprintf(stderr, "FAIL: rank %d: MPI_COMM_WORLD has %d ranks, CLF_TEST_NP='%s' (run "
                "through tests/mpi-run.sh; does mpirun match the MPI this was built with?)\n",
                mpi_rank, mpi_size, want ? want : "");
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    int rc = test_probe_devices(MPI_TEST_DEVICES, 1), worst = 0;
    rc = rc < 0 ? 0 : rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != 0) {
        MPI_Finalize();
        return worst;
    }
    SRunner *sr = srunner_create(make());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, mpi_rank == 0 ? CK_NORMAL : CK_SILENT);
    int failed = srunner_ntests_failed(sr), any = 0;
    if (failed && mpi_rank != 0)
        srunner_print(sr, CK_NORMAL);
    srunner_free(sr);
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* CLF_TESTS_MPI_COMMON_H */

/* The communicator over fleets: creation (collective, failing on every rank when one rank
 * fails), the getters, destroy, and the node's devices shared among its ranks. Run by
 * tests/mpi-run.sh under mpirun -np 2 and -np 3. */
#include "common.h"

START_TEST(test_create)
{
    clf_fleet *f = mpi_test_fleet();
    clf_comm *c = mpi_test_comm(f, 20);
    ck_assert_int_eq(clf_comm_rank(c), mpi_rank);
    ck_assert_int_eq(clf_comm_size(c), mpi_size);
    ck_assert_ptr_eq(clf_comm_fleet(c), f);
    clf_comm_destroy(c);
    /* Not collective, and NULL is fine. */
    ck_assert_int_eq(clf_comm_rank(NULL), -1);
    ck_assert_int_eq(clf_comm_size(NULL), 0);
    ck_assert_ptr_null(clf_comm_fleet(NULL));
    clf_comm_destroy(NULL);
    /* Many in a row: each a duplicate of its own, released. */
    for (int i = 0; i < 20; i++) {
        c = mpi_test_comm(f, 20);
        clf_comm_destroy(c);
    }
    clf_fleet_destroy(f);
}
END_TEST

/* One rank without a fleet: every rank fails with its status, the message naming it. */
START_TEST(test_create_one_fails)
{
    clf_fleet *f = mpi_test_fleet();
    int bad = mpi_size - 1;
    clf_comm_options o = CLF_COMM_OPTIONS_INIT;
    o.timeout_s = 20;
    clf_comm *c = (clf_comm *)&o; /* must be set to NULL */
    clf_status st = clf_comm_create(&c, MPI_COMM_WORLD, mpi_rank == bad ? NULL : f, &o);
    ck_assert_int_eq(st, CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(c);
    char want[64];
    snprintf(want, sizeof want, "failed on rank %d", bad);
    ck_assert_msg(strstr(clf_last_error(), want) && strstr(clf_last_error(), "fleet is NULL"),
                  "message: %s", clf_last_error());

    /* Bad options on rank 0 only. */
    clf_comm_options b = CLF_COMM_OPTIONS_INIT;
    b.timeout_s = 20;
    if (mpi_rank == 0)
        b.version = 99;
    ck_assert_int_eq(clf_comm_create(&c, MPI_COMM_WORLD, f, &b), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "rank 0") && strstr(clf_last_error(), "version"),
                  "message: %s", clf_last_error());
    b.version = CLF_COMM_OPTIONS_VERSION;
    if (mpi_rank == mpi_size - 1)
        b.reserved[1] = 1;
    ck_assert_int_eq(clf_comm_create(&c, MPI_COMM_WORLD, f, &b), CLF_ERROR_INVALID_ARGUMENT);

    /* A bad $CLFLEET_MPI_TIMEOUT on one rank (read when timeout_s is 0), a chunk size over
     * 1 GiB on another. */
    b.reserved[1] = 0;
    b.timeout_s = 0;
    if (mpi_rank == 0)
        setenv("CLFLEET_MPI_TIMEOUT", "soon", 1);
    ck_assert_int_eq(clf_comm_create(&c, MPI_COMM_WORLD, f, &b), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "CLFLEET_MPI_TIMEOUT='soon'"), "message: %s",
                  clf_last_error());
    unsetenv("CLFLEET_MPI_TIMEOUT");
    b.timeout_s = 20;
    if (mpi_rank == mpi_size - 1)
        b.chunk_bytes = ((size_t)1 << 30) + 1;
    ck_assert_int_eq(clf_comm_create(&c, MPI_COMM_WORLD, f, &b), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(c);

    /* And after all that, a good one still works. */
    c = mpi_test_comm(f, 20);
    ck_assert_int_eq(clf_comm_size(c), mpi_size);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
}
END_TEST

/* The node's devices: this machine is one node with two PoCL root devices per process
 * (pthread, basic), the same on every rank; with as many devices as ranks each gets its own
 * (disjoint, in rank order), with fewer they are dealt round-robin. */
START_TEST(test_node_fleet)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = MPI_TEST_DEVICES;
    clf_fleet *all = test_fleet(MPI_TEST_DEVICES, 0);
    size_t n = clf_fleet_device_count(all);
    clf_fleet_destroy(all);

    clf_fleet *f = NULL;
    clf_status st = clf_comm_node_fleet(&f, MPI_COMM_WORLD, &o);
    ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
    size_t mine = clf_fleet_device_count(f);
    ck_assert_uint_ge(mine, 1);
    if (n >= (size_t)mpi_size) {
        ck_assert_uint_eq(mine, n * (size_t)(mpi_rank + 1) / (size_t)mpi_size -
                                    n * (size_t)mpi_rank / (size_t)mpi_size);
    } else {
        ck_assert_uint_eq(mine, 1);
    }
    /* Which device: its name, gathered; ranks r and r + n hold the same one (round-robin),
     * ranks below n distinct ones. */
    clf_device_info info;
    ck_assert_ok(clf_device_get_info(&info, f, 0));
    char *names = malloc((size_t)mpi_size * 256);
    ck_assert_ptr_nonnull(names);
    MPI_Allgather(info.name, 256, MPI_CHAR, names, 256, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < mpi_size; r++)
        for (int q = r + 1; q < mpi_size; q++) {
            int same = strcmp(names + 256 * r, names + 256 * q) == 0;
            if (n >= (size_t)mpi_size)
                ck_assert_msg(!same, "ranks %d and %d both have '%s'", r, q, names + 256 * r);
            else if ((size_t)q % n == (size_t)r % n)
                ck_assert_msg(same, "ranks %d and %d: '%s' and '%s'", r, q, names + 256 * r,
                              names + 256 * q);
        }
    free(names);
    clf_fleet_destroy(f);

    /* A selection that finds nothing fails on every rank. */
    o.devices = "type=cpu;platform=no-such-platform";
    ck_assert_int_eq(clf_comm_node_fleet(&f, MPI_COMM_WORLD, &o), CLF_ERROR_NO_DEVICE);
    ck_assert_ptr_null(f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("mpi_comm");
    TCase *tc = tcase_create("comm");
    tcase_add_test(tc, test_create);
    tcase_add_test(tc, test_create_one_fails);
    tcase_add_test(tc, test_node_fleet);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_test_main(argc, argv, make_suite);
}

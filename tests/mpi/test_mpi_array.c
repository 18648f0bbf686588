/* Distributed arrays across ranks (clf_comm_array_*): Jacobi steps (1D periodic, 2D 5-point)
 * over windows on every rank's devices, halos between ranks by MPI exchanged before each
 * step or after it (boundary strips first), written from and read to a root, against plain
 * C loops bit for bit; boxes crossing ranks; bad input on one rank failing every rank. Run
 * by tests/mpi-run.sh under mpirun -np 2 and -np 3. */
#include "common.h"

static const char SRC[] = TEST_CL_JACOBI;

enum { STEPS = 20 };

static clf_array *make(clf_comm *c, unsigned dims, size_t w, size_t h, int periodic)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = sizeof(float);
    d.dims = dims;
    d.shape[0] = w;
    d.shape[1] = h;
    d.halo_before = d.halo_after = 1;
    d.flags = periodic ? CLF_ARRAY_PERIODIC : 0;
    clf_array *a = NULL;
    clf_status st = clf_comm_array_create(&a, c, &d);
    ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
    /* This rank's parts: global units, contiguous; the ranks' windows tile the array. */
    size_t n = clf_array_part_count(a), first = 0, units = 0;
    for (size_t p = 0; p < n; p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        if (p == 0)
            first = pi.first;
        ck_assert_uint_eq(pi.first, first + units);
        units += pi.count;
    }
    unsigned long long mine[2] = {first, units}, *all = malloc(2 * (size_t)mpi_size * 16);
    MPI_Allgather(mine, 2, MPI_UNSIGNED_LONG_LONG, all, 2, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD);
    unsigned long long at = 0;
    for (int k = 0; k < mpi_size; k++) {
        ck_assert_uint_eq(all[2 * k], at);
        at += all[2 * k + 1];
    }
    ck_assert_uint_eq(at, dims == 1 ? w : h);
    free(all);
    return a;
}

static void jacobi(clf_comm *c, clf_program *p, unsigned dims, size_t w, size_t h,
                   int periodic, unsigned lflags)
{
    size_t n = w * h;
    int root = mpi_size - 1;
    float *x = jacobi_grid(n, lflags), *y = malloc(n * sizeof *y), *got = malloc(n * sizeof *x);
    clf_array *a = make(c, dims, w, h, periodic), *b = make(c, dims, w, h, periodic);
    ck_assert_ok(clf_comm_array_write(c, a, NULL, NULL, mpi_rank == 0 ? x : NULL, 0));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = dims == 1 ? "jac1p" : "jac2";
    d.dims = dims;
    d.global[0] = w;
    d.global[1] = h;
    d.flags = lflags;
    if (lflags & CLF_ARRAY_EXCHANGE_AFTER)
        ck_assert_ok(clf_comm_array_exchange(c, a));
    clf_array *in = a, *out = b;
    for (int k = 0; k < STEPS; k++) {
        clf_arg args[] = {CLF_ARRAY_IN(in), CLF_ARRAY_OUT(out)};
        clf_status st = clf_comm_array_launch(c, p, &d, args, 2);
        ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
        clf_array *t = in;
        in = out;
        out = t;
        jacobi_ref_step(&x, &y, dims, w, h, periodic);
    }
    memset(got, 0, n * sizeof *got);
    ck_assert_ok(clf_comm_array_read(c, in, NULL, NULL, mpi_rank == root ? got : NULL, root));
    for (size_t i = 0; mpi_rank == root && i < n; i++)
        expect(memcmp(&got[i], &x[i], sizeof *x) == 0,
               "%uD flags %u: element %zu: %.9g, expected %.9g", dims, lflags, i,
               (double)got[i], (double)x[i]);
    if (dims == 2) { /* a box across the ranks' windows */
        size_t o[3] = {3, h / 4, 0}, r[3] = {10, h / 2, 1};
        float *box = malloc(r[0] * r[1] * sizeof *box);
        ck_assert_ok(clf_comm_array_read(c, in, o, r, mpi_rank == 0 ? box : NULL, 0));
        for (size_t j = 0; mpi_rank == 0 && j < r[1]; j++)
            for (size_t i = 0; i < r[0]; i++)
                expect(memcmp(&box[j * r[0] + i], &x[(o[1] + j) * w + o[0] + i], 4) == 0,
                       "box (%zu, %zu)", i, j);
        /* And a box written from the last rank, read back whole. */
        for (size_t i = 0; i < r[0] * r[1]; i++)
            box[i] = (float)i;
        ck_assert_ok(clf_comm_array_write(c, in, o, r, mpi_rank == root ? box : NULL, root));
        ck_assert_ok(clf_comm_array_read(c, in, NULL, NULL, mpi_rank == root ? got : NULL,
                                         root));
        for (size_t j = 0; mpi_rank == root && j < h; j++)
            for (size_t i = 0; i < w; i++) {
                int inbox = i >= o[0] && i < o[0] + r[0] && j >= o[1] && j < o[1] + r[1];
                float want = inbox ? (float)((j - o[1]) * r[0] + i - o[0]) : x[j * w + i];
                expect(memcmp(&got[j * w + i], &want, 4) == 0, "written box (%zu, %zu)", i,
                       j);
            }
        free(box);
    }
    clf_array_destroy(a);
    clf_array_destroy(b);
    free(x);
    free(y);
    free(got);
}

START_TEST(jacobi_across_ranks)
{
    ck_assert_int_eq(mpi_size, atoi(getenv("CLF_TEST_NP")));
    clf_fleet *f = mpi_test_fleet();
    clf_comm *c = mpi_test_comm(f, 60);
    ck_assert_int_eq(clf_comm_size(c), mpi_size);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    for (unsigned lflags = CLF_ARRAY_EXCHANGE_BEFORE; lflags <= CLF_ARRAY_EXCHANGE_AFTER;
         lflags++) {
        jacobi(c, p, 1, 1000, 1, 1, lflags);
        jacobi(c, p, 2, 37, 101, 0, lflags);
    }
    clf_program_destroy(p);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(bad_input_on_one_rank)
{
    ck_assert_int_eq(mpi_size, atoi(getenv("CLF_TEST_NP")));
    clf_fleet *f = mpi_test_fleet();
    clf_comm *c = mpi_test_comm(f, 60);
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 100;
    clf_array *a = (clf_array *)&d;
    clf_status st = clf_comm_array_create(mpi_rank == 1 ? NULL : &a, c, &d); /* rank 1 only */
    ck_assert_int_eq(st, CLF_ERROR_NULL_POINTER);
    ck_assert(mpi_rank == 1 || a == NULL);
    ck_assert_msg(strstr(clf_last_error(), "rank 1"), "%s", clf_last_error());
    a = NULL;
    d.elem_size = 0; /* refused by every rank's clf_array_create */
    ck_assert_int_eq(clf_comm_array_create(&a, c, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.elem_size = 4;
    d.shape[0] = (size_t)mpi_size - 1; /* a rank without units */
    ck_assert_int_eq(clf_comm_array_create(&a, c, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.shape[0] = 100;
    d.dist = CLF_ARRAY_REPLICATED;
    ck_assert_int_eq(clf_comm_array_create(&a, c, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.dist = CLF_ARRAY_BLOCK;
    ck_assert_ok(clf_comm_array_create(&a, c, &d));
    float buf[100];
    ck_assert_int_eq(clf_comm_array_read(c, a, NULL, NULL, buf, mpi_rank == 0 ? 7 : 0),
                     CLF_ERROR_INVALID_ARGUMENT);
    size_t o[3] = {90, 0, 0}, r[3] = {20, 1, 1};
    ck_assert_int_eq(clf_comm_array_read(c, a, o, r, buf, 0), CLF_ERROR_OUT_OF_RANGE);
    /* An array of another kind on one rank. */
    clf_array_desc pd = CLF_ARRAY_DESC_INIT;
    pd.elem_size = 4;
    pd.shape[0] = 10;
    clf_array *plain = NULL;
    ck_assert_ok(clf_array_create(&plain, f, &pd));
    ck_assert_int_eq(clf_comm_array_exchange(c, mpi_rank == 0 ? plain : a),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_comm_array_exchange(c, a));
    /* Shapes or boxes that differ between ranks are refused on every rank. */
    clf_array *x = NULL;
    d.shape[0] = mpi_rank == 0 ? 100 : 99;
    ck_assert_int_eq(clf_comm_array_create(&x, c, &d), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "disagree on shape[0]"), "%s", clf_last_error());
    ck_assert_ptr_null(x);
    d.shape[0] = 100;
    r[0] = mpi_rank == 0 ? 10 : 11;
    o[0] = 0;
    ck_assert_int_eq(clf_comm_array_read(c, a, o, r, buf, 0), CLF_ERROR_INVALID_ARGUMENT);
    clf_array_destroy(plain);
    clf_array_destroy(a);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
}
END_TEST

/* Every device of rank 1 fails its kernels: the launch fails on every rank, naming rank 1. */
START_TEST(device_failure_on_one_rank)
{
    ck_assert_int_eq(mpi_size, atoi(getenv("CLF_TEST_NP")));
    if (mpi_rank == 1)
        setenv("CLFLEET_FAULT_INJECT", "device=*,call=enqueue,lost", 1);
    clf_fleet *f = mpi_test_fleet();
    unsetenv("CLFLEET_FAULT_INJECT");
    clf_comm *c = mpi_test_comm(f, 60);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    clf_array *a = make(c, 1, 1000, 1, 1), *b = make(c, 1, 1000, 1, 1);
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "jac1p";
    d.global[0] = 1000;
    d.flags = CLF_ARRAY_EXCHANGE_BEFORE;
    clf_arg args[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(b)};
    clf_status st = clf_comm_array_launch(c, p, &d, args, 2);
    ck_assert_msg((st == CLF_ERROR_OPENCL || st == CLF_ERROR_DEVICE_FAILED) &&
                      strstr(clf_last_error(), "rank 1") &&
                      strstr(clf_last_error(), "CL_DEVICE_NOT_AVAILABLE"),
                  "rank %d: %s: %s", mpi_rank, clf_status_name(st), clf_last_error());
    clf_array_destroy(a);
    clf_array_destroy(b);
    clf_program_destroy(p);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("mpi_array");
    TCase *tc = tcase_create("mpi_array");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, jacobi_across_ranks);
    tcase_add_test(tc, bad_input_on_one_rank);
    tcase_add_test(tc, device_failure_on_one_rank);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_test_main(argc, argv, make_suite);
}

/*
 * One table of bad arguments and ranges, driven through every call that runs a user kernel
 * (clf_launch, clf_launch_async, clf_kernel_enqueue, clf_array_launch, clf_taskq_submit/run,
 * clf_pipeline_create/run) and GEMM (clf_sgemm, for the rows that apply to it, gemm_applies()):
 * each row must fail with the same status from each call, cleanly (no crash, no abort inside
 * the driver, no success), as core/argcheck.c checks them all. One positive row per call
 * proves valid arguments still run, against plain C.
 */
#include "common.h"

#include "clfleet/blas.h"

#define N 64

static const char *SRC =
    "kernel void scale(global const float *in, global float *out, float f, local float *t)\n"
    "{\n"
    "    size_t i = get_global_id(0), l = get_local_id(0);\n"
    "    t[l] = in[i];\n"
    "    out[i] = t[l] * f;\n"
    "}\n"
    "kernel void iscale(global const float *in, global float *out, int f, local float *t)\n"
    "{\n"
    "    size_t i = get_global_id(0), l = get_local_id(0);\n"
    "    t[l] = in[i];\n"
    "    out[i] = t[l] * (float)f;\n"
    "}\n";

enum call { LAUNCH, LAUNCH_ASYNC, ENQUEUE, ARRAY, TASKQ, PIPELINE, GEMM, NCALLS };
static const char *const CALL_NAMES[] = {"clf_launch",         "clf_launch_async",
                                         "clf_kernel_enqueue", "clf_array_launch",
                                         "clf_taskq_submit",   "clf_pipeline_create",
                                         "clf_sgemm"};

enum row {
    ROW_OK,
    ROW_SCALAR_FOR_PTR,
    ROW_MEM_FOR_SCALAR,
    ROW_OUT_ON_CONST,
    ROW_SCALAR_SIZE,
    ROW_INT_FOR_FLOAT,
    ROW_FLOAT_FOR_INT,
    ROW_LOCAL_MEM,
    ROW_COUNT,
    ROW_RANGE_2D,
    ROW_RANGE_3D,
    ROW_LOCAL_LIMIT,
    NROWS
};
static const char *const ROW_NAMES[] = {
    "valid",       "scalar for pointer", "memory for scalar", "output on const",
    "scalar size", "int for float",      "float for int",     "too much local memory",
    "wrong count", "2-D range overflow", "3-D range overflow", "local size over the limit"};
static const clf_status WANT[] = {
    CLF_SUCCESS,                CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_INVALID_ARGUMENT,
    CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_INVALID_ARGUMENT,
    CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_INVALID_ARGUMENT,
    CLF_ERROR_SIZE_OVERFLOW,    CLF_ERROR_SIZE_OVERFLOW,    CLF_ERROR_INVALID_ARGUMENT};

/*
 * The rows GEMM can be given. clf_sgemm() runs no user kernel: it takes typed operands in its
 * C prototype, not clf_args, and chooses its kernels' ranges and local sizes itself. So:
 *  - valid: a GEMM that computes the same result (C = fval * in * I, checked against plain C);
 *  - 2-D range overflow: its "range" is the operands' extents; an extent past SIZE_MAX
 *    (m * lda) is refused with the same CLF_ERROR_SIZE_OVERFLOW;
 *  - scalar for pointer, memory for scalar, scalar size, int for float, float for int, wrong
 *    count: the prototype makes them compile errors (const float *, float, sgemm vs dgemm, a
 *    fixed arity); nothing reaches the library to check;
 *  - output on const: A and B are const in the prototype, and C is the one output;
 *  - too much local memory, local size over the limit, 3-D range (a work-group count): GEMM
 *    takes no local memory, local size or NDRange from the caller (clBLAST's tuned kernels).
 */
static int gemm_applies(enum row r)
{
    return r == ROW_OK || r == ROW_RANGE_2D;
}

/* Everything a row needs, for every call. */
typedef struct ctx {
    clf_fleet *f;
    clf_program *p;
    float in[N], out[N], ref[N];
    clf_buffer *bin, *bout;
    clf_array *ain, *aout;
} ctx;

static float fval = 3.0f;
static double dval = 3.0;
static int ival = 3;

/* The range of a row: dims, global, local. */
static void row_range(enum row r, unsigned *dims, size_t g[3], size_t l[3])
{
    *dims = 1;
    g[0] = N;
    g[1] = g[2] = 1;
    l[0] = 16;
    l[1] = l[2] = 1;
    if (r == ROW_RANGE_2D) { /* the product of the global sizes passes SIZE_MAX */
        *dims = 2;
        g[0] = SIZE_MAX / 2;
        g[1] = N;
        l[0] = 1;
    } else if (r == ROW_RANGE_3D) { /* 2^38 work-groups: PoCL counts them in 32 bits */
        *dims = 3;
        g[0] = g[1] = 65536;
        g[2] = N;
        l[0] = l[1] = l[2] = 1;
    } else if (r == ROW_LOCAL_LIMIT) { /* PoCL's CPU devices take at most 4096 */
        *dims = 2;
        g[0] = l[0] = 8192;
        g[1] = N;
        l[1] = 1;
    }
}

/* The arguments of call c in row r (*nargs: how many), the kernel in *kernel. */
static size_t row_args(ctx *x, enum call c, enum row r, clf_arg a[4], const char **kernel)
{
    clf_arg mem_in, mem_out;
    switch (c) {
    case ENQUEUE:
        mem_in = (clf_arg)CLF_BUF_IN(x->bin);
        mem_out = (clf_arg)CLF_BUF_OUT(x->bout);
        break;
    case ARRAY:
        mem_in = (clf_arg)CLF_ARRAY_IN(x->ain);
        mem_out = (clf_arg)CLF_ARRAY_OUT(x->aout);
        break;
    case TASKQ:
        mem_in = (clf_arg)CLF_WHOLE_IN(x->in, sizeof x->in);
        mem_out = (clf_arg)CLF_WHOLE_OUT(x->out, sizeof x->out);
        break;
    default: /* the launches; a pipeline's input and output are its own */
        mem_in = (clf_arg)CLF_IN(x->in, sizeof x->in, sizeof(float));
        mem_out = (clf_arg)CLF_OUT(x->out, sizeof x->out, sizeof(float));
        break;
    }
    a[0] = mem_in;
    a[1] = mem_out;
    a[2] = (clf_arg)CLF_SCALAR(&fval);
    a[3] = (clf_arg)CLF_LOCAL(16 * sizeof(float) * 4);
    *kernel = r == ROW_FLOAT_FOR_INT ? "iscale" : "scale";
    size_t n = 4;
    switch (r) {
    case ROW_SCALAR_FOR_PTR:
        a[c == PIPELINE ? 3 : 1] = (clf_arg)CLF_SCALAR(&fval);
        break;
    case ROW_MEM_FOR_SCALAR:
        a[2] = c == PIPELINE ? (clf_arg)CLF_BROADCAST(&fval, sizeof fval) : mem_in;
        break;
    case ROW_OUT_ON_CONST:
        a[0] = mem_out;
        break;
    case ROW_SCALAR_SIZE:
        a[2] = (clf_arg)CLF_SCALAR(&dval);
        break;
    case ROW_INT_FOR_FLOAT:
        a[2] = (clf_arg)CLF_SCALAR(&ival);
        break;
    case ROW_LOCAL_MEM:
        a[3] = (clf_arg)CLF_LOCAL((size_t)64 << 20);
        break;
    case ROW_COUNT:
        n = 3;
        break;
    default:
        break;
    }
    if (c == PIPELINE) { /* the extra arguments only */
        a[0] = a[2];
        a[1] = a[3];
        n -= 2;
    }
    return n;
}

static void check_out(const ctx *x, const float *got, const char *what)
{
    for (size_t i = 0; i < N; i++)
        expect(got[i] == x->ref[i], "%s: element %zu is %g, expected %g", what, i,
               (double)got[i], (double)x->ref[i]);
}

/* Row r through call c: its status; on success the output is checked. */
static clf_status run_row(ctx *x, enum call c, enum row r)
{
    clf_arg a[4];
    const char *kernel;
    size_t n = row_args(x, c, r, a, &kernel);
    unsigned dims;
    size_t g[3], l[3];
    row_range(r, &dims, g, l);
    memset(x->out, 0, sizeof x->out);
    clf_status st;
    float got[N] = {0};
    switch (c) {
    case LAUNCH:
    case LAUNCH_ASYNC: {
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = kernel;
        d.dims = dims;
        memcpy(d.global, g, sizeof g);
        memcpy(d.local, l, sizeof l);
        if (c == LAUNCH) {
            st = clf_launch(x->f, x->p, &d, a, n, NULL);
        } else {
            clf_event *e = NULL;
            st = clf_launch_async(x->f, x->p, &d, a, n, NULL, &e);
            if (st == CLF_SUCCESS) {
                st = clf_event_wait(e);
                clf_event_release(e);
            }
        }
        memcpy(got, x->out, sizeof got);
        break;
    }
    case ENQUEUE: {
        clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
        d.kernel = kernel;
        d.dims = dims;
        memcpy(d.global, g, sizeof g);
        memcpy(d.local, l, sizeof l);
        st = clf_kernel_run(x->f, x->p, 0, &d, a, n);
        if (st == CLF_SUCCESS)
            ck_assert_ok(clf_buffer_read(x->bout, 0, sizeof got, got));
        break;
    }
    case ARRAY: {
        clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
        d.kernel = kernel;
        d.dims = dims;
        memcpy(d.global, g, sizeof g);
        memcpy(d.local, l, sizeof l);
        st = clf_array_launch(x->f, x->p, &d, a, n);
        if (st == CLF_SUCCESS)
            ck_assert_ok(clf_array_read(x->aout, NULL, NULL, got));
        break;
    }
    case TASKQ: {
        clf_taskq *q = NULL;
        ck_assert_ok(clf_taskq_create(&q, x->f, x->p, NULL, 0));
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = kernel;
        d.dims = dims;
        memcpy(d.global, g, sizeof g);
        memcpy(d.local, l, sizeof l);
        st = clf_taskq_submit(q, &d, a, n, NULL);
        if (st == CLF_SUCCESS)
            st = clf_taskq_run(q, NULL);
        clf_taskq_destroy(q);
        memcpy(got, x->out, sizeof got);
        break;
    }
    case GEMM: {
        /* C (8 x 8) = fval * A * I with A = in as 8 x 8: C = fval * in, exactly (products by
         * 1 and 0, sums with 0). The overflow row: A of SIZE_MAX / 2 rows, whose extent
         * m * lda passes SIZE_MAX (refused before any pointer is read). */
        (void)n;
        float id[N] = {0};
        for (size_t i = 0; i < 8; i++)
            id[i * 8 + i] = 1.0f;
        size_t m = r == ROW_RANGE_2D ? SIZE_MAX / 2 : 8;
        st = clf_sgemm(x->f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, m, 8, 8, fval, x->in, 8,
                       id, 8, 0.0f, got, 8, NULL, NULL);
        break;
    }
    default: {
        clf_stage_desc d = CLF_STAGE_DESC_INIT;
        d.device = 0;
        d.program = x->p;
        d.kernel = kernel;
        d.in_bytes = d.out_bytes = sizeof x->in;
        d.dims = dims;
        memcpy(d.global, g, sizeof g);
        memcpy(d.local, l, sizeof l);
        d.args = a;
        d.nargs = n;
        clf_pipeline *pl = NULL;
        st = clf_pipeline_create(&pl, x->f, &d, 1, NULL);
        if (st == CLF_SUCCESS)
            st = clf_pipeline_run(pl, x->in, got, 1, NULL);
        clf_pipeline_destroy(pl);
        break;
    }
    }
    if (st == CLF_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "%s, %s", CALL_NAMES[c], ROW_NAMES[r]);
        check_out(x, got, what);
    }
    return st;
}

static ctx X;

static void setup(void)
{
    X.f = test_fleet(FLEET2, 0);
    ck_assert_ok(clf_program_build_source(&X.p, X.f, SRC, NULL));
    for (size_t i = 0; i < N; i++) {
        X.in[i] = (float)i * 0.5f;
        X.ref[i] = X.in[i] * fval;
    }
    ck_assert_ok(clf_buffer_create(&X.bin, X.f, 0, sizeof X.in, CLF_MEM_READ_WRITE));
    ck_assert_ok(clf_buffer_create(&X.bout, X.f, 0, sizeof X.in, CLF_MEM_READ_WRITE));
    ck_assert_ok(clf_buffer_write(X.bin, 0, sizeof X.in, X.in));
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = sizeof(float);
    d.dims = 1;
    d.shape[0] = N;
    ck_assert_ok(clf_array_create(&X.ain, X.f, &d));
    ck_assert_ok(clf_array_create(&X.aout, X.f, &d));
    ck_assert_ok(clf_array_write(X.ain, NULL, NULL, X.in));
}

static void teardown(void)
{
    clf_array_destroy(X.ain);
    clf_array_destroy(X.aout);
    clf_buffer_destroy(X.bin);
    clf_buffer_destroy(X.bout);
    clf_program_destroy(X.p);
    clf_fleet_destroy(X.f);
    memset(&X, 0, sizeof X);
}

/* Every row through every call: the same status from each, and a message naming the call. */
START_TEST(table)
{
    test_watchdog(120);
    for (int r = 0; r < NROWS; r++)
        for (int c = 0; c < NCALLS; c++) {
            /* A pipeline's extra arguments are values, local memory and broadcasts (read
             * only): none can be an output. */
            if (r == ROW_OUT_ON_CONST && c == PIPELINE)
                continue;
            if (c == GEMM && !gemm_applies((enum row)r))
                continue;
            clf_clear_error();
            clf_status st = run_row(&X, (enum call)c, (enum row)r);
            /* Built without clBLAST, a valid GEMM says so (its size checks come first). */
            clf_status want = c == GEMM && r == ROW_OK && !clf_blas_available()
                                  ? CLF_ERROR_UNSUPPORTED
                                  : WANT[r];
            ck_assert_msg(st == want, "%s, row '%s': %s, expected %s (%s)", CALL_NAMES[c],
                          ROW_NAMES[r], clf_status_name(st), clf_status_name(want),
                          clf_last_error());
            if (st != CLF_SUCCESS && c != LAUNCH_ASYNC && c != ARRAY)
                ck_assert_msg(strstr(clf_last_error(), CALL_NAMES[c]) ||
                                  strstr(clf_last_error(), "clf_taskq") ||
                                  strstr(clf_last_error(), "clf_pipeline"),
                              "%s, row '%s': the message does not name the call: %s",
                              CALL_NAMES[c], ROW_NAMES[r], clf_last_error());
        }
    test_watchdog_off();
}
END_TEST

/* A task that never ran because every device had failed reports a failure, not success;
 * an unknown kernel is refused at submission. */
START_TEST(task_never_ran)
{
    clf_fleet *f = test_fault_fleet(FLEET2, "device=*,call=enqueue,lost");
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    clf_taskq *q = NULL;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    clf_task_desc d = CLF_TASK_DESC_INIT;
    d.kernel = "scale";
    d.global[0] = N;
    clf_arg a[] = {CLF_WHOLE_IN(X.in, sizeof X.in), CLF_WHOLE_OUT(X.out, sizeof X.out),
                   CLF_SCALAR(&fval), CLF_LOCAL(N * sizeof(float))};
    size_t id;
    ck_assert_ok(clf_taskq_submit(q, &d, a, 4, &id));
    d.kernel = "no_such_kernel";
    ck_assert_status(clf_taskq_submit(q, &d, a, 4, NULL), CLF_ERROR_NOT_FOUND);
    /* A launch loses both devices. */
    clf_launch_desc ld = CLF_LAUNCH_DESC_INIT;
    ld.kernel = "scale";
    ld.global[0] = N;
    clf_arg la[] = {CLF_IN(X.in, sizeof X.in, sizeof(float)),
                    CLF_OUT(X.out, sizeof X.out, sizeof(float)), CLF_SCALAR(&fval),
                    CLF_LOCAL(N * sizeof(float))};
    ck_assert(clf_launch(f, p, &ld, la, 4, NULL) != CLF_SUCCESS);
    ck_assert(clf_device_is_failed(f, 0) && clf_device_is_failed(f, 1));
    ck_assert_status(clf_taskq_run(q, NULL), CLF_ERROR_DEVICE_FAILED);
    clf_task_info info;
    ck_assert_ok(clf_taskq_task_info(&info, q, id));
    ck_assert_uint_eq(info.runs, 0);
    ck_assert_msg(info.status != CLF_SUCCESS, "a task that never ran reports success");
    clf_taskq_destroy(q);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* A refusal names the macro the caller wrote and the one to write instead, from the same
 * family: a clf_array_launch() user is not told about CLF_BUF_IN, nor a clf_launch() user
 * about CLF_ARRAY_OUT (issue 29). */
static void expect_macros(enum call c, enum row r, clf_arg *a, size_t n, const char *used,
                          const char *instead, const char *foreign)
{
    clf_clear_error();
    clf_status st = CLF_SUCCESS;
    if (c == ARRAY) {
        clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
        d.kernel = "scale";
        d.global[0] = N;
        d.local[0] = 16;
        st = clf_array_launch(X.f, X.p, &d, a, n);
    } else if (c == ENQUEUE) {
        clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
        d.kernel = "scale";
        d.global[0] = N;
        d.local[0] = 16;
        st = clf_kernel_run(X.f, X.p, 0, &d, a, n);
    } else {
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "scale";
        d.global[0] = N;
        d.local[0] = 16;
        st = clf_launch(X.f, X.p, &d, a, n, NULL);
    }
    const char *e = clf_last_error();
    ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT, "%s, %s: %s (%s)", CALL_NAMES[c],
                  ROW_NAMES[r], clf_status_name(st), e);
    ck_assert_msg(strstr(e, used) && strstr(e, instead) && !strstr(e, foreign),
                  "%s: the message should name %s and %s, not %s: %s", CALL_NAMES[c], used,
                  instead, foreign, e);
}

START_TEST(names_the_callers_macro)
{
    clf_arg a[4];
    const char *kernel;
    /* An output on a const parameter. */
    size_t n = row_args(&X, ARRAY, ROW_OUT_ON_CONST, a, &kernel);
    expect_macros(ARRAY, ROW_OUT_ON_CONST, a, n, "CLF_ARRAY_OUT", "CLF_ARRAY_IN", "CLF_BUF");
    n = row_args(&X, ENQUEUE, ROW_OUT_ON_CONST, a, &kernel);
    expect_macros(ENQUEUE, ROW_OUT_ON_CONST, a, n, "CLF_BUF_OUT", "CLF_BUF_IN", "CLF_ARRAY");
    n = row_args(&X, LAUNCH, ROW_OUT_ON_CONST, a, &kernel);
    expect_macros(LAUNCH, ROW_OUT_ON_CONST, a, n, "CLF_OUT", "CLF_IN", "CLF_ARRAY");
    /* A read-only array or buffer on a parameter the kernel may write. */
    n = row_args(&X, ARRAY, ROW_OK, a, &kernel);
    a[1] = (clf_arg)CLF_ARRAY_IN(X.aout);
    expect_macros(ARRAY, ROW_OK, a, n, "CLF_ARRAY_IN", "CLF_ARRAY_INOUT", "CLF_BUF");
    n = row_args(&X, ENQUEUE, ROW_OK, a, &kernel);
    a[1] = (clf_arg)CLF_BUF_IN(X.bout);
    expect_macros(ENQUEUE, ROW_OK, a, n, "CLF_BUF_IN", "CLF_BUF_INOUT", "CLF_ARRAY");
}
END_TEST

/* clf_sgemm takes no user kernel: its own bad sizes are refused. */
/*
 * A launch without a local size keeps its kernel check's verdict (exec/check.c) for the next
 * launches with the same kernel and argument kinds: a later launch with a wrong scalar or a
 * value for a pointer must still be refused, and a program of the same source built again
 * (the verdict is keyed by the source's hash) still checked.
 */
START_TEST(kept_verdict_still_checks)
{
    test_watchdog(60);
    static const char *src =
        "kernel void axpy(global const float *x, global float *y, float a)\n"
        "{ size_t i = get_global_id(0); y[i] = a * x[i]; }\n";
    float x[N], y[N];
    for (size_t i = 0; i < N; i++)
        x[i] = (float)i;
    clf_program *p = NULL;
    for (int build = 0; build < 2; build++) {
        ck_assert_ok(clf_program_build_source(&p, X.f, src, NULL));
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "axpy";
        d.dims = 1;
        d.global[0] = N;
        for (int round = 0; round < 3; round++) { /* the second and third: the kept verdict */
            memset(y, 0, sizeof y);
            clf_arg ok[] = {CLF_IN(x, sizeof x, sizeof(float)), CLF_OUT(y, sizeof y, sizeof(float)),
                            CLF_SCALAR(&fval)};
            ck_assert_ok(clf_launch(X.f, p, &d, ok, 3, NULL));
            for (size_t i = 0; i < N; i++)
                ck_assert_float_eq(y[i], fval * x[i]);
            clf_arg dbl[] = {CLF_IN(x, sizeof x, sizeof(float)),
                             CLF_OUT(y, sizeof y, sizeof(float)), CLF_SCALAR(&dval)};
            clf_status st = clf_launch(X.f, p, &d, dbl, 3, NULL);
            ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT, "a double for a float: %s (%s)",
                          clf_status_name(st), clf_last_error());
            clf_arg ptr[] = {CLF_IN(x, sizeof x, sizeof(float)),
                             CLF_OUT(y, sizeof y, sizeof(float)),
                             CLF_IN(x, sizeof x, sizeof(float))};
            st = clf_launch(X.f, p, &d, ptr, 3, NULL);
            ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT, "memory for a scalar: %s (%s)",
                          clf_status_name(st), clf_last_error());
            st = clf_launch(X.f, p, &d, ok, 2, NULL);
            ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT, "two of three arguments: %s (%s)",
                          clf_status_name(st), clf_last_error());
        }
        clf_program_destroy(p);
    }
    test_watchdog_off();
}
END_TEST

START_TEST(gemm_sizes)
{
    float m[4] = {0};
    clf_status st = clf_sgemm(X.f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 2, 2, 2, 1.0f, m,
                              1, m, 2, 0.0f, m, 2, NULL, NULL);
    ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT || (!clf_blas_available() &&
                                                       st == CLF_ERROR_UNSUPPORTED),
                  "clf_sgemm with lda 1 < k 2: %s (%s)", clf_status_name(st), clf_last_error());
    st = clf_sgemm(X.f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, SIZE_MAX / 2, 4, 4, 1.0f, m,
                   4, m, 4, 0.0f, m, 4, NULL, NULL);
    ck_assert_msg(st == CLF_ERROR_SIZE_OVERFLOW || (!clf_blas_available() &&
                                                    st == CLF_ERROR_UNSUPPORTED),
                  "clf_sgemm with m * lda past SIZE_MAX: %s (%s)", clf_status_name(st),
                  clf_last_error());
}
END_TEST

int main(void)
{
    Suite *s = suite_create("argcheck");
    TCase *tc = tcase_create("argcheck");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, table);
    tcase_add_test(tc, task_never_ran);
    tcase_add_test(tc, gemm_sizes);
    tcase_add_test(tc, names_the_callers_macro);
    tcase_add_test(tc, kept_verdict_still_checks);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET2, 2);
}

/*
 * A corpus of kernels written after the patterns of well-known public OpenCL projects
 * (tests/corpus/; SOURCES.md there names the project each follows and why they are not
 * copies), each run unchanged through clf_launch() with every strategy on 1, 2 and
 * 3 devices and compared with the same kernel run by plain OpenCL on one device
 * (clCreateProgramWithSource and clEnqueueNDRangeKernel, no clfleet code in the way): the
 * independent reference. The launches describe their arguments as a user would
 * (partitioned, strided, with halos, broadcast, per group, reductions).
 *
 * The reference runs on a PoCL pthread device and the fleets on sub-devices of the same
 * kind: the same compiler and the same code, so float results are expected bit for bit
 * (compared exactly). The one exception is a float sum built from atomic_cmpxchg, whose
 * order of additions is unspecified even on one device: it is compared within the bound
 * of a reordered sum (see case_atomic_sum).
 *
 * Some kernels need what issue 28 added (branch `unchanged`): broadcasts of read-only
 * parameters not declared const, and get_global_size()/get_num_groups() in helper
 * functions. Their failure messages start by naming that feature, so that a regression
 * there is told from one in the split itself.
 */
#include "common.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <math.h>

#ifndef CORPUS_DIR
#error "CORPUS_DIR (the path of tests/corpus) must be defined by the build"
#endif

/* The fleets: one device, two sub-devices sharing a context, three of four with a context
 * each (in an order that is not the fleet's). */
static const size_t DEV1[] = {0};
static const fleet_cfg CFGS[] = {
    {FLEET2, 0, DEV1, 1, "1 device"},
    {FLEET2, 0, NULL, 2, "2 devices, shared context"},
    {FLEET4, 1, DEV3, 3, "3 of 4 devices, context per device"},
};
#define NCFGS (sizeof CFGS / sizeof CFGS[0])

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};
#define NSTRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])

/* What a case needs beyond plain splitting (issue 28, branch `unchanged`). */
enum {
    NEEDS_NONCONST_BROADCAST = 1u << 0, /* a broadcast parameter not declared const */
    NEEDS_SIZE_IN_HELPERS = 1u << 1     /* get_global_size/get_num_groups in a helper */
};

#define MAX_RESULTS 8

/* One output of a case: the reference run's copy, compared with every fleet run's. */
typedef struct result {
    const char *name;
    void *ref;
    size_t bytes;
    double tol; /* < 0: bit for bit; else floats within tol of each other */
} result;

/* Runs a case's launches: through plain OpenCL (the reference) or through a fleet. */
typedef struct runner {
    int plain;
    /* plain OpenCL */
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    /* the fleet */
    const fleet_cfg *cfg;
    clf_fleet *f;
    clf_program *p;
    clf_strategy strategy;
    /* the case's outputs */
    const char *case_name;
    unsigned needs;
    size_t nres;
    result res[MAX_RESULTS];
} runner;

/* The source of a corpus file; free(). */
static char *read_corpus(const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, file);
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    ck_assert(fseek(fp, 0, SEEK_END) == 0);
    long n = ftell(fp);
    ck_assert(n >= 0 && fseek(fp, 0, SEEK_SET) == 0);
    char *s = malloc((size_t)n + 1);
    ck_assert(s);
    ck_assert_msg(fread(s, 1, (size_t)n, fp) == (size_t)n, "cannot read %s", path);
    s[n] = '\0';
    fclose(fp);
    return s;
}

/* The feature of issue 28 a case relies on, for its failure messages. */
static const char *needs_note(unsigned needs)
{
    if (needs == (NEEDS_NONCONST_BROADCAST | NEEDS_SIZE_IN_HELPERS))
        return "[uses non-const broadcasts, get_global_size/get_num_groups in helpers (issue 28)] ";
    if (needs & NEEDS_NONCONST_BROADCAST)
        return "[uses a broadcast of a parameter not declared const (issue 28)] ";
    if (needs & NEEDS_SIZE_IN_HELPERS)
        return "[uses get_global_size/get_num_groups in helper functions (issue 28)] ";
    return "";
}

/* clf_last_error() cut to a length Check can carry (a build log can exceed its message
 * limit, which ends the whole run), newlines made spaces. */
static const char *trunc_err(void)
{
    static char buf[700];
    snprintf(buf, sizeof buf, "%s", clf_last_error());
    for (char *c = buf; *c; c++)
        if (*c == '\n')
            *c = ' ';
    return buf;
}

/* ---- the plain OpenCL reference --------------------------------------------------------- */

#define CL_OK(call)                                                                                \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        ck_assert_msg(e_ == CL_SUCCESS, "%s: %s failed: %d", r->case_name, #call, (int)e_);        \
    } while (0)

/* The first PoCL pthread device: the root device the fleets' sub-devices come from. */
static cl_device_id reference_device(void)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    ck_assert(clGetPlatformIDs(16, plats, &np) == CL_SUCCESS);
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!strstr(name, "Portable"))
            continue;
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 16, devs, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            char dn[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dn, dn, NULL);
            if (!strncmp(dn, "pthread", 7))
                return devs[d];
        }
    }
    ck_abort_msg("no PoCL pthread device for the plain OpenCL reference");
    return NULL;
}

static void plain_open(runner *r, const char *src)
{
    cl_int e;
    cl_device_id dev = reference_device();
    r->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    CL_OK(e);
    r->q = clCreateCommandQueueWithProperties(r->ctx, dev, NULL, &e);
    CL_OK(e);
    r->prog = clCreateProgramWithSource(r->ctx, 1, &src, NULL, &e);
    CL_OK(e);
    e = clBuildProgram(r->prog, 1, &dev, NULL, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(r->prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        ck_abort_msg("%s: plain OpenCL build failed (%d): %s", r->case_name, (int)e, log);
    }
}

static void plain_close(runner *r)
{
    clReleaseProgram(r->prog);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

/* The identity of a reduction, as a user sets the buffer before a plain OpenCL launch. */
static void reduce_identity(void *buf, const clf_arg *a)
{
    for (size_t k = 0; k < a->size; k++) {
        int lo = a->op == CLF_REDUCE_MAX, one = a->op == CLF_REDUCE_PROD,
            hi = a->op == CLF_REDUCE_MIN;
        switch (a->type) {
        case CLF_TYPE_INT32:
            ((int32_t *)buf)[k] = hi ? INT32_MAX : lo ? INT32_MIN : one;
            break;
        case CLF_TYPE_UINT32:
            ((uint32_t *)buf)[k] = hi ? UINT32_MAX : lo ? 0u : (uint32_t)one;
            break;
        case CLF_TYPE_INT64:
            ((int64_t *)buf)[k] = hi ? INT64_MAX : lo ? INT64_MIN : one;
            break;
        case CLF_TYPE_FLOAT:
            ((float *)buf)[k] = hi ? INFINITY : lo ? -INFINITY : (float)one;
            break;
        default:
            ((double *)buf)[k] = hi ? INFINITY : lo ? -INFINITY : (double)one;
            break;
        }
    }
}

/* One launch the way plain OpenCL does it on one device: every array whole in a buffer
 * (outputs start from the host's contents, as CL_MEM_COPY_HOST_PTR gives), the NDRange
 * enqueued at once, the written arrays read back. */
static void plain_launch(runner *r, const clf_launch_desc *d, const clf_arg *args, size_t n)
{
    cl_int e;
    cl_kernel k = clCreateKernel(r->prog, d->kernel, &e);
    CL_OK(e);
    cl_mem mem[16] = {0};
    ck_assert(n <= 16);
    for (size_t i = 0; i < n; i++) {
        const clf_arg *a = &args[i];
        switch (a->kind) {
        case CLF_ARG_KIND_SCALAR:
            CL_OK(clSetKernelArg(k, (cl_uint)i, a->size, a->host));
            break;
        case CLF_ARG_KIND_LOCAL:
            CL_OK(clSetKernelArg(k, (cl_uint)i, a->size, NULL));
            break;
        case CLF_ARG_KIND_REDUCE: {
            size_t bytes = a->size * clf_type_size((clf_type)a->type);
            void *init = malloc(bytes);
            ck_assert(init);
            reduce_identity(init, a);
            mem[i] =
                clCreateBuffer(r->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, init, &e);
            free(init);
            CL_OK(e);
            CL_OK(clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &mem[i]));
            break;
        }
        default:
            mem[i] = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, a->size,
                                    a->host, &e);
            CL_OK(e);
            CL_OK(clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &mem[i]));
            break;
        }
    }
    size_t global[3], local[3];
    int has_local = 0;
    for (unsigned j = 0; j < d->dims; j++) {
        global[j] = d->global[j];
        local[j] = d->local[j];
        has_local |= local[j] != 0;
    }
    CL_OK(clEnqueueNDRangeKernel(r->q, k, d->dims, NULL, global, has_local ? local : NULL, 0, NULL,
                                 NULL));
    for (size_t i = 0; i < n; i++) {
        const clf_arg *a = &args[i];
        if (a->kind == CLF_ARG_KIND_OUT || a->kind == CLF_ARG_KIND_INOUT ||
            a->kind == CLF_ARG_KIND_OUT_PER_GROUP)
            CL_OK(clEnqueueReadBuffer(r->q, mem[i], CL_TRUE, 0, a->size, a->host, 0, NULL, NULL));
        else if (a->kind == CLF_ARG_KIND_REDUCE)
            CL_OK(clEnqueueReadBuffer(r->q, mem[i], CL_TRUE, 0,
                                      a->size * clf_type_size((clf_type)a->type), a->host, 0, NULL,
                                      NULL));
    }
    CL_OK(clFinish(r->q));
    for (size_t i = 0; i < n; i++)
        if (mem[i])
            clReleaseMemObject(mem[i]);
    clReleaseKernel(k);
}

/* ---- the fleet ------------------------------------------------------------------------- */

static void fleet_launch(runner *r, const clf_launch_desc *desc, const clf_arg *args, size_t n)
{
    clf_launch_desc d = *desc;
    d.strategy = r->strategy;
    d.devices = r->cfg->devices;
    d.num_devices = r->cfg->devices ? r->cfg->ndev : 0;
    clf_launch_report rep;
    clf_status st = clf_launch(r->f, r->p, &d, args, n, &rep);
    expect(st == CLF_SUCCESS, "%s%s: %s, %s: launch of %s: %s: %s", needs_note(r->needs),
           r->case_name, r->cfg->label, clf_strategy_name(r->strategy), d.kernel,
           clf_status_name(st), trunc_err());
    expect(r->strategy == CLF_STRATEGY_AUTO || rep.strategy == r->strategy,
           "%s: %s: asked for %s, ran %s", r->case_name, r->cfg->label,
           clf_strategy_name(r->strategy), clf_strategy_name(rep.strategy));
    expect(rep.done_units == rep.total_units, "%s: %s, %s: %s did %llu of %llu units", r->case_name,
           r->cfg->label, clf_strategy_name(r->strategy), d.kernel,
           (unsigned long long)rep.done_units, (unsigned long long)rep.total_units);
}

/* ---- what the cases call --------------------------------------------------------------- */

/* Launch kernel over the range in desc with args, the case's way (plain or fleet). */
static void launch(runner *r, const clf_launch_desc *desc, const clf_arg *args, size_t n)
{
    if (r->plain)
        plain_launch(r, desc, args, n);
    else
        fleet_launch(r, desc, args, n);
}

/* A 1-D or 2-D launch description (local all 0: the implementation's choice). */
static clf_launch_desc desc_of(const char *kernel, unsigned dims, size_t g0, size_t g1, size_t l0,
                               size_t l1, unsigned split_dim)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = kernel;
    d.dims = dims;
    d.global[0] = g0;
    d.global[1] = dims > 1 ? g1 : 1;
    d.local[0] = l0;
    d.local[1] = dims > 1 ? l1 : (l0 ? 1 : 0);
    d.split_dim = split_dim;
    return d;
}

/*
 * An output of the case after its launches: the reference run keeps a copy, every fleet
 * run must match it, bit for bit (tol < 0) or, for floats, within tol.
 */
static void check_result(runner *r, const char *name, const void *data, size_t bytes, double tol)
{
    if (r->plain) {
        ck_assert(r->nres < MAX_RESULTS);
        result *s = &r->res[r->nres++];
        s->name = name;
        s->bytes = bytes;
        s->tol = tol;
        s->ref = malloc(bytes);
        ck_assert(s->ref);
        memcpy(s->ref, data, bytes);
        return;
    }
    const result *s = NULL;
    for (size_t i = 0; i < r->nres; i++)
        if (!strcmp(r->res[i].name, name))
            s = &r->res[i];
    ck_assert_msg(s && s->bytes == bytes, "%s: no reference for %s", r->case_name, name);
    if (s->tol < 0) {
        if (memcmp(data, s->ref, bytes)) {
            size_t b = 0;
            while (((const unsigned char *)data)[b] == ((const unsigned char *)s->ref)[b])
                b++;
            ck_abort_msg("%s%s: %s, %s: %s differs from plain OpenCL on one device from byte "
                         "%zu of %zu (element %zu of 4 bytes)",
                         needs_note(r->needs), r->case_name, r->cfg->label,
                         clf_strategy_name(r->strategy), name, b, bytes, b / 4);
        }
        return;
    }
    const float *got = data, *want = s->ref;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        expect(fabs((double)got[i] - (double)want[i]) <= tol,
               "%s: %s, %s: %s[%zu] = %.9g, plain OpenCL %.9g (tolerance %g)", r->case_name,
               r->cfg->label, clf_strategy_name(r->strategy), name, i, (double)got[i],
               (double)want[i], tol);
}

/* Test data: n floats in [-8, 8) in steps of 1/64, from salt. */
static float *fill_floats(size_t n, uint64_t salt)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    ck_assert(x);
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (salt * 0x100000001b3ull) ^ n;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)(xorshift64(&s) % 1024) - 512) / 64.0f;
    return x;
}

/* ---- the cases ------------------------------------------------------------------------- */

/* The BabelStream pattern: copy, scale, add, triad partitioned; the dot product strides
 * through whole (broadcast, const) arrays by get_global_size(0), one sum per group. */
static void case_stream(runner *r)
{
    const size_t n = 4096, local = 64, groups = 8;
    const int array_size = (int)n;
    float *a = fill_floats(n, 1), *b = fill_floats(n, 2), *c = fill_floats(n, 3);
    float sums[8];
    memset(sums, 0, sizeof sums);
    clf_launch_desc d = desc_of("vcopy", 1, n, 0, 0, 0, CLF_SPLIT_DEFAULT);
    clf_arg copy[] = {CLF_IN(a, n * 4, 4), CLF_OUT(c, n * 4, 4)};
    launch(r, &d, copy, 2);
    d.kernel = "vscale";
    clf_arg mul[] = {CLF_OUT(b, n * 4, 4), CLF_IN(c, n * 4, 4)};
    launch(r, &d, mul, 2);
    d.kernel = "vsum";
    clf_arg add[] = {CLF_IN(a, n * 4, 4), CLF_IN(b, n * 4, 4), CLF_OUT(c, n * 4, 4)};
    launch(r, &d, add, 3);
    d.kernel = "vtriad";
    clf_arg triad[] = {CLF_OUT(a, n * 4, 4), CLF_IN(b, n * 4, 4), CLF_IN(c, n * 4, 4)};
    launch(r, &d, triad, 3);
    clf_launch_desc dd = desc_of("vdot", 1, local * groups, 0, local, 0, CLF_SPLIT_DEFAULT);
    clf_arg dot[] = {CLF_BROADCAST(a, n * 4), CLF_BROADCAST(b, n * 4),
                     CLF_OUT_PER_GROUP(sums, sizeof sums, 4), CLF_LOCAL(local * 4),
                     CLF_SCALAR(&array_size)};
    launch(r, &dd, dot, 5);
    check_result(r, "z of vtriad", a, n * 4, -1);
    check_result(r, "dst of vscale", b, n * 4, -1);
    check_result(r, "z of vsum", c, n * 4, -1);
    check_result(r, "group_sums", sums, sizeof sums, -1);
    free(a);
    free(b);
    free(c);
}

/* The two-per-item reduction: each group reads 2 * local elements from its group id, so a
 * work-item's unit of the input is 2 elements (8 bytes); one partial sum per group. */
static void case_reduce(runner *r)
{
    const size_t local = 64, items = 2048, groups = items / local;
    const unsigned n = (unsigned)(2 * items);
    uint32_t *in = malloc(n * 4), out[32];
    ck_assert(in);
    for (size_t i = 0; i < n; i++)
        in[i] = lowbias32((uint32_t)i) >> 8;
    memset(out, 0, sizeof out);
    clf_launch_desc d = desc_of("sum_pairs", 1, items, 0, local, 0, CLF_SPLIT_DEFAULT);
    clf_arg args[] = {CLF_IN(in, (size_t)n * 4, 8), CLF_OUT_PER_GROUP(out, groups * 4, 4),
                      CLF_LOCAL(local * 4), CLF_SCALAR(&n)};
    launch(r, &d, args, 4);
    check_result(r, "partial", out, sizeof out, -1);
    free(in);
}

/* Histogram: local atomics, then global atomic_add into a summed reduction; and a global
 * minimum and maximum with atomic_min/atomic_max into two reductions. */
static void case_histogram(runner *r)
{
    const size_t n = 8192, local = 64, m = 5000;
    unsigned char *data = malloc(n);
    int32_t *vals = malloc(m * 4);
    ck_assert(data && vals);
    uint64_t s = 7;
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)(xorshift64(&s) % 251 + (i & 3));
    for (size_t i = 0; i < m; i++)
        vals[i] = (int32_t)(xorshift64(&s) % 2000001) - 1000000;
    uint32_t bins[256];
    for (size_t i = 0; i < 256; i++)
        bins[i] = 0;
    clf_launch_desc d = desc_of("hist256", 1, n, 0, local, 0, CLF_SPLIT_DEFAULT);
    clf_arg args[] = {CLF_IN(data, n, 1), CLF_LOCAL(256 * 4),
                      CLF_REDUCE(bins, 256, CLF_TYPE_UINT32, CLF_REDUCE_SUM)};
    launch(r, &d, args, 3);
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    clf_launch_desc dm = desc_of("extremes", 1, m, 0, 0, 0, CLF_SPLIT_DEFAULT);
    clf_arg margs[] = {CLF_IN(vals, m * 4, 4), CLF_REDUCE(&mn, 1, CLF_TYPE_INT32, CLF_REDUCE_MIN),
                       CLF_REDUCE(&mx, 1, CLF_TYPE_INT32, CLF_REDUCE_MAX)};
    launch(r, &dm, margs, 3);
    if (r->plain) { /* the reference itself, against plain C */
        uint32_t want[256] = {0};
        int32_t wmn = INT32_MAX, wmx = INT32_MIN;
        for (size_t i = 0; i < n; i++)
            want[data[i]]++;
        for (size_t i = 0; i < m; i++) {
            wmn = vals[i] < wmn ? vals[i] : wmn;
            wmx = vals[i] > wmx ? vals[i] : wmx;
        }
        ck_assert_msg(!memcmp(want, bins, sizeof want), "plain OpenCL histogram is wrong");
        ck_assert_msg(mn == wmn && mx == wmx, "plain OpenCL min/max %d %d, want %d %d", mn, mx, wmn,
                      wmx);
    }
    check_result(r, "bins", bins, sizeof bins, -1);
    check_result(r, "lowest", &mn, 4, -1);
    check_result(r, "highest", &mx, 4, -1);
    free(data);
    free(vals);
}

/*
 * A float sum by atomic_cmpxchg: the order of the additions is unspecified on one device
 * already, and the fleet adds the devices' partial sums on the host. Any order of
 * summation of n terms is within (n - 1) * u * sum|x_i| of the exact sum (u = 2^-24, the
 * unit roundoff of float), so two orders are within twice that of each other.
 */
static void case_atomic_sum(runner *r)
{
    const size_t n = 4096;
    float *x = fill_floats(n, 9), sum = 0.0f;
    double abs_sum = 0;
    for (size_t i = 0; i < n; i++)
        abs_sum += (double)x[i] * x[i];
    clf_launch_desc d = desc_of("sum_squares", 1, n, 0, 0, 0, CLF_SPLIT_DEFAULT);
    clf_arg args[] = {CLF_IN(x, n * 4, 4), CLF_REDUCE(&sum, 1, CLF_TYPE_FLOAT, CLF_REDUCE_SUM)};
    launch(r, &d, args, 2);
    double tol = 2.0 * (double)(n - 1) * ldexp(1.0, -24) * abs_sum;
    if (r->plain)
        ck_assert_msg(fabs(sum - abs_sum) <= tol, "plain OpenCL sum %.9g, want %.9g", (double)sum,
                      abs_sum);
    check_result(r, "total", &sum, 4, tol);
    free(x);
}

/* gemm (PolyBench pattern), 2-D, B not const: split by rows (A and C by rows, B broadcast) or by
 * columns (B and C by columns, strided; A broadcast). */
static void gemm(runner *r, int by_columns)
{
    const int ni = 48, nj = 40, nk = 36;
    const float alpha = 1.5f, beta = 0.75f;
    float *a = fill_floats((size_t)ni * nk, 11), *b = fill_floats((size_t)nk * nj, 12),
          *c = fill_floats((size_t)ni * nj, 13);
    const size_t sa = (size_t)ni * nk * 4, sb = (size_t)nk * nj * 4, sc = (size_t)ni * nj * 4;
    clf_launch_desc d = desc_of("gemm", 2, (size_t)nj, (size_t)ni, 0, 0,
                                by_columns ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DIM(1));
    clf_arg rows[] = {CLF_IN(a, sa, (size_t)nk * 4),
                      CLF_BROADCAST(b, sb),
                      CLF_INOUT(c, sc, (size_t)nj * 4),
                      CLF_SCALAR(&alpha),
                      CLF_SCALAR(&beta),
                      CLF_SCALAR(&ni),
                      CLF_SCALAR(&nj),
                      CLF_SCALAR(&nk)};
    clf_arg cols[] = {CLF_BROADCAST(a, sa),
                      CLF_IN_STRIDED(b, sb, 4, (size_t)nj * 4),
                      CLF_INOUT_STRIDED(c, sc, 4, (size_t)nj * 4),
                      CLF_SCALAR(&alpha),
                      CLF_SCALAR(&beta),
                      CLF_SCALAR(&ni),
                      CLF_SCALAR(&nj),
                      CLF_SCALAR(&nk)};
    float *c0 = malloc(sc);
    ck_assert(c0);
    memcpy(c0, c, sc);
    launch(r, &d, by_columns ? cols : rows, 8);
    if (r->plain) /* the reference itself, loosely, against plain C in double */
        for (int i = 0; i < ni; i++)
            for (int j = 0; j < nj; j++) {
                double want = beta * (double)c0[i * nj + j], mag = fabs(want);
                for (int k = 0; k < nk; k++) {
                    want += alpha * (double)a[i * nk + k] * b[k * nj + j];
                    mag += fabs(alpha * (double)a[i * nk + k] * b[k * nj + j]);
                }
                ck_assert_msg(fabs(c[i * nj + j] - want) <= 1e-5 * mag + 1e-6,
                              "plain OpenCL gemm: c[%d][%d] = %g, want %g", i, j,
                              (double)c[i * nj + j], want);
            }
    free(c0);
    check_result(r, "c", c, sc, -1);
    free(a);
    free(b);
    free(c);
}

static void case_gemm_rows(runner *r)
{
    gemm(r, 0);
}

static void case_gemm_columns(runner *r)
{
    gemm(r, 1);
}

/* atax (PolyBench pattern), two kernels: A by rows with x broadcast, then A by columns (strided)
 * with tmp broadcast; neither broadcast is const. */
static void case_atax(runner *r)
{
    const int nx = 64, ny = 48;
    float *A = fill_floats((size_t)nx * ny, 21), *x = fill_floats((size_t)ny, 22);
    float *tmp = calloc((size_t)nx, 4), *y = calloc((size_t)ny, 4);
    ck_assert(tmp && y);
    const size_t sa = (size_t)nx * ny * 4;
    clf_launch_desc d = desc_of("atax_rows", 1, (size_t)nx, 0, 0, 0, CLF_SPLIT_DEFAULT);
    clf_arg k1[] = {CLF_IN(A, sa, (size_t)ny * 4), CLF_BROADCAST(x, (size_t)ny * 4),
                    CLF_INOUT(tmp, (size_t)nx * 4, 4), CLF_SCALAR(&nx), CLF_SCALAR(&ny)};
    launch(r, &d, k1, 5);
    d = desc_of("atax_cols", 1, (size_t)ny, 0, 0, 0, CLF_SPLIT_DEFAULT);
    clf_arg k2[] = {CLF_IN_STRIDED(A, sa, 4, (size_t)ny * 4), CLF_INOUT(y, (size_t)ny * 4, 4),
                    CLF_BROADCAST(tmp, (size_t)nx * 4), CLF_SCALAR(&nx), CLF_SCALAR(&ny)};
    launch(r, &d, k2, 5);
    check_result(r, "t", tmp, (size_t)nx * 4, -1);
    check_result(r, "y", y, (size_t)ny * 4, -1);
    free(A);
    free(x);
    free(tmp);
    free(y);
}

/* A 3x3 convolution (PolyBench pattern): A with a halo of one row (split by rows) or one
 * column (split by columns, strided); B keeps its unwritten border (preserved). */
static void conv2d(runner *r, int by_columns)
{
    const int ni = 50, nj = 37;
    const size_t bytes = (size_t)ni * nj * 4, pitch = (size_t)nj * 4;
    float *A = fill_floats((size_t)ni * nj, 31), *B = fill_floats((size_t)ni * nj, 32);
    clf_launch_desc d = desc_of("conv3x3", 2, (size_t)nj, (size_t)ni, 0, 0,
                                by_columns ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DIM(1));
    clf_arg rows[] = {CLF_IN_HALO(A, bytes, pitch, 1, 1), CLF_OUT_PRESERVE(B, bytes, pitch),
                      CLF_SCALAR(&ni), CLF_SCALAR(&nj)};
    clf_arg cols[] = {CLF_IN_STRIDED_HALO(A, bytes, 4, pitch, 1, 1),
                      CLF_INOUT_STRIDED(B, bytes, 4, pitch), CLF_SCALAR(&ni), CLF_SCALAR(&nj)};
    launch(r, &d, by_columns ? cols : rows, 4);
    check_result(r, "out", B, bytes, -1);
    free(A);
    free(B);
}

static void case_conv2d_rows(runner *r)
{
    conv2d(r, 0);
}

static void case_conv2d_columns(runner *r)
{
    conv2d(r, 1);
}

/* jacobi-2d (PolyBench pattern): four time steps of two kernels each, a 5-point stencil with a halo
 * and a copy back, the borders preserved; split by rows or by columns. */
static void jacobi2d(runner *r, int by_columns)
{
    const int n = 40, steps = 4;
    const size_t bytes = (size_t)n * n * 4, pitch = (size_t)n * 4;
    float *A = fill_floats((size_t)n * n, 41), *B = fill_floats((size_t)n * n, 42);
    clf_launch_desc d1 = desc_of("jacobi_avg", 2, (size_t)n, (size_t)n, 0, 0,
                                 by_columns ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DIM(1));
    clf_launch_desc d2 = d1;
    d2.kernel = "jacobi_copy";
    clf_arg k1r[] = {CLF_IN_HALO(A, bytes, pitch, 1, 1), CLF_OUT_PRESERVE(B, bytes, pitch),
                     CLF_SCALAR(&n)};
    clf_arg k2r[] = {CLF_OUT_PRESERVE(A, bytes, pitch), CLF_IN(B, bytes, pitch), CLF_SCALAR(&n)};
    clf_arg k1c[] = {CLF_IN_STRIDED_HALO(A, bytes, 4, pitch, 1, 1),
                     CLF_INOUT_STRIDED(B, bytes, 4, pitch), CLF_SCALAR(&n)};
    clf_arg k2c[] = {CLF_INOUT_STRIDED(A, bytes, 4, pitch), CLF_IN_STRIDED(B, bytes, 4, pitch),
                     CLF_SCALAR(&n)};
    for (int t = 0; t < steps; t++) {
        launch(r, &d1, by_columns ? k1c : k1r, 3);
        launch(r, &d2, by_columns ? k2c : k2r, 3);
    }
    check_result(r, "a", A, bytes, -1);
    check_result(r, "b", B, bytes, -1);
    free(A);
    free(B);
}

static void case_jacobi2d_rows(runner *r)
{
    jacobi2d(r, 0);
}

static void case_jacobi2d_columns(runner *r)
{
    jacobi2d(r, 1);
}

/* The tiled matrix product: 2-D group ids and local tiles; split by rows of C (A by
 * rows, B broadcast) or by columns (B and C strided, A broadcast); neither is const. */
static void matmul(runner *r, int by_columns)
{
    const int hA = 48, wA = 32, wB = 40;
    const size_t sa = (size_t)hA * wA * 4, sb = (size_t)wA * wB * 4, sc = (size_t)hA * wB * 4;
    float *A = fill_floats((size_t)hA * wA, 51), *B = fill_floats((size_t)wA * wB, 52);
    float *C = calloc((size_t)hA * wB, 4);
    ck_assert(C);
    clf_launch_desc d = desc_of("matmul_tiled", 2, (size_t)wB, (size_t)hA, 8, 8,
                                by_columns ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DIM(1));
    clf_arg rows[] = {CLF_SCALAR(&wA), CLF_SCALAR(&wB), CLF_IN(A, sa, (size_t)wA * 4),
                      CLF_BROADCAST(B, sb), CLF_OUT(C, sc, (size_t)wB * 4)};
    clf_arg cols[] = {CLF_SCALAR(&wA), CLF_SCALAR(&wB), CLF_BROADCAST(A, sa),
                      CLF_IN_STRIDED(B, sb, 4, (size_t)wB * 4),
                      CLF_OUT_STRIDED(C, sc, 4, (size_t)wB * 4)};
    launch(r, &d, by_columns ? cols : rows, 5);
    check_result(r, "C", C, sc, -1);
    free(A);
    free(B);
    free(C);
}

static void case_matmul_rows(runner *r)
{
    matmul(r, 0);
}

static void case_matmul_columns(runner *r)
{
    matmul(r, 1);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median filter (PyOpenCL pattern): rows on dimension 0, columns on dimension 1, width and
 * height in one-element buffers (broadcast, not const); split by rows (dimension 0, a halo
 * row) or by columns (dimension 1, strided, a halo column). */
static void median(runner *r, int by_columns)
{
    const int w = 38, h = 45;
    const size_t bytes = (size_t)w * h * 4, pitch = (size_t)w * 4;
    float *img = fill_floats((size_t)w * h, 61), *res = calloc((size_t)w * h, 4);
    int width = w, height = h;
    ck_assert(res);
    clf_launch_desc d = desc_of("medianFilter", 2, (size_t)h, (size_t)w, 0, 0,
                                by_columns ? CLF_SPLIT_DIM(1) : CLF_SPLIT_DIM(0));
    clf_arg rows[] = {CLF_IN_HALO(img, bytes, pitch, 1, 1), CLF_OUT(res, bytes, pitch),
                      CLF_BROADCAST(&width, 4), CLF_BROADCAST(&height, 4)};
    clf_arg cols[] = {CLF_IN_STRIDED_HALO(img, bytes, 4, pitch, 1, 1),
                      CLF_OUT_STRIDED(res, bytes, 4, pitch), CLF_BROADCAST(&width, 4),
                      CLF_BROADCAST(&height, 4)};
    launch(r, &d, by_columns ? cols : rows, 4);
    if (r->plain) /* the reference itself: a median is a selection, exact */
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float want = img[y * w + x];
                if (y > 0 && x > 0 && y < h - 1 && x < w - 1) {
                    float v[9];
                    for (int k = 0; k < 9; k++)
                        v[k] = img[(y + k / 3 - 1) * w + x + k % 3 - 1];
                    qsort(v, 9, sizeof *v, cmp_float);
                    want = v[4];
                }
                ck_assert_msg(res[y * w + x] == want,
                              "plain OpenCL median at (%d, %d): %g, want %g", x, y,
                              (double)res[y * w + x], (double)want);
            }
    check_result(r, "result", res, bytes, -1);
    free(img);
    free(res);
}

static void case_median_rows(runner *r)
{
    median(r, 0);
}

static void case_median_columns(runner *r)
{
    median(r, 1);
}

/* N-body: helpers loop to get_global_size(0) and divide by get_num_groups(0); three
 * leapfrog steps (positions broadcast, not const; the new positions and the velocities
 * partitioned), then the kinetic energy per work-group. */
static void case_nbody(runner *r)
{
    const size_t n = 256, local = 32, groups = n / local;
    const float dt = 0.01f;
    float *p0 = fill_floats(4 * n, 71), *p1 = calloc(4 * n, 4), *v = fill_floats(4 * n, 72);
    float energy[8];
    ck_assert(p1);
    for (size_t i = 0; i < n; i++) {
        p0[4 * i + 3] = 1.0f + fabsf(p0[4 * i + 3]); /* masses */
        v[4 * i] /= 16.0f;
        v[4 * i + 1] /= 16.0f;
        v[4 * i + 2] /= 16.0f;
        v[4 * i + 3] = 0.0f;
    }
    clf_launch_desc d = desc_of("nbody_step", 1, n, 0, 0, 0, CLF_SPLIT_DEFAULT);
    for (int t = 0; t < 3; t++) {
        float *from = t % 2 ? p1 : p0, *to = t % 2 ? p0 : p1;
        clf_arg args[] = {CLF_BROADCAST(from, n * 16), CLF_OUT(to, n * 16, 16),
                          CLF_INOUT(v, n * 16, 16), CLF_SCALAR(&dt)};
        launch(r, &d, args, 4);
    }
    clf_launch_desc dk = desc_of("kinetic", 1, n, 0, local, 0, CLF_SPLIT_DEFAULT);
    clf_arg kargs[] = {CLF_IN(p1, n * 16, 16), CLF_IN(v, n * 16, 16),
                       CLF_OUT_PER_GROUP(energy, groups * 4, 4), CLF_LOCAL(local * 4)};
    launch(r, &dk, kargs, 4);
    check_result(r, "pos", p1, n * 16, -1);
    check_result(r, "vel", v, n * 16, -1);
    check_result(r, "energy", energy, sizeof energy, -1);
    free(p0);
    free(p1);
    free(v);
}

/* A Mandelbrot image: 2-D, the row pitch from get_global_size(0) in the kernel; split by
 * rows or by columns (strided). */
static void mandelbrot(runner *r, int by_columns)
{
    const size_t w = 64, h = 48, bytes = w * h * 4;
    const float x0 = -2.0f, y0 = -1.125f, dx = 2.75f / 64, dy = 2.25f / 48;
    const uint32_t maxiter = 200;
    uint32_t *out = calloc(w * h, 4);
    ck_assert(out);
    clf_launch_desc d =
        desc_of("mandelbrot", 2, w, h, 0, 0, by_columns ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DIM(1));
    clf_arg rows[] = {CLF_OUT(out, bytes, w * 4),
                      CLF_SCALAR(&x0),
                      CLF_SCALAR(&y0),
                      CLF_SCALAR(&dx),
                      CLF_SCALAR(&dy),
                      CLF_SCALAR(&maxiter)};
    clf_arg cols[] = {CLF_OUT_STRIDED(out, bytes, 4, w * 4),
                      CLF_SCALAR(&x0),
                      CLF_SCALAR(&y0),
                      CLF_SCALAR(&dx),
                      CLF_SCALAR(&dy),
                      CLF_SCALAR(&maxiter)};
    launch(r, &d, by_columns ? cols : rows, 6);
    check_result(r, "output", out, bytes, -1);
    free(out);
}

static void case_mandelbrot_rows(runner *r)
{
    mandelbrot(r, 0);
}

static void case_mandelbrot_columns(runner *r)
{
    mandelbrot(r, 1);
}

/* The tiled transpose: a chunk of input rows writes a band of output columns (an
 * output strided by columns), and a chunk of input columns a band of output rows. */
static void transpose(runner *r, int by_columns)
{
    const int width = 48, height = 40;
    const size_t bytes = (size_t)width * height * 4;
    float *in = fill_floats((size_t)width * height, 81), *out = calloc((size_t)width * height, 4);
    ck_assert(out);
    clf_launch_desc d = desc_of("transpose_tiled", 2, (size_t)width, (size_t)height, 8, 8,
                                by_columns ? CLF_SPLIT_DIM(0) : CLF_SPLIT_DIM(1));
    /* odata is width rows of height floats: input row y is output column y. */
    clf_arg rows[] = {CLF_OUT_STRIDED(out, bytes, 4, (size_t)height * 4),
                      CLF_IN(in, bytes, (size_t)width * 4), CLF_SCALAR(&width), CLF_SCALAR(&height),
                      CLF_LOCAL(8 * 9 * 4)};
    clf_arg cols[] = {CLF_OUT(out, bytes, (size_t)height * 4),
                      CLF_IN_STRIDED(in, bytes, 4, (size_t)width * 4), CLF_SCALAR(&width),
                      CLF_SCALAR(&height), CLF_LOCAL(8 * 9 * 4)};
    launch(r, &d, by_columns ? cols : rows, 5);
    if (r->plain)
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++)
                ck_assert_msg(out[(size_t)x * height + y] == in[(size_t)y * width + x],
                              "plain OpenCL transpose is wrong at (%d, %d)", x, y);
    check_result(r, "out", out, bytes, -1);
    free(in);
    free(out);
}

static void case_transpose_rows(runner *r)
{
    transpose(r, 0);
}

static void case_transpose_columns(runner *r)
{
    transpose(r, 1);
}

typedef struct corpus_case {
    const char *name;
    const char *file;
    void (*run)(runner *);
    unsigned needs;
} corpus_case;

static const corpus_case CASES[] = {
    {"stream: vcopy, vscale, vsum, vtriad, vdot (BabelStream pattern)", "stream.cl", case_stream,
     0},
    {"sum_pairs (reduction, group-id indexing)", "reduce.cl", case_reduce, 0},
    {"hist256 + extremes (integer atomics)", "histogram.cl", case_histogram, 0},
    {"sum_squares (float atomics)", "atomic_sum.cl", case_atomic_sum, 0},
    {"gemm by rows (PolyBench pattern)", "gemm.cl", case_gemm_rows, NEEDS_NONCONST_BROADCAST},
    {"gemm by columns (PolyBench pattern)", "gemm.cl", case_gemm_columns, NEEDS_NONCONST_BROADCAST},
    {"atax_rows + atax_cols (PolyBench pattern)", "atax.cl", case_atax, NEEDS_NONCONST_BROADCAST},
    {"conv3x3 by rows (PolyBench pattern)", "conv2d.cl", case_conv2d_rows, 0},
    {"conv3x3 by columns (PolyBench pattern)", "conv2d.cl", case_conv2d_columns, 0},
    {"jacobi_avg + jacobi_copy by rows (PolyBench pattern)", "jacobi2d.cl", case_jacobi2d_rows, 0},
    {"jacobi_avg + jacobi_copy by columns (PolyBench pattern)", "jacobi2d.cl",
     case_jacobi2d_columns, 0},
    {"matmul_tiled by rows", "matmul_tiled.cl", case_matmul_rows, NEEDS_NONCONST_BROADCAST},
    {"matmul_tiled by columns", "matmul_tiled.cl", case_matmul_columns, NEEDS_NONCONST_BROADCAST},
    {"medianFilter by rows (PyOpenCL pattern)", "median.cl", case_median_rows,
     NEEDS_NONCONST_BROADCAST},
    {"medianFilter by columns (PyOpenCL pattern)", "median.cl", case_median_columns,
     NEEDS_NONCONST_BROADCAST},
    {"nbody (helpers use get_global_size/get_num_groups)", "nbody.cl", case_nbody,
     NEEDS_NONCONST_BROADCAST | NEEDS_SIZE_IN_HELPERS},
    {"mandelbrot by rows", "mandelbrot.cl", case_mandelbrot_rows, 0},
    {"mandelbrot by columns", "mandelbrot.cl", case_mandelbrot_columns, 0},
    {"transpose_tiled by rows", "transpose.cl", case_transpose_rows, 0},
    {"transpose_tiled by columns", "transpose.cl", case_transpose_columns, 0},
};
#define NCASES (sizeof CASES / sizeof CASES[0])

/* Case _i / NCFGS on configuration _i % NCFGS: the plain OpenCL reference first, then the
 * fleet with every strategy. */
START_TEST(corpus_kernel)
{
    const corpus_case *c = &CASES[(size_t)_i / NCFGS];
    const fleet_cfg *cfg = &CFGS[(size_t)_i % NCFGS];
    char *src = read_corpus(c->file);
    runner r;
    memset(&r, 0, sizeof r);
    r.case_name = c->name;
    r.needs = c->needs;
    r.cfg = cfg;
    r.plain = 1;
    plain_open(&r, src);
    c->run(&r);
    plain_close(&r);

    r.plain = 0;
    r.f = test_fleet(cfg->selection, cfg->context_per_device);
    clf_status st = clf_program_build_source(&r.p, r.f, src, NULL);
    expect(st == CLF_SUCCESS, "%s%s: %s: build: %s: %s", needs_note(c->needs), c->name, cfg->label,
           clf_status_name(st), trunc_err());
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        r.strategy = STRATEGIES[s];
        c->run(&r);
    }
    clf_program_destroy(r.p);
    clf_fleet_destroy(r.f);
    for (size_t i = 0; i < r.nres; i++)
        free(r.res[i].ref);
    free(src);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("corpus");
    TCase *tc = tcase_create("corpus");
    tcase_add_loop_test(tc, corpus_kernel, 0, (int)(NCASES * NCFGS));
    suite_add_tcase(s, tc);
    return test_run_fleet4_fleet2(s);
}

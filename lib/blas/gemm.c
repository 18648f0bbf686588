/*
 * Multi-device GEMM through clBLAST (include/clfleet/blas.h): the calls.
 *
 * C = alpha op(A) op(B) + beta C on host arrays: validate as BLAS does, do
 * the trivial cases on the host, choose which dimension of C to cut and the
 * devices, then hand the blocks of C to the chunk executor (lib/exec) with
 * the GEMM's data plane (gemmdev.c): budgets, weights, strategy, workers,
 * failed devices and re-queueing, the report and learning are the executor's.
 *
 * Compiled with or without clBLAST: without it, the public functions exist
 * and return CLF_ERROR_UNSUPPORTED.
 */
#include "blas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int clf_blas_available(void)
{
#ifdef HAVE_CLBLAST
    return clf__gemm_blast_load(NULL) == CLF_SUCCESS;
#else
    return 0;
#endif
}

#ifndef HAVE_CLBLAST

static clf_status unsupported(const char *fn, clf_launch_report *report)
{
    if (report)
        memset(report, 0, sizeof *report);
    return clf__fail(CLF_ERROR_UNSUPPORTED,
                     "%s: clfleet was built without clBLAST (install libclblast-dev and "
                     "configure --with-clblast)",
                     fn);
}

clf_status clf_sgemm(clf_fleet *fleet, clf_layout layout, clf_transpose trans_a,
                     clf_transpose trans_b, size_t m, size_t n, size_t k, float alpha,
                     const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                     size_t ldc, const clf_gemm_options *opts, clf_launch_report *report)
{
    (void)fleet, (void)layout, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k;
    (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
    (void)opts;
    return unsupported("clf_sgemm", report);
}

clf_status clf_dgemm(clf_fleet *fleet, clf_layout layout, clf_transpose trans_a,
                     clf_transpose trans_b, size_t m, size_t n, size_t k, double alpha,
                     const double *a, size_t lda, const double *b, size_t ldb, double beta,
                     double *c, size_t ldc, const clf_gemm_options *opts, clf_launch_report *report)
{
    (void)fleet, (void)layout, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k;
    (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
    (void)opts;
    return unsupported("clf_dgemm", report);
}

#else /* HAVE_CLBLAST */

/* ---- the problem ------------------------------------------------------------------------ */

static size_t max1(size_t x)
{
    return x ? x : 1;
}

/* The leading dimension BLAS requires of a stored rows x cols matrix. */
static size_t min_ld(clf_layout layout, size_t rows, size_t cols)
{
    return max1(layout == CLF_ROW_MAJOR ? cols : rows);
}

/* Bytes from a stored matrix's first element to just past its last; nonzero on overflow. */
static int extent(clf_layout layout, size_t rows, size_t cols, size_t ld, size_t es, size_t *bytes)
{
    size_t lines = layout == CLF_ROW_MAJOR ? rows : cols;
    size_t len = layout == CLF_ROW_MAJOR ? cols : rows, e;
    if (lines == 0 || len == 0) {
        *bytes = 0;
        return 0;
    }
    return clf__mul_overflow(lines - 1, ld, &e) || clf__add_overflow(e, len, &e) ||
           clf__mul_overflow(e, es, bytes);
}

static int valid_trans(clf_transpose t)
{
    return t == CLF_NO_TRANS || t == CLF_TRANS || t == CLF_CONJ_TRANS;
}

/* The checks of BLAS's xerbla, then sizes and pointers. */
static clf_status check_args(const clf__gemm_args *g)
{
    const char *fn = g->fn;
    size_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k; /* A as stored */
    size_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n; /* B as stored */
    size_t bytes;
    if (g->lda < min_ld(g->layout, ar, ac))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: lda is %zu, A (%zu x %zu as stored, %s) needs at least %zu", fn,
                         g->lda, ar, ac, g->layout == CLF_ROW_MAJOR ? "row-major" : "column-major",
                         min_ld(g->layout, ar, ac));
    if (g->ldb < min_ld(g->layout, br, bc))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: ldb is %zu, B (%zu x %zu as stored, %s) needs at least %zu", fn,
                         g->ldb, br, bc, g->layout == CLF_ROW_MAJOR ? "row-major" : "column-major",
                         min_ld(g->layout, br, bc));
    if (g->ldc < min_ld(g->layout, g->m, g->n))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: ldc is %zu, C (%zu x %zu, %s) needs at least %zu", fn, g->ldc, g->m,
                         g->n, g->layout == CLF_ROW_MAJOR ? "row-major" : "column-major",
                         min_ld(g->layout, g->m, g->n));
    if (extent(g->layout, ar, ac, g->lda, g->es, &bytes))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: A (%zu x %zu, lda %zu) overflows", fn, ar,
                         ac, g->lda);
    if (extent(g->layout, br, bc, g->ldb, g->es, &bytes))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: B (%zu x %zu, ldb %zu) overflows", fn, br,
                         bc, g->ldb);
    if (extent(g->layout, g->m, g->n, g->ldc, g->es, &bytes))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: C (%zu x %zu, ldc %zu) overflows", fn, g->m,
                         g->n, g->ldc);
    if (g->m == 0 || g->n == 0)
        return CLF_SUCCESS;
    if (!g->c)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: C is NULL", fn);
    if (g->k > 0 && (!g->a || !g->b))
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", fn, !g->a ? "A" : "B");
    return CLF_SUCCESS;
}

/* C = beta C on the host (k == 0 or alpha == 0): BLAS reads no A or B then. */
static void scale_c(const clf__gemm_args *g)
{
    if (g->beta == 1.0)
        return;
    size_t lines = g->layout == CLF_ROW_MAJOR ? g->m : g->n;
    size_t len = g->layout == CLF_ROW_MAJOR ? g->n : g->m;
    for (size_t i = 0; i < lines; i++) {
        if (g->dbl) {
            double *p = (double *)g->c + i * g->ldc;
            for (size_t j = 0; j < len; j++)
                p[j] = g->beta == 0.0 ? 0.0 : g->beta * p[j];
        } else {
            float *p = (float *)g->c + i * g->ldc, beta = (float)g->beta;
            for (size_t j = 0; j < len; j++)
                p[j] = beta == 0.0f ? 0.0f : beta * p[j];
        }
    }
}

/* ---- the plan -------------------------------------------------------------------------- */

/* The devices (those with double precision for dgemm when none are listed); user weights. */
static clf_status choose_devices(clf__launch *L, const clf__gemm_run *G, const clf_gemm_options *o)
{
    clf_fleet *fl = L->fl;
    const char *fn = G->g.fn;
    if (o->devices) {
        if (o->num_devices == 0 || o->num_devices > CLF_MAX_LAUNCH_DEVICES)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: %zu devices listed (1 to %d)", fn,
                             o->num_devices, CLF_MAX_LAUNCH_DEVICES);
        for (size_t i = 0; i < o->num_devices; i++) {
            size_t d = o->devices[i];
            if (d >= fl->ndev)
                return clf__fail(CLF_ERROR_OUT_OF_RANGE, "%s: device %zu is %zu, the fleet has %zu",
                                 fn, i, d, fl->ndev);
            for (size_t j = 0; j < i; j++)
                if (o->devices[j] == d)
                    return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: device %zu listed twice", fn,
                                     d);
            if (G->g.dbl && !fl->dev[d].info.fp64)
                return clf__fail(CLF_ERROR_UNSUPPORTED,
                                 "%s: device %zu '%s' has no double precision (cl_khr_fp64)", fn, d,
                                 fl->dev[d].info.name);
            L->dev[L->ndev++] = d;
        }
    } else {
        for (size_t d = 0; d < fl->ndev && L->ndev < CLF_MAX_LAUNCH_DEVICES; d++)
            if (!G->g.dbl || fl->dev[d].info.fp64)
                L->dev[L->ndev++] = d;
        if (L->ndev == 0)
            return clf__fail(CLF_ERROR_UNSUPPORTED,
                             "%s: no device of the fleet has double precision (cl_khr_fp64)", fn);
    }
    if (o->weights_mode == CLF_WEIGHTS_USER) {
        int any = 0;
        for (size_t i = 0; i < L->ndev; i++) {
            if (!isfinite(o->weights[i]) || o->weights[i] < 0)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: weight %zu is %g", fn, i,
                                 o->weights[i]);
            any |= o->weights[i] > 0;
        }
        if (!any)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: every weight is zero", fn);
    }
    return CLF_SUCCESS;
}

/*
 * The options, the split, the devices and the range, as the chunk executor takes them
 * (clf__exec_run(), lib/exec/exec.h): budgets, weights, strategy (AUTO's dynamic fallback
 * included), the report, failed devices and re-queueing are the executor's.
 */
static clf_status plan(clf__launch *L, clf__gemm_run *G, const clf_gemm_options *o)
{
    const clf__gemm_args *g = &G->g;
    clf_status st;
    if (clf__check_version(g->fn, o->version, CLF_GEMM_OPTIONS_VERSION, "clf_gemm_options",
                           "CLF_GEMM_OPTIONS_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    if ((unsigned)o->split > CLF_GEMM_SPLIT_N)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown split %d", g->fn, (int)o->split);
    if ((unsigned)o->weights_mode > CLF_WEIGHTS_USER)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown weights mode %d", g->fn,
                         (int)o->weights_mode);
    if (o->weights_mode == CLF_WEIGHTS_USER && !o->weights)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: CLF_WEIGHTS_USER with NULL weights", g->fn);
    if (!(o->mem_safety >= 0 && o->mem_safety <= 1))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: mem_safety %g is not in (0, 1]", g->fn,
                         o->mem_safety);
    if ((unsigned)o->strategy > CLF_STRATEGY_AUTO)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown strategy %d", g->fn,
                         (int)o->strategy);
    CLF__TRY(st, choose_devices(L, G, o));
    /* Cutting rows sends every device op(B) (k x n), cutting columns op(A) (m x k). */
    int split_n = o->split == CLF_GEMM_SPLIT_N;
    if (o->split == CLF_GEMM_SPLIT_AUTO)
        split_n = g->m != g->n ? g->m < g->n : g->layout == CLF_COL_MAJOR;
    G->split_n = split_n;
    G->total = split_n ? g->n : g->m;
    G->other = split_n ? g->m : g->n;
    if (!split_n) {
        G->whole = g->tb ? clf__gemm_block_of(g->layout, g->ldb, 0, g->n, 0, g->k)
                         : clf__gemm_block_of(g->layout, g->ldb, 0, g->k, 0, g->n);
        G->whole_host = g->b;
    } else {
        G->whole = g->ta ? clf__gemm_block_of(g->layout, g->lda, 0, g->k, 0, g->m)
                         : clf__gemm_block_of(g->layout, g->lda, 0, g->m, 0, g->k);
        G->whole_host = g->a;
    }
    G->whole_bytes = (uint64_t)G->whole.lines * G->whole.len * g->es; /* within the extent */
    uint64_t per_unit = 3 * ((uint64_t)g->k + G->other) * g->es; /* see gemm_max_units() */
    snprintf(G->need, sizeof G->need,
             "%llu bytes of %s on every device, plus %llu per %s of C (clBLAST's "
             "temporaries included)",
             (unsigned long long)(2 * G->whole_bytes), split_n ? "op(A)" : "op(B)",
             (unsigned long long)per_unit, split_n ? "column" : "row");

    L->plane = &clf__gemm_plane;
    L->plane_ctx = G;
    L->prog = NULL;
    L->desc = (clf_launch_desc)CLF_LAUNCH_DESC_INIT;
    L->desc.kernel = g->dbl ? "dgemm" : "sgemm"; /* the report's and the metrics' name */
    L->desc.strategy = o->strategy;
    L->desc.weights_mode = o->weights_mode;
    L->desc.weights = o->weights;
    L->desc.mem_limits = o->mem_limits;
    L->desc.mem_safety = o->mem_safety;
    L->desc.chunks_per_device = o->chunks_per_device ? o->chunks_per_device : 4;
    L->desc.min_chunk = o->min_chunk;
    L->chunking_asked = o->chunks_per_device != 0 || o->min_chunk != 0;
    L->key = g->dbl ? "clblast-dgemm" : "clblast-sgemm"; /* the throughput model's */
    L->need = G->need;
    L->reason_tail = split_n ? "blocks of columns of C, op(A) whole on every device"
                             : "blocks of rows of C, op(B) whole on every device";
    /* The model learns MFLOP per second: one shape's figures then serve the next. */
    L->learn_scale = 2.0 * (double)G->other * (double)g->k * 1e-6;
    L->total = G->total;
    L->per_unit = G->other;
    L->gran = o->granularity ? o->granularity : G->total >= 64 * (uint64_t)L->ndev ? 16 : 1;
out:
    return st;
}

static clf_status gemm(clf_fleet *fl, clf__gemm_args *g, int ta, int tb,
                       const clf_gemm_options *opts, clf_launch_report *report)
{
    clf_launch_report local;
    clf_launch_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    if (!fl)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: fleet is NULL", g->fn);
    if (g->layout != CLF_ROW_MAJOR && g->layout != CLF_COL_MAJOR)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: layout %d is neither CLF_ROW_MAJOR nor CLF_COL_MAJOR", g->fn,
                         (int)g->layout);
    if (!valid_trans((clf_transpose)ta) || !valid_trans((clf_transpose)tb))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: trans_%c is %d (CLF_NO_TRANS, "
                         "CLF_TRANS or CLF_CONJ_TRANS)",
                         g->fn, valid_trans((clf_transpose)ta) ? 'b' : 'a',
                         valid_trans((clf_transpose)ta) ? tb : ta);
    g->ta = ta != CLF_NO_TRANS;
    g->tb = tb != CLF_NO_TRANS;
    clf_status st = check_args(g);
    if (st != CLF_SUCCESS)
        return st;
    if ((st = clf__gemm_blast_load(g->fn)) != CLF_SUCCESS)
        return st;
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    if (opts)
        o = *opts;
    if (g->m == 0 || g->n == 0 || g->k == 0 || g->alpha == 0.0) {
        if (clf__check_version(g->fn, o.version, CLF_GEMM_OPTIONS_VERSION, "clf_gemm_options",
                               "CLF_GEMM_OPTIONS_INIT") != CLF_SUCCESS)
            return CLF_ERROR_INVALID_ARGUMENT;
        if (g->m && g->n)
            scale_c(g);
        snprintf(rep->reason, sizeof rep->reason, "%s",
                 !g->m || !g->n ? "m or n is 0: nothing to do"
                                : "k or alpha is 0: C = beta * C on the host");
        return CLF_SUCCESS;
    }
    clf__gemm_run *G = calloc(1, sizeof *G);
    clf__launch *L = calloc(1, sizeof *L); /* large: not on the caller's stack */
    if (!G || !L) {
        free(G);
        free(L);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", g->fn);
    }
    G->g = *g;
    L->fl = fl;
    L->X = clf__exec_state_of(fl);
    st = L->X ? plan(L, G, &o)
              : clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", g->fn);
    if (st == CLF_SUCCESS)
        st = clf__gemm_blast_register(fl, g->fn, g->dbl);
    if (st == CLF_SUCCESS)
        st = clf__turn_begin(fl); /* one launch or GEMM at a time on the fleet, in call order */
    if (st == CLF_SUCCESS) {
        st = clf__exec_run(L, rep);
        clf__turn_end(fl);
    }
    free(L);
    free(G);
    return st;
}

clf_status clf_sgemm(clf_fleet *fleet, clf_layout layout, clf_transpose trans_a,
                     clf_transpose trans_b, size_t m, size_t n, size_t k, float alpha,
                     const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
                     size_t ldc, const clf_gemm_options *opts, clf_launch_report *report)
{
    clf__gemm_args g = {"clf_sgemm", 0, sizeof(float), layout, 0,  0, m, n, k, alpha, beta, a,
                        b,           c, lda,           ldb,    ldc};
    return gemm(fleet, &g, trans_a, trans_b, opts, report);
}

clf_status clf_dgemm(clf_fleet *fleet, clf_layout layout, clf_transpose trans_a,
                     clf_transpose trans_b, size_t m, size_t n, size_t k, double alpha,
                     const double *a, size_t lda, const double *b, size_t ldb, double beta,
                     double *c, size_t ldc, const clf_gemm_options *opts, clf_launch_report *report)
{
    clf__gemm_args g = {
        "clf_dgemm", 1, sizeof(double), layout, 0, 0, m, n, k, alpha, beta, a, b, c, lda, ldb, ldc};
    return gemm(fleet, &g, trans_a, trans_b, opts, report);
}

#endif /* HAVE_CLBLAST */

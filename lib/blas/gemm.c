/*
 * Multi-device GEMM through clBLAST (include/clfleet/blas.h): the calls.
 *
 * C = alpha op(A) op(B) + beta C on host arrays: validate as BLAS does, do
 * the trivial cases on the host, choose which dimension of C to cut, the
 * devices, their memory budgets, weights and the strategy, cut C with the
 * launch partitioner (partition.c), run one worker thread per device
 * (gemmdev.c), then write the report and learn each device's throughput.
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

/* ---- devices, budgets, weights, strategy ------------------------------------------------ */

static clf_status choose_devices(clf__gemm_run *G)
{
    const clf_gemm_options *o = &G->o;
    clf_fleet *fl = G->fl;
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
            G->dev[G->ndev++] = d;
        }
    } else {
        for (size_t d = 0; d < fl->ndev && G->ndev < CLF_MAX_LAUNCH_DEVICES; d++)
            if (!G->g.dbl || fl->dev[d].info.fp64)
                G->dev[G->ndev++] = d;
        if (G->ndev == 0)
            return clf__fail(CLF_ERROR_UNSUPPORTED,
                             "%s: no device of the fleet has double precision (cl_khr_fp64)", fn);
    }
    if (o->weights_mode == CLF_WEIGHTS_USER) {
        int any = 0;
        for (size_t i = 0; i < G->ndev; i++) {
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
 * The largest block each device can hold. Every device holds the whole operand, and per
 * unit (row or column of C) two slots of the sliced operand's and C's parts; clBLAST's
 * indirect GEMM may copy each operand into a padded temporary, counted as one more of each.
 */
static clf_status budgets(clf__gemm_run *G, uint64_t *max_units)
{
    const clf__gemm_args *g = &G->g;
    double safety = G->o.mem_safety > 0 ? G->o.mem_safety : 0.8;
    uint64_t unit_s = (uint64_t)g->k * g->es, unit_c = G->other * g->es, per_unit;
    int big = __builtin_add_overflow(unit_s, unit_c, &per_unit) ||
              __builtin_mul_overflow(per_unit, 3, &per_unit);
    uint64_t fixed = 2 * G->whole_bytes;
    int any = 0;
    for (size_t i = 0; i < G->ndev; i++) {
        clf__gemm_worker *w = &G->w[i];
        const clf_device_info *in = &G->fl->dev[G->dev[i]].info;
        uint64_t b = (uint64_t)((double)in->global_mem * safety);
        if (G->o.mem_limits && G->o.mem_limits[i] && G->o.mem_limits[i] < b)
            b = G->o.mem_limits[i];
        w->budget = b;
        uint64_t m = 0;
        if (!big && G->whole_bytes <= in->max_alloc && fixed <= b) {
            m = (b - fixed) / per_unit;
            if (unit_s && in->max_alloc / unit_s < m) /* one slot, one allocation */
                m = in->max_alloc / unit_s;
            if (in->max_alloc / unit_c < m)
                m = in->max_alloc / unit_c;
        }
        max_units[i] = w->max_units = m;
        any |= m >= (G->gran < G->total ? G->gran : G->total);
    }
    if (!any)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "%s: no device can hold one block: %llu bytes of %s on every device, "
                         "plus %llu per %s of C (clBLAST's temporaries included); budget of "
                         "device %zu: %llu bytes, largest allocation %llu",
                         g->fn, (unsigned long long)fixed, G->split_n ? "op(A)" : "op(B)",
                         (unsigned long long)per_unit, G->split_n ? "column" : "row", G->dev[0],
                         (unsigned long long)G->w[0].budget,
                         (unsigned long long)G->fl->dev[G->dev[0]].info.max_alloc);
    return CLF_SUCCESS;
}

static const char *perf_key(const clf__gemm_run *G)
{
    return G->g.dbl ? "clblast-dgemm" : "clblast-sgemm";
}

/* Weights of STATIC, GUIDED and MEMORY_AWARE; returns 1 when learned for every device. */
static int choose_weights(clf__gemm_run *G, char *reason, size_t n)
{
    const clf_gemm_options *o = &G->o;
    if (o->weights_mode == CLF_WEIGHTS_USER) {
        memcpy(G->weights, o->weights, G->ndev * sizeof *G->weights);
        snprintf(reason, n, "user weights");
        return 0;
    }
    for (size_t i = 0; i < G->ndev; i++)
        G->weights[i] = 1.0;
    if (o->weights_mode == CLF_WEIGHTS_EQUAL) {
        snprintf(reason, n, "equal weights");
        return 0;
    }
    char dkeys[CLF_MAX_LAUNCH_DEVICES][400];
    const char *dk[CLF_MAX_LAUNCH_DEVICES];
    double learned[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < G->ndev; i++) {
        clf__perf_device_key(&G->fl->dev[G->dev[i]], dkeys[i], sizeof dkeys[i]);
        dk[i] = dkeys[i];
    }
    clf__perf_model *m = clf__fleet_perf(G->fl);
    if (m && clf__perf_weights(m, perf_key(G), G->ndev, dk, learned) == G->ndev) {
        memcpy(G->weights, learned, G->ndev * sizeof *learned);
        snprintf(reason, n, "learned weights");
        return 1;
    }
    for (size_t i = 0; i < G->ndev; i++) {
        const clf_device_info *in = &G->fl->dev[G->dev[i]].info;
        G->weights[i] = (double)(in->compute_units ? in->compute_units : 1) *
                        (in->clock_mhz ? in->clock_mhz : 1000);
    }
    snprintf(reason, n, "weights from compute units x clock (not learned yet)");
    return 0;
}

static clf_status choose_strategy(clf__gemm_run *G, const uint64_t *max_units,
                                  clf_launch_report *rep)
{
    clf_strategy s = G->o.strategy;
    if (s == CLF_STRATEGY_DEFAULT)
        s = G->fl->strategy; /* $CLFLEET_STRATEGY, parsed by clf_fleet_create() */
    if ((unsigned)s > CLF_STRATEGY_AUTO)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown strategy %d", G->g.fn, (int)s);
    rep->requested = s;
    char wreason[64];
    int learned = choose_weights(G, wreason, sizeof wreason);
    const char *split = G->split_n ? "blocks of columns of C, op(A) whole on every device"
                                   : "blocks of rows of C, op(B) whole on every device";
    if (s == CLF_STRATEGY_AUTO) {
        double wsum = 0;
        int tight = 0;
        for (size_t i = 0; i < G->ndev; i++)
            wsum += G->weights[i];
        for (size_t i = 0; i < G->ndev; i++)
            tight |= (double)max_units[i] < (double)G->total * G->weights[i] / wsum;
        const char *why = tight ? "memory-aware (a device's share exceeds its memory budget)"
                          : learned ? "static (throughput learned for every device)"
                                    : "guided (throughput not learned yet)";
        s = tight ? CLF_STRATEGY_MEMORY_AWARE : learned ? CLF_STRATEGY_STATIC : CLF_STRATEGY_GUIDED;
        snprintf(rep->reason, sizeof rep->reason, "auto: %s; %s; %s", why, wreason, split);
    } else {
        snprintf(rep->reason, sizeof rep->reason, "%s; %s; %s", clf_strategy_name(s), wreason,
                 split);
    }
    rep->strategy = s;
    G->part_strategy = s == CLF_STRATEGY_STATIC ? CLF__PART_STATIC
                       : s == CLF_STRATEGY_DYNAMIC ? CLF__PART_DYNAMIC
                       : s == CLF_STRATEGY_GUIDED ? CLF__PART_GUIDED
                                         : CLF__PART_MEMORY_AWARE;
    return CLF_SUCCESS;
}

/* ---- the call --------------------------------------------------------------------------- */

static void fill_report(clf__gemm_run *G, clf_launch_report *rep)
{
    rep->total_units = G->total;
    rep->num_devices = G->ndev;
    for (size_t i = 0; i < G->ndev; i++) {
        clf_device_report *r = &rep->dev[i];
        *r = G->w[i].rep;
        r->device = G->dev[i];
        r->share = (double)r->units / (double)G->total;
        r->mem_peak = G->w[i].mem_peak;
        r->mem_budget = G->w[i].budget;
    }
    clf__report_balance(rep);
}

/* Each device's GEMM throughput (MFLOP per second of its host time) for later weights. */
static void learn(clf__gemm_run *G)
{
    clf__perf_model *m = clf__fleet_perf(G->fl);
    if (!m)
        return;
    char dkey[400];
    for (size_t i = 0; i < G->ndev; i++) {
        const clf__gemm_worker *w = &G->w[i];
        double t = w->rep.finish_s - w->t_start;
        double mflop = 2.0 * (double)w->rep.units * (double)G->other * (double)G->g.k * 1e-6;
        if (w->rep.units && t > 0) {
            clf__perf_device_key(w->d, dkey, sizeof dkey);
            clf__perf_record(m, perf_key(G), dkey, mflop >= 1 ? (uint64_t)llround(mflop) : 1, t);
        }
    }
}

/* Split, devices, budgets and strategy: everything that can fail before any thread. */
static clf_status plan(clf__gemm_run *G, uint64_t *max_units, clf_launch_report *rep)
{
    const clf__gemm_args *g = &G->g;
    const clf_gemm_options *o = &G->o;
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
    CLF__TRY(st, choose_devices(G));
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
    G->gran = o->granularity ? o->granularity : G->total >= 64 * (uint64_t)G->ndev ? 16 : 1;
    CLF__TRY(st, budgets(G, max_units));
    CLF__TRY(st, choose_strategy(G, max_units, rep));
    clf__log(CLF_LOG_DEBUG, "%s: %s", G->g.fn, rep->reason);
out:
    return st;
}

static clf_status run(clf__gemm_run *G, clf_launch_report *rep)
{
    uint64_t max_units[CLF_MAX_LAUNCH_DEVICES];
    clf_status st;
    CLF__TRY(st, plan(G, max_units, rep));
    clf__part_params pp = {0};
    pp.chunks_per_device = G->o.chunks_per_device ? G->o.chunks_per_device : 4;
    pp.min_chunk = G->o.min_chunk;
    CLF__TRY(st, clf__part_create(&G->part, G->part_strategy, G->total, G->gran, G->ndev,
                                  G->weights, max_units, &pp));
    CLF__TRY(st, clf__gemm_blast_register(G->fl));

    pthread_mutex_init(&G->lock, NULL);
    G->t0 = clf__now();
    for (size_t i = 0; i < G->ndev; i++) {
        clf__gemm_worker *w = &G->w[i];
        w->G = G;
        w->pos = i;
        w->d = &G->fl->dev[G->dev[i]];
        w->started = pthread_create(&w->thread, NULL, clf__gemm_worker_main, w) == 0;
    }
    for (size_t i = 0; i < G->ndev; i++) /* no thread: drive it from here, after the others */
        if (!G->w[i].started)
            clf__gemm_worker_main(&G->w[i]);
    for (size_t i = 0; i < G->ndev; i++)
        if (G->w[i].started)
            pthread_join(G->w[i].thread, NULL);
    pthread_mutex_destroy(&G->lock);

    uint64_t done;
    clf__part_counts(G->part, NULL, NULL, &done);
    fill_report(G, rep);
    clf__metrics_launch(G->fl, G->g.dbl ? "dgemm" : "sgemm", rep, G->t0);
    if (done != G->total) {
        st = CLF_ERROR_OPENCL;
        for (size_t i = 0; i < G->ndev; i++)
            if (G->w[i].st != CLF_SUCCESS) {
                st = clf__fail(G->w[i].st, "%s incomplete (%llu of %llu %s of C): %s", G->g.fn,
                               (unsigned long long)done, (unsigned long long)G->total,
                               G->split_n ? "columns" : "rows", G->w[i].err);
                goto out;
            }
        st = clf__fail(CLF_ERROR_OUT_OF_RANGE, "%s incomplete: %llu of %llu %s of C done", G->g.fn,
                       (unsigned long long)done, (unsigned long long)G->total,
                       G->split_n ? "columns" : "rows");
        goto out;
    }
    learn(G);
out:
    for (size_t i = 0; i < G->ndev; i++)
        clf__gemm_worker_fini(&G->w[i]);
    clf__part_destroy(G->part);
    G->part = NULL;
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
    clf__gemm_run *G = calloc(1, sizeof *G); /* large: not on the caller's stack */
    if (!G)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", g->fn);
    G->fl = fl;
    G->g = *g;
    G->o = o;
    st = clf__turn_begin(fl); /* one launch or GEMM at a time on the fleet, in call order */
    if (st == CLF_SUCCESS) {
        st = run(G, rep);
        clf__turn_end(fl);
    }
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

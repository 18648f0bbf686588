/*
 * Multi-device GEMM through clBLAST: both precisions, both layouts, every transpose pair,
 * every strategy and both splits of C, awkward sizes and leading dimensions, non-trivial
 * alpha and beta, compared with a plain C triple loop computed in double: a normwise
 * relative error ||C - R||_F / (|alpha| ||op(A)||_F ||op(B)||_F + |beta| ||C0||_F) and the
 * componentwise one, each within 1e-4 (float) or 1e-10 (double). The padding between a
 * row's end and the leading dimension must come back bit for bit, A and B untouched. Then
 * reports, metrics, memory limits, learned weights and every bad input; then the chunk
 * executor's behaviour: a device failing (CLFLEET_FAULT_INJECT) has its blocks re-run by the
 * other, and AUTO falls back to dynamic when static balanced a GEMM badly.
 *
 * Built without clBLAST (CLF_TEST_CLBLAST undefined), only the unsupported status is checked.
 */
#include "common.h"

#include <clfleet/blas.h>

#include <math.h>
#include <stdint.h>

#ifdef CLF_TEST_CLBLAST

/* The loop index of the device tests picks one of these (FLEET2, FLEET4, DEV3: common.h). */
static const fleet_cfg CFGS[] = {
    {FLEET2, 0, NULL, 2, "2 devices, shared context"},
    {FLEET4, 1, DEV3, 3, "3 of 4 devices, context per device"},
};
#define NCFGS ((int)(sizeof CFGS / sizeof CFGS[0]))

/* clBLAST builds its kernels once per context and device: the fleets live for the suite. */
static clf_fleet *fleets[NCFGS];

static clf_fleet *fleet_of(int cfg)
{
    if (!fleets[cfg])
        fleets[cfg] = test_fleet(CFGS[cfg].selection, CFGS[cfg].context_per_device);
    return fleets[cfg];
}

static void fleets_teardown(void)
{
    for (int i = 0; i < NCFGS; i++) {
        clf_fleet_destroy(fleets[i]);
        fleets[i] = NULL;
    }
}

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};
#define NSTRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])
static const clf_gemm_split SPLITS[] = {CLF_GEMM_SPLIT_AUTO, CLF_GEMM_SPLIT_M, CLF_GEMM_SPLIT_N};
#define NSPLITS (sizeof SPLITS / sizeof SPLITS[0])
static const clf_transpose TRANS[4][2] = {{CLF_NO_TRANS, CLF_NO_TRANS},
                                          {CLF_NO_TRANS, CLF_TRANS},
                                          {CLF_TRANS, CLF_NO_TRANS},
                                          {CLF_CONJ_TRANS, CLF_TRANS}};
static const clf_layout LAYOUTS[] = {CLF_ROW_MAJOR, CLF_COL_MAJOR};

/* ---- host matrices ------------------------------------------------------------------------ */

typedef struct gcase {
    int dbl;
    clf_layout layout;
    clf_transpose ta, tb;
    size_t m, n, k;
    size_t pad_a, pad_b, pad_c; /* leading dimensions beyond the minimum */
    double alpha, beta;
    clf_strategy strategy;
    clf_gemm_split split;
    int nan_c; /* C holds NaN on input (with beta == 0 it must not matter) */
} gcase;

/* A case without padding, with C's values kept. */
static gcase mk(int dbl, clf_layout layout, clf_transpose ta, clf_transpose tb, size_t m, size_t n,
                size_t k, double alpha, double beta, clf_strategy strategy, clf_gemm_split split)
{
    gcase t = {dbl, layout, ta, tb, m, n, k, 0, 0, 0, alpha, beta, strategy, split, 0};
    return t;
}

static uint64_t rng_state;

static double rnd(void)
{
    return (double)(xorshift64(&rng_state) >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static double get(const void *x, int dbl, size_t i)
{
    return dbl ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

static void put(void *x, int dbl, size_t i, double v)
{
    if (dbl)
        ((double *)x)[i] = v;
    else
        ((float *)x)[i] = (float)v;
}

/* Index of element (r, c) of a stored matrix. */
static size_t at(clf_layout layout, size_t ld, size_t r, size_t c)
{
    return layout == CLF_ROW_MAJOR ? r * ld + c : c * ld + r;
}

static size_t lines_of(clf_layout layout, size_t rows, size_t cols)
{
    return layout == CLF_ROW_MAJOR ? rows : cols;
}

static size_t len_of(clf_layout layout, size_t rows, size_t cols)
{
    return layout == CLF_ROW_MAJOR ? cols : rows;
}

/* A stored rows x cols matrix with leading dimension ld: random elements, and pad in the
 * gaps past each line's end. Returns its element count (at least 1). */
static void *make(int dbl, clf_layout layout, size_t rows, size_t cols, size_t ld, double pad,
                  size_t *count)
{
    size_t lines = lines_of(layout, rows, cols), len = len_of(layout, rows, cols);
    size_t n = lines && len ? (lines - 1) * ld + len : 1;
    void *x = malloc(n * (dbl ? 8 : 4));
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        put(x, dbl, i, pad);
    for (size_t l = 0; l < lines; l++)
        for (size_t j = 0; j < len; j++)
            put(x, dbl, l * ld + j, rnd());
    *count = n;
    return x;
}

static size_t min_ld(clf_layout layout, size_t rows, size_t cols)
{
    size_t l = len_of(layout, rows, cols);
    return l ? l : 1;
}

/* ---- one GEMM against the reference -------------------------------------------------------- */

static clf_status call(clf_fleet *f, const gcase *t, const void *a, size_t lda, const void *b,
                       size_t ldb, void *c, size_t ldc, const clf_gemm_options *o,
                       clf_launch_report *rep)
{
    if (t->dbl)
        return clf_dgemm(f, t->layout, t->ta, t->tb, t->m, t->n, t->k, t->alpha, a, lda, b, ldb,
                         t->beta, c, ldc, o, rep);
    return clf_sgemm(f, t->layout, t->ta, t->tb, t->m, t->n, t->k, (float)t->alpha, a, lda, b, ldb,
                     (float)t->beta, c, ldc, o, rep);
}

static void describe(const gcase *t, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s %c%c m=%zu n=%zu k=%zu pads=%zu,%zu,%zu alpha=%g beta=%g %s split=%d",
             t->dbl ? "dgemm" : "sgemm", t->layout == CLF_ROW_MAJOR ? "row" : "col",
             t->ta == CLF_NO_TRANS ? 'N' : 'T', t->tb == CLF_NO_TRANS ? 'N' : 'T', t->m, t->n, t->k,
             t->pad_a, t->pad_b, t->pad_c, t->alpha, t->beta, clf_strategy_name(t->strategy),
             (int)t->split);
}

/* Devices that may fail in run_case() (fault injection): their blocks are re-run elsewhere. */
static int may_fail;

/*
 * Run t on fleet f (options o, whose strategy and split t overrides) and check C against the
 * reference; the report goes to rep. ndev: devices the report must list.
 */
static void run_case(clf_fleet *f, const gcase *t, const clf_gemm_options *base, size_t ndev,
                     clf_launch_report *rep)
{
    char what[256];
    describe(t, what, sizeof what);
    int dbl = t->dbl;
    size_t es = dbl ? 8 : 4;
    int ta = t->ta != CLF_NO_TRANS, tb = t->tb != CLF_NO_TRANS;
    size_t ar = ta ? t->k : t->m, ac = ta ? t->m : t->k;
    size_t br = tb ? t->n : t->k, bc = tb ? t->k : t->n;
    size_t lda = min_ld(t->layout, ar, ac) + t->pad_a, ldb = min_ld(t->layout, br, bc) + t->pad_b;
    size_t ldc = min_ld(t->layout, t->m, t->n) + t->pad_c;
    size_t na, nb, nc;
    rng_state = 0x9e3779b97f4a7c15ull ^ (t->m * 1000003u + t->n * 10007u + t->k);
    /* NaN in the gaps of A and B: reading one would poison C. */
    void *a = make(dbl, t->layout, ar, ac, lda, NAN, &na);
    void *b = make(dbl, t->layout, br, bc, ldb, NAN, &nb);
    void *c = make(dbl, t->layout, t->m, t->n, ldc, 12345.5, &nc);
    if (t->nan_c)
        for (size_t i = 0; i < t->m; i++)
            for (size_t j = 0; j < t->n; j++)
                put(c, dbl, at(t->layout, ldc, i, j), NAN);
    void *a0 = malloc(na * es), *b0 = malloc(nb * es), *c0 = malloc(nc * es);
    ck_assert(a0 && b0 && c0);
    memcpy(a0, a, na * es);
    memcpy(b0, b, nb * es);
    memcpy(c0, c, nc * es);

    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    if (base)
        o = *base;
    o.strategy = t->strategy;
    o.split = t->split;
    clf_status st = call(f, t, a, lda, b, ldb, c, ldc, &o, rep);
    expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());

    /* The reference, in double, from the inputs as the library received them. */
    double alpha = dbl ? t->alpha : (double)(float)t->alpha;
    double beta = dbl ? t->beta : (double)(float)t->beta;
    /* op(A) by rows and op(B) by columns, dense: the dot products below run contiguously. */
    double *oa = malloc((t->m * t->k + 1) * sizeof *oa),
           *ob = malloc((t->n * t->k + 1) * sizeof *ob);
    ck_assert(oa && ob);
    double na2 = 0, nb2 = 0, nc2 = 0, num = 0, worst = 0;
    for (size_t i = 0; i < t->m; i++)
        for (size_t p = 0; p < t->k; p++) {
            oa[i * t->k + p] =
                get(a, dbl, ta ? at(t->layout, lda, p, i) : at(t->layout, lda, i, p));
            na2 += oa[i * t->k + p] * oa[i * t->k + p];
        }
    for (size_t j = 0; j < t->n; j++)
        for (size_t p = 0; p < t->k; p++) {
            ob[j * t->k + p] =
                get(b, dbl, tb ? at(t->layout, ldb, j, p) : at(t->layout, ldb, p, j));
            nb2 += ob[j * t->k + p] * ob[j * t->k + p];
        }
    size_t wi = 0, wj = 0;
    double tol = dbl ? 1e-10 : 1e-4;
    for (size_t i = 0; i < t->m; i++)
        for (size_t j = 0; j < t->n; j++) {
            const double *x = oa + i * t->k, *y = ob + j * t->k;
            double s = 0, sabs = 0;
            for (size_t p = 0; p < t->k; p++) {
                s += x[p] * y[p];
                sabs += fabs(x[p] * y[p]);
            }
            double cin = get(c0, dbl, at(t->layout, ldc, i, j));
            double ref = alpha * s + (beta != 0 ? beta * cin : 0.0);
            double got = get(c, dbl, at(t->layout, ldc, i, j));
            double d = got - ref;
            expect(isfinite(got), "%s: C(%zu,%zu) = %g", what, i, j, got);
            num += d * d;
            if (beta != 0)
                nc2 += cin * cin;
            /* Componentwise: the error bound of a dot product of length k. */
            double scale = fabs(alpha) * sabs + (beta != 0 ? fabs(beta * cin) : 0.0);
            double rel = scale > 0 ? fabs(d) / scale : fabs(d);
            if (rel > worst) {
                worst = rel;
                wi = i;
                wj = j;
            }
        }
    free(oa);
    free(ob);
    double den = fabs(alpha) * sqrt(na2) * sqrt(nb2) + fabs(beta) * sqrt(nc2);
    double err = den > 0 ? sqrt(num) / den : sqrt(num);
    expect(err <= tol, "%s: normwise relative error %.3g > %g", what, err, tol);
    expect(worst <= tol, "%s: C(%zu,%zu) relative error %.3g > %g", what, wi, wj, worst, tol);

    /* The gaps of C untouched, A and B unchanged. */
    size_t lines = lines_of(t->layout, t->m, t->n), len = len_of(t->layout, t->m, t->n);
    for (size_t l = 0; l < lines; l++)
        for (size_t j = len; j < ldc && l * ldc + j < nc; j++)
            expect(memcmp((char *)c + (l * ldc + j) * es, (char *)c0 + (l * ldc + j) * es, es) == 0,
                   "%s: C's padding at line %zu, %zu changed", what, l, j);
    expect(memcmp(a, a0, na * es) == 0, "%s: A changed", what);
    expect(memcmp(b, b0, nb * es) == 0, "%s: B changed", what);

    /* The report: every unit of the split dimension exactly once. */
    if (rep && t->m && t->n && t->k && t->alpha != 0) {
        int cols = strstr(rep->reason, "columns of C") != NULL;
        uint64_t total = cols ? t->n : t->m, other = cols ? t->m : t->n, units = 0;
        if (t->split == CLF_GEMM_SPLIT_M)
            expect(!cols, "%s: split M ran as columns (%s)", what, rep->reason);
        if (t->split == CLF_GEMM_SPLIT_N)
            expect(cols, "%s: split N ran as rows (%s)", what, rep->reason);
        expect(rep->num_devices == ndev, "%s: %zu devices in the report, expected %zu", what,
               rep->num_devices, ndev);
        expect(rep->total_units == total, "%s: total_units %llu", what,
               (unsigned long long)rep->total_units);
        for (size_t d = 0; d < rep->num_devices; d++) {
            const clf_device_report *r = &rep->dev[d];
            units += r->units;
            expect(r->items == r->units * other, "%s: device %zu items %llu units %llu", what, d,
                   (unsigned long long)r->items, (unsigned long long)r->units);
            expect((r->units == 0) == (r->chunks == 0), "%s: device %zu: %llu units, %u chunks",
                   what, d, (unsigned long long)r->units, r->chunks);
            expect(may_fail || !r->failed, "%s: device %zu failed", what, d);
            expect(r->mem_peak <= r->mem_budget, "%s: device %zu peak %llu over budget %llu", what,
                   d, (unsigned long long)r->mem_peak, (unsigned long long)r->mem_budget);
        }
        expect(units == total, "%s: %llu units done of %llu", what, (unsigned long long)units,
               (unsigned long long)total);
        if (t->strategy != CLF_STRATEGY_AUTO && t->strategy != CLF_STRATEGY_DEFAULT)
            expect(rep->strategy == t->strategy, "%s: ran as %s", what,
                   clf_strategy_name(rep->strategy));
    }
    free(a);
    free(b);
    free(c);
    free(a0);
    free(b0);
    free(c0);
}

/*
 * Under valgrind (its preloaded libraries are in LD_PRELOAD), PoCL's compiler and kernels run
 * some 50 times slower: the same code paths, with fewer combinations and a smaller matrix.
 */
static int under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}

/* The options of configuration cfg: its device subset. */
static clf_gemm_options cfg_options(int cfg)
{
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    o.devices = CFGS[cfg].devices;
    o.num_devices = CFGS[cfg].devices ? CFGS[cfg].ndev : 0;
    return o;
}

/* Run t on configuration cfg: its fleet and its device subset. */
static void run_cfg_case(int cfg, const gcase *t)
{
    clf_gemm_options o = cfg_options(cfg);
    clf_launch_report rep;
    run_case(fleet_of(cfg), t, &o, CFGS[cfg].ndev, &rep);
}

/* ---- correctness ---------------------------------------------------------------------------- */

/* _i: configuration x precision. Every layout, transpose pair, strategy and split. */
START_TEST(every_layout_transpose_strategy_split)
{
    int cfg = _i / 2, dbl = _i % 2;
    for (size_t l = 0; l < 2; l++)
        for (size_t tr = 0; tr < 4; tr++)
            for (size_t s = 0; s < NSTRATEGIES; s++)
                for (size_t sp = 0; sp < NSPLITS; sp++) {
                    if (under_valgrind() && sp != (l + tr + s) % NSPLITS)
                        continue;
                    gcase t = mk(dbl, LAYOUTS[l], TRANS[tr][0], TRANS[tr][1], 37, 53, 29, 1.5,
                                 -0.75, STRATEGIES[s], SPLITS[sp]);
                    t.pad_a = 3 * (s % 2);
                    t.pad_b = sp;
                    t.pad_c = 2 * (tr % 2);
                    run_cfg_case(cfg, &t);
                }
}
END_TEST

/* 1x1x1, fewer rows (or columns) than devices, single rows and columns, k = 1, a long k,
 * leading dimensions far beyond the minimum; alpha and beta of every kind. */
START_TEST(awkward_sizes)
{
    static const struct {
        size_t m, n, k, pad;
        double alpha, beta;
    } S[] = {
        {1, 1, 1, 0, 2.0, 0.5},    {2, 40, 7, 1, -1.0, 1.0}, {40, 2, 7, 0, 0.25, 0.0},
        {1, 64, 3, 5, 1.0, -2.0},  {64, 1, 3, 0, 3.0, 1.0},  {3, 3, 100, 2, 1.0, 0.0},
        {17, 19, 1, 0, -0.5, 0.3}, {5, 7, 3, 101, 1.0, 1.0}, {2, 2, 2, 0, 1.0, -1.0},
    };
    int cfg = _i / 2, dbl = _i % 2;
    for (size_t z = 0; z < sizeof S / sizeof S[0]; z++)
        for (size_t l = 0; l < 2; l++)
            for (size_t s = 0; s < NSTRATEGIES; s++) {
                /* Every transpose pair and every split over the sizes. */
                size_t tr = (z + l + s) % 4, sp = (z + s) % NSPLITS;
                gcase t = mk(dbl, LAYOUTS[l], TRANS[tr][0], TRANS[tr][1], S[z].m, S[z].n, S[z].k,
                             S[z].alpha, S[z].beta, STRATEGIES[s], SPLITS[sp]);
                t.pad_a = t.pad_c = S[z].pad;
                t.pad_b = S[z].pad ? S[z].pad + 1 : 0;
                run_cfg_case(cfg, &t);
            }
}
END_TEST

/* beta == 0: C is not read (NaN in it does not matter), in both splits and layouts. */
START_TEST(beta_zero_ignores_c)
{
    int cfg = _i / 2, dbl = _i % 2;
    for (size_t l = 0; l < 2; l++)
        for (size_t sp = 1; sp < NSPLITS; sp++) {
            gcase t = mk(dbl, LAYOUTS[l], CLF_TRANS, CLF_NO_TRANS, 23, 31, 11, -1.25, 0.0,
                         CLF_STRATEGY_DYNAMIC, SPLITS[sp]);
            t.pad_a = 1;
            t.pad_c = 3;
            t.nan_c = 1;
            run_cfg_case(cfg, &t);
        }
}
END_TEST

/* Large enough for clBLAST's indirect GEMM (its main kernel between transposition or padding
 * kernels, and temporaries in the context): clBLAST 1.5.3 switches to it between 832^3 and
 * 896^3 on PoCL's CPU devices (seen with POCL_TRACING; below, XgemmDirect* runs alone). */
START_TEST(indirect_path)
{
    int dbl = _i;
    clf_fleet *f = fleet_of(0);
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    size_t one = 1;
    o.devices = &one;
    o.num_devices = 1;
    clf_launch_report rep;
    size_t n = under_valgrind() ? 97 : 907;
    gcase t = mk(dbl, dbl ? CLF_COL_MAJOR : CLF_ROW_MAJOR, CLF_TRANS, CLF_NO_TRANS, n + 4, n, n - 2,
                 0.5, 2.0, CLF_STRATEGY_STATIC, CLF_GEMM_SPLIT_AUTO);
    t.pad_a = 3;
    t.pad_c = 1;
    run_case(f, &t, &o, 1, &rep);
    expect(rep.dev[0].busy_s > 0, "no device time recorded");
}
END_TEST

/* k == 0 or alpha == 0: C = beta C on the host, A and B never read (NULL when k == 0);
 * m or n == 0: nothing at all (C may be NULL). */
START_TEST(host_only_cases)
{
    clf_fleet *f = fleet_of(0);
    clf_launch_report rep;
    float c[6] = {1, 2, 3, 4, NAN, 6}, ab[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    ck_assert_ok(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 2, 3, 0, 1.0f, NULL, 1,
                           NULL, 3, 2.0f, c, 3, NULL, &rep));
    ck_assert_msg(c[0] == 2 && c[3] == 8 && c[5] == 12 && isnan(c[4]), "beta C: %g %g %g", c[0],
                  c[3], c[5]);
    ck_assert_uint_eq(rep.num_devices, 0);
    ck_assert_ptr_nonnull(strstr(rep.reason, "on the host"));
    /* beta == 0: zeros, NaN included; alpha == 0: A and B (NaN) not read. */
    ck_assert_ok(clf_sgemm(f, CLF_COL_MAJOR, CLF_TRANS, CLF_TRANS, 2, 3, 1, 0.0f, ab, 1, ab, 3,
                           0.0f, c, 2, NULL, &rep));
    for (int i = 0; i < 6; i++)
        ck_assert_msg(c[i] == 0.0f, "c[%d] = %g", i, c[i]);
    double cd[4] = {1, 2, 3, 4};
    ck_assert_ok(clf_dgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 2, 2, 0, 1.0, NULL, 1,
                           NULL, 2, 1.0, cd, 2, NULL, NULL));
    ck_assert(cd[0] == 1 && cd[1] == 2 && cd[2] == 3 && cd[3] == 4);
    double nan6[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    ck_assert_ok(clf_dgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 2, 2, 3, 0.0, nan6, 3,
                           nan6, 2, -1.0, cd, 2, NULL, NULL));
    ck_assert(cd[0] == -1 && cd[3] == -4);
    /* m == 0, n == 0: C may be NULL; the leading dimensions still follow BLAS. */
    ck_assert_ok(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 0, 3, 2, 1.0f, NULL, 2,
                           NULL, 3, 0.0f, NULL, 3, NULL, &rep));
    ck_assert_ptr_nonnull(strstr(rep.reason, "nothing to do"));
    ck_assert_ok(clf_dgemm(f, CLF_COL_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 4, 0, 2, 1.0, NULL, 4,
                           NULL, 2, 0.0, NULL, 4, NULL, NULL));
    ck_assert_status(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 0, 3, 2, 1.0f, NULL, 2,
                               NULL, 3, 0.0f, NULL, 2, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* ---- reports, metrics, options --------------------------------------------------------------
 */

/* Static with user weights 3:1 on two devices: the shares, the bytes, and the fleet's metrics
 * agree with the report; every device buffer is released afterwards. */
START_TEST(report_and_metrics)
{
    clf_fleet *f = fleet_of(0);
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    double w[2] = {3, 1};
    o.weights_mode = CLF_WEIGHTS_USER;
    o.weights = w;
    o.granularity = 1;
    clf_launch_report rep;
    ck_assert_ok(clf_metrics_reset(f));
    /* Row-major, no padding, beta != 0: rows of C (m > n), B whole. */
    gcase t = mk(0, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 80, 24, 16, 1.0, 0.5,
                 CLF_STRATEGY_STATIC, CLF_GEMM_SPLIT_AUTO);
    run_case(f, &t, &o, 2, &rep);
    ck_assert_ptr_nonnull(strstr(rep.reason, "rows of C"));
    ck_assert_ptr_nonnull(strstr(rep.reason, "user weights"));
    ck_assert_uint_eq(rep.dev[0].units, 60);
    ck_assert_uint_eq(rep.dev[1].units, 20);
    uint64_t b_bytes = 16 * 24 * 4;
    for (size_t d = 0; d < 2; d++) {
        const clf_device_report *r = &rep.dev[d];
        ck_assert_uint_eq(r->device, d);
        ck_assert_uint_eq(r->chunks, 1);
        /* B, its rows of A, its rows of C (beta != 0); its rows of C back. */
        ck_assert_uint_eq(r->bytes_to_device, b_bytes + r->units * (16 + 24) * 4);
        ck_assert_uint_eq(r->bytes_from_device, r->units * 24 * 4);
        ck_assert_msg(r->busy_s > 0 && r->to_device_s > 0 && r->from_device_s > 0,
                      "device %zu: busy %g, to %g, from %g", d, r->busy_s, r->to_device_s,
                      r->from_device_s);
        ck_assert_msg(r->finish_s > 0 && r->finish_s <= rep.makespan_s, "finish %g makespan %g",
                      r->finish_s, rep.makespan_s);
        clf_device_metrics m;
        ck_assert_ok(clf_metrics_device(&m, f, d));
        ck_assert_uint_eq(m.kernels, r->chunks);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].bytes, r->bytes_to_device);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_FROM_DEVICE].bytes, r->bytes_from_device);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].count, 3);
        ck_assert_uint_eq(m.mem_current, 0);
        ck_assert_msg(m.mem_peak == r->mem_peak, "metrics peak %llu, report %llu",
                      (unsigned long long)m.mem_peak, (unsigned long long)r->mem_peak);
        ck_assert_msg(fabs(m.busy_s - r->busy_s) < 1e-9, "busy %g vs %g", m.busy_s, r->busy_s);
    }
    ck_assert_msg(rep.efficiency > 0 && rep.efficiency <= 1, "efficiency %g", rep.efficiency);
    clf_fleet_metrics fm;
    ck_assert_ok(clf_metrics_fleet(&fm, f));
    ck_assert_uint_eq(fm.launches, 1);
    ck_assert_str_eq(fm.last_kernel, "sgemm");
    ck_assert_int_eq(fm.last_strategy, CLF_STRATEGY_STATIC);

    /* Dynamic: many blocks, each device pulls several; beta == 0 sends no C. */
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.chunks_per_device = 8;
    o.granularity = 1;
    gcase u = mk(1, CLF_COL_MAJOR, CLF_NO_TRANS, CLF_TRANS, 16, 97, 8, 1.0, 0.0,
                 CLF_STRATEGY_DYNAMIC, CLF_GEMM_SPLIT_AUTO);
    run_case(f, &u, &o, 2, &rep);
    ck_assert_ptr_nonnull(strstr(rep.reason, "columns of C"));
    unsigned chunks = rep.dev[0].chunks + rep.dev[1].chunks;
    ck_assert_msg(chunks >= 12, "dynamic: %u blocks", chunks);
    uint64_t to = rep.dev[0].bytes_to_device + rep.dev[1].bytes_to_device;
    uint64_t used = (rep.dev[0].units > 0) + (rep.dev[1].units > 0);
    ck_assert_uint_eq(to, used * 16 * 8 * 8 + 97 * 8 * 8);
}
END_TEST

/* A memory limit that holds a few rows: memory-aware streams in rounds, and AUTO picks it. */
START_TEST(memory_limits_stream)
{
    int cfg = _i;
    clf_fleet *f = fleet_of(cfg);
    size_t ndev = CFGS[cfg].ndev;
    clf_gemm_options o = cfg_options(cfg);
    uint64_t limits[3];
    /* 64 x 48 x 32 floats, split by rows: B 6 KiB whole (x2 with clBLAST's copy), and
     * 3 x (32 + 48) x 4 = 960 bytes per row: 6 rows fit in 18 KiB. */
    for (size_t i = 0; i < 3; i++)
        limits[i] = 2 * 32 * 48 * 4 + 6 * 960 + 100;
    o.mem_limits = limits;
    o.granularity = 1;
    clf_launch_report rep;
    clf_strategy S[2] = {CLF_STRATEGY_MEMORY_AWARE, CLF_STRATEGY_AUTO};
    for (int s = 0; s < 2; s++) {
        gcase t = mk(0, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 64, 48, 32, 1.0, 1.0, S[s],
                     CLF_GEMM_SPLIT_M);
        run_case(f, &t, &o, ndev, &rep);
        ck_assert_int_eq(rep.strategy, CLF_STRATEGY_MEMORY_AWARE);
        unsigned chunks = 0;
        for (size_t d = 0; d < ndev; d++) {
            chunks += rep.dev[d].chunks;
            ck_assert_uint_eq(rep.dev[d].mem_budget, limits[d]);
            ck_assert_msg(rep.dev[d].mem_peak <= limits[d], "peak %llu",
                          (unsigned long long)rep.dev[d].mem_peak);
        }
        ck_assert_msg(chunks >= 64 / 6, "%u blocks", chunks);
    }
    /* Not even B fits: a clear error, nothing run. */
    for (size_t i = 0; i < 3; i++)
        limits[i] = 32 * 48 * 4;
    float a[64 * 32] = {0}, b[32 * 48] = {0}, c[64 * 48] = {0};
    o.strategy = CLF_STRATEGY_AUTO;
    o.split = CLF_GEMM_SPLIT_M;
    ck_assert_status(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 64, 48, 32, 1.0f, a,
                               32, b, 48, 0.0f, c, 48, &o, &rep),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "no device can hold"));
}
END_TEST

/* One listed device takes everything; the others are not in the report. */
START_TEST(device_subset)
{
    clf_fleet *f = fleet_of(1);
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    size_t dev = 3;
    o.devices = &dev;
    o.num_devices = 1;
    clf_launch_report rep;
    gcase t = mk(1, CLF_ROW_MAJOR, CLF_TRANS, CLF_TRANS, 30, 20, 10, 1.0, -1.0, CLF_STRATEGY_GUIDED,
                 CLF_GEMM_SPLIT_AUTO);
    run_case(f, &t, &o, 1, &rep);
    ck_assert_uint_eq(rep.dev[0].device, 3);
    ck_assert_uint_eq(rep.dev[0].units, 30);
}
END_TEST

/* After a few calls the GEMM throughput of every device is known: AUTO runs static with it. */
START_TEST(learned_weights)
{
    clf_fleet *f = fleet_of(0);
    clf_launch_report rep;
    gcase t = mk(0, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 64, 40, 24, 1.0, 0.0,
                 CLF_STRATEGY_STATIC, CLF_GEMM_SPLIT_M);
    for (int i = 0; i < 3; i++)
        run_case(f, &t, NULL, 2, &rep);
    t.strategy = CLF_STRATEGY_AUTO;
    run_case(f, &t, NULL, 2, &rep);
    /* Static, unless static balanced this small GEMM badly (a loaded host's thread starts
     * outweigh its blocks): then AUTO tries dynamic, and keeps it while dynamic's measured
     * makespan per unit is the shorter (auto_falls_back_to_dynamic). Or on one device
     * alone, when the cost model (each device's rate and fixed cost per block, learned
     * from these calls) predicts that sooner than splitting a GEMM this small. */
    if (rep.strategy == CLF_STRATEGY_STATIC && strstr(rep.reason, " alone (") != NULL) {
        ck_assert_msg(strstr(rep.reason, "predicted") != NULL, "%s", rep.reason);
        return;
    }
    ck_assert_msg(rep.strategy == CLF_STRATEGY_STATIC ||
                      (rep.strategy == CLF_STRATEGY_DYNAMIC &&
                       (strstr(rep.reason, "auto: dynamic (static balanced") != NULL ||
                        strstr(rep.reason, "auto: dynamic (makespan per unit: static") != NULL)),
                  "ran as %s: %s", clf_strategy_name(rep.strategy), rep.reason);
    ck_assert_msg(strstr(rep.reason, "learned weights") != NULL, "%s", rep.reason);
}
END_TEST

/* ---- the chunk executor's behaviour (issue 15) ----------------------------------------------
 */

/* A fleet of FLEET2 created with CLFLEET_FAULT_INJECT set to rules. */
static clf_fleet *fault_fleet(const char *rules)
{
    setenv("CLFLEET_FAULT_INJECT", rules, 1);
    clf_fleet *f = test_fleet(CFGS[0].selection, CFGS[0].context_per_device);
    unsetenv("CLFLEET_FAULT_INJECT");
    return f;
}

/*
 * Device 1 fails at its first call of one kind (the operand's or a block's upload, the
 * clBLAST call's enqueue or execution, C's read, a buffer): the GEMM still returns the right
 * C (run_case()'s reference), device 0 computing device 1's blocks, and the report says so.
 * A device fault leaves device 1 out of the next GEMM, until clf_device_readmit().
 */
START_TEST(failed_device_requeued)
{
    static const char *const RULES[] = {
        "device=1,call=exec",  "device=1,call=enqueue", "device=1,call=write",
        "device=1,call=read",  "device=1,call=alloc",   "device=1,call=write,after=5",
        "device=1,call=read,after=1,count=all",
    };
    const char *rule = RULES[_i];
    clf_fleet *f = fault_fleet(rule);
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    uint64_t limits[2] = {0, 0};
    o.granularity = 1;
    /* Static: device 1's share is its own (never stolen), so it surely meets the fault. The
     * last two rules fail its third block's upload (the operand, then a block of A and of C
     * each: the sixth) or every read after the first: small budgets make each device's
     * share several blocks (static's rounds of 6 rows), so some finished before the failure. */
    if (_i >= 5) {
        limits[0] = limits[1] = 2 * 32 * 48 * 4 + 6 * 3 * (32 + 48) * 4 + 100;
        o.mem_limits = limits;
    }
    gcase t = mk(0, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 64, 48, 32, 1.5, 0.5,
                 CLF_STRATEGY_STATIC, CLF_GEMM_SPLIT_M);
    clf_launch_report rep;
    may_fail = 1;
    run_case(f, &t, &o, 2, &rep);
    may_fail = 0;
    ck_assert_msg(rep.dev[1].failed && rep.dev[1].status != CLF_SUCCESS, "%s: device 1 %s",
                  rule, clf_status_name(rep.dev[1].status));
    /* The injected status, on device 1. */
    /* CL_MEM_OBJECT_ALLOCATION_FAILURE (-4) for a buffer, else CL_OUT_OF_RESOURCES (-5). */
    int want = strstr(rule, "alloc") ? -4 : -5;
    ck_assert_msg(rep.dev[1].cl_error == want, "%s: cl_error %d", rule, (int)rep.dev[1].cl_error);
    ck_assert_msg(strstr(rep.dev[1].error, "device 1"), "%s: '%s'", rule, rep.dev[1].error);
    ck_assert_uint_eq(rep.failed_devices, 1);
    ck_assert_msg(!rep.dev[0].failed && rep.dev[0].units > rep.dev[1].units, "%s: %llu, %llu",
                  rule, (unsigned long long)rep.dev[0].units,
                  (unsigned long long)rep.dev[1].units);
    ck_assert_msg(rep.dev[1].requeued_units > 0 && rep.requeued_units == rep.dev[1].requeued_units,
                  "%s: requeued %llu", rule, (unsigned long long)rep.requeued_units);
    ck_assert_uint_eq(rep.done_units, 64);
    if (_i >= 5)
        ck_assert_msg(rep.dev[1].units > 0, "%s: device 1 finished no block first", rule);
    /* Every default status of the injection is a device fault: the next GEMM leaves device 1
     * out (device 0 does it all), and once readmitted it takes work again (the rules' counts
     * are spent, but for "count=all": it fails again, and is re-run around again). */
    run_case(f, &t, &o, 2, &rep);
    ck_assert_msg(rep.dev[1].excluded && rep.dev[1].status == CLF_ERROR_DEVICE_FAILED,
                  "%s: device 1 not left out", rule);
    ck_assert_uint_eq(rep.dev[1].units, 0);
    ck_assert_uint_eq(rep.dev[0].units, 64);
    ck_assert_ok(clf_device_readmit(f, 1));
    may_fail = 1;
    run_case(f, &t, &o, 2, &rep);
    may_fail = 0;
    ck_assert_msg(!rep.dev[1].excluded, "%s: device 1 still left out", rule);
    if (_i != 6)
        ck_assert_msg(!rep.dev[1].failed && rep.dev[1].units > 0, "%s: readmitted: %llu units",
                      rule, (unsigned long long)rep.dev[1].units);
    clf_fleet_destroy(f);
}
END_TEST

/*
 * AUTO leaves static for dynamic when static balanced this GEMM badly: static with user
 * weights 50:1 gives device 1 a sliver (efficiency far below 0.9) and teaches both devices'
 * throughput, so AUTO would pick static; it picks dynamic, says why, and C is right.
 */
START_TEST(auto_falls_back_to_dynamic)
{
    clf_fleet *f = test_fleet(CFGS[0].selection, CFGS[0].context_per_device);
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    double w[2] = {50, 1};
    o.weights_mode = CLF_WEIGHTS_USER;
    o.weights = w;
    o.granularity = 1;
    clf_launch_report rep;
    gcase t = mk(0, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 510, 256, 256, 1.0, 0.0,
                 CLF_STRATEGY_STATIC, CLF_GEMM_SPLIT_M);
    /* AUTO goes by the last static run's efficiency: three runs teach the throughputs, and
     * a few more only should a host hiccup have delayed device 0's start. */
    int runs = 0;
    do {
        run_case(f, &t, &o, 2, &rep);
        ck_assert_int_eq(rep.strategy, CLF_STRATEGY_STATIC);
        ck_assert_uint_eq(rep.dev[1].units, 10);
    } while (++runs < 3 || (rep.efficiency >= 0.9 && runs < 8));
    ck_assert_msg(rep.efficiency < 0.9, "static 50:1: efficiency %g", rep.efficiency);
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.granularity = 1;
    /* Blocks asked for: without them, a fixed cost per block measured high on a loaded
     * host (make -j check) may rightly make dynamic take the whole GEMM in one block. */
    o.chunks_per_device = 4;
    t.strategy = CLF_STRATEGY_AUTO;
    run_case(f, &t, &o, 2, &rep);
    ck_assert_int_eq(rep.requested, CLF_STRATEGY_AUTO);
    ck_assert_msg(rep.strategy == CLF_STRATEGY_DYNAMIC, "ran as %s: %s",
                  clf_strategy_name(rep.strategy), rep.reason);
    ck_assert_msg(strstr(rep.reason, "auto: dynamic (static balanced") != NULL &&
                      strstr(rep.reason, "learned weights") != NULL &&
                      strstr(rep.reason, "rows of C") != NULL,
                  "%s", rep.reason);
    /* Blocks pulled on demand (which device pulls them is the host's timing). */
    ck_assert_msg(rep.dev[0].chunks + rep.dev[1].chunks >= 4, "dynamic: %u + %u blocks",
                  rep.dev[0].chunks, rep.dev[1].chunks);
    clf_fleet_destroy(f);
}
END_TEST

/*
 * Issue 27: under CLFLEET_SIMULATE device 1 of FLEET2 is 50x slower with 60 us more per
 * command. After a few learning calls (guided and dynamic: device 1 runs blocks of several
 * sizes, so the cost model has its line), every strategy gives it almost nothing, by the
 * report's units, and when nothing, the reason says why; C is right each time (run_case()).
 * Before the simulation held back all of clBLAST's kernels, the model saw device 1 barely
 * slower and static gave it half of C.
 */
START_TEST(slow_device_gets_almost_nothing)
{
    setenv("CLFLEET_SIMULATE", "device=1,compute=0.02,latency=60us", 1);
    clf_fleet *f = test_fleet(CFGS[0].selection, CFGS[0].context_per_device);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_uint_eq(clf_fleet_device_count(f), 2);
    clf_launch_report rep;
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    o.granularity = 8; /* a block is 8 of 256 rows: 3.1 % */
    gcase t = mk(0, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 256, 256, 256, 1.0, 0.0,
                 CLF_STRATEGY_GUIDED, CLF_GEMM_SPLIT_M);
    static const clf_strategy learn[] = {CLF_STRATEGY_GUIDED, CLF_STRATEGY_DYNAMIC,
                                         CLF_STRATEGY_GUIDED, CLF_STRATEGY_DYNAMIC};
    /* (Device 1 may run nothing here when the suite's model directory kept its figures.) */
    for (size_t i = 0; i < sizeof learn / sizeof *learn; i++) {
        t.strategy = learn[i];
        run_case(f, &t, &o, 2, &rep);
    }
    for (size_t s = 0; s < sizeof STRATEGIES / sizeof *STRATEGIES; s++) {
        t.strategy = STRATEGIES[s];
        run_case(f, &t, &o, 2, &rep);
        const clf_device_report *slow = rep.dev[0].device == 1 ? &rep.dev[0] : &rep.dev[1];
        double share = (double)slow->units / (double)rep.total_units;
        fprintf(stderr, "50:1 GEMM %s (ran as %s): device 1 took %.1f %% of C: %s\n",
                clf_strategy_name(STRATEGIES[s]), clf_strategy_name(rep.strategy), share * 100,
                rep.reason);
        /* One block at most (3.1 %), a 50x slower device's fair share being 2 %. */
        ck_assert_msg(share <= 8.0 / 256, "%s: device 1 (50x slower) took %.1f %% of C: %s",
                      clf_strategy_name(STRATEGIES[s]), share * 100, rep.reason);
        if (slow->units == 0)
            ck_assert_msg(strstr(rep.reason, "too slow to help") ||
                              strstr(rep.reason, "left out") || strstr(rep.reason, "alone"),
                          "%s: device 1 took nothing, and the reason does not say why: %s",
                          clf_strategy_name(STRATEGIES[s]), rep.reason);
    }
    clf_fleet_destroy(f);
}
END_TEST

/* CLFLEET_STRATEGY, read when the fleet is created, applies to calls that ask for the
 * default; a bad value fails the creation. */
START_TEST(strategy_from_environment)
{
    clf_launch_report rep;
    gcase t = mk(0, CLF_COL_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 20, 30, 10, 1.0, 0.0,
                 CLF_STRATEGY_DEFAULT, CLF_GEMM_SPLIT_AUTO);
    setenv("CLFLEET_STRATEGY", "dynamic", 1);
    clf_fleet *f = test_fleet(CFGS[0].selection, CFGS[0].context_per_device);
    unsetenv("CLFLEET_STRATEGY");
    run_case(f, &t, NULL, 2, &rep);
    ck_assert_int_eq(rep.requested, CLF_STRATEGY_DYNAMIC);
    ck_assert_int_eq(rep.strategy, CLF_STRATEGY_DYNAMIC);
    clf_fleet_destroy(f);
    setenv("CLFLEET_STRATEGY", "fastest", 1);
    f = NULL;
    ck_assert_status(clf_fleet_create(&f, NULL), CLF_ERROR_PARSE);
    ck_assert_ptr_null(f);
    unsetenv("CLFLEET_STRATEGY");
}
END_TEST

/* ---- bad input
 * --------------------------------------------------------------------------------
 */

START_TEST(bad_input)
{
    clf_fleet *f = fleet_of(0);
    float a[64] = {0}, b[64] = {0}, c[64] = {0};
    double d[64] = {0};
    clf_launch_report rep;
    const clf_layout R = CLF_ROW_MAJOR, C = CLF_COL_MAJOR;
    const clf_transpose N = CLF_NO_TRANS, T = CLF_TRANS;
#define S(...) clf_sgemm(__VA_ARGS__)
    /* Handles, layout and transposes. */
    ck_assert_status(S(NULL, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, &rep),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(S(f, (clf_layout)0, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(S(f, R, (clf_transpose)'n', N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "trans_a"));
    ck_assert_status(S(f, R, N, (clf_transpose)114, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "trans_b"));
    /* NULL arrays that the sizes need. */
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, NULL, 2, b, 2, 0, c, 2, NULL, NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, NULL, 2, 0, c, 2, NULL, NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, NULL, 2, NULL, NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_dgemm(f, C, T, T, 2, 2, 2, 1, d, 2, d, 2, 1, NULL, 2, NULL, NULL),
                     CLF_ERROR_NULL_POINTER);
    /* Leading dimensions, as BLAS checks them: m = 3, n = 5, k = 4. */
    static const struct {
        clf_layout l;
        clf_transpose ta, tb;
        size_t lda, ldb, ldc; /* the smallest valid ones */
    } LD[] = {
        {CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 4, 5, 5},
        {CLF_ROW_MAJOR, CLF_TRANS, CLF_NO_TRANS, 3, 5, 5},
        {CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_TRANS, 4, 4, 5},
        {CLF_ROW_MAJOR, CLF_TRANS, CLF_TRANS, 3, 4, 5},
        {CLF_COL_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 3, 4, 3},
        {CLF_COL_MAJOR, CLF_TRANS, CLF_NO_TRANS, 4, 4, 3},
        {CLF_COL_MAJOR, CLF_NO_TRANS, CLF_TRANS, 3, 5, 3},
        {CLF_COL_MAJOR, CLF_TRANS, CLF_TRANS, 4, 5, 3},
    };
    float big[64] = {0};
    for (size_t i = 0; i < sizeof LD / sizeof LD[0]; i++) {
        size_t la = LD[i].lda, lb = LD[i].ldb, lc = LD[i].ldc;
        ck_assert_ok(
            S(f, LD[i].l, LD[i].ta, LD[i].tb, 3, 5, 4, 1, big, la, big, lb, 0, c, lc, NULL, NULL));
        ck_assert_status(S(f, LD[i].l, LD[i].ta, LD[i].tb, 3, 5, 4, 1, big, la - 1, big, lb, 0, c,
                           lc, NULL, NULL),
                         CLF_ERROR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(clf_last_error(), "lda"));
        ck_assert_status(S(f, LD[i].l, LD[i].ta, LD[i].tb, 3, 5, 4, 1, big, la, big, lb - 1, 0, c,
                           lc, NULL, NULL),
                         CLF_ERROR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(clf_last_error(), "ldb"));
        ck_assert_status(S(f, LD[i].l, LD[i].ta, LD[i].tb, 3, 5, 4, 1, big, la, big, lb, 0, c,
                           lc - 1, NULL, NULL),
                         CLF_ERROR_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(clf_last_error(), "ldc"));
    }
    /* ld >= 1 even for empty matrices. */
    ck_assert_status(S(f, R, N, N, 0, 0, 0, 1, NULL, 0, NULL, 1, 0, NULL, 1, NULL, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    /* Extents that overflow. */
    size_t huge = SIZE_MAX / 2;
    ck_assert_status(S(f, R, N, N, huge, 2, 2, 1, a, 2, b, 2, 0, c, 2, NULL, NULL),
                     CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(S(f, C, N, N, 2, 2, huge, 1, a, 2, b, huge, 0, c, 2, NULL, NULL),
                     CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, huge, NULL, NULL),
                     CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(
        clf_dgemm(f, R, N, N, SIZE_MAX / 8 + 2, 1, 1, 1, d, 1, d, 1, 0, d, 1, NULL, NULL),
        CLF_ERROR_SIZE_OVERFLOW);
    /* Options. */
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    o.version = 99;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(S(f, R, N, N, 2, 2, 0, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.split = (clf_gemm_split)7;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.strategy = (clf_strategy)42;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.mem_safety = 1.5;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o.mem_safety = NAN;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.weights_mode = CLF_WEIGHTS_USER;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_NULL_POINTER);
    double neg[2] = {1, -1}, zero[2] = {0, 0};
    o.weights = neg;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o.weights = zero;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.weights_mode = (clf_weights)9;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    /* Devices: out of range, twice, none. */
    size_t devs[2] = {0, 5};
    o = (clf_gemm_options)CLF_GEMM_OPTIONS_INIT;
    o.devices = devs;
    o.num_devices = 2;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_OUT_OF_RANGE);
    devs[1] = 0;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    o.num_devices = 0;
    ck_assert_status(S(f, R, N, N, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2, &o, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
#undef S
    /* Every failure above left the report empty. */
    ck_assert_uint_eq(rep.num_devices, 0);
    ck_assert_int_eq(clf_blas_available(), 1);
}
END_TEST

/* The log lines the next test collects. */
static char note[1024];
static int notes, note_level;

static void collect_note(void *user, clf_log_level level, const char *msg)
{
    (void)user;
    if (!strstr(msg, "clBLAST compiles"))
        return;
    notes++;
    note_level = (int)level;
    snprintf(note, sizeof note, "%s", msg);
}

/* The first GEMM of a fleet, while clBLAST compiles its kernels (seconds), is announced
 * once, at info, naming the call; the next one is not. */
START_TEST(first_gemm_noted)
{
    setenv("CLFLEET_LOG", "info", 1);
    clf_fleet *f = test_fleet(TEST_CPUS ";name=pthread", 0);
    unsetenv("CLFLEET_LOG");
    notes = 0;
    clf_log_set_handler(collect_note, NULL);
    float a[16], b[16], c[16];
    for (int i = 0; i < 16; i++)
        a[i] = (float)i, b[i] = i == 0 || i == 5 || i == 10 || i == 15;
    for (int k = 0; k < 2; k++) {
        ck_assert_ok(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 4, 4, 4, 1.0f, a, 4,
                               b, 4, 0.0f, c, 4, NULL, NULL));
        for (int i = 0; i < 16; i++)
            ck_assert_msg(c[i] == a[i], "A x I: element %d is %g", i, (double)c[i]);
        ck_assert_int_eq(notes, 1);
    }
    clf_log_set_handler(NULL, NULL);
    ck_assert_msg(strstr(note, "clf_sgemm:") && strstr(note, "single-precision"), "%s", note);
    ck_assert_int_eq(note_level, CLF_LOG_INFO);
    clf_fleet_destroy(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, NULL, fleets_teardown);
    tcase_add_loop_test(tc, every_layout_transpose_strategy_split, 0, 2 * NCFGS);
    tcase_add_loop_test(tc, awkward_sizes, 0, 2 * NCFGS);
    tcase_add_loop_test(tc, beta_zero_ignores_c, 0, 2 * NCFGS);
    tcase_add_loop_test(tc, indirect_path, 0, 2);
    tcase_add_test(tc, host_only_cases);
    tcase_add_test(tc, report_and_metrics);
    tcase_add_loop_test(tc, memory_limits_stream, 0, NCFGS);
    tcase_add_test(tc, device_subset);
    tcase_add_test(tc, learned_weights);
    tcase_add_test(tc, strategy_from_environment);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, first_gemm_noted);
    suite_add_tcase(s, tc);
    tc = tcase_create("executor");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, failed_device_requeued, 0, 7);
    tcase_add_test(tc, auto_falls_back_to_dynamic);
    tcase_add_test(tc, slow_device_gets_almost_nothing);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET4, 4);
}

#else /* built without clBLAST */

/* The functions exist and say why they cannot run, whatever the arguments. */
START_TEST(unsupported)
{
    float x[4] = {0};
    double y[4] = {0};
    clf_launch_report rep;
    rep.num_devices = 7;
    ck_assert_int_eq(clf_blas_available(), 0);
    ck_assert_status(clf_sgemm(NULL, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, 2, 2, 1, 1.0f, x, 1,
                               x, 2, 0.0f, x, 2, NULL, &rep),
                     CLF_ERROR_UNSUPPORTED);
    ck_assert_uint_eq(rep.num_devices, 0);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "without clBLAST"));
    ck_assert_status(clf_dgemm(NULL, CLF_COL_MAJOR, CLF_TRANS, CLF_TRANS, 2, 2, 1, 1.0, y, 1, y, 2,
                               0.0, y, 2, NULL, NULL),
                     CLF_ERROR_UNSUPPORTED);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("unsupported");
    tcase_add_test(tc, unsupported);
    suite_add_tcase(s, tc);
    return test_run(s, NULL, 0);
}

#endif

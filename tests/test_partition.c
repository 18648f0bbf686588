/*
 * The partitioner (lib/plan/partition.c) and the learned throughput model (lib/plan/perfmodel.c):
 * pure logic, no OpenCL. Thousands of generated cases: every total 1..300 with several
 * granularities, device counts, weights (zeros, skew, extremes) and memory caps (0, tiny,
 * unlimited), random orders of next() calls, requeues and retired devices, and ranges near
 * 2^63 and 2^64. Every case checks exact coverage against an independent reference.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/partition.h"
#include "plan/perfmodel.h"
#include "plan/workprof.h"

/* Checks inside hot loops: Check's ck_assert_* records a mark point (a write) even when the
 * assertion holds, which would dominate the run time of a million chunks. */
#define REQUIRE(cond, ...)             \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

typedef unsigned long long ull;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* splitmix64: tiny, full period, and the same sequence everywhere. */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t n)
{
    return n ? rng() % n : 0;
}

typedef struct chunk {
    uint64_t off, len;
    size_t dev;
} chunk;

typedef struct chunk_list {
    chunk *c;
    size_t n, cap;
} chunk_list;

static void list_push(chunk_list *l, uint64_t off, uint64_t len, size_t dev)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->c = realloc(l->c, l->cap * sizeof *l->c);
        ck_assert_ptr_nonnull(l->c);
    }
    l->c[l->n].off = off;
    l->c[l->n].len = len;
    l->c[l->n].dev = dev;
    l->n++;
}

static int chunk_cmp(const void *a, const void *b)
{
    const chunk *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* The description of the case under test, for failure messages. */
static char what[512];

/* A partitioning problem. */
typedef struct pcase {
    clf__part_strategy s;
    uint64_t total, gran;
    size_t ndev;
    const double *w;     /* NULL: equal */
    const uint64_t *cap; /* NULL: unlimited */
    clf__part_params prm;
} pcase;

static uint64_t cap_of(const pcase *c, size_t d)
{
    return c->cap ? c->cap[d] : UINT64_MAX;
}

static int ref_eligible(const pcase *c, size_t d)
{
    uint64_t need = c->total < c->gran ? c->total : c->gran;
    return cap_of(c, d) >= need;
}

/* Weights as the definition normalises them: ineligible devices 0, all-zero means equal. */
static void ref_weights(const pcase *c, double *wn)
{
    double wmax = 0;
    for (size_t d = 0; d < c->ndev; d++)
        if (ref_eligible(c, d) && c->w && c->w[d] > wmax)
            wmax = c->w[d];
    for (size_t d = 0; d < c->ndev; d++) {
        if (!ref_eligible(c, d))
            wn[d] = 0;
        else if (!c->w)
            wn[d] = 1.0;
        else
            wn[d] = wmax > 0 ? c->w[d] / wmax : 1.0;
    }
}

/* min(rem, roundup(want, gran)), then capped to whole granules: 128-bit, so no overflow. */
static uint64_t ref_len(uint64_t gran, uint64_t rem, uint64_t want, uint64_t cap)
{
    unsigned __int128 r = ((unsigned __int128)(want ? want : 1) + gran - 1) / gran * gran;
    uint64_t len = r >= rem ? rem : (uint64_t)r;
    if (len > cap)
        len = cap / gran * gran;
    return len;
}

/* Device d's weight and the eligible devices' sum, all-zero meaning equal. */
static void ref_share(const pcase *c, size_t d, long double *wd, long double *wsum)
{
    *wd = c->w ? c->w[d] : 1.0;
    *wsum = 0;
    for (size_t i = 0; i < c->ndev; i++)
        if (ref_eligible(c, i))
            *wsum += c->w ? c->w[i] : 1.0;
    if (*wsum == 0) { /* all zero: equal */
        size_t n = 0;
        for (size_t i = 0; i < c->ndev; i++)
            n += ref_eligible(c, i);
        *wsum = (long double)n;
        *wd = 1;
    }
}

static size_t ref_neligible(const pcase *c)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ndev; i++)
        n += ref_eligible(c, i);
    return n;
}

/*
 * With fixed costs per chunk (c->prm.fixed_s): d's share of the R pooled units such that the
 * eligible devices of positive rate finish together, f_j + c_j / r_j = T, sum(c_j) = R,
 * leaving out (and solving again) those whose f_j reaches T; negative when d is left out.
 * 0 and *known = 0 when no fixed costs are given or every rate is 0.
 */
static long double ref_timed(const pcase *c, size_t d, uint64_t r, int *known)
{
    const double *rate = c->prm.rates ? c->prm.rates : c->w;
    int out[16] = {0};
    long double T = 0;
    *known = 0;
    if (!c->prm.fixed_s || !rate)
        return 0;
    for (;;) {
        long double rs = 0, fr = 0;
        for (size_t j = 0; j < c->ndev; j++)
            if (ref_eligible(c, j) && !out[j] && rate[j] > 0) {
                rs += rate[j];
                fr += (long double)c->prm.fixed_s[j] * rate[j];
            }
        if (rs <= 0)
            return 0;
        T = ((long double)r + fr) / rs;
        int changed = 0;
        for (size_t j = 0; j < c->ndev; j++)
            if (ref_eligible(c, j) && !out[j] && rate[j] > 0 && c->prm.fixed_s[j] >= T)
                out[j] = changed = 1;
        if (!changed)
            break;
    }
    *known = 1;
    return (long double)rate[d] * (T - (long double)c->prm.fixed_s[d]);
}

/* With fixed costs, the least chunk whose fixed cost is at most 10 % of its time on d:
 * 9 f_d r_d units (side 0/1: low/high end of the float uncertainty), at most total; 0
 * for STATIC, without fixed costs or with f_d or r_d 0. */
static uint64_t ref_floor(const pcase *c, size_t d, int side)
{
    const double *rate = c->prm.rates ? c->prm.rates : c->w;
    if (c->s == CLF__PART_STATIC || !c->prm.fixed_s || !rate || !(rate[d] > 0) ||
        !(c->prm.fixed_s[d] > 0))
        return 0;
    long double x = 9.0L * c->prm.fixed_s[d] * rate[d] * (side ? 1 + 1e-12L : 1 - 1e-12L);
    return x >= (long double)c->total ? c->total : (uint64_t)ceill(x);
}

/* The pool limit (side 0: low end of the float uncertainty, 1: high end): the device's share
 * by weight of the R pooled units (by time with fixed costs, ref_timed()), rounded up; R when
 * it is the only eligible device. */
static uint64_t ref_limit(const pcase *c, size_t d, uint64_t r, int side)
{
    if (ref_neligible(c) <= 1)
        return r;
    long double wd, wsum;
    ref_share(c, d, &wd, &wsum);
    long double x = (long double)r * (wd / wsum);
    int timed;
    long double t = ref_timed(c, d, r, &timed);
    if (timed)
        x = t > 0 ? t : 0;
    x *= side ? 1 + 1e-12L : 1 - 1e-12L;
    uint64_t f = x < (long double)r ? (uint64_t)ceill(x) : r;
    /* At least the chunk worth its fixed cost (ref_floor()), or R when shorter. */
    uint64_t fl = ref_floor(c, d, side);
    if (f < fl)
        f = fl < r ? fl : r;
    return f ? f : 1;
}

/* Whether d should stand aside when R units remain: its share is under one granule (or
 * under R when R is less) and an eligible device has a larger weight. */
static int ref_aside_tol(const pcase *c, size_t d, uint64_t r, long double tol);

static int ref_stands_aside(const pcase *c, size_t d, uint64_t r)
{
    return ref_aside_tol(c, d, r, 1 - 1e-12L);
}

/* As ref_stands_aside(), with d's share multiplied by tol (1 -/+ the float uncertainty). */
static int ref_aside_tol(const pcase *c, size_t d, uint64_t r, long double tol)
{
    double wn[16];
    ref_weights(c, wn);
    int faster = 0;
    for (size_t j = 0; j < c->ndev; j++)
        faster |= ref_eligible(c, j) && wn[j] > wn[d];
    if (!faster || ref_neligible(c) <= 1)
        return 0;
    long double wd, wsum;
    ref_share(c, d, &wd, &wsum);
    uint64_t fl = ref_floor(c, d, tol < 1), least = fl > c->gran ? fl : c->gran;
    if (least > r)
        least = r;
    long double x = (long double)r * (wd / wsum);
    int timed;
    long double t = ref_timed(c, d, r, &timed);
    if (timed) /* its fixed cost and smallest chunk outlast what the fleet needs for R */
        x = t > 0 ? t : 0;
    return x * tol < (long double)least;
}

/* Whether d is the only eligible device, or every other one stands aside with R left: then
 * it takes the whole of R in one chunk (capped). side: as ref_limit()'s. */
static int ref_alone(const pcase *c, size_t d, uint64_t r, int side)
{
    /* side 1 (the longest chunk): every other one may stand aside; side 0: surely does. */
    for (size_t j = 0; j < c->ndev; j++)
        if (j != d && ref_eligible(c, j) &&
            !ref_aside_tol(c, j, r, side ? 1 - 1e-12L : 1 + 1e-12L))
            return 0;
    return 1;
}


/*
 * The HGuided chunk for a device asking when R units remain in one contiguous range, from
 * the raw weights: min(R, max(m, roundup(R * P / K, gran))), capped, and no more than the
 * device's share of R (the whole R when it is alone). Weights are doubles, so R * P / K is
 * known only to about 1e-12 relative: *lo and *hi bound the chunk over that uncertainty
 * (equal unless R * P / K is within it of an integer).
 */
static void ref_guided(const pcase *c, size_t d, uint64_t r, uint64_t *lo, uint64_t *hi)
{
    long double wd, wsum;
    ref_share(c, d, &wd, &wsum);
    long double k = c->prm.guided_k ? (long double)c->prm.guided_k : 4.0L;
    long double x = (long double)r * (wd / wsum) / k;
    uint64_t m =
        c->prm.min_chunks && c->prm.min_chunks[d] ? c->prm.min_chunks[d] : c->prm.min_chunk;
    if (m == 0)
        m = c->gran;
    for (int side = 0; side < 2; side++) {
        long double xs = x * (side ? 1 + 1e-12L : 1 - 1e-12L);
        uint64_t want = xs < (long double)r ? (uint64_t)ceill(xs) : r;
        if (want < m)
            want = m;
        if (want < ref_floor(c, d, side))
            want = ref_floor(c, d, side);
        uint64_t lim = ref_limit(c, d, r, side);
        if (ref_alone(c, d, r, side))
            want = lim = r;
        if (want > lim)
            want = lim;
        *(side ? hi : lo) = ref_len(c->gran, r, want, cap_of(c, d));
    }
}

/* DYNAMIC: the fastest device's chunk ceil(total / (k n)), the others' scaled by their
 * weight over the largest (at least 1 unit), then limited as GUIDED's. */
static void ref_dynamic(const pcase *c, size_t d, uint64_t r, uint64_t *lo, uint64_t *hi)
{
    uint64_t n = ref_neligible(c);
    uint64_t k = c->prm.chunks_per_device ? c->prm.chunks_per_device : 4;
    uint64_t dyn = c->total / (k * n) + (c->total % (k * n) != 0);
    double wn[16];
    ref_weights(c, wn);
    for (int side = 0; side < 2; side++) {
        long double x = (long double)dyn * wn[d] * (side ? 1 + 1e-12L : 1 - 1e-12L);
        uint64_t want = x >= (long double)dyn ? dyn : x >= 1 ? (uint64_t)x : 1;
        if (want < ref_floor(c, d, side))
            want = ref_floor(c, d, side);
        uint64_t lim = ref_limit(c, d, r, side);
        if (ref_alone(c, d, r, side))
            want = lim = r;
        if (want > lim)
            want = lim;
        *(side ? hi : lo) = ref_len(c->gran, r, want, cap_of(c, d));
    }
}

/*
 * The chunks (those not given back) must cover [0, total) exactly once, be non-empty,
 * start at multiples of gran, have lengths that are multiples of gran except the one
 * ending at total, respect the cap of the device that took them, and never go to an
 * ineligible device. Sorts the list.
 */
static void check_cover(const pcase *c, chunk_list *l)
{
    qsort(l->c, l->n, sizeof *l->c, chunk_cmp);
    uint64_t at = 0;
    for (size_t i = 0; i < l->n; i++) {
        const chunk *k = &l->c[i];
        REQUIRE(k->off == at, "%s: gap or overlap at %llu (chunk at %llu)", what, (ull)at,
                (ull)k->off);
        REQUIRE(k->len > 0, "%s: empty chunk at %llu", what, (ull)k->off);
        REQUIRE(k->len <= c->total - k->off, "%s: chunk past the end", what);
        REQUIRE(k->off % c->gran == 0, "%s: chunk at %llu not aligned", what, (ull)k->off);
        REQUIRE(k->len % c->gran == 0 || k->off + k->len == c->total,
                "%s: chunk [%llu,+%llu) not a multiple of %llu", what, (ull)k->off, (ull)k->len,
                (ull)c->gran);
        REQUIRE(k->dev < c->ndev, "%s: bad device", what);
        REQUIRE(k->len <= cap_of(c, k->dev), "%s: chunk of %llu > cap %llu of device %zu", what,
                (ull)k->len, (ull)cap_of(c, k->dev), k->dev);
        REQUIRE(ref_eligible(c, k->dev), "%s: ineligible device %zu got work", what, k->dev);
        at += k->len;
    }
    REQUIRE(at == c->total, "%s: covered %llu of %llu", what, (ull)at, (ull)c->total);
}

/* STATIC: each device's units within one granule of total * w / sum, plus float noise on
 * huge totals: 2^-50 relative, as long double may have only double's 53 bits (valgrind
 * emulates it so, and it is so on some ABIs). */
static void check_static_shares(const pcase *c, const chunk_list *l)
{
    double wn[16];
    ref_weights(c, wn);
    long double sum = 0;
    for (size_t d = 0; d < c->ndev; d++)
        sum += wn[d];
    for (size_t d = 0; d < c->ndev; d++) {
        uint64_t got = 0;
        for (size_t i = 0; i < l->n; i++)
            if (l->c[i].dev == d)
                got += l->c[i].len;
        long double ideal = (long double)c->total * (wn[d] / sum);
        long double err = fabsl((long double)got - ideal);
        long double tol = (long double)c->gran + (long double)c->total * 0x1p-50L;
        REQUIRE(err <= tol, "%s: device %zu got %llu units, ideal %.3Lf", what, d, (ull)got, ideal);
        if (wn[d] == 0)
            REQUIRE(got == 0, "%s: weight-0 device %zu got %llu units", what, d, (ull)got);
    }
}

enum { ORDER_ROUND_ROBIN, ORDER_RANDOM, ORDER_SEQUENTIAL, ORDER_REVERSE, ORDER_COUNT };

/*
 * Run a case to the end with the given order of asking devices, checking each chunk as it
 * comes (DYNAMIC and GUIDED against their formulas), then the whole cover. Returns the
 * create status (the cover is checked only on success).
 */
static clf_status run_case(const pcase *c, int order)
{
    clf__part *p;
    clf_status st = clf__part_create(&p, c->s, c->total, c->gran, c->ndev, c->w, c->cap, &c->prm);
    if (st != CLF_SUCCESS)
        return st;
    chunk_list l = {0};
    int done[16] = {0};
    size_t ndone = 0, turn = 0;
    uint64_t handed = 0;
    while (ndone < c->ndev) {
        size_t d;
        switch (order) {
        case ORDER_RANDOM:
            do
                d = (size_t)rng_below(c->ndev);
            while (done[d]);
            break;
        case ORDER_SEQUENTIAL:
            for (d = 0; done[d]; d++)
                ;
            break;
        case ORDER_REVERSE:
            for (d = c->ndev - 1; done[d]; d--)
                ;
            break;
        default:
            do
                d = turn++ % c->ndev;
            while (done[d]);
        }
        uint64_t off = 0, len = 0;
        if (!clf__part_next(p, d, &off, &len)) {
            /* A pool strategy refuses work left only to a device too slow to help. */
            REQUIRE(c->s == CLF__PART_STATIC || handed == c->total || !ref_eligible(c, d) ||
                        ref_stands_aside(c, d, c->total - handed),
                    "%s: device %zu got nothing with %llu units left", what, d,
                    (ull)(c->total - handed));
            done[d] = 1;
            ndone++;
            continue;
        }
        if (c->s != CLF__PART_STATIC) {
            /* One shared range taken from the front: the formulas apply with R exact
             * (MEMORY_AWARE cuts GUIDED's chunks to the caps). */
            uint64_t r = c->total - handed, lo, hi;
            if (c->s != CLF__PART_DYNAMIC)
                ref_guided(c, d, r, &lo, &hi);
            else
                ref_dynamic(c, d, r, &lo, &hi);
            REQUIRE(off == handed, "%s: chunk at %llu, expected %llu", what, (ull)off, (ull)handed);
            REQUIRE(len >= lo && len <= hi,
                    "%s: device %zu got %llu units with R = %llu, expected %llu..%llu", what, d,
                    (ull)len, (ull)r, (ull)lo, (ull)hi);
        }
        REQUIRE(len <= c->total - handed, "%s: more handed out than the range", what);
        handed += len;
        list_push(&l, off, len, d);
    }
    uint64_t fr, out, dn;
    clf__part_counts(p, &fr, &out, &dn);
    REQUIRE(fr == 0 && out == c->total && dn == 0, "%s: counts %llu/%llu/%llu", what, (ull)fr,
            (ull)out, (ull)dn);
    /* Once everything is handed out, nobody gets anything. */
    for (size_t d = 0; d < c->ndev; d++) {
        uint64_t off, len;
        REQUIRE(!clf__part_next(p, d, &off, &len), "%s: a chunk after the end", what);
    }
    check_cover(c, &l);
    if (c->s == CLF__PART_STATIC)
        check_static_shares(c, &l);
    free(l.c);
    clf__part_destroy(p);
    return CLF_SUCCESS;
}

static const uint64_t grans[] = {1, 2, 3, 7, 16, 64};

#define NWKIND 6
#define NCKIND 6

static void make_weights(int kind, size_t ndev, double *w)
{
    static const double skew[4] = {1, 10, 0.5, 3};
    static const double zeros[4] = {0, 2, 0, 1};
    static const double extreme[4] = {1e300, 1, 1e-300, 0};
    for (size_t d = 0; d < ndev; d++) {
        switch (kind) {
        case 1: w[d] = 0; break;
        case 2: w[d] = skew[d]; break;
        case 3: w[d] = zeros[d]; break;
        case 4: w[d] = extreme[d]; break;
        default: w[d] = rng_below(4) == 0 ? 0 : (double)(1 + rng_below(1000)) / 100; break;
        }
    }
}

static void make_caps(int kind, size_t ndev, uint64_t total, uint64_t gran, uint64_t *cap)
{
    for (size_t d = 0; d < ndev; d++) {
        switch (kind) {
        case 1: cap[d] = UINT64_MAX; break;
        case 2: cap[d] = rng_below(2 * gran + 4); break; /* small, sometimes 0 */
        case 3: cap[d] = d == 0 ? 0 : UINT64_MAX; break;
        case 4: cap[d] = d % 2 ? gran : total / 3 + 1; break;
        default: {
            const uint64_t v[4] = {gran - 1, gran, 2 * gran + 1, UINT64_MAX};
            cap[d] = v[d];
        }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Partition tests                                                     */
/* ------------------------------------------------------------------ */

START_TEST(test_bad_arguments)
{
    static char sentinel;
    clf__part *p = (clf__part *)(void *)&sentinel; /* create must reset it on failure */
    double w[2] = {1, 1};
    uint64_t cap[2] = {UINT64_MAX, UINT64_MAX};
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 0, 1, 2, w, cap, NULL),
                     CLF_ERROR_ZERO_SIZE);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 10, 0, 2, w, cap, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 10, 1, 0, w, cap, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)4, 10, 1, 2, w, cap, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)-1, 10, 1, 2, w, cap, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_create(NULL, CLF__PART_STATIC, 10, 1, 2, w, cap, NULL),
                     CLF_ERROR_NULL_POINTER);
    const double bad[] = {-1.0, NAN, INFINITY, -INFINITY, -0x1p-1074};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double wb[2] = {1, bad[i]};
        for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++)
            ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)s, 10, 1, 2, wb, cap, NULL),
                             CLF_ERROR_INVALID_ARGUMENT);
    }
    const double badk[] = {-1.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof badk / sizeof badk[0]; i++) {
        clf__part_params prm = {.guided_k = badk[i]};
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, 10, 1, 2, w, cap, &prm),
                         CLF_ERROR_INVALID_ARGUMENT);
    }
    /* No device can hold one chunk: caps below min(gran, total). */
    uint64_t small[2] = {15, 0};
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_MEMORY_AWARE, 100, 16, 2, w, small, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "no device can hold one chunk"));
    /* ... but when total < gran, a cap of total is enough. */
    uint64_t fits[2] = {5, 4};
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_MEMORY_AWARE, 5, 16, 2, w, fits, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_eligible(p, 0));
    ck_assert(!clf__part_eligible(p, 1));
    ck_assert(!clf__part_eligible(p, 2));
    uint64_t off, len;
    ck_assert(!clf__part_next(p, 1, &off, &len));
    ck_assert(!clf__part_next(p, 2, &off, &len));
    ck_assert(!clf__part_next(p, 0, NULL, &len));
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 5);
    clf__part_destroy(p);
    clf__part_destroy(NULL);
    ck_assert_str_eq(clf__part_strategy_name(CLF__PART_GUIDED), "guided");
    ck_assert_str_eq(clf__part_strategy_name(CLF__PART_MEMORY_AWARE), "memory-aware");
    ck_assert_ptr_null(clf__part_strategy_name((clf__part_strategy)9));
}
END_TEST

/* Every total 1..300 x granularity x 1..4 devices x strategy x weight kind, with caps,
 * parameters and the order of asking varied along. */
START_TEST(test_exhaustive_small)
{
    rng_state = 42;
    size_t runs = 0, errors = 0;
    for (uint64_t total = 1; total <= 300; total++) {
        for (size_t gi = 0; gi < sizeof grans / sizeof grans[0]; gi++) {
            uint64_t gran = grans[gi];
            for (size_t ndev = 1; ndev <= 4; ndev++) {
                for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++) {
                    for (int wk = 0; wk < NWKIND; wk++) {
                        double w[4];
                        uint64_t cap[4];
                        int ck = (int)((wk + total + gi + ndev) % NCKIND);
                        make_weights(wk, ndev, w);
                        make_caps(ck, ndev, total, gran, cap);
                        pcase c = {(clf__part_strategy)s, total, gran, ndev, wk == 0 ? NULL : w,
                                   ck == 0 ? NULL : cap,  {0}};
                        int variant = (int)((total + wk) % 3);
                        if (variant == 1) {
                            c.prm.chunks_per_device = 1;
                            c.prm.guided_k = 1;
                            c.prm.min_chunk = 5;
                        } else if (variant == 2) {
                            c.prm.chunks_per_device = 3;
                            c.prm.guided_k = 3.5;
                            c.prm.min_chunk = 2 * gran + 1;
                        }
                        /* Fixed costs per chunk, from none to more than the whole
                         * launch takes on the fastest device (weights as units per s). */
                        double fixed[4], wsum = 0;
                        int timed = wk != 0 && (total + gi + ndev) % 3 == 0;
                        for (size_t d = 0; d < ndev; d++)
                            wsum += w[d];
                        for (size_t d = 0; timed && d < ndev; d++)
                            fixed[d] = wsum > 0 ? (double)((d * 5 + total) % 4) * 0.4 *
                                                      (double)total / wsum
                                                : 0;
                        if (timed)
                            c.prm.fixed_s = fixed;
                        int order = (int)rng_below(ORDER_COUNT);
                        snprintf(what, sizeof what,
                                 "%s total=%llu gran=%llu ndev=%zu wkind=%d ckind=%d var=%d "
                                 "order=%d timed=%d",
                                 clf__part_strategy_name(c.s), (ull)total, (ull)gran, ndev, wk, ck,
                                 variant, order, timed);
                        int any = 0;
                        for (size_t d = 0; d < ndev; d++)
                            any |= ref_eligible(&c, d);
                        clf_status st = run_case(&c, order);
                        REQUIRE(st == (any ? CLF_SUCCESS : CLF_ERROR_INVALID_ARGUMENT),
                                "%s: create returned %d", what, (int)st);
                        errors += st != CLF_SUCCESS;
                        runs++;
                    }
                }
            }
        }
    }
    /* total == 0 is rejected whatever the rest. */
    clf__part *p;
    for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++)
        ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)s, 0, 3, 2, NULL, NULL, NULL),
                         CLF_ERROR_ZERO_SIZE);
    ck_assert_uint_eq(runs, 300 * 6 * 4 * CLF__PART_STRATEGY_COUNT * NWKIND);
    ck_assert(errors > 0 && errors < runs / 4);
}
END_TEST

/* Ranges near 2^63 and 2^64: no overflow in the shares, the guided formula or the cuts. */
START_TEST(test_huge)
{
    static const uint64_t totals[] = {INT64_MAX,      (uint64_t)INT64_MAX + 1, UINT64_MAX,
                                      UINT64_MAX - 1, (1ull << 62) + 1,        1ull << 63};
    static const uint64_t hgrans[] = {1, 3, 64, 1000003, 1ull << 40, (1ull << 62) + 3};
    rng_state = 7;
    for (size_t ti = 0; ti < sizeof totals / sizeof totals[0]; ti++) {
        for (size_t gi = 0; gi < sizeof hgrans / sizeof hgrans[0]; gi++) {
            for (size_t ndev = 1; ndev <= 4; ndev++) {
                for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++) {
                    for (int ck = 0; ck < 3; ck++) {
                        static const double w[4] = {1, 3.5, 0, 1e-9};
                        uint64_t cap[4] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
                        if (ck == 1) {
                            cap[0] = (1ull << 61) + 7;
                            cap[1] = 1ull << 60;
                            cap[2] = 1ull << 62;
                            cap[3] = UINT64_MAX / 3;
                        } else if (ck == 2) {
                            cap[0] = totals[ti] - 1;
                        }
                        pcase c = {(clf__part_strategy)s, totals[ti], hgrans[gi], ndev,
                                   ti % 2 ? w : NULL,     cap,        {0}};
                        /* Not REVERSE: a device of weight 1e-9 draining GUIDED alone takes
                         * 1e-9 of the rest per chunk, by design, i.e. forever near 2^64. */
                        int order = (int)rng_below(ORDER_REVERSE);
                        snprintf(what, sizeof what,
                                 "huge %s total=%llu gran=%llu ndev=%zu ck=%d order=%d",
                                 clf__part_strategy_name(c.s), (ull)c.total, (ull)c.gran, ndev, ck,
                                 order);
                        int any = 0;
                        for (size_t d = 0; d < ndev; d++)
                            any |= ref_eligible(&c, d);
                        REQUIRE(run_case(&c, order) ==
                                    (any ? CLF_SUCCESS : CLF_ERROR_INVALID_ARGUMENT),
                                "%s: wrong create status", what);
                    }
                }
            }
        }
    }
}
END_TEST

/* The first GUIDED chunk, for every first asker, against the definition written out. */
START_TEST(test_guided_first_chunk)
{
    const double w[3] = {1, 3, 0};
    uint64_t cap[3] = {UINT64_MAX, 1000, UINT64_MAX};
    for (uint64_t total = 1; total <= 5000; total += 7) {
        for (size_t d = 0; d < 3; d++) {
            clf__part *p;
            ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, total, 4, 3, w, cap, NULL),
                             CLF_SUCCESS);
            uint64_t off, len;
            /* A device whose share of the range, total * w / 4, is under one granule (or
             * the whole range when shorter) stands aside, unless it is the fastest
             * (device 1): device 2 (weight 0) always. */
            uint64_t least = total < 4 ? total : 4;
            if (d != 1 && (double)total * w[d] / 4.0 < (double)least) {
                ck_assert(!clf__part_next(p, d, &off, &len));
                clf__part_destroy(p);
                continue;
            }
            ck_assert(clf__part_next(p, d, &off, &len));
            /* P = w / 4, K = 4, m = gran = 4: max(ceil(total * w / 16), 4), at most the
             * share ceil(total * w / 4), rounded up to 4, capped. */
            uint64_t x = (uint64_t)ceil((double)total * w[d] / 16.0);
            uint64_t lim = (uint64_t)ceil((double)total * w[d] / 4.0);
            uint64_t want = x < 4 ? 4 : x;
            if (want > lim)
                want = lim;
            /* Device 1 with device 0 standing aside too is the only one left: the whole
             * range in one chunk. */
            if (d == 1 && (double)total * w[0] / 4.0 < (double)least)
                want = total;
            want = (want + 3) / 4 * 4;
            if (want > total)
                want = total;
            if (want > cap[d])
                want = cap[d] / 4 * 4;
            ck_assert_uint_eq(off, 0);
            ck_assert_uint_eq(len, want);
            clf__part_destroy(p);
        }
    }
    /* 2^63 - 1 with gran 3, two equal devices: roundup(ceil(R / 8), 3). */
    clf__part *p;
    uint64_t total = (uint64_t)INT64_MAX, off, len;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, total, 3, 2, NULL, NULL, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 1, &off, &len));
    uint64_t q = total / 8 + 1; /* 2^63 - 1 is not a multiple of 8 */
    ck_assert_uint_eq(len, (q + 2) / 3 * 3);
    clf__part_destroy(p);
}
END_TEST

/* STATIC and MEMORY_AWARE on a few cases worked out by hand. */
START_TEST(test_known_cases)
{
    clf__part *p;
    uint64_t off, len;
    /* 100 units, gran 10, weights 1:3 -> 25 / 75 ideal -> boundary 25 rounds to 20 (tie
     * goes down), so shares 20 and 80; device 1 capped at 30 streams 30, 30, 20. */
    const double w[2] = {1, 3};
    uint64_t cap[2] = {UINT64_MAX, 35};
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 100, 10, 2, w, cap, NULL), CLF_SUCCESS);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 20 && len == 30);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 50 && len == 30);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 80 && len == 20);
    ck_assert(!clf__part_next(p, 1, &off, &len));
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 20);
    ck_assert(!clf__part_next(p, 0, &off, &len));
    clf__part_destroy(p);

    /* MEMORY_AWARE: GUIDED's chunks from one pool, cut to the caps. 1000 units, gran 10,
     * weights 1:3, device 1 capped at 25: it wants 1000 * 3/4 / 4 = 187.5 but holds 20;
     * device 0 then wants 980 * 1/4 / 4 = 61.25, rounded up to 70. */
    uint64_t cap25[2] = {UINT64_MAX, 25};
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_MEMORY_AWARE, 1000, 10, 2, w, cap25, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 0 && len == 20);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 20 && len == 70);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 90 && len == 20);
    /* Device 1 alone drains the rest in budget-sized chunks (streaming). */
    uint64_t at = 110;
    while (clf__part_next(p, 1, &off, &len)) {
        ck_assert(off == at && len <= 20 && len > 0);
        at += len;
    }
    ck_assert_uint_eq(at, 1000);
    ck_assert(!clf__part_next(p, 0, &off, &len));
    clf__part_destroy(p);

    /* GUIDED shares P_i count only devices still taking work: with device 2 retired,
     * device 0 of equal weight gets R / (2 K), not R / (3 K). */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, 1000, 1, 3, NULL, NULL, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 84); /* ceil(1000 / 12) */
    clf__part_retire(p, 2);
    ck_assert(!clf__part_next(p, 2, &off, &len));
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 84 && len == 115); /* ceil(916 / 8) */
    /* With device 1 retired too, device 0 is the only one left; after a failure it keeps
     * guided's chunks (a failure of its own then loses one chunk, not the rest). */
    clf__part_retire(p, 1);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 199 && len == 201); /* ceil(801 / 4) */
    clf__part_destroy(p);

    /* STATIC: a retired device's share goes to the survivors, split among them. */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 90, 1, 3, NULL, NULL, NULL),
                     CLF_SUCCESS);
    clf__part_retire(p, 2);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 30);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 60 && len == 15);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 30 && len == 30);
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 75 && len == 8);
    clf__part_destroy(p);

    /* Total not a multiple of gran: only the chunk ending at total is short. */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10, 4, 2, NULL, NULL, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 4); /* ceil(10 / 8) = 2, rounded up to 4 */
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 4 && len == 4); /* share ceil(6 / 2) = 3, rounded up to 4 */
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert(off == 8 && len == 2);
    ck_assert(!clf__part_next(p, 0, &off, &len));
    clf__part_destroy(p);

    /* One device: nothing to balance, the whole range in one chunk (raw OpenCL's cost). */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10, 4, 1, NULL, NULL, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 10);
    ck_assert(!clf__part_next(p, 0, &off, &len));
    clf__part_destroy(p);

    /* DYNAMIC on a 50:1 pair: the slow device's chunks are 1/50 of the fast one's, and it
     * stands aside once its share of what is left is under one granule. */
    {
        const double w2[2] = {50, 1};
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10000, 1, 2, w2, NULL, NULL),
                         CLF_SUCCESS);
        ck_assert(clf__part_next(p, 0, &off, &len));
        ck_assert(off == 0 && len == 1250); /* ceil(10000 / (4 * 2)) */
        ck_assert(clf__part_next(p, 1, &off, &len));
        ck_assert(off == 1250 && len == 25); /* 1250 / 50 */
        uint64_t slow = 25;
        while (clf__part_next(p, 0, &off, &len))
            if (clf__part_next(p, 1, &off, &len))
                slow += len;
        ck_assert_uint_le(slow, 10000 / 51 + 25);
        clf__part_destroy(p);
    }

    /* Fewer units than devices: one each to the first asker, nothing empty. */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 2, 1, 4, NULL, NULL, NULL),
                     CLF_SUCCESS);
    uint64_t sum = 0;
    for (size_t d = 0; d < 4; d++)
        while (clf__part_next(p, d, &off, &len)) {
            ck_assert_uint_eq(len, 1);
            sum += len;
        }
    ck_assert_uint_eq(sum, 2);
    clf__part_destroy(p);
}
END_TEST

START_TEST(test_requeue_validation)
{
    clf__part *p;
    uint64_t off, len, fr, out, dn;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 100, 8, 2, NULL, NULL, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len)); /* [0, 16) */
    ck_assert(off == 0 && len == 16);
    ck_assert_int_eq(clf__part_requeue(p, 16, 8), CLF_ERROR_INVALID_ARGUMENT); /* free */
    ck_assert_int_eq(clf__part_requeue(p, 4, 8), CLF_ERROR_INVALID_ARGUMENT);  /* unaligned */
    ck_assert_int_eq(clf__part_requeue(p, 0, 12), CLF_ERROR_INVALID_ARGUMENT); /* length */
    ck_assert_int_eq(clf__part_requeue(p, 0, 0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_requeue(p, 100, 8), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_requeue(p, 96, UINT64_MAX), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_requeue(NULL, 0, 8), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__part_complete(p, 17), CLF_ERROR_INVALID_ARGUMENT);
    /* Give back the second half, complete the first. */
    ck_assert_int_eq(clf__part_requeue(p, 8, 8), CLF_SUCCESS);
    ck_assert_int_eq(clf__part_requeue(p, 8, 8), CLF_ERROR_INVALID_ARGUMENT); /* twice */
    ck_assert_int_eq(clf__part_complete(p, 8), CLF_SUCCESS);
    clf__part_counts(p, &fr, &out, &dn);
    ck_assert(fr == 92 && out == 0 && dn == 8);
    ck_assert_int_eq(clf__part_requeue(p, 0, 8), CLF_ERROR_INVALID_ARGUMENT); /* > outstanding */
    /* The requeued piece merged with the rest of the pool: the next chunk starts there. */
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert_uint_eq(off, 8);
    clf__part_destroy(p);

    /* The short last chunk can be requeued (its length is not a multiple of gran). */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 10, 4, 1, NULL, NULL, NULL),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 0 && len == 10);
    ck_assert_int_eq(clf__part_requeue(p, 8, 2), CLF_SUCCESS);
    ck_assert_int_eq(clf__part_requeue(p, 0, 6), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__part_requeue(p, 4, 4), CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert(off == 4 && len == 6);
    clf__part_destroy(p);
}
END_TEST

/*
 * A fleet where devices fail, give chunks back and fall silent at random moments; whatever
 * the order, the completed chunks cover the range exactly once.
 */
static void stress_one(const pcase *c, int silent)
{
    clf__part *p;
    ck_assert_int_eq(clf__part_create(&p, c->s, c->total, c->gran, c->ndev, c->w, c->cap, &c->prm),
                     CLF_SUCCESS);
    chunk_list done = {0};
    chunk_list held[8] = {{0}};
    int alive[8], nalive = 0;
    for (size_t d = 0; d < c->ndev; d++) {
        alive[d] = ref_eligible(c, d);
        nalive += alive[d];
    }
    /* One eligible device never asks: STATIC needs it retired to free its share; the other
     * strategies must cope without being told. */
    if (silent >= 0 && alive[silent] && nalive > 1) {
        /* The executor retires every device that stops asking before the end (a failure,
         * a thread that did not start): the pool strategies let a slower device stand aside
         * for a faster one, which must therefore ask. */
        clf__part_retire(p, (size_t)silent);
        alive[silent] = 0;
        nalive--;
    }
    size_t steps = 0;
    for (;;) {
        uint64_t fr, out, dn;
        clf__part_counts(p, &fr, &out, &dn);
        REQUIRE(fr + out + dn == c->total, "%s: counts do not sum", what);
        if (fr == 0 && out == 0)
            break;
        REQUIRE(++steps < 10000000, "%s: no progress", what);
        size_t d = (size_t)rng_below(c->ndev);
        if (!alive[d])
            continue;
        uint64_t a = rng_below(100);
        if (a < 50 || held[d].n == 0) {
            uint64_t off, len;
            if (clf__part_next(p, d, &off, &len)) {
                REQUIRE(len > 0 && len <= cap_of(c, d), "%s: bad chunk", what);
                list_push(&held[d], off, len, d);
            } else {
                /* Only STATIC (fixed shares) may refuse a live device while work is free,
                 * and the pool strategies a device slower than another live one. */
                int slower = 0;
                double wn[16];
                ref_weights(c, wn);
                for (size_t j = 0; j < c->ndev; j++)
                    slower |= alive[j] && wn[j] > wn[d];
                REQUIRE(c->s == CLF__PART_STATIC || fr == 0 || slower,
                        "%s: device %zu refused while %llu units are free", what, d, (ull)fr);
            }
            continue;
        }
        chunk k = held[d].c[--held[d].n];
        if (a < 85) {
            ck_assert_int_eq(clf__part_complete(p, k.len), CLF_SUCCESS);
            list_push(&done, k.off, k.len, d);
        } else if (a < 95) {
            /* Give back an aligned tail (a partial failure), complete the head. */
            uint64_t blocks = (k.len + c->gran - 1) / c->gran;
            uint64_t keep = rng_below(blocks) * c->gran;
            if (keep > 0) {
                ck_assert_int_eq(clf__part_complete(p, keep), CLF_SUCCESS);
                list_push(&done, k.off, keep, d);
            }
            REQUIRE(clf__part_requeue(p, k.off + keep, k.len - keep) == CLF_SUCCESS,
                    "%s: requeue failed: %s", what, clf_last_error());
        } else if (nalive > 1) {
            /* The device dies: its chunk in flight and all it holds go back. */
            REQUIRE(clf__part_requeue(p, k.off, k.len) == CLF_SUCCESS, "%s: requeue", what);
            while (held[d].n > 0) {
                chunk h = held[d].c[--held[d].n];
                REQUIRE(clf__part_requeue(p, h.off, h.len) == CLF_SUCCESS, "%s: requeue", what);
            }
            clf__part_retire(p, d);
            clf__part_retire(p, d); /* idempotent */
            alive[d] = 0;
            nalive--;
        } else {
            ck_assert_int_eq(clf__part_complete(p, k.len), CLF_SUCCESS);
            list_push(&done, k.off, k.len, d);
        }
    }
    check_cover(c, &done);
    free(done.c);
    for (size_t d = 0; d < 8; d++)
        free(held[d].c);
    clf__part_destroy(p);
}

START_TEST(test_stress_requeue_retire)
{
    rng_state = 2024;
    for (int iter = 0; iter < 3000; iter++) {
        pcase c = {0};
        double w[8];
        uint64_t cap[8];
        c.s = (clf__part_strategy)(iter % CLF__PART_STRATEGY_COUNT);
        c.ndev = 1 + (size_t)rng_below(8);
        c.gran = rng_below(3) ? 1 + rng_below(20) : 1 + rng_below(5000);
        c.total = rng_below(4) ? 1 + rng_below(5000) : 1 + rng_below(100000);
        if (iter % 50 == 0)
            c.total = UINT64_MAX - rng_below(1000);
        int big = c.total > 100000;
        for (size_t d = 0; d < c.ndev; d++) {
            /* Weights of 0 only on small ranges: a weight-0 thief of a silent device steals
             * one minimum chunk at a time, by design, which takes forever near 2^64. */
            w[d] = !big && rng_below(5) == 0 ? 0 : (double)(1 + rng_below(1000)) / 7;
            uint64_t r = rng_below(6);
            if (big)
                cap[d] = r == 0 ? 0 : UINT64_MAX >> rng_below(8);
            else
                cap[d] = r == 0   ? 0
                         : r == 1 ? UINT64_MAX
                                  : c.gran * (1 + rng_below(c.total / c.gran / 3 + 2));
        }
        c.w = rng_below(4) ? w : NULL;
        c.cap = cap;
        int any = 0;
        for (size_t d = 0; d < c.ndev; d++)
            any |= ref_eligible(&c, d);
        if (!any)
            cap[0] = UINT64_MAX;
        int silent = rng_below(3) == 0 ? (int)rng_below(c.ndev) : -1;
        snprintf(what, sizeof what, "stress %d %s total=%llu gran=%llu ndev=%zu silent=%d", iter,
                 clf__part_strategy_name(c.s), (ull)c.total, (ull)c.gran, c.ndev, silent);
        stress_one(&c, silent);
    }
}
END_TEST

/* Several host threads pulling at once, as the launch engine does. */
typedef struct puller {
    clf__part *p;
    size_t dev;
    chunk_list got;
} puller;

static void *pull_all(void *arg)
{
    puller *t = arg;
    uint64_t off, len;
    while (clf__part_next(t->p, t->dev, &off, &len)) {
        list_push(&t->got, off, len, t->dev);
        clf__part_complete(t->p, len);
    }
    return NULL;
}

START_TEST(test_threads)
{
    for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++) {
        const double w[4] = {1, 2, 0.5, 4};
        uint64_t cap[4] = {1000, UINT64_MAX, 77, 5000};
        pcase c = {(clf__part_strategy)s, 1000003, 7, 4, w, cap, {0}};
        snprintf(what, sizeof what, "threads %s", clf__part_strategy_name(c.s));
        clf__part *p;
        ck_assert_int_eq(clf__part_create(&p, c.s, c.total, c.gran, 4, w, cap, NULL), CLF_SUCCESS);
        puller t[4];
        pthread_t th[4];
        for (size_t d = 0; d < 4; d++) {
            t[d] = (puller){p, d, {0}};
            ck_assert_int_eq(pthread_create(&th[d], NULL, pull_all, &t[d]), 0);
        }
        chunk_list all = {0};
        for (size_t d = 0; d < 4; d++) {
            pthread_join(th[d], NULL);
            for (size_t i = 0; i < t[d].got.n; i++)
                list_push(&all, t[d].got.c[i].off, t[d].got.c[i].len, d);
            free(t[d].got.c);
        }
        uint64_t fr, out, dn;
        clf__part_counts(p, &fr, &out, &dn);
        ck_assert(fr == 0 && out == 0 && dn == c.total);
        check_cover(&c, &all);
        free(all.c);
        clf__part_destroy(p);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Perf model tests                                                    */
/* ------------------------------------------------------------------ */

/* tmproot lives for the test case (made and removed by the parent process, so a failing
 * test cannot leave files behind); each test works in its own tmpdir below it. */
static char tmproot[256], tmpdir[300];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/t-XXXXXX", tmproot);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* Remove the directory tree made by a test (two levels are all the tests create). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void perf_setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmproot, sizeof tmproot, "%s/clfleet-perf-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmproot)) {
        perror(tmproot);
        abort();
    }
}

static void perf_teardown(void)
{
    remove_tree(tmproot);
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* ---- the cost model's chunk line (time = fixed + units / rate) ---- */

/* Chunks of sizes 100 .. 1600 on the exact line fixed + units / rate. */
static size_t line_samples(clf__perf_chunk *c, double fixed, double rate)
{
    static const uint64_t sizes[] = {100, 1600, 200, 800, 400, 1200, 300, 1000,
                                     600, 150,  900, 250, 1400, 700, 350, 500};
    for (size_t i = 0; i < 16; i++) {
        c[i].units = sizes[i];
        c[i].seconds = fixed + (double)sizes[i] / rate;
    }
    return 16;
}

START_TEST(test_perf_line_exact)
{
    clf__perf_chunk c[16];
    double rate = 0, fixed = -1;
    size_t n = line_samples(c, 50e-6, 1e6);
    ck_assert(clf__perf_line(c, n, &rate, &fixed));
    ck_assert_double_eq_tol(rate, 1e6, 1e-3);
    ck_assert_double_eq_tol(fixed, 50e-6, 1e-12);
    /* Two points suffice; an intercept below 0 (noise) is clamped. */
    ck_assert(clf__perf_line(c, 2, &rate, &fixed));
    ck_assert_double_eq_tol(rate, 1e6, 1e-3);
    n = line_samples(c, 0, 2e6);
    c[0].seconds *= 0.9;
    ck_assert(clf__perf_line(c, 2, &rate, &fixed));
    ck_assert(fixed == 0);
    /* No line: one size only, sizes within 25%, too few samples, a slope that is not
     * positive (the larger chunk took less time). */
    clf__perf_chunk same[4] = {
        {1000, 1e-3, 0, 0}, {1000, 1.1e-3, 0, 0}, {1100, 1e-3, 0, 0}, {1200, 1.2e-3, 0, 0}};
    ck_assert(!clf__perf_line(same, 4, &rate, &fixed));
    ck_assert(!clf__perf_line(c, 1, &rate, &fixed));
    ck_assert(!clf__perf_line(NULL, 4, &rate, &fixed));
    clf__perf_chunk down[2] = {{100, 2e-3, 0, 0}, {1000, 1e-3, 0, 0}};
    ck_assert(!clf__perf_line(down, 2, &rate, &fixed));
    /* Fourteen chunks of one size and two others (dynamic's equal chunks and a remainder):
     * every slope hangs on those two timings, and one of them slowed 5x made the line 40x
     * too steep with a fixed cost of 0 (issue 27). No line; with a third size apart, one. */
    clf__perf_chunk w[16];
    for (size_t i = 0; i < 16; i++)
        w[i] = (clf__perf_chunk){128, 250e-6 + 128 / 4e6, 0, 0};
    w[3] = (clf__perf_chunk){64, 5 * (250e-6 + 64 / 4e6), 0, 0};
    w[9] = (clf__perf_chunk){256, 250e-6 + 256 / 4e6, 0, 0};
    ck_assert(!clf__perf_line(w, 16, &rate, &fixed));
    w[12] = (clf__perf_chunk){256, 250e-6 + 256 / 4e6, 0, 0};
    w[14] = (clf__perf_chunk){256, 250e-6 + 256 / 4e6, 0, 0};
    ck_assert(clf__perf_line(w, 16, &rate, &fixed));
    ck_assert_double_eq_tol(fixed, 250e-6, 1e-9);
    /* Few samples: half of them off the main size below 6, three from 6 on. */
    for (size_t i = 0; i < 6; i++)
        w[i] = (clf__perf_chunk){i < 3 ? 128 : 256, 250e-6 + (i < 3 ? 128 : 256) / 4e6, 0, 0};
    ck_assert(clf__perf_line(w, 6, &rate, &fixed));           /* 3 + 3 */
    w[3].units = 128;
    w[3].seconds = w[0].seconds;
    ck_assert(!clf__perf_line(w, 6, &rate, &fixed));          /* 4 + 2 */
    ck_assert(!clf__perf_line(w + 1, 4, &rate, &fixed));      /* 3 + 1 */
    ck_assert(clf__perf_line(w + 2, 4, &rate, &fixed));       /* 2 + 2 */
}
END_TEST

/* While the model has no line, DYNAMIC cuts each device's chunks at 1, 2 and 1/2 times its
 * size in turn (clf__part_params.vary_chunks), and still hands out the range once; not when
 * the caller chose the chunking. */
START_TEST(test_part_vary_chunks)
{
    for (int keep = 0; keep < 2; keep++) {
        clf__part *p;
        uint64_t off, len, at = 0, lens[4];
        clf__part_params prm = {.chunks_per_device = 8, .vary_chunks = 1, .keep_chunking = keep};
        /* Two equal devices: device 0's chunks of 3200 / (8 x 2) = 200. */
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 3200, 1, 2, NULL, NULL, &prm),
                         CLF_SUCCESS);
        size_t n = 0;
        for (size_t d = 0; clf__part_next(p, d, &off, &len) || clf__part_next(p, d ^ 1, &off, &len);
             d ^= n >= 4) {
            ck_assert_uint_eq(off, at);
            at += len;
            if (n < 4)
                lens[n] = len;
            n++;
            ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
        }
        ck_assert_uint_eq(at, 3200);
        static const uint64_t varied[4] = {200, 400, 100, 200}, kept[4] = {200, 200, 200, 200};
        for (size_t i = 0; i < 4; i++)
            ck_assert_uint_eq(lens[i], keep ? kept[i] : varied[i]);
        clf__part_destroy(p);
    }
}
END_TEST

/* One sample 10x off the line (a chunk that waited behind another process) moves the
 * predicted time of small and large chunks by at most a few percent; so do a 1% jitter on
 * every sample and a second spike. Least squares would move the fixed cost by more than
 * itself. */
START_TEST(test_perf_line_outliers)
{
    clf__perf_chunk c[16];
    for (size_t spike = 0; spike < 16; spike++) {
        for (int two = 0; two < 2; two++) {
            size_t n = line_samples(c, 80e-6, 5e5);
            for (size_t i = 0; i < n; i++)
                c[i].seconds *= 1 + 0.01 * (double)((int)(i * 7 % 5) - 2) / 2; /* +-1% */
            if (!two) {
                /* On an exact line, one spike moves nothing at all. */
                clf__perf_chunk e[16];
                double re, fe;
                line_samples(e, 80e-6, 5e5);
                e[spike].seconds *= 10;
                ck_assert(clf__perf_line(e, 16, &re, &fe));
                ck_assert_double_eq_tol(re, 5e5, 5e5 * 1e-9);
                ck_assert_double_eq_tol(fe, 80e-6, 1e-12);
            }
            c[spike].seconds *= 10;
            if (two)
                c[(spike + 5) % 16].seconds *= 10;
            double rate, fixed;
            ck_assert(clf__perf_line(c, n, &rate, &fixed));
            clf__perf_fit f = {.rate = rate, .fixed_s = fixed};
            for (uint64_t u = 100; u <= 1600; u *= 2) {
                double want = 80e-6 + (double)u / 5e5, got = clf__perf_predict(&f, u);
                ck_assert_msg(fabs(got - want) <= 0.05 * want,
                              "spike at %zu (+%d): %llu units predicted %g s, true %g s", spike,
                              two, (unsigned long long)u, got, want);
            }
        }
    }
}
END_TEST

/* The model's chunk window: the first chunk is cold (dropped), the line comes from the
 * recorded chunks, a full window keeps sizes diverse, and the file round trip (v2 lines)
 * keeps launch samples and chunks; v1 lines still read (a throughput, no line). */
START_TEST(test_perf_chunks_model)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/chunks/perf-v1.tsv", tmpdir);
    clf__perf_model *m;
    clf__perf_fit f;
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    clf__perf_chunk c[16];
    size_t n = line_samples(c, 40e-6, 2e6);
    clf__perf_chunk cold = {100, 1.0, 0, 0};
    ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d", &cold, 1), CLF_SUCCESS);
    ck_assert(!clf__perf_get(m, "k", "d", &f)); /* nothing known yet */
    ck_assert(clf__perf_predict(&(clf__perf_fit){.fixed_s = -1}, 10) == -1);
    ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d", c, n), CLF_SUCCESS);
    ck_assert(clf__perf_get(m, "k", "d", &f));
    ck_assert_uint_eq(f.chunks, 16);
    ck_assert_uint_eq(f.samples, 0);
    ck_assert_double_eq_tol(f.rate, 2e6, 1e-3);
    ck_assert_double_eq_tol(f.fixed_s, 40e-6, 1e-12);
    /* Fifty more chunks of one size (static launches), 2x slower: they replace the old ones
     * of about their size, not the rest, so a line is still fitted. */
    for (int i = 0; i < 50; i++) {
        clf__perf_chunk one = {1000, 2 * (40e-6 + 1000 / 2e6), 0, 0};
        ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d", &one, 1), CLF_SUCCESS);
    }
    ck_assert(clf__perf_get(m, "k", "d", &f));
    ck_assert_uint_eq(f.chunks, 16);
    ck_assert(f.rate > 0 && f.fixed_s >= 0);
    /* Bad samples are skipped, bad calls refused. */
    clf__perf_chunk bad[3] = {{0, 1.0, 0, 0}, {10, NAN, 0, 0}, {10, -1, 0, 0}};
    ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d2", bad, 3), CLF_SUCCESS);
    ck_assert(!clf__perf_get(m, "k", "d2", &f));
    ck_assert_int_eq(clf__perf_record_chunks(m, NULL, "d", c, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d", NULL, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d", NULL, 0), CLF_SUCCESS);
    clf__perf_record(m, "k", "d", 1, 1.0); /* cold */
    clf__perf_record(m, "k", "d", 300, 1.0);
    clf__perf_record(m, "k", "d", 100, 1.0);
    clf__perf_fit before;
    ck_assert(clf__perf_get(m, "k", "d", &before));
    ck_assert(before.units_per_s == 200 && before.samples == 2 && before.iqr == 100);
    ck_assert_int_eq(clf__perf_save(m), CLF_SUCCESS);
    clf__perf_close(m);

    /* Round trip, with a v1 line of an earlier version appended. */
    FILE *fp = fopen(path, "a");
    ck_assert_ptr_nonnull(fp);
    fputs("v1\told\tdev\t3\t10\t30\t20\n", fp);
    fputs("v2\tbadcount\tdev\t1\t10\t2\t5\t1e-3\n", fp);  /* says 2 chunks, has 1 */
    fputs("v2\tbadunits\tdev\t0\t1\t5.5\t1e-3\n", fp);    /* units not whole */
    fputs("v2\tempty\tdev\t0\t0\n", fp);                  /* nothing at all */
    ck_assert_int_eq(fclose(fp), 0);
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    ck_assert(clf__perf_get(m, "k", "d", &f));
    ck_assert(f.units_per_s == before.units_per_s && f.samples == before.samples);
    ck_assert(f.chunks == before.chunks && f.rate == before.rate && f.fixed_s == before.fixed_s);
    double v;
    ck_assert(clf__perf_weight(m, "old", "dev", &v) && v == 20);
    ck_assert(clf__perf_get(m, "old", "dev", &f));
    ck_assert(f.chunks == 0 && f.rate == 0 && f.fixed_s == -1);
    ck_assert(!clf__perf_get(m, "badcount", "dev", &f));
    ck_assert(!clf__perf_get(m, "badunits", "dev", &f));
    ck_assert(!clf__perf_get(m, "empty", "dev", &f));
    /* The JSON shows the line. */
    clf__perf_close(m);
    char *doc = NULL;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/chunks", tmpdir);
    ck_assert_int_eq(clf_perf_model_json(&doc, dir), CLF_SUCCESS);
    ck_assert_ptr_nonnull(strstr(doc, "\"chunks\":16,\"rate_units_per_s\":"));
    ck_assert_ptr_nonnull(strstr(doc, "\"samples\":3,\"units_per_s\":20,\"iqr_units_per_s\":10,"
                                      "\"chunks\":0,\"rate_units_per_s\":null,\"fixed_us\":null}"));
    free(doc);
}
END_TEST

/* The partitioner with fixed costs per chunk (clf__part_params.fixed_s). */
START_TEST(test_part_fixed_costs)
{
    clf__part *p;
    uint64_t off, len;
    const double rates[2] = {1000, 10};
    clf__part_params prm = {0};
    /* Without fixed costs the slow device's share of 1000 units by speed is about 10: it
     * takes a chunk. */
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 1000, 1, 2, rates, NULL, &prm),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 1, &off, &len));
    clf__part_destroy(p);
    /* A fixed cost of 1 s on it: 1 s + 1 unit / 10 per s ends after the fast device's whole
     * launch, about 1 s: it stands aside, and the fast device does everything. */
    const double fixed[2] = {0, 1.0};
    prm.fixed_s = fixed;
    for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++) {
        if (s == CLF__PART_STATIC)
            continue; /* shares fixed at creation: the stand-aside rule is the pool's */
        ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)s, 1000, 1, 2, rates, NULL,
                                          &prm),
                         CLF_SUCCESS);
        ck_assert_msg(!clf__part_next(p, 1, &off, &len), "%s",
                      clf__part_strategy_name((clf__part_strategy)s));
        uint64_t got = 0;
        while (clf__part_next(p, 0, &off, &len)) {
            got += len;
            ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
        }
        ck_assert_uint_eq(got, 1000);
        clf__part_destroy(p);
    }
    /* Rates separate from the weights; small equal fixed costs on equal devices change
     * nothing: the first chunk of a guided launch is the same as without them. */
    const double eq[2] = {1, 1}, eqr[2] = {100, 100}, eqf[2] = {1e-3, 1e-3};
    uint64_t first[2];
    for (int k = 0; k < 2; k++) {
        clf__part_params q = {0};
        if (k) {
            q.fixed_s = eqf;
            q.rates = eqr;
        }
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, 1000, 1, 2, eq, NULL, &q),
                         CLF_SUCCESS);
        ck_assert(clf__part_next(p, 1, &off, &first[k]));
        clf__part_destroy(p);
    }
    ck_assert_uint_eq(first[0], first[1]);
    /* A fixed cost of 0.5 s at 100 units per s: no chunk shorter than 9 f r = 450 units,
     * where 450 is 90 % of the chunk's time, unless the device's share (R / 2 on these equal
     * devices) is shorter: GUIDED's R / (2 K) = 125 would spend 80 % of its time in the
     * fixed cost. */
    const double bigf[2] = {0.5, 0.5};
    for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++) {
        if (s == CLF__PART_STATIC)
            continue; /* shares, not the pool */
        clf__part_params q = {0};
        q.fixed_s = bigf;
        q.rates = eqr;
        q.chunks_per_device = 16;
        ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)s, 10000, 1, 2, eq, NULL, &q),
                         CLF_SUCCESS);
        uint64_t at = 0;
        size_t n = 0;
        for (size_t d = 0; clf__part_next(p, d, &off, &len); d ^= 1, n++) {
            ck_assert_uint_eq(off, at);
            ck_assert_msg(len >= 450 || len == 10000 - at, "%s: %llu units with %llu left",
                          clf__part_strategy_name((clf__part_strategy)s), (ull)len,
                          (ull)(10000 - at));
            at += len;
        }
        ck_assert_uint_eq(at, 10000);
        ck_assert_msg(n <= 10000 / 450 + 2, "%s: %zu chunks",
                      clf__part_strategy_name((clf__part_strategy)s), n);
        clf__part_destroy(p);
    }
    /* A 50:1 pair (the gemmsim case): once the slow device stands aside, the fast one is the
     * only one left and takes the whole rest of the pool in one chunk, not GUIDED's or
     * DYNAMIC's blocks; the slow one then stays aside. */
    const double r501[2] = {5000, 100}, f501[2] = {1e-3, 1e-2};
    for (int s = 0; s < CLF__PART_STRATEGY_COUNT; s++) {
        if (s == CLF__PART_STATIC)
            continue;
        clf__part_params q = {0};
        q.fixed_s = f501;
        q.rates = r501;
        q.chunks_per_device = 16;
        ck_assert_int_eq(clf__part_create(&p, (clf__part_strategy)s, 100000, 1, 2, r501, NULL,
                                          &q),
                         CLF_SUCCESS);
        uint64_t at = 0;
        int aside = 0, slow_chunks = 0;
        while (at < 100000) {
            if (clf__part_next(p, 1, &off, &len)) {
                ck_assert_msg(!aside, "%s: the slow device came back",
                              clf__part_strategy_name((clf__part_strategy)s));
                ck_assert(off == at && len >= 9); /* 9 f r = 9 units */
                at += len;
                slow_chunks++;
            } else {
                aside = 1;
            }
            ck_assert(clf__part_next(p, 0, &off, &len) || at == 100000);
            if (at == 100000)
                break;
            ck_assert_uint_eq(off, at);
            if (aside)
                ck_assert_msg(off + len == 100000, "%s: %llu of %llu left after standing aside",
                              clf__part_strategy_name((clf__part_strategy)s), (ull)len,
                              (ull)(100000 - at));
            at += len;
        }
        ck_assert_msg(slow_chunks > 0 && aside, "%s: slow %d aside %d",
                      clf__part_strategy_name((clf__part_strategy)s), slow_chunks, aside);
        ck_assert(!clf__part_next(p, 0, &off, &len) && !clf__part_next(p, 1, &off, &len));
        clf__part_destroy(p);
    }
    /* A fixed cost that lets the slow device help: 1 ms on it and on the fast one, a
     * 10,000-unit launch lasts about 10 s; it takes a share of about 100 units. */
    const double small[2] = {1e-3, 1e-3};
    prm.fixed_s = small;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10000, 1, 2, rates, NULL, &prm),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 1, &off, &len));
    clf__part_destroy(p);
    /* Bad input. */
    const double nan2[2] = {0, NAN}, neg2[2] = {0, -1};
    prm.fixed_s = nan2;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10, 1, 2, rates, NULL, &prm),
                     CLF_ERROR_INVALID_ARGUMENT);
    prm.fixed_s = neg2;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10, 1, 2, rates, NULL, &prm),
                     CLF_ERROR_INVALID_ARGUMENT);
    prm.fixed_s = fixed;
    prm.rates = neg2;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10, 1, 2, rates, NULL, &prm),
                     CLF_ERROR_INVALID_ARGUMENT);
    prm.rates = NULL;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 10, 1, 2, NULL, NULL, &prm),
                     CLF_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_perf_cold_and_median)
{
    clf__perf_model *m;
    double v = 0;
    ck_assert_int_eq(clf__perf_open(&m, NULL), CLF_SUCCESS);
    ck_assert(!clf__perf_weight(m, "k", "d", &v));
    /* The cold run is ignored, however slow. */
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1000, 10.0), CLF_SUCCESS);
    ck_assert(!clf__perf_weight(m, "k", "d", &v));
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1000, 1.0), CLF_SUCCESS);
    ck_assert(clf__perf_weight(m, "k", "d", &v));
    ck_assert(v == 1000.0);
    /* Median of 1000, 2000, 3000 -> 2000; of four -> the mean of the middle two. */
    clf__perf_record(m, "k", "d", 3000, 1.0);
    clf__perf_record(m, "k", "d", 2000, 1.0);
    ck_assert(clf__perf_weight(m, "k", "d", &v) && v == 2000.0);
    clf__perf_record(m, "k", "d", 4000, 1.0);
    ck_assert(clf__perf_weight(m, "k", "d", &v) && v == 2500.0);
    /* Only the last 8 count: eight samples of 50 push the old ones out. */
    for (int i = 0; i < 8; i++)
        clf__perf_record(m, "k", "d", 50, 1.0);
    ck_assert(clf__perf_weight(m, "k", "d", &v) && v == 50.0);
    /* Keys are separate, including ones that differ only across the separator. */
    ck_assert(!clf__perf_weight(m, "kd", "", &v));
    ck_assert(!clf__perf_weight(m, "k", "D", &v));
    /* Bad samples. */
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 0, 1.0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1, 0.0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1, -1.0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1, NAN), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1, INFINITY), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__perf_record(m, "k", "d", UINT64_MAX, 0x1p-1074),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__perf_record(m, NULL, "d", 1, 1.0), CLF_ERROR_NULL_POINTER);
    ck_assert(clf__perf_weight(m, "k", "d", &v) && v == 50.0);
    /* A replacing sample drops the oldest, below a full window as in one: two of 10 in a
     * window of three 20s make the median 10 (the all-reduce's re-try of its loser). */
    int kept = 0;
    for (int i = 0; i < 4; i++)
        clf__perf_record(m, "r", "d", 20, 1.0); /* the first is cold */
    ck_assert(clf__perf_weight(m, "r", "d", &v) && v == 20.0);
    ck_assert_int_eq(clf__perf_record_replace(m, "r", "d", 10, 1.0, &kept), CLF_SUCCESS);
    ck_assert(kept && clf__perf_weight(m, "r", "d", &v) && v == 20.0);
    ck_assert_int_eq(clf__perf_record_replace(m, "r", "d", 10, 1.0, &kept), CLF_SUCCESS);
    ck_assert_msg(clf__perf_weight(m, "r", "d", &v) && v == 10.0, "median %g", v);
    for (int i = 0; i < 8; i++) /* a full window: a replace overwrites the oldest */
        clf__perf_record(m, "r", "d", 30, 1.0);
    for (int i = 0; i < 4; i++)
        clf__perf_record_replace(m, "r", "d", 40, 1.0, NULL);
    ck_assert(clf__perf_weight(m, "r", "d", &v) && v == 35.0);
    ck_assert(clf__perf_weight(m, "k", "d", &v) && v == 50.0);
    ck_assert_int_eq(clf__perf_save(m), CLF_SUCCESS); /* memory only: nothing to do */
    clf__perf_close(m);
    clf__perf_close(NULL);
    ck_assert_int_eq(clf__perf_open(NULL, NULL), CLF_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(test_perf_outliers)
{
    clf__perf_model *m;
    ck_assert_int_eq(clf__perf_open(&m, NULL), CLF_SUCCESS);
    rng_state = 99;
    clf__perf_record(m, "k", "d", 1, 1.0); /* cold */
    double lo = INFINITY, hi = 0, v;
    for (int i = 0; i < 8; i++) {
        double x = 1000 + (double)rng_below(100);
        lo = fmin(lo, x);
        hi = fmax(hi, x);
        clf__perf_record(m, "k", "d", (uint64_t)x, 1.0);
    }
    /* One outlier either way moves the median to a value already in the window at most. */
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1000000000, 1.0), CLF_SUCCESS);
    ck_assert(clf__perf_weight(m, "k", "d", &v));
    ck_assert(v >= lo && v <= hi);
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 1, 1e6), CLF_SUCCESS);
    ck_assert(clf__perf_weight(m, "k", "d", &v));
    ck_assert(v >= lo && v <= hi);
    /* Three outliers in eight still leave the median among the normal samples. */
    clf__perf_record(m, "k", "d", 1000000000, 1.0);
    ck_assert(clf__perf_weight(m, "k", "d", &v));
    ck_assert(v >= lo && v <= hi);
    clf__perf_close(m);
}
END_TEST

START_TEST(test_perf_round_trip)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/a/b/perf.tsv", tmpdir);
    static const char *const keys[] = {
        "vadd", "k\twith\ttabs",   "new\nline\r\n", "back\\slash\\", "\\t not a tab",
        "",     "ünïcödé \xff\x01"};
    const size_t nk = sizeof keys / sizeof keys[0];
    clf__perf_model *m;
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS); /* missing file: empty */
    for (size_t i = 0; i < nk; i++) {
        for (size_t j = 0; j < nk; j++) {
            clf__perf_record(m, keys[i], keys[j], 1, 1.0); /* cold */
            for (size_t s = 0; s <= i + j; s++)
                clf__perf_record(m, keys[i], keys[j], 1000 * (i + 1) + j, 0.1 + 0.01 * (double)s);
        }
    }
    ck_assert_int_eq(clf__perf_save(m), CLF_SUCCESS);
    double want[7][7];
    for (size_t i = 0; i < nk; i++)
        for (size_t j = 0; j < nk; j++)
            ck_assert(clf__perf_weight(m, keys[i], keys[j], &want[i][j]));
    clf__perf_close(m);

    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/a/b", tmpdir);
    ck_assert_uint_eq(count_entries(dir), 1); /* no temporary file left behind */

    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    for (size_t i = 0; i < nk; i++) {
        for (size_t j = 0; j < nk; j++) {
            double v;
            ck_assert(clf__perf_weight(m, keys[i], keys[j], &v));
            ck_assert(v == want[i][j]); /* %.17g is exact */
        }
    }
    /* In a new process the first sample is cold again: it does not move the estimate. */
    clf__perf_record(m, keys[0], keys[0], 1, 1000.0);
    double v;
    ck_assert(clf__perf_weight(m, keys[0], keys[0], &v) && v == want[0][0]);
    const char *devs[3] = {keys[1], "unknown", keys[2]};
    double ws[3];
    ck_assert_uint_eq(clf__perf_weights(m, keys[3], 3, devs, ws), 2);
    ck_assert(ws[0] == want[3][1] && ws[1] == 0 && ws[2] == want[3][2]);
    clf__perf_close(m);
    remove_tree(tmpdir);
}
END_TEST

/* Lookup by kernel function name (distributed arrays know no program): a key "name" or
 * "name@program", the one with most devices known; "namex" and "nam" are other kernels. */
START_TEST(test_perf_weights_named)
{
    clf__perf_model *m = NULL;
    ck_assert_int_eq(clf__perf_open(&m, NULL), CLF_SUCCESS);
    const char *devs[2] = {"devA", "devB"};
    /* Two samples each: the first of each pair is cold (dropped). */
    for (int r = 0; r < 2; r++) {
        clf__perf_record(m, "step@1111", "devA", 100, 1.0);
        clf__perf_record(m, "step@2222", "devA", 300, 1.0);
        clf__perf_record(m, "step@2222", "devB", 600, 1.0);
        clf__perf_record(m, "stepx@3333", "devA", 999, 1.0);
        clf__perf_record(m, "stepx@3333", "devB", 999, 1.0);
        clf__perf_record(m, "ste", "devA", 7, 1.0);
        clf__perf_record(m, "ste", "devB", 7, 1.0);
    }
    double w[2];
    ck_assert_uint_eq(clf__perf_weights_named(m, "step", 2, devs, w), 2);
    ck_assert(w[0] == 300 && w[1] == 600);
    ck_assert_uint_eq(clf__perf_weights_named(m, "ste", 2, devs, w), 2);
    ck_assert(w[0] == 7 && w[1] == 7);
    ck_assert_uint_eq(clf__perf_weights_named(m, "st", 2, devs, w), 0);
    ck_assert(w[0] == 0 && w[1] == 0);
    ck_assert_uint_eq(clf__perf_weights_named(m, NULL, 2, devs, w), 0);
    clf__perf_close(m);
}
END_TEST

START_TEST(test_perf_corrupt_file)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/perf.tsv", tmpdir);
    write_text(path, "v1\tgood\tdev\t2\t100\t300\n"
                     "garbage line\n"
                     "\n"
                     "v2\tk\td\t1\t5\n"                         /* unknown version */
                     "v1\tk\td\t0\n"                            /* no samples */
                     "v1\tk\td\t2\t5\n"                         /* fewer than announced */
                     "v1\tk\td\t1\t5\t6\n"                      /* more than announced */
                     "v1\tk\td\t9\t1\t1\t1\t1\t1\t1\t1\t1\t1\n" /* beyond the window */
                     "v1\tk\td\t1\tabc\n"                       /* not a number */
                     "v1\tk\td\t1\t5x\n"                        /* trailing junk */
                     "v1\tk\td\t1\t-5\n"                        /* not positive */
                     "v1\tk\td\t1\tnan\n"
                     "v1\tk\td\t1\tinf\n"
                     "v1\tk\td\t1\t1e999\n" /* overflows */
                     "v1\tbad\\qescape\td\t1\t5\n"
                     "v1\ttrailing\\\td\t1\t5\n"
                     "v1\tk\td\t01\t5\n" /* count not canonical */
                     "v1\tk\td\t+1\t5\n"
                     "v1\tk\td\t\t5\n"
                     "v1\tk\td\n"
                     "v1\tk\n"
                     "\x01\x02\xff\xfe binary \x7f\n"
                     "v1\tsecond\tdev\t1\t42\n"
                     "v1\ttruncated\tdev\t1\t12"); /* no newline: the write was cut short */
    /* A NUL byte inside a line must not cut it into a valid-looking one. */
    static const char nul_line[] = "v1\tnul\tdev\t1\t5\0junk\n";
    FILE *fa = fopen(path, "r+");
    ck_assert_ptr_nonnull(fa);
    char head[4096];
    size_t nh = fread(head, 1, sizeof head, fa);
    rewind(fa);
    fwrite(nul_line, 1, sizeof nul_line - 1, fa);
    fwrite(head, 1, nh, fa);
    fclose(fa);
    clf__perf_model *m;
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    double v;
    ck_assert(!clf__perf_weight(m, "nul", "dev", &v));
    ck_assert(clf__perf_weight(m, "good", "dev", &v) && v == 200.0);
    ck_assert(clf__perf_weight(m, "second", "dev", &v) && v == 42.0);
    ck_assert(!clf__perf_weight(m, "k", "d", &v));
    ck_assert(!clf__perf_weight(m, "bad\\qescape", "d", &v));
    ck_assert(!clf__perf_weight(m, "truncated", "dev", &v));
    /* Saving rewrites only the valid entries, as v2 lines (no chunk samples: count 0). */
    ck_assert_int_eq(clf__perf_save(m), CLF_SUCCESS);
    clf__perf_close(m);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "v2\tgood\tdev\t2\t100\t300\t0\nv2\tsecond\tdev\t1\t42\t0\n");

    /* An empty file, and a directory where the file should be. */
    write_text(path, "");
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    clf__perf_close(m);
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    clf__perf_record(m, "k", "d", 1, 1.0);
    clf__perf_record(m, "k", "d", 1, 1.0);
    ck_assert_int_eq(clf__perf_save(m), CLF_ERROR_IO);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "perf.tsv"));
    clf__perf_close(m);
    ck_assert_uint_eq(count_entries(tmpdir), 1); /* the temporary file was removed */
    remove_tree(tmpdir);
}
END_TEST

/* Two processes (models) saving the same file keep each other's keys. */
START_TEST(test_perf_merge)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/perf.tsv", tmpdir);
    clf__perf_model *a, *b;
    ck_assert_int_eq(clf__perf_open(&a, path), CLF_SUCCESS);
    ck_assert_int_eq(clf__perf_open(&b, path), CLF_SUCCESS);
    clf__perf_record(a, "ka", "d", 1, 1.0);
    clf__perf_record(a, "ka", "d", 10, 1.0);
    clf__perf_record(b, "kb", "d", 1, 1.0);
    clf__perf_record(b, "kb", "d", 20, 1.0);
    ck_assert_int_eq(clf__perf_save(a), CLF_SUCCESS);
    ck_assert_int_eq(clf__perf_save(b), CLF_SUCCESS);
    clf__perf_model *c;
    double v;
    ck_assert_int_eq(clf__perf_open(&c, path), CLF_SUCCESS);
    ck_assert(clf__perf_weight(c, "ka", "d", &v) && v == 10.0);
    ck_assert(clf__perf_weight(c, "kb", "d", &v) && v == 20.0);
    clf__perf_close(c);
    /* a now measures kb itself: its own samples win over what b saved. */
    clf__perf_record(a, "kb", "d", 1, 1.0);
    clf__perf_record(a, "kb", "d", 30, 1.0);
    ck_assert_int_eq(clf__perf_save(a), CLF_SUCCESS);
    clf__perf_close(a);
    clf__perf_close(b);
    ck_assert_int_eq(clf__perf_open(&a, path), CLF_SUCCESS);
    ck_assert(clf__perf_weight(a, "ka", "d", &v) && v == 10.0);
    ck_assert(clf__perf_weight(a, "kb", "d", &v) && v == 30.0);
    clf__perf_close(a);
    remove_tree(tmpdir);
}
END_TEST

typedef struct recorder {
    clf__perf_model *m;
    int id;
} recorder;

static void *record_many(void *arg)
{
    recorder *r = arg;
    char dev[32];
    snprintf(dev, sizeof dev, "dev%d", r->id);
    for (int i = 0; i < 2000; i++) {
        /* A shared key, an own key, and many keys to make the table grow meanwhile. */
        clf__perf_record(r->m, "shared", "d", 500, 1.0);
        clf__perf_record(r->m, "own", dev, 100 * (uint64_t)(r->id + 1), 1.0);
        char k[32];
        snprintf(k, sizeof k, "k%d-%d", r->id, i % 300);
        clf__perf_record(r->m, k, dev, 1, 1.0);
        double v;
        if (clf__perf_weight(r->m, "shared", "d", &v) && v != 500.0)
            return (void *)1;
        if (r->id == 0 && i % 500 == 0 && clf__perf_save(r->m) != CLF_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

START_TEST(test_perf_threads)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/perf.tsv", tmpdir);
    clf__perf_model *m;
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    pthread_t th[4];
    recorder r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (recorder){m, i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, record_many, &r[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        ck_assert_ptr_null(rc);
    }
    double v;
    ck_assert(clf__perf_weight(m, "shared", "d", &v) && v == 500.0);
    for (int i = 0; i < 4; i++) {
        char dev[32];
        snprintf(dev, sizeof dev, "dev%d", i);
        ck_assert(clf__perf_weight(m, "own", dev, &v) && v == 100.0 * (i + 1));
        ck_assert(clf__perf_weight(m, "k0-0", "dev0", &v) || i != 0);
    }
    ck_assert_int_eq(clf__perf_save(m), CLF_SUCCESS);
    clf__perf_close(m);
    ck_assert_int_eq(clf__perf_open(&m, path), CLF_SUCCESS);
    ck_assert(clf__perf_weight(m, "own", "dev3", &v) && v == 400.0);
    ck_assert(clf__perf_weight(m, "k3-299", "dev3", &v) && v == 1.0);
    clf__perf_close(m);
    remove_tree(tmpdir);
}
END_TEST


/* ---- work profiles (workprof.c) and STATIC cut by them ---- */

/* Work of unit x of a Mandelbrot-like range: a heavy band off the middle (20x the rest); with
 * wp_step set, a step instead: the first third costs 8x the rest (test_simulate's skew). */
static int wp_step;

static double wp_density(uint64_t x, uint64_t total)
{
    if (wp_step)
        return x < total / 3 ? 8.0 : 1.0;
    double u = ((double)x - 0.6 * (double)total) / (0.1 * (double)total);
    return 1.0 + 20.0 * exp(-u * u);
}

/*
 * One STATIC launch on devices of true speeds `speed` (work per second), the partitioner
 * fed with the (possibly wrong) weights `hint` and, when given, share ends; every chunk's
 * time is the work it covers over its device's speed. Fills the chunks for the profile and
 * each device's finish time; returns the number of chunks.
 */
static size_t wp_launch(uint64_t total, uint64_t gran, size_t nd, const double *speed,
                        const double *hint, const uint64_t *ends, clf__wprof_chunk *out,
                        double *finish)
{
    clf__part *p;
    clf__part_params prm = {0};
    prm.share_ends = ends;
    prm.static_pieces = CLF__WPROF_PIECES;
    prm.piece_min = clf__wprof_bin_units(total);
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, total, gran, nd, hint, NULL, &prm),
                     CLF_SUCCESS);
    size_t n = 0;
    for (size_t d = 0; d < nd; d++) {
        uint64_t off, len;
        size_t pieces = 0;
        finish[d] = 0;
        while (clf__part_next(p, d, &off, &len)) {
            double work = 0;
            for (uint64_t x = off; x < off + len; x++)
                work += wp_density(x, total);
            out[n].dev = d;
            out[n].off = off;
            out[n].len = len;
            out[n].seconds = work / speed[d];
            finish[d] += out[n].seconds;
            ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
            n++;
            pieces++;
        }
        /* A share comes in pieces about a bin long (at most CLF__WPROF_PIECES of them). */
        ck_assert_uint_le(pieces, CLF__WPROF_PIECES + 1);
    }
    uint64_t fr, outst, done;
    clf__part_counts(p, &fr, &outst, &done);
    ck_assert_uint_eq(done, total);
    clf__part_destroy(p);
    return n;
}

/* Run `launches` profiled STATIC launches; returns the last one's makespan over the ideal
 * (all devices finishing together). */
static double wp_converge(uint64_t total, uint64_t gran, size_t nd, const double *speed,
                          const double *hint, int launches, clf__wprof *w, uint64_t *ends,
                          int *cut)
{
    clf__wprof_chunk c[8 * (CLF__WPROF_PIECES + 1)];
    double finish[8], work = 0, ssum = 0;
    *cut = 0;
    for (uint64_t x = 0; x < total; x++)
        work += wp_density(x, total);
    for (size_t d = 0; d < nd; d++)
        ssum += speed[d];
    double span = 0;
    for (int l = 0; l < launches; l++) {
        size_t n = wp_launch(total, gran, nd, speed, hint, *cut ? ends : NULL, c, finish);
        span = 0;
        for (size_t d = 0; d < nd; d++)
            span = finish[d] > span ? finish[d] : span;
        ck_assert_uint_gt(clf__wprof_add(w, c, n), 0);
        *cut = clf__wprof_cut(w, gran, hint, ends);
    }
    return span / (work / ssum);
}

START_TEST(test_wprof_converges)
{
    /* A 2:1 pair whose learned weights say 1:0.9 (biased by the regions drawn), and a 4:2:1
     * trio told they are equal: the profile's shared bins fix the ratios, and the shares end
     * within a few percent of the ideal makespan. */
    const double speed2[2] = {2.0, 1.0}, hint2[2] = {1.0, 0.9};
    const double speed3[3] = {4.0, 2.0, 1.0}, hint3[3] = {1.0, 1.0, 1.0};
    uint64_t ends[3];
    int cut;
    clf__wprof *w;
    ck_assert_int_eq(clf__wprof_create(&w, 1024, 2), CLF_SUCCESS);
    ck_assert_int_eq(clf__wprof_cut(w, 1, hint2, ends), 0); /* nothing learned yet */
    double first = wp_converge(1024, 1, 2, speed2, hint2, 1, w, ends, &cut);
    ck_assert_msg(first > 1.15, "shares by weight should be off on this profile (%.3f)", first);
    double last = wp_converge(1024, 1, 2, speed2, hint2, 6, w, ends, &cut);
    ck_assert(cut);
    ck_assert_msg(last < 1.05, "2:1 pair: makespan %.3f of the ideal after 7 launches", last);
    ck_assert_uint_eq(ends[1], 1024);
    ck_assert_uint_eq(clf__wprof_launches(w), 7);
    clf__wprof_destroy(w);

    /* A step in the work, with pieces across it: the cut settles at the step's balance
     * point, not beside it. */
    wp_step = 1;
    ck_assert_int_eq(clf__wprof_create(&w, 3 * 4096, 2), CLF_SUCCESS);
    last = wp_converge(3 * 4096, 1, 2, speed2, hint2, 8, w, ends, &cut);
    wp_step = 0;
    ck_assert(cut);
    ck_assert_msg(last < 1.05, "a step in the work: makespan %.3f of the ideal", last);
    clf__wprof_destroy(w);

    ck_assert_int_eq(clf__wprof_create(&w, 4096, 3), CLF_SUCCESS);
    last = wp_converge(4096, 4, 3, speed3, hint3, 8, w, ends, &cut);
    ck_assert(cut);
    ck_assert_msg(last < 1.05, "4:2:1 trio: makespan %.3f of the ideal", last);
    ck_assert_uint_eq(ends[0] % 4, 0);
    ck_assert_uint_eq(ends[1] % 4, 0);
    clf__wprof_destroy(w);
}
END_TEST

/*
 * The pooled strategies with a work density (clf__part_params.density): a device's fair part
 * of the pool is work, cut from the pool's front by what it costs. A 2:1 pair (rates 2 and 1
 * work per second, no fixed cost) under GUIDED with K = 1 (a device wants its whole share of
 * the pool): the slow device, asking first, wants a third of the work. On uniform work that
 * is a third of the units; when the first half of the range costs 1.9 and the second 0.1,
 * the same work is 180 units of the costly front. The chunks still cover the range once.
 */
START_TEST(test_pool_density)
{
    enum { TOTAL = 1024 };
    double rho[CLF__WPROF_BINS], w[2] = {1.0, 0.5}, rate[2] = {2.0, 1.0}, fixed[2] = {0, 0};
    for (size_t b = 0; b < CLF__WPROF_BINS; b++)
        rho[b] = b < CLF__WPROF_BINS / 2 ? 1.9 : 0.1;
    ck_assert_double_eq_tol((double)clf__wprof_work(rho, TOTAL, 0, TOTAL), TOTAL, 1e-9);
    ck_assert_uint_eq(clf__wprof_units(rho, TOTAL, 0, 1.9L * 10), 10);
    ck_assert_uint_eq(clf__wprof_units(rho, TOTAL, 500, 1.9L * 12 + 0.1L * 4), 16);
    ck_assert_uint_eq(clf__wprof_units(rho, TOTAL, 1000, 1e9L), 24);
    for (int dense = 0; dense < 2; dense++) {
        clf__part_params prm = {.guided_k = 1, .fixed_s = fixed, .rates = rate,
                                .density = dense ? rho : NULL};
        clf__part *p;
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, TOTAL, 1, 2, w, NULL, &prm),
                         CLF_SUCCESS);
        uint64_t off, len, covered = 0;
        ck_assert(clf__part_next(p, 1, &off, &len));
        ck_assert_uint_eq(off, 0);
        uint64_t want = dense ? 180 : 342; /* ceil(1024 / 3 / 1.9), ceil(1024 / 3) */
        ck_assert_msg(len >= want - 1 && len <= want, "dense %d: %llu units", dense,
                      (unsigned long long)len);
        covered += len;
        ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
        for (size_t d = 0, idle = 0; idle < 2; d ^= 1) {
            if (!clf__part_next(p, d, &off, &len)) {
                idle++;
                continue;
            }
            idle = 0;
            covered += len;
            ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
        }
        ck_assert_uint_eq(covered, TOTAL);
        clf__part_destroy(p);
    }
}
END_TEST

/*
 * Guessed weights (clf__part_params.unsure): an equal-looking pair under DYNAMIC (16 chunks
 * per device: 32 units of 1024) whose device 1 is 50x slower. Each device's first chunk is a
 * quarter (8 units); device 1 gets no second one before its first is measured; once both
 * are measured, device 1 takes nothing it would finish after device 0 finishes the whole
 * pool, and stands aside when that is under a granule. The range is still covered once.
 */
START_TEST(test_pool_unsure)
{
    enum { TOTAL = 1024 };
    double w[2] = {1.0, 1.0};
    clf__part_params prm = {.chunks_per_device = 16, .unsure = 1};
    clf__part *p;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, TOTAL, 1, 2, w, NULL, &prm),
                     CLF_SUCCESS);
    uint64_t off, len, covered = 0, slow = 0;
    ck_assert(clf__part_next(p, 1, &off, &len));
    ck_assert_uint_eq(len, 8);
    covered += len;
    slow += len;
    ck_assert(!clf__part_next(p, 1, &off, &len)); /* not measured yet */
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert_uint_eq(len, 8);
    covered += len;
    clf__part_measured(p, 0, 8, 8, 8e-3); /* 1,000 units per second */
    ck_assert_int_eq(clf__part_complete(p, 16), CLF_SUCCESS);
    clf__part_measured(p, 1, 0, 8, 0.4);  /* 20 */
    /* From here on in simulated time: the device free first asks next. Device 1 may take
     * at most pool * 20 / 1000 units (20 now), and less as the pool drains; device 0 takes
     * its 32-unit chunks. */
    double t[2] = {8e-3, 0.4}, rate[2] = {1000, 20};
    int done[2] = {0, 0};
    while (!done[0] || !done[1]) {
        size_t d = done[0] ? 1 : done[1] ? 0 : t[1] < t[0];
        if (!clf__part_next(p, d, &off, &len)) {
            done[d] = 1;
            continue;
        }
        uint64_t f;
        clf__part_counts(p, &f, NULL, NULL);
        if (d == 1)
            ck_assert_msg(len * 50 <= f + len + 50, "device 1: %llu units with %llu free",
                          (unsigned long long)len, (unsigned long long)f);
        covered += len;
        slow += d == 1 ? len : 0;
        t[d] += (double)len / rate[d];
        clf__part_measured(p, d, off, len, (double)len / rate[d]);
        ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
    }
    /* Never later than device 0 alone (1.024 s), give or take device 1's last chunk. */
    ck_assert_msg(t[1] <= 1.024 + 0.05, "device 1 ends at %g s", t[1]);
    ck_assert_uint_eq(covered, TOTAL);
    ck_assert_uint_lt(slow, 60); /* by speed it would take 2 %, 20 units; equal weights 512 */
    clf__part_destroy(p);
}
END_TEST

/*
 * Guessed weights on uneven units: the same pair (device 1 50x slower) under GUIDED, whose
 * units cost 0.05 in the range's first 64 and 1 after (a Mandelbrot's empty top rows, then
 * the set). Each device's first taste is at most a 64th of the range per device (8 units,
 * where a quarter of GUIDED's want is 112); device 1's, of cheap units, makes it look
 * less than 50x slower beside device 0's mean over units of mixed cost. Judged beside
 * device 0's chunk nearest its own (cheap too), taking half of what that allows, in whole
 * units, and standing aside for device 0 when that is none, it ends no later than device 0
 * alone would. Judged by the means alone (the old rule), it ended at 9.07 s against 0.96 s
 * for device 0 alone, in a first, sequential form of this test.
 */
static double unsure_cost(uint64_t off, uint64_t len)
{
    double c = 0;
    for (uint64_t x = off; x < off + len; x++)
        c += x < 64 ? 0.05 : 1.0;
    return c;
}

/* A GUIDED launch on guessed weights w of devices of the given rates (cost per second) in
 * simulated time, as the workers run: each device holds one chunk at a time; when one ends,
 * its device and every idle one ask again (device 1 first at the start). Each device's end
 * and first chunk; returns the units covered (short of TOTAL: the rest was left to no one). */
static uint64_t unsure_run(const double *w, const double *rate, double *end, uint64_t *first)
{
    enum { TOTAL = 1024 };
    clf__part_params prm = {.guided_k = 1, .unsure = 1};
    clf__part *p;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_GUIDED, TOTAL, 1, 2, w, NULL, &prm),
                     CLF_SUCCESS);
    double now = 0, fin[2] = {0, 0};
    uint64_t off[2], len[2], covered = 0;
    int busy[2] = {0, 0};
    end[0] = end[1] = 0;
    first[0] = first[1] = 0;
    for (;;) {
        for (size_t k = 0; k < 2; k++) {
            size_t d = 1 - k;
            if (busy[d] || !clf__part_next(p, d, &off[d], &len[d]))
                continue;
            busy[d] = 1;
            first[d] = first[d] ? first[d] : len[d];
            covered += len[d];
            fin[d] = now + unsure_cost(off[d], len[d]) / rate[d];
        }
        if (!busy[0] && !busy[1])
            break;
        size_t d = !busy[0] || (busy[1] && fin[1] < fin[0]);
        now = end[d] = fin[d];
        busy[d] = 0;
        clf__part_measured(p, d, off[d], len[d], unsure_cost(off[d], len[d]) / rate[d]);
        ck_assert_int_eq(clf__part_complete(p, len[d]), CLF_SUCCESS);
    }
    clf__part_destroy(p);
    return covered;
}

START_TEST(test_pool_unsure_uneven)
{
    double w[2] = {1.0, 1.0}, rate[2] = {1000, 20}, end[2];
    double alone = unsure_cost(0, 1024) / rate[0];
    uint64_t first[2];
    ck_assert_uint_eq(unsure_run(w, rate, end, first), 1024);
    ck_assert_uint_eq(first[0], 8);
    ck_assert_uint_eq(first[1], 8);
    ck_assert_msg(end[1] <= alone && end[0] <= alone,
                  "device 1 ends at %g s, device 0 at %g s, device 0 alone %g s", end[1], end[0],
                  alone);
}
END_TEST

/* The true part of the range's work in [off, off + len) by wp_density(). */
static double wp_true_share(uint64_t total, uint64_t off, uint64_t len)
{
    double part = 0, all = 0;
    for (uint64_t x = 0; x < total; x++) {
        all += wp_density(x, total);
        part += x >= off && x < off + len ? wp_density(x, total) : 0;
    }
    return part / all;
}

/* The part of the range's work in [off, off + len) by the profile's density, as clf__learn()
 * weighs a probe's tail; NAN when the density is unknown. */
static double wp_share(const clf__wprof *w, uint64_t total, uint64_t off, uint64_t len)
{
    double rho[CLF__WPROF_BINS];
    if (!clf__wprof_density(w, rho))
        return NAN;
    return (double)(clf__wprof_work(rho, total, off, len) / (long double)total);
}

/*
 * clf__wprof_density(), as a probe launch uses it (probe.c): device 0 runs [0, s) in pieces
 * about a bin long and device 1 the tail [s, total), which the profile is not told of. The
 * tail's part of the work comes from the bins next to it; the heavy band's from its own;
 * on uniform work it is the units' part; NAN while the profile knows under half the range.
 */
START_TEST(test_wprof_share)
{
    enum { TOTAL = 1024, S = 1004 };
    clf__wprof *w;
    ck_assert_int_eq(clf__wprof_create(&w, TOTAL, 2), CLF_SUCCESS);
    ck_assert(isnan(wp_share(w, TOTAL, S, TOTAL - S))); /* nothing known */
    clf__wprof_chunk c[40];
    for (int step = 0; step < 2; step++) {
        wp_step = 0;
        size_t n = 0;
        for (uint64_t off = 0; off < S; off += 32) {
            uint64_t len = off + 32 <= S ? 32 : S - off;
            double work = 0;
            for (uint64_t x = off; x < off + len; x++)
                work += wp_density(x, TOTAL);
            c[n++] = (clf__wprof_chunk){.dev = 0, .off = off, .len = len, .seconds = work * 1e-3};
            if (step == 0 && off >= 256) /* the first time, a quarter of the range only */
                break;
        }
        ck_assert_uint_gt(clf__wprof_add(w, c, n), 0);
        if (step == 0)
            ck_assert(isnan(wp_share(w, TOTAL, S, TOTAL - S)));
    }
    double tail = wp_share(w, TOTAL, S, TOTAL - S), want = wp_true_share(TOTAL, S, TOTAL - S);
    ck_assert_msg(tail > 0.8 * want && tail < 1.25 * want, "tail %g, true %g", tail, want);
    /* The units' part would call the cheap tail 2.5x costlier than it is. */
    ck_assert_double_lt(tail, 0.5 * (double)(TOTAL - S) / TOTAL);
    double band = wp_share(w, TOTAL, 576, 64), bwant = wp_true_share(TOTAL, 576, 64);
    ck_assert_msg(fabs(band / bwant - 1) < 0.05, "band %g, true %g", band, bwant);
    ck_assert_double_eq_tol(wp_share(w, TOTAL, 0, TOTAL), 1.0, 1e-9);
    /* Units outside the range weigh nothing. */
    ck_assert_double_eq(wp_share(w, TOTAL, 0, 0), 0);
    ck_assert_double_eq(wp_share(w, TOTAL, TOTAL, 1), 0);
    ck_assert_double_eq_tol(wp_share(w, TOTAL, 1000, 25), wp_share(w, TOTAL, 1000, 24), 1e-12);
    ck_assert(!clf__wprof_density(NULL, NULL));
    clf__wprof_destroy(w);

    /* Uniform work: the units' part. */
    ck_assert_int_eq(clf__wprof_create(&w, TOTAL, 2), CLF_SUCCESS);
    size_t n = 0;
    for (uint64_t off = 0; off < S; off += 32) {
        uint64_t len = off + 32 <= S ? 32 : S - off;
        c[n++] = (clf__wprof_chunk){.dev = 0, .off = off, .len = len,
                                    .seconds = (double)len * 1e-3};
    }
    ck_assert_uint_gt(clf__wprof_add(w, c, n), 0);
    ck_assert_double_eq_tol(wp_share(w, TOTAL, S, TOTAL - S), (double)(TOTAL - S) / TOTAL, 1e-9);
    clf__wprof_destroy(w);
}
END_TEST

START_TEST(test_wprof_spike_and_limits)
{
    const double speed[2] = {2.0, 1.0}, hint[2] = {2.0, 1.0};
    uint64_t ends[2], before[2];
    int cut;
    clf__wprof *w;
    ck_assert_int_eq(clf__wprof_create(&w, 2048, 2), CLF_SUCCESS);
    wp_converge(2048, 1, 2, speed, hint, 6, w, ends, &cut);
    ck_assert(cut);
    memcpy(before, ends, sizeof ends);
    /* One launch 10x slower on device 0 everywhere (a spike): the medians do not move. */
    clf__wprof_chunk c[2 * (CLF__WPROF_PIECES + 1)];
    double finish[2];
    size_t n = wp_launch(2048, 1, 2, speed, hint, ends, c, finish);
    for (size_t i = 0; i < n; i++)
        if (c[i].dev == 0)
            c[i].seconds *= 10;
    clf__wprof_add(w, c, n);
    ck_assert(clf__wprof_cut(w, 1, hint, ends));
    ck_assert_msg(llabs((long long)ends[0] - (long long)before[0]) <= 2 * 2048 / CLF__WPROF_BINS,
                  "a spike moved the cut from %llu to %llu", (unsigned long long)before[0],
                  (unsigned long long)ends[0]);
    /* A device of speed 0 gets an empty share; one device in use: no cut. */
    const double one[2] = {0.0, 1.0};
    ck_assert_int_eq(clf__wprof_cut(w, 1, one, ends), 0);
    /* Chunks too long, outside the range, of no device, of no time or too short a time (fixed
     * costs more than work) teach nothing. */
    clf__wprof_chunk bad[5] = {{0, 0, 2048, 1.0}, {0, 2040, 100, 1.0}, {5, 0, 64, 1.0},
                               {1, 0, 64, NAN}, {1, 64, 64, CLF__WPROF_MIN_CHUNK_S / 2}};
    ck_assert_uint_eq(clf__wprof_add(w, bad, 5), 0);
    clf__wprof_destroy(w);

    ck_assert_int_eq(clf__wprof_create(&w, 2 * CLF__WPROF_BINS - 1, 2),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__wprof_create(&w, 4096, 0), CLF_ERROR_INVALID_ARGUMENT);
    /* The table: a profile per key, started again when the range size differs. */
    clf__wprof_table *t;
    ck_assert_int_eq(clf__wprof_table_create(&t), CLF_SUCCESS);
    /* One chunk a bin long per bin, the first half on device 0: a sample per bin. */
    clf__wprof_chunk ok[CLF__WPROF_BINS];
    for (size_t i = 0; i < CLF__WPROF_BINS; i++)
        ok[i] = (clf__wprof_chunk){i >= CLF__WPROF_BINS / 2, 4 * i, 4, 1e-3};
    ck_assert_uint_eq(clf__wprof_table_add(t, "k", 4 * CLF__WPROF_BINS, 2, ok, CLF__WPROF_BINS),
                      CLF__WPROF_BINS);
    unsigned launches;
    ck_assert_int_eq(clf__wprof_table_cut(t, "k", 128, 2, 1, hint, ends, &launches), 1);
    ck_assert_uint_eq(launches, 1);
    /* No bin in common: the speeds given (2:1) relate the devices, so equal times on the two
     * halves mean device 1's half holds half the work, and the halves already balance. */
    ck_assert_uint_eq(ends[0], 64);
    ck_assert_int_eq(clf__wprof_table_cut(t, "other", 128, 2, 1, hint, ends, &launches), 0);
    ck_assert_int_eq(clf__wprof_table_cut(t, "k", 256, 2, 1, hint, ends, NULL), 0);
    for (int i = 0; i < 2 * CLF__WPROF_TABLE; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        ck_assert_uint_gt(clf__wprof_table_add(t, key, 128, 2, ok, CLF__WPROF_BINS), 0);
    }
    ck_assert_int_eq(clf__wprof_table_cut(t, "k", 128, 2, 1, hint, ends, NULL), 0); /* evicted */
    clf__wprof_table_destroy(t);
}
END_TEST

/*
 * One profiled launch of the step density (wp_step) on a 2:1 pair, the chunks of device
 * `slow_dev` taking `factor` times their time (an outlier: a stalled device); folds it in
 * and cuts; hint becomes what each device measured (units per second of its own share,
 * biased by where it lies, as clf__learn()'s weights are). Returns the balance (the shorter
 * device time over the longer); *share0 the fraction of the range device 0 ran.
 */
static double wp_outlier_launch(clf__wprof *w, uint64_t total, const double *speed,
                                double *hint, uint64_t *ends, int *cut, size_t slow_dev,
                                double factor, double *share0)
{
    clf__wprof_chunk c[2 * (CLF__WPROF_PIECES + 1)];
    double finish[2];
    size_t n = wp_launch(total, 1, 2, speed, hint, *cut ? ends : NULL, c, finish);
    uint64_t units[2] = {0, 0};
    finish[0] = finish[1] = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].dev == slow_dev)
            c[i].seconds *= factor;
        finish[c[i].dev] += c[i].seconds;
        units[c[i].dev] += c[i].len;
    }
    *share0 = (double)units[0] / (double)total;
    clf__wprof_add(w, c, n);
    for (size_t d = 0; d < 2; d++)
        if (units[d] && finish[d] > 0)
            hint[d] = (double)units[d] / finish[d];
    *cut = clf__wprof_cut(w, 1, hint, ends);
    return finish[0] < finish[1] ? finish[0] / finish[1] : finish[1] / finish[0];
}

START_TEST(test_wprof_outlier)
{
    /* test_simulate's static_uneven in the pure harness: a 2:1 pair on the step density (the
     * ideal cut gives device 0 0.278 of the range), one launch with an outlier on one device
     * (5x slower, or 5x faster), while the profile is still learning or once it has
     * converged. Before the calibration, a 5x outlier on device 1 in the second launch (as
     * in the CI) left the cut at 0.243 with the times 0.70 of each other for good, and one
     * on device 0 in the first launch at 0.179 and 0.38: a bin that changed hands once
     * keeps that launch's sample, and a stable cut never measures it again. Now the
     * measured times pull the cut back: balanced within 0.9 from eight launches after the
     * outlier on (the profile's own learning takes about five). */
    const double speed[2] = {2.0, 1.0};
    const uint64_t total = 3 * 4096;
    static const struct { size_t dev; int at; double factor; } v[] = {
        {1, 1, 5}, {0, 1, 5}, {1, 2, 5}, {0, 2, 5}, {1, 6, 5}, {0, 6, 5}, {1, 0, 5}, {0, 0, 5},
        {1, 1, 0.2}, {0, 1, 0.2}, {1, 6, 0.2}, {0, 6, 0.2}};
    wp_step = 1;
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        clf__wprof *w;
        uint64_t ends[2];
        double hint[2] = {1.0, 1.0}, share0 = 0, bal[16];
        int cut = 0;
        ck_assert_int_eq(clf__wprof_create(&w, total, 2), CLF_SUCCESS);
        for (int l = 0; l < 16; l++) {
            bal[l] = wp_outlier_launch(w, total, speed, hint, ends, &cut, v[k].dev,
                                       l == v[k].at ? v[k].factor : 1.0, &share0);
            ck_assert_msg(l < v[k].at + 8 || bal[l] >= 0.9,
                          "outlier x%.1f on device %zu in launch %d: launch %d has the times "
                          "%.2f of each other (device 0's share %.3f)", v[k].factor, v[k].dev,
                          v[k].at, l, bal[l], share0);
        }
        ck_assert_msg(fabs(share0 - 0.278) < 0.01, "outlier %zu: the cut ends at %.3f", k,
                      share0);
        clf__wprof_destroy(w);
    }
    /* Noise: every device's chunks in a launch up to 30 % slower, and one launch in six 5x
     * on one device (a loaded host; a fixed pseudo-random sequence): after the first eight
     * launches, never three launches in a row off the cut by more than 0.05. */
    for (int rep = 0; rep < 4; rep++) {
        clf__wprof *w;
        uint64_t ends[2], seed = 12345 + (uint64_t)rep;
        double hint[2] = {1.0, 1.0}, sh[24];
        int cut = 0;
        ck_assert_int_eq(clf__wprof_create(&w, total, 2), CLF_SUCCESS);
        for (int l = 0; l < 24; l++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(seed >> 40) / (double)(1ull << 24);
            size_t dev = (seed >> 20) & 1;
            double f = (seed >> 8) % 6 == 0 ? 5.0 : 1.0 + 0.3 * u;
            wp_outlier_launch(w, total, speed, hint, ends, &cut, dev, f, &sh[l]);
        }
        for (int l = 8; l + 2 < 24; l++)
            ck_assert_msg(fabs(sh[l] - 0.278) < 0.05 || fabs(sh[l + 1] - 0.278) < 0.05 ||
                              fabs(sh[l + 2] - 0.278) < 0.05,
                          "noise %d: launches %d to %d cut at %.3f, %.3f, %.3f", rep, l, l + 2,
                          sh[l], sh[l + 1], sh[l + 2]);
        clf__wprof_destroy(w);
    }
    wp_step = 0;
}
END_TEST

START_TEST(test_part_share_ends)
{
    clf__part *p;
    clf__part_params prm = {0};
    const double w[3] = {1, 0, 1};
    uint64_t ends[3] = {40, 40, 100}, off, len;
    prm.share_ends = ends;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 100, 4, 3, w, NULL, &prm),
                     CLF_SUCCESS);
    ck_assert(clf__part_next(p, 0, &off, &len));
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(len, 40);
    ck_assert(!clf__part_next(p, 1, &off, &len));
    ck_assert(clf__part_next(p, 2, &off, &len));
    ck_assert_uint_eq(off, 40);
    ck_assert_uint_eq(len, 60);
    clf__part_destroy(p);
    /* Not a multiple of gran, backwards, short of total, work for a device of weight 0. */
    const uint64_t bad[4][3] = {{42, 42, 100}, {40, 30, 100}, {40, 40, 96}, {40, 60, 100}};
    for (int i = 0; i < 4; i++) {
        prm.share_ends = bad[i];
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 100, 4, 3, w, NULL, &prm),
                         CLF_ERROR_INVALID_ARGUMENT);
    }
    /* Pieces: a share of 60 in 4 pieces of at least 12: 16, 16, 16, 12. */
    prm.share_ends = ends;
    prm.static_pieces = 4;
    prm.piece_min = 12;
    ck_assert_int_eq(clf__part_create(&p, CLF__PART_STATIC, 100, 4, 3, w, NULL, &prm),
                     CLF_SUCCESS);
    uint64_t want[4] = {16, 16, 16, 12};
    for (int i = 0; i < 4; i++) {
        ck_assert(clf__part_next(p, 2, &off, &len));
        ck_assert_uint_eq(len, want[i]);
    }
    ck_assert(!clf__part_next(p, 2, &off, &len));
    clf__part_destroy(p);
}
END_TEST

/* A probe (clf__part_params.probe_units): the device of weight 0 takes the range's tail in
 * one chunk and nothing more; the others cover the rest exactly, under STATIC (its share
 * cut), DYNAMIC and GUIDED (the pool); bad probes are refused. */
START_TEST(test_part_probe)
{
    static const clf__part_strategy strat[] = {CLF__PART_STATIC, CLF__PART_DYNAMIC,
                                               CLF__PART_GUIDED, CLF__PART_MEMORY_AWARE};
    const double w[3] = {1, 0, 1};
    for (size_t k = 0; k < sizeof strat / sizeof *strat; k++) {
        clf__part *p;
        clf__part_params prm = {0};
        prm.probe_units = 10; /* 90 is a multiple of gran 3; 10 is not, and need not be */
        prm.probe_dev = 1;
        ck_assert_int_eq(clf__part_create(&p, strat[k], 100, 3, 3, w, NULL, &prm), CLF_SUCCESS);
        uint64_t off, len, covered = 0, seen[100] = {0};
        ck_assert(clf__part_next(p, 1, &off, &len));
        ck_assert_uint_eq(off, 90);
        ck_assert_uint_eq(len, 10);
        for (uint64_t i = off; i < off + len; i++)
            seen[i]++;
        ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
        /* Nothing more for the probe's device while the others take work. */
        ck_assert(!clf__part_next(p, 1, &off, &len));
        for (int got = 1; got;) {
            got = 0;
            for (size_t d = 0; d < 3; d += 2)
                if (clf__part_next(p, d, &off, &len)) {
                    got = 1;
                    ck_assert_uint_le(off + len, 90);
                    for (uint64_t i = off; i < off + len; i++)
                        seen[i]++;
                    ck_assert_int_eq(clf__part_complete(p, len), CLF_SUCCESS);
                    ck_assert(!clf__part_next(p, 1, &off, &len));
                }
        }
        for (uint64_t i = 0; i < 100; i++) {
            ck_assert_uint_eq(seen[i], 1);
            covered += seen[i];
        }
        ck_assert_uint_eq(covered, 100);
        clf__part_destroy(p);
    }
    /* Refused: on a device of weight > 0, the whole range, a start off the granularity,
     * past the device's cap, no such device. */
    const struct {
        uint64_t units;
        size_t dev;
    } bad[] = {{10, 0}, {100, 1}, {11, 1}, {40, 1}, {10, 3}};
    const uint64_t cap[3] = {UINT64_MAX, 30, UINT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clf__part *p = NULL;
        clf__part_params prm = {0};
        prm.probe_units = bad[i].units;
        prm.probe_dev = bad[i].dev;
        ck_assert_int_eq(clf__part_create(&p, CLF__PART_DYNAMIC, 100, 3, 3, w, cap, &prm),
                         CLF_ERROR_INVALID_ARGUMENT);
        ck_assert_ptr_null(p);
    }
}
END_TEST

/* clf__perf_forget(): a key's samples go, both kinds, and the next record is kept (not
 * dropped as cold); other keys keep theirs. */
START_TEST(test_perf_forget)
{
    clf__perf_model *m;
    double v = 0;
    clf__perf_fit f;
    ck_assert_int_eq(clf__perf_open(&m, NULL), CLF_SUCCESS);
    ck_assert_int_eq(clf__perf_forget(m, "k", "d"), 0);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(clf__perf_record(m, "k", "d", 10, 1.0), CLF_SUCCESS);
        ck_assert_int_eq(clf__perf_record(m, "k", "e", 20, 1.0), CLF_SUCCESS);
        clf__perf_chunk c[2] = {{100, 1.0, 0, 0}, {200, 2.0, 0, 0}};
        ck_assert_int_eq(clf__perf_record_chunks(m, "k", "d", c, 2), CLF_SUCCESS);
    }
    ck_assert(clf__perf_get(m, "k", "d", &f) && f.units_per_s == 10.0 && f.rate > 0);
    ck_assert_int_eq(clf__perf_forget(m, "k", "d"), 1);
    ck_assert(!clf__perf_weight(m, "k", "d", &v));
    ck_assert(!clf__perf_get(m, "k", "d", &f));
    ck_assert_int_eq(clf__perf_record(m, "k", "d", 5000, 1.0), CLF_SUCCESS);
    ck_assert(clf__perf_weight(m, "k", "d", &v) && v == 5000.0);
    ck_assert(clf__perf_get(m, "k", "d", &f) && f.samples == 1 && f.chunks == 0);
    ck_assert(clf__perf_weight(m, "k", "e", &v) && v == 20.0);
    ck_assert_int_eq(clf__perf_forget(NULL, "k", "d"), 0);
    clf__perf_close(m);
}
END_TEST

static Suite *partition_suite(void)
{
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("partition");
    /* Generous: the generated cases take seconds natively, far more under valgrind. */
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_exhaustive_small);
    tcase_add_test(tc, test_huge);
    tcase_add_test(tc, test_guided_first_chunk);
    tcase_add_test(tc, test_known_cases);
    tcase_add_test(tc, test_requeue_validation);
    tcase_add_test(tc, test_stress_requeue_retire);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_part_share_ends);
    tcase_add_test(tc, test_part_probe);
    tcase_add_test(tc, test_wprof_converges);
    tcase_add_test(tc, test_wprof_spike_and_limits);
    tcase_add_test(tc, test_wprof_share);
    tcase_add_test(tc, test_pool_density);
    tcase_add_test(tc, test_pool_unsure);
    tcase_add_test(tc, test_pool_unsure_uneven);
    tcase_add_test(tc, test_wprof_outlier);
    suite_add_tcase(s, tc);
    TCase *pm = tcase_create("perfmodel");
    tcase_set_timeout(pm, 600);
    tcase_add_unchecked_fixture(pm, perf_setup, perf_teardown);
    tcase_add_test(pm, test_perf_cold_and_median);
    tcase_add_test(pm, test_perf_outliers);
    tcase_add_test(pm, test_perf_round_trip);
    tcase_add_test(pm, test_perf_weights_named);
    tcase_add_test(pm, test_perf_line_exact);
    tcase_add_test(pm, test_perf_line_outliers);
    tcase_add_test(pm, test_perf_chunks_model);
    tcase_add_test(pm, test_part_fixed_costs);
    tcase_add_test(pm, test_part_vary_chunks);
    tcase_add_test(pm, test_perf_corrupt_file);
    tcase_add_test(pm, test_perf_merge);
    tcase_add_test(pm, test_perf_threads);
    tcase_add_test(pm, test_perf_forget);
    suite_add_tcase(s, pm);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(partition_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

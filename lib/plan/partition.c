/*
 * Cutting one launch's range into chunks (see partition.h for the contract).
 *
 * All free work lives in two places: each device's own share (one contiguous range, used
 * by STATIC and MEMORY_AWARE) and a shared pool (sorted, disjoint ranges: the whole range
 * for DYNAMIC and GUIDED, plus whatever was requeued or released by a retired device).
 * Every range boundary is a multiple of gran or equal to total, so any cut at a multiple of
 * gran keeps the "multiples of gran except the chunk ending at total" invariant without
 * special cases. A strategy is a row of a small table: whether it gives out shares, whether
 * it steals, and how much it wants from the pool. The cost model's rules for the pool (how
 * much a device takes, when it stands aside) are in partcost.c.
 */
#include "partimpl.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Lives in error.c; declared here so that this file needs no OpenCL header. */
clf_status clf__fail(clf_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set st from a formatted failure and jump to the function's out: label. */
#define PART_FAIL(code, ...)                 \
    do {                                     \
        st = clf__fail((code), __VA_ARGS__); \
        goto out;                            \
    } while (0)

/* ---- arithmetic on units ---- */

/*
 * Length of the chunk to cut from the front of a free range of rem units for a device
 * wanting `want` units (rounded up to gran) and holding at most cap. The front of a free
 * range is always a multiple of gran, and its end a multiple of gran or total, so the result
 * (a multiple of gran, or the whole range) keeps the invariant. 0: the device cannot hold
 * any chunk of this range.
 */
static uint64_t chunk_len(uint64_t gran, uint64_t rem, uint64_t want, uint64_t cap)
{
    uint64_t len = rem;
    if (want == 0)
        want = 1;
    if (want < rem) {
        uint64_t q = want / gran + (want % gran != 0);
        /* q > rem / gran means rounding up reaches (or passes) the end: take it all. */
        if (q <= rem / gran)
            len = q * gran;
    }
    /* A chunk ending at total that fits cap would already be no longer than cap, so a
     * too-long chunk is shortened to whole granules (never past the range's end). */
    if (len > cap)
        len = cap / gran * gran;
    return len;
}

/* ceil(a / b) for b > 0, without overflow. */
static uint64_t div_ceil(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* ---- strategies ---- */

static uint64_t want_equal_split(const clf__part *p, size_t d)
{
    /* Work in the pool under STATIC/MEMORY_AWARE came from a failed device: split it over
     * the survivors by speed rather than handing it all to the first that asks. */
    long double x = (long double)p->pool_units * clf__part_active_share(p, d);
    return x >= (long double)p->pool_units ? p->pool_units : (uint64_t)ceill(x);
}

/*
 * DYNAMIC's chunks are sized by the device's speed (the seeds' "performance-based split"):
 * the fastest device's chunk is about total / (k n), a device at a tenth of its speed takes
 * a tenth of that, so every chunk lasts about as long on whichever device runs it. Equal
 * chunks made a CPU 50x slower than a GPU run its one chunk for as long as the GPU ran the
 * whole launch (the H200 measurement in issue 27).
 */
static uint64_t want_dynamic(const clf__part *p, size_t d)
{
    long double x = (long double)p->dyn_chunk * (long double)p->dev[d].w;
    uint64_t want = x >= (long double)p->dyn_chunk ? p->dyn_chunk : x >= 1 ? (uint64_t)x : 1;
    if (p->vary_chunks && !p->keep_chunking) {
        static const unsigned mul[3] = {2, 4, 1}; /* in halves: 1, 2, 1/2 */
        unsigned m = mul[p->dev[d].taken % 3];
        want = want > UINT64_MAX / m ? UINT64_MAX / 2 : want * m / 2;
        if (want == 0)
            want = 1;
    }
    return want;
}

static uint64_t want_guided(const clf__part *p, size_t d)
{
    uint64_t r = p->pool_units;
    long double x;
    /* R * P_i / K in long double: R may be near 2^64, so an integer product would overflow,
     * and a double would lose the low bits of R (long double keeps 64 on x86). */
    if (p->wsum_active > 0)
        x = (long double)r * (long double)p->dev[d].w / (p->wsum_active * p->guided_k);
    else
        x = (long double)r / ((long double)p->nactive * p->guided_k);
    uint64_t want = r;
    if (x < (long double)r) {
        /* The normalised weights carry double rounding (2^-53), so an exact integer such as
         * 160 * 1/8 can come out as 20.000...01: snap values that close to an integer rather
         * than letting ceil add a unit (and then a whole granule). */
        long double xr = nearbyintl(x);
        want = (uint64_t)(fabsl(x - xr) <= x * 0x1p-45L ? xr : ceill(x));
    }
    if (want < p->dev[d].min_chunk)
        want = p->dev[d].min_chunk;
    return want;
}

/*
 * MEMORY_AWARE pulls from the shared pool like GUIDED (its chunks shrink as the work runs
 * out, so irregular work balances), each chunk cut to what the device's budget holds
 * (chunk_len() caps it): when the data exceeds the budgets, every chunk is budget-sized and
 * the launch streams. Fixed shares by speed could not balance work whose cost is uneven over
 * the range (efficiency 0.91 on the Mandelbrot band, issue 14).
 */
static const part_ops part_strategies[CLF__PART_STRATEGY_COUNT] = {
    [CLF__PART_STATIC] = {"static", 1, 0, want_equal_split},
    [CLF__PART_DYNAMIC] = {"dynamic", 0, 0, want_dynamic},
    [CLF__PART_GUIDED] = {"guided", 0, 0, want_guided},
    [CLF__PART_MEMORY_AWARE] = {"memory-aware", 0, 0, want_guided},
};

const char *clf__part_strategy_name(clf__part_strategy s)
{
    if ((unsigned)s >= CLF__PART_STRATEGY_COUNT)
        return NULL;
    return part_strategies[s].name;
}

/* ---- the pool ---- */

static int pool_reserve(clf__part *p, size_t n)
{
    if (n <= p->cap_pool)
        return 0;
    size_t cap = p->cap_pool ? p->cap_pool : 4;
    while (cap < n) {
        if (cap > SIZE_MAX / 2 / sizeof *p->pool)
            return -1;
        cap *= 2;
    }
    part_range *np = realloc(p->pool, cap * sizeof *np);
    if (!np)
        return -1;
    p->pool = np;
    p->cap_pool = cap;
    return 0;
}

/* Index of the first pool range with hi > off. */
static size_t pool_find(const clf__part *p, uint64_t off)
{
    size_t lo = 0, hi = p->npool;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->pool[mid].hi <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Nonzero when [lo, hi) overlaps a pool range. */
static int pool_overlaps(const clf__part *p, uint64_t lo, uint64_t hi)
{
    size_t i = pool_find(p, lo);
    return i < p->npool && p->pool[i].lo < hi;
}

/* Add a free range disjoint from the pool, merging with its neighbours. -1: no memory. */
static int pool_add(clf__part *p, uint64_t lo, uint64_t hi)
{
    size_t i = pool_find(p, lo);
    int left = i > 0 && p->pool[i - 1].hi == lo;
    int right = i < p->npool && p->pool[i].lo == hi;
    if (left && right) {
        p->pool[i - 1].hi = p->pool[i].hi;
        memmove(&p->pool[i], &p->pool[i + 1], (p->npool - i - 1) * sizeof *p->pool);
        p->npool--;
    } else if (left) {
        p->pool[i - 1].hi = hi;
    } else if (right) {
        p->pool[i].lo = lo;
    } else {
        if (pool_reserve(p, p->npool + 1) != 0)
            return -1;
        memmove(&p->pool[i + 1], &p->pool[i], (p->npool - i) * sizeof *p->pool);
        p->pool[i].lo = lo;
        p->pool[i].hi = hi;
        p->npool++;
    }
    p->pool_units += hi - lo;
    return 0;
}

/* ---- creation ---- */

/*
 * Cut [0, total) into the devices' shares: boundary j is total * (w_0 + ... + w_j) / sum
 * rounded to the nearest multiple of gran (or to total). Each boundary is within gran / 2 of
 * its ideal, so each share is within gran of total * w_j / sum; shares are contiguous and
 * ordered by device, and they cover the range exactly whatever the rounding of the floats.
 */
static void assign_shares(clf__part *p)
{
    long double sum = 0, cum = 0;
    for (size_t i = 0; i < p->ndev; i++)
        sum += p->dev[i].w;
    uint64_t prev = 0;
    size_t last = 0;
    for (size_t i = 0; i < p->ndev; i++)
        if (p->dev[i].w > 0)
            last = i;
    for (size_t i = 0; i < p->ndev; i++) {
        uint64_t b;
        cum += p->dev[i].w;
        long double x = (long double)p->total * (cum / sum);
        if (i == last || !(x < (long double)p->total)) {
            b = p->total;
        } else {
            uint64_t xi = x > 0 ? (uint64_t)x : 0;
            uint64_t lo = xi - xi % p->gran;
            uint64_t hi = p->total - lo > p->gran ? lo + p->gran : p->total;
            b = (x - (long double)lo <= (long double)hi - x) ? lo : hi;
        }
        if (b < prev || p->dev[i].w == 0)
            b = prev; /* weight 0, or float noise: an empty share */
        p->dev[i].own.lo = prev;
        p->dev[i].own.hi = b;
        prev = b;
    }
}

static void recompute_active(clf__part *p)
{
    p->nactive = 0;
    p->wsum_active = 0;
    for (size_t i = 0; i < p->ndev; i++) {
        if (p->dev[i].eligible && !p->dev[i].retired) {
            p->nactive++;
            p->wsum_active += p->dev[i].w;
        }
    }
}

clf_status clf__part_create(clf__part **out, clf__part_strategy strategy, uint64_t total,
                            uint64_t gran, size_t ndev, const double *weights,
                            const uint64_t *max_units, const clf__part_params *params)
{
    clf_status st = CLF_SUCCESS;
    clf__part *p = NULL;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "partition: out is NULL");
    *out = NULL;
    if ((unsigned)strategy >= CLF__PART_STRATEGY_COUNT)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "partition: unknown strategy %d",
                         (int)strategy);
    if (total == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "partition: the range is empty");
    if (gran == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "partition: granularity is 0");
    if (ndev == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "partition: no devices");
    if (ndev > SIZE_MAX / sizeof(part_dev))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "partition: %zu devices", ndev);

    clf__part_params prm = {0};
    if (params)
        prm = *params;
    long double k = prm.guided_k == 0 ? CLF__PART_GUIDED_K : (long double)prm.guided_k;
    if (!isfinite(prm.guided_k) || prm.guided_k < 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "partition: guided K %g is not > 0",
                         prm.guided_k);

    for (size_t i = 0; prm.fixed_s && i < ndev; i++)
        if (!isfinite(prm.fixed_s[i]) || prm.fixed_s[i] < 0)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "partition: fixed cost %g s of device %zu is not finite and >= 0",
                             prm.fixed_s[i], i);
    for (size_t i = 0; prm.rates && i < ndev; i++)
        if (!isfinite(prm.rates[i]) || prm.rates[i] < 0)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "partition: rate %g of device %zu is not finite and >= 0",
                             prm.rates[i], i);
    if (prm.share_ends) {
        uint64_t prev = 0;
        for (size_t i = 0; i < ndev; i++) {
            uint64_t e = prm.share_ends[i];
            double w = weights ? weights[i] : 1.0;
            uint64_t cap = max_units ? max_units[i] : UINT64_MAX;
            if (e < prev || e > total || (e % gran != 0 && e != total) ||
                (i + 1 == ndev && e != total) ||
                (e > prev && (!(w > 0) || cap < (total < gran ? total : gran))))
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "partition: share end %llu of device %zu is not a multiple "
                                 "of %llu between %llu and %llu (the last at the end), or "
                                 "gives work to a device that cannot take it",
                                 (unsigned long long)e, i, (unsigned long long)gran,
                                 (unsigned long long)prev, (unsigned long long)total);
            prev = e;
        }
    }
    if (prm.probe_units &&
        (prm.probe_dev >= ndev || prm.probe_units >= total ||
         (total - prm.probe_units) % gran != 0 || !weights || weights[prm.probe_dev] != 0 ||
         (max_units && max_units[prm.probe_dev] < prm.probe_units)))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "partition: a probe of %llu units for device %zu must be under the "
                         "range of %llu, start at a multiple of %llu, fit the device's "
                         "largest chunk, and go to a device of weight 0",
                         (unsigned long long)prm.probe_units, prm.probe_dev,
                         (unsigned long long)total, (unsigned long long)gran);
    if (prm.fixed_s && !prm.rates && !weights)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "partition: fixed costs need rates or weights in units per second");

    double wmax = 0;
    int any_eligible = 0;
    uint64_t need = total < gran ? total : gran;
    for (size_t i = 0; i < ndev; i++) {
        double w = weights ? weights[i] : 1.0;
        if (!isfinite(w) || w < 0)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "partition: weight %g of device %zu is not finite and >= 0", w, i);
        uint64_t cap = max_units ? max_units[i] : UINT64_MAX;
        if (cap >= need) {
            any_eligible = 1;
            if (w > wmax)
                wmax = w;
        }
    }
    if (!any_eligible)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "partition: no device can hold one chunk of %llu units",
                         (unsigned long long)need);

    p = calloc(1, sizeof *p);
    if (!p)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "partition: out of memory");
    p->dev = calloc(ndev, sizeof *p->dev);
    if (!p->dev)
        PART_FAIL(CLF_ERROR_OUT_OF_HOST_MEMORY, "partition: out of memory");
    p->ops = &part_strategies[strategy];
    p->total = total;
    p->gran = gran;
    p->ndev = ndev;
    p->guided_k = k;
    p->keep_chunking = prm.keep_chunking;
    p->vary_chunks = prm.vary_chunks && strategy == CLF__PART_DYNAMIC;
    p->free_units = total;
    p->unsure = prm.unsure;
    if (prm.density && prm.fixed_s) {
        p->dense = 1;
        memcpy(p->density, prm.density, sizeof p->density);
    }

    for (size_t i = 0; i < ndev; i++) {
        part_dev *d = &p->dev[i];
        d->cap = max_units ? max_units[i] : UINT64_MAX;
        d->eligible = d->cap >= need;
        /* Normalising by the largest weight keeps sums finite (weights of 1e308 are legal);
         * all-zero weights mean equal ones. */
        if (d->eligible)
            d->w = wmax > 0 ? (weights ? weights[i] : 1.0) / wmax : 1.0;
        uint64_t m = prm.min_chunks && prm.min_chunks[i] ? prm.min_chunks[i] : prm.min_chunk;
        d->min_chunk = m == 0 ? gran : (m < total ? m : total);
        if (prm.fixed_s) {
            d->fixed_s = prm.fixed_s[i];
            d->rate = prm.rates ? prm.rates[i] : weights[i];
            p->timed = 1;
        }
    }
    recompute_active(p);
    p->neligible = p->nactive;

    /* DYNAMIC: about k chunks per eligible device; a k * n that overflows means chunks of
     * one granule. */
    unsigned kd = prm.chunks_per_device ? prm.chunks_per_device : 4;
    uint64_t parts;
    if (__builtin_mul_overflow((uint64_t)kd, (uint64_t)p->nactive, &parts))
        p->dyn_chunk = 1;
    else
        p->dyn_chunk = div_ceil(total, parts);

    if (p->ops->shares && prm.share_ends) {
        for (size_t i = 0; i < ndev; i++) {
            p->dev[i].own.lo = i ? prm.share_ends[i - 1] : 0;
            p->dev[i].own.hi = prm.share_ends[i];
        }
    } else if (p->ops->shares) {
        assign_shares(p);
    }
    /* A probe: the range's tail is the probe device's, cut off whatever share held it (the
     * shares are contiguous and in device order). */
    uint64_t shared = total - prm.probe_units;
    if (prm.probe_units) {
        for (size_t i = 0; i < ndev && p->ops->shares; i++) {
            part_dev *d = &p->dev[i];
            d->own.lo = d->own.lo < shared ? d->own.lo : shared;
            d->own.hi = d->own.hi < shared ? d->own.hi : shared;
        }
        p->dev[prm.probe_dev].own.lo = shared;
        p->dev[prm.probe_dev].own.hi = total;
    }
    for (size_t i = 0; i < ndev; i++) {
        part_dev *d = &p->dev[i];
        uint64_t share = d->own.hi - d->own.lo, piece = UINT64_MAX;
        if (prm.probe_units && i == prm.probe_dev) {
            d->piece = UINT64_MAX; /* one chunk: what it measures is all it is for */
            continue;
        }
        if (p->ops->shares && prm.static_pieces > 1 && share > 0) {
            piece = div_ceil(share, prm.static_pieces);
            if (piece < prm.piece_min)
                piece = prm.piece_min;
        }
        d->piece = piece;
    }
    if (!p->ops->shares && pool_add(p, 0, shared) != 0)
        PART_FAIL(CLF_ERROR_OUT_OF_HOST_MEMORY, "partition: out of memory");
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        PART_FAIL(CLF_ERROR_OUT_OF_HOST_MEMORY, "partition: cannot create a mutex");
    *out = p;
    return CLF_SUCCESS;
out:
    if (p) {
        free(p->pool);
        free(p->dev);
        free(p);
    }
    return st;
}

void clf__part_destroy(clf__part *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->lock);
    free(p->pool);
    free(p->dev);
    free(p);
}

/* ---- taking work ---- */

/* Move the range's front chunk of up to `want` units (device d's cap) to *off, *len. */
static int take_front(clf__part *p, size_t d, part_range *r, uint64_t want, uint64_t *off,
                      uint64_t *len)
{
    uint64_t n = chunk_len(p->gran, r->hi - r->lo, want, p->dev[d].cap);
    if (n == 0)
        return 0;
    *off = r->lo;
    *len = n;
    r->lo += n;
    p->free_units -= n;
    p->outstanding += n;
    return 1;
}

static int take_pool(clf__part *p, size_t d, uint64_t *off, uint64_t *len)
{
    if (p->npool == 0)
        return 0;
    int alone;
    uint64_t limit = clf__part_pool_limit(p, d, &alone);
    if (limit == 0) {
        p->dev[d].refused = 1;
        return 0;
    }
    uint64_t want = alone ? limit : p->ops->pool_want(p, d);
    uint64_t floor = clf__part_timed_floor(p, d); /* no chunk the fixed cost eats */
    if (want < floor)
        want = floor;
    if (p->unsure && !alone && !p->dev[d].measured) {
        /* Its speed is a guess: a first taste, and no second chunk before it is measured
         * (clf__part_params.unsure). A quarter of its want, and at most a 64th of the
         * range per device: GUIDED's first want is a quarter of the range on a pair, and a
         * 50x slower device's quarter of that, of costly units, would end long after the
         * fast device alone. */
        if (p->dev[d].taken)
            return 0;
        uint64_t most = p->total / (64 * (uint64_t)p->ndev);
        want = want / 4 < most ? want / 4 : most;
        want = want > p->gran ? want : p->gran;
    }
    if (want > limit)
        want = limit;
    part_range *r = &p->pool[0];
    if (!take_front(p, d, r, want, off, len))
        return 0;
    p->dev[d].taken++;
    p->pool_units -= *len;
    if (r->lo == r->hi) {
        memmove(&p->pool[0], &p->pool[1], (p->npool - 1) * sizeof *p->pool);
        p->npool--;
    }
    return 1;
}

/*
 * Steal for thief t: pick the victim expected to finish last (remaining share over weight;
 * a weight of 0 counts as slowest), and move the back part of its share, in proportion to
 * the two weights (so both would finish together) and at least t's minimum chunk, to t's
 * share. The victim keeps its front, so a chunk it is about to ask for is unaffected, and t
 * can be stolen from in turn.
 */
static int steal(clf__part *p, size_t t)
{
    size_t v = p->ndev;
    for (size_t j = 0; j < p->ndev; j++) {
        const part_dev *c = &p->dev[j];
        if (j == t || c->own.lo == c->own.hi)
            continue;
        if (v == p->ndev) {
            v = j;
            continue;
        }
        const part_dev *b = &p->dev[v];
        long double rc = (long double)(c->own.hi - c->own.lo);
        long double rb = (long double)(b->own.hi - b->own.lo);
        int better;
        if ((c->w == 0) != (b->w == 0))
            better = c->w == 0;
        else if (c->w == 0)
            better = rc > rb;
        else
            better = rc / c->w > rb / b->w;
        if (better)
            v = j;
    }
    if (v == p->ndev)
        return 0;
    part_dev *vd = &p->dev[v];
    uint64_t rem = vd->own.hi - vd->own.lo;
    uint64_t blocks = div_ceil(rem, p->gran);
    long double ws = (long double)p->dev[t].w + vd->w;
    long double f = ws > 0 ? p->dev[t].w / ws : 0.5L;
    uint64_t sb = (uint64_t)((long double)blocks * f);
    /* At least the thief's minimum chunk: a thief of weight 0 (or one whose victim has
     * stalled) would otherwise crawl through the share one granule per steal. */
    uint64_t min_blocks = div_ceil(p->dev[t].min_chunk, p->gran);
    if (sb < min_blocks)
        sb = min_blocks;
    if (sb > blocks)
        sb = blocks;
    /* The victim keeps blocks - sb whole granules, so the cut is a multiple of gran. */
    uint64_t cut = vd->own.lo + (blocks - sb) * p->gran;
    p->dev[t].own.lo = cut;
    p->dev[t].own.hi = vd->own.hi;
    vd->own.hi = cut;
    return 1;
}

int clf__part_next(clf__part *p, size_t dev, uint64_t *off, uint64_t *len)
{
    int got = 0;
    if (!p || !off || !len || dev >= p->ndev)
        return 0;
    pthread_mutex_lock(&p->lock);
    part_dev *d = &p->dev[dev];
    if (!d->eligible || d->retired)
        goto out;
    /* Own share first (a device's whole share in one chunk when it fits its cap), then the
     * pool of requeued work, then, for MEMORY_AWARE, someone else's share. */
    if (d->own.lo < d->own.hi && (got = take_front(p, dev, &d->own, d->piece, off, len)))
        goto out;
    if ((got = take_pool(p, dev, off, len)))
        goto out;
    /* A retired device's share stays with it only when moving it to the pool ran out of
     * memory: then anyone takes from it directly. */
    for (size_t j = 0; j < p->ndev; j++)
        if (p->dev[j].retired && p->dev[j].own.lo < p->dev[j].own.hi &&
            (got = take_front(p, dev, &p->dev[j].own, UINT64_MAX, off, len)))
            goto out;
    if (p->ops->steals && steal(p, dev))
        got = take_front(p, dev, &d->own, UINT64_MAX, off, len);
out:
    pthread_mutex_unlock(&p->lock);
    return got;
}

/* ---- giving work back ---- */

clf_status clf__part_requeue(clf__part *p, uint64_t off, uint64_t len)
{
    clf_status st = CLF_SUCCESS;
    if (!p)
        return clf__fail(CLF_ERROR_NULL_POINTER, "partition: NULL partitioner");
    pthread_mutex_lock(&p->lock);
    if (len == 0 || off >= p->total || len > p->total - off)
        PART_FAIL(CLF_ERROR_INVALID_ARGUMENT,
                  "partition: requeued chunk [%llu, +%llu) is outside [0, %llu)",
                  (unsigned long long)off, (unsigned long long)len, (unsigned long long)p->total);
    if (off % p->gran != 0 || (len % p->gran != 0 && off + len != p->total))
        PART_FAIL(CLF_ERROR_INVALID_ARGUMENT,
                  "partition: requeued chunk [%llu, +%llu) is not aligned to %llu",
                  (unsigned long long)off, (unsigned long long)len, (unsigned long long)p->gran);
    if (len > p->outstanding)
        PART_FAIL(CLF_ERROR_INVALID_ARGUMENT,
                  "partition: requeued %llu units but only %llu are outstanding",
                  (unsigned long long)len, (unsigned long long)p->outstanding);
    int overlap = pool_overlaps(p, off, off + len);
    for (size_t i = 0; i < p->ndev && !overlap; i++)
        overlap = p->dev[i].own.lo < p->dev[i].own.hi && p->dev[i].own.lo < off + len &&
                  off < p->dev[i].own.hi;
    if (overlap)
        PART_FAIL(CLF_ERROR_INVALID_ARGUMENT,
                  "partition: requeued chunk [%llu, +%llu) was not handed out",
                  (unsigned long long)off, (unsigned long long)len);
    if (pool_add(p, off, off + len) != 0)
        PART_FAIL(CLF_ERROR_OUT_OF_HOST_MEMORY, "partition: out of memory");
    p->outstanding -= len;
    p->free_units += len;
out:
    pthread_mutex_unlock(&p->lock);
    return st;
}

uint64_t clf__part_retire(clf__part *p, size_t dev)
{
    uint64_t moved = 0;
    if (!p || dev >= p->ndev)
        return 0;
    pthread_mutex_lock(&p->lock);
    part_dev *d = &p->dev[dev];
    if (!d->retired) {
        moved = d->own.hi - d->own.lo;
        /* Moving the share into the pool may need one more pool slot; if that allocation
         * fails the share stays where it is, and next() takes from it directly. */
        if (d->own.lo == d->own.hi || pool_add(p, d->own.lo, d->own.hi) == 0)
            d->own.lo = d->own.hi = 0;
        d->retired = 1;
        recompute_active(p);
    }
    pthread_mutex_unlock(&p->lock);
    return moved;
}

void clf__part_measured(clf__part *p, size_t dev, uint64_t off, uint64_t len, double seconds)
{
    if (!p || dev >= p->ndev)
        return;
    pthread_mutex_lock(&p->lock);
    p->dev[dev].measured = 1;
    if (seconds > 0 && isfinite(seconds) && off < p->total && len <= p->total - off) {
        double work = (double)clf__wprof_work(p->dense ? p->density : NULL, p->total, off, len);
        p->dev[dev].live_units += work;
        p->dev[dev].live_s += seconds;
        if (p->unsure && len > 0)
            p->log[p->nlog++ % CLF__PART_LOG] = (part_meas){dev, off, len, work / seconds};
    }
    pthread_mutex_unlock(&p->lock);
}

clf_status clf__part_complete(clf__part *p, uint64_t len)
{
    clf_status st = CLF_SUCCESS;
    if (!p)
        return clf__fail(CLF_ERROR_NULL_POINTER, "partition: NULL partitioner");
    pthread_mutex_lock(&p->lock);
    if (len > p->outstanding)
        st = clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                       "partition: completed %llu units but only %llu are outstanding",
                       (unsigned long long)len, (unsigned long long)p->outstanding);
    else {
        p->outstanding -= len;
        p->done += len;
    }
    pthread_mutex_unlock(&p->lock);
    return st;
}

void clf__part_counts(clf__part *p, uint64_t *free_units, uint64_t *outstanding, uint64_t *done)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    if (free_units)
        *free_units = p->free_units;
    if (outstanding)
        *outstanding = p->outstanding;
    if (done)
        *done = p->done;
    pthread_mutex_unlock(&p->lock);
}

int clf__part_eligible(const clf__part *p, size_t dev)
{
    /* eligible is written only at creation, so no lock is needed. */
    return p && dev < p->ndev && p->dev[dev].eligible;
}

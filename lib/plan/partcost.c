/*
 * The cost model's rules for the pooled strategies of the partitioner (partition.c): how
 * much a device should take from the pool so that the devices finish together after their
 * fixed costs per chunk, when a device stands aside, the least chunk worth its fixed cost,
 * and the one device left taking the rest in one chunk. Pure arithmetic on the
 * partitioner's state, called under its lock.
 */
#include "partimpl.h"

#include <math.h>

/* Device d's weight over the active devices' (equal shares when those are all 0). */
long double clf__part_active_share(const clf__part *p, size_t d)
{
    if (p->wsum_active > 0)
        return (long double)p->dev[d].w / p->wsum_active;
    return 1.0L / (long double)(p->nactive ? p->nactive : 1);
}

/* Whether d is (one of) the fastest devices still taking work: it never stands aside. */
int clf__part_fastest_active(const clf__part *p, size_t d)
{
    for (size_t j = 0; j < p->ndev; j++)
        if (p->dev[j].eligible && !p->dev[j].retired && p->dev[j].w > p->dev[d].w)
            return 0;
    return 1;
}

/*
 * The most device d should take from the pool now, or 0 when it should stand aside (HEFT's
 * rule, StarPU dmda's idea, without its transfer terms): taking c of the R pooled units, d
 * finishes them in about c / speed_d while the others finish the rest in (R - c) / (their
 * speeds), so c beyond d's share of R by speed, R * w_d / sum(w), would end after them. A
 * device whose share is under one granule (a CPU next to a GPU 400x faster, near the end of
 * any launch) would finish its smallest chunk after the others had done everything: it
 * takes nothing, and the launch report shows its empty share. The fastest device never
 * stands aside, so the pool always drains. The only device that can take work, or the only
 * one left that does not stand aside (clf__part_pool_limit()), takes the whole pool in one chunk
 * (capped by its budget): there is nothing to balance, and a chunk costs an enqueue, a
 * wait and buffers (a one-device fleet then runs at raw OpenCL cost).
 * Survivors of a failure keep their chunk sizes: the re-run stays spread over them.
 * With fixed costs per chunk (timed_share()), the share is the one that makes every device
 * finish with the others, after its fixed cost: a device stands aside when its fixed cost
 * plus its smallest chunk's time exceeds the time the fleet needs for the pool; its smallest
 * chunk is then the one worth its fixed cost (clf__part_timed_floor()).
 */
long double clf__part_finish_together(size_t n, const double *rate, const double *fixed_s,
                                      unsigned char *in, size_t keep, long double units)
{
    long double T = 0;
    for (size_t pass = 0; pass <= n; pass++) {
        long double rs = 0, fr = 0;
        for (size_t j = 0; j < n; j++)
            if (in[j] && rate[j] > 0) {
                rs += rate[j];
                fr += (long double)fixed_s[j] * rate[j];
            }
        if (!(rs > 0))
            return NAN;
        T = (units + fr) / rs;
        int changed = 0;
        for (size_t j = 0; j < n; j++)
            if (in[j] && j != keep && rate[j] > 0 && fixed_s[j] >= T) {
                in[j] = 0;
                changed = 1;
            }
        if (!changed)
            break;
    }
    return T;
}

/*
 * d's share of the pool when every chunk also costs a fixed time (clf__part_params.fixed_s):
 * the active devices' shares that make them finish together (clf__part_finish_together()),
 * c_d = r_d (T - f_d). Negative when d is left out; NAN when the rates are all 0 (the caller
 * falls back to shares by weight).
 */
static long double timed_share(const clf__part *p, size_t d, long double pool)
{
    double rate[CLF__PART_TIMED_MAX], fixed_s[CLF__PART_TIMED_MAX];
    unsigned char in[CLF__PART_TIMED_MAX];
    if (p->ndev > CLF__PART_TIMED_MAX)
        return NAN;
    for (size_t j = 0; j < p->ndev; j++) {
        const part_dev *x = &p->dev[j];
        rate[j] = x->rate;
        fixed_s[j] = x->fixed_s;
        in[j] = x->eligible && !x->retired && x->rate > 0;
    }
    long double T = clf__part_finish_together(p->ndev, rate, fixed_s, in, SIZE_MAX, pool);
    return isnan(T) ? T : (long double)p->dev[d].rate * (T - (long double)p->dev[d].fixed_s);
}

/*
 * The least chunk worth cutting for d under a cost model: one whose fixed cost is at most
 * CLF__PART_FIXED_FRACTION of its predicted time, f / (f + c / r) <= x, so c >= f r (1 - x)
 * / x (9 f r at 10 %). On a GPU with ~40 us per chunk, DYNAMIC's 16 chunks per device on a
 * 0.5 ms launch spent more time in round trips than computing (1.8 ms against 0.5 ms alone,
 * issue 27). 0 without a model, and for STATIC (whose pool holds only work given back).
 */
long double clf__part_worth_fixed(double rate, double fixed_s)
{
    return (long double)fixed_s * rate * (1 - CLF__PART_FIXED_FRACTION) /
           CLF__PART_FIXED_FRACTION;
}

static uint64_t front_units(const clf__part *p, long double x);

uint64_t clf__part_timed_floor(const clf__part *p, size_t d)
{
    const part_dev *x = &p->dev[d];
    if (!p->timed || p->keep_chunking || p->ops->shares || !(x->rate > 0) || !(x->fixed_s > 0))
        return 0;
    long double c = clf__part_worth_fixed(x->rate, x->fixed_s);
    /* Under a density the rate is work per second: the units at the pool's front that hold
     * that work. */
    if (p->dense && p->npool)
        return front_units(p, c);
    return c >= (long double)p->total ? p->total : (uint64_t)ceill(c);
}

/* The pool's work (its units without a density). */
static long double pool_work(const clf__part *p)
{
    if (!p->dense)
        return (long double)p->pool_units;
    long double x = 0;
    for (size_t i = 0; i < p->npool; i++)
        x += clf__wprof_work(p->density, p->total, p->pool[i].lo, p->pool[i].hi - p->pool[i].lo);
    return x;
}

/* The units from the pool's front that hold work x (all of it when x reaches its work). */
static uint64_t front_units(const clf__part *p, long double x)
{
    if (!p->dense)
        return x >= (long double)p->pool_units ? p->pool_units : (uint64_t)ceill(x);
    uint64_t units = 0;
    for (size_t i = 0; i < p->npool && x > 0; i++) {
        uint64_t len = p->pool[i].hi - p->pool[i].lo;
        long double w = clf__wprof_work(p->density, p->total, p->pool[i].lo, len);
        if (x <= w)
            return units + clf__wprof_units(p->density, p->total, p->pool[i].lo, x);
        units += len;
        x -= w;
    }
    return x > 0 ? p->pool_units : units;
}

/* Device dev's last chunk measured (in the log), or NULL. */
static const part_meas *newest(const clf__part *p, size_t dev)
{
    size_t n = p->nlog < CLF__PART_LOG ? p->nlog : CLF__PART_LOG;
    for (size_t k = 0; k < n; k++) {
        const part_meas *m = &p->log[(p->nlog - 1 - k) % CLF__PART_LOG];
        if (m->dev == dev)
            return m;
    }
    return NULL;
}

/* Device d's speed over device f's on comparable units: d's last chunk measured, against
 * f's measured chunk nearest to it in the range; 0 when either is unknown. Both cut their
 * chunks from the pool's front, so f's neighbours of d's chunk are recent. */
static double near_ratio(const clf__part *p, size_t d, size_t f)
{
    const part_meas *md = newest(p, d), *mf = NULL;
    if (!md)
        return 0;
    size_t n = p->nlog < CLF__PART_LOG ? p->nlog : CLF__PART_LOG;
    long double c = (long double)md->off + (long double)md->len / 2, best = 0;
    for (size_t k = 0; k < n; k++) {
        const part_meas *m = &p->log[k];
        long double dist = fabsl((long double)m->off + (long double)m->len / 2 - c);
        if (m->dev == f && (!mf || dist < best)) {
            mf = m;
            best = dist;
        }
    }
    return mf && mf->rate > 0 ? md->rate / mf->rate : 0;
}

/* clf__part_pool_limit() before the "only one device left" rule: d's fair share, 0 to stand
 * aside. With a density, in work: d's part of the pool's work, and its least chunk's work,
 * are those of the units at the pool's front, where its chunk is cut. */
static uint64_t fair_limit(const clf__part *p, size_t d)
{
    if (p->neligible == 1)
        return p->pool_units;
    long double pool = pool_work(p), x = pool * clf__part_active_share(p, d);
    if (p->timed) {
        long double t = timed_share(p, d, pool);
        if (!isnan(t))
            x = t > 0 ? t : 0;
    }
    /* Its least chunk: one granule, or under a cost model clf__part_timed_floor() (a device whose
     * share is under the chunk worth its fixed cost would finish that chunk after the
     * others); the whole pool when shorter. */
    uint64_t floor = clf__part_timed_floor(p, d), least = floor > p->gran ? floor : p->gran;
    if (least > p->pool_units)
        least = p->pool_units;
    long double least_work = (long double)least;
    if (p->dense && p->npool) { /* the work of the units its chunk would be cut from */
        uint64_t front = p->pool[0].hi - p->pool[0].lo;
        least_work = clf__wprof_work(p->density, p->total, p->pool[0].lo,
                                     least < front ? least : front);
    }
    int yield = 0; /* d may stand aside for a faster device that never has */
    if (p->unsure && p->dev[d].live_s > 0) {
        /* Guessed weights: by the speeds measured in this launch, no more than d finishes
         * before the fastest device measured would finish the whole pool. Who never stands
         * aside stays the fastest by weight (a device measured fastest may be waiting,
         * having stood aside before the speeds changed: the pool would be left to no one).
         * A slower d's speed is its mean over the fastest's mean, or over the fastest's
         * speed on the units nearest d's last chunk when that says slower (near_ratio()),
         * and it takes half of that: without a work profile the units' costs are unknown,
         * and a speed measured on one small chunk can be 2x off. On a fresh fleet's first
         * Mandelbrot, a 50x slower device measured on rows near the image's empty top
         * looked 23x slower beside the fast device's mean over costlier rows, took 8 rows of
         * the set's middle and ended at 2.4x the fast device alone. Less again where the
         * fastest's last chunk, at the pool's front, ran slower than its mean (the front
         * costs more than the pool's average, where the pool's time comes from), and whole
         * granules only: a 50x slower device's one granule of the set's middle lasts a
         * third of the fast device's whole launch. Such a d may stand aside for the
         * fastest, while a chunk is out, when that one is also of the greatest weight (the
         * rule below never makes it stand aside) and never has: of the devices of the
         * greatest weight that never stood aside, the fastest never does, so the rest is
         * never left to no one. Standing aside for a device of less weight, which could
         * then stand aside by weight, left 69 Mandelbrot rows to no one (3 + 1 compute
         * units, the 1 measured faster on cheap rows). */
        double rd = p->dev[d].live_units / p->dev[d].live_s, rmax = rd;
        size_t f = d;
        for (size_t j = 0; j < p->ndev; j++)
            if (p->dev[j].eligible && !p->dev[j].retired && p->dev[j].live_s > 0 &&
                p->dev[j].live_units / p->dev[j].live_s > rmax) {
                rmax = p->dev[j].live_units / p->dev[j].live_s;
                f = j;
            }
        if (f != d) {
            const part_meas *last = newest(p, f); /* f's speed at the pool's front */
            double ratio = rd / rmax, near = near_ratio(p, d, f), front = last ? last->rate : 0;
            ratio = near > 0 && near < ratio ? near : ratio;
            if (front > 0 && front < rmax)
                ratio *= front / rmax;
            long double cap = pool * (long double)ratio / 2;
            x = cap < x ? cap : x;
            if (least_work > 0)
                x = floorl(x / least_work) * least_work;
            yield = p->outstanding > 0 && !p->dev[f].refused && clf__part_fastest_active(p, f);
        }
    }
    if (x < least_work && (yield || !clf__part_fastest_active(p, d)))
        return 0;
    uint64_t fair = front_units(p, x);
    /* The fastest device takes a chunk worth its fixed cost even past its share: halving
     * the tail into ever smaller chunks would pay a fixed cost for each. */
    return fair > least ? fair : least;
}

/*
 * When every other active device stands aside (fair_limit() 0: a CPU next to a GPU 50x
 * faster near the end of a launch, or from the start of a short one), d is the only device
 * that will take anything from the pool, now or later (the pool only shrinks, and with it
 * everyone's share): it takes the whole pool in one chunk rather than in guided's or
 * dynamic's blocks, each of which would cost a round trip for nothing (the gemmsim helper
 * measured 0.80x of device 0 alone from those blocks). Otherwise (and once a device has
 * failed) its fair share.
 */
uint64_t clf__part_pool_limit(const clf__part *p, size_t d, int *alone)
{
    uint64_t own = fair_limit(p, d);
    *alone = p->neligible == 1;
    if (own == 0 || *alone)
        return own;
    /* A device retired by a failure counts as taking work: after a failure the survivors
     * keep their chunk sizes, so that one failing in turn loses a chunk, not the rest. */
    for (size_t j = 0; j < p->ndev; j++)
        if (j != d && p->dev[j].eligible && (p->dev[j].retired || fair_limit(p, j) != 0))
            return own;
    *alone = 1;
    return p->pool_units;
}

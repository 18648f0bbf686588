/*
 * Work profiles and STATIC's cut points from them (see workprof.h for the contract).
 */
#include "workprof.h"
#include "perfmodel.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Lives in error.c; declared here so that this file needs no OpenCL header. */
clf_status clf__fail(clf_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define NB CLF__WPROF_BINS
#define KEEP CLF__WPROF_KEEP

struct clf__wprof {
    uint64_t total;
    size_t ndev;
    unsigned launches;
    double *s;   /* [bin][dev][KEEP] seconds per unit */
    unsigned *n; /* [bin][dev] samples taken in all (the ring's next slot is n % KEEP) */
    unsigned *at; /* [bin][dev] the launch (1, 2, ...) of the last sample, 0: none */
    /* The last KEEP launches (slot launches % KEEP), for the calibration of clf__wprof_cut():
     * each device's units per bin and its measured seconds over them, every chunk counted
     * (the long ones too: they are its time all the same). */
    double *lu;   /* [KEEP][dev][bin] units */
    double *lsec; /* [KEEP][dev] seconds */
};

/* Start of bin b (b = NB: total), without overflowing for any total. */
static uint64_t bin_lo(uint64_t total, size_t b)
{
    return total / NB * b + total % NB * b / NB;
}

/* The units of [off, end) in bin b of a range of total units. */
static uint64_t bin_overlap(uint64_t total, size_t b, uint64_t off, uint64_t end)
{
    uint64_t lo = bin_lo(total, b), hi = bin_lo(total, b + 1);
    lo = lo > off ? lo : off;
    hi = hi < end ? hi : end;
    return hi > lo ? hi - lo : 0;
}

uint64_t clf__wprof_bin_units(uint64_t total)
{
    return total / NB + (total % NB != 0);
}

clf_status clf__wprof_create(clf__wprof **out, uint64_t total, size_t ndev)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "work profile: out is NULL");
    *out = NULL;
    if (total < 2 * NB || ndev == 0 || ndev > CLF_MAX_LAUNCH_DEVICES)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "work profile: a range of %llu units over %zu devices cannot be "
                         "profiled (at least %d units, 1 to %d devices)",
                         (unsigned long long)total, ndev, 2 * NB, CLF_MAX_LAUNCH_DEVICES);
    clf__wprof *w = calloc(1, sizeof *w);
    if (w) {
        w->s = calloc((size_t)NB * ndev * KEEP, sizeof *w->s);
        w->n = calloc((size_t)NB * ndev, sizeof *w->n);
        w->at = calloc((size_t)NB * ndev, sizeof *w->at);
        w->lu = calloc((size_t)KEEP * ndev * NB, sizeof *w->lu);
        w->lsec = calloc((size_t)KEEP * ndev, sizeof *w->lsec);
    }
    if (!w || !w->s || !w->n || !w->at || !w->lu || !w->lsec) {
        clf__wprof_destroy(w);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "work profile: out of memory");
    }
    w->total = total;
    w->ndev = ndev;
    *out = w;
    return CLF_SUCCESS;
}

void clf__wprof_destroy(clf__wprof *w)
{
    if (!w)
        return;
    free(w->s);
    free(w->n);
    free(w->at);
    free(w->lu);
    free(w->lsec);
    free(w);
}

unsigned clf__wprof_launches(const clf__wprof *w)
{
    return w ? w->launches : 0;
}

static double bin_median(const clf__wprof *w, size_t b, size_t d);

size_t clf__wprof_add(clf__wprof *w, const clf__wprof_chunk *c, size_t n)
{
    if (!w || !c || n == 0)
        return 0;
    /* This launch's seconds and units per (bin, device). */
    double *t = calloc((size_t)NB * w->ndev, sizeof *t);
    uint64_t *u = calloc((size_t)NB * w->ndev, sizeof *u);
    size_t added = 0;
    if (!t || !u)
        goto out;
    uint64_t longest = 2 * clf__wprof_bin_units(w->total);
    /* This launch's record for the calibration, in the slot of the oldest (cleared below if
     * the launch teaches nothing, so that it is not read as one). */
    double *lu = &w->lu[(size_t)(w->launches % KEEP) * w->ndev * NB];
    double *lsec = &w->lsec[(size_t)(w->launches % KEEP) * w->ndev];
    memset(lu, 0, w->ndev * NB * sizeof *lu);
    memset(lsec, 0, w->ndev * sizeof *lsec);
    for (size_t i = 0; i < n; i++) {
        const clf__wprof_chunk *k = &c[i];
        if (k->dev >= w->ndev || k->len == 0 || k->off >= w->total ||
            k->len > w->total - k->off || !isfinite(k->seconds) || !(k->seconds > 0))
            continue;
        /* The chunk's units in each bin. */
        uint64_t end = k->off + k->len, ov[NB];
        lsec[k->dev] += k->seconds;
        for (size_t b = 0; b < NB; b++) {
            ov[b] = bin_overlap(w->total, b, k->off, end);
            lu[k->dev * NB + b] += (double)ov[b];
        }
        if (k->len > longest || !(k->seconds >= CLF__WPROF_MIN_CHUNK_S))
            continue;
        /* The chunk's time goes to its bins in proportion to what the profile already knows
         * of them on this device (units x seconds per unit), evenly while it knows nothing of
         * one: a piece across a step in the work (cheap rows, then costly ones) would
         * otherwise call both bins half costly, and the cut would settle beside the step. */
        double share[NB], sum = 0;
        int known = 1;
        for (size_t b = 0; b < NB; b++) {
            share[b] = ov[b] ? (double)ov[b] * bin_median(w, b, k->dev) : 0;
            known &= !isnan(share[b]) && (ov[b] == 0 || share[b] > 0);
            sum += ov[b] ? share[b] : 0;
        }
        for (size_t b = 0; b < NB; b++) {
            if (!ov[b])
                continue;
            double f = known && sum > 0 ? share[b] / sum : (double)ov[b] / (double)k->len;
            t[b * w->ndev + k->dev] += k->seconds * f;
            u[b * w->ndev + k->dev] += ov[b];
        }
    }
    for (size_t b = 0; b < NB; b++) {
        uint64_t width = bin_lo(w->total, b + 1) - bin_lo(w->total, b);
        for (size_t d = 0; d < w->ndev; d++) {
            size_t i = b * w->ndev + d;
            if (2 * u[i] < width)
                continue;
            w->s[i * KEEP + w->n[i] % KEEP] = t[i] / (double)u[i];
            w->n[i]++;
            w->at[i] = w->launches + 1;
            added++;
        }
    }
    if (added)
        w->launches++;
    else {
        memset(lu, 0, w->ndev * NB * sizeof *lu);
        memset(lsec, 0, w->ndev * sizeof *lsec);
    }
out:
    free(t);
    free(u);
    return added;
}

/* Bin b's median seconds per unit on device d, or NAN when it has none. */
static double bin_median(const clf__wprof *w, size_t b, size_t d)
{
    size_t i = b * w->ndev + d;
    size_t m = w->n[i] < KEEP ? w->n[i] : KEEP;
    double v[KEEP];
    if (m == 0)
        return NAN;
    memcpy(v, &w->s[i * KEEP], m * sizeof *v);
    return clf__median(v, m);
}

/* Samples a bin's median needs to outvote one outlier. */
#define SURE 3

/* The median over the bins both have of d's time over e's: the bins both ran within the last
 * KEEP launches, else those where both medians rest on SURE samples or more, else NAN (the
 * speeds given relate the two). Not any bin they share: a bin that changed hands once has
 * one sample of the device that left it, never taken again while the cut stays, and an
 * outlier there would set the ratio for good (the calibration of clf__wprof_cut() puts
 * each device's own share right, but the ratio says what the bins that change hands cost). */
static double pair_ratio(const clf__wprof *w, const double *med, size_t d, size_t e)
{
    double rf[NB], rs[NB];
    size_t mf = 0, ms = 0, nd = w->ndev;
    for (size_t b = 0; b < NB; b++) {
        size_t i = b * nd + d, j = b * nd + e;
        double x = med[i], y = med[j];
        if (isnan(x) || isnan(y) || !(y > 0))
            continue;
        if (w->at[i] + KEEP > w->launches && w->at[j] + KEEP > w->launches)
            rf[mf++] = x / y;
        if (w->n[i] >= SURE && w->n[j] >= SURE)
            rs[ms++] = x / y;
    }
    return mf ? clf__median(rf, mf) : ms ? clf__median(rs, ms) : NAN;
}

/* Where a device starting at position x (units, continuous) is after `time` seconds when a
 * unit of bin b costs tau[b]; total when it gets there sooner. */
static long double advance(const double *tau, uint64_t total, long double x, long double time)
{
    for (size_t b = 0; b < NB; b++) {
        long double lo = (long double)bin_lo(total, b), hi = (long double)bin_lo(total, b + 1);
        if (hi <= x)
            continue;
        long double from = x > lo ? x : lo, need = (hi - from) * tau[b];
        if (need >= time)
            return from + (tau[b] > 0 ? time / tau[b] : hi - from);
        time -= need;
        x = hi;
    }
    return (long double)total;
}

int clf__wprof_cut(const clf__wprof *w, uint64_t gran, const double *speed, uint64_t *ends)
{
    if (!w || !speed || !ends || gran == 0)
        return 0;
    size_t nd = w->ndev, used = 0, ref = nd;
    double *med = malloc((size_t)NB * nd * sizeof *med);
    double k[CLF_MAX_LAUNCH_DEVICES], tau[CLF_MAX_LAUNCH_DEVICES][NB];
    size_t seen[CLF_MAX_LAUNCH_DEVICES] = {0};
    int ok = 0;
    if (!med)
        return 0;
    for (size_t b = 0; b < NB; b++)
        for (size_t d = 0; d < nd; d++)
            seen[d] += !isnan(med[b * nd + d] = bin_median(w, b, d));
    for (size_t d = 0; d < nd; d++) {
        k[d] = NAN;
        if (!(speed[d] > 0) || !isfinite(speed[d]))
            continue;
        used++;
        if (seen[d] == 0)
            goto out; /* nothing known of where its time goes */
        if (ref == nd || seen[d] > seen[ref])
            ref = d;
    }
    if (used < 2)
        goto out;
    /* Each device's time relative to ref's: through the bins it shares with a device already
     * placed (a chain along the range's shares), else by the speeds given. */
    k[ref] = 1;
    for (size_t pass = 0; pass < nd; pass++) {
        int changed = 0;
        for (size_t d = 0; d < nd; d++) {
            if (!isnan(k[d]) || !(speed[d] > 0) || !isfinite(speed[d]))
                continue;
            for (size_t e = 0; e < nd; e++) {
                double r = isnan(k[e]) ? NAN : pair_ratio(w, med, d, e);
                if (!isnan(r) && r > 0) {
                    k[d] = k[e] * r;
                    changed = 1;
                    break;
                }
            }
        }
        if (!changed)
            break;
    }
    for (size_t d = 0; d < nd; d++)
        if (isnan(k[d]) && speed[d] > 0 && isfinite(speed[d]))
            k[d] = speed[ref] / speed[d];
    /* The density: a bin's time on ref, from the devices that ran it lately (within KEEP
     * launches of the last that did: a device that left the bin long ago, an outlier
     * perhaps among its samples, has no say beside one that runs it now); bins no device
     * ran take their neighbours' (linear between the nearest on each side). */
    double rho[NB];
    size_t known = 0;
    for (size_t b = 0; b < NB; b++) {
        double v[CLF_MAX_LAUNCH_DEVICES];
        size_t m = 0;
        unsigned newest = 0;
        for (size_t d = 0; d < nd; d++)
            if (!isnan(k[d]) && w->at[b * nd + d] > newest)
                newest = w->at[b * nd + d];
        for (size_t d = 0; d < nd; d++)
            if (!isnan(k[d]) && !isnan(med[b * nd + d]) && w->at[b * nd + d] + KEEP > newest)
                v[m++] = med[b * nd + d] / k[d];
        rho[b] = m ? clf__median(v, m) : NAN;
        known += m > 0;
    }
    if (4 * known < 3 * NB)
        goto out;
    for (size_t b = 0; b < NB; b++) {
        if (!isnan(rho[b]))
            continue;
        size_t l = b, r = b;
        while (l > 0 && isnan(rho[l]))
            l--;
        while (r < NB - 1 && isnan(rho[r]))
            r++;
        if (isnan(rho[l]))
            rho[b] = rho[r];
        else if (isnan(rho[r]))
            rho[b] = rho[l];
        else
            rho[b] = rho[l] + (rho[r] - rho[l]) * (double)(b - l) / (double)(r - l);
    }
    /*
     * The calibration: each device's scale times the median, over the last KEEP launches,
     * of its measured seconds over what this model predicts for the units it ran. The
     * ratios k come from bins both devices ran, and once the cut is stable no bin changes
     * hands any more, so an outlier in one of them (a stalled launch while the profile was
     * learning) would never be measured again, and the cut would stay where it put it, the
     * devices' times apart launch after launch (issue 27: 2.7x for eight launches). With
     * the calibration every device's predicted time for what it ran lately is what it
     * measured, so a cut that leaves the devices' times apart moves until they agree; a
     * median over launches, so that one stalled launch does not move it.
     */
    double g[CLF_MAX_LAUNCH_DEVICES];
    for (size_t d = 0; d < nd; d++) {
        double r[KEEP];
        size_t m = 0;
        g[d] = 1;
        for (size_t j = 0; j < KEEP && j < w->launches && !isnan(k[d]); j++) {
            size_t l = (w->launches - 1 - j) % KEEP;
            const double *lu = &w->lu[(l * nd + d) * NB];
            double sec = w->lsec[l * nd + d], pred = 0;
            for (size_t b = 0; b < NB; b++)
                pred += lu[b] * rho[b] * k[d];
            if (sec > 0 && pred > 0 && isfinite(sec / pred))
                r[m++] = sec / pred;
        }
        if (m)
            g[d] = clf__median(r, m);
    }
    /* The common finish time T: each device in range order takes what it does in T; the
     * smallest T whose shares reach the end (bisection: the reach grows with T). */
    long double hi = 0;
    for (size_t d = 0; d < nd; d++) {
        if (isnan(k[d]))
            continue;
        long double all = 0;
        for (size_t b = 0; b < NB; b++) {
            tau[d][b] = rho[b] * k[d] * g[d];
            all += (long double)tau[d][b] * (long double)(bin_lo(w->total, b + 1) - bin_lo(w->total, b));
        }
        hi = all > hi ? all : hi;
    }
    if (!(hi > 0) || !isfinite((double)hi))
        goto out;
    long double lo = 0;
    for (int it = 0; it < 200 && hi - lo > hi * 1e-12L; it++) {
        long double mid = 0.5L * (lo + hi), x = 0;
        for (size_t d = 0; d < nd; d++)
            if (!isnan(k[d]))
                x = advance(tau[d], w->total, x, mid);
        if (x >= (long double)w->total)
            hi = mid;
        else
            lo = mid;
    }
    /* Ends at hi, rounded to the nearest granule, never backwards; the last device in use
     * ends at total. */
    long double x = 0;
    uint64_t prev = 0;
    size_t last = 0;
    for (size_t d = 0; d < nd; d++)
        if (!isnan(k[d]))
            last = d;
    for (size_t d = 0; d < nd; d++) {
        uint64_t e = prev;
        if (d >= last) {
            e = w->total;
        } else if (!isnan(k[d])) {
            x = advance(tau[d], w->total, x, hi);
            long double q = nearbyintl(x / (long double)gran) * (long double)gran;
            e = q >= (long double)w->total ? w->total : (uint64_t)q;
            if (e < prev)
                e = prev;
        }
        ends[d] = e;
        prev = e;
    }
    ok = 1;
out:
    free(med);
    return ok;
}

/*
 * The density: each bin's seconds per unit on the one device that has run the most bins (one
 * device, so that no speed ratio enters), a bin it has not run taking the nearest one's it
 * has (the lower first), scaled so that the range's mean unit costs 1. 0 when that device has
 * run fewer than half of the bins.
 */
int clf__wprof_density(const clf__wprof *w, double *rho)
{
    if (!w || !rho)
        return 0;
    size_t nd = w->ndev, ref = 0, best = 0;
    for (size_t d = 0; d < nd; d++) {
        size_t seen = 0;
        for (size_t b = 0; b < NB; b++)
            seen += w->n[b * nd + d] > 0;
        if (seen > best) {
            best = seen;
            ref = d;
        }
    }
    if (2 * best < NB)
        return 0;
    double med[NB];
    long double all = 0;
    for (size_t b = 0; b < NB; b++)
        med[b] = bin_median(w, b, ref);
    for (size_t b = 0; b < NB; b++) {
        double r = med[b];
        for (size_t k = 1; isnan(r) && k < NB; k++)
            r = b >= k && !isnan(med[b - k]) ? med[b - k] : b + k < NB ? med[b + k] : NAN;
        rho[b] = r;
        all += (long double)r * (long double)(bin_lo(w->total, b + 1) - bin_lo(w->total, b));
    }
    if (!(all > 0) || !isfinite((double)all))
        return 0;
    for (size_t b = 0; b < NB; b++)
        rho[b] = (double)((long double)rho[b] * (long double)w->total / all);
    return 1;
}

void clf__wprof_bins_add(double *units, uint64_t total, uint64_t off, uint64_t len)
{
    if (!units || off >= total || len > total - off)
        return;
    for (size_t b = 0; b < NB; b++)
        units[b] += (double)bin_overlap(total, b, off, off + len);
}

long double clf__wprof_work(const double *rho, uint64_t total, uint64_t off, uint64_t len)
{
    if (!rho)
        return (long double)len;
    long double x = 0;
    for (size_t b = 0; b < NB; b++)
        x += (long double)rho[b] * (long double)bin_overlap(total, b, off, off + len);
    return x;
}

/* ceil(x), x near an integer (the doubles' rounding) taken as that integer. */
static long double ceil_snap(long double x)
{
    long double r = nearbyintl(x);
    return fabsl(x - r) <= fabsl(x) * 0x1p-40L ? r : ceill(x);
}

uint64_t clf__wprof_units(const double *rho, uint64_t total, uint64_t off, long double work)
{
    if (!rho)
        return work <= 0 ? 0 : work >= (long double)(total - off) ? total - off
                                                                    : (uint64_t)ceil_snap(work);
    for (size_t b = 0; b < NB && work > 0; b++) {
        uint64_t lo = bin_lo(total, b), hi = bin_lo(total, b + 1);
        if (hi <= off)
            continue;
        uint64_t from = lo > off ? lo : off;
        long double need = (long double)rho[b] * (long double)(hi - from);
        if (need >= work) {
            long double u = rho[b] > 0 ? ceil_snap(work / rho[b]) : (long double)(hi - from);
            uint64_t end = from + (u < (long double)(hi - from) ? (uint64_t)u : hi - from);
            return end - off;
        }
        work -= need;
    }
    return work > 0 ? total - off : 0;
}

/* ---- the table ---- */

struct clf__wprof_table {
    pthread_mutex_t lock;
    struct {
        char *key;
        clf__wprof *w;
        uint64_t used; /* the table's clock when last used (least recently used goes) */
    } e[CLF__WPROF_TABLE];
    uint64_t clock;
};

clf_status clf__wprof_table_create(clf__wprof_table **out)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "work profiles: out is NULL");
    clf__wprof_table *t = calloc(1, sizeof *t);
    if (!t)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "work profiles: out of memory");
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "work profiles: cannot create a mutex");
    }
    *out = t;
    return CLF_SUCCESS;
}

void clf__wprof_table_destroy(clf__wprof_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < CLF__WPROF_TABLE; i++) {
        free(t->e[i].key);
        clf__wprof_destroy(t->e[i].w);
    }
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* The entry of key (under t->lock), or -1. */
static int find(const clf__wprof_table *t, const char *key)
{
    for (int i = 0; i < CLF__WPROF_TABLE; i++)
        if (t->e[i].key && strcmp(t->e[i].key, key) == 0)
            return i;
    return -1;
}

size_t clf__wprof_table_add(clf__wprof_table *t, const char *key, uint64_t total, size_t ndev,
                            const clf__wprof_chunk *c, size_t n)
{
    size_t added = 0;
    if (!t || !key || total < 2 * NB || ndev == 0 || ndev > CLF_MAX_LAUNCH_DEVICES)
        return 0;
    pthread_mutex_lock(&t->lock);
    int i = find(t, key);
    if (i >= 0 && (t->e[i].w->total != total || t->e[i].w->ndev != ndev)) {
        clf__wprof_destroy(t->e[i].w);
        t->e[i].w = NULL;
        if (clf__wprof_create(&t->e[i].w, total, ndev) != CLF_SUCCESS) {
            free(t->e[i].key);
            t->e[i].key = NULL;
            goto out;
        }
    }
    if (i < 0) {
        /* An empty slot, else the least recently used. */
        i = 0;
        for (int j = 0; j < CLF__WPROF_TABLE && t->e[i].key; j++)
            if (!t->e[j].key || t->e[j].used < t->e[i].used)
                i = j;
        clf__wprof *w;
        char *k = strdup(key);
        if (!k || clf__wprof_create(&w, total, ndev) != CLF_SUCCESS) {
            free(k);
            goto out;
        }
        free(t->e[i].key);
        clf__wprof_destroy(t->e[i].w);
        t->e[i].key = k;
        t->e[i].w = w;
    }
    t->e[i].used = ++t->clock;
    added = clf__wprof_add(t->e[i].w, c, n);
out:
    pthread_mutex_unlock(&t->lock);
    return added;
}

int clf__wprof_table_cut(clf__wprof_table *t, const char *key, uint64_t total, size_t ndev,
                         uint64_t gran, const double *speed, uint64_t *ends,
                         unsigned *launches)
{
    int ok = 0;
    if (launches)
        *launches = 0;
    if (!t || !key)
        return 0;
    pthread_mutex_lock(&t->lock);
    int i = find(t, key);
    if (i >= 0 && t->e[i].w->total == total && t->e[i].w->ndev == ndev) {
        t->e[i].used = ++t->clock;
        ok = clf__wprof_cut(t->e[i].w, gran, speed, ends);
        if (launches)
            *launches = t->e[i].w->launches;
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

int clf__wprof_table_density(clf__wprof_table *t, const char *key, uint64_t total, size_t ndev,
                             double *rho)
{
    int ok = 0;
    if (!t || !key)
        return 0;
    pthread_mutex_lock(&t->lock);
    int i = find(t, key);
    if (i >= 0 && t->e[i].w->total == total && t->e[i].w->ndev == ndev)
        ok = clf__wprof_density(t->e[i].w, rho);
    pthread_mutex_unlock(&t->lock);
    return ok;
}

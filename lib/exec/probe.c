/*
 * Probes: a device the cost model leaves out of a kernel's launches gets one chunk now and
 * then, so that one bad figure kept in the model's file cannot keep it out for good (issue
 * 27). choose.c asks clf__plan_probe() once a launch's weights are final; clf__learn() calls
 * clf__probe_learn() after the launch.
 */
#include "exec.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/*
 * A device the cost model leaves out (drop_slow_by_model(), drop_minor(), or standing aside in
 * the partitioner from the start) gets no new samples, so one bad figure kept in the model's
 * file (a run while the device was busy with another process, a cold run) would keep it out
 * for good; StarPU's calibration has the same hole. After CLF__PROBE_AFTER launches of a
 * kernel in a row in which a device took none of it although it could hold a chunk, it gets
 * one chunk, sized to end no later than the fastest device ends the rest alone by the model
 * (probe_units()): even if the model's pessimistic figure is right, the launch is no slower
 * than that device alone. (So no probe when not one granule fits: a device standing aside in
 * a pooled launch because its share is under a granule is probed only in longer launches.)
 * The chunk is timed and learned as any chunk is. A probe that confirms the model (its
 * kernel and transfers, profiled, took more than 1 / CLF__PROBE_WRONG of the time the model
 * predicts for its units) doubles the wait before the next one, up to CLF__PROBE_MAX_EVERY
 * launches, so that a truly slow device costs a chunk every few hundred launches; one that
 * ran CLF__PROBE_WRONG times faster than predicted for the work of its units (by the
 * kernel's work profile; without one a fast probe is no verdict, see clf__probe_learn())
 * shows the samples stale (a device does not get faster by noise: load only slows it) and
 * the model forgets them
 * (clf__perf_forget()), so the next launch shares by the probe's figure, or, if that small
 * chunk's figure still leaves the device out, probes it again with a chunk sized by it.
 * Why 4 launches in a row: a device sits out a launch now and then for good reasons (the
 * tail of a pooled launch, a launch that ends before its thread starts on a loaded host),
 * and CLF__PERF_WINDOW samples are 8, so half a window. On two devices a probe costs the
 * launch nothing by construction; with more, the others share the rest and finish sooner
 * than the fastest alone would, so the probe can end after them (up to k times later with k
 * equal devices: to be sized against the launch's predicted finish, issue 27). The count
 * lives in the fleet (not the model's file): a process runs at least 4 launches of a kernel
 * before it probes.
 * Not for a launch run on one device alone (AUTO's too-small rule: its cost is the point),
 * nor with the user's or equal weights (they say who works).
 */
#define CLF__PROBE_AFTER 4
#define CLF__PROBE_MAX_EVERY 1024
#define CLF__PROBE_WRONG 4.0

/* The kernel's probe state in the fleet's ring (under X->lock), created when asked (the
 * oldest kernel's place is taken), or NULL. */
static struct clf__probe_seen *probe_entry(clf__launch *L, const char *kkey, int create)
{
    clf__exec_state *X = L->X;
    size_t n = X->nprobes < CLF__ARRAY_LEN(X->probes) ? X->nprobes : CLF__ARRAY_LEN(X->probes);
    for (size_t i = 0; i < n; i++)
        if (strncmp(X->probes[i].key, kkey, sizeof X->probes[i].key - 1) == 0)
            return &X->probes[i];
    if (!create)
        return NULL;
    struct clf__probe_seen *e = &X->probes[X->nprobes++ % CLF__ARRAY_LEN(X->probes)];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", kkey);
    return e;
}

/* What the model predicts of (kernel, device): time(c) = *fixed + c / *rate in the range's
 * units (the chunk line, else the launch-level median with no fixed cost). 0: unknown.
 * slow 1: the line's fixed cost with the slower of its rate and the launch-level median's;
 * 2: the launch-level median alone (whole launches, their fixed costs in the rate). */
static int model_line(clf__launch *L, clf__perf_model *m, const char *kkey, size_t i, int slow,
                      double *rate, double *fixed)
{
    char dkey[400];
    clf__perf_fit f;
    clf__perf_device_key(L->fl, L->dev[i], dkey, sizeof dkey);
    if (!clf__perf_get(m, kkey, dkey, &f))
        return 0;
    if (f.rate > 0 && f.fixed_s >= 0 && slow != 2) {
        *rate = f.rate;
        *fixed = f.fixed_s;
    } else if (f.units_per_s > 0) {
        *rate = f.units_per_s;
        *fixed = 0;
    } else {
        return 0;
    }
    if (slow && f.units_per_s > 0 && f.units_per_s < *rate)
        *rate = f.units_per_s;
    if (L->learn_scale > 0)
        *rate /= L->learn_scale; /* a plane learns its work per unit (clf__learn()) */
    return *rate > 0 && isfinite(*rate);
}

/*
 * The probe's units for device p: the range's tail [s, total), s a multiple of the
 * granularity, that p finishes by the model (fixed_p + c / r_p) no later than the fastest
 * other device taking work finishes [0, s) alone (fixed_f + s / r_f); within p's budget,
 * leaving the others at least one granule. 0 when not one granule fits; *pred: p's time,
 * *work: its kernel's part (the units over p's rate). p's rate is the slower of its line's
 * and its launches' median: a device left out because its line's fixed cost is large has
 * a steep rate beside it that no launch showed; on Mandelbrot's uneven rows a 50x slower
 * device's line, fitted through chunks of cheap and costly rows, came out faster than the
 * fast device, and its probe took 950 of 1024 rows (10.8 s against 0.21 s alone).
 */
static uint64_t probe_units(clf__launch *L, clf__perf_model *m, const char *kkey, size_t p,
                            uint64_t max_units, double *pred, double *work)
{
    double rp, fp, rf = 0, ff = 0, best = 0;
    long double c = 0;
    if (!model_line(L, m, kkey, p, 1, &rp, &fp))
        return 0;
    /* The others by their lines, or, when that puts the probe past the range (a line with a
     * large fixed cost, fitted on a loaded host: a CI run probed a stale device once and
     * then never in 11 launches), by their launches' medians. */
    for (int pass = 0; pass < 2; pass++) {
        rf = 0;
        for (size_t i = 0; i < L->ndev; i++) {
            double r, f;
            if (i == p || L->weights[i] <= 0 || L->excluded[i] ||
                !model_line(L, m, kkey, i, pass ? 2 : 0, &r, &f))
                continue;
            double t = f + (double)L->total / r;
            if (!(rf > 0) || t < best) {
                rf = r;
                ff = f;
                best = t;
            }
        }
        if (!(rf > 0))
            return 0;
        /* fp + c / rp = ff + (total - c) / rf */
        c = ((long double)ff - fp + (long double)L->total / rf) / (1.0L / rp + 1.0L / rf);
        if (c < (long double)L->total)
            break;
    }
    if (c > (long double)max_units)
        c = (long double)max_units;
    if (!(c > 0) || c >= (long double)L->total)
        return 0;
    /* The tail starts at a multiple of the granularity, at or after total - c. */
    uint64_t s = L->total - (uint64_t)c;
    s = s % L->gran ? s + (L->gran - s % L->gran) : s;
    if (s < L->gran || s >= L->total)
        return 0;
    *work = (double)(L->total - s) / rp;
    *pred = fp + *work;
    return L->total - s;
}

/*
 * Whether launch device i gets no work from the model in this launch: weight 0 (left out by
 * the rules above), or, for a pooled strategy, a share of the whole range under the least
 * chunk it may take, so that it stands aside from the start (the partitioner's rule,
 * lib/plan/partcost.c fair_limit(): the shares that finish together after the fixed costs
 * when every device has a chunk line, else by weight; the least chunk one granule, or the one
 * worth its fixed cost).
 */
static int left_out_now(const clf__launch *L, clf_strategy s, size_t i)
{
    if (L->weights[i] <= 0)
        return 1;
    if (s == CLF_STRATEGY_STATIC)
        return 0; /* every device of weight > 0 has its share */
    double least = (double)L->gran, x;
    if (L->fitted) {
        unsigned char in[CLF_MAX_LAUNCH_DEVICES];
        double rate[CLF_MAX_LAUNCH_DEVICES];
        for (size_t j = 0; j < L->ndev; j++) {
            rate[j] = L->weights[j] > 0 ? L->fit_rate[j] : 0;
            in[j] = rate[j] > 0;
        }
        long double T = clf__part_finish_together(L->ndev, rate, L->fit_fixed, in, SIZE_MAX,
                                                  (long double)L->total);
        if (isnan(T))
            return 0;
        if (!in[i])
            return 1;
        x = (double)((long double)rate[i] * (T - (long double)L->fit_fixed[i]));
        double floor = (double)clf__part_worth_fixed(rate[i], L->fit_fixed[i]);
        if (!L->chunking_asked && floor > least)
            least = floor;
    } else {
        double wsum = 0;
        for (size_t j = 0; j < L->ndev; j++)
            wsum += L->weights[j];
        x = wsum > 0 ? (double)L->total * L->weights[i] / wsum : 0;
    }
    if (least > (double)L->total)
        least = (double)L->total;
    for (size_t j = 0; j < L->ndev; j++)
        if (L->weights[j] > L->weights[i])
            return x < least; /* the fastest never stands aside */
    return 0;
}

/* Give a probe to the launch's device left out longest past its wait, if any (see above);
 * says so in the reason. After the weights are final, before STATIC's cuts. */
void clf__plan_probe(clf__launch *L, clf_strategy s, const char *kkey,
                     const uint64_t *max_units, clf_launch_report *rep)
{
    size_t p = L->ndev;
    unsigned out = 0;
    L->probe_units = 0;
    L->probe_slot = 0;
    clf__perf_model *m = clf__fleet_perf(L->fl);
    if (L->small || L->ndev < 2 || L->desc.weights_mode != CLF_WEIGHTS_LEARNED || !m)
        return;
    pthread_mutex_lock(&L->X->lock);
    const struct clf__probe_seen *k = probe_entry(L, kkey, 0);
    for (size_t i = 0; k && i < L->ndev; i++) {
        size_t d = L->dev[i];
        if (d >= CLF_MAX_LAUNCH_DEVICES || L->excluded[i] || L->held[i] || !left_out_now(L, s, i))
            continue;
        unsigned every = k->probe_every[d] ? k->probe_every[d] : CLF__PROBE_AFTER;
        if (k->out_run[d] >= every && k->out_run[d] > out) {
            p = i;
            out = k->out_run[d];
        }
    }
    pthread_mutex_unlock(&L->X->lock);
    if (p == L->ndev)
        return;
    double pred = 0, work = 0;
    uint64_t units = probe_units(L, m, kkey, p, max_units[p], &pred, &work);
    if (!units)
        return; /* not one granule would end in time: it waits for a longer launch */
    L->weights[p] = 0; /* the probe and nothing more (a pooled strategy's share too) */
    L->probe_units = units;
    L->probe_slot = p;
    L->probe_pred_s = pred;
    L->probe_work_s = work;
    /* The reason's only word of the probe: when AUTO's figures leave no room for it, their
     * end gives way ("..."), not the clause. */
    char clause[96];
    int n = snprintf(clause, sizeof clause, "; device %zu probed (%llu units, out %u launches)",
                     L->dev[p], (unsigned long long)units, out);
    size_t len = strlen(rep->reason), need = n > 0 ? (size_t)n : 0;
    if (len + need >= sizeof rep->reason && need + 3 < sizeof rep->reason) {
        len = sizeof rep->reason - 1 - need - 3;
        memcpy(rep->reason + len, "...", 4);
        len += 3;
    }
    snprintf(rep->reason + len, sizeof rep->reason - len, "%s", clause);
}

/*
 * After a launch: count the launches each device took no work in, and judge a probe (see
 * above). Returns the launch's device whose model samples are to be forgotten (a probe ran
 * CLF__PROBE_WRONG times faster than predicted), or L->ndev.
 */
size_t clf__probe_learn(clf__launch *L, const char *kkey, double work)
{
    size_t forget = L->ndev;
    int counts = !L->small && L->ndev > 1 && L->desc.weights_mode == CLF_WEIGHTS_LEARNED;
    uint64_t need = L->total < L->gran ? L->total : L->gran;
    pthread_mutex_lock(&L->X->lock);
    struct clf__probe_seen *k = probe_entry(L, kkey, 1);
    for (size_t i = 0; i < L->ndev; i++) {
        const clf__worker *w = &L->w[i];
        size_t d = L->dev[i];
        if (d >= CLF_MAX_LAUNCH_DEVICES)
            continue;
        int warm = k->ran[d];
        if (w->rep.units && !w->rep.failed)
            k->ran[d] = 1;
        if (!counts || L->excluded[i] || L->held[i] || w->rep.failed)
            continue;
        unsigned every = k->probe_every[d] ? k->probe_every[d] : CLF__PROBE_AFTER;
        if (L->probe_units && i == L->probe_slot) {
            /* The probe's profiled device time (its kernel and its transfers) against the
             * model's time for its units alone (the line's slope, learned from host times
             * that include the transfers): a probe is a small chunk, and its host time is
             * mostly fixed costs (an enqueue, waits) that a loaded host stretches by
             * milliseconds; a loaded CI run's 128-unit probe "confirmed" a figure seeded
             * 1000x too slow that way. The kernel alone would make a transfer-bound kernel's
             * right model look 4x wrong at every probe. The host time against the whole
             * prediction when no profile came back. */
            double dev_s = w->rep.busy_s + w->rep.to_device_s + w->rep.from_device_s;
            double t = w->rep.busy_s > 0 ? dev_s : w->rep.finish_s - w->t_start;
            /* The model's time is for units of the range's average cost, and the probe takes
             * the tail: Mandelbrot's last rows cost a twentieth of the average, and a probe
             * of them ran 18x faster than predicted, its device's samples were forgotten, and
             * the next launches gave that 50x slower device up to half the range (9.5 s
             * against 0.21 s alone). The prediction is weighed by the work profile's cost of
             * the tail (static_profile() cuts a probe launch's shares in pieces, so that the
             * profile knows the bins around it); without one, a probe that ran fast is no
             * verdict: its sample is learned as any chunk's, and moves the median with the
             * next probes'. */
            double cost = isnan(work) ? NAN : work * (double)L->total / (double)L->probe_units;
            double want = L->probe_work_s * (isnan(cost) ? 1 : cost) +
                          (w->rep.busy_s > 0 ? 0 : L->probe_pred_s - L->probe_work_s);
            if (!warm || !(t > 0)) {
                /* Its first run of the kernel here measures PoCL's build: no verdict, and
                 * out_run still calls for a probe at the next launch. */
            } else if (t * CLF__PROBE_WRONG < want && isnan(cost)) {
                k->out_run[d] = 0; /* no verdict: the next probe at the same interval */
            } else if (t * CLF__PROBE_WRONG < want) {
                /* Still due: if the probe's one sample (a small chunk, its fixed cost
                 * included) leaves the device out again, the next launch probes it with a
                 * chunk sized by that figure, a larger one. */
                forget = i;
                k->probe_every[d] = 0;
                k->out_run[d] = CLF__PROBE_AFTER;
            } else {
                k->probe_every[d] = every < CLF__PROBE_MAX_EVERY / 2 ? 2 * every
                                                                   : CLF__PROBE_MAX_EVERY;
                k->out_run[d] = 0;
            }
        } else if (w->rep.units) {
            k->out_run[d] = 0;
            k->probe_every[d] = 0; /* helping again: a later exclusion starts afresh */
        } else if (w->max_units >= need && k->out_run[d] < UINT_MAX) {
            k->out_run[d]++;
        }
    }
    pthread_mutex_unlock(&L->X->lock);
    return forget;
}

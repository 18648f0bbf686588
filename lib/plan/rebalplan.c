/*
 * Distributed arrays on unequal devices, the pure part: the split of units by weights,
 * which devices get a part (a device too slow to help gets none), and the decision of
 * CLF_ARRAY_REBALANCE from the speeds measured on each part (lib/data/rebalance.c measures
 * and moves). Pure: tests/test_rebalplan.c drives it with made-up speeds.
 *
 * The model of a step: every part computes at once, so a step takes its slowest part's
 * fixed cost (what a part spends per step whatever its units: its kernels' launches beyond
 * one, measured by rebalance.c) plus its units over its speed, plus, per part boundary, the
 * two halo copies across it (their fixed cost and bytes over the bandwidth). The cut that
 * the speeds call for gives every kept device the same finish: T with
 * sum_k speed_k (T - fixed_k) = units, device k's share speed_k (T - fixed_k). A device is worth a part only when the
 * others would take longer to do its share than it takes plus its boundary.
 */
#include "rebalplan.h"
#include "perfmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Units per device from weights: a largest-remainder split of units (equal weights give
 * clf_distribution_part()'s block layout: the first units % n devices one more). */
void clf__split_units(size_t units, const double *w, size_t nd, size_t *cnt)
{
    double sum = 0;
    for (size_t i = 0; i < nd; i++)
        sum += w[i];
    size_t given = 0;
    double *rem = malloc(nd * sizeof *rem);
    for (size_t i = 0; i < nd; i++) {
        long double share = (long double)units * w[i] / sum;
        cnt[i] = (size_t)floorl(share);
        if (cnt[i] > units)
            cnt[i] = units;
        given += cnt[i];
        if (rem)
            rem[i] = (double)(share - (long double)cnt[i]);
    }
    /* Hand out what is left, largest remainder first (ties: the earlier device). */
    while (given < units) {
        size_t best = nd;
        for (size_t i = 0; i < nd; i++)
            if (w[i] > 0 && (best == nd || (rem ? rem[i] > rem[best] : 0)))
                best = i;
        if (best == nd)
            best = 0;
        cnt[best]++;
        given++;
        if (rem)
            rem[best] = -1.0;
        else
            break;
    }
    if (given < units) /* no memory for the remainders: the rest to the first device */
        cnt[0] += units - given;
    free(rem);
}

/* ---- which devices get a part ---------------------------------------------------------- */

double clf__halo_cost(size_t halo, size_t unit_bytes, double bw)
{
    if (halo == 0)
        return 0; /* no halo: parts never wait for each other */
    return 2 * CLF__REBAL_COPY_S + (double)halo * (double)unit_bytes / (bw > 0 ? bw : 1e9);
}

/* Boundaries between m parts (a periodic array also joins its last to its first). */
size_t clf__boundaries(size_t m, int periodic)
{
    return m < 2 ? 0 : m - 1 + (periodic != 0);
}

size_t clf__balance_keep(const double *s, const size_t *dev, size_t k, size_t units,
                         size_t halo, int periodic, double c, int absolute,
                         unsigned char *keep, char *why, size_t n)
{
    size_t m = 0;
    double sum = 0;
    for (size_t i = 0; i < k; i++) {
        keep[i] = s[i] > 0;
        m += keep[i];
        sum += keep[i] ? s[i] : 0;
    }
    while (m > 1) {
        size_t slow = k;
        for (size_t i = 0; i < k; i++)
            if (keep[i] && (slow == k || s[i] < s[slow]))
                slow = i;
        double share = (double)units * s[slow] / sum;
        double with = (double)units / sum + c * (double)clf__boundaries(m, periodic);
        double without =
            (double)units / (sum - s[slow]) + c * (double)clf__boundaries(m - 1, periodic);
        char line[200];
        if (share < (double)(halo ? halo : 1))
            snprintf(line, sizeof line,
                     "device %zu gets no part: its share by speed, %.1f units, is narrower "
                     "than the halo (%zu)", dev[slow], share, halo ? halo : 1);
        else if (absolute && without <= with)
            snprintf(line, sizeof line,
                     "device %zu gets no part: the others do its %.0f units sooner (step "
                     "%.3g ms without it, %.3g ms with it and its halo copies)",
                     dev[slow], share, without * 1e3, with * 1e3);
        else
            break;
        size_t used = strlen(why);
        if (used + 2 < n)
            snprintf(why + used, n - used, "%s%s", used ? "; " : "", line);
        keep[slow] = 0;
        sum -= s[slow];
        m--;
    }
    return m;
}

/* ---- the decision of CLF_ARRAY_REBALANCE ------------------------------------------------ */

/* Units of the current cut that change device in the new one. */
static size_t moved_units(const clf__rebal_in *in, const size_t *dev, const size_t *cnt,
                          size_t k)
{
    size_t moved = 0, first = 0;
    for (size_t i = 0; i < k; i++) {
        size_t stay = 0, pf = 0;
        for (size_t p = 0; p < in->nparts; p++) {
            size_t s = first > pf ? first : pf;
            size_t e = first + cnt[i] < pf + in->count[p] ? first + cnt[i] : pf + in->count[p];
            if (in->device[p] == dev[i] && s < e)
                stay += e - s;
            pf += in->count[p];
        }
        moved += cnt[i] - stay;
        first += cnt[i];
    }
    return moved;
}

void clf__rebal_plan(const clf__rebal_in *in, clf__rebal_out *out)
{
    memset(out, 0, sizeof *out);
    size_t np = in->nparts, units = in->units;
    if (np < 2 || np > CLF_MAX_LAUNCH_DEVICES || in->nsamples < CLF__REBAL_MIN_SAMPLES) {
        snprintf(out->why, sizeof out->why, np < 2 ? "one part: nothing to balance"
                                                   : "measuring: %zu of %d steps",
                 in->nsamples, CLF__REBAL_MIN_SAMPLES);
        return;
    }
    /* Each part's speed: the median of its samples (one spike moves nothing). */
    double sp[CLF_MAX_LAUNCH_DEVICES], col[64];
    size_t dev[CLF_MAX_LAUNCH_DEVICES], ns = in->nsamples < 64 ? in->nsamples : 64;
    unsigned char keep[CLF_MAX_LAUNCH_DEVICES];
    double cur = 0;
    for (size_t p = 0; p < np; p++) {
        for (size_t j = 0; j < ns; j++)
            col[j] = in->rate[j * np + p];
        sp[p] = clf__median(col, ns);
        dev[p] = in->device[p];
        if (!(sp[p] > 0) || !isfinite(sp[p])) {
            snprintf(out->why, sizeof out->why, "parts stay: no speed measured on device %zu",
                     dev[p]);
            return;
        }
        double t = (in->fixed ? in->fixed[p] : 0) + (double)in->count[p] / sp[p];
        cur = t > cur ? t : cur;
    }
    double bw = in->bw > 0 ? in->bw : CLF__REBAL_BW_GUESS;
    double c = clf__halo_cost(in->halo_before + in->halo_after, in->unit_bytes, bw);
    cur += c * (double)clf__boundaries(np, in->periodic);
    out->step_s = cur;

    /* The cut the speeds call for, in whole granules, without the devices that slow the
     * step down. */
    char why[sizeof out->why] = "";
    size_t halo = in->halo_before > in->halo_after ? in->halo_before : in->halo_after;
    size_t m = clf__balance_keep(sp, dev, np, units, halo, in->periodic, c, 1, keep, why,
                                 sizeof why);
    size_t g = in->granule ? in->granule : 1, k = 0;
    double w[CLF_MAX_LAUNCH_DEVICES], fx[CLF_MAX_LAUNCH_DEVICES], ssum = 0, sfix = 0;
    for (size_t p = 0; p < np; p++)
        if (keep[p]) {
            w[k] = sp[p];
            fx[k] = in->fixed && in->fixed[p] > 0 ? in->fixed[p] : 0;
            ssum += sp[p];
            sfix += sp[p] * fx[k];
            out->device[k] = dev[p];
            k++;
        }
    /* The common finish T; a device whose fixed cost alone passes it gets nothing (then
     * the cut leaves it 0 units, and the parts stay, below). */
    double T = ssum > 0 ? ((double)units + sfix) / ssum : 0, sh[CLF_MAX_LAUNCH_DEVICES] = {0};
    for (size_t i = 0; i < k; i++)
        sh[i] = w[i] * (T - fx[i]) > 0 ? w[i] * (T - fx[i]) : 0;
    clf__split_units(units / g, sh, k, out->count);
    double best = 0;
    for (size_t i = 0; i < k; i++) {
        out->count[i] *= g;
        if (i + 1 == k)
            out->count[i] += units % g; /* what does not fill a granule: the last part */
    }
    for (size_t i = 0; i < k; i++) {
        if (out->count[i] == 0 || out->count[i] < halo) {
            snprintf(out->why, sizeof out->why,
                     "parts stay: the cut by speed leaves device %zu %zu units (granules of "
                     "%zu, halo %zu)", out->device[i], out->count[i], g, halo);
            return;
        }
        double t = fx[i] + (double)out->count[i] / w[i];
        best = t > best ? t : best;
    }
    out->k = k;
    best += c * (double)clf__boundaries(m, in->periodic);
    out->best_s = best;
    out->moved_bytes = moved_units(in, out->device, out->count, k) * in->move_unit_bytes;
    out->cost_s = (double)out->moved_bytes / bw;
    double gain = cur - best;
    /* The steps the move pays over: as many as have run since the last move (or since the
     * arrays were made), the best guess of how many are still to come, at least
     * CLF__REBAL_HORIZON and at most CLF__REBAL_HORIZON_MAX. A fixed 10 steps never paid
     * for megabytes over a fast device's fraction of a millisecond a step: a 2048 x 2048
     * Jacobi on an H200 + CPU (about 0.2 ms a step against some 13 MB at 1 GB/s) kept
     * equal parts, the CPU's pace, for good. */
    size_t horizon = in->since < CLF__REBAL_HORIZON       ? CLF__REBAL_HORIZON
                     : in->since > CLF__REBAL_HORIZON_MAX ? CLF__REBAL_HORIZON_MAX
                                                          : in->since;
    if (in->migrations > 0 && in->since < CLF__REBAL_HORIZON)
        snprintf(out->why, sizeof out->why,
                 "parts stay: %zu steps since the last move (at least %d between moves)",
                 in->since, CLF__REBAL_HORIZON);
    else if (gain < CLF__REBAL_MIN_GAIN * cur)
        snprintf(out->why, sizeof out->why,
                 "parts stay: step %.3g ms now, %.3g ms by the measured speeds (less than "
                 "%.0f %% shorter)", cur * 1e3, best * 1e3, CLF__REBAL_MIN_GAIN * 100);
    else if (gain * (double)horizon <= out->cost_s)
        snprintf(out->why, sizeof out->why,
                 "parts stay: %zu steps would gain %.3g ms, moving %zu bytes costs %.3g ms",
                 horizon, gain * (double)horizon * 1e3, out->moved_bytes, out->cost_s * 1e3);
    else {
        char cut[160] = "";
        for (size_t i = 0, u = 0; i < k && u + 40 < sizeof cut; i++)
            u += (size_t)snprintf(cut + u, sizeof cut - u, "%s%zu on device %zu",
                                  i ? ", " : "", out->count[i], out->device[i]);
        snprintf(out->why, sizeof out->why,
                 "move to %s: step %.3g ms predicted (now %.3g ms), %zu bytes to move%s%s",
                 cut, best * 1e3, cur * 1e3, out->moved_bytes, why[0] ? "; " : "", why);
        out->move = 1;
    }
}

/*
 * CLF_ARRAY_REBALANCE: the moves of a distributed array's parts between launches when the
 * measured speeds say they pay. Which devices get a part (clf__balance_keep()) and the
 * release of the measurements are in array.c, which creation needs too.
 *
 * Where the speeds come from: the profiling events of the part kernels of each
 * clf_array_launch() (start to end, summed over a part's strips and interior), read once
 * they have completed, never waited for: a launch hands its events to the arrays
 * (clf__rebal_step_done()), and the next launch over them collects those that are done.
 * Device time, not host wall time, because a part's host-side wall time includes the
 * waits for the other parts and the halo copies (all parts are queued at once and
 * ordered by events), which would make every device look as slow as the slowest. The
 * simulator (CLFLEET_SIMULATE) reports its simulated times through the same profiling
 * query (observe's clf__event_profile()).
 *
 * The decision: each part's speed is the median of its last CLF__REBAL_WINDOW steps (one
 * spike moves nothing); the predicted step of a cut is its slowest part's units over its
 * speed, plus clf__halo_cost() per part boundary. The arrays move when the cut the speeds
 * call for predicts a step CLF__REBAL_MIN_GAIN shorter and CLF__REBAL_HORIZON steps of the
 * gain exceed the predicted cost of the move; never within CLF__REBAL_HORIZON launches of
 * the last move, never before CLF__REBAL_MIN_SAMPLES steps are measured on the new cut.
 */
#include "data.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- measurements ---------------------------------------------------------------------- */

void clf__rebal_step_init(clf__rebal_step *r, const clf_array *layout, const char *kernel)
{
    memset(r, 0, sizeof *r);
    snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
    r->count = malloc(layout->nparts * sizeof *r->count);
    r->ev = calloc(layout->nparts * CLF__REBAL_KPP, sizeof *r->ev);
    if (!r->count || !r->ev) {
        free(r->count);
        free(r->ev);
        r->count = NULL;
        r->ev = NULL;
        return;
    }
    r->nparts = layout->nparts;
    for (size_t p = 0; p < r->nparts; p++)
        r->count[p] = layout->parts[p].count;
}

void clf__rebal_step_add(clf__rebal_step *r, size_t p, clf_event *ev)
{
    if (!r->count || !ev || p >= r->nparts)
        return;
    for (size_t i = 0; i < CLF__REBAL_KPP; i++)
        if (!r->ev[p * CLF__REBAL_KPP + i]) {
            clf__event_hold(ev);
            r->ev[p * CLF__REBAL_KPP + i] = ev;
            return;
        }
}

/* A copy of r holding its own references, or a zeroed one out of memory. */
static clf__rebal_step step_copy(const clf__rebal_step *r)
{
    clf__rebal_step c;
    memset(&c, 0, sizeof c);
    memcpy(c.kernel, r->kernel, sizeof c.kernel);
    c.count = malloc(r->nparts * sizeof *c.count);
    c.ev = calloc(r->nparts * CLF__REBAL_KPP, sizeof *c.ev);
    if (!c.count || !c.ev) {
        free(c.count);
        free(c.ev);
        c.count = NULL;
        c.ev = NULL;
        return c;
    }
    c.nparts = r->nparts;
    memcpy(c.count, r->count, r->nparts * sizeof *c.count);
    for (size_t i = 0; i < r->nparts * CLF__REBAL_KPP; i++) {
        c.ev[i] = r->ev[i];
        if (c.ev[i])
            clf__event_hold(c.ev[i]);
    }
    return c;
}

static struct clf__rebal *state(clf_array *a)
{
    if (!a->rebal)
        a->rebal = calloc(1, sizeof *a->rebal);
    return a->rebal;
}

void clf__rebal_step_done(clf__rebal_step *r, const clf_arg *args, size_t nargs)
{
    for (size_t i = 0; r->count && i < nargs; i++) {
        const clf_arg *g = &args[i];
        clf_array *a = g->kind == CLF_ARG_KIND_ARRAY ? g->host : NULL;
        if (!a || a->desc.dist != CLF_ARRAY_BLOCK || !(a->desc.flags & CLF_ARRAY_REBALANCE))
            continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= args[j].kind == CLF_ARG_KIND_ARRAY && args[j].host == a;
        struct clf__rebal *R = seen ? NULL : state(a);
        if (!R)
            continue;
        R->since++;
        if (R->npend == CLF__REBAL_PENDING) { /* the oldest never completed in time: forgotten */
            clf__rebal_step_free(&R->pend[0]);
            memmove(&R->pend[0], &R->pend[1], (CLF__REBAL_PENDING - 1) * sizeof R->pend[0]);
            R->npend--;
        }
        R->pend[R->npend] = step_copy(r);
        if (R->pend[R->npend].count)
            R->npend++;
    }
    clf__rebal_step_free(r);
}

/* Seconds part p of step r ran (its kernels' start to end, summed); 1 when every one of
 * them has completed and was timed, 0 when some has not completed yet, -1 when it cannot
 * be timed (failed, not an OpenCL event). */
static int part_seconds(const clf__rebal_step *r, size_t p, double *sec)
{
    *sec = 0;
    int any = 0;
    for (size_t i = 0; i < CLF__REBAL_KPP; i++) {
        clf_event *e = r->ev[p * CLF__REBAL_KPP + i];
        if (!e)
            continue;
        if (!e->ev)
            return -1;
        cl_int s = clf__cl_event_status(e->ev);
        if (s < 0)
            return -1;
        if (s != CL_COMPLETE)
            return 0;
        uint64_t t0, t1;
        if (!clf__event_profile(e->ev, &t0, &t1))
            return -1;
        *sec += (double)(t1 - t0) * 1e-9;
        any = 1;
    }
    return any ? 1 : -1;
}

/* Move the completed launches of kernel over a's current cut into its samples. */
static void harvest(clf_array *a, const char *kernel)
{
    struct clf__rebal *R = a->rebal;
    if (!R)
        return;
    if (strncmp(R->kernel, kernel, sizeof R->kernel - 1) != 0 || R->nparts != a->nparts) {
        /* Another kernel's speeds, or another cut's: start over. */
        free(R->rate);
        R->rate = NULL;
        R->nsamples = R->head = 0;
        snprintf(R->kernel, sizeof R->kernel, "%s", kernel);
        R->nparts = a->nparts;
    }
    if (!R->rate && !(R->rate = calloc(CLF__REBAL_WINDOW * a->nparts, sizeof *R->rate)))
        return;
    while (R->npend) {
        clf__rebal_step *r = &R->pend[0];
        int same = r->nparts == a->nparts && strcmp(r->kernel, R->kernel) == 0;
        for (size_t p = 0; same && p < a->nparts; p++)
            same = r->count[p] == a->parts[p].count;
        double *row = &R->rate[R->head * a->nparts];
        int ok = same;
        for (size_t p = 0; ok == 1 && p < a->nparts; p++) {
            double sec;
            ok = part_seconds(r, p, &sec);
            if (ok == 1 && sec > 0)
                row[p] = (double)r->count[p] / sec;
            else if (ok == 1)
                ok = -1;
        }
        if (ok == 0)
            break; /* not done yet; the later ones are not either, mostly */
        if (ok == 1) {
            R->head = (R->head + 1) % CLF__REBAL_WINDOW;
            if (R->nsamples < CLF__REBAL_WINDOW)
                R->nsamples++;
            a->bal.samples++;
        }
        clf__rebal_step_free(r);
        memmove(&R->pend[0], &R->pend[1], (R->npend - 1) * sizeof R->pend[0]);
        R->npend--;
        memset(&R->pend[R->npend], 0, sizeof R->pend[0]);
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* ---- the decision ---------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Units of old cut a that change device in new cut (dev[i] holds cnt[i] units, in order). */
static size_t moved_units(const clf_array *a, const size_t *dev, const size_t *cnt, size_t k)
{
    size_t moved = 0, first = 0;
    for (size_t i = 0; i < k; i++) {
        size_t stay = 0;
        for (size_t p = 0; p < a->nparts; p++) {
            size_t s, e;
            if (a->parts[p].device == dev[i] &&
                clf__clip(first, first + cnt[i], a->parts[p].first,
                          a->parts[p].first + a->parts[p].count, &s, &e))
                stay += e - s;
        }
        moved += cnt[i] - stay;
        first += cnt[i];
    }
    return moved;
}

static void say(clf_array *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(clf_array *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->bal.why, sizeof a->bal.why, fmt, ap);
    va_end(ap);
    clf__log(CLF_LOG_DEBUG, "CLF_ARRAY_REBALANCE: %s", a->bal.why);
}

clf_status clf__rebal_before(clf_array *a, const char *kernel, const clf_arg *args,
                             size_t nargs, size_t granule, int *moved)
{
    *moved = 0;
    if (a->desc.dist != CLF_ARRAY_BLOCK || !(a->desc.flags & CLF_ARRAY_REBALANCE))
        return CLF_SUCCESS;
    for (size_t i = 0; i < nargs; i++) {
        clf_array *b = args[i].kind == CLF_ARG_KIND_ARRAY ? args[i].host : NULL;
        if (b && b->desc.dist == CLF_ARRAY_BLOCK && (b->desc.flags & CLF_ARRAY_REBALANCE))
            harvest(b, kernel);
    }
    struct clf__rebal *R = a->rebal;
    if (!R || !R->rate || a->nparts < 2)
        return CLF_SUCCESS;
    size_t np = a->nparts, units = a->units;
    if (R->nsamples < CLF__REBAL_MIN_SAMPLES)
        return CLF_SUCCESS;

    /* Each part's speed: the median of its last samples. */
    double sp[CLF_MAX_LAUNCH_DEVICES], col[CLF__REBAL_WINDOW];
    size_t dev[CLF_MAX_LAUNCH_DEVICES], cnt[CLF_MAX_LAUNCH_DEVICES];
    unsigned char keep[CLF_MAX_LAUNCH_DEVICES];
    if (np > CLF_MAX_LAUNCH_DEVICES)
        return CLF_SUCCESS;
    double cur = 0;
    for (size_t p = 0; p < np; p++) {
        for (size_t j = 0; j < R->nsamples; j++)
            col[j] = R->rate[j * np + p];
        qsort(col, R->nsamples, sizeof *col, cmp_double);
        size_t h = R->nsamples / 2;
        sp[p] = R->nsamples % 2 ? col[h] : (col[h - 1] + col[h]) / 2;
        dev[p] = a->parts[p].device;
        double t = (double)a->parts[p].count / sp[p];
        cur = t > cur ? t : cur;
    }
    int periodic = (a->desc.flags & CLF_ARRAY_PERIODIC) != 0;
    double c = clf__halo_cost(a->desc.halo_before + a->desc.halo_after, a->unit_bytes,
                              R->bw > 0 ? R->bw : CLF__REBAL_BW_GUESS);
    cur += c * (double)clf__boundaries(np, periodic);

    /* The cut the speeds call for, in whole work-groups (the launch's local size). */
    char why[sizeof a->bal.why] = "";
    size_t halo = a->desc.halo_before > a->desc.halo_after ? a->desc.halo_before
                                                           : a->desc.halo_after;
    size_t m = clf__balance_keep(sp, dev, np, units, halo, periodic, c, 1, keep, why,
                                 sizeof why);
    double w[CLF_MAX_LAUNCH_DEVICES], sum = 0;
    size_t g = granule ? granule : 1, k = 0;
    for (size_t p = 0; p < np; p++)
        if (keep[p]) {
            w[k] = sp[p];
            dev[k] = dev[p];
            sp[k] = sp[p];
            sum += sp[p];
            k++;
        }
    clf__split_units(units / g, w, k, cnt);
    double best = 0;
    for (size_t i = 0; i < k; i++) {
        cnt[i] *= g;
        if (i + 1 == k)
            cnt[i] += units % g; /* what does not fill a work-group: the last part */
    }
    for (size_t i = 0; i < k; i++) {
        if (cnt[i] == 0 || cnt[i] < halo) { /* rounding to work-groups left it too thin */
            say(a, "parts stay: the cut by speed leaves device %zu %zu units (work-groups "
                "of %zu, halo %zu)", dev[i], cnt[i], g, halo);
            return CLF_SUCCESS;
        }
        double t = (double)cnt[i] / sp[i];
        best = t > best ? t : best;
    }
    best += c * (double)clf__boundaries(m, periodic);
    a->bal.step_s = cur;
    a->bal.best_s = best;

    /* What moving costs: the bytes that change device, of every block array. */
    size_t bytes = 0, narr = 0;
    int all_flagged = 1;
    clf_array *arrs[CLF__MAX_ARGS];
    for (size_t i = 0; i < nargs; i++) {
        clf_array *b = args[i].kind == CLF_ARG_KIND_ARRAY ? args[i].host : NULL;
        if (!b || b->desc.dist != CLF_ARRAY_BLOCK)
            continue;
        int seen = 0;
        for (size_t j = 0; j < narr; j++)
            seen |= arrs[j] == b;
        if (seen)
            continue;
        all_flagged &= (b->desc.flags & CLF_ARRAY_REBALANCE) != 0;
        arrs[narr++] = b;
        bytes += moved_units(b, dev, cnt, k) * b->unit_bytes;
    }
    double bw = R->bw > 0 ? R->bw : CLF__REBAL_BW_GUESS;
    double cost = (double)bytes / bw;
    double gain = cur - best;
    if (R->since < CLF__REBAL_HORIZON && a->bal.migrations > 0) {
        say(a, "parts stay: %zu launches since the last move (at least %d between moves)",
            R->since, CLF__REBAL_HORIZON);
        return CLF_SUCCESS;
    }
    if (gain < CLF__REBAL_MIN_GAIN * cur) {
        say(a, "parts stay: step %.3g ms now, %.3g ms by the measured speeds (less than "
            "%.0f %% shorter)", cur * 1e3, best * 1e3, CLF__REBAL_MIN_GAIN * 100);
        return CLF_SUCCESS;
    }
    if (gain * CLF__REBAL_HORIZON <= cost) {
        say(a, "parts stay: %d steps would gain %.3g ms, moving %zu bytes costs %.3g ms",
            CLF__REBAL_HORIZON, gain * CLF__REBAL_HORIZON * 1e3, bytes, cost * 1e3);
        return CLF_SUCCESS;
    }
    if (!all_flagged) {
        say(a, "parts stay: a block array of kernel '%s' lacks CLF_ARRAY_REBALANCE (the "
            "arrays of a launch move together)", kernel);
        return CLF_SUCCESS;
    }

    /* Move every block array of the launch to the new cut (weights that are the counts
     * give exactly them: units * cnt / units). The old cut is kept to go back to. */
    double wc[CLF_MAX_LAUNCH_DEVICES], ow[CLF_MAX_LAUNCH_DEVICES];
    size_t od[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < k; i++)
        wc[i] = (double)cnt[i];
    for (size_t p = 0; p < np; p++) {
        ow[p] = (double)a->parts[p].count;
        od[p] = a->parts[p].device;
    }
    double t0 = now_s();
    size_t done = 0;
    clf_status st = CLF_SUCCESS;
    for (; done < narr && st == CLF_SUCCESS; done++) {
        clf_array_desc d = arrs[done]->desc;
        d.weights_mode = CLF_WEIGHTS_USER;
        d.weights = wc;
        d.devices = dev;
        d.num_devices = k;
        size_t migrations = arrs[done]->bal.migrations;
        st = clf_array_redistribute(arrs[done], &d);
        if (st != CLF_SUCCESS)
            break;
        arrs[done]->bal.migrations = migrations + 1;
    }
    double wall = now_s() - t0;
    if (st != CLF_SUCCESS) {
        /* The arrays moved so far must go back, or the launch's arrays are cut unlike. */
        char detail[512];
        snprintf(detail, sizeof detail, "%s", clf_last_error());
        for (size_t j = 0; j < done; j++) {
            clf_array_desc d = arrs[j]->desc;
            d.weights_mode = CLF_WEIGHTS_USER;
            d.weights = ow;
            d.devices = od;
            d.num_devices = np;
            if (clf_array_redistribute(arrs[j], &d) == CLF_SUCCESS)
                arrs[j]->bal.migrations--;
        }
        return clf__fail(st, "clf_array_launch: moving the parts of kernel '%s' by the "
                         "measured speeds: %s", kernel, detail);
    }
    for (size_t j = 0; j < narr; j++) {
        struct clf__rebal *S = state(arrs[j]);
        if (S && bytes && wall > 0)
            S->bw = (double)bytes / wall;
        if (S)
            S->since = 0;
        arrs[j]->bal.step_s = cur;
        arrs[j]->bal.best_s = best;
    }
    char cut[160] = "";
    for (size_t i = 0, u = 0; i < k && u + 24 < sizeof cut; i++)
        u += (size_t)snprintf(cut + u, sizeof cut - u, "%s%zu on device %zu", i ? ", " : "",
                              cnt[i], dev[i]);
    for (size_t j = 0; j < narr; j++)
        say(arrs[j], "moved to %s: step %.3g ms predicted (was %.3g ms), %zu bytes in %.3g ms%s%s",
            cut, best * 1e3, cur * 1e3, bytes, wall * 1e3, why[0] ? "; " : "", why);
    clf__log(CLF_LOG_INFO, "clf_array_launch: kernel '%s': %s", kernel, a->bal.why);
    *moved = 1;
    return CLF_SUCCESS;
}

/*
 * CLF_ARRAY_REBALANCE: the moves of a distributed array's parts between launches when the
 * measured speeds say they pay. This file measures and moves; the decision itself is pure
 * (plan/rebalplan.c, tested with made-up speeds), and the release of the measurements is
 * in array.c, which the array's end needs.
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
 * The samples: the last CLF__REBAL_WINDOW steps of each kernel (up to CLF__REBAL_KERNELS of
 * them) on the current cut (a new cut starts them over); the decision before a launch
 * (clf__rebal_plan()) takes each kernel's median per part (one spike moves nothing) and
 * combines the kernels as if each ran once per step. A move is clf_array_redistribute() of
 * every block array of the launch; its bytes over its wall time become the bandwidth the
 * next decision prices a move with.
 */
#include "data.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Whether array b is balanced in this launch: a block array (not a window, whose cut is
 * the larger array's) with CLF_ARRAY_REBALANCE, or any such block array when the launch's
 * strategy balances (force: clf_array_launch_desc.strategy other than static). */
static int balanced(const clf_array *b, int force)
{
    return b->desc.dist == CLF_ARRAY_BLOCK && !b->desc.window_units &&
           (force || (b->desc.flags & CLF_ARRAY_REBALANCE));
}

/* ---- measurements ---------------------------------------------------------------------- */

void clf__rebal_step_init(clf__rebal_step *r, const clf_array *layout, const char *kernel)
{
    memset(r, 0, sizeof *r);
    snprintf(r->kernel, sizeof r->kernel, "%s", kernel);
    /* count holds nparts counts, then nparts x CLF__REBAL_KPP kernel units (r->units). */
    r->count = calloc(layout->nparts * (1 + CLF__REBAL_KPP), sizeof *r->count);
    r->ev = calloc(layout->nparts * CLF__REBAL_KPP, sizeof *r->ev);
    if (!r->count || !r->ev) {
        free(r->count);
        free(r->ev);
        r->count = NULL;
        r->ev = NULL;
        return;
    }
    r->nparts = layout->nparts;
    r->units = r->count + r->nparts;
    for (size_t p = 0; p < r->nparts; p++)
        r->count[p] = layout->parts[p].count;
}

void clf__rebal_step_add(clf__rebal_step *r, size_t p, clf_event *ev, size_t units)
{
    if (!r->count || !ev || p >= r->nparts)
        return;
    for (size_t i = 0; i < CLF__REBAL_KPP; i++)
        if (!r->ev[p * CLF__REBAL_KPP + i]) {
            clf__event_hold(ev);
            r->ev[p * CLF__REBAL_KPP + i] = ev;
            r->units[p * CLF__REBAL_KPP + i] = units;
            return;
        }
}

/* A copy of r holding its own references, or a zeroed one out of memory. */
static clf__rebal_step step_copy(const clf__rebal_step *r)
{
    clf__rebal_step c;
    memset(&c, 0, sizeof c);
    memcpy(c.kernel, r->kernel, sizeof c.kernel);
    c.count = malloc(r->nparts * (1 + CLF__REBAL_KPP) * sizeof *c.count);
    c.ev = calloc(r->nparts * CLF__REBAL_KPP, sizeof *c.ev);
    if (!c.count || !c.ev) {
        free(c.count);
        free(c.ev);
        c.count = NULL;
        c.ev = NULL;
        return c;
    }
    c.nparts = r->nparts;
    memcpy(c.count, r->count, r->nparts * (1 + CLF__REBAL_KPP) * sizeof *c.count);
    c.units = c.count + c.nparts;
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

void clf__rebal_step_done(clf__rebal_step *r, const clf_arg *args, size_t nargs, int force)
{
    for (size_t i = 0; r->count && i < nargs; i++) {
        const clf_arg *g = &args[i];
        clf_array *a = g->kind == CLF_ARG_KIND_ARRAY ? g->host : NULL;
        if (!a || !balanced(a, force))
            continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            seen |= args[j].kind == CLF_ARG_KIND_ARRAY && args[j].host == a;
        struct clf__rebal *R = seen ? NULL : state(a);
        if (!R)
            continue;
        /* Steps, not launches: a step of two kernels counts once (the cool-down is in
         * steps). The first kernel launched after a move stands for the step. */
        if (!R->step_kernel[0])
            snprintf(R->step_kernel, sizeof R->step_kernel, "%s", r->kernel);
        if (strcmp(R->step_kernel, r->kernel) == 0)
            R->since++;
        /* A host that runs ahead of the devices: the launches already waiting are measured
         * when they complete, this one is not (dropping the oldest instead would drop the
         * ones about to complete, again and again, and never measure anything). */
        if (R->npend == CLF__REBAL_PENDING)
            continue;
        R->pend[R->npend] = step_copy(r);
        if (R->pend[R->npend].count)
            R->npend++;
    }
    clf__rebal_step_free(r);
}

/* Seconds part p of step r ran (its kernels' start to end, summed), and the units and
 * seconds of its largest kernel; 1 when every one of them has completed and was timed, 0
 * when some has not completed yet, -1 when it cannot be timed (failed, not an OpenCL
 * event). */
static int part_seconds(const clf__rebal_step *r, size_t p, double *sec, size_t *big_u,
                        double *big_s)
{
    *sec = 0;
    *big_u = 0;
    *big_s = 0;
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
        double d = (double)(t1 - t0) * 1e-9;
        *sec += d;
        if (r->units[p * CLF__REBAL_KPP + i] > *big_u) {
            *big_u = r->units[p * CLF__REBAL_KPP + i];
            *big_s = d;
        }
        any = 1;
    }
    return any ? 1 : -1;
}

/* The samples of kernel in R: its slot, or a new one (a free slot, else the one measured
 * longest ago) when create; NULL when none, or out of memory. */
static clf__rebal_kernel *kernel_slot(struct clf__rebal *R, const char *kernel, int create)
{
    clf__rebal_kernel *old = &R->k[0];
    for (size_t i = 0; i < CLF__REBAL_KERNELS; i++) {
        clf__rebal_kernel *k = &R->k[i];
        if (k->kernel[0] && strcmp(k->kernel, kernel) == 0)
            return k;
        if (!k->kernel[0] || (old->kernel[0] && k->used < old->used))
            old = k;
    }
    if (!create)
        return NULL;
    /* Rates, then as many fixed costs (seconds per step, see harvest()). */
    double *rate = calloc(2 * CLF__REBAL_WINDOW * R->nparts, sizeof *rate);
    if (!rate)
        return NULL;
    free(old->rate);
    memset(old, 0, sizeof *old);
    snprintf(old->kernel, sizeof old->kernel, "%s", kernel);
    old->rate = rate;
    return old;
}

/* Move the completed launches over a's current cut into their kernels' samples. */
static void harvest(clf_array *a)
{
    struct clf__rebal *R = a->rebal;
    if (!R)
        return;
    if (R->nparts != a->nparts) { /* another cut's speeds (not moved by us): start over */
        for (size_t i = 0; i < CLF__REBAL_KERNELS; i++)
            free(R->k[i].rate);
        memset(R->k, 0, sizeof R->k);
        R->nparts = a->nparts;
    }
    while (R->npend) {
        clf__rebal_step *r = &R->pend[0];
        int same = r->nparts == a->nparts;
        for (size_t p = 0; same && p < a->nparts; p++)
            same = r->count[p] == a->parts[p].count;
        int ok = same ? 1 : -1; /* another cut's: dropped */
        double sec[CLF_MAX_LAUNCH_DEVICES], big_s[CLF_MAX_LAUNCH_DEVICES];
        size_t big_u[CLF_MAX_LAUNCH_DEVICES];
        if (a->nparts > CLF_MAX_LAUNCH_DEVICES)
            ok = -1;
        for (size_t p = 0; ok == 1 && p < a->nparts; p++) {
            ok = part_seconds(r, p, &sec[p], &big_u[p], &big_s[p]);
            if (ok == 1 && !(sec[p] > 0))
                ok = -1;
        }
        if (ok == 0)
            break; /* not done yet; the later ones are not either, mostly */
        clf__rebal_kernel *k = ok == 1 ? kernel_slot(R, r->kernel, 1) : NULL;
        if (k) {
            /* A part that ran several kernels (the boundary strips and the interior of
             * CLF_ARRAY_EXCHANGE_AFTER): its speed is its largest kernel's, and the rest of
             * its time, beyond its units at that speed, a fixed cost per step (each kernel's
             * launch, and a simulated device's completion round trip), which moving units
             * does not change. Taking the whole time as proportional to the units would
             * move units off a device for a cost that stays with it, step after step. */
            double *row = &k->rate[k->head * a->nparts];
            double *fix = &k->rate[(CLF__REBAL_WINDOW + k->head) * a->nparts];
            for (size_t p = 0; p < a->nparts; p++) {
                double sp = (double)r->count[p] / sec[p], f = 0;
                if (big_u[p] < r->count[p] && big_u[p] > 0 && big_s[p] > 0) {
                    double bs = (double)big_u[p] / big_s[p];
                    f = sec[p] - (double)r->count[p] / bs;
                    if (f > 0)
                        sp = bs;
                    else
                        f = 0;
                }
                row[p] = sp;
                fix[p] = f;
            }
            k->head = (k->head + 1) % CLF__REBAL_WINDOW;
            if (k->nsamples < CLF__REBAL_WINDOW)
                k->nsamples++;
            k->used = ++R->steps;
            a->bal.samples++;
        }
        clf__rebal_step_free(r);
        memmove(&R->pend[0], &R->pend[1], (R->npend - 1) * sizeof R->pend[0]);
        R->npend--;
        memset(&R->pend[R->npend], 0, sizeof R->pend[0]);
    }
}

/* ---- the decision ---------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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

clf_status clf__rebal_align(clf_fleet *fleet, const clf_arg *args, size_t nargs, int force)
{
    clf_array *lay = NULL;
    for (size_t i = 0; i < nargs && !lay; i++) {
        clf_array *b = args[i].kind == CLF_ARG_KIND_ARRAY ? args[i].host : NULL;
        if (b && b->desc.dist != CLF_ARRAY_REPLICATED)
            lay = b;
    }
    if (!lay || lay->fleet != fleet || !balanced(lay, force) ||
        lay->nparts > CLF_MAX_LAUNCH_DEVICES)
        return CLF_SUCCESS;
    size_t dev[CLF_MAX_LAUNCH_DEVICES];
    double w[CLF_MAX_LAUNCH_DEVICES];
    for (size_t p = 0; p < lay->nparts; p++) {
        dev[p] = lay->parts[p].device;
        w[p] = (double)lay->parts[p].count; /* weights that are the counts give them */
    }
    for (size_t i = 0; i < nargs; i++) {
        clf_array *b = args[i].kind == CLF_ARG_KIND_ARRAY ? args[i].host : NULL;
        if (!b || b == lay || !balanced(b, force) || b->fleet != lay->fleet ||
            b->units != lay->units || b->mapped)
            continue; /* the launch's checks say what is wrong with it, if anything */
        /* Without the flag on both, only a cut that a move left behind is followed: arrays
         * the caller cut apart on purpose stay so, and the checks refuse them. */
        if (!((lay->desc.flags & b->desc.flags) & CLF_ARRAY_REBALANCE) && !lay->bal.migrations &&
            !b->bal.migrations)
            continue;
        int same = b->nparts == lay->nparts;
        for (size_t p = 0; same && p < b->nparts; p++)
            same = b->parts[p].device == dev[p] && b->parts[p].count == lay->parts[p].count;
        if (same)
            continue;
        clf_array_desc d = b->desc;
        d.weights_mode = CLF_WEIGHTS_USER;
        d.weights = w;
        d.devices = dev;
        d.num_devices = lay->nparts;
        size_t migrations = b->bal.migrations;
        clf_status st = clf_array_redistribute(b, &d);
        if (st != CLF_SUCCESS)
            return st;
        b->bal.migrations = migrations + 1;
        say(b, "moved to the cut of the array it was launched with (argument %zu)", i);
    }
    return CLF_SUCCESS;
}

/* Move the n arrays to the cut dev[0..k-1] holding cnt[] units (weights that are the counts
 * give exactly them: units * cnt / units); on failure, those moved go back to the cut
 * odev/ocnt (np parts), so that they stay cut alike, and the failure is returned. *wall:
 * the seconds it took. */
static clf_status move_all(clf_array **arrs, size_t n, const size_t *dev, const size_t *cnt,
                           size_t k, const size_t *odev, const size_t *ocnt, size_t np,
                           double *wall)
{
    double w[CLF_MAX_LAUNCH_DEVICES], ow[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < k; i++)
        w[i] = (double)cnt[i];
    for (size_t p = 0; p < np; p++)
        ow[p] = (double)ocnt[p];
    double t0 = now_s();
    size_t done = 0;
    clf_status st = CLF_SUCCESS;
    for (; done < n; done++) {
        clf_array_desc d = arrs[done]->desc;
        d.weights_mode = CLF_WEIGHTS_USER;
        d.weights = w;
        d.devices = dev;
        d.num_devices = k;
        if ((st = clf_array_redistribute(arrs[done], &d)) != CLF_SUCCESS)
            break;
    }
    *wall = now_s() - t0;
    if (st == CLF_SUCCESS)
        return CLF_SUCCESS;
    char detail[512];
    snprintf(detail, sizeof detail, "%s", clf_last_error());
    for (size_t j = 0; j < done; j++) {
        clf_array_desc d = arrs[j]->desc;
        d.weights_mode = CLF_WEIGHTS_USER;
        d.weights = ow;
        d.devices = odev;
        d.num_devices = np;
        clf_array_redistribute(arrs[j], &d);
    }
    return clf__fail(st, "%s", detail);
}

clf_status clf__rebal_before(clf_array *a, const char *kernel, const clf_arg *args,
                             size_t nargs, size_t granule, int force, int *moved)
{
    *moved = 0;
    if (!balanced(a, force))
        return CLF_SUCCESS;
    /* The block arrays of the launch: they move together, to stay cut alike. */
    clf_array *arrs[CLF__MAX_ARGS];
    size_t narr = 0, move_ub = 0;
    int all_flagged = 1;
    for (size_t i = 0; i < nargs; i++) {
        clf_array *b = args[i].kind == CLF_ARG_KIND_ARRAY ? args[i].host : NULL;
        if (!b || b->desc.dist != CLF_ARRAY_BLOCK)
            continue;
        int seen = 0;
        for (size_t j = 0; j < narr; j++)
            seen |= arrs[j] == b;
        if (seen)
            continue;
        arrs[narr++] = b;
        move_ub += b->unit_bytes;
        all_flagged &= balanced(b, force);
        if (balanced(b, force))
            harvest(b);
    }
    struct clf__rebal *R = a->rebal;
    size_t np = a->nparts;
    clf__rebal_kernel *ks = R ? kernel_slot(R, kernel, 0) : NULL;
    if (!ks || np < 2 || np > CLF_MAX_LAUNCH_DEVICES || ks->nsamples < CLF__REBAL_MIN_SAMPLES)
        return CLF_SUCCESS;

    size_t od[CLF_MAX_LAUNCH_DEVICES], oc[CLF_MAX_LAUNCH_DEVICES];
    for (size_t p = 0; p < np; p++) {
        od[p] = a->parts[p].device;
        oc[p] = a->parts[p].count;
    }
    /* A step may run several kernels over the arrays (a stencil and a residual): the
     * speeds of every kernel measured enough on this cut are combined as if each ran once
     * per step (a part's seconds per unit summed), so that they do not pull the cut their
     * own ways. The planner takes rows of samples: the combined speeds, as many rows as it
     * needs (their median is themselves). */
    double comb[CLF__REBAL_MIN_SAMPLES][CLF_MAX_LAUNCH_DEVICES], col[CLF__REBAL_WINDOW];
    double fixed[CLF_MAX_LAUNCH_DEVICES];
    for (size_t p = 0; p < np; p++) {
        double spu = 0; /* seconds per unit */
        fixed[p] = 0;
        for (size_t i = 0; i < CLF__REBAL_KERNELS; i++) {
            const clf__rebal_kernel *k = &R->k[i];
            if (!k->kernel[0] || k->nsamples < CLF__REBAL_MIN_SAMPLES)
                continue;
            for (size_t j = 0; j < k->nsamples; j++)
                col[j] = k->rate[j * np + p];
            spu += 1 / clf__median(col, k->nsamples);
            for (size_t j = 0; j < k->nsamples; j++)
                col[j] = k->rate[(CLF__REBAL_WINDOW + j) * np + p];
            fixed[p] += clf__median(col, k->nsamples);
        }
        for (size_t j = 0; j < CLF__REBAL_MIN_SAMPLES; j++)
            comb[j][p] = 1 / spu;
    }
    /* comb's rows are CLF_MAX_LAUNCH_DEVICES long: copied to rows of np for the planner. */
    double rows[CLF__REBAL_MIN_SAMPLES * CLF_MAX_LAUNCH_DEVICES];
    for (size_t j = 0; j < CLF__REBAL_MIN_SAMPLES; j++)
        memcpy(&rows[j * np], comb[j], np * sizeof *rows);
    clf__rebal_in in = {np, od, oc, rows, CLF__REBAL_MIN_SAMPLES, a->units, granule,
                        a->desc.halo_before, a->desc.halo_after,
                        (a->desc.flags & CLF_ARRAY_PERIODIC) != 0, a->unit_bytes, move_ub,
                        R->bw, R->since, a->bal.migrations, fixed};
    clf__rebal_out *out = malloc(sizeof *out);
    if (!out)
        return CLF_SUCCESS; /* no decision without memory; the launch goes on */
    clf__rebal_plan(&in, out);
    a->bal.step_s = out->step_s;
    a->bal.best_s = out->best_s;
    if (R->trial) {
        /* The last move, measured: back to the old cut if the step got longer. */
        double before = R->trial_step_s;
        for (size_t j = 0; j < narr; j++)
            if (arrs[j]->rebal)
                arrs[j]->rebal->trial = 0;
        if (out->step_s > before * (1 + CLF__REBAL_MIN_GAIN) && R->trial_k > 0) {
            size_t tk = R->trial_k, tdev[CLF_MAX_LAUNCH_DEVICES], tcnt[CLF_MAX_LAUNCH_DEVICES];
            memcpy(tdev, R->trial_dev, tk * sizeof *tdev);
            memcpy(tcnt, R->trial_cnt, tk * sizeof *tcnt);
            double wall;
            clf_status st = move_all(arrs, narr, tdev, tcnt, tk, od, oc, np, &wall);
            if (st != CLF_SUCCESS) {
                free(out);
                return clf__fail(st, "clf_array_launch: moving the parts of kernel '%.64s' "
                                 "back: %s", kernel, clf_last_error());
            }
            for (size_t j = 0; j < narr; j++) {
                struct clf__rebal *S = state(arrs[j]);
                if (S)
                    S->hold = 5 * CLF__REBAL_HORIZON;
                arrs[j]->bal.migrations++;
                say(arrs[j], "moved back: the step measured %.3g ms on the new parts, %.3g ms "
                    "before the move (devices that slow each other down?); no move for %d "
                    "steps", out->step_s * 1e3, before * 1e3, 5 * CLF__REBAL_HORIZON);
            }
            clf__log(CLF_LOG_INFO, "clf_array_launch: kernel '%s': %s", kernel, a->bal.why);
            free(out);
            *moved = 1;
            return CLF_SUCCESS;
        }
    }
    if (R->hold && R->since < R->hold) {
        out->move = 0;
        snprintf(out->why, sizeof out->why,
                 "parts stay: %zu steps since a move back (no move for %zu)", R->since,
                 R->hold);
    } else {
        R->hold = 0;
    }
    if (out->move && !all_flagged) {
        out->move = 0;
        snprintf(out->why, sizeof out->why,
                 "parts stay: a block array of kernel '%.64s' lacks CLF_ARRAY_REBALANCE or is "
                 "a window (the arrays of a launch move together)", kernel);
    }
    if (!out->move) {
        say(a, "%s", out->why);
        free(out);
        return CLF_SUCCESS;
    }

    /* Move every block array of the launch to the new cut; the old one is kept to go
     * back to. */
    double wall;
    clf_status st = move_all(arrs, narr, out->device, out->count, out->k, od, oc, np, &wall);
    if (st != CLF_SUCCESS) {
        free(out);
        return clf__fail(st, "clf_array_launch: moving the parts of kernel '%.64s' by the "
                         "measured speeds: %s", kernel, clf_last_error());
    }
    for (size_t j = 0; j < narr; j++) {
        clf_array *b = arrs[j];
        struct clf__rebal *S = state(b);
        if (S && out->moved_bytes && wall > 0)
            S->bw = (double)out->moved_bytes / wall;
        b->bal.migrations++;
        b->bal.step_s = out->step_s;
        b->bal.best_s = out->best_s;
        say(b, "%s (moved in %.3g ms)", out->why, wall * 1e3);
        if (S) { /* on trial until the new cut is measured */
            S->trial = 1;
            S->trial_step_s = out->step_s;
            S->trial_k = np;
            memcpy(S->trial_dev, od, np * sizeof *od);
            memcpy(S->trial_cnt, oc, np * sizeof *oc);
        }
    }
    clf__log(CLF_LOG_INFO, "clf_array_launch: kernel '%s': %s", kernel, a->bal.why);
    free(out);
    *moved = 1;
    return CLF_SUCCESS;
}

/*
 * Distributed arrays: the per-part dependency records (the events an access must wait for,
 * clf__array_deps/record) and lazy coherence with the host's mirror on the device side (a
 * part's device copy refreshed from the mirror before a device operation), and the event
 * lists (clf__evlist) that wait for a batch of commands together.
 */
#include "data.h"

#include <stdlib.h>
#include <string.h>

/* ---- dependency records -------------------------------------------------------------- */

/* Drop the records whose events completed successfully (failed ones stay for a waiter). */
static void prune(clf__array_part *q)
{
    size_t k = 0;
    for (size_t i = 0; i < q->nacc; i++) {
        if (clf__event_done(q->acc[i].ev))
            clf_event_release(q->acc[i].ev);
        else
            q->acc[k++] = q->acc[i];
    }
    q->nacc = k;
}

void clf__array_wait_free(clf_event **wait, size_t nwait)
{
    for (size_t i = 0; i < nwait; i++)
        clf_event_release(wait[i]);
    free(wait);
}

static clf_status wait_push(clf_event ***wait, size_t *nwait, clf_event *ev)
{
    for (size_t i = 0; i < *nwait; i++)
        if ((*wait)[i] == ev)
            return CLF_SUCCESS;
    clf_event **g = realloc(*wait, (*nwait + 1) * sizeof *g);
    if (!g)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_array: out of memory");
    clf__event_hold(ev);
    g[(*nwait)++] = ev;
    *wait = g;
    return CLF_SUCCESS;
}

/* The events an access of [lo, hi) must wait for, appended to *wait. */
static clf_status collect(clf__array_part *q, size_t lo, size_t hi, int writes,
                          clf_event ***wait, size_t *nwait)
{
    for (size_t i = 0; i < q->nacc; i++) {
        const clf__access *r = &q->acc[i];
        if (r->hi <= lo || r->lo >= hi || !(r->write || writes))
            continue;
        clf_status st = wait_push(wait, nwait, r->ev);
        if (st != CLF_SUCCESS)
            return st;
    }
    return CLF_SUCCESS;
}

clf_status clf__evlist_push(clf__evlist *l, clf_event *e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        clf_event **g = realloc(l->ev, cap * sizeof *g);
        if (!g) {
            clf_event_wait(e); /* queued: it must end before its buffers go */
            clf_event_release(e);
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_array: out of memory");
        }
        l->ev = g;
        l->cap = cap;
    }
    l->ev[l->n++] = e;
    return CLF_SUCCESS;
}

clf_status clf__evlist_finish(clf__evlist *l, clf_status st)
{
    for (size_t i = 0; i < l->n; i++) {
        clf_status s = clf_event_wait(l->ev[i]);
        if (st == CLF_SUCCESS)
            st = s;
        clf_event_release(l->ev[i]);
    }
    free(l->ev);
    memset(l, 0, sizeof *l);
    return st;
}

/* Wait for the accesses of part p's [lo, hi) that an access (writes or not) must follow. */
clf_status clf__wait_range(clf_array *a, size_t p, size_t lo, size_t hi, int writes)
{
    clf__evlist l = {0};
    prune(&a->parts[p]);
    clf_status st = collect(&a->parts[p], lo, hi, writes, &l.ev, &l.n);
    if (st != CLF_SUCCESS) {
        clf__array_wait_free(l.ev, l.n);
        return st;
    }
    l.cap = l.n;
    return clf__evlist_finish(&l, CLF_SUCCESS);
}

/* Blocking upload of region units [k, k + n) of part p from the mirror (global units g..). */
static clf_status upload_units(clf_array *a, size_t p, size_t k, size_t g, size_t n)
{
    clf__array_part *q = &a->parts[p];
    size_t lo = k * a->unit_bytes, size = n * a->unit_bytes;
    clf_status st = clf__wait_range(a, p, lo, lo + size, 1);
    if (st != CLF_SUCCESS)
        return st;
    struct clf__device *d = &a->fleet->dev[q->device];
    cl_event ev = NULL;
    clf__cmd c = CLF__CMD(a->fleet, q->device, d->transfer, "clf_array upload");
    c.ev = &ev;
    st = clf__cmd_write(&c, q->buf->mem, q->offset + lo, size,
                        (const char *)a->host + g * a->unit_bytes);
    if (st != CLF_SUCCESS)
        return st;
    clf_event *e = NULL;
    st = clf__event_wrap(ev, &e);
    if (st != CLF_SUCCESS)
        return st;
    st = clf_event_wait(e);
    clf_event_release(e);
    return st;
}

/* Make part p's device copy current where the host holds newer data. */
clf_status clf__refresh_device(clf_array *a, size_t p)
{
    clf__array_part *q = &a->parts[p];
    clf_status st;
    if (!(q->state & CLF__PART_DEV_VALID)) {
        st = upload_units(a, p, q->halo_before, q->first, q->count);
        if (st != CLF_SUCCESS)
            return st;
        q->state |= CLF__PART_DEV_VALID;
    }
    if (q->state & CLF__PART_HALO_HOST) {
        size_t k[4], g[4], n[4], nr = clf__part_runs(a, q, k, g, n);
        for (size_t r = 0; r < nr; r++) {
            /* The halo pieces of the run: before [0, hb) and after [hb + count, R). */
            size_t s0 = k[r], s1 = k[r] + n[r];
            size_t pieces[2][2] = {{0, q->halo_before},
                                   {q->halo_before + q->count, clf__region_units(q)}};
            for (int h = 0; h < 2; h++) {
                size_t lo, hi;
                if (!clf__clip(s0, s1, pieces[h][0], pieces[h][1], &lo, &hi))
                    continue;
                st = upload_units(a, p, lo, g[r] + (lo - s0), hi - lo);
                if (st != CLF_SUCCESS)
                    return st;
            }
        }
        q->state &= ~(unsigned)CLF__PART_HALO_HOST;
        q->state |= CLF__PART_HALO_VALID;
    }
    return CLF_SUCCESS;
}

/* Before a device operation on part p: p exists, the array is not mapped, and the device
 * copy is current (clf__refresh_device()). */
static clf_status part_ready(clf_array *a, size_t p)
{
    if (p >= a->nparts)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_array: part %zu of %zu", p, a->nparts);
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "clf_array: the array is mapped (clf_array_unmap())");
    return clf__refresh_device(a, p);
}

clf_status clf__array_ready(clf_array *a, size_t p, unsigned access)
{
    clf_status st = part_ready(a, p);
    if (st != CLF_SUCCESS)
        return st;
    return clf__wait_range(a, p, 0, clf__array_part_bytes(a, p), (access & CLF_ARG_WRITE) != 0);
}

clf_status clf__array_deps(clf_array *a, size_t p, size_t lo, size_t hi, unsigned access,
                           clf_event ***wait, size_t *nwait)
{
    if (!a || !wait || !nwait)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__array_deps: NULL argument");
    clf_status st = part_ready(a, p);
    if (st != CLF_SUCCESS)
        return st;
    prune(&a->parts[p]);
    return collect(&a->parts[p], lo, hi, (access & CLF_ARG_WRITE) != 0, wait, nwait);
}

/* The parts whose halo holds global units [g0, g1), which one part owns (block arrays; that
 * part itself when its periodic halo wraps onto its own units): their halo is stale. */
static void stale_neighbour_halos(clf_array *a, size_t g0, size_t g1)
{
    if (a->desc.dist != CLF_ARRAY_BLOCK)
        return;
    for (size_t j = 0; j < a->nparts; j++) {
        clf__array_part *q = &a->parts[j];
        if (!q->halo_before && !q->halo_after)
            continue;
        size_t k[4], g[4], n[4], nr = clf__part_runs(a, q, k, g, n);
        for (size_t r = 0; r < nr; r++) {
            size_t s, e;
            if (!clf__clip(g[r], g[r] + n[r], g0, g1, &s, &e))
                continue;
            size_t ks = k[r] + (s - g[r]), ke = ks + (e - s);
            /* Only halo units count: [0, hb) and [hb + count, R). */
            if (ks < q->halo_before || ke > q->halo_before + q->count)
                q->state &= ~(unsigned)CLF__PART_HALO_VALID;
        }
    }
}

/* Room for one more record; 0 when out of memory. */
static int grow(clf__array_part *q)
{
    if (q->nacc < q->cap)
        return 1;
    size_t cap = q->cap ? 2 * q->cap : 4;
    clf__access *g = realloc(q->acc, cap * sizeof *g);
    if (!g)
        return 0;
    q->acc = g;
    q->cap = cap;
    return 1;
}

/*
 * A write of [lo, hi) waited for every record overlapping it (clf__array_deps()), so there
 * it stands for them: each record loses its bytes inside [lo, hi), and goes when none are
 * left. Without this, the whole-region read records of launches queued far ahead of the
 * devices pile up (a strip or an interior write never covers one), and every later access
 * waits on all of them: the host's cost per step grows with the steps queued, and the
 * driver's with the wait lists. (Out of memory to split one: it stays whole, which only
 * makes later accesses wait longer.)
 */
static void supersede(clf__array_part *q, size_t lo, size_t hi)
{
    size_t n = q->nacc;
    for (size_t i = 0; i < n; i++) {
        clf__access *r = &q->acc[i];
        if (r->hi <= lo || r->lo >= hi)
            continue;
        if (r->lo < lo && r->hi > hi) { /* both sides stick out: split in two */
            if (!grow(q))
                continue;
            r = &q->acc[i];
            clf__event_hold(r->ev);
            q->acc[q->nacc++] = (clf__access){hi, r->hi, r->write, r->ev};
            r->hi = lo;
        } else if (r->lo < lo) {
            r->hi = lo;
        } else if (r->hi > hi) {
            r->lo = hi;
        } else {
            clf_event_release(r->ev);
            r->ev = NULL;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < q->nacc; i++)
        if (q->acc[i].ev)
            q->acc[k++] = q->acc[i];
    q->nacc = k;
}

clf_status clf__array_record(clf_array *a, size_t p, size_t lo, size_t hi, unsigned access,
                             clf_event *ev)
{
    if (!a)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__array_record: arr is NULL");
    if (p >= a->nparts)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_array: part %zu of %zu", p, a->nparts);
    clf__array_part *q = &a->parts[p];
    int writes = (access & CLF_ARG_WRITE) != 0;
    if (writes) {
        size_t olo = q->halo_before * a->unit_bytes, ohi = olo + q->count * a->unit_bytes;
        size_t s, e;
        if (clf__clip(lo, hi, olo, ohi, &s, &e)) {
            q->state &= ~(unsigned)CLF__PART_HOST_VALID;
            q->state |= CLF__PART_DEV_VALID;
            size_t u0 = q->first + (s - olo) / a->unit_bytes;
            size_t u1 = q->first + (e - olo + a->unit_bytes - 1) / a->unit_bytes;
            stale_neighbour_halos(a, u0, u1);
        }
        if (lo < olo || hi > ohi) {
            q->state |= CLF__PART_HALO_VALID;
            q->state &= ~(unsigned)CLF__PART_HALO_HOST;
        }
    }
    if (!ev)
        return CLF_SUCCESS;
    if (writes)
        supersede(q, lo, hi);
    if (!grow(q)) {
        /* Cannot track it: wait for it now instead. */
        clf_status st = clf_event_wait(ev);
        return st != CLF_SUCCESS ? st
                                 : clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY,
                                             "clf_array: out of memory");
    }
    clf__event_hold(ev);
    q->acc[q->nacc++] = (clf__access){lo, hi, writes, ev};
    return CLF_SUCCESS;
}

/*
 * Distributed arrays' data between parts: halo exchange, redistribution to another
 * distribution, and reductions of an array to one value. Every copy goes through
 * clf_copy_async(), which picks the path: same device, unified memory, peer, pipelined
 * staging, across contexts and platforms.
 *
 * Halo exchange (clf_array_exchange()): each part's halo units are copied from the parts
 * that own them.
 *
 * Each copy waits for what clf__array_deps() names over its source bytes (a read: the last
 * writer of those owned units, e.g. the boundary strip of an overlapped launch) and its
 * destination bytes (a write: the readers of the old halo), and is recorded on both; so a
 * kernel that writes the owned interior of either part does not wait for it, and the next
 * kernel that reads the halo does. Nothing waits on the host here.
 *
 * Reductions run a per-device tree of the collectives' combine kernel, then clf_reduce()
 * over the devices' partial results.
 */
#include "data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- halo exchange ------------------------------------------------------------------- */

/* The part owning unit u (parts are in unit order); a->nparts when none does. */
static size_t owner(const clf_array *a, size_t u)
{
    for (size_t q = 0; q < a->nparts; q++)
        if (u >= a->parts[q].first && u - a->parts[q].first < a->parts[q].count)
            return q;
    return a->nparts;
}

/* Copy n units of global units, the first of which is u (before wrapping, as a signed
 * distance from 0: -1 is the last unit of a periodic array), into part p's region at
 * unit index r (0 = its first halo unit). */
static clf_status halo_units(clf_array *a, size_t p, size_t r, long long u, size_t n)
{
    const size_t ub = a->unit_bytes, units = a->units;
    /* A window's edge halos come from outside it (clf_array_write_halo()): never wrapped. */
    int periodic = (a->desc.flags & CLF_ARRAY_PERIODIC) && !a->desc.window_units;
    clf_status st = CLF_SUCCESS;
    while (n && st == CLF_SUCCESS) {
        /* Units outside the array of a non-periodic one have no owner: left as they are. */
        if (!periodic && (u < 0 || (unsigned long long)u >= units)) {
            u++, r++, n--;
            continue;
        }
        long long m = (long long)units;
        size_t w = (size_t)(((u % m) + m) % m);
        size_t q = owner(a, w);
        if (q == a->nparts)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_array_exchange: unit %zu has no "
                             "owner", w);
        const clf__array_part *sp = &a->parts[q];
        size_t run = sp->first + sp->count - w;
        run = run < n ? run : n;
        size_t src_lo = (w - sp->first + sp->halo_before) * ub, dst_lo = r * ub, len = run * ub;
        clf_event **wait = NULL, *ev = NULL;
        size_t nwait = 0;
        st = clf__array_deps(a, q, src_lo, src_lo + len, CLF_ARG_READ, &wait, &nwait);
        if (st == CLF_SUCCESS)
            st = clf__array_deps(a, p, dst_lo, dst_lo + len, CLF_ARG_WRITE, &wait, &nwait);
        if (st == CLF_SUCCESS)
            st = clf_copy_async(a->parts[p].buf, a->parts[p].offset + dst_lo, sp->buf,
                                sp->offset + src_lo, len, wait, nwait, &ev);
        if (st != CLF_SUCCESS) {
            char detail[1024];
            snprintf(detail, sizeof detail, "%s", clf_last_error());
            clf__fail(st, "clf_array_exchange: halo of part %zu (device %zu) from part %zu "
                      "(device %zu): %s", p, a->parts[p].device, q, sp->device, detail);
        }
        if (st == CLF_SUCCESS)
            st = clf__array_record(a, q, src_lo, src_lo + len, CLF_ARG_READ, ev);
        if (st == CLF_SUCCESS)
            st = clf__array_record(a, p, dst_lo, dst_lo + len, CLF_ARG_WRITE, ev);
        clf_event_release(ev);
        clf__array_wait_free(wait, nwait);
        u += (long long)run;
        r += run;
        n -= run;
    }
    return st;
}

clf_status clf_array_exchange(clf_array *arr)
{
    if (!arr)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_exchange: arr is NULL");
    if (arr->desc.dist != CLF_ARRAY_BLOCK)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_array_exchange: only CLF_ARRAY_BLOCK arrays have halos");
    if (arr->mapped)
        return clf__fail(CLF_ERROR_BUSY, "clf_array_exchange: the array is mapped "
                         "(clf_array_unmap() first)");
    clf_status st = CLF_SUCCESS;
    for (size_t p = 0; p < arr->nparts && st == CLF_SUCCESS; p++) {
        const clf__array_part *pp = &arr->parts[p];
        long long first = (long long)pp->first;
        if (pp->halo_before)
            st = halo_units(arr, p, 0, first - (long long)pp->halo_before, pp->halo_before);
        if (st == CLF_SUCCESS && pp->halo_after)
            st = halo_units(arr, p, pp->halo_before + pp->count, first + (long long)pp->count,
                            pp->halo_after);
    }
    return st;
}

/* ---- redistribution ------------------------------------------------------------------- */

/* The old part that supplies global unit g to a new part on device dev: its owner, or for
 * a replicated array the copy on dev when there is one. */
static size_t source_part(const clf_array *a, size_t g, size_t dev)
{
    if (a->desc.dist == CLF_ARRAY_REPLICATED) {
        for (size_t p = 0; p < a->nparts; p++)
            if (a->parts[p].device == dev)
                return p;
        return 0;
    }
    if (a->desc.dist == CLF_ARRAY_BLOCK_CYCLIC) {
        return g / (a->desc.block_size ? a->desc.block_size : 1);
    }
    size_t lo = 0, hi = a->nparts; /* block: parts in unit order */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (a->parts[mid].first <= g)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Copy global units [g, g + n) of the old array a into region unit k of part P of b. */
static clf_status copy_units(clf_array *a, clf_array *b, size_t P, size_t k, size_t g, size_t n,
                             unsigned char *used, clf__evlist *ev)
{
    const clf__array_part *d = &b->parts[P];
    size_t ub = a->unit_bytes;
    while (n > 0) {
        size_t q = source_part(a, g, d->device);
        const clf__array_part *s = &a->parts[q];
        if (!used[q]) {
            clf_status st = clf__array_ready(a, q, CLF_ARG_READ);
            if (st != CLF_SUCCESS)
                return st;
            used[q] = 1;
        }
        size_t len = s->first + s->count - g;
        if (len > n)
            len = n;
        clf_event *e = NULL;
        clf_status st = clf_copy_async(d->buf, d->offset + k * ub, s->buf,
                                       s->offset + (s->halo_before + g - s->first) * ub, len * ub,
                                       NULL, 0, &e);
        if (st == CLF_SUCCESS)
            st = clf__evlist_push(ev, e);
        if (st != CLF_SUCCESS)
            return st;
        g += len;
        k += len;
        n -= len;
    }
    return CLF_SUCCESS;
}

/* Nonzero when the host's mirror holds global units [g0, g1) of a current. */
static int host_current(const clf_array *a, size_t g0, size_t g1)
{
    if (!a->host)
        return 0;
    for (size_t p = 0; p < a->nparts; p++) {
        const clf__array_part *q = &a->parts[p];
        if (a->desc.dist == CLF_ARRAY_REPLICATED) {
            if (q->state & CLF__PART_HOST_VALID)
                return 1;
            continue;
        }
        if (q->first < g1 && q->first + q->count > g0 && !(q->state & CLF__PART_HOST_VALID))
            return 0;
    }
    return a->desc.dist != CLF_ARRAY_REPLICATED;
}

clf_status clf_array_redistribute(clf_array *a, const clf_array_desc *desc)
{
    static const char *fn = "clf_array_redistribute";
    if (!a || !desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", fn, a ? "desc" : "arr");
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "%s: the array is mapped", fn);
    if (a->desc.window_units || (desc->version >= 2 && desc->version <= CLF_ARRAY_DESC_VERSION &&
                                 desc->window_units))
        return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: a window array (window_units) is not "
                         "redistributed", fn);
    if (desc->version >= 1 && desc->version <= CLF_ARRAY_DESC_VERSION) {
        int same = desc->dims == a->desc.dims && desc->elem_size == a->desc.elem_size;
        for (unsigned i = 0; same && i < desc->dims && i < 3; i++)
            same = desc->shape[i] == a->desc.shape[i];
        if (!same)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: the new distribution must keep dims, shape and elem_size", fn);
    }
    clf_array *b = NULL;
    clf_status st = clf__array_build(&b, a->fleet, desc, fn);
    if (st != CLF_SUCCESS)
        return st;
    unsigned char *used = calloc(a->nparts, 1);
    clf__evlist ev = {0};
    if (!used)
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn);
    for (size_t P = 0; st == CLF_SUCCESS && P < b->nparts; P++) {
        clf__array_part *d = &b->parts[P];
        /* The region as runs of global units (a periodic halo wraps). */
        size_t R = d->halo_before + d->count + d->halo_after, k = 0;
        size_t g = d->first >= d->halo_before ? d->first - d->halo_before
                                              : b->units - (d->halo_before - d->first);
        while (st == CLF_SUCCESS && k < R) {
            size_t len = b->units - g < R - k ? b->units - g : R - k;
            st = copy_units(a, b, P, k, g, len, used, &ev);
            k += len;
            g = 0;
        }
    }
    st = clf__evlist_finish(&ev, st);
    free(used);
    if (st != CLF_SUCCESS) {
        clf_array_destroy(b); /* the array keeps its old layout and contents */
        return st;
    }
    for (size_t P = 0; P < b->nparts; P++) {
        clf__array_part *d = &b->parts[P];
        d->state = CLF__PART_DEV_VALID | CLF__PART_HALO_VALID;
        if (host_current(a, d->first, d->first + d->count))
            d->state |= CLF__PART_HOST_VALID;
    }
    clf__array_swap(a, b);
    clf_array_destroy(b); /* now the old layout */
    clf__rebal_reset(a, 0); /* speeds measured on the old cut */
    return CLF_SUCCESS;
}

/* ---- reductions ----------------------------------------------------------------------- */

/* What one device reduces: bytes [off, off + n * es) of buf. */
typedef struct span {
    clf_buffer *buf;
    size_t off, n;
} span;

clf_status clf_array_reduce(void *result, clf_array *dst, clf_array *src, clf_type type,
                            clf_reduce_op op)
{
    static const char *fn = "clf_array_reduce";
    if (!src)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: src is NULL", fn);
    if (!result && !dst)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: result and dst are both NULL", fn);
    size_t es = clf_type_size(type);
    if (es == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown element type %d", fn,
                         (int)type);
    if (op < CLF_REDUCE_SUM || op > CLF_REDUCE_MAX)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown operation %d", fn, (int)op);
    if (src->desc.elem_size != es)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: src has elements of %zu bytes, the type %zu", fn,
                         src->desc.elem_size, es);
    if (dst && (dst->desc.dist != CLF_ARRAY_REPLICATED || dst->desc.elem_size != es ||
                dst->fleet != src->fleet))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: dst must be a replicated array of the same fleet with elements "
                         "of %zu bytes",
                         fn, es);
    if (src->mapped || (dst && dst->mapped))
        return clf__fail(CLF_ERROR_BUSY, "%s: %s is mapped", fn, src->mapped ? "src" : "dst");

    /* What each device reduces. */
    size_t nd = src->desc.dist == CLF_ARRAY_REPLICATED ? 1 : src->desc.num_devices;
    span sp[CLF__COLL_MAXN];
    clf_buffer *s[CLF__COLL_MAXN] = {0};
    if (nd > CLF__COLL_MAXN)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: more than %d devices", fn,
                         CLF__COLL_MAXN);
    clf_status st = CLF_SUCCESS;
    for (size_t p = 0; st == CLF_SUCCESS && p < src->nparts; p++)
        if (src->desc.dist != CLF_ARRAY_REPLICATED || p == 0)
            st = clf__array_ready(src, p, CLF_ARG_READ);
    if (st != CLF_SUCCESS)
        return st;
    for (size_t i = 0; i < nd; i++) {
        if (src->desc.dist == CLF_ARRAY_BLOCK_CYCLIC) {
            sp[i].buf = src->bufs[i];
            sp[i].off = 0;
            sp[i].n = clf_buffer_size(src->bufs[i]) / es;
        } else {
            const clf__array_part *q = &src->parts[i];
            sp[i].buf = q->buf;
            sp[i].off = q->offset + q->halo_before * src->unit_bytes;
            sp[i].n = q->count * src->unit_bytes / es;
        }
    }
    /* A scratch buffer per device: half of its span, halved again until one element. */
    for (size_t i = 0; st == CLF_SUCCESS && i < nd; i++)
        st = clf_buffer_create(&s[i], src->fleet, sp[i].buf->device,
                               (sp[i].n - sp[i].n / 2) * es, 0);
    clf__coll c;
    int have_coll = 0;
    if (st == CLF_SUCCESS) {
        st = clf__coll_validate(&c, fn, s, nd, NULL, 1, es, &type, op);
        have_coll = 1;
    }
    if (st == CLF_SUCCESS)
        st = clf__coll_kernels(&c, type, op);
    for (size_t i = 0; st == CLF_SUCCESS && i < nd; i++) {
        size_t n = sp[i].n, h = n / 2, m = n - h;
        clf_event *e = NULL;
        st = clf__coll_copy(&c, s[i], 0, sp[i].buf, sp[i].off, m * es, NULL, NULL, NULL, &e);
        if (st == CLF_SUCCESS && h)
            st = clf__coll_combine(&c, i, s[i], 0, sp[i].buf, sp[i].off / es + m, h, e, NULL,
                                   NULL, &e);
        while (st == CLF_SUCCESS && m > 1) {
            h = m / 2;
            size_t m2 = m - h;
            st = clf__coll_combine(&c, i, s[i], 0, s[i], m2, h, e, NULL, NULL, &e);
            m = m2;
        }
    }
    if (have_coll)
        st = clf__coll_finish(&c, st);
    /* The devices' partial results into the first one's. */
    if (st == CLF_SUCCESS)
        st = clf_reduce(s, nd, 1, type, op, 0, NULL);
    if (st == CLF_SUCCESS && result)
        st = clf_buffer_read(s[0], 0, es, result);
    if (st == CLF_SUCCESS && dst) {
        clf__evlist ev = {0};
        for (size_t p = 0; st == CLF_SUCCESS && p < dst->nparts; p++) {
            clf__array_part *q = &dst->parts[p];
            st = clf__array_ready(dst, p, CLF_ARG_WRITE);
            clf_event *e = NULL;
            if (st == CLF_SUCCESS)
                st = clf_copy_async(q->buf, q->offset, s[0], 0, es, NULL, 0, &e);
            if (st == CLF_SUCCESS)
                st = clf__evlist_push(&ev, e);
        }
        st = clf__evlist_finish(&ev, st);
        /* Element 0 of every copy changed (or may have, after a failure). */
        for (size_t p = 0; p < dst->nparts; p++)
            clf__array_record(dst, p, 0, es, CLF_ARG_WRITE, NULL);
    }
    for (size_t i = 0; i < nd; i++)
        clf_buffer_destroy(s[i]);
    return st;
}

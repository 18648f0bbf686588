/*
 * Halos and strips of block arrays.
 *
 * Halo exchange (clf_array_exchange()): each part's halo units are copied from the parts
 * that own them, device to device by clf_copy_async() (which picks the path: same device,
 * unified memory, peer, pipelined staging, across contexts and platforms).
 *
 * Each copy waits for what clf__array_deps() names over its source bytes (a read: the last
 * writer of those owned units, e.g. the boundary strip of an overlapped launch) and its
 * destination bytes (a write: the readers of the old halo), and is recorded on both; so a
 * kernel that writes the owned interior of either part does not wait for it, and the next
 * kernel that reads the halo does. Nothing waits on the host here.
 */
#include "data.h"

#include <stdio.h>

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
static clf_status copy_units(clf_array *a, size_t p, size_t r, long long u, size_t n)
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
            st = copy_units(arr, p, 0, first - (long long)pp->halo_before, pp->halo_before);
        if (st == CLF_SUCCESS && pp->halo_after)
            st = copy_units(arr, p, pp->halo_before + pp->count, first + (long long)pp->count,
                            pp->halo_after);
    }
    return st;
}

/* ---- host strips -------------------------------------------------------------------- */

/*
 * Host strips of block arrays: clf_array_read_units() reads owned units straight from the
 * parts' buffers, waiting only for the writers of those bytes (a boundary strip while the
 * interior computes), and clf_array_write_halo() fills a window array's edge halo from the
 * host (the halo between processes, clfleet/mpi.h). Both go through the parts' dependency
 * records (data.h).
 */

/* Blocking read (dst) or write (src) of part p's region bytes [lo, hi), after the accesses
 * it must follow; a write is recorded (the halo or units become current on the device). */
static clf_status move(clf_array *a, size_t p, size_t lo, size_t hi, void *dst,
                       const void *src)
{
    clf__array_part *q = &a->parts[p];
    clf_event **wait = NULL;
    size_t nwait = 0;
    unsigned access = src ? CLF_ARG_WRITE : CLF_ARG_READ;
    clf_status st = clf__array_deps(a, p, lo, hi, access, &wait, &nwait);
    for (size_t i = 0; st == CLF_SUCCESS && i < nwait; i++)
        st = clf_event_wait(wait[i]);
    clf__array_wait_free(wait, nwait);
    if (st != CLF_SUCCESS)
        return st;
    st = src ? clf_buffer_write(q->buf, q->offset + lo, hi - lo, src)
             : clf_buffer_read(q->buf, q->offset + lo, hi - lo, dst);
    if (st == CLF_SUCCESS && src)
        st = clf__array_record(a, p, lo, hi, CLF_ARG_WRITE, NULL);
    return st;
}

clf_status clf_array_read_units(clf_array *a, size_t first, size_t count, void *dst)
{
    if (!a || !dst)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_read_units: %s is NULL",
                         a ? "dst" : "arr");
    if (a->desc.dist != CLF_ARRAY_BLOCK)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_array_read_units: only CLF_ARRAY_BLOCK arrays");
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "clf_array_read_units: the array is mapped");
    if (first > a->units || count > a->units - first)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "clf_array_read_units: units [%zu, %zu + %zu) of %zu", first, first,
                         count, a->units);
    const size_t ub = a->unit_bytes;
    clf_status st = CLF_SUCCESS;
    for (size_t p = 0; p < a->nparts && st == CLF_SUCCESS && count; p++) {
        const clf__array_part *q = &a->parts[p];
        if (first >= q->first + q->count || first + count <= q->first)
            continue;
        size_t u0 = first > q->first ? first : q->first;
        size_t u1 = first + count < q->first + q->count ? first + count : q->first + q->count;
        size_t lo = (u0 - q->first + q->halo_before) * ub;
        st = move(a, p, lo, lo + (u1 - u0) * ub, (char *)dst + (u0 - first) * ub, NULL);
    }
    return st;
}

clf_status clf_array_write_halo(clf_array *a, int after, const void *src)
{
    if (!a || !src)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_write_halo: %s is NULL",
                         a ? "src" : "arr");
    if (!a->desc.window_units)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_array_write_halo: not a window array (clf_array_desc.window_units; "
                         "clf_array_exchange() fills the halos of others)");
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "clf_array_write_halo: the array is mapped");
    size_t p = after ? a->nparts - 1 : 0;
    const clf__array_part *q = &a->parts[p];
    size_t n = after ? q->halo_after : q->halo_before;
    if (n == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_array_write_halo: the window holds no halo %s it",
                         after ? "after" : "before");
    size_t lo = after ? (q->halo_before + q->count) * a->unit_bytes : 0;
    return move(a, p, lo, lo + n * a->unit_bytes, NULL, src);
}

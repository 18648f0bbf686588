/*
 * Host strips of block arrays: clf_array_read_units() reads owned units straight from the
 * parts' buffers, waiting only for the writers of those bytes (a boundary strip while the
 * interior computes), and clf_array_write_halo() fills a window array's edge halo from the
 * host (the halo between processes, clfleet/mpi.h). Both go through the parts' dependency
 * records (data.h).
 */
#include "data.h"

#include <stdio.h>

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

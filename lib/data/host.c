/*
 * Distributed arrays: host access. Write and read of boxes between packed host memory and
 * the parts (the host's mirror fetched lazily, only the parts a read needs), map and unmap
 * of the whole array through the mirror; and host strips, owned units read and halos
 * written without a whole-array sync.
 */
#include "data.h"

#include <stdlib.h>
#include <string.h>

/* ---- host access ----------------------------------------------------------------------- */

/* A box, with the unused dimensions filled in (origin 0, region 1). */
typedef struct box {
    size_t o[3], r[3];
} box;

/* origin and region hold three entries, as OpenCL's rectangle copies and
 * clf_comm_array_read() take them. A dimension the array does not have has extent 1, so
 * only origin 0 and region 1 fit there: a 1-D array given region {10, 2, 1} would otherwise
 * move the first row of a box that the caller meant to be two rows long, and succeed. */
static clf_status get_box(const clf_array *a, const size_t *origin, const size_t *region,
                          box *b, const char *who)
{
    for (unsigned i = 0; i < 3; i++) {
        size_t ext = i < a->desc.dims ? a->desc.shape[i] : 1, end;
        b->o[i] = origin ? origin[i] : 0;
        if (region && region[i] == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: region[%u] is zero", who, i);
        if (b->o[i] >= ext)
            return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                             "%s: origin[%u] = %zu leaves the array's extent %zu there%s", who,
                             i, b->o[i], ext,
                             i < a->desc.dims ? "" : " (a dimension the array does not have)");
        b->r[i] = region ? region[i] : ext - b->o[i];
        if (clf__add_overflow(b->o[i], b->r[i], &end) || end > ext)
            return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                             "%s: the box's dimension %u [%zu, +%zu) leaves the array's %zu%s",
                             who, i, b->o[i], b->r[i], ext,
                             i < a->desc.dims ? "" : " (a dimension the array does not have)");
    }
    return CLF_SUCCESS;
}

/* The checks that open clf_array_write() and clf_array_read() (who): the array and the
 * host pointer ptr (named what) given, the array not mapped, the box inside it. */
static clf_status host_box(const clf_array *a, const void *ptr, const char *what,
                           const size_t *origin, const size_t *region, box *b, const char *who)
{
    if (!a || !ptr)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", who, a ? what : "arr");
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "%s: the array is mapped", who);
    return get_box(a, origin, region, b, who);
}

/* Copy a box between the mirror and packed host memory. */
static void box_copy(const clf_array *a, const box *b, void *packed, int to_packed)
{
    size_t es = a->desc.elem_size, s0 = a->desc.shape[0], s1 = a->desc.dims > 1 ?
                                                                 a->desc.shape[1] : 1;
    size_t row = b->r[0] * es;
    if (a->desc.dims == 1) {
        s1 = 1;
    }
    char *m = a->host, *h = packed;
    for (size_t z = 0; z < b->r[2]; z++)
        for (size_t y = 0; y < b->r[1]; y++) {
            size_t mo = (((b->o[2] + z) * s1 + (b->o[1] + y)) * s0 + b->o[0]) * es;
            size_t ho = (z * b->r[1] + y) * row;
            if (to_packed)
                memcpy(h + ho, m + mo, row);
            else
                memcpy(m + mo, h + ho, row);
        }
}

static clf_status need_mirror(clf_array *a)
{
    if (a->host)
        return CLF_SUCCESS;
    a->host = malloc(a->bytes);
    if (!a->host)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY,
                         "clf_array: no host memory for a mirror of %zu bytes", a->bytes);
    return CLF_SUCCESS;
}

/* Write the box's units [s, e) (global) from packed src into part p's region units
 * starting at ks. */
static clf_status write_piece(clf_array *a, size_t p, const box *b, size_t s, size_t e,
                              size_t ks, const void *src, clf_event **out)
{
    clf__array_part *q = &a->parts[p];
    struct clf__device *d = &a->fleet->dev[q->device];
    unsigned c = a->desc.dims - 1;
    size_t es = a->desc.elem_size, ub = a->unit_bytes;
    size_t lo = ks * ub, n = e - s;
    size_t hrow = b->r[0] * es, hunit = c == 0 ? es : c == 1 ? hrow : hrow * b->r[1];
    const char *h = (const char *)src + (s - b->o[c]) * hunit;
    cl_event ev = NULL;
    clf_status st;
    int whole = c == 0 || (b->r[0] == a->desc.shape[0] && (c == 1 || b->r[1] == a->desc.shape[1]));
    clf__cmd cmd = CLF__CMD(a->fleet, q->device, d->transfer, "clf_array_write");
    cmd.ev = &ev;
    if (whole) {
        st = clf__cmd_write(&cmd, q->buf->mem, q->offset + lo, n * ub, h);
    } else {
        size_t U = (q->offset + lo) / ub; /* offsets are whole units */
        clf__cmd_box rb = {.brow = a->desc.shape[0] * es, .hrow = hrow};
        if (c == 1) {
            rb.borigin[0] = b->o[0] * es, rb.borigin[1] = U;
            rb.region[0] = hrow, rb.region[1] = n, rb.region[2] = 1;
        } else {
            rb.borigin[0] = b->o[0] * es, rb.borigin[1] = b->o[1], rb.borigin[2] = U;
            rb.region[0] = hrow, rb.region[1] = b->r[1], rb.region[2] = n;
            rb.bslice = ub, rb.hslice = hunit;
        }
        st = clf__cmd_rect(&cmd, 1, q->buf->mem, &rb, h);
    }
    if (st != CLF_SUCCESS)
        return st;
    return clf__event_wrap(ev, out);
}

clf_status clf_array_write(clf_array *a, const size_t *origin, const size_t *region,
                           const void *src)
{
    box b;
    clf_status st = host_box(a, src, "src", origin, region, &b, "clf_array_write");
    if (st != CLF_SUCCESS)
        return st;
    unsigned c = a->desc.dims - 1;
    size_t u0 = b.o[c], u1 = u0 + b.r[c];
    clf__evlist evs = {0};
    for (size_t p = 0; p < a->nparts && st == CLF_SUCCESS; p++) {
        clf__array_part *q = &a->parts[p];
        size_t k[4], g[4], n[4], nr = clf__part_runs(a, q, k, g, n);
        for (size_t r = 0; r < nr && st == CLF_SUCCESS; r++) {
            size_t s, e;
            if (!clf__clip(g[r], g[r] + n[r], u0, u1, &s, &e))
                continue;
            size_t ks = k[r] + (s - g[r]);
            /* Upload what the host wrote before, then wait for the part's users. */
            st = clf__refresh_device(a, p);
            if (st == CLF_SUCCESS)
                st = clf__wait_range(a, p, ks * a->unit_bytes, (ks + e - s) * a->unit_bytes, 1);
            clf_event *ev = NULL;
            if (st == CLF_SUCCESS)
                st = write_piece(a, p, &b, s, e, ks, src, &ev);
            if (st == CLF_SUCCESS)
                st = clf__evlist_push(&evs, ev);
        }
    }
    /* Wait for every piece (src is the caller's); the first error. */
    st = clf__evlist_finish(&evs, st);
    if (st != CLF_SUCCESS)
        return st;
    if (a->host)
        box_copy(a, &b, (void *)src, 0); /* parts the host holds stay current there */
    return CLF_SUCCESS;
}

/* Fetch into the mirror every part that owns units of [u0, u1) and whose host copy is
 * stale; then those parts are current on the host. */
static clf_status fetch(clf_array *a, size_t u0, size_t u1)
{
    clf_status st = need_mirror(a);
    if (st != CLF_SUCCESS)
        return st;
    int repl = a->desc.dist == CLF_ARRAY_REPLICATED;
    if (repl) { /* every copy is the same: one current on the host is enough */
        for (size_t p = 0; p < a->nparts; p++)
            if (a->parts[p].state & CLF__PART_HOST_VALID)
                return CLF_SUCCESS;
    }
    clf_event **evs = calloc(a->nparts, sizeof *evs);
    if (!evs)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_array: out of memory");
    size_t nparts = repl ? 1 : a->nparts;
    for (size_t p = 0; p < nparts && st == CLF_SUCCESS; p++) {
        clf__array_part *q = &a->parts[p];
        if (q->state & CLF__PART_HOST_VALID || q->first >= u1 || q->first + q->count <= u0)
            continue;
        size_t lo = q->halo_before * a->unit_bytes, size = q->count * a->unit_bytes;
        st = clf__wait_range(a, p, lo, lo + size, 0);
        if (st != CLF_SUCCESS)
            break;
        struct clf__device *d = &a->fleet->dev[q->device];
        cl_event ev = NULL;
        clf__cmd c = CLF__CMD(a->fleet, q->device, d->transfer, "clf_array fetch");
        c.ev = &ev;
        st = clf__cmd_read(&c, q->buf->mem, q->offset + lo, size,
                           (char *)a->host + q->first * a->unit_bytes);
        if (st == CLF_SUCCESS)
            st = clf__event_wrap(ev, &evs[p]);
    }
    for (size_t p = 0; p < nparts; p++) {
        if (!evs[p])
            continue;
        clf_status s = clf_event_wait(evs[p]);
        if (st == CLF_SUCCESS)
            st = s;
        clf_event_release(evs[p]);
        if (s == CLF_SUCCESS)
            a->parts[p].state |= CLF__PART_HOST_VALID;
    }
    free(evs);
    if (st == CLF_SUCCESS && repl)
        for (size_t p = 0; p < a->nparts; p++)
            a->parts[p].state |= CLF__PART_HOST_VALID;
    return st;
}

clf_status clf_array_read(clf_array *a, const size_t *origin, const size_t *region, void *dst)
{
    box b;
    clf_status st = host_box(a, dst, "dst", origin, region, &b, "clf_array_read");
    if (st != CLF_SUCCESS)
        return st;
    unsigned c = a->desc.dims - 1;
    st = fetch(a, b.o[c], b.o[c] + b.r[c]);
    if (st != CLF_SUCCESS)
        return st;
    box_copy(a, &b, dst, 1);
    return CLF_SUCCESS;
}

clf_status clf_array_map(void **out, clf_array *a, unsigned flags)
{
    if (!out || !a)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_map: %s is NULL",
                         out ? "arr" : "out");
    *out = NULL;
    if (!flags || flags & ~(unsigned)(CLF_MAP_READ | CLF_MAP_WRITE | CLF_MAP_DISCARD) ||
        (flags & CLF_MAP_DISCARD && (!(flags & CLF_MAP_WRITE) || flags & CLF_MAP_READ)))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_array_map: bad flags 0x%x (READ and/or WRITE; DISCARD only with "
                         "WRITE alone)",
                         flags);
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "clf_array_map: the array is mapped already");
    clf_status st = need_mirror(a);
    if (st != CLF_SUCCESS)
        return st;
    /* DISCARD: nothing is fetched (uploads and fetches of the mirror are complete when the
     * calls that queue them return, so nothing else uses it). */
    if (!(flags & CLF_MAP_DISCARD)) {
        st = fetch(a, 0, a->units);
        if (st != CLF_SUCCESS)
            return st;
    }
    a->mapped = flags;
    *out = a->host;
    return CLF_SUCCESS;
}

clf_status clf_array_unmap(clf_array *a)
{
    if (!a)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_unmap: arr is NULL");
    if (!a->mapped)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_array_unmap: the array is not mapped");
    if (a->mapped & CLF_MAP_WRITE)
        for (size_t p = 0; p < a->nparts; p++) {
            clf__array_part *q = &a->parts[p];
            q->state = CLF__PART_HOST_VALID;
            q->state |= q->halo_before || q->halo_after ? CLF__PART_HALO_HOST
                                                        : CLF__PART_HALO_VALID;
        }
    a->mapped = 0;
    return CLF_SUCCESS;
}

/* ---- host strips ---------------------------------------------------------------------- */

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

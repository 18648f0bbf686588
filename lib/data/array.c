/*
 * Distributed arrays (clf_array): creation and part layout, the per-part dependency records
 * (clf__array_deps/record/sync), lazy coherence with the host's mirror, and host access
 * (write and read of boxes, map and unmap).
 */
#include "data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout ---------------------------------------------------------------------------- */

size_t clf__array_part_bytes(const clf_array *a, size_t p)
{
    const clf__array_part *q = &a->parts[p];
    return (q->halo_before + q->count + q->halo_after) * a->unit_bytes;
}

/* Units of a part's region: halo before, owned, halo after. */
static size_t region_units(const clf__array_part *q)
{
    return q->halo_before + q->count + q->halo_after;
}

/* [*s, *e) = [a0, a1) intersected with [b0, b1); nonzero when that is not empty. */
static int clip(size_t a0, size_t a1, size_t b0, size_t b1, size_t *s, size_t *e)
{
    *s = a0 > b0 ? a0 : b0;
    *e = a1 < b1 ? a1 : b1;
    return *s < *e;
}

/* The region's units as runs of consecutive global units (a periodic halo wraps): run i is
 * region units [k[i], k[i] + n[i]) = global units [g[i], g[i] + n[i]). Returns the count. */
static size_t part_runs(const clf_array *a, const clf__array_part *q, size_t k[4], size_t g[4],
                        size_t n[4])
{
    size_t R = region_units(q), kk = 0, nr = 0;
    if (a->desc.window_units) {
        /* A window: only the units inside it; its edge halos are not the host's. */
        size_t lo = q->first >= q->halo_before ? q->first - q->halo_before : 0;
        size_t hi = q->first + q->count + q->halo_after;
        hi = hi < a->units ? hi : a->units;
        k[0] = lo - (q->first - q->halo_before);
        g[0] = lo;
        n[0] = hi - lo;
        return 1;
    }
    size_t gg = q->first >= q->halo_before ? q->first - q->halo_before
                                           : a->units - (q->halo_before - q->first);
    while (kk < R && nr < 4) {
        size_t len = a->units - gg;
        if (len > R - kk)
            len = R - kk;
        k[nr] = kk;
        g[nr] = gg;
        n[nr] = len;
        nr++;
        kk += len;
        gg = 0;
    }
    return nr;
}


size_t clf__array_part_runs(const clf_array *a, size_t p, size_t k[4], size_t g[4],
                            size_t n[4])
{
    return part_runs(a, &a->parts[p], k, g, n);
}

/* Units per device from weights: a largest-remainder split of units (equal weights give
 * clf_distribution_part()'s block layout: the first units % n devices one more). */
static void split_units(size_t units, const double *w, size_t nd, size_t *cnt)
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

/* A layout is built straight into its array (create, redistribute): desc, devices, sizes,
 * parts and buffers; release_layout() frees what a failed build left. */
static void release_layout(clf_array *a);

/* Validate desc and compute the layout (no buffers yet). who names the caller. */
static clf_status layout_plan(clf_array *L, clf_fleet *fl, const clf_array_desc *d,
                              const char *who)
{
    memset(L, 0, sizeof *L);
    clf_status st = clf__check_version(who, d->version, CLF_ARRAY_DESC_VERSION,
                                       "clf_array_desc", "CLF_ARRAY_DESC_INIT");
    if (st != CLF_SUCCESS)
        return st;
    if (d->dims < 1 || d->dims > 3)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: dims is %u, not 1, 2 or 3", who,
                         d->dims);
    if (d->elem_size < 1 || d->elem_size > 128)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: elem_size is %zu, not 1 to 128", who,
                         d->elem_size);
    if ((unsigned)d->dist > CLF_ARRAY_BLOCK_CYCLIC)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown distribution %d", who,
                         (int)d->dist);
    if (d->flags & ~CLF_ARRAY_PERIODIC)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", who, d->flags);
    for (unsigned i = 0; i < 2; i++)
        if (d->reserved[i])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: reserved[%u] is not zero", who, i);
    if (d->version < 2 && (d->window_units || d->window_first))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: reserved fields are not zero", who);
    size_t ub = d->elem_size;
    for (unsigned i = 0; i < d->dims; i++) {
        if (d->shape[i] == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: shape[%u] is zero", who, i);
        if (i + 1 < d->dims && clf__mul_overflow(ub, d->shape[i], &ub))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: the shape overflows", who);
    }
    size_t units = d->shape[d->dims - 1], bytes;
    if (clf__mul_overflow(ub, units, &bytes))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: the shape overflows", who);
    if (d->window_units || d->window_first) {
        if (d->dist != CLF_ARRAY_BLOCK)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: a window needs CLF_ARRAY_BLOCK",
                             who);
        if (d->window_first > d->window_units || units > d->window_units - d->window_first)
            return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                             "%s: window of units [%zu, %zu + %zu) is not inside the larger "
                             "array's %zu units", who, d->window_first, d->window_first, units,
                             d->window_units);
    }
    if (d->dist != CLF_ARRAY_BLOCK && (d->halo_before || d->halo_after))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: a halo (%zu before, %zu after) needs CLF_ARRAY_BLOCK", who,
                         d->halo_before, d->halo_after);
    if ((unsigned)d->weights_mode > CLF_WEIGHTS_USER)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown weights mode %d", who,
                         (int)d->weights_mode);
    size_t nfl = fl->ndev;
    if (d->devices && d->num_devices == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: devices given but num_devices is 0",
                         who);
    if (!d->devices && d->num_devices)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: num_devices is %zu but devices is NULL",
                         who, d->num_devices);
    size_t nd = d->devices ? d->num_devices : nfl;
    if (nd > nfl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: %zu devices for a fleet of %zu (a device twice?)", who, nd, nfl);
    size_t *devs = calloc(nd, sizeof *devs);
    double *w = calloc(nd, sizeof *w);
    size_t *cnt = calloc(nd, sizeof *cnt);
    if (!devs || !w || !cnt) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
        goto out;
    }
    if (d->devices) {
        for (size_t i = 0; i < nd; i++) {
            if (d->devices[i] >= nfl) {
                st = clf__fail(CLF_ERROR_OUT_OF_RANGE,
                               "%s: devices[%zu] is %zu, beyond the fleet's %zu devices", who,
                               i, d->devices[i], nfl);
                goto out;
            }
            for (size_t j = 0; j < i; j++)
                if (d->devices[j] == d->devices[i]) {
                    st = clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                   "%s: device %zu is listed twice (devices[%zu] and [%zu])",
                                   who, d->devices[i], j, i);
                    goto out;
                }
            devs[i] = d->devices[i];
        }
    }
    pthread_mutex_lock(&fl->lock);
    size_t k = 0;
    for (size_t i = 0; i < nd; i++) {
        size_t dv = d->devices ? devs[i] : i;
        if (fl->dev[dv].failed) {
            if (d->devices) {
                pthread_mutex_unlock(&fl->lock);
                st = clf__fail(CLF_ERROR_DEVICE_FAILED, "%s: device %zu '%s' failed: %s", who,
                               dv, fl->dev[dv].info.name, fl->dev[dv].fail_why);
                goto out;
            }
            continue;
        }
        devs[k++] = dv;
    }
    pthread_mutex_unlock(&fl->lock);
    if (k == 0) {
        st = clf__fail(CLF_ERROR_DEVICE_FAILED, "%s: every device of the fleet failed", who);
        goto out;
    }
    if (d->weights_mode == CLF_WEIGHTS_USER && d->dist == CLF_ARRAY_BLOCK) {
        if (!d->weights) {
            st = clf__fail(CLF_ERROR_NULL_POINTER, "%s: CLF_WEIGHTS_USER with NULL weights",
                           who);
            goto out;
        }
        if (!d->devices && k != nd) {
            st = clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                           "%s: CLF_WEIGHTS_USER over every device, but a device failed: "
                           "list the devices",
                           who);
            goto out;
        }
        int any = 0;
        for (size_t i = 0; i < k; i++) {
            if (!isfinite(d->weights[i]) || d->weights[i] < 0) {
                st = clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: weights[%zu] is %g", who, i,
                               d->weights[i]);
                goto out;
            }
            any |= d->weights[i] > 0;
            w[i] = d->weights[i];
        }
        if (!any) {
            st = clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: every weight is zero", who);
            goto out;
        }
    } else if (d->weights_mode == CLF_WEIGHTS_LEARNED && d->dist == CLF_ARRAY_BLOCK) {
        clf__device_weights(fl, d->kernel, devs, k, w);
    } else {
        for (size_t i = 0; i < k; i++)
            w[i] = 1.0;
    }

    /* Parts: one per device, or for block-cyclic one per block. */
    size_t b = d->block_size ? d->block_size : 1;
    size_t nb = units / b + (units % b != 0);
    clf__array_part *parts = calloc(d->dist == CLF_ARRAY_BLOCK_CYCLIC ? nb : k, sizeof *parts);
    if (!parts) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
        goto out;
    }
    size_t np = 0, nkeep = 0;
    if (d->dist == CLF_ARRAY_BLOCK) {
        if (d->weights_mode == CLF_WEIGHTS_EQUAL) {
            for (size_t i = 0; i < k; i++) {
                size_t f, len;
                clf_distribution_part(&f, &len, units, k, i, CLF_DIST_BLOCK, 0);
                cnt[i] = len;
            }
        } else {
            split_units(units, w, k, cnt);
        }
        size_t first = 0;
        for (size_t i = 0; i < k; i++) {
            if (cnt[i] == 0)
                continue;
            clf__array_part *q = &parts[np++];
            q->device = devs[i];
            q->first = first;
            q->count = cnt[i];
            first += cnt[i];
            devs[nkeep++] = devs[i];
        }
        int per = (d->flags & CLF_ARRAY_PERIODIC) != 0;
        for (size_t i = 0; i < np; i++) {
            clf__array_part *q = &parts[i];
            if (d->halo_before > q->count || d->halo_after > q->count) {
                st = clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                               "%s: halo (%zu before, %zu after) wider than part %zu's %zu "
                               "units on device %zu",
                               who, d->halo_before, d->halo_after, i, q->count, q->device);
                free(parts);
                goto out;
            }
            /* A window's edges have neighbours in the larger array, or wrap around it. */
            int before = d->window_first > 0, after = d->window_first + units < d->window_units;
            q->halo_before = i > 0 || per || before ? d->halo_before : 0;
            q->halo_after = i + 1 < np || per || after ? d->halo_after : 0;
        }
    } else if (d->dist == CLF_ARRAY_REPLICATED) {
        for (size_t i = 0; i < k; i++) {
            parts[i].device = devs[i];
            parts[i].count = units;
        }
        np = nkeep = k;
    } else {
        nkeep = nb < k ? nb : k;
        for (size_t j = 0; j < nb; j++) {
            clf__array_part *q = &parts[j];
            q->device = devs[j % nkeep];
            q->first = j * b;
            q->count = units - q->first < b ? units - q->first : b;
            q->offset = (j / nkeep) * b * ub;
        }
        np = nb;
    }
    for (size_t i = 0; i < np; i++)
        parts[i].state = CLF__PART_DEV_VALID | CLF__PART_HALO_VALID;
    L->desc = *d;
    L->desc.weights = NULL;
    L->desc.devices = devs;
    L->desc.num_devices = nkeep;
    L->devices = devs;
    L->parts = parts;
    L->nparts = np;
    L->unit_bytes = ub;
    L->units = units;
    L->bytes = bytes;
    devs = NULL;
out:
    free(devs);
    free(w);
    free(cnt);
    return st;
}

/* The buffers of a planned layout: one per device, holding its parts back to back. */
static clf_status layout_alloc(clf_array *L, clf_fleet *fl)
{
    L->bufs = calloc(L->desc.num_devices, sizeof *L->bufs);
    if (!L->bufs)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_array: out of memory");
    for (size_t i = 0; i < L->desc.num_devices; i++) {
        size_t size = 0;
        for (size_t p = 0; p < L->nparts; p++) {
            clf__array_part *q = &L->parts[p];
            if (q->device != L->devices[i])
                continue;
            size_t end, rb;
            if (clf__mul_overflow(region_units(q), L->unit_bytes, &rb) ||
                clf__add_overflow(q->offset, rb, &end))
                return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "clf_array: part %zu overflows", p);
            if (end > size)
                size = end;
        }
        clf_status st = clf_buffer_create(&L->bufs[i], fl, L->devices[i], size, 0);
        if (st != CLF_SUCCESS)
            return st;
        for (size_t p = 0; p < L->nparts; p++)
            if (L->parts[p].device == L->devices[i])
                L->parts[p].buf = L->bufs[i];
    }
    return CLF_SUCCESS;
}

clf_status clf_array_create(clf_array **out, clf_fleet *fleet, const clf_array_desc *desc)
{
    return clf__array_build(out, fleet, desc, "clf_array_create");
}

clf_status clf__array_build(clf_array **out, clf_fleet *fleet, const clf_array_desc *desc,
                            const char *who)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: out is NULL", who);
    *out = NULL;
    if (!fleet || !desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", who,
                         fleet ? "desc" : "fleet");
    clf_array *a = calloc(1, sizeof *a);
    if (!a)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    clf_status st = layout_plan(a, fleet, desc, who);
    if (st == CLF_SUCCESS)
        st = layout_alloc(a, fleet);
    if (st != CLF_SUCCESS) {
        release_layout(a);
        free(a);
        return st;
    }
    a->fleet = fleet;
    clf__fleet_ref(fleet);
    *out = a;
    return CLF_SUCCESS;
}

/* Copy the layout of src (desc, devices, sizes, parts, buffers) into dst. */
static void copy_layout(clf_array *dst, const clf_array *src)
{
    dst->desc = src->desc;
    dst->devices = src->devices;
    dst->unit_bytes = src->unit_bytes;
    dst->units = src->units;
    dst->bytes = src->bytes;
    dst->parts = src->parts;
    dst->nparts = src->nparts;
    dst->bufs = src->bufs;
}

void clf__array_swap(clf_array *a, clf_array *b)
{
    clf_array t = *a;
    copy_layout(a, b);
    copy_layout(b, &t);
}

/* Release the records, buffers and parts (after clf__array_sync()). */
static void release_layout(clf_array *a)
{
    for (size_t p = 0; p < a->nparts; p++) {
        clf__array_part *q = &a->parts[p];
        for (size_t i = 0; i < q->nacc; i++)
            clf_event_release(q->acc[i].ev);
        free(q->acc);
    }
    if (a->bufs)
        for (size_t i = 0; i < a->desc.num_devices; i++)
            clf_buffer_destroy(a->bufs[i]);
    free(a->bufs);
    free(a->parts);
    free(a->devices);
    a->bufs = NULL;
    a->parts = NULL;
    a->devices = NULL;
    a->nparts = 0;
}

void clf_array_destroy(clf_array *a)
{
    if (!a)
        return;
    char saved[512];
    snprintf(saved, sizeof saved, "%s", clf_last_error());
    clf__array_sync(a); /* errors of queued work have no one left to report to */
    clf__fail(CLF_SUCCESS, "%s", saved);
    release_layout(a);
    free(a->host);
    clf_fleet *fl = a->fleet;
    free(a);
    clf__fleet_unref(fl); /* last: it may tear the fleet down */
}

size_t clf_array_part_count(const clf_array *a)
{
    return a ? a->nparts : 0;
}

clf_status clf_array_part_info(clf_array_part *out, const clf_array *a, size_t part)
{
    if (!out || !a)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_part_info: %s is NULL",
                         out ? "arr" : "out");
    if (part >= a->nparts)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_array_part_info: part %zu of %zu", part,
                         a->nparts);
    const clf__array_part *q = &a->parts[part];
    memset(out, 0, sizeof *out);
    out->device = q->device;
    out->first = q->first + a->desc.window_first; /* a window's parts: global units */
    out->count = q->count;
    out->halo_before = q->halo_before;
    out->halo_after = q->halo_after;
    out->buffer = q->buf;
    out->offset = q->offset;
    return CLF_SUCCESS;
}

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
static clf_status wait_range(clf_array *a, size_t p, size_t lo, size_t hi, int writes)
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
    clf_status st = wait_range(a, p, lo, lo + size, 1);
    if (st != CLF_SUCCESS)
        return st;
    struct clf__device *d = &a->fleet->dev[q->device];
    cl_event ev = NULL;
    st = clf__cmd_write(a->fleet, q->device, d->transfer, q->buf->mem, q->offset + lo, size,
                        (const char *)a->host + g * a->unit_bytes, "clf_array upload", 0, NULL,
                        &ev);
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
static clf_status refresh_device(clf_array *a, size_t p)
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
        size_t k[4], g[4], n[4], nr = part_runs(a, q, k, g, n);
        for (size_t r = 0; r < nr; r++) {
            /* The halo pieces of the run: before [0, hb) and after [hb + count, R). */
            size_t s0 = k[r], s1 = k[r] + n[r];
            size_t pieces[2][2] = {{0, q->halo_before},
                                   {q->halo_before + q->count, region_units(q)}};
            for (int h = 0; h < 2; h++) {
                    size_t lo, hi;
                if (!clip(s0, s1, pieces[h][0], pieces[h][1], &lo, &hi))
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
 * copy is current (refresh_device()). */
static clf_status part_ready(clf_array *a, size_t p)
{
    if (p >= a->nparts)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_array: part %zu of %zu", p, a->nparts);
    if (a->mapped)
        return clf__fail(CLF_ERROR_BUSY, "clf_array: the array is mapped (clf_array_unmap())");
    return refresh_device(a, p);
}

clf_status clf__array_ready(clf_array *a, size_t p, unsigned access)
{
    clf_status st = part_ready(a, p);
    if (st != CLF_SUCCESS)
        return st;
    return wait_range(a, p, 0, clf__array_part_bytes(a, p), (access & CLF_ARG_WRITE) != 0);
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

/* The parts whose halo holds global units [g0, g1) that part p owns (block arrays; p
 * itself when one part's periodic halo wraps onto its own units): their halo is stale. */
static void stale_neighbour_halos(clf_array *a, size_t p, size_t g0, size_t g1)
{
    (void)p;
    if (a->desc.dist != CLF_ARRAY_BLOCK)
        return;
    for (size_t j = 0; j < a->nparts; j++) {
        clf__array_part *q = &a->parts[j];
        if (!q->halo_before && !q->halo_after)
            continue;
        size_t k[4], g[4], n[4], nr = part_runs(a, q, k, g, n);
        for (size_t r = 0; r < nr; r++) {
            size_t s, e;
            if (!clip(g[r], g[r] + n[r], g0, g1, &s, &e))
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
        if (clip(lo, hi, olo, ohi, &s, &e)) {
            q->state &= ~(unsigned)CLF__PART_HOST_VALID;
            q->state |= CLF__PART_DEV_VALID;
            size_t u0 = q->first + (s - olo) / a->unit_bytes;
            size_t u1 = q->first + (e - olo + a->unit_bytes - 1) / a->unit_bytes;
            stale_neighbour_halos(a, p, u0, u1);
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

clf_status clf__array_sync(clf_array *a)
{
    clf_status st = CLF_SUCCESS;
    for (size_t p = 0; p < a->nparts; p++) {
        clf__array_part *q = &a->parts[p];
        for (size_t i = 0; i < q->nacc; i++) {
            clf_status s = clf_event_wait(q->acc[i].ev);
            if (st == CLF_SUCCESS)
                st = s;
            clf_event_release(q->acc[i].ev);
        }
        q->nacc = 0;
    }
    return st;
}

clf_status clf_array_finish(clf_array *a)
{
    if (!a)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_finish: arr is NULL");
    return clf__array_sync(a);
}

/* ---- host access ----------------------------------------------------------------------- */

/* A box, with the unused dimensions filled in (origin 0, region 1). */
typedef struct box {
    size_t o[3], r[3];
} box;

static clf_status get_box(const clf_array *a, const size_t *origin, const size_t *region,
                          box *b, const char *who)
{
    for (unsigned i = 0; i < 3; i++) {
        int used = i < a->desc.dims;
        b->o[i] = used && origin ? origin[i] : 0;
        b->r[i] = !used ? 1 : region ? region[i] : a->desc.shape[i] - b->o[i];
        if (used && region && region[i] == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: region[%u] is zero", who, i);
        size_t end;
        if (used && (b->o[i] >= a->desc.shape[i] || clf__add_overflow(b->o[i], b->r[i], &end) ||
                     end > a->desc.shape[i]))
            return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                             "%s: the box's dimension %u [%zu, +%zu) leaves the array's %zu",
                             who, i, b->o[i], b->r[i], a->desc.shape[i]);
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
    if (whole) {
        st = clf__cmd_write(a->fleet, q->device, d->transfer, q->buf->mem, q->offset + lo,
                            n * ub, h, "clf_array_write", 0, NULL, &ev);
    } else {
        size_t U = (q->offset + lo) / ub; /* offsets are whole units */
        size_t bo[3], ho[3] = {0, 0, 0}, rg[3], brow = a->desc.shape[0] * es;
        if (c == 1) {
            bo[0] = b->o[0] * es, bo[1] = U, bo[2] = 0;
            rg[0] = hrow, rg[1] = n, rg[2] = 1;
            st = clf__cmd_write_rect(a->fleet, q->device, d->transfer, q->buf->mem, bo, ho, rg,
                                     brow, 0, hrow, 0, h, "clf_array_write", 0, NULL, &ev);
        } else {
            bo[0] = b->o[0] * es, bo[1] = b->o[1], bo[2] = U;
            rg[0] = hrow, rg[1] = b->r[1], rg[2] = n;
            st = clf__cmd_write_rect(a->fleet, q->device, d->transfer, q->buf->mem, bo, ho, rg,
                                     brow, ub, hrow, hunit, h, "clf_array_write", 0, NULL, &ev);
        }
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
        size_t k[4], g[4], n[4], nr = part_runs(a, q, k, g, n);
        for (size_t r = 0; r < nr && st == CLF_SUCCESS; r++) {
            size_t s, e;
            if (!clip(g[r], g[r] + n[r], u0, u1, &s, &e))
                continue;
            size_t ks = k[r] + (s - g[r]);
            /* Upload what the host wrote before, then wait for the part's users. */
            st = refresh_device(a, p);
            if (st == CLF_SUCCESS)
                st = wait_range(a, p, ks * a->unit_bytes, (ks + e - s) * a->unit_bytes, 1);
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
        st = wait_range(a, p, lo, lo + size, 0);
        if (st != CLF_SUCCESS)
            break;
        struct clf__device *d = &a->fleet->dev[q->device];
        cl_event ev = NULL;
        st = clf__cmd_read(a->fleet, q->device, d->transfer, q->buf->mem, q->offset + lo, size,
                           (char *)a->host + q->first * a->unit_bytes, "clf_array fetch", 0,
                           NULL, &ev);
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

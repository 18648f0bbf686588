/*
 * Distributed arrays (clf_array): creation and part layout (the part geometry the other files
 * of lib/data use: region units, runs of global units), part info, and the array's end:
 * clf_array_finish() and clf_array_destroy() wait for its pending accesses (clf__array_sync()).
 * The per-part dependency records and device coherence are in deps.c, host access in host.c.
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
size_t clf__region_units(const clf__array_part *q)
{
    return q->halo_before + q->count + q->halo_after;
}

/* [*s, *e) = [a0, a1) intersected with [b0, b1); nonzero when that is not empty. */
int clf__clip(size_t a0, size_t a1, size_t b0, size_t b1, size_t *s, size_t *e)
{
    *s = a0 > b0 ? a0 : b0;
    *e = a1 < b1 ? a1 : b1;
    return *s < *e;
}

/* The region's units as runs of consecutive global units (a periodic halo wraps): run i is
 * region units [k[i], k[i] + n[i]) = global units [g[i], g[i] + n[i]). Returns the count. */
size_t clf__part_runs(const clf_array *a, const clf__array_part *q, size_t k[4], size_t g[4],
                      size_t n[4])
{
    size_t R = clf__region_units(q), kk = 0, nr = 0;
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
    if (d->flags & ~(unsigned)(CLF_ARRAY_PERIODIC | CLF_ARRAY_REBALANCE))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", who, d->flags);
    if ((d->flags & CLF_ARRAY_REBALANCE) && d->dist != CLF_ARRAY_BLOCK)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: CLF_ARRAY_REBALANCE needs CLF_ARRAY_BLOCK (it moves the block "
                         "boundaries)", who);
    /* A window's neighbours live in other processes, cut by them: moving its parts would
     * not move theirs (and clf_array_redistribute() refuses windows). */
    if ((d->flags & CLF_ARRAY_REBALANCE) && d->version >= 2 &&
        (d->window_units || d->window_first))
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "%s: CLF_ARRAY_REBALANCE on a window array (window_units): its "
                         "neighbours in the larger array are not moved with it", who);
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
        int learned = clf__device_weights(fl, d->kernel, devs, k, w);
        /* Devices that would slow every step down get no part. Learned weights are work
         * items per second of clf_launch(): an array unit is taken as one work item per
         * element (a stencil's), which makes them units per second, comparable with the
         * halo copies' estimated seconds. Guesses (compute units x clock) only count
         * by their ratios: a device is then left out only when its share would be
         * narrower than the halo. */
        size_t epu = ub / d->elem_size ? ub / d->elem_size : 1;
        double *sp = malloc(k * sizeof *sp);
        unsigned char *keep = calloc(k, 1);
        if (!sp || !keep) {
            free(sp);
            free(keep);
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
            goto out;
        }
        for (size_t i = 0; i < k; i++)
            sp[i] = learned ? w[i] / (double)epu : w[i];
        size_t halo = d->halo_before > d->halo_after ? d->halo_before : d->halo_after;
        double c = clf__halo_cost(d->halo_before + d->halo_after, ub, CLF__REBAL_BW_GUESS);
        clf__balance_keep(sp, devs, k, units, halo, (d->flags & CLF_ARRAY_PERIODIC) != 0, c,
                          learned, keep, L->bal.why, sizeof L->bal.why);
        for (size_t i = 0; i < k; i++)
            if (!keep[i])
                w[i] = 0;
        if (L->bal.why[0])
            clf__log(CLF_LOG_INFO, "%s: %s", who, L->bal.why);
        free(sp);
        free(keep);
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
            clf__split_units(units, w, k, cnt);
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
            if (clf__mul_overflow(clf__region_units(q), L->unit_bytes, &rb) ||
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
    clf__rebal_reset(a, 1);
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

clf_status clf_array_balance_info(clf_array_balance *out, const clf_array *a)
{
    if (!out || !a)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_balance_info: %s is NULL",
                         out ? "arr" : "out");
    *out = a->bal;
    return CLF_SUCCESS;
}

/* ---- the measurements of CLF_ARRAY_REBALANCE ---------------------------------------- */

void clf__rebal_step_free(clf__rebal_step *r)
{
    if (r->ev)
        for (size_t i = 0; i < r->nparts * CLF__REBAL_KPP; i++)
            clf_event_release(r->ev[i]);
    free(r->ev);
    free(r->count);
    memset(r, 0, sizeof *r);
}

/* The measurements of CLF_ARRAY_REBALANCE (rebalance.c) when the cut changed or the
 * array goes. */
void clf__rebal_reset(clf_array *a, int free_it)
{
    struct clf__rebal *R = a->rebal;
    if (!R)
        return;
    for (size_t i = 0; i < R->npend; i++)
        clf__rebal_step_free(&R->pend[i]);
    R->npend = 0;
    for (size_t i = 0; i < CLF__REBAL_KERNELS; i++)
        free(R->k[i].rate);
    memset(R->k, 0, sizeof R->k);
    R->nparts = R->since = 0;
    R->step_kernel[0] = 0;
    a->bal.samples = 0;
    a->bal.step_s = a->bal.best_s = 0;
    if (free_it) {
        free(R);
        a->rebal = NULL;
    }
}

/* ---- the end of pending accesses ------------------------------------------------------- */

/* Here rather than with the records (deps.c): destroy needs it, and deps.c and host.c build on
 * this file, never the other way (tools/layers.sh refuses files that depend on each other). */

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

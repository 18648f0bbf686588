/*
 * One kernel launch across the fleet: validate the description, choose the
 * devices' budgets and weights, cut the range (partition.c), run one worker
 * thread per device (worker.c), combine reductions and write the report.
 */
#include "exec.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>


#define CLF__BCAST_CACHE 16

/* ---- validation ---------------------------------------------------------------- */

/*
 * A per-work-group output: one element of a->unit bytes per group, at the group's linear id
 * (dimension 0 fastest). Along the split dimension s, group index j is the bytes
 * [j * unit, (j + 1) * unit) of each row, unit = bytes per group x groups of the dimensions
 * below s, rows of unit x groups along s: contiguous when s is the last dimension.
 */
static clf_status check_per_group(clf__launch *L, size_t i, const clf_arg *a)
{
    const clf_launch_desc *d = &L->desc;
    const char *k = d->kernel;
    if (!a->host)
        return clf__fail(CLF_ERROR_NULL_POINTER, "'%s' argument %zu: host array is NULL", k, i);
    if (a->unit == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: bytes per work-group is zero", k, i);
    if ((a->flags & CLF_ARG_CHUNK_INDEXED) || a->halo_before || a->halo_after || a->pitch)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: a per-group output takes no halo, pitch or "
                         "CLF_ARG_CHUNK_INDEXED",
                         k, i);
    if (d->local[0] == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: a per-group output needs a local size in the "
                         "launch description (the groups must not depend on the driver)",
                         k, i);
    uint64_t n[3] = {1, 1, 1}, groups = 1, below = 1, above = 1, need;
    for (unsigned x = 0; x < d->dims; x++) {
        if (d->global[x] % d->local[x])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s' argument %zu: a per-group output needs global sizes that are "
                             "multiples of the local size (dimension %u: %zu, %zu)",
                             k, i, x, d->global[x], d->local[x]);
        n[x] = d->global[x] / d->local[x];
        if (__builtin_mul_overflow(groups, n[x], &groups))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "'%s' argument %zu: the number of "
                             "work-groups overflows", k, i);
        if (x < L->split)
            below *= n[x];
        if (x > L->split)
            above *= n[x];
    }
    clf__layout *y = &L->lay[i];
    if (__builtin_mul_overflow(groups, (uint64_t)a->unit, &need) || need > SIZE_MAX ||
        __builtin_mul_overflow(below, (uint64_t)a->unit, &y->unit))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "'%s' argument %zu: %llu groups x %zu bytes "
                         "overflows", k, i, (unsigned long long)groups, a->unit);
    if (a->size < need)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: array of %zu bytes is shorter than the %llu "
                         "work-groups need (%zu bytes each = %llu)",
                         k, i, a->size, (unsigned long long)groups, a->unit,
                         (unsigned long long)need);
    y->scale = d->local[L->split];
    y->rows = above;
    y->pitch = above > 1 ? y->unit * n[L->split] : 0;
    y->bytes = need;
    return CLF_SUCCESS;
}

/* A strided partitioned array: rows of a->pitch bytes, each holding every split index. */
static clf_status check_pitch(clf__launch *L, size_t i, const clf_arg *a, size_t need)
{
    const char *k = L->desc.kernel;
    if (a->flags & CLF_ARG_CHUNK_INDEXED)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: a strided array (pitch %zu) cannot be "
                         "CLF_ARG_CHUNK_INDEXED",
                         k, i, a->pitch);
    if (a->pitch < need)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: pitch of %zu bytes is shorter than a row of the "
                         "range (%llu units x %zu bytes = %zu)",
                         k, i, a->pitch, (unsigned long long)L->end, a->unit, need);
    if (a->size % a->pitch || a->size < a->pitch)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: array of %zu bytes is not a whole number of rows "
                         "of %zu bytes (the pitch)",
                         k, i, a->size, a->pitch);
    clf__layout *y = &L->lay[i];
    y->pitch = a->pitch;
    y->rows = a->size / a->pitch;
    y->bytes = a->size;
    return CLF_SUCCESS;
}

static clf_status check_arg(clf__launch *L, size_t i, const clf_arg *a)
{
    const char *k = L->desc.kernel;
    if (a->reserved[0] || a->reserved[1])
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: reserved fields are not zero (fill clf_arg with the "
                         "CLF_IN, CLF_OUT, ... macros)",
                         k, i);
    if (a->kind == CLF_ARG_KIND_BUFFER)
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "'%s' argument %zu: a clf_buffer (CLF_BUF_IN/OUT/INOUT) is for "
                         "clf_kernel_enqueue() on its device; a launch takes host arrays", k, i);
    if (a->flags & CLF_ARG_WHOLE)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: a whole array (CLF_WHOLE_*) is a task queue's; a "
                         "launch partitions its arrays (CLF_IN, CLF_OUT, CLF_INOUT), and "
                         "CLF_BROADCAST gives every device the whole of a read-only one",
                         k, i);
    if (a->flags & ~(unsigned)(CLF_ARG_CHUNK_INDEXED | CLF_ARG_PRESERVE))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "'%s' argument %zu: unknown flags 0x%x", k,
                         i, a->flags);
    if ((a->flags & CLF_ARG_PRESERVE) && a->kind != CLF_ARG_KIND_OUT &&
        a->kind != CLF_ARG_KIND_OUT_PER_GROUP)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: CLF_ARG_PRESERVE is for outputs only", k, i);
    if (a->pitch && !clf__arg_partitioned(a))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s' argument %zu: a pitch is for partitioned arrays only", k, i);
    if (clf__arg_partitioned(a)) {
        clf__layout *y = &L->lay[i];
        y->unit = a->unit;
        y->pitch = 0;
        y->rows = y->scale = 1;
    }
    switch (a->kind) {
    case CLF_ARG_KIND_OUT_PER_GROUP:
        return check_per_group(L, i, a);
    case CLF_ARG_KIND_IN:
    case CLF_ARG_KIND_OUT:
    case CLF_ARG_KIND_INOUT: {
        size_t need;
        if (!a->host)
            return clf__fail(CLF_ERROR_NULL_POINTER, "'%s' argument %zu: host array is NULL", k,
                             i);
        if (a->unit == 0)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s' argument %zu: bytes per split unit is zero", k, i);
        if (L->end > SIZE_MAX || clf__mul_overflow((size_t)L->end, a->unit, &need))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW,
                             "'%s' argument %zu: %llu units x %zu bytes overflows", k, i,
                             (unsigned long long)L->end, a->unit);
        if (a->size < need)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s' argument %zu: array of %zu bytes is shorter than the range "
                             "needs (%llu units x %zu bytes = %zu)",
                             k, i, a->size, (unsigned long long)L->end, a->unit, need);
        if (a->kind == CLF_ARG_KIND_OUT && (a->halo_before || a->halo_after))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s' argument %zu: an output has no halo (only inputs read one)",
                             k, i);
        /* A halo may exceed the range (a 5x5 blur of a one-row image): it is clamped,
         * but a chunk's slot (chunk + halos) must still be countable. */
        size_t units;
        if (clf__add_overflow(a->halo_before, a->halo_after, &units) ||
            clf__add_overflow(units, (size_t)L->total, &units) ||
            clf__mul_overflow(units, a->unit, &units))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "'%s' argument %zu: halo overflows", k,
                             i);
        L->lay[i].bytes = need;
        return a->pitch ? check_pitch(L, i, a, need) : CLF_SUCCESS;
    }
    case CLF_ARG_KIND_BROADCAST:
    case CLF_ARG_KIND_SCALAR:
        if (!a->host)
            return clf__fail(CLF_ERROR_NULL_POINTER, "'%s' argument %zu: value is NULL", k, i);
        if (a->size == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "'%s' argument %zu: size is zero", k, i);
        return CLF_SUCCESS;
    case CLF_ARG_KIND_LOCAL:
        if (a->size == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "'%s' argument %zu: local size is zero", k, i);
        return CLF_SUCCESS;
    case CLF_ARG_KIND_REDUCE: {
        size_t es = clf_type_size((clf_type)a->type), bytes;
        if (!a->host)
            return clf__fail(CLF_ERROR_NULL_POINTER, "'%s' argument %zu: result is NULL", k, i);
        if (es == 0 || a->op < CLF_REDUCE_SUM || a->op > CLF_REDUCE_MAX)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s' argument %zu: unknown reduction type %u or operation %u", k,
                             i, a->type, a->op);
        if (a->size == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "'%s' argument %zu: zero elements", k, i);
        if (clf__mul_overflow(a->size, es, &bytes))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "'%s' argument %zu: size overflows", k, i);
        return CLF_SUCCESS;
    }
    }
    return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "'%s' argument %zu: unknown kind %u", k, i,
                     a->kind);
}

static clf_status check_desc(clf__launch *L, const clf_launch_desc *d)
{
    if (!d->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_launch_desc.kernel is NULL");
    if (d->dims < 1 || d->dims > 3)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "dims is %u (1, 2 or 3)", d->dims);
    if (d->split_dim > d->dims)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s': split_dim is %u: CLF_SPLIT_DIM(%u) names no dimension of a %uD "
                         "range (CLF_SPLIT_DEFAULT or CLF_SPLIT_DIM(0 .. %u))",
                         d->kernel, d->split_dim, d->split_dim - 1, d->dims, d->dims - 1);
    const unsigned split = d->split_dim ? d->split_dim - 1 : d->dims - 1;
    int has_local = d->local[0] != 0;
    for (unsigned k = 0; k < d->dims; k++) {
        if (d->global[k] == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "'%s': global size %u is zero", d->kernel, k);
        if ((d->local[k] != 0) != has_local)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s': give a local size for every dimension or for none",
                             d->kernel);
        /* As OpenCL requires, in every dimension: the split one included, so that every
         * chunk (a multiple of the local size, the last one too) keeps the user's local
         * size, and get_group_id() counts groups as on one device (cl/clfleet.h). */
        if (has_local && d->global[k] % d->local[k])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "'%s': global size %zu of dimension %u is not a multiple of the "
                             "local size %zu",
                             d->kernel, d->global[k], k, d->local[k]);
    }
    L->split = split;
    L->total = L->end = d->global[L->split];
    if (d->range_units || d->range_first) {
        if (d->range_units == 0 || d->range_first > L->end ||
            d->range_units > L->end - d->range_first)
            return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                             "'%s': sub-range [%zu, %zu + %zu) is not a non-empty part of the "
                             "%llu units of dimension %u",
                             d->kernel, d->range_first, d->range_first, d->range_units,
                             (unsigned long long)L->end, split);
        L->first = d->range_first;
        L->total = d->range_units;
    }
    L->per_unit = 1;
    for (unsigned k = 0; k < d->dims; k++)
        if (k != L->split &&
            __builtin_mul_overflow(L->per_unit, (uint64_t)d->global[k], &L->per_unit))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "'%s': the range overflows", d->kernel);
    /* Chunks are multiples of both the local size and the granularity. */
    uint64_t g = d->granularity ? d->granularity : 1, l = has_local ? d->local[L->split] : 1;
    if (__builtin_mul_overflow(g / clf__gcd(g, l), l, &L->gran))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "'%s': granularity overflows", d->kernel);
    if (L->first % L->gran || (L->total != L->end - L->first && L->total % L->gran))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s': sub-range [%llu, +%llu) is not made of multiples of the local "
                         "size and granularity along dimension %u (%llu)",
                         d->kernel, (unsigned long long)L->first, (unsigned long long)L->total,
                         split, (unsigned long long)L->gran);
    if (d->mem_safety < 0 || d->mem_safety > 1 || isnan(d->mem_safety))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "mem_safety %g is not in (0, 1]",
                         d->mem_safety);
    if ((unsigned)d->weights_mode > CLF_WEIGHTS_USER)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "unknown weights mode %d",
                         (int)d->weights_mode);
    if (d->weights_mode == CLF_WEIGHTS_USER && !d->weights)
        return clf__fail(CLF_ERROR_NULL_POINTER, "CLF_WEIGHTS_USER with NULL weights");
    return CLF_SUCCESS;
}

/*
 * Without a local size, pick one: drivers such as PoCL compile a kernel
 * variant for every work-group size they are handed, and chunks of many
 * lengths would each bring their own (and groups of one run slowly). Along
 * the split dimension: with no granularity either, up to 64 when the range
 * gives every device several chunks, and chunks become multiples of it; with
 * a granularity, the largest power of two up to 64 that divides it, so chunk
 * boundaries stay where the user asked. Across dimension 0 of a 2D or 3D
 * range: a divisor of its size up to 64.
 *
 * Every chunk offset is a multiple of the chunk's local size along the split
 * dimension, as get_group_id() needs (cl/clfleet.h): chunks are multiples of
 * it, and a final chunk that is not runs with the largest power of two that
 * divides it (worker.c), which divides the power of two l that its offset is
 * a multiple of. A kernel that reads get_num_groups() or get_global_size()
 * must see one local size in every chunk (as on one device, number of groups
 * x local size = global size): l then also divides the range.
 */
static void auto_local(clf__launch *L)
{
    clf_launch_desc *d = &L->desc;
    if (d->local[0] != 0)
        return;
    L->auto_local = 1;
    for (unsigned k = 0; k < d->dims; k++)
        d->local[k] = 1;
    if (L->split == 0) {
        uint64_t l = 64;
        if (d->granularity)
            while (d->granularity % l)
                l /= 2;
        else
            while (l > 1 && L->total < l * 8 * L->ndev)
                l /= 2;
        if (clf__program_range_arg(L->prog, d->kernel))
            while ((L->total | L->end) % l)
                l /= 2;
        while (L->first % l) /* a sub-range's chunks start at multiples of l too */
            l /= 2;
        d->local[0] = (size_t)l;
        L->gran = L->gran / clf__gcd(L->gran, l) * l;
    } else {
        for (size_t l = 64; l > 1; l--)
            if (d->global[0] % l == 0) {
                d->local[0] = l;
                break;
            }
    }
}

static clf_status choose_devices(clf__launch *L)
{
    const clf_launch_desc *d = &L->desc;
    clf_fleet *fl = L->fl;
    if (d->devices) {
        if (d->num_devices == 0)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "devices given but num_devices is 0");
        if (d->num_devices > CLF_MAX_LAUNCH_DEVICES)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "more than %d devices in one launch",
                             CLF_MAX_LAUNCH_DEVICES);
        for (size_t i = 0; i < d->num_devices; i++) {
            if (d->devices[i] >= fl->ndev)
                return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                                 "launch device %zu is %zu, the fleet has %zu", i,
                                 d->devices[i], fl->ndev);
            for (size_t j = 0; j < i; j++)
                if (d->devices[j] == d->devices[i])
                    return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "device %zu listed twice",
                                     d->devices[i]);
            L->dev[i] = d->devices[i];
        }
        L->ndev = d->num_devices;
    } else {
        L->ndev = fl->ndev < CLF_MAX_LAUNCH_DEVICES ? fl->ndev : CLF_MAX_LAUNCH_DEVICES;
        for (size_t i = 0; i < L->ndev; i++)
            L->dev[i] = i;
    }
    if (d->weights_mode == CLF_WEIGHTS_USER) {
        int any = 0;
        for (size_t i = 0; i < L->ndev; i++) {
            if (!isfinite(d->weights[i]) || d->weights[i] < 0)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "weight %zu is %g", i,
                                 d->weights[i]);
            any |= d->weights[i] > 0;
        }
        if (!any)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "every weight is zero");
    }
    return CLF_SUCCESS;
}

/* ---- memory budgets ---------------------------------------------------------------- */

void clf__launch_footprint(const clf__launch *L, uint64_t *fixed, uint64_t *per_unit,
                           uint64_t *halo_units)
{
    *fixed = *per_unit = *halo_units = 0;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (clf__arg_partitioned(a) && (a->flags & CLF_ARG_CHUNK_INDEXED)) {
            *per_unit += 2 * (uint64_t)a->unit; /* two slots: double buffering */
            *halo_units += 2 * (uint64_t)(a->halo_before + a->halo_after) * a->unit;
        } else if (clf__arg_partitioned(a)) {
            *fixed += L->lay[i].bytes; /* the whole array, strided or per group too */
        } else if (a->kind == CLF_ARG_KIND_BROADCAST) {
            *fixed += a->size;
        } else if (a->kind == CLF_ARG_KIND_REDUCE) {
            *fixed += (uint64_t)a->size * clf_type_size((clf_type)a->type);
        }
    }
}

/* A plane's budgets: the largest chunk each device can hold is the plane's business. */
static clf_status plane_budgets(clf__launch *L, uint64_t *max_units)
{
    double safety = L->desc.mem_safety > 0 ? L->desc.mem_safety : 0.8;
    int any = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        const clf_device_info *in = &L->fl->dev[L->dev[i]].info;
        uint64_t b = (uint64_t)((double)in->global_mem * safety);
        if (L->desc.mem_limits && L->desc.mem_limits[i] && L->desc.mem_limits[i] < b)
            b = L->desc.mem_limits[i];
        L->w[i].budget = b;
        max_units[i] = L->w[i].max_units = L->excluded[i] ? 0 : L->plane->max_units(L, in, b);
        any |= max_units[i] >= (L->gran < L->total ? L->gran : L->total);
    }
    if (!any)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "'%s': no device can hold one chunk: %s; budget of device %zu: %llu "
                         "bytes, largest allocation %llu",
                         L->desc.kernel, L->need ? L->need : "?", L->dev[0],
                         (unsigned long long)L->w[0].budget,
                         (unsigned long long)L->fl->dev[L->dev[0]].info.max_alloc);
    return CLF_SUCCESS;
}

/* Budget and the largest chunk each device can hold; fails when no device can hold any. */
static clf_status budgets(clf__launch *L, uint64_t *max_units)
{
    uint64_t fixed, per_unit, halo;
    if (L->plane->max_units)
        return plane_budgets(L, max_units);
    clf__launch_footprint(L, &fixed, &per_unit, &halo);
    double safety = L->desc.mem_safety > 0 ? L->desc.mem_safety : 0.8;
    int any = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        const clf_device_info *in = &L->fl->dev[L->dev[i]].info;
        if (L->excluded[i]) { /* takes no work */
            L->w[i].budget = 0;
            max_units[i] = L->w[i].max_units = 0;
            continue;
        }
        uint64_t b = (uint64_t)((double)in->global_mem * safety);
        if (L->desc.mem_limits && L->desc.mem_limits[i] && L->desc.mem_limits[i] < b)
            b = L->desc.mem_limits[i];
        L->w[i].budget = b;
        uint64_t m = 0;
        int fits = fixed + halo <= b;
        for (size_t a = 0; a < L->nargs && fits; a++) /* each global-indexed buffer */
            if (clf__arg_partitioned(&L->args[a]) && !(L->args[a].flags & CLF_ARG_CHUNK_INDEXED))
                fits = L->lay[a].bytes <= in->max_alloc;
        if (fits)
            m = per_unit ? (b - fixed - halo) / per_unit : UINT64_MAX;
        /* One slot of a chunk-indexed argument must also fit one allocation. */
        for (size_t a = 0; a < L->nargs && m; a++) {
            const clf_arg *x = &L->args[a];
            if (clf__arg_partitioned(x) && (x->flags & CLF_ARG_CHUNK_INDEXED)) {
                uint64_t cap = in->max_alloc / x->unit;
                uint64_t h = x->halo_before + x->halo_after;
                m = cap <= h ? 0 : (cap - h < m ? cap - h : m);
            }
        }
        max_units[i] = m;
        L->w[i].max_units = m;
        any |= m >= (L->gran < L->total ? L->gran : L->total);
    }
    if (!any)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "'%s': no device can hold one chunk: %llu bytes are needed on every "
                         "device (global-indexed arrays, broadcasts, reductions) plus %llu "
                         "per unit; device budget %llu (make large arrays chunk-indexed to "
                         "stream them)",
                         L->desc.kernel, (unsigned long long)(fixed + halo),
                         (unsigned long long)per_unit, (unsigned long long)L->w[0].budget);
    return CLF_SUCCESS;
}

/* ---- weights and strategy ------------------------------------------------------------- */

void clf__perf_device_key(const struct clf__device *d, char *buf, size_t n)
{
    snprintf(buf, n, "%s|%s|cu=%u", d->info.name, d->info.driver_version, d->info.compute_units);
}

static void kernel_key(const clf__launch *L, char *buf, size_t n)
{
    if (L->key)
        snprintf(buf, n, "%s", L->key);
    else
        snprintf(buf, n, "%s@%.16s", L->desc.kernel, L->prog->hash);
}

clf__perf_model *clf__fleet_perf(clf_fleet *fl)
{
    clf__exec_state *X = clf__exec_state_of(fl);
    if (!X)
        return NULL;
    pthread_mutex_lock(&X->lock);
    if (!X->perf) {
        char path[4096];
        int persist = fl->cache_dir &&
                      snprintf(path, sizeof path, "%s/" CLF__PERF_FILE, fl->cache_dir) <
                          (int)sizeof path;
        if (clf__perf_open(&X->perf, persist ? path : NULL) != CLF_SUCCESS)
            clf__perf_open(&X->perf, NULL); /* unreadable file: learn in memory */
    }
    clf__perf_model *m = X->perf;
    pthread_mutex_unlock(&X->lock);
    return m;
}

/* A device's speed until measured: compute units x clock. */
static double guess_weight(const clf_device_info *in)
{
    return (double)(in->compute_units ? in->compute_units : 1) *
           (in->clock_mhz ? in->clock_mhz : 1000);
}

/* Weights for STATIC, GUIDED and MEMORY_AWARE; returns 1 when learned for every device. */
static int choose_weights(clf__launch *L, char *reason, size_t n)
{
    const clf_launch_desc *d = &L->desc;
    if (d->weights_mode == CLF_WEIGHTS_USER) {
        memcpy(L->weights, d->weights, L->ndev * sizeof *L->weights);
        snprintf(reason, n, "user weights");
        return 0;
    }
    for (size_t i = 0; i < L->ndev; i++)
        L->weights[i] = 1.0;
    if (d->weights_mode == CLF_WEIGHTS_EQUAL) {
        snprintf(reason, n, "equal weights");
        return 0;
    }
    char kkey[300], dkeys[CLF_MAX_LAUNCH_DEVICES][400];
    const char *dk[CLF_MAX_LAUNCH_DEVICES];
    double learned[CLF_MAX_LAUNCH_DEVICES];
    kernel_key(L, kkey, sizeof kkey);
    for (size_t i = 0; i < L->ndev; i++) {
        clf__perf_device_key(&L->fl->dev[L->dev[i]], dkeys[i], sizeof dkeys[i]);
        dk[i] = dkeys[i];
    }
    clf__perf_model *m = clf__fleet_perf(L->fl);
    if (m && clf__perf_weights(m, kkey, L->ndev, dk, learned) == L->ndev) {
        memcpy(L->weights, learned, L->ndev * sizeof *learned);
        snprintf(reason, n, "learned weights");
        return 1;
    }
    /* Until measured: compute units x clock, a fair guess for devices of one kind. */
    for (size_t i = 0; i < L->ndev; i++)
        L->weights[i] = guess_weight(&L->fl->dev[L->dev[i]].info);
    snprintf(reason, n, "weights from compute units x clock (not learned yet)");
    return 0;
}

int clf__device_weights(clf_fleet *fl, const char *kernel, const size_t *dev, size_t ndev,
                        double *w)
{
    clf__perf_model *m = kernel ? clf__fleet_perf(fl) : NULL;
    const char **dk = m ? calloc(ndev, sizeof *dk) : NULL;
    char(*keys)[400] = dk ? calloc(ndev, sizeof *keys) : NULL;
    int learned = 0;
    if (keys) {
        for (size_t i = 0; i < ndev; i++) {
            clf__perf_device_key(&fl->dev[dev[i]], keys[i], sizeof keys[i]);
            dk[i] = keys[i];
        }
        learned = clf__perf_weights_named(m, kernel, ndev, dk, w) == ndev;
    }
    free(keys);
    free(dk);
    if (!learned)
        for (size_t i = 0; i < ndev; i++)
            w[i] = guess_weight(&fl->dev[dev[i]].info);
    return learned;
}

/* The kernel's entry in the fleet's ring of what launches taught (under X->lock), created
 * when asked (the oldest kernel's place is taken), or NULL. */
static struct clf__kernel_seen *kernel_entry(clf__launch *L, int create)
{
    char key[96];
    kernel_key(L, key, sizeof key);
    clf__exec_state *fl = L->X;
    size_t n = fl->nstatic_eff < CLF__ARRAY_LEN(fl->static_eff) ? fl->nstatic_eff
                                                               : CLF__ARRAY_LEN(fl->static_eff);
    size_t i = 0;
    while (i < n && strcmp(fl->static_eff[i].key, key) != 0)
        i++;
    if (i < n)
        return &fl->static_eff[i];
    if (!create)
        return NULL;
    i = fl->nstatic_eff++ % CLF__ARRAY_LEN(fl->static_eff);
    snprintf(fl->static_eff[i].key, sizeof fl->static_eff[i].key, "%s", key);
    for (size_t k = 0; k < CLF__ARRAY_LEN(fl->static_eff[i].efficiency); k++)
        fl->static_eff[i].efficiency[k] = -1;
    fl->static_eff[i].unit_s = -1;
    return &fl->static_eff[i];
}

/* The efficiency the kernel's last launch under partition strategy ps reached on this fleet
 * (set: record value), or -1 when none did. */
static double strategy_efficiency(clf__launch *L, clf__part_strategy ps, int set, double value)
{
    double e = -1;
    pthread_mutex_lock(&L->X->lock);
    struct clf__kernel_seen *k = kernel_entry(L, set);
    if (k && set)
        k->efficiency[ps] = value;
    else if (k)
        e = k->efficiency[ps];
    pthread_mutex_unlock(&L->X->lock);
    return e;
}

/* Kernel seconds per unit, over all the devices of the kernel's last launch (set: record
 * value), or -1. */
static double kernel_unit_s(clf__launch *L, int set, double value)
{
    double t = -1;
    pthread_mutex_lock(&L->X->lock);
    struct clf__kernel_seen *k = kernel_entry(L, set);
    if (k && set)
        k->unit_s = value;
    else if (k)
        t = k->unit_s;
    pthread_mutex_unlock(&L->X->lock);
    return t;
}

/*
 * Whether AUTO should leave strategy ps (static or guided, by what it knows) for dynamic on this
 * kernel: when ps balanced it worse than dynamic did, or, before dynamic has run, below 0.9
 * (throughput per unit is not uniform over the range: shares by speed and large first chunks
 * cannot balance it, chunks pulled on demand can). Writes the figures behind it to why.
 */
static int worse_than_dynamic(clf__launch *L, clf__part_strategy ps, char *why, size_t n)
{
    double e = strategy_efficiency(L, ps, 0, 0), dyn = strategy_efficiency(L, CLF__PART_DYNAMIC,
                                                                           0, 0);
    if (e < 0)
        return 0;
    /* A margin: two runs of one balancing differ by a few percent on a loaded host (static
     * 0.93 against dynamic 0.96 on a regular kernel, measured), and static's one chunk per
     * device is the cheapest where it balances. */
    int worse = dyn >= 0 ? e < dyn - 0.05 : e < 0.9;
    if (worse && dyn >= 0)
        snprintf(why, n, "%s balanced this kernel to efficiency %.2f, dynamic to %.2f",
                 clf__part_strategy_name(ps), e, dyn);
    else if (worse)
        snprintf(why, n, "%s balanced this kernel to efficiency %.2f",
                 clf__part_strategy_name(ps), e);
    return worse;
}

/*
 * A launch too small to split (AUTO): cutting it adds a chunk's cost on every device (tens of
 * microseconds on PoCL: a thread, buffers, an enqueue and a wait each) and saves at most a
 * share of a kernel that is as short. "Too small": the kernel time per unit its last launch
 * measured (profiling, over all its devices) predicts under CLF__SMALL_LAUNCH_S; before any
 * launch of it, at most CLF__SMALL_LAUNCH_ITEMS work-items. (The throughput model's figures
 * include each launch's overheads, so they would call every small launch long.) Returns the
 * device to run it on alone: the fastest by learned throughput when every device's is known,
 * else the one of most compute units x clock (the first of equals), among those whose budget
 * holds the whole range; or L->ndev to split it.
 * why says which figures decided.
 */
#define CLF__SMALL_LAUNCH_S 100e-6
#define CLF__SMALL_LAUNCH_ITEMS 8192

static size_t too_small(clf__launch *L, const uint64_t *max_units, char *why, size_t n)
{
    size_t best = L->ndev, usable = 0;
    double unit_s = kernel_unit_s(L, 0, 0);
    uint64_t items;
    if (__builtin_mul_overflow(L->total, L->per_unit, &items))
        return L->ndev;
    if (unit_s >= 0 && !((double)L->total * unit_s < CLF__SMALL_LAUNCH_S))
        return L->ndev;
    if (unit_s < 0 && items > CLF__SMALL_LAUNCH_ITEMS)
        return L->ndev;
    /* L->weights: learned throughputs when known for every device, else compute units x
     * clock (choose_weights()). */
    for (size_t i = 0; i < L->ndev; i++) {
        if (L->excluded[i] || max_units[i] < L->total)
            continue;
        usable++;
        if (best == L->ndev || L->weights[i] > L->weights[best])
            best = i;
    }
    if (usable < 2)
        return L->ndev; /* nothing to choose, or memory-aware's business */
    if (unit_s >= 0)
        snprintf(why, n, "its kernel ran %.1f us, under %.0f us", (double)L->total * unit_s * 1e6,
                 CLF__SMALL_LAUNCH_S * 1e6);
    else
        snprintf(why, n, "%llu work-items, at most %d before a launch of it is measured",
                 (unsigned long long)items, CLF__SMALL_LAUNCH_ITEMS);
    return best;
}

static clf_status choose_strategy(clf__launch *L, const uint64_t *max_units,
                                  clf_launch_report *rep)
{
    clf_strategy s = L->desc.strategy;
    if (s == CLF_STRATEGY_DEFAULT)
        s = L->fl->strategy; /* $CLFLEET_STRATEGY, parsed by clf_fleet_create() */
    if ((unsigned)s > CLF_STRATEGY_AUTO)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "unknown strategy %d", (int)s);
    rep->requested = s;
    char wreason[100];
    int learned = choose_weights(L, wreason, sizeof wreason);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->excluded[i])
            L->weights[i] = 0;
    if (s == CLF_STRATEGY_AUTO) {
        double wsum = 0;
        int tight = 0;
        char why[128];
        size_t one;
        for (size_t i = 0; i < L->ndev; i++)
            wsum += L->weights[i];
        for (size_t i = 0; i < L->ndev; i++)
            tight |= (double)max_units[i] < (double)L->total * L->weights[i] / wsum;
        if (tight) {
            s = CLF_STRATEGY_MEMORY_AWARE;
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: memory-aware (a device's share exceeds its memory budget); %s",
                     wreason);
        } else if (L->ndev > 1 && L->prog &&
                   (one = too_small(L, max_units, why, sizeof why)) < L->ndev) {
            /* One chunk on one device; the others stand by in case it fails (run()). */
            s = CLF_STRATEGY_STATIC;
            L->small = 1;
            for (size_t i = 0; i < L->ndev; i++) {
                L->weights[i] = i == one;
                L->held[i] = i != one && !L->excluded[i];
            }
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: static on device %zu alone (too small to split: %s)", L->dev[one],
                     why);
        } else if (worse_than_dynamic(L, learned ? CLF__PART_STATIC : CLF__PART_GUIDED, why,
                                      sizeof why)) {
            s = CLF_STRATEGY_DYNAMIC;
            snprintf(rep->reason, sizeof rep->reason, "auto: dynamic (%s); %s", why, wreason);
        } else if (learned) {
            s = CLF_STRATEGY_STATIC;
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: static (throughput learned for every device); %s", wreason);
        } else {
            s = CLF_STRATEGY_GUIDED;
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: guided (throughput not learned yet); %s", wreason);
        }
    } else {
        snprintf(rep->reason, sizeof rep->reason, "%s; %s", clf_strategy_name(s), wreason);
    }
    if (L->reason_tail) {
        size_t len = strlen(rep->reason);
        snprintf(rep->reason + len, sizeof rep->reason - len, "; %s", L->reason_tail);
    }
    rep->strategy = s;
    L->part_strategy = s == CLF_STRATEGY_STATIC    ? CLF__PART_STATIC
                       : s == CLF_STRATEGY_DYNAMIC ? CLF__PART_DYNAMIC
                       : s == CLF_STRATEGY_GUIDED  ? CLF__PART_GUIDED
                                          : CLF__PART_MEMORY_AWARE;
    return CLF_SUCCESS;
}

/* ---- broadcast cache ----------------------------------------------------------------- */

/* 64-bit FNV-1a over words: fast enough to run on every launch, to see a changed array. */
static uint64_t content_hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static void bcast_release(clf_fleet *fl, struct clf__bcast *b)
{
    for (size_t d = 0; d < fl->ndev; d++)
        if (b->mem[d]) {
            clReleaseMemObject(b->mem[d]);
            clf__metrics_free(fl, d, b->size);
            b->mem[d] = NULL;
        }
}

/* The cache entry of a broadcast array, emptied when its content changed. */
static clf_status bcast_entry(clf_fleet *fl, clf__exec_state *X, const clf_arg *a,
                              struct clf__bcast **out)
{
    uint64_t h = content_hash(a->host, a->size);
    clf_status st = CLF_SUCCESS;
    pthread_mutex_lock(&X->lock);
    struct clf__bcast *b = NULL;
    for (size_t i = 0; i < X->nbcast && !b; i++)
        if (X->bcast[i].host == a->host && X->bcast[i].size == a->size)
            b = &X->bcast[i];
    if (!b) {
        if (!X->bcast) {
            X->bcast = calloc(CLF__BCAST_CACHE, sizeof *X->bcast);
            if (!X->bcast) {
                st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "broadcast: out of memory");
                goto out;
            }
        }
        if (X->nbcast == CLF__BCAST_CACHE) { /* evict the oldest */
            bcast_release(fl, &X->bcast[0]);
            cl_mem *keep = X->bcast[0].mem;
            memmove(X->bcast, X->bcast + 1, (CLF__BCAST_CACHE - 1) * sizeof *X->bcast);
            X->bcast[--X->nbcast].mem = keep;
        }
        b = &X->bcast[X->nbcast];
        if (!b->mem && !(b->mem = calloc(fl->ndev, sizeof *b->mem))) {
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "broadcast: out of memory");
            goto out;
        }
        X->nbcast++;
        b->host = a->host;
        b->size = a->size;
        b->hash = h;
    } else if (b->hash != h) {
        bcast_release(fl, b);
        b->hash = h;
    }
    *out = b;
out:
    pthread_mutex_unlock(&X->lock);
    return st;
}

/* ---- the launch state on the fleet ---------------------------------------------------- */

static void *exec_state_create(clf_fleet *fl)
{
    (void)fl;
    clf__exec_state *X = calloc(1, sizeof *X);
    if (!X)
        return NULL;
    if (pthread_mutex_init(&X->lock, NULL) != 0) {
        free(X);
        return NULL;
    }
    if (pthread_cond_init(&X->turn, NULL) != 0) {
        pthread_mutex_destroy(&X->lock);
        free(X);
        return NULL;
    }
    if (pthread_cond_init(&X->queued, NULL) != 0) {
        pthread_cond_destroy(&X->turn);
        pthread_mutex_destroy(&X->lock);
        free(X);
        return NULL;
    }
    return X;
}

static void dispatcher_stop(clf__exec_state *X);

/* The teardown's first finalizer: launches still queued or running complete (they use the
 * caller's arrays and the fleet's queues), then the dispatcher goes and the caches are freed
 * (the per-device threads and kept buffers next, by their own finalizers). */
static void exec_state_fini(clf_fleet *fl, void *state)
{
    clf__exec_state *X = state;
    pthread_mutex_lock(&X->lock);
    while (X->serving != X->next_ticket) /* launches still queued or running */
        pthread_cond_wait(&X->turn, &X->lock);
    pthread_mutex_unlock(&X->lock);
    dispatcher_stop(X);
    for (size_t i = 0; i < CLF__BCAST_CACHE && X->bcast; i++) {
        if (i < X->nbcast)
            bcast_release(fl, &X->bcast[i]);
        free(X->bcast[i].mem);
    }
    free(X->bcast);
    if (X->perf) {
        clf__perf_save(X->perf); /* best effort: learning is an optimisation */
        clf__perf_close(X->perf);
    }
    pthread_cond_destroy(&X->queued);
    pthread_cond_destroy(&X->turn);
    pthread_mutex_destroy(&X->lock);
    free(X);
}

static const clf__state_key exec_key = {"launches", CLF__STATE_DRAIN, exec_state_create,
                                        exec_state_fini};

clf__exec_state *clf__exec_state_of(clf_fleet *fl)
{
    return clf__fleet_state(fl, &exec_key);
}

/* ---- the launch ------------------------------------------------------------------------ */

void clf__report_balance(clf_launch_report *rep)
{
    double lo = INFINITY, hi = 0, sum = 0;
    size_t busy = 0;
    for (size_t i = 0; i < rep->num_devices; i++) {
        const clf_device_report *r = &rep->dev[i];
        if (r->units) {
            lo = r->finish_s < lo ? r->finish_s : lo;
            hi = r->finish_s > hi ? r->finish_s : hi;
            sum += r->finish_s;
            busy++;
        }
    }
    rep->makespan_s = hi;
    rep->efficiency = busy && hi > 0 ? lo / hi : 1.0;
    rep->imbalance = busy && sum > 0 ? hi / (sum / (double)busy) - 1.0 : 0.0;
}

static void fill_report(clf__launch *L, clf_launch_report *rep)
{
    rep->total_units = L->total;
    rep->num_devices = L->ndev;
    for (size_t i = 0; i < L->ndev; i++) {
        clf_device_report *r = &rep->dev[i];
        *r = L->w[i].rep;
        r->device = L->dev[i];
        r->share = (double)r->units / (double)L->total;
        r->mem_peak = L->w[i].mem_peak;
        r->mem_budget = L->w[i].budget;
        rep->done_units += r->units;
        rep->requeued_units += r->requeued_units;
        rep->failed_devices += r->failed != 0;
    }
    clf__report_balance(rep);
}

static void learn(clf__launch *L)
{
    pthread_mutex_lock(&L->X->lock);
    clf__perf_model *m = L->X->perf; /* opened by choose_weights() when weights are learned */
    pthread_mutex_unlock(&L->X->lock);
    if (!m)
        return;
    char kkey[300], dkey[400];
    kernel_key(L, kkey, sizeof kkey);
    for (size_t i = 0; i < L->ndev; i++) {
        const clf__worker *w = &L->w[i];
        double t = w->rep.finish_s - w->t_start;
        if (w->rep.units && !w->rep.failed && t > 0) {
            /* A plane's work per unit (the GEMM's MFLOP per row or column of C). */
            uint64_t work = w->rep.units;
            if (L->learn_scale > 0) {
                double x = (double)w->rep.units * L->learn_scale;
                work = x >= 1 ? (uint64_t)llround(x) : 1;
            }
            clf__perf_device_key(w->d, dkey, sizeof dkey);
            clf__perf_record(m, kkey, dkey, work, t);
        }
    }
}

/*
 * A broadcast is one read-only copy per device, cached between launches: a kernel that wrote
 * it would lose its writes (or leave the next launch a stale copy). Its parameter must be
 * __constant or point to const. Programs are built with -cl-kernel-arg-info (program.c);
 * a driver that still has no argument information is trusted.
 */
static clf_status check_broadcast_const(const clf__launch *L, cl_kernel k, size_t i)
{
    cl_kernel_arg_address_qualifier aq;
    cl_kernel_arg_type_qualifier tq;
    char name[128];
    if (!clf__kernel_param(k, i, &aq, &tq, name, sizeof name))
        return CLF_SUCCESS; /* no argument information: nothing to check */
    if (aq == CL_KERNEL_ARG_ADDRESS_CONSTANT || (tq & CL_KERNEL_ARG_TYPE_CONST))
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                     "kernel '%s' argument %zu%s%s%s is a broadcast (read only, one cached copy "
                     "per device) but its parameter may be written: declare it const (or "
                     "__constant)",
                     L->desc.kernel, i, name[0] ? " '" : "", name, name[0] ? "'" : "");
}

/* Check the kernel exists, takes as many arguments as given and no broadcast it could
 * write, and that every device of the launch takes the user's local size, before any
 * thread starts. */
static clf_status check_kernel(clf__launch *L)
{
    int hidden = clf__program_range_arg(L->prog, L->desc.kernel);
    int checked_args = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        if (L->excluded[i]) /* exclude() leaves at least one */
            continue;
        struct clf__device *d = &L->fl->dev[L->dev[i]];
        cl_kernel k;
        clf_status st = clf__cmd_kernel_create(L->fl, d->index, L->prog, L->desc.kernel, NULL, 0,
                                               NULL, &k);
        if (st != CLF_SUCCESS)
            return st;
        cl_int err;
        cl_uint n = 0;
        if (!checked_args++) {
            /* The hidden range parameter (core/rangearg.c) is clfleet's, not the user's. */
            err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL);
            if (err == CL_SUCCESS && n != L->nargs + (size_t)hidden)
                st = clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                               "kernel '%s' takes %u arguments, %zu given", L->desc.kernel,
                               n - (cl_uint)(hidden && n), L->nargs);
            for (size_t a = 0; a < L->nargs && st == CLF_SUCCESS; a++)
                if (L->args[a].kind == CLF_ARG_KIND_BROADCAST)
                    st = check_broadcast_const(L, k, a);
        }
        if (st == CLF_SUCCESS && !L->auto_local)
            st = clf__check_local(L->desc.kernel, L->desc.dims, L->desc.local, d, k);
        clReleaseKernel(k);
        if (st != CLF_SUCCESS || L->auto_local) /* clfleet's local size needs no check */
            return st;
    }
    return CLF_SUCCESS;
}

/*
 * A kernel whose definition the source scan did not find (core/rangearg.c) has no hidden
 * range parameter: in chunks, get_global_size() and get_num_groups() could not give the
 * range's sizes. Such a launch is refused unless it surely runs as one chunk.
 */
static clf_status check_range_known(const clf__launch *L, const uint64_t *max_units)
{
    int sub = L->first || (L->end && L->total != L->end); /* no chunk is the whole range */
    if (!L->prog || !clf__program_range_unknown(L->prog, L->desc.kernel) ||
        (L->total <= L->gran && !sub))
        return CLF_SUCCESS;
    size_t active = 0, only = 0;
    for (size_t i = 0; i < L->ndev; i++)
        if (!L->excluded[i]) {
            active++;
            only = i;
        }
    if (active == 1 && max_units[only] >= L->total && !sub &&
        (L->part_strategy == CLF__PART_STATIC || L->part_strategy == CLF__PART_MEMORY_AWARE))
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_UNSUPPORTED,
                     "kernel '%s': the program names get_global_size() or get_num_groups(), "
                     "and clfleet did not find this kernel's definition in its source (a "
                     "kernel made by a macro, or in an included file), so chunks of it could "
                     "not be given the range's sizes; it can run on one device (one device in "
                     "desc.devices, CLF_STRATEGY_STATIC), or define it in the source itself",
                     L->desc.kernel);
}

static clf_status prepare(clf__launch *L, clf_fleet *fl, clf_program *prog,
                          const clf_launch_desc *desc, const clf_arg *args, size_t nargs)
{
    if (!fl || !prog || !desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_launch: %s is NULL",
                         !fl ? "fleet" : !prog ? "program" : "desc");
    if (nargs && !args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_launch: args is NULL");
    if (nargs > CLF__MAX_ARGS)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "more than %d arguments", CLF__MAX_ARGS);
    if (prog->fleet != fl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "the program was built for another fleet");
    /* Read only the fields the caller's version of the struct has. */
    size_t dsize = desc->version == 1   ? offsetof(clf_launch_desc, split_dim)
                   : desc->version == 2 ? offsetof(clf_launch_desc, range_first)
                                        : sizeof *desc;
    if (clf__check_version(NULL, desc->version, CLF_LAUNCH_DESC_VERSION, "clf_launch_desc",
                           "CLF_LAUNCH_DESC_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    /* The workers are most of the struct (64 x 5 KB): clear those of the launch's devices
     * only, once they are known. Clearing all of it cost a quarter of a small launch. */
    memset(L, 0, offsetof(clf__launch, w));
    L->plane = &clf__array_plane;
    L->fl = fl;
    L->X = clf__exec_state_of(fl);
    if (!L->X)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch: out of memory");
    L->prog = prog;
    memcpy(&L->desc, desc, dsize);
    L->desc.version = CLF_LAUNCH_DESC_VERSION;
    L->nargs = nargs;
    if (nargs)
        memcpy(L->args, args, nargs * sizeof *args);
    clf_status st = check_desc(L, &L->desc);
    for (size_t i = 0; st == CLF_SUCCESS && i < nargs; i++)
        st = check_arg(L, i, &args[i]);
    if (st == CLF_SUCCESS)
        st = choose_devices(L);
    if (st == CLF_SUCCESS)
        memset(L->w, 0, L->ndev * sizeof *L->w);
    if (st == CLF_SUCCESS)
        auto_local(L);
    for (size_t i = 0; i < nargs; i++) {
        L->has_reduce |= args[i].kind == CLF_ARG_KIND_REDUCE;
        L->has_inout |= args[i].kind == CLF_ARG_KIND_INOUT;
    }
    return st;
}

/*
 * Leave out the devices that failed in an earlier launch and those the program did not build
 * for: they take no work, and the report says why. Fails when none is left.
 */
static clf_status exclude(clf__launch *L)
{
    size_t left = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        size_t d = L->dev[i];
        clf__worker *w = &L->w[i];
        char why[256];
        if (clf__device_failed(L->fl, d, why, sizeof why)) {
            w->rep.status = CLF_ERROR_DEVICE_FAILED;
            snprintf(w->rep.error, sizeof w->rep.error,
                     "failed earlier (clf_device_readmit()): %.110s", why);
        } else if (L->prog && !L->prog->built[d]) {
            w->rep.status = CLF_ERROR_BUILD;
            snprintf(w->rep.error, sizeof w->rep.error, "the program did not build for it");
        } else {
            left++;
            continue;
        }
        L->excluded[i] = 1;
        w->rep.excluded = 1;
    }
    if (left)
        return CLF_SUCCESS;
    clf__fail(CLF_ERROR_DEVICE_FAILED, "'%s': every device of the launch is left out:",
              L->desc.kernel);
    for (size_t i = 0; i < L->ndev; i++)
        clf__append_error("\n  device %zu '%s': %s", L->dev[i], L->fl->dev[L->dev[i]].info.name,
                          L->w[i].rep.error);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].rep.status != CLF_ERROR_BUILD)
            return CLF_ERROR_DEVICE_FAILED;
    return CLF_ERROR_BUILD; /* no device has the program */
}

/* Devices that failed here with a device error are left out of later launches; the report
 * says what happened to each. */
static void record_failures(clf__launch *L)
{
    for (size_t i = 0; i < L->ndev; i++) {
        clf__worker *w = &L->w[i];
        if (L->excluded[i] || w->st == CLF_SUCCESS)
            continue;
        w->rep.status = w->st;
        w->rep.cl_error = w->cl_err;
        snprintf(w->rep.error, sizeof w->rep.error, "%.159s", w->err);
        if (w->exec_fault || clf__cl_device_fault(w->cl_err)) {
            char why[512];
            snprintf(why, sizeof why, "launch of '%.64s': %.400s", L->desc.kernel, w->err);
            clf__device_mark_failed(L->fl, L->dev[i], why);
        }
    }
}

/* Why a launch is incomplete: a failure that re-running cannot repair, else the first one
 * that is not the device's fault (the launch's own), else every device failed. */
static clf_status incomplete(clf__launch *L, uint64_t done, uint64_t free_units)
{
    const clf__worker *first = NULL;
    for (size_t i = 0; i < L->ndev && !first; i++)
        if (L->w[i].fatal)
            first = &L->w[i];
    for (size_t i = 0; i < L->ndev && !first; i++) {
        const clf__worker *w = &L->w[i];
        if (!L->excluded[i] && w->st != CLF_SUCCESS && !w->exec_fault &&
            !clf__cl_device_fault(w->cl_err))
            first = w;
    }
    if (first)
        return clf__fail(first->st, "launch of '%s' incomplete (%llu of %llu units): %s",
                         L->desc.kernel, (unsigned long long)done,
                         (unsigned long long)L->total, first->err);
    size_t failed = 0;
    for (size_t i = 0; i < L->ndev; i++)
        failed += L->w[i].st != CLF_SUCCESS;
    if (!failed)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "launch of '%s' incomplete: %llu units fit no remaining device",
                         L->desc.kernel, (unsigned long long)free_units);
    clf__fail(CLF_ERROR_DEVICE_FAILED,
              "launch of '%s' incomplete (%llu of %llu units; the report says which device did "
              "what): every device that could take work failed:",
              L->desc.kernel, (unsigned long long)done, (unsigned long long)L->total);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].st != CLF_SUCCESS)
            clf__append_error("\n  %s", L->w[i].err);
    return CLF_ERROR_DEVICE_FAILED;
}

/*
 * Run the workers of the devices marked in which until they are done: each on its device's
 * persistent thread (devthread.c) but the first, which runs on the calling thread (a launch
 * on one device hands nothing over, and every launch one device fewer).
 */
static void run_workers(clf__launch *L, const unsigned char *which)
{
    size_t here = L->ndev;
    /* Every worker counts as alive before any starts: one that runs out of work waits for
     * the others (their chunks may come back) only while it knows of them. */
    pthread_mutex_lock(&L->lock);
    for (size_t i = 0; i < L->ndev; i++)
        L->alive += which[i] != 0;
    pthread_mutex_unlock(&L->lock);
    for (size_t i = 0; i < L->ndev; i++) {
        clf__worker *w = &L->w[i];
        if (!which[i])
            continue;
        if (here == L->ndev) {
            here = i;
            continue;
        }
        if (clf__devthread_run(L->fl, w->d->index, clf__worker_main, w) != 0) {
            pthread_mutex_lock(&L->lock);
            L->alive--;
            clf__part_retire(L->part, i); /* the others take its share */
            pthread_cond_broadcast(&L->changed);
            pthread_mutex_unlock(&L->lock);
            w->rep.failed = 1;
            w->st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "device %zu: cannot start a thread",
                              L->dev[i]);
            snprintf(w->err, sizeof w->err, "%s", clf_last_error());
            continue;
        }
        w->started = 1;
    }
    if (here < L->ndev)
        clf__worker_main(&L->w[here]);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].started) {
            clf__devthread_wait(L->fl, L->w[i].d->index);
            L->w[i].started = 0;
        }
}

/* Run a prepared launch; the caller holds the fleet's turn. */
clf_status clf__exec_run(clf__launch *L, clf_launch_report *rep)
{
    clf_status st;
    uint64_t max_units[CLF_MAX_LAUNCH_DEVICES];
    memset(rep, 0, sizeof *rep);
    if ((st = exclude(L)) != CLF_SUCCESS) {
        fill_report(L, rep); /* which device is left out, and why */
        goto out;
    }
    if (L->prog)
        CLF__TRY(st, check_kernel(L));
    CLF__TRY(st, budgets(L, max_units));
    CLF__TRY(st, choose_strategy(L, max_units, rep));
    CLF__TRY(st, check_range_known(L, max_units));
    clf__log(CLF_LOG_DEBUG, "launch '%s': %s", L->desc.kernel, rep->reason);
    clf__part_params pp = {0};
    /* Fine enough for irregular work; a chunk costs tens of microseconds. */
    pp.chunks_per_device = L->desc.chunks_per_device ? L->desc.chunks_per_device : 16;
    pp.min_chunk = L->desc.min_chunk;
    /* Guided's shrinking chunks stop at dynamic's size, scaled by the device's share of the
     * weights: on regular work guided then cuts fewer chunks than dynamic, not more (K = 4
     * alone would end in chunks of one granule), and on irregular work its tail is as fine. */
    uint64_t min_chunks[CLF_MAX_LAUNCH_DEVICES];
    if (!pp.min_chunk && (L->part_strategy == CLF__PART_GUIDED ||
                          L->part_strategy == CLF__PART_MEMORY_AWARE)) {
        double wsum = 0;
        for (size_t i = 0; i < L->ndev; i++)
            wsum += L->weights[i];
        for (size_t i = 0; i < L->ndev; i++) {
            double m = wsum > 0 ? (double)L->total * (L->weights[i] / wsum) /
                                      pp.chunks_per_device
                                : 0;
            /* 0 (a device of weight 0): the granularity */
            min_chunks[i] = m >= 1 && m < (double)L->total ? (uint64_t)m : m >= 1 ? L->total : 0;
        }
        pp.min_chunks = min_chunks;
    }
    CLF__TRY(st, clf__part_create(&L->part, L->part_strategy, L->total, L->gran, L->ndev,
                                  L->weights, max_units, &pp));
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (a->kind == CLF_ARG_KIND_BROADCAST)
            CLF__TRY(st, bcast_entry(L->fl, L->X, a, &L->bcast[i]));
        if (a->kind == CLF_ARG_KIND_REDUCE) {
            size_t es = clf_type_size((clf_type)a->type);
            if (!(L->red_acc[i] = malloc(a->size * es)))
                CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "reduction: out of memory"));
            for (size_t k = 0; k < a->size; k++)
                clf__reduce_identity(a->op, a->type, L->red_acc[i] + k * es);
        }
    }

    pthread_mutex_init(&L->lock, NULL);
    pthread_cond_init(&L->changed, NULL);
    L->t0 = clf__now();
    for (size_t i = 0; i < L->ndev; i++) {
        clf__worker *w = &L->w[i];
        w->L = L;
        w->slot_index = i;
        w->d = &L->fl->dev[L->dev[i]];
    }
    unsigned char wave[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < L->ndev; i++)
        wave[i] = !L->excluded[i] && !L->held[i];
    run_workers(L, wave);
    /* A small launch's device failed: the devices standing by take its work back. */
    uint64_t free_units, outstanding, done;
    clf__part_counts(L->part, &free_units, &outstanding, &done);
    if (done != L->total && free_units && !L->stuck && memchr(L->held, 1, L->ndev)) {
        clf__log(CLF_LOG_INFO, "launch '%s': the devices standing by take over",
                 L->desc.kernel);
        run_workers(L, L->held);
    }
    pthread_cond_destroy(&L->changed);
    pthread_mutex_destroy(&L->lock);

    clf__part_counts(L->part, &free_units, &outstanding, &done);
    record_failures(L);
    fill_report(L, rep);
    clf__metrics_launch(L->fl, L->desc.kernel, rep, L->t0);
    if (done != L->total) {
        st = incomplete(L, done, free_units);
        goto out;
    }
    for (size_t i = 0; i < L->nargs; i++)
        if (L->red_acc[i])
            memcpy(L->args[i].host, L->red_acc[i],
                   L->args[i].size * clf_type_size((clf_type)L->args[i].type));
    learn(L);
    /* Kernel time per unit over all the devices: on irregular work the device that drew the
     * cheap part of the range alone would call the whole launch short. */
    double busy = 0, units = 0;
    for (size_t i = 0; i < L->ndev; i++)
        if (rep->dev[i].units && rep->dev[i].busy_s > 0) {
            busy += rep->dev[i].busy_s;
            units += (double)rep->dev[i].units;
        }
    if (units > 0)
        kernel_unit_s(L, 1, busy / units);
    /* A launch that lost or left out a device, or ran on one alone, says nothing about the
     * kernel's balance. */
    if (L->ndev > 1 && !L->small && !rep->failed_devices && !memchr(L->excluded, 1, L->ndev))
        strategy_efficiency(L, L->part_strategy, 1, rep->efficiency);
out:
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].L)
            clf__worker_fini(&L->w[i]);
    for (size_t i = 0; i < L->nargs; i++)
        free(L->red_acc[i]);
    clf__part_destroy(L->part);
    L->part = NULL;
    return st;
}

static void take_turn(clf__exec_state *X, uint64_t ticket)
{
    pthread_mutex_lock(&X->lock);
    while (X->serving != ticket)
        pthread_cond_wait(&X->turn, &X->lock);
    pthread_mutex_unlock(&X->lock);
}

static void end_turn(clf__exec_state *X)
{
    pthread_mutex_lock(&X->lock);
    X->serving++;
    pthread_cond_broadcast(&X->turn);
    pthread_mutex_unlock(&X->lock);
}

static uint64_t new_ticket(clf__exec_state *X)
{
    pthread_mutex_lock(&X->lock);
    uint64_t t = X->next_ticket++;
    pthread_mutex_unlock(&X->lock);
    return t;
}

clf_status clf__turn_begin(clf_fleet *fl)
{
    clf__exec_state *X = clf__exec_state_of(fl);
    if (!X)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch state: out of memory");
    take_turn(X, new_ticket(X));
    return CLF_SUCCESS;
}

void clf__turn_end(clf_fleet *fl)
{
    end_turn(clf__exec_state_of(fl)); /* made by clf__turn_begin() */
}

clf_status clf_launch(clf_fleet *fl, clf_program *prog, const clf_launch_desc *desc,
                      const clf_arg *args, size_t nargs, clf_launch_report *report)
{
    clf__launch *L = malloc(sizeof *L); /* large: not on the caller's stack */
    clf_launch_report local;
    if (!L)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch: out of memory");
    clf_status st = prepare(L, fl, prog, desc, args, nargs);
    if (st == CLF_SUCCESS) {
        uint64_t t = new_ticket(L->X);
        take_turn(L->X, t);
        st = clf__exec_run(L, report ? report : &local);
        end_turn(L->X);
    }
    free(L);
    return st;
}

/* ---- asynchronous launches ------------------------------------------------------------- */

/*
 * An asynchronous launch is an entry in the fleet's queue (X->queue_head), not a thread: one
 * dispatcher thread per fleet, made on the first asynchronous launch and joined at the
 * teardown, takes the entries in ticket order and runs each in its turn (launches, blocking
 * or not, run in the order they were queued). So N queued launches cost N entries and one
 * thread. An entry's completion is signalled under a lock of this file's own, not the
 * fleet's: its event may be waited for and released after the fleet has gone.
 */
struct clf__host_op {
    struct clf__host_op *next; /* in the queue (under X->lock) */
    int done;                  /* ran (under op_lock) */
    clf_status st;
    char err[2048];
    uint64_t ticket;
    clf_launch_report *report;
    clf_launch_report local;
    size_t devices[CLF_MAX_LAUNCH_DEVICES];
    double weights[CLF_MAX_LAUNCH_DEVICES];
    uint64_t limits[CLF_MAX_LAUNCH_DEVICES];
    char kernel[256];
    /* Last: the workers are most of it (64 x 5 KB), and a launch touches only its own
     * devices' ones: the pages of the others are never touched. */
    clf__launch L;
};

static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t op_done = PTHREAD_COND_INITIALIZER;

/* Run one queued launch in its turn and say it is done; the entry is the waiter's after. */
static void async_run(struct clf__host_op *op)
{
    clf__exec_state *X = op->L.X;
    take_turn(X, op->ticket);
    op->st = clf__exec_run(&op->L, op->report ? op->report : &op->local);
    if (op->st != CLF_SUCCESS)
        snprintf(op->err, sizeof op->err, "%s", clf_last_error());
    end_turn(X);
    pthread_mutex_lock(&op_lock);
    op->done = 1;
    pthread_cond_broadcast(&op_done);
    pthread_mutex_unlock(&op_lock);
}

static void *dispatcher_main(void *arg)
{
    clf__exec_state *X = arg;
    pthread_mutex_lock(&X->lock);
    for (;;) {
        while (!X->queue_head && !X->stopping)
            pthread_cond_wait(&X->queued, &X->lock);
        struct clf__host_op *op = X->queue_head;
        if (!op)
            break; /* stopping, and nothing queued */
        X->queue_head = op->next;
        if (!X->queue_head)
            X->queue_tail = NULL;
        pthread_mutex_unlock(&X->lock);
        async_run(op);
        pthread_mutex_lock(&X->lock);
    }
    pthread_mutex_unlock(&X->lock);
    return NULL;
}

/* At the teardown, once every launch has run: the dispatcher goes. */
static void dispatcher_stop(clf__exec_state *X)
{
    pthread_mutex_lock(&X->lock);
    X->stopping = 1;
    pthread_cond_signal(&X->queued);
    int started = X->dispatcher_started;
    pthread_mutex_unlock(&X->lock);
    if (started)
        pthread_join(X->dispatcher, NULL);
}

/* Queue op with the next ticket; 0, or -1 when no dispatcher could be made (op not queued,
 * its ticket taken: the caller runs it). */
static int async_queue(clf__exec_state *X, struct clf__host_op *op)
{
    int queued = 0;
    pthread_mutex_lock(&X->lock);
    op->ticket = X->next_ticket++;
    if (!X->dispatcher_started &&
        pthread_create(&X->dispatcher, NULL, dispatcher_main, X) == 0)
        X->dispatcher_started = 1;
    if (X->dispatcher_started) {
        /* Tickets are taken in queue order under this lock: the queue is in ticket order. */
        if (X->queue_tail)
            X->queue_tail->next = op;
        else
            X->queue_head = op;
        X->queue_tail = op;
        pthread_cond_signal(&X->queued);
        queued = 1;
    }
    pthread_mutex_unlock(&X->lock);
    return queued ? 0 : -1;
}

clf_status clf_launch_async(clf_fleet *fl, clf_program *prog, const clf_launch_desc *desc,
                            const clf_arg *args, size_t nargs, clf_launch_report *report,
                            clf_event **out_event)
{
    if (!out_event)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_launch_async: out_event is NULL");
    *out_event = NULL;
    struct clf__host_op *op = calloc(1, sizeof *op);
    clf_event *ev = calloc(1, sizeof *ev);
    clf_status st = CLF_SUCCESS;
    if (!op || !ev)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch: out of memory"));
    CLF__TRY(st, prepare(&op->L, fl, prog, desc, args, nargs));
    /* The description's pointers need not outlive this call: copy what they point to. */
    clf_launch_desc *d = &op->L.desc;
    if (strlen(desc->kernel) >= sizeof op->kernel)
        CLF__TRY(st, clf__fail(CLF_ERROR_INVALID_ARGUMENT, "kernel name too long"));
    strcpy(op->kernel, desc->kernel);
    d->kernel = op->kernel;
    size_t n = op->L.ndev;
    if (d->devices) {
        memcpy(op->devices, desc->devices, n * sizeof *op->devices);
        d->devices = op->devices;
    }
    if (d->weights) {
        if (d->weights_mode == CLF_WEIGHTS_USER)
            memcpy(op->weights, desc->weights, n * sizeof *op->weights);
        d->weights = op->weights;
    }
    if (d->mem_limits) {
        memcpy(op->limits, desc->mem_limits, n * sizeof *op->limits);
        d->mem_limits = op->limits;
    }
    op->report = report;
    if (async_queue(op->L.X, op) != 0)
        async_run(op); /* no dispatcher: run it here instead, keeping the queue's order */
    ev->op = op;
    ev->op_wait = clf__host_op_wait;
    ev->op_release = clf__host_op_release;
    *out_event = ev;
    return CLF_SUCCESS;
out:
    free(op);
    free(ev);
    return st;
}

static void op_join(struct clf__host_op *op)
{
    pthread_mutex_lock(&op_lock);
    while (!op->done)
        pthread_cond_wait(&op_done, &op_lock);
    pthread_mutex_unlock(&op_lock);
}

clf_status clf__host_op_wait(struct clf__host_op *op)
{
    op_join(op);
    if (op->st != CLF_SUCCESS)
        return clf__fail(op->st, "%s", op->err);
    return CLF_SUCCESS;
}

void clf__host_op_release(struct clf__host_op *op)
{
    op_join(op);
    free(op);
}

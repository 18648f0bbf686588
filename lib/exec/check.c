/*
 * Checking a launch before it runs: the description read as its version has it, its
 * arguments (and partitioned arguments' layouts), the devices and their weights, clfleet's
 * local size when the user gave none, and the arguments and range against the kernel on
 * the devices (core/argcheck.c), all before any worker starts (clf__launch_prepare()); then
 * the range's sizes its chunks need (clf__exec_run()).
 */
#include "exec.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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

static clf_status check_desc(clf__launch *L, const char *call, const clf_launch_desc *d)
{
    if (!d->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: clf_launch_desc.kernel is NULL", call);
    clf_status st = clf__check_range(call, d->kernel, d->dims, d->global, d->local, NULL, NULL,
                                     NULL);
    if (st != CLF_SUCCESS)
        return st;
    if (d->split_dim > d->dims)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "'%s': split_dim is %u: CLF_SPLIT_DIM(%u) names no dimension of a %uD "
                         "range (CLF_SPLIT_DEFAULT or CLF_SPLIT_DIM(0 .. %u))",
                         d->kernel, d->split_dim, d->split_dim - 1, d->dims, d->dims - 1);
    const unsigned split = d->split_dim ? d->split_dim - 1 : d->dims - 1;
    /* The local size divides the global size in every dimension, as OpenCL requires: the
     * split one included, so that every chunk (a multiple of the local size, the last one
     * too) keeps the user's local size, and get_group_id() counts groups as on one device
     * (cl/clfleet.h). */
    int has_local = d->local[0] != 0;
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
 * divides it (arrays.c), which divides the power of two l that its offset is
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

/* ---- the kernel on the devices ------------------------------------------------------------ */

/*
 * Which broadcasts the kernel may write, so that their copies are not kept between launches
 * (exec.h, bcast_fresh): a parameter that is neither const nor __constant, unless the scan
 * of the program's source (core/storescan.c) sees every use of it read only. A store the
 * scan does see is the user's bug (a broadcast is read only): logged once per program, the
 * launch runs (each device's copy is its own, and the host array stays as it was).
 */
static void broadcasts_written(clf__launch *L, cl_kernel k, unsigned char *stores)
{
    for (size_t i = 0; i < L->nargs; i++) {
        stores[i] = 0;
        if (L->args[i].kind != CLF_ARG_KIND_BROADCAST)
            continue;
        cl_kernel_arg_address_qualifier aq;
        cl_kernel_arg_type_qualifier tq;
        char name[128];
        int info = clf__kernel_param(k, i, &aq, &tq, name, sizeof name);
        if (info && (aq == CL_KERNEL_ARG_ADDRESS_CONSTANT || (tq & CL_KERNEL_ARG_TYPE_CONST)))
            continue;
        int r = clf__source_param_stores(L->prog ? L->prog->source : NULL, L->desc.kernel, i);
        stores[i] = (unsigned char)r;
        L->bcast_fresh[i] = r != 0;
        if (r == 2 && !__atomic_exchange_n(&L->prog->bcast_store_warned, 1, __ATOMIC_RELAXED))
            clf__log(CLF_LOG_WARN, "kernel '%s' stores through parameter %zu '%s', given as a "
                     "broadcast (CLF_BROADCAST: read only, one copy per device): those stores "
                     "stay on each device and are lost; pass the array as an input or output "
                     "if the kernel is meant to write it (said once per program)",
                     L->desc.kernel, i, name[0] ? name : "?");
        else if (r)
            clf__log(CLF_LOG_DEBUG, "kernel '%s': broadcast %zu '%s' is not const and clfleet "
                     "cannot tell that the kernel only reads it: uploaded for this launch, not "
                     "kept", L->desc.kernel, i, name[0] ? name : "?");
    }
}

/*
 * The verdict cache (exec.h, clf__kernel_verdict). What check_kernel() decides without a
 * local size depends only on the kernel's signature (the program's source, options and
 * includes: its SHA-256 names them) and on what clf__check_args() reads of the arguments:
 * their kinds, flags, and a scalar's type and size. A program whose includes could not be
 * followed (no_cache), that has no hash, or that is an array variant (two hidden parameters)
 * is not cached. 0: not cacheable.
 */
static int verdict_key(const clf__launch *L, clf__kernel_verdict *v)
{
    const clf_program *p = L->prog;
    memset(v, 0, sizeof *v);
    if (!p->hash[0] || p->no_cache || p->array_variant_of ||
        strlen(L->desc.kernel) >= sizeof v->kernel)
        return 0;
    memcpy(v->hash, p->hash, sizeof v->hash);
    memcpy(v->includes, p->includes, sizeof v->includes);
    strcpy(v->kernel, L->desc.kernel);
    v->nargs = L->nargs;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        v->sig[i].kind = a->kind;
        v->sig[i].type = a->type;
        v->sig[i].flags = a->flags;
        if (a->kind == CLF_ARG_KIND_SCALAR || a->kind == CLF_ARG_KIND_LOCAL)
            v->sig[i].size = a->size;
    }
    return 1;
}

static int verdict_same(const clf__kernel_verdict *a, const clf__kernel_verdict *b)
{
    return a->nargs == b->nargs && !strcmp(a->kernel, b->kernel) &&
           !memcmp(a->hash, b->hash, sizeof a->hash) &&
           !memcmp(a->includes, b->includes, sizeof a->includes) &&
           !memcmp(a->sig, b->sig, a->nargs * sizeof *a->sig);
}

/* A kept verdict for key: its broadcasts' store results to stores; 1 when found. */
static int verdict_find(clf__exec_state *X, const clf__kernel_verdict *key, unsigned char *stores)
{
    int found = 0;
    pthread_mutex_lock(&X->lock);
    size_t n = X->nverdict < CLF__VERDICTS ? X->nverdict : CLF__VERDICTS;
    for (size_t i = 0; i < n && !found; i++)
        if (verdict_same(&X->verdict[i], key)) {
            memcpy(stores, X->verdict[i].stores, key->nargs);
            found = 1;
        }
    pthread_mutex_unlock(&X->lock);
    return found;
}

static void verdict_keep(clf__exec_state *X, clf__kernel_verdict *key, const unsigned char *stores)
{
    memcpy(key->stores, stores, key->nargs);
    pthread_mutex_lock(&X->lock);
    size_t n = X->nverdict < CLF__VERDICTS ? X->nverdict : CLF__VERDICTS, i;
    for (i = 0; i < n; i++)
        if (verdict_same(&X->verdict[i], key))
            break;
    if (i == n) /* not kept by a launch that ran meanwhile */
        X->verdict[X->nverdict++ % CLF__VERDICTS] = *key;
    pthread_mutex_unlock(&X->lock);
}

/*
 * A kept verdict applied: the broadcasts' freshness as broadcasts_written() found it. Not
 * when a message is due that names the parameter (the store warning, once per program; the
 * debug note of each launch): the full check then says it. 1 when applied.
 */
static int verdict_apply(clf__launch *L, const unsigned char *stores)
{
    for (size_t i = 0; i < L->nargs; i++) {
        if (stores[i] == 2 && !__atomic_load_n(&L->prog->bcast_store_warned, __ATOMIC_RELAXED))
            return 0;
        if (stores[i] == 1 && clf__log_on(CLF_LOG_DEBUG))
            return 0;
    }
    for (size_t i = 0; i < L->nargs; i++)
        L->bcast_fresh[i] = stores[i] != 0;
    return 1;
}

/*
 * The arguments and the range against the kernel (core/argcheck.c) on the launch's devices
 * that will run (not failed, the program built: launch.c's exclude() leaves the others
 * out), before any worker starts: a worker sets the arguments as given, and PoCL crashes on
 * a value for a pointer. Kinds and sizes are the same on every device; local memory and
 * work-group limits are not, and are checked on each one that has something to check.
 * Without those (no local size, no local memory), the verdict of the same kernel and
 * argument kinds is kept, and the next launches check only the range.
 */
static clf_status check_kernel(clf__launch *L, const char *call)
{
    const char *kn = L->desc.kernel;
    int has_local = !L->auto_local;
    for (size_t a = 0; a < L->nargs; a++)
        has_local |= L->args[a].kind == CLF_ARG_KIND_LOCAL;
    clf__kernel_verdict key;
    unsigned char stores[CLF__MAX_ARGS] = {0};
    int cacheable = !has_local && verdict_key(L, &key);
    int kept = cacheable && verdict_find(L->X, &key, stores) && verdict_apply(L, stores);
    int checked = 0;
    for (size_t i = 0; i < L->ndev && (has_local || !checked); i++) {
        size_t dev = L->dev[i];
        if (clf__device_failed(L->fl, dev, NULL, 0) || !L->prog->built[dev])
            continue;
        struct clf__device *d = &L->fl->dev[dev];
        if (kept) {
            /* The range alone, as below (no local size: no kernel needed). */
            clf_status st = clf__check_range(call, kn, L->desc.dims, L->desc.global, NULL, NULL,
                                             d, NULL);
            if (st != CLF_SUCCESS)
                return st;
            checked = 1;
            continue;
        }
        cl_kernel k;
        clf_status st = clf__cmd_kernel_create(L->fl, dev, L->prog, kn, NULL, 0, NULL, &k);
        if (st != CLF_SUCCESS)
            return st;
        st = clf__check_args(call, L->prog, kn, k, d, 0, L->args, L->nargs, 0);
        if (st == CLF_SUCCESS && !checked)
            broadcasts_written(L, k, stores);
        /* clfleet's own local size is within every device's limits. */
        if (st == CLF_SUCCESS)
            st = clf__check_range(call, kn, L->desc.dims, L->desc.global,
                                  L->auto_local ? NULL : L->desc.local, NULL, d,
                                  L->auto_local ? NULL : k);
        clReleaseKernel(k);
        if (st != CLF_SUCCESS)
            return st;
        checked = 1;
    }
    if (cacheable && checked && !kept)
        verdict_keep(L->X, &key, stores);
    return CLF_SUCCESS;
}

/*
 * A kernel whose definition the source scan did not find (core/rangearg.c) has no hidden
 * range parameter: in chunks, get_global_size() and get_num_groups() could not give the
 * range's sizes. Such a launch is refused unless it surely runs as one chunk.
 */
clf_status clf__check_range_known(const clf__launch *L, const uint64_t *max_units)
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

/* ---- the launch's description ------------------------------------------------------------- */

clf_status clf__launch_prepare(clf__launch *L, const char *call, clf_fleet *fl,
                               clf_program *prog, const clf_launch_desc *desc,
                               const clf_arg *args, size_t nargs)
{
    if (!fl || !prog || !desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", call,
                         !fl ? "fleet" : !prog ? "program" : "desc");
    if (nargs && !args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: args is NULL", call);
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
    L->chunking_asked = L->desc.chunks_per_device != 0 || L->desc.min_chunk != 0;
    L->nargs = nargs;
    if (nargs)
        memcpy(L->args, args, nargs * sizeof *args);
    clf_status st = check_desc(L, call, &L->desc);
    for (size_t i = 0; st == CLF_SUCCESS && i < nargs; i++)
        st = check_arg(L, i, &args[i]);
    if (st == CLF_SUCCESS)
        st = choose_devices(L);
    if (st == CLF_SUCCESS)
        memset(L->w, 0, L->ndev * sizeof *L->w);
    if (st == CLF_SUCCESS)
        auto_local(L);
    /* clfleet's local size too makes work-groups PoCL must be able to count. It need not
     * divide the range (a last chunk runs with a smaller one, arrays.c): the groups are
     * counted over the range rounded up to it. */
    if (st == CLF_SUCCESS && L->auto_local) {
        size_t up[3] = {1, 1, 1};
        int fits = 1;
        for (unsigned j = 0; j < L->desc.dims; j++) {
            size_t l = L->desc.local[j];
            fits &= !clf__add_overflow(L->desc.global[j], l - 1, &up[j]);
            up[j] = up[j] / l * l;
        }
        if (fits)
            st = clf__check_range(call, L->desc.kernel, L->desc.dims, up, L->desc.local, NULL,
                                  NULL, NULL);
    }
    if (st == CLF_SUCCESS)
        st = check_kernel(L, call);
    for (size_t i = 0; i < nargs; i++) {
        L->has_reduce |= args[i].kind == CLF_ARG_KIND_REDUCE;
        L->has_inout |= args[i].kind == CLF_ARG_KIND_INOUT;
    }
    return st;
}

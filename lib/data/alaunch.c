/*
 * Owner-computes launches over distributed arrays (clf_array_launch()).
 *
 * Each part of the block (or block-cyclic) arrays among the arguments runs on its device as
 * its own NDRange, with a global work offset of the part's first unit along dims-1, through
 * the program's array variant (core/rangearg.c): there every __global/__constant pointer
 * parameter is moved by a hidden per-part byte offset so that the kernel indexes the part's
 * buffer with global indices, and the hidden range parameter holds the whole range, so
 * get_global_size(), get_num_groups() and (with the prelude's group count from the range
 * start, right because every part starts at a multiple of the local size) get_group_id()
 * return what they return on one device.
 *
 * Ordering is the arrays' (data.h): each kernel waits for what clf__array_deps() names over
 * the bytes it may touch (reads: the part's whole region, owned units and halo; writes: the
 * owned units it runs) and is recorded after. Nothing here waits on the host, except what
 * the command path does on a device that runs commands inside clEnqueue* (PoCL's basic).
 *
 * With CLF_ARRAY_EXCHANGE_AFTER, each part runs its boundary strips first (the units its
 * neighbours hold as halo), the halos of the written arrays are queued (exchange.c), then the
 * interior: its write range is disjoint from the copies' read ranges, so it does not wait
 * for them, and the copies run while it computes.
 */
#include "data.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One launch being queued. */
typedef struct alaunch {
    clf_fleet *fl;
    clf_program *var; /* the array variant */
    clf_array_launch_desc d;
    const clf_arg *args;
    size_t nargs;
    clf_array *layout; /* the first block or block-cyclic array: its parts are the launch's */
    size_t whole[3];
    clf__rebal_step *rec; /* CLF_ARRAY_REBALANCE: the part kernels' events, or NULL */
} alaunch;

static int same_cut(const clf_array *a, const clf_array *b)
{
    if (a->nparts != b->nparts || a->units != b->units ||
        a->desc.window_units != b->desc.window_units ||
        a->desc.window_first != b->desc.window_first)
        return 0;
    for (size_t p = 0; p < a->nparts; p++)
        if (a->parts[p].device != b->parts[p].device || a->parts[p].first != b->parts[p].first ||
            a->parts[p].count != b->parts[p].count)
            return 0;
    return 1;
}

static int has_halo(const clf_array *a)
{
    if (a->desc.dist != CLF_ARRAY_BLOCK)
        return 0;
    for (size_t p = 0; p < a->nparts; p++)
        if (a->parts[p].halo_before || a->parts[p].halo_after)
            return 1;
    return 0;
}

/* The part of array a that kernel part p of the launch uses: the same part of a block array,
 * the copy on p's device of a replicated one; (size_t)-1 when there is none. */
static size_t part_of(const alaunch *L, const clf_array *a, size_t p)
{
    if (a->desc.dist != CLF_ARRAY_REPLICATED)
        return p;
    size_t dev = L->layout->parts[p].device;
    for (size_t q = 0; q < a->nparts; q++)
        if (a->parts[q].device == dev)
            return q;
    return (size_t)-1;
}

static clf_status check(alaunch *L)
{
    const clf_array_launch_desc *d = &L->d;
    if (!d->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_launch: desc.kernel is NULL");
    const char *kn = d->kernel;
    char who[96];
    snprintf(who, sizeof who, "clf_array_launch: kernel '%.64s'", kn);
    if (clf__check_version(who, d->version, CLF_ARRAY_LAUNCH_DESC_VERSION,
                           "clf_array_launch_desc", "CLF_ARRAY_LAUNCH_DESC_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < 4; i++)
        if (d->reserved[i])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: desc.reserved is not zero", who);
    /* The range's device-independent rules (core/argcheck.c); the local size's are below
     * (a window's parts need not divide the whole), and each part's range and arguments
     * are checked against the kernel on its device (core/kernel.c). */
    clf_status st = clf__check_range("clf_array_launch", kn, d->dims, d->global, NULL, NULL,
                                     NULL, NULL);
    if (st != CLF_SUCCESS)
        return st;
    if (d->flags & ~(unsigned)(CLF_ARRAY_EXCHANGE_BEFORE | CLF_ARRAY_EXCHANGE_AFTER))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", who, d->flags);
    if (L->var->fleet != L->fl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: the program belongs to another fleet",
                         who);
    if (L->nargs && !L->args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: args is NULL (%zu arguments)", who,
                         L->nargs);
    size_t narrays = 0;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (a->reserved[0] || a->reserved[1])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s argument %zu: reserved fields are "
                             "not zero (fill clf_arg with the CLF_ARRAY_IN, CLF_SCALAR, ... "
                             "macros)", who, i);
        if (a->kind == CLF_ARG_KIND_SCALAR || a->kind == CLF_ARG_KIND_LOCAL)
            continue;
        if (a->kind != CLF_ARG_KIND_ARRAY)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s argument %zu: kind %u; an array launch takes CLF_ARRAY_IN, "
                             "CLF_ARRAY_OUT, CLF_ARRAY_INOUT, CLF_SCALAR and CLF_LOCAL (a "
                             "buffer or host array lives on one device or the host: use "
                             "clf_kernel_enqueue() or clf_launch())",
                             who, i, a->kind);
        const clf_array *arr = a->host;
        if (!arr)
            return clf__fail(CLF_ERROR_NULL_POINTER, "%s argument %zu: the array is NULL", who,
                             i);
        if (arr->fleet != L->fl)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s argument %zu: the array belongs to another fleet", who, i);
        if (!(a->flags & (CLF_ARG_READ | CLF_ARG_WRITE)) ||
            (a->flags & ~(unsigned)(CLF_ARG_READ | CLF_ARG_WRITE)))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s argument %zu: access flags 0x%x "
                             "(use CLF_ARRAY_IN, CLF_ARRAY_OUT or CLF_ARRAY_INOUT)",
                             who, i, a->flags);
        if (arr->mapped)
            return clf__fail(CLF_ERROR_BUSY, "%s argument %zu: the array is mapped "
                             "(clf_array_unmap() first)", who, i);
        if (arr->desc.dist == CLF_ARRAY_REPLICATED && (a->flags & CLF_ARG_WRITE))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s argument %zu: a replicated array is read only in a launch "
                             "(its copies would differ); write it with clf_array_write()",
                             who, i);
        if (++narrays > CLF__PART_MAX_PTRS)
            return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: more than %d array arguments", who,
                             CLF__PART_MAX_PTRS);
        if (arr->desc.dist != CLF_ARRAY_REPLICATED && !L->layout)
            L->layout = (clf_array *)arr;
    }
    if (!L->layout)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: no block or block-cyclic array among "
                         "the arguments to cut the range by", who);
    const clf_array *lay = L->layout;
    unsigned s = d->dims - 1;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        const clf_array *arr = a->kind == CLF_ARG_KIND_ARRAY ? a->host : NULL;
        if (!arr)
            continue;
        if (arr->desc.dist != CLF_ARRAY_REPLICATED && !same_cut(arr, lay))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s argument %zu: the array is cut unlike the first block array "
                             "(same devices and units per part needed)", who, i);
        for (size_t p = 0; arr->desc.dist == CLF_ARRAY_REPLICATED && p < lay->nparts; p++)
            if (part_of(L, arr, p) == (size_t)-1)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s argument %zu: the replicated array has no copy on device "
                                 "%zu, which runs part %zu", who, i, lay->parts[p].device, p);
    }
    size_t whole = lay->desc.window_units ? lay->desc.window_units : lay->units;
    if (d->global[s] != whole)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: global size %zu of dimension %u (the cut one) is not the arrays' "
                         "%zu units", who, d->global[s], s, whole);
    int any_local = 0, all_local = 1;
    for (unsigned j = 0; j < d->dims; j++) {
        any_local |= d->local[j] != 0;
        all_local &= d->local[j] != 0;
    }
    if (any_local && !all_local)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: some local sizes are 0 and others are "
                         "not (all 0: clfleet's choice)", who);
    if (any_local) {
        for (unsigned j = 0; j < s; j++)
            if (d->global[j] % d->local[j])
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: local size %zu does not divide "
                                 "global size %zu of dimension %u", who, d->local[j],
                                 d->global[j], j);
        if (lay->desc.window_first % d->local[s])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: local size %zu of dimension %u does not divide the window's "
                             "first unit %zu: every part runs whole work-groups", who,
                             d->local[s], s, lay->desc.window_first);
        for (size_t p = 0; p < lay->nparts; p++)
            if (lay->parts[p].count % d->local[s])
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s: local size %zu of dimension %u does not divide part %zu's "
                                 "%zu units (device %zu): every part runs whole work-groups "
                                 "(choose a local size dividing each part, or weights that "
                                 "cut in multiples of it)",
                                 who, d->local[s], s, p, lay->parts[p].count,
                                 lay->parts[p].device);
    } else {
        /* clfleet's choice, never the driver's: get_group_id() counts from the range start
         * by the local size, so every part must start at a multiple of it. */
        for (unsigned j = 0; j < d->dims; j++)
            L->d.local[j] = 1;
        size_t g = lay->desc.window_first; /* a window's parts start there */
        for (size_t p = 0; p < lay->nparts; p++)
            g = (size_t)clf__gcd(g, lay->parts[p].count);
        size_t l = 1;
        if (s == 0) {
            for (size_t c = 64; c > 1 && l == 1; c /= 2)
                if (g % c == 0)
                    l = c;
        } else {
            for (size_t c = 64; c > 1 && l == 1; c--)
                if (d->global[0] % c == 0)
                    l = c;
        }
        L->d.local[0] = l;
    }
    for (unsigned j = 0; j < 3; j++)
        L->whole[j] = j < d->dims ? d->global[j] : 1;
    return CLF_SUCCESS;
}

/*
 * One kernel of a part (the whole part, a boundary strip or the interior): a work item the
 * planner (this file, on the caller's thread) fills and the part's device's executor thread
 * enqueues. The planner collects the item's wait list from the arrays' records before, and
 * records its event after, on the caller's thread: the records and the parts' states (a
 * write marks the neighbours' halos stale) are never touched by two threads.
 */
typedef struct item {
    size_t p, first, count; /* part p, units [first, first + count) */
    size_t dev;
    clf_arg args[CLF__MAX_ARGS];
    cl_ulong offs[16];
    clf_event **wait;
    size_t nwait;
    clf_event *ev; /* the kernel's event, once enqueued */
    clf_status st;
    char err[640]; /* the detail of a failure, from the executor's thread */
} item;

/* Fill item it for part p over [first, first + count): the arguments on the part's buffers,
 * the part offsets and the wait list. */
static clf_status plan_item(alaunch *L, item *it, size_t p, size_t first, size_t count)
{
    memset(it, 0, offsetof(item, args));
    it->p = p;
    it->first = first;
    it->count = count;
    it->dev = L->layout->parts[p].device;
    it->wait = NULL;
    it->nwait = 0;
    it->ev = NULL;
    it->st = CLF_SUCCESS;
    it->err[0] = 0;
    memset(it->offs, 0, sizeof it->offs);
    size_t slot = 0;
    clf_status st = CLF_SUCCESS;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        it->args[i] = *a;
        if (a->kind != CLF_ARG_KIND_ARRAY)
            continue;
        clf_array *arr = a->host;
        size_t q = part_of(L, arr, p);
        const clf__array_part *ap = &arr->parts[q];
        clf_arg b = CLF__BUF(ap->buf, a->flags);
        it->args[i] = b;
        /* Where global element 0 is, from the buffer's start: may be before it (unsigned
         * wrap-around; the kernel divides it as a signed value). */
        it->offs[slot++] = (cl_ulong)((ap->first + arr->desc.window_first - ap->halo_before) *
                                      arr->unit_bytes) -
                           (cl_ulong)ap->offset;
        size_t rb = clf__array_part_bytes(arr, q);
        if (a->flags & CLF_ARG_READ)
            CLF__TRY(st, clf__array_deps(arr, q, 0, rb, CLF_ARG_READ, &it->wait, &it->nwait));
        if (a->flags & CLF_ARG_WRITE) {
            size_t lo = (first - ap->first + ap->halo_before) * arr->unit_bytes;
            CLF__TRY(st, clf__array_deps(arr, q, lo, lo + count * arr->unit_bytes,
                                         CLF_ARG_WRITE, &it->wait, &it->nwait));
        }
    }
out:
    return st;
}

/* The executor's side of an item: enqueue its kernel on its device (any thread). */
static void run_item(const alaunch *L, item *it)
{
    unsigned s = L->d.dims - 1;
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = L->d.kernel;
    kd.dims = L->d.dims;
    for (unsigned j = 0; j < 3; j++) {
        kd.global[j] = L->d.global[j];
        kd.local[j] = L->d.local[j];
    }
    kd.global[s] = it->count;
    kd.offset[s] = it->first + L->layout->desc.window_first; /* a window's global units */
    it->st = clf__kernel_enqueue_part(L->fl, L->var, it->dev, &kd, it->args, L->nargs,
                                      L->whole, it->offs, it->wait, it->nwait, &it->ev);
    if (it->st != CLF_SUCCESS)
        snprintf(it->err, sizeof it->err, "%s", clf_last_error());
}

/* After the item's kernel was queued (caller's thread): record its accesses. */
static clf_status record_item(alaunch *L, const item *it)
{
    if (L->rec)
        clf__rebal_step_add(L->rec, it->p, it->ev, it->count);
    clf_status st = CLF_SUCCESS;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (a->kind != CLF_ARG_KIND_ARRAY)
            continue;
        clf_array *arr = a->host;
        size_t q = part_of(L, arr, it->p);
        const clf__array_part *ap = &arr->parts[q];
        if (a->flags & CLF_ARG_READ)
            CLF__TRY(st, clf__array_record(arr, q, 0, clf__array_part_bytes(arr, q),
                                           CLF_ARG_READ, it->ev));
        if (a->flags & CLF_ARG_WRITE) {
            size_t lo = (it->first - ap->first + ap->halo_before) * arr->unit_bytes;
            CLF__TRY(st, clf__array_record(arr, q, lo, lo + it->count * arr->unit_bytes,
                                           CLF_ARG_WRITE, it->ev));
        }
    }
out:
    return st;
}

/* One device's items of a batch: the job its executor thread runs. */
typedef struct devjob {
    const alaunch *L;
    item *items;
    size_t nitems, dev;
    int posted;
} devjob;

static void *devjob_main(void *arg)
{
    devjob *j = arg;
    for (size_t k = 0; k < j->nitems; k++) {
        item *it = &j->items[k];
        if (j->dev != SIZE_MAX && it->dev != j->dev)
            continue; /* SIZE_MAX: every device's, one after the other */
        run_item(j->L, it);
        if (it->st != CLF_SUCCESS)
            break; /* the device's later items stay unqueued (it->ev NULL) */
    }
    return NULL;
}

/*
 * Run a batch of planned items: each device's items, in order, on its executor thread
 * (lib/exec/fleetstate.c: clf-devN), the devices at once; then record every queued kernel,
 * in item order. On the caller's thread instead when one device runs them all (a hand-off
 * would only add its latency), when the caller is itself a device thread (a task's array
 * launch: it must not wait for its own thread), or when a thread cannot be made. The first
 * failure in item order is returned; the kernels queued before or beside it are recorded,
 * so that later accesses wait for them.
 */
static clf_status run_batch(alaunch *L, item *items, size_t n)
{
    size_t ndev = clf_fleet_device_count(L->fl);
    devjob all = {L, items, n, SIZE_MAX, 0};
    devjob *jobs = calloc(ndev ? ndev : 1, sizeof *jobs);
    size_t nj = 0;
    for (size_t k = 0; jobs && k < n; k++) {
        size_t j = 0;
        while (j < nj && jobs[j].dev != items[k].dev)
            j++;
        if (j == nj)
            jobs[nj++] = (devjob){L, items, n, items[k].dev, 0};
    }
    if (!jobs || nj < 2 || clf__devthread_self()) {
        devjob_main(&all); /* no memory for the jobs: the same work, on this thread */
    } else {
        for (size_t j = 0; j < nj; j++)
            jobs[j].posted = clf__devthread_run(L->fl, jobs[j].dev, devjob_main, &jobs[j]) == 0;
        for (size_t j = 0; j < nj; j++)
            if (!jobs[j].posted)
                devjob_main(&jobs[j]);
        for (size_t j = 0; j < nj; j++)
            if (jobs[j].posted)
                clf__devthread_wait(L->fl, jobs[j].dev);
    }
    free(jobs);
    clf_status st = CLF_SUCCESS;
    const item *bad = NULL;
    for (size_t k = 0; k < n; k++) {
        item *it = &items[k];
        if (it->ev) {
            clf_status r = record_item(L, it);
            if (st == CLF_SUCCESS && r != CLF_SUCCESS) {
                st = r;
                bad = NULL;
            }
        } else if (it->st != CLF_SUCCESS && st == CLF_SUCCESS) {
            st = it->st;
            bad = it;
        }
    }
    if (bad)
        clf__fail(st, "clf_array_launch: part %zu (units %zu to %zu, device %zu): %s", bad->p,
                  bad->first, bad->first + bad->count, bad->dev, bad->err);
    for (size_t k = 0; k < n; k++) {
        clf_event_release(items[k].ev);
        clf__array_wait_free(items[k].wait, items[k].nwait);
        items[k].ev = NULL;
        items[k].wait = NULL;
        items[k].nwait = 0;
    }
    return st;
}

/* The strips of part p that neighbours hold as halo of the written arrays: *head units at
 * its start, *tail at its end, each rounded up to whole work-groups. */
static void strips(const alaunch *L, size_t p, size_t *head, size_t *tail)
{
    *head = *tail = 0;
    const clf_array *lay = L->layout;
    size_t n = lay->nparts, l = L->d.local[L->d.dims - 1];
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        const clf_array *arr = a->kind == CLF_ARG_KIND_ARRAY ? a->host : NULL;
        if (!arr || !(a->flags & CLF_ARG_WRITE) || !has_halo(arr))
            continue;
        int periodic = (arr->desc.flags & CLF_ARRAY_PERIODIC) != 0;
        const clf_array_desc *wd = &arr->desc;
        if (wd->window_units) {
            /* A window: the neighbours of its edges are elsewhere, holding this array's
             * halo sizes (the larger array's). */
            if (p > 0 || periodic || wd->window_first > 0)
                *head = wd->halo_after > *head ? wd->halo_after : *head;
            if (p + 1 < n || periodic || wd->window_first + arr->units < wd->window_units)
                *tail = wd->halo_before > *tail ? wd->halo_before : *tail;
            continue;
        }
        if (p > 0 || periodic) {
            size_t h = arr->parts[(p + n - 1) % n].halo_after;
            *head = h > *head ? h : *head;
        }
        if (p + 1 < n || periodic) {
            size_t h = arr->parts[(p + 1) % n].halo_before;
            *tail = h > *tail ? h : *tail;
        }
    }
    *head = (*head + l - 1) / l * l;
    *tail = (*tail + l - 1) / l * l;
}

/* Exchange the halos of the arrays with halos that the kernel accesses with flag
 * (CLF_ARG_READ or CLF_ARG_WRITE), each array once. */
static clf_status exchange_args(const struct clf_arg *args, size_t nargs, unsigned flag)
{
    for (size_t i = 0; i < nargs; i++) {
        const clf_arg *a = &args[i];
        if (a->kind != CLF_ARG_KIND_ARRAY || !(a->flags & flag) || !has_halo(a->host))
            continue;
        int seen = 0;
        for (size_t k = 0; k < i; k++)
            seen |= args[k].kind == CLF_ARG_KIND_ARRAY && args[k].host == a->host &&
                    (args[k].flags & flag);
        clf_status st = seen ? CLF_SUCCESS : clf_array_exchange(a->host);
        if (st != CLF_SUCCESS)
            return st;
    }
    return CLF_SUCCESS;
}

static clf_status queue(alaunch *L);

/* Host seconds (CLOCK_MONOTONIC). */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Whether a part kernel's event has ended (complete or failed); one that is no OpenCL event
 * is waited for. */
static int ended(clf_event *e)
{
    if (!e->ev) {
        clf_event_wait(e);
        return 1;
    }
    cl_int s = clf__cl_event_status(e->ev);
    return s < 0 || s == CL_COMPLETE;
}

/*
 * The report of a launch whose part kernels are in rec (every one of them): wait for them,
 * each device's finish taken when its last kernel is seen ended (polled every 20 us, so
 * finish_s is late by at most that and the host's wake-up), its busy time from the
 * profiling events (the simulator's, under CLFLEET_SIMULATE), its units and share from
 * the parts it held. Returns the first failed kernel's status.
 */
static clf_status fill_report(const alaunch *L, const clf__rebal_step *rec,
                              clf_launch_report *rep, double t0)
{
    const clf_array *lay = L->layout;
    size_t nd = 0, extent = 1;
    for (unsigned j = 0; j + 1 < L->d.dims; j++)
        extent *= L->d.global[j];
    clf_device_report *dr = rep->dev;
    uint64_t total = 0;
    for (size_t p = 0; p < lay->nparts; p++) {
        size_t k = 0;
        while (k < nd && dr[k].device != lay->parts[p].device)
            k++;
        if (k == nd) {
            if (nd == CLF_MAX_LAUNCH_DEVICES)
                continue; /* more devices than the report holds: left out of it */
            memset(&dr[nd], 0, sizeof dr[nd]);
            dr[nd++].device = lay->parts[p].device;
        }
        dr[k].units += lay->parts[p].count;
        dr[k].items += (uint64_t)lay->parts[p].count * extent;
        total += lay->parts[p].count;
    }
    rep->num_devices = nd;
    rep->total_units = total;
    clf_status st = CLF_SUCCESS;
    int left = rec->count ? 1 : 0;
    while (left) {
        left = 0;
        for (size_t k = 0; k < nd; k++) {
            if (dr[k].finish_s > 0)
                continue;
            int done = 1;
            for (size_t p = 0; done && p < rec->nparts; p++)
                for (size_t i = 0; done && i < CLF__REBAL_KPP; i++) {
                    clf_event *e = rec->ev[p * CLF__REBAL_KPP + i];
                    done = !e || lay->parts[p].device != dr[k].device || ended(e);
                }
            if (done)
                dr[k].finish_s = now_s() - t0;
            else
                left = 1;
        }
        if (left)
            nanosleep(&(struct timespec){0, 20000}, NULL);
    }
    for (size_t p = 0; rec->count && p < rec->nparts; p++)
        for (size_t i = 0; i < CLF__REBAL_KPP; i++) {
            clf_event *e = rec->ev[p * CLF__REBAL_KPP + i];
            if (!e)
                continue;
            size_t k = 0;
            while (k < nd && dr[k].device != lay->parts[p].device)
                k++;
            clf_status r = clf_event_wait(e);
            if (k == nd)
                continue;
            dr[k].chunks++;
            uint64_t a, b;
            if (e->ev && clf__event_profile(e->ev, &a, &b) && b > a)
                dr[k].busy_s += (double)(b - a) * 1e-9;
            if (r != CLF_SUCCESS) {
                dr[k].status = r;
                snprintf(dr[k].error, sizeof dr[k].error, "%s", clf_last_error());
                if (st == CLF_SUCCESS)
                    st = clf__fail(r, "clf_array_launch: a kernel on device %zu: %s",
                                   dr[k].device, dr[k].error);
            }
        }
    double lo = 0, hi = 0, sum = 0;
    size_t used = 0;
    for (size_t k = 0; k < nd; k++) {
        dr[k].share = total ? (double)dr[k].units / (double)total : 0;
        if (dr[k].status == CLF_SUCCESS)
            rep->done_units += dr[k].units;
        else
            rep->failed_devices++;
        if (!dr[k].units)
            continue;
        double f = dr[k].finish_s;
        lo = used == 0 || f < lo ? f : lo;
        hi = f > hi ? f : hi;
        sum += f;
        used++;
    }
    rep->makespan_s = hi;
    rep->efficiency = hi > 0 ? lo / hi : 1;
    rep->imbalance = used && sum > 0 ? hi / (sum / (double)used) - 1 : 0;
    return st;
}

clf_status clf_array_launch(clf_fleet *fleet, clf_program *prog,
                            const clf_array_launch_desc *desc, const struct clf_arg *args,
                            size_t nargs)
{
    if (!fleet || !prog || !desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_array_launch: %s is NULL",
                         !fleet ? "fleet" : !prog ? "prog" : "desc");
    if (nargs > CLF__MAX_ARGS)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_array_launch: %zu arguments, at most "
                         "%d", nargs, CLF__MAX_ARGS);
    if (prog->fleet != fleet)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_array_launch: the program belongs to another fleet");
    /* Only the fields of the caller's version are read: a version-1 struct ends before
     * strategy. */
    char who[96];
    snprintf(who, sizeof who, "clf_array_launch: kernel '%.64s'",
             desc->kernel ? desc->kernel : "(null)");
    if (clf__check_version(who, desc->version, CLF_ARRAY_LAUNCH_DESC_VERSION,
                           "clf_array_launch_desc", "CLF_ARRAY_LAUNCH_DESC_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    clf_array_launch_desc dd = CLF_ARRAY_LAUNCH_DESC_INIT;
    if (desc->version == 1)
        memcpy(&dd, desc, offsetof(clf_array_launch_desc, strategy));
    else
        dd = *desc;
    /* The strategy over resident data (include/clfleet.h, doc/04-data.md): static keeps the
     * parts; dynamic, guided, memory-aware and auto balance them by their measured device
     * times (force). The default, and a version-1 description: the parts as distributed,
     * moved only for arrays with CLF_ARRAY_REBALANCE. Not $CLFLEET_STRATEGY: a variable
     * must not move arrays that a program cut on purpose. */
    clf_strategy req = dd.strategy;
    if ((unsigned)req > CLF_STRATEGY_AUTO)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: unknown strategy %d (CLF_STRATEGY_STATIC, _DYNAMIC, _GUIDED, "
                         "_MEMORY_AWARE, _AUTO or _DEFAULT)", who, (int)dd.strategy);
    int force = desc->version >= 2 && req != CLF_STRATEGY_STATIC && req != CLF_STRATEGY_DEFAULT;
    alaunch L = {fleet, NULL, dd, args, nargs, NULL, {1, 1, 1}, NULL};
    clf_status st = CLF_SUCCESS;
    double t0 = now_s();
    if ((st = clf__program_array_variant(prog, &L.var)) != CLF_SUCCESS)
        return st;
    if (nargs && args && (st = clf__rebal_align(fleet, args, nargs, force)) != CLF_SUCCESS)
        return st;
    if ((st = check(&L)) != CLF_SUCCESS)
        return st;
    /* A balancing strategy (or CLF_ARRAY_REBALANCE): move the parts first when the speeds
     * measured so far say so (rebalance.c); the cut changed, so the checks and the local
     * size are redone. The new parts are whole work-groups of the caller's local size, or,
     * when clfleet chooses it, of up to 64 units (1-D: the local size it then finds), so
     * that a move never leaves a GPU running work-groups of one. */
    int moved = 0;
    unsigned cut = L.d.dims - 1;
    size_t granule = dd.local[cut];
    if (!granule) {
        granule = cut == 0 ? 64 : 1;
        while (granule > 1 && L.layout->units < granule * 16 * L.layout->nparts)
            granule /= 2;
    }
    if ((st = clf__rebal_before(L.layout, dd.kernel, args, nargs, granule, force, &moved)) !=
        CLF_SUCCESS)
        return st;
    if (moved) {
        L.d = dd;
        L.layout = NULL;
        if ((st = check(&L)) != CLF_SUCCESS)
            return st;
    }
    int balancing = L.layout->desc.dist == CLF_ARRAY_BLOCK && !L.layout->desc.window_units &&
                    (force || (L.layout->desc.flags & CLF_ARRAY_REBALANCE));
    clf_launch_report *rep = desc->version >= 2 ? dd.report : NULL;
    clf__rebal_step rec;
    if (balancing || rep) {
        clf__rebal_step_init(&rec, L.layout, dd.kernel);
        L.rec = &rec;
    }
    st = queue(&L);
    if (rep) {
        memset(rep, 0, sizeof *rep);
        rep->requested = req;
        /* Over resident data the balancing strategies are one policy (no chunk moves
         * between owners): AUTO names guided, shares by measured throughput; the default
         * names static, or guided when the arrays' CLF_ARRAY_REBALANCE balances them. */
        int named = req != CLF_STRATEGY_AUTO && req != CLF_STRATEGY_DEFAULT;
        rep->strategy = !balancing ? CLF_STRATEGY_STATIC : named ? req : CLF_STRATEGY_GUIDED;
        const clf_array_balance *b = &L.layout->bal;
        if (!balancing)
            snprintf(rep->reason, sizeof rep->reason,
                     "%s: resident parts as distributed (owner computes), never moved%s",
                     req == CLF_STRATEGY_DEFAULT ? "default" : clf_strategy_name(req),
                     force ? " (block-cyclic or window arrays: their parts cannot move)" : "");
        else
            snprintf(rep->reason, sizeof rep->reason,
                     "%s over resident data: parts weighted by their measured device times, "
                     "moved when it pays (no chunk stealing); %.120s",
                     force ? clf_strategy_name(req) : "CLF_ARRAY_REBALANCE",
                     b->why[0] ? b->why : "not measured yet");
        if (st == CLF_SUCCESS && !rec.count)
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY,
                           "clf_array_launch: out of memory for the report");
        if (st == CLF_SUCCESS)
            st = fill_report(&L, &rec, rep, t0);
    }
    if (L.rec)
        clf__rebal_step_done(L.rec, args, nargs, force);
    return st;
}

/* Queue the launch's kernels and halo exchanges (checked): the planner's batches of items
 * (run_batch()), each the parts' kernels of one phase. */
static clf_status queue(alaunch *Lp)
{
    alaunch *L = Lp;
    const struct clf_arg *args = L->args;
    size_t nargs = L->nargs;
    clf_status st = CLF_SUCCESS;
    const clf_array *lay = L->layout;
    /* The halos of the arrays the kernel reads. */
    if ((L->d.flags & CLF_ARRAY_EXCHANGE_BEFORE) &&
        (st = exchange_args(args, nargs, CLF_ARG_READ)) != CLF_SUCCESS)
        return st;
    int after = 0;
    for (size_t i = 0; (L->d.flags & CLF_ARRAY_EXCHANGE_AFTER) && i < nargs; i++)
        after |= args[i].kind == CLF_ARG_KIND_ARRAY && (args[i].flags & CLF_ARG_WRITE) &&
                 has_halo(args[i].host);
    item *items = malloc(2 * lay->nparts * sizeof *items);
    if (!items)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_array_launch: out of memory");
    size_t n = 0;
    /* Without the exchange after: each part whole. With it: the boundary strips first,
     * their halos, then the interiors (which do not wait for the copies). */
    for (size_t p = 0; p < lay->nparts && st == CLF_SUCCESS; p++) {
        size_t head = 0, tail = 0, first = lay->parts[p].first, count = lay->parts[p].count;
        if (after)
            strips(L, p, &head, &tail);
        if (!after || head + tail >= count) {
            st = plan_item(L, &items[n++], p, first, count);
        } else {
            if (head && (st = plan_item(L, &items[n++], p, first, head)) != CLF_SUCCESS)
                break;
            if (tail)
                st = plan_item(L, &items[n++], p, first + count - tail, tail);
        }
    }
    if (st != CLF_SUCCESS) {
        for (size_t k = 0; k < n; k++)
            clf__array_wait_free(items[k].wait, items[k].nwait);
        free(items);
        return st;
    }
    st = run_batch(L, items, n);
    if (st == CLF_SUCCESS && after)
        st = exchange_args(args, nargs, CLF_ARG_WRITE);
    n = 0;
    for (size_t p = 0; after && p < lay->nparts && st == CLF_SUCCESS; p++) {
        size_t head, tail, first = lay->parts[p].first, count = lay->parts[p].count;
        strips(L, p, &head, &tail);
        if (head + tail < count)
            st = plan_item(L, &items[n++], p, first + head, count - head - tail);
    }
    if (st != CLF_SUCCESS) {
        for (size_t k = 0; k < n; k++)
            clf__array_wait_free(items[k].wait, items[k].nwait);
    } else if (n) {
        st = run_batch(L, items, n);
    }
    free(items);
    if (st == CLF_SUCCESS)
        clf__metrics_array_launch(L->fl);
    return st;
}

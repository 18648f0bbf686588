/*
 * Collectives over per-device buffers: one buffer per participating device,
 * as in NCCL. Every byte that moves between devices goes through
 * clf_copy_async(), so the transfer path selector applies (a copy in the
 * context, peer-to-peer, or pipelined host staging); the arithmetic runs on
 * the devices, with the element-wise kernels of cl/reduce.cl.
 *
 * This file holds what every collective shares: validation, the reduction
 * program (built once per fleet) and kernels, scratch buffers kept between
 * calls, the two operations a schedule is made of (a copy, a combine kernel)
 * and the bookkeeping of their events; and the collectives between the host
 * and the devices: scatter and gather of host arrays cut in blocks or
 * block-cyclically. ring.c holds the schedules of all-reduce, all-gather,
 * reduce and broadcast.
 *
 * Collectives are blocking: they start after the work already queued on the
 * participating devices (a marker on each device's queues) and return when
 * the result is in place.
 */
#include "coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet/opencl.h"

#define MAXN CLF__COLL_MAXN
/* Automatic chunks: a quarter of a segment, within these bounds. Smaller chunks
 * overlap more but each command costs some microseconds. */
#define AUTO_CHUNK_MIN ((size_t)64 << 10)
#define AUTO_CHUNK_MAX ((size_t)4 << 20)

static const char *const op_names[] = {NULL, "sum", "prod", "min", "max"};
static const char *const type_names[] = {NULL, "i32", "u32", "i64", "f32", "f64"};

/* ---- validation ---------------------------------------------------------------------- */

static clf_status check_opts(const clf__coll *c, const clf_collective_options *o)
{
    if (o && clf__check_version(c->fn, o->version, CLF_COLLECTIVE_OPTIONS_VERSION,
                                "clf_collective_options",
                                "CLF_COLLECTIVE_OPTIONS_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    return CLF_SUCCESS;
}

/* The buffers: non-NULL, one fleet, distinct devices. */
static clf_status begin(clf__coll *c, const char *fn, clf_buffer *const *bufs, size_t n)
{
    memset(c, 0, sizeof *c);
    c->fn = fn;
    if (!bufs)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: the buffer array is NULL", fn);
    if (n == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: no buffers", fn);
    if (n > MAXN)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: %zu buffers, at most %d", fn, n, MAXN);
    for (size_t i = 0; i < n; i++) {
        if (!bufs[i])
            return clf__fail(CLF_ERROR_NULL_POINTER, "%s: buffer %zu is NULL", fn, i);
        if (bufs[i]->fleet != bufs[0]->fleet)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: buffers 0 and %zu belong to different fleets", fn, i);
        for (size_t j = 0; j < i; j++)
            if (bufs[j]->device == bufs[i]->device)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s: buffers %zu and %zu are both on device %zu (a collective "
                                 "takes one buffer per device)",
                                 fn, j, i, bufs[i]->device);
        c->buf[i] = bufs[i];
    }
    c->fl = bufs[0]->fleet;
    c->n = n;
    /* PoCL's basic device (its ops table, core/devops.c, says !wait_list_ok) runs a command
     * inside whichever thread makes it ready, and with
     * commands of other devices waiting on each other PoCL 3 then deadlocks on its own
     * locks. With such a device among the buffers', a collective waits on the host for each
     * command before it queues the next, so that no command waits for another device's. */
    for (size_t i = 0; i < n; i++)
        c->host_order |= !clf__devops(c->fl, bufs[i]->device)->wait_list_ok;
    return CLF_SUCCESS;
}

static clf_status check_size(const clf__coll *c, size_t i, size_t need)
{
    if (c->buf[i]->size < need)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "%s: buffer %zu (device %zu) holds %zu bytes, %zu are needed", c->fn, i,
                         c->buf[i]->device, c->buf[i]->size, need);
    return CLF_SUCCESS;
}

/* count elements of size es: not zero, no overflow, every buffer large enough. */
static clf_status check_count(clf__coll *c, size_t count, size_t es, size_t *bytes)
{
    if (count == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: count is zero", c->fn);
    if (es == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: element size is zero", c->fn);
    if (clf__mul_overflow(count, es, bytes))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu elements of %zu bytes overflow", c->fn,
                         count, es);
    c->es = es;
    return CLF_SUCCESS;
}

static clf_status check_op(const clf__coll *c, clf_type type, clf_reduce_op op)
{
    if (clf_type_size(type) == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown element type %d", c->fn,
                         (int)type);
    if (op < CLF_REDUCE_SUM || op > CLF_REDUCE_MAX)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown reduction operation %d", c->fn,
                         (int)op);
    return CLF_SUCCESS;
}

/* A collective over whole buffers: the buffers, the options, and count elements of es bytes
 * (of *type, for a reduction, with its operation) in every buffer. */
clf_status clf__coll_validate(clf__coll *c, const char *fn, clf_buffer *const *bufs, size_t n,
                              const clf_collective_options *o, size_t count, size_t es,
                              const clf_type *type, clf_reduce_op op)
{
    size_t bytes;
    clf_status st = begin(c, fn, bufs, n);
    if (st == CLF_SUCCESS)
        st = check_opts(c, o);
    if (st == CLF_SUCCESS && type) {
        st = check_op(c, *type, op);
        es = clf_type_size(*type);
    }
    if (st == CLF_SUCCESS)
        st = check_count(c, count, es, &bytes);
    for (size_t i = 0; st == CLF_SUCCESS && i < n; i++)
        st = check_size(c, i, bytes);
    return st;
}

/* ---- resources ----------------------------------------------------------------------- */

/* An object the fleet owns must not keep it alive (core.h, clf__fleet_ref()): give its
 * reference back. Never the last one: the collective's caller holds the fleet through its
 * buffers. */
static void disown(clf_fleet *fl, int *holds_fleet)
{
    *holds_fleet = 0;
    clf__fleet_unref(fl);
}

/*
 * What the collectives keep on a fleet (the fleet's state registry, core/device.c): cl/
 * reduce.cl, built on first use, and idle scratch buffers; released at the fleet's teardown,
 * before the transfer layer's.
 */
typedef struct coll_state {
    pthread_mutex_t lock; /* guards what follows */
    clf_program *reduce_prog;
    struct clf__scratch *scratch;
    void *host;        /* an idle host block of the host combine (clf__coll_host_get()) */
    size_t host_bytes; /* its size */
} coll_state;

static void *coll_state_create(clf_fleet *fl)
{
    (void)fl;
    coll_state *S = calloc(1, sizeof *S);
    if (S && pthread_mutex_init(&S->lock, NULL) != 0) {
        free(S);
        S = NULL;
    }
    return S;
}

static void coll_state_fini(clf_fleet *fl, void *state);

static const clf__state_key coll_key = {"collectives", CLF__STATE_BEFORE_XFER, coll_state_create,
                                        coll_state_fini};

/* cl/reduce.cl, built once per fleet (on first use) and released with it. */
static clf_status reduce_program(clf_fleet *fl, clf_program **out)
{
    *out = NULL;
    coll_state *S = clf__fleet_state(fl, &coll_key);
    if (!S)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "collective: out of memory");
    pthread_mutex_lock(&S->lock);
    clf_program *p = S->reduce_prog;
    pthread_mutex_unlock(&S->lock);
    if (!p) {
        /* Built outside the lock (it takes seconds when not cached); a thread that
         * loses the race drops its copy. */
        clf_program *mine = NULL, *extra = NULL;
        clf_status st = clf_program_build_shipped(&mine, fl, "reduce", NULL);
        if (st != CLF_SUCCESS)
            return st;
        disown(fl, &mine->holds_fleet);
        pthread_mutex_lock(&S->lock);
        if (S->reduce_prog)
            extra = mine;
        else
            S->reduce_prog = mine;
        p = S->reduce_prog;
        pthread_mutex_unlock(&S->lock);
        clf_program_destroy(extra);
    }
    *out = p;
    return CLF_SUCCESS;
}

/*
 * Scratch buffers outlive a collective, a few per device: a fresh buffer's pages are
 * faulted in (and zeroed by the system) on first use, which costs more than a large
 * copy, every call.
 */
#define SCRATCH_KEEP 4

struct clf__scratch {
    struct clf__scratch *next;
    clf_buffer *buf;
};

static clf_status scratch_get(clf_fleet *fl, size_t device, size_t bytes, clf_buffer **out)
{
    struct clf__scratch **best = NULL;
    coll_state *S = clf__fleet_state(fl, &coll_key);
    if (!S)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "collective: out of memory");
    pthread_mutex_lock(&S->lock);
    for (struct clf__scratch **p = &S->scratch; *p; p = &(*p)->next)
        if ((*p)->buf->device == device && (*p)->buf->size >= bytes &&
            (!best || (*p)->buf->size < (*best)->buf->size))
            best = p;
    struct clf__scratch *s = best ? *best : NULL;
    if (s)
        *best = s->next;
    pthread_mutex_unlock(&S->lock);
    if (s) {
        *out = s->buf;
        free(s);
        return CLF_SUCCESS;
    }
    clf_status st = clf_buffer_create(out, fl, device, bytes, CLF_MEM_READ_WRITE);
    if (st == CLF_SUCCESS)
        disown(fl, &(*out)->holds_fleet);
    return st;
}

/* Keep a buffer for later collectives (its commands have completed): in place of the
 * device's smallest kept one when the device has its share already, or free it. */
static void scratch_put(clf_fleet *fl, clf_buffer *b)
{
    if (!b)
        return;
    coll_state *S = clf__fleet_state(fl, &coll_key); /* made by scratch_get() */
    if (!S) {
        clf_buffer_destroy(b);
        return;
    }
    struct clf__scratch *s = malloc(sizeof *s), **smallest = NULL;
    size_t kept = 0;
    pthread_mutex_lock(&S->lock);
    for (struct clf__scratch **p = &S->scratch; *p; p = &(*p)->next)
        if ((*p)->buf->device == b->device) {
            kept++;
            if (!smallest || (*p)->buf->size < (*smallest)->buf->size)
                smallest = p;
        }
    if (s && kept >= SCRATCH_KEEP && (*smallest)->buf->size < b->size) {
        struct clf__scratch *old = *smallest;
        *smallest = old->next;
        s->buf = old->buf; /* freed below, outside the lock */
        old->buf = b;
        old->next = S->scratch;
        S->scratch = old;
        b = s->buf;
    } else if (s && kept < SCRATCH_KEEP) {
        s->buf = b;
        s->next = S->scratch;
        S->scratch = s;
        b = NULL;
        s = NULL;
    }
    pthread_mutex_unlock(&S->lock);
    free(s);
    clf_buffer_destroy(b);
}

/*
 * Host memory of the host combine, kept like the scratch buffers: a fresh block's pages are
 * faulted in and zeroed by the system on first touch, every call (16 MiB on two devices cost
 * more than the combine). One block is kept, up to HOST_KEEP bytes: the host combine wins at
 * small and middling counts, and a fleet must not hold large host memory for a rare call.
 */
#define HOST_KEEP ((size_t)64 << 20)

void *clf__coll_host_get(clf_fleet *fl, size_t bytes)
{
    coll_state *S = clf__fleet_state(fl, &coll_key);
    void *p = NULL;
    if (S) {
        pthread_mutex_lock(&S->lock);
        if (S->host && S->host_bytes >= bytes) {
            p = S->host;
            S->host = NULL;
            S->host_bytes = 0;
        }
        pthread_mutex_unlock(&S->lock);
    }
    return p ? p : malloc(bytes);
}

void clf__coll_host_put(clf_fleet *fl, void *p, size_t bytes)
{
    coll_state *S = p && bytes <= HOST_KEEP ? clf__fleet_state(fl, &coll_key) : NULL;
    if (S) {
        pthread_mutex_lock(&S->lock);
        if (!S->host || S->host_bytes < bytes) {
            void *old = S->host;
            S->host = p;
            S->host_bytes = bytes;
            p = old; /* freed below, outside the lock */
        }
        pthread_mutex_unlock(&S->lock);
    }
    free(p);
}

static void coll_state_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    coll_state *S = state;
    free(S->host);
    clf_program_destroy(S->reduce_prog);
    while (S->scratch) {
        struct clf__scratch *s = S->scratch;
        S->scratch = s->next;
        clf_buffer_destroy(s->buf);
        free(s);
    }
    pthread_mutex_destroy(&S->lock);
    free(S);
}

clf_status clf__coll_reduce_kernel(clf_fleet *fl, size_t dev, clf_type type, clf_reduce_op op,
                                   clf_program **prog, char *name, size_t len)
{
    *prog = NULL;
    if (type < CLF_TYPE_INT32 || type > CLF_TYPE_DOUBLE || op < CLF_REDUCE_SUM ||
        op > CLF_REDUCE_MAX)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "reduction: type %d, operation %d",
                         (int)type, (int)op);
    const struct clf__device *d = &fl->dev[dev];
    if (type == CLF_TYPE_DOUBLE && !d->info.fp64)
        return clf__fail(CLF_ERROR_UNSUPPORTED, "reduction: device %zu '%s' has no double "
                         "precision", dev, d->info.name);
    clf_program *p;
    clf_status st = reduce_program(fl, &p);
    if (st != CLF_SUCCESS)
        return st;
    if ((st = clf__program_check_device(p, dev)) != CLF_SUCCESS)
        return st;
    snprintf(name, len, "clf_reduce_%s_%s", op_names[op], type_names[type]);
    *prog = p;
    return CLF_SUCCESS;
}

/* The combine kernel of (op, type) on every participating device. */
clf_status clf__coll_kernels(clf__coll *c, clf_type type, clf_reduce_op op)
{
    clf_program *p;
    for (size_t i = 0; i < c->n; i++) {
        const struct clf__device *d = &c->fl->dev[c->buf[i]->device];
        if (type == CLF_TYPE_DOUBLE && !d->info.fp64)
            return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: device %zu '%s' has no double precision",
                             c->fn, d->index, d->info.name);
    }
    clf_status st = reduce_program(c->fl, &p);
    if (st != CLF_SUCCESS)
        return st;
    char *name = c->kname;
    snprintf(name, sizeof c->kname, "clf_reduce_%s_%s", op_names[op], type_names[type]);
    for (size_t i = 0; i < c->n; i++) {
        const struct clf__device *d = &c->fl->dev[c->buf[i]->device];
        if ((st = clf__program_check_device(p, d->index)) != CLF_SUCCESS)
            return st;
        cl_int err;
        st = clf__cmd_kernel_create(c->fl, d->index, p, name, NULL, 0, &err, &c->k[i]);
        if (err == CL_INVALID_KERNEL_NAME)
            return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: no kernel %s for device %zu '%s'", c->fn,
                             name, d->index, d->info.name);
        if (st != CLF_SUCCESS)
            return st;
        size_t max = 0;
        err = clGetKernelWorkGroupInfo(c->k[i], d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max, &max,
                                       NULL);
        if (err != CL_SUCCESS)
            return clf__cl_fail(err, "clGetKernelWorkGroupInfo", d);
        c->wg[i] = 256;
        while (c->wg[i] > 1 && c->wg[i] > max)
            c->wg[i] /= 2;
    }
    return CLF_SUCCESS;
}

static clf_status track(clf__coll *c, clf_event *e)
{
    if (c->nev == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        clf_event **v = realloc(c->ev, cap * sizeof *v);
        if (!v) {
            clf_event_wait(e); /* the command is queued: let it end before anything is freed */
            clf_event_release(e);
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", c->fn);
        }
        c->ev = v;
        c->cap = cap;
    }
    c->ev[c->nev++] = e;
    return c->host_order ? clf_event_wait(e) : CLF_SUCCESS;
}

/* Markers: what the collective does on a device follows the work queued there before. */
clf_status clf__coll_entry(clf__coll *c)
{
    for (size_t i = 0; i < c->n; i++) {
        cl_event m;
        clf_status st = clf__device_marker(c->fl, c->buf[i]->device, &m);
        if (st == CLF_SUCCESS)
            clf__coll_clock_watch(c, m);
        if (st == CLF_SUCCESS)
            st = clf__event_wrap(m, &c->entry[i]);
        if (st == CLF_SUCCESS && c->host_order)
            st = clf_event_wait(c->entry[i]);
        if (st != CLF_SUCCESS)
            return st;
    }
    return CLF_SUCCESS;
}

clf_status clf__coll_scratch(clf__coll *c, size_t i, int half, size_t bytes)
{
    return scratch_get(c->fl, c->buf[i]->device, bytes, &c->scratch[i][half]);
}

/* Wait for everything the collective queued, then free it all; returns st, or the
 * first failure of a queued command when st is a success. */
clf_status clf__coll_finish(clf__coll *c, clf_status st)
{
    char detail[1024] = "";
    if (st != CLF_SUCCESS)
        snprintf(detail, sizeof detail, "%s", clf_last_error());
    for (size_t i = 0; i < c->nev; i++) {
        clf_status s = clf_event_wait(c->ev[i]);
        if (s != CLF_SUCCESS && st == CLF_SUCCESS) {
            st = s;
            snprintf(detail, sizeof detail, "%s", clf_last_error());
        }
    }
    for (size_t i = 0; i < c->n; i++) {
        if (c->entry[i] && clf_event_wait(c->entry[i]) != CLF_SUCCESS && st == CLF_SUCCESS) {
            st = CLF_ERROR_OPENCL;
            snprintf(detail, sizeof detail, "%s", clf_last_error());
        }
        clf_event_release(c->entry[i]);
        scratch_put(c->fl, c->scratch[i][0]);
        scratch_put(c->fl, c->scratch[i][1]);
        if (c->k[i])
            clReleaseKernel(c->k[i]);
    }
    for (size_t i = 0; i < c->nev; i++)
        clf_event_release(c->ev[i]);
    free(c->ev);
    clf__coll_clock_stop(c);
    if (st != CLF_SUCCESS)
        return clf__fail(st, "%s: %s", c->fn, detail);
    return CLF_SUCCESS;
}

clf_status clf__coll_wait_all(clf__coll *c)
{
    clf_status st = CLF_SUCCESS;
    for (size_t i = 0; i < c->nev; i++) {
        clf_status s = clf_event_wait(c->ev[i]);
        if (s != CLF_SUCCESS && st == CLF_SUCCESS)
            st = s;
    }
    return st;
}

/* ---- the two operations a schedule is made of ---------------------------------------- */

/* Copy bytes between devices after up to three events (NULL entries are skipped). */
clf_status clf__coll_copy(clf__coll *c, clf_buffer *dst, size_t doff, clf_buffer *src, size_t soff,
                          size_t bytes, clf_event *w0, clf_event *w1, clf_event *w2,
                          clf_event **out)
{
    clf_event *w[3];
    size_t nw = 0;
    if (w0)
        w[nw++] = w0;
    if (w1)
        w[nw++] = w1;
    if (w2)
        w[nw++] = w2;
    clf_event *e = NULL;
    clf_status st = clf_copy_async(dst, doff, src, soff, bytes, w, nw, &e);
    if (st == CLF_SUCCESS)
        st = track(c, e);
    *out = st == CLF_SUCCESS ? e : NULL;
    return st;
}

/* OpenCL events of device's context for up to three clfleet events. */
static clf_status wait_list(clf__coll *c, size_t device, clf_event *const *w, cl_event *out,
                            cl_uint *n)
{
    *n = 0;
    for (int i = 0; i < 3; i++) {
        if (!w[i])
            continue;
        clf_status st = clf_event_cl_for(w[i], c->fl, device, &out[*n]);
        if (st != CLF_SUCCESS) {
            for (cl_uint k = 0; k < *n; k++)
                clReleaseEvent(out[k]);
            return st;
        }
        (*n)++;
    }
    return CLF_SUCCESS;
}

/*
 * On position i's device: acc[acc_off + e] = op(acc[acc_off + e], x[x_off + e]) for
 * e < len (offsets and length in elements), after up to three events.
 */
clf_status clf__coll_combine(clf__coll *c, size_t i, clf_buffer *acc, size_t acc_off, clf_buffer *x,
                             size_t x_off, size_t len, clf_event *w0, clf_event *w1, clf_event *w2,
                             clf_event **out)
{
    struct clf__device *d = &c->fl->dev[c->buf[i]->device];
    clf_event *w[3] = {w0, w1, w2};
    cl_event cw[3], ev = NULL;
    cl_uint nw;
    *out = NULL;
    clf_status st = wait_list(c, d->index, w, cw, &nw);
    if (st != CLF_SUCCESS)
        return st;
    cl_ulong ao = acc_off, xo = x_off, nn = len;
    cl_kernel k = c->k[i];
    cl_int err = clSetKernelArg(k, 0, sizeof(cl_mem), &acc->mem);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 1, sizeof ao, &ao);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 2, sizeof(cl_mem), &x->mem);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 3, sizeof xo, &xo);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 4, sizeof nn, &nn);
    size_t wg = c->wg[i], global = (len + wg - 1) / wg * wg;
    if (err != CL_SUCCESS)
        st = clf__cl_fail(err, "clSetKernelArg (collective combine)", d);
    else {
        clf__cmd cmd = CLF__CMD(c->fl, d->index, d->compute, c->klabel[0] ? c->klabel : c->kname);
        cmd.nwait = nw;
        cmd.wait = cw;
        cmd.ev = &ev;
        st = clf__cmd_kernel(&cmd, k, 1, NULL, &global, &wg);
    }
    for (cl_uint j = 0; j < nw; j++)
        clReleaseEvent(cw[j]);
    if (st != CLF_SUCCESS)
        return st;
    clf_event *e;
    st = clf__event_wrap(ev, &e);
    if (st == CLF_SUCCESS)
        st = track(c, e);
    if (st == CLF_SUCCESS)
        *out = e;
    return st;
}

/* Read or write between a buffer and the host, after one event. */
clf_status clf__coll_host_io(clf__coll *c, clf_buffer *b, int write, size_t off, size_t bytes,
                             void *host, clf_event *after)
{
    struct clf__device *d = &c->fl->dev[b->device];
    clf_event *w[3] = {after, NULL, NULL};
    cl_event cw[3], ev = NULL;
    cl_uint nw;
    clf_status st = wait_list(c, d->index, w, cw, &nw);
    if (st != CLF_SUCCESS)
        return st;
    /* On the compute queue, where the collective's commands that wait go. */
    clf__cmd cmd = CLF__CMD(c->fl, d->index, d->compute, c->tag ? c->tag : c->fn);
    cmd.nwait = nw;
    cmd.wait = cw;
    cmd.ev = &ev;
    st = write ? clf__cmd_write(&cmd, b->mem, off, bytes, host)
               : clf__cmd_read(&cmd, b->mem, off, bytes, host);
    for (cl_uint j = 0; j < nw; j++)
        clReleaseEvent(cw[j]);
    if (st != CLF_SUCCESS)
        return st;
    clf_event *e;
    st = clf__event_wrap(ev, &e);
    return st == CLF_SUCCESS ? track(c, e) : st;
}

/* ---- partitions and chunks ----------------------------------------------------------- */

clf_status clf_distribution_part(size_t *first, size_t *len, size_t count, size_t nparts,
                                 size_t part, clf_distribution dist, size_t block)
{
    if (!first || !len)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_distribution_part: NULL output");
    if (nparts == 0 || part >= nparts)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_distribution_part: part %zu of %zu", part,
                         nparts);
    if (dist == CLF_DIST_BLOCK) {
        /* Balanced: the first count % nparts parts take one element more. */
        size_t q = count / nparts, r = count % nparts;
        *first = part * q + (part < r ? part : r);
        *len = q + (part < r);
        return CLF_SUCCESS;
    }
    if (dist != CLF_DIST_CYCLIC)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "unknown distribution %d", (int)dist);
    size_t b = block ? block : 1;
    size_t nblocks = count / b + (count % b != 0);
    size_t mine = nblocks > part ? (nblocks - 1 - part) / nparts + 1 : 0;
    *first = mine ? part * b : count;
    *len = mine * b;
    if (mine && (nblocks - 1) % nparts == part && count % b)
        *len -= b - count % b; /* this part holds the short last block */
    return CLF_SUCCESS;
}

/* Elements per chunk: the option, or a quarter of a segment within bounds; never so
 * small that a segment has more than max_chunks chunks. */
size_t clf__coll_chunk_elems(const clf__coll *c, const clf_collective_options *o, size_t seg,
                             size_t max_chunks)
{
    size_t bytes = o && o->chunk_bytes ? o->chunk_bytes : seg / 4 * c->es;
    if (!(o && o->chunk_bytes))
        bytes = bytes < AUTO_CHUNK_MIN   ? AUTO_CHUNK_MIN
                : bytes > AUTO_CHUNK_MAX ? AUTO_CHUNK_MAX
                                         : bytes;
    size_t ce = bytes / c->es ? bytes / c->es : 1;
    size_t least = seg / max_chunks + (seg % max_chunks != 0);
    return ce < least ? least : ce;
}

/* ---- scatter and gather ----------------------------------------------------------------- */

/* Copy part's elements between the host array and a packed array (block-cyclic). */
static void cyclic_pack(char *packed, const char *host, size_t count, size_t nparts, size_t part,
                        size_t block, size_t es, int unpack)
{
    size_t b = block ? block : 1, at = 0, step;
    if (clf__mul_overflow(nparts, b, &step))
        step = SIZE_MAX; /* one block each at most */
    /* Called only for a part that holds elements: part * b < count. */
    for (size_t start = part * b;;) {
        size_t l = count - start < b ? count - start : b;
        if (unpack)
            memcpy((char *)host + start * es, packed + at * es, l * es);
        else
            memcpy(packed + at * es, host + start * es, l * es);
        at += l;
        if (count - start <= step)
            break;
        start += step;
    }
}

static clf_status scatter_gather(const char *fn, int scatter, void *host, clf_buffer *const *bufs,
                                 size_t nbufs, size_t count, size_t elem_size,
                                 clf_distribution dist, size_t block)
{
    clf__coll c;
    size_t bytes, first[MAXN], len[MAXN];
    char *packed[MAXN] = {NULL};
    clf_status st = begin(&c, fn, bufs, nbufs);
    if (st == CLF_SUCCESS && !host)
        st = clf__fail(CLF_ERROR_NULL_POINTER, "%s: host array is NULL", fn);
    if (st == CLF_SUCCESS)
        st = check_count(&c, count, elem_size, &bytes);
    if (st == CLF_SUCCESS && dist != CLF_DIST_BLOCK && dist != CLF_DIST_CYCLIC)
        st = clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown distribution %d", fn, (int)dist);
    for (size_t i = 0; st == CLF_SUCCESS && i < nbufs; i++) {
        clf_distribution_part(&first[i], &len[i], count, nbufs, i, dist, block);
        st = check_size(&c, i, len[i] * elem_size);
    }
    if (st != CLF_SUCCESS)
        return st;
    CLF__TRY(st, clf__coll_entry(&c));
    for (size_t i = 0; i < nbufs; i++) {
        if (len[i] == 0)
            continue; /* fewer elements than devices */
        char *h = (char *)host + first[i] * elem_size;
        if (dist == CLF_DIST_CYCLIC && nbufs > 1) {
            if (!(packed[i] = malloc(len[i] * elem_size)))
                CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn));
            if (scatter)
                cyclic_pack(packed[i], host, count, nbufs, i, block, elem_size, 0);
            h = packed[i];
        }
        CLF__TRY(st,
                 clf__coll_host_io(&c, c.buf[i], scatter, 0, len[i] * elem_size, h, c.entry[i]));
    }
out:
    st = clf__coll_finish(&c, st);
    for (size_t i = 0; i < nbufs; i++) {
        if (packed[i] && !scatter && st == CLF_SUCCESS)
            cyclic_pack(packed[i], host, count, nbufs, i, block, elem_size, 1);
        free(packed[i]);
    }
    return st;
}

clf_status clf_scatter(clf_buffer *const *bufs, size_t nbufs, const void *host, size_t count,
                       size_t elem_size, clf_distribution dist, size_t block)
{
    return scatter_gather("clf_scatter", 1, (void *)host, bufs, nbufs, count, elem_size, dist,
                          block);
}

clf_status clf_gather(void *host, clf_buffer *const *bufs, size_t nbufs, size_t count,
                      size_t elem_size, clf_distribution dist, size_t block)
{
    return scatter_gather("clf_gather", 0, host, bufs, nbufs, count, elem_size, dist, block);
}

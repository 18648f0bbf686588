/*
 * Device-to-device copies: the fleet's path matrix, the queries, and clf_copy_async().
 *
 * The path for each ordered device pair is chosen once, at fleet creation, by the pure
 * selector of plan/pathsel.c from facts gathered here and in peer.c. A copy on a path the
 * OpenCL runtime can do by itself (same device, host-unified memory in one context, AMD
 * peer-to-peer) is one enqueued command whose wait list is bridged into the queue's
 * context. A copy that the host must drive (pipelined staging, CUDA peer copies) runs on the
 * process's helper pool once its wait list is over, and its event is a host-side completion
 * (core/event.c) that the job completes (no thread waits for the wait list: submit());
 * clf_copy() runs it on the calling thread instead, which saves a hand-over for small
 * copies. Such a copy enqueues on the devices' copy queues as it goes, never behind commands
 * that may wait for it.
 */
#include "transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- fleet state ---------------------------------------------------------------------- */

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; hay && *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return 1;
    return 0;
}

clf_status clf__xfer_init(clf_fleet *fl, const char *opt)
{
    const char *val = opt ? opt : getenv("CLFLEET_TRANSFER");
    unsigned disabled = 0;
    clf_status st = clf__path_parse_env(val, &disabled);
    if (st != CLF_SUCCESS) {
        if (opt) {
            /* The parser names the variable; the value came from the option. */
            char msg[512];
            const char *e = clf_last_error();
            if (strncmp(e, "CLFLEET_TRANSFER: ", 18) == 0)
                e += 18;
            snprintf(msg, sizeof msg, "%s", e);
            return clf__fail(st, "clf_fleet_options.transfer: %s", msg);
        }
        return st;
    }
    size_t n = fl->ndev, nn;
    if (clf__mul_overflow(n, n, &nn))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "transfer: %zu devices", n);
    struct clf__xfer *x = calloc(1, sizeof *x);
    if (!x)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "transfer: out of memory");
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->cond, NULL);
    fl->xfer = x;
    x->fleet = fl;
    x->disabled = disabled;
    int pipeline = 0;
    if ((st = clf__env_transfer_chunk(getenv("CLFLEET_TRANSFER_CHUNK"), CLF__XFER_CHUNK,
                                      &x->chunk)) != CLF_SUCCESS ||
        (st = clf__env_staging(getenv("CLFLEET_TRANSFER_STAGING"), &pipeline)) != CLF_SUCCESS)
        return st;
    x->staging = pipeline ? CLF__STAGING_PIPELINE : CLF__STAGING_AUTO;
    x->dev = calloc(n, sizeof *x->dev);
    x->path = calloc(nn, 1);
    x->direct = calloc(nn, 1);
    if (!x->dev || !x->path || !x->direct)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "transfer: out of memory");
    for (size_t i = 0; i < n; i++) {
        const clf_device_info *in = &fl->dev[i].info;
        clf__path_dev_from_info(&x->dev[i].pd, in);
        x->dev[i].nvidia = contains_nocase(in->vendor, "NVIDIA") ||
                           contains_nocase(in->platform_vendor, "NVIDIA");
    }
    st = clf__peer_init(fl);
    if (st != CLF_SUCCESS)
        return st;
    clf__log(CLF_LOG_INFO, "transfer: CUDA peer path %s", x->cuda_status);
    for (size_t s = 0; s < n; s++)
        for (size_t d = 0; d < n; d++) {
            int direct = 0;
            clf__path p = clf__path_select(&x->dev[s].pd, s, &x->dev[d].pd, d, &x->env,
                                           x->disabled, &direct);
            x->path[s * n + d] = (unsigned char)p;
            x->direct[s * n + d] = (unsigned char)direct;
            if (s != d)
                clf__log(CLF_LOG_INFO, "transfer path %zu -> %zu: %s%s", s, d,
                         clf__path_name(p), direct ? " (direct)" : "");
        }
    return CLF_SUCCESS;
}

void clf__xfer_fini(clf_fleet *fl)
{
    struct clf__xfer *x = fl->xfer;
    if (!x)
        return;
    /* The copies in flight finish first (their wait lists complete once the fleet's queues
     * run dry, or were the caller's to complete), and the bridges to host completions set
     * their events. */
    pthread_mutex_lock(&x->lock);
    while (x->inflight || x->helpers)
        pthread_cond_wait(&x->cond, &x->lock);
    pthread_mutex_unlock(&x->lock);
    clf__bridge_drain(fl);
    if (x->dev) {
        clf__staging_fini(fl);
        clf__peer_fini(fl);
        for (size_t i = 0; i < fl->ndev; i++) {
            free(x->dev[i].amd_peers);
        }
    }
    free(x->dev);
    free(x->path);
    free(x->direct);
    free(x->cuda_peer);
    pthread_cond_destroy(&x->cond);
    pthread_mutex_destroy(&x->lock);
    free(x);
    fl->xfer = NULL;
}

/* ---- queries -------------------------------------------------------------------------- */

const char *clf_path_name(clf_path p)
{
    if ((unsigned)p >= CLF__PATH_COUNT)
        return NULL;
    return clf__path_name((clf__path)p);
}

clf_status clf_transfer_path(clf_path *path, int *direct, const clf_fleet *fl, size_t src,
                             size_t dst)
{
    clf_status st = clf__check_device(fl, src);
    if (st == CLF_SUCCESS)
        st = clf__check_device(fl, dst);
    if (st != CLF_SUCCESS)
        return st;
    if (!path)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_transfer_path: path is NULL");
    size_t k = src * fl->ndev + dst;
    *path = (clf_path)fl->xfer->path[k];
    if (direct)
        *direct = fl->xfer->direct[k];
    return CLF_SUCCESS;
}

const char *clf_transfer_cuda_status(const clf_fleet *fl)
{
    if (!fl || !fl->xfer)
        return "no fleet";
    return fl->xfer->cuda_status;
}

/* ---- copies --------------------------------------------------------------------------- */

static void copy_free(clf__copy *c)
{
    if (!c)
        return;
    if (c->dst)
        clReleaseMemObject(c->dst);
    if (c->src)
        clReleaseMemObject(c->src);
    for (size_t i = 0; i < c->ndeps; i++)
        clf_event_release(c->deps[i]);
    free(c->deps);
    free(c->early_why);
    clf__completion_unref(c->done);
    free(c);
}

clf_status clf__copy_wait_deps(clf__copy *c)
{
    for (size_t i = 0; i < c->ndeps; i++) {
        clf_status st = clf__event_wait_host(c->deps[i]);
        if (st != CLF_SUCCESS)
            return clf__prefix_error(st, "copy not done: wait-list event %zu failed: ", i);
    }
    return CLF_SUCCESS;
}

/* ---- the paths ----------------------------------------------------------------------- */

/* Same device, or one context whose devices share memory with the host: the runtime copies
 * within the context, on a queue of the source, where the data was produced (PoCL 3's
 * basic device does not bring a buffer last written by another device up to date before a
 * copy on its own queue, and reads stale bytes). */
static clf_status enqueue_copy(clf__copy *c, const cl_event *wait, cl_uint nwait, cl_event *ev)
{
    /* Counted by the caller, once. */
    clf__cmd cmd = CLF__CMD(c->fleet, c->sdev, clf__copy_queue(c, 0), NULL);
    cmd.flags = CLF__CMD_NO_METRICS | CLF__CMD_NO_FLUSH | CLF__CMD_NO_FAULT; /* copy() checked */
    cmd.nwait = nwait;
    cmd.wait = wait;
    cmd.ev = ev;
    return clf__cmd_copy(&cmd, c->src, c->dst, c->soff, c->doff, c->size);
}

const clf__path_ops clf__path_same_device = {"same-device", 1, enqueue_copy, NULL};
const clf__path_ops clf__path_unified = {"unified", 1, enqueue_copy, NULL};

/* In clf__path order. */
static const clf__path_ops *const PATHS[CLF__PATH_COUNT] = {
    &clf__path_same_device, &clf__path_unified, &clf__path_amd_p2p, &clf__path_cuda_p2p,
    &clf__path_staged,
};

/* A path the runtime does, its wait list already waited for on the host: enqueue, wait. */
static clf_status enqueue_wait(clf__copy *c)
{
    const clf__path_ops *ops = PATHS[c->path];
    cl_event ev = NULL;
    clf_status st = ops->enqueue(c, NULL, 0, &ev);
    if (st != CLF_SUCCESS)
        return st;
    clFlush(clf__copy_queue(c, !ops->queue_on_src));
    clf_event e = {.ev = ev};
    st = clf__event_wait_host(&e);
    clReleaseEvent(ev);
    return st;
}

/* Run a copy the host drives, on the calling thread. */
static clf_status run_host(clf__copy *c)
{
    clf_status st;
    clf__rec r = {0};
    r.path = (clf_path)c->path;
    r.t0 = clf__mono_ns();
    st = PATHS[c->path]->run ? PATHS[c->path]->run(c) : enqueue_wait(c);
    /* A path that cannot run here (no memory for CUDA's bounce buffers): staging always
     * works. */
    if (st == CLF_ERROR_UNSUPPORTED && c->path != CLF__PATH_STAGED) {
        r.path = CLF_PATH_STAGED;
        st = clf__path_staged.run(c);
    }
    r.t1 = clf__mono_ns();
    if (st == CLF_SUCCESS) { /* timed on the host: its commands are several, on two queues */
        r.kind = CLF__REC_PEER;
        r.flags = CLF__REC_HOST_TIME;
        r.track = CLF__TRACK_PEER;
        r.bytes = c->size;
        r.src = c->sdev;
        r.dst = c->ddev;
        clf__metrics_record(c->fleet, c->ddev, &r, 1);
    }
    return st;
}

/*
 * An asynchronous copy the host drives (a path with a host run, or a device that must not
 * wait for other queues' events, core/devops.c), in continuation style: no thread waits for
 * its wait list. Each wait-list event tells the copy when it completes
 * (clf__event_notify()); the last one queues the copy on the process's helper pool
 * (util/pool.c), where it runs with every wait already over, so its own blocking is bounded:
 * its commands have empty wait lists and go on the copy queues, behind nothing that waits
 * (core.h). The fleet counts it in x->inflight until it is done.
 */
static void copy_job(void *arg, int cancelled)
{
    clf__copy *c = arg;
    struct clf__xfer *x = c->fleet->xfer;
    clf_clear_error();
    clf_status st;
    if (cancelled)
        st = clf__fail(CLF_ERROR_UNSUPPORTED,
                       "copy not done: the helper pool shut down (the process is exiting)");
    else if (c->early != CLF_SUCCESS)
        st = clf__fail(c->early, "%s", c->early_why ? c->early_why : "copy not done");
    else if ((st = clf__copy_wait_deps(c)) == CLF_SUCCESS) /* all over: returns at once */
        st = run_host(c);
    clf__completion_complete(c->done, st, clf_last_error());
    copy_free(c);
    pthread_mutex_lock(&x->lock);
    if (--x->inflight == 0)
        pthread_cond_broadcast(&x->cond); /* clf__xfer_drain(), clf__xfer_fini() */
    pthread_mutex_unlock(&x->lock); /* x is not touched after this: the teardown may free it */
}

/* One wait-list event is over (or the submitter is done submitting): the last queues the
 * copy. Runs in whichever thread completed the event, so it only queues. */
static void copy_dep_done(void *arg, clf_status st)
{
    (void)st; /* a failure's detail is read when the job waits for the event */
    clf__copy *c = arg;
    if (atomic_fetch_sub(&c->pending, 1) != 1)
        return;
    c->job.fn = copy_job;
    c->job.arg = c;
    if (clf__pool_submit(&c->job) != CLF_SUCCESS)
        copy_job(c, 1); /* the pool has shut down: the process is exiting */
}

void clf__xfer_drain(clf_fleet *fl)
{
    struct clf__xfer *x = fl->xfer;
    if (!x)
        return;
    pthread_mutex_lock(&x->lock);
    while (x->inflight)
        pthread_cond_wait(&x->cond, &x->lock);
    pthread_mutex_unlock(&x->lock);
}

/* Start c (its deps held, its completion made): counted in flight, then told by each dep. */
static void submit(struct clf__xfer *x, clf__copy *c)
{
    pthread_mutex_lock(&x->lock);
    x->inflight++;
    pthread_mutex_unlock(&x->lock);
    atomic_init(&c->pending, (unsigned)c->ndeps + 1);
    for (size_t i = 0; i < c->ndeps; i++) {
        clf_status st = clf__event_notify(c->deps[i], copy_dep_done, c);
        if (st == CLF_SUCCESS)
            continue;
        /* Not watched (out of memory): the copy fails, once the deps watched so far have
         * told it (they still refer to it). Only the submitter writes these, before its own
         * count below, so the job reads them after. */
        if (c->early == CLF_SUCCESS) {
            c->early = st;
            c->early_why = strdup(clf_last_error());
        }
        copy_dep_done(c, st);
    }
    copy_dep_done(c, CLF_SUCCESS); /* the submitter's share */
}

/* A copy the OpenCL runtime does: one command on a queue, after the bridged wait list. */
static clf_status enqueue_direct(clf__copy *c, clf_event *const *wait, size_t nwait,
                                 clf_event **out_event)
{
    clf_fleet *fl = c->fleet;
    const clf__path_ops *ops = PATHS[c->path];
    size_t qdev = ops->queue_on_src ? c->sdev : c->ddev;
    struct clf__device *d = &fl->dev[qdev];
    clf_status st = CLF_SUCCESS;
    cl_event *ev = nwait ? calloc(nwait, sizeof *ev) : NULL;
    cl_event done = NULL;
    size_t nev = 0;
    if (nwait && !ev)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "copy: out of memory");
    for (; nev < nwait; nev++)
        CLF__TRY(st, clf__event_cl_for(wait[nev], fl, qdev, &ev[nev]));
    st = ops->enqueue(c, ev, (cl_uint)nev, &done);
    if (st == CLF_SUCCESS)
        clFlush(d->transfer); /* start it now, not at the next blocking call */
    if (st == CLF_SUCCESS) {
        clf__rec r = {0};
        r.kind = CLF__REC_PEER;
        r.bytes = c->size;
        r.src = c->sdev;
        r.dst = c->ddev;
        r.path = (clf_path)c->path;
        clf__metrics_event(fl, qdev, &r, done); /* timed when it completes */
        st = clf__event_wrap(done, out_event);
    }
out:
    for (size_t i = 0; i < nev; i++)
        clReleaseEvent(ev[i]);
    free(ev);
    return st;
}

static clf_status check_region(const clf_buffer *b, size_t off, size_t size, const char *what)
{
    size_t end;
    if (clf__add_overflow(off, size, &end))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "copy: %s offset %zu + size %zu overflows",
                         what, off, size);
    if (end > b->size)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "copy: %s region [%zu, %zu) outside its buffer of %zu bytes", what, off,
                         end, b->size);
    return CLF_SUCCESS;
}

static clf_status copy(clf_buffer *dst, size_t doff, clf_buffer *src, size_t soff, size_t size,
                       clf_event *const *wait, size_t nwait, clf_event **out_event,
                       int blocking)
{
    const char *fn = blocking ? "clf_copy" : "clf_copy_async";
    if (out_event)
        *out_event = NULL;
    if (!dst || !src)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %s buffer is NULL", fn,
                         dst ? "source" : "destination");
    if (nwait && !wait)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: %zu events but the wait list is NULL",
                         fn, nwait);
    if (nwait > SIZE_MAX / sizeof(cl_event))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu events in the wait list", fn, nwait);
    for (size_t i = 0; i < nwait; i++)
        if (!wait[i])
            return clf__fail(CLF_ERROR_NULL_POINTER, "%s: wait-list event %zu is NULL", fn, i);
    if (dst->fleet != src->fleet)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: the buffers belong to different fleets",
                         fn);
    if (size == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: size is zero", fn);
    clf_status st = check_region(src, soff, size, "source");
    if (st == CLF_SUCCESS)
        st = check_region(dst, doff, size, "destination");
    if (st != CLF_SUCCESS)
        return st;
    if (dst->mem == src->mem && soff < doff + size && doff < soff + size)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: source [%zu, %zu) and destination [%zu, %zu) overlap in one buffer",
                         fn, soff, soff + size, doff, doff + size);

    clf_fleet *fl = src->fleet;
    /* The fault rules and a failed device's refusal, once per copy whatever the path (the
     * transports' own commands opt out): the source is read, the destination written. */
    char what[96];
    snprintf(what, sizeof what, "%s from device %zu to device %zu", fn, src->device,
             dst->device);
    if ((st = clf__cmd_check(fl, src->device, CLF__FAULT_READ, what)) != CLF_SUCCESS ||
        (st = clf__cmd_check(fl, dst->device, CLF__FAULT_WRITE, what)) != CLF_SUCCESS)
        return st;
    struct clf__xfer *x = fl->xfer;
    clf__copy *c = calloc(1, sizeof *c);
    if (!c)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "copy: out of memory");
    c->fleet = fl;
    c->dst = dst->mem;
    c->src = src->mem;
    clRetainMemObject(c->dst); /* the caller may destroy the buffers at once */
    clRetainMemObject(c->src);
    c->ddev = dst->device;
    c->sdev = src->device;
    c->doff = doff;
    c->soff = soff;
    c->size = size;
    c->path = (clf__path)x->path[c->sdev * fl->ndev + c->ddev];

    /* A device that runs commands inside clEnqueue* (PoCL's basic) must not get a command
     * that waits for an event of another queue: it would run inside that queue's completion
     * and can deadlock there (PoCL 3; core/devops.c). Such a copy is run by the host once
     * its wait list is over (submit()). */
    const clf__path_ops *ops = PATHS[c->path];
    size_t qdev = ops->queue_on_src ? c->sdev : c->ddev;
    c->on_host = !ops->enqueue || (nwait && !clf__devops(fl, qdev)->wait_list_ok);
    if (!c->on_host) {
        st = enqueue_direct(c, wait, nwait, out_event);
        copy_free(c);
        return st;
    }
    if (blocking) { /* no wait list: on this thread, without a hand-over */
        st = run_host(c);
        copy_free(c);
        return st;
    }
    /* On the helper pool once the wait list is over: hold the wait list, and flush the
     * queues of its OpenCL events so that their commands start now. */
    if (nwait && !(c->deps = calloc(nwait, sizeof *c->deps)))
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "copy: out of memory"));
    for (size_t i = 0; i < nwait; i++) {
        clf_event *e = wait[i];
        clf__event_hold(e);
        c->deps[c->ndeps++] = e;
        cl_command_queue q = NULL;
        if (e->ev && clGetEventInfo(e->ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) ==
                         CL_SUCCESS &&
            q)
            clFlush(q);
    }
    c->done = clf__completion_create(0);
    if (!c->done)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "copy: out of memory"));
    struct clf__completion *done = c->done;
    clf__completion_ref(done); /* the caller's, for the event */
    submit(x, c);
    c = NULL; /* the pool's job owns it now */
    if (out_event)
        return clf__event_wrap_completion(done, out_event);
    clf__completion_unref(done);
    return CLF_SUCCESS;
out:
    copy_free(c);
    return st;
}

clf_status clf_copy_async(clf_buffer *dst, size_t dst_offset, clf_buffer *src, size_t src_offset,
                          size_t size, clf_event *const *wait, size_t num_wait,
                          clf_event **out_event)
{
    return copy(dst, dst_offset, src, src_offset, size, wait, num_wait, out_event, 0);
}

clf_status clf_copy(clf_buffer *dst, size_t dst_offset, clf_buffer *src, size_t src_offset,
                    size_t size)
{
    clf_event *ev = NULL;
    clf_status st = copy(dst, dst_offset, src, src_offset, size, NULL, 0, &ev, 1);
    if (st == CLF_SUCCESS && ev) {
        st = clf_event_wait(ev);
        clf_event_release(ev);
    }
    return st;
}

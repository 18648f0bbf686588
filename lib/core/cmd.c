/*
 * The command path: the kernels, buffer reads and writes and markers that the
 * task queues, pipelines, collectives and synchronisation enqueue on a device
 * go through here, so that each is handled the same way:
 *
 *  - on a device that runs commands inside clEnqueue* (PoCL's basic), the
 *    wait list is waited for on the host first and the command is enqueued
 *    with none, so that it runs inside its own enqueue and never inside
 *    another thread's completion, where PoCL 3 can deadlock or abort; the
 *    enqueue holds the device's exec lock (clf__dev_exec_enter());
 *  - a failed enqueue is recorded with the device (clf__cl_fail());
 *  - every kernel and transfer is counted in the fleet's metrics and kept on
 *    the timeline of the queue it ran on (clf__metrics_event()).
 *
 * Launch workers (worker.c) and the transfer paths (transfer.c, staging.c)
 * keep their own enqueues: they time, batch and inject faults in ways these
 * helpers do not.
 */
#include "core.h"

#include <stdio.h>

/* The basic-device exec lock (core.h says why); the flag and the lock live in the
 * device, set up by clf__xfer_init() (transfer.c). */
int clf__dev_sync_exec(const clf_fleet *fl, size_t dev)
{
    return fl && fl->xfer && dev < fl->ndev && fl->dev[dev].sync_exec;
}

void clf__dev_exec_enter(clf_fleet *fl, size_t dev)
{
    if (clf__dev_sync_exec(fl, dev))
        pthread_mutex_lock(&fl->dev[dev].exec_lock);
}

void clf__dev_exec_leave(clf_fleet *fl, size_t dev)
{
    if (clf__dev_sync_exec(fl, dev))
        pthread_mutex_unlock(&fl->dev[dev].exec_lock);
}

/* Before an enqueue on device dev: a sync-exec device waits for the wait list on the host
 * (without its exec lock, which the commands waited for may need) and gets none; then the
 * exec lock. */
static clf_status enter(clf_fleet *fl, size_t dev, cl_uint *nwait, const cl_event **wait)
{
    if (*nwait == 0)
        *wait = NULL;
    if (clf__dev_sync_exec(fl, dev) && *nwait) {
        clf__log(CLF_LOG_DEBUG, "device %zu '%s': waiting on the host for %u event(s) before an "
                 "enqueue (it runs commands inside clEnqueue*)", dev, fl->dev[dev].info.name,
                 (unsigned)*nwait);
        cl_int err = clWaitForEvents(*nwait, *wait);
        if (err != CL_SUCCESS)
            return clf__cl_fail(err, "clWaitForEvents (a command's wait list)", &fl->dev[dev]);
        *nwait = 0;
        *wait = NULL;
    }
    clf__dev_exec_enter(fl, dev);
    return CLF_SUCCESS;
}

/* The event the enqueue should make: the caller's, or a temporary one for the metrics. */
static cl_event *event_slot(const clf_fleet *fl, cl_event *ev, cl_event *tmp)
{
    *tmp = NULL;
    if (ev) {
        *ev = NULL;
        return ev;
    }
    return fl->metrics ? tmp : NULL;
}

/* After the enqueue: flush (a queue of another device may wait for the command, and some
 * drivers submit nothing until a flush), give the lock back, then record the command; the
 * record goes last because on a sync-exec device the command has completed already and its
 * completion callback runs at once, in this thread. */
static clf_status leave(clf_fleet *fl, size_t dev, cl_command_queue q, cl_int err,
                        const char *call, const char *what, const clf__rec *r, cl_event *ev,
                        cl_event tmp)
{
    struct clf__device *d = &fl->dev[dev];
    if (err == CL_SUCCESS)
        clFlush(q);
    clf__dev_exec_leave(fl, dev);
    if (err != CL_SUCCESS) {
        char c[160];
        snprintf(c, sizeof c, "%s (%s)", call, what);
        if (ev)
            *ev = NULL;
        return clf__cl_fail(err, c, d);
    }
    cl_event e = ev ? *ev : tmp;
    if (r && e) {
        clf__rec x = *r;
        /* The queue's own track: commands of one in-order queue never overlap there. */
        x.track = q == d->compute    ? CLF__TRACK_COMPUTE
                  : q == d->transfer ? CLF__TRACK_TRANSFER
                                     : 0;
        clf__metrics_event(fl, dev, &x, e);
    }
    if (tmp)
        clReleaseEvent(tmp);
    return CLF_SUCCESS;
}

clf_status clf__cmd_kernel(clf_fleet *fl, size_t dev, cl_command_queue q, cl_kernel k,
                           const char *name, cl_uint dims, const size_t *off, const size_t *gsz,
                           const size_t *lsz, cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    cl_event tmp, *out = event_slot(fl, ev, &tmp);
    clf_status st = enter(fl, dev, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueNDRangeKernel(q, k, dims, off, gsz, lsz, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_KERNEL;
    r.name = name;
    r.a0 = off ? (int64_t)off[0] : 0;
    r.a1 = (int64_t)gsz[0];
    return leave(fl, dev, q, err, "clEnqueueNDRangeKernel", name, &r, ev, tmp);
}

clf_status clf__cmd_write(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, size_t off,
                          size_t size, const void *host, const char *what, cl_uint nwait,
                          const cl_event *wait, cl_event *ev)
{
    cl_event tmp, *out = event_slot(fl, ev, &tmp);
    clf_status st = enter(fl, dev, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueWriteBuffer(q, buf, CL_FALSE, off, size, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_TO_DEVICE;
    r.bytes = size;
    return leave(fl, dev, q, err, "clEnqueueWriteBuffer", what, &r, ev, tmp);
}

clf_status clf__cmd_read(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, size_t off,
                         size_t size, void *host, const char *what, cl_uint nwait,
                         const cl_event *wait, cl_event *ev)
{
    cl_event tmp, *out = event_slot(fl, ev, &tmp);
    clf_status st = enter(fl, dev, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueReadBuffer(q, buf, CL_FALSE, off, size, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_FROM_DEVICE;
    r.bytes = size;
    return leave(fl, dev, q, err, "clEnqueueReadBuffer", what, &r, ev, tmp);
}

clf_status clf__cmd_write_rect(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf,
                               const size_t borigin[3], const size_t horigin[3],
                               const size_t region[3], size_t brow, size_t bslice, size_t hrow,
                               size_t hslice, const void *host, const char *what, cl_uint nwait,
                               const cl_event *wait, cl_event *ev)
{
    cl_event tmp, *out = event_slot(fl, ev, &tmp);
    clf_status st = enter(fl, dev, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueWriteBufferRect(q, buf, CL_FALSE, borigin, horigin, region, brow,
                                          bslice, hrow, hslice, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_TO_DEVICE;
    r.bytes = region[0] * region[1] * region[2];
    return leave(fl, dev, q, err, "clEnqueueWriteBufferRect", what, &r, ev, tmp);
}

clf_status clf__cmd_marker(clf_fleet *fl, size_t dev, cl_command_queue q, const char *what,
                           cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    if (ev)
        *ev = NULL;
    clf_status st = enter(fl, dev, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueMarkerWithWaitList(q, nwait, wait, ev);
    return leave(fl, dev, q, err, "clEnqueueMarkerWithWaitList", what, NULL, ev, NULL);
}

/*
 * The command path: every command clfleet enqueues on a device (kernels, buffer reads,
 * writes, rectangles, fills, copies, maps, barriers and markers) and every buffer and kernel
 * object it creates goes through here, so that each is handled the same way:
 *
 *  - on a device that runs commands inside clEnqueue* (PoCL's basic; its ops table,
 *    devops.c, says !wait_list_ok), the wait list is waited for on the host first and the command is enqueued
 *    with none, so that it runs inside its own enqueue and never inside
 *    another thread's completion, where PoCL 3 can deadlock or abort; the
 *    enqueue, and only the enqueue, holds the device's exec lock
 *    (clf__dev_exec_enter());
 *  - a fault rule of $CLFLEET_FAULT_INJECT is applied: the one the caller names
 *    (clf__cmd_opt.fault: the launch executor's alloc/write/read/enqueue hooks), else the
 *    class of the command's kind, so that task queues, pipelines and collectives are
 *    reached without naming one; such a command on a device marked failed fails
 *    (CLF_ERROR_DEVICE_FAILED) until clf_device_readmit() (core.h lists who opts out);
 *  - a failed enqueue is recorded with the device (clf__cl_fail());
 *  - every kernel and transfer is counted in the fleet's metrics and kept on
 *    the timeline of the queue it ran on (clf__metrics_event()), unless the caller
 *    accounts for it itself (CLF__CMD_NO_METRICS: the launch executor counts its chunks
 *    from their events in its report and then in clf__metrics_launch()).
 *
 * tools/cmdpath.sh checks that no other file calls clEnqueue*, clCreateBuffer,
 * clCreateSubBuffer or clCreateKernel.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet/opencl.h" /* clf_cl_lock() */

/* The exec lock of a device whose table serialises enqueues (devops.c says why). */
void clf__dev_exec_enter(clf_fleet *fl, size_t dev)
{
    if (fl && dev < fl->ndev)
        clf__devops(fl, dev)->enqueue_enter(&fl->dev[dev]);
}

void clf__dev_exec_leave(clf_fleet *fl, size_t dev)
{
    if (fl && dev < fl->ndev)
        clf__devops(fl, dev)->enqueue_leave(&fl->dev[dev]);
}

/* The same lock for interop users' own enqueues (clfleet/opencl.h). */
void clf_cl_lock(clf_fleet *fl, size_t dev)
{
    clf__dev_exec_enter(fl, dev);
}

void clf_cl_unlock(clf_fleet *fl, size_t dev)
{
    clf__dev_exec_leave(fl, dev);
}

static const clf__cmd_opt no_opt; /* the defaults */

static const clf__cmd_opt *opt_or_default(clf__cmd_opt *o)
{
    if (!o)
        return &no_opt;
    o->err = CL_SUCCESS;
    o->injected = 0;
    return o;
}

/* A failed call: recorded with the device, and in *o for a caller that acts on the status. */
static clf_status fail(clf_fleet *fl, size_t dev, const clf__cmd_opt *co, cl_int err,
                       int injected, const char *call, const char *what)
{
    if (co != &no_opt) {
        clf__cmd_opt *o = (clf__cmd_opt *)co;
        o->err = err;
        o->injected = injected;
    }
    char c[160];
    if (what)
        snprintf(c, sizeof c, "%s (%s)", call, what);
    else
        snprintf(c, sizeof c, "%s", call);
    clf_status st = clf__cl_fail(err, c, &fl->dev[dev]);
    if (injected)
        clf__append_error(" (injected by CLFLEET_FAULT_INJECT)");
    return st;
}

/* No fault class: markers and barriers do no work a device could fail. */
#define NO_CLASS CLF__FAULT_NCALLS

/* A device marked failed refuses a command of the default path: its results could be wrong,
 * and the subsystems then fail clearly (or give the work to another device) instead of
 * running on it. The flag is read without the lock first: it is set rarely. */
static clf_status refuse_failed(clf_fleet *fl, size_t dev, const clf__cmd_opt *co,
                                const char *what)
{
    if (!__atomic_load_n(&fl->dev[dev].failed, __ATOMIC_RELAXED))
        return CLF_SUCCESS;
    char why[200];
    if (!clf__device_failed(fl, dev, why, sizeof why))
        return CLF_SUCCESS;
    if (co != &no_opt) {
        clf__cmd_opt *o = (clf__cmd_opt *)co;
        o->err = CL_DEVICE_NOT_AVAILABLE;
        o->injected = 0;
    }
    return clf__fail(CLF_ERROR_DEVICE_FAILED,
                     "%s: device %zu '%s' failed earlier and is left out until "
                     "clf_device_readmit(): %s",
                     what ? what : "command", dev, fl->dev[dev].info.name, why);
}

/* The fault rule that applies (the caller's, else the kind's class unless it opted out):
 * CL_SUCCESS, or the injected status. A failed device's refusal comes first (*st). */
static cl_int inject(clf_fleet *fl, size_t dev, const clf__cmd_opt *o, unsigned kind,
                     const char *what, clf_status *st)
{
    *st = CLF_SUCCESS;
    if (o->flags & CLF__CMD_FAULT)
        return CLF__FAULT(fl, dev, o->fault);
    if ((o->flags & CLF__CMD_NO_FAULT) || kind == NO_CLASS)
        return CL_SUCCESS;
    if ((*st = refuse_failed(fl, dev, o, what)) != CLF_SUCCESS)
        return CL_DEVICE_NOT_AVAILABLE;
    cl_int err = CLF__FAULT(fl, dev, kind);
    /* A kernel is also an exec call: here it fails before it runs rather than while. */
    if (err == CL_SUCCESS && kind == CLF__FAULT_ENQUEUE)
        err = CLF__FAULT(fl, dev, CLF__FAULT_EXEC);
    return err;
}

clf_status clf__cmd_check(clf_fleet *fl, size_t dev, unsigned call, const char *what)
{
    clf_status st = refuse_failed(fl, dev, &no_opt, what);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = CLF__FAULT(fl, dev, call);
    return err == CL_SUCCESS ? CLF_SUCCESS : fail(fl, dev, &no_opt, err, 1, what, NULL);
}

/* Before an enqueue on device dev: a device whose table says !wait_list_ok waits for the wait list on the host
 * (without its exec lock, which the commands waited for may need) and gets none; then the
 * exec lock. */
static clf_status enter(clf_fleet *fl, size_t dev, const clf__cmd_opt *o, cl_uint *nwait,
                        const cl_event **wait)
{
    if (*nwait == 0)
        *wait = NULL;
    if (!clf__devops(fl, dev)->wait_list_ok && *nwait) {
        clf__log(CLF_LOG_DEBUG, "device %zu '%s': waiting on the host for %u event(s) before an "
                 "enqueue (it runs commands inside clEnqueue*)", dev, fl->dev[dev].info.name,
                 (unsigned)*nwait);
        cl_int err = clWaitForEvents(*nwait, *wait);
        if (err != CL_SUCCESS)
            return fail(fl, dev, o, err, 0, "clWaitForEvents", "a command's wait list");
        *nwait = 0;
        *wait = NULL;
    }
    clf__dev_exec_enter(fl, dev);
    return CLF_SUCCESS;
}

/* The event the enqueue should make: the caller's, or a temporary one for the metrics. */
static cl_event *event_slot(const clf_fleet *fl, const clf__cmd_opt *o, cl_event *ev,
                            cl_event *tmp)
{
    *tmp = NULL;
    if (ev) {
        *ev = NULL;
        return ev;
    }
    /* A simulated device needs the event too, to delay it (observe/simulate.h). */
    return (fl->metrics && !(o->flags & CLF__CMD_NO_METRICS)) || fl->sim ? tmp : NULL;
}

/* $CLFLEET_SIMULATE: the command's event *e (the caller's, or tmp) replaced by a marker that
 * completes when the simulated device would have finished (observe/simulate.h). Only the
 * commands the metrics count (r: kernels, transfers, fills, copies) are slowed; markers,
 * barriers and maps do no work of their own. */
static cl_int simulate(clf_fleet *fl, size_t dev, cl_command_queue q, const clf__rec *r,
                       cl_event since, cl_event *e)
{
    if (!r || !*e || !clf__sim_device(fl, dev))
        return CL_SUCCESS;
    unsigned kind = r->kind == CLF__REC_KERNEL        ? CLF__SIM_KERNEL
                    : r->kind == CLF__REC_TO_DEVICE   ? CLF__SIM_H2D
                    : r->kind == CLF__REC_FROM_DEVICE ? CLF__SIM_D2H
                                                      : CLF__SIM_OTHER;
    cl_event u, m = NULL;
    if (clf__sim_user_event(fl, dev, &u) != CLF_SUCCESS)
        return CL_OUT_OF_HOST_MEMORY; /* the detail is set */
    cl_int err = clEnqueueMarkerWithWaitList(q, 1, &u, &m);
    clf_status st =
        clf__sim_arm_since(fl, dev, *e, since, err == CL_SUCCESS ? m : NULL, u, kind, r->bytes);
    if (err != CL_SUCCESS) {
        clf__cl_fail(err, "clEnqueueMarkerWithWaitList (CLFLEET_SIMULATE)", &fl->dev[dev]);
        return err; /* the real command runs on; its event is the caller's to release */
    }
    /* The marker stands for the command from now on; it completes even when arming failed. */
    clReleaseEvent(*e);
    *e = m;
    return st == CLF_SUCCESS ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
}

/* After the enqueue: flush (a queue of another device may wait for the command, and some
 * drivers submit nothing until a flush) unless the caller flushes a batch, give the lock
 * back, then record the command; the record goes last because on a !wait_list_ok device the
 * command has completed already and its completion callback runs at once, in this thread. */
static clf_status leave(clf_fleet *fl, size_t dev, const clf__cmd_opt *o, cl_command_queue q,
                        cl_int err, const char *call, const char *what, const clf__rec *r,
                        cl_event *ev, cl_event tmp)
{
    struct clf__device *d = &fl->dev[dev];
    int sim = 0;
    if (__builtin_expect(fl->sim != NULL, 0) && err == CL_SUCCESS) {
        /* Before the flush, so that the marker is submitted with the command. A blocking
         * command's caller waits for the simulated end too. */
        cl_event *e = ev ? ev : &tmp;
        cl_event before = *e;
        err = simulate(fl, dev, q, r, NULL, e);
        sim = *e != before;
        if (err != CL_SUCCESS)
            call = "CLFLEET_SIMULATE";
    }
    if (err == CL_SUCCESS && !(o->flags & (CLF__CMD_NO_FLUSH | CLF__CMD_BLOCKING)))
        clFlush(q);
    clf__dev_exec_leave(fl, dev);
    if (err == CL_SUCCESS && sim && (o->flags & CLF__CMD_BLOCKING))
        err = clWaitForEvents(1, ev ? ev : &tmp);
    if (err != CL_SUCCESS) {
        if (ev) {
            if (*ev)
                clReleaseEvent(*ev);
            *ev = NULL;
        }
        if (tmp)
            clReleaseEvent(tmp);
        return fail(fl, dev, o, err, 0, call, what);
    }
    cl_event e = ev ? *ev : tmp;
    if (r && e && !(o->flags & CLF__CMD_NO_METRICS)) {
        clf__rec x = *r;
        /* The queue's own track: commands of one in-order queue never overlap there. */
        x.track = q == d->compute    ? CLF__TRACK_COMPUTE
                  : q == d->transfer ? CLF__TRACK_TRANSFER
                                     : 0;
        /* A blocking command has completed: counted now, so that the caller sees it. */
        if ((o->flags & CLF__CMD_BLOCKING) && clf__event_profile(e, &x.t0, &x.t1))
            clf__metrics_record(fl, dev, &x, 1);
        else
            clf__metrics_event(fl, dev, &x, e);
    }
    if (tmp)
        clReleaseEvent(tmp);
    return CLF_SUCCESS;
}

clf_status clf__cmd_adopt_kernel(clf_fleet *fl, size_t dev, cl_command_queue q, cl_event since,
                                 cl_event *ev)
{
    if (__builtin_expect(fl->sim == NULL, 1) || !*ev)
        return CLF_SUCCESS;
    clf__rec r = {0};
    r.kind = CLF__REC_KERNEL;
    cl_int err = simulate(fl, dev, q, &r, since, ev); /* *ev stays a valid event whatever happens */
    if (err != CL_SUCCESS)
        clf__log(CLF_LOG_WARN, "CLFLEET_SIMULATE: device %zu: a library's kernel is not held "
                 "back: %s", dev, clf_last_error());
    return CLF_SUCCESS;
}

/* The common frame of an enqueue: options, fault rule, event slot, enter; the enqueue itself
 * is the statement after it, with `out` as its event and `blk` as its blocking flag. */
#define CMD_BEGIN(call, what, kind)                                                                \
    const clf__cmd_opt *o = opt_or_default(opt);                                                   \
    cl_event tmp, *out = event_slot(fl, o, ev, &tmp);                                              \
    clf_status rst;                                                                                \
    cl_int ierr = inject(fl, dev, o, (kind), (what), &rst);                                        \
    if (rst != CLF_SUCCESS)                                                                        \
        return rst;                                                                                \
    if (ierr != CL_SUCCESS)                                                                        \
        return fail(fl, dev, o, ierr, 1, (call), (what));                                          \
    clf_status est = enter(fl, dev, o, &nwait, &wait);                                             \
    if (est != CLF_SUCCESS)                                                                        \
        return est;                                                                                \
    cl_bool blk = o->flags & CLF__CMD_BLOCKING ? CL_TRUE : CL_FALSE;                              \
    (void)blk

clf_status clf__cmd_kernel_opt(clf_fleet *fl, size_t dev, cl_command_queue q, cl_kernel k,
                               const char *name, cl_uint dims, const size_t *off,
                               const size_t *gsz, const size_t *lsz, cl_uint nwait,
                               const cl_event *wait, cl_event *ev, clf__cmd_opt *opt)
{
    CMD_BEGIN("clEnqueueNDRangeKernel", name, CLF__FAULT_ENQUEUE);
    cl_int err = clEnqueueNDRangeKernel(q, k, dims, off, gsz, lsz, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_KERNEL;
    r.name = name;
    r.a0 = off ? (int64_t)off[0] : 0;
    r.a1 = (int64_t)gsz[0];
    return leave(fl, dev, o, q, err, "clEnqueueNDRangeKernel", name, &r, ev, tmp);
}

clf_status clf__cmd_kernel(clf_fleet *fl, size_t dev, cl_command_queue q, cl_kernel k,
                           const char *name, cl_uint dims, const size_t *off, const size_t *gsz,
                           const size_t *lsz, cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    return clf__cmd_kernel_opt(fl, dev, q, k, name, dims, off, gsz, lsz, nwait, wait, ev, NULL);
}

clf_status clf__cmd_write_opt(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf,
                              size_t off, size_t size, const void *host, const char *what,
                              cl_uint nwait, const cl_event *wait, cl_event *ev,
                              clf__cmd_opt *opt)
{
    CMD_BEGIN("clEnqueueWriteBuffer", what, CLF__FAULT_WRITE);
    cl_int err = clEnqueueWriteBuffer(q, buf, blk, off, size, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_TO_DEVICE;
    r.bytes = size;
    return leave(fl, dev, o, q, err, "clEnqueueWriteBuffer", what, &r, ev, tmp);
}

clf_status clf__cmd_write(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, size_t off,
                          size_t size, const void *host, const char *what, cl_uint nwait,
                          const cl_event *wait, cl_event *ev)
{
    return clf__cmd_write_opt(fl, dev, q, buf, off, size, host, what, nwait, wait, ev, NULL);
}

clf_status clf__cmd_read_opt(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf,
                             size_t off, size_t size, void *host, const char *what,
                             cl_uint nwait, const cl_event *wait, cl_event *ev,
                             clf__cmd_opt *opt)
{
    CMD_BEGIN("clEnqueueReadBuffer", what, CLF__FAULT_READ);
    cl_int err = clEnqueueReadBuffer(q, buf, blk, off, size, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_FROM_DEVICE;
    r.bytes = size;
    return leave(fl, dev, o, q, err, "clEnqueueReadBuffer", what, &r, ev, tmp);
}

clf_status clf__cmd_read(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, size_t off,
                         size_t size, void *host, const char *what, cl_uint nwait,
                         const cl_event *wait, cl_event *ev)
{
    return clf__cmd_read_opt(fl, dev, q, buf, off, size, host, what, nwait, wait, ev, NULL);
}

clf_status clf__cmd_rect_opt(clf_fleet *fl, size_t dev, cl_command_queue q, int to_device,
                             cl_mem buf, const size_t borigin[3], const size_t horigin[3],
                             const size_t region[3], size_t brow, size_t bslice, size_t hrow,
                             size_t hslice, void *host, const char *what, cl_uint nwait,
                             const cl_event *wait, cl_event *ev, clf__cmd_opt *opt)
{
    const char *call = to_device ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect";
    CMD_BEGIN(call, what, to_device ? CLF__FAULT_WRITE : CLF__FAULT_READ);
    cl_int err = to_device ? clEnqueueWriteBufferRect(q, buf, blk, borigin, horigin, region, brow,
                                                      bslice, hrow, hslice, host, nwait, wait,
                                                      out)
                           : clEnqueueReadBufferRect(q, buf, blk, borigin, horigin, region, brow,
                                                     bslice, hrow, hslice, host, nwait, wait,
                                                     out);
    clf__rec r = {0};
    r.kind = to_device ? CLF__REC_TO_DEVICE : CLF__REC_FROM_DEVICE;
    r.bytes = region[0] * region[1] * region[2];
    return leave(fl, dev, o, q, err, call, what, &r, ev, tmp);
}

clf_status clf__cmd_write_rect(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf,
                               const size_t borigin[3], const size_t horigin[3],
                               const size_t region[3], size_t brow, size_t bslice, size_t hrow,
                               size_t hslice, const void *host, const char *what, cl_uint nwait,
                               const cl_event *wait, cl_event *ev)
{
    return clf__cmd_rect_opt(fl, dev, q, 1, buf, borigin, horigin, region, brow, bslice, hrow,
                             hslice, (void *)host, what, nwait, wait, ev, NULL);
}

clf_status clf__cmd_fill(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf,
                         const void *pattern, size_t pattern_size, size_t off, size_t size,
                         const char *what, cl_uint nwait, const cl_event *wait, cl_event *ev,
                         clf__cmd_opt *opt)
{
    CMD_BEGIN("clEnqueueFillBuffer", what, CLF__FAULT_WRITE);
    cl_int err = clEnqueueFillBuffer(q, buf, pattern, pattern_size, off, size, nwait, wait, out);
    if (err == CL_SUCCESS && blk)
        err = clFinish(q);
    clf__rec r = {0};
    r.kind = CLF__REC_FILL;
    r.bytes = size;
    return leave(fl, dev, o, q, err, "clEnqueueFillBuffer", what, &r, ev, tmp);
}

clf_status clf__cmd_copy(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem src, cl_mem dst,
                         size_t soff, size_t doff, size_t size, const char *what, cl_uint nwait,
                         const cl_event *wait, cl_event *ev, clf__cmd_opt *opt)
{
    CMD_BEGIN("clEnqueueCopyBuffer", what, CLF__FAULT_WRITE);
    cl_int err = clEnqueueCopyBuffer(q, src, dst, soff, doff, size, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_PEER;
    r.bytes = size;
    return leave(fl, dev, o, q, err, "clEnqueueCopyBuffer", what, &r, ev, tmp);
}

clf_status clf__cmd_map(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf,
                        cl_map_flags flags, size_t off, size_t size, const char *what,
                        cl_uint nwait, const cl_event *wait, cl_event *ev, clf__cmd_opt *opt,
                        void **ptr)
{
    const clf__cmd_opt *o = opt_or_default(opt);
    *ptr = NULL;
    if (ev)
        *ev = NULL;
    clf_status st;
    cl_int err = inject(fl, dev, o, flags & CL_MAP_READ ? CLF__FAULT_READ : CLF__FAULT_WRITE,
                        what, &st);
    if (st != CLF_SUCCESS)
        return st;
    if (err != CL_SUCCESS)
        return fail(fl, dev, o, err, 1, "clEnqueueMapBuffer", what);
    st = enter(fl, dev, o, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    void *p = clEnqueueMapBuffer(q, buf, o->flags & CLF__CMD_BLOCKING ? CL_TRUE : CL_FALSE,
                                 flags, off, size, nwait, wait, ev, &err);
    /* Not counted: a map moves what a transfer would count. */
    st = leave(fl, dev, o, q, err, "clEnqueueMapBuffer", what, NULL, ev, NULL);
    if (st == CLF_SUCCESS)
        *ptr = p;
    return st;
}

clf_status clf__cmd_unmap(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, void *ptr,
                          const char *what, cl_uint nwait, const cl_event *wait, cl_event *ev,
                          clf__cmd_opt *opt)
{
    const clf__cmd_opt *o = opt_or_default(opt);
    if (ev)
        *ev = NULL;
    clf_status rst;
    cl_int ierr = inject(fl, dev, o, NO_CLASS, what, &rst); /* the map was the transfer */
    if (rst != CLF_SUCCESS)
        return rst;
    if (ierr != CL_SUCCESS)
        return fail(fl, dev, o, ierr, 1, "clEnqueueUnmapMemObject", what);
    clf_status est = enter(fl, dev, o, &nwait, &wait);
    if (est != CLF_SUCCESS)
        return est;
    cl_int err = clEnqueueUnmapMemObject(q, buf, ptr, nwait, wait, ev);
    return leave(fl, dev, o, q, err, "clEnqueueUnmapMemObject", what, NULL, ev, NULL);
}

clf_status clf__cmd_marker(clf_fleet *fl, size_t dev, cl_command_queue q, const char *what,
                           cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    if (ev)
        *ev = NULL;
    clf_status st = enter(fl, dev, &no_opt, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueMarkerWithWaitList(q, nwait, wait, ev);
    return leave(fl, dev, &no_opt, q, err, "clEnqueueMarkerWithWaitList", what, NULL, ev, NULL);
}

clf_status clf__cmd_barrier(clf_fleet *fl, size_t dev, cl_command_queue q, const char *what,
                            cl_uint nwait, const cl_event *wait, cl_event *ev, clf__cmd_opt *opt)
{
    const clf__cmd_opt *o = opt_or_default(opt);
    if (ev)
        *ev = NULL;
    clf_status st;
    cl_int ierr = inject(fl, dev, o, NO_CLASS, what, &st);
    if (st != CLF_SUCCESS)
        return st;
    if (ierr != CL_SUCCESS)
        return fail(fl, dev, o, ierr, 1, "clEnqueueBarrierWithWaitList", what);
    st = enter(fl, dev, o, &nwait, &wait);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = clEnqueueBarrierWithWaitList(q, nwait, wait, ev);
    return leave(fl, dev, o, q, err, "clEnqueueBarrierWithWaitList", what, NULL, ev, NULL);
}

clf_status clf__cmd_buffer(clf_fleet *fl, size_t dev, cl_mem_flags flags, size_t size,
                           void *host, const char *what, clf__cmd_opt *opt, cl_mem *out)
{
    const clf__cmd_opt *o = opt_or_default(opt);
    *out = NULL;
    clf_status st;
    cl_int err = inject(fl, dev, o, CLF__FAULT_ALLOC, what, &st);
    if (st != CLF_SUCCESS)
        return st;
    if (err != CL_SUCCESS)
        return fail(fl, dev, o, err, 1, "clCreateBuffer", what);
    cl_mem m = clCreateBuffer(fl->dev[dev].ctx, flags, size, host, &err);
    if (err != CL_SUCCESS)
        return fail(fl, dev, o, err, 0, "clCreateBuffer", what);
    if (!(o->flags & CLF__CMD_NO_METRICS))
        clf__metrics_alloc(fl, dev, size);
    *out = m;
    return CLF_SUCCESS;
}

/* The kernels of a built program, as the driver names them ("a, b, c"; "..." when they do not
 * fit in out), for the refusal of a name it lacks. 0 when the driver does not say. */
static int kernel_names(cl_program prog, char *out, size_t n)
{
    size_t len = 0;
    if (n < 5 || clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len) != CL_SUCCESS ||
        len == 0)
        return 0;
    char *all = malloc(len + 1);
    if (!all || clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, len, all, NULL) != CL_SUCCESS) {
        free(all);
        return 0;
    }
    all[len] = '\0';
    /* The driver separates the names with ';'; a reader expects ", ". A list too long for out
     * ends with "..." rather than with half a name. */
    size_t o = 0;
    int any = 0;
    out[0] = '\0';
    for (char *save = NULL, *k = strtok_r(all, ";", &save); k; k = strtok_r(NULL, ";", &save)) {
        size_t need = strlen(k) + (any ? 2 : 0);
        if (o + need + 4 >= n) {
            snprintf(out + o, n - o, "%s...", any ? ", " : "");
            break;
        }
        o += (size_t)snprintf(out + o, n - o, "%s%s", any ? ", " : "", k);
        any = 1;
    }
    free(all);
    return out[0] != '\0';
}

clf_status clf__cmd_kernel_create(clf_fleet *fl, size_t dev, const struct clf_program *p,
                                  const char *name, const size_t *range, unsigned dims,
                                  cl_int *cl_err, cl_kernel *out)
{
    *out = NULL;
    cl_int err;
    cl_kernel k = clCreateKernel(p->prog[dev], name, &err);
    if (cl_err)
        *cl_err = err;
    if (err == CL_INVALID_KERNEL_NAME) {
        char names[600];
        if (kernel_names(p->prog[dev], names, sizeof names))
            return clf__fail(CLF_ERROR_NOT_FOUND, "no kernel '%.128s' in the program (it has: "
                             "%s)", name, names);
        return clf__fail(CLF_ERROR_NOT_FOUND, "no kernel '%.128s' in the program", name);
    }
    if (err != CL_SUCCESS)
        return fail(fl, dev, &no_opt, err, 0, "clCreateKernel", NULL);
    if (range) {
        clf_status st = clf__program_set_range(p, name, k, range, dims, &fl->dev[dev]);
        if (st != CLF_SUCCESS) {
            clReleaseKernel(k);
            return st;
        }
    }
    *out = k;
    return CLF_SUCCESS;
}

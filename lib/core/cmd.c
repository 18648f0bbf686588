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
 *    (clf__cmd.fault: the launch executor's alloc/write/read/enqueue hooks), else the
 *    class of the command's kind, so that task queues, pipelines and collectives are
 *    reached without naming one; such a command on a device marked failed fails
 *    (CLF_ERROR_DEVICE_FAILED) until clf_device_readmit() (core.h lists who opts out);
 *  - a failed enqueue is recorded with the device (clf__cl_fail());
 *  - every kernel and transfer is counted in the fleet's metrics and kept on
 *    the timeline of the queue it ran on (clf__metrics_event()), unless the caller
 *    accounts for it itself (CLF__CMD_NO_METRICS: the launch executor counts its chunks
 *    from their events in its report and then in clf__metrics_launch());
 *  - a buffer's device memory is counted when clf__cmd_buffer() makes it and un-counted
 *    when clf__cmd_release() releases it, so that the two cannot drift apart.
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

/* Before a command: its out fields cleared, and its event slot, so that a failure leaves no
 * stale status or event behind. */
static void reset(clf__cmd *c)
{
    c->err = CL_SUCCESS;
    c->injected = 0;
    if (c->ev)
        *c->ev = NULL;
}

/* A failed call: recorded with the device, and in *c for a caller that acts on the status. */
static clf_status fail(clf__cmd *c, cl_int err, int injected, const char *call)
{
    c->err = err;
    c->injected = injected;
    char s[160];
    if (c->what)
        snprintf(s, sizeof s, "%s (%s)", call, c->what);
    else
        snprintf(s, sizeof s, "%s", call);
    clf_status st = clf__cl_fail(err, s, &c->fl->dev[c->dev]);
    if (injected)
        clf__append_error(" (injected by CLFLEET_FAULT_INJECT)");
    return st;
}

/* No fault class: markers and barriers do no work a device could fail. */
#define NO_CLASS CLF__FAULT_NCALLS

/* A device marked failed refuses a command of the default path: its results could be wrong,
 * and the subsystems then fail clearly (or give the work to another device) instead of
 * running on it. The flag is read without the lock first: it is set rarely. */
static clf_status refuse_failed(clf_fleet *fl, size_t dev, clf__cmd *c, const char *what)
{
    if (!__atomic_load_n(&fl->dev[dev].failed, __ATOMIC_RELAXED))
        return CLF_SUCCESS;
    char why[200];
    if (!clf__device_failed(fl, dev, why, sizeof why))
        return CLF_SUCCESS;
    if (c) {
        c->err = CL_DEVICE_NOT_AVAILABLE;
        c->injected = 0;
    }
    return clf__fail(CLF_ERROR_DEVICE_FAILED,
                     "%s: device %zu '%s' failed earlier and is left out until "
                     "clf_device_readmit(): %s",
                     what ? what : "command", dev, fl->dev[dev].info.name, why);
}

/* The fault rule that applies (the caller's, else the kind's class unless it opted out),
 * then a failed device's refusal: CLF_SUCCESS, or the failure, recorded. call names the
 * OpenCL call an injected status stands for. */
static clf_status inject(clf__cmd *c, unsigned kind, const char *call)
{
    cl_int err;
    if (c->flags & CLF__CMD_FAULT) {
        err = CLF__FAULT(c->fl, c->dev, c->fault);
    } else {
        if ((c->flags & CLF__CMD_NO_FAULT) || kind == NO_CLASS)
            return CLF_SUCCESS;
        clf_status st = refuse_failed(c->fl, c->dev, c, c->what);
        if (st != CLF_SUCCESS)
            return st;
        err = CLF__FAULT(c->fl, c->dev, kind);
        /* A kernel is also an exec call: here it fails before it runs rather than while. */
        if (err == CL_SUCCESS && kind == CLF__FAULT_ENQUEUE)
            err = CLF__FAULT(c->fl, c->dev, CLF__FAULT_EXEC);
    }
    return err == CL_SUCCESS ? CLF_SUCCESS : fail(c, err, 1, call);
}

clf_status clf__cmd_check(clf_fleet *fl, size_t dev, unsigned call, const char *what)
{
    clf_status st = refuse_failed(fl, dev, NULL, what);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err = CLF__FAULT(fl, dev, call);
    if (err == CL_SUCCESS)
        return CLF_SUCCESS;
    clf__cmd c = CLF__CMD(fl, dev, NULL, NULL);
    return fail(&c, err, 1, what);
}

/* Before an enqueue: a device whose table says !wait_list_ok waits for the wait list on the
 * host (without its exec lock, which the commands waited for may need) and gets none; then
 * the exec lock. *nwait and *wait: the list the enqueue gets. */
static clf_status enter(clf__cmd *c, cl_uint *nwait, const cl_event **wait)
{
    clf_fleet *fl = c->fl;
    *nwait = c->nwait;
    *wait = c->nwait ? c->wait : NULL;
    if (!clf__devops(fl, c->dev)->wait_list_ok && *nwait) {
        clf__log(CLF_LOG_DEBUG, "device %zu '%s': waiting on the host for %u event(s) before an "
                 "enqueue (it runs commands inside clEnqueue*)", c->dev,
                 fl->dev[c->dev].info.name, (unsigned)*nwait);
        cl_int err = clWaitForEvents(*nwait, *wait);
        if (err != CL_SUCCESS) {
            const char *what = c->what;
            c->what = "a command's wait list";
            clf_status st = fail(c, err, 0, "clWaitForEvents");
            c->what = what;
            return st;
        }
        *nwait = 0;
        *wait = NULL;
    }
    clf__dev_exec_enter(fl, c->dev);
    return CLF_SUCCESS;
}

/* The event the enqueue should make: the caller's, or a temporary one for the metrics. */
static cl_event *event_slot(const clf__cmd *c, cl_event *tmp)
{
    *tmp = NULL;
    if (c->ev)
        return c->ev;
    /* A simulated device needs the event too, to delay it (observe/simulate.h). */
    return (c->fl->metrics && !(c->flags & CLF__CMD_NO_METRICS)) || c->fl->sim ? tmp : NULL;
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
static clf_status leave(clf__cmd *c, cl_int err, const char *call, const clf__rec *r,
                        cl_event tmp)
{
    clf_fleet *fl = c->fl;
    size_t dev = c->dev;
    cl_command_queue q = c->q;
    cl_event *ev = c->ev;
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
    if (err == CL_SUCCESS && !(c->flags & (CLF__CMD_NO_FLUSH | CLF__CMD_BLOCKING)))
        clFlush(q);
    clf__dev_exec_leave(fl, dev);
    if (err == CL_SUCCESS && sim && (c->flags & CLF__CMD_BLOCKING))
        err = clWaitForEvents(1, ev ? ev : &tmp);
    if (err != CL_SUCCESS) {
        if (ev) {
            if (*ev)
                clReleaseEvent(*ev);
            *ev = NULL;
        }
        if (tmp)
            clReleaseEvent(tmp);
        return fail(c, err, 0, call);
    }
    cl_event e = ev ? *ev : tmp;
    if (r && e && !(c->flags & CLF__CMD_NO_METRICS)) {
        clf__rec x = *r;
        /* The queue's own track: commands of one in-order queue never overlap there. */
        x.track = q == d->compute    ? CLF__TRACK_COMPUTE
                  : q == d->transfer ? CLF__TRACK_TRANSFER
                                     : 0;
        /* A blocking command has completed: counted now, so that the caller sees it. */
        if ((c->flags & CLF__CMD_BLOCKING) && clf__event_profile(e, &x.t0, &x.t1))
            clf__metrics_record(fl, dev, &x, 1);
        else
            clf__metrics_event(fl, dev, &x, e);
    }
    if (tmp)
        clReleaseEvent(tmp);
    return CLF_SUCCESS;
}

clf_status clf__cmd_adopt_kernel(clf__cmd *c, cl_event since)
{
    if (__builtin_expect(c->fl->sim == NULL, 1) || !c->ev || !*c->ev)
        return CLF_SUCCESS;
    clf__rec r = {0};
    r.kind = CLF__REC_KERNEL;
    /* *c->ev stays a valid event whatever happens */
    cl_int err = simulate(c->fl, c->dev, c->q, &r, since, c->ev);
    if (err != CL_SUCCESS)
        clf__log(CLF_LOG_WARN, "CLFLEET_SIMULATE: device %zu: a library's kernel is not held "
                 "back: %s", c->dev, clf_last_error());
    return CLF_SUCCESS;
}

/* The common frame of an enqueue: out fields, fault rule, event slot, enter; the enqueue
 * itself is the statement after it, with `out` as its event, `nwait` and `wait` as its wait
 * list and `blk` as its blocking flag. */
#define CMD_BEGIN(call, kind)                                                                      \
    reset(c);                                                                                      \
    clf_status rst = inject(c, (kind), (call));                                                    \
    if (rst != CLF_SUCCESS)                                                                        \
        return rst;                                                                                \
    cl_event tmp, *out = event_slot(c, &tmp);                                                      \
    cl_uint nwait;                                                                                 \
    const cl_event *wait;                                                                          \
    clf_status est = enter(c, &nwait, &wait);                                                      \
    if (est != CLF_SUCCESS)                                                                        \
        return est;                                                                                \
    cl_bool blk = c->flags & CLF__CMD_BLOCKING ? CL_TRUE : CL_FALSE;                              \
    (void)blk

clf_status clf__cmd_kernel(clf__cmd *c, cl_kernel k, cl_uint dims, const size_t *off,
                           const size_t *gsz, const size_t *lsz)
{
    CMD_BEGIN("clEnqueueNDRangeKernel", CLF__FAULT_ENQUEUE);
    cl_int err = clEnqueueNDRangeKernel(c->q, k, dims, off, gsz, lsz, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_KERNEL;
    r.name = c->what;
    r.a0 = off ? (int64_t)off[0] : 0;
    r.a1 = (int64_t)gsz[0];
    return leave(c, err, "clEnqueueNDRangeKernel", &r, tmp);
}

clf_status clf__cmd_write(clf__cmd *c, cl_mem buf, size_t off, size_t size, const void *host)
{
    CMD_BEGIN("clEnqueueWriteBuffer", CLF__FAULT_WRITE);
    cl_int err = clEnqueueWriteBuffer(c->q, buf, blk, off, size, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_TO_DEVICE;
    r.bytes = size;
    return leave(c, err, "clEnqueueWriteBuffer", &r, tmp);
}

clf_status clf__cmd_read(clf__cmd *c, cl_mem buf, size_t off, size_t size, void *host)
{
    CMD_BEGIN("clEnqueueReadBuffer", CLF__FAULT_READ);
    cl_int err = clEnqueueReadBuffer(c->q, buf, blk, off, size, host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_FROM_DEVICE;
    r.bytes = size;
    return leave(c, err, "clEnqueueReadBuffer", &r, tmp);
}

clf_status clf__cmd_rect(clf__cmd *c, int to_device, cl_mem buf, const clf__cmd_box *box,
                         const void *host)
{
    const char *call = to_device ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect";
    CMD_BEGIN(call, to_device ? CLF__FAULT_WRITE : CLF__FAULT_READ);
    const clf__cmd_box *b = box;
    cl_int err = to_device ? clEnqueueWriteBufferRect(c->q, buf, blk, b->borigin, b->horigin,
                                                      b->region, b->brow, b->bslice, b->hrow,
                                                      b->hslice, host, nwait, wait, out)
                           : clEnqueueReadBufferRect(c->q, buf, blk, b->borigin, b->horigin,
                                                     b->region, b->brow, b->bslice, b->hrow,
                                                     b->hslice, (void *)host, nwait, wait, out);
    clf__rec r = {0};
    r.kind = to_device ? CLF__REC_TO_DEVICE : CLF__REC_FROM_DEVICE;
    r.bytes = b->region[0] * b->region[1] * b->region[2];
    return leave(c, err, call, &r, tmp);
}

clf_status clf__cmd_fill(clf__cmd *c, cl_mem buf, const void *pattern, size_t pattern_size,
                         size_t off, size_t size)
{
    CMD_BEGIN("clEnqueueFillBuffer", CLF__FAULT_WRITE);
    cl_int err =
        clEnqueueFillBuffer(c->q, buf, pattern, pattern_size, off, size, nwait, wait, out);
    if (err == CL_SUCCESS && blk)
        err = clFinish(c->q);
    clf__rec r = {0};
    r.kind = CLF__REC_FILL;
    r.bytes = size;
    return leave(c, err, "clEnqueueFillBuffer", &r, tmp);
}

clf_status clf__cmd_copy(clf__cmd *c, cl_mem src, cl_mem dst, size_t soff, size_t doff,
                         size_t size)
{
    CMD_BEGIN("clEnqueueCopyBuffer", CLF__FAULT_WRITE);
    cl_int err = clEnqueueCopyBuffer(c->q, src, dst, soff, doff, size, nwait, wait, out);
    clf__rec r = {0};
    r.kind = CLF__REC_PEER;
    r.bytes = size;
    return leave(c, err, "clEnqueueCopyBuffer", &r, tmp);
}

clf_status clf__cmd_map(clf__cmd *c, cl_mem buf, cl_map_flags flags, size_t off, size_t size,
                        void **ptr)
{
    *ptr = NULL;
    reset(c);
    clf_status st = inject(c, flags & CL_MAP_READ ? CLF__FAULT_READ : CLF__FAULT_WRITE,
                           "clEnqueueMapBuffer");
    if (st != CLF_SUCCESS)
        return st;
    cl_uint nwait;
    const cl_event *wait;
    if ((st = enter(c, &nwait, &wait)) != CLF_SUCCESS)
        return st;
    cl_int err;
    void *p = clEnqueueMapBuffer(c->q, buf, c->flags & CLF__CMD_BLOCKING ? CL_TRUE : CL_FALSE,
                                 flags, off, size, nwait, wait, c->ev, &err);
    /* Not counted: a map moves what a transfer would count. */
    st = leave(c, err, "clEnqueueMapBuffer", NULL, NULL);
    if (st == CLF_SUCCESS)
        *ptr = p;
    return st;
}

/* The commands that do no work of their own (unmap: the map was the transfer): no fault
 * class, not counted. */
clf_status clf__cmd_unmap(clf__cmd *c, cl_mem buf, void *ptr)
{
    CMD_BEGIN("clEnqueueUnmapMemObject", NO_CLASS);
    (void)out;
    cl_int err = clEnqueueUnmapMemObject(c->q, buf, ptr, nwait, wait, c->ev);
    return leave(c, err, "clEnqueueUnmapMemObject", NULL, NULL);
}

clf_status clf__cmd_marker(clf__cmd *c)
{
    CMD_BEGIN("clEnqueueMarkerWithWaitList", NO_CLASS);
    (void)out;
    cl_int err = clEnqueueMarkerWithWaitList(c->q, nwait, wait, c->ev);
    return leave(c, err, "clEnqueueMarkerWithWaitList", NULL, NULL);
}

clf_status clf__cmd_barrier(clf__cmd *c)
{
    CMD_BEGIN("clEnqueueBarrierWithWaitList", NO_CLASS);
    (void)out;
    cl_int err = clEnqueueBarrierWithWaitList(c->q, nwait, wait, c->ev);
    return leave(c, err, "clEnqueueBarrierWithWaitList", NULL, NULL);
}

clf_status clf__cmd_buffer(clf__cmd *c, cl_mem_flags flags, size_t size, void *host,
                           cl_mem *out)
{
    *out = NULL;
    reset(c);
    clf_status st = inject(c, CLF__FAULT_ALLOC, "clCreateBuffer");
    if (st != CLF_SUCCESS)
        return st;
    cl_int err;
    cl_mem m = clCreateBuffer(c->fl->dev[c->dev].ctx, flags, size, host, &err);
    if (err != CL_SUCCESS)
        return fail(c, err, 0, "clCreateBuffer");
    if (!(c->flags & CLF__CMD_NO_METRICS))
        clf__metrics_alloc(c->fl, c->dev, size);
    *out = m;
    return CLF_SUCCESS;
}

void clf__cmd_release(clf__cmd *c, cl_mem mem, size_t size)
{
    if (!mem)
        return;
    if (!(c->flags & CLF__CMD_NO_METRICS))
        clf__metrics_free(c->fl, c->dev, size);
    clReleaseMemObject(mem);
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
    if (err != CL_SUCCESS) {
        clf__cmd c = CLF__CMD(fl, dev, NULL, NULL);
        return fail(&c, err, 0, "clCreateKernel");
    }
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

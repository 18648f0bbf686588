/*
 * The public face of the per-device kernel call: clf_kernel_enqueue() and clf_kernel_run().
 * The work is core's (core/kernel.c: checks, the kernel and its arguments, the command
 * path); this layer adds what core cannot reach, the wait list of clf_events from any
 * device, context or launch, turned into OpenCL events of the device's context by the event
 * bridge (xfer/bridge.c), or waited for on the host on a device that runs commands inside
 * clEnqueue* (clf__dev_sync_exec(), as clf_device_wait_events() does).
 */
#include "exec.h"

#include <stdlib.h>

#include "xfer/xfer.h"

/* The wait list as OpenCL events of device dev's context (*n of them, malloc'd in *out). */
static clf_status wait_list(clf_fleet *fl, size_t dev, const char *kernel,
                            clf_event *const *wait, size_t num_wait, cl_event **out, cl_uint *n)
{
    *out = NULL;
    *n = 0;
    if (num_wait == 0)
        return CLF_SUCCESS;
    if (clf__dev_sync_exec(fl, dev)) {
        clf_status st = clf_events_wait(wait, num_wait);
        if (st != CLF_SUCCESS)
            clf__append_error(" (kernel '%.64s' waited for it and did not run)", kernel);
        return st;
    }
    cl_event *cl = calloc(num_wait, sizeof *cl);
    if (!cl)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "kernel '%s': out of memory", kernel);
    for (size_t i = 0; i < num_wait; i++) {
        clf_status st = clf__event_cl_for(wait[i], fl, dev, &cl[i]);
        if (st != CLF_SUCCESS) {
            for (size_t k = 0; k < i; k++)
                clReleaseEvent(cl[k]);
            free(cl);
            return st;
        }
    }
    *out = cl;
    *n = (cl_uint)num_wait;
    return CLF_SUCCESS;
}

/* clf_kernel_enqueue(), and with whole and part_offsets an array launch's part. */
static clf_status enqueue(clf_fleet *fleet, clf_program *prog, size_t device,
                          const clf_kernel_desc *desc, const clf_arg *args, size_t nargs,
                          const size_t *whole, const cl_ulong *part_offsets,
                          clf_event *const *wait, size_t num_wait, clf_event **out_event)
{
    if (out_event)
        *out_event = NULL;
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (num_wait && !wait)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_kernel_enqueue: wait is NULL (%zu events)",
                         num_wait);
    if (num_wait > CL_UINT_MAX)
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "clf_kernel_enqueue: %zu events to wait for",
                         num_wait);
    for (size_t i = 0; i < num_wait; i++)
        if (!wait[i])
            return clf__fail(CLF_ERROR_NULL_POINTER, "clf_kernel_enqueue: event %zu of the wait "
                             "list is NULL", i);
    cl_kernel k = NULL;
    if ((st = clf__kernel_prepare_part(fleet, prog, device, desc, args, nargs, whole,
                                       part_offsets, &k)) != CLF_SUCCESS)
        return st;
    cl_event *cl = NULL, ev = NULL;
    cl_uint n = 0;
    st = wait_list(fleet, device, desc->kernel, wait, num_wait, &cl, &n);
    if (st == CLF_SUCCESS)
        st = clf__kernel_submit(fleet, device, k, desc, n, cl, out_event ? &ev : NULL);
    for (cl_uint i = 0; i < n; i++)
        clReleaseEvent(cl[i]);
    free(cl);
    clf__kernel_recycle(prog, device, desc->kernel, k); /* the enqueue captured its arguments */
    if (st == CLF_SUCCESS && out_event)
        st = clf__event_wrap(ev, out_event);
    return st;
}

clf_status clf_kernel_enqueue(clf_fleet *fleet, clf_program *prog, size_t device,
                              const clf_kernel_desc *desc, const clf_arg *args, size_t nargs,
                              clf_event *const *wait, size_t num_wait, clf_event **out_event)
{
    return enqueue(fleet, prog, device, desc, args, nargs, NULL, NULL, wait, num_wait,
                   out_event);
}

clf_status clf__kernel_enqueue_part(clf_fleet *fleet, clf_program *variant, size_t device,
                                    const clf_kernel_desc *desc, const clf_arg *args,
                                    size_t nargs, const size_t whole[3],
                                    const cl_ulong part_offsets[16], clf_event *const *wait,
                                    size_t num_wait, clf_event **out_event)
{
    return enqueue(fleet, variant, device, desc, args, nargs, whole, part_offsets, wait,
                   num_wait, out_event);
}

clf_status clf_kernel_run(clf_fleet *fleet, clf_program *prog, size_t device,
                          const clf_kernel_desc *desc, const clf_arg *args, size_t nargs)
{
    clf_event *e = NULL;
    clf_status st = clf_kernel_enqueue(fleet, prog, device, desc, args, nargs, NULL, 0, &e);
    if (st != CLF_SUCCESS)
        return st;
    st = clf_event_wait(e);
    clf_event_release(e);
    return st;
}

/*
 * Synchronisation across devices: events recorded on one device that another
 * device waits for (in the same context, or in another context or platform,
 * through the event bridge of clf_event_cl_for()), barriers across a set of
 * devices, and waiting for one device.
 *
 * Every device has a compute and a transfer queue (and a third for the copies
 * the host drives, transfer.c). A recorded event covers the first two: a
 * marker on the compute queue that also waits for a marker on the transfer
 * queue. A wait is a barrier on the compute queue, which orders kernels,
 * launches, collectives, pipelines and task queues (they queue every command
 * that depends on others there). Buffer transfers and copies follow their own
 * wait lists. On PoCL's basic device the waits happen on the host instead
 * (clf__dev_sync_exec()).
 */
#include "xfer.h"

#include <stdio.h>
#include <stdlib.h>

#include "clfleet/opencl.h"

clf_status clf__device_marker(clf_fleet *fl, size_t device, cl_event *out)
{
    struct clf__device *d = &fl->dev[device];
    cl_event mt = NULL;
    /* The waiting marker goes on the compute queue, where commands wait for others. The
     * command path flushes each: a queue of another device may wait for these markers, and
     * some drivers submit nothing until a flush. On a sync-exec device it waits for the
     * transfer queue's marker on the host instead. */
    clf_status st = clf__cmd_marker(fl, device, d->transfer, "transfer queue", 0, NULL, &mt);
    if (st != CLF_SUCCESS)
        return st;
    st = clf__cmd_marker(fl, device, d->compute, "compute queue", 1, &mt, out);
    clReleaseEvent(mt);
    return st;
}

clf_status clf_event_record(clf_event **out, clf_fleet *fleet, size_t device)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_record: out is NULL");
    *out = NULL;
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    cl_event m;
    st = clf__device_marker(fleet, device, &m);
    if (st != CLF_SUCCESS)
        return st;
    return clf__event_wrap(m, out);
}

/* Translate clfleet events into OpenCL events of device's context (bridged when needed). */
static clf_status events_for(clf_fleet *fl, size_t device, clf_event *const *events, size_t n,
                             cl_event *out, size_t *nout)
{
    *nout = 0;
    for (size_t i = 0; i < n; i++) {
        if (!events[i]) {
            for (size_t k = 0; k < *nout; k++)
                clReleaseEvent(out[k]);
            *nout = 0;
            return clf__fail(CLF_ERROR_NULL_POINTER, "event %zu of the wait list is NULL", i);
        }
        clf_status st = clf_event_cl_for(events[i], fl, device, &out[*nout]);
        if (st != CLF_SUCCESS) {
            for (size_t k = 0; k < *nout; k++)
                clReleaseEvent(out[k]);
            *nout = 0;
            return st;
        }
        (*nout)++;
    }
    return CLF_SUCCESS;
}

/* Work queued on device from now on starts after events: a barrier on its compute queue,
 * or on the host for a device that must not wait for other queues (clf__dev_sync_exec()). */
static clf_status device_wait(clf_fleet *fl, size_t device, clf_event *const *events, size_t n)
{
    if (clf__dev_sync_exec(fl, device))
        return clf_events_wait(events, n);
    cl_event *cl = calloc(n, sizeof *cl);
    if (!cl)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "device %zu: wait: out of memory", device);
    struct clf__device *d = &fl->dev[device];
    size_t k = 0;
    clf_status st = events_for(fl, device, events, n, cl, &k);
    if (st == CLF_SUCCESS) {
        st = clf__cmd_barrier(fl, device, d->compute, NULL, (cl_uint)k, cl, NULL, NULL);
    }
    for (size_t i = 0; i < k; i++)
        clReleaseEvent(cl[i]);
    free(cl);
    return st;
}

clf_status clf_device_wait_events(clf_fleet *fleet, size_t device, clf_event *const *events,
                                  size_t num_events)
{
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (num_events == 0)
        return CLF_SUCCESS;
    if (!events)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_device_wait_events: events is NULL");
    if (num_events > SIZE_MAX / sizeof(cl_event))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "clf_device_wait_events: %zu events",
                         num_events);
    return device_wait(fleet, device, events, num_events);
}

clf_status clf_barrier(clf_fleet *fleet, const size_t *devices, size_t num_devices,
                       clf_event **out_event)
{
    if (out_event)
        *out_event = NULL;
    if (!fleet)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_barrier: fleet is NULL");
    if (devices && num_devices == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_barrier: no devices");
    size_t n = devices ? num_devices : fleet->ndev;
    if (n > fleet->ndev) /* then some device is listed twice; do not allocate for it */
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_barrier: %zu devices, the fleet has %zu (each at most once)", n,
                         fleet->ndev);
    clf_status st = CLF_SUCCESS;
    size_t *dev = calloc(n, sizeof *dev);
    clf_event **marks = calloc(n, sizeof *marks);
    if (!dev || !marks)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_barrier: out of memory"));
    for (size_t i = 0; i < n; i++) {
        dev[i] = devices ? devices[i] : i;
        CLF__TRY(st, clf__check_device(fleet, dev[i]));
        for (size_t j = 0; j < i; j++)
            if (dev[j] == dev[i])
                CLF__TRY(st, clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                       "clf_barrier: device %zu listed twice", dev[i]));
    }
    /* Every device reaches the barrier: a marker after all its queued work. */
    for (size_t i = 0; i < n; i++) {
        cl_event m;
        CLF__TRY(st, clf__device_marker(fleet, dev[i], &m));
        CLF__TRY(st, clf__event_wrap(m, &marks[i]));
    }
    /* Then no device goes on before every device has reached it (its own marker too:
     * that orders its compute queue after its transfer queue and back). */
    for (size_t i = 0; i < n; i++)
        CLF__TRY(st, device_wait(fleet, dev[i], marks, n));
    if (out_event) {
        /* Past the barrier on the first device means every device reached it. */
        cl_event m;
        CLF__TRY(st, clf__device_marker(fleet, dev[0], &m));
        CLF__TRY(st, clf__event_wrap(m, out_event));
    }
out:
    for (size_t i = 0; marks && i < n; i++)
        clf_event_release(marks[i]);
    free(marks);
    free(dev);
    return st;
}

clf_status clf_device_finish(clf_fleet *fleet, size_t device)
{
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    struct clf__device *d = &fleet->dev[device];
    cl_int err = clf__device_finish_queues(d);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(err, "clFinish", d);
}

clf_status clf_events_wait(clf_event *const *events, size_t num_events)
{
    if (num_events && !events)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_events_wait: events is NULL");
    clf_status first = CLF_SUCCESS;
    char detail[1024] = "";
    /* Wait for every one, even after a failure: the caller may free what they use. */
    for (size_t i = 0; i < num_events; i++) {
        clf_status st = events[i] ? clf_event_wait(events[i])
                                  : clf__fail(CLF_ERROR_NULL_POINTER, "event %zu is NULL", i);
        if (st != CLF_SUCCESS && first == CLF_SUCCESS) {
            first = st;
            snprintf(detail, sizeof detail, "%s", clf_last_error());
        }
    }
    return first == CLF_SUCCESS ? CLF_SUCCESS : clf__fail(first, "%s", detail);
}

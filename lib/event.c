/* Completion events of asynchronous operations. */
#include "internal.h"

#include <stdlib.h>

clf_status clf__event_wrap(cl_event ev, clf_event **out)
{
    if (!out) {
        clReleaseEvent(ev);
        return CLF_SUCCESS;
    }
    clf_event *e = calloc(1, sizeof *e);
    if (!e) {
        /* The command was queued: wait for it so the caller's memory is not in use. */
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event: out of memory");
    }
    e->ev = ev;
    *out = e;
    return CLF_SUCCESS;
}

clf_status clf_event_wait(clf_event *e)
{
    if (!e)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_wait: event is NULL");
    if (e->op)
        return clf__host_op_wait(e->op);
    cl_int err = clWaitForEvents(1, &e->ev);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clWaitForEvents", NULL);
    cl_int exec = CL_COMPLETE;
    err = clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clGetEventInfo", NULL);
    if (exec < 0)
        return clf__cl_fail(exec, "command (event status)", NULL);
    return CLF_SUCCESS;
}

void clf_event_release(clf_event *e)
{
    if (!e)
        return;
    if (e->op)
        clf__host_op_release(e->op); /* waits for the operation: it uses the caller's data */
    else
        clReleaseEvent(e->ev);
    free(e);
}

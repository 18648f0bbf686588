/*
 * Completion events of asynchronous operations: an OpenCL event, an asynchronous launch
 * (an entry in the fleet's launch queue, exec/launch.c) or a copy running on a transfer
 * thread (a task, below).
 *
 * An event can be waited for by several threads at once and outlive its caller's release
 * while clfleet still needs it (a copy waiting for it, a bridge to another context): both
 * go through one lock here. A launch's own wait runs exactly once, by whichever waiter
 * comes first; the others wait for its recorded result.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond = PTHREAD_COND_INITIALIZER;

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

clf_status clf__event_wrap_task(struct clf__task *t, clf_event **out)
{
    clf_event *e = calloc(1, sizeof *e);
    if (!e) {
        clf__task_wait(t); /* it may use the caller's memory */
        clf__task_unref(t);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event: out of memory");
    }
    e->task = t;
    *out = e;
    return CLF_SUCCESS;
}

void clf__event_hold(clf_event *e)
{
    pthread_mutex_lock(&ev_lock);
    e->holds++;
    pthread_mutex_unlock(&ev_lock);
}

/* Join a launch's thread once; later and concurrent waiters get the recorded result. */
cl_int clf__cl_event_status(cl_event ev)
{
    cl_int s = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) != CL_SUCCESS)
        s = CL_INVALID_EVENT;
    return s;
}

static clf_status op_wait(clf_event *e)
{
    pthread_mutex_lock(&ev_lock);
    while (e->op_state == 1)
        pthread_cond_wait(&ev_cond, &ev_lock);
    if (e->op_state == 0) {
        e->op_state = 1;
        pthread_mutex_unlock(&ev_lock);
        clf_status st = e->op_wait(e->op);
        char *err = st != CLF_SUCCESS ? strdup(clf_last_error()) : NULL;
        pthread_mutex_lock(&ev_lock);
        e->op_status = st;
        e->op_err = err;
        e->op_state = 2;
        pthread_cond_broadcast(&ev_cond);
    }
    clf_status st = e->op_status;
    pthread_mutex_unlock(&ev_lock);
    if (st != CLF_SUCCESS)
        return clf__fail(st, "%s", e->op_err ? e->op_err : "asynchronous launch failed");
    return CLF_SUCCESS;
}

static clf_status cl_wait(cl_event ev)
{
    cl_int err = clWaitForEvents(1, &ev);
    cl_int exec = CL_COMPLETE;
    /* A failed command makes clWaitForEvents report CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_
     * WAIT_LIST; its own status says what went wrong. */
    cl_int qerr = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec,
                                 NULL);
    if (qerr == CL_SUCCESS && exec < 0)
        return clf__cl_fail(exec, "command (event status)", NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clWaitForEvents", NULL);
    if (qerr != CL_SUCCESS)
        return clf__cl_fail(qerr, "clGetEventInfo", NULL);
    return CLF_SUCCESS;
}

clf_status clf__event_wait_host(clf_event *e)
{
    if (e->op)
        return op_wait(e);
    if (e->task)
        return clf__task_wait(e->task);
    return cl_wait(e->ev);
}

int clf__event_done(clf_event *e)
{
    if (e->op) {
        pthread_mutex_lock(&ev_lock);
        int ok = e->op_state == 2 && e->op_status == CLF_SUCCESS;
        pthread_mutex_unlock(&ev_lock);
        return ok;
    }
    if (e->task)
        return clf__task_done_ok(e->task);
    return clf__cl_event_status(e->ev) == CL_COMPLETE;
}

clf_status clf_event_wait(clf_event *e)
{
    if (!e)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_wait: event is NULL");
    return clf__event_wait_host(e);
}

void clf_event_release(clf_event *e)
{
    if (!e)
        return;
    if (e->op) {
        /* Wait for the launch: it uses the caller's data. */
        char saved[512];
        snprintf(saved, sizeof saved, "%s", clf_last_error());
        op_wait(e);
        clf__fail(CLF_SUCCESS, "%s", saved); /* releasing leaves the detail message alone */
    }
    pthread_mutex_lock(&ev_lock);
    if (e->holds > 0) {
        e->holds--;
        pthread_mutex_unlock(&ev_lock);
        return;
    }
    pthread_mutex_unlock(&ev_lock);
    if (e->op)
        e->op_release(e->op); /* joined above: only frees */
    else if (e->task)
        clf__task_unref(e->task);
    else
        clReleaseEvent(e->ev);
    free(e->op_err);
    free(e);
}

/* ---- tasks ---------------------------------------------------------------------------- */

/*
 * Tasks: host-side completions (copies the host drives) that several parties wait for.
 * A lock, a condition, a result, and the subscribers to tell when the task completes: OpenCL
 * user events to set (the bridges of xfer/sync.c subscribe them) or host functions to call
 * (clf__task_notify(): a copy waiting for its wait list). Events wrap them (above).
 */

/* One subscriber of a task: a user event to set (retained), or a host function to call. */
typedef struct task_sub {
    cl_event uev;
    void (*fn)(void *arg, clf_status st);
    void *arg;
} task_sub;

struct clf__task {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned refs;
    int done;
    clf_status st;
    char *err;
    task_sub *subs; /* to tell on completion */
    size_t nsubs, cap;
};

struct clf__task *clf__task_create(void)
{
    struct clf__task *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    t->refs = 1;
    return t;
}

void clf__task_ref(struct clf__task *t)
{
    pthread_mutex_lock(&t->lock);
    t->refs++;
    pthread_mutex_unlock(&t->lock);
}

void clf__task_unref(struct clf__task *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    unsigned left = --t->refs;
    pthread_mutex_unlock(&t->lock);
    if (left)
        return;
    /* Every subscriber was set at completion; a task is never freed before it completes,
     * since whoever completes it holds a reference. */
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
    free(t->subs);
    free(t->err);
    free(t);
}

void clf__user_event_finish(cl_event uev, cl_int status)
{
    clSetUserEventStatus(uev, status < 0 ? status : CL_COMPLETE);
    clReleaseEvent(uev);
}

void clf__task_complete(struct clf__task *t, clf_status st, const char *err)
{
    pthread_mutex_lock(&t->lock);
    if (t->done) {
        pthread_mutex_unlock(&t->lock);
        return;
    }
    t->done = 1;
    t->st = st;
    if (st != CLF_SUCCESS)
        t->err = strdup(err && *err ? err : clf_status_string(st));
    task_sub *subs = t->subs;
    size_t n = t->nsubs;
    t->subs = NULL;
    t->nsubs = t->cap = 0;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    /* Outside the lock: setting a user event may run commands that wait for it. */
    for (size_t i = 0; i < n; i++) {
        if (subs[i].uev)
            clf__user_event_finish(subs[i].uev,
                                   st == CLF_SUCCESS
                                       ? CL_COMPLETE
                                       : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        else
            subs[i].fn(subs[i].arg, st);
    }
    free(subs);
}

clf_status clf__task_wait(struct clf__task *t)
{
    pthread_mutex_lock(&t->lock);
    while (!t->done)
        pthread_cond_wait(&t->cond, &t->lock);
    clf_status st = t->st;
    pthread_mutex_unlock(&t->lock);
    if (st != CLF_SUCCESS)
        return clf__fail(st, "%s", t->err ? t->err : clf_status_string(st));
    return CLF_SUCCESS;
}

int clf__task_done_ok(struct clf__task *t)
{
    pthread_mutex_lock(&t->lock);
    int ok = t->done && t->st == CLF_SUCCESS;
    pthread_mutex_unlock(&t->lock);
    return ok;
}

/* Add sub to t's subscribers, or, when t is done, return 1 with its status in *st. */
static int task_add_sub(struct clf__task *t, task_sub sub, clf_status *st)
{
    pthread_mutex_lock(&t->lock);
    if (t->done) {
        *st = t->st;
        pthread_mutex_unlock(&t->lock);
        return 1;
    }
    if (t->nsubs == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4;
        task_sub *grown = realloc(t->subs, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&t->lock);
            *st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event: out of memory");
            return -1;
        }
        t->subs = grown;
        t->cap = cap;
    }
    t->subs[t->nsubs++] = sub;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

clf_status clf__task_subscribe(struct clf__task *t, cl_event uev)
{
    cl_int err = clRetainEvent(uev);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clRetainEvent", NULL);
    clf_status st = CLF_SUCCESS;
    int r = task_add_sub(t, (task_sub){uev, NULL, NULL}, &st);
    if (r < 0) {
        clReleaseEvent(uev);
        return st;
    }
    if (r > 0)
        clf__user_event_finish(uev, st == CLF_SUCCESS
                                        ? CL_COMPLETE
                                        : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    return CLF_SUCCESS;
}

clf_status clf__task_notify(struct clf__task *t, void (*fn)(void *arg, clf_status st), void *arg)
{
    clf_status st = CLF_SUCCESS;
    int r = task_add_sub(t, (task_sub){NULL, fn, arg}, &st);
    if (r < 0)
        return st;
    if (r > 0)
        fn(arg, st);
    return CLF_SUCCESS;
}

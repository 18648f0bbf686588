/*
 * Completion events: an OpenCL event, or a host-side completion (below) for what the host
 * completes: an asynchronous launch (exec/launch.c), a copy the host drives on the helper
 * pool (xfer/transfer.c) or a graph run (graph/run.c). One wait, one done test, one
 * subscription (xfer/sync.c's clf__event_notify()) and one release for all of them.
 *
 * An event can be waited for by several threads at once and outlive its caller's release
 * while clfleet still needs it (a copy waiting for it, a graph run): its references are
 * counted atomically, and a completion has its own lock, so nothing here is process-wide.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* ---- host-side completions ------------------------------------------------------------- */

/* One subscriber: a host function to call once (it never blocks: it sets a user event, or
 * queues a job). */
typedef struct completion_sub {
    void (*fn)(void *arg, clf_status st);
    void *arg;
} completion_sub;

struct clf__completion {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned refs; /* under lock */
    unsigned flags; /* CLF__COMPLETION_*, set at creation */
    int done;
    clf_status st;
    char *err;              /* the detail message of a failure (NULL: the status's string) */
    completion_sub *subs;   /* to tell on completion */
    size_t nsubs, cap;
};

struct clf__completion *clf__completion_create(unsigned flags)
{
    struct clf__completion *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->refs = 1;
    c->flags = flags;
    return c;
}

void clf__completion_ref(struct clf__completion *c)
{
    pthread_mutex_lock(&c->lock);
    c->refs++;
    pthread_mutex_unlock(&c->lock);
}

void clf__completion_unref(struct clf__completion *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    unsigned left = --c->refs;
    pthread_mutex_unlock(&c->lock);
    if (left)
        return;
    /* Every subscriber was told at completion: whoever completes a completion holds a
     * reference until then, so none is freed before it completes. */
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c->subs);
    free(c->err);
    free(c);
}

void clf__completion_complete(struct clf__completion *c, clf_status st, const char *err)
{
    char *msg = st != CLF_SUCCESS ? strdup(err && *err ? err : clf_status_string(st)) : NULL;
    pthread_mutex_lock(&c->lock);
    if (c->done) {
        pthread_mutex_unlock(&c->lock);
        free(msg);
        return;
    }
    c->done = 1;
    c->st = st;
    c->err = msg;
    completion_sub *subs = c->subs;
    size_t n = c->nsubs;
    c->subs = NULL;
    c->nsubs = c->cap = 0;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    /* Outside the lock: setting a user event may run commands that wait for it, and a
     * subscriber may drop the last reference but one. */
    for (size_t i = 0; i < n; i++)
        subs[i].fn(subs[i].arg, st);
    free(subs);
}

/* Block until c has completed; its status. Leaves the detail message alone. */
static clf_status completion_join(struct clf__completion *c)
{
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        pthread_cond_wait(&c->cond, &c->lock);
    clf_status st = c->st;
    pthread_mutex_unlock(&c->lock);
    return st;
}

clf_status clf__completion_wait(struct clf__completion *c)
{
    clf_status st = completion_join(c);
    /* c->err is written once, before done, under the lock that the join took after it. */
    if (st != CLF_SUCCESS)
        return clf__fail(st, "%s", c->err ? c->err : clf_status_string(st));
    return CLF_SUCCESS;
}

int clf__completion_done_ok(struct clf__completion *c)
{
    pthread_mutex_lock(&c->lock);
    int ok = c->done && c->st == CLF_SUCCESS;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

clf_status clf__completion_notify(struct clf__completion *c,
                                  void (*fn)(void *arg, clf_status st), void *arg)
{
    pthread_mutex_lock(&c->lock);
    if (c->done) {
        clf_status st = c->st;
        pthread_mutex_unlock(&c->lock);
        fn(arg, st);
        return CLF_SUCCESS;
    }
    if (c->nsubs == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        completion_sub *grown = realloc(c->subs, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&c->lock);
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event: out of memory");
        }
        c->subs = grown;
        c->cap = cap;
    }
    c->subs[c->nsubs++] = (completion_sub){fn, arg};
    pthread_mutex_unlock(&c->lock);
    return CLF_SUCCESS;
}

/* ---- events ---------------------------------------------------------------------------- */

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
    atomic_init(&e->refs, 1);
    *out = e;
    return CLF_SUCCESS;
}

clf_event *clf__event_of_completion(struct clf__completion *c)
{
    clf_event *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->done = c;
    atomic_init(&e->refs, 1);
    return e;
}

clf_status clf__event_wrap_completion(struct clf__completion *c, clf_event **out)
{
    clf_event *e = clf__event_of_completion(c);
    if (!e) {
        completion_join(c); /* it may use the caller's memory */
        clf__completion_unref(c);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event: out of memory");
    }
    *out = e;
    return CLF_SUCCESS;
}

void clf__event_hold(clf_event *e)
{
    atomic_fetch_add(&e->refs, 1);
}

cl_int clf__cl_event_status(cl_event ev)
{
    cl_int s = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) != CL_SUCCESS)
        s = CL_INVALID_EVENT;
    return s;
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
    return e->done ? clf__completion_wait(e->done) : cl_wait(e->ev);
}

int clf__event_done(clf_event *e)
{
    if (e->done)
        return clf__completion_done_ok(e->done);
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
    /* A launch uses the caller's host arrays until it completes: every release waits for it
     * (the join leaves the caller's detail message alone). */
    if (e->done && (e->done->flags & CLF__COMPLETION_RELEASE_WAITS))
        completion_join(e->done);
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    if (e->done)
        clf__completion_unref(e->done);
    else
        clReleaseEvent(e->ev);
    free(e);
}

void clf__user_event_finish(cl_event uev, cl_int status)
{
    clSetUserEventStatus(uev, status < 0 ? status : CL_COMPLETE);
    clReleaseEvent(uev);
}

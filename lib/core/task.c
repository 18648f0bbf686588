/*
 * Tasks: host-side completions (copies on transfer threads) that several parties wait for.
 * A lock, a condition, a result, and the OpenCL user events to set when the task completes
 * (the bridges of bridge.c subscribe them). Events wrap them (event.c).
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* ---- tasks ---------------------------------------------------------------------------- */

struct clf__task {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned refs;
    int done;
    clf_status st;
    char *err;
    cl_event *subs; /* user events to set on completion (retained) */
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
    cl_event *subs = t->subs;
    size_t n = t->nsubs;
    t->subs = NULL;
    t->nsubs = t->cap = 0;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    /* Outside the lock: setting a user event may run commands that wait for it. */
    for (size_t i = 0; i < n; i++)
        clf__user_event_finish(subs[i], st == CLF_SUCCESS
                                            ? CL_COMPLETE
                                            : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
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

clf_status clf__task_subscribe(struct clf__task *t, cl_event uev)
{
    cl_int err = clRetainEvent(uev);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clRetainEvent", NULL);
    pthread_mutex_lock(&t->lock);
    if (!t->done) {
        if (t->nsubs == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 4;
            cl_event *grown = realloc(t->subs, cap * sizeof *grown);
            if (!grown) {
                pthread_mutex_unlock(&t->lock);
                clReleaseEvent(uev);
                return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event bridge: out of memory");
            }
            t->subs = grown;
            t->cap = cap;
        }
        t->subs[t->nsubs++] = uev;
        pthread_mutex_unlock(&t->lock);
        return CLF_SUCCESS;
    }
    clf_status st = t->st;
    pthread_mutex_unlock(&t->lock);
    clf__user_event_finish(uev, st == CLF_SUCCESS ? CL_COMPLETE
                                                  : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    return CLF_SUCCESS;
}

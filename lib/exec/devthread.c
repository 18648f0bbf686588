/*
 * The fleet's persistent per-device threads: the host thread that drives each device in a
 * launch (worker.c runs on it). Made on a device's first launch and kept, sleeping on a
 * condition variable, until the fleet's teardown (the pool's finalizer, core/state.c): a
 * launch then hands its workers to threads that already exist instead of creating and
 * joining one per device (about 7 us each on an idle host, and a scheduler round trip more on
 * a busy one, against a 15 us enqueue-and-finish round trip of a small kernel; issue 14).
 *
 * One job at a time per thread: launches run one at a time per fleet (clf__turn_begin()), and
 * clf__devthread_run() waits should the thread still be busy. Everything a job and its
 * submitter share is handed over under the pool's mutex, so the job sees what was written
 * before it was posted and the submitter what the job wrote once clf__devthread_wait()
 * returns. A device's thread is a plain pthread: the one thread-local state of the library,
 * the detail behind clf_last_error(), is copied into the worker's report by worker.c.
 */
#include "exec.h"

#include <stdlib.h>

typedef struct devthread {
    struct clf__devpool *pool;
    pthread_t thread;
    int started, stop;
    int busy;                /* a job was posted and has not returned */
    void *(*fn)(void *);     /* the posted job, NULL once taken */
    void *arg;
    pthread_cond_t go, done; /* a job or stop was posted; the job returned */
} devthread;

struct clf__devpool {
    pthread_mutex_t lock;
    size_t n;
    devthread *t; /* one per fleet device */
};

static void *devthread_main(void *arg)
{
    devthread *t = arg;
    pthread_mutex_t *lock = &t->pool->lock;
    pthread_mutex_lock(lock);
    for (;;) {
        while (!t->fn && !t->stop)
            pthread_cond_wait(&t->go, lock);
        if (!t->fn)
            break; /* stop, and nothing posted */
        void *(*fn)(void *) = t->fn;
        void *a = t->arg;
        t->fn = NULL;
        pthread_mutex_unlock(lock);
        fn(a);
        pthread_mutex_lock(lock);
        t->busy = 0;
        pthread_cond_broadcast(&t->done);
    }
    pthread_mutex_unlock(lock);
    return NULL;
}

static void *pool_create(clf_fleet *fl)
{
    struct clf__devpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = fl->ndev;
    p->t = calloc(fl->ndev ? fl->ndev : 1, sizeof *p->t);
    if (!p->t || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->t);
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < p->n; i++) {
        p->t[i].pool = p;
        pthread_cond_init(&p->t[i].go, NULL);
        pthread_cond_init(&p->t[i].done, NULL);
    }
    return p;
}

static void pool_fini(clf_fleet *fl, void *state);

/* The pool is the fleet's state of this file (core/state.c), stopped at the teardown once
 * the launches have run (after the launch state's finalizer, CLF__STATE_DRAIN). */
static const clf__state_key pool_key = {"launch threads", CLF__STATE_BEFORE_XFER, pool_create,
                                        pool_fini};

/* The fleet's pool, made on first use (NULL: out of memory). */
static struct clf__devpool *pool_of(clf_fleet *fl)
{
    return clf__fleet_state(fl, &pool_key);
}

int clf__devthread_run(clf_fleet *fl, size_t dev, void *(*fn)(void *), void *arg)
{
    struct clf__devpool *p = pool_of(fl);
    if (!p || dev >= p->n)
        return -1;
    devthread *t = &p->t[dev];
    pthread_mutex_lock(&p->lock);
    while (t->busy)
        pthread_cond_wait(&t->done, &p->lock);
    if (!t->started) {
        if (pthread_create(&t->thread, NULL, devthread_main, t) != 0) {
            pthread_mutex_unlock(&p->lock);
            return -1;
        }
        t->started = 1;
    }
    t->fn = fn;
    t->arg = arg;
    t->busy = 1;
    pthread_cond_signal(&t->go);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void clf__devthread_wait(clf_fleet *fl, size_t dev)
{
    struct clf__devpool *p = clf__fleet_state_find(fl, &pool_key);
    if (!p || dev >= p->n)
        return;
    devthread *t = &p->t[dev];
    pthread_mutex_lock(&p->lock);
    while (t->busy)
        pthread_cond_wait(&t->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void pool_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    struct clf__devpool *p = state;
    for (size_t i = 0; i < p->n; i++) {
        devthread *t = &p->t[i];
        pthread_mutex_lock(&p->lock);
        t->stop = 1;
        pthread_cond_signal(&t->go);
        int started = t->started;
        pthread_mutex_unlock(&p->lock);
        if (started)
            pthread_join(t->thread, NULL);
        pthread_cond_destroy(&t->go);
        pthread_cond_destroy(&t->done);
    }
    pthread_mutex_destroy(&p->lock);
    free(p->t);
    free(p);
}

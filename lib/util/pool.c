/*
 * The process's one helper pool (libuv's threadpool is the model): a few threads, named
 * "clf-pool1" ... "clf-poolN", that run short host-side jobs every fleet shares (the
 * dispatching of asynchronous launches, the watcher of the event bridge), from one FIFO.
 *
 * N is CLFLEET_THREADPOOL_SIZE (1 to CLF__POOL_MAX, default 4), read once, when the pool is
 * first used. Threads are started lazily, one more whenever a job is queued and no thread is
 * idle, never more than N: light use costs one thread, and no amount of use costs more than
 * N. A job is a clf__pool_work the caller owns (libuv's uv_work_t): submitting allocates
 * nothing, so it cannot fail for memory once the pool has a thread.
 *
 * Rules for jobs, since the pool is bounded: a job must never block waiting for another job of
 * the pool (that one may have no thread to run on), and should not block for long on anything
 * else either (the watcher, which polls, checks clf__pool_stopping()).
 *
 * Timed jobs (clf__pool_submit_at(): the releases of $CLFLEET_SIMULATE's delayed commands)
 * run when their time comes, earliest first, before any queued job. They are short, but the
 * jobs above may wait for them: an asynchronous launch or a copy the host drives waits for
 * its commands, and on a simulated device a command completes only when its timed job has
 * run. So ordinary jobs run on at most N threads at once, and a timed job may start one
 * thread more: with every one of the N threads blocked in such a wait, the timers still run,
 * and the waits end. Without timed jobs the pool never has more than N threads.
 *
 * Shutdown (clf__pool_shutdown(), and at the library's unload or the process's exit): later
 * submits are refused; queued jobs are called with cancelled = 1 on the shutting-down thread,
 * in order; running jobs finish; the threads are joined, so ASan, valgrind and TSan see every
 * thread end. At exit a job still running after 100 ms (a launch of a fleet the program never
 * destroyed) is not waited for: the threads are left to the exiting process rather than
 * hanging the exit.
 */
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t p_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t p_work = PTHREAD_COND_INITIALIZER; /* a job was queued, or stop */
static pthread_cond_t p_done = PTHREAD_COND_INITIALIZER; /* a running job returned */
static clf__pool_work *p_head, *p_tail;
static size_t p_queued;  /* jobs in the FIFO */
static clf__pool_work *t_head; /* timed jobs, earliest first */
static unsigned p_plain; /* ordinary (untimed) jobs running: at most p_size */
static unsigned p_size;  /* the bound, 0 until the first submit */
static unsigned p_nthreads, p_idle, p_running;
static int p_stopped;
static pthread_t p_threads[CLF__POOL_MAX + 1]; /* one more for the timed jobs */
static pthread_once_t p_once = PTHREAD_ONCE_INIT;

/* A child of fork() has none of the parent's threads: it starts its pool afresh (the jobs
 * queued in the parent are the parent's to run). */
static void pool_after_fork(void)
{
    pthread_mutex_init(&p_lock, NULL);
    pthread_cond_init(&p_work, NULL);
    pthread_cond_init(&p_done, NULL);
    p_head = p_tail = NULL;
    p_queued = 0;
    t_head = NULL;
    p_nthreads = p_idle = p_running = p_plain = 0;
}

static void pool_register_fork(void)
{
    pthread_atfork(NULL, NULL, pool_after_fork);
}

clf_status clf__pool_config(unsigned *size)
{
    const char *v = getenv("CLFLEET_THREADPOOL_SIZE");
    *size = CLF__POOL_DEFAULT;
    if (!v || !*v)
        return CLF_SUCCESS;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || end == v || v[0] == '-' || n < 1 || n > CLF__POOL_MAX)
        return clf__fail(CLF_ERROR_PARSE,
                         "CLFLEET_THREADPOOL_SIZE: '%.32s' is not a thread count from 1 to %d",
                         v, CLF__POOL_MAX);
    *size = (unsigned)n;
    return CLF_SUCCESS;
}

static void *pool_main(void *arg);

/* Start one more thread when the runnable work outnumbers the idle threads (under p_lock):
 * the queued jobs that may start (p_size at most run at once), and one thread for the timed
 * jobs, which may start the (p_size + 1)th. A job that requeues itself (requeue) will take
 * its own job back, so it counts as idle. */
static void grow(int requeue)
{
    size_t slots = p_size > p_plain ? p_size - p_plain : 0;
    size_t want = (p_queued < slots ? p_queued : slots) + (t_head != NULL);
    unsigned cap = p_size + (t_head != NULL);
    if (want > p_idle + (requeue != 0) && p_nthreads < cap &&
        pthread_create(&p_threads[p_nthreads], NULL, pool_main,
                       (void *)(uintptr_t)(p_nthreads + 1)) == 0)
        p_nthreads++;
}

/* Wait for work (under p_lock): until the earliest timed job is due, if there is one. */
static void idle_wait(void)
{
    p_idle++;
    if (!t_head) {
        pthread_cond_wait(&p_work, &p_lock);
    } else {
        uint64_t now = clf__mono_ns();
        uint64_t left = t_head->due > now ? t_head->due - now : 0;
        struct timespec ts; /* p_work runs on CLOCK_REALTIME */
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + left % 1000000000u;
        ts.tv_sec += (time_t)(left / 1000000000u + ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&p_work, &p_lock, &ts);
    }
    p_idle--;
}

static void *pool_main(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "clf-pool%u", (unsigned)(uintptr_t)arg);
    pthread_setname_np(pthread_self(), name); /* a name only helps: failure is harmless */
    pthread_mutex_lock(&p_lock);
    for (;;) {
        clf__pool_work *w = NULL;
        int timed = 0;
        if (t_head && t_head->due <= clf__mono_ns()) {
            w = t_head;
            t_head = w->next;
            timed = 1;
        } else if (p_head && p_plain < p_size) {
            w = p_head;
            p_head = w->next;
            if (!p_head)
                p_tail = NULL;
            p_queued--;
            p_plain++;
            grow(0); /* the timers may need another thread now */
        } else if (p_stopped) {
            break; /* the shutdown took the queues */
        } else {
            idle_wait();
            continue;
        }
        p_running++;
        pthread_mutex_unlock(&p_lock);
        /* The job may free w (its owner's memory): w is not touched after this call. */
        w->fn(w->arg, 0);
        pthread_mutex_lock(&p_lock);
        p_running--;
        if (!timed)
            p_plain--;
        pthread_cond_broadcast(&p_done);
    }
    pthread_mutex_unlock(&p_lock);
    return NULL;
}

/* The pool's bound, read once (under p_lock). */
static void configure(void)
{
    if (!p_size && clf__pool_config(&p_size) != CLF_SUCCESS)
        p_size = CLF__POOL_DEFAULT; /* clf_fleet_create() reported the bad value already */
}

/* Queue w; a job that queues it as its last act (requeue) counts its own thread as idle. */
static clf_status submit(clf__pool_work *w, int requeue)
{
    pthread_once(&p_once, pool_register_fork);
    pthread_mutex_lock(&p_lock);
    if (p_stopped) {
        pthread_mutex_unlock(&p_lock);
        return clf__fail(CLF_ERROR_UNSUPPORTED, "helper pool: shut down (the process is "
                                                "exiting), job refused");
    }
    configure();
    w->next = NULL;
    if (p_tail)
        p_tail->next = w;
    else
        p_head = w;
    p_tail = w;
    p_queued++;
    /* Every idle thread takes one queued job; a job left over gets a new thread, up to the
     * bound, after which it waits its turn in the FIFO. */
    grow(requeue);
    if (p_nthreads == 0) { /* no thread to run it, ever: take it back */
        p_head = p_tail = NULL;
        p_queued = 0;
        pthread_mutex_unlock(&p_lock);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "helper pool: cannot start a thread");
    }
    pthread_cond_signal(&p_work);
    pthread_mutex_unlock(&p_lock);
    return CLF_SUCCESS;
}

clf_status clf__pool_submit_at(clf__pool_work *w, uint64_t due)
{
    pthread_once(&p_once, pool_register_fork);
    pthread_mutex_lock(&p_lock);
    if (p_stopped) {
        pthread_mutex_unlock(&p_lock);
        return clf__fail(CLF_ERROR_UNSUPPORTED, "helper pool: shut down (the process is "
                                                "exiting), timed job refused");
    }
    configure();
    w->due = due;
    clf__pool_work **pp = &t_head; /* in due order; equal times in submission order */
    while (*pp && (*pp)->due <= due)
        pp = &(*pp)->next;
    w->next = *pp;
    *pp = w;
    grow(0);
    if (p_nthreads == 0) {
        *pp = w->next; /* nothing else can have moved: p_lock is held */
        pthread_mutex_unlock(&p_lock);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "helper pool: cannot start a thread");
    }
    /* Every waiting thread recomputes its deadline: w may be the earliest now. */
    pthread_cond_broadcast(&p_work);
    pthread_mutex_unlock(&p_lock);
    return CLF_SUCCESS;
}

clf_status clf__pool_submit(clf__pool_work *w)
{
    return submit(w, 0);
}

clf_status clf__pool_requeue(clf__pool_work *w)
{
    return submit(w, 1);
}

unsigned clf__pool_size(void)
{
    pthread_mutex_lock(&p_lock);
    unsigned n = p_size;
    pthread_mutex_unlock(&p_lock);
    if (!n && clf__pool_config(&n) != CLF_SUCCESS)
        n = CLF__POOL_DEFAULT;
    return n;
}

unsigned clf__pool_threads(void)
{
    pthread_mutex_lock(&p_lock);
    unsigned n = p_nthreads;
    pthread_mutex_unlock(&p_lock);
    return n;
}

int clf__pool_stopping(void)
{
    pthread_mutex_lock(&p_lock);
    int s = p_stopped;
    pthread_mutex_unlock(&p_lock);
    return s;
}

/* Stop the pool; wait for the running jobs unless at_exit (see the top of the file). */
static void pool_stop(int at_exit)
{
    pthread_mutex_lock(&p_lock);
    if (p_stopped) {
        pthread_mutex_unlock(&p_lock);
        return;
    }
    p_stopped = 1;
    /* The timed jobs first (earliest first), then the FIFO. */
    clf__pool_work *cancel = t_head, **end = &cancel;
    while (*end)
        end = &(*end)->next;
    *end = p_head;
    t_head = NULL;
    p_head = p_tail = NULL;
    p_queued = 0;
    pthread_cond_broadcast(&p_work);
    pthread_mutex_unlock(&p_lock);
    /* Outside the lock: a cancelled job may take locks of its own, or submit (refused). */
    while (cancel) {
        clf__pool_work *w = cancel;
        cancel = w->next;
        w->fn(w->arg, 1);
    }
    pthread_mutex_lock(&p_lock);
    if (at_exit) {
        /* A job on its way out (its last wake-up already sent) ends in microseconds: give
         * the running ones 100 ms, then leave a job that is still running to the exit. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (p_running && pthread_cond_timedwait(&p_done, &p_lock, &ts) != ETIMEDOUT)
            continue;
        if (p_running) {
            pthread_mutex_unlock(&p_lock);
            return;
        }
    }
    while (p_running)
        pthread_cond_wait(&p_done, &p_lock);
    unsigned n = p_nthreads;
    pthread_mutex_unlock(&p_lock);
    for (unsigned i = 0; i < n; i++)
        pthread_join(p_threads[i], NULL);
}

void clf__pool_shutdown(void)
{
    pool_stop(0);
}

__attribute__((destructor)) static void pool_at_exit(void)
{
    pool_stop(1);
}

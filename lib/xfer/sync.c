/*
 * Synchronisation across devices: events recorded on one device that another
 * device waits for (in the same context, or in another context or platform,
 * through the event bridge of clf_event_cl_for()), barriers across a set of
 * devices, and waiting for one device.
 *
 * Every device has a compute and a transfer queue (and a third for the copies
 * the host drives, transfer.c, and, once clf_cl_compute_queue() has made it, the
 * caller's). A recorded event covers the first two and the caller's: a marker on
 * the compute queue that also waits for a marker on the transfer queue, then one
 * on the caller's queue that waits for it. A wait is a barrier on the compute
 * queue (and the caller's), which orders kernels,
 * launches, collectives, pipelines and task queues (they queue every command
 * that depends on others there). Buffer transfers and copies follow their own
 * wait lists. On PoCL's basic device the waits happen on the host instead
 * (the device's ops table says !wait_list_ok, core/devops.c).
 *
 * The event bridge (the first half of this file) carries events across contexts and between
 * the host and OpenCL. A wait list may only name events of the queue's context
 * (CL_INVALID_CONTEXT otherwise), so an event of another context is bridged: a user event
 * in the target context, set from a callback on the source event. The callback only sets
 * the user event (it never blocks), forwards a negative status, and holds its own reference
 * until it has set the event, so the last reference to a user event is never released while
 * it is unsignalled. The source queue is flushed, or its command might never be submitted
 * and the target would wait forever.
 *
 * An event of a host-side completion (an asynchronous launch, a copy the host drives, a graph
 * run: core/event.c) is bridged by a subscription to the completion, which sets the user
 * event when it completes. No thread waits for it, however many device commands do.
 */
#include "transfer.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clfleet/opencl.h"

/* ---- bridges -------------------------------------------------------------------------- */

/*
 * One forwarding from a source event to a user event of another context. The callback is
 * the fast path. Some drivers never call a CL_COMPLETE callback for a command that fails
 * (PoCL 3 only calls callbacks whose trigger equals the new status, and a failure is
 * negative), so a watcher also polls the sources still pending, every few milliseconds, and
 * forwards a failure itself. Whichever comes first forwards, once. The watcher is a job of
 * the process's helper pool (util/pool.c), queued when a forwarding is listed and none is
 * running, returning once the list is empty: it occupies a pool thread only while some
 * forwarding is pending, and never waits for another job.
 */
typedef struct fwd {
    struct fwd *next;
    cl_event src;         /* retained while listed */
    cl_context ctx;       /* src's context: clf__bridge_drain() waits for its fleet's */
    cl_event uev;         /* the forwarder's reference, dropped when it is set; or NULL: */
    void (*fn)(void *arg, clf_status st); /* called instead (clf__event_notify()) */
    void *arg;
    atomic_int claimed;   /* set by whoever forwards */
    atomic_int refs;      /* the callback's and the list's */
    int zombie;           /* under w_lock: on w_zombies (see cb_release()) */
    int failed;           /* the source had failed when the watcher forwarded it */
    struct fwd *znext;
} fwd;

static pthread_mutex_t w_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t w_cond = PTHREAD_COND_INITIALIZER;
static fwd *w_list;
static int w_running;           /* the watcher's job is queued or running */
static clf__pool_work w_job;
/* Taken off the list by the watcher and not yet released; signalled after each pass. */
static int w_inflight;
static pthread_cond_t w_gone = PTHREAD_COND_INITIALIZER;

/*
 * Forwardings the watcher has finished with while their callback's reference is still out.
 * PoCL 3 never calls a CL_COMPLETE callback for an event that fails after it was registered
 * (see above), so that reference would never come back and the forwarding would leak (found
 * by LeakSanitizer: a source user event set to -1234, tests/test_transfer.c bridges). A
 * conforming driver calls it at the failure, which the watcher may have seen first: the
 * callback then frees the zombie. What is left when the source's fleet goes
 * (clf__bridge_drain(), after its queues finished) is a callback that never comes: freed.
 */
static fwd *w_zombies;

/* The list's reference (the watcher's): the last one frees; else the callback's is still
 * out and the forwarding waits for it on w_zombies. */
static void list_release(fwd *f)
{
    pthread_mutex_lock(&w_lock);
    if (atomic_fetch_sub(&f->refs, 1) == 1) {
        free(f);
    } else {
        f->zombie = 1;
        f->znext = w_zombies;
        w_zombies = f;
    }
    pthread_mutex_unlock(&w_lock);
}

/* The callback's reference (also dropped when no callback could be registered). */
static void cb_release(fwd *f)
{
    pthread_mutex_lock(&w_lock);
    if (f->zombie) {
        fwd **pp = &w_zombies;
        while (*pp && *pp != f)
            pp = &(*pp)->znext;
        if (*pp)
            *pp = f->znext;
        free(f);
        pthread_cond_broadcast(&w_gone); /* clf__bridge_drain() may wait for this one */
    } else if (atomic_fetch_sub(&f->refs, 1) == 1) {
        free(f);
    }
    pthread_mutex_unlock(&w_lock);
}

static void fwd_fire(fwd *f, cl_int status)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&f->claimed, &expected, 1))
        return;
    if (f->uev)
        clf__user_event_finish(f->uev, status);
    else /* the detail of a failure is the waiter's to read from the event (event.c) */
        f->fn(f->arg, status == CL_COMPLETE ? CLF_SUCCESS : CLF_ERROR_OPENCL);
}

static void CL_CALLBACK forward(cl_event ev, cl_int status, void *user)
{
    fwd *f = user;
    /* The event's own status: PoCL passes CL_COMPLETE for an event that had failed
     * before the callback was registered. */
    cl_int s = clf__cl_event_status(ev);
    if (s > CL_COMPLETE)
        s = status < 0 ? status : CL_COMPLETE;
    fwd_fire(f, s);
    cb_release(f); /* touches nothing after this; the lock is only ever held briefly */
}

static void watcher(void *arg, int cancelled)
{
    (void)arg;
    unsigned wait_ms = 2;
    pthread_mutex_lock(&w_lock);
    /* Cancelled, or the pool is stopping: the process is exiting; the callbacks forward. */
    while (w_list && !cancelled && !clf__pool_stopping()) {
        /* Take the finished ones off the list; forward outside the lock. */
        fwd *done = NULL, **pp = &w_list;
        int ndone = 0;
        while (*pp) {
            fwd *f = *pp;
            if (atomic_load(&f->claimed) || clf__cl_event_status(f->src) <= CL_COMPLETE) {
                *pp = f->next;
                f->next = done;
                done = f;
                ndone++;
            } else {
                pp = &f->next;
            }
        }
        w_inflight += ndone;
        pthread_mutex_unlock(&w_lock);
        wait_ms = done ? 2 : (wait_ms < 64 ? 2 * wait_ms : 64);
        while (done) {
            fwd *f = done;
            done = f->next;
            cl_int status = clf__cl_event_status(f->src);
            f->failed = status < 0;
            fwd_fire(f, status);
            clReleaseEvent(f->src);
            list_release(f);
        }
        pthread_mutex_lock(&w_lock);
        w_inflight -= ndone;
        pthread_cond_broadcast(&w_gone);
        if (!w_list)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)wait_ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&w_cond, &w_lock, &ts);
    }
    w_running = 0;
    pthread_cond_broadcast(&w_gone); /* clf__bridge_drain() */
    pthread_mutex_unlock(&w_lock);
}

/* Submit the event's command, so that a wait in another context can end. */
static void flush_source(cl_event ev)
{
    cl_command_queue q = NULL;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) == CL_SUCCESS && q)
        clFlush(q);
}

/* Set uev (taking the caller's reference to it), or with uev NULL call fn(arg, status),
 * when src completes or fails. On failure fn is not called. */
static clf_status bridge_cl(cl_event src, cl_event uev, void (*fn)(void *, clf_status),
                            void *arg)
{
    fwd *f = calloc(1, sizeof *f);
    if (!f) {
        if (uev)
            clf__user_event_finish(uev, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event bridge: out of memory");
    }
    clRetainEvent(src);
    f->src = src;
    if (clGetEventInfo(src, CL_EVENT_CONTEXT, sizeof f->ctx, &f->ctx, NULL) != CL_SUCCESS)
        f->ctx = NULL;
    f->uev = uev;
    f->fn = fn;
    f->arg = arg;
    atomic_init(&f->claimed, 0);
    atomic_init(&f->refs, 2);
    pthread_mutex_lock(&w_lock);
    f->next = w_list;
    w_list = f;
    if (!w_running) {
        w_job.fn = watcher;
        w_job.arg = NULL;
        w_running = clf__pool_submit(&w_job) == CLF_SUCCESS;
    }
    pthread_cond_signal(&w_cond);
    int watched = w_running;
    pthread_mutex_unlock(&w_lock);
    flush_source(src);
    if (clSetEventCallback(src, CL_COMPLETE, forward, f) != CL_SUCCESS) {
        cb_release(f); /* no callback: the watcher forwards */
        if (!watched) { /* nor a watcher: wait here */
            clWaitForEvents(1, &src);
            fwd_fire(f, clf__cl_event_status(src));
        }
    }
    return CLF_SUCCESS;
}

/* Whether f's source is an event of one of fl's contexts. */
static int of_fleet(const fwd *f, const clf_fleet *fl)
{
    for (size_t c = 0; c < fl->nctx; c++)
        if (f->ctx == fl->ctx[c])
            return 1;
    return 0;
}

/*
 * Before a fleet goes: the watcher must have let go of every source event of the fleet's
 * contexts, since releasing an event after its (sub-)device is released crashes PoCL 3.
 * The sources complete once the fleet's queues are idle; the watcher is woken to drop them.
 */
void clf__bridge_drain(clf_fleet *fl)
{
    for (size_t i = 0; i < fl->ndev; i++) {
        if (fl->dev[i].compute)
            clFinish(fl->dev[i].compute);
        if (fl->dev[i].transfer)
            clFinish(fl->dev[i].transfer);
        cl_command_queue user = atomic_load(&fl->dev[i].user);
        if (user)
            clFinish(user);
    }
    pthread_mutex_lock(&w_lock);
    for (;;) {
        int mine = w_inflight > 0;
        for (fwd *f = w_list; f && !mine; f = f->next)
            mine = of_fleet(f, fl);
        if (!mine || !w_running)
            break;
        pthread_cond_signal(&w_cond);
        pthread_cond_wait(&w_gone, &w_lock);
    }
    /* The fleet's sources have completed and its queues are idle. A callback still owed
     * for a source that failed is one PoCL 3 will not call: freed here. One owed for a
     * source that completed is on its way (the driver calls it just after the completion,
     * from its own thread, and the watcher can see the completion first): it frees the
     * forwarding itself, so it is waited for, briefly; freeing it here made that late
     * callback free it twice (test_transfer, copies to the basic device after wait lists,
     * about one run in three). One that still has not come is leaked, never freed under
     * a callback that may yet run. */
    uint64_t give_up = clf__mono_ns() + 2000000000u;
    for (;;) {
        size_t owed = 0;
        for (fwd **pp = &w_zombies; *pp;) {
            fwd *f = *pp;
            int mine = of_fleet(f, fl);
            if (mine && f->failed) {
                *pp = f->znext;
                free(f);
                continue;
            }
            owed += mine;
            pp = &f->znext;
        }
        if (!owed)
            break;
        if (clf__mono_ns() >= give_up) {
            /* Off the list, still marked: a callback that comes after all frees it
             * (cb_release() finds it on no list). */
            for (fwd **pp = &w_zombies; *pp;) {
                if (of_fleet(*pp, fl))
                    *pp = (*pp)->znext;
                else
                    pp = &(*pp)->znext;
            }
            clf__log(CLF_LOG_WARN, "event bridge: %zu completion callback(s) not come after "
                     "2 s; their forwardings are left to them", owed);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&w_gone, &w_lock, &ts);
    }
    pthread_mutex_unlock(&w_lock);
}

/* The bridges to host completions count as the transfer layer's helpers of the target fleet,
 * so that clf__xfer_fini() waits until each has set its user event (of that fleet's context):
 * the completion may belong to another fleet, which may outlive this one. */
void clf__xfer_helper(clf_fleet *fl, int delta)
{
    struct clf__xfer *x = fl->xfer;
    pthread_mutex_lock(&x->lock);
    x->helpers = (unsigned)((int)x->helpers + delta);
    if (x->helpers == 0)
        pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->lock);
}

typedef struct host_bridge {
    clf_fleet *fleet;
    cl_event uev; /* the bridge's own reference */
} host_bridge;

/* The completion has completed: set the user event. Called once, by the completing thread
 * (or at once if it had completed); it never blocks, so no thread waits for a completion. */
static void host_bridge_done(void *arg, clf_status st)
{
    host_bridge *b = arg;
    clf__user_event_finish(b->uev, st == CLF_SUCCESS
                                       ? CL_COMPLETE
                                       : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    clf_fleet *fl = b->fleet;
    free(b);
    clf__xfer_helper(fl, -1);
}

clf_status clf__event_cl_for(clf_event *e, clf_fleet *fl, size_t device, cl_event *out)
{
    *out = NULL;
    cl_context target = fl->dev[device].ctx;
    cl_int err;
    if (e->ev) {
        cl_context ctx = NULL;
        err = clGetEventInfo(e->ev, CL_EVENT_CONTEXT, sizeof ctx, &ctx, NULL);
        if (err != CL_SUCCESS)
            return clf__cl_fail(err, "clGetEventInfo(CL_EVENT_CONTEXT)", &fl->dev[device]);
        if (ctx == target) {
            clRetainEvent(e->ev);
            *out = e->ev;
            return CLF_SUCCESS;
        }
    }
    cl_event uev = clCreateUserEvent(target, &err);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clCreateUserEvent", &fl->dev[device]);
    if (e->ev) {
        clRetainEvent(uev); /* the forwarder's reference */
        clf_status st = bridge_cl(e->ev, uev, NULL, NULL);
        if (st != CLF_SUCCESS) {
            clReleaseEvent(uev); /* set by bridge_cl() */
            return st;
        }
    } else {
        host_bridge *b = malloc(sizeof *b);
        if (!b) {
            clf__user_event_finish(uev, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "event bridge: out of memory");
        }
        b->fleet = fl;
        b->uev = uev;
        clRetainEvent(uev);
        clf__xfer_helper(fl, +1);
        clf_status st = clf__completion_notify(e->done, host_bridge_done, b);
        if (st != CLF_SUCCESS) {
            host_bridge_done(b, st); /* sets the event and drops the bridge's reference */
            clReleaseEvent(uev);     /* and the caller's */
            return st;
        }
    }
    *out = uev;
    return CLF_SUCCESS;
}

/*
 * A host function told when an event completes, without a thread waiting for it: an OpenCL
 * event through a forwarding (its callback, and the watcher for a failure the driver does not
 * call back for), a host-side completion through its subscribers. "Tell me once, never block."
 */
clf_status clf__event_notify(clf_event *e, void (*fn)(void *arg, clf_status st), void *arg)
{
    if (e->ev)
        return bridge_cl(e->ev, NULL, fn, arg);
    return clf__completion_notify(e->done, fn, arg);
}

/* ---- the bridge's public calls -------------------------------------------------------- */

clf_status clf_event_from_cl(cl_event ev, clf_event **out)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_from_cl: out is NULL");
    *out = NULL;
    if (!ev)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_from_cl: event is NULL");
    cl_int err = clRetainEvent(ev);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clRetainEvent", NULL);
    return clf__event_wrap(ev, out);
}

clf_status clf_event_cl_for(clf_event *ev, clf_fleet *fleet, size_t device, cl_event *out)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_cl_for: out is NULL");
    *out = NULL;
    if (!ev)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_event_cl_for: event is NULL");
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (!clf__devops(fleet, device)->wait_list_ok) {
        /* PoCL's basic device runs a command inside whichever thread completes its wait
         * list (here: the bridge's, or another device's driver thread), where PoCL 3
         * deadlocks on its own locks (a two-device halo ping-pong hung at its first steps).
         * So the wait happens here, on the host, as the command path does for clfleet's own
         * commands (core/cmd.c), and the event handed out has completed already: the
         * caller's command then runs inside its own enqueue. */
        cl_int err;
        cl_event uev = clCreateUserEvent(fleet->dev[device].ctx, &err);
        if (err != CL_SUCCESS)
            return clf__cl_fail(err, "clCreateUserEvent", &fleet->dev[device]);
        clf_status ws = clf_event_wait(ev);
        err = clSetUserEventStatus(uev, ws == CLF_SUCCESS
                                            ? CL_COMPLETE
                                            : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        if (err != CL_SUCCESS) {
            clReleaseEvent(uev);
            return clf__cl_fail(err, "clSetUserEventStatus", &fleet->dev[device]);
        }
        *out = uev;
        return CLF_SUCCESS;
    }
    return clf__event_cl_for(ev, fleet, device, out);
}

/* ---- recorded events, barriers, waits ------------------------------------------------- */

clf_status clf__device_marker(clf_fleet *fl, size_t device, cl_event *out)
{
    struct clf__device *d = &fl->dev[device];
    cl_event mt = NULL;
    /* The waiting marker goes on the compute queue, where commands wait for others. The
     * command path flushes each: a queue of another device may wait for these markers, and
     * some drivers submit nothing until a flush. On a !wait_list_ok device (core/devops.c)
     * it waits for the transfer queue's marker on the host instead. */
    clf__cmd c = CLF__CMD(fl, device, d->transfer, "transfer queue");
    c.ev = &mt;
    clf_status st = clf__cmd_marker(&c);
    if (st != CLF_SUCCESS)
        return st;
    c = CLF__CMD(fl, device, d->compute, "compute queue");
    c.nwait = 1;
    c.wait = &mt;
    c.ev = out;
    st = clf__cmd_marker(&c);
    clReleaseEvent(mt);
    return st;
}

/*
 * A marker for the public calls: the device's own queues, then the caller's queue (the one
 * clf_cl_compute_queue() hands out) when it has been made, so that a recorded event or a
 * barrier covers raw commands there as it did when they shared the compute queue. The
 * caller's marker waits for clfleet's, not the other way round: clfleet's queues never wait
 * for the caller's, so a raw command there that waits for a launch cannot hold it up.
 * (Collectives use clf__device_marker(): they order after clfleet's work only.)
 */
static clf_status device_marker_all(clf_fleet *fl, size_t device, cl_event *out)
{
    cl_event mc;
    clf_status st = clf__device_marker(fl, device, &mc);
    cl_command_queue user = atomic_load(&fl->dev[device].user);
    if (st != CLF_SUCCESS || !user) {
        *out = st == CLF_SUCCESS ? mc : NULL;
        return st;
    }
    clf__cmd c = CLF__CMD(fl, device, user, "caller's queue");
    c.nwait = 1;
    c.wait = &mc;
    c.ev = out;
    st = clf__cmd_marker(&c);
    clReleaseEvent(mc);
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
    st = device_marker_all(fleet, device, &m);
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

/* Work queued on device from now on starts after events: a barrier on its compute queue
 * (and on the caller's queue, once made: raw commands there are the device's work too), or
 * on the host for a device that must not wait for other queues (!wait_list_ok, core/devops.c). */
static clf_status device_wait(clf_fleet *fl, size_t device, clf_event *const *events, size_t n)
{
    if (!clf__devops(fl, device)->wait_list_ok)
        return clf_events_wait(events, n);
    cl_event *cl = calloc(n, sizeof *cl);
    if (!cl)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "device %zu: wait: out of memory", device);
    struct clf__device *d = &fl->dev[device];
    size_t k = 0;
    clf_status st = events_for(fl, device, events, n, cl, &k);
    if (st == CLF_SUCCESS) {
        clf__cmd c = CLF__CMD(fl, device, d->compute, NULL);
        c.nwait = (cl_uint)k;
        c.wait = cl;
        st = clf__cmd_barrier(&c);
        cl_command_queue user = atomic_load(&d->user);
        if (st == CLF_SUCCESS && user) {
            c.q = user;
            c.what = "caller's queue";
            st = clf__cmd_barrier(&c);
        }
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
        CLF__TRY(st, device_marker_all(fleet, dev[i], &m));
        CLF__TRY(st, clf__event_wrap(m, &marks[i]));
    }
    /* Then no device goes on before every device has reached it (its own marker too:
     * that orders its compute queue after its transfer queue and back). */
    for (size_t i = 0; i < n; i++)
        CLF__TRY(st, device_wait(fleet, dev[i], marks, n));
    if (out_event) {
        /* Past the barrier on the first device means every device reached it. */
        cl_event m;
        CLF__TRY(st, device_marker_all(fleet, dev[0], &m));
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

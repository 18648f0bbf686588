/*
 * $CLFLEET_SIMULATE's mechanism (simulate.h): a command on a simulated device
 * is followed, on its own in-order queue, by a marker that waits for a user
 * event; the marker stands for the command everywhere (the command path hands
 * it out as the command's event). When the real command completes, its
 * completion callback computes how much later the simulated device would have
 * finished (its measured kernel time x (1/F - 1), the latency, what a bandwidth
 * cap adds to a transfer) and queues a timed job on the process's helper pool
 * (util/pool.c), which sets the user event when that time comes. The callback
 * never waits: a driver's callback thread held for the delay would hold back the
 * other devices' completions too. The pool runs timed jobs even while every one
 * of its threads waits for a simulated command (an asynchronous launch, a copy):
 * they may start one thread beyond its bound (pool.c). No thread of its own.
 *
 * A fleet counts its commands in flight, and clf__sim_fini() (after the fleet's
 * queues have finished) waits for them, so no job outlives what it touches. The
 * releases keep the last markers (a small table, each marker retained so that
 * its address cannot be reused meanwhile) with the real command's start, so that
 * clf__event_profile() reports the simulated span, from the real start to the
 * delayed end, to the metrics, the trace and the cost model.
 */
#include "simulate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int clf__sim_enabled;

/* A fleet's rules, by device. */
struct clf__sim {
    size_t ndev;
    clf__sim_rule *rules;         /* as parsed */
    const clf__sim_rule **by_dev; /* ndev entries, NULL: the device runs as it is */
    unsigned inflight;            /* commands not yet released (under g.lock) */
};

/* One delayed command, from clf__sim_arm() until its release has set its user event. */
typedef struct sim_cmd {
    struct clf__sim *sim;
    const clf__sim_rule *rule;
    unsigned kind;
    size_t bytes;
    cl_event real, marker, user; /* a reference each */
    cl_event since;              /* NULL, or a reference: the work began when it ended */
    uint64_t due;                /* host monotonic ns */
    clf__pool_work job;          /* the release, a timed job of the helper pool */
    uint64_t t0;                 /* the real command's start (device clock), 0: unknown */
    cl_int status;               /* the real command's final status */
} sim_cmd;

/* Markers whose simulated start is known, the latest REG_SLOTS in the order they completed
 * (a ring), each retained so that its address cannot name another event meanwhile. A ring
 * rather than a hash: a launch's report reads its chunks' profiles after the last chunk,
 * and a direct-mapped table would lose some of a few dozen to collisions; the lookup scans
 * from the newest, where the markers read soon after completing are. */
#define REG_SLOTS 1024
typedef struct reg_entry {
    cl_event marker;
    uint64_t t0;
    const struct clf__sim *sim; /* whose (clf__sim_fini() releases a fleet's) */
} reg_entry;

/* How many markers of the ring fall in each bucket of their address's hash: every event
 * profiled while a simulation runs is looked up, those of the devices without a rule too
 * (never in the ring), and a scan of the whole ring for each cost a one-device launch of
 * 4,096 items about 3 us, a tenth of its overhead over raw OpenCL. An empty bucket answers
 * at once; with 16 buckets per entry, about one event in 16 not in the ring still scans. */
#define REG_BUCKETS (16 * REG_SLOTS)

static size_t reg_bucket(cl_event ev)
{
    uint64_t x = (uint64_t)(uintptr_t)ev;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)(x % REG_BUCKETS);
}

static struct {
    pthread_mutex_t lock; /* guards all of this */
    pthread_cond_t idle;  /* a fleet's inflight count fell (CLOCK_MONOTONIC) */
    reg_entry reg[REG_SLOTS];
    size_t reg_next; /* the ring's next slot (its oldest entry) */
    unsigned short in_bucket[REG_BUCKETS]; /* markers of reg per reg_bucket() */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t idle_once = PTHREAD_ONCE_INIT;

/* clf__sim_fini() waits until a due time of clf__mono_ns(), CLOCK_MONOTONIC. */
static void idle_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g.idle, &a);
    pthread_condattr_destroy(&a);
}

/* ---- the releases ------------------------------------------------------------------------ */

/* The simulated end of c has come: remember the marker's start, then release
 * the marker's wait. The references go last, outside the lock (a release may
 * free the event). */
static void finish(sim_cmd *c)
{
    cl_event evicted = NULL;
    if (c->status == CL_COMPLETE && c->t0) {
        pthread_mutex_lock(&g.lock);
        reg_entry *r = &g.reg[g.reg_next];
        g.reg_next = (g.reg_next + 1) % REG_SLOTS;
        evicted = r->marker;
        if (evicted)
            g.in_bucket[reg_bucket(evicted)]--;
        g.in_bucket[reg_bucket(c->marker)]++;
        r->marker = c->marker; /* the table takes c's reference */
        r->t0 = c->t0;
        r->sim = c->sim;
        pthread_mutex_unlock(&g.lock);
        c->marker = NULL;
    }
    cl_int err =
        clSetUserEventStatus(c->user, c->status == CL_COMPLETE ? CL_COMPLETE : c->status);
    if (err != CL_SUCCESS)
        clf__log(CLF_LOG_ERROR,
                 "CLFLEET_SIMULATE: clSetUserEventStatus failed (%s): a "
                 "delayed command will never complete",
                 clf__cl_error_name(err));
    clReleaseEvent(c->user);
    clReleaseEvent(c->real);
    if (c->since)
        clReleaseEvent(c->since);
    if (c->marker)
        clReleaseEvent(c->marker);
    if (evicted)
        clReleaseEvent(evicted);
    pthread_mutex_lock(&g.lock);
    c->sim->inflight--;
    pthread_cond_broadcast(&g.idle);
    pthread_mutex_unlock(&g.lock);
    free(c);
}

/* The timed job: c's time has come (or the pool is shutting down, at the process's exit:
 * released undelayed rather than never). */
static void release_job(void *arg, int cancelled)
{
    (void)cancelled;
    finish(arg);
}

/* ---- a command's delay ------------------------------------------------------------------- */

/* How much later than the real command the simulated device finishes, in ns. */
static uint64_t delay_ns(const sim_cmd *c, uint64_t t0, uint64_t t1)
{
    const clf__sim_rule *r = c->rule;
    double took = t1 > t0 ? (double)(t1 - t0) : 0, d = (double)r->latency_ns;
    if (c->kind == CLF__SIM_KERNEL && r->compute < 1)
        d += took * (1 / r->compute - 1);
    double cap = c->kind == CLF__SIM_H2D ? r->h2d : c->kind == CLF__SIM_D2H ? r->d2h : 0;
    if (cap > 0) {
        double need = (double)c->bytes / cap * 1e9;
        if (need > took)
            d += need - took;
    }
    return d > 0 ? (uint64_t)d : 0;
}

/* On a driver's thread, once the real command completed (or failed): schedule
 * the marker's release; nothing here waits. */
static void CL_CALLBACK on_real_done(cl_event ev, cl_int status, void *arg)
{
    sim_cmd *c = arg;
    uint64_t now = clf__mono_ns();
    c->status = status;
    c->due = now;
    cl_ulong a = 0, b = 0;
    if (status == CL_COMPLETE &&
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL) ==
            CL_SUCCESS &&
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) ==
            CL_SUCCESS &&
        b >= a) {
        /* A library's several kernels (clBLAST's pads, GEMM and copy-back): the work began
         * when the command before its first kernel ended (in-order queue), not when its
         * last kernel started, and all of it is held back. */
        cl_ulong s = 0;
        if (c->since &&
            clGetEventProfilingInfo(c->since, CL_PROFILING_COMMAND_END, sizeof s, &s, NULL) ==
                CL_SUCCESS &&
            s > 0 && s < a)
            a = s;
        c->t0 = a;
        c->due = now + delay_ns(c, a, b);
    } else if (status == CL_COMPLETE) {
        c->due = now + delay_ns(c, 0, 0); /* no profile: the latency and caps alone */
    }
    c->job.fn = release_job;
    c->job.arg = c;
    if (clf__pool_submit_at(&c->job, c->due) != CLF_SUCCESS) {
        /* No pool (the process is exiting, or no thread could start): released at once,
         * undelayed, rather than never. */
        clf__log(CLF_LOG_WARN, "CLFLEET_SIMULATE: %s; a command is not delayed",
                 clf_last_error());
        finish(c);
    }
}

int clf__sim_device(const clf_fleet *fl, size_t dev)
{
    return fl->sim && dev < fl->sim->ndev && fl->sim->by_dev[dev] != NULL;
}

void clf__sim_key(const clf_fleet *fl, size_t dev, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    if (!clf__sim_device(fl, dev))
        return;
    const clf__sim_rule *r = fl->sim->by_dev[dev];
    /* %.17g: two rules that differ give two keys. */
    snprintf(buf, n, "|sim=compute=%.17g,latency=%lluns,h2d=%.17g,d2h=%.17g", r->compute,
             (unsigned long long)r->latency_ns, r->h2d, r->d2h);
}

clf_status clf__sim_user_event(clf_fleet *fl, size_t dev, cl_event *user)
{
    cl_int err;
    *user = clCreateUserEvent(fl->dev[dev].ctx, &err);
    if (err != CL_SUCCESS) {
        *user = NULL;
        return clf__cl_fail(err, "clCreateUserEvent (CLFLEET_SIMULATE)", &fl->dev[dev]);
    }
    return CLF_SUCCESS;
}

clf_status clf__sim_arm(clf_fleet *fl, size_t dev, cl_event real, cl_event marker,
                        cl_event user, unsigned kind, size_t bytes)
{
    return clf__sim_arm_since(fl, dev, real, NULL, marker, user, kind, bytes);
}

clf_status clf__sim_arm_since(clf_fleet *fl, size_t dev, cl_event real, cl_event since,
                              cl_event marker, cl_event user, unsigned kind, size_t bytes)
{
    if (!marker) {
        clReleaseEvent(user); /* nothing waits for it */
        return CLF_SUCCESS;
    }
    sim_cmd *c = calloc(1, sizeof *c);
    if (!c) {
        /* The marker must not wait forever: released now, undelayed. */
        clSetUserEventStatus(user, CL_COMPLETE);
        clReleaseEvent(user);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "CLFLEET_SIMULATE: out of memory");
    }
    c->sim = fl->sim;
    c->rule = fl->sim->by_dev[dev];
    c->kind = kind;
    c->bytes = bytes;
    c->user = user;
    c->real = real;
    c->marker = marker;
    c->since = since;
    if (since)
        clRetainEvent(since);
    clRetainEvent(real);
    clRetainEvent(marker); /* the caller keeps its own */
    pthread_mutex_lock(&g.lock);
    fl->sim->inflight++;
    pthread_mutex_unlock(&g.lock);
    cl_int err = clSetEventCallback(real, CL_COMPLETE, on_real_done, c);
    if (err != CL_SUCCESS) {
        c->status = CL_COMPLETE;
        finish(c); /* undelayed, but complete */
        return clf__cl_fail(err, "clSetEventCallback (CLFLEET_SIMULATE)", &fl->dev[dev]);
    }
    return CLF_SUCCESS;
}

int clf__sim_profile(cl_event ev, uint64_t *t0, uint64_t *t1)
{
    if (!ev)
        return 0;
    uint64_t start = 0;
    size_t h = reg_bucket(ev);
    pthread_mutex_lock(&g.lock);
    for (size_t k = 1; g.in_bucket[h] && k <= REG_SLOTS; k++) {
        const reg_entry *r = &g.reg[(g.reg_next + REG_SLOTS - k) % REG_SLOTS];
        if (r->marker == ev) {
            start = r->t0;
            break;
        }
    }
    pthread_mutex_unlock(&g.lock);
    cl_ulong b = 0;
    if (!start ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) !=
            CL_SUCCESS ||
        b < start)
        return 0;
    *t0 = start;
    *t1 = b;
    return 1;
}

/* ---- a fleet's simulation ---------------------------------------------------------------- */

static void log_rule(const clf_fleet *fl, const clf__sim_rule *r)
{
    char what[256];
    size_t o = 0;
    if (r->compute < 1)
        o += (size_t)snprintf(what + o, sizeof what - o, ", kernels %.3gx slower",
                              1 / r->compute);
    if (r->latency_ns)
        o += (size_t)snprintf(what + o, sizeof what - o, ", %.6g us more per command",
                              (double)r->latency_ns / 1e3);
    if (r->h2d > 0)
        o += (size_t)snprintf(what + o, sizeof what - o, ", host->device at most %.4g MB/s",
                              r->h2d / 1e6);
    if (r->d2h > 0)
        snprintf(what + o, sizeof what - o, ", device->host at most %.4g MB/s", r->d2h / 1e6);
    clf__log(CLF_LOG_INFO, "CLFLEET_SIMULATE (a testing tool): device %zu '%s'%s", r->device,
             fl->dev[r->device].info.name, what);
}

clf_status clf__sim_init(clf_fleet *fl)
{
    const char *env = getenv("CLFLEET_SIMULATE");
    clf__sim_rule *r = NULL;
    size_t n = 0;
    clf_status st = clf__sim_parse(env, &r, &n);
    if (st != CLF_SUCCESS)
        return clf__prefix_error(st, "CLFLEET_SIMULATE='%.200s': ", env);
    if (n == 0)
        return CLF_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        if (r[i].device >= fl->ndev)
            st = clf__fail(CLF_ERROR_PARSE,
                           "CLFLEET_SIMULATE='%.200s': rule %zu names device %zu, the fleet "
                           "has %zu (devices 0 to %zu)",
                           env, i + 1, r[i].device, fl->ndev, fl->ndev - 1);
        else if (fl->dev[r[i].device].ops && !fl->dev[r[i].device].ops->wait_list_ok)
            /* Such a device (core/devops.c) runs a command inside whichever thread makes it
             * ready: the marker would run on the releasing pool thread, where PoCL 3 can
             * deadlock. */
            st = clf__fail(CLF_ERROR_PARSE,
                           "CLFLEET_SIMULATE='%.200s': rule %zu: device %zu '%s' runs commands "
                           "inside clEnqueue* (PoCL's basic), which cannot be simulated; use "
                           "a pthread device (its sub-devices: CLFLEET_DEVICES=...;split=1)",
                           env, i + 1, r[i].device, fl->dev[r[i].device].info.name);
        if (st != CLF_SUCCESS) {
            free(r);
            return st;
        }
    }
    struct clf__sim *s = calloc(1, sizeof *s);
    const clf__sim_rule **by = calloc(fl->ndev, sizeof *by);
    if (!s || !by) {
        free(s);
        free(by);
        free(r);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "CLFLEET_SIMULATE: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        by[r[i].device] = &r[i];
    s->ndev = fl->ndev;
    s->rules = r;
    s->by_dev = by;
    pthread_once(&idle_once, idle_init);
    for (size_t i = 0; i < n; i++)
        log_rule(fl, &r[i]);
    __atomic_store_n(&clf__sim_enabled, 1, __ATOMIC_RELAXED);
    fl->sim = s;
    return CLF_SUCCESS;
}

void clf__sim_fini(clf_fleet *fl)
{
    struct clf__sim *s = fl->sim;
    if (!s)
        return;
    /* The queues have finished, so every real command has completed; its callback
     * may still be on its way (drivers call them just after), and its timed job then
     * sets the user event at its due time. Bounded anyway: a driver that never
     * calls back must not hang the teardown. */
    pthread_mutex_lock(&g.lock);
    uint64_t give_up = clf__mono_ns() + 120ull * 1000000000u;
    while (s->inflight && clf__mono_ns() < give_up) {
        struct timespec ts = {(time_t)(give_up / 1000000000u), (long)(give_up % 1000000000u)};
        pthread_cond_timedwait(&g.idle, &g.lock, &ts);
    }
    unsigned left = s->inflight;
    /* The markers of this fleet's queues go before the queues do. */
    cl_event drop[REG_SLOTS];
    size_t ndrop = 0;
    for (size_t i = 0; i < REG_SLOTS; i++)
        if (g.reg[i].marker && g.reg[i].sim == s) {
            g.in_bucket[reg_bucket(g.reg[i].marker)]--;
            drop[ndrop++] = g.reg[i].marker;
            memset(&g.reg[i], 0, sizeof g.reg[i]);
        }
    pthread_mutex_unlock(&g.lock);
    for (size_t i = 0; i < ndrop; i++)
        clReleaseEvent(drop[i]);
    if (left) {
        /* Its commands still point at s: leaking it is the safe choice. */
        clf__log(CLF_LOG_ERROR,
                 "CLFLEET_SIMULATE: %u command(s) never completed; the "
                 "simulation state is leaked",
                 left);
        fl->sim = NULL;
        return;
    }
    clf__log(CLF_LOG_DEBUG,
             "CLFLEET_SIMULATE: a simulated fleet is done (%zu marker(s) "
             "forgotten)",
             ndrop);
    free(s->by_dev);
    free(s->rules);
    free(s);
    fl->sim = NULL;
}

/*
 * Counters: per device, the kernels run and their time on the device, the
 * bytes moved each way and by path, memory allocated through clfleet and its
 * peak, host waits and launch-end idling; per fleet, the last launch's
 * balance. Here are the hooks the layers call to count (record, events,
 * allocations, waits, launches) and the metrics' life cycle with the fleet;
 * what callers read (getters, reset, profile regions, JSON, the table) is in
 * report.c.
 *
 * The hooks take one lock per device (the device's worker thread is nearly
 * always its only user) and never call OpenCL: times come from the profiling
 * events the caller already read. Counters are cumulative from the fleet's
 * creation; a reset moves a baseline, so profile regions survive resets.
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int clf__event_profile(cl_event ev, uint64_t *t0, uint64_t *t1)
{
    cl_ulong a = 0, b = 0;
    *t0 = *t1 = 0;
    /* A simulated device's command: its span as simulated (simulate.h). */
    if (__builtin_expect(__atomic_load_n(&clf__sim_enabled, __ATOMIC_RELAXED), 0) &&
        clf__sim_profile(ev, t0, t1))
        return 1;
    if (!ev ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) != CL_SUCCESS ||
        b < a)
        return 0;
    *t0 = a;
    *t1 = b;
    return 1;
}

/* ---- life cycle ------------------------------------------------------------------------ */

/* The trace path with %p (the process id), %n (the fleet's number in this process) and %%
 * expanded, so that one $CLFLEET_TRACE serves programs with several fleets or processes. */
static char *trace_path(const char *tmpl)
{
    static atomic_uint fleets;
    unsigned seq = atomic_fetch_add(&fleets, 1);
    clf__sb b = {0};
    for (const char *c = tmpl; *c; c++) {
        if (c[0] == '%' && c[1] == 'p')
            clf__sb_printf(&b, "%ld", (long)getpid()), c++;
        else if (c[0] == '%' && c[1] == 'n')
            clf__sb_printf(&b, "%u", seq), c++;
        else if (c[0] == '%' && c[1] == '%')
            clf__sb_printf(&b, "%%"), c++;
        else
            clf__sb_printf(&b, "%c", *c);
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* Fail fast on a trace that could not be written at the end: create and remove the file the
 * trace is written to before its rename (trace.c), beside the target, and refuse a target
 * that is a directory. Nothing is left behind, so a fleet that dies early leaves no empty
 * trace. from: what named the path, for the message. */
static clf_status trace_probe(const char *path, const char *from)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return clf__fail(CLF_ERROR_IO, "%s: trace '%s' cannot be written: %s", from, path,
                         strerror(EISDIR));
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "trace: out of memory");
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    clf_status st = CLF_SUCCESS;
    if (fd < 0)
        st = clf__fail(CLF_ERROR_IO, "%s: trace '%s' cannot be written: %s", from, path,
                       strerror(errno));
    else {
        close(fd);
        unlink(tmp);
    }
    free(tmp);
    return st;
}

static void devm_free(clf__devm *d)
{
    free(d->pair_bytes);
    free(d->pair_count);
    free(d->pair_s);
    free(d->pair_bytes0);
    free(d->pair_count0);
    free(d->pair_s0);
    free(d->ev);
}

clf_status clf__metrics_init(clf_fleet *fl, const char *trace)
{
    int off = 0;
    clf_status st = clf__env_metrics(getenv("CLFLEET_METRICS"), &off);
    if (st != CLF_SUCCESS)
        return st;
    const char *from = trace ? "trace option" : "CLFLEET_TRACE";
    if (!trace)
        trace = getenv("CLFLEET_TRACE");
    if (trace && !trace[0])
        trace = NULL;
    /* Only to measure what counting costs: without a trace, no metrics at all. */
    if (!trace && off)
        return CLF_SUCCESS;
    struct clf__metrics *m = calloc(1, sizeof *m);
    if (!m)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "metrics: out of memory");
    m->ndev = fl->ndev;
    m->dm = calloc(fl->ndev + 1, sizeof *m->dm);
    if (!m->dm) {
        free(m);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "metrics: out of memory");
    }
    size_t n = fl->ndev;
    int oom = trace && !(m->trace_path = trace_path(trace));
    for (size_t i = 0; i <= n; i++) {
        clf__devm *d = &m->dm[i];
        pthread_mutex_init(&d->lock, NULL);
        d->clock = "host";
        if (i == n)
            continue;
        d->pair_bytes = calloc(n, sizeof *d->pair_bytes);
        d->pair_count = calloc(n, sizeof *d->pair_count);
        d->pair_s = calloc(n, sizeof *d->pair_s);
        d->pair_bytes0 = calloc(n, sizeof *d->pair_bytes0);
        d->pair_count0 = calloc(n, sizeof *d->pair_count0);
        d->pair_s0 = calloc(n, sizeof *d->pair_s0);
        oom |= !d->pair_bytes || !d->pair_count || !d->pair_s || !d->pair_bytes0 ||
               !d->pair_count0 || !d->pair_s0;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->drained, NULL);
    atomic_init(&m->mem_total, 0);
    atomic_init(&m->mem_total_peak, 0);
    m->epoch_ns = m->reset_ns = clf__mono_ns();
    fl->metrics = m;
    if (oom) {
        clf__metrics_fini(fl);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "metrics: out of memory");
    }
    if (m->trace_path && (st = trace_probe(m->trace_path, from)) != CLF_SUCCESS) {
        free(m->trace_path); /* or clf__metrics_fini() would try to write it */
        m->trace_path = NULL;
        clf__metrics_fini(fl);
        return st;
    }
    if (m->trace_path)
        clf__trace_calibrate(fl);
    return CLF_SUCCESS;
}

void clf__metrics_fini(clf_fleet *fl)
{
    struct clf__metrics *m = fl ? fl->metrics : NULL;
    if (!m)
        return;
    /* Callbacks of commands that completed may still be on their way. */
    pthread_mutex_lock(&m->lock);
    while (m->pending)
        pthread_cond_wait(&m->drained, &m->lock);
    pthread_mutex_unlock(&m->lock);
    if (m->trace_path && clf__trace_write(fl) != CLF_SUCCESS)
        /* Destroy cannot return it, and the user asked for this file. */
        clf__log(CLF_LOG_ERROR, "trace not written: %s", clf_last_error());
    for (size_t i = 0; i <= m->ndev; i++) {
        devm_free(&m->dm[i]);
        pthread_mutex_destroy(&m->dm[i].lock);
    }
    pthread_cond_destroy(&m->drained);
    pthread_mutex_destroy(&m->lock);
    free(m->dm);
    free(m->trace_path);
    free(m);
    fl->metrics = NULL;
}

/* ---- recording ------------------------------------------------------------------------- */

static double span_s(const clf__rec *r)
{
    return r->t1 > r->t0 ? (double)(r->t1 - r->t0) * 1e-9 : 0.0;
}

/* Counters of everything but the peer side of a copy; d's lock held. */
static void count_local(clf__devm *d, const clf__rec *r)
{
    int qty = !(r->flags & CLF__REC_NO_QTY), tm = !(r->flags & CLF__REC_NO_TIME);
    double s = span_s(r);
    switch (r->kind) {
    case CLF__REC_KERNEL:
        d->cur.kernels += (uint64_t)qty;
        if (tm)
            d->cur.busy_s += s;
        break;
    case CLF__REC_TO_DEVICE:
    case CLF__REC_FROM_DEVICE: {
        int k = r->kind == CLF__REC_TO_DEVICE ? CLF_DIRECTION_TO_DEVICE : CLF_DIRECTION_FROM_DEVICE;
        if (qty) {
            d->cur.dir_bytes[k] += r->bytes;
            d->cur.dir_count[k]++;
        }
        if (tm)
            d->cur.dir_s[k] += s;
        break;
    }
    case CLF__REC_WAIT:
        if (tm)
            d->cur.wait_s += s;
        break;
    case CLF__REC_IDLE:
        if (tm)
            d->cur.idle_s += s;
        break;
    default:
        break;
    }
}

/* The two sides of a copy: received on dst (by path), sent from src (by destination). */
static void count_peer(struct clf__metrics *m, const clf__rec *r)
{
    if (r->src >= m->ndev || r->dst >= m->ndev || (r->flags & CLF__REC_TRACE_ONLY) ==
                                                      CLF__REC_TRACE_ONLY)
        return;
    int qty = !(r->flags & CLF__REC_NO_QTY), tm = !(r->flags & CLF__REC_NO_TIME);
    double s = tm ? span_s(r) : 0.0;
    unsigned p = (unsigned)r->path < CLF_NUM_PATHS ? (unsigned)r->path : CLF_PATH_STAGED;
    clf__devm *d = &m->dm[r->dst];
    /* A copy within one device (a collective's scratch, clf_array_reduce()) moves nothing
     * between devices: it is counted apart, so that "peer" means traffic between devices. */
    int same = r->src == r->dst;
    pthread_mutex_lock(&d->lock);
    if (qty) {
        if (same) {
            d->cur.same_bytes += r->bytes;
            d->cur.same_count++;
        } else {
            d->cur.dir_bytes[CLF_DIRECTION_PEER] += r->bytes;
            d->cur.dir_count[CLF_DIRECTION_PEER]++;
        }
        d->cur.path_bytes[p] += r->bytes;
        d->cur.path_count[p]++;
    }
    if (same)
        d->cur.same_s += s;
    else
        d->cur.dir_s[CLF_DIRECTION_PEER] += s;
    d->cur.path_s[p] += s;
    pthread_mutex_unlock(&d->lock);
    d = &m->dm[r->src];
    pthread_mutex_lock(&d->lock);
    if (qty) {
        if (r->src != r->dst) {
            d->cur.sent_bytes += r->bytes;
            d->cur.sent_count++;
        }
        d->pair_bytes[r->dst] += r->bytes;
        d->pair_count[r->dst]++;
    }
    if (r->src != r->dst)
        d->cur.sent_s += s;
    d->pair_s[r->dst] += s;
    pthread_mutex_unlock(&d->lock);
}

static void record(struct clf__metrics *m, size_t dev, const clf__rec *r, size_t n)
{
    size_t idx = dev < m->ndev ? dev : m->ndev;
    clf__devm *d = &m->dm[idx];
    int peers = 0;
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < n; i++) {
        if (r[i].kind == CLF__REC_PEER)
            peers = 1;
        else
            count_local(d, &r[i]);
        if (m->trace_path && !(r[i].flags & CLF__REC_NO_TRACE) && r[i].t1 > r[i].t0) {
            int host = (r[i].flags & CLF__REC_HOST_TIME) || idx == m->ndev;
            int64_t ts =
                (int64_t)r[i].t0 + (host ? 0 : d->offset_ns) - (int64_t)m->epoch_ns;
            clf__trace_add(m, idx, &r[i], ts, (int64_t)(r[i].t1 - r[i].t0));
        }
    }
    pthread_mutex_unlock(&d->lock);
    for (size_t i = 0; peers && i < n; i++)
        if (r[i].kind == CLF__REC_PEER)
            count_peer(m, &r[i]);
}

void clf__metrics_record(clf_fleet *fl, size_t dev, const clf__rec *r, size_t n)
{
    if (fl && fl->metrics && n)
        record(fl->metrics, dev, r, n);
}

/* A command's completion, reported by its event's callback. */
typedef struct pending_rec {
    clf_fleet *fl;
    size_t dev;
    clf__rec r;
    char name[64];
} pending_rec;

static void done_pending(struct clf__metrics *m)
{
    pthread_mutex_lock(&m->lock);
    if (--m->pending == 0)
        pthread_cond_broadcast(&m->drained);
    pthread_mutex_unlock(&m->lock);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *data)
{
    pending_rec *p = data;
    struct clf__metrics *m = p->fl->metrics;
    if (status == CL_COMPLETE && clf__event_profile(ev, &p->r.t0, &p->r.t1))
        record(m, p->dev, &p->r, 1);
    clReleaseEvent(ev);
    free(p);
    done_pending(m); /* last: the fleet may go as soon as it runs */
}

void clf__metrics_event(clf_fleet *fl, size_t dev, const clf__rec *r, cl_event ev)
{
    struct clf__metrics *m = fl ? fl->metrics : NULL;
    if (!m)
        return;
    clf__rec now = *r;
    now.t0 = now.t1 = 0;
    now.flags = (r->flags & ~CLF__REC_HOST_TIME) | CLF__REC_NO_TIME | CLF__REC_NO_TRACE;
    if (!(r->flags & CLF__REC_NO_QTY))
        record(m, dev, &now, 1);
    if ((r->flags & CLF__REC_NO_TIME) && ((r->flags & CLF__REC_NO_TRACE) || !m->trace_path))
        return; /* nothing left to learn from the event */
    pending_rec *p = ev ? malloc(sizeof *p) : NULL;
    if (!p)
        return; /* the time is lost, the bytes are counted */
    p->fl = fl;
    p->dev = dev;
    p->r = *r;
    p->r.flags = (r->flags & ~CLF__REC_HOST_TIME) | CLF__REC_NO_QTY;
    if (r->name) {
        snprintf(p->name, sizeof p->name, "%s", r->name);
        p->r.name = p->name;
    }
    if (clRetainEvent(ev) != CL_SUCCESS) { /* held until the callback has run */
        free(p);
        return;
    }
    pthread_mutex_lock(&m->lock);
    m->pending++;
    pthread_mutex_unlock(&m->lock);
    if (clSetEventCallback(ev, CL_COMPLETE, on_complete, p) != CL_SUCCESS) {
        clReleaseEvent(ev);
        free(p);
        done_pending(m);
    }
}

void clf__metrics_alloc(clf_fleet *fl, size_t dev, uint64_t bytes)
{
    struct clf__metrics *m = fl ? fl->metrics : NULL;
    if (!m || dev >= m->ndev)
        return;
    clf__devm *d = &m->dm[dev];
    pthread_mutex_lock(&d->lock);
    d->mem_now += bytes;
    d->cur.allocs++;
    if (d->mem_now > d->mem_peak)
        d->mem_peak = d->mem_now;
    pthread_mutex_unlock(&d->lock);
    uint_fast64_t t = atomic_fetch_add(&m->mem_total, bytes) + bytes;
    uint_fast64_t p = atomic_load(&m->mem_total_peak);
    while (t > p && !atomic_compare_exchange_weak(&m->mem_total_peak, &p, t))
        ;
}

void clf__metrics_free(clf_fleet *fl, size_t dev, uint64_t bytes)
{
    struct clf__metrics *m = fl ? fl->metrics : NULL;
    if (!m || dev >= m->ndev)
        return;
    clf__devm *d = &m->dm[dev];
    pthread_mutex_lock(&d->lock);
    d->mem_now = d->mem_now > bytes ? d->mem_now - bytes : 0;
    pthread_mutex_unlock(&d->lock);
    atomic_fetch_sub(&m->mem_total, bytes);
}

void clf__metrics_wait(clf_fleet *fl, size_t dev, uint64_t t0, uint64_t t1, const char *what)
{
    if (!fl || !fl->metrics || t1 <= t0)
        return;
    clf__rec r = {0};
    r.kind = CLF__REC_WAIT;
    r.flags = CLF__REC_HOST_TIME;
    r.track = CLF__TRACK_SYNC;
    r.name = what;
    r.t0 = t0;
    r.t1 = t1;
    record(fl->metrics, dev, &r, 1);
}

void clf__metrics_array_launch(clf_fleet *fl)
{
    struct clf__metrics *m = fl ? fl->metrics : NULL;
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->launches++;
    pthread_mutex_unlock(&m->lock);
}

void clf__metrics_launch(clf_fleet *fl, const char *kernel, const clf_launch_report *rep,
                         double t0)
{
    struct clf__metrics *m = fl ? fl->metrics : NULL;
    if (!m)
        return;
    uint64_t start = (uint64_t)llround(t0 * 1e9);
    uint64_t end = start + (uint64_t)llround(rep->makespan_s * 1e9);
    pthread_mutex_lock(&m->lock);
    m->launches++;
    snprintf(m->last_kernel, sizeof m->last_kernel, "%s", kernel ? kernel : "");
    m->last_strategy = rep->strategy;
    m->last_ndev = rep->num_devices;
    m->last_makespan = rep->makespan_s;
    m->last_imbalance = rep->imbalance;
    m->last_efficiency = rep->efficiency;
    size_t ran = 0;
    for (size_t i = 0; i < rep->num_devices && i < CLF_MAX_LAUNCH_DEVICES; i++)
        ran += !rep->dev[i].excluded && rep->dev[i].units > 0;
    if (ran >= 2) {
        m->imb_sum += rep->imbalance;
        m->imb_n++;
        if (rep->imbalance > m->imb_max)
            m->imb_max = rep->imbalance;
    }
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < m->ndev; i++) {
        pthread_mutex_lock(&m->dm[i].lock);
        m->dm[i].in_last = 0;
        pthread_mutex_unlock(&m->dm[i].lock);
    }
    for (size_t i = 0; i < rep->num_devices && i < CLF_MAX_LAUNCH_DEVICES; i++) {
        const clf_device_report *dr = &rep->dev[i];
        if (dr->device >= m->ndev || dr->excluded) /* left out: took no part */
            continue;
        clf__devm *d = &m->dm[dr->device];
        pthread_mutex_lock(&d->lock);
        d->in_last = 1;
        d->last_busy_s = dr->busy_s;
        d->last_share = dr->share;
        d->last_finish_s = dr->finish_s;
        pthread_mutex_unlock(&d->lock);
        /* A device that finished early waits for the slowest: the launch's barrier. */
        uint64_t fin = start + (uint64_t)llround((dr->units ? dr->finish_s : 0.0) * 1e9);
        if (!dr->failed && end > fin) {
            clf__rec r = {0};
            r.kind = CLF__REC_IDLE;
            r.flags = CLF__REC_HOST_TIME;
            r.track = CLF__TRACK_SYNC;
            r.t0 = fin;
            r.t1 = end;
            record(m, dr->device, &r, 1);
        }
    }
    if (m->trace_path) {
        clf__rec r = {0};
        r.kind = CLF__REC_LAUNCH;
        r.flags = CLF__REC_HOST_TIME | CLF__REC_TRACE_ONLY;
        r.track = 1;
        r.name = kernel;
        r.t0 = start;
        r.t1 = end > start ? end : start + 1;
        r.a0 = (int64_t)rep->total_units;
        r.a1 = (int64_t)rep->num_devices;
        r.strategy = rep->strategy;
        r.efficiency = rep->efficiency;
        record(m, SIZE_MAX, &r, 1);
    }
}

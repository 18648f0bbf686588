/*
 * Counters: per device, the kernels run and their time on the device, the
 * bytes moved each way and by path, memory allocated through clfleet and its
 * peak, host waits and launch-end idling; per fleet, the last launch's
 * balance and the utilization of the window since the last reset. Getters,
 * reset, profile regions, the JSON export and the summary table.
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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const dir_names[CLF_NUM_DIRECTIONS] = {"to-device", "from-device", "peer"};

const char *clf_direction_name(clf_direction d)
{
    return (unsigned)d < CLF_NUM_DIRECTIONS ? dir_names[d] : NULL;
}

int clf__event_profile(cl_event ev, uint64_t *t0, uint64_t *t1)
{
    cl_ulong a = 0, b = 0;
    *t0 = *t1 = 0;
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

/* ---- a growing string ------------------------------------------------------------------ */

void clf__sb_printf(clf__sb *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

void clf__sb_json_string(clf__sb *b, const char *s)
{
    clf__sb_printf(b, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            clf__sb_printf(b, "\\%c", c);
        else if (c < 0x20)
            clf__sb_printf(b, "\\u%04x", c);
        else
            clf__sb_printf(b, "%c", c);
    }
    clf__sb_printf(b, "\"");
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
    pthread_mutex_lock(&d->lock);
    if (qty) {
        d->cur.dir_bytes[CLF_DIRECTION_PEER] += r->bytes;
        d->cur.dir_count[CLF_DIRECTION_PEER]++;
        d->cur.path_bytes[p] += r->bytes;
        d->cur.path_count[p]++;
    }
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

/* ---- getters --------------------------------------------------------------------------- */

static clf_status check_metrics(const clf_fleet *fl, const char *fn)
{
    if (!fl)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: fleet is NULL", fn);
    if (!fl->metrics)
        return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: metrics are off (CLFLEET_METRICS=0)", fn);
    return CLF_SUCCESS;
}

static void stats(clf_transfer_stats *t, uint64_t bytes, uint64_t count, double s)
{
    t->bytes = bytes;
    t->count = count;
    t->seconds = s > 0 ? s : 0;
    t->bandwidth = s > 0 ? (double)bytes / s : 0.0;
}

static void add_stats(clf_transfer_stats *t, const clf_transfer_stats *x)
{
    stats(t, t->bytes + x->bytes, t->count + x->count, t->seconds + x->seconds);
}

static void device_metrics(const struct clf__metrics *m, size_t i, double wall,
                           clf_device_metrics *o)
{
    clf__devm *d = &m->dm[i];
    memset(o, 0, sizeof *o);
    pthread_mutex_lock(&d->lock);
    const clf__counters *c = &d->cur, *b = &d->base;
    o->device = i;
    o->kernels = c->kernels - b->kernels;
    o->busy_s = c->busy_s - b->busy_s;
    o->wall_s = wall;
    uint64_t bytes = 0;
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
        stats(&o->dir[k], c->dir_bytes[k] - b->dir_bytes[k], c->dir_count[k] - b->dir_count[k],
              c->dir_s[k] - b->dir_s[k]);
        o->transfers += o->dir[k].count;
        o->transfer_s += o->dir[k].seconds;
        bytes += o->dir[k].bytes;
    }
    for (int p = 0; p < CLF_NUM_PATHS; p++)
        stats(&o->path[p], c->path_bytes[p] - b->path_bytes[p],
              c->path_count[p] - b->path_count[p], c->path_s[p] - b->path_s[p]);
    stats(&o->peer_sent, c->sent_bytes - b->sent_bytes, c->sent_count - b->sent_count,
          c->sent_s - b->sent_s);
    o->mem_current = d->mem_now;
    o->mem_peak = d->mem_peak;
    o->allocations = c->allocs - b->allocs;
    o->wait_s = c->wait_s - b->wait_s;
    o->idle_s = c->idle_s - b->idle_s;
    o->in_last_launch = d->in_last;
    o->last_busy_s = d->last_busy_s;
    o->last_share = d->last_share;
    o->last_finish_s = d->last_finish_s;
    pthread_mutex_unlock(&d->lock);
    if (o->busy_s < 0) /* rounding of the baseline's subtraction */
        o->busy_s = 0;
    o->utilization = wall > 0 ? o->busy_s / wall : 0.0;
    o->bandwidth = o->transfer_s > 0 ? (double)bytes / o->transfer_s : 0.0;
}

static double window_s(struct clf__metrics *m)
{
    pthread_mutex_lock(&m->lock);
    uint64_t r = m->reset_ns;
    pthread_mutex_unlock(&m->lock);
    uint64_t now = clf__mono_ns();
    return now > r ? (double)(now - r) * 1e-9 : 0.0;
}

clf_status clf_metrics_device(clf_device_metrics *out, const clf_fleet *fl, size_t device)
{
    clf_status st = check_metrics(fl, "clf_metrics_device");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_device: out is NULL");
    if (device >= fl->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_metrics_device: device %zu of %zu",
                         device, fl->ndev);
    device_metrics(fl->metrics, device, window_s(fl->metrics), out);
    return CLF_SUCCESS;
}

static void fleet_metrics(struct clf__metrics *m, double wall, clf_fleet_metrics *o)
{
    memset(o, 0, sizeof *o);
    o->num_devices = m->ndev;
    o->wall_s = wall;
    for (size_t i = 0; i <= m->ndev; i++) {
        clf_device_metrics d;
        device_metrics(m, i, wall, &d);
        o->kernels += d.kernels;
        o->busy_s += d.busy_s;
        for (int k = 0; k < CLF_NUM_DIRECTIONS; k++)
            add_stats(&o->dir[k], &d.dir[k]);
        for (int p = 0; p < CLF_NUM_PATHS; p++)
            add_stats(&o->path[p], &d.path[p]);
        o->mem_current += d.mem_current;
        o->wait_s += d.wait_s;
        o->idle_s += d.idle_s;
    }
    o->mem_peak = atomic_load(&m->mem_total_peak);
    if (o->mem_peak < o->mem_current)
        o->mem_peak = o->mem_current;
    o->utilization = wall > 0 && m->ndev ? o->busy_s / (wall * (double)m->ndev) : 0.0;
    pthread_mutex_lock(&m->lock);
    o->launches = m->launches - m->launches0;
    memcpy(o->last_kernel, m->last_kernel, sizeof o->last_kernel);
    o->last_strategy = m->last_strategy;
    o->last_num_devices = m->last_ndev;
    o->last_makespan_s = m->last_makespan;
    o->last_imbalance = m->last_imbalance;
    o->last_efficiency = m->last_efficiency;
    pthread_mutex_unlock(&m->lock);
}

clf_status clf_metrics_fleet(clf_fleet_metrics *out, const clf_fleet *fl)
{
    clf_status st = check_metrics(fl, "clf_metrics_fleet");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_fleet: out is NULL");
    fleet_metrics(fl->metrics, window_s(fl->metrics), out);
    return CLF_SUCCESS;
}

clf_status clf_metrics_peer(clf_transfer_stats *out, const clf_fleet *fl, size_t src, size_t dst)
{
    clf_status st = check_metrics(fl, "clf_metrics_peer");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_peer: out is NULL");
    if (src >= fl->ndev || dst >= fl->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_metrics_peer: devices %zu, %zu of %zu",
                         src, dst, fl->ndev);
    clf__devm *d = &fl->metrics->dm[src];
    pthread_mutex_lock(&d->lock);
    stats(out, d->pair_bytes[dst] - d->pair_bytes0[dst], d->pair_count[dst] - d->pair_count0[dst],
          d->pair_s[dst] - d->pair_s0[dst]);
    pthread_mutex_unlock(&d->lock);
    return CLF_SUCCESS;
}

clf_status clf_metrics_reset(clf_fleet *fl)
{
    clf_status st = check_metrics(fl, "clf_metrics_reset");
    if (st != CLF_SUCCESS)
        return st;
    struct clf__metrics *m = fl->metrics;
    uint64_t total = 0;
    for (size_t i = 0; i <= m->ndev; i++) {
        clf__devm *d = &m->dm[i];
        pthread_mutex_lock(&d->lock);
        d->base = d->cur;
        d->mem_peak = d->mem_now;
        total += d->mem_now;
        d->in_last = 0;
        d->last_busy_s = d->last_share = d->last_finish_s = 0;
        if (i < m->ndev) {
            memcpy(d->pair_bytes0, d->pair_bytes, m->ndev * sizeof *d->pair_bytes);
            memcpy(d->pair_count0, d->pair_count, m->ndev * sizeof *d->pair_count);
            memcpy(d->pair_s0, d->pair_s, m->ndev * sizeof *d->pair_s);
        }
        pthread_mutex_unlock(&d->lock);
    }
    atomic_store(&m->mem_total_peak, total);
    pthread_mutex_lock(&m->lock);
    m->reset_ns = clf__mono_ns();
    m->launches0 = m->launches;
    m->last_kernel[0] = 0;
    m->last_strategy = CLF_STRATEGY_DEFAULT;
    m->last_ndev = 0;
    m->last_makespan = m->last_imbalance = m->last_efficiency = 0;
    pthread_mutex_unlock(&m->lock);
    return CLF_SUCCESS;
}

/* ---- profile regions ------------------------------------------------------------------- */

enum { P_T0, P_BUSY, P_XFER, P_WAIT, P_IDLE, P_LAUNCHES, P_KERNELS, P_XFERS, P_BYTES };

/* The fleet's cumulative counters (not reset-relative), in clf_profile.start_ order. */
static void totals(struct clf__metrics *m, double v[12])
{
    memset(v, 0, 12 * sizeof *v);
    v[P_T0] = (double)clf__mono_ns() * 1e-9;
    for (size_t i = 0; i <= m->ndev; i++) {
        clf__devm *d = &m->dm[i];
        pthread_mutex_lock(&d->lock);
        v[P_BUSY] += d->cur.busy_s;
        v[P_WAIT] += d->cur.wait_s;
        v[P_IDLE] += d->cur.idle_s;
        v[P_KERNELS] += (double)d->cur.kernels;
        for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
            v[P_XFER] += d->cur.dir_s[k];
            v[P_XFERS] += (double)d->cur.dir_count[k];
            v[P_BYTES + k] += (double)d->cur.dir_bytes[k];
        }
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_lock(&m->lock);
    v[P_LAUNCHES] = (double)m->launches;
    pthread_mutex_unlock(&m->lock);
}

clf_status clf_profile_begin(clf_fleet *fl, clf_profile *region)
{
    clf_status st = check_metrics(fl, "clf_profile_begin");
    if (st != CLF_SUCCESS)
        return st;
    if (!region)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_profile_begin: region is NULL");
    memset(region, 0, sizeof *region);
    region->fleet_ = fl;
    totals(fl->metrics, region->start_);
    return CLF_SUCCESS;
}

static double nonneg(double x)
{
    return x > 0 ? x : 0.0;
}

clf_status clf_profile_end(clf_fleet *fl, clf_profile *region)
{
    clf_status st = check_metrics(fl, "clf_profile_end");
    if (st != CLF_SUCCESS)
        return st;
    if (!region)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_profile_end: region is NULL");
    if (region->fleet_ != fl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_profile_end: the region was not begun on this fleet");
    double v[12];
    const double *s = region->start_;
    totals(fl->metrics, v);
    region->wall_s = nonneg(v[P_T0] - s[P_T0]);
    region->compute_s = nonneg(v[P_BUSY] - s[P_BUSY]);
    region->transfer_s = nonneg(v[P_XFER] - s[P_XFER]);
    region->wait_s = nonneg(v[P_WAIT] - s[P_WAIT]);
    region->idle_s = nonneg(v[P_IDLE] - s[P_IDLE]);
    region->sync_s = region->wait_s + region->idle_s;
    region->launches = (uint64_t)nonneg(v[P_LAUNCHES] - s[P_LAUNCHES]);
    region->kernels = (uint64_t)nonneg(v[P_KERNELS] - s[P_KERNELS]);
    region->transfers = (uint64_t)nonneg(v[P_XFERS] - s[P_XFERS]);
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++)
        region->bytes[k] = (uint64_t)nonneg(v[P_BYTES + k] - s[P_BYTES + k]);
    return CLF_SUCCESS;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_stats(clf__sb *b, const char *key, const clf_transfer_stats *t)
{
    clf__sb_printf(b,
                   "\"%s\":{\"bytes\":%llu,\"count\":%llu,\"seconds\":%.9f,"
                   "\"bandwidth_bytes_per_s\":%.1f}",
                   key, (unsigned long long)t->bytes, (unsigned long long)t->count, t->seconds,
                   t->bandwidth);
}

static void json_transfers(clf__sb *b, const clf_transfer_stats *dir, const clf_transfer_stats *path)
{
    clf__sb_printf(b, "\"transfers\":{");
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
        json_stats(b, dir_names[k], &dir[k]);
        clf__sb_printf(b, ",");
    }
    clf__sb_printf(b, "\"by_path\":{");
    for (int p = 0; p < CLF_NUM_PATHS; p++) {
        json_stats(b, clf__metrics_path_name((unsigned)p), &path[p]);
        clf__sb_printf(b, p + 1 < CLF_NUM_PATHS ? "," : "");
    }
    clf__sb_printf(b, "}}");
}

/* ,"key":[[...],...]: copies between each pair of devices, row = source, column =
 * destination; their count when count is set, else their bytes. */
static void json_peer_matrix(const clf_fleet *fl, clf__sb *b, const char *key, int count)
{
    size_t n = fl->metrics->ndev;
    clf__sb_printf(b, ",\"%s\":[", key);
    for (size_t s = 0; s < n; s++) {
        clf__sb_printf(b, "%s[", s ? "," : "");
        for (size_t t = 0; t < n; t++) {
            clf_transfer_stats x;
            clf_metrics_peer(&x, fl, s, t);
            clf__sb_printf(b, "%s%llu", t ? "," : "",
                           (unsigned long long)(count ? x.count : x.bytes));
        }
        clf__sb_printf(b, "]");
    }
    clf__sb_printf(b, "]");
}

static void build_json(const clf_fleet *fl, clf__sb *b)
{
    struct clf__metrics *m = fl->metrics;
    double wall = window_s(m);
    clf_fleet_metrics f;
    fleet_metrics(m, wall, &f);
    clf__sb_printf(b, "{\"clfleet_metrics\":1,\"version\":");
    clf__sb_json_string(b, clf_version_string());
    clf__sb_printf(b,
                   ",\"wall_s\":%.6f,\"num_devices\":%zu,\"launches\":%llu,\"kernels\":%llu,"
                   "\"busy_s\":%.9f,\"utilization\":%.6f,\"wait_s\":%.9f,\"idle_s\":%.9f,"
                   "\"memory\":{\"current\":%llu,\"peak\":%llu},",
                   f.wall_s, f.num_devices, (unsigned long long)f.launches,
                   (unsigned long long)f.kernels, f.busy_s, f.utilization, f.wait_s, f.idle_s,
                   (unsigned long long)f.mem_current, (unsigned long long)f.mem_peak);
    json_transfers(b, f.dir, f.path);
    clf__sb_printf(b, ",\"last_launch\":");
    if (f.last_kernel[0] || f.last_num_devices) {
        clf__sb_printf(b, "{\"kernel\":");
        clf__sb_json_string(b, f.last_kernel);
        clf__sb_printf(b, ",\"strategy\":");
        clf__sb_json_string(b, clf_strategy_name(f.last_strategy));
        clf__sb_printf(b,
                       ",\"num_devices\":%zu,\"makespan_s\":%.9f,\"imbalance\":%.6f,"
                       "\"efficiency\":%.6f}",
                       f.last_num_devices, f.last_makespan_s, f.last_imbalance,
                       f.last_efficiency);
    } else {
        clf__sb_printf(b, "null");
    }
    clf__sb_printf(b, ",\"trace\":");
    if (m->trace_path)
        clf__sb_json_string(b, m->trace_path);
    else
        clf__sb_printf(b, "null");
    clf__sb_printf(b, ",\"devices\":[");
    for (size_t i = 0; i < m->ndev; i++) {
        clf_device_metrics d;
        device_metrics(m, i, wall, &d);
        clf__sb_printf(b, "%s{\"device\":%zu,\"name\":", i ? "," : "", i);
        clf__sb_json_string(b, fl->dev[i].info.name);
        clf__sb_printf(b,
                       ",\"kernels\":%llu,\"busy_s\":%.9f,\"utilization\":%.6f,"
                       "\"transfer_count\":%llu,\"transfer_s\":%.9f,"
                       "\"bandwidth_bytes_per_s\":%.1f,",
                       (unsigned long long)d.kernels, d.busy_s, d.utilization,
                       (unsigned long long)d.transfers, d.transfer_s, d.bandwidth);
        json_transfers(b, d.dir, d.path);
        clf__sb_printf(b, ",");
        json_stats(b, "peer_sent", &d.peer_sent);
        clf__sb_printf(b,
                       ",\"memory\":{\"current\":%llu,\"peak\":%llu,\"allocations\":%llu},"
                       "\"wait_s\":%.9f,\"idle_s\":%.9f,\"last_launch\":",
                       (unsigned long long)d.mem_current, (unsigned long long)d.mem_peak,
                       (unsigned long long)d.allocations, d.wait_s, d.idle_s);
        if (d.in_last_launch)
            clf__sb_printf(b, "{\"busy_s\":%.9f,\"share\":%.6f,\"finish_s\":%.9f}",
                           d.last_busy_s, d.last_share, d.last_finish_s);
        else
            clf__sb_printf(b, "null");
        clf__sb_printf(b, "}");
    }
    clf__sb_printf(b, "]");
    json_peer_matrix(fl, b, "peer_bytes", 0);
    json_peer_matrix(fl, b, "peer_count", 1);
    clf__sb_printf(b, "}");
}

clf_status clf_metrics_json(char **out, const clf_fleet *fl)
{
    if (out)
        *out = NULL;
    clf_status st = check_metrics(fl, "clf_metrics_json");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_json: out is NULL");
    clf__sb b = {0};
    build_json(fl, &b);
    if (b.oom) {
        free(b.s);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_metrics_json: out of memory");
    }
    *out = b.s;
    return CLF_SUCCESS;
}

clf_status clf_metrics_write_json(const clf_fleet *fl, FILE *fp)
{
    if (!fp)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_write_json: fp is NULL");
    char *s;
    clf_status st = clf_metrics_json(&s, fl);
    if (st != CLF_SUCCESS)
        return st;
    int bad = fputs(s, fp) == EOF || fputc('\n', fp) == EOF;
    free(s);
    return bad ? clf__fail(CLF_ERROR_IO, "clf_metrics_write_json: write failed") : CLF_SUCCESS;
}

void clf_free(void *p)
{
    free(p);
}

/* ---- the table ------------------------------------------------------------------------- */

#define MB(x) ((double)(x) / 1048576.0)

static void print_row(FILE *fp, const char *dev, const char *name, const clf_device_metrics *d)
{
    fprintf(
        fp,
        "%-5s %-22.22s %8llu %9.4f %6.1f %10.2f %11.2f %9.2f %7llu %8.2f %9.2f %9.2f %8.4f %8.4f\n",
        dev, name, (unsigned long long)d->kernels, d->busy_s, 100.0 * d->utilization,
        MB(d->dir[CLF_DIRECTION_TO_DEVICE].bytes), MB(d->dir[CLF_DIRECTION_FROM_DEVICE].bytes),
        MB(d->dir[CLF_DIRECTION_PEER].bytes), (unsigned long long)d->transfers, d->bandwidth * 1e-9,
        MB(d->mem_current), MB(d->mem_peak), d->wait_s, d->idle_s);
}

clf_status clf_metrics_print(const clf_fleet *fl, FILE *fp)
{
    clf_status st = check_metrics(fl, "clf_metrics_print");
    if (st != CLF_SUCCESS)
        return st;
    if (!fp)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_print: fp is NULL");
    struct clf__metrics *m = fl->metrics;
    double wall = window_s(m);
    clf_fleet_metrics f;
    fleet_metrics(m, wall, &f);
    fprintf(fp, "clfleet metrics: %zu device(s), %.3f s window, %llu launch(es), "
                "utilization %.1f%%\n",
            f.num_devices, f.wall_s, (unsigned long long)f.launches, 100.0 * f.utilization);
    fprintf(fp, "%-5s %-22s %8s %9s %6s %10s %11s %9s %7s %8s %9s %9s %8s %8s\n", "dev", "name",
            "kernels", "busy s", "util%", "to dev MB", "from dev MB", "peer MB", "xfers",
            "GB/s", "mem MB", "peak MB", "wait s", "idle s");
    for (size_t i = 0; i < m->ndev; i++) {
        clf_device_metrics d;
        char id[24];
        device_metrics(m, i, wall, &d);
        snprintf(id, sizeof id, "%zu", i);
        print_row(fp, id, fl->dev[i].info.name, &d);
    }
    clf_device_metrics t;
    memset(&t, 0, sizeof t);
    t.kernels = f.kernels;
    t.busy_s = f.busy_s;
    t.utilization = f.utilization;
    double ts = 0;
    uint64_t tb = 0;
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
        t.dir[k] = f.dir[k];
        t.transfers += f.dir[k].count;
        ts += f.dir[k].seconds;
        tb += f.dir[k].bytes;
    }
    t.bandwidth = ts > 0 ? (double)tb / ts : 0;
    t.mem_current = f.mem_current;
    t.mem_peak = f.mem_peak;
    t.wait_s = f.wait_s;
    t.idle_s = f.idle_s;
    print_row(fp, "all", "", &t);
    for (int p = 0; p < CLF_NUM_PATHS; p++)
        if (f.path[p].count)
            fprintf(fp, "peer copies by %s: %llu, %.2f MB, %.2f GB/s\n",
                    clf__metrics_path_name((unsigned)p), (unsigned long long)f.path[p].count,
                    MB(f.path[p].bytes), f.path[p].bandwidth * 1e-9);
    if (f.last_num_devices)
        fprintf(fp,
                "last launch '%s' (%s) on %zu device(s): makespan %.4f s, imbalance %.1f%%, "
                "efficiency %.1f%%\n",
                f.last_kernel, clf_strategy_name(f.last_strategy), f.last_num_devices,
                f.last_makespan_s, 100.0 * f.last_imbalance, 100.0 * f.last_efficiency);
    if (m->trace_path)
        fprintf(fp, "trace: %s\n", m->trace_path);
    for (size_t i = 0; i < m->ndev; i++) {
        char why[256];
        if (clf_device_failure(why, sizeof why, fl, i) == CLF_SUCCESS && why[0])
            fprintf(fp, "device %zu failed, left out of launches until clf_device_readmit(): %s\n",
                    i, why);
    }
    return ferror(fp) ? clf__fail(CLF_ERROR_IO, "clf_metrics_print: write failed") : CLF_SUCCESS;
}

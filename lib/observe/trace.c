/*
 * Timelines: every kernel, copy and wait, written as a Chrome trace-event
 * file (the "traceEvents" array of "X" complete events plus "M" metadata
 * naming each track) that Perfetto and chrome://tracing open. One process per
 * device ("N: name"), one thread per queue ("compute", "transfer") and one
 * for synchronisation ("sync": host waits, launch-end idling); process 0 is
 * the host (launches, waits not tied to one device).
 *
 * Times come from the commands' profiling events, which count in device
 * time. Each device's clock is tied to the host's monotonic clock once, when
 * the fleet is created: by clGetDeviceAndHostTimer() where the platform has a
 * host timer, else by the QUEUED timestamp of a marker enqueued between two
 * host clock samples. Timestamps are kept in integer nanoseconds and written
 * as microseconds with three decimals, so that commands that follow each
 * other on an in-order queue never appear to overlap.
 *
 * Events are appended under the device's lock (in practice only its worker
 * thread and the completion callbacks of its own commands take it), and the
 * file is rewritten whole at each flush and when the fleet is destroyed.
 */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int clf__trace_on(const clf_fleet *fl)
{
    return fl && fl->metrics && fl->metrics->trace_path;
}

/* ---- clock alignment ------------------------------------------------------------------- */

/* Device ns -> host ns from a marker's QUEUED time between two host samples (best of 5). */
static int calib_marker(struct clf__device *d, int64_t *off)
{
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 5; k++) {
        cl_event ev = NULL;
        uint64_t a = clf__mono_ns();
        cl_int err = clEnqueueMarkerWithWaitList(d->compute, 0, NULL, &ev);
        uint64_t b = clf__mono_ns();
        if (err != CL_SUCCESS)
            return best != UINT64_MAX;
        cl_ulong q = 0;
        err = clWaitForEvents(1, &ev);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL);
        clReleaseEvent(ev);
        if (err != CL_SUCCESS || q == 0)
            return best != UINT64_MAX;
        if (b - a < best) {
            best = b - a;
            *off = (int64_t)(a + (b - a) / 2) - (int64_t)q;
        }
    }
    return 1;
}

/* The same from the device's own timer pair, where the platform has a host timer. */
static int calib_timer(struct clf__device *d, int64_t *off)
{
    cl_ulong res = 0;
    if (d->info.cl_major < 2 || (d->info.cl_major == 2 && d->info.cl_minor < 1) ||
        clGetPlatformInfo(d->platform, CL_PLATFORM_HOST_TIMER_RESOLUTION, sizeof res, &res,
                          NULL) != CL_SUCCESS ||
        res == 0)
        return 0;
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 5; k++) {
        cl_ulong dev = 0, host = 0, host2 = 0;
        if (clGetDeviceAndHostTimer(d->id, &dev, &host) != CL_SUCCESS)
            return 0;
        /* The platform's host timer against ours: sampled between two of ours. */
        uint64_t a = clf__mono_ns();
        cl_int err = clGetHostTimer(d->id, &host2);
        uint64_t b = clf__mono_ns();
        if (err != CL_SUCCESS)
            return 0;
        if (b - a < best) {
            best = b - a;
            *off = ((int64_t)host - (int64_t)dev) +
                   ((int64_t)(a + (b - a) / 2) - (int64_t)host2);
        }
    }
    return 1;
}

void clf__trace_calibrate(clf_fleet *fl)
{
    struct clf__metrics *m = fl->metrics;
    for (size_t i = 0; i < fl->ndev; i++) {
        clf__devm *dm = &m->dm[i];
        int64_t tm = 0, mk = 0;
        int has_t = calib_timer(&fl->dev[i], &tm), has_m = calib_marker(&fl->dev[i], &mk);
        /* Prefer the timer pair (no enqueue latency) unless it disagrees with what the
         * profiling clock itself says: some drivers' device timers are another clock. */
        if (has_t && (!has_m || llabs(tm - mk) < 1000000)) {
            dm->offset_ns = tm;
            dm->clock = "device-and-host-timer";
        } else if (has_m) {
            dm->offset_ns = mk;
            dm->clock = "marker-queued";
        } else {
            dm->offset_ns = 0; /* assume the device counts on the host's clock */
            dm->clock = "none";
        }
    }
}

/* ---- recording ------------------------------------------------------------------------- */

static unsigned default_track(unsigned kind)
{
    switch (kind) {
    case CLF__REC_KERNEL:
        return CLF__TRACK_COMPUTE;
    case CLF__REC_WAIT:
    case CLF__REC_IDLE:
        return CLF__TRACK_SYNC;
    case CLF__REC_LAUNCH:
        return 1;
    default:
        return CLF__TRACK_TRANSFER;
    }
}

static void default_name(const clf__rec *r, char *buf, size_t n)
{
    switch (r->kind) {
    case CLF__REC_KERNEL:
        snprintf(buf, n, "kernel");
        break;
    case CLF__REC_TO_DEVICE:
        snprintf(buf, n, "host to device");
        break;
    case CLF__REC_FROM_DEVICE:
        snprintf(buf, n, "device to host");
        break;
    case CLF__REC_PEER: {
        snprintf(buf, n, "%s copy", clf__metrics_path_name((unsigned)r->path));
        break;
    }
    case CLF__REC_FILL:
        snprintf(buf, n, "fill");
        break;
    case CLF__REC_WAIT:
        snprintf(buf, n, "wait");
        break;
    case CLF__REC_IDLE:
        snprintf(buf, n, "idle (waiting for the slowest device)");
        break;
    default:
        snprintf(buf, n, "launch");
        break;
    }
}

void clf__trace_add(struct clf__metrics *m, size_t dev, const clf__rec *r, int64_t ts_ns,
                    int64_t dur_ns)
{
    clf__devm *d = &m->dm[dev];
    if (d->nev == d->cap) {
        if (d->cap >= CLF__TRACE_MAX_EVENTS) {
            d->dropped++;
            return;
        }
        size_t cap = d->cap ? 2 * d->cap : 1024;
        clf__tev *ev = realloc(d->ev, cap * sizeof *ev);
        if (!ev) {
            d->dropped++;
            return;
        }
        d->ev = ev;
        d->cap = cap;
    }
    clf__tev *e = &d->ev[d->nev++];
    e->ts = ts_ns;
    e->dur = dur_ns;
    e->bytes = r->bytes;
    e->a0 = r->a0;
    e->a1 = r->a1;
    e->kind = (uint16_t)r->kind;
    e->track = (uint16_t)(r->track ? r->track : default_track(r->kind));
    e->src = (int16_t)(r->kind == CLF__REC_PEER ? (int)r->src : -1);
    e->dst = (int16_t)(r->kind == CLF__REC_PEER ? (int)r->dst : -1);
    e->path = (uint8_t)r->path;
    if (r->kind == CLF__REC_LAUNCH) {
        /* The fields a launch does not use keep what explains its slice. */
        e->path = (uint8_t)r->strategy;
        double eff = r->efficiency > 0 ? r->efficiency : 0;
        e->bytes = (uint64_t)llround((eff < 1e6 ? eff : 1e6) * 1e6);
    }
    if (r->name)
        snprintf(e->name, sizeof e->name, "%s", r->name);
    else
        default_name(r, e->name, sizeof e->name);
}

/* ---- writing --------------------------------------------------------------------------- */

static const char *const kind_cat[] = {"kernel", "transfer", "transfer", "peer",
                                       "fill",   "wait",     "idle",     "launch"};

/* ns as microseconds with three decimals, exactly. */
static void put_us(clf__sb *b, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
    clf__sb_printf(b, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000),
                   (unsigned long long)(a % 1000));
}

static void put_meta(clf__sb *b, int *first, int pid, int tid, const char *what,
                     const char *name, int sort)
{
    clf__sb_printf(b, "%s\n{\"ph\":\"M\",\"pid\":%d,", *first ? "" : ",", pid);
    *first = 0;
    if (tid >= 0)
        clf__sb_printf(b, "\"tid\":%d,", tid);
    clf__sb_printf(b, "\"name\":\"%s_name\",\"args\":{\"name\":", what);
    clf__sb_json_string(b, name);
    clf__sb_printf(b, "}},\n{\"ph\":\"M\",\"pid\":%d,", pid);
    if (tid >= 0)
        clf__sb_printf(b, "\"tid\":%d,", tid);
    clf__sb_printf(b, "\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%d}}", what, sort);
}

static void put_event(clf__sb *b, int pid, const clf__tev *e)
{
    unsigned k = e->kind < CLF__ARRAY_LEN(kind_cat) ? e->kind : CLF__REC_LAUNCH;
    clf__sb_printf(b, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":", pid,
                   (unsigned)e->track);
    put_us(b, e->ts);
    clf__sb_printf(b, ",\"dur\":");
    put_us(b, e->dur);
    clf__sb_printf(b, ",\"name\":");
    clf__sb_json_string(b, e->name);
    clf__sb_printf(b, ",\"cat\":\"%s\",\"args\":{", kind_cat[k]);
    switch (k) {
    case CLF__REC_KERNEL:
        clf__sb_printf(b, "\"offset\":%lld,\"units\":%lld", (long long)e->a0, (long long)e->a1);
        break;
    case CLF__REC_TO_DEVICE:
    case CLF__REC_FROM_DEVICE:
    case CLF__REC_FILL:
        clf__sb_printf(b, "\"bytes\":%llu", (unsigned long long)e->bytes);
        if (e->a1)
            clf__sb_printf(b, ",\"offset\":%lld,\"units\":%lld", (long long)e->a0,
                           (long long)e->a1);
        break;
    case CLF__REC_PEER: {
        clf__sb_printf(b, "\"bytes\":%llu,\"src\":%d,\"dst\":%d,\"path\":\"%s\"",
                       (unsigned long long)e->bytes, e->src, e->dst,
                       clf__metrics_path_name(e->path));
        break;
    }
    case CLF__REC_LAUNCH:
        clf__sb_printf(b, "\"units\":%lld,\"devices\":%lld", (long long)e->a0,
                       (long long)e->a1);
        if (clf_strategy_name((clf_strategy)e->path))
            clf__sb_printf(b, ",\"strategy\":\"%s\"", clf_strategy_name((clf_strategy)e->path));
        clf__sb_printf(b, ",\"efficiency\":%.4f", (double)e->bytes / 1e6);
        break;
    default:
        break;
    }
    clf__sb_printf(b, "}}");
}

/* The trace goes out through b in pieces of about this size, so that a long trace never
 * needs a second copy of itself in memory. */
#define TRACE_CHUNK ((size_t)1 << 16)

/* Write b's text to f (named path in the message) and empty b. */
static clf_status put_out(clf__sb *b, FILE *f, const char *path)
{
    if (b->oom)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "trace: out of memory");
    if (clf__sb_flush(b, f) != 0)
        return clf__fail(CLF_ERROR_IO, "trace '%s': %s", path, strerror(errno));
    return CLF_SUCCESS;
}

static clf_status write_file(clf_fleet *fl, FILE *f, const char *path)
{
    struct clf__metrics *m = fl->metrics;
    static const char *const tracks[] = {NULL, "compute", "transfer", "sync", "peer (host-timed)"};
    int first = 1;
    clf__sb b = {0};
    clf_status st = CLF_SUCCESS;
    clf__sb_printf(&b, "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":");
    char producer[64];
    snprintf(producer, sizeof producer, "clfleet %s", clf_version_string());
    clf__sb_json_string(&b, producer);
    clf__sb_printf(&b, ",\"time_base\":\"host CLOCK_MONOTONIC, microseconds since the fleet "
                       "was created\",\"devices\":[");
    for (size_t i = 0; i < m->ndev; i++) {
        clf__devm *d = &m->dm[i];
        pthread_mutex_lock(&d->lock);
        clf__sb_printf(&b, "%s{\"device\":%zu,\"clock\":\"%s\",\"offset_ns\":%lld,"
                           "\"dropped\":%llu}",
                       i ? "," : "", i, d->clock, (long long)d->offset_ns,
                       (unsigned long long)d->dropped);
        pthread_mutex_unlock(&d->lock);
    }
    clf__sb_printf(&b, "]},\n\"traceEvents\":[");
    put_meta(&b, &first, 0, -1, "process", "clfleet host", 0);
    put_meta(&b, &first, 0, 1, "thread", "launches", 1);
    put_meta(&b, &first, 0, CLF__TRACK_SYNC, "thread", "sync", CLF__TRACK_SYNC);
    for (size_t i = 0; i < m->ndev; i++) {
        char name[300];
        snprintf(name, sizeof name, "%zu: %s", i, fl->dev[i].info.name);
        put_meta(&b, &first, (int)i + 1, -1, "process", name, (int)i + 1);
        for (int t = 1; t < (int)CLF__ARRAY_LEN(tracks); t++)
            put_meta(&b, &first, (int)i + 1, t, "thread", tracks[t], t);
    }
    CLF__TRY(st, put_out(&b, f, path));
    for (size_t i = 0; i <= m->ndev; i++) {
        clf__devm *d = &m->dm[i];
        /* A copy, so that the device's worker is not held up by the file system. */
        pthread_mutex_lock(&d->lock);
        size_t n = d->nev;
        clf__tev *ev = n ? malloc(n * sizeof *ev) : NULL;
        if (ev)
            memcpy(ev, d->ev, n * sizeof *ev);
        pthread_mutex_unlock(&d->lock);
        if (n && !ev) {
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "trace: out of memory");
            goto out;
        }
        int pid = i == m->ndev ? 0 : (int)i + 1;
        for (size_t k = 0; k < n && st == CLF_SUCCESS; k++) {
            put_event(&b, pid, &ev[k]);
            if (b.len >= TRACE_CHUNK || b.oom)
                st = put_out(&b, f, path);
        }
        free(ev);
        if (st != CLF_SUCCESS)
            goto out;
    }
    clf__sb_printf(&b, "\n]}\n");
    st = put_out(&b, f, path);
out:
    free(b.s);
    return st;
}

clf_status clf__trace_write(clf_fleet *fl)
{
    struct clf__metrics *m = fl->metrics;
    size_t n = strlen(m->trace_path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "trace: out of memory");
    /* Written beside the target and renamed: a reader never sees half a file. */
    snprintf(tmp, n, "%s.tmp.%ld", m->trace_path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        clf_status st = clf__fail(CLF_ERROR_IO, "trace '%s': %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    clf_status st = write_file(fl, f, tmp);
    /* The last of the buffer goes out in fclose(): a full disk may show only there. */
    if (fclose(f) != 0 && st == CLF_SUCCESS)
        st = clf__fail(CLF_ERROR_IO, "trace '%s': %s", tmp, strerror(errno));
    if (st == CLF_SUCCESS && rename(tmp, m->trace_path) != 0)
        st = clf__fail(CLF_ERROR_IO, "trace '%s': %s", m->trace_path, strerror(errno));
    if (st != CLF_SUCCESS)
        remove(tmp);
    free(tmp);
    return st;
}

clf_status clf_trace_flush(clf_fleet *fl)
{
    if (!fl)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_trace_flush: fleet is NULL");
    if (!clf__trace_on(fl))
        return CLF_SUCCESS;
    /* Commands that completed a moment ago may still have their callbacks to run; give
     * them a moment, but never wait for commands that have not completed. */
    struct clf__metrics *m = fl->metrics;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_mutex_lock(&m->lock);
    while (m->pending && pthread_cond_timedwait(&m->drained, &m->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&m->lock);
    return clf__trace_write(fl);
}

const char *clf_trace_path(const clf_fleet *fl)
{
    return clf__trace_on(fl) ? fl->metrics->trace_path : NULL;
}

/*
 * Pipelined host staging: the path that always works.
 *
 * Where one side shares memory with the host (CL_DEVICE_HOST_UNIFIED_MEMORY), mapping its
 * buffer costs nothing, so the copy is one command: map the source and write the
 * destination from the mapped pointer (or map the destination and read into it). That is
 * one copy of the bytes, where a bounce through host memory makes two.
 *
 * Otherwise the bytes go through pinned host slots (CL_MEM_ALLOC_HOST_PTR buffers of the
 * source's context, mapped once and kept for later copies) in chunks: the read of chunk
 * k + 1 on the source's copy queue overlaps the write of chunk k on the destination's.
 * Completions come back through event callbacks that only set a flag and signal; the
 * thread that runs the copy does all the enqueueing, so the two queues are kept fed without
 * any call into OpenCL from a callback.
 */
#include "transfer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- staging sets --------------------------------------------------------------------- */

/* Staging's commands: counted by the caller as one peer copy. */
static clf__cmd stage_cmd(clf_fleet *fl, size_t dev, cl_command_queue q, const char *what,
                          unsigned flags)
{
    clf__cmd c = CLF__CMD(fl, dev, q, what);
    c.flags = flags | CLF__CMD_NO_METRICS | CLF__CMD_NO_FAULT; /* clf_copy() checked */
    return c;
}

static void stager_free(clf_fleet *fl, clf__stager *s)
{
    struct clf__device *d = &fl->dev[s->device];
    for (size_t i = 0; i < CLF__XFER_SLOTS; i++) {
        clf__cmd c = stage_cmd(fl, s->device, d->copyq, "staging", CLF__CMD_NO_FLUSH);
        if (s->ptr[i])
            clf__cmd_unmap(&c, s->mem[i], s->ptr[i]);
        if (s->mem[i])
            clReleaseMemObject(s->mem[i]); /* freed once the unmap has run */
    }
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static clf_status stager_new(clf_fleet *fl, size_t dev, clf__stager **out)
{
    struct clf__device *d = &fl->dev[dev];
    clf__stager *s = calloc(1, sizeof *s);
    if (!s)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "staging: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->device = dev;
    s->chunk = fl->xfer->chunk;
    for (size_t i = 0; i < CLF__XFER_SLOTS; i++) {
        s->rdone[i].s = s->wdone[i].s = s;
        clf__cmd c = stage_cmd(fl, dev, d->copyq, "staging", CLF__CMD_BLOCKING);
        clf_status st = clf__cmd_buffer(&c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, s->chunk,
                                        NULL, &s->mem[i]);
        if (st == CLF_SUCCESS)
            st = clf__cmd_map(&c, s->mem[i], CL_MAP_READ | CL_MAP_WRITE, 0, s->chunk,
                              &s->ptr[i]);
        if (st != CLF_SUCCESS) {
            char keep[512];
            snprintf(keep, sizeof keep, "%s", clf_last_error());
            stager_free(fl, s);
            return clf__fail(st, "%s", keep);
        }
    }
    *out = s;
    return CLF_SUCCESS;
}

/* An idle staging set in device dev's context, or a new one. */
static clf_status stager_get(clf_fleet *fl, size_t dev, clf__stager **out)
{
    struct clf__xfer *x = fl->xfer;
    pthread_mutex_lock(&x->lock);
    clf__stager *s = x->dev[dev].stagers;
    if (s) {
        x->dev[dev].stagers = s->next;
        x->dev[dev].nstagers--;
    }
    pthread_mutex_unlock(&x->lock);
    if (s) {
        *out = s;
        return CLF_SUCCESS;
    }
    return stager_new(fl, dev, out);
}

static void stager_put(clf_fleet *fl, clf__stager *s)
{
    struct clf__xfer *x = fl->xfer;
    clf__xdev *xd = &x->dev[s->device];
    pthread_mutex_lock(&x->lock);
    if (xd->nstagers < CLF__XFER_KEEP) {
        s->next = xd->stagers;
        xd->stagers = s;
        xd->nstagers++;
        s = NULL;
    }
    pthread_mutex_unlock(&x->lock);
    if (s)
        stager_free(fl, s);
}

void clf__staging_fini(clf_fleet *fl)
{
    struct clf__xfer *x = fl->xfer;
    if (x->quarantine) {
        for (size_t i = 0; i < fl->ndev; i++)
            clFinish(fl->dev[i].copyq);
        while (x->quarantine) {
            clf__stager *s = x->quarantine;
            x->quarantine = s->next;
            stager_free(fl, s);
        }
    }
    for (size_t i = 0; i < fl->ndev; i++) {
        clf__stager *s = fl->xfer->dev[i].stagers;
        while (s) {
            clf__stager *next = s->next;
            stager_free(fl, s);
            s = next;
        }
        fl->xfer->dev[i].stagers = NULL;
        fl->xfer->dev[i].nstagers = 0;
    }
}

/* ---- one copy through a mapped buffer --------------------------------------------------- */

/*
 * Map one side's region and have the other side's queue read or write it from the mapped
 * pointer. from_src: map the source (CL_MAP_READ) and write the destination; else map the
 * destination (CL_MAP_WRITE_INVALIDATE_REGION) and read the source into it.
 */
static clf_status via_map(clf__copy *c, int from_src)
{
    struct clf__device *m = clf__xdevice(c, !from_src), *o = clf__xdevice(c, from_src);
    cl_mem mapped = from_src ? c->src : c->dst, other = from_src ? c->dst : c->src;
    size_t moff = from_src ? c->soff : c->doff, ooff = from_src ? c->doff : c->soff;
    size_t mdev = from_src ? c->sdev : c->ddev, odev = from_src ? c->ddev : c->sdev;
    clf__cmd mc = stage_cmd(c->fleet, mdev, m->copyq, "copy", CLF__CMD_BLOCKING);
    void *p;
    clf_status st = clf__cmd_map(&mc, mapped,
                                 from_src ? CL_MAP_READ : CL_MAP_WRITE_INVALIDATE_REGION, moff,
                                 c->size, &p);
    if (st != CLF_SUCCESS)
        return st;
    clf__cmd oc = stage_cmd(c->fleet, odev, o->copyq, "copy", CLF__CMD_BLOCKING);
    st = from_src ? clf__cmd_write(&oc, other, ooff, c->size, p)
                  : clf__cmd_read(&oc, other, ooff, c->size, p);
    cl_event unmap = NULL;
    clf__cmd uc = stage_cmd(c->fleet, mdev, m->copyq, "copy", CLF__CMD_NO_FLUSH);
    uc.ev = &unmap;
    clf_status ust = clf__cmd_unmap(&uc, mapped, p);
    if (ust == CLF_SUCCESS) {
        clf_event e = {.ev = unmap};
        ust = clf__event_wait_host(&e);
        clReleaseEvent(unmap);
    }
    if (st == CLF_SUCCESS)
        st = ust;
    return st;
}

/* ---- the pipeline ----------------------------------------------------------------------- */

static void CL_CALLBACK slot_done(cl_event ev, cl_int status, void *user)
{
    clf__stage_flag *f = user;
    clf__stager *s = f->s;
    /* The event's own status: PoCL passes CL_COMPLETE for an event that had failed before
     * the callback was registered. */
    cl_int own = CL_COMPLETE;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof own, &own, NULL) ==
            CL_SUCCESS &&
        own < 0)
        status = own;
    pthread_mutex_lock(&s->lock);
    if (f->done) { /* claimed by wait_or_poll() */
        pthread_mutex_unlock(&s->lock);
        return;
    }
    f->done = 1;
    if (status < 0 && s->err == CL_SUCCESS)
        s->err = status;
    s->fired++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Have slot_done() called when ev completes; without a callback, wait for it here. */
static void watch(cl_event ev, clf__stage_flag *f)
{
    if (clSetEventCallback(ev, CL_COMPLETE, slot_done, f) == CL_SUCCESS)
        return;
    clWaitForEvents(1, &ev);
    slot_done(ev, clf__cl_event_status(ev), f);
}

/*
 * Wait for a callback; every 20 ms, look at the commands still pending, since a driver may
 * never call back for a command that failed (PoCL 3). A failure found that way is claimed
 * here, and the set is marked tainted: a late callback could still touch it, so it is
 * kept aside until the fleet goes, never reused.
 */
static void wait_or_poll(clf__stager *s, const cl_event *rev, const cl_event *wev)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20L * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
        return;
    for (size_t i = 0; i < 2 * CLF__XFER_SLOTS; i++) {
        cl_event ev = i < CLF__XFER_SLOTS ? rev[i] : wev[i - CLF__XFER_SLOTS];
        clf__stage_flag *f = i < CLF__XFER_SLOTS ? &s->rdone[i] : &s->wdone[i - CLF__XFER_SLOTS];
        cl_int st = CL_COMPLETE;
        if (!ev || f->done ||
            clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) !=
                CL_SUCCESS ||
            st >= CL_COMPLETE)
            continue;
        f->done = 1;
        s->fired++;
        s->tainted = 1;
        if (s->err == CL_SUCCESS)
            s->err = st;
    }
}

static clf_status pipeline(clf__copy *c)
{
    clf_fleet *fl = c->fleet;
    struct clf__device *A = clf__xdevice(c, 0), *B = clf__xdevice(c, 1);
    clf__stager *s = NULL;
    clf_status st = stager_get(fl, c->sdev, &s);
    if (st != CLF_SUCCESS)
        return st;
    const size_t S = CLF__XFER_SLOTS, chunk = s->chunk, n = (c->size + chunk - 1) / chunk;
    cl_event rev[CLF__XFER_SLOTS] = {0}, wev[CLF__XFER_SLOTS] = {0};
    size_t kr = 0, kw = 0; /* next chunk to read, to write */

    pthread_mutex_lock(&s->lock);
    s->err = CL_SUCCESS;
    s->issued = s->fired = 0;
    while (kw < n && s->err == CL_SUCCESS) {
        size_t k, slot;
        int write;
        if (kr > kw && s->rdone[kw % S].done) {
            k = kw, write = 1; /* chunk kw is in its slot: write it out */
        } else if (kr < n && (kr < S || (kw > kr - S && s->wdone[kr % S].done))) {
            k = kr, write = 0; /* a slot is free: read the next chunk into it */
        } else {
            wait_or_poll(s, rev, wev);
            continue;
        }
        slot = k % S;
        clf__stage_flag *f = write ? &s->wdone[slot] : &s->rdone[slot];
        f->done = 0;
        s->issued++;
        pthread_mutex_unlock(&s->lock);

        size_t off = k * chunk, len = c->size - off < chunk ? c->size - off : chunk;
        cl_event *ev = write ? &wev[slot] : &rev[slot];
        cl_event *prev = write ? &rev[slot] : &wev[slot];
        if (*prev) /* complete: its flag is set */
            clReleaseEvent(*prev), *prev = NULL;
        if (*ev)
            clReleaseEvent(*ev), *ev = NULL;
        /* Flushed: the other side waits for it. */
        clf__cmd sc = write ? stage_cmd(fl, c->ddev, B->copyq, "staging", 0)
                            : stage_cmd(fl, c->sdev, A->copyq, "staging", 0);
        sc.ev = ev;
        clf_status est = write ? clf__cmd_write(&sc, c->dst, c->doff + off, len, s->ptr[slot])
                               : clf__cmd_read(&sc, c->src, c->soff + off, len, s->ptr[slot]);
        if (est == CLF_SUCCESS)
            watch(*ev, f);
        pthread_mutex_lock(&s->lock);
        if (est != CLF_SUCCESS) {
            s->issued--;
            *ev = NULL;
            st = est;
            break;
        }
        if (write)
            kw++;
        else
            kr++;
    }
    /* Every callback must have run before the set is used again. */
    while (s->fired < s->issued)
        wait_or_poll(s, rev, wev);
    cl_int cerr = s->err;
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < S; i++) {
        if (rev[i])
            clReleaseEvent(rev[i]);
        if (wev[i])
            clReleaseEvent(wev[i]);
    }
    if (st == CLF_SUCCESS && cerr != CL_SUCCESS)
        st = clf__cl_fail(cerr, "staged copy (command status)", NULL);
    if (s->tainted) {
        struct clf__xfer *x = fl->xfer;
        pthread_mutex_lock(&x->lock);
        s->next = x->quarantine;
        x->quarantine = s;
        pthread_mutex_unlock(&x->lock);
    } else {
        stager_put(fl, s);
    }
    return st;
}

/* A copy of one chunk at most: there is nothing to overlap, so two blocking commands
 * through one slot (two round trips to the devices, against three for a map). */
static clf_status one_slot(clf__copy *c)
{
    struct clf__device *A = clf__xdevice(c, 0), *B = clf__xdevice(c, 1);
    clf__stager *s = NULL;
    clf_status st = stager_get(c->fleet, c->sdev, &s);
    if (st != CLF_SUCCESS)
        return st;
    clf__cmd rc = stage_cmd(c->fleet, c->sdev, A->copyq, "staging", CLF__CMD_BLOCKING);
    st = clf__cmd_read(&rc, c->src, c->soff, c->size, s->ptr[0]);
    if (st == CLF_SUCCESS) {
        clf__cmd wc = stage_cmd(c->fleet, c->ddev, B->copyq, "staging", CLF__CMD_BLOCKING);
        st = clf__cmd_write(&wc, c->dst, c->doff, c->size, s->ptr[0]);
    }
    stager_put(c->fleet, s);
    return st;
}

static clf_status staged_run(clf__copy *c)
{
    struct clf__xfer *x = c->fleet->xfer;
    int pinned_only = x->staging == CLF__STAGING_PIPELINE;
    /* Mapping costs a third command: up to a few MiB the second copy of the bytes (into a
     * slot that stays in cache) is cheaper than the round trip it saves. On PoCL the two
     * meet at about 2 MiB. */
    if (c->src != c->dst && !pinned_only && c->size > CLF__XFER_MAP_MIN) {
        /* A buffer mapped for reading must not be written by a command (nor read while
         * mapped for writing), so a copy inside one buffer always goes through slots. */
        if (clf__xdevice(c, 0)->info.host_unified)
            return via_map(c, 1);
        if (clf__xdevice(c, 1)->info.host_unified)
            return via_map(c, 0);
    }
    if (c->size <= x->chunk)
        return one_slot(c);
    return pipeline(c);
}

const clf__path_ops clf__path_staged = {"staged", 0, NULL, staged_run};

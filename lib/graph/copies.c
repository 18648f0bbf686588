/*
 * Graphs: a buffer's copies on the devices during a run. Per buffer and device the graph's
 * copy (a replica, made on first use and kept across runs; the home device's is the
 * caller's buffer), whether it is current and after which event; a copy made current by
 * clf_copy_async() from a device that holds a current one; room made on a device before its
 * copies are allocated (evictions within the device's budget, the victims chosen by mem.c,
 * a buffer's only current copy written back home first); the record of a node's write (a
 * new version, the other copies no longer current); and the events of the copies, kept to
 * be profiled and counted at the run's end (report.c).
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-device state of buffer data d, made on first use (rep[home] is the caller's). */
clf_status clf__graph_ensure_reps(clf_graph *g, clf__gdata *d)
{
    if (d->rep)
        return CLF_SUCCESS;
    d->rep = calloc(g->ndev, sizeof *d->rep);
    d->valid = calloc(g->ndev, 1);
    d->vev = calloc(g->ndev, sizeof *d->vev);
    d->wev = calloc(g->ndev, sizeof *d->wev);
    d->ver = malloc(g->ndev * sizeof *d->ver);
    if (!d->rep || !d->valid || !d->vev || !d->wev || !d->ver) {
        free(d->rep);
        free(d->valid);
        free(d->vev);
        free(d->wev);
        free(d->ver);
        d->rep = NULL;
        d->valid = NULL;
        d->vev = NULL;
        d->wev = NULL;
        d->ver = NULL;
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    }
    for (size_t k = 0; k < g->ndev; k++)
        d->ver[k] = CLF__GVER_NONE;
    d->rep[d->buf->device] = d->buf;
    d->valid[d->buf->device] = 1;
    d->ver[d->buf->device] = d->cur;
    return CLF_SUCCESS;
}


/* The graph's copy of buffer data d on device dev, made on first use (room for it was
 * made first, clf__graph_make_room()). */
clf_status clf__graph_replica(clf_graph *g, clf__gdata *d, size_t dev, clf_buffer **out)
{
    if (!d->rep[dev]) {
        clf_status st = clf_buffer_create(&d->rep[dev], g->fleet, dev, d->buf->size, 0);
        if (st)
            return clf__prefix_error(st, "a copy of a %zu-byte buffer on device %zu: ",
                                     d->buf->size, dev);
        clf__graph_mem_add(g, dev, d->buf->size);
    }
    *out = d->rep[dev];
    return CLF_SUCCESS;
}

/* Keep e (the caller's reference) for the run's end; *kept: a second reference, or NULL. */
clf_status clf__graph_keep(clf_graph *g, clf_event *e, clf_event **kept)
{
    if (kept) {
        clf__event_hold(e);
        *kept = e;
    }
    clf_status st = clf__evlist_push(&g->evs, e);
    if (st && kept) {
        clf_event_release(*kept);
        *kept = NULL;
    }
    return st;
}

/* Make data d current on device dev: a copy from a current device (its own first, where the
 * caller's buffer lives, else the lowest index) unless it is current there already. */
clf_status clf__graph_make_current(clf_graph *g, clf__gdata *d, size_t dev)
{
    if (d->valid[dev])
        return CLF_SUCCESS;
    size_t s = d->buf->device;
    if (!d->valid[s])
        for (s = 0; s < g->ndev && !d->valid[s]; s++)
            ;
    if (s == g->ndev)
        return clf__fail(g->dead[d->buf->device] ? CLF_ERROR_DEVICE_FAILED
                                                 : CLF_ERROR_INVALID_ARGUMENT,
                         "graph: buffer data %zu (%zu bytes) has no current copy%s",
                         (size_t)(d - g->data), d->buf->size,
                         g->dead[d->buf->device] ? ": the caller's buffer is on a device that "
                                                   "failed"
                                                 : "");
    clf_buffer *dst, *src = d->rep[s];
    clf_status st = clf__graph_replica(g, d, dev, &dst);
    if (st)
        return st;
    /* After what made the source current, and after the last write into the destination
     * (a write-back or a combine there may still be in flight). */
    clf_event *ev = NULL, *w[2];
    size_t nw = 0;
    if (d->vev[s])
        w[nw++] = d->vev[s];
    if (d->wev[dev] && d->wev[dev] != d->vev[s])
        w[nw++] = d->wev[dev];
    st = clf_copy_async(dst, 0, src, 0, d->buf->size, nw ? w : NULL, nw, &ev);
    if (st)
        return clf__prefix_error(st, "copying a %zu-byte buffer from device %zu to %zu: ",
                                 d->buf->size, s, dev);
    if ((st = clf__graph_copy_done(g, ev, s, dev, d->buf->size)) != CLF_SUCCESS)
        return st;
    d->vev[dev] = ev;
    d->wev[dev] = ev;
    d->valid[dev] = 1;
    d->ver[dev] = d->cur;
    return CLF_SUCCESS;
}

/* Drop data v's copy on dev to make room for node idx; wb: it is the only current copy,
 * written back to the buffer's own device first (the copy waits for what made it current;
 * the copy keeps the memory alive until it has read it, as OpenCL keeps a released buffer
 * for the commands queued on it). */
static clf_status evict(clf_graph *g, size_t v, size_t dev, size_t idx, int wb, uint64_t need)
{
    clf__gdata *d = &g->data[v];
    clf__gmem *m = &g->mem[dev];
    size_t home = d->buf->device, size = d->buf->size;
    if (wb) {
        clf_status st = clf__graph_make_current(g, d, home);
        if (st)
            return st;
        m->written_back += size;
        g->rep.written_back_bytes += size;
    }
    size_t next = clf__graph_next_use(g, v, idx + 1);
    char nx[48] = "not used again";
    if (next != SIZE_MAX)
        snprintf(nx, sizeof nx, "next used by node %zu", next);
    clf__log(CLF_LOG_DEBUG,
             "graph node %zu on device %zu: %llu resident + %llu new bytes over the budget of "
             "%llu: evicted the copy of data %zu (%zu bytes; %s; %s)", idx, dev,
             (unsigned long long)m->resident, (unsigned long long)need,
             (unsigned long long)clf__graph_budget(g, dev), v, size,
             wb ? "its only current copy, written back to its own device"
                : d->valid[dev] ? "current elsewhere too" : "stale",
             nx);
    clf_buffer_destroy(d->rep[dev]);
    d->rep[dev] = NULL;
    d->valid[dev] = 0;
    d->vev[dev] = NULL;
    d->wev[dev] = NULL; /* a new copy there is a new buffer */
    d->ver[dev] = CLF__GVER_NONE;
    clf__graph_mem_sub(g, dev, size);
    m->evictions++;
    m->evicted_bytes += size;
    g->rep.evictions++;
    g->rep.evicted_bytes += size;
    return CLF_SUCCESS;
}

/* Room on dev for the copies node idx makes there: evictions until the graph's copies there
 * and the new ones fit the device's budget. The node's own data stays (pinned). */
clf_status clf__graph_make_room(clf_graph *g, size_t idx, size_t dev)
{
    const clf__gnode *n = &g->nodes[idx];
    /* As the plan counts it (sched.c make_room()), on the run's copies and partials. */
    uint64_t need = clf__graph_node_bytes(g, n, dev, CLF__GMEM_RUN, NULL);
    clf__gmem *m = &g->mem[dev];
    uint64_t budget = clf__graph_budget(g, dev);
    if (m->resident + need <= budget)
        return CLF_SUCCESS;
    size_t nd = g->ndata;
    unsigned char *held = malloc(4 * nd), *cur = held + nd, *only = cur + nd, *busy = only + nd;
    if (!held)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    /* The copies that nodes queued before this one still use there (their kernels, or the
     * copies that made them current, not complete yet): kept while others can go. Evicting
     * one would be correct (OpenCL keeps it for them), but its memory would stay in use
     * beside the new copies until they complete. */
    memset(busy, 0, nd);
    for (size_t k = 0; k < idx; k++) {
        const clf__gnode *q = &g->nodes[k];
        if (q->kind != CLF__GNODE_WHOLE || q->device != dev || !q->ev || clf__event_done(q->ev))
            continue;
        for (size_t i = 0; i < q->nargs; i++)
            if (q->args[i].a.kind == CLF_ARG_KIND_BUFFER)
                busy[q->args[i].data] = 1;
    }
    for (size_t i = 0; i < nd; i++)
        if (!g->data[i].is_array && g->data[i].vev && g->data[i].vev[dev] &&
            !clf__event_done(g->data[i].vev[dev]))
            busy[i] = 1;
    clf_status st = CLF_SUCCESS;
    while (!st && m->resident + need > budget) {
        clf__graph_victim_state(g, dev, CLF__GMEM_RUN, held, cur, only);
        int wb;
        size_t v = clf__graph_victim(g, dev, idx, held, cur, only, busy, &wb);
        if (v == SIZE_MAX)
            v = clf__graph_victim(g, dev, idx, held, cur, only, NULL, &wb);
        if (v == SIZE_MAX) {
            /* What cannot go: the node's own data, and open reductions' partials. */
            uint64_t parts = clf__graph_partial_bytes(g, n, dev, CLF__GMEM_RUN);
            st = clf__fail(CLF_ERROR_UNSUPPORTED,
                           "graph: %llu bytes of new copies on device %zu beside %llu resident "
                           "(%llu of them the partials of open reductions, the rest what the "
                           "node itself uses): over the budget of %llu",
                           (unsigned long long)need, dev, (unsigned long long)m->resident,
                           (unsigned long long)parts, (unsigned long long)budget);
        }
        else
            st = evict(g, v, dev, idx, wb, need);
    }
    free(held);
    return st;
}

void clf__graph_written_on(clf_graph *g, clf__gdata *d, size_t dev, clf_event *ev, size_t node)
{
    /* A buffer passed twice to one node is one write: one version. The other copies keep
     * their contents (and versions), only no longer current. */
    if (!d->nprod || d->prod[d->nprod - 1] != node) {
        if (d->nprod < d->cap_prod)
            d->prod[d->nprod] = node;
        d->nprod++;
        d->cur++;
    }
    memset(d->valid, 0, g->ndev);
    memset(d->vev, 0, g->ndev * sizeof *d->vev);
    d->valid[dev] = 1;
    d->vev[dev] = ev;
    d->wev[dev] = ev;
    d->ver[dev] = d->cur;
    d->written = 1;
}

/* A copy the run made (run.c, redux.c): its event kept, to be profiled at the end (the
 * device busy times), and counted. */
clf_status clf__graph_copy_done(clf_graph *g, clf_event *ev, size_t s, size_t dev, size_t bytes)
{
    if (g->ncev == g->cap_cev) {
        size_t cap = g->cap_cev ? 2 * g->cap_cev : 16;
        clf_event **ce = realloc(g->cev, cap * sizeof *ce);
        size_t *cd = ce ? realloc(g->cdev, cap * sizeof *cd) : NULL;
        if (ce)
            g->cev = ce;
        if (!cd) {
            clf_event_wait(ev);
            clf_event_release(ev);
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        }
        g->cdev = cd;
        g->cap_cev = cap;
    }
    clf_status st = clf__graph_keep(g, ev, &g->cev[g->ncev]);
    if (st)
        return st;
    g->cdev[g->ncev++] = dev;
    clf__graph_count_copy(g, s, dev, bytes);
    return CLF_SUCCESS;
}

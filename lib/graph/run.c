/*
 * Graphs: a run. clf_graph_run() plans in the caller's thread and hands the rest to a job
 * of the helper pool, which queues the nodes in recording order and returns; the job then
 * waits for what it queued and completes the run's event.
 *
 * Buffers follow StarPU's valid-copy idea: per buffer and device, the graph's copy there
 * (made on first use, kept across runs) and whether it is current, with the event after
 * which it is. A node that reads a buffer on a device without a current copy gets one by
 * clf_copy_async() from a device that has one; a node that writes it makes its device's copy
 * the only current one. At the end every written buffer is copied back to its own device.
 * A run starts from the caller's buffers (only the home copies current), since the host may
 * have written them between runs. Before a node allocates copies on a device, copies there
 * are evicted until the device's budget holds them (make_room(); the choice is mem.c's).
 * Arrays keep their own coherence and per-part order
 * (clf_array_launch()): a node over them is one call. Reduction and scratch arguments are
 * redux.c's.
 *
 * Versions: per buffer, the writes of this run are counted (0: its contents at the start),
 * each copy knows the version it holds and each node the versions it read and wrote, so
 * that a device failing mid-run loses only what can be named, and what only it held can be
 * recomputed from its producers (fault.c).
 *
 * Ordering: a node waits for the events of the nodes it depends on (deps.c) and for the
 * copies that made its inputs current. A copy into a device waits for the event that made
 * its source current; it cannot overwrite what an earlier node still reads there, since the
 * write that made the old copy stale already waited for that reader.
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
    d->ver = malloc(g->ndev * sizeof *d->ver);
    if (!d->rep || !d->valid || !d->vev || !d->ver) {
        free(d->rep);
        free(d->valid);
        free(d->vev);
        free(d->ver);
        d->rep = NULL;
        d->valid = NULL;
        d->vev = NULL;
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
 * made first, make_room()). */
clf_status clf__graph_replica(clf_graph *g, clf__gdata *d, size_t dev, clf_buffer **out)
{
    if (!d->rep[dev]) {
        clf_status st = clf_buffer_create(&d->rep[dev], g->fleet, dev, d->buf->size, 0);
        if (st)
            return clf__prefix_error(st, "a copy of a %zu-byte buffer on device %zu: ",
                                     d->buf->size, dev);
        clf__gmem *m = &g->mem[dev];
        m->resident += d->buf->size;
        if (m->resident > m->peak)
            m->peak = m->resident;
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
    clf_event *ev = NULL, *w = d->vev[s];
    st = clf_copy_async(dst, 0, src, 0, d->buf->size, w ? &w : NULL, w ? 1 : 0, &ev);
    if (st)
        return clf__prefix_error(st, "copying a %zu-byte buffer from device %zu to %zu: ",
                                 d->buf->size, s, dev);
    if ((st = clf__graph_copy_done(g, ev, s, dev, d->buf->size)) != CLF_SUCCESS)
        return st;
    d->vev[dev] = ev;
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
    size_t next = clf__graph_next_use(g, v, idx);
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
    d->ver[dev] = CLF__GVER_NONE;
    m->resident -= size;
    m->evictions++;
    m->evicted_bytes += size;
    g->rep.evictions++;
    g->rep.evicted_bytes += size;
    return CLF_SUCCESS;
}

/* Room on dev for the copies node idx makes there: evictions until the graph's copies there
 * and the new ones fit the device's budget. The node's own data stays (pinned). */
static clf_status make_room(clf_graph *g, size_t idx, size_t dev)
{
    const clf__gnode *n = &g->nodes[idx];
    uint64_t need = 0;
    for (size_t i = 0; i < n->nargs; i++) {
        if (!clf__graph_first_use(n, i))
            continue;
        const clf__gdata *d = &g->data[n->args[i].data];
        if (d->buf->device != dev && !d->rep[dev])
            need += d->buf->size;
    }
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
        for (size_t i = 0; i < nd; i++) {
            const clf__gdata *d = &g->data[i];
            held[i] = !d->is_array && d->rep[dev] && d->buf->device != dev;
            cur[i] = held[i] && d->valid[dev];
            size_t k = 0;
            while (cur[i] && k < g->ndev && (k == dev || !d->valid[k]))
                k++;
            only[i] = cur[i] && k == g->ndev;
        }
        int wb;
        size_t v = clf__graph_victim(g, dev, idx, held, cur, only, busy, &wb);
        if (v == SIZE_MAX)
            v = clf__graph_victim(g, dev, idx, held, cur, only, NULL, &wb);
        if (v == SIZE_MAX)
            st = clf__fail(CLF_ERROR_UNSUPPORTED,
                           "graph: %llu bytes of new copies on device %zu beside %llu resident "
                           "that the node itself uses: over the budget of %llu",
                           (unsigned long long)need, dev, (unsigned long long)m->resident,
                           (unsigned long long)budget);
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
    d->ver[dev] = d->cur;
    d->written = 1;
}


/* A node over buffers: its inputs made current on its device (copies queued), then the
 * kernel queued after them and its predecessors. gather: stop before the kernel and hold
 * what it would wait for instead (a device whose commands wait for their wait list on the
 * host: the job waits for them first, without blocking, see clf__graph_defer()). */
static clf_status run_whole(clf_graph *g, clf__gnode *n, int gather)
{
    size_t dev = n->device;
    size_t cap = n->npreds + n->nargs;
    clf_event **wait = cap ? calloc(cap, sizeof *wait) : NULL;
    clf_arg *args = n->nargs ? calloc(n->nargs, sizeof *args) : NULL;
    clf_status st = CLF_SUCCESS;
    size_t nw = 0;
    if ((cap && !wait) || (n->nargs && !args)) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n->npreds; i++)
        if (g->nodes[n->preds[i]].ev)
            wait[nw++] = g->nodes[n->preds[i]].ev;
    if ((st = make_room(g, (size_t)(n - g->nodes), dev)) != CLF_SUCCESS)
        goto out;
    for (size_t i = 0; i < n->nargs; i++) {
        args[i] = n->args[i].a;
        if (args[i].kind != CLF_ARG_KIND_BUFFER)
            continue;
        clf__gdata *d = &g->data[n->args[i].data];
        if ((st = clf__graph_ensure_reps(g, d)) != CLF_SUCCESS)
            goto out;
        int special = 0; /* a reduction's partial or a scratch instance (redux.c) */
        if ((st = clf__graph_mode_arg(g, d, dev, &args[i], wait, &nw, &special)) != CLF_SUCCESS)
            goto out;
        if (special)
            continue;
        if (args[i].flags & CLF_ARG_READ) {
            if ((st = clf__graph_make_current(g, d, dev)) != CLF_SUCCESS)
                goto out;
            if (d->vev[dev])
                wait[nw++] = d->vev[dev];
        }
        clf_buffer *r;
        if ((st = clf__graph_replica(g, d, dev, &r)) != CLF_SUCCESS)
            goto out;
        args[i].host = r;
    }
    if (gather) {
        for (size_t i = 0; i < nw && !st; i++)
            st = clf__graph_hold(g, wait[i]);
        goto out;
    }
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = n->kernel;
    kd.dims = n->desc.dims;
    memcpy(kd.global, n->desc.global, sizeof kd.global);
    memcpy(kd.local, n->desc.local, sizeof kd.local);
    clf_event *ev = NULL;
    st = clf_kernel_enqueue(g->fleet, g->prog, dev, &kd, args, n->nargs, nw ? wait : NULL, nw,
                            &ev);
    if (st)
        goto out;
    if ((st = clf__graph_keep(g, ev, &n->ev)) != CLF_SUCCESS)
        goto out;
    clf__graph_modes_queued(g, n, dev, ev);
    /* The versions it read, then those it wrote (fault.c replays it from them). */
    size_t idx = (size_t)(n - g->nodes);
    for (size_t i = 0; i < n->nargs; i++)
        if (args[i].kind == CLF_ARG_KIND_BUFFER)
            n->aver[i] = g->data[n->args[i].data].cur;
    for (size_t i = 0; i < n->nargs; i++)
        if (args[i].kind == CLF_ARG_KIND_BUFFER && (n->args[i].a.flags & CLF_ARG_WRITE))
            clf__graph_written_on(g, &g->data[n->args[i].data], dev, ev, idx);
    for (size_t i = 0; i < n->nargs; i++)
        if (args[i].kind == CLF_ARG_KIND_BUFFER &&
            (clf__graph_access(n, n->args[i].data) & CLF_ARG_WRITE))
            n->aver[i] = g->data[n->args[i].data].cur;
out:
    free(wait);
    free(args);
    return st;
}

/* The event of a part's kernel right after clf_array_launch(): its last write record. */
static clf_event *part_kernel_event(const clf_array *a, size_t p)
{
    const clf__array_part *q = &a->parts[p];
    for (size_t i = q->nacc; i-- > 0;)
        if (q->acc[i].write)
            return q->acc[i].ev;
    return NULL;
}

static clf_status run_split(clf_graph *g, clf__gnode *n)
{
    clf_arg *args = calloc(n->nargs ? n->nargs : 1, sizeof *args);
    if (!args)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    clf_array_launch_desc ld = CLF_ARRAY_LAUNCH_DESC_INIT;
    ld.kernel = n->kernel;
    ld.dims = n->desc.dims;
    memcpy(ld.global, n->desc.global, sizeof ld.global);
    memcpy(ld.local, n->desc.local, sizeof ld.local);
    const clf_array *written = NULL;
    for (size_t i = 0; i < n->nargs; i++) {
        args[i] = n->args[i].a;
        if (args[i].kind != CLF_ARG_KIND_ARRAY)
            continue;
        /* A neighbourhood footprint: the halos must be current before the node reads them.
         * The footprint itself is the graph's; the array launch takes plain arguments. */
        if (args[i].halo_before || args[i].halo_after)
            ld.flags |= CLF_ARRAY_EXCHANGE_BEFORE;
        args[i].halo_before = args[i].halo_after = 0;
        const clf_array *a = args[i].host;
        if ((args[i].flags & CLF_ARG_WRITE) && !written && a->desc.dist != CLF_ARRAY_REPLICATED)
            written = a;
    }
    clf_status st = clf_array_launch(g->fleet, g->prog, &ld, args, n->nargs);
    free(args);
    if (st || !written)
        return st;
    /* The parts' kernel events, to time them once the run has completed. */
    n->part_ev = calloc(written->nparts, sizeof *n->part_ev);
    n->part_dev = calloc(written->nparts, sizeof *n->part_dev);
    if (!n->part_ev || !n->part_dev)
        return CLF_SUCCESS; /* timing only: the run goes on without it */
    for (size_t p = 0; p < written->nparts; p++) {
        clf_event *e = part_kernel_event(written, p);
        if (!e)
            continue;
        clf__event_hold(e);
        n->part_ev[n->npart_ev] = e;
        n->part_dev[n->npart_ev++] = written->parts[p].device;
    }
    return CLF_SUCCESS;
}

/* Hold e for the job's next wait. */
clf_status clf__graph_hold(clf_graph *g, clf_event *e)
{
    clf__event_hold(e);
    return clf__evlist_push(&g->hold, e);
}

/* Every pending access of array a (what clf_array_finish() waits for), held. */
static clf_status hold_array(clf_graph *g, const clf_array *a)
{
    clf_status st = CLF_SUCCESS;
    for (size_t p = 0; p < a->nparts && !st; p++)
        for (size_t i = 0; i < a->parts[p].nacc && !st; i++)
            st = clf__graph_hold(g, a->parts[p].acc[i].ev);
    return st;
}

/* Before a host node: bring its buffers home (copies queued) and hold what it waits for:
 * its predecessors' kernels, those copies, and the arrays' pending accesses. */
static clf_status host_gather(clf_graph *g, clf__gnode *n)
{
    clf_status st = CLF_SUCCESS;
    for (size_t i = 0; i < n->npreds && !st; i++)
        if (g->nodes[n->preds[i]].ev)
            st = clf__graph_hold(g, g->nodes[n->preds[i]].ev);
    for (size_t i = 0; i < n->nargs && !st; i++) {
        if (n->args[i].a.kind == CLF_ARG_KIND_ARRAY) {
            st = hold_array(g, n->args[i].a.host);
            continue;
        }
        clf__gdata *d = &g->data[n->args[i].data];
        size_t home = d->buf->device;
        if ((st = clf__graph_ensure_reps(g, d)) == CLF_SUCCESS &&
            (st = clf__graph_make_current(g, d, home)) == CLF_SUCCESS && d->vev[home])
            st = clf__graph_hold(g, d->vev[home]);
    }
    return st;
}

/* A host node once what it waits for has completed (g->hold: its status, at once). */
static clf_status run_host(clf_graph *g, clf__gnode *n)
{
    clf_status st = clf__evlist_finish(&g->hold, CLF_SUCCESS);
    for (size_t i = 0; i < n->nargs && !st; i++)
        if (n->args[i].a.kind == CLF_ARG_KIND_ARRAY)
            st = clf_array_finish(n->args[i].a.host); /* completed: it only tidies */
    if (st)
        return st;
    n->host_t0 = clf__mono_ns();
    st = n->fn(n->user);
    n->host_t1 = clf__mono_ns();
    if (st)
        return clf__fail(st, "the host callback returned %s", clf_status_name(st));
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].a.kind == CLF_ARG_KIND_BUFFER && (n->args[i].a.flags & CLF_ARG_WRITE)) {
            clf__gdata *d = &g->data[n->args[i].data];
            clf__graph_written_on(g, d, d->buf->device, NULL, (size_t)(n - g->nodes));
        }
    return CLF_SUCCESS;
}

static void job(void *arg, int cancelled);

/* The last of the held events to complete queues the job again. */
static void wake(void *arg, clf_status st)
{
    (void)st; /* read when the job waits for the event, at once */
    clf_graph *g = arg;
    if (atomic_fetch_sub(&g->pending, 1) == 1 && clf__pool_submit(&g->job) != CLF_SUCCESS)
        job(g, 0); /* no pool (it shut down): here, where nothing is left to wait for */
}

/* 1 when the job must return and wait to be queued again (some held event has not
 * completed), 0 when it may go on at once. The job touches nothing after a 1. */
int clf__graph_defer(clf_graph *g)
{
    size_t n = g->hold.n;
    atomic_store(&g->pending, n + 1);
    for (size_t i = 0; i < n; i++)
        if (clf__event_notify(g->hold.ev[i], wake, g) != CLF_SUCCESS) {
            (void)clf_event_wait(g->hold.ev[i]); /* out of memory: wait here instead */
            atomic_fetch_sub(&g->pending, 1);
        }
    return atomic_fetch_sub(&g->pending, 1) != 1;
}

/* Keep the first failure and its detail (the job moves between threads). */
void clf__graph_failed(clf_graph *g, clf_status st)
{
    if (!st || g->run_st)
        return;
    g->run_st = st;
    g->run_msg = strdup(clf_last_error());
}

/* The run's start: every buffer's state for it (its versions from 0), room for the
 * versions each node records, and the copies on devices that failed since dropped. */
static clf_status start_run(clf_graph *g)
{
    for (size_t i = 0; i < g->ndata; i++) {
        clf__gdata *d = &g->data[i];
        if (d->is_array)
            continue;
        clf_status st = clf__graph_ensure_reps(g, d);
        if (st)
            return st;
        /* A version per node that writes it at most: none is pushed mid-run. */
        if (d->cap_prod < g->nnodes) {
            size_t *p = realloc(d->prod, g->nnodes * sizeof *p);
            if (!p)
                return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
            d->prod = p;
            d->cap_prod = g->nnodes;
        }
        d->nprod = 0;
        d->cur = 0;
        /* Every command of the last run has completed: its copies are current now. */
        memset(d->vev, 0, g->ndev * sizeof *d->vev);
        if (!clf__graph_keeps(g)) {
            memset(d->valid, 0, g->ndev);
            d->valid[d->buf->device] = 1;
        }
        for (size_t k = 0; k < g->ndev; k++)
            d->ver[k] = d->valid[k] ? 0 : CLF__GVER_NONE;
        d->written = 0;
        clf__graph_modes_reset(g, d);
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        clf__gnode *n = &g->nodes[i];
        n->rerun = 0;
        if (!n->aver && n->nargs && !(n->aver = calloc(n->nargs, sizeof *n->aver)))
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    }
    for (size_t k = 0; k < g->ndev; k++) {
        clf__gmem *m = &g->mem[k];
        m->peak = m->resident;
        m->evictions = m->evicted_bytes = m->written_back = 0;
    }
    g->recoveries = 0;
    g->fault_phase = 0;
    clf__graph_write_off_failed(g);
    return CLF_SUCCESS;
}

/* Whether node n, queued now, would wait for its wait list on the host: a host callback,
 * or a kernel with a device whose commands do (PoCL's basic: its ops table). */
static int waits_on_host(const clf_graph *g, const clf__gnode *n)
{
    if (n->kind == CLF__GNODE_HOST)
        return 1;
    if (n->kind == CLF__GNODE_WHOLE)
        return !clf__devops(g->fleet, n->device)->wait_list_ok;
    for (size_t i = 0; i < n->nargs; i++) {
        const clf_array *a = n->args[i].a.kind == CLF_ARG_KIND_ARRAY ? n->args[i].a.host : NULL;
        for (size_t p = 0; a && p < a->nparts; p++)
            if (!clf__devops(g->fleet, a->parts[p].device)->wait_list_ok)
                return 1;
    }
    return 0;
}

/* What node n waits for, held (its inputs' copies queued first). */
static clf_status gather(clf_graph *g, clf__gnode *n)
{
    if (n->kind == CLF__GNODE_HOST)
        return host_gather(g, n);
    if (n->kind == CLF__GNODE_WHOLE)
        return run_whole(g, n, 1);
    clf_status st = CLF_SUCCESS;
    for (size_t i = 0; i < n->nargs && !st; i++)
        if (n->args[i].a.kind == CLF_ARG_KIND_ARRAY)
            st = hold_array(g, n->args[i].a.host);
    return st;
}

/* A failure of node g->next (g->nnodes: of a copy back home): a device's, recovered from
 * (fault.c; 1: wait, 0: go on), or the run's end (-1, recorded). */
static int node_failed(clf_graph *g, clf_status st)
{
    const clf__gnode *n = g->next < g->nnodes ? &g->nodes[g->next] : NULL;
    if (clf__graph_device_fault(g, g->next))
        return clf__graph_recover(g);
    if (n)
        clf__graph_failed(g, clf__prefix_error(st, "graph node %zu (%s%s%s): ", g->next,
                                               n->kind == CLF__GNODE_HOST ? "host callback"
                                                                          : "'",
                                               n->kernel ? n->kernel : "", n->kernel ? "'" : ""));
    else
        clf__graph_failed(g, st);
    return -1;
}

/* Queue the nodes from g->next on, then the copies of written buffers back home; 1 when the
 * job must wait (see clf__graph_defer()). A node that would wait on the host is first
 * gathered (what it waits for, held), the job waits for that without blocking, and the node
 * then runs with nothing left to wait for. A device that fails on the way is recovered from
 * (fault.c), which may wait too, then the node that failed is queued again. */
static int queue_nodes(clf_graph *g)
{
    if (g->fault_phase) {
        int r = clf__graph_recover(g);
        if (r)
            return r > 0;
    }
    while (!g->run_st && g->next < g->nnodes) {
        clf__gnode *n = &g->nodes[g->next];
        clf_status st;
        /* Reductions it reads or writes otherwise are combined first (redux.c; -1: failed,
         * recorded, and nothing more is queued). */
        int fr = g->has_redux ? clf__graph_flush(g, g->next) : 0;
        if (fr)
            return fr > 0;
        if (!g->gathered && waits_on_host(g, n)) {
            g->gathered = 1;
            st = gather(g, n);
            if (!st && clf__graph_defer(g))
                return 1;
            if (!st)
                continue; /* everything had completed: run it now */
        } else {
            g->gathered = 0;
            if (n->kind != CLF__GNODE_HOST) {
                /* What it was gathered for has completed: the statuses, at once. */
                st = clf__evlist_finish(&g->hold, CLF_SUCCESS);
                if (!st)
                    st = n->kind == CLF__GNODE_WHOLE ? run_whole(g, n, 0) : run_split(g, n);
            } else {
                st = run_host(g, n);
            }
        }
        if (st) {
            int r = node_failed(g, st);
            if (r > 0)
                return 1;
            if (r < 0)
                break;
            continue; /* recovered: the node again, elsewhere */
        }
        g->next++;
    }
    if (!g->run_st && g->has_redux && clf__graph_flush(g, g->nnodes) > 0)
        return 1;
    /* Written buffers back to their own devices (again from the first after a recovery). */
    for (size_t i = 0; i < g->ndata && !g->run_st; i++) {
        clf__gdata *d = &g->data[i];
        if (d->is_array || !d->written)
            continue;
        clf_status st = clf__graph_make_current(g, d, d->buf->device);
        if (!st)
            continue;
        int r = node_failed(g, st);
        if (r > 0)
            return 1;
        if (r < 0)
            break;
        i = (size_t)-1;
    }
    return 0;
}

/* The run's end: every command completed; statuses, arrays tidied, the report, and the
 * run's event. */
static void end_run(clf_graph *g)
{
    clf_status st = clf__evlist_finish(&g->hold, CLF_SUCCESS);
    (void)st; /* the same events' statuses come from g->evs and the arrays below */
    clf__graph_failed(g, clf__evlist_finish(&g->evs, CLF_SUCCESS));
    for (size_t i = 0; i < g->ndata; i++)
        if (g->data[i].is_array)
            clf__graph_failed(g, clf_array_finish(g->data[i].arr));
    st = g->run_st;
    char *err = g->run_msg;
    g->run_msg = NULL;
    clf__graph_tmp_free(g);
    clf__graph_report_run(g, st);
    g->last_failed = st != CLF_SUCCESS;
    struct clf__task *task = g->task;
    pthread_mutex_lock(&g->lock);
    g->task = NULL;
    g->running = 0;
    g->run_status = st;
    free(g->run_err);
    g->run_err = err ? strdup(err) : NULL;
    pthread_cond_broadcast(&g->done_cv);
    pthread_mutex_unlock(&g->lock);
    /* g may be gone from here on (a waiter destroyed it): only the task remains. */
    clf__task_complete(task, st, err);
    clf__task_unref(task);
    free(err);
}

/* The run, as a job of the helper pool queued again whenever it had to wait. */
static void job(void *arg, int cancelled)
{
    clf_graph *g = arg;
    if (cancelled)
        clf__graph_failed(g, clf__fail(CLF_ERROR_OPENCL,
                            "graph: the run was cancelled by the library's shutdown"));
    if (!g->final_phase) {
        if (!cancelled && queue_nodes(g))
            return;
        /* Wait for everything queued, failed or not, before the run ends. */
        g->final_phase = 1;
        /* g->hold may still hold a failed host node's events: they join the wait. */
        clf_status st = CLF_SUCCESS;
        for (size_t i = 0; i < g->evs.n && !st; i++)
            st = clf__graph_hold(g, g->evs.ev[i]);
        for (size_t i = 0; i < g->ndata && !st; i++)
            if (g->data[i].is_array)
                st = hold_array(g, g->data[i].arr);
        if (st) /* out of memory: wait here */
            clf__graph_failed(g, st);
        else if (clf__graph_defer(g))
            return;
    }
    end_run(g);
}

clf_status clf_graph_run(clf_graph *g, clf_event **out_event)
{
    if (out_event)
        *out_event = NULL;
    if (!g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_run: the graph is NULL");
    if (!g->nnodes)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf_graph_run: the graph has no nodes");
    /* Claimed under the lock, so that two threads cannot start runs at once. */
    pthread_mutex_lock(&g->lock);
    int busy = g->running;
    g->running = 1;
    pthread_mutex_unlock(&g->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY, "clf_graph_run: a run of the graph is in flight");
    struct clf__task *task = NULL;
    clf_status st = clf__graph_redux_program(g);
    if (!st)
        st = clf__graph_plan(g);
    if (!st && !(task = clf__task_create()))
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_graph_run: out of memory");
    if (st) { /* nothing started: give the claim back */
        pthread_mutex_lock(&g->lock);
        g->running = 0;
        pthread_cond_broadcast(&g->done_cv);
        pthread_mutex_unlock(&g->lock);
        return st;
    }
    memset(&g->rep, 0, sizeof g->rep);
    pthread_mutex_lock(&g->lock);
    g->task = task;
    g->run_status = CLF_SUCCESS;
    pthread_mutex_unlock(&g->lock);
    g->t0 = clf__now();
    g->t0_ns = clf__mono_ns();
    g->next = 0;
    g->gathered = g->final_phase = 0;
    g->run_st = CLF_SUCCESS;
    free(g->run_msg);
    g->run_msg = NULL;
    clf_status sst = start_run(g);
    if (sst)
        clf__graph_failed(g, sst);
    for (size_t i = 0; i < g->nnodes; i++)
        g->nodes[i].host_t0 = g->nodes[i].host_t1 = 0;
    g->job.fn = job;
    g->job.arg = g;
    /* The event's reference, taken before the job can drop its own. */
    if (out_event)
        clf__task_ref(task);
    /* Without the pool (it shut down, or no thread could start), the run happens here. */
    if (clf__pool_submit(&g->job) != CLF_SUCCESS)
        job(g, 0);
    /* Wrapped once the run is under way: a wrapper that cannot be made waits for the task
     * (so it must be one that completes) and drops the reference. */
    if (out_event)
        return clf__event_wrap_task(task, out_event);
    return CLF_SUCCESS;
}

clf_status clf_graph_wait(clf_graph *g)
{
    if (!g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_wait: the graph is NULL");
    pthread_mutex_lock(&g->lock);
    while (g->running)
        pthread_cond_wait(&g->done_cv, &g->lock);
    clf_status st = g->run_status;
    char *err = st && g->run_err ? strdup(g->run_err) : NULL;
    pthread_mutex_unlock(&g->lock);
    if (st)
        clf__fail(st, "%s", err ? err : "the graph's run failed");
    free(err);
    return st;
}

/*
 * Graphs: a run. clf_graph_run() plans in the caller's thread and hands the rest to a job
 * of the helper pool, which queues the nodes in recording order and returns; the job then
 * waits for what it queued and completes the run's event.
 *
 * Buffers follow StarPU's valid-copy idea (copies.c): per buffer and device, the graph's
 * copy there (made on first use, kept across runs) and whether it is current, with the event
 * after which it is. A node that reads a buffer on a device without a current copy gets one by
 * clf_copy_async() from a device that has one; a node that writes it makes its device's copy
 * the only current one. At the end every written buffer is copied back to its own device.
 * A run starts from the caller's buffers (only the home copies current), since the host may
 * have written them between runs. Before a node allocates copies on a device, copies there
 * are evicted until the device's budget holds them (copies.c; the choice is mem.c's).
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
    if ((st = clf__graph_make_room(g, (size_t)(n - g->nodes), dev)) != CLF_SUCCESS)
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
        } else if (d->wev[dev]) {
            /* Written only: after the last write into the copy that is not a node's (its
             * predecessors order the nodes'), e.g. a write-back into it still in flight. */
            wait[nw++] = d->wev[dev];
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
    if (clf__graph_lane_wanted(g, n)) {
        st = clf__graph_lane_push(g, n, &kd, args, wait, nw, &ev);
        if (!st)
            g->rep.lane_nodes++;
    } else
        st = clf_kernel_enqueue(g->fleet, g->prog, dev, &kd, args, n->nargs, nw ? wait : NULL,
                                nw, &ev);
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
        memset(d->wev, 0, g->ndev * sizeof *d->wev);
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
        return !clf__devops(g->fleet, n->device)->wait_list_ok && !clf__graph_lane_wanted(g, n);
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
    struct clf__completion *done = g->done;
    pthread_mutex_lock(&g->lock);
    g->done = NULL;
    g->running = 0;
    g->run_status = st;
    free(g->run_err);
    g->run_err = err ? strdup(err) : NULL;
    pthread_cond_broadcast(&g->done_cv);
    pthread_mutex_unlock(&g->lock);
    /* g may be gone from here on (a waiter destroyed it): only the completion remains. */
    clf__completion_complete(done, st, err);
    clf__completion_unref(done);
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
    /* Claimed under the lock, so that two threads cannot start runs at once; the node count
     * is read there too, as clf_graph_add_kernel() from another thread writes it under it. */
    pthread_mutex_lock(&g->lock);
    int busy = g->running, empty = !g->nnodes;
    if (!busy && !empty)
        g->running = 1;
    pthread_mutex_unlock(&g->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY, "clf_graph_run: a run of the graph is in flight");
    if (empty)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf_graph_run: the graph has no nodes");
    struct clf__completion *done = NULL;
    clf_status st = clf__graph_redux_program(g);
    if (!st)
        st = clf__graph_plan(g);
    if (!st && !(done = clf__completion_create(0)))
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
    g->done = done;
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
        clf__completion_ref(done);
    /* Without the pool (it shut down, or no thread could start), the run happens here. */
    if (clf__pool_submit(&g->job) != CLF_SUCCESS)
        job(g, 0);
    /* Wrapped once the run is under way: a wrapper that cannot be made waits for the
     * completion (so it must be one that completes) and drops the reference. */
    if (out_event)
        return clf__event_wrap_completion(done, out_event);
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

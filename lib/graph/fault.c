/*
 * Graphs: a device that fails mid-run loses its nodes to the others, and what only it held
 * is recomputed from its producers where possible.
 *
 * A failure is the device's when, after a node's command failed, some device is marked
 * failed in the fleet that the graph has not written off yet (a lost device: the fault
 * rules' `lost`, a launch or another subsystem that saw its failure), or the node's own
 * device is written off. A node's own error (a bad argument, a failing host callback, an
 * OpenCL error that does not lose the device) still ends the run, and so does any failure
 * of a node over arrays (some parts may have run, and the parts are the arrays' own) or of
 * a host callback that ran.
 *
 * The recovery, in the run's job, which never blocks (it returns and is queued again, as
 * run.c's defer() does):
 * 1. The device is written off: the graph's copies there are dropped and none counts as
 *    current; the nodes not yet queued are planned again over the devices left (sched.c
 *    leaves failed devices out, a node placed by hand there included), and the nodes queued
 *    on it keep their new places for their re-runs. Then every command queued so far
 *    completes: nothing is in flight while the re-runs write the copies. A command that
 *    failed on the written-off device is expected (what it wrote is recomputed below); one
 *    that failed elsewhere fails the run (sort_statuses()). CLFLEET_FAULT_INJECT cannot make
 *    a graph's command fail once queued (its `exec` fails a graph's kernel at the enqueue),
 *    so the tests lose devices whose queued commands all succeed.
 * 2. Every buffer whose current version was only on the device, and that a node not yet
 *    queued uses or that the run wrote (it goes back home), needs that version again. The
 *    versions (run.c) say which node wrote it and which versions that node read; a version
 *    still held by a live device is taken from there, else its own producer is re-run too,
 *    back to versions that are held. A version nothing can give back fails the run, naming
 *    the data and the node: the contents at the run's start only on the failed device (the
 *    caller's buffer there), or one written by a host callback. An in-place update is
 *    re-run from the version it read, when some device still holds it.
 * 3. The producers are re-run in recording order, one at a time: its inputs copied to its
 *    device (a version that is not the current one into a temporary buffer, so as not to
 *    overwrite a current copy), the job waits, then its kernel, and the job waits again.
 *    With nothing else in flight, no wait list is needed and no copy can overwrite what
 *    another command still reads. The node that failed is then queued again, elsewhere.
 * Faults are rare: the waits cost some overlap once, and the re-runs' copies and temporary
 * buffers are not held to the memory budgets.
 */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drop the graph's copies on device k: their memory, and any claim to be current. The
 * caller's buffers there stay the caller's (and are no longer current either). */
static void write_off(clf_graph *g, size_t k)
{
    g->dead[k] = 1;
    for (size_t i = 0; i < g->ndata; i++) {
        clf__gdata *d = &g->data[i];
        if (d->is_array || !d->rep)
            continue;
        if (d->buf->device != k && d->rep[k]) {
            clf_buffer_destroy(d->rep[k]); /* commands still queued on it keep it */
            d->rep[k] = NULL;
            clf__graph_mem_sub(g, k, d->buf->size);
        }
        d->valid[k] = 0;
        d->vev[k] = NULL;
        d->wev[k] = NULL;
        d->ver[k] = CLF__GVER_NONE;
    }
}

void clf__graph_write_off_failed(clf_graph *g)
{
    for (size_t k = 0; k < g->ndev; k++) {
        g->dead[k] = 0; /* a device readmitted since is used again */
        if (clf__device_failed(g->fleet, k, NULL, 0))
            write_off(g, k);
    }
}

int clf__graph_device_fault(clf_graph *g, size_t idx)
{
    const clf__gnode *n = idx < g->nnodes ? &g->nodes[idx] : NULL;
    /* Not run again: a host callback that ran (its effects are the caller's), a node over
     * arrays (some parts may have run; the parts are the arrays' own). */
    if (n && ((n->kind == CLF__GNODE_HOST && n->host_t0) || n->kind == CLF__GNODE_SPLIT))
        return 0;
    for (size_t k = 0; k < g->ndev; k++)
        if (!g->dead[k] && clf__device_failed(g->fleet, k, NULL, 0))
            return 1;
    return n && n->kind == CLF__GNODE_WHOLE && g->dead[n->device];
}

void clf__graph_tmp_free(clf_graph *g)
{
    for (size_t i = 0; i < g->ntmp; i++)
        clf_buffer_destroy(g->tmp[i].buf);
    g->ntmp = 0;
}

/* The temporary buffer holding version v of data i on dev (SIZE_MAX: any device). */
static clf__gtmp *tmp_find(clf_graph *g, size_t i, uint64_t v, size_t dev)
{
    for (size_t k = 0; k < g->ntmp; k++)
        if (g->tmp[k].data == i && g->tmp[k].ver == v && (dev == SIZE_MAX || g->tmp[k].dev == dev))
            return &g->tmp[k];
    return NULL;
}

static clf_status tmp_new(clf_graph *g, size_t i, uint64_t v, size_t dev, clf__gtmp **out)
{
    if (g->ntmp == g->cap_tmp) {
        size_t cap = g->cap_tmp ? 2 * g->cap_tmp : 8;
        clf__gtmp *t = realloc(g->tmp, cap * sizeof *t);
        if (!t)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        g->tmp = t;
        g->cap_tmp = cap;
    }
    clf__gtmp *t = &g->tmp[g->ntmp];
    memset(t, 0, sizeof *t);
    clf_status st = clf_buffer_create(&t->buf, g->fleet, dev, g->data[i].buf->size, 0);
    if (st)
        return clf__prefix_error(st, "a temporary %zu-byte buffer on device %zu: ",
                                 g->data[i].buf->size, dev);
    t->data = i;
    t->ver = v;
    t->dev = dev;
    g->ntmp++;
    *out = t;
    return CLF_SUCCESS;
}

/* A live device whose copy of data i holds version v, else SIZE_MAX. */
static size_t holder(const clf_graph *g, size_t i, uint64_t v)
{
    const clf__gdata *d = &g->data[i];
    for (size_t k = 0; k < g->ndev; k++)
        if (!g->dead[k] && d->rep && d->rep[k] && d->ver[k] == v)
            return k;
    return SIZE_MAX;
}

/* The versions node n's argument a reads and writes (CLF__GVER_NONE: none). */
static void arg_versions(const clf__gnode *n, size_t a, uint64_t *vin, uint64_t *vout)
{
    unsigned acc = clf__graph_access(n, n->args[a].data);
    *vout = (acc & CLF_ARG_WRITE) ? n->aver[a] : CLF__GVER_NONE;
    *vin = !(acc & CLF_ARG_READ) ? CLF__GVER_NONE
           : (acc & CLF_ARG_WRITE) ? n->aver[a] - 1 /* one write per node: one version */
                                   : n->aver[a];
}

typedef struct need {
    size_t data;
    uint64_t ver;
    size_t reader; /* the node that needs it (SIZE_MAX: the copy back home) */
} need;

/* Append x to the work list (*wl, *nw of *cap entries), growing it. */
static clf_status push(need **wl, size_t *nw, size_t *cap, need x)
{
    if (*nw == *cap) {
        need *w = realloc(*wl, 2 * *cap * sizeof *w);
        if (!w)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        *wl = w;
        *cap *= 2;
    }
    (*wl)[(*nw)++] = x;
    return CLF_SUCCESS;
}

/* Which nodes to re-run (g->rset, ascending): CLF_SUCCESS, or the failure naming the data
 * that cannot be recomputed. */
static clf_status plan_reruns(clf_graph *g, const char *cause)
{
    size_t idx = g->next, nn = g->nnodes;
    unsigned char *set = calloc(nn ? nn : 1, 1);
    size_t cap = 16, nw = 0;
    need *wl = malloc(cap * sizeof *wl);
    clf_status st = CLF_SUCCESS;
    if (!set || !wl) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        goto out;
    }
    for (size_t i = 0; i < g->ndata && !st; i++) {
        clf__gdata *d = &g->data[i];
        size_t user = clf__graph_next_use(g, i, idx); /* the run's next node included */
        if (d->is_array) {
            for (size_t p = 0; p < d->arr->nparts && user != SIZE_MAX; p++)
                if (g->dead[d->arr->parts[p].device]) {
                    st = clf__fail(CLF_ERROR_DEVICE_FAILED,
                                   "graph: array data %zu has its part %zu on device %zu, "
                                   "which failed (%s), and node %zu uses it: an array's parts "
                                   "are the caller's and cannot be recovered",
                                   i, p, d->arr->parts[p].device, cause, user);
                    break;
                }
            continue;
        }
        if (!d->written && user == SIZE_MAX)
            continue;
        size_t home = d->buf->device;
        if (g->dead[home]) {
            char who[64];
            if (user != SIZE_MAX)
                snprintf(who, sizeof who, "node %zu uses it", user);
            else
                snprintf(who, sizeof who, "node %zu wrote it", d->prod[d->nprod - 1]);
            st = clf__fail(CLF_ERROR_DEVICE_FAILED,
                           "graph: buffer data %zu is the caller's %zu-byte buffer on device "
                           "%zu, which failed (%s), and %s: it cannot be recovered",
                           i, d->buf->size, home, cause, who);
            break;
        }
        if (holder(g, i, d->cur) != SIZE_MAX)
            continue;
        if ((st = push(&wl, &nw, &cap, (need){i, d->cur, user})) != CLF_SUCCESS)
            break;
    }
    /* Back along the producers to versions that some live device holds. */
    while (!st && nw) {
        need q = wl[--nw];
        const clf__gdata *d = &g->data[q.data];
        if (holder(g, q.data, q.ver) != SIZE_MAX || (q.ver && set[d->prod[q.ver - 1]]))
            continue;
        char who[48] = "its copy back home";
        if (q.reader != SIZE_MAX)
            snprintf(who, sizeof who, "node %zu", q.reader);
        if (q.ver == 0) {
            st = clf__fail(CLF_ERROR_DEVICE_FAILED,
                           "graph: buffer data %zu as it was at the run's start was only on a "
                           "device that failed (%s), and %s needs it: it cannot be recomputed",
                           q.data, cause, who);
            break;
        }
        if (q.ver > d->nprod || q.ver > d->cap_prod) { /* cannot be: one per writing node */
            st = clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                           "graph: buffer data %zu: no record of its version %llu", q.data,
                           (unsigned long long)q.ver);
            break;
        }
        size_t p = d->prod[q.ver - 1];
        const clf__gnode *n = &g->nodes[p];
        if (n->kind != CLF__GNODE_WHOLE) {
            st = clf__fail(CLF_ERROR_DEVICE_FAILED,
                           "graph: buffer data %zu as node %zu (a host callback) wrote it was "
                           "only on a device that failed (%s), and %s needs it: a host "
                           "callback is not run again",
                           q.data, p, cause, who);
            break;
        }
        set[p] = 1;
        for (size_t a = 0; a < n->nargs; a++) {
            if (n->args[a].a.kind != CLF_ARG_KIND_BUFFER || !clf__graph_first_use(n, a))
                continue;
            uint64_t vin, vout;
            arg_versions(n, a, &vin, &vout);
            if (vin == CLF__GVER_NONE)
                continue;
            if ((st = push(&wl, &nw, &cap, (need){n->args[a].data, vin, p})) != CLF_SUCCESS)
                break;
        }
    }
    g->nrset = g->rcur = 0;
    g->rstep = 0;
    if (!st) {
        size_t k = 0;
        for (size_t p = 0; p < idx; p++)
            k += set[p];
        size_t *r = k ? realloc(g->rset, k * sizeof *r) : g->rset;
        if (k && !r)
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        else {
            g->rset = r;
            for (size_t p = 0; p < idx; p++)
                if (set[p])
                    g->rset[g->nrset++] = p;
        }
    }
out:
    free(set);
    free(wl);
    return st;
}

/* Copy version v of data i into dst on dev (nothing is in flight: no wait list), held for
 * the job's next wait. */
static clf_status copy_version(clf_graph *g, size_t i, uint64_t v, size_t dev, clf_buffer *dst)
{
    clf__gdata *d = &g->data[i];
    size_t s = holder(g, i, v);
    clf_buffer *src = s != SIZE_MAX ? d->rep[s] : NULL;
    if (!src) {
        const clf__gtmp *t = tmp_find(g, i, v, SIZE_MAX);
        if (t) {
            src = t->buf;
            s = t->dev;
        }
    }
    if (!src) /* plan_reruns() saw to it that an earlier re-run made it */
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "graph: re-running after a device failure: version %llu of buffer "
                         "data %zu is nowhere",
                         (unsigned long long)v, i);
    if (src == dst)
        return CLF_SUCCESS;
    clf_event *ev = NULL;
    clf_status st = clf_copy_async(dst, 0, src, 0, d->buf->size, NULL, 0, &ev);
    if (st)
        return clf__prefix_error(st, "copying a %zu-byte buffer from device %zu to %zu: ",
                                 d->buf->size, s, dev);
    if ((st = clf__graph_copy_done(g, ev, s, dev, d->buf->size)) != CLF_SUCCESS)
        return st;
    return clf__graph_hold(g, ev);
}

/* Re-run node p, step 0: the buffers its arguments take on its device, with the versions
 * it reads copied there (held). */
static clf_status rerun_inputs(clf_graph *g, size_t p)
{
    clf__gnode *n = &g->nodes[p];
    size_t dev = n->device;
    free(g->rbuf);
    g->rbuf = calloc(n->nargs ? n->nargs : 1, sizeof *g->rbuf);
    if (!g->rbuf)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    clf_status st = CLF_SUCCESS;
    for (size_t a = 0; a < n->nargs && !st; a++) {
        if (n->args[a].a.kind != CLF_ARG_KIND_BUFFER)
            continue;
        size_t i = n->args[a].data;
        clf__gdata *d = &g->data[i];
        if (!clf__graph_first_use(n, a)) { /* the same buffer as its first argument */
            for (size_t b = 0; b < a; b++)
                if (n->args[b].a.kind == CLF_ARG_KIND_BUFFER && n->args[b].data == i) {
                    g->rbuf[a] = g->rbuf[b];
                    break;
                }
            continue;
        }
        uint64_t vin, vout;
        arg_versions(n, a, &vin, &vout);
        clf_buffer *dst = NULL;
        if (vout == d->cur || (vout == CLF__GVER_NONE && vin == d->cur)) {
            /* The current version: into the graph's copy there (not current now: it was
             * lost, or it is read there as it is). */
            st = clf__graph_replica(g, d, dev, &dst);
        } else if (vout == CLF__GVER_NONE && d->rep[dev] && d->ver[dev] == vin) {
            dst = d->rep[dev];
        } else {
            /* An older version: a buffer of its own, not to overwrite a current copy. */
            clf__gtmp *t = vout == CLF__GVER_NONE ? tmp_find(g, i, vin, dev) : NULL;
            if (t) {
                g->rbuf[a] = t->buf;
                continue;
            }
            if ((st = tmp_new(g, i, vout != CLF__GVER_NONE ? vout : vin, dev, &t)) == CLF_SUCCESS)
                dst = t->buf;
        }
        if (!st && vin != CLF__GVER_NONE && !(dst == d->rep[dev] && d->ver[dev] == vin))
            st = copy_version(g, i, vin, dev, dst);
        if (!st && dst == d->rep[dev] && vin != CLF__GVER_NONE) {
            d->ver[dev] = vin;
            d->valid[dev] = vin == d->cur;
            d->vev[dev] = NULL; /* complete before anything reads it: the job waits */
        }
        g->rbuf[a] = dst;
    }
    return st;
}

/* Step 1: its kernel, once its inputs are there (held); what it wrote current again. */
static clf_status rerun_kernel(clf_graph *g, size_t p)
{
    clf__gnode *n = &g->nodes[p];
    size_t dev = n->device;
    clf_arg *args = calloc(n->nargs ? n->nargs : 1, sizeof *args);
    if (!args)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    char lost[96] = "";
    size_t used = 0;
    for (size_t a = 0; a < n->nargs; a++) {
        args[a] = n->args[a].a;
        if (args[a].kind != CLF_ARG_KIND_BUFFER)
            continue;
        args[a].host = g->rbuf[a];
        uint64_t vin, vout;
        arg_versions(n, a, &vin, &vout);
        if (vout != CLF__GVER_NONE && clf__graph_first_use(n, a) && used < sizeof lost) {
            int k = snprintf(lost + used, sizeof lost - used, "%s%zu", used ? ", " : "",
                             n->args[a].data);
            used += k > 0 ? (size_t)k : 0;
        }
    }
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = n->kernel;
    kd.dims = n->desc.dims;
    memcpy(kd.global, n->desc.global, sizeof kd.global);
    memcpy(kd.local, n->desc.local, sizeof kd.local);
    clf_event *ev = NULL;
    clf_status st = clf_kernel_enqueue(g->fleet, g->prog, dev, &kd, args, n->nargs, NULL, 0, &ev);
    free(args);
    if (st)
        return clf__prefix_error(st, "re-running graph node %zu ('%s') on device %zu: ", p,
                                 n->kernel, dev);
    /* Its event from now on (timed in the report); the first run's stays in the run's list. */
    clf_event_release(n->ev);
    n->ev = NULL;
    clf_event_release(n->kev);
    n->kev = NULL;
    if ((st = clf__graph_keep(g, ev, &n->ev)) != CLF_SUCCESS ||
        (st = clf__graph_hold(g, ev)) != CLF_SUCCESS)
        return st;
    for (size_t a = 0; a < n->nargs; a++) {
        if (n->args[a].a.kind != CLF_ARG_KIND_BUFFER || !clf__graph_first_use(n, a))
            continue;
        size_t i = n->args[a].data;
        clf__gdata *d = &g->data[i];
        uint64_t vin, vout;
        arg_versions(n, a, &vin, &vout);
        if (vout == CLF__GVER_NONE)
            continue;
        if (g->rbuf[a] == d->rep[dev]) { /* else a temporary buffer, labelled vout */
            d->ver[dev] = vout;
            d->valid[dev] = vout == d->cur;
            d->vev[dev] = NULL; /* the job waits for it before anything reads it */
        }
    }
    n->rerun = 1;
    g->rep.fault_rerun++;
    size_t at = strlen(n->why);
    snprintf(n->why + at, sizeof n->why - at, "; re-run on device %zu after a device failed",
             dev);
    clf__log(CLF_LOG_DEBUG,
             "graph node %zu '%s' re-run on device %zu: it wrote buffer data %s, whose version "
             "was lost with a failed device and is needed",
             p, n->kernel, dev, lost);
    return CLF_SUCCESS;
}

/* Step A: write off the newly failed devices, plan again, and hold every queued command. */
static clf_status write_off_and_replan(clf_graph *g, char *cause, size_t len)
{
    size_t idx = g->next, nn = g->nnodes;
    snprintf(cause, len, "%s", clf_last_error());
    char devs[64] = "";
    size_t used = 0;
    for (size_t k = 0; k < g->ndev; k++) {
        char why[160];
        if (g->dead[k] || !clf__device_failed(g->fleet, k, why, sizeof why))
            continue;
        write_off(g, k);
        int w = snprintf(devs + used, sizeof devs - used, "%s%zu", used ? ", " : "", k);
        used = w > 0 && used + (size_t)w < sizeof devs ? used + (size_t)w : used;
        clf__log(CLF_LOG_DEBUG, "graph: device %zu failed before node %zu was queued (%s): its "
                 "copies dropped, the nodes not yet queued planned again", k, idx, why);
    }
    size_t live = 0;
    for (size_t k = 0; k < g->ndev; k++)
        live += !g->dead[k];
    if (!live)
        return clf__fail(CLF_ERROR_DEVICE_FAILED, "graph: every device of the fleet failed: %s",
                         cause);
    size_t *old = malloc((nn ? nn : 1) * sizeof *old);
    if (!old)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    for (size_t i = 0; i < nn; i++)
        old[i] = g->nodes[i].device;
    clf_status st = clf__graph_plan(g);
    if (st) {
        free(old);
        return clf__prefix_error(st, "graph: planning again after a device failed: ");
    }
    /* Queued nodes stay where they were queued, but for those on a failed device: their new
     * places are where they would be re-run. */
    for (size_t i = 0; i < nn; i++) {
        clf__gnode *n = &g->nodes[i];
        if (n->kind != CLF__GNODE_WHOLE)
            continue;
        if (i < idx && !g->dead[old[i]]) {
            n->device = old[i];
        } else if (i >= idx && g->dead[old[i]]) {
            g->rep.fault_moved++;
            size_t at = strlen(n->why);
            snprintf(n->why + at, sizeof n->why - at, "; moved from device %zu, which failed",
                     old[i]);
            clf__log(CLF_LOG_DEBUG, "graph node %zu '%s' moved from failed device %zu to "
                     "device %zu", i, n->kernel, old[i], n->device);
        }
    }
    free(old);
    /* The plan now places the nodes before idx where they ran, not where it chose: no run
     * may reuse it (without CLF_GRAPH_KEEP_COPIES the next run's key is the same). */
    g->plan_patched = 1;
    for (size_t i = 0; i < g->evs.n && !st; i++)
        st = clf__graph_hold(g, g->evs.ev[i]);
    return st;
}

/* The device of a command the run queued (its event e): a node's kernel (the node's device)
 * or a copy (its destination); SIZE_MAX when e is neither. *node: the node, or NULL. */
static size_t event_device(clf_graph *g, const clf_event *e, clf__gnode **node)
{
    *node = NULL;
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].kind == CLF__GNODE_WHOLE && g->nodes[i].ev == e) {
            *node = &g->nodes[i];
            return g->nodes[i].device;
        }
    for (size_t j = 0; j < g->ncev; j++)
        if (g->cev[j] == e)
            return g->cdev[j];
    return SIZE_MAX;
}

/* Step A's wait is over: every command queued so far completed. One that failed on a device
 * just written off was expected (what it wrote is recomputed: plan_reruns()); its event
 * leaves the run's list, which would otherwise fail the run at its end, and a node's leaves
 * the node, which nothing may wait for now. A failure anywhere else (a copy from the lost
 * device into a live one, a command that waited for one there) left a live device with
 * contents the versions do not describe: the run fails now, naming it. */
static clf_status sort_statuses(clf_graph *g, const char *cause)
{
    size_t keep = 0;
    clf_status st = CLF_SUCCESS;
    for (size_t i = 0; i < g->evs.n; i++) {
        clf_event *e = g->evs.ev[i];
        clf_status s = st ? CLF_SUCCESS : clf_event_wait(e); /* completed: at once */
        if (s == CLF_SUCCESS) {
            g->evs.ev[keep++] = e;
            continue;
        }
        clf__gnode *n;
        size_t dev = event_device(g, e, &n);
        if (dev == SIZE_MAX || !g->dead[dev]) {
            if (dev == SIZE_MAX)
                st = clf__prefix_error(s, "graph: while recovering from a failed device (%s), "
                                       "another command of the run failed: ", cause);
            else
                st = clf__prefix_error(s, "graph: while recovering from a failed device (%s), "
                                       "a command on device %zu, which did not fail, failed "
                                       "too: ", cause, dev);
            g->evs.ev[keep++] = e;
            continue;
        }
        clf__log(CLF_LOG_DEBUG, "graph: a %s on failed device %zu failed as expected (%s)",
                 n ? "node's kernel" : "copy", dev, clf_status_name(s));
        if (n) {
            clf_event_release(n->ev);
            n->ev = NULL;
            clf_event_release(n->kev);
            n->kev = NULL;
        }
        clf_event_release(e);
    }
    g->evs.n = keep;
    return st;
}

int clf__graph_recover(clf_graph *g)
{
    char *cause = g->fault_cause;
    clf_status st = CLF_SUCCESS;
    if (g->fault_phase == 0) {
        /* A replay would need the partials and scratch instances the device held, which
         * the versions do not track (redux.c). */
        if (g->has_redux || g->has_scratch) {
            clf__graph_failed(g, clf__prefix_error(CLF_ERROR_DEVICE_FAILED,
                                                   "graph node %zu: a device failed in a graph "
                                                   "with reduction or scratch accesses, which "
                                                   "is not recovered: ", g->next));
            return -1;
        }
        if (++g->recoveries > g->ndev + 1) {
            clf__graph_failed(g, clf__prefix_error(CLF_ERROR_DEVICE_FAILED,
                                                   "graph node %zu failed after %zu recoveries "
                                                   "from failed devices: ",
                                                   g->next, g->recoveries - 1));
            return -1;
        }
        g->gathered = 0;
        g->fault_phase = 1;
        if ((st = write_off_and_replan(g, cause, sizeof g->fault_cause)) != CLF_SUCCESS)
            goto fail;
        if (clf__graph_defer(g))
            return 1;
    }
    if (g->fault_phase == 1) {
        /* Every queued command completed: their statuses are read from the run's list. */
        (void)clf__evlist_finish(&g->hold, CLF_SUCCESS);
        if ((st = sort_statuses(g, cause)) != CLF_SUCCESS ||
            (st = plan_reruns(g, cause)) != CLF_SUCCESS)
            goto fail;
        g->fault_phase = 2;
        g->rstep = 0;
    }
    for (;;) {
        /* What the last step queued completed: a failure there ends the run (or, a device's,
         * starts the recovery again). */
        if ((st = clf__evlist_finish(&g->hold, CLF_SUCCESS)) != CLF_SUCCESS)
            break;
        if (g->rcur == g->nrset)
            break;
        size_t p = g->rset[g->rcur];
        if (g->rstep == 0) {
            st = rerun_inputs(g, p);
            g->rstep = 1;
        } else {
            st = rerun_kernel(g, p);
            g->rstep = 0;
            g->rcur++;
        }
        if (st)
            break;
        if (clf__graph_defer(g))
            return 1;
    }
    g->rstep = 0;
    if (st && clf__graph_device_fault(g, g->next)) {
        /* Another device failed on the way: again from the start. What this step queued
         * stays held, and the next wait takes it in; the temporary buffers go (the commands
         * queued on them keep them). */
        clf__graph_tmp_free(g);
        g->fault_phase = 0;
        return clf__graph_recover(g);
    }
    if (st)
        goto fail;
    clf__graph_tmp_free(g);
    g->fault_phase = 0;
    return 0;
fail:
    clf__graph_failed(g, st);
    g->fault_phase = 0;
    return -1;
}

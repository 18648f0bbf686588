/*
 * Graphs: the report of a run (nodes, splits, copies and bytes per path, per-device busy
 * time, predicted against measured makespan), the per-node report, and the learning: the
 * median profiled time of each (kernel shape, device) of the run goes into the cost model
 * under the graph's key, so that the next plan predicts from measurements instead of the
 * compute-units guess, and a run measured far from its plan's predictions has the next
 * one plan again (learn_run()); the count of each copy a run makes (clf__graph_count_copy()).
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observe/observe.h"
#include "plan/perfmodel.h"

void clf__graph_count_copy(clf_graph *g, size_t s, size_t d, size_t bytes)
{
    clf_path path = CLF_PATH_STAGED;
    if (clf_transfer_path(&path, NULL, g->fleet, s, d) != CLF_SUCCESS)
        path = CLF_PATH_STAGED;
    g->rep.copies++;
    g->rep.copy_bytes += bytes;
    if ((size_t)path < CLF__ARRAY_LEN(g->rep.path_copies)) {
        g->rep.path_copies[path]++;
        g->rep.path_bytes[path] += bytes;
    }
}

/* Seconds a completed OpenCL command took on its device, or 0 when not profiled. */
static double profiled_s(const clf_event *e)
{
    uint64_t t0, t1;
    if (!e || !e->ev || !clf__event_profile(e->ev, &t0, &t1) || t1 < t0)
        return 0;
    return (double)(t1 - t0) * 1e-9;
}

/* A prediction is far off when the median measured time of a (kernel, device) of the run
 * is over twice or under half the predicted one, and by more than this many seconds (a
 * few-microsecond kernel is off by 2x from the host's noise alone, and placing it anywhere
 * costs next to nothing). */
#define STALE_RATIO 2.0
#define STALE_FLOOR_S 100e-6

/*
 * The learning, per (kernel key, device) of the run's whole nodes: one sample, the median
 * of their measured times, into the model's launch-level window (whose median over the
 * last runs is the prediction). One per run rather than one per node: the window holds 8
 * samples, and a run's nodes in recording order would leave only its last few there, those
 * that ran after the host had submitted everything and so ran faster than the rest (the
 * tile products of the bench: 0.17 ms in the window, 0.23 ms over the run). And not into
 * the chunk line: nodes of one key all have the same items (the key holds the shape), so
 * no line could be fitted from them, and one sample of another size there bends it for
 * all. A key the model does not know yet first gets its first node's time, which the model
 * drops as cold (program builds, first touch), so that the run's median counts.
 *
 * Returns whether some group measured far from the plan's predictions (their medians): the
 * next run then plans again on what the model has learned since, though the set of
 * measured pairs is unchanged. O(nodes x groups), once per run. keys[i]: node i's kernel
 * key; meas, pred: scratch of nnodes.
 */
static int learn_run(clf_graph *g, clf__perf_model *m, char (*keys)[320], double *meas,
                     double *pred)
{
    int off = 0;
    char dkey[400];
    unsigned char *done = calloc(g->nnodes ? g->nnodes : 1, 1);
    if (!done)
        return 0; /* no memory: nothing learned this run, the plan kept */
    for (size_t i = 0; i < g->nnodes; i++) {
        const clf__gnode *n = &g->nodes[i];
        if (done[i] || n->kind != CLF__GNODE_WHOLE || n->kernel_s <= 0)
            continue;
        size_t k = 0;
        for (size_t j = i; j < g->nnodes; j++) {
            const clf__gnode *o = &g->nodes[j];
            if (done[j] || o->kind != CLF__GNODE_WHOLE || o->kernel_s <= 0 ||
                o->device != n->device || strcmp(keys[j], keys[i]))
                continue;
            done[j] = 1;
            meas[k] = o->kernel_s;
            pred[k++] = o->pred_exec;
        }
        clf__perf_device_key(g->fleet, n->device, dkey, sizeof dkey);
        clf__perf_fit f;
        if (!clf__perf_get(m, keys[i], dkey, &f))
            (void)clf__perf_record(m, keys[i], dkey, n->items, n->kernel_s);
        double mm = clf__median(meas, k), mp = clf__median(pred, k);
        (void)clf__perf_record(m, keys[i], dkey, n->items, mm);
        if (mp > 0 && fabs(mm - mp) > STALE_FLOOR_S &&
            (mm > STALE_RATIO * mp || mp > STALE_RATIO * mm)) {
            if (!off)
                clf__log(CLF_LOG_DEBUG, "graph: '%s' on device %zu measured %.3g ms (median of "
                         "%zu nodes), predicted %.3g ms: the next run plans again", n->kernel,
                         n->device, mm * 1e3, k, mp * 1e3);
            off = 1;
        }
    }
    free(done);
    return off;
}

/* The run on the fleet's track of the trace, and its host callbacks on the host's (the
 * kernels and copies are traced by the command path already, under their own names). */
static void trace_run(clf_graph *g)
{
    if (!clf__trace_on(g->fleet))
        return;
    char name[96];
    clf__rec r = {0};
    r.kind = CLF__REC_LAUNCH;
    r.flags = CLF__REC_HOST_TIME | CLF__REC_TRACE_ONLY;
    r.track = 1;
    r.strategy = (clf_strategy)255; /* none: a graph has no launch strategy */
    for (size_t i = 0; i < g->nnodes; i++) {
        const clf__gnode *n = &g->nodes[i];
        if (n->kind != CLF__GNODE_HOST || !n->host_t1)
            continue;
        snprintf(name, sizeof name, "graph node %zu: host callback", i);
        r.name = name;
        r.t0 = n->host_t0;
        r.t1 = n->host_t1 > n->host_t0 ? n->host_t1 : n->host_t0 + 1;
        clf__metrics_record(g->fleet, SIZE_MAX, &r, 1);
    }
    uint64_t end = clf__mono_ns();
    snprintf(name, sizeof name, "graph run (%zu nodes, %zu copies)", g->nnodes, g->rep.copies);
    r.name = name;
    r.t0 = g->t0_ns;
    r.t1 = end > g->t0_ns ? end : g->t0_ns + 1;
    r.a0 = (int64_t)g->nnodes;
    r.a1 = (int64_t)g->ndev;
    clf__metrics_record(g->fleet, SIZE_MAX, &r, 1);
}

void clf__graph_report_run(clf_graph *g, clf_status st)
{
    clf_graph_report *r = &g->rep;
    r->makespan_s = clf__now() - g->t0;
    r->runs = ++g->runs;
    r->nodes = g->nnodes;
    r->edges = g->edges;
    r->plan_reused = g->plan_reused;
    r->predicted_makespan_s = g->plan_makespan;
    r->critical_path_s = g->plan_critical;
    r->guessed = g->plan_guessed;
    clf__perf_model *m = st == CLF_SUCCESS ? clf__fleet_perf(g->fleet) : NULL;
    /* The nodes' keys and two scratch vectors for learn_run() (none: nothing learned). */
    char(*keys)[320] = m && g->nnodes ? malloc(g->nnodes * sizeof *keys) : NULL;
    double *meas = keys ? malloc(g->nnodes * sizeof *meas) : NULL;
    double *pred = meas ? malloc(g->nnodes * sizeof *pred) : NULL;
    for (size_t i = 0; i < g->nnodes; i++) {
        clf__gnode *n = &g->nodes[i];
        n->kernel_s = 0;
        if (n->kind == CLF__GNODE_HOST) {
            r->host_nodes++;
            continue;
        }
        if (n->kind == CLF__GNODE_WHOLE) {
            r->whole_nodes++;
            if (n->device < CLF_MAX_LAUNCH_DEVICES)
                r->device_nodes[n->device]++;
        } else {
            r->split_nodes++;
        }
        if (keys)
            clf__graph_kernel_key(g, n, keys[i], sizeof keys[i]);
        if (n->ev) {
            double s = profiled_s(n->kev ? n->kev : n->ev);
            n->kernel_s = s;
            if (n->device < CLF_MAX_LAUNCH_DEVICES)
                r->device_busy_s[n->device] += s;
        }
        for (size_t p = 0; p < n->npart_ev; p++) {
            double s = profiled_s(n->part_ev[p]);
            size_t d = n->part_dev[p];
            if (s > n->kernel_s)
                n->kernel_s = s;
            if (d < CLF_MAX_LAUNCH_DEVICES) {
                r->device_busy_s[d] += s;
                r->device_nodes[d]++;
            }
        }
        clf_event_release(n->ev);
        n->ev = NULL;
        clf_event_release(n->kev);
        n->kev = NULL;
        for (size_t p = 0; p < n->npart_ev; p++)
            clf_event_release(n->part_ev[p]);
        free(n->part_ev);
        free(n->part_dev);
        n->part_ev = NULL;
        n->part_dev = NULL;
        n->npart_ev = 0;
    }
    for (size_t i = 0; i < g->ncev; i++) {
        if (g->cdev[i] < CLF_MAX_LAUNCH_DEVICES)
            r->device_busy_s[g->cdev[i]] += profiled_s(g->cev[i]);
        clf_event_release(g->cev[i]);
    }
    g->ncev = 0;
    if (pred && learn_run(g, m, keys, meas, pred))
        g->plan_stale = 1;
    free(keys);
    free(meas);
    free(pred);
    trace_run(g);
    clf__log(CLF_LOG_DEBUG,
             "graph run: %zu nodes (%zu whole, %zu split, %zu host), %zu copies (%llu bytes), "
             "predicted %.3g ms, measured %.3g ms%s%s",
             r->nodes, r->whole_nodes, r->split_nodes, r->host_nodes, r->copies,
             (unsigned long long)r->copy_bytes, r->predicted_makespan_s * 1e3,
             r->makespan_s * 1e3, r->plan_reused ? ", plan reused" : "",
             st ? ", failed" : "");
}

clf_status clf_graph_report_get(clf_graph_report *out, const clf_graph *g)
{
    if (!out || !g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_report_get: %s is NULL",
                         !out ? "out" : "the graph");
    clf_graph *gm = (clf_graph *)g; /* the lock only */
    pthread_mutex_lock(&gm->lock);
    int busy = g->running;
    if (!busy)
        *out = g->rep;
    pthread_mutex_unlock(&gm->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY, "clf_graph_report_get: a run is in flight");
    return CLF_SUCCESS;
}

clf_status clf_graph_node_info(clf_graph_node_report *out, const clf_graph *g, size_t node)
{
    if (!out || !g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_node_info: %s is NULL",
                         !out ? "out" : "the graph");
    /* Read under the lock that clf_graph_run() takes to start, in one section with the check:
     * a run started from another thread in between would plan over the node's placement
     * (and an add from another thread may move g->nodes). */
    clf_graph *gm = (clf_graph *)g; /* the lock only */
    pthread_mutex_lock(&gm->lock);
    clf_status st = CLF_SUCCESS;
    if (g->running) {
        st = clf__fail(CLF_ERROR_BUSY, "clf_graph_node_info: a run is in flight");
    } else if (node >= g->nnodes || node >= g->plan_nodes || !g->plan_key) {
        st = clf__fail(CLF_ERROR_OUT_OF_RANGE,
                       "clf_graph_node_info: node %zu: the graph has %zu nodes, %zu placed",
                       node, g->nnodes, g->plan_key ? g->plan_nodes : 0);
    } else {
        const clf__gnode *n = &g->nodes[node];
        memset(out, 0, sizeof *out);
        out->device = n->kind == CLF__GNODE_WHOLE ? n->device : CLF_GRAPH_ANY_DEVICE;
        out->split = n->kind == CLF__GNODE_SPLIT;
        out->host = n->kind == CLF__GNODE_HOST;
        out->manual = n->kind == CLF__GNODE_WHOLE && n->desc.device != CLF_GRAPH_ANY_DEVICE;
        out->predicted_start_s = n->pred_start;
        out->predicted_finish_s = n->pred_finish;
        out->kernel_s = n->kernel_s;
        snprintf(out->why, sizeof out->why, "%s", n->why);
    }
    pthread_mutex_unlock(&gm->lock);
    return st;
}

/*
 * Graphs: placement by the cost model (HEFT's list scheduling, as StarPU's dmda does it).
 *
 * The nodes are taken in recording order (a topological order). A node over buffers may run
 * on any device that has not failed: for each, its predicted finish is the latest of the
 * device's ready time, its predecessors' finish and the arrival of every buffer it reads
 * (a copy from the device that holds a valid copy soonest, bytes over the link's bandwidth),
 * plus its predicted execution time (the learned model of (kernel, device), else a guess
 * from compute units x clock). The least predicted finish wins, each weighed with its
 * execution's measured spread (a pessimistic finish; see plan_whole()). A node over arrays runs on
 * the arrays' parts (owner computes): each part's device is busy for its share. A host node
 * takes no device time but needs its buffers back home. Memory: a device whose budget
 * cannot hold a node's buffers is no candidate for it, and one that must evict first pays
 * the predicted write-backs (make_room(), the run's choice of victims simulated). The plan
 * is kept, keyed by the shapes of the graph's data, the budgets and the set of (kernel,
 * device) pairs the model has measured, and reused until one of them changes, a node is
 * added, or a run measured its kernels far from what the plan predicted (report.c sets
 * plan_stale): a plan made on guesses or on samples since replaced does not live forever.
 */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/perfmodel.h"

/* FNV-1a over the shapes a plan depends on. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

void clf__graph_kernel_key(const clf_graph *g, const clf__gnode *n, char *buf, size_t len)
{
    /* Its own key: a whole node's units are work items, not a launch's split units. And a
     * key per shape (the range, the buffers' sizes): a node's time is not proportional to
     * its items across shapes (a tile product of twice the side has 4x the items and 8x
     * the work), so nodes of one kernel over other sizes must not share samples. They did,
     * and a single sample of 128-wide tiles kept in the model's file made the 64-wide ones
     * predicted at 3x their time. Scalars are left out: an index passed by value would
     * give each node its own key, each guessed until measured twice. */
    uint64_t h = mix(0xcbf29ce484222325ull, n->items);
    for (unsigned k = 0; k < n->desc.dims && k < 3; k++)
        h = mix(h, n->desc.global[k]);
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].a.kind == CLF_ARG_KIND_BUFFER && n->args[i].data != SIZE_MAX)
            h = mix(h, g->data[n->args[i].data].buf->size);
    snprintf(buf, len, "graph:%s@%.16s#%016llx", n->kernel, g->prog->hash,
             (unsigned long long)h);
}

typedef struct plan_ctx {
    clf_graph *g;
    clf__perf_model *m;
    char (*dkey)[400];
    double *ready; /* per device: when it is free */
    int guessed;
    /* Scratch of the eviction's simulation, per data (make_room()). */
    unsigned char *held, *cur, *only, *taken;
} plan_ctx;

/* Predicted seconds of a copy of bytes from device s to device d. */
static double copy_s(plan_ctx *c, size_t s, size_t d, size_t bytes)
{
    if (s == d || !bytes)
        return 0;
    clf_path path = CLF_PATH_STAGED;
    if (clf_transfer_path(&path, NULL, c->g->fleet, s, d) != CLF_SUCCESS)
        path = CLF_PATH_STAGED;
    if (path == CLF_PATH_SAME_DEVICE || path == CLF_PATH_UNIFIED)
        return CLF__GUESS_CMD_S + (double)bytes / CLF__GUESS_LOCAL_BPS;
    return CLF__GUESS_CMD_S +
           (double)bytes / clf__perf_link_bps(c->m, c->dkey[s], CLF__PERF_LINK_D2H, 0) +
           (double)bytes / clf__perf_link_bps(c->m, c->dkey[d], CLF__PERF_LINK_H2D, 0);
}

/* Predicted seconds of items of node n on device d; *guess set when not learned; *spread
 * (when not NULL): the relative spread of what was measured (the interquartile range of
 * the samples' rates over their median, at most 1; 0 when guessed). */
static double exec_s(plan_ctx *c, const clf__gnode *n, size_t d, uint64_t items, int *guess,
                     double *spread)
{
    char key[320];
    clf__graph_kernel_key(c->g, n, key, sizeof key);
    clf__perf_fit f;
    if (spread)
        *spread = 0;
    if (c->m && clf__perf_get(c->m, key, c->dkey[d], &f)) {
        double t = clf__perf_predict(&f, items);
        if (t >= 0 && isfinite(t)) {
            if (spread && f.units_per_s > 0 && isfinite(f.iqr))
                *spread = fmin(1.0, fmax(0.0, f.iqr / f.units_per_s));
            return t;
        }
    }
    /* The model's guess (millions of items per second), which the first measured run
     * corrects. */
    *guess = 1;
    c->guessed = 1;
    double speed = clf__perf_guess_speed(&c->g->fleet->dev[d].info) * 1e6;
    return CLF__GUESS_CMD_S + (double)items / speed;
}

/* When buffer data d can be on device dev, and from where (*from; dev itself when valid). */
static double arrival(plan_ctx *c, clf__gdata *d, size_t dev, size_t *from)
{
    if (d->sim_valid[dev]) {
        *from = dev;
        return d->sim_t[dev];
    }
    double best = INFINITY;
    *from = d->buf->device;
    for (size_t s = 0; s < c->g->ndev; s++)
        if (d->sim_valid[s]) {
            double t = d->sim_t[s] + copy_s(c, s, dev, d->buf->size);
            if (t < best) {
                best = t;
                *from = s;
            }
        }
    return best;
}

static double deps_ready(const clf_graph *g, const clf__gnode *n)
{
    double t = 0;
    for (size_t i = 0; i < n->npreds; i++)
        t = fmax(t, g->nodes[n->preds[i]].pred_finish);
    return t;
}

/* The data's simulated state after node n ran on dev (SIZE_MAX: the host, at home). */
static void commit_buffers(plan_ctx *c, clf__gnode *n, size_t dev, double finish)
{
    for (size_t i = 0; i < n->nargs; i++) {
        if (n->args[i].a.kind != CLF_ARG_KIND_BUFFER)
            continue;
        clf__gdata *d = &c->g->data[n->args[i].data];
        size_t at = dev == SIZE_MAX ? d->buf->device : dev, from;
        if ((n->args[i].a.flags & CLF_ARG_READ) && !d->sim_valid[at]) {
            d->sim_t[at] = arrival(c, d, at, &from);
            d->sim_valid[at] = 1;
        }
        if (n->args[i].a.flags & CLF_ARG_WRITE) {
            memset(d->sim_valid, 0, c->g->ndev);
            d->sim_valid[at] = 1;
            d->sim_t[at] = finish;
        }
        if (n->args[i].a.flags & CLF_ARG_REDUCTION) {
            /* The combine (redux.c) leaves it current on its own device only, once the last
             * reducer has finished (the combine's own time and copies are not predicted). */
            size_t h = d->buf->device;
            double t = d->sim_valid[h] ? fmax(finish, d->sim_t[h]) : finish;
            memset(d->sim_valid, 0, c->g->ndev);
            d->sim_valid[h] = 1;
            d->sim_t[h] = t;
        }
    }
}

/* The simulated evictions that make room for need more bytes of node n's copies on dev:
 * the seconds of the write-backs they cause (their bytes in *wb_bytes). commit: apply them
 * to the simulated copies; else only predict (the placement's cost of that device). */
static double make_room(plan_ctx *c, size_t dev, size_t n, uint64_t need, int commit,
                        uint64_t *wb_bytes)
{
    clf_graph *g = c->g;
    uint64_t res = g->mem[dev].sim_resident, budget = clf__graph_budget(g, dev);
    double s = 0;
    *wb_bytes = 0;
    if (res + need <= budget)
        return 0;
    memset(c->taken, 0, g->ndata);
    clf__graph_victim_state(g, dev, CLF__GMEM_PLAN, c->held, c->cur, c->only);
    while (res + need > budget) {
        int wb;
        size_t v = clf__graph_victim(g, dev, n, c->held, c->cur, c->only, c->taken, &wb);
        if (v == SIZE_MAX)
            break; /* cannot happen: the node fits beside the partials (fits()) */
        clf__gdata *d = &g->data[v];
        size_t home = d->buf->device;
        c->taken[v] = 1;
        res -= d->buf->size;
        double w = wb ? copy_s(c, dev, home, d->buf->size) : 0;
        s += w;
        *wb_bytes += wb ? d->buf->size : 0;
        if (!commit)
            continue;
        if (wb) {
            d->sim_valid[home] = 1;
            d->sim_t[home] = d->sim_t[dev] + w;
        }
        d->sim_rep[dev] = 0;
        d->sim_valid[dev] = 0;
        g->mem[dev].sim_resident -= d->buf->size;
    }
    return s;
}

/* The reduction phases node n ends (it uses the data otherwise, clf__graph_flush()): their
 * partials released, as the run releases them after the combine. */
static void end_phases(clf_graph *g, const clf__gnode *n)
{
    for (size_t i = 0; i < n->nargs; i++) {
        if (n->args[i].a.kind != CLF_ARG_KIND_BUFFER || (n->args[i].a.flags & CLF_ARG_REDUCTION))
            continue;
        clf__gdata *d = &g->data[n->args[i].data];
        for (size_t k = 0; k < g->ndev; k++)
            if (d->sim_part[k]) {
                d->sim_part[k] = 0;
                g->mem[k].sim_resident -= d->buf->size;
            }
    }
}

/* Whether node n's buffers fit device dev's budget and largest allocation at all, beside the
 * partials of reduction phases still open there (never evicted: make_room() could not make
 * the room, and the run would fail the node); else a line on why not in why. */
static int fits(const clf_graph *g, const clf__gnode *n, size_t dev, char *why, size_t len)
{
    uint64_t big, ws = clf__graph_node_bytes(g, n, dev, CLF__GMEM_NONE, &big);
    uint64_t budget = clf__graph_budget(g, dev), max = clf__graph_max_alloc(g, dev);
    uint64_t parts = clf__graph_partial_bytes(g, n, dev, CLF__GMEM_PLAN);
    if (big > max) {
        snprintf(why, len, "device %zu: a %llu-byte buffer, over its largest allocation of %llu",
                 dev, (unsigned long long)big, (unsigned long long)max);
        return 0;
    }
    if (ws > budget) {
        snprintf(why, len, "device %zu: %llu bytes of copies, over its budget of %llu", dev,
                 (unsigned long long)ws, (unsigned long long)budget);
        return 0;
    }
    if (ws + parts > budget) {
        snprintf(why, len, "device %zu: %llu bytes of copies beside %llu of open reductions' "
                 "partials (kept until their phases end), over its budget of %llu", dev,
                 (unsigned long long)ws, (unsigned long long)parts,
                 (unsigned long long)budget);
        return 0;
    }
    return 1;
}

static int device_usable(const clf_graph *g, size_t d)
{
    return !g->fleet->dev[d].failed;
}

static clf_status plan_whole(plan_ctx *c, clf__gnode *n)
{
    clf_graph *g = c->g;
    size_t idx = (size_t)(n - g->nodes);
    double dep = deps_ready(g, n);
    size_t best = SIZE_MAX;
    double best_f = INFINITY, best_s = 0, best_ex = 0, best_score = INFINITY;
    size_t best_bytes = 0;
    char cand[200] = "", refused[400] = "";
    size_t used = 0, rused = 0, usable = 0;
    int best_guess = 0;
    uint64_t best_wb = 0;
    /* A node placed by hand on a device that failed goes where the scheduler says: the
     * device's nodes go to the others (fault.c). */
    size_t want = n->desc.device;
    if (want != CLF_GRAPH_ANY_DEVICE && !device_usable(g, want))
        want = CLF_GRAPH_ANY_DEVICE;
    for (size_t d = 0; d < g->ndev; d++) {
        if (want != CLF_GRAPH_ANY_DEVICE && d != want)
            continue;
        if (want == CLF_GRAPH_ANY_DEVICE && !device_usable(g, d))
            continue;
        usable++;
        char why[160];
        if (!fits(g, n, d, why, sizeof why)) {
            if (rused < sizeof refused) {
                int k = snprintf(refused + rused, sizeof refused - rused, "%s%s",
                                 rused ? "; " : "", why);
                rused += k > 0 ? (size_t)k : 0;
            }
            continue;
        }
        /* Room for its new copies: the write-backs that eviction causes cost their time. */
        uint64_t wb_bytes;
        double wb = make_room(c, d, idx, clf__graph_node_bytes(g, n, d, CLF__GMEM_PLAN, NULL),
                              0, &wb_bytes);
        double start = fmax(c->ready[d], dep);
        size_t bytes = 0;
        for (size_t i = 0; i < n->nargs; i++) {
            if (n->args[i].a.kind != CLF_ARG_KIND_BUFFER || !(n->args[i].a.flags & CLF_ARG_READ))
                continue;
            clf__gdata *bd = &g->data[n->args[i].data];
            size_t from;
            start = fmax(start, arrival(c, bd, d, &from));
            if (from != d)
                bytes += bd->buf->size;
        }
        int guess = 0;
        double spread;
        double ex = exec_s(c, n, d, n->items, &guess, &spread);
        start += wb;
        double fin = start + ex;
        /* Compared by a pessimistic finish: the execution's measured spread added. A
         * device many times slower wins a node only when it finishes first by a margin
         * its own noise cannot eat: on a 50:1 pair, a product predicted 10.2 ms there
         * against 10.4 ms on the fast device went there and took 15 ms, and the chain
         * behind it set the makespan. On devices of one speed the terms are alike. */
        double score = fin + ex * spread;
        if (used < sizeof cand) {
            /* With the spread, when measured: "device 1 10.2 ms (spread 40%)". */
            char sp[32] = "";
            if (spread > 0)
                snprintf(sp, sizeof sp, " (spread %.0f%%)", spread * 100);
            int k = snprintf(cand + used, sizeof cand - used, "%sdevice %zu %.3g ms%s%s%s%s",
                             used ? ", " : "", d, fin * 1e3, sp, guess ? " (guessed)" : "",
                             bytes ? " +copies" : "", wb_bytes ? " +write-backs" : "");
            used += k > 0 ? (size_t)k : 0;
        }
        if (score < best_score || (score == best_score && bytes < best_bytes)) {
            best_score = score;
            best_ex = ex;
            best = d;
            best_f = fin;
            best_s = start;
            best_bytes = bytes;
            best_guess = guess;
            best_wb = wb_bytes;
        }
    }
    if (best == SIZE_MAX && usable) /* devices left, but its buffers fit none of them */
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "graph node %zu ('%s'): its buffers fit no device's memory budget "
                         "(clf_graph_set_memory_budget()): %s", idx, n->kernel, refused);
    if (best == SIZE_MAX) { /* every device failed: the run will say so */
        best = want != CLF_GRAPH_ANY_DEVICE ? want : 0;
        best_s = best_f = fmax(c->ready[best], dep);
    } else {
        /* Its copies there: room made as the run will make it, then allocated. */
        uint64_t wbb;
        (void)make_room(c, best, idx, clf__graph_node_bytes(g, n, best, CLF__GMEM_PLAN, NULL), 1,
                        &wbb);
        for (size_t i = 0; i < n->nargs; i++) {
            if (!clf__graph_first_use(n, i))
                continue;
            clf__gdata *bd = &g->data[n->args[i].data];
            if (n->args[i].a.flags & CLF_ARG_REDUCTION) {
                /* A partial, not a copy: never evicted, released when the phase ends. */
                if (!bd->sim_part[best]) {
                    bd->sim_part[best] = 1;
                    g->mem[best].sim_resident += bd->buf->size;
                }
            } else if (bd->buf->device != best && !bd->sim_rep[best]) {
                bd->sim_rep[best] = 1;
                g->mem[best].sim_resident += bd->buf->size;
            }
        }
    }
    n->device = best;
    n->pred_exec = best_ex;
    n->pred_start = best_s;
    n->pred_finish = best_f;
    c->ready[best] = best_f;
    commit_buffers(c, n, best, best_f);
    if (want != CLF_GRAPH_ANY_DEVICE)
        snprintf(n->why, sizeof n->why, "placed by hand on device %zu (predicted finish %.3g ms)",
                 best, best_f * 1e3);
    else if (n->desc.device != CLF_GRAPH_ANY_DEVICE)
        snprintf(n->why, sizeof n->why,
                 "placed by hand on device %zu, which failed; least predicted finish: %s",
                 n->desc.device, cand);
    else
        snprintf(n->why, sizeof n->why, "least predicted finish: %s", cand);
    clf__log(CLF_LOG_DEBUG, "graph node %zu '%s' (%llu items) -> device %zu: %s%s%s%s",
             idx, n->kernel, (unsigned long long)n->items, best, n->why,
             best_guess ? "; execution guessed from compute units x clock" : "",
             best_wb ? "; evictions there write back some bytes" : "",
             rused ? "; over budget elsewhere" : "");
    return CLF_SUCCESS;
}

/* The array whose parts a split node runs on: its first block or block-cyclic array. */
static const clf_array *split_array(const clf_graph *g, const clf__gnode *n)
{
    const clf_array *any = NULL;
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].a.kind == CLF_ARG_KIND_ARRAY) {
            const clf_array *a = g->data[n->args[i].data].arr;
            if (a->desc.dist != CLF_ARRAY_REPLICATED)
                return a;
            if (!any)
                any = a;
        }
    return any;
}

static void plan_split(plan_ctx *c, clf__gnode *n)
{
    clf_graph *g = c->g;
    const clf_array *a = split_array(g, n);
    double dep = deps_ready(g, n);
    n->pred_exec = 0;
    double start = INFINITY, fin = dep;
    uint64_t per_unit = n->items / (n->desc.global[n->desc.dims - 1]
                                         ? n->desc.global[n->desc.dims - 1] : 1);
    int guess = 0;
    for (size_t p = 0; a && p < a->nparts; p++) {
        const clf__array_part *q = &a->parts[p];
        size_t d = q->device;
        uint64_t units = a->desc.dist == CLF_ARRAY_REPLICATED ? n->items : per_unit * q->count;
        double s = fmax(c->ready[d], dep);
        double ex = exec_s(c, n, d, units, &guess, NULL);
        double f = s + ex;
        n->pred_exec = fmax(n->pred_exec, ex);
        c->ready[d] = f;
        start = fmin(start, s);
        fin = fmax(fin, f);
    }
    n->device = CLF_GRAPH_ANY_DEVICE;
    n->pred_start = isfinite(start) ? start : dep;
    n->pred_finish = fin;
    snprintf(n->why, sizeof n->why, "split over %zu array part%s (owner computes)%s",
             a ? a->nparts : 0, a && a->nparts == 1 ? "" : "s",
             guess ? "; execution guessed from compute units x clock" : "");
    clf__log(CLF_LOG_DEBUG, "graph node %zu '%s': %s; predicted finish %.3g ms",
             (size_t)(n - g->nodes), n->kernel, n->why, fin * 1e3);
}

static void plan_host(plan_ctx *c, clf__gnode *n)
{
    clf_graph *g = c->g;
    double t = deps_ready(g, n);
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].a.kind == CLF_ARG_KIND_BUFFER) {
            clf__gdata *d = &g->data[n->args[i].data];
            size_t from;
            t = fmax(t, arrival(c, d, d->buf->device, &from));
        }
    n->device = CLF_GRAPH_ANY_DEVICE;
    n->pred_exec = 0;
    n->pred_start = n->pred_finish = t;
    commit_buffers(c, n, SIZE_MAX, t);
    snprintf(n->why, sizeof n->why, "host callback (its buffers at home)");
}

static uint64_t shapes_key(const clf_graph *g)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = mix(h, g->nnodes);
    for (size_t i = 0; i < g->ndata; i++) {
        const clf__gdata *d = &g->data[i];
        if (!d->is_array) {
            h = mix(h, d->buf->size);
            h = mix(h, d->buf->device);
            continue;
        }
        h = mix(h, d->arr->nparts);
        for (size_t p = 0; p < d->arr->nparts; p++) {
            h = mix(h, d->arr->parts[p].device);
            h = mix(h, d->arr->parts[p].count);
        }
    }
    for (size_t d = 0; d < g->ndev; d++) {
        h = mix(h, (uint64_t)g->fleet->dev[d].failed);
        h = mix(h, clf__graph_budget(g, d)); /* a budget changes where nodes fit */
    }
    /* Where buffers start current: kept copies change the best placement. */
    h = mix(h, (uint64_t)clf__graph_keeps(g));
    for (size_t i = 0; clf__graph_keeps(g) && i < g->ndata; i++)
        for (size_t d = 0; !g->data[i].is_array && g->data[i].valid && d < g->ndev; d++)
            h = mix(h, g->data[i].valid[d]);
    return h ? h : 1; /* 0 means "no plan" */
}

/* Which (kernel, device) pairs of the graph the model has measured: a plan made while some
 * were guessed is made again once they are measured, and reused from then on. */
static uint64_t knowledge_key(plan_ctx *c)
{
    uint64_t h = 0x84222325cbf29ce4ull;
    if (!c->m)
        return h;
    char key[320];
    clf__perf_fit f;
    /* Every node (a lookup per device, no dedup by kernel: nodes of one kernel over other
     * shapes have keys of their own). */
    for (size_t i = 0; i < c->g->nnodes; i++) {
        const clf__gnode *n = &c->g->nodes[i];
        if (n->kind == CLF__GNODE_HOST)
            continue;
        clf__graph_kernel_key(c->g, n, key, sizeof key);
        for (size_t d = 0; d < c->g->ndev; d++)
            h = mix(h, (uint64_t)clf__perf_get(c->m, key, c->dkey[d], &f));
    }
    return h;
}

clf_status clf__graph_plan(clf_graph *g)
{
    plan_ctx c = {.g = g, .m = clf__fleet_perf(g->fleet)};
    c.dkey = calloc(g->ndev, sizeof *c.dkey);
    c.ready = calloc(g->ndev, sizeof *c.ready);
    size_t nd = g->ndata ? g->ndata : 1;
    c.held = calloc(nd, 1);
    c.cur = calloc(nd, 1);
    c.only = calloc(nd, 1);
    c.taken = calloc(nd, 1);
    clf_status st = CLF_SUCCESS;
    if (!c.dkey || !c.ready || !c.held || !c.cur || !c.only || !c.taken) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        goto out;
    }
    for (size_t d = 0; d < g->ndev; d++)
        clf__perf_device_key(g->fleet, d, c.dkey[d], sizeof c.dkey[d]);
    uint64_t key = mix(shapes_key(g), knowledge_key(&c));
    key = key ? key : 1; /* 0 means "no plan" */
    if (key == g->plan_key && g->plan_nodes == g->nnodes && !g->plan_stale &&
        !g->plan_patched) {
        g->plan_reused = 1;
        clf__log(CLF_LOG_DEBUG, "graph: %zu nodes, the shapes and what the model knows are "
                 "unchanged: plan reused", g->nnodes);
        goto out;
    }
    if (g->plan_stale && key == g->plan_key && g->plan_nodes == g->nnodes)
        clf__log(CLF_LOG_DEBUG, "graph: the last run's kernel times were far from the "
                 "plan's predictions: planned again on what was measured");
    g->plan_reused = 0;
    g->plan_stale = 0;
    g->plan_patched = 0;
    for (size_t i = 0; i < g->ndata; i++) {
        clf__gdata *d = &g->data[i];
        if (d->is_array)
            continue;
        if (!d->sim_rep)
            d->sim_rep = calloc(g->ndev, 1);
        if (!d->sim_part)
            d->sim_part = calloc(g->ndev, 1);
        if (!d->sim_valid)
            d->sim_valid = calloc(g->ndev, 1);
        if (!d->sim_t)
            d->sim_t = calloc(g->ndev, sizeof *d->sim_t);
        if (!d->sim_rep || !d->sim_part || !d->sim_valid || !d->sim_t) {
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
            goto out;
        }
        memset(d->sim_valid, 0, g->ndev);
        memset(d->sim_part, 0, g->ndev); /* a run starts without partials */
        memset(d->sim_t, 0, g->ndev * sizeof *d->sim_t);
        d->sim_valid[d->buf->device] = 1;
        /* The copies the last run left current, where the next run keeps them. */
        if (clf__graph_keeps(g) && d->valid)
            memcpy(d->sim_valid, d->valid, g->ndev);
        /* The copies allocated now (kept across runs, current or not). */
        for (size_t k = 0; k < g->ndev; k++)
            d->sim_rep[k] = d->rep && d->rep[k] && k != d->buf->device;
    }
    for (size_t k = 0; k < g->ndev; k++)
        g->mem[k].sim_resident = g->mem[k].resident;
    /* No plan until this one is whole: a node that fits no budget fails it half made, and
     * the old key must not bring that half back. */
    g->plan_key = 0;
    double makespan = 0, critical = 0;
    for (size_t i = 0; i < g->nnodes; i++) {
        clf__gnode *n = &g->nodes[i];
        end_phases(g, n);
        if (n->kind == CLF__GNODE_WHOLE) {
            if ((st = plan_whole(&c, n)) != CLF_SUCCESS)
                goto out;
        } else if (n->kind == CLF__GNODE_SPLIT)
            plan_split(&c, n);
        else
            plan_host(&c, n);
        makespan = fmax(makespan, n->pred_finish);
        double chain = 0;
        for (size_t k = 0; k < n->npreds; k++)
            chain = fmax(chain, g->nodes[n->preds[k]].pred_chain);
        n->pred_chain = chain + n->pred_exec;
        critical = fmax(critical, n->pred_chain);
    }
    /* Every buffer ends valid at home: the copies back count in the makespan. */
    for (size_t i = 0; i < g->ndata; i++) {
        clf__gdata *d = &g->data[i];
        size_t from;
        if (!d->is_array)
            makespan = fmax(makespan, arrival(&c, d, d->buf->device, &from));
    }
    g->plan_makespan = makespan;
    g->plan_critical = critical;
    g->plan_guessed = c.guessed;
    g->plan_key = key;
    g->plan_nodes = g->nnodes;
    clf__log(CLF_LOG_DEBUG,
             "graph: %zu nodes planned, predicted makespan %.3g ms, critical path %.3g ms%s",
             g->nnodes, makespan * 1e3, critical * 1e3,
             c.guessed ? " (some execution times guessed)" : "");
out:
    free(c.dkey);
    free(c.ready);
    free(c.held);
    free(c.cur);
    free(c.only);
    free(c.taken);
    return st;
}

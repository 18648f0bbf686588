/*
 * Graphs: memory budgets of the graph's copies per device, and the choice of the copy to
 * evict. The plan (sched.c make_room()) and the run (copies.c clf__graph_make_room()) both
 * ask clf__graph_victim(), the plan on its simulated copies, the run on the real ones, so that what the plan predicts is what
 * the run does when the plan's other predictions hold.
 *
 * Only the graph's own copies count: the caller's buffers are the caller's, already
 * allocated, and cannot be given back by the graph. The choice: a copy that is not current
 * there, or current on another device too, costs nothing to drop; among those, and then
 * among the copies that must be written back first, the one whose next use is farthest
 * (Belady: the plan's order is the run's). The node being made room for keeps its own
 * buffers (pinned), so its inputs never evict each other. The partials of open reduction
 * phases (redux.c) count in the resident bytes but are never evicted: the plan places a node
 * on a device only where its own buffers fit beside them (sched.c fits()), so that making
 * room ends whenever the run follows the plan; where it does not, the run fails the node
 * with CLF_ERROR_UNSUPPORTED (copies.c).
 */
#include "graph.h"

#include <stdlib.h>

uint64_t clf__graph_max_alloc(const clf_graph *g, size_t dev)
{
    uint64_t m = g->fleet->dev[dev].info.max_alloc;
    return m ? m : UINT64_MAX; /* not reported: no limit of its own */
}

/* 7/8 of the global memory: the margin is for the caller's buffers, the runtime's own
 * allocations and the driver, which the graph does not see. */
static uint64_t fallback_budget(const clf_graph *g, size_t dev)
{
    uint64_t m = g->fleet->dev[dev].info.global_mem;
    return m ? m - m / 8 : UINT64_MAX;
}

uint64_t clf__graph_budget(const clf_graph *g, size_t dev)
{
    return g->mem[dev].budget ? g->mem[dev].budget : fallback_budget(g, dev);
}

void clf__graph_mem_add(clf_graph *g, size_t dev, uint64_t bytes)
{
    clf__gmem *m = &g->mem[dev];
    m->resident += bytes;
    if (m->resident > m->peak)
        m->peak = m->resident;
}

void clf__graph_mem_sub(clf_graph *g, size_t dev, uint64_t bytes)
{
    g->mem[dev].resident -= bytes;
}

int clf__graph_first_use(const clf__gnode *n, size_t i)
{
    if (n->args[i].a.kind != CLF_ARG_KIND_BUFFER)
        return 0;
    for (size_t k = 0; k < i; k++)
        if (n->args[k].a.kind == CLF_ARG_KIND_BUFFER && n->args[k].data == n->args[i].data)
            return 0;
    return 1;
}

/* Whether data d has a copy of the graph's (not its own buffer) on dev, and a reduction
 * partial there, in the view. */
static int has_copy(const clf__gdata *d, size_t dev, int view)
{
    if (d->is_array || d->buf->device == dev)
        return 0;
    return view == CLF__GMEM_PLAN  ? d->sim_rep && d->sim_rep[dev]
           : view == CLF__GMEM_RUN ? d->rep && d->rep[dev]
                                   : 0;
}

static int has_partial(const clf__gdata *d, size_t dev, int view)
{
    if (d->is_array)
        return 0;
    return view == CLF__GMEM_PLAN  ? d->sim_part && d->sim_part[dev]
           : view == CLF__GMEM_RUN ? d->part_on && d->part_on[dev]
                                   : 0;
}

uint64_t clf__graph_node_bytes(const clf_graph *g, const clf__gnode *n, size_t dev, int view,
                               uint64_t *largest)
{
    uint64_t sum = 0, big = 0;
    for (size_t i = 0; i < n->nargs; i++) {
        if (!clf__graph_first_use(n, i))
            continue;
        const clf__gdata *d = &g->data[n->args[i].data];
        if (n->args[i].a.flags & CLF_ARG_REDUCTION) {
            /* The node runs on the device's partial (redux.c), on the buffer's own device
             * too, never on a copy of the buffer: made by the phase's first reducer there. */
            if (has_partial(d, dev, view))
                continue;
        } else if (d->buf->device == dev || has_copy(d, dev, view)) {
            continue;
        }
        sum += d->buf->size;
        if (d->buf->size > big)
            big = d->buf->size;
    }
    if (largest)
        *largest = big;
    return sum;
}

void clf__graph_victim_state(const clf_graph *g, size_t dev, int view, unsigned char *held,
                             unsigned char *cur, unsigned char *only)
{
    for (size_t i = 0; i < g->ndata; i++) {
        const clf__gdata *d = &g->data[i];
        const unsigned char *valid = view == CLF__GMEM_PLAN ? d->sim_valid : d->valid;
        held[i] = has_copy(d, dev, view);
        cur[i] = held[i] && valid && valid[dev];
        size_t k = 0;
        while (cur[i] && k < g->ndev && (k == dev || !valid[k]))
            k++;
        only[i] = cur[i] && k == g->ndev;
    }
}

static int uses(const clf__gnode *n, size_t i)
{
    for (size_t k = 0; k < n->nargs; k++)
        if ((n->args[k].a.kind == CLF_ARG_KIND_BUFFER || n->args[k].a.kind == CLF_ARG_KIND_ARRAY) &&
            n->args[k].data == i)
            return 1;
    return 0;
}

uint64_t clf__graph_partial_bytes(const clf_graph *g, const clf__gnode *n, size_t dev, int view)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < g->ndata; i++)
        if (!uses(n, i) && has_partial(&g->data[i], dev, view))
            sum += g->data[i].buf->size;
    return sum;
}

size_t clf__graph_next_use(const clf_graph *g, size_t i, size_t from)
{
    for (size_t k = from; k < g->nnodes; k++)
        if (uses(&g->nodes[k], i))
            return k;
    return SIZE_MAX;
}

size_t clf__graph_victim(const clf_graph *g, size_t dev, size_t n, const unsigned char *held,
                         const unsigned char *cur, const unsigned char *only,
                         const unsigned char *taken, int *wb)
{
    const clf__gnode *node = &g->nodes[n];
    size_t best = SIZE_MAX, best_next = 0;
    int best_wb = 1;
    for (size_t i = 0; i < g->ndata; i++) {
        const clf__gdata *d = &g->data[i];
        if (d->is_array || !held[i] || d->buf->device == dev || (taken && taken[i]) ||
            uses(node, i))
            continue;
        int w = cur[i] && only[i];
        size_t next = clf__graph_next_use(g, i, n + 1);
        /* Free before written back; then the farthest next use; then the larger copy (fewer
         * evictions for the room). */
        int larger = best != SIZE_MAX && d->buf->size > g->data[best].buf->size;
        int better = best == SIZE_MAX || w < best_wb ||
                     (w == best_wb && (next > best_next || (next == best_next && larger)));
        if (better) {
            best = i;
            best_next = next;
            best_wb = w;
        }
    }
    *wb = best == SIZE_MAX ? 0 : best_wb;
    return best;
}

clf_status clf_graph_set_memory_budget(clf_graph *g, size_t device, uint64_t bytes)
{
    if (!g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_set_memory_budget: the graph is NULL");
    if (device >= g->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "clf_graph_set_memory_budget: device %zu, but the fleet has %zu", device,
                         g->ndev);
    uint64_t mem = g->fleet->dev[device].info.global_mem;
    if (mem && bytes > mem)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_graph_set_memory_budget: %llu bytes on device %zu, which has %llu "
                         "bytes of global memory", (unsigned long long)bytes, device,
                         (unsigned long long)mem);
    pthread_mutex_lock(&g->lock);
    int busy = g->running;
    if (!busy)
        g->mem[device].budget = bytes;
    pthread_mutex_unlock(&g->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY,
                         "clf_graph_set_memory_budget: a run of the graph is in flight");
    return CLF_SUCCESS;
}

clf_status clf_graph_memory_get(clf_graph_memory *out, const clf_graph *g, size_t device)
{
    if (!out || !g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_memory_get: %s is NULL",
                         !out ? "out" : "the graph");
    if (device >= g->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "clf_graph_memory_get: device %zu, but the fleet has %zu", device,
                         g->ndev);
    /* Read in one locked section with the check: a run started from another thread in
     * between would change the accounting while it is read. */
    clf_graph *mg = (clf_graph *)g; /* the lock only */
    const clf__gmem *m = &g->mem[device];
    clf_graph_memory r = {0};
    pthread_mutex_lock(&mg->lock);
    int busy = g->running;
    if (!busy) {
        r.budget = clf__graph_budget(g, device);
        r.fallback = fallback_budget(g, device);
        r.max_alloc = clf__graph_max_alloc(g, device);
        r.resident = m->resident;
        r.peak = m->peak;
        r.evictions = m->evictions;
        r.evicted_bytes = m->evicted_bytes;
        r.written_back_bytes = m->written_back;
    }
    pthread_mutex_unlock(&mg->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY, "clf_graph_memory_get: a run of the graph is in flight");
    *out = r;
    return CLF_SUCCESS;
}

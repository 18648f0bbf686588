/*
 * Graphs: a device's lane. A device that runs its commands inside clEnqueue* (PoCL's basic:
 * its ops table, core/devops.c, says !wait_list_ok) runs a kernel in the thread that queues
 * it, after that thread has waited for the kernel's wait list on the host. Queued by the
 * run's one job (run.c), the kernels of two such devices would run one after the other in
 * that job's thread, and the job would stop at every node until its inputs were ready: the
 * graph of two basic devices measured as slow as one device alone, where StarPU, with one
 * worker per device, used both.
 *
 * So a kernel node for such a device is handed to the device's lane: the kernels queued for
 * it, in the run's order, each ready once its wait list (predecessors, the copies that made
 * its inputs current) has completed (clf__event_notify(): no thread waits), and a job of
 * the helper pool that queues the first ready kernel, which runs there, then the next ready
 * one, and returns when none is; the next kernel to become ready starts it again. (While a
 * job runs its last kernel, one that becomes ready starts a second job: the two may queue
 * on the device at once, which is correct, every order being in the wait lists.) The run's
 * job meanwhile goes on queueing the later nodes and their copies (each copy starts as soon
 * as its source is current, while the node that needs it still waits for its other
 * inputs), so each device's lane has its next kernel and inputs waiting when it is free. The node's event is a host-side completion the lane completes once the kernel
 * has; later nodes, copies and the run's end wait for it like any event.
 *
 * The kernel's arguments are taken when the node is handed over, as clf_kernel_enqueue()
 * would take them: the buffers' memory is retained (an eviction may destroy the graph's
 * copy before the lane queues the kernel; OpenCL then keeps it for the kernel, as for any
 * queued command).
 *
 * Not used when $CLFLEET_FAULT_INJECT has rules, nor for the re-runs of a recovery: the
 * recovery from a lost device (fault.c) needs the failure of a node's enqueue where it is
 * queued. A lane's kernel that fails fails its completion, and so the run, naming the node.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

/* One kernel handed to a lane. */
typedef struct lane_item {
    struct lane_item *next;
    struct clf__glane *lane;
    clf_graph *g;
    size_t node;
    clf_kernel_desc kd;
    clf_arg *args;
    clf_buffer *bufs; /* the buffers' shallow copies, memory retained (args point at them) */
    size_t nargs;
    clf_event **wait; /* held */
    size_t nwait;
    atomic_size_t pending; /* wait list events not complete yet (plus one while arming) */
    atomic_int broken;     /* a wait could not be watched (out of memory): the node fails */
    int ready;             /* they have: under the lane's lock */
    struct clf__completion *comp; /* the node's event */
} lane_item;

struct clf__glane {
    pthread_mutex_t lock;
    lane_item *head, *tail; /* in the run's order */
    int active; /* a job drains the lane (queued or running) */
    clf__pool_work job;
    size_t dev;
};

int clf__graph_lane_wanted(const clf_graph *g, const clf__gnode *n)
{
    return n->kind == CLF__GNODE_WHOLE && !g->fault_phase && !g->fleet->fault &&
           !clf__devops(g->fleet, n->device)->wait_list_ok;
}

static void item_free(lane_item *it)
{
    if (!it)
        return;
    for (size_t i = 0; i < it->nwait; i++)
        clf_event_release(it->wait[i]);
    free(it->wait);
    for (size_t i = 0; it->bufs && i < it->nargs; i++)
        if (it->bufs[i].mem)
            clReleaseMemObject(it->bufs[i].mem);
    free(it->bufs);
    free(it->args);
    clf__completion_unref(it->comp);
    free(it);
}

/* The item's end: its resources released first, then its completion completed (the run may end
 * with it, and the graph go). */
static void finish(lane_item *it, clf_status st)
{
    struct clf__completion *t = it->comp;
    char *err = st ? strdup(clf_last_error()) : NULL;
    it->comp = NULL;
    item_free(it);
    clf__completion_complete(t, st, err);
    clf__completion_unref(t);
    free(err);
}

static void drain(void *arg, int cancelled);

/* Under the lane's lock: whether the caller must start the lane's job (it was not active;
 * it is now). */
static int claim(struct clf__glane *l)
{
    int start = !l->active;
    l->active = 1;
    return start;
}

static void start_job(struct clf__glane *l)
{
    if (clf__pool_submit(&l->job) != CLF_SUCCESS)
        drain(l, 1); /* no pool (it shut down): the ready kernels fail, as the run's did */
}

/* One of an item's wait list completed; the last makes it ready and starts the lane's job
 * (the item's completion has not completed, so the run and its lanes are still there). */
static void ev_done(void *arg, clf_status st)
{
    (void)st; /* the enqueue reads the statuses from the events */
    lane_item *it = arg;
    if (atomic_fetch_sub(&it->pending, 1) != 1)
        return;
    struct clf__glane *l = it->lane;
    pthread_mutex_lock(&l->lock);
    it->ready = 1;
    int start = claim(l);
    pthread_mutex_unlock(&l->lock);
    if (start)
        start_job(l);
}

/* The kernel's own event once it has completed: its status is the node's. A failure's
 * detail is the event's, not this thread's (the driver's callback thread or a pool job, whose
 * last error is another call's): read from the completed event without waiting (no blocking
 * call in a driver's callback), and named after the node, as a failed enqueue is. */
static void kernel_done(void *arg, clf_status st)
{
    lane_item *it = arg;
    if (st != CLF_SUCCESS) {
        const clf__gnode *n = &it->g->nodes[it->node];
        cl_int e = n->kev && n->kev->ev ? clf__cl_event_status(n->kev->ev) : CL_SUCCESS;
        st = clf__fail(st, "graph node %zu ('%s'): the kernel failed on device %zu: %s (%d)",
                       it->node, n->kernel, it->lane->dev,
                       e < 0 ? clf__cl_error_name(e) : clf_status_string(st), (int)e);
    }
    finish(it, st);
}

/* Queue a ready item's kernel (its wait list has completed: nothing is waited for here). */
static void run_item(struct clf__glane *l, lane_item *it, int cancelled)
{
    clf_graph *g = it->g;
    clf__gnode *n = &g->nodes[it->node];
    clf_event *ev = NULL;
    clf_status st = cancelled ? clf__fail(CLF_ERROR_OPENCL, "graph: the device's lane was "
                                          "cancelled by the library's shutdown")
                    : atomic_load(&it->broken)
                        ? clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory")
                        : clf_kernel_enqueue(g->fleet, g->prog, l->dev, &it->kd, it->args,
                                                   it->nargs, it->nwait ? it->wait : NULL,
                                                   it->nwait, &ev);
    if (st) {
        finish(it, clf__prefix_error(st, "graph node %zu ('%s'): ", it->node, n->kernel));
        return;
    }
    /* The kernel's own event for its profiled time (report.c); read after the run's end,
     * which follows the item's completion below. */
    clf__event_hold(ev);
    n->kev = ev;
    if (clf__event_notify(ev, kernel_done, it) != CLF_SUCCESS) {
        clf_status w = clf_event_wait(ev); /* out of memory: it ran in the enqueue anyway */
        kernel_done(it, w);
    }
    clf_event_release(ev);
}

/* The lane's job: the first ready kernel in the run's order, in turn, until none is ready
 * (the next to become ready starts the job again). Not only the head: a kernel that waits
 * for another device's result or a copy does not hold back the later ones that are ready
 * (their order, where it matters, is in their wait lists), as StarPU's workers take the
 * tasks whose data are ready. */
static void drain(void *arg, int cancelled)
{
    struct clf__glane *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->lock);
        lane_item *it = l->head, *prev = NULL;
        while (it && !it->ready) {
            prev = it;
            it = it->next;
        }
        if (!it) {
            l->active = 0;
            pthread_mutex_unlock(&l->lock);
            return;
        }
        /* Off the lane before it completes: the run may end with the last item, and
         * the lane is not touched after the last item is off. */
        if (prev)
            prev->next = it->next;
        else
            l->head = it->next;
        if (l->tail == it)
            l->tail = prev;
        int last = !l->head;
        if (last)
            l->active = 0;
        pthread_mutex_unlock(&l->lock);
        run_item(l, it, cancelled);
        if (last)
            return;
    }
}

static struct clf__glane *lane_get(clf_graph *g, size_t dev)
{
    if (!g->lanes && !(g->lanes = calloc(g->ndev, sizeof *g->lanes)))
        return NULL;
    if (!g->lanes[dev]) {
        struct clf__glane *l = calloc(1, sizeof *l);
        if (!l || pthread_mutex_init(&l->lock, NULL)) {
            free(l);
            return NULL;
        }
        l->dev = dev;
        l->job.fn = drain;
        l->job.arg = l;
        g->lanes[dev] = l;
    }
    return g->lanes[dev];
}

clf_status clf__graph_lane_push(clf_graph *g, clf__gnode *n, const clf_kernel_desc *kd,
                                const clf_arg *args, clf_event *const *wait, size_t nwait,
                                clf_event **out_ev)
{
    *out_ev = NULL;
    struct clf__glane *l = lane_get(g, n->device);
    lane_item *it = calloc(1, sizeof *it);
    if (!l || !it)
        goto oom;
    it->lane = l;
    it->g = g;
    it->node = (size_t)(n - g->nodes);
    it->kd = *kd;
    it->nargs = n->nargs;
    if (n->nargs && (!(it->args = calloc(n->nargs, sizeof *it->args)) ||
                     !(it->bufs = calloc(n->nargs, sizeof *it->bufs))))
        goto oom;
    if (nwait && !(it->wait = calloc(nwait, sizeof *it->wait)))
        goto oom;
    for (size_t i = 0; i < n->nargs; i++) {
        it->args[i] = args[i];
        if (args[i].kind != CLF_ARG_KIND_BUFFER)
            continue;
        const clf_buffer *b = args[i].host;
        it->bufs[i] = *b;
        clRetainMemObject(b->mem);
        it->args[i].host = &it->bufs[i];
    }
    for (size_t i = 0; i < nwait; i++) {
        clf__event_hold(wait[i]);
        it->wait[it->nwait++] = wait[i];
    }
    if (!(it->comp = clf__completion_create(0)))
        goto oom;
    /* The node's event, made before the item is in the lane: out of memory later, the run's
     * job (a pool job) would have to wait for the lane's (clf__event_wrap_completion() waits
     * for the completion), and a pool job never waits for another. */
    clf__completion_ref(it->comp);
    clf_event *ev = clf__event_of_completion(it->comp);
    if (!ev) {
        clf__completion_unref(it->comp);
        goto oom;
    }
    /* In the lane first, then armed: the last of its wait list may complete at once. */
    atomic_store(&it->pending, it->nwait + 1);
    pthread_mutex_lock(&l->lock);
    if (l->tail)
        l->tail->next = it;
    else
        l->head = it;
    l->tail = it;
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < it->nwait; i++)
        if (clf__event_notify(it->wait[i], ev_done, it) != CLF_SUCCESS) {
            /* Out of memory: the node fails (waiting here would hold a pool job). */
            atomic_store(&it->broken, 1);
            ev_done(it, CLF_SUCCESS);
        }
    ev_done(it, CLF_SUCCESS); /* armed; it may have run and be gone from here on */
    *out_ev = ev;
    return CLF_SUCCESS;
oom:
    item_free(it);
    return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
}

void clf__graph_lanes_free(clf_graph *g)
{
    for (size_t k = 0; g->lanes && k < g->ndev; k++)
        if (g->lanes[k]) {
            pthread_mutex_destroy(&g->lanes[k]->lock);
            free(g->lanes[k]);
        }
    free(g->lanes);
    g->lanes = NULL;
}

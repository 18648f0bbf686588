/*
 * Graphs: creation, destruction and the recording of nodes (clf_graph_add_kernel(),
 * clf_graph_add_host()), with every check of their input, so that a run meets only what the
 * device calls themselves refuse; the graph's flags and what the host says it wrote between
 * runs (clf_graph_set_flags(), clf_graph_buffer_changed()).
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

clf_status clf_graph_create(clf_graph **out, clf_fleet *fleet, clf_program *prog)
{
    if (!out || !fleet || !prog)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_create: %s is NULL",
                         !out ? "out" : !fleet ? "fleet" : "prog");
    *out = NULL;
    if (prog->fleet != fleet)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_graph_create: the program belongs to another fleet");
    clf_graph *g = calloc(1, sizeof *g);
    if (!g)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_graph_create: out of memory");
    g->fleet = fleet;
    clf__fleet_ref(fleet); /* as buffers and programs do: the fleet goes with its last child */
    g->prog = prog;
    g->ndev = fleet->ndev;
    g->mem = calloc(g->ndev ? g->ndev : 1, sizeof *g->mem);
    g->dead = calloc(g->ndev ? g->ndev : 1, 1);
    if (!g->mem || !g->dead) {
        free(g->mem);
        free(g->dead);
        free(g);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_graph_create: out of memory");
    }
    if (pthread_mutex_init(&g->lock, NULL) != 0) {
        free(g->mem);
        free(g->dead);
        free(g);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_graph_create: no mutex");
    }
    if (pthread_cond_init(&g->done_cv, NULL) != 0) {
        pthread_mutex_destroy(&g->lock);
        free(g->mem);
        free(g->dead);
        free(g);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_graph_create: no condition");
    }
    *out = g;
    return CLF_SUCCESS;
}

static void free_node(clf__gnode *n)
{
    free(n->kernel);
    free(n->args);
    free(n->scalars);
    free(n->preds);
    free(n->aver);
    for (size_t i = 0; i < n->npart_ev; i++)
        clf_event_release(n->part_ev[i]);
    free(n->part_ev);
    free(n->part_dev);
    clf_event_release(n->ev);
    clf_event_release(n->kev);
}

void clf_graph_destroy(clf_graph *g)
{
    if (!g)
        return;
    /* A run in flight uses the nodes and the copies: it ends first. */
    (void)clf_graph_wait(g);
    for (size_t i = 0; i < g->nnodes; i++)
        free_node(&g->nodes[i]);
    free(g->nodes);
    for (size_t i = 0; i < g->ndata; i++) {
        clf__gdata *d = &g->data[i];
        if (d->rep)
            for (size_t k = 0; k < g->ndev; k++)
                if (d->rep[k] && d->rep[k] != d->buf)
                    clf_buffer_destroy(d->rep[k]);
        free(d->rep);
        free(d->valid);
        free(d->vev);
        free(d->wev);
        free(d->ver);
        free(d->prod);
        free(d->readers);
        free(d->redux);
        clf__graph_modes_free(g, d);
        free(d->sim_rep);
        free(d->sim_part);
        free(d->sim_valid);
        free(d->sim_t);
    }
    free(g->data);
    clf__graph_lanes_free(g);
    clf_program_destroy(g->redprog);
    free(g->mem);
    free(g->dead);
    free(g->tmp);
    free(g->rset);
    free(g->rbuf);
    free(g->cev);
    free(g->cdev);
    free(g->run_err);
    free(g->run_msg);
    (void)clf__evlist_finish(&g->hold, CLF_SUCCESS); /* empty once a run has ended */
    pthread_cond_destroy(&g->done_cv);
    pthread_mutex_destroy(&g->lock);
    clf__fleet_unref(g->fleet);
    free(g);
}

/* The index of the data a buffer or array argument names, added on first sight. */
clf_status clf__graph_data_index(clf_graph *g, const clf_arg *a, size_t *out)
{
    int is_array = a->kind == CLF_ARG_KIND_ARRAY;
    for (size_t i = 0; i < g->ndata; i++)
        if (g->data[i].is_array == is_array &&
            (is_array ? (void *)g->data[i].arr : (void *)g->data[i].buf) == a->host) {
            *out = i;
            return CLF_SUCCESS;
        }
    if (g->ndata == g->cap_data) {
        size_t cap = g->cap_data ? 2 * g->cap_data : 8;
        clf__gdata *nd = realloc(g->data, cap * sizeof *nd);
        if (!nd)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
        g->data = nd;
        g->cap_data = cap;
    }
    clf__gdata *d = &g->data[g->ndata];
    memset(d, 0, sizeof *d);
    d->is_array = is_array;
    if (is_array)
        d->arr = a->host;
    else
        d->buf = a->host;
    d->last_writer = SIZE_MAX;
    *out = g->ndata++;
    return CLF_SUCCESS;
}

/* Checks one argument of a node ("who" names the call and the argument in messages). */
static clf_status check_arg(const clf_graph *g, const clf_arg *a, size_t i, int host_node,
                            int *has_buf, int *has_arr)
{
    const char *who = host_node ? "clf_graph_add_host" : "clf_graph_add_kernel";
    unsigned mode = a->flags & (CLF_ARG_READ | CLF_ARG_WRITE);
    switch (a->kind) {
    case CLF_ARG_KIND_BUFFER: {
        const clf_buffer *b = a->host;
        if (!b)
            return clf__fail(CLF_ERROR_NULL_POINTER, "%s: argument %zu: the buffer is NULL",
                             who, i);
        if (b->fleet != g->fleet)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: argument %zu: a buffer of another fleet", who, i);
        unsigned special = a->flags & (CLF_ARG_REDUCTION | CLF_ARG_SCRATCH);
        if (special) {
            if (host_node)
                return clf__fail(CLF_ERROR_UNSUPPORTED,
                                 "%s: argument %zu: a host node reads and writes its buffers; "
                                 "reduction and scratch accesses are for kernel nodes", who, i);
            if (a->flags & ~special || special == (CLF_ARG_REDUCTION | CLF_ARG_SCRATCH))
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s: argument %zu: access flags 0x%x (a reduction or a scratch "
                                 "access is that alone: CLF_BUF_REDUCE, CLF_BUF_SCRATCH)",
                                 who, i, a->flags);
            if (special == CLF_ARG_REDUCTION) {
                if (a->op < CLF_REDUCE_SUM || a->op > CLF_REDUCE_MAX ||
                    a->type < CLF_TYPE_INT32 || a->type > CLF_TYPE_DOUBLE)
                    return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                     "%s: argument %zu: a reduction with op %u and type %u: the "
                                     "graph combines CLF_REDUCE_SUM, _PROD, _MIN and _MAX of "
                                     "CLF_TYPE_INT32, _UINT32, _INT64, _FLOAT and _DOUBLE",
                                     who, i, a->op, a->type);
                size_t es = clf_type_size((clf_type)a->type);
                if (b->size % es)
                    return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                     "%s: argument %zu: a reduction over elements of %zu bytes "
                                     "into a %zu-byte buffer", who, i, es, b->size);
            }
            *has_buf = 1;
            return CLF_SUCCESS;
        }
        if (!mode || (a->flags & ~(unsigned)(CLF_ARG_READ | CLF_ARG_WRITE)))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: argument %zu: access flags 0x%x (use CLF_BUF_IN, CLF_BUF_OUT "
                             "or CLF_BUF_INOUT)", who, i, a->flags);
        *has_buf = 1;
        return CLF_SUCCESS;
    }
    case CLF_ARG_KIND_ARRAY: {
        const clf_array *arr = a->host;
        if (!arr)
            return clf__fail(CLF_ERROR_NULL_POINTER, "%s: argument %zu: the array is NULL",
                             who, i);
        if (arr->fleet != g->fleet)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: argument %zu: an array of another fleet", who, i);
        if (a->flags & (CLF_ARG_REDUCTION | CLF_ARG_SCRATCH))
            return clf__fail(CLF_ERROR_UNSUPPORTED,
                             "%s: argument %zu: %s access on an array: reduction and scratch "
                             "accesses are for buffers (CLF_BUF_REDUCE, CLF_BUF_SCRATCH)", who,
                             i, (a->flags & CLF_ARG_SCRATCH) ? "a scratch" : "a reduction");
        if (!mode || (a->flags & ~(unsigned)(CLF_ARG_READ | CLF_ARG_WRITE)))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: argument %zu: access flags 0x%x (use CLF_ARRAY_IN, "
                             "CLF_ARRAY_IN_HALO, CLF_ARRAY_OUT or CLF_ARRAY_INOUT)",
                             who, i, a->flags);
        if (a->halo_before || a->halo_after) {
            if (host_node || mode != CLF_ARG_READ)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s: argument %zu: a neighbourhood footprint is for an array "
                                 "a kernel only reads", who, i);
            if (arr->desc.dist != CLF_ARRAY_BLOCK || a->halo_before > arr->desc.halo_before ||
                a->halo_after > arr->desc.halo_after)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s: argument %zu: a neighbourhood of %zu units before and %zu "
                                 "after, but the array holds a halo of %zu and %zu%s",
                                 who, i, a->halo_before, a->halo_after, arr->desc.halo_before,
                                 arr->desc.halo_after,
                                 arr->desc.dist != CLF_ARRAY_BLOCK ? " (not a block array)"
                                                                   : "");
        }
        *has_arr = 1;
        return CLF_SUCCESS;
    }
    case CLF_ARG_KIND_SCALAR:
    case CLF_ARG_KIND_LOCAL:
        if (host_node)
            return clf__fail(CLF_ERROR_UNSUPPORTED,
                             "%s: argument %zu: a host node declares buffers and arrays only",
                             who, i);
        if (a->kind == CLF_ARG_KIND_SCALAR && !a->host)
            return clf__fail(CLF_ERROR_NULL_POINTER, "%s: argument %zu: the scalar is NULL",
                             who, i);
        if (!a->size)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: argument %zu: size 0", who, i);
        return CLF_SUCCESS;
    default:
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "%s: argument %zu: kind %u is not a graph argument (buffers, arrays, "
                         "scalars and local memory are; host arrays belong to clf_launch())",
                         who, i, a->kind);
    }
}

/* The access modes of node n's buffers against each other and the graph's other nodes: a
 * buffer is scratch in every node or in none, a node that reduces into a buffer passes it
 * only so, and every reduction into a buffer has one op and type (the partials are combined
 * with it). */
static clf_status check_modes(const clf_graph *g, const clf__gnode *n, const char *kernel)
{
    for (size_t i = 0; i < n->nargs; i++) {
        const clf_arg *a = &n->args[i].a;
        if (a->kind != CLF_ARG_KIND_BUFFER)
            continue;
        const clf__gdata *d = &g->data[n->args[i].data];
        int scratch = (a->flags & CLF_ARG_SCRATCH) != 0;
        int red = (a->flags & CLF_ARG_REDUCTION) != 0;
        if (d->mode && (d->mode == 1) != scratch)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_graph_add_kernel: '%s': argument %zu: the buffer is %s in an "
                             "earlier node: a scratch buffer is scratch in every node",
                             kernel, i, scratch ? "read or written" : "scratch");
        if (red && d->red_op && (d->red_op != a->op || d->red_type != a->type))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_graph_add_kernel: '%s': argument %zu: a reduction with op %u "
                             "and type %u into a buffer an earlier node reduces into with op %u "
                             "and type %u", kernel, i, a->op, a->type, d->red_op, d->red_type);
        for (size_t j = 0; j < n->nargs; j++) {
            const clf_arg *b = &n->args[j].a;
            if (j == i || b->kind != CLF_ARG_KIND_BUFFER || n->args[j].data != n->args[i].data)
                continue;
            unsigned sp = CLF_ARG_REDUCTION | CLF_ARG_SCRATCH;
            if ((a->flags & sp) != (b->flags & sp) || (red && (a->op != b->op ||
                                                                a->type != b->type)))
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "clf_graph_add_kernel: '%s': arguments %zu and %zu pass one "
                                 "buffer with different modes (a reduction or a scratch "
                                 "buffer is passed only so)", kernel, i, j);
        }
    }
    return CLF_SUCCESS;
}

/* Appends a node (its arguments copied, scalars by value) and infers its dependencies; the
 * caller holds g->lock and has seen no run in flight. */
static clf_status add_node_locked(size_t *out_node, clf_graph *g, int kind,
                                  const clf_graph_node_desc *desc, clf_graph_host_fn fn,
                                  void *user, const clf_arg *args, size_t nargs)
{
    int host = kind == CLF__GNODE_HOST;
    const char *who = host ? "clf_graph_add_host" : "clf_graph_add_kernel";
    int has_buf = 0, has_arr = 0;
    size_t scalar_bytes = 0;
    for (size_t i = 0; i < nargs; i++) {
        clf_status st = check_arg(g, &args[i], i, host, &has_buf, &has_arr);
        if (st)
            return st;
        if (args[i].kind == CLF_ARG_KIND_SCALAR)
            scalar_bytes += args[i].size;
    }
    if (!host && has_buf && has_arr)
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "%s: '%s' has buffer and array arguments: a node runs either whole "
                         "on one device (buffers) or split over array parts (arrays)",
                         who, desc->kernel);
    if (!host && has_arr && desc->device != CLF_GRAPH_ANY_DEVICE)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: '%s' runs over arrays, where their parts are: it cannot be "
                         "placed on device %zu", who, desc->kernel, desc->device);
    if (!host && !has_arr)
        kind = CLF__GNODE_WHOLE;
    else if (!host)
        kind = CLF__GNODE_SPLIT;

    if (g->nnodes == g->cap_nodes) {
        size_t cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
        clf__gnode *nn = realloc(g->nodes, cap * sizeof *nn);
        if (!nn)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    clf__gnode *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->fn = fn;
    n->user = user;
    n->device = CLF_GRAPH_ANY_DEVICE;
    if (desc) {
        n->desc = *desc;
        n->kernel = strdup(desc->kernel);
        n->desc.kernel = n->kernel;
        n->items = 1;
        for (unsigned k = 0; k < desc->dims; k++)
            if (clf__mul_overflow(n->items, desc->global[k], &n->items))
                n->items = UINT64_MAX;
    }
    n->args = nargs ? calloc(nargs, sizeof *n->args) : NULL;
    n->scalars = scalar_bytes ? malloc(scalar_bytes) : NULL;
    if ((desc && !n->kernel) || (nargs && !n->args) || (scalar_bytes && !n->scalars)) {
        free_node(n);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    }
    n->nargs = nargs;
    /* A refused node leaves no data behind: the graph must not keep a pointer to a buffer
     * that only it named (the caller may destroy it). */
    size_t old_ndata = g->ndata;
    size_t off = 0;
    for (size_t i = 0; i < nargs; i++) {
        n->args[i].a = args[i];
        n->args[i].data = SIZE_MAX;
        if (args[i].kind == CLF_ARG_KIND_SCALAR) {
            memcpy(n->scalars + off, args[i].host, args[i].size);
            n->args[i].a.host = n->scalars + off;
            off += args[i].size;
        } else if (args[i].kind == CLF_ARG_KIND_BUFFER || args[i].kind == CLF_ARG_KIND_ARRAY) {
            clf_status st = clf__graph_data_index(g, &args[i], &n->args[i].data);
            if (st) {
                free_node(n);
                g->ndata = old_ndata;
                return st;
            }
        }
    }
    clf_status st = check_modes(g, n, desc ? desc->kernel : "");
    if (!st)
        st = clf__graph_deps(g, g->nnodes);
    if (st) {
        free_node(n);
        g->ndata = old_ndata;
        return st;
    }
    for (size_t i = 0; i < nargs; i++) {
        if (n->args[i].a.kind != CLF_ARG_KIND_BUFFER)
            continue;
        clf__gdata *d = &g->data[n->args[i].data];
        unsigned f = n->args[i].a.flags;
        d->mode = (f & CLF_ARG_SCRATCH) ? 1 : 2;
        if (f & CLF_ARG_REDUCTION) {
            d->red_op = n->args[i].a.op;
            d->red_type = n->args[i].a.type;
            g->has_redux = 1;
        }
        if (f & CLF_ARG_SCRATCH)
            g->has_scratch = 1;
    }
    if (out_node)
        *out_node = g->nnodes;
    g->nnodes++;
    g->plan_key = 0; /* a new node: the next run plans again */
    return CLF_SUCCESS;
}

/* add_node_locked() under the lock that clf_graph_run() takes to start: a run started from
 * another thread between a check and the append would plan and start on nodes, data and
 * dependencies that are being changed (and g->nodes may move). Nothing in the append waits
 * on a device or an event, so holding the lock across it is short. */
static clf_status add_node(size_t *out_node, clf_graph *g, int kind,
                           const clf_graph_node_desc *desc, clf_graph_host_fn fn, void *user,
                           const clf_arg *args, size_t nargs)
{
    const char *who = kind == CLF__GNODE_HOST ? "clf_graph_add_host" : "clf_graph_add_kernel";
    if (nargs && !args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: args is NULL with %zu arguments", who,
                         nargs);
    pthread_mutex_lock(&g->lock);
    clf_status st = g->running
        ? clf__fail(CLF_ERROR_BUSY, "%s: a run of the graph is in flight", who)
        : add_node_locked(out_node, g, kind, desc, fn, user, args, nargs);
    pthread_mutex_unlock(&g->lock);
    return st;
}

clf_status clf_graph_add_kernel(size_t *out_node, clf_graph *g, const clf_graph_node_desc *desc,
                                const clf_arg *args, size_t nargs)
{
    if (!g || !desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_add_kernel: %s is NULL",
                         !g ? "the graph" : "desc");
    clf_status st = clf__check_version("clf_graph_add_kernel", desc->version,
                                       CLF_GRAPH_NODE_DESC_VERSION, "clf_graph_node_desc",
                                       "CLF_GRAPH_NODE_DESC_INIT");
    if (st)
        return st;
    if (!desc->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_add_kernel: desc.kernel is NULL");
    if (desc->dims < 1 || desc->dims > 3)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_graph_add_kernel: '%s': dims is %u (1, 2 or 3)", desc->kernel,
                         desc->dims);
    for (unsigned k = 0; k < desc->dims; k++)
        if (!desc->global[k])
            return clf__fail(CLF_ERROR_ZERO_SIZE,
                             "clf_graph_add_kernel: '%s': global[%u] is 0", desc->kernel, k);
    for (size_t k = 0; k < CLF__ARRAY_LEN(desc->reserved); k++)
        if (desc->reserved[k])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_graph_add_kernel: '%s': reserved[%zu] is not zero",
                             desc->kernel, k);
    if (desc->device != CLF_GRAPH_ANY_DEVICE && desc->device >= g->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "clf_graph_add_kernel: '%s': device %zu, the fleet has %zu",
                         desc->kernel, desc->device, g->ndev);
    return add_node(out_node, g, CLF__GNODE_WHOLE, desc, NULL, NULL, args, nargs);
}

clf_status clf_graph_add_host(size_t *out_node, clf_graph *g, clf_graph_host_fn fn, void *user,
                              const clf_arg *accesses, size_t naccesses)
{
    if (!g || !fn)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_add_host: %s is NULL",
                         !g ? "the graph" : "fn");
    return add_node(out_node, g, CLF__GNODE_HOST, NULL, fn, user, accesses, naccesses);
}

clf_status clf_graph_set_flags(clf_graph *g, unsigned flags)
{
    if (!g)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_set_flags: the graph is NULL");
    if (flags & ~(unsigned)CLF_GRAPH_KEEP_COPIES)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_graph_set_flags: unknown flags 0x%x (CLF_GRAPH_KEEP_COPIES is 0x%x)",
                         flags & ~(unsigned)CLF_GRAPH_KEEP_COPIES, CLF_GRAPH_KEEP_COPIES);
    /* Written under the lock that clf_graph_run() takes to start: a run started from another
     * thread between a check and the write would plan on one value and run on another. */
    pthread_mutex_lock(&g->lock);
    int b = g->running;
    if (!b)
        g->flags = flags;
    pthread_mutex_unlock(&g->lock);
    if (b)
        return clf__fail(CLF_ERROR_BUSY, "clf_graph_set_flags: a run of the graph is in flight");
    return CLF_SUCCESS;
}

clf_status clf_graph_buffer_changed(clf_graph *g, const clf_buffer *buf)
{
    if (!g || !buf)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_graph_buffer_changed: %s is NULL",
                         !g ? "the graph" : "the buffer");
    /* As clf_graph_set_flags(): the copies' validity is the run's state (start_run() reads
     * it), so it changes only under the lock, while no run is in flight. */
    pthread_mutex_lock(&g->lock);
    int b = g->running, found = 0;
    for (size_t i = 0; !b && !found && i < g->ndata; i++) {
        clf__gdata *d = &g->data[i];
        if (d->is_array || d->buf != buf)
            continue;
        if (d->valid) {
            memset(d->valid, 0, g->ndev);
            d->valid[buf->device] = 1;
        }
        found = 1;
    }
    pthread_mutex_unlock(&g->lock);
    if (b)
        return clf__fail(CLF_ERROR_BUSY,
                         "clf_graph_buffer_changed: a run of the graph is in flight");
    if (found)
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_NOT_FOUND,
                     "clf_graph_buffer_changed: no node of the graph uses this buffer");
}

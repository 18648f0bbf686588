/*
 * Graphs: reduction and scratch accesses during a run (CLF_BUF_REDUCE(), CLF_BUF_SCRATCH()).
 *
 * Reductions, as StarPU's STARPU_REDUX: a node that reduces into a buffer on device dev runs
 * on dev's partial, a buffer of the same size filled with the op's identity by the first
 * such node of the phase there; the nodes on one device take turns on it (each waits for
 * the last), the devices do not wait for each other. Before the next node that reads or
 * writes the buffer otherwise, or at the run's end, the phase ends: the partials of other
 * devices are copied to the buffer's own device and combined, one after the other, into the
 * buffer there (device kernels: acc = op(acc, partial)), which makes its own copy the only
 * current one, as a write there would. The partials are released once the combine is queued
 * (OpenCL keeps them for the commands queued on them), and a later phase makes new ones, so
 * that a fill never waits for the combine of the last phase.
 *
 * Scratch: the graph's copy of the buffer on the node's device (the caller's buffer on its
 * own device), never made current and never copied; the scratch nodes on one device take
 * turns on it.
 *
 * The fill kernels are a small program of the graph, built in the caller's thread by the
 * first run of a graph with reductions; the combine kernels are the collectives'
 * (cl/reduce.cl, clf__coll_reduce_kernel(): built once per fleet).
 */
#include "graph.h"

#include "coll/coll.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A partial's fill with the op's identity (identity()): the collectives' combine kernels
 * start from a buffer's contents, so the fill is the graph's own. */
#define FILL(T, N)                                                                         \
    "__kernel void clf_gred_fill_" #N "(__global " #T " *a, const " #T " v)\n"              \
    "{ a[get_global_id(0)] = v; }\n"

/* double only where the device has it: elsewhere its kernels are missing and a reduction of
 * doubles there fails with the kernel's name. */
static const char redux_src[] =
    FILL(int, i32) FILL(uint, u32) FILL(long, i64) FILL(float, f32)
    "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    FILL(double, f64) "#endif\n";

static const char *const type_names[] = {NULL, "i32", "u32", "i64", "f32", "f64"};

clf_status clf__graph_redux_program(clf_graph *g)
{
    if (!g->has_redux || g->redprog)
        return CLF_SUCCESS;
    clf_status st = clf_program_build_source(&g->redprog, g->fleet, redux_src, NULL);
    if (st)
        return clf__prefix_error(st, "graph: the reduction kernels: ");
    return CLF_SUCCESS;
}

clf_status clf__graph_modes_state(clf_graph *g, clf__gdata *d)
{
    if (d->part)
        return CLF_SUCCESS;
    d->part = calloc(g->ndev, sizeof *d->part);
    d->part_on = calloc(g->ndev, 1);
    d->part_ev = calloc(g->ndev, sizeof *d->part_ev);
    d->red_src = calloc(g->ndev, sizeof *d->red_src);
    d->red_wait = calloc(g->ndev, sizeof *d->red_wait);
    d->scr_ev = calloc(g->ndev, sizeof *d->scr_ev);
    if (!d->part || !d->part_on || !d->part_ev || !d->red_src || !d->red_wait || !d->scr_ev) {
        clf__graph_modes_free(g, d);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    }
    return CLF_SUCCESS;
}

/* Release the partials and the copies of them made for a combine (none is in use: every
 * command that uses them was queued, and OpenCL keeps them until those complete), their
 * bytes no longer resident. */
static void drop_partials(clf_graph *g, clf__gdata *d)
{
    if (!d->part) /* none made (an array's data has no buffer) */
        return;
    size_t h = d->buf->device, bytes = d->buf->size;
    for (size_t k = 0; k < g->ndev; k++) {
        if (d->red_src && d->red_src[k] && d->red_src[k] != d->part[k]) {
            clf_buffer_destroy(d->red_src[k]);
            clf__graph_mem_sub(g, h, bytes);
        }
        if (d->red_src)
            d->red_src[k] = NULL;
        if (d->part[k]) {
            clf_buffer_destroy(d->part[k]);
            d->part[k] = NULL;
            clf__graph_mem_sub(g, k, bytes);
        }
    }
}

void clf__graph_modes_reset(clf_graph *g, clf__gdata *d)
{
    if (!d->part)
        return;
    drop_partials(g, d); /* a failed run's */
    memset(d->part_on, 0, g->ndev);
    memset(d->part_ev, 0, g->ndev * sizeof *d->part_ev);
    memset(d->red_wait, 0, g->ndev * sizeof *d->red_wait);
    memset(d->scr_ev, 0, g->ndev * sizeof *d->scr_ev);
    d->red_pending = 0;
    d->red_stage = 0;
}

void clf__graph_modes_free(clf_graph *g, clf__gdata *d)
{
    drop_partials(g, d);
    free(d->part);
    free(d->part_on);
    free(d->part_ev);
    free(d->red_src);
    free(d->red_wait);
    free(d->scr_ev);
    d->part = NULL;
    d->part_on = NULL;
    d->part_ev = NULL;
    d->red_src = NULL;
    d->red_wait = NULL;
    d->scr_ev = NULL;
}

/* The identity of op on type, in *v (its bytes returned) and its C type class in *cls. */
static size_t identity(unsigned op, unsigned type, void *v, unsigned *cls)
{
    *cls = type == CLF_TYPE_FLOAT || type == CLF_TYPE_DOUBLE ? 2 : 1;
    int sum = op == CLF_REDUCE_SUM, prod = op == CLF_REDUCE_PROD, mn = op == CLF_REDUCE_MIN;
    switch (type) {
    case CLF_TYPE_INT32: {
        int32_t x = sum ? 0 : prod ? 1 : mn ? INT32_MAX : INT32_MIN;
        memcpy(v, &x, sizeof x);
        return sizeof x;
    }
    case CLF_TYPE_UINT32: {
        uint32_t x = sum ? 0 : prod ? 1 : mn ? UINT32_MAX : 0;
        memcpy(v, &x, sizeof x);
        return sizeof x;
    }
    case CLF_TYPE_INT64: {
        int64_t x = sum ? 0 : prod ? 1 : mn ? INT64_MAX : INT64_MIN;
        memcpy(v, &x, sizeof x);
        return sizeof x;
    }
    case CLF_TYPE_FLOAT: {
        float x = sum ? 0.0f : prod ? 1.0f : mn ? INFINITY : -INFINITY;
        memcpy(v, &x, sizeof x);
        return sizeof x;
    }
    default: {
        double x = sum ? 0.0 : prod ? 1.0 : mn ? (double)INFINITY : -(double)INFINITY;
        memcpy(v, &x, sizeof x);
        return sizeof x;
    }
    }
}

clf_status clf__graph_partial(clf_graph *g, clf__gdata *d, size_t dev, clf_buffer **out,
                              clf_event **wait)
{
    clf_status st = clf__graph_modes_state(g, d);
    if (st)
        return st;
    if (!d->part_on[dev]) {
        size_t bytes = d->buf->size;
        if (!d->part[dev]) {
            /* Room for it was made with the node's copies (clf__graph_make_room()). */
            if ((st = clf_buffer_create(&d->part[dev], g->fleet, dev, bytes, 0)) != CLF_SUCCESS)
                return clf__prefix_error(st, "a reduction's %zu-byte partial on device %zu: ",
                                         bytes, dev);
            clf__graph_mem_add(g, dev, bytes); /* counted as the copies are */
        }
        unsigned char v[8];
        unsigned cls;
        size_t vs = identity(d->red_op, d->red_type, v, &cls);
        char name[48];
        snprintf(name, sizeof name, "clf_gred_fill_%s", type_names[d->red_type]);
        clf_arg args[2] = {CLF_BUF_OUT(d->part[dev]), CLF_SCALAR(&cls)};
        args[1].host = v;
        args[1].size = vs;
        args[1].type = cls;
        clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
        kd.kernel = name;
        kd.global[0] = bytes / clf_type_size((clf_type)d->red_type);
        clf_event *ev = NULL;
        /* A new partial: nothing queued uses it, so the fill waits for nothing. */
        st = clf_kernel_enqueue(g->fleet, g->redprog, dev, &kd, args, 2, NULL, 0, &ev);
        if (st)
            return clf__prefix_error(st, "filling a reduction's partial on device %zu: ", dev);
        if ((st = clf__graph_keep(g, ev, NULL)) != CLF_SUCCESS)
            return st;
        d->part_ev[dev] = ev;
        d->part_on[dev] = 1;
        d->red_pending = 1;
    }
    *out = d->part[dev];
    *wait = d->part_ev[dev];
    return CLF_SUCCESS;
}

clf_status clf__graph_mode_arg(clf_graph *g, clf__gdata *d, size_t dev, clf_arg *a,
                               clf_event **wait, size_t *nw, int *special)
{
    unsigned f = a->flags;
    *special = (f & (CLF_ARG_REDUCTION | CLF_ARG_SCRATCH)) != 0;
    if (!*special)
        return CLF_SUCCESS;
    clf_buffer *r = NULL;
    clf_event *w = NULL;
    clf_status st;
    if (f & CLF_ARG_REDUCTION) {
        st = clf__graph_partial(g, d, dev, &r, &w);
    } else if ((st = clf__graph_modes_state(g, d)) == CLF_SUCCESS) {
        st = clf__graph_replica(g, d, dev, &r); /* never made current: no copy */
        w = d->scr_ev[dev];
    }
    if (st)
        return st;
    if (w)
        wait[(*nw)++] = w;
    /* The kernel reads and writes its partial or its instance (clf_kernel_enqueue()'s
     * check of the parameter: not const). */
    a->flags = CLF_ARG_READ | CLF_ARG_WRITE;
    a->op = a->type = 0;
    a->host = r;
    return CLF_SUCCESS;
}

void clf__graph_modes_queued(clf_graph *g, const clf__gnode *n, size_t dev, clf_event *ev)
{
    for (size_t i = 0; i < n->nargs; i++) {
        unsigned f = n->args[i].a.flags;
        if (n->args[i].a.kind != CLF_ARG_KIND_BUFFER ||
            !(f & (CLF_ARG_REDUCTION | CLF_ARG_SCRATCH)))
            continue;
        clf__gdata *d = &g->data[n->args[i].data];
        if (f & CLF_ARG_REDUCTION) {
            d->part_ev[dev] = ev;
            d->red_last = (size_t)(n - g->nodes);
        } else {
            d->scr_ev[dev] = ev;
        }
    }
}

/* Whether node idx (g->nnodes: the run's end) ends data d's reduction phase. */
static int ends_phase(const clf_graph *g, size_t di, size_t idx)
{
    if (!g->data[di].red_pending)
        return 0;
    if (idx >= g->nnodes)
        return 1;
    const clf__gnode *n = &g->nodes[idx];
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].data == di && !(n->args[i].a.flags & CLF_ARG_REDUCTION))
            return 1;
    return 0;
}

/* Stage 0 of data d's combine: its buffer current on its own device, the other devices'
 * partials copied there; held when that device waits on the host (*held). */
static clf_status combine_begin(clf_graph *g, clf__gdata *d, int *held)
{
    size_t h = d->buf->device, bytes = d->buf->size;
    clf_status st = clf__graph_make_current(g, d, h);
    if (st)
        return st;
    int host_waits = !clf__devops(g->fleet, h)->wait_list_ok;
    if (host_waits && d->vev[h] && (st = clf__graph_hold(g, d->vev[h])) != CLF_SUCCESS)
        return st;
    for (size_t k = 0; k < g->ndev; k++) {
        if (!d->part_on[k])
            continue;
        if (k == h) {
            d->red_src[k] = d->part[k];
            d->red_wait[k] = d->part_ev[k];
        } else {
            if ((st = clf_buffer_create(&d->red_src[k], g->fleet, h, bytes, 0)) != CLF_SUCCESS)
                return clf__prefix_error(st, "a reduction's %zu-byte partial from device %zu "
                                             "on device %zu: ", bytes, k, h);
            /* Counted, but no room is made for it: the combine is no node whose copies
             * could be chosen among (doc/16-graphs.md, "Memory"). */
            clf__graph_mem_add(g, h, bytes);
            clf_event *ev = NULL, *w = d->part_ev[k];
            st = clf_copy_async(d->red_src[k], 0, d->part[k], 0, bytes, &w, 1, &ev);
            if (st)
                return clf__prefix_error(st, "copying a reduction's partial from device %zu "
                                             "to %zu: ", k, h);
            if ((st = clf__graph_copy_done(g, ev, k, h, bytes)) != CLF_SUCCESS)
                return st;
            d->red_wait[k] = ev;
        }
        if (host_waits && (st = clf__graph_hold(g, d->red_wait[k])) != CLF_SUCCESS)
            return st;
    }
    *held |= host_waits;
    d->red_stage = 1;
    return CLF_SUCCESS;
}

/* Stage 1: the combine kernels on the buffer's own device, one after the other; the buffer's
 * copy there becomes the only current one (a write by the phase's last node). */
static clf_status combine_end(clf_graph *g, clf__gdata *d)
{
    size_t h = d->buf->device;
    char name[48];
    clf_program *prog = NULL;
    clf_status st = clf__coll_reduce_kernel(g->fleet, h, (clf_type)d->red_type,
                                            (clf_reduce_op)d->red_op, &prog, name, sizeof name);
    if (st)
        st = clf__prefix_error(st, "the combine of a reduction on device %zu: ", h);
    clf_kernel_desc kd = CLF_KERNEL_DESC_INIT;
    kd.kernel = name;
    /* acc[i] = op(acc[i], partial[i]) for the whole buffer: offsets 0, count elements. */
    uint64_t zero = 0, count = d->buf->size / clf_type_size((clf_type)d->red_type);
    kd.global[0] = (size_t)count;
    clf_event *prev = d->vev[h];
    for (size_t k = 0; k < g->ndev && !st; k++) {
        if (!d->part_on[k])
            continue;
        clf_arg args[5] = {CLF_BUF_INOUT(d->buf), CLF_SCALAR(&zero), CLF_BUF_IN(d->red_src[k]),
                           CLF_SCALAR(&zero), CLF_SCALAR(&count)};
        clf_event *w[2], *ev = NULL;
        size_t nw = 0;
        if (prev)
            w[nw++] = prev;
        w[nw++] = d->red_wait[k];
        st = clf_kernel_enqueue(g->fleet, prog, h, &kd, args, 5, w, nw, &ev);
        if (st) {
            st = clf__prefix_error(st, "combining a reduction's partial from device %zu on "
                                       "device %zu: ", k, h);
            break;
        }
        if ((st = clf__graph_keep(g, ev, NULL)) != CLF_SUCCESS)
            break;
        prev = ev;
    }
    if (!st)
        clf__graph_written_on(g, d, h, prev, d->red_last);
    drop_partials(g, d);
    memset(d->part_on, 0, g->ndev);
    memset(d->part_ev, 0, g->ndev * sizeof *d->part_ev);
    memset(d->red_wait, 0, g->ndev * sizeof *d->red_wait);
    d->red_pending = 0;
    d->red_stage = 0;
    return st;
}

int clf__graph_flush(clf_graph *g, size_t idx)
{
    clf_status st = CLF_SUCCESS;
    int held = 0, staged = 0;
    for (size_t i = 0; i < g->ndata && !st; i++)
        if (!g->data[i].is_array && ends_phase(g, i, idx) && !g->data[i].red_stage)
            st = combine_begin(g, &g->data[i], &held);
    for (size_t i = 0; i < g->ndata; i++)
        staged |= !g->data[i].is_array && g->data[i].red_stage == 1;
    if (!staged && !st)
        return 0; /* nothing to combine: g->hold may be a node's, left alone */
    if (!st && held && clf__graph_defer(g))
        return 1;
    if (!st)
        st = clf__evlist_finish(&g->hold, CLF_SUCCESS); /* the statuses of what was held */
    for (size_t i = 0; i < g->ndata && !st; i++)
        if (!g->data[i].is_array && g->data[i].red_stage == 1)
            st = combine_end(g, &g->data[i]);
    if (st) {
        char where[48];
        if (idx < g->nnodes)
            snprintf(where, sizeof where, "node %zu", idx);
        else
            snprintf(where, sizeof where, "the run's end");
        clf__graph_failed(g, clf__prefix_error(st, "graph: combining a reduction before %s: ",
                                               where));
        return -1;
    }
    return 0;
}

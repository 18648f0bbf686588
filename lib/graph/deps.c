/*
 * Graphs: the dependencies of a node, inferred from its access modes in recording order.
 *
 * Per piece of data the graph keeps its last writer and the readers since. A node that
 * reads depends on the last writer (read after write); a node that writes depends on the
 * last writer (write after write) and on every reader since (write after read), and becomes
 * the last writer. A node only ever depends on nodes recorded before it, so recording order
 * is a topological order and no cycle can be built.
 *
 * Reductions (CLF_ARG_REDUCTION): a node that reduces into data depends on its last writer
 * and on the readers since (the combine overwrites the buffer after them), not on the other
 * nodes that reduce into it; it joins the data's reducers, on which every later read and
 * write depends (they wait for the combine). A write ends the group. Scratch accesses
 * (CLF_ARG_SCRATCH) cause no dependency and change nothing.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* What node n does to data d over all its arguments (a buffer may be passed twice). */
unsigned clf__graph_access(const clf__gnode *n, size_t d)
{
    unsigned m = 0;
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].data == d)
            m |= n->args[i].a.flags & (CLF_ARG_READ | CLF_ARG_WRITE);
    return m;
}

clf_status clf__graph_deps(clf_graph *g, size_t idx)
{
    clf__gnode *n = &g->nodes[idx];
    /* First every allocation, then the changes: a failure leaves the graph as it was. */
    size_t cap = 0;
    for (size_t i = 0; i < n->nargs; i++)
        if (n->args[i].data != SIZE_MAX)
            cap += 1 + g->data[n->args[i].data].nreaders + g->data[n->args[i].data].nredux;
    size_t *preds = cap ? malloc(cap * sizeof *preds) : NULL;
    if (cap && !preds)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
    for (size_t i = 0; i < n->nargs; i++) {
        size_t di = n->args[i].data;
        if (di == SIZE_MAX)
            continue;
        clf__gdata *d = &g->data[di];
        if (d->nreaders == d->cap_readers) {
            size_t c = d->cap_readers ? 2 * d->cap_readers : 8;
            size_t *r = realloc(d->readers, c * sizeof *r);
            if (!r) {
                free(preds);
                return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
            }
            d->readers = r;
            d->cap_readers = c;
        }
        if (d->nredux == d->cap_redux) {
            size_t c = d->cap_redux ? 2 * d->cap_redux : 8;
            size_t *r = realloc(d->redux, c * sizeof *r);
            if (!r) {
                free(preds);
                return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "graph: out of memory");
            }
            d->redux = r;
            d->cap_redux = c;
        }
    }
    size_t np = 0;
    for (size_t i = 0; i < n->nargs; i++) {
        size_t di = n->args[i].data;
        if (di == SIZE_MAX)
            continue;
        clf__gdata *d = &g->data[di];
        unsigned f = n->args[i].a.flags;
        if (f & CLF_ARG_SCRATCH)
            continue;
        unsigned m = clf__graph_access(n, di);
        if (d->last_writer != SIZE_MAX)
            preds[np++] = d->last_writer; /* RAW, or WAW */
        if ((m & CLF_ARG_WRITE) || (f & CLF_ARG_REDUCTION))
            for (size_t r = 0; r < d->nreaders; r++)
                if (d->readers[r] != idx)
                    preds[np++] = d->readers[r]; /* WAR */
        if (!(f & CLF_ARG_REDUCTION))
            for (size_t r = 0; r < d->nredux; r++)
                preds[np++] = d->redux[r]; /* after the combine */
    }
    qsort(preds, np, sizeof *preds, cmp_size);
    size_t k = 0;
    for (size_t i = 0; i < np; i++)
        if (k == 0 || preds[k - 1] != preds[i])
            preds[k++] = preds[i];
    n->preds = preds;
    n->npreds = k;
    g->edges += k;
    /* Now the data's state, once per piece of data of the node. */
    for (size_t i = 0; i < n->nargs; i++) {
        size_t di = n->args[i].data;
        if (di == SIZE_MAX)
            continue;
        clf__gdata *d = &g->data[di];
        unsigned f = n->args[i].a.flags;
        if (f & CLF_ARG_SCRATCH)
            continue;
        unsigned m = clf__graph_access(n, di);
        if (f & CLF_ARG_REDUCTION) {
            /* The readers so far precede it, and every later access depends on it. */
            d->nreaders = 0;
            if (!d->nredux || d->redux[d->nredux - 1] != idx)
                d->redux[d->nredux++] = idx;
        } else if (m & CLF_ARG_WRITE) {
            d->last_writer = idx;
            d->nreaders = 0;
            d->nredux = 0;
        } else if (!d->nreaders || d->readers[d->nreaders - 1] != idx) {
            d->readers[d->nreaders++] = idx;
        }
    }
    return CLF_SUCCESS;
}

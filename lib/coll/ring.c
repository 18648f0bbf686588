/*
 * The schedules of the collectives between devices, queued at once as a graph
 * of events, chunk by chunk, then waited for (collective.c): a chunk moves on
 * as soon as what it depends on is done, so transfers overlap the reduction
 * kernels and the hops of a chain overlap each other.
 *
 *  - all-reduce (allreduce.c chooses it or the host combine): a ring. The count is cut into one segment per device, each
 *    segment into chunks. Reduce-scatter: in step k device i sends segment
 *    i-k to device i+1, which combines it into its own copy; after n-1 steps
 *    device i holds segment i+1 fully reduced. All-gather: in n-1 more steps
 *    the reduced segments travel around the ring. Each device sends and
 *    receives 2(n-1)/n of the data, whatever n.
 *  - all-gather: the ring's second half, each device starting with its block.
 *  - reduce (to a device or the host): a pipelined chain ending at the root;
 *    the partial result travels in scratch buffers, so no buffer but the
 *    root's changes.
 *  - broadcast: a pipelined chain from the root.
 */
#include "coll.h"

#include <stdlib.h>
#include <string.h>

typedef clf__coll coll;
#define MAXN CLF__COLL_MAXN

/* ---- ring ---------------------------------------------------------------------------- */

/*
 * Per (position, segment, chunk) of a ring: the last event that wrote the region
 * and the last that read it since (a write waits for both, a read for the write).
 * The schedules read a region at most once between two writes.
 */
typedef struct ring {
    size_t n, nch, ce;
    size_t first[MAXN], len[MAXN]; /* segments, in elements */
    clf_event **wr, **rd;
} ring;

static clf_event **cell(ring *r, clf_event **t, size_t i, size_t s, size_t ch)
{
    return &t[(i * r->n + s) * r->nch + ch];
}

static clf_status ring_init(coll *c, ring *r, size_t count, const clf_collective_options *o)
{
    memset(r, 0, sizeof *r);
    r->n = c->n;
    size_t maxseg = 0;
    for (size_t s = 0; s < c->n; s++) {
        clf_distribution_part(&r->first[s], &r->len[s], count, c->n, s, CLF_DIST_BLOCK, 0);
        maxseg = r->len[s] > maxseg ? r->len[s] : maxseg;
    }
    r->ce = clf__coll_chunk_elems(c, o, maxseg, CLF__MAX_RING_CHUNKS);
    r->nch = clf__coll_nchunks(maxseg, r->ce);
    size_t cells = c->n * c->n * r->nch;
    r->wr = calloc(cells, sizeof *r->wr);
    r->rd = calloc(cells, sizeof *r->rd);
    if (!r->wr || !r->rd)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", c->fn);
    for (size_t i = 0; i < c->n; i++)
        for (size_t s = 0; s < c->n; s++)
            for (size_t ch = 0; ch < r->nch; ch++)
                *cell(r, r->wr, i, s, ch) = c->entry[i];
    return CLF_SUCCESS;
}

static void ring_free(ring *r)
{
    free(r->wr);
    free(r->rd);
}

/* Reduce-scatter: afterwards position i holds segment i+1 reduced over every position. */
static clf_status ring_reduce_scatter(coll *c, ring *r)
{
    size_t n = c->n, es = c->es, maxseg = 0;
    for (size_t s = 0; s < n; s++)
        maxseg = r->len[s] > maxseg ? r->len[s] : maxseg;
    clf_status st = CLF_SUCCESS;
    /* The combine that last read each scratch chunk, per device and half. */
    clf_event **sc = calloc(n * 2 * r->nch, sizeof *sc);
    if (!sc)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", c->fn);
    /* Two scratch halves per device: step k receives into half k % 2, so a chunk of
     * step k+1 may arrive while step k's combine still reads its own. */
    for (size_t i = 0; i < n; i++)
        for (int h = 0; h < (n > 2 ? 2 : 1); h++)
            CLF__TRY(st, clf__coll_scratch(c, i, h, maxseg * es));
    for (size_t k = 0; k + 1 < n; k++) {
        int h = (int)(k % 2);
        for (size_t i = 0; i < n; i++) {
            size_t s = (i + n - k) % n, j = (i + 1) % n;
            for (size_t ch = 0; ch < clf__coll_nchunks(r->len[s], r->ce); ch++) {
                size_t off = r->first[s] + ch * r->ce,
                       l = clf__coll_chunk_len(r->len[s], r->ce, ch);
                clf_event *cp, *cb, **slot = &sc[(j * 2 + (size_t)h) * r->nch + ch];
                CLF__TRY(st,
                         clf__coll_copy(c, c->scratch[j][h], ch * r->ce * es, c->buf[i], off * es,
                                        l * es, *cell(r, r->wr, i, s, ch), *slot, NULL, &cp));
                *cell(r, r->rd, i, s, ch) = cp;
                CLF__TRY(st, clf__coll_combine(c, j, c->buf[j], off, c->scratch[j][h], ch * r->ce,
                                               l, cp, *cell(r, r->wr, j, s, ch),
                                               *cell(r, r->rd, j, s, ch), &cb));
                *cell(r, r->wr, j, s, ch) = cb;
                *cell(r, r->rd, j, s, ch) = NULL;
                *slot = cb;
            }
        }
    }
out:
    free(sc);
    return st;
}

/* All-gather: position i starts with segment i + shift complete; afterwards every
 * position holds every segment. */
static clf_status ring_allgather(coll *c, ring *r, size_t shift)
{
    size_t n = c->n, es = c->es;
    clf_status st = CLF_SUCCESS;
    for (size_t k = 0; k + 1 < n; k++)
        for (size_t i = 0; i < n; i++) {
            size_t s = (i + shift + n - k) % n, j = (i + 1) % n;
            for (size_t ch = 0; ch < clf__coll_nchunks(r->len[s], r->ce); ch++) {
                size_t off = (r->first[s] + ch * r->ce) * es;
                clf_event *cp;
                CLF__TRY(st, clf__coll_copy(c, c->buf[j], off, c->buf[i], off,
                                            clf__coll_chunk_len(r->len[s], r->ce, ch) * es,
                                            *cell(r, r->wr, i, s, ch), *cell(r, r->wr, j, s, ch),
                                            *cell(r, r->rd, j, s, ch), &cp));
                *cell(r, r->rd, i, s, ch) = cp;
                *cell(r, r->wr, j, s, ch) = cp;
                *cell(r, r->rd, j, s, ch) = NULL;
            }
        }
out:
    return st;
}

clf_status clf__allreduce_ring(coll *c, size_t count, const clf_collective_options *o)
{
    ring r = {0};
    clf_status st;
    CLF__TRY(st, ring_init(c, &r, count, o));
    CLF__TRY(st, ring_reduce_scatter(c, &r));
    CLF__TRY(st, ring_allgather(c, &r, 1));
out:
    ring_free(&r);
    return st;
}

size_t clf__allreduce_ring_chunks(const coll *c, size_t count, const clf_collective_options *o)
{
    /* The first segment is the longest (clf_distribution_part() gives the remainder to the
     * first ones), as ring_init() finds. */
    size_t seg = count / c->n + (count % c->n != 0);
    return clf__coll_nchunks(seg, clf__coll_chunk_elems(c, o, seg, CLF__MAX_RING_CHUNKS));
}

clf_status clf_allgather(clf_buffer *const *bufs, size_t nbufs, size_t count, size_t elem_size,
                         const clf_collective_options *opts)
{
    coll c;
    ring r = {0};
    clf_status st =
        clf__coll_validate(&c, "clf_allgather", bufs, nbufs, opts, count, elem_size, NULL, 0);
    if (st != CLF_SUCCESS || nbufs == 1)
        return st;
    CLF__TRY(st, clf__coll_entry(&c));
    CLF__TRY(st, ring_init(&c, &r, count, opts));
    CLF__TRY(st, ring_allgather(&c, &r, 0));
out:
    st = clf__coll_finish(&c, st);
    ring_free(&r);
    return st;
}

/* ---- chains ---------------------------------------------------------------------------- */

/*
 * Reduce along the chain of positions order[0..n): the partial result travels
 * in scratch buffers (position order[h] combines its own buffer into what it
 * received); the last position combines into its own buffer (to_root), or keeps
 * the result in its scratch buffer, which is read into host.
 */
static clf_status chain_reduce(coll *c, const size_t *order, size_t count,
                               const clf_collective_options *opts, void *host)
{
    size_t n = c->n, es = c->es, ce = clf__coll_chunk_elems(c, opts, count, CLF__MAX_CHAIN_CHUNKS);
    size_t nch = clf__coll_nchunks(count, ce);
    clf_status st = CLF_SUCCESS;
    clf_event **prev = calloc(nch, sizeof *prev);
    if (!prev)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", c->fn);
    for (size_t h = 1; h < n; h++)
        CLF__TRY(st, clf__coll_scratch(c, order[h], 0, count * es));
    for (size_t ch = 0; ch < nch; ch++)
        prev[ch] = c->entry[order[0]];
    for (size_t h = 0; h + 1 < n; h++) {
        size_t from = order[h], to = order[h + 1];
        clf_buffer *src = h == 0 ? c->buf[from] : c->scratch[from][0];
        int last_into_buffer = h + 2 == n && !host;
        for (size_t ch = 0; ch < nch; ch++) {
            size_t off = ch * ce, l = clf__coll_chunk_len(count, ce, ch);
            clf_event *cp;
            CLF__TRY(st, clf__coll_copy(c, c->scratch[to][0], off * es, src, off * es, l * es,
                                        prev[ch], NULL, NULL, &cp));
            if (last_into_buffer)
                st = clf__coll_combine(c, to, c->buf[to], off, c->scratch[to][0], off, l, cp,
                                       c->entry[to], NULL, &prev[ch]);
            else
                st = clf__coll_combine(c, to, c->scratch[to][0], off, c->buf[to], off, l, cp,
                                       c->entry[to], NULL, &prev[ch]);
            if (st != CLF_SUCCESS)
                goto out;
        }
    }
    if (host) {
        size_t last = order[n - 1];
        clf_buffer *b = n > 1 ? c->scratch[last][0] : c->buf[last];
        for (size_t ch = 0; ch < nch; ch++)
            CLF__TRY(st, clf__coll_host_io(c, b, 0, ch * ce * es,
                                           clf__coll_chunk_len(count, ce, ch) * es,
                                           (char *)host + ch * ce * es, prev[ch]));
    }
out:
    free(prev);
    return st;
}

static clf_status reduce_common(const char *fn, void *host, clf_buffer *const *bufs, size_t nbufs,
                                size_t count, clf_type type, clf_reduce_op op, size_t root,
                                const clf_collective_options *opts)
{
    coll c;
    size_t order[MAXN];
    clf_status st = clf__coll_validate(&c, fn, bufs, nbufs, opts, count, 0, &type, op);
    if (st == CLF_SUCCESS && !host && root >= nbufs)
        st = clf__fail(CLF_ERROR_OUT_OF_RANGE, "%s: root %zu, but %zu buffers", fn, root, nbufs);
    if (st != CLF_SUCCESS)
        return st;
    if (nbufs == 1 && !host)
        return CLF_SUCCESS;
    /* The chain ends at the root: it starts right after it. */
    for (size_t h = 0; h < nbufs; h++)
        order[h] = host ? h : (root + 1 + h) % nbufs;
    if (nbufs > 1)
        CLF__TRY(st, clf__coll_kernels(&c, type, op));
    CLF__TRY(st, clf__coll_entry(&c));
    CLF__TRY(st, chain_reduce(&c, order, count, opts, host));
out:
    return clf__coll_finish(&c, st);
}

clf_status clf_reduce(clf_buffer *const *bufs, size_t nbufs, size_t count, clf_type type,
                      clf_reduce_op op, size_t root, const clf_collective_options *opts)
{
    return reduce_common("clf_reduce", NULL, bufs, nbufs, count, type, op, root, opts);
}

clf_status clf_reduce_to_host(void *result, clf_buffer *const *bufs, size_t nbufs, size_t count,
                              clf_type type, clf_reduce_op op, const clf_collective_options *opts)
{
    if (!result)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_reduce_to_host: result is NULL");
    return reduce_common("clf_reduce_to_host", result, bufs, nbufs, count, type, op, 0, opts);
}

clf_status clf_broadcast(clf_buffer *const *bufs, size_t nbufs, size_t size, size_t root,
                         const clf_collective_options *opts)
{
    coll c;
    clf_status st = clf__coll_validate(&c, "clf_broadcast", bufs, nbufs, opts, size, 1, NULL, 0);
    if (st == CLF_SUCCESS && root >= nbufs)
        st = clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_broadcast: root %zu, but %zu buffers", root,
                       nbufs);
    if (st != CLF_SUCCESS || nbufs == 1)
        return st;
    size_t ce = clf__coll_chunk_elems(&c, opts, size, CLF__MAX_CHAIN_CHUNKS),
           nch = clf__coll_nchunks(size, ce);
    clf_event **prev = calloc(nch, sizeof *prev);
    if (!prev)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_broadcast: out of memory");
    CLF__TRY(st, clf__coll_entry(&c));
    for (size_t ch = 0; ch < nch; ch++)
        prev[ch] = c.entry[root];
    /* A chain from the root: hop h forwards chunk ch once hop h-1 has delivered it. */
    for (size_t h = 0; h + 1 < nbufs; h++) {
        size_t from = (root + h) % nbufs, to = (root + h + 1) % nbufs;
        for (size_t ch = 0; ch < nch; ch++)
            CLF__TRY(st, clf__coll_copy(&c, c.buf[to], ch * ce, c.buf[from], ch * ce,
                                        clf__coll_chunk_len(size, ce, ch), prev[ch], c.entry[to],
                                        NULL, &prev[ch]));
    }
out:
    free(prev);
    return clf__coll_finish(&c, st);
}

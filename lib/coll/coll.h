/* lib/coll: collectives on per-device buffers. Shared by the collectives (collective.c: the
 * machinery, scatter and gather; collclock.c: a collective's own time; ring.c: the ring and
 * chain schedules; hostred.c: the host combine; allreduce.c: the all-reduce and its choice
 * of algorithm). Not installed. */
#ifndef CLFLEET_COLL_H
#define CLFLEET_COLL_H

#include "xfer/xfer.h"

#define CLF__COLL_MAXN CLF_MAX_LAUNCH_DEVICES
/* Most chunks per ring segment and per chain: more gives no more overlap, only more
 * commands (each costs microseconds, a staged copy more). */
#define CLF__MAX_RING_CHUNKS 64
#define CLF__MAX_CHAIN_CHUNKS 256

/* One collective in flight: its devices, kernels, scratch buffers and every event it made. */
typedef struct clf__coll {
    const char *fn;
    clf_fleet *fl;
    size_t n;
    clf_buffer *buf[CLF__COLL_MAXN];
    size_t es; /* bytes per element */
    cl_kernel k[CLF__COLL_MAXN];
    char kname[48]; /* the combine kernel's name */
    /* What the timeline calls the combine kernels: the kernel's name with the algorithm of
     * an all-reduce, so that a trace shows which one ran ("clf_reduce_sum_f32 (ring)");
     * empty: kname. */
    char klabel[64];
    /* What errors call the host reads and writes (NULL: fn). */
    const char *tag;
    size_t wg[CLF__COLL_MAXN];
    clf_buffer *scratch[CLF__COLL_MAXN][2];
    clf_event *entry[CLF__COLL_MAXN]; /* the device's work queued before the collective */
    clf_event **ev;                   /* every event made, waited for and released at the end */
    size_t nev, cap;
    int host_order; /* wait for each command before the next (see collective.c) */
    /* A timed collective (the all-reduce times what it runs): set timed before
     * clf__coll_entry(), which then notes when each device's earlier work ends, and t0 after
     * it; clf__coll_finish() leaves in elapsed_s the seconds from the later of t0 and that
     * work's end to the last command's end, or clears timed when it cannot tell. */
    int timed;
    double t0, elapsed_s;
    struct coll_clock *clock;
} clf__coll;

/* Check a collective over whole buffers: the buffers (one fleet, distinct devices), the
 * options, count elements of es bytes (of *type, for a reduction, with op) in each. */
clf_status clf__coll_validate(clf__coll *c, const char *fn, clf_buffer *const *bufs, size_t n,
                              const clf_collective_options *o, size_t count, size_t es,
                              const clf_type *type, clf_reduce_op op);
/* The combine kernel of (op, type) on every position's device. */
clf_status clf__coll_kernels(clf__coll *c, clf_type type, clf_reduce_op op);
/* For layers above the collectives (the graph's reduction phases): the element-wise combine
 * kernel of (op, type) on device dev, from cl/reduce.cl as the collectives build it (once
 * per fleet, owned by the fleet: not to be destroyed). *prog: the program; name (len bytes):
 * the kernel's name. Its arguments: (acc, ulong acc_off, x, ulong x_off, ulong n), in
 * elements; acc[acc_off + i] = op(acc[acc_off + i], x[x_off + i]) for i < n (a larger global
 * size is guarded). CLF_ERROR_UNSUPPORTED for doubles on a device without them. */
clf_status clf__coll_reduce_kernel(clf_fleet *fl, size_t dev, clf_type type, clf_reduce_op op,
                                   clf_program **prog, char *name, size_t len);
/* Markers: the collective's commands follow the work queued on the devices before it (for a
 * timed collective, the time each ends is noted). */
clf_status clf__coll_entry(clf__coll *c);
/* Scratch buffer half (0 or 1) of position i, at least bytes (kept by the fleet after). */
clf_status clf__coll_scratch(clf__coll *c, size_t i, int half, size_t bytes);
/* Host memory of at least bytes, kept by the fleet between calls (a fresh block's pages are
 * faulted in on first touch, every call); NULL without memory. Put it back (or free it) with
 * clf__coll_host_put(fl, p, the bytes asked for); accepts NULL. */
void *clf__coll_host_get(clf_fleet *fl, size_t bytes);
void clf__coll_host_put(clf_fleet *fl, void *p, size_t bytes);
/* For a timed collective (c->timed): note when marker m (not yet wrapped) completes; a
 * failure leaves the call untimed (collclock.c). */
void clf__coll_clock_watch(clf__coll *c, cl_event m);
/* At the end of a timed collective, every command done: c->elapsed_s, or c->timed cleared
 * when the start is unknown (a callback not yet run, a failed marker). Releases the clock. */
void clf__coll_clock_stop(clf__coll *c);
/* Wait for every command queued, free everything; st, or the first command's failure. */
clf_status clf__coll_finish(clf__coll *c, clf_status st);
/* A copy between devices after up to three events (NULL ones skipped). */
clf_status clf__coll_copy(clf__coll *c, clf_buffer *dst, size_t doff, clf_buffer *src, size_t soff,
                          size_t bytes, clf_event *w0, clf_event *w1, clf_event *w2,
                          clf_event **out);
/* On position i's device, acc[acc_off + e] = op(acc[acc_off + e], x[x_off + e]) for e < len
 * (elements), after up to three events. */
clf_status clf__coll_combine(clf__coll *c, size_t i, clf_buffer *acc, size_t acc_off, clf_buffer *x,
                             size_t x_off, size_t len, clf_event *w0, clf_event *w1, clf_event *w2,
                             clf_event **out);
/* Wait for every command queued so far; the first failure, else CLF_SUCCESS. The events stay
 * tracked (clf__coll_finish() releases them). */
clf_status clf__coll_wait_all(clf__coll *c);
/* Read (write = 0) or write bytes between a buffer and the host, after one event. */
clf_status clf__coll_host_io(clf__coll *c, clf_buffer *b, int write, size_t off, size_t bytes,
                             void *host, clf_event *after);
/* Elements per chunk: the option, or a quarter of a segment within bounds; never so many
 * chunks to a segment of seg elements as max_chunks. */
size_t clf__coll_chunk_elems(const clf__coll *c, const clf_collective_options *o, size_t seg,
                             size_t max_chunks);

/* The all-reduce's schedules on a validated collective whose kernels (the ring) and entry
 * markers are made: the ring (ring.c), the host combine (hostred.c). */
clf_status clf__allreduce_ring(clf__coll *c, size_t count, const clf_collective_options *o);
clf_status clf__allreduce_host(clf__coll *c, size_t count, clf_type type, clf_reduce_op op);
/* The ring's chunks per segment for count elements (as clf__allreduce_ring() cuts them). */
size_t clf__allreduce_ring_chunks(const clf__coll *c, size_t count,
                                  const clf_collective_options *o);

static inline size_t clf__coll_nchunks(size_t len, size_t ce)
{
    return len / ce + (len % ce != 0);
}

static inline size_t clf__coll_chunk_len(size_t len, size_t ce, size_t ch)
{
    return len - ch * ce < ce ? len - ch * ce : ce;
}

#endif

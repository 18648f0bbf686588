/*
 * The predicted time of each all-reduce algorithm (collcost.c), pure: the collectives
 * (lib/coll) gather the figures of a call's devices and links, and choose the least.
 */
#ifndef CLFLEET_COLLCOST_H
#define CLFLEET_COLLCOST_H

#include <stddef.h>

/* What the model knows of one position's device. */
typedef struct clf__ar_dev {
    double h2d_bps, d2h_bps; /* its link with the host, bytes per second each way */
    double combine_bps;      /* its combine kernel, bytes of input per second */
} clf__ar_dev;

/* One all-reduce call. */
typedef struct clf__ar_input {
    size_t n;                /* positions (devices), 2 or more */
    size_t bytes;            /* bytes of every buffer that take part */
    const clf__ar_dev *dev;  /* [n] */
    /* [n * n]: bandwidth of a copy from position i to j in bytes per second when a direct
     * path joins them (a copy in one context, peer to peer), 0 when it is staged through
     * the host (a read on i, then a write on j). */
    const double *peer_bps;
    double cmd_s;            /* fixed cost of one command (enqueue to completion) */
    double host_combine_bps; /* the host's combine loop, bytes of input per second */
    size_t ring_chunks;      /* chunks of a ring segment (clf__coll_chunk_elems()) */
} clf__ar_input;

/* Predicted seconds of the ring: 2(n-1) dependent steps of chunked copies (and, in the
 * first n-1, combine kernels), chunk after chunk; -1 for bad input. */
double clf__ar_ring_cost(const clf__ar_input *in);
/* Predicted seconds of the host combine: every buffer read at once (the slowest link sets
 * the time), n-1 combines on the host, the result written to every buffer at once; -1 for
 * bad input. */
double clf__ar_host_cost(const clf__ar_input *in);
/* 1 (the ring) or 2 (the host combine), the same numbers as clf_allreduce_algorithm's, by
 * least predicted time (a tie goes to the ring, which needs no host memory); both costs in
 * *ring_s and *host_s when not NULL. Bad input: 1 (the ring, as before the choice existed). */
int clf__ar_choose(const clf__ar_input *in, double *ring_s, double *host_s);

#endif

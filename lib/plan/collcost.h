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

/* What an AUTO all-reduce's choice rests on (the debug log names it). */
typedef enum clf__ar_basis {
    CLF__AR_PREDICTED = 0, /* the predictions: nothing measured, or the other far dearer */
    CLF__AR_MEASURED = 1,  /* both measured in the size class: the faster ran */
    CLF__AR_EXPLORING = 2, /* one measured: the other runs, to be measured */
    CLF__AR_RETRYING = 3   /* both measured: the slower runs again (clf__ar_policy_retry()) */
} clf__ar_basis;

/* "predicted", "measured", "exploring", "re-trying". */
const char *clf__ar_basis_name(clf__ar_basis b);

/* Samples an algorithm needs in a class before it counts as measured: the median of three
 * ignores one spike (a page-fault storm, a preempted thread), which a single sample would
 * make the algorithm's time for good, as the slower one is not run again. */
#define CLF__AR_MIN_SAMPLES 3

/* An algorithm not yet measured is tried only while its prediction is at most this many
 * times the measured one's prediction (collcost.c says why). */
#define CLF__AR_EXPLORE_BOUND 4.0

/* The size class of a call of bytes per buffer: floor(log2(bytes)), so that class k holds
 * 2^k to 2^(k+1) - 1 bytes (0 for 0 and 1 byte). */
unsigned clf__ar_size_class(size_t bytes);

/*
 * The AUTO all-reduce's choice from what is known of both algorithms in the call's size
 * class: their predicted seconds (ring_pred, host_pred, as clf__ar_choose() gives them; -1
 * unknown) and measured seconds for this call's bytes (ring_meas, host_meas; <= 0 or NaN:
 * not measured). Both measured: the faster (a tie to the ring). One measured: the other, to
 * measure it, unless its prediction is more than CLF__AR_EXPLORE_BOUND times the measured
 * one's (then the measured one). Neither: the predictions, as clf__ar_choose(). Returns 1
 * (the ring) or 2 (the host combine); the basis in *basis when not NULL.
 */
int clf__ar_policy(double ring_pred, double host_pred, double ring_meas, double host_meas,
                   clf__ar_basis *basis);

/* Winner calls before the loser's first re-try; the k-th waits CLF__AR_RETRY_CALLS << k of
 * them, k at most CLF__AR_RETRY_MAX_SHIFT (collcost.c says why). */
#define CLF__AR_RETRY_CALLS 16
#define CLF__AR_RETRY_MAX_SHIFT 10

/* The re-try schedule of one size class and set of devices (the caller keeps one per pair of
 * model keys, and serialises its use). All zero: nothing counted yet. */
typedef struct clf__ar_retry {
    unsigned long long since; /* AUTO calls that ran the winner since the loser last ran */
    unsigned k;               /* re-tries the loser lost since it last won one (<= MAX_SHIFT) */
    int loser;                /* 1 (the ring) or 2: whom since and k are about; 0: none */
} clf__ar_retry;

/* Winner calls the schedule rt waits for before its next re-try: CLF__AR_RETRY_CALLS << k. */
unsigned long long clf__ar_retry_interval(const clf__ar_retry *rt);

/*
 * As clf__ar_policy(), and where both are measured, the slower one (the loser) runs again,
 * basis CLF__AR_RETRYING, once rt counts clf__ar_retry_interval() calls of the faster since
 * it last ran, as long as its measured time is at most CLF__AR_EXPLORE_BOUND times the
 * faster one's. Reads rt only (NULL: no re-tries), so that a query (clf_allreduce_choice())
 * changes nothing: a call that runs its choice then tells clf__ar_retry_ran().
 */
int clf__ar_policy_retry(double ring_pred, double host_pred, double ring_meas, double host_meas,
                         const clf__ar_retry *rt, clf__ar_basis *basis);

/* A call ran what clf__ar_policy_retry() chose with these measured times and basis: counts a
 * winner call, or restarts the count at a re-try (so that concurrent calls re-try once);
 * before both are measured, or when the loser changes, the schedule starts afresh. */
void clf__ar_retry_ran(clf__ar_retry *rt, double ring_meas, double host_meas,
                       clf__ar_basis basis);

/* A re-try's outcome: its own seconds (<= 0 or NaN: no sample was kept, as the model drops a
 * key's first one in a process; nothing changes) against the winner's measured seconds when
 * it was chosen. A win resets the back-off to CLF__AR_RETRY_CALLS; a loss doubles it, up to
 * CLF__AR_RETRY_CALLS << CLF__AR_RETRY_MAX_SHIFT. */
void clf__ar_retry_done(clf__ar_retry *rt, double retry_s, double winner_s);

#endif

/*
 * The partitioner's private state (partition.c), shared with its cost-model rules
 * (partcost.c). Not part of partition.h's contract.
 */
#ifndef CLF_PLAN_PARTIMPL_H
#define CLF_PLAN_PARTIMPL_H

#include <pthread.h>

#include "partition.h"
#include "workprof.h"

/* Timed shares (fixed costs) are computed for at most this many devices; more: by weight. */
#define CLF__PART_TIMED_MAX 64

/* With a cost model, a pooled chunk's fixed cost is at most this fraction of its predicted
 * time on the device that takes it (timed_floor()). */
#define CLF__PART_FIXED_FRACTION 0.10L

typedef struct part_range {
    uint64_t lo, hi; /* [lo, hi); empty when lo == hi */
} part_range;

typedef struct part_dev {
    double w;           /* weight normalised to [0, 1]; 0 for an ineligible device */
    uint64_t cap;       /* max_units */
    uint64_t min_chunk; /* GUIDED m_i and least steal, clamped to total (rounded up when cut) */
    part_range own;     /* the part of its share not handed out yet */
    uint64_t piece;     /* STATIC: the share's chunks' length (UINT64_MAX: whole) */
    double rate;        /* units per second (timed partitioners) */
    double fixed_s;     /* seconds every chunk costs on it whatever its size (timed) */
    unsigned taken;     /* pooled chunks taken so far (DYNAMIC's varied sizes) */
    double live_units, live_s; /* measured in this launch (clf__part_measured()): work, s */
    int measured;              /* a chunk of it has been measured in this launch */
    int refused;               /* it stood aside while the pool held work (take_pool()) */
    int eligible;
    int retired;
} part_dev;

/* A chunk measured in this launch (clf__part_measured()), for the guessed weights' rule
 * (partcost.c): a slower device's speed beside the fastest's on the units nearest its own. */
#define CLF__PART_LOG 32
typedef struct part_meas {
    size_t dev;
    uint64_t off, len;
    double rate; /* work per second */
} part_meas;

typedef struct part_ops part_ops;

struct clf__part {
    pthread_mutex_t lock;
    const part_ops *ops;
    uint64_t total, gran;
    size_t ndev;
    part_dev *dev;
    size_t neligible;        /* devices that can hold a chunk */
    size_t nactive;          /* eligible and not retired */
    long double wsum_active; /* sum of w over the active devices */
    part_range *pool;
    size_t npool, cap_pool;
    uint64_t pool_units; /* units in the pool */
    uint64_t free_units, outstanding, done;
    uint64_t dyn_chunk; /* DYNAMIC chunk before rounding and caps */
    int timed; /* params gave fixed costs: pool_limit() balances predicted times */
    int keep_chunking; /* the caller chose the chunking: no timed_floor() */
    int vary_chunks;   /* clf__part_params.vary_chunks */
    long double guided_k;
    int dense;                        /* density holds the work density (params.density) */
    int unsure;                       /* params.unsure */
    part_meas log[CLF__PART_LOG];     /* unsure: the chunks measured last, a ring */
    size_t nlog;                      /* chunks logged (the next slot: nlog % CLF__PART_LOG) */
    double density[CLF__WPROF_BINS];
};

struct part_ops {
    const char *name;
    int shares; /* give each device a share proportional to its weight at creation */
    int steals; /* a device with no share left and an empty pool steals from another */
    /* Units device d would like from the pool (>= 1; rounded to gran and capped later). */
    uint64_t (*pool_want)(const clf__part *p, size_t d);
};

/* partcost.c, called under the partitioner's lock. */
long double clf__part_active_share(const clf__part *p, size_t d);
int clf__part_fastest_active(const clf__part *p, size_t d);
uint64_t clf__part_timed_floor(const clf__part *p, size_t d);
uint64_t clf__part_pool_limit(const clf__part *p, size_t d, int *alone);

#endif

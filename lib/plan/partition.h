/*
 * Cutting one launch's range into chunks for the devices of a fleet (partition.c).
 *
 * Pure: no OpenCL, only integers, a mutex and some floating point for the
 * shares. The launch engine creates one partitioner per launch; each device's
 * host thread then calls clf__part_next() until it returns 0.
 *
 * Units: the range is [0, total) along the slowest-varying dimension. Every
 * chunk is non-empty, starts at a multiple of gran, and its length is a
 * multiple of gran, except the one chunk that ends exactly at total (it is
 * shorter when total % gran != 0). Chunks never overlap and, once every
 * handed-out chunk is either completed or given back with clf__part_requeue(),
 * cover [0, total) exactly once. A device never receives a chunk longer than
 * its max_units.
 *
 * Every function locks the partitioner's own mutex: threads may call them
 * concurrently in any interleaving without an external lock.
 */
#ifndef CLFLEET_PARTITION_H
#define CLFLEET_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "clfleet.h"

/* How the range is cut. The launch engine maps the public strategy (and AUTO) onto these. */
typedef enum clf__part_strategy {
    /* One share per device, proportional to its weight; a share larger than the device's
     * max_units is handed out in several chunks (rounds). Shares are never stolen: only
     * clf__part_retire() and clf__part_requeue() move work between devices. */
    CLF__PART_STATIC = 0,
    /* Chunks pulled by whichever device asks: the fastest device's about total / (k *
     * devices), the others' smaller in proportion to their weights. */
    CLF__PART_DYNAMIC = 1,
    /* HGuided: chunk = min(R, max(m_i, roundup(R * P_i / K, gran))), then capped by max_units
     * (rounded down to whole granules). R: units not yet handed out; P_i: device i's weight
     * over the weights of the devices that can still take work (equal if those are all 0);
     * K (default CLF__PART_GUIDED_K); m_i a minimum chunk (default gran). After requeues the
     * free units may be several ranges: the chunk is also clipped to the lowest one. */
    CLF__PART_GUIDED = 2,
    /* GUIDED's chunks pulled from the shared pool, each capped by the device's max_units
     * (its memory budget): budget-sized chunks, streamed, when the data exceeds the budgets;
     * shrinking chunks pulled on demand otherwise, so irregular work balances. */
    CLF__PART_MEMORY_AWARE = 3
} clf__part_strategy;

#define CLF__PART_STRATEGY_COUNT 4

/*
 * GUIDED's default divisor K. The first chunk is R / (n K) on n equal devices: with K = 2 it
 * is a quarter of the range on two, and work bunched at the front of the range (the Mandelbrot
 * band im 0 .. 1.2 puts 55% of its cost in the first quarter of the rows) outlasts everything
 * else: efficiency 0.83 on two devices, 0.75 on three in a simulation without overheads. K = 4
 * gives 0.99 on both, and costs about twice as many chunks (still O(n K log(R))) on regular
 * work, where a chunk costs tens of microseconds.
 */
#define CLF__PART_GUIDED_K 4.0L

/* Tuning; a zero field means its default, so `clf__part_params p = {0};` is all defaults. */
typedef struct clf__part_params {
    unsigned chunks_per_device; /* DYNAMIC: k, about k chunks per device; 0: 4 */
    double guided_k; /* GUIDED, MEMORY_AWARE: the divisor K, > 0; 0: CLF__PART_GUIDED_K */
    /* GUIDED, MEMORY_AWARE: m_i for every device (rounded up to gran). 0: gran. */
    uint64_t min_chunk;
    /* The caller chose chunks_per_device or min_chunk: no chunk floor from the fixed cost
     * per chunk (timed_floor()); what was asked for is cut, e.g. to cross chunk boundaries
     * on purpose. The rest of the cost model (standing aside) still applies. */
    int keep_chunking;
    const uint64_t *min_chunks; /* per-device min_chunk, ndev entries (0: min_chunk); or NULL */
    /* The cost model's fixed seconds per chunk on each device (ndev entries, finite, >= 0), or
     * NULL for none. With them the pool is shared so that the devices finish together after
     * their fixed costs, and a device whose fixed cost plus smallest chunk outlasts the rest
     * stands aside (pool_limit() in partition.c). DYNAMIC, GUIDED and MEMORY_AWARE then cut
     * no pooled chunk whose fixed cost exceeds 10 % of its predicted time (at least
     * 9 fixed_s * rate units, within the device's share; timed_floor()). Needs rates, or
     * weights in units per s. */
    const double *fixed_s;
    /* Units per second of each device (ndev entries, finite, >= 0) for fixed_s; NULL: the
     * weights are. Ignored without fixed_s. */
    const double *rates;
    /* STATIC: where each device's share ends (ndev entries, nondecreasing, each a multiple of
     * gran or total, the last total; device i takes [ends[i-1], ends[i])), e.g. cut by the
     * kernel's work profile (workprof.h); NULL: shares by weight. A device of weight 0 or
     * that cannot hold a chunk must have an empty share. */
    const uint64_t *share_ends;
    /* STATIC: hand each share out in about this many chunks (0 or 1: one chunk, capped), none
     * shorter than piece_min units: the chunks, timed one by one, show where in the range the
     * work lies. */
    unsigned static_pieces;
    uint64_t piece_min;
    /* DYNAMIC: cut each device's chunks at 1, 2 and 1/2 times its size in turn, while the
     * cost model has no chunk line (fixed cost + units / rate) to learn from: chunks of one
     * size leave the fixed cost inseparable from the rate (clf__perf_line() needs sizes
     * apart), and the chunk floor (timed_floor()) then never engages. */
    int vary_chunks;
    /* A probe (exec/probe.c): device probe_dev, which the cost model leaves out (its weight
     * 0), takes the range's last probe_units units as one chunk of its own, and nothing more
     * while a device of weight > 0 is active; the pooled strategies share [0, total -
     * probe_units) among the others, STATIC cuts the tail off the share that held it (the
     * last in range order). 0: no probe. probe_units must be under total, start
     * at a multiple of gran (total - probe_units), and be within the device's max_units. */
    uint64_t probe_units;
    size_t probe_dev;
    /* The pooled strategies with a cost model (fixed_s): the range's work density,
     * CLF__WPROF_BINS entries (clf__wprof_density(): a unit of bin b costs density[b] units
     * of average cost), or NULL for uniform work. The rates are then work per second, and a
     * device's fair part of the pool is work, cut from the pool's front by what it costs:
     * on Mandelbrot a slow device's share by units of the costly middle rows ran 5x its
     * share's time (issue 27). */
    const double *density;
    /* The pooled strategies: the weights are guesses (no cost model has measured every
     * device: compute units x clock). Each device's first chunk is a quarter of what it
     * wants (at most a 64th of the range per device), it takes no second one before the
     * first is measured (clf__part_measured()), and then no chunk that it would finish
     * after the fastest device measured so far would finish the whole pool: a fresh
     * fleet's 50x slower device took 96 Mandelbrot rows by equal guesses, 2.1 s against
     * 0.2 s for the fast device alone (issue 27). A slower device's speed is also judged
     * beside the fastest's on the units nearest its own and at the pool's front, and it
     * takes half of what that allows in whole granules, or stands aside for the fastest
     * when that one cannot (partcost.c): units may differ in cost. */
    int unsure;
} clf__part_params;

/* One launch's partitioner (opaque). */
typedef struct clf__part clf__part;

/*
 * Create a partitioner.
 * weights: ndev relative throughputs, each finite and >= 0; NULL or all zero (among the
 *   devices that can hold a chunk) means equal. Every strategy takes from the shared pool
 *   by them: a device takes at most its share by weight of the pooled units and nothing
 *   when that is under one granule and a faster device is active (see pool_limit() in
 *   partition.c); a device alone, or the only one that does not stand aside (while no
 *   device has retired), takes the whole pool in one chunk (capped).
 * max_units: ndev caps on one chunk's length (from the memory budget); UINT64_MAX means
 *   unlimited, 0 means the device takes nothing; NULL means unlimited for all. A device with
 *   max_units < min(gran, total) can hold no chunk and never gets one ("ineligible").
 * params: NULL for the defaults.
 * Returns CLF_ERROR_ZERO_SIZE for total == 0; CLF_ERROR_INVALID_ARGUMENT for gran == 0,
 * ndev == 0, an unknown strategy, a negative/NaN/infinite weight, a bad K, or when no device
 * can hold one chunk; CLF_ERROR_NULL_POINTER; CLF_ERROR_OUT_OF_HOST_MEMORY.
 */
clf_status clf__part_create(clf__part **out, clf__part_strategy strategy, uint64_t total,
                            uint64_t gran, size_t ndev, const double *weights,
                            const uint64_t *max_units, const clf__part_params *params);
/* Free the partitioner; accepts NULL. No other thread may be using it. */
void clf__part_destroy(clf__part *p);

/*
 * The next chunk for device dev: 1 and [*off, *off + *len), or 0 when nothing is available
 * to this device now (its share and the shared pool are empty, nothing can be stolen, it is
 * retired or ineligible, or dev >= ndev). A 0 is final only when no chunk is outstanding:
 * a later clf__part_requeue() or clf__part_retire() may make work available again.
 * The chunk counts as outstanding until clf__part_complete() or clf__part_requeue().
 */
int clf__part_next(clf__part *p, size_t dev, uint64_t *off, uint64_t *len);

/*
 * Give an outstanding chunk (or an aligned piece of one) back to the shared pool, e.g. when
 * its device failed; any active device's next() may then take it, split to fit its cap.
 * off must be a multiple of gran, len a multiple of gran or off + len == total, the range
 * within [0, total), not free already, and len <= the outstanding units.
 * Returns CLF_ERROR_INVALID_ARGUMENT otherwise (and changes nothing).
 */
clf_status clf__part_requeue(clf__part *p, uint64_t off, uint64_t len);

/*
 * Device dev will ask no more (it failed or its thread stopped): whatever of its share it
 * has not taken moves to the shared pool, and the remaining devices' GUIDED shares P_i are
 * computed without it. Its outstanding chunks stay outstanding: requeue them if they were
 * not completed. Idempotent; ignores dev >= ndev. Returns the units of its share it had not
 * taken (now free for the others; 0 when already retired).
 */
uint64_t clf__part_retire(clf__part *p, size_t dev);

/* Mark len outstanding units as done (for the counts). CLF_ERROR_INVALID_ARGUMENT when len
 * exceeds the outstanding units. */
clf_status clf__part_complete(clf__part *p, uint64_t len);

/* Device dev ran the chunk [off, off + len) in seconds (from when it could start it to its
 * results): its speed in this launch, in work per second under a density, for
 * clf__part_params.unsure. A time that is not positive and finite (a coarse clock) marks
 * the device measured without a speed. Ignored for dev >= ndev. */
void clf__part_measured(clf__part *p, size_t dev, uint64_t off, uint64_t len, double seconds);

/*
 * Unit counts, each pointer may be NULL: free (not handed out: shares, pool), outstanding
 * (handed out, neither completed nor requeued), done (completed). They always sum to total.
 * The launch is finished when free == 0 and outstanding == 0; when free > 0 but no device
 * can take it (all retired), the launch has failed.
 */
void clf__part_counts(clf__part *p, uint64_t *free_units, uint64_t *outstanding, uint64_t *done);

/* Nonzero when device dev can hold a chunk at all (max_units >= min(gran, total)). */
int clf__part_eligible(const clf__part *p, size_t dev);

/*
 * When n devices, each taking c_i units at rate[i] units per second after a fixed cost of
 * fixed_s[i] seconds, finish `units` together: f_i + c_i / r_i = T with sum(c_i) = units, so
 * T = (units + sum(f_i r_i)) / sum(r_i) and c_i = r_i (T - f_i). Only devices with in[i] set
 * (and a rate) count; one whose fixed cost alone reaches T would get a negative share, so it
 * is cleared from in[] and T computed again (never device `keep`; SIZE_MAX: none). Returns
 * T, or NAN when no counted device has a rate. Used by the partitioner's pool and STATIC's
 * leave-out rule (exec/choose.c).
 */
long double clf__part_finish_together(size_t n, const double *rate, const double *fixed_s,
                                      unsigned char *in, size_t keep, long double units);

/* The least chunk worth its fixed cost on a device of rate units per second and fixed_s
 * seconds per chunk: its fixed cost at most 10 % of its predicted time (the pooled chunk
 * floor, partcost.c; exec/choose.c's probes ask whether a device would stand aside). */
long double clf__part_worth_fixed(double rate, double fixed_s);

/* "static", "dynamic", "guided", "memory-aware"; NULL for an unknown value. */
const char *clf__part_strategy_name(clf__part_strategy s);

#endif

/*
 * Distributed arrays on unequal devices, the pure part (rebalplan.c): which devices get a
 * part of a block array, and whether the parts should move between launches
 * (CLF_ARRAY_REBALANCE) given the speeds measured on each part. lib/data applies it.
 */
#ifndef CLFLEET_REBALPLAN_H
#define CLFLEET_REBALPLAN_H

#include <stddef.h>

#include "clfleet.h"

/* Migration figures until measured: the bandwidth of a move's copies (bytes per second)
 * and the cost of one halo copy beyond its bytes (enqueue to completion). */
#define CLF__REBAL_BW_GUESS 1e9
#define CLF__REBAL_COPY_S 30e-6
/* Steps a move must pay for at least (and steps between two moves), at most (a move pays
 * over the steps run since the last one, up to this), least relative gain, steps measured
 * before a decision, steps a speed is the median of. */
#define CLF__REBAL_HORIZON 10
#define CLF__REBAL_HORIZON_MAX 1000
#define CLF__REBAL_MIN_GAIN 0.10
#define CLF__REBAL_MIN_SAMPLES 3
#define CLF__REBAL_WINDOW 5

/* Units per device proportional to w (largest remainder; equal weights give
 * clf_distribution_part()'s block layout; w[i] == 0: none). */
void clf__split_units(size_t units, const double *w, size_t nd, size_t *cnt);
/* Seconds one part boundary adds to a step: the two halo copies across it (halo units,
 * both sides together, of unit_bytes at bw bytes per second; 0 without a halo). */
double clf__halo_cost(size_t halo, size_t unit_bytes, double bw);
/* Part boundaries of m parts (periodic: the last joins the first). */
size_t clf__boundaries(size_t m, int periodic);
/*
 * Which of k devices (fleet indices dev[]) get a part of `units` units, from their speeds s[]
 * (> 0; absolute: units per second, else only their ratios count) and the cost c of a part
 * boundary (seconds, used when absolute): the slowest is left out, again and again, while
 * its proportional share is narrower than the halo, or (absolute) the others would finish
 * the step sooner without it than with it and its boundary. keep[i] is set for the others;
 * a sentence per device left out is appended to why (n bytes). Returns how many are kept.
 */
size_t clf__balance_keep(const double *s, const size_t *dev, size_t k, size_t units,
                         size_t halo, int periodic, double c, int absolute,
                         unsigned char *keep, char *why, size_t n);

/* What a decision knows: the current cut and what was measured on it. */
typedef struct clf__rebal_in {
    size_t nparts;          /* at most CLF_MAX_LAUNCH_DEVICES */
    const size_t *device;   /* per part, in unit order */
    const size_t *count;    /* per part */
    const double *rate;     /* nsamples rows of nparts units per second (measured steps) */
    size_t nsamples;
    size_t units;           /* of the arrays */
    size_t granule;         /* new parts are multiples of it (the last takes the rest) */
    size_t halo_before, halo_after;
    int periodic;
    size_t unit_bytes;      /* of the array whose halo is exchanged (halo copies' bytes) */
    size_t move_unit_bytes; /* sum over the arrays that move together */
    double bw;              /* bytes per second measured by the last move, 0: none */
    size_t since;           /* steps since the last move */
    size_t migrations;      /* moves so far */
    /* Per part, seconds per step that do not scale with its units (kernel launches and
     * completions beyond one), or NULL for none: a part's step is fixed + count / speed. */
    const double *fixed;
} clf__rebal_in;

typedef struct clf__rebal_out {
    int move;                                /* 1: move to the cut below */
    size_t k;                                /* devices of the new cut */
    size_t device[CLF_MAX_LAUNCH_DEVICES];   /* in unit order */
    size_t count[CLF_MAX_LAUNCH_DEVICES];
    double step_s, best_s;                   /* predicted steps: now, with the new cut */
    size_t moved_bytes;                      /* bytes that change device */
    double cost_s;                           /* predicted cost of the move */
    char why[320];                           /* the decision in words */
} clf__rebal_out;

/* Decide (see CLF_ARRAY_REBALANCE in clfleet.h): out->move and the new cut, or why not.
 * Nothing to decide yet (fewer samples than CLF__REBAL_MIN_SAMPLES, one part): move 0 and
 * step_s 0. */
void clf__rebal_plan(const clf__rebal_in *in, clf__rebal_out *out);

#endif

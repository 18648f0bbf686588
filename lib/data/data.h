/* lib/data: distributed arrays (clf_array) that stay on the devices. State shared by the
 * array objects and their layout (array.c), the per-part dependency records and coherence
 * (deps.c), host access (host.c), the owner-computes launches (alaunch.c) and the data
 * between parts: halo exchange, redistribution and reductions (exchange.c). Not installed.
 *
 * Layer: above exec (kernels), coll (reductions) and xfer (device-to-device copies). */
#ifndef CLFLEET_DATA_H
#define CLFLEET_DATA_H

#include "coll/coll.h"
#include "exec/exec.h"
#include "xfer/xfer.h"

/*
 * Dependency tracking. Each part keeps a list of the operations queued on its buffer that
 * may not have completed: a byte range of the part's region (0 = unit first - halo_before),
 * whether it writes, and its event. An operation on [lo, hi) waits for every record that
 * overlaps it and writes, and, when it writes itself, for every overlapping reader too.
 * Completed records are pruned; a write covering a record entirely replaces it (whoever
 * waits for the write waits for it transitively). Byte ranges, not whole parts, so that a
 * halo copy into a part's halo does not wait for the kernel writing its owned units, and
 * the interior of an overlapped step does not wait for the boundary strips' copies.
 */
typedef struct clf__access {
    size_t lo, hi; /* bytes of the part's region */
    int write;
    clf_event *ev; /* held */
} clf__access;

/* Coherence of one part between the device and the host's mirror (clf_array.host). */
enum {
    CLF__PART_DEV_VALID = 1u << 0,  /* the device copy of the owned units is current */
    CLF__PART_HOST_VALID = 1u << 1, /* the host mirror of the owned units is current */
    CLF__PART_HALO_VALID = 1u << 2, /* the halo copies are current (exchanged or uploaded) */
    /* The host wrote the whole array (unmap after CLF_MAP_WRITE): the halo copies are
     * uploaded from the mirror, with the owned units, before the next device use. */
    CLF__PART_HALO_HOST = 1u << 3
};

typedef struct clf__array_part {
    size_t device;                  /* fleet index */
    size_t first, count;            /* owned units along dims-1 */
    size_t halo_before, halo_after; /* units held around them */
    clf_buffer *buf;                /* the device's buffer (shared by block-cyclic parts) */
    size_t offset;                  /* bytes of unit first - halo_before in buf */
    unsigned state;                 /* CLF__PART_* */
    clf__access *acc;               /* pending accesses */
    size_t nacc, cap;
} clf__array_part;

struct clf_array {
    clf_fleet *fleet;         /* referenced */
    clf_array_desc desc;      /* copy; desc.devices points at devices below, weights NULL */
    size_t *devices;          /* the devices holding parts, num in desc.num_devices */
    size_t unit_bytes;        /* elem_size * shape[0] * ... * shape[dims-2] */
    size_t units;             /* shape[dims-1] */
    size_t bytes;             /* unit_bytes * units */
    clf__array_part *parts;
    size_t nparts;
    clf_buffer **bufs;        /* one per device of devices[] */
    void *host;               /* the mirror (NULL until needed) */
    unsigned mapped;          /* CLF_MAP_* flags while mapped, 0 otherwise */
    struct clf__rebal *rebal; /* CLF_ARRAY_REBALANCE's measurements (rebalance.c), or NULL */
    clf_array_balance bal;    /* what clf_array_balance_info() reports */
};

/* Bytes of part p's region: (halo_before + count + halo_after) * unit_bytes. */
size_t clf__array_part_bytes(const clf_array *a, size_t p);
/* The region of the part q points at as runs of consecutive global units (a periodic halo
 * wraps): run i is region units [k[i], k[i] + n[i]) = global units [g[i], g[i] + n[i]).
 * Returns the number of runs (at most 3, since a halo is never wider than a part). */
size_t clf__part_runs(const clf_array *a, const clf__array_part *q, size_t k[4], size_t g[4],
                      size_t n[4]);
/* Units of a part's region: halo before, owned, halo after. */
size_t clf__region_units(const clf__array_part *q);
/* [*s, *e) = [a0, a1) intersected with [b0, b1); nonzero when that is not empty. */
int clf__clip(size_t a0, size_t a1, size_t b0, size_t b1, size_t *s, size_t *e);

/*
 * Before an operation on part p's bytes [lo, hi) of its region (access: CLF_ARG_READ and/or
 * CLF_ARG_WRITE): make the device copy current where the host holds the newer data
 * (uploading owned units and halo from the mirror), then append to *wait (grown with
 * realloc, *nwait entries, events held: release them with clf__array_wait_free()) the events
 * the operation must wait for.
 */
clf_status clf__array_deps(clf_array *a, size_t p, size_t lo, size_t hi, unsigned access,
                           clf_event ***wait, size_t *nwait);
void clf__array_wait_free(clf_event **wait, size_t nwait);
/* After queueing it: record the operation's event (held by the array; NULL records nothing)
 * and, for a write (with or without an event), mark the part's device copy newer than the
 * host's (owned bytes: the halos holding them in the parts around go stale, HALO_VALID
 * cleared) or its halo current (halo bytes). */
clf_status clf__array_record(clf_array *a, size_t p, size_t lo, size_t hi, unsigned access,
                             clf_event *ev);

/* A grow-on-demand list of events (held), waited for and released together. Zero it to
 * start (clf__evlist l = {0}). */
typedef struct clf__evlist {
    clf_event **ev;
    size_t n, cap;
} clf__evlist;
/* Append e, taking over the caller's reference. Out of memory: waits for e and releases it
 * (queued work must end before its buffers go), then fails. */
clf_status clf__evlist_push(clf__evlist *l, clf_event *e);
/* Wait for every event, release them and empty the list; returns st, or the first failure
 * when st is a success. */
clf_status clf__evlist_finish(clf__evlist *l, clf_status st);

/* Wait for every pending access of the array (clf_array_finish()). */
clf_status clf__array_sync(clf_array *a);

/* Blocking host-side form of clf__array_deps() for the whole region of part p: make its
 * device copy current, then wait on the host for the accesses it must follow. */
clf_status clf__array_ready(clf_array *a, size_t p, unsigned access);
/* Make part p's device copy current where the host holds newer data (owned units, halo). */
clf_status clf__refresh_device(clf_array *a, size_t p);
/* Wait on the host for what an access of part p's [lo, hi) (writes or not) must follow. */
clf_status clf__wait_range(clf_array *a, size_t p, size_t lo, size_t hi, int writes);
/* A new array (clf_array_create()'s checks and layout; who names the caller in errors). */
clf_status clf__array_build(clf_array **out, clf_fleet *fleet, const clf_array_desc *desc,
                            const char *who);
/* Exchange the layouts (desc, devices, parts, buffers) of a and b; fleet, mirror and map
 * state stay. */
void clf__array_swap(clf_array *a, clf_array *b);

/* ---- balance (rebalance.c) ---------------------------------------------------------- */

/* The split, the devices kept and the decision are pure: plan/rebalplan.h. */

/* A launch's kernels per part, for CLF_ARRAY_REBALANCE (alaunch.c fills it). */
#define CLF__REBAL_KPP 3 /* kernels per part at most: two strips and the interior */
typedef struct clf__rebal_step {
    char kernel[128];
    size_t nparts;
    size_t *count; /* units per part (one allocation with units) */
    size_t *units; /* nparts x CLF__REBAL_KPP: each kernel's units, beside ev */
    clf_event **ev; /* nparts x CLF__REBAL_KPP, held; NULL where none */
} clf__rebal_step;
/* Release a record's events and memory (zeroes it). */
void clf__rebal_step_free(clf__rebal_step *r);

/* Launches an array keeps for measuring at most until they complete (more launches queued
 * meanwhile are not measured). */
#define CLF__REBAL_PENDING 8

/* The kernels an array keeps speeds of at once (a step of a stencil and a residual, say);
 * a further one takes the place of the one measured longest ago. */
#define CLF__REBAL_KERNELS 4
/* One kernel's samples: a ring of CLF__REBAL_WINDOW rows of nparts units per second, then
 * (rate + CLF__REBAL_WINDOW * nparts) a ring of as many rows of fixed seconds per step. */
typedef struct clf__rebal_kernel {
    char kernel[128]; /* "" when the slot is free */
    double *rate;
    size_t nsamples, head; /* rows held (at most the window), next row */
    uint64_t used;         /* when last measured (the array's step count), to replace */
} clf__rebal_kernel;

/* An array's CLF_ARRAY_REBALANCE measurements (rebalance.c; released by array.c). */
struct clf__rebal {
    size_t nparts;                            /* the cut the samples are for */
    clf__rebal_kernel k[CLF__REBAL_KERNELS];  /* per kernel */
    uint64_t steps;                           /* steps measured (a clock for `used`) */
    size_t since;                             /* steps since the last move (or creation) */
    char step_kernel[128]; /* the kernel whose launches count as steps: the first launched */
    double bw;                                /* bytes per second of the last move (0: none) */
    clf__rebal_step pend[CLF__REBAL_PENDING]; /* launches not harvested yet, oldest first */
    size_t npend;
    /* A move on trial (kept across the move's reset): the cut before it and the step the
     * decision measured there. Once the new cut is measured, a step longer than that by
     * CLF__REBAL_MIN_GAIN moves back (devices that slow each other down, sub-devices of
     * one CPU, break the model's independent parts), and no move is made for `hold`
     * steps after that. */
    int trial;
    double trial_step_s;
    size_t trial_k, trial_dev[CLF_MAX_LAUNCH_DEVICES], trial_cnt[CLF_MAX_LAUNCH_DEVICES];
    size_t hold;
};

/* Start a record of the launch's part kernels over the cut of layout (count NULL on out of
 * memory: nothing is measured then). */
void clf__rebal_step_init(clf__rebal_step *r, const clf_array *layout, const char *kernel);
/* Note kernel event ev of part p, over `units` of its units (takes a reference of its own). */
void clf__rebal_step_add(clf__rebal_step *r, size_t p, clf_event *ev, size_t units);
/* After the launch is queued: hand the record to every CLF_ARRAY_REBALANCE block array
 * among args (each takes its own references) and release it. force, here and below: the
 * launch's strategy balances (clf_array_launch_desc.strategy not static), so every block
 * array that is not a window counts as if it had the flag. */
void clf__rebal_step_done(clf__rebal_step *r, const clf_arg *args, size_t nargs, int force);
/* Before a launch of kernel over args whose first block array is layout, with local size
 * `granule` along the cut dimension: harvest the completed measurements, decide, and move
 * the block arrays when it pays (*moved = 1: the cut changed). Failures of a move leave
 * the arrays as they were and are returned. */
clf_status clf__rebal_before(clf_array *layout, const char *kernel, const clf_arg *args,
                             size_t nargs, size_t granule, int force, int *moved);
/* Before a launch's checks: CLF_ARRAY_REBALANCE block arrays among args cut unlike the
 * first block array, when it has the flag too, are moved to its cut (arrays launched
 * together in one launch and apart in another: a move in the other left them behind). */
clf_status clf__rebal_align(clf_fleet *fleet, const clf_arg *args, size_t nargs, int force);
/* The cut changed (redistribution): forget the measurements; free: also the state. */
void clf__rebal_reset(clf_array *a, int free_it);

#endif

/*
 * Where a kernel's work lies along its range (workprof.c): a work profile per (kernel, range
 * size, devices), learned from the chunks launches ran, and STATIC's cut points from it.
 *
 * Shares by speed assume every unit costs the same. On Mandelbrot the rows crossing the set
 * cost many times the others, and a device whose share holds them finishes last however well
 * its speed is known (a 2:1 pair ran static at 1.22x the fast device alone, issue 27). The
 * profile is a histogram over CLF__WPROF_BINS equal bins of the range: each bin's seconds per
 * unit on each device, the median of its last CLF__WPROF_KEEP launches (a spike moves
 * nothing). Devices are compared through the bins both have run (the median ratio of their
 * times there): learned throughputs are biased by the region each device drew, which is the
 * very error the profile corrects. STATIC then cuts the range so that every device's
 * predicted time (the sum of its bins' times) is the same. Three guards against an outlier
 * that the cut would never measure again once stable (a bin that changed hands once keeps
 * the one sample of the device that left it; issue 27 saw a cut stay 2.7x off for eight
 * launches): a bin's density comes from the devices that ran it lately; two devices are
 * compared through the bins both ran lately, else through those where both medians rest on
 * three samples or more, else by the speeds given; and each device's predicted times are
 * calibrated by its measured time over what it ran in its last CLF__WPROF_KEEP launches
 * (the median), so a cut that leaves the devices' times apart moves until they agree.
 *
 * Pure: no OpenCL. A table (clf__wprof_table) keeps the profiles of a fleet under one mutex.
 */
#ifndef CLFLEET_WORKPROF_H
#define CLFLEET_WORKPROF_H

#include <stddef.h>
#include <stdint.h>

#include "clfleet.h"

/* Bins of the range; a range of fewer than 2 * CLF__WPROF_BINS units is not profiled. */
#define CLF__WPROF_BINS 32
/* Launches a bin's median is taken over. */
#define CLF__WPROF_KEEP 5
/* At most this many chunks per device share under STATIC while profiling (the engine keeps
 * this many chunk samples per device and launch: CLF__PERF_CHUNKS). */
#define CLF__WPROF_PIECES 16
/* The least kernel time of a STATIC piece (choose.c), and of a chunk the profile learns from:
 * below it a chunk's fixed costs (an enqueue, a wake-up) weigh more than its units. */
#define CLF__WPROF_PIECE_S 1e-3
#define CLF__WPROF_MIN_CHUNK_S 100e-6
/* Profiles a table keeps (the least recently used goes). */
#define CLF__WPROF_TABLE 32

/* One chunk a launch ran: its device (0 .. ndev-1), units [off, off + len) of the range, and
 * the seconds its kernel took. */
typedef struct clf__wprof_chunk {
    size_t dev;
    uint64_t off, len;
    double seconds;
} clf__wprof_chunk;

typedef struct clf__wprof clf__wprof;

/* An empty profile of a range of total units over ndev devices (ndev <= CLF_MAX_LAUNCH_DEVICES).
 * CLF_ERROR_INVALID_ARGUMENT when the range is too short to profile or ndev is 0 or too
 * large; CLF_ERROR_NULL_POINTER; CLF_ERROR_OUT_OF_HOST_MEMORY. */
clf_status clf__wprof_create(clf__wprof **out, uint64_t total, size_t ndev);
void clf__wprof_destroy(clf__wprof *w);

/*
 * Fold one launch's chunks in. A chunk's seconds are spread over the bins it covers by
 * units; a chunk longer than two bins tells too little of where its time went and is left
 * out (dynamic's first chunks), as are chunks outside the range, of another device, of a time
 * that is not finite, or shorter than CLF__WPROF_MIN_CHUNK_S. A bin learns a sample for a device when this launch ran
 * at least half of it there. Every chunk in the range (the long ones too) counts in the
 * launch's record of each device's units and seconds, for the calibration of
 * clf__wprof_cut(). Returns how many (bin, device) samples were added.
 */
size_t clf__wprof_add(clf__wprof *w, const clf__wprof_chunk *c, size_t n);

/* The range length a bin covers at most (what a STATIC piece should be at least). */
uint64_t clf__wprof_bin_units(uint64_t total);

/*
 * STATIC's cut by the profile: ends[i] is the end of device i's share (device i takes
 * [ends[i-1], ends[i]), ends[-1] = 0, ends[ndev-1] = total), each a multiple of gran or total,
 * so that the devices' predicted times are as equal as gran allows. speed: ndev relative
 * throughputs; a device of speed 0 gets an empty share, and speed ratios are what the profile
 * falls back on for a device that shares no bin with the others. Returns 1 with ends, or 0
 * (ends untouched) when the profile does not know enough yet: fewer than 3/4 of the bins
 * sampled, a device of speed > 0 never seen, or fewer than two devices of speed > 0.
 */
int clf__wprof_cut(const clf__wprof *w, uint64_t gran, const double *speed, uint64_t *ends);

/*
 * The work density: rho[b] (CLF__WPROF_BINS entries) the cost of a unit of bin b against the
 * range's mean unit, by the bins' seconds per unit on the device that has run the most of
 * them (a bin it has not run takes the nearest one's). Returns 0 (rho unset) when that device
 * has run fewer than half of the bins. A unit of work is then a unit of average cost, so a
 * device's units per second over the whole range are its work per second, and the part of
 * the range's work in a span is its clf__wprof_work() over total (probe.c judges a probe of
 * the range's tail by it).
 */
int clf__wprof_density(const clf__wprof *w, double *rho);
/* Add the units of [off, off + len) that fall in each bin of a range of total units to
 * units[] (CLF__WPROF_BINS entries). */
void clf__wprof_bins_add(double *units, uint64_t total, uint64_t off, uint64_t len);
/* The work of units [off, off + len) of a range of total units by rho (NULL: len). */
long double clf__wprof_work(const double *rho, uint64_t total, uint64_t off, uint64_t len);
/* The units from off whose work by rho (NULL: uniform) reaches work (rounded up), at most
 * total - off. */
uint64_t clf__wprof_units(const double *rho, uint64_t total, uint64_t off, long double work);

/* Launches folded in so far. */
unsigned clf__wprof_launches(const clf__wprof *w);

/* ---- a fleet's profiles, by key (kernel, range, devices) ---- */

typedef struct clf__wprof_table clf__wprof_table;

clf_status clf__wprof_table_create(clf__wprof_table **out);
void clf__wprof_table_destroy(clf__wprof_table *t);
/* clf__wprof_add() on the profile of key (created when missing; total and ndev must match
 * the key's profile, else it is started again). Returns the samples added (0 on no memory or
 * a range too short). */
size_t clf__wprof_table_add(clf__wprof_table *t, const char *key, uint64_t total, size_t ndev,
                            const clf__wprof_chunk *c, size_t n);
/* clf__wprof_cut() on the profile of key, 0 when there is none; *launches (may be NULL) the
 * launches it learned from. */
int clf__wprof_table_cut(clf__wprof_table *t, const char *key, uint64_t total, size_t ndev,
                         uint64_t gran, const double *speed, uint64_t *ends,
                         unsigned *launches);

/* clf__wprof_density() on the profile of key; 0 when there is none. */
int clf__wprof_table_density(clf__wprof_table *t, const char *key, uint64_t total, size_t ndev,
                             double *rho);

#endif

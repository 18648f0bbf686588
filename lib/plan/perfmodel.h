/*
 * Learned throughput of each kernel on each device (perfmodel.c).
 *
 * The launch engine records, after each launch (or chunk), how many units a device did in
 * how many seconds; the model answers with a robust estimate of units per second that the
 * partitioner uses as weights. The estimate is the median of the last CLF__PERF_WINDOW
 * launch-level samples. Per-chunk samples (units, seconds) fit a line time(c) = fixed +
 * c / rate: the fixed cost a chunk pays whatever its size (enqueue-to-start latency,
 * transfer set-up) and the marginal throughput (clf__perf_line()). The first sample of each (kernel, device) in a process is dropped because it
 * pays for program builds, first-touch allocation and cold caches. The model persists to a
 * line-based text file so that a new process starts balanced.
 *
 * Keys are NUL-terminated strings of any other bytes (tabs and newlines are escaped in the
 * file). Every function is thread-safe: device threads record concurrently.
 */
#ifndef CLFLEET_PERFMODEL_H
#define CLFLEET_PERFMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "clfleet.h"

/* The model's file in a cache directory. */
#define CLF__PERF_FILE "perf-v1.tsv"

/* How many recent samples the median is taken over. */
#define CLF__PERF_WINDOW 8

/* How many per-chunk samples the line time(c) = fixed + c / rate is fitted over. */
#define CLF__PERF_CHUNKS 16

/* One chunk a device ran: its units and the host seconds it took (see clf__learn()); for
 * the work profile (workprof.h), where it lay in the range and its kernel's seconds. */
typedef struct clf__perf_chunk {
    uint64_t units;
    double seconds;
    uint64_t off;
    double kernel_s;
} clf__perf_chunk;

/*
 * What the model knows of one (kernel, device). units_per_s is the launch-level median
 * (the weights); rate and fixed_s are the fitted chunk line, time(c) = fixed_s + c / rate,
 * with rate 0 and fixed_s -1 while no line can be fitted (fewer than two chunk sizes seen).
 * iqr is the interquartile range of the launch-level samples (units per second).
 */
typedef struct clf__perf_fit {
    double units_per_s, rate, fixed_s, iqr;
    unsigned samples, chunks;
} clf__perf_fit;

/*
 * Keys of a device's links (the "kernel" of an entry whose units are bytes): host to device
 * and back, learned from the transfers' profiled time in every launch. No kernel key can
 * take these: ':' is in no OpenCL identifier, and a GEMM's key ("clblast-sgemm") has none.
 */
#define CLF__PERF_LINK_H2D "link:h2d"
#define CLF__PERF_LINK_D2H "link:d2h"

/*
 * What the planners (the graph's scheduler, the all-reduce's choice) assume until the model
 * has measured: a command's fixed cost (enqueue to completion), a discrete device's host link
 * each way (5-15 GB/s measured on an H200's PCIe), and a copy inside host memory (one
 * context, or a host-unified device's link). One set, so that they agree about one link.
 */
#define CLF__GUESS_CMD_S 30e-6
#define CLF__GUESS_LINK_BPS 5e9
#define CLF__GUESS_LOCAL_BPS 10e9

typedef struct clf__perf_model clf__perf_model;

/* Bytes per second of device dkey's link in direction dir (CLF__PERF_LINK_H2D or _D2H) as
 * learned by m (NULL: none), else the guess above (unified: a host-unified device's). */
double clf__perf_link_bps(clf__perf_model *m, const char *dkey, const char *dir, int unified);

/*
 * Open a model backed by the file at path, or a memory-only one for path == NULL. A missing
 * file is an empty model; malformed or truncated lines are skipped one by one, and a file
 * over 16 MiB (not ours, or damaged) is ignored as a whole and replaced at the next save.
 * Returns CLF_ERROR_IO when the file exists but cannot be read (the caller may then go on
 * with a memory-only model), CLF_ERROR_OUT_OF_HOST_MEMORY, CLF_ERROR_NULL_POINTER.
 */
clf_status clf__perf_open(clf__perf_model **out, const char *path);
/* Free the model without saving; accepts NULL. */
void clf__perf_close(clf__perf_model *m);

/*
 * Record that device did units of kernel in seconds. The first record of each key in this
 * process is dropped (cold). CLF_ERROR_INVALID_ARGUMENT for units == 0 or seconds not finite
 * and > 0; CLF_ERROR_NULL_POINTER; CLF_ERROR_OUT_OF_HOST_MEMORY.
 */
clf_status clf__perf_record(clf__perf_model *m, const char *kernel, const char *device,
                            uint64_t units, double seconds);

/*
 * As clf__perf_record(), but the sample replaces the oldest one kept, so that the window
 * keeps its length (one not yet full does not grow): for a sample taken now and then to see
 * whether old ones still hold (the all-reduce's re-try of its slower algorithm), which must
 * age the stale ones out rather than join them. *kept (when not NULL): 1 when the sample was
 * kept, 0 when it was dropped as the key's first in this process. Errors as
 * clf__perf_record().
 */
clf_status clf__perf_record_replace(clf__perf_model *m, const char *kernel, const char *device,
                                    uint64_t units, double seconds, int *kept);

/*
 * Record the chunks one device ran in one launch (one lock for all of them). The first
 * chunk of each key in this process is dropped (cold, as for clf__perf_record()); samples
 * with units == 0 or a non-finite or non-positive time are skipped. When the window is
 * full, a new sample replaces the oldest one of a similar size (within 25%), else the
 * oldest: chunks of one size (static launches) then do not push out the few of other sizes
 * that the line's slope needs. CLF_ERROR_NULL_POINTER; CLF_ERROR_OUT_OF_HOST_MEMORY.
 */
clf_status clf__perf_record_chunks(clf__perf_model *m, const char *kernel, const char *device,
                                   const clf__perf_chunk *c, size_t n);

/*
 * Fit time(c) = fixed + c / rate through n samples robustly (Theil-Sen): the slope is the
 * median of the slopes of the pairs whose sizes differ by at least 25%, the intercept the
 * median of the residuals t - slope * c, clamped at 0. One sample in n off the line moves
 * neither by more than one rank. 1 with *rate and *fixed_s, or 0 (no such pair, or a slope
 * that is not positive).
 */
int clf__perf_line(const clf__perf_chunk *c, size_t n, double *rate, double *fixed_s);

/*
 * Drop every sample of (kernel, device), launch-level and per chunk, and count the key as
 * warm in this process, so that the next records are kept: for a probe (choose.c) that ran a
 * device several times faster than the model predicted, whose samples are then stale (a run
 * while the device was busy with another process, a cold run, kept in the file). A
 * median of the old window would need five new samples to move, and the device gets one
 * per probe. Returns 1 when the key was known, else 0.
 */
int clf__perf_forget(clf__perf_model *m, const char *kernel, const char *device);

/* The fit of (kernel, device): 1 when anything is known (see clf__perf_fit), else 0. */
int clf__perf_get(clf__perf_model *m, const char *kernel, const char *device, clf__perf_fit *out);

/* Predicted seconds of a chunk of units on a device of fit f: fixed + units / rate, or with
 * no line units / units_per_s; -1 when nothing is known. */
double clf__perf_predict(const clf__perf_fit *f, uint64_t units);

/* A device's speed before anything is measured: compute units x clock in MHz (0 read as 1
 * unit, 1000 MHz), so millions of work items per second at one per cycle per unit. A fair
 * guess between devices of one kind, a poor one across kinds: the first measurement
 * corrects it. */
double clf__perf_guess_speed(const clf_device_info *in);

/* The median of v[0..n-1] (n > 0; v is sorted in place). */
double clf__median(double *v, size_t n);

/* The interquartile range of v[0..n) (sorted in place); 0 for n == 0 (perffit.c). */
double clf__perf_iqr(double *v, size_t n);

/*
 * Replace the file at path with buf[0..len) atomically (temporary file in the same directory,
 * fsync, rename), mode 0600, creating missing directories (0700) (perffile.c). Returns
 * CLF_ERROR_IO with the path and errno text, CLF_ERROR_OUT_OF_HOST_MEMORY.
 */
clf_status clf__perf_write_file(const char *path, const char *buf, size_t len);

/* *path: the model's file in cache_dir (NULL: the default cache directory), malloc'd
 * (perffile.c); fn names the caller in the error. CLF_ERROR_IO when there is no cache
 * directory, CLF_ERROR_OUT_OF_HOST_MEMORY. */
clf_status clf__perf_model_path(const char *cache_dir, const char *fn, char **path);

/*
 * One line of the model's file (perftext.c), its newline stripped, parsed in place: the keys
 * (unescaped) and the launch samples (s[0..*n), units per second) and chunk samples
 * (ch[0..*nc)), oldest first. 0, or -1 for a line not exactly of the format. Numbers are read
 * by strtod(): the caller sets the C locale, so that a decimal comma in the application's
 * cannot misread them.
 */
int clf__perf_text_parse(char *line, char **kernel, char **device, double *s, unsigned *n,
                         clf__perf_chunk *ch, unsigned *nc);
/* The line of one entry (newline included), numbers in the C locale (clf__sb_printf()). */
struct clf__sb;
void clf__perf_text_write(struct clf__sb *b, const char *kernel, const char *device,
                          const double *s, unsigned n, const clf__perf_chunk *c, size_t nc);

/* 1 and the estimated units per second in *units_per_s when a warm sample is known, else 0. */
int clf__perf_weight(clf__perf_model *m, const char *kernel, const char *device,
                     double *units_per_s);

/*
 * Estimates for ndev devices at once (one lock): out[i] is the estimate, or 0 when device i
 * has none. Returns how many are known; use them as weights only when all are.
 */
size_t clf__perf_weights(clf__perf_model *m, const char *kernel, size_t ndev,
                         const char *const *devices, double *out);
/* As clf__perf_weights() for the kernel function name (a key "name" or "name@program"): the
 * key with the most devices known (distributed arrays know the name, not the program). */
size_t clf__perf_weights_named(clf__perf_model *m, const char *name, size_t ndev,
                               const char *const *devices, double *out);

/*
 * Write the model to its file atomically (temporary file in the same directory, fsync,
 * rename), mode 0600, creating missing directories (0700). Entries another process saved
 * meanwhile under keys this model does not hold are kept. A memory-only model: no-op.
 * Returns CLF_ERROR_IO with the path and errno text on failure.
 */
clf_status clf__perf_save(clf__perf_model *m);

/* The model's work profiles (workprof.h), created on first use; NULL without memory. They
 * live as long as the model and are not saved. */
struct clf__wprof_table *clf__perf_profiles(clf__perf_model *m);

#endif

/*
 * State shared by the counters (metrics.c), what callers read of them
 * (report.c) and the timeline (trace.c). The hooks the rest of the library
 * calls are declared in observe.h.
 */
#ifndef CLFLEET_METRICS_H
#define CLFLEET_METRICS_H

#include "observe.h"

#include <stdatomic.h>
#include <stdio.h>

/* Cumulative counters of one device since the fleet was created; a reset
 * only moves the baseline, so profile regions are unaffected by resets. */
typedef struct clf__counters {
    uint64_t kernels;
    double busy_s;
    uint64_t dir_bytes[CLF_NUM_DIRECTIONS], dir_count[CLF_NUM_DIRECTIONS];
    double dir_s[CLF_NUM_DIRECTIONS];
    uint64_t path_bytes[CLF_NUM_PATHS], path_count[CLF_NUM_PATHS];
    double path_s[CLF_NUM_PATHS];
    uint64_t sent_bytes, sent_count;
    double sent_s;
    /* Copies whose source and destination are one device: not peer traffic. */
    uint64_t same_bytes, same_count;
    double same_s;
    double wait_s, idle_s;
    uint64_t allocs;
} clf__counters;

/* One timeline event, already on the host time base. */
typedef struct clf__tev {
    int64_t ts, dur; /* ns since the fleet's epoch */
    uint64_t bytes; /* launches: the efficiency in millionths (a launch moves no bytes) */
    int64_t a0, a1; /* kernels: chunk offset and units */
    uint16_t kind, track;
    int16_t src, dst; /* peer copies: the devices */
    uint8_t path; /* launches: the strategy that ran */
    char name[51];
} clf__tev;

/* Most timeline events kept per device (about 100 MiB): later ones are counted, not kept. */
#define CLF__TRACE_MAX_EVENTS (1u << 20)

/* One device's metrics (the fleet keeps one more for the host itself). */
typedef struct clf__devm {
    pthread_mutex_t lock; /* guards everything below */
    clf__counters cur, base;
    uint64_t mem_now, mem_peak; /* peak since the last reset */
    uint64_t *pair_bytes, *pair_count; /* copies from this device to each device: cumulative */
    double *pair_s;
    uint64_t *pair_bytes0, *pair_count0; /* ... at the last reset */
    double *pair_s0;
    /* The last launch. */
    int in_last;
    double last_busy_s, last_share, last_finish_s;
    double last_busy_base; /* busy_s when the launch started */
    /* Timeline. */
    int64_t offset_ns;   /* host ns = device profiling ns + offset_ns */
    const char *clock;   /* how the offset was found */
    clf__tev *ev;
    size_t nev, cap;
    uint64_t dropped;
} clf__devm;

struct clf__metrics {
    size_t ndev;   /* fleet devices; dm[ndev] stands for the host */
    clf__devm *dm;
    uint64_t epoch_ns; /* host clock when the fleet was created: the trace's zero */

    pthread_mutex_t lock; /* guards what follows */
    uint64_t reset_ns;
    uint64_t launches, launches0;
    char last_kernel[64];
    clf_strategy last_strategy;
    size_t last_ndev;
    double last_makespan, last_imbalance, last_efficiency;
    /* Imbalance of the window's launches that ran on two or more devices (one device cannot
     * be out of balance): sum, count and largest, zeroed by a reset. */
    double imb_sum, imb_max;
    uint64_t imb_n;
    unsigned pending;     /* completion callbacks not yet run */
    pthread_cond_t drained;

    atomic_uint_fast64_t mem_total, mem_total_peak;

    char *trace_path; /* NULL: tracing off */
};

/* trace.c: find each device's clock offset (tracing on only). */
void clf__trace_calibrate(clf_fleet *fl);
/* trace.c: keep one event (the device's lock held). */
void clf__trace_add(struct clf__metrics *m, size_t dev, const clf__rec *r, int64_t ts_ns,
                    int64_t dur_ns);
/* trace.c: write the timeline to the trace path. */
clf_status clf__trace_write(clf_fleet *fl);

#endif

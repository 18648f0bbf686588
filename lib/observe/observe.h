/* lib/observe: counters, the trace, and device faults (what failed, injected faults).
 * Not installed. */
#ifndef CLFLEET_OBSERVE_H
#define CLFLEET_OBSERVE_H

#include "plan/plan.h"

#include "fault.h"
#include "simulate.h"

/* ---- metrics and tracing (metrics.c, trace.c) ---- */

/*
 * Every part of the library that runs a command, moves bytes, allocates
 * device memory or blocks reports it here. Counting takes one per-device lock
 * and a few additions; a timeline event is kept only while tracing is on.
 * A fleet without metrics (CLFLEET_METRICS=0) ignores every hook.
 */

/* What a record describes. */
enum {
    CLF__REC_KERNEL = 0,  /* a kernel command */
    CLF__REC_TO_DEVICE,   /* host -> device */
    CLF__REC_FROM_DEVICE, /* device -> host */
    CLF__REC_PEER,        /* device src -> device dst by path */
    CLF__REC_FILL,        /* a fill (timeline only) */
    CLF__REC_WAIT,        /* the host blocked, waiting */
    CLF__REC_IDLE,        /* a device idle at a launch's end, waiting for the slowest */
    CLF__REC_LAUNCH       /* a whole launch (the fleet's track) */
};
/* Timeline tracks of a device (Chrome trace "threads"). */
enum {
    CLF__TRACK_COMPUTE = 1,  /* the compute queue */
    CLF__TRACK_TRANSFER = 2, /* the transfer queue */
    CLF__TRACK_SYNC = 3,     /* host waits and launch-end idling */
    CLF__TRACK_PEER = 4      /* copies timed on the host (no OpenCL event, e.g. CUDA) */
};
/* Record flags. */
#define CLF__REC_HOST_TIME 1u /* t0/t1 are host ns (clf__mono_ns()), not device profiling ns */
#define CLF__REC_NO_QTY 2u    /* add no bytes, transfers or kernels (counted already) */
#define CLF__REC_NO_TIME 4u   /* add no seconds */
#define CLF__REC_NO_TRACE 8u  /* keep no timeline event */
#define CLF__REC_TRACE_ONLY (CLF__REC_NO_QTY | CLF__REC_NO_TIME)

/* One completed command or host interval. */
typedef struct clf__rec {
    unsigned kind;   /* CLF__REC_* */
    unsigned flags;  /* CLF__REC_HOST_TIME ... */
    unsigned track;  /* CLF__TRACK_*; 0: from the kind */
    const char *name; /* timeline name (a kernel's); NULL: from the kind and path (copied) */
    uint64_t bytes;
    uint64_t t0, t1; /* START and END, device ns (or host ns); t1 <= t0: time unknown */
    size_t src, dst; /* CLF__REC_PEER: the devices */
    clf_path path;   /* CLF__REC_PEER */
    clf_strategy strategy; /* CLF__REC_LAUNCH: the strategy that ran, and its efficiency */
    double efficiency;
    int64_t a0, a1;  /* kernels: the chunk's offset and units (timeline arguments) */
} clf__rec;

struct clf__metrics;

/* Create the fleet's metrics; trace: the option (NULL: $CLFLEET_TRACE; "": off). */
clf_status clf__metrics_init(clf_fleet *fl, const char *trace);
/* Wait for pending completion callbacks, write the trace, free. */
void clf__metrics_fini(clf_fleet *fl);
/* Nonzero while the fleet records a timeline. */
int clf__trace_on(const clf_fleet *fl);
/* START and END of a completed command (device ns); 0 and zeros when unavailable. */
int clf__event_profile(cl_event ev, uint64_t *t0, uint64_t *t1);
/*
 * Completed work that ran on device dev's queues (dev < ndev), or on the host
 * (dev == SIZE_MAX). One lock for the n records. A CLF__REC_PEER record counts
 * on r->dst (received, by path) and r->src (sent, pair matrix); dev is whose
 * track the timeline event goes on.
 */
void clf__metrics_record(clf_fleet *fl, size_t dev, const clf__rec *r, size_t n);
/*
 * A command that may not have completed: its bytes and count now, its time
 * and timeline event when it completes (an event callback; ev is retained
 * until then). r->t0/t1 and CLF__REC_HOST_TIME are ignored.
 */
void clf__metrics_event(clf_fleet *fl, size_t dev, const clf__rec *r, cl_event ev);
/* Bytes allocated on / released from device dev through clfleet. */
void clf__metrics_alloc(clf_fleet *fl, size_t dev, uint64_t bytes);
void clf__metrics_free(clf_fleet *fl, size_t dev, uint64_t bytes);
/* The host blocked from t0 to t1 (clf__mono_ns()) waiting for device dev (SIZE_MAX: several). */
void clf__metrics_wait(clf_fleet *fl, size_t dev, uint64_t t0, uint64_t t1, const char *what);
/* A clf_array_launch() was enqueued: counted with the launches. It has no report (its
 * parts complete later, as events), so it leaves the last launch's figures alone. */
void clf__metrics_array_launch(clf_fleet *fl);
/* A launch ran from t0 (host seconds, clf__now()) with this report. */
void clf__metrics_launch(clf_fleet *fl, const char *kernel, const clf_launch_report *rep,
                         double t0);

#endif

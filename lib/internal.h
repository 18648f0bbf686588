/* Shared internals of libclfleet. Not installed. */
#ifndef CLFLEET_INTERNAL_H
#define CLFLEET_INTERNAL_H

#include "config.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "clfleet.h"

#define CLF__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors (error.c) ---- */

/* Set the thread's detail message and return s; printf-style. */
clf_status clf__fail(clf_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append a line to the thread's detail message (build logs, several devices). */
void clf__append_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Name of an OpenCL error code, e.g. "CL_INVALID_VALUE". */
const char *clf__cl_error_name(cl_int err);

struct clf__device;
/* Record a failed OpenCL call on a device (device may be NULL); returns CLF_ERROR_OPENCL. */
clf_status clf__cl_fail(cl_int err, const char *call, const struct clf__device *d);

/* Jump to the function's `out:` label with status st set from expression e. */
#define CLF__TRY(st, e)                \
    do {                               \
        (st) = (e);                    \
        if ((st) != CLF_SUCCESS)       \
            goto out;                  \
    } while (0)

/* Overflow-checked arithmetic: return nonzero on overflow. */
static inline int clf__mul_overflow(size_t a, size_t b, size_t *r)
{
    return __builtin_mul_overflow(a, b, r);
}
static inline int clf__add_overflow(size_t a, size_t b, size_t *r)
{
    return __builtin_add_overflow(a, b, r);
}

/* ---- log (log.c) ---- */

/* $CLFLEET_LOG: "error", "warn", "info" or "debug" (unset or "": warn); CLF_ERROR_PARSE naming
 * the variable. Sets the process-wide level; clf_fleet_create() calls it. */
clf_status clf__log_init(void);
/* Nonzero when a message at level would be passed on (to skip building costly ones). */
int clf__log_on(clf_log_level level);
/* One line (no newline) to the handler or stderr, when level is at most the level set. */
void clf__log(clf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- device selection (filter.c, pure) ---- */

#define CLF__MAX_INDEX 256
#define CLF__MAX_SPLIT 64
#define CLF__MAX_EXTS 8

typedef struct clf__filter {
    unsigned types;           /* CLF_DEVICE_* mask; 0: GPUs and accelerators, else CPUs */
    char platform[128];       /* case-insensitive substring of platform name or vendor */
    char vendor[128];         /* ... of the device vendor */
    char name[128];           /* ... of the device name */
    int has_index;            /* restrict to discovery indices in index[] */
    unsigned char index[CLF__MAX_INDEX];
    unsigned min_cu;
    unsigned require;         /* CLF_CAP_* */
    char exts[CLF__MAX_EXTS][64]; /* required extensions */
    size_t nexts;
    unsigned split_units;     /* split CPUs equally, this many units each */
    unsigned split_counts[CLF__MAX_SPLIT];
    size_t nsplit_counts;     /* or by these counts */
    int context_per_device;
} clf__filter;

/* Parse a selection string into f (fields given override those already there). */
clf_status clf__filter_parse(clf__filter *f, const char *s);
/* Nonzero when a root device with these facts and discovery index passes
 * every criterion but the type (the type rule needs the whole list). */
int clf__filter_match(const clf__filter *f, const clf_device_info *info, unsigned index);

/* ---- tuning variables (env.c, pure): CLF_ERROR_PARSE naming the variable ---- */

/* $CLFLEET_METRICS: unset, "", 1/on/yes/true: counting; 0/off/no/false: *off = 1. */
clf_status clf__env_metrics(const char *v, int *off);
/* $CLFLEET_TRANSFER_CHUNK: a power of two in [64K, 64M], digits with an optional K/M. */
clf_status clf__env_transfer_chunk(const char *v, size_t dflt, size_t *out);
/* $CLFLEET_TRANSFER_STAGING: unset, "", auto: *pipeline = 0; pipeline: 1. */
clf_status clf__env_staging(const char *v, int *pipeline);

/* ---- SHA-256 (sha256.c, pure) ---- */

typedef struct clf__sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} clf__sha256;

void clf__sha256_init(clf__sha256 *c);
void clf__sha256_update(clf__sha256 *c, const void *data, size_t n);
void clf__sha256_final(clf__sha256 *c, unsigned char out[32]);
void clf__sha256_hex(const unsigned char d[32], char hex[65]);

/* ---- binary cache (cache.c) ---- */

typedef struct clf__cache_key_parts {
    const char *source, *options, *device, *driver, *platform;
} clf__cache_key_parts;

/* key = SHA-256 over the length-prefixed parts (no two inputs share a key). */
void clf__cache_key(unsigned char key[32], const clf__cache_key_parts *p);
/* Default directory: $CLFLEET_CACHE_DIR, $XDG_CACHE_HOME/clfleet, ~/.cache/clfleet. */
char *clf__cache_default_dir(void);
/* 1 and a malloc'd binary on a valid hit; 0 on a miss or an invalid entry. */
int clf__cache_load(const char *dir, const unsigned char key[32], unsigned char **bin,
                    size_t *len);
/* As clf__cache_load(); *rejected (when not NULL) is set to 1 when an entry was there but
 * invalid (torn, corrupt, foreign), 0 otherwise (a hit, nothing there, or unreadable). */
int clf__cache_load_ex(const char *dir, const unsigned char key[32], unsigned char **bin,
                       size_t *len, int *rejected);
/* Write atomically (temp file, fsync, rename), mode 0600, dir 0700. */
clf_status clf__cache_store(const char *dir, const unsigned char key[32],
                            const unsigned char *bin, size_t len);
/* Path of the entry for key (malloc'd). */
char *clf__cache_path(const char *dir, const unsigned char key[32]);

/* ---- fleet (fleet.c, device.c) ---- */

struct clf__device {
    cl_device_id id;
    cl_platform_id platform;
    cl_context ctx; /* borrowed from the fleet */
    cl_command_queue compute;
    cl_command_queue transfer;
    /* Copies the host drives (staging, CUDA bounces) enqueue here as they run, so that they
     * never queue behind commands that wait for them (transfer.c). */
    cl_command_queue copyq;
    clf_device_info info;
    char *extensions;
    size_t index;     /* position in the fleet */
    int owns_id;      /* a sub-device: released with the fleet */
    /* A device fault in a launch (fault.c; under the fleet's lock): launches leave the
     * device out until clf_device_readmit(). */
    int failed;
    char fail_why[256];
};

/* A broadcast array kept on the devices between launches while unchanged. */
struct clf__bcast {
    const void *host;
    size_t size;
    uint64_t hash; /* of the content when it was uploaded */
    cl_mem *mem;   /* one per fleet device, NULL until uploaded there */
};

struct clf__perf_model;
struct clf__xfer;

struct clf_fleet {
    unsigned slot; /* the lowest number no other live fleet has (fleet.c) */
    /* The caller's reference until clf_fleet_destroy(), and one per child that holds one
     * (clf__fleet_ref()); the last to go tears the fleet down. */
    atomic_uint refs;
    struct clf__device *dev;
    size_t ndev;
    cl_context *ctx;
    size_t nctx;
    char *cache_dir; /* NULL: cache disabled */
    /* $CLFLEET_STRATEGY, parsed at creation: what launches and GEMMs asking for the
     * default use (CLF_AUTO when unset). */
    clf_strategy strategy;
    atomic_int cache_warned; /* an unusable cache was reported (once per fleet, program.c) */

    pthread_mutex_t lock; /* guards what follows */
    struct clf__perf_model *perf; /* learned throughput (NULL until the first launch) */
    struct clf__bcast *bcast;
    size_t nbcast;
    /* The efficiency of each kernel's last static launch (CLF_AUTO avoids static
     * for kernels it balanced badly), a small ring of the latest kernels. */
    struct {
        char key[96];
        double efficiency;
    } static_eff[16];
    size_t nstatic_eff;
    /* Launches run in the order they were queued: a ticket each. */
    pthread_cond_t turn;
    uint64_t next_ticket, serving;

    struct clf__xfer *xfer; /* transfer paths, staging buffers, copy threads (transfer.c) */

    struct clf__metrics *metrics; /* counters and timeline (metrics.c); NULL: off */

    struct clf_program *reduce_prog; /* cl/reduce.cl for the collectives (under lock; built
                                        on first use, collective.c) */
    struct clf__scratch *scratch;    /* the collectives' idle scratch buffers (under lock) */

    struct clf__fault *fault; /* $CLFLEET_FAULT_INJECT rules (fault.c); NULL: none */
    int gemm_used;                   /* a GEMM ran: clBLAST caches programs of its contexts
                                        (under lock; gemm.c) */
};

/*
 * A fleet lives until its last reference goes (OpenCL's model): the caller's, dropped by
 * clf_fleet_destroy(), and one per buffer, program, pipeline and task queue, taken when the
 * child is created and dropped at the very end of its destroy, after everything the destroy
 * needs from the fleet. The last unref tears the fleet down on the calling thread (drains,
 * writes the trace, frees). Objects the fleet itself owns (the collectives' program and
 * scratch buffers) hold none, or it would never go: they clear holds_fleet and give theirs
 * back. Events hold none: the teardown waits for the launches, copies and commands they
 * stand for, and they never touch the fleet afterwards. Thread-safe.
 */
void clf__fleet_ref(clf_fleet *fl);
void clf__fleet_unref(clf_fleet *fl);

/* Launch state the fleet owns (launch.c). */
void clf__launch_fleet_fini(clf_fleet *fleet);
/* The collectives' program (collective.c). */
void clf__collective_fleet_fini(clf_fleet *fleet);
/* clBLAST's caches, once no live fleet has run a GEMM (gemm.c). */
void clf__gemm_fleet_fini(clf_fleet *fleet);

/* Query a device's facts (name, memory, PCI address ...). */
clf_status clf__device_query(cl_device_id id, cl_platform_id platform, clf_device_info *info,
                             char **extensions);
/* Nonzero when the space-separated list holds the exact name. */
int clf__ext_listed(const char *list, const char *name);
/* Validate a fleet handle and a device index. */
clf_status clf__check_device(const clf_fleet *fleet, size_t device);

/* ---- events (event.c) ---- */

/*
 * An OpenCL event, or a host-side completion: an asynchronous launch (op) or a copy run by
 * a transfer thread (task). Allocated zeroed; the fields after task belong to event.c.
 */
struct clf_event {
    cl_event ev;
    struct clf__host_op *op; /* non-NULL for host-side completion */
    struct clf__task *task;  /* non-NULL for a copy on a transfer thread (bridge.c) */
    unsigned holds;          /* references taken by clf__event_hold(), beyond the caller's */
    int op_state;            /* op: 0 not joined, 1 being joined, 2 joined */
    clf_status op_status;    /* op: its result once joined */
    char *op_err;            /* op: its detail message once joined */
};
/* Wait for and free a host-side operation; returns its status. */
clf_status clf__host_op_wait(struct clf__host_op *op);
void clf__host_op_release(struct clf__host_op *op);
/* Wrap ev (taking the reference) or release it if out is NULL. */
clf_status clf__event_wrap(cl_event ev, clf_event **out);
/* Take a reference: the event stays valid until a matching clf_event_release(), whoever
 * else releases it. Thread-safe, as is waiting for an event from several threads. */
void clf__event_hold(clf_event *e);

/* A host-side completion several parties wait for (bridge.c): created with one reference;
 * completing it wakes the waiters and sets the OpenCL user events subscribed to it. */
struct clf__task;
struct clf__task *clf__task_create(void);
void clf__task_ref(struct clf__task *t);
void clf__task_unref(struct clf__task *t);
/* Record the result (err: the detail message, or NULL) and wake everyone; once only. */
void clf__task_complete(struct clf__task *t, clf_status st, const char *err);
/* Block until completed; its status, with its detail message on failure. */
clf_status clf__task_wait(struct clf__task *t);
/* Set user event uev (retained until then) when the task completes: CL_COMPLETE, or
 * CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST on failure. */
clf_status clf__task_subscribe(struct clf__task *t, cl_event uev);
/* A new clf_event for the task (takes the caller's reference). */
clf_status clf__event_wrap_task(struct clf__task *t, clf_event **out);

/* An OpenCL event in device's context that completes with e (bridged through a user event
 * when e belongs to another context or to the host); release it with clReleaseEvent(). */
clf_status clf__event_cl_for(clf_event *e, clf_fleet *fleet, size_t device, cl_event *out);
/* Wait on the host for e; safe from any thread, and while others wait for it too. */
clf_status clf__event_wait_host(clf_event *e);
/* Set a user event from the result of the event it stands for; releases it. */
void clf__user_event_finish(cl_event uev, cl_int status);

/* ---- transfers (transfer.c, staging.c, peer.c) ---- */

/* Gather every device pair's path (transfer: the option, or NULL for $CLFLEET_TRANSFER).
 * CLF_ERROR_PARSE names the option or the variable. */
clf_status clf__xfer_init(clf_fleet *fleet, const char *transfer);
/* Wait for copies in flight, stop the transfer threads, free the staging buffers. */
void clf__xfer_fini(clf_fleet *fleet);
/* Wait until no copy is queued for or running on a transfer thread. */
void clf__xfer_drain(clf_fleet *fleet);
/* clFinish() on each of the device's queues; the first error. */
static inline cl_int clf__device_finish_queues(struct clf__device *d)
{
    cl_int err = clFinish(d->compute);
    if (err == CL_SUCCESS)
        err = clFinish(d->transfer);
    if (err == CL_SUCCESS)
        err = clFinish(d->copyq);
    return err;
}
/* A device that runs commands inside clEnqueue* (PoCL's "basic"): two host threads
 * enqueueing to it at once can deadlock inside PoCL 3, so every host thread that enqueues to
 * it (copies, buffer reads, writes and fills, a launch's worker) holds its lock meanwhile.
 * No-ops for other devices. */
void clf__dev_exec_enter(clf_fleet *fleet, size_t device);
void clf__dev_exec_leave(clf_fleet *fleet, size_t device);
/* Nonzero for such a device. It also runs a command inside whichever thread makes it ready
 * (a user event's status, another queue's completion), where PoCL 3 can deadlock on its
 * own locks: code that can should wait on the host rather than have its commands wait for
 * events of other queues. */
int clf__dev_sync_exec(const clf_fleet *fleet, size_t device);

/* ---- the command path (cmd.c) ---- */

/*
 * Commands that task queues, pipelines, collectives and markers enqueue on fleet device dev's
 * queue q (one of its queues). Each: on a sync-exec device (clf__dev_sync_exec()) waits for
 * the wait list on the host and enqueues with none, so that the command runs inside its
 * enqueue; holds the device's exec lock while enqueueing; flushes q; records a failure with
 * the device (CLF_ERROR_OPENCL); counts the command in the metrics and the trace on q's
 * track. *ev (optional) receives the command's event, as in OpenCL. Never blocking: host
 * memory must stay valid until the command completes, as for clEnqueue*(..., CL_FALSE).
 * The caller must not hold the device's exec lock.
 */
/* A kernel; the timeline names it name, with the first dimension's offset and size. */
clf_status clf__cmd_kernel(clf_fleet *fl, size_t dev, cl_command_queue q, cl_kernel k,
                           const char *name, cl_uint dims, const size_t *off, const size_t *gsz,
                           const size_t *lsz, cl_uint nwait, const cl_event *wait, cl_event *ev);
/* size bytes from host to buf at off, counted as to-device; what names it in an error. */
clf_status clf__cmd_write(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, size_t off,
                          size_t size, const void *host, const char *what, cl_uint nwait,
                          const cl_event *wait, cl_event *ev);
/* size bytes from buf at off to host, counted as from-device. */
clf_status clf__cmd_read(clf_fleet *fl, size_t dev, cl_command_queue q, cl_mem buf, size_t off,
                         size_t size, void *host, const char *what, cl_uint nwait,
                         const cl_event *wait, cl_event *ev);
/* A marker (not counted: it does no work). */
clf_status clf__cmd_marker(clf_fleet *fl, size_t dev, cl_command_queue q, const char *what,
                           cl_uint nwait, const cl_event *wait, cl_event *ev);

/* ---- synchronisation (sync.c) ---- */

/* A marker after all the work queued so far on device's compute and transfer queues. */
clf_status clf__device_marker(clf_fleet *fleet, size_t device, cl_event *out);

/* ---- programs (program.c, kernels.c generated) ---- */

struct clf_program {
    clf_fleet *fleet;
    int holds_fleet;         /* a reference to the fleet (0: the fleet owns the program) */
    char hash[65];           /* SHA-256 of source and options: names it in the perf model */
    cl_program *prog;        /* one per fleet device (program.c says why) */
    unsigned char *from_cache; /* one per device */
    unsigned char *built;      /* one per device: the build succeeded there */
    char **log;                /* one per device: why it did not (NULL where it did) */
};

/* CLF_SUCCESS when prog was built for fleet device dev, else CLF_ERROR_BUILD with a detail. */
clf_status clf__program_check_device(const struct clf_program *prog, size_t dev);

typedef struct clf__shipped {
    const char *name;
    const char *source;
} clf__shipped;
extern const clf__shipped clf__shipped_kernels[]; /* NULL-terminated */
extern const char *const clf__shipped_names[];   /* NULL-terminated */
/* cl/clfleet.h, prepended to every program source (chunk-indexing helpers). */
extern const char clf__kernel_prelude[];

/* ---- buffers (buffer.c) ---- */

struct clf_buffer {
    clf_fleet *fleet;
    int holds_fleet; /* a reference to the fleet (0: the fleet owns the buffer) */
    size_t device;
    size_t size;
    cl_mem mem;
};

/* Read a whole file (NUL-terminated); CLF_ERROR_IO with the path on failure. */
clf_status clf__read_file(const char *path, char **out, size_t *len);

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
/* Host monotonic clock in ns (the same clock as clf__now()). */
uint64_t clf__mono_ns(void);
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
/* A launch ran from t0 (host seconds, clf__now()) with this report. */
void clf__metrics_launch(clf_fleet *fl, const char *kernel, const clf_launch_report *rep,
                         double t0);

#endif

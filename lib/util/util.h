/* lib/util: what every layer uses: status details, names, clocks, tuning variables, and the
 * layout of the handles (fleet, device, event, program, buffer) that the layers above make
 * and read. Not installed. */
#ifndef CLFLEET_UTIL_H
#define CLFLEET_UTIL_H

#include "config.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>

#include "clfleet.h"

#define CLF__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors (error.c) ---- */

/* Set the thread's detail message and return s; printf-style. */
clf_status clf__fail(clf_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A versioned struct's version against the current one (error.c): 1 to current pass, else
 * CLF_ERROR_INVALID_ARGUMENT naming the caller (who, or NULL), the struct and its INIT. */
clf_status clf__check_version(const char *who, unsigned version, unsigned current,
                              const char *what, const char *init);
/* Append a line to the thread's detail message (build logs, several devices). */
void clf__append_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Put a formatted context before the calling thread's detail (what a lower call said) and
 * return s: "CLFLEET_DEVICES: " + the parser's message. */
clf_status clf__prefix_error(clf_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
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
/* The greatest common divisor of a and b (Euclid); gcd(a, 0) = a, gcd(0, 0) = 0. */
static inline uint64_t clf__gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ---- log (error.c) ---- */

/* $CLFLEET_LOG: "error", "warn", "info" or "debug" (unset or "": warn); CLF_ERROR_PARSE naming
 * the variable. Sets the process-wide level; clf_fleet_create() calls it. */
clf_status clf__log_init(void);
/* Nonzero when a message at level would be passed on (to skip building costly ones). */
int clf__log_on(clf_log_level level);
/* One line (no newline) to the handler or stderr, when level is at most the level set. */
void clf__log(clf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Validate a fleet handle and a device index. */
clf_status clf__check_device(const clf_fleet *fleet, size_t device);


/* ---- the helper pool (pool.c): the process's few named helper threads ---- */

/* The pool's bound: CLFLEET_THREADPOOL_SIZE, else this many. */
#define CLF__POOL_DEFAULT 4
#define CLF__POOL_MAX 64

/* A job of the pool, owned by whoever submits it (it may be embedded in the job's state).
 * fn(arg, 0) runs it on a pool thread; fn(arg, 1) says it was cancelled by the shutdown
 * before it started (on the shutting-down thread). fn may free the job. A job never blocks
 * waiting for another job of the pool. */
typedef struct clf__pool_work {
    struct clf__pool_work *next; /* the pool's, while queued */
    void (*fn)(void *arg, int cancelled);
    void *arg;
    uint64_t due; /* the pool's: a timed job's time (clf__mono_ns()) */
} clf__pool_work;

/* Queue w (fn and arg set; not queued already). Fails only when the pool has shut down or
 * cannot start its first thread: the caller then does the work itself. */
clf_status clf__pool_submit(clf__pool_work *w);
/* The same, from a job of the pool that returns right after: its own thread will take w
 * if no other does first, so no thread is started for it. */
clf_status clf__pool_requeue(clf__pool_work *w);
/* Run w when clf__mono_ns() reaches due (at once if it has), before the queued jobs. A timed
 * job must be short and never block: ordinary jobs may be waiting for it, and it may start
 * the pool's one thread beyond the bound (pool.c says why). Fails as clf__pool_submit(). */
clf_status clf__pool_submit_at(clf__pool_work *w, uint64_t due);
/* $CLFLEET_THREADPOOL_SIZE: *size, the default when unset or empty; CLF_ERROR_PARSE naming
 * the variable (clf_fleet_create() calls it, so a typo fails there). */
clf_status clf__pool_config(unsigned *size);
/* The bound, and the threads started so far (at most the bound, one more once a timed job
 * was queued). */
unsigned clf__pool_size(void);
unsigned clf__pool_threads(void);
/* Nonzero once the shutdown began: a long-running job returns. */
int clf__pool_stopping(void);
/* Refuse later jobs, cancel the queued ones, wait for the running ones, join the threads
 * (also done at exit). */
void clf__pool_shutdown(void);

/* ---- names and clocks (names.c, pure) ---- */

/* Host monotonic clock, seconds. */
double clf__now(void);
/* Host monotonic clock in ns (the same clock as clf__now()). */
uint64_t clf__mono_ns(void);
/* The name of a clf_path ("staged" ...), "unknown" out of range. */
const char *clf__metrics_path_name(unsigned path);

/* ---- tuning variables (names.c, pure): CLF_ERROR_PARSE naming the variable ---- */

/* $CLFLEET_METRICS: unset, "", 1/on/yes/true: counting; 0/off/no/false: *off = 1. */
clf_status clf__env_metrics(const char *v, int *off);
/* $CLFLEET_TRANSFER_CHUNK: a power of two in [64K, 64M], digits with an optional K/M. */
clf_status clf__env_transfer_chunk(const char *v, size_t dflt, size_t *out);
/* $CLFLEET_TRANSFER_STAGING: unset, "", auto: *pipeline = 0; pipeline: 1. */
clf_status clf__env_staging(const char *v, int *pipeline);
/* $CLFLEET_HOST_STAGING, how launches move host arrays: unset, "" or auto:
 * CLF__HOST_STAGING_AUTO (pinned slots where the device does not share the host's memory);
 * direct: CLF__HOST_STAGING_DIRECT; pinned: CLF__HOST_STAGING_PINNED (any case). */
enum { CLF__HOST_STAGING_AUTO, CLF__HOST_STAGING_DIRECT, CLF__HOST_STAGING_PINNED };
clf_status clf__env_host_staging(const char *v, int *mode);
/* $CLFLEET_CACHE_MAX: unset, "" or 0: *out = 0 (no limit); else bytes, digits with an
 * optional K, M or G (binary: 2^10, 2^20, 2^30). */
clf_status clf__env_cache_max(const char *v, uint64_t *out);
/* The binary cache's default directory: $CLFLEET_CACHE_DIR, $XDG_CACHE_HOME/clfleet,
 * ~/.cache/clfleet (malloc'd; NULL when none). */
char *clf__cache_default_dir(void);

/* ---- text for files (names.c): the JSON of the metrics, the trace and the model ---- */

/* A growing string. */
typedef struct clf__sb {
    char *s;
    size_t len, cap;
    int oom; /* out of memory (or a formatting error): the text is incomplete */
} clf__sb;

/* Append printf-style, numbers always in the C locale (a decimal point, no grouping):
 * the one formatter of numbers that files and JSON hold, whatever setlocale() the program
 * made, since "0,5" is not a JSON number. Sets oom on failure. */
void clf__sb_printf(clf__sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string (quoted; '"', '\\' and control bytes escaped); the one
 * escaper. NULL is written as "". */
void clf__sb_json_string(clf__sb *b, const char *s);
/* Write b's text to f and empty b; 0, or -1 with errno set (also when b->oom). */
int clf__sb_flush(clf__sb *b, FILE *f);
/* CLF_ERROR_IO for a write to fp that failed with errno err, the message naming who and the
 * stream's file (from /proc/self/fd where there is one, else its descriptor). */
clf_status clf__stream_fail(FILE *fp, int err, const char *who);
/* a then b in a new string (malloc'd; NULL on overflow or out of memory). */
char *clf__concat(const char *a, const char *b);

/* ---- the handles every layer sees (made in core/ and fleet/) ---- */

struct clf__device {
    cl_device_id id;
    cl_platform_id platform;
    cl_context ctx; /* borrowed from the fleet */
    cl_command_queue compute;
    cl_command_queue transfer;
    /* Copies the host drives (staging, CUDA bounces) enqueue here as they run, so that they
     * never queue behind commands that wait for them (transfer.c). */
    cl_command_queue copyq;
    /* The in-order queue clf_cl_compute_queue() hands the caller, created on first use
     * (core/device.c; NULL until then). clfleet enqueues none of its own launches, copies or
     * collectives there: a launch's chunks are enqueued later, by the dispatcher, and on a
     * queue shared with the caller they would queue behind a raw command that waits for
     * that launch (clf_event_cl_for()), a cycle that never ends. clf_event_record(),
     * clf_barrier(), clf_device_wait_events() and the finishes cover it (xfer/sync.c). */
    _Atomic(cl_command_queue) user;
    clf_device_info info;
    char *extensions;
    size_t index;     /* position in the fleet */
    int owns_id;      /* a sub-device: released with the fleet */
    /* A device fault in a launch (fault.c; under the fleet's lock): launches leave the
     * device out until clf_device_readmit(). */
    int failed;
    char fail_why[256];
    /* The driver's quirks as a table of calls (struct clf__devops, below), chosen at fleet
     * creation by clf__devops_init() (core/devops.c); NULL until then. */
    const struct clf__devops *ops;
    /* The lock of a device whose table serialises its enqueues (PoCL's basic device: two
     * host threads enqueueing to it at once can deadlock inside PoCL 3): taken for one
     * enqueue at a time, through ops->enqueue_enter() (core/devops.c, core/cmd.c). */
    pthread_mutex_t exec_lock;
};

/*
 * A device's driver quirks (core/devops.c has the tables and says what each quirk is, what
 * triggers it and why the workaround): the code that meets a quirk calls through the table
 * (core's clf__devops(); this layer and observe read the chosen table from the record).
 */
struct clf__devops {
    const char *name; /* in the log: "default", "pocl-basic" */
    /* Around one enqueue to the device, and never across a wait (core.h). */
    void (*enqueue_enter)(struct clf__device *d);
    void (*enqueue_leave)(struct clf__device *d);
    /* 1 when a command may wait for events that another queue, device or host thread
     * completes; 0 when such a wait list must be waited for on the host and the command
     * enqueued with none. */
    int wait_list_ok;
};

struct clf__perf_model;
struct clf__xfer;

struct clf_fleet {
    unsigned slot; /* the lowest number no other live fleet has (fleet.c) */
    /* The caller's reference until clf_fleet_destroy(), and one per child that holds one
     * (clf__fleet_ref()); the last to go tears the fleet down. */
    atomic_uint refs;
    /* Frees the fleet once the last reference has gone; set by clf_fleet_create() (fleet.c,
     * which finalizes every layer), called by clf__fleet_unref() (device.c). */
    void (*teardown)(clf_fleet *fl);
    struct clf__device *dev;
    size_t ndev;
    cl_context *ctx;
    size_t nctx;
    char *cache_dir; /* NULL: cache disabled */
    /* $CLFLEET_CACHE_MAX, parsed at creation (fleet.c): the bytes of binaries the cache
     * directory may hold, the oldest used evicted past it (program.c); 0: no limit. */
    uint64_t cache_max;
    /* $CLFLEET_STRATEGY, parsed at creation: what launches and GEMMs asking for the
     * default use (CLF_STRATEGY_AUTO when unset). */
    clf_strategy strategy;
    /* $CLFLEET_HOST_STAGING (CLF__HOST_STAGING_*) and $CLFLEET_TRANSFER_CHUNK, parsed at
     * creation: whether launches move host arrays through pinned slots, and the slots' size
     * (exec/pinned.c). */
    int host_staging;
    size_t host_slot;
    atomic_int cache_warned; /* an unusable cache was reported (once per fleet, program.c) */

    pthread_mutex_t lock; /* guards what follows */
    /* Each layer's own state (core/device.c): the launches', the collectives', GEMM's. */
    struct clf__state_slot *states;
    size_t nstates, cap_states;

    struct clf__xfer *xfer; /* transfer paths, staging buffers, copy threads (transfer.c) */

    struct clf__metrics *metrics; /* counters and timeline (metrics.c); NULL: off */

    struct clf__fault *fault; /* $CLFLEET_FAULT_INJECT rules (fault.c); NULL: none */

    /* $CLFLEET_SIMULATE rules (observe/simulate.c); NULL: none, and the command path
     * (core/cmd.c) tests only this. */
    struct clf__sim *sim;
};


/*
 * An OpenCL event, or a host-side completion (core/event.c): the one kind for everything
 * that completes on the host, an asynchronous launch, a copy run by the helper pool, a graph
 * run. Exactly one of ev and done is set. Events made on the stack for a wait (ev only) are
 * never released; allocated ones start with refs 1 (the caller's).
 */
struct clf_event {
    cl_event ev;
    struct clf__completion *done;
    /* The caller's reference plus those taken by clf__event_hold(): the last
     * clf_event_release() frees the event (atomic: no lock, core/event.c). */
    atomic_uint refs;
};

/* A program (core/program.c). */
struct clf_program {
    clf_fleet *fleet;
    int holds_fleet;         /* a reference to the fleet (0: the fleet owns the program) */
    char hash[65];           /* SHA-256 of source and options: names it in the perf model */
    cl_program *prog;        /* one per fleet device (program.c says why) */
    unsigned char *from_cache; /* one per device */
    unsigned char *built;      /* one per device: the build succeeded there */
    /* The digest of the files the source includes (core/includes.c), part of the cache key
     * ("" when it includes none); no_cache: an include could not be followed, so the binary
     * cache is not used for this program. */
    char includes[65];
    int no_cache;
    char **log;                /* one per device: why it did not (NULL where it did) */
    /* The public call that builds it (a static string), for the compile note; and whether
     * the note was logged (once a build, not once a device). */
    const char *build_call;
    int compile_noted;
    /* The built-ins the prelude redefines (core/rangearg.c): which the source names
     * (CLF__NAMES_* bits), and the kernels that got the hidden range parameter. */
    int range_named;
    char **range_kernels;
    size_t nrange_kernels;
    /* A launch saw the kernel store through a broadcast and said so (exec/check.c: once
     * per program; atomic). */
    int bcast_store_warned;
    /* Idle kernels of clf_kernel_enqueue() (core/kernel.c), under that file's lock. */
    struct clf__kernel_idle *idle_kernels;
    /* clf_array_launch()'s variant (core/rangearg.c, program.c): the user's source and
     * options kept to build it on first use, and the variant once built (under program.c's
     * lock). In the variant itself: array_variant_of set, and per range kernel why it cannot
     * run over arrays (NULL: it can). */
    char *source, *options;
    struct clf_program *array_variant;
    const struct clf_program *array_variant_of;
    char **array_why;
    uint64_t *array_ptrs; /* per range kernel: bit i set when parameter i is moved */
};


/* A buffer (core/buffer.c). */
struct clf_buffer {
    clf_fleet *fleet;
    int holds_fleet; /* a reference to the fleet (0: the fleet owns the buffer) */
    size_t device;
    size_t size;
    cl_mem mem;
    int maps; /* clf_buffer_map()s not yet unmapped (atomic) */
};

#endif

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
    clf_device_info info;
    char *extensions;
    size_t index;     /* position in the fleet */
    int owns_id;      /* a sub-device: released with the fleet */
};

/* A broadcast array kept on the devices between launches while unchanged. */
struct clf__bcast {
    const void *host;
    size_t size;
    uint64_t hash; /* of the content when it was uploaded */
    cl_mem *mem;   /* one per fleet device, NULL until uploaded there */
};

struct clf__perf_model;

struct clf_fleet {
    struct clf__device *dev;
    size_t ndev;
    cl_context *ctx;
    size_t nctx;
    char *cache_dir; /* NULL: cache disabled */

    pthread_mutex_t lock; /* guards what follows */
    struct clf__perf_model *perf; /* learned throughput (NULL until the first launch) */
    struct clf__bcast *bcast;
    size_t nbcast;
    /* Launches run in the order they were queued: a ticket each. */
    pthread_cond_t turn;
    uint64_t next_ticket, serving;
};

/* Launch state the fleet owns (launch.c). */
void clf__launch_fleet_fini(clf_fleet *fleet);

/* Query a device's facts (name, memory, PCI address ...). */
clf_status clf__device_query(cl_device_id id, cl_platform_id platform, clf_device_info *info,
                             char **extensions);
/* Nonzero when the space-separated list holds the exact name. */
int clf__ext_listed(const char *list, const char *name);
/* Validate a fleet handle and a device index. */
clf_status clf__check_device(const clf_fleet *fleet, size_t device);

/* ---- events (event.c) ---- */

/* An OpenCL event, or a host-side completion (an asynchronous launch). */
struct clf_event {
    cl_event ev;
    struct clf__host_op *op; /* non-NULL for host-side completion */
};
/* Wait for and free a host-side operation; returns its status. */
clf_status clf__host_op_wait(struct clf__host_op *op);
void clf__host_op_release(struct clf__host_op *op);
/* Wrap ev (taking the reference) or release it if out is NULL. */
clf_status clf__event_wrap(cl_event ev, clf_event **out);

/* ---- programs (program.c, kernels.c generated) ---- */

struct clf_program {
    clf_fleet *fleet;
    char hash[65];           /* SHA-256 of source and options: names it in the perf model */
    cl_program *prog;        /* one per context */
    unsigned char *from_cache; /* one per device */
};

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
    size_t device;
    size_t size;
    cl_mem mem;
};

/* Read a whole file (NUL-terminated); CLF_ERROR_IO with the path on failure. */
clf_status clf__read_file(const char *path, char **out, size_t *len);

#endif

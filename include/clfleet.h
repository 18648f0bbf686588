/*
 * clfleet — every OpenCL device in a machine working as one fleet.
 *
 * The whole public API. No OpenCL types are needed to use it; include
 * <clfleet/opencl.h> for the underlying cl_* handles (interoperability).
 *
 * Conventions: functions return a clf_status (0 on success, negative on
 * failure) and write their result through the first parameter; every
 * handle has one lifecycle (create, use, destroy) and destroy accepts NULL;
 * option structs start with a version and are filled by an _INIT macro.
 * On failure, clf_last_error() holds a detail message for the calling
 * thread (the OpenCL call, its error name, the device, a build log).
 */
#ifndef CLFLEET_H
#define CLFLEET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CLF_API
#elif defined(__GNUC__)
#define CLF_API __attribute__((visibility("default")))
#else
#define CLF_API
#endif

/** \brief Major version of the headers. */
#define CLF_VERSION_MAJOR 0
/** \brief Minor version of the headers. */
#define CLF_VERSION_MINOR 1
/** \brief Patch version of the headers. */
#define CLF_VERSION_PATCH 0
/** \brief The version as one number, 0xMMmmpp. */
#define CLF_VERSION_HEX \
    ((CLF_VERSION_MAJOR << 16) | (CLF_VERSION_MINOR << 8) | CLF_VERSION_PATCH)

/** \brief The version of the library linked at run time, as CLF_VERSION_HEX. */
CLF_API unsigned clf_version(void);
/** \brief The version of the library linked at run time, as "M.m.p". */
CLF_API const char *clf_version_string(void);

/* ------------------------------------------------------------------ */
/* Status codes                                                        */
/* ------------------------------------------------------------------ */

/**
 * \brief Every status code: X(name, value, message).
 *
 * One list generates the enum, clf_status_name() and clf_status_string().
 */
#define CLF_STATUS_LIST(X)                                                             \
    X(SUCCESS, 0, "success")                                                           \
    X(ERROR_INVALID_ARGUMENT, -1, "invalid argument")                                  \
    X(ERROR_NULL_POINTER, -2, "a required pointer or handle is NULL")                  \
    X(ERROR_ZERO_SIZE, -3, "size is zero")                                             \
    X(ERROR_SIZE_OVERFLOW, -4, "size computation overflows")                           \
    X(ERROR_OUT_OF_RANGE, -5, "index, offset or region out of range")                  \
    X(ERROR_NO_PLATFORM, -6, "no OpenCL platform found")                               \
    X(ERROR_NO_DEVICE, -7, "no OpenCL device matches the selection")                   \
    X(ERROR_OPENCL, -8, "an OpenCL call failed")                                       \
    X(ERROR_BUILD, -9, "program build failed")                                         \
    X(ERROR_OUT_OF_HOST_MEMORY, -10, "out of host memory")                             \
    X(ERROR_IO, -11, "file input/output failed")                                       \
    X(ERROR_PARSE, -12, "malformed selection, option or environment value")            \
    X(ERROR_NOT_FOUND, -13, "no such kernel, program or entry")                        \
    X(ERROR_UNSUPPORTED, -14, "operation not supported by this device or build")       \
    X(ERROR_BUSY, -15, "object still in use")

/** \brief Status returned by every fallible function. */
typedef enum clf_status {
#define CLF__STATUS_ENUM(name, value, msg) CLF_##name = value,
    CLF_STATUS_LIST(CLF__STATUS_ENUM)
#undef CLF__STATUS_ENUM
} clf_status;

/** \brief The code's name, e.g. "CLF_ERROR_BUILD"; "CLF_UNKNOWN_STATUS" otherwise. */
CLF_API const char *clf_status_name(clf_status s);
/** \brief A one-line English description of the code. */
CLF_API const char *clf_status_string(clf_status s);
/**
 * \brief The detail message of the last failure on the calling thread.
 *
 * Never NULL (empty when there is none). Valid until the next clfleet call
 * on this thread. The returned status is authoritative; this is detail.
 */
CLF_API const char *clf_last_error(void);
/** \brief Clear the calling thread's detail message. */
CLF_API void clf_clear_error(void);

/* ------------------------------------------------------------------ */
/* Fleet                                                               */
/* ------------------------------------------------------------------ */

/** \brief A set of selected OpenCL devices with their contexts and queues. */
typedef struct clf_fleet clf_fleet;

/** \brief Device type bits (match the OpenCL ones). */
enum {
    CLF_DEVICE_CPU = 1u << 1,
    CLF_DEVICE_GPU = 1u << 2,
    CLF_DEVICE_ACCELERATOR = 1u << 3,
    CLF_DEVICE_CUSTOM = 1u << 4,
    CLF_DEVICE_ALL = 0x1eu
};

/** \brief Capability bits a selection can require. */
enum {
    CLF_CAP_FP64 = 1u << 0,        /**< double precision */
    CLF_CAP_HOST_UNIFIED = 1u << 1 /**< memory shared with the host */
};

/** \brief Options for clf_fleet_create(); fill with CLF_FLEET_OPTIONS_INIT. */
typedef struct clf_fleet_options {
    unsigned version; /**< CLF_FLEET_OPTIONS_VERSION */
    /**
     * Selection string (syntax in README, "Device selection"), e.g.
     * "type=cpu;min_cu=2;split=1". NULL: $CLFLEET_DEVICES, else the default
     * (every GPU and accelerator; CPUs only when there is none).
     */
    const char *devices;
    unsigned device_types;      /**< CLF_DEVICE_* mask; 0: from the selection string */
    unsigned min_compute_units; /**< 0: from the selection string */
    unsigned require;           /**< CLF_CAP_* bits added to the selection's */
    /** Split each selected CPU device equally into sub-devices of this many units. */
    unsigned split_cpu_units;
    /** Or split by counts (clCreateSubDevices BY_COUNTS); at most 64 entries. */
    const unsigned *split_cpu_counts;
    size_t num_split_cpu_counts;
    int context_per_device; /**< nonzero: one context per device, not per platform */
    const char *cache_dir;  /**< NULL: $CLFLEET_CACHE_DIR, else $XDG_CACHE_HOME/clfleet */
    int disable_cache;      /**< nonzero: never read or write program binaries */
} clf_fleet_options;

#define CLF_FLEET_OPTIONS_VERSION 1
#define CLF_FLEET_OPTIONS_INIT                                   \
    {                                                            \
        CLF_FLEET_OPTIONS_VERSION, NULL, 0, 0, 0, 0, NULL, 0, 0, \
            NULL, 0                                              \
    }

/**
 * \brief Discover the devices on every OpenCL platform, select some, and
 * create contexts and two in-order profiling queues per device (compute and
 * transfer).
 * \param out receives the fleet
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, CLF_ERROR_NO_PLATFORM, CLF_ERROR_NO_DEVICE,
 *         CLF_ERROR_PARSE for a bad selection, CLF_ERROR_OPENCL
 */
CLF_API clf_status clf_fleet_create(clf_fleet **out, const clf_fleet_options *opts);
/** \brief Release every device, context and queue; accepts NULL. */
CLF_API void clf_fleet_destroy(clf_fleet *fleet);
/** \brief Number of devices in the fleet (0 for NULL). */
CLF_API size_t clf_fleet_device_count(const clf_fleet *fleet);
/** \brief Number of OpenCL contexts the fleet created. */
CLF_API size_t clf_fleet_context_count(const clf_fleet *fleet);
/** \brief Wait until every queue of every device is idle. */
CLF_API clf_status clf_fleet_finish(clf_fleet *fleet);

/** \brief Facts about one device of a fleet. */
typedef struct clf_device_info {
    char name[256];
    char vendor[256];
    char platform[256];        /**< platform name */
    char platform_vendor[256];
    char version[128];         /**< CL_DEVICE_VERSION */
    char driver_version[128];
    unsigned type;             /**< one CLF_DEVICE_* bit */
    unsigned cl_major, cl_minor; /**< OpenCL version the device supports */
    uint64_t global_mem;       /**< bytes */
    uint64_t max_alloc;        /**< bytes */
    uint64_t local_mem;        /**< bytes */
    unsigned compute_units;
    unsigned clock_mhz;
    int host_unified; /**< memory shared with the host */
    int fp64;
    int pci_known; /**< the PCI fields below are valid */
    unsigned pci_domain, pci_bus, pci_device, pci_function;
    unsigned platform_index; /**< index of the platform in discovery order */
    unsigned context_index;  /**< which of the fleet's contexts holds it */
    int is_sub_device;       /**< created by splitting a device */
    int parent_index;        /**< discovery index of the root device */
    const char *extensions;  /**< space-separated; owned by the fleet */
} clf_device_info;

/** \brief Copy the facts of device \p device into \p out. */
CLF_API clf_status clf_device_get_info(const clf_fleet *fleet, size_t device,
                                       clf_device_info *out);
/** \brief Nonzero when the device advertises extension \p name. */
CLF_API int clf_device_has_extension(const clf_fleet *fleet, size_t device, const char *name);
/** \brief The name of a CLF_DEVICE_* type bit ("cpu", "gpu", ...). */
CLF_API const char *clf_device_type_name(unsigned type);

/* ------------------------------------------------------------------ */
/* Programs                                                            */
/* ------------------------------------------------------------------ */

/** \brief A program built for every device of a fleet. */
typedef struct clf_program clf_program;

/**
 * \brief Build OpenCL C source for every device of the fleet.
 *
 * Binaries are cached (see clf_fleet_options.cache_dir); a failure returns
 * CLF_ERROR_BUILD and clf_last_error() holds each failing device's name and
 * compiler log.
 * \param options compiler options, or NULL
 */
CLF_API clf_status clf_program_build_source(clf_program **out, clf_fleet *fleet,
                                            const char *source, const char *options);
/** \brief As clf_program_build_source(), reading the source from \p path. */
CLF_API clf_status clf_program_build_file(clf_program **out, clf_fleet *fleet, const char *path,
                                          const char *options);
/**
 * \brief Build a kernel file shipped with clfleet (cl/NAME.cl), e.g. "vector".
 *
 * The sources are embedded in the library; $CLFLEET_KERNEL_DIR, when set,
 * is searched first (for development).
 */
CLF_API clf_status clf_program_build_shipped(clf_program **out, clf_fleet *fleet,
                                             const char *name, const char *options);
/** \brief Nonzero when the binary for \p device came from the cache. */
CLF_API int clf_program_from_cache(const clf_program *prog, size_t device);
/** \brief Release the program; accepts NULL. */
CLF_API void clf_program_destroy(clf_program *prog);
/** \brief The names of the shipped kernel files, NULL-terminated. */
CLF_API const char *const *clf_shipped_kernels(void);
/** \brief The source of a shipped kernel file, or NULL. */
CLF_API const char *clf_shipped_kernel_source(const char *name);

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/** \brief Completion of an asynchronous operation. */
typedef struct clf_event clf_event;

/** \brief Block until the event completes; an error if the command failed. */
CLF_API clf_status clf_event_wait(clf_event *ev);
/** \brief Release the event; accepts NULL. Does not wait. */
CLF_API void clf_event_release(clf_event *ev);

/* ------------------------------------------------------------------ */
/* Buffers                                                             */
/* ------------------------------------------------------------------ */

/** \brief Device memory on one device of a fleet. */
typedef struct clf_buffer clf_buffer;

/** \brief Buffer access flags. */
enum {
    CLF_MEM_READ_WRITE = 0,
    CLF_MEM_READ_ONLY = 1u << 0, /**< kernels only read it */
    CLF_MEM_WRITE_ONLY = 1u << 1 /**< kernels only write it */
};

/** \brief Allocate \p size bytes on device \p device. */
CLF_API clf_status clf_buffer_create(clf_buffer **out, clf_fleet *fleet, size_t device,
                                     size_t size, unsigned flags);
/** \brief Release the buffer (after its pending commands); accepts NULL. */
CLF_API void clf_buffer_destroy(clf_buffer *buf);
/** \brief The buffer's size in bytes (0 for NULL). */
CLF_API size_t clf_buffer_size(const clf_buffer *buf);
/** \brief The index of the buffer's device. */
CLF_API size_t clf_buffer_device(const clf_buffer *buf);

/** \brief Copy \p size bytes from the host to the buffer at \p offset; blocking. */
CLF_API clf_status clf_buffer_write(clf_buffer *buf, size_t offset, size_t size,
                                    const void *src);
/** \brief Copy \p size bytes at \p offset from the buffer to the host; blocking. */
CLF_API clf_status clf_buffer_read(clf_buffer *buf, size_t offset, size_t size, void *dst);
/**
 * \brief Start a write; \p src must stay valid until \p out_event completes.
 * \param out_event receives the completion event (release it), or NULL
 */
CLF_API clf_status clf_buffer_write_async(clf_buffer *buf, size_t offset, size_t size,
                                          const void *src, clf_event **out_event);
/** \brief Start a read; \p dst is valid once \p out_event completes. */
CLF_API clf_status clf_buffer_read_async(clf_buffer *buf, size_t offset, size_t size,
                                         void *dst, clf_event **out_event);
/**
 * \brief Fill a region with a repeated pattern (1, 2, 4, ... 128 bytes);
 * \p offset and \p size must be multiples of the pattern size. Blocking.
 */
CLF_API clf_status clf_buffer_fill(clf_buffer *buf, const void *pattern, size_t pattern_size,
                                   size_t offset, size_t size);


/* ------------------------------------------------------------------ */
/* One launch across the fleet                                         */
/* ------------------------------------------------------------------ */

/** \brief How a launch's range is split over the devices. */
typedef enum clf_strategy {
    CLF_STRATEGY_DEFAULT = 0, /**< $CLFLEET_STRATEGY, else CLF_AUTO */
    CLF_STATIC = 1,           /**< one chunk per device, by weights */
    CLF_DYNAMIC = 2,          /**< equal chunks pulled by whichever device is free */
    CLF_GUIDED = 3,           /**< HGuided: shrinking chunks by device throughput */
    CLF_MEMORY_AWARE = 4,     /**< every chunk fits the device's memory budget; streams */
    CLF_AUTO = 5              /**< one of the above, named in the report */
} clf_strategy;

/** \brief "static", "dynamic", "guided", "memory-aware", "auto", "default"; NULL if unknown. */
CLF_API const char *clf_strategy_name(clf_strategy s);
/** \brief Parse a strategy name (as clf_strategy_name() writes it; case-insensitive). */
CLF_API clf_status clf_strategy_parse(const char *name, clf_strategy *out);

/** \brief Where CLF_STATIC and CLF_GUIDED take device weights from. */
typedef enum clf_weights {
    CLF_WEIGHTS_LEARNED = 0, /**< measured throughput of this kernel on each device (persisted
                                  in the cache directory); compute units x clock until known */
    CLF_WEIGHTS_EQUAL = 1,
    CLF_WEIGHTS_USER = 2 /**< clf_launch_desc.weights */
} clf_weights;

/** \brief Kinds of launch arguments. */
enum {
    CLF_ARG_KIND_IN = 1,    /**< partitioned host array, read by the kernel */
    CLF_ARG_KIND_OUT,       /**< partitioned host array, written by the kernel */
    CLF_ARG_KIND_INOUT,     /**< partitioned host array, read and written */
    CLF_ARG_KIND_BROADCAST, /**< whole host array on every device (read only, cached) */
    CLF_ARG_KIND_SCALAR,    /**< a value passed as is */
    CLF_ARG_KIND_LOCAL,     /**< local memory of the given size */
    CLF_ARG_KIND_REDUCE     /**< per-device partial results combined on the host */
};

/** \brief Argument flags. */
enum {
    /**
     * A partitioned argument's device buffer holds only the chunk plus its
     * halo; unit u of the range is at index u - get_global_offset(d) +
     * halo_before of the buffer (cl/clfleet.h has helpers). Without it the
     * buffer spans the whole array and kernels index it with get_global_id().
     */
    CLF_ARG_CHUNK_INDEXED = 1u << 0
};

/** \brief Reduction operations. */
typedef enum clf_reduce_op { CLF_SUM = 1, CLF_PROD, CLF_MIN, CLF_MAX } clf_reduce_op;
/** \brief Element types of reductions (and collectives). */
typedef enum clf_type { CLF_INT32 = 1, CLF_UINT32, CLF_INT64, CLF_FLOAT, CLF_DOUBLE } clf_type;
/** \brief Bytes of one element of a clf_type (0 if unknown). */
CLF_API size_t clf_type_size(clf_type t);

/**
 * \brief One kernel argument of a launch, in kernel parameter order; use the
 * CLF_IN, CLF_OUT, ... macros.
 *
 * A partitioned array relates to the range along its slowest-varying
 * dimension (the last of desc.dims): \p unit bytes per index of that
 * dimension (e.g. a row of an image), \p size bytes in all (at least the
 * range times \p unit), and an optional halo of units read before and after
 * each chunk (stencils). A reduction's device buffer holds \p size elements of
 * \p type, set to the identity of \p op on each device; the kernel combines
 * into it (atomics, or one element per work-group with +=), and the launch
 * combines the devices' buffers element-wise into \p host.
 */
typedef struct clf_arg {
    unsigned kind;  /**< CLF_ARG_KIND_* */
    unsigned flags; /**< CLF_ARG_CHUNK_INDEXED */
    void *host;     /**< array, scalar value or reduction result */
    size_t size;    /**< bytes (array, scalar, local memory); elements for a reduction */
    size_t unit;    /**< partitioned: bytes per split unit */
    size_t halo_before, halo_after; /**< partitioned inputs: units */
    unsigned op, type;              /**< reduction: clf_reduce_op, clf_type */
} clf_arg;

#define CLF__ARG(kind, flags, host, size, unit, hb, ha) \
    {(kind), (flags), (void *)(host), (size), (unit), (hb), (ha), 0, 0}
/** \brief Partitioned input: \p bytes in all, \p unit bytes per split index. */
#define CLF_IN(host, bytes, unit) CLF__ARG(CLF_ARG_KIND_IN, 0, host, bytes, unit, 0, 0)
/** \brief Partitioned input with a halo of \p before / \p after units. */
#define CLF_IN_HALO(host, bytes, unit, before, after) \
    CLF__ARG(CLF_ARG_KIND_IN, 0, host, bytes, unit, before, after)
/** \brief Partitioned output. */
#define CLF_OUT(host, bytes, unit) CLF__ARG(CLF_ARG_KIND_OUT, 0, host, bytes, unit, 0, 0)
/** \brief Partitioned input and output. */
#define CLF_INOUT(host, bytes, unit) CLF__ARG(CLF_ARG_KIND_INOUT, 0, host, bytes, unit, 0, 0)
/** \brief The whole array on every device, kept between launches while unchanged. */
#define CLF_BROADCAST(host, bytes) CLF__ARG(CLF_ARG_KIND_BROADCAST, 0, host, bytes, 0, 0, 0)
/** \brief A scalar: a pointer to the value (the size is taken from it). */
#define CLF_SCALAR(ptr) CLF__ARG(CLF_ARG_KIND_SCALAR, 0, ptr, sizeof *(ptr), 0, 0, 0)
/** \brief Local memory of \p bytes. */
#define CLF_LOCAL(bytes) CLF__ARG(CLF_ARG_KIND_LOCAL, 0, NULL, bytes, 0, 0, 0)
/** \brief Reduction of \p count elements of \p type with \p op into \p host. */
#define CLF_REDUCE(host, count, type, op) \
    {CLF_ARG_KIND_REDUCE, 0, (void *)(host), (count), 0, 0, 0, (op), (type)}

/** \brief What to launch and how; fill with CLF_LAUNCH_DESC_INIT. */
typedef struct clf_launch_desc {
    unsigned version;      /**< CLF_LAUNCH_DESC_VERSION */
    const char *kernel;    /**< kernel function name */
    unsigned dims;         /**< 1, 2 or 3; split along dimension dims-1 */
    size_t global[3];      /**< the range */
    size_t local[3];       /**< work-group size, or all 0 for the driver's choice */
    size_t granularity;    /**< chunks are multiples of this (and of the local size) */
    clf_strategy strategy;
    const size_t *devices; /**< fleet indices to use, or NULL for every device */
    size_t num_devices;
    clf_weights weights_mode;
    const double *weights; /**< CLF_WEIGHTS_USER: one per used device */
    /** Per used device, a memory limit in bytes for this launch (0: none), or NULL. */
    const uint64_t *mem_limits;
    double mem_safety;          /**< usable fraction of reported memory; 0: 0.8 */
    unsigned chunks_per_device; /**< CLF_DYNAMIC: about this many chunks each; 0: 4 */
    size_t min_chunk;           /**< CLF_GUIDED: smallest chunk in units; 0: granularity */
} clf_launch_desc;

#define CLF_LAUNCH_DESC_VERSION 1
#define CLF_LAUNCH_DESC_INIT                                                            \
    {                                                                                   \
        CLF_LAUNCH_DESC_VERSION, NULL, 1, {0, 1, 1}, {0, 0, 0}, 0, CLF_STRATEGY_DEFAULT, \
            NULL, 0, CLF_WEIGHTS_LEARNED, NULL, NULL, 0.0, 0, 0                          \
    }

/** \brief Most devices one launch uses (the report's array size). */
#define CLF_MAX_LAUNCH_DEVICES 64

/** \brief What one device did in a launch. */
typedef struct clf_device_report {
    size_t device;            /**< fleet index */
    uint64_t units;           /**< split indices done */
    uint64_t items;           /**< work-items done */
    unsigned chunks;          /**< chunks taken */
    double share;             /**< units / total */
    double busy_s;            /**< kernel time, from profiling events */
    uint64_t bytes_to_device, bytes_from_device;
    double to_device_s, from_device_s; /**< transfer time, from profiling events */
    double finish_s;          /**< host time from the launch's start to its last result */
    uint64_t mem_peak;        /**< most bytes the launch held on the device */
    uint64_t mem_budget;      /**< the budget it was held to */
    int failed;               /**< the device failed and its work went to others */
} clf_device_report;

/** \brief What a launch did. */
typedef struct clf_launch_report {
    clf_strategy requested; /**< as asked (after $CLFLEET_STRATEGY) */
    clf_strategy strategy;  /**< as run (CLF_AUTO resolved) */
    char reason[256];       /**< why CLF_AUTO chose it, or how weights were found */
    uint64_t total_units;
    size_t num_devices;
    clf_device_report dev[CLF_MAX_LAUNCH_DEVICES];
    double makespan_s;  /**< latest device finish */
    double efficiency;  /**< earliest finish / latest finish, over devices that took work */
    double imbalance;   /**< latest finish / mean finish - 1 */
} clf_launch_report;

/**
 * \brief Run one kernel over the range on many devices; blocks until done.
 *
 * The range is split along its slowest-varying dimension; each chunk is
 * launched with a global work offset, and only its part of each partitioned
 * array (plus halo) moves each way, so a kernel written for one device runs
 * unchanged. Each device is driven by its own host thread; the next chunk's
 * input moves on the transfer queue while the current one computes.
 * \param report receives what each device did, or NULL
 */
CLF_API clf_status clf_launch(clf_fleet *fleet, clf_program *prog, const clf_launch_desc *desc,
                              const clf_arg *args, size_t nargs, clf_launch_report *report);
/**
 * \brief As clf_launch(), returning at once; \p out_event completes with the
 * launch (clf_event_wait() returns its status). Launches run in the order they
 * were queued. The host arrays and \p report must stay valid until then;
 * \p desc and \p args are copied.
 */
CLF_API clf_status clf_launch_async(clf_fleet *fleet, clf_program *prog,
                                    const clf_launch_desc *desc, const clf_arg *args,
                                    size_t nargs, clf_launch_report *report,
                                    clf_event **out_event);

#ifdef __cplusplus
}
#endif

#endif /* CLFLEET_H */

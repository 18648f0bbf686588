/**
 * \file clfleet.h
 * \brief clfleet — every OpenCL device in a machine working as one fleet.
 *
 * The whole public API. No OpenCL types are needed to use it; include
 * <clfleet/opencl.h> for the underlying cl_* handles (interoperability).
 *
 * Conventions: functions return a clf_status (0 on success, negative on
 * failure) and write their results through their first parameters (an
 * asynchronous call gives its event through its last, after the wait list,
 * as clEnqueue* do); every handle has one lifecycle (create, use, destroy)
 * and destroy accepts NULL; option structs start with a version and are
 * filled by an _INIT macro (any version from 1 to the header's is taken);
 * output structs end in reserved fields; enum names carry their type's
 * prefix (the short names of the first drafts remain as aliases in 0.x).
 * On failure, clf_last_error() holds a detail message for the calling
 * thread (the OpenCL call, its error name, the device, a build log).
 */
#ifndef CLFLEET_H
#define CLFLEET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Marks the functions the library exports. */
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

/**
 * \brief The version of the library linked at run time, as CLF_VERSION_HEX.
 * \return the version, as CLF_VERSION_HEX computes it
 */
CLF_API unsigned clf_version(void);
/**
 * \brief The version of the library linked at run time, as "M.m.p".
 * \return a static string, e.g. "0.1.0"
 */
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
    X(ERROR_BUSY, -15, "object still in use")                                          \
    X(ERROR_DEVICE_FAILED, -16, "a device failed (left out until clf_device_readmit())") \
    X(ERROR_TIMEOUT, -17, "timed out waiting for another rank")                        \
    X(ERROR_MPI, -18, "an MPI call failed (another rank may have gone)")

/** \brief Status returned by every fallible function. */
typedef enum clf_status {
/** \brief Internal: one enumerator of CLF_STATUS_LIST. */
#define CLF__STATUS_ENUM(name, value, msg) CLF_##name = value,
    CLF_STATUS_LIST(CLF__STATUS_ENUM)
#undef CLF__STATUS_ENUM
} clf_status;

/**
 * \brief The code's name, e.g. "CLF_ERROR_BUILD"; "CLF_UNKNOWN_STATUS" otherwise.
 * \param s a status code
 * \return a static string, never NULL
 */
CLF_API const char *clf_status_name(clf_status s);
/**
 * \brief A one-line English description of the code.
 * \param s a status code
 * \return a static string, never NULL
 */
CLF_API const char *clf_status_string(clf_status s);
/**
 * \brief The detail message of the last failure on the calling thread.
 *
 * Never NULL (empty when there is none). Valid until the next clfleet call
 * on this thread. The returned status is authoritative; this is detail.
 * \return the detail message, never NULL
 */
CLF_API const char *clf_last_error(void);
/** \brief Clear the calling thread's detail message. */
CLF_API void clf_clear_error(void);
/**
 * \brief Set the calling thread's detail message, as a failing clfleet call does, and
 * return \p s: for libraries built on clfleet (libclfleet-mpi uses it) whose callers read
 * clf_last_error(). \p fmt may take clf_last_error() as an argument (to add to it).
 * \param s the status to return
 * \param fmt a printf format, then its arguments (NULL: an empty message)
 * \return \p s
 */
CLF_API clf_status clf_set_error(clf_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ------------------------------------------------------------------ */
/* Log                                                                 */
/* ------------------------------------------------------------------ */

/**
 * \brief How much the library says about its decisions.
 *
 * `CLFLEET_LOG=error|warn|info|debug` sets the level, read whenever a fleet
 * is created (default `warn`; another value fails clf_fleet_create() with
 * CLF_ERROR_PARSE). A message is passed on when its level is at most the one set.
 */
typedef enum clf_log_level {
    CLF_LOG_ERROR = 0, /**< failures the library cannot return (e.g. a trace not written) */
    CLF_LOG_WARN = 1,  /**< something is off, the work goes on (a device failed, a bad cache) */
    CLF_LOG_INFO = 2,  /**< decisions made once per fleet: devices chosen, transfer paths */
    CLF_LOG_DEBUG = 3  /**< decisions made per call: cache hits, strategies, host waits */
} clf_log_level;

/**
 * \brief A program's receiver of the library's log messages.
 * \param user the pointer given to clf_log_set_handler()
 * \param level the message's level
 * \param msg one line, without the "clfleet: " prefix and without a newline
 */
typedef void (*clf_log_fn)(void *user, clf_log_level level, const char *msg);

/**
 * \brief Send the log messages to fn instead of stderr.
 *
 * Process-wide and thread-safe: the handler may be called from any thread, one
 * call at a time, and must not call clfleet. Without one (fn NULL, the default),
 * messages go to stderr as "clfleet: " followed by the message.
 * \param fn the handler, or NULL for stderr
 * \param user passed to fn unchanged
 */
CLF_API void clf_log_set_handler(clf_log_fn fn, void *user);

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
     * Selection string (syntax in doc/02-devices.md, "Device selection"), e.g.
     * "type=cpu;min_cu=2;split=1". NULL: $CLFLEET_DEVICES, else the default
     * (every GPU and accelerator; CPUs only when there is none).
     */
    const char *devices;
    unsigned device_types;      /**< CLF_DEVICE_* mask; 0: from the selection string */
    /** 0: from the selection string. Counts the units of the root device, before any split:
     *  2 with split_cpu_units 1 selects the CPU devices that give two or more sub-devices. */
    unsigned min_compute_units;
    unsigned require;           /**< CLF_CAP_* bits added to the selection's */
    /** Split each selected CPU device equally into sub-devices of this many units. */
    unsigned split_cpu_units;
    /** Or split by counts (clCreateSubDevices BY_COUNTS); at most 64 entries. */
    const unsigned *split_cpu_counts;
    size_t num_split_cpu_counts; /**< entries of split_cpu_counts */
    int context_per_device; /**< nonzero: one context per device, not per platform */
    const char *cache_dir;  /**< NULL: $CLFLEET_CACHE_DIR, else $XDG_CACHE_HOME/clfleet */
    int disable_cache;      /**< nonzero: never read or write program binaries */
    /**
     * Transfer paths to leave out, e.g. "staged" (force host staging),
     * "no-cuda,no-amd" (see doc/05-transfers.md). NULL: $CLFLEET_TRANSFER.
     */
    const char *transfer;
    /**
     * Record a timeline of every kernel, copy and wait, written to this path as
     * Chrome trace-event JSON (open it in Perfetto) when the fleet is destroyed
     * and by clf_trace_flush(). "%p" in the path becomes the process id, "%n"
     * the fleet's number in the process (0, 1, ...). NULL: $CLFLEET_TRACE; "": off.
     * A file that cannot be written at destroy is reported on standard error.
     */
    const char *trace;
} clf_fleet_options;

/** \brief The version of clf_fleet_options this header describes. */
#define CLF_FLEET_OPTIONS_VERSION 1
/** \brief Fills a clf_fleet_options with the defaults. */
#define CLF_FLEET_OPTIONS_INIT                                   \
    {                                                            \
        CLF_FLEET_OPTIONS_VERSION, NULL, 0, 0, 0, 0, NULL, 0, 0, \
            NULL, 0, NULL, NULL                                  \
    }

/**
 * \brief Discover the devices on every OpenCL platform, select some, and
 * create contexts and in-order profiling queues per device (compute, transfer,
 * and one for the copies the host drives).
 * \param out receives the fleet
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, CLF_ERROR_NO_PLATFORM, CLF_ERROR_NO_DEVICE (nothing matches, the
 *         detail naming per device the term or field that excluded it; or index= names a
 *         device that does not exist), CLF_ERROR_PARSE for a bad selection,
 *         CLF_ERROR_INVALID_ARGUMENT (a split asks more compute units than a selected CPU
 *         device has), CLF_ERROR_OPENCL
 */
CLF_API clf_status clf_fleet_create(clf_fleet **out, const clf_fleet_options *opts);
/**
 * \brief Drop the caller's reference to the fleet; accepts NULL.
 *
 * The fleet lives until its last child goes (OpenCL's model): every buffer,
 * program, pipeline and task queue holds a reference to it. The call that drops
 * the last reference, this one or the destroy of the last child, tears the fleet
 * down on its thread: it waits for the queued work, writes the trace and
 * releases every device, context and queue. Children stay fully usable until
 * they are destroyed, in any order and from any thread; \p fleet itself must not
 * be used after this call. Events hold no reference (the teardown completes
 * their work; they can be waited for and released after it).
 * \param fleet the fleet, or NULL
 */
CLF_API void clf_fleet_destroy(clf_fleet *fleet);
/**
 * \brief Number of devices in the fleet (0 for NULL).
 * \param fleet the fleet
 * \return the number of devices
 */
CLF_API size_t clf_fleet_device_count(const clf_fleet *fleet);
/**
 * \brief Number of OpenCL contexts the fleet created.
 * \param fleet the fleet
 * \return the number of contexts
 */
CLF_API size_t clf_fleet_context_count(const clf_fleet *fleet);
/**
 * \brief Wait until every queue of every device is idle.
 * \param fleet the fleet
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_fleet_finish(clf_fleet *fleet);

/** \brief Facts about one device of a fleet. */
typedef struct clf_device_info {
    char name[256];            /**< CL_DEVICE_NAME */
    char vendor[256];          /**< CL_DEVICE_VENDOR */
    char platform[256];        /**< platform name */
    char platform_vendor[256]; /**< CL_PLATFORM_VENDOR */
    char version[128];         /**< CL_DEVICE_VERSION */
    char driver_version[128];  /**< CL_DRIVER_VERSION */
    unsigned type;             /**< one CLF_DEVICE_* bit */
    unsigned cl_major;         /**< OpenCL version the device supports: major */
    unsigned cl_minor;         /**< OpenCL version the device supports: minor */
    uint64_t global_mem;       /**< bytes */
    uint64_t max_alloc;        /**< bytes */
    uint64_t local_mem;        /**< bytes */
    unsigned compute_units; /**< CL_DEVICE_MAX_COMPUTE_UNITS */
    unsigned clock_mhz;     /**< CL_DEVICE_MAX_CLOCK_FREQUENCY */
    int host_unified; /**< memory shared with the host */
    int fp64;         /**< double precision */
    int pci_known; /**< the PCI fields below are valid */
    unsigned pci_domain;   /**< PCI domain */
    unsigned pci_bus;      /**< PCI bus */
    unsigned pci_device;   /**< PCI device */
    unsigned pci_function; /**< PCI function */
    unsigned platform_index; /**< index of the platform in discovery order */
    unsigned context_index;  /**< which of the fleet's contexts holds it */
    int is_sub_device;       /**< created by splitting a device */
    int parent_index;        /**< discovery index of the root device */
    const char *extensions;  /**< space-separated; owned by the fleet */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_device_info;

/**
 * \brief Copy the facts of device \p device into \p out.
 * \param fleet the fleet
 * \param device fleet index of the device
 * \param out receives the facts
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_device_get_info(clf_device_info *out, const clf_fleet *fleet, size_t device);
/**
 * \brief Nonzero when the device advertises extension \p name.
 * \param fleet the fleet
 * \param device fleet index of the device
 * \param name the extension, e.g. "cl_khr_fp64"
 * \return nonzero when the device has it, 0 otherwise or for bad input
 */
CLF_API int clf_device_has_extension(const clf_fleet *fleet, size_t device, const char *name);
/**
 * \brief The name of a CLF_DEVICE_* type bit ("cpu", "gpu", ...).
 * \param type one CLF_DEVICE_* bit
 * \return a static string; "unknown" for anything else
 */
CLF_API const char *clf_device_type_name(unsigned type);

/**
 * \brief Nonzero when \p device failed in a launch (a kernel, transfer or
 * allocation failed with a device error such as CL_OUT_OF_RESOURCES); launches
 * leave it out until clf_device_readmit(). 0 for a bad fleet or index.
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return nonzero when the device failed
 */
CLF_API int clf_device_is_failed(const clf_fleet *fleet, size_t device);
/**
 * \brief Why \p device failed: the failed call, its OpenCL error and the
 * launch, copied to \p buf (\p size bytes, truncated); "" when it has not.
 * \param fleet the fleet
 * \param device fleet index of the device
 * \param buf receives the description, NUL-terminated
 * \param size bytes of buf
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_device_failure(char *buf, size_t size, const clf_fleet *fleet,
                                      size_t device);
/**
 * \brief Let a failed device take work again (once its cause was dealt with);
 * nothing happens for a device that has not failed. A device that an injected
 * "lost" fault took away comes back too (see doc/14-reliability.md).
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_device_readmit(clf_fleet *fleet, size_t device);

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
 * \param out receives the program
 * \param fleet the fleet
 * \param source the OpenCL C source
 * \return CLF_SUCCESS (also when some devices failed to build: clf_last_error() names them),
 *        CLF_ERROR_BUILD when none built, or another negative clf_status
 */
CLF_API clf_status clf_program_build_source(clf_program **out, clf_fleet *fleet,
                                            const char *source, const char *options);
/**
 * \brief As clf_program_build_source(), reading the source from \p path.
 * \param out receives the program
 * \param fleet the fleet
 * \param path the source file
 * \param options compiler options, or NULL
 * \return as clf_program_build_source(); CLF_ERROR_IO when the file cannot be read
 */
CLF_API clf_status clf_program_build_file(clf_program **out, clf_fleet *fleet, const char *path,
                                          const char *options);
/**
 * \brief Build a kernel file shipped with clfleet (cl/NAME.cl), e.g. "vector".
 *
 * The sources are embedded in the library; $CLFLEET_KERNEL_DIR, when set,
 * is searched first (for development).
 * \param out receives the program
 * \param fleet the fleet
 * \param name the kernel file, without ".cl"
 * \param options compiler options, or NULL
 * \return as clf_program_build_source(); CLF_ERROR_NOT_FOUND for an unknown name
 */
CLF_API clf_status clf_program_build_shipped(clf_program **out, clf_fleet *fleet,
                                             const char *name, const char *options);
/**
 * \brief Nonzero when the binary for \p device came from the cache.
 * \param prog the program
 * \param device fleet index of the device
 * \return nonzero when it came from the cache
 */
CLF_API int clf_program_from_cache(const clf_program *prog, size_t device);
/**
 * \brief Nonzero when the program was built for \p device.
 *
 * A program that fails to build on some devices but builds on others is
 * created for those (the build call succeeds, clf_last_error() names the
 * devices left out); launches with it leave the others out.
 * \param prog the program
 * \param device fleet index of the device
 * \return nonzero when the program was built for the device
 */
CLF_API int clf_program_device_ok(const clf_program *prog, size_t device);
/**
 * \brief Why the build failed on \p device (its compiler log), or NULL where it built.
 * \param prog the program
 * \param device fleet index of the device
 * \return the log (owned by the program), or NULL
 */
CLF_API const char *clf_program_build_log(const clf_program *prog, size_t device);
/**
 * \brief Release the program and its reference to the fleet, which goes with
 * its last child (see clf_fleet_destroy()); accepts NULL. Destroy a task
 * queue with it first, and wait for asynchronous launches with it.
 * \param prog the program, or NULL
 */
CLF_API void clf_program_destroy(clf_program *prog);
/**
 * \brief The names of the shipped kernel files, NULL-terminated.
 * \return a static array of names, NULL-terminated
 */
CLF_API const char *const *clf_shipped_kernels(void);
/**
 * \brief The source of a shipped kernel file, or NULL.
 * \param name the kernel file, without ".cl"
 * \return the embedded source, or NULL for an unknown name
 */
CLF_API const char *clf_shipped_kernel_source(const char *name);

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/** \brief Completion of an asynchronous operation. */
typedef struct clf_event clf_event;

/**
 * \brief Block until the event completes; an error if the command failed.
 * \param ev the event
 * \return CLF_SUCCESS, or the status of the failed command
 */
CLF_API clf_status clf_event_wait(clf_event *ev);
/**
 * \brief Release the event; accepts NULL. Does not wait. An event holds no
 * reference to its fleet: it may be waited for and released after the fleet
 * has gone, whose teardown completes its work (see clf_fleet_destroy()).
 * \param ev the event, or NULL
 */
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

/**
 * \brief Allocate \p size bytes on device \p device.
 * \param out receives the buffer
 * \param fleet the fleet
 * \param device fleet index of the device
 * \param size bytes
 * \param flags CLF_MEM_* flags, e.g. CLF_MEM_READ_WRITE (0: read-write)
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_buffer_create(clf_buffer **out, clf_fleet *fleet, size_t device,
                                     size_t size, unsigned flags);
/**
 * \brief Release the buffer (after its pending commands) and its reference to
 * the fleet, which goes with its last child (see clf_fleet_destroy()); accepts
 * NULL.
 * \param buf the buffer, or NULL
 */
CLF_API void clf_buffer_destroy(clf_buffer *buf);
/**
 * \brief The buffer's size in bytes (0 for NULL).
 * \param buf the buffer
 * \return the size in bytes
 */
CLF_API size_t clf_buffer_size(const clf_buffer *buf);
/**
 * \brief The index of the buffer's device.
 * \param buf the buffer
 * \return its fleet index
 */
CLF_API size_t clf_buffer_device(const clf_buffer *buf);

/**
 * \brief Copy \p size bytes from the host to the buffer at \p offset; blocking.
 * \param buf the buffer
 * \param offset byte offset in the buffer
 * \param size bytes
 * \param src host memory of size bytes
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_buffer_write(clf_buffer *buf, size_t offset, size_t size,
                                    const void *src);
/**
 * \brief Copy \p size bytes at \p offset from the buffer to the host; blocking.
 * \param buf the buffer
 * \param offset byte offset in the buffer
 * \param size bytes
 * \param dst host memory of size bytes
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_buffer_read(clf_buffer *buf, size_t offset, size_t size, void *dst);
/**
 * \brief Start a write; \p src must stay valid until \p out_event completes.
 * \param out_event receives the completion event (release it), or NULL
 * \param buf the buffer
 * \param offset byte offset in the buffer
 * \param size bytes
 * \param src host memory of size bytes, valid until the write completes
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_buffer_write_async(clf_buffer *buf, size_t offset, size_t size,
                                          const void *src, clf_event **out_event);
/**
 * \brief Start a read; \p dst is valid once \p out_event completes.
 * \param buf the buffer
 * \param offset byte offset in the buffer
 * \param size bytes
 * \param dst host memory of size bytes
 * \param out_event receives the completion event (release it with clf_event_release()), or NULL
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_buffer_read_async(clf_buffer *buf, size_t offset, size_t size,
                                         void *dst, clf_event **out_event);
/**
 * \brief Host access to \p size bytes of the buffer at \p offset; blocking. On a device
 * that uses the host's memory (a CPU device, host-unified memory) the pointer is usually the
 * buffer's own memory, and nothing is copied: the way to hand device data to a host library
 * (MPI, a file) without a staging copy. Like clf_buffer_read(), it does not wait for
 * kernels still queued on the buffer: wait for their events first. Until
 * clf_buffer_unmap(), no command may use the region; unmap before clf_buffer_destroy().
 * \param out receives the host pointer
 * \param buf the buffer
 * \param offset byte offset in the buffer
 * \param size bytes
 * \param flags CLF_MAP_READ and/or CLF_MAP_WRITE; CLF_MAP_WRITE | CLF_MAP_DISCARD: the host
 *        overwrites the whole region, whose contents are not fetched
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_ZERO_SIZE,
 *         CLF_ERROR_SIZE_OVERFLOW, CLF_ERROR_OUT_OF_RANGE (the region leaves the buffer),
 *         CLF_ERROR_INVALID_ARGUMENT (flags), or the driver's error
 */
CLF_API clf_status clf_buffer_map(void **out, clf_buffer *buf, size_t offset, size_t size,
                                  unsigned flags);
/**
 * \brief End a clf_buffer_map(): what the host wrote is the buffer's; blocking.
 * \param buf the buffer
 * \param ptr the pointer clf_buffer_map() gave for this buffer
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (not a mapping
 *         of this buffer), or the driver's error
 */
CLF_API clf_status clf_buffer_unmap(clf_buffer *buf, void *ptr);
/**
 * \brief Fill a region with a repeated pattern (1, 2, 4, ... 128 bytes);
 * \p offset and \p size must be multiples of the pattern size. Blocking.
 * \param buf the buffer
 * \param pattern the pattern
 * \param pattern_size its bytes: 1, 2, 4, ... 128
 * \param offset byte offset in the buffer, a multiple of pattern_size
 * \param size bytes to fill, a multiple of pattern_size
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_buffer_fill(clf_buffer *buf, const void *pattern, size_t pattern_size,
                                   size_t offset, size_t size);


/* ------------------------------------------------------------------ */
/* Device-to-device transfers                                          */
/* ------------------------------------------------------------------ */

/** \brief How bytes move from one device to another (first that applies wins). */
typedef enum clf_path {
    CLF_PATH_SAME_DEVICE = 0, /**< a copy on the device */
    CLF_PATH_UNIFIED = 1,     /**< host-unified memory in one context: copy in the context */
    CLF_PATH_AMD_P2P = 2,     /**< clEnqueueCopyBufferP2PAMD */
    CLF_PATH_CUDA_P2P = 3,    /**< CUDA peer copy through memory shared with OpenCL */
    CLF_PATH_STAGED = 4       /**< pipelined through pinned host buffers */
} clf_path;

/**
 * \brief "same-device", "unified", "amd-p2p", "cuda-p2p", "staged"; NULL if unknown.
 * \param path a transfer path
 * \return a static string, or NULL
 */
CLF_API const char *clf_path_name(clf_path path);
/**
 * \brief The path a copy from device \p src to device \p dst takes.
 * \param direct set to 1 when the pair can copy without the host at all
 *        (whatever paths are disabled), or NULL
 * \param fleet the fleet
 * \param src fleet index of the source device
 * \param dst fleet index of the destination device
 * \param path receives the path
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_transfer_path(clf_path *path, int *direct, const clf_fleet *fleet,
                                     size_t src, size_t dst);
/**
 * \brief Why the CUDA peer-to-peer path is on or off (the driver found, the
 * self-test's result, or the reason it was not tried). Never NULL.
 * \param fleet the fleet
 * \return a string owned by the fleet, never NULL
 */
CLF_API const char *clf_transfer_cuda_status(const clf_fleet *fleet);

/**
 * \brief Copy \p size bytes between two buffers on any devices, contexts or
 * platforms, by the fastest path; returns at once.
 *
 * The copy starts after every event of \p wait (from any device or
 * context), and is ordered after nothing else: pass the events of earlier
 * work on either buffer (clf_buffer_write_async() of the source, a kernel
 * that writes it), or wait for them before clf_copy(). Regions must lie in
 * their buffers and must not overlap when both are the same buffer.
 * \param out_event completes with the copy (release it), or NULL
 * \param dst the destination buffer
 * \param dst_offset byte offset in dst
 * \param src the source buffer
 * \param src_offset byte offset in src
 * \param size bytes to copy
 * \param wait events the copy waits for, or NULL
 * \param num_wait entries of wait
 * \return CLF_SUCCESS once the copy is queued; CLF_ERROR_OUT_OF_RANGE, CLF_ERROR_SIZE_OVERFLOW,
 *        CLF_ERROR_INVALID_ARGUMENT (overlapping regions of one buffer), or another negative
 *        clf_status
 */
CLF_API clf_status clf_copy_async(clf_buffer *dst, size_t dst_offset, clf_buffer *src,
                                  size_t src_offset, size_t size, clf_event *const *wait,
                                  size_t num_wait, clf_event **out_event);
/**
 * \brief As clf_copy_async(), and wait for it.
 * \param dst the destination buffer
 * \param dst_offset byte offset in dst
 * \param src the source buffer
 * \param src_offset byte offset in src
 * \param size bytes to copy
 * \return as clf_copy_async(), or the copy's failure
 */
CLF_API clf_status clf_copy(clf_buffer *dst, size_t dst_offset, clf_buffer *src,
                            size_t src_offset, size_t size);

/* ------------------------------------------------------------------ */
/* Kernels on one device                                               */
/* ------------------------------------------------------------------ */

/*
 * One kernel run on one device of the fleet, on clf_buffers of that device: the
 * building block of data that stays on the devices (one buffer per device, a
 * kernel on each, clf_copy_async() between them). It goes through the same
 * command path as task queues and pipelines: it is counted in the metrics and
 * the trace, follows $CLFLEET_FAULT_INJECT's "enqueue" rules, and on a device
 * that runs commands inside clEnqueue* (PoCL's basic) its wait list is waited
 * for on the host.
 */

struct clf_arg; /* defined with clf_launch() below */

/** \brief What clf_kernel_enqueue() runs; fill with CLF_KERNEL_DESC_INIT. */
typedef struct clf_kernel_desc {
    unsigned version; /**< CLF_KERNEL_DESC_VERSION */
    const char *kernel; /**< kernel function name */
    unsigned dims;      /**< 1, 2 or 3 */
    /** Global work offset of each dimension, as in clEnqueueNDRangeKernel: get_global_id()
     *  counts from it, and CLF_CHUNK_OFFSET(d) returns it. The prelude (cl/clfleet.h)
     *  counts get_group_id() and get_global_offset() from the range's start, as
     *  clf_launch()'s chunks need, where OpenCL counts them from this offset: a nonzero
     *  offset with a program that names them is refused (CLF_ERROR_UNSUPPORTED), so every
     *  built-in returns what OpenCL returns. */
    size_t offset[3];
    size_t global[3]; /**< the global size of each dimension (none 0) */
    /** Work-group size, or all 0 for the driver's choice; else each must divide the global
     *  size of its dimension. */
    size_t local[3];
} clf_kernel_desc;

/**
 * \brief The version of clf_kernel_desc this header describes; clf_kernel_enqueue() accepts
 * every version from 1 up to it.
 */
#define CLF_KERNEL_DESC_VERSION 1
/** \brief Fills a clf_kernel_desc with the defaults (1 dimension, no offset, driver's local
 *  size). */
#define CLF_KERNEL_DESC_INIT {CLF_KERNEL_DESC_VERSION, NULL, 1, {0, 0, 0}, {0, 1, 1}, {0, 0, 0}}

/** \brief Internal: a clf_buffer argument of clf_kernel_enqueue() with access \p mode. */
#define CLF__BUF(buf, mode) CLF__ARG(CLF_ARG_KIND_BUFFER, (mode), (buf), 0, 0, 0, 0)
/**
 * \brief A buffer the kernel only reads. The parameter must be `__constant` or a pointer to
 * `const` (clf_kernel_enqueue() checks it where the driver reports argument information):
 * the access mode is a promise that later dependency tracking relies on.
 */
#define CLF_BUF_IN(buf) CLF__BUF(buf, CLF_ARG_READ)
/** \brief A buffer the kernel only writes (the parameter must not be const). */
#define CLF_BUF_OUT(buf) CLF__BUF(buf, CLF_ARG_WRITE)
/** \brief A buffer the kernel reads and writes (the parameter must not be const). */
#define CLF_BUF_INOUT(buf) CLF__BUF(buf, CLF_ARG_READ | CLF_ARG_WRITE)

/**
 * \brief Run one kernel on one device, on buffers of that device; returns at once.
 *
 * \p args (clf_arg, defined with clf_launch()) are in kernel parameter order:
 * CLF_BUF_IN(), CLF_BUF_OUT(), CLF_BUF_INOUT(), CLF_SCALAR() and CLF_LOCAL() (partitioned
 * host arrays, broadcasts and reductions belong to clf_launch()). The hidden range
 * parameter of programs that name get_global_size() or get_num_groups() is clfleet's: it
 * is set to desc.global and not counted in \p nargs.
 * Scalars are copied: they may go once the call returns.
 *
 * The kernel starts after every event of \p wait (from any device, context or platform,
 * e.g. a clf_copy_async() into its input, a kernel on another device) and after the work
 * queued before it on the device's compute queue (earlier kernels of this call,
 * clf_device_wait_events()); buffer writes and copies are ordered only by events: pass
 * theirs (clf_buffer_write() and clf_copy() have completed when they return). Nothing runs when
 * the call fails: every input is checked before anything is queued.
 * \param fleet the fleet
 * \param prog a program of the fleet, built for \p device
 * \param device fleet index of the device
 * \param desc the kernel and its NDRange
 * \param args the kernel arguments, in kernel parameter order (NULL when nargs is 0)
 * \param nargs entries of args
 * \param wait events the kernel waits for, or NULL
 * \param num_wait entries of wait
 * \param out_event completes with the kernel (release it), or NULL
 * \return CLF_SUCCESS once queued; CLF_ERROR_NULL_POINTER, CLF_ERROR_OUT_OF_RANGE (device),
 *        CLF_ERROR_INVALID_ARGUMENT (a version, dims, local size or argument OpenCL would
 *        refuse; a buffer of another fleet or device; a read-only buffer on a parameter that
 *        is not const, or a written one on one that is, or access its CLF_MEM_* flags
 *        forbid; an argument count that differs from the kernel's), CLF_ERROR_ZERO_SIZE,
 *        CLF_ERROR_SIZE_OVERFLOW (offset + global),
 *        CLF_ERROR_UNSUPPORTED (an argument kind of clf_launch()), CLF_ERROR_NOT_FOUND (no
 *        such kernel), CLF_ERROR_BUILD (the program did not build for the device),
 *        CLF_ERROR_DEVICE_FAILED (a launch found the device failed: until
 *        clf_device_readmit()), CLF_ERROR_OPENCL (the enqueue failed; clf_last_error() names
 *        the device); the kernel's own failure comes from clf_event_wait()
 */
CLF_API clf_status clf_kernel_enqueue(clf_fleet *fleet, clf_program *prog, size_t device,
                                      const clf_kernel_desc *desc, const struct clf_arg *args,
                                      size_t nargs, clf_event *const *wait, size_t num_wait,
                                      clf_event **out_event);
/**
 * \brief As clf_kernel_enqueue() with no wait list, and wait for the kernel.
 * \param fleet the fleet
 * \param prog a program of the fleet, built for \p device
 * \param device fleet index of the device
 * \param desc the kernel and its NDRange
 * \param args the kernel arguments, in kernel parameter order
 * \param nargs entries of args
 * \return as clf_kernel_enqueue(), or the kernel's failure
 */
CLF_API clf_status clf_kernel_run(clf_fleet *fleet, clf_program *prog, size_t device,
                                  const clf_kernel_desc *desc, const struct clf_arg *args,
                                  size_t nargs);

/* ------------------------------------------------------------------ */
/* One launch across the fleet                                         */
/* ------------------------------------------------------------------ */

/** \brief How a launch's range is split over the devices. */
typedef enum clf_strategy {
    CLF_STRATEGY_DEFAULT = 0,      /**< $CLFLEET_STRATEGY, else CLF_STRATEGY_AUTO */
    CLF_STRATEGY_STATIC = 1,       /**< one contiguous share per device, by weights */
    CLF_STRATEGY_DYNAMIC = 2,      /**< equal chunks pulled by whichever device is free */
    CLF_STRATEGY_GUIDED = 3,       /**< HGuided: shrinking chunks by device throughput */
    CLF_STRATEGY_MEMORY_AWARE = 4, /**< budget-sized chunks pulled on demand; streams */
    CLF_STRATEGY_AUTO = 5,         /**< one of the above, named in the report */
    /* The names of clfleet 0.1's first drafts, kept for its callers. */
    CLF_STATIC = CLF_STRATEGY_STATIC,             /**< old name of CLF_STRATEGY_STATIC */
    CLF_DYNAMIC = CLF_STRATEGY_DYNAMIC,           /**< old name of CLF_STRATEGY_DYNAMIC */
    CLF_GUIDED = CLF_STRATEGY_GUIDED,             /**< old name of CLF_STRATEGY_GUIDED */
    CLF_MEMORY_AWARE = CLF_STRATEGY_MEMORY_AWARE, /**< old name of CLF_STRATEGY_MEMORY_AWARE */
    CLF_AUTO = CLF_STRATEGY_AUTO                  /**< old name of CLF_STRATEGY_AUTO */
} clf_strategy;

/**
 * \brief "static", "dynamic", "guided", "memory-aware", "auto", "default"; NULL if unknown.
 * \param s a strategy
 * \return a static string, or NULL
 */
CLF_API const char *clf_strategy_name(clf_strategy s);
/**
 * \brief Parse a strategy name (as clf_strategy_name() writes it; case-insensitive).
 * \param name the name
 * \param out receives the strategy
 * \return CLF_SUCCESS, CLF_ERROR_PARSE for an unknown name
 */
CLF_API clf_status clf_strategy_parse(clf_strategy *out, const char *name);

/** \brief Where CLF_STRATEGY_STATIC and CLF_STRATEGY_GUIDED take device weights from. */
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
    CLF_ARG_KIND_REDUCE,    /**< per-device partial results combined on the host */
    /** One element per work-group (CLF_OUT_PER_GROUP): clf_arg.unit bytes for the group of
     *  linear id g0 + n0 * (g1 + n1 * g2), n_k the number of groups along dimension k. */
    CLF_ARG_KIND_OUT_PER_GROUP,
    /** A clf_buffer on the kernel's device (clf_kernel_enqueue() only; clf_arg.host holds the
     *  buffer, clf_arg.flags its access: CLF_ARG_READ, CLF_ARG_WRITE or both). Use
     *  CLF_BUF_IN(), CLF_BUF_OUT(), CLF_BUF_INOUT(). */
    CLF_ARG_KIND_BUFFER = 16,
    /** A clf_array (clf_array_launch() only; clf_arg.host holds the array, clf_arg.flags
     *  its access). Use CLF_ARRAY_IN(), CLF_ARRAY_OUT(), CLF_ARRAY_INOUT(). */
    CLF_ARG_KIND_ARRAY = 17
};

/** \brief Argument flags. */
enum {
    /**
     * A partitioned argument's device buffer holds only the chunk plus its
     * halo; unit u of the range is at index u - CLF_CHUNK_OFFSET(d) +
     * halo_before of the buffer, CLF_CHUNK_OFFSET(d) being the chunk's start
     * (get_global_offset() is 0, as on one device; cl/clfleet.h has helpers:
     * CLF_CHUNK_INDEX(d), CLF_CHUNK_UNIT(d, u, halo_before)). Without it the
     * buffer spans the whole array and kernels index it with get_global_id().
     */
    CLF_ARG_CHUNK_INDEXED = 1u << 0,
    /**
     * An output (CLF_ARG_KIND_OUT or CLF_ARG_KIND_OUT_PER_GROUP) whose elements
     * the kernel does not write keep their host values: each chunk's region is
     * uploaded before its kernel runs, so the argument moves as much data as an
     * in-out array. Without it those elements are undefined after the launch.
     */
    CLF_ARG_PRESERVE = 1u << 1,
    /**
     * CLF_ARG_KIND_IN, _OUT or _INOUT of a task (clf_taskq_submit()): the whole host
     * array, copied to the device before the kernel and back after it, not a partitioned
     * one. Use CLF_WHOLE_IN(), CLF_WHOLE_OUT(), CLF_WHOLE_INOUT(). clf_launch() refuses it:
     * a launch partitions its arrays (CLF_BROADCAST is its whole, read-only array).
     */
    CLF_ARG_WHOLE = 1u << 2,
    /** CLF_ARG_KIND_BUFFER: the kernel reads the buffer. */
    CLF_ARG_READ = 1u << 8,
    /** CLF_ARG_KIND_BUFFER: the kernel writes the buffer. */
    CLF_ARG_WRITE = 1u << 9
};

/** \brief Reduction operations. */
typedef enum clf_reduce_op {
    CLF_REDUCE_SUM = 1,              /**< a + b */
    CLF_REDUCE_PROD = 2,             /**< a * b */
    CLF_REDUCE_MIN = 3,              /**< the smaller */
    CLF_REDUCE_MAX = 4,              /**< the larger */
    CLF_SUM = CLF_REDUCE_SUM,        /**< old name of CLF_REDUCE_SUM */
    CLF_PROD = CLF_REDUCE_PROD,      /**< old name of CLF_REDUCE_PROD */
    CLF_MIN = CLF_REDUCE_MIN,        /**< old name of CLF_REDUCE_MIN */
    CLF_MAX = CLF_REDUCE_MAX         /**< old name of CLF_REDUCE_MAX */
} clf_reduce_op;
/** \brief Element types of reductions (and collectives). */
typedef enum clf_type {
    CLF_TYPE_INT32 = 1,              /**< int32_t, OpenCL int */
    CLF_TYPE_UINT32 = 2,             /**< uint32_t, OpenCL uint */
    CLF_TYPE_INT64 = 3,              /**< int64_t, OpenCL long */
    CLF_TYPE_FLOAT = 4,              /**< float */
    CLF_TYPE_DOUBLE = 5,             /**< double (devices with cl_khr_fp64) */
    CLF_INT32 = CLF_TYPE_INT32,      /**< old name of CLF_TYPE_INT32 */
    CLF_UINT32 = CLF_TYPE_UINT32,    /**< old name of CLF_TYPE_UINT32 */
    CLF_INT64 = CLF_TYPE_INT64,      /**< old name of CLF_TYPE_INT64 */
    CLF_FLOAT = CLF_TYPE_FLOAT,      /**< old name of CLF_TYPE_FLOAT */
    CLF_DOUBLE = CLF_TYPE_DOUBLE     /**< old name of CLF_TYPE_DOUBLE */
} clf_type;
/**
 * \brief Bytes of one element of a clf_type (0 if unknown).
 * \param t an element type
 * \return bytes, or 0
 */
CLF_API size_t clf_type_size(clf_type t);

/**
 * \brief One kernel argument of a launch, in kernel parameter order; use the
 * CLF_IN, CLF_OUT, ... macros.
 *
 * A partitioned array relates to the range along its split dimension
 * (clf_launch_desc.split_dim, by default the last of desc.dims): \p unit
 * bytes per index of that dimension (e.g. a row of an image), \p size bytes in
 * all (at least the range times \p unit), and an optional halo of units read
 * before and after each chunk (stencils). With a \p pitch, the array is rows of
 * \p pitch bytes and split index u is the bytes [u * unit, (u + 1) * unit) of
 * every row (e.g. a row-major H x W float image split by columns: unit 4, pitch
 * 4 * W, size H * pitch); chunks then move rectangles.
 *
 * Elements of an output's chunk region that the kernel does not write are
 * undefined after the launch (they may be zero, stale device memory, or
 * another device's data), unless the argument has CLF_ARG_PRESERVE.
 *
 * A reduction's device buffer holds \p size elements of
 * \p type, set to the identity of \p op on each device; the kernel combines
 * into it (atomics, or one element per work-group with +=), and the launch
 * combines the devices' buffers element-wise into \p host.
 */
typedef struct clf_arg {
    unsigned kind;  /**< CLF_ARG_KIND_* */
    unsigned flags; /**< CLF_ARG_CHUNK_INDEXED, CLF_ARG_PRESERVE */
    void *host;     /**< array, scalar value or reduction result */
    size_t size;    /**< bytes (array, scalar, local memory); elements for a reduction */
    size_t unit;    /**< partitioned: bytes per split unit; per group: bytes per group */
    size_t halo_before; /**< partitioned inputs: units before each chunk */
    size_t halo_after;  /**< partitioned inputs: units after each chunk */
    unsigned op;        /**< reduction: a clf_reduce_op */
    /** Reduction: a clf_type. Scalar (CLF_SCALAR()): the C type class of the value, 1 for an
     *  integer, 2 for a floating-point type, 0 when unknown (a struct, a vector type, C
     *  before C11, C++); a call refuses an integer value for a half, float or double
     *  parameter and a floating-point one for an integer parameter. With 0 only the size is
     *  checked against the parameter's type. */
    unsigned type;
    /** Partitioned: 0 when the split units are contiguous, else the bytes of one row of a
     *  strided array (at least the range times \p unit; \p size is a multiple of it). */
    size_t pitch;
    /** Reserved: later versions add fields here (zero), so that arrays of clf_arg keep
     *  their layout. */
    size_t reserved[2];
} clf_arg;

/** \brief Internal: a clf_arg of every field but the reduction's. */
#define CLF__ARG(kind, flags, host, size, unit, hb, ha) \
    {(kind), (flags), (void *)(host), (size), (unit), (hb), (ha), 0, 0, 0, {0, 0}}
/** \brief Internal: a strided partitioned clf_arg (rows of \p pitch bytes). */
#define CLF__ARG_STRIDED(kind, host, size, unit, pitch, hb, ha) \
    {(kind), 0, (void *)(host), (size), (unit), (hb), (ha), 0, 0, (pitch), {0, 0}}
/** \brief Partitioned input: \p bytes in all, \p unit bytes per split index. */
#define CLF_IN(host, bytes, unit) CLF__ARG(CLF_ARG_KIND_IN, 0, host, bytes, unit, 0, 0)
/** \brief Partitioned input with a halo of \p before / \p after units. */
#define CLF_IN_HALO(host, bytes, unit, before, after) \
    CLF__ARG(CLF_ARG_KIND_IN, 0, host, bytes, unit, before, after)
/**
 * \brief Partitioned output. Elements of a chunk's region that the kernel does
 * not write are undefined after the launch; see CLF_OUT_PRESERVE.
 */
#define CLF_OUT(host, bytes, unit) CLF__ARG(CLF_ARG_KIND_OUT, 0, host, bytes, unit, 0, 0)
/** \brief Partitioned input and output. */
#define CLF_INOUT(host, bytes, unit) CLF__ARG(CLF_ARG_KIND_INOUT, 0, host, bytes, unit, 0, 0)
/**
 * \brief Partitioned output whose unwritten elements keep their host values
 * (CLF_ARG_PRESERVE: the chunk's region is uploaded first, as for CLF_INOUT).
 */
#define CLF_OUT_PRESERVE(host, bytes, unit) \
    CLF__ARG(CLF_ARG_KIND_OUT, CLF_ARG_PRESERVE, host, bytes, unit, 0, 0)
/** \brief Strided partitioned input: rows of \p pitch bytes, \p unit bytes per split index. */
#define CLF_IN_STRIDED(host, bytes, unit, pitch) \
    CLF__ARG_STRIDED(CLF_ARG_KIND_IN, host, bytes, unit, pitch, 0, 0)
/** \brief Strided partitioned input with a halo of \p before / \p after split indices. */
#define CLF_IN_STRIDED_HALO(host, bytes, unit, pitch, before, after) \
    CLF__ARG_STRIDED(CLF_ARG_KIND_IN, host, bytes, unit, pitch, before, after)
/** \brief Strided partitioned output (see clf_arg.pitch). */
#define CLF_OUT_STRIDED(host, bytes, unit, pitch) \
    CLF__ARG_STRIDED(CLF_ARG_KIND_OUT, host, bytes, unit, pitch, 0, 0)
/** \brief Strided partitioned input and output (see clf_arg.pitch). */
#define CLF_INOUT_STRIDED(host, bytes, unit, pitch) \
    CLF__ARG_STRIDED(CLF_ARG_KIND_INOUT, host, bytes, unit, pitch, 0, 0)
/**
 * \brief One element of \p bytes_per_group bytes per work-group, at the group's
 * linear id g0 + n0 * (g1 + n1 * g2) (n_k: groups along dimension k), so
 * `out[get_group_id(0)] = x` runs unchanged; \p bytes in all, at least the
 * number of groups times \p bytes_per_group. Needs a local size in the
 * description, dividing the global size in every dimension.
 */
#define CLF_OUT_PER_GROUP(host, bytes, bytes_per_group) \
    CLF__ARG(CLF_ARG_KIND_OUT_PER_GROUP, 0, host, bytes, bytes_per_group, 0, 0)
/**
 * \brief The whole array on every device, read only. The copies are kept between
 * launches while the host array is unchanged when the kernel parameter is
 * `__constant` or a pointer to `const`, or when clfleet's scan of the program
 * source sees the kernel only read it; otherwise they are uploaded for each
 * launch. A kernel that stores through it is the caller's bug (the stores are
 * lost): the launch runs and clfleet logs a warning, once per program.
 */
#define CLF_BROADCAST(host, bytes) CLF__ARG(CLF_ARG_KIND_BROADCAST, 0, host, bytes, 0, 0, 0)
/** \brief A task's whole input array of \p bytes (clf_taskq_submit()). */
#define CLF_WHOLE_IN(host, bytes) CLF__ARG(CLF_ARG_KIND_IN, CLF_ARG_WHOLE, host, bytes, 0, 0, 0)
/** \brief A task's whole output array of \p bytes (clf_taskq_submit()). */
#define CLF_WHOLE_OUT(host, bytes) CLF__ARG(CLF_ARG_KIND_OUT, CLF_ARG_WHOLE, host, bytes, 0, 0, 0)
/** \brief A task's whole input and output array of \p bytes (clf_taskq_submit()). */
#define CLF_WHOLE_INOUT(host, bytes) \
    CLF__ARG(CLF_ARG_KIND_INOUT, CLF_ARG_WHOLE, host, bytes, 0, 0, 0)
/** \brief Internal: the C type class of an expression (clf_arg.type of a scalar). */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
#define CLF__SCALAR_CLASS(x)                                                               \
    _Generic((x), _Bool: 1, char: 1, signed char: 1, unsigned char: 1, short: 1,           \
             unsigned short: 1, int: 1, unsigned: 1, long: 1, unsigned long: 1,              \
             long long: 1, unsigned long long: 1, float: 2, double: 2, long double: 2,       \
             default: 0)
#else
#define CLF__SCALAR_CLASS(x) 0
#endif
/** \brief A scalar: a pointer to the value (the size, and in C11 the type class, are taken
 *  from it: see clf_arg.type). */
#define CLF_SCALAR(ptr)                                                                     \
    {CLF_ARG_KIND_SCALAR, 0, (void *)(ptr), sizeof *(ptr), 0, 0, 0, 0,                      \
     CLF__SCALAR_CLASS(*(ptr)), 0, {0, 0}}
/** \brief Local memory of \p bytes. */
#define CLF_LOCAL(bytes) CLF__ARG(CLF_ARG_KIND_LOCAL, 0, NULL, bytes, 0, 0, 0)
/** \brief Reduction of \p count elements of \p type with \p op into \p host. */
#define CLF_REDUCE(host, count, type, op) \
    {CLF_ARG_KIND_REDUCE, 0, (void *)(host), (count), 0, 0, 0, (op), (type), 0, {0, 0}}

/** \brief What to launch and how; fill with CLF_LAUNCH_DESC_INIT. */
typedef struct clf_launch_desc {
    unsigned version;      /**< CLF_LAUNCH_DESC_VERSION */
    const char *kernel;    /**< kernel function name */
    unsigned dims;         /**< 1, 2 or 3; split along split_dim (default dims-1) */
    size_t global[3];      /**< the range */
    /** Work-group size, or all 0 for clfleet's choice. As in OpenCL, it must divide the
     *  range in every dimension and fit every launch device (CL_DEVICE_MAX_WORK_ITEM_SIZES,
     *  CL_DEVICE_MAX_WORK_GROUP_SIZE, the kernel's CL_KERNEL_WORK_GROUP_SIZE), else the
     *  launch fails with CLF_ERROR_INVALID_ARGUMENT before any work runs. Every chunk is
     *  a multiple of it along the split dimension and runs with it. */
    size_t local[3];
    size_t granularity;    /**< chunks are multiples of this (and of the local size) */
    clf_strategy strategy; /**< how to split; CLF_STRATEGY_DEFAULT: $CLFLEET_STRATEGY */
    const size_t *devices; /**< fleet indices to use, or NULL for every device */
    size_t num_devices;    /**< entries of devices */
    clf_weights weights_mode; /**< CLF_STRATEGY_STATIC's weights: equal, user given or learned */
    const double *weights; /**< CLF_WEIGHTS_USER: one per used device */
    /** Per used device, a memory limit in bytes for this launch (0: none), or NULL. */
    const uint64_t *mem_limits;
    double mem_safety;          /**< usable fraction of reported memory; 0: 0.8 */
    /** CLF_STRATEGY_DYNAMIC: about this many chunks each; 0: 16, and once the cost model
     *  knows every device's fixed cost per chunk, no chunk whose fixed cost exceeds 10 % of
     *  its time. A value given here (or a min_chunk) is kept as asked. */
    unsigned chunks_per_device;
    /** CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE: smallest chunk in units; 0: a device's share
     * of the weights of the range / chunks_per_device (dynamic's chunk on equal devices) */
    size_t min_chunk;
    /** The dimension the range is split along: CLF_SPLIT_DEFAULT (dims-1, the
     *  slowest-varying) or CLF_SPLIT_DIM(d) (version 2). */
    unsigned split_dim;
    /** Version 3: run only the units [range_first, range_first + range_units) of the
     *  range along the split dimension, with the global ids they have in the whole range
     *  (global[split]); range_units 0: the whole range (range_first must then be 0). The
     *  host arrays stay the whole range's: only the sub-range's part of each partitioned
     *  array (and the halo around it, within the whole range) moves, outputs elsewhere
     *  are untouched; reductions cover the sub-range; per-group outputs get its groups.
     *  Both must be multiples of the local size along the split dimension and of the
     *  granularity, where given. One process of many (clfleet/mpi.h) runs its share so. */
    size_t range_first;
    size_t range_units; /**< version 3: units of the sub-range; 0: the whole range */
} clf_launch_desc;

/** \brief clf_launch_desc.split_dim: the last dimension (dims-1). */
#define CLF_SPLIT_DEFAULT 0u
/** \brief clf_launch_desc.split_dim: split along dimension \p d (0, 1 or 2). */
#define CLF_SPLIT_DIM(d) ((unsigned)(d) + 1u)

/**
 * \brief The version of clf_launch_desc this header describes. Launches accept
 * every version from 1 up to it and read only the fields that version has
 * (version 1 ends before split_dim, version 2 before range_first).
 */
#define CLF_LAUNCH_DESC_VERSION 3
/** \brief Fills a clf_launch_desc with the defaults. */
#define CLF_LAUNCH_DESC_INIT                                                            \
    {                                                                                   \
        CLF_LAUNCH_DESC_VERSION, NULL, 1, {0, 1, 1}, {0, 0, 0}, 0, CLF_STRATEGY_DEFAULT, \
            NULL, 0, CLF_WEIGHTS_LEARNED, NULL, NULL, 0.0, 0, 0, CLF_SPLIT_DEFAULT, 0, 0 \
    }

/** \brief Most devices one launch uses (the report's array size). */
#define CLF_MAX_LAUNCH_DEVICES 64

/** \brief What one device did in a launch. */
typedef struct clf_device_report {
    size_t device;            /**< fleet index */
    uint64_t units;           /**< split indices done */
    uint64_t items;           /**< work-items done */
    unsigned chunks;          /**< chunks taken */
    unsigned stolen;          /**< of which taken from another device's look-ahead */
    double share;             /**< units / total */
    double busy_s;            /**< kernel time, from profiling events */
    uint64_t bytes_to_device;   /**< bytes moved to the device */
    uint64_t bytes_from_device; /**< bytes moved back from the device */
    double to_device_s;   /**< transfer time to the device, from profiling events */
    double from_device_s; /**< transfer time from the device, from profiling events */
    double finish_s;          /**< host time from the launch's start to its last result */
    uint64_t mem_peak;        /**< most bytes the launch held on the device */
    uint64_t mem_budget;      /**< the budget it was held to */
    int failed;               /**< the device failed and its work went to others */
    /** Why it failed (CLF_SUCCESS if it did not), or why it was left out. */
    clf_status status;
    int cl_error;             /**< the OpenCL error of the failed call or command, or 0 */
    /** Units it held when it failed (running, queued ahead, the rest of its share, or
     *  finished but lost with a reduction's partial result), handed to the other devices. */
    uint64_t requeued_units;
    /** Left out of the launch: failed earlier (clf_device_is_failed()) or the program did
     *  not build for it; it took no work. */
    int excluded;
    char error[160];          /**< the detail of status, or "" */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_device_report;

/** \brief What a launch did. */
typedef struct clf_launch_report {
    clf_strategy requested; /**< as asked (after $CLFLEET_STRATEGY) */
    clf_strategy strategy;  /**< as run (CLF_STRATEGY_AUTO resolved) */
    char reason[256];       /**< why CLF_STRATEGY_AUTO chose it, or how weights were found */
    uint64_t total_units; /**< split units in the range */
    size_t num_devices;   /**< entries of dev */
    /** Per used device (its .device: the fleet index). */
    clf_device_report dev[CLF_MAX_LAUNCH_DEVICES];
    double makespan_s;  /**< latest device finish */
    double efficiency;  /**< earliest finish / latest finish, over devices that took work */
    double imbalance;   /**< latest finish / mean finish - 1 */
    /** Units whose results are in the host arrays (total_units unless the launch failed);
     *  the sum of dev[].units. */
    uint64_t done_units;
    size_t failed_devices;   /**< devices that failed during this launch */
    uint64_t requeued_units; /**< units re-run on other devices after a failure */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_launch_report;

/**
 * \brief Run one kernel over the range on many devices; blocks until done.
 *
 * The range is split along one dimension (clf_launch_desc.split_dim); each chunk is
 * launched with a global work offset, and only its part of each partitioned
 * array (plus halo) moves each way, so a kernel written for one device runs
 * unchanged. Every NDRange built-in returns in every chunk what it returns on
 * one device: the prelude clfleet prepends to every program (cl/clfleet.h)
 * makes get_group_id() count from the range's start and get_global_offset()
 * 0 (the chunk's start is CLF_CHUNK_OFFSET(d)); in a program that names
 * get_global_size() or get_num_groups() (or includes a file), every kernel
 * function gets a hidden last parameter with the range's sizes, which
 * clfleet sets, and so does every helper function that calls them (directly
 * or through other helpers or macros), each call passing it on: they work in
 * helpers as in kernels. Only a function clfleet cannot find in the source (in
 * an included file, or made by a macro) lacks it: a helper there that calls
 * them fails to build, with a hint, and such a kernel is refused with
 * CLF_ERROR_UNSUPPORTED when it would run in more than one chunk. Each device
 * is driven by its own host thread; the next chunk's input moves on the
 * transfer queue while the current one computes.
 *
 * The result: each output element is computed by one device, with the
 * built-in values it has on one device. On identical devices (one model and
 * driver) every element is bit for bit the one-device run's, for every
 * strategy; a float CLF_REDUCE aside, whose sums depend on how the range was
 * cut. On mixed devices each element has its device's float behaviour (fused
 * multiply-add contraction, division and sqrt precision, fast-math), so
 * results may differ from one device, and between runs, in the last bits.
 * For reproducible floats
 * build with -cl-fp32-correctly-rounded-divide-sqrt and no fast-math options,
 * and put `#pragma OPENCL FP_CONTRACT OFF` in the source; or keep the kernel
 * on one device type: desc.devices listing only devices of that
 * clf_device_info.type, or a fleet made with a `type=` selection.
 *
 * A CLF_BROADCAST parameter need not be const: its device copies are kept
 * across launches only when the parameter is const or __constant or a scan
 * of the source sees it only read, else uploaded for each launch; a kernel
 * that stores through one is logged (a warning), not refused.
 *
 * A device that fails (an enqueue, a chunk, a transfer or an allocation
 * fails with a device error) stops; its unfinished chunks run on the others,
 * the result is still complete, the report names it, and later launches leave
 * it out until clf_device_readmit(). Devices the program did not build for are
 * left out too. See doc/14-reliability.md.
 * \param report receives what each device did, or NULL
 * \return CLF_SUCCESS; CLF_ERROR_DEVICE_FAILED when every device failed (or
 *         is left out): each output element is then untouched or correct, as
 *         many as the report's units say; CLF_ERROR_INVALID_ARGUMENT for a local
 *         size OpenCL would refuse (see clf_launch_desc.local);
 *         CLF_ERROR_UNSUPPORTED for a kernel that cannot be given the range's
 *         sizes in chunks (above)
 * \param fleet the fleet
 * \param prog the program
 * \param desc what to launch and how
 * \param args the kernel arguments, in kernel parameter order
 * \param nargs entries of args
 */
CLF_API clf_status clf_launch(clf_fleet *fleet, clf_program *prog, const clf_launch_desc *desc,
                              const clf_arg *args, size_t nargs, clf_launch_report *report);
/**
 * \brief As clf_launch(), returning at once; \p out_event completes with the
 * launch (clf_event_wait() returns its status). Launches run in the order they
 * were queued. The host arrays and \p report must stay valid until then;
 * \p desc and \p args are copied.
 * \param fleet the fleet
 * \param prog the program
 * \param desc what to launch and how
 * \param args the kernel arguments, in kernel parameter order
 * \param nargs entries of args
 * \param report receives what each device did once the launch completes, or NULL
 * \param out_event receives the launch's event
 * \return CLF_SUCCESS once queued, or a negative clf_status (the launch's own result comes from
 *        clf_event_wait())
 */
CLF_API clf_status clf_launch_async(clf_fleet *fleet, clf_program *prog,
                                    const clf_launch_desc *desc, const clf_arg *args,
                                    size_t nargs, clf_launch_report *report,
                                    clf_event **out_event);

/* ------------------------------------------------------------------ */
/* Metrics and tracing                                                 */
/* ------------------------------------------------------------------ */

/*
 * Every fleet counts, per device, the kernels it ran and their time on the
 * device (from OpenCL profiling events, not host clocks), the bytes moved
 * each way and by which path, and the memory allocated through clfleet.
 * Counting costs a few additions per command and no OpenCL call beyond those
 * a launch already makes. With tracing on (clf_fleet_options.trace or
 * $CLFLEET_TRACE), every kernel, copy and wait is also written as a Chrome
 * trace-event file that Perfetto (https://ui.perfetto.dev) opens: one track
 * per device and queue.
 *
 * The functions below return CLF_ERROR_NULL_POINTER for a NULL fleet or
 * output, CLF_ERROR_OUT_OF_RANGE for a device index beyond the fleet, and
 * CLF_ERROR_UNSUPPORTED when the fleet counts nothing (CLFLEET_METRICS=0).
 */

/** \brief Which way bytes moved. */
typedef enum clf_direction {
    CLF_DIRECTION_TO_DEVICE = 0,   /**< host to device: writes, launch inputs, broadcasts */
    CLF_DIRECTION_FROM_DEVICE = 1, /**< device to host: reads, launch outputs, reductions */
    /** from one device to another, counted on the receiving device; a copy within one device
     *  is not peer traffic (clf_device_metrics.same_device_bytes) */
    CLF_DIRECTION_PEER = 2,
    CLF_TO_DEVICE = CLF_DIRECTION_TO_DEVICE,     /**< old name of CLF_DIRECTION_TO_DEVICE */
    CLF_FROM_DEVICE = CLF_DIRECTION_FROM_DEVICE, /**< old name of CLF_DIRECTION_FROM_DEVICE */
    CLF_PEER = CLF_DIRECTION_PEER                /**< old name of CLF_DIRECTION_PEER */
} clf_direction;

/** \brief Number of clf_direction values (the size of the dir[] arrays). */
#define CLF_NUM_DIRECTIONS 3
/** \brief Number of clf_path values (the size of the path[] arrays). */
#define CLF_NUM_PATHS 5

/**
 * \brief "to-device", "from-device", "peer"; NULL if unknown.
 * \param dir a direction
 * \return a static string, or NULL
 */
CLF_API const char *clf_direction_name(clf_direction dir);

/** \brief Bytes moved by a kind of transfer, and how fast. */
typedef struct clf_transfer_stats {
    uint64_t bytes;   /**< bytes moved */
    uint64_t count;   /**< transfer commands (a launch moves each argument of a chunk in one,
                           or in one per slot through pinned staging: CLFLEET_HOST_STAGING) */
    double seconds;   /**< their time on the device, from profiling events (host time for
                           paths without OpenCL events) */
    double bandwidth; /**< achieved: bytes / seconds, in bytes per second (0 without time) */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_transfer_stats;

/**
 * \brief What one device did since the fleet was created or the metrics
 * last reset (clf_metrics_reset()).
 */
typedef struct clf_device_metrics {
    size_t device;      /**< fleet index */
    uint64_t kernels;   /**< kernel commands run (a launch runs one or two per chunk) */
    double busy_s;      /**< their time on the device, from profiling events */
    double wall_s;      /**< host time of the window: since creation or the last reset */
    double utilization; /**< busy_s / wall_s */
    clf_transfer_stats dir[CLF_NUM_DIRECTIONS]; /**< by clf_direction */
    /** Copies this device received from devices, itself included, by clf_path (a copy within
     *  the device is normally path[CLF_PATH_SAME_DEVICE]). */
    clf_transfer_stats path[CLF_NUM_PATHS];
    clf_transfer_stats peer_sent; /**< copies from this device to other devices */
    uint64_t transfers;           /**< sum of dir[].count */
    double transfer_s;            /**< sum of dir[].seconds */
    double bandwidth;             /**< sum of dir[].bytes / transfer_s (bytes per second) */
    /** Bytes allocated on the device through clfleet now: buffers, launch buffers, and the
     *  copies of broadcast arguments a fleet keeps between launches. */
    uint64_t mem_current;
    uint64_t mem_peak;    /**< most bytes allocated at once in the window */
    uint64_t allocations; /**< allocations in the window */
    /** Host time clfleet calls spent blocked waiting for this device (clf_fleet_finish()). */
    double wait_s;
    /** Time this device sat idle at the end of launches, waiting for the slowest device. */
    double idle_s;
    int in_last_launch;   /**< nonzero when the last launch used this device */
    double last_busy_s;   /**< kernel time in the last launch */
    double last_share;    /**< share of the last launch's range */
    double last_finish_s; /**< when it finished its part, from the last launch's start */
    /** Bytes copied from this device to itself (a collective's scratch copies, the first
     *  step of clf_array_reduce()): not in dir[CLF_DIRECTION_PEER], transfers or peer_sent,
     *  which count traffic between devices only. */
    uint64_t same_device_bytes;
    uint64_t same_device_copies; /**< how many such copies */
    /** Free memory on the device now, in bytes, as its driver reports it
     *  (CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, with cl_amd_device_attribute_query), read when the
     *  metrics are; UINT64_MAX when the driver does not report it. clfleet's own share is
     *  mem_current. */
    uint64_t mem_free;
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[1];
} clf_device_metrics;

/** \brief The fleet's totals over the same window. */
typedef struct clf_fleet_metrics {
    size_t num_devices; /**< devices of the fleet */
    double wall_s;      /**< host time since creation or the last reset */
    uint64_t launches;  /**< clf_launch(), clf_launch_async() and clf_array_launch() runs */
    uint64_t kernels;   /**< over every device */
    double busy_s;      /**< kernel time summed over devices */
    double utilization; /**< busy_s / (wall_s x num_devices) */
    clf_transfer_stats dir[CLF_NUM_DIRECTIONS]; /**< by clf_direction */
    /** Copies by clf_path: peer copies, and path[CLF_PATH_SAME_DEVICE] for the copies within a
     *  device (same_device_bytes) */
    clf_transfer_stats path[CLF_NUM_PATHS];
    uint64_t mem_current; /**< over every device */
    uint64_t mem_peak;    /**< most bytes allocated at once over every device, in the window */
    double wait_s; /**< host time blocked waiting for devices */
    double idle_s; /**< device time idle at launch ends, waiting for the slowest device */
    /* The last launch in the window (zero before one). */
    char last_kernel[64];       /**< the last launch's kernel */
    clf_strategy last_strategy; /**< as run */
    size_t last_num_devices;    /**< devices it used */
    double last_makespan_s;     /**< its makespan */
    double last_imbalance;  /**< latest finish / mean finish - 1 (as clf_launch_report) */
    double last_efficiency; /**< earliest finish / latest finish */
    /** Bytes copied within a device, over every device (see
     *  clf_device_metrics.same_device_bytes); not in dir[CLF_DIRECTION_PEER]. */
    uint64_t same_device_bytes;
    uint64_t same_device_copies; /**< how many such copies */
    /** Mean imbalance (as last_imbalance) of the window's clf_launch() and clf_launch_async()
     *  runs on two or more devices; 0 before one. A one-device launch cannot be out of
     *  balance, and clf_array_launch() runs have no report. The struct has no room left: a
     *  later field comes with a versioned struct. */
    double mean_imbalance;
    double max_imbalance; /**< the largest of those launches' imbalance */
} clf_fleet_metrics;

/**
 * \brief One device's counters (see clf_device_metrics).
 * \param fleet the fleet
 * \param device fleet index of the device
 * \param out receives the counters
 * \return CLF_SUCCESS; CLF_ERROR_UNSUPPORTED when the fleet counts nothing (CLFLEET_METRICS=0)
 */
CLF_API clf_status clf_metrics_device(clf_device_metrics *out, const clf_fleet *fleet,
                                      size_t device);
/**
 * \brief The fleet's totals and its last launch (see clf_fleet_metrics).
 * \param fleet the fleet
 * \param out receives the totals
 * \return CLF_SUCCESS; CLF_ERROR_UNSUPPORTED when the fleet counts nothing (CLFLEET_METRICS=0)
 */
CLF_API clf_status clf_metrics_fleet(clf_fleet_metrics *out, const clf_fleet *fleet);
/**
 * \brief Copies from device \p src to device \p dst in the window, every path together.
 * \param fleet the fleet
 * \param src fleet index of the source device
 * \param dst fleet index of the destination device
 * \param out receives the counters
 * \return CLF_SUCCESS; CLF_ERROR_UNSUPPORTED when the fleet counts nothing (CLFLEET_METRICS=0)
 */
CLF_API clf_status clf_metrics_peer(clf_transfer_stats *out, const clf_fleet *fleet, size_t src,
                                    size_t dst);
/**
 * \brief Start a new window: counters to zero, memory peaks to the memory
 * held now, the last launch forgotten. Profile regions and the trace are not
 * affected.
 * \param fleet the fleet
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_metrics_reset(clf_fleet *fleet);
/**
 * \brief Every counter of the fleet and of each device, as one JSON object.
 * \param out receives a NUL-terminated string; free it with clf_free()
 * \param fleet the fleet
 * \return CLF_SUCCESS, CLF_ERROR_OUT_OF_HOST_MEMORY, CLF_ERROR_UNSUPPORTED (CLFLEET_METRICS=0)
 */
CLF_API clf_status clf_metrics_json(char **out, const clf_fleet *fleet);
/**
 * \brief Write clf_metrics_json()'s object (and a newline) to \p fp.
 * \param fleet the fleet
 * \param fp the stream to write to
 * \return as clf_metrics_json(); CLF_ERROR_IO when writing fails
 */
CLF_API clf_status clf_metrics_write_json(const clf_fleet *fleet, FILE *fp);
/**
 * \brief Print a table to \p fp: one row per device (kernels, busy time,
 * utilization, megabytes each way, transfers and bandwidth, memory and its
 * peak, wait and idle time), the totals, and the last launch's balance.
 * \param fleet the fleet
 * \param fp the stream to write to
 * \return as clf_metrics_json(); CLF_ERROR_IO when writing fails
 */
CLF_API clf_status clf_metrics_print(const clf_fleet *fleet, FILE *fp);
/**
 * \brief Free memory clfleet allocated for the caller (clf_metrics_json()); accepts NULL.
 * \param p memory clfleet returned, or NULL
 */
CLF_API void clf_free(void *p);

/* ------------------------------------------------------------------ */
/* The learned device speeds                                           */
/* ------------------------------------------------------------------ */

/**
 * \brief The device speeds learned for each kernel, as one JSON object.
 *
 * Launches and GEMMs learn how many work items per second each device does for
 * each kernel and keep it in the binary cache directory (file perf-v1.tsv), so that
 * a new process starts balanced. The object is
 * `{"file": PATH, "entries": [{"kernel", "device", "samples", "units_per_s",
 * "iqr_units_per_s", "chunks", "rate_units_per_s", "fixed_us"}, ...]}`:
 * the kernel as "name@program-hash", the device as "name|driver|cu=N", the number
 * of launch samples kept, their median (for GEMMs, MFLOP per second) and interquartile
 * range; then the cost model's chunk line, time = fixed_us + units / rate_units_per_s,
 * fitted over the last `chunks` chunks the device ran (null while it cannot be fitted:
 * fewer than two chunk sizes seen). An entry is listed once a launch sample is known.
 * No devices are used.
 * \param out receives a NUL-terminated string; free it with clf_free()
 * \param cache_dir the cache directory, or NULL for the default one
 *        ($CLFLEET_CACHE_DIR, else $XDG_CACHE_HOME/clfleet, else ~/.cache/clfleet)
 * \return CLF_SUCCESS (an empty list when nothing was learned), CLF_ERROR_NULL_POINTER,
 *         CLF_ERROR_IO (the file cannot be read, or no cache directory),
 *         CLF_ERROR_OUT_OF_HOST_MEMORY
 */
CLF_API clf_status clf_perf_model_json(char **out, const char *cache_dir);
/**
 * \brief Forget the device speeds learned in a cache directory (remove its perf-v1.tsv).
 *
 * The next launches start from compute units x clock again. A fleet alive meanwhile
 * keeps what it learned in memory and writes it back when it saves.
 * \param cache_dir the cache directory, or NULL for the default one (as clf_perf_model_json())
 * \return CLF_SUCCESS (also when nothing was learned), CLF_ERROR_IO with the path and the
 *         reason, CLF_ERROR_OUT_OF_HOST_MEMORY
 */
CLF_API clf_status clf_perf_model_reset(const char *cache_dir);

/* ------------------------------------------------------------------ */
/* The binary cache                                                    */
/* ------------------------------------------------------------------ */

/**
 * \brief What a binary cache directory holds (clf_cache_info()).
 *
 * Programs built from source are kept there as device binaries, one file per source,
 * options, device, driver, platform and included files, so that the next process loads
 * them instead of compiling.
 */
typedef struct clf_cache_stats {
    char *dir;                /**< the directory; free it with clf_free() */
    int exists;               /**< nonzero when the directory exists (none: nothing built yet) */
    size_t entries;           /**< program binaries stored */
    uint64_t bytes;           /**< their size, in bytes */
    size_t temporary;         /**< temporary files: entries being written, or left by a
                                   writer that was killed (removed after an hour) */
    uint64_t temporary_bytes; /**< their size, in bytes */
    int perf_model;           /**< nonzero when learned device speeds are kept there too
                                   (clf_perf_model_json()) */
    uint64_t limit;           /**< $CLFLEET_CACHE_MAX in bytes: past it, each store removes
                                   the least recently used binaries; 0: no limit */
} clf_cache_stats;

/**
 * \brief Describe a binary cache directory: its path, how many program binaries it holds
 * and their size. No devices are used.
 * \param out receives the description; free out->dir with clf_free()
 * \param cache_dir the cache directory, or NULL for the default one
 *        ($CLFLEET_CACHE_DIR, else $XDG_CACHE_HOME/clfleet, else ~/.cache/clfleet)
 * \return CLF_SUCCESS (also when the directory does not exist: out->exists is 0),
 *         CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (an empty name),
 *         CLF_ERROR_PARSE ($CLFLEET_CACHE_MAX is not a size),
 *         CLF_ERROR_IO (the directory cannot be read, or no cache directory),
 *         CLF_ERROR_OUT_OF_HOST_MEMORY
 */
CLF_API clf_status clf_cache_info(clf_cache_stats *out, const char *cache_dir);
/**
 * \brief Empty a binary cache directory: remove every program binary in it, and the
 * temporary files older than an hour that killed writers left.
 *
 * Only files named as clfleet names its entries are removed, so a directory given by
 * mistake loses nothing else; the learned device speeds are kept (clf_perf_model_reset()
 * forgets them). Programs built afterwards are compiled from source again. Fleets alive
 * meanwhile are unaffected: their programs are built already.
 * \param removed receives the number of binaries removed (may be NULL)
 * \param cache_dir the cache directory, or NULL for the default one (as clf_cache_info())
 * \return CLF_SUCCESS (also when the directory does not exist), CLF_ERROR_INVALID_ARGUMENT
 *         (an empty name), CLF_ERROR_IO with the path and the reason (the other entries
 *         are still removed), CLF_ERROR_OUT_OF_HOST_MEMORY
 */
CLF_API clf_status clf_cache_clear(size_t *removed, const char *cache_dir);

/**
 * \brief Where the time of a region of work went: clf_profile_begin() starts
 * it, clf_profile_end() fills the results. Sums are over every device, so
 * compute_s may exceed wall_s when devices run at once.
 */
typedef struct clf_profile {
    double wall_s;     /**< host time from begin to end */
    double compute_s;  /**< kernel time on the devices (profiling events) */
    double transfer_s; /**< transfer time on the devices (profiling events) */
    double sync_s;     /**< wait_s + idle_s */
    double wait_s;     /**< host time blocked waiting for devices (clf_fleet_finish()) */
    double idle_s;     /**< device time idle at launch ends, waiting for the slowest device */
    uint64_t launches;  /**< launches in the region */
    uint64_t kernels;   /**< kernel commands */
    uint64_t transfers; /**< transfer commands */
    uint64_t bytes[CLF_NUM_DIRECTIONS]; /**< by clf_direction */
    /* Private: the fleet and its counters at clf_profile_begin(). */
    const clf_fleet *fleet_; /**< private */
    double start_[12];       /**< private */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_profile;

/**
 * \brief Start a region: note the fleet's counters and the time.
 * \param fleet the fleet
 * \param region receives the starting point
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_profile_begin(clf_fleet *fleet, clf_profile *region);
/**
 * \brief End a region begun on the same fleet and fill its results. A region
 * may be ended more than once (each time from its beginning).
 * \param fleet the fleet
 * \param region a region begun on this fleet; receives the results
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_profile_end(clf_fleet *fleet, clf_profile *region);

/**
 * \brief Write the timeline recorded so far to the trace file now (it is
 * also written when the fleet is destroyed). Does nothing when tracing is off.
 * \return CLF_SUCCESS, CLF_ERROR_IO when the file cannot be written
 * \param fleet the fleet
 */
CLF_API clf_status clf_trace_flush(clf_fleet *fleet);
/**
 * \brief The trace file's path, or NULL when tracing is off (or \p fleet is NULL).
 * \param fleet the fleet
 * \return a string owned by the fleet, or NULL
 */
CLF_API const char *clf_trace_path(const clf_fleet *fleet);

/* ------------------------------------------------------------------ */
/* Collectives                                                         */
/* ------------------------------------------------------------------ */

/*
 * Collectives work on per-device buffers, one buffer per participating
 * device (as NCCL does): bufs[i] is the buffer of "position" i. They are
 * blocking: they start after the work already queued on those devices and
 * return once the result is in place. Every byte that moves between devices
 * goes through clf_copy_async() (so the transfer path selector applies); the
 * arithmetic runs on the devices (kernels of cl/reduce.cl, built once per
 * fleet), or on the host when clf_allreduce() finds its host combine the
 * faster. Counts that do not divide by the number of buffers, counts smaller
 * than it, and a single buffer all work.
 */

/** \brief How clf_scatter() and clf_gather() cut a host array over the buffers. */
typedef enum clf_distribution {
    /** Contiguous blocks: position i gets count / n elements, the first count % n one more. */
    CLF_DIST_BLOCK = 0,
    /** Block-cyclic: blocks of \p block elements dealt to the positions in turn. */
    CLF_DIST_CYCLIC = 1
} clf_distribution;

/**
 * \brief How clf_allreduce() combines the buffers (clf_collective_options.algorithm,
 * $CLFLEET_ALLREDUCE).
 */
typedef enum clf_allreduce_algorithm {
    /** The one measured the faster for calls of this size class on these devices; until
     *  both are measured, the other is tried, or the predicted one runs
     *  (doc/06-collectives.md). */
    CLF_ALLREDUCE_AUTO = 0,
    /** A ring between the devices: reduce-scatter, then all-gather, chunked. */
    CLF_ALLREDUCE_RING = 1,
    /** Every buffer read to the host at once, combined there, the result written to all. */
    CLF_ALLREDUCE_HOST = 2
} clf_allreduce_algorithm;

/** \brief Options of the collectives; fill with CLF_COLLECTIVE_OPTIONS_INIT. */
typedef struct clf_collective_options {
    unsigned version; /**< CLF_COLLECTIVE_OPTIONS_VERSION */
    /**
     * Pipelining unit in bytes of the ring and chain algorithms: transfers of
     * one chunk overlap the reduction of the previous one. 0: a quarter of a
     * segment, between 64 KiB and 4 MiB.
     */
    size_t chunk_bytes;
    /**
     * clf_allreduce()'s algorithm (version 2): CLF_ALLREDUCE_AUTO (the default)
     * lets $CLFLEET_ALLREDUCE decide, else the measured times; any other value
     * forces that algorithm, whatever the environment says.
     */
    clf_allreduce_algorithm algorithm;
} clf_collective_options;

/** \brief The version of clf_collective_options this header describes. */
#define CLF_COLLECTIVE_OPTIONS_VERSION 2
/** \brief Fills a clf_collective_options with the defaults. */
#define CLF_COLLECTIVE_OPTIONS_INIT {CLF_COLLECTIVE_OPTIONS_VERSION, 0, CLF_ALLREDUCE_AUTO}

/**
 * \brief Which elements of a \p count element array position \p part of
 * \p nparts holds under a distribution.
 * \param block CLF_DIST_CYCLIC: elements per block (0: 1)
 * \param first receives the global index of the part's first element (\p count
 *        when it holds none)
 * \param len receives how many elements it holds
 * \param count elements of the whole array
 * \param nparts number of parts
 * \param part the position, below nparts
 * \param dist how the elements are dealt: CLF_DIST_BLOCK or CLF_DIST_CYCLIC
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_distribution_part(size_t *first, size_t *len, size_t count, size_t nparts,
                                         size_t part, clf_distribution dist, size_t block);

/**
 * \brief All-reduce: afterwards every buffer holds the element-wise
 * reduction of the first \p count elements of all of them.
 *
 * Two algorithms (clf_allreduce_algorithm), chosen per call by their measured
 * times (predicted until measured) unless forced (clf_allreduce_choice() tells
 * which). The ring: reduce-scatter
 * then all-gather around the ring of positions, chunked so that transfers
 * overlap the reduction kernels; each device sends and receives 2(n-1)/n of the
 * data; two scratch buffers of count/n elements per device. The host combine:
 * every buffer read into host memory at once, combined on the host in position
 * order, the result written to every buffer at once; count elements of host
 * memory per device. Integer results are the same bits either way; float sums
 * and products may differ in the last bits, as the order of combination differs.
 * \param bufs one buffer per device, at least \p count elements each
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS; CLF_ERROR_NULL_POINTER, CLF_ERROR_ZERO_SIZE,
 *         CLF_ERROR_SIZE_OVERFLOW, CLF_ERROR_OUT_OF_RANGE (a buffer too small),
 *         CLF_ERROR_INVALID_ARGUMENT (two buffers on one device, buffers of
 *         different fleets, unknown type or operation), CLF_ERROR_UNSUPPORTED
 *         (doubles on a device without fp64), CLF_ERROR_OPENCL
 * \param nbufs number of buffers (positions)
 * \param count elements in each buffer that take part
 * \param type element type
 * \param op reduction operation
 */
CLF_API clf_status clf_allreduce(clf_buffer *const *bufs, size_t nbufs, size_t count,
                                 clf_type type, clf_reduce_op op,
                                 const clf_collective_options *opts);
/**
 * \brief The algorithm clf_allreduce() would use for these arguments, without
 * running it: the forced one (options, then $CLFLEET_ALLREDUCE), else the one
 * the next call would run by the times measured so far, or predicted where
 * they are not (doc/06-collectives.md). The arguments are checked as
 * clf_allreduce() checks them.
 * \param out receives CLF_ALLREDUCE_RING or CLF_ALLREDUCE_HOST (a single
 *        buffer: CLF_ALLREDUCE_RING, which then moves nothing)
 * \param bufs one buffer per device, at least \p count elements each
 * \param nbufs number of buffers (positions)
 * \param count elements in each buffer that take part
 * \param type element type
 * \param op reduction operation
 * \param opts options, or NULL for the defaults
 * \param ring_s receives the predicted seconds of the ring (-1 for a single
 *        buffer), or NULL
 * \param host_s receives the predicted seconds of the host combine (likewise),
 *        or NULL
 * \return as clf_allreduce(); CLF_ERROR_PARSE for a bad $CLFLEET_ALLREDUCE
 */
CLF_API clf_status clf_allreduce_choice(clf_allreduce_algorithm *out, clf_buffer *const *bufs,
                                        size_t nbufs, size_t count, clf_type type,
                                        clf_reduce_op op, const clf_collective_options *opts,
                                        double *ring_s, double *host_s);
/**
 * \brief The name of an all-reduce algorithm: "auto", "ring", "host"; "unknown"
 * otherwise.
 * \param a the algorithm
 * \return a static string
 */
CLF_API const char *clf_allreduce_algorithm_name(clf_allreduce_algorithm a);
/**
 * \brief Reduce into the buffer of position \p root; the other buffers are
 * unchanged. A pipelined chain ending at the root (scratch: \p count elements
 * on every device but the first of the chain). Statuses as clf_allreduce().
 * \param bufs one buffer per position, on distinct devices of one fleet
 * \param nbufs number of buffers (positions)
 * \param count elements in each buffer that take part
 * \param type element type
 * \param op reduction operation
 * \param root position of the root buffer
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_reduce(clf_buffer *const *bufs, size_t nbufs, size_t count, clf_type type,
                              clf_reduce_op op, size_t root, const clf_collective_options *opts);
/**
 * \brief Reduce into the host array \p result (\p count elements); no buffer changes.
 * \param result receives count elements of the result
 * \param bufs one buffer per position, on distinct devices of one fleet
 * \param nbufs number of buffers (positions)
 * \param count elements in each buffer that take part
 * \param type element type
 * \param op reduction operation
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_reduce_to_host(void *result, clf_buffer *const *bufs, size_t nbufs,
                                      size_t count, clf_type type, clf_reduce_op op,
                                      const clf_collective_options *opts);
/** \brief Copy the first \p size bytes of the root's buffer into every other buffer,
 * pipelined along a chain from the root.
 * \param bufs one buffer per position, on distinct devices of one fleet
 * \param nbufs number of buffers (positions)
 * \param size bytes to copy
 * \param root position of the root buffer
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_broadcast(clf_buffer *const *bufs, size_t nbufs, size_t size, size_t root,
                                 const clf_collective_options *opts);
/**
 * \brief All-gather in place: position i holds block i of a \p count element
 * array (CLF_DIST_BLOCK) at its place in its buffer; afterwards every buffer
 * holds the whole array. A ring, chunked.
 * \param bufs one buffer per position, on distinct devices of one fleet
 * \param nbufs number of buffers (positions)
 * \param count elements of the whole array
 * \param elem_size bytes per element
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_allgather(clf_buffer *const *bufs, size_t nbufs, size_t count,
                                 size_t elem_size, const clf_collective_options *opts);
/**
 * \brief Cut the host array \p host of \p count elements over the buffers:
 * position i receives its part (clf_distribution_part()), packed from offset 0.
 * \param block CLF_DIST_CYCLIC: elements per block (0: 1)
 * \param bufs one buffer per position, on distinct devices of one fleet
 * \param nbufs number of buffers (positions)
 * \param host the host array of count elements
 * \param count elements of the array
 * \param elem_size bytes per element
 * \param dist how the elements are dealt: CLF_DIST_BLOCK or CLF_DIST_CYCLIC
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_scatter(clf_buffer *const *bufs, size_t nbufs, const void *host,
                               size_t count, size_t elem_size, clf_distribution dist,
                               size_t block);
/**
 * \brief The inverse of clf_scatter(): every part back to its place in \p host.
 * \param host receives the array of count elements
 * \param bufs one buffer per position, on distinct devices of one fleet
 * \param nbufs number of buffers (positions)
 * \param count elements of the array
 * \param elem_size bytes per element
 * \param dist how the elements are dealt: CLF_DIST_BLOCK or CLF_DIST_CYCLIC
 * \param block CLF_DIST_CYCLIC: elements per block (0: 1)
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_gather(void *host, clf_buffer *const *bufs, size_t nbufs, size_t count,
                              size_t elem_size, clf_distribution dist, size_t block);

/* ------------------------------------------------------------------ */
/* Synchronisation across devices                                      */
/* ------------------------------------------------------------------ */

/**
 * \brief An event that completes once all the work queued so far on \p device
 * (its compute and transfer queues) has completed. Does not block. A copy that
 * the host drives (staging, CUDA) runs on a queue of its own: pass on its event.
 * \param out receives the event (release it)
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_event_record(clf_event **out, clf_fleet *fleet, size_t device);
/**
 * \brief Work queued on \p device from now on starts after every event of
 * \p events: events of any device, context or platform (bridged with user
 * events when needed), or of the host (an asynchronous launch, a copy). Does not
 * block.
 *
 * The wait orders the device's compute queue: kernels, launches, collectives,
 * pipelines and task queues. Buffer reads and writes (clf_buffer_read_async(),
 * clf_buffer_write_async()) and copies are not held back: give clf_copy_async()
 * its own wait list, and wait on the host before a buffer read or write.
 *
 * A device that runs commands inside whichever thread makes them ready (PoCL's
 * "basic") cannot safely have its queue wait for other queues' events (PoCL 3
 * deadlocks or reads stale data): for such a device this waits on the host,
 * and returns once the events have completed.
 * \param fleet the fleet
 * \param device fleet index of the device that waits
 * \param events the events
 * \param num_events entries of events
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_device_wait_events(clf_fleet *fleet, size_t device,
                                          clf_event *const *events, size_t num_events);
/**
 * \brief A barrier across devices: work queued on any of them from now on starts
 * only after all the work queued so far on all of them (compute and transfer
 * queues). Does not
 * block, unless one of them is a device on which clf_device_wait_events()
 * waits on the host. What waits is as for clf_device_wait_events().
 * \param devices fleet indices, or NULL for every device
 * \param out_event completes when every device has reached the barrier, or NULL
 * \param fleet the fleet
 * \param num_devices entries of devices (ignored when devices is NULL)
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_barrier(clf_fleet *fleet, const size_t *devices, size_t num_devices,
                               clf_event **out_event);
/**
 * \brief Block until everything queued on \p device has completed (clf_fleet_finish() for all).
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_device_finish(clf_fleet *fleet, size_t device);
/**
 * \brief Wait for every event (all of them, even after a failure); the first failure.
 * \param events the events
 * \param num_events entries of events
 * \return CLF_SUCCESS, or the first failed event's status
 */
CLF_API clf_status clf_events_wait(clf_event *const *events, size_t num_events);

/* ------------------------------------------------------------------ */
/* Pipelines                                                           */
/* ------------------------------------------------------------------ */

/** \brief Stages, each a kernel on its device, that batches flow through. */
typedef struct clf_pipeline clf_pipeline;

/** \brief Most stages in a pipeline. */
#define CLF_MAX_PIPELINE_STAGES 16

/** \brief One stage; fill with CLF_STAGE_DESC_INIT. */
typedef struct clf_stage_desc {
    unsigned version;     /**< CLF_STAGE_DESC_VERSION */
    size_t device;        /**< fleet index of the device that runs the stage */
    clf_program *program; /**< built for the fleet */
    /** Kernel name; its parameters: (__global in, __global out, then the extra arguments). */
    const char *kernel;
    size_t in_bytes;  /**< input of one batch: the previous stage's out_bytes */
    size_t out_bytes; /**< output of one batch */
    unsigned dims;    /**< 1, 2 or 3 */
    size_t global[3]; /**< work-items per batch */
    size_t local[3];  /**< work-group size, or all 0 for the driver's choice */
    /** Extra arguments: CLF_SCALAR (value copied), CLF_LOCAL, CLF_BROADCAST (uploaded
     * once, at creation). */
    const clf_arg *args;
    size_t nargs; /**< entries of args */
} clf_stage_desc;

/** \brief The version of clf_stage_desc this header describes. */
#define CLF_STAGE_DESC_VERSION 1
/** \brief Fills a clf_stage_desc with the defaults. */
#define CLF_STAGE_DESC_INIT \
    {CLF_STAGE_DESC_VERSION, 0, NULL, NULL, 0, 0, 1, {0, 1, 1}, {0, 0, 0}, NULL, 0}

/** \brief Called in batch order as each batch's output reaches the host. */
typedef void (*clf_pipeline_result_fn)(void *user, size_t batch, const void *out, size_t bytes);

/** \brief Options of a pipeline; fill with CLF_PIPELINE_OPTIONS_INIT. */
typedef struct clf_pipeline_options {
    unsigned version; /**< CLF_PIPELINE_OPTIONS_VERSION */
    /** Nonzero: one batch at a time through all the stages, no overlap (a baseline). */
    int serial;
    /** or NULL; runs on the thread that called clf_pipeline_run() */
    clf_pipeline_result_fn on_result;
    void *user;                       /**< passed to on_result */
} clf_pipeline_options;

/** \brief The version of clf_pipeline_options this header describes. */
#define CLF_PIPELINE_OPTIONS_VERSION 1
/** \brief Fills a clf_pipeline_options with the defaults. */
#define CLF_PIPELINE_OPTIONS_INIT {CLF_PIPELINE_OPTIONS_VERSION, 0, NULL, NULL}

/** \brief What one stage did in a run. */
typedef struct clf_stage_report {
    size_t device;          /**< fleet index */
    uint64_t batches;       /**< batches it processed */
    double busy_s;          /**< kernel time, from profiling events */
    double batches_per_s;   /**< batches / busy_s: what the stage sustains alone */
    double items_per_s;     /**< work-items / busy_s */
    double utilization;     /**< busy_s / the run's wall time */
    uint64_t bytes_in;      /**< bytes it received (from the host or the previous stage) */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_stage_report;

/** \brief What a pipeline run did. */
typedef struct clf_pipeline_report {
    size_t num_stages; /**< entries of stage */
    clf_stage_report stage[CLF_MAX_PIPELINE_STAGES]; /**< per stage */
    uint64_t batches;  /**< batches that went through */
    double wall_s;        /**< the run, host time */
    double batches_per_s; /**< batches / wall_s */
    size_t bottleneck;    /**< the stage with the most busy time */
    /** batches_per_s over the bottleneck's batches_per_s (1: as fast as the slowest
     * stage alone). */
    double efficiency;
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_pipeline_report;

/**
 * \brief Create a pipeline: two input and two output buffers per stage on its
 * device (double buffering), kernels, broadcast arguments uploaded.
 * \param opts options, or NULL for the defaults
 * \param out receives the pipeline
 * \param fleet the fleet
 * \param stages the stages, in order
 * \param nstages entries of stages (at most CLF_MAX_PIPELINE_STAGES)
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_pipeline_create(clf_pipeline **out, clf_fleet *fleet,
                                       const clf_stage_desc *stages, size_t nstages,
                                       const clf_pipeline_options *opts);
/**
 * \brief Push \p nbatches batches through the stages; blocks until the last
 * result is on the host.
 *
 * The stages on each device are driven by the fleet's thread for that device
 * (the calling thread for the last stage's device, where on_result runs); no
 * thread is started. Batch b of stage s runs while stage s+1 works on
 * batch b-1, the transfers between stages (clf_copy_async) overlapping both.
 * \param in nbatches x the first stage's in_bytes
 * \param out nbatches x the last stage's out_bytes, in batch order
 * \param report receives per-stage throughput, or NULL
 * \param pl the pipeline
 * \param nbatches batches to push through
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_pipeline_run(clf_pipeline *pl, const void *in, void *out,
                                    size_t nbatches, clf_pipeline_report *report);
/**
 * \brief Release the pipeline and its reference to the fleet, which goes with
 * its last child (see clf_fleet_destroy()); accepts NULL. The stages' programs
 * may have gone before.
 * \param pl the pipeline, or NULL
 */
CLF_API void clf_pipeline_destroy(clf_pipeline *pl);

/* ------------------------------------------------------------------ */
/* Task queues (work stealing)                                         */
/* ------------------------------------------------------------------ */

/** \brief Independent kernel launches that devices pull as they free up. */
typedef struct clf_taskq clf_taskq;

/** \brief clf_task_desc.affinity: no preferred device. */
#define CLF_TASK_ANY_DEVICE ((size_t)-1)

/** \brief One task: a kernel launch on one device; fill with CLF_TASK_DESC_INIT. */
typedef struct clf_task_desc {
    unsigned version;   /**< CLF_TASK_DESC_VERSION */
    const char *kernel; /**< kernel name in the queue's program */
    unsigned dims;      /**< 1, 2 or 3 */
    size_t global[3]; /**< the task's range */
    size_t local[3]; /**< all 0: the driver's choice */
    /** Position in the queue's devices whose deque holds the task first (others may
     * steal it), or CLF_TASK_ANY_DEVICE (dealt to the device predicted to finish it
     * first, round robin until the cost model knows the kernel on every device). */
    size_t affinity;
} clf_task_desc;

/** \brief The version of clf_task_desc this header describes. */
#define CLF_TASK_DESC_VERSION 1
/** \brief Fills a clf_task_desc with the defaults. */
#define CLF_TASK_DESC_INIT \
    {CLF_TASK_DESC_VERSION, NULL, 1, {0, 1, 1}, {0, 0, 0}, CLF_TASK_ANY_DEVICE}

/** \brief What happened to one task. */
typedef struct clf_task_info {
    size_t device;     /**< fleet index of the device that ran it */
    int stolen;        /**< taken from another device's deque */
    unsigned runs;     /**< times it ran: 1 once its queue has run */
    clf_status status; /**< its result */
    double start_s;    /**< host time from the start of the run to the task's start */
    double end_s;      /**< host time from the start of the run to the task's end */
    double kernel_s;   /**< kernel time, from profiling */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_task_info;

/** \brief What one device did in a run of a task queue. */
typedef struct clf_taskq_device_report {
    size_t device;   /**< fleet index */
    uint64_t tasks;  /**< tasks it ran */
    uint64_t stolen; /**< of which it took from other devices' deques */
    double busy_s;   /**< kernel time */
    double finish_s; /**< host time when it found no task left */
    /** Tasks it passed up when it stopped: another device was predicted by the cost model
     *  to finish them sooner (too slow to help; they ran there). With tasks == 0: it took
     *  nothing for that reason. */
    uint64_t passed;
    /** Tasks it ran as a probe: the steal gate had kept it from their kernel (by a cost
     *  model figure that may be stale) for some runs or tasks in a row, and it was given
     *  one task that the model predicted to end within the run anyway (doc/07-flows.md). */
    uint64_t probed;
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[2];
} clf_taskq_device_report;

/** \brief What a run of a task queue did. */
typedef struct clf_taskq_report {
    uint64_t tasks;     /**< tasks run */
    uint64_t failed;    /**< of which failed */
    size_t num_devices; /**< entries of dev */
    clf_taskq_device_report dev[CLF_MAX_LAUNCH_DEVICES]; /**< per device of the queue */
    double makespan_s; /**< latest finish */
    double efficiency; /**< earliest finish / latest finish */
    /** Reserved: later versions add fields here, so that the struct keeps its size. */
    uint64_t reserved[4];
} clf_taskq_report;

/**
 * \brief A task queue over some devices of the fleet.
 * \param devices fleet indices, or NULL for every device (at most CLF_MAX_LAUNCH_DEVICES)
 * \param out receives the queue
 * \param fleet the fleet
 * \param prog the program holding the kernels
 * \param num_devices entries of devices (ignored when devices is NULL)
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_taskq_create(clf_taskq **out, clf_fleet *fleet, clf_program *prog,
                                    const size_t *devices, size_t num_devices);
/**
 * \brief Add a task. Arguments in kernel parameter order: CLF_WHOLE_IN(),
 * CLF_WHOLE_OUT(), CLF_WHOLE_INOUT() (whole host arrays, copied to the device before and
 * back after the kernel; they must stay valid until clf_taskq_run() returns),
 * CLF_BROADCAST (as CLF_WHOLE_IN), CLF_SCALAR (the value is copied now), CLF_LOCAL.
 * CLF_IN, CLF_OUT and CLF_INOUT are taken as whole arrays too, as 0.1 did (their unit is
 * ignored); they mean partitioned arrays everywhere else, so prefer the CLF_WHOLE_ names.
 * \param id receives the task's number (0, 1, ... in submission order), or NULL
 * \param q the task queue
 * \param task the kernel and its range
 * \param args its arguments
 * \param nargs entries of args
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_taskq_submit(clf_taskq *q, const clf_task_desc *task, const clf_arg *args,
                                    size_t nargs, size_t *id);
/**
 * \brief Run every task submitted since the last run; blocks. One host thread per
 * device takes tasks from the head of its own deque and, when that is empty,
 * steals from the tail of the fullest other one. Once the cost model has learned a
 * task's kernel on the devices (from earlier runs), a device takes a task only when
 * it is predicted to finish it sooner than the device it would otherwise wait for
 * (clf_taskq_device_report.passed counts what it left).
 * \return CLF_SUCCESS, or the first failed task's status (the others still ran)
 * \param q the task queue
 * \param report receives what each device did, or NULL
 */
CLF_API clf_status clf_taskq_run(clf_taskq *q, clf_taskq_report *report);
/**
 * \brief What happened to task \p id.
 * \param q the task queue
 * \param id the number clf_taskq_submit() gave it
 * \param out receives what happened
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_taskq_task_info(clf_task_info *out, const clf_taskq *q, size_t id);
/**
 * \brief Release the queue and its reference to the fleet, which goes with its
 * last child (see clf_fleet_destroy()); accepts NULL. Destroy it before its
 * program, which it launches with.
 * \param q the queue, or NULL
 */
CLF_API void clf_taskq_destroy(clf_taskq *q);

/* ------------------------------------------------------------------ */
/* Distributed arrays: data that stays on the devices                  */
/* ------------------------------------------------------------------ */

/**
 * \brief An array of 1 to 3 dimensions cut into parts along its slowest-varying dimension
 * (the last, dims-1: rows of a row-major image, planes of a volume), each part held in a
 * clf_buffer on one device.
 *
 * Kernels written for the whole array on one device run unchanged over it (see
 * clf_array_launch()): each device runs the range it owns, with a global work offset, and
 * its buffers are addressed with global indices. Nothing goes back to the host unless the
 * host asks (clf_array_read(), clf_array_map()), and then only what changed since the host
 * last had it.
 *
 * Every part knows its last writer and the readers since, so launches, halo exchanges and
 * host accesses order themselves (independent parts do not wait for each other), and the
 * calls that queue work return before it runs; clf_array_finish() waits. An error of
 * queued work is returned by the next call that waits for it.
 *
 * An array must not be used by two threads at once; different arrays may.
 */
typedef struct clf_array clf_array;

/** \brief How a clf_array is cut over its devices. */
typedef enum clf_array_dist {
    /** One contiguous block per device, sized by clf_array_desc.weights_mode; with
     *  halo_before/halo_after, each part also holds that many units of its neighbours. */
    CLF_ARRAY_BLOCK = 0,
    /** The whole array on every device (read by kernels; written by clf_array_write(),
     *  clf_array_reduce() and redistribution, which update every copy). */
    CLF_ARRAY_REPLICATED = 1,
    /** Blocks of clf_array_desc.block_size units dealt to the devices in turn. */
    CLF_ARRAY_BLOCK_CYCLIC = 2
} clf_array_dist;

/** \brief clf_array_desc.flags: the halo wraps around (the first part's halo before is the
 *  last units of the array, the last part's halo after its first units). */
#define CLF_ARRAY_PERIODIC (1u << 0)
/**
 * \brief clf_array_desc.flags (CLF_ARRAY_BLOCK, not a window): move the parts between
 * launches when the measured speeds say it pays.
 *
 * clf_array_launch() times each part's kernels (their profiling events, read once they have
 * completed, never waited for). Before a launch, once the kernel has 3 steps measured since
 * the last move, it takes each device's speed (units per second, the median of the last 5
 * steps of each kernel: one spike moves nothing; the kernels launched over the array
 * combined as if each ran once a step) and predicts the step (the slowest part's kernel
 * time, plus a cost per part boundary for the halo copies) with the current parts and with
 * parts proportional to the speeds, without the devices that would slow the step down
 * (their share is narrower than the halo, or the others finish it sooner than their part
 * plus their halo exchange). It moves the block arrays of the launch
 * (clf_array_redistribute()'s copies, device to device) only when the new step is at least
 * 10 % shorter and 10 steps of the gain exceed the predicted cost of the move (bytes that
 * change device over the bandwidth measured by the last move, 1 GB/s before one), and
 * never twice within 10 steps (launches of the first kernel launched after the move). A
 * move is on trial until the new parts are measured: if the step got 10 % longer than
 * before it (devices that slow each other down, such as sub-devices of one CPU), the parts
 * move back and stay for 50 steps. Every block array of the launch must carry the flag (they move together, so that they
 * stay cut alike); one left behind by a move of a launch it was not in is moved to the cut
 * of the first block array of the next launch it is in. A device dropped by a move does not
 * come back. clf_array_part_info() gives the new parts; clf_array_balance_info() says what
 * was decided and why. A move waits on the host for the arrays' queued work.
 */
#define CLF_ARRAY_REBALANCE (1u << 1)

/** \brief What clf_array_create() makes; fill with CLF_ARRAY_DESC_INIT. */
typedef struct clf_array_desc {
    unsigned version;    /**< CLF_ARRAY_DESC_VERSION */
    size_t elem_size;    /**< bytes per element (1 to 128) */
    unsigned dims;       /**< 1, 2 or 3 */
    /** Elements along each dimension, dimension 0 varying fastest (as an NDRange's
     *  global[0]): a row-major H x W image is {W, H}. The array is cut along dims-1, in
     *  units of shape[0] * ... * shape[dims-2] elements (a row, a plane). */
    size_t shape[3];
    clf_array_dist dist; /**< how the units are cut */
    /** CLF_ARRAY_BLOCK: CLF_WEIGHTS_EQUAL, CLF_WEIGHTS_USER (weights) or CLF_WEIGHTS_LEARNED
     *  (the devices' measured speed on \p kernel, else compute units x clock; a device
     *  whose share would be narrower than the halo, or, with measured speeds, that the
     *  others would outrun on its share once its halo copies are counted, gets no part:
     *  clf_array_balance_info() says which and why). */
    clf_weights weights_mode;
    const double *weights; /**< CLF_WEIGHTS_USER: one per device, >= 0, not all 0 */
    const char *kernel;    /**< CLF_WEIGHTS_LEARNED: whose measured speed, or NULL */
    const size_t *devices; /**< fleet indices holding parts, or NULL for every device */
    size_t num_devices;    /**< entries of devices */
    size_t halo_before;    /**< CLF_ARRAY_BLOCK: units held before each part */
    size_t halo_after;     /**< CLF_ARRAY_BLOCK: units held after each part */
    unsigned flags;        /**< CLF_ARRAY_PERIODIC, CLF_ARRAY_REBALANCE */
    size_t block_size;     /**< CLF_ARRAY_BLOCK_CYCLIC: units per block (0: 1) */
    /**
     * Version 2, a window (CLF_ARRAY_BLOCK only): the array is the units
     * [window_first, window_first + shape[dims-1]) of a larger array of window_units units
     * along dims-1 whose other parts live elsewhere (other processes: clfleet/mpi.h).
     * clf_array_launch() then takes the larger array's range (global[dims-1] =
     * window_units) and runs the window's units with the larger array's global indices;
     * clf_array_part_info() gives global unit ranges. The halo at a window edge that has
     * a neighbour in the larger array (or wraps, CLF_ARRAY_PERIODIC: the larger array is
     * periodic) is held but not filled by clf_array_exchange(): write it with
     * clf_array_write_halo(). Host boxes (clf_array_write(), clf_array_read(),
     * clf_array_map(), clf_array_read_units()) are in the window's own units (0 is
     * window_first). 0: not a window.
     */
    size_t window_units;
    size_t window_first; /**< version 2: the window's first unit in the larger array */
    /** Reserved: later versions add fields here (zero). */
    size_t reserved[2];
} clf_array_desc;

/** \brief The version of clf_array_desc this header describes; every version from 1 up to
 *  it is accepted (version 1 has zeros where window_units and window_first are). */
#define CLF_ARRAY_DESC_VERSION 2
/** \brief Fills a clf_array_desc with the defaults (equal blocks over every device). */
#define CLF_ARRAY_DESC_INIT                                                                   \
    {CLF_ARRAY_DESC_VERSION, 0, 1, {0, 1, 1}, CLF_ARRAY_BLOCK, CLF_WEIGHTS_EQUAL, NULL, NULL, \
     NULL, 0, 0, 0, 0, 0, 0, 0, {0, 0}}

/**
 * \brief Create a distributed array; its contents are undefined until written.
 * \param out receives the array
 * \param fleet the fleet (the array holds a reference to it)
 * \param desc shape, element size and distribution
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (a version, dims,
 *         element size, distribution, weights, device list, a halo wider than a part or on
 *         a distribution other than CLF_ARRAY_BLOCK),
 *         CLF_ERROR_ZERO_SIZE, CLF_ERROR_SIZE_OVERFLOW, CLF_ERROR_OUT_OF_RANGE (a device),
 *         CLF_ERROR_DEVICE_FAILED, CLF_ERROR_OUT_OF_HOST_MEMORY, CLF_ERROR_OPENCL
 */
CLF_API clf_status clf_array_create(clf_array **out, clf_fleet *fleet,
                                    const clf_array_desc *desc);
/**
 * \brief Wait for the array's queued work and release it; accepts NULL.
 * \param arr the array, or NULL
 */
CLF_API void clf_array_destroy(clf_array *arr);

/** \brief One part of a clf_array (from clf_array_part_info()). */
typedef struct clf_array_part {
    size_t device;     /**< fleet index of its device */
    size_t first;      /**< first unit it owns along dims-1 */
    size_t count;      /**< units it owns */
    size_t halo_before; /**< units held before \p first (neighbours' or wrapped) */
    size_t halo_after;  /**< units held after the owned ones */
    clf_buffer *buffer; /**< the buffer holding it (owned by the array) */
    /** Byte offset of unit first - halo_before in \p buffer (block-cyclic parts of one
     *  device share a buffer). */
    size_t offset;
    uint64_t reserved[4]; /**< zero */
} clf_array_part;

/**
 * \brief How many parts the array has (one per device, or one per block).
 * \param arr the array
 * \return the number of parts (0 for NULL)
 */
CLF_API size_t clf_array_part_count(const clf_array *arr);
/**
 * \brief Describe part \p part.
 * \param out receives the part
 * \param arr the array
 * \param part below clf_array_part_count()
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER or CLF_ERROR_OUT_OF_RANGE
 */
CLF_API clf_status clf_array_part_info(clf_array_part *out, const clf_array *arr, size_t part);

/** \brief What clf_array_balance_info() reports: the array's balancing decisions. */
typedef struct clf_array_balance {
    size_t migrations; /**< moves made by CLF_ARRAY_REBALANCE since creation */
    size_t samples;    /**< steps measured since the last move (or creation) */
    /** Predicted step in seconds with the current parts (the slowest part's kernel time
     *  plus the halo copies' estimate), 0 before 3 steps are measured. */
    double step_s;
    /** Predicted step with the parts the measured speeds call for (0: as step_s). */
    double best_s;
    /** The last decision in words: devices left without a part at creation and why, a
     *  move and its figures, or why the parts stayed. */
    char why[320];
    uint64_t reserved[4]; /**< zero */
} clf_array_balance;

/**
 * \brief What the array's balancing decided (CLF_WEIGHTS_LEARNED devices left out,
 * CLF_ARRAY_REBALANCE moves).
 * \param out receives the figures
 * \param arr the array
 * \return CLF_SUCCESS or CLF_ERROR_NULL_POINTER
 */
CLF_API clf_status clf_array_balance_info(clf_array_balance *out, const clf_array *arr);

/** \brief Access flags of clf_array_map() and clf_buffer_map(). */
enum {
    CLF_MAP_READ = 1u << 0,   /**< the host reads: parts newer on a device are fetched */
    CLF_MAP_WRITE = 1u << 1,  /**< the host writes: the devices' copies are stale after unmap */
    /** With CLF_MAP_WRITE (not CLF_MAP_READ): the host overwrites the whole array,
     *  nothing is fetched. */
    CLF_MAP_DISCARD = 1u << 2
};

/**
 * \brief Copy host memory into a box of the array (waits for the parts it touches; the
 * devices' copies are updated when a device next uses them).
 * \param arr the array
 * \param origin first element of the box along each of three dimensions, or NULL for 0;
 *        0 in a dimension the array does not have
 * \param region elements of the box along each of three dimensions, or NULL for the whole
 *        array; 1 in a dimension the array does not have
 * \param src the box, packed (dimension 0 fastest)
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_OUT_OF_RANGE (the box leaves the
 *         array in some dimension, the array's or not), CLF_ERROR_ZERO_SIZE, or an error of
 *         earlier queued work
 */
CLF_API clf_status clf_array_write(clf_array *arr, const size_t *origin, const size_t *region,
                                   const void *src);
/**
 * \brief Copy a box of the array to host memory, fetching only parts that a device changed
 * since the host last had them.
 * \param arr the array
 * \param origin first element of the box along each of three dimensions, or NULL for 0
 * \param region elements of the box along each of three dimensions, or NULL for the whole
 *        array (as clf_array_write())
 * \param dst receives the box, packed (dimension 0 fastest)
 * \return as clf_array_write()
 */
CLF_API clf_status clf_array_read(clf_array *arr, const size_t *origin, const size_t *region,
                                  void *dst);
/**
 * \brief Host access to the whole array in its own memory (packed, dimension 0 fastest);
 * until clf_array_unmap() nothing else may use the array.
 * \param out receives the host pointer
 * \param arr the array
 * \param flags CLF_MAP_READ, CLF_MAP_WRITE, CLF_MAP_DISCARD
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (flags),
 *         CLF_ERROR_BUSY (already mapped), CLF_ERROR_OUT_OF_HOST_MEMORY, or an error of earlier
 *         queued work
 */
CLF_API clf_status clf_array_map(void **out, clf_array *arr, unsigned flags);
/**
 * \brief End a clf_array_map(); after CLF_MAP_WRITE the devices' copies are stale.
 * \param arr the array
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (not mapped)
 */
CLF_API clf_status clf_array_unmap(clf_array *arr);

/**
 * \brief Wait for every queued operation on the array.
 * \param arr the array
 * \return CLF_SUCCESS, or the first error of queued work (clf_last_error() says which)
 */
CLF_API clf_status clf_array_finish(clf_array *arr);

/**
 * \brief Copy the owned units [first, first + count) (the window's own units, see
 * clf_array_desc.window_units) to host memory, waiting only for the writers of those units:
 * a boundary strip written by the strips of a CLF_ARRAY_EXCHANGE_AFTER launch is read
 * while the interior still computes. Blocking; the host mirror is not involved.
 * \param arr a CLF_ARRAY_BLOCK array
 * \param first first unit along dims-1
 * \param count units
 * \param dst count units, packed
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (not a block
 *         array), CLF_ERROR_OUT_OF_RANGE, CLF_ERROR_BUSY (mapped), or an error of queued work
 */
CLF_API clf_status clf_array_read_units(clf_array *arr, size_t first, size_t count, void *dst);
/**
 * \brief Fill the halo a window array holds at one of its edges (clf_array_desc
 * .window_units) from host memory: after the kernels that read the old halo, before those
 * that read it next. Blocking.
 * \param arr a window array
 * \param after 0: the halo before the window's first unit, else the one after its last
 * \param src the halo's units (halo_before or halo_after of them), packed
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (not a window,
 *         or no halo at that edge), CLF_ERROR_BUSY (mapped), or an error of queued work
 */
CLF_API clf_status clf_array_write_halo(clf_array *arr, int after, const void *src);

/**
 * \brief Copy each part's boundary units into its neighbours' halos, device to device by
 * the fleet's paths (same device, unified memory, peer, pipelined staging); queued after
 * the parts' last writers, returns at once.
 * \param arr a CLF_ARRAY_BLOCK array with a halo
 * \return CLF_SUCCESS (nothing to do without a halo), CLF_ERROR_NULL_POINTER,
 *         CLF_ERROR_INVALID_ARGUMENT (not a block array), or a transfer error
 */
CLF_API clf_status clf_array_exchange(clf_array *arr);

/**
 * \brief Move the array to another distribution, device to device where a path exists;
 * the contents stay. \p desc must have the same shape and element size.
 * \param arr the array
 * \param desc the new distribution
 * \return CLF_SUCCESS, or as clf_array_create(); on failure the array is unchanged
 */
CLF_API clf_status clf_array_redistribute(clf_array *arr, const clf_array_desc *desc);

/**
 * \brief Reduce every element of \p src with \p op into one value, through the
 * collectives; the reduction runs on the devices.
 * \param result receives the value on the host (clf_type_size(type) bytes), or NULL
 * \param dst a CLF_ARRAY_REPLICATED array whose element 0 receives it on every device, or
 *        NULL
 * \param src the array, with elements of \p type
 * \param type element type of src (its elem_size must match)
 * \param op CLF_REDUCE_SUM, CLF_REDUCE_PROD, CLF_REDUCE_MIN or CLF_REDUCE_MAX
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER (both result and dst NULL),
 *         CLF_ERROR_INVALID_ARGUMENT, or an error of the reduction
 */
CLF_API clf_status clf_array_reduce(void *result, clf_array *dst, clf_array *src, clf_type type,
                                    clf_reduce_op op);

/** \brief Launch flags of clf_array_launch_desc. */
enum {
    /** Exchange the halos of the arrays the kernel reads before it runs. */
    CLF_ARRAY_EXCHANGE_BEFORE = 1u << 0,
    /** Exchange the halos of the arrays the kernel writes after it: the boundary strips
     *  run first and their halos move while the interior computes. */
    CLF_ARRAY_EXCHANGE_AFTER = 1u << 1
};

/** \brief What clf_array_launch() runs; fill with CLF_ARRAY_LAUNCH_DESC_INIT. */
typedef struct clf_array_launch_desc {
    unsigned version;   /**< CLF_ARRAY_LAUNCH_DESC_VERSION */
    const char *kernel; /**< kernel function name */
    unsigned dims;      /**< 1, 2 or 3; dims-1 is the dimension the arrays are cut along */
    /** The range, as on one device: global[dims-1] equals the arrays' extent along their
     *  cut dimension; the other dimensions are free. */
    size_t global[3];
    size_t local[3];    /**< work-group size, or all 0 for the driver's choice */
    unsigned flags;     /**< CLF_ARRAY_EXCHANGE_BEFORE, CLF_ARRAY_EXCHANGE_AFTER */
    size_t reserved[4]; /**< zero */
    /**
     * Version 2: how the parts are balanced over resident data (owner computes: a unit is
     * computed where it lives). CLF_STRATEGY_STATIC: the parts as distributed (the array's
     * weights), never moved. CLF_STRATEGY_DYNAMIC, CLF_STRATEGY_GUIDED,
     * CLF_STRATEGY_MEMORY_AWARE and CLF_STRATEGY_AUTO: the parts' measured device times
     * weigh them, and the block arrays are repartitioned between launches when the move
     * pays within the next steps (CLF_ARRAY_REBALANCE's rule, whether or not the arrays have
     * the flag, windows aside); no chunk is stolen across owners, and the report names
     * guided for auto. CLF_STRATEGY_DEFAULT, and a version-1 description: the parts as
     * distributed, moved only for arrays with CLF_ARRAY_REBALANCE ($CLFLEET_STRATEGY does
     * not apply: it would move arrays a program cut on purpose). Another value is refused
     * (CLF_ERROR_INVALID_ARGUMENT).
     */
    clf_strategy strategy;
    /** Version 2: receives what each device did, or NULL. With a report the call returns
     *  once the launch's kernels have completed (its times need them), not once queued. */
    clf_launch_report *report;
} clf_array_launch_desc;

/** \brief The version of clf_array_launch_desc this header describes; every version from 1
 *  up to it is accepted (version 1 ends before strategy). */
#define CLF_ARRAY_LAUNCH_DESC_VERSION 2
/** \brief Fills a clf_array_launch_desc with the defaults. */
#define CLF_ARRAY_LAUNCH_DESC_INIT                                                          \
    {CLF_ARRAY_LAUNCH_DESC_VERSION, NULL, 1, {0, 1, 1}, {0, 0, 0}, 0, {0, 0, 0, 0},         \
     CLF_STRATEGY_DEFAULT, NULL}

/** \brief Internal: a clf_array argument of clf_array_launch() with access \p mode. */
#define CLF__ARRAY(arr, mode) CLF__ARG(CLF_ARG_KIND_ARRAY, (mode), (arr), 0, 0, 0, 0)
/** \brief An array the kernel reads (a pointer to const or __constant parameter). */
#define CLF_ARRAY_IN(arr) CLF__ARRAY(arr, CLF_ARG_READ)
/** \brief An array the kernel writes: every owned element of it, or those it does not
 *  write are undefined. */
#define CLF_ARRAY_OUT(arr) CLF__ARRAY(arr, CLF_ARG_WRITE)
/** \brief An array the kernel reads and writes. */
#define CLF_ARRAY_INOUT(arr) CLF__ARRAY(arr, CLF_ARG_READ | CLF_ARG_WRITE)

/**
 * \brief Run a kernel written for one device over distributed arrays, owner computes;
 * returns once queued (with a report: once its kernels have completed).
 *
 * Each part's kernel is enqueued by its device's executor thread, the devices at once.
 * desc.strategy (version 2) says whether the parts may move between launches: static
 * keeps them, a balancing strategy moves them by their measured device times when it
 * pays (see clf_array_launch_desc.strategy); desc.report receives what each device did.
 *
 * The block arrays among \p args must be cut alike (same devices, same units per part);
 * each part's device runs the part's owned units along dims-1, with a global work offset,
 * and every NDRange built-in returns what it returns on one device. Buffer arguments are
 * addressed with global indices: element i of the array is ptr[i] in the kernel, for
 * the owned units and the halo. Replicated arrays are read whole on every device (read
 * only). Block-cyclic arrays run one kernel per block.
 *
 * Each kernel waits for the last writer of every part it reads or writes (and for the
 * readers of the parts it writes); nothing goes through the host, except parts the host
 * wrote, which are uploaded first.
 *
 * The kernel may touch only the elements its part holds: its owned units and its halo. In
 * a periodic array the halo holds the wrapped units at their unwrapped indices: unit -1 is
 * the last unit, unit \p units the first. clfleet moves each `__global` and `__constant`
 * pointer parameter by a hidden parameter (clfleet_part_offsets) so that global indices
 * work: at most 16 of them, and none declared `* const`. With a local size, it must divide
 * every part's units along dims-1 (each part runs whole work-groups); with none, clfleet
 * chooses one that does.
 * \param fleet the fleet
 * \param prog a program of the fleet
 * \param desc the kernel and its range
 * \param args in kernel parameter order: CLF_ARRAY_IN(), CLF_ARRAY_OUT(),
 *        CLF_ARRAY_INOUT(), CLF_SCALAR(), CLF_LOCAL()
 * \param nargs entries of args
 * \return CLF_SUCCESS once queued, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT
 *         (arrays cut differently, a range that does not match them, a local size that does
 *         not divide a part, a written replicated array, an argument the kernel does not
 *         take), CLF_ERROR_UNSUPPORTED (a `* const` pointer parameter, more than 16 arrays, a
 *         kernel clfleet did not find in the source), CLF_ERROR_BUSY (a mapped array), the
 *         errors of clf_kernel_enqueue()
 */
CLF_API clf_status clf_array_launch(clf_fleet *fleet, clf_program *prog,
                                    const clf_array_launch_desc *desc,
                                    const struct clf_arg *args, size_t nargs);

#ifdef __cplusplus
}
#endif

#endif /* CLFLEET_H */

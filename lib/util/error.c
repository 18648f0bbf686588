/*
 * What the library tells its caller: status codes (one X-macro list), the thread-local
 * detail message, and the log.
 *
 * The log says what the library decided and why (devices chosen, transfer paths, cache hits,
 * strategies, fallbacks), one line a message, to stderr or to the program's handler. The
 * level is process-wide because the handler is: a message without a fleet at hand (the cache)
 * needs one too.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CLF__DETAIL_MAX 16384

static _Thread_local char detail[CLF__DETAIL_MAX];

unsigned clf_version(void)
{
    return CLF_VERSION_HEX;
}

const char *clf_version_string(void)
{
    return PACKAGE_VERSION;
}

const char *clf_status_name(clf_status s)
{
    switch (s) {
#define CLF__NAME(name, value, msg) \
    case CLF_##name:                \
        return "CLF_" #name;
        CLF_STATUS_LIST(CLF__NAME)
#undef CLF__NAME
    }
    return "CLF_UNKNOWN_STATUS";
}

const char *clf_status_string(clf_status s)
{
    switch (s) {
#define CLF__MSG(name, value, msg) \
    case CLF_##name:               \
        return msg;
        CLF_STATUS_LIST(CLF__MSG)
#undef CLF__MSG
    }
    return "unknown status code";
}

const char *clf_last_error(void)
{
    return detail;
}

void clf_clear_error(void)
{
    detail[0] = '\0';
}

clf_status clf_set_error(clf_status s, const char *fmt, ...)
{
    /* Formatted apart first: an argument may be the detail message itself. */
    char tmp[CLF__DETAIL_MAX];
    if (!fmt) {
        detail[0] = '\0';
        return s;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(detail, tmp, strlen(tmp) + 1);
    return s;
}

clf_status clf__fail(clf_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return s;
}

clf_status clf__prefix_error(clf_status s, const char *fmt, ...)
{
    char head[1024], old[CLF__DETAIL_MAX];
    memcpy(old, detail, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    snprintf(detail, sizeof detail, "%s%s", head, old);
    return s;
}

void clf__append_error(const char *fmt, ...)
{
    size_t n = strlen(detail);
    if (n + 1 >= sizeof detail)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail + n, sizeof detail - n, fmt, ap);
    va_end(ap);
}

const char *clf__cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) \
    case x:  \
        return #x;
        E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
        E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY) E(CL_PROFILING_INFO_NOT_AVAILABLE)
        E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH) E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(CL_COMPILE_PROGRAM_FAILURE)
        E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
        E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM)
        E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT) E(CL_INVALID_QUEUE_PROPERTIES)
        E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR) E(CL_INVALID_MEM_OBJECT)
        E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER)
        E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
        E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
        E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
        E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET)
        E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION)
        E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_MIP_LEVEL)
        E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY) E(CL_INVALID_IMAGE_DESCRIPTOR)
        E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
        E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    return "CL_UNKNOWN_ERROR";
}

clf_status clf__cl_fail(cl_int err, const char *call, const struct clf__device *d)
{
    if (d)
        return clf__fail(CLF_ERROR_OPENCL, "%s failed: %s (%d) on device %zu '%s'", call,
                         clf__cl_error_name(err), (int)err, d->index, d->info.name);
    return clf__fail(CLF_ERROR_OPENCL, "%s failed: %s (%d)", call, clf__cl_error_name(err),
                     (int)err);
}

/* The check every function taking a fleet and a device index starts with. */
clf_status clf__check_device(const clf_fleet *fleet, size_t device)
{
    if (!fleet)
        return clf__fail(CLF_ERROR_NULL_POINTER, "fleet is NULL");
    if (device >= fleet->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "device index %zu out of range (fleet has %zu)",
                         device, fleet->ndev);
    return CLF_SUCCESS;
}

/*
 * The version rule of the option and description structs (doc/02-devices.md, "API and ABI
 * conventions"): a caller built against an older header passes its older, shorter struct
 * with that header's version, so any version from 1 to the current one is taken, and only
 * the fields that version has are read (exec/check.c's clf__launch_prepare() shows the copy
 * once a struct has grown).
 */
clf_status clf__check_version(const char *who, unsigned version, unsigned current,
                              const char *what, const char *init)
{
    if (version >= 1 && version <= current)
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                     "%s%s%s.version is %u; this library takes 1 to %u (initialise with %s)",
                     who ? who : "", who ? ": " : "", what, version, current, init);
}

/* ---- the log ------------------------------------------------------------------------- */

static atomic_int log_level = CLF_LOG_WARN;
/* The handler and its pointer change together, and the handler is called under the lock so
 * that messages from several threads never interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static clf_log_fn log_fn;
static void *log_user;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

clf_status clf__log_init(void)
{
    const char *v = getenv("CLFLEET_LOG");
    if (!v || !v[0]) {
        atomic_store(&log_level, CLF_LOG_WARN);
        return CLF_SUCCESS;
    }
    for (size_t i = 0; i < CLF__ARRAY_LEN(level_names); i++)
        if (!strcasecmp(v, level_names[i])) {
            atomic_store(&log_level, (int)i);
            return CLF_SUCCESS;
        }
    return clf__fail(CLF_ERROR_PARSE,
                     "CLFLEET_LOG: unknown level '%.64s' (error, warn, info, debug)", v);
}

int clf__log_on(clf_log_level level)
{
    return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void clf__log(clf_log_level level, const char *fmt, ...)
{
    if (!clf__log_on(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (log_fn)
        log_fn(log_user, level, msg);
    else
        fprintf(stderr, "clfleet: %s\n", msg);
    pthread_mutex_unlock(&log_lock);
}

void clf_log_set_handler(clf_log_fn fn, void *user)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

/*
 * The log: what the library decided and why (devices chosen, transfer paths, cache hits,
 * strategies, fallbacks), one line a message, to stderr or to the program's handler. The
 * level is process-wide because the handler is: a message without a fleet at hand (the cache)
 * needs one too.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

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

/* Names and clocks every layer shares: the strategies', the element types' sizes, the
 * transfer paths' names as the counters and the trace write them, a string as JSON writes
 * it, and the host's monotonic clock (seconds and nanoseconds). */
#include "util.h"

#include <stdio.h>
#include <strings.h>
#include <time.h>

void clf__json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

double clf__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const strategy_names[] = {"default", "static", "dynamic",
                                             "guided",  "memory-aware", "auto"};

const char *clf_strategy_name(clf_strategy s)
{
    return (unsigned)s < CLF__ARRAY_LEN(strategy_names) ? strategy_names[s] : NULL;
}

clf_status clf_strategy_parse(clf_strategy *out, const char *name)
{
    if (!name || !out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_strategy_parse: NULL argument");
    for (size_t i = 0; i < CLF__ARRAY_LEN(strategy_names); i++)
        if (!strcasecmp(name, strategy_names[i])) {
            *out = (clf_strategy)i;
            return CLF_SUCCESS;
        }
    if (!strcasecmp(name, "memory_aware") || !strcasecmp(name, "memory")) {
        *out = CLF_STRATEGY_MEMORY_AWARE;
        return CLF_SUCCESS;
    }
    return clf__fail(CLF_ERROR_PARSE,
                     "unknown strategy '%.64s' (static, dynamic, guided, memory-aware, auto)",
                     name);
}

size_t clf_type_size(clf_type t)
{
    switch (t) {
    case CLF_TYPE_INT32:
    case CLF_TYPE_UINT32:
    case CLF_TYPE_FLOAT:
        return 4;
    case CLF_TYPE_INT64:
    case CLF_TYPE_DOUBLE:
        return 8;
    }
    return 0;
}

/* As clf_path_name() (transfer.c) writes them; kept here so that the counters do not
 * depend on which transfer paths a build has. */
static const char *const path_names[CLF_NUM_PATHS] = {"same-device", "unified", "amd-p2p",
                                                      "cuda-p2p", "staged"};

const char *clf__metrics_path_name(unsigned path)
{
    return path < CLF_NUM_PATHS ? path_names[path] : "unknown";
}

uint64_t clf__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

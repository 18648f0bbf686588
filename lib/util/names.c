/*
 * Names, words and clocks every layer shares:
 * - values to names: the strategies', the element types' sizes, the transfer paths' names as
 *   the counters and the trace write them;
 * - text for files: the growing string that the metrics' JSON, the trace and the performance
 *   model are written through, with the one number formatter (always the C locale) and the
 *   one JSON string escaper, and the check of a write to a stream;
 * - words to values: the parsers of the tuning variables read at fleet creation (pure: no
 *   OpenCL, no getenv), and the binary cache's default directory (from the environment).
 *   A malformed value is CLF_ERROR_PARSE naming the variable, never silently ignored: a typo
 *   in a knob that changes nothing would mislead a measurement;
 * - the host's monotonic clock (seconds and nanoseconds).
 */
#include "util.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- text for files ---- */

/* The C locale, made once and never freed: clf__sb_printf() formats in it. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

void clf__sb_printf(clf__sb *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    /* Only this thread's locale changes (uselocale), and only for the formatting: the
     * program's setlocale() is not ours to change, and another thread may print meanwhile. */
    if (pthread_once(&c_locale_once, make_c_locale) != 0 || !c_locale) {
        b->oom = 1;
        return;
    }
    locale_t old = uselocale(c_locale);
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            break;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            break;
        }
        size_t cap = b->cap ? b->cap : 4096, need;
        if (clf__add_overflow(b->len, (size_t)n, &need)) {
            b->oom = 1;
            break;
        }
        while (cap <= need && cap <= SIZE_MAX / 2)
            cap *= 2;
        char *s = cap > need ? realloc(b->s, cap) : NULL;
        if (!s) {
            b->oom = 1;
            break;
        }
        b->s = s;
        b->cap = cap;
    }
    if (old)
        uselocale(old);
}

void clf__sb_json_string(clf__sb *b, const char *s)
{
    clf__sb_printf(b, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            clf__sb_printf(b, "\\%c", c);
        else if (c < 0x20)
            clf__sb_printf(b, "\\u%04x", c);
        else
            clf__sb_printf(b, "%c", c);
    }
    clf__sb_printf(b, "\"");
}

int clf__sb_flush(clf__sb *b, FILE *f)
{
    if (b->oom) {
        errno = ENOMEM;
        return -1;
    }
    errno = 0;
    if (b->len && fwrite(b->s, 1, b->len, f) != b->len) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    b->len = 0;
    return 0;
}

clf_status clf__stream_fail(FILE *fp, int err, const char *who)
{
    char link[64], name[512];
    ssize_t n = -1;
    int fd = fp ? fileno(fp) : -1;
    if (!err)
        err = EIO;
    if (fd >= 0) {
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, name, sizeof name - 1);
    }
    if (n > 0) {
        name[n] = '\0';
        return clf__fail(CLF_ERROR_IO, "%s: cannot write '%s' (descriptor %d): %s", who, name,
                         fd, strerror(err));
    }
    if (fd >= 0)
        return clf__fail(CLF_ERROR_IO, "%s: cannot write descriptor %d: %s", who, fd,
                         strerror(err));
    return clf__fail(CLF_ERROR_IO, "%s: cannot write the stream: %s", who, strerror(err));
}

double clf__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const strategy_names[] = {"default", "static", "dynamic",
                                             "guided",  "memory-aware", "auto"};

const char *clf_device_type_name(unsigned type)
{
    switch (type) {
    case CLF_DEVICE_CPU:
        return "cpu";
    case CLF_DEVICE_GPU:
        return "gpu";
    case CLF_DEVICE_ACCELERATOR:
        return "accelerator";
    case CLF_DEVICE_CUSTOM:
        return "custom";
    }
    return "unknown";
}

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

/* Case-insensitive exact match against a NULL-terminated word list. */
static int one_of(const char *v, const char *const *words)
{
    for (; *words; words++)
        if (strcasecmp(v, *words) == 0)
            return 1;
    return 0;
}

/* *set = 0 for an unset or empty value or one of dflt, 1 for one of other; else a parse
 * error naming the variable and every word it takes, listed from the same tables that are
 * matched, so that the message cannot leave out a word that works. */
static clf_status choice(const char *v, const char *const *dflt, const char *const *other,
                         int *set, const char *fn, const char *var)
{
    if (!set)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: output is NULL", fn);
    *set = 0;
    if (!v || !*v || one_of(v, dflt))
        return CLF_SUCCESS;
    if (one_of(v, other)) {
        *set = 1;
        return CLF_SUCCESS;
    }
    char takes[256] = "";
    size_t n = 0, total = 0;
    for (const char *const *w = dflt; *w; w++)
        total++;
    for (const char *const *w = other; *w; w++)
        total++;
    for (int list = 0; list < 2; list++)
        for (const char *const *w = list ? other : dflt; *w; w++, n++) {
            size_t len = strlen(takes);
            snprintf(takes + len, sizeof takes - len, "%s%s",
                     n == 0 ? "" : n + 1 == total ? " or " : ", ", *w);
        }
    return clf__fail(CLF_ERROR_PARSE, "%s: '%.64s' is not %s (any case)", var, v, takes);
}

clf_status clf__env_metrics(const char *v, int *off)
{
    static const char *const yes[] = {"1", "on", "yes", "true", NULL};
    static const char *const no[] = {"0", "off", "no", "false", NULL};
    return choice(v, yes, no, off, "clf__env_metrics", "CLFLEET_METRICS");
}

/* A size: decimal digits and an optional binary suffix, K or M (or G when allow_g); no sign,
 * space, fraction or base prefix. Returns 0 when v is not one or overflows 64 bits. */
static int parse_size(const char *v, int allow_g, uint64_t *out)
{
    uint64_t n = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return 0;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (p == v)
        return 0;
    unsigned shift = 0;
    if (*p == 'k' || *p == 'K')
        shift = 10, p++;
    else if (*p == 'm' || *p == 'M')
        shift = 20, p++;
    else if (allow_g && (*p == 'g' || *p == 'G'))
        shift = 30, p++;
    if (*p || n > (UINT64_MAX >> shift))
        return 0;
    *out = n << shift;
    return 1;
}

clf_status clf__env_transfer_chunk(const char *v, size_t dflt, size_t *out)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__env_transfer_chunk: out is NULL");
    *out = dflt;
    if (!v || !*v)
        return CLF_SUCCESS;
    uint64_t n;
    if (!parse_size(v, 0, &n) || n < ((uint64_t)64 << 10) || n > ((uint64_t)64 << 20) ||
        (n & (n - 1)))
        return clf__fail(CLF_ERROR_PARSE,
                         "CLFLEET_TRANSFER_CHUNK: '%.64s' is not a power of two from 64K to 64M "
                         "(bytes, or a number with K or M)",
                         v);
    *out = (size_t)n;
    return CLF_SUCCESS;
}

clf_status clf__env_cache_max(const char *v, uint64_t *out)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__env_cache_max: out is NULL");
    *out = 0;
    if (!v || !*v)
        return CLF_SUCCESS;
    if (!parse_size(v, 1, out))
        return clf__fail(CLF_ERROR_PARSE,
                         "CLFLEET_CACHE_MAX: '%.64s' is not a size (bytes, or a number with K, "
                         "M or G; 0 or empty: no limit)",
                         v);
    return CLF_SUCCESS;
}

clf_status clf__env_staging(const char *v, int *pipeline)
{
    static const char *const autos[] = {"auto", NULL};
    static const char *const pipelines[] = {"pipeline", NULL};
    return choice(v, autos, pipelines, pipeline, "clf__env_staging", "CLFLEET_TRANSFER_STAGING");
}

clf_status clf__env_host_staging(const char *v, int *mode)
{
    static const char *const autos[] = {"auto", NULL};
    static const char *const others[] = {"direct", "pinned", NULL};
    int set = 0;
    if (!mode)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__env_host_staging: output is NULL");
    /* choice() knows two outcomes; the third word is told apart here, and its message lists
     * all three. */
    clf_status st =
        choice(v, autos, others, &set, "clf__env_host_staging", "CLFLEET_HOST_STAGING");
    if (st != CLF_SUCCESS)
        return st;
    *mode = !set ? CLF__HOST_STAGING_AUTO
            : strcasecmp(v, "pinned") == 0 ? CLF__HOST_STAGING_PINNED
                                           : CLF__HOST_STAGING_DIRECT;
    return CLF_SUCCESS;
}

char *clf__concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), n;
    if (clf__add_overflow(na, nb, &n) || clf__add_overflow(n, 1, &n))
        return NULL;
    char *s = malloc(n);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

char *clf__cache_default_dir(void)
{
    const char *v = getenv("CLFLEET_CACHE_DIR");
    if (v && *v)
        return clf__concat(v, "");
    /* The XDG spec says a relative $XDG_CACHE_HOME is invalid and must be ignored. */
    v = getenv("XDG_CACHE_HOME");
    if (v && v[0] == '/')
        return clf__concat(v, "/clfleet");
    v = getenv("HOME");
    if (v && *v)
        return clf__concat(v, "/.cache/clfleet");
    return NULL;
}

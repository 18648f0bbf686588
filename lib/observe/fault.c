/*
 * Device faults: which devices of a fleet failed (launches leave them out
 * until the user re-admits them), and fault injection for tests.
 *
 * $CLFLEET_FAULT_INJECT holds rules separated by ';', each a list of
 * key=value items separated by ',':
 *   device=N|*   the fleet index (or every device, each counting its own calls)
 *   call=K[|K]   enqueue, exec, write, read, transfer (write|read), alloc, build, or any
 *                (every call of a launch: all but build and buffer); buffer:
 *                clf_buffer_read/write and their _async forms (e.g. the MPI layer's
 *                staging), never failed by a lost device, only by their own rules
 *   after=N      the first N matching calls on the device succeed (default 0)
 *   count=N|all  how many calls fail after them (default 1)
 *   status=S     a CL_* name or a negative number (default per call)
 *   lost         the failing call loses the device: it is marked failed at once, and every
 *                later call of any kind fails until clf_device_readmit()
 * e.g. "device=1,call=enqueue,after=3;device=0,call=alloc,status=CL_OUT_OF_RESOURCES".
 */
#include "fault.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int clf__fault_enabled;

struct clf__fault {
    pthread_mutex_t lock;
    clf__fault_rule *rule;
    size_t nrule;
    size_t ndev;
    uint64_t *seen;      /* nrule x ndev: matching calls so far */
    cl_int *lost_status; /* per device: lost until readmitted when not CL_SUCCESS */
};

/* ---- the grammar (pure) ---------------------------------------------------------------- */

static const struct {
    const char *name;
    unsigned mask;
} call_names[] = {
    {"enqueue", 1u << CLF__FAULT_ENQUEUE},
    {"exec", 1u << CLF__FAULT_EXEC},
    {"write", 1u << CLF__FAULT_WRITE},
    {"read", 1u << CLF__FAULT_READ},
    {"transfer", (1u << CLF__FAULT_WRITE) | (1u << CLF__FAULT_READ)},
    {"alloc", 1u << CLF__FAULT_ALLOC},
    {"build", 1u << CLF__FAULT_BUILD},
    {"buffer", 1u << CLF__FAULT_BUFFER},
    /* Every call of a launch; a lost device fails its builds too. */
    {"any", ((1u << CLF__FAULT_NCALLS) - 1) & ~(1u << CLF__FAULT_BUILD) &
                ~(1u << CLF__FAULT_BUFFER)},
};

/* An unsigned decimal number filling [s, s + n). */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
            return -1;
    }
    *out = v;
    return 0;
}

/* A CL_* error name or a negative number (an OpenCL error is negative). */
static int parse_status(const char *s, size_t n, cl_int *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (buf[0] == '-') {
        uint64_t v;
        if (parse_u64(buf + 1, n - 1, &v) != 0 || v == 0 || v > 0x7fffffff)
            return -1;
        *out = -(cl_int)v;
        return 0;
    }
    for (cl_int c = -1; c >= -1200; c--) {
        const char *name = clf__cl_error_name(c);
        if (strcmp(name, "CL_UNKNOWN_ERROR") != 0 && strcasecmp(name, buf) == 0) {
            *out = c;
            return 0;
        }
    }
    return -1;
}

static int key_is(const char *item, size_t klen, const char *key)
{
    return strlen(key) == klen && strncasecmp(item, key, klen) == 0;
}

/* One rule [s, s + n), the rule'th (from 1). */
static clf_status parse_rule(const char *s, size_t n, size_t rule, clf__fault_rule *r)
{
    unsigned seen = 0; /* keys given: device, call, after, count, status, lost */
    memset(r, 0, sizeof *r);
    r->count = 1;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        const char *item = s + i;
        size_t len = j - i;
        while (len && isspace((unsigned char)*item))
            item++, len--;
        while (len && isspace((unsigned char)item[len - 1]))
            len--;
        const char *eq = memchr(item, '=', len);
        size_t klen = eq ? (size_t)(eq - item) : len;
        const char *val = eq ? eq + 1 : item + len;
        size_t vlen = eq ? len - klen - 1 : 0;
        while (klen && isspace((unsigned char)item[klen - 1]))
            klen--;
        while (vlen && isspace((unsigned char)*val))
            val++, vlen--;
        unsigned bit;
        int bad = 0;
        if (len == 0)
            return clf__fail(CLF_ERROR_PARSE,
                             "rule %zu: empty item (rules are key=value items "
                             "separated by ',', rules separated by ';')",
                             rule);
        if (key_is(item, klen, "device")) {
            bit = 1;
            uint64_t v;
            if (vlen == 1 && (*val == '*'))
                r->any_device = 1;
            else if (vlen == 3 && strncasecmp(val, "all", 3) == 0)
                r->any_device = 1;
            else if (parse_u64(val, vlen, &v) == 0 && v < SIZE_MAX)
                r->device = (size_t)v;
            else
                bad = 1;
        } else if (key_is(item, klen, "call")) {
            bit = 2;
            size_t a = 0;
            while (a <= vlen && !bad) {
                size_t b = a;
                while (b < vlen && val[b] != '|')
                    b++;
                size_t k = 0;
                while (k < CLF__ARRAY_LEN(call_names) &&
                       !key_is(val + a, b - a, call_names[k].name))
                    k++;
                if (k == CLF__ARRAY_LEN(call_names))
                    bad = 1;
                else
                    r->calls |= call_names[k].mask;
                a = b + 1;
            }
        } else if (key_is(item, klen, "after")) {
            bit = 4;
            bad = parse_u64(val, vlen, &r->after) != 0;
        } else if (key_is(item, klen, "count")) {
            bit = 8;
            if (vlen == 3 && strncasecmp(val, "all", 3) == 0)
                r->count = UINT64_MAX;
            else
                bad = parse_u64(val, vlen, &r->count) != 0 || r->count == 0;
        } else if (key_is(item, klen, "status")) {
            bit = 16;
            bad = parse_status(val, vlen, &r->status) != 0;
        } else if (key_is(item, klen, "lost") && !eq) {
            bit = 32;
            r->lost = 1;
        } else {
            return clf__fail(CLF_ERROR_PARSE,
                             "rule %zu: unknown item '%.*s' (device, call, after, count, status, "
                             "lost)",
                             rule, (int)(len < 64 ? len : 64), item);
        }
        if (bad)
            return clf__fail(
                CLF_ERROR_PARSE, "rule %zu: bad value '%.*s' for '%.*s' (%s)", rule,
                (int)(vlen < 64 ? vlen : 64), val, (int)klen, item,
                bit == 1   ? "a fleet device index or *"
                : bit == 2 ? "enqueue, exec, write, read, transfer, alloc, build, buffer or "
                             "any, joined by |"
                : bit == 4 ? "a number of calls"
                : bit == 8 ? "a number of calls, at least 1, or all"
                           : "a CL_* error name or a negative number");
        if (seen & bit)
            return clf__fail(CLF_ERROR_PARSE, "rule %zu: '%.*s' given twice", rule, (int)klen,
                             item);
        seen |= bit;
        i = j + 1;
    }
    if (!(seen & 1))
        return clf__fail(CLF_ERROR_PARSE, "rule %zu: no device= (a fleet index or *)", rule);
    if (!(seen & 2))
        return clf__fail(CLF_ERROR_PARSE,
                         "rule %zu: no call= (enqueue, exec, write, read, transfer, alloc, "
                         "build, buffer or any)",
                         rule);
    return CLF_SUCCESS;
}

clf_status clf__fault_parse(const char *s, clf__fault_rule **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return CLF_SUCCESS;
    const char *t = s;
    while (isspace((unsigned char)*t))
        t++;
    if (!*t)
        return CLF_SUCCESS;
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ';';
    clf__fault_rule *r = calloc(cap, sizeof *r);
    if (!r)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fault injection: out of memory");
    size_t k = 0, len = strlen(s);
    for (size_t i = 0; i <= len;) {
        size_t j = i;
        while (j < len && s[j] != ';')
            j++;
        /* A ';' after the last rule is allowed; an empty rule elsewhere is not. */
        size_t a = i;
        while (a < j && isspace((unsigned char)s[a]))
            a++;
        if (a == j && j == len && k > 0)
            break;
        if (a == j) {
            free(r);
            return clf__fail(CLF_ERROR_PARSE, "rule %zu is empty", k + 1);
        }
        clf_status st = parse_rule(s + i, j - i, k + 1, &r[k]);
        if (st != CLF_SUCCESS) {
            free(r);
            return st;
        }
        k++;
        i = j + 1;
    }
    *out = r;
    *n = k;
    return CLF_SUCCESS;
}

/* ---- a fleet's injection --------------------------------------------------------------- */

clf_status clf__fault_init(clf_fleet *fl)
{
    const char *env = getenv("CLFLEET_FAULT_INJECT");
    clf__fault_rule *r = NULL;
    size_t n = 0;
    clf_status st = clf__fault_parse(env, &r, &n);
    if (st != CLF_SUCCESS)
        return clf__prefix_error(st, "CLFLEET_FAULT_INJECT='%.200s': ", env);
    if (n == 0)
        return CLF_SUCCESS;
    for (size_t i = 0; i < n; i++)
        if (!r[i].any_device && r[i].device >= fl->ndev) {
            st = clf__fail(CLF_ERROR_PARSE,
                           "CLFLEET_FAULT_INJECT='%.200s': rule %zu names device %zu, the "
                           "fleet has %zu",
                           env, i + 1, r[i].device, fl->ndev);
            free(r);
            return st;
        }
    struct clf__fault *f = calloc(1, sizeof *f);
    if (f) {
        f->seen = calloc(n * fl->ndev, sizeof *f->seen);
        f->lost_status = calloc(fl->ndev, sizeof *f->lost_status);
    }
    if (!f || !f->seen || !f->lost_status) {
        if (f) {
            free(f->seen);
            free(f->lost_status);
        }
        free(f);
        free(r);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fault injection: out of memory");
    }
    pthread_mutex_init(&f->lock, NULL);
    f->rule = r;
    f->nrule = n;
    f->ndev = fl->ndev;
    fl->fault = f;
    __atomic_store_n(&clf__fault_enabled, 1, __ATOMIC_RELAXED);
    return CLF_SUCCESS;
}

void clf__fault_fini(clf_fleet *fl)
{
    struct clf__fault *f = fl->fault;
    if (!f)
        return;
    pthread_mutex_destroy(&f->lock);
    free(f->rule);
    free(f->seen);
    free(f->lost_status);
    free(f);
    fl->fault = NULL;
}

static cl_int default_status(unsigned call)
{
    switch (call) {
    case CLF__FAULT_ALLOC:
        return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    case CLF__FAULT_BUILD:
        return CL_BUILD_PROGRAM_FAILURE;
    default:
        return CL_OUT_OF_RESOURCES;
    }
}

cl_int clf__fault_hit(clf_fleet *fl, size_t dev, unsigned call)
{
    struct clf__fault *f = fl ? fl->fault : NULL;
    if (!f || dev >= f->ndev || call >= CLF__FAULT_NCALLS)
        return CL_SUCCESS;
    static const char *const names[CLF__FAULT_NCALLS] = {"enqueue", "exec", "write", "read",
                                                         "alloc", "build", "buffer"};
    int lost_now = 0;
    pthread_mutex_lock(&f->lock);
    cl_int err = call == CLF__FAULT_BUFFER ? CL_SUCCESS : f->lost_status[dev];
    /* Every matching rule counts the call, even when an earlier one fails it. */
    for (size_t i = 0; i < f->nrule; i++) {
        const clf__fault_rule *r = &f->rule[i];
        if (!(r->calls & (1u << call)) || (!r->any_device && r->device != dev))
            continue;
        uint64_t *seen = &f->seen[i * f->ndev + dev];
        if (*seen < UINT64_MAX)
            (*seen)++;
        int fire = *seen > r->after && (r->count == UINT64_MAX || *seen - r->after <= r->count);
        if (!fire || err != CL_SUCCESS)
            continue;
        err = r->status ? r->status : r->lost ? CL_DEVICE_NOT_AVAILABLE : default_status(call);
        if (r->lost) {
            f->lost_status[dev] = err;
            lost_now = 1;
        }
    }
    pthread_mutex_unlock(&f->lock);
    /* A lost device is marked failed at once, not only by a launch that sees the error: task
     * queues, pipelines, collectives and copies then leave it out or refuse it too. */
    if (lost_now) {
        char why[96];
        snprintf(why, sizeof why, "lost by CLFLEET_FAULT_INJECT (call=%s: %s)", names[call],
                 clf__cl_error_name(err));
        clf__device_mark_failed(fl, dev, why);
    }
    return err;
}

/* ---- failed devices -------------------------------------------------------------------- */

int clf__cl_device_fault(cl_int err)
{
    switch (err) {
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return 1;
    default:
        /* Vendors report their own faults (e.g. NVIDIA's -9999) below the Khronos range. */
        return err <= -1100;
    }
}

void clf__device_mark_failed(clf_fleet *fl, size_t dev, const char *why)
{
    pthread_mutex_lock(&fl->lock);
    struct clf__device *d = &fl->dev[dev];
    int again = d->failed;
    __atomic_store_n(&d->failed, 1, __ATOMIC_RELAXED); /* the command path reads it unlocked */
    snprintf(d->fail_why, sizeof d->fail_why, "%s", why ? why : "");
    pthread_mutex_unlock(&fl->lock);
    if (!again) /* once: a lost device is marked when lost, then by the launch that saw it */
        clf__log(CLF_LOG_WARN, "device %zu '%s' failed, left out of launches until "
             "clf_device_readmit(): %s", dev, d->info.name, why ? why : "");
}

int clf__device_failed(clf_fleet *fl, size_t dev, char *why, size_t n)
{
    pthread_mutex_lock(&fl->lock);
    int failed = fl->dev[dev].failed;
    if (why && n)
        snprintf(why, n, "%s", failed ? fl->dev[dev].fail_why : "");
    pthread_mutex_unlock(&fl->lock);
    return failed;
}

int clf_device_is_failed(const clf_fleet *fleet, size_t device)
{
    if (!fleet || device >= fleet->ndev)
        return 0;
    return clf__device_failed((clf_fleet *)fleet, device, NULL, 0);
}

clf_status clf_device_failure(char *buf, size_t size, const clf_fleet *fleet, size_t device)
{
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (!buf || size == 0)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_device_failure: buffer is NULL or empty");
    clf__device_failed((clf_fleet *)fleet, device, buf, size);
    return CLF_SUCCESS;
}

clf_status clf_device_readmit(clf_fleet *fleet, size_t device)
{
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    pthread_mutex_lock(&fleet->lock);
    struct clf__device *d = &fleet->dev[device];
    __atomic_store_n(&d->failed, 0, __ATOMIC_RELAXED);
    d->fail_why[0] = '\0';
    pthread_mutex_unlock(&fleet->lock);
    /* A device lost by injection comes back as if it had been reset. */
    struct clf__fault *f = fleet->fault;
    if (f) {
        pthread_mutex_lock(&f->lock);
        f->lost_status[device] = CL_SUCCESS;
        pthread_mutex_unlock(&f->lock);
    }
    return CLF_SUCCESS;
}

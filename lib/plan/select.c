/*
 * Device selection (pure: no OpenCL, every rule unit-tested on synthetic facts): which devices
 * a selection string names, and why each of the others is left out. Transfer path selection
 * is in pathsel.c.
 */
#include "plan.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- device selection ---- */

/* Device selection strings ($CLFLEET_DEVICES, clf_fleet_options.devices).
 *
 * Grammar (whitespace around terms, keys, values and list items is ignored;
 * keys and keywords are ASCII case-insensitive; empty terms are ignored):
 *
 *   selection := term { ';' term }
 *   term      := '' | key '=' value                 value is never empty
 *   type=     TYPE { ',' TYPE }    TYPE := gpu | cpu | accelerator | custom | all
 *             | default            the default rule; it cannot be combined
 *   platform= TEXT   substring of the platform name or the platform vendor
 *   vendor=   TEXT   substring of the device vendor
 *   name=     TEXT   substring of the device name     (TEXT: at most 127 bytes,
 *                    compared case-insensitively; it may hold any byte but ';')
 *   index=    ITEM { ',' ITEM }    ITEM := N | N '-' M    0 <= N <= M <= 255
 *                    discovery indices (one with no device is an error at fleet
 *                    creation, clf__filter_missing())
 *   min_cu=   N      at least N compute units in the root device, before any split
 *                    (min_cu=2;split=1: the CPU devices that give two or more)
 *   require=  REQ { ',' REQ }      REQ := fp64 | unified | cl_NAME
 *                    NAME made of [A-Za-z0-9_], whole name at most 63 bytes,
 *                    at most 8 extensions; adds to those already in the filter
 *   split=    N (N >= 1 units per CPU sub-device) | N '+' N { '+' N } (counts,
 *             each >= 1, at most 64) | none
 *   context=  device | platform    one context per device, or per platform
 *
 *   N := one or more decimal digits, value at most UINT_MAX (no sign).
 *
 * Each key at most once per selection string: a second term with the same key (type=cpu;
 * type=gpu, split=1;split=2) is an error naming the key, as neither value is surely meant.
 *
 * Anything else is CLF_ERROR_PARSE, with a message naming the term. The
 * parser works on a copy so a failure leaves the caller's filter untouched,
 * and it only ever looks at bytes before the terminating NUL. */

typedef struct span {
    const char *p;
    size_t n;
} span;

/* Locale-independent classification: selection strings are ASCII syntax, and
 * <ctype.h> is undefined for negative chars and varies with setlocale(). */
static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static span trim(span s)
{
    while (s.n > 0 && is_space((unsigned char)s.p[0]))
        s.p++, s.n--;
    while (s.n > 0 && is_space((unsigned char)s.p[s.n - 1]))
        s.n--;
    return s;
}

static int eq_ci(span s, const char *word)
{
    size_t n = strlen(word);
    if (s.n != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s.p[i]) != (unsigned char)word[i])
            return 0;
    return 1;
}

/* Take the next sep-separated, trimmed item from *rest; 0 once it is used up. */
static int next_item(span *rest, char sep, span *item)
{
    if (!rest->p)
        return 0;
    const char *e = memchr(rest->p, sep, rest->n);
    size_t n = e ? (size_t)(e - rest->p) : rest->n;
    *item = trim((span){rest->p, n});
    if (e) {
        rest->p = e + 1;
        rest->n -= n + 1;
    } else {
        rest->p = NULL;
    }
    return 1;
}

/* Each parser returns NULL on success or why the value is wrong, pointing
 * *bad at the offending part when that is narrower than the whole term. */
static const char *parse_uint(span s, unsigned *out)
{
    unsigned v = 0;
    if (s.n == 0)
        return "missing number";
    if (s.p[0] == '-')
        return "negative numbers are not allowed";
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c < '0' || c > '9')
            return "not a decimal number";
        if (v > (UINT_MAX - (unsigned)(c - '0')) / 10)
            return "number too large";
        v = v * 10 + (unsigned)(c - '0');
    }
    *out = v;
    return NULL;
}

static const char *set_type(clf__filter *f, span v, span *bad)
{
    static const struct {
        const char *name;
        unsigned bits;
    } types[] = {{"gpu", CLF_DEVICE_GPU},       {"cpu", CLF_DEVICE_CPU},
                 {"accelerator", CLF_DEVICE_ACCELERATOR}, {"custom", CLF_DEVICE_CUSTOM},
                 {"all", CLF_DEVICE_ALL},       {"default", 0}};
    unsigned mask = 0;
    size_t count = 0, k;
    int dflt = 0;
    span it;
    while (next_item(&v, ',', &it)) {
        *bad = it;
        if (it.n == 0)
            return "empty list item";
        for (k = 0; k < CLF__ARRAY_LEN(types) && !eq_ci(it, types[k].name); k++)
            ;
        if (k == CLF__ARRAY_LEN(types))
            return "unknown device type (gpu, cpu, accelerator, custom, all, default)";
        mask |= types[k].bits;
        dflt |= types[k].bits == 0;
        count++;
    }
    if (dflt && count > 1)
        return "'default' cannot be combined with other types";
    f->types = mask;
    return NULL;
}

static const char *set_text(char dst[128], span v)
{
    if (v.n >= 128)
        return "value longer than 127 bytes";
    memcpy(dst, v.p, v.n);
    dst[v.n] = '\0';
    return NULL;
}

static const char *set_platform(clf__filter *f, span v, span *bad)
{
    (void)bad;
    return set_text(f->platform, v);
}

static const char *set_vendor(clf__filter *f, span v, span *bad)
{
    (void)bad;
    return set_text(f->vendor, v);
}

static const char *set_name(clf__filter *f, span v, span *bad)
{
    (void)bad;
    return set_text(f->name, v);
}

static const char *set_index(clf__filter *f, span v, span *bad)
{
    const char *why;
    span it;
    memset(f->index, 0, sizeof f->index);
    while (next_item(&v, ',', &it)) {
        *bad = it;
        if (it.n == 0)
            return "empty list item";
        if (it.p[0] == '-')
            return "negative numbers are not allowed";
        const char *dash = memchr(it.p, '-', it.n);
        size_t nlo = dash ? (size_t)(dash - it.p) : it.n;
        unsigned lo, hi;
        if ((why = parse_uint(trim((span){it.p, nlo}), &lo)) != NULL)
            return why;
        hi = lo;
        if (dash && (why = parse_uint(trim((span){dash + 1, it.n - nlo - 1}), &hi)) != NULL)
            return why;
        if (lo >= CLF__MAX_INDEX || hi >= CLF__MAX_INDEX)
            return "index out of range (0 to 255)";
        if (lo > hi)
            return "range start is above its end";
        memset(f->index + lo, 1, hi - lo + 1);
    }
    f->has_index = 1;
    return NULL;
}

static const char *set_min_cu(clf__filter *f, span v, span *bad)
{
    (void)bad;
    return parse_uint(v, &f->min_cu);
}

static const char *add_ext(clf__filter *f, span it)
{
    if (it.n >= sizeof f->exts[0])
        return "extension name longer than 63 bytes";
    for (size_t i = 0; i < it.n; i++) {
        unsigned char c = (unsigned char)it.p[i];
        if (!(c == '_' || (c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'z')))
            return "invalid character in extension name";
    }
    /* A repeated name is not a new requirement; it must not use up a slot. */
    for (size_t i = 0; i < f->nexts && i < CLF__MAX_EXTS; i++)
        if (strlen(f->exts[i]) == it.n && memcmp(f->exts[i], it.p, it.n) == 0)
            return NULL;
    if (f->nexts >= CLF__MAX_EXTS)
        return "more than 8 required extensions";
    memcpy(f->exts[f->nexts], it.p, it.n);
    f->exts[f->nexts][it.n] = '\0';
    f->nexts++;
    return NULL;
}

static const char *set_require(clf__filter *f, span v, span *bad)
{
    const char *why;
    span it;
    while (next_item(&v, ',', &it)) {
        *bad = it;
        if (it.n == 0)
            return "empty list item";
        if (eq_ci(it, "fp64"))
            f->require |= CLF_CAP_FP64;
        else if (eq_ci(it, "unified"))
            f->require |= CLF_CAP_HOST_UNIFIED;
        else if (it.n > 3 && memcmp(it.p, "cl_", 3) == 0) {
            if ((why = add_ext(f, it)) != NULL)
                return why;
        } else
            return "unknown requirement (fp64, unified or an extension name cl_...)";
    }
    return NULL;
}

static const char *set_split(clf__filter *f, span v, span *bad)
{
    const char *why;
    unsigned n;
    span it;
    if (eq_ci(v, "none")) {
        f->split_units = 0;
        f->nsplit_counts = 0;
        return NULL;
    }
    if (!memchr(v.p, '+', v.n)) {
        if ((why = parse_uint(v, &n)) != NULL)
            return why;
        if (n == 0)
            return "units per sub-device must be at least 1";
        f->split_units = n;
        f->nsplit_counts = 0;
        return NULL;
    }
    f->split_units = 0;
    f->nsplit_counts = 0;
    while (next_item(&v, '+', &it)) {
        *bad = it;
        if ((why = parse_uint(it, &n)) != NULL)
            return why;
        if (n == 0)
            return "each count must be at least 1";
        if (f->nsplit_counts >= CLF__MAX_SPLIT)
            return "more than 64 counts";
        f->split_counts[f->nsplit_counts++] = n;
    }
    return NULL;
}

static const char *set_context(clf__filter *f, span v, span *bad)
{
    (void)bad;
    if (eq_ci(v, "device"))
        f->context_per_device = 1;
    else if (eq_ci(v, "platform"))
        f->context_per_device = 0;
    else
        return "expected 'device' or 'platform'";
    return NULL;
}

static const struct {
    const char *key;
    const char *(*set)(clf__filter *f, span v, span *bad);
} keys[] = {
    {"type", set_type},       {"platform", set_platform}, {"vendor", set_vendor},
    {"name", set_name},       {"index", set_index},       {"min_cu", set_min_cu},
    {"require", set_require}, {"split", set_split},       {"context", set_context},
};

/* Copy at most 48 bytes of s for an error message, printable ASCII only, so
 * arbitrary input cannot put control bytes into the detail message. */
static void quote(char out[56], span s)
{
    size_t n = s.n > 48 ? 48 : s.n, i;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n < s.n)
        memcpy(out + i, "...", 3), i += 3;
    out[i] = '\0';
}

clf_status clf__filter_parse(clf__filter *f, const char *s)
{
    if (!f)
        return clf__fail(CLF_ERROR_NULL_POINTER, "device selection: NULL filter");
    if (!s || !*s)
        return CLF_SUCCESS;

    clf__filter tmp = *f;
    span rest = {s, strlen(s)}, term;
    /* The keys seen so far: a key given twice is an error, not "the last one wins", since
     * either value may be the one the user meant and a silent choice picks devices wrong. */
    unsigned seen = 0;
    char twice[96];
    while (next_item(&rest, ';', &term)) {
        if (term.n == 0)
            continue;
        const char *eq = memchr(term.p, '=', term.n), *why;
        span bad = {NULL, 0};
        if (!eq) {
            why = "expected key=value";
        } else {
            span key = trim((span){term.p, (size_t)(eq - term.p)});
            span val = trim((span){eq + 1, term.n - (size_t)(eq - term.p) - 1});
            size_t k;
            for (k = 0; k < CLF__ARRAY_LEN(keys) && !eq_ci(key, keys[k].key); k++)
                ;
            if (k == CLF__ARRAY_LEN(keys))
                why = "unknown key (type, platform, vendor, name, index, min_cu, require, "
                      "split, context)";
            else if (val.n == 0)
                why = "empty value";
            else if (seen & (1u << k)) {
                snprintf(twice, sizeof twice,
                         "key '%s' given twice (once per selection; list values in one term)",
                         keys[k].key);
                why = twice;
            } else {
                seen |= 1u << k;
                why = keys[k].set(&tmp, val, &bad);
            }
        }
        if (why) {
            char qt[56], qb[56];
            quote(qt, term);
            if (!bad.p || (bad.p == term.p && bad.n == term.n))
                return clf__fail(CLF_ERROR_PARSE, "device selection term '%s': %s", qt, why);
            quote(qb, bad);
            return clf__fail(CLF_ERROR_PARSE, "device selection term '%s': '%s': %s", qt, qb,
                             why);
        }
    }
    *f = tmp;
    return CLF_SUCCESS;
}

/* strnlen() is POSIX, not C11. */
static size_t bounded_len(const char *s, size_t cap)
{
    const char *z = memchr(s, '\0', cap);
    return z ? (size_t)(z - s) : cap;
}

/* Case-insensitive substring test; hay is a fixed-size field that may lack a NUL. */
static int contains_ci(const char *hay, size_t cap, const char *needle, size_t ncap)
{
    size_t h = bounded_len(hay, cap), n = bounded_len(needle, ncap);
    for (size_t i = 0; n <= h && i <= h - n; i++) {
        size_t j = 0;
        while (j < n && lower((unsigned char)hay[i + j]) == lower((unsigned char)needle[j]))
            j++;
        if (j == n)
            return 1;
    }
    return 0;
}

/* Append to a reason being built; a message cut at cap is still a string. */
static void put(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = (size_t)n >= cap - *len ? cap - 1 : *len + (size_t)n;
}

/* Start one more reason: the separator between them. */
static void reason(char *out, size_t cap, size_t *len)
{
    if (*len)
        put(out, cap, len, ", ");
}

/* The types of a mask as the selection string spells them ("gpu,accelerator"). */
static void put_types(char *out, size_t cap, size_t *len, unsigned types)
{
    static const unsigned order[] = {CLF_DEVICE_GPU, CLF_DEVICE_ACCELERATOR, CLF_DEVICE_CPU,
                                     CLF_DEVICE_CUSTOM};
    int first = 1;
    for (size_t i = 0; i < CLF__ARRAY_LEN(order); i++)
        if (types & order[i]) {
            put(out, cap, len, "%s%s", first ? "" : ",", clf_device_type_name(order[i]));
            first = 0;
        }
}

/* The split as the caller wrote it: "split=3", "split=1+2", or the option field. */
static void put_split(char *out, size_t cap, size_t *len, const clf__filter *f)
{
    int opt = (f->from_options & CLF__FROM_SPLIT) != 0;
    if (!f->nsplit_counts) {
        put(out, cap, len, "%s=%u", opt ? "split_cpu_units" : "split", f->split_units);
        return;
    }
    put(out, cap, len, "%s", opt ? "split_cpu_counts={" : "split=");
    for (size_t i = 0; i < f->nsplit_counts && i < CLF__MAX_SPLIT; i++)
        put(out, cap, len, "%s%u", i ? (opt ? "," : "+") : "", f->split_counts[i]);
    if (opt)
        put(out, cap, len, "}");
}

static size_t put_indices(char *out, size_t cap, size_t *len, const clf__filter *f,
                          size_t first);

static int splits(const clf__filter *f, const clf_device_info *info)
{
    return (f->split_units || f->nsplit_counts) && info->type == CLF_DEVICE_CPU;
}

const char *clf__filter_why(const clf__filter *f, const clf_device_info *info, unsigned index,
                            char *out, size_t cap)
{
    size_t len = 0;
    if (!out || cap == 0)
        return NULL;
    out[0] = '\0';
    if (!f || !info) {
        put(out, cap, &len, "no filter or no device facts");
        return out;
    }
    if (f->types && !(info->type & f->types)) {
        reason(out, cap, &len);
        put(out, cap, &len, "%s=", f->from_options & CLF__FROM_TYPES ? "device_types" : "type");
        put_types(out, cap, &len, f->types);
        put(out, cap, &len, " (it is a %s device)", clf_device_type_name(info->type));
    }
    if (f->platform[0] &&
        !contains_ci(info->platform, sizeof info->platform, f->platform, sizeof f->platform) &&
        !contains_ci(info->platform_vendor, sizeof info->platform_vendor, f->platform,
                     sizeof f->platform)) {
        reason(out, cap, &len);
        put(out, cap, &len, "platform=%s (its platform is '%.64s', vendor '%.64s')", f->platform,
            info->platform, info->platform_vendor);
    }
    if (f->vendor[0] &&
        !contains_ci(info->vendor, sizeof info->vendor, f->vendor, sizeof f->vendor)) {
        reason(out, cap, &len);
        put(out, cap, &len, "vendor=%s (its vendor is '%.64s')", f->vendor, info->vendor);
    }
    if (f->name[0] && !contains_ci(info->name, sizeof info->name, f->name, sizeof f->name)) {
        reason(out, cap, &len);
        put(out, cap, &len, "name=%s (its name is '%.64s')", f->name, info->name);
    }
    if (f->has_index && (index >= CLF__MAX_INDEX || !f->index[index])) {
        reason(out, cap, &len);
        put(out, cap, &len, "index=");
        put_indices(out, cap, &len, f, 0);
        put(out, cap, &len, " (its index is %u)", index);
    }
    /* The minimum applies to the root device, before any split: "min_cu=2;split=1" is how
     * examples/sgemm.c and clfleet-bench ask for the CPU devices that give two or more
     * sub-devices, so the reason says so when the device would have been split. */
    if (info->compute_units < f->min_cu) {
        reason(out, cap, &len);
        put(out, cap, &len, "%s=%u (it has %u", f->from_options & CLF__FROM_MIN_CU
                                                     ? "min_compute_units"
                                                     : "min_cu",
            f->min_cu, info->compute_units);
        if (splits(f, info)) {
            put(out, cap, &len, "; the minimum is of the device before ");
            put_split(out, cap, &len, f);
        }
        put(out, cap, &len, ")");
    }
    static const struct {
        unsigned bit;
        const char *term, *option, *lacks;
    } caps[] = {
        {CLF_CAP_FP64, "require=fp64", "require=CLF_CAP_FP64", "no double precision"},
        {CLF_CAP_HOST_UNIFIED, "require=unified", "require=CLF_CAP_HOST_UNIFIED",
         "no memory shared with the host"},
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(caps); i++) {
        int has = caps[i].bit == CLF_CAP_FP64 ? info->fp64 : info->host_unified;
        if ((f->require & caps[i].bit) && !has) {
            reason(out, cap, &len);
            put(out, cap, &len, "%s (it has %s)",
                f->require_from_options & caps[i].bit ? caps[i].option : caps[i].term,
                caps[i].lacks);
        }
    }
    for (size_t i = 0; i < f->nexts && i < CLF__MAX_EXTS; i++)
        if (!clf__ext_listed(info->extensions, f->exts[i])) {
            reason(out, cap, &len);
            put(out, cap, &len, "require=%s (it lacks that extension)", f->exts[i]);
        }
    return len ? out : NULL;
}

int clf__filter_match(const clf__filter *f, const clf_device_info *info, unsigned index)
{
    if (!f || !info)
        return 0;
    /* The type is left to the caller (the default rule needs the whole list). */
    clf__filter g = *f;
    g.types = 0;
    char why[8];
    return clf__filter_why(&g, info, index, why, sizeof why) == NULL;
}

const char *clf__filter_split_why(const clf__filter *f, const clf_device_info *info,
                                  unsigned index, char *out, size_t cap)
{
    size_t len = 0;
    if (!out || cap == 0)
        return NULL;
    out[0] = '\0';
    if (!f || !info || !splits(f, info))
        return NULL;
    unsigned long long asked = 0;
    for (size_t i = 0; i < f->nsplit_counts && i < CLF__MAX_SPLIT; i++)
        asked += f->split_counts[i];
    if (!f->nsplit_counts)
        asked = f->split_units;
    if (asked <= info->compute_units)
        return NULL;
    put(out, cap, &len, "cannot split device %u '%.64s' (cpu, %u compute unit%s): ", index,
        info->name, info->compute_units, info->compute_units == 1 ? "" : "s");
    put_split(out, cap, &len, f);
    if (f->nsplit_counts)
        put(out, cap, &len, " asks for %llu units in all", asked);
    else
        put(out, cap, &len, " asks for %llu units per sub-device", asked);
    return out;
}

/* The indices from first on that the filter names, as ranges ("2-3,7"); how many there are. */
static size_t put_indices(char *out, size_t cap, size_t *len, const clf__filter *f, size_t first)
{
    size_t count = 0;
    int any = 0;
    for (size_t i = first; i < CLF__MAX_INDEX; i++) {
        if (!f->index[i])
            continue;
        size_t j = i;
        while (j + 1 < CLF__MAX_INDEX && f->index[j + 1])
            j++;
        count += j - i + 1;
        put(out, cap, len, "%s%zu", any ? "," : "", i);
        if (j > i)
            put(out, cap, len, "-%zu", j);
        any = 1;
        i = j;
    }
    return count;
}

size_t clf__filter_missing(const clf__filter *f, size_t ndev, char *out, size_t cap)
{
    size_t len = 0;
    char none[1];
    if (!out || cap == 0)
        out = none, cap = sizeof none;
    out[0] = '\0';
    if (!f || !f->has_index)
        return 0;
    return put_indices(out, cap, &len, f, ndev);
}

int clf__ext_listed(const char *list, const char *name)
{
    if (!list || !name || !*name)
        return 0;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        while (is_space((unsigned char)*p))
            p++;
        const char *start = p;
        while (*p && !is_space((unsigned char)*p))
            p++;
        if ((size_t)(p - start) == n && memcmp(start, name, n) == 0)
            return 1;
    }
    return 0;
}

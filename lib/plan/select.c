/*
 * Selection rules (pure: no OpenCL, no CUDA, every rule unit-tested on synthetic facts):
 * which devices a selection string names, and which path a copy from one device to another
 * takes (DESIGN.md "Transfer path selector"; the transfer code gathers the devices' facts
 * once at fleet creation).
 */
#include "plan.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

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
 *                    discovery indices
 *   min_cu=   N      at least N compute units
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

int clf__filter_match(const clf__filter *f, const clf_device_info *info, unsigned index)
{
    if (!f || !info)
        return 0;
    if (f->platform[0] &&
        !contains_ci(info->platform, sizeof info->platform, f->platform, sizeof f->platform) &&
        !contains_ci(info->platform_vendor, sizeof info->platform_vendor, f->platform,
                     sizeof f->platform))
        return 0;
    if (f->vendor[0] &&
        !contains_ci(info->vendor, sizeof info->vendor, f->vendor, sizeof f->vendor))
        return 0;
    if (f->name[0] && !contains_ci(info->name, sizeof info->name, f->name, sizeof f->name))
        return 0;
    if (f->has_index && (index >= CLF__MAX_INDEX || !f->index[index]))
        return 0;
    if (info->compute_units < f->min_cu)
        return 0;
    if ((f->require & CLF_CAP_FP64) && !info->fp64)
        return 0;
    if ((f->require & CLF_CAP_HOST_UNIFIED) && !info->host_unified)
        return 0;
    for (size_t i = 0; i < f->nexts && i < CLF__MAX_EXTS; i++)
        if (!clf__ext_listed(info->extensions, f->exts[i]))
            return 0;
    return 1;
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

/* ---- transfer path selection ---- */

static const char *const path_names[CLF__PATH_COUNT] = {
    "same-device", "unified", "amd-p2p", "cuda-p2p", "staged",
};

const char *clf__path_name(clf__path p)
{
    if ((unsigned)p >= CLF__PATH_COUNT)
        return "unknown";
    return path_names[p];
}

static int amd_listed(const clf__path_dev *a, size_t ib)
{
    if (!a->amd_peers)
        return 0;
    for (size_t i = 0; i < a->namd_peers; i++)
        if (a->amd_peers[i] == ib)
            return 1;
    return 0;
}

static int cuda_peer(const clf__path_dev *a, const clf__path_dev *b, const clf__path_env *env)
{
    if (!env || !env->cuda_ok || !a->pci_known || !b->pci_known)
        return 0;
    if (a->cuda_ordinal < 0 || b->cuda_ordinal < 0 || !a->cuda_import || !b->cuda_import)
        return 0;
    size_t s = (size_t)a->cuda_ordinal, d = (size_t)b->cuda_ordinal;
    if (s >= env->ncuda || d >= env->ncuda)
        return 0;
    /* Two OpenCL devices on one GPU (two platforms): a copy inside one CUDA device needs no
     * peer access, and cuDeviceCanAccessPeer() refuses to answer for it. */
    if (s == d)
        return 1;
    return env->cuda_peer && env->cuda_peer[s * env->ncuda + d];
}

/* Whether path p applies to the pair, ignoring any mask. */
static int applies(clf__path p, const clf__path_dev *a, size_t ia, const clf__path_dev *b,
                   size_t ib, const clf__path_env *env)
{
    switch (p) {
    case CLF__PATH_SAME_DEVICE:
        return ia == ib;
    case CLF__PATH_UNIFIED:
        return a->host_unified && b->host_unified && a->context == b->context;
    case CLF__PATH_AMD_P2P:
        return a->amd_p2p && amd_listed(a, ib);
    case CLF__PATH_CUDA_P2P:
        return cuda_peer(a, b, env);
    default:
        return 1;
    }
}

clf__path clf__path_select(const clf__path_dev *a, size_t ia, const clf__path_dev *b, size_t ib,
                           const clf__path_env *env, unsigned disabled, int *direct)
{
    clf__path chosen = CLF__PATH_STAGED;
    int any = 0;
    for (int p = CLF__PATH_SAME_DEVICE; p < CLF__PATH_STAGED; p++) {
        if (!applies((clf__path)p, a, ia, b, ib, env))
            continue;
        any = 1;
        if (!(disabled & CLF__PATH_BIT(p))) {
            chosen = (clf__path)p;
            break;
        }
    }
    /* The loop stops only after a path applied, so any also covers the paths it did not
     * reach: it reports what the hardware allows even when the mask hides it. */
    if (direct)
        *direct = any;
    return chosen;
}

static const struct {
    const char *name;
    unsigned mask;
} tokens[] = {
    {"auto", 0},
    {"staged", CLF__PATH_FORCE_STAGED},
    {"force-staged", CLF__PATH_FORCE_STAGED},
    {"no-unified", CLF__PATH_BIT(CLF__PATH_UNIFIED)},
    {"no-amd", CLF__PATH_BIT(CLF__PATH_AMD_P2P)},
    {"no-cuda", CLF__PATH_BIT(CLF__PATH_CUDA_P2P)},
    {"no-p2p", CLF__PATH_BIT(CLF__PATH_AMD_P2P) | CLF__PATH_BIT(CLF__PATH_CUDA_P2P)},
};

static int token_is(const char *t, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(t, name, n) == 0;
}

clf_status clf__path_parse_env(const char *s, unsigned *disabled)
{
    if (!disabled)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__path_parse_env: disabled is NULL");
    unsigned mask = 0;
    const char *p = s ? s : "";
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0') {
        *disabled = 0;
        return CLF_SUCCESS;
    }
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        const char *t = p;
        while (*p && *p != ',')
            p++;
        size_t n = (size_t)(p - t);
        while (n > 0 && isspace((unsigned char)t[n - 1]))
            n--;
        size_t k = 0;
        while (k < CLF__ARRAY_LEN(tokens) && !token_is(t, n, tokens[k].name))
            k++;
        if (k == CLF__ARRAY_LEN(tokens))
            return clf__fail(CLF_ERROR_PARSE,
                             "CLFLEET_TRANSFER: unknown token '%.*s' in '%s' (expected auto, "
                             "staged, force-staged, no-unified, no-amd, no-cuda, no-p2p)",
                             (int)(n > 64 ? 64 : n), t, s);
        mask |= tokens[k].mask;
        if (*p == '\0')
            break;
        p++; /* the comma; a trailing one leaves an empty token, which is an error */
    }
    *disabled = mask;
    return CLF_SUCCESS;
}

/* Exact match in a space-separated list (a prefix of a longer name does not count). */
static int ext_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if ((size_t)(e - p) == n && memcmp(p, name, n) == 0)
            return 1;
        p = e;
    }
    return 0;
}

void clf__path_dev_from_info(clf__path_dev *out, const clf_device_info *info)
{
    memset(out, 0, sizeof *out);
    out->host_unified = info->host_unified != 0;
    out->context = info->context_index;
    out->amd_p2p = ext_listed(info->extensions, "cl_amd_copy_buffer_p2p");
    out->pci_known = info->pci_known != 0;
    out->pci_domain = info->pci_domain;
    out->pci_bus = info->pci_bus;
    out->pci_device = info->pci_device;
    out->pci_function = info->pci_function;
    out->cuda_ordinal = -1;
}

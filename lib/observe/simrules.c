/*
 * The grammar of $CLFLEET_SIMULATE (simulate.h): pure, no OpenCL calls, so that the tests
 * and the fuzzer reach every case without a device. Numbers are read here rather than by
 * strtod(), which follows the caller's setlocale() ("0,5" in some) and accepts hex, inf and
 * nan, none of which a rule should mean.
 */
#include "simulate.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A rule may slow a device by at most this much latency: a larger figure is a typo (a
 * missing unit reads as seconds), and would make a test wait for minutes. */
#define MAX_LATENCY_NS (60ull * 1000 * 1000 * 1000)

/* A non-negative decimal number at the start of [s, s + n): digits, an optional '.' and
 * digits (at least one digit in all); its length, or 0 when there is none. */
static size_t parse_decimal(const char *s, size_t n, double *out)
{
    size_t i = 0, digits = 0;
    double v = 0;
    while (i < n && isdigit((unsigned char)s[i])) {
        v = v * 10 + (s[i] - '0');
        i++, digits++;
    }
    if (i < n && s[i] == '.') {
        i++;
        double scale = 0.1;
        while (i < n && isdigit((unsigned char)s[i])) {
            v += (s[i] - '0') * scale;
            scale /= 10;
            i++, digits++;
        }
    }
    if (digits == 0 || !isfinite(v))
        return 0;
    *out = v;
    return i;
}

/* A decimal with a suffix from units (name, factor), case-insensitive; no suffix: dflt. */
typedef struct unit {
    const char *name;
    double factor;
} unit;

static int parse_with_unit(const char *s, size_t n, const unit *units, size_t nunits,
                           double dflt, double *out)
{
    double v;
    size_t k = parse_decimal(s, n, &v);
    if (k == 0)
        return -1;
    const char *u = s + k;
    size_t ulen = n - k;
    if (ulen == 0) {
        *out = v * dflt;
        return 0;
    }
    for (size_t i = 0; i < nunits; i++)
        if (strlen(units[i].name) == ulen && strncasecmp(u, units[i].name, ulen) == 0) {
            *out = v * units[i].factor;
            return 0;
        }
    return -1;
}

static const unit time_units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
static const unit rate_units[] = {{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};

static int key_is(const char *k, size_t klen, const char *key)
{
    return strlen(key) == klen && strncasecmp(k, key, klen) == 0;
}

/* Fail naming the rule (its number from 1, and its text) and what was wrong with it. */
static clf_status bad_rule(size_t rule, const char *s, size_t n, const char *fmt,
                           const char *item, size_t ilen)
{
    char what[200];
    snprintf(what, sizeof what, fmt, (int)(ilen > 64 ? 64 : ilen), item);
    return clf__fail(CLF_ERROR_PARSE, "rule %zu '%.*s': %s (a rule is device=N then any of "
                     "compute=F, latency=T, h2d=B, d2h=B; the words: " CLF__SIM_KEYS ")",
                     rule, (int)(n > 120 ? 120 : n), s, what);
}

/* One rule [s, s + n), the rule'th (from 1). */
static clf_status parse_rule(const char *s, size_t n, size_t rule, clf__sim_rule *r)
{
    enum { K_DEVICE = 1, K_COMPUTE = 2, K_LATENCY = 4, K_H2D = 8, K_D2H = 16 };
    unsigned seen = 0;
    memset(r, 0, sizeof *r);
    r->compute = 1;
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        const char *item = s + i;
        size_t len = j - i;
        i = j + 1;
        while (len && isspace((unsigned char)*item))
            item++, len--;
        while (len && isspace((unsigned char)item[len - 1]))
            len--;
        if (len == 0)
            return bad_rule(rule, s, n, "an empty item%.*s", "", 0);
        const char *eq = memchr(item, '=', len);
        if (!eq)
            return bad_rule(rule, s, n, "'%.*s' is not key=value", item, len);
        size_t klen = (size_t)(eq - item);
        const char *val = eq + 1;
        size_t vlen = len - klen - 1;
        while (klen && isspace((unsigned char)item[klen - 1]))
            klen--;
        while (vlen && isspace((unsigned char)*val))
            val++, vlen--;
        unsigned bit = key_is(item, klen, "device")    ? K_DEVICE
                       : key_is(item, klen, "compute") ? K_COMPUTE
                       : key_is(item, klen, "latency") ? K_LATENCY
                       : key_is(item, klen, "h2d")     ? K_H2D
                       : key_is(item, klen, "d2h")     ? K_D2H
                                                       : 0;
        if (!bit)
            return bad_rule(rule, s, n, "unknown key '%.*s'", item, klen);
        if (seen & bit)
            return bad_rule(rule, s, n, "'%.*s' given twice", item, klen);
        if (bit != K_DEVICE && !(seen & K_DEVICE))
            return bad_rule(rule, s, n, "'%.*s' before device=N", item, klen);
        seen |= bit;
        double v;
        switch (bit) {
        case K_DEVICE: {
            uint64_t d = 0;
            if (vlen == 0 || vlen > 9)
                return bad_rule(rule, s, n, "device '%.*s' is not an index", val, vlen);
            for (size_t k = 0; k < vlen; k++) {
                if (!isdigit((unsigned char)val[k]))
                    return bad_rule(rule, s, n, "device '%.*s' is not an index", val, vlen);
                d = d * 10 + (uint64_t)(val[k] - '0');
            }
            r->device = (size_t)d;
            break;
        }
        case K_COMPUTE:
            if (parse_with_unit(val, vlen, NULL, 0, 1, &v) != 0 || !(v > 0) || v > 1)
                return bad_rule(rule, s, n, "compute '%.*s' is not a factor in (0, 1]", val,
                                vlen);
            r->compute = v;
            break;
        case K_LATENCY:
            if (parse_with_unit(val, vlen, time_units, CLF__ARRAY_LEN(time_units), 1e9, &v) !=
                    0 ||
                v > (double)MAX_LATENCY_NS)
                return bad_rule(rule, s, n,
                                "latency '%.*s' is not a time of at most 60 s (60us, 1ms, "
                                "0.5s; no unit: seconds)",
                                val, vlen);
            r->latency_ns = (uint64_t)llround(v);
            break;
        default:
            if (parse_with_unit(val, vlen, rate_units, CLF__ARRAY_LEN(rate_units), 1, &v) !=
                    0 ||
                !(v >= 1))
                return bad_rule(rule, s, n,
                                "bandwidth '%.*s' is not at least 1 byte/s (bytes per second "
                                "with K, M, G or T: 5G, 800M)",
                                val, vlen);
            if (bit == K_H2D)
                r->h2d = v;
            else
                r->d2h = v;
            break;
        }
    }
    if (!(seen & K_DEVICE))
        return bad_rule(rule, s, n, "no device=N%.*s", "", 0);
    if (seen == K_DEVICE)
        return bad_rule(rule, s, n, "device=N alone changes nothing%.*s", "", 0);
    return CLF_SUCCESS;
}

clf_status clf__sim_parse(const char *s, clf__sim_rule **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s)
        return CLF_SUCCESS;
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ';';
    clf__sim_rule *r = calloc(cap, sizeof *r);
    if (!r)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "CLFLEET_SIMULATE: out of memory");
    size_t k = 0, len = strlen(s), rule = 0;
    for (size_t i = 0; i <= len;) {
        size_t j = i;
        while (j < len && s[j] != ';')
            j++;
        const char *p = s + i;
        size_t m = j - i;
        i = j + 1;
        while (m && isspace((unsigned char)*p))
            p++, m--;
        while (m && isspace((unsigned char)p[m - 1]))
            m--;
        if (m == 0)
            continue; /* "a;;b" and a trailing ';' */
        rule++;
        clf_status st = parse_rule(p, m, rule, &r[k]);
        for (size_t q = 0; st == CLF_SUCCESS && q < k; q++)
            if (r[q].device == r[k].device) {
                char d[24];
                int dl = snprintf(d, sizeof d, "%zu", r[k].device);
                st = bad_rule(rule, p, m, "a second rule for device %.*s", d, (size_t)dl);
            }
        if (st != CLF_SUCCESS) {
            free(r);
            return st;
        }
        k++;
    }
    if (k == 0) {
        free(r);
        r = NULL;
    }
    *out = r;
    *n = k;
    return CLF_SUCCESS;
}

/* Unit tests of the parts of libclfleet that need no OpenCL device: SHA-256,
 * the device selection parser and matcher, and the binary cache. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw, setenv under -std=c11 */
#endif
#include "core/core.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* SHA-256                                                             */
/* ------------------------------------------------------------------ */

static void sha_hex(const void *data, size_t n, char hex[65])
{
    unsigned char d[32];
    clf__sha256 c;
    clf__sha256_init(&c);
    clf__sha256_update(&c, data, n);
    clf__sha256_final(&c, d);
    clf__sha256_hex(d, hex);
}

START_TEST(test_sha_nist)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmn"
         "opqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < CLF__ARRAY_LEN(v); i++) {
        sha_hex(v[i].msg, strlen(v[i].msg), hex);
        ck_assert_str_eq(hex, v[i].hex);
    }
    /* Lengths around the padding boundaries (55/56 bytes fit one block, or not). */
    static const struct {
        size_t n;
        const char *hex;
    } a[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {127, "c57e9278af78fa3cab38667bef4ce29d783787a2f731d4e12200270f0c32320a"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    char buf[128];
    memset(buf, 'a', sizeof buf);
    for (size_t i = 0; i < CLF__ARRAY_LEN(a); i++) {
        sha_hex(buf, a[i].n, hex);
        ck_assert_str_eq(hex, a[i].hex);
    }
}
END_TEST

START_TEST(test_sha_million)
{
    /* One million 'a', fed in uneven pieces. */
    char chunk[997];
    unsigned char d[32];
    char hex[65];
    size_t left = 1000000;
    clf__sha256 c;
    memset(chunk, 'a', sizeof chunk);
    clf__sha256_init(&c);
    while (left > 0) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        clf__sha256_update(&c, chunk, n);
        left -= n;
    }
    clf__sha256_final(&c, d);
    clf__sha256_hex(d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

/* clf_set_error: the message and the status come back, and the message may extend itself. */
START_TEST(test_set_error)
{
    ck_assert_int_eq(clf_set_error(CLF_ERROR_MPI, "rank %d: %s", 3, "gone"), CLF_ERROR_MPI);
    ck_assert_str_eq(clf_last_error(), "rank 3: gone");
    ck_assert_int_eq(clf_set_error(CLF_ERROR_TIMEOUT, "allreduce: %s", clf_last_error()),
                     CLF_ERROR_TIMEOUT);
    ck_assert_str_eq(clf_last_error(), "allreduce: rank 3: gone");
    char big[20000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    clf_set_error(CLF_ERROR_MPI, "%s", big);
    ck_assert_uint_gt(strlen(clf_last_error()), 1000);
    ck_assert_uint_lt(strlen(clf_last_error()), sizeof big - 1);
    clf_clear_error();
    ck_assert_str_eq(clf_last_error(), "");
}
END_TEST

START_TEST(test_sha_incremental)
{
    unsigned char msg[200];
    char want[65], hex[65];
    unsigned char d[32];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 131 + 7);
    sha_hex(msg, sizeof msg, want);
    ck_assert_str_eq(want, "78bbb470b40e45fffa0526d26567d7d3887d082518e712cc05d0a8f4903e231b");
    for (size_t k = 0; k <= 130; k++) {
        clf__sha256 c;
        clf__sha256_init(&c);
        clf__sha256_update(&c, msg, k);
        clf__sha256_update(&c, NULL, 0);
        clf__sha256_update(&c, msg + k, sizeof msg - k);
        clf__sha256_final(&c, d);
        clf__sha256_hex(d, hex);
        ck_assert_msg(strcmp(hex, want) == 0, "split at %zu", k);
        /* And three pieces, the middle one short. */
        size_t m = k + 7 < sizeof msg ? k + 7 : sizeof msg;
        clf__sha256_init(&c);
        clf__sha256_update(&c, msg, k);
        clf__sha256_update(&c, msg + k, m - k);
        clf__sha256_update(&c, msg + m, sizeof msg - m);
        clf__sha256_final(&c, d);
        clf__sha256_hex(d, hex);
        ck_assert_msg(strcmp(hex, want) == 0, "split at %zu and %zu", k, m);
    }
    /* Byte by byte. */
    clf__sha256 c;
    clf__sha256_init(&c);
    for (size_t i = 0; i < sizeof msg; i++)
        clf__sha256_update(&c, msg + i, 1);
    clf__sha256_final(&c, d);
    clf__sha256_hex(d, hex);
    ck_assert_str_eq(hex, want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Device selection                                                    */
/* ------------------------------------------------------------------ */

/* A canonical one-line description of the non-default fields of f. */
static void describe(const clf__filter *f, char *out, size_t cap)
{
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
    out[0] = '\0';
    if (f->types)
        ADD(" types=%#x", f->types);
    if (f->platform[0])
        ADD(" platform=%s", f->platform);
    if (f->vendor[0])
        ADD(" vendor=%s", f->vendor);
    if (f->name[0])
        ADD(" name=%s", f->name);
    if (f->has_index) {
        const char *sep = "=";
        ADD(" idx");
        for (unsigned i = 0; i < CLF__MAX_INDEX; i++) {
            if (!f->index[i])
                continue;
            unsigned j = i;
            while (j + 1 < CLF__MAX_INDEX && f->index[j + 1])
                j++;
            if (j > i)
                ADD("%s%u-%u", sep, i, j);
            else
                ADD("%s%u", sep, i);
            sep = ",";
            i = j;
        }
    }
    if (f->min_cu)
        ADD(" min_cu=%u", f->min_cu);
    if (f->require)
        ADD(" req=%#x", f->require);
    for (size_t i = 0; i < f->nexts; i++)
        ADD("%s%s", i ? "," : " exts=", f->exts[i]);
    if (f->split_units)
        ADD(" split=%u", f->split_units);
    for (size_t i = 0; i < f->nsplit_counts; i++)
        ADD("%s%u", i ? "+" : " split=", f->split_counts[i]);
    if (f->context_per_device)
        ADD(" ctx=dev");
#undef ADD
    ck_assert_uint_lt(n, cap);
    if (n > 0)
        memmove(out, out + 1, n); /* drop the leading space */
}

static char *repeat(char *buf, const char *prefix, const char *unit, size_t times,
                    const char *sep)
{
    strcpy(buf, prefix);
    for (size_t i = 0; i < times; i++) {
        if (i)
            strcat(buf, sep);
        strcat(buf, unit);
    }
    return buf;
}

START_TEST(test_filter_good)
{
    static const struct {
        const char *in, *want;
    } t[] = {
        {"", ""},
        {"   ", ""},
        {";;;", ""},
        {" ; ;", ""},
        {"type=gpu", "types=0x4"},
        {"TYPE = GPU", "types=0x4"},
        {"type=cpu,gpu", "types=0x6"},
        {" type = accelerator , Custom ; ", "types=0x18"},
        {"type=all", "types=0x1e"},
        {"type=gpu,all", "types=0x1e"},
        {"platform=Portable", "platform=Portable"},
        {"Platform = pocl project ", "platform=pocl project"},
        {"vendor=Intel(R), Corp", "vendor=Intel(R), Corp"},
        {"name=a=b", "name=a=b"},
        {"index=3", "idx=3"},
        {"index=0,2-4", "idx=0,2-4"},
        {"index= 1 - 2 , 7", "idx=1-2,7"},
        {"index=255", "idx=255"},
        {"index=0-255", "idx=0-255"},
        {"index=2-2,2", "idx=2"},
        {"index=007", "idx=7"},
        {"min_cu=4", "min_cu=4"},
        {"MIN_CU=4294967295", "min_cu=4294967295"},
        {"require=fp64", "req=0x1"},
        {"require=unified, FP64", "req=0x3"},
        {"require=cl_khr_fp16", "exts=cl_khr_fp16"},
        {"require=cl_khr_fp16,cl_khr_fp16", "exts=cl_khr_fp16"},
        {"split=2", "split=2"},
        {"split=1+2+3", "split=1+2+3"},
        {"split= 1 + 2 ", "split=1+2"},
        {"split=4294967295", "split=4294967295"},
        {"split=NONE", ""},
        {"context=device", "ctx=dev"},
        {"type=cpu;min_cu=2;split=1", "types=0x2 min_cu=2 split=1"},
        {"\ttype=gpu\n;\rname=x\v", "types=0x4 name=x"},
        {"type=gpu;;;index=1;", "types=0x4 idx=1"},
    };
    char got[2048];
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        clf__filter f;
        memset(&f, 0, sizeof f);
        clf_status st = clf__filter_parse(&f, t[i].in);
        ck_assert_msg(st == CLF_SUCCESS, "'%s' failed: %s", t[i].in, clf_last_error());
        describe(&f, got, sizeof got);
        ck_assert_msg(strcmp(got, t[i].want) == 0, "'%s' gave '%s', want '%s'", t[i].in, got,
                      t[i].want);
    }
}
END_TEST

START_TEST(test_filter_good_limits)
{
    char in[8192], want[8192], got[8192];
    clf__filter f;

    /* 127 bytes is the longest text that fits. */
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(clf__filter_parse(&f, repeat(in, "name=", "x", 127, "")), CLF_SUCCESS);
    ck_assert_uint_eq(strlen(f.name), 127);

    /* Eight extensions, the longest 63 bytes. */
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(clf__filter_parse(&f, "require=cl_1,cl_2,cl_3,cl_4,cl_5,cl_6,cl_7"),
                     CLF_SUCCESS);
    repeat(in, "require=cl_", "y", 60, "");
    ck_assert_int_eq(clf__filter_parse(&f, in), CLF_SUCCESS);
    ck_assert_uint_eq(f.nexts, 8);
    ck_assert_uint_eq(strlen(f.exts[7]), 63);
    /* Repeating one already required does not need a ninth slot. */
    ck_assert_int_eq(clf__filter_parse(&f, "require=cl_3"), CLF_SUCCESS);
    ck_assert_uint_eq(f.nexts, 8);

    /* 64 split counts. */
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(clf__filter_parse(&f, repeat(in, "split=", "1", 64, "+")), CLF_SUCCESS);
    describe(&f, got, sizeof got);
    ck_assert_str_eq(got, repeat(want, "split=", "1", 64, "+"));
}
END_TEST

static const struct {
    const char *in, *why;
} bad_cases[] = {
    {"gpu", "expected key=value"},
    {"type", "expected key=value"},
    {"type=gpu;bogus", "expected key=value"},
    {"foo=1", "unknown key"},
    {"=gpu", "unknown key"},
    {"min-cu=1", "unknown key"},
    {"type=", "empty value"},
    {"type=  ", "empty value"},
    {"type=gpus", "unknown device type"},
    {"type=gpu,", "empty list item"},
    {"type=,gpu", "empty list item"},
    {"type=gpu cpu", "unknown device type"},
    {"type=default,gpu", "cannot be combined"},
    {"tyPe=\x01", "unknown device type"},
    {"index=", "empty value"},
    {"index=256", "out of range"},
    {"index=0-256", "out of range"},
    {"index=-1", "negative"},
    {"index=3-1", "above its end"},
    {"index=1-", "missing number"},
    {"index=1--3", "negative"},
    {"index=1-2-3", "not a decimal number"},
    {"index=3x", "not a decimal number"},
    {"index=1,,2", "empty list item"},
    {"index=0-4294967296", "too large"},
    {"min_cu=3x", "not a decimal number"},
    {"min_cu=-1", "negative"},
    {"min_cu=4294967296", "too large"},
    {"min_cu=99999999999999999999", "too large"},
    {"min_cu=+3", "not a decimal number"},
    {"min_cu=1 2", "not a decimal number"},
    {"min_cu=0x10", "not a decimal number"},
    {"min_cu=", "empty value"},
    {"require=fp32", "unknown requirement"},
    {"require=cl_", "unknown requirement"},
    {"require=CL_khr_fp16", "unknown requirement"},
    {"require=cl_a b", "invalid character"},
    {"require=cl_a-b", "invalid character"},
    {"require=fp64,", "empty list item"},
    {"require=cl_1,cl_2,cl_3,cl_4,cl_5,cl_6,cl_7,cl_8,cl_9", "more than 8"},
    {"split=0", "at least 1"},
    {"split=1+0", "at least 1"},
    {"split=+1", "missing number"},
    {"split=1+", "missing number"},
    {"split=1++1", "missing number"},
    {"split=2x", "not a decimal number"},
    {"split=-2", "negative"},
    {"split=nonee", "not a decimal number"},
    {"split=4294967296", "too large"},
    {"context=both", "expected 'device' or 'platform'"},
    {"context=", "empty value"},
    {"type=gpu;;min_cu=x", "not a decimal number"},
};

/* Whether the message should quote the input verbatim: short, one printable term. */
static int quotable(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 48 || s[0] == ' ' || s[n - 1] == ' ' || strchr(s, ';'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

START_TEST(test_filter_bad)
{
    char in[512];
    for (size_t i = 0; i < CLF__ARRAY_LEN(bad_cases); i++) {
        clf__filter f;
        memset(&f, 0, sizeof f);
        clf_clear_error();
        clf_status st = clf__filter_parse(&f, bad_cases[i].in);
        const char *msg = clf_last_error();
        ck_assert_msg(st == CLF_ERROR_PARSE, "'%s' gave %s", bad_cases[i].in,
                      clf_status_name(st));
        ck_assert_msg(strstr(msg, bad_cases[i].why) != NULL, "'%s': message '%s' lacks '%s'",
                      bad_cases[i].in, msg, bad_cases[i].why);
        ck_assert_msg(strncmp(msg, "device selection term '", 23) == 0, "message '%s'", msg);
        if (quotable(bad_cases[i].in))
            ck_assert_msg(strstr(msg, bad_cases[i].in) != NULL, "'%s' not named in '%s'",
                          bad_cases[i].in, msg);
    }

    /* Lengths one past the limits. */
    static const struct {
        const char *prefix, *unit, *sep;
        size_t times;
        const char *why;
    } lim[] = {
        {"platform=", "x", "", 128, "longer than 127"},
        {"vendor=", "x", "", 128, "longer than 127"},
        {"name=", "x", "", 200, "longer than 127"},
        {"require=cl_", "y", "", 61, "longer than 63"},
        {"split=", "1", "+", 65, "more than 64"},
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(lim); i++) {
        clf__filter f;
        memset(&f, 0, sizeof f);
        repeat(in, lim[i].prefix, lim[i].unit, lim[i].times, lim[i].sep);
        ck_assert_int_eq(clf__filter_parse(&f, in), CLF_ERROR_PARSE);
        ck_assert_msg(strstr(clf_last_error(), lim[i].why) != NULL, "%s", clf_last_error());
        /* The quoted term is cut short, so the message stays bounded. */
        ck_assert_uint_lt(strlen(clf_last_error()), 256);
    }
}
END_TEST

/* A key given twice in one selection is an error naming the key, whatever the values, the
 * case of the key or the terms between: neither value is surely the one meant. */
START_TEST(test_filter_key_twice)
{
    static const struct {
        const char *in, *key;
    } t[] = {
        {"split=1;split=2", "split"},
        {"type=cpu;type=gpu", "type"},
        {"type=gpu;type=default", "type"},
        {"TYPE=cpu; name=x ;Type = cpu", "type"},
        {"name=x;name=y", "name"},
        {"platform=a;vendor=b;platform=a", "platform"},
        {"vendor=a;vendor=b", "vendor"},
        {"index=5;index=1", "index"},
        {"min_cu=7;min_cu=0", "min_cu"},
        {"require=fp64;require=cl_a", "require"},
        {"split=2+2;split=4", "split"},
        {"split=4;;split=none", "split"},
        {"context=DEVICE;context=platform", "context"},
    };
    const char *base = "type=cpu;name=n;split=3";
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        clf__filter ref, f;
        memset(&ref, 0, sizeof ref);
        ck_assert_int_eq(clf__filter_parse(&ref, base), CLF_SUCCESS);
        f = ref;
        clf_clear_error();
        clf_status st = clf__filter_parse(&f, t[i].in);
        ck_assert_msg(st == CLF_ERROR_PARSE, "'%s' gave %s", t[i].in, clf_status_name(st));
        char want[64];
        snprintf(want, sizeof want, "key '%s' given twice", t[i].key);
        ck_assert_msg(strstr(clf_last_error(), want) != NULL, "'%s': message '%s' lacks '%s'",
                      t[i].in, clf_last_error(), want);
        ck_assert_msg(memcmp(&f, &ref, sizeof f) == 0, "'%s' changed the filter", t[i].in);
    }
    /* Once per string: a later call may set a key again (options, then the string). */
    clf__filter f;
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(clf__filter_parse(&f, "split=1"), CLF_SUCCESS);
    ck_assert_int_eq(clf__filter_parse(&f, "split=2"), CLF_SUCCESS);
    ck_assert_uint_eq(f.split_units, 2);
}
END_TEST

START_TEST(test_filter_unchanged)
{
    const char *base = "type=cpu;platform=pocl;vendor=v;name=n;index=1-3;min_cu=2;"
                       "require=fp64,cl_khr_fp16;split=1+2;context=device";
    clf__filter ref, f;
    memset(&ref, 0, sizeof ref);
    ck_assert_int_eq(clf__filter_parse(&ref, base), CLF_SUCCESS);
    for (size_t i = 0; i < CLF__ARRAY_LEN(bad_cases); i++) {
        f = ref;
        ck_assert_int_eq(clf__filter_parse(&f, bad_cases[i].in), CLF_ERROR_PARSE);
        ck_assert_msg(memcmp(&f, &ref, sizeof f) == 0, "'%s' changed the filter",
                      bad_cases[i].in);
    }
    /* Valid terms before the bad one must not be applied either. */
    f = ref;
    ck_assert_int_eq(clf__filter_parse(&f, "type=gpu;index=9;split=none;require=cl_x;min_cu=x"),
                     CLF_ERROR_PARSE);
    ck_assert_int_eq(memcmp(&f, &ref, sizeof f), 0);

    /* NULL or empty strings change nothing; a NULL filter is an error. */
    f = ref;
    ck_assert_int_eq(clf__filter_parse(&f, NULL), CLF_SUCCESS);
    ck_assert_int_eq(clf__filter_parse(&f, ""), CLF_SUCCESS);
    ck_assert_int_eq(memcmp(&f, &ref, sizeof f), 0);
    ck_assert_int_eq(clf__filter_parse(NULL, "type=gpu"), CLF_ERROR_NULL_POINTER);

    /* Fields not named keep their values (options first, then the string). */
    f = ref;
    ck_assert_int_eq(clf__filter_parse(&f, "min_cu=5"), CLF_SUCCESS);
    char got[1024];
    describe(&f, got, sizeof got);
    ck_assert_str_eq(got, "types=0x2 platform=pocl vendor=v name=n idx=1-3 min_cu=5 req=0x1 "
                          "exts=cl_khr_fp16 split=1+2 ctx=dev");
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
    /* xorshift64*: reproducible across platforms, unlike rand(). */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static void check_invariants(const clf__filter *f, const char *in)
{
    ck_assert_msg(f->nexts <= CLF__MAX_EXTS && f->nsplit_counts <= CLF__MAX_SPLIT, "%s", in);
    ck_assert(strnlen(f->platform, sizeof f->platform) < sizeof f->platform);
    ck_assert(strnlen(f->vendor, sizeof f->vendor) < sizeof f->vendor);
    ck_assert(strnlen(f->name, sizeof f->name) < sizeof f->name);
    ck_assert((f->types & ~(unsigned)CLF_DEVICE_ALL) == 0);
    ck_assert(!(f->split_units && f->nsplit_counts));
    for (size_t i = 0; i < f->nexts; i++)
        ck_assert(strnlen(f->exts[i], sizeof f->exts[i]) < sizeof f->exts[i]);
    for (size_t i = 0; i < f->nsplit_counts; i++)
        ck_assert_uint_ge(f->split_counts[i], 1);
}

START_TEST(test_filter_fuzz)
{
    static const char special[] = ";=,+- \t0123456789abcx";
    static const char *const words[] = {
        "type", "platform", "vendor", "name", "index", "min_cu", "require", "split",
        "context", "=", ";", ",", "+", "-", " ", "gpu", "cpu", "all", "default", "none",
        "device", "fp64", "unified", "cl_khr_fp16", "cl_", "0", "1", "255", "256",
        "4294967295", "4294967296", "\xff", "\x01", "x",
    };
    char in[200];
    clf__filter f, before;
    unsigned ok = 0;
    memset(&f, 0, sizeof f);
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = 0;
        if (iter % 2 == 0) {
            /* Raw bytes, weighted towards the syntax characters. */
            size_t len = (size_t)(rng() % 40);
            for (; n < len; n++) {
                uint64_t r = rng();
                in[n] = (r & 1) ? special[(r >> 1) % (sizeof special - 1)]
                                : (char)(1 + (r >> 1) % 255);
            }
        } else {
            /* Sequences of grammar words, to get past the first checks. */
            size_t k = (size_t)(rng() % 12);
            for (size_t i = 0; i < k; i++) {
                const char *w = words[rng() % CLF__ARRAY_LEN(words)];
                size_t wl = strlen(w);
                if (n + wl >= sizeof in)
                    break;
                memcpy(in + n, w, wl);
                n += wl;
            }
        }
        in[n] = '\0';
        /* Reset now and then so the filter does not just fill up. */
        if (iter % 64 == 0)
            memset(&f, 0, sizeof f);
        before = f;
        clf_status st = clf__filter_parse(&f, in);
        ck_assert_msg(st == CLF_SUCCESS || st == CLF_ERROR_PARSE, "'%s' gave %d", in, st);
        if (st == CLF_ERROR_PARSE)
            ck_assert_msg(memcmp(&f, &before, sizeof f) == 0, "'%s' changed the filter", in);
        else
            ok++;
        check_invariants(&f, in);
    }
    /* The structured half must reach the success path a fair number of times. */
    ck_assert_uint_gt(ok, 1000);
}
END_TEST

static clf_device_info make_info(int full)
{
    clf_device_info d;
    memset(&d, 0, sizeof d);
    if (full) {
        strcpy(d.name, "pthread-Intel(R) Core(TM) i7");
        strcpy(d.vendor, "GenuineIntel");
        strcpy(d.platform, "Portable Computing Language");
        strcpy(d.platform_vendor, "The pocl project");
        d.type = CLF_DEVICE_CPU;
        d.compute_units = 8;
        d.fp64 = 1;
        d.host_unified = 1;
        d.extensions = "cl_khr_fp64 cl_khr_int64_base_atomics  cl_khr_fp16";
    } else {
        strcpy(d.name, "Some GPU");
        strcpy(d.vendor, "ACME");
        strcpy(d.platform, "ACME OpenCL");
        d.type = CLF_DEVICE_GPU;
        d.compute_units = 1;
        d.extensions = NULL;
    }
    return d;
}

START_TEST(test_filter_match)
{
    static const struct {
        const char *sel;
        int full;
        unsigned index;
        int want;
    } t[] = {
        {"", 1, 0, 1},
        {"", 0, 0, 1},
        {"type=gpu", 1, 0, 1}, /* the type rule is the caller's */
        {"platform=portable", 1, 0, 1},
        {"platform=POCL PROJ", 1, 0, 1}, /* the platform vendor */
        {"platform=nvidia", 1, 0, 0},
        {"platform=acme", 0, 0, 1},
        {"vendor=intel", 1, 0, 1},
        {"vendor=amd", 1, 0, 0},
        {"vendor=GenuineIntel!", 1, 0, 0},
        {"name=core(tm) I7", 1, 0, 1},
        {"name=i9", 1, 0, 0},
        {"index=0-2", 1, 2, 1},
        {"index=0-2", 1, 3, 0},
        {"index=5", 1, 255, 0},
        {"index=255", 1, 255, 1},
        {"index=0-255", 1, 256, 0},
        {"index=0-255", 1, 100000, 0},
        {"", 1, 100000, 1},
        {"min_cu=8", 1, 0, 1},
        {"min_cu=9", 1, 0, 0},
        {"min_cu=2", 0, 0, 0},
        {"require=fp64,unified", 1, 0, 1},
        {"require=fp64", 0, 0, 0},
        {"require=unified", 0, 0, 0},
        {"require=cl_khr_fp16", 1, 0, 1},
        {"require=cl_khr_fp1", 1, 0, 0},
        {"require=cl_khr_fp64,cl_khr_fp16", 1, 0, 1},
        {"require=cl_khr_fp16,cl_nope", 1, 0, 0},
        {"require=cl_khr_fp16", 0, 0, 0},
        {"name=intel;vendor=intel;platform=pocl;min_cu=8;index=4;require=fp64", 1, 4, 1},
        {"name=intel;vendor=intel;platform=pocl;min_cu=8;index=4;require=fp64", 1, 5, 0},
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        clf__filter f;
        clf_device_info d = make_info(t[i].full);
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(clf__filter_parse(&f, t[i].sel), CLF_SUCCESS);
        ck_assert_msg(clf__filter_match(&f, &d, t[i].index) == t[i].want,
                      "'%s' on info %d index %u: want %d", t[i].sel, t[i].full, t[i].index,
                      t[i].want);
    }

    /* Fields without a terminating NUL are read only up to their size. */
    clf__filter f;
    clf_device_info d = make_info(0);
    memset(d.name, 'x', sizeof d.name);
    memset(&f, 0, sizeof f);
    ck_assert_int_eq(clf__filter_parse(&f, "name=XXX"), CLF_SUCCESS);
    ck_assert(clf__filter_match(&f, &d, 0));
    ck_assert_int_eq(clf__filter_parse(&f, "name=xy"), CLF_SUCCESS);
    ck_assert(!clf__filter_match(&f, &d, 0));

    ck_assert(!clf__filter_match(NULL, &d, 0));
    ck_assert(!clf__filter_match(&f, NULL, 0));
}
END_TEST

/* Why a device is left out: each failing term or option field, with the device's own value. */
START_TEST(test_filter_why)
{
    static const struct {
        const char *sel;
        int full;
        unsigned index;
        const char *want; /* NULL: it passes */
    } t[] = {
        {"", 1, 0, NULL},
        {"type=cpu", 1, 0, NULL},
        {"type=gpu,accelerator", 1, 0, "type=gpu,accelerator (it is a cpu device)"},
        {"platform=nvidia", 1, 0,
         "platform=nvidia (its platform is 'Portable Computing Language', vendor 'The pocl "
         "project')"},
        {"vendor=amd", 1, 0, "vendor=amd (its vendor is 'GenuineIntel')"},
        {"name=i9", 1, 0, "name=i9 (its name is 'pthread-Intel(R) Core(TM) i7')"},
        {"index=0-1,5", 1, 3, "index=0-1,5 (its index is 3)"},
        {"min_cu=9", 1, 0, "min_cu=9 (it has 8)"},
        {"require=fp64", 0, 0, "require=fp64 (it has no double precision)"},
        {"require=unified", 0, 0, "require=unified (it has no memory shared with the host)"},
        {"require=cl_khr_fp16,cl_nope", 1, 0, "require=cl_nope (it lacks that extension)"},
        /* Every reason, in the order of the grammar. */
        {"type=gpu;min_cu=9;name=i9", 1, 0,
         "type=gpu (it is a cpu device), name=i9 (its name is 'pthread-Intel(R) Core(TM) i7'), "
         "min_cu=9 (it has 8)"},
        /* The minimum is of the root device, before a split (min_cu=2;split=1: the devices
         * that give two or more sub-devices), and the reason says so. */
        {"min_cu=2;split=1", 1, 0, NULL},
        {"min_cu=8;split=4+1", 1, 0, NULL},
        {"min_cu=9;split=1", 1, 0, "min_cu=9 (it has 8; the minimum is of the device before "
                                   "split=1)"},
        {"min_cu=9;split=4+1", 1, 0,
         "min_cu=9 (it has 8; the minimum is of the device before split=4+1)"},
        {"min_cu=2;split=1", 0, 0, "min_cu=2 (it has 1)"}, /* a GPU is not split */
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        clf__filter f;
        clf_device_info d = make_info(t[i].full);
        char why[512];
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(clf__filter_parse(&f, t[i].sel), CLF_SUCCESS);
        const char *got = clf__filter_why(&f, &d, t[i].index, why, sizeof why);
        if (!t[i].want)
            ck_assert_msg(got == NULL, "'%s': want a match, got '%s'", t[i].sel, why);
        else
            ck_assert_msg(got && strcmp(got, t[i].want) == 0, "'%s': want '%s', got '%s'",
                          t[i].sel, t[i].want, got ? got : "(match)");
        /* clf__filter_match() agrees, the type aside. */
        f.types = 0;
        ck_assert_int_eq(clf__filter_match(&f, &d, t[i].index),
                         clf__filter_why(&f, &d, t[i].index, why, sizeof why) == NULL);
    }

    /* Fields set through clf_fleet_options are named as the caller wrote them. */
    clf__filter f;
    clf_device_info d = make_info(1);
    char why[512];
    memset(&f, 0, sizeof f);
    f.types = CLF_DEVICE_GPU;
    f.min_cu = 9;
    f.require = CLF_CAP_FP64;
    f.from_options = CLF__FROM_TYPES | CLF__FROM_MIN_CU;
    ck_assert_str_eq(clf__filter_why(&f, &d, 0, why, sizeof why),
                     "device_types=gpu (it is a cpu device), min_compute_units=9 (it has 8)");
    d.fp64 = 0;
    f.types = 0;
    f.min_cu = 0;
    f.require_from_options = CLF_CAP_FP64;
    ck_assert_str_eq(clf__filter_why(&f, &d, 0, why, sizeof why),
                     "require=CLF_CAP_FP64 (it has no double precision)");
    f.require = 0;
    f.min_cu = 9;
    f.split_counts[0] = 3;
    f.split_counts[1] = 1;
    f.nsplit_counts = 2;
    f.from_options = CLF__FROM_MIN_CU | CLF__FROM_SPLIT;
    ck_assert_str_eq(clf__filter_why(&f, &d, 0, why, sizeof why),
                     "min_compute_units=9 (it has 8; the minimum is of the device before "
                     "split_cpu_counts={3,1})");
    /* A short buffer cuts the reason, and still says the device fails. */
    ck_assert_str_eq(clf__filter_why(&f, &d, 0, why, 8), "min_com");
    ck_assert_ptr_null(clf__filter_why(&f, &d, 0, NULL, 0));
}
END_TEST

/* A split that asks more units than the device has is refused, naming the device. */
START_TEST(test_filter_split_why)
{
    static const struct {
        const char *sel;
        int full;
        const char *want;
    } t[] = {
        {"", 1, NULL},
        {"split=8", 1, NULL},
        {"split=5", 1, NULL}, /* one sub-device of 5; PoCL leaves 3 units out */
        {"split=9", 1,
         "cannot split device 4 'pthread-Intel(R) Core(TM) i7' (cpu, 8 compute units): split=9 "
         "asks for 9 units per sub-device"},
        {"split=4+4", 1, NULL},
        {"split=4+4+1", 1,
         "cannot split device 4 'pthread-Intel(R) Core(TM) i7' (cpu, 8 compute units): "
         "split=4+4+1 asks for 9 units in all"},
        {"split=9", 0, NULL}, /* only CPU devices are split */
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        clf__filter f;
        clf_device_info d = make_info(t[i].full);
        char why[512];
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(clf__filter_parse(&f, t[i].sel), CLF_SUCCESS);
        const char *got = clf__filter_split_why(&f, &d, 4, why, sizeof why);
        if (!t[i].want)
            ck_assert_msg(got == NULL, "'%s': want no error, got '%s'", t[i].sel, why);
        else
            ck_assert_msg(got && strcmp(got, t[i].want) == 0, "'%s': want '%s', got '%s'",
                          t[i].sel, t[i].want, got ? got : "(none)");
    }
    clf__filter f;
    clf_device_info d = make_info(1);
    char why[512];
    memset(&f, 0, sizeof f);
    d.compute_units = 1;
    f.split_units = 2;
    f.from_options = CLF__FROM_SPLIT;
    ck_assert_str_eq(clf__filter_split_why(&f, &d, 0, why, sizeof why),
                     "cannot split device 0 'pthread-Intel(R) Core(TM) i7' (cpu, 1 compute "
                     "unit): split_cpu_units=2 asks for 2 units per sub-device");
}
END_TEST

/* The indices a selection names beyond the devices there are. */
START_TEST(test_filter_missing)
{
    static const struct {
        const char *sel;
        size_t ndev, want;
        const char *list;
    } t[] = {
        {"", 0, 0, ""},
        {"type=cpu", 3, 0, ""},
        {"index=0-2", 3, 0, ""},
        {"index=2-3", 2, 2, "2-3"},
        {"index=0,2-3,7", 3, 2, "3,7"},
        {"index=0-255", 0, 256, "0-255"},
        {"index=255", 255, 1, "255"},
        {"index=255", 256, 0, ""},
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        clf__filter f;
        char list[64];
        memset(&f, 0, sizeof f);
        ck_assert_int_eq(clf__filter_parse(&f, t[i].sel), CLF_SUCCESS);
        ck_assert_uint_eq(clf__filter_missing(&f, t[i].ndev, list, sizeof list), t[i].want);
        ck_assert_str_eq(list, t[i].list);
        ck_assert_uint_eq(clf__filter_missing(&f, t[i].ndev, NULL, 0), t[i].want);
    }
}
END_TEST

/* The on/off variables take every word their message lists, and the message lists every
 * word they take. */
START_TEST(test_env_words)
{
    static const char *const on[] = {"", "1", "on", "yes", "true", "ON", "Yes", "TRUE"};
    static const char *const off[] = {"0", "off", "no", "false", "OFF", "No", "False"};
    int v = -1;
    for (size_t i = 0; i < CLF__ARRAY_LEN(on); i++) {
        ck_assert_int_eq(clf__env_metrics(on[i], &v), CLF_SUCCESS);
        ck_assert_msg(v == 0, "'%s' turns metrics off", on[i]);
    }
    for (size_t i = 0; i < CLF__ARRAY_LEN(off); i++) {
        ck_assert_int_eq(clf__env_metrics(off[i], &v), CLF_SUCCESS);
        ck_assert_msg(v == 1, "'%s' leaves metrics on", off[i]);
    }
    ck_assert_int_eq(clf__env_metrics("maybe", &v), CLF_ERROR_PARSE);
    ck_assert_str_eq(clf_last_error(), "CLFLEET_METRICS: 'maybe' is not 1, on, yes, true, 0, off, "
                                       "no or false (any case)");
    ck_assert_int_eq(clf__env_staging("sometimes", &v), CLF_ERROR_PARSE);
    ck_assert_str_eq(clf_last_error(),
                     "CLFLEET_TRANSFER_STAGING: 'sometimes' is not auto or pipeline (any case)");
    ck_assert_int_eq(clf__env_metrics("1", NULL), CLF_ERROR_NULL_POINTER);

    /* $CLFLEET_HOST_STAGING: three words, any case; unset and empty mean auto. */
    static const struct {
        const char *v;
        int mode;
    } hs[] = {{NULL, CLF__HOST_STAGING_AUTO},     {"", CLF__HOST_STAGING_AUTO},
              {"AUTO", CLF__HOST_STAGING_AUTO},   {"direct", CLF__HOST_STAGING_DIRECT},
              {"Pinned", CLF__HOST_STAGING_PINNED}};
    for (size_t i = 0; i < CLF__ARRAY_LEN(hs); i++) {
        v = -1;
        ck_assert_int_eq(clf__env_host_staging(hs[i].v, &v), CLF_SUCCESS);
        ck_assert_msg(v == hs[i].mode, "'%s' gave %d", hs[i].v ? hs[i].v : "(unset)", v);
    }
    ck_assert_int_eq(clf__env_host_staging("pin", &v), CLF_ERROR_PARSE);
    ck_assert_str_eq(clf_last_error(),
                     "CLFLEET_HOST_STAGING: 'pin' is not auto, direct or pinned (any case)");
    ck_assert_int_eq(clf__env_host_staging("pinned", NULL), CLF_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(test_env_cache_max)
{
    static const struct {
        const char *v;
        uint64_t want;
    } good[] = {
        {NULL, 0}, {"", 0}, {"0", 0}, {"1", 1}, {"1048576", 1048576}, {"64k", 65536},
        {"64K", 65536}, {"500M", 500ull << 20}, {"2g", 2ull << 30}, {"0G", 0},
        {"18446744073709551615", UINT64_MAX}, {"17179869183G", 17179869183ull << 30},
    };
    static const char *const bad[] = {"-1", " 1", "1 ", "1.5G", "G", "1T", "1KB", "0x10",
                                      "18446744073709551616", "17179869184G", "1e9", "+5"};
    uint64_t v = 7;
    for (size_t i = 0; i < CLF__ARRAY_LEN(good); i++) {
        ck_assert_msg(clf__env_cache_max(good[i].v, &v) == CLF_SUCCESS, "'%s' refused",
                      good[i].v ? good[i].v : "(null)");
        ck_assert_msg(v == good[i].want, "'%s' gives %llu", good[i].v ? good[i].v : "(null)",
                      (unsigned long long)v);
    }
    for (size_t i = 0; i < CLF__ARRAY_LEN(bad); i++) {
        v = 7;
        ck_assert_msg(clf__env_cache_max(bad[i], &v) == CLF_ERROR_PARSE, "'%s' accepted", bad[i]);
        ck_assert_msg(strstr(clf_last_error(), "CLFLEET_CACHE_MAX: '") && v == 0,
                      "'%s': %s", bad[i], clf_last_error());
    }
    ck_assert_int_eq(clf__env_cache_max("1", NULL), CLF_ERROR_NULL_POINTER);
}
END_TEST

START_TEST(test_ext_listed)
{
    static const struct {
        const char *list, *name;
        int want;
    } t[] = {
        {NULL, "cl_a", 0},
        {"cl_a", NULL, 0},
        {"cl_a", "", 0},
        {"", "cl_a", 0},
        {"   ", "cl_a", 0},
        {"cl_a", "cl_a", 1},
        {"cl_ab", "cl_a", 0},
        {"cl_a", "cl_ab", 0},
        {"xcl_a", "cl_a", 0},
        {" cl_a  cl_b ", "cl_b", 1},
        {"cl_b cl_a", "cl_a", 1},
        {"cl_a cl_b", "cl_a cl_b", 0},
        {"x\tcl_b\n", "cl_b", 1},
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++)
        ck_assert_msg(clf__ext_listed(t[i].list, t[i].name) == t[i].want, "case %zu", i);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Binary cache                                                        */
/* ------------------------------------------------------------------ */

static char tmpdir[PATH_MAX];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void tmp_setup(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/clfleet-test-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    umask(022);
}

static void tmp_teardown(void)
{
    if (tmpdir[0]) {
        /* Restore search permission in case a test removed it. */
        chmod(tmpdir, 0700);
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    tmpdir[0] = '\0';
}

static char *sub(const char *name)
{
    static char buf[PATH_MAX + 64];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, n, fp), n);
    ck_assert_int_eq(fclose(fp), 0);
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    static unsigned char buf[65536];
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    *n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* No temporary file may be left behind in dir. */
static void assert_no_temp(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL)
        ck_assert_msg(strncmp(e->d_name, ".tmp-", 5) != 0, "left over: %s", e->d_name);
    closedir(d);
}

static void make_key(unsigned char key[32], const char *source)
{
    clf__cache_key_parts p = {source, "-cl-fast-relaxed-math", "dev", "drv 1.0", "plat", NULL};
    clf__cache_key(key, &p);
}

START_TEST(test_cache_key)
{
    static const char *const base[5] = {"src", "-O2", "dev", "drv", "plat"};
    unsigned char k0[32], k[32];
    char hex[65];
    const char *v[5], *inc = NULL;
#define KEY(out)                                                                \
    do {                                                                        \
        clf__cache_key_parts p_ = {v[0], v[1], v[2], v[3], v[4], inc};          \
        clf__cache_key(out, &p_);                                               \
    } while (0)

    memcpy(v, base, sizeof v);
    KEY(k0);
    KEY(k);
    ck_assert_int_eq(memcmp(k0, k, 32), 0); /* deterministic */
    for (int i = 0; i < 5; i++) {
        static const char *const alt[] = {"src ", "", NULL, "Src"};
        for (size_t a = 0; a < CLF__ARRAY_LEN(alt); a++) {
            memcpy(v, base, sizeof v);
            v[i] = alt[a];
            KEY(k);
            ck_assert_msg(memcmp(k0, k, 32) != 0, "part %d variant %zu", i, a);
        }
    }
    /* The digest of the included files: absent (NULL), the key is as before it was keyed;
     * present, each digest is another key. */
    memcpy(v, base, sizeof v);
    inc = "";
    KEY(k);
    ck_assert_int_ne(memcmp(k0, k, 32), 0);
    unsigned char kinc[32];
    inc = "0123";
    KEY(kinc);
    ck_assert_int_ne(memcmp(kinc, k, 32), 0);
    ck_assert_int_ne(memcmp(kinc, k0, 32), 0);
    inc = NULL;
    /* Moving the boundary between two neighbouring parts changes the key. */
    for (int i = 0; i < 4; i++) {
        unsigned char k1[32];
        memcpy(v, base, sizeof v);
        v[i] = "ab";
        v[i + 1] = "c";
        KEY(k);
        v[i] = "a";
        v[i + 1] = "bc";
        KEY(k1);
        ck_assert_msg(memcmp(k1, k, 32) != 0, "parts %d and %d", i, i + 1);
    }
    /* NULL is not "". */
    unsigned char knull[32], kempty[32];
    for (int i = 0; i < 5; i++)
        v[i] = NULL;
    KEY(knull);
    for (int i = 0; i < 5; i++)
        v[i] = "";
    KEY(kempty);
    ck_assert_int_ne(memcmp(knull, kempty, 32), 0);
    /* A NULL parts pointer is all parts NULL. */
    clf__cache_key(k, NULL);
    ck_assert_int_eq(memcmp(knull, k, 32), 0);
    /* The exact encoding, computed independently (Python hashlib + struct '<Q'). */
    v[0] = "a";
    v[1] = NULL;
    v[2] = "";
    v[3] = "dev";
    v[4] = "plat";
    KEY(k);
    clf__sha256_hex(k, hex);
    ck_assert_str_eq(hex, "464a69ace5dbf06cd2f136007e9d5cbeb5b55f0dcc67344b23cda391bbfafd7f");
#undef KEY
}
END_TEST

START_TEST(test_cache_paths)
{
    unsigned char key[32];
    char hex[65], want[256];
    for (int i = 0; i < 32; i++)
        key[i] = (unsigned char)(i * 9);
    clf__sha256_hex(key, hex);
    char *p = clf__cache_path("/some/dir", key);
    snprintf(want, sizeof want, "/some/dir/%s.clfbin", hex);
    ck_assert_str_eq(p, want);
    free(p);
    ck_assert_ptr_null(clf__cache_path(NULL, key));

    /* The default directory, in order of preference. Forked, so setenv is private;
     * saved and restored anyway for CK_FORK=no. */
    const char *names[] = {"CLFLEET_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        const char *s = getenv(names[i]);
        saved[i] = s ? strdup(s) : NULL;
    }
    static const struct {
        const char *env[3]; /* NULL: unset */
        const char *want;
    } t[] = {
        {{"/c", "/x", "/h"}, "/c"},
        {{"", "/x", "/h"}, "/x/clfleet"},
        {{NULL, "/x", "/h"}, "/x/clfleet"},
        {{NULL, "rel", "/h"}, "/h/.cache/clfleet"},
        {{NULL, "", "/h"}, "/h/.cache/clfleet"},
        {{NULL, NULL, "/h"}, "/h/.cache/clfleet"},
        {{NULL, NULL, ""}, NULL},
        {{NULL, NULL, NULL}, NULL},
        {{"rel/ok", NULL, NULL}, "rel/ok"},
    };
    for (size_t i = 0; i < CLF__ARRAY_LEN(t); i++) {
        for (int j = 0; j < 3; j++) {
            if (t[i].env[j])
                setenv(names[j], t[i].env[j], 1);
            else
                unsetenv(names[j]);
        }
        char *d = clf__cache_default_dir();
        if (t[i].want)
            ck_assert_msg(d && strcmp(d, t[i].want) == 0, "case %zu: %s", i, d ? d : "(null)");
        else
            ck_assert_msg(d == NULL, "case %zu: %s", i, d);
        free(d);
    }
    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        else
            unsetenv(names[i]);
        free(saved[i]);
    }
}
END_TEST

/* CLFLEET_CACHE_MAX: the least recently used entries go first (a load counts as a use),
 * the entry just stored stays even alone above the limit, other files are not counted or
 * removed. */
START_TEST(test_cache_trim)
{
    unsigned char key[5][32], payload[1000], *bin;
    size_t len;
    char src[32];
    memset(payload, 0x5a, sizeof payload);
    for (int i = 0; i < 5; i++) {
        snprintf(src, sizeof src, "kernel void k%d() {}", i);
        make_key(key[i], src);
        ck_assert_int_eq(clf__cache_store(tmpdir, key[i], payload, sizeof payload), CLF_SUCCESS);
        /* Entry i written i minutes after the first. */
        char *path = clf__cache_path(tmpdir, key[i]);
        struct timespec t[2] = {{1000000 + 60 * i, 0}, {1000000 + 60 * i, 0}};
        ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
        free(path);
    }
    write_bytes(sub("notes.txt"), payload, sizeof payload);
    const uint64_t entry = 84 + sizeof payload;
    /* Within the limit: nothing goes. */
    clf__cache_trim(tmpdir, 5 * entry, NULL);
    for (int i = 0; i < 5; i++) {
        char *path = clf__cache_path(tmpdir, key[i]);
        ck_assert_msg(exists(path), "entry %d removed under the limit", i);
        free(path);
    }
    /* Loading entry 0 makes it the most recent: 1 and 2 are then the oldest. */
    ck_assert_int_eq(clf__cache_load(tmpdir, key[0], &bin, &len), 1);
    free(bin);
    clf__cache_trim(tmpdir, 3 * entry + 10, key[4]);
    static const int kept[5] = {1, 0, 0, 1, 1};
    for (int i = 0; i < 5; i++) {
        char *path = clf__cache_path(tmpdir, key[i]);
        ck_assert_msg(exists(path) == kept[i], "entry %d %s", i, kept[i] ? "removed" : "kept");
        free(path);
    }
    ck_assert(exists(sub("notes.txt")));
    /* A limit below one entry keeps the one named. */
    clf__cache_trim(tmpdir, 1, key[3]);
    for (int i = 0; i < 5; i++) {
        char *path = clf__cache_path(tmpdir, key[i]);
        ck_assert_msg(exists(path) == (i == 3), "entry %d", i);
        free(path);
    }
    ck_assert(exists(sub("notes.txt")));
    clf__cache_trim(tmpdir, 1, NULL);
    char *path = clf__cache_path(tmpdir, key[3]);
    ck_assert(!exists(path));
    free(path);
    clf__cache_trim(sub("missing"), 1, NULL); /* no directory: nothing to do */
    clf__cache_trim(NULL, 1, NULL);
}
END_TEST

START_TEST(test_cache_roundtrip)
{
    unsigned char key[32], key2[32], payload[5000], *bin;
    size_t len;
    struct stat st;
    char dir[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (unsigned char)(i * 7 + 1);
    make_key(key, "kernel void k() {}");
    make_key(key2, "kernel void k2() {}");
    snprintf(dir, sizeof dir, "%s/a/b//c/", tmpdir);

    ck_assert_int_eq(clf__cache_load(dir, key, &bin, &len), 0); /* nothing yet */
    ck_assert_ptr_null(bin);
    ck_assert_int_eq(clf__cache_store(dir, key, payload, sizeof payload), CLF_SUCCESS);
    ck_assert_int_eq(clf__cache_load(dir, key, &bin, &len), 1);
    ck_assert_uint_eq(len, sizeof payload);
    ck_assert_int_eq(memcmp(bin, payload, len), 0);
    free(bin);
    ck_assert_int_eq(clf__cache_load(dir, key2, &bin, &len), 0);

    /* Modes: entry 0600, every created directory 0700. */
    char *path = clf__cache_path(dir, key);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(st.st_size, 84 + sizeof payload);
    ck_assert_int_eq(stat(sub("a"), &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0700);
    ck_assert_int_eq(stat(sub("a/b/c"), &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0700);

    /* Replacing an entry, and an empty payload. */
    ck_assert_int_eq(clf__cache_store(dir, key, payload + 1, 10), CLF_SUCCESS);
    ck_assert_int_eq(clf__cache_load(dir, key, &bin, &len), 1);
    ck_assert_uint_eq(len, 10);
    ck_assert_int_eq(memcmp(bin, payload + 1, 10), 0);
    free(bin);
    ck_assert_int_eq(clf__cache_store(dir, key2, NULL, 0), CLF_SUCCESS);
    ck_assert_int_eq(clf__cache_load(dir, key2, &bin, &len), 1);
    ck_assert_uint_eq(len, 0);
    ck_assert_ptr_nonnull(bin);
    free(bin);
    assert_no_temp(sub("a/b/c"));
    free(path);

    /* Bad arguments. */
    ck_assert_int_eq(clf__cache_store(NULL, key, payload, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cache_store(dir, NULL, payload, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cache_store(dir, key, NULL, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cache_store("", key, payload, 1), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf__cache_load(NULL, key, &bin, &len), 0);
    ck_assert_int_eq(clf__cache_load(dir, NULL, &bin, &len), 0);
    ck_assert_int_eq(clf__cache_load(dir, key, NULL, &len), 0);
}
END_TEST

/* Store a small entry and return its bytes (in a static buffer). */
static unsigned char *small_entry(const unsigned char key[32], const char *path, size_t *n)
{
    static const unsigned char payload[] = "binary of 23 bytes....";
    ck_assert_int_eq(clf__cache_store(tmpdir, key, payload, sizeof payload), CLF_SUCCESS);
    unsigned char *b = read_bytes(path, n);
    ck_assert_uint_eq(*n, 84 + sizeof payload);
    return b;
}

static void assert_miss_and_removed(const unsigned char key[32], const char *path,
                                    const char *what, size_t at)
{
    unsigned char *bin = (unsigned char *)1;
    size_t len = 1;
    ck_assert_msg(clf__cache_load(tmpdir, key, &bin, &len) == 0, "%s %zu: hit", what, at);
    ck_assert_msg(bin == NULL && len == 0, "%s %zu: outputs not cleared", what, at);
    ck_assert_msg(!exists(path), "%s %zu: invalid entry not removed", what, at);
}

START_TEST(test_cache_corrupt)
{
    unsigned char key[32], entry[256], *bin;
    size_t n, len;
    make_key(key, "corrupt");
    char *path = clf__cache_path(tmpdir, key);
    unsigned char *first = small_entry(key, path, &n);
    memcpy(entry, first, n);

    for (size_t cut = 0; cut < n; cut++) {
        write_bytes(path, entry, cut);
        assert_miss_and_removed(key, path, "truncated to", cut);
    }
    for (size_t at = 0; at < n; at++) {
        for (unsigned mask = 1; mask < 256; mask <<= 7) { /* 0x01 and 0x80 */
            entry[at] ^= (unsigned char)mask;
            write_bytes(path, entry, n);
            entry[at] ^= (unsigned char)mask;
            assert_miss_and_removed(key, path, "flipped byte", at);
        }
    }
    /* One byte too many. */
    entry[n] = 0;
    write_bytes(path, entry, n + 1);
    assert_miss_and_removed(key, path, "appended", 0);

    /* Garbage of many lengths, including a header announcing a huge payload. */
    for (size_t g = 1; g < 300; g += 7) {
        unsigned char junk[300];
        for (size_t i = 0; i < g; i++)
            junk[i] = (unsigned char)rng();
        write_bytes(path, junk, g);
        assert_miss_and_removed(key, path, "garbage", g);
    }
    for (int shift = 30; shift < 64; shift += 3) {
        for (int i = 0; i < 8; i++)
            entry[44 + i] = (unsigned char)((((uint64_t)1 << shift) + 1) >> (8 * i));
        write_bytes(path, entry, n);
        assert_miss_and_removed(key, path, "huge length", (size_t)shift);
    }

    /* The pristine entry still loads. */
    small_entry(key, path, &n);
    ck_assert_int_eq(clf__cache_load(tmpdir, key, &bin, &len), 1);
    free(bin);
    free(path);
}
END_TEST

START_TEST(test_cache_wrong_key)
{
    unsigned char a[32], b[32], *bin;
    size_t n, len;
    make_key(a, "a");
    make_key(b, "b");
    char *pa = clf__cache_path(tmpdir, a), *pb = clf__cache_path(tmpdir, b);
    small_entry(a, pa, &n);
    ck_assert_int_eq(rename(pa, pb), 0);
    ck_assert_int_eq(clf__cache_load(tmpdir, a, &bin, &len), 0);
    assert_miss_and_removed(b, pb, "renamed", 0);
    free(pa);
    free(pb);
}
END_TEST

START_TEST(test_cache_not_a_file)
{
    unsigned char key[32], *bin;
    size_t len;
    make_key(key, "dir");
    char *path = clf__cache_path(tmpdir, key);

    /* A directory at the entry's path: a miss, left alone by the load; a store replaces it
     * when it is empty. */
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(clf__cache_load(tmpdir, key, &bin, &len), 0);
    ck_assert_ptr_null(bin);
    ck_assert(exists(path));
    ck_assert_int_eq(clf__cache_store(tmpdir, key, (const unsigned char *)"x", 1), CLF_SUCCESS);
    assert_no_temp(tmpdir);
    ck_assert_int_eq(clf__cache_load(tmpdir, key, &bin, &len), 1);
    ck_assert_uint_eq(len, 1);
    free(bin);
    ck_assert_int_eq(unlink(path), 0);

    /* One that cannot be removed (it holds a file) is left alone: nothing stored, no
     * temporary file left, no error (the cache only saves time; reported once). */
    char inner[1024];
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    write_bytes(inner, "k", 1);
    ck_assert_int_eq(clf__cache_store(tmpdir, key, (const unsigned char *)"x", 1), CLF_SUCCESS);
    ck_assert_int_eq(clf__cache_store(tmpdir, key, (const unsigned char *)"x", 1), CLF_SUCCESS);
    assert_no_temp(tmpdir);
    ck_assert(exists(inner));
    ck_assert_int_eq(clf__cache_load(tmpdir, key, &bin, &len), 0);
    ck_assert_int_eq(unlink(inner), 0);
    ck_assert_int_eq(rmdir(path), 0);

    /* A FIFO: a miss, without blocking in open(); a store replaces it. */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(clf__cache_load(tmpdir, key, &bin, &len), 0);
    ck_assert(exists(path));
    ck_assert_int_eq(clf__cache_store(tmpdir, key, (const unsigned char *)"x", 1), CLF_SUCCESS);
    ck_assert_int_eq(clf__cache_load(tmpdir, key, &bin, &len), 1);
    free(bin);
    ck_assert_int_eq(unlink(path), 0);
    free(path);

    /* A directory that cannot be created (a parent is a regular file), even as root. */
    write_bytes(sub("file"), "x", 1);
    ck_assert_int_eq(clf__cache_store(sub("file"), key, (const unsigned char *)"x", 1),
                     CLF_ERROR_IO);
    ck_assert_int_eq(clf__cache_store(sub("file/sub/dir"), key, (const unsigned char *)"x", 1),
                     CLF_ERROR_IO);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), sub("file")));
    ck_assert_int_eq(clf__cache_load(sub("file/sub/dir"), key, &bin, &len), 0);
    ck_assert(exists(sub("file")));

    /* Unwritable directory; root ignores permissions, so only check as a user. */
    if (geteuid() != 0) {
        ck_assert_int_eq(mkdir(sub("ro"), 0500), 0);
        ck_assert_int_eq(clf__cache_store(sub("ro"), key, (const unsigned char *)"x", 1),
                         CLF_ERROR_IO);
        ck_assert_int_eq(clf__cache_store(sub("ro/new"), key, (const unsigned char *)"x", 1),
                         CLF_ERROR_IO);
        chmod(sub("ro"), 0700);
    }
}
END_TEST

/* What the loader says of each kind of bad entry: rejected (and removed) for a torn,
 * garbage or foreign one; a plain miss, left alone, for nothing there or an entry it cannot
 * read. Unreadable is tested with a directory in the entry's place, since the tests run as
 * root, who reads a chmod 000 file; a chmod 000 file is tested too when not root. */
START_TEST(test_cache_rejected)
{
    unsigned char key[32], other[32], *bin = NULL, junk[200];
    size_t n, len;
    int rejected = -1;
    make_key(key, "rejected");
    make_key(other, "another device's program");
    char *path = clf__cache_path(tmpdir, key), *opath = clf__cache_path(tmpdir, other);

    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 0);
    ck_assert_int_eq(rejected, 0); /* missing */

    unsigned char *e = small_entry(key, path, &n);
    unsigned char whole[256];
    memcpy(whole, e, n);
    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 1);
    ck_assert_int_eq(rejected, 0);
    free(bin);

    write_bytes(path, whole, n / 2); /* truncated */
    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 0);
    ck_assert_int_eq(rejected, 1);
    ck_assert(!exists(path));

    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)rng();
    write_bytes(path, junk, sizeof junk); /* garbage */
    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 0);
    ck_assert_int_eq(rejected, 1);
    ck_assert(!exists(path));

    /* The entry of another key (another device) at this key's path. */
    small_entry(other, opath, &n);
    ck_assert_int_eq(rename(opath, path), 0);
    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 0);
    ck_assert_int_eq(rejected, 1);
    ck_assert(!exists(path));

    /* Unreadable: a directory in its place is a miss, left alone. */
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 0);
    ck_assert_int_eq(rejected, 0);
    ck_assert(exists(path));
    ck_assert_int_eq(rmdir(path), 0);
    if (geteuid() != 0) {
        small_entry(key, path, &n);
        ck_assert_int_eq(chmod(path, 0), 0);
        ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 0);
        ck_assert_int_eq(rejected, 0);
        ck_assert(exists(path));
        ck_assert_int_eq(unlink(path), 0);
    }
    /* Rebuilt: a new store loads again. */
    small_entry(key, path, &n);
    ck_assert_int_eq(clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected), 1);
    ck_assert_int_eq(len, n - 84);
    free(bin);
    free(path);
    free(opath);
}
END_TEST

/* Several processes filling one cache directory at once, with the same and different
 * keys, entries of up to 384 KiB (many pages, so a torn read would show), and now and
 * then one removed (as a user clearing the cache): no load may ever find a rejected
 * (half-written) entry, and every hit must hold exactly its key's payload. */
enum { CACHE_PROCS = 4, CACHE_ITERS = 400, CACHE_SHARED = 4, CACHE_OWN = 2 };

static size_t proc_payload(const char *name, unsigned char *buf, size_t cap)
{
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    size_t n = 1 + h % cap;
    for (size_t i = 0; i < n; i++) {
        h ^= h << 13, h ^= h >> 17, h ^= h << 5;
        buf[i] = (unsigned char)h;
    }
    return n;
}

static int cache_child(int id)
{
    enum { CAP = 384 << 10 };
    unsigned char *want = malloc(CAP), *bin;
    uint32_t seed = 0x9e3779b9u * (uint32_t)(id + 1);
    unsigned hits = 0, misses = 0, stores = 0;
    if (!want)
        return 10;
    for (int it = 0; it < CACHE_ITERS; it++) {
        char name[2][32];
        for (int k = 0; k < 2; k++) {
            seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
            unsigned pick = seed % (CACHE_SHARED + CACHE_OWN);
            if (pick < CACHE_SHARED)
                snprintf(name[k], sizeof name[k], "shared-%u", pick);
            else
                snprintf(name[k], sizeof name[k], "own-%d-%u", id, pick);
        }
        unsigned char key[32];
        make_key(key, name[0]);
        size_t n = proc_payload(name[0], want, CAP);
        if (clf__cache_store(tmpdir, key, want, n) != CLF_SUCCESS) {
            fprintf(stderr, "process %d: store %s: %s\n", id, name[0], clf_last_error());
            return 11;
        }
        stores++;
        make_key(key, name[1]);
        n = proc_payload(name[1], want, CAP);
        size_t len = 0;
        int rejected = 0;
        int hit = clf__cache_load_ex(tmpdir, key, &bin, &len, &rejected);
        if (rejected) {
            fprintf(stderr, "process %d iteration %d: entry %s rejected (half-written?)\n", id,
                    it, name[1]);
            return 12;
        }
        if (hit && (len != n || memcmp(bin, want, n) != 0)) {
            fprintf(stderr, "process %d iteration %d: entry %s has the wrong payload\n", id, it,
                    name[1]);
            return 13;
        }
        hits += (unsigned)hit;
        misses += (unsigned)!hit;
        free(bin);
        if (it % 37 == 36) { /* clear one shared entry: the others see "missing" */
            char *p;
            make_key(key, "shared-0");
            if ((p = clf__cache_path(tmpdir, key)))
                unlink(p);
            free(p);
        }
    }
    free(want);
    fprintf(stderr, "cache process %d: %u stores, %u hits, %u misses\n", id, stores, hits,
            misses);
    return hits > 0 ? 0 : 14;
}

START_TEST(test_cache_processes)
{
    pid_t pid[CACHE_PROCS];
    for (int i = 0; i < CACHE_PROCS; i++) {
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0)
            _exit(cache_child(i));
    }
    for (int i = 0; i < CACHE_PROCS; i++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "cache process %d: status 0x%x", i, status);
    }
    assert_no_temp(tmpdir);
}
END_TEST

/* ---- $CLFLEET_SIMULATE's grammar (observe/simrules.c) -------------------------------------- */

static const struct {
    const char *in;
    size_t n;
    clf__sim_rule r[3];
} sim_good[] = {
    {"", 0, {{0}}},
    {"  ", 0, {{0}}},
    {";", 0, {{0}}},
    {" ; ;", 0, {{0}}},
    {"device=1,compute=0.02", 1, {{1, 0.02, 0, 0, 0}}},
    {"device=1,compute=0.02,latency=60us", 1, {{1, 0.02, 60000, 0, 0}}},
    {"device=0,latency=1ms", 1, {{0, 1, 1000000, 0, 0}}},
    {"device=0,latency=0.5s", 1, {{0, 1, 500000000, 0, 0}}},
    {"device=0,latency=2", 1, {{0, 1, 2000000000, 0, 0}}},
    {"device=0,latency=0", 1, {{0, 1, 0, 0, 0}}},
    {"device=0,latency=250ns", 1, {{0, 1, 250, 0, 0}}},
    {"device=0,latency=1.5US", 1, {{0, 1, 1500, 0, 0}}},
    {"device=0,latency=60s", 1, {{0, 1, 60000000000ull, 0, 0}}},
    {"device=2,h2d=5G", 1, {{2, 1, 0, 5e9, 0}}},
    {"device=2,d2h=800M", 1, {{2, 1, 0, 0, 8e8}}},
    {"device=2,h2d=1.5k,d2h=2T", 1, {{2, 1, 0, 1500, 2e12}}},
    {"device=2,h2d=100", 1, {{2, 1, 0, 100, 0}}},
    {"device=2,h2d=1", 1, {{2, 1, 0, 1, 0}}},
    {"device=0,compute=1", 1, {{0, 1, 0, 0, 0}}},
    {"device=0,compute=.5", 1, {{0, 0.5, 0, 0, 0}}},
    {"device=0,compute=1.", 1, {{0, 1, 0, 0, 0}}},
    {"device=0,compute=0.000001", 1, {{0, 1e-6, 0, 0, 0}}},
    {" DEVICE = 3 , Compute = 0.25 ; ", 1, {{3, 0.25, 0, 0, 0}}},
    {"device=1,compute=0.5;device=0,latency=1ms", 2,
     {{1, 0.5, 0, 0, 0}, {0, 1, 1000000, 0, 0}}},
    {"device=0,compute=0.5;;device=1,d2h=1G;device=2,latency=7us;", 3,
     {{0, 0.5, 0, 0, 0}, {1, 1, 0, 0, 1e9}, {2, 1, 7000, 0, 0}}},
    {"device=123456789,compute=0.1", 1, {{123456789, 0.1, 0, 0, 0}}},
    {"device=1,d2h=3G,h2d=2G,latency=10ms,compute=0.125", 1, {{1, 0.125, 10000000, 2e9, 3e9}}},
};

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b) + 1e-12;
}

START_TEST(test_sim_good)
{
    for (size_t i = 0; i < CLF__ARRAY_LEN(sim_good); i++) {
        clf__sim_rule *r = NULL;
        size_t n = 99;
        clf_status st = clf__sim_parse(sim_good[i].in, &r, &n);
        ck_assert_msg(st == CLF_SUCCESS, "'%s': %s: %s", sim_good[i].in, clf_status_name(st),
                      clf_last_error());
        ck_assert_msg(n == sim_good[i].n, "'%s': %zu rules", sim_good[i].in, n);
        ck_assert_msg((n == 0) == (r == NULL), "'%s': rules %p for %zu", sim_good[i].in,
                      (void *)r, n);
        for (size_t k = 0; k < n; k++) {
            const clf__sim_rule *w = &sim_good[i].r[k];
            ck_assert_msg(r[k].device == w->device && near(r[k].compute, w->compute) &&
                              r[k].latency_ns == w->latency_ns && near(r[k].h2d, w->h2d) &&
                              near(r[k].d2h, w->d2h),
                          "'%s' rule %zu: device %zu compute %g latency %llu h2d %g d2h %g",
                          sim_good[i].in, k, r[k].device, r[k].compute,
                          (unsigned long long)r[k].latency_ns, r[k].h2d, r[k].d2h);
        }
        free(r);
    }
    /* NULL (the variable unset) is no rules. */
    clf__sim_rule *r = (clf__sim_rule *)1;
    size_t n = 5;
    ck_assert_int_eq(clf__sim_parse(NULL, &r, &n), CLF_SUCCESS);
    ck_assert_ptr_null(r);
    ck_assert_uint_eq(n, 0);
}
END_TEST

static const struct {
    const char *in, *why;
} sim_bad[] = {
    {"device=1", "alone changes nothing"},
    {"compute=0.5", "before device=N"},
    {"latency=1ms,device=1", "before device=N"},
    {"device=1,foo=3", "unknown key 'foo'"},
    {"device=1,compute=0.5,bandwidth=5G", "unknown key 'bandwidth'"},
    {"device=1,compute", "'compute' is not key=value"},
    {"device=1,,compute=0.5", "an empty item"},
    {"device=1,compute=0.5,", "an empty item"},
    {"device=x,compute=0.5", "device 'x' is not an index"},
    {"device=-1,compute=0.5", "device '-1' is not an index"},
    {"device=,compute=0.5", "device '' is not an index"},
    {"device=1234567890,compute=0.5", "is not an index"},
    {"device=1.0,compute=0.5", "is not an index"},
    {"device=1,device=2,compute=0.5", "'device' given twice"},
    {"device=1,compute=0.5,compute=0.2", "'compute' given twice"},
    {"device=1,compute=0", "compute '0' is not a factor in (0, 1]"},
    {"device=1,compute=0.0", "is not a factor"},
    {"device=1,compute=1.5", "compute '1.5' is not a factor"},
    {"device=1,compute=2", "is not a factor"},
    {"device=1,compute=-0.5", "is not a factor"},
    {"device=1,compute=0.5x", "is not a factor"},
    {"device=1,compute=1e-2", "is not a factor"},
    {"device=1,compute=0,5", "is not a factor"},
    {"device=1,compute=nan", "is not a factor"},
    {"device=1,compute=inf", "is not a factor"},
    {"device=1,compute=.", "is not a factor"},
    {"device=1,compute=", "is not a factor"},
    {"device=1,latency=", "latency '' is not a time"},
    {"device=1,latency=1h", "latency '1h' is not a time"},
    {"device=1,latency=ms", "is not a time"},
    {"device=1,latency=-1ms", "is not a time"},
    {"device=1,latency=61s", "at most 60 s"},
    {"device=1,latency=60001ms", "at most 60 s"},
    {"device=1,latency=1 ms", "is not a time"},
    {"device=1,h2d=0", "bandwidth '0' is not at least 1 byte/s"},
    {"device=1,h2d=0.5", "is not at least 1 byte/s"},
    {"device=1,h2d=5X", "bandwidth '5X' is not"},
    {"device=1,d2h=5GB", "bandwidth '5GB' is not"},
    {"device=1,d2h=G", "is not at least"},
    {"device=1,d2h=-5G", "is not at least"},
    {"device=1,compute=0.5;device=1,latency=1ms", "a second rule for device 1"},
    {"device=1,compute=0.5;device=01,latency=1ms", "a second rule for device 1"},
    {"device=0,compute=0.5;bogus", "rule 2 'bogus'"},
    {"device=0,compute=0.5;;device=1", "rule 2 'device=1'"},
};

START_TEST(test_sim_bad)
{
    for (size_t i = 0; i < CLF__ARRAY_LEN(sim_bad); i++) {
        clf__sim_rule *r = (clf__sim_rule *)1;
        size_t n = 7;
        clf_clear_error();
        clf_status st = clf__sim_parse(sim_bad[i].in, &r, &n);
        const char *msg = clf_last_error();
        ck_assert_msg(st == CLF_ERROR_PARSE, "'%s' gave %s", sim_bad[i].in, clf_status_name(st));
        ck_assert_msg(r == NULL && n == 0, "'%s': outputs not cleared", sim_bad[i].in);
        ck_assert_msg(strstr(msg, sim_bad[i].why) != NULL, "'%s': message '%s' lacks '%s'",
                      sim_bad[i].in, msg, sim_bad[i].why);
        /* Every refusal names the rule and the word list. */
        ck_assert_msg(strncmp(msg, "rule ", 5) == 0 && strstr(msg, CLF__SIM_KEYS) != NULL,
                      "'%s': message '%s'", sim_bad[i].in, msg);
    }
}
END_TEST

/* Generated: every unit and suffix with a range of numbers, the value read exactly as the
 * same text in C would give it. */
START_TEST(test_sim_generated)
{
    static const struct {
        const char *unit;
        double ns;
    } tu[] = {{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"MS", 1e6}};
    static const struct {
        const char *suf;
        double f;
    } bu[] = {{"", 1}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
    char in[128];
    for (unsigned v = 0; v <= 2000; v += 7)
        for (size_t u = 0; u < CLF__ARRAY_LEN(tu); u++) {
            double val = v / 40.0; /* 0 .. 50, with fractions */
            snprintf(in, sizeof in, "device=%u,latency=%u.%03u%s", v % 5, v / 40,
                     (v % 40) * 25, tu[u].unit);
            clf__sim_rule *r = NULL;
            size_t n = 0;
            clf_status st = clf__sim_parse(in, &r, &n);
            int too_long = val * tu[u].ns > 60e9;
            ck_assert_msg(st == (too_long ? CLF_ERROR_PARSE : CLF_SUCCESS), "'%s': %s", in,
                          clf_last_error());
            if (st == CLF_SUCCESS) {
                ck_assert_uint_eq(n, 1);
                ck_assert_uint_eq(r[0].device, v % 5);
                ck_assert_msg(fabs((double)r[0].latency_ns - val * tu[u].ns) <= 1, "'%s': %llu",
                              in, (unsigned long long)r[0].latency_ns);
            }
            free(r);
        }
    for (unsigned v = 0; v <= 3000; v += 11)
        for (size_t b = 0; b < CLF__ARRAY_LEN(bu); b++) {
            double val = v / 100.0;
            snprintf(in, sizeof in, "device=7,%s=%u.%02u%s", v % 2 ? "h2d" : "d2h", v / 100,
                     v % 100, bu[b].suf);
            clf__sim_rule *r = NULL;
            size_t n = 0;
            clf_status st = clf__sim_parse(in, &r, &n);
            int ok = val * bu[b].f >= 1;
            ck_assert_msg(st == (ok ? CLF_SUCCESS : CLF_ERROR_PARSE), "'%s': %s", in,
                          clf_last_error());
            if (ok) {
                double got = v % 2 ? r[0].h2d : r[0].d2h, other = v % 2 ? r[0].d2h : r[0].h2d;
                ck_assert_msg(near(got, val * bu[b].f) && other == 0, "'%s': %g", in, got);
            }
            free(r);
        }
    for (unsigned v = 0; v <= 1200; v++) {
        snprintf(in, sizeof in, "device=0,compute=%u.%03u", v / 1000, v % 1000);
        clf__sim_rule *r = NULL;
        size_t n = 0;
        clf_status st = clf__sim_parse(in, &r, &n);
        int ok = v > 0 && v <= 1000;
        ck_assert_msg(st == (ok ? CLF_SUCCESS : CLF_ERROR_PARSE), "'%s'", in);
        if (ok)
            ck_assert_msg(near(r[0].compute, v / 1000.0), "'%s': %g", in, r[0].compute);
        free(r);
    }
    /* Many rules: one per device. */
    size_t o = 0;
    char many[4096];
    for (unsigned d = 0; d < 64; d++)
        o += (size_t)snprintf(many + o, sizeof many - o, "%sdevice=%u,compute=0.5", d ? ";" : "",
                              63 - d);
    clf__sim_rule *r = NULL;
    size_t n = 0;
    ck_assert_int_eq(clf__sim_parse(many, &r, &n), CLF_SUCCESS);
    ck_assert_uint_eq(n, 64);
    for (unsigned d = 0; d < 64; d++)
        ck_assert_uint_eq(r[d].device, 63 - d);
    free(r);
}
END_TEST

/* Random strings of grammar words and bytes: success or a parse error with a message, and
 * on success every rule within its ranges (ASan/valgrind check the rest). */
START_TEST(test_sim_fuzz)
{
    static const char *const words[] = {
        "device", "compute", "latency", "h2d", "d2h", "=", ";", ",", " ", ".", "0", "1", "5",
        "60", "0.5", "us", "ms", "s", "ns", "K", "M", "G", "T", "x", "-", "\xff", "\t",
        /* Whole items, so that whole rules come out too. */
        "device=1,", "device=0,", "compute=0.5", "latency=60us", "h2d=5G", "d2h=1M",
    };
    char in[160];
    unsigned ok = 0;
    for (int iter = 0; iter < 100000; iter++) {
        size_t n = 0, k = (size_t)(rng() % 16);
        for (size_t i = 0; i < k; i++) {
            const char *w = words[rng() % CLF__ARRAY_LEN(words)];
            size_t wl = strlen(w);
            if (n + wl >= sizeof in)
                break;
            memcpy(in + n, w, wl);
            n += wl;
        }
        in[n] = '\0';
        clf__sim_rule *r = NULL;
        size_t nr = 0;
        clf_clear_error();
        clf_status st = clf__sim_parse(in, &r, &nr);
        ck_assert_msg(st == CLF_SUCCESS || st == CLF_ERROR_PARSE, "'%s': %s", in,
                      clf_status_name(st));
        ck_assert_msg(st == CLF_SUCCESS || clf_last_error()[0], "'%s': no message", in);
        for (size_t i = 0; i < nr; i++) {
            ck_assert(r[i].compute > 0 && r[i].compute <= 1);
            ck_assert(r[i].latency_ns <= 60000000000ull);
            ck_assert(r[i].h2d == 0 || r[i].h2d >= 1);
            ck_assert(r[i].d2h == 0 || r[i].d2h >= 1);
            for (size_t j = 0; j < i; j++)
                ck_assert(r[i].device != r[j].device);
        }
        ok += st == CLF_SUCCESS && nr > 0;
        free(r);
    }
    /* The words reach past the first checks now and then. */
    ck_assert_uint_gt(ok, 0);
}
END_TEST

/* ---- the range parameter's source rewrite (core/rangearg.c) ---- */

#define RA CLF__RANGE_ARG_NAME
#define RD "const ulong4 " CLF__RANGE_ARG_NAME

/* Rewrite src and compare with want (NULL: no rewrite); nkernels kernels found. */
static void rewrite_is(const char *src, const char *want, size_t nkernels)
{
    char *out = NULL, **names = NULL;
    size_t n = 0;
    int named = 0;
    ck_assert_int_eq(clf__range_rewrite(src, &out, &names, &n, &named), CLF_SUCCESS);
    if (!want)
        ck_assert_ptr_null(out);
    else
        ck_assert_msg(out && !strcmp(out, want), "rewrote\n%s\ninto\n%s\nwant\n%s", src,
                      out ? out : "(nothing)", want);
    ck_assert_uint_eq(n, nkernels);
    /* Lines are kept: as many newlines as before. */
    if (out) {
        size_t a = 0, b = 0;
        for (const char *c = src; *c; c++)
            a += *c == '\n';
        for (const char *c = out; *c; c++)
            b += *c == '\n';
        ck_assert_uint_eq(a, b);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(out);
}

START_TEST(test_range_rewrite_helpers)
{
    /* Nothing names the sizes: no rewrite. */
    rewrite_is("float f(float x) { return x; }\n"
               "__kernel void k(__global float *o) { o[get_global_id(0)] = f(1); }\n",
               NULL, 0);
    /* A helper that calls get_global_size, one that does not (left alone), one that calls
     * the first through another; a prototype before the definition; two calls in one
     * expression; a call in another call's arguments. */
    rewrite_is("size_t n(void);\n"
               "float keep(float x) { return x * 2; }\n"
               "size_t n(void) { return get_global_size(0); }\n"
               "size_t twice(uint d) { return n() + n() + keep(d); }\n"
               "__kernel void k(__global uint *o)\n"
               "{ o[0] = twice(n()) + keep(1); }\n",
               "size_t n(" RD ");\n"
               "float keep(float x) { return x * 2; }\n"
               "size_t n(" RD ") { return get_global_size(0); }\n"
               "size_t twice(uint d, " RD ") { return n(" RA ") + n(" RA ") + keep(d); }\n"
               "__kernel void k(__global uint *o, " RD ")\n"
               "{ o[0] = twice(n(" RA "), " RA ") + keep(1); }\n",
               1);
    /* Through a macro's text, both ways: a macro naming the built-in makes its users need
     * the parameter, and a macro calling a helper passes it. Comments, strings and
     * initializers are no functions. */
    rewrite_is("#define G get_num_groups(0)\n"
               "uint groups() { return G; }\n"
               "#define CALL(x) (groups() + (x))\n"
               "/* uint fake(void) { return G; } */\n"
               "__constant char s[] = \"groups()\";\n"
               "__constant uint t = sizeof(uint);\n"
               "uint user(uint a) { return CALL(a); }\n"
               "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\n"
               "void k(__global uint *o) { o[0] = user(2) + CALL(1); }\n",
               "#define G get_num_groups(0)\n"
               "uint groups(" RD ") { return G; }\n"
               "#define CALL(x) (groups(" RA ") + (x))\n"
               "/* uint fake(void) { return G; } */\n"
               "__constant char s[] = \"groups()\";\n"
               "__constant uint t = sizeof(uint);\n"
               "uint user(uint a, " RD ") { return CALL(a); }\n"
               "__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\n"
               "void k(__global uint *o, " RD ") { o[0] = user(2, " RA ") + CALL(1); }\n",
               1);
    /* A kernel that calls a kernel passes it too; a struct at file scope is no function. */
    rewrite_is("typedef struct { float x; } P;\n"
               "kernel void a(global uint *o) { o[0] = get_global_size(0); }\n"
               "kernel void b(global uint *o) { a(o); }\n",
               "typedef struct { float x; } P;\n"
               "kernel void a(global uint *o, " RD ") { o[0] = get_global_size(0); }\n"
               "kernel void b(global uint *o, " RD ") { a(o, " RA "); }\n",
               2);
}
END_TEST

/* The broadcast store scan (clf__source_param_stores): 0 none, 1 doubt, 2 seen. */
START_TEST(test_param_stores)
{
    static const char gemm[] =
        "float dotrow(__global float *m, int k) { return m[k] * 2.0f; }\n"
        "#define AT(m, i) ((m)[i])\n"
        "__kernel void gemm(__global float *a, __global float *b, __global float *c, int n)\n"
        "{\n"
        "    int i = get_global_id(0), j = get_global_id(1);\n"
        "    float s = 0.0f;\n"
        "    for (int k = 0; k < n; k++)\n"
        "        s += a[i * n + k] * b[k * n + j] + dotrow(b, k) + (b[k] <= 0.0f) + "
        "(b[k] == s);\n"
        "    c[i * n + j] = s;\n"
        "    a[0] += 1.0f;\n"
        "}\n"
        "__kernel void vec(__global float4 *v, __global float *o, __global int *p, "
        "__global float *q)\n"
        "{\n"
        "    o[0] = v[1].x + vload4(0, q).y;\n"
        "    v[2].y = 1.0f;\n"
        "    p[3]++;\n"
        "}\n"
        "__kernel void sneaky(__global float *x, __global float *y, __global float *z, "
        "__global int *w)\n"
        "{\n"
        "    __global float *alias = x;\n"
        "    alias[0] = 1.0f;\n"
        "    y[0] = AT(z, 1);\n"
        "    atomic_add(w, 1);\n"
        "    vstore4((float4)(0.0f), 0, y);\n"
        "}\n"
        "__kernel void med(__global const uchar *in, __global uchar *out, __global int *width,\n"
        "                  __global int *height)\n"
        "{\n"
        "    int W = *width, H = height[0];\n"
        "    out[0] = in[W * H - 1];\n"
        "}\n";
    ck_assert_int_eq(clf__source_param_stores(gemm, "gemm", 1), 0); /* b: reads only */
    ck_assert_int_eq(clf__source_param_stores(gemm, "gemm", 0), 2); /* a[0] += */
    ck_assert_int_eq(clf__source_param_stores(gemm, "gemm", 2), 2); /* c[..] = */
    ck_assert_int_eq(clf__source_param_stores(gemm, "vec", 0), 2);  /* v[2].y = */
    ck_assert_int_eq(clf__source_param_stores(gemm, "vec", 2), 2);  /* p[3]++ */
    ck_assert_int_eq(clf__source_param_stores(gemm, "vec", 3), 0);  /* vload4 */
    ck_assert_int_eq(clf__source_param_stores(gemm, "sneaky", 0), 1); /* an alias */
    ck_assert_int_eq(clf__source_param_stores(gemm, "sneaky", 2), 1); /* in a macro */
    ck_assert_int_eq(clf__source_param_stores(gemm, "sneaky", 3), 2); /* atomic_add */
    ck_assert_int_eq(clf__source_param_stores(gemm, "sneaky", 1), 2); /* y[0] =, vstore */
    ck_assert_int_eq(clf__source_param_stores(gemm, "med", 2), 0);    /* *width read */
    ck_assert_int_eq(clf__source_param_stores(gemm, "med", 3), 0);
    ck_assert_int_eq(clf__source_param_stores(gemm, "nosuch", 0), 1);
    /* A helper that stores through the pointer it is given. */
    static const char helper[] =
        "void put(__global float *d, float v) { d[0] = v; }\n"
        "float get(__global float *d) { return d[0]; }\n"
        "__kernel void k(__global float *r, __global float *w) { put(w, get(r)); }\n";
    ck_assert_int_eq(clf__source_param_stores(helper, "k", 0), 0);
    ck_assert_int_eq(clf__source_param_stores(helper, "k", 1), 2);
}
END_TEST

static Suite *pure_suite(void)
{
    Suite *s = suite_create("pure");
    TCase *tc;

    tc = tcase_create("set_error");
    tcase_add_test(tc, test_set_error);
    suite_add_tcase(s, tc);
    tc = tcase_create("sha256");
    tcase_add_test(tc, test_sha_nist);
    tcase_add_test(tc, test_sha_million);
    tcase_add_test(tc, test_sha_incremental);
    suite_add_tcase(s, tc);

    tc = tcase_create("filter");
    tcase_add_test(tc, test_filter_good);
    tcase_add_test(tc, test_filter_good_limits);
    tcase_add_test(tc, test_filter_bad);
    tcase_add_test(tc, test_filter_key_twice);
    tcase_add_test(tc, test_filter_unchanged);
    tcase_add_test(tc, test_filter_match);
    tcase_add_test(tc, test_filter_why);
    tcase_add_test(tc, test_filter_split_why);
    tcase_add_test(tc, test_filter_missing);
    tcase_add_test(tc, test_env_words);
    tcase_add_test(tc, test_env_cache_max);
    tcase_add_test(tc, test_ext_listed);
    suite_add_tcase(s, tc);

    tc = tcase_create("filter_fuzz");
    tcase_set_timeout(tc, 600); /* valgrind runs it ~50 times slower */
    tcase_add_test(tc, test_filter_fuzz);
    suite_add_tcase(s, tc);

    tc = tcase_create("simulate");
    tcase_set_timeout(tc, 600); /* valgrind */
    tcase_add_test(tc, test_sim_good);
    tcase_add_test(tc, test_sim_bad);
    tcase_add_test(tc, test_sim_generated);
    tcase_add_test(tc, test_sim_fuzz);
    suite_add_tcase(s, tc);

    tc = tcase_create("rangearg");
    tcase_add_test(tc, test_range_rewrite_helpers);
    tcase_add_test(tc, test_param_stores);
    suite_add_tcase(s, tc);

    tc = tcase_create("cache");
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cache_key);
    tcase_add_test(tc, test_cache_paths);
    tcase_add_test(tc, test_cache_roundtrip);
    tcase_add_test(tc, test_cache_trim);
    tcase_add_test(tc, test_cache_corrupt);
    tcase_add_test(tc, test_cache_wrong_key);
    tcase_add_test(tc, test_cache_not_a_file);
    tcase_add_test(tc, test_cache_rejected);
    tcase_add_test(tc, test_cache_processes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(pure_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

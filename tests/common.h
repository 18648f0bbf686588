/* Shared by the device test suites. */
#ifndef CLF_TESTS_COMMON_H
#define CLF_TESTS_COMMON_H

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clfleet.h"

/* The PoCL devices the tests use, whatever else the machine has. */
#define TEST_CPUS "type=cpu;platform=portable"

/* Two sub-devices of one compute unit each, of one root device: they really run at once. */
#define FLEET2 TEST_CPUS ";name=pthread;index=1;split=1"
/* Every pthread device split into single units (4 on the test machine); suites use 3 of them
 * or all. */
#define FLEET4 TEST_CPUS ";name=pthread;split=1"

/*
 * CLFLEET_TEST_DEVICES=SELECTION runs the suites on other devices than PoCL's (a GPU, issue
 * 27): wherever a suite makes a fleet of FLEET4 through test_fleet(), test_env_open() or
 * test_fault_fleet(), and where test_run()/test_run_fleet4_fleet2() probe FLEET4, the
 * selection takes its place. It must give at least 4 devices (DEV3 uses indices 0, 2 and 3),
 * e.g. "type=gpu,cpu;split=1" (the GPU and the CPU's units). FLEET2's role (exactly two
 * devices) takes CLFLEET_TEST_DEVICES_PAIR=SELECTION when set, e.g. "type=gpu,cpu" with
 * POCL_DEVICES=pthread (the GPU and one CPU device), else CLFLEET_TEST_DEVICES itself.
 * A selection that gives too few devices (or, for the pair, not exactly two) skips the suite
 * with a message naming the variable, or fails it under CLFLEET_REQUIRE_DEVICES=1: never a
 * silent pass. The pair is checked for every suite (some make FLEET2 fleets without probing
 * them), so set both. Each substitution is said on stderr once.
 *
 * It applies to FLEET2 and FLEET4 only: TEST_CPUS and the selections a suite names itself
 * (PoCL's basic device, root CPU devices, sub-device splits) stay on PoCL, which must then be
 * installed beside the GPU. It is meant for test_launch, test_gemm, test_collective and
 * test_array (tools/gpu-check.sh runs them so); the other suites that make FLEET2/FLEET4
 * fleets through these helpers (test_kernel, test_alaunch, test_builtins, test_layout,
 * test_textbook, test_window, test_pipeline, test_sync, test_argcheck, test_fault) take it
 * too, but some of their tests count on PoCL sub-devices.
 */
static inline const char *test_selection(const char *selection)
{
    static int said[2];
    const char *all = getenv("CLFLEET_TEST_DEVICES"), *pair = getenv("CLFLEET_TEST_DEVICES_PAIR");
    /* Read through volatile: a suite passing another constant selection must not make gcc
     * warn that the comparison is constant (-Wstring-compare). */
    const char *volatile fleet2 = FLEET2, *volatile fleet4 = FLEET4;
    int two = selection && !strcmp(selection, fleet2);
    if (!selection || !all || !*all || (!two && strcmp(selection, fleet4)))
        return selection;
    const char *use = two && pair && *pair ? pair : all;
    if (!said[two]) {
        said[two] = 1;
        fprintf(stderr, "note: CLFLEET_TEST_DEVICES: the suite's %s fleets use '%s'\n",
                two ? "two-device (FLEET2)" : "four-device (FLEET4)", use);
    }
    return use;
}

/* Three devices of FLEET4 in an order that is not the fleet's, so report indices are checked
 * too. */
static const size_t DEV3[] = {2, 0, 3};

/* A fleet configuration a device test loops over. */
typedef struct fleet_cfg {
    const char *selection;
    int context_per_device;
    const size_t *devices; /* the devices a call uses (launch or GEMM), or NULL for the fleet */
    size_t ndev;           /* how many devices the call uses */
    const char *label;
} fleet_cfg;

/*
 * Check records the location of every passing ck_assert in its message channel (a system
 * call each): millions of element comparisons would take longer than the work tested. This
 * only calls into Check when the condition fails.
 */
#define expect(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

/* A cheap integer hash (lowbias32): test data, and the reference of kernels that use it. */
static inline uint32_t lowbias32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* A fleet of one configuration and a program built from src on it (device suites). */
typedef struct test_env {
    const fleet_cfg *cfg;
    clf_fleet *f;
    clf_program *p;
} test_env;

static inline void test_env_open(test_env *e, const fleet_cfg *cfg, const char *src);
static inline void test_env_close(test_env *e);

/* Marsaglia's xorshift64 (13, 7, 17): advances *s, which must not be 0, and returns it. */
static inline uint64_t xorshift64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The same in OpenCL C, to start a kernel source string with. */
#define TEST_CL_LOWBIAS32                                                                          \
    "uint lowbias32(uint x)\n"                                                                     \
    "{\n"                                                                                          \
    "    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;\n"          \
    "    return x;\n"                                                                              \
    "}\n"

/*
 * Jacobi steps (test_alaunch, test_window, mpi/test_mpi_array): jac1 (1D, an end unit stands
 * in for its missing neighbour), jac1p (1D periodic: the halo holds the wrapped units, at
 * global indices -1 and n) and jac2 (2D 5-point, the border kept).
 */
#define TEST_CL_JACOBI                                                                             \
    "kernel void jac1(global const float *in, global float *out)\n"                                \
    "{\n"                                                                                          \
    "    size_t i = get_global_id(0), n = get_global_size(0);\n"                                   \
    "    float c = in[i];\n"                                                                       \
    "    float l = i > 0 ? in[i - 1] : c, r = i + 1 < n ? in[i + 1] : c;\n"                        \
    "    out[i] = ((l + c) + (c + r)) * 0.25f;\n"                                                  \
    "}\n"                                                                                          \
    "kernel void jac1p(global const float *in, global float *out)\n"                               \
    "{\n"                                                                                          \
    "    long i = get_global_id(0);\n"                                                             \
    "    out[i] = ((in[i - 1] + in[i]) + (in[i] + in[i + 1])) * 0.25f;\n"                          \
    "}\n"                                                                                          \
    "kernel void jac2(global const float *in, global float *out)\n"                                \
    "{\n"                                                                                          \
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"                                     \
    "    size_t w = get_global_size(0), h = get_global_size(1), i = y * w + x;\n"                  \
    "    float c = in[i];\n"                                                                       \
    "    if (x == 0 || y == 0 || x + 1 == w || y + 1 == h) { out[i] = c; return; }\n"              \
    "    out[i] = ((in[i - 1] + in[i + 1]) + (in[i - w] + in[i + w])) * 0.25f;\n"                  \
    "}\n"

/* The start grid of a Jacobi test: n floats (multiples of 1/8 below 125) from salt; free(). */
static inline float *jacobi_grid(size_t n, uint64_t salt)
{
    float *x = malloc(n * sizeof *x);
    ck_assert(x);
    uint64_t s = 0x9e3779b97f4a7c15ull + n + salt;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(xorshift64(&s) % 1000) / 8.0f;
    return x;
}

/*
 * The plain C reference of one step of jac1 or jac1p (dims 1: w units, h is 1; periodic) or
 * jac2 (dims 2: w x h): from *cur into *next, then swaps them, so *cur holds the new grid.
 */
static inline void jacobi_ref_step(float **cur, float **next, unsigned dims, size_t w, size_t h,
                                   int periodic)
{
    float *in = *cur, *out = *next;
    if (dims == 1)
        for (size_t i = 0, n = w; i < n; i++) {
            float c = in[i];
            float l = i > 0 ? in[i - 1] : periodic ? in[n - 1] : c;
            float r = i + 1 < n ? in[i + 1] : periodic ? in[0] : c;
            out[i] = ((l + c) + (c + r)) * 0.25f;
        }
    else
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++) {
                size_t i = y * w + x;
                float c = in[i];
                out[i] = (x == 0 || y == 0 || x + 1 == w || y + 1 == h)
                             ? c
                             : ((in[i - 1] + in[i + 1]) + (in[i - w] + in[i + w])) * 0.25f;
            }
    *cur = out;
    *next = in;
}

/* Automake's test driver: 77 = skipped, 99 = hard error. */
#define TEST_SKIP 77
#define TEST_HARD_ERROR 99

static inline int test_devices_required(void)
{
    const char *e = getenv("CLFLEET_REQUIRE_DEVICES");
    return e && e[0] && strcmp(e, "0") != 0;
}

/*
 * Before any suite runs: are there devices? Without them a device suite is
 * skipped, unless CLFLEET_REQUIRE_DEVICES=1 (CI) makes that a failure.
 * Returns -1 when the suite should run, else the exit code.
 */
static inline int test_probe_devices(const char *selection, size_t min_devices)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = NULL;
    const char *use = test_selection(selection);
    /* The FLEET2 role's tests count on exactly two devices. */
    const char *volatile fleet2 = FLEET2;
    int exact = use != selection && !strcmp(selection, fleet2);
    o.devices = use;
    o.disable_cache = 1;
    clf_status st = clf_fleet_create(&f, &o);
    size_t n = clf_fleet_device_count(f);
    clf_fleet_destroy(f);
    if (st == CLF_SUCCESS && n >= min_devices && (!exact || n == 2))
        return -1;
    if (use != selection) {
        const char *pair = getenv("CLFLEET_TEST_DEVICES_PAIR");
        fprintf(stderr, "%s: CLFLEET_TEST_DEVICES%s='%s' gives %zu device(s)%s%s%s; this "
                "suite's %s fleets need %s%zu%s\n",
                test_devices_required() ? "FAIL" : "SKIP", exact && pair && *pair ? "_PAIR" : "",
                use, n, st ? " (" : "", st ? clf_last_error() : "", st ? ")" : "",
                exact ? "two-device" : "four-device", exact ? "exactly " : "at least ",
                exact ? (size_t)2 : min_devices,
                exact ? " (set CLFLEET_TEST_DEVICES_PAIR to a selection of two)" : "");
        return test_devices_required() ? TEST_HARD_ERROR : TEST_SKIP;
    }
    fprintf(stderr, "%s: need %zu device(s) for '%s': %s: %s\n",
            test_devices_required() ? "FAIL" : "SKIP", min_devices, selection,
            clf_status_name(st), st ? clf_last_error() : "too few devices");
    return test_devices_required() ? TEST_HARD_ERROR : TEST_SKIP;
}

/* A fleet from a selection string; fails the test on error. */
static inline clf_fleet *test_fleet(const char *selection, int context_per_device)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = NULL;
    selection = test_selection(selection);
    o.devices = selection;
    o.context_per_device = context_per_device;
    clf_status st = clf_fleet_create(&f, &o);
    ck_assert_msg(st == CLF_SUCCESS, "fleet '%s': %s: %s", selection, clf_status_name(st),
                  clf_last_error());
    return f;
}

/* A fleet from a selection string created while CLFLEET_FAULT_INJECT holds rules (unset again
 * before it returns); fails the test on error. */
static inline clf_fleet *test_fault_fleet(const char *selection, const char *rules)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = NULL;
    selection = test_selection(selection);
    o.devices = selection;
    setenv("CLFLEET_FAULT_INJECT", rules, 1);
    clf_status st = clf_fleet_create(&f, &o);
    unsetenv("CLFLEET_FAULT_INJECT");
    ck_assert_msg(st == CLF_SUCCESS, "fleet '%s' with faults '%s': %s: %s", selection, rules,
                  clf_status_name(st), clf_last_error());
    return f;
}

#define ck_assert_status(expr, want)                                                    \
    do {                                                                                \
        clf_status st_ = (expr);                                                        \
        ck_assert_msg(st_ == (want), "%s returned %s, expected %s (%s)", #expr,         \
                      clf_status_name(st_), clf_status_name(want), clf_last_error());   \
    } while (0)

#define ck_assert_ok(expr) ck_assert_status(expr, CLF_SUCCESS)

/* Whether this test program is built with AddressSanitizer or ThreadSanitizer: timing-
 * dependent checks (placements, chunk counts learned from timings) are relaxed there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

/* Suites run without fork(), so Check's timeouts do not apply: a test that could hang arms
 * this watchdog, which ends the process with a failure after `seconds`; 0 disarms it. */
static inline void test_watchdog_fired(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: no progress before the watchdog fired (a deadlock?)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static inline void test_watchdog(unsigned seconds)
{
    signal(SIGALRM, test_watchdog_fired);
    alarm(seconds);
}

/* Disarm it: a checked teardown, so that a test that fails while armed leaves no alarm
 * behind to end a later test. */
static inline void test_watchdog_off(void)
{
    alarm(0);
}

/* A fresh cache directory in dir (under $TMPDIR), made $CLFLEET_CACHE_DIR, so that the fleets
 * made next start with an empty cost model and learn in the test (the suite's shared cache
 * keeps what earlier runs measured); returns the old value (a copy, or NULL when unset) for
 * test_own_cache_done(), which puts it back and removes dir. */
static inline char *test_own_cache(char *dir, size_t n)
{
    const char *old = getenv("CLFLEET_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    snprintf(dir, n, "%s/clfleet-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("CLFLEET_CACHE_DIR", dir, 1);
    return saved;
}

static inline void test_own_cache_done(const char *dir, char *saved)
{
    char cmd[300];
    if (saved)
        setenv("CLFLEET_CACHE_DIR", saved, 1);
    else
        unsetenv("CLFLEET_CACHE_DIR");
    free(saved);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    expect(system(cmd) == 0, "%s failed", cmd);
}

/* In fleet f, PoCL's basic device and two others. Without them: a failure when devices are
 * required, else a note on standard error for test; returns 0 (the caller returns). */
static inline int test_find_basic(clf_fleet *f, size_t *basic, size_t other[2], const char *test)
{
    size_t n = clf_fleet_device_count(f), k = 0;
    *basic = n;
    for (size_t d = 0; d < n; d++) {
        clf_device_info in;
        ck_assert_ok(clf_device_get_info(&in, f, d));
        if (!strncmp(in.name, "basic", 5) && *basic == n)
            *basic = d;
        else if (k < 2)
            other[k++] = d;
    }
    if (*basic < n && k == 2)
        return 1;
    ck_assert_msg(!test_devices_required(),
                  "%s: no PoCL basic device and two others (POCL_DEVICES='pthread pthread basic')",
                  test);
    fprintf(stderr, "%s: no PoCL basic device, not run\n", test);
    return 0;
}

/* Run a suite without fork(): some drivers do not survive it after initialisation. */
static inline int test_run(Suite *s, const char *selection, size_t min_devices)
{
    if (selection) {
        int rc = test_probe_devices(selection, min_devices);
        /* Under CLFLEET_TEST_DEVICES a suite may make FLEET2 fleets beside the one it names
         * (test_gemm does): the pair is checked up front too, so that it skips with a reason
         * instead of failing in the middle. */
        const char *all = getenv("CLFLEET_TEST_DEVICES");
        if (rc < 0 && all && *all && test_selection(selection) != selection)
            rc = test_probe_devices(FLEET2, 2);
        if (rc >= 0)
            return rc;
    }
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Run a suite whose tests use both FLEET4 and FLEET2: both must have their devices. */
static inline int test_run_fleet4_fleet2(Suite *s)
{
    int rc = test_probe_devices(FLEET4, 4);
    if (rc < 0)
        rc = test_probe_devices(FLEET2, 2);
    if (rc >= 0)
        return rc;
    return test_run(s, NULL, 0);
}

static inline void test_env_open(test_env *e, const fleet_cfg *cfg, const char *src)
{
    e->cfg = cfg;
    e->f = test_fleet(cfg->selection, cfg->context_per_device);
    clf_status st = clf_program_build_source(&e->p, e->f, src, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "%s: build: %s: %s", cfg->label, clf_status_name(st),
                  clf_last_error());
}

static inline void test_env_close(test_env *e)
{
    clf_program_destroy(e->p);
    clf_fleet_destroy(e->f);
}

#endif

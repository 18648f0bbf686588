/* Shared by the device test suites. */
#ifndef CLF_TESTS_COMMON_H
#define CLF_TESTS_COMMON_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet.h"

/* The PoCL devices the tests use, whatever else the machine has. */
#define TEST_CPUS "type=cpu;platform=portable"

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
    o.devices = selection;
    o.disable_cache = 1;
    clf_status st = clf_fleet_create(&f, &o);
    size_t n = clf_fleet_device_count(f);
    clf_fleet_destroy(f);
    if (st == CLF_SUCCESS && n >= min_devices)
        return -1;
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
    o.devices = selection;
    o.context_per_device = context_per_device;
    clf_status st = clf_fleet_create(&f, &o);
    ck_assert_msg(st == CLF_SUCCESS, "fleet '%s': %s: %s", selection, clf_status_name(st),
                  clf_last_error());
    return f;
}

#define ck_assert_status(expr, want)                                                    \
    do {                                                                                \
        clf_status st_ = (expr);                                                        \
        ck_assert_msg(st_ == (want), "%s returned %s, expected %s (%s)", #expr,         \
                      clf_status_name(st_), clf_status_name(want), clf_last_error());   \
    } while (0)

#define ck_assert_ok(expr) ck_assert_status(expr, CLF_SUCCESS)

/* Run a suite without fork(): some drivers do not survive it after initialisation. */
static inline int test_run(Suite *s, const char *selection, size_t min_devices)
{
    if (selection) {
        int rc = test_probe_devices(selection, min_devices);
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

#endif

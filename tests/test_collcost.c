/* The all-reduce cost model (lib/plan/collcost.c) on fixed link figures, and its choice by
 * measured times: no OpenCL device is needed. Each case says which algorithm the figures
 * must give, and why. */
#include "plan/collcost.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 8
#define MIB ((size_t)1 << 20)

/* A call of n devices with every host link at link_bps, every pair joined by a direct path
 * of peer_bps (0: staged through the host), commands of cmd_s. */
typedef struct fixture {
    clf__ar_dev dev[MAXN];
    double peer[MAXN * MAXN];
    clf__ar_input in;
} fixture;

static void setup(fixture *f, size_t n, size_t bytes, double link_bps, double peer_bps,
                  double cmd_s, size_t chunks)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        f->dev[i].h2d_bps = f->dev[i].d2h_bps = link_bps;
        f->dev[i].combine_bps = 1e12; /* a GPU's combine: never the bottleneck */
        for (size_t j = 0; j < n; j++)
            f->peer[i * n + j] = i == j ? 0 : peer_bps;
    }
    f->in.n = n;
    f->in.bytes = bytes;
    f->in.dev = f->dev;
    f->in.peer_bps = f->peer;
    f->in.cmd_s = cmd_s;
    f->in.host_combine_bps = 10e9;
    f->in.ring_chunks = chunks;
}

/* The brief's case, and the H200 + CPU measurement's: every path host-staged at 5 GB/s with
 * 60 us commands, two devices, 4 MiB (a ring of 4 chunks of 512 KiB per segment). */
START_TEST(staged_two_devices_4mib_goes_to_the_host)
{
    fixture f;
    setup(&f, 2, 4 * MIB, 5e9, 0, 60e-6, 4);
    double r, h;
    ck_assert_int_eq(clf__ar_choose(&f.in, &r, &h), 2);
    ck_assert(h > 0 && r > h);
    /* The host combine: read 4 MiB (60 us + 839 us), combine (419 us), write (899 us). */
    ck_assert(h > 2.1e-3 && h < 2.3e-3);
}
END_TEST

/* Fast peer links (100 GB/s, 10 us commands) between 8 devices and a large count: the ring
 * moves 2(n-1)/n of the data per device where the host combine moves it all twice over
 * 25 GB/s host links and adds 7 buffers on one host thread. */
START_TEST(fast_peers_eight_devices_large_count_ring)
{
    fixture f;
    setup(&f, 8, 256 * MIB, 25e9, 100e9, 10e-6, 8);
    double r, h;
    ck_assert_int_eq(clf__ar_choose(&f.in, &r, &h), 1);
    ck_assert(r > 0 && h > 10 * r);
}
END_TEST

/* Small counts go to the host whatever the links: the ring's 2(n-1) steps of commands cost
 * more than three steps, even over the fastest peer path. */
START_TEST(small_counts_go_to_the_host)
{
    static const size_t ns[] = {2, 3, 8};
    for (size_t k = 0; k < 3; k++)
        for (size_t bytes = 4; bytes <= 16384; bytes *= 4) {
            fixture f;
            setup(&f, ns[k], bytes, 10e9, 100e9, 20e-6, 1);
            ck_assert_msg(clf__ar_choose(&f.in, NULL, NULL) == 2, "%zu devices, %zu bytes",
                          ns[k], bytes);
        }
}
END_TEST

/* More chunks, slower links or dearer commands never make a prediction cheaper; more bytes
 * never do either. */
START_TEST(costs_are_monotonic)
{
    fixture a, b;
    double last_r = 0, last_h = 0;
    for (size_t bytes = 1; bytes <= 64 * MIB; bytes *= 2) {
        setup(&a, 3, bytes, 5e9, 0, 30e-6, 4);
        double r = clf__ar_ring_cost(&a.in), h = clf__ar_host_cost(&a.in);
        ck_assert(r >= last_r && h >= last_h);
        last_r = r;
        last_h = h;
        setup(&b, 3, bytes, 2.5e9, 0, 30e-6, 4);
        ck_assert(clf__ar_ring_cost(&b.in) >= r && clf__ar_host_cost(&b.in) >= h);
        setup(&b, 3, bytes, 5e9, 0, 60e-6, 4);
        ck_assert(clf__ar_ring_cost(&b.in) >= r && clf__ar_host_cost(&b.in) >= h);
        setup(&b, 3, bytes, 5e9, 0, 30e-6, 8);
        ck_assert(clf__ar_ring_cost(&b.in) >= r);
    }
}
END_TEST

/* One slow host link slows both; a slow device on a staged ring sets every step's pace. */
START_TEST(slowest_link_sets_the_pace)
{
    fixture f;
    setup(&f, 3, 16 * MIB, 10e9, 0, 20e-6, 4);
    double r0 = clf__ar_ring_cost(&f.in), h0 = clf__ar_host_cost(&f.in);
    f.dev[2].d2h_bps = 1e9;
    ck_assert(clf__ar_ring_cost(&f.in) > r0 && clf__ar_host_cost(&f.in) > h0);
}
END_TEST

START_TEST(bad_input_predicts_nothing)
{
    fixture f;
    setup(&f, 2, MIB, 5e9, 0, 10e-6, 4);
    ck_assert(clf__ar_ring_cost(NULL) < 0 && clf__ar_host_cost(NULL) < 0);
    ck_assert_int_eq(clf__ar_choose(NULL, NULL, NULL), 1);
    f.in.n = 1;
    ck_assert(clf__ar_ring_cost(&f.in) < 0);
    f.in.n = 2;
    f.dev[1].h2d_bps = 0;
    double r = 0, h = 0;
    ck_assert_int_eq(clf__ar_choose(&f.in, &r, &h), 1);
    ck_assert(r < 0 && h < 0);
    f.dev[1].h2d_bps = 5e9;
    f.in.ring_chunks = 0;
    ck_assert(clf__ar_ring_cost(&f.in) < 0);
    f.in.ring_chunks = 4;
    f.in.host_combine_bps = 0;
    ck_assert(clf__ar_host_cost(&f.in) < 0);
}
END_TEST

/* The policy of an AUTO call, case by case: nothing measured, one, both; the bound. */
START_TEST(policy_measured_predicted_exploring)
{
    clf__ar_basis b = CLF__AR_MEASURED;
    /* Neither measured: the predictions (a tie, or an unknown one, to the ring). */
    ck_assert_int_eq(clf__ar_policy(2e-3, 1e-3, -1, -1, &b), 2);
    ck_assert_int_eq(b, CLF__AR_PREDICTED);
    ck_assert_int_eq(clf__ar_policy(1e-3, 2e-3, 0, NAN, &b), 1);
    ck_assert_int_eq(b, CLF__AR_PREDICTED);
    ck_assert_int_eq(clf__ar_policy(1e-3, 1e-3, -1, -1, &b), 1);
    ck_assert_int_eq(clf__ar_policy(-1, 1e-3, -1, -1, &b), 1);
    /* Both measured: the faster measured, whatever the predictions say. */
    ck_assert_int_eq(clf__ar_policy(1e-3, 9e-3, 300e-6, 150e-6, &b), 2);
    ck_assert_int_eq(b, CLF__AR_MEASURED);
    ck_assert_int_eq(clf__ar_policy(9e-3, 1e-3, 150e-6, 300e-6, &b), 1);
    ck_assert_int_eq(b, CLF__AR_MEASURED);
    ck_assert_int_eq(clf__ar_policy(9e-3, 1e-3, 150e-6, 150e-6, &b), 1); /* a tie: the ring */
    /* One measured: the other runs, to be measured, even where predicted the dearer... */
    ck_assert_int_eq(clf__ar_policy(90e-6, 62e-6, -1, 314e-6, &b), 1);
    ck_assert_int_eq(b, CLF__AR_EXPLORING);
    ck_assert_int_eq(clf__ar_policy(1e-3, 3.9e-3, 1e-3, -1, &b), 2);
    ck_assert_int_eq(b, CLF__AR_EXPLORING);
    ck_assert_int_eq(clf__ar_policy(1e-3, 4e-3, 1e-3, -1, &b), 2); /* at the bound: tried */
    ck_assert_int_eq(b, CLF__AR_EXPLORING);
    /* ... unless its prediction is more than the bound times the measured one's: a 1 GiB
     * host combine over PCIe beside a ring on peer links is never tried. */
    ck_assert_int_eq(clf__ar_policy(0.17, 0.17 * CLF__AR_EXPLORE_BOUND * 1.01, 0.2, -1, &b), 1);
    ck_assert_int_eq(b, CLF__AR_PREDICTED);
    ck_assert_int_eq(clf__ar_policy(5e-3, 1e-3, -1, 2e-3, &b), 2);
    ck_assert_int_eq(b, CLF__AR_PREDICTED);
    /* The bound compares predictions: the measured time does not enter it. */
    ck_assert_int_eq(clf__ar_policy(5e-3, 1e-3, -1, 1.0, &b), 2);
    /* An unknown prediction cannot say the other is dear: it is tried. */
    ck_assert_int_eq(clf__ar_policy(1e-3, -1, 1e-3, -1, &b), 2);
    ck_assert_int_eq(b, CLF__AR_EXPLORING);
    ck_assert_int_eq(clf__ar_policy(1e-3, 2e-3, 1e-3, INFINITY, NULL), 2);
    ck_assert_str_eq(clf__ar_basis_name(CLF__AR_PREDICTED), "predicted");
    ck_assert_str_eq(clf__ar_basis_name(CLF__AR_MEASURED), "measured");
    ck_assert_str_eq(clf__ar_basis_name(CLF__AR_EXPLORING), "exploring");
    ck_assert_str_eq(clf__ar_basis_name((clf__ar_basis)7), "unknown");
}
END_TEST

/* Size classes are powers of 2: every size from 0 to 2^16, and the extremes. */
START_TEST(size_classes)
{
    ck_assert_uint_eq(clf__ar_size_class(0), 0);
    ck_assert_uint_eq(clf__ar_size_class(1), 0);
    for (size_t b = 2; b <= ((size_t)1 << 16); b++) {
        unsigned k = clf__ar_size_class(b);
        ck_assert_msg(((size_t)1 << k) <= b && b < ((size_t)2 << k), "%zu bytes: class %u", b,
                      k);
    }
    ck_assert_uint_eq(clf__ar_size_class(4096), 12);
    ck_assert_uint_eq(clf__ar_size_class(SIZE_MAX), sizeof(size_t) * 8 - 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("collcost");
    TCase *tc = tcase_create("collcost");
    tcase_add_test(tc, staged_two_devices_4mib_goes_to_the_host);
    tcase_add_test(tc, fast_peers_eight_devices_large_count_ring);
    tcase_add_test(tc, small_counts_go_to_the_host);
    tcase_add_test(tc, costs_are_monotonic);
    tcase_add_test(tc, slowest_link_sets_the_pace);
    tcase_add_test(tc, bad_input_predicts_nothing);
    tcase_add_test(tc, policy_measured_predicted_exploring);
    tcase_add_test(tc, size_classes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

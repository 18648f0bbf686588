/* The all-reduce cost model (lib/plan/collcost.c) on fixed link figures: no OpenCL device is
 * needed. Each case says which algorithm the figures must give, and why. */
#include "plan/collcost.h"

#include <check.h>
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
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

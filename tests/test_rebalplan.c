/*
 * The decisions of distributed arrays on unequal devices (plan/rebalplan.c) with made-up
 * speeds, no device needed: which devices get a part, and when CLF_ARRAY_REBALANCE moves
 * the parts (gain, hysteresis, cost of the move, cool-down, a spike, granules, fixed costs
 * per step).
 */
#include "plan/perfmodel.h"
#include "plan/rebalplan.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t DEV2[2] = {0, 1};

/* The input of a two-part decision: count0 + count1 units, nsamples rows of the given
 * speeds (units per second), halo 1 each side, 4-byte units, two arrays moving. */
typedef struct two {
    size_t count[2];
    double rate[16][2];
    clf__rebal_in in;
} two;

static void two_init(two *t, size_t c0, size_t c1, double s0, double s1, size_t nsamples)
{
    memset(t, 0, sizeof *t);
    t->count[0] = c0;
    t->count[1] = c1;
    for (size_t j = 0; j < nsamples; j++) {
        t->rate[j][0] = s0;
        t->rate[j][1] = s1;
    }
    clf__rebal_in in = {2, DEV2, t->count, &t->rate[0][0], nsamples, c0 + c1, 1, 1, 1, 0,
                        4, 8, 0, 0, 0, NULL};
    t->in = in;
}

START_TEST(split_exact)
{
    size_t cnt[3];
    double w[3] = {1, 1, 1};
    clf__split_units(10, w, 3, cnt);
    ck_assert_uint_eq(cnt[0], 4); /* the block layout: the first units % n one more */
    ck_assert_uint_eq(cnt[1], 3);
    ck_assert_uint_eq(cnt[2], 3);
    double c[3] = {7000, 0, 1192}; /* counts as weights give exactly them */
    clf__split_units(8192, c, 3, cnt);
    ck_assert_uint_eq(cnt[0], 7000);
    ck_assert_uint_eq(cnt[1], 0);
    ck_assert_uint_eq(cnt[2], 1192);
}
END_TEST

START_TEST(keep_rules)
{
    unsigned char keep[3];
    char why[320] = "";
    size_t dev[3] = {4, 5, 6};
    /* Relative speeds: only the halo rule. 1000:1 over 1001 units is a share of 1 unit,
     * narrower than a halo of 2. */
    double s[3] = {1000, 1, 0};
    ck_assert_uint_eq(clf__balance_keep(s, dev, 2, 1001, 2, 0, 1.0, 0, keep, why, sizeof why),
                      1);
    ck_assert(keep[0] && !keep[1]);
    ck_assert_msg(strstr(why, "device 5 gets no part") && strstr(why, "halo"), "%s", why);
    /* The same without a halo: a share of one unit is kept (no halo copies to pay). */
    why[0] = 0;
    ck_assert_uint_eq(clf__balance_keep(s, dev, 2, 1001, 0, 0, 0, 0, keep, why, sizeof why), 2);
    ck_assert_str_eq(why, "");
    /* Absolute: 1e6 and 1e4 units/s, 1001 units, 60 us per boundary: 1.001 ms alone, 0.991
     * + 0.06 ms with the slow one: left out. With no boundary cost it helps: kept. */
    double a[2] = {1e6, 1e4};
    ck_assert_uint_eq(clf__balance_keep(a, dev, 2, 1001, 1, 0, 60e-6, 1, keep, why, sizeof why),
                      1);
    ck_assert_msg(strstr(why, "sooner"), "%s", why);
    why[0] = 0;
    ck_assert_uint_eq(clf__balance_keep(a, dev, 2, 1001, 1, 0, 0, 1, keep, why, sizeof why), 2);
    /* A zero speed gets nothing, without a word; three devices drop one by one. */
    double z[3] = {1e6, 0, 1e6};
    ck_assert_uint_eq(clf__balance_keep(z, dev, 3, 1000, 0, 0, 0, 1, keep, why, sizeof why), 2);
    ck_assert(keep[0] && !keep[1] && keep[2]);
    double t[3] = {1e6, 1e2, 1e3};
    why[0] = 0;
    ck_assert_uint_eq(clf__balance_keep(t, dev, 3, 100000, 1, 1, 60e-6, 1, keep, why,
                                        sizeof why), 1);
    ck_assert_msg(strstr(why, "device 5") && strstr(why, "device 6"), "%s", why);
    ck_assert(keep[0]);
    /* Periodic: one more boundary than parts minus one. */
    ck_assert_uint_eq(clf__boundaries(1, 1), 0);
    ck_assert_uint_eq(clf__boundaries(2, 0), 1);
    ck_assert_uint_eq(clf__boundaries(2, 1), 2);
    ck_assert(clf__halo_cost(0, 4, 1e9) == 0);
    ck_assert(fabs(clf__halo_cost(2, 1000, 1e9) - (2 * CLF__REBAL_COPY_S + 2e-6)) < 1e-12);
}
END_TEST

START_TEST(median_of_spike)
{
    double v[5] = {10, 10, 1000, 10, 10};
    ck_assert(clf__median(v, 5) == 10);
    double w[4] = {4, 1, 3, 2};
    ck_assert(clf__median(w, 4) == 2.5);
}
END_TEST

/* 8:1 measured on equal parts: move to about a ninth on the slow device. */
START_TEST(slow_moves)
{
    two t;
    clf__rebal_out o;
    two_init(&t, 4096, 4096, 8e6, 1e6, 3);
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(o.move, "%s", o.why);
    ck_assert_uint_eq(o.k, 2);
    ck_assert_uint_eq(o.count[0] + o.count[1], 8192);
    ck_assert_uint_eq(o.count[1], 910); /* 8192 / 9 = 910.2 */
    ck_assert(fabs(o.step_s - (4096 / 1e6 + 60e-6 + 8e-9)) < 1e-9);
    ck_assert(o.best_s < o.step_s * 0.3);
    ck_assert_uint_eq(o.moved_bytes, (4096 - 910) * 8); /* units changing device, 2 arrays */
    ck_assert_msg(strstr(o.why, "move to 7282 on device 0, 910 on device 1"), "%s", o.why);
    /* In granules of 64 (the last part takes what does not fill one). */
    two_init(&t, 4093, 4096, 8e6, 1e6, 3);
    t.in.granule = 64;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(o.move, "%s", o.why);
    ck_assert_uint_eq(o.count[0] % 64, 0);
    ck_assert_uint_eq(o.count[1] % 64, 8189 % 64);
    ck_assert_uint_eq(o.count[0] + o.count[1], 8189);
}
END_TEST

/*
 * Fixed costs per step (a part's extra kernels): equal speeds of 1e6 units/s, device 1
 * paying 2 ms a step whatever its units. The cut gives both the same finish T, with
 * 1e6 (T - 0) + 1e6 (T - 0.002) = 8192: T = 5.096 ms, device 1 3096 units; speeds alone
 * (no fixed costs) would keep 4096:4096. A device whose fixed cost alone passes T gets
 * nothing, and the parts stay.
 */
START_TEST(fixed_costs)
{
    two t;
    clf__rebal_out o;
    double fixed[2] = {0, 2e-3};
    two_init(&t, 4096, 4096, 1e6, 1e6, 3);
    t.in.halo_before = t.in.halo_after = 0;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move, "%s", o.why);
    t.in.fixed = fixed;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(o.move, "%s", o.why);
    ck_assert(fabs(o.step_s - (2e-3 + 4096 / 1e6)) < 1e-9);
    ck_assert_uint_eq(o.count[0] + o.count[1], 8192);
    ck_assert_msg(o.count[1] == 3096, "device 1 gets %zu units", o.count[1]);
    ck_assert(fabs(o.best_s - 5.096e-3) < 1e-9);
    /* 9 ms fixed on 8192 units at 1e6/s: T = 8.6 ms < 9 ms, device 1 would get 0 units. */
    fixed[1] = 9e-3;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move && strstr(o.why, "device 1 0 units"), "%s", o.why);
}
END_TEST

/* Equal speeds, and speeds 9 % apart: nothing moves (hysteresis). 20 % apart: it moves. */
START_TEST(hysteresis)
{
    two t;
    clf__rebal_out o;
    two_init(&t, 4096, 4096, 1e6, 1e6, 5);
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move && strstr(o.why, "less than 10 %"), "%s", o.why);
    ck_assert(o.step_s > 0 && o.best_s > 0);
    two_init(&t, 4096, 4096, 1e6, 0.85e6, 5); /* best: 0.92 of now */
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move, "%s", o.why);
    two_init(&t, 4096, 4096, 1e6, 0.6e6, 5); /* best: 0.8 of now */
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(o.move, "%s", o.why);
}
END_TEST

/* A spike in one of five steps (or one of three) does not move anything. */
START_TEST(spike_ignored)
{
    two t;
    clf__rebal_out o;
    two_init(&t, 4096, 4096, 1e6, 1e6, 5);
    t.rate[2][1] = 1e4; /* one step 100x slower on device 1 */
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move, "%s", o.why);
    two_init(&t, 4096, 4096, 1e6, 1e6, 3);
    t.rate[0][0] = 1e4;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move, "%s", o.why);
}
END_TEST

/* Too few samples, one part, a cool-down after a move, a move costing more than it gains. */
START_TEST(not_yet)
{
    two t;
    clf__rebal_out o;
    two_init(&t, 4096, 4096, 8e6, 1e6, 2);
    clf__rebal_plan(&t.in, &o);
    ck_assert(!o.move && o.step_s == 0);
    ck_assert_msg(strstr(o.why, "measuring"), "%s", o.why);
    two_init(&t, 4096, 4096, 8e6, 1e6, 3);
    t.in.migrations = 1;
    t.in.since = CLF__REBAL_HORIZON - 1;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move && strstr(o.why, "since the last move"), "%s", o.why);
    t.in.since = CLF__REBAL_HORIZON;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(o.move, "%s", o.why);
    /* At 1 KB/s (the bandwidth of the last move) moving tens of KB costs tens of seconds;
     * 10 steps gain a few ms. */
    t.in.bw = 1e3;
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(!o.move && strstr(o.why, "costs"), "%s", o.why);
    ck_assert(o.moved_bytes >= 3186 * 8);
    ck_assert(fabs(o.cost_s - (double)o.moved_bytes / 1e3) < 1e-9);
    t.in.nparts = 1;
    clf__rebal_plan(&t.in, &o);
    ck_assert(!o.move);
}
END_TEST

/* 400:1 with a small step: the slow device is dropped, everything on the fast one. */
START_TEST(far_too_slow)
{
    two t;
    clf__rebal_out o;
    two_init(&t, 2048, 2048, 1e8, 2.5e5, 3);
    clf__rebal_plan(&t.in, &o);
    ck_assert_msg(o.move && o.k == 1, "%s", o.why);
    ck_assert_uint_eq(o.device[0], 0);
    ck_assert_uint_eq(o.count[0], 4096);
    ck_assert_msg(strstr(o.why, "device 1 gets no part"), "%s", o.why);
    ck_assert(o.best_s < 4096 / 1e8 + 1e-9); /* no boundary left */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rebalplan");
    TCase *tc = tcase_create("pure");
    tcase_add_test(tc, split_exact);
    tcase_add_test(tc, keep_rules);
    tcase_add_test(tc, median_of_spike);
    tcase_add_test(tc, slow_moves);
    tcase_add_test(tc, fixed_costs);
    tcase_add_test(tc, hysteresis);
    tcase_add_test(tc, spike_ignored);
    tcase_add_test(tc, not_yet);
    tcase_add_test(tc, far_too_slow);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

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

/* ---- re-trying the loser ------------------------------------------------------------------
 * The AUTO all-reduce's loop as allreduce.c runs it, on synthetic samples: per algorithm a
 * window of the last CLF__AR_WINDOW samples in bytes per second (the cost model's, median and
 * all), a call's measured time its bytes over the median once CLF__AR_MIN_SAMPLES are kept,
 * a re-try's sample replacing the oldest (clf__perf_record_replace()). */

#define WIN 8 /* CLF__PERF_WINDOW: the model's; this test needs no model */
#define BYTES 1e6

typedef struct win {
    double s[WIN]; /* ring: sample i (oldest first) at s[(head + i) % WIN] */
    unsigned n, head;
} win;

static void win_push(win *w, double v)
{
    if (w->n < WIN) {
        w->s[(w->head + w->n++) % WIN] = v;
    } else {
        w->s[w->head] = v;
        w->head = (w->head + 1) % WIN;
    }
}

static void win_replace(win *w, double v)
{
    if (w->n > 0) {
        w->head = (w->head + 1) % WIN;
        w->n--;
    }
    win_push(w, v);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Measured seconds of BYTES: BYTES over the median rate; -1 below the minimum of samples. */
static double win_time(const win *w)
{
    double v[WIN];
    if (w->n < CLF__AR_MIN_SAMPLES)
        return -1;
    for (unsigned i = 0; i < w->n; i++)
        v[i] = w->s[(w->head + i) % WIN];
    qsort(v, w->n, sizeof *v, cmp_double);
    double med = w->n % 2 ? v[w->n / 2] : (v[w->n / 2 - 1] + v[w->n / 2]) / 2;
    return BYTES / med;
}

/* One size class: the samples [0] of the ring, [1] of the host combine, the schedule. */
typedef struct sim {
    win w[2];
    clf__ar_retry rt;
} sim;

/* k samples of seconds t for algorithm a (1 ring, 2 host) as ordinary calls would leave. */
static void sim_seed(sim *S, int a, int k, double t)
{
    for (int i = 0; i < k; i++)
        win_push(&S->w[a - 1], BYTES / t);
}

/* One AUTO call that takes ring_s or host_s by what it runs; the algorithm it ran, its basis in
 * *basis. A query before it (clf_allreduce_choice()) must say the same and change nothing. */
static int sim_call(sim *S, double ring_s, double host_s, clf__ar_basis *basis)
{
    double rm = win_time(&S->w[0]), hm = win_time(&S->w[1]);
    clf__ar_retry before = S->rt;
    clf__ar_basis qb, b;
    int q = clf__ar_policy_retry(1e-4, 1e-4, rm, hm, &S->rt, &qb);
    ck_assert(memcmp(&before, &S->rt, sizeof before) == 0);
    int a = clf__ar_policy_retry(1e-4, 1e-4, rm, hm, &S->rt, &b);
    ck_assert_int_eq(a, q);
    ck_assert_int_eq(b, qb);
    clf__ar_retry_ran(&S->rt, rm, hm, b);
    double t = a == 1 ? ring_s : host_s;
    if (b == CLF__AR_RETRYING) {
        ck_assert_msg(a == (hm < rm ? 1 : 2), "a re-try ran the winner");
        win_replace(&S->w[a - 1], BYTES / t);
        clf__ar_retry_done(&S->rt, t, a == 1 ? hm : rm);
    } else {
        win_push(&S->w[a - 1], BYTES / t);
    }
    *basis = b;
    return a;
}

/* The ring measured in a bad streak (300 us, the host loaded) and the host combine at 150 us:
 * the host wins. The ring now takes 100 us. After 16 host calls it is re-tried and wins (the
 * back-off stays at 16), its window {300, 300, 100} still loses; 16 calls later the second
 * re-try makes it {300, 100, 100}, and the ring is chosen from then on. The host, now the
 * loser within the bound, is re-tried 16 calls later, and loses. */
START_TEST(retry_a_bad_streak_ages_out)
{
    sim S;
    memset(&S, 0, sizeof S);
    sim_seed(&S, 1, 3, 300e-6);
    sim_seed(&S, 2, 3, 150e-6);
    char seq[80];
    for (int k = 0; k < 70; k++) {
        clf__ar_basis b;
        int a = sim_call(&S, 100e-6, 150e-6, &b);
        seq[k] = b == CLF__AR_RETRYING ? (a == 1 ? 'r' : 'h') : (a == 1 ? 'R' : 'H');
    }
    seq[70] = '\0';
    /* 16 H, r, 16 H, r, then R: 16 of them before the host's re-try. */
    static const char want[] = "HHHHHHHHHHHHHHHH" "r" "HHHHHHHHHHHHHHHH" "r"
                               "RRRRRRRRRRRRRRRR" "h" "RRRRRRRRRRRRRRRRRRR";
    ck_assert_str_eq(seq, want);
    ck_assert_uint_eq(S.w[0].n, 8); /* the ring's window filled by its own calls since */
    ck_assert_uint_eq(S.rt.k, 1);   /* the host lost its re-try: it waits 32 calls next */
    ck_assert_int_eq(S.rt.loser, 2);
}
END_TEST

/* A loser that stays slower (120 us against 100, within the bound) is re-tried after 16, 32,
 * 64 ... winner calls: at calls 16, 49, 114, 243 and 500 of 1,000, its window kept at the
 * three samples it had (each re-try replaced the oldest). Over 200,000 calls the wait stops
 * growing at 16 << CLF__AR_RETRY_MAX_SHIFT. */
START_TEST(retry_a_slow_loser_decays)
{
    sim S;
    memset(&S, 0, sizeof S);
    sim_seed(&S, 1, 3, 120e-6);
    sim_seed(&S, 2, 8, 100e-6);
    long at[16];
    int n = 0;
    for (long k = 0; k < 1000; k++) {
        clf__ar_basis b;
        int a = sim_call(&S, 120e-6, 100e-6, &b);
        ck_assert_int_eq(a, b == CLF__AR_RETRYING ? 1 : 2);
        if (b == CLF__AR_RETRYING && n < 16)
            at[n++] = k;
    }
    ck_assert_int_eq(n, 5);
    static const long want[] = {16, 49, 114, 243, 500};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(at[i], want[i]);
    ck_assert_uint_eq(S.w[0].n, 3);
    ck_assert_uint_eq(S.rt.k, 5);
    /* Long runs: the waits double up to the cap, then stay there. */
    long last = at[4], gap = 0, retries = 0;
    unsigned long long cap = (unsigned long long)CLF__AR_RETRY_CALLS << CLF__AR_RETRY_MAX_SHIFT;
    for (long k = 1000; k < 200000; k++) {
        clf__ar_basis b;
        sim_call(&S, 120e-6, 100e-6, &b);
        if (b == CLF__AR_RETRYING) {
            long g = k - last - 1;
            ck_assert_msg(g >= gap && (unsigned long long)g <= cap, "wait %ld after %ld", g, gap);
            gap = g;
            last = k;
            retries++;
        }
    }
    ck_assert_int_eq(gap, (long)cap);
    /* Waits of 512 ... 16384 calls, then 16384 each: 16 re-tries in calls 1,000 to 199,999
     * (the last at 196,612). */
    ck_assert_int_eq(retries, 16);
    ck_assert_uint_eq(S.rt.k, CLF__AR_RETRY_MAX_SHIFT);
}
END_TEST

/* Conditions change after the back-off has grown: the ring, 120 us, becomes 50 us. The next
 * re-try wins and resets the wait to 16 calls; the one after moves the median: the ring is
 * chosen within one full wait and 17 calls. */
START_TEST(retry_notices_a_change)
{
    sim S;
    memset(&S, 0, sizeof S);
    sim_seed(&S, 1, 3, 120e-6);
    sim_seed(&S, 2, 8, 100e-6);
    clf__ar_basis b;
    for (long k = 0; k < 5000; k++)
        sim_call(&S, 120e-6, 100e-6, &b);
    unsigned long long wait = clf__ar_retry_interval(&S.rt) - S.rt.since;
    ck_assert_uint_eq(clf__ar_retry_interval(&S.rt), 16ull << S.rt.k);
    long k = 0;
    int wins = 0;
    while (k < 40000 && !(sim_call(&S, 50e-6, 100e-6, &b) == 1 && b == CLF__AR_MEASURED)) {
        wins += b == CLF__AR_RETRYING;
        k++;
    }
    ck_assert_int_eq(wins, 2);
    ck_assert_int_eq(k, (long)wait + 1 + 16 + 1);
}
END_TEST

/* Only a loser within the bound is re-tried: one 5x the winner's measured time never, in
 * 2,000 calls, nor does its wait run meanwhile; once the winner slows to within the bound of
 * it, it is re-tried 16 calls later. At the bound exactly it is re-tried. */
START_TEST(retry_only_within_the_bound)
{
    sim S;
    memset(&S, 0, sizeof S);
    sim_seed(&S, 1, 3, 500e-6);
    sim_seed(&S, 2, 8, 100e-6);
    clf__ar_basis b;
    for (long k = 0; k < 2000; k++) {
        ck_assert_int_eq(sim_call(&S, 500e-6, 100e-6, &b), 2);
        ck_assert_int_eq(b, CLF__AR_MEASURED);
    }
    /* The host slows to 130 us: 500 / 130 < 4. Its median moves after 5 calls (8 samples). */
    long first = -1;
    for (long k = 0; k < 100 && first < 0; k++)
        if (sim_call(&S, 500e-6, 130e-6, &b) == 1) {
            ck_assert_int_eq(b, CLF__AR_RETRYING);
            first = k;
        }
    ck_assert_msg(first >= 16 && first <= 16 + 5, "first re-try at call %ld", first);
    /* The bound itself: 4x is within. */
    ck_assert_int_eq(clf__ar_policy_retry(1e-4, 1e-4, 400e-6, 100e-6,
                                          &(clf__ar_retry){16, 0, 1}, &b),
                     1);
    ck_assert_int_eq(b, CLF__AR_RETRYING);
    ck_assert_int_eq(clf__ar_policy_retry(1e-4, 1e-4, 401e-6, 100e-6,
                                          &(clf__ar_retry){16, 0, 1}, &b),
                     2);
    ck_assert_int_eq(b, CLF__AR_MEASURED);
}
END_TEST

/* The schedule's edges: no schedule, one counted for the other algorithm, before both are
 * measured; a re-try without a sample (the model dropped it as cold) changes nothing. */
START_TEST(retry_schedule_edges)
{
    clf__ar_basis b;
    clf__ar_retry rt = {1000, 0, 1};
    /* NULL: as clf__ar_policy(). */
    ck_assert_int_eq(clf__ar_policy_retry(1e-4, 1e-4, 200e-6, 100e-6, NULL, &b), 2);
    ck_assert_int_eq(b, CLF__AR_MEASURED);
    ck_assert_uint_eq(clf__ar_retry_interval(NULL), CLF__AR_RETRY_CALLS);
    /* Counted for the ring, but the host is the loser now: not re-tried, and it starts. */
    ck_assert_int_eq(clf__ar_policy_retry(1e-4, 1e-4, 100e-6, 200e-6, &rt, &b), 1);
    ck_assert_int_eq(b, CLF__AR_MEASURED);
    clf__ar_retry_ran(&rt, 100e-6, 200e-6, b);
    ck_assert(rt.loser == 2 && rt.since == 1 && rt.k == 0);
    /* One not measured: exploring, and the schedule forgotten. */
    ck_assert_int_eq(clf__ar_policy_retry(1e-4, 1e-4, 100e-6, -1, &rt, &b), 2);
    ck_assert_int_eq(b, CLF__AR_EXPLORING);
    clf__ar_retry_ran(&rt, 100e-6, -1, b);
    ck_assert(rt.loser == 0 && rt.since == 0 && rt.k == 0);
    /* A re-try's outcome: no sample, nothing; a loss doubles, a win resets. */
    rt = (clf__ar_retry){0, 3, 1};
    clf__ar_retry_done(&rt, -1, 100e-6);
    clf__ar_retry_done(&rt, NAN, 100e-6);
    ck_assert_uint_eq(rt.k, 3);
    clf__ar_retry_done(&rt, 150e-6, 100e-6);
    ck_assert_uint_eq(rt.k, 4);
    ck_assert_uint_eq(clf__ar_retry_interval(&rt), 16u << 4);
    clf__ar_retry_done(&rt, 90e-6, 100e-6);
    ck_assert_uint_eq(rt.k, 0);
    clf__ar_retry_ran(NULL, 1, 1, CLF__AR_MEASURED);
    clf__ar_retry_done(NULL, 1, 1);
    ck_assert_str_eq(clf__ar_basis_name(CLF__AR_RETRYING), "re-trying");
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
    tcase_add_test(tc, retry_a_bad_streak_ages_out);
    tcase_add_test(tc, retry_a_slow_loser_decays);
    tcase_add_test(tc, retry_notices_a_change);
    tcase_add_test(tc, retry_only_within_the_bound);
    tcase_add_test(tc, retry_schedule_edges);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

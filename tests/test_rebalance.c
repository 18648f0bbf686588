/*
 * Distributed arrays on unequal devices: CLF_WEIGHTS_LEARNED leaving out a device too slow
 * to help, and CLF_ARRAY_REBALANCE moving the parts of a 1-D Jacobi between steps.
 *
 * Two one-unit sub-devices (FLEET2) run at the same speed, so one is made slow: by
 * CLFLEET_SIMULATE (simulated_slow_device), and elsewhere by the work, as the simulator's
 * clean figures would hide the noise of a shared host: the kernel spins `reps` rounds of a
 * hash per element, and `slow` times more on the units [slow_first, slow_end) that the test
 * sets, before every step, to the part the slow device holds now (clf_array_part_info()):
 * the slowness follows the device across moves, as a slower device's would. The spin does
 * not change the results (it is added times a zero the kernel cannot know), which must
 * equal a plain C reference bit for bit after every step, moves included.
 */
#include <math.h>

#include "common.h"

static const char SRC[] =
    "kernel void spin_jac(global const float *in, global float *out, uint slow_first,\n"
    "                     uint slow_end, uint reps, uint slow, float zero)\n"
    "{\n"
    "    size_t i = get_global_id(0), n = get_global_size(0);\n"
    "    float c = in[i];\n"
    "    float l = i > 0 ? in[i - 1] : c, r = i + 1 < n ? in[i + 1] : c;\n"
    "    uint h = (uint)i, k = i >= slow_first && i < slow_end ? reps * slow : reps;\n"
    "    for (uint j = 0; j < k; j++)\n"
    "        h = h * 1664525u + 1013904223u;\n"
    "    out[i] = ((l + c) + (c + r)) * 0.25f + zero * (float)(h & 1u);\n"
    "}\n"
    "kernel void resid(global const float *in, global const float *out, global float *r)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    r[i] = out[i] - in[i];\n"
    "}\n";

static clf_fleet *F2;
static clf_program *P;

static void open_f2(void)
{
    F2 = test_fleet(FLEET2, 0);
    ck_assert_uint_eq(clf_fleet_device_count(F2), 2);
    clf_status st = clf_program_build_source(&P, F2, SRC, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "build: %s", clf_last_error());
}

static void close_f2(void)
{
    clf_program_destroy(P);
    clf_fleet_destroy(F2);
    P = NULL;
    F2 = NULL;
}

/* Units device dev owns in arr (0 when it holds no part); its first unit in *first. */
static size_t units_on(const clf_array *arr, size_t dev, size_t *first)
{
    *first = 0;
    for (size_t p = 0; p < clf_array_part_count(arr); p++) {
        clf_array_part q;
        ck_assert_ok(clf_array_part_info(&q, arr, p));
        if (q.device == dev) {
            *first = q.first;
            return q.count;
        }
    }
    return 0;
}

/* Both arrays cut alike (the launch refuses anything else, but say it here first). */
static void expect_same_cut(const clf_array *a, const clf_array *b)
{
    ck_assert_uint_eq(clf_array_part_count(a), clf_array_part_count(b));
    for (size_t p = 0; p < clf_array_part_count(a); p++) {
        clf_array_part x, y;
        ck_assert_ok(clf_array_part_info(&x, a, p));
        ck_assert_ok(clf_array_part_info(&y, b, p));
        ck_assert_uint_eq(x.device, y.device);
        ck_assert_uint_eq(x.first, y.first);
        ck_assert_uint_eq(x.count, y.count);
    }
}

typedef struct run_result {
    size_t migrations;
    size_t parts;          /* at the end */
    size_t slow_units;     /* the slow device's units at the end */
    size_t fast_units;     /* device 0's */
    size_t min_slow_units; /* the fewest the slow device held at any step */
    clf_array_balance bal; /* of the array written last */
} run_result;

/*
 * `steps` Jacobi steps of n units over a two-part array pair (equal parts at first, flags
 * such as CLF_ARRAY_REBALANCE), device 1 `slow` times slower, except at step spike_at
 * (SIZE_MAX: none) where it is `spike` times slower; every check_every-th step and the
 * last checked bit for bit (the others stay queued while the next launches come).
 */
static run_result jacobi_x(size_t n, size_t steps, unsigned reps, unsigned slow,
                           unsigned flags, size_t spike_at, unsigned spike, size_t check_every,
                           int with_resid, int contend)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = sizeof(float);
    d.shape[0] = n;
    d.halo_before = d.halo_after = 1;
    d.flags = flags;
    clf_array *a = NULL, *b = NULL;
    ck_assert_ok(clf_array_create(&a, F2, &d));
    ck_assert_ok(clf_array_create(&b, F2, &d));
    clf_array *res = NULL; /* with_resid: the step's change, a second kernel each step */
    if (with_resid)
        ck_assert_ok(clf_array_create(&res, F2, &d));
    ck_assert_uint_eq(clf_array_part_count(a), 2);
    float *cur = jacobi_grid(n, 7), *next = malloc(n * sizeof *next);
    float *got = malloc(n * sizeof *got);
    ck_assert(next && got);
    ck_assert_ok(clf_array_write(a, NULL, NULL, cur));
    const size_t SLOW = 1;
    run_result r = {0};
    r.min_slow_units = n;
    for (size_t s = 0; s < steps; s++) {
        clf_array *in = s % 2 ? b : a, *out = s % 2 ? a : b;
        expect_same_cut(in, out);
        size_t first, cnt = units_on(in, SLOW, &first);
        r.min_slow_units = cnt < r.min_slow_units ? cnt : r.min_slow_units;
        if (contend && cnt < n / 2) {
            /* Devices that slow each other down: once the fast one holds more than half,
             * every unit is slow (as two sub-devices of one busy CPU can be). */
            first = 0;
            cnt = n;
        }
        uint32_t sf = (uint32_t)first, se = (uint32_t)(first + cnt), rp = reps;
        uint32_t sl = s == spike_at ? spike : slow;
        float zero = 0.0f;
        clf_array_launch_desc ld = CLF_ARRAY_LAUNCH_DESC_INIT;
        ld.kernel = "spin_jac";
        ld.global[0] = n;
        ld.flags = CLF_ARRAY_EXCHANGE_BEFORE;
        clf_arg args[] = {CLF_ARRAY_IN(in),  CLF_ARRAY_OUT(out), CLF_SCALAR(&sf),
                          CLF_SCALAR(&se),   CLF_SCALAR(&rp),    CLF_SCALAR(&sl),
                          CLF_SCALAR(&zero)};
        /* A launch that moves the arrays first runs this step with the old slow range (its
         * time is off for one sample of the median, its results are the same). */
        ck_assert_ok(clf_array_launch(F2, P, &ld, args, 7));
        if (res) {
            /* Cut like in and out at the last launch; moved by this one, or before it by
             * the alignment of arrays launched together. */
            clf_array_launch_desc rd = CLF_ARRAY_LAUNCH_DESC_INIT;
            rd.kernel = "resid";
            rd.global[0] = n;
            clf_arg ra[] = {CLF_ARRAY_IN(in), CLF_ARRAY_IN(out), CLF_ARRAY_OUT(res)};
            ck_assert_ok(clf_array_launch(F2, P, &rd, ra, 3));
        }
        jacobi_ref_step(&cur, &next, 1, n, 1, 0);
        if ((s + 1) % check_every && s + 1 < steps)
            continue; /* queued steps pile up: later launches (and moves) find them */
        ck_assert_ok(clf_array_read(out, NULL, NULL, got));
        for (size_t i = 0; i < n; i++)
            expect(memcmp(&got[i], &cur[i], sizeof *got) == 0,
                   "step %zu unit %zu: %a, the reference %a (%zu parts)", s, i, (double)got[i],
                   (double)cur[i], clf_array_part_count(out));
        if (res) {
            ck_assert_ok(clf_array_read(res, NULL, NULL, got));
            for (size_t i = 0; i < n; i++) {
                float want = cur[i] - next[i]; /* next holds the step's input now */
                expect(memcmp(&got[i], &want, sizeof want) == 0,
                       "step %zu residual %zu: %a, the reference %a", s, i, (double)got[i],
                       (double)want);
            }
        }
        ck_assert_ok(clf_array_balance_info(&r.bal, out));
    }
    clf_array *last = steps % 2 ? b : a;
    ck_assert_ok(clf_array_balance_info(&r.bal, last));
    r.migrations = r.bal.migrations;
    r.parts = clf_array_part_count(last);
    size_t f;
    r.slow_units = units_on(last, SLOW, &f);
    r.fast_units = units_on(last, 0, &f);
    expect_same_cut(a, b);
    clf_array_destroy(res);
    free(cur);
    free(next);
    free(got);
    clf_array_destroy(a);
    clf_array_destroy(b);
    return r;
}

static run_result jacobi(size_t n, size_t steps, unsigned reps, unsigned slow, unsigned flags,
                         size_t spike_at, unsigned spike, size_t check_every, int with_resid)
{
    return jacobi_x(n, steps, reps, slow, flags, spike_at, spike, check_every, with_resid, 0);
}

/* A device 8x slower: its part shrinks toward a ninth, results exact across the moves. */
START_TEST(slow_device_shrinks)
{
    test_watchdog(240);
    const size_t n = 8192;
    run_result r = jacobi(n, 40, 400, 8, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 1, 0);
    fprintf(stderr, "slow_device_shrinks: %zu moves, slow device %zu units of %zu: %s\n",
            r.migrations, r.slow_units, n, r.bal.why);
    expect(r.migrations >= 1, "no move: %s", r.bal.why);
    expect(r.migrations <= 4, "%zu moves in 40 steps (one per 10 at most): %s", r.migrations,
           r.bal.why);
    /* A ninth is 910 units. Measured on a shared host, where another process can slow
     * either device for a while, so: it went well below the 4096 it started with (or to
     * none, when the speeds measured then said 50:1), and never came back above half. */
    expect(r.min_slow_units < n * 3 / 10, /* 0: left out, when a step measured it so */
           "the slow device held at least %zu of %zu units: %s", r.min_slow_units, n,
           r.bal.why);
    expect(r.slow_units < n / 2, "the slow device holds %zu of %zu units at the end: %s",
           r.slow_units, n, r.bal.why);
    ck_assert_uint_eq(r.slow_units + r.fast_units, n);
    test_watchdog_off();
}
END_TEST

/* The same with the host reading only every 8th step: launches (and moves, which wait for
 * the arrays' queued work) are queued behind steps not measured yet. */
START_TEST(slow_device_queued)
{
    test_watchdog(240);
    const size_t n = 8192;
    run_result r = jacobi(n, 40, 400, 8, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 8, 0);
    fprintf(stderr, "slow_device_queued: %zu moves, slow device %zu units of %zu: %s\n",
            r.migrations, r.slow_units, n, r.bal.why);
    expect(r.migrations >= 1, "no move: %s", r.bal.why);
    expect(r.min_slow_units < n * 3 / 10 && r.slow_units < n / 2,
           "the slow device held at least %zu and holds %zu of %zu units: %s",
           r.min_slow_units, r.slow_units, n, r.bal.why);
    test_watchdog_off();
}
END_TEST

/* Two kernels a step over the arrays (the stencil, then a residual into a third array that
 * only the second kernel uses): their speeds are combined, the third array follows the cut
 * of the arrays it is launched with, and the results stay exact. */
START_TEST(two_kernels_a_step)
{
    test_watchdog(240);
    const size_t n = 8192;
    run_result r = jacobi(n, 40, 400, 8, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 1, 1);
    fprintf(stderr, "two_kernels_a_step: %zu moves, slow device %zu units of %zu: %s\n",
            r.migrations, r.slow_units, n, r.bal.why);
    expect(r.migrations >= 1, "no move: %s", r.bal.why);
    expect(r.min_slow_units < n * 3 / 10 && r.slow_units < n / 2,
           "the slow device held at least %zu and holds %zu of %zu units: %s",
           r.min_slow_units, r.slow_units, n, r.bal.why);
    test_watchdog_off();
}
END_TEST

/*
 * The same slowness from the simulator instead of the kernel: CLFLEET_SIMULATE holds back
 * the completion of device 1's kernels (its profiling times with them), the kernel does the
 * same work everywhere. 8x: the slow part shrinks toward a ninth; 50x: to a sliver or none.
 */
static run_result sim_jacobi(const char *rules, size_t n, size_t steps)
{
    clf_fleet *f2 = F2;
    clf_program *p = P;
    setenv("CLFLEET_SIMULATE", rules, 1);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = FLEET2;
    clf_status st = clf_fleet_create(&F2, &o);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_msg(st == CLF_SUCCESS, "fleet with '%s': %s", rules, clf_last_error());
    ck_assert_ok(clf_program_build_source(&P, F2, SRC, NULL));
    run_result r = jacobi(n, steps, 400, 1, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 1, 0);
    clf_program_destroy(P);
    clf_fleet_destroy(F2);
    F2 = f2;
    P = p;
    return r;
}

START_TEST(simulated_slow_device)
{
    test_watchdog(240);
    const size_t n = 8192;
    run_result r = sim_jacobi("device=1,compute=0.125", n, 40);
    fprintf(stderr, "simulated_slow_device 8x: %zu moves, slow device %zu units of %zu: %s\n",
            r.migrations, r.slow_units, n, r.bal.why);
    expect(r.migrations >= 1, "no move: %s", r.bal.why);
    expect(r.min_slow_units < n * 3 / 10 && r.slow_units < n / 2,
           "the slow device held at least %zu and holds %zu of %zu units: %s",
           r.min_slow_units, r.slow_units, n, r.bal.why);
    r = sim_jacobi("device=1,compute=0.02", n, 24);
    fprintf(stderr, "simulated_slow_device 50x: %zu moves, slow device %zu units of %zu: %s\n",
            r.migrations, r.slow_units, n, r.bal.why);
    expect(r.min_slow_units < n / 10, "the slow device held at least %zu of %zu units: %s",
           r.min_slow_units, n, r.bal.why);
    test_watchdog_off();
}
END_TEST

/*
 * Units costly to move next to their compute, as a memory-bound stencil's rows are on a
 * GPU: each unit is a cell of WIDE floats of which the Jacobi reads and writes the first
 * only, and FIELDS more arrays of such cells (no halo, not read) move with the grid, so a
 * move's bytes are 256 times a unit's work. With a context per device (a GPU and
 * a CPU on two platforms) and device 1 simulated 7x slower, CLF_STRATEGY_AUTO must move the
 * parts toward device 0 within 120 steps. A move that had to pay for itself in 10 steps
 * never did (on an H200 + CPU no part ever moved); the steps already run count now. The
 * first floats equal a plain C Jacobi bit for bit after every 20th step and the last.
 */
#define WIDE 32
#define FIELDS 6
static const char WIDE_SRC[] =
    "kernel void wide_jac(global const float *in, global float *out, global const float *f0,\n"
    "                     global const float *f1, global const float *f2,\n"
    "                     global const float *f3, global const float *f4,\n"
    "                     global const float *f5)\n"
    "{\n"
    "    size_t i = get_global_id(0), n = get_global_size(0), w = 32;\n"
    "    float c = in[i * w];\n"
    "    float l = i > 0 ? in[(i - 1) * w] : c, r = i + 1 < n ? in[(i + 1) * w] : c;\n"
    "    out[i * w] = ((l + c) + (c + r)) * 0.25f;\n"
    "}\n";

START_TEST(context_per_device_moves)
{
    test_watchdog(240);
    const size_t n = 131072, steps = 120;
    setenv("CLFLEET_SIMULATE", "device=1,compute=0.15", 1);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = FLEET2 ";context=device";
    clf_fleet *f = NULL;
    clf_status st = clf_fleet_create(&f, &o);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_msg(st == CLF_SUCCESS, "fleet: %s", clf_last_error());
    ck_assert_uint_eq(clf_fleet_device_count(f), 2);
    clf_program *p = NULL;
    st = clf_program_build_source(&p, f, WIDE_SRC, NULL);
    ck_assert_msg(st == CLF_SUCCESS, "build: %s", clf_last_error());
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = WIDE * sizeof(float);
    d.shape[0] = n;
    d.halo_before = d.halo_after = 1;
    clf_array *a = NULL, *b = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    ck_assert_ok(clf_array_create(&b, f, &d));
    ck_assert_uint_eq(clf_array_part_count(a), 2);
    clf_array *fld[FIELDS];
    d.halo_before = d.halo_after = 0;
    for (size_t j = 0; j < FIELDS; j++)
        ck_assert_ok(clf_array_create(&fld[j], f, &d));
    size_t first, fast0 = units_on(a, 0, &first);
    float *cell = calloc(n * WIDE, sizeof *cell), *cur = malloc(n * sizeof *cur);
    float *next = malloc(n * sizeof *next);
    ck_assert(cell && cur && next);
    for (size_t i = 0; i < n; i++) {
        cur[i] = (float)((i * 2654435761u) % 1000u) / 7.0f;
        cell[i * WIDE] = cur[i];
    }
    ck_assert_ok(clf_array_write(a, NULL, NULL, cell));
    ck_assert_ok(clf_array_write(b, NULL, NULL, cell)); /* the pads: defined bytes */
    for (size_t s = 0; s < steps; s++) {
        clf_array *in = s % 2 ? b : a, *out = s % 2 ? a : b;
        clf_array_launch_desc ld = CLF_ARRAY_LAUNCH_DESC_INIT;
        ld.kernel = "wide_jac";
        ld.global[0] = n;
        ld.flags = CLF_ARRAY_EXCHANGE_BEFORE;
        /* The first steps as distributed: PoCL compiles the kernel for each part's offset
         * then, which the balancer would take for the devices' speed. */
        ld.strategy = s < 4 ? CLF_STRATEGY_STATIC : CLF_STRATEGY_AUTO;
        clf_arg args[] = {CLF_ARRAY_IN(in),     CLF_ARRAY_OUT(out),   CLF_ARRAY_IN(fld[0]),
                          CLF_ARRAY_IN(fld[1]), CLF_ARRAY_IN(fld[2]), CLF_ARRAY_IN(fld[3]),
                          CLF_ARRAY_IN(fld[4]), CLF_ARRAY_IN(fld[5])};
        ck_assert_ok(clf_array_launch(f, p, &ld, args, 2 + FIELDS));
        for (size_t i = 0; i < n; i++) {
            float c = cur[i], l = i > 0 ? cur[i - 1] : c, r = i + 1 < n ? cur[i + 1] : c;
            next[i] = ((l + c) + (c + r)) * 0.25f;
        }
        float *t = cur;
        cur = next;
        next = t;
        if ((s + 1) % 20 && s + 1 < steps)
            continue;
        ck_assert_ok(clf_array_read(out, NULL, NULL, cell));
        for (size_t i = 0; i < n; i++)
            expect(memcmp(&cell[i * WIDE], &cur[i], sizeof *cur) == 0,
                   "step %zu unit %zu: %a, the reference %a", s, i, (double)cell[i * WIDE],
                   (double)cur[i]);
    }
    clf_array *last = steps % 2 ? b : a;
    clf_array_balance bal;
    ck_assert_ok(clf_array_balance_info(&bal, last));
    size_t fast = units_on(last, 0, &first);
    fprintf(stderr, "context_per_device_moves: %zu moves, device 0 %zu of %zu units (%zu at "
            "first): %s\n", bal.migrations, fast, n, fast0, bal.why);
    expect(bal.migrations >= 1 && fast > fast0 + n / 4,
           "%zu moves, device 0 holds %zu of %zu units (%zu at first): %s", bal.migrations,
           fast, n, fast0, bal.why);
    free(cell);
    free(cur);
    free(next);
    for (size_t j = 0; j < FIELDS; j++)
        clf_array_destroy(fld[j]);
    clf_array_destroy(a);
    clf_array_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* A move that makes the step longer, measured (the devices slow each other down when the
 * parts change: the model's independent parts do not hold): moved back, then held. */
START_TEST(bad_move_undone)
{
    test_watchdog(240);
    const size_t n = 8192;
    run_result r = jacobi_x(n, 30, 200, 8, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 1, 0, 1);
    fprintf(stderr, "bad_move_undone: %zu moves, slow device %zu units of %zu: %s\n",
            r.migrations, r.slow_units, n, r.bal.why);
    /* Moved back at least once, and held there: the fast device ends with no more than
     * half (where the units are not slowed), however the noise of a shared host ordered
     * the moves before. */
    expect(r.migrations >= 2 && r.slow_units >= n / 2 && strstr(r.bal.why, "back"),
           "%zu moves, the slow device holds %zu of %zu units: %s", r.migrations,
           r.slow_units, n, r.bal.why);
    test_watchdog_off();
}
END_TEST

/* Without the flag the parts stay as they are, however slow a device. */
START_TEST(no_flag_no_move)
{
    test_watchdog(240);
    run_result r = jacobi(4096, 12, 40, 8, 0, SIZE_MAX, 0, 1, 0);
    ck_assert_uint_eq(r.migrations, 0);
    ck_assert_uint_eq(r.slow_units, 2048);
    test_watchdog_off();
}
END_TEST

/*
 * Equal devices: no thrashing. The devices are equal but the host is shared (other
 * processes take a core for milliseconds), so the measured speeds may really differ for a
 * while and a move may be right; what must hold is the cool-down (at most one move per
 * 10 launches: moves after steps 3, 13 and 23 at most in 30) and exact results. The
 * hysteresis itself, with speeds that do not depend on the host's load, is in
 * test_rebalplan.
 */
START_TEST(equal_speeds_no_thrash)
{
    test_watchdog(240);
    run_result r = jacobi(8192, 30, 40, 1, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 1, 0);
    fprintf(stderr, "equal_speeds_no_thrash: %zu moves, %zu and %zu units: %s\n",
            r.migrations, r.fast_units, r.slow_units, r.bal.why);
    expect(r.migrations <= 3, "%zu moves in 30 steps: %s", r.migrations, r.bal.why);
    ck_assert_uint_eq(r.slow_units + r.fast_units, 8192);
    ck_assert(r.bal.why[0] != 0);
    test_watchdog_off();
}
END_TEST

/* A device 400x slower helps less than its halo copies cost: it loses its part. */
START_TEST(far_too_slow_dropped)
{
    test_watchdog(240);
    const size_t n = 4096;
    run_result r = jacobi(n, 16, 20, 400, CLF_ARRAY_REBALANCE, SIZE_MAX, 0, 1, 0);
    fprintf(stderr, "far_too_slow_dropped: %zu moves, %zu parts: %s\n", r.migrations, r.parts,
            r.bal.why);
    expect(r.parts == 1 && r.slow_units == 0 && r.fast_units == n,
           "%zu parts, the slow device holds %zu units: %s", r.parts, r.slow_units, r.bal.why);
    expect(strstr(r.bal.why, "gets no part") != NULL, "no reason given: %s", r.bal.why);
    test_watchdog_off();
}
END_TEST

/* Windows (MPI's arrays) and other distributions are refused with the flag. */
START_TEST(refused)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 100;
    d.halo_before = d.halo_after = 1;
    d.window_units = 300;
    d.window_first = 100;
    d.flags = CLF_ARRAY_REBALANCE;
    clf_array *a = NULL;
    ck_assert_status(clf_array_create(&a, F2, &d), CLF_ERROR_UNSUPPORTED);
    ck_assert_ptr_null(a);
    ck_assert(strstr(clf_last_error(), "window") != NULL);
    d.window_units = d.window_first = 0;
    d.halo_before = d.halo_after = 0;
    d.dist = CLF_ARRAY_REPLICATED;
    ck_assert_status(clf_array_create(&a, F2, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.dist = CLF_ARRAY_BLOCK_CYCLIC;
    ck_assert_status(clf_array_create(&a, F2, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.dist = CLF_ARRAY_BLOCK;
    ck_assert_ok(clf_array_create(&a, F2, &d));
    clf_array_balance bal;
    ck_assert_status(clf_array_balance_info(NULL, a), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_balance_info(&bal, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_array_balance_info(&bal, a));
    ck_assert_uint_eq(bal.migrations, 0);
    ck_assert_uint_eq(bal.samples, 0);
    clf_array_destroy(a);
}
END_TEST

/*
 * CLF_WEIGHTS_LEARNED at creation: a device the perf model says is far too slow gets no
 * part, by the halo rule (share narrower than the halo) or by the step rule (the others
 * finish its share before it and its halo copies would); a moderately slower one keeps its
 * share. Needs two devices of different names (PoCL's pthread and basic): the model keys
 * devices by name, so FLEET2's twins cannot differ.
 */
START_TEST(learned_drop_at_creation)
{
    char dir[] = "/tmp/clf-rebal-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    size_t basic, other[2];
    int have = test_find_basic(f, &basic, other, "learned_drop_at_creation");
    clf_device_info ib, io;
    if (have) {
        ck_assert_ok(clf_device_get_info(&ib, f, basic));
        ck_assert_ok(clf_device_get_info(&io, f, other[0]));
    }
    clf_fleet_destroy(f);
    if (!have) {
        rmdir(dir);
        return;
    }
    /* Units per second: fast 1e6; basic 1e2 (halo rule), 1e4 (step rule: 1001 units take
     * 1.00 ms alone, 0.99 ms + 60 us of halo copies with it), 5e5 (kept). */
    static const char *K[] = {"k_halo", "k_step", "k_kept"};
    static const double SLOWV[] = {1e2, 1e4, 5e5};
    snprintf(path, sizeof path, "%s/perf-v1.tsv", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    for (int i = 0; i < 3; i++) {
        fprintf(fp, "v1\t%s@0123456789abcdef\t%s|%s|cu=%u\t1\t1000000\n", K[i], io.name,
                io.driver_version, io.compute_units);
        fprintf(fp, "v1\t%s@0123456789abcdef\t%s|%s|cu=%u\t1\t%.0f\n", K[i], ib.name,
                ib.driver_version, ib.compute_units, SLOWV[i]);
    }
    fclose(fp);
    o.cache_dir = dir;
    ck_assert_ok(clf_fleet_create(&f, &o));
    size_t devs[2] = {other[0], basic};
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 1001;
    d.devices = devs;
    d.num_devices = 2;
    d.halo_before = d.halo_after = 1;
    d.weights_mode = CLF_WEIGHTS_LEARNED;
    for (int i = 0; i < 3; i++) {
        d.kernel = K[i];
        clf_array *a = NULL;
        ck_assert_ok(clf_array_create(&a, f, &d));
        clf_array_balance bal;
        ck_assert_ok(clf_array_balance_info(&bal, a));
        size_t first;
        if (i < 2) {
            ck_assert_uint_eq(clf_array_part_count(a), 1);
            ck_assert_uint_eq(units_on(a, other[0], &first), 1001);
            expect(strstr(bal.why, "gets no part") != NULL &&
                       strstr(bal.why, i == 0 ? "narrower than the halo" : "sooner") != NULL,
                   "%s: %s", K[i], bal.why);
            /* One part: the whole range on the fast device, written and read back. */
            float *x = jacobi_grid(1001, 3), *y = malloc(1001 * sizeof *y);
            ck_assert(y);
            ck_assert_ok(clf_array_write(a, NULL, NULL, x));
            ck_assert_ok(clf_array_read(a, NULL, NULL, y));
            ck_assert(memcmp(x, y, 1001 * sizeof *x) == 0);
            free(x);
            free(y);
        } else {
            ck_assert_uint_eq(clf_array_part_count(a), 2);
            ck_assert_uint_eq(units_on(a, basic, &first), 334); /* 1001 / 3 */
            ck_assert_str_eq(bal.why, "");
        }
        clf_array_destroy(a);
    }
    clf_fleet_destroy(f);
    remove(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rebalance");
    TCase *tc = tcase_create("fleet2");
    tcase_add_unchecked_fixture(tc, open_f2, close_f2);
    tcase_add_test(tc, refused);
    tcase_add_test(tc, learned_drop_at_creation);
    tcase_add_test(tc, no_flag_no_move);
    tcase_add_test(tc, equal_speeds_no_thrash);
    tcase_add_test(tc, slow_device_shrinks);
    tcase_add_test(tc, slow_device_queued);
    tcase_add_test(tc, two_kernels_a_step);
    tcase_add_test(tc, simulated_slow_device);
    tcase_add_test(tc, context_per_device_moves);
    tcase_add_test(tc, bad_move_undone);
    tcase_add_test(tc, far_too_slow_dropped);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET2, 2);
}

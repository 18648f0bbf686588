/*
 * $CLFLEET_SIMULATE on two one-core sub-devices of PoCL's pthread device (FLEET2): a slowed
 * device's kernels take about 1/F as long, latency and bandwidth caps hold back tiny and
 * large transfers, results stay right, the profiling figures see the simulated times, an
 * unset variable changes nothing (and starts no thread), and bad rules are refused.
 */
#include "common.h"

#include <clfleet/blas.h>
#include <math.h>

#include <dirent.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char src[] =
    "kernel void spin(global uint *out, uint n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint x = (uint)i * 2654435761u + 1u;\n"
    "    for (uint k = 0; k < n; k++)\n"
    "        x = x * 1664525u + 1013904223u;\n"
    "    out[i] = x;\n"
    "}\n"
    /* spin again, for learned_weights alone: the model learns a kernel's throughput per
     * name, whatever its arguments, and the other tests run spin with other counts. */
    "kernel void spin_learn(global uint *out, uint n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint x = (uint)i * 2654435761u + 1u;\n"
    "    for (uint k = 0; k < n; k++)\n"
    "        x = x * 1664525u + 1013904223u;\n"
    "    out[i] = x;\n"
    "}\n"
    /* Uneven work: the first third of the range costs 8x the rest (static_uneven). */
    "kernel void skew(global uint *out, uint n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint m = i < get_global_size(0) / 3 ? 8u * n : n;\n"
    "    uint x = (uint)i * 2654435761u + 1u;\n"
    "    for (uint k = 0; k < m; k++)\n"
    "        x = x * 1664525u + 1013904223u;\n"
    "    out[i] = x;\n"
    "}\n"
    /* spin with a seed per task, for the task queue's gate (taskq_gate, taskq_equal): its
     * own name, so that what the model learns of it comes from those tests alone. */
    "kernel void spin_task(global uint *out, uint n, uint seed)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint x = ((uint)i + seed) * 2654435761u + 1u;\n"
    "    for (uint k = 0; k < n; k++)\n"
    "        x = x * 1664525u + 1013904223u;\n"
    "    out[i] = x;\n"
    "}\n"
    "kernel void inc(global uint *a)\n"
    "{\n"
    "    a[get_global_id(0)] += 1u;\n"
    "}\n";

#define ITEMS 256

static uint32_t spin_ref(uint32_t i, uint32_t n)
{
    uint32_t x = i * 2654435761u + 1u;
    for (uint32_t k = 0; k < n; k++)
        x = x * 1664525u + 1013904223u;
    return x;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Threads of this process whose name is name, or (prefix) starts with it. The releases of
 * delayed commands are timed jobs of the helper pool ("clf-pool1" ...); "clfleet-sim" was
 * the name of the timer thread the simulation had before, and must not come back. */
static int threads_matching(const char *name, int prefix)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* gone meanwhile */
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        n += prefix ? strncmp(comm, name, strlen(name)) == 0 : strcmp(comm, name) == 0;
    }
    closedir(d);
    return n;
}

static int threads_named(const char *name)
{
    return threads_matching(name, 0);
}

/* Nonzero once no timer thread is left (polled for up to 5 s: the last reference to a fleet
 * may go on one of its launch threads, just after the test's clf_fleet_destroy()). */
static int timer_gone(void)
{
    for (int i = 0; i < 500; i++) {
        if (threads_named("clfleet-sim") == 0)
            return 1;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return 0;
}

/* A FLEET2 fleet created while $CLFLEET_SIMULATE holds rules (NULL: unset), and the program. */
static clf_fleet *sim_fleet(const char *rules, clf_program **p)
{
    if (rules)
        setenv("CLFLEET_SIMULATE", rules, 1);
    else
        unsetenv("CLFLEET_SIMULATE");
    clf_fleet *f = test_fleet(FLEET2, 0);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_uint_eq(clf_fleet_device_count(f), 2);
    ck_assert_ok(clf_program_build_source(p, f, src, NULL));
    return f;
}

/* Host time of one spin kernel of n iterations on device dev (enqueue to completion). */
static double spin_once(clf_fleet *f, clf_program *p, size_t dev, clf_buffer *out, uint32_t n)
{
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "spin";
    d.global[0] = ITEMS;
    clf_arg a[] = {CLF_BUF_OUT(out), CLF_SCALAR(&n)};
    clf_event *e = NULL;
    double t0 = now_s();
    ck_assert_ok(clf_kernel_enqueue(f, p, dev, &d, a, 2, NULL, 0, &e));
    ck_assert_ok(clf_event_wait(e));
    double t = now_s() - t0;
    clf_event_release(e);
    return t;
}

static void check_spin(clf_buffer *b, uint32_t n, const char *what)
{
    uint32_t got[ITEMS];
    ck_assert_ok(clf_buffer_read(b, 0, sizeof got, got));
    for (uint32_t i = 0; i < ITEMS; i++)
        expect(got[i] == spin_ref(i, n), "%s: item %u: %u, expected %u", what, i, got[i],
               spin_ref(i, n));
}

/* Iterations that make spin take about 12 ms on device dev (doubling from a small count):
 * long enough that the host-side cost of a run (larger under sanitizers) stays small beside
 * it. */
static uint32_t calibrate(clf_fleet *f, clf_program *p, size_t dev, clf_buffer *b)
{
    uint32_t n = 1u << 12;
    spin_once(f, p, dev, b, n); /* the first run compiles for the device */
    for (; n < (1u << 28); n *= 2) {
        double t[3];
        for (size_t r = 0; r < 3; r++)
            t[r] = spin_once(f, p, dev, b, n);
        if (median(t, 3) >= 0.012)
            break;
    }
    return n;
}

/* 5 runs of the same kernel on devices 0 and 1, in turn, so that the load of a shared machine
 * weighs on both alike: the medians of each device's times in med[] and the median of the
 * runs' ratios (device 1 / device 0) returned; the results checked. */
static double spin_pair(clf_fleet *f, clf_program *p, clf_buffer *b[2], uint32_t n, double med[2])
{
    double t[2][5], ratio[5];
    for (size_t r = 0; r < 5; r++) {
        for (size_t dev = 0; dev < 2; dev++)
            t[dev][r] = spin_once(f, p, dev, b[dev], n);
        ratio[r] = t[1][r] / t[0][r];
    }
    for (size_t dev = 0; dev < 2; dev++) {
        med[dev] = median(t[dev], 5);
        check_spin(b[dev], n, dev ? "device 1" : "device 0");
    }
    return median(ratio, 5);
}

/* A task queue of device dev alone runs one spin task: its kernel_s (from profiling), the
 * result checked. */
static double task_kernel_s(clf_fleet *f, clf_program *p, size_t dev, uint32_t n)
{
    clf_taskq *q;
    ck_assert_ok(clf_taskq_create(&q, f, p, &dev, 1));
    uint32_t out[ITEMS];
    clf_task_desc t = CLF_TASK_DESC_INIT;
    t.kernel = "spin";
    t.global[0] = ITEMS;
    clf_arg a[] = {CLF_WHOLE_OUT(out, sizeof out), CLF_SCALAR(&n)};
    size_t id;
    ck_assert_ok(clf_taskq_submit(q, &t, a, 2, &id));
    ck_assert_ok(clf_taskq_run(q, NULL));
    clf_task_info info;
    ck_assert_ok(clf_taskq_task_info(&info, q, id));
    clf_taskq_destroy(q);
    ck_assert_uint_eq(info.device, dev);
    for (uint32_t i = 0; i < ITEMS; i++)
        expect(out[i] == spin_ref(i, n), "task on device %zu: item %u: %u, expected %u", dev, i,
               out[i], spin_ref(i, n));
    return info.kernel_s;
}

/* (1) compute=0.1: device 1's kernels take about 10x device 0's; (4) the results are right;
 * the metrics' kernel time (profiling) shows the slowdown too; the simulation starts no
 * thread of its own (its releases are timed jobs of the helper pool, which stays within its
 * bound and the one thread more that timed jobs may start). */
START_TEST(compute_factor)
{
    test_watchdog(120);
    ck_assert(timer_gone());
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.1", &p);
    ck_assert_int_eq(threads_named("clfleet-sim"), 0);
    clf_buffer *b[2];
    for (size_t dev = 0; dev < 2; dev++)
        ck_assert_ok(clf_buffer_create(&b[dev], f, dev, ITEMS * sizeof(uint32_t), 0));
    uint32_t n = calibrate(f, p, 0, b[0]);
    spin_once(f, p, 1, b[1], n); /* the first run on device 1 compiles */
    /* Up to 3 tries of each measurement: a 2-core machine shared with other jobs can stall
     * one device's runs for a while; a simulation that does not work fails every try. */
    double med[2], ratio = 0, kratio = 0;
    clf_device_metrics m[2];
    for (int try = 0; try < 3; try++) {
        ck_assert_ok(clf_metrics_reset(f));
        ratio = spin_pair(f, p, b, n, med);
        /* The profiling figures the cost model and the metrics learn from see it too. */
        for (size_t dev = 0; dev < 2; dev++) {
            ck_assert_ok(clf_metrics_device(&m[dev], f, dev));
            ck_assert_uint_eq(m[dev].kernels, 5);
        }
        kratio = m[1].busy_s / m[0].busy_s;
        fprintf(stderr,
                "compute=0.1: %u iterations, device 0 %.2f ms, device 1 %.2f ms (medians); "
                "ratio %.1fx; from profiling %.2f ms / %.2f ms: %.1fx\n",
                n, med[0] * 1e3, med[1] * 1e3, ratio, m[1].busy_s * 1e3 / 5,
                m[0].busy_s * 1e3 / 5, kratio);
        if (ratio >= 3 && ratio <= 40 && kratio >= 3 && kratio <= 40)
            break;
    }
    expect(ratio >= 3 && ratio <= 40,
           "device 1 / device 0 = %.2f (medians %.2f ms / %.2f ms), not about 10", ratio,
           med[1] * 1e3, med[0] * 1e3);
    expect(kratio >= 3 && kratio <= 40, "profiled kernel time ratio %.2f, not about 10", kratio);

    /* A task queue's kernel time (its own profiling read) is the simulated one too. */
    double tr = 0;
    for (int try = 0; try < 3; try++) {
        double tk[2][3], tratio[3];
        for (size_t r = 0; r < 3; r++) {
            for (size_t dev = 0; dev < 2; dev++)
                tk[dev][r] = task_kernel_s(f, p, dev, n);
            tratio[r] = tk[1][r] / tk[0][r];
        }
        tr = median(tratio, 3);
        fprintf(stderr, "compute=0.1: task kernel_s %.2f ms / %.2f ms: %.1fx\n",
                median(tk[1], 3) * 1e3, median(tk[0], 3) * 1e3, tr);
        if (tr >= 3 && tr <= 40)
            break;
    }
    expect(tr >= 3 && tr <= 40, "task kernel_s ratio %.2f, not about 10", tr);
    /* CLFLEET_THREADPOOL_SIZE is unset here: the default bound, 4, plus the timed jobs' one. */
    ck_assert_int_eq(threads_named("clfleet-sim"), 0);
    ck_assert_int_ge(threads_matching("clf-pool", 1), 1); /* the releases ran there */
    ck_assert_int_le(threads_matching("clf-pool", 1), 4 + 1);

    /* Chained on the slowed device: a kernel, then another that waits for its event, then a
     * read: each sees the delayed event complete with its data in place. */
    clf_kernel_desc d = CLF_KERNEL_DESC_INIT;
    d.kernel = "inc";
    d.global[0] = ITEMS;
    clf_arg a[] = {CLF_BUF_INOUT(b[1])};
    clf_event *e1 = NULL, *e2 = NULL;
    ck_assert_ok(clf_kernel_enqueue(f, p, 1, &d, a, 1, NULL, 0, &e1));
    ck_assert_ok(clf_kernel_enqueue(f, p, 1, &d, a, 1, &e1, 1, &e2));
    /* A buffer read does not wait for kernels (it runs on the transfer queue): the delayed
     * event of the second kernel must mean that both have run. */
    ck_assert_ok(clf_event_wait(e2));
    uint32_t got[ITEMS];
    clf_event *e3 = NULL;
    ck_assert_ok(clf_buffer_read_async(b[1], 0, sizeof got, got, &e3));
    ck_assert_ok(clf_event_wait(e3));
    for (uint32_t i = 0; i < ITEMS; i++)
        expect(got[i] == spin_ref(i, n) + 2, "chained: item %u: %u, expected %u", i, got[i],
               spin_ref(i, n) + 2);
    clf_event_release(e1);
    clf_event_release(e2);
    clf_event_release(e3);
    for (size_t dev = 0; dev < 2; dev++)
        clf_buffer_destroy(b[dev]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    ck_assert_msg(timer_gone(), "the timer thread outlived the last simulated fleet");
    test_watchdog_off();
}
END_TEST

/* (4) A launch over the simulated pair, every strategy: the results are right (the launch
 * executor's chunks, inputs and outputs go through delayed events). */
START_TEST(launch_correct)
{
    test_watchdog(120);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.25,latency=200us,h2d=2G,d2h=2G", &p);
    static const clf_strategy strat[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                         CLF_STRATEGY_GUIDED, CLF_STRATEGY_AUTO};
    enum { N = 1 << 16 };
    uint32_t *out = malloc(N * sizeof *out);
    ck_assert(out);
    uint32_t iters = 64;
    for (size_t s = 0; s < (sizeof strat / sizeof *strat); s++) {
        memset(out, 0, N * sizeof *out);
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "spin";
        d.global[0] = N;
        d.strategy = strat[s];
        clf_arg a[] = {CLF_OUT(out, N * sizeof *out, sizeof *out), CLF_SCALAR(&iters)};
        clf_launch_report r;
        ck_assert_ok(clf_launch(f, p, &d, a, 2, &r));
        for (uint32_t i = 0; i < N; i++)
            expect(out[i] == spin_ref(i, iters), "%s: item %u: %u, expected %u",
                   clf_strategy_name(strat[s]), i, out[i], spin_ref(i, iters));
    }
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    ck_assert_msg(timer_gone(), "the timer thread outlived the last simulated fleet");
    test_watchdog_off();
}
END_TEST

/*
 * A short launch on a 50:1 pair where every chunk costs a fixed round trip (latency on both
 * devices), every pooled strategy (DYNAMIC, GUIDED, MEMORY_AWARE): the results are the same
 * as any one device's and the fast device takes work. Once the cost model has its lines
 * these strategies cut no chunk whose fixed cost is more than about 10 % of its time, so
 * the fast device runs the launch in a few chunks, not DYNAMIC's 16 per device (issue 27:
 * 32 chunks and 1.8 ms against 0.5 ms alone on an H200); the chunk counts are printed, not
 * asserted (see below).
 */
START_TEST(chunks_worth_their_cost)
{
    test_watchdog(240);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=0,latency=40us;device=1,compute=0.02,latency=60us", &p);
    static const clf_strategy strat[] = {CLF_STRATEGY_DYNAMIC, CLF_STRATEGY_GUIDED,
                                         CLF_STRATEGY_MEMORY_AWARE};
    /* About 1 ms on the fast device: some 25 round trips of 40 us, so a floor of 9 round
     * trips of work per chunk leaves it 3 or so chunks. */
    enum { N = 4096 };
    uint32_t *out = malloc(N * sizeof *out);
    ck_assert(out);
    uint32_t iters = 256;
    for (size_t s = 0; s < (sizeof strat / sizeof *strat); s++) {
        clf_launch_report r;
        unsigned chunks[2] = {0, 0};
        /* The first launches teach the model (fixed cost and rate per device); the last
         * one is checked. Up to 3 rounds: a round's last launch may be a relapse on a
         * loaded host (a chunk or two more); a floor that does not work fails every round. */
        for (int round = 0; round < 3; round++) {
            for (int k = 0; k < 6; k++) {
                memset(out, 0, N * sizeof *out);
                clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
                d.kernel = "spin";
                d.global[0] = N;
                d.strategy = strat[s];
                clf_arg a[] = {CLF_OUT(out, N * sizeof *out, sizeof *out), CLF_SCALAR(&iters)};
                ck_assert_ok(clf_launch(f, p, &d, a, 2, &r));
                for (uint32_t i = 0; i < N; i++)
                    expect(out[i] == spin_ref(i, iters), "%s: item %u: %u, expected %u",
                           clf_strategy_name(strat[s]), i, out[i], spin_ref(i, iters));
            }
            chunks[0] = chunks[1] = 0;
            for (size_t i = 0; i < r.num_devices; i++)
                if (r.dev[i].device < 2)
                    chunks[r.dev[i].device] += r.dev[i].chunks;
            fprintf(stderr, "%s: chunks %u on device 0, %u on device 1 (%s)\n",
                    clf_strategy_name(strat[s]), chunks[0], chunks[1], r.reason);
            if (chunks[0] + chunks[1] <= 6)
                break;
        }
        /* Before the floor DYNAMIC cut 16 chunks per device; with it, once the model's lines
         * are fitted, 1 to 3. While dynamic's chunks were all one size, the floor did not
         * engage in about one fresh run in four (23-26 + 6-7 chunks after 18 launches): the
         * line had no sizes apart to be fitted from (issue 27). The chunks now vary while
         * the line is learned, and a line resting on two samples is refused; with four CPU
         * hogs beside it the floor engaged by the second launch in 10 runs of 10. */
        expect(UNDER_SANITIZER || chunks[0] + chunks[1] <= 6,
               "%s: %u + %u chunks after %d rounds of 6 launches: the chunk floor did not "
               "engage", clf_strategy_name(strat[s]), chunks[0], chunks[1], 3);
        expect(chunks[0] >= 1, "%s: the fast device took nothing", clf_strategy_name(strat[s]));
    }
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* The cost model learns the simulated device's speed, under a key of its own: after a few
 * launches, static's learned weights give the 4x slower device about a fifth of the range;
 * the same devices unsimulated, in a new fleet, are not taken for slow ones. */
static double static_share1(const char *rules, unsigned launches, char *reason, size_t n)
{
    clf_program *p;
    clf_fleet *f = sim_fleet(rules, &p);
    enum { N = 1 << 15 };
    uint32_t *out = malloc(N * sizeof *out);
    ck_assert(out);
    uint32_t iters = 2048;
    clf_launch_report r;
    for (unsigned k = 0; k < launches; k++) {
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "spin_learn";
        d.global[0] = N;
        d.strategy = CLF_STRATEGY_STATIC;
        clf_arg a[] = {CLF_OUT(out, N * sizeof *out, sizeof *out), CLF_SCALAR(&iters)};
        ck_assert_ok(clf_launch(f, p, &d, a, 2, &r));
    }
    for (uint32_t i = 0; i < N; i += 97)
        expect(out[i] == spin_ref(i, iters), "item %u: %u, expected %u", i, out[i],
               spin_ref(i, iters));
    double share = 0;
    for (size_t i = 0; i < r.num_devices; i++)
        if (r.dev[i].device == 1)
            share = r.dev[i].share;
    snprintf(reason, n, "%s", r.reason);
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    return share;
}

START_TEST(learned_weights)
{
    test_watchdog(120);
    char why[256];
    double s1 = static_share1("device=1,compute=0.25", 4, why, sizeof why);
    fprintf(stderr, "compute=0.25: static's share for device 1 after 4 launches: %.3f (%s)\n", s1,
            why);
    expect(strstr(why, "learned"), "static did not use learned weights: %s", why);
    expect(s1 > 0.05 && s1 < 0.4, "device 1 (4x slower) got a share of %.3f, not about 0.2", s1);
    double s0 = static_share1(NULL, 2, why, sizeof why);
    fprintf(stderr, "unset: static's share for device 1: %.3f (%s)\n", s0, why);
    expect(s0 > 0.3 && s0 < 0.7, "equal devices: device 1 got %.3f, learned from the simulated "
           "one?", s0);
    test_watchdog_off();
}
END_TEST

/* STATIC on a 200:1 pair: once the speeds are learned, the slow device gets no share (it
 * could save at most 0.5 %, and would end last if its speed were a little off), and the reason
 * says so. 200:1, not 100:1: the speeds are learned from whole launches on a host that may be
 * loaded, and a 100:1 pair was once learned as 21:1 (a share of 4.5 % against the 5 % limit)
 * when the fast device's run was stalled. */
START_TEST(static_leaves_out_a_minor_device)
{
    test_watchdog(240);
    char why[300];
    double s1 = static_share1("device=1,compute=0.005", 3, why, sizeof why);
    fprintf(stderr, "compute=0.005: static's share for device 1: %.3f (%s)\n", s1, why);
    expect(s1 == 0 && strstr(why, "device 1 left out"),
           "device 1 (200x slower) got a share of %.3f: %s", s1, why);
    test_watchdog_off();
}
END_TEST

/*
 * STATIC on uneven work over a 2:1 pair: shares by speed would give the fast device two
 * thirds of the range, all of the costly first third with it, and it would end last. With
 * the work profile learned from the first launches, the shares are cut where the devices'
 * times are equal: the fast device takes about 0.28 of the range (its two thirds of the
 * work), and the two devices' kernel times (profiling, simulated delays included) agree.
 * Shares and kernel times, not wall time: the host may be loaded. Results are integers,
 * so they are byte-identical to any one device's.
 */
START_TEST(static_uneven)
{
    test_watchdog(240);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.5", &p);
    enum { N = 3 << 12, LAUNCHES = 14, LAST = 7 };
    uint32_t *out = malloc(N * sizeof *out), iters = 512;
    ck_assert(out);
    double share0[LAUNCHES] = {0}, balance[LAUNCHES] = {0};
    clf_launch_report r;
    for (int k = 0; k < LAUNCHES; k++) {
        memset(out, 0, N * sizeof *out);
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "skew";
        d.global[0] = N;
        d.strategy = CLF_STRATEGY_STATIC;
        clf_arg a[] = {CLF_OUT(out, N * sizeof *out, sizeof *out), CLF_SCALAR(&iters)};
        ck_assert_ok(clf_launch(f, p, &d, a, 2, &r));
        double busy[2] = {0, 0}, fin[2] = {0, 0};
        for (size_t i = 0; i < r.num_devices; i++) {
            if (r.dev[i].device == 0)
                share0[k] = r.dev[i].share;
            if (r.dev[i].device < 2) {
                busy[r.dev[i].device] = r.dev[i].busy_s;
                fin[r.dev[i].device] = r.dev[i].finish_s;
            }
        }
        balance[k] = busy[0] < busy[1] ? busy[0] / busy[1] : busy[1] / busy[0];
        fprintf(stderr, "static_uneven %d: device 0 share %.3f, kernel s %.4f / %.4f, finish s "
                "%.4f / %.4f (%s)\n", k, share0[k], busy[0], busy[1], fin[0], fin[1], r.reason);
        for (uint32_t i = 0; i < N; i++) {
            uint32_t x = i * 2654435761u + 1u, m = i < N / 3 ? 8 * iters : iters;
            for (uint32_t j = 0; j < m; j++)
                x = x * 1664525u + 1013904223u;
            if (out[i] != x)
                ck_abort_msg("launch %d: item %u: %u, expected %u", k, i, out[i], x);
        }
    }
    expect(strstr(r.reason, "cut by the work profile"),
           "static did not cut by the work profile: %s", r.reason);
    /* The last seven launches: the median share and balance (a loaded host stalls a device's
     * kernels now and then: 0.32 and 0.58 were seen next to 0.88 with the CI and four builds
     * on two cores, and with two CPU hogs besides, one device's kernels 3-4x their time for
     * three launches in a row, the cut right). A cut by speed alone would give a balance of
     * about 0.2. */
    double s = median(share0 + LAUNCHES - LAST, LAST), b = median(balance + LAUNCHES - LAST, LAST);
    /* Judged on a loaded host too: the fresh-clone CI's distcheck once had a device 1 kernel
     * 5x its usual time in the second launch, and static then kept a cut of 0.526 with
     * kernel times 2.7x apart for eight launches (issue 27); the work profile's calibration
     * by each device's measured time (workprof.c) now pulls such a cut back. Up to 0.40:
     * with two CPU hogs on two cores the kernel times swing 5x from launch to launch, and
     * the cut follows what they measure (0.365 once, in 40 runs). The balance above 0.4: a
     * cut by speed gives about 0.2, and there one device's kernels took up to 7x their time
     * at the right cut (a median of 0.50 once, in 40 runs). */
    expect(s > 0.20 && s < 0.40, "the fast device's share is %.3f, not about 0.28", s);
    expect(b > 0.4, "the devices' kernel times differ: %.2f of each other", b);
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* GEMM: clBLAST enqueues its kernels itself, outside the command path, which adopts the last
 * one; with even user weights both devices take half of C, and the slowed device's kernel
 * time (profiling) per block is about 10x. The result against a plain C loop. */
START_TEST(gemm_slowed)
{
    if (!clf_blas_available()) {
        fprintf(stderr, "SKIP gemm_slowed: built without clBLAST or it cannot be loaded\n");
        return;
    }
    /* clBLAST compiles for both devices with a cold PoCL cache (a helper's run under a load
     * of 4-6 on 2 cores passed 360 s once); device 1 runs 10x slower; sanitizers. */
    test_watchdog(600);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.1", &p);
    enum { M = 256, N = 256, K = 256 };
    float *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b);
    float *c = calloc(M * N, sizeof *c), *ref = calloc(M * N, sizeof *ref);
    ck_assert(a && b && c && ref);
    for (size_t i = 0; i < M * K; i++)
        a[i] = (float)(lowbias32((uint32_t)i) % 17) / 8.0f - 1.0f;
    for (size_t i = 0; i < K * N; i++)
        b[i] = (float)(lowbias32((uint32_t)i + 99991u) % 13) / 8.0f - 0.75f;
    for (size_t i = 0; i < M; i++)
        for (size_t kk = 0; kk < K; kk++)
            for (size_t j = 0; j < N; j++)
                ref[i * N + j] += a[i * K + kk] * b[kk * N + j];
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    o.strategy = CLF_STRATEGY_STATIC;
    o.weights_mode = CLF_WEIGHTS_USER;
    static const double even[2] = {1, 1};
    o.weights = even;
    clf_launch_report r;
    /* The first call builds clBLAST's kernels; then up to 3 tries, as in compute_factor. */
    ck_assert_ok(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, M, N, K, 1.0f, a, K, b,
                           N, 0.0f, c, N, &o, &r));
    double ratio = 0;
    for (int try = 0; try < 3; try++) {
        memset(c, 0, M * N * sizeof *c);
        ck_assert_ok(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, M, N, K, 1.0f, a, K,
                               b, N, 0.0f, c, N, &o, &r));
        for (size_t i = 0; i < M * N; i++)
            expect(fabsf(c[i] - ref[i]) <= 1e-3f * (1.0f + fabsf(ref[i])),
                   "C[%zu] = %g, expected %g", i, c[i], ref[i]);
        ck_assert_uint_eq(r.num_devices, 2);
        double per[2] = {0, 0};
        for (size_t i = 0; i < 2; i++) {
            ck_assert_uint_gt(r.dev[i].units, 0);
            per[r.dev[i].device] = r.dev[i].busy_s / (double)r.dev[i].units;
        }
        ratio = per[1] / per[0];
        fprintf(stderr, "GEMM compute=0.1: kernel time per unit of C, device 1 / device 0: %.1fx\n",
                ratio);
        /* Up to 60: a loaded host stalls either device's real kernels (39x was seen once);
         * the slowdown applied twice would give 100x. */
        if (ratio >= 3 && ratio <= 60)
            break;
    }
    expect(ratio >= 3 && ratio <= 60, "GEMM: device 1 / device 0 kernel time per unit %.2f, "
           "not about 10", ratio);
    free(a);
    free(b);
    free(c);
    free(ref);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* (2) latency=20ms: every tiny write to device 1 takes at least 20 ms; device 0 is as fast
 * as ever. */
START_TEST(latency)
{
    test_watchdog(60);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,latency=20ms", &p);
    clf_buffer *b[2];
    uint32_t v = 7;
    double med[2];
    for (size_t dev = 0; dev < 2; dev++) {
        ck_assert_ok(clf_buffer_create(&b[dev], f, dev, 64, 0));
        double t[5];
        for (size_t r = 0; r < 5; r++) {
            double t0 = now_s();
            ck_assert_ok(clf_buffer_write(b[dev], 0, sizeof v, &v));
            t[r] = now_s() - t0;
            if (dev == 1)
                expect(t[r] >= 0.020, "a 4-byte write to device 1 took %.2f ms, under the 20 ms "
                       "latency", t[r] * 1e3);
        }
        med[dev] = median(t, 5);
        uint32_t back = 0;
        ck_assert_ok(clf_buffer_read(b[dev], 0, sizeof back, &back));
        ck_assert_uint_eq(back, 7);
    }
    fprintf(stderr, "latency=20ms: a 4-byte write: device 0 %.3f ms, device 1 %.3f ms\n",
            med[0] * 1e3, med[1] * 1e3);
    expect(med[0] < 0.020, "device 0 has no rule, yet a 4-byte write took %.2f ms", med[0] * 1e3);
    for (size_t dev = 0; dev < 2; dev++)
        clf_buffer_destroy(b[dev]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* (3) h2d=100M, d2h=100M: 10 MB each way takes at least 0.1 s on device 1; the data
 * arrives intact. */
START_TEST(bandwidth)
{
    test_watchdog(60);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,h2d=100M,d2h=100M", &p);
    size_t size = 10 * 1000 * 1000;
    unsigned char *h = malloc(size), *back = malloc(size);
    ck_assert(h && back);
    for (size_t i = 0; i < size; i++)
        h[i] = (unsigned char)lowbias32((uint32_t)i);
    clf_buffer *b;
    ck_assert_ok(clf_buffer_create(&b, f, 1, size, 0));
    double t0 = now_s();
    ck_assert_ok(clf_buffer_write(b, 0, size, h));
    double tw = now_s() - t0;
    t0 = now_s();
    ck_assert_ok(clf_buffer_read(b, 0, size, back));
    double tr = now_s() - t0;
    fprintf(stderr, "h2d=d2h=100M: 10 MB write %.1f ms, read %.1f ms\n", tw * 1e3, tr * 1e3);
    expect(tw >= 0.095, "10 MB written at 100 MB/s in %.1f ms", tw * 1e3);
    expect(tr >= 0.095, "10 MB read at 100 MB/s in %.1f ms", tr * 1e3);
    expect(memcmp(h, back, size) == 0, "the data read back differs");
    clf_buffer_destroy(b);
    free(h);
    free(back);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* (5) Unset (or empty): no timer thread, and both devices run the same kernel alike. */
START_TEST(unset_changes_nothing)
{
    test_watchdog(120);
    clf_program *p;
    ck_assert(timer_gone()); /* the earlier tests' */
    setenv("CLFLEET_SIMULATE", " ; ", 1); /* blank rules: as unset */
    clf_fleet *f0 = test_fleet(FLEET2, 0);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_int_eq(threads_named("clfleet-sim"), 0);
    clf_fleet_destroy(f0);
    clf_fleet *f = sim_fleet(NULL, &p);
    clf_buffer *b[2];
    for (size_t dev = 0; dev < 2; dev++)
        ck_assert_ok(clf_buffer_create(&b[dev], f, dev, ITEMS * sizeof(uint32_t), 0));
    uint32_t n = calibrate(f, p, 0, b[0]);
    spin_once(f, p, 1, b[1], n);
    /* Nothing slows device 1: the compute=0.1 case's ratio of about 10 must not appear. (No
     * lower bound: device 0 may be the one a loaded machine stalls.) Up to 3 tries, as
     * there. */
    double med[2], ratio = 0;
    for (int try = 0; try < 3; try++) {
        ratio = spin_pair(f, p, b, n, med);
        fprintf(stderr, "unset: device 0 %.2f ms, device 1 %.2f ms: %.2fx\n", med[0] * 1e3,
                med[1] * 1e3, ratio);
        if (ratio < 3)
            break;
    }
    expect(ratio < 3, "equal devices, nothing simulated, and device 1 ran %.2fx device 0's time",
           ratio);
    ck_assert_int_eq(threads_named("clfleet-sim"), 0);
    for (size_t dev = 0; dev < 2; dev++)
        clf_buffer_destroy(b[dev]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* (6) Bad rules: clf_fleet_create() fails with CLF_ERROR_PARSE naming the variable, the rule
 * and the words; no thread is left behind. */
START_TEST(bad_rules)
{
    static const struct {
        const char *rules, *why;
    } bad[] = {
        {"device=1,speed=0.5", "rule 1 'device=1,speed=0.5': unknown key 'speed'"},
        {"device=1,compute=2", "compute '2' is not a factor in (0, 1]"},
        {"device=0,latency=1ms;device=1,latency=5parsecs", "rule 2"},
        {"device=1,h2d=fast", "bandwidth 'fast'"},
        {"device=1", "alone changes nothing"},
        {"device=2,compute=0.5", "rule 1 names device 2, the fleet has 2"},
        {"device=0,compute=0.5;device=7,latency=1ms", "rule 2 names device 7"},
    };
    for (size_t i = 0; i < (sizeof bad / sizeof *bad); i++) {
        setenv("CLFLEET_SIMULATE", bad[i].rules, 1);
        clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
        o.devices = FLEET2;
        clf_fleet *f = (clf_fleet *)&o; /* must be cleared */
        clf_status st = clf_fleet_create(&f, &o);
        unsetenv("CLFLEET_SIMULATE");
        const char *msg = clf_last_error();
        ck_assert_msg(st == CLF_ERROR_PARSE && f == NULL, "'%s': %s", bad[i].rules,
                      clf_status_name(st));
        ck_assert_msg(strstr(msg, "CLFLEET_SIMULATE='") && strstr(msg, bad[i].why),
                      "'%s': message '%s' lacks '%s'", bad[i].rules, msg, bad[i].why);
        if (!strstr(bad[i].why, "names device"))
            ck_assert_msg(strstr(msg, "device, compute, latency, h2d, d2h"),
                          "'%s': message '%s' lacks the words", bad[i].rules, msg);
    }
    ck_assert_int_eq(threads_named("clfleet-sim"), 0);
}
END_TEST

/* ---- task queues: the steal gate ------------------------------------------------------- */

enum { TASKS = 16 };

static uint32_t spin_task_ref(uint32_t i, uint32_t n, uint32_t seed)
{
    uint32_t x = (i + seed) * 2654435761u + 1u;
    for (uint32_t k = 0; k < n; k++)
        x = x * 1664525u + 1013904223u;
    return x;
}

/* One run of ntasks (at most TASKS) equal spin_task tasks (n iterations) over the fleet's
 * two devices, with the affinity given: how many each device ran (count[]) and its report's
 * passed; every result checked against the C loop, every task's device against the report. */
static void spin_tasks(clf_fleet *f, clf_program *p, uint32_t n, uint32_t ntasks,
                       size_t affinity, uint64_t count[2], uint64_t passed[2], const char *what)
{
    static uint32_t out[TASKS][ITEMS];
    uint32_t seed[TASKS];
    clf_taskq *q;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    memset(out, 0, sizeof out);
    for (uint32_t t = 0; t < ntasks; t++) {
        seed[t] = 1000u * t;
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.affinity = affinity;
        d.kernel = "spin_task";
        d.global[0] = ITEMS;
        clf_arg a[] = {CLF_WHOLE_OUT(out[t], sizeof out[t]), CLF_SCALAR(&n),
                       CLF_SCALAR(&seed[t])};
        size_t id;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 3, &id));
        ck_assert_uint_eq(id, t);
    }
    clf_taskq_report r;
    ck_assert_ok(clf_taskq_run(q, &r));
    ck_assert_uint_eq(r.tasks, ntasks);
    ck_assert_uint_eq(r.failed, 0);
    ck_assert_uint_eq(r.num_devices, 2);
    count[0] = count[1] = 0;
    for (uint32_t t = 0; t < ntasks; t++) {
        clf_task_info info;
        ck_assert_ok(clf_taskq_task_info(&info, q, t));
        ck_assert_int_eq(info.status, CLF_SUCCESS);
        ck_assert_uint_eq(info.runs, 1);
        ck_assert_uint_lt(info.device, 2);
        count[info.device]++;
        for (uint32_t i = 0; i < ITEMS; i++)
            expect(out[t][i] == spin_task_ref(i, n, seed[t]),
                   "%s: task %u on device %zu: item %u: %u, expected %u", what, t, info.device,
                   i, out[t][i], spin_task_ref(i, n, seed[t]));
    }
    for (size_t i = 0; i < 2; i++) {
        ck_assert_uint_eq(r.dev[i].device, i);
        ck_assert_uint_eq(r.dev[i].tasks, count[i]);
        passed[i] = r.dev[i].passed;
    }
    clf_taskq_destroy(q);
}

/*
 * A 50:1 pair: once the cost model has learned the task kernel on both devices (the first
 * runs deal round robin and steal as before, so that it learns), a run of 16 equal tasks
 * goes all, or all but one, to the fast device: dealt there, and the slow device passes
 * over what it could steal, since it would finish a task (50x a fast task) after the fast
 * device had finished the lot. Counts of tasks, not wall time: the host may be loaded. A
 * cache directory of its own, so that the model starts empty and learns here.
 */
START_TEST(taskq_gate)
{
    test_watchdog(240);
    char dir[256];
    char *saved = test_own_cache(dir, sizeof dir);
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.02", &p);
    uint32_t n = 1u << 13;
    uint64_t count[2], passed[2], slow_runs = 0;
    /* At least 4 runs, and until the slow device has run 2 tasks (the model drops its first
     * as cold): on a loaded host its thread may start too late to take one in some run. */
    for (int run = 0; run < 4 || (slow_runs < 2 && run < 10); run++) {
        spin_tasks(f, p, n, TASKS, CLF_TASK_ANY_DEVICE, count, passed, "learning");
        slow_runs += count[1];
        fprintf(stderr, "taskq_gate: learning run %d: %llu / %llu tasks (passed %llu / %llu)\n",
                run, (unsigned long long)count[0], (unsigned long long)count[1],
                (unsigned long long)passed[0], (unsigned long long)passed[1]);
    }
    spin_tasks(f, p, n, TASKS, CLF_TASK_ANY_DEVICE, count, passed, "learned");
    fprintf(stderr, "taskq_gate: learned: %llu / %llu tasks (passed %llu / %llu)\n",
            (unsigned long long)count[0], (unsigned long long)count[1],
            (unsigned long long)passed[0], (unsigned long long)passed[1]);
    expect(count[1] <= 1, "the 50x slower device ran %llu of %d tasks after learning",
           (unsigned long long)count[1], TASKS);
    /* It took nothing because it was too slow to help, and the report says so. */
    expect(count[1] > 0 || passed[1] > 0,
           "device 1 took no task, and its report does not say it passed any");
    expect(passed[0] == 0, "the fast device passed %llu tasks", (unsigned long long)passed[0]);
    /* The steal gate alone: 8 tasks given to the fast device (affinity; they keep it), which
     * does them all in about a sixth of one slow task. Without the gate the idle slow device
     * steals one at once, and the run waits for it. Up to 3 tries: on a loaded host the slow
     * device's thread may start only once nothing is left to pass up. */
    for (int try = 0; try < 3; try++) {
        spin_tasks(f, p, n, TASKS / 2, 0, count, passed, "affinity");
        fprintf(stderr, "taskq_gate: affinity to device 0: %llu / %llu tasks (passed %llu / "
                "%llu)\n", (unsigned long long)count[0], (unsigned long long)count[1],
                (unsigned long long)passed[0], (unsigned long long)passed[1]);
        if (count[1] == 0 && passed[1] > 0)
            break;
    }
    expect(count[1] == 0 && passed[1] > 0,
           "the 50x slower device stole %llu of %d tasks (passed %llu)",
           (unsigned long long)count[1], TASKS / 2, (unsigned long long)passed[1]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
    test_watchdog_off();
}
END_TEST

/* Equal devices (no simulation), after the same learning: both take tasks (the gate does not
 * hand a device's share to the other). Up to 3 tries: a loaded 2-core host may stall one
 * device's thread for a whole run. */
START_TEST(taskq_equal)
{
    test_watchdog(240);
    clf_program *p;
    clf_fleet *f = sim_fleet(NULL, &p);
    uint32_t n = 1u << 13;
    uint64_t count[2] = {0, 0}, passed[2];
    for (int run = 0; run < 3; run++)
        spin_tasks(f, p, n, TASKS, CLF_TASK_ANY_DEVICE, count, passed, "learning");
    for (int try = 0; try < 3; try++) {
        spin_tasks(f, p, n, TASKS, CLF_TASK_ANY_DEVICE, count, passed, "learned");
        fprintf(stderr, "taskq_equal: %llu / %llu tasks (passed %llu / %llu)\n",
                (unsigned long long)count[0], (unsigned long long)count[1],
                (unsigned long long)passed[0], (unsigned long long)passed[1]);
        if (count[0] >= 2 && count[1] >= 2)
            break;
    }
    expect(count[0] >= 2 && count[1] >= 2, "equal devices ran %llu and %llu of %d tasks",
           (unsigned long long)count[0], (unsigned long long)count[1], TASKS);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* PoCL's basic device runs commands inside clEnqueue*: a rule for it is refused, clearly. */
START_TEST(basic_refused)
{
    const char *sel = TEST_CPUS ";name=basic";
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = sel;
    clf_fleet *f = NULL;
    if (clf_fleet_create(&f, &o) != CLF_SUCCESS) {
        fprintf(stderr, "SKIP basic_refused: no basic device ('%s': %s)\n", sel,
                clf_last_error());
        ck_assert_msg(!test_devices_required(), "no basic device");
        return;
    }
    clf_fleet_destroy(f);
    setenv("CLFLEET_SIMULATE", "device=0,compute=0.5", 1);
    clf_status st = clf_fleet_create(&f, &o);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_msg(st == CLF_ERROR_PARSE && f == NULL, "%s", clf_status_name(st));
    ck_assert_msg(strstr(clf_last_error(), "runs commands inside clEnqueue*"), "%s",
                  clf_last_error());
    ck_assert_int_eq(threads_named("clfleet-sim"), 0);
}
END_TEST

/* ---- probes (probe.c): a device the model leaves out gets a chunk now and then ---- */

/* A fresh cache directory in dir (mkdtemp), made $CLFLEET_CACHE_DIR. */

/* The median of the n launch samples in fields f[4..]. */
static double seed_median(char **f, unsigned n)
{
    double v[64];
    unsigned m = n < 64 ? n : 64;
    for (unsigned i = 0; i < m; i++)
        v[i] = strtod(f[4 + i], NULL);
    for (unsigned i = 1; i < m; i++) /* insertion sort: a handful of samples */
        for (unsigned k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return m ? v[m / 2] : 0;
}

/* Split a model line (a copy, cut in place) into at most cap tab-separated fields. */
static size_t seed_fields(char *copy, char **f, size_t cap)
{
    size_t nf = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, "\t", &save); t && nf < cap; t = strtok_r(NULL, "\t", &save))
        f[nf++] = t;
    return nf;
}

/*
 * Rewrite the model's file in dir so that every device key holding `mark` (the simulated
 * device's) is `factor` times slower than the other device's entry of the same kernel (its
 * median launch sample), or than its own samples where there is none, with no chunk samples
 * (so that no line of its own corrects the figure). Returns how many entries were changed.
 * Relative to the other device: seeded from its own samples, in a distcheck run (two suites
 * at once on two cores) the simulated device came out more than 2,000x slower (its share by
 * speed "0.0 %") and no probe of one granule fitted in 24 launches. Format: lib/plan/perfmodel.c
 * ("v2 kernel device n s1..sn m u1 t1 ...", tab-separated).
 */
static int seed_slow(const char *dir, const char *mark, double factor)
{
    enum { MAXL = 256 };
    char path[300], tmp[320], *lines[MAXL], *line = NULL;
    size_t cap = 0, nl = 0;
    int changed = 0;
    snprintf(path, sizeof path, "%s/perf-v1.tsv", dir);
    snprintf(tmp, sizeof tmp, "%s.seed", path);
    FILE *in = fopen(path, "r");
    ck_assert_msg(in, "cannot open %s", path);
    while (getline(&line, &cap, in) > 0 && nl < MAXL) {
        line[strcspn(line, "\n")] = '\0';
        ck_assert(lines[nl++] = strdup(line));
    }
    free(line);
    fclose(in);
    FILE *out = fopen(tmp, "w");
    ck_assert_msg(out, "cannot open %s", tmp);
    for (size_t l = 0; l < nl; l++) {
        char *f[3 + 2 + 8 + 2 * 16 + 2], *copy = strdup(lines[l]);
        ck_assert(copy);
        size_t nf = seed_fields(copy, f, sizeof f / sizeof *f);
        if (nf < 5 || strcmp(f[0], "v2") != 0 || !strstr(f[2], mark)) {
            fprintf(out, "%s\n", lines[l]);
            free(copy);
            continue;
        }
        unsigned n = (unsigned)strtoul(f[3], NULL, 10);
        ck_assert_uint_ge(nf, 4 + n);
        double other = 0;
        for (size_t k = 0; k < nl && !(other > 0); k++) {
            char *g[sizeof f / sizeof *f], *c2 = strdup(lines[k]);
            ck_assert(c2);
            size_t ng = seed_fields(c2, g, sizeof g / sizeof *g);
            if (ng >= 5 && !strcmp(g[0], "v2") && !strcmp(g[1], f[1]) && !strstr(g[2], mark))
                other = seed_median(g, (unsigned)strtoul(g[3], NULL, 10));
            free(c2);
        }
        fprintf(out, "v2\t%s\t%s\t%u", f[1], f[2], n);
        for (unsigned i = 0; i < n; i++)
            fprintf(out, "\t%.17g", (other > 0 ? other : strtod(f[4 + i], NULL)) / factor);
        fprintf(out, "\t0\n");
        changed += n > 0;
        free(copy);
    }
    for (size_t l = 0; l < nl; l++)
        free(lines[l]);
    ck_assert_int_eq(fclose(out), 0);
    ck_assert_int_eq(rename(tmp, path), 0);
    return changed;
}

/* One STATIC launch of spin (or strategy s) over N items: device 1's share, the reason, and
 * the results checked against spin_ref(). */
static double probe_launch(clf_fleet *f, clf_program *p, clf_strategy s, uint32_t *out,
                           uint32_t nitems, uint32_t iters, char *reason, size_t rn)
{
    clf_launch_report r;
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "spin";
    d.global[0] = nitems;
    d.strategy = s;
    memset(out, 0, nitems * sizeof *out);
    clf_arg a[] = {CLF_OUT(out, nitems * sizeof *out, sizeof *out), CLF_SCALAR(&iters)};
    ck_assert_ok(clf_launch(f, p, &d, a, 2, &r));
    for (uint32_t i = 0; i < nitems; i++)
        if (out[i] != spin_ref(i, iters))
            ck_abort_msg("item %u: %u, expected %u (%s)", i, out[i], spin_ref(i, iters),
                         r.reason);
    double share = 0;
    for (size_t i = 0; i < r.num_devices; i++)
        if (r.dev[i].device == 1)
            share = r.dev[i].share;
    snprintf(reason, rn, "%s", r.reason);
    return share;
}

/*
 * An equal pair (device 1 "simulated" at compute=1: as fast, but learned under a key of its
 * own) whose model file says device 1 is 1000x slower than it is, as a run while it was busy
 * with another process could have left it. STATIC leaves it out (its share by that speed is
 * 0.1 %), so without probes it would never be measured again. With them: after 4 launches
 * without work it gets one chunk (the first measures PoCL's build and gives no verdict, the
 * second runs ~1000x faster than predicted), the stale samples are forgotten (and if that
 * small chunk's figure still leaves it out, a larger probe follows at once, each some 5-10x
 * the last), and within a dozen launches it takes a share again (at the 7th to 9th in
 * trials). Results exact throughout; no wall time judged.
 */
START_TEST(probe_wrong_seed)
{
    test_watchdog(240);
    char dir[256], why[300];
    char *saved = test_own_cache(dir, sizeof dir);
    /* At 1000x, the probe that ends in time is a thousandth of the range: 2^20 items leave
     * it about 16 granules of 64 (2^17 left two, and a fast run of device 0 now and then
     * left less than one: no probe that launch). And the probe is predicted to take about
     * the fast device's whole launch: its verdict (the host time it took, its fixed cost
     * included, against a quarter of that) needs the launch long enough that the fixed cost
     * of a chunk on a loaded host or under a sanitizer stays well under it (with 2^18 items,
     * some 8 ms: an ASan run's probe confirmed the seeded figure and was not retried). */
    enum { N = 1 << 20 };
    uint32_t *out = malloc(N * sizeof *out);
    ck_assert(out);
    uint32_t iters = 128;
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=1", &p);
    for (int k = 0; k < 4; k++) /* both devices learned (the first sample is cold) */
        probe_launch(f, p, CLF_STRATEGY_STATIC, out, N, iters, why, sizeof why);
    clf_program_destroy(p);
    clf_fleet_destroy(f); /* saves the model */
    ck_assert_int_ge(seed_slow(dir, "|sim=", 1000), 1);

    f = sim_fleet("device=1,compute=1", &p);
    int first_out = -1, back = -1, probes = 0;
    for (int k = 0; k < 24 && back < 0; k++) {
        double s1 = probe_launch(f, p, CLF_STRATEGY_STATIC, out, N, iters, why, sizeof why);
        int probe = strstr(why, "device 1 probed") != NULL;
        probes += probe;
        fprintf(stderr, "probe_wrong_seed: launch %d: device 1's share %.4f (%s)\n", k, s1, why);
        if (k == 0)
            first_out = s1 == 0;
        if (s1 > 0.05 && !probe)
            back = k;
    }
    expect(first_out == 1, "the seeded model did not leave device 1 out: the test tests nothing");
    expect(probes >= 1, "device 1 was never probed");
    /* Within a dozen launches, or 8 more after one probe the host's load made look like a
     * confirmation (the wait doubles: a CI run). */
    expect(back >= 0 && back <= 20, "device 1 did not take a share again in 24 launches "
           "(back at launch %d, %d probes)", back, probes);
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
    test_watchdog_off();
}
END_TEST

/*
 * The simulated 50:1 pair under STATIC: once the speeds are learned the slow device is left
 * out (its share by speed, 2 %, is under 5 %) for good reasons, and its probes confirm it;
 * each doubles the wait before the next, so over 30 launches there are a few (after 4, 8, 16
 * launches out: 2 or 3), not one in every 4 launches. Results exact.
 */
START_TEST(probes_rare)
{
    test_watchdog(240);
    char dir[256], why[300];
    char *saved = test_own_cache(dir, sizeof dir);
    enum { N = 1 << 14 };
    uint32_t *out = malloc(N * sizeof *out);
    ck_assert(out);
    uint32_t iters = 1024;
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.02", &p);
    int probes = 0, out_of = 0;
    for (int k = 0; k < 30; k++) {
        double s1 = probe_launch(f, p, CLF_STRATEGY_STATIC, out, N, iters, why, sizeof why);
        int probe = strstr(why, "device 1 probed") != NULL;
        probes += probe;
        out_of += s1 == 0;
        if (probe || k < 3)
            fprintf(stderr, "probes_rare: launch %d: device 1's share %.4f (%s)\n", k, s1, why);
    }
    fprintf(stderr, "probes_rare: %d probes in 30 launches, device 1 out of %d\n", probes,
            out_of);
    expect(probes <= 4, "%d probes of the 50x slower device in 30 launches", probes);
    /* Left out for 8 launches in a row or more somewhere in 30 (the share by speed is under
     * 5 % once learned): it was probed at least once. */
    expect(out_of < 12 || probes >= 1, "device 1 was left out of %d launches, never probed",
           out_of);
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
    test_watchdog_off();
}
END_TEST

/* ---- the steal gate's probes (lib/flow/taskprobe.c) ---- */

/* One task of SMALL_ITEMS items among 15 of ITEMS, early in the deal: dealt to device 0 (a
 * device seeded 1000x slower would end it at ~8 big tasks' time, device 0 after ~6), which
 * reaches it only after 6 big tasks, so that a probe can find it queued. */
enum { SMALL_TASK = 6, SMALL_ITEMS = 2 };

/* The kernels of a run's TASKS tasks: all spin_task, task SMALL_TASK of SMALL_ITEMS items
 * (MIX_SMALL); half of them inc, two of each in turn (MIX_PAIRS: the deal gives each device
 * both); or the inc tasks first and the spin tasks last (MIX_INC_FIRST: the tail of a deque,
 * which a thief tests, is a spin task). */
enum mix { MIX_SMALL, MIX_PAIRS, MIX_INC_FIRST };

static int mix_inc(enum mix m, uint32_t t)
{
    return m == MIX_PAIRS ? t / 2 % 2 == 1 : m == MIX_INC_FIRST && t < TASKS / 2;
}

static uint32_t mix_items(enum mix m, uint32_t t)
{
    return m == MIX_SMALL && t == SMALL_TASK ? SMALL_ITEMS : ITEMS;
}

/* What one run of mixed_tasks() did, per device. */
typedef struct mixed_run {
    uint64_t count[2], inc[2], passed[2], probed[2]; /* tasks, inc tasks, passed, probed */
    size_t small_on; /* the device that ran task SMALL_TASK */
} mixed_run;

/* One run of TASKS tasks (spin_task of n iterations or inc, as `mix` says; the affinity
 * given) over the fleet's two devices. Every result checked against the C loop, every task's
 * device against the report, and a device's probes counted among its tasks. */
static void mixed_tasks(clf_fleet *f, clf_program *p, uint32_t n, size_t affinity, enum mix mix,
                        mixed_run *r, const char *what)
{
    static uint32_t out[TASKS][ITEMS];
    uint32_t seed[TASKS];
    clf_taskq *q;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    for (uint32_t t = 0; t < TASKS; t++) {
        int inc = mix_inc(mix, t);
        seed[t] = 7u * t + 3u;
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = inc ? "inc" : "spin_task";
        d.affinity = affinity;
        d.global[0] = mix_items(mix, t);
        for (uint32_t i = 0; i < ITEMS; i++)
            out[t][i] = inc ? i : 0;
        clf_arg a[] = {CLF_WHOLE_OUT(out[t], d.global[0] * sizeof out[t][0]), CLF_SCALAR(&n),
                       CLF_SCALAR(&seed[t])};
        if (inc)
            a[0] = (clf_arg)CLF_WHOLE_INOUT(out[t], sizeof out[t]);
        ck_assert_ok(clf_taskq_submit(q, &d, a, inc ? 1 : 3, NULL));
    }
    clf_taskq_report rep;
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.tasks, TASKS);
    ck_assert_uint_eq(rep.failed, 0);
    memset(r, 0, sizeof *r);
    for (uint32_t t = 0; t < TASKS; t++) {
        clf_task_info info;
        ck_assert_ok(clf_taskq_task_info(&info, q, t));
        ck_assert_int_eq(info.status, CLF_SUCCESS);
        ck_assert_uint_eq(info.runs, 1);
        ck_assert_uint_lt(info.device, 2);
        int inc = mix_inc(mix, t);
        r->count[info.device]++;
        r->inc[info.device] += (uint64_t)inc;
        if (t == SMALL_TASK)
            r->small_on = info.device;
        for (uint32_t i = 0; i < mix_items(mix, t); i++) {
            uint32_t want = inc ? i + 1 : spin_task_ref(i, n, seed[t]);
            expect(out[t][i] == want, "%s: task %u (%s) on device %zu: item %u: %u, expected %u",
                   what, t, inc ? "inc" : "spin_task", info.device, i, out[t][i], want);
        }
    }
    for (size_t i = 0; i < 2; i++) {
        ck_assert_uint_eq(rep.dev[i].device, i);
        ck_assert_uint_eq(rep.dev[i].tasks, r->count[i]);
        ck_assert_uint_le(rep.dev[i].probed, rep.dev[i].tasks);
        r->passed[i] = rep.dev[i].passed;
        r->probed[i] = rep.dev[i].probed;
    }
    fprintf(stderr, "%s: %llu / %llu tasks, of them inc %llu / %llu (passed %llu / %llu, "
            "probed %llu / %llu), task %d on device %zu\n", what,
            (unsigned long long)r->count[0], (unsigned long long)r->count[1],
            (unsigned long long)r->inc[0], (unsigned long long)r->inc[1],
            (unsigned long long)r->passed[0], (unsigned long long)r->passed[1],
            (unsigned long long)r->probed[0], (unsigned long long)r->probed[1], SMALL_TASK,
            r->small_on);
    clf_taskq_destroy(q);
}

/* Runs that teach the model both devices: at least `least` of them, and more (up to `most`)
 * until device 1 has run `least` tasks in all (the first sample of each is cold). */
static void mixed_learn(clf_fleet *f, clf_program *p, uint32_t n, int least, int most,
                        const char *what)
{
    mixed_run r;
    uint64_t learned1 = 0;
    for (int run = 0; run < least || (learned1 < (uint64_t)least && run < most); run++) {
        mixed_tasks(f, p, n, CLF_TASK_ANY_DEVICE, MIX_SMALL, &r, what);
        learned1 += r.count[1];
    }
}

/*
 * An equal pair (device 1 at compute=1: as fast, under a model key of its own) whose model
 * file says device 1 is 1000x slower at the task kernel, as a run while it was busy could
 * have left it. The gate keeps it from every big task (the first run after the seed checks
 * that it ran nothing but probes or the small task), so without probes it would never be
 * measured again.
 * With them: kept from 15 tasks in the first run (4 or more), it is given the small task,
 * predicted at ~8 big tasks' time (within the run's ~15), which runs far faster than that;
 * its samples are forgotten, and the next runs deal it tasks again. Results exact; counts,
 * not wall time.
 */
START_TEST(taskq_probe_stale)
{
    test_watchdog(240);
    char dir[256];
    char *saved = test_own_cache(dir, sizeof dir);
    /* Big tasks of ~20 ms: the probe must fit the run's predicted makespan when device 1
     * stops, and a loaded host starts its thread late (at 2^14 iterations, 80 ms runs, a
     * make -j2 check found no room for 11 runs in a row). */
    uint32_t n = 1u << 16;
    mixed_run r;
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=1", &p);
    mixed_learn(f, p, n, 4, 10, "taskq_probe_stale: learning");
    clf_program_destroy(p);
    clf_fleet_destroy(f); /* saves the model */
    ck_assert_int_ge(seed_slow(dir, "|sim=", 1000), 1);

    f = sim_fleet("device=1,compute=1", &p);
    int back = -1, probes = 0, first_out = -1, last_probe = -1;
    for (int run = 0; run < 20 && back < 0; run++) {
        mixed_tasks(f, p, n, CLF_TASK_ANY_DEVICE, MIX_SMALL, &r, "taskq_probe_stale: seeded");
        probes += (int)r.probed[1];
        if (r.probed[1])
            last_probe = run;
        ck_assert_uint_eq(r.probed[0], 0);
        /* Kept from every big task; the small one it may run by the gate's own rule (at
         * the tail of device 0's deque, ~8 big tasks' time fits before device 0 ends). */
        if (run == 0)
            first_out = r.count[1] == r.probed[1] || (r.count[1] == 1 && r.small_on == 1);
        if (r.count[1] >= 2 + r.probed[1])
            back = run;
    }
    expect(first_out == 1, "the seeded model did not keep device 1 out: the test tests nothing");
    /* Whether the small task fits the run's predicted makespan when device 1 stops depends
     * on when its worker gets there: under a sanitizer's host-side slowdown it came after
     * device 0 had nearly finished in every run (the CI's ASan build, 10 runs, no probe). */
    fprintf(stderr, "taskq_probe_stale: %d probes (the last in run %d), back at run %d\n",
            probes, last_probe, back);
    /* A probe is judged by its host time: on a loaded host (the CI's make check ran the
     * suites side by side) the small task once took long enough to confirm the seeded
     * figure, the wait doubled (runs 2 to 5 without a probe) and the second probe, at run 6,
     * brought the device back at run 7. So no bound on which run, but within 20, and only
     * after a probe (its verdict is drawn at the run's end). */
    if (UNDER_SANITIZER)
        fprintf(stderr, "taskq_probe_stale: not judged under a sanitizer (timing)\n");
    else {
        expect(probes >= 1, "device 1 was never probed");
        expect(back >= 0, "device 1 did not take tasks again in 20 runs (%d probes, the last "
               "in run %d)", probes, last_probe);
        expect(back > last_probe, "device 1 came back at run %d, the last probe was in run %d",
               back, last_probe);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
    test_watchdog_off();
}
END_TEST

/*
 * A truly 50x slower device, once learned (with no affinity the deal gives it the small
 * task, which it ends before the fast device would reach it). Then 20 runs of the same
 * tasks given to the fast device (affinity 0): the gate keeps the slow device from every
 * big one (each the tail of the fast device's deque), so it is kept from the kernel, and the
 * small task mid-deque is what a probe may take (by the model it ends well within the fast
 * device's 15 big tasks). It is probed rarely: the first probe confirms nothing (due again),
 * each later one confirms the figure and doubles the wait (4 tasks kept in one run, then 8,
 * then 16 tasks, when it stops before the fast device takes its first, else 16 runs in a
 * row; then 32 runs: 3 or 4 probes in 20 runs),
 * and never costs a run more than one task (a probe, or one by the gate's own rule).
 * Counts, not wall time.
 */
START_TEST(taskq_probe_rare)
{
    test_watchdog(300);
    char dir[256];
    char *saved = test_own_cache(dir, sizeof dir);
    uint32_t n = 1u << 14;
    mixed_run r;
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.02", &p);
    mixed_learn(f, p, n, 3, 8, "taskq_probe_rare: learning");
    int probes = 0;
    for (int run = 0; run < 20; run++) {
        mixed_tasks(f, p, n, 0, MIX_SMALL, &r, "taskq_probe_rare");
        probes += (int)r.probed[1];
        /* At most one task: the small one as a probe, or one by the gate's own rule when by
         * the model it ends before its owner would reach it (the CI's ASan build ran the
         * small one so; a distcheck run, the model's figures of the fast device learned
         * while other suites loaded the host, let it take a big one). */
        expect(r.count[1] <= 1,
               "run %d: the 50x slower device ran %llu tasks (%llu probes), the small one on "
               "device %zu", run, (unsigned long long)r.count[1],
               (unsigned long long)r.probed[1], r.small_on);
    }
    fprintf(stderr, "taskq_probe_rare: %d probes in 20 runs\n", probes);
    expect(probes <= 6, "%d probes of the 50x slower device in 20 runs", probes);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
    test_watchdog_off();
}
END_TEST

/*
 * The gate's count of what it keeps a device from is per kernel, and only of the kernel it
 * tested. A 50x slower device, once it has learned both kernels, stops at a deque whose tail
 * is a spin task (refused: 50x a big task) while inc tasks wait at the head: it was never
 * kept from an inc task, so no inc probe ever comes due (a count of every task left made one
 * due in the first run: an inc task was small enough to fit the run, and it was probed
 * again and again). A spin probe fits the run only by figures a loaded host skewed, so one
 * spin task a run is allowed. Counts, not time.
 */
START_TEST(taskq_probe_untested)
{
    test_watchdog(240);
    char dir[256];
    char *saved = test_own_cache(dir, sizeof dir);
    uint32_t n = 1u << 13;
    uint64_t spin1 = 0, inc1 = 0;
    mixed_run r;
    clf_program *p;
    clf_fleet *f = sim_fleet("device=1,compute=0.02", &p);
    /* Until the slow device has a sample of each kernel past its cold first. */
    for (int run = 0; run < 8 && (spin1 < 2 || inc1 < 2); run++) {
        mixed_tasks(f, p, n, CLF_TASK_ANY_DEVICE, MIX_PAIRS, &r, "taskq_probe_untested: learning");
        spin1 += r.count[1] - r.inc[1];
        inc1 += r.inc[1];
    }
    expect(spin1 >= 2 && inc1 >= 2, "the slow device ran %llu spin and %llu inc tasks in 8 "
           "learning runs", (unsigned long long)spin1, (unsigned long long)inc1);
    for (int run = 0; run < 6; run++) {
        mixed_tasks(f, p, n, 0, MIX_INC_FIRST, &r, "taskq_probe_untested");
        /* An inc task it can get only as a probe (they are taken from the head, before the
         * spin tasks, and a thief takes the tail); one spin task it may take by the gate's
         * own rule or as a probe when the model's figures were learned on a loaded host. */
        expect(r.inc[1] == 0 && r.count[1] <= 1,
               "run %d: the slow device ran %llu tasks, %llu of them inc (%llu probes), kept "
               "from nothing but spin tasks", run, (unsigned long long)r.count[1],
               (unsigned long long)r.inc[1], (unsigned long long)r.probed[1]);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
    test_watchdog_off();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("simulate");
    TCase *tc = tcase_create("simulate");
    tcase_add_checked_fixture(tc, NULL, test_watchdog_off);
    tcase_add_test(tc, bad_rules);
    tcase_add_test(tc, basic_refused);
    tcase_add_test(tc, latency);
    tcase_add_test(tc, bandwidth);
    tcase_add_test(tc, compute_factor);
    tcase_add_test(tc, launch_correct);
    tcase_add_test(tc, chunks_worth_their_cost);
    tcase_add_test(tc, learned_weights);
    tcase_add_test(tc, static_leaves_out_a_minor_device);
    tcase_add_test(tc, static_uneven);
    tcase_add_test(tc, gemm_slowed);
    tcase_add_test(tc, unset_changes_nothing);
    suite_add_tcase(s, tc);
    /* Its own case, to run alone: CK_RUN_CASE=taskq. */
    TCase *tq = tcase_create("taskq");
    tcase_add_checked_fixture(tq, NULL, test_watchdog_off);
    tcase_add_test(tq, taskq_gate);
    tcase_add_test(tq, taskq_equal);
    suite_add_tcase(s, tq);
    /* Its own case, to run alone: CK_RUN_CASE=probe. */
    TCase *tp = tcase_create("probe");
    tcase_add_checked_fixture(tp, NULL, test_watchdog_off);
    tcase_add_test(tp, probe_wrong_seed);
    tcase_add_test(tp, probes_rare);
    suite_add_tcase(s, tp);
    /* Its own case, to run alone: CK_RUN_CASE=taskprobe. */
    TCase *tt = tcase_create("taskprobe");
    tcase_add_checked_fixture(tt, NULL, test_watchdog_off);
    tcase_add_test(tt, taskq_probe_stale);
    tcase_add_test(tt, taskq_probe_rare);
    tcase_add_test(tt, taskq_probe_untested);
    suite_add_tcase(s, tt);
    return test_run(s, FLEET2, 2);
}

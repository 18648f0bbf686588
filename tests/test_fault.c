/*
 * Device faults, injected with CLFLEET_FAULT_INJECT (read when a fleet is created): every
 * failure kind (kernel enqueue, kernel execution, input write, output read, buffer
 * allocation, a lost device, a program build) on one device, with every strategy, at the
 * device's first, middle and last chunk. The result must equal a plain C reference exactly,
 * the report must name the failed device, the next launch must leave it out, and after
 * clf_device_readmit() it must take work again. When every device fails, the launch fails
 * and each output element is either untouched or correct, exactly as many as the report
 * says were done.
 */
#include "common.h"

#include <stdint.h>

static const char SRC[] =
    TEST_CL_LOWBIAS32
    "uint mix(uint a, uint b, uint reps)\n"
    "{\n"
    "    uint x = a ^ (b << 7);\n"
    "    for (uint r = 0; r < reps; r++) x = lowbias32(x + r);\n"
    "    return x >> 1;\n"
    "}\n"
    "__kernel void mixk(__global const uint *a, __global const uint *b, __global uint *c,\n"
    "                   uint reps)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = mix(a[i], b[i], reps);\n"
    "}\n"
    "__kernel void mixk_chunk(__global const uint *a, __global const uint *b,\n"
    "                         __global uint *c, uint reps)\n"
    "{\n"
    "    size_t i = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    c[i] = mix(a[i], b[i], reps);\n"
    "}\n"
    "__kernel void sum_copy_chunk(__global const int *x, __global int *y, __global uint *sum,\n"
    "                             __global int *mn)\n"
    "{\n"
    "    size_t i = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    int v = x[i];\n"
    "    y[i] = 2 * v;\n"
    "    atomic_add(sum, (uint)v);\n"
    "    atomic_min(mn, v);\n"
    "}\n"
    "__kernel void affine_chunk(__global uint *y, uint m, uint c)\n"
    "{\n"
    "    size_t i = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    y[i] = y[i] * m + c;\n"
    "}\n"
    "__kernel void affine_sum_chunk(__global uint *y, __global uint *sum)\n"
    "{\n"
    "    size_t i = get_global_id(0) - CLF_CHUNK_OFFSET(0);\n"
    "    uint v = y[i];\n"
    "    y[i] = v * 3u + 1u;\n"
    "    atomic_add(sum, v);\n"
    "}\n"
    /* In place with a halo: unit i is {in, out}; out reads the neighbours' in. */
    "__kernel void pairs(__global uint *p, uint n)\n"
    "{\n"
    "    uint i = get_global_id(0), l = i ? i - 1 : 0, r = i + 1 < n ? i + 1 : n - 1;\n"
    "    p[2 * i + 1] = p[2 * l] + 2 * p[2 * i] + p[2 * r] + p[2 * i + 1];\n"
    "}\n"
    "__kernel void affine(__global uint *y, uint m, uint c)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = y[i] * m + c;\n"
    "}\n"
    "__kernel void affine2(__global uint *y, __global uint *z)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = y[i] * 3u + 1u;\n"
    "    z[i] = z[i] + 5u;\n"
    "}\n"
    "__kernel void sum_copy(__global const int *x, __global int *y, __global uint *sum,\n"
    "                       __global int *mn)\n"
    "{\n"
    "    int v = x[get_global_id(0)];\n"
    "    y[get_global_id(0)] = 2 * v;\n"
    "    atomic_add(sum, (uint)v);\n"
    "    atomic_min(mn, v);\n"
    "}\n"
    "__kernel void affine_sum(__global uint *y, __global uint *sum)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint v = y[i];\n"
    "    y[i] = v * 3u + 1u;\n"
    "    atomic_add(sum, v);\n"
    "}\n";

static uint32_t mix(uint32_t a, uint32_t b, uint32_t reps)
{
    uint32_t x = a ^ (b << 7);
    for (uint32_t r = 0; r < reps; r++)
        x = lowbias32(x + r);
    return x >> 1;
}

#define SENTINEL 0xffffffffu /* never a result of mix() (its top bit is clear) */
enum { N = 1 << 16, REPS = 24 };

/* ---- fleets with injected faults ------------------------------------------------------- */

static void unset_inject(void)
{
    unsetenv("CLFLEET_FAULT_INJECT");
}

/* A fleet created while CLFLEET_FAULT_INJECT holds rules (NULL: none). */
static clf_fleet *fault_fleet(const char *selection, const char *rules)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = NULL;
    o.devices = selection;
    if (rules)
        setenv("CLFLEET_FAULT_INJECT", rules, 1);
    else
        unsetenv("CLFLEET_FAULT_INJECT");
    clf_status st = clf_fleet_create(&f, &o);
    unsetenv("CLFLEET_FAULT_INJECT");
    ck_assert_msg(st == CLF_SUCCESS, "fleet '%s' with '%s': %s: %s", selection, rules ? rules : "",
                  clf_status_name(st), clf_last_error());
    return f;
}

typedef struct fcfg {
    const char *selection;
    const size_t *devices; /* desc.devices, or NULL */
    size_t ndev;
    size_t victim; /* fleet index of the device that fails */
    const char *label;
} fcfg;

/* Two sub-devices that run at once, or three of four (FLEET2, FLEET4, DEV3: common.h). */
static const fcfg CFGS[] = {
    {FLEET2, NULL, 2, 1, "2 devices"},
    {FLEET4, DEV3, 3, 0, "3 of 4 devices"},
};

typedef struct data {
    uint32_t a[N], b[N], c[N], want[N];
} data;

static data *data_new(void)
{
    data *d = malloc(sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < N; i++) {
        d->a[i] = lowbias32((uint32_t)i * 2654435761u);
        d->b[i] = (uint32_t)i;
        d->want[i] = mix(d->a[i], d->b[i], REPS);
    }
    return d;
}

/* A launch of mixk over N: global-indexed arrays, or chunk-indexed ones under small memory
 * limits (static and memory-aware then stream in rounds). */
typedef struct job {
    clf_launch_desc desc;
    clf_arg args[4];
    uint64_t limits[CLF_MAX_LAUNCH_DEVICES];
    uint32_t reps;
} job;

static void job_init(job *j, const fcfg *cfg, data *d, clf_strategy s, int chunked)
{
    memset(j, 0, sizeof *j);
    clf_launch_desc init = CLF_LAUNCH_DESC_INIT;
    j->desc = init;
    j->desc.kernel = chunked ? "mixk_chunk" : "mixk";
    j->desc.strategy = s;
    j->desc.global[0] = N;
    j->desc.devices = cfg->devices;
    j->desc.num_devices = cfg->devices ? cfg->ndev : 0;
    j->desc.weights_mode = CLF_WEIGHTS_EQUAL;
    j->reps = REPS;
    clf_arg args[] = {CLF_IN(d->a, sizeof d->a, 4), CLF_IN(d->b, sizeof d->b, 4),
                      CLF_OUT(d->c, sizeof d->c, 4), CLF_SCALAR(&j->reps)};
    memcpy(j->args, args, sizeof args);
    if (chunked) {
        for (int k = 0; k < 3; k++)
            j->args[k].flags |= CLF_ARG_CHUNK_INDEXED;
        /* Two slots of three arrays: chunks of at most 2048 units. */
        for (size_t k = 0; k < cfg->ndev; k++)
            j->limits[k] = 2 * 3 * 4 * 2048;
        j->desc.mem_limits = j->limits;
    }
}

/* The launch position of fleet device dev. */
static size_t pos_of(const fcfg *cfg, size_t dev)
{
    for (size_t i = 0; cfg->devices && i < cfg->ndev; i++)
        if (cfg->devices[i] == dev)
            return i;
    return dev;
}

static char what[512];

static const char *describe(const clf_launch_report *r)
{
    static char buf[2048];
    int n = snprintf(buf, sizeof buf, "[%s done=%llu failed=%zu requeued=%llu",
                     clf_strategy_name(r->strategy), (unsigned long long)r->done_units,
                     r->failed_devices, (unsigned long long)r->requeued_units);
    for (size_t i = 0; i < r->num_devices && n > 0 && (size_t)n < sizeof buf; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n,
                      " dev%zu:units=%llu,chunks=%u,failed=%d,excl=%d,req=%llu,%s",
                      r->dev[i].device, (unsigned long long)r->dev[i].units, r->dev[i].chunks,
                      r->dev[i].failed, r->dev[i].excluded,
                      (unsigned long long)r->dev[i].requeued_units, r->dev[i].error);
    if (n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return buf;
}

static void fill(uint32_t *c)
{
    for (size_t i = 0; i < N; i++)
        c[i] = SENTINEL;
}

static void expect_exact(const data *d, const clf_launch_report *r)
{
    for (size_t i = 0; i < N; i++)
        expect(d->c[i] == d->want[i], "%s: c[%zu] = %u, want %u %s", what, i, d->c[i], d->want[i],
               describe(r));
}

/* Job j into a refilled output: the launch must succeed and the output be exact. when says
 * which launch of a case it is (": second launch"), or is "". */
static void launch_exact(clf_fleet *f, clf_program *p, const job *j, data *d,
                         clf_launch_report *r, const char *when)
{
    fill(d->c);
    clf_status st = clf_launch(f, p, &j->desc, j->args, 4, r);
    expect(st == CLF_SUCCESS, "%s%s: %s: %s", what, when, clf_status_name(st), clf_last_error());
    expect_exact(d, r);
}

/* Sum of the devices' units, checked against done_units. */
static uint64_t units_done(const clf_launch_report *r)
{
    uint64_t u = 0;
    for (size_t i = 0; i < r->num_devices; i++)
        u += r->dev[i].units;
    expect(u == r->done_units, "%s: units sum to %llu, done_units %llu %s", what,
           (unsigned long long)u, (unsigned long long)r->done_units, describe(r));
    return u;
}

/* ---- one device fails ------------------------------------------------------------------ */

enum kind { K_ENQUEUE, K_EXEC, K_WRITE, K_READ, K_ALLOC, K_LOST, K_COUNT };
static const char *const KIND_CALL[] = {"enqueue", "exec", "write", "read", "alloc", "any"};
static const int KIND_ERR[] = {-5 /* CL_OUT_OF_RESOURCES */,
                               -5,
                               -5,
                               -5,
                               -4 /* CL_MEM_OBJECT_ALLOCATION_FAILURE */,
                               -2 /* CL_DEVICE_NOT_AVAILABLE */};
enum pos { P_FIRST, P_MID, P_LAST, P_COUNT };
static const char *const POS_NAME[] = {"first", "middle", "last"};

/* Matching calls on the victim before the one that fails, from its chunk count c in a launch
 * without faults. Per chunk: two input writes, one execution and one enqueue, one read;
 * allocations: three arrays (at setup, or per slot: chunk-indexed arrays take two slots). */
static uint64_t after_for(enum kind k, enum pos p, unsigned c, int chunked)
{
    unsigned at = p == P_FIRST ? 0 : p == P_MID ? c / 2 : c - 1;
    switch (k) {
    case K_ENQUEUE:
    case K_EXEC:
    case K_READ:
        return at;
    case K_WRITE:
        return 2 * at + (p == P_MID); /* the middle one: the chunk's second array */
    case K_ALLOC:
        return chunked ? (p == P_FIRST ? 0 : p == P_MID ? 3 : 5) : (uint64_t)p;
    case K_LOST:
        /* Any call: allocations (3), then 5 per chunk. */
        return p == P_FIRST ? 0 : 3 + 5 * (uint64_t)at + (p == P_MID ? 2 : 0);
    default:
        return 0;
    }
}

static unsigned calibrate(const fcfg *cfg, clf_program **pp, data *d, const job *j, clf_fleet **fp)
{
    clf_launch_report r;
    *fp = fault_fleet(cfg->selection, NULL);
    ck_assert_ok(clf_program_build_source(pp, *fp, SRC, NULL));
    ck_assert_ok(clf_launch(*fp, *pp, &j->desc, j->args, 4, &r));
    expect_exact(d, &r);
    unsigned c = r.dev[pos_of(cfg, cfg->victim)].chunks;
    clf_program_destroy(*pp);
    clf_fleet_destroy(*fp);
    return c;
}

/* One case; returns 1 when the fault fired (and everything checked out), 0 when the victim
 * made fewer calls than the rule waits for (a dynamic launch gave it less work). */
static int one_case(const fcfg *cfg, enum kind k, clf_strategy s, enum pos p, data *d)
{
    int chunked = s == CLF_STRATEGY_STATIC || s == CLF_STRATEGY_MEMORY_AWARE;
    job j;
    job_init(&j, cfg, d, s, chunked);
    clf_fleet *f;
    clf_program *prog;
    unsigned c = calibrate(cfg, &prog, d, &j, &f);
    if (c == 0)
        return 0;
    char rule[160];
    uint64_t after = after_for(k, p, c, chunked);
    snprintf(rule, sizeof rule, "device=%zu,call=%s,after=%llu%s", cfg->victim, KIND_CALL[k],
             (unsigned long long)after, k == K_LOST ? ",lost" : "");
    snprintf(what, sizeof what, "%s, %s, %s chunk (%u), rule '%s'", cfg->label,
             clf_strategy_name(s), POS_NAME[p], c, rule);
    f = fault_fleet(cfg->selection, rule);
    ck_assert_ok(clf_program_build_source(&prog, f, SRC, NULL));
    size_t v = pos_of(cfg, cfg->victim);
    clf_launch_report r;

    /* The launch with the fault: complete and exact all the same. */
    launch_exact(f, prog, &j, d, &r, "");
    expect(units_done(&r) == N, "%s: %s", what, describe(&r));
    int fired = r.dev[v].failed;
    for (size_t i = 0; i < r.num_devices; i++)
        if (i != v)
            expect(!r.dev[i].failed && r.dev[i].status == CLF_SUCCESS, "%s: device %zu %s", what,
                   r.dev[i].device, describe(&r));
    if (!fired) {
        expect(r.failed_devices == 0 && !clf_device_is_failed(f, cfg->victim), "%s: %s", what,
               describe(&r));
        clf_program_destroy(prog);
        clf_fleet_destroy(f);
        return 0;
    }
    const clf_device_report *vr = &r.dev[v];
    expect(r.failed_devices == 1, "%s: %s", what, describe(&r));
    expect(vr->device == cfg->victim, "%s: %s", what, describe(&r));
    expect(vr->status == CLF_ERROR_OPENCL && vr->cl_error == KIND_ERR[k],
           "%s: status %s, OpenCL error %d %s", what, clf_status_name(vr->status), vr->cl_error,
           describe(&r));
    expect(strstr(vr->error, "injected") != NULL, "%s: error '%s'", what, vr->error);
    if (k == K_ENQUEUE || k == K_EXEC || k == K_READ) {
        /* It failed on its chunk number `after` (from 0): the ones before completed. */
        expect(vr->chunks == after && (vr->units > 0) == (after > 0), "%s: %s", what, describe(&r));
        expect(vr->requeued_units > 0, "%s: nothing requeued %s", what, describe(&r));
    }
    expect(r.requeued_units == vr->requeued_units, "%s: %s", what, describe(&r));
    expect(clf_device_is_failed(f, cfg->victim), "%s: not marked failed", what);
    char why[256];
    ck_assert_ok(clf_device_failure(why, sizeof why, f, cfg->victim));
    expect(strstr(why, "injected") && strstr(why, "mixk"), "%s: failure '%s'", what, why);

    /* The next launch leaves it out. */
    launch_exact(f, prog, &j, d, &r, ": second launch");
    expect(r.dev[v].excluded && r.dev[v].units == 0 && !r.dev[v].failed &&
               r.dev[v].status == CLF_ERROR_DEVICE_FAILED && r.failed_devices == 0,
           "%s: second launch %s", what, describe(&r));
    expect(units_done(&r) == N, "%s", what);

    /* Readmitted, it takes work again (a static launch gives it a share). */
    ck_assert_ok(clf_device_readmit(f, cfg->victim));
    expect(!clf_device_is_failed(f, cfg->victim), "%s: still failed", what);
    job js;
    job_init(&js, cfg, d, CLF_STRATEGY_STATIC, 0);
    launch_exact(f, prog, &js, d, &r, ": after readmit");
    expect(r.dev[v].units > 0 && !r.dev[v].failed && !r.dev[v].excluded, "%s: after readmit %s",
           what, describe(&r));
    clf_program_destroy(prog);
    clf_fleet_destroy(f);
    return 1;
}

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE};
#define NSTRAT (sizeof STRATEGIES / sizeof STRATEGIES[0])

/* _i: kind * 2 + configuration; every strategy and position. A dynamic, guided or
 * memory-aware launch may give the victim less work than its calibration run: try again
 * until the fault fires. */
START_TEST(one_device_fails)
{
    enum kind k = (enum kind)(_i / 2);
    const fcfg *cfg = &CFGS[_i % 2];
    data *d = data_new();
    for (size_t s = 0; s < NSTRAT; s++)
        for (int p = 0; p < P_COUNT; p++) {
            /* Static without limits runs one chunk per device: only its first is there. */
            int fired = 0;
            /* Guided and memory-aware chunks come from one shared pool since issue 14, so
             * the victim's chunk count varies too: a fresh CI clone once saw 12 attempts
             * in a row give it fewer than the 16 of its calibration. Each attempt is cheap,
             * and one where the fault fires checks everything. */
            for (int attempt = 0; attempt < 60 && !fired; attempt++)
                fired = one_case(cfg, k, STRATEGIES[s], (enum pos)p, d);
            expect(fired, "%s: the fault never fired", what);
        }
    free(d);
}
END_TEST

/* AUTO runs a small launch on one device alone: when that device fails, the devices that
 * stood by take its work back, and the result is complete and exact. */
START_TEST(small_launch_standby_takes_over)
{
    enum { SMALL = 3000 };
    static const size_t devs[2] = {0, 1};
    /* Before anything is learned, AUTO picks the first device of the most compute units x
     * clock: device 0 of two equal sub-devices. Its first kernel enqueue fails. */
    clf_fleet *f = fault_fleet(FLEET2, "device=0,call=enqueue,after=0");
    clf_program *prog;
    ck_assert_ok(clf_program_build_source(&prog, f, SRC, NULL));
    uint32_t *a = malloc(SMALL * 4), *b = malloc(SMALL * 4), *c = malloc(SMALL * 4);
    ck_assert(a && b && c);
    for (uint32_t i = 0; i < SMALL; i++) {
        a[i] = lowbias32(i);
        b[i] = lowbias32(i + 77);
        c[i] = SENTINEL;
    }
    const uint32_t reps = 3;
    clf_arg args[] = {CLF_IN(a, SMALL * 4, 4), CLF_IN(b, SMALL * 4, 4), CLF_OUT(c, SMALL * 4, 4),
                      CLF_SCALAR(&reps)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "mixk";
    d.dims = 1;
    d.global[0] = SMALL;
    d.strategy = CLF_STRATEGY_AUTO;
    d.devices = devs;
    d.num_devices = 2;
    clf_launch_report r;
    ck_assert_ok(clf_launch(f, prog, &d, args, 4, &r));
    ck_assert_msg(strstr(r.reason, "too small") != NULL, "reason '%s'", r.reason);
    ck_assert_msg(r.dev[0].failed && r.dev[1].units == SMALL && r.failed_devices == 1,
                  "dev 0 failed %d, dev 1 units %llu", r.dev[0].failed,
                  (unsigned long long)r.dev[1].units);
    ck_assert_uint_eq(r.done_units, SMALL);
    for (uint32_t i = 0; i < SMALL; i++)
        if (c[i] != mix(a[i], b[i], reps))
            ck_abort_msg("c[%u] = %u, want %u", i, c[i], mix(a[i], b[i], reps));
    free(a);
    free(b);
    free(c);
    clf_program_destroy(prog);
    clf_fleet_destroy(f);
}
END_TEST

/* A status that is not a device fault (the caller's, say): the work still completes on the
 * others, but the device is not left out of later launches. */
START_TEST(not_a_device_fault)
{
    const fcfg *cfg = &CFGS[0];
    data *d = data_new();
    clf_fleet *f = fault_fleet(cfg->selection, "device=1,call=enqueue,status=CL_INVALID_VALUE");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    job j;
    job_init(&j, cfg, d, CLF_STRATEGY_STATIC, 0);
    snprintf(what, sizeof what, "CL_INVALID_VALUE");
    clf_launch_report r;
    launch_exact(f, p, &j, d, &r, "");
    expect(r.dev[1].failed && r.dev[1].cl_error == -30 && r.failed_devices == 1, "%s",
           describe(&r));
    expect(!clf_device_is_failed(f, 1), "CL_INVALID_VALUE left the device out");
    launch_exact(f, p, &j, d, &r, "");
    expect(r.dev[1].units > 0 && !r.dev[1].excluded, "%s", describe(&r));
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(d);
}
END_TEST

/* ---- every device fails ---------------------------------------------------------------- */

/* Every element untouched or correct, as many correct as the report says were done. */
static void expect_accounted(const data *d, const clf_launch_report *r)
{
    uint64_t right = 0;
    for (size_t i = 0; i < N; i++) {
        expect(d->c[i] == SENTINEL || d->c[i] == d->want[i], "%s: c[%zu] = %u, want %u %s", what, i,
               d->c[i], d->want[i], describe(r));
        right += d->c[i] == d->want[i];
    }
    expect(right == units_done(r), "%s: %llu elements written, the report says %llu %s", what,
           (unsigned long long)right, (unsigned long long)r->done_units, describe(r));
}

START_TEST(every_device_fails)
{
    static const char *const rules[] = {
        "device=*,call=enqueue,after=2", "device=*,call=enqueue",
        "device=*,call=exec,after=1",    "device=*,call=read,after=3",
        "device=*,call=write,after=5",   "device=*,call=any,after=9,lost",
    };
    static const clf_strategy strat[] = {CLF_STRATEGY_DYNAMIC, CLF_STRATEGY_STATIC,
                                         CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE};
    const fcfg *cfg = &CFGS[_i % 2];
    data *d = data_new();
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++)
        for (size_t s = 0; s < sizeof strat / sizeof strat[0]; s++) {
            int chunked = strat[s] == CLF_STRATEGY_STATIC || strat[s] == CLF_STRATEGY_MEMORY_AWARE;
            snprintf(what, sizeof what, "%s, %s, '%s'", cfg->label, clf_strategy_name(strat[s]),
                     rules[k]);
            clf_fleet *f = fault_fleet(cfg->selection, rules[k]);
            clf_program *p;
            ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
            job j;
            job_init(&j, cfg, d, strat[s], chunked);
            clf_launch_report r;
            fill(d->c);
            clf_status st = clf_launch(f, p, &j.desc, j.args, 4, &r);
            expect(st == CLF_ERROR_DEVICE_FAILED, "%s: %s: %s", what, clf_status_name(st),
                   clf_last_error());
            expect(strstr(clf_last_error(), "every device") && strstr(clf_last_error(), "injected"),
                   "%s: detail '%s'", what, clf_last_error());
            expect(r.failed_devices == cfg->ndev && r.done_units < N, "%s: %s", what, describe(&r));
            expect_accounted(d, &r);
            for (size_t i = 0; i < cfg->ndev; i++)
                expect(r.dev[i].failed && clf_device_is_failed(f, r.dev[i].device), "%s: %s", what,
                       describe(&r));
            /* Nothing is left to run on: the next launch fails at once, touching nothing. */
            fill(d->c);
            st = clf_launch(f, p, &j.desc, j.args, 4, &r);
            expect(st == CLF_ERROR_DEVICE_FAILED, "%s: second launch %s", what,
                   clf_status_name(st));
            for (size_t i = 0; i < cfg->ndev; i++)
                expect(r.dev[i].excluded && r.dev[i].status == CLF_ERROR_DEVICE_FAILED,
                       "%s: second launch %s", what, describe(&r));
            for (size_t i = 0; i < N; i++)
                expect(d->c[i] == SENTINEL, "%s: second launch wrote c[%zu]", what, i);
            /* Readmitted (each rule fired once per device), they all work again. */
            for (size_t i = 0; i < clf_fleet_device_count(f); i++)
                ck_assert_ok(clf_device_readmit(f, i));
            launch_exact(f, p, &j, d, &r, ": after readmit");
            clf_program_destroy(p);
            clf_fleet_destroy(f);
        }
    free(d);
}
END_TEST

/* ---- in-place arrays and reductions ---------------------------------------------------- */

/* An in-out array is updated exactly once, whatever fails: a chunk given back had not
 * written it, and one whose result landed is not run again. */
START_TEST(inout_updated_once)
{
    static const char *const rules[] = {
        "device=1,call=enqueue,after=3",  "device=1,call=read,after=2",
        "device=1,call=exec,after=1",     "device=1,call=write,after=4",
        "device=1,call=any,after=7,lost",
    };
    static const clf_strategy strat[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                         CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE};
    const fcfg *cfg = &CFGS[0];
    uint32_t *y = malloc(N * sizeof *y);
    const uint32_t m = 3, c = 7;
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
        int fired = 0;
        for (size_t s = 0; s < 4; s++) {
            /* Static and memory-aware stream a chunk-indexed array in rounds of 2048 units. */
            int chunked = strat[s] == CLF_STRATEGY_STATIC || strat[s] == CLF_STRATEGY_MEMORY_AWARE;
            uint64_t limits[2] = {2 * 4 * 2048, 2 * 4 * 2048};
            snprintf(what, sizeof what, "affine, %s, '%s'", clf_strategy_name(strat[s]), rules[k]);
            clf_fleet *f = fault_fleet(cfg->selection, rules[k]);
            clf_program *p;
            ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
            for (size_t i = 0; i < N; i++)
                y[i] = (uint32_t)i;
            clf_arg args[] = {CLF_INOUT(y, N * sizeof *y, sizeof *y), CLF_SCALAR(&m),
                              CLF_SCALAR(&c)};
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = chunked ? "affine_chunk" : "affine";
            d.global[0] = N;
            d.strategy = strat[s];
            d.weights_mode = CLF_WEIGHTS_EQUAL;
            d.chunks_per_device = 8;
            if (chunked) {
                args[0].flags = CLF_ARG_CHUNK_INDEXED;
                d.mem_limits = limits;
            }
            clf_launch_report r;
            clf_status st = clf_launch(f, p, &d, args, 3, &r);
            expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());
            for (size_t i = 0; i < N; i++)
                expect(y[i] == (uint32_t)i * m + c, "%s: y[%zu] = %u %s", what, i, y[i],
                       describe(&r));
            expect(units_done(&r) == N, "%s", what);
            /* Static gives device 1 its share (memory-aware may steal it all): the fault
             * must fire. */
            expect(r.dev[1].failed || strat[s] != CLF_STRATEGY_STATIC, "%s: no fault %s", what,
                   describe(&r));
            fired += r.dev[1].failed;
            clf_program_destroy(p);
            clf_fleet_destroy(f);
        }
        expect(fired >= 1, "%s: fired %d times", what, fired);
    }
    free(y);
}
END_TEST

/* A global-indexed in-out array with a halo (its chunk's input written after the previous
 * chunk's results were read): every unit's output is updated exactly once. */
START_TEST(inout_halo_updated_once)
{
    static const char *const rules[] = {
        "device=1,call=enqueue,after=3",   "device=1,call=read,after=2",
        "device=1,call=write,after=3",     "device=1,call=exec,after=1",
        "device=1,call=any,after=11,lost",
    };
    static const clf_strategy strat[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                         CLF_STRATEGY_GUIDED};
    const fcfg *cfg = &CFGS[0];
    uint32_t *pr = malloc(2 * N * sizeof *pr);
    const uint32_t n = N;
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++)
        for (size_t s = 0; s < 3; s++) {
            snprintf(what, sizeof what, "pairs, %s, '%s'", clf_strategy_name(strat[s]), rules[k]);
            clf_fleet *f = fault_fleet(cfg->selection, rules[k]);
            clf_program *p;
            ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
            for (size_t i = 0; i < N; i++)
                pr[2 * i] = lowbias32((uint32_t)i) & 0xffff, pr[2 * i + 1] = 1;
            clf_arg args[] = {CLF_INOUT(pr, 2 * N * sizeof *pr, 2 * sizeof *pr), CLF_SCALAR(&n)};
            args[0].halo_before = args[0].halo_after = 1;
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = "pairs";
            d.global[0] = N;
            d.strategy = strat[s];
            d.weights_mode = CLF_WEIGHTS_EQUAL;
            d.chunks_per_device = 8;
            clf_launch_report r;
            clf_status st = clf_launch(f, p, &d, args, 2, &r);
            expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());
            for (size_t i = 0; i < N; i++) {
                size_t l = i ? i - 1 : 0, rr = i + 1 < N ? i + 1 : N - 1;
                uint32_t want = pr[2 * l] + 2 * pr[2 * i] + pr[2 * rr] + 1;
                expect(pr[2 * i + 1] == want, "%s: unit %zu = %u, want %u %s", what, i,
                       pr[2 * i + 1], want, describe(&r));
            }
            clf_program_destroy(p);
            clf_fleet_destroy(f);
        }
    free(pr);
}
END_TEST

/* Two in-out arrays, and the second one's read fails after the first one's landed: the chunk
 * cannot run again (it would read its own results), so the launch stops with a clear error
 * rather than a wrong result; every element is either as it was or updated once. */
START_TEST(inout_half_landed_stops)
{
    const fcfg *cfg = &CFGS[0];
    uint32_t *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    clf_fleet *f = fault_fleet(cfg->selection, "device=1,call=read,after=1");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    for (size_t i = 0; i < N; i++)
        y[i] = z[i] = (uint32_t)i;
    clf_arg args[] = {CLF_INOUT(y, N * sizeof *y, sizeof *y),
                      CLF_INOUT(z, N * sizeof *z, sizeof *z)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "affine2";
    d.global[0] = N;
    d.strategy = CLF_STRATEGY_STATIC;
    clf_launch_report r;
    snprintf(what, sizeof what, "affine2");
    clf_status st = clf_launch(f, p, &d, args, 2, &r);
    expect(st == CLF_ERROR_DEVICE_FAILED, "%s: %s", clf_status_name(st), clf_last_error());
    expect(strstr(clf_last_error(), "cannot run again") != NULL, "detail: %s", clf_last_error());
    for (size_t i = 0; i < N; i++) {
        expect(y[i] == (uint32_t)i || y[i] == (uint32_t)i * 3 + 1, "y[%zu] = %u", i, y[i]);
        expect(z[i] == (uint32_t)i || z[i] == (uint32_t)i + 5, "z[%zu] = %u", i, z[i]);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(y);
    free(z);
}
END_TEST

/* A fleet whose launches move host arrays through 64 KiB pinned staging slots (issue 27),
 * with fault rules: the variables are read by clf_fleet_create() only. */
static clf_fleet *pinned_fault_fleet(const char *selection, const char *rules)
{
    setenv("CLFLEET_HOST_STAGING", "pinned", 1);
    setenv("CLFLEET_TRANSFER_CHUNK", "64K", 1);
    clf_fleet *f = fault_fleet(selection, rules);
    unsetenv("CLFLEET_HOST_STAGING");
    unsetenv("CLFLEET_TRANSFER_CHUNK");
    return f;
}

/* Pinned staging: an in-out array's read fails in its second 64 KiB piece, before any piece
 * was copied to the host array: nothing of the chunk landed, so it runs again on the other
 * device and the launch completes, every element updated exactly once. */
START_TEST(pinned_inout_read_fails_before_landing)
{
    const fcfg *cfg = &CFGS[0];
    uint32_t *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    /* N units over 2 devices: 128 KiB of y per chunk, two pieces; the second fails. */
    clf_fleet *f = pinned_fault_fleet(cfg->selection, "device=1,call=read,after=1");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    for (size_t i = 0; i < N; i++)
        y[i] = z[i] = (uint32_t)i;
    clf_arg args[] = {CLF_INOUT(y, N * sizeof *y, sizeof *y),
                      CLF_INOUT(z, N * sizeof *z, sizeof *z)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "affine2";
    d.global[0] = N;
    d.strategy = CLF_STRATEGY_STATIC;
    clf_launch_report r;
    snprintf(what, sizeof what, "affine2 pinned");
    clf_status st = clf_launch(f, p, &d, args, 2, &r);
    expect(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
    expect(r.dev[1].failed, "device 1 failed %s", describe(&r));
    for (size_t i = 0; i < N; i++) {
        expect(y[i] == (uint32_t)i * 3 + 1, "y[%zu] = %u", i, y[i]);
        expect(z[i] == (uint32_t)i + 5, "z[%zu] = %u", i, z[i]);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(y);
    free(z);
}
END_TEST

/* Pinned staging: a read longer than the ring of 4 slots copies its first pieces to the host
 * array while later ones are still to come; when one of those fails, the chunk's in-out
 * results landed in part and it cannot run again: the launch stops with a clear error, every
 * element either as it was or updated once. */
START_TEST(pinned_inout_part_landed_stops)
{
    enum { M = 1 << 18 }; /* 512 KiB of y per device: 8 pieces of 64 KiB */
    const fcfg *cfg = &CFGS[0];
    uint32_t *y = malloc(M * sizeof *y), *z = malloc(M * sizeof *z);
    /* The 6th read of device 1 fails: pieces 1 and 2 were copied to make room for 5 and 6. */
    clf_fleet *f = pinned_fault_fleet(cfg->selection, "device=1,call=read,after=5");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    for (size_t i = 0; i < M; i++)
        y[i] = z[i] = (uint32_t)i;
    clf_arg args[] = {CLF_INOUT(y, M * sizeof *y, sizeof *y),
                      CLF_INOUT(z, M * sizeof *z, sizeof *z)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "affine2";
    d.global[0] = M;
    d.strategy = CLF_STRATEGY_STATIC;
    d.weights_mode = CLF_WEIGHTS_EQUAL;
    clf_launch_report r;
    snprintf(what, sizeof what, "affine2 pinned, long read");
    clf_status st = clf_launch(f, p, &d, args, 2, &r);
    expect(st == CLF_ERROR_DEVICE_FAILED, "%s: %s", clf_status_name(st), clf_last_error());
    expect(strstr(clf_last_error(), "cannot run again") != NULL, "detail: %s", clf_last_error());
    for (size_t i = 0; i < M; i++) {
        expect(y[i] == (uint32_t)i || y[i] == (uint32_t)i * 3 + 1, "y[%zu] = %u", i, y[i]);
        expect(z[i] == (uint32_t)i || z[i] == (uint32_t)i + 5, "z[%zu] = %u", i, z[i]);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(y);
    free(z);
}
END_TEST

/* Reductions: a device's partial is combined on the host when it runs out of work; when it
 * fails first, the chunks behind its partial run again on the others (or, when its partial
 * can still be read, are kept). Sum and minimum must come out exact. */
START_TEST(reduction_survives)
{
    static const char *const rules[] = {
        "device=1,call=enqueue,after=4",        "device=1,call=exec,after=2",
        "device=1,call=read,after=3",           "device=1,call=any,after=12,lost",
        "device=1,call=read,after=0,count=all", "device=1,call=alloc",
    };
    static const clf_strategy strat[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                         CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE};
    const fcfg *cfg = &CFGS[0];
    int32_t *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint32_t want_sum = 0;
    int32_t want_min = INT32_MAX;
    for (size_t i = 0; i < N; i++) {
        x[i] = (int32_t)(lowbias32((uint32_t)i) % 200001) - 100000;
        want_sum += (uint32_t)x[i];
        want_min = x[i] < want_min ? x[i] : want_min;
    }
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++)
        for (size_t s = 0; s < 4; s++) {
            snprintf(what, sizeof what, "sum_copy, %s, '%s'", clf_strategy_name(strat[s]),
                     rules[k]);
            clf_fleet *f = fault_fleet(cfg->selection, rules[k]);
            clf_program *p;
            ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
            uint32_t sum = 12345;
            int32_t mn = 7;
            for (size_t i = 0; i < N; i++)
                y[i] = INT32_MIN;
            clf_arg args[] = {CLF_IN(x, N * sizeof *x, sizeof *x),
                              CLF_OUT(y, N * sizeof *y, sizeof *y),
                              CLF_REDUCE(&sum, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM),
                              CLF_REDUCE(&mn, 1, CLF_TYPE_INT32, CLF_REDUCE_MIN)};
            /* Static and memory-aware stream chunk-indexed arrays in rounds of 2048 units. */
            int chunked = strat[s] == CLF_STRATEGY_STATIC || strat[s] == CLF_STRATEGY_MEMORY_AWARE;
            uint64_t limits[2] = {2 * 8 * 2048 + 8, 2 * 8 * 2048 + 8};
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = chunked ? "sum_copy_chunk" : "sum_copy";
            d.global[0] = N;
            d.strategy = strat[s];
            d.weights_mode = CLF_WEIGHTS_EQUAL;
            d.chunks_per_device = 8;
            if (chunked) {
                d.mem_limits = limits;
                args[0].flags = args[1].flags = CLF_ARG_CHUNK_INDEXED;
            }
            clf_launch_report r;
            clf_status st = clf_launch(f, p, &d, args, 4, &r);
            expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());
            expect(sum == want_sum && mn == want_min, "%s: sum %u min %d, want %u %d %s", what, sum,
                   mn, want_sum, want_min, describe(&r));
            for (size_t i = 0; i < N; i++)
                expect(y[i] == 2 * x[i], "%s: y[%zu] %s", what, i, describe(&r));
            /* Other strategies may give device 1 no chunk before the others are done. */
            int sure = strat[s] == CLF_STRATEGY_STATIC || strstr(rules[k], "alloc");
            expect((r.dev[1].failed || !sure) && units_done(&r) == N, "%s: %s", what, describe(&r));
            clf_program_destroy(p);
            clf_fleet_destroy(f);
        }
    free(x);
    free(y);
}
END_TEST

/* In-out arrays with a reduction combine after every chunk, so a failure re-runs only the
 * chunk that had not landed. */
START_TEST(inout_with_reduction)
{
    static const char *const rules[] = {"device=1,call=enqueue,after=3",
                                        "device=1,call=exec,after=2", "device=1,call=read,after=5"};
    const fcfg *cfg = &CFGS[0];
    uint32_t *y = malloc(N * sizeof *y), want_sum = 0;
    for (size_t i = 0; i < N; i++)
        want_sum += (uint32_t)i;
    for (size_t k = 0; k < 3; k++)
        for (int s = 0; s < 2; s++) {
            snprintf(what, sizeof what, "affine_sum, '%s', %s", rules[k], s ? "dynamic" : "static");
            uint64_t limits[2] = {2 * 4 * 2048 + 4, 2 * 4 * 2048 + 4};
            clf_fleet *f = fault_fleet(cfg->selection, rules[k]);
            clf_program *p;
            ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
            for (size_t i = 0; i < N; i++)
                y[i] = (uint32_t)i;
            uint32_t sum = 0;
            clf_arg args[] = {CLF_INOUT(y, N * sizeof *y, sizeof *y),
                              CLF_REDUCE(&sum, 1, CLF_TYPE_UINT32, CLF_REDUCE_SUM)};
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = s ? "affine_sum" : "affine_sum_chunk";
            d.global[0] = N;
            d.strategy = s ? CLF_STRATEGY_DYNAMIC : CLF_STRATEGY_STATIC;
            d.chunks_per_device = 8;
            if (!s) { /* static: a chunk-indexed array in rounds of 2048 units */
                args[0].flags = CLF_ARG_CHUNK_INDEXED;
                d.mem_limits = limits;
            }
            clf_launch_report r;
            clf_status st = clf_launch(f, p, &d, args, 2, &r);
            expect(st == CLF_SUCCESS, "%s: %s: %s", what, clf_status_name(st), clf_last_error());
            expect(sum == want_sum, "%s: sum %u, want %u %s", what, sum, want_sum, describe(&r));
            expect(r.dev[1].failed || s, "%s: no fault %s", what, describe(&r));
            for (size_t i = 0; i < N; i++)
                expect(y[i] == (uint32_t)i * 3 + 1, "%s: y[%zu] = %u", what, i, y[i]);
            clf_program_destroy(p);
            clf_fleet_destroy(f);
        }
    free(y);
}
END_TEST

/* ---- programs ---------------------------------------------------------------------------- */

START_TEST(build_fails_on_one_device)
{
    const fcfg *cfg = &CFGS[_i];
    size_t bad = cfg->victim, v = pos_of(cfg, bad);
    char rule[64];
    snprintf(rule, sizeof rule, "device=%zu,call=build", bad);
    clf_fleet *f = fault_fleet(cfg->selection, rule);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    char want[64];
    snprintf(want, sizeof want, "device %zu '", bad);
    expect(strstr(clf_last_error(), want) && strstr(clf_last_error(), "injected"), "detail: %s",
           clf_last_error());
    for (size_t i = 0; i < clf_fleet_device_count(f); i++) {
        expect(clf_program_device_ok(p, i) == (i != bad), "device %zu ok %d", i,
               clf_program_device_ok(p, i));
        expect((clf_program_build_log(p, i) != NULL) == (i == bad), "log of %zu", i);
    }
    expect(strstr(clf_program_build_log(p, bad), "CL_BUILD_PROGRAM_FAILURE") != NULL, "log: %s",
           clf_program_build_log(p, bad));
    /* Launches leave the device out (it is not failed: other programs run there). */
    data *d = data_new();
    for (size_t s = 0; s < NSTRAT; s++) {
        job j;
        job_init(&j, cfg, d, STRATEGIES[s], STRATEGIES[s] == CLF_STRATEGY_MEMORY_AWARE);
        snprintf(what, sizeof what, "%s, build failed on %zu, %s", cfg->label, bad,
                 clf_strategy_name(STRATEGIES[s]));
        clf_launch_report r;
        launch_exact(f, p, &j, d, &r, "");
        expect(r.dev[v].excluded && r.dev[v].units == 0 && r.dev[v].status == CLF_ERROR_BUILD &&
                   !clf_device_is_failed(f, bad),
               "%s: %s", what, describe(&r));
    }
    /* A launch on that device alone has nothing to run on. */
    clf_launch_desc one = CLF_LAUNCH_DESC_INIT;
    uint32_t reps = 1;
    one.kernel = "mixk";
    one.global[0] = N;
    one.devices = &bad;
    one.num_devices = 1;
    clf_arg args[] = {CLF_IN(d->a, sizeof d->a, 4), CLF_IN(d->b, sizeof d->b, 4),
                      CLF_OUT(d->c, sizeof d->c, 4), CLF_SCALAR(&reps)};
    ck_assert_status(clf_launch(f, p, &one, args, 4, NULL), CLF_ERROR_BUILD);
    expect(strstr(clf_last_error(), "did not build") != NULL, "detail: %s", clf_last_error());
    /* A task queue leaves it out (and has nothing to run on when it is the only one); a
     * pipeline stage on it cannot be created. */
    clf_taskq *q0 = NULL;
    ck_assert_ok(clf_taskq_create(&q0, f, p, &bad, 1));
    clf_task_desc t = CLF_TASK_DESC_INIT;
    t.kernel = "mixk";
    t.global[0] = 64;
    ck_assert_ok(clf_taskq_submit(q0, &t, args, 4, NULL));
    ck_assert_status(clf_taskq_run(q0, NULL), CLF_ERROR_DEVICE_FAILED);
    clf_taskq_destroy(q0);
    ck_assert_ok(clf_taskq_create(&q0, f, p, NULL, 0));
    for (int k = 0; k < 8; k++)
        ck_assert_ok(clf_taskq_submit(q0, &t, args, 4, NULL));
    clf_taskq_report tr;
    ck_assert_ok(clf_taskq_run(q0, &tr));
    uint64_t ran = 0;
    for (size_t i = 0; i < tr.num_devices; i++) {
        expect(tr.dev[i].device != bad || tr.dev[i].tasks == 0, "task queue device %zu: %llu",
               tr.dev[i].device, (unsigned long long)tr.dev[i].tasks);
        ran += tr.dev[i].tasks;
    }
    expect(ran == 8 && tr.failed == 0, "task queue ran %llu", (unsigned long long)ran);
    clf_taskq_destroy(q0);
    clf_stage_desc sd = CLF_STAGE_DESC_INIT;
    sd.device = bad;
    sd.program = p;
    sd.kernel = "affine2";
    sd.in_bytes = sd.out_bytes = 256;
    sd.global[0] = 64;
    clf_pipeline *pl = NULL;
    ck_assert_status(clf_pipeline_create(&pl, f, &sd, 1, NULL), CLF_ERROR_BUILD);
    ck_assert_ptr_null(pl);
    /* The fault fired once: the next build covers every device, from the cache or not. */
    clf_program *q = NULL;
    ck_assert_ok(clf_program_build_source(&q, f, SRC, NULL));
    for (size_t i = 0; i < clf_fleet_device_count(f); i++)
        expect(clf_program_device_ok(q, i) && !clf_program_build_log(q, i), "device %zu", i);
    clf_program_destroy(q);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(d);
}
END_TEST

START_TEST(build_fails_everywhere)
{
    clf_fleet *f = fault_fleet(FLEET2, "device=*,call=build,status=CL_COMPILER_NOT_AVAILABLE");
    clf_program *p = (clf_program *)f;
    ck_assert_status(clf_program_build_source(&p, f, SRC, NULL), CLF_ERROR_BUILD);
    ck_assert_ptr_null(p);
    /* Both devices named: identical logs are printed once with the devices that share them
     * ("devices 0-1"), else one per device. */
    const char *det = clf_last_error();
    expect(strstr(det, "CL_COMPILER_NOT_AVAILABLE") &&
               (strstr(det, "devices 0-1 '") ||
                (strstr(det, "device 0 '") && strstr(det, "device 1 '"))),
           "detail: %s", det);
    clf_fleet_destroy(f);
    /* A real compile error on every device still fails with every log. */
    f = fault_fleet(FLEET2, NULL);
    ck_assert_status(clf_program_build_source(&p, f, "__kernel void k(void) { nope(); }", NULL),
                     CLF_ERROR_BUILD);
    det = clf_last_error();
    expect((strstr(det, "devices 0-1 '") ||
            (strstr(det, "device 0 '") && strstr(det, "device 1 '"))) &&
               strstr(det, "nope"),
           "detail: %s", det);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- the grammar ------------------------------------------------------------------------ */

START_TEST(malformed_rules)
{
    static const struct {
        const char *rules, *detail;
    } bad[] = {
        {"device=1", "no call="},
        {"call=enqueue", "no device="},
        {"device=1,call=enqeue", "bad value 'enqeue' for 'call'"},
        {"device=x,call=read", "bad value 'x' for 'device'"},
        {"device=-1,call=read", "bad value '-1' for 'device'"},
        {"device=9,call=read", "names device 9, the fleet has 2"},
        {"device=0,call=read,after=", "bad value '' for 'after'"},
        {"device=0,call=read,after=3x", "bad value '3x' for 'after'"},
        {"device=0,call=read,after=99999999999999999999999", "bad value"},
        {"device=0,call=read,count=0", "bad value '0' for 'count'"},
        {"device=0,call=read,status=CL_NO_SUCH", "bad value 'CL_NO_SUCH' for 'status'"},
        {"device=0,call=read,status=5", "bad value '5' for 'status'"},
        {"device=0,call=read,when=now", "unknown item 'when=now'"},
        {"device=0,call=read,lost=1", "unknown item 'lost=1'"},
        {"device=0,call=read,device=1", "'device' given twice"},
        {"device=0,call=read,,after=1", "empty item"},
        {"device=0,call=read;;device=1,call=write", "rule 2 is empty"},
        {";", "rule 1 is empty"},
        {"device=0,call=read|", "bad value 'read|' for 'call'"},
        {"device=0,call=read;device=1,call=bogus", "rule 2: bad value 'bogus'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
        clf_fleet *f = (clf_fleet *)&o;
        o.devices = FLEET2;
        setenv("CLFLEET_FAULT_INJECT", bad[i].rules, 1);
        clf_status st = clf_fleet_create(&f, &o);
        unsetenv("CLFLEET_FAULT_INJECT");
        expect(st == CLF_ERROR_PARSE && f == NULL, "'%s': %s", bad[i].rules, clf_status_name(st));
        expect(strstr(clf_last_error(), "CLFLEET_FAULT_INJECT") &&
                   strstr(clf_last_error(), bad[i].detail),
               "'%s': detail '%s', want '%s'", bad[i].rules, clf_last_error(), bad[i].detail);
    }
    static const char *const good[] = {
        "",
        "  ",
        "device=0,call=read",
        " device = 1 , call = enqueue|exec , after = 3 , count = all ;",
        "device=*,call=transfer,status=-5;device=all,call=any,lost,status=CL_OUT_OF_RESOURCES",
        "DEVICE=1,CALL=BUILD,status=cl_build_program_failure",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        clf_fleet *f = fault_fleet(FLEET2, good[i]);
        clf_fleet_destroy(f);
    }
}
END_TEST

/* count=N fails N calls in a row, on each device a rule names; a fault on a device that is
 * not in the launch never fires. */
START_TEST(count_and_devices)
{
    data *d = data_new();
    const fcfg *cfg = &CFGS[1]; /* fleet devices 2, 0, 3 in the launch; 1 is not */
    clf_fleet *f = fault_fleet(cfg->selection, "device=1,call=enqueue,lost;device=0,call=alloc,"
                                               "count=2;device=3,call=read|write,after=1");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    job j;
    job_init(&j, cfg, d, CLF_STRATEGY_STATIC, 0);
    snprintf(what, sizeof what, "count_and_devices");
    clf_launch_report r;
    launch_exact(f, p, &j, d, &r, "");
    /* Device 0 (position 1) failed its first allocation; device 3 (position 2) its second
     * transfer; device 2 (position 0) did the rest. */
    expect(!r.dev[0].failed && r.dev[1].failed && r.dev[2].failed && r.failed_devices == 2 &&
               r.dev[1].cl_error == -4 && r.dev[2].cl_error == -5 && r.dev[0].units == N,
           "%s", describe(&r));
    /* The metrics table lists the failed devices. */
    char *table = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&table, &tlen);
    ck_assert_ptr_nonnull(mem);
    ck_assert_ok(clf_metrics_print(f, mem));
    fclose(mem);
    expect(strstr(table, "device 0 failed") && strstr(table, "device 3 failed") &&
               !strstr(table, "device 2 failed"),
           "table: %s", table);
    free(table);
    ck_assert_ok(clf_device_readmit(f, 0));
    ck_assert_ok(clf_device_readmit(f, 3));
    /* Device 0's second allocation fails too (count=2); device 3 is fine now. */
    launch_exact(f, p, &j, d, &r, "");
    expect(r.dev[1].failed && r.dev[1].cl_error == -4 && !r.dev[2].failed && r.failed_devices == 1,
           "%s", describe(&r));
    ck_assert_ok(clf_device_readmit(f, 0));
    launch_exact(f, p, &j, d, &r, "");
    expect(r.failed_devices == 0, "%s", describe(&r));
    /* The device outside the launch never made a call: it is not failed. */
    expect(!clf_device_is_failed(f, 1), "device 1 failed");
    ck_assert_status(clf_device_readmit(f, 99), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_device_readmit(NULL, 0), CLF_ERROR_NULL_POINTER);
    expect(!clf_device_is_failed(NULL, 0) && !clf_device_is_failed(f, 99), "bad handles");
    char buf[8];
    ck_assert_status(clf_device_failure(NULL, 8, f, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_device_failure(buf, 8, f, 99), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ok(clf_device_failure(buf, sizeof buf, f, 0));
    ck_assert_str_eq(buf, "");
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(d);
}
END_TEST

/* ---- every subsystem: task queues, pipelines, collectives, copies, array launches -------- */

static const char SUB_SRC[] =
    "__kernel void add1(__global const uint *in, __global uint *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] + 1u;\n"
    "}\n"
    "__kernel void inc(__global uint *x) { x[get_global_id(0)] += 1u; }\n";

#define SUB_N 256
#define SUB_TASKS 8

/* A fleet of two devices with the rules, and the subsystems' program. */
static clf_fleet *sub_fleet(const char *rules, clf_program **p)
{
    clf_fleet *f = fault_fleet(FLEET2, rules);
    *p = NULL;
    ck_assert_ok(clf_program_build_source(p, f, SUB_SRC, NULL));
    test_watchdog(120); /* a fault must never hang a subsystem */
    return f;
}

static void sub_done(clf_fleet *f, clf_program *p)
{
    test_watchdog_off();
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}

/* A call a rule failed, or that the failed device refused: an error naming device 1. */
static void expect_names_device1(clf_status st, const char *call)
{
    expect(st != CLF_SUCCESS, "%s succeeded though a rule fails it", call);
    expect(strstr(clf_last_error(), "device 1") != NULL, "%s: %s: %s", call,
           clf_status_name(st), clf_last_error());
}

/* SUB_TASKS tasks of add1, all dealt to device 1, the queue's first device (then device 0
 * when ndev is 2: it steals them, but device 1's thread starts first and takes some before
 * device 0 could take them all); a task that says it succeeded has the right result. The
 * run's status, its error in err, the report in *r. */
static clf_status taskq_round(clf_fleet *f, clf_program *p, size_t ndev, clf_taskq_report *r,
                              char *err, size_t n)
{
    static uint32_t in[SUB_TASKS][SUB_N], out[SUB_TASKS][SUB_N];
    static const size_t devs[2] = {1, 0};
    clf_taskq *q = NULL;
    ck_assert_ok(clf_taskq_create(&q, f, p, devs, ndev));
    for (size_t t = 0; t < SUB_TASKS; t++) {
        for (size_t i = 0; i < SUB_N; i++)
            in[t][i] = (uint32_t)(t * 1000 + i), out[t][i] = 0;
        clf_arg a[] = {CLF_WHOLE_IN(in[t], sizeof in[t]), CLF_WHOLE_OUT(out[t], sizeof out[t])};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "add1";
        d.global[0] = SUB_N;
        d.affinity = 0;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 2, NULL));
    }
    clf_status st = clf_taskq_run(q, r);
    snprintf(err, n, "%s", clf_last_error());
    for (size_t t = 0; t < SUB_TASKS; t++) {
        clf_task_info ti;
        ck_assert_ok(clf_taskq_task_info(&ti, q, t));
        for (size_t i = 0; ti.status == CLF_SUCCESS && i < SUB_N; i++)
            ck_assert_msg(out[t][i] == in[t][i] + 1u, "task %zu [%zu]: %u", t, i, out[t][i]);
    }
    clf_taskq_destroy(q);
    return st;
}

static const char *const ONE_CALL_RULES[] = {"device=1,call=enqueue", "device=1,call=exec",
                                             "device=1,call=write", "device=1,call=read",
                                             "device=1,call=any,after=2"};
#define N_ONE_CALL ((int)(sizeof ONE_CALL_RULES / sizeof *ONE_CALL_RULES))

/* A rule that fails one call of a task on device 1 (the queue's only device: nothing can
 * steal its tasks before the rule fires): that task fails clearly, the others have the right
 * result. */
START_TEST(taskq_one_call_fails)
{
    clf_program *p;
    clf_fleet *f = sub_fleet(ONE_CALL_RULES[_i], &p);
    clf_taskq_report r;
    char err[512];
    clf_status st = taskq_round(f, p, 1, &r, err, sizeof err);
    expect(st != CLF_SUCCESS && r.failed == 1, "rule '%s': %s, %llu failed", ONE_CALL_RULES[_i],
           clf_status_name(st), (unsigned long long)r.failed);
    expect(strstr(err, "device 1") && strstr(err, "injected"), "rule '%s': %s",
           ONE_CALL_RULES[_i], err);
    sub_done(f, p);
}
END_TEST

/* A lost device: its task moves to device 0 (every result right), the next run leaves it out,
 * and after clf_device_readmit() it takes tasks again. */
START_TEST(taskq_lost_device)
{
    clf_program *p;
    clf_fleet *f = sub_fleet(_i ? "device=1,call=read,lost" : "device=1,call=enqueue,lost", &p);
    clf_taskq_report r;
    char err[512];
    /* Until device 1 took a task (the rule fires on its first): every task right anyway. */
    /* Device 0 may take every task of a round before device 1 starts (a loaded machine):
     * rounds are cheap, so many of them, until device 1 took one. */
    for (int k = 0; k < 200 && !clf_device_is_failed(f, 1); k++) {
        ck_assert_msg(taskq_round(f, p, 2, &r, err, sizeof err) == CLF_SUCCESS, "%s", err);
        expect(r.failed == 0, "%llu failed", (unsigned long long)r.failed);
    }
    expect(clf_device_is_failed(f, 1), "device 1 not failed");
    /* r.dev is by queue position: device 1 first. */
    ck_assert_msg(taskq_round(f, p, 2, &r, err, sizeof err) == CLF_SUCCESS, "%s", err);
    expect(r.dev[0].tasks == 0 && r.dev[1].tasks == SUB_TASKS, "after the loss: %llu + %llu",
           (unsigned long long)r.dev[1].tasks, (unsigned long long)r.dev[0].tasks);
    /* A queue of device 1 alone has nothing to run on: its tasks fail clearly. */
    clf_status st = taskq_round(f, p, 1, &r, err, sizeof err);
    expect(st == CLF_ERROR_DEVICE_FAILED && strstr(err, "device 1"),
           "device 1 alone: %s: %s", clf_status_name(st), err);
    ck_assert_ok(clf_device_readmit(f, 1));
    /* Readmitted, device 1 alone runs them all (with device 0 beside it, device 0 might
     * take every task: a timing, not a verdict). */
    ck_assert_msg(taskq_round(f, p, 1, &r, err, sizeof err) == CLF_SUCCESS, "%s", err);
    expect(r.dev[0].tasks == SUB_TASKS, "readmitted device 1 ran %llu of %d tasks",
           (unsigned long long)r.dev[0].tasks, SUB_TASKS);
    sub_done(f, p);
}
END_TEST

/* A two-stage pipeline, device 0 then device 1, add1 in each: 4 batches. */
static clf_status pipeline_round(clf_fleet *f, clf_program *p)
{
    static uint32_t in[4 * SUB_N], out[4 * SUB_N];
    clf_stage_desc sd[2] = {CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT};
    for (size_t s = 0; s < 2; s++) {
        sd[s].device = s;
        sd[s].program = p;
        sd[s].kernel = "add1";
        sd[s].in_bytes = sd[s].out_bytes = SUB_N * 4;
        sd[s].global[0] = SUB_N;
    }
    for (size_t i = 0; i < 4 * SUB_N; i++)
        in[i] = (uint32_t)i * 3u, out[i] = 0;
    clf_pipeline *pl = NULL;
    clf_status st = clf_pipeline_create(&pl, f, sd, 2, NULL);
    if (st != CLF_SUCCESS)
        return st;
    st = clf_pipeline_run(pl, in, out, 4, NULL);
    char err[512];
    snprintf(err, sizeof err, "%s", clf_last_error());
    for (size_t i = 0; st == CLF_SUCCESS && i < 4 * SUB_N; i++)
        ck_assert_msg(out[i] == in[i] + 2u, "pipeline [%zu]: %u", i, out[i]);
    clf_pipeline_destroy(pl);
    if (st != CLF_SUCCESS)
        clf_set_error(st, "%s", err);
    return st;
}

/* One failed call of the stage on device 1 fails the run clearly; a lost device 1 fails
 * the next run too (refused), until readmitted. */
START_TEST(pipeline_faults)
{
    clf_program *p;
    clf_fleet *f = sub_fleet(_i < N_ONE_CALL ? ONE_CALL_RULES[_i] : "device=1,call=exec,lost",
                             &p);
    expect_names_device1(pipeline_round(f, p), "clf_pipeline_run");
    if (_i == N_ONE_CALL) {
        expect(clf_device_is_failed(f, 1), "device 1 not failed");
        clf_status st = pipeline_round(f, p);
        expect(st == CLF_ERROR_DEVICE_FAILED, "after the loss: %s: %s", clf_status_name(st),
               clf_last_error());
        expect_names_device1(st, "clf_pipeline_run after the loss");
        ck_assert_ok(clf_device_readmit(f, 1));
    }
    ck_assert_ok(pipeline_round(f, p)); /* the rule fired: the next run is right */
    sub_done(f, p);
}
END_TEST

/* Two buffers, on devices 0 and 1: b[k][i] = k * 100 + i. */
static void coll_buffers(clf_fleet *f, clf_buffer *b[2])
{
    uint32_t h[SUB_N];
    for (size_t k = 0; k < 2; k++) {
        ck_assert_ok(clf_buffer_create(&b[k], f, k, sizeof h, CLF_MEM_READ_WRITE));
        for (size_t i = 0; i < SUB_N; i++)
            h[i] = (uint32_t)(k * 100 + i);
        ck_assert_ok(clf_buffer_write(b[k], 0, sizeof h, h));
    }
}

static void coll_free(clf_buffer *b[2])
{
    clf_buffer_destroy(b[0]);
    clf_buffer_destroy(b[1]);
}

/* An all-reduce (sum; the ring forced: it runs combine kernels and copies on both devices)
 * or a broadcast from 0; the buffers checked when it succeeds. */
static clf_status coll_run(clf_buffer *b[2], int allreduce)
{
    clf_collective_options ring = CLF_COLLECTIVE_OPTIONS_INIT;
    ring.algorithm = CLF_ALLREDUCE_RING;
    clf_status st = allreduce ? clf_allreduce(b, 2, SUB_N, CLF_TYPE_UINT32, CLF_REDUCE_SUM, &ring)
                              : clf_broadcast(b, 2, SUB_N * 4, 0, NULL);
    uint32_t h[SUB_N];
    for (size_t k = 0; st == CLF_SUCCESS && k < 2; k++) {
        ck_assert_ok(clf_buffer_read(b[k], 0, sizeof h, h));
        for (size_t i = 0; i < SUB_N; i++) {
            uint32_t want = allreduce ? (uint32_t)(100 + 2 * i) : (uint32_t)i;
            ck_assert_msg(h[i] == want, "buffer %zu [%zu]: %u, not %u", k, i, h[i], want);
        }
    }
    return st;
}

/* All-reduce (combine kernels and copies) and broadcast (copies): a rule failing one of
 * their calls on device 1 fails them clearly; after a loss, the next one including device
 * 1's buffer is refused until readmitted. */
START_TEST(collective_faults)
{
    static const char *const rules[] = {"device=1,call=enqueue", "device=1,call=exec",
                                        "device=1,call=write", "device=1,call=write,lost"};
    int allreduce = _i < 2 || _i == 3;
    clf_program *p;
    clf_fleet *f = sub_fleet(rules[_i], &p);
    clf_buffer *b[2];
    coll_buffers(f, b);
    expect_names_device1(coll_run(b, allreduce), allreduce ? "clf_allreduce" : "clf_broadcast");
    coll_free(b);
    coll_buffers(f, b);
    if (_i == 3) {
        clf_status st = coll_run(b, 0);
        expect(st == CLF_ERROR_DEVICE_FAILED, "broadcast after the loss: %s: %s",
               clf_status_name(st), clf_last_error());
        expect_names_device1(st, "clf_broadcast after the loss");
        ck_assert_ok(clf_device_readmit(f, 1));
        coll_free(b);
        coll_buffers(f, b);
    }
    ck_assert_ok(coll_run(b, allreduce)); /* the rule fired once */
    coll_free(b);
    sub_done(f, p);
}
END_TEST

/* The all-reduce's host combine forced: a rule failing the read or the write of device 1's
 * buffer fails it clearly, with every queued command waited for; the next one is right. */
START_TEST(host_combine_faults)
{
    static const char *const rules[] = {"device=1,call=read", "device=1,call=write"};
    clf_program *p;
    clf_fleet *f = sub_fleet(rules[_i], &p);
    clf_buffer *b[2];
    clf_collective_options host = CLF_COLLECTIVE_OPTIONS_INIT;
    host.algorithm = CLF_ALLREDUCE_HOST;
    coll_buffers(f, b);
    expect_names_device1(clf_allreduce(b, 2, SUB_N, CLF_TYPE_UINT32, CLF_REDUCE_SUM, &host),
                         "clf_allreduce (host combine)");
    coll_free(b);
    coll_buffers(f, b);
    ck_assert_ok(clf_allreduce(b, 2, SUB_N, CLF_TYPE_UINT32, CLF_REDUCE_SUM, &host));
    uint32_t h[SUB_N];
    for (size_t k = 0; k < 2; k++) {
        ck_assert_ok(clf_buffer_read(b[k], 0, sizeof h, h));
        for (size_t i = 0; i < SUB_N; i++)
            ck_assert_msg(h[i] == (uint32_t)(100 + 2 * i), "buffer %zu [%zu]: %u", k, i, h[i]);
    }
    coll_free(b);
    sub_done(f, p);
}
END_TEST

/* clf_copy and clf_copy_async between devices 0 and 1: a rule failing the read of the source
 * or the write of the destination fails the copy clearly (the next one is right); after a
 * loss every copy to or from device 1 is refused until readmitted. */
START_TEST(copy_faults)
{
    static const char *const rules[] = {"device=1,call=write", "device=0,call=read",
                                        "device=1,call=transfer,lost"};
    clf_program *p;
    clf_fleet *f = sub_fleet(rules[_i % 3], &p);
    int async = _i >= 3;
    clf_buffer *b[2];
    coll_buffers(f, b);
    uint32_t h[SUB_N];
    for (int round = 0; round < 3; round++) {
        clf_status st;
        if (async) {
            clf_event *e = NULL;
            st = clf_copy_async(b[1], 0, b[0], 0, sizeof h, NULL, 0, &e);
            if (st == CLF_SUCCESS) {
                st = clf_event_wait(e);
                clf_event_release(e);
            }
        } else {
            st = clf_copy(b[1], 0, b[0], 0, sizeof h);
        }
        if (round == 0) {
            expect(st != CLF_SUCCESS &&
                       strstr(clf_last_error(), _i % 3 == 1 ? "device 0" : "device 1"),
                   "rule '%s': %s: %s", rules[_i % 3], clf_status_name(st), clf_last_error());
            continue;
        }
        if (round == 1 && _i % 3 == 2) {
            expect(st == CLF_ERROR_DEVICE_FAILED, "copy after the loss: %s: %s",
                   clf_status_name(st), clf_last_error());
            expect_names_device1(st, "clf_copy after the loss");
            expect_names_device1(clf_copy(b[0], 0, b[1], 0, sizeof h), "clf_copy from device 1");
            ck_assert_ok(clf_device_readmit(f, 1));
            continue;
        }
        ck_assert_msg(st == CLF_SUCCESS, "round %d: %s", round, clf_last_error());
        ck_assert_ok(clf_buffer_read(b[1], 0, sizeof h, h));
        for (size_t i = 0; i < SUB_N; i++)
            ck_assert_uint_eq(h[i], i);
    }
    coll_free(b);
    sub_done(f, p);
}
END_TEST

/* An array over both devices, inc on each part: the rule fails device 1's part clearly; a
 * lost device 1 refuses the next array launch, until readmitted. */
START_TEST(array_launch_faults)
{
    static const char *const rules[] = {"device=1,call=exec", "device=1,call=exec,lost"};
    clf_program *p;
    clf_fleet *f = sub_fleet(rules[_i], &p);
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = SUB_N;
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    ck_assert_uint_eq(clf_array_part_count(a), 2);
    uint32_t h[SUB_N];
    for (size_t i = 0; i < SUB_N; i++)
        h[i] = (uint32_t)i;
    ck_assert_ok(clf_array_write(a, NULL, NULL, h));
    clf_array_launch_desc ld = CLF_ARRAY_LAUNCH_DESC_INIT;
    ld.kernel = "inc";
    ld.global[0] = SUB_N;
    clf_arg arg = CLF_ARRAY_INOUT(a);
    clf_status st = clf_array_launch(f, p, &ld, &arg, 1);
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a);
    expect_names_device1(st, "clf_array_launch");
    if (_i == 1) {
        expect(clf_device_is_failed(f, 1), "device 1 not failed");
        st = clf_array_launch(f, p, &ld, &arg, 1);
        expect(st == CLF_ERROR_DEVICE_FAILED, "after the loss: %s: %s", clf_status_name(st),
               clf_last_error());
        expect_names_device1(st, "clf_array_launch after the loss");
        ck_assert_ok(clf_device_readmit(f, 1));
    }
    clf_array_destroy(a);
    a = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    ck_assert_ok(clf_array_write(a, NULL, NULL, h));
    clf_arg arg2 = CLF_ARRAY_INOUT(a);
    ck_assert_ok(clf_array_launch(f, p, &ld, &arg2, 1)); /* the rule fired: now right */
    ck_assert_ok(clf_array_read(a, NULL, NULL, h));
    for (size_t i = 0; i < SUB_N; i++)
        ck_assert_uint_eq(h[i], i + 1);
    clf_array_destroy(a);
    sub_done(f, p);
}
END_TEST


int main(void)
{
    Suite *s = suite_create("fault");
    TCase *tc = tcase_create("fault");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, unset_inject);
    tcase_add_test(tc, malformed_rules);
    tcase_add_loop_test(tc, build_fails_on_one_device, 0, 2);
    tcase_add_test(tc, build_fails_everywhere);
    tcase_add_test(tc, not_a_device_fault);
    tcase_add_test(tc, small_launch_standby_takes_over);
    tcase_add_test(tc, count_and_devices);
    tcase_add_loop_test(tc, one_device_fails, 0, 2 * K_COUNT);
    tcase_add_loop_test(tc, every_device_fails, 0, 2);
    tcase_add_test(tc, inout_updated_once);
    tcase_add_test(tc, inout_half_landed_stops);
    tcase_add_test(tc, pinned_inout_read_fails_before_landing);
    tcase_add_test(tc, pinned_inout_part_landed_stops);
    tcase_add_test(tc, inout_halo_updated_once);
    tcase_add_test(tc, reduction_survives);
    tcase_add_test(tc, inout_with_reduction);
    tcase_add_loop_test(tc, taskq_one_call_fails, 0, N_ONE_CALL);
    tcase_add_loop_test(tc, taskq_lost_device, 0, 2);
    tcase_add_loop_test(tc, pipeline_faults, 0, N_ONE_CALL + 1);
    tcase_add_loop_test(tc, collective_faults, 0, 4);
    tcase_add_loop_test(tc, host_combine_faults, 0, 2);
    tcase_add_loop_test(tc, copy_faults, 0, 6);
    tcase_add_loop_test(tc, array_launch_faults, 0, 2);
    suite_add_tcase(s, tc);
    return test_run_fleet4_fleet2(s);
}

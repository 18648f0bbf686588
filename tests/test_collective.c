/*
 * Collectives against plain C references: every reduction (all-reduce, reduce to a device,
 * reduce to the host) for every operation and type on 1, 2 and 3 devices, in one shared
 * context and with one context per device (the staged path), for counts 1, 7, 1000 and
 * 2^20 + 3; the all-reduce with each of its algorithms forced, and its choice (predicted,
 * then by measured times: both tried, settled on the faster, one far dearer never tried, the
 * slower re-tried);
 * broadcast, all-gather, scatter and gather (block and block-cyclic) likewise;
 * the distributions as pure functions; every bad input.
 *
 * Integer results wrap around and are exact in any order; float inputs are small integers
 * (sums and products) or multiples of 1/8 (min, max), so every order of combination gives
 * the same bits and the comparison is exact.
 */
#include "common.h"

#include <pthread.h>
#include <stdint.h>

/* FLEET4 (common.h) splits every pthread device into single units; 3 are used. ROOTS are the
 * root devices as PoCL lists them: pthread, pthread and basic (commands run inside
 * clEnqueue*), in no particular order. */
#define ROOTS TEST_CPUS

/* Devices of the fleet for 1, 2 and 3 positions: not in fleet order, so positions and
 * device indices differ. */
static const size_t DEVS[4][3] = {{0}, {3}, {1, 2}, {2, 0, 3}};

static const size_t SIZES[] = {1, 7, 1000, (1u << 20) + 3};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])
#define BIG ((1u << 20) + 3)

static const clf_type TYPES[] = {CLF_TYPE_INT32, CLF_TYPE_UINT32, CLF_TYPE_INT64, CLF_TYPE_FLOAT,
                                 CLF_TYPE_DOUBLE};
static const clf_reduce_op OPS[] = {CLF_REDUCE_SUM, CLF_REDUCE_PROD, CLF_REDUCE_MIN,
                                    CLF_REDUCE_MAX};
static const char *const TYPE_NAMES[] = {"", "int32", "uint32", "int64", "float", "double"};
static const char *const OP_NAMES[] = {"", "sum", "prod", "min", "max"};

/* The fleets, created once: [0] one shared context, [1] a context per device. */
static clf_fleet *fleets[2];

static void fleets_up(void)
{
    for (int i = 0; i < 2; i++)
        fleets[i] = test_fleet(FLEET4, i);
}

static void fleets_down(void)
{
    for (int i = 0; i < 2; i++) {
        clf_fleet_destroy(fleets[i]);
        fleets[i] = NULL;
    }
}

/* ---- reference --------------------------------------------------------------------- */

/* Inputs whose combination is exact in any order (see the top of the file). */
static void gen(clf_type t, clf_reduce_op op, size_t n, uint64_t seed, void *out)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = xorshift64(&s);
        double small = op == CLF_REDUCE_SUM    ? (double)((int)(r % 101) - 50)
                       : op == CLF_REDUCE_PROD ? (double)((int)(r % 7) - 3)
                                        : (double)((int)(r % 20001) - 10000) / 8.0;
        switch (t) {
        case CLF_TYPE_INT32:
        case CLF_TYPE_UINT32:
            ((uint32_t *)out)[i] = (uint32_t)r;
            break;
        case CLF_TYPE_INT64:
            ((uint64_t *)out)[i] = r;
            break;
        case CLF_TYPE_FLOAT:
            ((float *)out)[i] = (float)small;
            break;
        case CLF_TYPE_DOUBLE:
            ((double *)out)[i] = small;
            break;
        }
    }
}

#define REF_LOOP(T, SUM, PROD)                                                          \
    for (size_t i = 0; i < n; i++) {                                                    \
        T a = ((T *)acc)[i], b = ((const T *)x)[i];                                     \
        ((T *)acc)[i] = op == CLF_REDUCE_SUM    ? SUM                                          \
                        : op == CLF_REDUCE_PROD ? PROD                                         \
                        : op == CLF_REDUCE_MIN  ? (b < a ? b : a)                              \
                                         : (b > a ? b : a);                             \
    }

static void ref_combine(clf_type t, clf_reduce_op op, void *acc, const void *x, size_t n)
{
    switch (t) {
    case CLF_TYPE_INT32:
        REF_LOOP(int32_t, (int32_t)((uint32_t)a + (uint32_t)b),
                 (int32_t)((uint32_t)a * (uint32_t)b));
        break;
    case CLF_TYPE_UINT32:
        REF_LOOP(uint32_t, a + b, a * b);
        break;
    case CLF_TYPE_INT64:
        REF_LOOP(int64_t, (int64_t)((uint64_t)a + (uint64_t)b),
                 (int64_t)((uint64_t)a * (uint64_t)b));
        break;
    case CLF_TYPE_FLOAT:
        REF_LOOP(float, a + b, a * b);
        break;
    case CLF_TYPE_DOUBLE:
        REF_LOOP(double, a + b, a * b);
        break;
    }
}

/* The first element where a and b differ (as values of t), or n. */
static size_t first_diff(clf_type t, const void *a, const void *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int same;
        switch (t) {
        case CLF_TYPE_FLOAT:
            same = ((const float *)a)[i] == ((const float *)b)[i];
            break;
        case CLF_TYPE_DOUBLE:
            same = ((const double *)a)[i] == ((const double *)b)[i];
            break;
        case CLF_TYPE_INT64:
            same = ((const uint64_t *)a)[i] == ((const uint64_t *)b)[i];
            break;
        default:
            same = ((const uint32_t *)a)[i] == ((const uint32_t *)b)[i];
        }
        if (!same)
            return i;
    }
    return n;
}

/* ---- reductions ------------------------------------------------------------------------ */

typedef struct red_case {
    clf_fleet *f;
    size_t nd, n;
    clf_type t;
    clf_reduce_op op;
    const char *ctx;
} red_case;

#define CASE_FMT "%s, %zu device(s), %zu x %s, %s"
#define CASE_ARGS(c) (c)->ctx, (c)->nd, (c)->n, TYPE_NAMES[(c)->t], OP_NAMES[(c)->op]

static void check_buffer(const red_case *c, clf_buffer *b, const void *want, void *tmp,
                         const char *what)
{
    size_t es = clf_type_size(c->t);
    ck_assert_ok(clf_buffer_read(b, 0, c->n * es, tmp));
    size_t at = first_diff(c->t, tmp, want, c->n);
    expect(at == c->n, CASE_FMT ": %s: element %zu differs", CASE_ARGS(c), what, at);
}

/* All-reduce, reduce to a device and reduce to the host of one case. */
static void run_reductions(const red_case *c, clf_buffer **b, void **in, void *ref, void *tmp,
                           const clf_collective_options *opts)
{
    size_t es = clf_type_size(c->t), bytes = c->n * es;
    for (size_t d = 0; d < c->nd; d++) {
        gen(c->t, c->op, c->n, (uint64_t)(d + 1) * 1000 + (uint64_t)c->t * 10 + c->op, in[d]);
        ck_assert_ok(clf_buffer_write(b[d], 0, bytes, in[d]));
    }
    memcpy(ref, in[0], bytes);
    for (size_t d = 1; d < c->nd; d++)
        ref_combine(c->t, c->op, ref, in[d], c->n);

    ck_assert_ok(clf_allreduce(b, c->nd, c->n, c->t, c->op, opts));
    for (size_t d = 0; d < c->nd; d++)
        check_buffer(c, b[d], ref, tmp, "all-reduce");

    /* Reduce to a root that moves with the case; the other buffers keep their input. */
    size_t root = (c->n + (size_t)c->op) % c->nd;
    for (size_t d = 0; d < c->nd; d++)
        ck_assert_ok(clf_buffer_write(b[d], 0, bytes, in[d]));
    ck_assert_ok(clf_reduce(b, c->nd, c->n, c->t, c->op, root, opts));
    check_buffer(c, b[root], ref, tmp, "reduce (root)");
    for (size_t d = 0; d < c->nd; d++)
        if (d != root)
            check_buffer(c, b[d], in[d], tmp, "reduce (another buffer kept its input)");

    ck_assert_ok(clf_buffer_write(b[root], 0, bytes, in[root]));
    memset(tmp, 0xa5, bytes);
    ck_assert_ok(clf_reduce_to_host(tmp, b, c->nd, c->n, c->t, c->op, opts));
    size_t at = first_diff(c->t, tmp, ref, c->n);
    expect(at == c->n, CASE_FMT ": reduce to host: element %zu differs", CASE_ARGS(c), at);
    for (size_t d = 0; d < c->nd; d++)
        check_buffer(c, b[d], in[d], tmp, "reduce to host (buffers kept their input)");
}

/* Loop index: context mode (bit 0) and count (the rest). */
START_TEST(reductions_every_op_type_and_size)
{
    int per_device = _i & 1;
    size_t n = SIZES[_i >> 1];
    red_case c = {fleets[per_device], 0, n, 0, 0,
                  per_device ? "context per device" : "shared context"};
    for (size_t nd = 1; nd <= 3; nd++) {
        c.nd = nd;
        for (size_t ti = 0; ti < sizeof TYPES / sizeof TYPES[0]; ti++) {
            c.t = TYPES[ti];
            size_t bytes = n * clf_type_size(c.t);
            clf_buffer *b[3];
            void *in[3], *ref = malloc(bytes), *tmp = malloc(bytes);
            ck_assert_ptr_nonnull(ref);
            ck_assert_ptr_nonnull(tmp);
            for (size_t d = 0; d < nd; d++) {
                ck_assert_ok(clf_buffer_create(&b[d], c.f, DEVS[nd][d], bytes, 0));
                ck_assert_ptr_nonnull(in[d] = malloc(bytes));
            }
            for (size_t oi = 0; oi < sizeof OPS / sizeof OPS[0]; oi++) {
                c.op = OPS[oi];
                run_reductions(&c, b, in, ref, tmp, NULL);
            }
            for (size_t d = 0; d < nd; d++) {
                clf_buffer_destroy(b[d]);
                free(in[d]);
            }
            free(ref);
            free(tmp);
        }
    }
}
END_TEST

/* Both all-reduce algorithms forced, every operation and type, 2 and 3 devices. Loop index:
 * context mode (bit 0), algorithm (bit 1: the host combine). */
START_TEST(reductions_forced_algorithms)
{
    static const size_t COUNTS[] = {7, 1000, 65536 + 3};
    int per_device = _i & 1;
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
    o.algorithm = _i & 2 ? CLF_ALLREDUCE_HOST : CLF_ALLREDUCE_RING;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "%s, %s forced", per_device ? "context per device" : "shared context",
             clf_allreduce_algorithm_name(o.algorithm));
    red_case c = {fleets[per_device], 0, 0, 0, 0, ctx};
    for (size_t k = 0; k < sizeof COUNTS / sizeof COUNTS[0]; k++)
        for (size_t nd = 2; nd <= 3; nd++)
            for (size_t ti = 0; ti < sizeof TYPES / sizeof TYPES[0]; ti++) {
                c.n = COUNTS[k];
                c.nd = nd;
                c.t = TYPES[ti];
                size_t bytes = c.n * clf_type_size(c.t);
                clf_buffer *b[3];
                void *in[3], *ref = malloc(bytes), *tmp = malloc(bytes);
                ck_assert_ptr_nonnull(ref);
                ck_assert_ptr_nonnull(tmp);
                for (size_t d = 0; d < nd; d++) {
                    ck_assert_ok(clf_buffer_create(&b[d], c.f, DEVS[nd][d], bytes, 0));
                    ck_assert_ptr_nonnull(in[d] = malloc(bytes));
                }
                clf_allreduce_algorithm got = CLF_ALLREDUCE_AUTO;
                ck_assert_ok(clf_allreduce_choice(&got, b, nd, c.n, c.t, CLF_REDUCE_SUM, &o, NULL,
                                                  NULL));
                ck_assert_int_eq(got, o.algorithm);
                for (size_t oi = 0; oi < sizeof OPS / sizeof OPS[0]; oi++) {
                    c.op = OPS[oi];
                    run_reductions(&c, b, in, ref, tmp, &o);
                }
                for (size_t d = 0; d < nd; d++) {
                    clf_buffer_destroy(b[d]);
                    free(in[d]);
                }
                free(ref);
                free(tmp);
            }
}
END_TEST

/* ---- the choice by measured times --------------------------------------------------- */

/* A fleet of FLEET4 made under the simulation rules given (NULL: none). */
static clf_fleet *fleet_simulated(const char *rules)
{
    if (rules)
        setenv("CLFLEET_SIMULATE", rules, 1);
    clf_fleet *f = test_fleet(FLEET4, 0);
    unsetenv("CLFLEET_SIMULATE");
    return f;
}

/* Two int32 buffers on devices 0 and 1 of f and their inputs; ref: the sum of the inputs. */
typedef struct pair {
    clf_buffer *b[2];
    uint32_t *in[2], *ref, *tmp;
    size_t n;
} pair;

static void pair_make(pair *q, clf_fleet *f, size_t n)
{
    memset(q, 0, sizeof *q);
    q->n = n;
    ck_assert_ptr_nonnull(q->ref = malloc(n * 4));
    ck_assert_ptr_nonnull(q->tmp = malloc(n * 4));
    for (size_t d = 0; d < 2; d++) {
        ck_assert_ok(clf_buffer_create(&q->b[d], f, d, n * 4, 0));
        ck_assert_ptr_nonnull(q->in[d] = malloc(n * 4));
        gen(CLF_TYPE_INT32, CLF_REDUCE_SUM, n, 77 + d, q->in[d]);
    }
    memcpy(q->ref, q->in[0], n * 4);
    ref_combine(CLF_TYPE_INT32, CLF_REDUCE_SUM, q->ref, q->in[1], n);
}

static void pair_free(pair *q)
{
    for (size_t d = 0; d < 2; d++) {
        clf_buffer_destroy(q->b[d]);
        free(q->in[d]);
    }
    free(q->ref);
    free(q->tmp);
}

/* One AUTO all-reduce of the pair from its inputs, checked against the C loop's sum; the
 * algorithm it ran (what clf_allreduce_choice() said just before: nothing runs between). */
static clf_allreduce_algorithm pair_allreduce(pair *q, const char *what, int k)
{
    clf_allreduce_algorithm a = CLF_ALLREDUCE_AUTO;
    ck_assert_ok(clf_allreduce_choice(&a, q->b, 2, q->n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL,
                                      NULL, NULL));
    for (size_t d = 0; d < 2; d++)
        ck_assert_ok(clf_buffer_write(q->b[d], 0, q->n * 4, q->in[d]));
    ck_assert_ok(clf_allreduce(q->b, 2, q->n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL));
    for (size_t d = 0; d < 2; d++) {
        ck_assert_ok(clf_buffer_read(q->b[d], 0, q->n * 4, q->tmp));
        size_t at = first_diff(CLF_TYPE_INT32, q->tmp, q->ref, q->n);
        expect(at == q->n, "%s: call %d (%s), device %zu: element %zu differs", what, k,
               clf_allreduce_algorithm_name(a), d, at);
    }
    return a;
}

/* The algorithms of calls into a string, "RRRRHHHH...", for the messages. */
static const char *runs_text(const clf_allreduce_algorithm *ran, int n, char *buf)
{
    for (int k = 0; k < n; k++)
        buf[k] = ran[k] == CLF_ALLREDUCE_HOST ? 'H' : 'R';
    buf[n] = '\0';
    return buf;
}

enum { CALLS = 14 };

/* On plain devices, repeated AUTO calls of one size class try both algorithms (where the
 * predictions are within the bound of each other, as on PoCL), every result exact. Which one
 * wins is the host's business: the times are close there, and this host is shared. */
START_TEST(allreduce_measured_choice_tries_both)
{
    char dir[256], seq[CALLS + 1];
    char *saved = test_own_cache(dir, sizeof dir);
    clf_fleet *f = fleet_simulated(NULL);
    pair q;
    pair_make(&q, f, 16384); /* 64 KiB */
    double r = 0, h = 0;
    clf_allreduce_algorithm a, ran[CALLS];
    ck_assert_ok(clf_allreduce_choice(&a, q.b, 2, q.n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL, &r,
                                      &h));
    ck_assert_msg(r > 0 && h > 0, "ring %g s, host %g s", r, h);
    int within = (h > r ? h / r : r / h) <= 4.0, nring = 0, nhost = 0;
    for (int k = 0; k < CALLS; k++) {
        ran[k] = pair_allreduce(&q, "plain devices", k);
        nring += ran[k] == CLF_ALLREDUCE_RING;
        nhost += ran[k] == CLF_ALLREDUCE_HOST;
    }
    runs_text(ran, CALLS, seq);
    fprintf(stderr, "allreduce_measured_choice_tries_both: predicted ring %.1f us, host %.1f us; "
                    "ran %s\n", r * 1e6, h * 1e6, seq);
    /* The first calls run the predicted one; with the other predicted within the bound, it is
     * tried once the first is measured (three samples after a cold one). */
    ck_assert_int_eq(ran[0], h < r ? CLF_ALLREDUCE_HOST : CLF_ALLREDUCE_RING);
    if (within)
        ck_assert_msg(nring > 0 && nhost > 0, "both predicted within 4x, yet ran only %s", seq);
    else
        ck_assert_msg(nring == 0 || nhost == 0, "one predicted over 4x the other, yet ran %s",
                      seq);
    pair_free(&q);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
}
END_TEST

/* Every command made dear (20 ms each, CLFLEET_SIMULATE): the ring's dependent steps of
 * copies and kernels (4 chunks a segment at 4 MiB: 12 commands in a row on each device) are
 * several times slower than the host combine's read and write per device, though the
 * prediction, which guesses 30 us a command, says the ring. The AUTO calls run the ring as
 * predicted, try the host combine, and settle on it; every result exact. */
START_TEST(allreduce_measured_choice_settles_on_the_host)
{
    char dir[256], seq[CALLS + 1];
    char *saved = test_own_cache(dir, sizeof dir);
    /* 20 ms, not 2: under ThreadSanitizer the host's combine loop of 1M ints took long
     * enough to lose to the ring at 2 and 5 ms a command (84 ms against 61); sanitizers and
     * a loaded host slow the host's loop, not the simulated latency. */
    clf_fleet *f = fleet_simulated("device=0,latency=20ms;device=1,latency=20ms");
    pair q;
    pair_make(&q, f, (size_t)1 << 20); /* 4 MiB */
    double r = 0, h = 0;
    clf_allreduce_algorithm a, ran[CALLS];
    ck_assert_ok(clf_allreduce_choice(&a, q.b, 2, q.n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL, &r,
                                      &h));
    ck_assert_msg(a == CLF_ALLREDUCE_RING && r < h && h <= 4 * r,
                  "the prediction alone must choose the ring, the host within 4x: ring %g s, "
                  "host %g s",
                  r, h);
    for (int k = 0; k < CALLS; k++)
        ran[k] = pair_allreduce(&q, "20 ms a command", k);
    runs_text(ran, CALLS, seq);
    fprintf(stderr, "allreduce_measured_choice_settles_on_the_host: ran %s\n", seq);
    ck_assert_msg(ran[0] == CLF_ALLREDUCE_RING, "the first call did not run the prediction: %s",
                  seq);
    /* Settled: the last calls all ran the host combine, and so will the next. */
    for (int k = CALLS - 4; k < CALLS; k++)
        ck_assert_msg(ran[k] == CLF_ALLREDUCE_HOST, "not settled on the host combine: %s", seq);
    ck_assert_ok(clf_allreduce_choice(&a, q.b, 2, q.n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL,
                                      NULL, NULL));
    ck_assert_int_eq(a, CLF_ALLREDUCE_HOST);
    /* Forced calls still run as forced (and are measured too). */
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
    o.algorithm = CLF_ALLREDUCE_RING;
    ck_assert_ok(clf_allreduce_choice(&a, q.b, 2, q.n, CLF_TYPE_INT32, CLF_REDUCE_SUM, &o, NULL,
                                      NULL));
    ck_assert_int_eq(a, CLF_ALLREDUCE_RING);
    pair_free(&q);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
}
END_TEST

static const char inc_src[] = "__kernel void inc(__global const uint *x, __global uint *y)\n"
                              "{ size_t i = get_global_id(0); y[i] = x[i] + 1u; }\n";

/* Host links capped at 200 MB/s (CLFLEET_SIMULATE), which launches teach the cost model:
 * the host combine of 4 MiB is then predicted far above the bound beside a ring whose copies
 * stay in the context, and it is never tried, however many AUTO calls run; the ring's
 * samples are kept in the model's file, no host combine's. */
START_TEST(allreduce_far_above_the_bound_is_never_tried)
{
    char dir[256];
    char *saved = test_own_cache(dir, sizeof dir);
    clf_fleet *f = fleet_simulated("device=0,h2d=200M,d2h=200M;device=1,h2d=200M,d2h=200M");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, inc_src, NULL));
    /* Launches over devices 0 and 1 moving 4 MiB each way each: the links are learned from
     * the second on (the first is dropped as cold). */
    enum { ITEMS = 2 << 20 };
    uint32_t *x = malloc(ITEMS * 4), *y = malloc(ITEMS * 4);
    ck_assert(x && y);
    for (uint32_t i = 0; i < ITEMS; i++)
        x[i] = i * 2654435761u;
    static const size_t devs[] = {0, 1};
    for (int k = 0; k < 3; k++) {
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "inc";
        d.global[0] = ITEMS;
        d.strategy = CLF_STRATEGY_STATIC;
        d.devices = devs;
        d.num_devices = 2;
        clf_arg a[] = {CLF_IN(x, ITEMS * 4, 4), CLF_OUT(y, ITEMS * 4, 4)};
        ck_assert_ok(clf_launch(f, p, &d, a, 2, NULL));
        for (uint32_t i = 0; i < ITEMS; i++)
            expect(y[i] == x[i] + 1u, "launch %d: item %u: %u", k, i, y[i]);
    }
    free(x);
    free(y);
    pair q;
    pair_make(&q, f, (size_t)1 << 20); /* 4 MiB */
    double r = 0, h = 0;
    clf_allreduce_algorithm a;
    ck_assert_ok(clf_allreduce_choice(&a, q.b, 2, q.n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL, &r,
                                      &h));
    ck_assert_msg(h > 8 * r, "the learned 200 MB/s links should put the host combine far above "
                             "the bound: ring %g s, host %g s",
                  r, h);
    for (int k = 0; k < 8; k++)
        ck_assert_msg(pair_allreduce(&q, "slow host links", k) == CLF_ALLREDUCE_RING,
                      "call %d ran the host combine", k);
    pair_free(&q);
    clf_program_destroy(p);
    clf_fleet_destroy(f); /* saves the model in dir */
    char *doc = NULL;
    ck_assert_ok(clf_perf_model_json(&doc, dir));
    ck_assert_msg(strstr(doc, "\"allreduce:ring:4MiB\""), "no ring samples kept: %s", doc);
    ck_assert_msg(!strstr(doc, "allreduce:host:"), "a host combine was measured: %s", doc);
    clf_free(doc);
    test_own_cache_done(dir, saved);
}
END_TEST

/* The model's file in dir, whole (NUL-terminated, malloc'd). */
static char *read_model_file(const char *dir)
{
    char path[300];
    snprintf(path, sizeof path, "%s/perf-v1.tsv", dir);
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "no model file %s", path);
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (cap - len < 4096) {
            char *b = realloc(buf, cap += 65536);
            ck_assert_ptr_nonnull(b);
            buf = b;
        }
        got = fread(buf + len, 1, cap - len - 1, fp);
        len += got;
    } while (got > 0);
    fclose(fp);
    buf[len] = '\0';
    return buf;
}

/* The launch-level samples of kernel's line in a model file's text (the first such line):
 * their count, and up to 8 of them into v; -1 when there is no line. */
static int model_samples(const char *doc, const char *kernel, double *v)
{
    size_t kl = strlen(kernel);
    for (const char *l = doc; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "v2\t", 3) != 0 || strncmp(l + 3, kernel, kl) != 0 || l[3 + kl] != '\t')
            continue;
        const char *d = strchr(l + 3 + kl + 1, '\t'); /* after the device key */
        ck_assert_ptr_nonnull(d);
        char *end;
        long n = strtol(d + 1, &end, 10);
        for (long i = 0; i < n && i < 8; i++)
            v[i] = strtod(end + 1, &end);
        return (int)n;
    }
    return -1;
}

/* The model's file with kernel's samples set to three of rate (bytes per second). */
static void model_set_samples(const char *dir, const char *doc, const char *kernel, double rate)
{
    char path[300];
    snprintf(path, sizeof path, "%s/perf-v1.tsv", dir);
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    size_t kl = strlen(kernel);
    for (const char *l = doc; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (strncmp(l, "v2\t", 3) == 0 && strncmp(l + 3, kernel, kl) == 0 && l[3 + kl] == '\t') {
            const char *d = strchr(l + 3 + kl + 1, '\t');
            ck_assert_ptr_nonnull(d);
            fprintf(fp, "%.*s\t3\t%.17g\t%.17g\t%.17g\t0\n", (int)(d - l), l, rate, rate, rate);
        } else {
            fwrite(l, 1, len, fp);
        }
        l += len;
    }
    ck_assert_int_eq(fclose(fp), 0);
}

static double median3(const double *v)
{
    double a = v[0], b = v[1], c = v[2];
    return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

/* The slower algorithm measured in a bad streak, kept in the model's file: both algorithms are
 * measured by forced calls in one fleet, then the file says the slower took 2x the faster's
 * median time (within the bound). A new fleet on that file runs the faster, re-tries the
 * slower after 16 calls (its first sample in the process, dropped as cold) and again after 16
 * more (kept: it replaces the oldest of the three, the window stays at three), every result
 * exact. Every command costs 10 ms more (CLFLEET_SIMULATE, in both fleets), so that each
 * algorithm's time is its commands' simulated latency, steady whatever the load of the
 * host: on plain PoCL devices the two ran within 10 % of each other and each swung 2x
 * between calls, which turned the 2x streak into a loss or a win at random. */
START_TEST(allreduce_the_slower_is_retried)
{
    enum { RUNS = 40 };
    char dir[256], seq[RUNS + 1];
    char *saved = test_own_cache(dir, sizeof dir);
    static const char rules[] = "device=0,latency=10ms;device=1,latency=10ms";
    clf_fleet *f = fleet_simulated(rules);
    pair q;
    pair_make(&q, f, 16384); /* 64 KiB */
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
    for (int k = 0; k < 8; k++) { /* four of each: a cold sample, then three */
        o.algorithm = k < 4 ? CLF_ALLREDUCE_RING : CLF_ALLREDUCE_HOST;
        ck_assert_ok(clf_allreduce(q.b, 2, q.n, CLF_TYPE_INT32, CLF_REDUCE_SUM, &o));
    }
    pair_free(&q);
    clf_fleet_destroy(f); /* saves the model in dir */
    char *doc = read_model_file(dir);
    double rv[8], hv[8];
    ck_assert_int_eq(model_samples(doc, "allreduce:ring:64KiB", rv), 3);
    ck_assert_int_eq(model_samples(doc, "allreduce:host:64KiB", hv), 3);
    double rr = median3(rv), hr = median3(hv); /* bytes per second */
    const char *slow = rr < hr ? "allreduce:ring:64KiB" : "allreduce:host:64KiB";
    clf_allreduce_algorithm fast = rr < hr ? CLF_ALLREDUCE_HOST : CLF_ALLREDUCE_RING;
    double bad = (rr < hr ? hr : rr) / 2;
    model_set_samples(dir, doc, slow, bad);
    free(doc);

    f = fleet_simulated(rules);
    pair_make(&q, f, 16384);
    clf_allreduce_algorithm ran[RUNS];
    for (int k = 0; k < RUNS; k++)
        ran[k] = pair_allreduce(&q, "a re-try", k);
    pair_free(&q);
    clf_fleet_destroy(f);
    for (int k = 0; k < RUNS; k++)
        seq[k] = ran[k] == CLF_ALLREDUCE_HOST ? 'H' : 'R';
    seq[RUNS] = '\0';
    fprintf(stderr, "allreduce_the_slower_is_retried: measured ring %.1f ms, host %.1f ms; "
                    "ran %s\n", 65536 / rr * 1e3, 65536 / hr * 1e3, seq);
    for (int k = 0; k < RUNS; k++)
        ck_assert_msg((ran[k] != fast) == (k == 16 || k == 33),
                      "call %d: the slower is re-tried at calls 16 and 33 only: %s", k, seq);
    doc = read_model_file(dir);
    double sv[8];
    ck_assert_int_eq(model_samples(doc, slow, sv), 3);
    ck_assert_msg(sv[0] == bad && sv[1] == bad && sv[2] != bad,
                  "the kept re-try replaces the oldest: %g %g %g (bad %g)", sv[0], sv[1], sv[2],
                  bad);
    free(doc);
    test_own_cache_done(dir, saved);
}
END_TEST

/* The choice: options force it, else $CLFLEET_ALLREDUCE, else (nothing measured yet) the least
 * predicted time; bad values of either are refused, by the choice and by the all-reduce. */
START_TEST(allreduce_choice_and_overrides)
{
    /* A fleet that has measured no all-reduce (the suite's fleets have, and the shared cache
     * keeps what earlier runs measured): its AUTO choice is the prediction's. */
    char dir[256];
    char *saved = test_own_cache(dir, sizeof dir);
    clf_fleet *f = test_fleet(FLEET4, 1);
    clf_buffer *b[3];
    for (size_t d = 0; d < 3; d++)
        ck_assert_ok(clf_buffer_create(&b[d], f, DEVS[3][d], 1 << 20, 0));
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
    clf_allreduce_algorithm a = CLF_ALLREDUCE_AUTO;
    double r = 0, h = 0;
    unsetenv("CLFLEET_ALLREDUCE");
    for (size_t count = 1; count <= (1u << 18); count *= 64) {
        ck_assert_ok(clf_allreduce_choice(&a, b, 3, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o, &r,
                                          &h));
        ck_assert_msg(r > 0 && h > 0, "count %zu: ring %g s, host %g s", count, r, h);
        ck_assert_int_eq(a, h < r ? CLF_ALLREDUCE_HOST : CLF_ALLREDUCE_RING);
        ck_assert_ok(clf_allreduce_choice(&a, b, 3, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL,
                                          NULL, NULL));
    }
    /* A single buffer is its own result: nothing moves, whatever is forced. */
    o.algorithm = CLF_ALLREDUCE_HOST;
    ck_assert_ok(clf_allreduce_choice(&a, b, 1, 16, CLF_TYPE_INT32, CLF_REDUCE_SUM, &o, &r, &h));
    ck_assert_int_eq(a, CLF_ALLREDUCE_RING);

    setenv("CLFLEET_ALLREDUCE", " Host ", 1);
    ck_assert_ok(clf_allreduce_choice(&a, b, 3, 1u << 18, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL,
                                      NULL, NULL));
    ck_assert_int_eq(a, CLF_ALLREDUCE_HOST);
    o.algorithm = CLF_ALLREDUCE_RING; /* the options win over the environment */
    ck_assert_ok(clf_allreduce_choice(&a, b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o, NULL,
                                      NULL));
    ck_assert_int_eq(a, CLF_ALLREDUCE_RING);
    setenv("CLFLEET_ALLREDUCE", "ring", 1);
    ck_assert_ok(clf_allreduce_choice(&a, b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL, NULL,
                                      NULL));
    ck_assert_int_eq(a, CLF_ALLREDUCE_RING);
    setenv("CLFLEET_ALLREDUCE", "tree", 1);
    ck_assert_status(clf_allreduce_choice(&a, b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL,
                                          NULL, NULL),
                     CLF_ERROR_PARSE);
    ck_assert_msg(strstr(clf_last_error(), "CLFLEET_ALLREDUCE"), "%s", clf_last_error());
    ck_assert_status(clf_allreduce(b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_PARSE);
    unsetenv("CLFLEET_ALLREDUCE");

    o.algorithm = (clf_allreduce_algorithm)7;
    ck_assert_status(clf_allreduce(b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_allreduce_choice(&a, b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o, NULL,
                                          NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    /* A version 1 structure has no algorithm: whatever follows it is not read. */
    o.version = 1;
    ck_assert_ok(clf_allreduce(b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o));
    ck_assert_status(clf_allreduce_choice(NULL, b, 3, 16, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL,
                                          NULL, NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_allreduce_choice(&a, b, 3, 0, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL, NULL,
                                          NULL),
                     CLF_ERROR_ZERO_SIZE);
    ck_assert_str_eq(clf_allreduce_algorithm_name(CLF_ALLREDUCE_AUTO), "auto");
    ck_assert_str_eq(clf_allreduce_algorithm_name(CLF_ALLREDUCE_RING), "ring");
    ck_assert_str_eq(clf_allreduce_algorithm_name(CLF_ALLREDUCE_HOST), "host");
    ck_assert_str_eq(clf_allreduce_algorithm_name((clf_allreduce_algorithm)3), "unknown");
    for (size_t d = 0; d < 3; d++)
        clf_buffer_destroy(b[d]);
    clf_fleet_destroy(f);
    test_own_cache_done(dir, saved);
}
END_TEST

/* Chunk sizes: tiny (bounded: at most 64 chunks a segment), odd, larger than the data. */
START_TEST(reductions_chunk_sizes)
{
    static const size_t CHUNKS[] = {1, 4, 1000, 65536 + 12, 64u << 20};
    red_case c = {fleets[_i], 3, 100003, CLF_TYPE_FLOAT, CLF_REDUCE_SUM,
                  _i ? "context per device" : "shared context"};
    clf_buffer *b[3];
    void *in[3], *ref = malloc(c.n * 4), *tmp = malloc(c.n * 4);
    for (size_t d = 0; d < 3; d++) {
        ck_assert_ok(clf_buffer_create(&b[d], c.f, DEVS[3][d], c.n * 4, 0));
        in[d] = malloc(c.n * 4);
    }
    for (size_t k = 0; k < sizeof CHUNKS / sizeof CHUNKS[0]; k++) {
        clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
        o.chunk_bytes = CHUNKS[k];
        run_reductions(&c, b, in, ref, tmp, &o);
    }
    for (size_t d = 0; d < 3; d++) {
        clf_buffer_destroy(b[d]);
        free(in[d]);
    }
    free(ref);
    free(tmp);
}
END_TEST

/* The root devices, a basic one among them (it runs commands inside clEnqueue*). */
START_TEST(reductions_with_a_basic_device)
{
    clf_fleet *f = test_fleet(ROOTS, _i);
    ck_assert_uint_ge(clf_fleet_device_count(f), 3);
    red_case c = {
        f, 3, BIG, CLF_TYPE_DOUBLE, CLF_REDUCE_MAX, _i ? "roots, per device" : "roots, shared"};
    clf_buffer *b[3];
    void *in[3], *ref = malloc(c.n * 8), *tmp = malloc(c.n * 8);
    for (size_t d = 0; d < 3; d++) {
        ck_assert_ok(clf_buffer_create(&b[d], f, 2 - d, c.n * 8, 0));
        in[d] = malloc(c.n * 8);
    }
    /* Each algorithm forced, and the one chosen: the basic device makes the collective wait
     * on the host for each command, whichever runs. */
    for (int alg = CLF_ALLREDUCE_AUTO; alg <= CLF_ALLREDUCE_HOST; alg++) {
        clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
        o.algorithm = (clf_allreduce_algorithm)alg;
        c.n = BIG;
        c.op = CLF_REDUCE_MAX;
        run_reductions(&c, b, in, ref, tmp, &o);
        c.n = 7;
        c.op = CLF_REDUCE_SUM;
        run_reductions(&c, b, in, ref, tmp, &o);
    }
    for (size_t d = 0; d < 3; d++) {
        clf_buffer_destroy(b[d]);
        free(in[d]);
    }
    free(ref);
    free(tmp);
    clf_fleet_destroy(f);
}
END_TEST

/* Two threads all-reduce different buffers on the same devices at once. */
typedef struct conc_arg {
    clf_fleet *f;
    int which;
    int ok;
} conc_arg;

static void *concurrent_main(void *p)
{
    conc_arg *a = p;
    const size_t n = 300007;
    clf_buffer *b[3];
    int32_t *h = malloc(n * 4), *back = malloc(n * 4);
    a->ok = h && back;
    for (size_t d = 0; d < 3 && a->ok; d++) {
        for (size_t i = 0; i < n; i++)
            h[i] = (int32_t)(i * (d + 1) + (size_t)a->which);
        a->ok = clf_buffer_create(&b[d], a->f, DEVS[3][d], n * 4, 0) == CLF_SUCCESS &&
                clf_buffer_write(b[d], 0, n * 4, h) == CLF_SUCCESS;
    }
    for (int rep = 0; rep < 5 && a->ok; rep++) {
        a->ok = clf_allreduce(b, 3, n, CLF_TYPE_INT32, CLF_REDUCE_SUM, NULL) == CLF_SUCCESS;
        /* After rep + 1 rounds every element is 3^rep x (6i + 3 which). */
        int64_t mul = 1;
        for (int k = 0; k < rep; k++)
            mul *= 3;
        for (size_t d = 0; d < 3 && a->ok; d++) {
            a->ok = clf_buffer_read(b[d], 0, n * 4, back) == CLF_SUCCESS;
            for (size_t i = 0; i < n && a->ok; i++)
                a->ok = back[i] == (int32_t)(uint32_t)(uint64_t)(mul * (int64_t)(6 * i + 3 *
                                                                            (size_t)a->which));
        }
    }
    for (size_t d = 0; d < 3; d++)
        clf_buffer_destroy(b[d]);
    free(h);
    free(back);
    return NULL;
}

START_TEST(concurrent_allreduces)
{
    pthread_t t[2];
    conc_arg a[2] = {{fleets[_i], 0, 0}, {fleets[_i], 1, 0}};
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, concurrent_main, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    ck_assert_msg(a[0].ok && a[1].ok, "concurrent all-reduce: %s", clf_last_error());
}
END_TEST

/* ---- data movement --------------------------------------------------------------------- */

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 7;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)xorshift64(&s);
}

/* Broadcast and all-gather; the bytes after the data are never touched. */
START_TEST(broadcast_and_allgather)
{
    int per_device = _i & 1;
    size_t n = SIZES[_i >> 1];
    clf_fleet *f = fleets[per_device];
    static const size_t ES[] = {1, 3, 8};
    for (size_t nd = 1; nd <= 3; nd++)
        for (size_t e = 0; e < 3; e++) {
            size_t es = ES[e], bytes = n * es, pad = 16;
            clf_buffer *b[3];
            unsigned char *init[3], *back = malloc(bytes + pad), *whole = malloc(bytes);
            fill_pattern(whole, bytes, 99);
            for (size_t d = 0; d < nd; d++) {
                ck_assert_ok(clf_buffer_create(&b[d], f, DEVS[nd][d], bytes + pad, 0));
                init[d] = malloc(bytes + pad);
                fill_pattern(init[d], bytes + pad, (unsigned)d + 1);
                ck_assert_ok(clf_buffer_write(b[d], 0, bytes + pad, init[d]));
            }
            size_t root = n % nd;
            ck_assert_ok(clf_broadcast(b, nd, bytes, root, NULL));
            for (size_t d = 0; d < nd; d++) {
                ck_assert_ok(clf_buffer_read(b[d], 0, bytes + pad, back));
                expect(!memcmp(back, init[root], bytes), "broadcast %zu x %zu to device %zu of %zu",
                       n, es, d, nd);
                expect(!memcmp(back + bytes, init[d] + bytes, pad), "broadcast wrote past the end");
            }
            /* All-gather: position d holds block d of the whole array, noise elsewhere. */
            for (size_t d = 0; d < nd; d++) {
                size_t first, len;
                ck_assert_ok(clf_distribution_part(&first, &len, n, nd, d, CLF_DIST_BLOCK, 0));
                memcpy(init[d] + first * es, whole + first * es, len * es);
                ck_assert_ok(clf_buffer_write(b[d], 0, bytes + pad, init[d]));
            }
            ck_assert_ok(clf_allgather(b, nd, n, es, NULL));
            for (size_t d = 0; d < nd; d++) {
                ck_assert_ok(clf_buffer_read(b[d], 0, bytes + pad, back));
                expect(!memcmp(back, whole, bytes), "all-gather %zu x %zu on device %zu of %zu",
                       n, es, d, nd);
                expect(!memcmp(back + bytes, init[d] + bytes, pad),
                       "all-gather wrote past the end");
            }
            for (size_t d = 0; d < nd; d++) {
                clf_buffer_destroy(b[d]);
                free(init[d]);
            }
            free(back);
            free(whole);
        }
}
END_TEST

/* Scatter then gather, block and block-cyclic; each part is checked against a reference. */
START_TEST(scatter_and_gather)
{
    int per_device = _i & 1;
    size_t n = SIZES[_i >> 1];
    clf_fleet *f = fleets[per_device];
    static const struct {
        clf_distribution dist;
        size_t block;
    } DISTS[] = {{CLF_DIST_BLOCK, 0},    {CLF_DIST_CYCLIC, 0},       {CLF_DIST_CYCLIC, 3},
                 {CLF_DIST_CYCLIC, 1000}, {CLF_DIST_CYCLIC, SIZE_MAX}};
    const size_t es = 4;
    unsigned char *whole = malloc(n * es), *back = malloc(n * es), *part = malloc(n * es);
    fill_pattern(whole, n * es, 5);
    for (size_t nd = 1; nd <= 3; nd++)
        for (size_t k = 0; k < sizeof DISTS / sizeof DISTS[0]; k++) {
            clf_buffer *b[3];
            for (size_t d = 0; d < nd; d++)
                ck_assert_ok(clf_buffer_create(&b[d], f, DEVS[nd][d], n * es, 0));
            ck_assert_ok(clf_scatter(b, nd, whole, n, es, DISTS[k].dist, DISTS[k].block));
            for (size_t d = 0; d < nd; d++) {
                size_t first, len, at = 0, blk = DISTS[k].block ? DISTS[k].block : 1;
                ck_assert_ok(
                    clf_distribution_part(&first, &len, n, nd, d, DISTS[k].dist, DISTS[k].block));
                if (!len)
                    continue;
                ck_assert_ok(clf_buffer_read(b[d], 0, len * es, part));
                /* The part's elements in order: one block, or every nd-th block. */
                for (size_t i = 0; i < n; i++) {
                    int mine = DISTS[k].dist == CLF_DIST_BLOCK ? i >= first && i < first + len
                                                               : (i / blk) % nd == d;
                    if (!mine)
                        continue;
                    expect(!memcmp(part + at * es, whole + i * es, es),
                           "scatter: element %zu on position %zu of %zu (dist %d/%zu)", i, d, nd,
                           (int)DISTS[k].dist, DISTS[k].block);
                    at++;
                }
                expect(at == len, "scatter: part %zu has %zu elements, counted %zu", d, len, at);
            }
            memset(back, 0, n * es);
            ck_assert_ok(clf_gather(back, b, nd, n, es, DISTS[k].dist, DISTS[k].block));
            expect(!memcmp(back, whole, n * es), "gather %zu elements from %zu (dist %d/%zu)", n,
                   nd, (int)DISTS[k].dist, DISTS[k].block);
            for (size_t d = 0; d < nd; d++)
                clf_buffer_destroy(b[d]);
        }
    free(whole);
    free(back);
    free(part);
}
END_TEST

/* ---- pure logic ------------------------------------------------------------------------ */

/* Every element in exactly one part, parts in the documented place and order. */
START_TEST(distribution_parts)
{
    for (size_t n = 0; n <= 200; n++)
        for (size_t np = 1; np <= 7; np++)
            for (size_t blk = 0; blk <= 5; blk++)
                for (int dist = 0; dist < 2; dist++) {
                    size_t total = 0, b = blk ? blk : 1;
                    for (size_t p = 0; p < np; p++) {
                        size_t first, len, count = 0, lowest = n;
                        ck_assert_ok(clf_distribution_part(&first, &len, n, np, p,
                                                           (clf_distribution)dist, blk));
                        for (size_t i = 0; i < n; i++) {
                            int mine = dist == CLF_DIST_BLOCK ? 0 : (i / b) % np == p;
                            if (dist == CLF_DIST_BLOCK) {
                                /* Balanced: sizes differ by one at most, earlier parts larger. */
                                size_t q = n / np, r = n % np, f0 = p * q + (p < r ? p : r);
                                mine = i >= f0 && i < f0 + q + (p < r);
                            }
                            if (mine) {
                                count++;
                                lowest = i < lowest ? i : lowest;
                            }
                        }
                        expect(len == count, "n %zu parts %zu part %zu dist %d block %zu: len %zu, "
                               "want %zu", n, np, p, dist, blk, len, count);
                        expect(first == lowest, "n %zu parts %zu part %zu dist %d: first %zu, "
                               "want %zu", n, np, p, dist, first, lowest);
                        total += len;
                    }
                    expect(total == n, "parts cover %zu of %zu", total, n);
                }
    size_t first, len;
    ck_assert_status(clf_distribution_part(&first, &len, 10, 0, 0, CLF_DIST_BLOCK, 0),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_distribution_part(&first, &len, 10, 2, 2, CLF_DIST_BLOCK, 0),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_distribution_part(&first, &len, 10, 2, 0, (clf_distribution)7, 0),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_distribution_part(NULL, &len, 10, 2, 0, CLF_DIST_BLOCK, 0),
                     CLF_ERROR_NULL_POINTER);
    /* Huge counts: no overflow in the arithmetic. */
    ck_assert_ok(clf_distribution_part(&first, &len, SIZE_MAX, 3, 2, CLF_DIST_CYCLIC, 7));
    ck_assert_uint_eq(first, 14);
    ck_assert_ok(clf_distribution_part(&first, &len, SIZE_MAX, 3, 2, CLF_DIST_BLOCK, 0));
    ck_assert_uint_eq(first + len, SIZE_MAX);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------------- */

START_TEST(bad_input)
{
    clf_fleet *f = fleets[0], *g = fleets[1];
    clf_buffer *b[3], *small, *other, *same;
    for (size_t d = 0; d < 3; d++)
        ck_assert_ok(clf_buffer_create(&b[d], f, DEVS[3][d], 4096, 0));
    ck_assert_ok(clf_buffer_create(&small, f, 1, 8, 0));
    ck_assert_ok(clf_buffer_create(&other, g, 1, 4096, 0));
    ck_assert_ok(clf_buffer_create(&same, f, DEVS[3][0], 4096, 0));
    char host[4096];
    memset(host, 0, sizeof host);

    ck_assert_status(clf_allreduce(NULL, 3, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_allreduce(b, 0, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_allreduce(b, 3, 0, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_allreduce(b, 3, SIZE_MAX / 2, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_allreduce(b, 3, 2000, CLF_TYPE_DOUBLE, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_allreduce(b, 3, 10, (clf_type)0, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_allreduce(b, 3, 10, (clf_type)6, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_allreduce(b, 3, 10, CLF_TYPE_FLOAT, (clf_reduce_op)0, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_allreduce(b, 3, 10, CLF_TYPE_FLOAT, (clf_reduce_op)5, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    clf_buffer *with_null[3] = {b[0], NULL, b[2]};
    ck_assert_status(clf_allreduce(with_null, 3, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_NULL_POINTER);
    clf_buffer *dup[3] = {b[0], b[1], same};
    ck_assert_status(clf_allreduce(dup, 3, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "one buffer per device"), "%s", clf_last_error());
    clf_buffer *twice[2] = {b[0], b[0]};
    ck_assert_status(clf_allreduce(twice, 2, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    clf_buffer *mixed[2] = {b[0], other};
    ck_assert_status(clf_allreduce(mixed, 2, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    clf_buffer *tiny[2] = {b[0], small};
    ck_assert_status(clf_allreduce(tiny, 2, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
                     CLF_ERROR_OUT_OF_RANGE);
    clf_collective_options o = CLF_COLLECTIVE_OPTIONS_INIT;
    o.version = 99;
    ck_assert_status(clf_allreduce(b, 3, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &o),
                     CLF_ERROR_INVALID_ARGUMENT);
    clf_buffer *many[CLF_MAX_LAUNCH_DEVICES + 1];
    for (size_t i = 0; i <= CLF_MAX_LAUNCH_DEVICES; i++)
        many[i] = b[0];
    ck_assert_status(
        clf_allreduce(many, CLF_MAX_LAUNCH_DEVICES + 1, 10, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL),
        CLF_ERROR_INVALID_ARGUMENT);

    ck_assert_status(clf_reduce(b, 3, 10, CLF_TYPE_INT32, CLF_REDUCE_MAX, 3, NULL),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_reduce(dup, 3, 10, CLF_TYPE_INT32, CLF_REDUCE_MAX, 0, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_reduce(b, 3, 0, CLF_TYPE_INT32, CLF_REDUCE_MAX, 0, NULL),
                     CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_reduce_to_host(NULL, b, 3, 10, CLF_TYPE_INT32, CLF_REDUCE_MAX, NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_reduce_to_host(host, tiny, 2, 10, CLF_TYPE_INT32, CLF_REDUCE_MAX, NULL),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_broadcast(b, 3, 4097, 0, NULL), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_broadcast(b, 3, 16, 3, NULL), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_broadcast(b, 3, 0, 0, NULL), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_broadcast(NULL, 3, 16, 0, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_allgather(b, 3, 10, 0, NULL), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_allgather(b, 3, SIZE_MAX, 2, NULL), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_allgather(tiny, 2, 10, 4, NULL), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_scatter(b, 3, NULL, 10, 4, CLF_DIST_BLOCK, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_scatter(b, 3, host, 10, 4, (clf_distribution)9, 0),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_scatter(b, 3, host, 0, 4, CLF_DIST_BLOCK, 0), CLF_ERROR_ZERO_SIZE);
    /* 3 x 1024 elements of 4 bytes: each part is 4096 bytes and fits; one more does not. */
    ck_assert_ok(clf_scatter(b, 3, host, 3072, 1, CLF_DIST_CYCLIC, 5));
    ck_assert_status(clf_scatter(b, 3, host, 3 * 1024 + 1, 4, CLF_DIST_BLOCK, 0),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_gather(NULL, b, 3, 10, 4, CLF_DIST_BLOCK, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_gather(host, dup, 3, 10, 4, CLF_DIST_BLOCK, 0),
                     CLF_ERROR_INVALID_ARGUMENT);
    for (size_t d = 0; d < 3; d++)
        clf_buffer_destroy(b[d]);
    clf_buffer_destroy(small);
    clf_buffer_destroy(other);
    clf_buffer_destroy(same);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("collective");
    TCase *tc = tcase_create("collective");
    tcase_set_timeout(tc, 600);
    tcase_add_unchecked_fixture(tc, fleets_up, fleets_down);
    tcase_add_loop_test(tc, reductions_every_op_type_and_size, 0, 2 * (int)NSIZES);
    tcase_add_loop_test(tc, reductions_forced_algorithms, 0, 4);
    tcase_add_test(tc, allreduce_choice_and_overrides);
    tcase_add_test(tc, allreduce_measured_choice_tries_both);
    tcase_add_test(tc, allreduce_measured_choice_settles_on_the_host);
    tcase_add_test(tc, allreduce_far_above_the_bound_is_never_tried);
    tcase_add_test(tc, allreduce_the_slower_is_retried);
    tcase_add_loop_test(tc, reductions_chunk_sizes, 0, 2);
    tcase_add_loop_test(tc, concurrent_allreduces, 0, 2);
    tcase_add_loop_test(tc, broadcast_and_allgather, 0, 2 * (int)NSIZES);
    tcase_add_loop_test(tc, scatter_and_gather, 0, 2 * (int)NSIZES);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    TCase *tb = tcase_create("basic device");
    tcase_set_timeout(tb, 300);
    tcase_add_loop_test(tb, reductions_with_a_basic_device, 0, 2);
    suite_add_tcase(s, tb);
    TCase *tp = tcase_create("pure");
    tcase_add_test(tp, distribution_parts);
    suite_add_tcase(s, tp);
    return test_run(s, FLEET4, 3);
}

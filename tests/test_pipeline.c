/*
 * Pipelines and task queues against plain C references.
 *
 * Pipelines: three stages on three devices over 50 batches give what the stages give one
 * after another on the host, in one shared context and with one context per device;
 * results arrive in order; stages on PoCL's basic device (first, middle, last); stages that
 * change the batch size, stages sharing a device,
 * broadcast and local arguments, the serial baseline, the report, bad input.
 *
 * Task queues: 200 tasks of random lengths each run exactly once with the right result;
 * tasks all dealt to one device are stolen by the others; later submissions run in a
 * later run; bad input.
 */
#include "common.h"

#include <stdint.h>

static const char SRC[] =
    TEST_CL_LOWBIAS32
    /* Busy work the compiler cannot fold: iters steps of a linear congruential generator. */
    "uint lcg(uint s, int iters)\n"
    "{\n"
    "    for (int k = 0; k < iters; k++) s = s * 1664525u + 1013904223u;\n"
    "    return s;\n"
    "}\n"
    "__kernel void s_affine(__global const uint *in, __global uint *out, uint mul, uint add)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * mul + add;\n"
    "}\n"
    "__kernel void s_hash(__global const uint *in, __global uint *out, int iters)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = lowbias32(in[i] ^ lcg(in[i], iters));\n"
    "}\n"
    /* Pairs summed: the output is half the input. */
    "__kernel void s_pairs(__global const uint *in, __global uint *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[2 * i] + in[2 * i + 1];\n"
    "}\n"
    /* A broadcast table and local memory: out[i] = in[i] ^ table[i % 16]. */
    "__kernel void s_table(__global const uint *in, __global uint *out, __global const uint *t,\n"
    "                      __local uint *tmp)\n"
    "{\n"
    "    size_t i = get_global_id(0), l = get_local_id(0);\n"
    "    tmp[l] = in[i] ^ t[i % 16];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    out[i] = tmp[l];\n"
    "}\n"
    "__kernel void task(__global uint *out, uint id, int iters)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = lowbias32((uint)i * 2654435761u ^ lcg(id, iters));\n"
    "}\n"
    "__kernel void task_inout(__global uint *io, __global const uint *in, uint k,\n"
    "                         __local uint *tmp)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    tmp[get_local_id(0)] = in[i];\n"
    "    io[i] += tmp[get_local_id(0)] * k;\n"
    "}\n";

static uint32_t lcg(uint32_t s, int iters)
{
    for (int k = 0; k < iters; k++)
        s = s * 1664525u + 1013904223u;
    return s;
}

/* FLEET4 in one context and with one per device; then every PoCL device (with the basic
 * device, which runs commands inside whichever thread makes them ready), likewise. */
static clf_fleet *fleets[4];
static clf_program *progs[4];

static void setup(void)
{
    for (int i = 0; i < 4; i++) {
        fleets[i] = test_fleet(i < 2 ? FLEET4 : TEST_CPUS, i & 1);
        ck_assert_uint_ge(clf_fleet_device_count(fleets[i]), 3);
        ck_assert_ok(clf_program_build_source(&progs[i], fleets[i], SRC, NULL));
    }
}

static void teardown(void)
{
    for (int i = 0; i < 4; i++) {
        clf_program_destroy(progs[i]);
        clf_fleet_destroy(fleets[i]);
    }
}

/* ---- pipelines ----------------------------------------------------------------------------- */

typedef struct order_check {
    size_t next;
    const uint32_t *out;
    size_t bytes;
    int bad;
} order_check;

static void on_result(void *user, size_t batch, const void *out, size_t bytes)
{
    order_check *c = user;
    if (batch != c->next || bytes != c->bytes || out != (const void *)(c->out + batch * bytes / 4))
        c->bad = 1;
    c->next++;
}

/* Three stages: affine on device a, hash on device b, affine on device c. */
static void three_stages(int ctx, const size_t devs[3], int serial)
{
    const size_t n = 4099, nb = 50;
    const uint32_t mul1 = 3, add1 = 11, mul3 = 5, add3 = 7;
    const int iters = 200;
    clf_arg a1[] = {CLF_SCALAR(&mul1), CLF_SCALAR(&add1)};
    clf_arg a2[] = {CLF_SCALAR(&iters)};
    clf_arg a3[] = {CLF_SCALAR(&mul3), CLF_SCALAR(&add3)};
    clf_stage_desc st[3] = {CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT};
    const char *names[3] = {"s_affine", "s_hash", "s_affine"};
    const clf_arg *args[3] = {a1, a2, a3};
    const size_t nargs[3] = {2, 1, 2};
    for (int s = 0; s < 3; s++) {
        st[s].device = devs[s];
        st[s].program = progs[ctx];
        st[s].kernel = names[s];
        st[s].in_bytes = st[s].out_bytes = n * 4;
        st[s].global[0] = n;
        st[s].args = args[s];
        st[s].nargs = nargs[s];
    }
    uint32_t *in = malloc(nb * n * 4), *out = calloc(nb * n, 4);
    for (size_t i = 0; i < nb * n; i++)
        in[i] = (uint32_t)(i * 2246822519u + 1);
    order_check oc = {0, out, n * 4, 0};
    clf_pipeline_options o = CLF_PIPELINE_OPTIONS_INIT;
    o.serial = serial;
    o.on_result = on_result;
    o.user = &oc;
    clf_pipeline *pl;
    ck_assert_ok(clf_pipeline_create(&pl, fleets[ctx], st, 3, &o));
    clf_pipeline_report rep;
    ck_assert_ok(clf_pipeline_run(pl, in, out, nb, &rep));
    for (size_t i = 0; i < nb * n; i++) {
        uint32_t x = in[i] * mul1 + add1, want = lowbias32(x ^ lcg(x, iters)) * mul3 + add3;
        if (out[i] != want)
            ck_abort_msg("batch %zu element %zu: %u, expected %u", i / n, i % n, out[i], want);
    }
    ck_assert_msg(!oc.bad && oc.next == nb, "results out of order (%zu delivered)", oc.next);
    ck_assert_uint_eq(rep.num_stages, 3);
    ck_assert_uint_eq(rep.batches, nb);
    ck_assert(rep.wall_s > 0 && rep.batches_per_s > 0);
    ck_assert_uint_lt(rep.bottleneck, 3);
    for (int s = 0; s < 3; s++) {
        ck_assert_uint_eq(rep.stage[s].device, devs[s]);
        ck_assert_uint_eq(rep.stage[s].batches, nb);
        ck_assert(rep.stage[s].busy_s > 0 && rep.stage[s].busy_s <= rep.wall_s * 1.01);
        ck_assert(rep.stage[s].items_per_s > 0 && rep.stage[s].batches_per_s > 0);
        ck_assert_uint_eq(rep.stage[s].bytes_in, nb * n * 4);
    }
    ck_assert(rep.efficiency > 0 && rep.efficiency <= 1.01);
    /* A second run of the same pipeline. */
    memset(out, 0, nb * n * 4);
    oc.next = 0;
    ck_assert_ok(clf_pipeline_run(pl, in, out, 3, NULL));
    ck_assert_uint_eq(oc.next, 3);
    uint32_t x = in[3 * n - 1] * mul1 + add1;
    ck_assert_uint_eq(out[3 * n - 1], lowbias32(x ^ lcg(x, iters)) * mul3 + add3);
    clf_pipeline_destroy(pl);
    free(in);
    free(out);
}

START_TEST(three_stages_fifty_batches)
{
    static const size_t devs[3] = {2, 0, 3};
    three_stages(_i, devs, 0);
}
END_TEST

/* PoCL's basic device as the first, middle and last stage (it hung as a middle stage). */
START_TEST(stages_on_the_basic_device)
{
    int ctx = 2 + _i;
    size_t basic, other[2];
    if (!test_find_basic(fleets[ctx], &basic, other, "stages_on_the_basic_device"))
        return;
    const size_t orders[3][3] = {{basic, other[0], other[1]},
                                 {other[0], basic, other[1]},
                                 {other[0], other[1], basic}};
    test_watchdog(600);
    for (int k = 0; k < 3; k++) {
        three_stages(ctx, orders[k], 0);
        three_stages(ctx, orders[k], 1);
    }
}
END_TEST

START_TEST(serial_baseline_and_shared_device)
{
    static const size_t devs[3] = {1, 1, 2}; /* two stages on one device */
    three_stages(_i, devs, 1);
    three_stages(_i, devs, 0);
}
END_TEST

/* Sizes that change along the pipeline; a broadcast table and local memory; one batch. */
START_TEST(changing_sizes_and_arguments)
{
    const size_t n = 1024, nb = 7;
    uint32_t table[16];
    for (int i = 0; i < 16; i++)
        table[i] = lowbias32((uint32_t)i);
    clf_arg targs[] = {CLF_BROADCAST(table, sizeof table), CLF_LOCAL(64 * 4)};
    clf_stage_desc st[3] = {CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT};
    st[0].device = 0, st[0].kernel = "s_pairs", st[0].in_bytes = 2 * n * 4;
    st[0].out_bytes = n * 4, st[0].global[0] = n;
    st[1].device = 2, st[1].kernel = "s_table", st[1].in_bytes = n * 4;
    st[1].out_bytes = n * 4, st[1].global[0] = n, st[1].local[0] = 64;
    st[1].args = targs, st[1].nargs = 2;
    st[2].device = 1, st[2].kernel = "s_pairs", st[2].in_bytes = n * 4;
    st[2].out_bytes = n * 2, st[2].global[0] = n / 2;
    for (int s = 0; s < 3; s++)
        st[s].program = progs[_i];
    uint32_t *in = malloc(nb * 2 * n * 4), *out = malloc(nb * n * 2), *mid = malloc(n * 4);
    for (size_t i = 0; i < nb * 2 * n; i++)
        in[i] = (uint32_t)(i * 7 + 3);
    clf_pipeline *pl;
    ck_assert_ok(clf_pipeline_create(&pl, fleets[_i], st, 3, NULL));
    table[0] = 0xdead; /* the table was uploaded at creation */
    for (size_t runs = 1; runs <= nb; runs += nb - 1) {
        ck_assert_ok(clf_pipeline_run(pl, in, out, runs, NULL));
        for (size_t b = 0; b < runs; b++) {
            const uint32_t *x = in + b * 2 * n;
            for (size_t i = 0; i < n; i++)
                mid[i] = (x[2 * i] + x[2 * i + 1]) ^ lowbias32((uint32_t)(i % 16));
            for (size_t i = 0; i < n / 2; i++)
                ck_assert_uint_eq(out[b * n / 2 + i], mid[2 * i] + mid[2 * i + 1]);
        }
    }
    clf_pipeline_destroy(pl);
    free(in);
    free(out);
    free(mid);
}
END_TEST

START_TEST(pipeline_bad_input)
{
    clf_fleet *f = fleets[0];
    clf_stage_desc st[2] = {CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT};
    for (int s = 0; s < 2; s++) {
        st[s].program = progs[0];
        st[s].kernel = "s_pairs";
        st[s].in_bytes = 64, st[s].out_bytes = 32, st[s].global[0] = 8;
    }
    st[1].in_bytes = 32, st[1].out_bytes = 16, st[1].global[0] = 4;
    clf_pipeline *pl = (clf_pipeline *)f;
    ck_assert_status(clf_pipeline_create(NULL, f, st, 2, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_pipeline_create(&pl, NULL, st, 2, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(pl);
    ck_assert_status(clf_pipeline_create(&pl, f, NULL, 2, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_pipeline_create(&pl, f, st, 0, NULL), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_pipeline_create(&pl, f, st, CLF_MAX_PIPELINE_STAGES + 1, NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    clf_pipeline_options o = CLF_PIPELINE_OPTIONS_INIT;
    o.version = 0;
    ck_assert_status(clf_pipeline_create(&pl, f, st, 2, &o), CLF_ERROR_INVALID_ARGUMENT);
    clf_stage_desc bad[2];
#define TRY_BAD(field_change, want)                                          \
    do {                                                                     \
        memcpy(bad, st, sizeof bad);                                         \
        field_change;                                                        \
        ck_assert_status(clf_pipeline_create(&pl, f, bad, 2, NULL), want);   \
        ck_assert_ptr_null(pl);                                              \
    } while (0)
    TRY_BAD(bad[1].in_bytes = 48, CLF_ERROR_INVALID_ARGUMENT); /* sizes do not chain */
    TRY_BAD(bad[0].version = 7, CLF_ERROR_INVALID_ARGUMENT);
    TRY_BAD(bad[0].kernel = NULL, CLF_ERROR_NULL_POINTER);
    TRY_BAD(bad[0].program = NULL, CLF_ERROR_NULL_POINTER);
    TRY_BAD(bad[0].device = 99, CLF_ERROR_OUT_OF_RANGE);
    TRY_BAD(bad[0].out_bytes = 0, CLF_ERROR_ZERO_SIZE);
    TRY_BAD(bad[0].dims = 4, CLF_ERROR_INVALID_ARGUMENT);
    TRY_BAD(bad[0].global[0] = 0, CLF_ERROR_ZERO_SIZE);
    TRY_BAD(bad[0].local[0] = 3, CLF_ERROR_INVALID_ARGUMENT);
    TRY_BAD(bad[0].kernel = "nope", CLF_ERROR_NOT_FOUND);
    TRY_BAD(bad[0].program = progs[1], CLF_ERROR_INVALID_ARGUMENT); /* another fleet */
    uint32_t v = 1;
    clf_arg inarg[] = {CLF_IN(&v, 4, 4)}, nullarg[] = {CLF_SCALAR(&v)};
    nullarg[0].host = NULL;
    TRY_BAD((bad[0].args = inarg, bad[0].nargs = 1), CLF_ERROR_INVALID_ARGUMENT);
    TRY_BAD((bad[0].args = nullarg, bad[0].nargs = 1), CLF_ERROR_NULL_POINTER);
    TRY_BAD((bad[0].args = NULL, bad[0].nargs = 1), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_pipeline_create(&pl, f, st, 2, NULL));
    uint32_t in[16] = {0}, out[4];
    ck_assert_status(clf_pipeline_run(NULL, in, out, 1, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_pipeline_run(pl, NULL, out, 1, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_pipeline_run(pl, in, NULL, 1, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_pipeline_run(pl, in, out, 0, NULL), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_pipeline_run(pl, in, out, SIZE_MAX / 8, NULL), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_ok(clf_pipeline_run(pl, in, out, 1, NULL));
    clf_pipeline_destroy(pl);
    clf_pipeline_destroy(NULL);
}
END_TEST

/* ---- task queues --------------------------------------------------------------------------- */

static uint32_t task_value(size_t i, uint32_t id, int iters)
{
    return lowbias32((uint32_t)i * 2654435761u ^ lcg(id, iters));
}

/* 200 tasks of random sizes and lengths: each runs once, on a queue device, correctly. */
START_TEST(taskq_random_lengths)
{
    static const size_t devs[3] = {2, 0, 3};
    const size_t ntask = 200;
    clf_taskq *q;
    ck_assert_ok(clf_taskq_create(&q, fleets[_i], progs[_i], devs, 3));
    uint32_t **out = calloc(ntask, sizeof *out);
    size_t *len = calloc(ntask, sizeof *len);
    int *its = calloc(ntask, sizeof *its);
    uint64_t s = 12345;
    for (size_t t = 0; t < ntask; t++) {
        /* Lengths from nothing to about 10^7 generator steps. */
        len[t] = 1 + xorshift64(&s) % 2000;
        int iters = its[t] = (int)(xorshift64(&s) % 5000);
        uint32_t id = (uint32_t)t * 31u + 1;
        out[t] = malloc(len[t] * 4);
        memset(out[t], 0xee, len[t] * 4);
        clf_arg a[] = {CLF_WHOLE_OUT(out[t], len[t] * 4), CLF_SCALAR(&id), CLF_SCALAR(&iters)};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "task";
        d.global[0] = len[t];
        size_t got;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 3, &got));
        ck_assert_uint_eq(got, t);
        id = 0, iters = -1; /* the values were copied */
    }
    clf_taskq_report rep;
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.tasks, ntask);
    ck_assert_uint_eq(rep.failed, 0);
    ck_assert_uint_eq(rep.num_devices, 3);
    uint64_t sum = 0, per[3] = {0};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(rep.dev[i].device, devs[i]);
        sum += rep.dev[i].tasks;
    }
    ck_assert_uint_eq(sum, ntask);
    ck_assert(rep.makespan_s > 0 && rep.efficiency > 0 && rep.efficiency <= 1);
    for (size_t t = 0; t < ntask; t++) {
        clf_task_info info;
        ck_assert_ok(clf_taskq_task_info(&info, q, t));
        ck_assert_msg(info.runs == 1, "task %zu ran %u times", t, info.runs);
        ck_assert_int_eq(info.status, CLF_SUCCESS);
        ck_assert(info.end_s >= info.start_s && info.kernel_s > 0);
        size_t k = 0;
        while (k < 3 && devs[k] != info.device)
            k++;
        ck_assert_msg(k < 3, "task %zu ran on device %zu, not a queue device", t, info.device);
        per[k]++;
        for (size_t i = 0; i < len[t]; i++)
            if (out[t][i] != task_value(i, (uint32_t)t * 31u + 1, its[t]))
                ck_abort_msg("task %zu element %zu wrong", t, i);
        free(out[t]);
    }
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(per[i], rep.dev[i].tasks);
    /* Nothing new: a run does nothing. */
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.tasks, 0);
    clf_taskq_destroy(q);
    free(out);
    free(len);
    free(its);
}
END_TEST

/* Every task dealt to device 0: the others steal from it; INOUT, scalar and local arguments. */
START_TEST(taskq_stealing_and_inout)
{
    const size_t ntask = 60, n = 256;
    clf_taskq *q;
    static const size_t devs[3] = {0, 1, 2};
    ck_assert_ok(clf_taskq_create(&q, fleets[_i], progs[_i], devs, 3));
    uint32_t *io = malloc(ntask * n * 4), *in = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint32_t)i + 1;
    for (size_t t = 0; t < ntask * n; t++)
        io[t] = (uint32_t)t;
    for (size_t t = 0; t < ntask; t++) {
        uint32_t k = (uint32_t)t + 2;
        clf_arg a[] = {CLF_WHOLE_INOUT(io + t * n, n * 4), CLF_WHOLE_IN(in, n * 4), CLF_SCALAR(&k),
                       CLF_LOCAL(64 * 4)};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "task_inout";
        d.global[0] = n;
        d.local[0] = 64;
        d.affinity = 0;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 4, NULL));
    }
    /* Long tasks, also on device 0: the thieves have time to take some. */
    uint32_t *spin_out[30];
    for (size_t t = 0; t < 30; t++) {
        uint32_t id = (uint32_t)t;
        int iters = 300000;
        spin_out[t] = malloc(64 * 4);
        clf_arg a[] = {CLF_WHOLE_OUT(spin_out[t], 64 * 4), CLF_SCALAR(&id), CLF_SCALAR(&iters)};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "task";
        d.global[0] = 64;
        d.affinity = 0;
        ck_assert_ok(clf_taskq_submit(q, &d, a, 3, NULL));
    }
    clf_taskq_report rep;
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.tasks, ntask + 30);
    ck_assert_msg(rep.dev[1].stolen + rep.dev[2].stolen > 0, "nothing was stolen");
    ck_assert_uint_eq(rep.dev[0].stolen, 0);
    ck_assert_uint_eq(rep.dev[1].stolen, rep.dev[1].tasks);
    for (size_t t = 0; t < ntask; t++)
        for (size_t i = 0; i < n; i++)
            ck_assert_uint_eq(io[t * n + i], (uint32_t)(t * n + i) + (uint32_t)(i + 1) * (t + 2));
    for (size_t t = 0; t < 30; t++) {
        for (size_t i = 0; i < 64; i++)
            ck_assert_uint_eq(spin_out[t][i], task_value(i, (uint32_t)t, 300000));
        free(spin_out[t]);
    }
    /* A later submission runs in the next run only. */
    uint32_t k = 1;
    clf_arg a[] = {CLF_WHOLE_INOUT(io, n * 4), CLF_WHOLE_IN(in, n * 4), CLF_SCALAR(&k),
                   CLF_LOCAL(64 * 4)};
    clf_task_desc d = CLF_TASK_DESC_INIT;
    d.kernel = "task_inout";
    d.global[0] = n;
    size_t id;
    uint32_t before = io[5];
    ck_assert_ok(clf_taskq_submit(q, &d, a, 4, &id));
    ck_assert_uint_eq(id, ntask + 30);
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.tasks, 1);
    ck_assert_uint_eq(io[5], before + 6);
    clf_taskq_destroy(q);
    free(io);
    free(in);
}
END_TEST

START_TEST(taskq_bad_input)
{
    clf_fleet *f = fleets[0];
    clf_taskq *q = (clf_taskq *)f;
    ck_assert_status(clf_taskq_create(NULL, f, progs[0], NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_taskq_create(&q, NULL, progs[0], NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(q);
    ck_assert_status(clf_taskq_create(&q, f, NULL, NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_taskq_create(&q, f, progs[1], NULL, 0), CLF_ERROR_INVALID_ARGUMENT);
    const size_t twice[2] = {1, 1}, far[1] = {99};
    ck_assert_status(clf_taskq_create(&q, f, progs[0], twice, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_taskq_create(&q, f, progs[0], far, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_taskq_create(&q, f, progs[0], twice, 0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_taskq_create(&q, f, progs[0], twice, 1));
    uint32_t out[4], id = 1;
    int iters = 0;
    clf_arg a[] = {CLF_WHOLE_OUT(out, sizeof out), CLF_SCALAR(&id), CLF_SCALAR(&iters)};
    clf_task_desc d = CLF_TASK_DESC_INIT;
    d.kernel = "task";
    d.global[0] = 4;
    ck_assert_status(clf_taskq_submit(NULL, &d, a, 3, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_taskq_submit(q, NULL, a, 3, NULL), CLF_ERROR_NULL_POINTER);
    clf_task_desc bad = d;
    bad.version = 0;
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_INVALID_ARGUMENT);
    bad = d, bad.kernel = NULL;
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_NULL_POINTER);
    bad = d, bad.global[0] = 0;
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_ZERO_SIZE);
    bad = d, bad.dims = 0;
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_INVALID_ARGUMENT);
    bad = d, bad.local[0] = 3;
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_INVALID_ARGUMENT);
    bad = d, bad.affinity = 1;
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_taskq_submit(q, &d, NULL, 3, NULL), CLF_ERROR_NULL_POINTER);
    clf_arg red[] = {CLF_REDUCE(out, 4, CLF_TYPE_INT32, CLF_REDUCE_SUM)};
    ck_assert_status(clf_taskq_submit(q, &d, red, 1, NULL), CLF_ERROR_UNSUPPORTED);
    clf_arg zero[] = {CLF_WHOLE_OUT(out, 0)};
    ck_assert_status(clf_taskq_submit(q, &d, zero, 1, NULL), CLF_ERROR_ZERO_SIZE);
    clf_arg kind[] = {CLF_WHOLE_OUT(out, 4)};
    kind[0].kind = 99;
    ck_assert_status(clf_taskq_submit(q, &d, kind, 1, NULL), CLF_ERROR_INVALID_ARGUMENT);
    /* An unknown kernel and a wrong argument count are refused when submitted (they used to
     * fail only when the queue ran). */
    bad = d, bad.kernel = "no_such_kernel";
    ck_assert_status(clf_taskq_submit(q, &bad, a, 3, NULL), CLF_ERROR_NOT_FOUND);
    ck_assert_status(clf_taskq_submit(q, &d, a, 2, NULL), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_taskq_submit(q, &d, a, 3, NULL));
    clf_taskq_report rep;
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.failed, 0);
    clf_task_info info;
    ck_assert_ok(clf_taskq_task_info(&info, q, 0));
    ck_assert_int_eq(info.status, CLF_SUCCESS);
    ck_assert_uint_eq(out[3], task_value(3, 1, 0));
    ck_assert_status(clf_taskq_task_info(&info, q, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_taskq_task_info(NULL, q, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_taskq_run(NULL, NULL), CLF_ERROR_NULL_POINTER);
    clf_taskq_destroy(q);
    clf_taskq_destroy(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("pipeline");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, test_watchdog_off);
    tcase_add_loop_test(tc, three_stages_fifty_batches, 0, 2);
    tcase_add_loop_test(tc, serial_baseline_and_shared_device, 0, 2);
    tcase_add_loop_test(tc, stages_on_the_basic_device, 0, 2);
    tcase_add_loop_test(tc, changing_sizes_and_arguments, 0, 2);
    tcase_add_test(tc, pipeline_bad_input);
    tcase_add_loop_test(tc, taskq_random_lengths, 0, 2);
    tcase_add_loop_test(tc, taskq_stealing_and_inout, 0, 2);
    tcase_add_test(tc, taskq_bad_input);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET4, 4);
}

/*
 * Textbook OpenCL kernels, unchanged, across the fleet: each is written the way public
 * tutorials write it for one device (group ids, global sizes, per-group outputs written with
 * `=`, 0-based indices from get_global_offset), and each fleet launch must return exactly what
 * one device returns (bit for bit: the same kernel on the same kind of device), under every
 * strategy, on two and three devices; a plain C reference checks the one-device run itself.
 */
#include "common.h"

#include <math.h>

static const fleet_cfg CFGS[] = {
    {FLEET2, 0, NULL, 2, "2 devices, shared context"},
    {FLEET4, 1, DEV3, 3, "3 of 4 devices, context per device"},
};
#define NCFGS ((int)(sizeof CFGS / sizeof CFGS[0]))

static const clf_strategy STRATEGIES[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                          CLF_STRATEGY_AUTO};
#define NSTRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])

static const char SRC[] =
    /* Pi by integration, as in the Hands On OpenCL course: each work-item sums niters
     * rectangles, each work-group writes its partial sum with `=` from a helper function, and
     * the host adds the partials. */
    "void reduce(__local float *local_sums, __global float *partial_sums)\n"
    "{\n"
    "    int num_wrk_items = get_local_size(0);\n"
    "    int local_id = get_local_id(0);\n"
    "    int group_id = get_group_id(0);\n"
    "    if (local_id == 0) {\n"
    "        float sum = 0.0f;\n"
    "        for (int i = 0; i < num_wrk_items; i++)\n"
    "            sum += local_sums[i];\n"
    "        partial_sums[group_id] = sum;\n"
    "    }\n"
    "}\n"
    "__kernel void pi(const int niters, const float step_size, __local float *local_sums,\n"
    "                 __global float *partial_sums)\n"
    "{\n"
    "    int num_wrk_items = get_local_size(0);\n"
    "    int local_id = get_local_id(0);\n"
    "    int group_id = get_group_id(0);\n"
    "    float x, accum = 0.0f;\n"
    "    int istart = (group_id * num_wrk_items + local_id) * niters;\n"
    "    int iend = istart + niters;\n"
    "    for (int i = istart; i < iend; i++) {\n"
    "        x = (i + 0.5f) * step_size;\n"
    "        accum += 4.0f / (1.0f + x * x);\n"
    "    }\n"
    "    local_sums[local_id] = accum;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    reduce(local_sums, partial_sums);\n"
    "}\n"
    /* An all-pairs potential: every body loops over all get_global_size(0) bodies. */
    "__kernel void potential(__global const float4 *pos, __global float *phi)\n"
    "{\n"
    "    size_t i = get_global_id(0), n = get_global_size(0);\n"
    "    float4 p = pos[i];\n"
    "    float s = 0.0f;\n"
    "    for (size_t j = 0; j < n; j++) {\n"
    "        if (j == i) continue;\n"
    "        float4 d = pos[j] - p;\n"
    "        s += rsqrt(d.x * d.x + d.y * d.y + d.z * d.z);\n"
    "    }\n"
    "    phi[i] = s;\n"
    "}\n"
    /* A 0-based index and a normalised coordinate from the NDRange query functions. */
    "__kernel void coords(__global uint *idx, __global float *u, __global uint *groups)\n"
    "{\n"
    "    size_t i = get_global_id(0) - get_global_offset(0);\n"
    "    idx[i] = (uint)(get_group_id(0) * get_local_size(0) + get_local_id(0));\n"
    "    u[i] = (float)i / (float)get_global_size(0);\n"
    "    groups[i] = (uint)get_num_groups(0);\n"
    "}\n";

typedef test_env env;

static void env_open(env *e, int i)
{
    test_env_open(e, &CFGS[i], SRC);
}

#define env_close test_env_close

/* A 1-D launch of kernel on the configuration's devices, or on device `one` alone with a
 * single static chunk (the one-device reference) when one != SIZE_MAX. */
static void run(const env *e, const char *kernel, clf_strategy s, size_t global, size_t local,
                const clf_arg *args, size_t nargs, size_t one)
{
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = kernel;
    d.strategy = one == SIZE_MAX ? s : CLF_STRATEGY_STATIC;
    d.global[0] = global;
    d.local[0] = local;
    if (one != SIZE_MAX) {
        d.devices = &one;
        d.num_devices = 1;
    } else {
        d.devices = e->cfg->devices;
        d.num_devices = e->cfg->devices ? e->cfg->ndev : 0;
    }
    clf_launch_report r;
    clf_status st = clf_launch(e->f, e->p, &d, args, nargs, &r);
    expect(st == CLF_SUCCESS, "%s: %s %s: %s: %s", e->cfg->label, kernel,
           clf_strategy_name(d.strategy), clf_status_name(st), clf_last_error());
    if (one == SIZE_MAX && s != CLF_STRATEGY_AUTO)
        expect(r.strategy == s, "%s: %s ran %s", e->cfg->label, kernel,
               clf_strategy_name(r.strategy));
}

static size_t first_device(const env *e)
{
    return e->cfg->devices ? e->cfg->devices[0] : 0;
}

START_TEST(pi_per_group_partials)
{
    env e;
    env_open(&e, _i);
    const int niters = 64;
    const size_t local = 16, groups = 257, n = local * groups;
    const float step = 1.0f / (float)(n * (size_t)niters);
    float *ref = calloc(groups, sizeof *ref), *got = calloc(groups, sizeof *got);
    clf_arg args[] = {CLF_SCALAR(&niters), CLF_SCALAR(&step), CLF_LOCAL(local * sizeof(float)),
                      CLF_OUT_PER_GROUP(ref, groups * sizeof *ref, sizeof *ref)};
    run(&e, "pi", CLF_STRATEGY_STATIC, n, local, args, 4, first_device(&e));
    double pi = 0;
    for (size_t g = 0; g < groups; g++)
        pi += ref[g];
    expect(fabs(pi * step - M_PI) < 1e-4, "one device: pi = %.6f", pi * step);
    args[3].host = got;
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(got, 0xff, groups * sizeof *got);
        run(&e, "pi", STRATEGIES[s], n, local, args, 4, SIZE_MAX);
        expect(!memcmp(got, ref, groups * sizeof *got), "%s: %s: partials differ from one device",
               e.cfg->label, clf_strategy_name(STRATEGIES[s]));
    }
    free(ref);
    free(got);
    env_close(&e);
}
END_TEST

START_TEST(potential_loops_to_global_size)
{
    env e;
    env_open(&e, _i);
    const size_t n = 1031; /* prime: no local size, chunks of every length */
    float *pos = malloc(4 * n * sizeof *pos), *ref = malloc(n * sizeof *ref),
          *got = malloc(n * sizeof *got);
    uint64_t seed = 42;
    for (size_t i = 0; i < 4 * n; i++)
        pos[i] = (float)(xorshift64(&seed) % 2001) / 100.0f;
    clf_arg args[] = {CLF_BROADCAST(pos, 4 * n * sizeof *pos), CLF_OUT(ref, n * sizeof *ref, 4)};
    run(&e, "potential", CLF_STRATEGY_STATIC, n, 0, args, 2, first_device(&e));
    for (size_t i = 0; i < n; i += 97) { /* the reference itself, loosely */
        double s = 0;
        for (size_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            double dx = pos[4 * j] - pos[4 * i], dy = pos[4 * j + 1] - pos[4 * i + 1],
                   dz = pos[4 * j + 2] - pos[4 * i + 2];
            s += 1 / sqrt(dx * dx + dy * dy + dz * dz);
        }
        expect(fabs(ref[i] - s) <= 1e-3 * s, "one device: phi[%zu] = %g, want %g", i,
               (double)ref[i], s);
    }
    args[1].host = got;
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(got, 0, n * sizeof *got);
        run(&e, "potential", STRATEGIES[s], n, 0, args, 2, SIZE_MAX);
        expect(!memcmp(got, ref, n * sizeof *got), "%s: %s: potentials differ from one device",
               e.cfg->label, clf_strategy_name(STRATEGIES[s]));
    }
    free(pos);
    free(ref);
    free(got);
    env_close(&e);
}
END_TEST

START_TEST(coords_from_query_functions)
{
    env e;
    env_open(&e, _i);
    const size_t local = 64, n = 4096;
    uint32_t *idx = malloc(n * 4), *groups = malloc(n * 4);
    float *u = malloc(n * 4);
    clf_arg args[] = {CLF_OUT(idx, n * 4, 4), CLF_OUT(u, n * 4, 4), CLF_OUT(groups, n * 4, 4)};
    for (size_t s = 0; s < NSTRATEGIES; s++) {
        memset(idx, 0xff, n * 4);
        memset(groups, 0xff, n * 4);
        run(&e, "coords", STRATEGIES[s], n, local, args, 3, SIZE_MAX);
        for (size_t i = 0; i < n; i++) {
            expect(idx[i] == i && groups[i] == n / local && u[i] == (float)i / (float)n,
                   "%s: %s: item %zu: index %u, groups %u, u %g", e.cfg->label,
                   clf_strategy_name(STRATEGIES[s]), i, idx[i], groups[i], (double)u[i]);
        }
    }
    free(idx);
    free(u);
    free(groups);
    env_close(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("textbook");
    TCase *tc = tcase_create("textbook");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, pi_per_group_partials, 0, NCFGS);
    tcase_add_loop_test(tc, potential_loops_to_global_size, 0, NCFGS);
    tcase_add_loop_test(tc, coords_from_query_functions, 0, NCFGS);
    suite_add_tcase(s, tc);
    return test_run_fleet4_fleet2(s);
}

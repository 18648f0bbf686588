/*
 * clf_array_launch() and clf_array_exchange(): Jacobi steps (1D, and 2D 5-point) over block
 * arrays with halos, plain and periodic, exchanged before each step or overlapped after it,
 * against plain C loops bit for bit, on 1 to 3 PoCL sub-devices and on the basic device;
 * textbook kernels (the NDRange built-ins as on one device); block-cyclic and replicated
 * arrays; ordering with host writes; that a second read moves no bytes; and bad input.
 * Every strategy of a version-2 description over a resident stencil, with its report, and
 * a version-1 description read no further than its own end.
 */
#include "common.h"

#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

static const char SRC[] =
    TEST_CL_JACOBI
    "kernel void ids(global uint4 *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (uint4)((uint)i, (uint)get_global_size(0), (uint)get_group_id(0),\n"
    "                     (uint)get_num_groups(0));\n"
    "}\n"
    /* The same through a helper function (the range parameter passed down to it). */
    "uint4 idvals(size_t i)\n"
    "{\n"
    "    return (uint4)((uint)i, (uint)get_global_size(0), (uint)get_group_id(0),\n"
    "                   (uint)get_num_groups(0));\n"
    "}\n"
    "kernel void ids_h(global uint4 *out) { out[get_global_id(0)] = idvals(get_global_id(0)); }\n"
    "kernel void ids2(global uint4 *out)\n"
    "{\n"
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"
    "    out[y * get_global_size(0) + x] = (uint4)((uint)get_group_id(1),\n"
    "        (uint)get_num_groups(1), (uint)get_global_size(1), (uint)(get_local_id(1)));\n"
    "}\n"
    "kernel void axpb(global const float *in, constant float *coef, global float *out,\n"
    "                 uint m)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * coef[i % m] + coef[m - 1 - i % m];\n"
    "}\n"
    "kernel void inc(global const int *in, global int *out, int k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] + k;\n"
    "}\n"
    "kernel void cptr(global float * const out) { out[get_global_id(0)] = 1.0f; }\n"
    "#define GPTR global float *\n"
    "kernel void hidden(GPTR out) { out[get_global_id(0)] = 1.0f; }\n"
    /* Local memory, and an array read and written: each group reversed in place. */
    "kernel void rev(global int *x, local int *tmp)\n"
    "{\n"
    "    size_t l = get_local_id(0), n = get_local_size(0);\n"
    "    tmp[l] = x[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    x[get_global_id(0)] = tmp[n - 1 - l] + (int)get_group_id(0);\n"
    "}\n";

/* The fleets: one device, two sub-devices of one root, three of four in another order. */
static const size_t DEV1[] = {1};
static const size_t DEV2[] = {0, 1};
static const fleet_cfg CFGS[] = {
    {FLEET4, 0, DEV1, 1, "1 device"},
    {FLEET2, 0, DEV2, 2, "2 devices"},
    {FLEET4, 1, DEV3, 3, "3 devices, a context each"},
};
enum { NCFG = sizeof CFGS / sizeof CFGS[0] };

static clf_array *make(clf_fleet *f, const size_t *devs, size_t ndev, unsigned dims, size_t w,
                       size_t h, size_t esize, size_t halo, unsigned flags)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = esize;
    d.dims = dims;
    d.shape[0] = w;
    d.shape[1] = h;
    d.devices = devs;
    d.num_devices = ndev;
    d.halo_before = d.halo_after = halo;
    d.flags = flags;
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    return a;
}

enum { STEPS = 50 };

/* STEPS Jacobi steps of kernel over two arrays of dims (w x h), against the reference. */
static void jacobi_halo(clf_fleet *f, clf_program *p, const size_t *devs, size_t ndev,
                        unsigned dims, size_t w, size_t h, size_t halo, int periodic,
                        unsigned lflags, const char *label)
{
    size_t n = w * h;
    float *x = jacobi_grid(n, lflags), *y = malloc(n * sizeof *y), *got = malloc(n * sizeof *got);
    ck_assert(y && got);
    unsigned af = periodic ? CLF_ARRAY_PERIODIC : 0;
    clf_array *a = make(f, devs, ndev, dims, w, h, sizeof(float), halo, af);
    clf_array *b = make(f, devs, ndev, dims, w, h, sizeof(float), halo, af);
    ck_assert_ok(clf_array_write(a, NULL, NULL, x));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = dims == 1 ? (periodic ? "jac1p" : "jac1") : "jac2";
    d.dims = dims;
    d.global[0] = w;
    d.global[1] = h;
    d.flags = lflags;
    clf_array *in = a, *out = b;
    clf_fleet_metrics m0, m1;
    for (int k = 0; k < STEPS; k++) {
        if (k == 1) /* after the upload: nothing more goes through the host */
            ck_assert_ok(clf_metrics_fleet(&m0, f));
        clf_arg args[] = {CLF_ARRAY_IN(in), CLF_ARRAY_OUT(out)};
        if (lflags == 0) /* the caller exchanges */
            ck_assert_ok(clf_array_exchange(in));
        ck_assert_ok(clf_array_launch(f, p, &d, args, 2));
        clf_array *t = in;
        in = out;
        out = t;
        jacobi_ref_step(&x, &y, dims, w, h, periodic);
    }
    ck_assert_ok(clf_array_finish(in));
    ck_assert_ok(clf_array_finish(out));
    ck_assert_ok(clf_metrics_fleet(&m1, f));
    ck_assert_msg(m1.dir[CLF_DIRECTION_TO_DEVICE].bytes == m0.dir[CLF_DIRECTION_TO_DEVICE].bytes &&
                      m1.dir[CLF_DIRECTION_FROM_DEVICE].bytes ==
                          m0.dir[CLF_DIRECTION_FROM_DEVICE].bytes,
                  "%s: the steps moved bytes through the host", label);
    ck_assert_ok(clf_array_read(in, NULL, NULL, got));
    for (size_t i = 0; i < n; i++)
        expect(memcmp(&got[i], &x[i], sizeof *x) == 0, "%s: element %zu: %.9g, expected %.9g",
               label, i, (double)got[i], (double)x[i]);
    clf_array_destroy(a);
    clf_array_destroy(b);
    free(x);
    free(y);
    free(got);
}

static void jacobi(clf_fleet *f, clf_program *p, const size_t *devs, size_t ndev, unsigned dims,
                   size_t w, size_t h, int periodic, unsigned lflags, const char *label)
{
    jacobi_halo(f, p, devs, ndev, dims, w, h, 1, periodic, lflags, label);
}

START_TEST(jacobi_1d_2d)
{
    test_watchdog(300);
    const fleet_cfg *c = &CFGS[_i];
    test_env e;
    test_env_open(&e, c, SRC);
    static const unsigned modes[] = {0, CLF_ARRAY_EXCHANGE_BEFORE, CLF_ARRAY_EXCHANGE_AFTER};
    for (size_t m = 0; m < 3; m++) {
        char label[160];
        unsigned fl = modes[m];
        snprintf(label, sizeof label, "%s, flags %u, 1D", c->label, fl);
        jacobi(e.f, e.p, c->devices, c->ndev, 1, 1000, 1, 0, fl, label);
        snprintf(label, sizeof label, "%s, flags %u, 1D periodic", c->label, fl);
        jacobi(e.f, e.p, c->devices, c->ndev, 1, 999, 1, 1, fl, label);
        snprintf(label, sizeof label, "%s, flags %u, 2D", c->label, fl);
        jacobi(e.f, e.p, c->devices, c->ndev, 2, 37, 61, 0, fl, label);
        /* Halos of 2 over parts of 12, 6 and 4 units: on 3 devices the strips cover the
         * whole part. */
        snprintf(label, sizeof label, "%s, flags %u, 1D periodic, 12 units, halo 2", c->label,
                 fl);
        jacobi_halo(e.f, e.p, c->devices, c->ndev, 1, 12, 1, 2, 1, fl, label);
    }
    test_env_close(&e);
    test_watchdog_off();
}
END_TEST

/* On PoCL's basic device and two others (it runs commands inside clEnqueue*). */
START_TEST(jacobi_basic)
{
    test_watchdog(300);
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    size_t basic, other[2];
    if (test_find_basic(f, &basic, other, "jacobi_basic")) {
        clf_program *p = NULL;
        ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
        size_t devs[3] = {other[0], basic, other[1]};
        jacobi(f, p, devs, 3, 1, 500, 1, 1, CLF_ARRAY_EXCHANGE_AFTER, "basic, after, periodic");
        jacobi(f, p, devs, 3, 2, 20, 33, 0, CLF_ARRAY_EXCHANGE_BEFORE, "basic, before, 2D");
        clf_program_destroy(p);
    }
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* The NDRange built-ins as on one device, with the range cut into parts. */
START_TEST(textbook)
{
    const fleet_cfg *c = &CFGS[_i];
    test_env e;
    test_env_open(&e, c, SRC);
    enum { N = 384, W = 8, H = 96 };
    uint32_t *got = malloc(N * 16);
    ck_assert(got);
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "ids";
    d.global[0] = N;
    /* Block, then block-cyclic in blocks of 32 (a kernel per block). */
    clf_array_desc cd = CLF_ARRAY_DESC_INIT;
    cd.elem_size = 16;
    cd.shape[0] = N;
    cd.dist = CLF_ARRAY_BLOCK_CYCLIC;
    cd.block_size = 32;
    cd.devices = c->devices;
    cd.num_devices = c->ndev;
    clf_array *blk = make(e.f, c->devices, c->ndev, 1, N, 1, 16, 0, 0), *cyc = NULL, *a = blk;
    ck_assert_ok(clf_array_create(&cyc, e.f, &cd));
    static const size_t locals[] = {0, 4, 32, 0, 4, 32, 16};
    for (size_t li = 0; li < 7; li++) {
        a = li < 3 ? blk : cyc;
        d.local[0] = locals[li];
        clf_arg args[] = {CLF_ARRAY_OUT(a)};
        clf_status st = clf_array_launch(e.f, e.p, &d, args, 1); /* 384 = 3 x 128 = 2 x 192 */
        ck_assert_msg(st == CLF_SUCCESS, "%s", clf_last_error());
        ck_assert_ok(clf_array_read(a, NULL, NULL, got));
        size_t l = locals[li];
        for (size_t i = 0; i < N; i++) {
            expect(got[4 * i] == i && got[4 * i + 1] == N, "%s: id/size at %zu", c->label, i);
            if (l)
                expect(got[4 * i + 2] == i / l && got[4 * i + 3] == N / l,
                       "%s local %zu: group %u of %u at %zu", c->label, l, got[4 * i + 2],
                       got[4 * i + 3], i);
            else /* clfleet's choice: consistent with some local size */
                expect(got[4 * i + 3] && N % got[4 * i + 3] == 0 &&
                           got[4 * i + 2] == i / (N / got[4 * i + 3]),
                       "%s: group %u of %u at %zu", c->label, got[4 * i + 2], got[4 * i + 3], i);
        }
    }
    /* A helper that calls the built-ins sees the same, block and block-cyclic. */
    d.kernel = "ids_h";
    d.local[0] = 32;
    for (int k = 0; k < 2; k++) {
        a = k ? cyc : blk;
        clf_arg args[] = {CLF_ARRAY_OUT(a)};
        ck_assert_msg(clf_array_launch(e.f, e.p, &d, args, 1) == CLF_SUCCESS, "%s",
                      clf_last_error());
        ck_assert_ok(clf_array_read(a, NULL, NULL, got));
        for (size_t i = 0; i < N; i++)
            expect(got[4 * i] == i && got[4 * i + 1] == N && got[4 * i + 2] == i / 32 &&
                       got[4 * i + 3] == N / 32,
                   "%s, helper: %u %u %u %u at %zu", c->label, got[4 * i], got[4 * i + 1],
                   got[4 * i + 2], got[4 * i + 3], i);
    }
    d.kernel = "ids";
    clf_array_destroy(blk);
    clf_array_destroy(cyc);
    /* 2D, cut along rows. */
    clf_array *b = make(e.f, c->devices, c->ndev, 2, W, H, 16, 0, 0);
    uint32_t *g2 = malloc((size_t)W * H * 16);
    ck_assert(g2);
    d.kernel = "ids2";
    d.dims = 2;
    d.global[0] = W;
    d.global[1] = H;
    d.local[0] = 4;
    d.local[1] = 2;
    clf_arg args2[] = {CLF_ARRAY_OUT(b)};
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, args2, 1));
    ck_assert_ok(clf_array_read(b, NULL, NULL, g2));
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++) {
            const uint32_t *v = &g2[4 * (y * W + x)];
            expect(v[0] == y / 2 && v[1] == H / 2 && v[2] == H && v[3] == y % 2,
                   "%s: 2D (%zu, %zu): %u %u %u %u", c->label, x, y, v[0], v[1], v[2], v[3]);
        }
    clf_array_destroy(b);
    free(g2);
    free(got);
    test_env_close(&e);
}
END_TEST

/* Block-cyclic input and output, a replicated (__constant) table. */
START_TEST(cyclic_replicated)
{
    const fleet_cfg *c = &CFGS[_i];
    test_env e;
    test_env_open(&e, c, SRC);
    enum { N = 1000, M = 7 };
    clf_array_desc cd = CLF_ARRAY_DESC_INIT;
    cd.elem_size = sizeof(float);
    cd.shape[0] = N;
    cd.dist = CLF_ARRAY_BLOCK_CYCLIC;
    cd.block_size = 8;
    cd.devices = c->devices;
    cd.num_devices = c->ndev;
    clf_array *in = NULL, *out = NULL, *coef = NULL;
    ck_assert_ok(clf_array_create(&in, e.f, &cd));
    ck_assert_ok(clf_array_create(&out, e.f, &cd));
    clf_array_desc rd = cd;
    rd.dist = CLF_ARRAY_REPLICATED;
    rd.shape[0] = M;
    ck_assert_ok(clf_array_create(&coef, e.f, &rd));
    float x[N], k[M], got[N];
    for (size_t i = 0; i < N; i++)
        x[i] = (float)i * 0.5f - 100.0f;
    for (size_t i = 0; i < M; i++)
        k[i] = 1.0f + (float)i * 0.25f;
    ck_assert_ok(clf_array_write(in, NULL, NULL, x));
    ck_assert_ok(clf_array_write(coef, NULL, NULL, k));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "axpb";
    d.global[0] = N;
    uint32_t m = M;
    clf_arg args[] = {CLF_ARRAY_IN(in), CLF_ARRAY_IN(coef), CLF_ARRAY_OUT(out), CLF_SCALAR(&m)};
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, args, 4));
    ck_assert_ok(clf_array_read(out, NULL, NULL, got));
    for (size_t i = 0; i < N; i++) {
        float want = x[i] * k[i % M] + k[M - 1 - i % M];
        expect(memcmp(&got[i], &want, sizeof want) == 0, "%s: %zu: %.9g, expected %.9g", c->label,
               i, (double)got[i], (double)want);
    }
    clf_array_destroy(in);
    clf_array_destroy(out);
    clf_array_destroy(coef);
    test_env_close(&e);
}
END_TEST

/* Launch, host write, launch, read: each waits for the one before; a second read of an
 * unchanged array moves no bytes from the devices. */
START_TEST(ordering)
{
    const fleet_cfg *c = &CFGS[_i];
    test_env e;
    test_env_open(&e, c, SRC);
    enum { N = 4096 };
    clf_array *a = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(int), 0, 0);
    clf_array *b = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(int), 0, 0);
    static int x[N], got[N];
    for (int i = 0; i < N; i++)
        x[i] = i * 3;
    ck_assert_ok(clf_array_write(a, NULL, NULL, x));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "inc";
    d.global[0] = N;
    int k1 = 5, k2 = 1000;
    clf_arg a1[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(b), CLF_SCALAR(&k1)};
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, a1, 3));   /* b = a + 5 */
    clf_arg a2[] = {CLF_ARRAY_IN(b), CLF_ARRAY_OUT(a), CLF_SCALAR(&k2)};
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, a2, 3));   /* a = b + 1000 */
    for (int i = 0; i < N; i++)
        x[i] = -i;
    size_t org[3] = {100, 0, 0}, reg[3] = {50, 1, 1};
    ck_assert_ok(clf_array_write(b, org, reg, x));         /* after the launch read b */
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, a1, 3));   /* b = a + 5 */
    ck_assert_ok(clf_array_read(b, NULL, NULL, got));
    for (int i = 0; i < N; i++)
        expect(got[i] == i * 3 + 1010, "%s: %d: %d", c->label, i, got[i]);
    clf_fleet_metrics m0, m1;
    ck_assert_ok(clf_metrics_fleet(&m0, e.f));
    ck_assert_ok(clf_array_read(b, NULL, NULL, got));
    ck_assert_ok(clf_metrics_fleet(&m1, e.f));
    const clf_transfer_stats *from0 = &m0.dir[CLF_DIRECTION_FROM_DEVICE],
                             *from1 = &m1.dir[CLF_DIRECTION_FROM_DEVICE],
                             *to0 = &m0.dir[CLF_DIRECTION_TO_DEVICE],
                             *to1 = &m1.dir[CLF_DIRECTION_TO_DEVICE];
    ck_assert_msg(from1->bytes == from0->bytes && to1->bytes == to0->bytes,
                  "%s: a second read moved bytes", c->label);
    clf_array_destroy(a);
    clf_array_destroy(b);
    test_env_close(&e);
}
END_TEST

/* CLF_LOCAL and CLF_ARRAY_INOUT: groups reversed in place, twice. */
START_TEST(local_inout)
{
    const fleet_cfg *c = &CFGS[_i];
    test_env e;
    test_env_open(&e, c, SRC);
    enum { N = 768, L = 16 };
    clf_array *a = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(int), 0, 0);
    static int x[N], got[N];
    for (int i = 0; i < N; i++)
        x[i] = i * 7 - 1000;
    ck_assert_ok(clf_array_write(a, NULL, NULL, x));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "rev";
    d.global[0] = N;
    d.local[0] = L;
    clf_arg args[] = {CLF_ARRAY_INOUT(a), CLF_LOCAL(L * sizeof(int))};
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, args, 2));
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, args, 2));
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    for (int i = 0; i < N; i++)
        expect(got[i] == x[i] + 2 * (i / L), "%s: %d: %d, expected %d", c->label, i, got[i],
               x[i] + 2 * (i / L));
    clf_array_destroy(a);
    test_env_close(&e);
}
END_TEST

/* size bytes ending where an inaccessible page begins (never freed: a few pages). */
static void *guarded(size_t size)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), span = (size + pg - 1) / pg * pg;
    unsigned char *m = mmap(NULL, span + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    ck_assert(m != MAP_FAILED);
    ck_assert_int_eq(mprotect(m + span, pg, PROT_NONE), 0);
    return m + span - size;
}

/* The report of one launch over `units` units held as parts: units and shares add up, each
 * device that holds a part is there once, its times are sane. */
static void check_array_report(const clf_launch_report *r, clf_array *arr, size_t units,
                               clf_strategy want_req, const char *label)
{
    ck_assert_msg(r->requested == want_req, "%s: requested %d, asked %d", label,
                  (int)r->requested, (int)want_req);
    ck_assert_msg(r->reason[0] != 0, "%s: no reason", label);
    ck_assert_msg(r->total_units == units && r->done_units == units,
                  "%s: total %llu, done %llu, want %zu", label,
                  (unsigned long long)r->total_units, (unsigned long long)r->done_units, units);
    uint64_t sum = 0;
    double share = 0, hi = 0;
    for (size_t k = 0; k < r->num_devices; k++) {
        const clf_device_report *d = &r->dev[k];
        sum += d->units;
        share += d->share;
        ck_assert_msg(d->status == CLF_SUCCESS && d->chunks >= 1 && d->busy_s >= 0 &&
                          d->finish_s > 0,
                      "%s: device %zu: status %d, %u kernels, busy %g s, finish %g s", label,
                      d->device, (int)d->status, d->chunks, d->busy_s, d->finish_s);
        hi = d->finish_s > hi ? d->finish_s : hi;
        size_t held = 0;
        for (size_t q = 0; q < clf_array_part_count(arr); q++) {
            clf_array_part pi;
            ck_assert_ok(clf_array_part_info(&pi, arr, q));
            if (pi.device == d->device)
                held += pi.count;
        }
        ck_assert_msg(held == d->units, "%s: device %zu: %llu units reported, holds %zu",
                      label, d->device, (unsigned long long)d->units, held);
    }
    ck_assert_msg(sum == units, "%s: units add up to %llu, not %zu", label,
                  (unsigned long long)sum, units);
    ck_assert_msg(share > 1 - 1e-9 && share < 1 + 1e-9, "%s: shares add up to %.12g", label,
                  share);
    ck_assert_msg(r->makespan_s == hi, "%s: makespan %g, latest finish %g", label,
                  r->makespan_s, hi);
}

/*
 * Every strategy over a resident Jacobi (1-D with the exchange overlapped, 2-D exchanged
 * before), the arrays made uneven (weights 1:5 on two devices and more): bit for bit the
 * plain C loop, a report each step. The balancing strategies must move the parts toward
 * the measured (equal) speeds; static and the default must not move them.
 */
static const clf_strategy STRATS[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                      CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                      CLF_STRATEGY_AUTO,   CLF_STRATEGY_DEFAULT};

static void strategy_run(test_env *e, const fleet_cfg *c, clf_strategy s, unsigned dims,
                         const char *label)
{
    size_t w = dims == 1 ? 4096 : 64, h = dims == 1 ? 1 : 256, n = w * h, units = dims == 1 ? w : h;
    float *x = jacobi_grid(n, 7), *y = malloc(n * sizeof *y), *got = malloc(n * sizeof *got);
    ck_assert(y && got);
    double wts[3] = {1, 5, 3};
    clf_array *arr[2];
    for (int k = 0; k < 2; k++) {
        clf_array_desc ad = CLF_ARRAY_DESC_INIT;
        ad.elem_size = sizeof(float);
        ad.dims = dims;
        ad.shape[0] = w;
        ad.shape[1] = h;
        ad.devices = c->devices;
        ad.num_devices = c->ndev;
        ad.halo_before = ad.halo_after = 1;
        ad.weights_mode = CLF_WEIGHTS_USER;
        ad.weights = wts;
        ck_assert_ok(clf_array_create(&arr[k], e->f, &ad));
    }
    ck_assert_ok(clf_array_write(arr[0], NULL, NULL, x));
    clf_launch_report *rep = malloc(sizeof *rep);
    ck_assert(rep);
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    ck_assert_uint_eq(d.version, 2);
    d.kernel = dims == 1 ? "jac1" : "jac2";
    d.dims = dims;
    d.global[0] = w;
    d.global[1] = h;
    d.flags = dims == 1 ? CLF_ARRAY_EXCHANGE_AFTER : CLF_ARRAY_EXCHANGE_BEFORE;
    d.strategy = s;
    d.report = rep;
    size_t first[3] = {0};
    for (size_t q = 0; q < clf_array_part_count(arr[0]) && q < 3; q++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, arr[0], q));
        first[q] = pi.count;
    }
    enum { NSTEPS = 40 };
    for (int k = 0; k < NSTEPS; k++) {
        clf_arg args[] = {CLF_ARRAY_IN(arr[k % 2]), CLF_ARRAY_OUT(arr[(k + 1) % 2])};
        ck_assert_ok(clf_array_launch(e->f, e->p, &d, args, 2));
        char l[200];
        snprintf(l, sizeof l, "%s, step %d", label, k);
        check_array_report(rep, arr[0], units, s, l);
        int balances = s != CLF_STRATEGY_STATIC && s != CLF_STRATEGY_DEFAULT;
        ck_assert_msg(rep->strategy == (s == CLF_STRATEGY_AUTO       ? CLF_STRATEGY_GUIDED
                                        : s == CLF_STRATEGY_DEFAULT  ? CLF_STRATEGY_STATIC
                                                                     : s),
                      "%s: ran %d", l, (int)rep->strategy);
        ck_assert_msg(balances ? strstr(rep->reason, "measured") != NULL
                               : strstr(rep->reason, "never moved") != NULL,
                      "%s: reason '%s'", l, rep->reason);
        jacobi_ref_step(&x, &y, dims, w, h, 0);
    }
    clf_array_balance bal;
    ck_assert_ok(clf_array_balance_info(&bal, arr[0]));
    if (s == CLF_STRATEGY_STATIC || s == CLF_STRATEGY_DEFAULT || c->ndev == 1) {
        ck_assert_msg(bal.migrations == 0, "%s: moved %zu times", label, bal.migrations);
        for (size_t q = 0; q < clf_array_part_count(arr[0]) && q < 3; q++) {
            clf_array_part pi;
            ck_assert_ok(clf_array_part_info(&pi, arr[0], q));
            ck_assert_msg(pi.count == first[q], "%s: part %zu has %zu units, had %zu", label,
                          q, pi.count, first[q]);
        }
    } else {
        /* 1:5 on devices alike: the measured speeds call for a move within 40 steps. */
        ck_assert_msg(bal.migrations >= 1, "%s: never moved (%s)", label, bal.why);
    }
    ck_assert_ok(clf_array_read(arr[NSTEPS % 2], NULL, NULL, got));
    for (size_t i = 0; i < n; i++)
        expect(memcmp(&got[i], &x[i], sizeof *x) == 0, "%s: element %zu: %.9g, expected %.9g",
               label, i, (double)got[i], (double)x[i]);
    clf_array_destroy(arr[0]);
    clf_array_destroy(arr[1]);
    free(rep);
    free(x);
    free(y);
    free(got);
}

START_TEST(strategies)
{
    test_watchdog(600);
    const fleet_cfg *c = &CFGS[_i];
    test_env e;
    test_env_open(&e, c, SRC);
    for (size_t k = 0; k < sizeof STRATS / sizeof STRATS[0]; k++)
        for (unsigned dims = 1; dims <= 2; dims++) {
            char label[160];
            snprintf(label, sizeof label, "%s, %s, %uD", c->label,
                     clf_strategy_name(STRATS[k]), dims);
            strategy_run(&e, c, STRATS[k], dims, label);
        }
    test_env_close(&e);
    test_watchdog_off();
}
END_TEST

/* Bad strategies are refused before anything runs; a version-1 description (the struct
 * ending before strategy, at the end of a page) runs as before. */
START_TEST(strategy_bad_and_version_1)
{
    const fleet_cfg *c = &CFGS[1];
    test_env e;
    test_env_open(&e, c, SRC);
    enum { N = 512 };
    clf_array *a = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(float), 1, 0);
    clf_array *b = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(float), 1, 0);
    float *x = jacobi_grid(N, 3), *y = malloc(N * sizeof *y), *got = malloc(N * sizeof *got);
    ck_assert(y && got);
    ck_assert_ok(clf_array_write(a, NULL, NULL, x));
    clf_arg args[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(b)};
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "jac1";
    d.global[0] = N;
    d.flags = CLF_ARRAY_EXCHANGE_BEFORE;
    static const int bad[] = {-1, 6, 99};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        d.strategy = (clf_strategy)bad[k];
        ck_assert_status(clf_array_launch(e.f, e.p, &d, args, 2), CLF_ERROR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(clf_last_error(), "strategy"), "%s", clf_last_error());
    }
    d.strategy = CLF_STRATEGY_DEFAULT;
    d.version = 3;
    ck_assert_status(clf_array_launch(e.f, e.p, &d, args, 2), CLF_ERROR_INVALID_ARGUMENT);
    /* Nothing ran: the arrays are as written. */
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert(memcmp(got, x, N * sizeof *x) == 0);

    /* A balancing strategy over block-cyclic arrays: their parts cannot move; the report
     * says static ran, and why. */
    clf_array_desc cd = CLF_ARRAY_DESC_INIT;
    cd.elem_size = sizeof(int);
    cd.shape[0] = N;
    cd.dist = CLF_ARRAY_BLOCK_CYCLIC;
    cd.block_size = 64;
    cd.devices = c->devices;
    cd.num_devices = c->ndev;
    clf_array *ca = NULL, *cb = NULL;
    ck_assert_ok(clf_array_create(&ca, e.f, &cd));
    ck_assert_ok(clf_array_create(&cb, e.f, &cd));
    int *iv = malloc(N * sizeof *iv), *ig = malloc(N * sizeof *ig), k7 = 7;
    ck_assert(iv && ig);
    for (int i = 0; i < N; i++)
        iv[i] = 3 * i - 100;
    ck_assert_ok(clf_array_write(ca, NULL, NULL, iv));
    clf_launch_report *rep = malloc(sizeof *rep);
    ck_assert(rep);
    clf_array_launch_desc cdl = CLF_ARRAY_LAUNCH_DESC_INIT;
    cdl.kernel = "inc";
    cdl.global[0] = N;
    cdl.strategy = CLF_STRATEGY_DYNAMIC;
    cdl.report = rep;
    clf_arg cargs[] = {CLF_ARRAY_IN(ca), CLF_ARRAY_OUT(cb), CLF_SCALAR(&k7)};
    ck_assert_ok(clf_array_launch(e.f, e.p, &cdl, cargs, 3));
    ck_assert_int_eq(rep->requested, CLF_STRATEGY_DYNAMIC);
    ck_assert_int_eq(rep->strategy, CLF_STRATEGY_STATIC);
    ck_assert_msg(strstr(rep->reason, "cannot move"), "%s", rep->reason);
    check_array_report(rep, cb, N, CLF_STRATEGY_DYNAMIC, "block-cyclic");
    ck_assert_ok(clf_array_read(cb, NULL, NULL, ig));
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(ig[i], iv[i] + 7);
    clf_array_destroy(ca);
    clf_array_destroy(cb);
    free(iv);
    free(ig);
    free(rep);

    /* Version 1: only the fields up to strategy exist. */
    const size_t v1size = offsetof(clf_array_launch_desc, strategy);
    clf_array_launch_desc full = CLF_ARRAY_LAUNCH_DESC_INIT;
    full.version = 1;
    full.kernel = "jac1";
    full.global[0] = N;
    full.flags = CLF_ARRAY_EXCHANGE_BEFORE;
    clf_array_launch_desc *d1 = guarded(v1size);
    memcpy(d1, &full, v1size);
    for (int k = 0; k < 4; k++) {
        clf_arg a1[] = {CLF_ARRAY_IN(k % 2 ? b : a), CLF_ARRAY_OUT(k % 2 ? a : b)};
        ck_assert_ok(clf_array_launch(e.f, e.p, d1, a1, 2));
        jacobi_ref_step(&x, &y, 1, N, 1, 0);
    }
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    for (size_t i = 0; i < N; i++)
        expect(memcmp(&got[i], &x[i], sizeof *x) == 0, "version 1: element %zu: %.9g, "
               "expected %.9g", i, (double)got[i], (double)x[i]);
    clf_array_destroy(a);
    clf_array_destroy(b);
    free(x);
    free(y);
    free(got);
    test_env_close(&e);
}
END_TEST

START_TEST(bad_input)
{
    const fleet_cfg *c = &CFGS[2];
    test_env e;
    test_env_open(&e, c, SRC);
    enum { N = 300 };
    clf_array *a = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(float), 1, 0);
    clf_array *b = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(float), 1, 0);
    clf_array *other = make(e.f, DEV2, 2, 1, N, 1, sizeof(float), 1, 0);
    clf_array_desc rd = CLF_ARRAY_DESC_INIT;
    rd.elem_size = sizeof(float);
    rd.shape[0] = N;
    rd.dist = CLF_ARRAY_REPLICATED;
    rd.devices = c->devices;
    rd.num_devices = c->ndev;
    clf_array *rep = NULL;
    ck_assert_ok(clf_array_create(&rep, e.f, &rd));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "jac1";
    d.global[0] = N;
    clf_arg ok[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(b)};
    ck_assert_status(clf_array_launch(NULL, e.p, &d, ok, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_launch(e.f, NULL, &d, ok, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_launch(e.f, e.p, NULL, ok, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_launch(e.f, e.p, &d, NULL, 2), CLF_ERROR_NULL_POINTER);
    clf_array_launch_desc bd = d;
    bd.version = 99;
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    bd = d;
    bd.dims = 4;
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    bd = d;
    bd.global[0] = N + 1;
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "units"), "%s", clf_last_error());
    bd = d;
    bd.local[0] = 7; /* 300 / 3 = 100 per part */
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "part"), "%s", clf_last_error());
    bd = d;
    bd.flags = 1u << 7;
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    bd = d;
    bd.kernel = "nosuch";
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, ok, 2), CLF_ERROR_NOT_FOUND);
    clf_arg cut[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(other)};
    ck_assert_status(clf_array_launch(e.f, e.p, &d, cut, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "cut"), "%s", clf_last_error());
    clf_arg wrep[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(rep)};
    ck_assert_status(clf_array_launch(e.f, e.p, &d, wrep, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "replicated"), "%s", clf_last_error());
    clf_arg onlyrep[] = {CLF_ARRAY_IN(rep), CLF_ARRAY_IN(rep)};
    ck_assert_status(clf_array_launch(e.f, e.p, &d, onlyrep, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_buffer *buf = NULL;
    ck_assert_ok(clf_buffer_create(&buf, e.f, c->devices[0], N * sizeof(float), 0));
    clf_arg wbuf[] = {CLF_ARRAY_IN(a), CLF_BUF_OUT(buf)};
    ck_assert_status(clf_array_launch(e.f, e.p, &d, wbuf, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "argument 1"), "%s", clf_last_error());
    clf_arg few[] = {CLF_ARRAY_IN(a)};
    ck_assert_status(clf_array_launch(e.f, e.p, &d, few, 1), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg wrongmode[] = {CLF_ARRAY_OUT(a), CLF_ARRAY_OUT(b)}; /* const parameter written */
    ck_assert_status(clf_array_launch(e.f, e.p, &d, wrongmode, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg nul[] = {CLF_ARRAY_IN(NULL), CLF_ARRAY_OUT(b)};
    ck_assert_status(clf_array_launch(e.f, e.p, &d, nul, 2), CLF_ERROR_NULL_POINTER);
    bd = d;
    bd.kernel = "cptr";
    clf_arg one[] = {CLF_ARRAY_OUT(b)};
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, one, 1), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(clf_last_error(), "'out'") && strstr(clf_last_error(), "const"), "%s",
                  clf_last_error());
    bd.kernel = "hidden"; /* its pointer is not seen in the source: refused, not wrong */
    ck_assert_status(clf_array_launch(e.f, e.p, &bd, one, 1), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(clf_last_error(), "'out'") && strstr(clf_last_error(), "macro"), "%s",
                  clf_last_error());
    ck_assert_status(clf_array_exchange(NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_exchange(rep), CLF_ERROR_INVALID_ARGUMENT);
    /* Nothing ran wrong: a good launch still works. */
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, ok, 2));
    ck_assert_ok(clf_array_finish(b));
    clf_buffer_destroy(buf);
    clf_array_destroy(a);
    clf_array_destroy(b);
    clf_array_destroy(other);
    clf_array_destroy(rep);
    test_env_close(&e);
}
END_TEST

/* Sources the parameter scan must follow: a prototype before the definition, attributes,
 * comments with commas, restrict, qualifiers in any order, a helper function. */
static const char TRICKY[] =
    "kernel void proto(global const float *, global float *, float);\n"
    "float twice(float x) { return x + x; } /* kernel void not_one(global int *p) */\n"
    "__kernel __attribute__((reqd_work_group_size(8, 1, 1)))\n"
    "void attr(const __global float *restrict in /* a, b */, __global float * restrict out,\n"
    "          float k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = twice(in[i]) * k + (float)get_group_id(0);\n"
    "}\n"
    "kernel void proto(global const float *in, global float *out, float k)\n"
    "{\n"
    "    out[get_global_id(0)] = in[get_global_id(0)] - k;\n"
    "}\n";

START_TEST(tricky_source)
{
    const fleet_cfg *c = &CFGS[2];
    test_env e;
    test_env_open(&e, c, TRICKY);
    enum { N = 240 };
    clf_array *a = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(float), 0, 0);
    clf_array *b = make(e.f, c->devices, c->ndev, 1, N, 1, sizeof(float), 0, 0);
    float x[N], got[N], k = 3.0f;
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    ck_assert_ok(clf_array_write(a, NULL, NULL, x));
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.global[0] = N;
    d.local[0] = 8;
    clf_arg args[] = {CLF_ARRAY_IN(a), CLF_ARRAY_OUT(b), CLF_SCALAR(&k)};
    d.kernel = "attr";
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, args, 3));
    ck_assert_ok(clf_array_read(b, NULL, NULL, got));
    for (int i = 0; i < N; i++)
        expect(got[i] == (x[i] + x[i]) * k + (float)(i / 8), "attr %d: %g", i, (double)got[i]);
    d.kernel = "proto";
    ck_assert_ok(clf_array_launch(e.f, e.p, &d, args, 3));
    ck_assert_ok(clf_array_read(b, NULL, NULL, got));
    for (int i = 0; i < N; i++)
        expect(got[i] == x[i] - k, "proto %d: %g", i, (double)got[i]);
    clf_array_destroy(a);
    clf_array_destroy(b);
    test_env_close(&e);
}
END_TEST

/* More than 16 pointers: refused, naming the limit. */
START_TEST(too_many_pointers)
{
    char src[4096] = "kernel void many(";
    for (int i = 0; i < 17; i++)
        snprintf(src + strlen(src), sizeof src - strlen(src), "%sglobal float *p%d",
                 i ? ", " : "", i);
    snprintf(src + strlen(src), sizeof src - strlen(src), ") { p0[get_global_id(0)] = 0; }\n");
    test_env e;
    test_env_open(&e, &CFGS[1], src);
    clf_array *a[17];
    clf_arg args[17];
    for (int i = 0; i < 17; i++) {
        a[i] = make(e.f, DEV2, 2, 1, 64, 1, sizeof(float), 0, 0);
        clf_arg x = CLF_ARRAY_INOUT(a[i]);
        args[i] = x;
    }
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "many";
    d.global[0] = 64;
    ck_assert_status(clf_array_launch(e.f, e.p, &d, args, 17), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(clf_last_error(), "16"), "%s", clf_last_error());
    for (int i = 0; i < 17; i++)
        clf_array_destroy(a[i]);
    test_env_close(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("alaunch");
    TCase *t = tcase_create("alaunch");
    tcase_add_loop_test(t, jacobi_1d_2d, 0, NCFG);
    tcase_add_loop_test(t, jacobi_basic, 0, 2);
    tcase_add_loop_test(t, textbook, 0, NCFG);
    tcase_add_loop_test(t, cyclic_replicated, 0, NCFG);
    tcase_add_loop_test(t, ordering, 0, NCFG);
    tcase_add_loop_test(t, local_inout, 0, NCFG);
    tcase_add_test(t, tricky_source);
    tcase_add_test(t, bad_input);
    tcase_add_test(t, too_many_pointers);
    tcase_add_loop_test(t, strategies, 0, NCFG);
    tcase_add_test(t, strategy_bad_and_version_1);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return test_run(suite(), FLEET4, 4);
}

/*
 * clf_graph (clfleet/graph.h): graphs of kernels over buffers and arrays, their dependencies
 * inferred from access modes, placement, copies between devices and runs, on 1, 2 and 3
 * PoCL devices (a root pthread device; two sub-devices of one; the two pthread roots and the
 * basic device, in one context and in a context each). Every result is compared with a plain
 * C sequential reference, bit for bit:
 * chains, a diamond, a reduction tree, Jacobi steps over an array with a halo, in-place
 * updates, a node reading what two others wrote, host callbacks, manual placement, a graph
 * run again and again (the plan reused, new inputs seen), a device fault mid-graph (an
 * error that ends the run; a device lost under a chain, a diamond, in-place updates and two
 * buffers written in turn, its nodes moved and what only it held re-run; a caller's buffer
 * on it, which fails the run; the run after a recovery planned afresh), a simulated 20:1 pair (the slow device left out once
 * measured), a simulated 50:1 pair (predictions within 2x once learned, a mispredicted plan
 * made again), bad input, and memory
 * budgets: 8 MiB of buffers through 3 MiB of copies per device (evictions, write-backs, the
 * peak within the budget), by hand on one and two devices, by the scheduler, with kept
 * copies, and a node that fits no budget refused; reduction accesses (a fan of 8 nodes
 * summing ints and floats and taking a max into three buffers, spread over the devices, a
 * reader and a write after them; a sum's partials within budgets, counted to the byte; a
 * node that does not fit beside an open phase's partial refused there) and
 * scratch accesses (8 nodes on one scratch buffer, no
 * dependency and no copy), their bad input, and a device lost under them (the run fails);
 * the basic device's lane (chains crossing between it and the others, against the C
 * reference and the same graph on one device, every node it ran counted as a lane's).
 */
#include "common.h"

#include <pthread.h>

#include "clfleet/graph.h"

static const char SRC[] =
    TEST_CL_JACOBI
    "kernel void add1(global const int *in, global int *out)\n"
    "{ size_t i = get_global_id(0); out[i] = in[i] + 1; }\n"
    "kernel void scale(global const int *in, global int *out, int k)\n"
    "{ size_t i = get_global_id(0); out[i] = in[i] * k; }\n"
    "kernel void sum2(global const int *a, global const int *b, global int *out)\n"
    "{ size_t i = get_global_id(0); out[i] = a[i] + b[i]; }\n"
    "kernel void bump(global int *x, int k)\n"
    "{ size_t i = get_global_id(0); x[i] = x[i] * 3 + k; }\n"
    /* out[g] = the sum of in[g * chunk .. (g + 1) * chunk) */
    "kernel void psum(global const int *in, global int *out, uint chunk)\n"
    "{\n"
    "    size_t g = get_global_id(0); int s = 0;\n"
    "    for (uint j = 0; j < chunk; j++) s += in[g * chunk + j];\n"
    "    out[g] = s;\n"
    "}\n"
    "kernel void aadd1(global const int *in, global int *out)\n"
    "{ size_t i = get_global_id(0); out[i] = in[i] + 1; }\n"
    /* Compute-bound: `rounds` steps of a linear congruential generator per item. */
    /* A node of a reduction fan: a sum of ints, a sum of floats and a max into its partials. */
    "kernel void radd(global int *acc, global float *facc, global int *mx,\n"
    "                 global const int *x, int k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    acc[i] += x[i] * k; facc[i] += (float)x[i] * 0.25f * (float)k;\n"
    "    mx[i] = max(mx[i], x[i] * k);\n"
    "}\n"
    /* A reducer of one int sum (redux_budget). */
    "kernel void racc(global int *acc, global const int *x, int k)\n"
    "{ size_t i = get_global_id(0); acc[i] += x[i] * k; }\n"
    /* Uses its scratch buffer as memory: two nodes sharing one instance at once would see
     * each other's values. */
    "kernel void sdbl(global int *tmp, global const int *in, global int *out, int k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    tmp[i] = in[i] * k;\n"
    "    for (int r = 0; r < 64; r++) tmp[i] = tmp[i] + 1;\n"
    "    out[i] = tmp[i] - 64;\n"
    "}\n"
    "kernel void spin(global const uint *in, global uint *out, uint rounds)\n"
    "{\n"
    "    size_t i = get_global_id(0); uint x = in[i];\n"
    "    for (uint r = 0; r < rounds; r++) x = x * 1103515245u + 12345u;\n"
    "    out[i] = x;\n"
    "}\n";

/* The fleets: one device, two sub-devices of one root, the three PoCL root devices. */
static const fleet_cfg CFGS[] = {
    {TEST_CPUS ";index=0", 0, NULL, 1, "1 device"},
    {FLEET2, 0, NULL, 2, "2 devices"},
    {TEST_CPUS, 0, NULL, 3, "3 devices (pthread, pthread, basic)"},
    /* A context each: copies between them are staged through the host (on the helper pool,
     * beside the graph's own job). */
    {TEST_CPUS, 1, NULL, 3, "3 devices, a context each"},
};
enum { NCFG = sizeof CFGS / sizeof CFGS[0] };

enum { N = 4096 };

static clf_buffer *buf(clf_fleet *f, size_t dev, const int *init)
{
    clf_buffer *b = NULL;
    ck_assert_ok(clf_buffer_create(&b, f, dev, N * sizeof(int), 0));
    if (init)
        ck_assert_ok(clf_buffer_write(b, 0, N * sizeof(int), init));
    return b;
}

static int *data(uint32_t salt)
{
    int *x = malloc(N * sizeof *x);
    ck_assert(x);
    for (size_t i = 0; i < N; i++)
        x[i] = (int)(lowbias32((uint32_t)i + salt) % 1000) - 500;
    return x;
}

static void check_buf(clf_buffer *b, const int *want, const char *what, const char *label)
{
    int *got = malloc(N * sizeof *got);
    ck_assert(got);
    ck_assert_ok(clf_buffer_read(b, 0, N * sizeof(int), got));
    for (size_t i = 0; i < N; i++)
        expect(got[i] == want[i], "%s: %s[%zu] = %d, want %d", label, what, i, got[i], want[i]);
    free(got);
}

static clf_graph_node_desc kdesc(const char *kernel, size_t n)
{
    clf_graph_node_desc d = CLF_GRAPH_NODE_DESC_INIT;
    d.kernel = kernel;
    d.global[0] = n;
    return d;
}

/* Run and wait through the event, then through clf_graph_wait(). */
static void run_ok(clf_graph *g, const char *label)
{
    clf_event *ev = NULL;
    clf_status st = clf_graph_run(g, &ev);
    ck_assert_msg(st == CLF_SUCCESS, "%s: run: %s: %s", label, clf_status_name(st),
                  clf_last_error());
    st = clf_event_wait(ev);
    clf_event_release(ev);
    ck_assert_msg(st == CLF_SUCCESS, "%s: run's event: %s: %s", label, clf_status_name(st),
                  clf_last_error());
    ck_assert_ok(clf_graph_wait(g));
}

/* Spreads buffers over the fleet's devices, so that copies are needed. */
static size_t dev_of(clf_fleet *f, size_t i)
{
    return i % clf_fleet_device_count(f);
}

START_TEST(chain)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    int *a = data(1), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *b[4];
    for (size_t i = 0; i < 4; i++)
        b[i] = buf(e.f, dev_of(e.f, i), i ? NULL : a);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    int k = 7;
    clf_graph_node_desc d1 = kdesc("add1", N), d2 = kdesc("scale", N), d3 = kdesc("add1", N);
    clf_arg a1[] = {CLF_BUF_IN(b[0]), CLF_BUF_OUT(b[1])};
    clf_arg a2[] = {CLF_BUF_IN(b[1]), CLF_BUF_OUT(b[2]), CLF_SCALAR(&k)};
    clf_arg a3[] = {CLF_BUF_IN(b[2]), CLF_BUF_OUT(b[3])};
    size_t n0, n1, n2;
    ck_assert_ok(clf_graph_add_kernel(&n0, g, &d1, a1, 2));
    ck_assert_ok(clf_graph_add_kernel(&n1, g, &d2, a2, 3));
    k = 3; /* scalars are copied when recorded: this 3 is not seen by node 1 */
    ck_assert_ok(clf_graph_add_kernel(&n2, g, &d3, a3, 2));
    ck_assert_uint_eq(n0, 0);
    ck_assert_uint_eq(n1, 1);
    ck_assert_uint_eq(n2, 2);
    run_ok(g, CFGS[_i].label);
    for (size_t i = 0; i < N; i++)
        ref[i] = (a[i] + 1) * 7 + 1;
    check_buf(b[3], ref, "chain", CFGS[_i].label);
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.nodes, 3);
    ck_assert_uint_eq(r.whole_nodes, 3);
    ck_assert_uint_eq(r.edges, 2);
    ck_assert_uint_eq(r.runs, 1);
    ck_assert(r.makespan_s > 0 && r.predicted_makespan_s > 0);
    /* A chain: its critical path is every node, within the makespan (copies add to it). */
    ck_assert_msg(r.critical_path_s > 0 && r.critical_path_s <= r.predicted_makespan_s * 1.000001,
                  "%s: critical path %g s, predicted makespan %g s", CFGS[_i].label,
                  r.critical_path_s, r.predicted_makespan_s);
    clf_graph_destroy(g);
    for (size_t i = 0; i < 4; i++)
        clf_buffer_destroy(b[i]);
    free(a);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* A diamond, and a node reading what two others wrote: d = (a + 1) + a * 5. */
START_TEST(diamond)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    int *a = data(2), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *ba = buf(e.f, 0, a), *bb = buf(e.f, dev_of(e.f, 1), NULL),
               *bc = buf(e.f, dev_of(e.f, 2), NULL), *bd = buf(e.f, 0, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    int k = 5;
    clf_graph_node_desc d1 = kdesc("add1", N), d2 = kdesc("scale", N), d3 = kdesc("sum2", N);
    clf_arg a1[] = {CLF_BUF_IN(ba), CLF_BUF_OUT(bb)};
    clf_arg a2[] = {CLF_BUF_IN(ba), CLF_BUF_OUT(bc), CLF_SCALAR(&k)};
    clf_arg a3[] = {CLF_BUF_IN(bb), CLF_BUF_IN(bc), CLF_BUF_OUT(bd)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d2, a2, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d3, a3, 3));
    run_ok(g, CFGS[_i].label);
    for (size_t i = 0; i < N; i++)
        ref[i] = (a[i] + 1) + a[i] * 5;
    check_buf(bd, ref, "diamond", CFGS[_i].label);
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.edges, 2); /* node 2 on nodes 0 and 1; 0 and 1 independent */
    clf_graph_destroy(g);
    clf_buffer_destroy(ba);
    clf_buffer_destroy(bb);
    clf_buffer_destroy(bc);
    clf_buffer_destroy(bd);
    free(a);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* A reduction tree: four partial sums (one per 16 elements) of four inputs, combined
 * pairwise, then summed to 1/16th again; against the C sums. */
START_TEST(reduction)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    enum { CH = 16, M = N / CH };
    clf_buffer *in[4], *part[4], *s01, *s23, *s, *fin;
    int *x[4];
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    unsigned chunk = CH;
    clf_graph_node_desc dp = kdesc("psum", M), ds = kdesc("sum2", M), df = kdesc("psum", M / CH);
    for (size_t i = 0; i < 4; i++) {
        x[i] = data(10 + (uint32_t)i);
        in[i] = buf(e.f, dev_of(e.f, i), x[i]);
        part[i] = buf(e.f, dev_of(e.f, i + 1), NULL);
        clf_arg a[] = {CLF_BUF_IN(in[i]), CLF_BUF_OUT(part[i]), CLF_SCALAR(&chunk)};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &dp, a, 3));
    }
    s01 = buf(e.f, 0, NULL);
    s23 = buf(e.f, dev_of(e.f, 1), NULL);
    s = buf(e.f, dev_of(e.f, 2), NULL);
    fin = buf(e.f, 0, NULL);
    clf_arg a01[] = {CLF_BUF_IN(part[0]), CLF_BUF_IN(part[1]), CLF_BUF_OUT(s01)};
    clf_arg a23[] = {CLF_BUF_IN(part[2]), CLF_BUF_IN(part[3]), CLF_BUF_OUT(s23)};
    clf_arg as[] = {CLF_BUF_IN(s01), CLF_BUF_IN(s23), CLF_BUF_OUT(s)};
    clf_arg af[] = {CLF_BUF_IN(s), CLF_BUF_OUT(fin), CLF_SCALAR(&chunk)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &ds, a01, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &ds, a23, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &ds, as, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &df, af, 3));
    run_ok(g, CFGS[_i].label);
    int got[M / CH];
    ck_assert_ok(clf_buffer_read(fin, 0, sizeof got, got));
    for (size_t j = 0; j < M / CH; j++) {
        int want = 0;
        for (size_t i = 0; i < 4; i++)
            for (size_t t = 0; t < CH * CH; t++)
                want += x[i][j * CH * CH + t];
        expect(got[j] == want, "%s: sum %zu = %d, want %d", CFGS[_i].label, j, got[j], want);
    }
    clf_graph_destroy(g);
    for (size_t i = 0; i < 4; i++) {
        clf_buffer_destroy(in[i]);
        clf_buffer_destroy(part[i]);
        free(x[i]);
    }
    clf_buffer_destroy(s01);
    clf_buffer_destroy(s23);
    clf_buffer_destroy(s);
    clf_buffer_destroy(fin);
    test_env_close(&e);
}
END_TEST

/* Jacobi steps over block arrays with a halo of 1 (1D, and 2D 5-point), split over their
 * parts, ping-pong between two arrays; halfway a host callback adds 1 to every element
 * (through clf_array_read() and clf_array_write()), and the last one reads the result. */
typedef struct jac_host {
    clf_array *arr;
    float *buf;
    size_t n;
    int add;
} jac_host;

static clf_status host_array(void *user)
{
    jac_host *h = user;
    clf_status st = clf_array_read(h->arr, NULL, NULL, h->buf);
    if (st || !h->add)
        return st;
    for (size_t i = 0; i < h->n; i++)
        h->buf[i] += 1.0f;
    return clf_array_write(h->arr, NULL, NULL, h->buf);
}

START_TEST(halo)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    enum { STEPS = 6 };
    for (unsigned dims = 1; dims <= 2; dims++) {
        size_t w = dims == 1 ? 1000 : 48, h = dims == 1 ? 1 : 50, n = w * h;
        float *cur = jacobi_grid(n, 3 + dims), *next = malloc(n * sizeof *next),
              *got = malloc(n * sizeof *got), *mid = malloc(n * sizeof *mid);
        ck_assert(next && got && mid);
        clf_array_desc ad = CLF_ARRAY_DESC_INIT;
        ad.elem_size = sizeof(float);
        ad.dims = dims;
        ad.shape[0] = w;
        ad.shape[1] = h;
        ad.halo_before = ad.halo_after = 1;
        clf_array *x = NULL, *y = NULL;
        ck_assert_ok(clf_array_create(&x, e.f, &ad));
        ck_assert_ok(clf_array_create(&y, e.f, &ad));
        ck_assert_ok(clf_array_write(x, NULL, NULL, cur));
        clf_graph *g = NULL;
        ck_assert_ok(clf_graph_create(&g, e.f, e.p));
        clf_graph_node_desc d = kdesc(dims == 1 ? "jac1" : "jac2", w);
        d.dims = dims;
        d.global[1] = h;
        jac_host hm = {NULL, mid, n, 1}, hl = {STEPS % 2 ? y : x, got, n, 0};
        size_t hn = 0;
        for (int s = 0; s < STEPS; s++) {
            clf_array *in = s % 2 ? y : x, *out = s % 2 ? x : y;
            if (s == STEPS / 2) {
                hm.arr = in;
                clf_arg ha[] = {CLF_ARRAY_INOUT(in)};
                ck_assert_ok(clf_graph_add_host(NULL, g, host_array, &hm, ha, 1));
            }
            clf_arg a[] = {CLF_ARRAY_IN_HALO(in, 1, 1), CLF_ARRAY_OUT(out)};
            ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, a, 2));
        }
        clf_arg ha[] = {CLF_ARRAY_IN(hl.arr)};
        ck_assert_ok(clf_graph_add_host(&hn, g, host_array, &hl, ha, 1));
        run_ok(g, CFGS[_i].label);
        for (int s = 0; s < STEPS; s++) {
            if (s == STEPS / 2)
                for (size_t i = 0; i < n; i++)
                    cur[i] += 1.0f;
            jacobi_ref_step(&cur, &next, dims, w, h, 0);
        }
        for (size_t i = 0; i < n; i++)
            expect(got[i] == cur[i], "%s, %uD: x[%zu] = %a, want %a", CFGS[_i].label, dims, i,
                   got[i], cur[i]);
        clf_graph_report r;
        ck_assert_ok(clf_graph_report_get(&r, g));
        ck_assert_uint_eq(r.split_nodes, STEPS);
        ck_assert_uint_eq(r.host_nodes, 2);
        ck_assert_uint_eq(r.copies, 0); /* halos move inside the arrays, not as graph copies */
        /* Every part of every step is counted on its device. */
        size_t parts = 0, want = STEPS * clf_array_part_count(x);
        for (size_t dv = 0; dv < clf_fleet_device_count(e.f); dv++)
            parts += r.device_nodes[dv];
        ck_assert_msg(parts == want, "%s: %zu part runs counted, want %zu", CFGS[_i].label,
                      parts, want);
        clf_graph_node_report nr;
        ck_assert_ok(clf_graph_node_info(&nr, g, 0));
        ck_assert(nr.split && !nr.host && nr.device == CLF_GRAPH_ANY_DEVICE);
        ck_assert_ok(clf_graph_node_info(&nr, g, hn));
        ck_assert(nr.host);
        clf_graph_destroy(g);
        clf_array_destroy(x);
        clf_array_destroy(y);
        free(cur);
        free(next);
        free(got);
        free(mid);
    }
    test_env_close(&e);
}
END_TEST

/* In-place updates on alternating devices (manual placement), a host callback that reads
 * and writes a buffer between them, and a buffer written twice and then read. */
typedef struct host_io {
    clf_buffer *b;
    int calls;
} host_io;

static clf_status host_negate(void *user)
{
    host_io *h = user;
    int *x = malloc(N * sizeof *x);
    if (!x)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    clf_status st = clf_buffer_read(h->b, 0, N * sizeof *x, x);
    for (size_t i = 0; i < N && !st; i++)
        x[i] = -x[i];
    if (!st)
        st = clf_buffer_write(h->b, 0, N * sizeof *x, x);
    free(x);
    h->calls++;
    return st;
}

START_TEST(in_place)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    size_t nd = clf_fleet_device_count(e.f);
    int *a = data(4), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *bx = buf(e.f, 0, a), *by = buf(e.f, nd - 1, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    host_io h = {bx, 0};
    int k[3] = {1, 2, 3};
    for (int s = 0; s < 3; s++) {
        clf_graph_node_desc d = kdesc("bump", N);
        d.device = (size_t)s % nd;
        clf_arg ba[] = {CLF_BUF_INOUT(bx), CLF_SCALAR(&k[s])};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, ba, 2));
        if (s == 1) {
            clf_arg ha[] = {CLF_BUF_INOUT(bx)};
            ck_assert_ok(clf_graph_add_host(NULL, g, host_negate, &h, ha, 1));
        }
    }
    /* y written twice (by add1 on the last device, then by bump in place on device 0),
     * then x rewritten from y: x reads what two nodes wrote. */
    clf_graph_node_desc d1 = kdesc("add1", N), d2 = kdesc("bump", N), d3 = kdesc("add1", N);
    d1.device = nd - 1;
    d2.device = 0;
    int k4 = 4;
    clf_arg a1[] = {CLF_BUF_IN(bx), CLF_BUF_OUT(by)};
    clf_arg a2[] = {CLF_BUF_INOUT(by), CLF_SCALAR(&k4)};
    clf_arg a3[] = {CLF_BUF_IN(by), CLF_BUF_OUT(bx)};
    size_t last;
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d2, a2, 2));
    ck_assert_ok(clf_graph_add_kernel(&last, g, &d3, a3, 2));
    run_ok(g, CFGS[_i].label);
    ck_assert_int_eq(h.calls, 1);
    for (size_t i = 0; i < N; i++) {
        int v = a[i] * 3 + 1;
        v = -(v * 3 + 2);
        v = v * 3 + 3;
        int y = v + 1;
        y = y * 3 + 4;
        ref[i] = y + 1;
    }
    check_buf(bx, ref, "x", CFGS[_i].label);
    for (size_t i = 0; i < N; i++)
        ref[i] -= 1;
    check_buf(by, ref, "y", CFGS[_i].label);
    /* Manual placement is kept and said. */
    clf_graph_node_report nr;
    ck_assert_ok(clf_graph_node_info(&nr, g, 0));
    ck_assert(nr.manual && nr.device == 0);
    ck_assert_ok(clf_graph_node_info(&nr, g, last - 2));
    ck_assert_msg(nr.manual && nr.device == nd - 1, "%s: node %zu on %zu", CFGS[_i].label,
                  last - 2, nr.device);
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    if (nd > 1)
        ck_assert_msg(r.copies > 0 && r.copy_bytes >= r.copies * N * sizeof(int),
                      "%s: %zu copies, %llu bytes", CFGS[_i].label, r.copies,
                      (unsigned long long)r.copy_bytes);
    else
        ck_assert_uint_eq(r.copies, 0);
    clf_graph_destroy(g);
    clf_buffer_destroy(bx);
    clf_buffer_destroy(by);
    free(a);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* The same graph run with new inputs: the results are new each time, and the plan is
 * reused once the model has measured what it guessed (the first measurement of a kernel on
 * a device is dropped as cold, so that takes a run or two); a new node plans again. */
START_TEST(run_twice)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    int *a = data(5), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *ba = buf(e.f, 0, a), *bb = buf(e.f, dev_of(e.f, 1), NULL),
               *bc = buf(e.f, dev_of(e.f, 2), NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    int k = -3;
    clf_graph_node_desc d1 = kdesc("scale", N), d2 = kdesc("sum2", N);
    clf_arg a1[] = {CLF_BUF_IN(ba), CLF_BUF_OUT(bb), CLF_SCALAR(&k)};
    clf_arg a2[] = {CLF_BUF_IN(ba), CLF_BUF_IN(bb), CLF_BUF_OUT(bc)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d2, a2, 3));
    int reused = 0;
    for (int r = 0; r < 6; r++) {
        for (size_t i = 0; i < N; i++)
            a[i] += r * 11;
        ck_assert_ok(clf_buffer_write(ba, 0, N * sizeof(int), a));
        run_ok(g, CFGS[_i].label);
        for (size_t i = 0; i < N; i++)
            ref[i] = a[i] - 3 * a[i];
        check_buf(bc, ref, "c", CFGS[_i].label);
        clf_graph_report rep;
        ck_assert_ok(clf_graph_report_get(&rep, g));
        if (r == 0)
            ck_assert_int_eq(rep.plan_reused, 0);
        reused += rep.plan_reused;
        ck_assert_uint_eq(rep.runs, (size_t)r + 1);
    }
    ck_assert_msg(reused > 0, "%s: the plan was never reused in 6 runs", CFGS[_i].label);
    clf_graph_node_desc d3 = kdesc("add1", N);
    clf_arg a3[] = {CLF_BUF_IN(bc), CLF_BUF_OUT(bb)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d3, a3, 2));
    run_ok(g, CFGS[_i].label);
    clf_graph_report rep;
    ck_assert_ok(clf_graph_report_get(&rep, g));
    ck_assert_int_eq(rep.plan_reused, 0);
    for (size_t i = 0; i < N; i++)
        ref[i] += 1;
    check_buf(bb, ref, "b", CFGS[_i].label);
    clf_graph_destroy(g);
    clf_buffer_destroy(ba);
    clf_buffer_destroy(bb);
    clf_buffer_destroy(bc);
    free(a);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* CLF_GRAPH_KEEP_COPIES: the copies a run leaves stay current for the next, until the
 * caller says the host wrote a buffer. Each tile's node runs by hand on the device after its
 * buffers' own, so every input is remote: the counts of copies are exact. */
START_TEST(keep_copies)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    size_t nd = clf_fleet_device_count(e.f);
    enum { TILES = 4 };
    int *w = data(20), *xs[TILES], *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *bw = buf(e.f, 0, w), *bx[TILES], *by[TILES];
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    ck_assert_status(clf_graph_set_flags(g, 1u << 5), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_graph_set_flags(NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_graph_set_flags(g, CLF_GRAPH_KEEP_COPIES));
    for (size_t t = 0; t < TILES; t++) {
        xs[t] = data(30 + (uint32_t)t);
        bx[t] = buf(e.f, t % nd, xs[t]);
        by[t] = buf(e.f, t % nd, NULL);
        clf_graph_node_desc d = kdesc("sum2", N);
        d.device = (t + 1) % nd;
        clf_arg a[] = {CLF_BUF_IN(bx[t]), CLF_BUF_IN(bw), CLF_BUF_OUT(by[t])};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, a, 3));
    }
    ck_assert_status(clf_graph_buffer_changed(g, NULL), CLF_ERROR_NULL_POINTER);
    clf_buffer *stranger = buf(e.f, 0, NULL);
    ck_assert_status(clf_graph_buffer_changed(g, stranger), CLF_ERROR_NOT_FOUND);
    clf_buffer_destroy(stranger);
    /* Run 1: w to every device but its own, each x to its node's device, each y back.
     * Run 2: only the ys back. Run 3, after w changed on the host: w again, and the ys. */
    size_t want[3] = {2 * TILES + nd - 1, TILES, TILES + nd - 1};
    for (int r = 0; r < 3; r++) {
        if (r == 2) {
            for (size_t i = 0; i < N; i++)
                w[i] = w[i] * 2 - 7;
            ck_assert_ok(clf_buffer_write(bw, 0, N * sizeof(int), w));
            ck_assert_ok(clf_graph_buffer_changed(g, bw));
        }
        run_ok(g, CFGS[_i].label);
        for (size_t t = 0; t < TILES; t++) {
            for (size_t i = 0; i < N; i++)
                ref[i] = xs[t][i] + w[i];
            check_buf(by[t], ref, "y", CFGS[_i].label);
        }
        clf_graph_report rep;
        ck_assert_ok(clf_graph_report_get(&rep, g));
        size_t expect_copies = nd > 1 ? want[r] : 0;
        ck_assert_msg(rep.copies == expect_copies, "%s: run %d: %zu copies, want %zu",
                      CFGS[_i].label, r + 1, rep.copies, expect_copies);
    }
    clf_graph_destroy(g);
    clf_buffer_destroy(bw);
    for (size_t t = 0; t < TILES; t++) {
        clf_buffer_destroy(bx[t]);
        clf_buffer_destroy(by[t]);
        free(xs[t]);
    }
    free(w);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* A host node that holds the run until told: meanwhile the graph refuses changes. */
typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int open;
} gate;

static clf_status wait_gate(void *user)
{
    gate *gt = user;
    pthread_mutex_lock(&gt->m);
    while (!gt->open)
        pthread_cond_wait(&gt->cv, &gt->m);
    pthread_mutex_unlock(&gt->m);
    return CLF_SUCCESS;
}

static clf_status fail_cb(void *user)
{
    (void)user;
    return CLF_ERROR_INVALID_ARGUMENT;
}

START_TEST(bad_input)
{
    test_env e;
    test_env_open(&e, &CFGS[1], SRC);
    clf_fleet *other = test_fleet(TEST_CPUS ";index=0", 0);
    clf_buffer *ob = NULL, *b = buf(e.f, 0, NULL), *c = buf(e.f, 1, NULL);
    ck_assert_ok(clf_buffer_create(&ob, other, 0, 64, 0));
    clf_graph *g = NULL;
    ck_assert_status(clf_graph_create(NULL, e.f, e.p), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_create(&g, NULL, e.p), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_create(&g, e.f, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_create(&g, other, e.p), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc d = kdesc("add1", N);
    clf_arg ok[] = {CLF_BUF_IN(b), CLF_BUF_OUT(c)};
    ck_assert_status(clf_graph_add_kernel(NULL, NULL, &d, ok, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_add_kernel(NULL, g, NULL, ok, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, NULL, 2), CLF_ERROR_NULL_POINTER);
    clf_graph_node_desc bad = d;
    bad.version = 99;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    bad = d;
    bad.kernel = NULL;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, ok, 2), CLF_ERROR_NULL_POINTER);
    bad = d;
    bad.dims = 4;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    bad = d;
    bad.global[0] = 0;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, ok, 2), CLF_ERROR_ZERO_SIZE);
    bad = d;
    bad.reserved[1] = 1;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, ok, 2), CLF_ERROR_INVALID_ARGUMENT);
    bad = d;
    bad.device = 2;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, ok, 2), CLF_ERROR_OUT_OF_RANGE);
    clf_arg foreign[] = {CLF_BUF_IN(ob), CLF_BUF_OUT(c)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, foreign, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg nullbuf[] = {CLF_BUF_IN(NULL), CLF_BUF_OUT(c)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, nullbuf, 2), CLF_ERROR_NULL_POINTER);
    clf_arg nomode[] = {CLF__BUF(b, 0), CLF_BUF_OUT(c)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, nomode, 2), CLF_ERROR_INVALID_ARGUMENT);
    int host[4];
    clf_arg hostarr[] = {CLF_IN(host, sizeof host, sizeof host[0]), CLF_BUF_OUT(c)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, hostarr, 2), CLF_ERROR_UNSUPPORTED);
    /* Arrays: mixed with buffers, placed by hand, a footprint wider than the halo or on a
     * written array, an array of another fleet. */
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = 4;
    ad.shape[0] = N;
    ad.halo_before = ad.halo_after = 1;
    clf_array *arr = NULL, *oarr = NULL;
    ck_assert_ok(clf_array_create(&arr, e.f, &ad));
    ck_assert_ok(clf_array_create(&oarr, other, &ad));
    clf_arg mixed[] = {CLF_ARRAY_IN(arr), CLF_BUF_OUT(c)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, mixed, 2), CLF_ERROR_UNSUPPORTED);
    clf_arg arrs[] = {CLF_ARRAY_IN(arr), CLF_ARRAY_OUT(arr)};
    bad = d;
    bad.device = 0;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &bad, arrs, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg wide[] = {CLF_ARRAY_IN_HALO(arr, 2, 1), CLF_ARRAY_OUT(arr)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, wide, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg whalo[] = {CLF__ARG(CLF_ARG_KIND_ARRAY, CLF_ARG_WRITE, arr, 0, 0, 1, 1)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, whalo, 1), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg oarrs[] = {CLF_ARRAY_IN(oarr), CLF_ARRAY_OUT(arr)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, oarrs, 2), CLF_ERROR_INVALID_ARGUMENT);
    /* Host nodes: NULL callback, a scalar among the accesses. */
    int k = 1;
    clf_arg hs[] = {CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_host(NULL, g, NULL, NULL, NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_add_host(NULL, g, fail_cb, NULL, hs, 1), CLF_ERROR_UNSUPPORTED);
    /* A buffer named only by a refused node may go at once: the graph kept nothing of it
     * (the runs below would touch it otherwise; the sanitizer build sees that). */
    clf_buffer *gone = buf(e.f, 0, NULL);
    clf_arg refused[] = {CLF_BUF_IN(gone), CLF_ARRAY_OUT(arr)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, refused, 2), CLF_ERROR_UNSUPPORTED);
    clf_buffer_destroy(gone);
    /* Nothing was recorded by the refused calls: an empty graph does not run. */
    ck_assert_status(clf_graph_run(g, NULL), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_graph_run(NULL, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_wait(NULL), CLF_ERROR_NULL_POINTER);
    clf_graph_node_report nr;
    ck_assert_status(clf_graph_node_info(&nr, g, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_graph_report_get(NULL, g), CLF_ERROR_NULL_POINTER);

    /* While a run is in flight: no recording, no second run, no report. */
    gate gt = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    clf_arg gb[] = {CLF_BUF_IN(b)};
    ck_assert_ok(clf_graph_add_host(NULL, g, wait_gate, &gt, gb, 1));
    test_watchdog(60);
    ck_assert_ok(clf_graph_run(g, NULL));
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, ok, 2), CLF_ERROR_BUSY);
    ck_assert_status(clf_graph_run(g, NULL), CLF_ERROR_BUSY);
    clf_graph_report r;
    ck_assert_status(clf_graph_report_get(&r, g), CLF_ERROR_BUSY);
    pthread_mutex_lock(&gt.m);
    gt.open = 1;
    pthread_cond_broadcast(&gt.cv);
    pthread_mutex_unlock(&gt.m);
    ck_assert_ok(clf_graph_wait(g));

    /* A kernel that does not exist, and a failing callback: the run fails, naming the node. */
    clf_graph_node_desc nk = kdesc("no_such_kernel", N);
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &nk, ok, 2));
    ck_assert_ok(clf_graph_run(g, NULL));
    clf_status st = clf_graph_wait(g);
    ck_assert_msg(st != CLF_SUCCESS && strstr(clf_last_error(), "graph node 1"),
                  "%s: %s", clf_status_name(st), clf_last_error());
    clf_graph_destroy(g);
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    ck_assert_ok(clf_graph_add_host(NULL, g, fail_cb, NULL, gb, 1));
    clf_event *ev = NULL;
    ck_assert_ok(clf_graph_run(g, &ev));
    ck_assert_status(clf_event_wait(ev), CLF_ERROR_INVALID_ARGUMENT);
    clf_event_release(ev);
    st = clf_graph_wait(g);
    ck_assert_msg(st == CLF_ERROR_INVALID_ARGUMENT && strstr(clf_last_error(), "host callback"),
                  "%s: %s", clf_status_name(st), clf_last_error());
    test_watchdog_off();
    clf_graph_destroy(g);
    clf_graph_destroy(NULL);
    clf_array_destroy(arr);
    clf_array_destroy(oarr);
    clf_buffer_destroy(b);
    clf_buffer_destroy(c);
    clf_buffer_destroy(ob);
    clf_fleet_destroy(other);
    test_env_close(&e);
}
END_TEST

/* A device that fails mid-graph: the run fails with an error, it does not hang. */
START_TEST(device_fault)
{
    clf_fleet *f = test_fault_fleet(FLEET2, "device=*,call=enqueue,after=3");
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    int *a = data(6);
    clf_buffer *b[2] = {buf(f, 0, a), buf(f, 1, NULL)};
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, f, p));
    clf_graph_node_desc d = kdesc("add1", N);
    for (int s = 0; s < 10; s++) {
        clf_arg args[] = {CLF_BUF_IN(b[s % 2]), CLF_BUF_OUT(b[(s + 1) % 2])};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, 2));
    }
    test_watchdog(60);
    ck_assert_ok(clf_graph_run(g, NULL));
    clf_status st = clf_graph_wait(g);
    test_watchdog_off();
    ck_assert_msg(st != CLF_SUCCESS, "a run through a failing device succeeded");
    ck_assert_msg(strstr(clf_last_error(), "graph node"), "%s", clf_last_error());
    clf_graph_destroy(g);
    clf_buffer_destroy(b[0]);
    clf_buffer_destroy(b[1]);
    free(a);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* A device lost mid-graph (the fault rule's `lost`, counted by kernel enqueues on device 1
 * of the three PoCL devices): its nodes go to the others, and what only it held is
 * recomputed from its producers. The log says which node was re-run: counted in a static,
 * since a test that fails part-way leaves the handler set for the next. */
static struct {
    pthread_mutex_t lock;
    int reruns, moves;
} fault_log = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

static void count_log(void *user, clf_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    pthread_mutex_lock(&fault_log.lock);
    fault_log.reruns += strstr(msg, "re-run on device") != NULL;
    fault_log.moves += strstr(msg, "moved from failed device") != NULL;
    pthread_mutex_unlock(&fault_log.lock);
}

typedef struct fault_env {
    clf_fleet *f;
    clf_program *p;
} fault_env;

/* A fleet of the three PoCL devices whose device 1 is lost at its kernel enqueue after
 * `after` of them, with the debug log counted. */
static void fault_open(fault_env *e, unsigned after)
{
    char rule[96];
    snprintf(rule, sizeof rule, "device=1,call=enqueue,after=%u,lost", after);
    memset(e, 0, sizeof *e);
    clf_log_set_handler(NULL, NULL);
    setenv("CLFLEET_LOG", "debug", 1);
    e->f = test_fault_fleet(TEST_CPUS, rule);
    unsetenv("CLFLEET_LOG");
    ck_assert_uint_eq(clf_fleet_device_count(e->f), 3);
    ck_assert_ok(clf_program_build_source(&e->p, e->f, SRC, NULL));
    pthread_mutex_lock(&fault_log.lock);
    fault_log.reruns = fault_log.moves = 0;
    pthread_mutex_unlock(&fault_log.lock);
    clf_log_set_handler(count_log, NULL);
}

static void fault_close(fault_env *e)
{
    clf_log_set_handler(NULL, NULL);
    clf_program_destroy(e->p);
    clf_fleet_destroy(e->f);
}

static clf_graph_node_desc on(const char *kernel, size_t dev)
{
    clf_graph_node_desc d = kdesc(kernel, N);
    d.device = dev;
    return d;
}

/* Run under a watchdog: the run must end, never hang. */
static clf_status fault_run(clf_graph *g)
{
    test_watchdog(120);
    clf_status st = clf_graph_run(g, NULL);
    if (st == CLF_SUCCESS)
        st = clf_graph_wait(g);
    test_watchdog_off();
    return st;
}

/* A chain through device 1: b1 and b2 only ever on it when it is lost at node 2. */
START_TEST(fault_chain)
{
    fault_env e;
    fault_open(&e, 2);
    int *a = data(11), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *b[5];
    for (size_t i = 0; i < 5; i++)
        b[i] = buf(e.f, 0, i ? NULL : a);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    int k7 = 7, k3 = 3;
    clf_graph_node_desc d0 = on("add1", 1), d1 = on("scale", 1), d2 = on("add1", 1),
                        d3 = on("scale", 2);
    clf_arg a0[] = {CLF_BUF_IN(b[0]), CLF_BUF_OUT(b[1])};
    clf_arg a1[] = {CLF_BUF_IN(b[1]), CLF_BUF_OUT(b[2]), CLF_SCALAR(&k7)};
    clf_arg a2[] = {CLF_BUF_IN(b[2]), CLF_BUF_OUT(b[3])};
    clf_arg a3[] = {CLF_BUF_IN(b[3]), CLF_BUF_OUT(b[4]), CLF_SCALAR(&k3)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d0, a0, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d2, a2, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d3, a3, 3));
    clf_status st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "a run that lost device 1: %s: %s", clf_status_name(st),
                  clf_last_error());
    ck_assert(clf_device_is_failed(e.f, 1));
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] + 1;
    check_buf(b[1], ref, "b1", "fault chain");
    for (size_t i = 0; i < N; i++)
        ref[i] = (a[i] + 1) * 7;
    check_buf(b[2], ref, "b2", "fault chain");
    for (size_t i = 0; i < N; i++)
        ref[i] = (a[i] + 1) * 7 + 1;
    check_buf(b[3], ref, "b3", "fault chain");
    for (size_t i = 0; i < N; i++)
        ref[i] = ((a[i] + 1) * 7 + 1) * 3;
    check_buf(b[4], ref, "b4", "fault chain");
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    /* Nodes 0 and 1 wrote what only device 1 held: re-run; node 2 moved. */
    ck_assert_uint_eq(r.fault_rerun, 2);
    ck_assert_uint_eq(r.fault_moved, 1);
    ck_assert_uint_eq(r.device_nodes[1], 0);
    ck_assert_uint_eq(r.lane_nodes, 0); /* a recovery needs the run's own enqueues */
    for (size_t i = 0; i < 2; i++)
        ck_assert_uint_eq(r.reserved[i], 0);
    clf_graph_node_report nr;
    ck_assert_ok(clf_graph_node_info(&nr, g, 0));
    ck_assert_uint_ne(nr.device, 1);
    ck_assert_msg(strstr(nr.why, "re-run"), "node 0: %s", nr.why);
    ck_assert_ok(clf_graph_node_info(&nr, g, 2));
    ck_assert_uint_ne(nr.device, 1);
    ck_assert_msg(strstr(nr.why, "moved from device 1"), "node 2: %s", nr.why);
    pthread_mutex_lock(&fault_log.lock);
    int reruns = fault_log.reruns, moves = fault_log.moves;
    pthread_mutex_unlock(&fault_log.lock);
    ck_assert_int_eq(reruns, 2);
    ck_assert_int_ge(moves, 1);
    /* The next run plans without device 1 from the start: nothing to recover. */
    st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "the run after: %s: %s", clf_status_name(st),
                  clf_last_error());
    check_buf(b[4], ref, "b4 (second run)", "fault chain");
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.fault_rerun, 0);
    ck_assert_uint_eq(r.fault_moved, 0);
    clf_graph_destroy(g);
    for (size_t i = 0; i < 5; i++)
        clf_buffer_destroy(b[i]);
    free(a);
    free(ref);
    fault_close(&e);
}
END_TEST

/* A run that recovered from a lost device planned again mid-run, then put the nodes queued
 * before the loss back where they ran: that plan is no plan of the next run's, even when its
 * key (the shapes, the failed devices, what the model knows) is the same. add1 is measured
 * on every device first, so that the run with the loss teaches the model nothing new. */
START_TEST(fault_replan)
{
    fault_env e;
    fault_open(&e, 3); /* the warm-up's enqueue on device 1, nodes 0 and 1: node 2 lost */
    int *a = data(17), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *b[4];
    for (size_t i = 0; i < 4; i++)
        b[i] = buf(e.f, 0, i ? NULL : a);
    clf_graph *w = NULL;
    ck_assert_ok(clf_graph_create(&w, e.f, e.p));
    clf_graph_node_desc wd[3] = {on("add1", 0), on("add1", 1), on("add1", 2)};
    clf_arg wa[] = {CLF_BUF_IN(b[0]), CLF_BUF_OUT(b[1])};
    for (size_t k = 0; k < 3; k++) /* one after the other (write after write) */
        ck_assert_ok(clf_graph_add_kernel(NULL, w, &wd[k], wa, 2));
    ck_assert_ok(fault_run(w));
    clf_graph_destroy(w);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc d[4] = {on("add1", 1), on("add1", 1), on("add1", 1), on("add1", 2)};
    clf_arg args[3][2] = {{CLF_BUF_IN(b[0]), CLF_BUF_OUT(b[1])},
                          {CLF_BUF_IN(b[1]), CLF_BUF_OUT(b[2])},
                          {CLF_BUF_IN(b[2]), CLF_BUF_OUT(b[3])}};
    for (size_t k = 0; k < 3; k++)
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d[k], args[k], 2));
    clf_arg a3[] = {CLF_BUF_IN(b[3]), CLF_BUF_OUT(b[0])}; /* in place of b0: 4 added */
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d[3], a3, 2));
    clf_status st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "a run that lost device 1: %s: %s", clf_status_name(st),
                  clf_last_error());
    ck_assert(clf_device_is_failed(e.f, 1));
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.fault_moved, 1);
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] + 4;
    check_buf(b[0], ref, "b0", "fault replan");
    st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "the run after: %s: %s", clf_status_name(st),
                  clf_last_error());
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] + 8;
    check_buf(b[0], ref, "b0 (the run after)", "fault replan");
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.fault_moved, 0);
    ck_assert_msg(!r.plan_reused, "the run after a recovery reused the plan made mid-run");
    clf_graph_node_report nr;
    ck_assert_ok(clf_graph_node_info(&nr, g, 2));
    ck_assert_uint_ne(nr.device, 1);
    ck_assert_msg(!strstr(nr.why, "moved from device"), "node 2, the run after: %s", nr.why);
    clf_graph_destroy(g);
    for (size_t i = 0; i < 4; i++)
        clf_buffer_destroy(b[i]);
    free(a);
    free(ref);
    fault_close(&e);
}
END_TEST

/* A diamond whose device 1 held one side (b1, b3) when lost at the join: b4 = a*5 + (a+1)*2. */
START_TEST(fault_diamond)
{
    fault_env e;
    fault_open(&e, 2);
    int *a = data(12), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *b[5];
    for (size_t i = 0; i < 5; i++)
        b[i] = buf(e.f, i == 2 ? 2 : 0, i ? NULL : a);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    int k5 = 5, k2 = 2;
    clf_graph_node_desc d0 = on("add1", 1), d1 = on("scale", 2), d2 = on("scale", 1),
                        d3 = on("sum2", 1);
    clf_arg a0[] = {CLF_BUF_IN(b[0]), CLF_BUF_OUT(b[1])};
    clf_arg a1[] = {CLF_BUF_IN(b[0]), CLF_BUF_OUT(b[2]), CLF_SCALAR(&k5)};
    clf_arg a2[] = {CLF_BUF_IN(b[1]), CLF_BUF_OUT(b[3]), CLF_SCALAR(&k2)};
    clf_arg a3[] = {CLF_BUF_IN(b[2]), CLF_BUF_IN(b[3]), CLF_BUF_OUT(b[4])};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d0, a0, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d2, a2, 3));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d3, a3, 3));
    clf_status st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "a run that lost device 1: %s: %s", clf_status_name(st),
                  clf_last_error());
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] * 5 + (a[i] + 1) * 2;
    check_buf(b[4], ref, "b4", "fault diamond");
    for (size_t i = 0; i < N; i++)
        ref[i] = (a[i] + 1) * 2;
    check_buf(b[3], ref, "b3", "fault diamond");
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.fault_rerun, 2); /* nodes 0 and 2; node 1's b2 lives on device 2 */
    ck_assert_uint_eq(r.fault_moved, 1);
    clf_graph_destroy(g);
    for (size_t i = 0; i < 5; i++)
        clf_buffer_destroy(b[i]);
    free(a);
    free(ref);
    fault_close(&e);
}
END_TEST

/* In-place updates on device 1, lost after two: re-run from the version the first one read
 * (still in the caller's buffer on device 0). b1 = (a*3+1)*3+2, b2 = b1 + 1. */
START_TEST(fault_in_place)
{
    fault_env e;
    fault_open(&e, 2);
    int *a = data(13), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *b1 = buf(e.f, 0, a), *b2 = buf(e.f, 0, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    int k1 = 1, k2 = 2;
    clf_graph_node_desc d0 = on("bump", 1), d1 = on("bump", 1), d2 = on("add1", 1);
    clf_arg a0[] = {CLF_BUF_INOUT(b1), CLF_SCALAR(&k1)};
    clf_arg a1[] = {CLF_BUF_INOUT(b1), CLF_SCALAR(&k2)};
    clf_arg a2[] = {CLF_BUF_IN(b1), CLF_BUF_OUT(b2)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d0, a0, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d2, a2, 2));
    clf_status st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "a run that lost device 1: %s: %s", clf_status_name(st),
                  clf_last_error());
    for (size_t i = 0; i < N; i++)
        ref[i] = (a[i] * 3 + 1) * 3 + 2;
    check_buf(b1, ref, "b1", "fault in place");
    for (size_t i = 0; i < N; i++)
        ref[i] += 1;
    check_buf(b2, ref, "b2", "fault in place");
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.fault_rerun, 2);
    ck_assert_uint_eq(r.fault_moved, 1);
    clf_graph_destroy(g);
    clf_buffer_destroy(b1);
    clf_buffer_destroy(b2);
    free(a);
    free(ref);
    fault_close(&e);
}
END_TEST

/* Two buffers written in turn by twelve nodes placed two by two round the three devices
 * (b[s % 2] -> b[(s + 1) % 2] on device (s / 2) % 3), device 1 lost at its fourth kernel
 * (node 9): each buffer has had several versions, the copies on the live devices hold
 * older ones, and what node 8 left only on device 1 is recomputed from what node 7 left on
 * device 0. */
START_TEST(fault_ping_pong)
{
    fault_env e;
    fault_open(&e, 3);
    int *a = data(15), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *b[2] = {buf(e.f, 0, a), buf(e.f, 2, NULL)};
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    for (size_t s = 0; s < 12; s++) {
        clf_graph_node_desc d = on("add1", (s / 2) % 3);
        clf_arg args[] = {CLF_BUF_IN(b[s % 2]), CLF_BUF_OUT(b[(s + 1) % 2])};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, 2));
    }
    clf_status st = fault_run(g);
    ck_assert_msg(st == CLF_SUCCESS, "a run that lost device 1: %s: %s", clf_status_name(st),
                  clf_last_error());
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] + 12;
    check_buf(b[0], ref, "b0", "fault ping-pong");
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] + 11;
    check_buf(b[1], ref, "b1", "fault ping-pong");
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    /* Node 9 moved; node 8's output (b1, read by node 9) was only on device 1. */
    ck_assert_uint_eq(r.fault_moved, 1);
    ck_assert_uint_eq(r.fault_rerun, 1);
    clf_graph_destroy(g);
    clf_buffer_destroy(b[0]);
    clf_buffer_destroy(b[1]);
    free(a);
    free(ref);
    fault_close(&e);
}
END_TEST

/* The caller's buffer lives on the lost device: nothing can give it back. The run fails with
 * CLF_ERROR_DEVICE_FAILED, naming the data and the node. */
START_TEST(fault_unrecoverable)
{
    fault_env e;
    fault_open(&e, 1);
    int *a = data(14);
    clf_buffer *b0 = buf(e.f, 0, a), *b1 = buf(e.f, 1, NULL), *b2 = buf(e.f, 0, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc d0 = on("add1", 1), d1 = on("add1", 1);
    clf_arg a0[] = {CLF_BUF_IN(b0), CLF_BUF_OUT(b1)};
    clf_arg a1[] = {CLF_BUF_IN(b1), CLF_BUF_OUT(b2)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d0, a0, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, a1, 2));
    clf_status st = fault_run(g);
    ck_assert_msg(st == CLF_ERROR_DEVICE_FAILED, "want CLF_ERROR_DEVICE_FAILED, got %s: %s",
                  clf_status_name(st), clf_last_error());
    const char *msg = clf_last_error();
    ck_assert_msg(strstr(msg, "buffer data 1") && strstr(msg, "node 1") &&
                      strstr(msg, "device 1"),
                  "the message names the data, the node and the device: %s", msg);
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.fault_rerun, 0);
    clf_graph_destroy(g);
    clf_buffer_destroy(b0);
    clf_buffer_destroy(b1);
    clf_buffer_destroy(b2);
    free(a);
    fault_close(&e);
}
END_TEST

/* With a trace, the run and its host callbacks are slices of the timeline. */
static clf_status noop(void *user)
{
    (void)user;
    return CLF_SUCCESS;
}

START_TEST(traced)
{
    char path[] = "/tmp/clf-graph-trace-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = test_selection(FLEET2);
    o.trace = path;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    int *a = data(9);
    clf_buffer *x = buf(f, 0, a), *y = buf(f, 1, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, f, p));
    clf_graph_node_desc d = kdesc("add1", N);
    clf_arg args[] = {CLF_BUF_IN(x), CLF_BUF_OUT(y)};
    clf_arg ha[] = {CLF_BUF_IN(y)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, 2));
    ck_assert_ok(clf_graph_add_host(NULL, g, noop, NULL, ha, 1));
    run_ok(g, "traced");
    clf_graph_destroy(g);
    clf_buffer_destroy(x);
    clf_buffer_destroy(y);
    clf_program_destroy(p);
    clf_fleet_destroy(f); /* writes the trace */
    FILE *fp = fopen(path, "r");
    ck_assert(fp);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    text[n] = 0;
    fclose(fp);
    unlink(path);
    ck_assert_msg(strstr(text, "graph run (2 nodes"), "no graph run in the trace");
    ck_assert_msg(strstr(text, "graph node 1: host callback"), "no host node in the trace");
    ck_assert_msg(strstr(text, "add1"), "no kernel in the trace");
    free(a);
}
END_TEST

/* The caller's fleet reference may go first: the graph, like buffers and programs, holds one,
 * and runs on. */
START_TEST(fleet_first)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    int *a = data(8), *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    clf_buffer *x = buf(f, 0, a), *y = buf(f, 1, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, f, p));
    clf_graph_node_desc d = kdesc("add1", N);
    clf_arg args[] = {CLF_BUF_IN(x), CLF_BUF_OUT(y)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, 2));
    clf_fleet_destroy(f);
    run_ok(g, "fleet destroyed first");
    for (size_t i = 0; i < N; i++)
        ref[i] = a[i] + 1;
    check_buf(y, ref, "y", "fleet destroyed first");
    clf_graph_destroy(g);
    clf_buffer_destroy(x);
    clf_buffer_destroy(y);
    clf_program_destroy(p);
    free(a);
    free(ref);
}
END_TEST

/*
 * A pair made unequal by $CLFLEET_SIMULATE (rule, on FLEET2) with a graph of `nodes`
 * independent compute-bound spin nodes (milliseconds each, so that the simulated slowdown is
 * in the kernels' time and not lost in a node's fixed costs: a few-microsecond kernel 20x
 * slower can rightly be worth a second device), inputs and outputs alternating between the
 * devices. Both devices are measured first: each run after the first places by what it
 * learned, so runs of nodes placed by hand on each device (three: the first sample of each
 * is dropped as cold) come before the graph's own.
 */
enum { SPIN_PAIR_MAX = 12 };
typedef struct spin_pair {
    clf_fleet *f;
    clf_program *p;
    clf_graph *g;
    clf_buffer *in[SPIN_PAIR_MAX], *out[SPIN_PAIR_MAX];
    int *a;
    size_t nodes;
    unsigned chunk; /* the spin kernel's rounds */
} spin_pair;

static void spin_pair_make(spin_pair *s, const char *rule, size_t nodes, uint32_t salt,
                           const char *label)
{
    ck_assert_uint_le(nodes, SPIN_PAIR_MAX);
    memset(s, 0, sizeof *s);
    setenv("CLFLEET_SIMULATE", rule, 1);
    s->f = test_fleet(FLEET2, 0);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_ok(clf_program_build_source(&s->p, s->f, SRC, NULL));
    s->a = data(salt);
    s->nodes = nodes;
    s->chunk = 2000;
    ck_assert_ok(clf_graph_create(&s->g, s->f, s->p));
    clf_graph_node_desc d = kdesc("spin", N);
    for (size_t i = 0; i < nodes; i++) {
        s->in[i] = buf(s->f, i % 2, s->a);
        s->out[i] = buf(s->f, i % 2, NULL);
        clf_arg args[] = {CLF_BUF_IN(s->in[i]), CLF_BUF_OUT(s->out[i]), CLF_SCALAR(&s->chunk)};
        ck_assert_ok(clf_graph_add_kernel(NULL, s->g, &d, args, 3));
    }
    clf_graph *probe = NULL;
    ck_assert_ok(clf_graph_create(&probe, s->f, s->p));
    for (size_t dev = 0; dev < 2; dev++) {
        clf_graph_node_desc pd = d;
        pd.device = dev;
        clf_arg args[] = {CLF_BUF_IN(s->in[dev]), CLF_BUF_OUT(s->out[dev]),
                          CLF_SCALAR(&s->chunk)};
        ck_assert_ok(clf_graph_add_kernel(NULL, probe, &pd, args, 3));
    }
    char what[64];
    snprintf(what, sizeof what, "%s: probe", label);
    for (int r = 0; r < 3; r++)
        run_ok(probe, what);
    clf_graph_destroy(probe);
}

/* Every output against the sequential spin of the input, bit for bit; then everything freed. */
static void spin_pair_check_free(spin_pair *s, const char *label)
{
    int *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    for (size_t j = 0; j < N; j++) {
        unsigned x = (unsigned)s->a[j];
        for (unsigned r = 0; r < s->chunk; r++)
            x = x * 1103515245u + 12345u;
        ref[j] = (int)x;
    }
    for (size_t i = 0; i < s->nodes; i++)
        check_buf(s->out[i], ref, "out", label);
    clf_graph_destroy(s->g);
    for (size_t i = 0; i < s->nodes; i++) {
        clf_buffer_destroy(s->in[i]);
        clf_buffer_destroy(s->out[i]);
    }
    free(s->a);
    free(ref);
    clf_program_destroy(s->p);
    clf_fleet_destroy(s->f);
}

/* A 20:1 pair ($CLFLEET_SIMULATE on FLEET2): once the model has measured both devices, the
 * independent nodes of a graph go to the fast one (each would take the slow one longer
 * than all of them take the fast one), and the report and the debug reason say so. */
START_TEST(simulated_pair)
{
    spin_pair sp;
    spin_pair_make(&sp, "device=1,compute=0.05", 6, 7, "simulated pair");
    clf_graph *g = sp.g;
    enum { NODES = 6 };
    /* At least two runs, and a few more while a run still puts a node on the slow device:
     * under a loaded host (make -j check runs suites side by side) one measured sample can
     * be late, and the model's medians settle within a few runs. */
    clf_graph_report rep;
    int runs = 0;
    do {
        run_ok(g, "simulated pair");
        ck_assert_ok(clf_graph_report_get(&rep, g));
    } while (++runs < 2 || (rep.device_nodes[1] != 0 && runs < 8));
    ck_assert_msg(!rep.guessed, "simulated pair: still guessing after the probe runs");
    if (UNDER_SANITIZER && rep.device_nodes[1] != 0) {
        /* Instrumented host code makes a node's fixed cost (its copies, the run's own work)
         * rival the kernel the simulator slows: giving one node to the slow device can then
         * be the least predicted finish. Most still go to the fast device. */
        fprintf(stderr, "simulated pair under a sanitizer: %zu nodes on the fast device, %zu "
                "on the slow one\n", rep.device_nodes[0], rep.device_nodes[1]);
        ck_assert_msg(rep.device_nodes[0] > rep.device_nodes[1],
                      "simulated pair: %zu nodes on the fast device, %zu on the slower one",
                      rep.device_nodes[0], rep.device_nodes[1]);
    } else {
        ck_assert_msg(rep.device_nodes[1] == 0 && rep.device_nodes[0] == NODES,
                      "simulated pair: %zu nodes on the fast device, %zu on the 20x slower one",
                      rep.device_nodes[0], rep.device_nodes[1]);
        clf_graph_node_report nr;
        ck_assert_ok(clf_graph_node_info(&nr, g, 1));
        ck_assert_msg(nr.device == 0 && strstr(nr.why, "device 1"), "%zu: %s", nr.device,
                      nr.why);
    }
    spin_pair_check_free(&sp, "simulated pair");
}
END_TEST

/* A 2:1 pair ($CLFLEET_SIMULATE on FLEET2, the slow device's completions held back as long
 * as its kernels ran): once the model has measured both devices, independent nodes of one
 * kernel are dealt about 2:1, as their predicted finish says. The plan must see the held-back
 * time (a plan that took the slow device's kernels at their real speed would deal them 6:6)
 * and must not write the slower device off as it does a 20x slower one (0 nodes): of 12
 * nodes, the slow device takes 2 to 5 (4 is the ideal share). The results are checked
 * against the sequential product, bit for bit. */
START_TEST(simulated_pair_2to1)
{
    spin_pair sp;
    spin_pair_make(&sp, "device=1,compute=0.5", 12, 11, "2:1 pair");
    clf_graph *g = sp.g;
    enum { NODES = 12 };
    /* A few more runs while the share is outside the range: on a loaded host one run's
     * samples can be late, and the model's medians settle within a few runs. */
    clf_graph_report rep;
    int runs = 0;
    do {
        run_ok(g, "2:1 pair");
        ck_assert_ok(clf_graph_report_get(&rep, g));
    } while (++runs < 2 || ((rep.device_nodes[1] < 2 || rep.device_nodes[1] > 5) && runs < 8));
    ck_assert_msg(!rep.guessed, "2:1 pair: still guessing after the probe runs");
    ck_assert_msg(rep.device_nodes[0] + rep.device_nodes[1] == NODES,
                  "2:1 pair: %zu + %zu nodes placed of %d", rep.device_nodes[0],
                  rep.device_nodes[1], NODES);
    ck_assert_msg(rep.device_nodes[1] >= 2 && rep.device_nodes[1] <= 5,
                  "2:1 pair after %d runs: %zu nodes on the fast device, %zu on the 2x slower "
                  "one (want 2 to 5 of %d there)", runs, rep.device_nodes[0],
                  rep.device_nodes[1], NODES);
    spin_pair_check_free(&sp, "2:1 pair");
}
END_TEST

/* The learned predictions on a 50:1 pair ($CLFLEET_SIMULATE on FLEET2), on a fleet without a
 * cache directory (a memory-only model: nothing from earlier processes). Probe runs measure
 * the slow device at the graph's work and the fast one at a twentieth of it: the key of a
 * node holds its shape (range, buffer sizes), not its scalars, so the probes' samples stand
 * for the graph's nodes, and the fast device's predictions start 20x short. The first run
 * then measures them far off, and the next one plans again though the set of measured
 * pairs is the same; within a few runs the model's median is the graph's own, the
 * predictions on the fast device are within 2x of the measured kernel times, the plan is
 * reused, and no node of the four chains ever goes to the slow device (each would take it
 * longer than the whole graph takes the fast one). Placement and predictions are asserted,
 * never wall time; the margins hold on a loaded host (make -j2 check). */
START_TEST(simulated_predictions)
{
    setenv("CLFLEET_SIMULATE", "device=1,compute=0.02", 1);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = test_selection(FLEET2);
    o.disable_cache = 1;
    clf_fleet *f = NULL;
    clf_status st = clf_fleet_create(&f, &o);
    unsetenv("CLFLEET_SIMULATE");
    ck_assert_msg(st == CLF_SUCCESS, "fleet: %s: %s", clf_status_name(st), clf_last_error());
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, SRC, NULL));
    enum { CHAINS = 4, LEN = 3 };
    unsigned rounds = 1000, few = rounds / 20;
    int *a = data(9);
    clf_buffer *b[CHAINS][LEN + 1];
    for (size_t c = 0; c < CHAINS; c++)
        for (size_t k = 0; k <= LEN; k++) /* homes on both devices: no side is favoured */
            b[c][k] = buf(f, (c + k) % 2, k ? NULL : a);
    clf_graph_node_desc d = kdesc("spin", N);
    clf_graph *probe = NULL;
    ck_assert_ok(clf_graph_create(&probe, f, p));
    for (size_t dev = 0; dev < 2; dev++) {
        clf_graph_node_desc pd = d;
        pd.device = dev;
        clf_arg args[] = {CLF_BUF_IN(b[dev][0]), CLF_BUF_OUT(b[dev][1]),
                          CLF_SCALAR(dev ? &rounds : &few)};
        ck_assert_ok(clf_graph_add_kernel(NULL, probe, &pd, args, 3));
    }
    for (int r = 0; r < 3; r++)
        run_ok(probe, "simulated predictions: probe");
    clf_graph_destroy(probe);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, f, p));
    for (size_t c = 0; c < CHAINS; c++)
        for (size_t k = 0; k < LEN; k++) {
            clf_arg args[] = {CLF_BUF_IN(b[c][k]), CLF_BUF_OUT(b[c][k + 1]),
                              CLF_SCALAR(&rounds)};
            ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, 3));
        }
    enum { NODES = CHAINS * LEN, MAX_RUNS = 12 };
    clf_graph_report rep;
    double ratio = 0;
    int runs = 0, replanned = 0, reused = 0;
    size_t slow = 0;
    do {
        run_ok(g, "simulated predictions");
        ck_assert_ok(clf_graph_report_get(&rep, g));
        ck_assert_msg(!rep.guessed, "simulated predictions: guessing after the probe runs");
        slow += rep.device_nodes[1];
        if (runs == 1)
            replanned = !rep.plan_reused;
        reused = rep.plan_reused;
        /* The median over the nodes on the fast device of predicted / measured. */
        double v[NODES];
        size_t nv = 0;
        for (size_t i = 0; i < NODES; i++) {
            clf_graph_node_report nr;
            ck_assert_ok(clf_graph_node_info(&nr, g, i));
            if (nr.device == 0 && nr.kernel_s > 0)
                v[nv++] = (nr.predicted_finish_s - nr.predicted_start_s) / nr.kernel_s;
        }
        ck_assert_msg(nv > 0, "simulated predictions: no node measured on the fast device");
        for (size_t i = 1; i < nv; i++) /* insertion sort, for the median */
            for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
                double t = v[j];
                v[j] = v[j - 1];
                v[j - 1] = t;
            }
        ratio = nv % 2 ? v[nv / 2] : (v[nv / 2 - 1] + v[nv / 2]) / 2;
        if (runs == 0) /* predicted from the probes' twentieth of the work */
            ck_assert_msg(ratio < 0.5, "simulated predictions: the first run's predictions "
                          "are %.2f of the measured times, not short as the probes made them",
                          ratio);
    } while (++runs < 3 || ((!reused || ratio < 0.5 || ratio > 2) && runs < MAX_RUNS));
    ck_assert_msg(replanned, "simulated predictions: the run after the mispredicted one "
                  "reused the plan made on the probes' times");
    ck_assert_msg(ratio >= 0.5 && ratio <= 2,
                  "simulated predictions: after %d runs the fast device's nodes are predicted "
                  "at %.2f of their measured time (median)", runs, ratio);
    ck_assert_msg(reused, "simulated predictions: the plan was never reused in %d runs", runs);
    if (UNDER_SANITIZER)
        ck_assert_msg(slow <= (size_t)runs, "simulated predictions: %zu nodes in %d runs on "
                      "the 50x slower device", slow, runs);
    else
        ck_assert_msg(slow == 0, "simulated predictions: %zu nodes in %d runs on the 50x "
                      "slower device", slow, runs);
    /* The chains' results, against the C reference. */
    int *ref = malloc(N * sizeof *ref), *got = malloc(N * sizeof *got);
    ck_assert(ref && got);
    for (size_t j = 0; j < N; j++) {
        unsigned x = (unsigned)a[j];
        for (unsigned r = 0; r < LEN * rounds; r++)
            x = x * 1103515245u + 12345u;
        ref[j] = (int)x;
    }
    for (size_t c = 0; c < CHAINS; c++) {
        ck_assert_ok(clf_buffer_read(b[c][LEN], 0, N * sizeof *got, got));
        for (size_t j = 0; j < N; j++)
            expect(got[j] == ref[j], "simulated predictions: chain %zu [%zu] = %d, want %d", c,
                   j, got[j], ref[j]);
    }
    clf_graph_destroy(g);
    for (size_t c = 0; c < CHAINS; c++)
        for (size_t k = 0; k <= LEN; k++)
            clf_buffer_destroy(b[c][k]);
    free(a);
    free(ref);
    free(got);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* Memory budgets: a graph over eight 1 MiB buffers (MB ints each), whose copies on a device
 * are held to a budget of 3 MiB, so that the run evicts (and writes back) as it goes. */
enum { MB = 256 * 1024, NBUF = 8 };
#define MIB ((uint64_t)MB * sizeof(int))

static clf_buffer *mbuf(clf_fleet *f, size_t dev, const int *init)
{
    clf_buffer *b = NULL;
    ck_assert_ok(clf_buffer_create(&b, f, dev, MIB, 0));
    if (init)
        ck_assert_ok(clf_buffer_write(b, 0, MIB, init));
    return b;
}

/* The graph of the memory tests: each node touches at most three buffers (3 MiB); all of
 * them together, eight. */
static const int MK3 = 3, MK2 = 2, MK5 = 5;
static const struct {
    const char *kernel;
    int a, b, out; /* buffers read (-1: none), written */
    const int *k;
} MNODES[] = {
    {"add1", 0, -1, 1, NULL}, /* x1 = x0 + 1 */
    {"scale", 1, -1, 2, &MK3}, /* x2 = x1 * 3 */
    {"sum2", 1, 2, 3, NULL},  /* x3 = x1 + x2 */
    {"add1", 3, -1, 4, NULL}, /* x4 = x3 + 1 */
    {"sum2", 0, 4, 5, NULL},  /* x5 = x0 + x4 */
    {"scale", 5, -1, 6, &MK2}, /* x6 = x5 * 2 */
    {"sum2", 2, 6, 7, NULL},  /* x7 = x2 + x6 */
    {"bump", 7, -1, 7, &MK5},  /* x7 = x7 * 3 + 5, in place */
    {"sum2", 3, 7, 4, NULL},  /* x4 = x3 + x7: x3 comes back after many others */
    {"sum2", 1, 5, 0, NULL},  /* x0 = x1 + x5: the input overwritten last */
};
enum { MNN = sizeof MNODES / sizeof MNODES[0] };

/* Records the graph, node i on place[i % nplace] (nplace 0: the scheduler's choice). */
static void mem_graph(clf_graph *g, clf_buffer **x, const size_t *place, size_t nplace)
{
    for (size_t i = 0; i < MNN; i++) {
        clf_graph_node_desc d = CLF_GRAPH_NODE_DESC_INIT;
        d.kernel = MNODES[i].kernel;
        d.global[0] = MB;
        d.device = nplace ? place[i % nplace] : CLF_GRAPH_ANY_DEVICE;
        clf_arg args[3];
        size_t na = 0;
        if (!strcmp(MNODES[i].kernel, "bump")) {
            args[na++] = (clf_arg)CLF_BUF_INOUT(x[MNODES[i].out]);
        } else {
            args[na++] = (clf_arg)CLF_BUF_IN(x[MNODES[i].a]);
            if (MNODES[i].b >= 0)
                args[na++] = (clf_arg)CLF_BUF_IN(x[MNODES[i].b]);
            args[na++] = (clf_arg)CLF_BUF_OUT(x[MNODES[i].out]);
        }
        if (MNODES[i].k)
            args[na++] = (clf_arg)CLF_SCALAR(MNODES[i].k);
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, na));
    }
}

/* One run of the graph in C, one node after the other, on ref (the buffers' contents). */
static void mem_ref(int (*ref)[MB])
{
    for (size_t i = 0; i < MNN; i++) {
        int *o = ref[MNODES[i].out], *a = ref[MNODES[i].a];
        const int *b = MNODES[i].b >= 0 ? ref[MNODES[i].b] : NULL;
        for (size_t j = 0; j < MB; j++) {
            if (!strcmp(MNODES[i].kernel, "add1"))
                o[j] = a[j] + 1;
            else if (!strcmp(MNODES[i].kernel, "scale"))
                o[j] = a[j] * *MNODES[i].k;
            else if (!strcmp(MNODES[i].kernel, "sum2"))
                o[j] = a[j] + b[j];
            else
                o[j] = o[j] * 3 + *MNODES[i].k;
        }
    }
}

static void mem_check(clf_buffer **x, int (*ref)[MB], const char *label)
{
    int *got = malloc(MIB);
    ck_assert(got);
    for (size_t i = 0; i < NBUF; i++) {
        ck_assert_ok(clf_buffer_read(x[i], 0, MIB, got));
        size_t bad = 0, first = 0;
        for (size_t j = 0; j < MB; j++)
            if (got[j] != ref[i][j] && !bad++)
                first = j;
        expect(!bad, "%s: buffer %zu: %zu wrong, first [%zu] = %d, want %d", label, i, bad,
               first, got[first], ref[i][first]);
    }
    free(got);
}

/* Every device's copies stayed within its budget; the evictions summed. */
static uint64_t mem_peaks(clf_graph *g, clf_fleet *f, const char *label)
{
    uint64_t ev = 0;
    for (size_t d = 0; d < clf_fleet_device_count(f); d++) {
        clf_graph_memory m;
        ck_assert_ok(clf_graph_memory_get(&m, g, d));
        expect(m.peak <= m.budget && m.resident <= m.budget,
               "%s: device %zu: peak %llu, resident %llu bytes, budget %llu", label, d,
               (unsigned long long)m.peak, (unsigned long long)m.resident,
               (unsigned long long)m.budget);
        ev += m.evictions;
    }
    return ev;
}

/* Every buffer at home on device 0; the nodes placed by hand on device 1 ("1 device", a
 * 2-device fleet) or on devices 1 and 2 in turn (3 devices), each with a 3 MiB budget: 8 MiB
 * of data through 3 MiB. Against the C reference; then again (the plan reused); then with
 * the default budgets, which evict nothing. */
START_TEST(memory_budget)
{
    const fleet_cfg *cfg = &CFGS[1 + _i];
    test_env e;
    test_env_open(&e, cfg, SRC);
    size_t ndev = clf_fleet_device_count(e.f);
    int(*ref)[MB] = malloc(NBUF * sizeof *ref);
    ck_assert(ref);
    clf_buffer *x[NBUF];
    for (size_t i = 0; i < NBUF; i++) {
        for (size_t j = 0; j < MB; j++)
            ref[i][j] = (int)(lowbias32((uint32_t)(j + 7919 * i)) % 1000) - 500;
        x[i] = mbuf(e.f, 0, ref[i]);
    }
    size_t place[2] = {1, 2};
    size_t nplace = ndev >= 3 ? 2 : 1;
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    mem_graph(g, x, place, nplace);
    mem_ref(ref);
    for (size_t k = 0; k < nplace; k++)
        ck_assert_ok(clf_graph_set_memory_budget(g, place[k], 3 * MIB));
    run_ok(g, cfg->label);
    mem_check(x, ref, cfg->label);
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_msg(r.evictions > 0 && r.evicted_bytes >= r.evictions * MIB,
                  "%s: %llu evictions, %llu bytes", cfg->label,
                  (unsigned long long)r.evictions, (unsigned long long)r.evicted_bytes);
    /* x1 is written on a work device and evicted before its last reader: written back. */
    ck_assert_msg(r.written_back_bytes > 0, "%s: nothing written back", cfg->label);
    ck_assert_uint_eq(mem_peaks(g, e.f, cfg->label), r.evictions);

    /* Again, from the caller's buffers as they are now. */
    run_ok(g, cfg->label);
    mem_ref(ref);
    mem_check(x, ref, cfg->label);
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert(r.evictions > 0);
    mem_peaks(g, e.f, cfg->label);

    /* The default budgets: nothing evicted, the same results. */
    for (size_t k = 0; k < nplace; k++)
        ck_assert_ok(clf_graph_set_memory_budget(g, place[k], 0));
    mem_ref(ref);
    run_ok(g, cfg->label);
    mem_check(x, ref, cfg->label);
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(r.evictions, 0);
    ck_assert_uint_eq(r.written_back_bytes, 0);
    ck_assert_uint_eq(mem_peaks(g, e.f, cfg->label), 0);
    clf_graph_memory m;
    ck_assert_ok(clf_graph_memory_get(&m, g, 1));
    clf_device_info info;
    ck_assert_ok(clf_device_get_info(&info, e.f, 1));
    ck_assert_uint_eq(m.budget, info.global_mem - info.global_mem / 8);
    ck_assert_uint_eq(m.fallback, m.budget);
    /* Without a budget, the copies of what it touched there stay: more than the old one. */
    ck_assert_msg(m.resident > 3 * MIB, "%s: %llu bytes resident", cfg->label,
                  (unsigned long long)m.resident);

    clf_graph_destroy(g);
    for (size_t i = 0; i < NBUF; i++)
        clf_buffer_destroy(x[i]);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* The scheduler under budgets: the buffers at home on the two devices in turn, 3 MiB of
 * copies allowed on each; results right and both budgets held, however it places. */
START_TEST(memory_sched)
{
    test_env e;
    test_env_open(&e, &CFGS[1], SRC);
    int(*ref)[MB] = malloc(NBUF * sizeof *ref);
    ck_assert(ref);
    clf_buffer *x[NBUF];
    for (size_t i = 0; i < NBUF; i++) {
        for (size_t j = 0; j < MB; j++)
            ref[i][j] = (int)(lowbias32((uint32_t)(j + 104729 * i)) % 1000) - 500;
        x[i] = mbuf(e.f, i % 2, ref[i]);
    }
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    mem_graph(g, x, NULL, 0);
    mem_ref(ref);
    ck_assert_ok(clf_graph_set_memory_budget(g, 0, 3 * MIB));
    ck_assert_ok(clf_graph_set_memory_budget(g, 1, 3 * MIB));
    run_ok(g, "scheduled under budgets");
    mem_check(x, ref, "scheduled under budgets");
    clf_graph_report r;
    ck_assert_ok(clf_graph_report_get(&r, g));
    ck_assert_uint_eq(mem_peaks(g, e.f, "scheduled under budgets"), r.evictions);
    clf_graph_destroy(g);
    for (size_t i = 0; i < NBUF; i++)
        clf_buffer_destroy(x[i]);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* Kept copies under a budget: run after run, the host writes two of the buffers and says so;
 * the copies kept (and those evicted in between) never give a stale value. */
START_TEST(memory_keep)
{
    test_env e;
    test_env_open(&e, &CFGS[1], SRC);
    int(*ref)[MB] = malloc(NBUF * sizeof *ref);
    ck_assert(ref);
    clf_buffer *x[NBUF];
    for (size_t i = 0; i < NBUF; i++) {
        for (size_t j = 0; j < MB; j++)
            ref[i][j] = (int)(lowbias32((uint32_t)(j + 31 * i)) % 1000) - 500;
        x[i] = mbuf(e.f, 0, ref[i]);
    }
    static const size_t one = 1;
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    mem_graph(g, x, &one, 1);
    ck_assert_ok(clf_graph_set_flags(g, CLF_GRAPH_KEEP_COPIES));
    ck_assert_ok(clf_graph_set_memory_budget(g, 1, 3 * MIB));
    uint64_t evictions = 0;
    for (int r = 0; r < 3; r++) {
        if (r) { /* new inputs from the host, said */
            for (size_t j = 0; j < MB; j++) {
                ref[0][j] = (int)(lowbias32((uint32_t)(j * 3 + (uint32_t)r)) % 100);
                ref[3][j] = -ref[0][j] + r;
            }
            ck_assert_ok(clf_buffer_write(x[0], 0, MIB, ref[0]));
            ck_assert_ok(clf_buffer_write(x[3], 0, MIB, ref[3]));
            ck_assert_ok(clf_graph_buffer_changed(g, x[0]));
            ck_assert_ok(clf_graph_buffer_changed(g, x[3]));
        }
        mem_ref(ref);
        run_ok(g, "kept copies under a budget");
        mem_check(x, ref, "kept copies under a budget");
        clf_graph_report rep;
        ck_assert_ok(clf_graph_report_get(&rep, g));
        evictions += rep.evictions;
        ck_assert_uint_eq(mem_peaks(g, e.f, "kept copies under a budget"), rep.evictions);
    }
    ck_assert(evictions > 0);
    clf_graph_destroy(g);
    for (size_t i = 0; i < NBUF; i++)
        clf_buffer_destroy(x[i]);
    free(ref);
    test_env_close(&e);
}
END_TEST

/* A node whose buffers fit no device's budget is refused when the run starts, naming the
 * node and the bytes; bad budgets are refused. */
START_TEST(memory_refused)
{
    test_env e;
    test_env_open(&e, &CFGS[1], SRC);
    clf_buffer *a = mbuf(e.f, 0, NULL), *b = mbuf(e.f, 0, NULL), *c = mbuf(e.f, 1, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc d = CLF_GRAPH_NODE_DESC_INIT;
    d.kernel = "sum2";
    d.global[0] = MB;
    clf_arg args[] = {CLF_BUF_IN(a), CLF_BUF_IN(b), CLF_BUF_OUT(c)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, args, 3));
    /* Device 0 would copy c (1 MiB), device 1 a and b (2 MiB). */
    ck_assert_ok(clf_graph_set_memory_budget(g, 0, MIB - 1));
    ck_assert_ok(clf_graph_set_memory_budget(g, 1, 2 * MIB - 1));
    clf_event *ev = (clf_event *)&ev; /* set to NULL by a refused run */
    ck_assert_status(clf_graph_run(g, &ev), CLF_ERROR_UNSUPPORTED);
    ck_assert_ptr_null(ev);
    const char *msg = clf_last_error();
    ck_assert_msg(strstr(msg, "graph node 0") && strstr(msg, "sum2") &&
                      strstr(msg, "1048576 bytes") && strstr(msg, "2097152 bytes"),
                  "message: %s", msg);
    /* One device that fits is enough. */
    ck_assert_ok(clf_graph_set_memory_budget(g, 0, MIB));
    run_ok(g, "one device fits");
    clf_graph_node_report nr;
    ck_assert_ok(clf_graph_node_info(&nr, g, 0));
    ck_assert_uint_eq(nr.device, 0);
    /* Placed by hand where it does not fit. */
    clf_graph *h = NULL;
    ck_assert_ok(clf_graph_create(&h, e.f, e.p));
    d.device = 1;
    ck_assert_ok(clf_graph_add_kernel(NULL, h, &d, args, 3));
    ck_assert_ok(clf_graph_set_memory_budget(h, 1, MIB));
    ck_assert_status(clf_graph_run(h, NULL), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(clf_last_error(), "device 1: 2097152 bytes of copies, over its budget "
                                           "of 1048576"), "message: %s", clf_last_error());
    ck_assert_ok(clf_graph_wait(h)); /* nothing was started */
    /* Bad input. */
    clf_device_info info;
    ck_assert_ok(clf_device_get_info(&info, e.f, 1));
    clf_graph_memory m;
    ck_assert_status(clf_graph_set_memory_budget(NULL, 0, MIB), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_set_memory_budget(h, 2, MIB), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_graph_set_memory_budget(h, 1, info.global_mem + 1),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_graph_memory_get(NULL, h, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_memory_get(&m, NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_graph_memory_get(&m, h, 2), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ok(clf_graph_memory_get(&m, h, 1));
    ck_assert_uint_eq(m.budget, MIB);
    ck_assert_uint_eq(m.resident, 0);
    clf_graph_destroy(g);
    clf_graph_destroy(h);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    clf_buffer_destroy(c);
    test_env_close(&e);
}
END_TEST

/* A reduction fan (issue 30): a write into acc, 8 nodes that each reduce into three buffers
 * (a sum of ints, a sum of floats, a max of ints), placed round robin over the devices and
 * not serialized (no edge between reducers), then a node that reads two of them (after the combine) and a write after the
 * reductions; run twice (the float sum accumulates across runs, the int sum starts from the
 * write each run). Against the C reference: ints exact, floats within a tolerance. */
START_TEST(redux_fan)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    const char *label = CFGS[_i].label;
    enum { R = 8 };
    int *a = data(40), *m0 = data(41), *x[R];
    float *f0 = malloc(N * sizeof *f0);
    ck_assert(f0);
    for (size_t i = 0; i < N; i++)
        f0[i] = (float)(i % 17) * 0.5f;
    size_t ndev = clf_fleet_device_count(e.f);
    clf_buffer *ba = buf(e.f, 0, a), *acc = buf(e.f, 0, NULL), *mx = buf(e.f, dev_of(e.f, 1), m0),
               *out = buf(e.f, dev_of(e.f, 2), NULL), *bx[R], *facc = NULL;
    ck_assert_ok(clf_buffer_create(&facc, e.f, dev_of(e.f, 1), N * sizeof(float), 0));
    ck_assert_ok(clf_buffer_write(facc, 0, N * sizeof(float), f0));
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc dw = kdesc("add1", N), dr = kdesc("radd", N), ds = kdesc("sum2", N);
    clf_arg aw[] = {CLF_BUF_IN(ba), CLF_BUF_OUT(acc)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &dw, aw, 2));
    size_t rn[R];
    for (size_t r = 0; r < R; r++) {
        x[r] = data(50 + (uint32_t)r);
        bx[r] = buf(e.f, dev_of(e.f, r), x[r]);
        int k = (int)r + 1;
        /* Placed by hand, round robin: every device's partial is combined, whatever the
         * cost model makes of this host's load (the scheduler put all 8 on one device
         * under ThreadSanitizer, and the combine went untested). */
        dr.device = dev_of(e.f, r);
        clf_arg ar[] = {CLF_BUF_REDUCE(acc, CLF_REDUCE_SUM, CLF_TYPE_INT32),
                        CLF_BUF_REDUCE(facc, CLF_REDUCE_SUM, CLF_TYPE_FLOAT),
                        CLF_BUF_REDUCE(mx, CLF_REDUCE_MAX, CLF_TYPE_INT32), CLF_BUF_IN(bx[r]),
                        CLF_SCALAR(&k)};
        ck_assert_ok(clf_graph_add_kernel(&rn[r], g, &dr, ar, 5));
    }
    clf_arg as[] = {CLF_BUF_IN(acc), CLF_BUF_IN(mx), CLF_BUF_OUT(out)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &ds, as, 3));
    clf_arg a2[] = {CLF_BUF_IN(out), CLF_BUF_OUT(acc)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &dw, a2, 2));

    int *ref_out = malloc(N * sizeof *ref_out), *ref_acc = malloc(N * sizeof *ref_acc),
        *ref_mx = malloc(N * sizeof *ref_mx);
    float *ref_f = malloc(N * sizeof *ref_f), *got_f = malloc(N * sizeof *got_f);
    ck_assert(ref_out && ref_acc && ref_mx && ref_f && got_f);
    for (size_t i = 0; i < N; i++) {
        int s = a[i] + 1, m = m0[i];
        for (size_t r = 0; r < R; r++) {
            s += x[r][i] * (int)(r + 1);
            m = x[r][i] * (int)(r + 1) > m ? x[r][i] * (int)(r + 1) : m;
        }
        ref_mx[i] = m;
        ref_out[i] = s + m;
        ref_acc[i] = ref_out[i] + 1;
    }
    for (int run = 1; run <= 2; run++) {
        run_ok(g, label);
        for (size_t i = 0; i < N; i++) {
            double f = f0[i];
            for (int t = 0; t < run; t++)
                for (size_t r = 0; r < R; r++)
                    f += (double)x[r][i] * 0.25 * (double)(r + 1);
            ref_f[i] = (float)f;
        }
        check_buf(out, ref_out, "out (reads the sum and the max)", label);
        check_buf(acc, ref_acc, "acc (written after the reductions)", label);
        check_buf(mx, ref_mx, "mx (a max reduction)", label);
        ck_assert_ok(clf_buffer_read(facc, 0, N * sizeof(float), got_f));
        for (size_t i = 0; i < N; i++)
            expect(fabsf(got_f[i] - ref_f[i]) <= 1e-4f * (1.0f + fabsf(ref_f[i])),
                   "%s: run %d: facc[%zu] = %g, want %g", label, run, i, (double)got_f[i],
                   (double)ref_f[i]);
    }
    clf_graph_report rep;
    ck_assert_ok(clf_graph_report_get(&rep, g));
    /* The reducers depend on the write only (8), the reader on the write and the 8 reducers
     * (9), the last write on those and the reader (10): none on another reducer. */
    ck_assert_uint_eq(rep.edges, 27);
    unsigned char used[CLF_MAX_LAUNCH_DEVICES] = {0};
    size_t distinct = 0;
    for (size_t r = 0; r < R; r++) {
        clf_graph_node_report nr;
        ck_assert_ok(clf_graph_node_info(&nr, g, rn[r]));
        ck_assert(nr.device < ndev);
        distinct += !used[nr.device];
        used[nr.device] = 1;
    }
    expect(distinct == (ndev < R ? ndev : R), "%s: the 8 reducers ran on %zu of %zu devices",
           label, distinct, ndev);
    clf_graph_destroy(g);
    for (size_t r = 0; r < R; r++) {
        clf_buffer_destroy(bx[r]);
        free(x[r]);
    }
    clf_buffer_destroy(ba);
    clf_buffer_destroy(acc);
    clf_buffer_destroy(facc);
    clf_buffer_destroy(mx);
    clf_buffer_destroy(out);
    free(a);
    free(m0);
    free(f0);
    free(ref_out);
    free(ref_acc);
    free(ref_mx);
    free(ref_f);
    free(got_f);
    test_env_close(&e);
}
END_TEST

/* Reduction partials in the memory budgets (issue 30): 6 reducers of one int sum into acc
 * (on device 0), placed round robin, each reading x (on device 0), and after the second one
 * a plain node on device 1 reading y (on device 0) into z (on device 1). So device 1 holds
 * x's copy, its partial and y's copy: 3 buffers. Under a budget of 3 buffers there: nothing
 * evicted, and the peak is exactly 3 buffers (the partial counts: before, it was not seen,
 * and the peak said 2); the other device away from home holds x and its partial (2, its
 * budget); device 0 holds its partial and, for the combine, a copy of each other device's
 * partial. After the run only the copies stay resident. Under a budget of 2 on device 1,
 * y's copy does not fit beside x's and the partial: evicted, the peak within 2 (before, 3
 * buffers lived there under a budget of 2, nothing evicted). Results against the C
 * reference, run twice. */
START_TEST(redux_budget)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    const char *label = CFGS[_i].label;
    enum { R = 6 };
    const uint64_t B = N * sizeof(int);
    size_t ndev = clf_fleet_device_count(e.f);
    ck_assert_uint_ge(ndev, 2);
    int *a0 = data(60), *x = data(61), *y = data(62);
    clf_buffer *acc = buf(e.f, 0, a0), *bx = buf(e.f, 0, x), *by = buf(e.f, 0, y),
               *bz = buf(e.f, 1, NULL);
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc dr = kdesc("racc", N), dp = kdesc("add1", N);
    int ksum = 0;
    for (size_t r = 0; r < R; r++) {
        int k = (int)r + 1;
        ksum += k;
        dr.device = dev_of(e.f, r);
        clf_arg ar[] = {CLF_BUF_REDUCE(acc, CLF_REDUCE_SUM, CLF_TYPE_INT32), CLF_BUF_IN(bx),
                        CLF_SCALAR(&k)};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &dr, ar, 3));
        if (r == 1) { /* on device 1, the phase still open: acc not used */
            dp.device = 1;
            clf_arg ap[] = {CLF_BUF_IN(by), CLF_BUF_OUT(bz)};
            ck_assert_ok(clf_graph_add_kernel(NULL, g, &dp, ap, 2));
        }
    }
    int *ref_acc = malloc(N * sizeof *ref_acc), *ref_z = malloc(N * sizeof *ref_z);
    ck_assert(ref_acc && ref_z);
    for (size_t i = 0; i < N; i++) {
        ref_acc[i] = a0[i];
        ref_z[i] = y[i] + 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: 3 buffers allowed on device 1, 2 on device 2; pass 1: 2 on device 1. */
        ck_assert_ok(clf_graph_set_memory_budget(g, 1, pass ? 2 * B : 3 * B));
        if (ndev > 2)
            ck_assert_ok(clf_graph_set_memory_budget(g, 2, 2 * B));
        for (int run = 0; run < 2; run++) {
            run_ok(g, label);
            for (size_t i = 0; i < N; i++)
                ref_acc[i] += x[i] * ksum;
            check_buf(acc, ref_acc, "acc (a sum reduction under budgets)", label);
            check_buf(bz, ref_z, "z (beside the reduction)", label);
            clf_graph_report rep;
            ck_assert_ok(clf_graph_report_get(&rep, g));
            clf_graph_memory m[3];
            for (size_t d = 0; d < ndev && d < 3; d++)
                ck_assert_ok(clf_graph_memory_get(&m[d], g, d));
            /* Device 0: no copies; its partial and the ndev - 1 others' for the combine. */
            expect(m[0].peak == ndev * B && m[0].resident == 0,
                   "%s: device 0: peak %llu, resident %llu, want %llu and 0", label,
                   (unsigned long long)m[0].peak, (unsigned long long)m[0].resident,
                   (unsigned long long)(ndev * B));
            if (ndev > 2)
                expect(m[2].peak == 2 * B && m[2].resident == B && m[2].evictions == 0,
                       "%s: device 2: peak %llu, resident %llu, %llu evictions, want %llu, "
                       "%llu, 0", label, (unsigned long long)m[2].peak,
                       (unsigned long long)m[2].resident, (unsigned long long)m[2].evictions,
                       (unsigned long long)(2 * B), (unsigned long long)B);
            if (!pass) {
                /* x, the partial and y fit 3 buffers exactly: nothing to evict. */
                ck_assert_uint_eq(rep.evictions, 0);
                expect(m[1].peak == 3 * B && m[1].resident == 2 * B,
                       "%s: device 1: peak %llu, resident %llu, want %llu and %llu", label,
                       (unsigned long long)m[1].peak, (unsigned long long)m[1].resident,
                       (unsigned long long)(3 * B), (unsigned long long)(2 * B));
            } else {
                /* The partial takes one of the 2: y's copy evicts x's, the next reducer
                 * there evicts y's (both current at home: nothing written back). */
                expect(m[1].evictions >= 2 && m[1].peak <= 2 * B && m[1].resident <= 2 * B &&
                           m[1].written_back_bytes == 0,
                       "%s: device 1 under 2 buffers: %llu evictions, peak %llu, resident "
                       "%llu, %llu written back", label, (unsigned long long)m[1].evictions,
                       (unsigned long long)m[1].peak, (unsigned long long)m[1].resident,
                       (unsigned long long)m[1].written_back_bytes);
                ck_assert_uint_eq(rep.evictions, m[1].evictions);
            }
        }
    }
    clf_graph_destroy(g);
    clf_buffer_destroy(acc);
    clf_buffer_destroy(bx);
    clf_buffer_destroy(by);
    clf_buffer_destroy(bz);
    free(a0);
    free(x);
    free(y);
    free(ref_acc);
    free(ref_z);
    test_env_close(&e);
}
END_TEST

/* A partial of an open reduction phase takes its device's memory until the phase ends and
 * cannot be evicted: a node that does not use it fits there only beside it. Budget of 3
 * buffers on device 1; node 0 reduces r there (its partial, and a copy of x, which can go);
 * node 1 reads p and q and writes s, placed there by hand: its 3 buffers fit the budget
 * alone, not beside the partial. The plan refuses it, naming the partial (before, the plan
 * placed it and the run failed at that node). Left to the scheduler, it runs elsewhere. */
START_TEST(redux_partial_room)
{
    test_env e;
    test_env_open(&e, &CFGS[1], SRC);
    const uint64_t B = N * sizeof(int);
    int *a0 = data(70), *x = data(71), *p = data(72), *q = data(73), k = 3;
    clf_buffer *br = buf(e.f, 0, a0), *bx = buf(e.f, 0, x), *bp = buf(e.f, 0, p),
               *bq = buf(e.f, 0, q), *bs = buf(e.f, 0, NULL);
    int *ref = malloc(N * sizeof *ref);
    ck_assert(ref);
    for (int manual = 1; manual >= 0; manual--) {
        clf_graph *g = NULL;
        ck_assert_ok(clf_graph_create(&g, e.f, e.p));
        clf_graph_node_desc dr = kdesc("racc", N), ds = kdesc("sum2", N);
        dr.device = 1;
        ds.device = manual ? 1 : CLF_GRAPH_ANY_DEVICE;
        clf_arg ar[] = {CLF_BUF_REDUCE(br, CLF_REDUCE_SUM, CLF_TYPE_INT32), CLF_BUF_IN(bx),
                        CLF_SCALAR(&k)};
        clf_arg as[] = {CLF_BUF_IN(bp), CLF_BUF_IN(bq), CLF_BUF_OUT(bs)};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &dr, ar, 3));
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &ds, as, 3));
        ck_assert_ok(clf_graph_set_memory_budget(g, 1, 3 * B));
        if (manual) {
            /* Refused when the run starts: nothing queued. */
            clf_event *ev = (clf_event *)&ev;
            clf_status st = clf_graph_run(g, &ev);
            if (st == CLF_SUCCESS) {
                clf_event_release(ev);
                (void)clf_graph_wait(g);
            }
            ck_assert_msg(st == CLF_ERROR_UNSUPPORTED, "placed by hand beside a partial: %s: %s",
                          clf_status_name(st), clf_last_error());
            ck_assert_ptr_null(ev);
            const char *msg = clf_last_error();
            ck_assert_msg(strstr(msg, "graph node 1") && strstr(msg, "partial") &&
                              strstr(msg, "device 1"), "message: %s", msg);
            ck_assert_ok(clf_graph_wait(g));
        } else {
            run_ok(g, "beside a partial, scheduled");
            clf_graph_node_report nr;
            ck_assert_ok(clf_graph_node_info(&nr, g, 1));
            ck_assert_uint_ne(nr.device, 1);
            for (size_t i = 0; i < N; i++)
                ref[i] = a0[i] + x[i] * k;
            check_buf(br, ref, "r", "beside a partial");
            for (size_t i = 0; i < N; i++)
                ref[i] = p[i] + q[i];
            check_buf(bs, ref, "s", "beside a partial");
            clf_graph_memory m;
            ck_assert_ok(clf_graph_memory_get(&m, g, 1));
            ck_assert_uint_le(m.peak, 3 * B);
        }
        clf_graph_destroy(g);
    }
    clf_buffer *bufs[] = {br, bx, bp, bq, bs};
    for (size_t i = 0; i < 5; i++)
        clf_buffer_destroy(bufs[i]);
    free(ref);
    free(a0);
    free(x);
    free(p);
    free(q);
    test_env_close(&e);
}
END_TEST

/* Scratch buffers (issue 30): 8 nodes on all the devices use one scratch buffer as memory,
 * each with its own input and output on its own device: no dependency, no copy, and every
 * output right (two nodes sharing one instance at once would mix their values). Then the
 * same 8 nodes placed by the scheduler. */
START_TEST(scratch)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    const char *label = CFGS[_i].label;
    enum { S = 8 };
    clf_buffer *tmp = buf(e.f, 0, NULL), *in[S], *out[S];
    int *x[S];
    for (int manual = 1; manual >= 0; manual--) {
        clf_graph *g = NULL;
        ck_assert_ok(clf_graph_create(&g, e.f, e.p));
        for (size_t i = 0; i < S; i++) {
            x[i] = data(70 + (uint32_t)i);
            in[i] = buf(e.f, dev_of(e.f, i), x[i]);
            out[i] = buf(e.f, dev_of(e.f, i), NULL);
            int k = (int)i + 2;
            clf_graph_node_desc d = kdesc("sdbl", N);
            if (manual)
                d.device = dev_of(e.f, i);
            clf_arg a[] = {CLF_BUF_SCRATCH(tmp), CLF_BUF_IN(in[i]), CLF_BUF_OUT(out[i]),
                           CLF_SCALAR(&k)};
            ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, a, 4));
        }
        run_ok(g, label);
        clf_graph_report rep;
        ck_assert_ok(clf_graph_report_get(&rep, g));
        ck_assert_uint_eq(rep.edges, 0);
        if (manual) /* every input and output is on its node's device: no copy at all */
            expect(rep.copies == 0, "%s: %zu copies with scratch buffers", label, rep.copies);
        for (size_t i = 0; i < S; i++) {
            int *want = malloc(N * sizeof *want);
            ck_assert(want);
            for (size_t j = 0; j < N; j++)
                want[j] = x[i][j] * ((int)i + 2);
            check_buf(out[i], want, "out", label);
            free(want);
        }
        /* The scheduler's copies are of inputs and outputs only: none of the scratch buffer. */
        if (!manual)
            expect(rep.copy_bytes % (N * sizeof(int)) == 0 && rep.copies <= 2 * S,
                   "%s: %zu copies, %llu bytes", label, rep.copies,
                   (unsigned long long)rep.copy_bytes);
        clf_graph_destroy(g);
        for (size_t i = 0; i < S; i++) {
            clf_buffer_destroy(in[i]);
            clf_buffer_destroy(out[i]);
            free(x[i]);
        }
    }
    clf_buffer_destroy(tmp);
    test_env_close(&e);
}
END_TEST

/* Reduction and scratch accesses refused (issue 30). */
START_TEST(bad_modes)
{
    test_env e;
    test_env_open(&e, &CFGS[1], SRC);
    clf_buffer *b = buf(e.f, 0, NULL), *c = buf(e.f, 1, NULL), *odd = NULL;
    ck_assert_ok(clf_buffer_create(&odd, e.f, 0, 6, 0));
    clf_graph *g = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    clf_graph_node_desc d = kdesc("bump", N);
    int k = 1;
    clf_arg badop[] = {CLF_BUF_REDUCE(b, 9, CLF_TYPE_INT32), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, badop, 2), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert(strstr(clf_last_error(), "op 9"));
    clf_arg badtype[] = {CLF_BUF_REDUCE(b, CLF_REDUCE_SUM, 0), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, badtype, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg badtype2[] = {CLF_BUF_REDUCE(b, CLF_REDUCE_MAX, 6), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, badtype2, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg oddsize[] = {CLF_BUF_REDUCE(odd, CLF_REDUCE_SUM, CLF_TYPE_INT64), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, oddsize, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg both[] = {CLF__BUF(b, CLF_ARG_SCRATCH | CLF_ARG_REDUCTION), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, both, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg mixed[] = {CLF__BUF(b, CLF_ARG_SCRATCH | CLF_ARG_READ), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, mixed, 2), CLF_ERROR_INVALID_ARGUMENT);
    /* A host node reads and writes its buffers itself. */
    clf_arg hred[] = {CLF_BUF_REDUCE(b, CLF_REDUCE_SUM, CLF_TYPE_INT32)};
    ck_assert_status(clf_graph_add_host(NULL, g, noop, NULL, hred, 1), CLF_ERROR_UNSUPPORTED);
    clf_arg hscr[] = {CLF_BUF_SCRATCH(b)};
    ck_assert_status(clf_graph_add_host(NULL, g, noop, NULL, hscr, 1), CLF_ERROR_UNSUPPORTED);
    /* Scratch and reductions on an array. */
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = sizeof(int);
    ad.shape[0] = N;
    clf_array *arr = NULL;
    ck_assert_ok(clf_array_create(&arr, e.f, &ad));
    clf_graph_node_desc da = kdesc("aadd1", N);
    clf_arg ascr[] = {CLF_ARRAY_IN(arr), CLF_ARRAY_OUT(arr)};
    ascr[0].flags = CLF_ARG_SCRATCH;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &da, ascr, 2), CLF_ERROR_UNSUPPORTED);
    ck_assert(strstr(clf_last_error(), "scratch"));
    ascr[0].flags = CLF_ARG_REDUCTION;
    ck_assert_status(clf_graph_add_kernel(NULL, g, &da, ascr, 2), CLF_ERROR_UNSUPPORTED);
    /* One mode per buffer over the graph; one op and type per reduced buffer. */
    clf_arg red[] = {CLF_BUF_REDUCE(b, CLF_REDUCE_SUM, CLF_TYPE_INT32), CLF_SCALAR(&k)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, red, 2));
    clf_arg red2[] = {CLF_BUF_REDUCE(b, CLF_REDUCE_MIN, CLF_TYPE_INT32), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, red2, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg scr_b[] = {CLF_BUF_SCRATCH(b), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, scr_b, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg scr_c[] = {CLF_BUF_SCRATCH(c), CLF_SCALAR(&k)};
    ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, scr_c, 2));
    clf_arg rw_c[] = {CLF_BUF_INOUT(c), CLF_SCALAR(&k)};
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d, rw_c, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_arg twice[] = {CLF_BUF_REDUCE(b, CLF_REDUCE_SUM, CLF_TYPE_INT32), CLF_BUF_IN(b)};
    clf_graph_node_desc d2 = kdesc("add1", N);
    ck_assert_status(clf_graph_add_kernel(NULL, g, &d2, twice, 2), CLF_ERROR_INVALID_ARGUMENT);
    clf_graph_destroy(g);
    clf_array_destroy(arr);
    clf_buffer_destroy(b);
    clf_buffer_destroy(c);
    clf_buffer_destroy(odd);
    test_env_close(&e);
}
END_TEST

/* A device lost under a graph with reduction and scratch accesses: not recovered (their
 * partials and instances are not versioned), the run fails naming why (issue 30). */
START_TEST(fault_modes)
{
    for (int scr = 0; scr <= 1; scr++) {
        fault_env e;
        fault_open(&e, 1);
        int *a = data(15);
        clf_buffer *b0 = buf(e.f, 0, a), *b1 = buf(e.f, 1, NULL), *acc = buf(e.f, 0, NULL),
                   *fa = NULL, *mx = buf(e.f, 2, NULL);
        ck_assert_ok(clf_buffer_create(&fa, e.f, 2, N * sizeof(float), 0));
        clf_graph *g = NULL;
        ck_assert_ok(clf_graph_create(&g, e.f, e.p));
        clf_graph_node_desc d0 = on("add1", 1), d1 = on(scr ? "sdbl" : "radd", 1);
        clf_arg a0[] = {CLF_BUF_IN(b0), CLF_BUF_OUT(b1)};
        int k = 2;
        clf_arg ar[] = {CLF_BUF_REDUCE(acc, CLF_REDUCE_SUM, CLF_TYPE_INT32),
                        CLF_BUF_REDUCE(fa, CLF_REDUCE_SUM, CLF_TYPE_FLOAT),
                        CLF_BUF_REDUCE(mx, CLF_REDUCE_MAX, CLF_TYPE_INT32), CLF_BUF_IN(b1),
                        CLF_SCALAR(&k)};
        clf_arg as[] = {CLF_BUF_SCRATCH(acc), CLF_BUF_IN(b1), CLF_BUF_OUT(mx), CLF_SCALAR(&k)};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d0, a0, 2));
        if (scr)
            ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, as, 4));
        else
            ck_assert_ok(clf_graph_add_kernel(NULL, g, &d1, ar, 5));
        clf_status st = fault_run(g);
        ck_assert_msg(st == CLF_ERROR_DEVICE_FAILED, "want CLF_ERROR_DEVICE_FAILED, got %s: %s",
                      clf_status_name(st), clf_last_error());
        ck_assert_msg(strstr(clf_last_error(), "reduction or scratch"), "%s", clf_last_error());
        clf_graph_destroy(g);
        clf_buffer_destroy(b0);
        clf_buffer_destroy(b1);
        clf_buffer_destroy(acc);
        clf_buffer_destroy(fa);
        clf_buffer_destroy(mx);
        free(a);
        fault_close(&e);
    }
}
END_TEST

/* Lanes (lib/graph/lane.c): the kernels of a device that runs commands inside clEnqueue*
 * (PoCL's basic) are queued by a job of their own, beside the run's job and the other
 * devices. LK chains of LS steps, each step reading its own chain's last result and its
 * neighbour chain's (cross-device edges both ways), most of them placed by hand on the basic
 * device, some on the other two, some left to the scheduler, and an in-place update at each
 * chain's end; run twice with a new input between. Compared bit for bit with a plain C
 * sequential reference and with the same graph placed wholly on one pthread device (no
 * lane), and the report's lane_nodes counts exactly the kernel nodes the basic device ran. */
enum { LK = 4, LS = 6 };

/* Where step s of chain c goes: basic (b), other[0] or [1], or the scheduler's choice. */
static size_t lane_place(size_t c, size_t s, size_t b, const size_t o[2], int one)
{
    if (one)
        return o[0];
    switch ((c + 2 * s) % 5) {
    case 0:
        return o[c % 2];
    case 1:
        return CLF_GRAPH_ANY_DEVICE;
    default:
        return b;
    }
}

static void lane_graph(clf_graph *g, clf_buffer *x, clf_buffer *(*bb)[LS], size_t b,
                       const size_t o[2], int one)
{
    for (size_t s = 0; s < LS; s++)
        for (size_t c = 0; c < LK; c++) {
            clf_graph_node_desc d = kdesc(s ? "sum2" : "scale", N);
            d.device = lane_place(c, s, b, o, one);
            int k = (int)c + 2;
            if (!s) {
                clf_arg a[] = {CLF_BUF_IN(x), CLF_BUF_OUT(bb[c][0]), CLF_SCALAR(&k)};
                ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, a, 3));
            } else {
                clf_arg a[] = {CLF_BUF_IN(bb[c][s - 1]), CLF_BUF_IN(bb[(c + 1) % LK][s - 1]),
                               CLF_BUF_OUT(bb[c][s])};
                ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, a, 3));
            }
        }
    for (size_t c = 0; c < LK; c++) {
        clf_graph_node_desc d = kdesc("bump", N);
        d.device = one ? o[0] : b;
        int k = (int)c;
        clf_arg a[] = {CLF_BUF_INOUT(bb[c][LS - 1]), CLF_SCALAR(&k)};
        ck_assert_ok(clf_graph_add_kernel(NULL, g, &d, a, 2));
    }
}

START_TEST(lanes)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    size_t b, o[2];
    if (!test_find_basic(e.f, &b, o, "lanes")) {
        test_env_close(&e);
        return;
    }
    int *ref[LK][LS], *got = malloc(N * sizeof *got);
    ck_assert(got);
    for (size_t c = 0; c < LK; c++)
        for (size_t s = 0; s < LS; s++)
            ck_assert(ref[c][s] = malloc(N * sizeof(int)));
    /* The graph under test (buffers spread over the devices) and the one-device one. */
    clf_buffer *x = buf(e.f, o[0], NULL), *bb[LK][LS], *b1[LK][LS];
    for (size_t c = 0; c < LK; c++)
        for (size_t s = 0; s < LS; s++) {
            bb[c][s] = buf(e.f, dev_of(e.f, c + s), NULL);
            b1[c][s] = buf(e.f, o[0], NULL);
        }
    clf_graph *g = NULL, *g1 = NULL;
    ck_assert_ok(clf_graph_create(&g, e.f, e.p));
    ck_assert_ok(clf_graph_create(&g1, e.f, e.p));
    lane_graph(g, x, bb, b, o, 0);
    lane_graph(g1, x, b1, b, o, 1);
    for (uint32_t run = 0; run < 2; run++) {
        int *a = data(40 + run);
        ck_assert_ok(clf_buffer_write(x, 0, N * sizeof(int), a));
        for (size_t c = 0; c < LK; c++)
            for (size_t i = 0; i < N; i++)
                ref[c][0][i] = a[i] * ((int)c + 2);
        for (size_t s = 1; s < LS; s++)
            for (size_t c = 0; c < LK; c++)
                for (size_t i = 0; i < N; i++)
                    ref[c][s][i] = ref[c][s - 1][i] + ref[(c + 1) % LK][s - 1][i];
        for (size_t c = 0; c < LK; c++)
            for (size_t i = 0; i < N; i++)
                ref[c][LS - 1][i] = ref[c][LS - 1][i] * 3 + (int)c;
        run_ok(g, CFGS[_i].label);
        run_ok(g1, CFGS[_i].label);
        for (size_t c = 0; c < LK; c++)
            for (size_t s = 0; s < LS; s++) {
                check_buf(bb[c][s], ref[c][s], "lanes", CFGS[_i].label);
                ck_assert_ok(clf_buffer_read(b1[c][s], 0, N * sizeof(int), got));
                check_buf(bb[c][s], got, "lanes against one device", CFGS[_i].label);
            }
        clf_graph_report r;
        ck_assert_ok(clf_graph_report_get(&r, g));
        size_t want = 0;
        clf_graph_node_report nr;
        for (size_t i = 0; i < r.nodes; i++) {
            ck_assert_ok(clf_graph_node_info(&nr, g, i));
            want += nr.device == b;
        }
        ck_assert_msg(want >= LK * LS / 2, "%s: %zu nodes on the basic device", CFGS[_i].label,
                      want);
        ck_assert_uint_eq(r.device_nodes[b], want);
        ck_assert_uint_eq(r.lane_nodes, want);
        ck_assert_ok(clf_graph_report_get(&r, g1));
        ck_assert_uint_eq(r.lane_nodes, 0); /* a pthread device waits for its wait list */
        free(a);
    }
    /* A kernel that fails in the lane (no such kernel), between two that succeed there: the
     * run fails, naming it, and its successor on the lane does not run. */
    clf_graph *gf = NULL;
    ck_assert_ok(clf_graph_create(&gf, e.f, e.p));
    clf_graph_node_desc f0 = on("add1", b), f1 = on("no_such_kernel", b), f2 = on("add1", b);
    clf_arg fa0[] = {CLF_BUF_IN(x), CLF_BUF_OUT(bb[0][0])};
    clf_arg fa1[] = {CLF_BUF_IN(bb[0][0]), CLF_BUF_OUT(bb[0][1])};
    clf_arg fa2[] = {CLF_BUF_IN(bb[0][1]), CLF_BUF_OUT(bb[0][2])};
    ck_assert_ok(clf_graph_add_kernel(NULL, gf, &f0, fa0, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, gf, &f1, fa1, 2));
    ck_assert_ok(clf_graph_add_kernel(NULL, gf, &f2, fa2, 2));
    test_watchdog(60);
    ck_assert_ok(clf_graph_run(gf, NULL));
    clf_status st = clf_graph_wait(gf);
    test_watchdog_off();
    ck_assert_msg(st != CLF_SUCCESS && strstr(clf_last_error(), "graph node 1 ('no_such_kernel')"),
                  "%s: %s: %s", CFGS[_i].label, clf_status_name(st), clf_last_error());
    clf_graph_destroy(gf);
    clf_graph_destroy(g);
    clf_graph_destroy(g1);
    clf_buffer_destroy(x);
    for (size_t c = 0; c < LK; c++)
        for (size_t s = 0; s < LS; s++) {
            clf_buffer_destroy(bb[c][s]);
            clf_buffer_destroy(b1[c][s]);
            free(ref[c][s]);
        }
    free(got);
    test_env_close(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("graph");
    tcase_add_loop_test(tc, chain, 0, NCFG);
    tcase_add_loop_test(tc, diamond, 0, NCFG);
    tcase_add_loop_test(tc, reduction, 0, NCFG);
    tcase_add_loop_test(tc, halo, 0, NCFG);
    tcase_add_loop_test(tc, in_place, 0, NCFG);
    tcase_add_loop_test(tc, run_twice, 0, NCFG);
    tcase_add_loop_test(tc, keep_copies, 0, NCFG);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, device_fault);
    tcase_add_test(tc, fault_chain);
    tcase_add_test(tc, fault_replan);
    tcase_add_test(tc, fault_diamond);
    tcase_add_test(tc, fault_in_place);
    tcase_add_test(tc, fault_ping_pong);
    tcase_add_test(tc, fault_unrecoverable);
    tcase_add_test(tc, simulated_pair);
    tcase_add_test(tc, simulated_pair_2to1);
    tcase_add_test(tc, simulated_predictions);
    tcase_add_test(tc, fleet_first);
    tcase_add_test(tc, traced);
    /* On 2 devices (one works), and on the 3-device configurations (two work). */
    tcase_add_loop_test(tc, memory_budget, 0, NCFG - 1);
    tcase_add_test(tc, memory_sched);
    tcase_add_test(tc, memory_keep);
    tcase_add_test(tc, memory_refused);
    tcase_add_loop_test(tc, redux_fan, 0, NCFG);
    tcase_add_loop_test(tc, redux_budget, 1, NCFG);
    tcase_add_test(tc, redux_partial_room);
    tcase_add_loop_test(tc, scratch, 0, NCFG);
    tcase_add_test(tc, bad_modes);
    tcase_add_test(tc, fault_modes);
    tcase_add_loop_test(tc, lanes, 2, NCFG); /* the configurations with the basic device */
    suite_add_tcase(s, tc);
    /* Every configuration needs the three PoCL devices (POCL_DEVICES='pthread pthread basic'). */
    return test_run(s, TEST_CPUS, 3);
}

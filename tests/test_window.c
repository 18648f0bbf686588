/*
 * Window arrays (clf_array_desc version 2: window_units, window_first): a larger array cut
 * into windows, here all in one process (as ranks would hold them), each window a block
 * array over the fleet's devices. Jacobi steps (1D plain and periodic, 2D 5-point) with the
 * halos between windows moved through the host by clf_array_read_units() and
 * clf_array_write_halo(), exchanged before each step or after it (boundary strips first),
 * against plain C loops bit for bit; global unit ranges of the parts; bad input.
 */
#include "common.h"

static const char SRC[] = TEST_CL_JACOBI;

static const size_t DEV2[] = {0, 1};
static const fleet_cfg CFGS[] = {
    {FLEET2, 0, DEV2, 2, "2 devices"},
    {FLEET4, 1, DEV3, 3, "3 devices, a context each"},
};
enum { NCFG = sizeof CFGS / sizeof CFGS[0], MAXW = 3, STEPS = 20 };

/* Windows of n units: window k holds [first[k], first[k] + cnt[k]). */
typedef struct {
    size_t nw, first[MAXW], cnt[MAXW], w, h, unit;
    unsigned dims;
    int periodic;
} cut;

static clf_array *make_window(clf_fleet *f, const fleet_cfg *cfg, const cut *c, size_t k)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = sizeof(float);
    d.dims = c->dims;
    d.shape[0] = c->w;
    d.shape[c->dims - 1] = c->cnt[k];
    d.devices = cfg->devices;
    d.num_devices = cfg->ndev;
    d.halo_before = d.halo_after = 1;
    d.flags = c->periodic ? CLF_ARRAY_PERIODIC : 0;
    d.window_units = c->dims == 1 ? c->w : c->h;
    d.window_first = c->first[k];
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    /* The parts' unit ranges are the larger array's and tile the window. */
    size_t at = c->first[k];
    for (size_t p = 0; p < clf_array_part_count(a); p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        ck_assert_uint_eq(pi.first, at);
        at += pi.count;
    }
    ck_assert_uint_eq(at, c->first[k] + c->cnt[k]);
    return a;
}

/* The halos between windows, through the host: each edge halo from its neighbour's strip. */
static void cross(clf_array *const *a, const cut *c)
{
    float buf[1024];
    size_t nw = c->nw, row = c->unit / sizeof(float);
    ck_assert_uint_le(row, 1024);
    for (size_t k = 0; k < nw; k++) {
        size_t prev = (k + nw - 1) % nw, next = (k + 1) % nw;
        if (k > 0 || c->periodic) {
            ck_assert_ok(clf_array_read_units(a[prev], c->cnt[prev] - 1, 1, buf));
            ck_assert_ok(clf_array_write_halo(a[k], 0, buf));
        }
        if (k + 1 < nw || c->periodic) {
            ck_assert_ok(clf_array_read_units(a[next], 0, 1, buf));
            ck_assert_ok(clf_array_write_halo(a[k], 1, buf));
        }
    }
}

static void run(clf_fleet *f, clf_program *p, const fleet_cfg *cfg, cut *c, unsigned lflags)
{
    size_t units = c->dims == 1 ? c->w : c->h, row = c->dims == 1 ? 1 : c->w;
    size_t n = units * row;
    c->unit = row * sizeof(float);
    float *x = jacobi_grid(n, lflags), *y = malloc(n * sizeof *y), *got = malloc(n * sizeof *x);
    ck_assert(y && got);
    clf_array *in[MAXW], *out[MAXW];
    for (size_t k = 0; k < c->nw; k++) {
        in[k] = make_window(f, cfg, c, k);
        out[k] = make_window(f, cfg, c, k);
        size_t o[3] = {0, 0, 0}, r[3] = {c->w, 1, 1};
        r[c->dims - 1] = c->cnt[k];
        ck_assert_ok(clf_array_write(in[k], o, r, x + c->first[k] * row));
    }
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = c->dims == 1 ? (c->periodic ? "jac1p" : "jac1") : "jac2";
    d.dims = c->dims;
    d.global[0] = c->w;
    d.global[1] = c->dims == 1 ? 1 : c->h;
    d.flags = lflags;
    if (lflags) { /* the first step's input halos */
        for (size_t k = 0; k < c->nw; k++)
            ck_assert_ok(clf_array_exchange(in[k]));
        cross(in, c);
    }
    for (int step = 0; step < STEPS; step++) {
        if (!lflags) {
            for (size_t k = 0; k < c->nw; k++)
                ck_assert_ok(clf_array_exchange(in[k]));
            cross(in, c);
        }
        for (size_t k = 0; k < c->nw; k++) {
            clf_arg args[] = {CLF_ARRAY_IN(in[k]), CLF_ARRAY_OUT(out[k])};
            clf_status st = clf_array_launch(f, p, &d, args, 2);
            ck_assert_msg(st == CLF_SUCCESS, "%s: %s", clf_status_name(st), clf_last_error());
        }
        if (lflags) /* the strips ran first: their units cross while the interior runs */
            cross(out, c);
        for (size_t k = 0; k < c->nw; k++) {
            clf_array *t = in[k];
            in[k] = out[k];
            out[k] = t;
        }
        jacobi_ref_step(&x, &y, c->dims, c->w, c->h, c->periodic);
    }
    for (size_t k = 0; k < c->nw; k++) {
        ck_assert_ok(clf_array_read(in[k], NULL, NULL, got + c->first[k] * row));
        clf_array_destroy(in[k]);
        clf_array_destroy(out[k]);
    }
    for (size_t i = 0; i < n; i++)
        expect(memcmp(&got[i], &x[i], sizeof *x) == 0,
               "%s: %uD %s windows %zu flags %u: element %zu: %.9g, expected %.9g", cfg->label,
               c->dims, c->periodic ? "periodic" : "plain", c->nw, lflags, i, (double)got[i],
               (double)x[i]);
    free(x);
    free(y);
    free(got);
}

START_TEST(jacobi_windows)
{
    test_env e;
    test_env_open(&e, &CFGS[_i], SRC);
    for (unsigned lflags = 0; lflags <= CLF_ARRAY_EXCHANGE_AFTER; lflags += 2)
        for (size_t nw = 2; nw <= 3; nw++) {
            cut c1 = {nw, {0, 300, 700}, {300, 400, 300}, 1000, 1, 0, 1, 0};
            if (nw == 2)
                c1.cnt[1] = 700;
            run(e.f, e.p, e.cfg, &c1, lflags);
            c1.periodic = 1;
            run(e.f, e.p, e.cfg, &c1, lflags);
            cut c2 = {nw, {0, 30, 61}, {30, 31, 39}, 37, 100, 0, 2, 0};
            if (nw == 2)
                c2.cnt[1] = 70;
            run(e.f, e.p, e.cfg, &c2, lflags);
        }
    test_env_close(&e);
}
END_TEST

START_TEST(bad_input)
{
    clf_fleet *f = test_fleet(FLEET2, 0);
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 100;
    d.window_units = 150;
    d.window_first = 51;
    clf_array *a = NULL;
    ck_assert_int_eq(clf_array_create(&a, f, &d), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ptr_null(a);
    d.window_first = 50;
    d.dist = CLF_ARRAY_REPLICATED;
    ck_assert_int_eq(clf_array_create(&a, f, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.dist = CLF_ARRAY_BLOCK;
    d.version = 1; /* the fields were reserved */
    ck_assert_int_eq(clf_array_create(&a, f, &d), CLF_ERROR_INVALID_ARGUMENT);
    d.version = CLF_ARRAY_DESC_VERSION;
    d.halo_before = d.halo_after = 1;
    ck_assert_ok(clf_array_create(&a, f, &d));
    clf_array_part pi;
    ck_assert_ok(clf_array_part_info(&pi, a, 0));
    ck_assert_uint_eq(pi.first, 50);
    ck_assert_uint_eq(pi.halo_before, 1);
    /* The last window of the larger array: no halo after its last unit. */
    float buf[4] = {0};
    ck_assert_int_eq(clf_array_write_halo(a, 1, buf), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_array_write_halo(a, 0, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_array_write_halo(a, 0, buf));
    ck_assert_int_eq(clf_array_read_units(a, 99, 2, buf), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf_array_redistribute(a, &d), CLF_ERROR_UNSUPPORTED);
    clf_array_desc plain = CLF_ARRAY_DESC_INIT;
    plain.elem_size = 4;
    plain.shape[0] = 10;
    clf_array *b = NULL;
    ck_assert_ok(clf_array_create(&b, f, &plain));
    ck_assert_int_eq(clf_array_write_halo(b, 0, buf), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_array_write(b, NULL, NULL, (float[10]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    ck_assert_ok(clf_array_read_units(b, 3, 4, buf));
    ck_assert(buf[0] == 4 && buf[3] == 7);
    clf_array_destroy(a);
    clf_array_destroy(b);
    clf_fleet_destroy(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("window");
    TCase *t = tcase_create("window");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, jacobi_windows, 0, NCFG);
    tcase_add_test(t, bad_input);
    suite_add_tcase(s, t);
    return test_run(s, FLEET4, 4);
}

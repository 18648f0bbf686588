/*
 * Distributed arrays (clf_array): part layouts of every distribution against an independent
 * computation, host write/read round trips of random boxes against a host copy, halo
 * contents (periodic too) read straight from the parts' buffers, lazy reads and map/unmap
 * coherence proven by the fleet's byte counters, and every bad input.
 */
#include <math.h>
#include <time.h>

#include "common.h"

/* ---- helpers --------------------------------------------------------------------------- */

static clf_fleet *F4; /* FLEET4, four single-unit devices */

static void open_f4(void)
{
    F4 = test_fleet(FLEET4, 0);
}

static void close_f4(void)
{
    clf_fleet_destroy(F4);
    F4 = NULL;
}

/* Element size in bytes of a test case (awkward sizes on purpose). */
typedef struct acase {
    clf_array_dist dist;
    unsigned dims;
    size_t shape[3];
    size_t es;
    clf_weights wm;
    size_t hb, ha;
    unsigned flags;
    size_t block;
} acase;

static const double UW[3] = {1.0, 2.5, 0.5};

static const acase CASES[] = {
    {CLF_ARRAY_BLOCK, 1, {1001, 1, 1}, 4, CLF_WEIGHTS_EQUAL, 0, 0, 0, 0},
    {CLF_ARRAY_BLOCK, 1, {997, 1, 1}, 3, CLF_WEIGHTS_USER, 0, 0, 0, 0},
    {CLF_ARRAY_BLOCK, 2, {13, 37, 1}, 4, CLF_WEIGHTS_EQUAL, 2, 1, 0, 0},
    {CLF_ARRAY_BLOCK, 2, {7, 29, 1}, 8, CLF_WEIGHTS_USER, 1, 3, CLF_ARRAY_PERIODIC, 0},
    {CLF_ARRAY_BLOCK, 3, {5, 3, 23}, 2, CLF_WEIGHTS_LEARNED, 2, 2, CLF_ARRAY_PERIODIC, 0},
    {CLF_ARRAY_BLOCK, 3, {6, 5, 3}, 4, CLF_WEIGHTS_EQUAL, 1, 1, CLF_ARRAY_PERIODIC, 0},
    {CLF_ARRAY_BLOCK, 1, {2, 1, 1}, 16, CLF_WEIGHTS_EQUAL, 0, 0, 0, 0}, /* fewer units */
    {CLF_ARRAY_REPLICATED, 1, {333, 1, 1}, 4, CLF_WEIGHTS_EQUAL, 0, 0, 0, 0},
    {CLF_ARRAY_REPLICATED, 3, {4, 5, 6}, 1, CLF_WEIGHTS_EQUAL, 0, 0, 0, 0},
    {CLF_ARRAY_BLOCK_CYCLIC, 1, {1000, 1, 1}, 4, CLF_WEIGHTS_EQUAL, 0, 0, 0, 7},
    {CLF_ARRAY_BLOCK_CYCLIC, 2, {9, 50, 1}, 4, CLF_WEIGHTS_EQUAL, 0, 0, 0, 4},
    {CLF_ARRAY_BLOCK_CYCLIC, 3, {3, 4, 11}, 8, CLF_WEIGHTS_EQUAL, 0, 0, 0, 0},
    {CLF_ARRAY_BLOCK_CYCLIC, 1, {5, 1, 1}, 4, CLF_WEIGHTS_EQUAL, 0, 0, 0, 2}, /* < devices */
};
#define NCASES (sizeof CASES / sizeof CASES[0])

static clf_array_desc case_desc(const acase *c)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = c->es;
    d.dims = c->dims;
    memcpy(d.shape, c->shape, sizeof d.shape);
    d.dist = c->dist;
    d.weights_mode = c->wm;
    d.weights = c->wm == CLF_WEIGHTS_USER ? UW : NULL;
    d.devices = DEV3;
    d.num_devices = 3;
    d.halo_before = c->hb;
    d.halo_after = c->ha;
    d.flags = c->flags;
    d.block_size = c->block;
    return d;
}

static size_t unit_bytes(const acase *c)
{
    size_t u = c->es;
    for (unsigned i = 0; i + 1 < c->dims; i++)
        u *= c->shape[i];
    return u;
}

static size_t units_of(const acase *c)
{
    return c->shape[c->dims - 1];
}

/* ---- layout ---------------------------------------------------------------------------- */

/* The layout against an independent computation of each distribution. */
START_TEST(layout)
{
    const acase *c = &CASES[_i];
    clf_array_desc d = case_desc(c);
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    size_t np = clf_array_part_count(a), U = units_of(c), ub = unit_bytes(c);
    size_t covered = 0;
    for (size_t p = 0; p < np; p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        ck_assert_ptr_nonnull(pi.buffer);
        ck_assert_uint_eq(clf_buffer_device(pi.buffer), pi.device);
        ck_assert_uint_ge(clf_buffer_size(pi.buffer),
                          pi.offset + (pi.halo_before + pi.count + pi.halo_after) * ub);
        ck_assert_uint_gt(pi.count, 0);
        if (c->dist == CLF_ARRAY_BLOCK) {
            /* Parts in device order, contiguous. */
            ck_assert_uint_eq(pi.first, covered);
            ck_assert_uint_eq(pi.offset, 0);
            if (c->wm == CLF_WEIGHTS_EQUAL) {
                size_t k = U < 3 ? U : 3; /* devices with a part */
                ck_assert_uint_eq(np, k);
                ck_assert_uint_eq(pi.count, U / 3 + (p < U % 3));
                ck_assert_uint_eq(pi.device, DEV3[p]);
            } else if (c->wm == CLF_WEIGHTS_USER) {
                ck_assert_uint_eq(np, 3);
                double share = (double)U * UW[p] / 4.0;
                expect(fabs((double)pi.count - share) < 1.0, "part %zu: %zu units for %g", p,
                       pi.count, share);
            }
            int per = (c->flags & CLF_ARRAY_PERIODIC) != 0;
            ck_assert_uint_eq(pi.halo_before, p > 0 || per ? c->hb : 0);
            ck_assert_uint_eq(pi.halo_after, p + 1 < np || per ? c->ha : 0);
            covered += pi.count;
        } else if (c->dist == CLF_ARRAY_REPLICATED) {
            ck_assert_uint_eq(np, 3);
            ck_assert_uint_eq(pi.first, 0);
            ck_assert_uint_eq(pi.count, U);
            ck_assert_uint_eq(pi.device, DEV3[p]);
            covered = U;
        } else {
            size_t b = c->block ? c->block : 1, nb = (U + b - 1) / b, k = nb < 3 ? nb : 3;
            ck_assert_uint_eq(np, nb);
            ck_assert_uint_eq(pi.first, p * b);
            ck_assert_uint_eq(pi.count, U - p * b < b ? U - p * b : b);
            ck_assert_uint_eq(pi.device, DEV3[p % k]);
            ck_assert_uint_eq(pi.offset, (p / k) * b * ub);
            covered += pi.count;
        }
    }
    ck_assert_uint_eq(covered, U);
    clf_array_part pi;
    ck_assert_status(clf_array_part_info(&pi, a, np), CLF_ERROR_OUT_OF_RANGE);
    clf_array_destroy(a);
}
END_TEST

/* ---- write/read ------------------------------------------------------------------------ */

static void fill_random(unsigned char *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)xorshift64(s);
}

/* A random box of the case's shape. */
static void random_box(const acase *c, uint64_t *s, size_t o[3], size_t r[3])
{
    for (unsigned i = 0; i < 3; i++) {
        if (i >= c->dims) {
            o[i] = 0;
            r[i] = 1;
            continue;
        }
        o[i] = xorshift64(s) % c->shape[i];
        r[i] = 1 + xorshift64(s) % (c->shape[i] - o[i]);
    }
}

/* Copy a box between the full host copy and packed memory. */
static void box_io(const acase *c, unsigned char *full, unsigned char *packed, const size_t o[3],
                   const size_t r[3], int to_packed)
{
    size_t s0 = c->shape[0], s1 = c->dims > 1 ? c->shape[1] : 1, row = r[0] * c->es;
    for (size_t z = 0; z < r[2]; z++)
        for (size_t y = 0; y < r[1]; y++) {
            unsigned char *m = full + (((o[2] + z) * s1 + o[1] + y) * s0 + o[0]) * c->es;
            unsigned char *h = packed + (z * r[1] + y) * row;
            if (to_packed)
                memcpy(h, m, row);
            else
                memcpy(m, h, row);
        }
}

/* Every part's buffer against the host copy: owned units and halos (wrapped when periodic). */
static void check_parts(clf_array *a, const acase *c, const unsigned char *ref)
{
    size_t ub = unit_bytes(c), U = units_of(c);
    ck_assert_ok(clf_array_finish(a));
    for (size_t p = 0; p < clf_array_part_count(a); p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        size_t R = pi.halo_before + pi.count + pi.halo_after;
        unsigned char *got = malloc(R * ub);
        ck_assert_ok(clf_buffer_read(pi.buffer, pi.offset, R * ub, got));
        for (size_t k = 0; k < R; k++) {
            size_t g = (pi.first + U - pi.halo_before + k) % U;
            expect(!memcmp(got + k * ub, ref + g * ub, ub),
                   "part %zu (device %zu) region unit %zu (global %zu) differs", p, pi.device, k,
                   g);
        }
        free(got);
    }
}

static size_t settle_bytes(clf_direction dir, uint64_t want)
{
    clf_fleet_metrics m;
    for (int t = 0; t < 200; t++) {
        ck_assert_ok(clf_metrics_fleet(&m, F4));
        if (m.dir[dir].bytes >= want)
            break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return (size_t)m.dir[dir].bytes;
}

/* Whole write and read, random boxes both ways against a host copy, halos after writes,
 * and lazy reads: the first read fetches each part once, a second moves nothing. */
START_TEST(write_read)
{
    const acase *c = &CASES[_i];
    clf_array_desc d = case_desc(c);
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    size_t ub = unit_bytes(c), U = units_of(c), bytes = ub * U;
    unsigned char *ref = malloc(bytes), *got = malloc(bytes), *box = malloc(bytes);
    uint64_t s = 0x9e3779b97f4a7c15ull + _i;
    fill_random(ref, bytes, &s);
    ck_assert_ok(clf_array_write(a, NULL, NULL, ref));
    check_parts(a, c, ref);

    ck_assert_ok(clf_metrics_reset(F4));
    memset(got, 0, bytes);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, bytes), "whole read differs");
    size_t fetched = settle_bytes(CLF_DIRECTION_FROM_DEVICE, bytes);
    ck_assert_uint_eq(fetched, bytes); /* each unit once (one copy of a replicated array) */
    memset(got, 0, bytes);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, bytes), "second read differs");
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    ck_assert_uint_eq(settle_bytes(CLF_DIRECTION_FROM_DEVICE, bytes), bytes); /* lazy */

    for (int it = 0; it < 12; it++) {
        size_t o[3], r[3];
        random_box(c, &s, o, r);
        size_t n = r[0] * r[1] * r[2] * c->es;
        fill_random(box, n, &s);
        ck_assert_ok(clf_array_write(a, o, r, box));
        box_io(c, ref, box, o, r, 0);
        random_box(c, &s, o, r);
        n = r[0] * r[1] * r[2] * c->es;
        ck_assert_ok(clf_array_read(a, o, r, box));
        box_io(c, ref, got, o, r, 1);
        expect(!memcmp(got, box, n), "box read %d differs", it);
    }
    /* Writes went to the devices and the mirror: reading everything still moves nothing. */
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, bytes), "final read differs");
    nanosleep(&ts, NULL);
    ck_assert_uint_eq(settle_bytes(CLF_DIRECTION_FROM_DEVICE, bytes), bytes);
    check_parts(a, c, ref);
    clf_array_destroy(a);
    free(ref);
    free(got);
    free(box);
}
END_TEST

/* ---- map and unmap ----------------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* How many region units of all parts hold global unit g (owned, halo or replica). */
static size_t holders(clf_array *a, size_t U, size_t g)
{
    size_t n = 0;
    for (size_t p = 0; p < clf_array_part_count(a); p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        size_t R = pi.halo_before + pi.count + pi.halo_after;
        for (size_t k = 0; k < R; k++)
            n += (pi.first + U - pi.halo_before + k) % U == g;
    }
    return n;
}

/* Map READ fetches only stale parts, WRITE makes the devices' copies stale (owned units and
 * halos are uploaded from the mirror before their next use), DISCARD fetches nothing. */
START_TEST(map_unmap)
{
    const acase *c = &CASES[_i];
    clf_array_desc d = case_desc(c);
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    size_t ub = unit_bytes(c), U = units_of(c), bytes = ub * U;
    unsigned char *ref = malloc(bytes), *got = malloc(bytes);
    uint64_t s = 0x243f6a8885a308d3ull + _i;
    fill_random(ref, bytes, &s);
    ck_assert_ok(clf_array_write(a, NULL, NULL, ref));
    ck_assert_ok(clf_metrics_reset(F4));

    /* READ: everything once, then nothing. */
    void *m = NULL;
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_READ));
    ck_assert_msg(!memcmp(m, ref, bytes), "mapped contents differ");
    ck_assert_ok(clf_array_unmap(a));
    ck_assert_uint_eq(settle_bytes(CLF_DIRECTION_FROM_DEVICE, bytes), bytes);
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_READ | CLF_MAP_WRITE));
    ck_assert_msg(!memcmp(m, ref, bytes), "mapped contents differ");
    /* The host changes every unit: every device copy (and halo) is stale after unmap. */
    fill_random(ref, bytes, &s);
    memcpy(m, ref, bytes);
    ck_assert_ok(clf_array_unmap(a));
    sleep_ms(20);
    clf_fleet_metrics fm;
    ck_assert_ok(clf_metrics_fleet(&fm, F4));
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, bytes);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, 0); /* lazy: nothing yet */
    /* Reads come from the mirror. */
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, bytes), "read after a mapped write differs");

    /* A one-element write into each part uploads that part's region first (owned units and
     * halos from the mirror), then writes the element. */
    ck_assert_ok(clf_metrics_reset(F4));
    size_t np = clf_array_part_count(a), up = 0;
    for (size_t p = 0; p < np; p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        size_t o[3] = {0, 0, 0}, r[3] = {1, 1, 1};
        o[c->dims - 1] = pi.first;
        unsigned char e[128];
        fill_random(e, c->es, &s);
        size_t idx = pi.first * (ub / c->es);
        memcpy(ref + idx * c->es, e, c->es);
        ck_assert_ok(clf_array_write(a, o, r, e));
        up += (pi.halo_before + pi.count + pi.halo_after) * ub; /* its upload */
        up += holders(a, U, pi.first) * c->es;                    /* the element, each copy */
    }
    ck_assert_uint_eq(settle_bytes(CLF_DIRECTION_TO_DEVICE, up), up);
    check_parts(a, c, ref);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, bytes), "read after uploads differs");

    /* DISCARD: nothing fetched, even where the devices hold newer data. */
    ck_assert_ok(clf_metrics_reset(F4));
    fill_random(ref, bytes, &s);
    ck_assert_ok(clf_array_write(a, NULL, NULL, ref));
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_WRITE | CLF_MAP_DISCARD));
    fill_random(ref, bytes, &s);
    memcpy(m, ref, bytes);
    ck_assert_ok(clf_array_unmap(a));
    sleep_ms(20);
    ck_assert_ok(clf_metrics_fleet(&fm, F4));
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, 0);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, bytes), "read after a discarding map differs");
    clf_array_destroy(a); /* with stale device copies: nothing to upload, nothing leaks */
    free(ref);
    free(got);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------------- */

START_TEST(bad_input)
{
    clf_array *a = NULL;
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 100;
    ck_assert_status(clf_array_create(NULL, F4, &d), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_create(&a, NULL, &d), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_create(&a, F4, NULL), CLF_ERROR_NULL_POINTER);
    clf_array_desc b = d;
    b.version = 0;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "CLF_ARRAY_DESC_INIT"), "%s", clf_last_error());
    b = d, b.version = CLF_ARRAY_DESC_VERSION + 1;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.dims = 0;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.dims = 4;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.elem_size = 0;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.elem_size = 129;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.shape[0] = 0;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_ZERO_SIZE);
    b = d, b.dims = 3, b.shape[0] = SIZE_MAX / 2, b.shape[1] = 4, b.shape[2] = 2;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_SIZE_OVERFLOW);
    b = d, b.dims = 2, b.shape[0] = SIZE_MAX / 8, b.shape[1] = 3;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_SIZE_OVERFLOW);
    b = d, b.dist = (clf_array_dist)7;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.weights_mode = (clf_weights)9;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.weights_mode = CLF_WEIGHTS_USER;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_NULL_POINTER);
    double neg[4] = {1, -1, 1, 1}, zero[4] = {0, 0, 0, 0}, nan4[4] = {1, NAN, 1, 1};
    b.weights = neg;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b.weights = zero;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b.weights = nan4;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    size_t dup[2] = {1, 1}, far[2] = {0, 9};
    b = d, b.devices = dup, b.num_devices = 2;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.devices = far, b.num_devices = 2;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_OUT_OF_RANGE);
    b = d, b.devices = far, b.num_devices = 0;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.devices = NULL, b.num_devices = 2;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_NULL_POINTER);
    b = d, b.halo_before = 26; /* parts of 25 units on four devices */
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.halo_after = 26;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.dist = CLF_ARRAY_REPLICATED, b.halo_before = 1;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.flags = 0x10;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    b = d, b.reserved[2] = 1;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(a);

    /* Host access. */
    d.dims = 2, d.shape[0] = 10, d.shape[1] = 20;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    unsigned buf[200] = {0};
    size_t o[2] = {0, 0}, r[2] = {10, 20};
    ck_assert_status(clf_array_write(NULL, NULL, NULL, buf), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_write(a, NULL, NULL, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_read(a, NULL, NULL, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_read(NULL, NULL, NULL, buf), CLF_ERROR_NULL_POINTER);
    r[1] = 0;
    ck_assert_status(clf_array_write(a, o, r, buf), CLF_ERROR_ZERO_SIZE);
    r[1] = 21;
    ck_assert_status(clf_array_write(a, o, r, buf), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_array_read(a, o, r, buf), CLF_ERROR_OUT_OF_RANGE);
    o[0] = 10, r[0] = 1, r[1] = 1;
    ck_assert_status(clf_array_read(a, o, r, buf), CLF_ERROR_OUT_OF_RANGE);
    o[0] = 5, r[0] = SIZE_MAX;
    ck_assert_status(clf_array_read(a, o, r, buf), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_array_part_info(NULL, a, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_uint_eq(clf_array_part_count(NULL), 0);
    ck_assert_status(clf_array_finish(NULL), CLF_ERROR_NULL_POINTER);
    void *m = NULL;
    ck_assert_status(clf_array_map(NULL, a, CLF_MAP_READ), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_map(&m, NULL, CLF_MAP_READ), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_map(&m, a, 0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_map(&m, a, 8), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_map(&m, a, CLF_MAP_DISCARD), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_map(&m, a, CLF_MAP_DISCARD | CLF_MAP_WRITE | CLF_MAP_READ),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_unmap(a), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_unmap(NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_READ));
    ck_assert_status(clf_array_map(&m, a, CLF_MAP_READ), CLF_ERROR_BUSY);
    ck_assert_status(clf_array_read(a, NULL, NULL, buf), CLF_ERROR_BUSY);
    ck_assert_status(clf_array_write(a, NULL, NULL, buf), CLF_ERROR_BUSY);
    ck_assert_ok(clf_array_unmap(a));
    clf_array_destroy(a);
    clf_array_destroy(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("array");
    TCase *tc = tcase_create("objects");
    tcase_add_unchecked_fixture(tc, open_f4, close_f4);
    tcase_add_loop_test(tc, layout, 0, (int)NCASES);
    tcase_add_loop_test(tc, write_read, 0, (int)NCASES);
    tcase_add_loop_test(tc, map_unmap, 0, (int)NCASES);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET4, 4);
}

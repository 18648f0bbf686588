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

/* The array of a case on F4; fails the test when it cannot be created. */
static clf_array *case_array(const acase *c)
{
    clf_array_desc d = case_desc(c);
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    return a;
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
    clf_array *a = case_array(c);
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
    clf_array *a = case_array(c);
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
    clf_array *a = case_array(c);
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

/* ---- redistribution ------------------------------------------------------------------ */

/* Distributions of one shape, each to each. */
static clf_array_desc redist_desc(int k, unsigned dims, const size_t shape[3])
{
    static const size_t two[2] = {3, 1};
    static const double w3[3] = {3, 1, 2};
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.dims = dims;
    memcpy(d.shape, shape, sizeof d.shape);
    d.devices = DEV3;
    d.num_devices = 3;
    switch (k) {
    case 0: /* equal blocks */
        break;
    case 1: /* user weights, periodic halo */
        d.weights_mode = CLF_WEIGHTS_USER;
        d.weights = w3;
        d.halo_before = 1;
        d.halo_after = 2;
        d.flags = CLF_ARRAY_PERIODIC;
        break;
    case 2:
        d.dist = CLF_ARRAY_REPLICATED;
        break;
    case 3:
        d.dist = CLF_ARRAY_BLOCK_CYCLIC;
        d.block_size = 3;
        break;
    case 4: /* two other devices, a halo */
        d.devices = two;
        d.num_devices = 2;
        d.halo_before = 2;
        d.halo_after = 1;
        break;
    default:
        d.dist = CLF_ARRAY_BLOCK_CYCLIC;
        d.block_size = 1;
        d.devices = NULL;
        d.num_devices = 0;
        break;
    }
    return d;
}
#define NREDIST 6

static const size_t RSHAPE[3][3] = {{301, 1, 1}, {5, 41, 1}, {3, 2, 19}};

static acase desc_case(const clf_array_desc *d)
{
    acase c = {d->dist, d->dims, {d->shape[0], d->shape[1], d->shape[2]}, d->elem_size,
               d->weights_mode, d->halo_before, d->halo_after, d->flags, d->block_size};
    return c;
}

/* Bytes the new layout's parts hold (what a redistribution copies). */
static size_t layout_bytes(clf_array *a, size_t ub)
{
    size_t n = 0;
    for (size_t p = 0; p < clf_array_part_count(a); p++) {
        clf_array_part pi;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        n += (pi.halo_before + pi.count + pi.halo_after) * ub;
    }
    return n;
}

/* Every distribution to every other, 1 to 3 dimensions: contents in every part's buffer,
 * halos included; in one context the copies move no byte through the host. */
START_TEST(redistribute)
{
    unsigned dims = 1 + (unsigned)_i;
    const size_t *shape = RSHAPE[_i];
    size_t U = shape[dims - 1], ub = 4 * (dims > 1 ? shape[0] : 1) * (dims > 2 ? shape[1] : 1);
    size_t bytes = U * ub;
    unsigned char *ref = malloc(bytes), *got = malloc(bytes);
    uint64_t s = 77 + _i;
    for (int from = 0; from < NREDIST; from++)
        for (int to = 0; to < NREDIST; to++) {
            clf_array_desc df = redist_desc(from, dims, shape), dt = redist_desc(to, dims, shape);
            clf_array *a = NULL;
            ck_assert_ok(clf_array_create(&a, F4, &df));
            fill_random(ref, bytes, &s);
            ck_assert_ok(clf_array_write(a, NULL, NULL, ref));
            ck_assert_ok(clf_array_finish(a));
            sleep_ms(5);
            ck_assert_ok(clf_metrics_reset(F4));
            ck_assert_ok(clf_array_redistribute(a, &dt));
            sleep_ms(5);
            clf_fleet_metrics fm;
            ck_assert_ok(clf_metrics_fleet(&fm, F4));
            expect(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes == 0 &&
                       fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes == 0,
                   "%d -> %d: %llu bytes to and %llu from the host", from, to,
                   (unsigned long long)fm.dir[CLF_DIRECTION_TO_DEVICE].bytes,
                   (unsigned long long)fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes);
            /* Every byte of the new layout was copied: between devices (peer) or, for a
             * part that stayed on its device, within it (counted apart since issue 29). */
            size_t moved = layout_bytes(a, ub);
            expect(fm.dir[CLF_DIRECTION_PEER].bytes + fm.same_device_bytes == moved,
                   "%d -> %d: %llu peer bytes and %llu within devices, %zu", from, to,
                   (unsigned long long)fm.dir[CLF_DIRECTION_PEER].bytes,
                   (unsigned long long)fm.same_device_bytes, moved);
            acase c = desc_case(&dt);
            check_parts(a, &c, ref);
            /* The layout is the new one. */
            clf_array *fresh = NULL;
            ck_assert_ok(clf_array_create(&fresh, F4, &dt));
            ck_assert_uint_eq(clf_array_part_count(a), clf_array_part_count(fresh));
            for (size_t p = 0; p < clf_array_part_count(a); p++) {
                clf_array_part x, y;
                ck_assert_ok(clf_array_part_info(&x, a, p));
                ck_assert_ok(clf_array_part_info(&y, fresh, p));
                expect(x.device == y.device && x.first == y.first && x.count == y.count &&
                           x.halo_before == y.halo_before && x.halo_after == y.halo_after &&
                           x.offset == y.offset,
                       "%d -> %d: part %zu differs from a fresh array's", from, to, p);
            }
            clf_array_destroy(fresh);
            ck_assert_ok(clf_array_read(a, NULL, NULL, got));
            expect(!memcmp(got, ref, bytes), "%d -> %d: contents differ", from, to);
            clf_array_destroy(a);
        }
    free(ref);
    free(got);
}
END_TEST

/* Whether every device holding a part of a is host-unified and in context ctx (set to the
 * first part's context when *ctx is -1): copies among such devices never stage through the
 * host. A discrete GPU, or a GPU and a CPU (two platforms, so two contexts even in a "shared
 * context" fleet), break it. */
static int parts_in_one_unified_context(clf_array *a, clf_fleet *f, long *ctx)
{
    for (size_t p = 0; p < clf_array_part_count(a); p++) {
        clf_array_part pi;
        clf_device_info di;
        ck_assert_ok(clf_array_part_info(&pi, a, p));
        ck_assert_ok(clf_device_get_info(&di, f, pi.device));
        if (*ctx < 0)
            *ctx = (long)di.context_index;
        if (!di.host_unified || (long)di.context_index != *ctx)
            return 0;
    }
    return 1;
}

/* Data the host wrote last (a mapped write) moves too; a refused redistribution changes
 * nothing; per-device contexts move the bytes by the staged path, never to the host's
 * mirror. */
START_TEST(redistribute_host_newer)
{
    size_t shape[3] = {7, 30, 1};
    clf_fleet *f = _i ? test_fleet(FLEET4, 1) : F4;
    clf_array_desc d = redist_desc(1, 2, shape), e = redist_desc(3, 2, shape);
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    size_t bytes = 7 * 30 * 4;
    unsigned char *ref = malloc(bytes), *got = malloc(bytes);
    uint64_t s = 5;
    void *m;
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_WRITE | CLF_MAP_DISCARD));
    fill_random(ref, bytes, &s);
    memcpy(m, ref, bytes);
    ck_assert_ok(clf_array_unmap(a));
    clf_array_desc bad = e;
    bad.shape[0] = 8;
    ck_assert_status(clf_array_redistribute(a, &bad), CLF_ERROR_INVALID_ARGUMENT);
    bad = e, bad.dist = CLF_ARRAY_BLOCK, bad.halo_before = 20;
    ck_assert_status(clf_array_redistribute(a, &bad), CLF_ERROR_INVALID_ARGUMENT);
    bad = e, bad.version = 0;
    ck_assert_status(clf_array_redistribute(a, &bad), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_redistribute(a, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_redistribute(NULL, &e), CLF_ERROR_NULL_POINTER);
    ck_assert_uint_eq(clf_array_part_count(a), 3);
    ck_assert_ok(clf_array_redistribute(a, &e));
    ck_assert_uint_eq(clf_array_part_count(a), 10);
    acase c = desc_case(&e);
    check_parts(a, &c, ref);
    long ctx = -1;
    int unified = parts_in_one_unified_context(a, f, &ctx);
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_array_redistribute(a, &d));
    unified = parts_in_one_unified_context(a, f, &ctx) && unified;
    sleep_ms(10);
    clf_fleet_metrics fm;
    ck_assert_ok(clf_metrics_fleet(&fm, f));
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, 0);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, 0);
    size_t moved = layout_bytes(a, 7 * 4);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_PEER].bytes + fm.same_device_bytes, moved);
    uint64_t staged = fm.path[CLF_PATH_STAGED].bytes;
    if (_i)
        ck_assert_uint_gt(staged, 0); /* contexts apart: through pinned host buffers */
    else if (unified)
        ck_assert_uint_eq(staged, 0);
    else /* said, not passed silently: the other checks still hold */
        fprintf(stderr, "note: redistribute_host_newer: the fleet's devices are not all "
                "host-unified in one context (a discrete GPU or two platforms): %llu bytes "
                "staged, the shared-context check (none) does not apply\n",
                (unsigned long long)staged);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got)); /* the mirror was current: no fetch */
    ck_assert_msg(!memcmp(got, ref, bytes), "contents differ");
    sleep_ms(10);
    ck_assert_ok(clf_metrics_fleet(&fm, f));
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, 0);
    c = desc_case(&d);
    check_parts(a, &c, ref);
    clf_array_destroy(a);
    if (_i)
        clf_fleet_destroy(f);
    free(ref);
    free(got);
}
END_TEST

/* ---- reductions ---------------------------------------------------------------------- */

/* A value of type t from random bits (floats in [-1, 1), integers in a small range so
 * sums exercise carries, and negative values). */
static void rand_elem(clf_type t, void *out, uint64_t *s)
{
    uint64_t x = xorshift64(s);
    switch (t) {
    case CLF_TYPE_INT32: {
        int32_t v = (int32_t)(x % 2000001) - 1000000;
        memcpy(out, &v, 4);
        break;
    }
    case CLF_TYPE_FLOAT: {
        float v = (float)((double)(x >> 11) / 9007199254740992.0 * 2 - 1);
        memcpy(out, &v, 4);
        break;
    }
    default: {
        double v = (double)(x >> 11) / 9007199254740992.0 * 200 - 100;
        memcpy(out, &v, 8);
        break;
    }
    }
}

START_TEST(reduce)
{
    static const clf_type types[3] = {CLF_TYPE_INT32, CLF_TYPE_FLOAT, CLF_TYPE_DOUBLE};
    static const clf_reduce_op ops[3] = {CLF_REDUCE_SUM, CLF_REDUCE_MIN, CLF_REDUCE_MAX};
    clf_type t = types[_i % 3];
    size_t shape[3] = {13, 7, 101}, es = clf_type_size(t);
    uint64_t s = 99 + _i;
    for (int dk = 0; dk < NREDIST; dk++) {
        unsigned dims = 1 + (unsigned)(dk % 3);
        size_t sh[3] = {dims == 1 ? 1001 : shape[0], dims == 2 ? 77 : shape[1], shape[2]};
        clf_array_desc d = redist_desc(dk, dims, sh);
        d.elem_size = es;
        clf_array *a = NULL;
        ck_assert_ok(clf_array_create(&a, F4, &d));
        size_t n = sh[0] * (dims > 1 ? sh[1] : 1) * (dims > 2 ? sh[2] : 1);
        unsigned char *v = malloc(n * es);
        for (size_t i = 0; i < n; i++)
            rand_elem(t, v + i * es, &s);
        ck_assert_ok(clf_array_write(a, NULL, NULL, v));
        clf_array_desc rd = CLF_ARRAY_DESC_INIT;
        rd.elem_size = es;
        rd.shape[0] = 1;
        rd.dist = CLF_ARRAY_REPLICATED;
        rd.devices = DEV3 + 1;
        rd.num_devices = 2;
        clf_array *r = NULL;
        ck_assert_ok(clf_array_create(&r, F4, &rd));
        for (int o = 0; o < 3; o++) {
            clf_reduce_op op = ops[o];
            /* The reference: a plain C loop. */
            double dref = 0, dabs = 0;
            uint32_t iref = 0;
            int32_t imm = 0;
            for (size_t i = 0; i < n; i++) {
                double x;
                int32_t xi = 0;
                if (t == CLF_TYPE_INT32) {
                    memcpy(&xi, v + i * 4, 4);
                    x = xi;
                } else if (t == CLF_TYPE_FLOAT) {
                    float f;
                    memcpy(&f, v + i * 4, 4);
                    x = f;
                } else {
                    memcpy(&x, v + i * 8, 8);
                }
                if (op == CLF_REDUCE_SUM) {
                    iref += (uint32_t)xi;
                    dref += x;
                    dabs += fabs(x);
                } else if (i == 0 || (op == CLF_REDUCE_MIN ? x < dref : x > dref)) {
                    dref = x;
                    imm = xi;
                }
            }
            unsigned char res[8] = {0}, rep[8] = {0};
            ck_assert_ok(clf_array_reduce(res, r, a, t, op));
            for (size_t p = 0; p < clf_array_part_count(r); p++) {
                clf_array_part pi;
                ck_assert_ok(clf_array_part_info(&pi, r, p));
                ck_assert_ok(clf_buffer_read(pi.buffer, pi.offset, es, rep));
                expect(!memcmp(rep, res, es), "dist %d op %d: copy %zu of dst differs", dk,
                       (int)op, p);
            }
            size_t o0[3] = {0, 0, 0}, r1[3] = {1, 1, 1};
            memset(rep, 0, sizeof rep);
            ck_assert_ok(clf_array_read(r, o0, r1, rep));
            expect(!memcmp(rep, res, es), "dist %d: dst read differs", dk);
            if (t == CLF_TYPE_INT32) {
                int32_t got;
                memcpy(&got, res, 4);
                int32_t want = op == CLF_REDUCE_SUM ? (int32_t)iref : imm;
                expect(got == want, "dist %d op %d: %d, want %d", dk, (int)op, got, want);
            } else {
                double got;
                if (t == CLF_TYPE_FLOAT) {
                    float f;
                    memcpy(&f, res, 4);
                    got = f;
                } else {
                    memcpy(&got, res, 8);
                }
                /* min and max are exact; a sum's order differs from the loop's. */
                double tol = op != CLF_REDUCE_SUM ? 0
                             : t == CLF_TYPE_FLOAT ? 2e-6 * dabs
                                                   : 1e-13 * dabs;
                expect(fabs(got - dref) <= tol, "dist %d op %d type %d: %.17g, want %.17g", dk,
                       (int)op, (int)t, got, dref);
            }
        }
        /* Only to the host, only to dst. */
        unsigned char r2[8];
        ck_assert_ok(clf_array_reduce(r2, NULL, a, t, CLF_REDUCE_MAX));
        ck_assert_ok(clf_array_reduce(NULL, r, a, t, CLF_REDUCE_MAX));
        clf_array_destroy(r);
        clf_array_destroy(a);
        free(v);
    }
}
END_TEST

START_TEST(reduce_bad)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 50;
    clf_array *a = NULL, *blk = NULL, *r8 = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    ck_assert_ok(clf_array_create(&blk, F4, &d));
    d.dist = CLF_ARRAY_REPLICATED;
    d.elem_size = 8;
    ck_assert_ok(clf_array_create(&r8, F4, &d));
    float res;
    ck_assert_status(clf_array_reduce(&res, NULL, NULL, CLF_TYPE_FLOAT, CLF_REDUCE_SUM),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_reduce(NULL, NULL, a, CLF_TYPE_FLOAT, CLF_REDUCE_SUM),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_array_reduce(&res, NULL, a, (clf_type)0, CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_reduce(&res, NULL, a, CLF_TYPE_FLOAT, (clf_reduce_op)9),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_reduce(&res, NULL, a, CLF_TYPE_DOUBLE, CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_array_reduce(&res, blk, a, CLF_TYPE_FLOAT, CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT); /* dst not replicated */
    ck_assert_status(clf_array_reduce(&res, r8, a, CLF_TYPE_FLOAT, CLF_REDUCE_SUM),
                     CLF_ERROR_INVALID_ARGUMENT); /* dst of other elements */
    void *m;
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_READ));
    ck_assert_status(clf_array_reduce(&res, NULL, a, CLF_TYPE_FLOAT, CLF_REDUCE_SUM),
                     CLF_ERROR_BUSY);
    ck_assert_ok(clf_array_unmap(a));
    clf_array_destroy(a);
    clf_array_destroy(blk);
    clf_array_destroy(r8);
}
END_TEST

/* ---- PoCL's basic device -------------------------------------------------------------- */

/* Writes, reads, a redistribution and a reduction over the basic device (which runs commands
 * inside clEnqueue*) and two others, one context or one per device: right and no deadlock. */
START_TEST(basic_device)
{
    test_watchdog(120);
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    size_t basic, other[2];
    if (test_find_basic(f, &basic, other, "basic_device")) {
        size_t devs[3] = {other[0], basic, other[1]};
        clf_array_desc d = CLF_ARRAY_DESC_INIT;
        d.elem_size = 4;
        d.dims = 2;
        d.shape[0] = 33;
        d.shape[1] = 40;
        d.devices = devs;
        d.num_devices = 3;
        d.halo_before = d.halo_after = 2;
        d.flags = CLF_ARRAY_PERIODIC;
        clf_array *a = NULL;
        ck_assert_ok(clf_array_create(&a, f, &d));
        size_t n = 33 * 40;
        float *v = malloc(n * 4), *got = malloc(n * 4);
        double sum = 0, sabs = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = (float)((int)(lowbias32((uint32_t)i) % 2001) - 1000) / 64.0f;
            sum += v[i];
            sabs += fabs(v[i]);
        }
        ck_assert_ok(clf_array_write(a, NULL, NULL, v));
        acase c = {CLF_ARRAY_BLOCK, 2, {33, 40, 1}, 4, CLF_WEIGHTS_EQUAL, 2, 2,
                   CLF_ARRAY_PERIODIC, 0};
        check_parts(a, &c, (const unsigned char *)v);
        clf_array_desc e = d;
        e.dist = CLF_ARRAY_BLOCK_CYCLIC;
        e.halo_before = e.halo_after = 0;
        e.block_size = 3;
        ck_assert_ok(clf_array_redistribute(a, &e));
        ck_assert_ok(clf_array_read(a, NULL, NULL, got));
        ck_assert_msg(!memcmp(got, v, n * 4), "contents differ after redistribution");
        clf_array_desc rd = CLF_ARRAY_DESC_INIT;
        rd.elem_size = 4;
        rd.shape[0] = 1;
        rd.dist = CLF_ARRAY_REPLICATED;
        rd.devices = devs;
        rd.num_devices = 3;
        clf_array *r = NULL;
        ck_assert_ok(clf_array_create(&r, f, &rd));
        float res = 0, cp = 0;
        ck_assert_ok(clf_array_reduce(&res, r, a, CLF_TYPE_FLOAT, CLF_REDUCE_SUM));
        expect(fabs(res - sum) <= 2e-6 * sabs, "sum %g, want %g", res, sum);
        size_t o[3] = {0, 0, 0}, one[3] = {1, 1, 1};
        ck_assert_ok(clf_array_read(r, o, one, &cp));
        ck_assert(cp == res);
        clf_array_destroy(r);
        clf_array_destroy(a);
        free(v);
        free(got);
    }
    clf_fleet_destroy(f);
    test_watchdog_off();
}
END_TEST

/* One device, periodic: the part's halos wrap onto its own units (three runs of units). */
START_TEST(one_device_periodic)
{
    static const size_t dev1[1] = {1};
    acase c = {CLF_ARRAY_BLOCK, 2, {3, 6, 1}, 4, CLF_WEIGHTS_EQUAL, 5, 6, CLF_ARRAY_PERIODIC, 0};
    clf_array_desc d = case_desc(&c);
    d.devices = dev1;
    d.num_devices = 1;
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    ck_assert_uint_eq(clf_array_part_count(a), 1);
    clf_array_part pi;
    ck_assert_ok(clf_array_part_info(&pi, a, 0));
    ck_assert_uint_eq(pi.halo_before, 5);
    ck_assert_uint_eq(pi.halo_after, 6);
    unsigned char ref[72], box[72];
    uint64_t s = 3;
    fill_random(ref, sizeof ref, &s);
    ck_assert_ok(clf_array_write(a, NULL, NULL, ref));
    check_parts(a, &c, ref);
    size_t o[3] = {1, 4, 0}, r[3] = {2, 2, 1};
    fill_random(box, 16, &s);
    ck_assert_ok(clf_array_write(a, o, r, box));
    box_io(&c, ref, box, (size_t[3]){1, 4, 0}, (size_t[3]){2, 2, 1}, 0);
    check_parts(a, &c, ref);
    void *m;
    ck_assert_ok(clf_array_map(&m, a, CLF_MAP_WRITE | CLF_MAP_DISCARD));
    fill_random(ref, sizeof ref, &s);
    memcpy(m, ref, sizeof ref);
    ck_assert_ok(clf_array_unmap(a));
    ck_assert_ok(clf_array_write(a, o, r, box)); /* uploads the region (halos too) first */
    box_io(&c, ref, box, (size_t[3]){1, 4, 0}, (size_t[3]){2, 2, 1}, 0);
    check_parts(a, &c, ref);
    clf_array_destroy(a);
}
END_TEST

/* A failed device: left out when every device is asked for, refused when listed. */
START_TEST(failed_device)
{
    clf_fleet *f = test_fault_fleet(FLEET2, "device=1,call=enqueue,lost");
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(
        &p, f, "__kernel void seven(__global uint *o) { o[get_global_id(0)] = 7u; }", NULL));
    uint32_t h[256];
    clf_launch_desc ld = CLF_LAUNCH_DESC_INIT;
    ld.kernel = "seven";
    ld.global[0] = 256;
    ld.strategy = CLF_STRATEGY_STATIC;
    clf_arg la = CLF_OUT(h, sizeof h, 4);
    ck_assert_ok(clf_launch(f, p, &ld, &la, 1, NULL));
    ck_assert(clf_device_is_failed(f, 1));
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 100;
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, f, &d));
    ck_assert_uint_eq(clf_array_part_count(a), 1);
    clf_array_part pi;
    ck_assert_ok(clf_array_part_info(&pi, a, 0));
    ck_assert_uint_eq(pi.device, 0);
    ck_assert_uint_eq(pi.count, 100);
    clf_array_destroy(a);
    static const size_t both[2] = {0, 1};
    d.devices = both;
    d.num_devices = 2;
    ck_assert_status(clf_array_create(&a, f, &d), CLF_ERROR_DEVICE_FAILED);
    ck_assert_msg(strstr(clf_last_error(), "device 1"), "%s", clf_last_error());
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* CLF_WEIGHTS_LEARNED: the throughput launches learned for the kernel (found by its function
 * name in the fleet's model, here a model file written beforehand), else compute units x
 * clock. PoCL's basic device has a key of its own (the pthread sub-devices share one). */
START_TEST(learned_weights)
{
    char dir[] = "/tmp/clf-array-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    size_t basic, other[2];
    int have = test_find_basic(f, &basic, other, "learned_weights");
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
    snprintf(path, sizeof path, "%s/perf-v1.tsv", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp, "v1\tlk@0123456789abcdef\t%s|%s|cu=%u\t1\t3000\n", io.name, io.driver_version,
            io.compute_units);
    fprintf(fp, "v1\tlk@0123456789abcdef\t%s|%s|cu=%u\t1\t1000\n", ib.name, ib.driver_version,
            ib.compute_units);
    fclose(fp);
    o.cache_dir = dir;
    ck_assert_ok(clf_fleet_create(&f, &o));
    size_t devs[2] = {other[0], basic};
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.shape[0] = 1001;
    d.devices = devs;
    d.num_devices = 2;
    d.weights_mode = CLF_WEIGHTS_LEARNED;
    d.kernel = "lk";
    clf_array *a = NULL;
    clf_array_part p0, p1;
    ck_assert_ok(clf_array_create(&a, f, &d));
    ck_assert_ok(clf_array_part_info(&p0, a, 0));
    ck_assert_ok(clf_array_part_info(&p1, a, 1));
    ck_assert_uint_eq(p0.count, 751); /* 750.75 and 250.25: the larger remainder */
    ck_assert_uint_eq(p1.count, 250);
    clf_array_destroy(a);
    /* Not learned: compute units x clock. */
    d.kernel = "unknown_kernel";
    ck_assert_ok(clf_array_create(&a, f, &d));
    ck_assert_ok(clf_array_part_info(&p0, a, 0));
    double wo = (double)io.compute_units * (io.clock_mhz ? io.clock_mhz : 1000);
    double wb = (double)ib.compute_units * (ib.clock_mhz ? ib.clock_mhz : 1000);
    double share = 1001.0 * wo / (wo + wb);
    expect(fabs((double)p0.count - share) < 1.0, "%zu units for a share of %g", p0.count,
           share);
    clf_array_destroy(a);
    clf_fleet_destroy(f);
    remove(path);
    rmdir(dir);
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
    b = d, b.reserved[1] = 1;
    ck_assert_status(clf_array_create(&a, F4, &b), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(a);

    /* Host access. */
    d.dims = 2, d.shape[0] = 10, d.shape[1] = 20;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    unsigned buf[200] = {0};
    size_t o[3] = {0, 0, 0}, r[3] = {10, 20, 1};
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

/* A box must fit the array in all three dimensions, those the array does not have included
 * (extent 1 there): a region {10, 2, 1} on a 1-D array of 10 elements used to move the first
 * 10 elements and succeed. A refused box moves nothing; a valid 2-D box still moves exactly
 * its elements (against a plain C copy). */
START_TEST(box_outside_dims)
{
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = 4;
    d.dims = 1;
    d.shape[0] = 10;
    d.devices = DEV3;
    d.num_devices = 3;
    clf_array *a = NULL;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    int32_t ref[10], big[40], got[64];
    for (int i = 0; i < 10; i++)
        ref[i] = 100 + i;
    for (int i = 0; i < 40; i++)
        big[i] = -1 - i;
    ck_assert_ok(clf_array_write(a, NULL, NULL, ref));
    static const struct {
        size_t o[3], r[3];
    } bad[] = {
        {{0, 0, 0}, {10, 2, 1}},        {{0, 0, 0}, {10, 1, 2}},
        {{0, 0, 0}, {5, 1, 4}},         {{0, 1, 0}, {10, 1, 1}},
        {{0, 0, 1}, {1, 1, 1}},         {{0, 0, 0}, {1, SIZE_MAX, 1}},
        {{0, SIZE_MAX, 0}, {1, 1, 1}},  {{0, 0, SIZE_MAX}, {1, 1, 2}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clf_clear_error();
        ck_assert_status(clf_array_write(a, bad[i].o, bad[i].r, big), CLF_ERROR_OUT_OF_RANGE);
        ck_assert_msg(strstr(clf_last_error(), "clf_array_write") &&
                          strstr(clf_last_error(), "does not have"),
                      "case %zu: message '%s'", i, clf_last_error());
        ck_assert_status(clf_array_read(a, bad[i].o, bad[i].r, got), CLF_ERROR_OUT_OF_RANGE);
        ck_assert_msg(strstr(clf_last_error(), "clf_array_read"), "case %zu: '%s'", i,
                      clf_last_error());
    }
    /* Zero in a dimension the array does not have is as empty as anywhere. */
    ck_assert_status(clf_array_write(a, NULL, (size_t[3]){10, 1, 0}, big), CLF_ERROR_ZERO_SIZE);
    memset(got, 0, sizeof got);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, sizeof ref), "a refused write changed the array");
    /* The same box within the array's own dimension is fine. */
    ck_assert_ok(clf_array_write(a, (size_t[3]){3, 0, 0}, (size_t[3]){4, 1, 1}, big));
    memcpy(ref + 3, big, 4 * sizeof *big);
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    ck_assert_msg(!memcmp(got, ref, sizeof ref), "1-D box write differs");
    clf_array_destroy(a);

    /* 2-D, 7 x 6 (dimension 0 fastest): the box origin {2, 1}, region {4, 3}. */
    d.dims = 2, d.shape[0] = 7, d.shape[1] = 6;
    ck_assert_ok(clf_array_create(&a, F4, &d));
    int32_t full[42], box[12];
    for (int i = 0; i < 42; i++)
        full[i] = 7 * i + 1;
    for (int i = 0; i < 12; i++)
        box[i] = -100 - i;
    ck_assert_ok(clf_array_write(a, NULL, NULL, full));
    size_t o[3] = {2, 1, 0}, r[3] = {4, 3, 1};
    ck_assert_ok(clf_array_write(a, o, r, box));
    for (size_t y = 0; y < 3; y++)
        for (size_t x = 0; x < 4; x++)
            full[(o[1] + y) * 7 + o[0] + x] = box[y * 4 + x];
    ck_assert_ok(clf_array_read(a, NULL, NULL, got));
    for (int i = 0; i < 42; i++)
        ck_assert_msg(got[i] == full[i], "2-D box write: element %d is %d, want %d", i, got[i],
                      full[i]);
    size_t o2[3] = {1, 3, 0}, r2[3] = {5, 3, 1};
    ck_assert_ok(clf_array_read(a, o2, r2, got));
    for (size_t y = 0; y < 3; y++)
        for (size_t x = 0; x < 5; x++)
            ck_assert_int_eq(got[y * 5 + x], full[(o2[1] + y) * 7 + o2[0] + x]);
    /* And a third dimension it does not have is refused there too. */
    r2[2] = 2;
    ck_assert_status(clf_array_read(a, o2, r2, got), CLF_ERROR_OUT_OF_RANGE);
    clf_array_destroy(a);
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
    tcase_add_test(tc, one_device_periodic);
    tcase_add_test(tc, failed_device);
    tcase_add_test(tc, learned_weights);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, box_outside_dims);
    tcase_add_loop_test(tc, redistribute, 0, 3);
    tcase_add_loop_test(tc, redistribute_host_newer, 0, 2);
    tcase_add_loop_test(tc, reduce, 0, 3);
    tcase_add_test(tc, reduce_bad);
    tcase_add_loop_test(tc, basic_device, 0, 2);
    suite_add_tcase(s, tc);
    return test_run_fleet4_fleet2(s);
}

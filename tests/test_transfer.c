/*
 * Device-to-device copies: every ordered pair of three devices in one shared context and in
 * one context per device, on sub-devices and on PoCL's root devices (two pthread, one
 * basic); random offsets and sizes checked against a host model of every buffer; forced
 * staging by option and by environment, the pinned pipeline on its own; path queries; bad
 * input; event ordering across contexts (producer kernel, copy, consumer kernel); bridges
 * from user events, copies and launches; and the CUDA path end to end on a stand-in driver.
 */
#include "common.h"

#include <dlfcn.h>
#include <stdint.h>
#include <unistd.h>

#include "clfleet/opencl.h"

/* Sub-devices of one compute unit of the pthread devices (4 here); we use three. */
#define FLEET_SUB TEST_CPUS ";name=pthread;split=1"
/* The three root devices: a basic one (runs commands inside clEnqueue*) and two pthread. */
#define FLEET_ROOT TEST_CPUS

typedef struct cfg {
    const char *selection;
    int context_per_device;
    const char *label;
} cfg;

static const cfg CFGS[] = {
    {FLEET_SUB, 0, "sub-devices, shared context"},
    {FLEET_SUB, 1, "sub-devices, context per device"},
    {FLEET_ROOT, 0, "root devices, shared context"},
    {FLEET_ROOT, 1, "root devices, context per device"},
};
#define NCFGS ((int)(sizeof CFGS / sizeof CFGS[0]))
#define NDEV 3

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    return xorshift64(&rng_state);
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

/*
 * Fleets of sub-devices are made once per set of options and kept until the process ends:
 * PoCL 3.1 can crash in its pthread worker when sub-devices are released just after their
 * queues finish and new ones are made (a race inside PoCL, seen with plain OpenCL too), so
 * this suite does not churn them. Fleets of root devices are made and destroyed as usual.
 */
#define MAX_CACHED 32
static struct cached {
    char key[512];
    clf_fleet *f;
} cache[MAX_CACHED];
static size_t ncached;

static const char *env_or(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "-";
}

static clf_fleet *make_fleet(const char *selection, int per_device, const char *transfer)
{
    int sub = strstr(selection, "split=") != NULL;
    char key[512];
    snprintf(key, sizeof key, "%s|%d|%s|%s|%s|%s|%s|%s", selection, per_device,
             transfer ? transfer : "-", env_or("CLFLEET_TRANSFER"),
             env_or("CLFLEET_TRANSFER_STAGING"), env_or("CLFLEET_TRANSFER_CHUNK"),
             env_or("CLFLEET_TEST_CUDA_EMULATE"), env_or("FAKE_CUDA_FAIL"));
    for (size_t i = 0; sub && i < ncached; i++)
        if (strcmp(cache[i].key, key) == 0)
            return cache[i].f;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = NULL;
    o.devices = selection;
    o.context_per_device = per_device;
    o.transfer = transfer;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_uint_ge(clf_fleet_device_count(f), NDEV);
    if (sub) {
        ck_assert_uint_lt(ncached, MAX_CACHED);
        snprintf(cache[ncached].key, sizeof cache[ncached].key, "%s", key);
        cache[ncached++].f = f;
    }
    return f;
}

/* Done with a fleet from make_fleet(). */
static void done_fleet(clf_fleet *f)
{
    for (size_t i = 0; i < ncached; i++)
        if (cache[i].f == f)
            return; /* kept: see above */
    clf_fleet_destroy(f);
}

/* A buffer on each of the first three devices, with its host model. */
typedef struct bufs {
    clf_buffer *b[NDEV];
    unsigned char *model[NDEV];
    size_t size;
} bufs;

static void bufs_create(bufs *B, clf_fleet *f, size_t size, unsigned seed)
{
    B->size = size;
    for (size_t d = 0; d < NDEV; d++) {
        ck_assert_ok(clf_buffer_create(&B->b[d], f, d, size, 0));
        B->model[d] = malloc(size);
        ck_assert_ptr_nonnull(B->model[d]);
        fill_pattern(B->model[d], size, seed + (unsigned)d * 7919u);
        ck_assert_ok(clf_buffer_write(B->b[d], 0, size, B->model[d]));
    }
}

static void bufs_check(const bufs *B, size_t d, const char *what)
{
    unsigned char *got = malloc(B->size);
    ck_assert_ptr_nonnull(got);
    ck_assert_ok(clf_buffer_read(B->b[d], 0, B->size, got));
    if (memcmp(got, B->model[d], B->size) != 0) {
        size_t i = 0;
        while (got[i] == B->model[d][i])
            i++;
        ck_abort_msg("%s: device %zu byte %zu is 0x%02x, expected 0x%02x", what, d, i, got[i],
                     B->model[d][i]);
    }
    free(got);
}

static void bufs_destroy(bufs *B)
{
    for (size_t d = 0; d < NDEV; d++) {
        clf_buffer_destroy(B->b[d]);
        free(B->model[d]);
    }
}

/* Copy [soff, soff+n) of device s to doff on device d, in the buffers and in the model. */
static void copy_checked(bufs *B, size_t d, size_t doff, size_t s, size_t soff, size_t n,
                         int async, const char *label)
{
    if (async) {
        clf_event *e = NULL;
        ck_assert_ok(clf_copy_async(B->b[d], doff, B->b[s], soff, n, NULL, 0, &e));
        ck_assert_ptr_nonnull(e);
        ck_assert_ok(clf_event_wait(e));
        clf_event_release(e);
    } else {
        ck_assert_ok(clf_copy(B->b[d], doff, B->b[s], soff, n));
    }
    memmove(B->model[d] + doff, B->model[s] + soff, n);
    char what[256];
    snprintf(what, sizeof what, "%s: %zu -> %zu, %zu bytes from %zu to %zu%s", label, s, d, n,
             soff, doff, async ? " (async)" : "");
    bufs_check(B, d, what);
}

/* Random regions for every ordered pair, the same device included. */
static void every_pair(clf_fleet *f, const char *label, size_t size)
{
    bufs B;
    bufs_create(&B, f, size, 17);
    static const size_t fixed[] = {1, 2, 3, 7, 4095, 4097, 65537};
    for (size_t s = 0; s < NDEV; s++)
        for (size_t d = 0; d < NDEV; d++)
            for (size_t k = 0; k < 7; k++) {
                size_t n = k < 3 ? fixed[(s * NDEV + d + k) % 7] : 1 + rnd() % (size / 2);
                if (k == 6)
                    n = size / 2 - 1 + rnd() % 3; /* large and odd, several chunks */
                size_t soff = rnd() % (size - n + 1), doff = rnd() % (size - n + 1);
                if (s == d && n > size / 2)
                    n = size / 2;
                if (s == d && soff < doff + n && doff < soff + n) {
                    /* One buffer: regions must not overlap; put them in separate halves. */
                    soff = rnd() % (size / 2 - n + 1);
                    doff = size / 2 + rnd() % (size / 2 - n + 1);
                    if (k & 1) {
                        size_t t = soff;
                        soff = doff, doff = t;
                    }
                }
                copy_checked(&B, d, doff, s, soff, n, (int)(k & 1), label);
            }
    /* The whole buffer, in one piece. */
    copy_checked(&B, 2, 0, 0, 0, size, 1, label);
    copy_checked(&B, 0, 0, 1, 0, size, 0, label);
    bufs_destroy(&B);
}

START_TEST(pairs_random)
{
    const cfg *c = &CFGS[_i];
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, NULL);
    every_pair(f, c->label, (1u << 20) + 333);
    done_fleet(f);
}
END_TEST

/* 64 MiB once in each mode, against the source. */
START_TEST(pairs_64mib)
{
    const cfg *c = &CFGS[_i];
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, NULL);
    const size_t size = (size_t)64 << 20;
    unsigned char *src = malloc(size), *got = malloc(size);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(got);
    fill_pattern(src, size, 4242);
    clf_buffer *a, *b;
    ck_assert_ok(clf_buffer_create(&a, f, 1, size, 0));
    ck_assert_ok(clf_buffer_create(&b, f, 2, size, 0));
    ck_assert_ok(clf_buffer_write(a, 0, size, src));
    clf_event *e;
    ck_assert_ok(clf_copy_async(b, 0, a, 0, size, NULL, 0, &e));
    ck_assert_ok(clf_event_wait(e));
    clf_event_release(e);
    ck_assert_ok(clf_buffer_read(b, 0, size, got));
    ck_assert_msg(memcmp(src, got, size) == 0, "%s: 64 MiB copy differs", c->label);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    free(src);
    free(got);
    done_fleet(f);
}
END_TEST

START_TEST(path_queries)
{
    const cfg *c = &CFGS[_i];
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, NULL);
    size_t n = clf_fleet_device_count(f);
    for (size_t s = 0; s < n; s++)
        for (size_t d = 0; d < n; d++) {
            clf_path p;
            int direct = -1;
            ck_assert_ok(clf_transfer_path(&p, &direct, f, s, d));
            const char *want = s == d ? "same-device"
                               : c->context_per_device ? "staged"
                                                       : "unified";
            ck_assert_str_eq(clf_path_name(p), want);
            ck_assert_int_eq(direct, s == d || !c->context_per_device);
            ck_assert_int_ne(p, CLF_PATH_CUDA_P2P);
        }
    clf_path p;
    ck_assert_ok(clf_transfer_path(&p, NULL, f, 0, 1));
    ck_assert_status(clf_transfer_path(&p, NULL, f, n, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_transfer_path(&p, NULL, f, 0, n), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_transfer_path(NULL, NULL, f, 0, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_transfer_path(&p, NULL, NULL, 0, 0), CLF_ERROR_NULL_POINTER);
    /* No NVIDIA device here: the CUDA path says so and is never chosen. */
    const char *why = clf_transfer_cuda_status(f);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "no NVIDIA device") != NULL, "cuda status: '%s'", why);
    ck_assert_ptr_nonnull(clf_transfer_cuda_status(NULL));
    done_fleet(f);
}
END_TEST

START_TEST(path_names)
{
    static const char *const names[] = {"same-device", "unified", "amd-p2p", "cuda-p2p",
                                        "staged"};
    for (int p = 0; p < 5; p++)
        ck_assert_str_eq(clf_path_name((clf_path)p), names[p]);
    ck_assert_ptr_null(clf_path_name((clf_path)5));
    ck_assert_ptr_null(clf_path_name((clf_path)-1));
}
END_TEST

START_TEST(bad_input)
{
    clf_fleet *f = make_fleet(FLEET_SUB, _i, NULL), *g = make_fleet(FLEET_ROOT, 0, NULL);
    const size_t size = 4096;
    clf_buffer *a, *b, *other;
    ck_assert_ok(clf_buffer_create(&a, f, 0, size, 0));
    ck_assert_ok(clf_buffer_create(&b, f, 1, size, 0));
    ck_assert_ok(clf_buffer_create(&other, g, 0, size, 0));
    clf_event *e = (clf_event *)0x1;
    ck_assert_status(clf_copy(NULL, 0, a, 0, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_copy(b, 0, NULL, 0, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_copy_async(b, 0, a, 0, 1, NULL, 0, &e), CLF_SUCCESS);
    ck_assert_ok(clf_event_wait(e));
    clf_event_release(e);
    e = (clf_event *)0x1;
    ck_assert_status(clf_copy_async(NULL, 0, a, 0, 1, NULL, 0, &e), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(e); /* cleared on failure */
    ck_assert_status(clf_copy(b, 0, a, 0, 0), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_copy(b, 0, a, SIZE_MAX, 2), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_copy(b, SIZE_MAX - 1, a, 0, 2), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_copy(b, 0, a, 1, size), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_copy(b, size, a, 0, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_copy(b, 0, a, size, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_copy(b, 0, a, 0, size + 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_copy(other, 0, a, 0, 1), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "fleet") != NULL, "%s", clf_last_error());
    /* One buffer: overlapping regions are refused, touching ones are fine. */
    ck_assert_status(clf_copy(a, 0, a, 0, 1), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "overlap") != NULL, "%s", clf_last_error());
    ck_assert_status(clf_copy(a, 100, a, 50, 51), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_copy(a, 50, a, 100, 51), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_copy(a, 0, a, 1, size - 1), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ok(clf_copy(a, 100, a, 50, 50));
    ck_assert_ok(clf_copy(a, 0, a, size / 2, size / 2));
    /* Wait lists. */
    ck_assert_status(clf_copy_async(b, 0, a, 0, 1, NULL, 1, NULL), CLF_ERROR_NULL_POINTER);
    clf_event *none[1] = {NULL};
    ck_assert_status(clf_copy_async(b, 0, a, 0, 1, none, 1, NULL), CLF_ERROR_NULL_POINTER);
    /* Interop entry points. */
    cl_event ce;
    ck_assert_status(clf_event_from_cl(NULL, &e), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_event_from_cl((cl_event)1, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_event_cl_for(NULL, f, 0, &ce), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_copy_async(b, 0, a, 0, 16, NULL, 0, &e));
    ck_assert_status(clf_event_cl_for(e, f, 99, &ce), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_event_cl_for(e, NULL, 0, &ce), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_event_cl_for(e, f, 0, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_event_wait(e));
    clf_event_release(e);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    clf_buffer_destroy(other);
    done_fleet(f);
    done_fleet(g);
}
END_TEST

/* Forced staging: every pair, the same device and the same buffer included. */
static void staged_everywhere(clf_fleet *f, const char *label)
{
    size_t n = clf_fleet_device_count(f);
    for (size_t s = 0; s < n; s++)
        for (size_t d = 0; d < n; d++) {
            clf_path p;
            int direct = -1;
            ck_assert_ok(clf_transfer_path(&p, &direct, f, s, d));
            ck_assert_int_eq(p, CLF_PATH_STAGED);
        }
    every_pair(f, label, (1u << 20) + 77);
}

START_TEST(forced_staging_option)
{
    const cfg *c = &CFGS[_i];
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, "staged");
    staged_everywhere(f, c->label);
    done_fleet(f);
    /* Other tokens leave these PoCL pairs alone. */
    f = make_fleet(c->selection, c->context_per_device, "no-cuda, no-amd");
    clf_path p;
    ck_assert_ok(clf_transfer_path(&p, NULL, f, 0, 1));
    ck_assert_int_eq(p, c->context_per_device ? CLF_PATH_STAGED : CLF_PATH_UNIFIED);
    done_fleet(f);
    f = make_fleet(c->selection, c->context_per_device, "no-unified");
    ck_assert_ok(clf_transfer_path(&p, NULL, f, 0, 1));
    ck_assert_int_eq(p, CLF_PATH_STAGED);
    ck_assert_ok(clf_transfer_path(&p, NULL, f, 1, 1));
    ck_assert_int_eq(p, CLF_PATH_SAME_DEVICE);
    every_pair(f, "no-unified", 300001);
    done_fleet(f);
}
END_TEST

START_TEST(forced_staging_env)
{
    setenv("CLFLEET_TRANSFER", "staged", 1);
    clf_fleet *f = make_fleet(FLEET_SUB, 0, NULL);
    unsetenv("CLFLEET_TRANSFER");
    staged_everywhere(f, "CLFLEET_TRANSFER=staged");
    done_fleet(f);
    /* The option wins over the environment. */
    setenv("CLFLEET_TRANSFER", "staged", 1);
    f = make_fleet(FLEET_SUB, 0, "auto");
    unsetenv("CLFLEET_TRANSFER");
    clf_path p;
    ck_assert_ok(clf_transfer_path(&p, NULL, f, 0, 1));
    ck_assert_int_eq(p, CLF_PATH_UNIFIED);
    done_fleet(f);
}
END_TEST

START_TEST(bad_transfer_values)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = (clf_fleet *)0x1;
    o.devices = FLEET_SUB;
    setenv("CLFLEET_TRANSFER", "staged,bogus", 1);
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_PARSE);
    unsetenv("CLFLEET_TRANSFER");
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(clf_last_error(), "CLFLEET_TRANSFER") != NULL &&
                      strstr(clf_last_error(), "bogus") != NULL,
                  "%s", clf_last_error());
    o.transfer = "no-amd,";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_PARSE);
    ck_assert_msg(strstr(clf_last_error(), "transfer") != NULL &&
                      strstr(clf_last_error(), "CLFLEET_TRANSFER") == NULL,
                  "%s", clf_last_error());
    o.transfer = "fast";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_PARSE);
    ck_assert_msg(strstr(clf_last_error(), "fast") != NULL, "%s", clf_last_error());
}
END_TEST

/* The pinned-slot pipeline on its own (the mapped shortcut off), with small chunks so that
 * every copy is many chunks through the three slots. */
START_TEST(pinned_pipeline)
{
    const cfg *c = &CFGS[_i];
    setenv("CLFLEET_TRANSFER_STAGING", "pipeline", 1);
    setenv("CLFLEET_TRANSFER_CHUNK", "64K", 1);
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, "staged");
    unsetenv("CLFLEET_TRANSFER_STAGING");
    unsetenv("CLFLEET_TRANSFER_CHUNK");
    every_pair(f, c->label, (1u << 20) + 5);
    /* Three copies in flight at once, on the helper pool. */
    bufs B;
    bufs_create(&B, f, 3 << 20, 5);
    clf_event *e[NDEV];
    size_t k = 0;
    /* 0 -> 1, 1 -> 2, 2 -> 0 into the first halves, from the second halves. */
    for (size_t s = 0; s < NDEV; s++) {
        size_t d = (s + 1) % NDEV;
        ck_assert_ok(clf_copy_async(B.b[d], 0, B.b[s], B.size / 2, B.size / 2, NULL, 0, &e[k++]));
    }
    for (size_t i = 0; i < k; i++) {
        ck_assert_ok(clf_event_wait(e[i]));
        clf_event_release(e[i]);
    }
    for (size_t s = 0; s < NDEV; s++)
        memcpy(B.model[(s + 1) % NDEV], B.model[s] + B.size / 2, B.size / 2);
    for (size_t d = 0; d < NDEV; d++)
        bufs_check(&B, d, "concurrent pipelines");
    bufs_destroy(&B);
    done_fleet(f);
}
END_TEST

/* A chain of asynchronous copies, each waiting for the one before (host-side events when
 * staged), released by the caller at once; and fire-and-forget copies then a finish. */
START_TEST(async_chains)
{
    const cfg *c = &CFGS[_i];
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, _i % 2 ? NULL : "staged");
    const size_t size = (256u << 10) + 3;
    bufs B;
    bufs_create(&B, f, size, 99);
    clf_event *prev = NULL;
    for (int r = 0; r < 30; r++) {
        size_t s = (size_t)r % NDEV, d = (size_t)(r + 1) % NDEV;
        clf_event *e;
        ck_assert_ok(clf_copy_async(B.b[d], 0, B.b[s], 0, size, prev ? &prev : NULL, prev != 0,
                                    &e));
        clf_event_release(prev); /* the copy holds what it needs */
        prev = e;
        memcpy(B.model[d], B.model[s], size);
    }
    ck_assert_ok(clf_event_wait(prev));
    clf_event_release(prev);
    for (size_t d = 0; d < NDEV; d++)
        bufs_check(&B, d, "chain");
    /* Without events: clf_fleet_finish() covers copies still on the helper pool. */
    ck_assert_ok(clf_copy_async(B.b[1], 0, B.b[0], 1, size - 1, NULL, 0, NULL));
    ck_assert_ok(clf_fleet_finish(f));
    memmove(B.model[1], B.model[0] + 1, size - 1);
    bufs_check(&B, 1, "fire and forget");
    /* The source destroyed while the copy may still be in flight. */
    clf_buffer *tmp;
    ck_assert_ok(clf_buffer_create(&tmp, f, 2, size, 0));
    ck_assert_ok(clf_buffer_write(tmp, 0, size, B.model[0]));
    clf_event *e;
    ck_assert_ok(clf_copy_async(B.b[1], 0, tmp, 0, size, NULL, 0, &e));
    clf_buffer_destroy(tmp);
    ck_assert_ok(clf_event_wait(e));
    clf_event_release(e);
    memcpy(B.model[1], B.model[0], size);
    bufs_check(&B, 1, "source destroyed");
    bufs_destroy(&B);
    done_fleet(f);
}
END_TEST

/* ---- event ordering across contexts ------------------------------------------------------ */

static const char KERNELS[] =
    "__kernel void produce(__global uint *a, uint iter, uint spin)\n"
    "{\n"
    "    uint i = (uint)get_global_id(0), x = i ^ (iter * 0x9e3779b9u);\n"
    "    for (uint k = 0; k < spin; k++) x = x * 1664525u + 1013904223u;\n"
    "    a[i] = x;\n"
    "}\n"
    "__kernel void consume(__global const uint *b, __global uint *c, uint iter)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = b[i] * 3u + iter;\n"
    "}\n";

static uint32_t produced(uint32_t i, uint32_t iter, uint32_t spin)
{
    uint32_t x = i ^ (iter * 0x9e3779b9u);
    for (uint32_t k = 0; k < spin; k++)
        x = x * 1664525u + 1013904223u;
    return x;
}

/* host_wait: the consumer is enqueued once the copy is done (PoCL's basic device runs a
 * command whose dependencies complete on another thread with stale data). */
static void ordering(const cfg *c, const char *transfer, size_t A, size_t Bdev, int host_wait,
                     unsigned iterations)
{
    clf_fleet *f = make_fleet(c->selection, c->context_per_device, transfer);
    clf_program *prog;
    ck_assert_ok(clf_program_build_source(&prog, f, KERNELS, NULL));
    const size_t n = 1u << 16;
    const cl_uint spin = 64;
    clf_buffer *a, *b, *out;
    ck_assert_ok(clf_buffer_create(&a, f, A, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&b, f, Bdev, n * 4, 0));
    ck_assert_ok(clf_buffer_create(&out, f, Bdev, n * 4, 0));
    cl_int err;
    cl_kernel kp = clCreateKernel(clf_cl_program(prog, A), "produce", &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_kernel kc = clCreateKernel(clf_cl_program(prog, Bdev), "consume", &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem ma = clf_cl_mem(a), mb = clf_cl_mem(b), mo = clf_cl_mem(out);
    uint32_t *host = malloc(n * 4);
    ck_assert_ptr_nonnull(host);
    for (cl_uint iter = 1; iter <= iterations; iter++) {
        /* Producer on A's compute queue. */
        ck_assert_int_eq(clSetKernelArg(kp, 0, sizeof ma, &ma), CL_SUCCESS);
        ck_assert_int_eq(clSetKernelArg(kp, 1, sizeof iter, &iter), CL_SUCCESS);
        ck_assert_int_eq(clSetKernelArg(kp, 2, sizeof spin, &spin), CL_SUCCESS);
        cl_event pe;
        ck_assert_int_eq(clEnqueueNDRangeKernel(clf_cl_compute_queue(f, A), kp, 1, NULL, &n,
                                                NULL, 0, NULL, &pe),
                         CL_SUCCESS);
        clf_event *produced_ev, *copied;
        ck_assert_ok(clf_event_from_cl(pe, &produced_ev));
        clReleaseEvent(pe); /* the wrapper holds its own reference */
        ck_assert_ok(clf_copy_async(b, 0, a, 0, n * 4, &produced_ev, 1, &copied));
        clf_event_release(produced_ev);
        /* Consumer on B's compute queue, after the copy, through an event of B's context. */
        cl_event ready, ce;
        if (host_wait)
            ck_assert_ok(clf_event_wait(copied));
        ck_assert_ok(clf_event_cl_for(copied, f, Bdev, &ready));
        cl_context ctx = NULL;
        clGetEventInfo(ready, CL_EVENT_CONTEXT, sizeof ctx, &ctx, NULL);
        ck_assert_ptr_eq(ctx, clf_cl_context(f, Bdev));
        ck_assert_int_eq(clSetKernelArg(kc, 0, sizeof mb, &mb), CL_SUCCESS);
        ck_assert_int_eq(clSetKernelArg(kc, 1, sizeof mo, &mo), CL_SUCCESS);
        ck_assert_int_eq(clSetKernelArg(kc, 2, sizeof iter, &iter), CL_SUCCESS);
        ck_assert_int_eq(clEnqueueNDRangeKernel(clf_cl_compute_queue(f, Bdev), kc, 1, NULL, &n,
                                                NULL, 1, &ready, &ce),
                         CL_SUCCESS);
        clReleaseEvent(ready);
        clf_event_release(copied);
        clFlush(clf_cl_compute_queue(f, Bdev));
        ck_assert_int_eq(clWaitForEvents(1, &ce), CL_SUCCESS);
        clReleaseEvent(ce);
        ck_assert_ok(clf_buffer_read(out, 0, n * 4, host));
        for (uint32_t i = 0; i < n; i += 1 + (i % 7)) {
            uint32_t want = produced(i, iter, spin) * 3u + iter;
            if (host[i] != want)
                ck_abort_msg("%s, %s: iteration %u, element %u is %u, expected %u", c->label,
                             transfer ? transfer : "auto", iter, i, host[i], want);
        }
    }
    free(host);
    clReleaseKernel(kp);
    clReleaseKernel(kc);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    clf_buffer_destroy(out);
    clf_program_destroy(prog);
    done_fleet(f);
}

START_TEST(event_ordering)
{
    /* Sub-devices run at once, so a missing dependency shows; auto and forced staging. */
    const cfg *c = &CFGS[_i / 2];
    ordering(c, _i % 2 ? "staged" : NULL, 0, 2, 0, 100);
}
END_TEST

/* Root devices: from a pthread device into the basic one (the unified path's queue choice,
 * and a wait list on a device that runs commands inside clEnqueue*). */
START_TEST(event_ordering_to_basic)
{
    const cfg *c = &CFGS[2 + _i / 2];
    ordering(c, _i % 2 ? "staged" : NULL, 1, 0, 1, 20);
}
END_TEST

/* clf_event_cl_for across contexts and from host-side events. */
START_TEST(bridges)
{
    clf_fleet *f = make_fleet(FLEET_SUB, 1, NULL);
    /* A user event of device 0's context, bridged to device 1's context. */
    cl_int err;
    cl_event u = clCreateUserEvent(clf_cl_context(f, 0), &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    clf_event *w;
    ck_assert_ok(clf_event_from_cl(u, &w));
    ck_assert_ptr_eq(clf_cl_event(w), u);
    cl_event same, other;
    ck_assert_ok(clf_event_cl_for(w, f, 0, &same));
    ck_assert_ptr_eq(same, u); /* same context: the event itself */
    clReleaseEvent(same);
    ck_assert_ok(clf_event_cl_for(w, f, 1, &other));
    ck_assert_ptr_ne(other, u);
    cl_int st = CL_QUEUED;
    clGetEventInfo(other, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    ck_assert_int_ne(st, CL_COMPLETE);
    clSetUserEventStatus(u, CL_COMPLETE);
    ck_assert_int_eq(clWaitForEvents(1, &other), CL_SUCCESS);
    clReleaseEvent(other);
    clf_event_release(w);
    clReleaseEvent(u);

    /* A failed source forwards its negative status, and a copy waiting for it fails. */
    u = clCreateUserEvent(clf_cl_context(f, 0), &err);
    ck_assert_ok(clf_event_from_cl(u, &w));
    ck_assert_ok(clf_event_cl_for(w, f, 1, &other));
    clf_buffer *a, *b;
    ck_assert_ok(clf_buffer_create(&a, f, 0, 1000, 0));
    ck_assert_ok(clf_buffer_create(&b, f, 1, 1000, 0));
    clf_event *ce;
    ck_assert_ok(clf_copy_async(b, 0, a, 0, 1000, &w, 1, &ce));
    clSetUserEventStatus(u, -1234);
    clWaitForEvents(1, &other);
    st = 0;
    clGetEventInfo(other, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    ck_assert_int_eq(st, -1234);
    ck_assert_int_ne(clf_event_wait(ce), CLF_SUCCESS);
    clf_event_release(ce);
    clReleaseEvent(other);
    clf_event_release(w);
    clReleaseEvent(u);

    /* A copy's host-side event bridged to both contexts. */
    ck_assert_ok(clf_copy_async(b, 0, a, 0, 1000, NULL, 0, &ce));
    ck_assert_ptr_null(clf_cl_event(ce));
    cl_event e0, e1;
    ck_assert_ok(clf_event_cl_for(ce, f, 0, &e0));
    ck_assert_ok(clf_event_cl_for(ce, f, 1, &e1));
    clf_event_release(ce);
    ck_assert_int_eq(clWaitForEvents(1, &e0), CL_SUCCESS);
    ck_assert_int_eq(clWaitForEvents(1, &e1), CL_SUCCESS);
    clReleaseEvent(e0);
    clReleaseEvent(e1);
    /* An asynchronous launch (a host-side event without a completion hook): a copy waits
     * for it, and an OpenCL event stands for it in another context. */
    clf_program *prog;
    ck_assert_ok(clf_program_build_source(&prog, f, KERNELS, NULL));
    const size_t n = 1u << 14;
    uint32_t *out = calloc(n, sizeof *out), iter = 5, spin = 2000;
    ck_assert_ptr_nonnull(out);
    clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&iter),
                      CLF_SCALAR(&spin)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "produce";
    d.global[0] = n;
    clf_event *le, *after;
    ck_assert_ok(clf_launch_async(f, prog, &d, args, 3, NULL, &le));
    ck_assert_ok(clf_event_cl_for(le, f, 1, &e1));
    ck_assert_ok(clf_copy_async(b, 0, a, 0, 1000, &le, 1, &after));
    clf_event_release(le); /* waits for the launch; the bridge and the copy hold their own */
    ck_assert_int_eq(clWaitForEvents(1, &e1), CL_SUCCESS);
    clReleaseEvent(e1);
    ck_assert_ok(clf_event_wait(after));
    clf_event_release(after);
    for (uint32_t i = 0; i < n; i += 97)
        ck_assert_uint_eq(out[i], produced(i, iter, spin));
    free(out);
    clf_program_destroy(prog);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    done_fleet(f);
}
END_TEST

/*
 * The CUDA path, end to end, without NVIDIA hardware: the stand-in libcuda of the tests
 * (memfd-backed allocations; CUDA devices 0 and 1 peers, 2 alone) and the library's test-only
 * import emulation, which maps an exported fd into a CL_MEM_USE_HOST_PTR buffer. The CUDA
 * driver layer loads once per process, so this is the only test here that loads it.
 */
START_TEST(cuda_emulated)
{
    const char *fake = getenv("CLFLEET_TEST_FAKE_CUDA");
    if (!fake || access(fake, R_OK) != 0) {
        fprintf(stderr, "cuda_emulated: no stand-in libcuda (CLFLEET_TEST_FAKE_CUDA): skipped\n");
        return;
    }
    setenv("CLFLEET_CUDA_LIBRARY", fake, 1);
    setenv("CLFLEET_TEST_CUDA_EMULATE", "0000:3b:00,0000:af:00,0001:3b:00", 1);
    setenv("CLFLEET_TRANSFER_CHUNK", "64K", 1); /* many chunks through the bounce slots */
    clf_fleet *f = make_fleet(FLEET_SUB, 1, NULL);
    /* A self-test that reads back wrong bytes (the stand-in fails the CUDA read). */
    setenv("FAKE_CUDA_FAIL", "cuMemcpyDtoH", 1);
    clf_fleet *bad = make_fleet(FLEET_SUB, 1, NULL);
    unsetenv("FAKE_CUDA_FAIL");
    /* Left out by option: not even tried. */
    clf_fleet *off = make_fleet(FLEET_SUB, 1, "no-cuda");
    unsetenv("CLFLEET_TEST_CUDA_EMULATE");
    unsetenv("CLFLEET_TRANSFER_CHUNK");

    const char *why = clf_transfer_cuda_status(f);
    ck_assert_msg(strncmp(why, "on:", 3) == 0 && strstr(why, "2 ordered pair"), "%s", why);
    for (size_t s = 0; s < NDEV; s++)
        for (size_t d = 0; d < NDEV; d++) {
            clf_path p, pb, po;
            int direct, db;
            ck_assert_ok(clf_transfer_path(&p, &direct, f, s, d));
            ck_assert_ok(clf_transfer_path(&pb, &db, bad, s, d));
            ck_assert_ok(clf_transfer_path(&po, NULL, off, s, d));
            clf_path want = s == d ? CLF_PATH_SAME_DEVICE
                            : s + d == 1 ? CLF_PATH_CUDA_P2P /* 0 <-> 1 */
                                         : CLF_PATH_STAGED;
            ck_assert_msg(p == want, "%zu -> %zu: %s", s, d, clf_path_name(p));
            ck_assert_int_eq(direct, s == d || s + d == 1);
            ck_assert_int_eq(pb, s == d ? CLF_PATH_SAME_DEVICE : CLF_PATH_STAGED);
            ck_assert_int_eq(db, s == d);
            ck_assert_int_eq(po, s == d ? CLF_PATH_SAME_DEVICE : CLF_PATH_STAGED);
        }
    why = clf_transfer_cuda_status(bad);
    ck_assert_msg(strncmp(why, "off:", 4) == 0 && strstr(why, "self-test failed"), "%s", why);
    why = clf_transfer_cuda_status(off);
    ck_assert_msg(strstr(why, "not tried") != NULL, "%s", why);
    every_pair(f, "emulated CUDA", (1u << 20) + 5);
    /* The copies went through CUDA memory (a fallback to staging would be silent): the
     * bounce slots of devices 0 and 1 are still allocated in the stand-in, kept for reuse. */
    void *lib = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
    int (*live)(void) = NULL;
    *(void **)&live = dlsym(lib, "fake_cuda_live");
    ck_assert_ptr_nonnull(live);
    ck_assert_int_ge(live(), 2 * 3);
    dlclose(lib);
    /* Concurrent CUDA copies both ways, and a chain through the host-side events. */
    bufs B;
    bufs_create(&B, f, 1u << 20, 3);
    clf_event *e01, *e10, *e12;
    ck_assert_ok(clf_copy_async(B.b[1], 0, B.b[0], B.size / 2, B.size / 2, NULL, 0, &e01));
    ck_assert_ok(clf_copy_async(B.b[0], 0, B.b[1], B.size / 2, B.size / 2, NULL, 0, &e10));
    ck_assert_ok(clf_copy_async(B.b[2], 0, B.b[1], 0, B.size / 2, &e01, 1, &e12));
    ck_assert_ok(clf_event_wait(e12));
    ck_assert_ok(clf_event_wait(e10));
    clf_event_release(e01);
    clf_event_release(e10);
    clf_event_release(e12);
    unsigned char *h1 = malloc(B.size / 2);
    memcpy(h1, B.model[1] + B.size / 2, B.size / 2);
    memcpy(B.model[1], B.model[0] + B.size / 2, B.size / 2);
    memcpy(B.model[0], h1, B.size / 2);
    memcpy(B.model[2], B.model[1], B.size / 2);
    free(h1);
    for (size_t d = 0; d < NDEV; d++)
        bufs_check(&B, d, "concurrent CUDA copies");
    bufs_destroy(&B);
    unsetenv("CLFLEET_CUDA_LIBRARY");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("transfer");
    TCase *tc = tcase_create("copies");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, path_names);
    tcase_add_loop_test(tc, path_queries, 0, NCFGS);
    tcase_add_loop_test(tc, bad_input, 0, 2);
    tcase_add_test(tc, bad_transfer_values);
    tcase_add_loop_test(tc, pairs_random, 0, NCFGS);
    tcase_add_loop_test(tc, pairs_64mib, 0, NCFGS);
    tcase_add_loop_test(tc, forced_staging_option, 0, NCFGS);
    tcase_add_test(tc, forced_staging_env);
    tcase_add_loop_test(tc, pinned_pipeline, 0, NCFGS);
    tcase_add_loop_test(tc, async_chains, 0, NCFGS);
    tcase_add_test(tc, bridges);
    tcase_add_test(tc, cuda_emulated);
    tcase_add_loop_test(tc, event_ordering, 0, 2 * NCFGS);
    tcase_add_loop_test(tc, event_ordering_to_basic, 0, 4);
    suite_add_tcase(s, tc);
    return test_run(s, FLEET_SUB, NDEV);
}

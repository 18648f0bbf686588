/*
 * The binary interface: a caller compiled against the previous public header (tests/abi/
 * clfleet-0.h, include/clfleet.h at commit 26daf0f, not the current one) runs against the
 * current library. It creates a fleet, launches with a version-1 clf_launch_desc (the shorter
 * struct that ended before split_dim) and with that header's version-2 one, reads the
 * metrics' output structs and runs collectives; every result is checked against the same
 * computation on the host.
 *
 * Every struct the caller hands over or receives lies at the very end of a page followed by
 * an inaccessible one, sized as the old header sizes it: a library that read an input struct
 * past its old size, or wrote an output struct past it, stops the test with SIGSEGV.
 */
#include "clfleet-0.h" /* -I tests/abi; never the current include/clfleet.h */

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Two sub-devices of PoCL's pthread CPU device (tests/common.h's FLEET2). */
#define SELECTION "type=cpu;platform=portable;name=pthread;index=1;split=1"

static const char SRC[] =
    "__kernel void affine(__global uint *y, uint m, uint c)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = y[i] * m + c;\n"
    "}\n"
    "__kernel void rows(__global uint *y, uint m)\n"
    "{\n"
    "    size_t i = get_global_id(0), j = get_global_id(1), w = get_global_size(0);\n"
    "    y[j * w + i] = y[j * w + i] * m + (uint)(i ^ j);\n"
    "}\n";

/* size bytes ending where an inaccessible page begins (zeroed; never freed: a few pages). */
static void *guarded(size_t size)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (size + pg - 1) / pg * pg;
    char *m = mmap(NULL, span + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(mprotect(m + span, pg, PROT_NONE), 0);
    return m + span - size; /* size is a multiple of the struct's alignment */
}

#define ck_ok(expr)                                                                              \
    do {                                                                                         \
        clf_status st_ = (expr);                                                                 \
        ck_assert_msg(st_ == CLF_SUCCESS, "%s: %s: %s", #expr, clf_status_name(st_),             \
                      clf_last_error());                                                         \
    } while (0)

static clf_fleet *fleet_open(void)
{
    clf_fleet_options *o = guarded(sizeof *o);
    *o = (clf_fleet_options)CLF_FLEET_OPTIONS_INIT;
    ck_assert_uint_eq(o->version, 1);
    o->devices = SELECTION;
    clf_fleet *f = NULL;
    ck_ok(clf_fleet_create(&f, o));
    return f;
}

/* The launch report's invariants, read through the old layout. */
static void check_report(const clf_launch_report *r, uint64_t total, size_t ndev)
{
    ck_assert_uint_eq(r->total_units, total);
    ck_assert_uint_eq(r->done_units, total);
    ck_assert_uint_eq(r->num_devices, ndev);
    ck_assert_uint_eq(r->failed_devices, 0);
    uint64_t sum = 0;
    for (size_t i = 0; i < r->num_devices; i++) {
        ck_assert_uint_lt(r->dev[i].device, ndev);
        sum += r->dev[i].units;
    }
    ck_assert_uint_eq(sum, total);
    for (size_t i = 0; i < 4; i++)
        ck_assert_uint_eq(r->reserved[i], 0);
}

START_TEST(fleet_and_devices)
{
    clf_fleet *f = fleet_open();
    size_t n = clf_fleet_device_count(f);
    ck_assert_uint_ge(n, 2);
    for (size_t d = 0; d < n; d++) {
        clf_device_info *info = guarded(sizeof *info);
        ck_ok(clf_device_get_info(info, f, d));
        ck_assert(info->name[0] != '\0');
        ck_assert_int_eq(info->type, CLF_DEVICE_CPU);
        ck_assert_uint_gt(info->compute_units, 0);
    }
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(launch_version_1_and_2)
{
    enum { N = 10007, W = 61, H = 83 };
    clf_fleet *f = fleet_open();
    size_t ndev = clf_fleet_device_count(f);
    clf_program *p = NULL;
    ck_ok(clf_program_build_source(&p, f, SRC, NULL));
    uint32_t *v = malloc(N * sizeof *v), *img = malloc(W * H * sizeof *img);
    ck_assert(v && img);
    for (uint32_t i = 0; i < N; i++)
        v[i] = i * 2654435761u;
    for (uint32_t i = 0; i < W * H; i++)
        img[i] = i;

    /* Version 1: the struct as that version had it, up to (not including) split_dim. */
    const size_t v1size = offsetof(clf_launch_desc, split_dim);
    clf_launch_desc full = CLF_LAUNCH_DESC_INIT;
    ck_assert_uint_eq(full.version, 2);
    full.version = 1;
    full.kernel = "affine";
    full.global[0] = N;
    full.strategy = CLF_STRATEGY_DYNAMIC;
    clf_launch_desc *d1 = guarded(v1size);
    memcpy(d1, &full, v1size);
    const uint32_t mc[3][2] = {{3, 1}, {5, 7}, {7, 3}};
    clf_launch_report *rep = guarded(sizeof *rep);
    clf_arg args[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&mc[0][0]),
                      CLF_SCALAR(&mc[0][1])};
    ck_ok(clf_launch(f, p, d1, args, 3, rep));
    check_report(rep, N, ndev);
    /* Asynchronously too (the description is copied before the call returns). */
    clf_arg args2[] = {CLF_INOUT(v, N * sizeof *v, sizeof *v), CLF_SCALAR(&mc[1][0]),
                       CLF_SCALAR(&mc[1][1])};
    clf_launch_report *rep2 = guarded(sizeof *rep2);
    clf_event *ev = NULL;
    ck_ok(clf_launch_async(f, p, d1, args2, 3, rep2, &ev));
    ck_ok(clf_event_wait(ev));
    clf_event_release(ev);
    check_report(rep2, N, ndev);

    /* Version 2, as that header fills it: a 2-D range split along its rows. */
    clf_launch_desc *d2 = guarded(sizeof *d2);
    *d2 = (clf_launch_desc)CLF_LAUNCH_DESC_INIT;
    d2->kernel = "rows";
    d2->dims = 2;
    d2->global[0] = W;
    d2->global[1] = H;
    d2->strategy = CLF_STRATEGY_STATIC;
    clf_arg rargs[] = {CLF_INOUT(img, W * H * sizeof *img, W * sizeof *img),
                       CLF_SCALAR(&mc[2][0])};
    clf_launch_report *rep3 = guarded(sizeof *rep3);
    ck_ok(clf_launch(f, p, d2, rargs, 2, rep3));
    check_report(rep3, H, ndev);

    for (uint32_t i = 0; i < N; i++) {
        uint32_t want = i * 2654435761u;
        for (int k = 0; k < 2; k++)
            want = want * mc[k][0] + mc[k][1];
        ck_assert_msg(v[i] == want, "v[%u] = %u, want %u", i, v[i], want);
    }
    for (uint32_t j = 0; j < H; j++)
        for (uint32_t i = 0; i < W; i++) {
            uint32_t want = (j * W + i) * mc[2][0] + (i ^ j);
            ck_assert_msg(img[j * W + i] == want, "img[%u][%u] = %u, want %u", j, i,
                          img[j * W + i], want);
        }

    /* The metrics' output structs, in the old layout. */
    clf_fleet_metrics *fm = guarded(sizeof *fm);
    ck_ok(clf_metrics_fleet(fm, f));
    ck_assert_uint_eq(fm->num_devices, ndev);
    ck_assert_uint_ge(fm->launches, 3);
    ck_assert_str_eq(fm->last_kernel, "rows");
    ck_assert_uint_eq(fm->last_num_devices, ndev);
    uint64_t kernels = 0;
    for (size_t d = 0; d < ndev; d++) {
        clf_device_metrics *dm = guarded(sizeof *dm);
        ck_ok(clf_metrics_device(dm, f, d));
        ck_assert_uint_eq(dm->device, d);
        ck_assert(dm->in_last_launch);
        kernels += dm->kernels;
    }
    ck_assert_uint_eq(kernels, fm->kernels);
    ck_assert_uint_ge(kernels, 3);
    clf_transfer_stats *ts = guarded(sizeof *ts);
    ck_ok(clf_metrics_peer(ts, f, 0, 1));

    free(v);
    free(img);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(collectives)
{
    enum { COUNT = 5003 };
    clf_fleet *f = fleet_open();
    size_t n = clf_fleet_device_count(f);
    clf_buffer **bufs = calloc(n, sizeof *bufs);
    int32_t *host = malloc(n * COUNT * sizeof *host), *sum = calloc(COUNT, sizeof *sum);
    int32_t *back = malloc(COUNT * sizeof *back);
    ck_assert(bufs && host && sum && back);
    for (size_t d = 0; d < n; d++) {
        for (size_t i = 0; i < COUNT; i++) {
            host[d * COUNT + i] = (int32_t)((i * 7 + d * 13) % 1000) - 500;
            sum[i] += host[d * COUNT + i];
        }
        ck_ok(clf_buffer_create(&bufs[d], f, d, COUNT * sizeof *host, CLF_MEM_READ_WRITE));
        ck_ok(clf_buffer_write(bufs[d], 0, COUNT * sizeof *host, host + d * COUNT));
    }
    clf_collective_options *o = guarded(sizeof *o);
    *o = (clf_collective_options)CLF_COLLECTIVE_OPTIONS_INIT;
    o->chunk_bytes = 4096; /* several chunks per segment */

    /* The maximum to the host first (the buffers are unchanged by it). */
    ck_ok(clf_reduce_to_host(back, bufs, n, COUNT, CLF_TYPE_INT32, CLF_REDUCE_MAX, o));
    for (size_t i = 0; i < COUNT; i++) {
        int32_t want = host[i];
        for (size_t d = 1; d < n; d++)
            want = host[d * COUNT + i] > want ? host[d * COUNT + i] : want;
        ck_assert_msg(back[i] == want, "max[%zu] = %d, want %d", i, back[i], want);
    }
    ck_ok(clf_allreduce(bufs, n, COUNT, CLF_TYPE_INT32, CLF_REDUCE_SUM, o));
    for (size_t d = 0; d < n; d++) {
        ck_ok(clf_buffer_read(bufs[d], 0, COUNT * sizeof *back, back));
        for (size_t i = 0; i < COUNT; i++)
            ck_assert_msg(back[i] == sum[i], "device %zu: sum[%zu] = %d, want %d", d, i, back[i],
                          sum[i]);
    }
    /* Broadcast the last device's first half over the others. */
    ck_ok(clf_buffer_write(bufs[n - 1], 0, COUNT * sizeof *host, host));
    ck_ok(clf_broadcast(bufs, n, COUNT / 2 * sizeof *host, n - 1, o));
    for (size_t d = 0; d < n; d++) {
        ck_ok(clf_buffer_read(bufs[d], 0, COUNT * sizeof *back, back));
        for (size_t i = 0; i < COUNT; i++) {
            int32_t want = i < COUNT / 2 || d == n - 1 ? host[i] : sum[i];
            ck_assert_msg(back[i] == want, "device %zu: [%zu] = %d, want %d", d, i, back[i],
                          want);
        }
    }
    for (size_t d = 0; d < n; d++)
        clf_buffer_destroy(bufs[d]);
    free(bufs);
    free(host);
    free(sum);
    free(back);
    clf_fleet_destroy(f);
}
END_TEST

int main(void)
{
    /* Devices first: none (no OpenCL driver) skips, as the other device suites do. */
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    clf_fleet *f = NULL;
    o.devices = SELECTION;
    o.disable_cache = 1;
    clf_status st = clf_fleet_create(&f, &o);
    size_t ndev = clf_fleet_device_count(f);
    clf_fleet_destroy(f);
    if (st != CLF_SUCCESS || ndev < 2) {
        const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
        int required = req && req[0] && strcmp(req, "0") != 0;
        fprintf(stderr, "%s: need 2 devices for '%s': %s\n", required ? "FAIL" : "SKIP",
                SELECTION, clf_status_name(st));
        return required ? 99 : 77;
    }
    Suite *s = suite_create("abi");
    TCase *tc = tcase_create("abi");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, fleet_and_devices);
    tcase_add_test(tc, launch_version_1_and_2);
    tcase_add_test(tc, collectives);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* some drivers do not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

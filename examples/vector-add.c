/*
 * Example 2: c = a + b over every device of the fleet, two ways.
 *
 * 1. One clf_launch(): clfleet cuts the range into chunks, moves each device's part
 *    of a and b in and its part of c out, and reports who did what.
 * 2. With an explicit data distribution: clf_scatter() deals a and b to one buffer
 *    per device, in contiguous blocks (CLF_DIST_BLOCK) or in small blocks dealt in
 *    turn (CLF_DIST_CYCLIC); each device adds its part with the same kernel
 *    (clf_kernel_enqueue(), on the device's buffers); clf_gather() puts c back
 *    together.
 *
 * Every result is compared with a plain C loop; a mismatch makes the exit status 1.
 * The kernel is the shipped cl/vector.cl ("vadd").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { N = 1000003, CYCLIC_BLOCK = 4096 };

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "vector-add: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

static size_t mismatches(const float *a, const float *b, const float *c, size_t n)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i] != a[i] + b[i] && wrong++ == 0)
            fprintf(stderr, "vector-add: c[%zu] = %g, want %g\n", i, c[i], a[i] + b[i]);
    return wrong;
}

/* The whole vector in one launch; returns the number of wrong elements, or -1. */
static long add_launch(clf_fleet *f, clf_program *p, const float *a, const float *b, float *c)
{
    const size_t bytes = (size_t)N * sizeof(float);
    clf_arg args[] = {CLF_IN(a, bytes, sizeof(float)), CLF_IN(b, bytes, sizeof(float)),
                      CLF_OUT(c, bytes, sizeof(float))};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "vadd";
    d.global[0] = N;
    clf_launch_report rep;
    clf_status st = clf_launch(f, p, &d, args, 3, &rep);
    if (st != CLF_SUCCESS)
        return fail("clf_launch", st), -1;
    printf("clf_launch, strategy %s: %.2f ms\n", clf_strategy_name(rep.strategy),
           rep.makespan_s * 1e3);
    for (size_t i = 0; i < rep.num_devices; i++)
        printf("  device %zu: %8llu elements (%5.1f%%) in %u chunk(s)\n", rep.dev[i].device,
               (unsigned long long)rep.dev[i].units, 100.0 * rep.dev[i].share, rep.dev[i].chunks);
    return (long)mismatches(a, b, c, N);
}

/* Each device adds its own part: len[d] elements in its three buffers, all devices at once
 * (clf_kernel_enqueue returns at once), then wait for every kernel. */
static clf_status add_parts(clf_fleet *f, clf_program *p, clf_buffer *const *bufs,
                            const size_t *len, size_t ndev)
{
    clf_event *done[CLF_MAX_LAUNCH_DEVICES] = {NULL};
    size_t n = 0;
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < ndev && st == CLF_SUCCESS; d++) {
        if (len[d] == 0)
            continue;
        clf_arg args[] = {CLF_BUF_IN(bufs[d]), CLF_BUF_IN(bufs[ndev + d]),
                          CLF_BUF_OUT(bufs[2 * ndev + d])};
        clf_kernel_desc k = CLF_KERNEL_DESC_INIT;
        k.kernel = "vadd";
        k.global[0] = len[d];
        st = clf_kernel_enqueue(f, p, d, &k, args, 3, NULL, 0, &done[n]);
        if (st == CLF_SUCCESS)
            n++;
    }
    /* Every kernel queued must finish before its buffers go, even after a failure. */
    clf_status wst = clf_events_wait(done, n);
    for (size_t i = 0; i < n; i++)
        clf_event_release(done[i]);
    return st != CLF_SUCCESS ? st : wst;
}

/* Scatter a and b by a distribution, add on each device, gather c. */
static long add_distributed(clf_fleet *f, clf_program *p, const float *a, const float *b, float *c,
                            clf_distribution dist, size_t block)
{
    size_t ndev = clf_fleet_device_count(f), len[CLF_MAX_LAUNCH_DEVICES];
    clf_buffer *bufs[3 * CLF_MAX_LAUNCH_DEVICES] = {NULL}; /* a, b, c of each device */
    clf_status st = CLF_SUCCESS;
    if (ndev > CLF_MAX_LAUNCH_DEVICES)
        ndev = CLF_MAX_LAUNCH_DEVICES;
    printf("%s distribution%s:\n", dist == CLF_DIST_BLOCK ? "block" : "cyclic",
           dist == CLF_DIST_BLOCK ? "" : " (blocks of 4096 elements dealt in turn)");
    for (size_t d = 0; d < ndev && st == CLF_SUCCESS; d++) {
        size_t first;
        st = clf_distribution_part(&first, &len[d], N, ndev, d, dist, block);
        for (size_t k = 0; k < 3 && st == CLF_SUCCESS; k++) /* a buffer may not be empty */
            st = clf_buffer_create(&bufs[k * ndev + d], f, d, (len[d] ? len[d] : 1) * sizeof(float),
                                   CLF_MEM_READ_WRITE);
        printf("  device %zu: %8zu elements, the first at index %zu\n", d, len[d], first);
    }
    memset(c, 0, (size_t)N * sizeof(float));
    if (st == CLF_SUCCESS)
        st = clf_scatter(bufs, ndev, a, N, sizeof(float), dist, block);
    if (st == CLF_SUCCESS)
        st = clf_scatter(bufs + ndev, ndev, b, N, sizeof(float), dist, block);
    if (st == CLF_SUCCESS)
        st = add_parts(f, p, bufs, len, ndev);
    if (st == CLF_SUCCESS)
        st = clf_gather(c, bufs + 2 * ndev, ndev, N, sizeof(float), dist, block);
    for (size_t i = 0; i < 3 * ndev; i++)
        clf_buffer_destroy(bufs[i]);
    if (st != CLF_SUCCESS)
        return fail("distributed add", st), -1;
    return (long)mismatches(a, b, c, N);
}

int main(void)
{
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    float *a = malloc((size_t)N * sizeof *a), *b = malloc((size_t)N * sizeof *b);
    float *c = malloc((size_t)N * sizeof *c);
    long wrong = -1;
    if (!a || !b || !c) {
        fprintf(stderr, "vector-add: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = (float)(N - i) * 0.25f;
    }
    if ((st = clf_program_build_shipped(&p, f, "vector", NULL)) != CLF_SUCCESS) {
        fail("building cl/vector.cl", st);
        goto out;
    }
    printf("c = a + b, %d floats, on %zu device(s)\n\n", N, clf_fleet_device_count(f));
    wrong = add_launch(f, p, a, b, c);
    if (wrong == 0)
        wrong = add_distributed(f, p, a, b, c, CLF_DIST_BLOCK, 0);
    if (wrong == 0)
        wrong = add_distributed(f, p, a, b, c, CLF_DIST_CYCLIC, CYCLIC_BLOCK);
out:
    if (wrong == 0)
        printf("\nevery result equals the C loop's\n");
    else
        printf("\nvector-add FAILED (%s)\n", wrong < 0 ? "an error" : "wrong elements");
    free(a);
    free(b);
    free(c);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    return wrong == 0 ? 0 : 1;
}

/*
 * Example: the two data distributions of a multi-GPU application, written with clfleet's
 * own calls: one buffer per device, a kernel run on each device on its buffer
 * (clf_kernel_enqueue), and the parts gathered back.
 *
 * 1. Block: device d holds one contiguous block of the array.
 * 2. Cyclic: blocks of 256 elements are dealt to the devices in turn.
 *
 * The kernel needs each element's global index: it computes it from its local index and
 * the distribution (the same formula clf_distribution_part() documents). Every device's
 * kernel is queued before any is waited for, so they run at once. The result is compared
 * with a plain C loop, bit for bit; a mismatch makes the exit status 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { N = 1 << 20, CYCLIC_BLOCK = 256 };

static const char *SRC =
    "__kernel void update(__global float *x, uint first, uint ndev, uint dev, uint block,\n"
    "                     uint cyclic)\n"
    "{\n"
    "    uint j = (uint)get_global_id(0); /* the element's index in this device's part */\n"
    "    uint g = cyclic ? (j / block * ndev + dev) * block + j % block : first + j;\n"
    "    x[j] = x[j] * 0.5f + (float)(g % 1024u);\n"
    "}\n";

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "block-cyclic: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

/* The kernel's result, in plain C. */
static float step_ref(float x, size_t g)
{
    return x * 0.5f + (float)(g % 1024u);
}

/* Deal data to one buffer per device, run the kernel on each, gather into out. */
static clf_status run(clf_fleet *f, clf_program *p, const float *data, float *out,
                      clf_distribution dist, size_t block)
{
    size_t ndev = clf_fleet_device_count(f), n = 0;
    if (ndev > CLF_MAX_LAUNCH_DEVICES)
        ndev = CLF_MAX_LAUNCH_DEVICES;
    clf_buffer *bufs[CLF_MAX_LAUNCH_DEVICES] = {NULL};
    clf_event *done[CLF_MAX_LAUNCH_DEVICES] = {NULL};
    size_t first[CLF_MAX_LAUNCH_DEVICES], len[CLF_MAX_LAUNCH_DEVICES];
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < ndev && st == CLF_SUCCESS; d++) {
        st = clf_distribution_part(&first[d], &len[d], N, ndev, d, dist, block);
        if (st == CLF_SUCCESS) /* a buffer may not be empty */
            st = clf_buffer_create(&bufs[d], f, d, (len[d] ? len[d] : 1) * sizeof(float), 0);
    }
    if (st == CLF_SUCCESS)
        st = clf_scatter(bufs, ndev, data, N, sizeof(float), dist, block);
    for (size_t d = 0; d < ndev && st == CLF_SUCCESS; d++) {
        if (len[d] == 0)
            continue;
        uint32_t s[5] = {(uint32_t)first[d], (uint32_t)ndev, (uint32_t)d, (uint32_t)block,
                        dist == CLF_DIST_CYCLIC};
        clf_arg args[] = {CLF_BUF_INOUT(bufs[d]), CLF_SCALAR(&s[0]), CLF_SCALAR(&s[1]),
                          CLF_SCALAR(&s[2]),      CLF_SCALAR(&s[3]), CLF_SCALAR(&s[4])};
        clf_kernel_desc k = CLF_KERNEL_DESC_INIT;
        k.kernel = "update";
        k.global[0] = len[d];
        st = clf_kernel_enqueue(f, p, d, &k, args, 6, NULL, 0, &done[n]);
        if (st == CLF_SUCCESS) {
            n++;
            printf("  device %zu: %7zu elements from index %zu\n", d, len[d], first[d]);
        }
    }
    /* Every kernel queued must finish before its buffer goes, even after a failure. */
    clf_status wst = clf_events_wait(done, n);
    if (st == CLF_SUCCESS)
        st = wst;
    if (st == CLF_SUCCESS)
        st = clf_gather(out, bufs, ndev, N, sizeof(float), dist, block);
    for (size_t i = 0; i < n; i++)
        clf_event_release(done[i]);
    for (size_t d = 0; d < ndev; d++)
        clf_buffer_destroy(bufs[d]);
    return st;
}

int main(void)
{
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    float *data = malloc((size_t)N * sizeof *data), *out = malloc((size_t)N * sizeof *out);
    int rc = 1;
    if (!data || !out) {
        fprintf(stderr, "block-cyclic: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < N; i++)
        data[i] = (float)(i % 4096u);
    if ((st = clf_program_build_source(&p, f, SRC, NULL)) != CLF_SUCCESS) {
        rc = fail("building the kernel", st);
        goto done;
    }
    printf("%d floats on %zu device(s)\n", N, clf_fleet_device_count(f));
    for (int c = 0; c < 2; c++) {
        clf_distribution dist = c ? CLF_DIST_CYCLIC : CLF_DIST_BLOCK;
        printf("%s distribution:\n", c ? "cyclic (blocks of 256 dealt in turn)" : "block");
        memset(out, 0, (size_t)N * sizeof *out);
        if ((st = run(f, p, data, out, dist, c ? CYCLIC_BLOCK : 0)) != CLF_SUCCESS) {
            rc = fail(c ? "cyclic" : "block", st);
            goto done;
        }
        for (size_t i = 0; i < N; i++)
            if (out[i] != step_ref(data[i], i)) {
                fprintf(stderr, "block-cyclic: element %zu is %g, want %g\n", i, out[i],
                        step_ref(data[i], i));
                goto done;
            }
    }
    rc = 0;
    printf("every element equals the C loop's\n");
done:
    free(data);
    free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    return rc;
}

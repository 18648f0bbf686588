/*
 * The clfleet demo: the fleet on this machine's default devices, then one
 * kernel spread over all of them by hand (global work offsets), checked
 * against a plain C loop.
 *
 * With no GPU, PoCL's CPU device is split into sub-devices so that the
 * fleet has devices that really run at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clfleet.h"
#include "clfleet/opencl.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "demo: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    return 1;
}

/* Default devices; CPUs only (no GPU): split them in two so they run at once. */
static clf_status make_fleet(clf_fleet **out)
{
    clf_status st = clf_fleet_create(out, NULL);
    if (st != CLF_SUCCESS || getenv("CLFLEET_DEVICES"))
        return st;
    clf_device_info in;
    clf_device_get_info(*out, 0, &in);
    if (in.type != CLF_DEVICE_CPU || in.compute_units < 2)
        return st;
    clf_fleet_destroy(*out);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.split_cpu_units = in.compute_units / 2;
    return clf_fleet_create(out, &o);
}

int main(void)
{
    clf_fleet *f;
    clf_status st = make_fleet(&f);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    size_t n = clf_fleet_device_count(f);
    printf("clfleet %s demo: %zu device(s), %zu context(s)\n\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    printf("  %-3s %-5s %-40s %-26s %5s %9s %s\n", "#", "type", "name", "platform", "CUs",
           "memory", "sub-device of");
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        clf_device_get_info(f, i, &in);
        char parent[16] = "-";
        if (in.is_sub_device)
            snprintf(parent, sizeof parent, "%d", in.parent_index);
        printf("  %-3zu %-5s %-40.40s %-26.26s %5u %5.1f GiB %s\n", i,
               clf_device_type_name(in.type), in.name, in.platform, in.compute_units,
               (double)in.global_mem / (1u << 30), parent);
    }

    clf_program *p;
    double t0 = now();
    st = clf_program_build_shipped(&p, f, "vector", NULL);
    if (st != CLF_SUCCESS)
        return fail("building cl/vector.cl", st);
    printf("\nbuilt cl/vector.cl for every device in %.3f s (%s)\n", now() - t0,
           clf_program_from_cache(p, 0) ? "binary cache" : "compiled");

    /* hash32 over N items: device d computes its contiguous slice. */
    const size_t N = (size_t)1 << 24;
    uint32_t *out = malloc(N * sizeof *out);
    clf_buffer **buf = calloc(n, sizeof *buf);
    cl_kernel *k = calloc(n, sizeof *k);
    if (!out || !buf || !k)
        return fail("allocating", CLF_ERROR_OUT_OF_HOST_MEMORY);
    int rc = 0;
    cl_uint seed = 12345;
    t0 = now();
    for (size_t d = 0; d < n && rc == 0; d++) {
        size_t lo = N * d / n, hi = N * (d + 1) / n, global = hi - lo;
        cl_int err;
        if ((st = clf_buffer_create(&buf[d], f, d, N * sizeof *out, CLF_MEM_WRITE_ONLY)))
            rc = fail("creating a buffer", st);
        else if (!(k[d] = clCreateKernel(clf_cl_program(p, d), "hash32", &err)))
            rc = fail("clCreateKernel", CLF_ERROR_OPENCL);
        else {
            cl_mem m = clf_cl_mem(buf[d]);
            clSetKernelArg(k[d], 0, sizeof m, &m);
            clSetKernelArg(k[d], 1, sizeof seed, &seed);
            err = clEnqueueNDRangeKernel(clf_cl_compute_queue(f, d), k[d], 1, &lo, &global,
                                         NULL, 0, NULL, NULL);
            clFlush(clf_cl_compute_queue(f, d));
            if (err != CL_SUCCESS)
                rc = fail("clEnqueueNDRangeKernel", CLF_ERROR_OPENCL);
        }
    }
    for (size_t d = 0; d < n && rc == 0; d++) {
        size_t lo = N * d / n, hi = N * (d + 1) / n;
        clFinish(clf_cl_compute_queue(f, d));
        if ((st = clf_buffer_read(buf[d], lo * sizeof *out, (hi - lo) * sizeof *out, out + lo)))
            rc = fail("reading back", st);
    }
    double t = now() - t0;
    size_t bad = 0;
    for (size_t i = 0; i < N && rc == 0; i++)
        bad += out[i] != hash32((uint32_t)i ^ seed);
    if (rc == 0) {
        printf("hash32 over %zu items on %zu device(s): %.3f s, %zu mismatches against C\n", N,
               n, t, bad);
        rc = bad != 0;
    }
    for (size_t d = 0; d < n; d++) {
        if (k[d])
            clReleaseKernel(k[d]);
        clf_buffer_destroy(buf[d]);
    }
    free(k), free(buf), free(out);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    printf(rc ? "demo FAILED\n" : "demo OK\n");
    return rc;
}

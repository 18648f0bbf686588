/*
 * Multi-device SGEMM through clBLAST: C = A B with clf_sgemm(), first on one
 * device, then on the whole fleet with each load-balancing strategy, with the
 * GFLOP/s of each and the rows of C each device computed. Every result is
 * checked against a plain C dot product on a sample of its elements; a
 * mismatch makes the program exit with status 1.
 *
 *   sgemm [N]     N x N times N x N (default 768)
 *
 * Devices: $CLFLEET_DEVICES when set, else the default ones. When those are
 * CPUs only, the CPU devices of two or more compute units are split into
 * sub-devices of one unit, and the sub-devices of one of them form the fleet
 * (sub-devices of one CPU device run at once; on PoCL, separate root devices
 * share one thread pool).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clfleet.h>
#include <clfleet/blas.h>

#define SAMPLES 256 /* elements of C checked after every run */
#define REPEATS 3   /* timed runs of each configuration (the best is shown) */
#define TOLERANCE 1e-4

/* No <math.h>: the program links with nothing but clfleet (pkg-config --libs clfleet). */
static double absd(double x)
{
    return x < 0 ? -x : x;
}

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "sgemm: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    return 1;
}

/* The fleet, and which of its devices to use (see the comment at the top). */
static clf_status make_fleet(clf_fleet **out, size_t *devs, size_t *ndev)
{
    clf_status st = clf_fleet_create(out, NULL);
    if (st != CLF_SUCCESS)
        return st;
    size_t n = clf_fleet_device_count(*out);
    int cpus_only = 1;
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        clf_device_get_info(&in, *out, i);
        cpus_only &= in.type == CLF_DEVICE_CPU;
    }
    if (getenv("CLFLEET_DEVICES") || !cpus_only) {
        *ndev = n < 64 ? n : 64;
        for (size_t i = 0; i < *ndev; i++)
            devs[i] = i;
        return CLF_SUCCESS;
    }
    /* CPU devices of two or more compute units, split; none: the default devices as they are. */
    clf_fleet *split;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = "type=cpu;min_cu=2;split=1";
    if (clf_fleet_create(&split, &o) == CLF_SUCCESS) {
        clf_fleet_destroy(*out);
        *out = split;
    }
    /* The root device with the most sub-devices. */
    n = clf_fleet_device_count(*out);
    int best = -2;
    size_t best_count = 0;
    for (size_t i = 0; i < n; i++) {
        clf_device_info in, other;
        clf_device_get_info(&in, *out, i);
        size_t count = 0;
        for (size_t j = 0; j < n; j++) {
            clf_device_get_info(&other, *out, j);
            count += other.parent_index == in.parent_index && other.is_sub_device;
        }
        if (in.is_sub_device && count > best_count) {
            best = in.parent_index;
            best_count = count;
        }
    }
    *ndev = 0;
    for (size_t i = 0; i < n && *ndev < 64; i++) {
        clf_device_info in;
        clf_device_get_info(&in, *out, i);
        if (best_count == 0 ? i == 0 : (in.is_sub_device && in.parent_index == best))
            devs[(*ndev)++] = i;
    }
    return CLF_SUCCESS;
}

/* The largest relative error of SAMPLES elements of C (row-major n x n) against dot products
 * in double, each relative to the sum of the absolute values of its terms. */
static double check(const float *a, const float *b, const float *c, size_t n)
{
    unsigned long long x = 88172645463325252ull;
    double worst = 0;
    for (int s = 0; s < SAMPLES; s++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t i = (size_t)(x % n), j = (size_t)((x >> 32) % n);
        double sum = 0, mag = 0;
        for (size_t k = 0; k < n; k++) {
            double t = (double)a[i * n + k] * b[k * n + j];
            sum += t;
            mag += absd(t);
        }
        double err = absd(c[i * n + j] - sum) / (mag > 0 ? mag : 1);
        if (!(err <= worst)) /* NaN (a block never written) counts as the worst */
            worst = err == err ? err : 1e300;
    }
    return worst;
}

/* One configuration: a warm-up call (clBLAST builds its kernels on first use), then the best
 * of REPEATS timed calls, each checked. */
static clf_status run(clf_fleet *f, clf_gemm_options *o, size_t n, const float *a, const float *b,
                      float *c, double *best_s, double *worst_err, clf_launch_report *rep)
{
    *best_s = 1e300;
    for (int r = 0; r <= REPEATS; r++) {
        memset(c, 0xff, n * n * sizeof *c); /* NaN: a row not written shows */
        double t0 = now();
        clf_status st = clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, n, n, n, 1.0f, a, n,
                                  b, n, 0.0f, c, n, o, rep);
        double t = now() - t0;
        if (st != CLF_SUCCESS)
            return st;
        double err = check(a, b, c, n);
        if (err > *worst_err)
            *worst_err = err;
        if (r > 0 && t < *best_s)
            *best_s = t;
    }
    return CLF_SUCCESS;
}

static void print_row(const char *label, double s, double gflop, double base,
                      const clf_launch_report *rep)
{
    printf("  %-22s %8.4f %9.2f %8.2fx %7.2f   ", label, s, gflop / s, base / s, rep->efficiency);
    for (size_t i = 0; i < rep->num_devices; i++)
        printf("%s%zu: %llu (%u)", i ? ", " : "", rep->dev[i].device,
               (unsigned long long)rep->dev[i].units, rep->dev[i].chunks);
    printf("\n");
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 768;
    if (n == 0 || n > 16384) {
        fprintf(stderr, "usage: sgemm [N], 1 <= N <= 16384\n");
        return 2;
    }
    if (!clf_blas_available()) {
        fprintf(stderr, "sgemm: without clBLAST%s%s\n",
                clf_last_error()[0] ? ": " : " (clfleet was built without it)", clf_last_error());
        return 1;
    }
    clf_fleet *f;
    size_t devs[64], ndev;
    clf_status st = make_fleet(&f, devs, &ndev);
    if (st == CLF_ERROR_NO_PLATFORM || st == CLF_ERROR_NO_DEVICE) {
        const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
        fprintf(stderr, "sgemm: no OpenCL device: %s\n", clf_last_error());
        return req && strcmp(req, "0") != 0 ? 1 : 77; /* 77: skipped, for make check */
    }
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);

    float *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b);
    float *c = malloc(n * n * sizeof *c);
    if (!a || !b || !c)
        return fail("allocating the matrices", CLF_ERROR_OUT_OF_HOST_MEMORY);
    srand(7);
    for (size_t i = 0; i < n * n; i++) {
        a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        b[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    double gflop = 2.0 * (double)n * n * n * 1e-9;
    printf("clfleet sgemm: C = A B, %zu x %zu times %zu x %zu, single precision, %zu device(s):\n",
           n, n, n, n, ndev);
    for (size_t i = 0; i < ndev; i++) {
        clf_device_info in;
        clf_device_get_info(&in, f, devs[i]);
        printf("  %zu: %s (%u compute unit%s)\n", devs[i], in.name, in.compute_units,
               in.compute_units == 1 ? "" : "s");
    }
    printf("\n  %-22s %8s %9s %9s %7s   %s\n", "run", "time s", "GFLOP/s", "speedup", "eff.",
           "rows of C per device (blocks)");

    clf_launch_report rep;
    double single_s, s, worst = 0;
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    o.strategy = CLF_STRATEGY_STATIC;
    o.devices = devs;
    o.num_devices = 1;
    if ((st = run(f, &o, n, a, b, c, &single_s, &worst, &rep)) != CLF_SUCCESS)
        return fail("one device", st);
    print_row("1 device", single_s, gflop, single_s, &rep);

    static const clf_strategy all[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                       CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                       CLF_STRATEGY_AUTO};
    double fastest = 1e300;
    o.num_devices = ndev;
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        o.strategy = all[k];
        if ((st = run(f, &o, n, a, b, c, &s, &worst, &rep)) != CLF_SUCCESS)
            return fail(clf_strategy_name(all[k]), st);
        char label[64];
        if (all[k] == CLF_STRATEGY_AUTO)
            snprintf(label, sizeof label, "%zu devices auto: %s", ndev,
                     clf_strategy_name(rep.strategy));
        else
            snprintf(label, sizeof label, "%zu devices %s", ndev, clf_strategy_name(all[k]));
        print_row(label, s, gflop, single_s, &rep);
        if (s < fastest)
            fastest = s;
        if (all[k] == CLF_STRATEGY_AUTO)
            printf("  (%s)\n", rep.reason);
    }
    printf("\nfleet of %zu: %.2f GFLOP/s at best, %.2fx one device (%.2f GFLOP/s)\n", ndev,
           gflop / fastest, single_s / fastest, gflop / single_s);
    int bad = !(worst <= TOLERANCE);
    printf("checked %d elements of every result against a C reference: largest relative error "
           "%.2g (%s %g)\n",
           SAMPLES, worst, bad ? "ABOVE" : "within", TOLERANCE);
    free(a);
    free(b);
    free(c);
    clf_fleet_destroy(f);
    printf(bad ? "sgemm FAILED\n" : "sgemm OK\n");
    return bad;
}

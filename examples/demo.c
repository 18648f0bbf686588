/*
 * The clfleet demo (README, Quick start: ./build.sh demo), on the default devices:
 *
 *   1. the devices and the transfer path of every pair;
 *   2. a Mandelbrot image (irregular work) over all of them with every load-balancing
 *      strategy, each checked against a single-device run: per-device shares, time,
 *      efficiency and speedup over the fastest device alone;
 *   3. one device-to-device copy on the chosen path against the naive way (through a
 *      host buffer), and a ring all-reduce across all devices, both checked;
 *   4. clfleet's own per-device counters.
 *
 * It writes the image (mandelbrot.pgm, or $CLFLEET_DEMO_IMAGE) and a Perfetto timeline
 * of every kernel and copy (clfleet-demo-trace.json, or $CLFLEET_TRACE) and says where.
 * With no GPU, PoCL's CPU device is split into two sub-devices that really run at once.
 */
#define _XOPEN_SOURCE 700 /* realpath() */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clfleet.h>

enum { WIDTH = 1536, HEIGHT = 1024, MAX_ITER = 512 };
enum { COPY_BYTES = 64 << 20, ALLREDUCE_COUNT = 8 << 20 };
#define TRACE_FILE "clfleet-demo-trace.json"

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "demo: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

static double seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The default devices; CPUs only (no GPU): each split in two halves that run at once. The
 * timeline goes to TRACE_FILE unless $CLFLEET_TRACE names another file. */
static clf_status make_fleet(clf_fleet **out)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.trace = getenv("CLFLEET_TRACE") ? NULL : TRACE_FILE;
    clf_fleet *probe;
    clf_device_info in;
    clf_status st = clf_fleet_create(&probe, NULL);
    if (st != CLF_SUCCESS)
        return st;
    clf_device_get_info(probe, 0, &in);
    clf_fleet_destroy(probe);
    if (!getenv("CLFLEET_DEVICES") && in.type == CLF_DEVICE_CPU && in.compute_units >= 2)
        o.split_cpu_units = in.compute_units / 2;
    return clf_fleet_create(out, &o);
}

static void print_devices(clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    printf("clfleet %s demo: %zu device(s), %zu context(s)\n\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    printf("  %-3s %-5s %-36s %-28s %4s %9s %s\n", "#", "type", "name", "platform", "CUs", "memory",
           "sub-device of");
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        clf_device_get_info(f, i, &in);
        char parent[16] = "-";
        if (in.is_sub_device)
            snprintf(parent, sizeof parent, "%d", in.parent_index);
        printf("  %-3zu %-5s %-36.36s %-28.28s %4u %5.1f GiB %s\n", i,
               clf_device_type_name(in.type), in.name, in.platform, in.compute_units,
               (double)in.global_mem / (1u << 30), parent);
    }
    /* How bytes move from each device to each other one. */
    printf("\n  transfer paths (* = no copy through host memory):\n");
    for (size_t src = 0; src < n; src++) {
        printf("  from %zu to", src);
        for (size_t dst = 0; dst < n; dst++) {
            clf_path path;
            int direct;
            if (clf_transfer_path(f, src, dst, &path, &direct) == CLF_SUCCESS)
                printf(" %zu: %s%s%s", dst, clf_path_name(path), direct ? "*" : "",
                       dst + 1 < n ? "," : "\n");
        }
    }
    printf("\n");
}

/* ---- Mandelbrot with every strategy ---------------------------------------------------- */

static clf_status mandelbrot(clf_fleet *f, clf_program *p, clf_strategy s, const size_t *devs,
                             size_t ndev, uint32_t *img, clf_launch_report *rep)
{
    int w = WIDTH, h = HEIGHT, iters = MAX_ITER;
    float x0 = -2.2f, y0 = -1.2f, dx = 3.2f / WIDTH, dy = 2.4f / HEIGHT;
    clf_arg args[] = {CLF_OUT(img, (size_t)WIDTH * HEIGHT * 4, WIDTH * sizeof(uint32_t)),
                      CLF_SCALAR(&w),
                      CLF_SCALAR(&h),
                      CLF_SCALAR(&x0),
                      CLF_SCALAR(&y0),
                      CLF_SCALAR(&dx),
                      CLF_SCALAR(&dy),
                      CLF_SCALAR(&iters)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "mandelbrot";
    d.dims = 2;
    d.global[0] = WIDTH;
    d.global[1] = HEIGHT;
    d.strategy = s;
    d.devices = devs;
    d.num_devices = ndev;
    return clf_launch(f, p, &d, args, sizeof args / sizeof args[0], rep);
}

static int write_pgm(const char *path, const uint32_t *img)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    fprintf(fp, "P5\n%d %d\n255\n", WIDTH, HEIGHT);
    for (size_t i = 0; i < (size_t)WIDTH * HEIGHT; i++)
        fputc(img[i] >= MAX_ITER ? 0 : (int)(255 - (img[i] * 255u / MAX_ITER)), fp);
    return fclose(fp);
}

/* Returns nonzero when an image differs from the reference. */
static int strategies(clf_fleet *f, uint32_t *img, uint32_t *ref)
{
    const size_t bytes = (size_t)WIDTH * HEIGHT * 4;
    clf_program *p;
    clf_launch_report rep;
    clf_status st = clf_program_build_shipped(&p, f, "mandelbrot", NULL);
    if (st != CLF_SUCCESS)
        return fail("building cl/mandelbrot.cl", st);
    /* The reference, and the fastest device alone (twice: the first run builds the
     * kernel variant). */
    double best = 0;
    for (size_t d = 0; d < 2 * clf_fleet_device_count(f); d++) {
        size_t dev = d / 2;
        if ((st = mandelbrot(f, p, CLF_STATIC, &dev, 1, ref, &rep)) != CLF_SUCCESS)
            return clf_program_destroy(p), fail("single-device run", st);
        if (d % 2 == 1 && (best == 0 || rep.makespan_s < best))
            best = rep.makespan_s;
    }
    printf("Mandelbrot %dx%d, %d iterations: fastest device alone %.3f s\n\n", WIDTH, HEIGHT,
           MAX_ITER, best);
    printf("  %-13s %8s %7s %8s %8s  %s\n", "strategy", "time", "eff.", "speedup", "equal",
           "per-device share of rows (chunks)");
    static const clf_strategy all[] = {CLF_STATIC, CLF_DYNAMIC, CLF_GUIDED, CLF_MEMORY_AWARE,
                                       CLF_AUTO};
    int bad = 0;
    for (size_t k = 0; k < sizeof all / sizeof all[0] && !bad; k++) {
        memset(img, 0xff, bytes);
        if ((st = mandelbrot(f, p, all[k], NULL, 0, img, &rep)) != CLF_SUCCESS) {
            bad = fail(clf_strategy_name(all[k]), st);
            break;
        }
        int same = memcmp(img, ref, bytes) == 0;
        printf("  %-13s %7.3fs %7.2f %7.2fx %8s  ", clf_strategy_name(rep.strategy), rep.makespan_s,
               rep.efficiency, best / rep.makespan_s, same ? "yes" : "NO");
        for (size_t i = 0; i < rep.num_devices; i++)
            printf("%s%zu: %4.1f%% (%u)", i ? ", " : "", rep.dev[i].device,
                   100.0 * rep.dev[i].share, rep.dev[i].chunks);
        printf("\n");
        if (all[k] == CLF_AUTO)
            printf("  (%s)\n", rep.reason);
        bad |= !same;
    }
    clf_program_destroy(p);
    return bad;
}

/* ---- a copy between two devices, and an all-reduce ------------------------------------- */

/* Best of five of each, taken in turns so that load from elsewhere hits both alike:
 * best[0] one copy on the chosen path, best[1] a read into host memory then a write. */
static int time_copies(clf_buffer *dst, clf_buffer *src, unsigned char *host, double best[2])
{
    best[0] = best[1] = 1e30;
    for (int rep = 0; rep < 10; rep++) {
        double t0 = seconds();
        int failed = rep % 2 ? clf_buffer_read(src, 0, COPY_BYTES, host) != CLF_SUCCESS ||
                                   clf_buffer_write(dst, 0, COPY_BYTES, host) != CLF_SUCCESS
                             : clf_copy(dst, 0, src, 0, COPY_BYTES) != CLF_SUCCESS;
        double t = seconds() - t0;
        if (failed)
            return -1;
        best[rep % 2] = t < best[rep % 2] ? t : best[rep % 2];
    }
    return 0;
}

static int transfer(clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f), to = n > 1 ? 1 : 0;
    unsigned char *host = malloc(COPY_BYTES), *back = malloc(COPY_BYTES);
    clf_buffer *src = NULL, *dst = NULL;
    clf_path path = CLF_PATH_STAGED;
    int bad = 1;
    if (!host || !back || clf_buffer_create(&src, f, 0, COPY_BYTES, 0) ||
        clf_buffer_create(&dst, f, to, COPY_BYTES, 0))
        goto out;
    for (size_t i = 0; i < COPY_BYTES; i++)
        host[i] = (unsigned char)(i ^ (i >> 13));
    if (clf_buffer_write(src, 0, COPY_BYTES, host) || clf_copy(dst, 0, src, 0, COPY_BYTES) ||
        clf_buffer_read(dst, 0, COPY_BYTES, back) || memcmp(host, back, COPY_BYTES) != 0)
        goto out;
    double best[2];
    bad = time_copies(dst, src, back, best) != 0;
    double chosen = best[0], naive = best[1];
    clf_transfer_path(f, 0, to, &path, NULL);
    if (!bad)
        printf("\nCopy of %d MiB from device 0 to device %zu: %s path %.2f GB/s, naive (through "
               "a host buffer) %.2f GB/s: %.2fx\n",
               COPY_BYTES >> 20, to, clf_path_name(path), COPY_BYTES / chosen * 1e-9,
               COPY_BYTES / naive * 1e-9, naive / chosen);
out:
    if (bad)
        fail("device-to-device copy", CLF_ERROR_OPENCL);
    clf_buffer_destroy(src);
    clf_buffer_destroy(dst);
    free(host);
    free(back);
    return bad;
}

static int allreduce(clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f), made = 0;
    clf_buffer **bufs = calloc(n, sizeof *bufs);
    float *x = malloc(ALLREDUCE_COUNT * sizeof *x);
    int bad = 1;
    for (; bufs && x && made < n; made++) { /* device d holds d + 1 everywhere */
        for (size_t i = 0; i < ALLREDUCE_COUNT; i++)
            x[i] = (float)(made + 1);
        if (clf_buffer_create(&bufs[made], f, made, ALLREDUCE_COUNT * sizeof *x, 0) ||
            clf_buffer_write(bufs[made], 0, ALLREDUCE_COUNT * sizeof *x, x))
            break;
    }
    /* Twice, timing the second: the first builds the reduction kernels. Afterwards every
     * element is n times the sum of 1..n. */
    double t = 0, want = (double)n * (double)n * (double)(n + 1) / 2;
    for (int run = 0; run < 2 && made == n; run++) {
        double t0 = seconds();
        if (clf_allreduce(bufs, n, ALLREDUCE_COUNT, CLF_FLOAT, CLF_SUM, NULL) != CLF_SUCCESS)
            made = 0;
        t = seconds() - t0;
    }
    if (made == n) {
        bad = 0;
        for (size_t d = 0; d < n && !bad; d++) {
            bad = clf_buffer_read(bufs[d], 0, ALLREDUCE_COUNT * sizeof *x, x) != CLF_SUCCESS;
            for (size_t i = 0; i < ALLREDUCE_COUNT && !bad; i++)
                bad = x[i] != want;
        }
        printf("All-reduce (ring, sum) of %d MiB of floats over %zu device(s): %.3f s, bus "
               "bandwidth %.2f GB/s, %s\n",
               (int)(ALLREDUCE_COUNT * sizeof *x >> 20), n, t,
               ALLREDUCE_COUNT * sizeof *x / t * 2.0 * (double)(n - 1) / (double)n * 1e-9,
               bad ? "WRONG" : "every device holds the sum");
    }
    if (bad)
        fail("all-reduce", CLF_ERROR_OPENCL);
    for (size_t d = 0; d < n && bufs; d++)
        clf_buffer_destroy(bufs[d]);
    free(bufs);
    free(x);
    return bad;
}

/* Where a file the demo wrote is, as an absolute path. */
static void say_where(const char *what, const char *path)
{
    char *full = realpath(path, NULL);
    printf("%s: %s\n", what, full ? full : path);
    free(full);
}

int main(void)
{
    double t0 = seconds();
    clf_fleet *f;
    clf_status st = make_fleet(&f);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    print_devices(f);
    uint32_t *ref = malloc((size_t)WIDTH * HEIGHT * 4), *img = malloc((size_t)WIDTH * HEIGHT * 4);
    int rc = !ref || !img || strategies(f, img, ref);
    rc = rc || transfer(f) || allreduce(f);

    const char *image =
        getenv("CLFLEET_DEMO_IMAGE") ? getenv("CLFLEET_DEMO_IMAGE") : "mandelbrot.pgm";
    if (!rc && write_pgm(image, img) != 0) {
        fprintf(stderr, "demo: cannot write %s\n", image);
        rc = 1;
    }
    printf("\n");
    clf_metrics_print(f, stdout);
    printf("\n");
    if (!rc)
        say_where("image", image);
    if (clf_trace_path(f) && clf_trace_flush(f) == CLF_SUCCESS)
        say_where("timeline (open it in https://ui.perfetto.dev)", clf_trace_path(f));
    free(ref);
    free(img);
    clf_fleet_destroy(f);
    printf("%s in %.1f s\n", rc ? "demo FAILED" : "demo OK", seconds() - t0);
    return rc;
}

/*
 * The clfleet demo (README.md, Quick start: ./build.sh demo), on the default devices:
 *
 *   1. the devices and the transfer path of every pair;
 *   2. a Mandelbrot image (irregular work) over all of them with every load-balancing
 *      strategy, each checked against a single-device run: per-device shares, time,
 *      efficiency and speedup over the fastest device alone;
 *   3. one device-to-device copy on the chosen path against the naive way (through a
 *      host buffer), and an all-reduce across all devices (the algorithm clf_allreduce()
 *      chose: a ring or a host combine), both checked;
 *   4. clfleet's own per-device counters.
 *
 * It writes the image and a Perfetto timeline of every kernel and copy
 * (clfleet-demo-trace.json, or $CLFLEET_TRACE) and says where. Built with libpng
 * (-DHAVE_LIBPNG), the image is mandelbrot.png, its rows coloured by the device that
 * computed them in the static run; without it, mandelbrot.pgm in grey ($CLFLEET_DEMO_IMAGE
 * names another file). With no GPU, PoCL's CPU device is split into two sub-devices that
 * really run at once; a warning says when the host is busier than it has cores, and the
 * closing lines say how to split a default fleet of one CPU device for other programs.
 */
#define _XOPEN_SOURCE 700 /* realpath() */
#define _DEFAULT_SOURCE   /* getloadavg() */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <clfleet.h>
#ifdef HAVE_LIBPNG
#include <png.h>
#endif

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

/* The default fleet, what programs and the tools get without a selection of their own: the
 * demo splits a lone CPU device itself, they do not, so the closing lines say how to. */
static size_t default_count;
static int default_one_cpu; /* one CPU device of two or more compute units */
static int demo_split;      /* the demo split it */

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
    clf_device_get_info(&in, probe, 0);
    default_count = clf_fleet_device_count(probe);
    default_one_cpu = default_count == 1 && in.type == CLF_DEVICE_CPU && in.compute_units >= 2;
    clf_fleet_destroy(probe);
    if (!getenv("CLFLEET_DEVICES") && in.type == CLF_DEVICE_CPU && in.compute_units >= 2)
        o.split_cpu_units = in.compute_units / 2;
    demo_split = o.split_cpu_units != 0;
    return clf_fleet_create(out, &o);
}

/* Timings mean little on a host busier than it has cores: say so before they are shown. */
static void warn_if_busy(void)
{
    double load;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(&load, 1) == 1 && cores > 0 && load > (double)cores)
        printf("warning: the host's load average (%.1f over the last minute) exceeds its %ld "
               "core(s):\n         other work competes for them, so the times below are slow and "
               "the speedups low.\n\n",
               load, cores);
}

static void print_devices(clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    printf("clfleet %s demo: %zu device(s), %zu context(s)\n\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    printf("  %-3s %-5s %-36s %-28s %4s %9s %s\n", "#", "type", "name", "platform", "CUs", "memory",
           "sub-device");
    for (size_t i = 0; i < n; i++) {
        clf_device_info in, other;
        clf_device_get_info(&in, f, i);
        /* "1 of #0": part 1 of root device #0 (numbered as clfleet-info lists them), so
         * that it cannot be read as a fleet index. */
        char parent[32] = "-";
        if (in.is_sub_device) {
            unsigned part = 0;
            for (size_t j = 0; j < i; j++)
                part += clf_device_get_info(&other, f, j) == CLF_SUCCESS && other.is_sub_device &&
                        other.parent_index == in.parent_index;
            snprintf(parent, sizeof parent, "%u of #%d", part, in.parent_index);
        }
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
            if (clf_transfer_path(&path, &direct, f, src, dst) == CLF_SUCCESS)
                printf(" %zu: %s%s%s", dst, clf_path_name(path), direct ? "*" : "",
                       dst + 1 < n ? "," : "\n");
        }
    }
    printf("  (#: fleet index; sub-device \"1 of #0\": part 1, from 0, of root device #0 as "
           "clfleet-info lists them)\n\n");
    warn_if_busy();
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

/* A pixel's grey level: black inside the set, lighter the sooner a point escapes. */
static unsigned grey(uint32_t iters)
{
    return iters >= MAX_ITER ? 0 : 255 - iters * 255u / MAX_ITER;
}

#ifdef HAVE_LIBPNG
#define IMAGE_FILE "mandelbrot.png"
/* One colour per device, in fleet order (more devices reuse them). */
static const unsigned char PALETTE[][3] = {{70, 130, 255}, {255, 150, 40},  {80, 200, 90},
                                           {230, 70, 70},  {170, 100, 220}, {240, 220, 60}};
static const char *const PALETTE_NAMES[] = {"blue", "orange", "green", "red", "purple", "yellow"};
#define NCOLOURS (sizeof PALETTE / sizeof PALETTE[0])

/* A PNG whose rows take the colour of the device that computed them (row_dev[y], or grey
 * for all when row_dev is NULL), shaded by the grey level. */
static int write_image(const char *path, const uint32_t *img, const size_t *row_dev)
{
    unsigned char *rgb = malloc((size_t)WIDTH * HEIGHT * 3);
    if (!rgb)
        return -1;
    for (size_t y = 0; y < HEIGHT; y++)
        for (size_t x = 0; x < WIDTH; x++) {
            size_t i = y * WIDTH + x;
            unsigned g = grey(img[i]);
            for (int c = 0; c < 3; c++) {
                unsigned v = row_dev ? PALETTE[row_dev[y] % NCOLOURS][c] * g / 255 : g;
                rgb[i * 3 + c] = (unsigned char)v;
            }
        }
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    pi.width = WIDTH;
    pi.height = HEIGHT;
    pi.format = PNG_FORMAT_RGB;
    int ok = png_image_write_to_file(&pi, path, 0, rgb, 0, NULL);
    free(rgb);
    return ok ? 0 : -1;
}
#else
#define IMAGE_FILE "mandelbrot.pgm"
/* Grey levels only: colouring by device needs libpng (configure --with-libpng). */
static int write_image(const char *path, const uint32_t *img, const size_t *row_dev)
{
    (void)row_dev;
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    fprintf(fp, "P5\n%d %d\n255\n", WIDTH, HEIGHT);
    for (size_t i = 0; i < (size_t)WIDTH * HEIGHT; i++)
        fputc((int)grey(img[i]), fp);
    return fclose(fp);
}
#endif

#ifdef HAVE_LIBPNG
/*
 * Which device computed each row, when the report can tell: it gives each device's units
 * (rows) and chunks, not which rows a chunk covered. A static launch with no failure gives
 * each device one contiguous share, in fleet order (whole or in pieces), so its rows follow
 * from the units. Returns 1 and fills row_dev[HEIGHT], else 0.
 */
static int rows_by_device(const clf_launch_report *rep, size_t *row_dev)
{
    if (rep->strategy != CLF_STRATEGY_STATIC || rep->failed_devices)
        return 0;
    uint64_t y = 0;
    for (size_t i = 0; i < rep->num_devices; i++) {
        /* A static share is contiguous, the devices in order, even when handed out in
         * pieces (while static learns the kernel's work profile). */
        if (i && rep->dev[i].device < rep->dev[i - 1].device)
            return 0;
        for (uint64_t k = 0; k < rep->dev[i].units && y < HEIGHT; k++)
            row_dev[y++] = rep->dev[i].device;
    }
    return y == HEIGHT;
}
#endif

/* Returns nonzero when an image differs from the reference. The static run's report goes
 * to *static_rep. */
static int strategies(clf_fleet *f, uint32_t *img, uint32_t *ref, clf_launch_report *static_rep)
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
        if ((st = mandelbrot(f, p, CLF_STRATEGY_STATIC, &dev, 1, ref, &rep)) != CLF_SUCCESS)
            return clf_program_destroy(p), fail("single-device run", st);
        if (d % 2 == 1 && (best == 0 || rep.makespan_s < best))
            best = rep.makespan_s;
    }
    printf("Mandelbrot %dx%d, %d iterations: fastest device alone %.3f s\n\n", WIDTH, HEIGHT,
           MAX_ITER, best);
    printf("  %-16s %8s %7s %8s %8s  %s\n", "strategy", "time", "eff.", "speedup", "equal",
           "per-device share of rows (chunks)");
    static const clf_strategy all[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                       CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                       CLF_STRATEGY_AUTO};
    int bad = 0;
    for (size_t k = 0; k < sizeof all / sizeof all[0] && !bad; k++) {
        memset(img, 0xff, bytes);
        if ((st = mandelbrot(f, p, all[k], NULL, 0, img, &rep)) != CLF_SUCCESS) {
            bad = fail(clf_strategy_name(all[k]), st);
            break;
        }
        int same = memcmp(img, ref, bytes) == 0;
        if (all[k] == CLF_STRATEGY_STATIC)
            *static_rep = rep;
        /* A strategy that chooses reads "auto → static": what was asked, what ran. The arrow
         * is three bytes in UTF-8 and one column, hence the padding by hand. */
        char label[48];
        int cols = 0;
        if (rep.strategy != all[k])
            cols = snprintf(label, sizeof label, "%s \u2192 %s", clf_strategy_name(all[k]),
                            clf_strategy_name(rep.strategy)) - 2;
        else
            cols = snprintf(label, sizeof label, "%s", clf_strategy_name(all[k]));
        printf("  %s%*s %7.3fs %7.2f %7.2fx %8s  ", label, cols < 16 ? 16 - cols : 0, "",
               rep.makespan_s, rep.efficiency, best / rep.makespan_s, same ? "yes" : "NO");
        for (size_t i = 0; i < rep.num_devices; i++)
            printf("%s%zu: %4.1f%% (%u)", i ? ", " : "", rep.dev[i].device,
                   100.0 * rep.dev[i].share, rep.dev[i].chunks);
        printf("\n");
        if (all[k] == CLF_STRATEGY_AUTO)
            printf("  (%s)\n", rep.reason);
        bad |= !same;
    }
    if (!bad)
        printf("\n  time: from the launch's start to the last row back on the host;\n"
               "  eff.: efficiency, the earliest device's finish / the latest one's (1: all "
               "finish together);\n"
               "  speedup: the fastest device alone / time;\n"
               "  equal: the image is identical, bit for bit, to the single-device one;\n"
               "  share: each device (fleet index) and its part of the rows, with its chunks in "
               "parentheses.\n");
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
    clf_transfer_path(&path, NULL, f, 0, to);
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
        if (clf_allreduce(bufs, n, ALLREDUCE_COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL) !=
            CLF_SUCCESS)
            made = 0;
        t = seconds() - t0;
    }
    /* Which algorithm clf_allreduce() chose for this call (the ring, or a host combine when
     * the model predicts that cheaper). */
    clf_allreduce_algorithm alg = CLF_ALLREDUCE_RING;
    if (made == n && clf_allreduce_choice(&alg, bufs, n, ALLREDUCE_COUNT, CLF_TYPE_FLOAT,
                                          CLF_REDUCE_SUM, NULL, NULL, NULL) != CLF_SUCCESS)
        made = 0;
    if (made == n) {
        bad = 0;
        for (size_t d = 0; d < n && !bad; d++) {
            bad = clf_buffer_read(bufs[d], 0, ALLREDUCE_COUNT * sizeof *x, x) != CLF_SUCCESS;
            for (size_t i = 0; i < ALLREDUCE_COUNT && !bad; i++)
                bad = x[i] != want;
        }
        printf("All-reduce (%s, sum) of %d MiB of floats over %zu device(s): %.3f s, bus "
               "bandwidth %.2f GB/s, %s\n",
               clf_allreduce_algorithm_name(alg), (int)(ALLREDUCE_COUNT * sizeof *x >> 20), n, t,
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

/* A fleet of one CPU device shows no balancing: PoCL's root CPU devices do not even run at
 * once with each other, its sub-devices do. When the default fleet is one such device, say
 * which selection splits it, and into how many devices (made, not guessed). A selection
 * that already splits is the user's choice and gets no advice. */
static void advise_split(void)
{
    if (!default_one_cpu)
        return;
    const char *sel = getenv("CLFLEET_DEVICES");
    char want[512], lower[512];
    size_t i = 0;
    for (; sel && sel[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(sel[i] >= 'A' && sel[i] <= 'Z' ? sel[i] - 'A' + 'a' : sel[i]);
    lower[i] = '\0';
    if (strstr(lower, "split"))
        return;
    if (sel && *sel) {
        if (snprintf(want, sizeof want, "%s;split=1", sel) >= (int)sizeof want)
            return;
    } else {
        snprintf(want, sizeof want, "type=cpu;split=1");
    }
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = want;
    clf_fleet *f;
    if (clf_fleet_create(&f, &o) != CLF_SUCCESS)
        return;
    size_t n = clf_fleet_device_count(f);
    clf_fleet_destroy(f);
    if (n < 2)
        return;
    printf("\nThe default fleet here is one CPU device%s.\n"
           "clfleet-info, clfleet-bench and your programs get that one device; for %zu devices\n"
           "that run at once, one per compute unit (doc/02-devices.md, \"Device selection\"):\n"
           "  export CLFLEET_DEVICES=\"%s\"\n\n",
           demo_split ? " (this demo split it itself)" : "", n, want);
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
    clf_launch_report static_rep;
    memset(&static_rep, 0, sizeof static_rep);
    int rc = !ref || !img || strategies(f, img, ref, &static_rep);
    rc = rc || transfer(f) || allreduce(f);

    const char *image = getenv("CLFLEET_DEMO_IMAGE") ? getenv("CLFLEET_DEMO_IMAGE") : IMAGE_FILE;
    static size_t row_dev[HEIGHT];
    int coloured = 0;
#ifdef HAVE_LIBPNG
    coloured = !rc && rows_by_device(&static_rep, row_dev);
#endif
    if (!rc && write_image(image, img, coloured ? row_dev : NULL) != 0) {
        fprintf(stderr, "demo: cannot write %s\n", image);
        rc = 1;
    }
    printf("\n");
    clf_metrics_print(f, stdout);
    printf("\n");
    if (!rc) {
        say_where("image", image);
#ifdef HAVE_LIBPNG
        if (coloured) {
            printf("  rows coloured by the device that computed them in the static run:");
            for (size_t i = 0; i < static_rep.num_devices; i++)
                printf("%s device %zu %s", i ? "," : "", static_rep.dev[i].device,
                       PALETTE_NAMES[static_rep.dev[i].device % NCOLOURS]);
            printf("\n");
        } else {
            printf("  in grey: a device failed in the static run, so its report does not tell "
                   "which rows each device computed\n");
        }
#else
        printf("  in grey: colouring rows by device needs libpng (configure --with-libpng)\n");
#endif
    }
    if (clf_trace_path(f) && clf_trace_flush(f) == CLF_SUCCESS)
        say_where("timeline (open it in https://ui.perfetto.dev)", clf_trace_path(f));
    free(ref);
    free(img);
    clf_fleet_destroy(f);
    if (!rc)
        advise_split();
    printf("%s in %.1f s\n", rc ? "demo FAILED" : "demo OK", seconds() - t0);
    return rc;
}

/*
 * The clfleet demo: the default devices, then a Mandelbrot image (irregular
 * work) computed across all of them with every load-balancing strategy, each
 * checked against a single-device run, with per-device shares, efficiency and
 * speedup. Writes mandelbrot.pgm (or $CLFLEET_DEMO_IMAGE).
 *
 * With no GPU, PoCL's CPU device is split into sub-devices so that the fleet
 * has devices that really run at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet.h"

enum { WIDTH = 1536, HEIGHT = 1024, MAX_ITER = 512 };

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "demo: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    return 1;
}

/* Default devices; CPUs only (no GPU): split each in two so they run at once. */
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

static void print_devices(clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    printf("clfleet %s demo: %zu device(s), %zu context(s)\n\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    printf("  %-3s %-5s %-36s %-28s %4s %9s %s\n", "#", "type", "name", "platform", "CUs",
           "memory", "sub-device of");
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
    printf("\n");
}

typedef struct image {
    uint32_t *px;
    size_t bytes;
} image;

static clf_status mandelbrot(clf_fleet *f, clf_program *p, clf_strategy s, const size_t *devs,
                             size_t ndev, image *img, clf_launch_report *rep)
{
    int w = WIDTH, h = HEIGHT, iters = MAX_ITER;
    float x0 = -2.2f, y0 = -1.2f, dx = 3.2f / WIDTH, dy = 2.4f / HEIGHT;
    clf_arg args[] = {CLF_OUT(img->px, img->bytes, WIDTH * sizeof(uint32_t)),
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

static int write_pgm(const char *path, const image *img)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    fprintf(fp, "P5\n%d %d\n255\n", WIDTH, HEIGHT);
    for (size_t i = 0; i < (size_t)WIDTH * HEIGHT; i++) {
        uint32_t it = img->px[i];
        fputc(it >= MAX_ITER ? 0 : (int)(255 - (it * 255u / MAX_ITER)), fp);
    }
    return fclose(fp);
}

int main(void)
{
    clf_fleet *f;
    clf_program *p;
    clf_status st = make_fleet(&f);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    print_devices(f);
    if ((st = clf_program_build_shipped(&p, f, "mandelbrot", NULL)) != CLF_SUCCESS)
        return fail("building cl/mandelbrot.cl", st);

    size_t n = clf_fleet_device_count(f);
    image ref = {calloc((size_t)WIDTH * HEIGHT, 4), (size_t)WIDTH * HEIGHT * 4};
    image img = {calloc((size_t)WIDTH * HEIGHT, 4), ref.bytes};
    if (!ref.px || !img.px)
        return fail("allocating", CLF_ERROR_OUT_OF_HOST_MEMORY);
    clf_launch_report rep;

    /* The reference, and the best single device: each device alone (twice: the first
     * run builds the kernel variant). */
    double best = 0;
    for (size_t d = 0; d < n; d++)
        for (int rep_i = 0; rep_i < 2; rep_i++) {
            if ((st = mandelbrot(f, p, CLF_STATIC, &d, 1, &ref, &rep)) != CLF_SUCCESS)
                return fail("single-device run", st);
            if (rep_i == 1 && (best == 0 || rep.makespan_s < best))
                best = rep.makespan_s;
        }
    printf("Mandelbrot %dx%d, %d iterations: best single device %.3f s\n\n", WIDTH, HEIGHT,
           MAX_ITER, best);
    printf("  %-13s %8s %7s %8s %8s  %s\n", "strategy", "time", "eff.", "speedup", "equal",
           "per-device share of rows (chunks)");

    static const clf_strategy all[] = {CLF_STATIC, CLF_DYNAMIC, CLF_GUIDED, CLF_MEMORY_AWARE,
                                       CLF_AUTO};
    int rc = 0;
    for (size_t k = 0; k < sizeof all / sizeof all[0] && rc == 0; k++) {
        memset(img.px, 0xff, img.bytes);
        if ((st = mandelbrot(f, p, all[k], NULL, 0, &img, &rep)) != CLF_SUCCESS)
            return fail(clf_strategy_name(all[k]), st);
        int same = memcmp(img.px, ref.px, img.bytes) == 0;
        printf("  %-13s %7.3fs %7.2f %7.2fx %8s  ", clf_strategy_name(rep.strategy),
               rep.makespan_s, rep.efficiency, best / rep.makespan_s, same ? "yes" : "NO");
        for (size_t i = 0; i < rep.num_devices; i++)
            printf("%s%zu: %4.1f%% (%u)", i ? ", " : "", rep.dev[i].device,
                   100.0 * rep.dev[i].share, rep.dev[i].chunks);
        printf("\n");
        if (all[k] == CLF_AUTO)
            printf("  (%s)\n", rep.reason);
        rc |= !same;
    }

    const char *path = getenv("CLFLEET_DEMO_IMAGE") ? getenv("CLFLEET_DEMO_IMAGE")
                                                    : "mandelbrot.pgm";
    if (write_pgm(path, &img) != 0) {
        fprintf(stderr, "demo: cannot write %s\n", path);
        rc = 1;
    } else {
        printf("\nwrote the image to %s\n", path);
    }
    free(ref.px);
    free(img.px);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    printf(rc ? "demo FAILED\n" : "demo OK\n");
    return rc;
}

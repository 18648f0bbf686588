/*
 * Example 9: the Mandelbrot set with every load-balancing strategy.
 *
 *   mandelbrot [OUTPUT.ppm]       default mandelbrot.ppm in the current directory
 *
 * Mandelbrot is irregular work: rows through the set cost up to MAX_ITER iterations
 * a pixel, rows outside it almost nothing, so equal shares of rows are not equal
 * shares of work. The image is computed on every device of the fleet with each
 * strategy (static, dynamic, guided, memory-aware, auto); for each the program
 * prints a per-device table (rows, share, chunks, kernel time, finish time), the
 * speedup over the fastest device alone and the efficiency (earliest finish over
 * latest finish). It writes the image as a colour PPM.
 *
 * The iteration uses 64-bit fixed-point arithmetic (28 fraction bits) rather than
 * float: integer results do not depend on how a compiler contracts or rounds, so
 * every strategy's image is compared bit for bit with a plain C loop.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { WIDTH = 768, HEIGHT = 512, MAX_ITER = 256 };
#define ONE ((int64_t)1 << 28) /* fixed point: value x is stored as x * ONE */

static const char SOURCE[] =
    "#define ONE (1L << 28)\n"
    "__kernel void mandel(__global uint *out, int width, long x0, long y0, long step,\n"
    "                     int max_iter)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    long cr = x0 + x * step, ci = y0 + y * step, zr = 0, zi = 0;\n"
    "    int i = 0;\n"
    "    for (; i < max_iter; i++) {\n"
    "        long zr2 = zr * zr / ONE, zi2 = zi * zi / ONE;\n"
    "        if (zr2 + zi2 > 4 * ONE)\n"
    "            break;\n"
    "        zi = 2 * zr * zi / ONE + ci;\n"
    "        zr = zr2 - zi2 + cr;\n"
    "    }\n"
    "    out[y * width + x] = i;\n"
    "}\n";

/* The view: x from -2.25, 3.5 units wide; y from -1.5, so that the set lies off the
 * middle row and equal halves of the rows are unequal halves of the work. */
static const int64_t STEP = (7 * ONE / 2) / WIDTH, X0 = -9 * ONE / 4, Y0 = -3 * ONE / 2;

/* The same iteration in plain C (division truncates towards zero, as in OpenCL C). */
static uint32_t mandel(int x, int y)
{
    int64_t cr = X0 + x * STEP, ci = Y0 + y * STEP, zr = 0, zi = 0;
    int i = 0;
    for (; i < MAX_ITER; i++) {
        int64_t zr2 = zr * zr / ONE, zi2 = zi * zi / ONE;
        if (zr2 + zi2 > 4 * ONE)
            break;
        zi = 2 * zr * zi / ONE + ci;
        zr = zr2 - zi2 + cr;
    }
    return (uint32_t)i;
}

static clf_status render(clf_fleet *f, clf_program *p, clf_strategy s, const size_t *devices,
                         size_t ndev, uint32_t *img, clf_launch_report *rep)
{
    int width = WIDTH, max_iter = MAX_ITER;
    int64_t x0 = X0, y0 = Y0, step = STEP;
    const size_t row = WIDTH * sizeof(uint32_t);
    clf_arg args[] = {CLF_OUT(img, HEIGHT * row, row),
                      CLF_SCALAR(&width),
                      CLF_SCALAR(&x0),
                      CLF_SCALAR(&y0),
                      CLF_SCALAR(&step),
                      CLF_SCALAR(&max_iter)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "mandel";
    d.dims = 2; /* split along y: chunks of whole rows */
    d.global[0] = WIDTH;
    d.global[1] = HEIGHT;
    d.local[0] = 64; /* one work-group size for every chunk: 64 x 1 */
    d.local[1] = 1;
    d.strategy = s;
    d.devices = devices;
    d.num_devices = ndev;
    memset(img, 0xff, HEIGHT * row);
    return clf_launch(f, p, &d, args, sizeof args / sizeof args[0], rep);
}

static void print_table(const clf_launch_report *r, double best_single_s)
{
    printf("%s: %.1f ms, %.2fx the fastest device alone, efficiency %.2f\n",
           clf_strategy_name(r->strategy), r->makespan_s * 1e3, best_single_s / r->makespan_s,
           r->efficiency);
    if (r->requested == CLF_STRATEGY_AUTO)
        printf("  (%s)\n", r->reason);
    printf("  device   rows   share  chunks  kernel ms  finished at ms\n");
    for (size_t i = 0; i < r->num_devices; i++)
        printf("  %6zu %6llu  %5.1f%%  %6u  %9.1f  %14.1f\n", r->dev[i].device,
               (unsigned long long)r->dev[i].units, 100.0 * r->dev[i].share, r->dev[i].chunks,
               r->dev[i].busy_s * 1e3, r->dev[i].finish_s * 1e3);
}

/* A colour for an iteration count: black inside the set, a smooth ramp outside. */
static int write_ppm(const char *path, const uint32_t *img)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    fprintf(fp, "P6\n%d %d\n255\n", WIDTH, HEIGHT);
    for (size_t i = 0; i < (size_t)WIDTH * HEIGHT; i++) {
        double t = (double)img[i] / MAX_ITER, u = 1.0 - t;
        unsigned char rgb[3] = {(unsigned char)(9.0 * u * t * t * t * 255.0),
                                (unsigned char)(15.0 * u * u * t * t * 255.0),
                                (unsigned char)(8.5 * u * u * u * t * 255.0)};
        fwrite(rgb, 1, 3, fp);
    }
    return fclose(fp);
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "mandelbrot: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "mandelbrot.ppm";
    const size_t pixels = (size_t)WIDTH * HEIGHT;
    clf_fleet *f;
    clf_program *p = NULL;
    clf_launch_report rep;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    uint32_t *want = malloc(pixels * sizeof *want), *img = malloc(pixels * sizeof *img);
    size_t ndev = clf_fleet_device_count(f), wrong = 0;
    double best = 0;
    if (!want || !img) {
        st = CLF_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    for (int y = 0; y < HEIGHT; y++)
        for (int x = 0; x < WIDTH; x++)
            want[(size_t)y * WIDTH + x] = mandel(x, y);
    if ((st = clf_program_build_source(&p, f, SOURCE, NULL)) != CLF_SUCCESS ||
        (st = render(f, p, CLF_STRATEGY_DYNAMIC, NULL, 0, img, &rep)) != CLF_SUCCESS) /* warm-up */
        goto out;

    printf("Mandelbrot %dx%d, up to %d iterations a pixel, on %zu device(s)\nalone:", WIDTH, HEIGHT,
           MAX_ITER, ndev);
    for (size_t d = 0; d < ndev && st == CLF_SUCCESS; d++) {
        if ((st = render(f, p, CLF_STRATEGY_STATIC, &d, 1, img, &rep)) == CLF_SUCCESS) {
            printf(" device %zu %.1f ms%s", d, rep.makespan_s * 1e3, d + 1 < ndev ? "," : "\n");
            best = best == 0 || rep.makespan_s < best ? rep.makespan_s : best;
            wrong += memcmp(img, want, pixels * sizeof *img) != 0;
        }
    }
    static const clf_strategy all[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                       CLF_STRATEGY_GUIDED, CLF_STRATEGY_MEMORY_AWARE,
                                       CLF_STRATEGY_AUTO};
    for (size_t k = 0; k < sizeof all / sizeof all[0] && st == CLF_SUCCESS; k++) {
        if ((st = render(f, p, all[k], NULL, 0, img, &rep)) != CLF_SUCCESS)
            break;
        printf("\n");
        print_table(&rep, best);
        if (memcmp(img, want, pixels * sizeof *img) != 0) {
            printf("  the image differs from the C loop's\n");
            wrong++;
        }
    }
    if (st == CLF_SUCCESS && write_ppm(path, img) != 0) {
        fprintf(stderr, "mandelbrot: cannot write %s\n", path);
        wrong++;
    } else if (st == CLF_SUCCESS) {
        printf("\nwrote %s\n", path);
    }
out:
    if (st != CLF_SUCCESS)
        fail("rendering", st);
    else if (wrong == 0)
        printf("every image equals the C loop's\n");
    free(want);
    free(img);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    return st == CLF_SUCCESS && wrong == 0 ? 0 : 1;
}

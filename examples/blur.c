/*
 * Example 7: a 5x5 Gaussian blur of a batch of images across the devices.
 *
 *   blur [IMAGE...]       PNG (when built with libpng), PGM or PPM, 8 bits a sample
 *
 * Each image is one clf_launch() over all the devices, split by rows: a device
 * that blurs rows [a, b) needs rows [a-2, b+2) of the input, which CLF_IN_HALO
 * asks for (a halo of 2 rows before and after each chunk). The launches of the whole
 * batch are queued at once with clf_launch_async() and run one after another.
 *
 * Without arguments the program first draws a few test images (gradients, shapes and
 * noise, the same every run), writes them to the current directory as
 * blur-sample-N.png / .pgm / .ppm and reads them back. Results go to the current
 * directory as NAME-blurred.EXT. The filter is integer arithmetic (weights
 * 1 4 6 4 1 in each direction, divided by 256 with rounding, edges clamped), so every
 * result is compared exactly with a plain C loop; a mismatch makes the exit status 1.
 *
 * Build with -DHAVE_LIBPNG and $(pkg-config --cflags --libs libpng) for PNG.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>
#ifdef HAVE_LIBPNG
#include <png.h>
#define PNG_NOTE ""
#else
#define PNG_NOTE " (this build reads PNG only with libpng)"
#endif

static const char SOURCE[] =
    "__constant uint G[5] = {1, 4, 6, 4, 1};\n"
    "/* Interleaved 8-bit samples, c per pixel; global-indexed: work-item (x, y). */\n"
    "__kernel void gauss5(__global const uchar *in, __global uchar *out, int w, int h, int c)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    for (int ch = 0; ch < c; ch++) {\n"
    "        uint sum = 0;\n"
    "        for (int j = 0; j < 5; j++) {\n"
    "            __global const uchar *line = in + clamp(y + j - 2, 0, h - 1) * w * c + ch;\n"
    "            uint r = 0;\n"
    "            for (int i = 0; i < 5; i++)\n"
    "                r += G[i] * line[clamp(x + i - 2, 0, w - 1) * c];\n"
    "            sum += G[j] * r;\n"
    "        }\n"
    "        out[(y * w + x) * c + ch] = (uchar)((sum + 128) >> 8);\n"
    "    }\n"
    "}\n";

typedef struct image {
    char name[256]; /* the file it came from */
    int w, h, c;    /* c: samples a pixel, 1 (grey) to 4 (RGBA) */
    uint8_t *px;
} image;

static size_t image_bytes(const image *im)
{
    return (size_t)im->w * (size_t)im->h * (size_t)im->c;
}

/* Sizes the kernel's int indices can hold; a clear message otherwise. */
static int image_alloc(image *im, int w, int h, int c)
{
    if (w < 1 || h < 1 || c < 1 || c > 4 || (uint64_t)w * (uint64_t)h * (uint64_t)c > INT32_MAX) {
        fprintf(stderr, "blur: %s: unsupported size %d x %d x %d\n", im->name, w, h, c);
        return -1;
    }
    im->w = w, im->h = h, im->c = c;
    im->px = malloc(image_bytes(im));
    return im->px ? 0 : -1;
}

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot : "";
}

/* ---- PGM (P5) and PPM (P6) ---------------------------------------------------------- */

/* The next header number, skipping blanks and # comments. */
static int pnm_number(FILE *fp)
{
    int ch, v = 0, digits = 0;
    while ((ch = fgetc(fp)) == '#' || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
        if (ch == '#')
            while ((ch = fgetc(fp)) != '\n' && ch != EOF)
                ;
    for (; ch >= '0' && ch <= '9' && v < 1000000; ch = fgetc(fp), digits++)
        v = v * 10 + (ch - '0');
    return digits && (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') ? v : -1;
}

static int read_pnm(image *im, FILE *fp)
{
    char magic[2] = {0, 0};
    if (fread(magic, 1, 2, fp) != 2 || magic[0] != 'P' || (magic[1] != '5' && magic[1] != '6')) {
        fprintf(stderr, "blur: %s: not a binary PGM/PPM (P5/P6)%s\n", im->name, PNG_NOTE);
        return -1;
    }
    int w = pnm_number(fp), h = pnm_number(fp), maxval = pnm_number(fp);
    if (maxval != 255) {
        fprintf(stderr, "blur: %s: %s; 8-bit images (maxval 255) only\n", im->name,
                maxval < 0 ? "bad header" : "unsupported maxval");
        return -1;
    }
    if (image_alloc(im, w, h, magic[1] == '5' ? 1 : 3) != 0)
        return -1;
    if (fread(im->px, 1, image_bytes(im), fp) != image_bytes(im)) {
        fprintf(stderr, "blur: %s: truncated\n", im->name);
        return -1;
    }
    return 0;
}

static int write_pnm(const image *im, const char *path)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    fprintf(fp, "P%c\n%d %d\n255\n", im->c == 1 ? '5' : '6', im->w, im->h);
    size_t n = fwrite(im->px, 1, image_bytes(im), fp);
    return fclose(fp) == 0 && n == image_bytes(im) ? 0 : -1;
}

/* ---- PNG through libpng's simplified API ---------------------------------------------- */

#ifdef HAVE_LIBPNG
static int read_png(image *im, const char *path)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) {
        fprintf(stderr, "blur: %s: %s\n", path, pi.message);
        return -1;
    }
    /* 8-bit samples; a palette becomes its colours. */
    pi.format &= PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA;
    if (image_alloc(im, (int)pi.width, (int)pi.height, (int)PNG_IMAGE_SAMPLE_CHANNELS(pi.format))) {
        png_image_free(&pi);
        return -1;
    }
    if (!png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
        fprintf(stderr, "blur: %s: %s\n", path, pi.message);
        return -1;
    }
    return 0;
}

static int write_png(const image *im, const char *path)
{
    static const png_uint_32 format[5] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB,
                                          PNG_FORMAT_RGBA};
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    pi.width = (png_uint_32)im->w;
    pi.height = (png_uint_32)im->h;
    pi.format = format[im->c];
    return png_image_write_to_file(&pi, path, 0, im->px, 0, NULL) ? 0 : -1;
}
#endif

static int read_image(image *im, const char *path)
{
    snprintf(im->name, sizeof im->name, "%s", path);
    im->px = NULL;
#ifdef HAVE_LIBPNG
    if (strcmp(extension(path), ".png") == 0)
        return read_png(im, path);
#endif
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return -1;
    }
    int rc = read_pnm(im, fp);
    fclose(fp);
    return rc;
}

static int write_image(const image *im, const char *path)
{
    int rc = -1;
#ifdef HAVE_LIBPNG
    if (strcmp(extension(path), ".png") == 0)
        rc = write_png(im, path);
    else
#endif
        if (im->c == 1 || im->c == 3)
        rc = write_pnm(im, path);
    if (rc != 0)
        fprintf(stderr, "blur: cannot write %s\n", path);
    return rc;
}

/* ---- test images: gradients, discs, a stripe and noise ---------------------------------- */

static int clamp255(int v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

static void draw(image *im, unsigned k)
{
    uint32_t seed = 2654435761u * (k + 1);
    int w = im->w, h = im->h, side = w < h ? w : h;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int rgb[3] = {x * 255 / w, y * 255 / h, 255 - (x + y) * 255 / (w + h)};
            for (int s = 0; s < 3; s++) { /* three discs of primary colours */
                int dx = x - w * (s + 1) / 4, dy = y - h * (1 + (s + (int)k) % 3) / 4;
                int r = side / (4 + s);
                if (dx * dx + dy * dy < r * r)
                    for (int ch = 0; ch < 3; ch++)
                        rgb[ch] = ch == s ? 230 : 30;
            }
            if ((x + 2 * y) % (w / 3 + 1) < 6) /* a diagonal stripe */
                rgb[0] = rgb[1] = rgb[2] = 250;
            uint8_t *p = im->px + ((size_t)y * (size_t)w + (size_t)x) * (size_t)im->c;
            for (int ch = 0; ch < 3; ch++) {
                seed = seed * 1664525u + 1013904223u;
                rgb[ch] = clamp255(rgb[ch] + (int)(seed >> 27) - 16); /* noise of +-16 */
            }
            if (im->c < 3)
                p[0] = (uint8_t)((rgb[0] * 2 + rgb[1] * 5 + rgb[2]) / 8); /* luma */
            else
                for (int ch = 0; ch < 3; ch++)
                    p[ch] = (uint8_t)rgb[ch];
            if (im->c == 2 || im->c == 4) /* opaque in the middle, clear at the corners */
                p[im->c - 1] =
                    (uint8_t)clamp255(400 - (abs(2 * x - w) + abs(2 * y - h)) * 255 / side);
        }
}

/* The batch drawn when no file is given: sizes odd and even, down to fewer rows than
 * most fleets have devices. */
static const struct sample {
    const char *ext;
    int w, h, c;
} SAMPLES[] = {{".png", 640, 480, 3}, {".pgm", 512, 384, 1}, {".ppm", 333, 217, 3},
               {".png", 256, 256, 4}, {".png", 300, 200, 2}, {".pgm", 101, 3, 1}};
enum { NSAMPLES = sizeof SAMPLES / sizeof SAMPLES[0] };

/* Draw, write and read back sample k; the image read must be the one drawn. */
static int make_sample(image *im, unsigned k)
{
    struct sample s = SAMPLES[k];
    image drawn;
#ifndef HAVE_LIBPNG
    if (strcmp(s.ext, ".png") == 0) { /* PNM then: grey or RGB */
        s.ext = s.c < 3 ? ".pgm" : ".ppm";
        s.c = s.c < 3 ? 1 : 3;
    }
#endif
    snprintf(drawn.name, sizeof drawn.name, "blur-sample-%u%s", k + 1, s.ext);
    if (image_alloc(&drawn, s.w, s.h, s.c) != 0)
        return -1;
    draw(&drawn, k);
    int rc = write_image(&drawn, drawn.name);
    if (rc == 0 && (rc = read_image(im, drawn.name)) == 0 &&
        (im->w != s.w || im->h != s.h || im->c != s.c ||
         memcmp(im->px, drawn.px, image_bytes(im)) != 0)) {
        fprintf(stderr, "blur: %s: read back different from what was written\n", im->name);
        rc = -1;
    }
    free(drawn.px);
    return rc;
}

/* ---- the blur ------------------------------------------------------------------------ */

static void blur_reference(const image *in, uint8_t *out)
{
    static const unsigned g[5] = {1, 4, 6, 4, 1};
    int w = in->w, h = in->h, c = in->c;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < c; ch++) {
                unsigned sum = 0;
                for (int j = 0; j < 5; j++) {
                    int yy = y + j - 2 < 0 ? 0 : y + j - 2 >= h ? h - 1 : y + j - 2;
                    for (int i = 0; i < 5; i++) {
                        int xx = x + i - 2 < 0 ? 0 : x + i - 2 >= w ? w - 1 : x + i - 2;
                        sum += g[j] * g[i] * in->px[((size_t)yy * w + xx) * c + ch];
                    }
                }
                out[((size_t)y * w + x) * c + ch] = (uint8_t)((sum + 128) >> 8);
            }
}

/* NAME.EXT (any directory) -> NAME-blurred.EXT in the current directory. */
static void output_name(const char *in, char *out, size_t size)
{
    const char *slash = strrchr(in, '/'), *base = slash ? slash + 1 : in;
    const char *ext = extension(base);
    snprintf(out, size, "%.*s-blurred%s", (int)(ext - base), base, ext);
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "blur: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

/* Blur image i's result against the C loop, write it, and say how it went. */
static int check_and_write(const image *in, const image *out, const clf_launch_report *rep)
{
    uint8_t *want = malloc(image_bytes(in));
    char name[300];
    output_name(in->name, name, sizeof name);
    if (want)
        blur_reference(in, want);
    int same = want && memcmp(want, out->px, image_bytes(in)) == 0;
    int written = write_image(out, name) == 0;
    printf("  %-22s %4d x %-4d x %d  %7.1f ms  %s -> %s\n    rows:", in->name, in->w, in->h, in->c,
           rep->makespan_s * 1e3, same ? "exact" : "DIFFERS", name);
    for (size_t k = 0; k < rep->num_devices; k++)
        printf(" device %zu %llu,", rep->dev[k].device, (unsigned long long)rep->dev[k].units);
    printf(" (%s)\n", clf_strategy_name(rep->strategy));
    free(want);
    return same && written;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)argc - 1 : NSAMPLES, loaded = 0, queued = 0, good = 0;
    image *in = calloc(n, sizeof *in), *out = calloc(n, sizeof *out);
    clf_launch_report *rep = calloc(n, sizeof *rep);
    clf_event **done = calloc(n, sizeof *done);
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    clf_status st;
    int rc = 1;
    if (!in || !out || !rep || !done)
        goto out;
    for (; loaded < n; loaded++) {
        int bad = argc > 1 ? read_image(&in[loaded], argv[loaded + 1])
                           : make_sample(&in[loaded], (unsigned)loaded);
        out[loaded] = in[loaded];
        if (bad || !(out[loaded].px = malloc(image_bytes(&in[loaded])))) {
            free(in[loaded].px);
            goto out;
        }
    }
    if ((st = clf_fleet_create(&f, NULL)) != CLF_SUCCESS) {
        rc = fail("creating the fleet", st);
        goto out;
    }
    if ((st = clf_program_build_source(&p, f, SOURCE, NULL)) != CLF_SUCCESS) {
        fail("building the kernel", st);
        goto out;
    }

    /* Queue every image's launch, then wait for each. */
    for (; queued < n; queued++) {
        image *im = &in[queued];
        const size_t row = (size_t)im->w * (size_t)im->c, bytes = row * (size_t)im->h;
        clf_arg args[] = {CLF_IN_HALO(im->px, bytes, row, 2, 2),
                          CLF_OUT(out[queued].px, bytes, row), CLF_SCALAR(&im->w),
                          CLF_SCALAR(&im->h), CLF_SCALAR(&im->c)};
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "gauss5";
        d.dims = 2;
        d.global[0] = (size_t)im->w;
        d.global[1] = (size_t)im->h;
        if ((st = clf_launch_async(f, p, &d, args, 5, &rep[queued], &done[queued])) !=
            CLF_SUCCESS) {
            fail("clf_launch_async", st);
            break;
        }
    }
    printf("%zu image(s), 5x5 Gaussian on %zu device(s)\n", n, clf_fleet_device_count(f));
    for (size_t i = 0; i < queued; i++) {
        if ((st = clf_event_wait(done[i])) != CLF_SUCCESS)
            fail(in[i].name, st);
        else
            good += check_and_write(&in[i], &out[i], &rep[i]);
    }
    rc = good == n ? 0 : 1;
out:
    for (size_t i = 0; i < n && done; i++)
        clf_event_release(done[i]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    for (size_t i = 0; i < loaded; i++) {
        free(in[i].px);
        free(out[i].px);
    }
    free(in);
    free(out);
    free(rep);
    free(done);
    if (rc == 0)
        printf("every image equals the C loop's, written to the current directory\n");
    else if (rc == 1)
        fprintf(stderr, "blur FAILED\n");
    return rc;
}

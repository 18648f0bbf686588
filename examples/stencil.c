/*
 * Example: heat diffusion on a 2D plate that stays on the devices.
 *
 * The plate is a distributed array (clf_array) cut into bands of rows, one per device, each
 * holding one row of its neighbours' (its halo). The kernel is written for the whole plate
 * on one device (global indices, get_global_size()); clf_array_launch() runs each band on
 * its device with those same indices. Each step reads one array and writes the other; with
 * CLF_ARRAY_EXCHANGE_AFTER every device computes its boundary rows first, sends them to its
 * neighbours' halos (device to device), and computes its interior meanwhile. Nothing comes
 * back to the host until the end. The result is compared with a plain C loop, bit for bit;
 * a mismatch makes the exit status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { W = 256, H = 256, STEPS = 100 };

static const char *SRC =
    "#pragma OPENCL FP_CONTRACT OFF\n" /* no fused multiply-add: the C loop has none */
    "__kernel void heat(__global const float *t, __global float *out, float k)\n"
    "{\n"
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"
    "    size_t w = get_global_size(0), h = get_global_size(1), i = y * w + x;\n"
    "    if (x == 0 || y == 0 || x + 1 == w || y + 1 == h) { out[i] = t[i]; return; }\n"
    "    float lap = (t[i - 1] + t[i + 1]) + (t[i - w] + t[i + w]) - 4.0f * t[i];\n"
    "    out[i] = t[i] + k * lap;\n"
    "}\n";

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "stencil: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

/* The kernel's step in plain C (the same operations in the same order; the product and sum
 * are kept apart so that neither side fuses them). */
static void step_ref(const float *t, float *out, float k)
{
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++) {
            size_t i = y * W + x;
            if (x == 0 || y == 0 || x + 1 == W || y + 1 == H) {
                out[i] = t[i];
                continue;
            }
            volatile float four = 4.0f * t[i];
            volatile float lap = (t[i - 1] + t[i + 1]) + (t[i - W] + t[i + W]) - four;
            volatile float kl = k * lap;
            out[i] = t[i] + kl;
        }
}

int main(void)
{
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    clf_array *a[2] = {NULL, NULL};
    float *plate = malloc(W * H * sizeof *plate), *ref = malloc(W * H * sizeof *ref),
          *tmp = malloc(W * H * sizeof *tmp);
    int rc = 1;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS) {
        rc = fail("creating the fleet", st);
        goto done;
    }
    if (!plate || !ref || !tmp) {
        fprintf(stderr, "stencil: out of memory\n");
        goto done;
    }
    /* A cold plate with a hot square in the middle. */
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < W; x++)
            plate[y * W + x] = (x > W / 3 && x < 2 * W / 3 && y > H / 3 && y < 2 * H / 3)
                                   ? 100.0f
                                   : 0.0f;
    if ((st = clf_program_build_source(&p, f, SRC, NULL)) != CLF_SUCCESS) {
        rc = fail("building the kernel", st);
        goto done;
    }
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = sizeof(float);
    ad.dims = 2;
    ad.shape[0] = W; /* a row is a unit: the plate is cut into bands of rows */
    ad.shape[1] = H;
    ad.halo_before = ad.halo_after = 1;
    for (int i = 0; i < 2; i++)
        if ((st = clf_array_create(&a[i], f, &ad)) != CLF_SUCCESS) {
            rc = fail("creating the arrays", st);
            goto done;
        }
    for (size_t i = 0; i < clf_array_part_count(a[0]); i++) {
        clf_array_part part;
        if (clf_array_part_info(&part, a[0], i) == CLF_SUCCESS)
            printf("  device %zu: rows %zu to %zu (+%zu/%zu halo rows)\n", part.device,
                   part.first, part.first + part.count - 1, part.halo_before, part.halo_after);
    }
    if ((st = clf_array_write(a[0], NULL, NULL, plate)) != CLF_SUCCESS) {
        rc = fail("writing the plate", st);
        goto done;
    }
    float k = 0.2f;
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "heat";
    d.dims = 2;
    d.global[0] = W;
    d.global[1] = H;
    d.flags = CLF_ARRAY_EXCHANGE_AFTER;
    for (int s = 0; s < STEPS; s++) {
        clf_arg args[] = {CLF_ARRAY_IN(a[s % 2]), CLF_ARRAY_OUT(a[(s + 1) % 2]),
                          CLF_SCALAR(&k)};
        if ((st = clf_array_launch(f, p, &d, args, 3)) != CLF_SUCCESS) {
            rc = fail("a step", st);
            goto done;
        }
    }
    float *res = tmp;
    if ((st = clf_array_read(a[STEPS % 2], NULL, NULL, res)) != CLF_SUCCESS) {
        rc = fail("reading the plate", st);
        goto done;
    }
    /* The reference, on the host. */
    float *x = plate, *y = ref;
    for (int s = 0; s < STEPS; s++) {
        step_ref(x, y, k);
        float *t = x;
        x = y;
        y = t;
    }
    size_t bad = 0;
    for (size_t i = 0; i < W * H; i++)
        bad += memcmp(&res[i], &x[i], sizeof *x) != 0;
    if (bad) {
        fprintf(stderr, "stencil: %zu of %d temperatures differ from the C loop's\n", bad,
                W * H);
        goto done;
    }
    printf("%d steps of a %dx%d plate on %zu device(s): every temperature equals the C loop's "
           "(centre %.3f)\n",
           STEPS, W, H, clf_array_part_count(a[0]), (double)x[H / 2 * W + W / 2]);
    rc = 0;
done:
    clf_array_destroy(a[0]);
    clf_array_destroy(a[1]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(plate);
    free(ref);
    free(tmp);
    return rc;
}

/*
 * Example 6: a three-stage pipeline over the devices.
 *
 * A stream of 8-bit samples is processed in batches by three kernels, each on its
 * own device (stage s on device s mod the number of devices):
 *
 *   widen     uchar -> uint, times a gain         (the batch grows 4x in bytes)
 *   smooth    a 9-tap triangular filter within the batch, edges clamped
 *   decimate  the mean of each pair of samples   (the batch halves)
 *
 * While stage 2 filters batch b, stage 3 decimates batch b-1 and stage 1 widens batch
 * b+1; batches move between the devices with clf_copy_async(). The same pipeline is
 * run once more with `serial` set (one batch at a time through all the stages), and
 * both outputs are compared with the three steps done one after another in plain C.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { SAMPLES = 1 << 16, BATCHES = 48, GAIN = 3, TAPS = 4 /* each side */ };

static const char SOURCE[] =
    "__kernel void widen(__global const uchar *in, __global uint *out, uint gain)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (uint)in[i] * gain;\n"
    "}\n"
    "__kernel void smooth(__global const uint *in, __global uint *out, int n, int taps)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    uint acc = 0;\n"
    "    for (int k = -taps; k <= taps; k++)\n"
    "        acc += in[clamp(i + k, 0, n - 1)] * (uint)(taps + 1 - abs(k));\n"
    "    out[i] = acc;\n"
    "}\n"
    "__kernel void decimate(__global const uint *in, __global uint *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (in[2 * i] + in[2 * i + 1]) / 2;\n"
    "}\n";

/* The three steps on one batch, in plain C. */
static void reference(const uint8_t *in, uint32_t *out)
{
    static uint32_t wide[SAMPLES], smooth[SAMPLES];
    for (int i = 0; i < SAMPLES; i++)
        wide[i] = (uint32_t)in[i] * GAIN;
    for (int i = 0; i < SAMPLES; i++) {
        uint32_t acc = 0;
        for (int k = -TAPS; k <= TAPS; k++) {
            int j = i + k < 0 ? 0 : i + k > SAMPLES - 1 ? SAMPLES - 1 : i + k;
            acc += wide[j] * (uint32_t)(TAPS + 1 - (k < 0 ? -k : k));
        }
        smooth[i] = acc;
    }
    for (int i = 0; i < SAMPLES / 2; i++)
        out[i] = (smooth[2 * i] + smooth[2 * i + 1]) / 2;
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "pipeline: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

/* Run the pipeline (serial or overlapped), print its report, compare with want. */
static int run(clf_fleet *f, const clf_stage_desc *st, int serial, const uint8_t *in, uint32_t *out,
               const uint32_t *want, double *wall_s)
{
    clf_pipeline_options o = CLF_PIPELINE_OPTIONS_INIT;
    o.serial = serial;
    clf_pipeline *pl;
    clf_pipeline_report rep;
    const size_t out_bytes = (size_t)BATCHES * SAMPLES / 2 * sizeof(uint32_t);
    memset(out, 0, out_bytes);
    clf_status s = clf_pipeline_create(&pl, f, st, 3, &o);
    if (s == CLF_SUCCESS)
        s = clf_pipeline_run(pl, in, out, BATCHES, &rep);
    clf_pipeline_destroy(pl);
    if (s != CLF_SUCCESS)
        return fail(serial ? "serial run" : "pipelined run", s);
    int same = memcmp(out, want, out_bytes) == 0;
    *wall_s = rep.wall_s;
    printf("%s: %.1f ms, %.0f batches/s, bottleneck stage %zu, efficiency %.2f; output %s\n",
           serial ? "One batch at a time" : "Pipelined", rep.wall_s * 1e3, rep.batches_per_s,
           rep.bottleneck + 1, rep.efficiency, same ? "equals the C loop's" : "WRONG");
    for (size_t k = 0; k < rep.num_stages; k++)
        printf("    stage %zu (%-8s) on device %zu: busy %6.1f ms, alone %6.0f batches/s, "
               "utilization %3.0f%%\n",
               k + 1, st[k].kernel, rep.stage[k].device, rep.stage[k].busy_s * 1e3,
               rep.stage[k].batches_per_s, 100.0 * rep.stage[k].utilization);
    return !same;
}

int main(void)
{
    clf_fleet *f;
    clf_program *p = NULL;
    clf_status s = clf_fleet_create(&f, NULL);
    if (s != CLF_SUCCESS)
        return fail("creating the fleet", s);
    size_t ndev = clf_fleet_device_count(f);
    uint8_t *in = malloc((size_t)BATCHES * SAMPLES);
    uint32_t *out = malloc((size_t)BATCHES * SAMPLES / 2 * sizeof *out);
    uint32_t *want = malloc((size_t)BATCHES * SAMPLES / 2 * sizeof *want);
    int rc = 1;
    if (!in || !out || !want)
        goto done;
    uint32_t x = 1;
    for (size_t i = 0; i < (size_t)BATCHES * SAMPLES; i++) { /* a noisy saw-tooth */
        x = x * 1103515245u + 12345u;
        in[i] = (uint8_t)((i % 200) + (x >> 27));
    }
    for (size_t b = 0; b < BATCHES; b++)
        reference(in + b * SAMPLES, want + b * SAMPLES / 2);
    if ((s = clf_program_build_source(&p, f, SOURCE, NULL)) != CLF_SUCCESS) {
        fail("building the kernels", s);
        goto done;
    }
    unsigned gain = GAIN;
    int n = SAMPLES, taps = TAPS;
    clf_arg widen_args[] = {CLF_SCALAR(&gain)};
    clf_arg smooth_args[] = {CLF_SCALAR(&n), CLF_SCALAR(&taps)};
    clf_stage_desc st[3] = {CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT, CLF_STAGE_DESC_INIT};
    const char *kernel[3] = {"widen", "smooth", "decimate"};
    const size_t in_bytes[3] = {SAMPLES, SAMPLES * 4, SAMPLES * 4};
    const size_t items[3] = {SAMPLES, SAMPLES, SAMPLES / 2};
    for (size_t k = 0; k < 3; k++) {
        st[k].device = k % ndev;
        st[k].program = p;
        st[k].kernel = kernel[k];
        st[k].in_bytes = in_bytes[k];
        st[k].out_bytes = items[k] * sizeof(uint32_t);
        st[k].global[0] = items[k];
    }
    st[0].args = widen_args;
    st[0].nargs = 1;
    st[1].args = smooth_args;
    st[1].nargs = 2;
    printf("%d batches of %d samples through 3 stages on %zu device(s)\n\n", BATCHES, SAMPLES,
           ndev);
    double serial_s = 0, pipelined_s = 0;
    rc = run(f, st, 1, in, out, want, &serial_s) || run(f, st, 0, in, out, want, &pipelined_s);
    if (!rc)
        printf("\nThe pipeline took %.2fx less time than one batch at a time.\n",
               serial_s / pipelined_s);
done:
    free(in);
    free(out);
    free(want);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    if (rc)
        fprintf(stderr, "pipeline FAILED\n");
    return rc;
}

/*
 * Regular, compute-bound work: every work-item runs the same fixed loop of multiply-adds
 * (four independent chains, so the loop is limited by arithmetic, not latency). The values
 * converge towards fixed points in [0, 2]: no overflow, no denormals to slow a device down.
 * iters = 0 makes it a trivial kernel (one store per item), for measuring per-chunk costs.
 */

__kernel void busy(__global float *out, int iters)
{
    size_t i = get_global_id(0);
    float a = (float)(i & 1023) * 0.0009765625f;
    float b = 1.0f - a, c = 0.5f * a, d = 0.25f + a;
    for (int k = 0; k < iters; k++) {
        a = a * 0.999f + 0.001f;
        b = b * 0.998f + 0.002f;
        c = c * 0.997f + 0.003f;
        d = d * 0.996f + 0.004f;
    }
    out[i] = a + b + c + d;
}

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

/*
 * Per-group work (the balance bench's third kernel, issue 27): each work-group of 64 sums its
 * items' inputs in local memory and writes one partial per group, at its group id. The launch
 * is cut at group boundaries and its output is indexed by group, not by item.
 */
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void
group_sum(__global const float *in, __global float *out)
{
    __local float s[64];
    size_t l = get_local_id(0);
    s[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = 32; stride > 0; stride /= 2) {
        if (l < stride)
            s[l] += s[l + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(0)] = s[0];
}

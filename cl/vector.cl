/* Element-wise vector kernels; global-indexed, so a launch may be split by offset. */

__kernel void vadd(__global const float *a, __global const float *b, __global float *c)
{
    size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
}

__kernel void saxpy(float alpha, __global const float *x, __global float *y)
{
    size_t i = get_global_id(0);
    y[i] = alpha * x[i] + y[i];
}

/* A cheap integer hash (lowbias32): each output depends on its index only. */
__kernel void hash32(__global uint *out, uint seed)
{
    uint x = (uint)get_global_id(0) ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    out[get_global_id(0)] = x;
}

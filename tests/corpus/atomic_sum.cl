/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the float atomic add built from
 * atomic_cmpxchg that many OpenCL 1.x codes carry (not a copy), summing squares into one
 * global float. The order of the additions is unspecified, so the result may differ in the
 * last bits from run to run, even on one device.
 */

void float_atomic_add(volatile __global float *dst, float v)
{
    uint seen = as_uint(*dst);
    for (;;) {
        uint want = as_uint(as_float(seen) + v);
        uint was = atomic_cmpxchg((volatile __global uint *)dst, seen, want);
        if (was == seen)
            break;
        seen = was;
    }
}

__kernel void sum_squares(__global float *x, __global float *total)
{
    float v = x[get_global_id(0)];
    float_atomic_add(total, v * v);
}

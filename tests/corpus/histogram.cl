/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the 256-bin histogram pattern
 * of the OpenCL vendor samples and textbooks (not a copy): each work-group counts into
 * local memory with atomic_inc and adds its counts to the global bins with atomic_add; a
 * second kernel keeps the global extremes with atomic_min and atomic_max.
 */
#pragma OPENCL EXTENSION cl_khr_local_int32_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_global_int32_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_global_int32_extended_atomics : enable

#define NBINS 256

__kernel void hist256(__global const uchar *bytes, __local uint *counts, __global uint *bins)
{
    size_t me = get_local_id(0), step = get_local_size(0);
    for (size_t b = me; b < NBINS; b += step)
        counts[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    atomic_inc(counts + bytes[get_global_id(0)]);
    barrier(CLK_LOCAL_MEM_FENCE);

    for (size_t b = me; b < NBINS; b += step) {
        uint c = counts[b];
        if (c != 0)
            atomic_add(bins + b, c);
    }
}

__kernel void extremes(__global int *v, __global int *lowest, __global int *highest)
{
    int x = v[get_global_id(0)];
    atomic_min(lowest, x);
    atomic_max(highest, x);
}

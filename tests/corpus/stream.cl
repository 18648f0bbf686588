// SPDX-License-Identifier: MIT
// clfleet corpus (see SOURCES.md): written for clfleet after the pattern of the BabelStream
// OpenCL kernels (not a copy): a multi-kernel program of element-wise kernels on restrict
// pointers, and a dot product whose work-items stride through the whole arrays by
// get_global_size(0), combine in local memory and leave one partial sum per work-group.

#ifndef REAL
#define REAL float
#endif

#define STREAM_Q 0.4f

kernel void vcopy(global const REAL * restrict src, global REAL * restrict dst)
{
    size_t k = get_global_id(0);
    dst[k] = src[k];
}

kernel void vscale(global REAL * restrict dst, global const REAL * restrict src)
{
    size_t k = get_global_id(0);
    dst[k] = STREAM_Q * src[k];
}

kernel void vsum(global const REAL * restrict x, global const REAL * restrict y,
                 global REAL * restrict z)
{
    size_t k = get_global_id(0);
    z[k] = x[k] + y[k];
}

kernel void vtriad(global REAL * restrict z, global const REAL * restrict x,
                   global const REAL * restrict y)
{
    size_t k = get_global_id(0);
    z[k] = x[k] + STREAM_Q * y[k];
}

kernel void vdot(global const REAL * restrict x, global const REAL * restrict y,
                 global REAL * restrict group_sums, local REAL * restrict part, int n)
{
    size_t me = get_local_id(0);
    REAL acc = 0;
    for (size_t k = get_global_id(0); k < (size_t)n; k += get_global_size(0))
        acc += x[k] * y[k];
    part[me] = acc;
    for (size_t span = get_local_size(0) >> 1; span > 0; span >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (me < span)
            part[me] += part[me + span];
    }
    if (me == 0)
        group_sums[get_group_id(0)] = part[0];
}

/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the "add two elements while
 * loading" parallel reduction found in GPU tutorials and vendor samples (not a copy). Each
 * work-group sums the 2 * get_local_size(0) elements that start at an offset built from its
 * group id, in local memory, and writes one partial sum per group.
 */

__kernel void sum_pairs(__global uint *in, __global uint *partial, __local uint *scratch,
                        uint count)
{
    uint lid = get_local_id(0);
    uint lsz = get_local_size(0);
    uint base = get_group_id(0) * lsz * 2;
    uint first = base + lid, second = base + lid + lsz;

    uint v = 0;
    if (first < count)
        v = in[first];
    if (second < count)
        v += in[second];
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);

    for (uint stride = lsz / 2; stride != 0; stride /= 2) {
        if (lid < stride)
            scratch[lid] = scratch[lid] + scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}

/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the tiled matrix transpose of the
 * OpenCL tutorials and vendor samples (not a copy): a tile of the input is staged in local
 * memory (one padding column against bank conflicts) and written out transposed, at a
 * position built from the group ids.
 */

#define TILE 8

__kernel void transpose_tiled(__global float *out, __global float *in, int width, int height,
                              __local float *tile)
{
    int lx = get_local_id(0), ly = get_local_id(1);
    int gx = get_group_id(0) * TILE, gy = get_group_id(1) * TILE;

    if (gx + lx < width && gy + ly < height)
        tile[ly * (TILE + 1) + lx] = in[(gy + ly) * width + gx + lx];
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Output row gx + ly holds input column gx + ly. */
    if (gy + lx < height && gx + ly < width)
        out[(gx + ly) * height + gy + lx] = tile[lx * (TILE + 1) + ly];
}

/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the pattern of the PolyBench-ACC
 * OpenCL 2-D convolution (not a copy): a 3x3 weighted stencil over the interior of a
 * rows x cols row-major image, its weights in constant memory; the border of the output is
 * not written.
 */

__constant float weights[9] = {0.0625f, 0.125f, 0.0625f, 0.125f, -0.75f, 0.125f,
                               0.0625f, 0.125f, 0.0625f};

__kernel void conv3x3(__global float *in, __global float *out, int rows, int cols)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x < 1 || y < 1 || x > cols - 2 || y > rows - 2)
        return;

    float s = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
            s += weights[(dy + 1) * 3 + dx + 1] * in[(y + dy) * cols + x + dx];
    out[y * cols + x] = s;
}

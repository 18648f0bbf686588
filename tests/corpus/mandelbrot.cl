/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): a Mandelbrot image in the style of the OpenCL tutorials
 * and PyOpenCL's examples, written here: one work-item per pixel of a 2-D range, the row
 * pitch taken from get_global_size(0), the escape count as an integer.
 */

__kernel void mandelbrot(__global uint *output, const float x0, const float y0,
                         const float dx, const float dy, const uint maxiter)
{
    int px = get_global_id(0);
    int py = get_global_id(1);
    int width = get_global_size(0);

    float cr = x0 + px * dx;
    float ci = y0 + py * dy;
    float zr = 0.0f, zi = 0.0f;
    uint n = 0;
    while (n < maxiter && zr * zr + zi * zi <= 4.0f) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        n++;
    }
    output[py * width + px] = n;
}

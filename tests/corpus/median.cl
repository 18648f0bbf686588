/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the PyOpenCL median-filter
 * example (not a copy): a 3x3 median over a row-major float image whose width and
 * height come in as one-element __global int buffers (not const), with the rows on
 * dimension 0 and the columns on dimension 1; edge pixels are copied.
 */

#define SWAP(a, b) { float t_ = min(a, b); b = max(a, b); a = t_; }

__kernel void medianFilter(__global float *img, __global float *result, __global int *width, __global int *height)
{
    const int cols = width[0], rows = height[0];
    int r = get_global_id(0), c = get_global_id(1);
    int at = r * cols + c;

    if (r == 0 || c == 0 || r == rows - 1 || c == cols - 1) {
        result[at] = img[at]; /* the frame is copied */
    } else {
        int i = at, w = cols;
        float p0 = img[i - 1 - w], p1 = img[i - w], p2 = img[i + 1 - w];
        float p3 = img[i - 1],     p4 = img[i],     p5 = img[i + 1];
        float p6 = img[i - 1 + w], p7 = img[i + w], p8 = img[i + 1 + w];

        // A sorting network that leaves the median of the nine in p4.
        SWAP(p1, p2); SWAP(p4, p5); SWAP(p7, p8);
        SWAP(p0, p1); SWAP(p3, p4); SWAP(p6, p7);
        SWAP(p1, p2); SWAP(p4, p5); SWAP(p7, p8);
        SWAP(p0, p3); SWAP(p5, p8); SWAP(p4, p7);
        SWAP(p3, p6); SWAP(p1, p4); SWAP(p2, p5);
        SWAP(p4, p7); SWAP(p4, p2); SWAP(p6, p4);
        SWAP(p4, p2);

        result[i] = p4;
    }
}

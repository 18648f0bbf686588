/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the pattern of the PolyBench-ACC
 * OpenCL jacobi-2d kernels (not a copy): one time step is two kernels, a 5-point average of
 * a into the interior of b, then b copied back into the interior of a.
 */

__kernel void jacobi_avg(__global float *a, __global float *b, int n)
{
    int x = get_global_id(0), y = get_global_id(1);
    if (x == 0 || y == 0 || x >= n - 1 || y >= n - 1)
        return;
    int k = y * n + x;
    float centre = a[k], west = a[k - 1], east = a[k + 1], north = a[k - n], south = a[k + n];
    b[k] = 0.2f * (centre + west + east + south + north);
}

__kernel void jacobi_copy(__global float *a, __global float *b, int n)
{
    int x = get_global_id(0), y = get_global_id(1);
    if (x == 0 || y == 0 || x >= n - 1 || y >= n - 1)
        return;
    a[y * n + x] = b[y * n + x];
}

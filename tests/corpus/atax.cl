/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the pattern of the PolyBench-ACC
 * OpenCL atax kernels (not a copy): y = A^T (A x) as two kernels of one program, the first
 * walking the rows of A, the second its columns. No input is declared const.
 */

typedef float real_t;

__kernel void atax_rows(__global real_t *A, __global real_t *x, __global real_t *t, int nx,
                        int ny)
{
    int r = get_global_id(0);
    if (r < nx) {
        real_t s = t[r];
        for (int c = 0; c < ny; ++c)
            s += A[r * ny + c] * x[c];
        t[r] = s;
    }
}

__kernel void atax_cols(__global real_t *A, __global real_t *y, __global real_t *t, int nx,
                        int ny)
{
    int c = get_global_id(0);
    if (c < ny) {
        real_t s = y[c];
        for (int r = 0; r < nx; ++r)
            s += A[r * ny + c] * t[r];
        y[c] = s;
    }
}

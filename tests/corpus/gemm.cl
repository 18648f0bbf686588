/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the pattern of the PolyBench-ACC
 * OpenCL gemm kernel (not a copy): C = alpha * A * B + beta * C, one work-item per element
 * of C, its column from get_global_id(0) and its row from get_global_id(1). Like much
 * published code it declares none of its read-only inputs const.
 */

typedef float real_t;

__kernel void gemm(__global real_t *a, __global real_t *b, __global real_t *c, real_t alpha,
                   real_t beta, int ni, int nj, int nk)
{
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= ni || col >= nj)
        return;

    real_t acc = beta * c[row * nj + col];
    for (int k = 0; k < nk; ++k)
        acc += alpha * a[row * nk + k] * b[k * nj + col];
    c[row * nj + col] = acc;
}

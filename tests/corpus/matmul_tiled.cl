/*
 * SPDX-License-Identifier: MIT
 * clfleet corpus (see SOURCES.md): written for clfleet after the tiled matrix product of the
 * OpenCL tutorials and vendor samples (not a copy): C = A * B, each work-group computes a
 * TILE x TILE block of C located from its group ids, staging blocks of A and B in local
 * memory. A and B are not declared const.
 */

#define TILE 8

__kernel void matmul_tiled(int k_dim, int n_cols, __global float *A, __global float *B,
                           __global float *C)
{
    __local float ta[TILE][TILE];
    __local float tb[TILE][TILE];
    int lx = get_local_id(0), ly = get_local_id(1);
    int row = get_group_id(1) * TILE + ly;
    int col = get_group_id(0) * TILE + lx;

    float acc = 0.0f;
    for (int t = 0; t < k_dim / TILE; t++) {
        ta[ly][lx] = A[row * k_dim + t * TILE + lx];
        tb[ly][lx] = B[(t * TILE + ly) * n_cols + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++)
            acc += ta[ly][k] * tb[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * n_cols + col] = acc;
}

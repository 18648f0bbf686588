/* lib/blas: multi-device GEMM through clBLAST. State shared by the multi-device GEMM's
 * planner (gemm.c) and its data plane on the chunk executor (gemmdev.c). */
#ifndef CLFLEET_LIB_BLAS_H
#define CLFLEET_LIB_BLAS_H

#include "exec/exec.h"

#include <clfleet/blas.h>

/* One GEMM, either precision: alpha and beta are exact copies of the caller's values. */
typedef struct clf__gemm_args {
    const char *fn; /* "clf_sgemm" or "clf_dgemm" */
    int dbl;
    size_t es; /* bytes per element */
    clf_layout layout;
    int ta, tb; /* op(A), op(B) transposed */
    size_t m, n, k;
    double alpha, beta;
    const void *a, *b;
    void *c;
    size_t lda, ldb, ldc;
} clf__gemm_args;

/*
 * A block of a stored matrix as the host holds it: `lines` rows (row-major)
 * or columns (column-major) of `len` elements, `pitch` elements apart,
 * starting at element `origin`. On the device the same block is packed: its
 * leading dimension is `len`.
 */
typedef struct clf__gemm_block {
    size_t origin, lines, len, pitch;
} clf__gemm_block;

/* Rows [r0, r0 + nr) and columns [c0, c0 + nc) of a stored matrix. */
static inline clf__gemm_block clf__gemm_block_of(clf_layout layout, size_t ld, size_t r0, size_t nr,
                                                 size_t c0, size_t nc)
{
    clf__gemm_block b;
    if (layout == CLF_ROW_MAJOR)
        b = (clf__gemm_block){r0 * ld + c0, nr, nc, ld};
    else
        b = (clf__gemm_block){c0 * ld + r0, nc, nr, ld};
    return b;
}

/*
 * One GEMM as the chunk executor runs it (clf__gemm_plane): its range is C's rows (or
 * columns), a chunk a block of them. gemm.c plans it, gemmdev.c moves the blocks.
 */
typedef struct clf__gemm_run {
    clf__gemm_args g;
    int split_n;           /* cut C's columns (else its rows) */
    uint64_t total;        /* C's rows (columns): the partitioned range */
    uint64_t other;        /* C's columns (rows) */
    clf__gemm_block whole; /* the operand every device gets whole (B, or A for SPLIT_N) */
    const void *whole_host;
    uint64_t whole_bytes;
    char need[256]; /* what a device must hold, for the executor's no-device-fits error */
} clf__gemm_run;

/* The GEMM's data plane of the chunk executor (gemmdev.c; lib/exec/exec.h). */
extern const clf__plane clf__gemm_plane;
/* Load clBLAST (once per process); CLF_ERROR_UNSUPPORTED naming fn and why when it cannot
 * be loaded. */
clf_status clf__gemm_blast_load(const char *fn);
/* The fleet is about to run clBLAST (from call, in double precision when dbl): its caches
 * stay until the fleet is destroyed; the first call of each precision is logged (info). */
clf_status clf__gemm_blast_register(clf_fleet *fl, const char *call, int dbl);

#endif

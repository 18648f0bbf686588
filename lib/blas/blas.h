/* lib/blas: multi-device GEMM through clBLAST. State shared by the multi-device GEMM's planner (gemm.c) and its device workers (gemmdev.c). */
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

struct clf__gemm_run;

typedef struct clf__gemm_worker {
    struct clf__gemm_run *G;
    size_t pos; /* among the run's devices */
    struct clf__device *d;
    pthread_t thread;
    int started;
    cl_mem whole; /* the operand every block needs */
    cl_event whole_ev;
    int whole_counted;
    cl_mem sl[2], cb[2]; /* per slot: the sliced operand's block, C's block */
    size_t sl_cap[2], cb_cap[2];
    uint64_t budget, max_units, mem_now, mem_peak;
    double t_start; /* host time of its first upload, from the run's start */
    clf_device_report rep;
    clf_status st;
    char err[2048];
} clf__gemm_worker;

typedef struct clf__gemm_run {
    clf_fleet *fl;
    clf__gemm_args g;
    clf_gemm_options o;
    int split_n;           /* cut C's columns (else its rows) */
    uint64_t total;        /* C's rows (columns): the partitioned range */
    uint64_t other;        /* C's columns (rows) */
    clf__gemm_block whole; /* the operand every device gets whole (B, or A for SPLIT_N) */
    const void *whole_host;
    uint64_t whole_bytes;
    uint64_t gran;
    size_t dev[CLF_MAX_LAUNCH_DEVICES]; /* fleet indices */
    size_t ndev;
    double weights[CLF_MAX_LAUNCH_DEVICES];
    clf__part_strategy part_strategy;
    clf__part *part;
    double t0;
    pthread_mutex_t lock; /* guards abort */
    int abort;            /* a device failed: the others take no more blocks */
    clf__gemm_worker w[CLF_MAX_LAUNCH_DEVICES];
} clf__gemm_run;

/* Thread body of a device's worker: its blocks until none is left for it (or one failed). */
void *clf__gemm_worker_main(void *arg);
/* Release the worker's buffers and events. */
void clf__gemm_worker_fini(clf__gemm_worker *w);
/* Load clBLAST (once per process); CLF_ERROR_UNSUPPORTED naming fn and why when it cannot
 * be loaded. */
clf_status clf__gemm_blast_load(const char *fn);
/* The fleet is about to run clBLAST: its caches stay until the fleet is destroyed. */
clf_status clf__gemm_blast_register(clf_fleet *fl);

#endif

/**
 * \file clfleet/blas.h
 * \brief clfleet — multi-device BLAS through clBLAST.
 *
 * One GEMM on host arrays, spread over the devices of a fleet: the output C
 * is cut into blocks of rows (or columns) with the launch strategies of
 * <clfleet.h>, and each device runs clBLAST on its blocks on its own queue.
 * The calls follow CBLAS: the same argument order, the same layouts and
 * transposes (with the same values, so CBLAS enumerators convert), and the
 * same rules for the leading dimensions.
 *
 * The header is always installed. clBLAST (a C++ library) is not linked: the
 * first GEMM loads it (`libclblast.so.1`, or the file `CLFLEET_CLBLAST_LIBRARY`
 * names), so programs that do no GEMM never load the C++ runtime. When clfleet
 * was built without clBLAST's header (configure found none, or
 * --without-clblast), or the library cannot be loaded, clf_blas_available()
 * returns 0 and every GEMM returns CLF_ERROR_UNSUPPORTED saying why.
 */
#ifndef CLFLEET_BLAS_H
#define CLFLEET_BLAS_H

#include <clfleet.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Storage order of a matrix (CBLAS_LAYOUT's values). */
typedef enum clf_layout {
    CLF_ROW_MAJOR = 101, /**< element (i, j) at i * ld + j */
    CLF_COL_MAJOR = 102  /**< element (i, j) at j * ld + i */
} clf_layout;

/** \brief Whether an operand is used as stored or transposed (CBLAS_TRANSPOSE's values). */
typedef enum clf_transpose {
    CLF_NO_TRANS = 111,
    CLF_TRANS = 112,
    CLF_CONJ_TRANS = 113 /**< for real matrices the same as CLF_TRANS */
} clf_transpose;

/** \brief Which dimension of C is cut over the devices. */
typedef enum clf_gemm_split {
    /**
     * The one that copies less: cutting rows sends every device all of op(B)
     * (k x n elements), cutting columns all of op(A) (m x k); the smaller is
     * chosen, and on a tie the blocks that are contiguous in C's layout.
     */
    CLF_GEMM_SPLIT_AUTO = 0,
    CLF_GEMM_SPLIT_M = 1, /**< blocks of rows of C; op(A)'s rows follow, op(B) goes whole */
    CLF_GEMM_SPLIT_N = 2  /**< blocks of columns of C; op(B)'s columns follow, op(A) goes whole */
} clf_gemm_split;

/** \brief How a GEMM uses the fleet; fill with CLF_GEMM_OPTIONS_INIT. */
typedef struct clf_gemm_options {
    unsigned version;      /**< CLF_GEMM_OPTIONS_VERSION */
    clf_strategy strategy; /**< CLF_STRATEGY_DEFAULT: $CLFLEET_STRATEGY, else CLF_STRATEGY_AUTO */
    /**
     * Fleet indices to use, or NULL: every device (for clf_dgemm(), every
     * device with double precision; a listed device without it is an error).
     */
    const size_t *devices;
    size_t num_devices;   /**< entries of devices */
    clf_gemm_split split; /**< which dimension is split over the devices */
    /** Blocks are multiples of this many rows (columns); 0: 16 when there are at least
     *  64 per device, else 1. */
    size_t granularity;
    /** Device weights of CLF_STRATEGY_STATIC, CLF_STRATEGY_GUIDED and CLF_STRATEGY_MEMORY_AWARE.
     * Learned: the GEMM throughput measured on each device in earlier calls (per precision,
     * persisted with the launches' in the cache directory); compute units x clock until known. */
    clf_weights weights_mode;
    const double *weights; /**< CLF_WEIGHTS_USER: one per used device */
    /** Per used device, a memory limit in bytes (0: none), or NULL. */
    const uint64_t *mem_limits;
    double mem_safety;          /**< usable fraction of reported memory; 0: 0.8 */
    unsigned chunks_per_device; /**< CLF_STRATEGY_DYNAMIC: about this many blocks each; 0: 4 */
    size_t min_chunk;           /**< CLF_STRATEGY_GUIDED: smallest block; 0: the granularity */
} clf_gemm_options;

/** \brief The version of clf_gemm_options this header describes. */
#define CLF_GEMM_OPTIONS_VERSION 1
/** \brief Fills a clf_gemm_options with the defaults. */
#define CLF_GEMM_OPTIONS_INIT                                                                      \
    {                                                                                              \
        CLF_GEMM_OPTIONS_VERSION, CLF_STRATEGY_DEFAULT, NULL, 0, CLF_GEMM_SPLIT_AUTO, 0,           \
            CLF_WEIGHTS_LEARNED, NULL, NULL, 0.0, 0, 0                                             \
    }

/**
 * \brief Nonzero when the GEMMs work: clfleet was built with clBLAST's header
 * and the library loads (the first call tries, once per process).
 * \return nonzero with clBLAST, 0 without (clf_last_error() then says why, when
 *         the library could not be loaded)
 */
CLF_API int clf_blas_available(void);

/**
 * \brief C = alpha * op(A) * op(B) + beta * C in single precision, on many devices.
 *
 * op(X) is X or its transpose; op(A) is m x k, op(B) k x n, C m x n, all host
 * arrays in \p layout with leading dimensions as in CBLAS: for CLF_ROW_MAJOR,
 * lda >= max(1, k) without and max(1, m) with transposition, ldb >= max(1, n)
 * or max(1, k), ldc >= max(1, n); for CLF_COL_MAJOR, lda >= max(1, m) or
 * max(1, k), ldb >= max(1, k) or max(1, n), ldc >= max(1, m). Elements between
 * a row's (column's) end and the leading dimension are neither read nor written.
 *
 * C is cut into blocks of rows or columns (\p opts split) by the strategy:
 * every device receives the whole other operand once, then for each of its
 * blocks the matching part of the sliced operand and of C (C only when
 * beta != 0), runs clBLAST on its compute queue, and reads its block of C
 * back; the next block's upload overlaps the current block's GEMM. One host
 * thread drives each device. When beta == 0, C is not read (it may hold
 * NaN); when m or n is 0 nothing happens; when k == 0 or alpha == 0, C =
 * beta * C on the host and no device is used. C must not overlap A or B.
 *
 * clBLAST compiles its kernels for each device, context and precision on
 * first use (seconds on CPU devices; PoCL keeps the binaries in its
 * POCL_CACHE_DIR), and keeps them until the last fleet that ran a GEMM is
 * destroyed, which clears clBLAST's caches (CLBlastClearCache()).
 *
 * \param opts options, or NULL for the defaults
 * \param report receives what each device did (units: rows or columns of C,
 *        items: elements of C, busy_s: the device time of its clBLAST calls), or NULL
 * \return CLF_SUCCESS; CLF_ERROR_NULL_POINTER (fleet, or an array that the
 *         sizes need); CLF_ERROR_INVALID_ARGUMENT (layout, transpose, a leading
 *         dimension, options); CLF_ERROR_SIZE_OVERFLOW (an array's extent);
 *         CLF_ERROR_OUT_OF_RANGE (a device index, or the whole operand fits no
 *         device's memory budget); CLF_ERROR_UNSUPPORTED (built without clBLAST);
 *         CLF_ERROR_BUILD, CLF_ERROR_OPENCL (clBLAST or OpenCL failed on a device,
 *         named in clf_last_error(); C is then partly updated)
 * \param fleet the fleet
 * \param layout CLF_ROW_MAJOR or CLF_COL_MAJOR: the layout of A, B and C
 * \param trans_a CLF_NO_TRANS or CLF_TRANS: op(A)
 * \param trans_b CLF_NO_TRANS or CLF_TRANS: op(B)
 * \param m rows of op(A) and C
 * \param n columns of op(B) and C
 * \param k columns of op(A), rows of op(B)
 * \param alpha the factor of op(A) op(B)
 * \param a the host array A
 * \param lda A's leading dimension
 * \param b the host array B
 * \param ldb B's leading dimension
 * \param beta the factor of C
 * \param c the host array C, updated in place
 * \param ldc C's leading dimension
 */
CLF_API clf_status clf_sgemm(clf_fleet *fleet, clf_layout layout, clf_transpose trans_a,
                             clf_transpose trans_b, size_t m, size_t n, size_t k, float alpha,
                             const float *a, size_t lda, const float *b, size_t ldb, float beta,
                             float *c, size_t ldc, const clf_gemm_options *opts,
                             clf_launch_report *report);

/**
 * \brief As clf_sgemm() in double precision. Uses only devices with double
 * precision (cl_khr_fp64); CLF_ERROR_UNSUPPORTED when a listed device, or
 * every device of the fleet, has none.
 * \param fleet the fleet
 * \param layout CLF_ROW_MAJOR or CLF_COL_MAJOR: the layout of A, B and C
 * \param trans_a CLF_NO_TRANS or CLF_TRANS: op(A)
 * \param trans_b CLF_NO_TRANS or CLF_TRANS: op(B)
 * \param m rows of op(A) and C
 * \param n columns of op(B) and C
 * \param k columns of op(A), rows of op(B)
 * \param alpha the factor of op(A) op(B)
 * \param a the host array A
 * \param lda A's leading dimension
 * \param b the host array B
 * \param ldb B's leading dimension
 * \param beta the factor of C
 * \param c the host array C, updated in place
 * \param ldc C's leading dimension
 * \param opts options, or NULL for the defaults
 * \param report as clf_sgemm()
 * \return as clf_sgemm(); CLF_ERROR_UNSUPPORTED also when a device without double precision is
 *        listed or none has it
 */
CLF_API clf_status clf_dgemm(clf_fleet *fleet, clf_layout layout, clf_transpose trans_a,
                             clf_transpose trans_b, size_t m, size_t n, size_t k, double alpha,
                             const double *a, size_t lda, const double *b, size_t ldb, double beta,
                             double *c, size_t ldc, const clf_gemm_options *opts,
                             clf_launch_report *report);

#ifdef __cplusplus
}
#endif

#endif /* CLFLEET_BLAS_H */

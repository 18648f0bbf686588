/* The benchmarks of clfleet-bench that live in their own files. */
#ifndef CLFLEET_TOOLS_BENCH_H
#define CLFLEET_TOOLS_BENCH_H

#include <stddef.h>

/*
 * `clfleet-bench p2p`: device-to-device copies of every ordered device pair at sizes from
 * 4 KiB to 256 MiB, by the chosen path, by forced staging, by the pinned-slot pipeline and
 * by the naive baseline (blocking read, then blocking write), against plain memcpy()
 * measured in the same run. argv[0] is the command's name; options follow (--help lists
 * them). Returns the process exit status (77: no devices).
 */
int clf_bench_p2p(int argc, char **argv);

/*
 * `clfleet-bench allreduce`: clf_allreduce() (ring, float sum) against the naive way
 * (gather to the host, add, write back) on 2 and 3 devices, 4 KiB to 256 MiB: time,
 * algorithm bandwidth and bus bandwidth (NCCL's busbw = size / time x 2(n-1)/n). Same
 * conventions as clf_bench_p2p().
 */
int clf_bench_allreduce(int argc, char **argv);

/*
 * `clfleet-bench pipeline`: a 3-stage clf_pipeline on 3 devices against the stages run one
 * after another and against the slowest stage alone (the ideal): throughputs, speedup and
 * the ratio to the ideal, with the pipeline's per-stage report. Same conventions.
 */
int clf_bench_pipeline(int argc, char **argv);

/*
 * `clfleet-bench gemm`: clf_sgemm() (--double: clf_dgemm()) on one device against the fleet
 * with each strategy, in interleaved rounds: median and best times, GFLOP/s, and the median
 * of per-round speedups. Same conventions (77 also when built without clBLAST).
 */
int clf_bench_gemm(int argc, char **argv);

/* Helpers shared by the benchmarks (bench.c). */
double clf_bench_now(void);                             /* monotonic seconds */
int clf_bench_cmp_double(const void *a, const void *b); /* for qsort */
double clf_bench_median(double *v, size_t n);           /* sorts v */

#endif

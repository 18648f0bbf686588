/* The benchmarks of clfleet-bench that live in their own files. */
#ifndef CLFLEET_TOOLS_BENCH_H
#define CLFLEET_TOOLS_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "clfleet.h"

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

#define CLF_BENCH_SKIP 77     /* exit status: no suitable device (automake's "skipped") */
#define CLF_BENCH_USAGE 2     /* exit status: bad command line */
#define CLF_BENCH_MAX_REPS 64 /* the most timed repetitions a benchmark takes */

/*
 * The options every benchmark in a file of its own takes: --json, --quick, --reps N
 * (1 to CLF_BENCH_MAX_REPS), --devices SELECTION and --help (-h). The benchmark sets
 * name, usage and the defaults before clf_bench_parse().
 */
typedef struct clf_bench_common {
    const char *name;         /* the command, for messages: "p2p" */
    void (*usage)(FILE *to);  /* the command's usage text */
    int json, quick;          /* --json, --quick */
    unsigned reps;            /* --reps N */
    unsigned quick_reps;      /* --quick: at most this many repetitions */
    const char *devices;      /* --devices SELECTION */
    int devices_given;        /* --devices was on the command line */
} clf_bench_common;

/* What clf_bench_common_option() made of an argument. */
enum {
    CLF_BENCH_OPTION_OTHER, /* not a common option: the benchmark's own, or bad */
    CLF_BENCH_OPTION_TAKEN, /* taken, with its value if it has one (*i moved on to it) */
    CLF_BENCH_OPTION_BAD,   /* a common option without a valid value */
    CLF_BENCH_OPTION_HELP   /* --help or -h */
};

/* argv[*i] (of argc), if it is a common option, into c. Returns a CLF_BENCH_OPTION_*. */
int clf_bench_common_option(clf_bench_common *c, int argc, char **argv, int *i);

/*
 * One option of the benchmark's own, argv[*i]: returns 1 if it took it (with its value,
 * moving *i on to that), 0 if the option is unknown or its value bad.
 */
typedef int (*clf_bench_own_option)(void *bench, int argc, char **argv, int *i);

/*
 * The command line argv[1..argc): the common options into c, every other one through
 * own(bench, ...) (own may be NULL). Then --quick caps c->reps at c->quick_reps. Returns -1
 * to go on, or the exit status to return at once: 0 after --help (usage on stdout),
 * CLF_BENCH_USAGE after a bad argument (it and the usage on stderr).
 */
int clf_bench_parse(clf_bench_common *c, int argc, char **argv, clf_bench_own_option own,
                    void *bench);

/* arg is the flag `name`: sets *flag to 1 and returns 1; otherwise 0. */
int clf_bench_flag_option(const char *arg, const char *name, int *flag);

/*
 * argv[*i] is `name` and argv[*i + 1] a whole number in [min, max] (strtoull() in base
 * `base`, nothing after it): stores it in *out, moves *i on to it and returns 1; otherwise 0.
 */
int clf_bench_size_option(int argc, char **argv, int *i, const char *name, int base, size_t min,
                          size_t max, size_t *out);

/* "clfleet-bench CMD: WHAT: STATUS: detail" on stderr (no CMD: "clfleet-bench: ..."); 1. */
int clf_bench_fail(const char *cmd, const char *what, clf_status st);

/* clf_bench_fail(), then the exit status: CLF_BENCH_SKIP when st says there is no device or
 * platform, else 1. */
int clf_bench_setup_failed(const char *cmd, const char *what, clf_status st);

/* GB/s (1e9 bytes/s) of bytes in s seconds; NAN unless s > 0. */
double clf_bench_gbps(size_t bytes, double s);

/* "N MiB" from 1 MiB on, else "N KiB". */
void clf_bench_size_label(char *buf, size_t len, size_t bytes);

#endif

/* The benchmarks of clfleet-bench that live in their own files. */
#ifndef CLFLEET_TOOLS_BENCH_H
#define CLFLEET_TOOLS_BENCH_H

#include <getopt.h>
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
 * `clfleet-bench allreduce`: clf_allreduce() (a ring; float sum unless -d/-o say otherwise)
 * against the naive way (gather to the host, combine, write back) on 2 and 3 devices, 4 KiB
 * to 256 MiB, in nccl-tests' conventions (all_reduce_perf's options and columns: time,
 * algbw, busbw = algbw x 2(n-1)/n, #wrong, out-of-place and in-place, the footer). Same
 * conventions as clf_bench_p2p() otherwise.
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

/*
 * `clfleet-bench overhead`: the cost of launches too small to split (4,096 floats in-out, and
 * a kernel with no arrays): raw OpenCL on one device, clf_launch() there alone, and on two
 * devices with static, dynamic and auto, in interleaved rounds: microseconds per launch and
 * per chunk, and ratios to raw. Same conventions as clf_bench_p2p().
 */
int clf_bench_overhead(int argc, char **argv);

#ifdef CLF_BENCH_MPI
/*
 * `clfleet-bench mpi-allreduce` (configure found MPI; run under mpirun): clf_comm_allreduce()
 * against device -> host, MPI_Allreduce, host -> device, 4 KiB to 256 MiB, in the columns and
 * with the -b/-e/-f/-w/-n/-d/-o options of `clfleet-bench allreduce`, bus bandwidth across
 * ranks (tools/bench-mpi.c). Same conventions as clf_bench_p2p().
 */
int clf_bench_mpi_allreduce(int argc, char **argv);

/*
 * `clfleet-bench mpi-stencil` (configure found MPI; run under mpirun): Jacobi steps with the
 * grid on rank 0's devices alone, then over every rank's (clf_comm_array_*, halos by MPI
 * overlapped, or exchanged before each step): the slowest rank's time per step, speedup,
 * and per rank its rows, MPI and host<->device bytes per step (tools/bench-mpi-stencil.c).
 * Same conventions as clf_bench_p2p().
 */
int clf_bench_mpi_stencil(int argc, char **argv);
/* MPI initialised (MPI_THREAD_MULTIPLE asked, unless the caller did it), and this process's
 * rank and the size of MPI_COMM_WORLD (tools/bench-mpi.c). */
void clf_bench_mpi_start(int *argc, char ***argv, int *rank, int *size);
#endif

/*
 * `clfleet-bench stencil`: Jacobi steps on a 2D grid on one device (clf_kernel_enqueue()),
 * through host arrays (clf_launch() per step) and on arrays resident on the devices
 * (clf_array_launch() with overlapped halo exchange), and the resident interior alone: time
 * per step, speedup, host and device-to-device bytes. Same conventions as clf_bench_p2p().
 */
int clf_bench_stencil(int argc, char **argv);

/*
 * `clfleet-bench graph`: a DAG of tile kernels (two layers of a tiled matrix product, a
 * ReLU between them) by clfleet's graph, by hand-placed clf_kernel_enqueue() calls and by
 * StarPU 1.3's dmda (when built with it), against each device alone and the ideal: median
 * makespans side by side (tools/bench-graph.c). Same conventions as clf_bench_p2p().
 */
int clf_bench_graph(int argc, char **argv);

/* The element types and operations of the all-reduce benchmarks (bench-reduce.c), by
 * nccl-tests' names: int32, uint32, int64, float, double; sum, prod, min, max. A parse
 * returns 1 and stores the value, or 0; a name of an unknown value is "?". */
int clf_bench_type_parse(const char *s, clf_type *out);
const char *clf_bench_type_name(clf_type t);
int clf_bench_op_parse(const char *s, clf_reduce_op *out);
const char *clf_bench_op_name(clf_reduce_op op);
/* Element i of position pos (a device, or a device of a rank) before a reduction by op:
 * small integers, different per position, whose reduction over any number of positions up
 * to a thousand is exact in every type. */
double clf_bench_reduce_value(clf_type t, clf_reduce_op op, size_t pos, size_t i);
/* Element i of the array p of type t, as a double (exact for the values above), and back. */
void clf_bench_store(clf_type t, void *p, size_t i, double v);
double clf_bench_load(clf_type t, const void *p, size_t i);
/* a op b on doubles: the reference. */
double clf_bench_combine(clf_reduce_op op, double a, double b);
/* acc[i] = acc[i] op src[i] for i < count, in the element type: the naive way's host side. */
void clf_bench_host_combine(clf_type t, clf_reduce_op op, void *acc, const void *src,
                            size_t count);

/* Helpers shared by the benchmarks (bench.c). */
double clf_bench_now(void);                             /* monotonic seconds */
int clf_bench_cmp_double(const void *a, const void *b); /* for qsort */
double clf_bench_median(double *v, size_t n);           /* sorts v */

/* The stencil benchmarks' Jacobi step (5-point, 2D floats, edges kept): the kernel "jac2"
 * (global_size = w x h), the start grid, and the plain C reference (1 when `steps` steps
 * from init give res bit for bit; 0 also when out of memory). */
extern const char CLF_BENCH_JACOBI_CL[];
void clf_bench_jacobi_init(float *grid, size_t n);
int clf_bench_jacobi_ok(const float *init, size_t w, size_t h, size_t steps, const float *res);

#define CLF_BENCH_SKIP 77     /* exit status: no suitable device (automake's "skipped") */
#define CLF_BENCH_USAGE 2     /* exit status: bad command line */
#define CLF_BENCH_MAX_REPS 64 /* the most timed repetitions a benchmark takes */

/*
 * The options every benchmark takes: --json, --quick, --verbose, --reps N (1 to
 * CLF_BENCH_MAX_REPS), --devices SELECTION, --trace PATH, --simulate RULES, --help (-h) and
 * --version (-V);
 * and --plot FILE.svg where the benchmark sets can_plot (elsewhere it is a usage error).
 * The benchmark sets name, usage and the defaults before clf_bench_parse().
 */
typedef struct clf_bench_common {
    const char *name;         /* the command, for messages: "p2p" */
    void (*usage)(FILE *to);  /* the command's usage text */
    int json, quick, verbose; /* --json, --quick, --verbose */
    unsigned reps;            /* --reps N */
    unsigned quick_reps;      /* --quick: at most this many repetitions */
    const char *devices;      /* --devices SELECTION; NULL: $CLFLEET_DEVICES, else the default */
    const char *trace;        /* --trace PATH; NULL: none */
    int can_plot;             /* set by the benchmark: it takes --plot */
    const char *plot;         /* --plot FILE.svg; NULL: none */
    const char *simulate;     /* --simulate RULES (CLFLEET_SIMULATE); NULL: none */
} clf_bench_common;

/* The first `val` a benchmark may give its own options in clf_bench_parse(). */
#define CLF_BENCH_OWN 0x100
/* The stencil benchmarks' --size N (an N x N grid) and --steps N: entries of a benchmark's
 * own option table, and the handler for them (1 when the value is good). */
enum { CLF_BENCH_OPT_SIZE = CLF_BENCH_OWN + 64, CLF_BENCH_OPT_STEPS };
#define CLF_BENCH_GRID_OPTIONS                                                              \
    {"size", required_argument, NULL, CLF_BENCH_OPT_SIZE},                                  \
        {"steps", required_argument, NULL, CLF_BENCH_OPT_STEPS}
int clf_bench_grid_option(int val, const char *arg, size_t *w, size_t *h, size_t *steps);

/*
 * One option of the benchmark's own: `val` is its struct option's val, `arg` its value (NULL
 * for a flag). Returns 1 if it took it, 0 if the value is bad.
 */
typedef int (*clf_bench_own_option)(void *bench, int val, const char *arg);

/*
 * The command line argv[1..argc) through getopt_long(): the common options into c, the
 * benchmark's own (`own_options`, terminated by a zero entry, vals from CLF_BENCH_OWN on, or
 * a letter other than h and V, which then is also the option's short form, "-b 4K"; may be
 * NULL) through own(bench, ...). `--opt value` and `--opt=value` both work. Then
 * --quick caps c->reps at c->quick_reps, --trace sets $CLFLEET_TRACE so that every fleet
 * writes a timeline, and --simulate RULES sets $CLFLEET_SIMULATE (a testing tool: the library
 * makes real devices behave like slower ones) for every fleet and child process. Returns -1 to go on, or the exit status to return at once: 0 after
 * --help (usage on stdout) or --version, CLF_BENCH_USAGE after a bad argument (what was wrong
 * on stderr, with a pointer to --help).
 */
int clf_bench_parse(clf_bench_common *c, int argc, char **argv, const struct option *own_options,
                    clf_bench_own_option own, void *bench);

/*
 * A whole number in [min, max]: digits (strtoull() in `base`; 0 also takes 0x... and
 * 0...), then an optional K, M or G suffix (x 1024, 1024^2, 1024^3), as the environment
 * variables take them. Returns 1 and stores it in *out, or 0.
 */
int clf_bench_number(const char *s, int base, size_t min, size_t max, size_t *out);

/* The --trace PATH given to clf_bench_parse(), or NULL. */
const char *clf_bench_trace(void);

/*
 * PATH with "-TAG" put before its extension: ("t.json", "0") gives "t-0.json", ("t", "%n")
 * "t-%n". clfleet replaces "%n" by the fleet's number in the process, so every fleet of a
 * benchmark writes a file of its own. Returns a malloc'ed string, or NULL.
 */
char *clf_bench_trace_name(const char *path, const char *tag);

/*
 * Where the benchmark's selection comes from, for messages: "--devices 'S'",
 * "CLFLEET_DEVICES='S'" or "the default selection", into buf.
 */
const char *clf_bench_selection_source(const clf_bench_common *c, char *buf, size_t len);

/*
 * The benchmark's fleet: o->devices is set to c->devices (NULL: $CLFLEET_DEVICES, else the
 * library's default). When it has fewer than `need` devices and they are all CPU root
 * devices, each CPU device of at least two compute units is split into sub-devices of one
 * unit instead (o is changed to match, for later fleets), and stderr says so. When there are
 * still too few, stderr says what to set and the status is CLF_ERROR_NO_DEVICE (*out NULL).
 */
clf_status clf_bench_fleet(clf_fleet **out, const clf_bench_common *c, clf_fleet_options *o,
                           size_t need);

/* "clfleet-bench CMD: WHAT: STATUS: detail" on stderr (no CMD: "clfleet-bench: ..."); 1. */
int clf_bench_fail(const char *cmd, const char *what, clf_status st);

/*
 * As clf_bench_fleet(), for benchmarks that run on one device too but show more with two or
 * more: CPU root devices are split when the selection gives fewer than `want`; fewer than
 * `need` devices is the failure.
 */
clf_status clf_bench_fleet_want(clf_fleet **out, const clf_bench_common *c, clf_fleet_options *o,
                                size_t want, size_t need);

/* $CLFLEET_SIMULATE when set and not empty (--simulate, or the caller's environment), else
 * NULL: the benchmarks name it in their tables and JSON. */
const char *clf_bench_simulation(void);

/*
 * The fastest of n one-device times t[i] (NAN and negative times never win); n when none
 * is valid. The benchmarks compare with the fastest device alone, by measurement, never with
 * device 0 (on a GPU + CPU fleet device 0 may well be the CPU).
 */
size_t clf_bench_fastest(const double *t, size_t n);

/*
 * Devices i and j of f are alike for timing: the same name, type and compute units, both
 * sub-devices of the same root or both roots. The benchmarks time one device of each kind
 * alone (sixteen sub-devices of one CPU all run alike) and say so. Under CLFLEET_SIMULATE
 * every device is a kind of its own (the rules may make equal devices unequal).
 */
int clf_bench_same_kind(const clf_fleet *f, size_t i, size_t j);

/* clf_bench_fail(), then the exit status: CLF_BENCH_SKIP when st says there is no device or
 * platform, else 1. */
int clf_bench_setup_failed(const char *cmd, const char *what, clf_status st);

/* GB/s (1e9 bytes/s) of bytes in s seconds; NAN unless s > 0. */
double clf_bench_gbps(size_t bytes, double s);

/*
 * Write `plot` (a clf_plot) to `path` (c->plot, or a name made from it) and say where on
 * stderr; returns 0, or 1 after a message when it could not be written (out of memory, or
 * the file). Does nothing when path is NULL. The plot is not destroyed.
 */
struct clf_plot;
int clf_bench_plot_write(const clf_bench_common *c, const struct clf_plot *plot,
                         const char *path);

/* "N MiB" from 1 MiB on, else "N KiB". */
void clf_bench_size_label(char *buf, size_t len, size_t bytes);

#endif


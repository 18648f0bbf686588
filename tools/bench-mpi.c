/* `clfleet-bench mpi-allreduce` (built with the MPI layer): clf_comm_allreduce() over every
 * device of every rank (float sum, or -d TYPE and -o OP as `clfleet-bench allreduce` takes
 * them) against the naive way (each device to the host, the fleet's buffers combined on the
 * host, MPI_Allreduce with the matching datatype and operation, the host to each device), 4 KiB to
 * 256 MiB in steps of 4x, in nccl-tests' columns as `clfleet-bench allreduce` prints them:
 * size, count, type, redop, root, then time (the slowest rank's, mean of the iterations),
 * algbw and bus bandwidth across ranks (algbw x 2(P-1)/P, P ranks) and #wrong for
 * out-of-place (n/a: clf_comm_allreduce() works in place), in-place (clf_comm_allreduce)
 * and the naive way, and the footer. Run it under mpirun, e.g.
 * mpirun -np 2 clfleet-bench mpi-allreduce; one rank measures too (no MPI traffic). Every
 * iteration starts from freshly filled buffers, and #wrong counts the elements of every
 * device of every rank that differ from the exact result (small integers) after the last one.
 * Rank 0 prints. */
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clfleet/mpi.h"

#define MAX_DEV 8

typedef struct bench {
    clf_bench_common opt;
    size_t max_bytes, min_bytes, chunk_bytes, factor, warmup;
    size_t ndev;
    clf_type type;
    clf_reduce_op op;
    size_t esz; /* bytes of one element */
    int rank, size;
    clf_fleet *fl;
    clf_comm *comm;
    clf_buffer *buf[MAX_DEV];
    unsigned char *host[MAX_DEV];
} bench;

/* The MPI datatype and operation of the naive way. */
static MPI_Datatype mpi_type(clf_type t)
{
    switch (t) {
    case CLF_TYPE_INT32:
        return MPI_INT32_T;
    case CLF_TYPE_UINT32:
        return MPI_UINT32_T;
    case CLF_TYPE_INT64:
        return MPI_INT64_T;
    case CLF_TYPE_FLOAT:
        return MPI_FLOAT;
    default:
        return MPI_DOUBLE;
    }
}

static MPI_Op mpi_op(clf_reduce_op op)
{
    return op == CLF_REDUCE_PROD  ? MPI_PROD
           : op == CLF_REDUCE_MIN ? MPI_MIN
           : op == CLF_REDUCE_MAX ? MPI_MAX
                                  : MPI_SUM;
}

enum { OPT_MAX = CLF_BENCH_OWN, OPT_MIN, OPT_CHUNK, OPT_DEVS };
static const struct option OWN[] = {{"max-size", required_argument, NULL, OPT_MAX},
                                    {"min-size", required_argument, NULL, OPT_MIN},
                                    {"maxbytes", required_argument, NULL, 'e'},
                                    {"minbytes", required_argument, NULL, 'b'},
                                    {"stepfactor", required_argument, NULL, 'f'},
                                    {"warmup_iters", required_argument, NULL, 'w'},
                                    {"iters", required_argument, NULL, 'n'},
                                    {"datatype", required_argument, NULL, 'd'},
                                    {"type", required_argument, NULL, 'd'},
                                    {"op", required_argument, NULL, 'o'},
                                    {"chunk", required_argument, NULL, OPT_CHUNK},
                                    {"ndev", required_argument, NULL, OPT_DEVS},
                                    {NULL, 0, NULL, 0}};

static int own_option(void *p, int val, const char *arg)
{
    bench *b = p;
    size_t v;
    switch (val) {
    case OPT_MAX:
    case 'e': return clf_bench_number(arg, 10, 4096, (size_t)1 << 30, &b->max_bytes);
    case OPT_MIN:
    case 'b': return clf_bench_number(arg, 10, 4, (size_t)1 << 30, &b->min_bytes);
    case 'f': return clf_bench_number(arg, 10, 2, 1024, &b->factor);
    case 'w': return clf_bench_number(arg, 10, 0, CLF_BENCH_MAX_REPS, &b->warmup);
    case 'n': /* as --reps, and capped under --quick alike */
        if (!clf_bench_number(arg, 10, 1, CLF_BENCH_MAX_REPS, &v))
            return 0;
        b->opt.reps = (unsigned)v;
        return 1;
    case 'd': return clf_bench_type_parse(arg, &b->type);
    case 'o': return clf_bench_op_parse(arg, &b->op);
    case OPT_CHUNK: return clf_bench_number(arg, 10, 4096, (size_t)1 << 30, &b->chunk_bytes);
    case OPT_DEVS: return clf_bench_number(arg, 10, 1, MAX_DEV, &b->ndev);
    }
    return 0;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: mpirun -np P clfleet-bench mpi-allreduce [options]\n"
            "clf_comm_allreduce (every device of every rank) against the naive\n"
            "way (device -> host, host sum, MPI_Allreduce, host -> device), 4 KiB to 256 MiB,\n"
            "in nccl-tests' columns: time (the slowest rank's, mean of the iterations, us),\n"
            "algbw = size / time, busbw = algbw x 2(P-1)/P over P ranks (GB/s), #wrong\n"
            "(elements of every device of every rank that differ from the exact sum after\n"
            "the last iteration); out-of-place n/a: clf_comm_allreduce works in place.\n"
            "  -e, --maxbytes N  largest message in bytes (default 256M; --quick: 16M);\n"
            "                    also --max-size N\n"
            "  -b, --minbytes N  smallest (default 4K); also --min-size N\n"
            "  -f, --stepfactor F  times F each step, 2 to 1024 (4)\n"
            "  -w, --warmup_iters N  untimed iterations of each way per size (1)\n"
            "  -n, --iters N     timed iterations per size (default 5, 40 up to 1 MiB;\n"
            "                    --quick: 3); also --reps N\n"
            "  -d, --datatype T  int32, uint32, int64, float or double (float); also --type\n"
            "  -o, --op OP       sum, prod, min or max (sum)\n"
            "  --chunk N         clf_comm_options.chunk_bytes (default: the library's, 4 MiB)\n"
            "  --ndev N          devices per rank (default: all of the fleet, at most %d)\n"
            "  common: --json --quick --reps N --devices SELECTION --verbose --help\n",
            MAX_DEV);
}

/* The slowest rank's time of f(b, bytes). */
typedef clf_status (*method)(bench *b, size_t count);

static clf_status naive(bench *b, size_t count)
{
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < b->ndev && st == CLF_SUCCESS; d++)
        st = clf_buffer_read(b->buf[d], 0, count * b->esz, b->host[d]);
    if (st != CLF_SUCCESS)
        return st;
    for (size_t d = 1; d < b->ndev; d++)
        clf_bench_host_combine(b->type, b->op, b->host[0], b->host[d], count);
    if (MPI_Allreduce(MPI_IN_PLACE, b->host[0], (int)count, mpi_type(b->type), mpi_op(b->op),
                      MPI_COMM_WORLD) != MPI_SUCCESS)
        return CLF_ERROR_MPI;
    for (size_t d = 0; d < b->ndev && st == CLF_SUCCESS; d++)
        st = clf_buffer_write(b->buf[d], 0, count * b->esz, b->host[0]);
    return st;
}

static clf_status fleet_way(bench *b, size_t count)
{
    return clf_comm_allreduce(b->comm, b->buf, b->ndev, count, b->type, b->op);
}

/* Device d of rank r is position r * ndev + d of the reduction; every element of its
 * buffer starts as that position's value (clf_bench_reduce_value(), element 0: one value
 * per buffer, so that no host array of every size is needed). */
static double start_value(const bench *b, int rank, size_t d)
{
    return clf_bench_reduce_value(b->type, b->op, (size_t)rank * b->ndev + d, 0);
}

static clf_status fill(bench *b, size_t count)
{
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < b->ndev && st == CLF_SUCCESS; d++) {
        unsigned char v[8];
        clf_bench_store(b->type, v, 0, start_value(b, b->rank, d));
        st = clf_buffer_fill(b->buf[d], v, b->esz, 0, count * b->esz);
    }
    return st;
}

/* After one call from fill(): the elements of every buffer of every rank that are not the
 * sum over all ranks (a buffer that cannot be read counts wholly); the same on every rank. */
static unsigned long long count_wrong(bench *b, size_t count)
{
    double want = start_value(b, 0, 0);
    for (int r = 0; r < b->size; r++)
        for (size_t d = 0; d < b->ndev; d++)
            if (r || d)
                want = clf_bench_combine(b->op, want, start_value(b, r, d));
    unsigned long long wrong = 0, all = 0;
    for (size_t d = 0; d < b->ndev; d++) {
        if (clf_buffer_read(b->buf[d], 0, count * b->esz, b->host[d]) != CLF_SUCCESS) {
            wrong += count;
            continue;
        }
        for (size_t i = 0; i < count; i++)
            wrong += clf_bench_load(b->type, b->host[d], i) != want;
    }
    if (MPI_Allreduce(&wrong, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return (unsigned long long)count * b->ndev * (unsigned long long)b->size;
    return all;
}

/*
 * Both methods on the same buffers, the two taking turns each iteration (naive first on
 * even ones, clfleet first on odd ones), so that the drift of a shared machine falls on both
 * alike: the means of the slowest rank's times. Every call starts from fill() (untimed);
 * `warmup` untimed calls of each come first, and the result of the last timed one is
 * checked (wrong[k]).
 */
static clf_status measure(bench *b, size_t count, unsigned reps, double mean[2],
                          unsigned long long wrong[2])
{
    static const method M[2] = {naive, fleet_way};
    double sum[2] = {0, 0};
    clf_status st = CLF_SUCCESS;
    for (size_t w = 0; w < b->warmup && st == CLF_SUCCESS; w++)
        for (int k = 0; k < 2 && st == CLF_SUCCESS; k++)
            if ((st = fill(b, count)) == CLF_SUCCESS)
                st = M[k](b, count);
    for (unsigned r = 0; r < reps && st == CLF_SUCCESS; r++)
        for (unsigned j = 0; j < 2 && st == CLF_SUCCESS; j++) {
            unsigned k = (r + j) % 2;
            if ((st = fill(b, count)) != CLF_SUCCESS || (st = clf_fleet_finish(b->fl)) !=
                CLF_SUCCESS)
                break;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = clf_bench_now();
            st = M[k](b, count);
            double mine = clf_bench_now() - t0, worst = 0;
            MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            sum[k] += worst;
            if (st == CLF_SUCCESS && r + 1 == reps)
                wrong[k] = count_wrong(b, count);
        }
    for (int k = 0; k < 2; k++)
        mean[k] = st == CLF_SUCCESS ? sum[k] / reps : NAN;
    return st;
}

/* Iterations at `bytes`: -n (or --reps) as given; by default 5 (--quick: 3), and 40 up to
 * 1 MiB, since small all-reduces last tens of microseconds, where one scheduler hiccup
 * moves a mean of a few. */
static unsigned reps_for(const bench *b, size_t bytes)
{
    if (b->opt.reps)
        return b->opt.reps;
    if (b->opt.quick)
        return 3;
    return bytes <= ((size_t)1 << 20) ? 40 : 5;
}

void clf_bench_mpi_start(int *argc, char ***argv, int *rank, int *size)
{
    int provided = 0, inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}

int clf_bench_mpi_allreduce(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){
        .name = "mpi-allreduce", .usage = usage, .quick_reps = 3}; /* reps 0: reps_for() */
    b.max_bytes = (size_t)256 << 20;
    b.min_bytes = 4096;
    b.factor = 4;
    b.warmup = 1;
    b.type = CLF_TYPE_FLOAT;
    b.op = CLF_REDUCE_SUM;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.min_bytes > b.max_bytes) {
        fprintf(stderr, "clfleet-bench mpi-allreduce: the smallest size (-b %zu) is above the "
                        "largest (-e %zu)\nTry 'clfleet-bench mpi-allreduce --help'.\n",
                b.min_bytes, b.max_bytes);
        return CLF_BENCH_USAGE;
    }
    if (b.opt.quick && b.max_bytes > ((size_t)16 << 20))
        b.max_bytes = (size_t)16 << 20;
    b.esz = clf_type_size(b.type);
    clf_bench_mpi_start(&argc, &argv, &b.rank, &b.size);
    clf_fleet_options fo = CLF_FLEET_OPTIONS_INIT;
    fo.devices = b.opt.devices;
    clf_status st = clf_fleet_create(&b.fl, &fo);
    size_t have = st == CLF_SUCCESS ? clf_fleet_device_count(b.fl) : 0;
    if (b.ndev == 0)
        b.ndev = have < MAX_DEV ? have : MAX_DEV;
    int mine = st == CLF_SUCCESS && have >= b.ndev && b.ndev > 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (!mine)
            fprintf(stderr, "clfleet-bench mpi-allreduce: rank %d: %zu devices (%s)\n", b.rank,
                    have, st ? clf_last_error() : "too few");
        clf_fleet_destroy(b.fl);
        MPI_Finalize();
        return CLF_BENCH_SKIP;
    }
    clf_comm_options co = CLF_COMM_OPTIONS_INIT;
    co.chunk_bytes = b.chunk_bytes;
    st = clf_comm_create(&b.comm, MPI_COMM_WORLD, b.fl, &co);
    for (size_t d = 0; d < b.ndev && st == CLF_SUCCESS; d++) {
        st = clf_buffer_create(&b.buf[d], b.fl, d, b.max_bytes, CLF_MEM_READ_WRITE);
        b.host[d] = malloc(b.max_bytes);
        if (st == CLF_SUCCESS && !b.host[d])
            st = CLF_ERROR_OUT_OF_HOST_MEMORY;
    }
    rc = st == CLF_SUCCESS ? 0 : clf_bench_fail("mpi-allreduce", "setup", st);
    if (!rc && b.rank == 0 && !b.opt.json) {
        printf("# clfleet-bench mpi-allreduce: %d ranks x %zu devices, %s %s\n", b.size, b.ndev,
               clf_bench_type_name(b.type), clf_bench_op_name(b.op));
        printf("# time: the slowest rank's, mean of %u iteration(s) (%u up to 1 MiB) after %zu "
               "warm-up(s), the two ways taking turns; algbw = size / time; busbw = algbw x "
               "2(P-1)/P; GB/s = 1e9 bytes/s\n",
               reps_for(&b, (size_t)2 << 20), reps_for(&b, 4096), b.warmup);
        printf("# out-of-place: n/a, clf_comm_allreduce() reduces in place only\n#\n");
        printf("# %47s%-33s%-33s%s\n", "", "out-of-place", "in-place",
               "naive: to host, MPI_Allreduce, back");
        printf("# %10s %12s %8s %6s %5s  %8s %7s %7s %6s  %8s %7s %7s %6s  %8s %7s %6s\n",
               "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
               "time", "algbw", "busbw", "#wrong", "time", "busbw", "#wrong");
        printf("# %10s %12s %8s %6s %5s  %8s %7s %7s %6s  %8s %7s %7s %6s  %8s %7s %6s\n",
               "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
               "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "");
    }
    int opened = !rc && b.rank == 0 && b.opt.json;
    if (opened)
        printf("{\"benchmark\":\"mpi-allreduce\",\"ranks\":%d,\"devices_per_rank\":%zu,"
               "\"type\":\"%s\",\"op\":\"%s\",\"warmup_iters\":%zu,\"rows\":[",
               b.size, b.ndev, clf_bench_type_name(b.type), clf_bench_op_name(b.op), b.warmup);
    int first = 1;
    unsigned long long out_of_bounds = 0;
    double bus_sum = 0;
    size_t nbus = 0;
    for (size_t bytes = b.min_bytes; !rc && bytes <= b.max_bytes;) {
        size_t count = bytes / b.esz; /* whole elements, as nccl-tests counts them */
        double mean[2] = {0, 0};
        unsigned long long wrong[2] = {0, 0};
        if (count == 0) { /* below one element (-b 4 -d double) */
            bytes *= b.factor;
            continue;
        }
        st = measure(&b, count, reps_for(&b, bytes), mean, wrong);
        double tn = mean[0], tc = mean[1];
        if (st != CLF_SUCCESS) {
            rc = clf_bench_fail("mpi-allreduce", "measure", st);
            break;
        }
        double f = b.size > 1 ? 2.0 * (b.size - 1) / b.size : 1.0;
        size_t sz = count * b.esz;
        double bn = clf_bench_gbps(sz, tn) * f, bc = clf_bench_gbps(sz, tc) * f;
        out_of_bounds += wrong[0] + wrong[1];
        if (isfinite(bc))
            bus_sum += bc, nbus++;
        if (b.rank == 0) {
            if (b.opt.json)
                printf("%s{\"bytes\":%zu,\"count\":%zu,\"naive_s\":%.9g,\"clfleet_s\":%.9g,"
                       "\"clfleet_algbw_gbps\":%.6g,\"naive_busbw_gbps\":%.6g,"
                       "\"clfleet_busbw_gbps\":%.6g,\"ratio\":%.4g,\"naive_wrong\":%llu,"
                       "\"clfleet_wrong\":%llu,\"correct\":%s}",
                       first ? "" : ",", sz, count, tn, tc, clf_bench_gbps(sz, tc), bn, bc,
                       tn / tc, wrong[0], wrong[1], wrong[0] + wrong[1] ? "false" : "true");
            else
                printf("  %10zu %12zu %8s %6s %5d  %8s %7s %7s %6s  %8.1f %7.3f %7.3f %6llu  "
                       "%8.1f %7.3f %6llu\n",
                       sz, count, clf_bench_type_name(b.type), clf_bench_op_name(b.op), -1,
                       "n/a", "n/a", "n/a", "n/a", tc * 1e6, clf_bench_gbps(sz, tc), bc, wrong[1],
                       tn * 1e6, bn, wrong[0]);
            fflush(stdout);
        }
        first = 0;
        if (wrong[0] || wrong[1])
            rc = EXIT_FAILURE;
        if (bytes > SIZE_MAX / b.factor)
            break;
        bytes *= b.factor;
    }
    if (opened) {
        printf("],\"out_of_bounds\":%llu,\"avg_busbw_gbps\":", out_of_bounds);
        if (nbus)
            printf("%.6g}\n", bus_sum / (double)nbus);
        else
            printf("null}\n");
    } else if (b.rank == 0 && !first) {
        printf("# Out of bounds values : %llu %s\n", out_of_bounds,
               out_of_bounds ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %.3f GB/s (in-place)\n#\n",
               nbus ? bus_sum / (double)nbus : NAN);
    }
    for (size_t d = 0; d < b.ndev; d++) {
        clf_buffer_destroy(b.buf[d]);
        free(b.host[d]);
    }
    clf_comm_destroy(b.comm);
    clf_fleet_destroy(b.fl);
    MPI_Finalize();
    return rc;
}

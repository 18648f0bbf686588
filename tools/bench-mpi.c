/* `clfleet-bench mpi-allreduce` (built with the MPI layer): clf_comm_allreduce() (float sum
 * over every device of every rank) against the naive way (each device to the host, the
 * fleet's buffers added on the host, MPI_Allreduce, the host to each device), 4 KiB to
 * 256 MiB: time (the slowest rank's, median of the repetitions), bus bandwidth across
 * ranks (size / time x 2(P-1)/P, P ranks) and the ratio. Run it under mpirun, e.g.
 * mpirun -np 2 clfleet-bench mpi-allreduce; one rank measures too (no MPI traffic). Both
 * results are checked against the exact sum (small integers). Rank 0 prints. */
#include <mpi.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clfleet/mpi.h"

#define MAX_DEV 8

typedef struct bench {
    clf_bench_common opt;
    size_t max_bytes, min_bytes, chunk_bytes;
    size_t ndev;
    int rank, size;
    clf_fleet *fl;
    clf_comm *comm;
    clf_buffer *buf[MAX_DEV];
    float *host[MAX_DEV];
} bench;

enum { OPT_MAX = CLF_BENCH_OWN, OPT_MIN, OPT_CHUNK, OPT_DEVS };
static const struct option OWN[] = {{"max-size", required_argument, NULL, OPT_MAX},
                                    {"min-size", required_argument, NULL, OPT_MIN},
                                    {"chunk", required_argument, NULL, OPT_CHUNK},
                                    {"ndev", required_argument, NULL, OPT_DEVS},
                                    {NULL, 0, NULL, 0}};

static int own_option(void *p, int val, const char *arg)
{
    bench *b = p;
    switch (val) {
    case OPT_MAX: return clf_bench_number(arg, 10, 4096, (size_t)1 << 30, &b->max_bytes);
    case OPT_MIN: return clf_bench_number(arg, 10, 4, (size_t)1 << 30, &b->min_bytes);
    case OPT_CHUNK: return clf_bench_number(arg, 10, 4096, (size_t)1 << 30, &b->chunk_bytes);
    case OPT_DEVS: return clf_bench_number(arg, 10, 1, MAX_DEV, &b->ndev);
    }
    return 0;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: mpirun -np P clfleet-bench mpi-allreduce [options]\n"
            "clf_comm_allreduce (float sum, every device of every rank) against the naive\n"
            "way (device -> host, host sum, MPI_Allreduce, host -> device), 4 KiB to 256 MiB\n"
            "  --max-size N   largest message in bytes (default 256M; --quick: 16M)\n"
            "  --min-size N   smallest (default 4K)\n"
            "  --chunk N      clf_comm_options.chunk_bytes (default: the library's, 4 MiB)\n"
            "  --ndev N       devices per rank (default: all of the fleet, at most %d)\n"
            "  common: --json --quick --reps N --devices SELECTION --verbose --help\n",
            MAX_DEV);
}

/* The slowest rank's time of f(b, bytes). */
typedef clf_status (*method)(bench *b, size_t count);

static clf_status naive(bench *b, size_t count)
{
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < b->ndev && st == CLF_SUCCESS; d++)
        st = clf_buffer_read(b->buf[d], 0, count * 4, b->host[d]);
    for (size_t d = 1; d < b->ndev; d++)
        for (size_t i = 0; i < count; i++)
            b->host[0][i] += b->host[d][i];
    if (MPI_Allreduce(MPI_IN_PLACE, b->host[0], (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return CLF_ERROR_MPI;
    for (size_t d = 0; d < b->ndev && st == CLF_SUCCESS; d++)
        st = clf_buffer_write(b->buf[d], 0, count * 4, b->host[0]);
    return st;
}

static clf_status fleet_way(bench *b, size_t count)
{
    return clf_comm_allreduce(b->comm, b->buf, b->ndev, count, CLF_TYPE_FLOAT, CLF_REDUCE_SUM);
}

/* Every buffer filled with 1 + rank + device (small integers: the sum is exact). */
static clf_status fill(bench *b, size_t count)
{
    clf_status st = CLF_SUCCESS;
    for (size_t d = 0; d < b->ndev && st == CLF_SUCCESS; d++) {
        float v = (float)(1 + b->rank + (int)d);
        st = clf_buffer_fill(b->buf[d], &v, 4, 0, count * 4);
    }
    return st;
}

/* After one call from fill(): every element of every buffer is the sum over all ranks. */
static int check(bench *b, size_t count)
{
    double want = 0;
    for (int r = 0; r < b->size; r++)
        for (size_t d = 0; d < b->ndev; d++)
            want += 1 + r + (int)d;
    int ok = 1;
    for (size_t d = 0; d < b->ndev && ok; d++) {
        if (clf_buffer_read(b->buf[d], 0, count * 4, b->host[d]) != CLF_SUCCESS)
            ok = 0;
        for (size_t i = 0; ok && i < count; i++)
            ok = b->host[d][i] == (float)want;
    }
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/*
 * Both methods on the same buffers, the two taking turns each repetition (naive first on
 * even ones, clfleet first on odd ones), so that the drift of a shared machine falls on both
 * alike: the medians of the slowest rank's times. Each is first run once from fill() and
 * its result checked (ok[k]).
 */
static clf_status measure(bench *b, size_t count, unsigned reps, double med[2], int ok[2])
{
    static const method M[2] = {naive, fleet_way};
    double t[2][CLF_BENCH_MAX_REPS];
    clf_status st = CLF_SUCCESS;
    for (int k = 0; k < 2 && st == CLF_SUCCESS; k++) {
        st = fill(b, count);
        if (st == CLF_SUCCESS)
            st = M[k](b, count);
        ok[k] = st == CLF_SUCCESS && check(b, count);
    }
    for (unsigned r = 0; r < reps && st == CLF_SUCCESS; r++)
        for (unsigned j = 0; j < 2 && st == CLF_SUCCESS; j++) {
            unsigned k = (r + j) % 2;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = clf_bench_now();
            st = M[k](b, count);
            double mine = clf_bench_now() - t0, worst = 0;
            MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            t[k][r] = worst;
        }
    for (int k = 0; k < 2; k++)
        med[k] = st == CLF_SUCCESS ? clf_bench_median(t[k], reps) : NAN;
    return st;
}

/* Repetitions at `bytes`: small all-reduces last tens of microseconds, where one scheduler
 * hiccup moves a median of a few; they get more (up to CLF_BENCH_MAX_REPS). */
static unsigned reps_for(const bench *b, size_t bytes)
{
    unsigned r = b->opt.reps;
    if (bytes <= ((size_t)1 << 20) && !b->opt.quick)
        r = 8 * r < CLF_BENCH_MAX_REPS ? 8 * r : CLF_BENCH_MAX_REPS;
    return r;
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
        .name = "mpi-allreduce", .usage = usage, .reps = 5, .quick_reps = 3};
    b.max_bytes = (size_t)256 << 20;
    b.min_bytes = 4096;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    if (b.opt.quick && b.max_bytes > ((size_t)16 << 20))
        b.max_bytes = (size_t)16 << 20;
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
        printf("mpi-allreduce: %d ranks x %zu devices, float sum; time: the slowest rank, "
               "median of %u (%u up to 1 MiB), the two ways taking turns\n",
               b.size, b.ndev, b.opt.reps, reps_for(&b, 4096));
        printf("%10s %12s %12s %12s %12s %8s\n", "size", "naive ms", "clfleet ms",
               "naive busbw", "clf busbw", "ratio");
    }
    if (!rc && b.rank == 0 && b.opt.json)
        printf("{\"benchmark\":\"mpi-allreduce\",\"ranks\":%d,\"devices_per_rank\":%zu,"
               "\"rows\":[",
               b.size, b.ndev);
    int first = 1;
    for (size_t bytes = b.min_bytes; !rc && bytes <= b.max_bytes; bytes *= 4) {
        size_t count = bytes / 4;
        double med[2] = {0, 0};
        int ok[2] = {0, 0};
        st = measure(&b, count, reps_for(&b, bytes), med, ok);
        double tn = med[0], tc = med[1];
        int okn = ok[0], okc = ok[1];
        if (st != CLF_SUCCESS) {
            rc = clf_bench_fail("mpi-allreduce", "measure", st);
            break;
        }
        double f = b.size > 1 ? 2.0 * (b.size - 1) / b.size : 1.0;
        double bn = clf_bench_gbps(bytes, tn) * f, bc = clf_bench_gbps(bytes, tc) * f;
        if (b.rank == 0) {
            char label[32];
            clf_bench_size_label(label, sizeof label, bytes);
            if (b.opt.json)
                printf("%s{\"bytes\":%zu,\"naive_s\":%.9g,\"clfleet_s\":%.9g,"
                       "\"naive_busbw_gbps\":%.6g,\"clfleet_busbw_gbps\":%.6g,\"ratio\":%.4g,"
                       "\"correct\":%s}",
                       first ? "" : ",", bytes, tn, tc, bn, bc, tn / tc,
                       okn && okc ? "true" : "false");
            else
                printf("%10s %12.3f %12.3f %10.2f GB/s %8.2f GB/s %7.2fx%s\n", label, tn * 1e3,
                       tc * 1e3, bn, bc, tn / tc, okn && okc ? "" : "  WRONG RESULT");
            fflush(stdout);
        }
        first = 0;
        if (!okn || !okc)
            rc = EXIT_FAILURE;
    }
    if (b.rank == 0 && b.opt.json)
        printf("]}\n");
    for (size_t d = 0; d < b.ndev; d++) {
        clf_buffer_destroy(b.buf[d]);
        free(b.host[d]);
    }
    clf_comm_destroy(b.comm);
    clf_fleet_destroy(b.fl);
    MPI_Finalize();
    return rc;
}

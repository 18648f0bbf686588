/*
 * clfleet-bench mpi-stencil (built with the MPI layer; run under mpirun): Jacobi steps
 * (5-point, 2D floats, the kernel of examples/mpi-stencil.c and tools/bench-stencil.c)
 * three ways in one run, each timed as the slowest rank (median of the repetitions, after
 * one untimed warm-up):
 *
 *   (a) one rank        rank 0 alone, the whole grid resident on its own fleet (clf_array,
 *                       a halo of one row, CLF_ARRAY_EXCHANGE_AFTER); the other ranks wait
 *                       without spinning (MPI_Ibarrier polled with sleeps)
 *   (b) all ranks       clf_comm_array_* window arrays over every rank's devices, halos
 *                       between ranks by MPI overlapped with the interior
 *                       (CLF_ARRAY_EXCHANGE_AFTER)
 *   (c) all, before     (b) with the exchange before each step (CLF_ARRAY_EXCHANGE_BEFORE)
 *
 * Per form: ms/step, the speedup over (a), and per rank its rows, MPI bytes sent + received
 * per step (its halo rows x neighbours x 2: computed, the MPI layer has no counters) and
 * bytes per step between host and devices and between devices (clf_metrics_fleet() over the
 * timed steps). The results are gathered to rank 0 and compared bit for bit with each other,
 * and with a plain C loop when the grid is at most 1024 x 1024; a mismatch is exit status 1.
 * Rank 0 prints.
 */
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clfleet/mpi.h"
#include "json.h"

enum { FORM_ONE, FORM_AFTER, FORM_BEFORE, NFORM };
static const char *const FORM_NAMES[NFORM] = {"one rank (clf_array on rank 0)",
                                              "all ranks, exchange after (overlapped)",
                                              "all ranks, exchange before"};
static const char *const FORM_KEYS[NFORM] = {"one_rank", "all_ranks_overlapped",
                                             "all_ranks_exchange_before"};

/* What one rank did in one form (gathered to rank 0 as doubles). */
enum { R_DEVICES, R_ROWS, R_MPI, R_HOST, R_PEER, NR };

typedef struct bench {
    clf_bench_common opt;
    size_t w, h, steps;
    int rank, size;
    clf_fleet *fl;
    clf_comm *comm;
    clf_program *prog;
    float *init, *res[NFORM]; /* on rank 0 */
    double step_s[NFORM];
    double *per_rank[NFORM]; /* size x NR, on rank 0 */
} bench;

static void usage(FILE *to)
{
    fputs("usage: mpirun -np P clfleet-bench mpi-stencil [--json] [--quick] [--verbose]\n"
          "                     [--reps N] [--devices SELECTION] [--trace PATH]\n"
          "                     [--size N] [--steps N]\n"
          "Jacobi steps on an N x N float grid: rank 0 alone on its devices, then every\n"
          "rank's devices with halos across ranks by MPI, overlapped or before each step:\n"
          "time per step (the slowest rank), speedup, and per rank its rows, MPI bytes and\n"
          "host<->device bytes per step.\n"
          "  --json          one JSON document on standard output (rank 0)\n"
          "  --quick         a 512 x 512 grid, 10 steps, one repetition\n"
          "  --reps N        timed repetitions, medians reported (3)\n"
          "  --devices S     each rank's devices (default: $CLFLEET_DEVICES, else the\n"
          "                  library's default)\n"
          "  --trace PATH    a Perfetto timeline per rank, PATH-rankR-0.json\n"
          "  --size N        grid side (default 4096)\n"
          "  --steps N       steps per run (default 200)\n"
          "  -h, --help      this text; -V, --version: the version\n",
          to);
}

static const struct option OWN[] = {CLF_BENCH_GRID_OPTIONS, {NULL, 0, NULL, 0}};

static int own_option(void *bench_, int val, const char *arg)
{
    bench *b = bench_;
    return clf_bench_grid_option(val, arg, &b->w, &b->h, &b->steps);
}

/* Bytes between host and devices, and between devices, so far. */
static void counters(const bench *b, uint64_t *host, uint64_t *peer)
{
    clf_fleet_metrics m;
    *host = *peer = 0;
    if (clf_metrics_fleet(&m, b->fl) != CLF_SUCCESS)
        return;
    *host = m.dir[CLF_DIRECTION_TO_DEVICE].bytes + m.dir[CLF_DIRECTION_FROM_DEVICE].bytes;
    *peer = m.dir[CLF_DIRECTION_PEER].bytes;
}

/* The worst status over the ranks (CLF_SUCCESS is 0, errors negative): every rank fails
 * together, also in the one-rank form where only rank 0 works. */
static clf_status agree(clf_status st)
{
    int mine = (int)st, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
        return CLF_ERROR_MPI;
    return (clf_status)all;
}

/* The other ranks while rank 0 works alone: wait for its barrier without spinning on the
 * cores it needs (Open MPI's blocking calls poll). */
static void wait_quietly(void)
{
    MPI_Request rq;
    int done = 0;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
        return;
    while (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

static clf_status run_steps(bench *b, int form, clf_array **a, size_t steps)
{
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = "jac2";
    d.dims = 2;
    d.global[0] = b->w;
    d.global[1] = b->h;
    d.flags = form == FORM_BEFORE ? CLF_ARRAY_EXCHANGE_BEFORE : CLF_ARRAY_EXCHANGE_AFTER;
    clf_status st = CLF_SUCCESS;
    for (size_t k = 0; k < steps && st == CLF_SUCCESS; k++) {
        clf_arg args[] = {CLF_ARRAY_IN(a[k % 2]), CLF_ARRAY_OUT(a[(k + 1) % 2])};
        st = form == FORM_ONE ? clf_array_launch(b->fl, b->prog, &d, args, 2)
                              : clf_comm_array_launch(b->comm, b->prog, &d, args, 2);
    }
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a[0]);
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a[1]);
    return st;
}

/* The initial grid into a[0], its halos exchanged, nothing in flight (not timed). */
static clf_status load(bench *b, int form, clf_array **a)
{
    clf_status st;
    if (form == FORM_ONE) {
        st = clf_array_write(a[0], NULL, NULL, b->init);
        if (st == CLF_SUCCESS)
            st = clf_array_exchange(a[0]);
    } else {
        st = clf_comm_array_write(b->comm, a[0], NULL, NULL, b->rank == 0 ? b->init : NULL, 0);
        if (st == CLF_SUCCESS)
            st = clf_comm_array_exchange(b->comm, a[0]);
    }
    if (st == CLF_SUCCESS)
        st = clf_array_finish(a[0]);
    return st;
}

/* This rank's rows of a, and in *first the first of them. */
static size_t rows_of(const clf_array *a, size_t *first)
{
    size_t rows = 0;
    *first = 0;
    for (size_t q = 0; q < clf_array_part_count(a); q++) {
        clf_array_part pi;
        if (clf_array_part_info(&pi, a, q) != CLF_SUCCESS)
            continue;
        *first = q == 0 ? pi.first : *first;
        rows += pi.count;
    }
    return rows;
}

/* One form: the arrays, a warm-up, the timed repetitions, the result to rank 0. */
static clf_status run_form(bench *b, int form)
{
    int works = form != FORM_ONE || b->rank == 0;
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = sizeof(float);
    ad.dims = 2;
    ad.shape[0] = b->w;
    ad.shape[1] = b->h;
    ad.halo_before = ad.halo_after = 1;
    clf_array *a[2] = {NULL, NULL};
    clf_status st = CLF_SUCCESS;
    if (form == FORM_ONE) {
        if (works) {
            st = clf_array_create(&a[0], b->fl, &ad);
            if (st == CLF_SUCCESS)
                st = clf_array_create(&a[1], b->fl, &ad);
        }
        st = agree(st);
    } else {
        st = clf_comm_array_create(&a[0], b->comm, &ad);
        if (st == CLF_SUCCESS)
            st = clf_comm_array_create(&a[1], b->comm, &ad);
    }
    double t[CLF_BENCH_MAX_REPS];
    uint64_t host = 0, peer = 0;
    /* Repetition -1 is the warm-up (builds the variant, PoCL's compilations, the buffers):
     * two steps, untimed. */
    for (int r = -1; r < (int)b->opt.reps && st == CLF_SUCCESS; r++) {
        size_t steps = r < 0 ? (b->steps < 2 ? b->steps : 2) : b->steps;
        if (works)
            st = load(b, form, a);
        if ((st = agree(st)) != CLF_SUCCESS)
            break;
        uint64_t h0, p0, h1, p1;
        counters(b, &h0, &p0);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = clf_bench_now(), mine = 0, worst = 0;
        if (works) {
            st = run_steps(b, form, a, steps);
            mine = clf_bench_now() - t0;
        }
        if (form == FORM_ONE) /* rank 0 is done; the others waited without spinning */
            wait_quietly();
        counters(b, &h1, &p1);
        if ((st = agree(st)) != CLF_SUCCESS)
            break;
        MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0) {
            t[r] = worst / (double)steps;
            host += h1 - h0;
            peer += p1 - p0;
        }
    }
    if (st == CLF_SUCCESS) {
        clf_array *last = a[b->steps % 2];
        if (form == FORM_ONE)
            st = agree(works ? clf_array_read(last, NULL, NULL, b->res[form]) : CLF_SUCCESS);
        else
            st = clf_comm_array_read(b->comm, last, NULL, NULL,
                                     b->rank == 0 ? b->res[form] : NULL, 0);
    }
    if (st == CLF_SUCCESS) {
        b->step_s[form] = clf_bench_median(t, b->opt.reps);
        size_t first = 0, rows = works ? rows_of(a[0], &first) : 0;
        int nbr = form == FORM_ONE || rows == 0 ? 0 : (first > 0) + (first + rows < b->h);
        double per = (double)b->opt.reps * (double)b->steps, mine[NR];
        mine[R_DEVICES] = (double)clf_fleet_device_count(b->fl);
        mine[R_ROWS] = (double)rows;
        mine[R_MPI] = 2.0 * nbr * (double)b->w * sizeof(float); /* sent + received */
        mine[R_HOST] = (double)host / per;
        mine[R_PEER] = (double)peer / per;
        MPI_Gather(mine, NR, MPI_DOUBLE, b->per_rank[form], NR, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    clf_array_destroy(a[0]);
    clf_array_destroy(a[1]);
    return st;
}

static void print_table(const bench *b, int checked_host)
{
    printf("clfleet-bench mpi-stencil: %zu x %zu floats, %zu steps, %d ranks, time: the slowest "
           "rank, median of %u\n",
           b->w, b->h, b->steps, b->size, b->opt.reps);
    printf("results: every form the same bit for bit%s\n\n",
           checked_host ? ", and the same as the host's C loop" : "");
    printf("%-40s %9s %8s\n", "form", "ms/step", "speedup");
    for (int k = 0; k < NFORM; k++)
        printf("%-40s %9.3f %7.2fx\n", FORM_NAMES[k], b->step_s[k] * 1e3,
               b->step_s[FORM_ONE] / b->step_s[k]);
    printf("\nper rank, bytes per step (MPI: sent + received, halo rows x neighbours; "
           "host<->device and\ndevice<->device: clf_metrics_fleet over the timed steps)\n");
    printf("%-40s %4s %4s %6s %12s %14s %14s\n", "form", "rank", "devs", "rows", "MPI B",
           "host<->dev B", "dev<->dev B");
    for (int k = 0; k < NFORM; k++)
        for (int r = 0; r < b->size; r++) {
            const double *v = &b->per_rank[k][r * NR];
            printf("%-40s %4d %4.0f %6.0f %12.0f %14.0f %14.0f\n", r ? "" : FORM_NAMES[k], r,
                   v[R_DEVICES], v[R_ROWS], v[R_MPI], v[R_HOST], v[R_PEER]);
        }
}

static void print_json(const bench *b, int checked_host)
{
    printf("{\n  \"benchmark\": \"mpi-stencil\",\n  \"ranks\": %d,\n  \"width\": %zu,\n"
           "  \"height\": %zu,\n  \"steps\": %zu,\n  \"repetitions\": %u,\n"
           "  \"checked_against_host\": %s,\n  \"forms\": [",
           b->size, b->w, b->h, b->steps, b->opt.reps, checked_host ? "true" : "false");
    for (int k = 0; k < NFORM; k++) {
        printf("%s\n    {\"form\": \"%s\", \"step_s\": ", k ? "," : "", FORM_KEYS[k]);
        clf_tool_json_num(b->step_s[k]);
        printf(", \"speedup\": ");
        clf_tool_json_num(b->step_s[FORM_ONE] / b->step_s[k]);
        printf(", \"per_rank\": [");
        for (int r = 0; r < b->size; r++) {
            const double *v = &b->per_rank[k][r * NR];
            printf("%s\n      {\"rank\": %d, \"devices\": %.0f, \"rows\": %.0f, "
                   "\"mpi_bytes_per_step\": %.0f, \"host_device_bytes_per_step\": %.0f, "
                   "\"device_device_bytes_per_step\": %.0f}",
                   r ? "," : "", r, v[R_DEVICES], v[R_ROWS], v[R_MPI], v[R_HOST], v[R_PEER]);
        }
        printf("]}");
    }
    printf("\n  ]\n}\n");
}

int clf_bench_mpi_stencil(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    b.opt = (clf_bench_common){
        .name = "mpi-stencil", .usage = usage, .reps = 3, .quick_reps = 1};
    b.w = b.h = 4096;
    b.steps = 200;
    int rc = clf_bench_parse(&b.opt, argc, argv, OWN, own_option, &b);
    if (rc >= 0)
        return rc;
    rc = 0;
    if (b.opt.quick) {
        b.w = b.h = b.w < 512 ? b.w : 512;
        b.steps = b.steps < 10 ? b.steps : 10;
    }
    clf_bench_mpi_start(&argc, &argv, &b.rank, &b.size);
    /* --trace: a timeline per rank (every rank's fleet is number 0 of its process). */
    clf_status st = CLF_SUCCESS;
    if (clf_bench_trace()) {
        char tag[32];
        snprintf(tag, sizeof tag, "rank%d-%%n", b.rank);
        char *path = clf_bench_trace_name(clf_bench_trace(), tag);
        if (!path || setenv("CLFLEET_TRACE", path, 1) != 0)
            st = CLF_ERROR_OUT_OF_HOST_MEMORY;
        free(path);
    }
    clf_fleet_options fo = CLF_FLEET_OPTIONS_INIT;
    fo.devices = b.opt.devices;
    if (st == CLF_SUCCESS)
        st = clf_fleet_create(&b.fl, &fo);
    if (st != CLF_SUCCESS)
        fprintf(stderr, "clfleet-bench mpi-stencil: rank %d: %s: %s\n", b.rank,
                clf_status_name(st), clf_last_error());
    if (agree(st) != CLF_SUCCESS) {
        clf_fleet_destroy(b.fl);
        MPI_Finalize();
        return st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                        : EXIT_FAILURE;
    }
    size_t n = b.w * b.h;
    if (b.h < 2 * (size_t)b.size) {
        if (b.rank == 0)
            fprintf(stderr, "clfleet-bench mpi-stencil: %zu rows for %d ranks: --size of at "
                            "least %d\n", b.h, b.size, 2 * b.size);
        rc = CLF_BENCH_USAGE;
        goto out;
    }
    st = clf_comm_create(&b.comm, MPI_COMM_WORLD, b.fl, NULL);
    if (st == CLF_SUCCESS)
        st = agree(clf_program_build_source(&b.prog, b.fl, CLF_BENCH_JACOBI_CL, NULL));
    int mem = 1;
    if (b.rank == 0) {
        b.init = malloc(n * sizeof(float));
        mem = b.init != NULL;
        for (int k = 0; k < NFORM; k++) {
            b.res[k] = malloc(n * sizeof(float));
            b.per_rank[k] = malloc((size_t)b.size * NR * sizeof(double));
            mem = mem && b.res[k] && b.per_rank[k];
        }
        if (mem)
            clf_bench_jacobi_init(b.init, n);
    }
    if (st == CLF_SUCCESS)
        st = agree(mem ? CLF_SUCCESS : CLF_ERROR_OUT_OF_HOST_MEMORY);
    if (st != CLF_SUCCESS) {
        rc = clf_bench_fail("mpi-stencil", "setup", st);
        goto out;
    }
    for (int k = 0; k < NFORM && !rc; k++)
        if ((st = run_form(&b, k)) != CLF_SUCCESS)
            rc = clf_bench_fail("mpi-stencil", FORM_NAMES[k], st);
    int checked_host = n <= 1024 * 1024, bad = 0;
    if (!rc && b.rank == 0) {
        for (int k = 1; k < NFORM && !bad; k++)
            for (size_t i = 0; i < n && !bad; i++)
                if (memcmp(&b.res[FORM_ONE][i], &b.res[k][i], sizeof(float))) {
                    fprintf(stderr, "clfleet-bench mpi-stencil: element (%zu, %zu): %.9g in "
                                    "%s, %.9g in %s\n", i % b.w, i / b.w,
                            (double)b.res[FORM_ONE][i], FORM_NAMES[FORM_ONE],
                            (double)b.res[k][i], FORM_NAMES[k]);
                    bad = 1;
                }
        if (!bad && checked_host &&
            !clf_bench_jacobi_ok(b.init, b.w, b.h, b.steps, b.res[FORM_ONE])) {
            fprintf(stderr, "clfleet-bench mpi-stencil: the result differs from the host's C "
                            "loop\n");
            bad = 1;
        }
        if (!bad && b.opt.json)
            print_json(&b, checked_host);
        else if (!bad)
            print_table(&b, checked_host);
        fflush(stdout);
    }
    if (!rc) {
        MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
        rc = bad ? EXIT_FAILURE : 0;
    }
out:
    clf_program_destroy(b.prog);
    clf_comm_destroy(b.comm);
    clf_fleet_destroy(b.fl);
    free(b.init);
    for (int k = 0; k < NFORM; k++) {
        free(b.res[k]);
        free(b.per_rank[k]);
    }
    MPI_Finalize();
    return rc;
}

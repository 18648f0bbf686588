/*
 * mpi-stencil: a 2D 5-point Jacobi over a W x H float grid cut over the ranks of
 * MPI_COMM_WORLD (clf_comm_array_create: each rank a window of rows over its own devices),
 * halos between ranks by MPI, overlapped with the interior (CLF_ARRAY_EXCHANGE_AFTER: the
 * boundary strips run first, their rows travel while the interior computes), or exchanged
 * before each step (--before). Prints per rank its rows, time per step, bytes per step sent
 * and received by MPI and moved between host and devices; rank 0 checks the result against
 * the same steps on the host, bit for bit.
 *
 *   mpirun -np 2 examples/mpi-stencil [--size W H] [--steps S] [--before]
 */
#include <clfleet.h>
#include <clfleet/mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SRC[] =
    "kernel void jac2(global const float *in, global float *out)\n"
    "{\n"
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"
    "    size_t w = get_global_size(0), h = get_global_size(1), i = y * w + x;\n"
    "    float c = in[i];\n"
    "    if (x == 0 || y == 0 || x + 1 == w || y + 1 == h) { out[i] = c; return; }\n"
    "    out[i] = ((in[i - 1] + in[i + 1]) + (in[i - w] + in[i + w])) * 0.25f;\n"
    "}\n";

static void step_ref(const float *in, float *out, size_t w, size_t h)
{
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            size_t i = y * w + x;
            float c = in[i];
            out[i] = (x == 0 || y == 0 || x + 1 == w || y + 1 == h)
                         ? c
                         : ((in[i - 1] + in[i + 1]) + (in[i - w] + in[i + w])) * 0.25f;
        }
}

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "mpi-stencil: %s: %s: %s\n", what, clf_status_name(st), clf_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

static uint64_t host_bytes(clf_fleet *f)
{
    clf_fleet_metrics m;
    if (clf_metrics_fleet(&m, f) != CLF_SUCCESS)
        return 0;
    return m.dir[CLF_DIRECTION_TO_DEVICE].bytes + m.dir[CLF_DIRECTION_FROM_DEVICE].bytes;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t w = 1024, h = 1024;
    int steps = 50, before = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 2 < argc) {
            w = strtoul(argv[i + 1], NULL, 10);
            h = strtoul(argv[i + 2], NULL, 10);
            i += 2;
        } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            steps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--before")) {
            before = 1;
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: mpirun -np N %s [--size W H] [--steps S] [--before]\n",
                        argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (w < 3 || h < (size_t)size * 2 || steps < 1) {
        if (rank == 0)
            fprintf(stderr, "mpi-stencil: a grid of at least 3 x %d and 1 step\n", 2 * size);
        MPI_Finalize();
        return 2;
    }
    clf_fleet *f = NULL;
    clf_comm *c = NULL;
    clf_program *p = NULL;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("clf_fleet_create", st);
    if ((st = clf_comm_create(&c, MPI_COMM_WORLD, f, NULL)) != CLF_SUCCESS)
        return fail("clf_comm_create", st);
    if ((st = clf_program_build_source(&p, f, SRC, NULL)) != CLF_SUCCESS)
        return fail("build", st);
    size_t n = w * h;
    float *x = NULL, *y = NULL;
    if (rank == 0) {
        x = malloc(n * sizeof *x);
        y = malloc(n * sizeof *y);
        if (!x || !y)
            return fail("out of memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        uint32_t s = 12345;
        for (size_t i = 0; i < n; i++) {
            s = s * 1664525u + 1013904223u;
            x[i] = (float)(s >> 22) / 16.0f;
        }
    }
    clf_array_desc d = CLF_ARRAY_DESC_INIT;
    d.elem_size = sizeof(float);
    d.dims = 2;
    d.shape[0] = w;
    d.shape[1] = h;
    d.halo_before = d.halo_after = 1;
    clf_array *a = NULL, *b = NULL;
    if ((st = clf_comm_array_create(&a, c, &d)) != CLF_SUCCESS ||
        (st = clf_comm_array_create(&b, c, &d)) != CLF_SUCCESS)
        return fail("clf_comm_array_create", st);
    if ((st = clf_comm_array_write(c, a, NULL, NULL, x, 0)) != CLF_SUCCESS)
        return fail("clf_comm_array_write", st);
    clf_array_launch_desc ld = CLF_ARRAY_LAUNCH_DESC_INIT;
    ld.kernel = "jac2";
    ld.dims = 2;
    ld.global[0] = w;
    ld.global[1] = h;
    ld.flags = before ? CLF_ARRAY_EXCHANGE_BEFORE : CLF_ARRAY_EXCHANGE_AFTER;
    if (!before && (st = clf_comm_array_exchange(c, a)) != CLF_SUCCESS)
        return fail("clf_comm_array_exchange", st);
    /* This rank's rows, and the halo rows it sends and receives each step. */
    size_t first = 0, rows = 0;
    for (size_t q = 0; q < clf_array_part_count(a); q++) {
        clf_array_part pi;
        clf_array_part_info(&pi, a, q);
        first = q == 0 ? pi.first : first;
        rows += pi.count;
    }
    int nbr = (first > 0) + (first + rows < h);
    uint64_t mpi_bytes = 2 * (uint64_t)nbr * w * sizeof(float); /* sent + received */
    clf_array *in = a, *out = b;
    double t0 = 0;
    uint64_t hb0 = 0;
    for (int k = 0; k <= steps; k++) {
        if (k == 1) { /* step 0 warms up (builds, uploads) */
            clf_array_finish(in);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            hb0 = host_bytes(f);
        }
        clf_arg args[] = {CLF_ARRAY_IN(in), CLF_ARRAY_OUT(out)};
        if ((st = clf_comm_array_launch(c, p, &ld, args, 2)) != CLF_SUCCESS)
            return fail("clf_comm_array_launch", st);
        clf_array *t = in;
        in = out;
        out = t;
    }
    if ((st = clf_array_finish(in)) != CLF_SUCCESS)
        return fail("clf_array_finish", st);
    double per = (MPI_Wtime() - t0) / steps;
    uint64_t hb = host_bytes(f) - hb0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        if (r == rank)
            printf("rank %d: rows %zu..%zu (%zu) on %zu devices: %.3f ms/step, MPI %llu B/step, "
                   "host<->device %.0f B/step\n",
                   rank, first, first + rows - 1, rows, clf_fleet_device_count(f), per * 1e3,
                   (unsigned long long)mpi_bytes, (double)hb / steps);
        fflush(stdout);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if ((st = clf_comm_array_read(c, in, NULL, NULL, y, 0)) != CLF_SUCCESS)
        return fail("clf_comm_array_read", st);
    int bad = 0;
    if (rank == 0) {
        float *u = malloc(n * sizeof *u), *v = malloc(n * sizeof *v);
        if (!u || !v)
            return fail("out of memory", CLF_ERROR_OUT_OF_HOST_MEMORY);
        memcpy(u, x, n * sizeof *u);
        for (int k = 0; k <= steps; k++) {
            step_ref(u, v, w, h);
            float *t = u;
            u = v;
            v = t;
        }
        for (size_t i = 0; i < n && !bad; i++)
            if (memcmp(&u[i], &y[i], sizeof *u)) {
                fprintf(stderr, "mpi-stencil: element (%zu, %zu) is %.9g, the host says %.9g\n",
                        i % w, i / w, (double)y[i], (double)u[i]);
                bad = 1;
            }
        printf("%d ranks, %zu x %zu, %d steps (%s): %s\n", size, w, h, steps,
               before ? "exchange before" : "overlapped", bad ? "WRONG" : "matches the host");
        free(u);
        free(v);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    clf_array_destroy(a);
    clf_array_destroy(b);
    clf_program_destroy(p);
    clf_comm_destroy(c);
    clf_fleet_destroy(f);
    free(x);
    free(y);
    MPI_Finalize();
    return bad;
}

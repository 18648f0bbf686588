/*
 * Example: conjugate gradients on distributed arrays, the data on the devices throughout.
 *
 * Solves A x = b for the 2-D Poisson matrix (the 5-point Laplacian with Dirichlet
 * boundaries) on an N x N grid. The vectors x, r, p and A p are clf_arrays cut by rows over
 * every device; p has a one-row halo, exchanged device to device before each product. The
 * kernels are written for one device (they index with get_global_id() and read the grid's
 * size from get_global_size()) and run unchanged on each device's rows
 * (clf_array_launch()). The two dot products of a step are reductions over arrays
 * (clf_array_reduce(), through the collectives): only two numbers a step reach the host.
 *
 * The same iteration runs on the host in double precision; the example checks that the
 * device solution solves the system (its normwise backward error, recomputed on the host in
 * double, below 1e-5) and that it matches the host solution (within 1e-4 of its largest
 * element). The exit status is 1 on a mismatch, 77 without a
 * device (unless CLFLEET_REQUIRE_DEVICES is set).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { N = 192, MAX_STEPS = 600 };

static const char *const source =
    "/* q = A p: 4 p(x,y) minus its four neighbours (0 beyond the edge). */\n"
    "__kernel void laplace(__global const float *p, __global float *q)\n"
    "{\n"
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"
    "    size_t w = get_global_size(0), h = get_global_size(1), i = y * w + x;\n"
    "    float s = 4.0f * p[i];\n"
    "    if (x > 0) s -= p[i - 1];\n"
    "    if (x + 1 < w) s -= p[i + 1];\n"
    "    if (y > 0) s -= p[i - w];\n"
    "    if (y + 1 < h) s -= p[i + w];\n"
    "    q[i] = s;\n"
    "}\n"
    "/* out = a .* b (for a dot product). */\n"
    "__kernel void mul(__global const float *a, __global const float *b, __global float *out)\n"
    "{\n"
    "    size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);\n"
    "    out[i] = a[i] * b[i];\n"
    "}\n"
    "/* x += alpha p; r -= alpha q. */\n"
    "__kernel void update(__global float *x, __global float *r, __global const float *p,\n"
    "                     __global const float *q, float alpha)\n"
    "{\n"
    "    size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);\n"
    "    x[i] += alpha * p[i];\n"
    "    r[i] -= alpha * q[i];\n"
    "}\n"
    "/* p = r + beta p. */\n"
    "__kernel void direction(__global float *p, __global const float *r, float beta)\n"
    "{\n"
    "    size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);\n"
    "    p[i] = r[i] + beta * p[i];\n"
    "}\n";

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "cg: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

/* q = A p on the host. */
static void laplace_host(const double *p, double *q)
{
    for (size_t y = 0; y < N; y++)
        for (size_t x = 0; x < N; x++) {
            size_t i = y * N + x;
            double s = 4.0 * p[i];
            s -= x > 0 ? p[i - 1] : 0.0;
            s -= x + 1 < N ? p[i + 1] : 0.0;
            s -= y > 0 ? p[i - N] : 0.0;
            s -= y + 1 < N ? p[i + N] : 0.0;
            q[i] = s;
        }
}

static double dot_host(const double *a, const double *b)
{
    double s = 0.0;
    for (size_t i = 0; i < (size_t)N * N; i++)
        s += a[i] * b[i];
    return s;
}

/* The same iteration on the host, in double precision: steps taken. */
static int cg_host(const double *b, double *x, double tol)
{
    size_t n = (size_t)N * N;
    double *r = malloc(n * sizeof *r), *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q);
    int step = -1;
    if (r && p && q) {
        memset(x, 0, n * sizeof *x);
        memcpy(r, b, n * sizeof *r);
        memcpy(p, b, n * sizeof *p);
        double rs = dot_host(r, r), stop = tol * tol * rs;
        for (step = 0; step < MAX_STEPS && rs > stop; step++) {
            laplace_host(p, q);
            double alpha = rs / dot_host(p, q);
            for (size_t i = 0; i < n; i++) {
                x[i] += alpha * p[i];
                r[i] -= alpha * q[i];
            }
            double rs_new = dot_host(r, r), beta = rs_new / rs;
            for (size_t i = 0; i < n; i++)
                p[i] = r[i] + beta * p[i];
            rs = rs_new;
        }
    }
    free(r);
    free(p);
    free(q);
    return step;
}

static uint64_t moved(const clf_fleet_metrics *m, clf_direction dir)
{
    return m->dir[dir].bytes;
}

typedef struct solver {
    clf_fleet *f;
    clf_program *prog;
    clf_array *x, *r, *p, *q, *t; /* t: element-wise products for the dot products */
} solver;

static clf_status run(solver *s, const char *kernel, const clf_arg *args, size_t nargs,
                      unsigned flags)
{
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    d.kernel = kernel;
    d.dims = 2;
    d.global[0] = N;
    d.global[1] = N;
    d.flags = flags;
    return clf_array_launch(s->f, s->prog, &d, args, nargs);
}

/* *out = a . b, reduced on the devices. */
static clf_status dot(solver *s, clf_array *a, clf_array *b, float *out)
{
    clf_arg args[] = {CLF_ARRAY_IN(a), CLF_ARRAY_IN(b), CLF_ARRAY_OUT(s->t)};
    clf_status st = run(s, "mul", args, 3, 0);
    if (st == CLF_SUCCESS)
        st = clf_array_reduce(out, NULL, s->t, CLF_TYPE_FLOAT, CLF_REDUCE_SUM);
    return st;
}

/* CG on the devices: steps taken, or -1 (the status in *st). */
static int cg_fleet(solver *s, const float *b, float tol, clf_status *st)
{
    int step = 0;
    float rs = 0.0f, pq, rs_new;
    const char *what = "clf_array_write";
    float *zero = calloc((size_t)N * N, sizeof *zero);
    if (!zero) {
        *st = CLF_ERROR_OUT_OF_HOST_MEMORY;
        return -1;
    }
    *st = clf_array_write(s->x, NULL, NULL, zero);
    free(zero);
    if (*st == CLF_SUCCESS)
        *st = clf_array_write(s->r, NULL, NULL, b);
    if (*st == CLF_SUCCESS)
        *st = clf_array_write(s->p, NULL, NULL, b);
    if (*st == CLF_SUCCESS)
        *st = dot(s, s->r, s->r, &rs);
    float stop = tol * tol * rs;
    for (; *st == CLF_SUCCESS && step < MAX_STEPS && rs > stop; step++) {
        clf_arg lap[] = {CLF_ARRAY_IN(s->p), CLF_ARRAY_OUT(s->q)};
        what = "laplace";
        if ((*st = run(s, "laplace", lap, 2, CLF_ARRAY_EXCHANGE_BEFORE)) != CLF_SUCCESS)
            break;
        what = "p . q";
        if ((*st = dot(s, s->p, s->q, &pq)) != CLF_SUCCESS)
            break;
        float alpha = rs / pq;
        clf_arg upd[] = {CLF_ARRAY_INOUT(s->x), CLF_ARRAY_INOUT(s->r), CLF_ARRAY_IN(s->p),
                         CLF_ARRAY_IN(s->q), CLF_SCALAR(&alpha)};
        what = "update";
        if ((*st = run(s, "update", upd, 5, 0)) != CLF_SUCCESS)
            break;
        what = "r . r";
        if ((*st = dot(s, s->r, s->r, &rs_new)) != CLF_SUCCESS)
            break;
        float beta = rs_new / rs;
        clf_arg dir[] = {CLF_ARRAY_INOUT(s->p), CLF_ARRAY_IN(s->r), CLF_SCALAR(&beta)};
        what = "direction";
        if ((*st = run(s, "direction", dir, 3, 0)) != CLF_SUCCESS)
            break;
        rs = rs_new;
    }
    if (*st != CLF_SUCCESS) {
        fail(what, *st);
        return -1;
    }
    return step;
}

int main(void)
{
    const size_t n = (size_t)N * N;
    float *b = malloc(n * sizeof *b), *x = malloc(n * sizeof *x);
    double *bd = malloc(n * sizeof *bd), *xd = malloc(n * sizeof *xd),
           *ax = malloc(2 * n * sizeof *ax);
    solver s = {0};
    int rc = 1;
    clf_status st;
    if (!b || !x || !bd || !xd || !ax) {
        fprintf(stderr, "cg: out of memory\n");
        goto out;
    }
    /* A smooth right-hand side with a point source. */
    for (size_t i = 0; i < n; i++) {
        size_t px = i % N, py = i / N;
        b[i] = (float)(sin(3.0 * (double)px / N) * cos(2.0 * (double)py / N)) +
               (px == N / 3 && py == N / 2 ? 10.0f : 0.0f);
        bd[i] = b[i];
    }
    if ((st = clf_fleet_create(&s.f, NULL)) != CLF_SUCCESS) {
        rc = fail("clf_fleet_create", st);
        goto out;
    }
    if ((st = clf_program_build_source(&s.prog, s.f, source, NULL)) != CLF_SUCCESS) {
        rc = fail("clf_program_build_source", st);
        goto out;
    }
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = sizeof(float);
    ad.dims = 2;
    ad.shape[0] = N;
    ad.shape[1] = N;
    clf_array **vec[] = {&s.x, &s.r, &s.q, &s.t};
    for (size_t i = 0; i < sizeof vec / sizeof *vec; i++)
        if ((st = clf_array_create(vec[i], s.f, &ad)) != CLF_SUCCESS) {
            rc = fail("clf_array_create", st);
            goto out;
        }
    ad.halo_before = ad.halo_after = 1; /* the product reads the rows above and below */
    if ((st = clf_array_create(&s.p, s.f, &ad)) != CLF_SUCCESS) {
        rc = fail("clf_array_create", st);
        goto out;
    }
    printf("cg: %d x %d Poisson grid over %zu part(s):", N, N, clf_array_part_count(s.p));
    for (size_t i = 0; i < clf_array_part_count(s.p); i++) {
        clf_array_part part;
        if (clf_array_part_info(&part, s.p, i) == CLF_SUCCESS)
            printf(" rows %zu-%zu on device %zu;", part.first, part.first + part.count - 1,
                   part.device);
    }
    printf("\n");
    clf_fleet_metrics m0, m1;
    clf_metrics_fleet(&m0, s.f);
    int steps = cg_fleet(&s, b, 1e-5f, &st);
    if (steps < 0)
        goto out;
    if ((st = clf_array_read(s.x, NULL, NULL, x)) != CLF_SUCCESS) {
        rc = fail("clf_array_read", st);
        goto out;
    }
    clf_metrics_fleet(&m1, s.f);
    int hsteps = cg_host(bd, xd, 1e-5); /* the host's own solution, to compare with */
    /* The device solution must solve the system, checked on the host in double: ax holds
     * it, then A times it. */
    for (size_t i = 0; i < n; i++)
        ax[i] = x[i];
    laplace_host(ax, ax + n);
    /* In float, A x loses digits to cancellation (|x| is about 1e3 where |b| is about 1):
     * the normwise backward error ||b - A x|| / (||A|| ||x|| + ||b||) (||A|| <= 8) is what
     * float arithmetic can make small; it is about 1e-7 for a converged solve. */
    double res = 0.0, bn = 0.0, xx = 0.0;
    for (size_t i = 0; i < n; i++) {
        res += (bd[i] - ax[n + i]) * (bd[i] - ax[n + i]);
        bn += bd[i] * bd[i];
        xx += ax[i] * ax[i];
    }
    res = sqrt(res) / (8.0 * sqrt(xx) + sqrt(bn));
    double diff = 0.0, xn = 0.0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs(xd[i] - x[i]));
        xn = fmax(xn, fabs(xd[i]));
    }
    printf("cg: %d steps on the fleet (%d on the host), backward error %.2e, "
           "max difference from the host solution %.2e (of %.2e)\n",
           steps, hsteps, res, diff, xn);
    printf("cg: host<->device %.1f MB, device<->device %.1f MB (the vectors are %.1f MB)\n",
           (double)(moved(&m1, CLF_DIRECTION_TO_DEVICE) + moved(&m1, CLF_DIRECTION_FROM_DEVICE) -
                    moved(&m0, CLF_DIRECTION_TO_DEVICE) - moved(&m0, CLF_DIRECTION_FROM_DEVICE)) /
               1e6,
           (double)(moved(&m1, CLF_DIRECTION_PEER) - moved(&m0, CLF_DIRECTION_PEER)) / 1e6,
           (double)(n * sizeof(float)) / 1e6);
    rc = res < 1e-5 && diff <= 1e-4 * xn ? 0 : 1;
    if (rc)
        fprintf(stderr, "cg: the fleet's solution is wrong\n");
out:
    clf_array_destroy(s.x);
    clf_array_destroy(s.r);
    clf_array_destroy(s.p);
    clf_array_destroy(s.q);
    clf_array_destroy(s.t);
    clf_program_destroy(s.prog);
    clf_fleet_destroy(s.f);
    free(b);
    free(x);
    free(bd);
    free(xd);
    free(ax);
    return rc;
}

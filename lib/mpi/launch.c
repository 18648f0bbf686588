/*
 * Launches across ranks (clf_comm_launch): the range along the split dimension is cut over
 * the ranks, by each rank's learned speed for the kernel (units per second of its last
 * launch, exchanged with MPI_Iallgather; compute units x clock of its devices before the
 * first), or dealt on demand in chunks through an MPI atomic counter on rank 0
 * (CLF_COMM_DYNAMIC, MPI_Fetch_and_op). Each rank runs its part with clf_launch() on a
 * sub-range (clf_launch_desc version 3: the whole range's global ids); reductions are
 * combined across ranks in rank order (the same bits on every rank); outputs are gathered
 * to the root with CLF_COMM_GATHER. One status for all ranks (clf__comm_agree).
 */
#include "comm.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dynamic mode: about this many chunks per rank. */
#define CHUNKS_PER_RANK 8

static struct clf__comm_speed *speed_of(clf_comm *c, const char *kernel, int make)
{
    for (struct clf__comm_speed *s = c->speeds; s; s = s->next)
        if (strcmp(s->kernel, kernel) == 0)
            return s;
    if (!make)
        return NULL;
    size_t n = strlen(kernel) + 1;
    struct clf__comm_speed *s = malloc(sizeof *s + n);
    if (!s)
        return NULL;
    memcpy(s->kernel, kernel, n);
    s->units_per_s = 0;
    s->next = c->speeds;
    c->speeds = s;
    return s;
}

clf_status clf__comm_same(clf_comm *c, const char *what, const char *names, int n,
                          const long long *vals)
{
    long long in[32], out[32];
    if (n > 16)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: too many values", what);
    for (int i = 0; i < n; i++) {
        in[i] = vals[i];
        in[n + i] = vals[i] == LLONG_MIN ? LLONG_MAX : -vals[i];
    }
    MPI_Request r;
    int err = MPI_Iallreduce(in, out, 2 * n, MPI_LONG_LONG, MPI_MIN, c->comm, &r);
    if (err != MPI_SUCCESS)
        return clf__comm_mpi_fail(c, err, what);
    clf_status st = clf__comm_wait(c, 1, &r, what);
    if (st != CLF_SUCCESS)
        return st;
    for (int i = 0; i < n; i++)
        if (out[i] != -out[n + i]) {
            const char *nm = names;
            for (int k = 0; k < i && nm; k++) {
                nm = strchr(nm, ',');
                nm = nm ? nm + 1 : NULL;
            }
            int len = nm ? (int)strcspn(nm, ",") : 1;
            return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                 "%s: the ranks disagree on %.*s (from %lld to %lld); it must be "
                                 "the same on every rank", what, len, nm ? nm : "?", out[i],
                                 -out[n + i]);
        }
    return CLF_SUCCESS;
}

/* ---- reductions: identity and combination of clf_type elements -------------------------- */

#define RED_CASES(X)                                                                           \
    X(CLF_TYPE_INT32, int32_t, INT32_MAX, INT32_MIN)                                           \
    X(CLF_TYPE_UINT32, uint32_t, UINT32_MAX, 0)                                                \
    X(CLF_TYPE_INT64, int64_t, INT64_MAX, INT64_MIN)                                           \
    X(CLF_TYPE_FLOAT, float, INFINITY, -INFINITY)                                              \
    X(CLF_TYPE_DOUBLE, double, INFINITY, -INFINITY)

/* Fill n elements with the identity of op. */
static void red_identity(void *dst, size_t n, unsigned type, unsigned op)
{
    switch (type) {
#define X(T, C, HI, LO)                                                                        \
    case T:                                                                                    \
        for (size_t i = 0; i < n; i++)                                                         \
            ((C *)dst)[i] = op == CLF_REDUCE_SUM    ? (C)0                                      \
                            : op == CLF_REDUCE_PROD ? (C)1                                      \
                            : op == CLF_REDUCE_MIN  ? (C)(HI)                                   \
                                                    : (C)(LO);                                  \
        break;
        RED_CASES(X)
#undef X
    }
}

/* acc[i] = acc[i] op x[i] for n elements. */
static void red_combine(void *acc, const void *x, size_t n, unsigned type, unsigned op)
{
    switch (type) {
#define X(T, C, HI, LO)                                                                        \
    case T: {                                                                                  \
        C *a = acc;                                                                            \
        const C *b = x;                                                                        \
        for (size_t i = 0; i < n; i++)                                                         \
            a[i] = op == CLF_REDUCE_SUM    ? (C)(a[i] + b[i])                                  \
                   : op == CLF_REDUCE_PROD ? (C)(a[i] * b[i])                                  \
                   : op == CLF_REDUCE_MIN  ? (b[i] < a[i] ? b[i] : a[i])                       \
                                           : (b[i] > a[i] ? b[i] : a[i]);                      \
        break;                                                                                 \
    }
        RED_CASES(X)
#undef X
    }
}

/* ---- where a partitioned output's units lie (as clf_launch lays them out) ---------------- */

/* Unit j of the split dimension is the bytes [j / scale * unit, (j / scale + 1) * unit) of
 * each of `rows` rows of `pitch` bytes. */
typedef struct {
    size_t unit, pitch, rows, scale;
} layout;

static int is_output(const clf_arg *a)
{
    return a->kind == CLF_ARG_KIND_OUT || a->kind == CLF_ARG_KIND_INOUT ||
           a->kind == CLF_ARG_KIND_OUT_PER_GROUP;
}

/* The layout of output a; 0, or -1 when its sizes overflow or do not fit the range (the
 * launch itself then fails on that). */
static int out_layout(const clf_launch_desc *d, unsigned split, const clf_arg *a, layout *y)
{
    y->unit = a->unit;
    y->pitch = a->pitch;
    y->rows = a->pitch ? a->size / a->pitch : 1;
    y->scale = 1;
    if (a->kind != CLF_ARG_KIND_OUT_PER_GROUP)
        return 0;
    size_t below = 1, above = 1, n = 0;
    if (d->local[0] == 0)
        return -1;
    for (unsigned x = 0; x < d->dims; x++) {
        size_t g = d->global[x] / d->local[x];
        if (x < split && __builtin_mul_overflow(below, g, &below))
            return -1;
        if (x > split && __builtin_mul_overflow(above, g, &above))
            return -1;
        if (x == split)
            n = g;
    }
    if (__builtin_mul_overflow(a->unit, below, &y->unit) ||
        __builtin_mul_overflow(y->unit, n, &y->pitch))
        return -1;
    y->rows = above;
    y->pitch = above > 1 ? y->pitch : 0;
    y->scale = d->local[split];
    return 0;
}

/* Bytes of the units [off, off + len) of y, all rows. */
static size_t run_bytes(const layout *y, uint64_t off, uint64_t len)
{
    return (size_t)((off + len) / y->scale - off / y->scale) * y->unit * y->rows;
}

/* Copy the units [off, off + len) of host array `base` to or from packed memory. */
static void pack_run(const layout *y, unsigned char *base, uint64_t off, uint64_t len,
                     unsigned char *packed, int unpack)
{
    size_t lo = (size_t)(off / y->scale) * y->unit, n = run_bytes(y, off, len) / y->rows;
    for (size_t r = 0; r < y->rows; r++) {
        unsigned char *h = base + r * y->pitch + lo, *p = packed + r * n;
        if (unpack)
            memcpy(h, p, n);
        else
            memcpy(p, h, n);
    }
}

/* ---- the launch ---------------------------------------------------------------------------- */

typedef struct {
    clf_comm *c;
    clf_launch_desc d;
    unsigned split;
    uint64_t total, align;
    const clf_arg *args;
    size_t nargs;
    unsigned flags;
    int root;
    clf_arg *my;              /* args with reductions pointing at red_part */
    unsigned char **red_part; /* per argument: this rank's combined partial, or NULL */
    unsigned char **red_tmp;  /* per argument: one chunk launch's result (dynamic) */
    uint64_t (*runs)[2];      /* the runs this rank did (off, len) */
    long long *gall;          /* CLF_COMM_GATHER: 3 values per rank */
    size_t nruns, cap_runs;
    clf_launch_report rep;    /* this rank's launches, summed */
    int have_rep;
    double seconds;
    uint64_t units;
} job;

/* Add one chunk launch's report to the rank's (the devices are the same in every launch). */
static void sum_report(job *J, const clf_launch_report *r)
{
    if (!J->have_rep) {
        J->rep = *r;
        J->have_rep = 1;
        return;
    }
    clf_launch_report *s = &J->rep;
    s->total_units += r->total_units;
    s->done_units += r->done_units;
    s->failed_devices += r->failed_devices;
    s->requeued_units += r->requeued_units;
    s->makespan_s += r->makespan_s;
    for (size_t i = 0; i < s->num_devices && i < r->num_devices; i++) {
        clf_device_report *a = &s->dev[i];
        const clf_device_report *b = &r->dev[i];
        a->units += b->units;
        a->items += b->items;
        a->chunks += b->chunks;
        a->stolen += b->stolen;
        a->busy_s += b->busy_s;
        a->bytes_to_device += b->bytes_to_device;
        a->bytes_from_device += b->bytes_from_device;
        a->to_device_s += b->to_device_s;
        a->from_device_s += b->from_device_s;
        a->failed |= b->failed;
        a->requeued_units += b->requeued_units;
        if (b->status != CLF_SUCCESS && a->status == CLF_SUCCESS) {
            a->status = b->status;
            a->cl_error = b->cl_error;
            memcpy(a->error, b->error, sizeof a->error);
        }
    }
}

/* Run this rank's units [off, off + len) with clf_launch, reductions combined into red_part. */
static clf_status run_part(job *J, clf_program *prog, uint64_t off, uint64_t len)
{
    clf_launch_desc d = J->d;
    d.range_first = (size_t)off;
    d.range_units = (size_t)len;
    int dyn = (J->flags & CLF_COMM_DYNAMIC) != 0;
    for (size_t i = 0; i < J->nargs; i++)
        if (J->my[i].kind == CLF_ARG_KIND_REDUCE)
            J->my[i].host = dyn ? J->red_tmp[i] : J->red_part[i];
    clf_launch_report r;
    double t = clf__comm_now();
    clf_status st = clf_launch(clf_comm_fleet(J->c), prog, &d, J->my, J->nargs, &r);
    J->seconds += clf__comm_now() - t;
    sum_report(J, &r);
    if (st != CLF_SUCCESS)
        return st;
    J->units += len;
    for (size_t i = 0; dyn && i < J->nargs; i++)
        if (J->my[i].kind == CLF_ARG_KIND_REDUCE)
            red_combine(J->red_part[i], J->red_tmp[i], J->args[i].size, J->args[i].type,
                        J->args[i].op);
    if (J->nruns == J->cap_runs) {
        size_t cap = J->cap_runs ? 2 * J->cap_runs : 8;
        void *p = realloc(J->runs, cap * sizeof *J->runs);
        if (!p)
            return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_comm_launch: out of memory");
        J->runs = p;
        J->cap_runs = cap;
    }
    J->runs[J->nruns][0] = off;
    J->runs[J->nruns][1] = len;
    J->nruns++;
    return CLF_SUCCESS;
}

/* Sum of compute units x clock (MHz) of the devices the launch may use. */
static double capacity(const job *J)
{
    clf_fleet *f = clf_comm_fleet(J->c);
    size_t n = J->d.devices ? J->d.num_devices : clf_fleet_device_count(f);
    double cap = 0;
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, J->d.devices ? J->d.devices[i] : i) == CLF_SUCCESS)
            cap += (double)(in.compute_units ? in.compute_units : 1) *
                   (double)(in.clock_mhz ? in.clock_mhz : 1);
    }
    return cap > 0 ? cap : 1;
}

/*
 * Static: every rank's share [first, first + units), the ranks' learned speeds (all known) or
 * capacities as weights, boundaries rounded to multiples of the alignment.
 */
static clf_status run_static(job *J, clf_program *prog, uint64_t *first, uint64_t *units)
{
    clf_comm *c = J->c;
    clf_status st = CLF_SUCCESS;
    const struct clf__comm_speed *sp = speed_of(c, J->d.kernel, 0);
    double mine[2] = {sp ? sp->units_per_s : 0, capacity(J)};
    double *all = malloc(2 * (size_t)c->size * sizeof *all);
    if (!all)
        return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_comm_launch: out of memory");
    MPI_Request r;
    int err = MPI_Iallgather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, c->comm, &r);
    clf_status s2 = err != MPI_SUCCESS
                        ? clf_set_error(CLF_ERROR_MPI, "clf_comm_launch: MPI_Iallgather failed")
                        : clf__comm_wait(c, 1, &r, "clf_comm_launch: speeds");
    if (s2 != CLF_SUCCESS) {
        free(all);
        return s2;
    }
    int learned = 1;
    double wsum = 0, before = 0;
    for (int k = 0; k < c->size; k++)
        learned &= all[2 * k] > 0 && isfinite(all[2 * k]);
    for (int k = 0; k < c->size; k++)
        wsum += all[2 * k + (learned ? 0 : 1)];
    for (int k = 0; k < c->rank; k++)
        before += all[2 * k + (learned ? 0 : 1)];
    double w = all[2 * c->rank + (learned ? 0 : 1)];
    free(all);
    /* Boundary of the ranks before k: the share of their weights, rounded to the alignment. */
    uint64_t a = J->align, blocks = (J->total + a - 1) / a;
    uint64_t lo = (uint64_t)floor((double)blocks * (before / wsum) + 0.5) * a;
    uint64_t hi = c->rank == c->size - 1
                      ? J->total
                      : (uint64_t)floor((double)blocks * ((before + w) / wsum) + 0.5) * a;
    lo = lo > J->total ? J->total : lo;
    hi = hi > J->total ? J->total : hi < lo ? lo : hi;
    *first = lo;
    *units = hi - lo;
    if (*units)
        st = run_part(J, prog, lo, hi - lo);
    return st;
}

/* Dynamic: chunks dealt by an atomic counter on rank 0 until the range is taken. */
static clf_status run_dynamic(job *J, clf_program *prog, uint64_t *chunks)
{
    clf_comm *c = J->c;
    clf_status st = CLF_SUCCESS;
    uint64_t *base = NULL;
    MPI_Win win;
    MPI_Aint bytes = c->rank == 0 ? (MPI_Aint)sizeof(uint64_t) : 0;
    int err = MPI_Win_allocate(bytes, sizeof(uint64_t), MPI_INFO_NULL, c->comm, &base, &win);
    if (err != MPI_SUCCESS)
        return clf__comm_mpi_fail(c, err, "clf_comm_launch: MPI_Win_allocate");
    if (c->rank == 0)
        *base = 0;
    /* The counter is zero before anyone takes a chunk: a barrier that also agrees. */
    clf_status agreed = clf__comm_agree(c, st, "clf_comm_launch");
    uint64_t a = J->align, chunk = J->total / ((uint64_t)c->size * CHUNKS_PER_RANK);
    chunk = chunk < 1 ? 1 : chunk;
    chunk = (chunk + a - 1) / a * a;
    if (agreed == CLF_SUCCESS) {
        MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
        for (;;) {
            /* A fetch-and-add as a request (MPI_Rget_accumulate), waited for under the
             * communicator's deadline: a rank 0 that died fails this one instead of hanging
             * it in MPI_Win_flush. */
            uint64_t got = 0;
            MPI_Request rq;
            err = MPI_Rget_accumulate(&chunk, 1, MPI_UINT64_T, &got, 1, MPI_UINT64_T, 0, 0, 1,
                                      MPI_UINT64_T, MPI_SUM, win, &rq);
            if (err != MPI_SUCCESS) {
                st = clf__comm_mpi_fail(c, err, "clf_comm_launch: MPI_Rget_accumulate");
                break;
            }
            st = clf__comm_wait(c, 1, &rq, "clf_comm_launch: the chunk counter");
            if (st != CLF_SUCCESS)
                break;
            if (got >= J->total)
                break;
            uint64_t len = J->total - got < chunk ? J->total - got : chunk;
            st = run_part(J, prog, got, len);
            if (st != CLF_SUCCESS)
                break;
            ++*chunks;
        }
        if (!c->broken) /* else its pending access to a dead rank could block it */
            MPI_Win_unlock_all(win);
    } else {
        st = agreed;
    }
    /* Every rank has stopped taking chunks before the window goes. */
    clf_status after = clf__comm_agree(c, st, "clf_comm_launch");
    if (!c->broken)
        MPI_Win_free(&win);
    return agreed != CLF_SUCCESS ? agreed : after;
}

/* Combine the ranks' reduction partials in rank order into the callers' results. */
static clf_status reduce_across(job *J)
{
    clf_comm *c = J->c;
    for (size_t i = 0; i < J->nargs; i++) {
        const clf_arg *a = &J->args[i];
        if (a->kind != CLF_ARG_KIND_REDUCE)
            continue;
        size_t bytes = a->size * clf_type_size((clf_type)a->type);
        if (bytes > INT_MAX)
            return clf_set_error(CLF_ERROR_SIZE_OVERFLOW,
                                 "'%s' argument %zu: a reduction of %zu bytes is over MPI's "
                                 "count", J->d.kernel, i, bytes);
        unsigned char *all = malloc(bytes * (size_t)c->size);
        int ok = all != NULL, okall = 0;
        MPI_Request r;
        /* Every rank must have the memory before the gather. */
        if (MPI_Iallreduce(&ok, &okall, 1, MPI_INT, MPI_MIN, c->comm, &r) != MPI_SUCCESS ||
            clf__comm_wait(c, 1, &r, "clf_comm_launch: reduction") != CLF_SUCCESS || !okall) {
            free(all);
            return okall || c->broken ? CLF_ERROR_MPI
                                      : clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY,
                                                      "clf_comm_launch: out of memory on a "
                                                      "rank for a reduction");
        }
        clf_status st =
            MPI_Iallgather(J->red_part[i], (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                           c->comm, &r) != MPI_SUCCESS
                ? clf_set_error(CLF_ERROR_MPI, "clf_comm_launch: MPI_Iallgather failed")
                : clf__comm_wait(c, 1, &r, "clf_comm_launch: reduction");
        if (st == CLF_SUCCESS) {
            memcpy(a->host, all, bytes);
            for (int k = 1; k < c->size; k++)
                red_combine(a->host, all + (size_t)k * bytes, a->size, a->type, a->op);
        }
        free(all);
        if (st != CLF_SUCCESS)
            return st;
    }
    return CLF_SUCCESS;
}

/*
 * CLF_COMM_GATHER: the root learns every rank's runs, then each output's packed runs, and
 * unpacks them into its host arrays (its own runs are in place already).
 */
static clf_status gather(job *J)
{
    clf_comm *c = J->c;
    int P = c->size, me = c->rank, root = J->root;
    int *cnt = calloc((size_t)P, sizeof *cnt), *disp = calloc((size_t)P, sizeof *disp);
    uint64_t (*runs)[2] = NULL;
    unsigned char *buf = NULL;
    int n = (int)J->nruns * 2, ok = cnt && disp && J->nruns <= INT_MAX / 2;
    clf_status st = CLF_SUCCESS;
    MPI_Request r;
    /* How many runs each rank did, and the largest packed size anyone sends. */
    size_t mybytes = 0;
    for (size_t i = 0; i < J->nargs; i++) {
        layout y;
        if (!is_output(&J->args[i]) || out_layout(&J->d, J->split, &J->args[i], &y))
            continue;
        size_t b = 0;
        for (size_t k = 0; k < J->nruns; k++)
            b += run_bytes(&y, J->runs[k][0], J->runs[k][1]);
        mybytes = b > mybytes ? b : mybytes;
    }
    long long in[3] = {n, (long long)mybytes, ok ? 1 : 0}, *all = J->gall; /* prepare() */
    if (MPI_Iallgather(in, 3, MPI_LONG_LONG, all, 3, MPI_LONG_LONG, c->comm, &r) !=
            MPI_SUCCESS ||
        (st = clf__comm_wait(c, 1, &r, "clf_comm_launch: gather")) != CLF_SUCCESS) {
        free(cnt);
        free(disp);
        return st != CLF_SUCCESS ? st : clf_set_error(CLF_ERROR_MPI, "MPI_Iallgather failed");
    }
    long long nall = 0, most = 0, sum = 0;
    for (int k = 0; k < P; k++) {
        ok &= all[3 * k + 2] != 0;
        nall += all[3 * k];
        most = all[3 * k + 1] > most ? all[3 * k + 1] : most;
        sum += k == root ? 0 : all[3 * k + 1];
    }
    /* The root takes every rank's packed bytes at once (MPI counts are ints). */
    if (sum > INT_MAX || nall > INT_MAX) {
        st = clf_set_error(CLF_ERROR_SIZE_OVERFLOW,
                           "clf_comm_launch: gathering %lld bytes to the root is over MPI's "
                           "count; gather fewer outputs per launch", sum);
        ok = 0;
    }
    if (ok) {
        runs = malloc(((me == root ? (size_t)nall / 2 : 0) + 1) * sizeof *runs);
        buf = malloc((size_t)(me == root ? sum : most) + 1);
        ok = runs && buf;
    }
    int okall = 0;
    if (MPI_Iallreduce(&ok, &okall, 1, MPI_INT, MPI_MIN, c->comm, &r) != MPI_SUCCESS ||
        clf__comm_wait(c, 1, &r, "clf_comm_launch: gather") != CLF_SUCCESS || !okall) {
        if (st == CLF_SUCCESS)
            st = c->broken ? CLF_ERROR_MPI
                           : clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY,
                                           "clf_comm_launch: gather: out of memory or over "
                                           "MPI's count on a rank");
        goto out;
    }
    for (int k = 0, at = 0; k < P; k++) {
        cnt[k] = (int)all[3 * k];
        disp[k] = at;
        at += cnt[k];
    }
    if (MPI_Igatherv(J->runs, n, MPI_UINT64_T, runs, cnt, disp, MPI_UINT64_T, root, c->comm,
                     &r) != MPI_SUCCESS ||
        (st = clf__comm_wait(c, 1, &r, "clf_comm_launch: gather")) != CLF_SUCCESS) {
        st = st != CLF_SUCCESS ? st : clf_set_error(CLF_ERROR_MPI, "MPI_Igatherv failed");
        goto out;
    }
    for (size_t i = 0; i < J->nargs; i++) {
        layout y;
        const clf_arg *a = &J->args[i];
        if (!is_output(a) || out_layout(&J->d, J->split, a, &y))
            continue;
        size_t at = 0;
        if (me != root)
            for (size_t k = 0; k < J->nruns; k++) {
                pack_run(&y, a->host, J->runs[k][0], J->runs[k][1], buf + at, 0);
                at += run_bytes(&y, J->runs[k][0], J->runs[k][1]);
            }
        for (int k = 0, d = 0, rk = 0; k < P; k++) {
            size_t b = 0;
            for (int j = 0; me == root && j < cnt[k] / 2; j++, rk++)
                b += run_bytes(&y, runs[rk][0], runs[rk][1]);
            cnt[k] = k == root ? 0 : (int)b;
            disp[k] = d;
            d += cnt[k];
        }
        if (MPI_Igatherv(buf, me == root ? 0 : (int)at, MPI_BYTE, buf, cnt, disp, MPI_BYTE, root,
                         c->comm, &r) != MPI_SUCCESS ||
            (st = clf__comm_wait(c, 1, &r, "clf_comm_launch: gather")) != CLF_SUCCESS) {
            st = st != CLF_SUCCESS ? st : clf_set_error(CLF_ERROR_MPI, "MPI_Igatherv failed");
            goto out;
        }
        if (me == root) {
            at = 0;
            for (int k = 0, rk = 0; k < P; k++)
                for (int j = 0; j < (int)all[3 * k] / 2; j++, rk++) {
                    if (k != root) {
                        pack_run(&y, a->host, runs[rk][0], runs[rk][1], buf + at, 1);
                        at += run_bytes(&y, runs[rk][0], runs[rk][1]);
                    }
                }
        }
        /* The counts were overwritten: restore the runs' counts for the next argument. */
        for (int k = 0; k < P; k++)
            cnt[k] = (int)all[3 * k];
    }
out:
    free(cnt);
    free(disp);
    free(runs);
    free(buf);
    return st;
}

/* Every rank's report, and the launch's makespan and imbalance. */
static clf_status fill_report(job *J, uint64_t first, uint64_t units, uint64_t chunks,
                              clf_comm_launch_report *out)
{
    clf_comm *c = J->c;
    uint64_t mine[4] = {first, units, chunks, 0};
    memcpy(&mine[3], &J->seconds, sizeof J->seconds);
    uint64_t *all = malloc(4 * (size_t)c->size * sizeof *all);
    clf_comm_rank_report *rk = calloc((size_t)c->size, sizeof *rk);
    int ok = all && rk, okall = 0;
    MPI_Request r;
    clf_status st = CLF_SUCCESS;
    if (MPI_Iallreduce(&ok, &okall, 1, MPI_INT, MPI_MIN, c->comm, &r) != MPI_SUCCESS ||
        (st = clf__comm_wait(c, 1, &r, "clf_comm_launch: report")) != CLF_SUCCESS || !okall) {
        free(all);
        free(rk);
        return st != CLF_SUCCESS ? st
                                 : clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY,
                                                 "clf_comm_launch: out of memory on a rank");
    }
    if (MPI_Iallgather(mine, 4, MPI_UINT64_T, all, 4, MPI_UINT64_T, c->comm, &r) !=
            MPI_SUCCESS ||
        (st = clf__comm_wait(c, 1, &r, "clf_comm_launch: report")) != CLF_SUCCESS) {
        free(all);
        free(rk);
        return st != CLF_SUCCESS ? st : clf_set_error(CLF_ERROR_MPI, "MPI_Iallgather failed");
    }
    double most = 0, sum = 0;
    for (int k = 0; k < c->size; k++) {
        rk[k].first = all[4 * k];
        rk[k].units = all[4 * k + 1];
        rk[k].chunks = all[4 * k + 2];
        memcpy(&rk[k].seconds, &all[4 * k + 3], sizeof rk[k].seconds);
        most = rk[k].seconds > most ? rk[k].seconds : most;
        sum += rk[k].seconds;
    }
    free(all);
    if (out) {
        memset(out, 0, sizeof *out);
        out->local = J->rep;
        out->num_ranks = c->size;
        out->rank = rk;
        out->makespan_s = most;
        out->imbalance = sum > 0 ? most / (sum / c->size) - 1 : 0;
    } else {
        free(rk);
    }
    return CLF_SUCCESS;
}

/* What this rank can check alone: the arguments, and the memory the launch needs. */
static clf_status prepare(job *J, clf_comm *c, clf_program *prog, const clf_launch_desc *desc,
                          const clf_arg *args, size_t nargs, unsigned flags, int root)
{
    J->d = (clf_launch_desc)CLF_LAUNCH_DESC_INIT;
    if (!prog || !desc)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_launch: %s is NULL",
                             !prog ? "program" : "desc");
    if (nargs && !args)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_launch: args is NULL");
    if (flags & ~(unsigned)(CLF_COMM_GATHER | CLF_COMM_DYNAMIC))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "clf_comm_launch: unknown flags 0x%x",
                             flags);
    if ((flags & CLF_COMM_GATHER) && (root < 0 || root >= c->size))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_comm_launch: root %d is not a rank of %d", root, c->size);
    if (desc->version < 1 || desc->version > CLF_LAUNCH_DESC_VERSION)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_comm_launch: clf_launch_desc version %u (1 .. %u; fill it with "
                             "CLF_LAUNCH_DESC_INIT)", desc->version, CLF_LAUNCH_DESC_VERSION);
    size_t dsize = desc->version == 1   ? offsetof(clf_launch_desc, split_dim)
                   : desc->version == 2 ? offsetof(clf_launch_desc, range_first)
                                        : sizeof *desc;
    memcpy(&J->d, desc, dsize);
    J->d.version = CLF_LAUNCH_DESC_VERSION;
    const clf_launch_desc *d = &J->d;
    if (!d->kernel)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_launch: desc.kernel is NULL");
    if (d->range_first || d->range_units)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_comm_launch '%s': desc.range_first/range_units are the "
                             "ranks' shares, set by clf_comm_launch (leave them 0)", d->kernel);
    if (d->dims < 1 || d->dims > 3 || d->split_dim > d->dims)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_comm_launch '%s': dims %u, split_dim %u", d->kernel, d->dims,
                             d->split_dim);
    J->split = d->split_dim ? d->split_dim - 1 : d->dims - 1;
    J->total = d->global[J->split];
    if (J->total == 0)
        return clf_set_error(CLF_ERROR_ZERO_SIZE, "clf_comm_launch '%s': global size %u is zero",
                             d->kernel, J->split);
    /* Shares are multiples of the local size and the granularity (their lcm). */
    uint64_t l = d->local[0] ? d->local[J->split] : 1, g = d->granularity ? d->granularity : 1;
    uint64_t x = l, y = g;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    if (l == 0 || __builtin_mul_overflow(l / x, g, &J->align))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_comm_launch '%s': local size or granularity", d->kernel);
    J->c = c;
    J->args = args;
    J->nargs = nargs;
    J->flags = flags;
    J->root = root;
    J->my = calloc(nargs + 1, sizeof *J->my);
    J->red_part = calloc(nargs + 1, sizeof *J->red_part);
    J->red_tmp = calloc(nargs + 1, sizeof *J->red_tmp);
    if (flags & CLF_COMM_GATHER)
        J->gall = malloc(3 * (size_t)c->size * sizeof *J->gall);
    if (!J->my || !J->red_part || !J->red_tmp || ((flags & CLF_COMM_GATHER) && !J->gall))
        return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_comm_launch: out of memory");
    if (nargs)
        memcpy(J->my, args, nargs * sizeof *args);
    for (size_t i = 0; i < nargs; i++) {
        const clf_arg *a = &args[i];
        if (a->kind != CLF_ARG_KIND_REDUCE)
            continue;
        size_t es = clf_type_size((clf_type)a->type), bytes;
        if (es == 0 || a->op < CLF_REDUCE_SUM || a->op > CLF_REDUCE_MAX || !a->host ||
            a->size == 0)
            return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                 "clf_comm_launch '%s' argument %zu: a reduction of type %u, "
                                 "operation %u, %zu elements into %p",
                                 d->kernel, i, a->type, a->op, a->size, a->host);
        if (__builtin_mul_overflow(a->size, es, &bytes))
            return clf_set_error(CLF_ERROR_SIZE_OVERFLOW,
                                 "clf_comm_launch '%s' argument %zu: size overflows", d->kernel, i);
        J->red_part[i] = malloc(bytes);
        J->red_tmp[i] = malloc(bytes);
        if (!J->red_part[i] || !J->red_tmp[i])
            return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_comm_launch: out of memory");
        red_identity(J->red_part[i], a->size, a->type, a->op);
    }
    return CLF_SUCCESS;
}

static void job_free(job *J)
{
    for (size_t i = 0; i < J->nargs && J->red_part; i++) {
        free(J->red_part[i]);
        free(J->red_tmp[i]);
    }
    free(J->red_part);
    free(J->red_tmp);
    free(J->my);
    free(J->runs);
    free(J->gall);
}

clf_status clf_comm_launch(clf_comm *c, clf_program *prog, const clf_launch_desc *desc,
                           const clf_arg *args, size_t nargs, unsigned flags, int root,
                           clf_comm_launch_report *report)
{
    if (report)
        memset(report, 0, sizeof *report);
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_launch: communicator is NULL");
    job J;
    memset(&J, 0, sizeof J);
    clf_status st = prepare(&J, c, prog, desc, args, nargs, flags, root);
    uint64_t first = 0, units = 0, chunks = 0;
    st = clf__comm_agree(c, st, "clf_comm_launch");
    if (st == CLF_SUCCESS) {
        long long v[8] = {(long long)J.total, (long long)J.align, (long long)flags,
                          (flags & CLF_COMM_GATHER) ? root : 0, (long long)nargs,
                          (long long)J.d.dims, (long long)J.split, 0};
        for (size_t i = 0; i < nargs; i++) /* kinds, in order */
            v[7] = v[7] * 31 + args[i].kind +
                   (args[i].kind == CLF_ARG_KIND_REDUCE ? 8 * (args[i].size * 8 + args[i].type)
                                                        : 0);
        st = clf__comm_same(c, "clf_comm_launch",
                            "the range along the split dimension,the alignment (local size "
                            "and granularity),the flags,the root,nargs,dims,split_dim,the "
                            "argument kinds", 8, v);
    }
    if (st == CLF_SUCCESS && (flags & CLF_COMM_DYNAMIC)) {
        st = run_dynamic(&J, prog, &chunks); /* agreed inside */
        units = J.units;
    } else if (st == CLF_SUCCESS) {
        st = run_static(&J, prog, &first, &units);
        chunks = J.nruns;
        st = c->broken ? st : clf__comm_agree(c, st, "clf_comm_launch");
    }
    /* Learn this rank's speed on the kernel for the next launch's shares. */
    if (st == CLF_SUCCESS && J.units && J.seconds > 0) {
        struct clf__comm_speed *s = speed_of(c, J.d.kernel, 1);
        if (s)
            s->units_per_s = (double)J.units / J.seconds;
    }
    if (st == CLF_SUCCESS)
        st = reduce_across(&J);
    if (st == CLF_SUCCESS && (flags & CLF_COMM_GATHER))
        st = gather(&J);
    if (st == CLF_SUCCESS)
        st = clf__comm_agree(c, fill_report(&J, first, units, chunks, report), "clf_comm_launch");
    else if (report)
        report->local = J.rep;
    if (st != CLF_SUCCESS && report && report->rank) {
        free(report->rank);
        report->rank = NULL;
    }
    job_free(&J);
    return st;
}

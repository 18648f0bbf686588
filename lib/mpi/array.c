/*
 * Distributed arrays across ranks (clf_comm_array_*): each rank holds a window array
 * (clf_array_desc version 2) of the whole array's units along dims-1, cut over its own
 * devices. The windows' halos between ranks move by non-blocking MPI send/receive of the
 * boundary strips (clf_array_read_units(), which waits only for the strips' writers, so
 * with CLF_ARRAY_EXCHANGE_AFTER the messages travel while the interior computes) into the
 * edge halos (clf_array_write_halo()). Boxes of the whole array are gathered to or
 * scattered from a root by MPI_Igatherv/MPI_Iscatterv. One status for every rank.
 */
#include "comm.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clf__comm_array *find(clf_comm *c, const clf_array *arr)
{
    for (clf__comm_array *a = c->arrays; a; a = a->next)
        if (a->arr == arr)
            return a;
    return NULL;
}

static void carray_free(clf__comm_array *a)
{
    if (a) {
        free(a->first);
        free(a->count);
        free(a);
    }
}

/* Forget arr's record (a new array at the address of a destroyed one replaces it). */
static void forget(clf_comm *c, const clf_array *arr)
{
    for (clf__comm_array **p = &c->arrays; *p;) {
        if ((*p)->arr == arr) {
            clf__comm_array *dead = *p;
            *p = dead->next;
            carray_free(dead);
        } else {
            p = &(*p)->next;
        }
    }
}

static void remember(clf_comm *c, clf__comm_array *a)
{
    forget(c, a->arr);
    a->next = c->arrays;
    c->arrays = a;
}

/* ---- creation ---------------------------------------------------------------------------- */

static double capacity(clf_fleet *f, const clf_array_desc *d)
{
    size_t n = d->devices ? d->num_devices : clf_fleet_device_count(f);
    double cap = 0;
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, d->devices ? d->devices[i] : i) == CLF_SUCCESS)
            cap += (double)(in.compute_units ? in.compute_units : 1) *
                   (double)(in.clock_mhz ? in.clock_mhz : 1);
    }
    return cap > 0 ? cap : 1;
}

clf_status clf_comm_array_create(clf_array **out, clf_comm *c, const clf_array_desc *desc)
{
    static const char *fn = "clf_comm_array_create";
    if (out)
        *out = NULL;
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: communicator is NULL", fn);
    clf_status st = CLF_SUCCESS;
    clf__comm_array *A = calloc(1, sizeof *A);
    int P = c->size;
    if (A) {
        A->first = calloc((size_t)P, sizeof *A->first);
        A->count = calloc((size_t)P, sizeof *A->count);
    }
    if (!out || !desc)
        st = clf_set_error(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", fn, out ? "desc" : "out");
    else if (!A || !A->first || !A->count)
        st = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn);
    else if (desc->version != 1 && desc->version != CLF_ARRAY_DESC_VERSION)
        st = clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: clf_array_desc version %u", fn,
                           desc->version);
    else if (desc->dims < 1 || desc->dims > 3 || desc->dist != CLF_ARRAY_BLOCK ||
             desc->shape[desc->dims - 1] == 0 ||
             (desc->version >= 2 && (desc->window_units || desc->window_first)))
        st = clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                           "%s: a CLF_ARRAY_BLOCK array of 1 to 3 dimensions with units along "
                           "dims-1, not a window (the ranks' windows are made here)", fn);
    double cap = 0;
    if (st == CLF_SUCCESS) {
        A->d = *desc;
        A->d.version = CLF_ARRAY_DESC_VERSION;
        A->d.window_units = A->d.window_first = 0;
        A->unit_bytes = desc->elem_size;
        for (unsigned i = 0; i + 1 < desc->dims; i++)
            A->unit_bytes *= desc->shape[i];
        cap = desc->weights_mode == CLF_WEIGHTS_EQUAL ? 1 : capacity(c->fleet, desc);
    }
    st = clf__comm_agree(c, st, fn);
    if (st == CLF_SUCCESS) {
        long long v[8] = {(long long)desc->dims, (long long)desc->elem_size,
                          (long long)desc->shape[0], (long long)desc->shape[1],
                          (long long)desc->shape[2], (long long)desc->halo_before,
                          (long long)desc->halo_after, (long long)desc->flags};
        st = clf__comm_same(c, fn, "dims,elem_size,shape[0],shape[1],shape[2],halo_before,"
                            "halo_after,flags", 8, v);
    }
    double *w = st == CLF_SUCCESS ? malloc((size_t)P * sizeof *w) : NULL;
    if (st == CLF_SUCCESS) {
        int ok = w != NULL, okall = 0;
        MPI_Request r;
        int err = MPI_Iallreduce(&ok, &okall, 1, MPI_INT, MPI_MIN, c->comm, &r);
        st = err ? clf__comm_mpi_fail(c, err, fn) : clf__comm_wait(c, 1, &r, fn);
        if (st == CLF_SUCCESS && !okall)
            st = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory on a rank", fn);
        if (st == CLF_SUCCESS) {
            err = MPI_Iallgather(&cap, 1, MPI_DOUBLE, w, 1, MPI_DOUBLE, c->comm, &r);
            st = err ? clf__comm_mpi_fail(c, err, fn) : clf__comm_wait(c, 1, &r, fn);
        }
    }
    clf_array *arr = NULL;
    if (st == CLF_SUCCESS) {
        /* Windows by weight: the ranks before k hold the share of their weights. */
        size_t N = desc->shape[desc->dims - 1];
        double sum = 0, before = 0;
        for (int k = 0; k < P; k++)
            sum += w[k];
        size_t prev = 0;
        for (int k = 0; k < P; k++) {
            before += w[k];
            size_t end = k + 1 == P ? N : (size_t)((double)N * (before / sum) + 0.5);
            end = end > N ? N : end < prev ? prev : end;
            A->first[k] = prev;
            A->count[k] = end - prev;
            prev = end;
        }
        clf_array_desc mine = A->d;
        mine.shape[mine.dims - 1] = A->count[c->rank];
        mine.window_units = N;
        mine.window_first = A->first[c->rank];
        if (A->count[c->rank] == 0)
            st = clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                               "%s: %zu units are too few for %d ranks (rank %d gets none)", fn,
                               N, P, c->rank);
        else
            st = clf_array_create(&arr, c->fleet, &mine);
        A->d.devices = NULL;
        A->d.num_devices = 0;
        A->d.weights = NULL;
        A->d.kernel = NULL;
        A->arr = arr;
        if (st == CLF_SUCCESS) {
            remember(c, A);
            A = NULL;
        }
        st = clf__comm_agree(c, st, fn);
    }
    free(w);
    if (st != CLF_SUCCESS) {
        if (!A && arr)
            forget(c, arr);
        clf_array_destroy(arr);
        carray_free(A);
        return st;
    }
    *out = arr;
    return CLF_SUCCESS;
}

/* ---- halos between ranks ----------------------------------------------------------------- */

/* Exchange the edge halos of this rank's window with its neighbours by MPI: receive into
 * host buffers, send the boundary strips (read as soon as their writers finish), then fill
 * the halos. */
static clf_status cross(clf_comm *c, clf__comm_array *A)
{
    static const char *fn = "clf_comm_array_exchange";
    int P = c->size, me = c->rank, per = (A->d.flags & CLF_ARRAY_PERIODIC) != 0;
    size_t hb = A->d.halo_before, ha = A->d.halo_after, ub = A->unit_bytes;
    size_t n = A->count[me];
    int left = me > 0 ? me - 1 : per ? P - 1 : -1;
    int right = me + 1 < P ? me + 1 : per ? 0 : -1;
    /* Halos: mine before from left (hb units), mine after from right (ha units); strips: my
     * first ha units to left (its halo after), my last hb units to right. */
    size_t nb[4] = {left >= 0 ? hb : 0, right >= 0 ? ha : 0, left >= 0 ? ha : 0,
                    right >= 0 ? hb : 0};
    unsigned char *buf[4] = {NULL, NULL, NULL, NULL};
    clf_status st = CLF_SUCCESS;
    for (int i = 0; i < 4; i++) {
        if (nb[i] && (nb[i] * ub > INT_MAX || !(buf[i] = malloc(nb[i] * ub))))
            st = clf_set_error(nb[i] * ub > INT_MAX ? CLF_ERROR_SIZE_OVERFLOW
                                                    : CLF_ERROR_OUT_OF_HOST_MEMORY,
                               "%s: a halo of %zu bytes", fn, nb[i] * ub);
    }
    st = clf__comm_agree(c, st, fn);
    MPI_Request req[4];
    int nreq = 0, err = 0;
    /* Tag 1: a strip travelling left (the receiver's halo after); 2: travelling right. */
    if (st == CLF_SUCCESS && nb[0])
        err = err ? err : MPI_Irecv(buf[0], (int)(nb[0] * ub), MPI_BYTE, left, 2, c->comm,
                                    &req[nreq++]);
    if (st == CLF_SUCCESS && nb[1])
        err = err ? err : MPI_Irecv(buf[1], (int)(nb[1] * ub), MPI_BYTE, right, 1, c->comm,
                                    &req[nreq++]);
    clf_status local = CLF_SUCCESS;
    if (st == CLF_SUCCESS && !err && nb[2]) {
        local = clf_array_read_units(A->arr, 0, nb[2], buf[2]);
        if (local == CLF_SUCCESS)
            err = MPI_Isend(buf[2], (int)(nb[2] * ub), MPI_BYTE, left, 1, c->comm, &req[nreq++]);
    }
    if (st == CLF_SUCCESS && !err && local == CLF_SUCCESS && nb[3]) {
        local = clf_array_read_units(A->arr, n - nb[3], nb[3], buf[3]);
        if (local == CLF_SUCCESS)
            err = MPI_Isend(buf[3], (int)(nb[3] * ub), MPI_BYTE, right, 2, c->comm,
                            &req[nreq++]);
    }
    /* A rank whose strip read failed sends nothing: its neighbours must not wait for it.
     * Agree first (the posted receives are then cancelled). */
    if (st == CLF_SUCCESS)
        st = err ? clf__comm_mpi_fail(c, err, fn) : clf__comm_agree(c, local, fn);
    if (st != CLF_SUCCESS) {
        for (int i = 0; i < nreq && !c->broken; i++) {
            MPI_Cancel(&req[i]);
            MPI_Wait(&req[i], MPI_STATUS_IGNORE);
        }
    } else {
        st = clf__comm_wait(c, nreq, req, fn);
        if (st == CLF_SUCCESS && nb[0])
            st = clf_array_write_halo(A->arr, 0, buf[0]);
        if (st == CLF_SUCCESS && nb[1])
            st = clf_array_write_halo(A->arr, 1, buf[1]);
        st = c->broken ? st : clf__comm_agree(c, st, fn);
    }
    for (int i = 0; i < 4; i++)
        free(buf[i]);
    return st;
}

static clf__comm_array *lookup(clf_comm *c, const clf_array *arr, const char *fn, clf_status *st)
{
    clf__comm_array *A = c && arr ? find(c, arr) : NULL;
    if (!c || !arr)
        *st = clf_set_error(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                            c ? "the array" : "the communicator");
    else if (!A)
        *st = clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                            "%s: the array is not from clf_comm_array_create() on this "
                            "communicator", fn);
    return A;
}

clf_status clf_comm_array_exchange(clf_comm *c, clf_array *arr)
{
    static const char *fn = "clf_comm_array_exchange";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: communicator is NULL", fn);
    clf_status st = CLF_SUCCESS;
    clf__comm_array *A = lookup(c, arr, fn, &st);
    if (st == CLF_SUCCESS)
        st = clf_array_exchange(arr); /* inside the fleet, device to device */
    st = clf__comm_agree(c, st, fn);
    return st == CLF_SUCCESS ? cross(c, A) : st;
}

clf_status clf_comm_array_launch(clf_comm *c, clf_program *prog,
                                 const clf_array_launch_desc *desc, const clf_arg *args,
                                 size_t nargs)
{
    static const char *fn = "clf_comm_array_launch";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: communicator is NULL", fn);
    clf_status st = CLF_SUCCESS;
    if (!desc || (nargs && !args))
        st = clf_set_error(CLF_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                           desc ? "args" : "desc");
    /* The arrays that cross ranks: every clf_array argument must come from this comm. */
    for (size_t i = 0; st == CLF_SUCCESS && i < nargs; i++)
        if (args[i].kind == CLF_ARG_KIND_ARRAY)
            lookup(c, args[i].host, fn, &st);
    st = clf__comm_agree(c, st, fn);
    unsigned flags = st == CLF_SUCCESS ? desc->flags : 0;
    for (size_t i = 0; st == CLF_SUCCESS && (flags & CLF_ARRAY_EXCHANGE_BEFORE) && i < nargs;
         i++)
        if (args[i].kind == CLF_ARG_KIND_ARRAY && (args[i].flags & CLF_ARG_READ))
            st = clf_comm_array_exchange(c, args[i].host);
    if (st != CLF_SUCCESS)
        return st;
    /* The fleet's own launch: strips first and the exchange inside it with AFTER. */
    /* Only the caller's version's fields: a version-1 description ends before strategy. */
    clf_array_launch_desc d = CLF_ARRAY_LAUNCH_DESC_INIT;
    memcpy(&d, desc, desc->version == 1 ? offsetof(clf_array_launch_desc, strategy) : sizeof d);
    d.flags &= ~(unsigned)CLF_ARRAY_EXCHANGE_BEFORE;
    st = clf__comm_agree(c, clf_array_launch(c->fleet, prog, &d, args, nargs), fn);
    for (size_t i = 0; st == CLF_SUCCESS && (flags & CLF_ARRAY_EXCHANGE_AFTER) && i < nargs;
         i++)
        if (args[i].kind == CLF_ARG_KIND_ARRAY && (args[i].flags & CLF_ARG_WRITE))
            st = cross(c, find(c, args[i].host));
    return st;
}

/* ---- boxes of the whole array ------------------------------------------------------------ */

/* The box (global) and this rank's slice of it along dims-1, as local box and byte range of
 * the packed box; per rank byte counts and displacements for the root. */
static clf_status box_plan(clf_comm *c, clf__comm_array *A, const size_t *origin,
                           const size_t *region, size_t o[3], size_t r[3], int *cnt, int *disp,
                           const char *fn)
{
    const clf_array_desc *d = &A->d;
    unsigned s = d->dims - 1;
    size_t slice = d->elem_size;
    for (unsigned i = 0; i < 3; i++) {
        o[i] = origin ? origin[i] : 0;
        r[i] = region ? region[i] : i < d->dims ? d->shape[i] : 1;
        size_t ext = i < d->dims ? d->shape[i] : 1;
        if (r[i] == 0)
            return clf_set_error(CLF_ERROR_ZERO_SIZE, "%s: region[%u] is zero", fn, i);
        if (o[i] > ext || r[i] > ext - o[i])
            return clf_set_error(CLF_ERROR_OUT_OF_RANGE,
                                 "%s: box [%zu, +%zu) of dimension %u leaves the array's %zu",
                                 fn, o[i], r[i], i, ext);
        if (i < s)
            slice *= r[i];
    }
    for (int k = 0; k < c->size; k++) {
        size_t lo = o[s] > A->first[k] ? o[s] : A->first[k];
        size_t hi = o[s] + r[s] < A->first[k] + A->count[k] ? o[s] + r[s]
                                                             : A->first[k] + A->count[k];
        size_t b = hi > lo ? (hi - lo) * slice : 0, at = hi > lo ? (lo - o[s]) * slice : 0;
        if (b > INT_MAX || at > INT_MAX)
            return clf_set_error(CLF_ERROR_SIZE_OVERFLOW,
                                 "%s: %zu bytes for one rank are over MPI's count", fn, b);
        cnt[k] = (int)b;
        disp[k] = (int)at;
    }
    return CLF_SUCCESS;
}

/* This rank's slice as a box of its window (0 when it holds none of the box). */
static int local_box(clf_comm *c, const clf__comm_array *A, const size_t o[3], const size_t r[3],
                     size_t lo[3], size_t lr[3])
{
    unsigned s = A->d.dims - 1;
    size_t f = A->first[c->rank], n = A->count[c->rank];
    size_t a = o[s] > f ? o[s] : f, b = o[s] + r[s] < f + n ? o[s] + r[s] : f + n;
    if (b <= a)
        return 0;
    memcpy(lo, o, 3 * sizeof *lo);
    memcpy(lr, r, 3 * sizeof *lr);
    lo[s] = a - f;
    lr[s] = b - a;
    return 1;
}

static clf_status box_move(clf_comm *c, clf_array *arr, const size_t *origin,
                           const size_t *region, void *host, int root, int write)
{
    const char *fn = write ? "clf_comm_array_write" : "clf_comm_array_read";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: communicator is NULL", fn);
    clf_status st = CLF_SUCCESS;
    clf__comm_array *A = lookup(c, arr, fn, &st);
    int *cnt = calloc((size_t)c->size, sizeof *cnt), *disp = calloc((size_t)c->size,
                                                                     sizeof *disp);
    size_t o[3], r[3], lo[3], lr[3];
    unsigned char *mine = NULL;
    if (st == CLF_SUCCESS && (root < 0 || root >= c->size))
        st = clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: root %d is not a rank of %d", fn,
                           root, c->size);
    if (st == CLF_SUCCESS && !(cnt && disp))
        st = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn);
    if (st == CLF_SUCCESS && c->rank == root && !host)
        st = clf_set_error(CLF_ERROR_NULL_POINTER, "%s: the root's host memory is NULL", fn);
    if (st == CLF_SUCCESS)
        st = box_plan(c, A, origin, region, o, r, cnt, disp, fn);
    st = clf__comm_agree(c, st, fn);
    if (st == CLF_SUCCESS) {
        long long v[7] = {root, (long long)o[0], (long long)o[1], (long long)o[2],
                          (long long)r[0], (long long)r[1], (long long)r[2]};
        st = clf__comm_same(c, fn, "root,origin[0],origin[1],origin[2],region[0],region[1],"
                            "region[2]", 7, v);
    }
    int have = st == CLF_SUCCESS && local_box(c, A, o, r, lo, lr);
    size_t nb = st == CLF_SUCCESS ? (size_t)cnt[c->rank] : 0;
    if (st == CLF_SUCCESS && c->rank != root && nb && !(mine = malloc(nb)))
        st = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn);
    unsigned char *at = c->rank == root && st == CLF_SUCCESS
                            ? (unsigned char *)host + disp[c->rank] : mine;
    if (st == CLF_SUCCESS && have && !write)
        st = clf_array_read(arr, lo, lr, at);
    st = clf__comm_agree(c, st, fn);
    if (st == CLF_SUCCESS) {
        MPI_Request q;
        int err;
        if (write)
            err = MPI_Iscatterv(host, cnt, disp, MPI_BYTE,
                                c->rank == root ? MPI_IN_PLACE : (void *)mine,
                                (int)nb, MPI_BYTE, root, c->comm, &q);
        else
            err = MPI_Igatherv(c->rank == root ? MPI_IN_PLACE : (void *)mine, (int)nb,
                               MPI_BYTE, host, cnt, disp, MPI_BYTE, root, c->comm, &q);
        st = err ? clf__comm_mpi_fail(c, err, fn) : clf__comm_wait(c, 1, &q, fn);
        if (st == CLF_SUCCESS && have && write)
            st = clf_array_write(arr, lo, lr, at);
        st = c->broken ? st : clf__comm_agree(c, st, fn);
    }
    free(mine);
    free(cnt);
    free(disp);
    return st;
}

clf_status clf_comm_array_read(clf_comm *c, clf_array *arr, const size_t *origin,
                               const size_t *region, void *dst, int root)
{
    return box_move(c, arr, origin, region, dst, root, 0);
}

clf_status clf_comm_array_write(clf_comm *c, clf_array *arr, const size_t *origin,
                                const size_t *region, const void *src, int root)
{
    return box_move(c, arr, origin, region, (void *)src, root, 1);
}

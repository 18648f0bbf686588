/* Collectives across ranks on each rank's per-device buffers: all-reduce, reduce,
 * broadcast, all-gather. Data crosses ranks through host memory, chunk by chunk (pipe_run):
 * device reads, MPI and device writes of different chunks overlap. The all-reduce of large
 * data with the same device count on every rank is hierarchical (the fleet's all-reduce,
 * each device's shard across ranks on its own lane communicator, all lanes at once, then
 * the fleet's all-gather); small data, and ranks with different device counts, go rank by
 * rank (every buffer read and reduced on the host, across ranks, written back); devices
 * using the host's memory are mapped, nothing staged (allreduce_mapped). Across ranks the
 * all-reduce is a ring of point-to-point messages per chunk (ring_post). A rank whose own arguments or
 * devices fail still takes part in the MPI steps (its data unused), and a last agreement
 * gives every rank the same status, or in one chunk a status element in the data (flag_put). */
#include "comm.h"

#include <CL/cl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clfleet/opencl.h"

/* ---- the pipeline: chunks read from a device, through MPI, written to devices ---- */

enum { ST_READ, ST_READY, ST_MPI, ST_WRITE, ST_DONE };
enum { P_ALLREDUCE, P_BCAST, P_REDUCE };
/* Ring messages of chunk j of a lane carry tag j % RING_TAGS; chunk j starts only once chunk
 * j - RING_TAGS has ended, so that no two chunks in flight share a tag. */
#define RING_TAGS 4096
/* The smallest all-reduce that maps buffers using the host's memory (allreduce_mapped()). */
#define MAPPED_MIN ((size_t)256 << 10)

typedef struct chunk {
    int lane;              /* its communicator: lanes[lane] */
    clf_buffer *src;       /* read first from this buffer, or NULL (the host holds it) */
    size_t off, bytes;     /* in the buffers and at host */
    char *host;
    int n;                 /* MPI elements */
    clf_buffer *const *dst; /* then written to these */
    size_t ndst;
    clf_event *rev;
    clf_buffer *const *more; /* read too, into host + j * stride, and reduced into host */
    size_t nmore, stride;
    clf_event **mev;       /* nmore */
    clf_event **wev;       /* ndst */
    MPI_Request req;
    int stage;
    /* The ring all-reduce of this chunk (p->ring): its step, and the step's send/receive. */
    int step;
    MPI_Request rr[2];
    char *scratch;         /* a received segment before it is reduced in */
    int tag;
} chunk;

typedef struct pipe {
    clf_comm *c;
    int kind, root;
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm *comm;        /* per lane */
    int nlanes;
    chunk *ch;             /* lane by lane, in order within a lane */
    size_t nch;
    clf_status local;      /* this rank's first device failure (the MPI steps go on) */
    clf_type type;         /* of the host reduction of `more` */
    clf_reduce_op rop;
    size_t nmore_max;      /* the most `more` buffers of a chunk (pipe_alloc) */
    int ring;              /* P_ALLREDUCE by a ring of point-to-point messages, not MPI's */
    size_t esize;
    size_t chunk;          /* bytes of a chunk; 0: c->chunk_bytes */
    int flag;              /* the one chunk's MPI data ends with a status element (flag_put) */
    int flag_bad;          /* that element said a rank failed */
} pipe;

/* The sums unrolled by 4 over restrict pointers: -O2 then vectorizes them (SLP), as MPI's own
 * operations are; the scalar loop made the host side of a 1 MiB all-reduce 10% slower than
 * MPI_Allreduce's. */
#define ADD_(j) (a[j] = a[j] + b[j])
#define EACH4(E)                                                                              \
    do {                                                                                      \
        size_t i_ = 0;                                                                        \
        for (; i_ + 4 <= n; i_ += 4) {                                                        \
            E(i_);                                                                            \
            E(i_ + 1);                                                                        \
            E(i_ + 2);                                                                        \
            E(i_ + 3);                                                                        \
        }                                                                                     \
        for (; i_ < n; i_++)                                                                  \
            E(i_);                                                                            \
    } while (0)

/* sum_<T>(a, b, n): a[i] += b[i]. Restrict parameters (not locals) is what GCC honours. */
#define SUMFN(T)                                                                              \
    static void sum_##T(T *restrict a, const T *restrict b, size_t n)                         \
    {                                                                                         \
        EACH4(ADD_);                                                                          \
    }
SUMFN(uint32_t)
SUMFN(uint64_t)
SUMFN(float)
SUMFN(double)

/* dst[i] = dst[i] op src[i], n elements of type t (the host side of a reduction). */
#define COMBINE(T)                                                                            \
    do {                                                                                      \
        T *a = dst;                                                                           \
        const T *b = src;                                                                     \
        switch (op) {                                                                         \
        case CLF_REDUCE_SUM: sum_##T(a, b, n); break;                                         \
        case CLF_REDUCE_PROD: for (size_t i = 0; i < n; i++) a[i] = (T)(a[i] * b[i]); break;  \
        case CLF_REDUCE_MIN: for (size_t i = 0; i < n; i++) a[i] = b[i] < a[i] ? b[i] : a[i]; \
            break;                                                                            \
        default: for (size_t i = 0; i < n; i++) a[i] = b[i] > a[i] ? b[i] : a[i]; break;      \
        }                                                                                     \
    } while (0)

static void combine(void *dst, const void *src, size_t n, clf_type t, clf_reduce_op op)
{
    switch (t) {
    case CLF_TYPE_INT32: {
        /* Wrapping like the devices' (and MPI's) integer sums: in unsigned arithmetic. */
        uint32_t *a = dst;
        const uint32_t *b = src;
        const int32_t *sa = dst, *sb = src;
        if (op == CLF_REDUCE_SUM)
            sum_uint32_t(dst, src, n);
        else if (op == CLF_REDUCE_PROD)
            for (size_t i = 0; i < n; i++) a[i] *= b[i];
        else if (op == CLF_REDUCE_MIN)
            for (size_t i = 0; i < n; i++) a[i] = (uint32_t)(sb[i] < sa[i] ? sb[i] : sa[i]);
        else
            for (size_t i = 0; i < n; i++) a[i] = (uint32_t)(sb[i] > sa[i] ? sb[i] : sa[i]);
        break;
    }
    case CLF_TYPE_INT64: {
        uint64_t *a = dst;
        const uint64_t *b = src;
        const int64_t *sa = dst, *sb = src;
        if (op == CLF_REDUCE_SUM)
            sum_uint64_t(dst, src, n);
        else if (op == CLF_REDUCE_PROD)
            for (size_t i = 0; i < n; i++) a[i] *= b[i];
        else if (op == CLF_REDUCE_MIN)
            for (size_t i = 0; i < n; i++) a[i] = (uint64_t)(sb[i] < sa[i] ? sb[i] : sa[i]);
        else
            for (size_t i = 0; i < n; i++) a[i] = (uint64_t)(sb[i] > sa[i] ? sb[i] : sa[i]);
        break;
    }
    case CLF_TYPE_UINT32: COMBINE(uint32_t); break;
    case CLF_TYPE_FLOAT: COMBINE(float); break;
    default: COMBINE(double); break;
    }
}

static void note_local(pipe *p, clf_status st, const char *what)
{
    if (p->local == CLF_SUCCESS)
        p->local = clf_set_error(st, "rank %d: %s: %s", p->c->rank, what, clf_last_error());
}

/* 1 when the event has ended (its status in *st), 0 while it runs. */
static int ev_poll(clf_event *e, clf_status *st)
{
    cl_event ce = clf_cl_event(e);
    if (ce) {
        cl_int s = CL_COMPLETE;
        if (clGetEventInfo(ce, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) ==
                CL_SUCCESS &&
            s > CL_COMPLETE)
            return 0;
    }
    *st = clf_event_wait(e);
    return 1;
}

/* The status element of a one-chunk all-reduce (allreduce_flat): one more element after the
 * data, reduced with it by the same operation, so that the status needs no collective of
 * its own. A failing rank puts 1 (sum, max) or 0 (product, min), every other rank the
 * operation's other value of 0 and 1: the result says whether any rank failed, exactly in
 * every type (a sum of at most INT_MAX ones of float is inexact only above 2^24 ranks, and
 * never 0). */
static void flag_put(pipe *p, void *at, int failed)
{
    int v = p->rop == CLF_REDUCE_SUM || p->rop == CLF_REDUCE_MAX ? failed : !failed;
    switch (p->type) {
    case CLF_TYPE_INT32: *(int32_t *)at = v; break;
    case CLF_TYPE_UINT32: *(uint32_t *)at = (uint32_t)v; break;
    case CLF_TYPE_INT64: *(int64_t *)at = v; break;
    case CLF_TYPE_FLOAT: *(float *)at = (float)v; break;
    default: *(double *)at = v; break;
    }
}

static int flag_failed(const pipe *p, const void *at)
{
    int zero;
    switch (p->type) {
    case CLF_TYPE_INT32: zero = *(const int32_t *)at == 0; break;
    case CLF_TYPE_UINT32: zero = *(const uint32_t *)at == 0; break;
    case CLF_TYPE_INT64: zero = *(const int64_t *)at == 0; break;
    case CLF_TYPE_FLOAT: zero = *(const float *)at == 0; break;
    default: zero = *(const double *)at == 0; break;
    }
    return p->rop == CLF_REDUCE_SUM || p->rop == CLF_REDUCE_MAX ? !zero : zero;
}

/* Segment i of P of a chunk of n elements: [*first, *first + *len). */
static void ring_seg(size_t n, int P, int i, size_t *first, size_t *len)
{
    *first = n * (size_t)i / (size_t)P;
    *len = n * (size_t)(i + 1) / (size_t)P - *first;
}

/* Post step k->step of the ring: P - 1 steps of reduce-scatter (send a segment to the
 * right, receive one from the left into scratch), then P - 1 of all-gather (the received
 * segment straight into place). Point-to-point messages are single-copy in shared memory
 * and overlap like any other, where MPI_Iallreduce (libnbc) is about half as fast here. */
static int ring_post(pipe *p, chunk *k)
{
    MPI_Comm comm = p->comm[k->lane];
    int P = p->c->size, r = p->c->rank, s = k->step;
    int right = (r + 1) % P, left = (r + P - 1) % P;
    size_t n = (size_t)k->n, sf, sl, rf, rl;
    int sseg, rseg;
    char *rdst;
    if (s < P - 1) {
        sseg = (r - s + P) % P;
        rseg = (r - s - 1 + 2 * P) % P;
    } else {
        int t = s - (P - 1);
        sseg = (r + 1 - t + P) % P;
        rseg = (r - t + P) % P;
    }
    ring_seg(n, P, sseg, &sf, &sl);
    ring_seg(n, P, rseg, &rf, &rl);
    rdst = (s < P - 1 ? k->scratch : k->host) + rf * p->esize;
    int err = MPI_Irecv(rdst, (int)rl, p->dt, left, k->tag, comm, &k->rr[0]);
    if (err == MPI_SUCCESS)
        err = MPI_Isend(k->host + sf * p->esize, (int)sl, p->dt, right, k->tag, comm,
                        &k->rr[1]);
    return err;
}

/* The ring's progress on chunk k: 1 when it has ended, 0 while it runs, else -err. */
static int ring_test(pipe *p, chunk *k)
{
    int P = p->c->size;
    for (;;) {
        int flag = 0;
        int err = MPI_Testall(2, k->rr, &flag, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS)
            return -err;
        if (!flag)
            return 0;
        if (k->step < P - 1) {
            size_t f, l;
            int rseg = (p->c->rank - k->step - 1 + 2 * P) % P;
            ring_seg((size_t)k->n, P, rseg, &f, &l);
            combine(k->host + f * p->esize, k->scratch + f * p->esize, l, p->type, p->rop);
        }
        if (++k->step >= 2 * (P - 1))
            return 1;
        if ((err = ring_post(p, k)) != MPI_SUCCESS)
            return -err;
    }
}

static int start_mpi(pipe *p, chunk *k)
{
    MPI_Comm comm = p->comm[k->lane];
    if (p->kind == P_ALLREDUCE && p->ring) {
        k->step = 0;
        k->req = MPI_REQUEST_NULL;
        if (p->c->size == 1)
            return MPI_SUCCESS;
        return ring_post(p, k);
    }
    switch (p->kind) {
    case P_ALLREDUCE:
        return MPI_Iallreduce(MPI_IN_PLACE, k->host, k->n, p->dt, p->op, comm, &k->req);
    case P_BCAST:
        return MPI_Ibcast(k->host, k->n, p->dt, p->root, comm, &k->req);
    default:
        return p->c->rank == p->root
                   ? MPI_Ireduce(MPI_IN_PLACE, k->host, k->n, p->dt, p->op, p->root, comm,
                                 &k->req)
                   : MPI_Ireduce(k->host, NULL, k->n, p->dt, p->op, p->root, comm, &k->req);
    }
}

/* Wait for every device command still running (the host memory outlives them). */
static void pipe_drain(pipe *p)
{
    for (size_t i = 0; i < p->nch; i++) {
        chunk *k = &p->ch[i];
        if (k->rev) {
            clf_event_wait(k->rev);
            clf_event_release(k->rev);
            k->rev = NULL;
        }
        for (size_t j = 0; k->mev && j < k->nmore; j++)
            if (k->mev[j]) {
                clf_event_wait(k->mev[j]);
                clf_event_release(k->mev[j]);
                k->mev[j] = NULL;
            }
        for (size_t j = 0; k->wev && j < k->ndst; j++)
            if (k->wev[j]) {
                clf_event_wait(k->wev[j]);
                clf_event_release(k->wev[j]);
                k->wev[j] = NULL;
            }
    }
}

/* Run every chunk. CLF_SUCCESS with p->local holding a device failure of this rank, or
 * CLF_ERROR_MPI / CLF_ERROR_TIMEOUT (the communicator is then broken). */
static clf_status pipe_run(pipe *p, const char *what)
{
    clf_comm *c = p->c;
    size_t done = 0;
    for (size_t i = 0; i < p->nch; i++) {
        chunk *k = &p->ch[i];
        k->stage = ST_READY;
        k->req = MPI_REQUEST_NULL;
        if (k->src && p->local == CLF_SUCCESS && p->nch == 1) {
            /* One chunk: nothing to overlap, and blocking copies cost less than events. */
            clf_status st = clf_buffer_read(k->src, k->off, k->bytes, k->host);
            for (size_t j = 0; st == CLF_SUCCESS && j < k->nmore; j++)
                st = clf_buffer_read(k->more[j], k->off, k->bytes,
                                     k->host + (j + 1) * k->stride);
            if (st != CLF_SUCCESS)
                note_local(p, st, "reading a device buffer");
            else
                for (size_t j = 0; j < k->nmore; j++)
                    combine(k->host, k->host + (j + 1) * k->stride,
                            k->bytes / clf_type_size(p->type), p->type, p->rop);
        } else if (k->src && p->local == CLF_SUCCESS) {
            clf_status st = clf_buffer_read_async(k->src, k->off, k->bytes, k->host, &k->rev);
            for (size_t j = 0; st == CLF_SUCCESS && j < k->nmore; j++)
                st = clf_buffer_read_async(k->more[j], k->off, k->bytes,
                                           k->host + (j + 1) * k->stride, &k->mev[j]);
            if (st != CLF_SUCCESS)
                note_local(p, st, "reading a device buffer");
            k->stage = ST_READ; /* whatever started is waited for */
        }
    }
    /* The next chunk of each lane to start in MPI (chunks start in order within a lane, the
     * same order on every rank). */
    size_t next[256];
    int nl = p->nlanes < 256 ? p->nlanes : 256;
    for (int l = 0; l < nl; l++) {
        next[l] = 0;
        while (next[l] < p->nch && p->ch[next[l]].lane != l)
            next[l]++;
    }
    double last = clf__comm_now();
    unsigned idle = 0;
    while (done < p->nch) {
        int progress = 0;
        for (int l = 0; l < nl; l++) {
            while (next[l] < p->nch && p->ch[next[l]].lane == l) {
                chunk *k = &p->ch[next[l]];
                if (next[l] >= RING_TAGS && p->ch[next[l] - RING_TAGS].lane == l &&
                    p->ch[next[l] - RING_TAGS].stage == ST_MPI)
                    break;
                if (k->stage == ST_READ) {
                    clf_status st;
                    if (k->rev) {
                        if (!ev_poll(k->rev, &st))
                            break;
                        if (st != CLF_SUCCESS)
                            note_local(p, st, "reading a device buffer");
                        clf_event_release(k->rev);
                        k->rev = NULL;
                    }
                    size_t j = 0;
                    for (; j < k->nmore; j++) {
                        if (!k->mev[j])
                            continue;
                        if (!ev_poll(k->mev[j], &st))
                            break;
                        if (st != CLF_SUCCESS)
                            note_local(p, st, "reading a device buffer");
                        clf_event_release(k->mev[j]);
                        k->mev[j] = NULL;
                    }
                    if (j < k->nmore)
                        break;
                    if (p->local == CLF_SUCCESS)
                        for (j = 0; j < k->nmore; j++)
                            combine(k->host, k->host + (j + 1) * k->stride,
                                    k->bytes / clf_type_size(p->type), p->type, p->rop);
                    k->stage = ST_READY;
                }
                if (p->flag)
                    flag_put(p, k->host + k->bytes, p->local != CLF_SUCCESS);
                int err = start_mpi(p, k);
                if (err != MPI_SUCCESS) {
                    pipe_drain(p);
                    char s[MPI_MAX_ERROR_STRING];
                    clf__comm_errstr(err, s, sizeof s);
                    c->broken = 1;
                    return clf_set_error(CLF_ERROR_MPI, "%s: %s (another rank may have failed "
                                                        "or gone)", what, s);
                }
                k->stage = ST_MPI;
                next[l]++;
                progress = 1;
            }
        }
        for (size_t i = 0; i < p->nch; i++) {
            chunk *k = &p->ch[i];
            if (k->stage == ST_MPI) {
                int flag = 0, err = MPI_SUCCESS;
                if (p->ring && p->kind == P_ALLREDUCE) {
                    int t = p->c->size == 1 ? 1 : ring_test(p, k);
                    flag = t > 0;
                    err = t < 0 ? -t : MPI_SUCCESS;
                } else {
                    err = MPI_Test(&k->req, &flag, MPI_STATUS_IGNORE);
                }
                if (err != MPI_SUCCESS) {
                    pipe_drain(p);
                    char s[MPI_MAX_ERROR_STRING];
                    clf__comm_errstr(err, s, sizeof s);
                    c->broken = 1;
                    return clf_set_error(CLF_ERROR_MPI, "%s: %s (another rank may have failed "
                                                        "or gone)", what, s);
                }
                if (!flag)
                    continue;
                progress = 1;
                k->stage = ST_DONE;
                if (p->flag && flag_failed(p, k->host + k->bytes))
                    p->flag_bad = 1; /* no rank writes a result: every rank fails */
                if (p->local == CLF_SUCCESS && !p->flag_bad && k->ndst && p->nch == 1) {
                    for (size_t j = 0; j < k->ndst; j++) {
                        clf_status st = clf_buffer_write(k->dst[j], k->off, k->bytes, k->host);
                        if (st != CLF_SUCCESS) {
                            note_local(p, st, "writing a device buffer");
                            break;
                        }
                    }
                } else if (p->local == CLF_SUCCESS && !p->flag_bad && k->ndst) {
                    for (size_t j = 0; j < k->ndst; j++) {
                        clf_status st = clf_buffer_write_async(k->dst[j], k->off, k->bytes,
                                                               k->host, &k->wev[j]);
                        if (st != CLF_SUCCESS) {
                            note_local(p, st, "writing a device buffer");
                            break;
                        }
                    }
                    k->stage = ST_WRITE;
                }
                if (k->stage == ST_DONE)
                    done++;
            } else if (k->stage == ST_WRITE) {
                size_t j = 0;
                for (; j < k->ndst; j++) {
                    if (!k->wev[j])
                        continue;
                    clf_status st;
                    if (!ev_poll(k->wev[j], &st))
                        break;
                    if (st != CLF_SUCCESS)
                        note_local(p, st, "writing a device buffer");
                    clf_event_release(k->wev[j]);
                    k->wev[j] = NULL;
                }
                if (j == k->ndst) {
                    k->stage = ST_DONE;
                    done++;
                    progress = 1;
                }
            }
        }
        if (progress) {
            last = clf__comm_now();
            idle = 0;
            continue;
        }
        idle++;
        if ((idle & 63) == 0 && c->timeout_s >= 0 && clf__comm_now() - last > c->timeout_s) {
            pipe_drain(p);
            c->broken = 1;
            return clf_set_error(CLF_ERROR_TIMEOUT,
                                 "%s: rank %d waited %.3g s for the other ranks (a rank stuck, "
                                 "gone, or not calling the same collective; "
                                 "clf_comm_options.timeout_s, $CLFLEET_MPI_TIMEOUT)",
                                 what, c->rank, c->timeout_s);
        }
        if (idle < 256)
            continue;
        /* One chunk waits like a blocking MPI call (a spin that yields): a sleep would end
         * long after its one message (each of a ring's 2 (P - 1) steps late by ~60 us). */
        if (idle < 4096 || p->nch == 1) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return CLF_SUCCESS;
}

/* ---- shared pieces ---- */

static clf_status host_mem(clf_comm *c, size_t bytes, char **out)
{
    if (bytes > c->host_bytes) {
        void *m = NULL;
        if (posix_memalign(&m, 4096, bytes ? bytes : 1) != 0)
            return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY,
                                 "rank %d: %zu bytes of host staging memory", c->rank, bytes);
        free(c->host);
        c->host = m;
        c->host_bytes = bytes;
    }
    *out = c->host;
    return CLF_SUCCESS;
}

static int mpi_type(clf_type t, MPI_Datatype *dt)
{
    switch (t) {
    case CLF_TYPE_INT32: *dt = MPI_INT32_T; return 1;
    case CLF_TYPE_UINT32: *dt = MPI_UINT32_T; return 1;
    case CLF_TYPE_INT64: *dt = MPI_INT64_T; return 1;
    case CLF_TYPE_FLOAT: *dt = MPI_FLOAT; return 1;
    case CLF_TYPE_DOUBLE: *dt = MPI_DOUBLE; return 1;
    }
    return 0;
}

static int mpi_op(clf_reduce_op op, MPI_Op *o)
{
    switch (op) {
    case CLF_REDUCE_SUM: *o = MPI_SUM; return 1;
    case CLF_REDUCE_PROD: *o = MPI_PROD; return 1;
    case CLF_REDUCE_MIN: *o = MPI_MIN; return 1;
    case CLF_REDUCE_MAX: *o = MPI_MAX; return 1;
    }
    return 0;
}

/* This rank's buffers for `bytes` bytes each (a local verdict). */
static clf_status check_bufs(clf_comm *c, const char *what, clf_buffer *const *bufs,
                             size_t nbufs, size_t bytes)
{
    if (nbufs == 0 || nbufs > 256)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: rank %d: %zu buffers (1 to 256)",
                             what, c->rank, nbufs);
    if (!bufs)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: rank %d: bufs is NULL", what,
                             c->rank);
    for (size_t i = 0; i < nbufs; i++) {
        if (!bufs[i])
            return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: rank %d: bufs[%zu] is NULL", what,
                                 c->rank, i);
        if (clf_buffer_size(bufs[i]) < bytes)
            return clf_set_error(CLF_ERROR_OUT_OF_RANGE,
                                 "%s: rank %d: bufs[%zu] (device %zu) holds %zu bytes, %zu needed",
                                 what, c->rank, i, clf_buffer_device(bufs[i]),
                                 clf_buffer_size(bufs[i]), bytes);
        for (size_t j = 0; j < i; j++)
            if (clf_buffer_device(bufs[j]) == clf_buffer_device(bufs[i]))
                return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                     "%s: rank %d: bufs[%zu] and bufs[%zu] are both on device "
                                     "%zu",
                                     what, c->rank, j, i, clf_buffer_device(bufs[i]));
    }
    return CLF_SUCCESS;
}

/* A pipe of `kind` for data of `type` under `op` on the communicator itself (one lane). */
static void pipe_init(pipe *p, clf_comm *c, int kind, clf_type type, clf_reduce_op op)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    p->kind = kind;
    mpi_type(type, &p->dt);
    mpi_op(op, &p->op);
    p->type = type;
    p->rop = op;
    p->esize = clf_type_size(type);
    p->comm = &c->comm;
    p->nlanes = 1;
}

/* Chunks of [0, bytes) of one lane (elements of esize), appended to p->ch. */
static void add_chunks(pipe *p, int lane, clf_buffer *src, size_t off, size_t bytes, char *host,
                       size_t esize, clf_buffer *const *dst, size_t ndst, clf_event **wev,
                       clf_buffer *const *more, size_t nmore, char *scratch)
{
    int seq = 0;
    size_t step = (p->chunk ? p->chunk : p->c->chunk_bytes) / esize * esize;
    if (step == 0)
        step = esize;
    for (size_t o = 0; o < bytes; o += step) {
        chunk *k = &p->ch[p->nch++];
        memset(k, 0, sizeof *k);
        k->lane = lane;
        k->src = src;
        k->off = off + o;
        k->bytes = bytes - o < step ? bytes - o : step;
        k->host = host + o;
        k->n = (int)(k->bytes / esize);
        k->dst = dst;
        k->ndst = ndst;
        k->wev = wev + (p->nch - 1) * (ndst + nmore);
        k->more = more;
        k->nmore = nmore;
        k->stride = bytes;
        k->mev = k->wev + ndst;
        k->scratch = scratch ? scratch + o : NULL;
        k->tag = seq++ % RING_TAGS;
    }
}

/* Room for the chunks of `bytes` in `lanes` lanes. */
static clf_status pipe_alloc(pipe *p, size_t bytes, size_t esize, int lanes, size_t ndst,
                             clf_event ***wev)
{
    size_t step = (p->chunk ? p->chunk : p->c->chunk_bytes) / esize * esize;
    if (step == 0)
        step = esize;
    size_t n = bytes / step + (size_t)lanes + 1;
    p->ch = calloc(n, sizeof *p->ch);
    *wev = calloc(n * (ndst + p->nmore_max + 1), sizeof **wev);
    if (!p->ch || !*wev) {
        free(p->ch);
        free(*wev);
        p->ch = NULL;
        *wev = NULL;
        return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "rank %d: out of memory",
                             p->c->rank);
    }
    return CLF_SUCCESS;
}

/* The end of a collective: the pipeline's MPI status, else every rank's local one agreed. */
static clf_status finish(clf_comm *c, clf_status mpi, clf_status local, const char *what)
{
    if (mpi != CLF_SUCCESS)
        return mpi;
    return clf__comm_agree(c, local, what);
}

/* The values every rank must pass alike, compared under CLFLEET_MPI_CHECK. */
static clf_status check_args(clf_comm *c, const char *what, const char *names, int n,
                             const long long *v)
{
    return clf__comm_check(c, what, names, n, v);
}

/* ---- all-reduce ---- */

/* Rank level: this rank's buffers reduced to the host, one pipelined MPI all-reduce, the
 * result written to every buffer. Also the path of small data. */
static clf_status allreduce_flat(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                 size_t count, clf_type type, clf_reduce_op op,
                                 clf_status local, int one_chunk, const char *what)
{
    size_t esize = clf_type_size(type), bytes = count * esize;
    int ok = local == CLF_SUCCESS;
    size_t nsrc = ok ? nbufs : 1;
    char *host = NULL;
    pipe p;
    pipe_init(&p, c, P_ALLREDUCE, type, op);
    p.local = local;
    p.nmore_max = nsrc - 1;
    clf_event **wev = NULL;
    /* Each buffer's chunk read into its own host area, reduced on the host into the first. */
    p.ring = 1;
    p.chunk = one_chunk ? bytes : 0;
    /* One chunk (small data, or one_chunk): its MPI data ends with the status element, and
     * no agreement follows (a second collective, 5-10% of a small all-reduce). */
    p.flag = (one_chunk || bytes <= c->chunk_bytes) && count < INT_MAX;
    size_t slot = p.flag ? bytes + esize : bytes;
    clf_status st = slot < bytes || nsrc + 1 > SIZE_MAX / slot
                        ? clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: staging", what)
                        : host_mem(c, (nsrc + 1) * slot, &host); /* and the ring's scratch */
    if (st == CLF_SUCCESS)
        st = pipe_alloc(&p, bytes, esize, 1, ok ? nbufs : 0, &wev);
    if (st != CLF_SUCCESS)
        return clf__comm_agree(c, st, what); /* no memory: every rank fails, none hangs */
    if (!ok)
        memset(host, 0, bytes);
    add_chunks(&p, 0, ok ? bufs[0] : NULL, 0, bytes, host, esize, ok ? bufs : NULL,
               ok ? nbufs : 0, wev, ok ? bufs + 1 : NULL, ok ? nbufs - 1 : 0,
               host + nsrc * slot);
    if (p.flag) {
        p.ch[0].stride = slot;
        p.ch[0].n = (int)count + 1;
    }
    st = pipe_run(&p, what);
    free(p.ch);
    free(wev);
    if (p.flag && st == CLF_SUCCESS) {
        /* A rank failed before the exchange: every rank saw it in the status element and
         * wrote nothing; one agreement then carries that rank's message to all. */
        if (p.flag_bad)
            return clf__comm_agree(c, p.local, what);
        /* Writing the result failed after the exchange: only this rank can know, and the
         * others' results are complete. It fails, rather than every call pay an agreement. */
        if (p.local != CLF_SUCCESS)
            return clf_set_error(p.local, "%s: %s (the other ranks' results are complete)",
                                 what, clf_last_error());
        return CLF_SUCCESS;
    }
    return finish(c, st, p.local, what);
}

/*
 * Every rank's devices use the host's memory: this rank's buffers are mapped
 * (clf_buffer_map(): with CPU devices the buffers' own memory) and the ring runs in the
 * first one's memory, so no byte is staged. Against reading the buffers to the host, MPI,
 * and writing them back, two copies of the data go, which is most of the time on a machine
 * whose "network" is its memory. The other buffers of the rank are combined into the first
 * before the ring (the order allreduce_flat() uses), and get the result after it. A rank
 * whose arguments are wrong or whose map fails takes part with zeros, then every rank fails
 * (finish()).
 */
static clf_status allreduce_mapped(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                   size_t count, clf_type type, clf_reduce_op op,
                                   clf_status local, const char *what)
{
    size_t esize = clf_type_size(type), bytes = count * esize, mapped = 0;
    char **map = calloc(nbufs ? nbufs : 1, sizeof *map), *host = NULL;
    pipe p;
    pipe_init(&p, c, P_ALLREDUCE, type, op);
    p.ring = 1;
    p.chunk = bytes;
    p.local = local != CLF_SUCCESS ? local
              : map            ? CLF_SUCCESS
                               : clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "rank %d: memory",
                                               c->rank);
    for (; p.local == CLF_SUCCESS && mapped < nbufs; mapped++) {
        clf_status st = clf_buffer_map((void **)&map[mapped], bufs[mapped], 0, bytes,
                                       CLF_MAP_READ | CLF_MAP_WRITE);
        if (st != CLF_SUCCESS) {
            note_local(&p, st, "mapping a device buffer");
            break;
        }
    }
    int ok = p.local == CLF_SUCCESS;
    clf_event **wev = NULL;
    /* The ring's scratch, and zeros in place of the data of a rank that failed. */
    clf_status st = host_mem(c, ok ? bytes : 2 * bytes, &host);
    if (st == CLF_SUCCESS)
        st = pipe_alloc(&p, bytes, esize, 1, 0, &wev);
    if (st == CLF_SUCCESS) {
        char *data = ok ? map[0] : host + bytes;
        if (ok)
            for (size_t j = 1; j < nbufs; j++)
                combine(data, map[j], count, type, op);
        else
            memset(data, 0, bytes);
        add_chunks(&p, 0, NULL, 0, bytes, data, esize, NULL, 0, wev, NULL, 0, host);
        st = pipe_run(&p, what);
        for (size_t j = 1; ok && st == CLF_SUCCESS && j < nbufs; j++)
            memcpy(map[j], data, bytes);
    } else {
        st = clf__comm_agree(c, st, what); /* no memory: every rank fails, none hangs */
    }
    for (size_t j = 0; j < mapped; j++) {
        clf_status u = clf_buffer_unmap(bufs[j], map[j]);
        if (u != CLF_SUCCESS)
            note_local(&p, u, "unmapping a device buffer");
    }
    free(map);
    free(p.ch);
    free(wev);
    return st != CLF_SUCCESS ? st : finish(c, st, p.local, what);
}

/* 1 when a buffer's device has its own memory (a GPU: copies go over PCIe and can overlap
 * the network), 0 when every device's memory is the host's (CPU devices, host-unified
 * memory), where every stage of a pipeline is a memcpy on the same cores: chunks only add
 * events and polling, and mapping the buffers (no stage at all) is the fastest plan. */
static long long discrete_devices(clf_comm *c, clf_buffer *const *bufs, size_t nbufs)
{
    for (size_t i = 0; i < nbufs; i++)
        if (clf__comm_discrete(c->fleet, clf_buffer_device(bufs[i])))
            return 1;
    return 0;
}

/* Hierarchical: the fleet's all-reduce, each device's shard across ranks on its own lane
 * (all lanes at once), the fleet's all-gather. Every rank has nbufs buffers. */
static clf_status allreduce_lanes(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                  size_t count, clf_type type, clf_reduce_op op,
                                  const char *what)
{
    size_t esize = clf_type_size(type), bytes = count * esize;
    char *host = NULL;
    pipe p;
    pipe_init(&p, c, P_ALLREDUCE, type, op);
    p.ring = 1;
    p.nlanes = (int)nbufs;
    p.comm = malloc(nbufs * sizeof *p.comm);
    clf_event **wev = NULL;
    clf_status st = p.comm ? CLF_SUCCESS
                           : clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "rank %d: memory",
                                           c->rank);
    if (st == CLF_SUCCESS)
        st = bytes > SIZE_MAX / 2 ? clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: staging", what)
                                  : host_mem(c, 2 * bytes, &host); /* and the ring's scratch */
    if (st == CLF_SUCCESS)
        st = pipe_alloc(&p, bytes, esize, (int)nbufs, 1, &wev);
    st = clf__comm_agree(c, st, what);
    for (size_t d = 0; st == CLF_SUCCESS && d < nbufs; d++)
        st = clf__comm_lane(c, (int)d, &p.comm[d]);
    if (st != CLF_SUCCESS) {
        free(p.comm);
        free(p.ch);
        free(wev);
        return st;
    }
    /* (1) inside the fleet: every device the fleet's sum (the ring's reduce-scatter half
     * is what the lanes need; clfleet's public API has the whole all-reduce). */
    st = clf_allreduce(bufs, nbufs, count, type, op, NULL);
    if (st != CLF_SUCCESS)
        p.local = clf_set_error(st, "rank %d: the fleet's all-reduce: %s", c->rank,
                                clf_last_error());
    /* (2) shard d of device d across ranks on lane d, chunk by chunk. */
    for (size_t d = 0; d < nbufs; d++) {
        size_t first = 0, len = 0;
        clf_distribution_part(&first, &len, count, nbufs, d, CLF_DIST_BLOCK, 0);
        if (p.local != CLF_SUCCESS)
            memset(host + first * esize, 0, len * esize);
        int ok = p.local == CLF_SUCCESS;
        add_chunks(&p, (int)d, ok ? bufs[d] : NULL, first * esize, len * esize,
                   host + first * esize, esize, ok ? &bufs[d] : NULL, ok ? 1 : 0, wev, NULL, 0,
                   host + bytes + first * esize);
    }
    st = pipe_run(&p, what);
    free(p.ch);
    free(wev);
    free(p.comm);
    /* (3) inside the fleet: every device every shard. */
    if (st == CLF_SUCCESS && p.local == CLF_SUCCESS) {
        clf_status g = clf_allgather(bufs, nbufs, count, esize, NULL);
        if (g != CLF_SUCCESS)
            p.local = clf_set_error(g, "rank %d: the fleet's all-gather: %s", c->rank,
                                    clf_last_error());
    }
    return finish(c, st, p.local, what);
}

clf_status clf_comm_allreduce(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t count,
                              clf_type type, clf_reduce_op op)
{
    static const char what[] = "clf_comm_allreduce";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: NULL communicator", what);
    if (c->broken)
        return clf__comm_agree(c, CLF_SUCCESS, what); /* says it failed earlier */
    MPI_Datatype dt;
    MPI_Op mo;
    size_t esize = clf_type_size(type);
    long long v[3] = {(long long)count, (long long)type, (long long)op};
    clf_status st = check_args(c, what, "count,type,op", 3, v);
    if (st != CLF_SUCCESS)
        return st;
    /* Arguments that are the same on every rank: every rank finds the same, no MPI. */
    if (!mpi_type(type, &dt) || esize == 0)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown type %d", what, type);
    if (!mpi_op(op, &mo))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown operation %d", what, op);
    if (count == 0)
        return clf_set_error(CLF_ERROR_ZERO_SIZE, "%s: count is 0", what);
    if (count > SIZE_MAX / esize || count > (size_t)LLONG_MAX / esize)
        return clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu elements of %zu bytes", what,
                             count, esize);
    size_t bytes = count * esize;
    clf_status local = check_bufs(c, what, bufs, nbufs, bytes);
    /* Every device of every rank uses the host's memory (agreed by clf_comm_create()): the
     * buffers mapped, nothing staged. Below MAPPED_MIN, the staged one-message path (its
     * status rides in the data) costs less than the mapped one's agreement at the end. */
    const char *algo = getenv("CLFLEET_MPI_ALLREDUCE");
    if (c->host_memory && bytes >= MAPPED_MIN && count < (size_t)INT_MAX &&
        (!algo || !strcmp(algo, "mapped")))
        return allreduce_mapped(c, bufs, nbufs, count, type, op, local, what);
    /* Small data, or one device per rank: the rank-level path, which needs no agreement
     * first (a rank whose buffers are wrong takes part with zeros, then fails them all). */
    if (bytes <= c->chunk_bytes)
        return allreduce_flat(c, bufs, nbufs, count, type, op, local, 0, what);
    /* Large: agree on the arguments and learn every rank's device count, and whether any
     * rank has a device with its own memory, in one step. */
    long long mv[2] = {local == CLF_SUCCESS ? (long long)nbufs : 0,
                       local == CLF_SUCCESS ? discrete_devices(c, bufs, nbufs) : 0};
    long long lo[2] = {0, 0}, hi[2] = {0, 0};
    st = clf__comm_agree_meta(c, local, what, 2, mv, lo, hi);
    if (st != CLF_SUCCESS)
        return st;
    /* $CLFLEET_MPI_ALLREDUCE (the same on every rank, as the environment of one mpirun is):
     * flat: the rank-level path for every size (comparisons); pipelined: chunks (and lanes)
     * even when every device's memory is the host's; single: one chunk even with discrete
     * devices. Unset: pipelined only when some rank has a discrete device. */
    int pipelined = hi[1] > 0;
    if (algo && !strcmp(algo, "pipelined"))
        pipelined = 1;
    else if (algo && !strcmp(algo, "single"))
        pipelined = 0;
    if (count >= (size_t)INT_MAX)
        pipelined = 1; /* one chunk is one MPI message: at most INT_MAX elements */
    if (!pipelined && hi[1] == 0 && (!algo || !strcmp(algo, "mapped")))
        return allreduce_mapped(c, bufs, nbufs, count, type, op, CLF_SUCCESS, what);
    if (!pipelined)
        return allreduce_flat(c, bufs, nbufs, count, type, op, CLF_SUCCESS, 1, what);
    if (lo[0] != hi[0] || nbufs == 1 || (algo && !strcmp(algo, "flat")))
        return allreduce_flat(c, bufs, nbufs, count, type, op, CLF_SUCCESS, 0, what);
    return allreduce_lanes(c, bufs, nbufs, count, type, op, what);
}

/* ---- reduce ---- */

clf_status clf_comm_reduce(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t count,
                           clf_type type, clf_reduce_op op, int root, size_t root_buf)
{
    static const char what[] = "clf_comm_reduce";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: NULL communicator", what);
    if (c->broken)
        return clf__comm_agree(c, CLF_SUCCESS, what); /* says it failed earlier */
    MPI_Datatype dt;
    MPI_Op mo;
    size_t esize = clf_type_size(type);
    long long v[5] = {(long long)count, (long long)type, (long long)op, (long long)root,
                      (long long)(root_buf > (size_t)LLONG_MAX ? -1 : (long long)root_buf)};
    clf_status st = check_args(c, what, "count,type,op,root,root_buf", 5, v);
    if (st != CLF_SUCCESS)
        return st;
    if (!mpi_type(type, &dt) || esize == 0)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown type %d", what, type);
    if (!mpi_op(op, &mo))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown operation %d", what, op);
    if (root < 0 || root >= c->size)
        return clf_set_error(CLF_ERROR_OUT_OF_RANGE, "%s: root %d of %d ranks", what, root,
                             c->size);
    if (count == 0)
        return clf_set_error(CLF_ERROR_ZERO_SIZE, "%s: count is 0", what);
    if (count > SIZE_MAX / esize || count > (size_t)LLONG_MAX / esize)
        return clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu elements of %zu bytes", what,
                             count, esize);
    size_t bytes = count * esize;
    clf_status local = check_bufs(c, what, bufs, nbufs, bytes);
    if (local == CLF_SUCCESS && c->rank == root && root_buf >= nbufs)
        local = clf_set_error(CLF_ERROR_OUT_OF_RANGE, "%s: root_buf %zu of %zu buffers on the "
                                                      "root rank %d", what, root_buf, nbufs,
                              root);
    int ok = local == CLF_SUCCESS, isroot = c->rank == root;
    size_t nsrc = ok ? nbufs : 1;
    char *host = NULL;
    pipe p;
    pipe_init(&p, c, P_REDUCE, type, op);
    p.root = root;
    p.local = local;
    p.nmore_max = nsrc - 1;
    clf_event **wev = NULL;
    st = nsrc > SIZE_MAX / bytes ? clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: staging", what)
                                 : host_mem(c, nsrc * bytes, &host);
    if (st == CLF_SUCCESS)
        st = pipe_alloc(&p, bytes, esize, 1, 1, &wev);
    if (st != CLF_SUCCESS)
        return clf__comm_agree(c, st, what);
    if (!ok)
        memset(host, 0, bytes);
    add_chunks(&p, 0, ok ? bufs[0] : NULL, 0, bytes, host, esize,
               ok && isroot ? &bufs[root_buf] : NULL, ok && isroot ? 1 : 0, wev,
               ok ? bufs + 1 : NULL, ok ? nbufs - 1 : 0, NULL);
    st = pipe_run(&p, what);
    free(p.ch);
    free(wev);
    return finish(c, st, p.local, what);
}

/* ---- broadcast ---- */

clf_status clf_comm_broadcast(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t size,
                              int root, size_t root_buf)
{
    static const char what[] = "clf_comm_broadcast";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: NULL communicator", what);
    if (c->broken)
        return clf__comm_agree(c, CLF_SUCCESS, what); /* says it failed earlier */
    long long v[3] = {(long long)(size > (size_t)LLONG_MAX ? -1 : (long long)size),
                      (long long)root,
                      (long long)(root_buf > (size_t)LLONG_MAX ? -1 : (long long)root_buf)};
    clf_status st = check_args(c, what, "size,root,root_buf", 3, v);
    if (st != CLF_SUCCESS)
        return st;
    if (root < 0 || root >= c->size)
        return clf_set_error(CLF_ERROR_OUT_OF_RANGE, "%s: root %d of %d ranks", what, root,
                             c->size);
    if (size == 0)
        return clf_set_error(CLF_ERROR_ZERO_SIZE, "%s: size is 0", what);
    clf_status local = check_bufs(c, what, bufs, nbufs, size);
    int isroot = c->rank == root;
    if (local == CLF_SUCCESS && isroot && root_buf >= nbufs)
        local = clf_set_error(CLF_ERROR_OUT_OF_RANGE, "%s: root_buf %zu of %zu buffers on the "
                                                      "root rank %d", what, root_buf, nbufs,
                              root);
    /* The root writes its other buffers; the others all of theirs. */
    clf_buffer **dst = NULL;
    size_t ndst = 0;
    if (local == CLF_SUCCESS) {
        dst = malloc(nbufs * sizeof *dst);
        if (!dst)
            local = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "rank %d: memory", c->rank);
        for (size_t i = 0; dst && i < nbufs; i++)
            if (!isroot || i != root_buf)
                dst[ndst++] = bufs[i];
    }
    char *host = NULL;
    pipe p;
    memset(&p, 0, sizeof p);
    p.c = c;
    p.kind = P_BCAST;
    p.root = root;
    p.dt = MPI_BYTE;
    p.comm = &c->comm;
    p.nlanes = 1;
    p.local = local;
    clf_event **wev = NULL;
    st = host_mem(c, size, &host);
    if (st == CLF_SUCCESS)
        st = pipe_alloc(&p, size, 1, 1, ndst, &wev);
    if (st != CLF_SUCCESS) {
        free(dst);
        return clf__comm_agree(c, st, what);
    }
    if (p.local != CLF_SUCCESS && isroot)
        memset(host, 0, size);
    int ok = p.local == CLF_SUCCESS;
    add_chunks(&p, 0, ok && isroot ? bufs[root_buf] : NULL, 0, size, host, 1,
               ok ? dst : NULL, ok ? ndst : 0, wev, NULL, 0, NULL);
    st = pipe_run(&p, what);
    free(p.ch);
    free(wev);
    free(dst);
    return finish(c, st, p.local, what);
}

/* ---- all-gather ---- */

clf_status clf_comm_allgather(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t count,
                              size_t elem_size)
{
    static const char what[] = "clf_comm_allgather";
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "%s: NULL communicator", what);
    if (c->broken)
        return clf__comm_agree(c, CLF_SUCCESS, what); /* says it failed earlier */
    long long v[2] = {(long long)(count > (size_t)LLONG_MAX ? -1 : (long long)count),
                      (long long)(elem_size > (size_t)LLONG_MAX ? -1 : (long long)elem_size)};
    clf_status st = check_args(c, what, "count,elem_size", 2, v);
    if (st != CLF_SUCCESS)
        return st;
    if (count == 0 || elem_size == 0)
        return clf_set_error(CLF_ERROR_ZERO_SIZE, "%s: count %zu, elem_size %zu", what, count,
                             elem_size);
    if (count > SIZE_MAX / elem_size || count * elem_size > (size_t)INT_MAX)
        return clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu elements of %zu bytes per "
                                                      "position (at most 2 GiB)", what, count,
                             elem_size);
    size_t seg = count * elem_size;
    clf_status local = nbufs == 0 || nbufs > 256
                           ? clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                           "%s: rank %d: %zu buffers (1 to 256)", what, c->rank,
                                           nbufs)
                           : CLF_SUCCESS;
    /* Every rank's position count (a failing rank says -1), the first step. */
    int mine = local == CLF_SUCCESS ? (int)nbufs : -1;
    int *counts = malloc((size_t)c->size * sizeof *counts);
    int *rc = malloc((size_t)c->size * 2 * sizeof *rc);
    if (!counts || !rc) {
        free(counts);
        free(rc);
        return clf__comm_agree(c, clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "memory"), what);
    }
    MPI_Request r;
    int err = MPI_Iallgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, c->comm, &r);
    st = err == MPI_SUCCESS ? clf__comm_wait(c, 1, &r, what)
                            : clf_set_error(CLF_ERROR_MPI, "%s: MPI_Iallgather failed", what);
    size_t total = 0, before = 0;
    for (int q = 0; st == CLF_SUCCESS && q < c->size; q++) {
        if (counts[q] < 0)
            continue;
        if (q < c->rank)
            before += (size_t)counts[q];
        total += (size_t)counts[q];
    }
    if (st == CLF_SUCCESS && total > 0 && (total > SIZE_MAX / seg))
        st = clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu positions", what, total);
    int anybad = 0;
    for (int q = 0; st == CLF_SUCCESS && q < c->size; q++)
        anybad |= counts[q] < 0;
    if (st != CLF_SUCCESS || anybad) {
        free(counts);
        free(rc);
        if (st != CLF_SUCCESS && c->broken)
            return st;
        return clf__comm_agree(c, st != CLF_SUCCESS ? st : local, what);
    }
    size_t whole = total * seg;
    if (local == CLF_SUCCESS)
        local = check_bufs(c, what, bufs, nbufs, whole);
    /* Displacements count segments (a contiguous type of one segment) in MPI's ints. */
    if (total > (size_t)INT_MAX && local == CLF_SUCCESS)
        local = clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu positions", what, total);
    char *host = NULL;
    if (local == CLF_SUCCESS)
        local = host_mem(c, whole, &host);
    /* Every rank ready (buffers, memory) before the data moves, else all fail now. */
    st = clf__comm_agree(c, local, what);
    if (st != CLF_SUCCESS) {
        free(counts);
        free(rc);
        return st;
    }
    /* Its own segments to the host; a read that fails still lets the rank take part. */
    clf_event **ev = calloc(nbufs * 2, sizeof *ev);
    if (!ev)
        local = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "rank %d: memory", c->rank);
    for (size_t i = 0; ev && i < nbufs; i++) {
        size_t off = (before + i) * seg;
        clf_status s = clf_buffer_read_async(bufs[i], off, seg, host + off, &ev[i]);
        if (s != CLF_SUCCESS && local == CLF_SUCCESS)
            local = clf_set_error(s, "rank %d: reading bufs[%zu]: %s", c->rank, i,
                                  clf_last_error());
    }
    for (size_t i = 0; ev && i < nbufs; i++)
        if (ev[i]) {
            clf_status s = clf_event_wait(ev[i]);
            if (s != CLF_SUCCESS && local == CLF_SUCCESS)
                local = clf_set_error(s, "rank %d: reading bufs[%zu]: %s", c->rank, i,
                                      clf_last_error());
            clf_event_release(ev[i]);
            ev[i] = NULL;
        }
    MPI_Datatype segt;
    MPI_Type_contiguous((int)seg, MPI_BYTE, &segt);
    MPI_Type_commit(&segt);
    int *displs = rc + c->size;
    int d = 0;
    for (int q = 0; q < c->size; q++) {
        rc[q] = counts[q];
        displs[q] = d;
        d += counts[q];
    }
    err = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host, rc, displs, segt, c->comm,
                          &r);
    if (err != MPI_SUCCESS) {
        char m[MPI_MAX_ERROR_STRING];
        clf__comm_errstr(err, m, sizeof m);
        c->broken = 1;
        st = clf_set_error(CLF_ERROR_MPI, "%s: MPI_Iallgatherv: %s", what, m);
    } else {
        st = clf__comm_wait(c, 1, &r, what);
    }
    MPI_Type_free(&segt);
    free(counts);
    free(rc);
    /* Every buffer: all but its own segment, in two writes. */
    for (size_t i = 0; ev && st == CLF_SUCCESS && local == CLF_SUCCESS && i < nbufs; i++) {
        size_t lo = (before + i) * seg, hi = lo + seg;
        clf_status s = CLF_SUCCESS;
        if (lo > 0)
            s = clf_buffer_write_async(bufs[i], 0, lo, host, &ev[2 * i]);
        if (s == CLF_SUCCESS && hi < whole)
            s = clf_buffer_write_async(bufs[i], hi, whole - hi, host + hi, &ev[2 * i + 1]);
        if (s != CLF_SUCCESS)
            local = clf_set_error(s, "rank %d: writing bufs[%zu]: %s", c->rank, i,
                                  clf_last_error());
    }
    for (size_t i = 0; ev && i < 2 * nbufs; i++)
        if (ev[i]) {
            clf_status s = clf_event_wait(ev[i]);
            if (s != CLF_SUCCESS && local == CLF_SUCCESS)
                local = clf_set_error(s, "rank %d: writing the gathered data: %s", c->rank,
                                      clf_last_error());
            clf_event_release(ev[i]);
        }
    free(ev);
    return finish(c, st, local, what);
}

/* The collectives' chunk pipeline (coll.c's engine, libclfleet-mpi): data crosses ranks
 * through host memory, chunk by chunk (clf__pipe_run): device reads, MPI and device writes of
 * different chunks overlap. Across ranks the all-reduce is a ring of point-to-point messages
 * per chunk (ring_post). A rank whose devices fail still takes part in the MPI steps (its data
 * unused); in one chunk a status element in the data (flag_put) tells every rank. Also the
 * host side of a reduction (clf__combine) and a pipe's setup (clf__pipe_init, clf__add_chunks,
 * clf__pipe_alloc). Its types are in pipe.h. */
#include "pipe.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clfleet/opencl.h" /* <CL/cl.h>, at the OpenCL version clfleet targets */

/* ---- the pipeline: chunks read from a device, through MPI, written to devices ---- */

enum { ST_READ, ST_READY, ST_MPI, ST_WRITE, ST_DONE };
/* Ring messages of chunk j of a lane carry tag j % RING_TAGS; chunk j starts only once chunk
 * j - RING_TAGS has ended, so that no two chunks in flight share a tag. */
#define RING_TAGS 4096

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

/* The signed integers: sums and products wrap like the devices' (and MPI's), in U, the
 * unsigned type of the same width; minimum and maximum compare as S. */
#define COMBINE_SIGNED(U, S)                                                                  \
    do {                                                                                      \
        U *a = dst;                                                                           \
        const U *b = src;                                                                     \
        const S *sa = dst, *sb = src;                                                         \
        switch (op) {                                                                         \
        case CLF_REDUCE_SUM: sum_##U(a, b, n); break;                                         \
        case CLF_REDUCE_PROD: for (size_t i = 0; i < n; i++) a[i] *= b[i]; break;             \
        case CLF_REDUCE_MIN:                                                                  \
            for (size_t i = 0; i < n; i++) a[i] = (U)(sb[i] < sa[i] ? sb[i] : sa[i]);         \
            break;                                                                            \
        default:                                                                              \
            for (size_t i = 0; i < n; i++) a[i] = (U)(sb[i] > sa[i] ? sb[i] : sa[i]);         \
            break;                                                                            \
        }                                                                                     \
    } while (0)

void clf__combine(void *dst, const void *src, size_t n, clf_type t, clf_reduce_op op)
{
    switch (t) {
    case CLF_TYPE_INT32: COMBINE_SIGNED(uint32_t, int32_t); break;
    case CLF_TYPE_INT64: COMBINE_SIGNED(uint64_t, int64_t); break;
    case CLF_TYPE_UINT32: COMBINE(uint32_t); break;
    case CLF_TYPE_FLOAT: COMBINE(float); break;
    default: COMBINE(double); break;
    }
}

void clf__note_local(clf__pipe *p, clf_status st, const char *what)
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
static void flag_put(clf__pipe *p, void *at, int failed)
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

static int flag_failed(const clf__pipe *p, const void *at)
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
static int ring_post(clf__pipe *p, clf__pipe_chunk *k)
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
static int ring_test(clf__pipe *p, clf__pipe_chunk *k)
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
            clf__combine(k->host + f * p->esize, k->scratch + f * p->esize, l, p->type, p->rop);
        }
        if (++k->step >= 2 * (P - 1))
            return 1;
        if ((err = ring_post(p, k)) != MPI_SUCCESS)
            return -err;
    }
}

static int start_mpi(clf__pipe *p, clf__pipe_chunk *k)
{
    MPI_Comm comm = p->comm[k->lane];
    if (p->kind == CLF__PIPE_ALLREDUCE && p->ring) {
        k->step = 0;
        k->req = MPI_REQUEST_NULL;
        if (p->c->size == 1)
            return MPI_SUCCESS;
        return ring_post(p, k);
    }
    switch (p->kind) {
    case CLF__PIPE_ALLREDUCE:
        return MPI_Iallreduce(MPI_IN_PLACE, k->host, k->n, p->dt, p->op, comm, &k->req);
    case CLF__PIPE_BCAST:
        return MPI_Ibcast(k->host, k->n, p->dt, p->root, comm, &k->req);
    default:
        return p->c->rank == p->root
                   ? MPI_Ireduce(MPI_IN_PLACE, k->host, k->n, p->dt, p->op, p->root, comm,
                                 &k->req)
                   : MPI_Ireduce(k->host, NULL, k->n, p->dt, p->op, p->root, comm, &k->req);
    }
}

/* Wait for every device command still running (the host memory outlives them). */
static void pipe_drain(clf__pipe *p)
{
    for (size_t i = 0; i < p->nch; i++) {
        clf__pipe_chunk *k = &p->ch[i];
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
clf_status clf__pipe_run(clf__pipe *p, const char *what)
{
    clf_comm *c = p->c;
    size_t done = 0;
    for (size_t i = 0; i < p->nch; i++) {
        clf__pipe_chunk *k = &p->ch[i];
        k->stage = ST_READY;
        k->req = MPI_REQUEST_NULL;
        if (k->src && p->local == CLF_SUCCESS && p->nch == 1) {
            /* One chunk: nothing to overlap, and blocking copies cost less than events. */
            clf_status st = clf_buffer_read(k->src, k->off, k->bytes, k->host);
            for (size_t j = 0; st == CLF_SUCCESS && j < k->nmore; j++)
                st = clf_buffer_read(k->more[j], k->off, k->bytes,
                                     k->host + (j + 1) * k->stride);
            if (st != CLF_SUCCESS)
                clf__note_local(p, st, "reading a device buffer");
            else
                for (size_t j = 0; j < k->nmore; j++)
                    clf__combine(k->host, k->host + (j + 1) * k->stride,
                                 k->bytes / clf_type_size(p->type), p->type, p->rop);
        } else if (k->src && p->local == CLF_SUCCESS) {
            clf_status st = clf_buffer_read_async(k->src, k->off, k->bytes, k->host, &k->rev);
            for (size_t j = 0; st == CLF_SUCCESS && j < k->nmore; j++)
                st = clf_buffer_read_async(k->more[j], k->off, k->bytes,
                                           k->host + (j + 1) * k->stride, &k->mev[j]);
            if (st != CLF_SUCCESS)
                clf__note_local(p, st, "reading a device buffer");
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
                clf__pipe_chunk *k = &p->ch[next[l]];
                if (next[l] >= RING_TAGS && p->ch[next[l] - RING_TAGS].lane == l &&
                    p->ch[next[l] - RING_TAGS].stage == ST_MPI)
                    break;
                if (k->stage == ST_READ) {
                    clf_status st;
                    if (k->rev) {
                        if (!ev_poll(k->rev, &st))
                            break;
                        if (st != CLF_SUCCESS)
                            clf__note_local(p, st, "reading a device buffer");
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
                            clf__note_local(p, st, "reading a device buffer");
                        clf_event_release(k->mev[j]);
                        k->mev[j] = NULL;
                    }
                    if (j < k->nmore)
                        break;
                    if (p->local == CLF_SUCCESS)
                        for (j = 0; j < k->nmore; j++)
                            clf__combine(k->host, k->host + (j + 1) * k->stride,
                                         k->bytes / clf_type_size(p->type), p->type, p->rop);
                    k->stage = ST_READY;
                }
                if (p->flag)
                    flag_put(p, k->host + k->bytes, p->local != CLF_SUCCESS);
                int err = start_mpi(p, k);
                if (err != MPI_SUCCESS) {
                    pipe_drain(p);
                    return clf__comm_mpi_fail(c, err, what);
                }
                k->stage = ST_MPI;
                next[l]++;
                progress = 1;
            }
        }
        for (size_t i = 0; i < p->nch; i++) {
            clf__pipe_chunk *k = &p->ch[i];
            if (k->stage == ST_MPI) {
                int flag = 0, err = MPI_SUCCESS;
                if (p->ring && p->kind == CLF__PIPE_ALLREDUCE) {
                    int t = p->c->size == 1 ? 1 : ring_test(p, k);
                    flag = t > 0;
                    err = t < 0 ? -t : MPI_SUCCESS;
                } else {
                    err = MPI_Test(&k->req, &flag, MPI_STATUS_IGNORE);
                }
                if (err != MPI_SUCCESS) {
                    pipe_drain(p);
                    return clf__comm_mpi_fail(c, err, what);
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
                            clf__note_local(p, st, "writing a device buffer");
                            break;
                        }
                    }
                } else if (p->local == CLF_SUCCESS && !p->flag_bad && k->ndst) {
                    for (size_t j = 0; j < k->ndst; j++) {
                        clf_status st = clf_buffer_write_async(k->dst[j], k->off, k->bytes,
                                                               k->host, &k->wev[j]);
                        if (st != CLF_SUCCESS) {
                            clf__note_local(p, st, "writing a device buffer");
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
                        clf__note_local(p, st, "writing a device buffer");
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

/* ---- a pipe's setup (the collectives of coll.c build their pipes with these) ---- */

int clf__mpi_type(clf_type t, MPI_Datatype *dt)
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

int clf__mpi_op(clf_reduce_op op, MPI_Op *o)
{
    switch (op) {
    case CLF_REDUCE_SUM: *o = MPI_SUM; return 1;
    case CLF_REDUCE_PROD: *o = MPI_PROD; return 1;
    case CLF_REDUCE_MIN: *o = MPI_MIN; return 1;
    case CLF_REDUCE_MAX: *o = MPI_MAX; return 1;
    }
    return 0;
}

/* A pipe of `kind` for data of `type` under `op` on the communicator itself (one lane). */
void clf__pipe_init(clf__pipe *p, clf_comm *c, int kind, clf_type type, clf_reduce_op op)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    p->kind = kind;
    clf__mpi_type(type, &p->dt);
    clf__mpi_op(op, &p->op);
    p->type = type;
    p->rop = op;
    p->esize = clf_type_size(type);
    p->comm = &c->comm;
    p->nlanes = 1;
}

/* Chunks of [0, bytes) of one lane (elements of esize), appended to p->ch. */
void clf__add_chunks(clf__pipe *p, int lane, clf_buffer *src, size_t off, size_t bytes, char *host,
                     size_t esize, clf_buffer *const *dst, size_t ndst, clf_event **wev,
                     clf_buffer *const *more, size_t nmore, char *scratch)
{
    int seq = 0;
    size_t step = (p->chunk ? p->chunk : p->c->chunk_bytes) / esize * esize;
    if (step == 0)
        step = esize;
    for (size_t o = 0; o < bytes; o += step) {
        clf__pipe_chunk *k = &p->ch[p->nch++];
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
clf_status clf__pipe_alloc(clf__pipe *p, size_t bytes, size_t esize, int lanes, size_t ndst,
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

/* Collectives across ranks on each rank's per-device buffers: all-reduce, reduce,
 * broadcast, all-gather, on the chunk pipeline of pipe.c (data through host memory, chunk by
 * chunk, device reads, MPI and device writes of different chunks overlapping). The all-reduce
 * of large data with the same device count on every rank is hierarchical (the fleet's
 * all-reduce, each device's shard across ranks on its own lane communicator, all lanes at
 * once, then the fleet's all-gather); small data, and ranks with different device counts, go
 * rank by rank (every buffer read and reduced on the host, across ranks, written back);
 * devices using the host's memory are mapped, nothing staged (allreduce_mapped). A rank whose
 * own arguments or devices fail still takes part in the MPI steps (its data unused), and a
 * last agreement gives every rank the same status, or in one chunk a status element in the
 * data (pipe.c). */
#include "comm.h"
#include "pipe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The smallest all-reduce that maps buffers using the host's memory (allreduce_mapped()). */
#define MAPPED_MIN ((size_t)256 << 10)

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
    clf__pipe p;
    clf__pipe_init(&p, c, CLF__PIPE_ALLREDUCE, type, op);
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
        st = clf__pipe_alloc(&p, bytes, esize, 1, ok ? nbufs : 0, &wev);
    if (st != CLF_SUCCESS)
        return clf__comm_agree(c, st, what); /* no memory: every rank fails, none hangs */
    if (!ok)
        memset(host, 0, bytes);
    clf__add_chunks(&p, 0, ok ? bufs[0] : NULL, 0, bytes, host, esize, ok ? bufs : NULL,
                    ok ? nbufs : 0, wev, ok ? bufs + 1 : NULL, ok ? nbufs - 1 : 0,
                    host + nsrc * slot);
    if (p.flag) {
        p.ch[0].stride = slot;
        p.ch[0].n = (int)count + 1;
    }
    st = clf__pipe_run(&p, what);
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
    clf__pipe p;
    clf__pipe_init(&p, c, CLF__PIPE_ALLREDUCE, type, op);
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
            clf__note_local(&p, st, "mapping a device buffer");
            break;
        }
    }
    int ok = p.local == CLF_SUCCESS;
    clf_event **wev = NULL;
    /* The ring's scratch, and zeros in place of the data of a rank that failed. */
    clf_status st = host_mem(c, ok ? bytes : 2 * bytes, &host);
    if (st == CLF_SUCCESS)
        st = clf__pipe_alloc(&p, bytes, esize, 1, 0, &wev);
    if (st == CLF_SUCCESS) {
        char *data = ok ? map[0] : host + bytes;
        if (ok)
            for (size_t j = 1; j < nbufs; j++)
                clf__combine(data, map[j], count, type, op);
        else
            memset(data, 0, bytes);
        clf__add_chunks(&p, 0, NULL, 0, bytes, data, esize, NULL, 0, wev, NULL, 0, host);
        st = clf__pipe_run(&p, what);
        for (size_t j = 1; ok && st == CLF_SUCCESS && j < nbufs; j++)
            memcpy(map[j], data, bytes);
    } else {
        st = clf__comm_agree(c, st, what); /* no memory: every rank fails, none hangs */
    }
    for (size_t j = 0; j < mapped; j++) {
        clf_status u = clf_buffer_unmap(bufs[j], map[j]);
        if (u != CLF_SUCCESS)
            clf__note_local(&p, u, "unmapping a device buffer");
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
    clf__pipe p;
    clf__pipe_init(&p, c, CLF__PIPE_ALLREDUCE, type, op);
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
        st = clf__pipe_alloc(&p, bytes, esize, (int)nbufs, 1, &wev);
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
        clf__add_chunks(&p, (int)d, ok ? bufs[d] : NULL, first * esize, len * esize,
                        host + first * esize, esize, ok ? &bufs[d] : NULL, ok ? 1 : 0, wev,
                        NULL, 0, host + bytes + first * esize);
    }
    st = clf__pipe_run(&p, what);
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
    if (!clf__mpi_type(type, &dt) || esize == 0)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown type %d", what, type);
    if (!clf__mpi_op(op, &mo))
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
    if (!clf__mpi_type(type, &dt) || esize == 0)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "%s: unknown type %d", what, type);
    if (!clf__mpi_op(op, &mo))
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
    clf__pipe p;
    clf__pipe_init(&p, c, CLF__PIPE_REDUCE, type, op);
    p.root = root;
    p.local = local;
    p.nmore_max = nsrc - 1;
    clf_event **wev = NULL;
    st = nsrc > SIZE_MAX / bytes ? clf_set_error(CLF_ERROR_SIZE_OVERFLOW, "%s: staging", what)
                                 : host_mem(c, nsrc * bytes, &host);
    if (st == CLF_SUCCESS)
        st = clf__pipe_alloc(&p, bytes, esize, 1, 1, &wev);
    if (st != CLF_SUCCESS)
        return clf__comm_agree(c, st, what);
    if (!ok)
        memset(host, 0, bytes);
    clf__add_chunks(&p, 0, ok ? bufs[0] : NULL, 0, bytes, host, esize,
                    ok && isroot ? &bufs[root_buf] : NULL, ok && isroot ? 1 : 0, wev,
                    ok ? bufs + 1 : NULL, ok ? nbufs - 1 : 0, NULL);
    st = clf__pipe_run(&p, what);
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
    clf__pipe p;
    memset(&p, 0, sizeof p);
    p.c = c;
    p.kind = CLF__PIPE_BCAST;
    p.root = root;
    p.dt = MPI_BYTE;
    p.comm = &c->comm;
    p.nlanes = 1;
    p.local = local;
    clf_event **wev = NULL;
    st = host_mem(c, size, &host);
    if (st == CLF_SUCCESS)
        st = clf__pipe_alloc(&p, size, 1, 1, ndst, &wev);
    if (st != CLF_SUCCESS) {
        free(dst);
        return clf__comm_agree(c, st, what);
    }
    if (p.local != CLF_SUCCESS && isroot)
        memset(host, 0, size);
    int ok = p.local == CLF_SUCCESS;
    clf__add_chunks(&p, 0, ok && isroot ? bufs[root_buf] : NULL, 0, size, host, 1,
                    ok ? dst : NULL, ok ? ndst : 0, wev, NULL, 0, NULL);
    st = clf__pipe_run(&p, what);
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
    /* The segment type; a rank that cannot make it fails like a failed MPI call (the
     * others' deadline ends their wait). */
    MPI_Datatype segt = MPI_DATATYPE_NULL;
    const char *call = "clf_comm_allgather: MPI_Type_contiguous";
    err = MPI_Type_contiguous((int)seg, MPI_BYTE, &segt);
    if (err == MPI_SUCCESS) {
        call = "clf_comm_allgather: MPI_Type_commit";
        err = MPI_Type_commit(&segt);
    }
    int *displs = rc + c->size;
    int d = 0;
    for (int q = 0; q < c->size; q++) {
        rc[q] = counts[q];
        displs[q] = d;
        d += counts[q];
    }
    if (err == MPI_SUCCESS) {
        call = "clf_comm_allgather: MPI_Iallgatherv";
        err = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, host, rc, displs, segt,
                              c->comm, &r);
    }
    if (err != MPI_SUCCESS)
        st = clf__comm_mpi_fail(c, err, call);
    else
        st = clf__comm_wait(c, 1, &r, what);
    if (segt != MPI_DATATYPE_NULL)
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

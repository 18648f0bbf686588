/* The chunk pipeline of the MPI collectives (pipe.c), for coll.c only: a pipe of chunks
 * (each read from a device, through MPI, written to devices), and the functions that build,
 * run and combine it. Not in comm.h: only these two files use it, and its names would reach
 * every lib/mpi/ file there. */
#ifndef CLF_MPI_PIPE_H
#define CLF_MPI_PIPE_H

#include "comm.h"

/* What a pipe's MPI step is. */
enum { CLF__PIPE_ALLREDUCE, CLF__PIPE_BCAST, CLF__PIPE_REDUCE };

typedef struct clf__pipe_chunk {
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
} clf__pipe_chunk;

typedef struct clf__pipe {
    clf_comm *c;
    int kind, root;
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm *comm;        /* per lane */
    int nlanes;
    clf__pipe_chunk *ch;   /* lane by lane, in order within a lane */
    size_t nch;
    clf_status local;      /* this rank's first device failure (the MPI steps go on) */
    clf_type type;         /* of the host reduction of `more` */
    clf_reduce_op rop;
    size_t nmore_max;      /* the most `more` buffers of a chunk (clf__pipe_alloc) */
    int ring;              /* CLF__PIPE_ALLREDUCE by a ring of point-to-point messages, not MPI's */
    size_t esize;
    size_t chunk;          /* bytes of a chunk; 0: c->chunk_bytes */
    int flag;              /* the one chunk's MPI data ends with a status element (flag_put) */
    int flag_bad;          /* that element said a rank failed */
} clf__pipe;

/* dst[i] = dst[i] op src[i], n elements of type t: the host side of a reduction. */
void clf__combine(void *dst, const void *src, size_t n, clf_type t, clf_reduce_op op);
/* Keeps st as this rank's first device failure (p->local, naming the rank and `what`). */
void clf__note_local(clf__pipe *p, clf_status st, const char *what);
/* Runs every chunk of p through its device reads, MPI and device writes (see pipe.c). */
clf_status clf__pipe_run(clf__pipe *p, const char *what);
/* MPI's datatype of a clfleet type, and MPI's operation of a reduction: 0 when unknown. */
int clf__mpi_type(clf_type t, MPI_Datatype *dt);
int clf__mpi_op(clf_reduce_op op, MPI_Op *o);
/* A pipe of `kind` for `type` under `op` on the communicator itself (one lane). */
void clf__pipe_init(clf__pipe *p, clf_comm *c, int kind, clf_type type, clf_reduce_op op);
/* Appends the chunks of [0, bytes) of one lane to p->ch. */
void clf__add_chunks(clf__pipe *p, int lane, clf_buffer *src, size_t off, size_t bytes,
                     char *host, size_t esize, clf_buffer *const *dst, size_t ndst,
                     clf_event **wev, clf_buffer *const *more, size_t nmore, char *scratch);
/* Room for the chunks of `bytes` in `lanes` lanes (p->ch, and *wev for their events). */
clf_status clf__pipe_alloc(clf__pipe *p, size_t bytes, size_t esize, int lanes, size_t ndst,
                           clf_event ***wev);

#endif /* CLF_MPI_PIPE_H */

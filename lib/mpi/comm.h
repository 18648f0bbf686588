/* The MPI layer's private header (libclfleet-mpi): the communicator over fleets, and the
 * helpers every lib/mpi/ file uses (deadline waits, agreement on a status across ranks,
 * the debug comparison of arguments). lib/mpi/ uses only the public API of libclfleet. */
#ifndef CLF_MPI_COMM_H
#define CLF_MPI_COMM_H

#include <mpi.h>

#include "clfleet.h"
#include "clfleet/mpi.h"

/* This rank's learned speed of one kernel (launch.c: units per second of its last launch);
 * a list on the communicator, freed by clf_comm_destroy(). */
struct clf__comm_speed {
    struct clf__comm_speed *next;
    double units_per_s;
    char kernel[];
};

/* What the ranks know of one array from clf_comm_array_create() (array.c): a list on the
 * communicator, freed by clf_comm_destroy(). */
typedef struct clf__comm_array {
    struct clf__comm_array *next;
    clf_array *arr;
    clf_array_desc d;      /* the whole array (its pointers cleared) */
    size_t unit_bytes;     /* bytes of one unit along dims-1 */
    size_t *first, *count; /* per rank: its window */
} clf__comm_array;

/* A communicator over fleets. */
struct clf_comm {
    MPI_Comm comm;        /* the duplicate, MPI_ERRORS_RETURN */
    int rank, size;
    clf_fleet *fleet;     /* this rank's, the caller's */
    double timeout_s;     /* one step's deadline; < 0: none */
    size_t chunk_bytes;   /* a pipelined chunk through host memory */
    int host_memory;      /* every device of every rank uses the host's memory (agreed) */
    int thread_level;     /* what MPI provides */
    int check;            /* $CLFLEET_MPI_CHECK: compare arguments before collectives */
    int broken;           /* a step timed out or MPI failed: requests may be pending */
    MPI_Comm *lanes;      /* one duplicate per device lane (collectives), made on demand */
    int nlanes;
    void *host;           /* the host staging memory of the collectives, kept between calls */
    size_t host_bytes;
    struct clf__comm_speed *speeds; /* launch.c: this rank's learned speed per kernel */
    clf__comm_array *arrays;        /* array.c: the arrays made on it */
};

/* 1 when device `dev` of the fleet has its own memory (a GPU: copies cross a bus), 0 when
 * it uses the host's (a CPU device, host-unified memory: a map is the buffer's memory). */
int clf__comm_discrete(clf_fleet *fleet, size_t dev);

/* Wait for n requests, polling, until c->timeout_s passes: CLF_SUCCESS, CLF_ERROR_MPI
 * (MPI's message) or CLF_ERROR_TIMEOUT; `what` names the step. Marks c broken on failure. */
clf_status clf__comm_wait(clf_comm *c, int n, MPI_Request *req, const char *what);
/* A status agreed by every rank: the first failing rank's status and message (naming it),
 * else CLF_SUCCESS. `local` is this rank's, with its message in clf_last_error(). */
clf_status clf__comm_agree(clf_comm *c, clf_status local, const char *what);
/* The same, and in one all-reduce with it the minimum and maximum over the ranks of n
 * values (at most CLF_COMM_META_MAX; mins or maxs may be NULL). */
#define CLF_COMM_META_MAX 8
clf_status clf__comm_agree_meta(clf_comm *c, clf_status local, const char *what, int n,
                                const long long *vals, long long *mins, long long *maxs);
/* With $CLFLEET_MPI_CHECK: every rank's n values against rank 0's; a mismatch fails on every
 * rank with CLF_ERROR_INVALID_ARGUMENT naming the ranks, values and `names` (comma list). */
clf_status clf__comm_check(clf_comm *c, const char *what, const char *names, int n,
                           const long long *vals);
/* Always (not only with $CLFLEET_MPI_CHECK): whether every rank passed the same n values, by
 * one all-reduce of 2n values; a mismatch fails on every rank with CLF_ERROR_INVALID_ARGUMENT
 * naming the first differing one of `names` (comma list) and its smallest and largest value
 * (launch.c: a launch or array whose ranks disagree on a size would be silently wrong). */
clf_status clf__comm_same(clf_comm *c, const char *what, const char *names, int n,
                          const long long *vals);
/* The communicator of device lane `lane` (collective the first time on every rank). */
clf_status clf__comm_lane(clf_comm *c, int lane, MPI_Comm *out);
/* A failed MPI call (err): marks c broken (c may be NULL) and returns CLF_ERROR_MPI with
 * "what: MPI's message for err (another rank may have failed or gone)". */
clf_status clf__comm_mpi_fail(clf_comm *c, int err, const char *what);
/* Seconds of a monotonic clock. */
double clf__comm_now(void);

#endif /* CLF_MPI_COMM_H */

/*
 * Device-to-device transfers, shared by transfer.c (state, queries, dispatch, transfer
 * threads), staging.c (pipelined host staging), peer.c (AMD and CUDA peer-to-peer) and
 * sync.c (the event bridge). Not installed.
 */
#ifndef CLFLEET_TRANSFER_H
#define CLFLEET_TRANSFER_H

#include "xfer.h"

#include "cudadrv.h"

/* Slots of a staging or bounce set: one filling, one draining, one spare. */
#define CLF__XFER_SLOTS 3
/* Chunk of the pipelines; $CLFLEET_TRANSFER_CHUNK (bytes, a power of two from 64 KiB to
 * 64 MiB) overrides it for tuning. */
#define CLF__XFER_CHUNK ((size_t)4 << 20)
/* Copies up to this size from or to host-unified memory go through a slot, not a map. */
#define CLF__XFER_MAP_MIN ((size_t)2 << 20)
/* Idle staging sets kept per device for reuse; more are freed when returned. */
#define CLF__XFER_KEEP 2

/* How staging moves the bytes; $CLFLEET_TRANSFER_STAGING ("auto", "pipeline") for tests
 * and tuning. */
enum { CLF__STAGING_AUTO = 0, CLF__STAGING_PIPELINE = 1 };

/* clEnqueue{Acquire,Release}ExternalMemObjectsKHR. */
typedef cl_int(CL_API_CALL *clf__ext_mem_fn)(cl_command_queue queue, cl_uint n,
                                             const cl_mem *mems, cl_uint nwait,
                                             const cl_event *wait, cl_event *event);

struct clf__stager;
/* Set by an event callback when a slot's read or write completes. */
typedef struct clf__stage_flag {
    struct clf__stager *s;
    int done;
} clf__stage_flag;

/*
 * Pinned host slots in one device's context (CL_MEM_ALLOC_HOST_PTR), mapped once, with the
 * state of the pipeline that uses them. Event callbacks only set flags under the lock and
 * signal: the pipeline's thread enqueues, never a callback.
 */
typedef struct clf__stager {
    struct clf__stager *next;
    size_t device;
    size_t chunk;
    cl_mem mem[CLF__XFER_SLOTS];
    void *ptr[CLF__XFER_SLOTS];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    clf__stage_flag rdone[CLF__XFER_SLOTS], wdone[CLF__XFER_SLOTS];
    unsigned long issued, fired; /* callbacks registered and run */
    cl_int err;                  /* the first negative status a callback saw */
    int tainted;                 /* a failure was found by polling: never reuse */
} clf__stager;

/* CUDA allocations imported into one device's context: the CUDA path's bounce buffers. */
typedef struct clf__bounce {
    struct clf__bounce *next;
    size_t device;
    clf__cuda_mem *cu[CLF__XFER_SLOTS];
    cl_mem mem[CLF__XFER_SLOTS];
} clf__bounce;

/* What the transfer code knows about one fleet device. */
typedef struct clf__xdev {
    clf__path_dev pd;
    size_t *amd_peers;                   /* pd.amd_peers points here */
    clf__copy_buffer_p2p_amd_fn amd_copy; /* resolved when pd.amd_p2p */
    clf__ext_mem_fn acquire, release;    /* external memory, when the platform has them */
    int nvidia;
    clf__stager *stagers; /* idle staging sets (under xfer->lock) */
    size_t nstagers;
    clf__bounce *bounces; /* idle bounce sets (under xfer->lock) */
    size_t nbounces;
} clf__xdev;

/* A copy, as the paths see it: the buffers' memory objects are retained by the job. */
typedef struct clf__copy {
    clf_fleet *fleet;
    cl_mem dst, src;
    size_t ddev, sdev; /* fleet devices */
    size_t doff, soff, size;
    clf__path path;
    int on_host;      /* the host drives it: its commands go on the copy queues */
    clf_event **deps; /* held events to wait for on the host first */
    size_t ndeps;
    struct clf__completion *done; /* completed when the copy is done (asynchronous copies) */
    /* An asynchronous copy the host drives: the deps not yet complete, plus one for the
     * submitter; the one that brings it to zero queues job on the helper pool. */
    atomic_uint pending;
    clf_status early;     /* a dep could not be watched: the copy fails with this */
    char *early_why;      /* and this detail */
    clf__pool_work job;
} clf__copy;

struct clf__xfer {
    clf_fleet *fleet;
    unsigned disabled; /* CLF__PATH_BIT mask from the option or $CLFLEET_TRANSFER */
    clf__xdev *dev;
    unsigned char *path;   /* [src * ndev + dst]: clf__path */
    unsigned char *direct; /* [src * ndev + dst]: a direct path applies */
    clf__path_env env;
    unsigned char *cuda_peer; /* env.cuda_peer */
    char cuda_status[768];
    int cuda_emulated; /* $CLFLEET_TEST_CUDA_EMULATE at creation (peer.c) */
    size_t chunk;
    int staging; /* CLF__STAGING_* */

    pthread_mutex_t lock; /* guards what follows */
    pthread_cond_t cond;
    /* Asynchronous copies the host drives, from submission until done (transfer.c):
     * clf__xfer_drain() and the teardown wait for none. */
    unsigned inflight;
    unsigned helpers; /* bridges to host completions not yet set (sync.c) */
    clf__stager *quarantine; /* sets that saw a failure: freed with the fleet */
};

/*
 * One transfer path: either the OpenCL runtime does the copy (enqueue: one command on the
 * clf__copy_queue() of fleet device sdev or ddev, after wait[], events of that device's
 * context), or the host drives it (run: synchronously, on a helper-pool thread or the
 * caller's; a return of CLF_ERROR_UNSUPPORTED means "cannot here", and the copy is staged
 * instead). Each path is defined in its file and listed in transfer.c's table, in
 * clf__path order.
 */
typedef struct clf__path_ops {
    const char *name;
    int queue_on_src; /* enqueue on the source's queue, else the destination's */
    clf_status (*enqueue)(clf__copy *c, const cl_event *wait, cl_uint nwait, cl_event *ev);
    clf_status (*run)(clf__copy *c);
} clf__path_ops;

extern const clf__path_ops clf__path_same_device; /* transfer.c */
extern const clf__path_ops clf__path_unified;     /* transfer.c */
extern const clf__path_ops clf__path_amd_p2p;     /* peer.c */
extern const clf__path_ops clf__path_cuda_p2p;    /* peer.c */
extern const clf__path_ops clf__path_staged;      /* staging.c */

/* ---- transfer.c ---- */
/* The fleet device's facts. */
static inline struct clf__device *clf__xdevice(const clf__copy *c, int dst)
{
    return &c->fleet->dev[dst ? c->ddev : c->sdev];
}
/* The queue of c's source (dst = 0) or destination for its commands: the device's copy
 * queue when the host drives the copy, else its transfer queue. */
static inline cl_command_queue clf__copy_queue(const clf__copy *c, int dst)
{
    struct clf__device *d = clf__xdevice(c, dst);
    return c->on_host ? d->copyq : d->transfer;
}
/* Wait for every dependency of c on the host. */
clf_status clf__copy_wait_deps(clf__copy *c);

/* ---- staging.c ---- */
/* Free every idle staging set. */
void clf__staging_fini(clf_fleet *fleet);

/* ---- peer.c ---- */
/* Resolve AMD peers, load CUDA (when some device is NVIDIA) and run its self-test. */
clf_status clf__peer_init(clf_fleet *fleet);
/* Free the bounce buffers. */
void clf__peer_fini(clf_fleet *fleet);

/* ---- the event bridge (sync.c) ---- */
/* Wait until no bridge holds an event of the fleet's contexts (the fleet is going). */
void clf__bridge_drain(clf_fleet *fleet);
/* Bridges to launches: count one in or out (transfer.c waits for none before the fleet
 * goes: their user events belong to its contexts). */
void clf__xfer_helper(clf_fleet *fleet, int delta);

#endif

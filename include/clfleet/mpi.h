/**
 * \file clfleet/mpi.h
 * \brief clfleet over MPI — one fleet per rank, and the ranks working as one.
 *
 * Link with libclfleet-mpi (pkg-config clfleet-mpi); the core library never links MPI.
 * The caller initialises MPI with MPI_Init_thread(), at least MPI_THREAD_FUNNELED (clfleet
 * and the drivers run threads); MPI_THREAD_MULTIPLE lets several threads each use their own
 * communicator. A collective makes its MPI calls from the calling thread only, all
 * non-blocking: the device lanes and chunks progress at once, polled together with the
 * device copies.
 *
 * No MPI takes an OpenCL buffer: data crosses ranks through host memory, in pipelined
 * chunks (doc/09-mpi.md). Every function here is collective over the
 * communicator unless it says otherwise: every rank calls it, in the same order, with
 * matching arguments. With CLFLEET_MPI_CHECK=1 in the environment, the arguments that must
 * match (counts, types, roots, shapes) are compared first, and a mismatch fails on every
 * rank with CLF_ERROR_INVALID_ARGUMENT naming the ranks and values, instead of hanging.
 *
 * A rank that fails (a device failure, bad input found on that rank only) makes the
 * others fail with the same status, clf_last_error() naming the rank: a collective
 * function's status is the same on every rank. A rank that dies makes the others fail with
 * CLF_ERROR_MPI (the communicator's error handler returns errors) or CLF_ERROR_TIMEOUT
 * after clf_comm_options.timeout_s, never hang forever.
 */
#ifndef CLFLEET_MPI_H
#define CLFLEET_MPI_H

#include <mpi.h>

#include <clfleet.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \brief A communicator over fleets: a duplicate of an MPI communicator, one fleet per
 *  rank. */
typedef struct clf_comm clf_comm;

/** \brief Options of clf_comm_create(); fill with CLF_COMM_OPTIONS_INIT. */
typedef struct clf_comm_options {
    unsigned version; /**< CLF_COMM_OPTIONS_VERSION */
    /** Seconds a rank waits for the others in one step of a collective before it fails
     *  with CLF_ERROR_TIMEOUT (a dead or stuck rank); 0: $CLFLEET_MPI_TIMEOUT, else 60.
     *  Negative: wait forever. */
    double timeout_s;
    /** Bytes of one pipelined chunk through host memory; 0: 4 MiB; at most 1 GiB. The
     *  ranks agree on the smallest at creation (it picks the algorithms). */
    size_t chunk_bytes;
    size_t reserved[4]; /**< zero */
} clf_comm_options;

/** \brief The version of clf_comm_options this header describes. */
#define CLF_COMM_OPTIONS_VERSION 1
/** \brief Fills a clf_comm_options with the defaults. */
#define CLF_COMM_OPTIONS_INIT {CLF_COMM_OPTIONS_VERSION, 0.0, 0, {0, 0, 0, 0}}

/**
 * \brief Create a fleet whose devices are this rank's share of its node: the ranks of one
 * node (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) get disjoint devices of the selection,
 * in local-rank order (as CUDA_VISIBLE_DEVICES per rank would); with fewer devices than
 * ranks on a node, the devices are dealt round-robin (ranks share them). The devices are
 * the selection's root devices ("index=" terms: the selection's own index= is replaced by
 * the rank's share; "split=" still applies). Collective over \p comm.
 * \param out receives the fleet
 * \param comm the ranks
 * \param opts fleet options (the selection to share), or NULL for the defaults
 * \return as clf_fleet_create(), the same on every rank
 */
CLF_API clf_status clf_comm_node_fleet(clf_fleet **out, MPI_Comm comm,
                                       const clf_fleet_options *opts);

/**
 * \brief Create a communicator over fleets: \p comm is duplicated, and \p fleet is this
 * rank's. Collective; fails on every rank if any rank fails (e.g. a NULL fleet on one).
 * \param out receives the communicator
 * \param comm the ranks (duplicated; the caller keeps its own)
 * \param fleet this rank's fleet (kept, not owned: it must outlive the communicator)
 * \param opts options, or NULL for the defaults
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_UNSUPPORTED
 *         (MPI not initialised, or initialised with less than MPI_THREAD_FUNNELED), the
 *         same on every rank
 */
CLF_API clf_status clf_comm_create(clf_comm **out, MPI_Comm comm, clf_fleet *fleet,
                                   const clf_comm_options *opts);
/**
 * \brief Release the communicator (collective); accepts NULL on every rank. A communicator
 * that failed (CLF_ERROR_MPI, CLF_ERROR_TIMEOUT) is released without MPI calls: its
 * duplicates and staging memory are left to MPI_Finalize or the process's end, as MPI may
 * still hold requests on them.
 * \param c the communicator, or NULL
 */
CLF_API void clf_comm_destroy(clf_comm *c);
/** \brief This rank's number (not collective). \param c the communicator \return the rank,
 *  or -1 for NULL */
CLF_API int clf_comm_rank(const clf_comm *c);
/** \brief The number of ranks (not collective). \param c the communicator \return the size,
 *  or 0 for NULL */
CLF_API int clf_comm_size(const clf_comm *c);
/** \brief This rank's fleet (not collective). \param c the communicator \return the fleet */
CLF_API clf_fleet *clf_comm_fleet(const clf_comm *c);

/* ---- collectives across ranks, on each rank's per-device buffers ---- */

/**
 * \brief All-reduce over every buffer of every rank: afterwards each holds the
 * element-wise reduction of the first \p count elements of all of them. Hierarchical: a
 * reduce-scatter inside each fleet over device paths, a pipelined host-staged MPI
 * all-reduce of each device's shard (one communicator per device lane, the lanes at
 * once), an all-gather inside the fleet. Ranks with different buffer counts fall back to a
 * rank-level algorithm (same result).
 * \param c the communicator
 * \param bufs this rank's buffers, one per device (at least one)
 * \param nbufs entries of bufs
 * \param count elements
 * \param type element type
 * \param op the reduction
 * \return CLF_SUCCESS or an error, the same on every rank
 */
CLF_API clf_status clf_comm_allreduce(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                      size_t count, clf_type type, clf_reduce_op op);
/**
 * \brief Reduce into buffer \p root_buf of rank \p root (the others' buffers keep their
 * contents).
 * \param c the communicator
 * \param bufs this rank's buffers
 * \param nbufs entries of bufs
 * \param count elements
 * \param type element type
 * \param op the reduction
 * \param root the rank that receives
 * \param root_buf which of its buffers
 * \return as clf_comm_allreduce()
 */
CLF_API clf_status clf_comm_reduce(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                   size_t count, clf_type type, clf_reduce_op op, int root,
                                   size_t root_buf);
/**
 * \brief Copy the first \p size bytes of buffer \p root_buf of rank \p root to every buffer
 * of every rank.
 * \param c the communicator
 * \param bufs this rank's buffers
 * \param nbufs entries of bufs
 * \param size bytes
 * \param root the rank that sends
 * \param root_buf which of its buffers
 * \return as clf_comm_allreduce()
 */
CLF_API clf_status clf_comm_broadcast(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                      size_t size, int root, size_t root_buf);
/**
 * \brief All-gather: the buffers of all ranks, in rank order then buffer order, each
 * contribute the \p count elements of \p elem_size bytes at their position's segment
 * (position p of P holds elements [p * count, (p + 1) * count)), and afterwards every
 * buffer holds all P * count.
 * \param c the communicator
 * \param bufs this rank's buffers (each at least P * count elements)
 * \param nbufs entries of bufs
 * \param count elements per position
 * \param elem_size bytes per element
 * \return as clf_comm_allreduce()
 */
CLF_API clf_status clf_comm_allgather(clf_comm *c, clf_buffer *const *bufs, size_t nbufs,
                                      size_t count, size_t elem_size);

/* ---- launches across ranks ---- */

/** \brief clf_comm_launch() flags. */
enum {
    /** Outputs are gathered on the root rank (clf_comm_launch()'s root); else each rank's
     *  host arrays hold only its own share (the rest untouched). */
    CLF_COMM_GATHER = 1u << 0,
    /** Deal chunks across ranks on demand through an MPI atomic counter (inputs must be
     *  complete and identical on every rank); else each rank takes a share by its fleet's
     *  learned speed, re-weighted between launches. */
    CLF_COMM_DYNAMIC = 1u << 1
};

/** \brief What one rank did in a clf_comm_launch(). */
typedef struct clf_comm_rank_report {
    uint64_t first;        /**< its range along the split dimension (static): first unit */
    uint64_t units;        /**< its range along the split dimension (static): units */
    uint64_t chunks;       /**< chunks it ran (dynamic) */
    double seconds;        /**< its launch time */
    uint64_t reserved[4];  /**< zero */
} clf_comm_rank_report;

/** \brief A clf_comm_launch()'s report: this rank's launch, and every rank's share. */
typedef struct clf_comm_launch_report {
    clf_launch_report local; /**< this rank's own launch */
    int num_ranks;           /**< entries of rank */
    clf_comm_rank_report *rank; /**< one per rank, malloc'd: release with clf_free() */
    double makespan_s;       /**< the slowest rank's time */
    double imbalance;        /**< slowest / mean - 1 */
    uint64_t reserved[4];    /**< zero */
} clf_comm_launch_report;

/**
 * \brief One launch over the fleets of every rank: the range is cut over the ranks (by
 * speed, or dealt on demand with CLF_COMM_DYNAMIC), and each rank's share over its devices
 * as clf_launch() does. The host arrays of \p args are as in clf_launch() on every rank:
 * partitioned inputs must hold (at least) the rank's share and its halo, or everything for
 * CLF_COMM_DYNAMIC; outputs receive the rank's share, or everything on \p root with
 * CLF_COMM_GATHER; reductions are combined across ranks on every rank, in rank order.
 *
 * Each rank runs its part as a sub-range of the whole range (clf_launch_desc.range_first,
 * range_units: leave them 0), so kernels see the whole range's global ids. Static shares
 * are multiples of the local size and granularity, weighted by each rank's measured speed
 * on the kernel in its last clf_comm_launch() (compute units x clock before); dynamic
 * chunks (about 8 per rank) come from an MPI_Fetch_and_op counter on rank 0. Ranks that
 * disagree on the range, alignment, flags, root or argument kinds fail with
 * CLF_ERROR_INVALID_ARGUMENT on every rank. A rank whose launch fails makes every rank
 * fail with its status (its units are not re-run on other ranks).
 * \param c the communicator
 * \param prog this rank's program (built from the same source on every rank)
 * \param desc the launch (the same on every rank)
 * \param args the arguments (the same kinds and sizes on every rank)
 * \param nargs entries of args
 * \param flags CLF_COMM_GATHER, CLF_COMM_DYNAMIC
 * \param root the rank that gathers
 * \param report receives the report (release its rank array with clf_free()), or NULL
 * \return as clf_launch(), the same on every rank
 */
CLF_API clf_status clf_comm_launch(clf_comm *c, clf_program *prog, const clf_launch_desc *desc,
                                   const clf_arg *args, size_t nargs, unsigned flags, int root,
                                   clf_comm_launch_report *report);

/* ---- distributed arrays across ranks ---- */

/**
 * \brief A distributed array whose parts lie on the devices of every rank: the units along
 * dims-1 are cut over the ranks (CLF_WEIGHTS_EQUAL: equally, else by the compute units x
 * clock of each rank's devices), and each rank's share over its own devices by \p desc
 * (a CLF_ARRAY_BLOCK array; each rank's clf_array is a window, clf_array_desc version 2).
 * Release it with clf_array_destroy(); the communicator keeps a small record of it until
 * clf_comm_destroy(). *out is this rank's clf_array: its parts
 * are this rank's, clf_array_part_info() gives their global unit ranges, and
 * clf_array_launch() on it runs this rank's share with global indices. Halo units between
 * ranks are exchanged by clf_comm_array_exchange() (non-blocking MPI from pinned host
 * buffers) and by clf_comm_array_launch() with CLF_ARRAY_EXCHANGE_BEFORE/AFTER, overlapped
 * with the interior as inside a fleet.
 * \param out receives this rank's array
 * \param c the communicator
 * \param desc the whole array (the same on every rank; devices: this rank's, or NULL)
 * \return as clf_array_create(), the same on every rank
 */
CLF_API clf_status clf_comm_array_create(clf_array **out, clf_comm *c,
                                         const clf_array_desc *desc);
/**
 * \brief Exchange every halo of an array from clf_comm_array_create(): inside each fleet by
 * device paths, between ranks by MPI.
 * \param c the communicator
 * \param arr this rank's array
 * \return CLF_SUCCESS or an error, the same on every rank
 */
CLF_API clf_status clf_comm_array_exchange(clf_comm *c, clf_array *arr);
/**
 * \brief clf_array_launch() over arrays from clf_comm_array_create(), on every rank, with
 * the exchanges its flags ask for crossing ranks too.
 * \param c the communicator
 * \param prog this rank's program
 * \param desc the kernel and the whole range
 * \param args as clf_array_launch()
 * \param nargs entries of args
 * \return as clf_array_launch(), the same on every rank
 */
CLF_API clf_status clf_comm_array_launch(clf_comm *c, clf_program *prog,
                                         const clf_array_launch_desc *desc, const clf_arg *args,
                                         size_t nargs);
/**
 * \brief Read a box of the whole array into \p dst on rank \p root (others pass NULL).
 * \param c the communicator
 * \param arr this rank's array
 * \param origin first element of the box (global), or NULL for 0
 * \param region elements of the box, or NULL for the whole array
 * \param dst the box, packed, on root
 * \param root the rank that receives
 * \return CLF_SUCCESS or an error, the same on every rank
 */
CLF_API clf_status clf_comm_array_read(clf_comm *c, clf_array *arr, const size_t *origin,
                                       const size_t *region, void *dst, int root);
/**
 * \brief Write a box of the whole array from \p src on rank \p root (others pass NULL).
 * \param c the communicator
 * \param arr this rank's array
 * \param origin first element of the box (global), or NULL for 0
 * \param region elements of the box, or NULL for the whole array
 * \param src the box, packed, on root
 * \param root the rank that sends
 * \return CLF_SUCCESS or an error, the same on every rank
 */
CLF_API clf_status clf_comm_array_write(clf_comm *c, clf_array *arr, const size_t *origin,
                                        const size_t *region, const void *src, int root);

#ifdef __cplusplus
}
#endif

#endif /* CLFLEET_MPI_H */

/**
 * \file clfleet/graph.h
 * \brief clfleet — a graph of kernels over data that stays on the devices.
 *
 * Record once, run many times: a clf_graph holds kernel nodes and host-callback nodes, in
 * the order they were added, whose arguments are clf_buffer and clf_array objects with an
 * access mode (read, write, read-write; for buffers of kernel nodes also reduction,
 * CLF_BUF_REDUCE(), and scratch, CLF_BUF_SCRATCH()). The dependencies between the nodes
 * (read after write, write after read, write after write) follow from those modes and the
 * order of recording: no event is written by hand, and since a node can only depend on
 * nodes recorded before it, a graph has no cycle by construction. Nodes that reduce into
 * one buffer do not depend on each other, and scratch accesses cause no dependency.
 *
 * Each run places the nodes: a kernel over clf_array arguments runs split over the arrays'
 * parts (owner computes, as clf_array_launch()); a kernel over clf_buffer arguments runs
 * whole on the device where the cost model predicts it finishes first (the device's ready
 * time, plus the copies the placement causes, plus its predicted execution time: StarPU's
 * dmda), unless the node names a device. A buffer is copied to another device only when
 * that device holds no valid copy of it; every buffer a run wrote is valid on its own
 * device again when the run completes. The plan is kept and reused while the graph and the
 * shapes of its data stay the same.
 *
 * clf_graph_run() returns at once; clf_graph_wait() (or the event) tells when the run has
 * completed. While a run is in flight, the host must not touch the graph's buffers and
 * arrays, nor record nodes; it may prepare the next inputs elsewhere.
 */
#ifndef CLFLEET_GRAPH_H
#define CLFLEET_GRAPH_H

#include <clfleet.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \brief A recorded graph of kernel and host nodes over buffers and arrays. */
typedef struct clf_graph clf_graph;

/** \brief clf_graph_node_desc.device: the scheduler chooses (the default). */
#define CLF_GRAPH_ANY_DEVICE ((size_t)-1)

/** \brief What clf_graph_add_kernel() records; fill with CLF_GRAPH_NODE_DESC_INIT. */
typedef struct clf_graph_node_desc {
    unsigned version;   /**< CLF_GRAPH_NODE_DESC_VERSION */
    const char *kernel; /**< kernel function name (the name is copied) */
    unsigned dims;      /**< 1, 2 or 3 */
    /** The range, as on one device. Over arrays: global[dims-1] equals the arrays' extent
     *  along their cut dimension (see clf_array_launch()). */
    size_t global[3];
    size_t local[3]; /**< work-group size, or all 0 for the driver's choice */
    /** CLF_GRAPH_ANY_DEVICE, or the fleet index of the device a node over buffers must run
     *  on (manual placement: the scheduler is not asked). A node over arrays runs where
     *  their parts are and takes CLF_GRAPH_ANY_DEVICE only. */
    size_t device;
    size_t reserved[4]; /**< zero */
} clf_graph_node_desc;

/** \brief The version of clf_graph_node_desc this header describes. */
#define CLF_GRAPH_NODE_DESC_VERSION 1
/** \brief Fills a clf_graph_node_desc with the defaults (1 dimension, scheduler's choice). */
#define CLF_GRAPH_NODE_DESC_INIT \
    {CLF_GRAPH_NODE_DESC_VERSION, NULL, 1, {0, 1, 1}, {0, 0, 0}, CLF_GRAPH_ANY_DEVICE, {0, 0, 0, 0}}

/**
 * \brief An array the kernel reads with a neighbourhood footprint: the chunk of a part
 * reads \p before units before its owned units and \p after units after them (a stencil).
 * The array's own halo (clf_array_desc.halo_before, halo_after) must hold them; the graph
 * exchanges the halos before the node runs.
 */
#define CLF_ARRAY_IN_HALO(arr, before, after) \
    CLF__ARG(CLF_ARG_KIND_ARRAY, CLF_ARG_READ, (arr), 0, 0, (before), (after))

/**
 * \brief clf_arg.flags of a graph's buffer argument (CLF_BUF_REDUCE()): the node accumulates
 * into the buffer with a commutative and associative operation (clf_arg.op, a
 * clf_reduce_op, on elements of clf_arg.type, a clf_type). Nodes that reduce into one
 * buffer do not wait for each other: each runs on its device's partial copy, which starts
 * as the operation's identity, and the partials are combined into the buffer before the
 * next node that reads or writes it otherwise, or at the end of the run (StarPU's
 * STARPU_REDUX). Kernels only: a value in clfleet.h's argument flags is not one of these.
 */
#define CLF_ARG_REDUCTION (1u << 10)
/**
 * \brief clf_arg.flags of a graph's buffer argument (CLF_BUF_SCRATCH()): temporary memory
 * of the node, of the buffer's size; its contents are undefined when the node starts and
 * dropped after it (StarPU's STARPU_SCRATCH). Scratch accesses cause no dependency and no
 * copy: each device gets its own instance (the caller's buffer on its own device), and the
 * scratch nodes on one device take turns on it.
 */
#define CLF_ARG_SCRATCH (1u << 11)

/**
 * \brief A buffer the kernel accumulates into with \p op (a clf_reduce_op) on elements of
 * \p type (a clf_type): see CLF_ARG_REDUCTION. The kernel sees a buffer of the buffer's
 * size holding, when the node starts, the identity of \p op or what earlier nodes on the
 * same device accumulated; it combines its contributions into it (e.g. `acc[i] += x`).
 * Every node that reduces into one buffer uses the same op and type.
 */
#define CLF_BUF_REDUCE(buf, op, type)                                                       \
    {CLF_ARG_KIND_BUFFER, CLF_ARG_REDUCTION, (void *)(buf), 0, 0, 0, 0, (op), (type), 0,     \
     {0, 0}}
/**
 * \brief A buffer the kernel uses as temporary memory: see CLF_ARG_SCRATCH. A buffer that
 * is scratch in one node of a graph is scratch in all of them.
 */
#define CLF_BUF_SCRATCH(buf) CLF__BUF(buf, CLF_ARG_SCRATCH)

/**
 * \brief A host-callback node's body: runs on a helper thread once the nodes it depends on
 * have completed; every buffer it declared is valid in its own clf_buffer (read it with
 * clf_buffer_read(), write it with clf_buffer_write()), and arrays are read and written
 * with clf_array_read() and clf_array_write().
 * \param user the pointer given to clf_graph_add_host()
 * \return CLF_SUCCESS, or a failure that ends the run with this status
 */
typedef clf_status (*clf_graph_host_fn)(void *user);

/**
 * \brief Create an empty graph over a fleet and a program.
 * \param out receives the graph
 * \param fleet the fleet (the graph holds a reference to it: the fleet goes with its last
 *        child, see clf_fleet_destroy())
 * \param prog a program of the fleet, whose kernels the nodes name (kept until the graph
 *        is destroyed)
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (a program of
 *         another fleet), CLF_ERROR_OUT_OF_HOST_MEMORY
 */
CLF_API clf_status clf_graph_create(clf_graph **out, clf_fleet *fleet, clf_program *prog);

/**
 * \brief Wait for a run in flight, then release the graph and the copies it made on other
 * devices; accepts NULL. The buffers and arrays of its nodes stay the caller's.
 * \param g the graph, or NULL
 */
CLF_API void clf_graph_destroy(clf_graph *g);

/**
 * \brief Record a kernel node.
 *
 * \p args are in kernel parameter order: CLF_BUF_IN(), CLF_BUF_OUT(), CLF_BUF_INOUT(),
 * CLF_BUF_REDUCE(), CLF_BUF_SCRATCH() (a node over buffers, run whole on one device), or
 * CLF_ARRAY_IN(), CLF_ARRAY_IN_HALO(), CLF_ARRAY_OUT(), CLF_ARRAY_INOUT() (a node over
 * arrays, run split over their parts), and
 * CLF_SCALAR() and CLF_LOCAL(). Buffers and arrays in one node are refused. Scalars are
 * copied: they may go once the call returns. The buffers and arrays must stay until the
 * graph is destroyed.
 *
 * A write-only buffer (CLF_BUF_OUT()) is a promise that the kernel writes all of it: on a
 * device without a valid copy the old contents are not copied there first. Use
 * CLF_BUF_INOUT() for a kernel that writes only some elements.
 * \param out_node receives the node's index (its position in recording order), or NULL
 * \param g the graph
 * \param desc the kernel, its range and an optional device
 * \param args the arguments (NULL when nargs is 0)
 * \param nargs entries of args
 * \return CLF_SUCCESS; CLF_ERROR_NULL_POINTER; CLF_ERROR_INVALID_ARGUMENT (a version, dims,
 *         range, a buffer or array of another fleet, an access mode that is neither read nor
 *         write, a neighbourhood wider than the array's halo or on a written array, a device
 *         named for a node over arrays, a reduction whose op or type the graph's kernels
 *         lack or whose type does not divide the buffer's size, a reduction into a buffer
 *         with another op or type than earlier nodes', a buffer scratch in one node and not
 *         in another, a buffer passed to one node with a reduction or scratch mode and
 *         another); CLF_ERROR_OUT_OF_RANGE (the device); CLF_ERROR_UNSUPPORTED (buffers and
 *         arrays in one node, an argument kind of clf_launch(), a reduction or scratch
 *         access on an array); CLF_ERROR_BUSY (a run is in flight); CLF_ERROR_OUT_OF_HOST_MEMORY.
 *         The kernel's own argument checks run with the node (clf_kernel_enqueue(),
 *         clf_array_launch()) and fail the run, naming the node.
 */
CLF_API clf_status clf_graph_add_kernel(size_t *out_node, clf_graph *g,
                                        const clf_graph_node_desc *desc,
                                        const struct clf_arg *args, size_t nargs);

/**
 * \brief Record a host-callback node that accesses \p accesses (CLF_BUF_IN(),
 * CLF_BUF_OUT(), CLF_BUF_INOUT(), CLF_ARRAY_IN(), CLF_ARRAY_OUT(), CLF_ARRAY_INOUT()):
 * it runs after the nodes it depends on, and the nodes after it that use what it writes
 * wait for it.
 * \param out_node receives the node's index, or NULL
 * \param g the graph
 * \param fn the callback
 * \param user passed to fn
 * \param accesses what fn reads and writes (NULL when naccesses is 0)
 * \param naccesses entries of accesses
 * \return as clf_graph_add_kernel() (CLF_ERROR_UNSUPPORTED for a scalar or local argument,
 *         and for a reduction or scratch access)
 */
CLF_API clf_status clf_graph_add_host(size_t *out_node, clf_graph *g, clf_graph_host_fn fn,
                                      void *user, const struct clf_arg *accesses,
                                      size_t naccesses);

/**
 * \brief clf_graph_set_flags(): keep the copies a run leaves on the devices for the next
 * run. Without it each run starts from the caller's buffers alone (the host may have
 * written them between runs), so a buffer every run reads on another device (weights) is
 * copied there every run. With it, a copy stays current until a node writes the buffer
 * elsewhere or the caller says, with clf_graph_buffer_changed(), that the host wrote it:
 * a host write the graph is not told of leaves stale copies on the devices. After a failed
 * run the next one starts from the caller's buffers.
 */
#define CLF_GRAPH_KEEP_COPIES (1u << 0)

/**
 * \brief Set the graph's flags (CLF_GRAPH_KEEP_COPIES, or 0 for none, the default).
 * \param g the graph
 * \param flags the flags
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_INVALID_ARGUMENT (an unknown flag),
 *         CLF_ERROR_BUSY (a run is in flight)
 */
CLF_API clf_status clf_graph_set_flags(clf_graph *g, unsigned flags);

/**
 * \brief Say that the host wrote \p buf (clf_buffer_write(), a map) since the last run:
 * with CLF_GRAPH_KEEP_COPIES, the graph's copies of it on other devices are stale, and the
 * next run copies it again where a node needs it. Without the flag it changes nothing.
 * \param g the graph
 * \param buf a buffer that a node of the graph uses
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_NOT_FOUND (no node uses it),
 *         CLF_ERROR_BUSY (a run is in flight)
 */
CLF_API clf_status clf_graph_buffer_changed(clf_graph *g, const clf_buffer *buf);

/**
 * \brief Start a run of the graph; returns at once.
 *
 * A device that fails mid-run (a node's command fails and the device is then marked
 * failed: clf_device_is_failed()) loses its nodes to the others: the nodes not yet queued
 * are planned again without it, and a buffer whose current contents were only there is
 * recomputed by running again, on the devices left, the nodes that wrote it (and theirs,
 * back to contents some device still holds). What cannot be recomputed (the caller's
 * buffer on that device, contents only it held at the run's start, what a host callback
 * wrote) fails the run with CLF_ERROR_DEVICE_FAILED, naming the data and the node. The
 * report counts the nodes moved and run again. A graph with reduction or scratch accesses
 * is not recovered: a device failure fails its run with CLF_ERROR_DEVICE_FAILED.
 *
 * The first run of a graph with reductions builds the program of the partials' fill and
 * combine kernels (clf_graph_run() returns its build failure).
 * \param g the graph
 * \param out_event completes with the run (clf_event_wait() returns its status; release
 *        it), or NULL; clf_graph_wait() waits too
 * \return CLF_SUCCESS once started, CLF_ERROR_NULL_POINTER, CLF_ERROR_BUSY (a run is in
 *         flight), CLF_ERROR_ZERO_SIZE (no nodes), CLF_ERROR_OUT_OF_HOST_MEMORY
 */
CLF_API clf_status clf_graph_run(clf_graph *g, clf_event **out_event);

/**
 * \brief Wait for the run in flight (if any) and return its status.
 * \param g the graph
 * \return CLF_SUCCESS (also when no run was started), CLF_ERROR_NULL_POINTER, or the
 *         run's failure, with the failed node named in clf_last_error()
 */
CLF_API clf_status clf_graph_wait(clf_graph *g);

/** \brief What one node did in the last run (clf_graph_node_info()). */
typedef struct clf_graph_node_report {
    /** The device of a whole node, or CLF_GRAPH_ANY_DEVICE for a node split over array
     *  parts and for a host node. */
    size_t device;
    int split;  /**< 1: split over array parts (owner computes) */
    int host;   /**< 1: a host callback */
    int manual; /**< 1: placed by clf_graph_node_desc.device */
    double predicted_start_s;  /**< predicted start, seconds from the run's start */
    double predicted_finish_s; /**< predicted finish, seconds from the run's start */
    /** Measured kernel time (the profiled kernel; for a split node the slowest part), or
     *  0 when not measured. */
    double kernel_s;
    /** Why it went where it went, in words (the candidates' predicted finish times). */
    char why[256];
    uint64_t reserved[4]; /**< zero */
} clf_graph_node_report;

/**
 * \brief What node \p node did in the last completed run.
 * \param out receives the report
 * \param g the graph
 * \param node an index from clf_graph_add_kernel() or clf_graph_add_host()
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_OUT_OF_RANGE (no such node, or no
 *         run placed it yet), CLF_ERROR_BUSY (a run is in flight)
 */
CLF_API clf_status clf_graph_node_info(clf_graph_node_report *out, const clf_graph *g,
                                       size_t node);

/** \brief What the last completed run did (clf_graph_report_get()). */
typedef struct clf_graph_report {
    size_t runs;        /**< runs completed since creation */
    size_t nodes;       /**< nodes in the graph */
    size_t whole_nodes; /**< kernels run whole on one device */
    size_t split_nodes; /**< kernels run split over array parts */
    size_t host_nodes;  /**< host callbacks */
    size_t edges;       /**< dependencies inferred */
    int plan_reused;    /**< 1: the run reused the previous run's plan */
    /** Copies the graph made between devices (to bring a buffer to a node's device, and
     *  back to a buffer's own device at the end), and their bytes. Array halo exchanges
     *  are the arrays' own and are not counted here. */
    size_t copies;
    uint64_t copy_bytes; /**< bytes of those copies */
    size_t path_copies[5];     /**< copies per clf_path */
    uint64_t path_bytes[5];    /**< bytes per clf_path */
    /** Per fleet device (the first CLF_MAX_LAUNCH_DEVICES): seconds its profiled kernels
     *  and copies into it took in this run. */
    double device_busy_s[CLF_MAX_LAUNCH_DEVICES];
    /** Per fleet device: nodes (whole, or parts of split nodes) it ran. */
    size_t device_nodes[CLF_MAX_LAUNCH_DEVICES];
    double predicted_makespan_s; /**< the plan's predicted finish of the last node */
    /** The plan's critical path: the longest chain of dependent nodes, by their predicted
     *  execution times (copies not counted), a bound no placement can beat. */
    double critical_path_s;
    double makespan_s;           /**< measured: run start to completion, host clock */
    /** 1 when a kernel's execution time was guessed from compute units x clock (no
     *  measurement of it on some device yet). */
    int guessed;
    /** Copies of buffers the run dropped from a device to stay within its memory budget
     *  (clf_graph_set_memory_budget()), and their bytes. */
    uint64_t evictions;
    uint64_t evicted_bytes; /**< bytes of those copies */
    /** Bytes of the evicted copies that were a buffer's only current copy, written back to
     *  the buffer's own device first (counted in copies and copy_bytes too). */
    uint64_t written_back_bytes;
    /** Nodes that a device's failure in this run moved to other devices: planned on it,
     *  queued elsewhere (see clf_graph_run()). */
    uint64_t fault_moved;
    /** Nodes run again in this run because the only current copy of something they wrote
     *  was lost with a failed device (each re-run counted once). */
    uint64_t fault_rerun;
    /** Kernel nodes handed to their device's lane: on a device that runs its commands
     *  inside the enqueue (PoCL's basic), each such device's kernels are queued by a job of
     *  their own as soon as their inputs are ready, so that two such devices compute at
     *  once and the later nodes' copies are issued meanwhile. */
    uint64_t lane_nodes;
    uint64_t reserved[2]; /**< zero */
} clf_graph_report;

/**
 * \brief The report of the last completed run.
 * \param out receives the report
 * \param g the graph
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_BUSY (a run is in flight)
 */
CLF_API clf_status clf_graph_report_get(clf_graph_report *out, const clf_graph *g);

/**
 * \brief Set the memory budget of the graph's copies on a device: the bytes of the copies
 * of buffers the graph makes on \p device (of buffers whose own device is another; the
 * caller's buffers are not counted) stay at most \p bytes. A node whose buffers would not
 * fit beside the copies already there first makes room: copies that are current elsewhere
 * (or stale) go first, then the copy whose next use by a later node is farthest (Belady's
 * choice, by the recording order), written back to its buffer's own device when it is the
 * only current copy. The node's own buffers are never evicted for it, so two inputs of one
 * node cannot evict each other, and copies that earlier nodes still being run use go last.
 * A node whose buffers alone exceed a device's budget, or do beside the partials of
 * reductions still open there (CLF_BUF_REDUCE(): they stay until their phase ends and are
 * never evicted), does not go there, and a run with a node that fits no device fails at its
 * start (clf_graph_run(): CLF_ERROR_UNSUPPORTED, naming the node and the bytes).
 *
 * The budget does not bound two kinds of the graph's memory, which are counted (resident,
 * peak) but for which nothing is evicted: the copies of other devices' reduction partials
 * made on the buffer's own device for the combine (up to devices - 1 buffers over the
 * budget while it runs), and the copies and temporary buffers of the re-runs after a device
 * failed mid-run.
 *
 * The default budget is 7/8 of the device's global memory (CL_DEVICE_GLOBAL_MEM_SIZE),
 * leaving a margin for the caller's buffers and the runtime; a buffer larger than the
 * device's largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE) is never copied there.
 * \param g the graph
 * \param device a fleet device index
 * \param bytes the budget, or 0 for the device's default
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_OUT_OF_RANGE (the device),
 *         CLF_ERROR_INVALID_ARGUMENT (more than the device's global memory),
 *         CLF_ERROR_BUSY (a run is in flight)
 */
CLF_API clf_status clf_graph_set_memory_budget(clf_graph *g, size_t device, uint64_t bytes);

/** \brief The graph's memory on one device (clf_graph_memory_get()). */
typedef struct clf_graph_memory {
    uint64_t budget;   /**< the budget in force (the set one, else the default) */
    uint64_t fallback; /**< the device's default budget (7/8 of its global memory) */
    uint64_t max_alloc; /**< the device's largest buffer, bytes */
    uint64_t resident; /**< bytes of the graph's copies on the device now, with the
                        *   reduction partials (and their copies for a combine) held there */
    /** The most bytes of the graph's copies on the device at once during the last run
     *  (counted when a copy is made and when one is evicted; an evicted copy's memory is
     *  freed once the commands queued on it complete). */
    uint64_t peak;
    uint64_t evictions;    /**< copies evicted from the device in the last run */
    uint64_t evicted_bytes; /**< their bytes */
    uint64_t written_back_bytes; /**< bytes of them written back to their own devices */
    uint64_t reserved[4]; /**< zero */
} clf_graph_memory;

/**
 * \brief The graph's memory on \p device: budget, resident bytes, the last run's peak and
 * evictions.
 * \param out receives it
 * \param g the graph
 * \param device a fleet device index
 * \return CLF_SUCCESS, CLF_ERROR_NULL_POINTER, CLF_ERROR_OUT_OF_RANGE (the device),
 *         CLF_ERROR_BUSY (a run is in flight)
 */
CLF_API clf_status clf_graph_memory_get(clf_graph_memory *out, const clf_graph *g,
                                        size_t device);

#ifdef __cplusplus
}
#endif

#endif /* CLFLEET_GRAPH_H */

/* lib/exec: one kernel launch across the fleet. State shared by the launch coordinator
 * (launch.c, with check.c and choose.c) and the device workers (worker.c), the state launches
 * keep on a fleet (fleetstate.c), and what GEMM (blas/) uses of it. Not installed.
 *
 * The chunk executor and its data planes (issue 15). The coordinator (launch.c) cuts a range
 * of units with the partitioner (plan/partition.c) and runs one worker per device on the
 * device's persistent thread (fleetstate.c). The worker's loop (worker.c: run_chunks) is the
 * same for every kind of work: take a chunk, move its data in, run it, move its results
 * out, wait for it and account for it, with one chunk of look-ahead, work stealing, and on a
 * failure the device's chunks given back to the others (re-queued). What a chunk's data is
 * and how it moves is the data plane's business, a small table of functions (clf__plane)
 * the loop calls per device and per chunk:
 *
 *   prepare(w)              before the device takes any chunk (kernel object, whole arrays,
 *                           broadcasts, reductions' identity);
 *   begin(w)                once the device holds its first chunk (may be NULL: the GEMM's
 *                           operand that every block needs, sent only to devices with work);
 *   chunk_in(w, c, which)   enqueue the chunk's inputs on the transfer queue (events in
 *                           c->ev[0 .. nwrite)); `which` is CLF__WRITE_EARLY/LATE (worker.c);
 *   run(w, c)               enqueue its computation on the compute queue after them (event
 *                           c->kernel, c->pre a marker it waits behind, or c->fault set);
 *   chunk_out(w, c)         enqueue its results' move back to the host after c->kernel
 *                           (events in c->ev[nwrite .. nwrite + nread));
 *   landed(w, c)            after a failure: 1 when all the chunk's results are on the host
 *                           (it is done), 0 when none or some that a re-run rewrites, -1
 *                           when some that a re-run could not repeat (the launch stops);
 *   release(w)              give back the device's buffers and objects.
 *
 * The executor owns everything else: waiting for a chunk's events (finish_chunk), the report
 * (busy, transfer times and bytes from the events), metrics, the device's memory budget
 * (clf__worker_buffer()), fault injection's execution faults, re-queueing a failed device's
 * chunks, the strategies and AUTO's dynamic fallback (choose.c, launch.c). Two planes exist:
 *
 *   clf__array_plane (arrays.c): clf_launch's partitioned host arrays; a chunk is a range of
 *     work-items along the split dimension, its inputs and outputs are the matching indices
 *     of every partitioned argument, its computation one clEnqueueNDRangeKernel.
 *   the GEMM plane (blas/gemmdev.c): a chunk is a block of rows (or columns) of C; its input
 *     is that block of op(A) (op(B)) and of C when beta != 0, its computation a clBLAST call
 *     (serialised on the host, see gemmdev.c), its output the block of C.
 */
#ifndef CLFLEET_EXEC_H
#define CLFLEET_EXEC_H

#include "core/core.h"
#include "plan/workprof.h"

/* A broadcast array kept on the devices between launches while unchanged. */
struct clf__bcast {
    const void *host;
    size_t size;
    uint64_t hash; /* of the content when it was uploaded */
    cl_mem *mem;   /* one per fleet device, NULL until uploaded there */
};

/*
 * What launches keep on a fleet: made on the first launch (or GEMM) through the fleet's state
 * registry (core/device.c) and finalized at its teardown, first of all (CLF__STATE_DRAIN): the
 * finalizer waits for the launches still queued and for the dispatcher of asynchronous
 * launches (a helper-pool job) to return, and releases the broadcast cache and the
 * throughput model (fleetstate.c). The kept
 * buffers and the per-device threads (fleetstate.c too) are states of their own, finalized
 * next (CLF__STATE_BEFORE_XFER).
 */
#define CLF__MAX_ARGS 64

/* A launch's arguments as the kernel check sees them (check.c): what clf__check_args() reads
 * of each one, and nothing that changes between the launches of a loop (the host pointers,
 * the arrays' sizes). */
typedef struct clf__arg_sig {
    unsigned kind, type, flags;
    size_t size; /* scalars and local memory only */
} clf__arg_sig;

/* A kernel check that passed (check.c), kept so that the next launch with the same program
 * source, kernel and argument kinds does not create a kernel and ask the driver about every
 * parameter again (a fifth of a small launch's own cost). */
typedef struct clf__kernel_verdict {
    char hash[65], includes[65]; /* the program's source and options, and its includes */
    char kernel[64];
    size_t nargs;
    clf__arg_sig sig[CLF__MAX_ARGS];
    unsigned char stores[CLF__MAX_ARGS]; /* per broadcast: clf__source_param_stores(), or 0 */
} clf__kernel_verdict;

#define CLF__VERDICTS 8

typedef struct clf__exec_state {
    pthread_mutex_t lock; /* guards what follows */
    struct clf__perf_model *perf; /* learned throughput (NULL until the first launch) */
    struct clf__bcast *bcast;
    size_t nbcast;
    /* The efficiency each balancing of a kernel last reached on this fleet, per partition
     * strategy (static, dynamic, guided, memory-aware; < 0: not seen): CLF_STRATEGY_AUTO
     * leaves a strategy that balanced the kernel worse than dynamic did. A small ring of the
     * latest kernels. */
    struct clf__kernel_seen {
        char key[96];
        /* Per partition strategy, its last launch of the kernel on this fleet: the
         * efficiency (CLF__SEEN_EFFICIENCY) and the makespan per unit (CLF__SEEN_UNIT_S). */
        double seen[4][2];
        double unit_s; /* kernel seconds per unit in its last launch; < 0: not seen */
    } static_eff[16];
    size_t nstatic_eff;
    /* Probes (probe.c), per kernel (a small ring of the latest) and fleet device index below
     * CLF_MAX_LAUNCH_DEVICES: launches in a row the device took no work of the kernel
     * although it could hold a chunk, launches it waits before its next probe (0:
     * CLF__PROBE_AFTER), and whether it has run the kernel on this fleet (its first run pays
     * for PoCL's kernel build). */
    struct clf__probe_seen {
        char key[300];
        unsigned out_run[CLF_MAX_LAUNCH_DEVICES], probe_every[CLF_MAX_LAUNCH_DEVICES];
        unsigned char ran[CLF_MAX_LAUNCH_DEVICES];
    } probes[16];
    size_t nprobes;
    /* Kernel checks that passed (check.c): a small ring of the latest. */
    clf__kernel_verdict verdict[CLF__VERDICTS];
    size_t nverdict;
    /* Launches run in the order they were queued: a ticket each. */
    pthread_cond_t turn;
    uint64_t next_ticket, serving;
    /* Asynchronous launches waiting for the dispatcher, in ticket order (launch.c): a job of
     * the process's helper pool (util/pool.c), queued while the fleet has launches waiting,
     * runs them one after the other. */
    struct clf__async_launch *queue_head, *queue_tail;
    pthread_cond_t queued;      /* the dispatcher's job returned */
    clf__pool_work dispatch;    /* the dispatcher's job */
    int dispatching;            /* that job is queued or running */
} clf__exec_state;

/* The fleet's launch state, made on first use; NULL: out of memory. */
clf__exec_state *clf__exec_state_of(clf_fleet *fl);

/* Small device buffers kept between launches (fleetstate.c): take one of exactly this device,
 * flags and size (NULL: none), give one back (kept or released); released at the teardown. */
cl_mem clf__bufcache_get(clf_fleet *fl, size_t dev, cl_mem_flags flags, size_t bytes);
void clf__bufcache_put(clf_fleet *fl, size_t dev, cl_mem mem);

/* The fleet's persistent per-device threads (fleetstate.c): run fn(arg) on device dev's
 * thread, made on first use (-1: it cannot be made), wait until it returned; stopped and
 * joined at the fleet's teardown. One job at a time per device. */
int clf__devthread_run(clf_fleet *fl, size_t dev, void *(*fn)(void *), void *arg);
void clf__devthread_wait(clf_fleet *fl, size_t dev);
/* 1 on one of those threads (of any fleet): a job must not post to them and wait. */
int clf__devthread_self(void);

/* One part of clf_array_launch() (launch.c): clf_kernel_enqueue() with variant (the
 * program's array variant, core/program.c), whose hidden range parameter gets whole and whose
 * part offsets parameter gets part_offsets (bytes, one per __global/__constant pointer). */
clf_status clf__kernel_enqueue_part(clf_fleet *fleet, clf_program *variant, size_t device,
                                    const clf_kernel_desc *desc, const clf_arg *args,
                                    size_t nargs, const size_t whole[3],
                                    const cl_ulong part_offsets[16], clf_event *const *wait,
                                    size_t num_wait, clf_event **out_event);

/* A chunk in flight on one device: its events and where its data went. */
typedef struct clf__chunk {
    uint64_t off, len;
    int slot; /* chunk-indexed buffer slot (double buffering) */
    cl_event kernel;
    cl_event ev[2 * CLF__MAX_ARGS]; /* writes, then reads */
    uint64_t ev_bytes[2 * CLF__MAX_ARGS]; /* bytes each of them moves (metrics) */
    unsigned char ev_arg[2 * CLF__MAX_ARGS]; /* the argument each of them moves */
    size_t nwrite, nread;
    uint64_t bytes_in, bytes_out;
    cl_int fault; /* an injected execution fault's status: the kernel was not run (worker.c) */
    /* A marker the plane's kernels wait behind (a library call takes no wait list), or NULL:
     * the kernel's time on the device starts no earlier than its end. */
    cl_event pre;
    double t_taken; /* host time (from L->t0) the partitioner handed it out; 0: stolen */
} clf__chunk;

struct clf__worker;
struct clf__launch;

/* A data plane: how a chunk's data moves in and out (see the top of this file). */
typedef struct clf__plane {
    const char *name;
    clf_status (*prepare)(struct clf__worker *w);
    clf_status (*begin)(struct clf__worker *w); /* or NULL */
    clf_status (*chunk_in)(struct clf__worker *w, clf__chunk *c, int which);
    clf_status (*run)(struct clf__worker *w, clf__chunk *c);
    clf_status (*chunk_out)(struct clf__worker *w, clf__chunk *c);
    int (*landed)(const struct clf__worker *w, const clf__chunk *c);
    void (*release)(struct clf__worker *w);
    /* Whether taking a chunk early pays (its input moves while the current one computes). */
    int (*lookahead)(const struct clf__launch *L);
    /* The longest chunk a device of this info can hold within budget bytes, or NULL for the
     * array plane's footprint (clf__launch_footprint()). */
    uint64_t (*max_units)(const struct clf__launch *L, const clf_device_info *in,
                          uint64_t budget);
} clf__plane;

/* chunk_in's `which`: the inputs that may move as soon as the chunk is taken (early), those
 * that must wait for the previous chunk's reads on the transfer queue (late), or all. */
enum { CLF__WRITE_EARLY = 1, CLF__WRITE_LATE = 2, CLF__WRITE_ALL = 3 };

/* clf_launch's plane: partitioned host arrays (arrays.c). */
extern const clf__plane clf__array_plane;

struct clf__launch;

/*
 * Where a partitioned argument's split indices lie, in the host array and in its
 * global-indexed device buffer alike: index j is the bytes [j * unit, (j + 1) * unit) of
 * each of `rows` rows of `pitch` bytes (pitch 0: contiguous, one row). A chunk of the range
 * [off, off + len) covers the indices [off / scale, (off + len) / scale): scale is 1, or for a
 * per-group output the local size along the split dimension (chunks are multiples of it).
 * `bytes` is the device buffer's size. Filled by check.c (check_arg).
 */
typedef struct clf__layout {
    uint64_t unit, pitch, rows, scale, bytes;
} clf__layout;

/* One device's worker: its own host thread, kernel object and buffers. */
typedef struct clf__worker {
    struct clf__launch *L;
    size_t slot_index; /* position among the launch's devices */
    struct clf__device *d;
    int started; /* running on its device's thread (fleetstate.c) */
    cl_kernel kernel;
    cl_mem whole[CLF__MAX_ARGS];   /* global-indexed arrays and reductions (owned) */
    cl_mem slot[CLF__MAX_ARGS][2]; /* chunk-indexed slots (owned) */
    size_t slot_cap[CLF__MAX_ARGS][2];
    uint64_t budget, mem_now, mem_peak;
    uint64_t max_units;
    double t_start; /* host time of the first enqueue */
    /* The cost model's per-chunk samples, handed over once per launch (clf__learn()): each
     * chunk's units and its host seconds from when this device could start it (taken, and
     * its previous chunk done) to its results on the host. The latest CLF__PERF_CHUNKS. */
    clf__perf_chunk csamp[CLF__PERF_CHUNKS];
    size_t ncsamp;       /* chunks sampled in all (csamp holds the latest) */
    /* Its units per bin of the range (every chunk: clf__wprof_bins_add()), for its work
     * under the kernel's work density (clf__learn()). */
    double bin_units[CLF__WPROF_BINS];
    double last_finish;  /* host time its previous chunk completed */
    /* The look-ahead chunk, while its kernel has not started (guarded by L->lock): an
     * idle device may steal it. State 0: none, 1: waiting here, 2: stolen. */
    uint64_t la_off, la_len;
    int la_state;
    /* Reductions: chunks finished since the partial on the device was last combined on the
     * host. They count as outstanding in the partitioner until then, so that a device that
     * fails can give them back with the partial it loses. */
    uint64_t (*pend)[2]; /* {off, len} */
    size_t npend, cap_pend;
    int red_stale; /* the device's reduction buffers must be reset before the next kernel */
    clf_device_report rep;
    clf_status st;
    cl_int cl_err;  /* the OpenCL error behind st, or 0 */
    int exec_fault; /* a command failed while it ran */
    int fatal;      /* its failure cannot be repaired by re-running chunks */
    char err[2048];
} clf__worker;

typedef struct clf__launch {
    const clf__plane *plane; /* how chunks' data move (clf__array_plane for clf_launch) */
    void *plane_ctx;         /* the plane's own state (the GEMM's), or NULL */
    /* A plane without a program (prog NULL): the throughput model's key of its work (else
     * kernel@program hash), what a device must hold (for the no-device-fits error), text
     * appended to the report's reason, and work per unit for the model (0: 1). */
    const char *key, *need, *reason_tail;
    double learn_scale;
    clf_fleet *fl;
    clf__exec_state *X; /* the fleet's launch state */
    clf_program *prog;
    clf_launch_desc desc;
    clf_arg args[CLF__MAX_ARGS];
    size_t nargs;
    size_t dev[CLF_MAX_LAUNCH_DEVICES]; /* fleet indices */
    size_t ndev;
    double weights[CLF_MAX_LAUNCH_DEVICES];
    /* The cost model's chunk line per device (clf__perf_fit), valid when fitted is set: it
     * is known for every device of the launch. Rates in range units per second (a plane's
     * learned work rate divided by learn_scale), fixed costs in seconds. */
    double fit_rate[CLF_MAX_LAUNCH_DEVICES], fit_fixed[CLF_MAX_LAUNCH_DEVICES];
    int fitted;
    int guessed; /* learned weights asked for, but guessed (compute units x clock) */
    /* The kernel's work density over the range (clf__launch_density()), when dense is set:
     * the pooled strategies share work, not units (clf__part_params.density). */
    double density[CLF__WPROF_BINS];
    int dense;
    int learning_line; /* the model is on but lacks some device's line: vary chunk sizes */
    /* The caller chose the chunking (chunks_per_device or min_chunk): the partitioner keeps
     * it, with no floor from the fixed cost per chunk (clf__part_params.keep_chunking). */
    int chunking_asked;
    /* STATIC on a profiled kernel (choose.c, workprof.h): the shares' ends when cut by the
     * work profile (has_cuts), and the chunks each share is handed out in (0: one). */
    uint64_t share_ends[CLF_MAX_LAUNCH_DEVICES];
    int has_cuts;
    unsigned static_pieces;
    uint64_t piece_min;
    uint64_t limits[CLF_MAX_LAUNCH_DEVICES];
    unsigned split;      /* the split dimension: desc.split_dim, by default dims - 1 */
    uint64_t total;      /* units along it (of the sub-range, clf_launch_desc version 3) */
    /* clf_launch's sub-range: chunks' offsets start at `first` (the partitioner counts from
     * 0, worker.c adds it), halos clamp to `end`, the whole range's units (0: total). */
    uint64_t first, end;
    uint64_t per_unit;   /* work-items per unit (product of the other dimensions) */
    uint64_t gran;
    int auto_local; /* clfleet chose desc.local (the user gave none) */
    clf__part_strategy part_strategy;
    clf__part *part;
    struct clf__bcast *bcast[CLF__MAX_ARGS]; /* cache entries of broadcast arguments */
    /* A broadcast whose parameter the kernel may write (not const, and the source scan saw
     * a store or could not tell): its entry is the launch's own, uploaded for this launch
     * and released at its end (check.c decides, launch.c owns it). */
    unsigned char bcast_fresh[CLF__MAX_ARGS];
    unsigned char *red_acc[CLF__MAX_ARGS];   /* reductions combined so far */
    double t0;

    int has_reduce, has_inout;
    unsigned char excluded[CLF_MAX_LAUNCH_DEVICES]; /* failed earlier, or no program there */
    /* AUTO ran a launch too small to split on one device: the others start only if it fails
     * (held), and the launch says nothing about the kernel's balance (small). */
    unsigned char held[CLF_MAX_LAUNCH_DEVICES];
    int small;
    /* A probe (probe.c): the launch's device probe_slot, left out by the cost model for a
     * while, takes the range's last probe_units units as one chunk (0: no probe), predicted
     * to take probe_pred_s, of which its kernel probe_work_s (units / the model's rate). */
    uint64_t probe_units;
    size_t probe_slot;
    double probe_pred_s, probe_work_s;
    clf__layout lay[CLF__MAX_ARGS]; /* partitioned arguments' layouts */

    pthread_mutex_t lock; /* guards what follows and the reductions */
    pthread_cond_t changed;
    size_t alive, waiting;
    int stuck; /* stop taking chunks (atomic loads outside the lock) */

    clf__worker w[CLF_MAX_LAUNCH_DEVICES];
} clf__launch;

/*
 * Run a planned launch on the executor (launch.c); the caller holds the fleet's turn. L is
 * zeroed, then gives plane (and plane_ctx), fl, desc (kernel: the report's and metrics' name;
 * strategy, weights, devices' options, mem_limits/safety, chunks_per_device, min_chunk), dev
 * and ndev, total, per_unit and gran; prog NULL for a plane other than the array plane (no
 * program checks, no too-small rule). Leaves out devices failed earlier, sets budgets,
 * chooses the strategy (AUTO's dynamic fallback included), runs the workers, re-queues a
 * failed device's work, marks devices at fault, fills rep and learns.
 */
clf_status clf__exec_run(clf__launch *L, clf_launch_report *rep);
/* Check and copy a clf_launch() description and its arguments into L (L's fields before the
 * workers: the array plane, fleet, program, arguments' layouts, devices, local size), and
 * check the arguments and range against the kernel on the devices that will run it, the
 * first step of clf_launch() and clf_launch_async() (check.c); call names the one the user
 * made, in messages. */
clf_status clf__launch_prepare(clf__launch *L, const char *call, clf_fleet *fl,
                               clf_program *prog, const clf_launch_desc *desc,
                               const clf_arg *args, size_t nargs);
/* Before a launch's workers start (check.c): whether its chunks can be given the range's
 * sizes. */
clf_status clf__check_range_known(const clf__launch *L, const uint64_t *max_units);
/* How a launch is cut (choose.c): each device's budget and largest chunk (fails when none
 * holds one), the strategy (rep's requested, strategy and reason; L's weights). */
clf_status clf__budgets(clf__launch *L, uint64_t *max_units);
clf_status clf__choose_strategy(clf__launch *L, const uint64_t *max_units,
                                clf_launch_report *rep);
/* What a complete launch taught (choose.c): the throughput model's records; the kernel's
 * efficiency under ps and its kernel seconds per unit on this fleet (set: record value,
 * else return it, or -1 when not seen). */
void clf__learn(clf__launch *L);
/* The kernel's work density over L's range from its work profile (clf__wprof_density()),
 * in rho (CLF__WPROF_BINS entries); 0 when unknown, or for a plane (its work per unit is
 * learn_scale). */
int clf__launch_density(const clf__launch *L, double *rho);
/* Probes (probe.c): give the launch's device left out longest by the cost model one chunk,
 * once its weights are final under strategy s (L->probe_units; the reason says so); after
 * the launch, count the launches each device took no work in and judge a probe. kkey: the
 * kernel's key in the cost model; work: the part of the range's work in the probe's units
 * by the kernel's work density (clf__launch_density()), NAN when unknown. clf__probe_learn()
 * returns the launch's device whose model samples are stale (its probe ran far faster than
 * predicted), or L->ndev. */
void clf__plan_probe(clf__launch *L, clf_strategy s, const char *kkey,
                     const uint64_t *max_units, clf_launch_report *rep);
size_t clf__probe_learn(clf__launch *L, const char *kkey, double work);
enum { CLF__SEEN_EFFICIENCY, CLF__SEEN_UNIT_S };
double clf__strategy_seen(clf__launch *L, clf__part_strategy ps, int what, int set, double value);
double clf__kernel_unit_s(clf__launch *L, int set, double value);
/* The broadcast cache's entry of a broadcast argument, emptied when its content changed
 * (fleetstate.c). */
clf_status clf__bcast_entry(clf_fleet *fl, clf__exec_state *X, const clf_arg *a,
                            struct clf__bcast **out);
/* A broadcast entry outside the cache, for one launch (empty: uploaded per device as the
 * cached ones are); clf__bcast_free() releases it and its device copies. */
clf_status clf__bcast_fresh(clf_fleet *fl, const clf_arg *a, struct clf__bcast **out);
void clf__bcast_free(clf_fleet *fl, struct clf__bcast *b);
/* Turns (fleetstate.c): take the next ticket, wait until it is served, serve the next. */
uint64_t clf__new_ticket(clf__exec_state *X);
void clf__take_turn(clf__exec_state *X, uint64_t ticket);
void clf__end_turn(clf__exec_state *X);
/* A report's makespan, efficiency (earliest finish / latest finish) and imbalance (latest
 * finish / mean finish - 1) from the finish times of its devices that did work. */
void clf__report_balance(clf_launch_report *rep);
/* Wait for the fleet's turn (launches run one at a time, in the order they were queued),
 * and give it back; for other multi-device operations (gemm.c). */
clf_status clf__turn_begin(clf_fleet *fl); /* fails only out of memory */
void clf__turn_end(clf_fleet *fl);
/* The fleet's learned throughput model, opened on first use (NULL: none). */
struct clf__perf_model *clf__fleet_perf(clf_fleet *fl);
/* Weights of fleet devices dev[0..ndev-1] for kernel function `kernel` (or NULL): their
 * learned throughput when known for every device (1 returned), else compute units x clock,
 * as launches guess before they have measured (0). */
int clf__device_weights(clf_fleet *fl, const char *kernel, const size_t *dev, size_t ndev,
                        double *w);
/* Fleet device dev's key in the throughput model: name, driver version and compute units, and
 * its $CLFLEET_SIMULATE rule when it has one (clf__sim_key()). */
void clf__perf_device_key(const clf_fleet *fl, size_t dev, char *buf, size_t n);
/* Bytes of device memory the launch needs per device: fixed part and per unit. */
void clf__launch_footprint(const clf__launch *L, uint64_t *fixed, uint64_t *per_unit,
                           uint64_t *halo_units);
/* The worker's helpers that the array plane (arrays.c) shares with the loop (worker.c): a
 * device buffer of the worker's budget (the alloc fault rule applies, fleetstate.c's kept
 * buffers first); the worker's command options (its own accounting, fault
 * rule call); a failed command of the command path (core/cmd.c), remembered for the
 * device-fault decision; a blocking transfer outside the chunks accounted for (ev released,
 * its seconds returned). */
clf_status clf__worker_device_alloc(clf__worker *w, size_t bytes, cl_mem_flags flags,
                                    cl_mem *out);
clf__cmd clf__worker_cmd(clf__cmd c, unsigned flags, unsigned call);
clf_status clf__worker_cmd_failed(clf__worker *w, const clf__cmd *c);
double clf__worker_blocking_done(clf__worker *w, cl_event ev, unsigned kind, uint64_t bytes);
/* Thread body of a worker. */
void *clf__worker_main(void *arg);
/* Release the worker's kernel and buffers. */
void clf__worker_fini(clf__worker *w);
/* For planes. A buffer of the device of at least bytes in *m (capacity *cap), counted in the
 * worker's memory budget and metrics; kept when large enough, else released and made anew
 * (its last user must have completed); fault injection's alloc rules apply. */
clf_status clf__worker_buffer(clf__worker *w, cl_mem *m, size_t *cap, size_t bytes,
                              cl_mem_flags flags);
/* Release a buffer of clf__worker_buffer() (NULL: nothing). */
void clf__worker_buffer_free(clf__worker *w, cl_mem *m, size_t *cap);
/* A failed OpenCL call of the worker's device (injected: by CLFLEET_FAULT_INJECT): sets the
 * error detail, and remembers err for the device-fault decision; returns CLF_ERROR_OPENCL. */
clf_status clf__worker_cl_fail(clf__worker *w, cl_int err, const char *call, int injected);
/* Account for a completed transfer outside the chunks (an operand sent once): report,
 * metrics; releases ev; returns its seconds. to_device: its direction. */
double clf__worker_transfer_done(clf__worker *w, cl_event ev, int to_device, uint64_t bytes);
/*
 * Pinned staging of host arrays (pinned.c, issue 27). Whether worker w's device moves its
 * host arrays through pinned slots ($CLFLEET_HOST_STAGING: always, never, or by default
 * where the device does not share the host's memory).
 */
int clf__pinned_use(const clf__worker *w);
/* One move between a host array and a device buffer: rows rows of width bytes, pitch apart
 * on both sides (rows 1: one range), from host and from mem at byte dev_off. */
typedef struct clf__pin_move {
    int to_device;
    int inout; /* an in-out array's results: a part that landed cannot be run again */
    cl_mem mem;
    char *host;
    size_t dev_off, width, rows, pitch;
} clf__pin_move;
/* Enqueue a move on the transfer queue in slot-sized pieces (an input copied into the slots
 * first); the first piece waits for wait[0 .. nwait), each other for the one before. *ev:
 * the last piece's event (the caller's reference), *ev_bytes its bytes; the other pieces
 * are accounted for by the worker here. An output's bytes reach the host array only in
 * clf__pinned_landed(). */
clf_status clf__pinned_move(clf__worker *w, const clf__pin_move *mv, cl_uint nwait,
                            const cl_event *wait, cl_event *ev, uint64_t *ev_bytes);
/* After the chunk's output moves were enqueued: wait for them and copy each completed one
 * to its host array (a failed one is left out; its chunk's event says so); wait for the
 * input pieces in the slots too, and account for them. */
void clf__pinned_landed(clf__worker *w);
/* The launch is over on the worker's device: wait for and forget what is left in its
 * slots (a stolen or given-back chunk's pieces), uncounted. */
void clf__pinned_end(clf__worker *w);
/* The identity element of op for type (esize bytes written to out). */
void clf__reduce_identity(unsigned op, unsigned type, void *out);
/* acc[i] = op(acc[i], x[i]) for count elements. */
void clf__reduce_combine(unsigned op, unsigned type, void *acc, const void *x, size_t count);

static inline int clf__arg_partitioned(const clf_arg *a)
{
    return a->kind == CLF_ARG_KIND_IN || a->kind == CLF_ARG_KIND_OUT ||
           a->kind == CLF_ARG_KIND_INOUT || a->kind == CLF_ARG_KIND_OUT_PER_GROUP;
}
/* Moves host to device before each chunk's kernel (an output kept with CLF_ARG_PRESERVE too). */
static inline int clf__arg_reads(const clf_arg *a)
{
    return a->kind == CLF_ARG_KIND_IN || a->kind == CLF_ARG_KIND_INOUT ||
           (a->flags & CLF_ARG_PRESERVE);
}
static inline int clf__arg_writes(const clf_arg *a)
{
    return a->kind == CLF_ARG_KIND_OUT || a->kind == CLF_ARG_KIND_INOUT ||
           a->kind == CLF_ARG_KIND_OUT_PER_GROUP;
}

#endif

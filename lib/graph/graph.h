/* lib/graph: a graph of kernels over resident data (clfleet/graph.h). The recording of
 * nodes and their checks (record.c), the dependencies inferred from access modes (deps.c),
 * placement by the cost model and the plan cache (sched.c), the run: kernels and host
 * callbacks in order (run.c), a buffer's copies per device, making room and evictions
 * (copies.c), reduction partials and scratch instances (redux.c), the job's waits that never
 * block (wait.c), the lanes of devices that run commands inside clEnqueue* (lane.c); memory
 * budgets and the choice of the copy to evict (mem.c), a device that fails mid-run
 * (fault.c), and the report (report.c). Not installed.
 *
 * Layer: above data (arrays, their dependency records), exec (the cost model and its keys),
 * xfer (copies, paths) and core (events, tasks, buffers); only libclfleet-mpi is above it. */
#ifndef CLFLEET_GRAPH_PRIV_H
#define CLFLEET_GRAPH_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "clfleet/graph.h"
#include "data/data.h"

/* What a node is. */
enum { CLF__GNODE_WHOLE = 0, CLF__GNODE_SPLIT = 1, CLF__GNODE_HOST = 2 };

/* One piece of data the graph's nodes use: a buffer (with its copies on other devices) or
 * an array (which keeps its own coherence and per-part dependencies, data/deps.c). */
typedef struct clf__gdata {
    int is_array;
    clf_buffer *buf; /* the caller's: the home copy, on buf->device */
    clf_array *arr;
    /* Dependency inference while recording (deps.c): the last node that wrote it, and the
     * nodes that read it since (SIZE_MAX: none). */
    size_t last_writer;
    size_t *readers;
    size_t nreaders, cap_readers;
    /* Access modes (record.c): 0 none yet, 1 scratch only, 2 read/write/reduction; the
     * reduction's op and type (the first reduction's; 0: none). Nodes that reduced into it
     * since the last writer (deps.c): later reads and writes depend on all of them. */
    int mode;
    unsigned red_op, red_type;
    size_t *redux;
    size_t nredux, cap_redux;
    /* Reductions during a run (run.c, redux.c), per fleet device: the partial (made for each
     * phase, released once the combine is queued), whether it is filled for this phase, and
     * the event after which it holds every contribution queued so far. red_pending: some
     * partial is to be combined; red_last: the last node that reduced into it. Scratch: the
     * last scratch node's event per device (the next one there waits for it). */
    clf_buffer **part;
    unsigned char *part_on;
    clf_event **part_ev;
    int red_pending;
    size_t red_last;
    int red_stage; /* the combine: 0 not begun; 1 the partials' copies queued and held */
    clf_buffer **red_src;
    clf_event **red_wait;
    clf_event **scr_ev;
    /* Buffers during a run (copies.c), per fleet device: the graph's copy there (made on
     * first use and kept across runs; rep[home] is buf), whether it holds the current
     * contents, and the event after which it does (NULL: it does now). */
    clf_buffer **rep;
    unsigned char *valid;
    clf_event **vev;
    /* The last command queued this run that writes into the copy on dev (a node's kernel, a
     * copy into it, a reduction's combine; NULL: none), whether or not the copy is current:
     * a later write there waits for it, so that a write-back or a combine still in flight
     * cannot land after it (write after write). */
    clf_event **wev;
    int written; /* a node of this run wrote it */
    /* Versions within a run (run.c, fault.c): cur counts the writes of this run (0: the
     * contents at its start); ver[dev] is the version the copy on dev holds once every
     * command queued so far completes (CLF__GVER_NONE: none; valid[dev] is ver[dev] == cur);
     * prod[k] is the node that wrote version k + 1 (room for one per node). Kept so that a
     * copy lost with a failed device can be recomputed from the versions its producers
     * read. */
    uint64_t cur;
    uint64_t *ver;
    size_t *prod;
    size_t nprod, cap_prod;
    /* The plan's simulation (sched.c): copies allocated (sim_rep; the budgets, mem.c),
     * reduction partials allocated in the current phase (sim_part), valid copies and when
     * they become valid. */
    unsigned char *sim_rep;
    unsigned char *sim_part;
    unsigned char *sim_valid;
    double *sim_t;
} clf__gdata;

/* No copy (clf__gdata.ver). */
#define CLF__GVER_NONE UINT64_MAX

/* A version of a buffer a re-run made that is not the current one (fault.c). */
typedef struct clf__gtmp {
    size_t data;
    uint64_t ver;
    size_t dev;
    clf_buffer *buf;
    clf_event *ev; /* after which buf holds it (held by the run's list) */
} clf__gtmp;

/* One argument of a node: a copy of the caller's clf_arg, and for buffers and arrays the
 * index of its data. Scalars point at the node's own copy of the value. */
typedef struct clf__garg {
    clf_arg a;
    size_t data; /* index in clf_graph.data, or SIZE_MAX */
} clf__garg;

typedef struct clf__gnode {
    int kind; /* CLF__GNODE_* */
    clf_graph_node_desc desc;
    char *kernel; /* owned copy of desc.kernel */
    clf__garg *args;
    size_t nargs;
    unsigned char *scalars; /* the scalars' values, packed */
    clf_graph_host_fn fn;
    void *user;
    size_t *preds; /* nodes it depends on, ascending, no repeats */
    size_t npreds;
    uint64_t items; /* work items of its range */
    /* The plan (sched.c): the device of a whole node, and the predictions. */
    size_t device;
    double pred_start, pred_finish;
    double pred_exec, pred_chain; /* its predicted execution; the longest chain ending with it */
    char why[256];
    /* The run (run.c): the kernel's event (whole nodes; held), the part kernels' events
     * (split nodes; held), measured kernel seconds. */
    clf_event *ev;
    /* A node a device's lane queued (lane.c): ev is the lane's completion, kev the kernel's own
     * event (held), profiled at the run's end. */
    clf_event *kev;
    /* Per argument, the version of its buffer the node read (written: the one it wrote),
     * for a replay after a device fault (fault.c). */
    uint64_t *aver;
    int rerun; /* re-run in this run because a device failed (fault.c) */
    clf_event **part_ev;
    size_t *part_dev;
    size_t npart_ev;
    double kernel_s;
    uint64_t host_t0, host_t1; /* a host node's callback, host ns (the trace) */
} clf__gnode;

/* The graph's memory on one device (mem.c): the budget of its copies there, what they
 * take now (copies.c, redux.c and fault.c keep it: copies, partials) and the last run's
 * counts; sim_resident: the plan's view. */
typedef struct clf__gmem {
    uint64_t budget; /* set by the caller; 0: the device's default */
    uint64_t resident, peak;
    uint64_t evictions, evicted_bytes, written_back;
    uint64_t sim_resident;
} clf__gmem;

struct clf_graph {
    clf_fleet *fleet;
    clf_program *prog;
    size_t ndev;
    clf__gmem *mem; /* per fleet device */
    clf__gnode *nodes;
    size_t nnodes, cap_nodes;
    /* Devices this graph has written off (failed: their copies dropped, fault.c), the
     * recovery under way (0: none; 1: waiting for every queued command; 2: for the
     * re-runs), the recoveries of this run, and the temporary buffers of the re-runs. */
    unsigned char *dead;
    int fault_phase;
    size_t recoveries;
    struct clf__gtmp *tmp;
    size_t ntmp, cap_tmp;
    /* The nodes to re-run (ascending), the next one, its step (0: its inputs; 1: its
     * kernel), and the buffers its arguments take. */
    size_t *rset;
    size_t nrset, rcur;
    int rstep;
    clf_buffer **rbuf;
    char fault_cause[300]; /* the failure that started the recovery */
    clf__gdata *data;
    size_t ndata, cap_data;
    size_t edges;
    /* The plan cache (sched.c): the shapes the plan was made for; 0: no plan. */
    uint64_t plan_key;
    size_t plan_nodes;
    double plan_makespan, plan_critical;
    size_t runs; /* completed, for the report */
    int plan_guessed;
    /* The last run measured some (kernel, device) far from the plan's predictions
     * (report.c): the next run plans again even when the key above is unchanged. */
    int plan_stale;
    /* A recovery planned again mid-run and put the nodes queued before the loss back where
     * they ran (fault.c): the plan describes that run (clf_graph_node_info()) but is not one
     * the scheduler chose, so the next run plans again. */
    int plan_patched;

    unsigned flags;  /* CLF_GRAPH_KEEP_COPIES */
    int last_failed; /* the last run failed: the next starts from the caller's buffers */
    /* A run in flight (run.c): guarded by lock. */
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    int running;
    clf_status run_status;
    char *run_err;
    struct clf__completion *done; /* the run's completion (its event) */
    clf__pool_work job;
    /* Where the job is: the next node to queue, whether what that node waits for has been
     * gathered (a host node, or a kernel on a device that waits on the host), and the final
     * phase (the run's commands are being waited for). The job never blocks on them: it
     * returns, and the last of them to complete queues it again (clf__event_notify()),
     * since a pool job must not wait for another (copies run there). */
    size_t next;
    int gathered, final_phase;
    clf__evlist hold; /* the events the job waits for (held) */
    atomic_size_t pending;
    clf_status run_st; /* the run's first failure */
    char *run_msg;     /* its detail, kept across the job's threads */
    double t0;
    uint64_t t0_ns; /* the run's start, host ns (the trace) */
    int plan_reused;
    /* The run's copies and every event it made (held), released at its end. */
    clf__evlist evs;
    /* The run's copies (held), with their destination device, profiled at its end. */
    clf_event **cev;
    size_t *cdev;
    size_t ncev, cap_cev;
    clf_graph_report rep;
    /* Reduction and scratch accesses (redux.c): whether the graph has any, and the program
     * of the partials' fill and combine kernels (built by the first run that needs it). */
    int has_redux, has_scratch;
    clf_program *redprog;
    /* Per device, the lane of a device that runs commands inside clEnqueue* (lane.c); made
     * on first use. */
    struct clf__glane **lanes;
};

/* record.c */
clf_status clf__graph_data_index(clf_graph *g, const clf_arg *a, size_t *out);

/* deps.c: the dependencies of node n (recorded last) from its accesses; updates the data's
 * last writer and readers. */
clf_status clf__graph_deps(clf_graph *g, size_t n);
/* What node n does to data d over all its arguments (CLF_ARG_READ | CLF_ARG_WRITE). */
unsigned clf__graph_access(const clf__gnode *n, size_t d);

/* Whether buffer copies carry over from the last run (CLF_GRAPH_KEEP_COPIES, and it did not
 * fail): the plan (sched.c) and the run (run.c) start from the same state. */
static inline int clf__graph_keeps(const clf_graph *g)
{
    return (g->flags & CLF_GRAPH_KEEP_COPIES) && !g->last_failed;
}

/* sched.c: a plan for every node (kept while the shapes stay). */
clf_status clf__graph_plan(clf_graph *g);
/* The cost model's key of a kernel node ("graph:NAME@HASH"). */
void clf__graph_kernel_key(const clf_graph *g, const clf__gnode *n, char *buf, size_t len);

/* mem.c: memory budgets and eviction. The budget in force on device dev and the largest
 * buffer there. */
uint64_t clf__graph_budget(const clf_graph *g, size_t dev);
uint64_t clf__graph_max_alloc(const clf_graph *g, size_t dev);
/* bytes more (add) or fewer (sub) of the graph's memory on dev: its copies and a reduction's
 * partials, in its resident bytes, the run's peak raised with them. */
void clf__graph_mem_add(clf_graph *g, size_t dev, uint64_t bytes);
void clf__graph_mem_sub(clf_graph *g, size_t dev, uint64_t bytes);
/* Whether node n's argument i is the first that names its data (a buffer named twice
 * counts once). */
int clf__graph_first_use(const clf__gnode *n, size_t i);
/* Whose view of the graph's memory the helpers below read: none (nothing allocated yet),
 * the plan's simulated copies and partials (sim_rep, sim_valid, sim_part), or the run's
 * (rep, valid, part_on). One helper for both keeps the plan's predictions and the run's
 * evictions in step. */
enum { CLF__GMEM_NONE, CLF__GMEM_PLAN, CLF__GMEM_RUN };
/* Bytes node n allocates of the graph's memory on dev: a copy of each of its buffers whose
 * own device is not dev, and a partial for each of its reductions (on the buffer's own
 * device too), those already there in view `view` left out (CLF__GMEM_NONE: its whole
 * working set there); *largest (when given): the largest of them. */
uint64_t clf__graph_node_bytes(const clf_graph *g, const clf__gnode *n, size_t dev, int view,
                               uint64_t *largest);
/* Bytes on dev of the partials of open reduction phases (redux.c) over data node n does not
 * use, in view `view`: resident there until their phase ends, never evicted. */
uint64_t clf__graph_partial_bytes(const clf_graph *g, const clf__gnode *n, size_t dev, int view);
/* The eviction state of every data on dev in view `view`, as clf__graph_victim() takes it:
 * held[i] a copy of the graph is allocated there (not the buffer's own), cur[i] it is
 * current there, only[i] no other device has a current one. */
void clf__graph_victim_state(const clf_graph *g, size_t dev, int view, unsigned char *held,
                             unsigned char *cur, unsigned char *only);
/* The first node from `from` on (from itself included) that uses data i (SIZE_MAX: none).
 * The next use after node n is from n + 1; the run's next node on, from g->next. */
size_t clf__graph_next_use(const clf_graph *g, size_t i, size_t from);
/* The copy on dev to evict next to make room for node n: data held there (held[i]: a copy
 * is allocated; cur[i]: it is current there; only[i]: it is the only current copy), not
 * used by n and not in taken (when given). SIZE_MAX: none; *wb: it must be written back. */
size_t clf__graph_victim(const clf_graph *g, size_t dev, size_t n, const unsigned char *held,
                         const unsigned char *cur, const unsigned char *only,
                         const unsigned char *taken, int *wb);

/* copies.c: a buffer's copies on the devices during a run (run.c, fault.c, redux.c). */
clf_status clf__graph_ensure_reps(clf_graph *g, clf__gdata *d);
clf_status clf__graph_replica(clf_graph *g, clf__gdata *d, size_t dev, clf_buffer **out);
clf_status clf__graph_make_current(clf_graph *g, clf__gdata *d, size_t dev);
/* Room for the copies node idx makes on dev, within the device's budget (evictions). */
clf_status clf__graph_make_room(clf_graph *g, size_t idx, size_t dev);
clf_status clf__graph_keep(clf_graph *g, clf_event *e, clf_event **kept);
/* Record a copy's event (profiled at the run's end) and count it. */
clf_status clf__graph_copy_done(clf_graph *g, clf_event *ev, size_t s, size_t dev, size_t bytes);
/* Node `node` wrote data d on dev (its event ev): the version goes up once per node. */
void clf__graph_written_on(clf_graph *g, clf__gdata *d, size_t dev, clf_event *ev, size_t node);

/* wait.c: the run's job holds events, then defers: 1 when it must return and wait for the
 * held events (0: they completed); the first failure of the run kept, with its detail. */
clf_status clf__graph_hold(clf_graph *g, clf_event *e);
int clf__graph_defer(clf_graph *g);
void clf__graph_failed(clf_graph *g, clf_status st);

/* lane.c: whether node n goes to its device's lane (a kernel over buffers on a device that
 * runs commands inside clEnqueue*, outside a recovery and fault injection); hand it over
 * (its kernel, arguments and wait list taken; *out_ev: the node's event, the caller's
 * reference); the lanes freed (clf_graph_destroy()). */
int clf__graph_lane_wanted(const clf_graph *g, const clf__gnode *n);
clf_status clf__graph_lane_push(clf_graph *g, clf__gnode *n, const clf_kernel_desc *kd,
                                const clf_arg *args, clf_event *const *wait, size_t nwait,
                                clf_event **out_ev);
void clf__graph_lanes_free(clf_graph *g);

/* fault.c: a device failed mid-run. Whether the failure of node idx (g->next; g->nnodes: the
 * copies back home) is a device's (a device marked failed that the graph has not written
 * off yet, or the node's device written off), and the recovery: 1 when the job must wait
 * (see run.c's defer()), 0 to go on at g->next, -1 when the run failed (recorded). */
int clf__graph_device_fault(clf_graph *g, size_t idx);
int clf__graph_recover(clf_graph *g);
/* Drop the copies on the devices the fleet marks failed (the run's start; quiet). */
void clf__graph_write_off_failed(clf_graph *g);
/* Release the re-runs' temporary buffers. */
void clf__graph_tmp_free(clf_graph *g);

/* redux.c: reductions and scratch during a run. The program of the fill and combine
 * kernels (the caller's thread, at the run's start); the per-device state of data d. */
clf_status clf__graph_redux_program(clf_graph *g);
clf_status clf__graph_modes_state(clf_graph *g, clf__gdata *d);
/* Reset for a run (every command of the last one has completed). */
void clf__graph_modes_reset(clf_graph *g, clf__gdata *d);
/* Node n's reduction argument on data d, on dev: the partial (filled with the identity first
 * in this phase), in *out, and what the kernel must wait for in *wait (or NULL). */
clf_status clf__graph_partial(clf_graph *g, clf__gdata *d, size_t dev, clf_buffer **out,
                              clf_event **wait);
/* Argument a of a node on dev, over data d: a reduction's partial or a scratch instance in
 * its place (*special: it was one; what the kernel waits for added to wait[*nw]). */
clf_status clf__graph_mode_arg(clf_graph *g, clf__gdata *d, size_t dev, clf_arg *a,
                               clf_event **wait, size_t *nw, int *special);
/* Node n's kernel (event ev) was queued on dev: the next reduction into its partials and
 * scratch node on its instances there wait for it. */
void clf__graph_modes_queued(clf_graph *g, const clf__gnode *n, size_t dev, clf_event *ev);
/* Combine the partials of the data that node idx (g->nnodes: the run's end) reads or writes
 * otherwise into their buffers: 1 when the job must wait (clf__graph_defer()), 0 done, -1
 * failed (recorded). */
int clf__graph_flush(clf_graph *g, size_t idx);
/* Free the per-device state of reductions and scratch (clf_graph_destroy()). */
void clf__graph_modes_free(clf_graph *g, clf__gdata *d);

/* report.c: fill g->rep from a completed run (st: its status); learn the kernel times
 * (only of a run that succeeded); release the events kept for it. */
void clf__graph_report_run(clf_graph *g, clf_status st);
/* Count a copy of bytes from device s to d in the report being made. */
void clf__graph_count_copy(clf_graph *g, size_t s, size_t d, size_t bytes);

#endif

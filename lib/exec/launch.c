/*
 * One kernel launch across the fleet (clf__exec_run()): leave out failed devices (the
 * kernel was checked on the others by clf__launch_prepare(), check.c), choose budgets, weights and strategy (choose.c), cut the range
 * (partition.c), run one worker per device (worker.c), re-queue a failed device's work,
 * combine reductions and write the report; clf_launch() and asynchronous launches.
 *
 * At the end, the other public launch call: one kernel on one device, clf_kernel_enqueue()
 * and clf_kernel_run().
 */
#include "exec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfer/xfer.h"


/* ---- the launch ------------------------------------------------------------------------ */

void clf__report_balance(clf_launch_report *rep)
{
    double lo = INFINITY, hi = 0, sum = 0;
    size_t busy = 0;
    for (size_t i = 0; i < rep->num_devices; i++) {
        const clf_device_report *r = &rep->dev[i];
        if (r->units) {
            lo = r->finish_s < lo ? r->finish_s : lo;
            hi = r->finish_s > hi ? r->finish_s : hi;
            sum += r->finish_s;
            busy++;
        }
    }
    rep->makespan_s = hi;
    rep->efficiency = busy && hi > 0 ? lo / hi : 1.0;
    rep->imbalance = busy && sum > 0 ? hi / (sum / (double)busy) - 1.0 : 0.0;
}

static void fill_report(clf__launch *L, clf_launch_report *rep)
{
    rep->total_units = L->total;
    rep->num_devices = L->ndev;
    for (size_t i = 0; i < L->ndev; i++) {
        clf_device_report *r = &rep->dev[i];
        *r = L->w[i].rep;
        r->device = L->dev[i];
        r->share = (double)r->units / (double)L->total;
        r->mem_peak = L->w[i].mem_peak;
        r->mem_budget = L->w[i].budget;
        rep->done_units += r->units;
        rep->requeued_units += r->requeued_units;
        rep->failed_devices += r->failed != 0;
    }
    clf__report_balance(rep);
}

/*
 * Say in the report's reason which devices took part but got no work: the partitioner lets a
 * device stand aside when its share of what is left is under one chunk and a faster device
 * is active (lib/plan/partition.c, pool_limit()): it would have finished its chunk after the
 * others finished everything.
 */
static void note_idle(const clf__launch *L, clf_launch_report *rep)
{
    char list[96] = "";
    size_t n = 0, len = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        const clf_device_report *r = &rep->dev[i];
        if (r->units || r->failed || L->excluded[i] || L->held[i] || L->small ||
            L->weights[i] <= 0 || /* left out by weight: the reason says why */
            !clf__part_eligible(L->part, i))
            continue;
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%zu", n ? ", " : "",
                                    r->device);
        n++;
    }
    if (!n)
        return;
    size_t at = strlen(rep->reason);
    snprintf(rep->reason + at, sizeof rep->reason - at,
             "; device%s %s took no work (too slow to help)",
             n > 1 ? "s" : "", list);
}

/*
 * Leave out the devices that failed in an earlier launch and those the program did not build
 * for: they take no work, and the report says why. Fails when none is left.
 */
static clf_status exclude(clf__launch *L)
{
    size_t left = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        size_t d = L->dev[i];
        clf__worker *w = &L->w[i];
        char why[256];
        if (clf__device_failed(L->fl, d, why, sizeof why)) {
            w->rep.status = CLF_ERROR_DEVICE_FAILED;
            snprintf(w->rep.error, sizeof w->rep.error,
                     "failed earlier (clf_device_readmit()): %.110s", why);
        } else if (L->prog && !L->prog->built[d]) {
            w->rep.status = CLF_ERROR_BUILD;
            snprintf(w->rep.error, sizeof w->rep.error, "the program did not build for it");
        } else {
            left++;
            continue;
        }
        L->excluded[i] = 1;
        w->rep.excluded = 1;
    }
    if (left)
        return CLF_SUCCESS;
    clf__fail(CLF_ERROR_DEVICE_FAILED, "'%s': every device of the launch is left out:",
              L->desc.kernel);
    for (size_t i = 0; i < L->ndev; i++)
        clf__append_error("\n  device %zu '%s': %s", L->dev[i], L->fl->dev[L->dev[i]].info.name,
                          L->w[i].rep.error);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].rep.status != CLF_ERROR_BUILD)
            return CLF_ERROR_DEVICE_FAILED;
    return CLF_ERROR_BUILD; /* no device has the program */
}

/* Devices that failed here with a device error are left out of later launches; the report
 * says what happened to each. */
static void record_failures(clf__launch *L)
{
    for (size_t i = 0; i < L->ndev; i++) {
        clf__worker *w = &L->w[i];
        if (L->excluded[i] || w->st == CLF_SUCCESS)
            continue;
        w->rep.status = w->st;
        w->rep.cl_error = w->cl_err;
        snprintf(w->rep.error, sizeof w->rep.error, "%.159s", w->err);
        if (w->exec_fault || clf__cl_device_fault(w->cl_err)) {
            char why[512];
            snprintf(why, sizeof why, "launch of '%.64s': %.400s", L->desc.kernel, w->err);
            clf__device_mark_failed(L->fl, L->dev[i], why);
        }
    }
}

/* Why a launch is incomplete: a failure that re-running cannot repair, else the first one
 * that is not the device's fault (the launch's own), else every device failed. */
static clf_status incomplete(clf__launch *L, uint64_t done, uint64_t free_units)
{
    const clf__worker *first = NULL;
    for (size_t i = 0; i < L->ndev && !first; i++)
        if (L->w[i].fatal)
            first = &L->w[i];
    for (size_t i = 0; i < L->ndev && !first; i++) {
        const clf__worker *w = &L->w[i];
        if (!L->excluded[i] && w->st != CLF_SUCCESS && !w->exec_fault &&
            !clf__cl_device_fault(w->cl_err))
            first = w;
    }
    if (first)
        return clf__fail(first->st, "launch of '%s' incomplete (%llu of %llu units): %s",
                         L->desc.kernel, (unsigned long long)done,
                         (unsigned long long)L->total, first->err);
    size_t failed = 0;
    for (size_t i = 0; i < L->ndev; i++)
        failed += L->w[i].st != CLF_SUCCESS;
    if (!failed)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "launch of '%s' incomplete: %llu units fit no remaining device",
                         L->desc.kernel, (unsigned long long)free_units);
    clf__fail(CLF_ERROR_DEVICE_FAILED,
              "launch of '%s' incomplete (%llu of %llu units; the report says which device did "
              "what): every device that could take work failed:",
              L->desc.kernel, (unsigned long long)done, (unsigned long long)L->total);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].st != CLF_SUCCESS)
            clf__append_error("\n  %s", L->w[i].err);
    return CLF_ERROR_DEVICE_FAILED;
}

/*
 * Run the workers of the devices marked in which until they are done: each on its device's
 * persistent thread (fleetstate.c) but the first, which runs on the calling thread (a launch
 * on one device hands nothing over, and every launch one device fewer).
 */
static void run_workers(clf__launch *L, const unsigned char *which)
{
    size_t here = L->ndev;
    /* Every worker counts as alive before any starts: one that runs out of work waits for
     * the others (their chunks may come back) only while it knows of them. */
    pthread_mutex_lock(&L->lock);
    for (size_t i = 0; i < L->ndev; i++)
        L->alive += which[i] != 0;
    pthread_mutex_unlock(&L->lock);
    for (size_t i = 0; i < L->ndev; i++) {
        clf__worker *w = &L->w[i];
        if (!which[i])
            continue;
        if (here == L->ndev) {
            here = i;
            continue;
        }
        if (clf__devthread_run(L->fl, w->d->index, clf__worker_main, w) != 0) {
            pthread_mutex_lock(&L->lock);
            L->alive--;
            clf__part_retire(L->part, i); /* the others take its share */
            pthread_cond_broadcast(&L->changed);
            pthread_mutex_unlock(&L->lock);
            w->rep.failed = 1;
            w->st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "device %zu: cannot start a thread",
                              L->dev[i]);
            snprintf(w->err, sizeof w->err, "%s", clf_last_error());
            continue;
        }
        w->started = 1;
    }
    if (here < L->ndev)
        clf__worker_main(&L->w[here]);
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].started) {
            clf__devthread_wait(L->fl, L->w[i].d->index);
            L->w[i].started = 0;
        }
}

/* Run a prepared launch; the caller holds the fleet's turn. */
clf_status clf__exec_run(clf__launch *L, clf_launch_report *rep)
{
    clf_status st;
    uint64_t max_units[CLF_MAX_LAUNCH_DEVICES];
    memset(rep, 0, sizeof *rep);
    if ((st = exclude(L)) != CLF_SUCCESS) {
        fill_report(L, rep); /* which device is left out, and why */
        goto out;
    }
    CLF__TRY(st, clf__budgets(L, max_units));
    CLF__TRY(st, clf__choose_strategy(L, max_units, rep));
    CLF__TRY(st, clf__check_range_known(L, max_units));
    clf__log(CLF_LOG_DEBUG, "launch '%s': %s", L->desc.kernel, rep->reason);
    clf__part_params pp = {0};
    /* Fine enough for irregular work; a chunk costs tens of microseconds. */
    pp.chunks_per_device = L->desc.chunks_per_device ? L->desc.chunks_per_device : 16;
    pp.min_chunk = L->desc.min_chunk;
    pp.keep_chunking = L->chunking_asked;
    pp.vary_chunks = L->learning_line;
    /* Guided's shrinking chunks stop at dynamic's size, scaled by the device's share of the
     * weights: on regular work guided then cuts fewer chunks than dynamic, not more (K = 4
     * alone would end in chunks of one granule), and on irregular work its tail is as fine. */
    uint64_t min_chunks[CLF_MAX_LAUNCH_DEVICES];
    if (!pp.min_chunk && (L->part_strategy == CLF__PART_GUIDED ||
                          L->part_strategy == CLF__PART_MEMORY_AWARE)) {
        double wsum = 0;
        for (size_t i = 0; i < L->ndev; i++)
            wsum += L->weights[i];
        for (size_t i = 0; i < L->ndev; i++) {
            double m = wsum > 0 ? (double)L->total * (L->weights[i] / wsum) /
                                      pp.chunks_per_device
                                : 0;
            /* 0 (a device of weight 0): the granularity */
            min_chunks[i] = m >= 1 && m < (double)L->total ? (uint64_t)m : m >= 1 ? L->total : 0;
        }
        pp.min_chunks = min_chunks;
    }
    /* The cost model's fixed cost per chunk, where it has a line for every device: the pool
     * is shared so that devices finish together after it, and a device that would finish its
     * smallest chunk after the others finish everything stands aside. Not with the user's
     * or equal weights (they say how to share), nor for a launch run on one device alone. */
    double rates[CLF_MAX_LAUNCH_DEVICES];
    if (L->fitted && !L->small && L->desc.weights_mode != CLF_WEIGHTS_USER &&
        L->desc.weights_mode != CLF_WEIGHTS_EQUAL) {
        /* A device of weight 0 (left out, excluded) keeps out of the timed shares too. */
        for (size_t i = 0; i < L->ndev; i++)
            rates[i] = L->weights[i] > 0 ? L->fit_rate[i] : 0;
        pp.fixed_s = L->fit_fixed;
        pp.rates = rates;
        L->dense = clf__launch_density(L, L->density);
        pp.density = L->dense ? L->density : NULL;
    }
    /* Guessed weights in a pooled launch: speeds measured as it runs (partition.h). */
    pp.unsure = L->guessed && !L->small && L->part_strategy != CLF__PART_STATIC;
    pp.probe_units = L->probe_units;
    pp.probe_dev = L->probe_slot;
    pp.share_ends = L->has_cuts ? L->share_ends : NULL;
    pp.static_pieces = L->static_pieces;
    pp.piece_min = L->piece_min;
    CLF__TRY(st, clf__part_create(&L->part, L->part_strategy, L->total, L->gran, L->ndev,
                                  L->weights, max_units, &pp));
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (a->kind == CLF_ARG_KIND_BROADCAST && L->bcast_fresh[i])
            CLF__TRY(st, clf__bcast_fresh(L->fl, a, &L->bcast[i]));
        else if (a->kind == CLF_ARG_KIND_BROADCAST)
            CLF__TRY(st, clf__bcast_entry(L->fl, L->X, a, &L->bcast[i]));
        if (a->kind == CLF_ARG_KIND_REDUCE) {
            size_t es = clf_type_size((clf_type)a->type);
            if (!(L->red_acc[i] = malloc(a->size * es)))
                CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "reduction: out of memory"));
            for (size_t k = 0; k < a->size; k++)
                clf__reduce_identity(a->op, a->type, L->red_acc[i] + k * es);
        }
    }

    pthread_mutex_init(&L->lock, NULL);
    pthread_cond_init(&L->changed, NULL);
    L->t0 = clf__now();
    for (size_t i = 0; i < L->ndev; i++) {
        clf__worker *w = &L->w[i];
        w->L = L;
        w->slot_index = i;
        w->d = &L->fl->dev[L->dev[i]];
    }
    unsigned char wave[CLF_MAX_LAUNCH_DEVICES];
    for (size_t i = 0; i < L->ndev; i++)
        wave[i] = !L->excluded[i] && !L->held[i];
    run_workers(L, wave);
    /* A small launch's device failed: the devices standing by take its work back. */
    uint64_t free_units, outstanding, done;
    clf__part_counts(L->part, &free_units, &outstanding, &done);
    if (done != L->total && free_units && !L->stuck && memchr(L->held, 1, L->ndev)) {
        clf__log(CLF_LOG_INFO, "launch '%s': the devices standing by take over",
                 L->desc.kernel);
        run_workers(L, L->held);
    }
    pthread_cond_destroy(&L->changed);
    pthread_mutex_destroy(&L->lock);

    clf__part_counts(L->part, &free_units, &outstanding, &done);
    record_failures(L);
    fill_report(L, rep);
    note_idle(L, rep);
    clf__metrics_launch(L->fl, L->desc.kernel, rep, L->t0);
    if (done != L->total) {
        st = incomplete(L, done, free_units);
        goto out;
    }
    for (size_t i = 0; i < L->nargs; i++)
        if (L->red_acc[i])
            memcpy(L->args[i].host, L->red_acc[i],
                   L->args[i].size * clf_type_size((clf_type)L->args[i].type));
    clf__learn(L);
    /* Kernel time per unit over all the devices: on irregular work the device that drew the
     * cheap part of the range alone would call the whole launch short. */
    double busy = 0, units = 0;
    for (size_t i = 0; i < L->ndev; i++)
        if (rep->dev[i].units && rep->dev[i].busy_s > 0) {
            busy += rep->dev[i].busy_s;
            units += (double)rep->dev[i].units;
        }
    if (units > 0)
        clf__kernel_unit_s(L, 1, busy / units);
    /* A launch that lost or left out a device, ran on one alone, or probed one, says
     * nothing about the kernel's balance. */
    if (L->ndev > 1 && !L->small && !L->probe_units && !rep->failed_devices &&
        !memchr(L->excluded, 1, L->ndev))
    {
        clf__strategy_seen(L, L->part_strategy, CLF__SEEN_EFFICIENCY, 1, rep->efficiency);
        clf__strategy_seen(L, L->part_strategy, CLF__SEEN_UNIT_S, 1,
                           rep->makespan_s / (double)L->total);
    }
out:
    for (size_t i = 0; i < L->ndev; i++)
        if (L->w[i].L)
            clf__worker_fini(&L->w[i]);
    for (size_t i = 0; i < L->nargs; i++) {
        free(L->red_acc[i]);
        if (L->bcast_fresh[i]) { /* the launch's own copies, after its kernels are gone */
            clf__bcast_free(L->fl, L->bcast[i]);
            L->bcast[i] = NULL;
        }
    }
    clf__part_destroy(L->part);
    L->part = NULL;
    return st;
}

clf_status clf_launch(clf_fleet *fl, clf_program *prog, const clf_launch_desc *desc,
                      const clf_arg *args, size_t nargs, clf_launch_report *report)
{
    clf__launch *L = malloc(sizeof *L); /* large: not on the caller's stack */
    clf_launch_report local;
    if (!L)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch: out of memory");
    clf_status st = clf__launch_prepare(L, "clf_launch", fl, prog, desc, args, nargs);
    if (st == CLF_SUCCESS) {
        uint64_t t = clf__new_ticket(L->X);
        clf__take_turn(L->X, t);
        st = clf__exec_run(L, report ? report : &local);
        clf__end_turn(L->X);
    }
    free(L);
    return st;
}

/* ---- asynchronous launches ------------------------------------------------------------- */

/*
 * An asynchronous launch is an entry in the fleet's queue (X->queue_head), not a thread: the
 * fleet's dispatcher, a job of the process's helper pool (util/pool.c) queued while the fleet
 * has entries waiting, takes them in ticket order and runs each in its turn (launches,
 * blocking or not, run in the order they were queued). So N queued launches cost N entries
 * and, across every fleet of the process, at most the pool's threads. The job runs one launch
 * and queues itself again while more wait, so that the fleets take turns on a busy pool. It
 * never waits for another job of the pool: a launch waits only for its turn, which blocking
 * launches on the callers' threads and this fleet's earlier entries (run by this same job
 * before) give back.
 *
 * An entry's event is a host-side completion (core/event.c), not the entry: the dispatcher
 * completes it once the launch has run and frees the entry at once, so the event may be
 * waited for and released after the fleet has gone, and what subscribed to it (the event
 * bridge of xfer/sync.c, for a device command that waits for the launch) is told then, once,
 * instead of a thread waiting for it.
 */
struct clf__async_launch {
    struct clf__async_launch *next; /* in the queue (under X->lock) */
    struct clf__completion *done;   /* the entry's reference; the event holds another */
    uint64_t ticket;
    clf_launch_report *report;
    clf_launch_report local;
    size_t devices[CLF_MAX_LAUNCH_DEVICES];
    double weights[CLF_MAX_LAUNCH_DEVICES];
    uint64_t limits[CLF_MAX_LAUNCH_DEVICES];
    char kernel[256];
    /* Last: the workers are most of it (64 x 5 KB), and a launch touches only its own
     * devices' ones: the pages of the others are never touched. */
    clf__launch L;
};

/* Run one queued launch in its turn, complete its event and free it. */
static void async_run(struct clf__async_launch *op)
{
    clf__exec_state *X = op->L.X;
    clf__take_turn(X, op->ticket);
    clf_status st = clf__exec_run(&op->L, op->report ? op->report : &op->local);
    clf__end_turn(X);
    /* The launch is over with the caller's arrays and report: its waiters may go on. They
     * and the subscribers (a user event's bridge) are told outside every lock. */
    struct clf__completion *done = op->done;
    free(op);
    clf__completion_complete(done, st, st != CLF_SUCCESS ? clf_last_error() : NULL);
    clf__completion_unref(done);
}

/* The dispatcher: the next entry of the fleet's queue, then again while more wait. A job
 * cancelled by the pool's shutdown (the process is exiting) runs the entries here instead,
 * since their events are waited for. */
static void dispatch_job(void *arg, int cancelled)
{
    clf__exec_state *X = arg;
    pthread_mutex_lock(&X->lock);
    for (;;) {
        struct clf__async_launch *op = X->queue_head;
        if (!op) {
            X->dispatching = 0;
            pthread_cond_broadcast(&X->queued); /* exec_state_fini() */
            break; /* X is not touched after this unlock: the teardown may free it */
        }
        X->queue_head = op->next;
        if (!X->queue_head)
            X->queue_tail = NULL;
        pthread_mutex_unlock(&X->lock);
        async_run(op);
        pthread_mutex_lock(&X->lock);
        if (X->queue_head && !cancelled && clf__pool_requeue(&X->dispatch) == CLF_SUCCESS)
            break; /* queued again, behind the other fleets' jobs */
    }
    pthread_mutex_unlock(&X->lock);
}

/* Queue op with the next ticket; 0, or -1 when the pool refused the dispatcher (op not
 * queued, its ticket taken: the caller runs it). */
static int async_queue(clf__exec_state *X, struct clf__async_launch *op)
{
    int queued = 1;
    pthread_mutex_lock(&X->lock);
    op->ticket = X->next_ticket++;
    /* Tickets are taken in queue order under this lock: the queue is in ticket order. */
    if (X->queue_tail)
        X->queue_tail->next = op;
    else
        X->queue_head = op;
    X->queue_tail = op;
    if (!X->dispatching) {
        X->dispatch.fn = dispatch_job;
        X->dispatch.arg = X;
        X->dispatching = 1;
        if (clf__pool_submit(&X->dispatch) != CLF_SUCCESS) {
            /* No job was running: op is the only entry. */
            X->dispatching = 0;
            X->queue_head = X->queue_tail = NULL;
            queued = 0;
        }
    }
    pthread_mutex_unlock(&X->lock);
    return queued ? 0 : -1;
}

clf_status clf_launch_async(clf_fleet *fl, clf_program *prog, const clf_launch_desc *desc,
                            const clf_arg *args, size_t nargs, clf_launch_report *report,
                            clf_event **out_event)
{
    if (!out_event)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_launch_async: out_event is NULL");
    *out_event = NULL;
    struct clf__async_launch *op = calloc(1, sizeof *op);
    /* The launch uses the caller's host arrays until it completes: releasing its event
     * waits for it. The event is made before the launch is queued: the entry is freed when
     * it has run, which may be before async_queue() returns. */
    struct clf__completion *done = clf__completion_create(CLF__COMPLETION_RELEASE_WAITS);
    clf_event *ev = done ? clf__event_of_completion(done) : NULL;
    clf_status st = CLF_SUCCESS;
    if (!op || !ev || !done)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch: out of memory"));
    CLF__TRY(st, clf__launch_prepare(&op->L, "clf_launch_async", fl, prog, desc,
                                      args, nargs));
    /* The description's pointers need not outlive this call: copy what they point to. */
    clf_launch_desc *d = &op->L.desc;
    if (strlen(desc->kernel) >= sizeof op->kernel)
        CLF__TRY(st, clf__fail(CLF_ERROR_INVALID_ARGUMENT, "kernel name too long"));
    strcpy(op->kernel, desc->kernel);
    d->kernel = op->kernel;
    size_t n = op->L.ndev;
    if (d->devices) {
        memcpy(op->devices, desc->devices, n * sizeof *op->devices);
        d->devices = op->devices;
    }
    if (d->weights) {
        if (d->weights_mode == CLF_WEIGHTS_USER)
            memcpy(op->weights, desc->weights, n * sizeof *op->weights);
        d->weights = op->weights;
    }
    if (d->mem_limits) {
        memcpy(op->limits, desc->mem_limits, n * sizeof *op->limits);
        d->mem_limits = op->limits;
    }
    op->report = report;
    clf__completion_ref(done); /* the entry's; the event holds the first */
    op->done = done;
    if (async_queue(op->L.X, op) != 0)
        async_run(op); /* no dispatcher: run it here instead, keeping the queue's order */
    *out_event = ev;
    return CLF_SUCCESS;
out:
    clf__completion_unref(done);
    free(op);
    free(ev);
    return st;
}

/* ---- one kernel on one device ---------------------------------------------------------- */

/*
 * The per-device kernel call's public face: clf_kernel_enqueue() and clf_kernel_run().
 * The work is core's (core/kernel.c: checks, the kernel and its arguments, the command
 * path); this layer adds what core cannot reach, the wait list of clf_events from any
 * device, context or launch, turned into OpenCL events of the device's context by the event
 * bridge (xfer/sync.c), or waited for on the host on a device that runs commands inside
 * clEnqueue* (its ops table says !wait_list_ok, core/devops.c, as clf_device_wait_events() does).
 */

/* The wait list as OpenCL events of device dev's context (*n of them, malloc'd in *out). */
static clf_status wait_list(clf_fleet *fl, size_t dev, const char *kernel,
                            clf_event *const *wait, size_t num_wait, cl_event **out, cl_uint *n)
{
    *out = NULL;
    *n = 0;
    if (num_wait == 0)
        return CLF_SUCCESS;
    if (!clf__devops(fl, dev)->wait_list_ok) {
        clf_status st = clf_events_wait(wait, num_wait);
        if (st != CLF_SUCCESS)
            clf__append_error(" (kernel '%.64s' waited for it and did not run)", kernel);
        return st;
    }
    cl_event *cl = calloc(num_wait, sizeof *cl);
    if (!cl)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "kernel '%s': out of memory", kernel);
    for (size_t i = 0; i < num_wait; i++) {
        clf_status st = clf__event_cl_for(wait[i], fl, dev, &cl[i]);
        if (st != CLF_SUCCESS) {
            for (size_t k = 0; k < i; k++)
                clReleaseEvent(cl[k]);
            free(cl);
            return st;
        }
    }
    *out = cl;
    *n = (cl_uint)num_wait;
    return CLF_SUCCESS;
}

/* clf_kernel_enqueue(), and with whole and part_offsets an array launch's part. */
static clf_status enqueue(clf_fleet *fleet, clf_program *prog, size_t device,
                          const clf_kernel_desc *desc, const clf_arg *args, size_t nargs,
                          const size_t *whole, const cl_ulong *part_offsets,
                          clf_event *const *wait, size_t num_wait, clf_event **out_event)
{
    if (out_event)
        *out_event = NULL;
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (num_wait && !wait)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_kernel_enqueue: wait is NULL (%zu events)",
                         num_wait);
    if (num_wait > CL_UINT_MAX)
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "clf_kernel_enqueue: %zu events to wait for",
                         num_wait);
    for (size_t i = 0; i < num_wait; i++)
        if (!wait[i])
            return clf__fail(CLF_ERROR_NULL_POINTER, "clf_kernel_enqueue: event %zu of the wait "
                             "list is NULL", i);
    cl_kernel k = NULL;
    if ((st = clf__kernel_prepare_part(fleet, prog, device, desc, args, nargs, whole,
                                       part_offsets, &k)) != CLF_SUCCESS)
        return st;
    cl_event *cl = NULL, ev = NULL;
    cl_uint n = 0;
    st = wait_list(fleet, device, desc->kernel, wait, num_wait, &cl, &n);
    if (st == CLF_SUCCESS)
        st = clf__kernel_submit(fleet, device, k, desc, n, cl, out_event ? &ev : NULL);
    for (cl_uint i = 0; i < n; i++)
        clReleaseEvent(cl[i]);
    free(cl);
    clf__kernel_recycle(prog, device, desc->kernel, k); /* the enqueue captured its arguments */
    if (st == CLF_SUCCESS && out_event)
        st = clf__event_wrap(ev, out_event);
    return st;
}

clf_status clf_kernel_enqueue(clf_fleet *fleet, clf_program *prog, size_t device,
                              const clf_kernel_desc *desc, const clf_arg *args, size_t nargs,
                              clf_event *const *wait, size_t num_wait, clf_event **out_event)
{
    return enqueue(fleet, prog, device, desc, args, nargs, NULL, NULL, wait, num_wait,
                   out_event);
}

clf_status clf__kernel_enqueue_part(clf_fleet *fleet, clf_program *variant, size_t device,
                                    const clf_kernel_desc *desc, const clf_arg *args,
                                    size_t nargs, const size_t whole[3],
                                    const cl_ulong part_offsets[16], clf_event *const *wait,
                                    size_t num_wait, clf_event **out_event)
{
    return enqueue(fleet, variant, device, desc, args, nargs, whole, part_offsets, wait,
                   num_wait, out_event);
}

clf_status clf_kernel_run(clf_fleet *fleet, clf_program *prog, size_t device,
                          const clf_kernel_desc *desc, const clf_arg *args, size_t nargs)
{
    clf_event *e = NULL;
    clf_status st = clf_kernel_enqueue(fleet, prog, device, desc, args, nargs, NULL, 0, &e);
    if (st != CLF_SUCCESS)
        return st;
    st = clf_event_wait(e);
    clf_event_release(e);
    return st;
}

/*
 * The launch's data plane (clf__array_plane, see exec.h): clf_launch()'s partitioned host
 * arrays. Per device, the kernel object and its fixed arguments, whole-array buffers,
 * broadcasts (cached, fleetstate.c) and reductions' buffers; per chunk, its split indices of
 * every partitioned argument moved in on the transfer queue (halos, strided rows, per-group
 * outputs), one clEnqueueNDRangeKernel at the chunk's offset, its results moved back, and
 * after a failure whether they all landed. The chunk executor's loop is worker.c's.
 */
#include "exec.h"

#include <string.h>


static clf_status set_arg(clf__worker *w, size_t i, size_t size, const void *value)
{
    cl_int err = clSetKernelArg(w->kernel, (cl_uint)i, size, value);
    if (err != CL_SUCCESS)
        return clf__fail(CLF_ERROR_OPENCL, "kernel '%s' argument %zu: clSetKernelArg: %s (%d)",
                         w->L->desc.kernel, i, clf__cl_error_name(err), (int)err);
    return CLF_SUCCESS;
}

/* Upload a broadcast array once per device; later launches reuse it while unchanged. */
static clf_status broadcast(clf__worker *w, size_t i)
{
    clf__launch *L = w->L;
    struct clf__bcast *b = L->bcast[i];
    size_t di = w->d->index;
    clf_status st = CLF_SUCCESS;
    if (!b->mem[di]) {
        cl_mem m;
        st = clf__worker_device_alloc(w, b->size, CL_MEM_READ_ONLY, &m);
        if (st != CLF_SUCCESS)
            return st;
        cl_event ev = NULL;
        clf__cmd c = clf__worker_cmd(CLF__CMD(L->fl, di, w->d->transfer, "broadcast"),
                                     CLF__CMD_BLOCKING, CLF__FAULT_WRITE);
        c.ev = &ev;
        if (clf__cmd_write(&c, m, 0, b->size, b->host) != CLF_SUCCESS) {
            clf__cmd_release(&CLF__CMD(L->fl, di, NULL, NULL), m, b->size);
            w->mem_now -= b->size;
            return clf__worker_cmd_failed(w, &c);
        }
        w->rep.to_device_s += clf__worker_blocking_done(w, ev, CLF__REC_TO_DEVICE, b->size);
        w->rep.bytes_to_device += b->size;
        b->mem[di] = m;
    } else {
        /* Cached from an earlier launch: it still occupies the budget. */
        w->mem_now += b->size;
        if (w->mem_now > w->mem_peak)
            w->mem_peak = w->mem_now;
    }
    return set_arg(w, i, sizeof(cl_mem), &b->mem[di]);
}

/* Set the device's reduction buffers to the identity on queue q: waited for when evs is
 * NULL, else each fill's event is appended to evs (the kernel then waits for them all). */
static clf_status reset_reductions(clf__worker *w, cl_command_queue q, cl_event *evs,
                                   cl_uint *nev)
{
    clf__launch *L = w->L;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (a->kind != CLF_ARG_KIND_REDUCE)
            continue;
        size_t es = clf_type_size((clf_type)a->type);
        unsigned char ident[8];
        clf__reduce_identity(a->op, a->type, ident);
        /* Waited for here, or by the kernel that the caller enqueues (and flushes) next. */
        clf__cmd c = clf__worker_cmd(CLF__CMD(L->fl, w->d->index, q, "reduction"),
                                     evs ? CLF__CMD_NO_FLUSH : CLF__CMD_BLOCKING,
                                     CLF__FAULT_WRITE);
        c.ev = evs ? &evs[*nev] : NULL;
        if (clf__cmd_fill(&c, w->whole[i], ident, es, 0, a->size * es) != CLF_SUCCESS)
            return clf__worker_cmd_failed(w, &c);
        if (evs)
            (*nev)++;
    }
    w->red_stale = 0;
    return CLF_SUCCESS;
}

/* The array plane's prepare: kernel object, whole-array buffers, broadcasts, reductions and
 * fixed arguments. */
static clf_status array_prepare(clf__worker *w)
{
    clf__launch *L = w->L;
    /* get_global_size() and get_num_groups() see the whole range in every chunk. */
    cl_int err = CL_SUCCESS;
    clf_status rst = clf__cmd_kernel_create(L->fl, w->d->index, L->prog, L->desc.kernel,
                                            L->desc.global, L->desc.dims, &err, &w->kernel);
    if (rst != CLF_SUCCESS) {
        if (err != CL_SUCCESS && w->cl_err == CL_SUCCESS)
            w->cl_err = err;
        return rst;
    }
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        clf_status st = CLF_SUCCESS;
        if (clf__arg_partitioned(a) && !(a->flags & CLF_ARG_CHUNK_INDEXED)) {
            cl_mem_flags f = a->kind == CLF_ARG_KIND_IN ? CL_MEM_READ_ONLY
                             : !clf__arg_reads(a)       ? CL_MEM_WRITE_ONLY
                                                        : CL_MEM_READ_WRITE;
            st = clf__worker_device_alloc(w, (size_t)L->lay[i].bytes, f, &w->whole[i]);
            if (st == CLF_SUCCESS)
                st = set_arg(w, i, sizeof(cl_mem), &w->whole[i]);
        } else if (a->kind == CLF_ARG_KIND_BROADCAST) {
            st = broadcast(w, i);
        } else if (a->kind == CLF_ARG_KIND_SCALAR) {
            st = set_arg(w, i, a->size, a->host);
        } else if (a->kind == CLF_ARG_KIND_LOCAL) {
            st = set_arg(w, i, a->size, NULL);
        } else if (a->kind == CLF_ARG_KIND_REDUCE) {
            size_t es = clf_type_size((clf_type)a->type);
            st = clf__worker_device_alloc(w, a->size * es, CL_MEM_READ_WRITE, &w->whole[i]);
            if (st == CLF_SUCCESS)
                st = set_arg(w, i, sizeof(cl_mem), &w->whole[i]);
        }
        if (st != CLF_SUCCESS)
            return st;
    }
    return L->has_reduce ? reset_reductions(w, w->d->transfer, NULL, NULL) : CLF_SUCCESS;
}

/* A chunk-indexed slot large enough for units; grown only when a chunk needs more. */
static clf_status ensure_slot(clf__worker *w, size_t i, int s, uint64_t units)
{
    const clf_arg *a = &w->L->args[i];
    size_t need = (size_t)units * a->unit;
    if (w->slot[i][s] && w->slot_cap[i][s] >= need)
        return CLF_SUCCESS;
    if (w->slot[i][s]) {
        /* The chunk that used this slot has completed (see run_chunks). */
        clf__cmd_release(&CLF__CMD(w->L->fl, w->d->index, NULL, NULL), w->slot[i][s],
                         w->slot_cap[i][s]);
        w->mem_now -= w->slot_cap[i][s];
        w->slot[i][s] = NULL;
    }
    clf_status st = clf__worker_device_alloc(w, need, CL_MEM_READ_WRITE, &w->slot[i][s]);
    if (st == CLF_SUCCESS)
        w->slot_cap[i][s] = need;
    return st;
}

/*
 * A global-indexed in-out argument with a halo: the halo copied from the host
 * for one chunk covers units of the chunk before it, whose results this
 * device may not have read back yet. Its write must come after that read.
 */
static int late_write(const clf_arg *a)
{
    return a->kind == CLF_ARG_KIND_INOUT && !(a->flags & CLF_ARG_CHUNK_INDEXED) &&
           (a->halo_before || a->halo_after);
}

/*
 * Enqueue on the transfer queue the move of split indices [lo, hi) of argument i between its
 * host array and m, where they start at index at (lo for a global-indexed buffer): one range
 * of bytes when contiguous, else a rectangle of the layout's rows. *bytes: what moves. The
 * "write" or "read" fault rule applies first; the caller flushes the batch.
 */
static clf_status move_indices(clf__worker *w, size_t i, int to_device, cl_mem m, uint64_t lo,
                               uint64_t hi, uint64_t at, cl_uint nwait, const cl_event *wait,
                               cl_event *ev, uint64_t *bytes, uint64_t *ev_bytes)
{
    const clf__layout *y = &w->L->lay[i];
    char *host = w->L->args[i].host;
    cl_command_queue q = w->d->transfer;
    clf_fleet *fl = w->L->fl;
    size_t dev = w->d->index;
    size_t width = (size_t)((hi - lo) * y->unit);
    *bytes = *ev_bytes = width * y->rows;
    if (clf__pinned_use(w)) {
        /* Through the device's pinned slots (pinned.c); the same bytes, in pieces. */
        clf__pin_move mv = {to_device,
                            w->L->args[i].kind == CLF_ARG_KIND_INOUT,
                            m,
                            host + lo * y->unit,
                            (size_t)(at * y->unit),
                            width,
                            y->pitch ? (size_t)y->rows : 1,
                            (size_t)y->pitch};
        return clf__pinned_move(w, &mv, nwait, wait, ev, ev_bytes);
    }
    clf__cmd cmd = clf__worker_cmd(CLF__CMD(fl, dev, q, NULL), CLF__CMD_NO_FLUSH,
                                   to_device ? CLF__FAULT_WRITE : CLF__FAULT_READ);
    cmd.nwait = nwait;
    cmd.wait = wait;
    cmd.ev = ev;
    clf_status st;
    if (!y->pitch) {
        size_t off = (size_t)(at * y->unit);
        st = to_device ? clf__cmd_write(&cmd, m, off, width, host + lo * y->unit)
                       : clf__cmd_read(&cmd, m, off, width, host + lo * y->unit);
    } else {
        size_t pitch = (size_t)y->pitch;
        clf__cmd_box box = {.borigin = {(size_t)(at * y->unit), 0, 0},
                            .horigin = {(size_t)(lo * y->unit), 0, 0},
                            .region = {width, (size_t)y->rows, 1},
                            .brow = pitch,
                            .hrow = pitch};
        st = clf__cmd_rect(&cmd, to_device, m, &box, host);
    }
    return st == CLF_SUCCESS ? CLF_SUCCESS : clf__worker_cmd_failed(w, &cmd);
}

/* Enqueue the chunk's inputs on the transfer queue (and size its slots). */
static clf_status array_chunk_in(clf__worker *w, clf__chunk *c, int which)
{
    clf__launch *L = w->L;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (!clf__arg_partitioned(a) ||
            !(which & (late_write(a) ? CLF__WRITE_LATE : CLF__WRITE_EARLY)))
            continue;
        int chunked = (a->flags & CLF_ARG_CHUNK_INDEXED) != 0;
        uint64_t lo = c->off - (c->off < a->halo_before ? c->off : a->halo_before);
        uint64_t hi = c->off + c->len + a->halo_after;
        uint64_t end = L->end ? L->end : L->total;
        if (hi > end || hi < c->off) /* clamp, and guard the sum */
            hi = end;
        if (chunked) {
            clf_status st = ensure_slot(w, i, c->slot, c->len + a->halo_before + a->halo_after);
            if (st != CLF_SUCCESS)
                return st;
        }
        if (!clf__arg_reads(a))
            continue;
        cl_mem m = chunked ? w->slot[i][c->slot] : w->whole[i];
        uint64_t at = chunked ? lo - c->off + a->halo_before : lo, bytes = 0, ev_bytes = 0;
        uint64_t scale = L->lay[i].scale; /* per-group outputs (no halo): group indices */
        clf_status st = move_indices(w, i, 1, m, lo / scale, hi / scale, at / scale, 0, NULL,
                                     &c->ev[c->nwrite], &bytes, &ev_bytes);
        if (st != CLF_SUCCESS)
            return st;
        c->ev_bytes[c->nwrite] = ev_bytes;
        c->ev_arg[c->nwrite] = (unsigned char)i;
        c->nwrite++;
        c->bytes_in += bytes;
    }
    clFlush(w->d->transfer);
    return CLF_SUCCESS;
}

static clf_status array_run(clf__worker *w, clf__chunk *c)
{
    clf__launch *L = w->L;
    for (size_t i = 0; i < L->nargs; i++)
        if (clf__arg_partitioned(&L->args[i]) && (L->args[i].flags & CLF_ARG_CHUNK_INDEXED)) {
            clf_status st = set_arg(w, i, sizeof(cl_mem), &w->slot[i][c->slot]);
            if (st != CLF_SUCCESS)
                return st;
        }
    size_t offset[3] = {0, 0, 0}, global[3], local[3];
    memcpy(global, L->desc.global, sizeof global);
    memcpy(local, L->desc.local, sizeof local);
    offset[L->split] = (size_t)c->off;
    global[L->split] = (size_t)c->len;
    /* One enqueue per chunk, always: the real global offset is the chunk's start
     * (CLF_CHUNK_OFFSET(); the prelude makes get_global_offset() 0 and get_group_id() count
     * from the range's start). A user's local size divides every chunk (check_desc()); a
     * final chunk that is not a multiple of clfleet's runs with the largest power of two
     * dividing it, which also divides the chunk's offset (auto_local()). */
    int use_local = c->len % local[L->split] == 0;
    if (!use_local && L->auto_local) {
        while (c->len % local[L->split])
            local[L->split] /= 2;
        use_local = 1;
    }
    /* The kernel waits for its inputs, and the reset of the reductions after a partial went
     * to the host (a failed reset fails the kernel). */
    cl_event wait[2 * CLF__MAX_ARGS + 1];
    cl_uint nwait = (cl_uint)c->nwrite, first_fill = nwait;
    memcpy(wait, c->ev, c->nwrite * sizeof *wait);
    clf_status st = CLF_SUCCESS;
    cl_uint end_fill = nwait;
    if (w->red_stale) {
        st = reset_reductions(w, w->d->compute, wait, &nwait);
        end_fill = nwait;
        if (st != CLF_SUCCESS)
            goto out;
    }
    /*
     * An injected execution fault: the kernel (and so its results) never runs, and the chunk
     * fails with the injected status when it finishes (finish_chunk), as a kernel that
     * failed on the device would. It is not made with a user event that fails: PoCL 3.1
     * races there, failing the commands that wait for the event while its pthread device
     * starts running one of them (it aborts on `event->status == CL_SUBMITTED` in
     * pocl_update_event_running, or runs a command whose memory the failure path freed).
     */
    c->fault = CLF__FAULT(L->fl, w->d->index, CLF__FAULT_EXEC);
    if (c->fault != CL_SUCCESS)
        goto out;
    clf__cmd cmd = clf__worker_cmd(CLF__CMD(L->fl, w->d->index, w->d->compute, L->desc.kernel),
                                   0, CLF__FAULT_ENQUEUE);
    cmd.nwait = nwait;
    cmd.wait = wait;
    cmd.ev = &c->kernel;
    if (clf__cmd_kernel(&cmd, w->kernel, L->desc.dims, offset, global,
                        use_local ? local : NULL) != CLF_SUCCESS)
        CLF__TRY(st, clf__worker_cmd_failed(w, &cmd));
out:
    for (cl_uint j = first_fill; j < end_fill; j++)
        clReleaseEvent(wait[j]);
    return st;
}

/* The chunk's outputs to the host arrays: plain outputs first, in-out arrays last (a re-run
 * of a chunk whose in-out results landed would read them as its input). */
static clf_status array_chunk_out(clf__worker *w, clf__chunk *c)
{
    clf__launch *L = w->L;
    if (c->fault != CL_SUCCESS)
        return CLF_SUCCESS; /* the kernel did not run: nothing to read */
    int pinned = clf__pinned_use(w);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < L->nargs; i++) {
            const clf_arg *a = &L->args[i];
            if (!clf__arg_writes(a) || (a->kind == CLF_ARG_KIND_INOUT) != pass)
                continue;
            int chunked = (a->flags & CLF_ARG_CHUNK_INDEXED) != 0;
            cl_mem m = chunked ? w->slot[i][c->slot] : w->whole[i];
            uint64_t at = chunked ? a->halo_before : c->off, bytes = 0, ev_bytes = 0;
            uint64_t scale = L->lay[i].scale; /* per-group outputs: group indices */
            size_t k = c->nwrite + c->nread;
            clf_status st = move_indices(w, i, 0, m, c->off / scale, (c->off + c->len) / scale,
                                         at / scale, 1, &c->kernel, &c->ev[k], &bytes,
                                         &ev_bytes);
            if (st != CLF_SUCCESS) {
                if (pinned)
                    clf__pinned_landed(w); /* the moves enqueued before it land */
                return st;
            }
            c->ev_bytes[k] = ev_bytes;
            c->ev_arg[k] = (unsigned char)i;
            c->nread++;
            c->bytes_out += bytes;
        }
    clFlush(w->d->transfer);
    /* Pinned: the results reach the host array from the slots once read, before the next
     * chunk's late writes copy its halo from there (late_write()). */
    if (pinned)
        clf__pinned_landed(w);
    return CLF_SUCCESS;
}

/* After a failure (both queues finished): 1 when every command of the chunk completed, so
 * its results are all in the host arrays; -1 when only some in-out results are. */
static int array_landed(const clf__worker *w, const clf__chunk *c)
{
    const clf__launch *L = w->L;
    size_t outputs = 0, landed = 0, inout = 0;
    for (size_t i = 0; i < L->nargs; i++)
        outputs += clf__arg_writes(&L->args[i]);
    if (!c->kernel || clf__cl_event_status(c->kernel) != CL_COMPLETE)
        return 0;
    for (size_t j = c->nwrite; j < c->nwrite + c->nread; j++)
        if (clf__cl_event_status(c->ev[j]) == CL_COMPLETE) {
            landed++;
            inout += L->args[c->ev_arg[j]].kind == CLF_ARG_KIND_INOUT;
        }
    if (landed == outputs)
        return 1;
    return inout ? -1 : 0;
}

/*
 * Whether looking ahead pays: a chunk taken early lets its input move while the current chunk
 * computes. Without partitioned input there is nothing to move early, and the chunk would only
 * be held here while an idle device could run it; guided balancing suffers most, since the
 * early chunk is cut from a larger remainder (on two devices of speeds 3:1, a simulation of
 * the off-axis Mandelbrot drops from efficiency 1.00 to 0.78 with look-ahead).
 */
static int array_lookahead(const clf__launch *L)
{
    for (size_t i = 0; i < L->nargs; i++)
        if (clf__arg_partitioned(&L->args[i]) && clf__arg_reads(&L->args[i]))
            return 1;
    return 0;
}

static void array_release(clf__worker *w)
{
    /* The launch's commands have completed (run_chunks() waited for the last reads, or
     * finished both queues on failure), or, for the input writes of a look-ahead chunk that
     * an idle device stole, come before anything a later launch enqueues on the device's
     * in-order queues: the buffers may serve the next launch. */
    for (size_t i = 0; i < CLF__MAX_ARGS; i++) {
        if (w->whole[i])
            clf__bufcache_put(w->L->fl, w->d->index, w->whole[i]);
        for (int s = 0; s < 2; s++)
            if (w->slot[i][s])
                clf__bufcache_put(w->L->fl, w->d->index, w->slot[i][s]);
    }
    if (w->kernel)
        clReleaseKernel(w->kernel);
    if (clf__pinned_use(w))
        clf__pinned_end(w);
}

const clf__plane clf__array_plane = {
    .name = "arrays",
    .prepare = array_prepare,
    .begin = NULL,
    .chunk_in = array_chunk_in,
    .run = array_run,
    .chunk_out = array_chunk_out,
    .landed = array_landed,
    .release = array_release,
    .lookahead = array_lookahead,
    .max_units = NULL, /* clf__launch_footprint() */
};

/*
 * One device's share of a launch, driven by its own host thread (some
 * drivers, such as PoCL's basic device, run each command inside clEnqueue*).
 *
 * The pipeline keeps one chunk of look-ahead: while chunk k computes on the
 * compute queue, chunk k+1's input moves on the transfer queue, followed by
 * chunk k's output. A device therefore asks the partitioner for work only
 * when it is about to need it, which is what dynamic and guided balancing
 * depend on.
 *
 * When a call or a command fails, the device stops: the chunks it holds go
 * back to the partitioner for the other devices (give_back()). A chunk's
 * outputs reach the host array only through reads that wait for its kernel,
 * so a chunk given back has written nothing there, or (when the failure came
 * after some of its reads) correct values that its re-run writes again. An
 * in-out array is the exception: its re-run would read its own results, so a
 * chunk whose in-out results landed counts as done when all its results did,
 * and stops the launch when only some did (reads of in-out arrays come last).
 *
 * Here: the worker's helpers (failures, commands, accounting, device memory), the chunk
 * executor's loop (chunks, look-ahead, stealing, give_back), the reductions' partials and
 * their host arithmetic. clf_launch()'s data plane (clf__array_plane) is arrays.c's.
 */
#include "exec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Record the worker's failure (the detail stays in the worker for the caller). */
static clf_status worker_fail(clf__worker *w, clf_status st)
{
    if (w->st == CLF_SUCCESS) {
        w->st = st;
        snprintf(w->err, sizeof w->err, "%s", clf_last_error());
    }
    return st;
}

/* A failed OpenCL call: its error decides whether the device is at fault (fault.c). */
static clf_status cl_fail(clf__worker *w, cl_int err, const char *call, int injected)
{
    if (w->cl_err == CL_SUCCESS)
        w->cl_err = err;
    clf__cl_fail(err, call, w->d);
    if (injected)
        clf__append_error(" (injected by CLFLEET_FAULT_INJECT)");
    return CLF_ERROR_OPENCL;
}

/* A command the path (core/cmd.c) failed: it recorded the error; its status decides whether
 * the device is at fault (fault.c). */
clf_status clf__worker_cmd_failed(clf__worker *w, const clf__cmd *c)
{
    if (w->cl_err == CL_SUCCESS)
        w->cl_err = c->err;
    return CLF_ERROR_OPENCL;
}

/* Command c as the worker's: it accounts for them itself (report, then
 * clf__metrics_launch()); fault rule `call` applies. */
clf__cmd clf__worker_cmd(clf__cmd c, unsigned flags, unsigned call)
{
    c.flags |= flags | CLF__CMD_NO_METRICS | CLF__CMD_FAULT;
    c.fault = call;
    return c;
}

static void set_stuck(clf__launch *L)
{
    __atomic_store_n(&L->stuck, 1, __ATOMIC_RELAXED);
}

static int is_stuck(clf__launch *L)
{
    return __atomic_load_n(&L->stuck, __ATOMIC_RELAXED);
}

/* A completed command's profiling times as a metrics record; returns its seconds. The
 * report and the fleet's metrics share these reads: counting costs no OpenCL call. */
static double event_rec(clf__rec *r, unsigned kind, cl_event e, const clf__chunk *c,
                        uint64_t bytes)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->bytes = bytes;
    if (c) {
        r->a0 = (int64_t)c->off;
        r->a1 = (int64_t)c->len;
    }
    clf__event_profile(e, &r->t0, &r->t1);
    return r->t1 > r->t0 ? (double)(r->t1 - r->t0) * 1e-9 : 0.0;
}

/* Account for a blocking transfer outside the chunks (broadcasts, reductions); releases ev. */
double clf__worker_blocking_done(clf__worker *w, cl_event ev, unsigned kind, uint64_t bytes)
{
    clf__rec r;
    double s = event_rec(&r, kind, ev, NULL, bytes);
    clReleaseEvent(ev);
    clf__metrics_record(w->L->fl, w->d->index, &r, 1);
    return s;
}

clf_status clf__worker_device_alloc(clf__worker *w, size_t bytes, cl_mem_flags flags,
                                    cl_mem *out)
{
    if (w->mem_now + bytes > w->budget)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "device %zu '%s': %zu more bytes would exceed its budget of %llu "
                         "(holding %llu)",
                         w->d->index, w->d->info.name, bytes, (unsigned long long)w->budget,
                         (unsigned long long)w->mem_now);
    cl_int err = CLF__FAULT(w->L->fl, w->d->index, CLF__FAULT_ALLOC);
    int injected = err != CL_SUCCESS;
    /* One an earlier launch left (fleetstate.c), else a new one. */
    *out = injected ? NULL : clf__bufcache_get(w->L->fl, w->d->index, flags, bytes);
    if (injected)
        return cl_fail(w, err, "clCreateBuffer", injected);
    if (!*out) {
        /* The rule applied above, once, cached buffer or not. Counted as device memory
         * there; clf__worker_buffer_free() (clf__cmd_release()) un-counts it. */
        clf__cmd c = CLF__CMD(w->L->fl, w->d->index, NULL, NULL);
        c.flags = CLF__CMD_NO_FAULT;
        if (clf__cmd_buffer(&c, flags, bytes, NULL, out) != CLF_SUCCESS)
            return clf__worker_cmd_failed(w, &c);
    } else {
        /* A kept buffer was counted as free while the cache held it (fleetstate.c). */
        clf__metrics_alloc(w->L->fl, w->d->index, bytes);
    }
    w->mem_now += bytes;
    if (w->mem_now > w->mem_peak)
        w->mem_peak = w->mem_now;
    return CLF_SUCCESS;
}


static void release_chunk(clf__chunk *c)
{
    for (size_t j = 0; j < c->nwrite + c->nread; j++)
        clReleaseEvent(c->ev[j]);
    if (c->kernel)
        clReleaseEvent(c->kernel);
    if (c->pre)
        clReleaseEvent(c->pre);
    c->nwrite = c->nread = 0;
    c->kernel = c->pre = NULL;
    c->fault = CL_SUCCESS;
}

/* The commands a chunk queued: its writes, reads and kernel. */
static size_t chunk_events(const clf__chunk *c, cl_event all[2 * CLF__MAX_ARGS + 1])
{
    size_t n = 0;
    for (size_t j = 0; j < c->nwrite + c->nread; j++)
        all[n++] = c->ev[j];
    if (c->kernel)
        all[n++] = c->kernel;
    return n;
}

/* Wait, whatever their status, for the commands a chunk queued (they may use the caller's
 * memory). */
static void drain_chunk(const clf__chunk *c)
{
    cl_event all[2 * CLF__MAX_ARGS + 1];
    size_t n = chunk_events(c, all);
    for (size_t j = 0; j < n; j++) /* one by one: a failed one may end a wait for all early */
        clWaitForEvents(1, &all[j]);
}

/*
 * The chunk's kernel as a metrics record; returns its seconds on the device. Behind a marker
 * (c->pre: a library such as clBLAST may run several kernels and return the last one's
 * event), its time runs from the marker's end, or from when that kernel was queued if later
 * (a first call builds its kernels on the host meanwhile; its other kernels were queued just
 * before it), to that kernel's end.
 */
static double kernel_rec(clf__rec *r, const clf__chunk *c)
{
    double s = event_rec(r, CLF__REC_KERNEL, c->kernel, c, 0);
    if (!c->pre)
        return s;
    uint64_t b0, b1;
    cl_ulong queued = 0;
    if (clf__event_profile(c->pre, &b0, &b1) && b1 <= r->t0)
        r->t0 = b1;
    if (clGetEventProfilingInfo(c->kernel, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued,
                                NULL) == CL_SUCCESS &&
        queued > r->t0 && queued <= r->t1)
        r->t0 = queued;
    return r->t1 > r->t0 ? (double)(r->t1 - r->t0) * 1e-9 : 0.0;
}

/* Remember a finished chunk whose reduction partial is still on the device. */
static clf_status add_pending(clf__worker *w, uint64_t off, uint64_t len)
{
    if (w->npend && w->pend[w->npend - 1][0] + w->pend[w->npend - 1][1] == off) {
        w->pend[w->npend - 1][1] += len;
        return CLF_SUCCESS;
    }
    if (w->npend == w->cap_pend) {
        size_t cap = w->cap_pend ? 2 * w->cap_pend : 16;
        uint64_t(*p)[2] = realloc(w->pend, cap * sizeof *p);
        if (!p)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "reduction: out of memory");
        w->pend = p;
        w->cap_pend = cap;
    }
    w->pend[w->npend][0] = off;
    w->pend[w->npend][1] = len;
    w->npend++;
    return CLF_SUCCESS;
}

/* A chunk whose every command completed: account for it and tell the partitioner (or, in a
 * launch with reductions, keep it until the device's partial reaches the host). */
static clf_status account_chunk(clf__worker *w, clf__chunk *c)
{
    clf__launch *L = w->L;
    clf__rec rec[2 * CLF__MAX_ARGS + 1];
    if (L->has_reduce) {
        clf_status st = add_pending(w, c->off, c->len);
        if (st != CLF_SUCCESS)
            return st;
    }
    double kernel_s = kernel_rec(&rec[0], c);
    w->rep.busy_s += kernel_s;
    rec[0].name = L->desc.kernel;
    for (size_t j = 0; j < c->nwrite; j++)
        w->rep.to_device_s +=
            event_rec(&rec[1 + j], CLF__REC_TO_DEVICE, c->ev[j], c, c->ev_bytes[j]);
    for (size_t j = c->nwrite; j < c->nwrite + c->nread; j++)
        w->rep.from_device_s +=
            event_rec(&rec[1 + j], CLF__REC_FROM_DEVICE, c->ev[j], c, c->ev_bytes[j]);
    clf__metrics_record(L->fl, w->d->index, rec, 1 + c->nwrite + c->nread);
    w->rep.bytes_to_device += c->bytes_in;
    w->rep.bytes_from_device += c->bytes_out;
    w->rep.units += c->len;
    w->rep.items += c->len * L->per_unit;
    w->rep.chunks++;
    w->rep.finish_s = clf__now() - L->t0;
    /* The cost model's sample: from when the device could start the chunk to its results. */
    double from = c->t_taken > w->last_finish ? c->t_taken : w->last_finish;
    if (w->rep.finish_s > from) {
        clf__perf_chunk *s = &w->csamp[w->ncsamp++ % CLF__PERF_CHUNKS];
        s->units = c->len;
        s->seconds = w->rep.finish_s - from;
        s->off = c->off - L->first;
        s->kernel_s = kernel_s;
    }
    /* Its speed in this launch, for a launch on guessed weights, which gives the device no
     * second chunk before its first is measured (a time of 0 on a coarse clock marks it
     * measured, without a speed). */
    clf__part_measured(L->part, w->slot_index, c->off - L->first, c->len,
                       w->rep.finish_s - from);
    clf__wprof_bins_add(w->bin_units, L->total, c->off - L->first, c->len);
    w->last_finish = w->rep.finish_s;
    release_chunk(c);
    if (L->has_reduce)
        return CLF_SUCCESS; /* add_pending() did it first */
    pthread_mutex_lock(&L->lock);
    clf__part_complete(L->part, c->len);
    pthread_cond_broadcast(&L->changed);
    pthread_mutex_unlock(&L->lock);
    return CLF_SUCCESS;
}

/* Wait for a chunk, account for it, and tell the partitioner it is done. */
static clf_status finish_chunk(clf__worker *w, clf__chunk *c)
{
    cl_event all[2 * CLF__MAX_ARGS + 1];
    size_t n = chunk_events(c, all);
    cl_int err = n ? clWaitForEvents((cl_uint)n, all) : CL_SUCCESS;
    cl_int exec = c->fault ? c->fault : CL_COMPLETE;
    for (size_t j = 0; j < n && exec == CL_COMPLETE; j++) {
        cl_int s = clf__cl_event_status(all[j]);
        if (s < 0)
            exec = s;
    }
    if (exec != CL_COMPLETE || err != CL_SUCCESS) {
        /* A command failed while it ran (the device is at fault), or the wait itself. */
        w->exec_fault = exec != CL_COMPLETE;
        cl_int e = c->fault ? c->fault : exec != CL_COMPLETE ? exec : err;
        return cl_fail(w, e, exec != CL_COMPLETE ? "chunk execution" : "clWaitForEvents",
                       c->fault != CL_SUCCESS);
    }
    return account_chunk(w, c);
}

/*
 * The device's reduction partials to the host: read every one, then combine them all and
 * complete the chunks they hold (a partial read fails as a whole: nothing is combined).
 * The buffers are reset before the device's next kernel.
 */
static clf_status commit_reductions(clf__worker *w)
{
    clf__launch *L = w->L;
    unsigned char *tmp[CLF__MAX_ARGS] = {0};
    clf_status st = CLF_SUCCESS;
    if (w->npend == 0)
        return CLF_SUCCESS;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (a->kind != CLF_ARG_KIND_REDUCE)
            continue;
        size_t bytes = a->size * clf_type_size((clf_type)a->type);
        if (!(tmp[i] = malloc(bytes)))
            CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "reduction: out of memory"));
        cl_event ev = NULL;
        clf__cmd c = clf__worker_cmd(CLF__CMD(L->fl, w->d->index, w->d->transfer, "reduction"),
                                     CLF__CMD_BLOCKING, CLF__FAULT_READ);
        c.ev = &ev;
        if (clf__cmd_read(&c, w->whole[i], 0, bytes, tmp[i]) != CLF_SUCCESS)
            CLF__TRY(st, clf__worker_cmd_failed(w, &c));
        w->rep.from_device_s += clf__worker_blocking_done(w, ev, CLF__REC_FROM_DEVICE, bytes);
        w->rep.bytes_from_device += bytes;
    }
    uint64_t units = 0;
    for (size_t k = 0; k < w->npend; k++)
        units += w->pend[k][1];
    pthread_mutex_lock(&L->lock);
    for (size_t i = 0; i < L->nargs; i++)
        if (tmp[i])
            clf__reduce_combine(L->args[i].op, L->args[i].type, L->red_acc[i], tmp[i],
                                L->args[i].size);
    clf__part_complete(L->part, units);
    pthread_cond_broadcast(&L->changed);
    pthread_mutex_unlock(&L->lock);
    w->npend = 0;
    w->red_stale = 1;
out:
    for (size_t i = 0; i < L->nargs; i++)
        free(tmp[i]);
    return st;
}

/*
 * Work stealing, with L->lock held: this device is idle and nothing is free,
 * so take the largest look-ahead chunk another device holds but has not
 * started (it is queued behind that device's current chunk). The partitioner
 * counts units, not owners, so the thief completes it as its own. A static
 * launch keeps its plan. Only from a victim at most twice the thief's speed (by
 * the launch's weights): the victim would start the chunk after its current one,
 * so a slower thief would finish it later (a CPU stealing a GPU's chunk 50x too
 * large for it made dynamic launches 50x slower, issue 27).
 */
static int steal(clf__worker *w, clf__chunk *c)
{
    clf__launch *L = w->L;
    clf__worker *victim = NULL;
    if (L->part_strategy == CLF__PART_STATIC)
        return 0;
    for (size_t j = 0; j < L->ndev; j++) {
        clf__worker *v = &L->w[j];
        if (v != w && v->la_state == 1 && v->la_len <= w->max_units &&
            2 * L->weights[w->slot_index] >= L->weights[j] &&
            (!victim || v->la_len > victim->la_len))
            victim = v;
    }
    if (!victim)
        return 0;
    victim->la_state = 2;
    c->off = victim->la_off;
    c->len = victim->la_len;
    w->rep.stolen++;
    return 1;
}

/* Offer the look-ahead chunk for stealing (until claim_lookahead()). */
static void offer_lookahead(clf__worker *w, const clf__chunk *c)
{
    clf__launch *L = w->L;
    pthread_mutex_lock(&L->lock);
    w->la_off = c->off;
    w->la_len = c->len;
    w->la_state = 1;
    pthread_cond_broadcast(&L->changed); /* an idle device may take it */
    pthread_mutex_unlock(&L->lock);
}

/* About to start the look-ahead chunk: 1 if it is still ours, 0 if it was stolen. */
static int claim_lookahead(clf__worker *w)
{
    clf__launch *L = w->L;
    pthread_mutex_lock(&L->lock);
    int stolen = w->la_state == 2;
    w->la_state = 0;
    pthread_mutex_unlock(&L->lock);
    return !stolen;
}

/*
 * Take the next chunk. With wait set (the device holds no chunk), wait while
 * other devices hold chunks that could still come back (a failed device's
 * work is requeued); before waiting, combine this device's reduction partials
 * (its chunks count as outstanding until then). Without it (look-ahead; the
 * device holds a chunk of held units), only try. Returns 1 with a chunk, 0
 * when there is nothing (more) for this device, -1 when combining failed.
 */
/* The partitioner's next chunk for device dev, at its place in a sub-range (L->first). */
static int part_next(clf__launch *L, size_t dev, clf__chunk *c)
{
    if (!clf__part_next(L->part, dev, &c->off, &c->len))
        return 0;
    c->off += L->first;
    c->t_taken = clf__now() - L->t0;
    return 1;
}

static int next_chunk(clf__worker *w, clf__chunk *c, int wait, uint64_t held)
{
    clf__launch *L = w->L;
    for (;;) {
        if (is_stuck(L))
            return 0;
        if (!wait) {
            /* Look ahead only while plenty is left: near the end, a chunk held here
             * while this device is busy could have run on an idle one. */
            uint64_t free_units;
            clf__part_counts(L->part, &free_units, NULL, NULL);
            if (free_units <= (uint64_t)L->ndev * held)
                return 0;
            return part_next(L, w->slot_index, c);
        }
        if (part_next(L, w->slot_index, c))
            return 1;
        if (w->npend) {
            if (commit_reductions(w) != CLF_SUCCESS)
                return -1;
            continue;
        }
        uint64_t free_units, outstanding;
        pthread_mutex_lock(&L->lock);
        clf__part_counts(L->part, &free_units, &outstanding, NULL);
        if ((free_units == 0 && outstanding == 0) || is_stuck(L)) {
            pthread_mutex_unlock(&L->lock);
            return 0;
        }
        if (part_next(L, w->slot_index, c) || steal(w, c)) {
            pthread_mutex_unlock(&L->lock);
            return 1;
        }
        if (outstanding == 0 && L->waiting + 1 == L->alive) {
            /* Everyone alive is waiting and nothing is in flight: the rest fits no one. */
            set_stuck(L);
            pthread_cond_broadcast(&L->changed);
            pthread_mutex_unlock(&L->lock);
            return 0;
        }
        L->waiting++;
        pthread_cond_wait(&L->changed, &L->lock);
        L->waiting--;
        pthread_mutex_unlock(&L->lock);
    }
}

/*
 * Give the chunks this device still holds back to the others, and stop asking. In a launch
 * with reductions, the chunks it finished go back too: their partial was lost with it.
 * Chunks whose in-out results already landed cannot run again: the launch stops.
 */
static void give_back(clf__worker *w, clf__chunk *c, size_t n)
{
    clf__launch *L = w->L;
    uint64_t back = 0, pending = 0;
    for (size_t k = 0; k < w->npend; k++)
        pending += w->pend[k][1];
    if (pending && L->has_inout) {
        clf__fail(CLF_ERROR_DEVICE_FAILED,
                  "device %zu '%s' failed after %llu units had updated in-out arrays, but "
                  "before its reduction partial reached the host: they cannot run again (%s)",
                  w->d->index, w->d->info.name, (unsigned long long)pending, w->err);
        w->fatal = 1;
        w->st = CLF_ERROR_DEVICE_FAILED;
        snprintf(w->err, sizeof w->err, "%s", clf_last_error());
    }
    pthread_mutex_lock(&L->lock);
    back += clf__part_retire(L->part, w->slot_index); /* the rest of its static share */
    for (size_t j = 0; j < n; j++)
        if (c[j].len &&
            clf__part_requeue(L->part, c[j].off - L->first, c[j].len) == CLF_SUCCESS)
            back += c[j].len;
    for (size_t k = 0; k < w->npend && !w->fatal; k++)
        if (clf__part_requeue(L->part, w->pend[k][0] - L->first, w->pend[k][1]) ==
            CLF_SUCCESS) {
            back += w->pend[k][1];
            w->rep.units -= w->pend[k][1];
            w->rep.items -= w->pend[k][1] * L->per_unit;
        }
    if (!w->fatal)
        w->npend = 0;
    if (w->fatal)
        set_stuck(L);
    pthread_cond_broadcast(&L->changed);
    pthread_mutex_unlock(&L->lock);
    w->rep.requeued_units += back;
    w->rep.failed = 1;
}

static clf_status run_chunks(clf__worker *w)
{
    clf__launch *L = w->L;
    const clf__plane *P = L->plane;
    const int lookahead = P->lookahead(L);
    clf__chunk c[2];
    memset(c, 0, sizeof c);
    int cur = 0, have = next_chunk(w, &c[0], 1, 0);
    clf_status st = have < 0 ? CLF_ERROR_OPENCL : CLF_SUCCESS;
    /* Launches with both in-out arrays and reductions combine after every chunk: a chunk
     * whose in-out results landed could not run again if the partial were lost. */
    int commit_each = L->has_reduce && L->has_inout;
    if (have > 0) {
        w->t_start = clf__now() - L->t0;
        c[0].slot = 0;
        st = P->begin ? P->begin(w) : CLF_SUCCESS;
        if (st == CLF_SUCCESS)
            st = P->chunk_in(w, &c[0], CLF__WRITE_ALL);
    }
    int ahead = 0; /* `now` was taken as a look-ahead chunk */
    while (have > 0 && st == CLF_SUCCESS) {
        clf__chunk *now = &c[cur], *nxt = &c[cur ^ 1];
        if (ahead && !claim_lookahead(w)) {
            /* Stolen by an idle device: its input writes were wasted, but they still read
             * the caller's memory. Waited for before letting go: the thief may finish the
             * launch first, and the caller free that memory as soon as clf_launch() returns
             * (ASan saw PoCL's worker copy from freed memory when the last chunk was stolen
             * and nothing else came after it on this transfer queue). */
            drain_chunk(now);
            int slot = now->slot;
            release_chunk(now);
            memset(now, 0, sizeof *now);
            now->slot = slot;
            ahead = 0;
            have = next_chunk(w, now, 1, 0);
            if (have < 0)
                st = CLF_ERROR_OPENCL;
            else if (have)
                st = P->chunk_in(w, now, CLF__WRITE_ALL);
            continue;
        }
        st = P->run(w, now);
        if (st != CLF_SUCCESS)
            break;
        /* Look ahead: the next chunk's input moves while this one computes. Its slot is
         * the one the previous chunk used, which has completed by then. */
        int more = lookahead && next_chunk(w, nxt, 0, now->len);
        nxt->slot = now->slot ^ 1;
        ahead = more;
        if (more)
            offer_lookahead(w, nxt);
        if (more)
            st = P->chunk_in(w, nxt, CLF__WRITE_EARLY);
        if (st == CLF_SUCCESS)
            st = P->chunk_out(w, now);
        /* After this chunk's read on the in-order transfer queue (see late_write, arrays.c). */
        if (st == CLF_SUCCESS && more)
            st = P->chunk_in(w, nxt, CLF__WRITE_LATE);
        if (st == CLF_SUCCESS)
            st = finish_chunk(w, now);
        if (st == CLF_SUCCESS) {
            memset(now, 0, sizeof *now); /* done: nothing of it to give back */
            if (commit_each)
                st = commit_reductions(w);
        }
        if (st != CLF_SUCCESS)
            break;
        /* Nothing to look ahead to: now that this device holds no chunk, wait for one
         * (work of a failed device may still come back). */
        if (!more && (more = next_chunk(w, nxt, 1, 0)) > 0)
            st = P->chunk_in(w, nxt, CLF__WRITE_ALL); /* taken now, not ahead: not offered */
        if (more < 0)
            st = CLF_ERROR_OPENCL;
        have = more;
        cur ^= 1;
    }
    if (st == CLF_SUCCESS)
        st = commit_reductions(w);
    if (st == CLF_SUCCESS)
        return st;
    worker_fail(w, st);
    clFinish(w->d->compute);
    clFinish(w->d->transfer);
    int stolen = !claim_lookahead(w), dirty = 0;
    for (int j = 0; j < 2; j++) {
        clf__chunk *k = &c[j];
        int landed = k->len ? P->landed(w, k) : 0;
        if (k->len && stolen && k->off == w->la_off && k->len == w->la_len) {
            k->len = 0; /* a thief runs it: not ours to give back */
        } else if (landed == 0 && k->len) {
            dirty |= k->kernel != NULL; /* its kernel may have added to the partials */
        } else if (landed > 0) {
            /* Its results are all in place (the failure came after): it is done. */
            if (account_chunk(w, k) == CLF_SUCCESS)
                k->len = 0;
        } else if (landed < 0) {
            clf__fail(CLF_ERROR_DEVICE_FAILED,
                      "device %zu '%s' failed after some of the in-out results of units "
                      "[%llu, %llu) had reached the host: they cannot run again (%s)",
                      w->d->index, w->d->info.name, (unsigned long long)k->off,
                      (unsigned long long)(k->off + k->len), w->err);
            w->fatal = 1;
            w->st = CLF_ERROR_DEVICE_FAILED;
            snprintf(w->err, sizeof w->err, "%s", clf_last_error());
            k->len = 0; /* stays outstanding: the launch is incomplete */
            set_stuck(L);
        }
        release_chunk(k);
    }
    /* The device may still answer (a failed enqueue): when no kernel of a chunk given back
     * ran, its partials hold exactly the finished chunks, which then need not run again. */
    if (w->npend && !dirty && !w->fatal) {
        char keep[sizeof w->err];
        memcpy(keep, w->err, sizeof keep);
        if (commit_reductions(w) != CLF_SUCCESS)
            clf__fail(w->st, "%s", keep);
    }
    give_back(w, c, 2);
    return w->st;
}

void *clf__worker_main(void *arg)
{
    clf__worker *w = arg;
    /* No lock is held here: PoCL's basic device takes its exec lock for each enqueue alone
     * (core/cmd.c), never while this thread waits for its chunks or for the partitioner. */
    clf_status st = w->L->plane->prepare(w);
    if (st == CLF_SUCCESS)
        st = run_chunks(w);
    else {
        worker_fail(w, st);
        give_back(w, NULL, 0);
    }
    if (st != CLF_SUCCESS)
        worker_fail(w, st);
    pthread_mutex_lock(&w->L->lock);
    w->L->alive--;
    pthread_cond_broadcast(&w->L->changed);
    pthread_mutex_unlock(&w->L->lock);
    return NULL;
}

void clf__worker_fini(clf__worker *w)
{
    w->L->plane->release(w);
    free(w->pend);
}

clf_status clf__worker_buffer(clf__worker *w, cl_mem *m, size_t *cap, size_t bytes,
                              cl_mem_flags flags)
{
    if (*m && *cap >= bytes)
        return CLF_SUCCESS;
    clf__worker_buffer_free(w, m, cap);
    clf_status st = clf__worker_device_alloc(w, bytes, flags, m);
    if (st == CLF_SUCCESS)
        *cap = bytes;
    return st;
}

void clf__worker_buffer_free(clf__worker *w, cl_mem *m, size_t *cap)
{
    if (!*m)
        return;
    clf__cmd_release(&CLF__CMD(w->L->fl, w->d->index, NULL, NULL), *m, *cap);
    w->mem_now -= *cap;
    *m = NULL;
    *cap = 0;
}

clf_status clf__worker_cl_fail(clf__worker *w, cl_int err, const char *call, int injected)
{
    return cl_fail(w, err, call, injected);
}

double clf__worker_transfer_done(clf__worker *w, cl_event ev, int to_device, uint64_t bytes)
{
    double s = clf__worker_blocking_done(w, ev, to_device ? CLF__REC_TO_DEVICE
                                                          : CLF__REC_FROM_DEVICE,
                                         bytes);
    if (to_device) {
        w->rep.to_device_s += s;
        w->rep.bytes_to_device += bytes;
    } else {
        w->rep.from_device_s += s;
        w->rep.bytes_from_device += bytes;
    }
    return s;
}

void clf__reduce_identity(unsigned op, unsigned type, void *out)
{
    switch (type) {
    case CLF_TYPE_INT32: {
        int32_t v = op == CLF_REDUCE_SUM    ? 0
                    : op == CLF_REDUCE_PROD ? 1
                    : op == CLF_REDUCE_MIN  ? INT32_MAX
                                            : INT32_MIN;
        memcpy(out, &v, sizeof v);
        break;
    }
    case CLF_TYPE_UINT32: {
        uint32_t v = op == CLF_REDUCE_SUM    ? 0u
                     : op == CLF_REDUCE_PROD ? 1u
                     : op == CLF_REDUCE_MIN  ? UINT32_MAX
                                             : 0u;
        memcpy(out, &v, sizeof v);
        break;
    }
    case CLF_TYPE_INT64: {
        int64_t v = op == CLF_REDUCE_SUM    ? 0
                    : op == CLF_REDUCE_PROD ? 1
                    : op == CLF_REDUCE_MIN  ? INT64_MAX
                                            : INT64_MIN;
        memcpy(out, &v, sizeof v);
        break;
    }
    case CLF_TYPE_FLOAT: {
        float v = op == CLF_REDUCE_SUM    ? 0.0f
                  : op == CLF_REDUCE_PROD ? 1.0f
                  : op == CLF_REDUCE_MIN  ? INFINITY
                                          : -INFINITY;
        memcpy(out, &v, sizeof v);
        break;
    }
    case CLF_TYPE_DOUBLE: {
        double v = op == CLF_REDUCE_SUM    ? 0.0
                   : op == CLF_REDUCE_PROD ? 1.0
                   : op == CLF_REDUCE_MIN  ? INFINITY
                                           : -INFINITY;
        memcpy(out, &v, sizeof v);
        break;
    }
    }
}

#define CLF__COMBINE(T)                                                                            \
    for (size_t k = 0; k < count; k++) {                                                           \
        T a, b;                                                                                    \
        memcpy(&a, (char *)acc + k * sizeof(T), sizeof(T));                                        \
        memcpy(&b, (const char *)x + k * sizeof(T), sizeof(T));                                    \
        a = op == CLF_REDUCE_SUM    ? (T)(a + b)                                                   \
            : op == CLF_REDUCE_PROD ? (T)(a * b)                                                   \
            : op == CLF_REDUCE_MIN  ? (b < a ? b : a)                                              \
                                    : (b > a ? b : a);                                             \
        memcpy((char *)acc + k * sizeof(T), &a, sizeof(T));                                        \
    }

void clf__reduce_combine(unsigned op, unsigned type, void *acc, const void *x, size_t count)
{
    switch (type) {
    case CLF_TYPE_INT32: {
        /* Unsigned arithmetic: wrap-around, not undefined behaviour, on overflow. */
        for (size_t k = 0; k < count; k++) {
            int32_t a, b;
            memcpy(&a, (char *)acc + 4 * k, 4);
            memcpy(&b, (const char *)x + 4 * k, 4);
            a = op == CLF_REDUCE_SUM    ? (int32_t)((uint32_t)a + (uint32_t)b)
                : op == CLF_REDUCE_PROD ? (int32_t)((uint32_t)a * (uint32_t)b)
                : op == CLF_REDUCE_MIN  ? (b < a ? b : a)
                                 : (b > a ? b : a);
            memcpy((char *)acc + 4 * k, &a, 4);
        }
        break;
    }
    case CLF_TYPE_UINT32:
        CLF__COMBINE(uint32_t);
        break;
    case CLF_TYPE_INT64:
        for (size_t k = 0; k < count; k++) {
            int64_t a, b;
            memcpy(&a, (char *)acc + 8 * k, 8);
            memcpy(&b, (const char *)x + 8 * k, 8);
            a = op == CLF_REDUCE_SUM    ? (int64_t)((uint64_t)a + (uint64_t)b)
                : op == CLF_REDUCE_PROD ? (int64_t)((uint64_t)a * (uint64_t)b)
                : op == CLF_REDUCE_MIN  ? (b < a ? b : a)
                                 : (b > a ? b : a);
            memcpy((char *)acc + 8 * k, &a, 8);
        }
        break;
    case CLF_TYPE_FLOAT:
        CLF__COMBINE(float);
        break;
    case CLF_TYPE_DOUBLE:
        CLF__COMBINE(double);
        break;
    }
}

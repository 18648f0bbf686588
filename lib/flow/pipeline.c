/*
 * Pipelines: stages, each a kernel on its own device, that batches flow
 * through. Every stage has two input and two output buffers on its device
 * (double buffering: batch b uses slot b % 2), so that while stage s computes
 * batch b, stage s+1 computes batch b-1 and the copy of batch b-1 between
 * them (clf_copy_async(), by the path selector) may still be draining the
 * other slot.
 *
 * One driver per device enqueues the commands of the stages on that device:
 * the fleet's per-device thread (exec/fleetstate.c), or the calling thread for
 * the last stage's device (on_result runs there), so a run starts no thread.
 * Every command waits for what it needs through events, so the host is not in
 * the way of a batch (except on PoCL's basic device, where enqueue() waits on
 * the host). A stage is a small state machine (its batch and phase) that its
 * driver steps as far as the events other stages publish (in tables, under the
 * pipeline's lock) allow; then the driver steps its device's other stages, and
 * sleeps only when none can move until some stage publishes. The only waits
 * that block a driver are for commands already queued (a stage's own kernel of
 * two batches ago, which bounds the commands in flight to what the two slots
 * allow; a result read), which complete without any driver, so two stages on
 * one device cannot hold each other up.
 *
 *   stage 0:     write in[b%2] <- host        (after kernel b-2 read that slot)
 *   stage s:     kernel b: in[b%2] -> out[b%2] (after its input arrived and the
 *                copy of batch b-2 left out[b%2])
 *   stage s<n-1: copy next.in[b%2] <- out[b%2] (after kernel b, and after the
 *                next stage's kernel b-2 read next.in[b%2]; queued once kernel
 *                b+1 is)
 *   last stage:  read out[b%2] -> host, then results are delivered in order.
 */
#include "flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet/opencl.h"
#include "exec/exec.h"

#define MAX_EXTRA 32

typedef struct stage {
    clf_stage_desc d;
    char *kernel_name;
    clf_arg args[MAX_EXTRA];
    cl_mem bcast[MAX_EXTRA]; /* broadcast arguments, on the stage's device */
    struct clf__device *dev;
    cl_kernel k;
    clf_buffer *in[2], *out[2];
    uint64_t items; /* work-items per batch */
    size_t b;       /* a run: the batch its driver is at, and the phase of that batch */
    int phase;
    int finished;   /* a run: all its batches went, or it failed */
    clf_status st;
    char err[1024];
    int knock_on; /* it stopped because another stage failed (err says no more) */
} stage;

struct clf_pipeline {
    clf_fleet *fl;
    size_t n;
    stage s[CLF_MAX_PIPELINE_STAGES];
    clf_pipeline_options opts;

    /* One run's state. The event tables are filled (published) under lock. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int running, failed;
    unsigned gen; /* counts publications and failures: a driver sleeps until it changes */
    size_t nb;
    const unsigned char *in;
    unsigned char *out;
    clf_event **kev;  /* [s * nb + b]: stage s's kernel for batch b */
    clf_event **inev; /* [s * nb + b]: batch b has arrived in stage s's input slot */
    clf_event **rdev; /* [b]: batch b's output is on the host */
};

/* ---- creation ------------------------------------------------------------------------ */

static clf_status check_stage(const clf_fleet *fl, size_t i, const clf_stage_desc *d,
                              const clf_stage_desc *prev)
{
    char who[32];
    snprintf(who, sizeof who, "stage %zu", i);
    if (clf__check_version(who, d->version, CLF_STAGE_DESC_VERSION, "clf_stage_desc",
                           "CLF_STAGE_DESC_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    if (!d->program || !d->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "stage %zu: %s is NULL", i,
                         d->program ? "kernel" : "program");
    if (d->program->fleet != fl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "stage %zu: program of another fleet", i);
    clf_status st = clf__check_device(fl, d->device);
    if (st != CLF_SUCCESS)
        return st;
    if (d->in_bytes == 0 || d->out_bytes == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "stage %zu: %s is zero", i,
                         d->in_bytes ? "out_bytes" : "in_bytes");
    if (prev && prev->out_bytes != d->in_bytes)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "stage %zu takes %zu bytes per batch, stage %zu gives %zu", i, d->in_bytes,
                         i - 1, prev->out_bytes);
    char call[64];
    snprintf(call, sizeof call, "clf_pipeline_create: stage %zu", i);
    if ((st = clf__check_range(call, d->kernel, d->dims, d->global, d->local, NULL, NULL,
                               NULL)) != CLF_SUCCESS)
        return st;
    if (d->nargs > MAX_EXTRA)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "stage %zu: more than %d extra arguments", i,
                         MAX_EXTRA);
    if (d->nargs && !d->args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "stage %zu: args is NULL", i);
    for (size_t a = 0; a < d->nargs; a++) {
        unsigned kind = d->args[a].kind;
        if (kind != CLF_ARG_KIND_SCALAR && kind != CLF_ARG_KIND_LOCAL &&
            kind != CLF_ARG_KIND_BROADCAST)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "stage %zu argument %zu: kind %u (a stage takes CLF_SCALAR, "
                             "CLF_LOCAL and CLF_BROADCAST after its input and output)",
                             i, a, kind);
        if (d->args[a].size == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "stage %zu argument %zu: size is zero", i, a);
        if (kind != CLF_ARG_KIND_LOCAL && !d->args[a].host)
            return clf__fail(CLF_ERROR_NULL_POINTER, "stage %zu argument %zu: value is NULL", i, a);
    }
    return CLF_SUCCESS;
}

/* Extra argument a of stage si (kernel parameter a + 2). */
static clf_status set_arg(stage *s, size_t si, size_t a, size_t size, const void *v)
{
    cl_int err = clSetKernelArg(s->k, (cl_uint)(a + 2), size, v);
    if (err != CL_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "clf_pipeline_create: stage %zu", si);
        return clf__arg_set_fail(call, s->kernel_name, s->k, a + 2, a, err, s->dev);
    }
    return CLF_SUCCESS;
}

/* Kernel, buffers and the extra arguments (set once: they do not change per batch). */
static clf_status stage_setup(clf_pipeline *pl, size_t si, const clf_stage_desc *d)
{
    stage *s = &pl->s[si];
    char call[64];
    snprintf(call, sizeof call, "clf_pipeline_create: stage %zu", si);
    s->d = *d;
    s->dev = &pl->fl->dev[d->device];
    s->kernel_name = strdup(d->kernel);
    if (!s->kernel_name)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "pipeline: out of memory");
    s->d.kernel = s->kernel_name;
    s->d.args = NULL;
    s->items = 1;
    for (unsigned k = 0; k < d->dims; k++)
        s->items *= d->global[k];
    clf_status bst = clf__program_check_device(d->program, s->dev->index);
    if (bst != CLF_SUCCESS)
        return bst;
    /* get_global_size() reads a hidden last parameter (core/rangearg.c): the batch's range,
     * the same for every batch. */
    cl_int err;
    clf_status st = clf__cmd_kernel_create(pl->fl, s->dev->index, d->program, d->kernel,
                                           d->global, d->dims, &err, &s->k);
    if (err == CL_INVALID_KERNEL_NAME) {
        /* The command path's message lists the kernels the program has. */
        char why[800];
        snprintf(why, sizeof why, "%s", clf_last_error());
        return clf__fail(CLF_ERROR_NOT_FOUND, "%s: the stage's program: %s", call, why);
    }
    /* The extra arguments (after the input and output) and the range against the kernel
     * (core/argcheck.c), before any is set: PoCL crashes on a value for a pointer. */
    if (st == CLF_SUCCESS)
        st = clf__check_args(call, d->program, d->kernel, s->k, s->dev, 2, d->args, d->nargs, 0);
    /* A broadcast is one buffer for the pipeline's life, as a plain OpenCL program would
     * hold it: a parameter that is not const may be written (the user's bug, each batch then
     * sees the last one's stores), which the source scan (core/storescan.c) can tell. */
    for (size_t a = 0; a < d->nargs && st == CLF_SUCCESS; a++) {
        cl_kernel_arg_address_qualifier aq;
        cl_kernel_arg_type_qualifier tq;
        char name[128];
        if (d->args[a].kind == CLF_ARG_KIND_BROADCAST &&
            clf__kernel_param(s->k, 2 + a, &aq, &tq, name, sizeof name) &&
            aq != CL_KERNEL_ARG_ADDRESS_CONSTANT && !(tq & CL_KERNEL_ARG_TYPE_CONST) &&
            clf__source_param_stores(d->program->source, d->kernel, 2 + a) == 2)
            clf__log(CLF_LOG_WARN, "%s: kernel '%s' stores through parameter %zu '%s', given "
                     "as a broadcast (CLF_BROADCAST: read only, uploaded once): each batch "
                     "sees the stores of the batches before it", call, d->kernel, 2 + a, name);
    }
    if (st == CLF_SUCCESS)
        st = clf__check_range(call, d->kernel, d->dims, d->global, d->local, NULL, s->dev, s->k);
    for (int h = 0; h < 2 && st == CLF_SUCCESS; h++) {
        st = clf_buffer_create(&s->in[h], pl->fl, d->device, d->in_bytes, CLF_MEM_READ_WRITE);
        if (st == CLF_SUCCESS)
            st = clf_buffer_create(&s->out[h], pl->fl, d->device, d->out_bytes, CLF_MEM_READ_WRITE);
    }
    for (size_t a = 0; a < d->nargs && st == CLF_SUCCESS; a++) {
        const clf_arg *x = &d->args[a];
        s->args[a] = *x;
        if (x->kind == CLF_ARG_KIND_SCALAR) {
            st = set_arg(s, si, a, x->size, x->host); /* OpenCL copies the value */
        } else if (x->kind == CLF_ARG_KIND_LOCAL) {
            st = set_arg(s, si, a, x->size, NULL);
        } else {
            /* Not counted as device memory, as before the command path. */
            clf__cmd c = CLF__CMD(pl->fl, s->dev->index, NULL, "stage broadcast");
            c.flags = CLF__CMD_NO_METRICS;
            st = clf__cmd_buffer(&c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, x->size, x->host,
                                 &s->bcast[a]);
            if (st != CLF_SUCCESS)
                return st;
            st = set_arg(s, si, a, sizeof(cl_mem), &s->bcast[a]);
        }
        s->args[a].host = NULL; /* not kept: the caller's values need not outlive this */
    }
    return st;
}

clf_status clf_pipeline_create(clf_pipeline **out, clf_fleet *fleet, const clf_stage_desc *stages,
                               size_t nstages, const clf_pipeline_options *opts)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_pipeline_create: out is NULL");
    *out = NULL;
    if (!fleet || !stages)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_pipeline_create: %s is NULL",
                         fleet ? "stages" : "fleet");
    if (nstages == 0 || nstages > CLF_MAX_PIPELINE_STAGES)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_pipeline_create: %zu stages (1 to %d)",
                         nstages, CLF_MAX_PIPELINE_STAGES);
    if (opts && clf__check_version(NULL, opts->version, CLF_PIPELINE_OPTIONS_VERSION,
                                   "clf_pipeline_options",
                                   "CLF_PIPELINE_OPTIONS_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < nstages; i++) {
        clf_status st = check_stage(fleet, i, &stages[i], i ? &stages[i - 1] : NULL);
        if (st != CLF_SUCCESS)
            return st;
    }
    clf_pipeline *pl = calloc(1, sizeof *pl);
    if (!pl)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "pipeline: out of memory");
    pl->fl = fleet;
    clf__fleet_ref(fleet);
    pl->n = nstages;
    clf_pipeline_options def = CLF_PIPELINE_OPTIONS_INIT;
    pl->opts = opts ? *opts : def;
    pthread_mutex_init(&pl->lock, NULL);
    pthread_cond_init(&pl->cond, NULL);
    for (size_t i = 0; i < nstages; i++) {
        clf_status st = stage_setup(pl, i, &stages[i]);
        if (st != CLF_SUCCESS) {
            clf_pipeline_destroy(pl);
            return st;
        }
    }
    *out = pl;
    return CLF_SUCCESS;
}

void clf_pipeline_destroy(clf_pipeline *pl)
{
    if (!pl)
        return;
    for (size_t i = 0; i < pl->n; i++) {
        stage *s = &pl->s[i];
        for (int h = 0; h < 2; h++) {
            clf_buffer_destroy(s->in[h]);
            clf_buffer_destroy(s->out[h]);
        }
        for (size_t a = 0; a < MAX_EXTRA; a++)
            if (s->bcast[a])
                clReleaseMemObject(s->bcast[a]);
        if (s->k)
            clReleaseKernel(s->k);
        free(s->kernel_name);
    }
    pthread_cond_destroy(&pl->cond);
    pthread_mutex_destroy(&pl->lock);
    clf_fleet *fl = pl->fl;
    free(pl);
    clf__fleet_unref(fl); /* last: it may tear the fleet down */
}

/* ---- a run --------------------------------------------------------------------------- */

static void publish(clf_pipeline *pl, clf_event **slot, clf_event *e)
{
    pthread_mutex_lock(&pl->lock);
    *slot = e;
    pl->gen++;
    pthread_cond_broadcast(&pl->cond);
    pthread_mutex_unlock(&pl->lock);
}

/* The event another stage publishes in slot: 1 and *e once it has, 0 while it has not, -1
 * when the run failed. Never waits: the driver steps its other stages meanwhile. */
static int peek(clf_pipeline *pl, clf_event *const *slot, clf_event **e)
{
    pthread_mutex_lock(&pl->lock);
    *e = *slot;
    int failed = pl->failed;
    pthread_mutex_unlock(&pl->lock);
    return *e ? 1 : failed ? -1 : 0;
}

static clf_status stage_fail(clf_pipeline *pl, stage *s, clf_status st)
{
    if (s->st == CLF_SUCCESS) {
        s->st = st;
        snprintf(s->err, sizeof s->err, "%s", clf_last_error());
    }
    pthread_mutex_lock(&pl->lock);
    pl->failed = 1;
    pl->gen++;
    pthread_cond_broadcast(&pl->cond);
    pthread_mutex_unlock(&pl->lock);
    return st;
}

/* A stage that stops because another failed: not the one to report. */
static clf_status knock_on(stage *s)
{
    s->knock_on = 1;
    return clf__fail(CLF_ERROR_OPENCL, "stopped: another stage failed");
}

/* Enqueue on the stage's compute queue after up to two events. */
static clf_status enqueue(clf_pipeline *pl, stage *s, int what, size_t b, clf_event *w0,
                          clf_event *w1, clf_event **out)
{
    cl_event cw[2], ev = NULL;
    cl_uint nw = 0;
    clf_event *w[2] = {w0, w1};
    clf_status st = CLF_SUCCESS;
    size_t dev = s->d.device;
    /* A device that runs commands in whichever thread makes them ready (PoCL's basic) would
     * run this one inside the completion it waits for, and can deadlock there: wait here
     * (the command path would too, but these events need no OpenCL bridge for that). */
    int on_host = !clf__devops(pl->fl, dev)->wait_list_ok;
    for (int i = 0; i < 2 && st == CLF_SUCCESS; i++) {
        if (!w[i])
            continue;
        if (on_host)
            st = clf_event_wait(w[i]);
        else if ((st = clf_event_cl_for(w[i], pl->fl, dev, &cw[nw])) == CLF_SUCCESS)
            nw++;
    }
    int slot = (int)(b & 1);
    if (st == CLF_SUCCESS && what == 0) {
        cl_int err = clSetKernelArg(s->k, 0, sizeof(cl_mem), &s->in[slot]->mem);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(s->k, 1, sizeof(cl_mem), &s->out[slot]->mem);
        if (err != CL_SUCCESS)
            st = clf__cl_fail(err, "clSetKernelArg (pipeline stage)", s->dev);
        else {
            clf__cmd c = CLF__CMD(pl->fl, dev, s->dev->compute, s->kernel_name);
            c.nwait = nw;
            c.wait = cw;
            c.ev = &ev;
            st = clf__cmd_kernel(&c, s->k, s->d.dims, NULL, s->d.global,
                                 s->d.local[0] ? s->d.local : NULL);
        }
    } else if (st == CLF_SUCCESS) {
        /* The last stage's result to the host, on the compute queue behind its kernel. */
        clf__cmd c = CLF__CMD(pl->fl, dev, s->dev->compute, "pipeline result");
        c.nwait = nw;
        c.wait = cw;
        c.ev = &ev;
        st = clf__cmd_read(&c, s->out[slot]->mem, 0, s->d.out_bytes,
                           pl->out + b * s->d.out_bytes);
    }
    for (cl_uint i = 0; i < nw; i++)
        clReleaseEvent(cw[i]);
    if (st != CLF_SUCCESS)
        return st;
    return clf__event_wrap(ev, out);
}

/* Host write of batch b into stage 0's input slot; the slot is free (kernel b-2 is done). */
static clf_status upload(clf_pipeline *pl, stage *s, size_t b, clf_event **out)
{
    cl_event ev;
    clf__cmd c = CLF__CMD(pl->fl, s->d.device, s->dev->transfer, "pipeline input");
    c.ev = &ev;
    clf_status st = clf__cmd_write(&c, s->in[b & 1]->mem, 0, s->d.in_bytes,
                                   pl->in + b * s->d.in_bytes);
    return st == CLF_SUCCESS ? clf__event_wrap(ev, out) : st;
}

static clf_status deliver(clf_pipeline *pl, size_t b)
{
    clf_status st = clf_event_wait(pl->rdev[b]);
    if (st == CLF_SUCCESS && pl->opts.on_result) {
        size_t bytes = pl->s[pl->n - 1].d.out_bytes;
        pl->opts.on_result(pl->opts.user, b, pl->out + b * bytes, bytes);
    }
    return st;
}

/*
 * Batch b leaves stage si for the next stage: a copy after kernel b and after the next
 * stage's kernel b-2, which read the slot it fills. 1: done; 0: that kernel is not queued
 * yet; -1: failed (*st).
 */
static int forward(clf_pipeline *pl, size_t si, size_t b, clf_status *st)
{
    stage *s = &pl->s[si], *n = &pl->s[si + 1];
    size_t nb = pl->nb;
    clf_event *wait[2] = {pl->kev[si * nb + b], NULL};
    if (b >= 2) {
        int r = peek(pl, &pl->kev[(si + 1) * nb + b - 2], &wait[1]);
        if (r < 0)
            *st = knock_on(s);
        if (r <= 0)
            return r;
    }
    clf_event *e = NULL;
    *st = clf_copy_async(n->in[b & 1], 0, s->out[b & 1], 0, s->d.out_bytes, wait,
                         b >= 2 ? 2 : 1, &e);
    if (*st != CLF_SUCCESS)
        return -1;
    publish(pl, &pl->inev[(si + 1) * nb + b], e);
    return 1;
}

/*
 * Step stage si as far as it goes: batch by batch, each in phases (0: its kernel of two
 * batches ago is done; 1: its input is there; 2: its kernel is queued; 3: handed on, or
 * for the last stage read back; 4: the last stage delivers the batch before). Returns with
 * the stage finished, or waiting for an event another stage has not published yet (the
 * phase is kept), or a failure. *progress is set when it moved.
 */
static clf_status stage_step(clf_pipeline *pl, size_t si, int *progress)
{
    stage *s = &pl->s[si];
    size_t nb = pl->nb, last = pl->n - 1;
    clf_event **kev = pl->kev + si * nb, **inev = pl->inev + si * nb;
    clf_status st = CLF_SUCCESS;
    clf_event *e;
    int r;
    while (!s->finished) {
        size_t b = s->b;
        if (b == nb) {
            if (si == last) {
                if ((st = deliver(pl, nb - 1)) != CLF_SUCCESS)
                    return st;
            } else if (!pl->opts.serial && (r = forward(pl, si, nb - 1, &st)) <= 0) {
                return r < 0 ? st : CLF_SUCCESS;
            }
            s->finished = 1;
            *progress = 1;
            break;
        }
        switch (s->phase) {
        case 0:
            /* At most two batches in flight per stage: the two slots. */
            if (b >= 2 && (st = clf_event_wait(kev[b - 2])) != CLF_SUCCESS)
                return st;
            break;
        case 1:
            if (si == 0) {
                if (pl->opts.serial && b >= 1) {
                    /* The baseline: the previous batch leaves the pipeline first. */
                    if ((r = peek(pl, &pl->rdev[b - 1], &e)) <= 0)
                        return r < 0 ? knock_on(s) : CLF_SUCCESS;
                    if ((st = clf_event_wait(e)) != CLF_SUCCESS)
                        return st;
                }
                if ((st = upload(pl, s, b, &e)) != CLF_SUCCESS)
                    return st;
                publish(pl, &inev[b], e);
            } else if ((r = peek(pl, &inev[b], &e)) <= 0) {
                return r < 0 ? knock_on(s) : CLF_SUCCESS;
            }
            break;
        case 2: {
            /* The output slot is free once batch b-2 has left it (forwarded at b-1). */
            clf_event *slot_free = NULL;
            if (b >= 2)
                slot_free = si < last ? pl->inev[(si + 1) * nb + b - 2] : pl->rdev[b - 2];
            if ((st = enqueue(pl, s, 0, b, inev[b], slot_free, &e)) != CLF_SUCCESS)
                return st;
            publish(pl, &kev[b], e);
            break;
        }
        case 3:
            if (si < last) {
                /* Kernel b is queued: the device stays busy while batch b-1 is handed on.
                 * In the serial baseline nothing may wait for a later batch: b goes at
                 * once. */
                if ((pl->opts.serial || b >= 1) &&
                    (r = forward(pl, si, pl->opts.serial ? b : b - 1, &st)) <= 0)
                    return r < 0 ? st : CLF_SUCCESS;
            } else {
                if ((st = enqueue(pl, s, 1, b, kev[b], NULL, &e)) != CLF_SUCCESS)
                    return st;
                publish(pl, &pl->rdev[b], e);
            }
            break;
        default:
            /* The last stage delivers in order, one batch behind. */
            if (si == last && b >= 1 && (st = deliver(pl, b - 1)) != CLF_SUCCESS)
                return st;
            s->b++;
            s->phase = -1; /* 0 below */
            break;
        }
        s->phase++;
        *progress = 1;
    }
    return CLF_SUCCESS;
}

/* A driver: the stages of one device, stepped in turn until all are finished. */
typedef struct driver {
    clf_pipeline *pl;
    size_t device;
} driver;

static void *drive(void *arg)
{
    driver *dr = arg;
    clf_pipeline *pl = dr->pl;
    for (;;) {
        pthread_mutex_lock(&pl->lock);
        unsigned seen = pl->gen;
        pthread_mutex_unlock(&pl->lock);
        int progress = 0, left = 0;
        for (size_t i = 0; i < pl->n; i++) {
            stage *s = &pl->s[i];
            if (s->d.device != dr->device || s->finished)
                continue;
            clf_clear_error();
            clf_status st = stage_step(pl, i, &progress);
            if (st != CLF_SUCCESS) {
                s->finished = 1;
                stage_fail(pl, s, st);
            }
            left += !s->finished;
        }
        if (!left)
            break;
        /* Nothing moved: sleep until some stage publishes or fails (gen changed since the
         * pass began: there may be news already). */
        pthread_mutex_lock(&pl->lock);
        while (!progress && pl->gen == seen)
            pthread_cond_wait(&pl->cond, &pl->lock);
        pthread_mutex_unlock(&pl->lock);
    }
    return NULL;
}

/* Kernel busy time of a finished run, from the profiling events. */
static double busy_time(clf_event *const *ev, size_t n)
{
    double t = 0;
    for (size_t b = 0; b < n; b++) {
        uint64_t t0 = 0, t1 = 0;
        cl_event e = ev[b] ? clf_cl_event(ev[b]) : NULL;
        /* clf__event_profile(): a simulated device's kernel takes its simulated time. */
        if (e && clf__event_profile(e, &t0, &t1) && t1 > t0)
            t += (double)(t1 - t0) * 1e-9;
    }
    return t;
}

static void fill_report(clf_pipeline *pl, double wall, clf_pipeline_report *r)
{
    memset(r, 0, sizeof *r);
    r->num_stages = pl->n;
    r->batches = pl->nb;
    r->wall_s = wall;
    r->batches_per_s = wall > 0 ? (double)pl->nb / wall : 0;
    double worst = 0;
    for (size_t i = 0; i < pl->n; i++) {
        clf_stage_report *sr = &r->stage[i];
        const stage *s = &pl->s[i];
        sr->device = s->d.device;
        sr->batches = pl->nb;
        sr->busy_s = busy_time(pl->kev + i * pl->nb, pl->nb);
        sr->bytes_in = (uint64_t)pl->nb * s->d.in_bytes;
        if (sr->busy_s > 0) {
            sr->batches_per_s = (double)pl->nb / sr->busy_s;
            sr->items_per_s = (double)pl->nb * (double)s->items / sr->busy_s;
        }
        sr->utilization = wall > 0 ? sr->busy_s / wall : 0;
        if (sr->busy_s > worst) {
            worst = sr->busy_s;
            r->bottleneck = i;
        }
    }
    r->efficiency = wall > 0 ? worst / wall : 0;
}

clf_status clf_pipeline_run(clf_pipeline *pl, const void *in, void *out, size_t nbatches,
                            clf_pipeline_report *report)
{
    if (!pl || !in || !out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_pipeline_run: %s is NULL",
                         !pl   ? "pipeline"
                         : !in ? "in"
                               : "out");
    if (nbatches == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf_pipeline_run: no batches");
    size_t cells, tmp;
    if (clf__mul_overflow(nbatches, pl->n, &cells) ||
        clf__mul_overflow(nbatches, pl->s[0].d.in_bytes, &tmp) ||
        clf__mul_overflow(nbatches, pl->s[pl->n - 1].d.out_bytes, &tmp))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "clf_pipeline_run: %zu batches overflow",
                         nbatches);
    pthread_mutex_lock(&pl->lock);
    int busy = pl->running;
    pl->running = 1;
    pthread_mutex_unlock(&pl->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY, "clf_pipeline_run: the pipeline is running already");

    clf_status st = CLF_SUCCESS;
    driver drivers[CLF_MAX_PIPELINE_STAGES];
    size_t ndrivers = 0;
    unsigned char started[CLF_MAX_PIPELINE_STAGES] = {0};
    pl->nb = nbatches;
    pl->in = in;
    pl->out = out;
    pl->failed = 0;
    pl->kev = calloc(cells, sizeof *pl->kev);
    pl->inev = calloc(cells, sizeof *pl->inev);
    pl->rdev = calloc(nbatches, sizeof *pl->rdev);
    if (!pl->kev || !pl->inev || !pl->rdev)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "pipeline: out of memory"));
    uint64_t t0 = clf__mono_ns();
    for (size_t i = 0; i < pl->n; i++) {
        stage *s = &pl->s[i];
        s->st = CLF_SUCCESS;
        s->knock_on = 0;
        s->b = 0;
        s->phase = 0;
        s->finished = 0;
    }
    /* One driver per device with stages; the last stage's first, for this thread. */
    drivers[ndrivers++] = (driver){pl, pl->s[pl->n - 1].d.device};
    for (size_t i = 0; i < pl->n; i++) {
        size_t k = 0;
        while (k < ndrivers && drivers[k].device != pl->s[i].d.device)
            k++;
        if (k == ndrivers)
            drivers[ndrivers++] = (driver){pl, pl->s[i].d.device};
    }
    for (size_t k = 1; k < ndrivers; k++) {
        if (clf__devthread_run(pl->fl, drivers[k].device, drive, &drivers[k]) == 0) {
            started[k] = 1;
            continue;
        }
        /* Its stages fail; the others see it and stop. */
        clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "pipeline: cannot start device %zu's thread",
                  drivers[k].device);
        for (size_t i = 0; i < pl->n; i++)
            if (pl->s[i].d.device == drivers[k].device) {
                pl->s[i].finished = 1;
                stage_fail(pl, &pl->s[i], CLF_ERROR_OUT_OF_HOST_MEMORY);
            }
    }
    drive(&drivers[0]);
    for (size_t k = 1; k < ndrivers; k++)
        if (started[k])
            clf__devthread_wait(pl->fl, drivers[k].device);
    /* Everything queued completes before the buffers or the host arrays are reused. */
    for (size_t i = 0; i < cells; i++) {
        if (pl->kev[i])
            clf_event_wait(pl->kev[i]);
        if (pl->inev[i])
            clf_event_wait(pl->inev[i]);
    }
    for (size_t b = 0; b < nbatches; b++)
        if (pl->rdev[b])
            clf_event_wait(pl->rdev[b]);
    double wall = (double)(clf__mono_ns() - t0) * 1e-9;
    /* The stage that failed first-hand, else the first that stopped. */
    size_t failed = pl->n;
    for (size_t i = pl->n; i-- > 0;)
        if (pl->s[i].st != CLF_SUCCESS && (failed == pl->n || !pl->s[i].knock_on))
            failed = i;
    for (size_t i = failed; i < pl->n; i++)
        if (pl->s[i].st != CLF_SUCCESS) {
            st = clf__fail(pl->s[i].st, "pipeline stage %zu ('%s' on device %zu): %s", i,
                           pl->s[i].kernel_name, pl->s[i].d.device, pl->s[i].err);
            break;
        }
    if (st == CLF_SUCCESS && report)
        fill_report(pl, wall, report);
out:
    for (size_t i = 0; pl->kev && i < cells; i++) {
        clf_event_release(pl->kev[i]);
        clf_event_release(pl->inev[i]);
    }
    for (size_t b = 0; pl->rdev && b < nbatches; b++)
        clf_event_release(pl->rdev[b]);
    free(pl->kev);
    free(pl->inev);
    free(pl->rdev);
    pl->kev = pl->inev = pl->rdev = NULL;
    pthread_mutex_lock(&pl->lock);
    pl->running = 0;
    pthread_mutex_unlock(&pl->lock);
    return st;
}

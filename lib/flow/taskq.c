/*
 * Task queues: many independent kernel launches, each with its own arguments
 * and size, run by whichever device is free (dynamic balancing of tasks of
 * unequal lengths).
 *
 * Work stealing: a run deals the tasks to one deque per device (a task's
 * affinity, else to the device predicted to finish it first, round robin until
 * the cost model knows the kernel on every device), then runs one worker per
 * device on the fleet's per-device threads (exec/fleetstate.c). A worker takes
 * tasks from the head of its own deque; when that is empty it steals from the
 * tail of the fullest other deque, so that the tasks a device was dealt last,
 * the ones it would reach last, go to an idle device first.
 * A task is taken once, under the queue's lock, and runs once.
 *
 * Where tasks go, by the cost model (the deal, the steal gate, learning), is
 * tasksched.c's.
 */
#include "taskq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- creation and submission ----------------------------------------------------------- */

clf_status clf_taskq_create(clf_taskq **out, clf_fleet *fleet, clf_program *prog,
                            const size_t *devices, size_t num_devices)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_taskq_create: out is NULL");
    *out = NULL;
    if (!fleet || !prog)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_taskq_create: %s is NULL",
                         fleet ? "program" : "fleet");
    if (prog->fleet != fleet)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_taskq_create: program of another fleet");
    size_t n = devices ? num_devices : fleet->ndev;
    if (n == 0 || n > CLF_MAX_LAUNCH_DEVICES)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_taskq_create: %zu devices (1 to %d)", n,
                         CLF_MAX_LAUNCH_DEVICES);
    for (size_t i = 0; devices && i < n; i++) {
        clf_status st = clf__check_device(fleet, devices[i]);
        if (st != CLF_SUCCESS)
            return st;
        for (size_t j = 0; j < i; j++)
            if (devices[j] == devices[i])
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                                 "clf_taskq_create: device %zu listed twice", devices[i]);
    }
    clf_taskq *q = calloc(1, sizeof *q);
    if (!q)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
    q->fl = fleet;
    clf__fleet_ref(fleet);
    q->prog = prog;
    q->ndev = n;
    pthread_mutex_init(&q->lock, NULL);
    for (size_t i = 0; i < n; i++) {
        q->w[i].q = q;
        q->w[i].pos = i;
        q->w[i].d = &fleet->dev[devices ? devices[i] : i];
    }
    *out = q;
    return CLF_SUCCESS;
}

/*
 * The kernel that name's tasks are checked against (created once, on the first of the
 * queue's devices that has the program: kinds and sizes are the same on every device), and
 * that device. A kernel the program lacks is CLF_ERROR_NOT_FOUND.
 */
static clf_status check_kernel(clf_taskq *q, const char *name, cl_kernel *k,
                               struct clf__device **d)
{
    size_t w = 0;
    *k = NULL;
    while (w < q->ndev && !q->prog->built[q->w[w].d->index])
        w++;
    /* No device of the queue has the program: nothing to check the task against, and no
     * device to run it on, which clf_taskq_run() reports (CLF_ERROR_DEVICE_FAILED). */
    if (w == q->ndev)
        return CLF_SUCCESS;
    *d = q->w[w].d;
    for (size_t i = 0; i < q->nchecks; i++)
        if (!strcmp(q->checks[i].name, name)) {
            *k = q->checks[i].k;
            return CLF_SUCCESS;
        }
    tq_kernel *v = realloc(q->checks, (q->nchecks + 1) * sizeof *v);
    if (!v)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
    q->checks = v;
    clf_status st = clf__cmd_kernel_create(q->fl, (*d)->index, q->prog, name, NULL, 0, NULL, k);
    if (st != CLF_SUCCESS)
        return st;
    if (!(v[q->nchecks].name = strdup(name))) {
        clReleaseKernel(*k);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
    }
    v[q->nchecks++].k = *k;
    return CLF_SUCCESS;
}

static clf_status check_task(clf_taskq *q, const clf_task_desc *t, const clf_arg *args,
                             size_t nargs)
{
    if (clf__check_version(NULL, t->version, CLF_TASK_DESC_VERSION, "clf_task_desc",
                           "CLF_TASK_DESC_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    if (!t->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_taskq_submit: kernel is NULL");
    clf_status rst = clf__check_range("clf_taskq_submit", t->kernel, t->dims, t->global,
                                      t->local, NULL, NULL, NULL);
    if (rst != CLF_SUCCESS)
        return rst;
    if (t->affinity != CLF_TASK_ANY_DEVICE && t->affinity >= q->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "task '%s': affinity %zu, the queue has %zu "
                         "devices",
                         t->kernel, t->affinity, q->ndev);
    if (nargs > MAX_TASK_ARGS)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "task '%s': more than %d arguments", t->kernel,
                         MAX_TASK_ARGS);
    if (nargs && !args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "task '%s': args is NULL", t->kernel);
    for (size_t i = 0; i < nargs; i++) {
        const clf_arg *a = &args[i];
        if (a->flags & ~(unsigned)(CLF_ARG_CHUNK_INDEXED | CLF_ARG_WHOLE))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "task '%s' argument %zu: unknown flags 0x%x", t->kernel, i,
                             a->flags);
        switch (a->kind) {
        case CLF_ARG_KIND_IN:
        case CLF_ARG_KIND_OUT:
        case CLF_ARG_KIND_INOUT:
        case CLF_ARG_KIND_BROADCAST:
        case CLF_ARG_KIND_SCALAR:
            if (!a->host)
                return clf__fail(CLF_ERROR_NULL_POINTER, "task '%s' argument %zu: host is NULL",
                                 t->kernel, i);
            /* fall through */
        case CLF_ARG_KIND_LOCAL:
            if (a->size == 0)
                return clf__fail(CLF_ERROR_ZERO_SIZE, "task '%s' argument %zu: size is zero",
                                 t->kernel, i);
            break;
        case CLF_ARG_KIND_REDUCE:
            return clf__fail(CLF_ERROR_UNSUPPORTED,
                             "task '%s' argument %zu: reductions are for launches; give the "
                             "task an output array",
                             t->kernel, i);
        default:
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "task '%s' argument %zu: kind %u",
                             t->kernel, i, a->kind);
        }
    }
    /* The kernel, the arguments and the range (core/argcheck.c), at submission: a run
     * would set the arguments as given, and PoCL crashes on a value for a pointer. */
    cl_kernel k = NULL;
    struct clf__device *d = NULL;
    clf_status st = check_kernel(q, t->kernel, &k, &d);
    if (st != CLF_SUCCESS || !k)
        return st;
    st = clf__check_args("clf_taskq_submit", q->prog, t->kernel, k, d, 0, args, nargs, 0);
    if (st == CLF_SUCCESS)
        st = clf__check_range("clf_taskq_submit", t->kernel, t->dims, t->global, t->local, NULL,
                              d, k);
    return st;
}

clf_status clf_taskq_submit(clf_taskq *q, const clf_task_desc *t, const clf_arg *args, size_t nargs,
                            size_t *id)
{
    if (!q || !t)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_taskq_submit: %s is NULL",
                         q ? "task" : "queue");
    clf_status st = check_task(q, t, args, nargs);
    if (st != CLF_SUCCESS)
        return st;
    pthread_mutex_lock(&q->lock);
    int running = q->running;
    pthread_mutex_unlock(&q->lock);
    if (running)
        return clf__fail(CLF_ERROR_BUSY, "clf_taskq_submit: the queue is running");
    if (q->ntasks == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        task *v = realloc(q->tasks, cap * sizeof *v);
        if (!v)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
        q->tasks = v;
        q->cap = cap;
    }
    task *k = &q->tasks[q->ntasks];
    memset(k, 0, sizeof *k);
    size_t vbytes = 0;
    for (size_t i = 0; i < nargs; i++)
        if (args[i].kind == CLF_ARG_KIND_SCALAR && clf__add_overflow(vbytes, args[i].size, &vbytes))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "task: scalar sizes overflow");
    k->kernel = strdup(t->kernel);
    k->args = nargs ? malloc(nargs * sizeof *k->args) : NULL;
    k->vals = vbytes ? malloc(vbytes) : NULL;
    if (!k->kernel || (nargs && !k->args) || (vbytes && !k->vals)) {
        free(k->kernel);
        free(k->args);
        free(k->vals);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
    }
    k->dims = t->dims;
    memcpy(k->global, t->global, sizeof k->global);
    memcpy(k->local, t->local, sizeof k->local);
    k->affinity = t->affinity;
    k->items = 1;
    for (unsigned i = 0; i < t->dims; i++)
        k->items *= t->global[i]; /* clf__check_range() bounded the product */
    k->nargs = nargs;
    for (size_t i = 0, at = 0; i < nargs; i++) {
        k->args[i] = args[i];
        if (args[i].kind == CLF_ARG_KIND_SCALAR) {
            memcpy(k->vals + at, args[i].host, args[i].size);
            k->args[i].host = k->vals + at;
            at += args[i].size;
        }
    }
    k->info.device = SIZE_MAX;
    k->info.status = CLF_SUCCESS;
    if (id)
        *id = q->ntasks;
    q->ntasks++;
    return CLF_SUCCESS;
}

/* ---- running tasks ------------------------------------------------------------------- */

static clf_status get_kernel(tq_worker *w, const char *name, cl_kernel *out)
{
    for (size_t i = 0; i < w->nkernels; i++)
        if (!strcmp(w->kernels[i].name, name)) {
            *out = w->kernels[i].k;
            return CLF_SUCCESS;
        }
    tq_kernel *v = realloc(w->kernels, (w->nkernels + 1) * sizeof *v);
    if (!v)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
    w->kernels = v;
    clf_status bst = clf__program_check_device(w->q->prog, w->d->index);
    if (bst != CLF_SUCCESS)
        return bst;
    cl_kernel k;
    clf_status kst = clf__cmd_kernel_create(w->q->fl, w->d->index, w->q->prog, name, NULL, 0,
                                            NULL, &k);
    if (kst != CLF_SUCCESS)
        return kst;
    if (!(v[w->nkernels].name = strdup(name))) {
        clReleaseKernel(k);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory");
    }
    v[w->nkernels++].k = k;
    *out = k;
    return CLF_SUCCESS;
}

/* The argument position's device buffer, grown when the task needs more. */
static clf_status arg_buffer(tq_worker *w, size_t i, size_t size)
{
    if (w->mem[i] && w->cap[i] >= size)
        return CLF_SUCCESS;
    if (w->mem[i])
        clReleaseMemObject(w->mem[i]); /* the task that used it has completed */
    w->mem[i] = NULL;
    w->cap[i] = 0;
    if (size > w->d->info.max_alloc)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "task array of %zu bytes exceeds the maximum allocation of device %zu",
                         size, w->d->index);
    /* Not counted as device memory, as before the command path. */
    clf__cmd c = CLF__CMD(w->q->fl, w->d->index, NULL, "task");
    c.flags = CLF__CMD_NO_METRICS;
    clf_status st = clf__cmd_buffer(&c, CL_MEM_READ_WRITE, size, NULL, &w->mem[i]);
    if (st != CLF_SUCCESS)
        return st;
    w->cap[i] = size;
    return CLF_SUCCESS;
}

static clf_status run_task(tq_worker *w, task *t, double *kernel_s)
{
    struct clf__device *d = w->d;
    clf_fleet *fl = w->q->fl;
    cl_command_queue cq = d->compute;
    cl_kernel k = NULL;
    cl_event kev = NULL, last = NULL;
    clf_status st = get_kernel(w, t->kernel, &k);
    if (st != CLF_SUCCESS)
        return st;
    /* clf_taskq_submit() checked the arguments against the kernel (argcheck.c). */
    cl_int err = CL_SUCCESS;
    size_t failed = 0;
    if ((st = clf__program_set_range(w->q->prog, t->kernel, k, t->global, t->dims, d)) !=
        CLF_SUCCESS)
        return st;
    for (size_t i = 0; i < t->nargs && err == CL_SUCCESS; i++) {
        const clf_arg *a = &t->args[i];
        failed = i;
        if (a->kind == CLF_ARG_KIND_SCALAR) {
            err = clSetKernelArg(k, (cl_uint)i, a->size, a->host);
        } else if (a->kind == CLF_ARG_KIND_LOCAL) {
            err = clSetKernelArg(k, (cl_uint)i, a->size, NULL);
        } else {
            if ((st = arg_buffer(w, i, a->size)) != CLF_SUCCESS)
                return st;
            /* The commands so far are queued in order before it: the task waits for them
             * below whatever happens. */
            if (a->kind != CLF_ARG_KIND_OUT &&
                (st = clf__cmd_write(&CLF__CMD(fl, d->index, cq, "task input"), w->mem[i], 0,
                                     a->size, a->host)) != CLF_SUCCESS)
                break;
            err = clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &w->mem[i]);
        }
    }
    if (st == CLF_SUCCESS && err != CL_SUCCESS)
        st = clf__arg_set_fail("clf_taskq_run", t->kernel, k, failed, failed, err, d);
    if (st == CLF_SUCCESS) {
        clf__cmd c = CLF__CMD(fl, d->index, cq, t->kernel);
        c.ev = &kev;
        st = clf__cmd_kernel(&c, k, t->dims, NULL, t->global, t->local[0] ? t->local : NULL);
    }
    for (size_t i = 0; i < t->nargs && st == CLF_SUCCESS; i++) {
        const clf_arg *a = &t->args[i];
        if (a->kind != CLF_ARG_KIND_OUT && a->kind != CLF_ARG_KIND_INOUT)
            continue;
        cl_event rev = NULL;
        clf__cmd c = CLF__CMD(fl, d->index, cq, "task output");
        c.ev = &rev;
        st = clf__cmd_read(&c, w->mem[i], 0, a->size, a->host);
        if (rev) {
            if (last)
                clReleaseEvent(last);
            last = rev;
        }
    }
    /* In order: the last command done means the task is done (and after a failure, every
     * command queued before it has finished with the buffers and the host arrays). */
    if (!kev && !last) {
        clFinish(cq);
        return st;
    }
    clf_event e = {.ev = last ? last : kev};
    clf_status wst = clf_event_wait(&e);
    if (st == CLF_SUCCESS)
        st = wst;
    /* Through clf__event_profile(): a simulated device's kernel takes its simulated time. */
    uint64_t t0 = 0, t1 = 0;
    if (clf__event_profile(kev, &t0, &t1) && t1 > t0)
        *kernel_s = (double)(t1 - t0) * 1e-9;
    clReleaseEvent(kev);
    if (last)
        clReleaseEvent(last);
    return st;
}

/* Tasks that no running worker took. */
static int tasks_left(clf_taskq *q)
{
    int left = 0;
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < q->ndev; i++)
        left |= q->dq[i].head < q->dq[i].tail;
    pthread_mutex_unlock(&q->lock);
    return left;
}

static void *worker_main(void *arg)
{
    tq_worker *w = arg;
    clf_taskq *q = w->q;
    size_t id;
    int stolen;
    while (clf__tq_take(q, w, &id, &stolen)) {
        task *t = &q->tasks[id];
        double ks = 0;
        t->info.device = w->d->index;
        t->info.stolen = stolen;
        t->info.start_s = clf__tq_since(q);
        clf_clear_error();
        clf_status st = run_task(w, t, &ks);
        t->info.end_s = clf__tq_since(q);
        t->info.kernel_s = ks;
        t->info.status = st;
        w->rep.tasks++;
        w->rep.stolen += (uint64_t)stolen;
        w->rep.busy_s += ks;
        /* The device failed (lost, or refused as failed): the task goes to the other
         * devices, and this worker takes no more. */
        if (st != CLF_SUCCESS && clf__device_failed(q->fl, w->d->index, NULL, 0)) {
            clf__log(CLF_LOG_WARN, "task %zu ('%s'): device %zu failed, the task moves to "
                     "another device: %s", id, t->kernel, w->d->index, clf_last_error());
            clf__tq_give_back(q, w, id);
            break;
        }
        if (st != CLF_SUCCESS) {
            pthread_mutex_lock(&q->lock);
            if (q->first == CLF_SUCCESS) {
                q->first = st;
                snprintf(q->err, sizeof q->err, "task %zu ('%s') on device %zu: %s", id, t->kernel,
                         w->d->index, clf_last_error());
            }
            pthread_mutex_unlock(&q->lock);
        }
    }
    w->rep.finish_s = clf__tq_since(q);
    return NULL;
}

clf_status clf_taskq_run(clf_taskq *q, clf_taskq_report *report)
{
    if (!q)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_taskq_run: queue is NULL");
    pthread_mutex_lock(&q->lock);
    int busy = q->running;
    q->running = 1;
    pthread_mutex_unlock(&q->lock);
    if (busy)
        return clf__fail(CLF_ERROR_BUSY, "clf_taskq_run: the queue is running already");
    clf_status st = CLF_SUCCESS;
    size_t n = q->ntasks - q->pending, started = 0;
    clf__perf_model *m = n ? clf__fleet_perf(q->fl) : NULL;
    for (size_t i = 0; i < q->ndev; i++) {
        free(q->dq[i].v);
        q->dq[i].head = q->dq[i].tail = q->dq[i].unknown = 0;
        q->dq[i].pred_sum = 0;
        if (!(q->dq[i].v = malloc((n ? n : 1) * sizeof *q->dq[i].v)))
            CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "task queue: out of memory"));
        memset(&q->w[i].rep, 0, sizeof q->w[i].rep);
        q->w[i].rep.device = q->w[i].d->index;
        q->w[i].active = q->w[i].busy = 0;
        clf__perf_device_key(q->fl, q->w[i].d->index, q->w[i].dkey, sizeof q->w[i].dkey);
    }
    /* A device that failed in a launch (until clf_device_readmit()), or that the program
     * did not build for, takes no task: the others steal its deque. */
    size_t usable = 0, first_usable = 0;
    for (size_t i = q->ndev; i-- > 0;) {
        size_t d = q->w[i].d->index;
        if (!clf__device_failed(q->fl, d, NULL, 0) && q->prog->built[d])
            usable |= (size_t)1 << i, first_usable = i;
    }
    clf__tq_predict(q, m, q->pending, n);
    clf__tq_probe_begin(q, m, q->pending, n);
    clf__tq_deal(q, q->pending, n, usable);
    q->first = CLF_SUCCESS;
    q->t0 = clf__mono_ns();
    /* The tasks stay queued for a later run, and say why they did not run. */
    for (size_t id = q->pending; !usable && id < q->ntasks; id++)
        q->tasks[id].info.status = CLF_ERROR_DEVICE_FAILED;
    if (!usable) {
        char why[160];
        size_t d0 = q->w[0].d->index;
        if (!clf__device_failed(q->fl, d0, why, sizeof why))
            snprintf(why, sizeof why, "the program did not build for it");
        CLF__TRY(st, clf__fail(CLF_ERROR_DEVICE_FAILED,
                               "clf_taskq_run: every device of the queue failed "
                               "(clf_device_readmit()) or lacks the program "
                               "(clf_program_device_ok()); device %zu '%s': %s",
                               d0, q->w[0].d->info.name, why));
    }
    /* Each device's worker runs on the fleet's thread for that device, the executor's
     * (exec/fleetstate.c: no thread per run), the first usable one on this thread. A worker
     * never waits for another, so a device thread still busy with a launch of another caller
     * only delays this one. A device whose thread did not start leaves its deque to the
     * thieves. */
    /* Every usable worker counts as active before any starts: the gate then waits for a
     * device whose thread has not begun yet, rather than stealing its deal. */
    for (size_t i = 0; i < q->ndev; i++)
        if (usable & (size_t)1 << i)
            clf__tq_set_active(q, &q->w[i], 1);
    for (size_t i = first_usable + 1; i < q->ndev; i++) {
        if (!(usable & (size_t)1 << i))
            continue;
        if (clf__devthread_run(q->fl, q->w[i].d->index, worker_main, &q->w[i]) == 0)
            started |= (size_t)1 << i;
        else
            clf__tq_set_active(q, &q->w[i], 0);
    }
    worker_main(&q->w[first_usable]);
    for (size_t i = 0; i < q->ndev; i++)
        if (started & (size_t)1 << i)
            clf__devthread_wait(q->fl, q->w[i].d->index);
    /* A device failed while the others had finished (or left tasks to a device that then
     * failed, or whose thread did not start): a device still working runs what is left,
     * here, alone (the gate waits for no one); with none left, the tasks fail and say why. */
    for (size_t i = 0; i < q->ndev && tasks_left(q); i++)
        if ((usable & (size_t)1 << i) && !clf__device_failed(q->fl, q->w[i].d->index, NULL, 0)) {
            clf__tq_set_active(q, &q->w[i], 1);
            worker_main(&q->w[i]);
        }
    clf__tq_learn(q, m, q->ntasks - n, n);
    clf__tq_probe_end(q, m, q->ntasks - n, n);
    for (size_t i = 0; i < q->ndev; i++)
        for (size_t k = q->dq[i].head; k < q->dq[i].tail; k++) {
            q->tasks[q->dq[i].v[k]].info.status = CLF_ERROR_DEVICE_FAILED;
            if (q->first == CLF_SUCCESS) {
                q->first = CLF_ERROR_DEVICE_FAILED;
                snprintf(q->err, sizeof q->err, "task %zu ('%s'): every device of the queue "
                         "failed (clf_device_readmit())", q->dq[i].v[k],
                         q->tasks[q->dq[i].v[k]].kernel);
            }
        }
    q->pending = q->ntasks;
    if (report) {
        memset(report, 0, sizeof *report);
        report->tasks = n;
        report->num_devices = q->ndev;
        double lo = -1, hi = 0;
        for (size_t i = 0; i < q->ndev; i++) {
            report->dev[i] = q->w[i].rep;
            if (q->w[i].rep.tasks) {
                double f = q->w[i].rep.finish_s;
                lo = lo < 0 || f < lo ? f : lo;
                hi = f > hi ? f : hi;
            }
        }
        for (size_t id = q->ntasks - n; id < q->ntasks; id++)
            report->failed += q->tasks[id].info.status != CLF_SUCCESS;
        report->makespan_s = hi;
        report->efficiency = hi > 0 ? lo / hi : 1.0;
    }
    if (q->first != CLF_SUCCESS)
        st = clf__fail(q->first, "%s", q->err);
out:
    pthread_mutex_lock(&q->lock);
    q->running = 0;
    pthread_mutex_unlock(&q->lock);
    return st;
}

clf_status clf_taskq_task_info(clf_task_info *out, const clf_taskq *q, size_t id)
{
    if (!q || !out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_taskq_task_info: NULL argument");
    if (id >= q->ntasks)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_taskq_task_info: task %zu of %zu", id,
                         q->ntasks);
    *out = q->tasks[id].info;
    return CLF_SUCCESS;
}

void clf_taskq_destroy(clf_taskq *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->ndev; i++) {
        tq_worker *w = &q->w[i];
        for (size_t k = 0; k < w->nkernels; k++) {
            clReleaseKernel(w->kernels[k].k);
            free(w->kernels[k].name);
        }
        free(w->kernels);
        for (size_t a = 0; a < MAX_TASK_ARGS; a++)
            if (w->mem[a])
                clReleaseMemObject(w->mem[a]);
        free(q->dq[i].v);
    }
    for (size_t i = 0; i < q->nchecks; i++) {
        clReleaseKernel(q->checks[i].k);
        free(q->checks[i].name);
    }
    free(q->checks);
    for (size_t i = 0; i < q->ntasks; i++) {
        free(q->tasks[i].kernel);
        free(q->tasks[i].args);
        free(q->tasks[i].vals);
    }
    free(q->tasks);
    free(q->pred);
    free(q->kin);
    pthread_mutex_destroy(&q->lock);
    clf_fleet *fl = q->fl;
    free(q);
    clf__fleet_unref(fl); /* last: it may tear the fleet down */
}

/*
 * Where each task of a task queue goes (taskq.c runs them): the deal at the run's start,
 * the steal gate when a worker takes one, and what the run teaches the cost model.
 *
 * The steal gate: a device takes a task only when it would finish it sooner than
 * the device it would otherwise go to, by the cost model (lib/plan/perfmodel.h,
 * each task's host time learned under its own key per (kernel, device), in work
 * items): a thief's now + its time for the task against the owner's predicted
 * finish (its running task, then its queued ones, the stolen one last); a
 * worker's own head (unless the task's affinity is this device) against every
 * other active device's finish were it to add the task to its queue. A GPU's
 * task then never goes to a CPU 50x slower that would finish it last. What the
 * model does not know is taken as before (so that it learns), a device that
 * stopped working (finished, failed, never started) is no owner to wait for,
 * and the last active worker takes whatever is left: every task runs. A device the gate
 * keeps from a kernel for some runs or tasks in a row gets one task as a probe
 * (clf__tq_probe_pick(), taskprobe.c), so that a stale figure cannot keep it out for good.
 */
#include "taskq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the steal gate ------------------------------------------------------------------ */

/* Predicted seconds of task id on queue device i; negative: unknown. */
static double pred_of(const clf_taskq *q, size_t id, size_t i)
{
    return q->pred ? q->pred[(id - q->base) * q->ndev + i] : -1;
}

double clf__tq_pred(const clf_taskq *q, size_t id, size_t i)
{
    return pred_of(q, id, i);
}

/* Account for task id joining deque i (its slot already filled): dq_forget()'s converse. */
static void dq_count(clf_taskq *q, size_t i, size_t id)
{
    deque *d = &q->dq[i];
    double p = pred_of(q, id, i);
    if (p >= 0)
        d->pred_sum += p;
    else
        d->unknown++;
}

static void dq_push_tail(clf_taskq *q, size_t i, size_t id)
{
    deque *d = &q->dq[i];
    d->v[d->tail++] = id;
    dq_count(q, i, id);
}

/* At the head, where the owner takes next; only when a slot there is free (head > 0). */
static void dq_push_head(clf_taskq *q, size_t i, size_t id)
{
    deque *d = &q->dq[i];
    d->v[--d->head] = id;
    dq_count(q, i, id);
}

/* Account for task id leaving deque i (its slot already taken). */
static void dq_forget(clf_taskq *q, size_t i, size_t id)
{
    deque *d = &q->dq[i];
    double p = pred_of(q, id, i);
    if (p >= 0)
        d->pred_sum = d->head < d->tail ? d->pred_sum - p : 0; /* no drift past empty */
    else
        d->unknown--;
}

/* When worker i is free to start a queued task (now when idle), or negative when unknown. */
static double ready_at(const clf_taskq *q, size_t i, double now)
{
    const tq_worker *o = &q->w[i];
    if (!o->busy)
        return now;
    if (o->busy_until < 0)
        return -1;
    if (now <= o->busy_until)
        return o->busy_until;
    /* Past its prediction (a task longer than its kernel's usual, or a stall): guess it as
     * far from its end as from its start, rather than ending now, so that a thief does not
     * leave the tasks queued behind a long one waiting for it. */
    return now + (now - o->busy_start);
}

/*
 * When worker i would finish task id were it added behind its queue: its ready time, its
 * deque's predicted seconds, then the task's (extra: the task is not in its deque). Negative
 * when any of it is unknown; HUGE_VAL for a worker that takes no more tasks (nobody waits
 * for it: its tasks go to whoever is free).
 */
static double finish_of(const clf_taskq *q, size_t i, size_t id, int in_deque, double now)
{
    const deque *d = &q->dq[i];
    if (!q->w[i].active)
        return HUGE_VAL;
    double r = ready_at(q, i, now), p = pred_of(q, id, i);
    if (r < 0 || d->unknown || p < 0)
        return -1;
    return r + d->pred_sum + (in_deque ? 0 : p);
}

/*
 * Whether worker w should leave the head of its own deque, task id, to another active
 * device predicted to finish it sooner than w would (now + its time), after that device's
 * own queue. Known predictions only: what the model does not know is taken.
 */
static int leave_own(const clf_taskq *q, const tq_worker *w, size_t id, double now)
{
    double mine = pred_of(q, id, w->pos);
    if (mine < 0)
        return 0;
    for (size_t j = 0; j < q->ndev; j++) {
        if (j == w->pos || !q->w[j].active)
            continue;
        double f = finish_of(q, j, id, 0, now);
        if (f >= 0 && f < now + mine)
            return 1;
    }
    return 0;
}

/* Whether thief w may take task id, the tail of owner's deque: it would finish it no later
 * than the owner (which would run it last; a tie steals, as before the gate), or either side
 * is not known. */
static int may_steal(const clf_taskq *q, const tq_worker *w, size_t owner, size_t id,
                     double now)
{
    double mine = pred_of(q, id, w->pos), theirs = finish_of(q, owner, id, 1, now);
    return mine < 0 || theirs < 0 || now + mine <= theirs;
}

/* Worker w starts task id (under the lock): busy until its predicted end. */
static void start_task(clf_taskq *q, tq_worker *w, size_t id, double now)
{
    double p = pred_of(q, id, w->pos);
    w->busy = 1;
    w->busy_start = now;
    w->busy_until = p >= 0 ? now + p : -1;
    q->tasks[id].info.runs++;
}

/*
 * The next task for worker w: the head of its deque, else the tail of the fullest other
 * that the gate lets it steal. 0 when it takes none: it then stops (inactive), so that the
 * others no longer wait for it, and the tasks it passed up count in its report.
 */
int clf__tq_take(clf_taskq *q, tq_worker *w, size_t *id, int *stolen)
{
    int found = 0;
    uint64_t passed = 0;
    pthread_mutex_lock(&q->lock);
    double now = clf__tq_since(q);
    w->busy = 0;
    deque *own = &q->dq[w->pos];
    if (own->head < own->tail) {
        /* A task given this device by its affinity stays with it (thieves may still take
         * it, by the gate). */
        size_t head = own->v[own->head];
        if (q->tasks[head].affinity != w->pos && leave_own(q, w, head, now)) {
            passed = own->tail - own->head;
        } else {
            *id = own->v[own->head++];
            dq_forget(q, w->pos, *id);
            *stolen = 0;
            found = 1;
        }
    } else {
        size_t best = SIZE_MAX, most = 0;
        for (size_t i = 0; i < q->ndev; i++) {
            size_t left = q->dq[i].tail - q->dq[i].head;
            if (i == w->pos || !left)
                continue;
            if (!may_steal(q, w, i, q->dq[i].v[q->dq[i].tail - 1], now)) {
                passed++;
                continue;
            }
            if (left > most) {
                most = left;
                best = i;
            }
        }
        if (best != SIZE_MAX) {
            *id = q->dq[best].v[--q->dq[best].tail];
            dq_forget(q, best, *id);
            *stolen = 1;
            found = 1;
            passed = 0;
        }
    }
    /* Kept from every task left: a probe, if one is due (taskprobe.c says when). */
    int probe = 0;
    if (!found && passed && clf__tq_probe_pick(q, w, now, id)) {
        probe = found = 1;
        *stolen = 1;
        passed = 0;
        w->rep.probed++;
    }
    if (found) {
        start_task(q, w, *id, now);
    } else {
        w->active = 0;
        w->rep.passed += passed;
    }
    pthread_mutex_unlock(&q->lock);
    if (probe)
        clf__log(CLF_LOG_INFO,
                 "task queue: device %zu probed with task %zu ('%s'): the steal gate kept it "
                 "from the kernel's tasks, by a figure that may be stale",
                 w->d->index, *id, q->tasks[*id].kernel);
    if (passed)
        clf__log(CLF_LOG_DEBUG,
                 "task queue: device %zu stops, leaving %llu task%s to devices predicted to "
                 "finish %s sooner (too slow to help)",
                 w->d->index, (unsigned long long)passed, passed > 1 ? "s" : "",
                 passed > 1 ? "them" : "it");
    return found;
}

/*
 * The gate's probe (see taskprobe.c for when one is due): worker w stops now because the
 * gate keeps it from every task left. Count, per kernel, the tasks left that it is kept
 * from (in each deque it tested, those of the refused task's kernel); then, when its own
 * deque is empty (else the tasks it leaves go to the others and the makespan below would
 * not count them), for the kernels whose probe is due, take the task of the least
 * predicted seconds on w among those queued on the other devices, if by the model it ends
 * no later than the run's predicted makespan without it:
 *     now + pred(task, w) <= max over the other active devices j of
 *                            (ready_at(j) + the predicted seconds of j's deque),
 * every figure known (else no probe). Taking the task out of its deque only brings its
 * owner's finish forward, so by the model the run ends no later than without the probe: a
 * device truly as slow as its figure costs the run nothing, and one too slow for any task
 * to fit is not probed (a longer run may fit one). One probe per kernel and device a run.
 */
int clf__tq_probe_pick(clf_taskq *q, tq_worker *w, double now, size_t *id)
{
    size_t me = w->pos;
    if (!q->kin || !q->pred)
        return 0;
    for (size_t k = 0; k < q->nkin; k++)
        q->kin[k].left = 0;
    /* Per deque the gate tested (its own, at the head, when it holds tasks; else the
     * others' tails), the tasks of the refused task's kernel: another kernel's task there
     * was never tested. */
    int own = q->dq[me].head < q->dq[me].tail;
    for (size_t j = 0; j < q->ndev; j++) {
        const deque *d = &q->dq[j];
        if (d->head == d->tail || (j == me) != own)
            continue;
        size_t refused = q->tasks[d->v[own ? d->head : d->tail - 1]].kin;
        for (size_t s = d->head; s < d->tail; s++)
            q->kin[refused].left += q->tasks[d->v[s]].kin == refused;
    }
    for (size_t k = 0; k < q->nkin; k++)
        if (q->kin[k].left > q->kin[k].kept[me])
            q->kin[k].kept[me] = q->kin[k].left; /* a later stop sees a subset */
    if (own)
        return 0;
    double makespan = -1;
    for (size_t j = 0; j < q->ndev; j++) {
        if (j == me || !q->w[j].active)
            continue;
        double r = ready_at(q, j, now);
        if (r < 0 || q->dq[j].unknown)
            return 0;
        if (r + q->dq[j].pred_sum > makespan)
            makespan = r + q->dq[j].pred_sum;
    }
    size_t best_j = SIZE_MAX, best_s = 0;
    double best = HUGE_VAL;
    for (size_t j = 0; j < q->ndev && makespan >= 0; j++) {
        if (j == me)
            continue;
        for (size_t s = q->dq[j].head; s < q->dq[j].tail; s++) {
            size_t t = q->dq[j].v[s];
            const tq_kin *k = &q->kin[q->tasks[t].kin];
            if (k->probe_id[me] != SIZE_MAX ||
                (k->out_runs[me] < k->every[me] && k->kept[me] < k->every[me]))
                continue;
            double p = pred_of(q, t, me);
            if (p >= 0 && p < best) {
                best = p;
                best_j = j;
                best_s = s;
            }
        }
    }
    if (best_j == SIZE_MAX || now + best > makespan)
        return 0;
    deque *d = &q->dq[best_j];
    *id = d->v[best_s];
    memmove(&d->v[best_s], &d->v[best_s + 1], (d->tail - best_s - 1) * sizeof *d->v);
    d->tail--;
    dq_forget(q, best_j, *id);
    q->tasks[*id].probe = 1;
    q->kin[q->tasks[*id].kin].probe_id[me] = *id;
    return 1;
}

/* Give task id back to worker w's deque, for the others to steal (its device failed); w
 * takes no more. */
void clf__tq_give_back(clf_taskq *q, tq_worker *w, size_t id)
{
    pthread_mutex_lock(&q->lock);
    deque *own = &q->dq[w->pos];
    /* The deque holds at most the run's tasks, and this one is not among them. */
    if (own->head > 0)
        dq_push_head(q, w->pos, id);
    else
        dq_push_tail(q, w->pos, id);
    w->active = 0;
    w->busy = 0;
    pthread_mutex_unlock(&q->lock);
}

void clf__tq_set_active(clf_taskq *q, tq_worker *w, int on)
{
    pthread_mutex_lock(&q->lock);
    w->active = on;
    w->busy = 0;
    pthread_mutex_unlock(&q->lock);
}

/* A task kernel's key in the cost model: its own, as a whole task's units are its work
 * items (a launch's are split units, and it learns per launch, not per task). */
static void task_key(const clf_taskq *q, const task *t, char *buf, size_t n)
{
    snprintf(buf, n, "task:%s@%.16s", t->kernel, q->prog->hash);
}

/*
 * The run's predictions (q->pred) for tasks [base, base + n): each task's predicted host
 * seconds on each device, from the model's fit of (kernel, device). Tasks alike to the one
 * before (the common case: many tasks of one kernel and size) reuse its row. Without memory
 * or a model, q->pred stays NULL: every prediction is unknown, the gate open, as before.
 */
void clf__tq_predict(clf_taskq *q, clf__perf_model *m, size_t base, size_t n)
{
    free(q->pred);
    q->pred = NULL;
    q->base = base;
    size_t cells;
    if (!m || !n || clf__mul_overflow(n, q->ndev, &cells) ||
        !(q->pred = malloc(cells * sizeof *q->pred)))
        return;
    char key[320];
    for (size_t k = 0; k < n; k++) {
        const task *t = &q->tasks[base + k], *prev = k ? t - 1 : NULL;
        double *row = &q->pred[k * q->ndev];
        if (prev && prev->items == t->items && !strcmp(prev->kernel, t->kernel)) {
            memcpy(row, row - q->ndev, q->ndev * sizeof *row);
            continue;
        }
        task_key(q, t, key, sizeof key);
        for (size_t i = 0; i < q->ndev; i++) {
            clf__perf_fit f;
            double p = clf__perf_get(m, key, q->w[i].dkey, &f) ? clf__perf_predict(&f, t->items)
                                                               : -1;
            row[i] = p >= 0 && isfinite(p) ? p : -1;
        }
    }
}

/*
 * Deal tasks [base, base + n) to the deques: a task with an affinity to its device; else,
 * when the model predicts it on every usable device, to the one that would finish it first
 * after what it was dealt so far (list scheduling: a device 50x slower is dealt nothing it
 * would finish last), else round robin over every device, as before the model knew it.
 */
void clf__tq_deal(clf_taskq *q, size_t base, size_t n, size_t usable)
{
    double ready[CLF_MAX_LAUNCH_DEVICES] = {0};
    size_t rr = 0;
    for (size_t id = base; id < base + n; id++) {
        size_t to = q->tasks[id].affinity;
        if (to == CLF_TASK_ANY_DEVICE) {
            double best = HUGE_VAL;
            for (size_t i = 0; i < q->ndev && usable; i++) {
                if (!(usable & (size_t)1 << i))
                    continue;
                double p = pred_of(q, id, i);
                if (p < 0) {
                    to = CLF_TASK_ANY_DEVICE;
                    break;
                }
                if (ready[i] + p < best) {
                    best = ready[i] + p;
                    to = i;
                }
            }
            if (to == CLF_TASK_ANY_DEVICE)
                to = rr++ % q->ndev;
        }
        double p = pred_of(q, id, to);
        if (p > 0)
            ready[to] += p;
        dq_push_tail(q, to, id);
    }
}

/* What the run taught the model: each task's host time (inputs, kernel, outputs) on the
 * device that ran it, as a launch-level sample and as a chunk for the line (tasks of other
 * sizes give the fixed cost). The model drops the first sample of each key (cold). */
void clf__tq_learn(clf_taskq *q, clf__perf_model *m, size_t base, size_t n)
{
    if (!m)
        return;
    char key[320];
    for (size_t id = base; id < base + n; id++) {
        const task *t = &q->tasks[id];
        double s = t->info.end_s - t->info.start_s;
        if (t->info.status != CLF_SUCCESS || !(s > 0) || t->info.device == SIZE_MAX)
            continue;
        const tq_worker *w = NULL;
        for (size_t i = 0; i < q->ndev && !w; i++)
            if (q->w[i].d->index == t->info.device)
                w = &q->w[i];
        if (!w)
            continue;
        task_key(q, t, key, sizeof key);
        clf__perf_chunk c = {.units = t->items, .seconds = s, .kernel_s = t->info.kernel_s};
        /* Best effort: learning is an optimisation. */
        clf__perf_record(m, key, w->dkey, t->items, s);
        clf__perf_record_chunks(m, key, w->dkey, &c, 1);
    }
}

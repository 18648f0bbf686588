/*
 * The steal gate's probes (issue 27): a device the gate keeps from a kernel's tasks
 * (tasksched.c: it would finish them later than the device they would otherwise go to, by
 * the cost model) gets no new samples of that kernel, so one bad figure kept in the model's
 * file (a run while the device was busy with another process) would keep it out for good.
 * Launches close the same hole with probe chunks (lib/exec/probe.c); a task cannot be cut,
 * so the gate gives a whole task instead:
 *
 * - Due: when the gate has kept the device from the kernel's tasks in `every` runs in a row
 *   (out_runs: a run counts when the device stopped, refused a task of the kernel, and
 *   ran none of them), or from `every` of its tasks in one run (those of the kernel left in
 *   the deques where the gate refused it one: clf__tq_probe_pick(); a task of another
 *   kernel there was never tested). `every` starts at CLF__TQ_PROBE_AFTER (4: a run in
 *   which a loaded host starts a device's thread late is no verdict, and half of the
 *   model's window of 8 samples, as for launches).
 * - The probe (clf__tq_probe_pick(), tasksched.c): when the device stops, its own deque
 *   empty, it takes the task of a due kernel queued on another device with the least
 *   predicted seconds on it, only when by the model it ends no later than the others'
 *   predicted finish of what they hold (the run's predicted makespan without the probe).
 *   So a device as slow as the model says costs the run nothing by the model; one too slow
 *   for any task to fit is simply not probed. Its time is learned as any task's.
 * - The verdict (clf__tq_probe_end()): a probe whose host time was CLF__TQ_PROBE_WRONG (4)
 *   times under the least time the model's figures give it (optimistic()) shows the
 *   samples stale (load only slows a device): the
 *   model forgets the device's samples of the kernel, the probe's included (a small task's
 *   one figure is mostly fixed cost and would keep the device out again), so the next run
 *   has no figure for it: the deal gives it tasks round robin and the gate lets it take them
 *   (unknown is taken, to learn), and it is measured on real tasks. A probe that confirms
 *   the figure doubles the wait, up to CLF__TQ_PROBE_MAX_EVERY (1024), so that a truly slow
 *   device costs a task every few runs at first, then rarely. A device that runs a task of
 *   the kernel by the gate's leave starts afresh. A device's first probe of a kernel (in the
 *   fleet) can find the figure stale, never confirm it: it may be the device's first run of
 *   the task's size, and pay the driver's one-off costs (below); it is due again.
 *
 * Where the state lives: the fleet (a state of this layer on it, core's clf__fleet_state()),
 * keyed by the kernel's model key and the fleet's device index, as probe.c keeps its ring in
 * the fleet's exec state. Not the queue: a queue is often made for one run and destroyed
 * (tests/test_simulate.c's spin_tasks() does), and runs in a row on one fleet are what the
 * wait counts; nor the model's file, whose figures are what is in doubt. A process thus runs
 * a kernel's tasks some runs (or one run of many tasks) before it probes.
 */
#include "taskq.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLF__TQ_PROBE_AFTER 4
#define CLF__TQ_PROBE_MAX_EVERY 1024
#define CLF__TQ_PROBE_WRONG 4.0
#define CLF__TQ_PROBE_KERNELS 32

typedef struct tq_probe_entry {
    char key[320];
    unsigned out_runs[CLF_MAX_LAUNCH_DEVICES], every[CLF_MAX_LAUNCH_DEVICES];
    unsigned char judged[CLF_MAX_LAUNCH_DEVICES]; /* a probe's verdict drawn here */
} tq_probe_entry;

/* The fleet's: a ring of the latest kernels (the oldest's place is taken). */
typedef struct tq_probe_state {
    pthread_mutex_t lock;
    tq_probe_entry e[CLF__TQ_PROBE_KERNELS];
    size_t n;
} tq_probe_state;

static void *probe_state_create(clf_fleet *fl)
{
    (void)fl;
    tq_probe_state *s = calloc(1, sizeof *s);
    if (s)
        pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void probe_state_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    tq_probe_state *s = state;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const clf__state_key probe_key = {"task queue probes", CLF__STATE_AFTER_XFER,
                                         probe_state_create, probe_state_fini};

/* The kernel's entry (under s->lock), made when asked, or NULL. */
static tq_probe_entry *entry_of(tq_probe_state *s, const char *key, int create)
{
    size_t n = s->n < CLF__TQ_PROBE_KERNELS ? s->n : CLF__TQ_PROBE_KERNELS;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s->e[i].key, key))
            return &s->e[i];
    if (!create)
        return NULL;
    tq_probe_entry *e = &s->e[s->n++ % CLF__TQ_PROBE_KERNELS];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    return e;
}

/* Whether queue device i has a place in the fleet's state (a fleet index below the bound). */
static int tracked(const clf_taskq *q, size_t i)
{
    return q->w[i].d->index < CLF_MAX_LAUNCH_DEVICES;
}

void clf__tq_probe_begin(clf_taskq *q, clf__perf_model *m, size_t base, size_t n)
{
    free(q->kin);
    q->kin = NULL;
    q->nkin = 0;
    for (size_t id = base; id < base + n; id++) {
        q->tasks[id].probe = 0;
        q->tasks[id].kin = 0;
    }
    /* Without predictions the gate keeps no one out: nothing to probe. */
    if (!q->pred || q->ndev < 2)
        return;
    size_t cap = 0;
    for (size_t id = base; id < base + n; id++) {
        task *t = &q->tasks[id];
        size_t k = q->nkin;
        if (id > base && !strcmp(t[-1].kernel, t->kernel))
            k = t[-1].kin;
        for (size_t j = 0; j < q->nkin && k == q->nkin; j++)
            if (!strcmp(q->kin[j].name, t->kernel))
                k = j;
        if (k == q->nkin) {
            if (q->nkin == cap) {
                size_t nc = cap ? 2 * cap : 4;
                tq_kin *v = realloc(q->kin, nc * sizeof *v);
                if (!v) { /* best effort: no probes this run */
                    free(q->kin);
                    q->kin = NULL;
                    q->nkin = 0;
                    return;
                }
                q->kin = v;
                cap = nc;
            }
            tq_kin *e = &q->kin[q->nkin++];
            memset(e, 0, sizeof *e);
            e->name = t->kernel;
            snprintf(e->key, sizeof e->key, "task:%s@%.16s", t->kernel, q->prog->hash);
            for (size_t i = 0; i < q->ndev; i++) {
                e->probe_id[i] = SIZE_MAX;
                e->every[i] = CLF__TQ_PROBE_AFTER;
            }
        }
        t->kin = k;
    }
    for (size_t k = 0; m && k < q->nkin; k++)
        for (size_t i = 0; i < q->ndev; i++)
            if (!clf__perf_get(m, q->kin[k].key, q->w[i].dkey, &q->kin[k].fit[i]))
                memset(&q->kin[k].fit[i], 0, sizeof q->kin[k].fit[i]);
    tq_probe_state *s = clf__fleet_state(q->fl, &probe_key);
    if (!s)
        return; /* out of memory: no past runs known, only this run's tasks count */
    pthread_mutex_lock(&s->lock);
    for (size_t k = 0; k < q->nkin; k++) {
        const tq_probe_entry *e = entry_of(s, q->kin[k].key, 0);
        for (size_t i = 0; e && i < q->ndev; i++) {
            if (!tracked(q, i))
                continue;
            size_t d = q->w[i].d->index;
            q->kin[k].out_runs[i] = e->out_runs[d];
            if (e->every[d])
                q->kin[k].every[i] = e->every[d];
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/*
 * What a probe of `items` is judged against: the least seconds the model's figures of the
 * device give it, its line (fixed + items / rate) or its tasks' median speed (items /
 * units_per_s), at the run's start (the probe's own sample learned since). A small task's
 * line is an extrapolation: a 50x slower device's, fitted through a few big tasks, once
 * predicted 54 ms for a task of 1 item that took 4 ms, and the "stale" verdict then opened
 * the gate to it, which cost a run a whole 50x slower task. pred: the gate's prediction,
 * for when the fit is gone.
 */
static double optimistic(const clf__perf_fit *f, uint64_t items, double pred)
{
    double best = pred;
    if (f->rate > 0 && f->fixed_s >= 0) {
        double p = clf__perf_predict(f, items);
        if (p >= 0 && (best < 0 || p < best))
            best = p;
    }
    if (f->units_per_s > 0) {
        double p = (double)items / f->units_per_s;
        if (best < 0 || p < best)
            best = p;
    }
    return best;
}

void clf__tq_probe_end(clf_taskq *q, clf__perf_model *m, size_t base, size_t n)
{
    if (!q->kin)
        return;
    tq_probe_state *s = clf__fleet_state(q->fl, &probe_key);
    if (!s)
        return;
    /* Which devices ran a task of each kernel by the gate's leave (not as a probe). */
    unsigned char *ran = calloc(q->nkin * q->ndev, 1);
    if (!ran)
        return;
    for (size_t id = base; id < base + n; id++) {
        const task *t = &q->tasks[id];
        if (t->probe || t->info.status != CLF_SUCCESS)
            continue;
        for (size_t i = 0; i < q->ndev; i++)
            if (q->w[i].d->index == t->info.device)
                ran[t->kin * q->ndev + i] = 1;
    }
    pthread_mutex_lock(&s->lock);
    for (size_t k = 0; k < q->nkin; k++) {
        tq_kin *kin = &q->kin[k];
        tq_probe_entry *e = entry_of(s, kin->key, 1);
        for (size_t i = 0; i < q->ndev; i++) {
            if (!tracked(q, i))
                continue;
            size_t d = q->w[i].d->index;
            unsigned every = e->every[d] ? e->every[d] : CLF__TQ_PROBE_AFTER;
            size_t pid = kin->probe_id[i];
            if (ran[k * q->ndev + i]) {
                e->out_runs[d] = 0;
                e->every[d] = 0; /* helping again: a later exclusion starts afresh */
                continue;
            }
            if (pid != SIZE_MAX) {
                const task *t = &q->tasks[pid];
                double took = t->info.end_s - t->info.start_s;
                double want = optimistic(&kin->fit[i], t->items, clf__tq_pred(q, pid, i));
                if (t->info.status != CLF_SUCCESS || !(took > 0) || !(want > 0) ||
                    t->info.device != d) {
                    /* No verdict: it stays due. (Run elsewhere: the device failed during
                     * it and gave it back, and another ran it.) */
                } else if (took * CLF__TQ_PROBE_WRONG < want) {
                    int known = m && clf__perf_forget(m, kin->key, q->w[i].dkey);
                    e->judged[d] = 1;
                    e->every[d] = 0;
                    e->out_runs[d] = CLF__TQ_PROBE_AFTER; /* due again if still kept out */
                    clf__log(CLF_LOG_INFO,
                             "task queue: device %zu probed with task %zu ('%s'): %.3g s "
                             "against %.3g s predicted: its samples are stale%s",
                             t->info.device, pid, t->kernel, took, want,
                             known ? ", forgotten" : "");
                } else if (!e->judged[d]) {
                    /* The device's first probe of the kernel in this fleet confirms nothing:
                     * it may be its first run of the task's shape, which pays the driver's
                     * one-off costs (PoCL compiles a work-group function per size on first
                     * enqueue: a 2-item probe took 64 ms so, 0.3 ms once warm, and a CI run
                     * kept a stale device out 5 more runs). Due again. */
                    e->judged[d] = 1;
                    e->out_runs[d] = every;
                    clf__log(CLF_LOG_DEBUG,
                             "task queue: device %zu probed with task %zu ('%s'): %.3g s "
                             "against %.3g s predicted: a first probe, due again",
                             t->info.device, pid, t->kernel, took, want);
                } else {
                    e->every[d] = every < CLF__TQ_PROBE_MAX_EVERY / 2 ? 2 * every
                                                                      : CLF__TQ_PROBE_MAX_EVERY;
                    e->out_runs[d] = 0;
                    clf__log(CLF_LOG_DEBUG,
                             "task queue: device %zu probed with task %zu ('%s'): %.3g s "
                             "against %.3g s predicted: the figure stands, next probe after %u",
                             t->info.device, pid, t->kernel, took, want, e->every[d]);
                }
            } else if (kin->kept[i] && e->out_runs[d] < UINT_MAX) {
                e->out_runs[d]++;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    free(ran);
}

/*
 * Task queues (taskq.c: creation, submission, the workers, the run; tasksched.c: where
 * each task goes, by the cost model): the state both share. Not installed.
 */
#ifndef CLFLEET_TASKQ_H
#define CLFLEET_TASKQ_H

#include "flow.h"

#include <pthread.h>

#include "clfleet/opencl.h"
#include "exec/exec.h"
#include "plan/perfmodel.h"

#define MAX_TASK_ARGS 64

typedef struct task {
    char *kernel;
    unsigned dims;
    size_t global[3], local[3];
    size_t affinity;
    uint64_t items; /* work items: the cost model's units */
    size_t nargs;
    clf_arg *args;       /* copied; scalar values point into vals */
    unsigned char *vals; /* the scalar values, copied at submission */
    clf_task_info info;
    size_t kin; /* its kernel's entry in the run's q->kin (taskprobe.c) */
    int probe;  /* the run gave it to a device the gate kept out (a probe) */
} task;

/* Task ids of one device; its own thread pops the head, thieves the tail. */
typedef struct deque {
    size_t *v;
    size_t head, tail;
    /* The owner's predicted seconds of the tasks queued, and how many of them the model
     * cannot predict (then the deque's finish is unknown). */
    double pred_sum;
    size_t unknown;
} deque;

/* What the run knows of one kernel of its tasks for the gate's probes (taskprobe.c), per
 * queue device: loaded from the fleet's probe state at the run's start, judged at its end. */
typedef struct tq_kin {
    const char *name;  /* a task's kernel string */
    char key[320];     /* its key in the cost model */
    size_t left;       /* scratch: its tasks kept from, counted under the queue's lock */
    unsigned out_runs[CLF_MAX_LAUNCH_DEVICES]; /* runs in a row the gate kept it out */
    unsigned every[CLF_MAX_LAUNCH_DEVICES];    /* the wait before a probe (runs or tasks) */
    uint64_t kept[CLF_MAX_LAUNCH_DEVICES];     /* tasks the gate kept it from in this run */
    size_t probe_id[CLF_MAX_LAUNCH_DEVICES];   /* its probe task in this run, or SIZE_MAX */
    clf__perf_fit fit[CLF_MAX_LAUNCH_DEVICES]; /* the model's figures at the run's start */
} tq_kin;

typedef struct tq_kernel {
    char *name;
    cl_kernel k;
} tq_kernel;

typedef struct tq_worker {
    clf_taskq *q;
    size_t pos; /* position among the queue's devices */
    struct clf__device *d;
    tq_kernel *kernels; /* created on first use of a name on this device */
    size_t nkernels;
    cl_mem mem[MAX_TASK_ARGS]; /* one buffer per argument position, reused */
    size_t cap[MAX_TASK_ARGS];
    clf_taskq_device_report rep;
    char dkey[400]; /* the device's key in the cost model */
    /* Under the queue's lock: still taking tasks (a finished, failed or declining worker is
     * not: no one waits for it), and when the task it runs began and is predicted to end
     * (busy; busy_until negative when the model does not know it). */
    int active, busy;
    double busy_start, busy_until;
} tq_worker;

struct clf_taskq {
    clf_fleet *fl;
    clf_program *prog;
    size_t ndev;
    task *tasks;
    size_t ntasks, cap;
    size_t pending; /* tasks [pending, ntasks) have not run yet */
    /* The run's predicted seconds of task base + t on queue device i: pred[t * ndev + i],
     * negative when the model does not know the task's kernel on that device. */
    size_t base;
    double *pred;
    tq_kin *kin; /* the run's kernels, for the gate's probes (NULL: no probes this run) */
    size_t nkin;
    tq_kernel *checks; /* one kernel per name, never given arguments: clf_taskq_submit() checks
                        * tasks against it (CL_KERNEL_LOCAL_MEM_SIZE counts __local ones set) */
    size_t nchecks;

    pthread_mutex_t lock; /* guards the deques, running, the first failure */
    deque dq[CLF_MAX_LAUNCH_DEVICES];
    int running;
    uint64_t t0; /* the run's start, host ns */
    clf_status first;
    char err[1024];
    tq_worker w[CLF_MAX_LAUNCH_DEVICES];
};

static inline double clf__tq_since(const clf_taskq *q)
{
    return (double)(clf__mono_ns() - q->t0) * 1e-9;
}

/* ---- tasksched.c: dealing, the steal gate, learning -------------------------------------- */

/* The run's predictions (q->pred) for tasks [base, base + n) from the model m (NULL: none,
 * every prediction unknown). */
void clf__tq_predict(clf_taskq *q, clf__perf_model *m, size_t base, size_t n);
/* Deal tasks [base, base + n) to the deques (emptied before); usable: bit i set for each
 * queue device that may take tasks. */
void clf__tq_deal(clf_taskq *q, size_t base, size_t n, size_t usable);
/* Teach the model m (NULL: nothing) the host time of each task of [base, base + n) that ran. */
void clf__tq_learn(clf_taskq *q, clf__perf_model *m, size_t base, size_t n);
/* Under the queue's lock, worker w stopping (the gate keeps it from every task left, its own
 * deque empty): count what it is kept from and take a probe task if one is due (1, *id). */
int clf__tq_probe_pick(clf_taskq *q, tq_worker *w, double now, size_t *id);
/* The predicted seconds of task id on queue device i (negative: unknown). */
double clf__tq_pred(const clf_taskq *q, size_t id, size_t i);

/* ---- taskprobe.c: the steal gate's probes -------------------------------------------------- */

/* Before the deal (after clf__tq_predict() from the model m): the run's kernels, their
 * figures and their probe state. */
void clf__tq_probe_begin(clf_taskq *q, clf__perf_model *m, size_t base, size_t n);
/* After clf__tq_learn(): judge the run's probes, count the runs each device was kept out. */
void clf__tq_probe_end(clf_taskq *q, clf__perf_model *m, size_t base, size_t n);

/* The next task for worker w, through the gate (1, *id, *stolen), or 0: w stops. */
int clf__tq_take(clf_taskq *q, tq_worker *w, size_t *id, int *stolen);
/* Give task id back to w's deque (its device failed); w takes no more. */
void clf__tq_give_back(clf_taskq *q, tq_worker *w, size_t id);
/* Mark worker w as taking tasks (on) or not, idle. */
void clf__tq_set_active(clf_taskq *q, tq_worker *w, int on);

#endif

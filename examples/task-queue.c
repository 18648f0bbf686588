/*
 * Example 4: dynamic balancing with a task queue.
 *
 * Forty independent tasks of very different sizes (from a few thousand to tens of
 * millions of steps) go into one clf_taskq. A run deals them to one deque per
 * device; each device takes tasks from its own deque and, once that is empty,
 * steals from the fullest other one, so fast devices end up doing more and nobody
 * waits long at the end. The program prints which device ran which task (s: stolen)
 * and what each device did, then checks every task's output against a plain C loop.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

enum { TASKS = 40 };

/* Each work-item runs `rounds` steps of xorshift32 from its own seed. */
static const char SOURCE[] = "__kernel void scramble(__global uint *out, uint seed, int rounds)\n"
                             "{\n"
                             "    uint i = get_global_id(0), x = seed ^ (i * 0x9e3779b9u);\n"
                             "    for (int r = 0; r < rounds; r++) {\n"
                             "        x ^= x << 13; x ^= x >> 17; x ^= x << 5;\n"
                             "        x += (uint)r;\n"
                             "    }\n"
                             "    out[i] = x;\n"
                             "}\n";

static uint32_t mix(uint32_t seed, uint32_t i, int rounds)
{
    uint32_t x = seed ^ (i * 0x9e3779b9u);
    for (int r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x += (uint32_t)r;
    }
    return x;
}

typedef struct task {
    uint32_t seed;
    int rounds;
    size_t len;
    uint32_t *out;
} task;

/* Task sizes spread over three orders of magnitude (a fixed LCG: the same every run). */
static void make_tasks(task *t)
{
    uint32_t s = 2024;
    for (size_t i = 0; i < TASKS; i++) {
        s = s * 1664525u + 1013904223u;
        t[i].seed = s;
        t[i].len = 64 * (4 + (s >> 8) % 128); /* multiples of the work-group size */
        t[i].rounds = 8 << ((s >> 24) % 8);   /* 8 .. 1024 */
    }
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "task-queue: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

static void print_run(const clf_taskq *q, const clf_taskq_report *rep)
{
    for (size_t k = 0; k < rep->num_devices; k++) {
        const clf_taskq_device_report *d = &rep->dev[k];
        printf("device %zu: %2llu tasks (%llu stolen), kernels %.1f ms, done at %.1f ms:",
               d->device, (unsigned long long)d->tasks, (unsigned long long)d->stolen,
               d->busy_s * 1e3, d->finish_s * 1e3);
        for (size_t id = 0; id < TASKS; id++) {
            clf_task_info info;
            if (clf_taskq_task_info(&info, q, id) == CLF_SUCCESS && info.device == d->device)
                printf(" %zu%s", id, info.stolen ? "s" : "");
        }
        printf("\n");
    }
    printf("makespan %.1f ms, efficiency %.2f (earliest finish / latest finish)\n",
           rep->makespan_s * 1e3, rep->efficiency);
}

/* Every task ran once, succeeded, and its output is the C loop's. */
static size_t verify(const clf_taskq *q, const task *t)
{
    size_t bad = 0;
    for (size_t id = 0; id < TASKS; id++) {
        clf_task_info info;
        size_t wrong = 0;
        if (clf_taskq_task_info(&info, q, id) != CLF_SUCCESS || info.runs != 1 ||
            info.status != CLF_SUCCESS) {
            fprintf(stderr, "task-queue: task %zu did not run exactly once\n", id);
            bad++;
            continue;
        }
        for (size_t i = 0; i < t[id].len; i++)
            wrong += t[id].out[i] != mix(t[id].seed, (uint32_t)i, t[id].rounds);
        if (wrong)
            fprintf(stderr, "task-queue: task %zu (on device %zu): %zu of %zu wrong\n", id,
                    info.device, wrong, t[id].len);
        bad += wrong != 0;
    }
    return bad;
}

int main(void)
{
    task t[TASKS];
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    clf_taskq *q = NULL;
    clf_taskq_report rep;
    int rc = 1;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);
    make_tasks(t);
    for (size_t i = 0; i < TASKS; i++)
        t[i].out = NULL;
    if ((st = clf_program_build_source(&p, f, SOURCE, NULL)) != CLF_SUCCESS ||
        (st = clf_taskq_create(&q, f, p, NULL, 0)) != CLF_SUCCESS) {
        fail("setting up", st);
        goto out;
    }
    for (size_t i = 0; i < TASKS; i++) {
        if (!(t[i].out = calloc(t[i].len, sizeof(uint32_t))))
            goto out;
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "scramble";
        d.global[0] = t[i].len;
        d.local[0] = 64; /* one size: PoCL compiles a kernel variant per work-group size */
        clf_arg args[] = {CLF_WHOLE_OUT(t[i].out, t[i].len * sizeof(uint32_t)),
                          CLF_SCALAR(&t[i].seed), CLF_SCALAR(&t[i].rounds)};
        if ((st = clf_taskq_submit(q, &d, args, 3, NULL)) != CLF_SUCCESS) {
            fail("clf_taskq_submit", st);
            goto out;
        }
    }
    printf("%d tasks of 256 to 8384 work-items x 8 to 1024 rounds on %zu device(s)\n\n", TASKS,
           clf_fleet_device_count(f));
    if ((st = clf_taskq_run(q, &rep)) != CLF_SUCCESS) {
        fail("clf_taskq_run", st);
        goto out;
    }
    print_run(q, &rep);
    size_t bad = verify(q, t);
    if (bad == 0 && rep.tasks == TASKS && rep.failed == 0) {
        printf("every task's output equals the C loop's\n");
        rc = 0;
    } else {
        fprintf(stderr, "task-queue FAILED: %zu task(s) wrong\n", bad);
    }
out:
    clf_taskq_destroy(q);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    for (size_t i = 0; i < TASKS; i++)
        free(t[i].out);
    return rc;
}

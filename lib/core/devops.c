/*
 * The per-device ops table: a device's driver quirks as a small table of calls, chosen once
 * per device at fleet creation (clf__devops_init(), from fleet.c), so that the code which
 * meets a quirk asks the table (clf__devops()) instead of testing the driver by name.
 * PoCL's device ops are the model. Adding a quirk is adding a table here and a line to
 * choose(); the rest of the library calls through the table.
 *
 * Tables today:
 *  - "default": any conforming device. Enqueues take no lock; a command may wait for
 *    events other queues, devices or host threads complete.
 *  - "pocl-basic": PoCL's "basic" device (PoCL 3.x), which runs a command inside clEnqueue*
 *    itself, or inside whichever thread makes its wait list complete:
 *      quirk 1, the trigger: two host threads enqueueing to it at once. It can deadlock
 *        inside PoCL 3 (each holds one of the device's locks the other's command needs).
 *        Workaround: every enqueue takes the device's exec lock for that one call
 *        (enqueue_enter/leave), and never across a wait for anything (core.h says why).
 *      quirk 2, the trigger: a command whose wait list names an event that another queue,
 *        device or host thread completes (a user event's clSetUserEventStatus(), another
 *        queue's completion). The command then runs inside that thread, in the middle of
 *        the other command's completion, where PoCL 3 deadlocks on its own locks or aborts
 *        (a two-device halo ping-pong hung at its first steps). Workaround: wait_list_ok is
 *        0, and the callers wait for such a wait list on the host and enqueue with none, so
 *        that the command runs inside its own enqueue: the command path (cmd.c), the event
 *        bridge and a device's wait (xfer/sync.c), copies (xfer/transfer.c), kernels' wait
 *        lists (exec/launch.c), pipeline stages (flow/pipeline.c) and collectives
 *        (coll/collective.c); and a simulated device (observe/simulate.c), whose commands
 *        wait for a timer's user event, is refused.
 */
#include "core.h"

#include <string.h>
#include <strings.h> /* strncasecmp() */

static void no_lock(struct clf__device *d)
{
    (void)d;
}

static void exec_lock(struct clf__device *d)
{
    pthread_mutex_lock(&d->exec_lock);
}

static void exec_unlock(struct clf__device *d)
{
    pthread_mutex_unlock(&d->exec_lock);
}

static const struct clf__devops default_ops = {
    .name = "default",
    .enqueue_enter = no_lock,
    .enqueue_leave = no_lock,
    .wait_list_ok = 1,
};

static const struct clf__devops pocl_basic_ops = {
    .name = "pocl-basic",
    .enqueue_enter = exec_lock,
    .enqueue_leave = exec_unlock,
    .wait_list_ok = 0,
};

static int contains_nocase(const char *s, const char *what)
{
    size_t n = strlen(what);
    for (; *s; s++)
        if (strncasecmp(s, what, n) == 0)
            return 1;
    return 0;
}

/* The table for a device, from what it says it is. */
static const struct clf__devops *choose(const clf_device_info *in)
{
    if (strncmp(in->name, "basic", 5) == 0 &&
        contains_nocase(in->platform, "Portable Computing Language"))
        return &pocl_basic_ops;
    return &default_ops;
}

const struct clf__devops *clf__devops(const clf_fleet *fl, size_t dev)
{
    if (!fl || dev >= fl->ndev || !fl->dev[dev].ops)
        return &default_ops; /* before clf__devops_init(), or no such device */
    return fl->dev[dev].ops;
}

void clf__devops_init(clf_fleet *fl)
{
    for (size_t i = 0; i < fl->ndev; i++) {
        struct clf__device *d = &fl->dev[i];
        if (d->ops)
            continue;
        /* Recursive: a caller that holds it (clf_cl_lock()) may call clfleet functions that
         * enqueue to the device, clf_cl_compute_queue()'s first call among them; a plain
         * mutex deadlocked that thread on itself. */
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&d->exec_lock, &ma);
        pthread_mutexattr_destroy(&ma);
        d->ops = choose(&d->info);
        if (d->ops != &default_ops)
            clf__log(CLF_LOG_INFO, "device %zu '%s': driver quirks table '%s'", i, d->info.name,
                     d->ops->name);
    }
}

void clf__devops_fini(clf_fleet *fl)
{
    for (size_t i = 0; fl->dev && i < fl->ndev; i++)
        if (fl->dev[i].ops) {
            pthread_mutex_destroy(&fl->dev[i].exec_lock);
            fl->dev[i].ops = NULL;
        }
}

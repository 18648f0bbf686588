/*
 * Graphs: how a run's job waits without blocking. The job holds the events it must wait for
 * (clf__graph_hold()), then asks clf__graph_defer(): when some have not completed, it returns
 * and the last of them to complete queues it again on the helper pool (a pool job never
 * waits for another: copies run there). The run's first failure is kept with its detail,
 * since the job moves between threads.
 */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

/* Hold e for the job's next wait. */
clf_status clf__graph_hold(clf_graph *g, clf_event *e)
{
    clf__event_hold(e);
    return clf__evlist_push(&g->hold, e);
}

/* The last of the held events to complete queues the job again. */
static void wake(void *arg, clf_status st)
{
    (void)st; /* read when the job waits for the event, at once */
    clf_graph *g = arg;
    if (atomic_fetch_sub(&g->pending, 1) == 1 && clf__pool_submit(&g->job) != CLF_SUCCESS)
        g->job.fn(g->job.arg, 0); /* no pool (it shut down): here, where nothing is left
                                   * to wait for */
}

/* 1 when the job must return and wait to be queued again (some held event has not
 * completed), 0 when it may go on at once. The job touches nothing after a 1. */
int clf__graph_defer(clf_graph *g)
{
    size_t n = g->hold.n;
    atomic_store(&g->pending, n + 1);
    for (size_t i = 0; i < n; i++)
        if (clf__event_notify(g->hold.ev[i], wake, g) != CLF_SUCCESS) {
            (void)clf_event_wait(g->hold.ev[i]); /* out of memory: wait here instead */
            atomic_fetch_sub(&g->pending, 1);
        }
    return atomic_fetch_sub(&g->pending, 1) != 1;
}

/* Keep the first failure and its detail (the job moves between threads). */
void clf__graph_failed(clf_graph *g, clf_status st)
{
    if (!st || g->run_st)
        return;
    g->run_st = st;
    g->run_msg = strdup(clf_last_error());
}

/*
 * When a timed collective's own work starts and ends (the all-reduce times what it runs to
 * choose its algorithm: allreduce.c). It starts when the devices' earlier work ends, as the
 * driver reports each entry marker complete, by a callback on its own thread. Waiting for
 * the markers on the host instead would start the clock a thread's wake-up late (tens of
 * us, on a loaded host more), while the devices already run the collective: a 4 KiB ring
 * then measured 4 us where it took 28. The state is shared with the callbacks, so freed by
 * the last of them and the collective to let go: a callback may run after
 * clWaitForEvents() has returned.
 */
#include "coll.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct coll_clock {
    atomic_int refs;    /* the collective's one, and one per callback still to run */
    atomic_int pending; /* callbacks still to run */
    atomic_int failed;  /* a marker failed: the call is not timed */
    _Atomic uint64_t end_ns; /* the latest marker's end (clf__mono_ns()) */
} coll_clock;

static void clock_put(coll_clock *k)
{
    if (k && atomic_fetch_sub(&k->refs, 1) == 1)
        free(k);
}

static void CL_CALLBACK entry_done(cl_event ev, cl_int status, void *arg)
{
    coll_clock *k = arg;
    uint64_t t = clf__mono_ns(), cur = atomic_load(&k->end_ns);
    (void)ev;
    if (status < 0)
        atomic_store(&k->failed, 1);
    while (t > cur && !atomic_compare_exchange_weak(&k->end_ns, &cur, t))
        ;
    atomic_fetch_sub(&k->pending, 1);
    clock_put(k);
}

void clf__coll_clock_watch(clf__coll *c, cl_event m)
{
    if (!c->timed)
        return;
    if (!c->clock) {
        if (!(c->clock = calloc(1, sizeof *c->clock))) {
            c->timed = 0;
            return;
        }
        atomic_init(&c->clock->refs, 1);
    }
    atomic_fetch_add(&c->clock->refs, 1);
    atomic_fetch_add(&c->clock->pending, 1);
    if (clSetEventCallback(m, CL_COMPLETE, entry_done, c->clock) != CL_SUCCESS) {
        atomic_fetch_sub(&c->clock->pending, 1);
        atomic_fetch_sub(&c->clock->refs, 1); /* the collective still holds one */
        c->timed = 0;
    }
}

void clf__coll_clock_stop(clf__coll *c)
{
    double end = clf__now();
    coll_clock *k = c->clock;
    if (c->timed && k && atomic_load(&k->pending) == 0 && !atomic_load(&k->failed)) {
        double start = (double)atomic_load(&k->end_ns) * 1e-9;
        start = start > c->t0 ? start : c->t0;
        c->elapsed_s = end - start;
    } else {
        c->timed = 0; /* a callback not yet run (or a failure): when it started is unknown */
    }
    clock_put(k);
    c->clock = NULL;
}


/*
 * Subsystems' state on a fleet (core.h): each layer above core keeps what it needs on a
 * fleet (the launches' turn and caches, the collectives' program and scratch, GEMM's
 * clBLAST registration) in a struct of its own, reached through a key it defines, as
 * libuv's and hwloc's handles carry their users' data: the fleet holds a table of (key,
 * state) pairs and knows none of them. The state is made on the subsystem's first use, with
 * the key's create function, under the fleet's lock; the fleet's teardown runs the keys'
 * finalizers phase by phase (core.h), in each phase the latest made first.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

struct clf__state_slot {
    const clf__state_key *key;
    void *state;
};

/* The slot of key (under fl->lock), or NULL. */
static struct clf__state_slot *find(clf_fleet *fl, const clf__state_key *key)
{
    for (size_t i = 0; i < fl->nstates; i++)
        if (fl->states[i].key == key)
            return &fl->states[i];
    return NULL;
}

void *clf__fleet_state(clf_fleet *fl, const clf__state_key *key)
{
    void *s = NULL;
    pthread_mutex_lock(&fl->lock);
    struct clf__state_slot *slot = find(fl, key);
    if (slot) {
        s = slot->state;
        goto out;
    }
    if (fl->nstates == fl->cap_states) {
        size_t cap = fl->cap_states ? 2 * fl->cap_states : 8;
        struct clf__state_slot *grown = realloc(fl->states, cap * sizeof *grown);
        if (!grown)
            goto out;
        fl->states = grown;
        fl->cap_states = cap;
    }
    s = key->create(fl);
    if (s) {
        fl->states[fl->nstates].key = key;
        fl->states[fl->nstates].state = s;
        fl->nstates++;
    }
out:
    pthread_mutex_unlock(&fl->lock);
    return s;
}

void *clf__fleet_state_find(clf_fleet *fl, const clf__state_key *key)
{
    pthread_mutex_lock(&fl->lock);
    struct clf__state_slot *slot = find(fl, key);
    void *s = slot ? slot->state : NULL;
    pthread_mutex_unlock(&fl->lock);
    return s;
}

void clf__fleet_state_fini(clf_fleet *fl, clf__state_phase phase)
{
    /* One at a time, the latest first, outside the lock: a finalizer may wait for work that
     * still uses other states (the launches' waits for queued launches), and a state made
     * meanwhile is finalized too. */
    for (;;) {
        struct clf__state_slot got = {NULL, NULL};
        pthread_mutex_lock(&fl->lock);
        for (size_t i = fl->nstates; i-- > 0;)
            if (fl->states[i].key->phase == phase) {
                got = fl->states[i];
                memmove(&fl->states[i], &fl->states[i + 1],
                        (fl->nstates - i - 1) * sizeof *fl->states);
                fl->nstates--;
                break;
            }
        pthread_mutex_unlock(&fl->lock);
        if (!got.key)
            break;
        if (got.key->fini)
            got.key->fini(fl, got.state);
    }
    if (phase == CLF__STATE_LAST && fl->nstates == 0) {
        free(fl->states);
        fl->states = NULL;
        fl->cap_states = 0;
    }
}

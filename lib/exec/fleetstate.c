/*
 * What launches keep on a fleet (clf__exec_state): made on first use, finalized first at the
 * teardown (queued launches complete, the dispatcher of asynchronous launches stops); the
 * learned throughput model, the cache of broadcast arrays, and the turns (a ticket each:
 * launches run in the order they were queued).
 */
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define CLF__BCAST_CACHE 16

/* ---- broadcast cache ----------------------------------------------------------------- */

/* 64-bit FNV-1a over words: fast enough to run on every launch, to see a changed array. */
static uint64_t content_hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static void bcast_release(clf_fleet *fl, struct clf__bcast *b)
{
    for (size_t d = 0; d < fl->ndev; d++)
        if (b->mem[d]) {
            clReleaseMemObject(b->mem[d]);
            clf__metrics_free(fl, d, b->size);
            b->mem[d] = NULL;
        }
}

/* The cache entry of a broadcast array, emptied when its content changed. */
clf_status clf__bcast_entry(clf_fleet *fl, clf__exec_state *X, const clf_arg *a,
                            struct clf__bcast **out)
{
    uint64_t h = content_hash(a->host, a->size);
    clf_status st = CLF_SUCCESS;
    pthread_mutex_lock(&X->lock);
    struct clf__bcast *b = NULL;
    for (size_t i = 0; i < X->nbcast && !b; i++)
        if (X->bcast[i].host == a->host && X->bcast[i].size == a->size)
            b = &X->bcast[i];
    if (!b) {
        if (!X->bcast) {
            X->bcast = calloc(CLF__BCAST_CACHE, sizeof *X->bcast);
            if (!X->bcast) {
                st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "broadcast: out of memory");
                goto out;
            }
        }
        if (X->nbcast == CLF__BCAST_CACHE) { /* evict the oldest */
            bcast_release(fl, &X->bcast[0]);
            cl_mem *keep = X->bcast[0].mem;
            memmove(X->bcast, X->bcast + 1, (CLF__BCAST_CACHE - 1) * sizeof *X->bcast);
            X->bcast[--X->nbcast].mem = keep;
        }
        b = &X->bcast[X->nbcast];
        if (!b->mem && !(b->mem = calloc(fl->ndev, sizeof *b->mem))) {
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "broadcast: out of memory");
            goto out;
        }
        X->nbcast++;
        b->host = a->host;
        b->size = a->size;
        b->hash = h;
    } else if (b->hash != h) {
        bcast_release(fl, b);
        b->hash = h;
    }
    *out = b;
out:
    pthread_mutex_unlock(&X->lock);
    return st;
}

/* ---- the launch state on the fleet ---------------------------------------------------- */

static void *exec_state_create(clf_fleet *fl)
{
    (void)fl;
    clf__exec_state *X = calloc(1, sizeof *X);
    if (!X)
        return NULL;
    if (pthread_mutex_init(&X->lock, NULL) != 0) {
        free(X);
        return NULL;
    }
    if (pthread_cond_init(&X->turn, NULL) != 0) {
        pthread_mutex_destroy(&X->lock);
        free(X);
        return NULL;
    }
    if (pthread_cond_init(&X->queued, NULL) != 0) {
        pthread_cond_destroy(&X->turn);
        pthread_mutex_destroy(&X->lock);
        free(X);
        return NULL;
    }
    return X;
}

/* At the teardown, once every launch has run: the dispatcher goes. */
static void dispatcher_stop(clf__exec_state *X)
{
    pthread_mutex_lock(&X->lock);
    X->stopping = 1;
    pthread_cond_signal(&X->queued);
    int started = X->dispatcher_started;
    pthread_mutex_unlock(&X->lock);
    if (started)
        pthread_join(X->dispatcher, NULL);
}

/* The teardown's first finalizer: launches still queued or running complete (they use the
 * caller's arrays and the fleet's queues), then the dispatcher goes and the caches are freed
 * (the per-device threads and kept buffers next, by their own finalizers). */
static void exec_state_fini(clf_fleet *fl, void *state)
{
    clf__exec_state *X = state;
    pthread_mutex_lock(&X->lock);
    while (X->serving != X->next_ticket) /* launches still queued or running */
        pthread_cond_wait(&X->turn, &X->lock);
    pthread_mutex_unlock(&X->lock);
    dispatcher_stop(X);
    for (size_t i = 0; i < CLF__BCAST_CACHE && X->bcast; i++) {
        if (i < X->nbcast)
            bcast_release(fl, &X->bcast[i]);
        free(X->bcast[i].mem);
    }
    free(X->bcast);
    if (X->perf) {
        clf__perf_save(X->perf); /* best effort: learning is an optimisation */
        clf__perf_close(X->perf);
    }
    pthread_cond_destroy(&X->queued);
    pthread_cond_destroy(&X->turn);
    pthread_mutex_destroy(&X->lock);
    free(X);
}

static const clf__state_key exec_key = {"launches", CLF__STATE_DRAIN, exec_state_create,
                                        exec_state_fini};

clf__exec_state *clf__exec_state_of(clf_fleet *fl)
{
    return clf__fleet_state(fl, &exec_key);
}

/* ---- the throughput model ----------------------------------------------------------------- */

clf__perf_model *clf__fleet_perf(clf_fleet *fl)
{
    clf__exec_state *X = clf__exec_state_of(fl);
    if (!X)
        return NULL;
    pthread_mutex_lock(&X->lock);
    if (!X->perf) {
        char path[4096];
        int persist = fl->cache_dir &&
                      snprintf(path, sizeof path, "%s/" CLF__PERF_FILE, fl->cache_dir) <
                          (int)sizeof path;
        if (clf__perf_open(&X->perf, persist ? path : NULL) != CLF_SUCCESS)
            clf__perf_open(&X->perf, NULL); /* unreadable file: learn in memory */
    }
    clf__perf_model *m = X->perf;
    pthread_mutex_unlock(&X->lock);
    return m;
}

/* ---- turns -------------------------------------------------------------------------------- */

void clf__take_turn(clf__exec_state *X, uint64_t ticket)
{
    pthread_mutex_lock(&X->lock);
    while (X->serving != ticket)
        pthread_cond_wait(&X->turn, &X->lock);
    pthread_mutex_unlock(&X->lock);
}

void clf__end_turn(clf__exec_state *X)
{
    pthread_mutex_lock(&X->lock);
    X->serving++;
    pthread_cond_broadcast(&X->turn);
    pthread_mutex_unlock(&X->lock);
}

uint64_t clf__new_ticket(clf__exec_state *X)
{
    pthread_mutex_lock(&X->lock);
    uint64_t t = X->next_ticket++;
    pthread_mutex_unlock(&X->lock);
    return t;
}

clf_status clf__turn_begin(clf_fleet *fl)
{
    clf__exec_state *X = clf__exec_state_of(fl);
    if (!X)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "launch state: out of memory");
    clf__take_turn(X, clf__new_ticket(X));
    return CLF_SUCCESS;
}

void clf__turn_end(clf_fleet *fl)
{
    clf__end_turn(clf__exec_state_of(fl)); /* made by clf__turn_begin() */
}

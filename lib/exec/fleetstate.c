/*
 * What launches keep on a fleet, each a state of the fleet's registry (core/device.c) made on
 * first use:
 * - the launch state (clf__exec_state), finalized first at the teardown (queued launches
 *   complete, the dispatcher of asynchronous launches returns to the helper pool): the
 *   learned throughput model, the cache of broadcast arrays, and the turns (a ticket each:
 *   launches run in the order they were queued);
 * - the device buffers kept between launches (below);
 * - the persistent per-device threads that drive the devices in a launch (below).
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
            clf__cmd_release(&CLF__CMD(fl, d, NULL, NULL), b->mem[d], b->size);
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

clf_status clf__bcast_fresh(clf_fleet *fl, const clf_arg *a, struct clf__bcast **out)
{
    struct clf__bcast *b = calloc(1, sizeof *b);
    if (b && !(b->mem = calloc(fl->ndev, sizeof *b->mem))) {
        free(b);
        b = NULL;
    }
    if (!b)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "broadcast: out of memory");
    b->host = a->host;
    b->size = a->size;
    *out = b;
    return CLF_SUCCESS;
}

void clf__bcast_free(clf_fleet *fl, struct clf__bcast *b)
{
    if (!b)
        return;
    bcast_release(fl, b);
    free(b->mem);
    free(b);
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

/* The teardown's first finalizer: launches still queued or running complete (they use the
 * caller's arrays and the fleet's queues), the dispatcher's job returns (it still reads the
 * state after the last launch's turn), and the caches are freed
 * (the per-device threads and kept buffers next, by their own finalizers). */
static void exec_state_fini(clf_fleet *fl, void *state)
{
    clf__exec_state *X = state;
    pthread_mutex_lock(&X->lock);
    while (X->serving != X->next_ticket) /* launches still queued or running */
        pthread_cond_wait(&X->turn, &X->lock);
    while (X->dispatching)
        pthread_cond_wait(&X->queued, &X->lock);
    pthread_mutex_unlock(&X->lock);
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

void clf__perf_device_key(const clf_fleet *fl, size_t dev, char *buf, size_t n)
{
    const struct clf__device *d = &fl->dev[dev];
    int k = snprintf(buf, n, "%s|%s|cu=%u", d->info.name, d->info.driver_version,
                     d->info.compute_units);
    /* A device simulated slower ($CLFLEET_SIMULATE) is learned under a key of its own. */
    if (k >= 0 && (size_t)k < n)
        clf__sim_key(fl, dev, buf + k, n - (size_t)k);
}

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

/* ---- kept device buffers --------------------------------------------------------------- */

/*
 * Device buffers kept between launches. A new buffer costs PoCL about 30 us on its first
 * use (allocation and first touch), twice the whole enqueue-and-finish round trip of a
 * 4,096-float kernel; iterative codes launch thousands of such kernels on arrays of the same
 * sizes. So the buffers a launch's workers release go to a small per-fleet cache, keyed by
 * device, flags and size, and the next launch's workers take them back instead of creating
 * new ones (worker.c, clf__worker_device_alloc()).
 *
 * Small buffers are kept (CLF__BUFCACHE_MAX_BYTES each, CLF__BUFCACHE_SLOTS in all, the
 * oldest evicted): idle memory held on a device is memory no one else can use. Large ones
 * only on a device that shares the host's memory, up to CLF__BUFCACHE_LARGE in all per
 * device (an eighth of its memory at most, the oldest evicted first): there a new buffer is
 * fresh host pages, and their first touch by the input's copy made a one-device launch of a
 * 16M-float per-group sum (64 MB in) a third slower than raw OpenCL, which reuses its buffer
 * (PoCL 3.1, issue 27). A discrete device's memory is left to the launches' budgets, where a
 * kept buffer is not counted. The fleet's metrics count a buffer as
 * freed when it is kept and allocated again when it is taken (so their current memory is
 * the launches' working memory, as before: idle kept buffers do not show there), and a kept
 * buffer counts against no launch's budget until taken.
 * Buffers are only put back once every command of their launch has completed (the workers'
 * teardown, after the launch's last wait), and launches run one at a time per fleet; the
 * cache has its lock all the same, as GEMM and launches may interleave. It is the fleet's state
 * of this file (core/device.c), released at the teardown once the launches have run.
 */

#define CLF__BUFCACHE_SLOTS 32
#define CLF__BUFCACHE_MAX_BYTES ((size_t)1 << 20)
#define CLF__BUFCACHE_LARGE ((uint64_t)1 << 30)

struct clf__bufcache {
    pthread_mutex_t lock; /* guards what follows */
    struct {
        cl_mem mem; /* NULL: free slot */
        size_t dev, bytes;
        cl_mem_flags flags;
        uint64_t age; /* when it was put back: the lowest goes first */
    } slot[CLF__BUFCACHE_SLOTS];
    uint64_t clock;
};

static void *cache_create(clf_fleet *fl)
{
    (void)fl;
    struct clf__bufcache *c = calloc(1, sizeof *c);
    if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        c = NULL;
    }
    return c;
}

static void cache_fini(clf_fleet *fl, void *state);

static const clf__state_key cache_key = {"launch buffers", CLF__STATE_BEFORE_XFER, cache_create,
                                         cache_fini};

cl_mem clf__bufcache_get(clf_fleet *fl, size_t dev, cl_mem_flags flags, size_t bytes)
{
    cl_mem m = NULL;
    struct clf__bufcache *c = clf__fleet_state_find(fl, &cache_key);
    if (!c)
        return NULL; /* nothing kept yet */
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < CLF__BUFCACHE_SLOTS && !m; i++)
        if (c->slot[i].mem && c->slot[i].dev == dev && c->slot[i].flags == flags &&
            c->slot[i].bytes == bytes) {
            m = c->slot[i].mem;
            c->slot[i].mem = NULL;
        }
    pthread_mutex_unlock(&c->lock);
    return m;
}

/* The most bytes of buffers over CLF__BUFCACHE_MAX_BYTES kept for device dev (see above). */
static uint64_t large_limit(const clf_fleet *fl, size_t dev)
{
    const struct clf__device *d = &fl->dev[dev];
    if (!d->info.host_unified)
        return 0;
    uint64_t eighth = d->info.global_mem / 8;
    return eighth < CLF__BUFCACHE_LARGE ? eighth : CLF__BUFCACHE_LARGE;
}

void clf__bufcache_put(clf_fleet *fl, size_t dev, cl_mem mem)
{
    cl_mem_flags flags = 0;
    size_t bytes = 0;
    cl_mem evict[CLF__BUFCACHE_SLOTS + 1];
    size_t nevict = 0;
    uint64_t limit = large_limit(fl, dev);
    if (clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
        (bytes > CLF__BUFCACHE_MAX_BYTES && bytes > limit)) {
        clf__cmd_release(&CLF__CMD(fl, dev, NULL, NULL), mem, bytes); /* not kept */
        return;
    }
    struct clf__bufcache *c = clf__fleet_state(fl, &cache_key);
    if (!c) {
        clf__cmd_release(&CLF__CMD(fl, dev, NULL, NULL), mem, bytes);
        return;
    }
    pthread_mutex_lock(&c->lock);
    /* A large one: the device's large ones oldest first go until it fits its limit. */
    for (;;) {
        uint64_t large = 0;
        size_t oldest = CLF__BUFCACHE_SLOTS;
        for (size_t i = 0; bytes > CLF__BUFCACHE_MAX_BYTES && i < CLF__BUFCACHE_SLOTS; i++)
            if (c->slot[i].mem && c->slot[i].dev == dev &&
                c->slot[i].bytes > CLF__BUFCACHE_MAX_BYTES) {
                large += c->slot[i].bytes;
                if (oldest == CLF__BUFCACHE_SLOTS || c->slot[i].age < c->slot[oldest].age)
                    oldest = i;
            }
        if (bytes <= CLF__BUFCACHE_MAX_BYTES || large + bytes <= limit)
            break;
        evict[nevict++] = c->slot[oldest].mem;
        c->slot[oldest].mem = NULL;
    }
    size_t at = 0;
    for (size_t i = 0; i < CLF__BUFCACHE_SLOTS; i++) {
        if (!c->slot[i].mem) {
            at = i;
            break;
        }
        if (c->slot[i].age < c->slot[at].age)
            at = i;
    }
    if (c->slot[at].mem) /* full: the oldest goes */
        evict[nevict++] = c->slot[at].mem;
    c->slot[at].mem = mem;
    c->slot[at].dev = dev;
    c->slot[at].bytes = bytes;
    c->slot[at].flags = flags;
    c->slot[at].age = ++c->clock;
    pthread_mutex_unlock(&c->lock);
    clf__metrics_free(fl, dev, bytes); /* kept: counted as free (see the top) */
    for (size_t i = 0; i < nevict; i++)
        clReleaseMemObject(evict[i]);
}

static void cache_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    struct clf__bufcache *c = state;
    for (size_t i = 0; i < CLF__BUFCACHE_SLOTS; i++)
        if (c->slot[i].mem)
            clReleaseMemObject(c->slot[i].mem); /* counted as freed when kept */
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* ---- per-device threads ---------------------------------------------------------------- */

/*
 * The fleet's persistent per-device threads: the host thread that drives each device in a
 * launch (worker.c runs on it). Made on a device's first launch and kept, sleeping on a
 * condition variable, until the fleet's teardown (the pool's finalizer, core/device.c): a
 * launch then hands its workers to threads that already exist instead of creating and
 * joining one per device (about 7 us each on an idle host, and a scheduler round trip more on
 * a busy one, against a 15 us enqueue-and-finish round trip of a small kernel; issue 14).
 *
 * One job at a time per thread: launches run one at a time per fleet (clf__turn_begin()), and
 * clf__devthread_run() waits should the thread still be busy. Everything a job and its
 * submitter share is handed over under the pool's mutex, so the job sees what was written
 * before it was posted and the submitter what the job wrote once clf__devthread_wait()
 * returns. A device's thread is a plain pthread: the one thread-local state of the library,
 * the detail behind clf_last_error(), is copied into the worker's report by worker.c.
 */

typedef struct devthread {
    struct clf__devpool *pool;
    pthread_t thread;
    int started, stop;
    int busy;                /* a job was posted and has not returned */
    void *(*fn)(void *);     /* the posted job, NULL once taken */
    void *arg;
    pthread_cond_t go, done; /* a job or stop was posted; the job returned */
} devthread;

struct clf__devpool {
    pthread_mutex_t lock;
    size_t n;
    devthread *t; /* one per fleet device */
};

/* Set on a device thread: a job that posts to a device thread (an array launch from a task)
 * runs its work itself instead of waiting for a thread that may be its own. */
static _Thread_local int on_devthread;

int clf__devthread_self(void)
{
    return on_devthread;
}

static void *devthread_main(void *arg)
{
    devthread *t = arg;
    on_devthread = 1;
    pthread_mutex_t *lock = &t->pool->lock;
    /* "clf-dev3": the fleet device it drives, for debuggers and profilers (at most 15
     * characters; a failure only loses the name). */
    char name[16];
    snprintf(name, sizeof name, "clf-dev%zu", (size_t)(t - t->pool->t) % 100000000u);
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(lock);
    for (;;) {
        while (!t->fn && !t->stop)
            pthread_cond_wait(&t->go, lock);
        if (!t->fn)
            break; /* stop, and nothing posted */
        void *(*fn)(void *) = t->fn;
        void *a = t->arg;
        t->fn = NULL;
        pthread_mutex_unlock(lock);
        fn(a);
        pthread_mutex_lock(lock);
        t->busy = 0;
        pthread_cond_broadcast(&t->done);
    }
    pthread_mutex_unlock(lock);
    return NULL;
}

static void *pool_create(clf_fleet *fl)
{
    struct clf__devpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = fl->ndev;
    p->t = calloc(fl->ndev ? fl->ndev : 1, sizeof *p->t);
    if (!p->t || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->t);
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < p->n; i++) {
        p->t[i].pool = p;
        pthread_cond_init(&p->t[i].go, NULL);
        pthread_cond_init(&p->t[i].done, NULL);
    }
    return p;
}

static void pool_fini(clf_fleet *fl, void *state);

/* The pool is the fleet's state of this file (core/device.c), stopped at the teardown once
 * the launches have run (after the launch state's finalizer, CLF__STATE_DRAIN). */
static const clf__state_key pool_key = {"launch threads", CLF__STATE_BEFORE_XFER, pool_create,
                                        pool_fini};

/* The fleet's pool, made on first use (NULL: out of memory). */
static struct clf__devpool *pool_of(clf_fleet *fl)
{
    return clf__fleet_state(fl, &pool_key);
}

int clf__devthread_run(clf_fleet *fl, size_t dev, void *(*fn)(void *), void *arg)
{
    struct clf__devpool *p = pool_of(fl);
    if (!p || dev >= p->n)
        return -1;
    devthread *t = &p->t[dev];
    pthread_mutex_lock(&p->lock);
    while (t->busy)
        pthread_cond_wait(&t->done, &p->lock);
    if (!t->started) {
        if (pthread_create(&t->thread, NULL, devthread_main, t) != 0) {
            pthread_mutex_unlock(&p->lock);
            return -1;
        }
        t->started = 1;
    }
    t->fn = fn;
    t->arg = arg;
    t->busy = 1;
    pthread_cond_signal(&t->go);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void clf__devthread_wait(clf_fleet *fl, size_t dev)
{
    struct clf__devpool *p = clf__fleet_state_find(fl, &pool_key);
    if (!p || dev >= p->n)
        return;
    devthread *t = &p->t[dev];
    pthread_mutex_lock(&p->lock);
    while (t->busy)
        pthread_cond_wait(&t->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void pool_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    struct clf__devpool *p = state;
    for (size_t i = 0; i < p->n; i++) {
        devthread *t = &p->t[i];
        pthread_mutex_lock(&p->lock);
        t->stop = 1;
        pthread_cond_signal(&t->go);
        int started = t->started;
        pthread_mutex_unlock(&p->lock);
        if (started)
            pthread_join(t->thread, NULL);
        pthread_cond_destroy(&t->go);
        pthread_cond_destroy(&t->done);
    }
    pthread_mutex_destroy(&p->lock);
    free(p->t);
    free(p);
}

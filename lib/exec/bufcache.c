/*
 * Device buffers kept between launches. A new buffer costs PoCL about 30 us on its first
 * use (allocation and first touch), twice the whole enqueue-and-finish round trip of a
 * 4,096-float kernel; iterative codes launch thousands of such kernels on arrays of the same
 * sizes. So the buffers a launch's workers release go to a small per-fleet cache, keyed by
 * device, flags and size, and the next launch's workers take them back instead of creating
 * new ones (worker.c, clf__worker_device_alloc()).
 *
 * Only small buffers are kept (CLF__BUFCACHE_MAX_BYTES each, CLF__BUFCACHE_SLOTS in all, the
 * oldest evicted): for a large array the copies dominate, and idle memory held on a device is
 * memory no one else can use: at most 32 MiB per fleet. The fleet's metrics count a buffer as
 * freed when it is kept and allocated again when it is taken (so their current memory is
 * the launches' working memory, as before: idle kept buffers do not show there), and a kept
 * buffer counts against no launch's budget until taken.
 * Buffers are only put back once every command of their launch has completed (the workers'
 * teardown, after the launch's last wait), and launches run one at a time per fleet; the
 * cache has its lock all the same, as GEMM and launches may interleave. It is the fleet's state
 * of this file (core/state.c), released at the teardown once the launches have run.
 */
#include "exec.h"

#include <stdlib.h>

#define CLF__BUFCACHE_SLOTS 32
#define CLF__BUFCACHE_MAX_BYTES ((size_t)1 << 20)

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

void clf__bufcache_put(clf_fleet *fl, size_t dev, cl_mem mem)
{
    cl_mem_flags flags = 0;
    size_t bytes = 0;
    cl_mem evict = NULL;
    if (clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS ||
        bytes > CLF__BUFCACHE_MAX_BYTES) {
        clReleaseMemObject(mem); /* not kept */
        clf__metrics_free(fl, dev, bytes);
        return;
    }
    struct clf__bufcache *c = clf__fleet_state(fl, &cache_key);
    if (!c) {
        clReleaseMemObject(mem);
        clf__metrics_free(fl, dev, bytes);
        return;
    }
    pthread_mutex_lock(&c->lock);
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
        evict = c->slot[at].mem;
    c->slot[at].mem = mem;
    c->slot[at].dev = dev;
    c->slot[at].bytes = bytes;
    c->slot[at].flags = flags;
    c->slot[at].age = ++c->clock;
    pthread_mutex_unlock(&c->lock);
    clf__metrics_free(fl, dev, bytes); /* kept: counted as free (see the top) */
    if (evict)
        clReleaseMemObject(evict);
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

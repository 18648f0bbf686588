/* Per-device buffers and host<->device copies. */
#include "core.h"

#include <stdlib.h>
#include <string.h>

clf_status clf_buffer_create(clf_buffer **out, clf_fleet *fleet, size_t device, size_t size,
                             unsigned flags)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_buffer_create: out is NULL");
    *out = NULL;
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (size == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf_buffer_create: size is zero");
    if (flags & ~(unsigned)(CLF_MEM_READ_ONLY | CLF_MEM_WRITE_ONLY) ||
        (flags & CLF_MEM_READ_ONLY && flags & CLF_MEM_WRITE_ONLY))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_buffer_create: bad flags 0x%x", flags);
    struct clf__device *d = &fleet->dev[device];
    if (size > d->info.max_alloc)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "buffer of %zu bytes exceeds the maximum allocation of %llu bytes on "
                         "device %zu '%s'",
                         size, (unsigned long long)d->info.max_alloc, device, d->info.name);
    cl_mem_flags f = flags & CLF_MEM_READ_ONLY    ? CL_MEM_READ_ONLY
                     : flags & CLF_MEM_WRITE_ONLY ? CL_MEM_WRITE_ONLY
                                                  : CL_MEM_READ_WRITE;
    clf_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "buffer: out of memory");
    /* Counted as the device's memory (clf_buffer_destroy() gives it back). Buffers are
     * failed by their own fault class only (doc/14-reliability.md), never by a failed device. */
    clf__cmd c = CLF__CMD(fleet, device, NULL, NULL);
    c.flags = CLF__CMD_NO_FAULT;
    st = clf__cmd_buffer(&c, f, size, NULL, &b->mem);
    if (st != CLF_SUCCESS) {
        free(b);
        return st;
    }
    b->fleet = fleet;
    clf__fleet_ref(fleet);
    b->holds_fleet = 1;
    b->device = device;
    b->size = size;
    *out = b;
    return CLF_SUCCESS;
}

void clf_buffer_destroy(clf_buffer *b)
{
    if (!b)
        return;
    /* OpenCL keeps the memory alive until the commands that use it finish. Un-counted as
     * clf__cmd_buffer() counted it. */
    clf__cmd_release(&CLF__CMD(b->fleet, b->device, NULL, NULL), b->mem, b->size);
    clf_fleet *fl = b->holds_fleet ? b->fleet : NULL;
    free(b);
    if (fl)
        clf__fleet_unref(fl); /* last: it may tear the fleet down */
}

size_t clf_buffer_size(const clf_buffer *b)
{
    return b ? b->size : 0;
}

size_t clf_buffer_device(const clf_buffer *b)
{
    return b ? b->device : 0;
}

/* The region [offset, offset + size) must lie in the buffer. */
static clf_status check_region(const clf_buffer *b, size_t offset, size_t size, const void *p,
                               const char *fn)
{
    if (!b)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: buffer is NULL", fn);
    if (!p)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: host pointer is NULL", fn);
    if (size == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: size is zero", fn);
    size_t end;
    if (clf__add_overflow(offset, size, &end))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: offset %zu + size %zu overflows", fn,
                         offset, size);
    if (end > b->size)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "%s: region [%zu, %zu) outside the buffer of %zu bytes", fn, offset,
                         end, b->size);
    return CLF_SUCCESS;
}

static clf_status transfer(clf_buffer *b, int write, size_t offset, size_t size, void *host,
                           int blocking, clf_event **out_event)
{
    const char *fn = write ? (blocking ? "clf_buffer_write" : "clf_buffer_write_async")
                           : (blocking ? "clf_buffer_read" : "clf_buffer_read_async");
    if (out_event)
        *out_event = NULL;
    clf_status st = check_region(b, offset, size, host, fn);
    if (st != CLF_SUCCESS)
        return st;
    struct clf__device *d = &b->fleet->dev[b->device];
    /* $CLFLEET_FAULT_INJECT's call=buffer rules (the MPI layer's tests fail one rank's
     * reads and writes with them). */
    cl_int ferr = CLF__FAULT(b->fleet, b->device, CLF__FAULT_BUFFER);
    if (ferr != CL_SUCCESS)
        return clf__cl_fail(ferr, write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", d);
    cl_event ev = NULL;
    /* A blocking one is counted when it returns, an asynchronous one when it completes; the
     * path flushes an asynchronous one (start it now, not at the next blocking call). */
    clf__cmd c = CLF__CMD(b->fleet, b->device, d->transfer, NULL);
    c.flags = (blocking ? CLF__CMD_BLOCKING : 0) | CLF__CMD_NO_FAULT; /* the rule is above */
    c.ev = &ev;
    st = write ? clf__cmd_write(&c, b->mem, offset, size, host)
               : clf__cmd_read(&c, b->mem, offset, size, host);
    if (st != CLF_SUCCESS)
        return st;
    return clf__event_wrap(ev, out_event);
}

clf_status clf_buffer_write(clf_buffer *b, size_t offset, size_t size, const void *src)
{
    return transfer(b, 1, offset, size, (void *)src, 1, NULL);
}

clf_status clf_buffer_read(clf_buffer *b, size_t offset, size_t size, void *dst)
{
    return transfer(b, 0, offset, size, dst, 1, NULL);
}

clf_status clf_buffer_write_async(clf_buffer *b, size_t offset, size_t size, const void *src,
                                  clf_event **out_event)
{
    return transfer(b, 1, offset, size, (void *)src, 0, out_event);
}

clf_status clf_buffer_read_async(clf_buffer *b, size_t offset, size_t size, void *dst,
                                 clf_event **out_event)
{
    return transfer(b, 0, offset, size, dst, 0, out_event);
}

clf_status clf_buffer_map(void **out, clf_buffer *b, size_t offset, size_t size,
                          unsigned flags)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_buffer_map: out is NULL");
    *out = NULL;
    clf_status st = check_region(b, offset, size, out, "clf_buffer_map");
    if (st != CLF_SUCCESS)
        return st;
    unsigned rw = CLF_MAP_READ | CLF_MAP_WRITE;
    if (!(flags & rw) || (flags & ~(rw | CLF_MAP_DISCARD)) ||
        ((flags & CLF_MAP_DISCARD) && flags != (CLF_MAP_WRITE | CLF_MAP_DISCARD)))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_buffer_map: flags 0x%x (CLF_MAP_READ and/or CLF_MAP_WRITE, or "
                         "CLF_MAP_WRITE | CLF_MAP_DISCARD)", flags);
    cl_map_flags f = (flags & CLF_MAP_DISCARD)   ? CL_MAP_WRITE_INVALIDATE_REGION
                     : (flags & rw) == rw        ? CL_MAP_READ | CL_MAP_WRITE
                     : (flags & CLF_MAP_WRITE)   ? CL_MAP_WRITE
                                                 : CL_MAP_READ;
    struct clf__device *d = &b->fleet->dev[b->device];
    cl_int ferr = CLF__FAULT(b->fleet, b->device, CLF__FAULT_BUFFER); /* as transfer() */
    if (ferr != CL_SUCCESS)
        return clf__cl_fail(ferr, "clEnqueueMapBuffer", d);
    cl_event ev = NULL;
    clf__cmd c = CLF__CMD(b->fleet, b->device, d->transfer, "clf_buffer_map");
    c.flags = CLF__CMD_BLOCKING | CLF__CMD_NO_FAULT;
    c.ev = &ev;
    st = clf__cmd_map(&c, b->mem, f, offset, size, out);
    if (ev)
        clReleaseEvent(ev);
    if (st == CLF_SUCCESS)
        __atomic_add_fetch(&b->maps, 1, __ATOMIC_RELAXED);
    return st;
}

clf_status clf_buffer_unmap(clf_buffer *b, void *ptr)
{
    if (!b || !ptr)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_buffer_unmap: %s is NULL",
                         b ? "ptr" : "buffer");
    if (__atomic_load_n(&b->maps, __ATOMIC_RELAXED) <= 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_buffer_unmap: the buffer is not mapped (clf_buffer_map())");
    struct clf__device *d = &b->fleet->dev[b->device];
    cl_event ev = NULL;
    clf__cmd c = CLF__CMD(b->fleet, b->device, d->transfer, "clf_buffer_unmap");
    c.flags = CLF__CMD_NO_FAULT;
    c.ev = &ev;
    clf_status st = clf__cmd_unmap(&c, b->mem, ptr);
    if (st != CLF_SUCCESS && c.err == CL_INVALID_VALUE && !c.injected)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "clf_buffer_unmap: %p is not a mapping "
                         "of this buffer (clf_buffer_map())", ptr);
    if (st != CLF_SUCCESS)
        return st;
    __atomic_sub_fetch(&b->maps, 1, __ATOMIC_RELAXED);
    clf_event e = {.ev = ev};
    st = clf_event_wait(&e);
    clReleaseEvent(ev);
    return st;
}

clf_status clf_buffer_fill(clf_buffer *b, const void *pattern, size_t pattern_size,
                           size_t offset, size_t size)
{
    clf_status st = check_region(b, offset, size, pattern, "clf_buffer_fill");
    if (st != CLF_SUCCESS)
        return st;
    if (pattern_size == 0 || pattern_size > 128 || (pattern_size & (pattern_size - 1)))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_buffer_fill: pattern size %zu is not a power of two up to 128",
                         pattern_size);
    if (offset % pattern_size || size % pattern_size)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_buffer_fill: offset %zu and size %zu must be multiples of the "
                         "pattern size %zu",
                         offset, size, pattern_size);
    struct clf__device *d = &b->fleet->dev[b->device];
    cl_event ev;
    clf__cmd c = CLF__CMD(b->fleet, b->device, d->transfer, NULL);
    c.flags = CLF__CMD_NO_METRICS | CLF__CMD_NO_FAULT; /* on the timeline only, below */
    c.ev = &ev;
    st = clf__cmd_fill(&c, b->mem, pattern, pattern_size, offset, size);
    if (st != CLF_SUCCESS)
        return st;
    clf_event e = {.ev = ev};
    st = clf_event_wait(&e);
    if (st == CLF_SUCCESS && clf__trace_on(b->fleet)) {
        clf__rec r = {0};
        r.kind = CLF__REC_FILL;
        r.flags = CLF__REC_TRACE_ONLY;
        r.bytes = size;
        if (clf__event_profile(ev, &r.t0, &r.t1))
            clf__metrics_record(b->fleet, b->device, &r, 1);
    }
    clReleaseEvent(ev);
    return st;
}

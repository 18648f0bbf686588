/*
 * Direct device-to-device paths: AMD's clEnqueueCopyBufferP2PAMD, and CUDA peer copies
 * through CUDA memory that OpenCL imports (cl_khr_external_memory_opaque_fd).
 *
 * The CUDA path is tried only when some device is NVIDIA's and is enabled only after a
 * self-test per device (written through OpenCL, read back through CUDA); otherwise the
 * fleet says why in clf_transfer_cuda_status(). Ordinary clf_buffers are not CUDA memory,
 * so a copy goes through bounce buffers, chunk by chunk: a device-local copy into the
 * source's bounce slot, a CUDA peer copy into the destination's, and a device-local copy
 * out, pipelined over the slots. The host orders the two APIs: it waits for the OpenCL
 * events before the (synchronous) CUDA copy, on the thread that runs the copy, never in a
 * callback.
 */
#include "transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- AMD ------------------------------------------------------------------------------ */

static void amd_init(clf_fleet *fl, size_t i)
{
    clf__xdev *xd = &fl->xfer->dev[i];
    struct clf__device *d = &fl->dev[i];
    if (!xd->pd.amd_p2p)
        return;
    void *fn = clGetExtensionFunctionAddressForPlatform(d->platform, "clEnqueueCopyBufferP2PAMD");
    cl_uint n = 0;
    /* The list has no size query with a NULL buffer: ask for the count first. */
    if (!fn || clGetDeviceInfo(d->id, CL_DEVICE_NUM_P2P_DEVICES_AMD, sizeof n, &n, NULL) !=
                   CL_SUCCESS) {
        xd->pd.amd_p2p = 0; /* advertised but unusable: never chosen */
        return;
    }
    *(void **)&xd->amd_copy = fn;
    cl_device_id *ids = n ? calloc(n, sizeof *ids) : NULL;
    xd->amd_peers = n ? calloc(n, sizeof *xd->amd_peers) : NULL;
    if (!ids || !xd->amd_peers ||
        clGetDeviceInfo(d->id, CL_DEVICE_P2P_DEVICES_AMD, n * sizeof *ids, ids, NULL) !=
            CL_SUCCESS)
        n = 0;
    size_t np = 0;
    for (cl_uint k = 0; k < n; k++)
        for (size_t j = 0; j < fl->ndev; j++)
            if (j != i && fl->dev[j].id == ids[k])
                xd->amd_peers[np++] = j;
    xd->pd.amd_peers = xd->amd_peers;
    xd->pd.namd_peers = np;
    free(ids);
}

static clf_status amd_enqueue(clf__copy *c, const cl_event *wait, cl_uint nwait, cl_event *ev)
{
    struct clf__device *A = clf__xdevice(c, 0), *B = clf__xdevice(c, 1);
    cl_command_queue q = clf__copy_queue(c, 0);
    if (A->ctx == B->ctx) {
        /* The extension copies between contexts; in one context the runtime's own copy
         * between devices takes the peer path itself. Counted by the caller (transfer.c). */
        clf__cmd cmd = CLF__CMD(c->fleet, c->sdev, q, NULL);
        cmd.flags = CLF__CMD_NO_METRICS | CLF__CMD_NO_FLUSH | CLF__CMD_NO_FAULT; /* clf_copy() */
        cmd.nwait = nwait;
        cmd.wait = wait;
        cmd.ev = ev;
        return clf__cmd_copy(&cmd, c->src, c->dst, c->soff, c->doff, c->size);
    }
    cl_int err = c->fleet->xfer->dev[c->sdev].amd_copy(q, c->src, c->dst, c->soff, c->doff,
                                                       c->size, nwait, wait, ev);
    return err == CL_SUCCESS ? CLF_SUCCESS : clf__cl_fail(err, "clEnqueueCopyBufferP2PAMD", A);
}

/* On the source's queue: the wait list usually guards the source (its producer). */
const clf__path_ops clf__path_amd_p2p = {"amd-p2p", 1, amd_enqueue, NULL};

/* ---- CUDA: importing its memory into OpenCL --------------------------------------------- */

/*
 * Tests only: $CLFLEET_TEST_CUDA_EMULATE lists PCI addresses ("0000:3b:00,0000:af:00") that
 * fleet devices 0, 1, ... take as NVIDIA devices, and "imports" an fd by mapping it and
 * wrapping the pages in a CL_MEM_USE_HOST_PTR buffer, which CPU drivers use in place. With
 * the stand-in libcuda of the tests (memfd-backed allocations), that runs the whole CUDA
 * path on PoCL.
 */
static const char *emulated(void)
{
    const char *e = getenv("CLFLEET_TEST_CUDA_EMULATE");
    return e && *e ? e : NULL;
}
/* Read once, at fleet creation (the variable may change later). */
#define EMULATED(fl) ((fl)->xfer->cuda_emulated)

typedef struct emu_map {
    void *p;
    size_t n;
} emu_map;

static void CL_CALLBACK emu_unmap(cl_mem m, void *user)
{
    (void)m;
    emu_map *em = user;
    munmap(em->p, em->n);
    free(em);
}

static clf_status emu_import(clf_fleet *fl, size_t dev, int own, size_t size, cl_mem *out)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
    close(own);
    emu_map *em = malloc(sizeof *em);
    if (p == MAP_FAILED || !em) {
        free(em);
        if (p != MAP_FAILED)
            munmap(p, size);
        return clf__fail(CLF_ERROR_UNSUPPORTED, "emulated CUDA import: mmap failed");
    }
    /* Not counted as device memory (the CUDA allocation is the caller's). */
    clf__cmd c = CLF__CMD(fl, dev, NULL, "emulated CUDA import");
    c.flags = CLF__CMD_NO_METRICS | CLF__CMD_NO_FAULT;
    cl_mem m;
    clf_status st = clf__cmd_buffer(&c, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size, p, &m);
    cl_int err = c.err;
    if (st == CLF_SUCCESS) {
        em->p = p;
        em->n = size;
        err = clSetMemObjectDestructorCallback(m, emu_unmap, em);
        if (err == CL_SUCCESS) {
            *out = m;
            return CLF_SUCCESS;
        }
        clReleaseMemObject(m);
    }
    munmap(p, size);
    free(em);
    if (st != CLF_SUCCESS)
        return st;
    return clf__cl_fail(err, "clSetMemObjectDestructorCallback (emulated CUDA import)",
                        &fl->dev[dev]);
}

/* Import a CUDA allocation's fd (taking it) as a buffer on fleet device i. */
static clf_status import_fd(clf_fleet *fl, size_t i, int fd, size_t size, cl_mem *out)
{
    struct clf__device *d = &fl->dev[i];
    *out = NULL;
    int own = dup(fd);
    close(fd);
    if (own < 0)
        return clf__fail(CLF_ERROR_UNSUPPORTED, "CUDA import on device %zu: dup() failed", i);
    if (EMULATED(fl))
        return emu_import(fl, i, own, size, out);
    cl_mem_properties props[] = {
        CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, (cl_mem_properties)own,
        CL_MEM_DEVICE_HANDLE_LIST_KHR,           (cl_mem_properties)(uintptr_t)d->id,
        CL_MEM_DEVICE_HANDLE_LIST_END_KHR,       0};
    cl_int err;
    cl_mem m = clCreateBufferWithProperties(d->ctx, props, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err != CL_SUCCESS) {
        close(own); /* not taken by the driver */
        return clf__cl_fail(err, "clCreateBufferWithProperties (CUDA import)", d);
    }
    *out = m;
    return CLF_SUCCESS;
}

/* Acquire or release imported buffers on q (when the platform has the calls); the
 * commands are ordered by the in-order queue. */
static clf_status ext_mem(clf_fleet *fl, size_t i, int acquire, cl_mem m)
{
    clf__xdev *xd = &fl->xfer->dev[i];
    clf__ext_mem_fn fn = acquire ? xd->acquire : xd->release;
    if (!fn)
        return CLF_SUCCESS;
    cl_int err = fn(fl->dev[i].copyq, 1, &m, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err,
                            acquire ? "clEnqueueAcquireExternalMemObjectsKHR"
                                    : "clEnqueueReleaseExternalMemObjectsKHR",
                            &fl->dev[i]);
    return CLF_SUCCESS;
}

typedef struct selftest_arg {
    clf_fleet *fl;
    size_t device;
} selftest_arg;

/* The OpenCL half of the self-test (see clf__cuda_selftest). */
static clf_status selftest_write(void *user, int fd, size_t size, const void *data, size_t len)
{
    selftest_arg *a = user;
    struct clf__device *d = &a->fl->dev[a->device];
    cl_mem m;
    clf_status st = import_fd(a->fl, a->device, fd, size, &m);
    if (st != CLF_SUCCESS)
        return st;
    CLF__TRY(st, ext_mem(a->fl, a->device, 1, m));
    clf__cmd c = CLF__CMD(a->fl, a->device, d->copyq, "CUDA self-test");
    c.flags = CLF__CMD_NO_METRICS | CLF__CMD_BLOCKING | CLF__CMD_NO_FAULT;
    st = clf__cmd_write(&c, m, 0, len, data);
    clf_status rst = ext_mem(a->fl, a->device, 0, m);
    if (st == CLF_SUCCESS)
        st = rst;
out:
    clFinish(d->copyq);
    clReleaseMemObject(m);
    return st;
}

/* Whether the device can import opaque fds: extension and handle type. */
static int imports_opaque_fd(const clf_fleet *fl, const struct clf__device *d)
{
    if (EMULATED(fl))
        return 1;
    if (!clf__ext_listed(d->extensions, "cl_khr_external_memory_opaque_fd"))
        return 0;
    size_t bytes = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR, 0, NULL,
                        &bytes) != CL_SUCCESS ||
        bytes == 0)
        return 0;
    cl_uint *types = malloc(bytes);
    int found = 0;
    if (types && clGetDeviceInfo(d->id, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR,
                                 bytes, types, NULL) == CL_SUCCESS)
        for (size_t k = 0; k < bytes / sizeof *types; k++)
            found |= types[k] == CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR;
    free(types);
    return found;
}

/* Append to the status text (always NUL-terminated, truncated when long). */
static void note(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

static void cuda_init(clf_fleet *fl)
{
    struct clf__xfer *x = fl->xfer;
    char *why = x->cuda_status;
    const size_t cap = sizeof x->cuda_status;
    size_t nvidia = 0;
    const char *emu = emulated();
    x->cuda_emulated = emu != NULL;
    for (size_t i = 0; emu && *emu && i < fl->ndev; i++) {
        clf__path_dev *pd = &x->dev[i].pd;
        int used = 0;
        if (sscanf(emu, "%x:%x:%x%n", &pd->pci_domain, &pd->pci_bus, &pd->pci_device, &used) !=
            3)
            break;
        pd->pci_function = 0;
        pd->pci_known = 1;
        x->dev[i].nvidia = 1;
        emu += used;
        emu += *emu == ',';
    }
    for (size_t i = 0; i < fl->ndev; i++)
        nvidia += x->dev[i].nvidia != 0;
    if (!nvidia) {
        snprintf(why, cap, "off: no NVIDIA device");
        return;
    }
    if (x->disabled & CLF__PATH_BIT(CLF__PATH_CUDA_P2P)) {
        snprintf(why, cap, "off: disabled by CLFLEET_TRANSFER or the transfer option (not tried)");
        return;
    }
    if (clf__cuda_load() != CLF_SUCCESS) {
        snprintf(why, cap, "off: %s", clf__cuda_reason());
        return;
    }
    int ncuda = clf__cuda_device_count();
    x->env.ncuda = ncuda > 0 ? (size_t)ncuda : 0;
    if (x->env.ncuda) {
        x->cuda_peer = calloc(x->env.ncuda * x->env.ncuda, 1);
        if (!x->cuda_peer) {
            snprintf(why, cap, "off: out of memory");
            return;
        }
        for (int a = 0; a < ncuda; a++)
            for (int b = 0; b < ncuda; b++)
                x->cuda_peer[(size_t)a * x->env.ncuda + (size_t)b] =
                    (unsigned char)clf__cuda_can_access_peer(a, b);
    }
    x->env.cuda_peer = x->cuda_peer;
    x->env.cuda_ok = 1;
    char detail[512] = "";
    size_t passed = 0;
    for (size_t i = 0; i < fl->ndev; i++) {
        clf__xdev *xd = &x->dev[i];
        struct clf__device *d = &fl->dev[i];
        if (!xd->nvidia)
            continue;
        if (!xd->pd.pci_known) {
            note(detail, sizeof detail, "; device %zu: PCI address unknown", i);
            continue;
        }
        int ord = -1;
        if (clf__cuda_device_by_pci(&ord, xd->pd.pci_domain, xd->pd.pci_bus,
                                    xd->pd.pci_device) != CLF_SUCCESS) {
            note(detail, sizeof detail, "; device %zu: %s", i, clf_last_error());
            continue;
        }
        xd->pd.cuda_ordinal = ord;
        if (!imports_opaque_fd(fl, d)) {
            note(detail, sizeof detail,
                 "; device %zu: no cl_khr_external_memory_opaque_fd import", i);
            continue;
        }
        *(void **)&xd->acquire = clGetExtensionFunctionAddressForPlatform(
            d->platform, "clEnqueueAcquireExternalMemObjectsKHR");
        *(void **)&xd->release = clGetExtensionFunctionAddressForPlatform(
            d->platform, "clEnqueueReleaseExternalMemObjectsKHR");
        selftest_arg arg = {fl, i};
        if (clf__cuda_selftest(ord, selftest_write, &arg) != CLF_SUCCESS) {
            note(detail, sizeof detail, "; device %zu: self-test failed: %s", i,
                 clf_last_error());
            continue;
        }
        xd->pd.cuda_import = 1;
        passed++;
    }
    size_t pairs = 0;
    for (size_t s = 0; s < fl->ndev; s++)
        for (size_t t = 0; t < fl->ndev; t++)
            pairs += s != t && clf__path_select(&x->dev[s].pd, s, &x->dev[t].pd, t, &x->env, 0,
                                                NULL) == CLF__PATH_CUDA_P2P;
    snprintf(why, cap, "%s: CUDA driver %d, %d device(s); self-test passed on %zu of %zu NVIDIA "
             "device(s); %zu ordered pair(s) use it%s%s",
             pairs ? "on" : "off", clf__cuda_driver_version(), ncuda, passed, nvidia, pairs,
             x->cuda_emulated ? " (import emulated for tests)" : "", detail);
    clf_clear_error();
}

clf_status clf__peer_init(clf_fleet *fl)
{
    for (size_t i = 0; i < fl->ndev; i++)
        amd_init(fl, i);
    cuda_init(fl);
    return CLF_SUCCESS;
}

/* ---- CUDA: bounce buffers --------------------------------------------------------------- */

static void bounce_free(clf_fleet *fl, clf__bounce *b)
{
    clFinish(fl->dev[b->device].copyq); /* OpenCL is done with them before CUDA frees */
    for (size_t i = 0; i < CLF__XFER_SLOTS; i++) {
        if (b->mem[i])
            clReleaseMemObject(b->mem[i]);
        clf__cuda_mem_free(b->cu[i]);
    }
    free(b);
}

static clf_status bounce_new(clf_fleet *fl, size_t dev, clf__bounce **out)
{
    struct clf__xfer *x = fl->xfer;
    int ord = x->dev[dev].pd.cuda_ordinal;
    int *peers = calloc(fl->ndev, sizeof *peers);
    clf__bounce *b = calloc(1, sizeof *b);
    clf_status st = CLF_SUCCESS;
    if (!peers || !b)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "CUDA bounce: out of memory"));
    b->device = dev;
    /* Mapped for every other CUDA device of the fleet that may read or write it. */
    size_t np = 0;
    for (size_t j = 0; j < fl->ndev; j++) {
        int o = x->dev[j].pd.cuda_ordinal;
        int seen = o < 0 || o == ord || !x->dev[j].pd.cuda_import;
        for (size_t k = 0; k < np && !seen; k++)
            seen = peers[k] == o;
        if (!seen)
            peers[np++] = o;
    }
    for (size_t i = 0; i < CLF__XFER_SLOTS; i++) {
        int fd = -1;
        CLF__TRY(st, clf__cuda_alloc_exportable(&b->cu[i], &fd, ord, x->chunk, peers, np));
        CLF__TRY(st, import_fd(fl, dev, fd, clf__cuda_mem_size(b->cu[i]), &b->mem[i]));
    }
    *out = b;
    b = NULL;
out:
    if (b)
        bounce_free(fl, b);
    free(peers);
    return st;
}

static clf_status bounce_get(clf_fleet *fl, size_t dev, clf__bounce **out)
{
    struct clf__xfer *x = fl->xfer;
    pthread_mutex_lock(&x->lock);
    clf__bounce *b = x->dev[dev].bounces;
    if (b) {
        x->dev[dev].bounces = b->next;
        x->dev[dev].nbounces--;
    }
    pthread_mutex_unlock(&x->lock);
    if (b) {
        *out = b;
        return CLF_SUCCESS;
    }
    return bounce_new(fl, dev, out);
}

static void bounce_put(clf_fleet *fl, clf__bounce *b)
{
    struct clf__xfer *x = fl->xfer;
    clf__xdev *xd = &x->dev[b->device];
    pthread_mutex_lock(&x->lock);
    if (xd->nbounces < CLF__XFER_KEEP) {
        b->next = xd->bounces;
        xd->bounces = b;
        xd->nbounces++;
        b = NULL;
    }
    pthread_mutex_unlock(&x->lock);
    if (b)
        bounce_free(fl, b);
}

void clf__peer_fini(clf_fleet *fl)
{
    for (size_t i = 0; i < fl->ndev; i++) {
        clf__bounce *b = fl->xfer->dev[i].bounces;
        while (b) {
            clf__bounce *next = b->next;
            bounce_free(fl, b);
            b = next;
        }
        fl->xfer->dev[i].bounces = NULL;
    }
}

/* ---- CUDA: a copy ------------------------------------------------------------------------ */

/* One device-local leg: acquire the bounce slot, copy, release; *ev completes with it. */
static clf_status leg(clf_fleet *fl, size_t dev, cl_mem bounce, cl_mem from, size_t from_off,
                      cl_mem to, size_t to_off, size_t len, cl_event *ev)
{
    struct clf__device *d = &fl->dev[dev];
    clf_status st = ext_mem(fl, dev, 1, bounce);
    if (st != CLF_SUCCESS)
        return st;
    /* Counted by the caller (transfer.c). */
    clf__cmd c = CLF__CMD(fl, dev, d->copyq, "CUDA bounce");
    c.flags = CLF__CMD_NO_METRICS | CLF__CMD_NO_FLUSH | CLF__CMD_NO_FAULT; /* clf_copy() */
    c.ev = fl->xfer->dev[dev].release ? NULL : ev;
    st = clf__cmd_copy(&c, from, to, from_off, to_off, len);
    if (st != CLF_SUCCESS)
        return st;
    if (fl->xfer->dev[dev].release) {
        cl_int err = fl->xfer->dev[dev].release(d->copyq, 1, &bounce, 0, NULL, ev);
        if (err != CL_SUCCESS)
            return clf__cl_fail(err, "clEnqueueReleaseExternalMemObjectsKHR", d);
    }
    clFlush(d->copyq);
    return CLF_SUCCESS;
}

static clf_status wait_release(cl_event *ev)
{
    if (!*ev)
        return CLF_SUCCESS;
    clf_event e = {.ev = *ev};
    clf_status st = clf__event_wait_host(&e);
    clReleaseEvent(*ev);
    *ev = NULL;
    return st;
}

/* CLF_ERROR_UNSUPPORTED when the bounce buffers cannot be had: the copy is then staged. */
static clf_status cuda_run(clf__copy *c)
{
    clf_fleet *fl = c->fleet;
    clf__bounce *ba = NULL, *bb = NULL;
    if (bounce_get(fl, c->sdev, &ba) != CLF_SUCCESS ||
        bounce_get(fl, c->ddev, &bb) != CLF_SUCCESS) {
        if (ba)
            bounce_put(fl, ba);
        return CLF_ERROR_UNSUPPORTED; /* the caller stages instead */
    }
    const size_t S = CLF__XFER_SLOTS, chunk = fl->xfer->chunk;
    const size_t n = (c->size + chunk - 1) / chunk;
    cl_event in[CLF__XFER_SLOTS] = {0}, out[CLF__XFER_SLOTS] = {0};
    clf_status st = CLF_SUCCESS;
    size_t kin = 0;
    for (size_t kc = 0; kc < n && st == CLF_SUCCESS; kc++) {
        /* Source legs run ahead: slot kin % S of A is free once CUDA has copied chunk
         * kin - S out of it, which happened on this thread before chunk kc. */
        while (kin < n && kin < kc + S && st == CLF_SUCCESS) {
            size_t off = kin * chunk, len = c->size - off < chunk ? c->size - off : chunk;
            size_t slot = kin % S;
            st = leg(fl, c->sdev, ba->mem[slot], c->src, c->soff + off, ba->mem[slot], 0, len,
                     &in[slot]);
            kin++;
        }
        if (st != CLF_SUCCESS)
            break;
        size_t slot = kc % S, off = kc * chunk;
        size_t len = c->size - off < chunk ? c->size - off : chunk;
        st = wait_release(&in[slot]);
        if (st == CLF_SUCCESS)
            st = wait_release(&out[slot]); /* B's slot is free */
        if (st == CLF_SUCCESS)
            st = clf__cuda_copy_peer(bb->cu[slot], 0, ba->cu[slot], 0, len);
        if (st == CLF_SUCCESS)
            st = leg(fl, c->ddev, bb->mem[slot], bb->mem[slot], 0, c->dst, c->doff + off, len,
                     &out[slot]);
    }
    /* Whatever happened, nothing may still use the slots when they are handed back. */
    for (size_t i = 0; i < S; i++) {
        clf_status a = wait_release(&in[i]), b = wait_release(&out[i]);
        if (st == CLF_SUCCESS)
            st = a != CLF_SUCCESS ? a : b;
    }
    if (st != CLF_SUCCESS) { /* an acquire may have been queued without its leg */
        clFinish(fl->dev[c->sdev].copyq);
        clFinish(fl->dev[c->ddev].copyq);
    }
    bounce_put(fl, ba);
    bounce_put(fl, bb);
    return st;
}

const clf__path_ops clf__path_cuda_p2p = {"cuda-p2p", 0, NULL, cuda_run};

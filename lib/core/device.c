/*
 * The fleet handle's core: what each device is, what lives on the handle, and the OpenCL
 * objects behind it.
 *
 * - Device facts: name, vendor, memory, compute units, PCI address, extensions.
 * - The fleet's references (core.h): the last one tears the fleet down.
 * - Subsystems' state on a fleet: each layer above core keeps what it needs on a fleet (the
 *   launches' turn and caches, the collectives' program and scratch, GEMM's clBLAST
 *   registration) in a struct of its own, reached through a key it defines, as libuv's and
 *   hwloc's handles carry their users' data: the fleet holds a table of (key, state) pairs
 *   and knows none of them. The state is made on the subsystem's first use, with the key's
 *   create function, under the fleet's lock; the fleet's teardown runs the keys' finalizers
 *   phase by phase (core.h), in each phase the latest made first.
 * - The OpenCL handles behind clfleet objects (include/clfleet/opencl.h).
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clext.h"
#include "clfleet/opencl.h"

static void query_string(cl_device_id id, cl_device_info what, char *buf, size_t n)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(id, what, n, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[n - 1] = '\0';
}

static void query_platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t n)
{
    buf[0] = '\0';
    if (clGetPlatformInfo(p, what, n, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[n - 1] = '\0';
}

/* Fixed-size queries whose absence is not an error: the fact stays unknown. */
static int query_fixed(cl_device_id id, cl_device_info what, void *out, size_t n)
{
    return clGetDeviceInfo(id, what, n, out, NULL) == CL_SUCCESS;
}

static unsigned type_bit(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return CLF_DEVICE_GPU;
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return CLF_DEVICE_ACCELERATOR;
    if (t & CL_DEVICE_TYPE_CPU)
        return CLF_DEVICE_CPU;
    return CLF_DEVICE_CUSTOM;
}

/* The PCI address, from the Khronos extension first, then the vendors' own. */
static void query_pci(cl_device_id id, clf_device_info *info)
{
    const char *ext = info->extensions;
    if (clf__ext_listed(ext, "cl_khr_pci_bus_info")) {
        cl_device_pci_bus_info_khr pci;
        if (query_fixed(id, CL_DEVICE_PCI_BUS_INFO_KHR, &pci, sizeof pci)) {
            info->pci_known = 1;
            info->pci_domain = pci.pci_domain;
            info->pci_bus = pci.pci_bus;
            info->pci_device = pci.pci_device;
            info->pci_function = pci.pci_function;
            return;
        }
    }
    if (clf__ext_listed(ext, "cl_nv_device_attribute_query")) {
        cl_uint bus = 0, slot = 0, domain = 0;
        if (query_fixed(id, CL_DEVICE_PCI_BUS_ID_NV, &bus, sizeof bus) &&
            query_fixed(id, CL_DEVICE_PCI_SLOT_ID_NV, &slot, sizeof slot)) {
            /* The domain query is newer than the other two; 0 is right on most machines. */
            if (!query_fixed(id, CL_DEVICE_PCI_DOMAIN_ID_NV, &domain, sizeof domain))
                domain = 0;
            info->pci_known = 1;
            info->pci_domain = domain;
            info->pci_bus = bus;
            /* NVIDIA reports the slot as device << 3 | function. */
            info->pci_device = slot >> 3;
            info->pci_function = slot & 7;
            return;
        }
    }
    if (clf__ext_listed(ext, "cl_amd_device_attribute_query")) {
        cl_device_topology_amd topo;
        memset(&topo, 0, sizeof topo);
        if (query_fixed(id, CL_DEVICE_TOPOLOGY_AMD, &topo, sizeof topo) &&
            topo.raw.type == CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD) {
            info->pci_known = 1;
            info->pci_domain = 0;
            info->pci_bus = (unsigned char)topo.pcie.bus;
            info->pci_device = (unsigned char)topo.pcie.device;
            info->pci_function = (unsigned char)topo.pcie.function;
        }
    }
}

clf_status clf__device_query(cl_device_id id, cl_platform_id platform, clf_device_info *info,
                             char **extensions)
{
    memset(info, 0, sizeof *info);
    *extensions = NULL;
    query_string(id, CL_DEVICE_NAME, info->name, sizeof info->name);
    query_string(id, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    query_string(id, CL_DEVICE_VERSION, info->version, sizeof info->version);
    query_string(id, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    query_platform_string(platform, CL_PLATFORM_NAME, info->platform, sizeof info->platform);
    query_platform_string(platform, CL_PLATFORM_VENDOR, info->platform_vendor,
                          sizeof info->platform_vendor);

    cl_device_type t = 0;
    cl_int err = clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clGetDeviceInfo(CL_DEVICE_TYPE)", NULL);
    info->type = type_bit(t);
    if (sscanf(info->version, "OpenCL %u.%u", &info->cl_major, &info->cl_minor) != 2)
        info->cl_major = 1, info->cl_minor = 0;

    cl_ulong u64 = 0;
    cl_uint u32 = 0;
    cl_bool b = CL_FALSE;
    if (query_fixed(id, CL_DEVICE_GLOBAL_MEM_SIZE, &u64, sizeof u64))
        info->global_mem = u64;
    if (query_fixed(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &u64, sizeof u64))
        info->max_alloc = u64;
    if (query_fixed(id, CL_DEVICE_LOCAL_MEM_SIZE, &u64, sizeof u64))
        info->local_mem = u64;
    if (query_fixed(id, CL_DEVICE_MAX_COMPUTE_UNITS, &u32, sizeof u32))
        info->compute_units = u32;
    if (query_fixed(id, CL_DEVICE_MAX_CLOCK_FREQUENCY, &u32, sizeof u32))
        info->clock_mhz = u32;
    /* Deprecated in OpenCL 2.0 but still the only portable way to ask. */
    if (query_fixed(id, CL_DEVICE_HOST_UNIFIED_MEMORY, &b, sizeof b))
        info->host_unified = b == CL_TRUE;
    cl_device_fp_config fp = 0;
    if (query_fixed(id, CL_DEVICE_DOUBLE_FP_CONFIG, &fp, sizeof fp))
        info->fp64 = fp != 0;

    size_t n = 0;
    err = clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &n);
    if (err != CL_SUCCESS)
        n = 0;
    char *ext = malloc(n + 1);
    if (!ext)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "device extensions: out of memory");
    ext[0] = '\0';
    if (n && clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, n, ext, NULL) != CL_SUCCESS)
        ext[0] = '\0';
    ext[n] = '\0';
    info->extensions = ext;
    info->fp64 = info->fp64 || clf__ext_listed(ext, "cl_khr_fp64");
    query_pci(id, info);
    *extensions = ext;
    return CLF_SUCCESS;
}

clf_status clf_device_get_info(clf_device_info *out, const clf_fleet *fleet, size_t device)
{
    clf_status st = clf__check_device(fleet, device);
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_device_get_info: out is NULL");
    *out = fleet->dev[device].info;
    return CLF_SUCCESS;
}

int clf_device_has_extension(const clf_fleet *fleet, size_t device, const char *name)
{
    if (clf__check_device(fleet, device) != CLF_SUCCESS || !name)
        return 0;
    return clf__ext_listed(fleet->dev[device].extensions, name);
}

/* A fleet's references (core.h); the last one tears it down through the teardown its
 * creator registered (fleet.c), which finalizes every layer. */
void clf__fleet_ref(clf_fleet *fl)
{
    /* Whoever takes a reference holds one already (the caller's or a child's). */
    atomic_fetch_add_explicit(&fl->refs, 1, memory_order_relaxed);
}

void clf__fleet_unref(clf_fleet *fl)
{
    /* Release, so that the holders' last uses happen before the teardown; acquire, so that
     * the teardown sees them. */
    if (atomic_fetch_sub_explicit(&fl->refs, 1, memory_order_acq_rel) == 1)
        fl->teardown(fl);
}

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

static const struct clf__device *dev(const clf_fleet *fl, size_t i)
{
    return fl && i < fl->ndev ? &fl->dev[i] : NULL;
}

cl_device_id clf_cl_device(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->id : NULL;
}

cl_context clf_cl_context(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->ctx : NULL;
}

/*
 * The caller's queue on device i, made on first use (NULL if it cannot be made). Not
 * clfleet's own compute queue: an asynchronous launch enqueues its chunks from the
 * dispatcher after clf_launch_async() has returned, so on that queue they could land behind
 * a command of the caller's that waits for the launch (clf_event_cl_for()), and neither would
 * ever run. Its first command is a barrier after a marker of the compute queue: work the
 * caller queues there starts after what clfleet had queued, and after every
 * clf_device_wait_events() made before the queue was (as when the two were one queue).
 * Two threads may race to make it: the loser releases its queue and returns the winner's.
 */
cl_command_queue clf_cl_compute_queue(const clf_fleet *fl, size_t i)
{
    if (!dev(fl, i))
        return NULL;
    struct clf__device *d = (struct clf__device *)dev(fl, i);
    cl_command_queue q = atomic_load(&d->user);
    if (q)
        return q;
    cl_int err = CL_SUCCESS;
    if (d->info.cl_major >= 2) {
        cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
        q = clCreateCommandQueueWithProperties(d->ctx, d->id, props, &err);
    } else {
        q = clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
    }
    if (err != CL_SUCCESS || !q)
        return NULL;
    clf_fleet *f = (clf_fleet *)fl;
    cl_event m = NULL;
    clf__cmd mark = CLF__CMD(f, i, d->compute, "compute queue");
    clf__cmd bar = CLF__CMD(f, i, q, "caller's queue");
    mark.ev = &m;
    bar.nwait = 1;
    bar.wait = &m;
    if (clf__cmd_marker(&mark) != CLF_SUCCESS || clf__cmd_barrier(&bar) != CLF_SUCCESS) {
        if (m)
            clReleaseEvent(m);
        clReleaseCommandQueue(q);
        return NULL;
    }
    clReleaseEvent(m);
    cl_command_queue none = NULL;
    if (!atomic_compare_exchange_strong(&d->user, &none, q)) {
        clReleaseCommandQueue(q);
        q = none;
    }
    return q;
}

cl_command_queue clf_cl_transfer_queue(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->transfer : NULL;
}

cl_program clf_cl_program(const clf_program *p, size_t i)
{
    if (!p || !dev(p->fleet, i))
        return NULL;
    return p->prog[i];
}

cl_mem clf_cl_mem(const clf_buffer *b)
{
    return b ? b->mem : NULL;
}

cl_event clf_cl_event(const clf_event *e)
{
    return e ? e->ev : NULL;
}

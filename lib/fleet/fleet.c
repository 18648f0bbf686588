/*
 * The fleet: discovery across every OpenCL platform, selection, optional CPU
 * sub-devices, one context per platform (or per device), and three in-order
 * profiling queues per device (compute, transfer, and the copies the host drives).
 */
#include "fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A root device found during discovery. */
typedef struct found {
    cl_device_id id;
    cl_platform_id platform;
    unsigned platform_index;
    clf_device_info info;
    char *ext;
    int keep;
} found;

typedef struct discovery {
    cl_platform_id *platforms;
    cl_uint nplat;
    found *dev;
    size_t ndev;
} discovery;

static void discovery_free(discovery *d)
{
    for (size_t i = 0; i < d->ndev; i++)
        free(d->dev[i].ext);
    free(d->dev);
    free(d->platforms);
}

static clf_status discover(discovery *d)
{
    clf_status st = CLF_SUCCESS;
    cl_device_id *ids = NULL;
    memset(d, 0, sizeof *d);

    cl_int err = clGetPlatformIDs(0, NULL, &d->nplat);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no driver */ ||
        (err == CL_SUCCESS && d->nplat == 0))
        return clf__fail(CLF_ERROR_NO_PLATFORM,
                         "no OpenCL platform: is an ICD (e.g. pocl-opencl-icd) installed?");
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clGetPlatformIDs", NULL);
    d->platforms = calloc(d->nplat, sizeof *d->platforms);
    if (!d->platforms)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "discovery: out of memory");
    err = clGetPlatformIDs(d->nplat, d->platforms, NULL);
    if (err != CL_SUCCESS)
        CLF__TRY(st, clf__cl_fail(err, "clGetPlatformIDs", NULL));

    for (cl_uint p = 0; p < d->nplat; p++) {
        cl_uint n = 0;
        err = clGetDeviceIDs(d->platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n);
        if (err == CL_DEVICE_NOT_FOUND || n == 0)
            continue; /* an empty platform is not an error for the fleet */
        if (err != CL_SUCCESS)
            CLF__TRY(st, clf__cl_fail(err, "clGetDeviceIDs", NULL));
        found *grown = realloc(d->dev, (d->ndev + n) * sizeof *grown);
        free(ids);
        ids = calloc(n, sizeof *ids);
        if (!grown || !ids) {
            if (grown)
                d->dev = grown;
            CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "discovery: out of memory"));
        }
        d->dev = grown;
        err = clGetDeviceIDs(d->platforms[p], CL_DEVICE_TYPE_ALL, n, ids, NULL);
        if (err != CL_SUCCESS)
            CLF__TRY(st, clf__cl_fail(err, "clGetDeviceIDs", NULL));
        for (cl_uint i = 0; i < n; i++) {
            found *f = &d->dev[d->ndev];
            memset(f, 0, sizeof *f);
            f->id = ids[i];
            f->platform = d->platforms[p];
            f->platform_index = p;
            CLF__TRY(st, clf__device_query(ids[i], d->platforms[p], &f->info, &f->ext));
            f->info.platform_index = p;
            f->info.parent_index = -1;
            d->ndev++;
        }
    }
out:
    free(ids);
    if (st != CLF_SUCCESS)
        discovery_free(d);
    return st;
}

/* Apply the filter; without an explicit type, GPUs and accelerators, else CPUs. */
static size_t select_devices(discovery *d, const clf__filter *f)
{
    size_t kept = 0;
    for (int pass = 0; pass < 2 && kept == 0; pass++) {
        unsigned types = f->types;
        if (!types)
            types = pass == 0 ? (CLF_DEVICE_GPU | CLF_DEVICE_ACCELERATOR)
                              : (CLF_DEVICE_CPU | CLF_DEVICE_CUSTOM);
        else if (pass == 1)
            break;
        for (size_t i = 0; i < d->ndev; i++) {
            found *x = &d->dev[i];
            x->keep = (x->info.type & types) && clf__filter_match(f, &x->info, (unsigned)i);
            kept += x->keep != 0;
        }
    }
    return kept;
}

/* The device types the selection kept (to say why the others were left out). */
static unsigned kept_types(const discovery *d)
{
    unsigned t = 0;
    for (size_t i = 0; i < d->ndev; i++)
        if (d->dev[i].keep)
            t |= d->dev[i].info.type;
    return t;
}

/* Room for one device's reasons: every term may fail at once, each quoting a value. */
#define CLF__WHY_MAX 1024

/* Why device i was left out: the terms and fields it fails, else the default type rule (a
 * device that meets every term but was not kept is of a type the rule passed over). */
static const char *why_left_out(const discovery *d, const clf__filter *f, size_t i,
                                char why[CLF__WHY_MAX])
{
    if (clf__filter_why(f, &d->dev[i].info, (unsigned)i, why, CLF__WHY_MAX))
        return why;
    snprintf(why, CLF__WHY_MAX, "the default type rule (GPUs and accelerators first, else "
                                "CPUs; this fleet has %s devices)",
             kept_types(d) & (CLF_DEVICE_GPU | CLF_DEVICE_ACCELERATOR) ? "GPU or accelerator"
                                                                       : "CPU");
    return why;
}

/* index= naming a device that does not exist is an error, not a term that quietly matches
 * nothing: the caller counted the devices wrong, and the fleet would not be what was meant. */
static clf_status check_indices(const discovery *d, const clf__filter *f)
{
    char list[1024];
    size_t n = clf__filter_missing(f, d->ndev, list, sizeof list);
    if (n == 0)
        return CLF_SUCCESS;
    if (d->ndev == 0)
        return clf__fail(CLF_ERROR_NO_DEVICE,
                         "device selection index=%s: there is no device on %u platform(s)",
                         list, (unsigned)d->nplat);
    return clf__fail(CLF_ERROR_NO_DEVICE,
                     "device selection index=%s: no such device%s (there %s %zu device%s, "
                     "index 0%s%zu; clfleet-info --devices type=all lists them)",
                     list, n == 1 ? "" : "s", d->ndev == 1 ? "is" : "are", d->ndev,
                     d->ndev == 1 ? "" : "s", d->ndev == 1 ? "" : " to ",
                     d->ndev == 1 ? (size_t)0 : d->ndev - 1);
}

/* Nothing matched: say, per device, which term or option field excluded it. */
static clf_status refuse(const discovery *d, const clf__filter *f, const clf_fleet_options *o)
{
    const char *sel = o->devices ? o->devices : getenv("CLFLEET_DEVICES");
    if (sel && *sel)
        clf__fail(CLF_ERROR_NO_DEVICE,
                  "none of the %zu device(s) on %u platform(s) matches the selection (%s'%s')",
                  d->ndev, (unsigned)d->nplat, o->devices ? "" : "CLFLEET_DEVICES=", sel);
    else
        clf__fail(CLF_ERROR_NO_DEVICE,
                  "none of the %zu device(s) on %u platform(s) matches the options (no "
                  "selection string)",
                  d->ndev, (unsigned)d->nplat);
    for (size_t i = 0; i < d->ndev; i++) {
        char why[CLF__WHY_MAX];
        unsigned cu = d->dev[i].info.compute_units;
        clf__append_error("%s device %zu '%.64s' (%s, %u unit%s): excluded by %s",
                          i ? ";" : ":", i, d->dev[i].info.name,
                          clf_device_type_name(d->dev[i].info.type), cu, cu == 1 ? "" : "s",
                          why_left_out(d, f, i, why));
    }
    return CLF_ERROR_NO_DEVICE;
}

static clf_status add_device(clf_fleet *fl, cl_device_id id, const found *root, size_t root_index,
                             int sub)
{
    struct clf__device *dv = &fl->dev[fl->ndev];
    memset(dv, 0, sizeof *dv);
    dv->id = id;
    dv->platform = root->platform;
    dv->owns_id = sub;
    dv->index = fl->ndev;
    if (sub) {
        clf_status st = clf__device_query(id, root->platform, &dv->info, &dv->extensions);
        if (st != CLF_SUCCESS)
            return st;
    } else {
        dv->info = root->info;
        dv->extensions = strdup(root->ext);
        if (!dv->extensions)
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory");
    }
    dv->info.extensions = dv->extensions;
    dv->info.platform_index = root->platform_index;
    dv->info.is_sub_device = sub;
    dv->info.parent_index = sub ? (int)root_index : -1;
    fl->ndev++;
    return CLF_SUCCESS;
}

/* Split a CPU device; the sub-devices join the fleet in place of their parent. */
static clf_status split_device(clf_fleet *fl, const found *root, size_t root_index,
                               const clf__filter *f, size_t *cap)
{
    cl_device_partition_property props[CLF__MAX_SPLIT + 3];
    size_t np = 0;
    if (f->nsplit_counts) {
        props[np++] = CL_DEVICE_PARTITION_BY_COUNTS;
        for (size_t i = 0; i < f->nsplit_counts; i++)
            props[np++] = (cl_device_partition_property)f->split_counts[i];
        props[np++] = CL_DEVICE_PARTITION_BY_COUNTS_LIST_END;
    } else {
        props[np++] = CL_DEVICE_PARTITION_EQUALLY;
        props[np++] = (cl_device_partition_property)f->split_units;
    }
    props[np] = 0;

    cl_uint n = 0;
    cl_int err = clCreateSubDevices(root->id, props, 0, NULL, &n);
    if (err != CL_SUCCESS || n == 0)
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "cannot split device %zu '%s' (%u compute units) as asked: "
                         "clCreateSubDevices: %s (%d)",
                         root_index, root->info.name, root->info.compute_units,
                         clf__cl_error_name(err), (int)err);
    cl_device_id *subs = calloc(n, sizeof *subs);
    if (!subs)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory");
    err = clCreateSubDevices(root->id, props, n, subs, NULL);
    if (err != CL_SUCCESS) {
        free(subs);
        return clf__cl_fail(err, "clCreateSubDevices", NULL);
    }
    clf_status st = CLF_SUCCESS;
    struct clf__device *grown = realloc(fl->dev, (*cap + n) * sizeof *grown);
    if (!grown)
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory");
    else
        fl->dev = grown, *cap += n;
    /* Once a sub-device is in the fleet, clf_fleet_destroy() releases it;
     * the others are released here. */
    for (cl_uint i = 0; i < n; i++) {
        if (st == CLF_SUCCESS)
            st = add_device(fl, subs[i], root, root_index, 1);
        if (st == CLF_SUCCESS)
            continue;
        clReleaseDevice(subs[i]); /* never handed to the fleet */
    }
    free(subs);
    return st;
}

static clf_status create_queues(struct clf__device *d)
{
    cl_command_queue *q[] = {&d->compute, &d->transfer, &d->copyq};
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    int v2 = d->info.cl_major >= 2;
    cl_int err = CL_SUCCESS;
    for (size_t k = 0; k < sizeof q / sizeof *q && err == CL_SUCCESS; k++)
        *q[k] = v2 ? clCreateCommandQueueWithProperties(d->ctx, d->id, props, &err)
                   : clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
    return err == CL_SUCCESS ? CLF_SUCCESS
                             : clf__cl_fail(err, v2 ? "clCreateCommandQueueWithProperties"
                                                    : "clCreateCommandQueue",
                                            d);
}

/* One context per platform (or per device); devices keep fleet order. */
static clf_status create_contexts(clf_fleet *fl, int per_device)
{
    fl->ctx = calloc(fl->ndev, sizeof *fl->ctx);
    cl_device_id *ids = calloc(fl->ndev, sizeof *ids);
    clf_status st = CLF_SUCCESS;
    if (!fl->ctx || !ids)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory"));
    for (size_t i = 0; i < fl->ndev; i++) {
        if (fl->dev[i].ctx)
            continue;
        cl_uint n = 0;
        for (size_t j = i; j < fl->ndev; j++)
            if (j == i || (!per_device && fl->dev[j].platform == fl->dev[i].platform))
                ids[n++] = fl->dev[j].id;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         (cl_context_properties)fl->dev[i].platform, 0};
        cl_int err;
        cl_context c = clCreateContext(props, n, ids, NULL, NULL, &err);
        if (err != CL_SUCCESS)
            CLF__TRY(st, clf__cl_fail(err, "clCreateContext", &fl->dev[i]));
        fl->ctx[fl->nctx] = c;
        for (size_t j = i; j < fl->ndev; j++)
            if (j == i || (!per_device && fl->dev[j].platform == fl->dev[i].platform)) {
                fl->dev[j].ctx = c;
                fl->dev[j].info.context_index = (unsigned)fl->nctx;
            }
        fl->nctx++;
    }
    for (size_t i = 0; i < fl->ndev; i++)
        CLF__TRY(st, create_queues(&fl->dev[i]));
out:
    free(ids);
    return st;
}

/* Merge the option struct into the parsed selection string. */
static clf_status options_to_filter(const clf_fleet_options *o, clf__filter *f)
{
    memset(f, 0, sizeof *f);
    const char *sel = o->devices ? o->devices : getenv("CLFLEET_DEVICES");
    clf_status st = clf__filter_parse(f, sel);
    if (st != CLF_SUCCESS && !o->devices)
        return clf__prefix_error(st, "CLFLEET_DEVICES: ");
    if (st != CLF_SUCCESS)
        return st;
    if (o->device_types & ~(unsigned)CLF_DEVICE_ALL)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "device_types 0x%x has unknown bits",
                         o->device_types);
    if (o->require & ~(unsigned)(CLF_CAP_FP64 | CLF_CAP_HOST_UNIFIED))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "require 0x%x has unknown bits",
                         o->require);
    if (o->device_types)
        f->types = o->device_types, f->from_options |= CLF__FROM_TYPES;
    if (o->min_compute_units)
        f->min_cu = o->min_compute_units, f->from_options |= CLF__FROM_MIN_CU;
    f->require |= o->require;
    f->require_from_options = o->require;
    if (o->num_split_cpu_counts) {
        if (!o->split_cpu_counts)
            return clf__fail(CLF_ERROR_NULL_POINTER, "split_cpu_counts is NULL");
        if (o->num_split_cpu_counts > CLF__MAX_SPLIT)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "more than %d split counts",
                             CLF__MAX_SPLIT);
        for (size_t i = 0; i < o->num_split_cpu_counts; i++) {
            if (o->split_cpu_counts[i] == 0)
                return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "split count %zu is zero", i);
            f->split_counts[i] = o->split_cpu_counts[i];
        }
        f->nsplit_counts = o->num_split_cpu_counts;
        f->split_units = 0;
        f->from_options |= CLF__FROM_SPLIT;
    } else if (o->split_cpu_units) {
        f->split_units = o->split_cpu_units;
        f->nsplit_counts = 0;
        f->from_options |= CLF__FROM_SPLIT;
    }
    if (o->context_per_device)
        f->context_per_device = 1;
    return CLF_SUCCESS;
}

/*
 * Live fleets' slots: a fleet takes the lowest free one. Programs tag their builds with it
 * (program.c, device_options()), so two fleets alive at once never share a PoCL kernel
 * binary, and a process that makes one fleet at a time always gets slot 0 (and hits the
 * binary cache). Past 64 live fleets the slots count on, unique still.
 */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t slots_used;
static unsigned slot_next = 64;

static unsigned slot_take(void)
{
    pthread_mutex_lock(&slot_lock);
    unsigned s = 0;
    while (s < 64 && (slots_used >> s & 1))
        s++;
    if (s < 64)
        slots_used |= UINT64_C(1) << s;
    else
        s = slot_next++;
    pthread_mutex_unlock(&slot_lock);
    return s;
}

static void slot_give(unsigned s)
{
    pthread_mutex_lock(&slot_lock);
    if (s < 64)
        slots_used &= ~(UINT64_C(1) << s);
    pthread_mutex_unlock(&slot_lock);
}

static void fleet_free(clf_fleet *fl);

clf_status clf_fleet_create(clf_fleet **out, const clf_fleet_options *opts)
{
    static const clf_fleet_options defaults = CLF_FLEET_OPTIONS_INIT;
    clf_status st = CLF_SUCCESS;
    clf_fleet *fl = NULL;
    discovery d;
    clf__filter f;
    memset(&d, 0, sizeof d);

    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_fleet_create: out is NULL");
    *out = NULL;
    if (!opts)
        opts = &defaults;
    CLF__TRY(st, clf__check_version(NULL, opts->version, CLF_FLEET_OPTIONS_VERSION,
                                    "clf_fleet_options", "CLF_FLEET_OPTIONS_INIT"));
    CLF__TRY(st, clf__log_init());
    CLF__TRY(st, options_to_filter(opts, &f));
    /* A mistyped variable fails here, before any work, not at the first launch. */
    clf_strategy strategy = CLF_STRATEGY_AUTO;
    const char *senv = getenv("CLFLEET_STRATEGY");
    if (senv && senv[0] && clf_strategy_parse(&strategy, senv) != CLF_SUCCESS)
        CLF__TRY(st, clf__fail(CLF_ERROR_PARSE,
                               "CLFLEET_STRATEGY: unknown strategy '%.64s' (static, dynamic, "
                               "guided, memory-aware, auto)",
                               senv));
    if (strategy == CLF_STRATEGY_DEFAULT)
        strategy = CLF_STRATEGY_AUTO;
    int host_staging = CLF__HOST_STAGING_AUTO;
    CLF__TRY(st, clf__env_host_staging(getenv("CLFLEET_HOST_STAGING"), &host_staging));
    unsigned pool_size; /* read again by the pool, at its first use */
    CLF__TRY(st, clf__pool_config(&pool_size));
    CLF__TRY(st, discover(&d));
    CLF__TRY(st, check_indices(&d, &f));
    size_t kept = select_devices(&d, &f);
    /* Each device's fate is logged before a refusal, so CLFLEET_LOG=info says why even when
     * nothing matches (the error detail says it too). */
    for (size_t i = 0; i < d.ndev; i++) {
        char why[CLF__WHY_MAX];
        unsigned cu = d.dev[i].info.compute_units;
        clf__log(CLF_LOG_INFO, "device %zu '%s' (%s, %u unit%s, platform '%s'): %s%s", i,
                 d.dev[i].info.name, clf_device_type_name(d.dev[i].info.type), cu,
                 cu == 1 ? "" : "s", d.dev[i].info.platform,
                 d.dev[i].keep ? "selected" : "excluded by ",
                 d.dev[i].keep ? "" : why_left_out(&d, &f, i, why));
    }
    if (kept == 0)
        CLF__TRY(st, refuse(&d, &f, opts));
    for (size_t i = 0; i < d.ndev; i++) {
        char why[CLF__WHY_MAX];
        if (d.dev[i].keep &&
            clf__filter_split_why(&f, &d.dev[i].info, (unsigned)i, why, sizeof why))
            CLF__TRY(st, clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s", why));
    }

    fl = calloc(1, sizeof *fl);
    if (!fl)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory"));
    atomic_init(&fl->refs, 1); /* the caller's */
    fl->teardown = fleet_free;
    pthread_mutex_init(&fl->lock, NULL);
    fl->slot = slot_take();
    fl->strategy = strategy;
    fl->host_staging = host_staging;
    size_t cap = d.ndev;
    fl->dev = calloc(cap, sizeof *fl->dev);
    if (!fl->dev)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory"));
    int split = f.split_units || f.nsplit_counts;
    for (size_t i = 0; i < d.ndev; i++) {
        if (!d.dev[i].keep)
            continue;
        if (split && d.dev[i].info.type == CLF_DEVICE_CPU)
            CLF__TRY(st, split_device(fl, &d.dev[i], i, &f, &cap));
        else
            CLF__TRY(st, add_device(fl, d.dev[i].id, &d.dev[i], i, 0));
    }
    CLF__TRY(st, create_contexts(fl, f.context_per_device));
    /* The drivers' quirks, chosen once per device, before anything is enqueued. */
    clf__devops_init(fl);
    CLF__TRY(st, clf__fault_init(fl));
    CLF__TRY(st, clf__xfer_init(fl, opts->transfer));
    /* The launches' pinned slots take the staging chunk's size (clf__xfer_init() checked it). */
    CLF__TRY(st, clf__env_transfer_chunk(getenv("CLFLEET_TRANSFER_CHUNK"), (size_t)4 << 20,
                                         &fl->host_slot));
    CLF__TRY(st, clf__metrics_init(fl, opts->trace));
    /* After the transfer layer, which finds the devices that cannot be simulated. */
    CLF__TRY(st, clf__sim_init(fl));

    /* Parsed whether or not this fleet caches, so that a bad value is reported the first
     * time, not when some later program turns the cache on. */
    CLF__TRY(st, clf__env_cache_max(getenv("CLFLEET_CACHE_MAX"), &fl->cache_max));
    if (!opts->disable_cache) {
        fl->cache_dir = opts->cache_dir ? strdup(opts->cache_dir) : clf__cache_default_dir();
        if (opts->cache_dir && !fl->cache_dir)
            CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "fleet: out of memory"));
    }
out:
    discovery_free(&d);
    if (st != CLF_SUCCESS) {
        fleet_free(fl);
        return st;
    }
    *out = fl;
    return CLF_SUCCESS;
}

/* The teardown, once the last reference has gone (or a creation failed half way). */
static void fleet_free(clf_fleet *fl)
{
    if (!fl)
        return;
    /* Each layer's finalizers (core/device.c), before the queues and contexts go: launches
     * still queued first, then the collectives' and GEMM's state, then the transfers. */
    clf__fleet_state_fini(fl, CLF__STATE_DRAIN);
    clf__fleet_state_fini(fl, CLF__STATE_BEFORE_XFER);
    clf__xfer_fini(fl); /* copies in flight use the queues */
    clf__fleet_state_fini(fl, CLF__STATE_AFTER_XFER);
    /* Every queue finished before any goes: a command of one queue may wait for another's. */
    for (size_t i = 0; i < fl->ndev; i++) {
        struct clf__device *d = &fl->dev[i];
        cl_command_queue q[] = {d->compute, d->transfer, d->copyq, atomic_load(&d->user)};
        for (size_t k = 0; k < sizeof q / sizeof *q; k++)
            if (q[k])
                clFinish(q[k]);
    }
    /* The simulation's timer holds no event of the fleet's after this (simulate.h). */
    clf__sim_fini(fl);
    /* PoCL 3.1's worker threads still finalize a command's event just after clFinish() has
     * returned: they release it, reading its queue and that queue's device. Releasing the
     * queues, contexts or sub-devices before they are done crashes them (SIGSEGV in
     * POclReleaseEvent on a pthread worker, seen in test_alaunch, whose cases create and
     * destroy fleets one after the other, under a loaded `make -j2 check`: the worker read
     * freed memory two pointers from the event, where its queue and device are, when the
     * queues went before a 20 ms pause). So the pause comes
     * before anything is released, on every PoCL fleet, and is long enough for a worker
     * that the scheduler left waiting on a loaded machine. */
    int pocl = 0;
    for (size_t i = 0; i < fl->ndev; i++)
        pocl |= strstr(fl->dev[i].info.platform, "Portable Computing Language") != NULL ||
                fl->dev[i].owns_id;
    if (pocl)
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    for (size_t i = 0; i < fl->ndev; i++) {
        struct clf__device *d = &fl->dev[i];
        cl_command_queue q[] = {d->compute, d->transfer, d->copyq, atomic_load(&d->user)};
        for (size_t k = 0; k < sizeof q / sizeof *q; k++)
            if (q[k])
                clReleaseCommandQueue(q[k]);
    }
    clf__metrics_fini(fl); /* writes the trace, once every command has completed */
    for (size_t i = 0; i < fl->nctx; i++)
        clReleaseContext(fl->ctx[i]);
    for (size_t i = 0; i < fl->ndev; i++) {
        if (fl->dev[i].owns_id)
            clReleaseDevice(fl->dev[i].id);
        free(fl->dev[i].extensions);
    }
    clf__devops_fini(fl); /* after the last enqueue */
    free(fl->ctx);
    free(fl->dev);
    free(fl->cache_dir);
    clf__fault_fini(fl);
    slot_give(fl->slot);
    pthread_mutex_destroy(&fl->lock);
    free(fl);
}

void clf_fleet_destroy(clf_fleet *fl)
{
    if (fl)
        clf__fleet_unref(fl);
}

size_t clf_fleet_device_count(const clf_fleet *fl)
{
    return fl ? fl->ndev : 0;
}

size_t clf_fleet_context_count(const clf_fleet *fl)
{
    return fl ? fl->nctx : 0;
}

clf_status clf_fleet_finish(clf_fleet *fl)
{
    if (!fl)
        return clf__fail(CLF_ERROR_NULL_POINTER, "fleet is NULL");
    clf__xfer_drain(fl); /* copies the host drives enqueue as they go */
    for (size_t i = 0; i < fl->ndev; i++) {
        uint64_t t0 = clf__mono_ns();
        cl_int err = clf__device_finish_queues(&fl->dev[i]);
        clf__metrics_wait(fl, i, t0, clf__mono_ns(), "clf_fleet_finish");
        if (err != CL_SUCCESS)
            return clf__cl_fail(err, "clFinish", &fl->dev[i]);
    }
    return CLF_SUCCESS;
}

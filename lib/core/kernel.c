/*
 * The per-device kernel call (clf_kernel_enqueue(), whose public face is in exec/launch.c,
 * above the event bridge it needs): checking the description and the arguments (what this
 * call takes here, the rest against the kernel in argcheck.c), creating
 * the kernel and setting its arguments, then enqueueing it through the command path
 * (clf__cmd_kernel(): metrics, trace, the basic device's rules) after the fault hook.
 *
 * Kernels are reused: clSetKernelArg on a kernel another thread is setting up or enqueueing
 * is not thread-safe, so a call takes a kernel of (program, device, name) out of the
 * program's idle list (or creates one), sets every argument, enqueues it and puts it back;
 * OpenCL captures the argument values at the enqueue, so the next call may set them again
 * at once. The lock covers only the list, never an OpenCL call. A new cl_kernel per call
 * would be as safe, but PoCL does several microseconds of set-up at a kernel's first
 * enqueue (measured: 9.5 us a call against 3.3 us for a reused one).
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;

/* An idle kernel of (prog, dev, name), taken out of the list; NULL when there is none. */
static cl_kernel idle_take(clf_program *prog, size_t dev, const char *name)
{
    cl_kernel k = NULL;
    pthread_mutex_lock(&idle_lock);
    for (struct clf__kernel_idle **pp = &prog->idle_kernels; *pp; pp = &(*pp)->next) {
        struct clf__kernel_idle *e = *pp;
        if (e->dev == dev && !strcmp(e->name, name)) {
            *pp = e->next;
            k = e->k;
            free(e);
            break;
        }
    }
    pthread_mutex_unlock(&idle_lock);
    return k;
}

void clf__kernel_recycle(clf_program *prog, size_t dev, const char *name, cl_kernel k)
{
    size_t len = strlen(name);
    struct clf__kernel_idle *e = malloc(sizeof *e + len + 1);
    if (!e) {
        clReleaseKernel(k); /* only the reuse is lost */
        return;
    }
    e->dev = dev;
    e->k = k;
    memcpy(e->name, name, len + 1);
    pthread_mutex_lock(&idle_lock);
    e->next = prog->idle_kernels;
    prog->idle_kernels = e;
    pthread_mutex_unlock(&idle_lock);
}

/* One argument, before the kernel exists: its kind and what it holds. */
static clf_status check_arg(const clf_fleet *fl, size_t dev, const char *kernel,
                            const clf_arg *a, size_t i)
{
    if (a->reserved[0] || a->reserved[1])
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "kernel '%s' argument %zu: reserved fields are not zero (fill clf_arg "
                         "with the CLF_BUF_IN, CLF_SCALAR, ... macros)",
                         kernel, i);
    switch (a->kind) {
    case CLF_ARG_KIND_BUFFER: {
        const clf_buffer *b = a->host;
        if (!b)
            return clf__fail(CLF_ERROR_NULL_POINTER, "kernel '%s' argument %zu: buffer is NULL",
                             kernel, i);
        if (!(a->flags & (CLF_ARG_READ | CLF_ARG_WRITE)) ||
            (a->flags & ~(unsigned)(CLF_ARG_READ | CLF_ARG_WRITE)))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "kernel '%s' argument %zu: buffer access flags 0x%x (use "
                             "CLF_BUF_IN, CLF_BUF_OUT or CLF_BUF_INOUT)",
                             kernel, i, a->flags);
        if (b->fleet != fl)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "kernel '%s' argument %zu: the buffer belongs to another fleet",
                             kernel, i);
        if (b->device != dev)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "kernel '%s' argument %zu: the buffer is on device %zu, the kernel "
                             "runs on device %zu (copy it there with clf_copy_async())",
                             kernel, i, b->device, dev);
        cl_mem_flags mf = 0;
        if (clGetMemObjectInfo(b->mem, CL_MEM_FLAGS, sizeof mf, &mf, NULL) != CL_SUCCESS)
            mf = 0;
        if (((a->flags & CLF_ARG_WRITE) && (mf & CL_MEM_READ_ONLY)) ||
            ((a->flags & CLF_ARG_READ) && (mf & CL_MEM_WRITE_ONLY)))
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "kernel '%s' argument %zu: the kernel %s the buffer, created %s",
                             kernel, i, (a->flags & CLF_ARG_WRITE) ? "writes" : "reads",
                             (mf & CL_MEM_READ_ONLY) ? "CLF_MEM_READ_ONLY" : "CLF_MEM_WRITE_ONLY");
        return CLF_SUCCESS;
    }
    case CLF_ARG_KIND_SCALAR:
        if (!a->host)
            return clf__fail(CLF_ERROR_NULL_POINTER, "kernel '%s' argument %zu: scalar is NULL",
                             kernel, i);
        if (a->size == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "kernel '%s' argument %zu: scalar of 0 bytes",
                             kernel, i);
        return CLF_SUCCESS;
    case CLF_ARG_KIND_LOCAL:
        if (a->size == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE,
                             "kernel '%s' argument %zu: local memory of 0 bytes", kernel, i);
        return CLF_SUCCESS;
    case CLF_ARG_KIND_IN:
    case CLF_ARG_KIND_OUT:
    case CLF_ARG_KIND_INOUT:
    case CLF_ARG_KIND_BROADCAST:
    case CLF_ARG_KIND_REDUCE:
    case CLF_ARG_KIND_OUT_PER_GROUP:
        return clf__fail(CLF_ERROR_UNSUPPORTED,
                         "kernel '%s' argument %zu: kind %u is a host array of clf_launch(); "
                         "a kernel on one device takes buffers (CLF_BUF_IN, CLF_BUF_OUT, "
                         "CLF_BUF_INOUT), CLF_SCALAR and CLF_LOCAL",
                         kernel, i, a->kind);
    default:
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "kernel '%s' argument %zu: unknown kind %u",
                         kernel, i, a->kind);
    }
}

/* The description: its version, then the range's device-independent rules (argcheck.c). */
static clf_status check_desc(const char *call, const clf_kernel_desc *desc)
{
    if (!desc->kernel)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: desc.kernel is NULL", call);
    char who[160];
    snprintf(who, sizeof who, "%s: kernel '%.64s'", call, desc->kernel);
    if (clf__check_version(who, desc->version, CLF_KERNEL_DESC_VERSION, "clf_kernel_desc",
                           "CLF_KERNEL_DESC_INIT") != CLF_SUCCESS)
        return CLF_ERROR_INVALID_ARGUMENT;
    return clf__check_range(call, desc->kernel, desc->dims, desc->global, desc->local,
                            desc->offset, NULL, NULL);
}

clf_status clf__kernel_prepare(clf_fleet *fl, clf_program *prog, size_t dev,
                               const clf_kernel_desc *desc, const clf_arg *args, size_t nargs,
                               cl_kernel *out)
{
    return clf__kernel_prepare_part(fl, prog, dev, desc, args, nargs, NULL, NULL, out);
}

clf_status clf__kernel_prepare_part(clf_fleet *fl, clf_program *prog, size_t dev,
                                    const clf_kernel_desc *desc, const clf_arg *args,
                                    size_t nargs, const size_t *whole,
                                    const cl_ulong *part_offsets, cl_kernel *out)
{
    *out = NULL;
    if (!prog)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_kernel_enqueue: prog is NULL");
    if (!desc)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_kernel_enqueue: desc is NULL");
    /* An array launch's parts come here through the program's array variant. */
    const char *call = prog->array_variant_of ? "clf_array_launch" : "clf_kernel_enqueue";
    clf_status st = check_desc(call, desc);
    if (st != CLF_SUCCESS)
        return st;
    const char *kn = desc->kernel;
    if (prog->fleet != fl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "kernel '%s': the program belongs to another fleet", kn);
    if (nargs && !args)
        return clf__fail(CLF_ERROR_NULL_POINTER, "kernel '%s': args is NULL (%zu arguments)",
                         kn, nargs);
    /* The prelude counts get_group_id() and get_global_offset() from the start of the range
     * (what clf_launch()'s chunks need); with an offset of the caller's own, OpenCL counts
     * them from that offset instead. Rather than an answer one device would not give, a
     * program that names them is refused an offset. */
    for (unsigned j = 0; j < desc->dims && !prog->array_variant_of; j++)
        if (desc->offset[j] && (prog->range_named & CLF__NAMES_OFFSETS))
            return clf__fail(CLF_ERROR_UNSUPPORTED,
                             "kernel '%s': an offset (%zu in dimension %u) with a program that "
                             "names get_group_id(), get_global_offset() or "
                             "get_global_linear_id() (or includes a file): clfleet counts "
                             "those from the range's start, OpenCL from the offset; give offset "
                             "0 and add it to the indices, or pass it as an argument",
                             kn, desc->offset[j], j);
    struct clf__device *d = &fl->dev[dev];
    char why[160];
    if (clf__device_failed(fl, dev, why, sizeof why))
        return clf__fail(CLF_ERROR_DEVICE_FAILED, "kernel '%s': device %zu '%s' failed: %s", kn,
                         dev, d->info.name, why);
    if ((st = clf__program_check_device(prog, dev)) != CLF_SUCCESS) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", clf_last_error());
        return clf__fail(st, "kernel '%.64s': %s", kn, detail);
    }
    cl_int err = CL_SUCCESS;
    cl_kernel k = idle_take(prog, dev, kn);
    if (!k && (st = clf__cmd_kernel_create(fl, dev, prog, kn, NULL, 0, NULL, &k)) != CLF_SUCCESS)
        return st;
    /* The hidden range parameter is clfleet's, not the caller's (rangearg.c). */
    const char *no_array = prog->array_variant_of ? clf__program_array_why(prog, kn) : NULL;
    if (no_array)
        CLF__TRY(st, clf__fail(CLF_ERROR_UNSUPPORTED, "kernel '%s' cannot run over arrays: %s",
                               kn, no_array));
    /* The array variant's kernels have two: the part offsets, then the range. */
    int hidden = clf__program_range_arg(prog, kn) ? (prog->array_variant_of ? 2 : 1) : 0;
    if (prog->array_variant_of && !hidden)
        CLF__TRY(st, clf__fail(CLF_ERROR_UNSUPPORTED, "kernel '%s' cannot run over arrays: "
                               "clfleet did not find its definition in the source (made by a "
                               "macro or in an included file?), so it lacks the hidden "
                               "parameter " CLF__PART_ARG_NAME, kn));
    /* What this call takes, then the arguments against the kernel (argcheck.c). */
    for (size_t i = 0; i < nargs; i++)
        CLF__TRY(st, check_arg(fl, dev, kn, &args[i], i));
    /* A reused kernel holds the last call's __local sizes, which CL_KERNEL_LOCAL_MEM_SIZE
     * counts: local memory is checked once this call's are set (below). */
    CLF__TRY(st, clf__check_args(call, prog, kn, k, d, 0, args, nargs, 1));
    CLF__TRY(st, clf__check_range(call, kn, desc->dims, desc->global, desc->local, desc->offset,
                                  d, k));
    /* The array variant moved the parameters its scan took for __global/__constant
     * pointers; one it missed (the qualifier or '*' hidden in a macro or typedef) would
     * index its part's buffer from the wrong place. */
    uint64_t moved = prog->array_variant_of ? clf__program_array_mask(prog, kn) : 0;
    for (size_t i = 0; i < nargs && prog->array_variant_of; i++) {
        cl_kernel_arg_address_qualifier aq;
        cl_kernel_arg_type_qualifier tq;
        char name[128];
        if (!clf__kernel_param(k, i, &aq, &tq, name, sizeof name))
            continue;
        int ptr = aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT;
        if (ptr != (i < 64 && ((moved >> i) & 1)))
            CLF__TRY(st, clf__fail(CLF_ERROR_UNSUPPORTED,
                                   "kernel '%s' parameter %zu '%s' cannot run over arrays: "
                                   "clfleet's scan of the source %s a __global or __constant "
                                   "pointer (a macro or typedef hiding its qualifier or '*'?) "
                                   "and cannot move it to its part; write them out in the "
                                   "parameter list",
                                   kn, i, name, ptr ? "did not find it to be" : "took it for"));
    }
    for (size_t i = 0; i < nargs; i++) {
        const clf_arg *a = &args[i];
        const clf_buffer *b = a->kind == CLF_ARG_KIND_BUFFER ? a->host : NULL;
        if (b)
            err = clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &b->mem);
        else
            err = clSetKernelArg(k, (cl_uint)i, a->size,
                                 a->kind == CLF_ARG_KIND_SCALAR ? a->host : NULL);
        if (err != CL_SUCCESS)
            CLF__TRY(st, clf__arg_set_fail(call, kn, k, i, i, err, d));
    }
    CLF__TRY(st, clf__check_local_mem(call, kn, k, d, 0));
    CLF__TRY(st, clf__program_set_range(prog, kn, k, whole ? whole : desc->global, desc->dims,
                                        d));
    if (hidden == 2) {
        cl_ulong16 po;
        for (unsigned i = 0; i < 16; i++)
            po.s[i] = part_offsets ? part_offsets[i] : 0;
        err = clSetKernelArg(k, (cl_uint)nargs, sizeof po, &po); /* then the range */
        if (err != CL_SUCCESS)
            CLF__TRY(st, clf__cl_fail(err, "clSetKernelArg (" CLF__PART_ARG_NAME ")", d));
    }
    *out = k;
    return CLF_SUCCESS;
out:
    clReleaseKernel(k);
    return st;
}

clf_status clf__kernel_submit(clf_fleet *fl, size_t dev, cl_kernel k, const clf_kernel_desc *desc,
                              cl_uint nwait, const cl_event *wait, cl_event *ev)
{
    if (ev)
        *ev = NULL;
    /* The command path applies the enqueue and exec rules (the kernel's default class). */
    int local = desc->local[0] != 0;
    clf__cmd c = CLF__CMD(fl, dev, fl->dev[dev].compute, desc->kernel);
    c.nwait = nwait;
    c.wait = wait;
    c.ev = ev;
    return clf__cmd_kernel(&c, k, desc->dims, desc->offset, desc->global,
                           local ? desc->local : NULL);
}

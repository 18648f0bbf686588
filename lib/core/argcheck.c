/*
 * The one check of a call's arguments and NDRange against its kernel, shared by every path
 * that runs a user kernel (clf_launch(), clf_launch_async(), clf_kernel_enqueue(),
 * clf_array_launch(), task queues, pipelines): the argument count, each argument's kind
 * against its parameter's qualifiers, a scalar's size and type class against the
 * parameter's type, local memory against the device, and the range's sizes against OpenCL's
 * rules and the limits past which PoCL aborts or runs nothing. Before this file each path
 * had its own checks and they disagreed: a scalar for a pointer crashed some paths inside
 * the driver and was refused by others.
 */
#include "core.h"

#include <stdio.h>
#include <string.h>

/* Parameter i's qualifiers and name (core.h). */
int clf__kernel_param(cl_kernel k, size_t i, cl_kernel_arg_address_qualifier *aq,
                      cl_kernel_arg_type_qualifier *tq, char *name, size_t n)
{
    *aq = 0;
    *tq = 0;
    cl_int err = clGetKernelArgInfo(k, (cl_uint)i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof *aq,
                                    aq, NULL);
    if (err == CL_SUCCESS)
        err = clGetKernelArgInfo(k, (cl_uint)i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof *tq, tq,
                                 NULL);
    if (clGetKernelArgInfo(k, (cl_uint)i, CL_KERNEL_ARG_NAME, n, name, NULL) != CL_SUCCESS)
        name[0] = 0;
    return err == CL_SUCCESS; /* else CL_KERNEL_ARG_INFO_NOT_AVAILABLE */
}

/* "argument 2 ('x')", or "argument 2" when the parameter's name is unknown. */
static void arg_label(char *out, size_t n, size_t i, const char *name)
{
    if (name[0])
        snprintf(out, n, "argument %zu ('%.64s')", i, name);
    else
        snprintf(out, n, "argument %zu", i);
}

clf_status clf__arg_set_fail(const char *call, const char *kernel, cl_kernel k, size_t param,
                             size_t i, cl_int err, const struct clf__device *d)
{
    cl_kernel_arg_address_qualifier aq;
    cl_kernel_arg_type_qualifier tq;
    char name[128], label[128], what[400];
    clf__kernel_param(k, param, &aq, &tq, name, sizeof name);
    arg_label(label, sizeof label, i, name);
    snprintf(what, sizeof what, "%s: kernel '%.64s' %s: clSetKernelArg", call, kernel, label);
    return clf__cl_fail(err, what, d);
}

/* ---- scalar types ------------------------------------------------------------------------ */

/* clf_arg.type of a scalar: the C type class CLF_SCALAR() records (include/clfleet.h). */
enum { CLASS_UNKNOWN = 0, CLASS_INT = 1, CLASS_FLOAT = 2 };

/* t without a leading `word `, or t. */
static const char *skip_word(const char *t, const char *word)
{
    size_t n = strlen(word);
    return !strncmp(t, word, n) && t[n] == ' ' ? t + n + 1 : t;
}

/*
 * The size in bytes and the class of an OpenCL C built-in scalar or vector type name (as
 * CL_KERNEL_ARG_TYPE_NAME gives it: "float", "uint4", "unsigned int"); 0 for any other name
 * (a typedef or struct, whose size the host cannot know). A 3-vector takes 4 elements' room.
 */
static size_t type_size(const char *t, int *cls)
{
    static const struct {
        const char *name;
        size_t size;
        int cls;
    } base[] = {{"char", 1, CLASS_INT},    {"uchar", 1, CLASS_INT},  {"short", 2, CLASS_INT},
                {"ushort", 2, CLASS_INT},  {"int", 4, CLASS_INT},    {"uint", 4, CLASS_INT},
                {"long", 8, CLASS_INT},    {"ulong", 8, CLASS_INT},  {"half", 2, CLASS_FLOAT},
                {"float", 4, CLASS_FLOAT}, {"double", 8, CLASS_FLOAT}};
    static const char *const widths[] = {"", "2", "3", "4", "8", "16"};
    static const size_t elems[] = {1, 2, 4, 4, 8, 16};
    *cls = CLASS_UNKNOWN;
    t = skip_word(skip_word(skip_word(t, "const"), "unsigned"), "signed");
    for (size_t b = 0; b < sizeof base / sizeof base[0]; b++) {
        size_t len = strlen(base[b].name);
        if (strncmp(t, base[b].name, len))
            continue;
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
            if (!strcmp(t + len, widths[w])) {
                *cls = base[b].cls;
                return base[b].size * elems[w];
            }
    }
    return 0;
}

static const char *class_name(int cls)
{
    return cls == CLASS_INT ? "an integer" : "a floating-point";
}

/* ---- the arguments ----------------------------------------------------------------------- */

/* 1 for a kind the kernel writes through its parameter. */
static int writes(const clf_arg *a)
{
    switch (a->kind) {
    case CLF_ARG_KIND_OUT:
    case CLF_ARG_KIND_INOUT:
    case CLF_ARG_KIND_OUT_PER_GROUP:
    case CLF_ARG_KIND_REDUCE:
        return 1;
    case CLF_ARG_KIND_BUFFER:
    case CLF_ARG_KIND_ARRAY:
        return (a->flags & CLF_ARG_WRITE) != 0;
    default:
        return 0;
    }
}

/* The kind the caller wrote: clf_array_launch() hands each part to the per-device kernel
 * call as buffers (data/alaunch.c), one for each of the caller's arrays, and refuses any
 * buffer of the caller's own; so there a buffer stands for a CLF_ARRAY_* argument. */
static unsigned user_kind(const clf_arg *a, const char *call)
{
    if (a->kind == CLF_ARG_KIND_BUFFER && call && !strcmp(call, "clf_array_launch"))
        return CLF_ARG_KIND_ARRAY;
    return a->kind;
}

/* The macro that made a memory argument, so that a message names what the caller wrote (a
 * clf_array_launch() user never wrote CLF_BUF_IN, a clf_launch() user never wrote
 * CLF_ARRAY_OUT). */
static const char *used_macro(const clf_arg *a, const char *call)
{
    int rd = (a->flags & CLF_ARG_READ) != 0, wr = (a->flags & CLF_ARG_WRITE) != 0;
    switch (user_kind(a, call)) {
    case CLF_ARG_KIND_IN:
        return a->flags & CLF_ARG_WHOLE ? "CLF_WHOLE_IN" : "CLF_IN";
    case CLF_ARG_KIND_OUT:
        return a->flags & CLF_ARG_WHOLE ? "CLF_WHOLE_OUT" : "CLF_OUT";
    case CLF_ARG_KIND_INOUT:
        return "CLF_INOUT";
    case CLF_ARG_KIND_BROADCAST:
        return "CLF_BROADCAST";
    case CLF_ARG_KIND_REDUCE:
        return "CLF_REDUCE";
    case CLF_ARG_KIND_OUT_PER_GROUP:
        return "CLF_OUT_PER_GROUP";
    case CLF_ARG_KIND_BUFFER:
        return rd && wr ? "CLF_BUF_INOUT" : wr ? "CLF_BUF_OUT" : "CLF_BUF_IN";
    case CLF_ARG_KIND_ARRAY:
        return rd && wr ? "CLF_ARRAY_INOUT" : wr ? "CLF_ARRAY_OUT" : "CLF_ARRAY_IN";
    default:
        return "an argument macro";
    }
}

/* The read-only and the read-write macro of the same family as the caller's. */
static const char *input_macro(const clf_arg *a, const char *call)
{
    unsigned k = user_kind(a, call);
    return k == CLF_ARG_KIND_BUFFER  ? "CLF_BUF_IN"
           : k == CLF_ARG_KIND_ARRAY ? "CLF_ARRAY_IN"
                                     : "CLF_IN or CLF_BROADCAST";
}

static const char *inout_macro(const clf_arg *a, const char *call)
{
    unsigned k = user_kind(a, call);
    return k == CLF_ARG_KIND_BUFFER  ? "CLF_BUF_INOUT"
           : k == CLF_ARG_KIND_ARRAY ? "CLF_ARRAY_INOUT"
                                     : "CLF_INOUT";
}

/* 1 for a kind that is memory: a __global or __constant pointer on the device. */
static int is_memory(unsigned kind)
{
    return kind != CLF_ARG_KIND_SCALAR && kind != CLF_ARG_KIND_LOCAL;
}

/* Argument i (kernel parameter param) against its parameter; the qualifiers are known. */
static clf_status check_one(const char *call, const char *kernel, cl_kernel k, size_t param,
                            size_t i, const clf_arg *a, cl_kernel_arg_address_qualifier aq,
                            cl_kernel_arg_type_qualifier tq, const char *name)
{
    char who[512], label[128];
    arg_label(label, sizeof label, i, name);
    snprintf(who, sizeof who, "%s: kernel '%.64s' %s", call, kernel, label);
    if (a->kind == CLF_ARG_KIND_SCALAR) {
        if (aq != CL_KERNEL_ARG_ADDRESS_PRIVATE)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: a value (CLF_SCALAR) for a pointer parameter (pass memory: "
                             "a buffer, array or host array)",
                             who);
        char type[64];
        int cls;
        if (clGetKernelArgInfo(k, (cl_uint)param, CL_KERNEL_ARG_TYPE_NAME, sizeof type, type,
                               NULL) != CL_SUCCESS)
            return CLF_SUCCESS;
        size_t need = type_size(type, &cls);
        if (need == 0)
            return CLF_SUCCESS; /* a typedef or struct: its size is the user's business */
        if (a->type != CLASS_UNKNOWN && (unsigned)cls != a->type)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: %s C value for a parameter of type '%s' (%s type): pass a "
                             "variable of the parameter's type",
                             who, class_name((int)a->type), type,
                             cls == CLASS_INT ? "an integer" : "a floating-point");
        if (a->size != need)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: a value of %zu bytes for a parameter of type '%s' (%zu bytes)",
                             who, a->size, type, need);
        return CLF_SUCCESS;
    }
    if (a->kind == CLF_ARG_KIND_LOCAL) {
        if (aq != CL_KERNEL_ARG_ADDRESS_LOCAL)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: local memory (CLF_LOCAL) for a parameter that is not a "
                             "__local pointer",
                             who);
        return CLF_SUCCESS;
    }
    if (aq != CL_KERNEL_ARG_ADDRESS_GLOBAL && aq != CL_KERNEL_ARG_ADDRESS_CONSTANT)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: memory (kind %u) for a parameter that is not a __global or "
                         "__constant pointer%s",
                         who, a->kind,
                         aq == CL_KERNEL_ARG_ADDRESS_PRIVATE ? " (pass a value: CLF_SCALAR)" : "");
    int ro = aq == CL_KERNEL_ARG_ADDRESS_CONSTANT || (tq & CL_KERNEL_ARG_TYPE_CONST);
    if (writes(a) && ro)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s is written by the kernel (%s) but its parameter is const or "
                         "__constant: pass it as an input (%s)",
                         who, used_macro(a, call), input_macro(a, call));
    /* Read-only kinds the kernel could still write: a buffer or array the caller marked
     * read only (its other users trust that). A plain input is only uploaded, so a
     * non-const parameter loses nothing; nor does a broadcast: clf_launch keeps its copy
     * between launches only where the parameter is const or a source scan sees no store
     * (exec/check.c), and else uploads it afresh for each launch. */
    if (!ro && !writes(a) && (a->kind == CLF_ARG_KIND_BUFFER || a->kind == CLF_ARG_KIND_ARRAY))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s is read only (%s) but its parameter may be written: declare it "
                         "const (or __constant), or pass it for writing (%s)",
                         who, used_macro(a, call), inout_macro(a, call));
    return CLF_SUCCESS;
}

clf_status clf__check_local_mem(const char *call, const char *kernel, cl_kernel k,
                                const struct clf__device *d, size_t unset)
{
    cl_ulong dev = 0, used = 0;
    cl_int err = clGetDeviceInfo(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof dev, &dev, NULL);
    if (err == CL_SUCCESS)
        err = clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_LOCAL_MEM_SIZE, sizeof used, &used,
                                       NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "local memory sizes", d);
    /* PoCL's threads copy the __local arguments into a block of the device's size and
     * abort (an assertion in pthread_utils.c) when they do not fit: refuse it here. */
    if (used > dev || unset > dev - used)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: kernel '%s' needs %llu bytes of local memory (%llu of its own and "
                         "set, %zu of CLF_LOCAL arguments), device %zu '%s' has %llu "
                         "(CL_DEVICE_LOCAL_MEM_SIZE)",
                         call, kernel, (unsigned long long)used + unset,
                         (unsigned long long)used, unset, d->index, d->info.name,
                         (unsigned long long)dev);
    return CLF_SUCCESS;
}

clf_status clf__check_args(const char *call, const struct clf_program *p, const char *kernel,
                           cl_kernel k, const struct clf__device *d, size_t first,
                           const clf_arg *args, size_t nargs, int locals_set)
{
    /* clfleet's hidden parameters come last (rangearg.c): the range, and in the array
     * variant the part offsets before it. */
    size_t hidden = clf__program_range_arg(p, kernel) ? (p->array_variant_of ? 2 : 1) : 0;
    cl_uint nk = 0;
    cl_int err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nk, &nk, NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clGetKernelInfo (CL_KERNEL_NUM_ARGS)", d);
    if (nk != first + nargs + hidden) {
        /* A hidden parameter clfleet does not know the kernel has (program.c asks the driver
         * which kernels have it; a driver without argument information cannot say): the
         * count would be one off, and wrong. */
        cl_kernel_arg_address_qualifier aq;
        cl_kernel_arg_type_qualifier tq;
        char last[128];
        if (!hidden && nk && clf__kernel_param(k, nk - 1, &aq, &tq, last, sizeof last) &&
            !strcmp(last, CLF__RANGE_ARG_NAME))
            return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: kernel '%s' has clfleet's hidden range "
                             "parameter (" CLF__RANGE_ARG_NAME "), but the source scan found its "
                             "definition under another name (a kernel name made by a macro?) "
                             "and the driver could not say which kernel it is; define the kernel "
                             "under its own name", call, kernel);
        size_t takes = nk >= first + hidden ? nk - first - hidden : 0;
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: kernel '%s' takes %zu arguments%s, %zu "
                         "given", call, kernel, takes,
                         first ? " after the stage's input and output" : "", nargs);
    }
    size_t local = 0;
    for (size_t i = 0; i < nargs; i++) {
        const clf_arg *a = &args[i];
        if (a->kind == CLF_ARG_KIND_LOCAL && clf__add_overflow(local, a->size, &local))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: kernel '%s': local memory sizes "
                             "overflow", call, kernel);
        cl_kernel_arg_address_qualifier aq;
        cl_kernel_arg_type_qualifier tq;
        char name[128];
        if (!clf__kernel_param(k, first + i, &aq, &tq, name, sizeof name)) {
            static int logged;
            if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
                clf__log(CLF_LOG_INFO, "%s: kernel '%s': the driver of device %zu '%s' gives no "
                         "argument information (CL_KERNEL_ARG_INFO_NOT_AVAILABLE): argument "
                         "kinds and scalar sizes are not checked", call, kernel, d->index,
                         d->info.name);
            continue;
        }
        if (a->kind == CLF_ARG_KIND_SCALAR || a->kind == CLF_ARG_KIND_LOCAL ||
            is_memory(a->kind)) {
            clf_status st = check_one(call, kernel, k, first + i, i, a, aq, tq, name);
            if (st != CLF_SUCCESS)
                return st;
        }
    }
    return locals_set ? CLF_SUCCESS : clf__check_local_mem(call, kernel, k, d, local);
}

/* ---- the NDRange ------------------------------------------------------------------------- */

clf_status clf__check_range(const char *call, const char *kernel, unsigned dims,
                            const size_t *global, const size_t *local, const size_t *offset,
                            const struct clf__device *d, cl_kernel k)
{
    if (dims < 1 || dims > 3)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: kernel '%s': dims is %u, expected 1 "
                         "to 3", call, kernel, dims);
    int any_local = 0, all_local = 1;
    for (unsigned j = 0; local && j < dims; j++) {
        any_local |= local[j] != 0;
        all_local &= local[j] != 0;
    }
    if (any_local && !all_local)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: kernel '%s': give a local size for every dimension or for none "
                         "(all 0: the driver's choice)", call, kernel);
    size_t items = 1, groups = 1, end;
    for (unsigned j = 0; j < dims; j++) {
        if (global[j] == 0)
            return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: kernel '%s': global size of dimension %u "
                             "is 0", call, kernel, j);
        if (offset && clf__add_overflow(offset[j], global[j], &end))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: kernel '%s': offset %zu + global "
                             "size %zu of dimension %u overflow", call, kernel, offset[j],
                             global[j], j);
        if (any_local && global[j] % local[j])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: kernel '%s': local size %zu does "
                             "not divide global size %zu of dimension %u", call, kernel,
                             local[j], global[j], j);
        /* PoCL multiplies the global sizes without a check: a product past SIZE_MAX wraps,
         * and its pthread device then aborts (pthread_scheduler.c, `max_wgs > 0`) or, with a
         * local size, runs no work-group at all and reports success. */
        if (clf__mul_overflow(items, global[j], &items))
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: kernel '%s': the range's %u global "
                             "sizes multiply past SIZE_MAX", call, kernel, dims);
        if (any_local)
            groups *= global[j] / local[j]; /* at most items: no overflow */
    }
    /* PoCL's pthread device counts the work-groups of a command in 32 bits: with 2^32 or
     * more (a 2-D range of 65536 x 65536 work-groups of one item), the count wraps and the
     * process aborts in pthread_scheduler.c. Measured on PoCL 3.1; no driver runs that many
     * groups in one command in a useful time on a CPU, and a GPU's launch limits are lower. */
    if (any_local && groups > UINT32_MAX)
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: kernel '%s': %zu work-groups in one "
                         "range, more than the 2^32 - 1 a driver can count (PoCL aborts)",
                         call, kernel, groups);
    if (!d)
        return CLF_SUCCESS;
    cl_uint bits = 64;
    cl_int err = clGetDeviceInfo(d->id, CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clGetDeviceInfo (CL_DEVICE_ADDRESS_BITS)", d);
    if (bits < 64 && (uint64_t)items >> bits)
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: kernel '%s': %zu work-items, more than "
                         "the %u-bit size_t of device %zu '%s' counts", call, kernel, items,
                         bits, d->index, d->info.name);
    if (!k)
        return CLF_SUCCESS;
    size_t items_max[16] = {0}, dev_max = 0, k_max = 0, group = 1;
    err = clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items_max, items_max,
                          NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev_max, &dev_max,
                              NULL);
    if (err == CL_SUCCESS)
        err = clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof k_max, &k_max,
                                       NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "work-group limits", d);
    if (!any_local) {
        /* The driver chooses the groups: at best of k_max items each. Even those would be
         * too many to count (above); smaller ones PoCL may still choose are its risk. */
        if (k_max && items / k_max > UINT32_MAX)
            return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: kernel '%s': %zu work-items make "
                             "more than 2^32 - 1 work-groups even of the largest size %zu "
                             "(PoCL aborts)", call, kernel, items, k_max);
        return CLF_SUCCESS;
    }
    for (unsigned j = 0; j < dims; j++) {
        if (local[j] > items_max[j])
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: kernel '%s': local size %zu of dimension %u exceeds the "
                             "maximum %zu of device %zu '%s' (CL_DEVICE_MAX_WORK_ITEM_SIZES)",
                             call, kernel, local[j], j, items_max[j], d->index, d->info.name);
        group *= local[j]; /* each factor is at most items_max[j]: no overflow */
    }
    if (group > dev_max || group > k_max)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "%s: kernel '%s': work-groups of %zu items exceed the maximum %zu of "
                         "device %zu '%s' (%s)",
                         call, kernel, group, group > dev_max ? dev_max : k_max, d->index,
                         d->info.name,
                         group > dev_max ? "CL_DEVICE_MAX_WORK_GROUP_SIZE"
                                         : "CL_KERNEL_WORK_GROUP_SIZE of this kernel");
    return CLF_SUCCESS;
}

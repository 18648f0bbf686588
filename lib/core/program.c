/*
 * Programs built for every device of a fleet, one cl_program per device (see
 * device_options() for why not one per context), with a binary cache keyed by source,
 * options, device, driver and platform.
 */
#include "core.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

clf_status clf__read_file(const char *path, char **out, size_t *len)
{
    clf_status st = CLF_SUCCESS;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return clf__fail(CLF_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    /* A directory opens on Linux and sizes as LONG_MAX; a FIFO has no size at all. */
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        CLF__TRY(st, clf__fail(CLF_ERROR_IO, "cannot read '%s': not a regular file", path));
    if (fseek(f, 0, SEEK_END) != 0)
        CLF__TRY(st, clf__fail(CLF_ERROR_IO, "cannot seek '%s': %s", path, strerror(errno)));
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        CLF__TRY(st, clf__fail(CLF_ERROR_IO, "cannot size '%s': %s", path, strerror(errno)));
    buf = malloc((size_t)n + 1);
    if (!buf)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "reading '%s': out of memory", path));
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        CLF__TRY(st, clf__fail(CLF_ERROR_IO, "cannot read '%s'", path));
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = (size_t)n;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return st;
}

/* The cache key of the device's program: source, options, device, driver, platform, and the
 * digest of the included files (includes, "" when there are none). */
static void device_key(const struct clf__device *d, const char *src, const char *opts,
                       const char *includes, unsigned char key[32])
{
    char platform[sizeof d->info.platform + sizeof d->info.platform_vendor + 2];
    snprintf(platform, sizeof platform, "%s\n%s", d->info.platform, d->info.platform_vendor);
    clf__cache_key_parts parts = {src, opts, d->info.name, d->info.driver_version, platform,
                                  includes[0] ? includes : NULL};
    clf__cache_key(key, &parts);
}

/*
 * Store the device's binary; a cache that cannot be written only costs time. The program
 * was built for this one device, so its binary is the one that is not empty: a driver may
 * list it under another id (PoCL lists a sub-device's binary under its root device).
 * Returns the store's failure (the caller reports it), CLF_SUCCESS when there was nothing
 * to store.
 */
static clf_status store_binary(cl_program prog, const clf_fleet *fl, const struct clf__device *d,
                               const char *src, const char *opts, const char *includes)
{
    cl_uint np = 0;
    clf_status stored = CLF_SUCCESS;
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof np, &np, NULL) != CL_SUCCESS ||
        np == 0)
        return CLF_SUCCESS;
    cl_device_id *pdev = calloc(np, sizeof *pdev);
    size_t *sizes = calloc(np, sizeof *sizes);
    unsigned char **bins = calloc(np, sizeof *bins);
    if (!pdev || !sizes || !bins)
        goto out;
    if (clGetProgramInfo(prog, CL_PROGRAM_DEVICES, np * sizeof *pdev, pdev, NULL) != CL_SUCCESS ||
        clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, np * sizeof *sizes, sizes, NULL) !=
            CL_SUCCESS)
        goto out;
    cl_uint mine = np, nonempty = 0;
    for (cl_uint j = 0; j < np; j++) {
        if (sizes[j] && !(bins[j] = malloc(sizes[j])))
            goto out;
        if (sizes[j] && (nonempty++ == 0 || pdev[j] == d->id))
            mine = j;
    }
    /* Several binaries: only the one listed under the device itself is surely its own. */
    if (mine == np || (nonempty > 1 && pdev[mine] != d->id))
        goto out;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, np * sizeof *bins, bins, NULL) != CL_SUCCESS)
        goto out;
    unsigned char key[32];
    device_key(d, src, opts, includes, key);
    stored = clf__cache_store(fl->cache_dir, key, bins[mine], sizes[mine]);
    if (stored == CLF_SUCCESS && fl->cache_max)
        clf__cache_trim(fl->cache_dir, fl->cache_max, key);
out:
    for (cl_uint j = 0; bins && j < np; j++)
        free(bins[j]);
    free(bins);
    free(sizes);
    free(pdev);
    return stored;
}

/* The device's program from its cached binary, or NULL. */
static cl_program from_cache(const clf_fleet *fl, const struct clf__device *d, const char *src,
                             const char *opts, const char *includes)
{
    unsigned char key[32], *bin = NULL;
    size_t len = 0;
    device_key(d, src, opts, includes, key);
    if (!clf__cache_load(fl->cache_dir, key, &bin, &len))
        return NULL;
    cl_int err, bst = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(d->ctx, 1, &d->id, &len,
                                                (const unsigned char **)&bin, &bst, &err);
    free(bin);
    if (err != CL_SUCCESS)
        return NULL;
    if (clBuildProgram(prog, 1, &d->id, opts, NULL, NULL) != CL_SUCCESS) {
        /* A binary the driver no longer accepts: rebuild from source. */
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

/*
 * The options the device's program is built with: the user's, -cl-kernel-arg-info, plus on
 * PoCL a definition that no source uses and that is unique to this (fleet, device) among the
 * live fleets.
 *
 * Why: PoCL 3.1 keeps one process-wide cache of loaded kernel binaries, keyed by the
 * kernel's build hash, its local size and specialisation (zero global offset or not, grid
 * width), and pocl_release_dlhandle_cache() returns a command's reference to the first
 * entry of that hash and local size, not to the one the command took. Two devices that run
 * the same kernel at once with different offsets (chunks of one launch do) or different
 * widths then return each other's references, and PoCL aborts on its assertion
 * `found->ref_count > 0` (lib/CL/devices/common.c). The build hash covers the options, so
 * a per-device definition gives every device entries of its own; one device runs its
 * kernels one after another (an in-order queue; on the basic device, under its exec lock
 * and only once ready, see core/devops.c), so its own entries are never confused.
 * The tag is the fleet's slot and the device's index: the same in the next process, so
 * the binary cache keeps working.
 */
static char *device_options(const clf_fleet *fl, const struct clf__device *d, const char *opts)
{
    char tag[64] = "";
    if (strstr(d->info.platform, "Portable Computing Language"))
        snprintf(tag, sizeof tag, " -D__CLFLEET_POCL_TAG_%u_%zu", fl->slot, d->index);
    /* Argument information lets a launch refuse a broadcast the kernel may write (exec/check.c,
     * check_broadcast_const). */
    static const char arginfo[] = "-cl-kernel-arg-info";
    size_t n = strlen(opts) + 1 + sizeof arginfo + strlen(tag);
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s%s", opts, opts[0] ? " " : "", arginfo, tag);
    return s;
}

/*
 * Whether the files the source includes are still those keyed before the build. A header
 * changed while the compiler read it would otherwise store the new binary under the old
 * header's key, and the old header's next build would load it.
 */
static int includes_unchanged(const clf_program *p, size_t dev)
{
    if (!p->includes[0])
        return 1;
    char hex[65], why[300];
    const char *src = p->array_variant_of ? p->array_variant_of->source : p->source;
    const char *opts = p->array_variant_of ? p->array_variant_of->options : p->options;
    if (clf__include_digest(src, opts, hex, why, sizeof why) == 1 && !strcmp(hex, p->includes))
        return 1;
    clf__log(CLF_LOG_DEBUG, "program %.12s: device %zu: the included files changed during the "
             "build, its binary is not cached", p->hash, dev);
    return 0;
}

/*
 * Build the program of fleet device dev: from the binary cache when it has it, else from
 * source. A device whose build fails (or an injected fault) is noted with its log and left
 * out. Only an error that is not the build's (out of memory, say) fails the call.
 */
static clf_status build_device(clf_program *p, size_t dev, const char *src, const char *opts)
{
    clf_fleet *fl = p->fleet;
    const struct clf__device *d = &fl->dev[dev];
    clf_status st = CLF_SUCCESS;
    cl_program prog = NULL;
    char *dopts = device_options(fl, d, opts);
    if (!dopts)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "build: out of memory");
    cl_int err = CLF__FAULT(fl, dev, CLF__FAULT_BUILD);
    if (err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "clBuildProgram: %s (%d) (injected by CLFLEET_FAULT_INJECT)",
                 clf__cl_error_name(err), (int)err);
        CLF__TRY(st, clf__program_set_log(p, dev, what, NULL));
        goto out;
    }
    int cache = fl->cache_dir && !p->no_cache;
    if (cache && (prog = from_cache(fl, d, src, dopts, p->includes)) != NULL) {
        p->from_cache[dev] = 1;
        clf__log(CLF_LOG_DEBUG, "program %.12s: device %zu '%s': binary cache hit", p->hash, dev,
                 d->info.name);
        goto built;
    }
    if (cache)
        clf__log(CLF_LOG_DEBUG, "program %.12s: device %zu '%s': binary cache miss, building "
                 "from source", p->hash, dev, d->info.name);
    /* A compile from source can take seconds (PoCL: a few per kernel file; more on a GPU)
     * while nothing else shows: say so once, before it starts. At info, not warn: nothing
     * is wrong, and a program that did not ask must not get lines on its stderr. */
    if (!p->compile_noted) {
        p->compile_noted = 1;
        clf__log(CLF_LOG_INFO,
                 "%s: compiling program %.12s from source (device %zu '%s' first): this can "
                 "take seconds%s",
                 p->build_call ? p->build_call : "clf_program_build_source", p->hash, dev,
                 d->info.name, cache ? "; later runs load it from the binary cache" : "");
    }
    prog = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) {
        prog = NULL;
        CLF__TRY(st, clf__cl_fail(err, "clCreateProgramWithSource", d));
    }
    err = clBuildProgram(prog, 1, &d->id, dopts, NULL, NULL);
    if (err == CL_SUCCESS) {
        /* A failed store is not the build's failure: the cache only saves time. */
        if (cache && includes_unchanged(p, dev) &&
            store_binary(prog, fl, d, src, dopts, p->includes) != CLF_SUCCESS &&
            !atomic_exchange(&fl->cache_warned, 1))
            clf__log(CLF_LOG_WARN, "binary cache '%s' unusable, programs are built from source: "
                     "%s", fl->cache_dir, clf_last_error());
        goto built;
    }
    if (err != CL_BUILD_PROGRAM_FAILURE && err != CL_INVALID_BUILD_OPTIONS)
        CLF__TRY(st, clf__cl_fail(err, "clBuildProgram", d));
    char what[1000], *log = clf__program_driver_log(prog, d->id);
    snprintf(what, sizeof what, "clBuildProgram: %s (%d); options '%.500s'%s",
             clf__cl_error_name(err), (int)err, opts,
             log && strstr(log, CLF__RANGE_ARG_NAME)
                 ? "\nhint: under clfleet, get_global_size() and get_num_groups() read a hidden "
                   "parameter (" CLF__RANGE_ARG_NAME ") that clfleet adds to the kernels and "
                   "helper functions it finds in the program's source; a function defined in "
                   "an included file or made by a macro lacks it: define it in the source "
                   "given to clf_program_build_source(), or pass the value as a parameter"
                 : "");
    st = clf__program_set_log(p, dev, what, log);
    free(log);
    goto out;
built:
    p->built[dev] = 1;
    p->prog[dev] = prog;
    prog = NULL;
out:
    if (prog)
        clReleaseProgram(prog);
    free(dopts);
    return st;
}

/* 1 when name is one of the n names. */
static int listed(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

/* Whether kernel name of device dev's program has the hidden range parameter: its last
 * parameter's name (the program is built with -cl-kernel-arg-info). 0 when unknown. */
static int has_range_param(clf_program *p, size_t dev, const char *name)
{
    cl_kernel k = NULL;
    cl_uint n = 0;
    char last[sizeof CLF__RANGE_ARG_NAME + 1] = "";
    int has = clf__cmd_kernel_create(p->fleet, dev, p, name, NULL, 0, NULL, &k) == CLF_SUCCESS &&
              clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL) == CL_SUCCESS && n &&
              clGetKernelArgInfo(k, n - 1, CL_KERNEL_ARG_NAME, sizeof last, last, NULL) ==
                  CL_SUCCESS &&
              !strcmp(last, CLF__RANGE_ARG_NAME);
    if (k)
        clReleaseKernel(k);
    return has;
}

/* Add kernel name to the range kernels; in the array variant with the pointer mask and the
 * refusal (may be NULL) it has. */
static clf_status add_range_kernel(clf_program *p, const char *name, uint64_t mask,
                                   const char *why)
{
    size_t n = p->nrange_kernels;
    char **v = realloc(p->range_kernels, (n + 1) * sizeof *v);
    if (!v)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    p->range_kernels = v;
    if (p->array_variant_of) {
        char **w = realloc(p->array_why, (n + 1) * sizeof *w);
        if (!w)
            return CLF_ERROR_OUT_OF_HOST_MEMORY;
        p->array_why = w;
        uint64_t *m = realloc(p->array_ptrs, (n + 1) * sizeof *m);
        if (!m)
            return CLF_ERROR_OUT_OF_HOST_MEMORY;
        p->array_ptrs = m;
        m[n] = mask;
        if (!(w[n] = why ? strdup(why) : NULL) && why)
            return CLF_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (!(v[n] = strdup(name))) {
        if (p->array_variant_of)
            free(p->array_why[n]);
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    }
    p->nrange_kernels = n + 1;
    return CLF_SUCCESS;
}

/*
 * The kernels that have the hidden range parameter, as the driver names them. The source
 * scan (rangearg.c) names a kernel by the word before its '(': a kernel whose name is a
 * macro (`#define KNAME my_kernel`, `__kernel void KNAME(...)`) got the parameter under a
 * name no call uses, and a launch of my_kernel would then set no range and count one
 * argument too many. The driver's kernel names (built on device dev) and each unlisted
 * kernel's last parameter say which kernels really have it. In the array variant, a kernel
 * found so takes the pointer mask of the one scanned name the driver lacks; with several
 * such names, which is which is unknown, and clf_array_launch refuses the kernel.
 */
static clf_status range_kernels_from_driver(clf_program *p, size_t dev)
{
    clf_status st = CLF_SUCCESS;
    size_t len = 0;
    char *all = NULL;
    if (!p->nrange_kernels ||
        clGetProgramInfo(p->prog[dev], CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len) != CL_SUCCESS ||
        !len)
        return CLF_SUCCESS; /* nothing got the parameter, or the driver cannot say */
    if (!(all = calloc(len + 1, 1)))
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory");
    if (clGetProgramInfo(p->prog[dev], CL_PROGRAM_KERNEL_NAMES, len, all, NULL) != CL_SUCCESS)
        goto out;
    /* The scanned names the driver does not have: macro names. */
    size_t scanned = p->nrange_kernels, stray = 0, stray_at = 0;
    for (size_t i = 0; i < scanned; i++) {
        int found = 0;
        for (char *k = all; *k && !found;) {
            size_t l = strcspn(k, ";");
            found = l == strlen(p->range_kernels[i]) && !strncmp(k, p->range_kernels[i], l);
            k += l + (k[l] == ';');
        }
        if (!found) {
            stray++;
            stray_at = i;
        }
    }
    if (!stray)
        goto out;
    for (char *save = NULL, *k = strtok_r(all, ";", &save); k && st == CLF_SUCCESS;
         k = strtok_r(NULL, ";", &save)) {
        if (listed(p->range_kernels, p->nrange_kernels, k) || !has_range_param(p, dev, k))
            continue;
        uint64_t mask = 0;
        const char *why = NULL;
        char buf[400];
        if (p->array_variant_of && stray == 1) {
            mask = p->array_ptrs[stray_at];
            why = p->array_why[stray_at];
        } else if (p->array_variant_of) {
            snprintf(buf, sizeof buf, "its name is made by a macro, like %zu other kernels of "
                     "the program, and clfleet cannot tell which of the source's kernel "
                     "definitions it is; define it under its own name", stray - 1);
            why = buf;
        }
        clf__log(CLF_LOG_DEBUG, "program %.12s: kernel '%s' has the hidden range parameter "
                 "under a macro name", p->hash, k);
        if (add_range_kernel(p, k, mask, why) != CLF_SUCCESS)
            st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory");
    }
out:
    free(all);
    return st;
}

/* Build source for every device of fleet: a user program, or (variant_of set) the array
 * variant of variant_of. */
static clf_status build_program(clf_program **out, clf_fleet *fleet, const char *source,
                                const char *options, const clf_program *variant_of,
                                const char *call)
{
    clf_status st = CLF_SUCCESS;
    char *full = NULL, *rewritten = NULL;
    clf_program *p = calloc(1, sizeof *p);
    if (!p)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory");
    p->fleet = fleet;
    clf__fleet_ref(fleet);
    p->holds_fleet = 1;
    p->array_variant_of = variant_of;
    p->build_call = call;
    if (!variant_of && (!(p->source = strdup(source)) ||
                        !(p->options = strdup(options ? options : ""))))
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory"));
    /* get_global_size() and get_num_groups() read a hidden kernel parameter (rangearg.c),
     * switched on by CLF__RANGE_ARG in the prelude. The array variant has it in every
     * kernel, after the part offsets. */
    if (variant_of) {
        CLF__TRY(st, clf__array_rewrite(source, &rewritten, &p->range_kernels,
                                        &p->nrange_kernels, &p->array_why, &p->array_ptrs));
        p->range_named = variant_of->range_named | CLF__NAMES_SIZES;
    } else {
        CLF__TRY(st, clf__range_rewrite(source, &rewritten, &p->range_kernels,
                                        &p->nrange_kernels, &p->range_named));
    }
    /* The prelude (cl/clfleet.h) comes first; #line keeps the user's line numbers. */
    const char *body = rewritten ? rewritten : source,
               *on = rewritten ? "#define CLF__RANGE_ARG 1\n" : "";
    size_t olen = strlen(on), plen = strlen(clf__kernel_prelude), slen = strlen(body);
    full = malloc(olen + plen + slen + 16);
    if (!full)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory"));
    memcpy(full, on, olen);
    memcpy(full + olen, clf__kernel_prelude, plen);
    memcpy(full + olen + plen, "#line 1\n", 8);
    memcpy(full + olen + plen + 8, body, slen + 1);
    slen = strlen(source);
    clf__sha256 h;
    unsigned char digest[32];
    clf__sha256_init(&h);
    clf__sha256_update(&h, source, slen);
    clf__sha256_update(&h, "", 1);
    clf__sha256_update(&h, options ? options : "", options ? strlen(options) : 0);
    clf__sha256_final(&h, digest);
    clf__sha256_hex(digest, p->hash);
    /* The included files are part of the binary's key; where they cannot be followed, a
     * cached binary could be stale, so the cache is not used at all. */
    if (fleet->cache_dir) {
        char why[300];
        if (clf__include_digest(source, options, p->includes, why, sizeof why) < 0) {
            p->no_cache = 1;
            clf__log(CLF_LOG_DEBUG, "program %.12s: not using the binary cache: %s", p->hash,
                     why);
        }
    }
    p->prog = calloc(fleet->ndev, sizeof *p->prog);
    p->from_cache = calloc(fleet->ndev, 1);
    p->built = calloc(fleet->ndev, 1);
    p->log = calloc(fleet->ndev, sizeof *p->log);
    if (!p->prog || !p->from_cache || !p->built || !p->log)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory"));
    /* Build for every device: the program is for every device it builds on. */
    for (size_t d = 0; d < fleet->ndev; d++)
        CLF__TRY(st, build_device(p, d, full, options ? options : ""));
    size_t built = 0;
    for (size_t d = 0; d < fleet->ndev; d++)
        built += p->built[d];
    if (built == 0) {
        clf__fail(CLF_ERROR_BUILD, "the program built for none of the %zu device(s):",
                  fleet->ndev);
        clf__program_append_logs(p);
        st = CLF_ERROR_BUILD;
        goto out;
    }
    for (size_t d = 0; d < fleet->ndev; d++)
        if (p->built[d]) {
            CLF__TRY(st, range_kernels_from_driver(p, d));
            break;
        }
    clf_clear_error();
    if (built < fleet->ndev) {
        /* Not a failure: the detail says which devices launches will leave out. */
        clf__fail(CLF_SUCCESS, "the program built for %zu of %zu devices; launches with it "
                               "leave out the others:",
                  built, fleet->ndev);
        clf__program_append_logs(p);
    }
out:
    free(full);
    free(rewritten);
    if (st != CLF_SUCCESS) {
        clf_program_destroy(p);
        return st;
    }
    *out = p;
    return CLF_SUCCESS;
}

clf_status clf_program_build_source(clf_program **out, clf_fleet *fleet, const char *source,
                                    const char *options)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_source: out is NULL");
    *out = NULL;
    if (!fleet || !source)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_source: %s is NULL",
                         fleet ? "source" : "fleet");
    if (!source[0])
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf_program_build_source: source is empty");
    return build_program(out, fleet, source, options, NULL, "clf_program_build_source");
}

/* A source of clfleet's own or read from a file, built for the public call named. */
static clf_status build_as(clf_program **out, clf_fleet *fleet, const char *source,
                           const char *options, const char *call)
{
    if (!source[0])
        return clf__fail(CLF_ERROR_ZERO_SIZE, "%s: the source is empty", call);
    return build_program(out, fleet, source, options, NULL, call);
}

/* Serialises the first array launches of a program: one variant is built. */
static pthread_mutex_t variant_lock = PTHREAD_MUTEX_INITIALIZER;

clf_status clf__program_array_variant(clf_program *p, clf_program **out)
{
    clf_status st = CLF_SUCCESS;
    *out = NULL;
    if (p->array_variant_of)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "program: an array variant has no variant");
    pthread_mutex_lock(&variant_lock);
    if (!p->array_variant) {
        if (!p->source)
            st = clf__fail(CLF_ERROR_UNSUPPORTED, "program %.12s: no source kept to build its "
                           "array variant", p->hash);
        else
            st = build_program(&p->array_variant, p->fleet, p->source, p->options, p,
                               "clf_array_launch (the program's array variant)");
        if (st != CLF_SUCCESS) {
            char detail[1024];
            snprintf(detail, sizeof detail, "%s", clf_last_error());
            clf__fail(st, "building the array variant of program %.12s (its kernels get the "
                      "hidden parameter " CLF__PART_ARG_NAME "): %s", p->hash, detail);
        }
    }
    *out = p->array_variant;
    pthread_mutex_unlock(&variant_lock);
    return st;
}

uint64_t clf__program_array_mask(const clf_program *v, const char *kernel)
{
    for (size_t i = 0; v->array_ptrs && i < v->nrange_kernels; i++)
        if (!strcmp(v->range_kernels[i], kernel))
            return v->array_ptrs[i];
    return 0;
}

const char *clf__program_array_why(const clf_program *v, const char *kernel)
{
    for (size_t i = 0; v->array_why && i < v->nrange_kernels; i++)
        if (!strcmp(v->range_kernels[i], kernel))
            return v->array_why[i];
    return NULL;
}

static clf_status build_file(clf_program **out, clf_fleet *fleet, const char *path,
                             const char *options, const char *call)
{
    char *src = NULL;
    clf_status st = clf__read_file(path, &src, NULL);
    if (st == CLF_SUCCESS)
        st = build_as(out, fleet, src, options, call);
    free(src);
    return st;
}

clf_status clf_program_build_file(clf_program **out, clf_fleet *fleet, const char *path,
                                  const char *options)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_file: out is NULL");
    *out = NULL;
    if (!fleet || !path)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_file: %s is NULL",
                         fleet ? "path" : "fleet");
    return build_file(out, fleet, path, options, "clf_program_build_file");
}

const char *const *clf_shipped_kernels(void)
{
    return clf__shipped_names;
}

const char *clf_shipped_kernel_source(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; clf__shipped_kernels[i].name; i++)
        if (strcmp(clf__shipped_kernels[i].name, name) == 0)
            return clf__shipped_kernels[i].source;
    return NULL;
}

clf_status clf_program_build_shipped(clf_program **out, clf_fleet *fleet, const char *name,
                                     const char *options)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_shipped: out is NULL");
    *out = NULL;
    if (!fleet || !name)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_shipped: %s is NULL",
                         fleet ? "name" : "fleet");
    /* Names become file names: letters, digits, '_' and '-' only. */
    size_t len = strlen(name);
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-')
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "bad kernel name '%s'", name);
    if (len == 0 || len > 128)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "bad kernel name length %zu", len);

    const char *dir = getenv("CLFLEET_KERNEL_DIR");
    if (dir && dir[0]) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.cl", dir, name);
        FILE *f = fopen(path, "rb");
        if (f) {
            fclose(f);
            return build_file(out, fleet, path, options, "clf_program_build_shipped");
        }
    }
    const char *src = clf_shipped_kernel_source(name);
    if (!src)
        return clf__fail(CLF_ERROR_NOT_FOUND, "no shipped kernel '%s'", name);
    return build_as(out, fleet, src, options, "clf_program_build_shipped");
}

int clf_program_from_cache(const clf_program *p, size_t device)
{
    if (!p || device >= p->fleet->ndev)
        return 0;
    return p->from_cache[device];
}

int clf_program_device_ok(const clf_program *p, size_t device)
{
    if (!p || device >= p->fleet->ndev)
        return 0;
    return p->built[device];
}

const char *clf_program_build_log(const clf_program *p, size_t device)
{
    if (!p || device >= p->fleet->ndev || p->built[device])
        return NULL;
    return p->log[device] ? p->log[device] : "";
}

clf_status clf__program_check_device(const clf_program *p, size_t device)
{
    if (p->built[device])
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_BUILD,
                     "the program did not build for device %zu '%s' (clf_program_build_log()): "
                     "%.300s",
                     device, p->fleet->dev[device].info.name,
                     p->log[device] ? p->log[device] : "");
}

void clf_program_destroy(clf_program *p)
{
    if (!p)
        return;
    /* clf_kernel_enqueue()'s idle kernels (kernel.c; no call uses the program now): they
     * hold the cl_programs. */
    for (struct clf__kernel_idle *e = p->idle_kernels, *next; e; e = next) {
        next = e->next;
        clReleaseKernel(e->k);
        free(e);
    }
    for (size_t i = 0; p->prog && i < p->fleet->ndev; i++)
        if (p->prog[i])
            clReleaseProgram(p->prog[i]);
    free(p->prog);
    free(p->from_cache);
    free(p->built);
    for (size_t d = 0; p->log && d < p->fleet->ndev; d++)
        free(p->log[d]);
    free(p->log);
    for (size_t i = 0; i < p->nrange_kernels; i++) {
        free(p->range_kernels[i]);
        free(p->array_why ? p->array_why[i] : NULL);
    }
    free(p->range_kernels);
    free(p->array_why);
    free(p->array_ptrs);
    free(p->source);
    free(p->options);
    clf_program_destroy(p->array_variant);
    clf_fleet *fl = p->holds_fleet ? p->fleet : NULL;
    free(p);
    if (fl)
        clf__fleet_unref(fl); /* last: it may tear the fleet down */
}

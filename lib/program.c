/*
 * Programs built for every device of a fleet, one cl_program per context,
 * with a binary cache keyed by source, options, device, driver and platform.
 */
#include "internal.h"
#include "fault.h"

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

/* The devices of context ci, in fleet order. */
static size_t context_devices(const clf_fleet *fl, size_t ci, cl_device_id *ids, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < fl->ndev; i++)
        if (fl->dev[i].ctx == fl->ctx[ci]) {
            ids[n] = fl->dev[i].id;
            idx[n++] = i;
        }
    return n;
}

static void device_key(const struct clf__device *d, const char *src, const char *opts,
                       unsigned char key[32])
{
    char platform[sizeof d->info.platform + sizeof d->info.platform_vendor + 2];
    snprintf(platform, sizeof platform, "%s\n%s", d->info.platform, d->info.platform_vendor);
    clf__cache_key_parts parts = {src, opts, d->info.name, d->info.driver_version, platform};
    clf__cache_key(key, &parts);
}

/* Note why the build failed on fleet device dev: the call's error and the compiler's log. */
static clf_status set_log(clf_program *p, size_t dev, const char *what, const char *log)
{
    size_t n = strlen(what) + (log ? strlen(log) : 0) + 2;
    char *s = malloc(n);
    if (!s)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "build: out of memory");
    snprintf(s, n, "%s%s%s", what, log && log[0] ? "\n" : "", log ? log : "");
    free(p->log[dev]);
    p->log[dev] = s;
    return CLF_SUCCESS;
}

/* The driver's build log of one device (malloc'd; NULL when there is none). */
static char *build_log(cl_program prog, cl_device_id id)
{
    size_t len = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) == CL_SUCCESS &&
        (log = calloc(len + 1, 1)) != NULL &&
        clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, len, log, NULL) != CL_SUCCESS)
        log[0] = '\0';
    return log;
}

/* Store each device's binary; a cache that cannot be written only costs time. */
static void store_binaries(cl_program prog, const clf_fleet *fl, const size_t *idx, size_t n,
                           const char *src, const char *opts)
{
    cl_uint np = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof np, &np, NULL) != CL_SUCCESS ||
        np == 0)
        return;
    cl_device_id *pdev = calloc(np, sizeof *pdev);
    size_t *sizes = calloc(np, sizeof *sizes);
    unsigned char **bins = calloc(np, sizeof *bins);
    if (!pdev || !sizes || !bins)
        goto out;
    if (clGetProgramInfo(prog, CL_PROGRAM_DEVICES, np * sizeof *pdev, pdev, NULL) != CL_SUCCESS ||
        clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, np * sizeof *sizes, sizes, NULL) !=
            CL_SUCCESS)
        goto out;
    for (cl_uint j = 0; j < np; j++)
        if (sizes[j] && !(bins[j] = malloc(sizes[j])))
            goto out;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, np * sizeof *bins, bins, NULL) != CL_SUCCESS)
        goto out;
    for (size_t k = 0; k < n; k++) {
        const struct clf__device *d = &fl->dev[idx[k]];
        for (cl_uint j = 0; j < np; j++)
            if (pdev[j] == d->id && sizes[j]) {
                unsigned char key[32];
                device_key(d, src, opts, key);
                clf_status st = clf__cache_store(fl->cache_dir, key, bins[j], sizes[j]);
                (void)st; /* a failed store is not the build's failure */
            }
    }
out:
    for (cl_uint j = 0; bins && j < np; j++)
        free(bins[j]);
    free(bins);
    free(sizes);
    free(pdev);
}

/* Try to create the context's program from cached binaries; all devices must hit. */
static cl_program from_cache(const clf_fleet *fl, size_t ci, const cl_device_id *ids,
                             const size_t *idx, size_t n, const char *src, const char *opts)
{
    cl_program prog = NULL;
    unsigned char **bins = calloc(n, sizeof *bins);
    size_t *lens = calloc(n, sizeof *lens);
    cl_int *bst = calloc(n, sizeof *bst);
    size_t k = 0;
    if (!bins || !lens || !bst)
        goto out;
    for (; k < n; k++) {
        unsigned char key[32];
        device_key(&fl->dev[idx[k]], src, opts, key);
        if (!clf__cache_load(fl->cache_dir, key, &bins[k], &lens[k]))
            goto out;
    }
    cl_int err;
    prog = clCreateProgramWithBinary(fl->ctx[ci], (cl_uint)n, ids, lens,
                                     (const unsigned char **)bins, bst, &err);
    if (err != CL_SUCCESS) {
        prog = NULL;
        goto out;
    }
    if (clBuildProgram(prog, (cl_uint)n, ids, opts, NULL, NULL) != CL_SUCCESS) {
        /* A binary the driver no longer accepts: rebuild from source. */
        clReleaseProgram(prog);
        prog = NULL;
    }
out:
    for (size_t j = 0; bins && j < n; j++)
        free(bins[j]);
    free(bins);
    free(lens);
    free(bst);
    return prog;
}

/*
 * Build context ci's program for the devices it can be built for: a device whose build
 * fails (or an injected fault) is noted with its log and left out, and the program is built
 * again for the others, so that it holds exactly the devices it runs on. Only an error
 * that is not the build's (out of memory, say) fails the call.
 */
static clf_status build_context(clf_program *p, size_t ci, const char *src, const char *opts)
{
    clf_fleet *fl = p->fleet;
    clf_status st = CLF_SUCCESS;
    cl_program prog = NULL;
    cl_device_id *ids = calloc(fl->ndev, sizeof *ids);
    size_t *idx = calloc(fl->ndev, sizeof *idx);
    if (!ids || !idx)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "build: out of memory"));
    size_t n = context_devices(fl, ci, ids, idx), m = 0;
    for (size_t k = 0; k < n; k++) {
        cl_int err = CLF__FAULT(fl, idx[k], CLF__FAULT_BUILD);
        if (err == CL_SUCCESS) {
            ids[m] = ids[k];
            idx[m++] = idx[k];
            continue;
        }
        char what[160];
        snprintf(what, sizeof what, "clBuildProgram: %s (%d) (injected by CLFLEET_FAULT_INJECT)",
                 clf__cl_error_name(err), (int)err);
        CLF__TRY(st, set_log(p, idx[k], what, NULL));
    }
    while (m > 0) {
        if (fl->cache_dir && (prog = from_cache(fl, ci, ids, idx, m, src, opts)) != NULL) {
            for (size_t k = 0; k < m; k++)
                p->from_cache[idx[k]] = 1;
            break;
        }
        cl_int err;
        prog = clCreateProgramWithSource(fl->ctx[ci], 1, &src, NULL, &err);
        if (err != CL_SUCCESS) {
            prog = NULL;
            CLF__TRY(st, clf__cl_fail(err, "clCreateProgramWithSource", &fl->dev[idx[0]]));
        }
        err = clBuildProgram(prog, (cl_uint)m, ids, opts, NULL, NULL);
        if (err == CL_SUCCESS) {
            if (fl->cache_dir)
                store_binaries(prog, fl, idx, m, src, opts);
            break;
        }
        if (err != CL_BUILD_PROGRAM_FAILURE && err != CL_INVALID_BUILD_OPTIONS)
            CLF__TRY(st, clf__cl_fail(err, "clBuildProgram", &fl->dev[idx[0]]));
        /* Keep the devices it built for (every one that reports success), and try again. */
        size_t keep = 0;
        for (size_t k = 0; k < m; k++) {
            cl_build_status bs = CL_BUILD_NONE;
            clGetProgramBuildInfo(prog, ids[k], CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL);
            if (bs == CL_BUILD_SUCCESS && err == CL_BUILD_PROGRAM_FAILURE) {
                ids[keep] = ids[k];
                idx[keep++] = idx[k];
                continue;
            }
            char what[600], *log = build_log(prog, ids[k]);
            snprintf(what, sizeof what, "clBuildProgram: %s (%d); options '%.500s'",
                     clf__cl_error_name(err), (int)err, opts);
            st = set_log(p, idx[k], what, log);
            free(log);
            if (st != CLF_SUCCESS)
                goto out;
        }
        clReleaseProgram(prog);
        prog = NULL;
        m = keep;
    }
    for (size_t k = 0; k < m; k++)
        p->built[idx[k]] = 1;
out:
    if (st == CLF_SUCCESS)
        p->prog[ci] = prog;
    else if (prog)
        clReleaseProgram(prog);
    free(ids);
    free(idx);
    return st;
}

/* Every left-out device's name and log, appended to the detail message. */
static void append_logs(const clf_program *p)
{
    const clf_fleet *fl = p->fleet;
    for (size_t d = 0; d < fl->ndev; d++)
        if (!p->built[d])
            clf__append_error("\n--- device %zu '%s' (%s) build log ---\n%s", d,
                              fl->dev[d].info.name, fl->dev[d].info.platform,
                              p->log[d] ? p->log[d] : "(empty)");
}

clf_status clf_program_build_source(clf_program **out, clf_fleet *fleet, const char *source,
                                    const char *options)
{
    clf_status st = CLF_SUCCESS;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_source: out is NULL");
    *out = NULL;
    if (!fleet || !source)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_program_build_source: %s is NULL",
                         fleet ? "source" : "fleet");
    if (!source[0])
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf_program_build_source: source is empty");
    char *full = NULL;
    clf_program *p = calloc(1, sizeof *p);
    if (!p)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory");
    p->fleet = fleet;
    clf__fleet_ref(fleet);
    p->holds_fleet = 1;
    /* The prelude (cl/clfleet.h) comes first; #line keeps the user's line numbers. */
    size_t plen = strlen(clf__kernel_prelude), slen = strlen(source);
    full = malloc(plen + slen + 16);
    if (!full)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory"));
    memcpy(full, clf__kernel_prelude, plen);
    memcpy(full + plen, "#line 1\n", 8);
    memcpy(full + plen + 8, source, slen + 1);
    clf__sha256 h;
    unsigned char digest[32];
    clf__sha256_init(&h);
    clf__sha256_update(&h, source, slen);
    clf__sha256_update(&h, "", 1);
    clf__sha256_update(&h, options ? options : "", options ? strlen(options) : 0);
    clf__sha256_final(&h, digest);
    clf__sha256_hex(digest, p->hash);
    p->prog = calloc(fleet->nctx, sizeof *p->prog);
    p->from_cache = calloc(fleet->ndev, 1);
    p->built = calloc(fleet->ndev, 1);
    p->log = calloc(fleet->ndev, sizeof *p->log);
    if (!p->prog || !p->from_cache || !p->built || !p->log)
        CLF__TRY(st, clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "program: out of memory"));
    /* Build in every context: the program is for every device it builds on. */
    for (size_t ci = 0; ci < fleet->nctx; ci++)
        CLF__TRY(st, build_context(p, ci, full, options ? options : ""));
    size_t built = 0;
    for (size_t d = 0; d < fleet->ndev; d++)
        built += p->built[d];
    if (built == 0) {
        clf__fail(CLF_ERROR_BUILD, "the program built for none of the %zu device(s):",
                  fleet->ndev);
        append_logs(p);
        st = CLF_ERROR_BUILD;
        goto out;
    }
    clf_clear_error();
    if (built < fleet->ndev) {
        /* Not a failure: the detail says which devices launches will leave out. */
        clf__fail(CLF_SUCCESS, "the program built for %zu of %zu devices; launches with it "
                               "leave out the others:",
                  built, fleet->ndev);
        append_logs(p);
    }
out:
    free(full);
    if (st != CLF_SUCCESS) {
        clf_program_destroy(p);
        return st;
    }
    *out = p;
    return CLF_SUCCESS;
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
    char *src = NULL;
    clf_status st = clf__read_file(path, &src, NULL);
    if (st == CLF_SUCCESS)
        st = clf_program_build_source(out, fleet, src, options);
    free(src);
    return st;
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
            return clf_program_build_file(out, fleet, path, options);
        }
    }
    const char *src = clf_shipped_kernel_source(name);
    if (!src)
        return clf__fail(CLF_ERROR_NOT_FOUND, "no shipped kernel '%s'", name);
    return clf_program_build_source(out, fleet, src, options);
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
    for (size_t i = 0; p->prog && i < p->fleet->nctx; i++)
        if (p->prog[i])
            clReleaseProgram(p->prog[i]);
    free(p->prog);
    free(p->from_cache);
    free(p->built);
    for (size_t d = 0; p->log && d < p->fleet->ndev; d++)
        free(p->log[d]);
    free(p->log);
    clf_fleet *fl = p->holds_fleet ? p->fleet : NULL;
    free(p);
    if (fl)
        clf__fleet_unref(fl); /* last: it may tear the fleet down */
}

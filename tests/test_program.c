/* Run-time builds on every device: good and bad sources, shipped kernels, the cache. */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clfleet/opencl.h"

static char cache_dir[256];

static void make_cache_dir(void)
{
    snprintf(cache_dir, sizeof cache_dir, "%s/clfleet-test-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(cache_dir));
}

static void remove_cache_dir(void)
{
    DIR *d = opendir(cache_dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' || strncmp(e->d_name, ".tmp", 4) == 0) {
            snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(cache_dir);
}

/* Apply fn to every cache entry; returns how many there are. */
static size_t for_each_entry(void (*fn)(const char *path, size_t i))
{
    DIR *d = opendir(cache_dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".clfbin")) {
            snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
            if (fn)
                fn(path, n);
            n++;
        }
    closedir(d);
    return n;
}

static void check_private(const char *path, size_t i)
{
    (void)i;
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0600);
}

/* Truncate one entry, overwrite another with garbage. */
static void corrupt(const char *path, size_t i)
{
    if (i % 2 == 0) {
        ck_assert_int_eq(truncate(path, 40), 0);
    } else {
        FILE *f = fopen(path, "r+b");
        ck_assert_ptr_nonnull(f);
        fseek(f, -7, SEEK_END);
        fputc('#', f);
        fclose(f);
    }
}

/* Identical devices (name and driver) share a cache entry: with a context per
 * device, a twin built after the first hits the entry the first just stored. */
static int has_earlier_twin(clf_fleet *f, size_t d, int per_device_contexts)
{
    clf_device_info in, earlier;
    ck_assert_ok(clf_device_get_info(&in, f, d));
    for (size_t e = 0; e < d && per_device_contexts; e++) {
        ck_assert_ok(clf_device_get_info(&earlier, f, e));
        if (!strcmp(in.name, earlier.name) && !strcmp(in.driver_version, earlier.driver_version))
            return 1;
    }
    return 0;
}

/* Run vadd on one device through the interop handles; compare with C. */
static void run_vadd(clf_fleet *f, clf_program *p, size_t dev)
{
    enum { N = 4099 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)i * 0.5f, b[i] = (float)(N - i);
    clf_buffer *ba, *bb, *bc;
    ck_assert_ok(clf_buffer_create(&ba, f, dev, sizeof a, CLF_MEM_READ_ONLY));
    ck_assert_ok(clf_buffer_create(&bb, f, dev, sizeof b, CLF_MEM_READ_ONLY));
    ck_assert_ok(clf_buffer_create(&bc, f, dev, sizeof c, CLF_MEM_WRITE_ONLY));
    ck_assert_ok(clf_buffer_write(ba, 0, sizeof a, a));
    ck_assert_ok(clf_buffer_write(bb, 0, sizeof b, b));
    cl_int err;
    cl_kernel k = clCreateKernel(clf_cl_program(p, dev), "vadd", &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem ma = clf_cl_mem(ba), mb = clf_cl_mem(bb), mc = clf_cl_mem(bc);
    clSetKernelArg(k, 0, sizeof ma, &ma);
    clSetKernelArg(k, 1, sizeof mb, &mb);
    clSetKernelArg(k, 2, sizeof mc, &mc);
    size_t global = N;
    cl_command_queue q = clf_cl_compute_queue(f, dev);
    ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL), 0);
    ck_assert_int_eq(clFinish(q), CL_SUCCESS);
    ck_assert_ok(clf_buffer_read(bc, 0, sizeof c, c));
    for (int i = 0; i < N; i++)
        ck_assert_msg(c[i] == a[i] + b[i], "device %zu c[%d] = %g", dev, i, (double)c[i]);
    clReleaseKernel(k);
    clf_buffer_destroy(ba);
    clf_buffer_destroy(bb);
    clf_buffer_destroy(bc);
}

START_TEST(shipped_kernel_runs_everywhere)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_shipped(&p, f, "vector", "-cl-std=CL1.2"));
    for (size_t d = 0; d < clf_fleet_device_count(f); d++)
        run_vadd(f, p, d);
    clf_program_destroy(p);
    ck_assert_status(clf_program_build_shipped(&p, f, "no_such_kernel", NULL),
                     CLF_ERROR_NOT_FOUND);
    ck_assert_status(clf_program_build_shipped(&p, f, "../etc/passwd", NULL),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_program_build_shipped(&p, f, "", NULL), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(p);
    clf_fleet_destroy(f);
}
END_TEST

/* The "--- device 2 '...'" and "--- devices 0-1, 3 '...'" headers of a build failure's
 * detail: how many, and in seen[d] how many of them name device d. */
static size_t log_headers(const char *msg, size_t *seen, size_t max)
{
    size_t headers = 0;
    for (const char *h = strstr(msg, "\n--- device"); h; h = strstr(h + 1, "\n--- device")) {
        headers++;
        const char *q = h + strlen("\n--- device");
        if (*q == 's')
            q++;
        while (*q == ' ' || *q == ',') {
            char *end;
            size_t a = strtoul(q + 1, &end, 10), b = a;
            if (end == q + 1)
                break;
            if (*end == '-')
                b = strtoul(end + 1, &end, 10);
            for (size_t d = a; d <= b && d < max; d++)
                seen[d]++;
            q = end;
        }
    }
    return headers;
}

START_TEST(bad_build_reports_every_device)
{
    clf_fleet *f = test_fleet(TEST_CPUS, _i);
    clf_program *p = (clf_program *)f;
    ck_assert_status(clf_program_build_source(&p, f,
                                              "__kernel void broken(__global int *x) {\n"
                                              "    x[0] = undeclared_thing;\n}\n",
                                              NULL),
                     CLF_ERROR_BUILD);
    ck_assert_ptr_null(p);
    const char *msg = clf_last_error();
    ck_assert_msg(strstr(msg, "undeclared_thing") != NULL, "compiler log in: %s", msg);
    size_t seen[64] = {0};
    log_headers(msg, seen, 64);
    for (size_t d = 0; d < clf_fleet_device_count(f); d++)
        ck_assert_msg(seen[d] == 1, "device %zu named in %zu build log headers: %s", d, seen[d],
                      msg);
    ck_assert_status(clf_program_build_source(&p, f, "__kernel void k(void) {}", "-bogus-opt"),
                     CLF_ERROR_BUILD);
    ck_assert_status(clf_program_build_source(&p, f, "", NULL), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_program_build_source(&p, f, NULL, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_program_build_file(&p, f, "/no/such/file.cl", NULL), CLF_ERROR_IO);
    ck_assert_msg(strstr(clf_last_error(), "/no/such/file.cl") != NULL, "%s",
                  clf_last_error());
    clf_fleet_destroy(f);
}
END_TEST

/* Identical devices fail alike: one copy of the log, with every device that shares it. */
START_TEST(identical_logs_printed_once)
{
    clf_fleet *f = test_fleet(TEST_CPUS ";name=pthread;split=1", 0);
    size_t n = clf_fleet_device_count(f);
    ck_assert_uint_ge(n, 2);
    clf_program *p = NULL;
    ck_assert_status(clf_program_build_source(&p, f,
                                              "__kernel void broken(__global int *x) {\n"
                                              "    x[0] = undeclared_thing;\n}\n",
                                              NULL),
                     CLF_ERROR_BUILD);
    const char *msg = clf_last_error();
    size_t seen[64] = {0};
    ck_assert_msg(log_headers(msg, seen, 64) == 1, "one log for %zu identical devices: %s", n,
                  msg);
    char want[64];
    snprintf(want, sizeof want, "--- devices 0-%zu '", n - 1);
    ck_assert_msg(strstr(msg, want) != NULL, "'%s' in: %s", want, msg);
    for (size_t d = 0; d < n; d++)
        ck_assert_uint_eq(seen[d], 1);
    clf_fleet_destroy(f);
}
END_TEST

/* The log lines a test collects (clf_log_set_handler()). */
static char got_log[16][1024];
static int got_levels[16];
static atomic_int got_n;

static void collect_log(void *user, clf_log_level level, const char *msg)
{
    (void)user;
    int i = atomic_fetch_add(&got_n, 1);
    if (i < 16) {
        snprintf(got_log[i], sizeof got_log[i], "%s", msg);
        got_levels[i] = (int)level;
    }
}

/* How many collected lines have both words. */
static int logged(const char *a, const char *b)
{
    int n = 0, all = atomic_load(&got_n);
    for (int i = 0; i < all && i < 16; i++)
        n += strstr(got_log[i], a) && strstr(got_log[i], b);
    return n;
}

/* A compile from source is announced once per build, at info, naming the call the program
 * made; a build from the binary cache and the default level (warn) say nothing. */
START_TEST(compile_note_names_the_call)
{
    char nonce[96], src[256];
    snprintf(nonce, sizeof nonce, "-DCLF_NONCE=%ld%ld", (long)getpid(), (long)time(NULL));
    snprintf(src, sizeof src, "/* %s */ __kernel void k(__global int *x) { x[0] = 1; }\n",
             nonce);
    setenv("CLFLEET_LOG", "info", 1);
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    atomic_store(&got_n, 0);
    clf_log_set_handler(collect_log, NULL);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    ck_assert_msg(logged("clf_program_build_source: compiling program", "can take seconds") ==
                      1,
                  "one note for %zu devices, got %d lines, first: %s", clf_fleet_device_count(f),
                  atomic_load(&got_n), got_log[0]);
    for (int i = 0; i < atomic_load(&got_n) && i < 16; i++)
        if (strstr(got_log[i], "compiling program"))
            ck_assert_int_eq(got_levels[i], CLF_LOG_INFO);
    clf_program_destroy(p);
    /* The same source again comes from the binary cache: no compile, no note. */
    atomic_store(&got_n, 0);
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    int cached = clf_program_from_cache(p, 0);
    ck_assert_int_eq(logged("compiling program", ""), cached ? 0 : 1);
    clf_program_destroy(p);
    /* Built through another call: that call is named. */
    atomic_store(&got_n, 0);
    ck_assert_ok(clf_program_build_shipped(&p, f, "vector", nonce));
    ck_assert_int_eq(logged("clf_program_build_shipped: compiling program", ""), 1);
    clf_program_destroy(p);
    clf_fleet_destroy(f);

    /* At the default level, nothing. */
    unsetenv("CLFLEET_LOG");
    f = test_fleet(TEST_CPUS, 0);
    atomic_store(&got_n, 0);
    snprintf(src, sizeof src, "/* %s-2 */ __kernel void k(__global int *x) { x[0] = 2; }\n",
             nonce);
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    ck_assert_int_eq(logged("compiling program", ""), 0);
    clf_program_destroy(p);
    clf_log_set_handler(NULL, NULL);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(cache_hit_and_rebuild_after_corruption)
{
    make_cache_dir();
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = cache_dir;
    o.context_per_device = _i;
    clf_fleet *f;
    ck_assert_ok(clf_fleet_create(&f, &o));
    size_t n = clf_fleet_device_count(f);
    /* A source no earlier run has built: the first build cannot hit. */
    char src[256];
    snprintf(src, sizeof src,
             "/* %ld %d */ __kernel void twice(__global int *x) { x[get_global_id(0)] *= 2; }\n",
             (long)time(NULL), (int)getpid());
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, src, "-DX=1"));
    for (size_t d = 0; d < n; d++)
        if (!has_earlier_twin(f, d, _i))
            ck_assert_msg(clf_program_from_cache(p, d) == 0, "device %zu compiled", d);
    clf_program_destroy(p);
    size_t entries = for_each_entry(check_private);
    ck_assert_uint_ge(entries, 1);

    ck_assert_ok(clf_program_build_source(&p, f, src, "-DX=1"));
    for (size_t d = 0; d < n; d++)
        ck_assert_msg(clf_program_from_cache(p, d) == 1, "device %zu from cache", d);
    clf_program_destroy(p);

    /* Other options are another program. */
    ck_assert_ok(clf_program_build_source(&p, f, src, "-DX=2"));
    ck_assert_int_eq(clf_program_from_cache(p, 0), 0);
    clf_program_destroy(p);

    /* Identical devices share an entry: in per-device contexts, a twin built
     * after the first may hit the entry the first just rebuilt. */
    for_each_entry(corrupt);
    ck_assert_ok(clf_program_build_source(&p, f, src, "-DX=1"));
    for (size_t d = 0; d < n; d++)
        if (!has_earlier_twin(f, d, _i))
            ck_assert_msg(clf_program_from_cache(p, d) == 0, "device %zu rebuilt", d);
    clf_program_destroy(p);
    ck_assert_ok(clf_program_build_source(&p, f, src, "-DX=1"));
    for (size_t d = 0; d < n; d++)
        ck_assert_int_eq(clf_program_from_cache(p, d), 1);
    /* The program built from cached binaries runs. */
    cl_int err;
    cl_kernel k = clCreateKernel(clf_cl_program(p, 0), "twice", &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    clReleaseKernel(k);
    ck_assert_int_eq(clf_program_from_cache(p, n), 0);
    clf_program_destroy(p);
    clf_fleet_destroy(f);

    /* Caching off: never from the cache. */
    o.disable_cache = 1;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_ok(clf_program_build_source(&p, f, src, "-DX=1"));
    ck_assert_int_eq(clf_program_from_cache(p, 0), 0);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    remove_cache_dir();
}
END_TEST

/* Write text to dir/name (a header a program includes). */
static void write_header(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
}

/* K as the program built in a new fleet (as a new process would) computes it, and whether
 * every device's binary came from the cache (1), none did (0), or some did (-1). */
static float build_and_run_k(const char *src, const char *opts, int *cached)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = cache_dir;
    clf_fleet *f;
    ck_assert_ok(clf_fleet_create(&f, &o));
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, src, opts));
    size_t n = clf_fleet_device_count(f), hits = 0;
    for (size_t d = 0; d < n; d++)
        hits += (size_t)clf_program_from_cache(p, d);
    *cached = hits == n ? 1 : hits == 0 ? 0 : -1;
    float out[64];
    clf_launch_desc ld = CLF_LAUNCH_DESC_INIT;
    ld.kernel = "k_value";
    ld.global[0] = 64;
    clf_arg a = CLF_OUT(out, sizeof out, sizeof *out);
    ck_assert_ok(clf_launch(f, p, &ld, &a, 1, NULL));
    for (int i = 1; i < 64; i++)
        ck_assert_msg(out[i] == out[0], "out[%d] = %g, out[0] = %g", i, (double)out[i],
                      (double)out[0]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    return out[0];
}

/* A header the source includes is part of the binary's key: a changed header is rebuilt (and
 * its new value computed), an unchanged one comes from the cache; so is a header it includes
 * in turn, and one found through CLFLEET_KERNEL_DIR-like -I paths with a trailing slash. */
START_TEST(cache_keys_included_headers)
{
    make_cache_dir();
    char inc[256];
    snprintf(inc, sizeof inc, "%s/clfleet-inc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                          : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(inc));
    char src[512], opts[320];
    /* A source no earlier run has built. */
    snprintf(src, sizeof src,
             "/* %ld %d */\n#include \"k.h\"\n"
             "__kernel void k_value(__global float *o) { o[get_global_id(0)] = K + K2; }\n",
             (long)time(NULL), (int)getpid());
    snprintf(opts, sizeof opts, "-I %s", inc);
    write_header(inc, "k.h", "#include <k2.h>\n#define K 1.0f\n");
    write_header(inc, "k2.h", "#define K2 0.25f\n");
    int cached;
    ck_assert(build_and_run_k(src, opts, &cached) == 1.25f);
    ck_assert_int_eq(cached, 0);
    /* Unchanged headers: the cached binary. */
    ck_assert(build_and_run_k(src, opts, &cached) == 1.25f);
    ck_assert_int_eq(cached, 1);
    /* The header changed: not the old binary, the new value. */
    write_header(inc, "k.h", "#include <k2.h>\n#define K 2.0f\n");
    ck_assert(build_and_run_k(src, opts, &cached) == 2.25f);
    ck_assert_int_eq(cached, 0);
    ck_assert(build_and_run_k(src, opts, &cached) == 2.25f);
    ck_assert_int_eq(cached, 1);
    /* A header included by the header changed. */
    write_header(inc, "k2.h", "#define K2 0.5f\n");
    ck_assert(build_and_run_k(src, opts, &cached) == 2.5f);
    ck_assert_int_eq(cached, 0);
    /* The same directory spelled -Idir/ keys the same files (the options differ, so the first
     * build compiles; the second hits). */
    snprintf(opts, sizeof opts, "-I%s/", inc);
    ck_assert(build_and_run_k(src, opts, &cached) == 2.5f);
    ck_assert_int_eq(cached, 0);
    write_header(inc, "k.h", "#include \"k2.h\"\n#define K 3.0f\n");
    ck_assert(build_and_run_k(src, opts, &cached) == 3.5f);
    ck_assert_int_eq(cached, 0);
    ck_assert(build_and_run_k(src, opts, &cached) == 3.5f);
    ck_assert_int_eq(cached, 1);
    /* An include clfleet cannot follow (a name made by a macro): never from the cache. */
    char msrc[600];
    snprintf(msrc, sizeof msrc, "#define HDR \"k.h\"\n#include HDR\n%s", src);
    ck_assert(build_and_run_k(msrc, opts, &cached) == 3.5f);
    ck_assert_int_eq(cached, 0);
    ck_assert(build_and_run_k(msrc, opts, &cached) == 3.5f);
    ck_assert_int_eq(cached, 0);
    write_header(inc, "k.h", "#include \"k2.h\"\n#define K 4.0f\n");
    ck_assert(build_and_run_k(msrc, opts, &cached) == 4.5f);
    ck_assert_int_eq(cached, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/k.h", inc);
    ck_assert_int_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/k2.h", inc);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(inc), 0);
    remove_cache_dir();
}
END_TEST

START_TEST(build_from_file)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    char path[256];
    snprintf(path, sizeof path, "%s/clfleet-test-%d.cl",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(clf_shipped_kernel_source("vector"), fp);
    fclose(fp);
    clf_program *p;
    ck_assert_ok(clf_program_build_file(&p, f, path, NULL));
    run_vadd(f, p, 0);
    clf_program_destroy(p);
    unlink(path);
    clf_fleet_destroy(f);
}
END_TEST

/* A source no earlier run has built, holding vadd (so run_vadd() can check it). */
static void unique_vadd_source(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/* %s %ld %d */\n%s", tag, (long)time(NULL), (int)getpid(),
             clf_shipped_kernel_source("vector"));
}

static char entry_bytes[1 << 20];
static size_t entry_len;

/* Remember one entry's bytes (the program of "another device" to plant elsewhere). */
static void keep_entry(const char *path, size_t i)
{
    if (i)
        return;
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    entry_len = fread(entry_bytes, 1, sizeof entry_bytes, fp);
    fclose(fp);
}

/* 0 garbage, 1 another key's entry, 2 unreadable (an empty directory), 3 a directory that
 * cannot be removed (it holds a file) */
static int bad_kind;

static void spoil(const char *path, size_t i)
{
    ck_assert_int_eq(unlink(path), 0);
    if (bad_kind == 2) {
        /* The tests run as root, who reads a chmod 000 file: a directory in the entry's
         * place is what root cannot read as an entry. */
        ck_assert_int_eq(mkdir(path, 0700), 0);
        return;
    }
    if (bad_kind == 3) {
        char inner[600];
        ck_assert_int_eq(mkdir(path, 0700), 0);
        snprintf(inner, sizeof inner, "%s/keep", path);
        FILE *fp = fopen(inner, "wb");
        ck_assert_ptr_nonnull(fp);
        fclose(fp);
        return;
    }
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    if (bad_kind == 1) {
        ck_assert_uint_eq(fwrite(entry_bytes, 1, entry_len, fp), entry_len);
    } else {
        unsigned x = 12345u + (unsigned)i;
        for (int k = 0; k < 3000; k++) {
            x = x * 1103515245u + 12345u;
            fputc((int)(x >> 16), fp);
        }
    }
    fclose(fp);
}

static void unspoil(const char *path, size_t i)
{
    (void)i;
    struct stat sb;
    char inner[600];
    snprintf(inner, sizeof inner, "%s/keep", path);
    unlink(inner);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        ck_assert_int_eq(rmdir(path), 0);
}

/* The warnings about the cache that the library logged. */
static atomic_int cache_warnings;

static void count_cache_warnings(void *user, clf_log_level level, const char *msg)
{
    (void)user;
    if (level == CLF_LOG_WARN && strstr(msg, "cache"))
        atomic_fetch_add(&cache_warnings, 1);
}

/* Garbage, an entry of another device's (another key's) program, and an unreadable entry
 * (an empty directory): each is ignored, the program is rebuilt from source and runs, and
 * the cache heals at once. A directory that cannot be removed: every build compiles, and
 * that is said once per process, not at every build or fleet. */
START_TEST(cache_bad_entries_rebuilt)
{
    bad_kind = _i;
    make_cache_dir();
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = cache_dir;
    clf_fleet *f;
    ck_assert_ok(clf_fleet_create(&f, &o));
    size_t n = clf_fleet_device_count(f);
    char src[8192], other[8192];
    unique_vadd_source(other, sizeof other, "other");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, other, NULL));
    clf_program_destroy(p);
    for_each_entry(keep_entry);
    ck_assert_uint_gt(entry_len, 84);
    remove_cache_dir();
    make_cache_dir();
    o.cache_dir = cache_dir;
    clf_fleet_destroy(f);
    ck_assert_ok(clf_fleet_create(&f, &o));

    unique_vadd_source(src, sizeof src, "spoiled");
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    clf_program_destroy(p);
    size_t entries = for_each_entry(spoil);
    ck_assert_uint_ge(entries, 1);
    atomic_store(&cache_warnings, 0);
    clf_log_set_handler(count_cache_warnings, NULL);
    for (int round = 0; round < 4; round++) {
        /* The spoiled entries are ignored and the rebuilt binaries replace them, but for a
         * directory that cannot be removed, so there the next build compiles again. A new
         * fleet from round 2: the report is once per process. */
        if (round == 2) {
            clf_fleet_destroy(f);
            ck_assert_ok(clf_fleet_create(&f, &o));
        }
        ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
        for (size_t d = 0; d < n; d++) {
            ck_assert_msg(clf_program_from_cache(p, d) == (bad_kind != 3 && round > 0),
                          "kind %d round %d device %zu: from cache %d", bad_kind, round, d,
                          clf_program_from_cache(p, d));
            run_vadd(f, p, d);
        }
        clf_program_destroy(p);
    }
    clf_log_set_handler(NULL, NULL);
    int warned = atomic_load(&cache_warnings);
    ck_assert_msg(warned == (bad_kind == 3), "kind %d: %d warnings about the cache", bad_kind,
                  warned);
    /* Out of the way, the entry is written again and then hits. */
    for_each_entry(unspoil);
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    clf_program_destroy(p);
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    for (size_t d = 0; d < n; d++) {
        ck_assert_int_eq(clf_program_from_cache(p, d), 1);
        run_vadd(f, p, d);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    remove_cache_dir();
}
END_TEST

/* A writer killed between creating its temporary file and renaming it leaves the file: a
 * store removes those older than an hour, and leaves younger ones (a live writer's). */
START_TEST(cache_stale_temp_files_removed)
{
    make_cache_dir();
    char old_tmp[512], new_tmp[512], other[512];
    snprintf(old_tmp, sizeof old_tmp, "%s/.tmp-AbC123", cache_dir);
    snprintf(new_tmp, sizeof new_tmp, "%s/.tmp-XyZ789", cache_dir);
    snprintf(other, sizeof other, "%s/notes.txt", cache_dir);
    const char *files[] = {old_tmp, new_tmp, other};
    for (size_t i = 0; i < 3; i++) {
        FILE *fp = fopen(files[i], "wb");
        ck_assert_ptr_nonnull(fp);
        fputs("half an entry", fp);
        fclose(fp);
    }
    time_t now = time(NULL);
    struct timespec two_hours_ago[2] = {{now - 7200, 0}, {now - 7200, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, old_tmp, two_hours_ago, 0), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, other, two_hours_ago, 0), 0);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = cache_dir;
    clf_fleet *f;
    ck_assert_ok(clf_fleet_create(&f, &o));
    char src[8192];
    unique_vadd_source(src, sizeof src, "stale");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    ck_assert_uint_ge(for_each_entry(NULL), 1);
    ck_assert_msg(access(old_tmp, F_OK) != 0, "%s is still there", old_tmp);
    ck_assert_msg(access(new_tmp, F_OK) == 0, "a young temporary file was removed");
    ck_assert_msg(access(other, F_OK) == 0, "a file that is not the cache's was removed");
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    unlink(other);
    remove_cache_dir();
}
END_TEST

/* clf_cache_info() counts the entries a build wrote and their bytes; clf_cache_clear()
 * removes them and nothing else (a file of the user's, a young temporary file, the learned
 * speeds), so that the next build compiles again. */
START_TEST(cache_info_and_clear)
{
    make_cache_dir();
    char young_tmp[512], other[512], perf[512], missing[512];
    snprintf(young_tmp, sizeof young_tmp, "%s/.tmp-Young1", cache_dir);
    snprintf(other, sizeof other, "%s/notes.txt", cache_dir);
    snprintf(perf, sizeof perf, "%s/perf-v1.tsv", cache_dir);
    snprintf(missing, sizeof missing, "%s/not-there", cache_dir);
    const char *files[] = {young_tmp, other};
    for (size_t i = 0; i < 2; i++) {
        FILE *fp = fopen(files[i], "wb");
        ck_assert_ptr_nonnull(fp);
        fputs("12345", fp);
        fclose(fp);
    }
    clf_cache_stats cs;
    ck_assert_ok(clf_cache_info(&cs, cache_dir));
    ck_assert_str_eq(cs.dir, cache_dir);
    ck_assert_int_eq(cs.exists, 1);
    ck_assert_uint_eq(cs.entries, 0);
    ck_assert_uint_eq(cs.bytes, 0);
    ck_assert_uint_eq(cs.temporary, 1);
    ck_assert_uint_eq(cs.temporary_bytes, 5);
    clf_free(cs.dir);

    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = cache_dir;
    clf_fleet *f;
    ck_assert_ok(clf_fleet_create(&f, &o));
    char src[8192];
    unique_vadd_source(src, sizeof src, "info");
    clf_program *p;
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    clf_program_destroy(p);
    size_t entries = for_each_entry(NULL);
    ck_assert_uint_ge(entries, 1);
    FILE *fp = fopen(perf, "wb"); /* as a fleet that learned speeds leaves it */
    ck_assert_ptr_nonnull(fp);
    fclose(fp);

    ck_assert_ok(clf_cache_info(&cs, cache_dir));
    ck_assert_uint_eq(cs.entries, entries);
    ck_assert_uint_gt(cs.bytes, 0);
    ck_assert_int_eq(cs.perf_model, 1);
    clf_free(cs.dir);

    size_t removed = 0;
    ck_assert_ok(clf_cache_clear(&removed, cache_dir));
    ck_assert_uint_eq(removed, entries);
    ck_assert_uint_eq(for_each_entry(NULL), 0);
    ck_assert_msg(access(other, F_OK) == 0, "a file that is not the cache's was removed");
    ck_assert_msg(access(young_tmp, F_OK) == 0, "a young temporary file was removed");
    ck_assert_msg(access(perf, F_OK) == 0, "the learned speeds were removed");
    ck_assert_ok(clf_cache_info(&cs, cache_dir));
    ck_assert_uint_eq(cs.entries, 0);
    ck_assert_uint_eq(cs.bytes, 0);
    clf_free(cs.dir);
    /* Cleared: the same source compiles again (and stores again). */
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    ck_assert_int_eq(clf_program_from_cache(p, 0), 0);
    clf_program_destroy(p);
    ck_assert_uint_eq(for_each_entry(NULL), entries);
    clf_fleet_destroy(f);

    /* A directory not created yet is an empty cache; bad arguments say what is wrong. */
    ck_assert_ok(clf_cache_info(&cs, missing));
    ck_assert_int_eq(cs.exists, 0);
    ck_assert_uint_eq(cs.entries, 0);
    ck_assert_str_eq(cs.dir, missing);
    clf_free(cs.dir);
    removed = 99;
    ck_assert_ok(clf_cache_clear(&removed, missing));
    ck_assert_uint_eq(removed, 0);
    ck_assert_status(clf_cache_info(NULL, cache_dir), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_cache_info(&cs, ""), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(cs.dir);
    ck_assert_status(clf_cache_clear(NULL, ""), CLF_ERROR_INVALID_ARGUMENT);
    /* A file where the directory should be cannot be read as one. */
    ck_assert_status(clf_cache_info(&cs, other), CLF_ERROR_IO);
    ck_assert_ptr_null(cs.dir);
    ck_assert_status(clf_cache_clear(NULL, other), CLF_ERROR_IO);

    unlink(other);
    unlink(perf);
    remove_cache_dir();
}
END_TEST

/* CLFLEET_CACHE_MAX bounds the binaries a fleet leaves in its cache directory: below one
 * entry, each store leaves only itself; a bad value fails the fleet's creation. */
START_TEST(cache_size_limit)
{
    make_cache_dir();
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = cache_dir;
    clf_fleet *f;
    char src[8192];
    clf_program *p;

    ck_assert_int_eq(setenv("CLFLEET_CACHE_MAX", "1", 1), 0);
    ck_assert_ok(clf_fleet_create(&f, &o));
    unique_vadd_source(src, sizeof src, "limit-a");
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    clf_program_destroy(p);
    ck_assert_uint_eq(for_each_entry(NULL), 1);
    unique_vadd_source(src, sizeof src, "limit-b");
    ck_assert_ok(clf_program_build_source(&p, f, src, "-DB=1"));
    clf_program_destroy(p);
    ck_assert_uint_eq(for_each_entry(NULL), 1);
    clf_fleet_destroy(f);

    /* A limit far above: every entry stays. */
    ck_assert_int_eq(setenv("CLFLEET_CACHE_MAX", "1G", 1), 0);
    ck_assert_ok(clf_fleet_create(&f, &o));
    unique_vadd_source(src, sizeof src, "limit-c");
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    clf_program_destroy(p);
    unique_vadd_source(src, sizeof src, "limit-d");
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    clf_program_destroy(p);
    ck_assert_uint_ge(for_each_entry(NULL), 3);
    clf_fleet_destroy(f);

    ck_assert_int_eq(setenv("CLFLEET_CACHE_MAX", "lots", 1), 0);
    f = NULL;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_PARSE);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(clf_last_error(), "CLFLEET_CACHE_MAX: 'lots'"), "%s", clf_last_error());
    unsetenv("CLFLEET_CACHE_MAX");
    remove_cache_dir();
}
END_TEST

/* ---- processes filling one cache at once ---------------------------------------------- */

enum { WORKER_ITERS = 6 };

/* One process of cache_concurrent_processes (this program run again with --cache-worker):
 * builds two programs every process builds and one of its own, each time running vadd
 * from it and checking the result; every third iteration it clears the directory so that
 * entries are written again while the other processes read them. */
static int cache_worker(const char *dir, int id)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = dir;
    clf_fleet *f = NULL;
    if (clf_fleet_create(&f, &o) != CLF_SUCCESS) {
        fprintf(stderr, "worker %d: fleet: %s\n", id, clf_last_error());
        return 20;
    }
    size_t n = clf_fleet_device_count(f);
    const char *vec = clf_shipped_kernel_source("vector");
    static char src[3][8192];
    snprintf(src[0], sizeof src[0], "/* shared A */\n%s", vec);
    snprintf(src[1], sizeof src[1], "/* shared B */\n%s", vec);
    snprintf(src[2], sizeof src[2], "/* own %d */\n%s", id, vec);
    enum { N = 3001 };
    static float a[N], b[N], c[N];
    unsigned hits = 0, builds = 0;
    for (int it = 0; it < WORKER_ITERS; it++) {
        for (int k = 0; k < 3; k++) {
            clf_program *p = NULL;
            if (clf_program_build_source(&p, f, src[(k + id) % 3], NULL) != CLF_SUCCESS) {
                fprintf(stderr, "worker %d: build: %s\n", id, clf_last_error());
                return 21;
            }
            builds++;
            hits += (unsigned)clf_program_from_cache(p, 0);
            for (int i = 0; i < N; i++)
                a[i] = (float)(i + it), b[i] = (float)(k * i), c[i] = -1;
            clf_arg args[] = {CLF_IN(a, sizeof a, 4), CLF_IN(b, sizeof b, 4),
                              CLF_OUT(c, sizeof c, 4)};
            clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
            d.kernel = "vadd";
            d.global[0] = N;
            size_t dev = (size_t)(it + k) % n;
            d.devices = &dev;
            d.num_devices = 1;
            if (clf_launch(f, p, &d, args, 3, NULL) != CLF_SUCCESS) {
                fprintf(stderr, "worker %d: launch: %s\n", id, clf_last_error());
                return 22;
            }
            for (int i = 0; i < N; i++)
                if (c[i] != a[i] + b[i]) {
                    fprintf(stderr, "worker %d: c[%d] = %g\n", id, i, (double)c[i]);
                    return 23;
                }
            clf_program_destroy(p);
        }
        if (it % 3 == 2) {
            DIR *dd = opendir(dir);
            struct dirent *e;
            char path[1024];
            while (dd && (e = readdir(dd)))
                if (strstr(e->d_name, ".clfbin")) {
                    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                    if (unlink(path) != 0 && errno != ENOENT)
                        return 24;
                }
            if (dd)
                closedir(dd);
        }
    }
    clf_fleet_destroy(f);
    fprintf(stderr, "cache worker %d: %u builds, %u from the cache\n", id, builds, hits);
    return 0;
}

START_TEST(cache_concurrent_processes)
{
    enum { PROCS = 4 };
    make_cache_dir();
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(len, 0);
    self[len] = '\0';
    pid_t pid[PROCS];
    for (int i = 0; i < PROCS; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i);
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0) {
            execl(self, self, "--cache-worker", cache_dir, id, (char *)NULL);
            _exit(127);
        }
    }
    for (int i = 0; i < PROCS; i++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "cache worker %d: status 0x%x", i, status);
    }
    /* No temporary file left, every remaining entry private. */
    DIR *d = opendir(cache_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        ck_assert_msg(strncmp(e->d_name, ".tmp-", 5) != 0, "left over: %s", e->d_name);
    closedir(d);
    for_each_entry(check_private);
    remove_cache_dir();
}
END_TEST

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--cache-worker"))
        return cache_worker(argv[2], atoi(argv[3]));
    Suite *s = suite_create("program");
    TCase *tc = tcase_create("program");
    tcase_set_timeout(tc, 300);
    /* _i = 0: one context per platform; 1: one context per device. */
    tcase_add_loop_test(tc, shipped_kernel_runs_everywhere, 0, 2);
    tcase_add_loop_test(tc, bad_build_reports_every_device, 0, 2);
    tcase_add_test(tc, identical_logs_printed_once);
    tcase_add_test(tc, compile_note_names_the_call);
    tcase_add_loop_test(tc, cache_hit_and_rebuild_after_corruption, 0, 2);
    tcase_add_test(tc, build_from_file);
    tcase_add_test(tc, cache_keys_included_headers);
    tcase_add_loop_test(tc, cache_bad_entries_rebuilt, 0, 4);
    tcase_add_test(tc, cache_stale_temp_files_removed);
    tcase_add_test(tc, cache_info_and_clear);
    tcase_add_test(tc, cache_size_limit);
    tcase_add_test(tc, cache_concurrent_processes);
    suite_add_tcase(s, tc);
    return test_run(s, TEST_CPUS, 3);
}

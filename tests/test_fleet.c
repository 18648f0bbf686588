/* Discovery, selection, sub-devices, contexts and device facts on PoCL. */
#include "common.h"

#include <dirent.h>

#include "clfleet/opencl.h"

static size_t count_open_fds(void)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

START_TEST(discovers_cpu_devices)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    size_t n = clf_fleet_device_count(f);
    ck_assert_uint_ge(n, 3); /* POCL_DEVICES='pthread pthread basic' */
    ck_assert_uint_eq(clf_fleet_context_count(f), 1);
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        ck_assert_ok(clf_device_get_info(&in, f, i));
        ck_assert_uint_eq(in.type, CLF_DEVICE_CPU);
        ck_assert_str_eq(clf_device_type_name(in.type), "cpu");
        ck_assert_msg(in.name[0] && in.vendor[0] && in.platform[0], "names");
        ck_assert_msg(strstr(in.platform, "Portable") != NULL, "%s", in.platform);
        ck_assert_uint_ge(in.cl_major, 1);
        ck_assert_uint_gt(in.global_mem, 0);
        ck_assert_uint_gt(in.max_alloc, 0);
        ck_assert_uint_le(in.max_alloc, in.global_mem);
        ck_assert_uint_ge(in.compute_units, 1);
        ck_assert_int_eq(in.host_unified, 1);
        ck_assert_int_eq(in.fp64, clf_device_has_extension(f, i, "cl_khr_fp64"));
        ck_assert_ptr_nonnull(in.extensions);
        ck_assert_int_eq(in.is_sub_device, 0);
        ck_assert_int_eq(in.parent_index, -1);
        ck_assert_uint_eq(in.context_index, 0);
        ck_assert_ptr_nonnull(clf_cl_compute_queue(f, i));
        ck_assert_ptr_nonnull(clf_cl_transfer_queue(f, i));
        ck_assert_ptr_ne(clf_cl_compute_queue(f, i), clf_cl_transfer_queue(f, i));
        cl_command_queue_properties qp = 0;
        clGetCommandQueueInfo(clf_cl_compute_queue(f, i), CL_QUEUE_PROPERTIES, sizeof qp, &qp,
                              NULL);
        ck_assert_msg(qp & CL_QUEUE_PROFILING_ENABLE, "profiling on");
        ck_assert_msg(!(qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE), "in order");
    }
    ck_assert_int_eq(clf_device_has_extension(f, 0, "cl_khr_no_such_thing"), 0);
    ck_assert_int_eq(clf_device_has_extension(f, 0, NULL), 0);
    clf_device_info in;
    ck_assert_status(clf_device_get_info(&in, f, n), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_device_get_info(&in, f, (size_t)-1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_device_get_info(NULL, f, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(clf_cl_device(f, n));
    ck_assert_ok(clf_fleet_finish(f));
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(filters_select)
{
    clf_fleet *f = test_fleet(TEST_CPUS ";index=1", 0);
    ck_assert_uint_eq(clf_fleet_device_count(f), 1);
    clf_device_info in;
    ck_assert_ok(clf_device_get_info(&in, f, 0));
    ck_assert_msg(strstr(in.name, "pthread") != NULL, "index 1 is a pthread device: %s",
                  in.name);
    clf_fleet_destroy(f);

    f = test_fleet(TEST_CPUS ";name=basic", 0);
    ck_assert_uint_eq(clf_fleet_device_count(f), 1);
    clf_fleet_destroy(f);

    f = test_fleet(TEST_CPUS ";index=0,2", 0);
    ck_assert_uint_eq(clf_fleet_device_count(f), 2);
    clf_fleet_destroy(f);

    f = test_fleet(TEST_CPUS ";require=fp64,unified,cl_khr_byte_addressable_store", 0);
    ck_assert_uint_ge(clf_fleet_device_count(f), 3);
    clf_fleet_destroy(f);

    /* The vendor of device 0, as a substring filter. */
    f = test_fleet(TEST_CPUS, 0);
    ck_assert_ok(clf_device_get_info(&in, f, 0));
    clf_fleet_destroy(f);
    char sel[512];
    snprintf(sel, sizeof sel, "%s;vendor= %.100s ", TEST_CPUS, in.vendor);
    f = test_fleet(sel, 0);
    ck_assert_uint_ge(clf_fleet_device_count(f), 1);
    clf_fleet_destroy(f);

    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS ";min_cu=100000";
    f = (clf_fleet *)&o;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(clf_last_error(), "matches") != NULL, "%s", clf_last_error());
    /* Per device, the term that excluded it and the device's own value. */
    ck_assert_msg(strstr(clf_last_error(), "device 1 'pthread") &&
                      strstr(clf_last_error(), "excluded by min_cu=100000 (it has "),
                  "%s", clf_last_error());
    o.devices = TEST_CPUS ";require=cl_khr_no_such_extension";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    o.devices = "platform=No Such Platform";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);

    /* index= naming devices that do not exist is an error naming them and the device count,
     * even when other indices exist. */
    o.devices = TEST_CPUS ";index=1,200-201";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(clf_last_error(), "index=200-201: no such devices (there are "),
                  "%s", clf_last_error());

    /* Option fields refine the selection string. */
    o.devices = "platform=portable";
    o.device_types = CLF_DEVICE_CPU;
    o.min_compute_units = 100000;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    /* An option field that excluded the devices is named, not just the selection string. */
    ck_assert_msg(strstr(clf_last_error(), "excluded by min_compute_units=100000 (it has "),
                  "%s", clf_last_error());
    if (!getenv("CLFLEET_DEVICES")) {
        /* Options alone: no selection string to quote, the field still named. */
        o.devices = NULL;
        ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
        ck_assert_msg(strstr(clf_last_error(), "matches the options (no selection string): ") &&
                          strstr(clf_last_error(), "excluded by min_compute_units=100000"),
                      "%s", clf_last_error());
        o.devices = "platform=portable";
    }
    o.min_compute_units = 0;
    o.device_types = CLF_DEVICE_GPU;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    ck_assert_msg(strstr(clf_last_error(), "excluded by device_types=gpu (it is a cpu device)"),
                  "%s", clf_last_error());
    o.device_types = CLF_DEVICE_CPU;
    o.min_compute_units = 1;
    o.require = CLF_CAP_HOST_UNIFIED;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_uint_ge(clf_fleet_device_count(f), 3);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(environment_selects)
{
    setenv("CLFLEET_DEVICES", TEST_CPUS ";index=2", 1);
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, NULL));
    ck_assert_uint_eq(clf_fleet_device_count(f), 1);
    clf_fleet_destroy(f);
    /* An explicit selection wins over the environment. */
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_uint_ge(clf_fleet_device_count(f), 3);
    clf_fleet_destroy(f);
    setenv("CLFLEET_DEVICES", "split=0", 1);
    ck_assert_status(clf_fleet_create(&f, NULL), CLF_ERROR_PARSE);
    unsetenv("CLFLEET_DEVICES");
}
END_TEST

/* Without GPUs or accelerators, the default fleet is the CPU devices. */
START_TEST(default_falls_back_to_cpus)
{
    clf_fleet *all = test_fleet("type=all", 0);
    size_t gpus = 0, cpus = 0;
    for (size_t i = 0; i < clf_fleet_device_count(all); i++) {
        clf_device_info in;
        ck_assert_ok(clf_device_get_info(&in, all, i));
        gpus += in.type != CLF_DEVICE_CPU;
        cpus += in.type == CLF_DEVICE_CPU;
    }
    clf_fleet_destroy(all);
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, NULL));
    ck_assert_uint_eq(clf_fleet_device_count(f), gpus ? gpus : cpus);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(sub_devices)
{
    clf_fleet *f = test_fleet(TEST_CPUS ";name=pthread;split=1", 0);
    size_t n = clf_fleet_device_count(f);
    clf_fleet *roots = test_fleet(TEST_CPUS ";name=pthread", 0);
    size_t units = 0;
    for (size_t i = 0; i < clf_fleet_device_count(roots); i++) {
        clf_device_info in;
        ck_assert_ok(clf_device_get_info(&in, roots, i));
        units += in.compute_units;
    }
    clf_fleet_destroy(roots);
    ck_assert_uint_eq(n, units); /* one sub-device per compute unit */
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        ck_assert_ok(clf_device_get_info(&in, f, i));
        ck_assert_int_eq(in.is_sub_device, 1);
        ck_assert_int_ge(in.parent_index, 1);
        ck_assert_uint_eq(in.compute_units, 1);
    }
    clf_fleet_destroy(f);

    /* By counts, through the options. */
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    unsigned counts[] = {1, 1};
    o.devices = TEST_CPUS ";index=1";
    o.split_cpu_counts = counts;
    o.num_split_cpu_counts = 2;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_uint_eq(clf_fleet_device_count(f), 2);
    clf_fleet_destroy(f);

    /* More units than the device has: a clear error naming the device and its units, not
     * clCreateSubDevices' CL_INVALID_VALUE. */
    o.split_cpu_counts = NULL;
    o.num_split_cpu_counts = 0;
    o.split_cpu_units = 1000;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), "cannot split device 1 'pthread") != NULL &&
                      strstr(clf_last_error(), "split_cpu_units=1000 asks for 1000 units") &&
                      !strstr(clf_last_error(), "CL_INVALID"),
                  "%s", clf_last_error());
    ck_assert_ptr_null(f);
    clf_device_info root;
    clf_fleet *one = test_fleet(TEST_CPUS ";index=1", 0);
    ck_assert_ok(clf_device_get_info(&root, one, 0));
    clf_fleet_destroy(one);
    char sel2[256], units2[64];
    snprintf(sel2, sizeof sel2, TEST_CPUS ";index=1;split=%u", root.compute_units + 1);
    snprintf(units2, sizeof units2, "(cpu, %u compute unit", root.compute_units);
    ck_assert_status(clf_fleet_create(&f, &(clf_fleet_options){.version =
                                                                   CLF_FLEET_OPTIONS_VERSION,
                                                               .devices = sel2}),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_last_error(), units2) != NULL, "%s", clf_last_error());

    /* The minimum is of the root device, before the split: min_cu=2;split=1 splits the
     * devices of two or more units (examples/sgemm.c and clfleet-bench rely on it), and
     * leaves out those of fewer, saying so. */
    o = (clf_fleet_options)CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS ";min_cu=2;split=1";
    if (root.compute_units >= 2) {
        ck_assert_ok(clf_fleet_create(&f, &o));
        for (size_t i = 0; i < clf_fleet_device_count(f); i++) {
            clf_device_info in;
            ck_assert_ok(clf_device_get_info(&in, f, i));
            ck_assert_int_eq(in.is_sub_device, 1);
            ck_assert_int_ge(in.parent_index, 1); /* not the 1-unit basic device 0 */
        }
        clf_fleet_destroy(f);
    }
    snprintf(sel2, sizeof sel2, TEST_CPUS ";name=pthread;min_cu=%u;split=1",
             root.compute_units + 1);
    o.devices = sel2;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    ck_assert_msg(strstr(clf_last_error(), "; the minimum is of the device before split=1)"),
                  "%s", clf_last_error());
}
END_TEST

START_TEST(context_per_device)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 1);
    size_t n = clf_fleet_device_count(f);
    ck_assert_uint_eq(clf_fleet_context_count(f), n);
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        ck_assert_ok(clf_device_get_info(&in, f, i));
        ck_assert_uint_eq(in.context_index, i);
        for (size_t j = 0; j < i; j++)
            ck_assert_ptr_ne(clf_cl_context(f, i), clf_cl_context(f, j));
    }
    clf_fleet_destroy(f);
    f = test_fleet(TEST_CPUS ";context=device", 0);
    ck_assert_uint_eq(clf_fleet_context_count(f), clf_fleet_device_count(f));
    clf_fleet_destroy(f);
}
END_TEST

/* 100 fleets, with sub-devices and per-device contexts: no file descriptor grows
 * (memory is checked by the valgrind run of this suite). */
START_TEST(create_destroy_100)
{
    size_t before = 0;
    for (int i = 0; i < 100; i++) {
        const char *sel = i % 2 ? TEST_CPUS ";name=pthread;split=1" : TEST_CPUS;
        clf_fleet *f = test_fleet(sel, i % 3 == 0);
        ck_assert_uint_ge(clf_fleet_device_count(f), 2);
        clf_fleet_destroy(f);
        if (i == 1)
            before = count_open_fds();
    }
    ck_assert_uint_eq(count_open_fds(), before);
}
END_TEST

/* ---- the log ---------------------------------------------------------------------------- */

/* The lines the handler received, in order, each "LEVEL|message". */
static char log_buf[1 << 16];
static size_t log_len;

static void log_keep(void *user, clf_log_level level, const char *msg)
{
    ck_assert_ptr_eq(user, log_buf);
    int n = snprintf(log_buf + log_len, sizeof log_buf - log_len, "%d|%s\n", (int)level, msg);
    if (n > 0 && (size_t)n < sizeof log_buf - log_len)
        log_len += (size_t)n;
}

/* The position of the first line holding every one of the strings, after from; -1 if none. */
static long log_find(long from, const char *a, const char *b)
{
    for (const char *l = log_buf + from; *l;) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        char line[1200];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        if (strstr(line, a) && (!b || strstr(line, b)))
            return (long)(l - log_buf);
        l += n + (end != NULL);
    }
    return -1;
}

static size_t log_count(const char *a)
{
    size_t k = 0;
    for (long at = log_find(0, a, NULL); at >= 0; k++) {
        const char *end = strchr(log_buf + at, '\n'); /* the next search starts a line */
        at = end ? log_find((long)(end + 1 - log_buf), a, NULL) : -1;
    }
    return k;
}

START_TEST(log_lines)
{
    char dir[] = "/tmp/clfleet-log-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    log_len = 0;
    log_buf[0] = '\0';
    clf_log_set_handler(log_keep, log_buf);
    setenv("CLFLEET_LOG", "debug", 1);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.cache_dir = dir; /* fresh: the first build misses, the second hits */
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_uint_ge(clf_fleet_device_count(f), 2);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_shipped(&p, f, "vector", NULL));
    clf_program_destroy(p);
    ck_assert_ok(clf_program_build_shipped(&p, f, "vector", NULL));
    ck_assert_int_eq(clf_program_from_cache(p, 0), 1);
    clf_program_destroy(p);
    clf_fleet_destroy(f);

    /* Device selection and transfer paths at info, the cache at debug: a miss, then a hit. */
    ck_assert_msg(log_find(0, "2|device 0 '", "selected") >= 0, "selection:\n%s", log_buf);
    ck_assert_msg(log_find(0, "2|transfer path 0 -> 1: ", NULL) >= 0, "paths:\n%s", log_buf);
    ck_assert_msg(log_find(0, "2|transfer: CUDA peer path off", NULL) >= 0, "cuda:\n%s",
                  log_buf);
    long miss = log_find(0, "binary cache miss", "device 0 '");
    long hit = log_find(0, "binary cache hit", "device 0 '");
    ck_assert_msg(miss >= 0 && hit > miss && log_buf[miss] == '3' && log_buf[hit] == '3',
                  "a miss at debug, then a hit:\n%s", log_buf);

    /* At warn, none of that; a cache that is a file is reported once per fleet. */
    log_len = 0;
    log_buf[0] = '\0';
    setenv("CLFLEET_LOG", "warn", 1);
    char file[64];
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *fp = fopen(file, "w");
    ck_assert_ptr_nonnull(fp);
    fclose(fp);
    o.cache_dir = file;
    ck_assert_ok(clf_fleet_create(&f, &o));
    for (int k = 0; k < 2; k++) {
        ck_assert_ok(clf_program_build_shipped(&p, f, "vector", NULL));
        clf_program_destroy(p);
    }
    clf_fleet_destroy(f);
    unsetenv("CLFLEET_LOG");
    clf_log_set_handler(NULL, NULL);
    ck_assert_msg(log_find(0, "2|", NULL) < 0 && log_find(0, "3|", NULL) < 0, "warn only:\n%s",
                  log_buf);
    ck_assert_msg(log_count("unusable") == 1 && log_find(0, "1|binary cache '", file) == 0,
                  "one warning:\n%s", log_buf);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* At info, each device left out says which term excluded it, also when nothing matches. */
START_TEST(log_exclusions)
{
    log_len = 0;
    log_buf[0] = '\0';
    clf_log_set_handler(log_keep, log_buf);
    setenv("CLFLEET_LOG", "info", 1);
    clf_fleet *f = test_fleet(TEST_CPUS ";name=pthread", 0);
    clf_fleet_destroy(f);
    ck_assert_msg(
        log_find(0, "2|device 0 'basic", "excluded by name=pthread (its name is 'basic") >= 0,
        "%s", log_buf);
    ck_assert_msg(log_find(0, "2|device 1 'pthread", "selected") >= 0, "%s", log_buf);
    log_len = 0;
    log_buf[0] = '\0';
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.min_compute_units = 100000;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NO_DEVICE);
    unsetenv("CLFLEET_LOG");
    clf_log_set_handler(NULL, NULL);
    ck_assert_msg(log_count("excluded by min_compute_units=100000 (it has ") >= 3, "%s", log_buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fleet");
    TCase *tc = tcase_create("fleet");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, discovers_cpu_devices);
    tcase_add_test(tc, filters_select);
    tcase_add_test(tc, environment_selects);
    tcase_add_test(tc, default_falls_back_to_cpus);
    tcase_add_test(tc, sub_devices);
    tcase_add_test(tc, context_per_device);
    tcase_add_test(tc, create_destroy_100);
    tcase_add_test(tc, log_lines);
    tcase_add_test(tc, log_exclusions);
    suite_add_tcase(s, tc);
    return test_run(s, TEST_CPUS, 3);
}

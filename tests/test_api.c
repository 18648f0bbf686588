/* The API surface that needs no device: versions, status codes, NULL handles. */
#include "common.h"

START_TEST(version_macros_agree)
{
    ck_assert_uint_eq(clf_version(), CLF_VERSION_HEX);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CLF_VERSION_MAJOR, CLF_VERSION_MINOR,
             CLF_VERSION_PATCH);
    ck_assert_str_eq(clf_version_string(), want);
}
END_TEST

START_TEST(status_names_and_messages)
{
    static const clf_status all[] = {
#define X(name, value, msg) CLF_##name,
        CLF_STATUS_LIST(X)
#undef X
    };
    size_t n = sizeof all / sizeof all[0];
    ck_assert_int_eq(all[0], 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(i == 0 || all[i] < 0, "error codes are negative");
        ck_assert_msg(strncmp(clf_status_name(all[i]), "CLF_", 4) == 0, "name prefix");
        ck_assert_msg(strlen(clf_status_string(all[i])) > 3, "message");
        for (size_t j = 0; j < i; j++) {
            ck_assert_msg(all[i] != all[j], "duplicate value");
            ck_assert_str_ne(clf_status_name(all[i]), clf_status_name(all[j]));
        }
    }
    ck_assert_str_eq(clf_status_name(CLF_ERROR_BUILD), "CLF_ERROR_BUILD");
    ck_assert_str_eq(clf_status_name((clf_status)-9999), "CLF_UNKNOWN_STATUS");
    ck_assert_str_eq(clf_status_string((clf_status)12345), "unknown status code");
}
END_TEST

/* Every public function given NULL handles or pointers: a status, never a crash. */
START_TEST(null_handles)
{
    clf_fleet *f = (clf_fleet *)1; /* must be overwritten with NULL or untouched on error */
    ck_assert_status(clf_fleet_create(NULL, NULL), CLF_ERROR_NULL_POINTER);
    clf_fleet_destroy(NULL);
    ck_assert_uint_eq(clf_fleet_device_count(NULL), 0);
    ck_assert_uint_eq(clf_fleet_context_count(NULL), 0);
    ck_assert_status(clf_fleet_finish(NULL), CLF_ERROR_NULL_POINTER);
    clf_device_info info;
    ck_assert_status(clf_device_get_info(&info, NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf_device_has_extension(NULL, 0, "cl_khr_fp64"), 0);
    ck_assert_str_eq(clf_device_type_name(12345), "unknown");

    clf_program *p = NULL;
    ck_assert_status(clf_program_build_source(NULL, NULL, "x", NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_program_build_source(&p, NULL, "x", NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(p);
    ck_assert_status(clf_program_build_file(&p, NULL, "x.cl", NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_program_build_shipped(&p, NULL, "vector", NULL),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf_program_from_cache(NULL, 0), 0);
    clf_program_destroy(NULL);

    ck_assert_status(clf_event_wait(NULL), CLF_ERROR_NULL_POINTER);
    clf_event_release(NULL);

    clf_buffer *b = NULL;
    char host[8];
    ck_assert_status(clf_buffer_create(NULL, NULL, 0, 8, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_create(&b, NULL, 0, 8, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(b);
    clf_buffer_destroy(NULL);
    ck_assert_uint_eq(clf_buffer_size(NULL), 0);
    ck_assert_status(clf_buffer_write(NULL, 0, 8, host), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_read(NULL, 0, 8, host), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_write_async(NULL, 0, 8, host, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_read_async(NULL, 0, 8, host, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_fill(NULL, host, 4, 0, 8), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_eq(f, (clf_fleet *)1);
    ck_assert_msg(strlen(clf_last_error()) > 0, "a detail message is set");
    clf_clear_error();
    ck_assert_str_eq(clf_last_error(), "");
}
END_TEST

START_TEST(shipped_kernels_listed)
{
    const char *const *names = clf_shipped_kernels();
    ck_assert_ptr_nonnull(names);
    int found = 0;
    for (size_t i = 0; names[i]; i++) {
        ck_assert_ptr_nonnull(clf_shipped_kernel_source(names[i]));
        found += strcmp(names[i], "vector") == 0;
    }
    ck_assert_int_eq(found, 1);
    ck_assert_msg(strstr(clf_shipped_kernel_source("vector"), "__kernel void vadd") != NULL,
                  "embedded source is the file's");
    ck_assert_ptr_null(clf_shipped_kernel_source("no-such-kernel"));
    ck_assert_ptr_null(clf_shipped_kernel_source(NULL));
}
END_TEST

/* Each embedded source is its file, byte for byte: the device tests read cl/ through
 * CLFLEET_KERNEL_DIR, so only this sees what installed programs get (a backslash
 * lost at embedding once broke the macros of cl/reduce.cl there). */
START_TEST(shipped_kernels_are_the_files)
{
    const char *top = getenv("top_srcdir");
    const char *const *names = clf_shipped_kernels();
    static char file[1 << 16];
    for (size_t i = 0; names[i]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/cl/%s.cl", top ? top : ".", names[i]);
        FILE *fp = fopen(path, "rb");
        ck_assert_msg(fp != NULL, "cannot open %s", path);
        size_t len = fread(file, 1, sizeof file - 1, fp);
        fclose(fp);
        file[len] = '\0';
        ck_assert_msg(strcmp(clf_shipped_kernel_source(names[i]), file) == 0,
                      "the embedded %s differs from %s", names[i], path);
    }
}
END_TEST

/* Options with a wrong version or bad values are rejected before any discovery. */
START_TEST(bad_options)
{
    clf_fleet *f = NULL;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.version = 999;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_fleet_options)CLF_FLEET_OPTIONS_INIT;
    o.devices = "type=banana";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_PARSE);
    ck_assert_msg(strstr(clf_last_error(), "banana") != NULL, "%s", clf_last_error());
    o.devices = "min_cu=99999999999999999999";
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_PARSE);
    o.devices = NULL;
    o.device_types = 0x100;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_INVALID_ARGUMENT);
    o = (clf_fleet_options)CLF_FLEET_OPTIONS_INIT;
    o.num_split_cpu_counts = 2;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_NULL_POINTER);
    unsigned zero[2] = {1, 0};
    o.split_cpu_counts = zero;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(f);
    setenv("CLFLEET_DEVICES", "index=3-1", 1);
    ck_assert_status(clf_fleet_create(&f, NULL), CLF_ERROR_PARSE);
    ck_assert_msg(strstr(clf_last_error(), "CLFLEET_DEVICES") != NULL, "%s", clf_last_error());
    unsetenv("CLFLEET_DEVICES");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, version_macros_agree);
    tcase_add_test(tc, status_names_and_messages);
    tcase_add_test(tc, null_handles);
    tcase_add_test(tc, shipped_kernels_listed);
    tcase_add_test(tc, shipped_kernels_are_the_files);
    tcase_add_test(tc, bad_options);
    suite_add_tcase(s, tc);
    return test_run(s, NULL, 0);
}

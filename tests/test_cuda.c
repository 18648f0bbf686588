/*
 * The CUDA driver layer without a GPU: with no driver every entry point must fail cleanly;
 * with the fake driver (tests/fake_libcuda.c, path in $CLFLEET_TEST_FAKE_CUDA) the whole
 * layer runs, including every cleanup path. The loader runs once per process, so each test
 * runs in its own forked process (CK_FORK is forced below).
 */
#include "xfer/cudadrv.h"

#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NO_SUCH_LIB "libclfleet-test-no-such-cuda.so.1"

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Every entry point but load must answer "unavailable" without touching its arguments. */
static void check_unavailable(void)
{
    ck_assert_int_eq(clf__cuda_available(), 0);
    ck_assert_int_eq(clf__cuda_driver_version(), 0);
    ck_assert_int_eq(clf__cuda_device_count(), 0);
    int ord = 5;
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 0, 0x3b, 0), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_eq(ord, -1);
    ck_assert_int_eq(clf__cuda_device_by_pci(NULL, 0, 0, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cuda_can_access_peer(0, 1), 0);
    clf__cuda_mem *m = (clf__cuda_mem *)&ord;
    int fd = 7;
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 0, 4096, NULL, 0),
                     CLF_ERROR_UNSUPPORTED);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(fd, -1);
    ck_assert_int_eq(clf__cuda_alloc_exportable(NULL, &fd, 0, 1, NULL, 0), CLF_ERROR_NULL_POINTER);
    char buf[8];
    ck_assert_int_eq(clf__cuda_copy_peer(NULL, 0, NULL, 0, 8), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_eq(clf__cuda_read(buf, NULL, 0, 8), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_eq(clf__cuda_write(NULL, 0, buf, 8), CLF_ERROR_UNSUPPORTED);
    ck_assert_uint_eq(clf__cuda_mem_size(NULL), 0);
    ck_assert_int_eq(clf__cuda_mem_device(NULL), -1);
    clf__cuda_mem_free(NULL);
    ck_assert_int_eq(clf__cuda_selftest(0, NULL, NULL), CLF_ERROR_NULL_POINTER);
}

START_TEST(test_missing_library)
{
    setenv("CLFLEET_CUDA_LIBRARY", NO_SUCH_LIB, 1);
    clf_clear_error();
    ck_assert_int_eq(clf__cuda_load(), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(starts_with(clf_last_error(), "CUDA unavailable: " NO_SUCH_LIB " not found: "),
                  "%s", clf_last_error());
    const char *why = clf__cuda_reason();
    ck_assert_msg(starts_with(why, NO_SUCH_LIB " not found: ") &&
                      strlen(why) > strlen(NO_SUCH_LIB " not found: "),
                  "%s", why);
    /* The first answer stands, even if the environment changes. */
    setenv("CLFLEET_CUDA_LIBRARY", "libc.so.6", 1);
    ck_assert_int_eq(clf__cuda_load(), CLF_ERROR_UNSUPPORTED);
    ck_assert_ptr_eq(clf__cuda_reason(), why);
    check_unavailable();
}
END_TEST

/* The real name: on a machine without the driver the reason must say so plainly. */
START_TEST(test_default_name)
{
    unsetenv("CLFLEET_CUDA_LIBRARY");
    void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    clf_status st = clf__cuda_load();
    if (probe) {
        dlclose(probe);
        return; /* a driver is installed: covered by the GPU tests */
    }
    ck_assert_int_eq(st, CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(starts_with(clf__cuda_reason(), "libcuda.so.1 not found: "), "%s",
                  clf__cuda_reason());
    check_unavailable();
}
END_TEST

static void *hammer_missing(void *arg)
{
    const char **why = arg;
    for (int i = 0; i < 2000; i++) {
        if (clf__cuda_load() != CLF_ERROR_UNSUPPORTED || clf__cuda_available())
            return (void *)1;
        const char *w = clf__cuda_reason();
        if (*why && *why != w)
            return (void *)2;
        *why = w;
        int ord;
        clf__cuda_mem *m;
        int fd;
        if (clf__cuda_device_by_pci(&ord, 0, 1, 0) != CLF_ERROR_UNSUPPORTED || ord != -1 ||
            clf__cuda_can_access_peer(0, 1) != 0 ||
            clf__cuda_alloc_exportable(&m, &fd, 0, 64, NULL, 0) != CLF_ERROR_UNSUPPORTED)
            return (void *)3;
    }
    return NULL;
}

START_TEST(test_threads_missing)
{
    setenv("CLFLEET_CUDA_LIBRARY", NO_SUCH_LIB, 1);
    pthread_t t[4];
    const char *why[4] = {NULL};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer_missing, &why[i]), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(t[i], &r), 0);
        ck_assert_ptr_null(r);
        ck_assert_ptr_eq(why[i], why[0]);
    }
    ck_assert(starts_with(why[0], NO_SUCH_LIB " not found: "));
}
END_TEST

/* ---- with the fake driver ---- */

static const char *fake_path(void)
{
    return getenv("CLFLEET_TEST_FAKE_CUDA");
}

static void fake_setup(void)
{
    setenv("CLFLEET_CUDA_LIBRARY", fake_path(), 1);
    unsetenv("FAKE_CUDA_FAIL");
    unsetenv("FAKE_CUDA_MISSING");
    unsetenv("FAKE_CUDA_VERSION");
    unsetenv("FAKE_CUDA_NO_VMM");
}

/* Call one of the fake's bookkeeping functions; the library must already be loaded. */
static int fake_query(const char *name)
{
    void *h = dlopen(fake_path(), RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    int (*fn)(void);
    *(void **)&fn = dlsym(h, name);
    ck_assert_ptr_nonnull(fn);
    int v = fn();
    dlclose(h);
    return v;
}

START_TEST(test_fake_load)
{
    ck_assert_int_eq(clf__cuda_load(), CLF_SUCCESS);
    ck_assert_int_eq(clf__cuda_available(), 1);
    ck_assert_str_eq(clf__cuda_reason(), "");
    ck_assert_int_eq(clf__cuda_driver_version(), 12040);
    ck_assert_int_eq(clf__cuda_device_count(), 3);
    ck_assert_int_eq(fake_query("fake_cuda_max_abi"), 12000); /* never above the 12.0 ABI */
    ck_assert_int_eq(fake_query("fake_cuda_live"), 0);
}
END_TEST

START_TEST(test_fake_old_driver)
{
    setenv("FAKE_CUDA_VERSION", "11040", 1);
    ck_assert_int_eq(clf__cuda_load(), CLF_SUCCESS);
    ck_assert_int_eq(clf__cuda_driver_version(), 11040);
    ck_assert_int_eq(fake_query("fake_cuda_max_abi"), 11040);
}
END_TEST

START_TEST(test_fake_load_failures)
{
    static const struct {
        const char *knob, *value, *reason;
    } cases[] = {
        {"FAKE_CUDA_MISSING", "cuMemMap", "cuMemMap not found in "},
        {"FAKE_CUDA_MISSING", "cuGetErrorName", "cuGetErrorName not found in "},
        {"FAKE_CUDA_MISSING", "cuDriverGetVersion", "cuDriverGetVersion failed in "},
        {"FAKE_CUDA_VERSION", "11020", "cuDriverGetVersion failed in "},
        {"FAKE_CUDA_FAIL", "cuInit", "cuInit failed: CUDA_ERROR_NO_DEVICE (100)"},
        {"FAKE_CUDA_FAIL", "cuDeviceGetCount",
         "cuDeviceGetCount failed: CUDA_ERROR_OUT_OF_MEMORY (2)"},
    };
    setenv(cases[_i].knob, cases[_i].value, 1);
    ck_assert_int_eq(clf__cuda_load(), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(starts_with(clf__cuda_reason(), cases[_i].reason), "%s", clf__cuda_reason());
    check_unavailable();
}
END_TEST

START_TEST(test_fake_pci_and_peers)
{
    int ord = -7;
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 0, 0x3b, 0), CLF_SUCCESS);
    ck_assert_int_eq(ord, 0);
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 0, 0xaf, 0), CLF_SUCCESS);
    ck_assert_int_eq(ord, 1);
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 1, 0x3b, 0), CLF_SUCCESS);
    ck_assert_int_eq(ord, 2);
    clf_clear_error();
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 0, 0x3c, 0), CLF_ERROR_NOT_FOUND);
    ck_assert_int_eq(ord, -1);
    ck_assert_str_eq(clf_last_error(), "no CUDA device at PCI 0000:3c:00");
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 0, 0x3b, 1), CLF_ERROR_NOT_FOUND);
    setenv("FAKE_CUDA_FAIL", "cuDeviceGetAttribute", 1);
    ck_assert_int_eq(clf__cuda_device_by_pci(&ord, 0, 0x3b, 0), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_eq(ord, -1);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "cuDeviceGetAttribute failed"));
    unsetenv("FAKE_CUDA_FAIL");
    ck_assert_int_eq(clf__cuda_can_access_peer(0, 1), 1);
    ck_assert_int_eq(clf__cuda_can_access_peer(1, 0), 1);
    ck_assert_int_eq(clf__cuda_can_access_peer(0, 2), 0);
    ck_assert_int_eq(clf__cuda_can_access_peer(2, 1), 0);
    ck_assert_int_eq(clf__cuda_can_access_peer(1, 1), 0);
    ck_assert_int_eq(clf__cuda_can_access_peer(-1, 0), 0);
    ck_assert_int_eq(clf__cuda_can_access_peer(0, 3), 0);
}
END_TEST

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((i * 2654435761u + seed) >> 13);
}

START_TEST(test_fake_alloc_copy)
{
    const size_t mib = (size_t)1 << 20;
    int fds_before = count_fds();
    clf__cuda_mem *a, *b;
    int fa, fb;
    const int peers_a[] = {1, 2}, peers_b[] = {0};
    ck_assert_int_eq(clf__cuda_alloc_exportable(&a, &fa, 0, 3 * mib, peers_a, 2), CLF_SUCCESS);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&b, &fb, 1, 1, peers_b, 1), CLF_SUCCESS);
    ck_assert_uint_eq(clf__cuda_mem_size(a), 4 * mib); /* rounded to the 2 MiB granularity */
    ck_assert_uint_eq(clf__cuda_mem_size(b), 2 * mib);
    ck_assert_int_eq(clf__cuda_mem_device(a), 0);
    ck_assert_int_eq(clf__cuda_mem_device(b), 1);
    ck_assert_int_ge(fa, 0);
    ck_assert_int_ge(fb, 0);
    /* The exported fds are the memory, as an importing OpenCL driver would see it. */
    unsigned char *ma = mmap(NULL, 4 * mib, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
    unsigned char *mb = mmap(NULL, 2 * mib, PROT_READ | PROT_WRITE, MAP_SHARED, fb, 0);
    ck_assert(ma != MAP_FAILED && mb != MAP_FAILED);
    unsigned char *buf = malloc(4 * mib), *back = malloc(4 * mib);
    fill(buf, 4 * mib, 1);
    ck_assert_int_eq(clf__cuda_write(a, 0, buf, 4 * mib), CLF_SUCCESS);
    ck_assert_int_eq(memcmp(ma, buf, 4 * mib), 0);
    fill(mb, 2 * mib, 2);
    ck_assert_int_eq(clf__cuda_read(back, b, 0, 2 * mib), CLF_SUCCESS);
    ck_assert_int_eq(memcmp(back, mb, 2 * mib), 0);
    /* Odd offsets and sizes both ways, checked against a host model. */
    static const size_t cases[][3] = {
        {0, 0, 1}, {1, 3, 7}, {12345, 777, 65537}, {4 * 1048576 - 5, 0, 5}, {0, 1, 2097151}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t so = cases[i][0], doff = cases[i][1], n = cases[i][2];
        memcpy(back, mb, 2 * mib);
        memcpy(back + doff, ma + so, n);
        ck_assert_int_eq(clf__cuda_copy_peer(b, doff, a, so, n), CLF_SUCCESS);
        ck_assert_msg(memcmp(back, mb, 2 * mib) == 0, "case %zu", i);
    }
    ck_assert_int_eq(clf__cuda_copy_peer(a, 100, b, 7, 1000), CLF_SUCCESS);
    ck_assert_int_eq(memcmp(ma + 100, mb + 7, 1000), 0);
    /* Range checks, overflow included; nothing is copied. */
    ck_assert_int_eq(clf__cuda_copy_peer(b, 1, a, 0, 2 * mib), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_copy_peer(b, 0, a, 4 * mib, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_copy_peer(b, SIZE_MAX, a, 0, 2), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_copy_peer(b, 0, a, 2, SIZE_MAX), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_read(back, a, 4 * mib, 1), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_write(a, SIZE_MAX, buf, 2), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_read(NULL, a, 0, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cuda_copy_peer(NULL, 0, a, 0, 1), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cuda_copy_peer(b, 0, a, 0, 0), CLF_SUCCESS);
    ck_assert_int_eq(clf__cuda_read(NULL, a, 0, 0), CLF_SUCCESS);
    /* Driver failures surface with the call's name. */
    setenv("FAKE_CUDA_FAIL", "cuMemcpyPeerAsync", 1);
    ck_assert_int_eq(clf__cuda_copy_peer(b, 0, a, 0, 8), CLF_ERROR_UNSUPPORTED);
    ck_assert_str_eq(clf_last_error(), "cuMemcpyPeerAsync failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
    setenv("FAKE_CUDA_FAIL", "cuStreamSynchronize", 1);
    ck_assert_int_eq(clf__cuda_copy_peer(b, 0, a, 0, 8), CLF_ERROR_UNSUPPORTED);
    setenv("FAKE_CUDA_FAIL", "cuMemcpyDtoH", 1);
    ck_assert_int_eq(clf__cuda_read(back, a, 0, 8), CLF_ERROR_UNSUPPORTED);
    setenv("FAKE_CUDA_FAIL", "cuMemcpyHtoD", 1);
    ck_assert_int_eq(clf__cuda_write(a, 0, buf, 8), CLF_ERROR_UNSUPPORTED);
    unsetenv("FAKE_CUDA_FAIL");
    munmap(ma, 4 * mib);
    munmap(mb, 2 * mib);
    close(fa);
    close(fb);
    clf__cuda_mem_free(a);
    clf__cuda_mem_free(b);
    free(buf);
    free(back);
    ck_assert_int_eq(fake_query("fake_cuda_live"), 0);
    ck_assert_int_eq(count_fds(), fds_before);
}
END_TEST

START_TEST(test_fake_alloc_errors)
{
    int fds_before = count_fds();
    clf__cuda_mem *m = NULL;
    int fd = 0;
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 0, 0, NULL, 0), CLF_ERROR_ZERO_SIZE);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, -1, 1, NULL, 0),
                     CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 3, 1, NULL, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 0, 1, NULL, 2), CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, NULL, 0, 1, NULL, 0),
                     CLF_ERROR_NULL_POINTER);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 0, SIZE_MAX, NULL, 0),
                     CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(fd, -1);
    /* Every step failing in turn leaves nothing behind. */
    static const char *const steps[] = {
        "cuDevicePrimaryCtxRetain", "cuMemGetAllocationGranularity", "cuMemCreate",
        "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess", "cuStreamCreate",
        "cuMemExportToShareableHandle", "cuDeviceGetAttribute"};
    const int peers[] = {1};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        setenv("FAKE_CUDA_FAIL", steps[i], 1);
        m = (clf__cuda_mem *)&fd;
        fd = 9;
        clf_clear_error();
        ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 0, 5000, peers, 1),
                         CLF_ERROR_UNSUPPORTED);
        ck_assert_ptr_null(m);
        ck_assert_int_eq(fd, -1);
        ck_assert_msg(starts_with(clf_last_error(), steps[i]) &&
                          strstr(clf_last_error(), "CUDA_ERROR_OUT_OF_MEMORY (2)"),
                      "%s: %s", steps[i], clf_last_error());
        ck_assert_msg(fake_query("fake_cuda_live") == 0, "leak after %s", steps[i]);
    }
    unsetenv("FAKE_CUDA_FAIL");
    setenv("FAKE_CUDA_NO_VMM", "1", 1);
    ck_assert_int_eq(clf__cuda_alloc_exportable(&m, &fd, 0, 1, NULL, 0), CLF_ERROR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "virtual memory management"));
    ck_assert_int_eq(fake_query("fake_cuda_live"), 0);
    ck_assert_int_eq(count_fds(), fds_before);
}
END_TEST

/* The OpenCL side of the self-test, played by mmap: corrupt selects the failure to show. */
struct importer {
    int calls;
    int corrupt; /* flip one byte */
    int fail;    /* report an import failure */
    int skip;    /* succeed without writing */
    int kept_fd; /* keep the fd (it is ours) instead of closing it; -1: close it */
    size_t size;
};

static clf_status import_write(void *user, int fd, size_t size, const void *data, size_t len)
{
    struct importer *im = user;
    im->calls++;
    im->size = size;
    if (im->fail) {
        close(fd);
        return clf__fail(CLF_ERROR_OPENCL, "clCreateBufferWithProperties failed");
    }
    if (im->skip) {
        im->kept_fd = fd;
        return CLF_SUCCESS;
    }
    unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED || len > size)
        return clf__fail(CLF_ERROR_IO, "mmap");
    memcpy(p, data, len);
    if (im->corrupt)
        p[4242] ^= 0x10;
    munmap(p, size);
    return CLF_SUCCESS;
}

START_TEST(test_fake_selftest)
{
    int fds_before = count_fds();
    struct importer im = {0, 0, 0, 0, -1, 0};
    ck_assert_int_eq(clf__cuda_selftest(1, import_write, &im), CLF_SUCCESS);
    ck_assert_int_eq(im.calls, 1);
    ck_assert_uint_eq(im.size, (size_t)2 << 20);
    im.corrupt = 1;
    clf_clear_error();
    ck_assert_int_eq(clf__cuda_selftest(0, import_write, &im), CLF_ERROR_UNSUPPORTED);
    ck_assert_msg(starts_with(clf_last_error(), "CUDA self-test on device 0: byte 4242 "), "%s",
                  clf_last_error());
    im.corrupt = 0;
    im.fail = 1;
    ck_assert_int_eq(clf__cuda_selftest(0, import_write, &im), CLF_ERROR_OPENCL);
    ck_assert_str_eq(clf_last_error(), "clCreateBufferWithProperties failed");
    im.fail = 0;
    im.calls = 0;
    ck_assert_int_eq(clf__cuda_selftest(9, import_write, &im), CLF_ERROR_OUT_OF_RANGE);
    setenv("FAKE_CUDA_FAIL", "cuMemcpyDtoH", 1);
    ck_assert_int_eq(clf__cuda_selftest(0, import_write, &im), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_eq(im.calls, 1);
    /* Failing before the hand-over: the self-test closes the fd itself. */
    setenv("FAKE_CUDA_FAIL", "cuMemcpyHtoD", 1);
    ck_assert_int_eq(clf__cuda_selftest(0, import_write, &im), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_eq(im.calls, 1);
    unsetenv("FAKE_CUDA_FAIL");
    /* An import that writes nothing fails; the fd it kept is still open (it owns it). */
    im.skip = 1;
    ck_assert_int_eq(clf__cuda_selftest(0, import_write, &im), CLF_ERROR_UNSUPPORTED);
    ck_assert_int_ge(im.kept_fd, 0);
    ck_assert_int_ne(fcntl(im.kept_fd, F_GETFD), -1);
    close(im.kept_fd);
    ck_assert_int_eq(fake_query("fake_cuda_live"), 0);
    ck_assert_int_eq(count_fds(), fds_before);
}
END_TEST

static void *hammer_fake(void *arg)
{
    int dev = *(int *)arg;
    unsigned char in[4096], out[4096];
    for (int i = 0; i < 40; i++) {
        clf__cuda_mem *a, *b;
        int fa, fb, peer = 1 - dev;
        if (clf__cuda_alloc_exportable(&a, &fa, dev, 8192, &peer, 1) != CLF_SUCCESS)
            return (void *)1;
        if (clf__cuda_alloc_exportable(&b, &fb, peer, 8192, &dev, 1) != CLF_SUCCESS)
            return (void *)2;
        close(fa);
        close(fb);
        fill(in, sizeof in, (unsigned)(i * 7 + dev));
        if (clf__cuda_write(a, 11, in, sizeof in) != CLF_SUCCESS ||
            clf__cuda_copy_peer(b, 3, a, 11, sizeof in) != CLF_SUCCESS ||
            clf__cuda_read(out, b, 3, sizeof out) != CLF_SUCCESS || memcmp(in, out, sizeof in))
            return (void *)3;
        clf__cuda_mem_free(a);
        clf__cuda_mem_free(b);
    }
    return NULL;
}

START_TEST(test_fake_threads)
{
    pthread_t t[4];
    int dev[4] = {0, 1, 0, 1};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer_fake, &dev[i]), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        ck_assert_int_eq(pthread_join(t[i], &r), 0);
        ck_assert_ptr_null(r);
    }
    ck_assert_int_eq(fake_query("fake_cuda_live"), 0);
}
END_TEST

static Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda");
    TCase *tc = tcase_create("nodriver");
    tcase_add_test(tc, test_missing_library);
    tcase_add_test(tc, test_default_name);
    tcase_add_test(tc, test_threads_missing);
    suite_add_tcase(s, tc);
    if (fake_path() && *fake_path()) {
        TCase *tf = tcase_create("fake");
        tcase_add_checked_fixture(tf, fake_setup, NULL);
        tcase_add_test(tf, test_fake_load);
        tcase_add_test(tf, test_fake_old_driver);
        tcase_add_loop_test(tf, test_fake_load_failures, 0, 6);
        tcase_add_test(tf, test_fake_pci_and_peers);
        tcase_add_test(tf, test_fake_alloc_copy);
        tcase_add_test(tf, test_fake_alloc_errors);
        tcase_add_test(tf, test_fake_selftest);
        tcase_add_test(tf, test_fake_threads);
        tcase_set_timeout(tf, 60);
        suite_add_tcase(s, tf);
    } else {
        fprintf(stderr, "CLFLEET_TEST_FAKE_CUDA not set: fake-driver tests skipped\n");
    }
    return s;
}

/*
 * Under AddressSanitizer, LeakSanitizer's own tracer crashes (SIGSEGV while
 * stopping the world) at the exit of the forked children these tests use for a
 * fresh driver each; address and undefined-behaviour checks stay on, and the
 * CUDA layer's leaks are checked with valgrind instead. The sanitizer runtime
 * calls this hook when it is linked in; otherwise nothing does.
 */
const char *__lsan_default_options(void);
__attribute__((used)) const char *__lsan_default_options(void)
{
    return "detect_leaks=0";
}

int main(void)
{
    SRunner *sr = srunner_create(cuda_suite());
    /* The driver is loaded once per process: each test needs a fresh one. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Soak: 10,000 launches and 10,000 device-to-device copies in one process,
 * with buffers, events and programs created and released along the way.
 * Resident memory and open file descriptors are sampled after a warm-up and
 * at the end: descriptors must not grow at all, memory by no more than a small
 * bound (allocator noise; a leak of a few hundred bytes per iteration exceeds it).
 *
 * Skipped (77, with a message) under sanitizers and valgrind, whose own
 * bookkeeping (ASan's quarantine) makes the process's memory meaningless here;
 * leaks there are found by LeakSanitizer and valgrind themselves.
 */
#include "common.h"

#include <dirent.h>
#include <stdint.h>
#include <unistd.h>

#define ITERS 10000
#define WARMUP 2000
#define RSS_SLACK ((long)4 << 20) /* bytes */
#define N 256                     /* elements per launch */
#define COPY_BYTES 4096

static long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%ld %ld", &pages, &resident), 2);
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

static int under_valgrind(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, "vgpreload") != NULL;
    if (f)
        fclose(f);
    return found;
}

static const clf_strategy strategies[] = {CLF_STRATEGY_STATIC, CLF_STRATEGY_DYNAMIC,
                                          CLF_STRATEGY_GUIDED, CLF_STRATEGY_AUTO,
                                          CLF_STRATEGY_MEMORY_AWARE};

START_TEST(soak)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    size_t ndev = clf_fleet_device_count(f);
    if (ndev > 8) /* the copies go round the first 8 */
        ndev = 8;
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_shipped(&p, f, "vector", NULL));
    static float a[N], b[N], c[N];
    static unsigned char src[COPY_BYTES], back[COPY_BYTES];
    clf_buffer *bufs[8];
    for (size_t i = 0; i < ndev; i++)
        ck_assert_ok(clf_buffer_create(&bufs[i], f, i, COPY_BYTES, CLF_MEM_READ_WRITE));
    size_t hold = 0; /* the buffer that holds the data */
    long rss0 = 0;
    int fds0 = 0;
    clf_arg args[] = {CLF_IN(a, sizeof a, 4), CLF_IN(b, sizeof b, 4), CLF_OUT(c, sizeof c, 4)};
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            a[i] = (float)(i + it), b[i] = (float)(2 * i), c[i] = -1;
        clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
        d.kernel = "vadd";
        d.global[0] = N;
        d.strategy = strategies[it % 5];
        if (it % 10 == 9) { /* asynchronous, with its event */
            clf_event *ev = NULL;
            ck_assert_ok(clf_launch_async(f, p, &d, args, 3, NULL, &ev));
            ck_assert_ok(clf_event_wait(ev));
            clf_event_release(ev);
        } else {
            ck_assert_ok(clf_launch(f, p, &d, args, 3, NULL));
        }
        for (int i = 0; i < N; i++)
            if (c[i] != (float)(i + it) + (float)(2 * i))
                ck_abort_msg("iteration %d: c[%d] = %g", it, i, (double)c[i]);

        /* One copy from the buffer holding the data to another device's; every 50
         * iterations the data is checked and replaced. */
        if (it % 50 == 0) {
            if (it) {
                ck_assert_ok(clf_buffer_read(bufs[hold], 0, COPY_BYTES, back));
                ck_assert_msg(memcmp(back, src, COPY_BYTES) == 0, "iteration %d: copied data",
                              it);
            }
            for (size_t i = 0; i < COPY_BYTES; i++)
                src[i] = (unsigned char)(i * 7 + (size_t)it);
            ck_assert_ok(clf_buffer_write(bufs[hold], 0, COPY_BYTES, src));
        }
        size_t to = (hold + 1 + (size_t)(it / 2) % (ndev - 1)) % ndev;
        if (it % 2) {
            ck_assert_ok(clf_copy(bufs[to], 0, bufs[hold], 0, COPY_BYTES));
        } else {
            clf_event *ev = NULL;
            ck_assert_ok(clf_copy_async(bufs[to], 0, bufs[hold], 0, COPY_BYTES, NULL, 0, &ev));
            ck_assert_ok(clf_event_wait(ev));
            clf_event_release(ev);
        }
        hold = to;
        /* A short-lived buffer and, now and then, a program from the cache. */
        if (it % 20 == 0) {
            clf_buffer *tmp = NULL;
            ck_assert_ok(clf_buffer_create(&tmp, f, (size_t)it % ndev, 1024, 0));
            ck_assert_ok(clf_buffer_write(tmp, 0, 1024, src));
            ck_assert_ok(clf_buffer_read(tmp, 0, 1024, back));
            ck_assert_int_eq(memcmp(back, src, 1024), 0);
            clf_buffer_destroy(tmp);
        }
        if (it % 1000 == 500) {
            clf_program *q = NULL;
            ck_assert_ok(clf_program_build_shipped(&q, f, "vector", NULL));
            clf_program_destroy(q);
        }
        if (it + 1 == WARMUP) {
            rss0 = rss_bytes();
            fds0 = open_fds();
        }
    }
    ck_assert_ok(clf_buffer_read(bufs[hold], 0, COPY_BYTES, back));
    ck_assert_int_eq(memcmp(back, src, COPY_BYTES), 0);
    long rss1 = rss_bytes();
    int fds1 = open_fds();
    clf_fleet_metrics m;
    ck_assert_ok(clf_metrics_fleet(&m, f));
    fprintf(stderr,
            "soak: %d launches, %d copies; after %d: RSS %.1f MiB, %d fds; after %d: RSS %.1f "
            "MiB, %d fds (growth %+.2f MiB, bound %.0f MiB)\n",
            ITERS, ITERS, WARMUP, (double)rss0 / 1048576.0, fds0, ITERS,
            (double)rss1 / 1048576.0, fds1, (double)(rss1 - rss0) / 1048576.0,
            (double)RSS_SLACK / 1048576.0);
    ck_assert_uint_eq(m.launches, ITERS);
    ck_assert_msg(fds1 <= fds0, "open descriptors grew from %d to %d", fds0, fds1);
    ck_assert_msg(rss1 - rss0 <= RSS_SLACK, "resident memory grew by %ld bytes (bound %ld)",
                  rss1 - rss0, RSS_SLACK);
    for (size_t i = 0; i < ndev; i++)
        clf_buffer_destroy(bufs[i]);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

int main(void)
{
    if (UNDER_SANITIZER || under_valgrind()) {
        fprintf(stderr, "SKIP: the soak measures the process's memory, which sanitizers and "
                        "valgrind inflate; it runs in the plain build\n");
        return TEST_SKIP;
    }
    Suite *s = suite_create("soak");
    TCase *tc = tcase_create("soak");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, soak);
    suite_add_tcase(s, tc);
    return test_run(s, TEST_CPUS, 3);
}

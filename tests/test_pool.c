/* The process's helper pool (lib/util/pool.c) on its own: no OpenCL device is needed.
 * Every test works whatever the pool did before it (CK_FORK=no runs them in one process);
 * the shutdown test comes last. */
#include "util/util.h"

#include <check.h>
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The pool's threads in this process: the entries of /proc/self/task named clf-pool*
 * (by name, so that a sanitizer's own threads do not count). */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[64], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%.20s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread has just ended */
        if (fgets(comm, sizeof comm, f))
            n += strncmp(comm, "clf-pool", 8) == 0;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* A gate the test opens: jobs that block on it hold their pool threads. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_open, g_waiting, g_ran, g_cancelled;
static int g_order[512], g_norder;
static int g_badname;

static void gate_job(void *arg, int cancelled)
{
    (void)arg;
    pthread_mutex_lock(&g_lock);
    if (cancelled) {
        g_cancelled++;
    } else {
        g_waiting++;
        pthread_cond_broadcast(&g_cond);
        while (!g_open)
            pthread_cond_wait(&g_cond, &g_lock);
        g_waiting--;
        g_ran++;
    }
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

/* Records its index, in the order the jobs ran (or were cancelled: negative). */
static void order_job(void *arg, int cancelled)
{
    int i = (int)(intptr_t)arg;
    char name[16] = "";
    if (!cancelled && (pthread_getname_np(pthread_self(), name, sizeof name) != 0 ||
                       strncmp(name, "clf-pool", 8) != 0))
        g_badname = 1;
    pthread_mutex_lock(&g_lock);
    if (g_norder < (int)CLF__ARRAY_LEN(g_order))
        g_order[g_norder++] = cancelled ? -1 - i : i;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

static void wait_for(int *counter, int value)
{
    pthread_mutex_lock(&g_lock);
    while (*counter < value)
        pthread_cond_wait(&g_cond, &g_lock);
    pthread_mutex_unlock(&g_lock);
}

static void reset(void)
{
    pthread_mutex_lock(&g_lock);
    g_open = g_waiting = g_ran = g_cancelled = g_norder = g_badname = 0;
    pthread_mutex_unlock(&g_lock);
}

static void open_gate(void)
{
    pthread_mutex_lock(&g_lock);
    g_open = 1;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

START_TEST(test_config)
{
    unsigned n = 0;
    unsetenv("CLFLEET_THREADPOOL_SIZE");
    ck_assert_int_eq(clf__pool_config(&n), CLF_SUCCESS);
    ck_assert_uint_eq(n, CLF__POOL_DEFAULT);
    const char *bad[] = {"0", "-1", "four", "3x", "65", "99999999999999999999"};
    for (size_t i = 0; i < CLF__ARRAY_LEN(bad); i++) {
        setenv("CLFLEET_THREADPOOL_SIZE", bad[i], 1);
        ck_assert_int_eq(clf__pool_config(&n), CLF_ERROR_PARSE);
        ck_assert_ptr_nonnull(strstr(clf_last_error(), "CLFLEET_THREADPOOL_SIZE"));
    }
    setenv("CLFLEET_THREADPOOL_SIZE", "7", 1);
    ck_assert_int_eq(clf__pool_config(&n), CLF_SUCCESS);
    ck_assert_uint_eq(n, 7);
    setenv("CLFLEET_THREADPOOL_SIZE", "3", 1); /* what the tests below run with */
}
END_TEST

/* Many jobs: every one runs once, on a named pool thread, and the process gains at most the
 * pool's bound in threads. */
START_TEST(test_many)
{
    reset();
    enum { N = 400 };
    static clf__pool_work w[N];
    for (int i = 0; i < N; i++) {
        w[i].fn = order_job;
        w[i].arg = (void *)(intptr_t)i;
        ck_assert_int_eq(clf__pool_submit(&w[i]), CLF_SUCCESS);
    }
    wait_for(&g_norder, N);
    unsigned size = clf__pool_size();
    ck_assert_uint_ge(size, 1);
    ck_assert_uint_le(clf__pool_threads(), size);
    ck_assert_int_le(count_threads(), (int)size); /* a thread names itself when it starts */
    ck_assert_int_eq(g_badname, 0);
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        ck_assert_int_ge(g_order[i], 0);
        seen[g_order[i]]++;
    }
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(seen[i], 1);
}
END_TEST

/* FIFO: with every thread but one held, the jobs queued behind run in submission order. */
START_TEST(test_order)
{
    reset();
    int held = (int)clf__pool_size() - 1;
    static clf__pool_work gates[CLF__POOL_MAX], w[100];
    for (int i = 0; i < held; i++) {
        gates[i].fn = gate_job;
        ck_assert_int_eq(clf__pool_submit(&gates[i]), CLF_SUCCESS);
    }
    wait_for(&g_waiting, held);
    for (int i = 0; i < 100; i++) {
        w[i].fn = order_job;
        w[i].arg = (void *)(intptr_t)i;
        ck_assert_int_eq(clf__pool_submit(&w[i]), CLF_SUCCESS);
    }
    wait_for(&g_norder, 100);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(g_order[i], i);
    open_gate();
    wait_for(&g_ran, held);
    ck_assert_uint_le(clf__pool_threads(), clf__pool_size());
}
END_TEST

/* A job that queues itself again as its last act, ROUNDS times. */
enum { ROUNDS = 50 };
static clf__pool_work r_job;
static int r_count;

static void requeue_job(void *arg, int cancelled)
{
    (void)arg;
    (void)cancelled;
    pthread_mutex_lock(&g_lock);
    int n = ++r_count;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    if (n < ROUNDS)
        ck_assert_int_eq(clf__pool_requeue(&r_job), CLF_SUCCESS);
}

/* Requeued from its own thread, a job starts no thread for itself: its thread takes it. */
START_TEST(test_requeue)
{
    unsigned before = clf__pool_threads();
    r_count = 0;
    r_job.fn = requeue_job;
    ck_assert_int_eq(clf__pool_submit(&r_job), CLF_SUCCESS);
    wait_for(&r_count, ROUNDS);
    ck_assert_uint_le(clf__pool_threads(), before > 1 ? before : 1);
}
END_TEST

/* Timed jobs: each records its index and when it ran. */
static uint64_t t_ran_at[8];

static void timed_job(void *arg, int cancelled)
{
    int i = (int)(intptr_t)arg;
    uint64_t now = clf__mono_ns();
    pthread_mutex_lock(&g_lock);
    t_ran_at[i] = now;
    if (g_norder < (int)CLF__ARRAY_LEN(g_order))
        g_order[g_norder++] = cancelled ? -1 - i : i;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

/* Timed jobs run in the order of their times, whatever the order they were queued in, and
 * none before its time. */
START_TEST(test_timed_order)
{
    reset();
    static clf__pool_work w[3];
    const uint64_t after_ms[3] = {60, 20, 40};
    uint64_t t0 = clf__mono_ns();
    for (int i = 0; i < 3; i++) {
        w[i].fn = timed_job;
        w[i].arg = (void *)(intptr_t)i;
        ck_assert_int_eq(clf__pool_submit_at(&w[i], t0 + after_ms[i] * 1000000u), CLF_SUCCESS);
    }
    wait_for(&g_norder, 3);
    ck_assert_int_eq(g_order[0], 1);
    ck_assert_int_eq(g_order[1], 2);
    ck_assert_int_eq(g_order[2], 0);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_ge(t_ran_at[i], t0 + after_ms[i] * 1000000u);
}
END_TEST

static void timed_open_job(void *arg, int cancelled)
{
    (void)arg;
    (void)cancelled;
    open_gate();
}

/* The guarantee ordinary jobs rely on (a copy or a launch waiting for a simulated command,
 * whose completion is a timed job): with every one of the pool's threads held by an ordinary
 * job that waits for a timed one, the timed job still runs, on the one thread it may start
 * beyond the bound, and the waits end. With a pool of only its bound this hangs. */
START_TEST(test_timed_reserved)
{
    reset();
    int size = (int)clf__pool_size();
    static clf__pool_work gates[CLF__POOL_MAX], opener;
    for (int i = 0; i < size; i++) {
        gates[i].fn = gate_job;
        ck_assert_int_eq(clf__pool_submit(&gates[i]), CLF_SUCCESS);
    }
    wait_for(&g_waiting, size); /* every ordinary thread is held */
    opener.fn = timed_open_job;
    ck_assert_int_eq(clf__pool_submit_at(&opener, clf__mono_ns() + 5000000u), CLF_SUCCESS);
    wait_for(&g_ran, size);
    ck_assert_uint_le(clf__pool_threads(), clf__pool_size() + 1);
    ck_assert_int_le(count_threads(), size + 1);
}
END_TEST

#if !defined(__SANITIZE_THREAD__)
/* A child of fork() has no pool thread: its first job starts one. (ThreadSanitizer does not
 * support threads started after a multi-threaded fork: not under it.) */
START_TEST(test_fork)
{
    reset();
    static clf__pool_work w1, w2;
    w1.fn = order_job;
    w1.arg = (void *)(intptr_t)1;
    ck_assert_int_eq(clf__pool_submit(&w1), CLF_SUCCESS); /* the parent has a thread now */
    wait_for(&g_norder, 1);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(20); /* a job that never runs fails the test instead of hanging it */
        w2.fn = order_job;
        w2.arg = (void *)(intptr_t)2;
        if (clf__pool_submit(&w2) != CLF_SUCCESS)
            _exit(2);
        wait_for(&g_norder, 2);
        _exit(g_order[1] == 2 ? 0 : 3);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child's job did not run (status %d)", status);
}
END_TEST
#endif

static void *shutdown_main(void *arg)
{
    (void)arg;
    clf__pool_shutdown();
    return NULL;
}

/* Shutdown with queued work: the queued jobs are cancelled in order, the running ones finish,
 * the threads end, and a later submit is refused with a reason. */
START_TEST(test_shutdown)
{
    reset();
    int size = (int)clf__pool_size();
    static clf__pool_work gates[CLF__POOL_MAX], w[20];
    for (int i = 0; i < size; i++) {
        gates[i].fn = gate_job;
        ck_assert_int_eq(clf__pool_submit(&gates[i]), CLF_SUCCESS);
    }
    wait_for(&g_waiting, size); /* every thread is held: what follows stays queued */
    for (int i = 0; i < 20; i++) {
        w[i].fn = order_job;
        w[i].arg = (void *)(intptr_t)i;
        ck_assert_int_eq(clf__pool_submit(&w[i]), CLF_SUCCESS);
    }
    ck_assert_int_eq(clf__pool_stopping(), 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, shutdown_main, NULL), 0);
    wait_for(&g_norder, 20); /* cancelled by the shutdown while the gates still hold */
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(g_order[i], -1 - i);
    ck_assert_int_eq(g_ran, 0);
    ck_assert_int_eq(clf__pool_stopping(), 1);
    clf__pool_work late = {.fn = order_job, .arg = (void *)(intptr_t)99};
    clf_clear_error();
    ck_assert_int_eq(clf__pool_submit(&late), CLF_ERROR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "shut down"));
    open_gate();
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(g_ran, size); /* the running jobs finished, not cancelled */
    ck_assert_int_eq(g_cancelled, 0);
    ck_assert_int_eq(g_norder, 20); /* the refused job never ran */
    ck_assert_int_eq(count_threads(), 0); /* the pool's threads were joined */
    clf__pool_shutdown(); /* again: nothing to do */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_add_test(tc, test_config);
    tcase_add_test(tc, test_many);
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_requeue);
    /* After the tests that count on at most the bound of threads: a timed job may start
     * one more. */
    tcase_add_test(tc, test_timed_order);
    tcase_add_test(tc, test_timed_reserved);
#if !defined(__SANITIZE_THREAD__)
    tcase_add_test(tc, test_fork);
#endif
    tcase_add_test(tc, test_shutdown);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

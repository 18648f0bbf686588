/* Helpers shared by the benchmarks of clfleet-bench. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double clf_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int clf_bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double clf_bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, clf_bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int clf_bench_flag_option(const char *arg, const char *name, int *flag)
{
    if (strcmp(arg, name))
        return 0;
    *flag = 1;
    return 1;
}

int clf_bench_size_option(int argc, char **argv, int *i, const char *name, int base, size_t min,
                          size_t max, size_t *out)
{
    if (strcmp(argv[*i], name) || *i + 1 >= argc)
        return 0;
    char *end;
    unsigned long long v = strtoull(argv[*i + 1], &end, base);
    if (*end != '\0' || v < min || v > max)
        return 0;
    *out = (size_t)v;
    ++*i;
    return 1;
}

int clf_bench_common_option(clf_bench_common *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    size_t reps;
    if (!strcmp(a, "--json"))
        c->json = 1;
    else if (!strcmp(a, "--quick"))
        c->quick = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        return CLF_BENCH_OPTION_HELP;
    else if (!strcmp(a, "--devices")) {
        if (*i + 1 >= argc)
            return CLF_BENCH_OPTION_BAD;
        c->devices = argv[++*i];
        c->devices_given = 1;
    } else if (!strcmp(a, "--reps")) {
        if (!clf_bench_size_option(argc, argv, i, "--reps", 10, 1, CLF_BENCH_MAX_REPS, &reps))
            return CLF_BENCH_OPTION_BAD;
        c->reps = (unsigned)reps;
    } else
        return CLF_BENCH_OPTION_OTHER;
    return CLF_BENCH_OPTION_TAKEN;
}

int clf_bench_parse(clf_bench_common *c, int argc, char **argv, clf_bench_own_option own,
                    void *bench)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = clf_bench_common_option(c, argc, argv, &i);
        if (r == CLF_BENCH_OPTION_HELP) {
            c->usage(stdout);
            return 0;
        }
        if (r == CLF_BENCH_OPTION_BAD || (r == CLF_BENCH_OPTION_OTHER &&
                                          !(own && own(bench, argc, argv, &i)))) {
            fprintf(stderr, "clfleet-bench %s: bad argument '%s'\n", c->name, a);
            c->usage(stderr);
            return CLF_BENCH_USAGE;
        }
    }
    if (c->quick && c->reps > c->quick_reps)
        c->reps = c->quick_reps;
    return -1;
}

int clf_bench_fail(const char *cmd, const char *what, clf_status st)
{
    fprintf(stderr, "clfleet-bench%s%s: %s: %s: %s\n", cmd ? " " : "", cmd ? cmd : "", what,
            clf_status_name(st), clf_last_error());
    return EXIT_FAILURE;
}

int clf_bench_setup_failed(const char *cmd, const char *what, clf_status st)
{
    clf_bench_fail(cmd, what, st);
    return st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM ? CLF_BENCH_SKIP
                                                                    : EXIT_FAILURE;
}

double clf_bench_gbps(size_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e9 : NAN;
}

void clf_bench_size_label(char *buf, size_t len, size_t bytes)
{
    if (bytes >= ((size_t)1 << 20))
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else
        snprintf(buf, len, "%zu KiB", bytes >> 10);
}

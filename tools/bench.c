/* Helpers shared by the benchmarks of clfleet-bench. */
#include "bench.h"

#include <stdlib.h>
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

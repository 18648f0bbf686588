/*
 * The cost model's fits, pure arithmetic (see perfmodel.h): the chunk line time(c) = fixed +
 * c / rate by Theil-Sen, predictions from it, the spread of a set of samples, and the
 * guess of a device's speed before anything is measured; the one median of lib/plan/.
 *
 * Why Theil-Sen rather than least squares: one chunk that waited behind another process's
 * work is a point far off the line, and least squares follows it (a 10x spike among 16
 * points moves the fitted fixed cost by more than the true one); the median of pairwise
 * slopes and of residuals ignores it (tests/test_partition.c checks it). At 16 samples the
 * pairs are 120 doubles: nothing to save by anything cleverer.
 */
#include "perfmodel.h"

#include <math.h>

static void sort_doubles(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The q-quantile (0..1) of sorted v[0..n), n > 0, interpolated between ranks. */
static double quantile(const double *v, size_t n, double q)
{
    double r = q * (double)(n - 1);
    size_t lo = (size_t)r;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (r - (double)lo) * (v[lo + 1] - v[lo]);
}

double clf__median(double *v, size_t n)
{
    sort_doubles(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int clf__perf_line(const clf__perf_chunk *c, size_t n, double *rate, double *fixed_s)
{
    double slopes[CLF__PERF_CHUNKS * (CLF__PERF_CHUNKS - 1) / 2], res[CLF__PERF_CHUNKS];
    size_t ns = 0;
    if (!c || n < 2)
        return 0;
    if (n > CLF__PERF_CHUNKS)
        n = CLF__PERF_CHUNKS; /* the model never holds more; callers pass its window */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            double xi = (double)c[i].units, xj = (double)c[j].units;
            double lo = xi < xj ? xi : xj, hi = xi < xj ? xj : xi;
            /* Sizes too close make the slope all noise (a 1% timing jitter over a 1% size
             * difference is a 100% slope error). */
            if (lo <= 0 || hi < lo * 1.25)
                continue;
            slopes[ns++] = (c[j].seconds - c[i].seconds) / (xj - xi);
        }
    /* Sizes apart on too few samples: all but two chunks of one size (dynamic's equal
     * chunks and a remainder or two) give slopes that all hang on those two timings, and
     * one of them slowed by another process gave a slope 40x too steep and a fixed cost of
     * 0 (a loaded host, issue 27). So at least 3 samples lie off the most common size
     * (half of them below 6 samples: two points on an exact line still make a line). */
    size_t main_size = 0;
    for (size_t i = 0; i < n; i++) {
        size_t near = 0;
        for (size_t j = 0; j < n && c[i].units; j++) {
            double r = (double)c[j].units / (double)c[i].units;
            near += r < 1.25 && r > 1 / 1.25;
        }
        main_size = near > main_size ? near : main_size;
    }
    size_t off = n - main_size, need = n / 2 < 3 ? n / 2 : 3;
    if (ns == 0 || off < need)
        return 0;
    double b = clf__median(slopes, ns);
    if (!(b > 0) || !isfinite(b))
        return 0;
    for (size_t i = 0; i < n; i++)
        res[i] = c[i].seconds - b * (double)c[i].units;
    double a = clf__median(res, n);
    if (rate)
        *rate = 1 / b;
    if (fixed_s)
        *fixed_s = a > 0 ? a : 0;
    return 1;
}

double clf__perf_iqr(double *v, size_t n)
{
    if (n == 0)
        return 0;
    sort_doubles(v, n);
    return quantile(v, n, 0.75) - quantile(v, n, 0.25);
}

double clf__perf_predict(const clf__perf_fit *f, uint64_t units)
{
    if (!f)
        return -1;
    if (f->rate > 0 && f->fixed_s >= 0)
        return f->fixed_s + (double)units / f->rate;
    if (f->units_per_s > 0)
        return (double)units / f->units_per_s;
    return -1;
}

double clf__perf_guess_speed(const clf_device_info *in)
{
    return (double)(in->compute_units ? in->compute_units : 1) *
           (in->clock_mhz ? in->clock_mhz : 1000);
}

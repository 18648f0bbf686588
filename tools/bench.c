/* Helpers shared by the benchmarks of clfleet-bench. */
#include "bench.h"
#include "plot.h"

#include <errno.h>
#include <limits.h>
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

int clf_bench_number(const char *s, int base, size_t min, size_t max, size_t *out)
{
    if (!s || !(*s >= '0' && *s <= '9'))
        return 0; /* no sign, space or empty value */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno)
        return 0;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10, end++;
    else if (*end == 'm' || *end == 'M')
        shift = 20, end++;
    else if (*end == 'g' || *end == 'G')
        shift = 30, end++;
    if (*end != '\0' || v > (ULLONG_MAX >> shift))
        return 0;
    v <<= shift;
    if (v < min || v > max)
        return 0;
    *out = (size_t)v;
    return 1;
}

static const char *trace_path;

const char *clf_bench_trace(void)
{
    return trace_path;
}

char *clf_bench_trace_name(const char *path, const char *tag)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t stem = dot && dot > (slash ? slash : path) ? (size_t)(dot - path) : strlen(path);
    size_t len = strlen(path) + strlen(tag) + 2;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%.*s-%s%s", (int)stem, path, tag, path + stem);
    return s;
}

/* The vals of the common options (the benchmarks' own start at CLF_BENCH_OWN). */
enum {
    OPT_JSON = 0x80,
    OPT_QUICK,
    OPT_VERBOSE,
    OPT_REPS,
    OPT_DEVICES,
    OPT_TRACE,
    OPT_PLOT,
    OPT_SIMULATE
};

static const struct option COMMON[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"reps", required_argument, NULL, OPT_REPS},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"simulate", required_argument, NULL, OPT_SIMULATE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
};
#define NCOMMON (sizeof COMMON / sizeof COMMON[0])
#define MAX_OWN 32

/* A bad command line: what was wrong, then where to look. */
static int usage_error(const clf_bench_common *c, const char *fmt, const char *what,
                       const char *more)
{
    fprintf(stderr, "clfleet-bench %s: ", c->name);
    fprintf(stderr, fmt, what, more);
    fprintf(stderr, "\nTry 'clfleet-bench %s --help'.\n", c->name);
    return CLF_BENCH_USAGE;
}

int clf_bench_parse(clf_bench_common *c, int argc, char **argv, const struct option *own_options,
                    clf_bench_own_option own, void *bench)
{
    struct option all[NCOMMON + MAX_OWN + 1];
    size_t n = 0;
    for (size_t i = 0; i < NCOMMON; i++)
        all[n++] = COMMON[i];
    for (size_t i = 0; own_options && own_options[i].name && i < MAX_OWN; i++)
        all[n++] = own_options[i];
    memset(&all[n], 0, sizeof all[n]);
    /* The benchmark's options whose val is a letter have that letter as their short form
     * (nccl-tests' -b, -e, -f, ...). */
    char shorts[3 + 2 * MAX_OWN + 1] = ":hV";
    size_t ns = 3;
    for (size_t i = NCOMMON; i < n; i++) {
        int v = all[i].val;
        if (((v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z')) && v != 'h' && v != 'V') {
            shorts[ns++] = (char)v;
            if (all[i].has_arg == required_argument)
                shorts[ns++] = ':';
        }
    }
    shorts[ns] = 0;
    opterr = 0; /* our own messages, naming the command */
    optind = 0; /* glibc: start afresh (main() parsed argv before) */
    int val, index;
    size_t reps;
    while ((index = -1, val = getopt_long(argc, argv, shorts, all, &index)) != -1) {
        const char *seen = argv[optind - 1]; /* the option, or its separate value */
        if (index < 0) /* a short option: its long entry, for messages */
            for (size_t i = 0; i < n && index < 0; i++)
                if (all[i].val == val)
                    index = (int)i;
        switch (val) {
        case OPT_JSON:
            c->json = 1;
            break;
        case OPT_QUICK:
            c->quick = 1;
            break;
        case OPT_VERBOSE:
            c->verbose = 1;
            break;
        case OPT_REPS:
            if (!clf_bench_number(optarg, 10, 1, CLF_BENCH_MAX_REPS, &reps))
                return usage_error(c, "--reps wants a whole number from 1 to 64, not '%s'%s",
                                   optarg, "");
            c->reps = (unsigned)reps;
            break;
        case OPT_DEVICES:
            c->devices = optarg;
            break;
        case OPT_TRACE:
            if (!*optarg)
                return usage_error(c, "--trace wants a path%s%s", "", "");
            c->trace = optarg;
            break;
        case OPT_PLOT:
            if (!c->can_plot)
                return usage_error(c, "--plot is not available here%s%s (p2p, allreduce, "
                                   "scale and balance draw)", "", "");
            if (!*optarg)
                return usage_error(c, "--plot wants a path%s%s", "", "");
            c->plot = optarg;
            break;
        case OPT_SIMULATE:
            if (!*optarg)
                return usage_error(c, "--simulate wants rules such as "
                                   "'device=1,compute=0.02,latency=60us'%s%s", "", "");
            c->simulate = optarg;
            break;
        case 'h':
            c->usage(stdout);
            return 0;
        case 'V':
            printf("clfleet-bench %s\n", clf_version_string());
            return 0;
        case ':':
            return usage_error(c, "'%s' needs a value%s", seen, "");
        case '?':
            if (optopt && optopt < 0x80) {
                char opt[3] = {'-', (char)optopt, 0};
                return usage_error(c, "unknown option '%s'%s", opt, "");
            }
            return usage_error(c, "unknown option '%s'%s", seen, "");
        default:
            if (!own || !own(bench, val, optarg))
                return usage_error(c, "bad value '%s' for --%s", optarg ? optarg : "",
                                   index >= 0 ? all[index].name : "?");
            break;
        }
    }
    if (optind < argc)
        return usage_error(c, "unexpected argument '%s'%s", argv[optind], "");
    if (c->quick && c->reps > c->quick_reps)
        c->reps = c->quick_reps;
    if (c->trace) {
        char *path = clf_bench_trace_name(c->trace, "%n");
        if (!path || setenv("CLFLEET_TRACE", path, 1) != 0) {
            free(path);
            fprintf(stderr, "clfleet-bench %s: --trace: out of memory\n", c->name);
            return EXIT_FAILURE;
        }
        free(path);
        trace_path = c->trace;
    }
    /* The library reads CLFLEET_SIMULATE when a fleet is created: every fleet the benchmark
     * makes from now on, and every child process it starts, sees the rules. The rules are
     * the library's to check (a library without simulation ignores the variable). */
    if (c->simulate && setenv("CLFLEET_SIMULATE", c->simulate, 1) != 0) {
        fprintf(stderr, "clfleet-bench %s: --simulate: %s\n", c->name, strerror(errno));
        return EXIT_FAILURE;
    }
    if (c->simulate)
        fprintf(stderr, "clfleet-bench %s: simulated devices: CLFLEET_SIMULATE='%s' (a testing "
                        "tool: real devices made to behave like others)\n",
                c->name, c->simulate);
    return -1;
}

const char *clf_bench_simulation(void)
{
    const char *s = getenv("CLFLEET_SIMULATE");
    return s && *s ? s : NULL;
}

const char *clf_bench_selection_source(const clf_bench_common *c, char *buf, size_t len)
{
    const char *env = getenv("CLFLEET_DEVICES");
    if (c->devices)
        snprintf(buf, len, "--devices '%s'", c->devices);
    else if (env && *env)
        snprintf(buf, len, "CLFLEET_DEVICES='%s'", env);
    else
        snprintf(buf, len, "the default selection");
    return buf;
}

/* When every device of f is a CPU root device: how many sub-devices of one compute unit
 * those of two or more units would give; else 0. */
static size_t split_count(const clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f), units = 0;
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) != CLF_SUCCESS || in.type != CLF_DEVICE_CPU ||
            in.is_sub_device)
            return 0;
        if (in.compute_units >= 2)
            units += in.compute_units;
    }
    return units;
}

clf_status clf_bench_fleet(clf_fleet **out, const clf_bench_common *c, clf_fleet_options *o,
                           size_t need)
{
    return clf_bench_fleet_want(out, c, o, need, need);
}

clf_status clf_bench_fleet_want(clf_fleet **out, const clf_bench_common *c, clf_fleet_options *o,
                                size_t want, size_t need)
{
    char src[1100];
    clf_bench_selection_source(c, src, sizeof src);
    o->devices = c->devices;
    *out = NULL;
    clf_fleet *f = NULL;
    clf_status st = clf_fleet_create(&f, o);
    if (st != CLF_SUCCESS) {
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", clf_last_error());
        fprintf(stderr, "clfleet-bench %s: %s: %s: %s\n", c->name, src, clf_status_name(st),
                detail);
        return st;
    }
    size_t have = clf_fleet_device_count(f);
    if (have < want && split_count(f) >= want) {
        fprintf(stderr,
                "clfleet-bench %s: %s gives %zu device(s), this benchmark wants %zu: splitting "
                "each CPU device of two or more compute units into sub-devices of one unit "
                "(as ';split=1' in the selection would)\n",
                c->name, src, have, want);
        clf_fleet_destroy(f);
        f = NULL;
        o->split_cpu_units = 1;
        if (o->min_compute_units < 2)
            o->min_compute_units = 2;
        st = clf_fleet_create(&f, o);
        if (st != CLF_SUCCESS) {
            fprintf(stderr, "clfleet-bench %s: splitting: %s: %s\n", c->name,
                    clf_status_name(st), clf_last_error());
            return st;
        }
        have = clf_fleet_device_count(f);
    }
    if (have < need) {
        fprintf(stderr,
                "clfleet-bench %s: needs %zu devices, but %s gives %zu: set CLFLEET_DEVICES or "
                "pass --devices with a selection of at least %zu devices, e.g. --devices "
                "'type=all' (every device) or --devices 'type=cpu;split=1' (CPU sub-devices)\n",
                c->name, need, src, have, need);
        clf_fleet_destroy(f);
        return CLF_ERROR_NO_DEVICE;
    }
    *out = f;
    return CLF_SUCCESS;
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

int clf_bench_plot_write(const clf_bench_common *c, const struct clf_plot *plot,
                         const char *path)
{
    if (!path)
        return 0;
    if (clf_plot_write(plot, path) != 0) {
        fprintf(stderr, "clfleet-bench %s: --plot %s: %s\n", c->name, path, strerror(errno));
        return 1;
    }
    fprintf(stderr, "clfleet-bench %s: plot written to %s\n", c->name, path);
    return 0;
}

void clf_bench_size_label(char *buf, size_t len, size_t bytes)
{
    if (bytes >= ((size_t)1 << 20))
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else
        snprintf(buf, len, "%zu KiB", bytes >> 10);
}

const char CLF_BENCH_JACOBI_CL[] =
    "kernel void jac2(global const float *in, global float *out)\n"
    "{\n"
    "    size_t x = get_global_id(0), y = get_global_id(1);\n"
    "    size_t w = get_global_size(0), h = get_global_size(1), i = y * w + x;\n"
    "    float c = in[i];\n"
    "    if (x == 0 || y == 0 || x + 1 == w || y + 1 == h) { out[i] = c; return; }\n"
    "    out[i] = ((in[i - 1] + in[i + 1]) + (in[i - w] + in[i + w])) * 0.25f;\n"
    "}\n";

void clf_bench_jacobi_init(float *grid, size_t n)
{
    for (size_t i = 0; i < n; i++)
        grid[i] = (float)((i * 2654435761u) % 1000) / 8.0f;
}

int clf_bench_jacobi_ok(const float *init, size_t w, size_t h, size_t steps, const float *res)
{
    size_t n = w * h;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    int ok = x && y;
    if (ok) {
        memcpy(x, init, n * sizeof *x);
        for (size_t k = 0; k < steps; k++) {
            for (size_t r = 0; r < h; r++)
                for (size_t c = 0; c < w; c++) {
                    size_t i = r * w + c;
                    y[i] = (c == 0 || r == 0 || c + 1 == w || r + 1 == h)
                               ? x[i]
                               : ((x[i - 1] + x[i + 1]) + (x[i - w] + x[i + w])) * 0.25f;
                }
            float *u = x;
            x = y;
            y = u;
        }
        ok = memcmp(x, res, n * sizeof *x) == 0;
    }
    free(x);
    free(y);
    return ok;
}

int clf_bench_grid_option(int val, const char *arg, size_t *w, size_t *h, size_t *steps)
{
    if (val == CLF_BENCH_OPT_SIZE) {
        if (!clf_bench_number(arg, 10, 8, 32768, w))
            return 0;
        *h = *w;
        return 1;
    }
    return clf_bench_number(arg, 10, 1, 100000, steps);
}

size_t clf_bench_fastest(const double *t, size_t n)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (t[i] >= 0 && (best == n || t[i] < t[best]))
            best = i;
    return best;
}

int clf_bench_same_kind(const clf_fleet *f, size_t i, size_t j)
{
    /* Under CLFLEET_SIMULATE equal devices may be made unequal: each is its own kind. */
    if (i != j && clf_bench_simulation())
        return 0;
    clf_device_info a, b;
    if (clf_device_get_info(&a, f, i) != CLF_SUCCESS ||
        clf_device_get_info(&b, f, j) != CLF_SUCCESS)
        return 0;
    return a.type == b.type && a.compute_units == b.compute_units &&
           a.is_sub_device == b.is_sub_device &&
           (!a.is_sub_device || a.parent_index == b.parent_index) && !strcmp(a.name, b.name);
}

/*
 * Metrics and timelines: the counters equal what the test issued (buffer
 * transfers of known sizes, launches compared with their reports), resets,
 * memory accounting, the JSON export and the Chrome trace file (parsed here:
 * valid JSON, a track per device used, no overlap on an in-order queue, host
 * order preserved across queues), and an idle device's utilization. Task
 * queues, pipelines, collectives and GEMM count each kernel they run, and the
 * bytes they move, and name their kernels on the timeline.
 */
#include "common.h"

#include <clfleet/blas.h>

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The devices the tests use; sub-devices of a pthread device really run at once. */
#define SPLIT_CPUS TEST_CPUS ";name=pthread;split=1"

/* ---- a small JSON reader (RFC 8259; enough to walk what clfleet writes) -------------------- */

typedef struct jv {
    char type; /* 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null */
    double num;
    char *str;
    size_t n;          /* members or elements */
    char **keys;       /* objects */
    struct jv *items;  /* members' values or elements */
} jv;

typedef struct jp {
    const char *p;
    int depth;
} jp;

static void jws(jp *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static int jvalue(jp *j, jv *out);

static int jstring(jp *j, char **out)
{
    if (*j->p != '"')
        return 0;
    j->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (*j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) {
            free(s);
            return 0;
        }
        if (c == '\\') {
            c = (unsigned char)*j->p++;
            if (c == 'u') {
                for (int i = 0; i < 4; i++)
                    if (!isxdigit((unsigned char)*j->p++)) {
                        free(s);
                        return 0;
                    }
                c = '?';
            } else if (!c || !strchr("\"\\/bfnrt", c)) {
                free(s);
                return 0;
            }
        }
        if (n + 2 > cap)
            s = realloc(s, cap *= 2);
        s[n++] = (char)c;
    }
    j->p++;
    s[n] = 0;
    *out = s;
    return 1;
}

static int jnumber(jp *j, double *out)
{
    const char *s = j->p;
    if (*j->p == '-')
        j->p++;
    if (*j->p == '0')
        j->p++;
    else if (isdigit((unsigned char)*j->p))
        while (isdigit((unsigned char)*j->p))
            j->p++;
    else
        return 0;
    if (*j->p == '.') {
        j->p++;
        if (!isdigit((unsigned char)*j->p))
            return 0;
        while (isdigit((unsigned char)*j->p))
            j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-')
            j->p++;
        if (!isdigit((unsigned char)*j->p))
            return 0;
        while (isdigit((unsigned char)*j->p))
            j->p++;
    }
    *out = strtod(s, NULL);
    return 1;
}

static int jseq(jp *j, jv *out, int object)
{
    char close = object ? '}' : ']';
    size_t cap = 8;
    out->type = object ? 'o' : 'a';
    out->items = calloc(cap, sizeof *out->items);
    out->keys = object ? calloc(cap, sizeof *out->keys) : NULL;
    if (++j->depth > 64)
        return 0;
    j->p++;
    jws(j);
    if (*j->p == close) {
        j->p++;
        j->depth--;
        return 1;
    }
    for (;;) {
        if (out->n == cap) {
            cap *= 2;
            out->items = realloc(out->items, cap * sizeof *out->items);
            if (object)
                out->keys = realloc(out->keys, cap * sizeof *out->keys);
        }
        jws(j);
        if (object) {
            if (!jstring(j, &out->keys[out->n]))
                return 0;
            jws(j);
            if (*j->p++ != ':') {
                out->n++;
                return 0;
            }
        }
        memset(&out->items[out->n], 0, sizeof out->items[0]);
        int ok = jvalue(j, &out->items[out->n]);
        out->n++;
        if (!ok)
            return 0;
        jws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p != close)
            return 0;
        j->p++;
        j->depth--;
        return 1;
    }
}

static int jvalue(jp *j, jv *out)
{
    memset(out, 0, sizeof *out);
    jws(j);
    switch (*j->p) {
    case '{':
        return jseq(j, out, 1);
    case '[':
        return jseq(j, out, 0);
    case '"':
        out->type = 's';
        return jstring(j, &out->str);
    case 't':
    case 'f':
    case 'n': {
        const char *w = *j->p == 't' ? "true" : *j->p == 'f' ? "false" : "null";
        if (strncmp(j->p, w, strlen(w)))
            return 0;
        out->type = *j->p == 'n' ? 'z' : 'b';
        out->num = *j->p == 't';
        j->p += strlen(w);
        return 1;
    }
    default:
        out->type = 'n';
        return jnumber(j, &out->num);
    }
}

static void jfree(jv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        jfree(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

/* Parse a whole document; fails the test when it is not exactly one JSON value. */
static jv jparse(const char *text)
{
    jp j = {text, 0};
    jv v;
    int ok = jvalue(&j, &v);
    if (ok) {
        jws(&j);
        ok = *j.p == 0;
    }
    ck_assert_msg(ok, "invalid JSON near offset %ld: '%.60s'", (long)(j.p - text), j.p);
    return v;
}

static const jv *jget(const jv *o, const char *key)
{
    for (size_t i = 0; o && o->type == 'o' && i < o->n; i++)
        if (!strcmp(o->keys[i], key))
            return &o->items[i];
    return NULL;
}

static double jnum(const jv *o, const char *key)
{
    const jv *v = jget(o, key);
    ck_assert_msg(v && v->type == 'n', "no number '%s'", key);
    return v->num;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static void temp_path(char *buf, size_t n, const char *what)
{
    const char *dir = getenv("TMPDIR");
    static int seq;
    snprintf(buf, n, "%s/clf-%s-%ld-%d.json", dir && dir[0] ? dir : "/tmp", what, (long)getpid(),
             seq++);
}

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static clf_device_metrics dev_metrics(clf_fleet *f, size_t d)
{
    clf_device_metrics m;
    ck_assert_ok(clf_metrics_device(&m, f, d));
    ck_assert_uint_eq(m.device, d);
    return m;
}

static clf_fleet_metrics fleet_metrics(clf_fleet *f)
{
    clf_fleet_metrics m;
    ck_assert_ok(clf_metrics_fleet(&m, f));
    return m;
}

static clf_program *build_shipped(clf_fleet *f, const char *name)
{
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_shipped(&p, f, name, NULL));
    return p;
}

/* A launch of busy over n items with iters iterations; devices NULL: the whole fleet. */
static void run_busy(clf_fleet *f, clf_program *p, size_t n, int iters, const size_t *devices,
                     size_t ndev, clf_launch_report *rep)
{
    float *out = calloc(n, sizeof *out);
    clf_arg args[] = {CLF_OUT(out, n * sizeof *out, sizeof *out), CLF_SCALAR(&iters)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "busy";
    d.global[0] = n;
    d.local[0] = 64;
    d.strategy = CLF_STRATEGY_DYNAMIC;
    d.devices = devices;
    d.num_devices = ndev;
    ck_assert_ok(clf_launch(f, p, &d, args, 2, rep));
    free(out);
}

/* Every counter of a device that took part in a launch equals the launch's report. */
static void check_against_report(clf_fleet *f, const clf_launch_report *rep)
{
    for (size_t i = 0; i < rep->num_devices; i++) {
        const clf_device_report *r = &rep->dev[i];
        clf_device_metrics m = dev_metrics(f, r->device);
        ck_assert_msg(m.kernels == r->chunks, "device %zu: %llu kernels, %u chunks", r->device,
                      (unsigned long long)m.kernels, r->chunks);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].bytes, r->bytes_to_device);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_FROM_DEVICE].bytes, r->bytes_from_device);
        ck_assert_msg(fabs(m.busy_s - r->busy_s) < 1e-9, "busy %g vs %g", m.busy_s, r->busy_s);
        ck_assert_msg(fabs(m.dir[CLF_DIRECTION_TO_DEVICE].seconds - r->to_device_s) < 1e-9,
                      "to device %g vs %g", m.dir[CLF_DIRECTION_TO_DEVICE].seconds, r->to_device_s);
        ck_assert_msg(fabs(m.dir[CLF_DIRECTION_FROM_DEVICE].seconds - r->from_device_s) < 1e-9,
                      "from device %g vs %g", m.dir[CLF_DIRECTION_FROM_DEVICE].seconds,
                      r->from_device_s);
        ck_assert_int_eq(m.in_last_launch, 1);
        ck_assert_double_eq_tol(m.last_share, r->share, 1e-12);
        ck_assert_double_eq_tol(m.last_busy_s, r->busy_s, 1e-12);
        if (r->chunks)
            ck_assert_msg(m.busy_s > 0, "device %zu ran %u chunks in no time", r->device,
                          r->chunks);
    }
}

/* ---- counters ------------------------------------------------------------------------------ */

START_TEST(buffer_counters_and_memory)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    size_t n = clf_fleet_device_count(f);
    const size_t big = (1u << 20) + 13, small = 4096;
    unsigned char *host = calloc(1, big);
    for (size_t d = 0; d < n; d++) {
        ck_assert_ok(clf_metrics_reset(f));
        clf_buffer *a, *b;
        ck_assert_ok(clf_buffer_create(&a, f, d, big, 0));
        ck_assert_ok(clf_buffer_create(&b, f, d, small, 0));
        clf_device_metrics m = dev_metrics(f, d);
        ck_assert_uint_eq(m.mem_current, big + small);
        ck_assert_uint_eq(m.mem_peak, big + small);
        ck_assert_uint_eq(m.allocations, 2);

        clf_event *e;
        ck_assert_ok(clf_buffer_write(a, 0, big, host));
        ck_assert_ok(clf_buffer_write_async(b, 8, 1001, host, &e));
        ck_assert_ok(clf_event_wait(e));
        clf_event_release(e);
        ck_assert_ok(clf_buffer_read(a, 3, 777, host));
        ck_assert_ok(clf_buffer_read_async(b, 0, 500, host, NULL));
        ck_assert_ok(clf_buffer_fill(b, "\0\0\0\0", 4, 0, small)); /* not a transfer */
        ck_assert_ok(clf_fleet_finish(f));

        m = dev_metrics(f, d);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].bytes, big + 1001);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].count, 2);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_FROM_DEVICE].bytes, 777 + 500);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_FROM_DEVICE].count, 2);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_PEER].bytes, 0);
        ck_assert_uint_eq(m.transfers, 4);
        ck_assert_uint_eq(m.kernels, 0);
        /* The blocking write's time is known at once, from its profiling event. */
        ck_assert_msg(m.dir[CLF_DIRECTION_TO_DEVICE].seconds > 0, "no transfer time");
        ck_assert_msg(m.dir[CLF_DIRECTION_TO_DEVICE].bandwidth > 0, "no bandwidth");
        ck_assert_double_eq_tol(m.dir[CLF_DIRECTION_TO_DEVICE].bandwidth,
                                (double)m.dir[CLF_DIRECTION_TO_DEVICE].bytes /
                                    m.dir[CLF_DIRECTION_TO_DEVICE].seconds,
                                1e-6 * m.dir[CLF_DIRECTION_TO_DEVICE].bandwidth);
        ck_assert_msg(m.wait_s >= 0, "negative wait");
        for (size_t o = 0; o < n; o++)
            if (o != d) {
                clf_device_metrics x = dev_metrics(f, o);
                ck_assert_uint_eq(x.transfers, 0);
                ck_assert_uint_eq(x.allocations, 0);
            }
        clf_fleet_metrics fm = fleet_metrics(f);
        ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, big + 1001);
        ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, 777 + 500);
        ck_assert_uint_eq(fm.mem_current, big + small);
        ck_assert_uint_eq(fm.num_devices, n);

        /* Memory follows destroy; the peak stays until a reset. */
        clf_buffer_destroy(a);
        m = dev_metrics(f, d);
        ck_assert_uint_eq(m.mem_current, small);
        ck_assert_uint_eq(m.mem_peak, big + small);
        ck_assert_ok(clf_metrics_reset(f));
        m = dev_metrics(f, d);
        ck_assert_uint_eq(m.mem_peak, small);
        ck_assert_uint_eq(m.transfers, 0);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].bytes, 0);
        ck_assert_uint_eq(m.allocations, 0);
        clf_buffer_destroy(b);
        ck_assert_uint_eq(dev_metrics(f, d).mem_current, 0);
        ck_assert_uint_eq(fleet_metrics(f).mem_current, 0);
    }
    free(host);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(launch_counters_match_report)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    clf_program *p = build_shipped(f, "vector");
    const size_t n = 64 * 1000;
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        a[i] = (float)i, b[i] = 1.0f;
    clf_arg args[] = {CLF_IN(a, n * 4, 4), CLF_IN(b, n * 4, 4), CLF_OUT(c, n * 4, 4)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "vadd";
    d.global[0] = n;
    d.local[0] = 64; /* every chunk a multiple: one kernel command per chunk */
    d.strategy = CLF_STRATEGY_DYNAMIC;
    clf_launch_report rep;
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_launch(f, p, &d, args, 3, &rep));
    check_against_report(f, &rep);

    uint64_t chunks = 0, in = 0, out = 0;
    for (size_t i = 0; i < rep.num_devices; i++) {
        chunks += rep.dev[i].chunks;
        in += rep.dev[i].bytes_to_device;
        out += rep.dev[i].bytes_from_device;
        clf_device_metrics m = dev_metrics(f, rep.dev[i].device);
        /* Launch buffers: three whole arrays, all released at the end. */
        ck_assert_uint_eq(m.mem_peak, rep.dev[i].mem_peak);
        ck_assert_uint_eq(m.mem_peak, 3 * n * 4);
        ck_assert_uint_eq(m.mem_current, 0);
    }
    ck_assert_uint_eq(in, 2 * n * 4); /* each input once */
    ck_assert_uint_eq(out, n * 4);
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, chunks);
    ck_assert_uint_eq(fm.launches, 1);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, in);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, out);
    ck_assert_str_eq(fm.last_kernel, "vadd");
    ck_assert_int_eq(fm.last_strategy, CLF_STRATEGY_DYNAMIC);
    ck_assert_uint_eq(fm.last_num_devices, rep.num_devices);
    ck_assert_double_eq_tol(fm.last_imbalance, rep.imbalance, 1e-12);
    ck_assert_double_eq_tol(fm.last_efficiency, rep.efficiency, 1e-12);
    ck_assert_double_eq_tol(fm.last_makespan_s, rep.makespan_s, 1e-12);
    ck_assert_msg(fm.utilization > 0 && fm.utilization <= 1.0 + 1e-6, "utilization %g",
                  fm.utilization);
    ck_assert_msg(fm.idle_s >= 0, "idle %g", fm.idle_s);

    /* A reset forgets all of it. */
    ck_assert_ok(clf_metrics_reset(f));
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, 0);
    ck_assert_uint_eq(fm.launches, 0);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, 0);
    ck_assert_double_eq(fm.busy_s, 0);
    ck_assert_str_eq(fm.last_kernel, "");
    ck_assert_int_eq(dev_metrics(f, 0).in_last_launch, 0);
    free(a), free(b), free(c);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

static const char *const BCAST_SRC =
    "__kernel void count_over(__global const float *w, __global const float *x,\n"
    "                         __global int *cnt) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (x[i] * w[i % 16] > 0.5f) atomic_inc(cnt);\n"
    "}\n";

START_TEST(broadcast_and_reduction_counted)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, BCAST_SRC, NULL));
    const size_t n = 64 * 500;
    float w[16], *x = malloc(n * 4);
    for (int i = 0; i < 16; i++)
        w[i] = (float)i / 8.0f;
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7) / 3.0f;
    int32_t cnt = 0, want = 0;
    for (size_t i = 0; i < n; i++)
        want += x[i] * w[i % 16] > 0.5f;
    clf_arg args[] = {CLF_BROADCAST(w, sizeof w), CLF_IN(x, n * 4, 4),
                      CLF_REDUCE(&cnt, 1, CLF_TYPE_INT32, CLF_REDUCE_SUM)};
    clf_launch_desc d = CLF_LAUNCH_DESC_INIT;
    d.kernel = "count_over";
    d.global[0] = n;
    d.local[0] = 64;
    d.strategy = CLF_STRATEGY_DYNAMIC;
    for (int round = 0; round < 2; round++) { /* the second finds the broadcast cached */
        clf_launch_report rep;
        ck_assert_ok(clf_metrics_reset(f));
        ck_assert_ok(clf_launch(f, p, &d, args, 3, &rep));
        ck_assert_int_eq(cnt, want);
        check_against_report(f, &rep);
        for (size_t i = 0; i < rep.num_devices; i++) {
            clf_device_metrics m = dev_metrics(f, rep.dev[i].device);
            /* The fleet keeps the broadcast copy on every device the launch used. */
            ck_assert_uint_eq(m.mem_current, sizeof w);
            /* The broadcast, the input and the reduction; then the broadcast is cached. */
            ck_assert_uint_eq(m.allocations, round == 0 ? 3 : 2);
        }
    }
    clf_program_destroy(p);
    free(x);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(idle_device_utilization)
{
    clf_fleet *f = test_fleet(SPLIT_CPUS, 0);
    ck_assert_uint_ge(clf_fleet_device_count(f), 2);
    clf_program *p = build_shipped(f, "busy");
    size_t only = 0;
    clf_launch_report rep;
    run_busy(f, p, 64 * 64, 1, &only, 1, &rep); /* warm: the kernel compiles */
    ck_assert_ok(clf_metrics_reset(f));
    run_busy(f, p, 64 * 1024, 20000, &only, 1, &rep);
    clf_device_metrics m0 = dev_metrics(f, 0), m1 = dev_metrics(f, 1);
    ck_assert_msg(m0.busy_s > 0.01, "device 0 busy only %g s", m0.busy_s);
    ck_assert_msg(m0.utilization > 0.05 && m0.utilization <= 1.0 + 1e-6,
                  "device 0 utilization %g", m0.utilization);
    ck_assert_msg(m1.utilization < 0.01, "idle device 1 utilization %g", m1.utilization);
    ck_assert_uint_eq(m1.kernels, 0);
    ck_assert_uint_eq(m1.transfers, 0);
    ck_assert_int_eq(m1.in_last_launch, 0);
    ck_assert_int_eq(m0.in_last_launch, 1);
    ck_assert_double_eq_tol(m0.last_share, 1.0, 1e-12);
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_msg(fm.utilization < m0.utilization, "fleet utilization %g", fm.utilization);
    ck_assert_double_eq_tol(fm.last_imbalance, 0.0, 1e-12);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(profile_region)
{
    clf_fleet *f = test_fleet(SPLIT_CPUS, 0);
    clf_program *p = build_shipped(f, "busy");
    clf_launch_report rep;
    run_busy(f, p, 64 * 64, 1, NULL, 0, &rep); /* warm */
    clf_buffer *b;
    static unsigned char host[65536];
    ck_assert_ok(clf_buffer_create(&b, f, 0, sizeof host, 0));

    clf_profile r;
    ck_assert_ok(clf_profile_begin(f, &r));
    ck_assert_ok(clf_buffer_write(b, 0, sizeof host, host));
    run_busy(f, p, 64 * 256, 2000, NULL, 0, &rep);
    ck_assert_ok(clf_metrics_reset(f)); /* a region does not care */
    ck_assert_ok(clf_buffer_read(b, 0, 1000, host));
    ck_assert_ok(clf_fleet_finish(f));
    ck_assert_ok(clf_profile_end(f, &r));

    uint64_t chunks = 0, out = 0;
    double busy = 0;
    for (size_t i = 0; i < rep.num_devices; i++) {
        chunks += rep.dev[i].chunks;
        out += rep.dev[i].bytes_from_device;
        busy += rep.dev[i].busy_s;
    }
    ck_assert_uint_eq(r.launches, 1);
    ck_assert_uint_eq(r.kernels, chunks);
    ck_assert_uint_eq(r.bytes[CLF_DIRECTION_TO_DEVICE], sizeof host);
    ck_assert_uint_eq(r.bytes[CLF_DIRECTION_FROM_DEVICE], out + 1000);
    ck_assert_uint_eq(r.bytes[CLF_DIRECTION_PEER], 0);
    ck_assert_double_eq_tol(r.compute_s, busy, 1e-9);
    ck_assert_msg(r.transfer_s > 0, "no transfer time");
    ck_assert_msg(r.wall_s > 0 && r.wall_s >= rep.makespan_s, "wall %g", r.wall_s);
    ck_assert_msg(r.wait_s >= 0 && r.idle_s >= 0, "wait %g idle %g", r.wait_s, r.idle_s);
    ck_assert_double_eq_tol(r.sync_s, r.wait_s + r.idle_s, 1e-12);
    ck_assert_uint_eq(r.transfers, chunks + 2);

    /* A region belongs to its fleet. */
    clf_fleet *g = test_fleet(TEST_CPUS, 0);
    ck_assert_status(clf_profile_end(g, &r), CLF_ERROR_INVALID_ARGUMENT);
    clf_fleet_destroy(g);
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- export ---------------------------------------------------------------------------------- */

START_TEST(json_and_table)
{
    clf_fleet *f = test_fleet(SPLIT_CPUS, 0);
    size_t n = clf_fleet_device_count(f);
    clf_program *p = build_shipped(f, "busy");
    clf_launch_report rep;
    run_busy(f, p, 64 * 128, 100, NULL, 0, &rep);

    char *s = NULL;
    ck_assert_ok(clf_metrics_json(&s, f));
    ck_assert_ptr_nonnull(s);
    jv v = jparse(s);
    ck_assert_int_eq(v.type, 'o');
    ck_assert_double_eq(jnum(&v, "num_devices"), (double)n);
    ck_assert_double_eq(jnum(&v, "launches"), 1);
    const jv *devs = jget(&v, "devices");
    ck_assert_ptr_nonnull(devs);
    ck_assert_int_eq(devs->type, 'a');
    ck_assert_uint_eq(devs->n, n);
    uint64_t kernels = 0;
    for (size_t i = 0; i < n; i++) {
        clf_device_metrics m = dev_metrics(f, i);
        const jv *d = &devs->items[i];
        ck_assert_double_eq(jnum(d, "device"), (double)i);
        ck_assert_double_eq(jnum(d, "kernels"), (double)m.kernels);
        const jv *to = jget(jget(d, "transfers"), "to-device");
        ck_assert_double_eq(jnum(to, "bytes"), (double)m.dir[CLF_DIRECTION_TO_DEVICE].bytes);
        const jv *from = jget(jget(d, "transfers"), "from-device");
        ck_assert_double_eq(jnum(from, "count"), (double)m.dir[CLF_DIRECTION_FROM_DEVICE].count);
        ck_assert_ptr_nonnull(jget(jget(jget(d, "transfers"), "by_path"), "staged"));
        ck_assert_ptr_nonnull(jget(d, "memory"));
        kernels += m.kernels;
    }
    ck_assert_double_eq(jnum(&v, "kernels"), (double)kernels);
    const jv *last = jget(&v, "last_launch");
    ck_assert_ptr_nonnull(last);
    ck_assert_str_eq(jget(last, "kernel")->str, "busy");
    ck_assert_double_eq_tol(jnum(last, "imbalance"), rep.imbalance, 1e-5);
    ck_assert_uint_eq(jget(&v, "peer_bytes")->n, n);
    jfree(&v);
    clf_free(s);

    /* The FILE* forms: the same JSON, and the table (a row per device and a total). */
    FILE *t = tmpfile();
    ck_assert_ptr_nonnull(t);
    ck_assert_ok(clf_metrics_write_json(f, t));
    long len = ftell(t);
    rewind(t);
    char *buf = calloc(1, (size_t)len + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, t), (size_t)len);
    ck_assert_int_eq(buf[len - 1], '\n');
    buf[len - 1] = 0;
    v = jparse(buf);
    jfree(&v);
    free(buf);
    fclose(t);

    t = tmpfile();
    ck_assert_ok(clf_metrics_print(f, t));
    len = ftell(t);
    rewind(t);
    buf = calloc(1, (size_t)len + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, t), (size_t)len);
    size_t lines = 0;
    for (char *q = buf; *q; q++)
        lines += *q == '\n';
    ck_assert_msg(lines >= n + 3, "table of %zu lines:\n%s", lines, buf);
    ck_assert_ptr_nonnull(strstr(buf, "last launch 'busy'"));
    free(buf);
    fclose(t);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* Issue 29: a copy within one device is no peer traffic (clf_array_reduce()'s first step
 * was reported as peer bytes), array launches are launches, the imbalance is kept over the
 * window's launches, and free memory is the driver's figure or "unknown", never a guess. */
START_TEST(same_device_launches_imbalance_free)
{
    static const char *src = "kernel void twice(global const float *in, global float *out)\n"
                             "{ size_t i = get_global_id(0); out[i] = 2.0f * in[i]; }\n";
    clf_fleet *f = test_fleet(SPLIT_CPUS, 0);
    size_t n = clf_fleet_device_count(f);
    ck_assert_uint_ge(n, 2);
    enum { COUNT = 4096 };
    const size_t bytes = COUNT * sizeof(float);
    float *host = malloc(bytes);
    for (size_t i = 0; i < COUNT; i++)
        host[i] = (float)(i % 7);

    /* One copy within device 0, one from device 0 to device 1. */
    clf_buffer *a, *b, *c;
    ck_assert_ok(clf_buffer_create(&a, f, 0, bytes, 0));
    ck_assert_ok(clf_buffer_create(&b, f, 0, bytes, 0));
    ck_assert_ok(clf_buffer_create(&c, f, 1, bytes, 0));
    ck_assert_ok(clf_buffer_write(a, 0, bytes, host));
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_copy(b, 0, a, 0, bytes));
    clf_device_metrics m0 = dev_metrics(f, 0);
    ck_assert_uint_eq(m0.same_device_bytes, bytes);
    ck_assert_uint_eq(m0.same_device_copies, 1);
    ck_assert_uint_eq(m0.dir[CLF_DIRECTION_PEER].bytes, 0);
    ck_assert_uint_eq(m0.dir[CLF_DIRECTION_PEER].count, 0);
    ck_assert_uint_eq(m0.transfers, 0);
    ck_assert_uint_eq(m0.peer_sent.bytes, 0);
    ck_assert_uint_eq(m0.path[CLF_PATH_SAME_DEVICE].bytes, bytes);
    ck_assert_ok(clf_copy(c, 0, b, 0, bytes));
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.same_device_bytes, bytes);
    ck_assert_uint_eq(fm.same_device_copies, 1);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_PEER].bytes, bytes);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_PEER].count, 1);
    ck_assert_uint_eq(dev_metrics(f, 1).dir[CLF_DIRECTION_PEER].bytes, bytes);
    ck_assert_uint_eq(dev_metrics(f, 1).same_device_bytes, 0);

    /* clf_array_reduce() over a block array: its copies within each device are same-device,
     * and "peer" is exactly the off-diagonal of the pair matrix. */
    clf_array_desc ad = CLF_ARRAY_DESC_INIT;
    ad.elem_size = sizeof(float);
    ad.dims = 1;
    ad.shape[0] = COUNT;
    clf_array *x, *y;
    ck_assert_ok(clf_array_create(&x, f, &ad));
    ck_assert_ok(clf_array_create(&y, f, &ad));
    ck_assert_ok(clf_array_write(x, NULL, NULL, host));
    ck_assert_ok(clf_fleet_finish(f));
    ck_assert_ok(clf_metrics_reset(f));
    float sum = 0;
    ck_assert_ok(clf_array_reduce(&sum, NULL, x, CLF_TYPE_FLOAT, CLF_REDUCE_SUM));
    double want = 0;
    for (size_t i = 0; i < COUNT; i++)
        want += host[i];
    ck_assert_double_eq_tol(sum, want, 1e-3);
    ck_assert_ok(clf_fleet_finish(f));
    fm = fleet_metrics(f);
    ck_assert_msg(fm.same_device_copies >= n, "%llu same-device copies for %zu parts",
                  (unsigned long long)fm.same_device_copies, n);
    uint64_t diag = 0, off = 0;
    for (size_t s = 0; s < n; s++)
        for (size_t t = 0; t < n; t++) {
            clf_transfer_stats ts;
            ck_assert_ok(clf_metrics_peer(&ts, f, s, t));
            *(s == t ? &diag : &off) += ts.bytes;
        }
    ck_assert_uint_eq(diag, fm.same_device_bytes);
    ck_assert_uint_eq(off, fm.dir[CLF_DIRECTION_PEER].bytes);
    ck_assert_msg(fm.dir[CLF_DIRECTION_PEER].bytes < fm.same_device_bytes,
                  "clf_array_reduce moved %llu peer bytes, %llu within devices: the partial "
                  "sums cross devices, not the halves",
                  (unsigned long long)fm.dir[CLF_DIRECTION_PEER].bytes,
                  (unsigned long long)fm.same_device_bytes);

    /* Array launches are launches; they leave the last clf_launch() and the imbalance alone. */
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, src, NULL));
    ck_assert_ok(clf_metrics_reset(f));
    clf_array_launch_desc ld = CLF_ARRAY_LAUNCH_DESC_INIT;
    ld.kernel = "twice";
    ld.global[0] = COUNT;
    clf_arg args[] = {CLF_ARRAY_IN(x), CLF_ARRAY_OUT(y)};
    for (int k = 0; k < 3; k++)
        ck_assert_ok(clf_array_launch(f, p, &ld, args, 2));
    ck_assert_ok(clf_array_finish(y));
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.launches, 3);
    ck_assert_uint_eq(fm.last_num_devices, 0);
    ck_assert_double_eq(fm.mean_imbalance, 0);
    clf_profile region;
    ck_assert_ok(clf_profile_begin(f, &region));
    ck_assert_ok(clf_array_launch(f, p, &ld, args, 2));
    ck_assert_ok(clf_array_finish(y));
    ck_assert_ok(clf_profile_end(f, &region));
    ck_assert_uint_eq(region.launches, 1);
    ck_assert_ok(clf_array_read(y, NULL, NULL, host));
    for (size_t i = 0; i < COUNT; i++)
        expect(host[i] == 2.0f * (float)(i % 7), "twice: element %zu is %g", i,
               (double)host[i]);

    /* The imbalance over every multi-device launch of the window: mean and max of their
     * reports; a one-device launch does not count. */
    clf_program *busy = build_shipped(f, "busy");
    ck_assert_ok(clf_metrics_reset(f));
    double isum = 0, imax = 0;
    int multi = 0;
    for (int k = 0; k < 3; k++) {
        clf_launch_report rep;
        run_busy(f, busy, 64 * 64, 50, NULL, 0, &rep);
        size_t ran = 0;
        for (size_t i = 0; i < rep.num_devices; i++)
            ran += !rep.dev[i].excluded && rep.dev[i].units > 0;
        if (ran >= 2) {
            isum += rep.imbalance;
            imax = rep.imbalance > imax ? rep.imbalance : imax;
            multi++;
        }
    }
    size_t one = 0;
    clf_launch_report rep1;
    run_busy(f, busy, 64 * 64, 50, &one, 1, &rep1);
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.launches, 4);
    ck_assert_double_eq_tol(fm.mean_imbalance, multi ? isum / multi : 0, 1e-12);
    ck_assert_double_eq_tol(fm.max_imbalance, imax, 1e-12);
    ck_assert_double_eq_tol(fm.last_imbalance, rep1.imbalance, 1e-12);

    /* JSON: the same figures, and free memory only where the driver reports it. */
    char *js = NULL;
    ck_assert_ok(clf_metrics_json(&js, f));
    jv v = jparse(js);
    const jv *imb = jget(&v, "imbalance");
    ck_assert_ptr_nonnull(imb);
    ck_assert_double_eq_tol(jnum(imb, "mean"), fm.mean_imbalance, 1e-5);
    ck_assert_double_eq_tol(jnum(imb, "max"), fm.max_imbalance, 1e-5);
    ck_assert_double_eq(jnum(imb, "launches"), multi);
    ck_assert_ptr_nonnull(jget(imb, "of"));
    const jv *same = jget(jget(&v, "transfers"), "same-device");
    ck_assert_ptr_nonnull(same);
    ck_assert_double_eq(jnum(same, "bytes"), (double)fm.same_device_bytes);
    const jv *devs = jget(&v, "devices");
    for (size_t d = 0; d < n; d++) {
        clf_device_metrics m = dev_metrics(f, d);
        clf_device_info info;
        ck_assert_ok(clf_device_get_info(&info, f, d));
        const jv *fr = jget(jget(&devs->items[d], "memory"), "free");
        ck_assert_ptr_nonnull(fr);
        if (clf_device_has_extension(f, d, "cl_amd_device_attribute_query")) {
            ck_assert_msg(m.mem_free != UINT64_MAX && m.mem_free <= info.global_mem,
                          "device %zu: %llu bytes free of %llu", d,
                          (unsigned long long)m.mem_free, (unsigned long long)info.global_mem);
            ck_assert_int_eq(fr->type, 'n');
        } else {
            ck_assert_uint_eq(m.mem_free, UINT64_MAX);
            ck_assert_int_eq(fr->type, 'z');
        }
    }
    jfree(&v);
    clf_free(js);

    /* The table says both, under the rows. */
    FILE *t = tmpfile();
    ck_assert_ptr_nonnull(t);
    ck_assert_ok(clf_copy(b, 0, a, 0, bytes));
    ck_assert_ok(clf_metrics_print(f, t));
    long len = ftell(t);
    rewind(t);
    char *tab = calloc(1, (size_t)len + 1);
    ck_assert_uint_eq(fread(tab, 1, (size_t)len, t), (size_t)len);
    fclose(t);
    ck_assert_msg(strstr(tab, "copies within a device (not in peer MB): 1,"), "%s", tab);
    if (fm.max_imbalance > 0)
        ck_assert_msg(strstr(tab, "imbalance of the multi-device launches: mean"), "%s", tab);
    free(tab);

    clf_program_destroy(busy);
    clf_program_destroy(p);
    clf_array_destroy(x);
    clf_array_destroy(y);
    clf_buffer_destroy(a);
    clf_buffer_destroy(b);
    clf_buffer_destroy(c);
    free(host);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- timelines ------------------------------------------------------------------------------- */

typedef struct xev {
    int pid, tid;
    double ts, dur;
    const char *name, *cat;
    const jv *args;
} xev;

static int cmp_xev(const void *a, const void *b)
{
    const xev *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid - y->pid;
    if (x->tid != y->tid)
        return x->tid - y->tid;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

typedef struct trace_view {
    jv root;
    xev *ev;
    size_t n;
    char *proc_name[65]; /* pid -> process name */
} trace_view;

static void trace_load(trace_view *t, const char *path)
{
    char *s = slurp(path);
    memset(t, 0, sizeof *t);
    t->root = jparse(s);
    free(s);
    const jv *evs = jget(&t->root, "traceEvents");
    ck_assert_msg(evs && evs->type == 'a', "no traceEvents array");
    t->ev = calloc(evs->n + 1, sizeof *t->ev);
    for (size_t i = 0; i < evs->n; i++) {
        const jv *e = &evs->items[i];
        const jv *ph = jget(e, "ph");
        ck_assert_msg(ph && ph->type == 's', "event %zu without ph", i);
        int pid = (int)jnum(e, "pid");
        ck_assert_int_ge(pid, 0);
        if (!strcmp(ph->str, "M")) {
            const jv *nm = jget(e, "name");
            if (!strcmp(nm->str, "process_name") && pid < 65)
                t->proc_name[pid] = jget(jget(e, "args"), "name")->str;
            continue;
        }
        ck_assert_str_eq(ph->str, "X");
        xev *x = &t->ev[t->n++];
        x->pid = pid;
        x->tid = (int)jnum(e, "tid");
        x->ts = jnum(e, "ts");
        x->dur = jnum(e, "dur");
        x->name = jget(e, "name")->str;
        x->cat = jget(e, "cat")->str;
        x->args = jget(e, "args");
        ck_assert_msg(x->dur >= 0, "negative duration");
    }
    qsort(t->ev, t->n, sizeof *t->ev, cmp_xev);
}

static void trace_free(trace_view *t)
{
    jfree(&t->root);
    free(t->ev);
}

/* Commands of one in-order queue follow each other: no two events of a track overlap. */
static void check_no_overlap(const trace_view *t)
{
    for (size_t i = 1; i < t->n; i++) {
        const xev *a = &t->ev[i - 1], *b = &t->ev[i];
        if (a->pid != b->pid || a->tid != b->tid)
            continue;
        ck_assert_msg(a->ts + a->dur <= b->ts + 0.002,
                      "pid %d tid %d: '%s' [%.3f + %.3f] overlaps '%s' at %.3f", a->pid, a->tid,
                      a->name, a->ts, a->dur, b->name, b->ts);
    }
}

static size_t count_events(const trace_view *t, int pid, int tid, const char *name)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        k += t->ev[i].pid == pid && t->ev[i].tid == tid &&
             (!name || !strcmp(t->ev[i].name, name));
    return k;
}

START_TEST(trace_file)
{
    char path[512];
    temp_path(path, sizeof path, "trace");
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = SPLIT_CPUS;
    o.trace = path;
    clf_fleet *f = NULL;
    double t_create = mono_us();
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_str_eq(clf_trace_path(f), path);
    size_t n = clf_fleet_device_count(f);
    clf_program *p = build_shipped(f, "busy");
    clf_launch_report rep;
    run_busy(f, p, 64 * 512, 3000, NULL, 0, &rep);
    /* After the launch in host order: a blocking write must come after every kernel. */
    clf_buffer *b;
    static unsigned char host[1 << 16];
    ck_assert_ok(clf_buffer_create(&b, f, n - 1, sizeof host, 0));
    ck_assert_ok(clf_buffer_write(b, 0, sizeof host, host));
    ck_assert_ok(clf_buffer_read(b, 0, sizeof host, host));
    ck_assert_ok(clf_fleet_finish(f));
    ck_assert_ok(clf_trace_flush(f));
    double t_flush = mono_us() - t_create;

    trace_view t;
    trace_load(&t, path);
    check_no_overlap(&t);
    ck_assert_ptr_nonnull(t.proc_name[0]);
    double last_kernel_end = 0;
    for (size_t i = 0; i < rep.num_devices; i++) {
        const clf_device_report *r = &rep.dev[i];
        int pid = (int)r->device + 1;
        char want[32];
        snprintf(want, sizeof want, "%zu: ", r->device);
        ck_assert_msg(t.proc_name[pid] && !strncmp(t.proc_name[pid], want, strlen(want)),
                      "device %zu has no named track", r->device);
        /* Every chunk's kernel on the compute track, named by the kernel. */
        ck_assert_uint_eq(count_events(&t, pid, 1, "busy"), r->chunks);
        /* Every chunk's output on the transfer track (and the read on the last device). */
        ck_assert_uint_eq(count_events(&t, pid, 2, "device to host"),
                          r->chunks + (r->device == n - 1));
        for (size_t k = 0; k < t.n; k++)
            if (t.ev[k].pid == pid && t.ev[k].tid == 1 &&
                t.ev[k].ts + t.ev[k].dur > last_kernel_end)
                last_kernel_end = t.ev[k].ts + t.ev[k].dur;
    }
    /* One launch on the host's track, with the strategy that ran and its efficiency. */
    ck_assert_uint_eq(count_events(&t, 0, 1, "busy"), 1);
    for (size_t k = 0; k < t.n; k++) {
        if (t.ev[k].pid != 0 || t.ev[k].tid != 1 || strcmp(t.ev[k].name, "busy"))
            continue;
        const jv *s = jget(t.ev[k].args, "strategy");
        ck_assert_msg(s && s->type == 's', "the launch's slice has no strategy");
        ck_assert_str_eq(s->str, clf_strategy_name(rep.strategy));
        ck_assert_double_eq_tol(jnum(t.ev[k].args, "efficiency"), rep.efficiency, 1e-4);
        ck_assert_double_eq(jnum(t.ev[k].args, "units"), (double)rep.total_units);
    }
    /* Times are on the host's clock, from the fleet's creation. */
    for (size_t k = 0; k < t.n; k++)
        ck_assert_msg(t.ev[k].ts > -1000 && t.ev[k].ts + t.ev[k].dur < t_flush + 1000,
                      "'%s' at %.3f us outside [0, %.3f]", t.ev[k].name, t.ev[k].ts, t_flush);
    /* Clocks of different queues and devices agree: the later write comes later. */
    int pid = (int)n;
    ck_assert_uint_eq(count_events(&t, pid, 2, "host to device"), 1); /* busy has no input */
    double write_ts = -1;
    for (size_t k = 0; k < t.n; k++)
        if (t.ev[k].pid == pid && t.ev[k].tid == 2 && !strcmp(t.ev[k].name, "host to device"))
            write_ts = t.ev[k].ts;
    ck_assert_msg(write_ts >= last_kernel_end - 500,
                  "the write after the launch starts at %.3f us, before the last kernel ends "
                  "(%.3f us)",
                  write_ts, last_kernel_end);
    trace_free(&t);

    /* The file is rewritten whole when the fleet goes. */
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    trace_load(&t, path);
    check_no_overlap(&t);
    ck_assert_uint_ge(count_events(&t, (int)n, 2, "device to host"), 1);
    trace_free(&t);
    remove(path);
}
END_TEST

START_TEST(trace_from_environment)
{
    char path[512];
    temp_path(path, sizeof path, "envtrace");
    remove(path);
    setenv("CLFLEET_TRACE", path, 1);
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    ck_assert_str_eq(clf_trace_path(f), path);
    clf_buffer *b;
    char host[4096] = {0};
    ck_assert_ok(clf_buffer_create(&b, f, 0, sizeof host, 0));
    ck_assert_ok(clf_buffer_write(b, 0, sizeof host, host));
    clf_event *e;
    ck_assert_ok(clf_buffer_read_async(b, 0, sizeof host, host, &e));
    ck_assert_ok(clf_event_wait(e));
    clf_event_release(e);
    clf_buffer_destroy(b);
    clf_fleet_destroy(f);
    trace_view t;
    trace_load(&t, path);
    check_no_overlap(&t);
    ck_assert_uint_eq(count_events(&t, 1, 2, "host to device"), 1);
    /* The asynchronous read's time arrives with its completion. */
    ck_assert_uint_eq(count_events(&t, 1, 2, "device to host"), 1);
    trace_free(&t);
    remove(path);

    /* An empty option turns tracing off whatever the environment says. */
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = TEST_CPUS;
    o.trace = "";
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_ptr_null(clf_trace_path(f));
    ck_assert_ok(clf_trace_flush(f)); /* nothing to do */
    clf_fleet_destroy(f);
    unsetenv("CLFLEET_TRACE");
    ck_assert_int_ne(access(path, F_OK), 0);

    /* %p and %n give every fleet of every process its own file. */
    char tmpl[600], pid[32];
    snprintf(tmpl, sizeof tmpl, "%s-%%p-%%n-%%%%.json", path);
    snprintf(pid, sizeof pid, "-%ld-", (long)getpid());
    o.trace = tmpl;
    clf_fleet *g;
    ck_assert_ok(clf_fleet_create(&f, &o));
    ck_assert_ok(clf_fleet_create(&g, &o));
    char p1[700], p2[700];
    snprintf(p1, sizeof p1, "%s", clf_trace_path(f));
    snprintf(p2, sizeof p2, "%s", clf_trace_path(g));
    ck_assert_str_ne(p1, p2);
    ck_assert_ptr_nonnull(strstr(p1, pid));
    ck_assert_ptr_nonnull(strstr(p1, "-%.json"));
    clf_fleet_destroy(f);
    clf_fleet_destroy(g);
    ck_assert_int_eq(access(p1, F_OK), 0);
    ck_assert_int_eq(access(p2, F_OK), 0);
    remove(p1);
    remove(p2);

    /* An unwritable path fails the creation (tests/test_badinput.c: and at flush). */
    o.trace = "/nonexistent-dir/x/trace.json";
    f = NULL;
    ck_assert_status(clf_fleet_create(&f, &o), CLF_ERROR_IO);
    ck_assert_ptr_null(f);
}
END_TEST

/* ---- task queues, pipelines, collectives, GEMM ---------------------------------------------- */

/* Kernels of the subsystems other than clf_launch: each must be counted once, with its bytes,
 * and appear on its device's compute track under its own name. */
static const char CMD_SRC[] =
    "__kernel void tq_scale(__global const float *in, __global float *out, float k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * k;\n"
    "}\n"
    "__kernel void p_inc(__global const uint *in, __global uint *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] + 1;\n"
    "}\n";

/* A fleet of selection that traces to a fresh path. */
static clf_fleet *traced_fleet(const char *selection, char *path, size_t len)
{
    temp_path(path, len, "cmd");
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = selection;
    o.trace = path;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    return f;
}

/* The kernels the fleet counted on each device, from its metrics. */
static void kernels_per_device(clf_fleet *f, uint64_t *k)
{
    for (size_t d = 0; d < clf_fleet_device_count(f); d++)
        k[d] = dev_metrics(f, d).kernels;
}

/* After everything completed: the trace holds want[d] events named name on device d's
 * compute track, for every device. */
static void check_traced(clf_fleet *f, const char *path, const char *name, const uint64_t *want)
{
    ck_assert_ok(clf_fleet_finish(f));
    ck_assert_ok(clf_trace_flush(f));
    trace_view t;
    trace_load(&t, path);
    check_no_overlap(&t);
    for (size_t d = 0; d < clf_fleet_device_count(f); d++)
        ck_assert_msg(count_events(&t, (int)d + 1, 1, name) == want[d],
                      "device %zu: %zu '%s' on the trace's compute track, %llu expected", d,
                      count_events(&t, (int)d + 1, 1, name), name, (unsigned long long)want[d]);
    trace_free(&t);
}

START_TEST(taskq_counted)
{
    char path[512];
    clf_fleet *f = traced_fleet(TEST_CPUS, path, sizeof path);
    size_t n = clf_fleet_device_count(f);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, CMD_SRC, NULL));
    enum { TASKS = 4, ELEMS = 8192 }; /* 32 KiB in and out per task */
    float *in = malloc(TASKS * ELEMS * 4), *out = calloc(TASKS * ELEMS, 4);
    for (size_t i = 0; i < TASKS * ELEMS; i++)
        in[i] = (float)(i % 1000);
    clf_taskq *q;
    ck_assert_ok(clf_taskq_create(&q, f, p, NULL, 0));
    const float k = 3.0f;
    for (size_t t = 0; t < TASKS; t++) {
        clf_arg a[] = {CLF_WHOLE_IN(in + t * ELEMS, ELEMS * 4),
                       CLF_WHOLE_OUT(out + t * ELEMS, ELEMS * 4), CLF_SCALAR(&k)};
        clf_task_desc d = CLF_TASK_DESC_INIT;
        d.kernel = "tq_scale";
        d.global[0] = ELEMS;
        d.affinity = t % n; /* every device, the basic one too */
        ck_assert_ok(clf_taskq_submit(q, &d, a, 3, NULL));
    }
    ck_assert_ok(clf_metrics_reset(f));
    clf_taskq_report rep;
    ck_assert_ok(clf_taskq_run(q, &rep));
    ck_assert_uint_eq(rep.failed, 0);
    for (size_t i = 0; i < TASKS * ELEMS; i++)
        expect(out[i] == in[i] * k, "element %zu: %g, expected %g", i, out[i], in[i] * k);
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, TASKS);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, TASKS * ELEMS * 4);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, TASKS * ELEMS * 4);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].count, TASKS);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].count, TASKS);
    uint64_t want[CLF_MAX_LAUNCH_DEVICES] = {0};
    for (size_t i = 0; i < rep.num_devices; i++) {
        clf_device_metrics m = dev_metrics(f, rep.dev[i].device);
        ck_assert_uint_eq(m.kernels, rep.dev[i].tasks);
        ck_assert_uint_eq(m.dir[CLF_DIRECTION_TO_DEVICE].bytes, rep.dev[i].tasks * ELEMS * 4);
        want[rep.dev[i].device] = rep.dev[i].tasks;
    }
    check_traced(f, path, "tq_scale", want);
    ck_assert_msg(fleet_metrics(f).busy_s > 0, "no kernel time");
    clf_taskq_destroy(q);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(in);
    free(out);
    remove(path);
}
END_TEST

START_TEST(pipeline_counted)
{
    char path[512];
    clf_fleet *f = traced_fleet(TEST_CPUS, path, sizeof path);
    size_t ndev = clf_fleet_device_count(f);
    ck_assert_uint_ge(ndev, 3);
    clf_program *p = NULL;
    ck_assert_ok(clf_program_build_source(&p, f, CMD_SRC, NULL));
    enum { STAGES = 3, NB = 6, ELEMS = 4096 };
    clf_stage_desc st[STAGES];
    for (size_t s = 0; s < STAGES; s++) {
        st[s] = (clf_stage_desc)CLF_STAGE_DESC_INIT;
        st[s].device = ndev - 1 - s; /* PoCL's basic device, when there is one, goes first */
        st[s].program = p;
        st[s].kernel = "p_inc";
        st[s].in_bytes = st[s].out_bytes = ELEMS * 4;
        st[s].global[0] = ELEMS;
    }
    uint32_t *in = malloc(NB * ELEMS * 4), *out = calloc(NB * ELEMS, 4);
    for (size_t i = 0; i < NB * ELEMS; i++)
        in[i] = (uint32_t)i * 7u;
    clf_pipeline *pl;
    ck_assert_ok(clf_pipeline_create(&pl, f, st, STAGES, NULL));
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_pipeline_run(pl, in, out, NB, NULL));
    for (size_t i = 0; i < NB * ELEMS; i++)
        expect(out[i] == in[i] + STAGES, "element %zu: %u, expected %u", i, out[i], in[i] + 3);
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, STAGES * NB);
    /* Batches in at the first stage, out at the last; copies between stages are peer. */
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, NB * ELEMS * 4);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, NB * ELEMS * 4);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_PEER].bytes, (STAGES - 1) * NB * ELEMS * 4);
    uint64_t k[CLF_MAX_LAUNCH_DEVICES] = {0}, want[CLF_MAX_LAUNCH_DEVICES] = {0};
    kernels_per_device(f, k);
    for (size_t s = 0; s < STAGES; s++) {
        ck_assert_uint_eq(k[st[s].device], NB);
        want[st[s].device] = NB;
    }
    ck_assert_uint_eq(dev_metrics(f, st[0].device).dir[CLF_DIRECTION_TO_DEVICE].bytes,
                      NB * ELEMS * 4);
    ck_assert_uint_eq(dev_metrics(f, st[STAGES - 1].device).dir[CLF_DIRECTION_FROM_DEVICE].bytes,
                      NB * ELEMS * 4);
    check_traced(f, path, "p_inc", want);
    clf_pipeline_destroy(pl);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(in);
    free(out);
    remove(path);
}
END_TEST

START_TEST(collectives_counted)
{
    char path[512];
    clf_fleet *f = traced_fleet(TEST_CPUS, path, sizeof path);
    size_t n = clf_fleet_device_count(f);
    ck_assert_uint_ge(n, 3);
    n = 3;
    /* Small enough for one chunk per ring segment and per chain. */
    enum { COUNT = 3000 };
    const uint64_t bytes = COUNT * 4;
    float *host = malloc(bytes), *res = malloc(bytes);
    clf_buffer *b[3];
    for (size_t d = 0; d < n; d++)
        ck_assert_ok(clf_buffer_create(&b[d], f, d, bytes, 0));
    for (size_t i = 0; i < COUNT; i++)
        host[i] = (float)(i % 100);

    /* Scatter: the host's array to the devices, no kernel. */
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_scatter(b, n, host, COUNT, 4, CLF_DIST_BLOCK, 0));
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, 0);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, bytes);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].count, n);

    /* All-reduce over whole buffers, the host combine forced: a read and a write of every
     * buffer, no kernel. */
    clf_collective_options ar = CLF_COLLECTIVE_OPTIONS_INIT;
    ar.algorithm = CLF_ALLREDUCE_HOST;
    for (size_t d = 0; d < n; d++)
        ck_assert_ok(clf_buffer_write(b[d], 0, bytes, host));
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_allreduce(b, n, COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &ar));
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, 0);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, n * bytes);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].count, n);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, n * bytes);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].count, n);
    ck_assert_ok(clf_buffer_read(b[n - 1], 0, bytes, res));
    for (size_t i = 0; i < COUNT; i++)
        expect(res[i] == 3 * host[i], "all-reduce (host combine) element %zu: %g", i, res[i]);

    /* The ring forced: n (n - 1) combines, one per device and step. */
    ar.algorithm = CLF_ALLREDUCE_RING;
    for (size_t d = 0; d < n; d++)
        ck_assert_ok(clf_buffer_write(b[d], 0, bytes, host));
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_allreduce(b, n, COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, &ar));
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, n * (n - 1));
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, 0);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, 0);
    uint64_t k[CLF_MAX_LAUNCH_DEVICES] = {0}, want[CLF_MAX_LAUNCH_DEVICES] = {0};
    kernels_per_device(f, k);
    uint64_t ring_want[CLF_MAX_LAUNCH_DEVICES] = {0};
    for (size_t d = 0; d < n; d++) {
        ck_assert_uint_eq(k[d], n - 1);
        ring_want[d] = n - 1; /* the trace names them after the algorithm */
    }
    ck_assert_ok(clf_buffer_read(b[1], 0, bytes, res));
    for (size_t i = 0; i < COUNT; i++)
        expect(res[i] == 3 * host[i], "all-reduce element %zu: %g", i, res[i]);

    /* Reduce to the host: a chain of n - 1 combines, the result read from its end. */
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_reduce_to_host(res, b, n, COUNT, CLF_TYPE_FLOAT, CLF_REDUCE_SUM, NULL));
    for (size_t i = 0; i < COUNT; i++)
        expect(res[i] == 9 * host[i], "reduce element %zu: %g", i, res[i]);
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, n - 1);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, bytes);
    ck_assert_uint_eq(dev_metrics(f, n - 1).dir[CLF_DIRECTION_FROM_DEVICE].bytes, bytes);
    for (size_t d = 1; d < n; d++)
        want[d]++;

    /* Broadcast: copies only. */
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_broadcast(b, n, bytes, 0, NULL));
    fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, 0);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_PEER].bytes, (n - 1) * bytes);

    check_traced(f, path, "clf_reduce_sum_f32", want);
    check_traced(f, path, "clf_reduce_sum_f32 (ring)", ring_want);
    for (size_t d = 0; d < n; d++)
        clf_buffer_destroy(b[d]);
    clf_fleet_destroy(f);
    free(host);
    free(res);
    remove(path);
}
END_TEST

START_TEST(gemm_counted)
{
    if (!clf_blas_available()) {
        fprintf(stderr, "gemm_counted: built without clBLAST, not run\n");
        return;
    }
    char path[512];
    clf_fleet *f = traced_fleet(FLEET2, path, sizeof path);
    enum { M = 64, N = 24, K = 16 };
    float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c = calloc(M * N, 4);
    for (size_t i = 0; i < M * K; i++)
        a[i] = (float)(i % 7);
    for (size_t i = 0; i < K * N; i++)
        b[i] = (float)(i % 5);
    clf_gemm_options o = CLF_GEMM_OPTIONS_INIT;
    o.strategy = CLF_STRATEGY_DYNAMIC;
    o.chunks_per_device = 3;
    o.granularity = 1;
    o.split = CLF_GEMM_SPLIT_M;
    clf_launch_report rep;
    ck_assert_ok(clf_metrics_reset(f));
    ck_assert_ok(clf_sgemm(f, CLF_ROW_MAJOR, CLF_NO_TRANS, CLF_NO_TRANS, M, N, K, 1.0f, a, K, b,
                           N, 0.0f, c, N, &o, &rep));
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            float s = 0;
            for (size_t l = 0; l < K; l++)
                s += a[i * K + l] * b[l * N + j];
            expect(c[i * N + j] == s, "C[%zu][%zu] = %g, expected %g", i, j, c[i * N + j], s);
        }
    /* One kernel per clBLAST call, one call per block. */
    uint64_t chunks = 0, to = 0, from = 0, want[CLF_MAX_LAUNCH_DEVICES] = {0};
    for (size_t i = 0; i < rep.num_devices; i++) {
        chunks += rep.dev[i].chunks;
        to += rep.dev[i].bytes_to_device;
        from += rep.dev[i].bytes_from_device;
        want[rep.dev[i].device] = rep.dev[i].chunks;
        ck_assert_uint_eq(dev_metrics(f, rep.dev[i].device).kernels, rep.dev[i].chunks);
    }
    ck_assert_uint_ge(chunks, 2);
    clf_fleet_metrics fm = fleet_metrics(f);
    ck_assert_uint_eq(fm.kernels, chunks);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_TO_DEVICE].bytes, to);
    ck_assert_uint_eq(fm.dir[CLF_DIRECTION_FROM_DEVICE].bytes, from);
    ck_assert_uint_eq(from, M * N * 4);
    check_traced(f, path, "sgemm", want);
    clf_fleet_destroy(f);
    free(a);
    free(b);
    free(c);
    remove(path);
}
END_TEST

START_TEST(metrics_off)
{
    setenv("CLFLEET_METRICS", "0", 1);
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    unsetenv("CLFLEET_METRICS");
    clf_fleet_metrics fm;
    clf_device_metrics dm;
    ck_assert_status(clf_metrics_fleet(&fm, f), CLF_ERROR_UNSUPPORTED);
    ck_assert_status(clf_metrics_device(&dm, f, 0), CLF_ERROR_UNSUPPORTED);
    clf_program *p = build_shipped(f, "busy");
    clf_launch_report rep;
    run_busy(f, p, 64 * 16, 1, NULL, 0, &rep); /* launches still work */
    clf_buffer *b;
    ck_assert_ok(clf_buffer_create(&b, f, 0, 64, 0));
    ck_assert_ok(clf_buffer_write(b, 0, 64, &rep));
    clf_buffer_destroy(b);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
}
END_TEST

/* ---- files: a full disk, a decimal-comma locale ------------------------------------------- */

/* Every write of the metrics and the trace reports a full disk, naming the file: /dev/full
 * takes nothing, but fprintf() into a stream's buffer succeeds until the buffer goes out. */
START_TEST(writes_to_full_disk)
{
    char path[512], tmp[600];
    temp_path(path, sizeof path, "fulltrace");
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = SPLIT_CPUS;
    o.trace = path;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    clf_program *p = build_shipped(f, "busy");
    run_busy(f, p, 64 * 128, 100, NULL, 0, NULL);
    FILE *full = fopen("/dev/full", "w");
    if (!full) {
        fprintf(stderr, "writes_to_full_disk: no /dev/full here (%s); check skipped\n",
                strerror(errno));
    } else {
        clf_clear_error();
        ck_assert_status(clf_metrics_write_json(f, full), CLF_ERROR_IO);
        ck_assert_msg(strstr(clf_last_error(), "clf_metrics_write_json") &&
                          strstr(clf_last_error(), "/dev/full"),
                      "message '%s'", clf_last_error());
        clearerr(full);
        clf_clear_error();
        ck_assert_status(clf_metrics_print(f, full), CLF_ERROR_IO);
        ck_assert_msg(strstr(clf_last_error(), "clf_metrics_print") &&
                          strstr(clf_last_error(), "/dev/full"),
                      "message '%s'", clf_last_error());
        fclose(full);
        /* The trace is written beside its path and renamed: the file it writes first is a
         * link to /dev/full here. The failure names it, and the old trace stays. */
        ck_assert_ok(clf_trace_flush(f));
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        ck_assert_int_eq(symlink("/dev/full", tmp), 0);
        clf_clear_error();
        ck_assert_status(clf_trace_flush(f), CLF_ERROR_IO);
        ck_assert_msg(strstr(clf_last_error(), tmp), "message '%s'", clf_last_error());
        trace_view t;
        trace_load(&t, path);
        trace_free(&t);
        unlink(tmp);
    }
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    remove(path);
}
END_TEST

static int decimal_comma(void)
{
    const struct lconv *lc = localeconv();
    return lc && lc->decimal_point && lc->decimal_point[0] == ',';
}

/*
 * Switch the process to a locale whose decimal point is a comma: one installed, else one
 * that localedef (package locales) makes from its sources into dir, found through LOCPATH
 * (no root needed). Returns its name, or NULL with the C locale kept.
 */
static const char *comma_locale(char *dir, size_t n)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                        "nl_NL.UTF-8", "ru_RU.UTF-8", "de_DE"};
    dir[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_ALL, names[i]) && decimal_comma())
            return names[i];
    setlocale(LC_ALL, "C");
    const char *t = getenv("TMPDIR");
    snprintf(dir, n, "%s/clf-locale-XXXXXX", t && t[0] ? t : "/tmp");
    if (!mkdtemp(dir)) {
        dir[0] = '\0';
        return NULL;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1",
             dir);
    if (system(cmd) == 0 && setenv("LOCPATH", dir, 1) == 0 &&
        setlocale(LC_ALL, "de_DE.UTF-8") && decimal_comma())
        return "de_DE.UTF-8 (made by localedef)";
    setlocale(LC_ALL, "C");
    return NULL;
}

/* The metrics' JSON, the trace and the performance model's JSON hold JSON numbers whatever
 * locale the program set: "0,5" is not one. */
START_TEST(json_in_comma_locale)
{
    char path[512], cache[512], model[600], ldir[512];
    temp_path(path, sizeof path, "localetrace");
    temp_path(cache, sizeof cache, "localecache");
    ck_assert_int_eq(mkdir(cache, 0700), 0);
    snprintf(model, sizeof model, "%s/perf-v1.tsv", cache);
    FILE *mf = fopen(model, "w");
    ck_assert_ptr_nonnull(mf);
    fputs("v1\tbusy\tsome device\t2\t1234.5\t0.25\n", mf);
    ck_assert_int_eq(fclose(mf), 0);
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    o.devices = SPLIT_CPUS;
    o.trace = path;
    clf_fleet *f = NULL;
    ck_assert_ok(clf_fleet_create(&f, &o));
    clf_program *p = build_shipped(f, "busy");
    run_busy(f, p, 64 * 128, 100, NULL, 0, NULL);
    ck_assert_ok(clf_fleet_finish(f));

    const char *loc = comma_locale(ldir, sizeof ldir);
    char *mj = NULL, *pj = NULL;
    clf_status st_m = CLF_SUCCESS, st_t = CLF_SUCCESS, st_p = CLF_SUCCESS;
    if (loc) {
        st_m = clf_metrics_json(&mj, f);
        st_t = clf_trace_flush(f);
        st_p = clf_perf_model_json(&pj, cache);
        setlocale(LC_ALL, "C"); /* before any assertion: later tests run in this process */
    }
    if (ldir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", ldir);
        ck_assert_int_eq(system(cmd), 0);
        unsetenv("LOCPATH");
    }
    if (!loc) {
        fprintf(stderr, "json_in_comma_locale: no decimal-comma locale is installed and "
                        "localedef could not make one (package locales: /usr/share/i18n); "
                        "check skipped\n");
    } else {
        ck_assert_ok(st_m);
        ck_assert_ok(st_t);
        ck_assert_ok(st_p);
        jv v = jparse(mj);
        ck_assert_double_gt(jnum(&v, "wall_s"), 0);
        jfree(&v);
        v = jparse(pj);
        const jv *e = jget(&v, "entries");
        ck_assert_msg(e && e->type == 'a' && e->n == 1, "model: %s", pj);
        ck_assert_double_eq_tol(jnum(&e->items[0], "units_per_s"), (1234.5 + 0.25) / 2, 1e-3);
        jfree(&v);
        trace_view t;
        trace_load(&t, path);
        size_t launches = 0;
        for (size_t k = 0; k < t.n; k++)
            if (t.ev[k].pid == 0 && t.ev[k].tid == 1) {
                double eff = jnum(t.ev[k].args, "efficiency");
                ck_assert_msg(eff > 0 && eff <= 1.0001, "efficiency %g", eff);
                launches++;
            }
        ck_assert_uint_eq(launches, 1);
        trace_free(&t);
    }
    clf_free(mj);
    clf_free(pj);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    remove(path);
    remove(model);
    rmdir(cache);
}
END_TEST

START_TEST(bad_input)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    size_t n = clf_fleet_device_count(f);
    clf_device_metrics dm;
    clf_fleet_metrics fm;
    clf_transfer_stats ts;
    clf_profile pr;
    char *s = (char *)&s;
    ck_assert_status(clf_metrics_device(&dm, NULL, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_device(NULL, f, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_device(&dm, f, n), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_metrics_fleet(&fm, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_fleet(NULL, f), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_peer(&ts, NULL, 0, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_peer(NULL, f, 0, 0), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_peer(&ts, f, 0, n), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_metrics_peer(&ts, f, n, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ok(clf_metrics_peer(&ts, f, 0, n - 1));
    ck_assert_uint_eq(ts.bytes, 0);
    ck_assert_status(clf_metrics_reset(NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_json(&s, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(s);
    ck_assert_status(clf_metrics_json(NULL, f), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_write_json(NULL, stdout), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_write_json(f, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_print(NULL, stdout), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_metrics_print(f, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_profile_begin(NULL, &pr), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_profile_begin(f, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_profile_end(NULL, &pr), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_profile_end(f, NULL), CLF_ERROR_NULL_POINTER);
    memset(&pr, 0, sizeof pr);
    ck_assert_status(clf_profile_end(f, &pr), CLF_ERROR_INVALID_ARGUMENT); /* never begun */
    ck_assert_status(clf_trace_flush(NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ptr_null(clf_trace_path(NULL));
    clf_free(NULL);
    ck_assert_str_eq(clf_direction_name(CLF_DIRECTION_TO_DEVICE), "to-device");
    ck_assert_str_eq(clf_direction_name(CLF_DIRECTION_FROM_DEVICE), "from-device");
    ck_assert_str_eq(clf_direction_name(CLF_DIRECTION_PEER), "peer");
    ck_assert_ptr_null(clf_direction_name((clf_direction)CLF_NUM_DIRECTIONS));
    clf_fleet_destroy(f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, buffer_counters_and_memory);
    tcase_add_test(tc, launch_counters_match_report);
    tcase_add_test(tc, broadcast_and_reduction_counted);
    tcase_add_test(tc, idle_device_utilization);
    tcase_add_test(tc, profile_region);
    tcase_add_test(tc, json_and_table);
    tcase_add_test(tc, same_device_launches_imbalance_free);
    tcase_add_test(tc, trace_file);
    tcase_add_test(tc, trace_from_environment);
    tcase_add_test(tc, taskq_counted);
    tcase_add_test(tc, pipeline_counted);
    tcase_add_test(tc, collectives_counted);
    tcase_add_test(tc, gemm_counted);
    tcase_add_test(tc, metrics_off);
    tcase_add_test(tc, writes_to_full_disk);
    tcase_add_test(tc, json_in_comma_locale);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run(suite(), SPLIT_CPUS, 2);
}

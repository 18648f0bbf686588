/*
 * What callers read of the counters (metrics.c counts): per device and per fleet, with
 * the utilization of the window since the last reset; copies between two devices; reset;
 * profile regions; the JSON export (through util's clf__sb) and the summary table; the
 * names of the transfer directions.
 */
#include "metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const dir_names[CLF_NUM_DIRECTIONS] = {"to-device", "from-device", "peer"};

const char *clf_direction_name(clf_direction d)
{
    return (unsigned)d < CLF_NUM_DIRECTIONS ? dir_names[d] : NULL;
}

/* ---- getters --------------------------------------------------------------------------- */

static clf_status check_metrics(const clf_fleet *fl, const char *fn)
{
    if (!fl)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: fleet is NULL", fn);
    if (!fl->metrics)
        return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: metrics are off (CLFLEET_METRICS=0)", fn);
    return CLF_SUCCESS;
}

static void stats(clf_transfer_stats *t, uint64_t bytes, uint64_t count, double s)
{
    t->bytes = bytes;
    t->count = count;
    t->seconds = s > 0 ? s : 0;
    t->bandwidth = s > 0 ? (double)bytes / s : 0.0;
}

static void add_stats(clf_transfer_stats *t, const clf_transfer_stats *x)
{
    stats(t, t->bytes + x->bytes, t->count + x->count, t->seconds + x->seconds);
}

static void device_metrics(const struct clf__metrics *m, size_t i, double wall,
                           clf_device_metrics *o)
{
    clf__devm *d = &m->dm[i];
    memset(o, 0, sizeof *o);
    pthread_mutex_lock(&d->lock);
    const clf__counters *c = &d->cur, *b = &d->base;
    o->device = i;
    o->kernels = c->kernels - b->kernels;
    o->busy_s = c->busy_s - b->busy_s;
    o->wall_s = wall;
    uint64_t bytes = 0;
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
        stats(&o->dir[k], c->dir_bytes[k] - b->dir_bytes[k], c->dir_count[k] - b->dir_count[k],
              c->dir_s[k] - b->dir_s[k]);
        o->transfers += o->dir[k].count;
        o->transfer_s += o->dir[k].seconds;
        bytes += o->dir[k].bytes;
    }
    for (int p = 0; p < CLF_NUM_PATHS; p++)
        stats(&o->path[p], c->path_bytes[p] - b->path_bytes[p],
              c->path_count[p] - b->path_count[p], c->path_s[p] - b->path_s[p]);
    stats(&o->peer_sent, c->sent_bytes - b->sent_bytes, c->sent_count - b->sent_count,
          c->sent_s - b->sent_s);
    o->mem_current = d->mem_now;
    o->mem_peak = d->mem_peak;
    o->allocations = c->allocs - b->allocs;
    o->wait_s = c->wait_s - b->wait_s;
    o->idle_s = c->idle_s - b->idle_s;
    o->in_last_launch = d->in_last;
    o->last_busy_s = d->last_busy_s;
    o->last_share = d->last_share;
    o->last_finish_s = d->last_finish_s;
    o->same_device_bytes = c->same_bytes - b->same_bytes;
    o->same_device_copies = c->same_count - b->same_count;
    o->mem_free = UINT64_MAX; /* the callers that know the device ask its driver */
    pthread_mutex_unlock(&d->lock);
    if (o->busy_s < 0) /* rounding of the baseline's subtraction */
        o->busy_s = 0;
    o->utilization = wall > 0 ? o->busy_s / wall : 0.0;
    o->bandwidth = o->transfer_s > 0 ? (double)bytes / o->transfer_s : 0.0;
}

/* 1 when the space-separated list has the word. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return 1;
    return 0;
}

#ifndef CL_DEVICE_GLOBAL_FREE_MEMORY_AMD
#define CL_DEVICE_GLOBAL_FREE_MEMORY_AMD 0x4039 /* size_t[2], KiB: free in all, largest block */
#endif

/* Free memory on fleet device i as its driver reports it, in bytes; UINT64_MAX when it does
 * not. Asked at each read (one clGetDeviceInfo(), outside the metrics' locks): the figure
 * moves with every program on the device, not only with clfleet's allocations. Only AMD's
 * extension reports it through OpenCL; NVIDIA's would need a CUDA context of clfleet's own
 * (cuMemGetInfo()), which clfleet holds only while CUDA-path buffers exist, and creating one
 * to read a figure would take device memory itself. */
static uint64_t free_memory(const clf_fleet *fl, size_t i)
{
    const struct clf__device *d = &fl->dev[i];
    if (!has_word(d->info.extensions, "cl_amd_device_attribute_query"))
        return UINT64_MAX;
    size_t kib[2] = {0, 0}, got = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof kib, kib, &got) !=
            CL_SUCCESS ||
        got < sizeof kib[0])
        return UINT64_MAX;
    return (uint64_t)kib[0] * 1024u;
}

static double window_s(struct clf__metrics *m)
{
    pthread_mutex_lock(&m->lock);
    uint64_t r = m->reset_ns;
    pthread_mutex_unlock(&m->lock);
    uint64_t now = clf__mono_ns();
    return now > r ? (double)(now - r) * 1e-9 : 0.0;
}

clf_status clf_metrics_device(clf_device_metrics *out, const clf_fleet *fl, size_t device)
{
    clf_status st = check_metrics(fl, "clf_metrics_device");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_device: out is NULL");
    if (device >= fl->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_metrics_device: device %zu of %zu",
                         device, fl->ndev);
    device_metrics(fl->metrics, device, window_s(fl->metrics), out);
    out->mem_free = free_memory(fl, device);
    return CLF_SUCCESS;
}

static void fleet_metrics(struct clf__metrics *m, double wall, clf_fleet_metrics *o)
{
    memset(o, 0, sizeof *o);
    o->num_devices = m->ndev;
    o->wall_s = wall;
    for (size_t i = 0; i <= m->ndev; i++) {
        clf_device_metrics d;
        device_metrics(m, i, wall, &d);
        o->kernels += d.kernels;
        o->busy_s += d.busy_s;
        for (int k = 0; k < CLF_NUM_DIRECTIONS; k++)
            add_stats(&o->dir[k], &d.dir[k]);
        for (int p = 0; p < CLF_NUM_PATHS; p++)
            add_stats(&o->path[p], &d.path[p]);
        o->mem_current += d.mem_current;
        o->same_device_bytes += d.same_device_bytes;
        o->same_device_copies += d.same_device_copies;
        o->wait_s += d.wait_s;
        o->idle_s += d.idle_s;
    }
    o->mem_peak = atomic_load(&m->mem_total_peak);
    if (o->mem_peak < o->mem_current)
        o->mem_peak = o->mem_current;
    o->utilization = wall > 0 && m->ndev ? o->busy_s / (wall * (double)m->ndev) : 0.0;
    pthread_mutex_lock(&m->lock);
    o->launches = m->launches - m->launches0;
    memcpy(o->last_kernel, m->last_kernel, sizeof o->last_kernel);
    o->last_strategy = m->last_strategy;
    o->last_num_devices = m->last_ndev;
    o->last_makespan_s = m->last_makespan;
    o->last_imbalance = m->last_imbalance;
    o->last_efficiency = m->last_efficiency;
    o->mean_imbalance = m->imb_n ? m->imb_sum / (double)m->imb_n : 0.0;
    o->max_imbalance = m->imb_max;
    pthread_mutex_unlock(&m->lock);
}

clf_status clf_metrics_fleet(clf_fleet_metrics *out, const clf_fleet *fl)
{
    clf_status st = check_metrics(fl, "clf_metrics_fleet");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_fleet: out is NULL");
    fleet_metrics(fl->metrics, window_s(fl->metrics), out);
    return CLF_SUCCESS;
}

clf_status clf_metrics_peer(clf_transfer_stats *out, const clf_fleet *fl, size_t src, size_t dst)
{
    clf_status st = check_metrics(fl, "clf_metrics_peer");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_peer: out is NULL");
    if (src >= fl->ndev || dst >= fl->ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "clf_metrics_peer: devices %zu, %zu of %zu",
                         src, dst, fl->ndev);
    clf__devm *d = &fl->metrics->dm[src];
    pthread_mutex_lock(&d->lock);
    stats(out, d->pair_bytes[dst] - d->pair_bytes0[dst], d->pair_count[dst] - d->pair_count0[dst],
          d->pair_s[dst] - d->pair_s0[dst]);
    pthread_mutex_unlock(&d->lock);
    return CLF_SUCCESS;
}

clf_status clf_metrics_reset(clf_fleet *fl)
{
    clf_status st = check_metrics(fl, "clf_metrics_reset");
    if (st != CLF_SUCCESS)
        return st;
    struct clf__metrics *m = fl->metrics;
    uint64_t total = 0;
    for (size_t i = 0; i <= m->ndev; i++) {
        clf__devm *d = &m->dm[i];
        pthread_mutex_lock(&d->lock);
        d->base = d->cur;
        d->mem_peak = d->mem_now;
        total += d->mem_now;
        d->in_last = 0;
        d->last_busy_s = d->last_share = d->last_finish_s = 0;
        if (i < m->ndev) {
            memcpy(d->pair_bytes0, d->pair_bytes, m->ndev * sizeof *d->pair_bytes);
            memcpy(d->pair_count0, d->pair_count, m->ndev * sizeof *d->pair_count);
            memcpy(d->pair_s0, d->pair_s, m->ndev * sizeof *d->pair_s);
        }
        pthread_mutex_unlock(&d->lock);
    }
    atomic_store(&m->mem_total_peak, total);
    pthread_mutex_lock(&m->lock);
    m->reset_ns = clf__mono_ns();
    m->launches0 = m->launches;
    m->last_kernel[0] = 0;
    m->last_strategy = CLF_STRATEGY_DEFAULT;
    m->last_ndev = 0;
    m->last_makespan = m->last_imbalance = m->last_efficiency = 0;
    m->imb_sum = m->imb_max = 0;
    m->imb_n = 0;
    pthread_mutex_unlock(&m->lock);
    return CLF_SUCCESS;
}

/* ---- profile regions ------------------------------------------------------------------- */

enum { P_T0, P_BUSY, P_XFER, P_WAIT, P_IDLE, P_LAUNCHES, P_KERNELS, P_XFERS, P_BYTES };

/* The fleet's cumulative counters (not reset-relative), in clf_profile.start_ order. */
static void totals(struct clf__metrics *m, double v[12])
{
    memset(v, 0, 12 * sizeof *v);
    v[P_T0] = (double)clf__mono_ns() * 1e-9;
    for (size_t i = 0; i <= m->ndev; i++) {
        clf__devm *d = &m->dm[i];
        pthread_mutex_lock(&d->lock);
        v[P_BUSY] += d->cur.busy_s;
        v[P_WAIT] += d->cur.wait_s;
        v[P_IDLE] += d->cur.idle_s;
        v[P_KERNELS] += (double)d->cur.kernels;
        for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
            v[P_XFER] += d->cur.dir_s[k];
            v[P_XFERS] += (double)d->cur.dir_count[k];
            v[P_BYTES + k] += (double)d->cur.dir_bytes[k];
        }
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_lock(&m->lock);
    v[P_LAUNCHES] = (double)m->launches;
    pthread_mutex_unlock(&m->lock);
}

clf_status clf_profile_begin(clf_fleet *fl, clf_profile *region)
{
    clf_status st = check_metrics(fl, "clf_profile_begin");
    if (st != CLF_SUCCESS)
        return st;
    if (!region)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_profile_begin: region is NULL");
    memset(region, 0, sizeof *region);
    region->fleet_ = fl;
    totals(fl->metrics, region->start_);
    return CLF_SUCCESS;
}

static double nonneg(double x)
{
    return x > 0 ? x : 0.0;
}

clf_status clf_profile_end(clf_fleet *fl, clf_profile *region)
{
    clf_status st = check_metrics(fl, "clf_profile_end");
    if (st != CLF_SUCCESS)
        return st;
    if (!region)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_profile_end: region is NULL");
    if (region->fleet_ != fl)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                         "clf_profile_end: the region was not begun on this fleet");
    double v[12];
    const double *s = region->start_;
    totals(fl->metrics, v);
    region->wall_s = nonneg(v[P_T0] - s[P_T0]);
    region->compute_s = nonneg(v[P_BUSY] - s[P_BUSY]);
    region->transfer_s = nonneg(v[P_XFER] - s[P_XFER]);
    region->wait_s = nonneg(v[P_WAIT] - s[P_WAIT]);
    region->idle_s = nonneg(v[P_IDLE] - s[P_IDLE]);
    region->sync_s = region->wait_s + region->idle_s;
    region->launches = (uint64_t)nonneg(v[P_LAUNCHES] - s[P_LAUNCHES]);
    region->kernels = (uint64_t)nonneg(v[P_KERNELS] - s[P_KERNELS]);
    region->transfers = (uint64_t)nonneg(v[P_XFERS] - s[P_XFERS]);
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++)
        region->bytes[k] = (uint64_t)nonneg(v[P_BYTES + k] - s[P_BYTES + k]);
    return CLF_SUCCESS;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_stats(clf__sb *b, const char *key, const clf_transfer_stats *t)
{
    clf__sb_printf(b,
                   "\"%s\":{\"bytes\":%llu,\"count\":%llu,\"seconds\":%.9f,"
                   "\"bandwidth_bytes_per_s\":%.1f}",
                   key, (unsigned long long)t->bytes, (unsigned long long)t->count, t->seconds,
                   t->bandwidth);
}

static void json_transfers(clf__sb *b, const clf_transfer_stats *dir,
                           const clf_transfer_stats *path, uint64_t same_bytes,
                           uint64_t same_count)
{
    clf__sb_printf(b, "\"transfers\":{");
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
        json_stats(b, dir_names[k], &dir[k]);
        clf__sb_printf(b, ",");
    }
    /* Copies within a device, which "peer" leaves out; their time is by_path's. */
    clf__sb_printf(b, "\"same-device\":{\"bytes\":%llu,\"count\":%llu},",
                   (unsigned long long)same_bytes, (unsigned long long)same_count);
    clf__sb_printf(b, "\"by_path\":{");
    for (int p = 0; p < CLF_NUM_PATHS; p++) {
        json_stats(b, clf__metrics_path_name((unsigned)p), &path[p]);
        clf__sb_printf(b, p + 1 < CLF_NUM_PATHS ? "," : "");
    }
    clf__sb_printf(b, "}}");
}

/* ,"key":[[...],...]: copies between each pair of devices, row = source, column =
 * destination; their count when count is set, else their bytes. */
static void json_peer_matrix(const clf_fleet *fl, clf__sb *b, const char *key, int count)
{
    size_t n = fl->metrics->ndev;
    clf__sb_printf(b, ",\"%s\":[", key);
    for (size_t s = 0; s < n; s++) {
        clf__sb_printf(b, "%s[", s ? "," : "");
        for (size_t t = 0; t < n; t++) {
            clf_transfer_stats x;
            clf_metrics_peer(&x, fl, s, t);
            clf__sb_printf(b, "%s%llu", t ? "," : "",
                           (unsigned long long)(count ? x.count : x.bytes));
        }
        clf__sb_printf(b, "]");
    }
    clf__sb_printf(b, "]");
}

static void build_json(const clf_fleet *fl, clf__sb *b)
{
    struct clf__metrics *m = fl->metrics;
    double wall = window_s(m);
    clf_fleet_metrics f;
    fleet_metrics(m, wall, &f);
    pthread_mutex_lock(&m->lock);
    uint64_t imb_n = m->imb_n;
    pthread_mutex_unlock(&m->lock);
    clf__sb_printf(b, "{\"clfleet_metrics\":1,\"version\":");
    clf__sb_json_string(b, clf_version_string());
    clf__sb_printf(b,
                   ",\"wall_s\":%.6f,\"num_devices\":%zu,\"launches\":%llu,\"kernels\":%llu,"
                   "\"busy_s\":%.9f,\"utilization\":%.6f,\"wait_s\":%.9f,\"idle_s\":%.9f,"
                   "\"memory\":{\"current\":%llu,\"peak\":%llu},",
                   f.wall_s, f.num_devices, (unsigned long long)f.launches,
                   (unsigned long long)f.kernels, f.busy_s, f.utilization, f.wait_s, f.idle_s,
                   (unsigned long long)f.mem_current, (unsigned long long)f.mem_peak);
    json_transfers(b, f.dir, f.path, f.same_device_bytes, f.same_device_copies);
    /* Not only the last launch: what the window's multi-device launches looked like. */
    clf__sb_printf(b,
                   ",\"imbalance\":{\"of\":\"clf_launch runs on two or more devices in the "
                   "window\",\"launches\":%llu,\"mean\":%.6f,\"max\":%.6f}",
                   (unsigned long long)imb_n, f.mean_imbalance, f.max_imbalance);
    clf__sb_printf(b, ",\"last_launch\":");
    if (f.last_kernel[0] || f.last_num_devices) {
        clf__sb_printf(b, "{\"kernel\":");
        clf__sb_json_string(b, f.last_kernel);
        clf__sb_printf(b, ",\"strategy\":");
        clf__sb_json_string(b, clf_strategy_name(f.last_strategy));
        clf__sb_printf(b,
                       ",\"num_devices\":%zu,\"makespan_s\":%.9f,\"imbalance\":%.6f,"
                       "\"efficiency\":%.6f}",
                       f.last_num_devices, f.last_makespan_s, f.last_imbalance,
                       f.last_efficiency);
    } else {
        clf__sb_printf(b, "null");
    }
    clf__sb_printf(b, ",\"trace\":");
    if (m->trace_path)
        clf__sb_json_string(b, m->trace_path);
    else
        clf__sb_printf(b, "null");
    clf__sb_printf(b, ",\"devices\":[");
    for (size_t i = 0; i < m->ndev; i++) {
        clf_device_metrics d;
        device_metrics(m, i, wall, &d);
        d.mem_free = free_memory(fl, i);
        clf__sb_printf(b, "%s{\"device\":%zu,\"name\":", i ? "," : "", i);
        clf__sb_json_string(b, fl->dev[i].info.name);
        clf__sb_printf(b,
                       ",\"kernels\":%llu,\"busy_s\":%.9f,\"utilization\":%.6f,"
                       "\"transfer_count\":%llu,\"transfer_s\":%.9f,"
                       "\"bandwidth_bytes_per_s\":%.1f,",
                       (unsigned long long)d.kernels, d.busy_s, d.utilization,
                       (unsigned long long)d.transfers, d.transfer_s, d.bandwidth);
        json_transfers(b, d.dir, d.path, d.same_device_bytes, d.same_device_copies);
        clf__sb_printf(b, ",");
        json_stats(b, "peer_sent", &d.peer_sent);
        clf__sb_printf(b,
                       ",\"memory\":{\"current\":%llu,\"peak\":%llu,\"allocations\":%llu,"
                       "\"free\":",
                       (unsigned long long)d.mem_current, (unsigned long long)d.mem_peak,
                       (unsigned long long)d.allocations);
        if (d.mem_free == UINT64_MAX) /* the driver does not say */
            clf__sb_printf(b, "null");
        else
            clf__sb_printf(b, "%llu", (unsigned long long)d.mem_free);
        clf__sb_printf(b, "},\"wait_s\":%.9f,\"idle_s\":%.9f,\"last_launch\":", d.wait_s,
                       d.idle_s);
        if (d.in_last_launch)
            clf__sb_printf(b, "{\"busy_s\":%.9f,\"share\":%.6f,\"finish_s\":%.9f}",
                           d.last_busy_s, d.last_share, d.last_finish_s);
        else
            clf__sb_printf(b, "null");
        clf__sb_printf(b, "}");
    }
    clf__sb_printf(b, "]");
    json_peer_matrix(fl, b, "peer_bytes", 0);
    json_peer_matrix(fl, b, "peer_count", 1);
    clf__sb_printf(b, "}");
}

clf_status clf_metrics_json(char **out, const clf_fleet *fl)
{
    if (out)
        *out = NULL;
    clf_status st = check_metrics(fl, "clf_metrics_json");
    if (st != CLF_SUCCESS)
        return st;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_json: out is NULL");
    clf__sb b = {0};
    build_json(fl, &b);
    if (b.oom) {
        free(b.s);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_metrics_json: out of memory");
    }
    *out = b.s;
    return CLF_SUCCESS;
}

clf_status clf_metrics_write_json(const clf_fleet *fl, FILE *fp)
{
    if (!fp)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_write_json: fp is NULL");
    char *s;
    clf_status st = clf_metrics_json(&s, fl);
    if (st != CLF_SUCCESS)
        return st;
    /* The flush too: a full disk shows only when the stream's buffer goes out. */
    errno = 0;
    int bad = fputs(s, fp) == EOF || fputc('\n', fp) == EOF || fflush(fp) != 0;
    int err = errno;
    free(s);
    return bad ? clf__stream_fail(fp, err, "clf_metrics_write_json") : CLF_SUCCESS;
}

void clf_free(void *p)
{
    free(p);
}

/* ---- the table ------------------------------------------------------------------------- */

#define MB(x) ((double)(x) / 1048576.0)

static void print_row(FILE *fp, const char *dev, const char *name, const clf_device_metrics *d)
{
    fprintf(
        fp,
        "%-5s %-22.22s %8llu %9.4f %6.1f %10.2f %11.2f %9.2f %7llu %8.2f %9.2f %9.2f %8.4f %8.4f\n",
        dev, name, (unsigned long long)d->kernels, d->busy_s, 100.0 * d->utilization,
        MB(d->dir[CLF_DIRECTION_TO_DEVICE].bytes), MB(d->dir[CLF_DIRECTION_FROM_DEVICE].bytes),
        MB(d->dir[CLF_DIRECTION_PEER].bytes), (unsigned long long)d->transfers, d->bandwidth * 1e-9,
        MB(d->mem_current), MB(d->mem_peak), d->wait_s, d->idle_s);
}

clf_status clf_metrics_print(const clf_fleet *fl, FILE *fp)
{
    clf_status st = check_metrics(fl, "clf_metrics_print");
    if (st != CLF_SUCCESS)
        return st;
    if (!fp)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_metrics_print: fp is NULL");
    struct clf__metrics *m = fl->metrics;
    double wall = window_s(m);
    clf_fleet_metrics f;
    fleet_metrics(m, wall, &f);
    fprintf(fp, "clfleet metrics: %zu device(s), %.3f s window, %llu launch(es), "
                "utilization %.1f%%\n",
            f.num_devices, f.wall_s, (unsigned long long)f.launches, 100.0 * f.utilization);
    fprintf(fp, "%-5s %-22s %8s %9s %6s %10s %11s %9s %7s %8s %9s %9s %8s %8s\n", "dev", "name",
            "kernels", "busy s", "util%", "to dev MB", "from dev MB", "peer MB", "xfers",
            "GB/s", "mem MB", "peak MB", "wait s", "idle s");
    for (size_t i = 0; i < m->ndev; i++) {
        clf_device_metrics d;
        char id[24];
        device_metrics(m, i, wall, &d);
        snprintf(id, sizeof id, "%zu", i);
        print_row(fp, id, fl->dev[i].info.name, &d);
    }
    clf_device_metrics t;
    memset(&t, 0, sizeof t);
    t.kernels = f.kernels;
    t.busy_s = f.busy_s;
    t.utilization = f.utilization;
    double ts = 0;
    uint64_t tb = 0;
    for (int k = 0; k < CLF_NUM_DIRECTIONS; k++) {
        t.dir[k] = f.dir[k];
        t.transfers += f.dir[k].count;
        ts += f.dir[k].seconds;
        tb += f.dir[k].bytes;
    }
    t.bandwidth = ts > 0 ? (double)tb / ts : 0;
    t.mem_current = f.mem_current;
    t.mem_peak = f.mem_peak;
    t.wait_s = f.wait_s;
    t.idle_s = f.idle_s;
    print_row(fp, "all", "", &t);
    for (size_t i = 0; i < m->ndev; i++) {
        uint64_t fr = free_memory(fl, i);
        if (fr != UINT64_MAX)
            fprintf(fp, "device %zu: %.2f MB free (its driver's figure)\n", i, MB(fr));
    }
    if (f.same_device_copies)
        fprintf(fp, "copies within a device (not in peer MB): %llu, %.2f MB\n",
                (unsigned long long)f.same_device_copies, MB(f.same_device_bytes));
    for (int p = 0; p < CLF_NUM_PATHS; p++)
        if (f.path[p].count)
            fprintf(fp, "copies by %s: %llu, %.2f MB, %.2f GB/s\n",
                    clf__metrics_path_name((unsigned)p), (unsigned long long)f.path[p].count,
                    MB(f.path[p].bytes), f.path[p].bandwidth * 1e-9);
    if (f.last_num_devices)
        fprintf(fp,
                "last launch '%s' (%s) on %zu device(s): makespan %.4f s, imbalance %.1f%%, "
                "efficiency %.1f%%\n",
                f.last_kernel, clf_strategy_name(f.last_strategy), f.last_num_devices,
                f.last_makespan_s, 100.0 * f.last_imbalance, 100.0 * f.last_efficiency);
    if (f.max_imbalance > 0)
        fprintf(fp, "imbalance of the multi-device launches: mean %.1f%%, max %.1f%%\n",
                100.0 * f.mean_imbalance, 100.0 * f.max_imbalance);
    if (m->trace_path)
        fprintf(fp, "trace: %s\n", m->trace_path);
    for (size_t i = 0; i < m->ndev; i++) {
        char why[256];
        if (clf_device_failure(why, sizeof why, fl, i) == CLF_SUCCESS && why[0])
            fprintf(fp, "device %zu failed, left out of launches until clf_device_readmit(): %s\n",
                    i, why);
    }
    /* A failed fprintf() above leaves the error flag set; the flush finds a full disk. */
    errno = 0;
    if (fflush(fp) != 0 || ferror(fp))
        return clf__stream_fail(fp, errno, "clf_metrics_print");
    return CLF_SUCCESS;
}

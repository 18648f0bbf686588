/*
 * How a launch is cut: the devices' memory budgets and the largest chunk each can hold, the
 * weights (user, equal, learned throughput or compute units x clock), the partition strategy
 * (AUTO's choice, the too-small rule), and what launches teach: the throughput model's
 * records and, per kernel, each strategy's efficiency and the kernel time per unit.
 */
#include "exec.h"
#include "plan/workprof.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- memory budgets ---------------------------------------------------------------- */

void clf__launch_footprint(const clf__launch *L, uint64_t *fixed, uint64_t *per_unit,
                           uint64_t *halo_units)
{
    *fixed = *per_unit = *halo_units = 0;
    for (size_t i = 0; i < L->nargs; i++) {
        const clf_arg *a = &L->args[i];
        if (clf__arg_partitioned(a) && (a->flags & CLF_ARG_CHUNK_INDEXED)) {
            *per_unit += 2 * (uint64_t)a->unit; /* two slots: double buffering */
            *halo_units += 2 * (uint64_t)(a->halo_before + a->halo_after) * a->unit;
        } else if (clf__arg_partitioned(a)) {
            *fixed += L->lay[i].bytes; /* the whole array, strided or per group too */
        } else if (a->kind == CLF_ARG_KIND_BROADCAST) {
            *fixed += a->size;
        } else if (a->kind == CLF_ARG_KIND_REDUCE) {
            *fixed += (uint64_t)a->size * clf_type_size((clf_type)a->type);
        }
    }
}

/* A plane's budgets: the largest chunk each device can hold is the plane's business. */
static clf_status plane_budgets(clf__launch *L, uint64_t *max_units)
{
    double safety = L->desc.mem_safety > 0 ? L->desc.mem_safety : 0.8;
    int any = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        const clf_device_info *in = &L->fl->dev[L->dev[i]].info;
        uint64_t b = (uint64_t)((double)in->global_mem * safety);
        if (L->desc.mem_limits && L->desc.mem_limits[i] && L->desc.mem_limits[i] < b)
            b = L->desc.mem_limits[i];
        L->w[i].budget = b;
        max_units[i] = L->w[i].max_units = L->excluded[i] ? 0 : L->plane->max_units(L, in, b);
        any |= max_units[i] >= (L->gran < L->total ? L->gran : L->total);
    }
    if (!any)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "'%s': no device can hold one chunk: %s; budget of device %zu: %llu "
                         "bytes, largest allocation %llu",
                         L->desc.kernel, L->need ? L->need : "?", L->dev[0],
                         (unsigned long long)L->w[0].budget,
                         (unsigned long long)L->fl->dev[L->dev[0]].info.max_alloc);
    return CLF_SUCCESS;
}

/* Budget and the largest chunk each device can hold; fails when no device can hold any. */
clf_status clf__budgets(clf__launch *L, uint64_t *max_units)
{
    uint64_t fixed, per_unit, halo;
    if (L->plane->max_units)
        return plane_budgets(L, max_units);
    clf__launch_footprint(L, &fixed, &per_unit, &halo);
    double safety = L->desc.mem_safety > 0 ? L->desc.mem_safety : 0.8;
    int any = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        const clf_device_info *in = &L->fl->dev[L->dev[i]].info;
        if (L->excluded[i]) { /* takes no work */
            L->w[i].budget = 0;
            max_units[i] = L->w[i].max_units = 0;
            continue;
        }
        uint64_t b = (uint64_t)((double)in->global_mem * safety);
        if (L->desc.mem_limits && L->desc.mem_limits[i] && L->desc.mem_limits[i] < b)
            b = L->desc.mem_limits[i];
        L->w[i].budget = b;
        uint64_t m = 0;
        int fits = fixed + halo <= b;
        for (size_t a = 0; a < L->nargs && fits; a++) /* each global-indexed buffer */
            if (clf__arg_partitioned(&L->args[a]) && !(L->args[a].flags & CLF_ARG_CHUNK_INDEXED))
                fits = L->lay[a].bytes <= in->max_alloc;
        if (fits)
            m = per_unit ? (b - fixed - halo) / per_unit : UINT64_MAX;
        /* One slot of a chunk-indexed argument must also fit one allocation. */
        for (size_t a = 0; a < L->nargs && m; a++) {
            const clf_arg *x = &L->args[a];
            if (clf__arg_partitioned(x) && (x->flags & CLF_ARG_CHUNK_INDEXED)) {
                uint64_t cap = in->max_alloc / x->unit;
                uint64_t h = x->halo_before + x->halo_after;
                m = cap <= h ? 0 : (cap - h < m ? cap - h : m);
            }
        }
        max_units[i] = m;
        L->w[i].max_units = m;
        any |= m >= (L->gran < L->total ? L->gran : L->total);
    }
    if (!any)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "'%s': no device can hold one chunk: %llu bytes are needed on every "
                         "device (global-indexed arrays, broadcasts, reductions) plus %llu "
                         "per unit; device budget %llu (make large arrays chunk-indexed to "
                         "stream them)",
                         L->desc.kernel, (unsigned long long)(fixed + halo),
                         (unsigned long long)per_unit, (unsigned long long)L->w[0].budget);
    return CLF_SUCCESS;
}

/* ---- weights and strategy ------------------------------------------------------------- */

static void kernel_key(const clf__launch *L, char *buf, size_t n)
{
    if (L->key)
        snprintf(buf, n, "%s", L->key);
    else
        snprintf(buf, n, "%s@%.16s", L->desc.kernel, L->prog->hash);
}

/* Weights for STATIC, GUIDED and MEMORY_AWARE; returns 1 when learned for every device. */
static int choose_weights(clf__launch *L, char *reason, size_t n)
{
    const clf_launch_desc *d = &L->desc;
    if (d->weights_mode == CLF_WEIGHTS_USER) {
        memcpy(L->weights, d->weights, L->ndev * sizeof *L->weights);
        snprintf(reason, n, "user weights");
        return 0;
    }
    for (size_t i = 0; i < L->ndev; i++)
        L->weights[i] = 1.0;
    if (d->weights_mode == CLF_WEIGHTS_EQUAL) {
        snprintf(reason, n, "equal weights");
        return 0;
    }
    char kkey[300], dkeys[CLF_MAX_LAUNCH_DEVICES][400];
    const char *dk[CLF_MAX_LAUNCH_DEVICES];
    double learned[CLF_MAX_LAUNCH_DEVICES];
    kernel_key(L, kkey, sizeof kkey);
    for (size_t i = 0; i < L->ndev; i++) {
        clf__perf_device_key(L->fl, L->dev[i], dkeys[i], sizeof dkeys[i]);
        dk[i] = dkeys[i];
    }
    clf__perf_model *m = clf__fleet_perf(L->fl);
    /* The chunk lines, for the too-small rule and the partitioner's stand-aside rule. */
    L->fitted = m != NULL;
    for (size_t i = 0; i < L->ndev && L->fitted; i++) {
        clf__perf_fit f;
        L->fitted = clf__perf_get(m, kkey, dk[i], &f) && f.rate > 0 && f.fixed_s >= 0;
        /* In the range's units: a plane learns its work per unit (the GEMM's MFLOP per row
         * of C, clf__learn()), while the partitioner and the rules below time units. */
        L->fit_rate[i] = L->fitted ? L->learn_scale > 0 ? f.rate / L->learn_scale : f.rate : 0;
        L->fit_fixed[i] = L->fitted ? f.fixed_s : 0;
    }
    L->learning_line = m != NULL && !L->fitted;
    if (m && clf__perf_weights(m, kkey, L->ndev, dk, learned) == L->ndev) {
        memcpy(L->weights, learned, L->ndev * sizeof *learned);
        snprintf(reason, n, "learned weights");
        return 1;
    }
    /* Until measured: compute units x clock, a fair guess for devices of one kind. */
    for (size_t i = 0; i < L->ndev; i++)
        L->weights[i] = clf__perf_guess_speed(&L->fl->dev[L->dev[i]].info);
    snprintf(reason, n, "weights from compute units x clock (not learned yet)");
    return 0;
}

int clf__device_weights(clf_fleet *fl, const char *kernel, const size_t *dev, size_t ndev,
                        double *w)
{
    clf__perf_model *m = kernel ? clf__fleet_perf(fl) : NULL;
    const char **dk = m ? calloc(ndev, sizeof *dk) : NULL;
    char(*keys)[400] = dk ? calloc(ndev, sizeof *keys) : NULL;
    int learned = 0;
    if (keys) {
        for (size_t i = 0; i < ndev; i++) {
            clf__perf_device_key(fl, dev[i], keys[i], sizeof keys[i]);
            dk[i] = keys[i];
        }
        learned = clf__perf_weights_named(m, kernel, ndev, dk, w) == ndev;
    }
    free(keys);
    free(dk);
    if (!learned)
        for (size_t i = 0; i < ndev; i++)
            w[i] = clf__perf_guess_speed(&fl->dev[dev[i]].info);
    return learned;
}

/* The kernel's entry in the fleet's ring of what launches taught (under X->lock), created
 * when asked (the oldest kernel's place is taken), or NULL. */
static struct clf__kernel_seen *kernel_entry(clf__launch *L, int create)
{
    char key[96];
    kernel_key(L, key, sizeof key);
    clf__exec_state *fl = L->X;
    size_t n = fl->nstatic_eff < CLF__ARRAY_LEN(fl->static_eff) ? fl->nstatic_eff
                                                               : CLF__ARRAY_LEN(fl->static_eff);
    size_t i = 0;
    while (i < n && strcmp(fl->static_eff[i].key, key) != 0)
        i++;
    if (i < n)
        return &fl->static_eff[i];
    if (!create)
        return NULL;
    i = fl->nstatic_eff++ % CLF__ARRAY_LEN(fl->static_eff);
    snprintf(fl->static_eff[i].key, sizeof fl->static_eff[i].key, "%s", key);
    for (size_t k = 0; k < CLF__ARRAY_LEN(fl->static_eff[i].seen); k++)
        fl->static_eff[i].seen[k][CLF__SEEN_EFFICIENCY] = fl->static_eff[i].seen[k][CLF__SEEN_UNIT_S] = -1;
    fl->static_eff[i].unit_s = -1;
    return &fl->static_eff[i];
}

/* What the kernel's last launch under partition strategy ps reached on this fleet (what:
 * CLF__SEEN_EFFICIENCY or CLF__SEEN_UNIT_S; set: record value), or -1 when none did. */
double clf__strategy_seen(clf__launch *L, clf__part_strategy ps, int what, int set, double value)
{
    double e = -1;
    pthread_mutex_lock(&L->X->lock);
    struct clf__kernel_seen *k = kernel_entry(L, set);
    if (k && set)
        k->seen[ps][what] = value;
    else if (k)
        e = k->seen[ps][what];
    pthread_mutex_unlock(&L->X->lock);
    return e;
}

/* Kernel seconds per unit, over all the devices of the kernel's last launch (set: record
 * value), or -1. */
double clf__kernel_unit_s(clf__launch *L, int set, double value)
{
    double t = -1;
    pthread_mutex_lock(&L->X->lock);
    struct clf__kernel_seen *k = kernel_entry(L, set);
    if (k && set)
        k->unit_s = value;
    else if (k)
        t = k->unit_s;
    pthread_mutex_unlock(&L->X->lock);
    return t;
}

/*
 * Whether AUTO should leave strategy ps (static or guided, by what it knows) for dynamic on this
 * kernel. Once both have run: by makespan per unit, never by efficiency (on unequal devices a
 * slow device's small share ends early, so static "balanced" a GPU + CPU Mandelbrot to 0.12
 * while its makespan was a third of dynamic's: issue 27). Before dynamic has run, it is tried
 * once when ps balanced below 0.9: throughput per unit may not be uniform over the range, and
 * shares by speed cannot balance that, chunks pulled on demand can. Writes the figures behind
 * it to why.
 */
static int worse_than_dynamic(clf__launch *L, clf__part_strategy ps, char *why, size_t n)
{
    double e = clf__strategy_seen(L, ps, CLF__SEEN_EFFICIENCY, 0, 0),
           t = clf__strategy_seen(L, ps, CLF__SEEN_UNIT_S, 0, 0),
           dyn_t = clf__strategy_seen(L, CLF__PART_DYNAMIC, CLF__SEEN_UNIT_S, 0, 0);
    if (e < 0)
        return 0;
    if (t > 0 && dyn_t > 0) {
        /* A margin: two runs of one balancing differ by a few percent on a loaded host, and
         * static's one chunk per device is the cheapest where it balances. */
        snprintf(why, n, "makespan per unit: %s %.3g ns, dynamic %.3g ns",
                 clf__part_strategy_name(ps), t * 1e9, dyn_t * 1e9);
        return t > dyn_t * 1.05;
    }
    if (e < 0.9) {
        snprintf(why, n, "%s balanced this kernel to efficiency %.2f; trying dynamic",
                 clf__part_strategy_name(ps), e);
        return 1;
    }
    return 0;
}

/*
 * A launch too small to split (AUTO): cutting it adds a chunk's cost on every device (tens of
 * microseconds on PoCL: a thread, buffers, an enqueue and a wait each) and saves at most a
 * share of a kernel that is as short. "Too small": the kernel time per unit its last launch
 * measured (profiling, over all its devices) predicts under CLF__SMALL_LAUNCH_S; before any
 * launch of it, at most CLF__SMALL_LAUNCH_ITEMS work-items. (The throughput model's figures
 * include each launch's overheads, so they would call every small launch long.) Returns the
 * device to run it on alone: the fastest by learned throughput when every device's is known,
 * else the one of most compute units x clock (the first of equals), among those whose budget
 * holds the whole range; or L->ndev to split it. Once the cost model has a chunk line for
 * every device, it picks the device, and runs a launch alone also when it predicts that
 * faster than splitting (alone_by_model()). why says which figures decided.
 */
#define CLF__SMALL_LAUNCH_S 100e-6
#define CLF__SMALL_LAUNCH_ITEMS 8192

/*
 * The cost model's answer (L->fitted: a chunk line for every device). *one: the device
 * predicted to finish the launch first alone (fixed + total / rate) among those whose budget
 * holds the range, or L->ndev when fewer than two can. Returns 1 when that device alone
 * is predicted no later than the launch split over the fleet by speed: total / sum(rates)
 * + the largest fixed cost (each share by speed takes total / sum(rates), after its
 * device's fixed cost). On equal devices that never holds (the model has no term for what
 * splitting itself costs): the kernel-time rule below decides for them; it catches a
 * device whose fixed cost outlasts what it would save (a CPU next to a GPU).
 */
static int alone_by_model(clf__launch *L, const uint64_t *max_units, size_t *one, char *why,
                          size_t n)
{
    size_t best = L->ndev, usable = 0;
    double rsum = 0, fmax = 0, best_t = 0;
    *one = L->ndev;
    if (!L->fitted)
        return 0;
    for (size_t i = 0; i < L->ndev; i++) {
        if (L->excluded[i])
            continue;
        rsum += L->fit_rate[i];
        fmax = L->fit_fixed[i] > fmax ? L->fit_fixed[i] : fmax;
        if (max_units[i] < L->total)
            continue;
        usable++;
        double t = L->fit_fixed[i] + (double)L->total / L->fit_rate[i];
        if (best == L->ndev || t < best_t) {
            best = i;
            best_t = t;
        }
    }
    if (usable < 2 || !(rsum > 0))
        return 0; /* nothing to choose, or memory-aware's business */
    *one = best;
    double split_t = (double)L->total / rsum + fmax;
    if (best_t > split_t)
        return 0;
    snprintf(why, n, "predicted %.1f us on it alone, %.1f us split", best_t * 1e6, split_t * 1e6);
    return 1;
}

static size_t too_small(clf__launch *L, const uint64_t *max_units, char *why, size_t n)
{
    size_t best = L->ndev, usable = 0, by_model;
    if (alone_by_model(L, max_units, &by_model, why, n))
        return by_model;
    if (!L->prog)
        return L->ndev; /* a plane's work (GEMM): the model alone decides */
    double unit_s = clf__kernel_unit_s(L, 0, 0);
    uint64_t items;
    if (__builtin_mul_overflow(L->total, L->per_unit, &items))
        return L->ndev;
    if (unit_s >= 0 && !((double)L->total * unit_s < CLF__SMALL_LAUNCH_S))
        return L->ndev;
    if (unit_s < 0 && items > CLF__SMALL_LAUNCH_ITEMS)
        return L->ndev;
    /* L->weights: learned throughputs when known for every device, else compute units x
     * clock (choose_weights()); the model's pick, when it has one, predicts fixed costs too. */
    for (size_t i = 0; i < L->ndev; i++) {
        if (L->excluded[i] || max_units[i] < L->total)
            continue;
        usable++;
        if (best == L->ndev || L->weights[i] > L->weights[best])
            best = i;
    }
    if (usable < 2)
        return L->ndev; /* nothing to choose, or memory-aware's business */
    if (by_model < L->ndev)
        best = by_model;
    if (unit_s >= 0)
        snprintf(why, n, "its kernel ran %.1f us, under %.0f us", (double)L->total * unit_s * 1e6,
                 CLF__SMALL_LAUNCH_S * 1e6);
    else
        snprintf(why, n, "%llu work-items, at most %d before a launch of it is measured",
                 (unsigned long long)items, CLF__SMALL_LAUNCH_ITEMS);
    return best;
}

/*
 * STATIC leaves out a device whose share by speed is under CLF__STATIC_MIN_SHARE (not the
 * fastest; user weights are the user's): it could shorten the launch by at most that share,
 * while its fixed share makes it the last to finish as soon as its measured speed is a little
 * high (a CPU next to a GPU 50x faster: 2.6 % of the work for a 2 % speed made the launch
 * 1.3x the GPU alone). Said in the reason.
 */
#define CLF__STATIC_MIN_SHARE 0.05

/*
 * STATIC also leaves out, once the cost model has a chunk line for every device (L->fitted),
 * a device whose share would be under one granule were the range cut so that every device
 * finishes together after its fixed cost (c_i = r_i (T - f_i), T = (total + sum f_j r_j) /
 * sum r_j, the rule the partitioner applies to the pool, lib/plan/partition.c): it would
 * finish even its smallest share after the others had done everything. Learned throughputs
 * alone (whole launches, fixed costs included) put a 50x slower device's GEMM share at 4 to
 * 9 %, around the 5 % above.
 */
static void drop_slow_by_model(clf__launch *L, clf_launch_report *rep)
{
    unsigned char in[CLF_MAX_LAUNCH_DEVICES];
    size_t fastest = L->ndev;
    if (!L->fitted)
        return;
    for (size_t i = 0; i < L->ndev; i++) {
        in[i] = L->weights[i] > 0;
        if (in[i] && (fastest == L->ndev || L->fit_rate[i] > L->fit_rate[fastest]))
            fastest = i;
    }
    if (fastest == L->ndev)
        return;
    long double lT = clf__part_finish_together(L->ndev, L->fit_rate, L->fit_fixed, in, fastest,
                                               (long double)L->total);
    if (isnan(lT))
        return;
    double T = (double)lT;
    double least = (double)(L->total < L->gran ? L->total : L->gran);
    char list[64] = "";
    size_t n = 0, at = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        double c = L->fit_rate[i] * (T - L->fit_fixed[i]);
        if (L->weights[i] <= 0 || i == fastest || (in[i] && c >= least))
            continue;
        L->weights[i] = 0;
        if (at < sizeof list)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%zu", n ? ", " : "",
                                   L->dev[i]);
        n++;
    }
    /* One short clause: the reason has 256 bytes, and the GEMM's split comes after it. */
    if (n) {
        size_t len = strlen(rep->reason);
        snprintf(rep->reason + len, sizeof rep->reason - len,
                 "; device%s %s left out (too slow to help, by the cost model)", n > 1 ? "s" : "",
                 list);
    }
}

static void drop_minor(clf__launch *L, clf_launch_report *rep)
{
    drop_slow_by_model(L, rep);
    double wsum = 0, wmax = 0;
    for (size_t i = 0; i < L->ndev; i++) {
        wsum += L->weights[i];
        wmax = L->weights[i] > wmax ? L->weights[i] : wmax;
    }
    if (!(wsum > 0))
        return;
    for (size_t i = 0; i < L->ndev; i++) {
        double share = L->weights[i] / wsum;
        if (L->weights[i] <= 0 || L->weights[i] == wmax || share >= CLF__STATIC_MIN_SHARE)
            continue;
        L->weights[i] = 0;
        size_t len = strlen(rep->reason);
        snprintf(rep->reason + len, sizeof rep->reason - len,
                 "; device %zu left out (its share by speed, %.1f %%, is under %.0f %%)",
                 L->dev[i], share * 100, CLF__STATIC_MIN_SHARE * 100);
    }
}

/* The work profile's key: the kernel, the range's units and the devices (their model keys,
 * hashed: FNV-1a), in launch order. 0 when the launch is not profiled: a plane's work (a
 * GEMM's, whose units are uniform and whose chunks cost a clBLAST call each) or a short
 * range. */
static int profile_key(const clf__launch *L, char *buf, size_t n)
{
    char kkey[300], dkey[400];
    uint64_t h = 1469598103934665603ull;
    if (L->key || !L->prog || L->learn_scale > 0 || L->total < 2 * CLF__WPROF_BINS)
        return 0;
    kernel_key(L, kkey, sizeof kkey);
    for (size_t i = 0; i < L->ndev; i++) {
        clf__perf_device_key(L->fl, L->dev[i], dkey, sizeof dkey);
        for (const char *c = dkey; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h = (h ^ 0xffu) * 1099511628211ull; /* a separator between keys */
    }
    snprintf(buf, n, "%s\t%llu\t%zu\t%016llx", kkey, (unsigned long long)L->total, L->ndev,
             (unsigned long long)h);
    return 1;
}

/*
 * STATIC on two or more devices by learned speeds: each share is handed out in pieces about
 * a profile bin long, whose kernel times clf__learn() folds into the kernel's work profile,
 * and once the profile knows the range, the shares are cut by it so that every device's
 * predicted time is the same (workprof.h): shares by speed left the heavy middle of a
 * Mandelbrot on the fast device of a 2:1 pair, 1.22x slower than that device alone (issue 27).
 * Not with the user's or equal weights (they say how to share), nor for a launch run alone.
 */
static void static_profile(clf__launch *L, const uint64_t *max_units, clf_launch_report *rep)
{
    char key[400];
    double speed[CLF_MAX_LAUNCH_DEVICES];
    size_t used = 0;
    unsigned launches = 0;
    L->has_cuts = 0;
    L->static_pieces = 0;
    if (L->small || L->desc.weights_mode == CLF_WEIGHTS_USER ||
        L->desc.weights_mode == CLF_WEIGHTS_EQUAL || !profile_key(L, key, sizeof key))
        return;
    uint64_t need = L->total < L->gran ? L->total : L->gran;
    for (size_t i = 0; i < L->ndev; i++) {
        /* A device that cannot hold a chunk gets no share (partition.c: not eligible). */
        speed[i] = max_units[i] >= need && L->weights[i] > 0 ? L->weights[i] : 0;
        used += speed[i] > 0;
    }
    clf__wprof_table *t = clf__perf_profiles(clf__fleet_perf(L->fl));
    /* A probe launch (one device left with a share) is cut in pieces too: the probe's
     * verdict weighs its units by the profile around them (probe.c). */
    if ((used < 2 && !L->probe_units) || !t)
        return;
    /* Pieces of at least CLF__WPROF_PIECE_S of kernel time each (by the kernel time per unit
     * its last launch measured): a piece costs an enqueue and a wait (tens of microseconds on
     * PoCL), and a shorter one measures that more than the work. Too few to place the work
     * (or a kernel not measured yet): one chunk per share, as without a profile. */
    double unit_s = clf__kernel_unit_s(L, 0, 0);
    double pieces = unit_s > 0 ? (double)L->total * unit_s / (double)used / CLF__WPROF_PIECE_S : 0;
    if (pieces >= 4) {
        L->static_pieces = pieces < CLF__WPROF_PIECES ? (unsigned)pieces : CLF__WPROF_PIECES;
        L->piece_min = clf__wprof_bin_units(L->total);
    }
    if (used >= 2 && clf__wprof_table_cut(t, key, L->total, L->ndev, L->gran, speed,
                                          L->share_ends, &launches))
        L->has_cuts = 1;
    /* Short: the reason has 256 bytes, and AUTO's figures come first. */
    size_t len = strlen(rep->reason);
    const char *in_pieces = L->static_pieces ? ", in pieces" : "";
    if (L->has_cuts)
        snprintf(rep->reason + len, sizeof rep->reason - len,
                 "; cut by the work profile (%u launches)%s", launches, in_pieces);
    else if (L->static_pieces)
        snprintf(rep->reason + len, sizeof rep->reason - len, "; in pieces (work profile)");
}

clf_status clf__choose_strategy(clf__launch *L, const uint64_t *max_units,
                                clf_launch_report *rep)
{
    clf_strategy s = L->desc.strategy;
    if (s == CLF_STRATEGY_DEFAULT)
        s = L->fl->strategy; /* $CLFLEET_STRATEGY, parsed by clf_fleet_create() */
    if ((unsigned)s > CLF_STRATEGY_AUTO)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "unknown strategy %d", (int)s);
    rep->requested = s;
    char wreason[100];
    int learned = choose_weights(L, wreason, sizeof wreason);
    L->guessed = !learned && L->desc.weights_mode == CLF_WEIGHTS_LEARNED;
    for (size_t i = 0; i < L->ndev; i++)
        if (L->excluded[i])
            L->weights[i] = 0;
    if (s == CLF_STRATEGY_AUTO) {
        double wsum = 0;
        int tight = 0;
        char why[128];
        size_t one;
        for (size_t i = 0; i < L->ndev; i++)
            wsum += L->weights[i];
        for (size_t i = 0; i < L->ndev; i++)
            tight |= (double)max_units[i] < (double)L->total * L->weights[i] / wsum;
        if (tight) {
            s = CLF_STRATEGY_MEMORY_AWARE;
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: memory-aware (a device's share exceeds its memory budget); %s",
                     wreason);
        } else if (L->ndev > 1 && (L->prog || L->learn_scale > 0) &&
                   (one = too_small(L, max_units, why, sizeof why)) < L->ndev) {
            /* One chunk on one device; the others stand by in case it fails
             * (clf__exec_run()). */
            s = CLF_STRATEGY_STATIC;
            L->small = 1;
            for (size_t i = 0; i < L->ndev; i++) {
                L->weights[i] = i == one;
                L->held[i] = i != one && !L->excluded[i];
            }
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: static on device %zu alone (too small to split: %s)", L->dev[one],
                     why);
        } else if (why[0] = '\0',
                   worse_than_dynamic(L, learned ? CLF__PART_STATIC : CLF__PART_GUIDED, why,
                                      sizeof why)) {
            s = CLF_STRATEGY_DYNAMIC;
            snprintf(rep->reason, sizeof rep->reason, "auto: dynamic (%s); %s", why, wreason);
        } else if (learned) {
            s = CLF_STRATEGY_STATIC;
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: static (throughput learned for every device%s%s); %s",
                     why[0] ? "; " : "", why, wreason);
        } else {
            s = CLF_STRATEGY_GUIDED;
            snprintf(rep->reason, sizeof rep->reason,
                     "auto: guided (throughput not learned yet%s%s); %s", why[0] ? "; " : "",
                     why, wreason);
        }
    } else {
        snprintf(rep->reason, sizeof rep->reason, "%s; %s", clf_strategy_name(s), wreason);
    }
    if (s == CLF_STRATEGY_STATIC && L->desc.weights_mode != CLF_WEIGHTS_USER && !L->small)
        drop_minor(L, rep);
    char kkey[300];
    kernel_key(L, kkey, sizeof kkey);
    clf__plan_probe(L, s, kkey, max_units, rep);
    if (s == CLF_STRATEGY_STATIC)
        static_profile(L, max_units, rep);
    if (L->reason_tail) {
        size_t len = strlen(rep->reason);
        snprintf(rep->reason + len, sizeof rep->reason - len, "; %s", L->reason_tail);
    }
    rep->strategy = s;
    L->part_strategy = s == CLF_STRATEGY_STATIC    ? CLF__PART_STATIC
                       : s == CLF_STRATEGY_DYNAMIC ? CLF__PART_DYNAMIC
                       : s == CLF_STRATEGY_GUIDED  ? CLF__PART_GUIDED
                                          : CLF__PART_MEMORY_AWARE;
    return CLF_SUCCESS;
}

int clf__launch_density(const clf__launch *L, double *rho)
{
    char key[400];
    if (L->small || L->ndev < 2 || !profile_key(L, key, sizeof key))
        return 0;
    return clf__wprof_table_density(clf__perf_profiles(clf__fleet_perf(L->fl)), key, L->total,
                                    L->ndev, rho);
}

/* ---- learning ----------------------------------------------------------------------------- */

/* Fold the chunks of this launch into the kernel's work profile (static_profile()): every
 * strategy's chunks tell where the work lies; the profile keeps those short enough to. */
static void profile_learn(clf__launch *L, clf__perf_model *m)
{
    char key[400];
    clf__wprof_chunk c[CLF_MAX_LAUNCH_DEVICES * CLF__PERF_CHUNKS];
    size_t n = 0;
    if (L->small || L->ndev < 2 || !profile_key(L, key, sizeof key))
        return;
    clf__wprof_table *t = clf__perf_profiles(m);
    if (!t)
        return;
    for (size_t i = 0; i < L->ndev; i++) {
        const clf__worker *w = &L->w[i];
        size_t nc = w->ncsamp < CLF__PERF_CHUNKS ? w->ncsamp : CLF__PERF_CHUNKS;
        /* A probe's chunk is not where the launch's shares put work. */
        if (L->probe_units && i == L->probe_slot)
            continue;
        for (size_t k = 0; k < nc && !w->rep.failed; k++) {
            c[n].dev = i;
            c[n].off = w->csamp[k].off;
            c[n].len = w->csamp[k].units;
            c[n].seconds = w->csamp[k].kernel_s;
            n++;
        }
    }
    clf__wprof_table_add(t, key, L->total, L->ndev, c, n);
}

void clf__learn(clf__launch *L)
{
    pthread_mutex_lock(&L->X->lock);
    clf__perf_model *m = L->X->perf; /* opened by choose_weights() when weights are learned */
    pthread_mutex_unlock(&L->X->lock);
    if (!m)
        return;
    char kkey[300], dkey[400];
    kernel_key(L, kkey, sizeof kkey);
    profile_learn(L, m);
    /* The density after this launch's chunks: for its samples, and the probe's verdict. */
    double rho[CLF__WPROF_BINS];
    int dense = clf__launch_density(L, rho);
    double probe_work = NAN; /* the part of the range's work in the probe's tail */
    if (dense && L->probe_units)
        probe_work = (double)(clf__wprof_work(rho, L->total, L->total - L->probe_units,
                                              L->probe_units) /
                              (long double)L->total);
    size_t stale = clf__probe_learn(L, kkey, probe_work);
    for (size_t i = 0; i < L->ndev; i++) {
        const clf__worker *w = &L->w[i];
        if (i == stale) { /* its probe ran far faster than the model's samples say */
            clf__perf_device_key(L->fl, w->d->index, dkey, sizeof dkey);
            clf__perf_forget(m, kkey, dkey);
            clf__log(CLF_LOG_INFO, "launch '%s': device %zu's probe's kernel ran %.3g s (%.3g s "
                     "in all), predicted %.3g s (%.3g s): its model samples are forgotten",
                     L->desc.kernel, L->dev[i], w->rep.busy_s, w->rep.finish_s - w->t_start,
                     L->probe_work_s, L->probe_pred_s);
        }
        double t = w->rep.finish_s - w->t_start;
        if (w->rep.units && !w->rep.failed && t > 0) {
            /* Its chunks, for the line: in units of average work where the kernel's work
             * density is known (a line through chunks of cheap and costly Mandelbrot rows by
             * their units came out with a fixed cost of tens of ms, and the chunk floor then
             * cut a 2:1 pair's first chunk at 65 % of the range), and a plane's work per unit
             * (the GEMM's MFLOP per row or column of C). */
            size_t nc = w->ncsamp < CLF__PERF_CHUNKS ? w->ncsamp : CLF__PERF_CHUNKS;
            clf__perf_chunk c[CLF__PERF_CHUNKS];
            for (size_t k = 0; k < nc; k++) {
                c[k] = w->csamp[k];
                double x = (double)c[k].units;
                if (dense)
                    x = (double)clf__wprof_work(rho, L->total, c[k].off, c[k].units);
                else if (L->learn_scale > 0)
                    x *= L->learn_scale;
                c[k].units = x >= 1 ? (uint64_t)llround(x) : 1;
            }
            /* The launch's work: every chunk's, by the bins its units fell in. */
            double x = (double)w->rep.units;
            if (dense) {
                x = 0;
                for (size_t b = 0; b < CLF__WPROF_BINS; b++)
                    x += w->bin_units[b] * rho[b];
            } else if (L->learn_scale > 0) {
                x *= L->learn_scale;
            }
            uint64_t work = x >= 1 ? (uint64_t)llround(x) : 1;
            clf__perf_device_key(L->fl, w->d->index, dkey, sizeof dkey);
            clf__perf_record(m, kkey, dkey, work, t);
            clf__perf_record_chunks(m, kkey, dkey, c, nc);
        }
        /* The device's links, whatever the kernel: bytes per second of its transfers'
         * profiled time. Under a MiB a transfer measures its latency more than the link. */
        if (!w->rep.failed) {
            clf__perf_device_key(L->fl, w->d->index, dkey, sizeof dkey);
            if (w->rep.bytes_to_device >= (1u << 20) && w->rep.to_device_s > 0)
                clf__perf_record(m, CLF__PERF_LINK_H2D, dkey, w->rep.bytes_to_device,
                                 w->rep.to_device_s);
            if (w->rep.bytes_from_device >= (1u << 20) && w->rep.from_device_s > 0)
                clf__perf_record(m, CLF__PERF_LINK_D2H, dkey, w->rep.bytes_from_device,
                                 w->rep.from_device_s);
        }
    }
}

/*
 * clf_allreduce(): which algorithm runs, then running it. Two schedules do the work, the ring
 * (ring.c) and the host combine (hostred.c); neither wins everywhere. A ring moves the least
 * data, 2(n-1)/n of a buffer per device, but in 2(n-1) dependent steps of chunked copies and
 * kernels, each paying commands' fixed costs (and, between contexts, a trip through host
 * memory). The host combine moves two buffers per device, in three steps.
 *
 * So each AUTO call predicts both from the figures of its devices (lib/plan/collcost.c,
 * pure), and, as MPI's tuned collectives and NCCL's tuner do, times what it runs: the fleet's
 * cost model (plan/perfmodel.h) keeps each algorithm's measured times per size class and set
 * of devices, and once both are measured in a class the faster runs (clf__ar_policy() says
 * when one is tried to be measured, and why not always). Predictions alone were up to 2x
 * wrong on PoCL's CPU devices: a command's guessed 30 us is dear where PoCL's are cheap.
 *
 * The figures: each device's host links are the bandwidths the fleet's cost model has learned
 * from launches' transfers (link:h2d, link:d2h), else a guess; a pair's path is the transfer
 * selector's (a direct path at its guessed speed, or staged through the two host links); a
 * combine kernel runs at the model's guessed device speed; every command costs a fixed time.
 * The choice is forced by clf_collective_options.algorithm, else $CLFLEET_ALLREDUCE (ring,
 * host or auto), and logged at debug level with its basis (measured, predicted or
 * exploring); the trace names the ring's kernels after it (the host combine shows as one
 * read and one write per device, no kernel).
 *
 * The measured samples: the model's entry of kernel "allreduce:ALG:CLASS" (CLASS the lower
 * bound of the call's power-of-2 size class, as "16KiB"; ":chunk=B" appended when the options
 * set the ring's chunk) and device "KEY0;KEY1;...;paths=P0,P1,..." (each position's device
 * key in position order, then the transfer path from each position to the next, which the
 * ring's copies take: a shared context and a context per device measure apart). A sample is
 * the call's bytes per buffer over the seconds from its own work's start (the devices'
 * earlier work ended) to the result in place; the model keeps the median of the last 8 (a
 * spike moves it by one rank at most), and a call's measured time is its bytes over that
 * median. Classes of 2x keep that scaling within 2x where a call's time hardly depends on
 * its size (a few KiB); the model's line fit (fixed + bytes / rate) would do better, but
 * costs microseconds a call, against all-reduces of 30 us. The model drops each key's first
 * sample in a process as cold (the scratch buffers and host memory a first call allocates
 * and faults in), and an algorithm counts as measured from CLF__AR_MIN_SAMPLES samples on
 * (collcost.h: one spike must not decide), so where nothing was kept a class is explored by
 * four calls of each algorithm. Forced calls are measured too.
 *
 * Once both are measured the slower (the loser) still runs now and then, to see whether its
 * times still hold (collcost.c's clf__ar_policy_retry() says when, and why): the fleet keeps a
 * re-try schedule per pair of keys (in memory: a new process starts afresh, and its first
 * re-try of a key is dropped as cold), and a re-try's sample replaces the loser's oldest
 * (clf__perf_record_replace()), so that a stale bad streak ages out. The element type and the
 * operation are not in the key: both algorithms stream bytes, and a combine's cost per byte
 * differs little between them.
 */
#include "coll.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exec/exec.h"
#include "plan/plan.h"

/* Guesses until the model has measured, besides the planners' shared ones
 * (CLF__GUESS_*, plan/perfmodel.h): a direct peer path, and the host's combine loop (one
 * thread; it reads two arrays and writes one). */
#define PEER_BPS 20e9
#define HOST_COMBINE_BPS 4e9

static const char *const alg_names[] = {"auto", "ring", "host"};

const char *clf_allreduce_algorithm_name(clf_allreduce_algorithm a)
{
    if ((unsigned)a >= CLF__ARRAY_LEN(alg_names))
        return "unknown";
    return alg_names[a];
}

/* $CLFLEET_ALLREDUCE: unset, blank or "auto" leave the choice to the cost model. */
static clf_status env_algorithm(const char *fn, clf_allreduce_algorithm *out)
{
    const char *v = getenv("CLFLEET_ALLREDUCE");
    *out = CLF_ALLREDUCE_AUTO;
    if (!v)
        return CLF_SUCCESS;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n == 0)
        return CLF_SUCCESS;
    for (size_t a = 0; a < CLF__ARRAY_LEN(alg_names); a++)
        if (strlen(alg_names[a]) == n && strncasecmp(v, alg_names[a], n) == 0) {
            *out = (clf_allreduce_algorithm)a;
            return CLF_SUCCESS;
        }
    return clf__fail(CLF_ERROR_PARSE,
                     "%s: CLFLEET_ALLREDUCE is '%.64s' (expected ring, host or auto)", fn, v);
}

/* The algorithm forced by the options, else by the environment; AUTO when neither forces. */
static clf_status forced(const clf__coll *c, const clf_collective_options *o,
                         clf_allreduce_algorithm *out)
{
    /* A version 1 structure ends before .algorithm. */
    if (o && o->version >= 2 && o->algorithm != CLF_ALLREDUCE_AUTO) {
        if (o->algorithm != CLF_ALLREDUCE_RING && o->algorithm != CLF_ALLREDUCE_HOST)
            return clf__fail(CLF_ERROR_INVALID_ARGUMENT,
                             "%s: unknown all-reduce algorithm %d (CLF_ALLREDUCE_AUTO, _RING or "
                             "_HOST)",
                             c->fn, (int)o->algorithm);
        *out = o->algorithm;
        return CLF_SUCCESS;
    }
    return env_algorithm(c->fn, out);
}

/* The cost model's input for this call: figures of every position's device and pair. */
static void figures(const clf__coll *c, size_t count, const clf_collective_options *o,
                    clf__ar_dev *dev, double *peer, clf__ar_input *in)
{
    clf__perf_model *m = clf__fleet_perf(c->fl);
    char dkey[400];
    for (size_t i = 0; i < c->n; i++) {
        size_t d = c->buf[i]->device;
        const clf_device_info *info = &c->fl->dev[d].info;
        int unified = info->host_unified != 0;
        clf__perf_device_key(c->fl, d, dkey, sizeof dkey);
        dev[i].h2d_bps = clf__perf_link_bps(m, dkey, CLF__PERF_LINK_H2D, unified);
        dev[i].d2h_bps = clf__perf_link_bps(m, dkey, CLF__PERF_LINK_D2H, unified);
        /* Millions of items per second at one per cycle per unit; a combine is bound by
         * memory long before that on a host-unified device. */
        double speed = clf__perf_guess_speed(info) * 1e6 * (double)c->es;
        dev[i].combine_bps =
            unified && speed > CLF__GUESS_LOCAL_BPS ? CLF__GUESS_LOCAL_BPS : speed;
        for (size_t j = 0; j < c->n; j++) {
            clf_path p = CLF_PATH_STAGED;
            if (clf_transfer_path(&p, NULL, c->fl, d, c->buf[j]->device) != CLF_SUCCESS)
                p = CLF_PATH_STAGED;
            int local = p == CLF_PATH_SAME_DEVICE || p == CLF_PATH_UNIFIED;
            peer[i * c->n + j] = p == CLF_PATH_STAGED ? 0 : local ? CLF__GUESS_LOCAL_BPS : PEER_BPS;
        }
    }
    memset(in, 0, sizeof *in);
    in->n = c->n;
    in->bytes = count * c->es;
    in->dev = dev;
    in->peer_bps = peer;
    in->cmd_s = CLF__GUESS_CMD_S;
    in->host_combine_bps = HOST_COMBINE_BPS;
    in->ring_chunks = clf__allreduce_ring_chunks(c, count, o);
}

/* The fleet's re-try schedules (clf__ar_retry), one per pair of keys: the ring's model key
 * (the host combine's differs from it by the algorithm's name only) and the device key,
 * "KERNEL\tDEVICES". Entries are never removed: a fleet sees a few size classes per set of
 * devices. */
typedef struct retry_entry {
    char *key;
    clf__ar_retry rt;
} retry_entry;

typedef struct retry_table {
    pthread_mutex_t lock; /* guards what follows */
    retry_entry *e;
    size_t n, cap;
} retry_table;

static void *retry_create(clf_fleet *fl)
{
    (void)fl;
    retry_table *T = calloc(1, sizeof *T);
    if (T && pthread_mutex_init(&T->lock, NULL) != 0) {
        free(T);
        T = NULL;
    }
    return T;
}

static void retry_fini(clf_fleet *fl, void *state)
{
    retry_table *T = state;
    (void)fl;
    for (size_t i = 0; i < T->n; i++)
        free(T->e[i].key);
    free(T->e);
    pthread_mutex_destroy(&T->lock);
    free(T);
}

static const clf__state_key retry_key = {"all-reduce re-tries", CLF__STATE_BEFORE_XFER,
                                         retry_create, retry_fini};

/* The index of key's schedule in T (under T->lock), added (all zero) when add is set; -1 when
 * unknown, or out of memory. */
static long retry_find(retry_table *T, const char *key, int add)
{
    for (size_t i = 0; i < T->n; i++)
        if (strcmp(T->e[i].key, key) == 0)
            return (long)i;
    if (!add)
        return -1;
    if (T->n == T->cap) {
        size_t cap = T->cap ? 2 * T->cap : 8;
        retry_entry *e = realloc(T->e, cap * sizeof *e);
        if (!e)
            return -1;
        T->e = e;
        T->cap = cap;
    }
    char *k = strdup(key);
    if (!k)
        return -1;
    memset(&T->e[T->n], 0, sizeof T->e[T->n]);
    T->e[T->n].key = k;
    return (long)T->n++;
}

/* What a call decided, and the keys its time is recorded under. */
typedef struct ar_plan {
    clf_allreduce_algorithm alg;
    int forced;          /* the options or the environment chose alg */
    double ring_s, host_s; /* predicted seconds (-1 for a single buffer) */
    double ring_m, host_m; /* measured seconds for this call's bytes, -1 when not measured */
    clf__ar_basis basis;
    retry_table *retries; /* the fleet's schedules; NULL: no re-tries (no memory, forced) */
    long retry;           /* this call's schedule in retries (an AUTO call that runs) */
    clf__perf_model *model; /* NULL: nothing is measured (no memory for the model) */
    char kernel[2][80];     /* the model's keys: [0] the ring's, [1] the host combine's */
    clf__sb devices;        /* the model's device key of the call (heap; ar_plan_free()) */
} ar_plan;

static void ar_plan_free(ar_plan *p)
{
    free(p->devices.s);
    p->devices.s = NULL;
}

/* The lower bound of size class k (2^k bytes) as "4KiB", "32MiB", "1B". */
static void class_name(unsigned k, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = k / 10; /* 2^k = 2^(k % 10) x 1024^(k / 10) */
    snprintf(buf, n, "%llu%s", 1ull << (k % 10), unit[u < 7 ? u : 6]);
}

/* The model's keys of this call (see the top of the file); 0 when they could not be made. */
static int make_keys(const clf__coll *c, size_t count, const clf_collective_options *o,
                     ar_plan *p)
{
    char cls[32], chunk[48] = "", dkey[400];
    class_name(clf__ar_size_class(count * c->es), cls, sizeof cls);
    if (o && o->chunk_bytes)
        snprintf(chunk, sizeof chunk, ":chunk=%zu", o->chunk_bytes);
    for (int a = 0; a < 2; a++)
        snprintf(p->kernel[a], sizeof p->kernel[a], "allreduce:%s:%s%s", a ? "host" : "ring",
                 cls, chunk);
    for (size_t i = 0; i < c->n; i++) {
        clf__perf_device_key(c->fl, c->buf[i]->device, dkey, sizeof dkey);
        clf__sb_printf(&p->devices, "%s;", dkey);
    }
    clf__sb_printf(&p->devices, "paths=");
    for (size_t i = 0; i < c->n; i++) {
        clf_path path = CLF_PATH_STAGED;
        if (clf_transfer_path(&path, NULL, c->fl, c->buf[i]->device,
                              c->buf[(i + 1) % c->n]->device) != CLF_SUCCESS)
            path = CLF_PATH_STAGED;
        const char *name = clf_path_name(path);
        clf__sb_printf(&p->devices, "%s%s", i ? "," : "", name ? name : "?");
    }
    return !p->devices.oom && p->devices.s;
}

/* Measured seconds of algorithm a (0 ring, 1 host) for bytes: the bytes over the median of
 * its recent samples' bytes per second; -1 while it has fewer than CLF__AR_MIN_SAMPLES. */
static double measured(const ar_plan *p, int a, size_t bytes)
{
    clf__perf_fit f;
    if (!p->model || !clf__perf_get(p->model, p->kernel[a], p->devices.s, &f) ||
        f.samples < CLF__AR_MIN_SAMPLES || !(f.units_per_s > 0))
        return -1;
    return (double)bytes / f.units_per_s;
}

/* The AUTO choice of p's call from its predictions and measured times, with the re-try
 * schedule of its keys: read only for a query, counted (made on the first call) when the
 * call runs (runs set). */
static int auto_choice(const clf__coll *c, int runs, ar_plan *p)
{
    const clf__ar_retry *rt = NULL;
    char *key = NULL;
    p->retry = -1;
    p->retries = p->model ? clf__fleet_state(c->fl, &retry_key) : NULL;
    if (p->retries) {
        size_t kl = strlen(p->kernel[0]), dl = strlen(p->devices.s);
        if ((key = malloc(kl + dl + 2)) != NULL) {
            memcpy(key, p->kernel[0], kl);
            key[kl] = '\t';
            memcpy(key + kl + 1, p->devices.s, dl + 1);
        }
    }
    if (!key) /* out of memory: no re-tries this call */
        return clf__ar_policy(p->ring_s, p->host_s, p->ring_m, p->host_m, &p->basis);
    pthread_mutex_lock(&p->retries->lock);
    long i = retry_find(p->retries, key, runs);
    if (i >= 0)
        rt = &p->retries->e[i].rt;
    int a = clf__ar_policy_retry(p->ring_s, p->host_s, p->ring_m, p->host_m, rt, &p->basis);
    if (runs && i >= 0) {
        clf__ar_retry_ran(&p->retries->e[i].rt, p->ring_m, p->host_m, p->basis);
        p->retry = i;
    }
    pthread_mutex_unlock(&p->retries->lock);
    free(key);
    return a;
}

/* The algorithm of a validated call, both predictions (also when forced, for the log and
 * clf_allreduce_choice(); -1 for a single buffer, which moves nothing) and, for two buffers
 * or more, the keys its time is kept under. runs: the call runs what is chosen (an AUTO
 * call then counts in its re-try schedule); else it is a query, which changes nothing. */
static clf_status choose(const clf__coll *c, size_t count, const clf_collective_options *o,
                         int runs, ar_plan *p)
{
    clf__ar_dev dev[CLF__COLL_MAXN];
    double *peer = malloc(c->n * c->n * sizeof *peer);
    clf__ar_input in;
    clf_allreduce_algorithm f;
    clf_status st = forced(c, o, &f);
    memset(p, 0, sizeof *p);
    p->retry = -1;
    p->ring_s = p->host_s = p->ring_m = p->host_m = -1;
    p->alg = CLF_ALLREDUCE_RING;
    if (st == CLF_SUCCESS && c->n < 2) {
        free(peer);
        return CLF_SUCCESS; /* one buffer is the result: nothing moves */
    }
    if (st == CLF_SUCCESS && !peer)
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", c->fn);
    if (st == CLF_SUCCESS) {
        figures(c, count, o, dev, peer, &in);
        clf__ar_choose(&in, &p->ring_s, &p->host_s);
        p->forced = f != CLF_ALLREDUCE_AUTO;
        /* Without keys (no memory) the call goes on, unmeasured, on the predictions. */
        p->model = clf__fleet_perf(c->fl);
        if (p->model && !make_keys(c, count, o, p))
            p->model = NULL;
        /* A forced call needs the measured times only for the log. */
        if (!p->forced || clf__log_on(CLF_LOG_DEBUG)) {
            p->ring_m = measured(p, 0, in.bytes);
            p->host_m = measured(p, 1, in.bytes);
        }
        int a = p->forced ? clf__ar_policy(p->ring_s, p->host_s, p->ring_m, p->host_m, &p->basis)
                          : auto_choice(c, runs, p);
        p->alg = p->forced ? f : a == 2 ? CLF_ALLREDUCE_HOST : CLF_ALLREDUCE_RING;
        if (clf__log_on(CLF_LOG_DEBUG)) {
            char ms[2][32];
            for (int k = 0; k < 2; k++) {
                double m = k ? p->host_m : p->ring_m;
                if (m > 0)
                    snprintf(ms[k], sizeof ms[k], "%.1f us", m * 1e6);
                else
                    snprintf(ms[k], sizeof ms[k], "not yet");
            }
            clf__log(CLF_LOG_DEBUG,
                     "%s: %zu devices, %zu bytes each: %s (%s; measured ring %s, host combine "
                     "%s; predicted ring %.1f us, host combine %.1f us)",
                     c->fn, c->n, in.bytes, clf_allreduce_algorithm_name(p->alg),
                     p->forced ? "forced" : clf__ar_basis_name(p->basis), ms[0], ms[1],
                     p->ring_s * 1e6, p->host_s * 1e6);
        }
    }
    free(peer);
    if (st != CLF_SUCCESS)
        ar_plan_free(p);
    return st;
}

/* The host combines doubles on any device, but the ring refuses them where a device has no
 * fp64 (its kernels): the same call must not fail or pass by the algorithm chosen, nor
 * clf_allreduce_choice() accept what clf_allreduce() refuses. */
static clf_status fp64_check(const clf__coll *c, clf_type type)
{
    if (type != CLF_TYPE_DOUBLE)
        return CLF_SUCCESS;
    for (size_t i = 0; i < c->n; i++) {
        const struct clf__device *d = &c->fl->dev[c->buf[i]->device];
        if (!d->info.fp64)
            return clf__fail(CLF_ERROR_UNSUPPORTED, "%s: device %zu '%s' has no double precision",
                             c->fn, d->index, d->info.name);
    }
    return CLF_SUCCESS;
}

/* Keep the time of a call that ran p->alg: its bytes per buffer per second (the model drops
 * its key's first sample in a process, as cold). A re-try's replaces the loser's oldest, and
 * its outcome goes to the schedule; s <= 0: the call was not timed (a re-try then changes
 * nothing). */
static void record(const ar_plan *p, size_t bytes, double s)
{
    int kept = 0, retrying = p->basis == CLF__AR_RETRYING && !p->forced && p->retry >= 0;
    const char *kernel = p->kernel[p->alg == CLF_ALLREDUCE_HOST];
    /* A failed record (no memory) loses a sample, not the call's result. */
    if (p->model && s > 0 && bytes > 0) {
        if (retrying)
            (void)clf__perf_record_replace(p->model, kernel, p->devices.s, bytes, s, &kept);
        else
            (void)clf__perf_record(p->model, kernel, p->devices.s, bytes, s);
    }
    if (retrying) {
        /* The winner's measured time when the re-try was chosen. */
        double winner_s = p->alg == CLF_ALLREDUCE_HOST ? p->ring_m : p->host_m;
        pthread_mutex_lock(&p->retries->lock);
        clf__ar_retry_done(&p->retries->e[p->retry].rt, kept ? s : -1, winner_s);
        pthread_mutex_unlock(&p->retries->lock);
    }
}

clf_status clf_allreduce(clf_buffer *const *bufs, size_t nbufs, size_t count, clf_type type,
                         clf_reduce_op op, const clf_collective_options *opts)
{
    clf__coll c;
    ar_plan p;
    clf_status st = clf__coll_validate(&c, "clf_allreduce", bufs, nbufs, opts, count, 0, &type, op);
    if (st != CLF_SUCCESS)
        return st;
    if ((st = choose(&c, count, opts, 1, &p)) != CLF_SUCCESS || nbufs == 1)
        return st; /* one device: its buffer is the result */
    if (p.alg == CLF_ALLREDUCE_RING) {
        CLF__TRY(st, clf__coll_kernels(&c, type, op));
        snprintf(c.klabel, sizeof c.klabel, "%s (ring)", c.kname);
    } else {
        CLF__TRY(st, fp64_check(&c, type));
    }
    /* The clock starts when the markers are queued (the ring's kernels built; where commands
     * wait on the host, the devices' earlier work waited for), or when that work ends if
     * later (clf__coll_entry() notes it): a sample is the collective's own time. */
    c.timed = p.model != NULL;
    CLF__TRY(st, clf__coll_entry(&c));
    c.t0 = clf__now();
    if (p.alg == CLF_ALLREDUCE_RING)
        CLF__TRY(st, clf__allreduce_ring(&c, count, opts));
    else
        CLF__TRY(st, clf__allreduce_host(&c, count, type, op));
out:
    st = clf__coll_finish(&c, st);
    record(&p, count * c.es, st == CLF_SUCCESS && c.timed ? c.elapsed_s : -1);
    ar_plan_free(&p);
    return st;
}

clf_status clf_allreduce_choice(clf_allreduce_algorithm *out, clf_buffer *const *bufs,
                                size_t nbufs, size_t count, clf_type type, clf_reduce_op op,
                                const clf_collective_options *opts, double *ring_s, double *host_s)
{
    clf__coll c;
    ar_plan p;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_allreduce_choice: out is NULL");
    clf_status st =
        clf__coll_validate(&c, "clf_allreduce_choice", bufs, nbufs, opts, count, 0, &type, op);
    if (st == CLF_SUCCESS)
        st = fp64_check(&c, type);
    if (st == CLF_SUCCESS)
        st = choose(&c, count, opts, 0, &p);
    if (st == CLF_SUCCESS) {
        *out = p.alg;
        if (ring_s)
            *ring_s = p.ring_s;
        if (host_s)
            *host_s = p.host_s;
        ar_plan_free(&p);
    }
    return st;
}

/*
 * clf_allreduce(): which algorithm runs, then running it. Two schedules do the work, the ring
 * (ring.c) and the host combine (hostred.c); neither wins everywhere. A ring moves the least
 * data, 2(n-1)/n of a buffer per device, but in 2(n-1) dependent steps of chunked copies and
 * kernels, each paying commands' fixed costs (and, between contexts, a trip through host
 * memory). The host combine moves two buffers per device, in three steps. So each call
 * predicts both from the figures of its devices (lib/plan/collcost.c, pure) and runs the
 * cheaper, as NCCL and MPI's tuned collectives choose per call by size and topology.
 *
 * The figures: each device's host links are the bandwidths the fleet's cost model has learned
 * from launches' transfers (link:h2d, link:d2h), else a guess; a pair's path is the transfer
 * selector's (a direct path at its guessed speed, or staged through the two host links); a
 * combine kernel runs at the model's guessed device speed; every command costs a fixed time.
 * The choice is forced by clf_collective_options.algorithm, else $CLFLEET_ALLREDUCE (ring,
 * host or auto), and logged at debug level; the trace names the ring's kernels after it (the
 * host combine shows as one read and one write per device, no kernel).
 */
#include "coll.h"

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

/* The algorithm of a validated call, and both predictions (also when forced, for the log and
 * clf_allreduce_choice(); -1 for a single buffer, which moves nothing). */
static clf_status choose(const clf__coll *c, size_t count, const clf_collective_options *o,
                         clf_allreduce_algorithm *alg, double *ring_s, double *host_s)
{
    clf__ar_dev dev[CLF__COLL_MAXN];
    double *peer = malloc(c->n * c->n * sizeof *peer);
    clf__ar_input in;
    clf_allreduce_algorithm f;
    clf_status st = forced(c, o, &f);
    *ring_s = *host_s = -1;
    *alg = CLF_ALLREDUCE_RING;
    if (st == CLF_SUCCESS && c->n < 2) {
        free(peer);
        return CLF_SUCCESS; /* one buffer is the result: nothing moves */
    }
    if (st == CLF_SUCCESS && !peer)
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", c->fn);
    if (st == CLF_SUCCESS) {
        figures(c, count, o, dev, peer, &in);
        int a = clf__ar_choose(&in, ring_s, host_s);
        *alg = f != CLF_ALLREDUCE_AUTO ? f : a == 2 ? CLF_ALLREDUCE_HOST : CLF_ALLREDUCE_RING;
        if (clf__log_on(CLF_LOG_DEBUG))
            clf__log(CLF_LOG_DEBUG,
                     "%s: %zu devices, %zu bytes each: %s (%s; predicted ring %.1f us, host "
                     "combine %.1f us)",
                     c->fn, c->n, in.bytes, clf_allreduce_algorithm_name(*alg),
                     f != CLF_ALLREDUCE_AUTO ? "forced" : "least predicted time", *ring_s * 1e6,
                     *host_s * 1e6);
    }
    free(peer);
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

clf_status clf_allreduce(clf_buffer *const *bufs, size_t nbufs, size_t count, clf_type type,
                         clf_reduce_op op, const clf_collective_options *opts)
{
    clf__coll c;
    clf_allreduce_algorithm alg = CLF_ALLREDUCE_RING;
    double ring_s, host_s;
    clf_status st = clf__coll_validate(&c, "clf_allreduce", bufs, nbufs, opts, count, 0, &type, op);
    if (st == CLF_SUCCESS)
        st = choose(&c, count, opts, &alg, &ring_s, &host_s);
    if (st != CLF_SUCCESS || nbufs == 1)
        return st; /* one device: its buffer is the result */
    if (alg == CLF_ALLREDUCE_RING) {
        CLF__TRY(st, clf__coll_kernels(&c, type, op));
        snprintf(c.klabel, sizeof c.klabel, "%s (ring)", c.kname);
    } else {
        CLF__TRY(st, fp64_check(&c, type));
    }
    CLF__TRY(st, clf__coll_entry(&c));
    if (alg == CLF_ALLREDUCE_RING)
        CLF__TRY(st, clf__allreduce_ring(&c, count, opts));
    else
        CLF__TRY(st, clf__allreduce_host(&c, count, type, op));
out:
    return clf__coll_finish(&c, st);
}

clf_status clf_allreduce_choice(clf_allreduce_algorithm *out, clf_buffer *const *bufs,
                                size_t nbufs, size_t count, clf_type type, clf_reduce_op op,
                                const clf_collective_options *opts, double *ring_s, double *host_s)
{
    clf__coll c;
    double r = -1, h = -1;
    clf_allreduce_algorithm alg = CLF_ALLREDUCE_RING;
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_allreduce_choice: out is NULL");
    clf_status st =
        clf__coll_validate(&c, "clf_allreduce_choice", bufs, nbufs, opts, count, 0, &type, op);
    if (st == CLF_SUCCESS)
        st = fp64_check(&c, type);
    if (st == CLF_SUCCESS)
        st = choose(&c, count, opts, &alg, &r, &h);
    if (st == CLF_SUCCESS) {
        *out = alg;
        if (ring_s)
            *ring_s = r;
        if (host_s)
            *host_s = h;
    }
    return st;
}

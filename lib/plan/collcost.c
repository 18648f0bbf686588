/*
 * The all-reduce cost model (pure, unit-tested with fixed figures): the predicted time of the
 * ring and of the host combine from the link figures of a call's devices, so that the
 * collectives pick the cheaper one per call, as NCCL and MPI's tuned collectives pick their
 * algorithm by size and topology.
 *
 * The ring: the count is cut into n segments of S = bytes / n, each into c chunks of
 * C = S / c. It runs n-1 reduce-scatter steps (a copy to the next position, then a combine
 * kernel there) and n-1 all-gather steps (a copy), every step c chunks. A step's time per
 * chunk is its slowest position's: the copy (one command and C over the direct path's
 * bandwidth; staged, three: the host sees the wait list end, then a read and a write, with
 * C over each host link) plus, in reduce-scatter, the combine (one command and C over the
 * device's combine speed). The chunks are counted one after the other: in principle they
 * pipeline, but measured they overlapped little (on PoCL's CPU devices the sum predicted the
 * ring's time at 1 MiB within 10 %, the pipeline 30 % short; on an H200 and a CPU the ring
 * lost 8x to a host combine at 1 to 16 MiB). A ring pays per chunk and per step what the
 * host combine pays once: with host-staged links, two devices or small counts it loses.
 *
 * The host combine: every device reads its whole buffer to the host at once (one command
 * each; the slowest sets the time), the host combines n-1 buffers into the first, and every
 * device writes the result at once. It moves 2 x bytes over each host link, against the
 * ring's 2(n-1)/n x bytes staged twice, but in three steps instead of 2(n-1) x c.
 */
#include "plan.h"

#include <math.h>
#include <string.h>

static int valid(const clf__ar_input *in)
{
    if (!in || in->n < 2 || !in->dev || !in->peer_bps || !(in->cmd_s >= 0) ||
        !(in->host_combine_bps > 0) || in->ring_chunks == 0)
        return 0;
    for (size_t i = 0; i < in->n; i++)
        if (!(in->dev[i].h2d_bps > 0) || !(in->dev[i].d2h_bps > 0) ||
            !(in->dev[i].combine_bps > 0))
            return 0;
    return 1;
}

/* Seconds of a copy of b bytes from position i to j. */
static double copy_s(const clf__ar_input *in, size_t i, size_t j, double b)
{
    double direct = in->peer_bps[i * in->n + j];
    if (direct > 0)
        return in->cmd_s + b / direct;
    return 3 * in->cmd_s + b / in->dev[i].d2h_bps + b / in->dev[j].h2d_bps;
}

double clf__ar_ring_cost(const clf__ar_input *in)
{
    if (!valid(in))
        return -1;
    size_t n = in->n;
    double seg = (double)(in->bytes / n + (in->bytes % n != 0));
    double chunks = (double)in->ring_chunks, chunk = seg / chunks;
    /* The slowest position's time per chunk, in a reduce-scatter and an all-gather step. */
    double rs = 0, ag = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = (i + 1) % n;
        double cp = copy_s(in, i, j, chunk);
        double cb = in->cmd_s + chunk / in->dev[j].combine_bps;
        rs = cp + cb > rs ? cp + cb : rs;
        ag = cp > ag ? cp : ag;
    }
    return (double)(n - 1) * chunks * (rs + ag);
}

double clf__ar_host_cost(const clf__ar_input *in)
{
    if (!valid(in))
        return -1;
    double b = (double)in->bytes, rd = 0, wr = 0;
    for (size_t i = 0; i < in->n; i++) {
        double r = in->cmd_s + b / in->dev[i].d2h_bps, w = in->cmd_s + b / in->dev[i].h2d_bps;
        rd = r > rd ? r : rd;
        wr = w > wr ? w : wr;
    }
    return rd + (double)(in->n - 1) * b / in->host_combine_bps + wr;
}

int clf__ar_choose(const clf__ar_input *in, double *ring_s, double *host_s)
{
    double r = clf__ar_ring_cost(in), h = clf__ar_host_cost(in);
    if (ring_s)
        *ring_s = r;
    if (host_s)
        *host_s = h;
    if (r < 0 || h < 0)
        return 1;
    return h < r ? 2 : 1;
}

/*
 * The choice by measured times. A prediction is only as good as its guesses (a command's
 * fixed cost above all): on PoCL's CPU sub-devices it put the ring's 4 KiB call at 91 us
 * and the host combine's at 62 us, when clfleet-bench allreduce measured 156 us and 314 us
 * (a busy 2-core host), so the predicted choice ran the slower one, 2x slower. Guesses
 * tuned to one machine are wrong on the next; so, as MPI's tuned collectives and NCCL's
 * tuner time each algorithm and keep the faster, the all-reduce measures what it runs, per
 * size class, and once both algorithms have been measured in a class the faster measured
 * one runs.
 *
 * Learning the other one means running it once while it may be the slower: that is worth
 * it only while it could plausibly win. The predictions erred on that box by up to 3x in
 * the ratio of the two (0.68 predicted, 2.0 measured), so an algorithm predicted at most
 * CLF__AR_EXPLORE_BOUND (4x) dearer than the measured one is tried; beyond that the
 * prediction is trusted, and a try would cost more than four calls of the measured one (a
 * 1 GiB host combine over PCIe where the ring runs over peer links, say). The bound also
 * caps what a wrong try costs: at most 4x the measured algorithm's predicted time, once per
 * size class and set of devices (the samples persist in the cost model's file).
 */
const char *clf__ar_basis_name(clf__ar_basis b)
{
    switch (b) {
    case CLF__AR_PREDICTED:
        return "predicted";
    case CLF__AR_MEASURED:
        return "measured";
    case CLF__AR_EXPLORING:
        return "exploring";
    case CLF__AR_RETRYING:
        return "re-trying";
    }
    return "unknown";
}

unsigned clf__ar_size_class(size_t bytes)
{
    unsigned k = 0;
    while (bytes >= 2) {
        bytes /= 2;
        k++;
    }
    return k;
}

int clf__ar_policy(double ring_pred, double host_pred, double ring_meas, double host_meas,
                   clf__ar_basis *basis)
{
    int ring_known = ring_meas > 0 && isfinite(ring_meas);
    int host_known = host_meas > 0 && isfinite(host_meas);
    clf__ar_basis b = CLF__AR_PREDICTED;
    int alg;
    if (ring_known && host_known) {
        b = CLF__AR_MEASURED;
        alg = host_meas < ring_meas ? 2 : 1;
    } else if (ring_known || host_known) {
        /* Try the unmeasured one (2 when the ring is the measured one), unless its
         * prediction says it is far dearer: both predictions must then be known. */
        int other = ring_known ? 2 : 1;
        double p_other = ring_known ? host_pred : ring_pred;
        double p_known = ring_known ? ring_pred : host_pred;
        if (p_other > 0 && p_known > 0 && p_other > CLF__AR_EXPLORE_BOUND * p_known) {
            alg = 3 - other;
        } else {
            b = CLF__AR_EXPLORING;
            alg = other;
        }
    } else {
        /* As clf__ar_choose(): a tie or an unknown prediction goes to the ring. */
        alg = ring_pred >= 0 && host_pred >= 0 && host_pred < ring_pred ? 2 : 1;
    }
    if (basis)
        *basis = b;
    return alg;
}

/*
 * Re-trying the loser. Once both algorithms are measured the slower one would never run
 * again, so a bad streak while it was measured (a loaded host, another fleet on the same
 * devices, a one-off spike in two of three samples) would keep it out for good, and so would
 * a change of conditions that made it the faster since. So, as StarPU's dmda keeps
 * calibrating and NCCL's tuners re-probe, the loser runs again now and then: after
 * CLF__AR_RETRY_CALLS calls of the winner, then after twice as many each time it loses
 * again, up to CLF__AR_RETRY_CALLS << CLF__AR_RETRY_MAX_SHIFT (16384: a condition that
 * changes is still noticed within that many calls); a re-try that wins (faster than the
 * winner's median) resets the wait to CLF__AR_RETRY_CALLS, so that a loser that has become
 * the faster is sampled again soon. The re-try's sample replaces the loser's oldest one (the
 * caller's business: clf__perf_record_replace()), so its window stays as long and a stale
 * streak ages out: with the usual three samples, two winning re-tries move its median.
 *
 * The cost is bounded: only a loser whose median is at most CLF__AR_EXPLORE_BOUND times the
 * winner's is re-tried (one far dearer stays out, as an untried one far dearer is never
 * tried), so the first re-tries cost at most (4 - 1) / 16 of the winner's time, and a loser
 * that stays slow is re-tried log2(calls / 16) times: 5 times in 1,000 calls, 9 in 10,000.
 */
unsigned long long clf__ar_retry_interval(const clf__ar_retry *rt)
{
    unsigned k = rt && rt->k < CLF__AR_RETRY_MAX_SHIFT ? rt->k : CLF__AR_RETRY_MAX_SHIFT;
    return (unsigned long long)CLF__AR_RETRY_CALLS << (rt ? k : 0);
}

/* The loser (1 or 2) when both are measured and it is within the bound of the winner, else
 * 0; the winner is 3 - loser, as clf__ar_policy() chooses it. */
static int retry_candidate(double ring_meas, double host_meas)
{
    if (!(ring_meas > 0 && isfinite(ring_meas) && host_meas > 0 && isfinite(host_meas)))
        return 0;
    int loser = host_meas < ring_meas ? 1 : 2;
    double lm = loser == 1 ? ring_meas : host_meas, wm = loser == 1 ? host_meas : ring_meas;
    return lm <= CLF__AR_EXPLORE_BOUND * wm ? loser : 0;
}

int clf__ar_policy_retry(double ring_pred, double host_pred, double ring_meas, double host_meas,
                         const clf__ar_retry *rt, clf__ar_basis *basis)
{
    clf__ar_basis b;
    int alg = clf__ar_policy(ring_pred, host_pred, ring_meas, host_meas, &b);
    int loser = b == CLF__AR_MEASURED ? retry_candidate(ring_meas, host_meas) : 0;
    /* A schedule counted for the other algorithm has not started for this one. */
    if (rt && loser && rt->loser == loser && rt->since >= clf__ar_retry_interval(rt)) {
        b = CLF__AR_RETRYING;
        alg = loser;
    }
    if (basis)
        *basis = b;
    return alg;
}

void clf__ar_retry_ran(clf__ar_retry *rt, double ring_meas, double host_meas,
                       clf__ar_basis basis)
{
    if (!rt)
        return;
    if (basis != CLF__AR_MEASURED && basis != CLF__AR_RETRYING) {
        memset(rt, 0, sizeof *rt); /* not both measured: nothing to re-try */
        return;
    }
    int loser = retry_candidate(ring_meas, host_meas);
    if (!loser)
        return; /* far above the bound: not re-tried, and its wait does not run meanwhile */
    if (rt->loser != loser) {
        memset(rt, 0, sizeof *rt);
        rt->loser = loser;
    }
    if (basis == CLF__AR_RETRYING)
        rt->since = 0;
    else
        rt->since++;
}

void clf__ar_retry_done(clf__ar_retry *rt, double retry_s, double winner_s)
{
    if (!rt || !(retry_s > 0) || !isfinite(retry_s) || !(winner_s > 0))
        return;
    if (retry_s < winner_s)
        rt->k = 0;
    else if (rt->k < CLF__AR_RETRY_MAX_SHIFT)
        rt->k++;
}

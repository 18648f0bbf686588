/* The communicator over fleets (clf_comm_create, destroy, getters), the node's device share
 * (clf_comm_node_fleet), and the helpers of every collective: waits with a deadline, one
 * status agreed by all ranks, the CLFLEET_MPI_CHECK comparison of arguments. */
#include "comm.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bytes of the message a failing rank sends the others. */
#define MSG_BYTES 1024

double clf__comm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

clf_status clf__comm_mpi_fail(clf_comm *c, int err, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", err);
    if (c)
        c->broken = 1;
    return clf_set_error(CLF_ERROR_MPI, "%s: %s (another rank may have failed or gone)", what,
                         s);
}

clf_status clf__comm_wait(clf_comm *c, int n, MPI_Request *req, const char *what)
{
    double start = clf__comm_now();
    unsigned polls = 0;
    for (;;) {
        /* One by one (MPI_Test): an error is the request's, not a whole array's. */
        int done = 1;
        for (int i = 0; i < n; i++) {
            int flag = 0;
            int err = MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE);
            if (err != MPI_SUCCESS)
                return clf__comm_mpi_fail(c, err, what);
            done &= flag;
        }
        if (done)
            return CLF_SUCCESS;
        /* Spin a little (latency), then yield, then sleep: other ranks may share the cores. */
        polls++;
        if (polls > 64 && (polls & 63) == 0 && c->timeout_s >= 0 &&
            clf__comm_now() - start > c->timeout_s) {
            c->broken = 1;
            return clf_set_error(CLF_ERROR_TIMEOUT,
                                 "%s: rank %d waited %.3g s for the other ranks "
                                 "(a rank stuck, gone, or not calling the same collective; "
                                 "clf_comm_options.timeout_s, $CLFLEET_MPI_TIMEOUT)",
                                 what, c->rank, c->timeout_s);
        }
        if (polls < 256)
            continue;
        if (polls < 4096) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

clf_status clf__comm_agree_meta(clf_comm *c, clf_status local, const char *what, int n,
                                const long long *vals, long long *mins, long long *maxs)
{
    if (c->broken)
        return local ? local
                     : clf_set_error(CLF_ERROR_MPI, "%s: the communicator failed earlier "
                                                    "(a timeout or an MPI error)", what);
    /* One MPI_MAX all-reduce: the lowest failing rank (as INT_MAX - rank), then the values
     * and their negations (maxima and minima). */
    long long in[1 + 2 * CLF_COMM_META_MAX], res[1 + 2 * CLF_COMM_META_MAX];
    if (n > CLF_COMM_META_MAX)
        n = CLF_COMM_META_MAX;
    in[0] = local != CLF_SUCCESS ? (long long)INT_MAX - c->rank : -1;
    for (int i = 0; i < n; i++) {
        in[1 + i] = vals[i];
        in[1 + n + i] = -vals[i];
    }
    MPI_Request r;
    int err = MPI_Iallreduce(in, res, 1 + 2 * n, MPI_LONG_LONG, MPI_MAX, c->comm, &r);
    if (err != MPI_SUCCESS)
        return clf__comm_mpi_fail(c, err, what);
    clf_status st = clf__comm_wait(c, 1, &r, what);
    if (st != CLF_SUCCESS)
        return st;
    for (int i = 0; i < n; i++) {
        if (maxs)
            maxs[i] = res[1 + i];
        if (mins)
            mins[i] = -res[1 + n + i];
    }
    if (res[0] < 0)
        return CLF_SUCCESS;
    /* The first failing rank tells the others its status and why. */
    int from = (int)((long long)INT_MAX - res[0]);
    struct {
        int status;
        char text[MSG_BYTES - sizeof(int)];
    } msg;
    memset(&msg, 0, sizeof msg);
    if (c->rank == from) {
        msg.status = (int)local;
        snprintf(msg.text, sizeof msg.text, "%s", clf_last_error());
    }
    err = MPI_Ibcast(&msg, (int)sizeof msg, MPI_BYTE, from, c->comm, &r);
    if (err != MPI_SUCCESS)
        return clf__comm_mpi_fail(c, err, what);
    st = clf__comm_wait(c, 1, &r, what);
    if (st != CLF_SUCCESS)
        return st;
    msg.text[sizeof msg.text - 1] = '\0';
    return clf_set_error((clf_status)msg.status, "%s: failed on rank %d: %s", what, from,
                         msg.text);
}

int clf__comm_discrete(clf_fleet *fleet, size_t dev)
{
    clf_device_info inf;
    if (clf_device_get_info(&inf, fleet, dev) != CLF_SUCCESS)
        return 1;
    return !inf.host_unified && !(inf.type & CLF_DEVICE_CPU);
}

clf_status clf__comm_agree(clf_comm *c, clf_status local, const char *what)
{
    return clf__comm_agree_meta(c, local, what, 0, NULL, NULL, NULL);
}

clf_status clf__comm_check(clf_comm *c, const char *what, const char *names, int n,
                           const long long *vals)
{
    if (!c->check)
        return CLF_SUCCESS;
    size_t total = (size_t)n * (size_t)c->size;
    long long *all = malloc(total * sizeof *all);
    int ok = all != NULL, okall = 0;
    MPI_Request r;
    /* Everyone must know whether everyone has the memory before the gather. */
    int err = MPI_Iallreduce(&ok, &okall, 1, MPI_INT, MPI_MIN, c->comm, &r);
    if (err != MPI_SUCCESS) {
        free(all);
        return clf__comm_mpi_fail(c, err, what);
    }
    clf_status st = clf__comm_wait(c, 1, &r, what);
    if (st == CLF_SUCCESS && !okall)
        st = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: argument check: out of memory",
                           what);
    if (st != CLF_SUCCESS) {
        free(all);
        return st;
    }
    err = MPI_Iallgather(vals, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, c->comm, &r);
    if (err != MPI_SUCCESS) {
        free(all);
        return clf__comm_mpi_fail(c, err, what);
    }
    st = clf__comm_wait(c, 1, &r, what);
    for (int p = 1; st == CLF_SUCCESS && p < c->size; p++)
        for (int i = 0; i < n; i++) {
            long long a = all[i], b = all[(size_t)p * (size_t)n + (size_t)i];
            if (a == b)
                continue;
            /* The i-th name of the comma list. */
            const char *nm = names;
            for (int k = 0; k < i && nm; k++) {
                nm = strchr(nm, ',');
                nm = nm ? nm + 1 : NULL;
            }
            int len = nm ? (int)strcspn(nm, ",") : 1;
            st = clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                               "%s: arguments differ across ranks (CLFLEET_MPI_CHECK): %.*s is "
                               "%lld on rank 0 but %lld on rank %d",
                               what, len, nm ? nm : "?", a, b, p);
            break;
        }
    free(all);
    return st;
}

clf_status clf__comm_lane(clf_comm *c, int lane, MPI_Comm *out)
{
    if (lane < c->nlanes) {
        *out = c->lanes[lane];
        return CLF_SUCCESS;
    }
    MPI_Comm *grown = realloc(c->lanes, (size_t)(lane + 1) * sizeof *grown);
    if (!grown)
        return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "device lanes: out of memory");
    c->lanes = grown;
    while (c->nlanes <= lane) {
        MPI_Request r;
        MPI_Comm d = MPI_COMM_NULL;
        int err = MPI_Comm_idup(c->comm, &d, &r);
        if (err != MPI_SUCCESS)
            return clf__comm_mpi_fail(c, err, "MPI_Comm_idup (a device lane)");
        clf_status st = clf__comm_wait(c, 1, &r, "MPI_Comm_idup (a device lane)");
        if (st != CLF_SUCCESS)
            return st;
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        c->lanes[c->nlanes++] = d;
    }
    *out = c->lanes[lane];
    return CLF_SUCCESS;
}

/* The options, checked; this rank's verdict (not yet agreed). */
static clf_status read_options(clf_comm *c, const clf_comm_options *opts)
{
    clf_comm_options o = CLF_COMM_OPTIONS_INIT;
    if (opts) {
        if (opts->version < 1 || opts->version > CLF_COMM_OPTIONS_VERSION)
            return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                 "clf_comm_create: clf_comm_options.version %u (this library "
                                 "knows 1 to %d; use CLF_COMM_OPTIONS_INIT)",
                                 opts->version, CLF_COMM_OPTIONS_VERSION);
        o = *opts;
        for (size_t i = 0; i < sizeof o.reserved / sizeof o.reserved[0]; i++)
            if (o.reserved[i])
                return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                     "clf_comm_create: clf_comm_options.reserved[%zu] is not "
                                     "zero", i);
    }
    if (isnan(o.timeout_s))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "clf_comm_create: timeout_s is NaN");
    if (o.timeout_s == 0) {
        o.timeout_s = 60;
        const char *e = getenv("CLFLEET_MPI_TIMEOUT");
        if (e && *e) {
            char *end = NULL;
            errno = 0;
            double v = strtod(e, &end);
            if (errno || end == e || *end || isnan(v) || v == 0)
                return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                                     "CLFLEET_MPI_TIMEOUT='%s': seconds (negative: forever)",
                                     e);
            o.timeout_s = v;
        }
    }
    c->timeout_s = o.timeout_s < 0 ? -1.0 : o.timeout_s;
    if (o.chunk_bytes > ((size_t)1 << 30))
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                             "clf_comm_create: chunk_bytes %zu is above 1 GiB", o.chunk_bytes);
    c->chunk_bytes = o.chunk_bytes ? o.chunk_bytes : (size_t)4 << 20;
    const char *chk = getenv("CLFLEET_MPI_CHECK");
    c->check = chk && *chk && strcmp(chk, "0") != 0;
    return CLF_SUCCESS;
}

clf_status clf_comm_create(clf_comm **out, MPI_Comm comm, clf_fleet *fleet,
                           const clf_comm_options *opts)
{
    if (out)
        *out = NULL;
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return clf_set_error(CLF_ERROR_UNSUPPORTED,
                             "clf_comm_create: MPI is %s (call MPI_Init_thread first)",
                             finalized ? "finalized" : "not initialised");
    if (comm == MPI_COMM_NULL)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "clf_comm_create: MPI_COMM_NULL");
    clf_comm *c = calloc(1, sizeof *c);
    if (!c)
        return clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_comm_create: out of memory");
    c->comm = MPI_COMM_NULL;
    c->timeout_s = 60;
    /* Every rank duplicates, whatever it found wrong, so that no rank hangs in the dup. */
    int err = MPI_Comm_dup(comm, &c->comm);
    if (err != MPI_SUCCESS) {
        clf_status st = clf__comm_mpi_fail(NULL, err, "clf_comm_create: MPI_Comm_dup");
        free(c);
        return st;
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    MPI_Query_thread(&c->thread_level);
    c->fleet = fleet;

    clf_status local = read_options(c, opts);
    if (local == CLF_SUCCESS && !out)
        local = clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_create: out is NULL");
    if (local == CLF_SUCCESS && !fleet)
        local = clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_create: rank %d: fleet is NULL",
                              c->rank);
    if (local == CLF_SUCCESS && clf_fleet_device_count(fleet) == 0)
        local = clf_set_error(CLF_ERROR_INVALID_ARGUMENT,
                              "clf_comm_create: rank %d: the fleet has no device", c->rank);
    if (local == CLF_SUCCESS && c->thread_level < MPI_THREAD_FUNNELED)
        local = clf_set_error(CLF_ERROR_UNSUPPORTED,
                              "clf_comm_create: rank %d: MPI was initialised with "
                              "MPI_THREAD_SINGLE; clfleet runs threads (drivers, devices): "
                              "initialise with MPI_Init_thread, at least MPI_THREAD_FUNNELED",
                              c->rank);
    /* The chunk size and the devices' memory pick the collectives' algorithms: every rank
     * takes the smallest chunk, and host memory only when no rank has a discrete device. */
    long long v[2] = {(long long)c->chunk_bytes, 0}, vmin[2], vmax[2];
    for (size_t d = 0; local == CLF_SUCCESS && d < clf_fleet_device_count(fleet); d++)
        v[1] |= clf__comm_discrete(fleet, d);
    clf_status st = clf__comm_agree_meta(c, local, "clf_comm_create", 2, v, vmin, vmax);
    if (st == CLF_SUCCESS) {
        c->chunk_bytes = (size_t)vmin[0];
        c->host_memory = vmax[1] == 0;
    }
    if (st != CLF_SUCCESS) {
        if (!c->broken)
            MPI_Comm_free(&c->comm);
        free(c);
        return st;
    }
    *out = c;
    return CLF_SUCCESS;
}

/*
 * Staging memory of broken communicators. Their requests may never complete, and MPI may
 * still write into the memory of a pending receive (a late rank's message arriving after
 * the others timed out: cancelling a send is not dependable), so it is never freed. It is
 * kept on this list rather than dropped, so that it stays reachable: it is held for the
 * process's life on purpose, not lost.
 */
struct quarantined {
    struct quarantined *next;
    void *mem;
};
static struct quarantined *quarantine;
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;

static void quarantine_add(void *mem)
{
    struct quarantined *q = malloc(sizeof *q);
    if (!q)
        return; /* then it is simply not freed */
    q->mem = mem;
    pthread_mutex_lock(&quarantine_lock);
    q->next = quarantine;
    quarantine = q;
    pthread_mutex_unlock(&quarantine_lock);
}

void clf_comm_destroy(clf_comm *c)
{
    if (!c)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* A broken communicator may have requests pending that will never end: freeing it could
     * wait for them, so it is left to MPI_Finalize (or the process's end). */
    if (!finalized && !c->broken) {
        for (int i = 0; i < c->nlanes; i++)
            MPI_Comm_free(&c->lanes[i]);
        MPI_Comm_free(&c->comm);
    }
    /* MPI may still write into the staging memory of a broken communicator's requests. */
    if (!c->broken)
        free(c->host);
    else if (c->host)
        quarantine_add(c->host);
    free(c->lanes);
    while (c->speeds) {
        struct clf__comm_speed *n = c->speeds->next;
        free(c->speeds);
        c->speeds = n;
    }
    while (c->arrays) {
        clf__comm_array *n = c->arrays->next;
        free(c->arrays->first);
        free(c->arrays->count);
        free(c->arrays);
        c->arrays = n;
    }
    free(c);
}

int clf_comm_rank(const clf_comm *c)
{
    return c ? c->rank : -1;
}

int clf_comm_size(const clf_comm *c)
{
    return c ? c->size : 0;
}

clf_fleet *clf_comm_fleet(const clf_comm *c)
{
    return c ? c->fleet : NULL;
}

/* ---- the node's devices, shared among its ranks ---- */

/* How many devices a selection finds (0 on any failure); a probe, no cache. */
static size_t probe_count(const clf_fleet_options *base, const char *sel)
{
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    if (base)
        o = *base;
    o.devices = sel;
    o.disable_cache = 1;
    o.trace = "";
    clf_fleet *f = NULL;
    size_t n = clf_fleet_create(&f, &o) == CLF_SUCCESS ? clf_fleet_device_count(f) : 0;
    clf_fleet_destroy(f);
    return n;
}

clf_status clf_comm_node_fleet(clf_fleet **out, MPI_Comm comm, const clf_fleet_options *opts)
{
    if (out)
        *out = NULL;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return clf_set_error(CLF_ERROR_UNSUPPORTED, "clf_comm_node_fleet: MPI is not initialised");
    if (comm == MPI_COMM_NULL)
        return clf_set_error(CLF_ERROR_INVALID_ARGUMENT, "clf_comm_node_fleet: MPI_COMM_NULL");
    clf_comm tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.timeout_s = 60;
    MPI_Comm node = MPI_COMM_NULL;
    int err = MPI_Comm_dup(comm, &tmp.comm);
    if (err != MPI_SUCCESS)
        return clf__comm_mpi_fail(NULL, err, "clf_comm_node_fleet: MPI_Comm_dup");
    MPI_Comm_set_errhandler(tmp.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(tmp.comm, &tmp.rank);
    MPI_Comm_size(tmp.comm, &tmp.size);
    err = MPI_Comm_split_type(tmp.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    clf_status local = CLF_SUCCESS;
    int lrank = 0, lsize = 1;
    if (err != MPI_SUCCESS)
        local = clf__comm_mpi_fail(NULL, err, "clf_comm_node_fleet: MPI_Comm_split_type");
    else {
        MPI_Comm_rank(node, &lrank);
        MPI_Comm_size(node, &lsize);
        MPI_Comm_free(&node);
    }
    if (local == CLF_SUCCESS && !out)
        local = clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_node_fleet: out is NULL");
    /* The selection's root devices by discovery index ("index=" names them before any
     * split), then this local rank's share of them. */
    const char *base = opts && opts->devices ? opts->devices : getenv("CLFLEET_DEVICES");
    if (!base)
        base = "";
    size_t blen = strlen(base);
    char *sel = NULL;
    unsigned idx[256];
    size_t nidx = 0;
    if (local == CLF_SUCCESS) {
        sel = malloc(blen + 1600);
        if (!sel)
            local = clf_set_error(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_comm_node_fleet: memory");
    }
    if (local == CLF_SUCCESS) {
        size_t total = probe_count(NULL, "type=all;split=none");
        for (unsigned k = 0; k < total && k < 256; k++) {
            snprintf(sel, blen + 1600, "%s%sindex=%u", base, blen ? ";" : "", k);
            if (probe_count(opts, sel) > 0)
                idx[nidx++] = k;
        }
        if (nidx == 0)
            local = clf_set_error(CLF_ERROR_NO_DEVICE,
                                  "clf_comm_node_fleet: rank %d: the selection '%s' finds no "
                                  "device", tmp.rank, base);
    }
    if (local == CLF_SUCCESS) {
        /* Blocks in local-rank order; fewer devices than ranks: shared round-robin. */
        size_t lo, hi;
        if (nidx >= (size_t)lsize) {
            lo = nidx * (size_t)lrank / (size_t)lsize;
            hi = nidx * (size_t)(lrank + 1) / (size_t)lsize;
        } else {
            lo = (size_t)lrank % nidx;
            hi = lo + 1;
        }
        int n = snprintf(sel, blen + 1600, "%s%sindex=", base, blen ? ";" : "");
        for (size_t i = lo; i < hi; i++)
            n += snprintf(sel + n, blen + 1600 - (size_t)n, "%s%u", i > lo ? "," : "", idx[i]);
        clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
        if (opts)
            o = *opts;
        o.devices = sel;
        local = clf_fleet_create(out, &o);
        if (local != CLF_SUCCESS)
            local = clf_set_error(local, "rank %d (devices '%s'): %s", tmp.rank, sel,
                                  clf_last_error());
    }
    free(sel);
    clf_status st = clf__comm_agree(&tmp, local, "clf_comm_node_fleet");
    if (st != CLF_SUCCESS && out && *out) {
        clf_fleet_destroy(*out);
        *out = NULL;
    }
    if (!tmp.broken)
        MPI_Comm_free(&tmp.comm);
    return st;
}

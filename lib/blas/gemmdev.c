/*
 * The device side of the multi-device GEMM (gemm.c plans it): one host thread
 * per device, as the launch workers (worker.c). The operand that every block
 * needs goes to the device once; for each block the matching part of the
 * other operand (and of C when beta != 0) moves on the transfer queue while
 * the previous block's clBLAST call runs on the compute queue, then the block
 * of C comes back. Blocks move with rectangular transfers, so the user's
 * leading dimensions never reach the device and the elements past a row's end
 * are never touched.
 */
#include "blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CLBLAST

#include <clblast_c.h>
#include <dlfcn.h>

/* ---- loading clBLAST ------------------------------------------------------------------- */

/*
 * clBLAST is C++: linking it would make every program that uses clfleet load the C++ runtime,
 * GEMM or not. It is loaded at the first GEMM instead, as lib/cuda.c loads libcuda, and the
 * three functions clfleet calls are resolved by name. Loaded once, never unloaded (its static
 * C++ objects must outlive every fleet); a failure is remembered and reported by each GEMM.
 */
static struct {
    pthread_mutex_t lock;
    int tried;
    void *lib;
    char why[512];
    __typeof__(&CLBlastSgemm) sgemm;
    __typeof__(&CLBlastDgemm) dgemm;
    __typeof__(&CLBlastClearCache) clear_cache;
} blast = {PTHREAD_MUTEX_INITIALIZER, 0, NULL, "", NULL, NULL, NULL};

static void blast_load(void)
{
    const char *name = getenv("CLFLEET_CLBLAST_LIBRARY");
    if (!name || !name[0])
        name = "libclblast.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(blast.why, sizeof blast.why, "cannot load '%.200s': %.250s", name,
                 e ? e : "unknown error");
        return;
    }
    /* POSIX's way from void * to a function pointer (dlsym's rationale). */
    *(void **)&blast.sgemm = dlsym(lib, "CLBlastSgemm");
    *(void **)&blast.dgemm = dlsym(lib, "CLBlastDgemm");
    *(void **)&blast.clear_cache = dlsym(lib, "CLBlastClearCache");
    if (!blast.sgemm || !blast.dgemm || !blast.clear_cache) {
        snprintf(blast.why, sizeof blast.why, "'%.200s' lacks CLBlastSgemm, CLBlastDgemm or "
                 "CLBlastClearCache (not clBLAST?)", name);
        blast.sgemm = NULL, blast.dgemm = NULL, blast.clear_cache = NULL;
        dlclose(lib);
        return;
    }
    blast.lib = lib;
}

clf_status clf__gemm_blast_load(const char *fn)
{
    pthread_mutex_lock(&blast.lock);
    if (!blast.tried) {
        blast.tried = 1;
        blast_load();
        if (blast.lib)
            clf__log(CLF_LOG_INFO, "GEMM: clBLAST loaded");
        else
            clf__log(CLF_LOG_INFO, "GEMM: running without clBLAST: %s", blast.why);
    }
    int ok = blast.lib != NULL;
    pthread_mutex_unlock(&blast.lock);
    if (ok)
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_UNSUPPORTED,
                     "%s: running without clBLAST: %s (install libclblast1, or name it in "
                     "CLFLEET_CLBLAST_LIBRARY)",
                     fn ? fn : "GEMM", blast.why);
}

/* ---- clBLAST's caches ------------------------------------------------------------------ */

/*
 * clBLAST keeps every program it builds, keyed by context and device, until
 * CLBlastClearCache(); the programs hold their contexts (and sub-devices)
 * alive. Clearing is process-wide, so it waits until no live fleet has run a
 * GEMM: a fleet counts here from its first GEMM until it is destroyed.
 *
 * clBLAST 1.5 is not safe to enter from two threads at once: first calls on
 * two devices at the same time crash inside clblast::Database::Database
 * (seen here in a few percent of runs, as CLBlastUnexpectedError with
 * std::bad_alloc or as a segmentation fault in the copy of its tables). Every
 * call into clBLAST therefore holds blast_lock. A GEMM call only enqueues
 * (after building its kernels the first time), so the devices still compute
 * at once; what is serialised is the host side of the calls.
 */
static pthread_mutex_t blast_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t blast_fleets;

/*
 * A fleet that ran a GEMM holds a registration in the fleet's state registry (core/state.c):
 * made on its first GEMM (blast_fleets counts it), finalized at its teardown: clBLAST caches
 * programs of the contexts it saw, and once no live fleet has run a GEMM the caches go. The
 * state itself is only a marker: GEMM keeps nothing else on the fleet.
 */
static void *gemm_state_create(clf_fleet *fl)
{
    (void)fl;
    static char marker;
    pthread_mutex_lock(&blast_lock); /* under the fleet's lock: nothing takes them reversed */
    blast_fleets++;
    pthread_mutex_unlock(&blast_lock);
    return &marker;
}

static void gemm_state_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    (void)state;
    pthread_mutex_lock(&blast_lock);
    if (--blast_fleets == 0)
        blast.clear_cache(); /* a fleet ran a GEMM: clBLAST is loaded */
    pthread_mutex_unlock(&blast_lock);
}

static const clf__state_key gemm_key = {"gemm", CLF__STATE_BEFORE_XFER, gemm_state_create,
                                        gemm_state_fini};

clf_status clf__gemm_blast_register(clf_fleet *fl)
{
    if (!clf__fleet_state(fl, &gemm_key))
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "GEMM: out of memory");
    return CLF_SUCCESS;
}

#define E(x)                                                                                       \
    {                                                                                              \
        x, #x                                                                                      \
    }
static const struct {
    CLBlastStatusCode code;
    const char *name;
} blast_codes[] = {
    E(CLBlastNotImplemented),       E(CLBlastInvalidMatrixA),      E(CLBlastInvalidMatrixB),
    E(CLBlastInvalidMatrixC),       E(CLBlastInvalidDimension),    E(CLBlastInvalidLeadDimA),
    E(CLBlastInvalidLeadDimB),      E(CLBlastInvalidLeadDimC),     E(CLBlastInsufficientMemoryA),
    E(CLBlastInsufficientMemoryB),  E(CLBlastInsufficientMemoryC), E(CLBlastInsufficientMemoryTemp),
    E(CLBlastInvalidLocalMemUsage), E(CLBlastNoDoublePrecision),   E(CLBlastDatabaseError),
    E(CLBlastUnknownError),         E(CLBlastUnexpectedError),
};
#undef E

static const char *blast_status_name(CLBlastStatusCode s)
{
    for (size_t i = 0; i < CLF__ARRAY_LEN(blast_codes); i++)
        if (blast_codes[i].code == s)
            return blast_codes[i].name;
    return "CLBlast error";
}

/* A failed clBLAST call: its codes above -1000 are OpenCL's. */
static clf_status blast_fail(CLBlastStatusCode s, const char *call, const struct clf__device *d)
{
    if (s == CLBlastOpenCLBuildProgramFailure)
        return clf__fail(CLF_ERROR_BUILD,
                         "%s: clBLAST could not build its kernels on device %zu '%s' "
                         "(CL_BUILD_PROGRAM_FAILURE)",
                         call, d->index, d->info.name);
    if (s > -1000)
        return clf__cl_fail((cl_int)s, call, d);
    return clf__fail(s == CLBlastNoDoublePrecision ? CLF_ERROR_UNSUPPORTED : CLF_ERROR_OPENCL,
                     "%s failed: %s (%d) on device %zu '%s'", call, blast_status_name(s), (int)s,
                     d->index, d->info.name);
}

/* ---- one run ---------------------------------------------------------------------------- */

/* One block of C in flight on a device. */
typedef struct gemm_chunk {
    uint64_t off, len; /* rows (SPLIT_M) or columns (SPLIT_N) of C */
    int slot;          /* double buffering */
    cl_event w[2];     /* uploads: the sliced operand, then C (beta != 0) */
    uint64_t wbytes[2];
    size_t nw;
    cl_event bar;  /* on the compute queue: after the uploads */
    cl_event gemm; /* clBLAST's last kernel */
    cl_event rd;   /* C back to the host */
    uint64_t rbytes;
} gemm_chunk;

/* The blocks of chunk [off, off + len): the sliced operand's and C's, and the GEMM's m, n. */
static void chunk_blocks(const clf__gemm_run *G, uint64_t off, uint64_t len, clf__gemm_block *s,
                         clf__gemm_block *c, size_t *m, size_t *n)
{
    const clf__gemm_args *g = &G->g;
    size_t o = (size_t)off, l = (size_t)len;
    if (!G->split_n) { /* rows of C and of op(A) */
        *c = clf__gemm_block_of(g->layout, g->ldc, o, l, 0, g->n);
        *s = g->ta ? clf__gemm_block_of(g->layout, g->lda, 0, g->k, o, l)
                   : clf__gemm_block_of(g->layout, g->lda, o, l, 0, g->k);
        *m = l;
        *n = g->n;
    } else { /* columns of C and of op(B) */
        *c = clf__gemm_block_of(g->layout, g->ldc, 0, g->m, o, l);
        *s = g->tb ? clf__gemm_block_of(g->layout, g->ldb, o, l, 0, g->k)
                   : clf__gemm_block_of(g->layout, g->ldb, 0, g->k, o, l);
        *m = g->m;
        *n = l;
    }
}

static cl_int write_block(cl_command_queue q, cl_mem buf, const void *host, size_t es,
                          const clf__gemm_block *b, cl_event *ev)
{
    const char *p = (const char *)host + b->origin * es;
    if (b->lines == 1 || b->pitch == b->len)
        return clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, b->lines * b->len * es, p, 0, NULL, ev);
    size_t zero[3] = {0, 0, 0}, region[3] = {b->len * es, b->lines, 1};
    return clEnqueueWriteBufferRect(q, buf, CL_FALSE, zero, zero, region, b->len * es, 0,
                                    b->pitch * es, 0, p, 0, NULL, ev);
}

static cl_int read_block(cl_command_queue q, cl_mem buf, void *host, size_t es,
                         const clf__gemm_block *b, const cl_event *wait, cl_event *ev)
{
    char *p = (char *)host + b->origin * es;
    if (b->lines == 1 || b->pitch == b->len)
        return clEnqueueReadBuffer(q, buf, CL_FALSE, 0, b->lines * b->len * es, p, 1, wait, ev);
    size_t zero[3] = {0, 0, 0}, region[3] = {b->len * es, b->lines, 1};
    return clEnqueueReadBufferRect(q, buf, CL_FALSE, zero, zero, region, b->len * es, 0,
                                   b->pitch * es, 0, p, 1, wait, ev);
}

static clf_status worker_fail(clf__gemm_worker *w, clf_status st)
{
    if (w->st == CLF_SUCCESS) {
        w->st = st;
        snprintf(w->err, sizeof w->err, "%s", clf_last_error());
    }
    return st;
}

static clf_status device_alloc(clf__gemm_worker *w, size_t bytes, cl_mem *out)
{
    if (w->mem_now + bytes > w->budget)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE,
                         "device %zu '%s': %zu more bytes would exceed its budget of %llu "
                         "(holding %llu)",
                         w->d->index, w->d->info.name, bytes, (unsigned long long)w->budget,
                         (unsigned long long)w->mem_now);
    cl_int err;
    *out = clCreateBuffer(w->d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clCreateBuffer", w->d);
    w->mem_now += bytes;
    if (w->mem_now > w->mem_peak)
        w->mem_peak = w->mem_now;
    clf__metrics_alloc(w->G->fl, w->d->index, bytes);
    return CLF_SUCCESS;
}

static void device_release(clf__gemm_worker *w, cl_mem *m, size_t bytes)
{
    if (*m) {
        clReleaseMemObject(*m);
        w->mem_now -= bytes;
        clf__metrics_free(w->G->fl, w->d->index, bytes);
        *m = NULL;
    }
}

/* A slot buffer of at least bytes; grown only when a block needs more (its last user has
 * completed: a slot is reused two blocks later, after that block's read). */
static clf_status ensure(clf__gemm_worker *w, cl_mem *m, size_t *cap, size_t bytes)
{
    if (*m && *cap >= bytes)
        return CLF_SUCCESS;
    device_release(w, m, *cap);
    *cap = 0;
    clf_status st = device_alloc(w, bytes, m);
    if (st == CLF_SUCCESS)
        *cap = bytes;
    return st;
}

/* The whole operand, once, before the first block (a device that gets none skips it). */
static clf_status upload_whole(clf__gemm_worker *w)
{
    clf__gemm_run *G = w->G;
    clf_status st = device_alloc(w, (size_t)G->whole_bytes, &w->whole);
    if (st != CLF_SUCCESS)
        return st;
    cl_int err =
        write_block(w->d->transfer, w->whole, G->whole_host, G->g.es, &G->whole, &w->whole_ev);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clEnqueueWriteBuffer (GEMM operand)", w->d);
    w->rep.bytes_to_device += G->whole_bytes;
    return CLF_SUCCESS;
}

/* The block's part of the sliced operand, and of C when beta != 0, on the transfer queue. */
static clf_status chunk_inputs(clf__gemm_worker *w, gemm_chunk *c)
{
    clf__gemm_run *G = w->G;
    const clf__gemm_args *g = &G->g;
    clf__gemm_block sb, cbk;
    size_t mc, nc;
    chunk_blocks(G, c->off, c->len, &sb, &cbk, &mc, &nc);
    int s = c->slot;
    clf_status st;
    CLF__TRY(st, ensure(w, &w->sl[s], &w->sl_cap[s], sb.lines * sb.len * g->es));
    CLF__TRY(st, ensure(w, &w->cb[s], &w->cb_cap[s], cbk.lines * cbk.len * g->es));
    const void *src = G->split_n ? g->b : g->a;
    cl_int err = write_block(w->d->transfer, w->sl[s], src, g->es, &sb, &c->w[c->nw]);
    if (err != CL_SUCCESS)
        CLF__TRY(st, clf__cl_fail(err, "clEnqueueWriteBuffer (GEMM block)", w->d));
    c->wbytes[c->nw++] = sb.lines * sb.len * g->es;
    if (g->beta != 0.0) {
        err = write_block(w->d->transfer, w->cb[s], g->c, g->es, &cbk, &c->w[c->nw]);
        if (err != CL_SUCCESS)
            CLF__TRY(st, clf__cl_fail(err, "clEnqueueWriteBuffer (GEMM block of C)", w->d));
        c->wbytes[c->nw++] = cbk.lines * cbk.len * g->es;
    }
    clFlush(w->d->transfer);
out:
    return st;
}

/* clBLAST on the compute queue, after the block's uploads; then C's block back. */
static clf_status chunk_gemm(clf__gemm_worker *w, gemm_chunk *c)
{
    clf__gemm_run *G = w->G;
    const clf__gemm_args *g = &G->g;
    clf__gemm_block sb, cbk;
    size_t mc, nc;
    chunk_blocks(G, c->off, c->len, &sb, &cbk, &mc, &nc);
    int s = c->slot;
    cl_command_queue q = w->d->compute;
    cl_int err;
    /* With beta == 0 the device's block of C is left as allocated: clBLAST's kernels store
     * alpha * AB without reading C when beta is zero, as BLAS does. clBLAST takes no wait
     * list: a barrier orders its kernels after the uploads. */
    cl_event wait[3];
    cl_uint nwait = 0;
    for (size_t i = 0; i < c->nw; i++)
        wait[nwait++] = c->w[i];
    wait[nwait++] = w->whole_ev;
    err = clEnqueueBarrierWithWaitList(q, nwait, wait, &c->bar);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clEnqueueBarrierWithWaitList", w->d);
    cl_mem abuf = G->split_n ? w->whole : w->sl[s], bbuf = G->split_n ? w->sl[s] : w->whole;
    size_t a_ld = G->split_n ? G->whole.len : sb.len, b_ld = G->split_n ? sb.len : G->whole.len;
    CLBlastLayout lay = g->layout == CLF_ROW_MAJOR ? CLBlastLayoutRowMajor : CLBlastLayoutColMajor;
    CLBlastTranspose ta = g->ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = g->tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode bs;
    pthread_mutex_lock(&blast_lock);
    if (g->dbl)
        bs = blast.dgemm(lay, ta, tb, mc, nc, g->k, g->alpha, abuf, 0, a_ld, bbuf, 0, b_ld,
                          g->beta, w->cb[s], 0, cbk.len, &q, &c->gemm);
    else
        bs = blast.sgemm(lay, ta, tb, mc, nc, g->k, (float)g->alpha, abuf, 0, a_ld, bbuf, 0, b_ld,
                          (float)g->beta, w->cb[s], 0, cbk.len, &q, &c->gemm);
    pthread_mutex_unlock(&blast_lock);
    if (bs != CLBlastSuccess) {
        c->gemm = NULL;
        return blast_fail(bs, g->dbl ? "CLBlastDgemm" : "CLBlastSgemm", w->d);
    }
    clFlush(q);
    return CLF_SUCCESS;
}

static clf_status chunk_read(clf__gemm_worker *w, gemm_chunk *c)
{
    clf__gemm_run *G = w->G;
    clf__gemm_block sb, cbk;
    size_t mc, nc;
    chunk_blocks(G, c->off, c->len, &sb, &cbk, &mc, &nc);
    cl_int err =
        read_block(w->d->transfer, w->cb[c->slot], G->g.c, G->g.es, &cbk, &c->gemm, &c->rd);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clEnqueueReadBuffer (GEMM block of C)", w->d);
    c->rbytes = cbk.lines * cbk.len * G->g.es;
    clFlush(w->d->transfer);
    return CLF_SUCCESS;
}

static void chunk_release(gemm_chunk *c)
{
    for (size_t i = 0; i < c->nw; i++)
        clReleaseEvent(c->w[i]);
    if (c->bar)
        clReleaseEvent(c->bar);
    if (c->gemm)
        clReleaseEvent(c->gemm);
    if (c->rd)
        clReleaseEvent(c->rd);
    int slot = c->slot;
    memset(c, 0, sizeof *c);
    c->slot = slot;
}

static double rec_of(clf__rec *r, unsigned kind, cl_event e, const gemm_chunk *c, uint64_t bytes)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->bytes = bytes;
    if (c) {
        r->a0 = (int64_t)c->off;
        r->a1 = (int64_t)c->len;
    }
    clf__event_profile(e, &r->t0, &r->t1);
    return r->t1 > r->t0 ? (double)(r->t1 - r->t0) * 1e-9 : 0.0;
}

/* Wait for a block, account for it (report and metrics), and tell the partitioner. */
static clf_status chunk_finish(clf__gemm_worker *w, gemm_chunk *c)
{
    clf__gemm_run *G = w->G;
    cl_event all[6];
    size_t n = 0;
    for (size_t i = 0; i < c->nw; i++)
        all[n++] = c->w[i];
    all[n++] = c->bar;
    all[n++] = c->gemm;
    all[n++] = c->rd;
    cl_int err = clWaitForEvents((cl_uint)n, all);
    for (size_t i = 0; i < n; i++) {
        cl_int s = CL_COMPLETE;
        clGetEventInfo(all[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
        if (s < 0)
            err = s;
    }
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "GEMM block execution", w->d);
    clf__rec rec[5];
    size_t nr = 0;
    /* clBLAST may run several kernels (padding, transposition) and returns the last one's
     * event: its time on the device runs from the barrier's end, or from when that kernel
     * was queued if later (a first call builds its kernels on the host meanwhile; its
     * other kernels were queued just before it), to that kernel's end. */
    uint64_t b0, b1;
    cl_ulong queued = 0;
    clf__rec *k = &rec[nr++];
    rec_of(k, CLF__REC_KERNEL, c->gemm, c, 0);
    k->name = G->g.dbl ? "dgemm" : "sgemm";
    if (clf__event_profile(c->bar, &b0, &b1) && b1 <= k->t0)
        k->t0 = b1;
    if (clGetEventProfilingInfo(c->gemm, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued,
                                NULL) == CL_SUCCESS &&
        queued > k->t0 && queued <= k->t1)
        k->t0 = queued;
    w->rep.busy_s += k->t1 > k->t0 ? (double)(k->t1 - k->t0) * 1e-9 : 0.0;
    for (size_t i = 0; i < c->nw; i++)
        w->rep.to_device_s += rec_of(&rec[nr++], CLF__REC_TO_DEVICE, c->w[i], c, c->wbytes[i]);
    w->rep.from_device_s += rec_of(&rec[nr++], CLF__REC_FROM_DEVICE, c->rd, c, c->rbytes);
    if (!w->whole_counted) { /* complete: the first block's barrier waited for it */
        w->rep.to_device_s +=
            rec_of(&rec[nr++], CLF__REC_TO_DEVICE, w->whole_ev, NULL, G->whole_bytes);
        w->whole_counted = 1;
    }
    clf__metrics_record(G->fl, w->d->index, rec, nr);
    for (size_t i = 0; i < c->nw; i++)
        w->rep.bytes_to_device += c->wbytes[i];
    w->rep.bytes_from_device += c->rbytes;
    w->rep.units += c->len;
    w->rep.items += c->len * G->other;
    w->rep.chunks++;
    w->rep.finish_s = clf__now() - G->t0;
    uint64_t len = c->len;
    chunk_release(c);
    clf__part_complete(G->part, len);
    return CLF_SUCCESS;
}

/* The next block for this device; a look-ahead one only while plenty is left (near the
 * end, a block held here while this device is busy could have run on an idle one). */
static int next_chunk(clf__gemm_worker *w, gemm_chunk *c, uint64_t held)
{
    clf__gemm_run *G = w->G;
    pthread_mutex_lock(&G->lock);
    int stop = G->abort;
    pthread_mutex_unlock(&G->lock);
    if (stop)
        return 0;
    if (held) {
        uint64_t free_units;
        clf__part_counts(G->part, &free_units, NULL, NULL);
        if (free_units <= (uint64_t)G->ndev * held)
            return 0;
    }
    return clf__part_next(G->part, w->pos, &c->off, &c->len);
}

static clf_status run_chunks(clf__gemm_worker *w)
{
    clf__gemm_run *G = w->G;
    gemm_chunk c[2];
    memset(c, 0, sizeof c);
    c[1].slot = 1;
    clf_status st = CLF_SUCCESS;
    int cur = 0, have = next_chunk(w, &c[0], 0);
    if (!have)
        return CLF_SUCCESS;
    w->t_start = clf__now() - G->t0;
    CLF__TRY(st, upload_whole(w));
    CLF__TRY(st, chunk_inputs(w, &c[0]));
    while (have) {
        gemm_chunk *now = &c[cur], *nxt = &c[cur ^ 1];
        CLF__TRY(st, chunk_gemm(w, now));
        /* The next block's upload goes before this block's read on the in-order
         * transfer queue: it moves while this block computes. */
        int more = next_chunk(w, nxt, now->len);
        if (more)
            CLF__TRY(st, chunk_inputs(w, nxt));
        CLF__TRY(st, chunk_read(w, now));
        CLF__TRY(st, chunk_finish(w, now));
        if (!more && (more = next_chunk(w, nxt, 0)) != 0)
            CLF__TRY(st, chunk_inputs(w, nxt));
        have = more;
        cur ^= 1;
    }
out:
    if (st != CLF_SUCCESS) {
        worker_fail(w, st);
        clFinish(w->d->compute);
        clFinish(w->d->transfer);
        chunk_release(&c[0]);
        chunk_release(&c[1]);
    }
    return st;
}

void *clf__gemm_worker_main(void *arg)
{
    clf__gemm_worker *w = arg;
    if (run_chunks(w) != CLF_SUCCESS) {
        w->rep.failed = 1;
        pthread_mutex_lock(&w->G->lock);
        w->G->abort = 1;
        pthread_mutex_unlock(&w->G->lock);
    }
    return NULL;
}

void clf__gemm_worker_fini(clf__gemm_worker *w)
{
    if (w->whole_ev)
        clReleaseEvent(w->whole_ev);
    if (!w->d)
        return;
    device_release(w, &w->whole, (size_t)w->G->whole_bytes);
    for (int s = 0; s < 2; s++) {
        device_release(w, &w->sl[s], w->sl_cap[s]);
        device_release(w, &w->cb[s], w->cb_cap[s]);
    }
}

#endif /* HAVE_CLBLAST */

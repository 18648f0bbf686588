/*
 * The device side of the multi-device GEMM (gemm.c plans it): the GEMM's data plane of the
 * chunk executor (lib/exec/exec.h), whose workers (worker.c) drive every device on its
 * persistent thread, with look-ahead, stealing, and a failed device's blocks re-queued for
 * the others. A chunk is a block of rows (or columns) of C. The operand that every block
 * needs goes to a device once, when it takes its first block; for each block the matching
 * part of the other operand (and of C when beta != 0) moves on the transfer queue while the
 * previous block's clBLAST call runs on the compute queue, then the block of C comes back.
 * Blocks move with rectangular transfers, so the user's leading dimensions never reach the
 * device and the elements past a row's end are never touched.
 */
#include "blas.h"

#include <stdatomic.h>
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
 * A fleet that ran a GEMM holds a registration in the fleet's state registry (core/device.c):
 * made on its first GEMM (blast_fleets counts it), finalized at its teardown: clBLAST caches
 * programs of the contexts it saw, and once no live fleet has run a GEMM the caches go. The
 * state is whether the fleet's first GEMM of each precision was announced: clBLAST compiles
 * its kernels then (seconds; 10.7 s was seen on PoCL), per context and precision.
 */
typedef struct gemm_state {
    atomic_int noted[2]; /* [dbl] */
} gemm_state;

static void *gemm_state_create(clf_fleet *fl)
{
    (void)fl;
    gemm_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_lock(&blast_lock); /* under the fleet's lock: nothing takes them reversed */
    blast_fleets++;
    pthread_mutex_unlock(&blast_lock);
    return s;
}

static void gemm_state_fini(clf_fleet *fl, void *state)
{
    (void)fl;
    free(state);
    pthread_mutex_lock(&blast_lock);
    if (--blast_fleets == 0)
        blast.clear_cache(); /* a fleet ran a GEMM: clBLAST is loaded */
    pthread_mutex_unlock(&blast_lock);
}

static const clf__state_key gemm_key = {"gemm", CLF__STATE_BEFORE_XFER, gemm_state_create,
                                        gemm_state_fini};

clf_status clf__gemm_blast_register(clf_fleet *fl, const char *call, int dbl)
{
    gemm_state *s = clf__fleet_state(fl, &gemm_key);
    if (!s)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "GEMM: out of memory");
    /* At info, as the first compile of a program (core/program.c): nothing is wrong. */
    if (!atomic_exchange(&s->noted[dbl != 0], 1))
        clf__log(CLF_LOG_INFO,
                 "%s: the fleet's first %s GEMM: clBLAST compiles its kernels for each device "
                 "first, which can take seconds (10 s on a CPU); later calls reuse them",
                 call, dbl ? "double-precision" : "single-precision");
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

/* A failed clBLAST call: its codes above -1000 are OpenCL's (counted as the device's, for
 * the decision whether it is at fault). */
static clf_status blast_fail(CLBlastStatusCode s, const char *call, clf__worker *w)
{
    const struct clf__device *d = w->d;
    if (s == CLBlastOpenCLBuildProgramFailure)
        return clf__fail(CLF_ERROR_BUILD,
                         "%s: clBLAST could not build its kernels on device %zu '%s' "
                         "(CL_BUILD_PROGRAM_FAILURE)",
                         call, d->index, d->info.name);
    if (s > -1000)
        return clf__worker_cl_fail(w, (cl_int)s, call, 0);
    return clf__fail(s == CLBlastNoDoublePrecision ? CLF_ERROR_UNSUPPORTED : CLF_ERROR_OPENCL,
                     "%s failed: %s (%d) on device %zu '%s'", call, blast_status_name(s), (int)s,
                     d->index, d->info.name);
}

/* ---- the GEMM's data plane --------------------------------------------------------------- */

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

/* The worker's commands through the command path (core/cmd.c): it accounts for them itself
 * (worker.c); fault rule `call` applies first. */
static clf__cmd block_cmd(clf__worker *w, cl_command_queue q, unsigned flags, unsigned call)
{
    return clf__worker_cmd(CLF__CMD(w->L->fl, w->d->index, q, NULL), flags, call);
}

/* Block b between host and buf, as command c (on the transfer queue). */
static clf_status move_block(clf__cmd *c, int to_device, cl_mem buf, const void *host,
                             size_t es, const clf__gemm_block *b)
{
    char *p = (char *)host + b->origin * es;
    if (b->lines == 1 || b->pitch == b->len)
        return to_device ? clf__cmd_write(c, buf, 0, b->lines * b->len * es, p)
                         : clf__cmd_read(c, buf, 0, b->lines * b->len * es, p);
    clf__cmd_box box = {.region = {b->len * es, b->lines, 1},
                        .brow = b->len * es,
                        .hrow = b->pitch * es};
    return clf__cmd_rect(c, to_device, buf, &box, p);
}

/* The worker's buffers: per slot (double buffering) the sliced operand's block and C's
 * block, and the operand every block needs. */
#define SLICE(w, s) (w)->slot[0][s], &(w)->slot_cap[0][s]
#define CBLOCK(w, s) (w)->slot[1][s], &(w)->slot_cap[1][s]
#define WHOLE(w) (w)->slot[2][0], &(w)->slot_cap[2][0]

static clf__gemm_run *run_of(const clf__worker *w)
{
    return w->L->plane_ctx;
}

static clf_status gemm_prepare(clf__worker *w)
{
    (void)w; /* nothing before the first block: a device that gets none sends nothing */
    return CLF_SUCCESS;
}

/* The whole operand, once, before the first block: waited for here (it counts in the
 * device's transfer time and bytes as a broadcast does). */
static clf_status gemm_begin(clf__worker *w)
{
    clf__gemm_run *G = run_of(w);
    clf_status st = clf__worker_buffer(w, &WHOLE(w), (size_t)G->whole_bytes, CL_MEM_READ_WRITE);
    if (st != CLF_SUCCESS)
        return st;
    cl_event ev = NULL;
    clf__cmd o = block_cmd(w, w->d->transfer, CLF__CMD_BLOCKING, CLF__FAULT_WRITE);
    o.ev = &ev;
    if (move_block(&o, 1, w->slot[2][0], G->whole_host, G->g.es, &G->whole) != CLF_SUCCESS)
        return clf__worker_cl_fail(w, o.err, "clEnqueueWriteBuffer (GEMM operand)", o.injected);
    clf__worker_transfer_done(w, ev, 1, G->whole_bytes);
    return CLF_SUCCESS;
}

/* One upload of a block on the transfer queue, as the chunk's next write event. */
static clf_status upload(clf__worker *w, clf__chunk *c, cl_mem m, const void *host,
                         const clf__gemm_block *b, const char *what)
{
    size_t es = run_of(w)->g.es;
    clf__cmd o = block_cmd(w, w->d->transfer, CLF__CMD_NO_FLUSH, CLF__FAULT_WRITE);
    o.ev = &c->ev[c->nwrite];
    if (move_block(&o, 1, m, host, es, b) != CLF_SUCCESS)
        return clf__worker_cl_fail(w, o.err, what, o.injected);
    c->ev_bytes[c->nwrite] = b->lines * b->len * es;
    c->ev_arg[c->nwrite] = 0;
    c->bytes_in += c->ev_bytes[c->nwrite];
    c->nwrite++;
    return CLF_SUCCESS;
}

/* The block's part of the sliced operand, and of C when beta != 0 (all early: no upload
 * depends on an earlier block's results). */
static clf_status gemm_chunk_in(clf__worker *w, clf__chunk *c, int which)
{
    clf__gemm_run *G = run_of(w);
    const clf__gemm_args *g = &G->g;
    if (!(which & CLF__WRITE_EARLY))
        return CLF_SUCCESS;
    clf__gemm_block sb, cbk;
    size_t mc, nc;
    chunk_blocks(G, c->off, c->len, &sb, &cbk, &mc, &nc);
    int s = c->slot;
    clf_status st;
    CLF__TRY(st, clf__worker_buffer(w, &SLICE(w, s), sb.lines * sb.len * g->es,
                                    CL_MEM_READ_WRITE));
    CLF__TRY(st, clf__worker_buffer(w, &CBLOCK(w, s), cbk.lines * cbk.len * g->es,
                                    CL_MEM_READ_WRITE));
    CLF__TRY(st, upload(w, c, w->slot[0][s], G->split_n ? g->b : g->a, &sb,
                        "clEnqueueWriteBuffer (GEMM block)"));
    if (g->beta != 0.0)
        CLF__TRY(st, upload(w, c, w->slot[1][s], g->c, &cbk,
                            "clEnqueueWriteBuffer (GEMM block of C)"));
    clFlush(w->d->transfer);
out:
    return st;
}

/* clBLAST on the compute queue, behind a barrier on the block's uploads (clBLAST takes no
 * wait list). With beta == 0 the device's block of C is left as allocated: clBLAST's
 * kernels store alpha * AB without reading C when beta is zero, as BLAS does. */
static clf_status gemm_run(clf__worker *w, clf__chunk *c)
{
    clf__gemm_run *G = run_of(w);
    const clf__gemm_args *g = &G->g;
    clf__gemm_block sb, cbk;
    size_t mc, nc;
    chunk_blocks(G, c->off, c->len, &sb, &cbk, &mc, &nc);
    int s = c->slot;
    cl_command_queue q = w->d->compute;
    /* An injected execution fault: the block is not computed, and fails when it finishes
     * (worker.c), as a kernel that failed on the device would. */
    c->fault = CLF__FAULT(w->L->fl, w->d->index, CLF__FAULT_EXEC);
    if (c->fault != CL_SUCCESS)
        return CLF_SUCCESS;
    clf__cmd o = block_cmd(w, q, CLF__CMD_NO_FLUSH, CLF__FAULT_ENQUEUE);
    o.what = "GEMM block";
    o.nwait = (cl_uint)c->nwrite;
    o.wait = c->ev;
    o.ev = &c->pre;
    if (clf__cmd_barrier(&o) != CLF_SUCCESS)
        return clf__worker_cl_fail(w, o.err, "clEnqueueBarrierWithWaitList (GEMM block)",
                                   o.injected);
    cl_mem whole = w->slot[2][0], slice = w->slot[0][s];
    cl_mem abuf = G->split_n ? whole : slice, bbuf = G->split_n ? slice : whole;
    size_t a_ld = G->split_n ? G->whole.len : sb.len, b_ld = G->split_n ? sb.len : G->whole.len;
    CLBlastLayout lay = g->layout == CLF_ROW_MAJOR ? CLBlastLayoutRowMajor : CLBlastLayoutColMajor;
    CLBlastTranspose ta = g->ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose tb = g->tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode bs;
    pthread_mutex_lock(&blast_lock); /* one thread in clBLAST at a time (see above) */
    /* clBLAST enqueues on its own, outside the command path: on PoCL's basic device it takes
     * the exec lock for those enqueues alone (core.h). */
    clf__dev_exec_enter(w->L->fl, w->d->index);
    if (g->dbl)
        bs = blast.dgemm(lay, ta, tb, mc, nc, g->k, g->alpha, abuf, 0, a_ld, bbuf, 0, b_ld,
                         g->beta, w->slot[1][s], 0, cbk.len, &q, &c->kernel);
    else
        bs = blast.sgemm(lay, ta, tb, mc, nc, g->k, (float)g->alpha, abuf, 0, a_ld, bbuf, 0, b_ld,
                         (float)g->beta, w->slot[1][s], 0, cbk.len, &q, &c->kernel);
    clf__dev_exec_leave(w->L->fl, w->d->index);
    pthread_mutex_unlock(&blast_lock);
    if (bs != CLBlastSuccess) {
        c->kernel = NULL;
        return blast_fail(bs, g->dbl ? "CLBlastDgemm" : "CLBlastSgemm", w);
    }
    /* clBLAST's kernels bypass the command path: its last one is handed to it here, so that
     * $CLFLEET_SIMULATE holds back its completion (no-op without rules), by the time of all
     * of the call's kernels from the barrier on: clBLAST may pad the blocks and copy C back
     * around its GEMM kernel, and holding back only that last small copy left a simulated
     * 50x slower device 1-2x slower. */
    clf__cmd adopt = CLF__CMD(w->L->fl, w->d->index, q, NULL);
    adopt.ev = &c->kernel;
    clf__cmd_adopt_kernel(&adopt, c->pre);
    clFlush(q);
    return CLF_SUCCESS;
}

/* The block of C back to the host, after clBLAST's last kernel. */
static clf_status gemm_chunk_out(clf__worker *w, clf__chunk *c)
{
    clf__gemm_run *G = run_of(w);
    if (c->fault != CL_SUCCESS)
        return CLF_SUCCESS; /* not computed: nothing to read */
    clf__gemm_block sb, cbk;
    size_t mc, nc;
    chunk_blocks(G, c->off, c->len, &sb, &cbk, &mc, &nc);
    size_t k = c->nwrite + c->nread;
    clf__cmd o = block_cmd(w, w->d->transfer, CLF__CMD_NO_FLUSH, CLF__FAULT_READ);
    o.nwait = 1;
    o.wait = &c->kernel;
    o.ev = &c->ev[k];
    if (move_block(&o, 0, w->slot[1][c->slot], G->g.c, G->g.es, &cbk) != CLF_SUCCESS)
        return clf__worker_cl_fail(w, o.err, "clEnqueueReadBuffer (GEMM block of C)",
                                   o.injected);
    c->ev_bytes[k] = cbk.lines * cbk.len * G->g.es;
    c->ev_arg[k] = 0;
    c->bytes_out += c->ev_bytes[k];
    c->nread++;
    clFlush(w->d->transfer);
    return CLF_SUCCESS;
}

/* After a failure: the block is done when its C came back. Otherwise C on the host is as it
 * was (one read, after the computation), and a re-run reads it again. */
static int gemm_landed(const clf__worker *w, const clf__chunk *c)
{
    (void)w;
    if (!c->kernel || c->nread == 0 || clf__cl_event_status(c->kernel) != CL_COMPLETE)
        return 0;
    return clf__cl_event_status(c->ev[c->nwrite]) == CL_COMPLETE;
}

static void gemm_release(clf__worker *w)
{
    /* Released, not kept for later launches: their sizes follow each call's shapes. */
    for (int s = 0; s < 2; s++) {
        clf__worker_buffer_free(w, &SLICE(w, s));
        clf__worker_buffer_free(w, &CBLOCK(w, s));
    }
    clf__worker_buffer_free(w, &WHOLE(w));
}

static int gemm_lookahead(const clf__launch *L)
{
    (void)L;
    return 1; /* every block has input to move early */
}

/*
 * The largest block a device can hold. It holds the whole operand, and per unit (row or
 * column of C) two slots of the sliced operand's and C's parts; clBLAST's indirect GEMM may
 * copy each operand into a padded temporary, counted as one more of each.
 */
static uint64_t gemm_max_units(const clf__launch *L, const clf_device_info *in, uint64_t budget)
{
    const clf__gemm_run *G = L->plane_ctx;
    uint64_t unit_s = (uint64_t)G->g.k * G->g.es, unit_c = G->other * G->g.es, per_unit;
    if (__builtin_add_overflow(unit_s, unit_c, &per_unit) ||
        __builtin_mul_overflow(per_unit, 3, &per_unit) || G->whole_bytes > in->max_alloc ||
        G->whole_bytes > UINT64_MAX / 2 || 2 * G->whole_bytes > budget)
        return 0;
    uint64_t m = (budget - 2 * G->whole_bytes) / per_unit;
    if (unit_s && in->max_alloc / unit_s < m) /* one slot, one allocation */
        m = in->max_alloc / unit_s;
    if (in->max_alloc / unit_c < m)
        m = in->max_alloc / unit_c;
    return m;
}

const clf__plane clf__gemm_plane = {
    .name = "gemm",
    .prepare = gemm_prepare,
    .begin = gemm_begin,
    .chunk_in = gemm_chunk_in,
    .run = gemm_run,
    .chunk_out = gemm_chunk_out,
    .landed = gemm_landed,
    .release = gemm_release,
    .lookahead = gemm_lookahead,
    .max_units = gemm_max_units,
};

#endif /* HAVE_CLBLAST */

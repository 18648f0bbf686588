/* lib/core: the binary cache, devices, events and tasks, programs, buffers, interop, and
 * the command path. Not installed. */
#ifndef CLFLEET_CORE_H
#define CLFLEET_CORE_H

#include "observe/observe.h"

#include "clext.h"

/* ---- binary cache (cache.c) ---- */

typedef struct clf__cache_key_parts {
    const char *source, *options, *device, *driver, *platform;
    const char *includes; /* clf__include_digest(); NULL (not hashed) for a source without */
} clf__cache_key_parts;

/* key = SHA-256 over the length-prefixed parts (no two inputs share a key). */
void clf__cache_key(unsigned char key[32], const clf__cache_key_parts *p);
/* 1 and a malloc'd binary on a valid hit; 0 on a miss or an invalid entry. */
int clf__cache_load(const char *dir, const unsigned char key[32], unsigned char **bin,
                    size_t *len);
/* As clf__cache_load(); *rejected (when not NULL) is set to 1 when an entry was there but
 * invalid (torn, corrupt, foreign), 0 otherwise (a hit, nothing there, or unreadable). */
int clf__cache_load_ex(const char *dir, const unsigned char key[32], unsigned char **bin,
                       size_t *len, int *rejected);
/* Write atomically (temp file, fsync, rename), mode 0600, dir 0700. Removes the temporary
 * files older than an hour that killed writers left. An empty directory in the entry's place
 * is removed; one that cannot be is reported once per process and the entry not written
 * (CLF_SUCCESS: the cache only saves time). */
clf_status clf__cache_store(const char *dir, const unsigned char key[32],
                            const unsigned char *bin, size_t len);
/* Keep the entries of dir within max bytes: remove the least recently used (oldest
 * modification time: a load touches its entry) until the rest fit, never the entry of keep
 * (the one just stored; NULL: none), which may alone exceed max. Best effort: another
 * process may trim at once, and an entry that cannot be removed is skipped. */
void clf__cache_trim(const char *dir, uint64_t max, const unsigned char keep[32]);
/* Path of the entry for key (malloc'd). */
char *clf__cache_path(const char *dir, const unsigned char key[32]);

/* ---- what a source includes (includes.c) ---- */

/* The digest (hex) of every file the #include directives of source (and the -include files
 * of options) may bring into its build, for the cache key. 0: no include at all (hex is "");
 * 1: hex is set; -1: an include clfleet cannot follow, why says which (the program must not
 * use the binary cache). */
int clf__include_digest(const char *source, const char *options, char hex[65], char *why,
                        size_t whylen);

/* ---- SHA-256 (cache.c, pure) ---- */

typedef struct clf__sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} clf__sha256;

void clf__sha256_init(clf__sha256 *c);
void clf__sha256_update(clf__sha256 *c, const void *data, size_t n);
void clf__sha256_final(clf__sha256 *c, unsigned char out[32]);
void clf__sha256_hex(const unsigned char d[32], char hex[65]);

/* ---- devices and the fleet's references (device.c) ---- */

/*
 * A fleet lives until its last reference goes (OpenCL's model): the caller's, dropped by
 * clf_fleet_destroy(), and one per buffer, program, pipeline and task queue, taken when the
 * child is created and dropped at the very end of its destroy, after everything the destroy
 * needs from the fleet. The last unref tears the fleet down on the calling thread (drains,
 * writes the trace, frees). Objects the fleet itself owns (the collectives' program and
 * scratch buffers) hold none, or it would never go: they clear holds_fleet and give theirs
 * back. Events hold none: the teardown waits for the launches, copies and commands they
 * stand for, and they never touch the fleet afterwards. Thread-safe.
 */
void clf__fleet_ref(clf_fleet *fl);
void clf__fleet_unref(clf_fleet *fl);

/* ---- subsystems' state on a fleet (device.c) ---- */

/*
 * What a layer above core keeps on a fleet lives in a struct of its own, reached through a
 * key the layer defines (a static clf__state_key, whose address names it): the fleet holds
 * (key, state) pairs and none of their internals. clf__fleet_state() returns the state,
 * made on first use by key->create(fl) under the fleet's lock (create must not take that
 * lock, nor ask for another state; NULL from it or from the table's growth: out of memory,
 * and the next call tries again). The fleet's teardown calls clf__fleet_state_fini() once per
 * phase, in this order, after the last reference has gone: each state of that phase gets
 * key->fini(fl, state), the latest made first, then it is forgotten.
 */
typedef enum clf__state_phase {
    CLF__STATE_DRAIN,       /* first: waits for work still queued (launches) */
    CLF__STATE_BEFORE_XFER, /* then, before the transfer layer's own finalizer */
    CLF__STATE_AFTER_XFER,  /* last, after it, before the queues and contexts are released */
    CLF__STATE_LAST = CLF__STATE_AFTER_XFER
} clf__state_phase;

typedef struct clf__state_key {
    const char *name; /* for messages */
    clf__state_phase phase;
    void *(*create)(clf_fleet *fl);
    void (*fini)(clf_fleet *fl, void *state); /* NULL: nothing but forget it */
} clf__state_key;

void *clf__fleet_state(clf_fleet *fl, const clf__state_key *key);
/* The state if made already, else NULL (makes nothing). */
void *clf__fleet_state_find(clf_fleet *fl, const clf__state_key *key);
/* The teardown's finalizers of one phase (the last phase frees the table). */
void clf__fleet_state_fini(clf_fleet *fl, clf__state_phase phase);

/* Query a device's facts (name, memory, PCI address ...). */
clf_status clf__device_query(cl_device_id id, cl_platform_id platform, clf_device_info *info,
                             char **extensions);

/* ---- events (event.c) ---- */

/* Wrap ev (taking the reference) or release it if out is NULL. */
clf_status clf__event_wrap(cl_event ev, clf_event **out);
/* An OpenCL event's execution status (CL_QUEUED .. CL_COMPLETE, or a negative error), or
 * CL_INVALID_EVENT when the query itself fails. */
cl_int clf__cl_event_status(cl_event ev);
/* Take a reference: the event stays valid until a matching clf_event_release(), whoever
 * else releases it. Thread-safe, as is waiting for an event from several threads. */
void clf__event_hold(clf_event *e);

/*
 * A host-side completion: what an event stands for when the host, not a device, completes
 * the work (an asynchronous launch, a copy the host drives, a graph run). Refcounted (the
 * maker's reference until it completes it, each event's, each subscriber's holder's);
 * completed once, with a status and a detail message; waited for by any number of threads;
 * and it tells its subscribers once, when it completes, so that nothing waits in a thread
 * for it (xfer/sync.c sets OpenCL user events that way).
 */
struct clf__completion;
/* The work uses the caller's memory until it completes (a launch's host arrays): a
 * clf_event_release() of its event waits for it first. */
#define CLF__COMPLETION_RELEASE_WAITS 1u
/* One reference, the caller's; flags: CLF__COMPLETION_*. NULL when out of memory. */
struct clf__completion *clf__completion_create(unsigned flags);
void clf__completion_ref(struct clf__completion *c);
void clf__completion_unref(struct clf__completion *c); /* accepts NULL */
/* Record the result (err: the detail message, or NULL) and tell everyone; once only (a second
 * call is ignored). Call it holding no lock a subscriber might take. */
void clf__completion_complete(struct clf__completion *c, clf_status st, const char *err);
/* Block until completed; its status, with its detail message on failure. */
clf_status clf__completion_wait(struct clf__completion *c);
/* Without blocking: 1 when completed successfully. */
int clf__completion_done_ok(struct clf__completion *c);
/* Call fn(arg, status) once c completes, or at once when it has: in the completing thread,
 * outside c's lock, so fn must not block. Fails only for memory (fn is then never called). */
clf_status clf__completion_notify(struct clf__completion *c,
                                  void (*fn)(void *arg, clf_status st), void *arg);
/* A new clf_event for c (takes the caller's reference; on failure waits for c, which may
 * use the caller's memory, and drops it). */
clf_status clf__event_wrap_completion(struct clf__completion *c, clf_event **out);
/* An event holding the caller's reference to c, or NULL when out of memory (then nothing is
 * waited for: for a caller that can still undo what c stands for). */
clf_event *clf__event_of_completion(struct clf__completion *c);

/* Wait on the host for e; safe from any thread, and while others wait for it too. */
clf_status clf__event_wait_host(clf_event *e);
/* Set a user event from the result of the event it stands for; releases it. */
void clf__user_event_finish(cl_event uev, cl_int status);
/* Without blocking: 1 when e has completed successfully, 0 when it has not completed yet or
 * failed (a waiter then gets its error). */
int clf__event_done(clf_event *e);

/* ---- the per-device ops table for driver quirks (devops.c) ---- */

/* Choose each device's table (and set up its exec lock) once, at fleet creation, after the
 * devices' facts are known; clf__devops_fini() at the teardown, after every enqueue. */
void clf__devops_init(clf_fleet *fleet);
void clf__devops_fini(clf_fleet *fleet);
/* Device dev's table; the default table before clf__devops_init() or for no such device. */
const struct clf__devops *clf__devops(const clf_fleet *fleet, size_t dev);

/* The device's exec lock, through its table (PoCL's basic: devops.c): every enqueue to such
 * a device holds it for that one call: the command path does (cmd.c), and code that
 * enqueues through a library (clBLAST) takes it around that call alone. Never held across
 * a wait for anything (a chunk, an event, another thread or device): a thread holding it
 * while it waited for work that another thread's enqueue to the device would finish
 * deadlocked (a launch's worker held it while waiting for its next chunk; a copy held both
 * devices' locks while it waited for its wait list). No-ops for other devices. */
void clf__dev_exec_enter(clf_fleet *fleet, size_t device);
void clf__dev_exec_leave(clf_fleet *fleet, size_t device);

/* clFinish() on each of the device's queues (the caller's too, once made); the first error. */
static inline cl_int clf__device_finish_queues(struct clf__device *d)
{
    cl_int err = clFinish(d->compute);
    if (err == CL_SUCCESS)
        err = clFinish(d->transfer);
    if (err == CL_SUCCESS)
        err = clFinish(d->copyq);
    cl_command_queue user = atomic_load(&d->user);
    if (err == CL_SUCCESS && user)
        err = clFinish(user);
    return err;
}
/* ---- the command path (cmd.c) ---- */

/*
 * Every command clfleet enqueues on a fleet device's queue goes through these, one entry per
 * command kind (tools/cmdpath.sh checks it). Each: on a device whose table says
 * !wait_list_ok (devops.c) waits for the wait list on the host and enqueues with none, so that
 * the command runs inside its enqueue; holds the device's exec lock while enqueueing; flushes
 * the queue; records a failure with the device (CLF_ERROR_OPENCL); counts the command in the
 * metrics and the trace on its queue's track. Never blocking unless CLF__CMD_BLOCKING (below):
 * host memory must stay valid until the command completes, as for clEnqueue*(..., CL_FALSE).
 * The caller must not hold the device's exec lock.
 *
 * What every command shares is one small struct, made by CLF__CMD() with the defaults and
 * then given what differs, by name:
 *
 *     clf__cmd c = CLF__CMD(fl, dev, d->transfer, "halo");
 *     c.nwait = 1; c.wait = &prev; c.ev = &ev;
 *     st = clf__cmd_write(&c, buf, off, size, host);
 *
 * The operands of the command's kind stay parameters.
 */
enum {
    CLF__CMD_NO_METRICS = 1u << 0, /* the caller accounts for the command or the memory */
    CLF__CMD_NO_FLUSH = 1u << 1,   /* the caller flushes the queue after a batch */
    CLF__CMD_BLOCKING = 1u << 2,   /* returns once the command completed (CL_TRUE) */
    CLF__CMD_FAULT = 1u << 4,      /* apply fault rule `fault` (CLF__FAULT_*) first */
    CLF__CMD_NO_FAULT = 1u << 5    /* no fault rule, and no failed-device check (below) */
};
/*
 * Without CLF__CMD_FAULT or CLF__CMD_NO_FAULT, a command gets the fault class of its kind, so
 * that $CLFLEET_FAULT_INJECT reaches every subsystem (task queues, pipelines, collectives)
 * without each naming one: a kernel is an enqueue then an exec call, a write or fill a write,
 * a read a read, a buffer creation an alloc, a map a read or write by its flags; markers,
 * barriers, unmaps and releases have none. Such a command on a device marked failed
 * (clf__device_failed()) fails with CLF_ERROR_DEVICE_FAILED, naming the device, until
 * clf_device_readmit(). Callers that account for faults themselves opt out: the launch
 * executor (it names its own classes and leaves failed devices out when it starts),
 * clf_buffer_* (the buffer class only), and the transports (clf_copy() checks both devices
 * once, clf__cmd_check()).
 */
typedef struct clf__cmd {
    clf_fleet *fl;
    size_t dev;           /* the fleet device the command runs on */
    cl_command_queue q;   /* one of its queues (unused by buffer and kernel creation) */
    const char *what;     /* names the command in errors; a kernel's name on the timeline */
    cl_uint nwait;        /* the wait list, as in OpenCL */
    const cl_event *wait;
    cl_event *ev;         /* optional: receives the command's event, as in OpenCL */
    unsigned flags;       /* CLF__CMD_* */
    unsigned fault;       /* with CLF__CMD_FAULT: the call a $CLFLEET_FAULT_INJECT rule can fail */
    cl_int err;           /* out: after a failure, the failed call's status (the driver's or an
                           * injected one); the failure is recorded with the device either way */
    int injected;         /* out: err came from a fault rule (the error message says so) */
} clf__cmd;

/* A command on fleet fl's device dev, queue q, named what; no wait list, no event, defaults. */
#define CLF__CMD(fl_, dev_, q_, what_)                                                         \
    ((clf__cmd){.fl = (fl_), .dev = (dev_), .q = (q_), .what = (what_)})

/* A box between host memory and a buffer: clEnqueue{Write,Read}BufferRect's origins and
 * region in bytes, rows, slices; pitches of 0 are tight, as in OpenCL. */
typedef struct clf__cmd_box {
    size_t borigin[3], horigin[3], region[3];
    size_t brow, bslice, hrow, hslice;
} clf__cmd_box;

/* What a command of fault class call (CLF__FAULT_*) on device dev does first: fail with
 * CLF_ERROR_DEVICE_FAILED when the device is marked failed, else apply the fault rules
 * (CLF_ERROR_OPENCL with the injected status, recorded with the device); what names the
 * caller's operation in the error. For operations made of several commands (clf_copy()). */
clf_status clf__cmd_check(clf_fleet *fl, size_t dev, unsigned call, const char *what);

/* A kernel; the timeline names it c->what, with the first dimension's offset and size. */
clf_status clf__cmd_kernel(clf__cmd *c, cl_kernel k, cl_uint dims, const size_t *off,
                           const size_t *gsz, const size_t *lsz);
/* size bytes from host to buf at off, counted as to-device. */
clf_status clf__cmd_write(clf__cmd *c, cl_mem buf, size_t off, size_t size, const void *host);
/* size bytes from buf at off to host, counted as from-device. */
clf_status clf__cmd_read(clf__cmd *c, cl_mem buf, size_t off, size_t size, void *host);
/* A box to (to_device) or from buf, counted as to- or from-device region[0] x [1] x [2]
 * bytes; host is written only when !to_device (one entry for both directions: the callers
 * pick the direction at run time). */
clf_status clf__cmd_rect(clf__cmd *c, int to_device, cl_mem buf, const clf__cmd_box *box,
                         const void *host);
/* size bytes of buf at off set to the pattern (on the timeline as a fill). */
clf_status clf__cmd_fill(clf__cmd *c, cl_mem buf, const void *pattern, size_t pattern_size,
                         size_t off, size_t size);
/* size bytes from src at soff to dst at doff, counted as a peer copy on device c->dev (the
 * transports pass the receiving device, so that a copy counts once). */
clf_status clf__cmd_copy(clf__cmd *c, cl_mem src, cl_mem dst, size_t soff, size_t doff,
                         size_t size);
/* Map size bytes of buf at off (*ptr: the host address; not counted), and unmap. */
clf_status clf__cmd_map(clf__cmd *c, cl_mem buf, cl_map_flags flags, size_t off, size_t size,
                        void **ptr);
clf_status clf__cmd_unmap(clf__cmd *c, cl_mem buf, void *ptr);
/* A barrier, a marker (not counted: they do no work). */
clf_status clf__cmd_barrier(clf__cmd *c);
clf_status clf__cmd_marker(clf__cmd *c);
/* The last kernel a library enqueued on c->q itself (clBLAST's GEMM), its event *c->ev: on a
 * device with a $CLFLEET_SIMULATE rule, *c->ev is replaced by a marker held back as a kernel
 * of the path would be (observe/simulate.h), so that the simulation reaches GEMM too; *c->ev
 * stays a valid event whatever happens (a failure is logged, not returned). since (or NULL):
 * the command of the queue just before the library's first kernel; the library may enqueue
 * several (clBLAST pads and copies around its GEMM kernel), and all of their time from
 * since's end is held back, not the last kernel's alone. Not counted: the caller counts the
 * kernel. */
clf_status clf__cmd_adopt_kernel(clf__cmd *c, cl_event since);
/* A buffer in device c->dev's context (clCreateBuffer's flags, size and host pointer),
 * counted as device memory in the metrics unless CLF__CMD_NO_METRICS; the "alloc" fault rule
 * applies (CLF__FAULT_ALLOC, or the caller's with CLF__CMD_FAULT). Released by
 * clf__cmd_release() with the same size and CLF__CMD_NO_METRICS flag. */
clf_status clf__cmd_buffer(clf__cmd *c, cl_mem_flags flags, size_t size, void *host,
                           cl_mem *out);
/* Releases mem (NULL: nothing), a buffer of size bytes made by clf__cmd_buffer(), and
 * un-counts it from the metrics unless CLF__CMD_NO_METRICS; no fault rule, never fails. */
void clf__cmd_release(clf__cmd *c, cl_mem mem, size_t size);
/* Kernel name of program p for device dev (not a command: no queue, no fault rule); with
 * range non-NULL, its hidden range parameter set to range[0..dims-1]
 * (clf__program_set_range()). A missing kernel is CLF_ERROR_NOT_FOUND; *cl_err (optional)
 * gets clCreateKernel's status. */
clf_status clf__cmd_kernel_create(clf_fleet *fl, size_t dev, const struct clf_program *p,
                                  const char *name, const size_t *range, unsigned dims,
                                  cl_int *cl_err, cl_kernel *out);

/* ---- checking a call against its kernel (argcheck.c) ---- */

/*
 * Every path that runs a user kernel checks its call with these, before any argument is set
 * or any work queued. `call` names the user's call in messages ("clf_launch",
 * "clf_pipeline_create: stage 1"), kernel the kernel function.
 */
/* Parameter i of kernel k: its address and type qualifiers and its name ("" if unknown);
 * 0 when the driver reports no argument information (then nothing can be checked). */
int clf__kernel_param(cl_kernel k, size_t i, cl_kernel_arg_address_qualifier *aq,
                      cl_kernel_arg_type_qualifier *tq, char *name, size_t n);
/* args[0 .. nargs-1], the parameters first .. first+nargs-1 of kernel k of program p (a
 * pipeline stage's extra arguments come after its input and output: first 2) on device d:
 * the count against CL_KERNEL_NUM_ARGS less clfleet's hidden parameters; per argument its
 * kind against the parameter's qualifiers (a value for a private parameter, CLF_LOCAL for a
 * __local pointer, memory for a __global/__constant one, never written through a const
 * one, BUFFER/ARRAY read only only through a const one), and a value's size and
 * type class (clf_arg.type) against a built-in type name; with locals_set 0, the CLF_LOCAL
 * sizes and the kernel's own local memory against the device's (k then has no __local
 * argument set: CL_KERNEL_LOCAL_MEM_SIZE counts those set). CLF_ERROR_INVALID_ARGUMENT
 * naming the call, kernel, argument and parameter. Kinds outside the list are the caller's
 * to refuse. */
clf_status clf__check_args(const char *call, const struct clf_program *p, const char *kernel,
                           cl_kernel k, const struct clf__device *d, size_t first,
                           const clf_arg *args, size_t nargs, int locals_set);
/* Kernel k's local memory (CL_KERNEL_LOCAL_MEM_SIZE, with the __local arguments set so far)
 * plus unset bytes more against device d's CL_DEVICE_LOCAL_MEM_SIZE. */
clf_status clf__check_local_mem(const char *call, const char *kernel, cl_kernel k,
                                const struct clf__device *d, size_t unset);
/* An NDRange: dims 1..3, no zero global size, offset + global without overflow (offset may
 * be NULL), the product of the global sizes within size_t; local (NULL: not checked here;
 * all 0: the driver's choice) given for every dimension or none, dividing the global sizes,
 * and at most 2^32 - 1 work-groups in all (PoCL aborts past it). With d, the product within
 * its CL_DEVICE_ADDRESS_BITS; with d and k too, the local size against
 * CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_DEVICE_MAX_WORK_GROUP_SIZE and k's
 * CL_KERNEL_WORK_GROUP_SIZE. CLF_ERROR_INVALID_ARGUMENT, CLF_ERROR_ZERO_SIZE or
 * CLF_ERROR_SIZE_OVERFLOW naming the call and kernel. */
clf_status clf__check_range(const char *call, const char *kernel, unsigned dims,
                            const size_t *global, const size_t *local, const size_t *offset,
                            const struct clf__device *d, cl_kernel k);
/* clSetKernelArg's failure err for argument i (kernel parameter param) of kernel k, naming
 * the call, the kernel, the argument and its parameter (CLF_ERROR_OPENCL). */
clf_status clf__arg_set_fail(const char *call, const char *kernel, cl_kernel k, size_t param,
                             size_t i, cl_int err, const struct clf__device *d);

/* ---- the per-device kernel call (kernel.c) ---- */

/* Check everything clf_kernel_enqueue() is given but the fleet, the device index (checked
 * before) and the wait list; take an idle kernel or create one, and set all its arguments
 * (the hidden range parameter too). Nothing is queued. *out: give it back with
 * clf__kernel_recycle() (its argument values were captured by the enqueue, if any). */
clf_status clf__kernel_prepare(clf_fleet *fl, clf_program *prog, size_t dev,
                               const clf_kernel_desc *desc, const clf_arg *args, size_t nargs,
                               cl_kernel *out);
/* As clf__kernel_prepare(), for a program's array variant too (clf_array_launch()): whole
 * (NULL: desc.global) is the range the hidden range parameter gets, part_offsets (16, or
 * NULL for zeros) the byte offsets of the hidden part-offsets parameter; a variant's
 * kernel may have an offset even where the source names get_group_id(). */
clf_status clf__kernel_prepare_part(clf_fleet *fl, clf_program *prog, size_t dev,
                                    const clf_kernel_desc *desc, const clf_arg *args,
                                    size_t nargs, const size_t *whole,
                                    const cl_ulong *part_offsets, cl_kernel *out);
/* Give k (from clf__kernel_prepare(), enqueued or not) back for later calls to reuse. */
void clf__kernel_recycle(clf_program *prog, size_t dev, const char *name, cl_kernel k);
/* An idle kernel of a program (clf_program.idle_kernels) for device dev; the list is
 * kernel.c's (under its lock), clf_program_destroy() releases what is left. */
struct clf__kernel_idle {
    struct clf__kernel_idle *next;
    size_t dev;
    cl_kernel k;
    char name[]; /* the kernel function's */
};
/* Enqueue k (from clf__kernel_prepare() with desc) on device dev's compute queue after wait
 * (events of the device's context) through the command path, after the enqueue fault hook. */
clf_status clf__kernel_submit(clf_fleet *fl, size_t dev, cl_kernel k, const clf_kernel_desc *desc,
                              cl_uint nwait, const cl_event *wait, cl_event *ev);

/* ---- programs (program.c, kernels.c generated) ---- */

/* CLF_SUCCESS when prog was built for fleet device dev, else CLF_ERROR_BUILD with a detail. */
clf_status clf__program_check_device(const struct clf_program *prog, size_t dev);

typedef struct clf__shipped {
    const char *name;
    const char *source;
} clf__shipped;
extern const clf__shipped clf__shipped_kernels[]; /* NULL-terminated */
extern const char *const clf__shipped_names[];   /* NULL-terminated */
/* cl/clfleet.h, prepended to every program source (chunk-indexing helpers). */
extern const char clf__kernel_prelude[];

/* ---- the OpenCL C source tokenizer (cltok.c) ---- */

/* A position in a source being tokenized; a copy is a saved position (a look ahead). */
typedef struct clf__lexer {
    const char *s;
    size_t i, n;
    int bol;     /* only blanks since the start of the line: a '#' starts a directive */
    int include; /* an #include directive was seen */
    /* A directive (a macro's text) names a built-in: CLF__NAMES_* bits. */
    int directive_names;
} clf__lexer;

enum { CLF__TOK_END = 0, CLF__TOK_IDENT = 256, CLF__TOK_NUMBER, CLF__TOK_LITERAL };

/* Skip to the end of the line (not past it), honouring backslash continuations. */
void clf__tok_skip_line(clf__lexer *x);
/* The next token: its kind (CLF__TOK_* or the punctuation character), start and length. */
int clf__tok_next(clf__lexer *x, size_t *start, size_t *len);
/* Whether the token at [start, start + len) is word. */
int clf__tok_is(const clf__lexer *x, size_t start, size_t len, const char *word);
/* Skip a balanced parenthesised group whose '(' was just read; 0 at the end of the text. */
int clf__tok_skip_group(clf__lexer *x);
/* A token (t at [b, b + l)) of a parameter list: counts it in *ntok; *first_b is where the
 * first starts; *only_void says whether the list so far is the single word `void`. */
void clf__tok_note_param(const clf__lexer *x, int t, size_t b, size_t l, size_t *ntok,
                         size_t *first_b, int *only_void);
/* A function defined or declared at file scope, or a #define (macro set). */
typedef struct clf__fdecl {
    size_t name_b, name_l;
    size_t open;            /* just after the '(' of its parameter list */
    size_t close;           /* at its ')' */
    size_t first_b, ntok;   /* the parameter list's first token, its token count */
    int only_void;          /* the list is `void` */
    size_t body_b, body_e;  /* the body or the macro's text, [body_b, body_e); none: equal */
    int kernel, macro, needs;
} clf__fdecl;

typedef struct clf__fgraph {
    clf__fdecl *f;
    size_t n;
    int oom;
} clf__fgraph;

/* get_global_size, get_num_groups or get_global_linear_id: built-ins that read the range's
 * sizes. */
int clf__tok_size_builtin(const clf__lexer *x, size_t b, size_t l);
/* Add to g the #define lines of src (n bytes): each macro's name and replacement text. */
void clf__tok_defines(const char *src, size_t n, clf__fgraph *g);
/* Add to g the functions src (n bytes) defines or declares at file scope. */
void clf__tok_functions(const char *src, size_t n, clf__fgraph *g);

/* ---- the hidden range parameter (rangearg.c) ---- */

/* Its name: what a function clfleet did not find (in an included file, made by a macro)
 * that calls get_global_size() fails to find. */
#define CLF__RANGE_ARG_NAME "clfleet_global_size_only_in_kernels"
/* What clf__range_rewrite() finds a source naming (*named, a clf_program's range_named):
 * get_global_size, get_num_groups or get_global_linear_id (the range's sizes); and
 * get_group_id, get_global_offset or get_global_linear_id, or an #include (built-ins that the
 * prelude counts from the range's start, as chunks need, not from an enqueue's offset). */
#define CLF__NAMES_SIZES 1
#define CLF__NAMES_OFFSETS 2
/* *named: CLF__NAMES_* bits. When src names get_global_size, get_num_groups or
 * get_global_linear_id, or includes a file, *out is src with the hidden parameter added to
 * every kernel function found and to the helper functions that need it (passed at their
 * calls), and *names (count *nnames) the kernels' names (malloc'd); else *out is NULL. */
clf_status clf__range_rewrite(const char *src, char **out, char ***names, size_t *nnames,
                              int *named);
/* 1 when kernel got the hidden parameter. */
int clf__program_range_arg(const struct clf_program *p, const char *kernel);
/* 1 when the source names the built-ins but kernel's definition was not found: it has no
 * hidden parameter, and chunks of it could not be given the range's sizes. */
int clf__program_range_unknown(const struct clf_program *p, const char *kernel);
/* Set kernel k's hidden parameter (when it has one) to the range global[0..dims-1] (1
 * beyond); every place that creates a kernel of a user program calls it. d names the
 * device in errors. */
clf_status clf__program_set_range(const struct clf_program *p, const char *kernel, cl_kernel k,
                                  const size_t global[3], unsigned dims,
                                  const struct clf__device *d);

/* What kernel (defined in src) does through its pointer parameter param, by a conservative
 * source scan (storescan.c): 0 no store seen (every use a read it understands), 1 in doubt
 * (a use it cannot follow, the kernel not found), 2 a store seen. */
int clf__source_param_stores(const char *src, const char *kernel, size_t param);

/* The array variant of a program (clf_array_launch()): every kernel function found gets two
 * hidden trailing parameters, the part offsets then the range (clf__program_set_range()
 * sets the last one), and its body first moves each __global/__constant pointer parameter
 * by the offset the host gives it (rangearg.c says how). *why (parallel to *names, NULL
 * entries) says why a kernel cannot run over arrays (a `* const` pointer, too many);
 * *masks (parallel too) has bit i set when parameter i is moved. */
#define CLF__PART_ARG_NAME "clfleet_part_offsets"
#define CLF__PART_MAX_PTRS 16
clf_status clf__array_rewrite(const char *src, char **out, char ***names, size_t *nnames,
                              char ***why, uint64_t **masks);

/* p's array variant (program.c), built on first use (its build errors name the variant);
 * owned by p. */
clf_status clf__program_array_variant(struct clf_program *p, struct clf_program **out);
/* In variant v: why kernel cannot run over arrays, or NULL. */
const char *clf__program_array_why(const struct clf_program *v, const char *kernel);
/* In variant v: bit i set when kernel's parameter i is moved to its part (0: none, or
 * unknown kernel). */
uint64_t clf__program_array_mask(const struct clf_program *v, const char *kernel);

/* ---- buffers (buffer.c) ---- */

/* Read a whole file (NUL-terminated); CLF_ERROR_IO with the path on failure. */
clf_status clf__read_file(const char *path, char **out, size_t *len);

/* buildlog.c: why a build failed on fleet device dev (what: the call's error; log: the
 * compiler's, or NULL), kept in p->log[dev]. */
clf_status clf__program_set_log(clf_program *p, size_t dev, const char *what, const char *log);
/* buildlog.c: the driver's build log of one device (malloc'd; NULL when there is none). */
char *clf__program_driver_log(cl_program prog, cl_device_id id);
/* buildlog.c: every left-out device's log appended to the detail message, each distinct log
 * once with the devices that share it ("devices 0-3 'name' (platform)"). */
void clf__program_append_logs(const clf_program *p);

#endif

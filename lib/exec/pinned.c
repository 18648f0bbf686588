/*
 * Host arrays through pinned slots (issue 27): the array plane's moves (arrays.c) on a device
 * that does not share the host's memory.
 *
 * A driver copies from pageable memory through a bounce buffer of its own, one piece at a
 * time, at a fraction of the link's speed (an H200 took a 64M-float vector add at about
 * 6.5 GB/s from pageable memory; PCIe Gen5 x16 is about 55 GB/s). Memory of a
 * CL_MEM_ALLOC_HOST_PTR buffer, mapped, is pinned on NVIDIA's platform: a write from it or a
 * read into it runs at the link's speed. So each device keeps a ring of CLF__PIN_SLOTS such
 * slots (fleet->host_slot bytes each, $CLFLEET_TRANSFER_CHUNK), made on first use, mapped once
 * and kept mapped until the fleet's teardown. An input's range goes through them in pieces:
 * memcpy into a free slot, then a write from it; the memcpy of one piece runs while the
 * writes of the pieces before it move, and a chunk's inputs are copied while the chunk before
 * it computes (the worker's look-ahead, worker.c). An output's range is read into slots, and
 * copied to the host array as each read completes; chunk_out waits for them all, so that a
 * chunk's results are in the host array when it returns (late writes, arrays.c's
 * late_write(), copy halos from there on the host, not on the device's queue).
 *
 * Each piece waits for the piece before it of the same move: a failure of one fails the
 * last, whose event is the chunk's (c->ev), so that the executor's checks of a chunk's
 * events see every piece. The other pieces are accounted for here (report and metrics) when
 * their slot is next reused or the chunk's outputs have landed. The slots are host memory,
 * not the device's: they are not counted in the device's budget.
 */
#include "exec.h"

#include <stdlib.h>
#include <string.h>

#define CLF__PIN_SLOTS 4

typedef struct clf__pin_slot {
    cl_mem mem;
    void *ptr;    /* mapped for the fleet's life */
    cl_event ev;  /* the slot's last command, or NULL: free */
    int reading;  /* ev reads into the slot: copy to dst once complete */
    int counted;  /* ev is no chunk's event: its seconds are accounted for here */
    int to_device;
    uint64_t bytes;
    /* Where a read's bytes go: nrows rows of nb bytes, pitch apart in the host array. */
    char *dst;
    size_t nb, nrows, pitch;
    uint64_t move; /* the move it serves (clf__pin_dev.moves) */
} clf__pin_slot;

typedef struct clf__pin_dev {
    clf__pin_slot s[CLF__PIN_SLOTS];
    size_t next;     /* the ring's next slot */
    uint64_t moves;  /* moves begun: names each one */
    uint64_t active; /* the move being enqueued, or 0 */
    uint64_t copied; /* pieces of the active move copied to their host array */
} clf__pin_dev;

typedef struct clf__pin_state {
    size_t ndev;
    clf__pin_dev dev[]; /* one per fleet device, each used only by its device's worker */
} clf__pin_state;

static void *pin_create(clf_fleet *fl)
{
    clf__pin_state *p = calloc(1, sizeof *p + fl->ndev * sizeof p->dev[0]);
    if (p)
        p->ndev = fl->ndev;
    return p;
}

/* The launches have drained (CLF__STATE_DRAIN came first): unmap and release every slot. */
static void pin_fini(clf_fleet *fl, void *state)
{
    clf__pin_state *p = state;
    for (size_t d = 0; d < p->ndev; d++) {
        int unmapped = 0;
        for (size_t i = 0; i < CLF__PIN_SLOTS; i++) {
            clf__pin_slot *s = &p->dev[d].s[i];
            if (s->ev) {
                clWaitForEvents(1, &s->ev);
                clReleaseEvent(s->ev);
            }
            if (s->ptr) {
                clf__cmd c = CLF__CMD(fl, d, fl->dev[d].transfer, "pinned staging");
                c.flags = CLF__CMD_NO_METRICS | CLF__CMD_NO_FAULT;
                clf__cmd_unmap(&c, s->mem, s->ptr);
                unmapped = 1;
            }
        }
        if (unmapped)
            clFinish(fl->dev[d].transfer); /* the unmaps, before their buffers go */
        for (size_t i = 0; i < CLF__PIN_SLOTS; i++)
            if (p->dev[d].s[i].mem)
                clReleaseMemObject(p->dev[d].s[i].mem);
    }
    free(p);
}

static const clf__state_key pin_key = {"pinned staging", CLF__STATE_BEFORE_XFER, pin_create,
                                       pin_fini};

int clf__pinned_use(const clf__worker *w)
{
    int mode = w->L->fl->host_staging;
    return mode == CLF__HOST_STAGING_PINNED ||
           (mode == CLF__HOST_STAGING_AUTO && !w->d->info.host_unified);
}

/* The bytes of a completed read in slot s to the host array. */
static void copy_out(clf__pin_dev *D, const clf__pin_slot *s)
{
    const char *src = s->ptr;
    D->copied += s->move == D->active;
    for (size_t r = 0; r < s->nrows; r++)
        memcpy(s->dst + r * s->pitch, src + r * s->nb, s->nb);
}

/*
 * Wait for the slot's last command and free the slot: a completed read's bytes go to the host
 * array, a completed piece that is no chunk's event is accounted for. A failed command is
 * only forgotten: the chunk's own event (the last piece, which waited for it) fails too.
 */
static void retire(clf__worker *w, clf__pin_dev *D, clf__pin_slot *s)
{
    if (!s->ev)
        return;
    clWaitForEvents(1, &s->ev);
    int done = clf__cl_event_status(s->ev) == CL_COMPLETE;
    if (done && s->reading)
        copy_out(D, s);
    if (done && s->counted) {
        double sec = clf__worker_blocking_done(
            w, s->ev, s->to_device ? CLF__REC_TO_DEVICE : CLF__REC_FROM_DEVICE, s->bytes);
        if (s->to_device)
            w->rep.to_device_s += sec;
        else
            w->rep.from_device_s += sec;
    } else {
        clReleaseEvent(s->ev);
    }
    s->ev = NULL;
    s->reading = s->counted = 0;
}

/* The worker's device's ring, made on first use (NULL: out of memory). */
static clf__pin_dev *ring_of(clf__worker *w)
{
    clf__pin_state *p = clf__fleet_state(w->L->fl, &pin_key);
    return p ? &p->dev[w->d->index] : NULL;
}

/* The device's next slot of the ring, free (made and mapped on first use). */
static clf_status acquire(clf__worker *w, clf__pin_dev *D, clf__pin_slot **out)
{
    clf_fleet *fl = w->L->fl;
    clf__pin_slot *s = &D->s[D->next];
    retire(w, D, s);
    if (!s->mem) {
        /* Host memory: not the device's budget, nor its metrics' device memory; no fault
         * rule either, so that a rule's count of a launch's commands is the same on both
         * paths. */
        clf__cmd c = CLF__CMD(fl, w->d->index, w->d->transfer, "pinned staging");
        c.flags = CLF__CMD_BLOCKING | CLF__CMD_NO_METRICS | CLF__CMD_NO_FAULT;
        if (clf__cmd_buffer(&c, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, fl->host_slot, NULL,
                            &s->mem) != CLF_SUCCESS)
            return clf__worker_cmd_failed(w, &c);
        if (clf__cmd_map(&c, s->mem, CL_MAP_READ | CL_MAP_WRITE, 0, fl->host_slot, &s->ptr) !=
            CLF_SUCCESS) {
            clReleaseMemObject(s->mem);
            s->mem = NULL;
            s->ptr = NULL;
            return clf__worker_cmd_failed(w, &c);
        }
    }
    D->next = (D->next + 1) % CLF__PIN_SLOTS;
    *out = s;
    return CLF_SUCCESS;
}

clf_status clf__pinned_move(clf__worker *w, const clf__pin_move *mv, cl_uint nwait,
                            const cl_event *wait, cl_event *ev, uint64_t *ev_bytes)
{
    clf_fleet *fl = w->L->fl;
    size_t dev = w->d->index, S = fl->host_slot;
    cl_command_queue q = w->d->transfer;
    cl_event prev = NULL; /* the move's previous piece: the next one waits for it */
    clf_status st = CLF_SUCCESS;
    *ev = NULL;
    *ev_bytes = 0;
    clf__pin_dev *D = ring_of(w);
    if (!D)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "pinned staging: out of memory");
    uint64_t move = ++D->moves;
    D->active = move;
    D->copied = 0;
    /* Pieces: whole rows when a row fits a slot, else slot-sized parts of one row. */
    size_t rows_per = mv->width <= S ? S / mv->width : 1;
    for (size_t r0 = 0; r0 < mv->rows && st == CLF_SUCCESS;) {
        size_t nrows = mv->rows - r0 < rows_per ? mv->rows - r0 : rows_per;
        for (size_t b0 = 0; b0 < mv->width && st == CLF_SUCCESS;) {
            size_t nb = mv->width - b0 < S ? mv->width - b0 : S;
            int last = r0 + nrows == mv->rows && b0 + nb == mv->width;
            clf__pin_slot *s = NULL;
            if ((st = acquire(w, D, &s)) != CLF_SUCCESS)
                break;
            char *h = mv->host + r0 * mv->pitch + b0;
            if (mv->to_device)
                for (size_t r = 0; r < nrows; r++)
                    memcpy((char *)s->ptr + r * nb, h + r * mv->pitch, nb);
            cl_uint nw = prev ? 1 : nwait;
            const cl_event *wl = prev ? &prev : wait;
            cl_event e = NULL;
            clf__cmd c = clf__worker_cmd(CLF__CMD(fl, dev, q, NULL), CLF__CMD_NO_FLUSH,
                                         mv->to_device ? CLF__FAULT_WRITE : CLF__FAULT_READ);
            c.nwait = nw;
            c.wait = wl;
            c.ev = &e;
            clf_status cs;
            if (mv->rows == 1)
                cs = mv->to_device ? clf__cmd_write(&c, mv->mem, mv->dev_off + b0, nb, s->ptr)
                                   : clf__cmd_read(&c, mv->mem, mv->dev_off + b0, nb, s->ptr);
            else {
                clf__cmd_box box = {.borigin = {mv->dev_off + b0, r0, 0},
                                    .region = {nb, nrows, 1},
                                    .brow = mv->pitch,
                                    .hrow = nb};
                cs = clf__cmd_rect(&c, mv->to_device, mv->mem, &box, s->ptr);
            }
            if (cs != CLF_SUCCESS) {
                st = clf__worker_cmd_failed(w, &c);
                break;
            }
            clFlush(q); /* moving while the next piece is copied */
            s->ev = e;
            s->to_device = mv->to_device;
            s->bytes = (uint64_t)nb * nrows;
            s->counted = !last;
            s->reading = !mv->to_device;
            s->dst = h;
            s->nb = nb;
            s->nrows = nrows;
            s->pitch = mv->pitch;
            s->move = move;
            if (prev)
                clReleaseEvent(prev);
            clRetainEvent(e);
            prev = e;
            if (last) {
                clRetainEvent(e); /* the chunk's reference */
                *ev = e;
                *ev_bytes = s->bytes;
            }
            b0 += nb;
        }
        r0 += nrows;
    }
    if (prev)
        clReleaseEvent(prev);
    D->active = 0;
    if (st == CLF_SUCCESS || mv->to_device)
        return st;
    /* A failed read: the executor sees no event of it, so none of its pieces may reach the
     * host array later. Pieces already copied (a move longer than the ring) cannot be taken
     * back: harmless for an output that a re-run writes again, but an in-out array's re-run
     * would read them as its input, so the launch stops (as when a chunk's in-out results
     * landed only in part, worker.c). */
    for (size_t i = 0; i < CLF__PIN_SLOTS; i++)
        if (D->s[i].ev && D->s[i].move == move)
            D->s[i].reading = 0;
    if (mv->inout && D->copied) {
        clf__fail(CLF_ERROR_DEVICE_FAILED,
                  "device %zu '%s' failed after part of an in-out array's results had "
                  "reached the host through pinned staging: they cannot run again (%s)",
                  dev, w->d->info.name, clf_last_error());
        w->fatal = 1;
        w->st = CLF_ERROR_DEVICE_FAILED;
        snprintf(w->err, sizeof w->err, "%s", clf_last_error());
        return CLF_ERROR_DEVICE_FAILED;
    }
    return st;
}

void clf__pinned_landed(clf__worker *w)
{
    clf__pin_state *p = clf__fleet_state_find(w->L->fl, &pin_key);
    if (!p)
        return;
    clf__pin_dev *D = &p->dev[w->d->index];
    for (size_t i = 0; i < CLF__PIN_SLOTS; i++) {
        clf__pin_slot *s = &D->s[i];
        /* Reads: waited for. Writes too (the next chunk's, taken ahead, which came before
         * these reads on the in-order queue, or, in a launch without outputs, need no more
         * than the transfer itself): their seconds reach the report, and the link's learned
         * bandwidth (choose.c), before the launch ends. */
        retire(w, D, s);
    }
}

void clf__pinned_end(clf__worker *w)
{
    clf__pin_state *p = clf__fleet_state_find(w->L->fl, &pin_key);
    if (!p)
        return;
    clf__pin_dev *D = &p->dev[w->d->index];
    for (size_t i = 0; i < CLF__PIN_SLOTS; i++) {
        clf__pin_slot *s = &D->s[i];
        if (!s->ev)
            continue;
        /* Pieces of a chunk given back or stolen: its report does not count them (as the
         * executor does not count that chunk's own events). The slot's memory is rewritten
         * on the host by the next launch, so its command must be over. */
        clWaitForEvents(1, &s->ev);
        clReleaseEvent(s->ev);
        s->ev = NULL;
        s->reading = s->counted = 0;
    }
}

/*
 * The all-reduce's host combine (allreduce.c chooses it when its predicted time is less than
 * the ring's): every buffer is read into host memory at once, one read per device, the host
 * combines them in position order, and every device writes the result at once. Three steps
 * whatever the count and the number of devices, against the ring's 2(n-1) dependent steps of
 * chunked copies and kernels: on host-staged links, with two devices or small counts, that
 * is what wins (the naive "read it all, add on the host" beat the ring 8x at 1 to 16 MiB on
 * an H200 and a 16-core CPU).
 *
 * The combine follows cl/reduce.cl's operations exactly: signed integers sum and multiply as
 * unsigned (wrapping, as the kernels do), min and max keep the first operand on ties, so
 * integer results are the ring's bits; float sums and products may differ from the ring's in
 * the last bits, as the order of combination differs.
 */
#include "coll.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define OP_MAX(a, b) ((b) > (a) ? (b) : (a))

/* acc[e] = OP(acc[e], x[e]) for e < n, in type T. */
#define COMBINE(T, OP)                                                                      \
    do {                                                                                    \
        T *a_ = (T *)acc;                                                                   \
        const T *x_ = (const T *)x;                                                         \
        for (size_t e = 0; e < n; e++)                                                      \
            a_[e] = OP(a_[e], x_[e]);                                                       \
    } while (0)

#define COMBINE_OPS(T, TU)                                                                  \
    switch (op) {                                                                           \
    case CLF_REDUCE_SUM:                                                                    \
        COMBINE(TU, OP_SUM);                                                                \
        break;                                                                              \
    case CLF_REDUCE_PROD:                                                                   \
        COMBINE(TU, OP_PROD);                                                               \
        break;                                                                              \
    case CLF_REDUCE_MIN:                                                                    \
        COMBINE(T, OP_MIN);                                                                 \
        break;                                                                              \
    case CLF_REDUCE_MAX:                                                                    \
        COMBINE(T, OP_MAX);                                                                 \
        break;                                                                              \
    }

/* acc = op(acc, x) element-wise over n elements of type (validated by the caller). Signed
 * sums and products go through the unsigned type of the same width: wrapping, not undefined. */
static void combine(clf_type type, clf_reduce_op op, void *acc, const void *x, size_t n)
{
    switch (type) {
    case CLF_TYPE_INT32:
        COMBINE_OPS(int32_t, uint32_t);
        break;
    case CLF_TYPE_UINT32:
        COMBINE_OPS(uint32_t, uint32_t);
        break;
    case CLF_TYPE_INT64:
        COMBINE_OPS(int64_t, uint64_t);
        break;
    case CLF_TYPE_FLOAT:
        COMBINE_OPS(float, float);
        break;
    case CLF_TYPE_DOUBLE:
        COMBINE_OPS(double, double);
        break;
    }
}

clf_status clf__allreduce_host(clf__coll *c, size_t count, clf_type type, clf_reduce_op op)
{
    size_t bytes = count * c->es, total; /* count * es was checked by clf__coll_validate() */
    clf_status st = CLF_SUCCESS;
    if (clf__mul_overflow(bytes, c->n, &total))
        return clf__fail(CLF_ERROR_SIZE_OVERFLOW, "%s: %zu buffers of %zu bytes overflow", c->fn,
                         c->n, bytes);
    /* One block for every buffer's copy: the reads all run at once. */
    char *h = clf__coll_host_get(c->fl, total);
    if (!h)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY,
                         "%s: no host memory for the host combine (%zu bytes)", c->fn, total);
    c->tag = "clf_allreduce (host combine)";
    for (size_t i = 0; i < c->n; i++)
        CLF__TRY(st, clf__coll_host_io(c, c->buf[i], 0, 0, bytes, h + i * bytes, c->entry[i]));
    CLF__TRY(st, clf__coll_wait_all(c));
    for (size_t i = 1; i < c->n; i++)
        combine(type, op, h, h + i * bytes, count);
    /* Every write reads the same host copy; each follows the device's entry marker, and the
     * device's read is complete (waited for above). */
    for (size_t i = 0; i < c->n; i++)
        CLF__TRY(st, clf__coll_host_io(c, c->buf[i], 1, 0, bytes, h, c->entry[i]));
    /* The writes read h: it lives until they are done. */
    st = clf__coll_wait_all(c);
out:
    if (st != CLF_SUCCESS) {
        /* Queued reads or writes still use h; the first failure's detail is the one kept. */
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", clf_last_error());
        clf__coll_wait_all(c);
        st = clf__fail(st, "%s", detail);
    }
    clf__coll_host_put(c->fl, h, total);
    return st;
}

/*
 * The element types and reduction operations of the all-reduce benchmarks (allreduce and
 * mpi-allreduce), by the names nccl-tests gives them, and the host side of their checks and
 * of their naive ways: values that reduce exactly in every type, and an element-wise
 * combine in the element type, as a user's host code would do it.
 */
#include "bench.h"

#include <stdint.h>
#include <string.h>

static const struct {
    const char *name;
    clf_type type;
} TYPES[] = {{"int32", CLF_TYPE_INT32}, {"uint32", CLF_TYPE_UINT32}, {"int64", CLF_TYPE_INT64},
             {"float", CLF_TYPE_FLOAT}, {"double", CLF_TYPE_DOUBLE}};
static const struct {
    const char *name;
    clf_reduce_op op;
} OPS[] = {{"sum", CLF_REDUCE_SUM}, {"prod", CLF_REDUCE_PROD}, {"min", CLF_REDUCE_MIN},
           {"max", CLF_REDUCE_MAX}};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])
#define NOPS (sizeof OPS / sizeof OPS[0])

int clf_bench_type_parse(const char *s, clf_type *out)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (!strcmp(s, TYPES[i].name)) {
            *out = TYPES[i].type;
            return 1;
        }
    return 0;
}

const char *clf_bench_type_name(clf_type t)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (TYPES[i].type == t)
            return TYPES[i].name;
    return "?";
}

int clf_bench_op_parse(const char *s, clf_reduce_op *out)
{
    for (size_t i = 0; i < NOPS; i++)
        if (!strcmp(s, OPS[i].name)) {
            *out = OPS[i].op;
            return 1;
        }
    return 0;
}

const char *clf_bench_op_name(clf_reduce_op op)
{
    for (size_t i = 0; i < NOPS; i++)
        if (OPS[i].op == op)
            return OPS[i].name;
    return "?";
}

double clf_bench_reduce_value(clf_type t, clf_reduce_op op, size_t pos, size_t i)
{
    /* Products: a 2 at one position in four, else 1, so that even 24 positions multiply to
     * at most 2^6. Otherwise -50..50 (0..100 unsigned): sums of thousands of positions stay
     * exact in a float. */
    if (op == CLF_REDUCE_PROD)
        return (i + pos) % 4 == 0 ? 2.0 : 1.0;
    double v = (double)((i * 7 + pos * 13) % 101);
    return t == CLF_TYPE_UINT32 ? v : v - 50;
}

void clf_bench_store(clf_type t, void *p, size_t i, double v)
{
    switch (t) {
    case CLF_TYPE_INT32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case CLF_TYPE_UINT32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case CLF_TYPE_INT64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    case CLF_TYPE_FLOAT:
        ((float *)p)[i] = (float)v;
        break;
    default:
        ((double *)p)[i] = v;
        break;
    }
}

double clf_bench_load(clf_type t, const void *p, size_t i)
{
    switch (t) {
    case CLF_TYPE_INT32:
        return ((const int32_t *)p)[i];
    case CLF_TYPE_UINT32:
        return ((const uint32_t *)p)[i];
    case CLF_TYPE_INT64:
        return (double)((const int64_t *)p)[i];
    case CLF_TYPE_FLOAT:
        return ((const float *)p)[i];
    default:
        return ((const double *)p)[i];
    }
}

double clf_bench_combine(clf_reduce_op op, double a, double b)
{
    switch (op) {
    case CLF_REDUCE_PROD:
        return a * b;
    case CLF_REDUCE_MIN:
        return b < a ? b : a;
    case CLF_REDUCE_MAX:
        return b > a ? b : a;
    default:
        return a + b;
    }
}

/* acc[i] = acc[i] op src[i] in the element type T. */
#define HOST_COMBINE(T)                                                                     \
    do {                                                                                    \
        T *a_ = (T *)acc;                                                                   \
        const T *s_ = (const T *)src;                                                       \
        for (size_t i_ = 0; i_ < count; i_++)                                               \
            a_[i_] = op == CLF_REDUCE_SUM    ? (T)(a_[i_] + s_[i_])                         \
                     : op == CLF_REDUCE_PROD ? (T)(a_[i_] * s_[i_])                         \
                     : op == CLF_REDUCE_MIN  ? (s_[i_] < a_[i_] ? s_[i_] : a_[i_])          \
                                             : (s_[i_] > a_[i_] ? s_[i_] : a_[i_]);         \
    } while (0)

void clf_bench_host_combine(clf_type t, clf_reduce_op op, void *acc, const void *src,
                            size_t count)
{
    switch (t) {
    case CLF_TYPE_INT32:
        HOST_COMBINE(int32_t);
        break;
    case CLF_TYPE_UINT32:
        HOST_COMBINE(uint32_t);
        break;
    case CLF_TYPE_INT64:
        HOST_COMBINE(int64_t);
        break;
    case CLF_TYPE_FLOAT:
        HOST_COMBINE(float);
        break;
    default:
        HOST_COMBINE(double);
        break;
    }
}

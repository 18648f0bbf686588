/*
 * Element-wise combine kernels of the collectives (lib/collective.c):
 *
 *     acc[acc_off + i] = OP(acc[acc_off + i], x[x_off + i])    for i < n
 *
 * one kernel per operation and type, named clf_reduce_OP_TYPE, e.g.
 * clf_reduce_sum_f32. Offsets are in elements, so a collective combines a
 * chunk of a buffer without sub-buffers (whose origins must be aligned). The
 * global size is rounded up to the work-group size; the guard drops the rest.
 * Integer sums and products wrap around, as in the host reference.
 */

#define CLF_OP_SUM(a, b) ((a) + (b))
#define CLF_OP_PROD(a, b) ((a) * (b))
#define CLF_OP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define CLF_OP_MAX(a, b) ((b) > (a) ? (b) : (a))

/* The offsets are applied to the pointers once: indexing with a 64-bit sum per element
 * keeps PoCL from vectorising the work-group loop (a third slower on a CPU). */
#define CLF_COMBINE(T, TNAME, OP, OPNAME)                                                    \
    __kernel void clf_reduce_##OPNAME##_##TNAME(__global T *acc, ulong acc_off,              \
                                                 __global const T *x, ulong x_off, ulong n)  \
    {                                                                                         \
        __global T *a = acc + acc_off;                                                        \
        __global const T *b = x + x_off;                                                      \
        size_t i = get_global_id(0);                                                          \
        if (i < n)                                                                            \
            a[i] = OP(a[i], b[i]);                                                            \
    }

#define CLF_COMBINE_ALL(T, TNAME)                  \
    CLF_COMBINE(T, TNAME, CLF_OP_SUM, sum)         \
    CLF_COMBINE(T, TNAME, CLF_OP_PROD, prod)       \
    CLF_COMBINE(T, TNAME, CLF_OP_MIN, min)         \
    CLF_COMBINE(T, TNAME, CLF_OP_MAX, max)

/* Signed overflow is undefined in C: sum and multiply int32 and int64 as unsigned. */
#define CLF_OP_SUM_I32(a, b) as_int(as_uint(a) + as_uint(b))
#define CLF_OP_PROD_I32(a, b) as_int(as_uint(a) * as_uint(b))
#define CLF_OP_SUM_I64(a, b) as_long(as_ulong(a) + as_ulong(b))
#define CLF_OP_PROD_I64(a, b) as_long(as_ulong(a) * as_ulong(b))

CLF_COMBINE(int, i32, CLF_OP_SUM_I32, sum)
CLF_COMBINE(int, i32, CLF_OP_PROD_I32, prod)
CLF_COMBINE(int, i32, CLF_OP_MIN, min)
CLF_COMBINE(int, i32, CLF_OP_MAX, max)
CLF_COMBINE_ALL(uint, u32)
CLF_COMBINE(long, i64, CLF_OP_SUM_I64, sum)
CLF_COMBINE(long, i64, CLF_OP_PROD_I64, prod)
CLF_COMBINE(long, i64, CLF_OP_MIN, min)
CLF_COMBINE(long, i64, CLF_OP_MAX, max)
CLF_COMBINE_ALL(float, f32)

/* Double precision only where the device has it; collectives on doubles report the
 * missing kernel as unsupported on such a device. */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define CLF_HAVE_FP64 1
#elif defined(__opencl_c_fp64)
#define CLF_HAVE_FP64 1
#endif
#ifdef CLF_HAVE_FP64
CLF_COMBINE_ALL(double, f64)
#endif

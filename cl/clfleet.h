/*
 * clfleet kernel helpers, prepended to every program clfleet builds.
 *
 * clf_launch() runs a range as chunks, each its own NDRange enqueued with a global work
 * offset along the split dimension (the chunk's start). So that kernels run unchanged,
 * the NDRange built-ins that would otherwise see the chunk instead of the range are
 * redefined here to return what they return on one device:
 *
 *   get_group_id(d)       the chunk's group id plus its offset / get_local_size(d): every
 *                         chunk offset is a multiple of the local size its chunk runs with
 *                         (lib/exec/launch.c, auto_local() and check_desc()).
 *   get_global_offset(d)  0: clf_launch_desc has no offset of its own.
 *   get_global_size(d), get_num_groups(d), get_global_linear_id() (OpenCL C 2.0)
 *                         the range's sizes, which only the launch knows: when a program
 *                         names either, clfleet adds a hidden last parameter to each of its
 *                         kernels, and to each helper function that uses them directly or
 *                         through the functions it calls, passed on at every call
 *                         (lib/core/rangearg.c), and defines CLF__RANGE_ARG before this
 *                         prelude. Only a function clfleet does not find in the program's
 *                         source (defined in an included file, or made by a macro) lacks
 *                         it: there the built-ins fail to compile, naming
 *                         clfleet_global_size_only_in_kernels.
 *
 * get_global_id, get_local_id, get_local_size and get_work_dim are right as they are, and so
 * is get_enqueued_local_size (OpenCL C 2.0): every chunk runs with the launch's local size
 * when one is given, and without one the local size is the driver's choice per enqueue, on
 * one device as in chunks. All of these are macros or real built-ins, so helper functions
 * see the same values as kernels.
 * The chunk's own offset stays available as CLF_CHUNK_OFFSET(d): a chunk-indexed argument
 * (CLF_ARG_CHUNK_INDEXED) holds only its chunk and halo, and unit u of the range is at
 * u - CLF_CHUNK_OFFSET(d) + halo_before.
 *
 * The functions that call the real built-ins come before the macros that replace them: a
 * function defined after a macro of the same name would call the macro.
 */
#ifndef CLFLEET_CL_H
#define CLFLEET_CL_H

/* The real offset of this chunk along dimension d (0 off the split dimension). */
static inline size_t clf__cl_chunk_offset(uint d)
{
    return get_global_offset(d);
}

/* The real group id within this chunk. */
static inline size_t clf__cl_chunk_group_id(uint d)
{
    return get_group_id(d);
}

#ifdef CLF__RANGE_ARG
/* The range's size along d from the hidden kernel parameter g (1 past the dimensions). */
static inline size_t clf__cl_range_size(ulong4 g, uint d)
{
    return d == 0 ? (size_t)g.s0 : d == 1 ? (size_t)g.s1 : d == 2 ? (size_t)g.s2 : (size_t)1;
}
#define get_global_size(d) clf__cl_range_size(clfleet_global_size_only_in_kernels, (d))
#define get_num_groups(d) (get_global_size(d) / get_local_size(d))
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200
/* OpenCL C 2.0: the real one counts from the chunk's offset. */
#define get_global_linear_id()                                                                   \
    ((get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0) +          \
     get_global_id(0))
#endif
#endif

#define get_group_id(d) (clf__cl_chunk_group_id(d) + clf__cl_chunk_offset(d) / get_local_size(d))
#define get_global_offset(d) ((size_t)0)

/* Where this chunk starts along dimension d (the real global work offset). */
#define CLF_CHUNK_OFFSET(d) clf__cl_chunk_offset(d)

/* This work-item's index within its chunk along dimension d. */
#define CLF_CHUNK_INDEX(d) (get_global_id(d) - clf__cl_chunk_offset(d))

/* Index of global unit u (e.g. a neighbour's row) in a chunk-indexed buffer. */
#define CLF_CHUNK_UNIT(d, u, halo_before) ((u) - clf__cl_chunk_offset(d) + (halo_before))

#endif

/* Collectives across ranks on each rank's per-device buffers: all-reduce, reduce,
 * broadcast, all-gather (hierarchical: inside the fleet by device paths, across ranks by
 * pipelined host-staged MPI on one communicator per device lane). */
#include "comm.h"

clf_status clf_comm_allreduce(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t count,
                              clf_type type, clf_reduce_op op)
{
    (void)bufs, (void)nbufs, (void)count, (void)type, (void)op;
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_allreduce: NULL communicator");
    return clf__comm_agree(c, clf_set_error(CLF_ERROR_UNSUPPORTED, "not implemented yet"),
                           "clf_comm_allreduce");
}

clf_status clf_comm_reduce(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t count,
                           clf_type type, clf_reduce_op op, int root, size_t root_buf)
{
    (void)bufs, (void)nbufs, (void)count, (void)type, (void)op, (void)root, (void)root_buf;
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_reduce: NULL communicator");
    return clf__comm_agree(c, clf_set_error(CLF_ERROR_UNSUPPORTED, "not implemented yet"),
                           "clf_comm_reduce");
}

clf_status clf_comm_broadcast(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t size,
                              int root, size_t root_buf)
{
    (void)bufs, (void)nbufs, (void)size, (void)root, (void)root_buf;
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_broadcast: NULL communicator");
    return clf__comm_agree(c, clf_set_error(CLF_ERROR_UNSUPPORTED, "not implemented yet"),
                           "clf_comm_broadcast");
}

clf_status clf_comm_allgather(clf_comm *c, clf_buffer *const *bufs, size_t nbufs, size_t count,
                              size_t elem_size)
{
    (void)bufs, (void)nbufs, (void)count, (void)elem_size;
    if (!c)
        return clf_set_error(CLF_ERROR_NULL_POINTER, "clf_comm_allgather: NULL communicator");
    return clf__comm_agree(c, clf_set_error(CLF_ERROR_UNSUPPORTED, "not implemented yet"),
                           "clf_comm_allgather");
}

/* Stand-ins for the launches and arrays across ranks (clf_comm_launch, clf_comm_array_*),
 * which helper M2's branch (mpiarray) implements: that branch deletes this file. They
 * answer CLF_ERROR_UNSUPPORTED on every rank, so that the library exports what
 * include/clfleet/mpi.h declares. */
#include "comm.h"

#include <string.h>

clf_status clf_comm_array_create(clf_array **out, clf_comm *c, const clf_array_desc *desc)
{
    (void)c, (void)desc;
    if (out)
        *out = NULL;
    return clf_set_error(CLF_ERROR_UNSUPPORTED, "clf_comm_array_create: not implemented yet");
}

clf_status clf_comm_array_exchange(clf_comm *c, clf_array *arr)
{
    (void)c, (void)arr;
    return clf_set_error(CLF_ERROR_UNSUPPORTED, "clf_comm_array_exchange: not implemented yet");
}

clf_status clf_comm_array_launch(clf_comm *c, clf_program *prog,
                                 const clf_array_launch_desc *desc, const clf_arg *args,
                                 size_t nargs)
{
    (void)c, (void)prog, (void)desc, (void)args, (void)nargs;
    return clf_set_error(CLF_ERROR_UNSUPPORTED, "clf_comm_array_launch: not implemented yet");
}

clf_status clf_comm_array_read(clf_comm *c, clf_array *arr, const size_t *origin,
                               const size_t *region, void *dst, int root)
{
    (void)c, (void)arr, (void)origin, (void)region, (void)dst, (void)root;
    return clf_set_error(CLF_ERROR_UNSUPPORTED, "clf_comm_array_read: not implemented yet");
}

clf_status clf_comm_array_write(clf_comm *c, clf_array *arr, const size_t *origin,
                                const size_t *region, const void *src, int root)
{
    (void)c, (void)arr, (void)origin, (void)region, (void)src, (void)root;
    return clf_set_error(CLF_ERROR_UNSUPPORTED, "clf_comm_array_write: not implemented yet");
}

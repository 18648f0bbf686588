/* The OpenCL handles behind clfleet objects (include/clfleet/opencl.h). */
#include "core.h"

#include "clfleet/opencl.h"

static const struct clf__device *dev(const clf_fleet *fl, size_t i)
{
    return fl && i < fl->ndev ? &fl->dev[i] : NULL;
}

cl_device_id clf_cl_device(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->id : NULL;
}

cl_context clf_cl_context(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->ctx : NULL;
}

cl_command_queue clf_cl_compute_queue(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->compute : NULL;
}

cl_command_queue clf_cl_transfer_queue(const clf_fleet *fl, size_t i)
{
    return dev(fl, i) ? dev(fl, i)->transfer : NULL;
}

cl_program clf_cl_program(const clf_program *p, size_t i)
{
    if (!p || !dev(p->fleet, i))
        return NULL;
    return p->prog[i];
}

cl_mem clf_cl_mem(const clf_buffer *b)
{
    return b ? b->mem : NULL;
}

cl_event clf_cl_event(const clf_event *e)
{
    return e ? e->ev : NULL;
}

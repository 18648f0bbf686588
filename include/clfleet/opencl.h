/*
 * Interoperability: the OpenCL handles behind clfleet objects.
 *
 * The handles stay owned by clfleet: retain them if they must outlive the
 * object, never release them otherwise.
 */
#ifndef CLFLEET_OPENCL_H
#define CLFLEET_OPENCL_H

#include <clfleet.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \brief The device's cl_device_id (NULL when out of range). */
CLF_API cl_device_id clf_cl_device(const clf_fleet *fleet, size_t device);
/** \brief The context holding the device. */
CLF_API cl_context clf_cl_context(const clf_fleet *fleet, size_t device);
/** \brief The device's in-order compute queue (profiling enabled). */
CLF_API cl_command_queue clf_cl_compute_queue(const clf_fleet *fleet, size_t device);
/** \brief The device's in-order transfer queue (profiling enabled). */
CLF_API cl_command_queue clf_cl_transfer_queue(const clf_fleet *fleet, size_t device);
/** \brief The program object built for the device (one per device, each built for that
 *  device only). */
CLF_API cl_program clf_cl_program(const clf_program *prog, size_t device);
/** \brief The buffer's memory object. */
CLF_API cl_mem clf_cl_mem(const clf_buffer *buf);
/** \brief The event's OpenCL event (NULL for a host-side event, e.g. a launch). */
CLF_API cl_event clf_cl_event(const clf_event *ev);
/** \brief Wrap an OpenCL event (retained) so clfleet calls can wait for it. */
CLF_API clf_status clf_event_from_cl(cl_event ev, clf_event **out);
/**
 * \brief An OpenCL event in device \p device's context that completes with
 * \p ev (a user event set from a callback when \p ev belongs to another
 * context, or to the host). Release it with clReleaseEvent().
 */
CLF_API clf_status clf_event_cl_for(clf_event *ev, clf_fleet *fleet, size_t device,
                                    cl_event *out);

#ifdef __cplusplus
}
#endif

#endif

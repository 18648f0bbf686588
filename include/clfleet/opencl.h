/**
 * \file clfleet/opencl.h
 * \brief Interoperability: the OpenCL handles behind clfleet objects.
 *
 * The handles stay owned by clfleet: retain them if they must outlive the
 * object, never release them otherwise.
 */
#ifndef CLFLEET_OPENCL_H
#define CLFLEET_OPENCL_H

#include <clfleet.h>

#ifndef CL_TARGET_OPENCL_VERSION
/** \brief The OpenCL API version of <CL/cl.h> that clfleet uses, unless set before. */
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * \brief The device's cl_device_id (NULL when out of range).
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return the handle (owned by clfleet), or NULL
 */
CLF_API cl_device_id clf_cl_device(const clf_fleet *fleet, size_t device);
/**
 * \brief The context holding the device.
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return the handle (owned by clfleet), or NULL
 */
CLF_API cl_context clf_cl_context(const clf_fleet *fleet, size_t device);
/**
 * \brief An in-order queue (profiling enabled) on the device for your own commands.
 *
 * It is reserved for you: clfleet enqueues none of its launches, kernels, copies or
 * collectives on it, so a command of yours there may wait for any clfleet event (through
 * clf_event_cl_for(), e.g. for a clf_launch_async() whose chunks are not queued yet) without
 * holding that work up. It is made on the first call (the same queue on every later call)
 * and starts after the work clfleet had queued on the device by then. clf_event_record(),
 * clf_barrier(), clf_device_wait_events(), clf_device_finish() and clf_fleet_finish() cover
 * it as they cover clfleet's queues; clfleet's other calls are not ordered with it, so give
 * them its commands' events (clf_event_from_cl()) to wait for.
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return the handle (owned by clfleet), or NULL (out of range, or the queue could not be
 *         made)
 */
CLF_API cl_command_queue clf_cl_compute_queue(const clf_fleet *fleet, size_t device);
/**
 * \brief The device's in-order transfer queue (profiling enabled).
 * \param fleet the fleet
 * \param device fleet index of the device
 * \return the handle (owned by clfleet), or NULL
 */
CLF_API cl_command_queue clf_cl_transfer_queue(const clf_fleet *fleet, size_t device);
/**
 * \brief The program object built for the device (one per device, each built for that
 * device only). It was built from the source with clfleet's prelude before it; when the
 * source names get_global_size() or get_num_groups() (or includes a file), every kernel
 * function has one more parameter than written, last: `const ulong4`, the range's global
 * sizes (1 past its dimensions), which a kernel you enqueue yourself must be given. The
 * prelude also makes get_global_offset() 0 and adds the offset to get_group_id().
 * \param prog the program
 * \param device fleet index of the device
 * \return the handle (owned by clfleet), or NULL
 */
CLF_API cl_program clf_cl_program(const clf_program *prog, size_t device);
/**
 * \brief The buffer's memory object.
 * \param buf the buffer
 * \return the handle (owned by clfleet), or NULL
 */
CLF_API cl_mem clf_cl_mem(const clf_buffer *buf);
/**
 * \brief The event's OpenCL event (NULL for a host-side event, e.g. a launch).
 * \param ev the event
 * \return the handle (owned by clfleet), or NULL
 */
CLF_API cl_event clf_cl_event(const clf_event *ev);
/**
 * \brief Wrap an OpenCL event (retained) so clfleet calls can wait for it.
 * \param ev the OpenCL event
 * \param out receives the clfleet event (release it)
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_event_from_cl(cl_event ev, clf_event **out);
/**
 * \brief An OpenCL event in device \p device's context that completes with
 * \p ev (a user event set from a callback when \p ev belongs to another
 * context, or to the host). Release it with clReleaseEvent(). On a device that runs
 * commands inside clEnqueue* (PoCL's basic device), a command waiting for an event that is
 * not complete yet would run inside another thread's completion, where PoCL 3 deadlocks:
 * there this call waits for \p ev on the host and returns an event that has completed
 * (with an error status if \p ev failed, so that a command waiting for it fails as in
 * OpenCL).
 * \param ev the clfleet event
 * \param fleet the fleet
 * \param device fleet index of the device
 * \param out receives the OpenCL event
 * \return CLF_SUCCESS, or a negative clf_status (detail in clf_last_error())
 */
CLF_API clf_status clf_event_cl_for(clf_event *ev, clf_fleet *fleet, size_t device,
                                    cl_event *out);

/**
 * \brief Take the device's enqueue lock around your own clEnqueue* calls on it.
 *
 * A device that runs commands inside clEnqueue* (PoCL's basic device) deadlocks when two
 * host threads enqueue to it at once, and clfleet enqueues from its own threads (launch
 * workers, copies, pipelines). Every clfleet enqueue to such a device holds this lock for
 * that call alone; code of yours that enqueues to the device while clfleet may be running
 * work on it must do the same: clf_cl_lock(), clEnqueue...(), clf_cl_unlock(). Never hold it
 * while waiting (clWaitForEvents, clFinish, a clfleet wait): the work waited for may need
 * it. It is recursive: clfleet calls that enqueue to the device may be made while holding
 * it. Other devices need no lock: this does nothing there (and for an index out of range).
 * \param fleet the fleet
 * \param device fleet index of the device
 */
CLF_API void clf_cl_lock(clf_fleet *fleet, size_t device);
/**
 * \brief Give back the lock of clf_cl_lock().
 * \param fleet the fleet
 * \param device fleet index of the device
 */
CLF_API void clf_cl_unlock(clf_fleet *fleet, size_t device);

#ifdef __cplusplus
}
#endif

#endif

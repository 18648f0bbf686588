/* lib/xfer: copies between devices (the transfer paths, staging, peer copies, CUDA),
 * events across contexts and devices, barriers. Not installed. */
#ifndef CLFLEET_XFER_H
#define CLFLEET_XFER_H

#include "core/core.h"

/* ---- transfers (transfer.c, staging.c, peer.c) ---- */

/* Gather every device pair's path (transfer: the option, or NULL for $CLFLEET_TRANSFER).
 * CLF_ERROR_PARSE names the option or the variable. */
clf_status clf__xfer_init(clf_fleet *fleet, const char *transfer);
/* Wait for copies in flight, free the staging buffers. */
void clf__xfer_fini(clf_fleet *fleet);
/* Wait until no asynchronous copy the host drives is waiting for its wait list, queued on
 * the helper pool or running there. */
void clf__xfer_drain(clf_fleet *fleet);
/* ---- events across contexts (sync.c) ---- */

/* An OpenCL event in device's context that completes with e (bridged through a user event
 * when e belongs to another context or to the host); release it with clReleaseEvent(). */
clf_status clf__event_cl_for(clf_event *e, clf_fleet *fleet, size_t device, cl_event *out);
/* Call fn(arg, status) once e has completed (CLF_SUCCESS) or failed (its detail is read by
 * waiting for e, which then returns at once), or at once when it has: in whichever thread
 * completes it (a driver's callback thread, the helper pool, a launch's), so fn must not
 * block. Whatever e is (an OpenCL event or a host-side completion), no thread waits
 * for it. Fails only for memory, and fn is then never called. The caller holds e until
 * fn has run. */
clf_status clf__event_notify(clf_event *e, void (*fn)(void *arg, clf_status st), void *arg);

/* ---- synchronisation (sync.c) ---- */

/* A marker after all the work queued so far on device's compute and transfer queues. */
clf_status clf__device_marker(clf_fleet *fleet, size_t device, cl_event *out);

#endif

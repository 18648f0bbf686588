/*
 * Optional CUDA driver layer for the NVIDIA peer-to-peer path. Always compiled, never linked
 * against CUDA: libcuda.so.1 is opened at run time and every entry point resolved through
 * cuGetProcAddress. Without the driver every function reports CLF_ERROR_UNSUPPORTED (or 0)
 * with the reason in the detail message. No OpenCL here: the OpenCL half of the path (the
 * fd import) lives in the transfer code and reaches the self-test through a callback.
 * (Not named cuda.h: with lib/ on the include path it would hide NVIDIA's <cuda.h>.)
 */
#ifndef CLFLEET_CUDADRV_H
#define CLFLEET_CUDADRV_H

#include "util/util.h"

#include <stddef.h>

/*
 * Load and initialise the driver, once per process (later calls return the first result).
 * Thread-safe. $CLFLEET_CUDA_LIBRARY, when set, replaces the name "libcuda.so.1" (tests,
 * unusual installs). Returns CLF_SUCCESS, or CLF_ERROR_UNSUPPORTED with the reason in the
 * detail message, e.g. "libcuda.so.1 not found: <dlerror>".
 */
clf_status clf__cuda_load(void);
/* Loads; nonzero when the driver is usable. Sets no detail message. */
int clf__cuda_available(void);
/* Why the driver is unusable ("" when it is); loads. The string lives forever. */
const char *clf__cuda_reason(void);
/* cuDriverGetVersion(), e.g. 12040; 0 when unavailable. */
int clf__cuda_driver_version(void);
/* Number of CUDA devices; 0 when unavailable. */
int clf__cuda_device_count(void);

/* CUDA ordinal of the device at PCI domain:bus:device (any function). *ordinal is -1 on
 * failure: CLF_ERROR_UNSUPPORTED, CLF_ERROR_NOT_FOUND, CLF_ERROR_NULL_POINTER. */
clf_status clf__cuda_device_by_pci(int *ordinal, unsigned domain, unsigned bus, unsigned dev);

/* Nonzero when device a can access device b's memory (cuDeviceCanAccessPeer). 0 for a == b,
 * bad ordinals, errors and no driver. */
int clf__cuda_can_access_peer(int a, int b);

/* Device memory mapped in the process's CUDA address space, exportable as a POSIX fd. */
typedef struct clf__cuda_mem clf__cuda_mem;

/*
 * Allocate at least size bytes on device ordinal (cuMemCreate, rounded up to the
 * recommended granularity), mapped read-write for ordinal and for each of peers[] that can
 * access it (the others are skipped), with a stream of its own. *fd receives a new POSIX
 * file descriptor for the allocation; the caller owns it (import it or close it). On
 * failure *out is NULL, *fd is -1 and nothing is left allocated.
 */
clf_status clf__cuda_alloc_exportable(clf__cuda_mem **out, int *fd, int ordinal, size_t size,
                                      const int *peers, size_t npeers);
/* The allocated (rounded) size; 0 for NULL. */
size_t clf__cuda_mem_size(const clf__cuda_mem *m);
/* The device ordinal; -1 for NULL. */
int clf__cuda_mem_device(const clf__cuda_mem *m);
/* Unmap and release; waits for the memory's stream. Accepts NULL. */
void clf__cuda_mem_free(clf__cuda_mem *m);

/*
 * Copy n bytes from src at soff to dst at doff (cuMemcpyPeerAsync on src's stream) and wait
 * for it: the host orders the two APIs, so OpenCL work on either buffer must be finished
 * before the call. CLF_ERROR_OUT_OF_RANGE for regions outside the allocations.
 */
clf_status clf__cuda_copy_peer(clf__cuda_mem *dst, size_t doff, const clf__cuda_mem *src,
                               size_t soff, size_t n);
/* Synchronous copies between the host and an allocation. */
clf_status clf__cuda_read(void *dst, const clf__cuda_mem *src, size_t off, size_t n);
clf_status clf__cuda_write(clf__cuda_mem *dst, size_t off, const void *src, size_t n);

/*
 * The OpenCL half of the self-test: import fd (taking ownership of it) as a buffer of size
 * bytes on the device under test, write data[0..len) at offset 0, finish, release the
 * buffer. Return CLF_SUCCESS or a failure with the detail message set.
 */
typedef clf_status (*clf__cuda_import_write_fn)(void *user, int fd, size_t size,
                                                const void *data, size_t len);

/*
 * Check that memory written through an OpenCL import of a CUDA allocation on device
 * ordinal reads back intact through CUDA. CLF_SUCCESS, the callback's failure, or
 * CLF_ERROR_UNSUPPORTED with "CUDA self-test ..." in the detail message.
 */
clf_status clf__cuda_selftest(int ordinal, clf__cuda_import_write_fn import_write, void *user);

#endif

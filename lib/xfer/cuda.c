/*
 * CUDA driver layer, loaded with dlopen() so that libclfleet never depends on CUDA. The few
 * driver types and constants are declared here; with HAVE_CUDA_H the real <cuda.h> is used
 * instead and static assertions prove that our copies agree with it.
 */
#include "cudadrv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Our copies of the driver's structures (cuda.h 13.0, unchanged since 12.0 in layout). */
typedef struct {
    int type; /* CUmemLocationType */
    int id;
} own_location;
typedef struct {
    int type;                 /* CUmemAllocationType */
    int requestedHandleTypes; /* CUmemAllocationHandleType */
    own_location location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} own_prop;
typedef struct {
    own_location location;
    int flags; /* CUmemAccess_flags */
} own_access;

/* Driver constants (plain integers: cuda.h enums differ in type from one another). */
#define X_SUCCESS                  0
#define X_ATTR_PCI_BUS_ID          33
#define X_ATTR_PCI_DEVICE_ID       34
#define X_ATTR_PCI_DOMAIN_ID       50
#define X_ATTR_VMM_SUPPORTED       102
#define X_ATTR_POSIX_FD_SUPPORTED  103
#define X_HANDLE_POSIX_FD          1
#define X_ALLOCATION_PINNED        1
#define X_LOCATION_DEVICE          1
#define X_ACCESS_READWRITE         3
#define X_GRANULARITY_RECOMMENDED  1
#define X_STREAM_NON_BLOCKING      1
#define X_PROC_LEGACY_STREAM       1 /* we never use the NULL stream */
#define X_PROC_SUCCESS             0

#ifdef HAVE_CUDA_H
#include <cuda.h>
#include <stddef.h>
typedef CUresult cu_result;
typedef CUdevice cu_device;
typedef CUcontext cu_ctx;
typedef CUstream cu_stream;
typedef CUdeviceptr cu_ptr;
typedef CUmemGenericAllocationHandle cu_handle;
typedef CUdevice_attribute cu_attr;
typedef CUmemAllocationHandleType cu_htype;
typedef CUmemAllocationGranularity_flags cu_gran;
typedef CUmemAllocationProp cu_prop;
typedef CUmemAccessDesc cu_access;
typedef CUdriverProcAddressQueryResult cu_qres;
typedef cuuint64_t cu_u64;
#define SAME_FIELD(t, u, f)                                                                    \
    _Static_assert(offsetof(t, f) == offsetof(u, f) && sizeof(((t *)0)->f) == sizeof(((u *)0)->f), \
                   #t "." #f " differs from cuda.h")
_Static_assert(sizeof(own_prop) == sizeof(CUmemAllocationProp), "CUmemAllocationProp size");
SAME_FIELD(own_prop, CUmemAllocationProp, type);
SAME_FIELD(own_prop, CUmemAllocationProp, requestedHandleTypes);
SAME_FIELD(own_prop, CUmemAllocationProp, location);
SAME_FIELD(own_prop, CUmemAllocationProp, location.type);
SAME_FIELD(own_prop, CUmemAllocationProp, location.id);
SAME_FIELD(own_prop, CUmemAllocationProp, win32HandleMetaData);
SAME_FIELD(own_prop, CUmemAllocationProp, allocFlags);
SAME_FIELD(own_prop, CUmemAllocationProp, allocFlags.compressionType);
SAME_FIELD(own_prop, CUmemAllocationProp, allocFlags.gpuDirectRDMACapable);
SAME_FIELD(own_prop, CUmemAllocationProp, allocFlags.usage);
SAME_FIELD(own_prop, CUmemAllocationProp, allocFlags.reserved);
_Static_assert(sizeof(own_access) == sizeof(CUmemAccessDesc), "CUmemAccessDesc size");
SAME_FIELD(own_access, CUmemAccessDesc, location);
SAME_FIELD(own_access, CUmemAccessDesc, flags);
_Static_assert(sizeof(CUdeviceptr) == sizeof(uintptr_t) && sizeof(CUdevice) == sizeof(int),
               "CUdeviceptr, CUdevice");
#define SAME_VALUE(ours, theirs) _Static_assert((ours) == (theirs), #ours " != " #theirs)
SAME_VALUE(X_SUCCESS, CUDA_SUCCESS);
SAME_VALUE(X_ATTR_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
SAME_VALUE(X_ATTR_PCI_DEVICE_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
SAME_VALUE(X_ATTR_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
SAME_VALUE(X_ATTR_VMM_SUPPORTED, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
SAME_VALUE(X_ATTR_POSIX_FD_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
SAME_VALUE(X_HANDLE_POSIX_FD, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
SAME_VALUE(X_ALLOCATION_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(X_LOCATION_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(X_ACCESS_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME_VALUE(X_GRANULARITY_RECOMMENDED, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
SAME_VALUE(X_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME_VALUE(X_PROC_LEGACY_STREAM, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
SAME_VALUE(X_PROC_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
#else
typedef int cu_result;
typedef int cu_device;
typedef struct cu_ctx_st *cu_ctx;
typedef struct cu_stream_st *cu_stream;
#if defined(__LP64__)
typedef unsigned long long cu_ptr; /* as CUdeviceptr in cuda.h */
#else
typedef unsigned int cu_ptr;
#endif
typedef unsigned long long cu_handle;
typedef int cu_attr; /* enums: passed as 32-bit integers */
typedef int cu_htype;
typedef int cu_gran;
typedef own_prop cu_prop;
typedef own_access cu_access;
typedef int cu_qres;
typedef uint64_t cu_u64;
#endif

/* Every entry point we use: X(name without "cu", parameters). Requested at the ABI of
 * min(driver, 12.0), so cuMemcpyDtoH means cuMemcpyDtoH_v2 and so on, as in cuda.h. */
#define CU_FUNCS(X)                                                                        \
    X(Init, (unsigned flags))                                                              \
    X(DeviceGetCount, (int *count))                                                        \
    X(DeviceGet, (cu_device * dev, int ordinal))                                           \
    X(DeviceGetAttribute, (int *value, cu_attr attr, cu_device dev))                       \
    X(DeviceCanAccessPeer, (int *can, cu_device dev, cu_device peer))                      \
    X(DevicePrimaryCtxRetain, (cu_ctx * ctx, cu_device dev))                               \
    X(DevicePrimaryCtxRelease, (cu_device dev))                                            \
    X(CtxPushCurrent, (cu_ctx ctx))                                                        \
    X(CtxPopCurrent, (cu_ctx * ctx))                                                       \
    X(MemGetAllocationGranularity, (size_t * gran, const cu_prop *prop, cu_gran option))   \
    X(MemCreate, (cu_handle * h, size_t size, const cu_prop *prop, unsigned long long fl)) \
    X(MemExportToShareableHandle, (void *out, cu_handle h, cu_htype t, unsigned long long fl)) \
    X(MemAddressReserve, (cu_ptr * p, size_t size, size_t align, cu_ptr addr,              \
                          unsigned long long fl))                                          \
    X(MemMap, (cu_ptr p, size_t size, size_t off, cu_handle h, unsigned long long fl))     \
    X(MemSetAccess, (cu_ptr p, size_t size, const cu_access *desc, size_t count))          \
    X(MemUnmap, (cu_ptr p, size_t size))                                                   \
    X(MemAddressFree, (cu_ptr p, size_t size))                                             \
    X(MemRelease, (cu_handle h))                                                           \
    X(StreamCreate, (cu_stream * s, unsigned flags))                                       \
    X(StreamDestroy, (cu_stream s))                                                        \
    X(StreamSynchronize, (cu_stream s))                                                    \
    X(MemcpyPeerAsync, (cu_ptr dst, cu_ctx dctx, cu_ptr src, cu_ctx sctx, size_t n,        \
                        cu_stream s))                                                      \
    X(MemcpyDtoH, (void *dst, cu_ptr src, size_t n))                                       \
    X(MemcpyHtoD, (cu_ptr dst, const void *src, size_t n))                                 \
    X(GetErrorName, (cu_result r, const char **name))

#define CU_TYPEDEF(name, params) typedef cu_result (*pfn_##name) params;
CU_FUNCS(CU_TYPEDEF)
typedef cu_result (*pfn_DriverGetVersion)(int *version);
typedef cu_result (*pfn_getproc1)(const char *sym, void **pfn, int ver, cu_u64 flags);
typedef cu_result (*pfn_getproc2)(const char *sym, void **pfn, int ver, cu_u64 flags,
                                  cu_qres *status);
#ifdef HAVE_CUDA_H
/* Our signatures are cuda.h's (the 4-argument cuGetProcAddress is no longer declared). */
#define CU_CHECK(name, params)                                                             \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&cu##name), pfn_##name),         \
                   "cu" #name " signature");
CU_FUNCS(CU_CHECK)
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress_v2), pfn_getproc2),
               "cuGetProcAddress_v2 signature");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuDriverGetVersion),
                                            pfn_DriverGetVersion),
               "cuDriverGetVersion signature");
#endif

/* Written once under pthread_once, read-only afterwards: no lock needed. */
static struct {
#define CU_MEMBER(name, params) pfn_##name name;
    CU_FUNCS(CU_MEMBER)
    int ok;
    int version;
    int ndev;
    char why[512];
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

/* Resolve a symbol through whichever cuGetProcAddress the driver has. */
static void *getproc(pfn_getproc2 gp2, pfn_getproc1 gp1, const char *sym, int ver)
{
    void *p = NULL;
    cu_qres st = (cu_qres)X_PROC_SUCCESS;
    cu_result r = gp2 ? gp2(sym, &p, ver, X_PROC_LEGACY_STREAM, &st)
                      : gp1(sym, &p, ver, X_PROC_LEGACY_STREAM);
    return r == X_SUCCESS && (int)st == X_PROC_SUCCESS ? p : NULL;
}

static const char *err_name(cu_result r)
{
    const char *s = NULL;
    if (!cu.GetErrorName || cu.GetErrorName(r, &s) != X_SUCCESS || !s)
        return "CUDA_ERROR_UNKNOWN";
    return s;
}

static void load_once(void)
{
    const char *name = getenv("CLFLEET_CUDA_LIBRARY");
    if (!name || !*name)
        name = "libcuda.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(cu.why, sizeof cu.why, "%s not found: %s", name, e ? e : "dlopen failed");
        return;
    }
    pfn_getproc2 gp2 = NULL;
    pfn_getproc1 gp1 = NULL;
    /* ISO C forbids converting void * to a function pointer; POSIX requires it to work. */
    *(void **)&gp2 = dlsym(lib, "cuGetProcAddress_v2");
    *(void **)&gp1 = dlsym(lib, "cuGetProcAddress");
    pfn_DriverGetVersion get_version = NULL;
    if (!gp2 && !gp1) {
        snprintf(cu.why, sizeof cu.why, "%s has no cuGetProcAddress (driver before CUDA 11.3)",
                 name);
        goto fail;
    }
    /* cuGetProcAddress exists since 11.3, so that version is always granted. */
    *(void **)&get_version = getproc(gp2, gp1, "cuDriverGetVersion", 11030);
    if (!get_version || get_version(&cu.version) != X_SUCCESS) {
        snprintf(cu.why, sizeof cu.why, "cuDriverGetVersion failed in %s", name);
        goto fail;
    }
    /* Asking for a version above the driver's is an error; above 12.0 the ABI may change. */
    int abi = cu.version < 12000 ? cu.version : 12000;
#define CU_RESOLVE(fn, params)                                                             \
    if (!(*(void **)&cu.fn = getproc(gp2, gp1, "cu" #fn, abi))) {                          \
        snprintf(cu.why, sizeof cu.why, "cu" #fn " not found in %s (driver version %d)",   \
                 name, cu.version);                                                        \
        goto fail;                                                                         \
    }
    CU_FUNCS(CU_RESOLVE)
    const char *call = "cuInit";
    cu_result r = cu.Init(0);
    if (r == X_SUCCESS) {
        call = "cuDeviceGetCount";
        r = cu.DeviceGetCount(&cu.ndev);
    }
    if (r != X_SUCCESS) {
        snprintf(cu.why, sizeof cu.why, "%s failed: %s (%d)", call, err_name(r), (int)r);
        goto fail;
    }
    cu.ok = 1; /* the library stays loaded: unloading a GPU driver at exit is fragile */
    return;
fail:
    memset(&cu, 0, offsetof(__typeof__(cu), why)); /* keep only the reason */
    dlclose(lib);
}

clf_status clf__cuda_load(void)
{
    pthread_once(&cu_once, load_once);
    if (cu.ok)
        return CLF_SUCCESS;
    return clf__fail(CLF_ERROR_UNSUPPORTED, "CUDA unavailable: %s", cu.why);
}

int clf__cuda_available(void)
{
    pthread_once(&cu_once, load_once);
    return cu.ok;
}

const char *clf__cuda_reason(void)
{
    pthread_once(&cu_once, load_once);
    return cu.why;
}

int clf__cuda_driver_version(void)
{
    return clf__cuda_available() ? cu.version : 0;
}

int clf__cuda_device_count(void)
{
    return clf__cuda_available() ? cu.ndev : 0;
}

/* There is no CUDA status in clfleet.h: a failed driver call means "this path cannot be
 * used here", which callers treat as they treat a missing driver. */
static clf_status cu_fail(const char *call, cu_result r)
{
    return clf__fail(CLF_ERROR_UNSUPPORTED, "%s failed: %s (%d)", call, err_name(r), (int)r);
}

#define CU_TRY(st, call, args)                                                             \
    do {                                                                                   \
        cu_result r_ = cu.call args;                                                       \
        if (r_ != X_SUCCESS) {                                                             \
            (st) = cu_fail("cu" #call, r_);                                                \
            goto out;                                                                      \
        }                                                                                  \
    } while (0)

clf_status clf__cuda_device_by_pci(int *ordinal, unsigned domain, unsigned bus, unsigned dev)
{
    if (!ordinal)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__cuda_device_by_pci: ordinal is NULL");
    *ordinal = -1;
    clf_status st = clf__cuda_load();
    for (int i = 0; st == CLF_SUCCESS && i < cu.ndev; i++) {
        cu_device d;
        int v[3];
        CU_TRY(st, DeviceGet, (&d, i));
        CU_TRY(st, DeviceGetAttribute, (&v[0], (cu_attr)X_ATTR_PCI_DOMAIN_ID, d));
        CU_TRY(st, DeviceGetAttribute, (&v[1], (cu_attr)X_ATTR_PCI_BUS_ID, d));
        CU_TRY(st, DeviceGetAttribute, (&v[2], (cu_attr)X_ATTR_PCI_DEVICE_ID, d));
        if ((unsigned)v[0] == domain && (unsigned)v[1] == bus && (unsigned)v[2] == dev) {
            *ordinal = i;
            return CLF_SUCCESS;
        }
    }
    if (st == CLF_SUCCESS)
        st = clf__fail(CLF_ERROR_NOT_FOUND, "no CUDA device at PCI %04x:%02x:%02x", domain, bus,
                       dev);
out:
    return st;
}

int clf__cuda_can_access_peer(int a, int b)
{
    if (!clf__cuda_available() || a == b || a < 0 || b < 0 || a >= cu.ndev || b >= cu.ndev)
        return 0;
    cu_device da, db;
    int can = 0;
    if (cu.DeviceGet(&da, a) != X_SUCCESS || cu.DeviceGet(&db, b) != X_SUCCESS ||
        cu.DeviceCanAccessPeer(&can, da, db) != X_SUCCESS)
        return 0;
    return can != 0;
}

struct clf__cuda_mem {
    int ordinal;
    cu_device dev;
    cu_ctx ctx; /* retained primary context: NULL until retained */
    cu_stream stream;
    cu_handle handle;
    int created, reserved, mapped;
    cu_ptr ptr;
    size_t size;
};

size_t clf__cuda_mem_size(const clf__cuda_mem *m)
{
    return m ? m->size : 0;
}

int clf__cuda_mem_device(const clf__cuda_mem *m)
{
    return m ? m->ordinal : -1;
}

/* Undo whatever part of the allocation was done; errors cannot be acted on here. */
void clf__cuda_mem_free(clf__cuda_mem *m)
{
    if (!m)
        return;
    if (m->ctx) {
        cu_ctx prev;
        cu.CtxPushCurrent(m->ctx);
        if (m->stream) {
            cu.StreamSynchronize(m->stream);
            cu.StreamDestroy(m->stream);
        }
        if (m->mapped)
            cu.MemUnmap(m->ptr, m->size);
        if (m->reserved)
            cu.MemAddressFree(m->ptr, m->size);
        if (m->created)
            cu.MemRelease(m->handle);
        cu.CtxPopCurrent(&prev);
        cu.DevicePrimaryCtxRelease(m->dev);
    }
    free(m);
}

clf_status clf__cuda_alloc_exportable(clf__cuda_mem **out, int *fd, int ordinal, size_t size,
                                      const int *peers, size_t npeers)
{
    if (!out || !fd || (npeers && !peers))
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__cuda_alloc_exportable: NULL argument");
    *out = NULL;
    *fd = -1;
    clf_status st = clf__cuda_load();
    if (st != CLF_SUCCESS)
        return st;
    if (size == 0)
        return clf__fail(CLF_ERROR_ZERO_SIZE, "clf__cuda_alloc_exportable: size is zero");
    if (ordinal < 0 || ordinal >= cu.ndev)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "CUDA device %d of %d", ordinal, cu.ndev);
    size_t nacc = 0;
    cu_access *acc = NULL;
    int pushed = 0, vmm = 0, posix = 0, exported = -1;
    clf__cuda_mem *m = calloc(1, sizeof *m);
    if (!m || !(acc = calloc(npeers + 1, sizeof *acc))) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf__cuda_alloc_exportable");
        goto out;
    }
    m->ordinal = ordinal;
    CU_TRY(st, DeviceGet, (&m->dev, ordinal));
    CU_TRY(st, DeviceGetAttribute, (&vmm, (cu_attr)X_ATTR_VMM_SUPPORTED, m->dev));
    CU_TRY(st, DeviceGetAttribute, (&posix, (cu_attr)X_ATTR_POSIX_FD_SUPPORTED, m->dev));
    if (!vmm || !posix) {
        st = clf__fail(CLF_ERROR_UNSUPPORTED,
                       "CUDA device %d lacks virtual memory management or POSIX fd export",
                       ordinal);
        goto out;
    }
    CU_TRY(st, DevicePrimaryCtxRetain, (&m->ctx, m->dev));
    CU_TRY(st, CtxPushCurrent, (m->ctx));
    pushed = 1;
    cu_prop prop;
    memset(&prop, 0, sizeof prop);
    prop.type = X_ALLOCATION_PINNED;
    prop.requestedHandleTypes = X_HANDLE_POSIX_FD;
    prop.location.type = X_LOCATION_DEVICE;
    prop.location.id = ordinal; /* "a device ordinal", says cuda.h */
    size_t gran = 0;
    CU_TRY(st, MemGetAllocationGranularity, (&gran, &prop, (cu_gran)X_GRANULARITY_RECOMMENDED));
    if (gran == 0 || size > SIZE_MAX - (gran - 1)) {
        st = clf__fail(CLF_ERROR_SIZE_OVERFLOW, "CUDA allocation of %zu bytes", size);
        goto out;
    }
    m->size = (size + gran - 1) / gran * gran;
    CU_TRY(st, MemCreate, (&m->handle, m->size, &prop, 0));
    m->created = 1;
    CU_TRY(st, MemAddressReserve, (&m->ptr, m->size, 0, 0, 0));
    m->reserved = 1;
    CU_TRY(st, MemMap, (m->ptr, m->size, 0, m->handle, 0));
    m->mapped = 1;
    /* The owner, then each peer that may map it: cuMemSetAccess rejects the others. */
    for (size_t i = 0; i <= npeers; i++) {
        int o = i == 0 ? ordinal : peers[i - 1];
        if (i > 0 && !clf__cuda_can_access_peer(o, ordinal))
            continue;
        acc[nacc].location.type = X_LOCATION_DEVICE;
        acc[nacc].location.id = o;
        acc[nacc].flags = X_ACCESS_READWRITE;
        nacc++;
    }
    CU_TRY(st, MemSetAccess, (m->ptr, m->size, acc, nacc));
    CU_TRY(st, StreamCreate, (&m->stream, X_STREAM_NON_BLOCKING));
    CU_TRY(st, MemExportToShareableHandle, (&exported, m->handle, (cu_htype)X_HANDLE_POSIX_FD, 0));
    *fd = exported;
    *out = m;
    m = NULL;
out:
    if (pushed) {
        cu_ctx prev;
        cu.CtxPopCurrent(&prev);
    }
    clf__cuda_mem_free(m);
    free(acc);
    return st;
}

static clf_status check_range(const clf__cuda_mem *m, size_t off, size_t n, const char *what)
{
    size_t end;
    if (!m)
        return clf__fail(CLF_ERROR_NULL_POINTER, "%s: NULL CUDA memory", what);
    if (clf__add_overflow(off, n, &end) || end > m->size)
        return clf__fail(CLF_ERROR_OUT_OF_RANGE, "%s: %zu bytes at %zu exceed %zu", what, n,
                         off, m->size);
    return CLF_SUCCESS;
}

clf_status clf__cuda_copy_peer(clf__cuda_mem *dst, size_t doff, const clf__cuda_mem *src,
                               size_t soff, size_t n)
{
    clf_status st = clf__cuda_load();
    if (st == CLF_SUCCESS)
        st = check_range(dst, doff, n, "CUDA copy destination");
    if (st == CLF_SUCCESS)
        st = check_range(src, soff, n, "CUDA copy source");
    if (st != CLF_SUCCESS || n == 0)
        return st;
    cu_ctx prev;
    CU_TRY(st, CtxPushCurrent, (src->ctx));
    cu_result r = cu.MemcpyPeerAsync(dst->ptr + doff, dst->ctx, src->ptr + soff, src->ctx, n,
                                     src->stream);
    if (r != X_SUCCESS)
        st = cu_fail("cuMemcpyPeerAsync", r);
    else if ((r = cu.StreamSynchronize(src->stream)) != X_SUCCESS)
        st = cu_fail("cuStreamSynchronize", r);
    cu.CtxPopCurrent(&prev);
out:
    return st;
}

/* Host <-> device copy in m's context; to_host selects the direction. */
static clf_status host_copy(const clf__cuda_mem *m, size_t off, void *host, size_t n,
                            int to_host)
{
    clf_status st = clf__cuda_load();
    if (st == CLF_SUCCESS)
        st = check_range(m, off, n, to_host ? "CUDA read" : "CUDA write");
    if (st == CLF_SUCCESS && n && !host)
        st = clf__fail(CLF_ERROR_NULL_POINTER, "CUDA copy: NULL host pointer");
    if (st != CLF_SUCCESS || n == 0)
        return st;
    cu_ctx prev;
    CU_TRY(st, CtxPushCurrent, (m->ctx));
    cu_result r = to_host ? cu.MemcpyDtoH(host, m->ptr + off, n)
                          : cu.MemcpyHtoD(m->ptr + off, host, n);
    if (r != X_SUCCESS)
        st = cu_fail(to_host ? "cuMemcpyDtoH" : "cuMemcpyHtoD", r);
    cu.CtxPopCurrent(&prev);
out:
    return st;
}

clf_status clf__cuda_read(void *dst, const clf__cuda_mem *src, size_t off, size_t n)
{
    return host_copy(src, off, dst, n, 1);
}

clf_status clf__cuda_write(clf__cuda_mem *dst, size_t off, const void *src, size_t n)
{
    return host_copy(dst, off, (void *)src, n, 0);
}

clf_status clf__cuda_selftest(int ordinal, clf__cuda_import_write_fn import_write, void *user)
{
    enum { LEN = 1 << 16 };
    if (!import_write)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__cuda_selftest: no import callback");
    clf__cuda_mem *m = NULL;
    int fd = -1;
    unsigned char *want = malloc(LEN), *got = malloc(LEN);
    clf_status st = CLF_SUCCESS;
    if (!want || !got) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf__cuda_selftest");
        goto out;
    }
    /* Distinct bytes that a zero-filled or stale page cannot match by chance. */
    for (size_t i = 0; i < LEN; i++)
        want[i] = (unsigned char)(i * 131u + 7u + (i >> 8));
    memset(got, 0, LEN);
    CLF__TRY(st, clf__cuda_alloc_exportable(&m, &fd, ordinal, LEN, NULL, 0));
    CLF__TRY(st, clf__cuda_write(m, 0, got, LEN)); /* so old contents cannot pass */
    int handed = fd;
    fd = -1; /* the callback owns it now, whatever it returns */
    CLF__TRY(st, import_write(user, handed, clf__cuda_mem_size(m), want, LEN));
    CLF__TRY(st, clf__cuda_read(got, m, 0, LEN));
    for (size_t i = 0; i < LEN; i++)
        if (got[i] != want[i]) {
            st = clf__fail(CLF_ERROR_UNSUPPORTED,
                           "CUDA self-test on device %d: byte %zu written through OpenCL "
                           "as 0x%02x reads back through CUDA as 0x%02x",
                           ordinal, i, want[i], got[i]);
            goto out;
        }
out:
    if (fd >= 0)
        close(fd);
    clf__cuda_mem_free(m);
    free(want);
    free(got);
    return st;
}

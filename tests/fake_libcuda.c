/*
 * A fake libcuda.so.1 for test_cuda: the entry points clfleet's CUDA layer uses, backed by
 * memfd pages so that an exported "CUDA allocation" fd can be mapped by the test the way
 * an OpenCL driver would import it. Loaded through $CLFLEET_CUDA_LIBRARY.
 *
 * Three devices: 0 at 0000:3b:00, 1 at 0000:af:00 (peers of each other), 2 at 0001:3b:00
 * (no peers). Knobs, read at each call:
 *   FAKE_CUDA_FAIL=cuX     cuX returns CUDA_ERROR_OUT_OF_MEMORY (cuInit: NO_DEVICE)
 *   FAKE_CUDA_MISSING=cuX  cuGetProcAddress does not find cuX
 *   FAKE_CUDA_VERSION=N    driver version (default 12040)
 *   FAKE_CUDA_NO_VMM=1     devices lack virtual memory management
 * Built with -DFAKE_V1_ONLY it exports only the CUDA 11 cuGetProcAddress.
 * fake_cuda_live() counts what is still allocated; fake_cuda_max_abi() the highest
 * cudaVersion asked of cuGetProcAddress.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NDEV 3
#define GRAN ((size_t)2 << 20)
#define SLOTS 64

typedef int res;
typedef unsigned long long dptr;
typedef struct {
    int type, id;
} loc;
typedef struct {
    int type, handle_types;
    loc location;
    void *win32;
    unsigned char flags[8];
} prop;
typedef struct {
    loc location;
    int flags;
} access_desc;

/* The exported names (the rest is reached through cuGetProcAddress, as in the driver). */
int fake_cuda_live(void);
int fake_cuda_max_abi(void);
res cuDriverGetVersion(int *v);
res cuGetProcAddress(const char *sym, void **pfn, int ver, unsigned long long flags);
res cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags,
                        int *status);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc {
    int used, released, fd, dev;
    unsigned char *base;
    size_t size;
} allocs[SLOTS];
static struct region {
    int used;
    dptr va;
    size_t size;
    int alloc; /* mapped allocation + 1; 0 when only reserved */
} regions[SLOTS];
static int ctx_refs[NDEV], streams, max_abi;
static dptr next_va = (dptr)1 << 40;
static _Thread_local int ctx_stack[8], ctx_depth;

static int knob(const char *name, const char *fn)
{
    const char *v = getenv(name);
    return v && strcmp(v, fn) == 0;
}
#define FAIL_IF(fn)                                                                        \
    do {                                                                                   \
        if (knob("FAKE_CUDA_FAIL", fn))                                                    \
            return 2;                                                                      \
    } while (0)

static int version(void)
{
    const char *v = getenv("FAKE_CUDA_VERSION");
    return v ? atoi(v) : 12040;
}

int fake_cuda_live(void)
{
    int n = streams;
    for (int i = 0; i < SLOTS; i++)
        n += allocs[i].used + regions[i].used;
    for (int i = 0; i < NDEV; i++)
        n += ctx_refs[i];
    return n;
}

int fake_cuda_max_abi(void)
{
    return max_abi;
}

static res cuInit(unsigned flags)
{
    if (knob("FAKE_CUDA_FAIL", "cuInit"))
        return 100;
    return flags ? 1 : 0;
}

res cuDriverGetVersion(int *v)
{
    *v = version();
    return 0;
}

static res cuDeviceGetCount(int *n)
{
    FAIL_IF("cuDeviceGetCount");
    *n = NDEV;
    return 0;
}

static res cuDeviceGet(int *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= NDEV)
        return 101;
    *d = ordinal;
    return 0;
}

static res cuDeviceGetAttribute(int *v, int attr, int d)
{
    FAIL_IF("cuDeviceGetAttribute");
    if (d < 0 || d >= NDEV)
        return 101;
    int vmm = !getenv("FAKE_CUDA_NO_VMM");
    switch (attr) {
    case 33: *v = d == 1 ? 0xaf : 0x3b; return 0;
    case 34: *v = 0; return 0;
    case 50: *v = d == 2; return 0;
    case 102: case 103: *v = vmm; return 0;
    }
    return 1;
}

static res cuDeviceCanAccessPeer(int *can, int a, int b)
{
    if (a < 0 || b < 0 || a >= NDEV || b >= NDEV || a == b)
        return 101;
    *can = a != 2 && b != 2;
    return 0;
}

static res cuDevicePrimaryCtxRetain(void **ctx, int d)
{
    FAIL_IF("cuDevicePrimaryCtxRetain");
    pthread_mutex_lock(&lock);
    ctx_refs[d]++;
    pthread_mutex_unlock(&lock);
    *ctx = &ctx_refs[d];
    return 0;
}

static res cuDevicePrimaryCtxRelease(int d)
{
    pthread_mutex_lock(&lock);
    int bad = ctx_refs[d] <= 0;
    if (!bad)
        ctx_refs[d]--;
    pthread_mutex_unlock(&lock);
    return bad ? 201 : 0;
}

static res cuCtxPushCurrent(void *ctx)
{
    if (!ctx || ctx_depth == 8)
        return 201;
    ctx_stack[ctx_depth++] = (int)((int *)ctx - ctx_refs);
    return 0;
}

static res cuCtxPopCurrent(void **ctx)
{
    if (ctx_depth == 0)
        return 201;
    *ctx = &ctx_refs[ctx_stack[--ctx_depth]];
    return 0;
}

static res cuMemGetAllocationGranularity(size_t *g, const prop *p, int option)
{
    FAIL_IF("cuMemGetAllocationGranularity");
    if (p->type != 1 || p->location.type != 1 || option < 0 || option > 1)
        return 1;
    *g = GRAN;
    return 0;
}

static res cuMemCreate(unsigned long long *h, size_t size, const prop *p,
                       unsigned long long flags)
{
    FAIL_IF("cuMemCreate");
    static const unsigned char zero[8];
    if (flags || size == 0 || size % GRAN || p->type != 1 || p->handle_types != 1 ||
        p->location.type != 1 || p->location.id < 0 || p->location.id >= NDEV || p->win32 ||
        memcmp(p->flags, zero, 8))
        return 1;
    int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        if (fd >= 0)
            close(fd);
        return 2;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < SLOTS && allocs[i].used)
        i++;
    if (i == SLOTS || base == MAP_FAILED) {
        pthread_mutex_unlock(&lock);
        if (base != MAP_FAILED)
            munmap(base, size);
        close(fd);
        return 2;
    }
    allocs[i] = (struct alloc){1, 0, fd, p->location.id, base, size};
    pthread_mutex_unlock(&lock);
    *h = (unsigned long long)i + 1;
    return 0;
}

/* Free an allocation that is released and no longer mapped. Called with the lock held. */
static void maybe_free(int a)
{
    for (int i = 0; i < SLOTS; i++)
        if (regions[i].used && regions[i].alloc == a + 1)
            return;
    if (allocs[a].used && allocs[a].released) {
        munmap(allocs[a].base, allocs[a].size);
        close(allocs[a].fd);
        allocs[a].used = 0;
    }
}

static res cuMemRelease(unsigned long long h)
{
    int a = (int)h - 1, bad;
    pthread_mutex_lock(&lock);
    bad = a < 0 || a >= SLOTS || !allocs[a].used || allocs[a].released;
    if (!bad) {
        allocs[a].released = 1;
        maybe_free(a);
    }
    pthread_mutex_unlock(&lock);
    return bad ? 1 : 0;
}

static res cuMemExportToShareableHandle(void *out, unsigned long long h, int type,
                                        unsigned long long flags)
{
    FAIL_IF("cuMemExportToShareableHandle");
    int a = (int)h - 1;
    if (type != 1 || flags || a < 0 || a >= SLOTS || !allocs[a].used)
        return 1;
    int fd = dup(allocs[a].fd);
    if (fd < 0)
        return 2;
    *(int *)out = fd;
    return 0;
}

static res cuMemAddressReserve(dptr *p, size_t size, size_t align, dptr addr,
                               unsigned long long flags)
{
    FAIL_IF("cuMemAddressReserve");
    if (size == 0 || size % GRAN || (align && align % GRAN) || addr || flags)
        return 1;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < SLOTS && regions[i].used)
        i++;
    if (i < SLOTS) {
        regions[i] = (struct region){1, next_va, size, 0};
        *p = next_va;
        next_va += size + GRAN; /* a gap, so overruns do not land in a neighbour */
    }
    pthread_mutex_unlock(&lock);
    return i < SLOTS ? 0 : 2;
}

static int find_region(dptr va)
{
    for (int i = 0; i < SLOTS; i++)
        if (regions[i].used && regions[i].va == va)
            return i;
    return -1;
}

static res cuMemMap(dptr va, size_t size, size_t off, unsigned long long h,
                    unsigned long long flags)
{
    FAIL_IF("cuMemMap");
    int a = (int)h - 1, bad;
    pthread_mutex_lock(&lock);
    int r = find_region(va);
    bad = r < 0 || off || flags || a < 0 || a >= SLOTS || !allocs[a].used ||
          regions[r].alloc || regions[r].size != size || allocs[a].size != size;
    if (!bad)
        regions[r].alloc = a + 1;
    pthread_mutex_unlock(&lock);
    return bad ? 1 : 0;
}

static res cuMemSetAccess(dptr va, size_t size, const access_desc *d, size_t n)
{
    FAIL_IF("cuMemSetAccess");
    pthread_mutex_lock(&lock);
    int r = find_region(va);
    int bad = r < 0 || !regions[r].alloc || regions[r].size != size || n == 0;
    int owner = bad ? -1 : allocs[regions[r].alloc - 1].dev, can = 0;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; !bad && i < n; i++) {
        int id = d[i].location.id;
        bad = d[i].location.type != 1 || id < 0 || id >= NDEV || d[i].flags != 3 ||
              (id != owner && (cuDeviceCanAccessPeer(&can, id, owner) || !can));
    }
    return bad ? 101 : 0;
}

static res cuMemUnmap(dptr va, size_t size)
{
    pthread_mutex_lock(&lock);
    int r = find_region(va);
    int bad = r < 0 || !regions[r].alloc || regions[r].size != size;
    if (!bad) {
        int a = regions[r].alloc - 1;
        regions[r].alloc = 0;
        maybe_free(a);
    }
    pthread_mutex_unlock(&lock);
    return bad ? 1 : 0;
}

static res cuMemAddressFree(dptr va, size_t size)
{
    pthread_mutex_lock(&lock);
    int r = find_region(va);
    int bad = r < 0 || regions[r].alloc || regions[r].size != size;
    if (!bad)
        regions[r].used = 0;
    pthread_mutex_unlock(&lock);
    return bad ? 1 : 0;
}

/* Host address of [va, va + n) in a mapped region, or NULL. */
static unsigned char *host_of(dptr va, size_t n)
{
    unsigned char *p = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS && !p; i++) {
        struct region *g = &regions[i];
        if (g->used && g->alloc && va >= g->va && n <= g->size && va - g->va <= g->size - n)
            p = allocs[g->alloc - 1].base + (va - g->va);
    }
    pthread_mutex_unlock(&lock);
    return p;
}

static res cuStreamCreate(void **s, unsigned flags)
{
    FAIL_IF("cuStreamCreate");
    if (ctx_depth == 0)
        return 201;
    if (flags != 1 || !(*s = malloc(1)))
        return 1;
    pthread_mutex_lock(&lock);
    streams++;
    pthread_mutex_unlock(&lock);
    return 0;
}

static res cuStreamDestroy(void *s)
{
    pthread_mutex_lock(&lock);
    streams--;
    pthread_mutex_unlock(&lock);
    free(s);
    return 0;
}

static res cuStreamSynchronize(void *s)
{
    FAIL_IF("cuStreamSynchronize");
    return s ? 0 : 400;
}

static res cuMemcpyPeerAsync(dptr dst, void *dctx, dptr src, void *sctx, size_t n, void *s)
{
    FAIL_IF("cuMemcpyPeerAsync");
    unsigned char *d = host_of(dst, n), *p = host_of(src, n);
    if (!d || !p || !dctx || !sctx || !s || ctx_depth == 0)
        return 1;
    memmove(d, p, n);
    return 0;
}

static res cuMemcpyDtoH(void *dst, dptr src, size_t n)
{
    FAIL_IF("cuMemcpyDtoH");
    unsigned char *p = host_of(src, n);
    if (!p || ctx_depth == 0)
        return ctx_depth ? 1 : 201;
    memcpy(dst, p, n);
    return 0;
}

static res cuMemcpyHtoD(dptr dst, const void *src, size_t n)
{
    FAIL_IF("cuMemcpyHtoD");
    unsigned char *p = host_of(dst, n);
    if (!p || ctx_depth == 0)
        return ctx_depth ? 1 : 201;
    memcpy(p, src, n);
    return 0;
}

static res cuGetErrorName(res r, const char **s)
{
    static const struct {
        res r;
        const char *s;
    } names[] = {{0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"},
                 {2, "CUDA_ERROR_OUT_OF_MEMORY"}, {100, "CUDA_ERROR_NO_DEVICE"},
                 {101, "CUDA_ERROR_INVALID_DEVICE"}, {201, "CUDA_ERROR_INVALID_CONTEXT"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].r == r) {
            *s = names[i].s;
            return 0;
        }
    *s = NULL;
    return 1;
}

#define F(name) {#name, (void *)name}
static const struct {
    const char *name;
    void *fn;
} table[] = {
    F(cuInit), F(cuDriverGetVersion), F(cuDeviceGetCount), F(cuDeviceGet),
    F(cuDeviceGetAttribute), F(cuDeviceCanAccessPeer), F(cuDevicePrimaryCtxRetain),
    F(cuDevicePrimaryCtxRelease), F(cuCtxPushCurrent), F(cuCtxPopCurrent),
    F(cuMemGetAllocationGranularity), F(cuMemCreate), F(cuMemExportToShareableHandle),
    F(cuMemAddressReserve), F(cuMemMap), F(cuMemSetAccess), F(cuMemUnmap),
    F(cuMemAddressFree), F(cuMemRelease), F(cuStreamCreate), F(cuStreamDestroy),
    F(cuStreamSynchronize), F(cuMemcpyPeerAsync), F(cuMemcpyDtoH), F(cuMemcpyHtoD),
    F(cuGetErrorName),
};

static res lookup(const char *sym, void **pfn, int ver, unsigned long long flags, int *status)
{
    *pfn = NULL;
    *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    if (ver > version() || flags > 3)
        return 1;
    pthread_mutex_lock(&lock);
    if (ver > max_abi)
        max_abi = ver;
    pthread_mutex_unlock(&lock);
    if (knob("FAKE_CUDA_MISSING", sym))
        return 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, sym) == 0) {
            *pfn = table[i].fn;
            *status = 0;
        }
    return 0;
}

res cuGetProcAddress(const char *sym, void **pfn, int ver, unsigned long long flags)
{
    int status;
    return lookup(sym, pfn, ver, flags, &status);
}

#ifndef FAKE_V1_ONLY
res cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags,
                        int *status)
{
    int st;
    res r = lookup(sym, pfn, ver, flags, &st);
    if (status)
        *status = st;
    return r;
}
#endif

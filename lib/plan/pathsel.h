/*
 * Transfer path selection: which way a copy from device A to device B goes. A pure function
 * of device facts (no OpenCL or CUDA calls), so every rule is unit-tested on synthetic
 * devices. The facts are gathered once at fleet creation by the transfer code.
 */
#ifndef CLFLEET_PATHSEL_H
#define CLFLEET_PATHSEL_H

#include "util/util.h"

#include <stddef.h>

/* In order of preference: the first that applies wins. */
typedef enum clf__path {
    CLF__PATH_SAME_DEVICE = 0, /* clEnqueueCopyBuffer on the device's queue */
    CLF__PATH_UNIFIED = 1,     /* both host-unified, one context: copy in context or map */
    CLF__PATH_AMD_P2P = 2,     /* clEnqueueCopyBufferP2PAMD */
    CLF__PATH_CUDA_P2P = 3,    /* CUDA peer copy through imported CUDA memory */
    CLF__PATH_STAGED = 4,      /* pipelined host staging; always possible */
    CLF__PATH_COUNT = 5
} clf__path;

/* Bit of path p in a disabled mask. The STAGED bit is ignored: staging never fails. */
#define CLF__PATH_BIT(p) (1u << (unsigned)(p))
/* "staged": everything but staging disabled, the same device included. */
#define CLF__PATH_FORCE_STAGED                                                              \
    (CLF__PATH_BIT(CLF__PATH_SAME_DEVICE) | CLF__PATH_BIT(CLF__PATH_UNIFIED) |              \
     CLF__PATH_BIT(CLF__PATH_AMD_P2P) | CLF__PATH_BIT(CLF__PATH_CUDA_P2P))

/* What the selector knows about one fleet device. */
typedef struct clf__path_dev {
    int host_unified;     /* CL_DEVICE_HOST_UNIFIED_MEMORY */
    unsigned context;     /* index of the fleet context holding the device */
    int amd_p2p;          /* advertises cl_amd_copy_buffer_p2p */
    const size_t *amd_peers; /* fleet indices listed in its CL_DEVICE_P2P_DEVICES_AMD */
    size_t namd_peers;
    int pci_known;        /* the PCI address below is valid */
    unsigned pci_domain, pci_bus, pci_device, pci_function;
    int cuda_ordinal;     /* CUDA device with the same PCI address; -1: none */
    int cuda_import;      /* importing CUDA memory into this device passed the self-test */
} clf__path_dev;

/* Facts about the machine rather than one device. */
typedef struct clf__path_env {
    int cuda_ok;                    /* libcuda.so.1 loaded and initialised */
    const unsigned char *cuda_peer; /* [ncuda * ncuda]: [s * ncuda + d] = can s access d */
    size_t ncuda;
} clf__path_env;

/*
 * The path for a copy from fleet device ia (facts a) to device ib (facts b), skipping the
 * paths whose CLF__PATH_BIT is in disabled. env may be NULL (no CUDA). direct, when not
 * NULL, receives 1 when a path other than staging applies with nothing disabled (what
 * clfleet-info reports as "direct"), else 0.
 */
clf__path clf__path_select(const clf__path_dev *a, size_t ia, const clf__path_dev *b, size_t ib,
                           const clf__path_env *env, unsigned disabled, int *direct);

/* "same-device", "unified", "amd-p2p", "cuda-p2p", "staged"; "unknown" otherwise. */
const char *clf__path_name(clf__path p);

/*
 * Parse a CLFLEET_TRANSFER value: comma-separated, case-insensitive tokens among "auto",
 * "staged" (or "force-staged"), "no-unified", "no-amd", "no-cuda", "no-p2p" (no-amd and
 * no-cuda). NULL or blank gives 0. On CLF_ERROR_PARSE *disabled is left unchanged and the
 * detail message names the bad token.
 */
clf_status clf__path_parse_env(const char *s, unsigned *disabled);

/* Fill the facts that clf_device_info holds; cuda_ordinal is -1 and the AMD peer list empty
 * until the transfer code resolves them. */
void clf__path_dev_from_info(clf__path_dev *out, const clf_device_info *info);

#endif

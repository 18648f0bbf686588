/*
 * Vendor and KHR extension constants clfleet needs. The installed OpenCL headers vary by
 * distribution and age (AMD and NVIDIA query tokens are often missing, and the external
 * memory tokens were renamed in 2023), so each value is defined here only when the system
 * <CL/cl_ext.h> has not defined it already. Values checked against the Khronos headers,
 * clinfo, hwloc, PoCL and the ROCm OpenCL runtime.
 */
#ifndef CLFLEET_CLEXT_H
#define CLFLEET_CLEXT_H

#include "util/util.h"

#include <CL/cl_ext.h>

/* ---- cl_khr_pci_bus_info ---- */

#ifndef CL_DEVICE_PCI_BUS_INFO_KHR
#define CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
typedef struct _cl_device_pci_bus_info_khr {
    cl_uint pci_domain;
    cl_uint pci_bus;
    cl_uint pci_device;
    cl_uint pci_function;
} cl_device_pci_bus_info_khr;
#endif

/* ---- cl_nv_device_attribute_query (each a cl_uint) ---- */

#ifndef CL_DEVICE_PCI_BUS_ID_NV
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#endif
#ifndef CL_DEVICE_PCI_SLOT_ID_NV
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009 /* (device << 3) | function */
#endif
#ifndef CL_DEVICE_PCI_DOMAIN_ID_NV
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#endif

/* ---- cl_amd_device_attribute_query ---- */

#ifndef CL_DEVICE_TOPOLOGY_AMD
#define CL_DEVICE_TOPOLOGY_AMD 0x4037
#endif
/* The union comes with the type constant in every header that has it. Its bus, device and
 * function are cl_char: convert through unsigned char, or buses above 127 go negative. */
#ifndef CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD
#define CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD 1
typedef union {
    struct {
        cl_uint type;
        cl_uint data[5];
    } raw;
    struct {
        cl_uint type;
        cl_char unused[17];
        cl_char bus;
        cl_char device;
        cl_char function;
    } pcie;
} cl_device_topology_amd;
#endif

/* ---- cl_amd_copy_buffer_p2p ---- */

#ifndef CL_DEVICE_NUM_P2P_DEVICES_AMD
#define CL_DEVICE_NUM_P2P_DEVICES_AMD 0x4088 /* cl_uint */
#endif
#ifndef CL_DEVICE_P2P_DEVICES_AMD
#define CL_DEVICE_P2P_DEVICES_AMD 0x4089 /* cl_device_id[]; size query with NULL unsupported */
#endif

/* Our own name: vendor headers that declare this type disagree on its name. Resolve with
 * clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueCopyBufferP2PAMD"). */
typedef cl_int(CL_API_CALL *clf__copy_buffer_p2p_amd_fn)(
    cl_command_queue queue, cl_mem src_buffer, cl_mem dst_buffer, size_t src_offset,
    size_t dst_offset, size_t cb, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event);

/* ---- cl_khr_external_memory, cl_khr_external_memory_opaque_fd ---- */

#ifndef CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR
#define CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR 0x204F /* cl_uint[] */
#endif
/* Named CL_DEVICE_HANDLE_LIST_KHR in headers before late 2023; the value did not change. */
#ifndef CL_MEM_DEVICE_HANDLE_LIST_KHR
#define CL_MEM_DEVICE_HANDLE_LIST_KHR 0x2051
#endif
#ifndef CL_MEM_DEVICE_HANDLE_LIST_END_KHR
#define CL_MEM_DEVICE_HANDLE_LIST_END_KHR 0
#endif
#ifndef CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR
#define CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR 0x2060
#endif

#endif

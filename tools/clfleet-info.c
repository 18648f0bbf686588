/* clfleet-info: every OpenCL platform and device, with the facts clfleet uses. */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clfleet.h"
#include "clfleet/opencl.h"
#include "notes.h"
#include "json.h"

static void usage(FILE *to)
{
    fputs("usage: clfleet-info [--json | -l | --all | --measure] [--devices SELECTION]\n"
          "                    [--split N | --split-counts A+B] [--context-per-device]\n"
          "       clfleet-info --perf [--json] | --perf-reset | --cache | --cache-clear\n"
          "       clfleet-info --help | --version\n"
          "Lists every device on every OpenCL platform, marking those of the default fleet\n"
          "(what clf_fleet_create() selects with no selection given: $CLFLEET_DEVICES, else\n"
          "every GPU and accelerator, CPU devices only when there is none), then the\n"
          "transfer path of every ordered device pair ($CLFLEET_TRANSFER applies).\n"
          "  --json                one JSON document on standard output\n"
          "  -l, --list            one line per device (as clinfo -l)\n"
          "  --all                 every property of each device, name and value (as clinfo)\n"
          "  --measure             time copies between every ordered pair of devices and the\n"
          "                        host: bandwidth and latency matrices (a few seconds)\n"
          "  --devices S           list the devices of selection S instead (see\n"
          "                        doc/02-devices.md; default \"type=all\", or\n"
          "                        $CLFLEET_DEVICES when set)\n"
          "  --split N             split each CPU device into sub-devices of N compute units\n"
          "                        (none: do not split, whatever the selection says)\n"
          "  --split-counts A+B    or into sub-devices of A, B, ... units\n"
          "  --context-per-device  one context per device (default: one per platform)\n"
          "  --perf                the device speeds learned per kernel, kept in the cache\n"
          "                        directory ($CLFLEET_CACHE_DIR, else ~/.cache/clfleet)\n"
          "  --perf-reset          forget them: launches start from compute units x clock\n"
          "  --cache               the binary cache: directory, program binaries, size\n"
          "  --cache-clear         remove its program binaries (they are rebuilt when needed)\n"
          "  -h, --help            this text\n"
          "  -V, --version         the version\n"
          "Exit status: 0 success, 1 failure (no device, a bad selection), 2 bad command line.\n",
          to);
}

/* The table's name column: a longer name ends in "..." so that a cut one does not pass for
 * the whole name (ASCII dots, since printf pads by bytes; the cut never splits a UTF-8
 * character). */
#define NAME_COLUMN 34
static const char *name_cell(const char *name, char out[NAME_COLUMN + 1])
{
    size_t n = strlen(name);
    if (n <= NAME_COLUMN)
        return name;
    n = NAME_COLUMN - 3;
    while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
        n--;
    snprintf(out, NAME_COLUMN + 1, "%.*s...", (int)n, name);
    return out;
}

/* A bad command line: one line saying what is wrong and where to read more (as clfleet-bench
 * does), not the whole usage text, which would push the message off the screen. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clfleet-info: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'clfleet-info --help'.\n", stderr);
    return 2;
}

/*
 * What identifies a device across two fleets: its root device's cl_device_id, and for a
 * sub-device its place among the sub-devices of that root in the fleet (from 0).
 */
typedef struct device_key {
    cl_device_id root;
    int sub; /* -1: the root device itself */
} device_key;

static device_key key_of(const clf_fleet *f, size_t i)
{
    device_key k = {clf_cl_device(f, i), -1};
    cl_device_id parent = NULL;
    if (clGetDeviceInfo(k.root, CL_DEVICE_PARENT_DEVICE, sizeof parent, &parent, NULL) !=
            CL_SUCCESS ||
        !parent)
        return k;
    /* Sub-devices of one root come out of clCreateSubDevices() together, in order. */
    k.sub = 0;
    for (size_t j = 0; j < i; j++) {
        cl_device_id pj = NULL;
        if (clGetDeviceInfo(clf_cl_device(f, j), CL_DEVICE_PARENT_DEVICE, sizeof pj, &pj,
                            NULL) == CL_SUCCESS &&
            pj == parent)
            k.sub++;
    }
    k.root = parent;
    return k;
}

/*
 * Whether device i of f is in the default fleet `def` (NULL: there is none): the same device,
 * or for a root device listed whole, a device of the default fleet split from it.
 */
static int in_default(const clf_fleet *f, size_t i, const clf_fleet *def)
{
    if (!def)
        return 0;
    device_key k = key_of(f, i);
    for (size_t j = 0; j < clf_fleet_device_count(def); j++) {
        device_key d = key_of(def, j);
        if (d.root == k.root && (k.sub < 0 || d.sub == k.sub))
            return 1;
    }
    return 0;
}

/* "1 of #0": sub-device 1 of root device #0 as `clfleet-info --devices type=all` numbers
 * root devices (the index= of selections); "-" for a root device. */
static void sub_string(const clf_fleet *f, size_t i, const clf_device_info *in, char *buf,
                       size_t n)
{
    if (!in->is_sub_device) {
        snprintf(buf, n, "-");
        return;
    }
    snprintf(buf, n, "%d of #%d", key_of(f, i).sub, in->parent_index);
}

static void pci_string(const clf_device_info *in, char *buf, size_t n)
{
    if (in->pci_known)
        snprintf(buf, n, "%04x:%02x:%02x.%x", in->pci_domain, in->pci_bus, in->pci_device,
                 in->pci_function);
    else
        snprintf(buf, n, "-");
}

/* Direct peer-to-peer capability as far as device facts tell. */
static const char *p2p_capable(const clf_fleet *f, size_t i, const clf_device_info *in)
{
    if (clf_device_has_extension(f, i, "cl_amd_copy_buffer_p2p"))
        return "amd";
    if (strstr(in->vendor, "NVIDIA") && in->pci_known)
        return "cuda?";
    return "no";
}

/* The transfer path of every ordered device pair, and whether it is direct. */
static void json_paths(const clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    for (int pass = 0; pass < 2; pass++) {
        printf(",\n  \"%s\": [", pass ? "direct" : "paths");
        for (size_t s = 0; s < n; s++) {
            printf("%s\n    [", s ? "," : "");
            for (size_t d = 0; d < n; d++) {
                clf_path p = CLF_PATH_STAGED;
                int direct = 0;
                clf_transfer_path(&p, &direct, f, s, d);
                if (pass)
                    printf("%s%s", d ? ", " : "", direct ? "true" : "false");
                else
                    printf("%s\"%s\"", d ? ", " : "", clf_path_name(p));
            }
            printf("]");
        }
        printf("\n  ]");
    }
    printf(",\n  \"cuda\": ");
    clf_tool_json_string(clf_transfer_cuda_status(f));
}

/* A space-separated list as JSON strings separated by ", ". */
static void json_words(const char *list)
{
    const char *p = list ? list : "";
    int first = 1;
    for (;;) {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        char word[256];
        snprintf(word, sizeof word, "%.*s", (int)(len < sizeof word ? len : sizeof word - 1), p);
        printf("%s", first ? "" : ", ");
        clf_tool_json_string(word);
        first = 0;
        p += len;
    }
}

static void print_json(const clf_fleet *f, const clf_fleet *def)
{
    size_t n = clf_fleet_device_count(f);
    printf("{\n  \"clfleet_version\": ");
    clf_tool_json_string(clf_version_string());
    printf(",\n  \"contexts\": %zu,\n  \"devices\": [", clf_fleet_context_count(f));
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) != CLF_SUCCESS)
            continue;
        char pci[32];
        pci_string(&in, pci, sizeof pci);
        printf("%s\n    {\"index\": %zu, \"name\": ", i ? "," : "", i);
        clf_tool_json_string(in.name);
        printf(", \"vendor\": ");
        clf_tool_json_string(in.vendor);
        printf(", \"platform\": ");
        clf_tool_json_string(in.platform);
        printf(", \"platform_index\": %u, \"type\": \"%s\", \"version\": ", in.platform_index,
               clf_device_type_name(in.type));
        clf_tool_json_string(in.version);
        printf(", \"driver_version\": ");
        clf_tool_json_string(in.driver_version);
        printf(",\n     \"global_mem\": %llu, \"max_alloc\": %llu, \"local_mem\": %llu, "
               "\"compute_units\": %u, \"clock_mhz\": %u,\n     \"host_unified\": %s, "
               "\"fp64\": %s, \"pci\": ",
               (unsigned long long)in.global_mem, (unsigned long long)in.max_alloc,
               (unsigned long long)in.local_mem, in.compute_units, in.clock_mhz,
               in.host_unified ? "true" : "false", in.fp64 ? "true" : "false");
        if (in.pci_known)
            clf_tool_json_string(pci);
        else
            printf("null");
        printf(", \"p2p\": \"%s\", \"context\": %u, \"sub_device\": %s, \"parent\": %d, "
               "\"sub_device_index\": %d,\n     \"in_default_fleet\": %s, \"extensions\": [",
               p2p_capable(f, i, &in), in.context_index, in.is_sub_device ? "true" : "false",
               in.parent_index, in.is_sub_device ? key_of(f, i).sub : -1,
               in_default(f, i, def) ? "true" : "false");
        json_words(in.extensions);
        printf("]}");
    }
    printf("\n  ]");
    json_paths(f);
    printf("\n}\n");
}

/* The matrix of transfer paths: rows are sources, columns destinations. */
static void table_paths(const clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    printf("\nTransfer paths (row: from, column: to; * = direct, no host copy)\n     ");
    for (size_t d = 0; d < n; d++)
        printf(d + 1 < n ? " %-13zu" : " %zu", d);
    printf("\n");
    for (size_t s = 0; s < n; s++) {
        printf("  %-3zu", s);
        for (size_t d = 0; d < n; d++) {
            clf_path p = CLF_PATH_STAGED;
            int direct = 0;
            char cell[32];
            clf_transfer_path(&p, &direct, f, s, d);
            snprintf(cell, sizeof cell, "%s%s", clf_path_name(p), direct ? "*" : "");
            printf(d + 1 < n ? " %-13s" : " %s", cell);
        }
        printf("\n");
    }
    printf("CUDA peer-to-peer: %s\n", clf_transfer_cuda_status(f));
}

/* ---- --list: one line per device ---- */

/* Where the root device of fleet device i sits on its platform (clGetDeviceIDs order, as
 * clinfo -l numbers devices): *pdev, or -1 when OpenCL will not say. */
static int device_on_platform(const clf_fleet *f, size_t i)
{
    cl_device_id root = key_of(f, i).root;
    cl_platform_id pl = NULL;
    cl_uint n = 0;
    int at = -1;
    if (clGetDeviceInfo(root, CL_DEVICE_PLATFORM, sizeof pl, &pl, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return -1;
    cl_device_id *ids = calloc(n, sizeof *ids);
    if (ids && clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, n, ids, NULL) == CL_SUCCESS)
        for (cl_uint k = 0; k < n && at < 0; k++)
            if (ids[k] == root)
                at = (int)k;
    free(ids);
    return at;
}

/* A CPU-only host lists one device: say how to make a fleet of it, since one device gives
 * the balancing nothing to do (the demo's closing lines say the same). A device of one
 * compute unit cannot be split, so it gets no hint. */
static void cpu_hint(const clf_fleet *f)
{
    clf_device_info in;
    if (clf_fleet_device_count(f) != 1 || clf_device_get_info(&in, f, 0) != CLF_SUCCESS ||
        in.type != CLF_DEVICE_CPU || in.is_sub_device || in.compute_units < 2)
        return;
    printf("\nhint: one CPU device and nothing else: split it into sub-devices of one compute "
           "unit each to use\n      it as a fleet: CLFLEET_DEVICES=\"type=cpu;split=1\" (see "
           "doc/02-devices.md)\n");
}

static void print_list(const clf_fleet *f, const clf_fleet *def)
{
    size_t n = clf_fleet_device_count(f);
    printf("    %-3s %-10s %-5s %4s %12s  %s\n", "#", "plat/dev", "type", "CUs", "memory (GiB)",
           "name");
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) != CLF_SUCCESS)
            continue;
        char where[32];
        int d = device_on_platform(f, i);
        int len = d < 0 ? snprintf(where, sizeof where, "%u/?", in.platform_index)
                        : snprintf(where, sizeof where, "%u/%d", in.platform_index, d);
        /* A sub-device: ".k" for part k of that device. */
        if (in.is_sub_device && len > 0 && (size_t)len < sizeof where)
            snprintf(where + len, sizeof where - (size_t)len, ".%d", key_of(f, i).sub);
        printf("  %c %-3zu %-10s %-5s %4u %12.1f  %s\n", in_default(f, i, def) ? '*' : ' ', i,
               where, clf_device_type_name(in.type), in.compute_units,
               (double)in.global_mem / (1u << 30), in.name);
    }
    printf("  (*: in the default fleet; plat/dev: platform and device as OpenCL numbers them, "
           ".k: sub-device k)\n");
    cpu_hint(f);
}

/* ---- --all: every property, name and value ---- */

enum prop_kind { P_STR, P_UINT, P_HEX, P_ULONG, P_BYTES, P_SIZE, P_BOOL, P_SIZES, P_FP,
                 P_QUEUE, P_EXEC, P_LOCAL, P_CACHE, P_PARTITION, P_WORDS };

typedef struct raw_prop {
    cl_device_info id;
    const char *name;
    enum prop_kind kind;
} raw_prop;

/* The OpenCL properties worth having when choosing or debugging a device, clinfo's
 * grouping: identity, compute, memory, work sizes, precision, images, queues, partition. */
static const raw_prop RAW[] = {
    {CL_DEVICE_NAME, "Name", P_STR},
    {CL_DEVICE_VENDOR, "Vendor", P_STR},
    {CL_DEVICE_VENDOR_ID, "Vendor ID", P_HEX},
    {CL_DEVICE_VERSION, "Device version", P_STR},
    {CL_DEVICE_OPENCL_C_VERSION, "OpenCL C version", P_STR},
    {CL_DRIVER_VERSION, "Driver version", P_STR},
    {CL_DEVICE_PROFILE, "Profile", P_STR},
    {CL_DEVICE_AVAILABLE, "Available", P_BOOL},
    {CL_DEVICE_COMPILER_AVAILABLE, "Compiler available", P_BOOL},
    {CL_DEVICE_LINKER_AVAILABLE, "Linker available", P_BOOL},
    {CL_DEVICE_MAX_COMPUTE_UNITS, "Max compute units", P_UINT},
    {CL_DEVICE_MAX_CLOCK_FREQUENCY, "Max clock (MHz)", P_UINT},
    {CL_DEVICE_ADDRESS_BITS, "Address bits", P_UINT},
    {CL_DEVICE_ENDIAN_LITTLE, "Little endian", P_BOOL},
    {CL_DEVICE_ERROR_CORRECTION_SUPPORT, "Error correction", P_BOOL},
    {CL_DEVICE_HOST_UNIFIED_MEMORY, "Host unified memory", P_BOOL},
    {CL_DEVICE_GLOBAL_MEM_SIZE, "Global memory (bytes)", P_BYTES},
    {CL_DEVICE_MAX_MEM_ALLOC_SIZE, "Max allocation (bytes)", P_BYTES},
    {CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, "Global memory cache (bytes)", P_BYTES},
    {CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, "Global memory cache line (bytes)", P_UINT},
    {CL_DEVICE_GLOBAL_MEM_CACHE_TYPE, "Global memory cache type", P_CACHE},
    {CL_DEVICE_LOCAL_MEM_SIZE, "Local memory (bytes)", P_BYTES},
    {CL_DEVICE_LOCAL_MEM_TYPE, "Local memory type", P_LOCAL},
    {CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, "Max constant buffer (bytes)", P_BYTES},
    {CL_DEVICE_MAX_CONSTANT_ARGS, "Max constant arguments", P_UINT},
    {CL_DEVICE_MAX_PARAMETER_SIZE, "Max kernel parameters (bytes)", P_SIZE},
    {CL_DEVICE_MEM_BASE_ADDR_ALIGN, "Base address alignment (bits)", P_UINT},
    {CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, "Max work-item dimensions", P_UINT},
    {CL_DEVICE_MAX_WORK_ITEM_SIZES, "Max work-item sizes", P_SIZES},
    {CL_DEVICE_MAX_WORK_GROUP_SIZE, "Max work-group size", P_SIZE},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, "Preferred vector width int", P_UINT},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, "Preferred vector width float", P_UINT},
    {CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, "Preferred vector width double", P_UINT},
    {CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, "Native vector width float", P_UINT},
    {CL_DEVICE_SINGLE_FP_CONFIG, "Single precision", P_FP},
    {CL_DEVICE_DOUBLE_FP_CONFIG, "Double precision", P_FP},
    {CL_DEVICE_IMAGE_SUPPORT, "Image support", P_BOOL},
    {CL_DEVICE_IMAGE2D_MAX_WIDTH, "Max 2D image width (pixels)", P_SIZE},
    {CL_DEVICE_IMAGE2D_MAX_HEIGHT, "Max 2D image height (pixels)", P_SIZE},
    {CL_DEVICE_IMAGE3D_MAX_WIDTH, "Max 3D image width (pixels)", P_SIZE},
    {CL_DEVICE_IMAGE3D_MAX_HEIGHT, "Max 3D image height (pixels)", P_SIZE},
    {CL_DEVICE_IMAGE3D_MAX_DEPTH, "Max 3D image depth (pixels)", P_SIZE},
    {CL_DEVICE_MAX_READ_IMAGE_ARGS, "Max read image arguments", P_UINT},
    {CL_DEVICE_MAX_WRITE_IMAGE_ARGS, "Max write image arguments", P_UINT},
    {CL_DEVICE_MAX_SAMPLERS, "Max samplers", P_UINT},
    {CL_DEVICE_QUEUE_PROPERTIES, "Queue properties", P_QUEUE},
    {CL_DEVICE_EXECUTION_CAPABILITIES, "Execution capabilities", P_EXEC},
    {CL_DEVICE_PROFILING_TIMER_RESOLUTION, "Profiling timer resolution (ns)", P_SIZE},
    {CL_DEVICE_PRINTF_BUFFER_SIZE, "Printf buffer (bytes)", P_SIZE},
    {CL_DEVICE_PREFERRED_INTEROP_USER_SYNC, "Preferred interop user sync", P_BOOL},
    {CL_DEVICE_PARTITION_MAX_SUB_DEVICES, "Max sub-devices", P_UINT},
    {CL_DEVICE_PARTITION_PROPERTIES, "Partition types", P_PARTITION},
    {CL_DEVICE_BUILT_IN_KERNELS, "Built-in kernels", P_WORDS},
    {CL_DEVICE_EXTENSIONS, "Extensions", P_WORDS},
};

#define PROP_COLUMN 34

static void prop(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void prop(const char *name, const char *fmt, ...)
{
    va_list ap;
    printf("  %-*s ", PROP_COLUMN, name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* Appends word to buf (of n bytes), separated by ", ". */
static void add_word(char *buf, size_t n, const char *word)
{
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, "%s%s", len ? ", " : "", word);
}

/* A byte count with its size in the closest binary unit, so that both the exact figure and
 * its magnitude show. */
static void bytes_text(char *buf, size_t n, unsigned long long v)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
    int u = -1;
    double x = (double)v;
    while (x >= 1024 && u < 3) {
        x /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, n, "%llu", v);
    else
        snprintf(buf, n, "%llu (%.1f %s)", v, x, unit[u]);
}

static void print_raw(cl_device_id id, const raw_prop *p)
{
    /* A union, so that the size_t and cl_ulong values are read from aligned storage. */
    union {
        unsigned char b[8192];
        size_t z[8192 / sizeof(size_t)];
        cl_ulong l[8192 / sizeof(cl_ulong)];
        cl_uint i[8192 / sizeof(cl_uint)];
        cl_device_partition_property pp[8192 / sizeof(cl_device_partition_property)];
    } v;
    unsigned char *val = v.b;
    size_t got = 0;
    char text[8192] = "";
    cl_int err = clGetDeviceInfo(id, p->id, sizeof v.b - 1, v.b, &got);
    if (err != CL_SUCCESS) {
        /* A property the device or its OpenCL version does not have. */
        prop(p->name, "n/a (OpenCL error %d)", (int)err);
        return;
    }
    cl_ulong u = 0;
    if (got == sizeof(cl_uint))
        u = v.i[0];
    else if (got == sizeof(cl_ulong))
        u = v.l[0];
    switch (p->kind) {
    case P_STR:
        val[got < sizeof v.b ? got : sizeof v.b - 1] = '\0';
        prop(p->name, "%s", (char *)val);
        return;
    case P_WORDS: {
        /* One word a line, in the value column: extension lists run to hundreds of chars. */
        val[got < sizeof v.b ? got : sizeof v.b - 1] = '\0';
        const char *s = (char *)val;
        size_t count = 0;
        for (const char *q = s; *(q += strspn(q, " ;")); q += strcspn(q, " ;"))
            count++;
        char name[64];
        snprintf(name, sizeof name, "%s (%zu)", p->name, count);
        if (!count)
            prop(name, "none");
        for (const char *q = s; *(q += strspn(q, " ;")); q += strcspn(q, " ;"))
            printf("  %-*s %.*s\n", PROP_COLUMN, q == s + strspn(s, " ;") ? name : "",
                   (int)strcspn(q, " ;"), q);
        return;
    }
    case P_UINT:
    case P_ULONG:
        prop(p->name, "%llu", (unsigned long long)u);
        return;
    case P_HEX:
        prop(p->name, "0x%llx", (unsigned long long)u);
        return;
    case P_BYTES:
        bytes_text(text, sizeof text, (unsigned long long)u);
        prop(p->name, "%s", text);
        return;
    case P_SIZE:
        prop(p->name, "%zu", v.z[0]);
        return;
    case P_BOOL:
        prop(p->name, "%s", u ? "yes" : "no");
        return;
    case P_SIZES:
        for (size_t k = 0; k < got / sizeof(size_t); k++) {
            char w[32];
            snprintf(w, sizeof w, "%zu", v.z[k]);
            size_t len = strlen(text);
            snprintf(text + len, sizeof text - len, "%s%s", k ? " x " : "", w);
        }
        prop(p->name, "%s", text);
        return;
    case P_FP:
        if (u & CL_FP_DENORM) add_word(text, sizeof text, "denormals");
        if (u & CL_FP_INF_NAN) add_word(text, sizeof text, "inf/nan");
        if (u & CL_FP_ROUND_TO_NEAREST) add_word(text, sizeof text, "round to nearest");
        if (u & CL_FP_ROUND_TO_ZERO) add_word(text, sizeof text, "round to zero");
        if (u & CL_FP_ROUND_TO_INF) add_word(text, sizeof text, "round to inf");
        if (u & CL_FP_FMA) add_word(text, sizeof text, "fma");
        if (u & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
            add_word(text, sizeof text, "correctly rounded divide/sqrt");
        if (u & CL_FP_SOFT_FLOAT) add_word(text, sizeof text, "soft float");
        prop(p->name, "%s", u ? text : "none");
        return;
    case P_QUEUE:
        if (u & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
            add_word(text, sizeof text, "out-of-order");
        if (u & CL_QUEUE_PROFILING_ENABLE) add_word(text, sizeof text, "profiling");
        prop(p->name, "%s", u ? text : "in-order only, no profiling");
        return;
    case P_EXEC:
        if (u & CL_EXEC_KERNEL) add_word(text, sizeof text, "OpenCL kernels");
        if (u & CL_EXEC_NATIVE_KERNEL) add_word(text, sizeof text, "native kernels");
        prop(p->name, "%s", u ? text : "none");
        return;
    case P_LOCAL:
        prop(p->name, "%s", u == CL_LOCAL ? "local" : u == CL_GLOBAL ? "global" : "none");
        return;
    case P_CACHE:
        prop(p->name, "%s", u == CL_READ_ONLY_CACHE ? "read-only"
                            : u == CL_READ_WRITE_CACHE ? "read-write" : "none");
        return;
    case P_PARTITION:
        for (size_t k = 0; k < got / sizeof(cl_device_partition_property); k++) {
            cl_device_partition_property pv = v.pp[k];
            if (pv == 0)
                break; /* the list may end in a 0 */
            add_word(text, sizeof text, pv == CL_DEVICE_PARTITION_EQUALLY ? "equally"
                                        : pv == CL_DEVICE_PARTITION_BY_COUNTS ? "by counts"
                                        : pv == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN
                                            ? "by affinity domain"
                                            : "other");
        }
        prop(p->name, "%s", *text ? text : "none (cannot be split)");
        return;
    }
}

static void print_all(const clf_fleet *f, const clf_fleet *def)
{
    size_t n = clf_fleet_device_count(f);
    printf("clfleet %s: %zu device(s) in %zu context(s)\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) != CLF_SUCCESS)
            continue;
        char pci[32], sub[32], mem[64];
        pci_string(&in, pci, sizeof pci);
        sub_string(f, i, &in, sub, sizeof sub);
        printf("\nDevice %zu: %s\n", i, in.name);
        /* What clfleet makes of the device first, then what OpenCL says. */
        prop("Platform", "%u: %s (%s)", in.platform_index, in.platform, in.platform_vendor);
        int d = device_on_platform(f, i);
        if (d >= 0)
            prop("Device on the platform", "%d", d);
        else
            prop("Device on the platform", "unknown");
        prop("Type", "%s", clf_device_type_name(in.type));
        prop("In the default fleet", "%s", in_default(f, i, def) ? "yes" : "no");
        prop("Context", "%u", in.context_index);
        prop("Sub-device", "%s", sub);
        prop("OpenCL version (clfleet)", "%u.%u", in.cl_major, in.cl_minor);
        prop("PCI address", "%s", pci);
        prop("Peer-to-peer copies", "%s", p2p_capable(f, i, &in));
        prop("Double precision (fp64)", "%s", in.fp64 ? "yes" : "no");
        bytes_text(mem, sizeof mem, (unsigned long long)in.global_mem);
        prop("Global memory (bytes, clfleet)", "%s", mem);
        cl_device_id id = clf_cl_device(f, i);
        for (size_t k = 0; k < sizeof RAW / sizeof RAW[0]; k++)
            print_raw(id, &RAW[k]);
    }
    cpu_hint(f);
}

/* ---- --measure: bandwidth and latency of every ordered pair ---- */

#define MEASURE_REPS 5
#define MEASURE_SMALL ((size_t)1 << 20)
#define MEASURE_BIG ((size_t)32 << 20)
#define MEASURE_TINY ((size_t)8)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What --measure holds: per device a source and a destination buffer, and the host's. */
typedef struct measure {
    clf_fleet *f;
    size_t n, big;               /* devices; the largest copy, bytes */
    clf_buffer **src, **dst;     /* [n] */
    unsigned char *hsrc, *hdst;  /* host memory, big bytes each */
} measure;

/* The bytes that endpoint e (a device, or n: the host) holds as a source: different for each,
 * so that a copy from the wrong place shows. */
static void fill_pattern(unsigned char *p, size_t bytes, size_t e)
{
    for (size_t k = 0; k < bytes; k++)
        p[k] = (unsigned char)(k * 131u + e * 7u + 1u + (k >> 12));
}

/* One copy from endpoint s to endpoint d (n: the host), the way an application does it:
 * clf_copy() between devices, whatever path the fleet chose for the pair, and
 * clf_buffer_write()/clf_buffer_read() to and from host memory. */
static clf_status one_copy(measure *m, size_t s, size_t d, size_t bytes)
{
    if (s == m->n)
        return clf_buffer_write(m->dst[d], 0, bytes, m->hsrc);
    if (d == m->n)
        return clf_buffer_read(m->src[s], 0, bytes, m->hdst);
    return clf_copy(m->dst[d], 0, m->src[s], 0, bytes);
}

/* Median seconds per copy of `bytes` from s to d; < 0 on a failed copy (reported). */
static double time_copies(measure *m, size_t s, size_t d, size_t bytes)
{
    /* Enough copies per repetition that the clock resolves them; few enough for seconds in
     * all even with many devices. */
    size_t inner = bytes <= MEASURE_TINY ? 20 : ((size_t)64 << 20) / bytes;
    inner = inner < 1 ? 1 : inner > 16 ? 16 : inner;
    double t[MEASURE_REPS];
    clf_status st = one_copy(m, s, d, bytes); /* warm-up: first-touch and staging slots */
    for (int r = 0; r < MEASURE_REPS && st == CLF_SUCCESS; r++) {
        double t0 = now_s();
        for (size_t k = 0; k < inner && st == CLF_SUCCESS; k++)
            st = one_copy(m, s, d, bytes);
        t[r] = (now_s() - t0) / (double)inner;
    }
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: --measure: copy of %zu bytes from %s%zu to %s%zu: %s: "
                "%s\n", bytes, s == m->n ? "host" : "device ", s == m->n ? (size_t)0 : s,
                d == m->n ? "host" : "device ", d == m->n ? (size_t)0 : d,
                clf_status_string(st), clf_last_error());
        return -1;
    }
    qsort(t, MEASURE_REPS, sizeof t[0], cmp_double);
    return t[MEASURE_REPS / 2];
}

/* Whether the last big copy from s to d delivered the source's bytes. */
static int check_copy(measure *m, size_t s, size_t d, unsigned char *want, unsigned char *got)
{
    fill_pattern(want, m->big, s);
    if (d != m->n && clf_buffer_read(m->dst[d], 0, m->big, got) != CLF_SUCCESS)
        return 0;
    return memcmp(d == m->n ? m->hdst : got, want, m->big) == 0;
}

static void endpoint_label(char *buf, size_t len, size_t e, size_t n)
{
    if (e == n)
        snprintf(buf, len, "host");
    else
        snprintf(buf, len, "%zu", e);
}

/* A StarPU-style matrix: rows are sources, columns destinations, one figure a cell. */
static void print_matrix(const char *title, const double *v, size_t n, const char *fmt)
{
    char lab[32];
    printf("\n%s\n%-8s", title, "from\\to");
    for (size_t d = 0; d <= n; d++) {
        endpoint_label(lab, sizeof lab, (d + n) % (n + 1), n); /* host first */
        printf(" %9s", lab);
    }
    printf("\n");
    for (size_t si = 0; si <= n; si++) {
        size_t s = (si + n) % (n + 1);
        endpoint_label(lab, sizeof lab, s, n);
        printf("%-8s", lab);
        for (size_t di = 0; di <= n; di++) {
            size_t d = (di + n) % (n + 1);
            double x = v[s * (n + 1) + d];
            if (x < 0)
                printf(" %9s", x == -1 ? "-" : "failed");
            else
                printf(fmt, x);
        }
        printf("\n");
    }
}

static int run_measure(clf_fleet *f)
{
    measure m = {.f = f, .n = clf_fleet_device_count(f), .big = MEASURE_BIG};
    size_t n = m.n, cells = (n + 1) * (n + 1);
    double *bw_big = NULL, *bw_small = NULL, *lat = NULL;
    unsigned char *want = NULL, *got = NULL;
    int rc = 1, wrong = 0;
    clf_status st = CLF_SUCCESS;

    /* Two buffers of the big size per device must fit its allocation limit with room. */
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) == CLF_SUCCESS) {
            while (m.big > MEASURE_SMALL && (m.big > in.max_alloc || 4 * m.big > in.global_mem))
                m.big /= 2;
        }
    }
    m.src = calloc(n ? n : 1, sizeof *m.src);
    m.dst = calloc(n ? n : 1, sizeof *m.dst);
    bw_big = malloc(cells * sizeof *bw_big);
    bw_small = malloc(cells * sizeof *bw_small);
    lat = malloc(cells * sizeof *lat);
    m.hsrc = malloc(m.big);
    m.hdst = malloc(m.big);
    want = malloc(m.big);
    got = malloc(m.big);
    if (!m.src || !m.dst || !bw_big || !bw_small || !lat || !m.hsrc || !m.hdst || !want ||
        !got) {
        fprintf(stderr, "clfleet-info: --measure: out of memory\n");
        goto out;
    }
    fill_pattern(m.hsrc, m.big, n);
    for (size_t i = 0; i < n; i++) {
        fill_pattern(want, m.big, i);
        if ((st = clf_buffer_create(&m.src[i], f, i, m.big, 0)) != CLF_SUCCESS ||
            (st = clf_buffer_create(&m.dst[i], f, i, m.big, 0)) != CLF_SUCCESS ||
            (st = clf_buffer_write(m.src[i], 0, m.big, want)) != CLF_SUCCESS) {
            fprintf(stderr, "clfleet-info: --measure: two %zu-byte buffers on device %zu: %s: "
                    "%s\n", m.big, i, clf_status_string(st), clf_last_error());
            goto out;
        }
    }
    double t0 = now_s();
    for (size_t s = 0; s <= n; s++) {
        for (size_t d = 0; d <= n; d++) {
            size_t c = s * (n + 1) + d;
            bw_big[c] = bw_small[c] = lat[c] = -1; /* host to host: not clfleet's business */
            if (s == n && d == n)
                continue;
            double tl = time_copies(&m, s, d, MEASURE_TINY);
            double ts = time_copies(&m, s, d, MEASURE_SMALL);
            double tb = time_copies(&m, s, d, m.big);
            lat[c] = tl < 0 ? -2 : tl * 1e6;
            bw_small[c] = ts <= 0 ? -2 : (double)MEASURE_SMALL / ts / 1e9;
            bw_big[c] = tb <= 0 ? -2 : (double)m.big / tb / 1e9;
            if (tb >= 0 && !check_copy(&m, s, d, want, got)) {
                fprintf(stderr, "clfleet-info: --measure: the copy from %s to %s delivered "
                        "wrong bytes\n", s == n ? "the host" : "a device",
                        d == n ? "the host" : "a device");
                wrong++;
            }
        }
    }
    double took = now_s() - t0;
    char title[256], big[32];
    snprintf(big, sizeof big, m.big >= ((size_t)1 << 20) ? "%zu MiB" : "%zu KiB",
             m.big >= ((size_t)1 << 20) ? m.big >> 20 : m.big >> 10);
    printf("Measured transfers between the %zu device(s) and the host (median of %d; device "
           "pairs by clf_copy()\non the path clfleet chose, the host by clf_buffer_write() and "
           "clf_buffer_read() of\npageable memory; rows: from, columns: to; %.1f s)\n", n,
           MEASURE_REPS, took);
    snprintf(title, sizeof title, "Bandwidth (GB/s, 10^9 bytes/s), %s copies", big);
    print_matrix(title, bw_big, n, " %9.2f");
    print_matrix("Bandwidth (GB/s, 10^9 bytes/s), 1 MiB copies", bw_small, n, " %9.2f");
    print_matrix("Latency (us) of an 8-byte copy", lat, n, " %9.1f");
    printf("\n#wrong %d\n", wrong);
    rc = wrong ? 1 : 0;
    for (size_t c = 0; c < cells; c++)
        if (lat[c] == -2 || bw_small[c] == -2 || bw_big[c] == -2)
            rc = 1;
out:
    for (size_t i = 0; i < n && m.src; i++)
        clf_buffer_destroy(m.src[i]);
    for (size_t i = 0; i < n && m.dst; i++)
        clf_buffer_destroy(m.dst[i]);
    free(m.src);
    free(m.dst);
    free(m.hsrc);
    free(m.hdst);
    free(want);
    free(got);
    free(bw_big);
    free(bw_small);
    free(lat);
    return rc;
}

static void print_table(const clf_fleet *f, const clf_fleet *def, const char *def_why)
{
    size_t n = clf_fleet_device_count(f);
    unsigned last_platform = (unsigned)-1;
    printf("clfleet %s: %zu device(s) in %zu context(s)\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) != CLF_SUCCESS)
            continue;
        if (in.platform_index != last_platform) {
            printf("\nPlatform %u: %s (%s)\n", in.platform_index, in.platform,
                   in.platform_vendor);
            printf("    %-3s %-5s %-34s %-6s %9s %9s %4s %6s %-4s %-4s %-12s %-5s %s\n", "#",
                   "type", "name", "OpenCL", "memory", "max alloc", "CUs", "MHz", "uni",
                   "fp64", "PCI", "P2P", "sub-device");
            last_platform = in.platform_index;
        }
        char pci[32], sub[32], name[NAME_COLUMN + 1];
        pci_string(&in, pci, sizeof pci);
        sub_string(f, i, &in, sub, sizeof sub);
        printf("  %c %-3zu %-5s %-34.34s %u.%-4u %6.1f GiB %5.1f GiB %4u %6u %-4s %-4s %-12s "
               "%-5s %s\n",
               in_default(f, i, def) ? '*' : ' ', i, clf_device_type_name(in.type),
               name_cell(in.name, name),
               in.cl_major, in.cl_minor,
               (double)in.global_mem / (1u << 30), (double)in.max_alloc / (1u << 30),
               in.compute_units, in.clock_mhz, in.host_unified ? "yes" : "no",
               in.fp64 ? "yes" : "no", pci, p2p_capable(f, i, &in), sub);
    }
    printf("\n"
           "  *          in the default fleet: what clf_fleet_create() selects when no selection\n"
           "             is given (%s)%s%s\n"
           "  #          fleet index: what launches and clf_device_get_info() number devices by\n"
           "  uni        memory shared with the host; fp64: double precision\n"
           "  P2P        direct copies the device may do: amd (cl_amd_copy_buffer_p2p), cuda?\n"
           "             (an NVIDIA device: CUDA peer copies, if the self-test passes)\n"
           "  sub-device \"1 of #0\": part 1 (counting from 0) of root device #0; root devices\n"
           "             are numbered as 'clfleet-info --devices type=all' lists them, the\n"
           "             numbers that index= in a selection takes\n",
           getenv("CLFLEET_DEVICES") && *getenv("CLFLEET_DEVICES")
               ? "$CLFLEET_DEVICES"
               : "every GPU and accelerator; CPU devices only when there is none",
           def_why ? "; none now: " : "", def_why ? def_why : "");
    table_paths(f);
    cpu_hint(f);
}

/* ---- --perf, --perf-reset ---- */

/* The JSON string starting at s (at its quote) into out, unescaped (\uXXXX below 0x80 only,
 * as the library writes nothing else); the character after it. */
static const char *json_str(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (s++; *s && *s != '"'; s++) {
        char c = *s;
        if (c == '\\' && s[1] == 'u' && strlen(s) >= 6) {
            c = (char)strtol((char[]){s[2], s[3], s[4], s[5], 0}, NULL, 16);
            s += 5;
        } else if (c == '\\' && s[1]) {
            c = *++s;
        }
        if (k + 1 < n)
            out[k++] = c;
    }
    out[k] = '\0';
    return *s ? s + 1 : s;
}

/* The value of "key": in the entry e (a string, or the text of a number). */
static void json_field(const char *e, const char *key, char *out, size_t n)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *v = strstr(e, pat);
    out[0] = '\0';
    if (!v)
        return;
    v += strlen(pat);
    if (*v == '"')
        json_str(v, out, n);
    else
        snprintf(out, n, "%.*s", (int)strcspn(v, ",}"), v);
}

static int print_perf(int json)
{
    char *doc = NULL;
    clf_status st = clf_perf_model_json(&doc, NULL);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: --perf: %s: %s\n", clf_status_string(st),
                clf_last_error());
        return 1;
    }
    if (json) {
        printf("%s\n", doc);
        clf_free(doc);
        return 0;
    }
    char file[4096];
    json_field(doc, "file", file, sizeof file);
    printf("Device speeds learned per kernel (%s)\n", file);
    /* One entry a line (the library writes them so); gathered first so that the columns
     * fit the longest name. */
    typedef struct perf_row {
        char kernel[512], device[512], samples[32], chunks[32];
        double speed, iqr, fixed_us; /* NAN: not known */
    } perf_row;
    perf_row *rows = NULL;
    size_t nrows = 0, cap = 0;
    int wk = (int)strlen("kernel@program"), wd = (int)strlen("device|driver|compute units");
    for (const char *e = strstr(doc, "\n{"); e; e = strstr(e + 1, "\n{")) {
        if (nrows == cap) {
            perf_row *r = realloc(rows, (cap = cap ? 2 * cap : 16) * sizeof *rows);
            if (!r) {
                fprintf(stderr, "clfleet-info: --perf: out of memory\n");
                free(rows);
                clf_free(doc);
                return 1;
            }
            rows = r;
        }
        perf_row *r = &rows[nrows++];
        char line[8192], speed[64], iqr[64], fixed[64];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(e + 1, "\n"), e + 1);
        json_field(line, "kernel", r->kernel, sizeof r->kernel);
        json_field(line, "device", r->device, sizeof r->device);
        json_field(line, "samples", r->samples, sizeof r->samples);
        json_field(line, "units_per_s", speed, sizeof speed);
        json_field(line, "iqr_units_per_s", iqr, sizeof iqr);
        json_field(line, "fixed_us", fixed, sizeof fixed);
        json_field(line, "chunks", r->chunks, sizeof r->chunks);
        /* null (nothing known) reads as NAN and prints as "-". */
        r->speed = speed[0] && strcmp(speed, "null") != 0 ? strtod(speed, NULL) : NAN;
        r->iqr = iqr[0] && strcmp(iqr, "null") != 0 ? strtod(iqr, NULL) : NAN;
        r->fixed_us = fixed[0] && strcmp(fixed, "null") != 0 ? strtod(fixed, NULL) : NAN;
        if (!r->chunks[0])
            snprintf(r->chunks, sizeof r->chunks, "0");
        wk = (int)strlen(r->kernel) > wk ? (int)strlen(r->kernel) : wk;
        wd = (int)strlen(r->device) > wd ? (int)strlen(r->device) : wd;
    }
    /* Kernels learn work items per second; clBLAST GEMMs (keys without a program hash,
     * "clblast-sgemm") learn MFLOP per second; a device's links ("link:h2d", "link:d2h")
     * bytes per second; all-reduce calls ("allreduce:ring:64KiB", the devices in position
     * order and the ring's paths) bytes per buffer per second: four tables, so that no
     * column mixes them. */
    static const char *const title[4] = {
        "", "\nGEMMs through clBLAST\n", "\nHost-device links (transfers' profiled time)\n",
        "\nAll-reduce algorithms per size class (measured calls; auto runs the faster)\n"};
    static const char *const first[4] = {"kernel@program", "routine", "link",
                                         "algorithm:size class"};
    static const char *const unit[4] = {"items/s", "MFLOP/s", "bytes/s", "bytes/s"};
    for (int kind = 0; kind < 4; kind++) {
        size_t k = 0;
        for (size_t i = 0; i < nrows; i++) {
            perf_row *r = &rows[i];
            int is = strncmp(r->kernel, "allreduce:", 10) == 0                         ? 3
                     : strncmp(r->kernel, "link:", 5) == 0                              ? 2
                     : strncmp(r->kernel, "clblast-", 8) == 0 && !strchr(r->kernel, '@') ? 1
                                                                                         : 0;
            if (is != kind)
                continue;
            if (k++ == 0)
                printf("%s  %-*s  %-*s  %7s  %12s  %7s  %6s  %9s\n", title[kind], wk,
                       first[kind], wd, "device|driver|compute units", "samples", unit[kind],
                       "spread", "chunks", "fixed us");
            char sp[32] = "-", sp2[32] = "-", fx[32] = "-";
            if (!isnan(r->speed))
                snprintf(sp, sizeof sp, "%.4g", r->speed);
            /* Spread: the interquartile range of the launch samples, over their median. */
            if (!isnan(r->iqr) && r->speed > 0)
                snprintf(sp2, sizeof sp2, "%.0f%%", 100 * r->iqr / r->speed);
            if (!isnan(r->fixed_us))
                snprintf(fx, sizeof fx, "%.1f", r->fixed_us);
            /* An all-reduce's key names "allreduce:": the rest is shorter to read. */
            printf("  %-*s  %-*s  %7s  %12s  %7s  %6s  %9s\n", wk,
                   kind == 3 ? r->kernel + 10 : r->kernel, wd, r->device, r->samples, sp, sp2,
                   r->chunks, fx);
        }
    }
    if (nrows == 0)
        printf("  none yet: launches learn them as they run\n");
    free(rows);
    clf_free(doc);
    return 0;
}

static int reset_perf(void)
{
    clf_status st = clf_perf_model_reset(NULL);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: --perf-reset: %s: %s\n", clf_status_string(st),
                clf_last_error());
        return 1;
    }
    printf("clfleet-info: learned device speeds forgotten\n");
    return 0;
}

/* ---- --cache, --cache-clear ---- */

static int print_cache(void)
{
    clf_cache_stats cs;
    clf_status st = clf_cache_info(&cs, NULL);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: --cache: %s: %s\n", clf_status_string(st),
                clf_last_error());
        return 1;
    }
    char size[64], tmp[64];
    bytes_text(size, sizeof size, (unsigned long long)cs.bytes);
    bytes_text(tmp, sizeof tmp, (unsigned long long)cs.temporary_bytes);
    printf("Binary cache: %s%s\n", cs.dir, cs.exists ? "" : " (not created yet)");
    printf("  %-26s %zu\n", "program binaries", cs.entries);
    printf("  %-26s %s\n", "their size (bytes)", size);
    printf("  %-26s %zu (%s bytes; an hour old, a killed writer's: removed)\n",
           "temporary files", cs.temporary, tmp);
    printf("  %-26s %s\n", "learned device speeds", cs.perf_model ? "yes (clfleet-info --perf)"
                                                                   : "none");
    if (cs.limit) {
        char lim[64];
        bytes_text(lim, sizeof lim, (unsigned long long)cs.limit);
        printf("  %-26s %s\n", "size limit (bytes)", lim);
    } else {
        printf("  %-26s none\n", "size limit (bytes)");
    }
    printf("($CLFLEET_CACHE_DIR sets the directory, $CLFLEET_CACHE_MAX its size limit: the least\n"
           "recently used binaries go past it; clfleet-info --cache-clear empties it)\n");
    clf_free(cs.dir);
    return 0;
}

static int clear_cache(void)
{
    size_t removed = 0;
    clf_status st = clf_cache_clear(&removed, NULL);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: --cache-clear: %s: %s\n", clf_status_string(st),
                clf_last_error());
        return 1;
    }
    printf("clfleet-info: %zu program binar%s removed from the cache (learned device speeds "
           "kept: --perf-reset forgets them)\n", removed, removed == 1 ? "y" : "ies");
    return 0;
}

int main(int argc, char **argv)
{
    clf_tool_show_slow_steps();
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},
        {"devices", required_argument, NULL, 'd'},
        {"split", required_argument, NULL, 's'},
        {"split-counts", required_argument, NULL, 'c'},
        {"context-per-device", no_argument, NULL, 'p'},
        {"perf", no_argument, NULL, 'P'},
        {"perf-reset", no_argument, NULL, 'R'},
        {"list", no_argument, NULL, 'l'},
        {"all", no_argument, NULL, 'A'},
        {"measure", no_argument, NULL, 'M'},
        {"cache", no_argument, NULL, 'C'},
        {"cache-clear", no_argument, NULL, 'X'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, perf = 0, perf_reset = 0, list = 0, all = 0, meas = 0, cache = 0,
        cache_clear = 0, val;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    const char *env = getenv("CLFLEET_DEVICES");
    const char *given = NULL, *split = NULL;
    opterr = 0;
    while ((val = getopt_long(argc, argv, ":hVl", options, NULL)) != -1) {
        switch (val) {
        case 'j':
            json = 1;
            break;
        case 'P':
            perf = 1;
            break;
        case 'R':
            perf_reset = 1;
            break;
        case 'l':
            list = 1;
            break;
        case 'A':
            all = 1;
            break;
        case 'M':
            meas = 1;
            break;
        case 'C':
            cache = 1;
            break;
        case 'X':
            cache_clear = 1;
            break;
        case 'd':
            given = optarg;
            break;
        case 's':
        case 'c':
            /* The selection grammar checks N, none and A+B; say which option was wrong. */
            if (val == 's' && !strcmp(optarg, "none")) {
                split = optarg;
                break;
            }
            if (!*optarg || strspn(optarg, "0123456789+") != strlen(optarg) ||
                (val == 's' && strchr(optarg, '+'))) {
                return usage_error("--%s wants %s, not '%s'", val == 's' ? "split" : "split-counts",
                                   val == 's' ? "a number of compute units (or none)"
                                              : "counts such as 3+1",
                                   optarg);
            }
            split = optarg;
            break;
        case 'p':
            o.context_per_device = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("clfleet-info %s\n", clf_version_string());
            return 0;
        case ':':
            return usage_error("'%s' needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    /* One thing to do at a time: the device views, the learned speeds and the cache. */
    if (json + list + all + meas + perf + perf_reset + cache + cache_clear > 1 &&
        !(json && perf && !perf_reset && list + all + meas + cache + cache_clear == 0)) {
        const char *names[] = {"--json", "--list", "--all", "--measure", "--perf",
                               "--perf-reset", "--cache", "--cache-clear"};
        int set[] = {json, list, all, meas, perf, perf_reset, cache, cache_clear}, a = -1;
        for (int k = 0; k < 8; k++) {
            if (!set[k])
                continue;
            if (a >= 0)
                return usage_error("%s and %s exclude each other", names[a], names[k]);
            a = k;
        }
    }
    if (perf || perf_reset)
        return perf ? print_perf(json) : reset_perf();
    if (cache || cache_clear)
        return cache ? print_cache() : clear_cache();
    /* Where the selection comes from, so that an error names it. */
    char sel[1024], source[1100];
    const char *base = given ? given : env && *env ? env : "type=all";
    if (given)
        snprintf(source, sizeof source, "--devices '%s'", given);
    else if (env && *env)
        snprintf(source, sizeof source, "CLFLEET_DEVICES='%s'", env);
    else
        snprintf(source, sizeof source, "the selection 'type=all'");
    if (split)
        snprintf(source + strlen(source), sizeof source - strlen(source), " with --split%s %s",
                 strchr(split, '+') ? "-counts" : "", split);
    snprintf(sel, sizeof sel, "%s%s%s", base, split ? ";split=" : "", split ? split : "");
    o.devices = sel;
    o.disable_cache = 1;
    clf_fleet *f = NULL;
    clf_status st = clf_fleet_create(&f, &o);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: %s: %s: %s\n", source, clf_status_string(st),
                clf_last_error());
        if (split && (st == CLF_ERROR_UNSUPPORTED || st == CLF_ERROR_INVALID_ARGUMENT))
            fprintf(stderr, "clfleet-info: devices that cannot be split can be left out with "
                            "'min_cu=2' (or name=...) in --devices\n");
        return 1;
    }
    /* The default fleet, to mark its devices: no selection ($CLFLEET_DEVICES, else the
     * library's default), the same contexts. */
    clf_fleet_options d = CLF_FLEET_OPTIONS_INIT;
    d.disable_cache = 1;
    d.context_per_device = o.context_per_device;
    clf_fleet *def = NULL;
    char why[512] = "";
    if ((st = clf_fleet_create(&def, &d)) != CLF_SUCCESS)
        snprintf(why, sizeof why, "%s: %s", clf_status_name(st), clf_last_error());
    int rc = 0;
    if (json)
        print_json(f, def);
    else if (list)
        print_list(f, def);
    else if (all)
        print_all(f, def);
    else if (meas)
        rc = run_measure(f);
    else
        print_table(f, def, def ? NULL : why);
    clf_fleet_destroy(def);
    clf_fleet_destroy(f);
    return rc;
}

/* clfleet-info: every OpenCL platform and device, with the facts clfleet uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet.h"
#include "json.h"

static void usage(FILE *to)
{
    fputs("usage: clfleet-info [--json] [--devices SELECTION] [--split N | --split-counts A+B]\n"
          "                    [--context-per-device]\n"
          "Lists every device on every OpenCL platform (SELECTION: see README,\n"
          "\"Device selection\"; default \"type=all\", or $CLFLEET_DEVICES when set),\n"
          "then the transfer path of every ordered device pair ($CLFLEET_TRANSFER applies).\n",
          to);
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
                clf_transfer_path(f, s, d, &p, &direct);
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

static void print_json(const clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    printf("{\n  \"clfleet_version\": ");
    clf_tool_json_string(clf_version_string());
    printf(",\n  \"contexts\": %zu,\n  \"devices\": [", clf_fleet_context_count(f));
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(f, i, &in) != CLF_SUCCESS)
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
        printf(", \"p2p\": \"%s\", \"context\": %u, \"sub_device\": %s, \"parent\": %d,\n"
               "     \"extensions\": ",
               p2p_capable(f, i, &in), in.context_index, in.is_sub_device ? "true" : "false",
               in.parent_index);
        clf_tool_json_string(in.extensions);
        printf("}");
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
            clf_transfer_path(f, s, d, &p, &direct);
            snprintf(cell, sizeof cell, "%s%s", clf_path_name(p), direct ? "*" : "");
            printf(d + 1 < n ? " %-13s" : " %s", cell);
        }
        printf("\n");
    }
    printf("CUDA peer-to-peer: %s\n", clf_transfer_cuda_status(f));
}

static void print_table(const clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    unsigned last_platform = (unsigned)-1;
    printf("clfleet %s: %zu device(s) in %zu context(s)\n", clf_version_string(), n,
           clf_fleet_context_count(f));
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(f, i, &in) != CLF_SUCCESS)
            continue;
        if (in.platform_index != last_platform) {
            printf("\nPlatform %u: %s (%s)\n", in.platform_index, in.platform,
                   in.platform_vendor);
            printf("  %-3s %-5s %-34s %-6s %9s %9s %4s %6s %-4s %-4s %-12s %-5s %s\n", "#",
                   "type", "name", "OpenCL", "memory", "max alloc", "CUs", "MHz", "uni",
                   "fp64", "PCI", "P2P", "parent");
            last_platform = in.platform_index;
        }
        char pci[32], parent[16] = "-";
        pci_string(&in, pci, sizeof pci);
        if (in.is_sub_device)
            snprintf(parent, sizeof parent, "%d", in.parent_index);
        printf("  %-3zu %-5s %-34.34s %u.%-4u %6.1f GiB %5.1f GiB %4u %6u %-4s %-4s %-12s %-5s "
               "%s\n",
               i, clf_device_type_name(in.type), in.name, in.cl_major, in.cl_minor,
               (double)in.global_mem / (1u << 30), (double)in.max_alloc / (1u << 30),
               in.compute_units, in.clock_mhz, in.host_unified ? "yes" : "no",
               in.fp64 ? "yes" : "no", pci, p2p_capable(f, i, &in), parent);
    }
    table_paths(f);
}

int main(int argc, char **argv)
{
    int json = 0;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    char sel[1024] = "";
    const char *user_sel = getenv("CLFLEET_DEVICES");
    const char *split = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--context-per-device"))
            o.context_per_device = 1;
        else if ((!strcmp(a, "--devices") || !strcmp(a, "--split") ||
                  !strcmp(a, "--split-counts")) &&
                 i + 1 < argc) {
            if (!strcmp(a, "--devices"))
                user_sel = argv[++i];
            else
                split = argv[++i];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("clfleet-info %s\n", clf_version_string());
            return 0;
        } else {
            fprintf(stderr, "clfleet-info: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    snprintf(sel, sizeof sel, "%s%s%s%s", user_sel && *user_sel ? user_sel : "type=all",
             split ? ";split=" : "", split ? split : "", "");
    o.devices = sel;
    o.disable_cache = 1;
    clf_fleet *f = NULL;
    clf_status st = clf_fleet_create(&f, &o);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clfleet-info: %s: %s\n", clf_status_string(st), clf_last_error());
        return 1;
    }
    if (json)
        print_json(f);
    else
        print_table(f);
    clf_fleet_destroy(f);
    return 0;
}

/*
 * Example 1: list the devices of a fleet and how bytes move between them.
 *
 *   list-devices [SELECTION]      e.g. list-devices 'type=all'
 *
 * Without an argument the fleet holds the default devices ($CLFLEET_DEVICES, else
 * every GPU and accelerator, else the CPUs). For each device: name, vendor, type,
 * platform, OpenCL version, compute units, clock, memory, whether it shares memory
 * with the host and does double precision; then the transfer path of every ordered
 * pair of devices. The program checks what it prints: one set of facts per device,
 * plausible values, a path for every pair (the device to itself: "same-device"), and
 * an index past the end refused with a status rather than a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>

static int problems;

static void check(int ok, const char *what, size_t device)
{
    if (!ok) {
        fprintf(stderr, "list-devices: device %zu: %s\n", device, what);
        problems++;
    }
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* "direct to 1, 2" or "staged through the host": what the path matrix says of a device. */
static void describe_peers(const clf_fleet *f, size_t src, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "direct to");
    int any = 0;
    for (size_t dst = 0; dst < clf_fleet_device_count(f) && used < size; dst++) {
        clf_path path;
        int direct = 0;
        if (dst == src || clf_transfer_path(&path, &direct, f, src, dst) != CLF_SUCCESS || !direct)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s %zu", any ? "," : "", dst);
        any = 1;
    }
    if (!any)
        snprintf(buf, size, "no (copies to other devices go through the host)");
}

static void print_device(const clf_fleet *f, size_t i, const clf_device_info *in)
{
    char peers[256];
    describe_peers(f, i, peers, sizeof peers);
    printf("Device %zu: %s\n", i, in->name);
    printf("  Vendor:          %s\n", in->vendor);
    printf("  Type:            %s%s\n", clf_device_type_name(in->type),
           in->is_sub_device ? " (sub-device)" : "");
    if (in->is_sub_device)
        printf("  Part of:         device %d of the discovery order\n", in->parent_index);
    printf("  Platform:        %s (context %u)\n", in->platform, in->context_index);
    printf("  OpenCL:          %u.%u, driver %s\n", in->cl_major, in->cl_minor, in->driver_version);
    printf("  Compute units:   %u at %u MHz\n", in->compute_units, in->clock_mhz);
    printf("  Memory:          %.0f MB (largest allocation %.0f MB, local %.0f KB)\n",
           mib(in->global_mem), mib(in->max_alloc), (double)in->local_mem / 1024.0);
    printf("  Shares host RAM: %s\n", in->host_unified ? "yes" : "no");
    printf("  Double prec.:    %s\n", in->fp64 ? "yes" : "no");
    if (in->pci_known)
        printf("  PCI address:     %04x:%02x:%02x.%x\n", in->pci_domain, in->pci_bus,
               in->pci_device, in->pci_function);
    printf("  P2P capable:     %s\n\n", peers);
}

static void print_paths(const clf_fleet *f)
{
    size_t n = clf_fleet_device_count(f);
    printf("Transfer paths, from the row's device to the column's (* = no host copy):\n%6s", "");
    for (size_t dst = 0; dst < n; dst++)
        printf(" %-*zu", dst + 1 < n ? 14 : 0, dst);
    for (size_t src = 0; src < n; src++) {
        printf("\n%6zu", src);
        for (size_t dst = 0; dst < n; dst++) {
            clf_path path = CLF_PATH_STAGED;
            int direct = 0;
            clf_status st = clf_transfer_path(&path, &direct, f, src, dst);
            const char *name = clf_path_name(path);
            check(st == CLF_SUCCESS && name, "transfer path query failed", src);
            check(src != dst || path == CLF_PATH_SAME_DEVICE, "own path not same-device", src);
            int pad = dst + 1 < n ? (int)(14 - (name ? strlen(name) : 1)) : 0;
            printf(" %s%-*s", name ? name : "?", pad, direct ? "*" : "");
        }
    }
    printf("\nCUDA peer-to-peer: %s\n", clf_transfer_cuda_status(f));
}

/* Says what failed. The exit status: 77 (make check's "skipped") when there is no
 * device and CLFLEET_REQUIRE_DEVICES is unset or 0, else 1. */
static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "list-devices: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

int main(int argc, char **argv)
{
    clf_fleet_options opts = CLF_FLEET_OPTIONS_INIT;
    opts.devices = argc > 1 ? argv[1] : NULL;
    clf_fleet *f;
    clf_status st = clf_fleet_create(&f, &opts);
    if (st != CLF_SUCCESS)
        return fail("creating the fleet", st);

    size_t n = clf_fleet_device_count(f), listed = 0;
    printf("Found %zu device(s) in %zu context(s), clfleet %s\n\n", n, clf_fleet_context_count(f),
           clf_version_string());
    for (size_t i = 0; i < n; i++) {
        clf_device_info in;
        if (clf_device_get_info(&in, f, i) != CLF_SUCCESS) {
            check(0, clf_last_error(), i);
            continue;
        }
        listed++;
        print_device(f, i, &in);
        check(in.name[0] != '\0', "no name", i);
        check(strcmp(clf_device_type_name(in.type), "unknown") != 0, "unknown type", i);
        check(in.compute_units > 0, "no compute units", i);
        check(in.global_mem > 0 && in.max_alloc > 0 && in.max_alloc <= in.global_mem,
              "memory sizes do not add up", i);
        check(in.context_index < clf_fleet_context_count(f), "context out of range", i);
        check(in.cl_major >= 1, "no OpenCL version", i);
    }
    print_paths(f);

    /* Facts for each device, and bad indices refused with a status, not a crash. */
    clf_device_info none;
    clf_path path;
    check(listed == n, "not every device could be listed", n);
    check(clf_device_get_info(&none, f, n) == CLF_ERROR_OUT_OF_RANGE,
          "an index past the end was not refused", n);
    check(clf_transfer_path(&path, NULL, f, 0, n) == CLF_ERROR_OUT_OF_RANGE,
          "a path to a device past the end was not refused", n);
    clf_fleet_destroy(f);
    if (problems)
        fprintf(stderr, "list-devices: %d problem(s)\n", problems);
    return problems ? 1 : 0;
}

/* clfleet-info: every OpenCL platform and device, with the facts clfleet uses. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet.h"
#include "clfleet/opencl.h"
#include "json.h"

static void usage(FILE *to)
{
    fputs("usage: clfleet-info [--json] [--devices SELECTION] [--split N | --split-counts A+B]\n"
          "                    [--context-per-device]\n"
          "       clfleet-info --perf [--json] | --perf-reset\n"
          "       clfleet-info --help | --version\n"
          "Lists every device on every OpenCL platform, marking those of the default fleet\n"
          "(what clf_fleet_create() selects with no selection given: $CLFLEET_DEVICES, else\n"
          "every GPU and accelerator, CPU devices only when there is none), then the\n"
          "transfer path of every ordered device pair ($CLFLEET_TRANSFER applies).\n"
          "  --json                one JSON document on standard output\n"
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
    /* One entry a line: the library writes them so. */
    size_t k = 0;
    for (const char *e = strstr(doc, "\n{"); e; e = strstr(e + 1, "\n{")) {
        char line[8192], kernel[512], device[512], samples[32], speed[64];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(e + 1, "\n"), e + 1);
        json_field(line, "kernel", kernel, sizeof kernel);
        json_field(line, "device", device, sizeof device);
        json_field(line, "samples", samples, sizeof samples);
        json_field(line, "units_per_s", speed, sizeof speed);
        if (k++ == 0)
            printf("  %-32s %-52s %7s %12s\n", "kernel@program", "device|driver|compute units",
                   "samples", "units/s");
        printf("  %-32s %-52s %7s %12.4g\n", kernel, device, samples, strtod(speed, NULL));
    }
    if (k == 0)
        printf("  none yet: launches learn them as they run\n");
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

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},
        {"devices", required_argument, NULL, 'd'},
        {"split", required_argument, NULL, 's'},
        {"split-counts", required_argument, NULL, 'c'},
        {"context-per-device", no_argument, NULL, 'p'},
        {"perf", no_argument, NULL, 'P'},
        {"perf-reset", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, perf = 0, perf_reset = 0, val;
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    const char *env = getenv("CLFLEET_DEVICES");
    const char *given = NULL, *split = NULL;
    opterr = 0;
    while ((val = getopt_long(argc, argv, ":hV", options, NULL)) != -1) {
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
    if (perf || perf_reset) {
        if (perf && perf_reset)
            return usage_error("--perf and --perf-reset exclude each other");
        return perf ? print_perf(json) : reset_perf();
    }
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
    if (json)
        print_json(f, def);
    else
        print_table(f, def, def ? NULL : why);
    clf_fleet_destroy(def);
    clf_fleet_destroy(f);
    return 0;
}

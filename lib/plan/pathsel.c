/*
 * Transfer path selection (pure: no OpenCL, no CUDA, every rule unit-tested on synthetic
 * facts): which path a copy from one device to another takes (DESIGN.md "Transfer path
 * selector"; the transfer code gathers the devices' facts once at fleet creation), and the
 * CLFLEET_TRANSFER tokens that leave paths out.
 */
#include "plan.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const char *const path_names[CLF__PATH_COUNT] = {
    "same-device", "unified", "amd-p2p", "cuda-p2p", "staged",
};

const char *clf__path_name(clf__path p)
{
    if ((unsigned)p >= CLF__PATH_COUNT)
        return "unknown";
    return path_names[p];
}

static int amd_listed(const clf__path_dev *a, size_t ib)
{
    if (!a->amd_peers)
        return 0;
    for (size_t i = 0; i < a->namd_peers; i++)
        if (a->amd_peers[i] == ib)
            return 1;
    return 0;
}

static int cuda_peer(const clf__path_dev *a, const clf__path_dev *b, const clf__path_env *env)
{
    if (!env || !env->cuda_ok || !a->pci_known || !b->pci_known)
        return 0;
    if (a->cuda_ordinal < 0 || b->cuda_ordinal < 0 || !a->cuda_import || !b->cuda_import)
        return 0;
    size_t s = (size_t)a->cuda_ordinal, d = (size_t)b->cuda_ordinal;
    if (s >= env->ncuda || d >= env->ncuda)
        return 0;
    /* Two OpenCL devices on one GPU (two platforms): a copy inside one CUDA device needs no
     * peer access, and cuDeviceCanAccessPeer() refuses to answer for it. */
    if (s == d)
        return 1;
    return env->cuda_peer && env->cuda_peer[s * env->ncuda + d];
}

/* Whether path p applies to the pair, ignoring any mask. */
static int applies(clf__path p, const clf__path_dev *a, size_t ia, const clf__path_dev *b,
                   size_t ib, const clf__path_env *env)
{
    switch (p) {
    case CLF__PATH_SAME_DEVICE:
        return ia == ib;
    case CLF__PATH_UNIFIED:
        return a->host_unified && b->host_unified && a->context == b->context;
    case CLF__PATH_AMD_P2P:
        return a->amd_p2p && amd_listed(a, ib);
    case CLF__PATH_CUDA_P2P:
        return cuda_peer(a, b, env);
    default:
        return 1;
    }
}

clf__path clf__path_select(const clf__path_dev *a, size_t ia, const clf__path_dev *b, size_t ib,
                           const clf__path_env *env, unsigned disabled, int *direct)
{
    clf__path chosen = CLF__PATH_STAGED;
    int any = 0;
    for (int p = CLF__PATH_SAME_DEVICE; p < CLF__PATH_STAGED; p++) {
        if (!applies((clf__path)p, a, ia, b, ib, env))
            continue;
        any = 1;
        if (!(disabled & CLF__PATH_BIT(p))) {
            chosen = (clf__path)p;
            break;
        }
    }
    /* The loop stops only after a path applied, so any also covers the paths it did not
     * reach: it reports what the hardware allows even when the mask hides it. */
    if (direct)
        *direct = any;
    return chosen;
}

static const struct {
    const char *name;
    unsigned mask;
} tokens[] = {
    {"auto", 0},
    {"staged", CLF__PATH_FORCE_STAGED},
    {"force-staged", CLF__PATH_FORCE_STAGED},
    {"no-unified", CLF__PATH_BIT(CLF__PATH_UNIFIED)},
    {"no-amd", CLF__PATH_BIT(CLF__PATH_AMD_P2P)},
    {"no-cuda", CLF__PATH_BIT(CLF__PATH_CUDA_P2P)},
    {"no-p2p", CLF__PATH_BIT(CLF__PATH_AMD_P2P) | CLF__PATH_BIT(CLF__PATH_CUDA_P2P)},
};

static int token_is(const char *t, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(t, name, n) == 0;
}

clf_status clf__path_parse_env(const char *s, unsigned *disabled)
{
    if (!disabled)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf__path_parse_env: disabled is NULL");
    unsigned mask = 0;
    const char *p = s ? s : "";
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0') {
        *disabled = 0;
        return CLF_SUCCESS;
    }
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        const char *t = p;
        while (*p && *p != ',')
            p++;
        size_t n = (size_t)(p - t);
        while (n > 0 && isspace((unsigned char)t[n - 1]))
            n--;
        size_t k = 0;
        while (k < CLF__ARRAY_LEN(tokens) && !token_is(t, n, tokens[k].name))
            k++;
        if (k == CLF__ARRAY_LEN(tokens))
            return clf__fail(CLF_ERROR_PARSE,
                             "CLFLEET_TRANSFER: unknown token '%.*s' in '%s' (expected auto, "
                             "staged, force-staged, no-unified, no-amd, no-cuda, no-p2p)",
                             (int)(n > 64 ? 64 : n), t, s);
        mask |= tokens[k].mask;
        if (*p == '\0')
            break;
        p++; /* the comma; a trailing one leaves an empty token, which is an error */
    }
    *disabled = mask;
    return CLF_SUCCESS;
}

/* Exact match in a space-separated list (a prefix of a longer name does not count). */
static int ext_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ')
            e++;
        if ((size_t)(e - p) == n && memcmp(p, name, n) == 0)
            return 1;
        p = e;
    }
    return 0;
}

void clf__path_dev_from_info(clf__path_dev *out, const clf_device_info *info)
{
    memset(out, 0, sizeof *out);
    out->host_unified = info->host_unified != 0;
    out->context = info->context_index;
    out->amd_p2p = ext_listed(info->extensions, "cl_amd_copy_buffer_p2p");
    out->pci_known = info->pci_known != 0;
    out->pci_domain = info->pci_domain;
    out->pci_bus = info->pci_bus;
    out->pci_device = info->pci_device;
    out->pci_function = info->pci_function;
    out->cuda_ordinal = -1;
}

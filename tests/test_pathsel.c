/* Transfer path selection on synthetic devices: no OpenCL device is needed. */
#include "plan/pathsel.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* A plain discrete GPU in its own context, with nothing that allows a direct copy. */
static clf__path_dev gpu(unsigned context)
{
    clf__path_dev d;
    memset(&d, 0, sizeof d);
    d.context = context;
    d.cuda_ordinal = -1;
    return d;
}

static clf__path_dev nvidia(unsigned context, int ordinal, unsigned bus)
{
    clf__path_dev d = gpu(context);
    d.pci_known = 1;
    d.pci_bus = bus;
    d.cuda_ordinal = ordinal;
    d.cuda_import = 1;
    return d;
}

static const unsigned char peer_all[4] = {0, 1, 1, 0};  /* 0 <-> 1 */
static const unsigned char peer_none[4] = {0, 0, 0, 0};
static const unsigned char peer_0to1[4] = {0, 1, 0, 0}; /* only 0 -> 1 */

static clf__path sel(const clf__path_dev *a, size_t ia, const clf__path_dev *b, size_t ib,
                     const clf__path_env *env, unsigned disabled, int *direct)
{
    return clf__path_select(a, ia, b, ib, env, disabled, direct);
}

START_TEST(test_names)
{
    ck_assert_str_eq(clf__path_name(CLF__PATH_SAME_DEVICE), "same-device");
    ck_assert_str_eq(clf__path_name(CLF__PATH_UNIFIED), "unified");
    ck_assert_str_eq(clf__path_name(CLF__PATH_AMD_P2P), "amd-p2p");
    ck_assert_str_eq(clf__path_name(CLF__PATH_CUDA_P2P), "cuda-p2p");
    ck_assert_str_eq(clf__path_name(CLF__PATH_STAGED), "staged");
    ck_assert_str_eq(clf__path_name(CLF__PATH_COUNT), "unknown");
    ck_assert_str_eq(clf__path_name((clf__path)-1), "unknown");
}
END_TEST

START_TEST(test_same_device)
{
    clf__path_dev a = gpu(0);
    int direct = -1;
    ck_assert_int_eq(sel(&a, 3, &a, 3, NULL, 0, &direct), CLF__PATH_SAME_DEVICE);
    ck_assert_int_eq(direct, 1);
    /* Disabling every other path leaves it alone; only forced staging removes it. */
    unsigned others = CLF__PATH_FORCE_STAGED & ~CLF__PATH_BIT(CLF__PATH_SAME_DEVICE);
    ck_assert_int_eq(sel(&a, 3, &a, 3, NULL, others, NULL), CLF__PATH_SAME_DEVICE);
    ck_assert_int_eq(sel(&a, 3, &a, 3, NULL, CLF__PATH_FORCE_STAGED, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 1);
}
END_TEST

START_TEST(test_unified)
{
    clf__path_dev a = gpu(0), b = gpu(0);
    a.host_unified = b.host_unified = 1;
    int direct = -1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, &direct), CLF__PATH_UNIFIED);
    ck_assert_int_eq(direct, 1);
    /* Different contexts cannot share a buffer: staging (mapped source, one copy). */
    b.context = 1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    /* Only one side unified. */
    b.context = 0;
    b.host_unified = 0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    b.host_unified = 1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, CLF__PATH_BIT(CLF__PATH_UNIFIED), &direct),
                     CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 1);
}
END_TEST

START_TEST(test_amd)
{
    size_t peers_of_0[] = {2, 1};
    clf__path_dev a = gpu(0), b = gpu(1);
    a.amd_p2p = b.amd_p2p = 1;
    a.amd_peers = peers_of_0;
    a.namd_peers = 2;
    int direct = -1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, &direct), CLF__PATH_AMD_P2P);
    ck_assert_int_eq(direct, 1);
    /* The list is the source's: b lists nobody, so b -> a stages. */
    ck_assert_int_eq(sel(&b, 1, &a, 0, NULL, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    /* Not listed. */
    ck_assert_int_eq(sel(&a, 0, &b, 3, NULL, 0, NULL), CLF__PATH_STAGED);
    /* Listed, but the source lacks the extension. */
    a.amd_p2p = 0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    /* Extension but an empty list (NULL with a count must not be read). */
    a.amd_p2p = 1;
    a.amd_peers = NULL;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, NULL), CLF__PATH_STAGED);
    a.amd_peers = peers_of_0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, CLF__PATH_BIT(CLF__PATH_AMD_P2P), &direct),
                     CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 1);
    /* Unified in one context still wins over AMD P2P. */
    a.host_unified = b.host_unified = 1;
    b.context = 0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, NULL), CLF__PATH_UNIFIED);
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, CLF__PATH_BIT(CLF__PATH_UNIFIED), NULL),
                     CLF__PATH_AMD_P2P);
}
END_TEST

START_TEST(test_cuda)
{
    clf__path_dev a = nvidia(0, 0, 0x3b), b = nvidia(1, 1, 0xaf);
    clf__path_env env = {1, peer_all, 2};
    int direct = -1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, &direct), CLF__PATH_CUDA_P2P);
    ck_assert_int_eq(direct, 1);
    ck_assert_int_eq(sel(&b, 1, &a, 0, &env, 0, NULL), CLF__PATH_CUDA_P2P);
    /* CUDA not loaded or the self-test failed. */
    env.cuda_ok = 0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    ck_assert_int_eq(sel(&a, 0, &b, 1, NULL, 0, NULL), CLF__PATH_STAGED);
    env.cuda_ok = 1;
    /* No peer access. */
    env.cuda_peer = peer_none;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    env.cuda_peer = NULL;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, NULL), CLF__PATH_STAGED);
    /* One direction only. */
    env.cuda_peer = peer_0to1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, NULL), CLF__PATH_CUDA_P2P);
    ck_assert_int_eq(sel(&b, 1, &a, 0, &env, 0, NULL), CLF__PATH_STAGED);
    env.cuda_peer = peer_all;
    /* PCI address unknown: the ordinal cannot be trusted. */
    b.pci_known = 0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    b.pci_known = 1;
    /* No CUDA device at that address, or an ordinal beyond the matrix. */
    b.cuda_ordinal = -1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, NULL), CLF__PATH_STAGED);
    b.cuda_ordinal = 2;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, NULL), CLF__PATH_STAGED);
    b.cuda_ordinal = 1;
    /* The OpenCL side cannot import CUDA memory. */
    a.cuda_import = 0;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, NULL), CLF__PATH_STAGED);
    a.cuda_import = 1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, CLF__PATH_BIT(CLF__PATH_CUDA_P2P), &direct),
                     CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 1);
    /* Two OpenCL devices (two platforms) on one GPU: the diagonal needs no peer access. */
    clf__path_dev c = nvidia(2, 0, 0x3b);
    env.cuda_peer = peer_none;
    ck_assert_int_eq(sel(&a, 0, &c, 2, &env, 0, NULL), CLF__PATH_CUDA_P2P);
}
END_TEST

START_TEST(test_mixed_vendors)
{
    size_t amd_peers[] = {0, 1};
    clf__path_dev nv = nvidia(0, 0, 0x3b);
    clf__path_dev amd = gpu(1);
    amd.amd_p2p = 1;
    amd.amd_peers = amd_peers;
    amd.namd_peers = 1; /* lists fleet device 0 only */
    amd.pci_known = 1;
    clf__path_dev cpu = gpu(2);
    cpu.host_unified = 1;
    clf__path_env env = {1, peer_all, 2};
    int direct = -1;
    ck_assert_int_eq(sel(&nv, 0, &amd, 1, &env, 0, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 0);
    ck_assert_int_eq(sel(&nv, 0, &cpu, 2, &env, 0, NULL), CLF__PATH_STAGED);
    ck_assert_int_eq(sel(&cpu, 2, &nv, 0, &env, 0, NULL), CLF__PATH_STAGED);
    ck_assert_int_eq(sel(&cpu, 2, &amd, 1, &env, 0, NULL), CLF__PATH_STAGED);
    /* An AMD list naming a non-AMD device is the driver's claim; the selector trusts it. */
    ck_assert_int_eq(sel(&amd, 1, &nv, 0, &env, 0, NULL), CLF__PATH_AMD_P2P);
    ck_assert_int_eq(sel(&amd, 1, &nv, 0, &env, CLF__PATH_BIT(CLF__PATH_AMD_P2P), NULL),
                     CLF__PATH_STAGED);
}
END_TEST

START_TEST(test_force_staged)
{
    size_t peers[] = {1};
    clf__path_dev a = nvidia(0, 0, 1), b = nvidia(0, 1, 2);
    a.host_unified = b.host_unified = 1;
    a.amd_p2p = 1;
    a.amd_peers = peers;
    a.namd_peers = 1;
    clf__path_env env = {1, peer_all, 2};
    unsigned m = 0;
    ck_assert_int_eq(clf__path_parse_env("staged", &m), CLF_SUCCESS);
    int direct = -1;
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, m, &direct), CLF__PATH_STAGED);
    ck_assert_int_eq(direct, 1);
    ck_assert_int_eq(sel(&a, 0, &a, 0, &env, m, NULL), CLF__PATH_STAGED);
    /* Peel the paths off one by one: each disable flag reveals the next path. */
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, 0, NULL), CLF__PATH_UNIFIED);
    m = CLF__PATH_BIT(CLF__PATH_UNIFIED);
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, m, NULL), CLF__PATH_AMD_P2P);
    m |= CLF__PATH_BIT(CLF__PATH_AMD_P2P);
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, m, NULL), CLF__PATH_CUDA_P2P);
    m |= CLF__PATH_BIT(CLF__PATH_CUDA_P2P);
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, m, NULL), CLF__PATH_STAGED);
    /* The STAGED bit means nothing: staging always remains. */
    ck_assert_int_eq(sel(&a, 0, &b, 1, &env, ~0u, NULL), CLF__PATH_STAGED);
}
END_TEST

/* Independent reference: the rules of DESIGN.md written as one expression per path. */
static clf__path reference(const clf__path_dev *a, size_t ia, const clf__path_dev *b, size_t ib,
                           const clf__path_env *e, unsigned dis)
{
    int on[CLF__PATH_STAGED];
    on[0] = ia == ib;
    on[1] = a->host_unified && b->host_unified && a->context == b->context;
    on[2] = 0;
    for (size_t i = 0; a->amd_p2p && a->amd_peers && i < a->namd_peers; i++)
        on[2] |= a->amd_peers[i] == ib;
    on[3] = e && e->cuda_ok && a->pci_known && b->pci_known && a->cuda_import &&
            b->cuda_import && a->cuda_ordinal >= 0 && b->cuda_ordinal >= 0 &&
            (size_t)a->cuda_ordinal < e->ncuda && (size_t)b->cuda_ordinal < e->ncuda &&
            (a->cuda_ordinal == b->cuda_ordinal ||
             (e->cuda_peer &&
              e->cuda_peer[(size_t)a->cuda_ordinal * e->ncuda + (size_t)b->cuda_ordinal]));
    for (int p = 0; p < CLF__PATH_STAGED; p++)
        if (on[p] && !(dis >> p & 1))
            return (clf__path)p;
    return CLF__PATH_STAGED;
}

/* Every combination of the facts that matter (2^16) under every disabled mask (2^5). */
START_TEST(test_exhaustive)
{
    static const unsigned char peers[4][4] = {
        {0, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 1, 1, 0}};
    size_t list[] = {1};
    size_t ncases = 0, counts[CLF__PATH_COUNT] = {0};
    for (unsigned bits = 0; bits < (1u << 16); bits++) {
        clf__path_dev a = gpu(0), b = gpu(bits >> 0 & 1);
        size_t ib = (bits >> 1 & 1) ? 0 : 1;
        a.host_unified = bits >> 2 & 1;
        b.host_unified = bits >> 3 & 1;
        a.amd_p2p = bits >> 4 & 1;
        a.amd_peers = (bits >> 5 & 1) ? list : NULL;
        a.namd_peers = 1;
        a.pci_known = bits >> 6 & 1;
        b.pci_known = bits >> 7 & 1;
        a.cuda_ordinal = (bits >> 8 & 1) ? 0 : -1;
        b.cuda_ordinal = (bits >> 9 & 1) ? (int)(bits >> 10 & 1) : -1;
        a.cuda_import = bits >> 11 & 1;
        b.cuda_import = bits >> 12 & 1;
        clf__path_env env = {(int)(bits >> 13 & 1), peers[bits >> 14 & 3], 2};
        int want_direct = reference(&a, 0, &b, ib, &env, 0) != CLF__PATH_STAGED;
        for (unsigned dis = 0; dis < 32; dis++) {
            int direct = -1;
            clf__path got = sel(&a, 0, &b, ib, &env, dis, &direct);
            /* Plain comparisons: a Check assertion per case costs a message to the parent. */
            if (got != reference(&a, 0, &b, ib, &env, dis) || direct != want_direct)
                ck_abort_msg("facts %#x, disabled %#x: got %s, direct %d", bits, dis,
                             clf__path_name(got), direct);
            counts[got]++;
            ncases++;
        }
    }
    ck_assert_uint_eq(ncases, (size_t)1 << 21);
    for (int p = 0; p < CLF__PATH_COUNT; p++)
        ck_assert_uint_gt(counts[p], 0); /* every path is reached */
}
END_TEST

START_TEST(test_parse_good)
{
    static const struct {
        const char *s;
        unsigned mask;
    } cases[] = {
        {NULL, 0},
        {"", 0},
        {"   ", 0},
        {"auto", 0},
        {"staged", CLF__PATH_FORCE_STAGED},
        {"force-staged", CLF__PATH_FORCE_STAGED},
        {"STAGED", CLF__PATH_FORCE_STAGED},
        {"no-unified", 1u << CLF__PATH_UNIFIED},
        {"no-amd", 1u << CLF__PATH_AMD_P2P},
        {"no-cuda", 1u << CLF__PATH_CUDA_P2P},
        {"no-cuda,no-amd", (1u << CLF__PATH_CUDA_P2P) | (1u << CLF__PATH_AMD_P2P)},
        {" no-cuda , No-Amd ", (1u << CLF__PATH_CUDA_P2P) | (1u << CLF__PATH_AMD_P2P)},
        {"no-p2p", (1u << CLF__PATH_CUDA_P2P) | (1u << CLF__PATH_AMD_P2P)},
        {"no-amd,no-amd", 1u << CLF__PATH_AMD_P2P},
        {"auto,no-unified", 1u << CLF__PATH_UNIFIED},
        {"no-unified,staged", CLF__PATH_FORCE_STAGED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned m = 0xdead;
        ck_assert_msg(clf__path_parse_env(cases[i].s, &m) == CLF_SUCCESS, "case %zu", i);
        ck_assert_msg(m == cases[i].mask, "case %zu: %#x", i, m);
    }
    /* No token disables the same device on its own. */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].mask != CLF__PATH_FORCE_STAGED)
            ck_assert(!(cases[i].mask & CLF__PATH_BIT(CLF__PATH_SAME_DEVICE)));
}
END_TEST

START_TEST(test_parse_bad)
{
    static const char *const bad[] = {
        "x", "stage", "stagedd", "no-", "no-same-device", "same-device", ",", "no-amd,",
        ",no-amd", "no-amd,,no-cuda", "no amd", "no-amd;no-cuda", "nocuda", "\tno-cuda,x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned m = 0x1234;
        clf_clear_error();
        ck_assert_msg(clf__path_parse_env(bad[i], &m) == CLF_ERROR_PARSE, "'%s'", bad[i]);
        ck_assert_uint_eq(m, 0x1234);
        ck_assert_msg(strstr(clf_last_error(), "CLFLEET_TRANSFER") != NULL, "%s",
                      clf_last_error());
    }
    clf_clear_error();
    ck_assert_int_eq(clf__path_parse_env("no-amd,bogus", &(unsigned){0}), CLF_ERROR_PARSE);
    ck_assert_ptr_nonnull(strstr(clf_last_error(), "'bogus'"));
    ck_assert_int_eq(clf__path_parse_env("auto", NULL), CLF_ERROR_NULL_POINTER);
    /* A long token is quoted shortened, not overflowing the message. */
    char big[4096];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(clf__path_parse_env(big, &(unsigned){0}), CLF_ERROR_PARSE);
}
END_TEST

START_TEST(test_from_info)
{
    clf_device_info info;
    memset(&info, 0, sizeof info);
    info.host_unified = 7;
    info.context_index = 3;
    info.pci_known = 1;
    info.pci_domain = 1;
    info.pci_bus = 0xaf;
    info.pci_device = 2;
    info.pci_function = 1;
    info.extensions = "cl_khr_fp64 cl_amd_copy_buffer_p2p cl_khr_icd";
    clf__path_dev d;
    memset(&d, 0xff, sizeof d);
    clf__path_dev_from_info(&d, &info);
    ck_assert_int_eq(d.host_unified, 1);
    ck_assert_uint_eq(d.context, 3);
    ck_assert_int_eq(d.amd_p2p, 1);
    ck_assert_int_eq(d.pci_known, 1);
    ck_assert_uint_eq(d.pci_domain, 1);
    ck_assert_uint_eq(d.pci_bus, 0xaf);
    ck_assert_uint_eq(d.pci_device, 2);
    ck_assert_uint_eq(d.pci_function, 1);
    ck_assert_int_eq(d.cuda_ordinal, -1);
    ck_assert_int_eq(d.cuda_import, 0);
    ck_assert_ptr_null(d.amd_peers);
    ck_assert_uint_eq(d.namd_peers, 0);
    /* Only an exact name counts. */
    static const char *const no[] = {
        NULL, "", "cl_amd_copy_buffer_p2pX", "xcl_amd_copy_buffer_p2p", "cl_amd_copy_buffer",
        "cl_khr_fp64  cl_amd_copy_buffer_p2p_v2 "};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        info.extensions = no[i];
        clf__path_dev_from_info(&d, &info);
        ck_assert_msg(d.amd_p2p == 0, "case %zu", i);
    }
    info.extensions = "  cl_amd_copy_buffer_p2p";
    clf__path_dev_from_info(&d, &info);
    ck_assert_int_eq(d.amd_p2p, 1);
}
END_TEST

static Suite *pathsel_suite(void)
{
    Suite *s = suite_create("pathsel");
    TCase *tc = tcase_create("select");
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_same_device);
    tcase_add_test(tc, test_unified);
    tcase_add_test(tc, test_amd);
    tcase_add_test(tc, test_cuda);
    tcase_add_test(tc, test_mixed_vendors);
    tcase_add_test(tc, test_force_staged);
    tcase_add_test(tc, test_exhaustive);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("parse");
    tcase_add_test(tp, test_parse_good);
    tcase_add_test(tp, test_parse_bad);
    tcase_add_test(tp, test_from_info);
    suite_add_tcase(s, tp);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(pathsel_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

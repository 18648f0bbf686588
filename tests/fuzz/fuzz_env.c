/* libFuzzer target: the parsers of the other environment variables and option
 * strings. The first byte picks the parser, the rest is the value (an embedded
 * NUL ends it): CLFLEET_TRANSFER (lib/plan/pathsel.c), CLFLEET_STRATEGY
 * (clf_strategy_parse), CLFLEET_METRICS, CLFLEET_TRANSFER_CHUNK,
 * CLFLEET_TRANSFER_STAGING, CLFLEET_CACHE_MAX and CLFLEET_HOST_STAGING (lib/util/names.c). Checks: success or CLF_ERROR_PARSE, a
 * detail message on failure, outputs within their documented ranges. */
#include "core/core.h"
#include "plan/pathsel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_env: %s\n", what);
        abort();
    }
}

static void check_status(clf_status st)
{
    check(st == CLF_SUCCESS || st == CLF_ERROR_PARSE, "status is success or a parse error");
    check(st == CLF_SUCCESS || clf_last_error()[0] != '\0', "a failure has a detail message");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size == 0)
        return 0;
    char *v = malloc(size);
    if (!v)
        return 0;
    memcpy(v, data + 1, size - 1);
    v[size - 1] = '\0';
    clf_clear_error();
    switch (data[0] % 7) {
    case 0: {
        unsigned disabled = 0xdeadu;
        clf_status st = clf__path_parse_env(v, &disabled);
        check_status(st);
        check(st != CLF_SUCCESS || disabled != 0xdeadu, "success sets the mask");
        break;
    }
    case 1: {
        clf_strategy s = (clf_strategy)99;
        clf_status st = clf_strategy_parse(&s, v);
        check_status(st);
        check(st != CLF_SUCCESS || clf_strategy_name(s) != NULL, "a known strategy");
        check(st == CLF_SUCCESS || s == (clf_strategy)99, "failure leaves the output");
        break;
    }
    case 2: {
        int off = 7;
        clf_status st = clf__env_metrics(v, &off);
        check_status(st);
        check(off == 0 || off == 1, "off is 0 or 1");
        break;
    }
    case 3: {
        size_t chunk = 0;
        clf_status st = clf__env_transfer_chunk(v, (size_t)4 << 20, &chunk);
        check_status(st);
        check(chunk >= ((size_t)64 << 10) && chunk <= ((size_t)64 << 20) &&
                  (chunk & (chunk - 1)) == 0,
              "the chunk is a power of two in [64K, 64M]");
        break;
    }
    case 4: {
        uint64_t max = 7;
        clf_status st = clf__env_cache_max(v, &max);
        check_status(st);
        check(st == CLF_SUCCESS || max == 0, "a refused limit is no limit");
        break;
    }
    case 5: {
        int mode = 7;
        clf_status st = clf__env_host_staging(v, &mode);
        check_status(st);
        check(st != CLF_SUCCESS || mode == CLF__HOST_STAGING_AUTO ||
                  mode == CLF__HOST_STAGING_DIRECT || mode == CLF__HOST_STAGING_PINNED,
              "a known mode");
        break;
    }
    default: {
        int pipeline = 7;
        clf_status st = clf__env_staging(v, &pipeline);
        check_status(st);
        check(pipeline == 0 || pipeline == 1, "pipeline is 0 or 1");
        break;
    }
    }
    free(v);
    return 0;
}

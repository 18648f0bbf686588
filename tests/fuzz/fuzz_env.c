/* libFuzzer target: the parsers of the other environment variables and option
 * strings. The first byte picks the parser, the rest is the value (an embedded
 * NUL ends it): CLFLEET_TRANSFER (lib/plan/pathsel.c), CLFLEET_STRATEGY
 * (clf_strategy_parse), CLFLEET_METRICS, CLFLEET_TRANSFER_CHUNK, CLFLEET_TRANSFER_STAGING
 * and CLFLEET_CACHE_MAX (lib/util/names.c), CLFLEET_SIMULATE (lib/observe/simrules.c).
 * Checks: success or CLF_ERROR_PARSE, a detail message on failure, outputs within their
 * documented ranges. (A seed's first byte '0' to '6' picks the parser in this order:
 * transfer, strategy, metrics, chunk, staging, simulate, cache max.) */
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
    switch ((data[0] + 1u) % 7) {
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
        int pipeline = 7;
        clf_status st = clf__env_staging(v, &pipeline);
        check_status(st);
        check(pipeline == 0 || pipeline == 1, "pipeline is 0 or 1");
        break;
    }
    case 5: {
        clf__sim_rule *r = NULL;
        size_t n = 99;
        clf_status st = clf__sim_parse(v, &r, &n);
        check_status(st);
        check(st == CLF_SUCCESS || (r == NULL && n == 0), "failure leaves no rules");
        check((n == 0) == (r == NULL), "rules exactly when some were parsed");
        for (size_t i = 0; i < n; i++) {
            check(r[i].compute > 0 && r[i].compute <= 1, "compute in (0, 1]");
            check(r[i].latency_ns <= 60000000000ull, "latency at most 60 s");
            check(r[i].h2d == 0 || r[i].h2d >= 1, "h2d none or at least 1 byte/s");
            check(r[i].d2h == 0 || r[i].d2h >= 1, "d2h none or at least 1 byte/s");
            for (size_t j = 0; j < i; j++)
                check(r[i].device != r[j].device, "one rule per device");
        }
        free(r);
        break;
    }
    default: {
        uint64_t max = 7;
        clf_status st = clf__env_cache_max(v, &max);
        check_status(st);
        check(st == CLF_SUCCESS || max == 0, "a refused limit is no limit");
        break;
    }
    }
    free(v);
    return 0;
}

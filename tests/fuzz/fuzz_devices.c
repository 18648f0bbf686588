/* libFuzzer target: the device selection parser ($CLFLEET_DEVICES, lib/plan/select.c)
 * and the matcher it feeds. The input is the selection string; an embedded NUL
 * ends it, as in C. Checks: a status of success or CLF_ERROR_PARSE, a detail
 * message on failure, a failure leaves the filter untouched, and a parsed
 * filter's strings and counts stay within their arrays. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_devices: %s\n", what);
        abort();
    }
}

static int bounded(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    /* A filter already holding values (a string parsed earlier), as the option
     * fields and a second parse would leave it. */
    clf__filter f, before;
    memset(&f, 0, sizeof f);
    check(clf__filter_parse(&f, "type=cpu;name=x;index=1-3;require=fp64,cl_khr_a;split=2") ==
              CLF_SUCCESS,
          "the base selection parses");
    before = f;
    clf_clear_error();
    clf_status st = clf__filter_parse(&f, s);
    check(st == CLF_SUCCESS || st == CLF_ERROR_PARSE, "status is success or a parse error");
    if (st != CLF_SUCCESS) {
        check(clf_last_error()[0] != '\0', "a failure has a detail message");
        check(memcmp(&f, &before, sizeof f) == 0, "a failure leaves the filter untouched");
    }
    check(bounded(f.platform, sizeof f.platform) && bounded(f.vendor, sizeof f.vendor) &&
              bounded(f.name, sizeof f.name),
          "strings are NUL-terminated in their arrays");
    check(f.nexts <= CLF__MAX_EXTS, "at most CLF__MAX_EXTS extensions");
    for (size_t i = 0; i < f.nexts; i++)
        check(bounded(f.exts[i], sizeof f.exts[i]) && strncmp(f.exts[i], "cl_", 3) == 0,
              "extension names are cl_* and bounded");
    check(f.nsplit_counts <= CLF__MAX_SPLIT, "at most CLF__MAX_SPLIT split counts");
    for (size_t i = 0; i < f.nsplit_counts; i++)
        check(f.split_counts[i] >= 1, "split counts are at least 1");
    check(!(f.split_units && f.nsplit_counts), "split by units or by counts, not both");
    check((f.types & ~(unsigned)CLF_DEVICE_ALL) == 0, "only known type bits");

    /* The matcher on a device made of the input's own bytes. */
    clf_device_info info;
    memset(&info, 0, sizeof info);
    size_t n = size < sizeof info.name - 1 ? size : sizeof info.name - 1;
    memcpy(info.name, s, n);
    memcpy(info.vendor, s, n < sizeof info.vendor - 1 ? n : sizeof info.vendor - 1);
    snprintf(info.platform, sizeof info.platform, "Portable Computing Language");
    info.type = CLF_DEVICE_CPU;
    info.compute_units = (unsigned)size;
    info.fp64 = (int)(size & 1);
    info.host_unified = (int)(size & 2);
    info.extensions = s;
    (void)clf__filter_match(&f, &info, (unsigned)(size % 300));
    free(s);
    return 0;
}

/* lib/plan: pure logic, testable without OpenCL: device selection, partitioning,
 * transfer-path selection, the performance model. Not installed. */
#ifndef CLFLEET_PLAN_H
#define CLFLEET_PLAN_H

#include "util/util.h"

#include "partition.h"
#include "collcost.h"
#include "pathsel.h"
#include "perfmodel.h"
#include "rebalplan.h"

/* ---- device selection (select.c, pure) ---- */

#define CLF__MAX_INDEX 256
#define CLF__MAX_SPLIT 64
#define CLF__MAX_EXTS 8

typedef struct clf__filter {
    unsigned types;           /* CLF_DEVICE_* mask; 0: GPUs and accelerators, else CPUs */
    char platform[128];       /* case-insensitive substring of platform name or vendor */
    char vendor[128];         /* ... of the device vendor */
    char name[128];           /* ... of the device name */
    int has_index;            /* restrict to discovery indices in index[] */
    unsigned char index[CLF__MAX_INDEX];
    unsigned min_cu;
    unsigned require;         /* CLF_CAP_* */
    char exts[CLF__MAX_EXTS][64]; /* required extensions */
    size_t nexts;
    unsigned split_units;     /* split CPUs equally, this many units each */
    unsigned split_counts[CLF__MAX_SPLIT];
    size_t nsplit_counts;     /* or by these counts */
    int context_per_device;
    /* Which criteria clf_fleet_options set (CLF__FROM_* bits, and the CLF_CAP_* bits of its
     * require), so that a refusal names the field the caller wrote, not a term never typed. */
    unsigned from_options;
    unsigned require_from_options;
} clf__filter;

#define CLF__FROM_TYPES 1u  /* device_types */
#define CLF__FROM_MIN_CU 2u /* min_compute_units */
#define CLF__FROM_SPLIT 4u  /* split_cpu_units or split_cpu_counts */

/* Parse a selection string into f (fields given override those already there). */
clf_status clf__filter_parse(clf__filter *f, const char *s);
/* Nonzero when a root device with these facts and discovery index passes
 * every criterion but the type (the type rule needs the whole list). */
int clf__filter_match(const clf__filter *f, const clf_device_info *info, unsigned index);
/* Why a root device fails the filter: NULL when it passes every criterion, else out, filled with
 * each term or option field that excludes it and the device's own value, e.g.
 * "min_compute_units=4 (it has 2)". An explicit type counts here (as it does not in
 * clf__filter_match()); the default type rule does not, since it needs the whole list. */
const char *clf__filter_why(const clf__filter *f, const clf_device_info *info, unsigned index,
                            char *out, size_t cap);
/* Why the filter's split cannot be made of this device (more units asked than it has): NULL
 * when it can (or the filter does not split it), else out, naming the device. */
const char *clf__filter_split_why(const clf__filter *f, const clf_device_info *info,
                                  unsigned index, char *out, size_t cap);
/* How many of the indices the filter names are not below ndev; out lists them as the
 * selection would ("2-3,7"). */
size_t clf__filter_missing(const clf__filter *f, size_t ndev, char *out, size_t cap);

/* Nonzero when the space-separated list holds the exact name. */
int clf__ext_listed(const char *list, const char *name);

#endif

/* lib/plan: pure logic, testable without OpenCL: device selection, partitioning,
 * transfer-path selection, the performance model. Not installed. */
#ifndef CLFLEET_PLAN_H
#define CLFLEET_PLAN_H

#include "util/util.h"

#include "partition.h"
#include "pathsel.h"
#include "perfmodel.h"

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
} clf__filter;

/* Parse a selection string into f (fields given override those already there). */
clf_status clf__filter_parse(clf__filter *f, const char *s);
/* Nonzero when a root device with these facts and discovery index passes
 * every criterion but the type (the type rule needs the whole list). */
int clf__filter_match(const clf__filter *f, const clf_device_info *info, unsigned index);

/* Nonzero when the space-separated list holds the exact name. */
int clf__ext_listed(const char *list, const char *name);

#endif

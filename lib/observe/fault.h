/*
 * Device faults (fault.c): the fleet's record of failed devices, and fault
 * injection for tests ($CLFLEET_FAULT_INJECT, read when a fleet is created).
 *
 * Injection is compiled in and off by default. Every hook is CLF__FAULT(),
 * one predictable branch on a global flag that stays 0 until some fleet is
 * created with rules; only then does a hook take the rules' lock.
 */
#ifndef CLFLEET_FAULT_H
#define CLFLEET_FAULT_H

#include "plan/plan.h"

/* The calls a rule can fail (bits of clf__fault_rule.calls). Besides the launch executor's
 * hooks, the command path (core/cmd.c) gives every command the class of its kind, so that
 * task queues, pipelines, collectives, copies and array launches are reached too. */
enum {
    CLF__FAULT_ENQUEUE = 0, /* a launch's kernel enqueue (clEnqueueNDRangeKernel) */
    CLF__FAULT_EXEC,        /* the kernel fails while it runs (the enqueue succeeds) */
    CLF__FAULT_WRITE,       /* a launch's host-to-device data: chunk inputs, broadcasts */
    CLF__FAULT_READ,        /* a launch's device-to-host data: chunk outputs, reductions */
    CLF__FAULT_ALLOC,       /* a launch's buffer creation (clCreateBuffer) */
    CLF__FAULT_BUILD,       /* building a program for the device */
    CLF__FAULT_BUFFER,      /* clf_buffer_read/write (and _async): only by its own rules */
    CLF__FAULT_NCALLS
};

/* Parsed rules, pure (no OpenCL calls): exposed for the tests of the grammar. */
typedef struct clf__fault_rule {
    unsigned calls; /* mask of 1u << CLF__FAULT_* */
    int any_device; /* device=* */
    size_t device;
    uint64_t after; /* matching calls that succeed first */
    uint64_t count; /* failures injected after them; UINT64_MAX: every later call */
    cl_int status;  /* 0: the default for the call */
    int lost;       /* the failing call loses the device (until readmitted) */
} clf__fault_rule;

/*
 * Parse a rule list (the grammar is in doc/14-reliability.md). An empty or
 * blank string gives no rules. CLF_ERROR_PARSE with a detail naming the rule
 * and the bad item; CLF_ERROR_OUT_OF_HOST_MEMORY. *out is malloc'd.
 */
clf_status clf__fault_parse(const char *s, clf__fault_rule **out, size_t *n);

/* Nonzero once any fleet has injection rules (read with a relaxed atomic load). */
extern int clf__fault_enabled;

/* The injected error for this call on fleet device dev, or CL_SUCCESS. */
cl_int clf__fault_hit(clf_fleet *fl, size_t dev, unsigned call);

#define CLF__FAULT(fl, dev, call)                                                                  \
    (__builtin_expect(__atomic_load_n(&clf__fault_enabled, __ATOMIC_RELAXED), 0)                   \
         ? clf__fault_hit((fl), (dev), (call))                                                     \
         : CL_SUCCESS)

/* Read $CLFLEET_FAULT_INJECT for a new fleet (its devices known); CLF_ERROR_PARSE. */
clf_status clf__fault_init(clf_fleet *fl);
void clf__fault_fini(clf_fleet *fl);

/* Nonzero for an OpenCL error that means the device (not the caller) failed: out of
 * resources or device memory, not available, a failed command, a vendor's fault code. */
int clf__cl_device_fault(cl_int err);
/* Record that device dev failed: launches and task queues leave it out, and the command path
 * refuses it (CLF_ERROR_DEVICE_FAILED), until clf_device_readmit(). A `lost` rule marks it. */
void clf__device_mark_failed(clf_fleet *fl, size_t dev, const char *why);
/* Nonzero when dev is marked failed; its detail copied to why (n bytes) if non-NULL. */
int clf__device_failed(clf_fleet *fl, size_t dev, char *why, size_t n);

#endif

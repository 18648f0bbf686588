/*
 * Simulated devices for tests ($CLFLEET_SIMULATE, read when a fleet is created): real devices
 * made to behave like slower ones, so that two one-core sub-devices of a CPU stand in for a
 * GPU and a CPU. The rules are parsed by simrules.c (pure); simulate.c holds back the
 * completion of each command of the command path (core/cmd.c) on a simulated device.
 *
 * Off by default, at no cost: the command path tests the fleet's `sim` pointer once, and
 * clf__event_profile() a global flag that stays 0 until a fleet is created with rules.
 */
#ifndef CLFLEET_SIMULATE_H
#define CLFLEET_SIMULATE_H

#include "plan/plan.h"

/* One parsed rule: how device `device` is slowed. */
typedef struct clf__sim_rule {
    size_t device;       /* fleet device index */
    double compute;      /* kernel throughput factor, 0 < compute <= 1 (1: unchanged) */
    uint64_t latency_ns; /* added to every command that does work */
    double h2d, d2h;     /* bandwidth caps in bytes/s (0: none) */
} clf__sim_rule;

/* The words a rule may hold, for messages. */
#define CLF__SIM_KEYS "device, compute, latency, h2d, d2h"

/*
 * Parse a rule list: rules separated by ';', each "device=N" then any of ",compute=F"
 * (0 < F <= 1), ",latency=T" (a decimal number with ns, us, ms or s; no unit: seconds; at
 * most 60 s), ",h2d=B", ",d2h=B" (bytes per second, a decimal number with an optional K, M,
 * G or T: powers of 1000). Blanks around items are ignored, empty rules skipped; an empty or
 * blank string gives no rules. A key given twice, a rule without device= or without any
 * effect, two rules for one device: CLF_ERROR_PARSE with a detail naming the rule and the
 * words; CLF_ERROR_OUT_OF_HOST_MEMORY. *out is malloc'd (NULL when *n is 0).
 */
clf_status clf__sim_parse(const char *s, clf__sim_rule **out, size_t *n);

/* Read $CLFLEET_SIMULATE for a new fleet (its devices and transfer layer known): rules for
 * devices out of range or for a device that runs commands inside clEnqueue* (PoCL's basic)
 * are refused (CLF_ERROR_PARSE). Sets fl->sim when there are rules (the delays are timed
 * jobs of the helper pool: no thread of its own). */
clf_status clf__sim_init(clf_fleet *fl);
/* Once every queue of the fleet has finished: waits until no delayed command of the fleet's
 * is left to release, then frees its state. */
void clf__sim_fini(clf_fleet *fl);

/* What kind of work a command does, for the rule's effects. */
enum {
    CLF__SIM_KERNEL = 0, /* compute and latency */
    CLF__SIM_H2D,        /* host to device: latency and the h2d cap */
    CLF__SIM_D2H,        /* device to host: latency and the d2h cap */
    CLF__SIM_OTHER       /* fills, copies, maps: latency */
};

/* Nonzero when fleet device dev has a rule (fl->sim set). */
int clf__sim_device(const clf_fleet *fl, size_t dev);
/* Device dev's rule as text ("|sim=compute=0.02,latency=60000ns"; "" without one), for the
 * keys of what is learned about the device (the cost model): a simulated device is another
 * device, and must neither use nor overwrite, in the model persisted on disk, the figures of
 * the real one. */
void clf__sim_key(const clf_fleet *fl, size_t dev, char *buf, size_t n);

/*
 * A command `real` (of kind CLF__SIM_*, moving bytes) on fleet device dev, which has a rule,
 * is delayed in three steps. The command path (core/cmd.c, where every enqueue is) takes a
 * user event from clf__sim_user_event(), enqueues after `real` on the same in-order queue a
 * marker that waits for it, and hands the marker on as the command's event, so that host
 * waits, wait lists and later commands of the queue all see the simulated completion. Then
 * clf__sim_arm() (taking the user event's reference; marker NULL: the marker's enqueue
 * failed, and the user event is only released) computes the delay when `real` completes and
 * has a timed job of the helper pool set the user event when it is over; no thread waits
 * for it.
 * Failures: CLF_ERROR_OPENCL recorded with the device, or out of memory; the marker then
 * completes undelayed rather than never.
 */
clf_status clf__sim_user_event(clf_fleet *fl, size_t dev, cl_event *user);
clf_status clf__sim_arm(clf_fleet *fl, size_t dev, cl_event real, cl_event marker,
                        cl_event user, unsigned kind, size_t bytes);
/* As clf__sim_arm(), for `real` the last of several commands that began when `since` (an
 * earlier command of the same in-order queue, or NULL) ended: their whole time is held
 * back, and the marker's simulated start is since's end (a library's kernels enqueued
 * outside the command path, clf__cmd_adopt_kernel()). */
clf_status clf__sim_arm_since(clf_fleet *fl, size_t dev, cl_event real, cl_event since,
                              cl_event marker, cl_event user, unsigned kind, size_t bytes);

/* Nonzero once any fleet has simulation rules (read with a relaxed atomic load). */
extern int clf__sim_enabled;

/* For clf__event_profile(): when ev is a marker of clf__sim_arm(), its simulated start and
 * end (the real command's start, the marker's end) in *t0, *t1 and 1; else 0. */
int clf__sim_profile(cl_event ev, uint64_t *t0, uint64_t *t1);

#endif

/* lib/fleet: the fleet's life: creation (discovery, selection, contexts, queues, then the
 * transfer, metrics and fault state every layer uses) and teardown (the finalizers the
 * layers above registered with their state, core/device.c, then its own). It uses the layers
 * below it only; the layers above register their state with the fleet instead of being
 * called from here. Not installed. */
#ifndef CLFLEET_FLEET_H
#define CLFLEET_FLEET_H

#include "xfer/xfer.h"

#endif

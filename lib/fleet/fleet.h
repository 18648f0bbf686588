/* lib/fleet: the fleet's life, the top layer: creation (discovery, selection, contexts,
 * queues, then every layer's state) and teardown (every layer's finalizer). It sits above
 * the layers it finalizes; once they register their finalizers (phase 2 of issue 15), it
 * can move into core. Not installed. */
#ifndef CLFLEET_FLEET_H
#define CLFLEET_FLEET_H

#include "blas/blas.h"
#include "coll/coll.h"

#endif

/* lib/flow: pipelines (pipeline.c) and task queues with work stealing (taskq.c). Nothing
 * here is used by another layer yet; the header names what flow may use. Not installed. */
#ifndef CLFLEET_FLOW_H
#define CLFLEET_FLOW_H

#include "xfer/xfer.h"

#endif

/*
 * clfleet kernel helpers, prepended to every program clfleet builds.
 *
 * A chunk-indexed argument (CLF_ARG_CHUNK_INDEXED) holds only its chunk and
 * halo: unit u of the range is at u - get_global_offset(d) + halo_before.
 */
#ifndef CLFLEET_CL_H
#define CLFLEET_CL_H

/* This work-item's index within its chunk along dimension d. */
#define CLF_CHUNK_INDEX(d) (get_global_id(d) - get_global_offset(d))

/* Index of global unit u (e.g. a neighbour's row) in a chunk-indexed buffer. */
#define CLF_CHUNK_UNIT(d, u, halo_before) ((u) - get_global_offset(d) + (halo_before))

#endif

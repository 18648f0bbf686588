#!/bin/sh
# The launch suites again with host arrays forced through pinned staging slots (issue 27):
# CLFLEET_HOST_STAGING=pinned (PoCL shares the host's memory, so `auto` never takes that
# path here) and 64 KiB slots (CLFLEET_TRANSFER_CHUNK), so that the chunks' ranges go
# through the ring in many pieces, rows of strided arrays too. Every shape of tests/test_launch
# (inputs, outputs, in-out, halos global- and chunk-indexed, per-group outputs, every strategy,
# 2 and 3 devices) and tests/test_layout (strided arrays, partial outputs) must give the results
# it checks. A skip (77) of either is passed on.
set -u
b=${top_builddir:-.}
rc=0
for t in test_launch test_layout; do
    CLFLEET_HOST_STAGING=pinned CLFLEET_TRANSFER_CHUNK=64K "$b/tests/$t"
    r=$?
    echo "check-pinned: $t (CLFLEET_HOST_STAGING=pinned, 64K slots): exit $r"
    if [ $r -eq 77 ] && [ $rc -eq 0 ]; then
        rc=77
    elif [ $r -ne 0 ] && [ $r -ne 77 ]; then
        rc=1
    fi
done
exit $rc

#!/bin/sh
# tools/cmdpath.sh: the check that every command clfleet enqueues, and every buffer and kernel
# object it creates, goes through the command path (lib/core/cmd.c), which applies the
# metrics, the trace, fault injection and the basic-device rules once.
#
# It fails when a file under lib/ other than lib/core/cmd.c calls clEnqueue*, clCreateBuffer,
# clCreateSubBuffer or clCreateKernel. Comments and string literals are removed first (by
# tools/strip-c.awk, as for tools/layers.sh), so a comment that names a call is no call.
# Calls through function pointers (the AMD and CUDA peer extensions' own entry points) are
# not named and not seen.
# It also fails when a file other than lib/core/cmd.c counts device memory in the metrics by
# hand (clf__metrics_alloc, clf__metrics_free): a buffer is counted when clf__cmd_buffer()
# makes it and un-counted when clf__cmd_release() releases it, so that the two cannot drift.
# The exceptions below are file:call pairs, each with its reason.
#
# Exit status: 0 when clean, 1 with the offending lines listed, 99 on a usage error.
# Usage: tools/cmdpath.sh [top_srcdir]   (default: $top_srcdir, else .)
# POSIX sh, find, awk, sort; nothing to build.
set -u
top=${1:-${top_srcdir:-.}}
[ -d "$top/lib" ] || { echo "cmdpath.sh: no $top/lib" >&2; exit 99; }
strip=$(dirname "$0")/strip-c.awk
[ -f "$strip" ] || { echo "cmdpath.sh: no $strip" >&2; exit 99; }

# file:call allowed outside cmd.c, with why:
#  - lib/observe/trace.c: the trace's clock calibration times a bare marker between two host
#    clock reads; observe/ is below core/ (tools/layers.sh), so it cannot call cmd.c.
ALLOWED='
lib/core/cmd.c:*
lib/observe/trace.c:clEnqueueMarkerWithWaitList
'
# file:call allowed to count device memory outside cmd.c, with why:
#  - lib/observe/: where the counters are defined and declared;
#  - lib/exec/fleetstate.c: the launch buffer cache counts a buffer it keeps as free while
#    it holds it (no buffer is released there), and lib/exec/worker.c counts it again when
#    a launch takes it back.
MEM_ALLOWED='
lib/core/cmd.c:*
lib/observe/metrics.c:*
lib/observe/observe.h:*
lib/exec/fleetstate.c:clf__metrics_free
lib/exec/worker.c:clf__metrics_alloc
'

calls=$(dirname "$0")/calls.awk
out=${TMPDIR:-/tmp}/clf-cmdpath.$$
trap 'rm -f "$out"' EXIT INT TERM
(cd "$top" && find lib -name '*.[ch]' ! -path lib/kernels.c | LC_ALL=C sort) |
while read -r f; do
    clean=$(awk -f "$strip" "$top/$f") || { echo "cmdpath.sh: awk failed on $f"; continue; }
    printf '%s\n' "$clean" |
        awk -v f="$f" -v allowed="$ALLOWED" \
            -v re='clEnqueue[A-Za-z]*|clCreateBuffer|clCreateSubBuffer|clCreateKernel' \
            -v where='the command path (lib/core/cmd.c)' -f "$calls" ||
        echo "cmdpath.sh: awk failed on $f"
    printf '%s\n' "$clean" |
        awk -v f="$f" -v allowed="$MEM_ALLOWED" -v re='clf__metrics_alloc|clf__metrics_free' \
            -v where='clf__cmd_buffer() and clf__cmd_release() (lib/core/cmd.c)' \
            -f "$calls" ||
        echo "cmdpath.sh: awk failed on $f"
done > "$out"
bad=$(grep -vc '^ok ' "$out")
grep -v '^ok ' "$out"
if [ "$bad" -gt 0 ]; then
    echo "cmdpath.sh: $bad direct call(s); enqueue, create, and count buffers' memory" \
        "through lib/core/cmd.c" >&2
    exit 1
fi
echo "cmdpath.sh: every enqueue, buffer or kernel creation and buffer memory count goes" \
    "through lib/core/cmd.c"
exit 0

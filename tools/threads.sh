#!/bin/sh
# tools/threads.sh: the check that clfleet starts threads in two places only (issue 26's
# thread model, doc/internals.md "Threads"): the executor's one worker per device per fleet
# (lib/exec/fleetstate.c) and the process's one bounded helper pool (lib/util/pool.c).
# Everything else that needs a thread's time is a job of one of those: a copy the host
# drives, the event bridge's watcher, $CLFLEET_SIMULATE's delays (timed pool jobs), task
# queues and pipelines (device workers).
#
# It fails when a file under lib/ other than those two calls pthread_create or thrd_create.
# Comments and string literals are removed first (by tools/strip-c.awk, as for
# tools/layers.sh), so a comment that names the call is no call.
#
# Exit status: 0 when clean, 1 with the offending lines listed, 99 on a usage error.
# Usage: tools/threads.sh [top_srcdir]   (default: $top_srcdir, else .)
# POSIX sh, find, awk, sort; nothing to build.
set -u
top=${1:-${top_srcdir:-.}}
[ -d "$top/lib" ] || { echo "threads.sh: no $top/lib" >&2; exit 99; }
strip=$(dirname "$0")/strip-c.awk
[ -f "$strip" ] || { echo "threads.sh: no $strip" >&2; exit 99; }

ALLOWED='
lib/exec/fleetstate.c:*
lib/util/pool.c:*
'
calls=$(dirname "$0")/calls.awk

out=${TMPDIR:-/tmp}/clf-threads.$$
trap 'rm -f "$out"' EXIT INT TERM
(cd "$top" && find lib -name '*.[ch]' ! -path lib/kernels.c | LC_ALL=C sort) |
while read -r f; do
    clean=$(awk -f "$strip" "$top/$f") || { echo "threads.sh: awk failed on $f"; continue; }
    printf '%s\n' "$clean" |
        awk -v f="$f" -v allowed="$ALLOWED" -v re='pthread_create|thrd_create' \
            -v where='the executor (lib/exec/fleetstate.c) and the helper pool (lib/util/pool.c)' \
            -f "$calls" ||
        echo "threads.sh: awk failed on $f"
done > "$out"
bad=$(grep -vc '^ok ' "$out")
seen=$(sed -n 's/^ok \([^:]*\):.*/\1/p' "$out" | sort -u | wc -l)
grep -v '^ok ' "$out"
if [ "$bad" -gt 0 ]; then
    echo "threads.sh: $bad thread start(s) elsewhere; make it a job of the helper pool or of a device's worker" >&2
    exit 1
fi
# The two places must still start their threads, or this check checks nothing.
if [ "$seen" -ne 2 ]; then
    echo "threads.sh: expected thread starts in both lib/exec/fleetstate.c and lib/util/pool.c, found them in $seen" >&2
    exit 1
fi
echo "threads.sh: threads start only in lib/exec/fleetstate.c and lib/util/pool.c"
exit 0

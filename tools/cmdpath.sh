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

(cd "$top" && find lib -name '*.[ch]' ! -path lib/kernels.c | LC_ALL=C sort) |
while read -r f; do
    clean=$(awk -f "$strip" "$top/$f") || { echo "cmdpath.sh: awk failed on $f"; continue; }
    printf '%s\n' "$clean" | awk -v f="$f" -v allowed="$ALLOWED" '
    BEGIN { n = split(allowed, a, "\n"); for (i = 1; i <= n; i++) if (a[i] != "") ok[a[i]] = 1 }
    {
        rest = $0
        while (match(rest, /(clEnqueue[A-Za-z]*|clCreateBuffer|clCreateSubBuffer|clCreateKernel)[ \t]*\(/)) {
            call = substr(rest, RSTART, RLENGTH)
            sub(/[ \t]*\($/, "", call)
            pre = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
            rest = substr(rest, RSTART + RLENGTH)
            if (pre ~ /[A-Za-z0-9_]/)
                continue # part of a longer name
            if ((f ":*") in ok || (f ":" call) in ok)
                continue
            printf "%s:%d: %s outside the command path (lib/core/cmd.c)\n", f, NR, call
        }
    }' || echo "cmdpath.sh: awk failed on $f"
done > "${TMPDIR:-/tmp}/clf-cmdpath.$$"
bad=$(wc -l < "${TMPDIR:-/tmp}/clf-cmdpath.$$")
cat "${TMPDIR:-/tmp}/clf-cmdpath.$$"
rm -f "${TMPDIR:-/tmp}/clf-cmdpath.$$"
if [ "$bad" -gt 0 ]; then
    echo "cmdpath.sh: $bad direct call(s); enqueue and create through lib/core/cmd.c" >&2
    exit 1
fi
echo "cmdpath.sh: every enqueue and buffer or kernel creation goes through lib/core/cmd.c"
exit 0

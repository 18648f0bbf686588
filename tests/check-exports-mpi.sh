#!/bin/sh
# libclfleet-mpi exports exactly the functions include/clfleet/mpi.h declares (CLF_API), and
# libclfleet nothing of the MPI layer.
set -u
lib=${top_builddir:-.}/lib/.libs/libclfleet-mpi.so
core=${top_builddir:-.}/lib/.libs/libclfleet.so
hdr=${top_srcdir:-.}/include/clfleet/mpi.h
[ -f "$lib" ] || { echo "FAIL: $lib not built (shared library disabled?)"; exit 99; }
tmp=${TMPDIR:-/tmp}/clf-exports-mpi.$$
trap 'rm -f "$tmp".*' EXIT
${NM:-nm} -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ { print $3 }' | sort -u > "$tmp.lib"
tr '\n' ' ' < "$hdr" | sed 's/CLF_API/\nCLF_API/g' | grep '^CLF_API' |
    sed -n 's/^CLF_API[^(]*[^A-Za-z0-9_]\(clf_[A-Za-z0-9_]*\) *(.*/\1/p' | sort -u > "$tmp.hdr"
if ! grep -q . "$tmp.hdr"; then echo "FAIL: no declarations found"; exit 1; fi
if ! diff -u "$tmp.hdr" "$tmp.lib"; then
    echo "FAIL: libclfleet-mpi's exported symbols (+) differ from mpi.h's declarations (-)"
    exit 1
fi
if ${NM:-nm} -D --defined-only "$core" | grep -q ' clf_comm_'; then
    echo "FAIL: libclfleet exports clf_comm_ functions"; exit 1
fi
if ${READELF:-readelf} -d "$core" 2>/dev/null | grep -q 'NEEDED.*libmpi'; then
    echo "FAIL: libclfleet links MPI"; exit 1
fi
echo "PASS: $(wc -l < "$tmp.lib") exported symbols, all declared in clfleet/mpi.h"

#!/bin/sh
# The shared library exports exactly the functions the public headers declare.
set -u
lib=${top_builddir:-.}/lib/.libs/libclfleet.so
hdrs="${top_srcdir:-.}/include/clfleet.h ${top_srcdir:-.}/include/clfleet/opencl.h
      ${top_srcdir:-.}/include/clfleet/blas.h ${top_srcdir:-.}/include/clfleet/graph.h"
[ -f "$lib" ] || { echo "FAIL: $lib not built (shared library disabled?)"; exit 99; }
tmp=${TMPDIR:-/tmp}/clf-exports.$$
trap 'rm -f "$tmp".*' EXIT
${NM:-nm} -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ { print $3 }' | sort -u > "$tmp.lib"
# Declarations: CLF_API <type> <name>(...), possibly with the name on the next line.
cat $hdrs | tr '\n' ' ' | sed 's/CLF_API/\nCLF_API/g' | grep '^CLF_API' |
    sed -n 's/^CLF_API[^(]*[^A-Za-z0-9_]\(clf_[A-Za-z0-9_]*\) *(.*/\1/p' | sort -u > "$tmp.hdr"
if ! grep -q . "$tmp.hdr"; then echo "FAIL: no declarations found"; exit 1; fi
if ! diff -u "$tmp.hdr" "$tmp.lib"; then
    echo "FAIL: exported symbols (+) differ from the header declarations (-)"
    exit 1
fi
echo "PASS: $(wc -l < "$tmp.lib") exported symbols, all declared clf_* functions"

#!/bin/sh
# A C program that does no GEMM pays for no C++: libclfleet links neither libclblast nor
# libstdc++ (clBLAST is loaded at the first GEMM, lib/blas/gemmdev.c), and without clBLAST the GEMMs
# say so instead of failing to start.
set -u
b=${top_builddir:-.}
lib=$b/lib/.libs/libclfleet.so
[ -f "$lib" ] || { echo "FAIL: $lib not built (shared library disabled?)"; exit 99; }
readelf=${READELF:-readelf}
command -v "$readelf" > /dev/null 2>&1 || { echo "SKIP: no readelf"; exit 77; }
# The libraries the library, a tool and an example load by themselves (libtool keeps the
# real programs in .libs).
for f in "$lib" "$b/tools/.libs/clfleet-info" "$b/examples/.libs/vector-add"; do
    [ -f "$f" ] || { echo "FAIL: $f not built"; exit 99; }
    needed=$("$readelf" -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    [ -n "$needed" ] || { echo "FAIL: $f: no NEEDED entries read"; exit 99; }
    if echo "$needed" | grep -q 'clblast\|stdc++'; then
        echo "FAIL: $f needs a C++ library:"; echo "$needed"; exit 1
    fi
done
# No clBLAST to be found at run time: the GEMM benchmark is skipped (77) and says why.
bench=$b/tools/clfleet-bench
tmp=${TMPDIR:-/tmp}/clf-link.$$
trap 'rm -f "$tmp".*' EXIT
CLFLEET_CLBLAST_LIBRARY=/no/such/libclblast.so.1 $bench gemm --quick > "$tmp.out" 2> "$tmp.err"
rc=$?
[ $rc -eq 77 ] && grep -q 'without clBLAST' "$tmp.err" ||
    { echo "FAIL: gemm without clBLAST exited with $rc"; cat "$tmp.err"; exit 1; }
if grep -q '^#define HAVE_CLBLAST 1' "$b/config.h"; then
    grep -q '/no/such/libclblast.so.1' "$tmp.err" ||
        { echo "FAIL: the message does not name the library"; cat "$tmp.err"; exit 1; }
fi
echo "PASS: no libclblast or libstdc++ in libclfleet or its programs; GEMM without clBLAST skips"

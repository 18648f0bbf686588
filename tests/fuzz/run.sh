#!/bin/sh
# Build the libFuzzer targets with clang and run each for a while on its seed corpus.
#
#   tests/fuzz/run.sh [SECONDS]      default 30 seconds per target
#
# The library's sources are compiled with clang and -fsanitize=fuzzer-no-link,
# address,undefined into an archive that each target links (no device is used;
# libOpenCL only resolves symbols). A configured build directory supplies
# config.h and the generated lib/kernels.c: $CLF_FUZZ_BUILD, default _build
# (./build.sh makes it). New inputs go to a scratch corpus in the build
# directory, never into tests/fuzz/corpus; a crash leaves its input there too
# and makes the script fail.
set -eu
secs=${1:-30}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${CLF_FUZZ_BUILD:-$src/_build}" && pwd)
out=$build/fuzz
cc=${CLANG:-clang}
targets="fuzz_devices fuzz_env fuzz_cache"

[ -f "$build/config.h" ] || { echo "run.sh: $build is not configured (./build.sh)" >&2; exit 2; }
[ -f "$build/lib/kernels.c" ] || make -C "$build" lib/kernels.c >/dev/null
mkvar() { sed -n "s/^$1 = //p" "$build/Makefile"; }
cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
    -I$build -I$src/include -I$src/lib $(mkvar OPENCL_CFLAGS) $(mkvar CUDA_CFLAGS) -pthread"
libs="$(mkvar OPENCL_LIBS) -pthread $(mkvar DL_LIBS) -lm"

echo "==> building the fuzz targets with $cc in $out"
mkdir -p "$out/obj"
# libclfleet's sources (lib/mpi/ is libclfleet-mpi, built against MPI: not fuzzed here); the
# folder names the object, as files of different layers share names (core/ and exec/
# kernel.c, data/ and mpi/ array.c).
for f in "$src"/lib/*/*.c "$build/lib/kernels.c"; do
    case $f in "$src"/lib/mpi/*) continue ;; esac
    o=$out/obj/$(basename "$(dirname "$f")")-$(basename "$f" .c).o
    # shellcheck disable=SC2086
    $cc $cflags -fsanitize=fuzzer-no-link -c "$f" -o "$o"
done
rm -f "$out/libclfleet-fuzz.a"
ar rcs "$out/libclfleet-fuzz.a" "$out"/obj/*.o
for t in $targets; do
    # shellcheck disable=SC2086
    $cc $cflags -fsanitize=fuzzer "$src/tests/fuzz/$t.c" "$out/libclfleet-fuzz.a" $libs \
        -o "$out/$t"
done

status=0
for t in $targets; do
    echo "==> $t: $secs s on tests/fuzz/corpus/$t"
    mkdir -p "$out/corpus-$t"
    # The scratch corpus first: libFuzzer adds new inputs to the first directory.
    if ! "$out/$t" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/$t-" "$out/corpus-$t" "$src/tests/fuzz/corpus/$t" \
        >"$out/$t.log" 2>&1; then
        tail -n 40 "$out/$t.log"
        echo "FAIL: $t (the input is in $out/$t-*)"
        status=1
        continue
    fi
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' \
        "$out/$t.log" | sed "s/^/  /"
    tail -n 1 "$out/$t.log" | sed "s/^/  /"
done
exit $status

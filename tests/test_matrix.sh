#!/bin/sh
# The device-configuration matrix: tests/stress on every PoCL configuration people run,
# each in one context per platform and with one context per device. Every configuration
# runs every strategy's launch, a halo exchange through interop kernels and event wait
# lists, copies both ways, an all-reduce, a pipeline and a task queue, ROUNDS times,
# each compared with plain C; then three host threads mixing all of those (array steps and
# ping-pongs too) on the one fleet at once; then a two-device halo ping-pong of 200 steps
# (interop kernels and clf_copy_async() waiting for each other), PINGPONGS times. No retry:
# an abort, a hang (the stress watchdog) or a wrong result fails. Then a second process, with PoCL's own kernel cache off, must get
# every device's program from clfleet's binary cache (sub-devices included).
#
#   STRESS_ROUNDS=N   rounds per configuration (default 50)
#   STRESS_MIXED=N    then N random operations per configuration (default 0; CI sets it)
#   STRESS_THREADS=N  random operations per thread of the three-thread run (default 20)
#   STRESS_PINGPONGS=N  ping-pong runs per configuration (default 20)
set -u
b=${top_builddir:-.}
stress=$b/tests/stress
rounds=${STRESS_ROUNDS:-50}
cache=${TMPDIR:-/tmp}/clf-matrix-cache.$$
trap 'rm -rf "$cache" "$cache.list" "$cache.pocl"' EXIT
mixed=${STRESS_MIXED:-0}
threaded=${STRESS_THREADS:-20}
pingpongs=${STRESS_PINGPONGS:-20}
fail=0
# Name | POCL_DEVICES | POCL_MAX_PTHREAD_COUNT (or -) | selection
configs='basic-basic|basic basic|-|type=cpu
basic-basic-basic|basic basic basic|-|type=cpu
pthread-split-2|pthread|2|type=cpu;split=1
pthread-split-3|pthread|3|type=cpu;split=1
pthread-basic|pthread basic|-|type=cpu'
run() { # name, then the environment assignments and the arguments
    label=$1
    shift
    start=$(date +%s)
    out=$(env "$@" 2>&1)
    rc=$?
    printf '%s: %s (%ss)\n' "$label" "$(printf '%s\n' "$out" | tail -n 1)" \
        "$(($(date +%s) - start))"
    if [ $rc -ne 0 ]; then
        printf '%s\n' "$out"
        echo "FAIL: $label exited $rc"
        fail=1
    fi
}
IFS_SAVE=$IFS
printf '%s\n' "$configs" > "$cache.list"
while IFS='|' read -r name devs threads sel; do
    IFS=$IFS_SAVE
    set -- POCL_DEVICES="$devs"
    [ "$threads" = - ] || set -- "$@" POCL_MAX_PTHREAD_COUNT="$threads"
    for ctx in platform device; do
        rm -rf "$cache"
        run "$name/context=$ctx" "$@" CLFLEET_DEVICES="$sel;context=$ctx" \
            CLFLEET_CACHE_DIR="$cache" "$stress" --rounds "$rounds"
        # PoCL's kernel cache off, in a PoCL cache directory of its own: PoCL 3.1 unpacks a
        # program created from a binary into $POCL_CACHE_DIR under the binary's build hash even
        # then, and removes that directory when the program is released, under any other
        # process building the same program there ("Final linking of kernel ... failed").
        run "$name/context=$ctx/cached" "$@" CLFLEET_DEVICES="$sel;context=$ctx" \
            CLFLEET_CACHE_DIR="$cache" POCL_CACHE_DIR="$cache.pocl" POCL_KERNEL_CACHE=0 \
            "$stress" --rounds 1 --expect-cached
        [ "$mixed" -gt 0 ] &&
            run "$name/context=$ctx/mixed" "$@" CLFLEET_DEVICES="$sel;context=$ctx" \
                "$stress" --mixed --rounds "$mixed" --seed "$(date +%s)"
        # A deadlock shows as the watchdog's HANG (60 s without an operation finishing).
        run "$name/context=$ctx/threads" "$@" CLFLEET_DEVICES="$sel;context=$ctx" \
            "$stress" --mixed --threads 3 --rounds "$threaded" --seed "$(date +%s)" --timeout 60
        k=0
        while [ "$k" -lt "$pingpongs" ]; do
            k=$((k + 1))
            out=$(env "$@" CLFLEET_DEVICES="$sel;context=$ctx" "$stress" --pingpong 200 \
                --timeout 60 2>&1) || {
                printf '%s\n' "$out"
                echo "FAIL: $name/context=$ctx/ping-pong run $k"
                fail=1
                break
            }
        done
        echo "$name/context=$ctx/ping-pong: $k of $pingpongs runs of 200 steps"
    done
done < "$cache.list"
exit $fail

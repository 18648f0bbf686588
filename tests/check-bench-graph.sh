#!/bin/sh
# clfleet-bench graph (--quick: 63 nodes of 32 x 32 tiles, one repetition) runs every form
# that is built and checks each run's result against a plain C product itself (a wrong
# result exits 1); here its JSON is checked for every form's figure, or the reason it has
# none (StarPU not built, or simulated devices), on the real devices and under
# CLFLEET_SIMULATE; nothing here judges a time. Also --help, --version and bad usage.
set -u
b=${top_builddir:-.}
bench=$b/tools/clfleet-bench
lint=$b/tests/jsonlint
tmp=${TMPDIR:-/tmp}/clf-bench-graph.$$
trap 'rm -f "$tmp".*' EXIT
required() { [ "${CLFLEET_REQUIRE_DEVICES:-0}" != 0 ]; }

$bench graph --help > "$tmp.help" && grep -q '^usage: clfleet-bench graph' "$tmp.help" ||
    { echo "FAIL: graph --help"; cat "$tmp.help"; exit 1; }
[ "$($bench graph --version)" = "$($bench --version)" ] || { echo "FAIL: graph --version"; exit 1; }
for bad in "--tile 0" "--tiles 17" "--tiles x" "--warmup -1" "--bogus" "--plot x.svg"; do
    $bench graph $bad > /dev/null 2> "$tmp.err"
    rc=$?
    [ $rc -eq 2 ] && [ -s "$tmp.err" ] ||
        { echo "FAIL: 'graph $bad' exited with $rc (want 2, with a message)"; exit 1; }
done

# One run: its JSON, valid, with the graph's and the hand-placed forms' makespans and the
# StarPU form's, or its note. $1: what it is; the rest: extra options.
run() {
    what=$1
    shift
    $bench graph --quick --json "$@" > "$tmp.json" 2> "$tmp.err"
    rc=$?
    if [ $rc -eq 77 ]; then
        cat "$tmp.err"
        if required; then echo "FAIL: graph ($what): no devices"; exit 99; fi
        echo "SKIP: graph: no device"; exit 77
    fi
    [ $rc -eq 0 ] || { cat "$tmp.err"; echo "FAIL: graph ($what) exited with $rc"; exit 1; }
    $lint < "$tmp.json" || { echo "FAIL: graph ($what): invalid JSON"; cat "$tmp.json"; exit 1; }
    grep -q '"nodes": 63,' "$tmp.json" ||
        { echo "FAIL: graph ($what): want 63 nodes"; cat "$tmp.json"; exit 1; }
    for form in graph hand_placed; do
        grep -q "\"form\": \"$form\", \"makespan_s\": [0-9]" "$tmp.json" ||
            { echo "FAIL: graph ($what): no $form makespan"; cat "$tmp.json"; exit 1; }
    done
    grep -q '"baseline": true' "$tmp.json" && grep -q '"ideal_s": [0-9]' "$tmp.json" ||
        { echo "FAIL: graph ($what): no base or ideal"; cat "$tmp.json"; exit 1; }
}

run "real devices"
# StarPU runs whenever it was built and the fleet is of whole devices (the test's PoCL
# devices are); otherwise it says why not.
if grep -q '"starpu_built": true' "$tmp.json"; then
    grep -q '"form": "starpu_dmda", "makespan_s": [0-9]' "$tmp.json" ||
        { echo "FAIL: graph: StarPU built but no dmda makespan"; cat "$tmp.json"; exit 1; }
else
    grep -q '"form": "starpu_dmda", "makespan_s": null, "note": "not built' "$tmp.json" ||
        { echo "FAIL: graph: StarPU not built, and no note"; cat "$tmp.json"; exit 1; }
fi

# A simulated 2:1 pair (device 1 at half speed): every device timed alone (a kind each), no
# StarPU (it would not see the simulation).
run "simulated" --simulate 'device=1,compute=0.5'
[ "$(grep -c '"baseline": ' "$tmp.json")" -ge 2 ] &&
    grep -q '"form": "starpu_dmda", "makespan_s": null, "note": "not ' "$tmp.json" &&
    grep -q '"simulate": "device=1,compute=0.5"' "$tmp.json" ||
    { echo "FAIL: graph (simulated): want each device alone and no StarPU"; cat "$tmp.json"; exit 1; }
echo "PASS: graph"

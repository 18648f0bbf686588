#!/bin/sh
# clfleet-bench balance and scale run (--quick) on PoCL sub-devices and write valid JSON
# with every strategy; the table form and bad usage work too; so do p2p, allreduce,
# pipeline, gemm, overhead and stencil.
set -u
b=${top_builddir:-.}
bench=$b/tools/clfleet-bench
lint=$b/tests/jsonlint
tmp=${TMPDIR:-/tmp}/clf-bench.$$
trap 'rm -f "$tmp".*' EXIT
required() { [ "${CLFLEET_REQUIRE_DEVICES:-0}" != 0 ]; }

for cmd in balance scale; do
    $bench $cmd --quick --json > "$tmp.$cmd" 2> "$tmp.err"
    rc=$?
    if [ $rc -eq 77 ]; then
        cat "$tmp.err"
        if required; then echo "FAIL: $cmd: no devices"; exit 99; fi
        echo "SKIP: $cmd: no PoCL device to split into sub-devices"; exit 77
    fi
    [ $rc -eq 0 ] || { cat "$tmp.err"; echo "FAIL: $cmd exited with $rc"; exit 1; }
    $lint < "$tmp.$cmd" || { echo "FAIL: $cmd: invalid JSON"; cat "$tmp.$cmd"; exit 1; }
done

# balance: two configurations, each with two workloads of five strategies, and a chunk cost.
n=$(grep -c '"strategy": "' "$tmp.balance")
nc=$(grep -c '"per_chunk_overhead_us": [0-9.e+-]' "$tmp.balance")
for s in static dynamic guided memory-aware auto; do
    grep -q "\"strategy\": \"$s\"" "$tmp.balance" || { echo "FAIL: balance: no $s"; exit 1; }
done
if grep -q '"error"' "$tmp.balance" || [ "$n" -ne 20 ] || [ "$nc" -ne 2 ]; then
    echo "FAIL: balance: $n strategy rows (want 20), $nc chunk costs (want 2)"
    cat "$tmp.balance"
    exit 1
fi
grep -q '"speedup": [0-9]' "$tmp.balance" && grep -q '"overhead_ratio": [0-9]' "$tmp.balance" ||
    { echo "FAIL: balance: speedup or overhead missing"; cat "$tmp.balance"; exit 1; }
# scale: runs on 1 device and more.
grep -q '"devices": 1,' "$tmp.scale" && grep -q '"parallel_efficiency": ' "$tmp.scale" ||
    { echo "FAIL: scale: no runs"; cat "$tmp.scale"; exit 1; }

# The metrics: an on/off ratio and the fleet's counters for each configuration.
nm=$(grep -c '"metrics_on_off_ratio": [0-9]' "$tmp.balance")
nk=$(grep -c '"metrics": {' "$tmp.balance")
[ "$nm" -eq 2 ] && [ "$nk" -eq 2 ] ||
    { echo "FAIL: balance: $nm metrics ratios, $nk metrics objects (want 2 each)"; exit 1; }

# --trace: one valid timeline per configuration, with kernel events on both devices.
$bench balance --quick --json --trace "$tmp.trace.json" > /dev/null 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: balance --trace"; exit 1; }
for c in homogeneous heterogeneous; do
    t=$tmp.trace-$c-0.json
    [ -s "$t" ] || { cat "$tmp.err"; echo "FAIL: --trace wrote no $t"; exit 1; }
    $lint < "$t" || { echo "FAIL: $t: invalid JSON"; exit 1; }
    grep -q '"name": *"mandelbrot' "$t" || { echo "FAIL: $t: no mandelbrot kernel"; exit 1; }
done
grep -q 'timelines written to' "$tmp.err" || { echo "FAIL: --trace: not told where"; exit 1; }

# The table names every strategy, with the spread of the wall times; --opt=value works, and
# the developer targets show only with --verbose.
$bench balance --quick --config=homogeneous --size=128 > "$tmp.txt" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: table"; exit 1; }
grep -q 'per-chunk overhead' "$tmp.txt" && grep -q '^metrics on/off: [0-9]' "$tmp.txt" &&
    grep -q '^clfleet metrics: ' "$tmp.txt" &&
    [ "$(grep -c '^  memory-aware ' "$tmp.txt")" -eq 2 ] &&
    grep -q 'wall s \[min..max\]' "$tmp.txt" && ! grep -q '^targets:' "$tmp.txt" ||
    { echo "FAIL: table"; cat "$tmp.txt"; exit 1; }
$bench scale --quick --verbose --reps=1 > /dev/null 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: scale --verbose --reps=1"; exit 1; }

# The conventional options: --help and --version everywhere (exit 0, on stdout); a bad
# command line exits 2 with a message; sizes take K, M and G.
for cmd in "" balance scale p2p allreduce pipeline gemm overhead stencil; do
    $bench $cmd --help > "$tmp.help" 2> "$tmp.err" &&
        grep -q '^usage: clfleet-bench' "$tmp.help" ||
        { echo "FAIL: '$cmd --help'"; cat "$tmp.help" "$tmp.err"; exit 1; }
    [ "$($bench $cmd --version)" = "$($bench --version)" ] &&
        $bench $cmd --version | grep -q '^clfleet-bench [0-9]' ||
        { echo "FAIL: '$cmd --version'"; exit 1; }
done
for bad in "" "nonsense" "--bogus" "balance --size 3" "balance --reps x" "balance --reps=0" \
    "balance --config nowhere" "balance --trace" "balance --trace=" "balance extra" \
    "scale --config homogeneous" "p2p --bogus" "p2p --max-size=1x" "p2p --max-size 2K" \
    "allreduce --chunk" "pipeline --costs 1,2" "pipeline --items=100" "gemm --size -1" \
    "gemm --json=yes" "overhead --items 0" "overhead --bogus" "stencil --size 0" \
    "stencil --steps x"; do
    $bench $bad > /dev/null 2> "$tmp.err"
    rc=$?
    [ $rc -eq 2 ] || { echo "FAIL: '$bad' exited with $rc, not 2"; cat "$tmp.err"; exit 1; }
    [ -s "$tmp.err" ] || { echo "FAIL: '$bad' without a message"; exit 1; }
done

# gemm: one device and five strategies on the fleet, a checked result (skipped without clBLAST).
gemm=skipped
$bench gemm --quick --json > "$tmp.gemm" 2> "$tmp.err"
rc=$?
if [ $rc -eq 77 ] && grep -q 'without clBLAST' "$tmp.err"; then
    gemm="skipped (no clBLAST)"
elif [ $rc -eq 77 ] && ! required; then
    gemm="skipped (no devices)"
else
    [ $rc -eq 0 ] || { cat "$tmp.err"; echo "FAIL: gemm exited with $rc"; exit 1; }
    $lint < "$tmp.gemm" || { echo "FAIL: gemm: invalid JSON"; cat "$tmp.gemm"; exit 1; }
    [ "$(grep -c '"median_gflops": [0-9]' "$tmp.gemm")" -eq 6 ] &&
        grep -q '"max_relative_error": [0-9]' "$tmp.gemm" ||
        { echo "FAIL: gemm: want 6 runs and an error figure"; cat "$tmp.gemm"; exit 1; }
    gemm="6 runs"
fi
# p2p, allreduce and pipeline: valid JSON and the figures there (each bench checks its
# results and exits 1 on a wrong one).
for cmd in p2p "allreduce --max-size=256K" "pipeline --items 64K"; do
    set -- $cmd
    cmd=$1
    $bench "$@" --quick --json > "$tmp.$cmd" 2> "$tmp.err"
    rc=$?
    [ $rc -eq 0 ] || { cat "$tmp.err"; echo "FAIL: $cmd exited with $rc"; exit 1; }
    $lint < "$tmp.$cmd" || { echo "FAIL: $cmd: invalid JSON"; cat "$tmp.$cmd"; exit 1; }
done
np=$(grep -c '"chosen_vs_naive": [0-9]' "$tmp.p2p")
na=$(grep -c '"busbw_gbps": [0-9]' "$tmp.allreduce")
[ "$np" -ge 3 ] && [ "$na" -ge 4 ] &&
    grep -q '"ratio_to_ideal": [0-9]' "$tmp.pipeline" &&
    grep -q '"host_bound": [0-9]' "$tmp.pipeline" ||
    { echo "FAIL: p2p ($np ratios), allreduce ($na bus bandwidths) or pipeline figures missing"
      cat "$tmp.p2p" "$tmp.allreduce" "$tmp.pipeline"; exit 1; }

# overhead: every variant of both kernels, with a ratio to raw (the bench checks its result).
$bench overhead --quick --json > "$tmp.overhead" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: overhead"; exit 1; }
$lint < "$tmp.overhead" || { echo "FAIL: overhead: invalid JSON"; cat "$tmp.overhead"; exit 1; }
[ "$(grep -c '"ratio_to_raw": [0-9]' "$tmp.overhead")" -eq 10 ] ||
    { echo "FAIL: overhead: want 10 ratios"; cat "$tmp.overhead"; exit 1; }

# stencil: the four forms, each with its bytes (the bench checks the results bit for bit).
$bench stencil --quick --json > "$tmp.stencil" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: stencil"; exit 1; }
$lint < "$tmp.stencil" || { echo "FAIL: stencil: invalid JSON"; cat "$tmp.stencil"; exit 1; }
[ "$(grep -c '"device_to_device_bytes": [0-9]' "$tmp.stencil")" -eq 4 ] &&
    grep -q '"resident_over_interior": [0-9]' "$tmp.stencil" ||
    { echo "FAIL: stencil: want 4 forms and a ratio"; cat "$tmp.stencil"; exit 1; }

echo "PASS: balance ($n strategy rows), scale, p2p, allreduce and pipeline, JSON valid; gemm: $gemm"

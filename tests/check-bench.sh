#!/bin/sh
# clfleet-bench balance and scale run (--quick) on PoCL sub-devices and write valid JSON
# with every strategy; the table form and bad usage work too; so do p2p, allreduce,
# pipeline, gemm, overhead and stencil, each comparing with the fastest device alone (by
# measurement, named in the JSON), also on a fleet of one device; balance --simulate runs
# its one simulated configuration with the heterogeneous table, balance --devices its one
# "selected" configuration on exactly the selected devices (two, then one). allreduce follows
# nccl-tests' conventions, and --plot writes a well-formed SVG with the expected series and points.
set -u
b=${top_builddir:-.}
bench=$b/tools/clfleet-bench
lint=$b/tests/jsonlint
tmp=${TMPDIR:-/tmp}/clf-bench.$$
trap 'rm -f "$tmp".*' EXIT
required() { [ "${CLFLEET_REQUIRE_DEVICES:-0}" != 0 ]; }

# An SVG of --plot: FILE, what made it, and the number of line series, of points and of bars
# it must hold ('' to leave one unchecked). Well-formed as far as grep can tell (xmllint too
# when installed): one <svg> element, balanced groups, coordinates with decimal points. Its
# variables start with s_: a shell function shares the script's.
svg_ok() {
    s_f=$1 s_what=$2
    [ -s "$s_f" ] || { echo "FAIL: $s_what: no plot $s_f"; exit 1; }
    [ "$(head -c 5 "$s_f")" = "<svg " ] && [ "$(tail -n 1 "$s_f")" = "</svg>" ] &&
        [ "$(grep -c '<svg ' "$s_f")" -eq 1 ] &&
        [ "$(grep -o '<g[ >]' "$s_f" | wc -l)" -eq "$(grep -o '</g>' "$s_f" | wc -l)" ] &&
        ! grep -Eq ' (x|y|x1|y1|cx|cy|width|height)="[^"]*,' "$s_f" ||
        { echo "FAIL: $s_what: $s_f is not a well-formed SVG"; head -c 600 "$s_f"; exit 1; }
    if command -v xmllint > /dev/null 2>&1; then
        xmllint --noout "$s_f" || { echo "FAIL: $s_what: xmllint rejects $s_f"; exit 1; }
    fi
    for s_want in "series:${3:-}:<g class=\"series\">" "points:${4:-}:<circle class=\"point\"" \
        "bars:${5:-}:<rect class=\"bar\""; do
        s_name=${s_want%%:*} s_rest=${s_want#*:}
        s_n=${s_rest%%:*} s_pat=${s_rest#*:}
        [ -z "$s_n" ] && continue
        s_got=$(grep -o "$s_pat" "$s_f" | wc -l)
        [ "$s_got" -eq "$s_n" ] ||
            { echo "FAIL: $s_what: $s_got $s_name in $s_f, want $s_n"; exit 1; }
    done
}

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
# Every workload says whether its figures can show balancing: a note, or null.
[ "$(grep -Ec '"note": ("|null)' "$tmp.balance")" -eq 4 ] ||
    { echo "FAIL: balance: want a note (or null) per workload"; cat "$tmp.balance"; exit 1; }
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
# the developer targets show only with --verbose. A 16x16 image is far too small to show
# balancing, and the table says so; --plot draws the shares (2 workloads x 5 strategies x 2
# devices) and the timeline of one launch (the launch, then one bar per chunk).
$bench balance --quick --config=homogeneous --size=16 --plot "$tmp.bal.svg" > "$tmp.txt" \
    2> "$tmp.err" || { cat "$tmp.err"; echo "FAIL: table"; exit 1; }
grep -q '^  note: too small to show balancing: one device takes ' "$tmp.txt" ||
    { echo "FAIL: balance: no note that the problem is too small"; cat "$tmp.txt"; exit 1; }
chunks=$(sed -n 's/.*timeline of one dynamic mandelbrot launch: \([0-9]*\) chunks.*/\1/p' \
    "$tmp.bal-homogeneous.svg")
# At least one chunk: once the cost model knows both devices, a launch this small may run
# as one chunk (no chunk shorter than ten times its fixed cost), and the plot shows that.
[ -n "$chunks" ] && [ "$chunks" -ge 1 ] ||
    { echo "FAIL: balance --plot: no timeline of chunks"; cat "$tmp.err"; exit 1; }
svg_ok "$tmp.bal-homogeneous.svg" "balance --plot" 0 0 $((20 + 1 + chunks))
grep -q 'plot written to .*bal-homogeneous.svg' "$tmp.err" ||
    { echo "FAIL: balance --plot: not told where"; cat "$tmp.err"; exit 1; }
grep -q 'per-chunk overhead' "$tmp.txt" && grep -q '^metrics on/off: [0-9]' "$tmp.txt" &&
    grep -q '^clfleet metrics: ' "$tmp.txt" &&
    [ "$(grep -c '^  memory-aware ' "$tmp.txt")" -eq 2 ] &&
    grep -q 'wall s \[min..max\]' "$tmp.txt" && ! grep -q '^targets:' "$tmp.txt" ||
    { echo "FAIL: table"; cat "$tmp.txt"; exit 1; }
# scale's table: a row per device count and strategy (5) for each of the 2 workloads; its
# plot a line per strategy and the ideal, a point per device count, for each workload.
$bench scale --quick --verbose --reps=1 --plot "$tmp.scale.svg" > "$tmp.txt" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: scale --verbose --reps=1"; exit 1; }
rows=$(grep -Ec '^  [0-9]+ +(static|dynamic|guided|memory-aware|auto) ' "$tmp.txt")
[ "$rows" -ge 10 ] && [ $((rows % 10)) -eq 0 ] ||
    { echo "FAIL: scale: $rows table rows"; cat "$tmp.txt"; exit 1; }
svg_ok "$tmp.scale.svg" "scale --plot" 12 $((rows / 5 * 6)) 0

# allreduce in nccl-tests' conventions: -b/-e/-f sizes, -w/-n, -d/-o, columns with units,
# #wrong, out-of-place n/a, the algorithm chosen and the forced ones' medians, and the footer; a row per size and device count, and with --plot a
# line per method and device count in each of 2 panels, a point per size.
$bench allreduce -b 4K -e 16K -f 4 -w 0 -n 1 -d int32 -o max --plot "$tmp.ar.svg" \
    > "$tmp.txt" 2> "$tmp.err" || { cat "$tmp.err"; echo "FAIL: allreduce int32 max"; exit 1; }
rows=$(grep -Ec '^ +[0-9]+ +[0-9]+ +int32 +max +-1 +n/a ' "$tmp.txt")
ndevs=$(grep -c '^# [0-9] devices$' "$tmp.txt")
grep -q '^# *size *count *type *redop *root *time *algbw *busbw *#wrong ' "$tmp.txt" &&
    grep -q '^# *(B) *(elements) .*(us) *(GB/s) *(GB/s)' "$tmp.txt" &&
    grep -q '^# Out of bounds values : 0 OK$' "$tmp.txt" &&
    grep -q '^# Avg bus bandwidth    : [0-9.]* GB/s' "$tmp.txt" &&
    [ "$ndevs" -ge 1 ] && [ "$rows" -eq $((2 * ndevs)) ] &&
    grep -q '^# .* alg *chosen *ring *host$' "$tmp.txt" &&
    [ "$(grep -Ec ' (ring|host) +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$tmp.txt")" -eq "$rows" ] ||
    { echo "FAIL: allreduce: not in nccl-tests' form ($rows rows, $ndevs device counts)"
      cat "$tmp.txt"; exit 1; }
svg_ok "$tmp.ar.svg" "allreduce --plot" $((4 * ndevs)) $((4 * rows)) 0
$bench allreduce --quick --json -e 4K -g 2 --type uint32 --op prod > "$tmp.ar.json" \
    2> "$tmp.err" || { cat "$tmp.err"; echo "FAIL: allreduce uint32 prod"; exit 1; }
$lint < "$tmp.ar.json" && grep -q '"type": "uint32"' "$tmp.ar.json" &&
    grep -q '"op": "prod"' "$tmp.ar.json" && grep -q '"out_of_bounds": 0' "$tmp.ar.json" &&
    [ "$(grep -c '"devices": 2, "bytes": 4096' "$tmp.ar.json")" -eq 1 ] &&
    grep -q '"wrong": 0' "$tmp.ar.json" && grep -Eq '"algorithm": "(ring|host)"' "$tmp.ar.json" &&
    grep -q '"forced_wrong": 0' "$tmp.ar.json" ||
    { echo "FAIL: allreduce --json uint32 prod"; cat "$tmp.ar.json"; exit 1; }

# p2p: a panel per ordered pair with the 4 methods and memcpy, a point per size.
$bench p2p --quick --max-size 4K --reps 1 --plot "$tmp.p2p.svg" > "$tmp.txt" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: p2p --plot"; exit 1; }
rows=$(grep -c '^[0-9]*->[0-9]* ' "$tmp.txt")
grep -q '^ *(GB/s) *(us) *(GB/s)' "$tmp.txt" && [ "$rows" -ge 2 ] ||
    { echo "FAIL: p2p table"; cat "$tmp.txt"; exit 1; }
svg_ok "$tmp.p2p.svg" "p2p --plot" $((5 * rows)) $((5 * rows)) 0

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
    "stencil --steps x" "allreduce -d half" "allreduce --op avg" "allreduce -b 1M -e 4K" \
    "allreduce -f 1" "allreduce -n 0" "allreduce -g 4" "allreduce -w x" "allreduce --plot" \
    "allreduce --plot=" "overhead --plot x.svg" "stencil --plot x.svg" "balance --simulate=" \
    "gemm --simulate" "balance --config simulated --simulate"; do
    $bench $bad > /dev/null 2> "$tmp.err"
    rc=$?
    [ $rc -eq 2 ] || { echo "FAIL: '$bad' exited with $rc, not 2"; cat "$tmp.err"; exit 1; }
    [ -s "$tmp.err" ] || { echo "FAIL: '$bad' without a message"; exit 1; }
    # One line that says what was wrong, then where to look.
    [ "$(wc -l < "$tmp.err")" -eq 2 ] && grep -q "^Try 'clfleet-bench .*--help'\.$" "$tmp.err" ||
        { echo "FAIL: '$bad': want one line and 'Try --help'"; cat "$tmp.err"; exit 1; }
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
    # Each kind of device alone (one of them the baseline), then the five strategies.
    alone=$(grep -c '"devices": 1, "strategy": "static", "ran_as": "[a-z-]*", "device": ' \
        "$tmp.gemm")
    [ "$alone" -ge 1 ] && [ "$(grep -c '"median_gflops": [0-9]' "$tmp.gemm")" -eq $((alone + 5)) ] &&
        [ "$(grep -c '"baseline": true' "$tmp.gemm")" -eq 1 ] &&
        grep -q '"baseline_device": [0-9]*, "baseline_device_name": "' "$tmp.gemm" &&
        grep -q '"max_relative_error": [0-9]' "$tmp.gemm" ||
        { echo "FAIL: gemm: want $alone device(s) alone, one baseline, 5 strategies and an" \
            "error figure"; cat "$tmp.gemm"; exit 1; }
    gemm="$((alone + 5)) runs"
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
[ "$(grep -c '"ratio_to_raw": [0-9]' "$tmp.overhead")" -eq 10 ] &&
    grep -q '"baseline_device": [0-9]*, "baseline_device_name": "' "$tmp.overhead" ||
    { echo "FAIL: overhead: want 10 ratios and the baseline device"; cat "$tmp.overhead"; exit 1; }

# A first compile says so on stderr (a cold binary cache: the tool would otherwise sit silent
# for seconds); a warm one says nothing; other info messages stay quiet.
mkdir -p "$tmp.cache"
trap 'rm -rf "$tmp".*' EXIT
for run in cold warm; do
    CLFLEET_CACHE_DIR=$tmp.cache CLFLEET_LOG= $bench overhead --quick --reps 1 > /dev/null \
        2> "$tmp.err" || { cat "$tmp.err"; echo "FAIL: overhead ($run cache)"; exit 1; }
    notes=$(grep -c 'compiling program .* can take seconds' "$tmp.err")
    if [ $run = cold ] && [ "$notes" -lt 1 ]; then
        cat "$tmp.err"; echo "FAIL: a first compile printed no note"; exit 1
    fi
    if [ $run = warm ] && [ "$notes" -ne 0 ]; then
        cat "$tmp.err"; echo "FAIL: a cached program printed a compile note"; exit 1
    fi
    grep -v 'can take seconds' "$tmp.err" | grep -q '^clfleet: ' &&
        { cat "$tmp.err"; echo "FAIL: info messages other than the notes on stderr"; exit 1; }
done

# stencil: the four forms, each with its bytes (the bench checks the results bit for bit).
$bench stencil --quick --json > "$tmp.stencil" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: stencil"; exit 1; }
$lint < "$tmp.stencil" || { echo "FAIL: stencil: invalid JSON"; cat "$tmp.stencil"; exit 1; }
[ "$(grep -c '"device_to_device_bytes": [0-9]' "$tmp.stencil")" -eq 4 ] &&
    grep -q '"resident_over_interior": [0-9]' "$tmp.stencil" &&
    grep -q '"form": "device_alone", "device": [0-9]' "$tmp.stencil" &&
    [ "$(grep -c '"baseline": true' "$tmp.stencil")" -eq 1 ] ||
    { echo "FAIL: stencil: want 4 forms, a ratio and the devices alone"; cat "$tmp.stencil"
      exit 1; }

# A fleet of one device (PoCL's basic device has one compute unit: nothing to split): the
# benches that used to need two run on it, their baseline that device.
if POCL_DEVICES=basic $bench stencil --quick --json --devices 'type=cpu;platform=portable' \
    > "$tmp.one" 2> "$tmp.err"; then
    $lint < "$tmp.one" && grep -q '"devices": 1,' "$tmp.one" &&
        grep -q '"baseline_device": 0,' "$tmp.one" ||
        { echo "FAIL: stencil on one device"; cat "$tmp.one"; exit 1; }
    POCL_DEVICES=basic $bench overhead --quick --json --devices 'type=cpu;platform=portable' \
        > "$tmp.one" 2> "$tmp.err" && $lint < "$tmp.one" &&
        grep -q '"devices": \[0\], "baseline_device": 0,' "$tmp.one" ||
        { cat "$tmp.err"; echo "FAIL: overhead on one device"; cat "$tmp.one"; exit 1; }
    one="one-device fleet ran"
else
    grep -q 'needs 1 devices\|NO_DEVICE\|NO_PLATFORM' "$tmp.err" ||
        { cat "$tmp.err"; echo "FAIL: stencil on one device"; exit 1; }
    one="one-device fleet skipped (no PoCL basic device)"
fi

# --simulate: the variable reaches the fleets (the library may or may not honour it yet), and
# balance runs the one simulated configuration, with each strategy against the fastest alone.
$bench balance --quick --json --simulate 'device=1,compute=0.5' > "$tmp.sim" 2> "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: balance --simulate"; exit 1; }
$lint < "$tmp.sim" && grep -q '"name": "simulated"' "$tmp.sim" &&
    [ "$(grep -c '"vs_fastest_alone": [0-9]' "$tmp.sim")" -eq 15 ] &&
    [ "$(grep -c '"simulate": "device=1,compute=0.5"' "$tmp.sim")" -eq 2 ] &&
    ! grep -q '"name": "homogeneous"' "$tmp.sim" ||
    { echo "FAIL: balance --simulate: want the simulated configuration alone, 15 rows (3 kernels)"
      cat "$tmp.sim"; exit 1; }
$bench balance --quick --config simulated --simulate 'device=1,compute=0.5' --size 16 \
    > "$tmp.txt" 2> "$tmp.err" && grep -q '^  heterogeneous (simulated, ' "$tmp.txt" &&
    [ "$(grep -Ec '^    (static|dynamic|guided|memory-aware|auto) +[0-9.]+ +[0-9.]+ ' \
        "$tmp.txt")" -eq 15 ] ||
    { cat "$tmp.err"; echo "FAIL: balance --simulate: no heterogeneous table"; cat "$tmp.txt"
      exit 1; }

# balance --devices: one configuration, "selected", on exactly the selected devices (two PoCL
# devices, nothing split): each device alone, then every kernel x strategy against the
# fastest alone and raw OpenCL, per-device shares and chunks. Shapes only, no timing judged.
sel='type=cpu;platform=portable'
if POCL_DEVICES='pthread basic' $bench balance --quick --json --size 16 --devices "$sel" \
    > "$tmp.sel" 2> "$tmp.err"; then
    num='[0-9.e+-]*'
    $lint < "$tmp.sel" && [ "$(grep -c '{"name": "' "$tmp.sel")" -eq 1 ] &&
        grep -q '"name": "selected"' "$tmp.sel" &&
        grep -q '"devices": \[{"index": 0, [^]]*}, {"index": 1, [^]]*}\]' "$tmp.sel" &&
        [ "$(grep -c "\"single_device_s\": \[$num, $num\]" "$tmp.sel")" -eq 3 ] &&
        [ "$(grep -c '"vs_fastest_alone": [0-9]' "$tmp.sel")" -eq 15 ] &&
        [ "$(grep -c '"vs_raw_opencl": [0-9]' "$tmp.sel")" -eq 15 ] &&
        [ "$(grep -c "\"share\": \[$num, $num\]" "$tmp.sel")" -eq 15 ] &&
        [ "$(grep -c '"chunks": \[[0-9]*, [0-9]*\]' "$tmp.sel")" -eq 15 ] ||
        { cat "$tmp.err"; echo "FAIL: balance --devices: want the selected configuration" \
              "alone, 2 devices, 3 kernels x 5 strategies"; cat "$tmp.sel"; exit 1; }
    POCL_DEVICES='pthread basic' $bench balance --quick --size 16 --devices "$sel" \
        > "$tmp.txt" 2> "$tmp.err" &&
        [ "$(grep -c '^  selected devices (2):' "$tmp.txt")" -eq 3 ] &&
        [ "$(grep -Ec '^    (static|dynamic|guided|memory-aware|auto) +[0-9.]+ +[0-9.]+ +[0-9.]+ ' \
            "$tmp.txt")" -eq 15 ] ||
        { cat "$tmp.err"; echo "FAIL: balance --devices: no selected-devices table"
          cat "$tmp.txt"; exit 1; }
    # One device: the table against raw OpenCL on it (the one-device overhead).
    POCL_DEVICES=basic $bench balance --quick --json --size 16 --devices "$sel" \
        > "$tmp.sel" 2> "$tmp.err" && $lint < "$tmp.sel" &&
        [ "$(grep -c "\"share\": \[$num\]" "$tmp.sel")" -eq 15 ] &&
        [ "$(grep -c '"vs_raw_opencl": [0-9]' "$tmp.sel")" -eq 15 ] ||
        { cat "$tmp.err"; echo "FAIL: balance --devices on one device"; cat "$tmp.sel"; exit 1; }
    selected="balance --devices ran"
else
    grep -q 'selects no device\|NO_DEVICE\|NO_PLATFORM' "$tmp.err" ||
        { cat "$tmp.err"; echo "FAIL: balance --devices"; exit 1; }
    selected="balance --devices skipped (no PoCL pthread and basic devices)"
fi
$bench balance --quick --config selected > /dev/null 2> "$tmp.err" &&
    { echo "FAIL: balance --config selected without --devices succeeded"; exit 1; }
grep -q 'needs --devices' "$tmp.err" ||
    { cat "$tmp.err"; echo "FAIL: balance --config selected: no message"; exit 1; }

echo "PASS: balance ($n strategy rows), scale, p2p, allreduce and pipeline, JSON valid," \
    "plots well-formed; gemm: $gemm; $one; --simulate; $selected"

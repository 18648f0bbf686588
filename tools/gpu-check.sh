#!/bin/sh
# tools/gpu-check.sh: the device suites and the benchmarks on whatever GPU this machine has,
# beside the CPU, in one Markdown report (issue 27).
#
# Usage: tools/gpu-check.sh [--quick] [--build DIR] [--out FILE.md] [--budget SECONDS]
#   --build DIR     a configured and built clfleet build tree (default: the current
#                   directory when it holds tools/clfleet-bench, else ./_build, else ./_b)
#   --out FILE.md   the report (default: gpu-check.md in the current directory)
#   --budget S      stop starting new steps after S seconds (default 420: the whole run stays
#                   under 8 minutes; the suites get the first half, the balance bench (when
#                   there is a CPU) the last fifth, every step also has a time limit of its
#                   own)
#   --quick         the benchmarks' --quick sizes and two suites: a smoke test of the script
#                   (a couple of minutes on a CPU)
#
# What it does: clfleet-info (every device, then the learned speeds, --perf); the device
# suites test_collective, test_array, test_launch and test_gemm (a subset under --quick) with
# CLFLEET_TEST_DEVICES pointing at the GPU and the CPU (tests/common.h); then balance,
# overhead, gemm, stencil, allreduce and p2p on the GPU alone, the CPU alone and the GPU +
# the CPU, each with --json beside its table, and a summary per strategy of GPU + CPU against
# the GPU alone (the fastest device alone, measured in the same run). balance runs on the
# GPU + the CPU as selected (`balance --devices 'type=gpu,cpu' --quick`: every kernel and
# strategy against the fastest device alone and raw OpenCL, each device alone measured in
# the same run), then on CPU sub-devices (its split configurations, CLFLEET_DEVICES=type=cpu)
# and with --simulate, a pair made unequal by CLFLEET_SIMULATE (a library without it ignores
# it).
# Without a GPU it says so and reports the CPU-only fleet.
#
# What must be present on the machine (it may be a bare one given a copy of the build tree):
#   - the build tree, built (make; the test programs: make check TESTS= builds them all),
#     with the source tree beside it (the kernels in cl/, found through CLFLEET_KERNEL_DIR);
#     the programs are run from their .libs/ directories with LD_LIBRARY_PATH, so the tree
#     may have moved;
#   - the OpenCL ICD loader (libOpenCL.so.1) and the GPU's OpenCL driver registered in
#     /etc/OpenCL/vendors (NVIDIA: nvidia.icd and libnvidia-opencl; AMD: ROCm's amdocl64;
#     Intel: intel-opencl-icd);
#   - for the CPU side, PoCL (libpocl and its .icd; without it the report has the GPU alone);
#   - the shared libraries the build linked: libcheck (the suites), libclblast (gemm; without
#     it gemm reports skipped), MPI's when configured --with-mpi (only the mpi tests need it);
#     the script lists what ldd cannot find;
#   - a POSIX shell, timeout(1) and sed; python3 for the summary tables (without it the
#     report holds the benchmarks' own tables only).
set -u
quick=
build=
out=gpu-check.md
budget=420
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1; shift ;;
    --build) build=$2; shift 2 ;;
    --build=*) build=${1#*=}; shift ;;
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --budget) budget=$2; shift 2 ;;
    --budget=*) budget=${1#*=}; shift ;;
    -h|--help) sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
case $budget in '' | *[!0-9]*) echo "gpu-check.sh: --budget wants seconds" >&2; exit 2 ;; esac
if [ -z "$build" ]; then
    for d in . _build _b; do
        [ -e "$d/tools/clfleet-bench" ] && { build=$d; break; }
    done
fi
[ -n "$build" ] && [ -e "$build/tools/clfleet-bench" ] ||
    { echo "gpu-check.sh: no built tree (tools/clfleet-bench); pass --build DIR" >&2; exit 1; }
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# The programs without their libtool wrappers (which name the build tree's old path).
LD_LIBRARY_PATH=$build/lib/.libs:$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
[ -d "$src/cl" ] && { CLFLEET_KERNEL_DIR=$src/cl; export CLFLEET_KERNEL_DIR; }
# Learned speeds and program binaries in a cache of this run's own, so that it starts from
# the same state everywhere and leaves the user's alone.
CLFLEET_CACHE_DIR=$work/cache
export CLFLEET_CACHE_DIR
unset CLFLEET_DEVICES CLFLEET_SIMULATE CLFLEET_TEST_DEVICES CLFLEET_TEST_DEVICES_PAIR
prog() { # the real program of a libtool-built one
    if [ -x "$build/$1/.libs/$2" ]; then echo "$build/$1/.libs/$2"; else echo "$build/$1/$2"; fi
}
bench=$(prog tools clfleet-bench)
info=$(prog tools clfleet-info)
left() { echo $((budget - ($(date +%s) - start))); }
# Seconds the benchmarks before balance leave to it: on the first GPU machine gemm, overhead,
# stencil, allreduce and p2p spent the whole second half and balance never ran.
reserve=0

exec 3> "$out" || exit 1
say() { printf '%s\n' "$*" >&3; }
block() { # a file as a fenced block, at most 200 lines of it
    say '```'
    if [ "$(wc -l < "$1")" -gt 200 ]; then
        head -n 200 "$1" >&3
        say "... ($(wc -l < "$1") lines in all)"
    else
        cat "$1" >&3
    fi
    say '```'
}
note() { printf 'gpu-check.sh: %s\n' "$*" >&2; }

say "# clfleet GPU check"
say ""
say "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -n), $(uname -m), $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') CPUs"
say "- build: \`$build\`; $("$bench" --version 2>&1 | head -n 1)"
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null) && say "- commit: $commit"
if [ -n "$quick" ]; then mode="quick (--quick sizes, two suites)"; else mode=full; fi
say "- mode: $mode; budget $budget s"

# What the loader cannot find, before anything fails for it.
missing=
for p in "$bench" "$info" $(prog tests test_launch) $(prog tests test_gemm); do
    [ -x "$p" ] || continue
    m=$(ldd "$p" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p')
    [ -n "$m" ] && missing="$missing $m"
done
[ -n "$missing" ] &&
    say "- **missing shared libraries:** $(echo $missing | tr ' ' '\n' | sort -u | tr '\n' ' ')"

# ---- devices ------------------------------------------------------------------------------
say ""
say "## Devices"
"$info" > "$work/info.txt" 2>&1
block "$work/info.txt"
gpu=
"$info" --devices 'type=gpu' > "$work/gpu.txt" 2>&1 && gpu=1
cpu=
"$info" --devices 'type=cpu' > "$work/cpu.txt" 2>&1 && cpu=1
if [ -n "$gpu" ]; then
    say ""
    say "A GPU is present: the fleets below are the GPU alone (\`type=gpu\`), the CPU alone (\`type=cpu\`) and the GPU + the CPU (\`type=gpu,cpu\`)."
    [ -z "$cpu" ] && say "No CPU OpenCL device (PoCL is not installed): the GPU alone only."
else
    say ""
    say "**No GPU found** (\`clfleet-info --devices type=gpu\` lists none): the report covers the CPU-only fleet."
    note "no GPU found: reporting the CPU-only fleet"
fi
[ -z "$gpu" ] && [ -z "$cpu" ] && { say ""; say "No OpenCL device at all: nothing to check."; exit 1; }

# ---- the suites ---------------------------------------------------------------------------
say ""
say "## Device test suites"
# PoCL as `make check` has it (two pthread devices and the basic one: some tests need the
# basic device); the fleets by discovery index (clfleet-info --devices type=all numbers them):
# the first GPU and the first pthread CPU device, whose units are split for four devices.
pocl='pthread pthread basic'
POCL_DEVICES=$pocl "$info" --devices type=all > "$work/all.txt" 2>&1
gi=$(sed -n 's/^ *\*\{0,1\} *\([0-9][0-9]*\) \{1,\}gpu .*/\1/p' "$work/all.txt" | head -n 1)
ci=$(sed -n 's/^ *\*\{0,1\} *\([0-9][0-9]*\) \{1,\}cpu \{1,\}pthread.*/\1/p' "$work/all.txt" |
    head -n 1)
if [ -n "$gpu" ] && [ -n "$gi" ] && [ -n "$ci" ]; then
    sel4="type=gpu,cpu;index=$gi,$ci;split=1+1+1" sel2="type=gpu,cpu;index=$gi,$ci"
elif [ -n "$gpu" ]; then
    sel4='type=gpu' sel2='type=gpu'
elif [ -n "$ci" ]; then
    sel4="type=cpu;platform=portable;name=pthread;split=1" sel2="type=cpu;index=$ci;split=1"
else
    sel4='type=cpu;split=1' sel2='type=cpu;split=1'
fi
say ""
say "CLFLEET_TEST_DEVICES='$sel4', CLFLEET_TEST_DEVICES_PAIR='$sel2', POCL_DEVICES='$pocl'."
say "A suite whose fleets need more devices than the selection gives is skipped and says why."
say ""
say "| suite | result | seconds |"
say "| --- | --- | --- |"
if [ -n "$quick" ]; then suites="test_collective test_array"
else suites="test_collective test_array test_launch test_gemm"; fi
for t in $suites; do
    p=$(prog tests "$t")
    if [ ! -x "$p" ]; then
        say "| $t | not built (make check TESTS= builds the suites) | |"
        continue
    fi
    # The suites get half the budget: the benchmarks are the other half of the report.
    l=$(($(left) - budget / 2))
    if [ "$l" -lt 30 ]; then
        say "| $t | not run: the suites' half of the time budget is spent | |"
        continue
    fi
    lim=$((l < 240 ? l : 240))
    t0=$(date +%s)
    (cd "$work" && POCL_DEVICES=$pocl CLFLEET_TEST_DEVICES=$sel4 CLFLEET_TEST_DEVICES_PAIR=$sel2 \
        timeout "$lim" "$p") > "$work/$t.log" 2>&1
    rc=$?
    case $rc in
    0) r=pass ;;
    77) r="skipped: $(grep -m 1 '^SKIP' "$work/$t.log" | cut -c 1-160)" ;;
    124) r="**timed out** after $lim s" ;;
    *) r="**FAILED** (exit $rc)" ;;
    esac
    say "| $t | $r | $(($(date +%s) - t0)) |"
    [ $rc -ne 0 ] && [ $rc -ne 77 ] && cp "$work/$t.log" "$work/fail-$t.log"
done
for f in "$work"/fail-*.log; do
    [ -e "$f" ] || continue
    say ""
    say "$(basename "$f" .log | sed 's/^fail-//'): the end of its output"
    tail -n 30 "$f" > "$f.tail"
    block "$f.tail"
done

# ---- the benchmarks -----------------------------------------------------------------------
say ""
say "## Benchmarks"
if [ -n "$quick" ]; then
    q=--quick
    set_args() { args=; }
else
    q=
    set_args() {
        case $1 in
        gemm) args="--size 2048 --reps 5" ;;
        stencil) args="--size 2048 --steps 50 --reps 3" ;;
        overhead) args="--reps 9" ;;
        allreduce) args="-e 64M -n 5 -w 2" ;;
        p2p) args="--max-size 64M --reps 3" ;;
        balance) args="--reps 3" ;;
        balance-selected) args="--quick --size 512 --reps 3" ;;
        *) args= ;;
        esac
    }
fi
fleets=
[ -n "$gpu" ] && fleets="gpu"
[ -n "$cpu" ] && fleets="$fleets cpu"
[ -n "$gpu" ] && [ -n "$cpu" ] && fleets="$fleets gpu+cpu"
fleet_sel() {
    case $1 in gpu) echo 'type=gpu' ;; cpu) echo 'type=cpu' ;; cpu-split) ;; *) echo 'type=gpu,cpu' ;; esac
}

# One benchmark on one fleet: its table and its JSON (a second run), each time-limited.
# Fleet cpu-split: no --devices but CLFLEET_DEVICES=type=cpu (balance's split configurations;
# its --devices runs exactly the selected devices instead). balance on gpu+cpu: --quick sizes
# (every device alone, the CPU too, runs each kernel), so that it fits beside the rest.
run_bench() { # name fleet [extra args...]
    b=$1 fl=$2
    shift 2
    if [ "$b" = balance ] && [ "$fl" = gpu+cpu ]; then set_args balance-selected; else set_args "$b"; fi
    sel=$(fleet_sel "$fl") dsel='' extra=$*
    if [ -n "$sel" ]; then
        set -- --devices "$sel" "$@"
    else
        dsel=type=cpu
    fi
    l=$(($(left) - reserve))
    if [ "$l" -lt 20 ]; then
        say ""
        if [ "$reserve" -gt 0 ]; then
            say "### $b, $fl: not run (the time left is kept for balance, $reserve s)"
        else
            say "### $b, $fl: not run (the time budget is spent)"
        fi
        return
    fi
    lim=$((l < 150 ? l : 150))
    say ""
    # shellcheck disable=SC2016 # the quotes are the report's text, around the expanded $sel
    say "### $b, $fl (\`${dsel:+CLFLEET_DEVICES=$dsel }$b${sel:+ --devices '$sel'}${q:+ $q}${args:+ $args}${extra:+ $extra}\`)"
    # shellcheck disable=SC2086
    (cd "$work" && env ${dsel:+CLFLEET_DEVICES=$dsel} POCL_DEVICES=pthread timeout "$lim" \
        "$bench" "$b" $q $args "$@" --json) > "$work/$b.$fl.json" 2> "$work/$b.$fl.err"
    rc=$?
    case $rc in
    0) ;;
    77) say ""; say "skipped: $(grep -v '^clfleet-bench: simulated' "$work/$b.$fl.err" | head -n 1)"
        rm -f "$work/$b.$fl.json"; return ;;
    124) say ""; say "**timed out** after $lim s"; rm -f "$work/$b.$fl.json"; return ;;
    *) say ""; say "**FAILED** (exit $rc):"; block "$work/$b.$fl.err"; rm -f "$work/$b.$fl.json"
       return ;;
    esac
    l=$(($(left) - reserve))
    [ "$l" -lt 20 ] && { say ""; say "(the table was not run: the time budget is spent)"; return; }
    lim=$((l < 150 ? l : 150))
    # shellcheck disable=SC2086
    (cd "$work" && env ${dsel:+CLFLEET_DEVICES=$dsel} POCL_DEVICES=pthread timeout "$lim" \
        "$bench" "$b" $q $args "$@") > "$work/$b.$fl.txt" 2>&1
    say ""
    block "$work/$b.$fl.txt"
}

# GPU + CPU first: the comparison the report is for, while the budget is fresh.
[ -n "$cpu" ] && reserve=$((budget / 5))
order=
for f in gpu+cpu gpu cpu; do
    case " $fleets " in *" $f "*) order="$order $f" ;; esac
done
for b in gemm overhead stencil; do
    for f in $order; do run_bench "$b" "$f"; done
done
for b in allreduce p2p; do
    for f in $order; do
        [ "$f" = gpu ] && continue # one GPU: nothing to copy between or reduce over
        run_bench "$b" "$f"
    done
done
if [ -n "$cpu" ]; then
    reserve=0
    # The real mixed fleet first: the table the report is for.
    case " $fleets " in *" gpu+cpu "*) run_bench balance gpu+cpu ;; esac
    run_bench balance cpu-split
    # The slow device's runs alone take 50x the fast one's: a smaller image outside --quick.
    if [ -n "$quick" ]; then
        run_bench balance cpu-split --simulate 'device=1,compute=0.02,latency=60us'
    else
        run_bench balance cpu-split --simulate 'device=1,compute=0.02,latency=60us' --size 256
    fi
    [ -e "$work/balance.cpu-split.json" ] &&
        mv "$work/balance.cpu-split.json" "$work/balance-sim.cpu.json"
fi

# ---- summary ------------------------------------------------------------------------------
say ""
say "## Summary: each strategy against the fastest device alone"
if command -v python3 > /dev/null 2>&1; then
    python3 - "$work" $order >&3 <<'EOF'
import json, os, sys
work, fleets = sys.argv[1], sys.argv[2:]
def load(name):
    try:
        with open(os.path.join(work, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
print("\n(x alone: the run's time / the fastest device's time alone, measured in the same run;"
      " below 1 the fleet helped, above 1 it hurt)\n")
print("| bench | fleet | fastest device alone | run | x alone |")
print("| --- | --- | --- | --- | --- |")
for fl in fleets:
    g = load("gemm.%s.json" % fl)
    if g:
        base = next((r for r in g["runs"] if r.get("baseline")), None)
        for r in g["runs"]:
            if "device" in r or not base:
                continue
            print("| gemm %d | %s | %s | %s (ran as %s) | %.2f |" % (
                g["size"], fl, g.get("baseline_device_name", "?"), r["strategy"],
                r["ran_as"], r["median_s"] / base["median_s"]))
    o = load("overhead.%s.json" % fl)
    if o:
        for k in o["kernels"]:
            raw = next(v for v in k["variants"] if v["variant"] == "raw")
            for v in k["variants"]:
                if v["variant"] == "raw":
                    continue
                print("| overhead %s | %s | %s (raw %.1f us) | %s | %.2f |" % (
                    k["kernel"], fl, o.get("baseline_device_name", "?"), raw["us_per_launch"],
                    v["variant"], v["ratio_to_raw"]))
    s = load("stencil.%s.json" % fl)
    if s:
        for f in s["forms"]:
            if f["form"] == "one_device":
                continue
            print("| stencil %d | %s | %s | %s | %.2f |" % (
                s["width"], fl, s.get("baseline_device_name", "?"), f["form"],
                1 / f["speedup"] if f["speedup"] else float("nan")))
b = load("balance.gpu+cpu.json")
if b:
    for c in b.get("configurations", []):
        for w in c.get("workloads", []):
            for st in w["strategies"]:
                print("| balance %s (%s) | gpu+cpu | %s | %s (ran as %s) | %.2f |" % (
                    w["kernel"], w["params"], w.get("best_single_device_name", "?"),
                    st["strategy"], st["ran_as"], st["vs_fastest_alone"]))
b = load("balance-sim.cpu.json")
if b:
    for c in b.get("configurations", []):
        for w in c.get("workloads", []):
            for st in w["strategies"]:
                print("| balance %s (simulated: %s) | cpu | device %s | %s | %.2f |" % (
                    w["kernel"], b.get("simulate"), w["best_single_device"], st["strategy"],
                    st["vs_fastest_alone"]))
EOF
else
    say ""
    say "(python3 is not installed: see the benchmarks' tables above)"
fi
say ""
say "Total: $(($(date +%s) - start)) s."
exec 3>&-
note "report written to $out ($(($(date +%s) - start)) s)"

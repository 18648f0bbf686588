#!/bin/sh
# tools/bench-compare.sh: side-by-side benchmarks of this build against an older commit.
#
# Builds clfleet at OLD (a commit of this repository) in a temporary git worktree, out of
# tree, once (kept under $BENCH_COMPARE_DIR, default /tmp/clfleet-bench-compare/COMMIT), then
# runs clfleet-bench's balance, p2p, allreduce, gemm, overhead, stencil and pipeline subcommands
# (issue 26's list, and p2p) from BOTH builds,
# alternately (old, new, new, old, ...: same machine, same moment, each pair shares whatever
# load the host has), and prints one line per figure: the median over the rounds of each
# build and new/old. Times (seconds, microseconds) are better lower, rates (GB/s) higher:
# the last column says which way is better. `overhead ... raw` is plain OpenCL, but each
# build's bench sets it up its own way (since 7dafbdf on the fastest device by measurement):
# compare `overhead ... / raw`, each variant over raw in the same run. The pipeline
# needs 3 devices: it runs with POCL_DEVICES="pthread pthread pthread" unless POCL_DEVICES is set.
# Each build has its own CLFLEET_CACHE_DIR under the results folder.
#
# Usage: tools/bench-compare.sh [--rounds N] [--full] [--only "balance gemm ..."] OLD [NEW_BUILD]
#        tools/bench-compare.sh [--only "..."] --report DIR   (the table again from a results
#                                                              folder an earlier run left)
#   OLD        a commit (e.g. 26daf0f)
#   NEW_BUILD  a configured and built build directory of this tree (default: ./_b, else .)
#   --rounds N alternating rounds (default 3); --full: the benchmarks' own sizes (default:
#              --quick sizes, a few minutes in all)
# Needs git, make, a C compiler, python3 (to read the benchmarks' JSON). Runs niced.
set -eu
rounds=3
quick=--quick
only="balance p2p allreduce gemm overhead stencil pipeline"
report=
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --full) quick=; shift ;;
    --only) only=$2; shift 2 ;;
    --report) report=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/{/^#/p}' "$0"; exit 0 ;;
    -*) echo "bench-compare.sh: unknown option $1" >&2; exit 99 ;;
    *) break ;;
    esac
done
if [ -n "$report" ]; then
    out=$report
    [ -d "$out" ] || { echo "bench-compare.sh: no folder $out" >&2; exit 1; }
else
    [ $# -ge 1 ] ||
        { echo "usage: bench-compare.sh [--rounds N] [--full] OLD [NEW_BUILD]" >&2; exit 99; }
    src=$(cd "$(dirname "$0")/.." && pwd)
    old=$(git -C "$src" rev-parse --short=12 "$1^{commit}")
    new_build=${2:-}
    if [ -z "$new_build" ]; then
        if [ -x "$src/_b/tools/clfleet-bench" ]; then new_build=$src/_b; else new_build=.; fi
    fi
    new_bench=$(cd "$new_build" && pwd)/tools/clfleet-bench
    [ -x "$new_bench" ] || { echo "bench-compare.sh: no $new_bench (build first)" >&2; exit 1; }

    top=${BENCH_COMPARE_DIR:-/tmp/clfleet-bench-compare}/$old
    old_bench=$top/build/tools/clfleet-bench
    if [ ! -x "$old_bench" ]; then
        echo "bench-compare.sh: building $old in $top" >&2
        mkdir -p "$top"
        [ -d "$top/src" ] || git -C "$src" worktree add --detach "$top/src" "$old" >/dev/null
        (cd "$top/src" && autoreconf -fi >/dev/null 2>&1)
        mkdir -p "$top/build"
        (cd "$top/build" && ../src/configure >/dev/null && nice -n 10 make -j2 >make.log 2>&1) ||
            { echo "bench-compare.sh: the build of $old failed: $top/build/make.log" >&2; exit 1; }
    fi

    out=$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")
    echo "bench-compare.sh: old $old_bench, new $new_bench, $rounds rounds, results in $out" >&2
    r=1
    while [ "$r" -le "$rounds" ]; do
        # Odd rounds run the old build first, even rounds the new one: neither always gets the
        # warmer (or the colder) host.
        if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
        for b in $only; do
            for side in $order; do
                if [ "$side" = old ]; then exe=$old_bench; else exe=$new_bench; fi
                f=$out/$b.$side.$r.json
                # Each build its own cache (binaries, learned weights, cost model): the model
                # files of two versions must not teach each other.
                set -- env CLFLEET_CACHE_DIR="$out/cache.$side" nice -n 10 "$exe" "$b" $quick --json
                if [ "$b" = pipeline ] && [ -z "${POCL_DEVICES:-}" ]; then
                    set -- env POCL_DEVICES="pthread pthread pthread" "$@"
                fi
                "$@" >"$f" 2>"$f.err" ||
                    echo "bench-compare.sh: $side $b round $r failed (see $f.err)" >&2
            done
        done
        r=$((r + 1))
    done
fi

python3 - "$out" $only <<'EOF'
import glob, json, os, statistics, sys

out, benches = sys.argv[1], sys.argv[2:]

def flat(bench, j):
    """One benchmark's JSON as {figure: (value, lower_is_better)}."""
    f = {}
    if bench == "balance":
        for c in j.get("configurations", []):
            for w in c.get("workloads", []):
                k = w.get("kernel")
                for s in w.get("strategies", []):
                    key = "balance %s %s %s wall_s" % (c["name"], k, s["strategy"])
                    f[key] = (s["wall_s"], 1)
                if "clfleet_one_device_s" in w:
                    key = "balance %s %s one-device_s" % (c["name"], k)
                    f[key] = (w["clfleet_one_device_s"], 1)
    elif bench == "p2p":
        for x in j.get("results", []):
            f["p2p %d->%d %dB GB/s" % (x["src"], x["dst"], x["bytes"])] = (x["chosen"]["gbps"], 0)
    elif bench == "allreduce":
        for x in j.get("results", []):
            # Medians on both sides: older builds' "ring" time is a median; since the
            # nccl-tests form (issue 29) "in_place" is a mean (one spike on a loaded host moves
            # it by tens of us), and the median of what AUTO chose is "chosen_median_s".
            t = x.get("chosen_median_s")
            if t is None:
                t = (x.get("in_place") or x.get("ring"))["time_s"]
            f["allreduce %ddev %dB s" % (x["devices"], x["bytes"])] = (t, 1)
    elif bench == "gemm":
        for x in j.get("runs", []):
            # Since issue 27 each kind of device runs alone: the baseline (the fastest) keeps
            # the old key, which was device 0's; the others are named by device.
            alone = "device" in x and not x.get("baseline")
            tag = " dev%d" % x["device"] if alone else ""
            f["gemm %ddev %s%s median_s" % (x["devices"], x["strategy"], tag)] = \
                (x["median_s"], 1)
    elif bench == "overhead":
        # Also over raw OpenCL in the same run: the two builds' benches set raw up their own
        # ways (its median moved 1.4-1.7x between them in one round).
        for k in j.get("kernels", []):
            raw = [v["us_per_launch"] for v in k.get("variants", []) if v["variant"] == "raw"]
            for v in k.get("variants", []):
                key = "overhead %s %s us/launch" % (k["kernel"], v["variant"])
                f[key] = (v["us_per_launch"], 1)
                if raw and raw[0] > 0 and v["variant"] != "raw":
                    f["overhead %s %s / raw" % (k["kernel"], v["variant"])] = \
                        (v["us_per_launch"] / raw[0], 1)
    elif bench == "stencil":
        for x in j.get("forms", []):
            f["stencil %s step_s" % x["form"]] = (x["step_s"], 1)
    elif bench == "pipeline":
        # Each build calibrates a batch's iterations to a target time by its own busy-time
        # figures (the new build gave 89-95 where the old gave 76-79): batches per second
        # times iterations is the work rate both can be compared on.
        it = [x.get("iterations", 0) for x in j.get("stage_reports", [])]
        it = max(it) if it else 0
        for k in ("serial", "pipelined"):
            v = j.get("%s_batches_per_s" % k)
            if v is not None and it > 0:
                f["pipeline %s iterations/s" % k] = (v * it, 0)
        if "ratio_to_ideal" in j:
            f["pipeline ratio to ideal"] = (j["ratio_to_ideal"], 0)
    return f

print("%-46s %12s %12s %8s  %s" % ("figure (median of rounds)", "old", "new", "new/old", "better"))
for b in benches:
    vals = {"old": {}, "new": {}}
    for side in ("old", "new"):
        for p in sorted(glob.glob(os.path.join(out, "%s.%s.*.json" % (b, side)))):
            try:
                with open(p) as fh:
                    j = json.load(fh)
            except (OSError, ValueError):
                continue
            for key, (v, low) in flat(b, j).items():
                vals[side].setdefault(key, ([], low))[0].append(v)
    for key in sorted(set(vals["old"]) | set(vals["new"])):
        o = vals["old"].get(key, ([], 1))
        n = vals["new"].get(key, ([], 1))
        mo = statistics.median(o[0]) if o[0] else float("nan")
        mn = statistics.median(n[0]) if n[0] else float("nan")
        ratio = mn / mo if mo else float("nan")
        print("%-46s %12.4g %12.4g %8.3f  %s" % (key[:46], mo, mn, ratio,
                                                "lower" if (o[1] if o[0] else n[1]) else "higher"))
EOF

#!/bin/sh
# clfleet-info --json lists each PoCL device (POCL_DEVICES), and sub-devices when asked.
set -u
b=${top_builddir:-.}
info=$b/tools/clfleet-info
lint=$b/tests/jsonlint
tmp=${TMPDIR:-/tmp}/clf-info.$$
trap 'rm -f "$tmp".*' EXIT
required() { [ "${CLFLEET_REQUIRE_DEVICES:-0}" != 0 ]; }

POCL_DEVICES='pthread pthread basic' $info --json --devices 'type=cpu;platform=portable' \
    > "$tmp.json" 2> "$tmp.err"
rc=$?
if [ $rc -ne 0 ]; then
    cat "$tmp.err"
    if required; then echo "FAIL: no devices"; exit 99; fi
    echo "SKIP: no PoCL devices"; exit 77
fi
$lint < "$tmp.json" || { echo "FAIL: invalid JSON"; cat "$tmp.json"; exit 1; }
n=$(grep -c '"index"' "$tmp.json")
nb=$(grep -c '"name": "basic' "$tmp.json")
np=$(grep -c '"name": "pthread' "$tmp.json")
[ "$n" -eq 3 ] && [ "$nb" -eq 1 ] && [ "$np" -eq 2 ] ||
    { echo "FAIL: expected 3 devices (1 basic, 2 pthread), got $n ($nb, $np)"; exit 1; }

# Split the pthread devices: one sub-device per compute unit.
$info --json --devices 'type=cpu;platform=portable;name=pthread' --split 1 > "$tmp.split" ||
    { echo "FAIL: split"; exit 1; }
$lint < "$tmp.split" || { echo "FAIL: invalid JSON (split)"; exit 1; }
cus=$(grep -o '"compute_units": [0-9]*' "$tmp.json" | sed -n '2,3p' | awk '{s += $2} END {print s}')
subs=$(grep -c '"sub_device": true' "$tmp.split")
[ "$subs" -eq "$cus" ] || { echo "FAIL: $subs sub-devices for $cus compute units"; exit 1; }

# The table form names every device too, and bad input is a clear error.
$info --devices 'type=cpu;platform=portable' > "$tmp.txt" || { echo "FAIL: table"; exit 1; }
grep -q 'Platform 0' "$tmp.txt" && [ "$(grep -c 'pthread\|basic' "$tmp.txt")" -ge 3 ] ||
    { echo "FAIL: table"; cat "$tmp.txt"; exit 1; }
if $info --devices 'type=banana' > /dev/null 2> "$tmp.err"; then
    echo "FAIL: bad selection accepted"; exit 1
fi
grep -q banana "$tmp.err" || { echo "FAIL: no detail"; cat "$tmp.err"; exit 1; }
# The transfer path matrix: n x n names and direct flags; PoCL devices in one context share
# memory with the host ("unified", direct), in a context each they stage.
paths() { tr -d ' \n' < "$1" | sed -n 's/.*"paths":\[\(.*\)\],"direct".*/\1/p'; }
direct() { tr -d ' \n' < "$1" | sed -n 's/.*"direct":\[\(.*\)\],"cuda".*/\1/p'; }
want='["same-device","unified","unified"],["unified","same-device","unified"],["unified","unified","same-device"]'
[ "$(paths "$tmp.json")" = "$want" ] ||
    { echo "FAIL: paths (shared context): $(paths "$tmp.json")"; exit 1; }
[ "$(direct "$tmp.json")" = '[true,true,true],[true,true,true],[true,true,true]' ] ||
    { echo "FAIL: direct (shared context): $(direct "$tmp.json")"; exit 1; }
grep -q '"cuda": "off: no NVIDIA device"' "$tmp.json" ||
    { echo "FAIL: CUDA status"; grep '"cuda"' "$tmp.json"; exit 1; }
$info --json --context-per-device --devices 'type=cpu;platform=portable' > "$tmp.ctx" ||
    { echo "FAIL: context per device"; exit 1; }
$lint < "$tmp.ctx" || { echo "FAIL: invalid JSON (context per device)"; exit 1; }
want='["same-device","staged","staged"],["staged","same-device","staged"],["staged","staged","same-device"]'
[ "$(paths "$tmp.ctx")" = "$want" ] ||
    { echo "FAIL: paths (context per device): $(paths "$tmp.ctx")"; exit 1; }
[ "$(direct "$tmp.ctx")" = '[true,false,false],[false,true,false],[false,false,true]' ] ||
    { echo "FAIL: direct (context per device): $(direct "$tmp.ctx")"; exit 1; }
CLFLEET_TRANSFER=staged $info --json --devices 'type=cpu;platform=portable' > "$tmp.stg" ||
    { echo "FAIL: CLFLEET_TRANSFER=staged"; exit 1; }
[ "$(paths "$tmp.stg" | grep -o '"[a-z-]*"' | sort -u)" = '"staged"' ] ||
    { echo "FAIL: forced staging: $(paths "$tmp.stg")"; exit 1; }
[ "$(direct "$tmp.stg")" = "$(direct "$tmp.json")" ] ||
    { echo "FAIL: direct must not depend on disabled paths"; exit 1; }
grep -q 'Transfer paths' "$tmp.txt" && grep -q 'same-device\*' "$tmp.txt" ||
    { echo "FAIL: no path matrix in the table"; cat "$tmp.txt"; exit 1; }
if CLFLEET_TRANSFER=sideways $info --devices 'type=cpu;platform=portable' > /dev/null \
    2> "$tmp.err"; then
    echo "FAIL: bad CLFLEET_TRANSFER accepted"; exit 1
fi
grep -q 'CLFLEET_TRANSFER' "$tmp.err" && grep -q sideways "$tmp.err" ||
    { echo "FAIL: no detail for CLFLEET_TRANSFER"; cat "$tmp.err"; exit 1; }

# Extensions are an array of names; the default fleet is marked (with no GPU, every CPU
# device), in JSON and in the table with its legend.
grep -q '"extensions": \["cl_' "$tmp.json" || { echo "FAIL: extensions not an array"; exit 1; }
[ "$(grep -c '"in_default_fleet": true' "$tmp.json")" -eq 3 ] ||
    { echo "FAIL: default fleet not marked in JSON"; exit 1; }
[ "$(grep -c '^  \* [0-9]' "$tmp.txt")" -eq 3 ] && grep -q 'in the default fleet' "$tmp.txt" ||
    { echo "FAIL: default fleet not marked in the table"; cat "$tmp.txt"; exit 1; }
CLFLEET_DEVICES='name=basic' $info --devices 'type=cpu;platform=portable' > "$tmp.def" ||
    { echo "FAIL: CLFLEET_DEVICES=name=basic"; exit 1; }
[ "$(grep -c '^  \* [0-9]' "$tmp.def")" -eq 1 ] && grep -q '^  \* [0-9].*basic' "$tmp.def" ||
    { echo "FAIL: CLFLEET_DEVICES does not set the marks"; cat "$tmp.def"; exit 1; }
# Sub-devices name their root device by its own number, not a fleet index.
$info --devices='type=cpu;platform=portable;name=pthread' --split=1 > "$tmp.sub" ||
    { echo "FAIL: --devices=S --split=1"; exit 1; }
grep -q ' 1 of #[0-9]' "$tmp.sub" && grep -q 'part 1 (counting from 0) of root device' "$tmp.sub" ||
    { echo "FAIL: sub-devices"; cat "$tmp.sub"; exit 1; }
grep -q '"sub_device_index": 1' "$tmp.split" || { echo "FAIL: sub_device_index"; exit 1; }

# -l: one line per device under a header with units; --all: name/value lines per device.
$info -l --devices 'type=cpu;platform=portable' > "$tmp.list" || { echo "FAIL: -l"; exit 1; }
grep -q '^ *# *plat/dev *type *CUs *memory (GiB) *name$' "$tmp.list" &&
    [ "$(grep -c '^  [* ] [0-9]  *0/[0-9] *cpu  *[0-9]* *[0-9.]*  [bp]' "$tmp.list")" -eq 3 ] ||
    { echo "FAIL: -l lines"; cat "$tmp.list"; exit 1; }
$info --list --devices 'type=cpu;platform=portable;name=pthread' --split 1 > "$tmp.lsub" &&
    grep -q '^  [* ] 1  *0/[0-9]\.1 ' "$tmp.lsub" || { echo "FAIL: --list of sub-devices"; cat "$tmp.lsub"; exit 1; }
$info --all --devices 'type=cpu;platform=portable' > "$tmp.all" || { echo "FAIL: --all"; exit 1; }
[ "$(grep -c '^Device [0-9]: ' "$tmp.all")" -eq 3 ] &&
    [ "$(grep -c '^  Max compute units  *[0-9][0-9]*$' "$tmp.all")" -eq 3 ] &&
    [ "$(grep -c '^  Global memory (bytes)  *[0-9]* ([0-9.]* [KMGT]iB)$' "$tmp.all")" -eq 3 ] &&
    grep -q '^  Extensions ([0-9]*)  *cl_khr' "$tmp.all" &&
    grep -q '^  Queue properties  ' "$tmp.all" && grep -q '^  Image support  *\(yes\|no\)$' "$tmp.all" ||
    { echo "FAIL: --all properties"; cat "$tmp.all"; exit 1; }
# The values form one column: every property line has its value at column 38.
[ "$(grep '^  ' "$tmp.all" | awk 'substr($0, 37, 1) != " " || substr($0, 38, 1) == " " { bad++ }
    END { print bad + 0 }')" -eq 0 ] ||
    { echo "FAIL: --all columns not aligned"; exit 1; }

# --measure: a full matrix for the devices and the host, bandwidth twice and latency; the
# bytes of every copy checked (#wrong 0). PoCL's two basic devices, one context each so that
# copies cross contexts (staged) and one context (unified).
for ctx in "" "--context-per-device"; do
    POCL_DEVICES='basic basic' $info --measure $ctx --devices 'type=cpu' > "$tmp.meas" \
        2> "$tmp.err" || { echo "FAIL: --measure $ctx"; cat "$tmp.meas" "$tmp.err"; exit 1; }
    [ "$(grep -c '^from\\to  *host  *0  *1$' "$tmp.meas")" -eq 3 ] &&
        grep -q '^Bandwidth (GB/s, 10^9 bytes/s), [0-9]* MiB copies$' "$tmp.meas" &&
        grep -q '^Latency (us) of an 8-byte copy$' "$tmp.meas" &&
        [ "$(grep -c '^host  *-  *[0-9][0-9.]*  *[0-9][0-9.]*$' "$tmp.meas")" -eq 3 ] &&
        [ "$(grep -c '^[01]  *[0-9][0-9.]*  *[0-9][0-9.]*  *[0-9][0-9.]*$' "$tmp.meas")" -eq 6 ] &&
        grep -q '^#wrong 0$' "$tmp.meas" ||
        { echo "FAIL: --measure $ctx matrix"; cat "$tmp.meas"; exit 1; }
    # No cell is zero: each figure is a measurement.
    if grep -q ' 0\.0*\( \|$\)' "$tmp.meas"; then
        echo "FAIL: --measure $ctx: a zero figure"; cat "$tmp.meas"; exit 1
    fi
done

# A host with one CPU device and nothing else is told how to split it, when it can be split
# (two compute units or more); PoCL's basic device has one unit, so it is not.
POCL_DEVICES=pthread $info --devices 'type=cpu;platform=portable' > "$tmp.one" ||
    { echo "FAIL: one device"; exit 1; }
POCL_DEVICES=pthread $info -l --devices 'type=cpu;platform=portable' > "$tmp.onel" ||
    { echo "FAIL: -l, one device"; exit 1; }
cu=$(sed -n 's/^  \* 0  *0\/0  *cpu  *\([0-9]*\) .*/\1/p' "$tmp.onel")
[ -n "$cu" ] || { echo "FAIL: -l, one device"; cat "$tmp.onel"; exit 1; }
for f in "$tmp.one" "$tmp.onel"; do
    if [ "$cu" -ge 2 ]; then
        tail -n 1 "$f" | grep -qF 'CLFLEET_DEVICES="type=cpu;split=1"' ||
            { echo "FAIL: no split hint for one CPU device of $cu units"; cat "$f"; exit 1; }
    elif grep -qF 'split=1"' "$f"; then
        echo "FAIL: split hint for a device of one unit"; exit 1
    fi
done
POCL_DEVICES=basic $info --devices 'type=cpu;platform=portable' > "$tmp.one" &&
    ! grep -qF 'split=1"' "$tmp.one" || { echo "FAIL: split hint for the basic device"; exit 1; }
if grep -qF 'split=1"' "$tmp.txt"; then
    echo "FAIL: split hint with three devices"; exit 1
fi

# Errors name where the selection came from.
$info --devices 'type=banana' 2>&1 >/dev/null | grep -q -- "--devices 'type=banana'" ||
    { echo "FAIL: --devices not named"; exit 1; }
CLFLEET_DEVICES='type=banana' $info 2>&1 >/dev/null | grep -q "CLFLEET_DEVICES='type=banana'" ||
    { echo "FAIL: CLFLEET_DEVICES not named"; exit 1; }

# The conventional options: --help and --version on stdout (0); a bad command line is 2.
$info --help | grep -q '^usage: clfleet-info' || { echo "FAIL: --help"; exit 1; }
$info --version | grep -q '^clfleet-info [0-9]' || { echo "FAIL: --version"; exit 1; }
# A usage error is one line saying what is wrong, then where to read more (not the usage text).
for bad in "--bogus" "--devices" "--split x" "--split-counts=3-1" "--json=yes" "extra" "-x" \
    "--perf --perf-reset" "-l --all" "--json --measure" "--cache --cache-clear" \
    "--cache --perf" "--list=1"; do
    $info $bad > /dev/null 2> "$tmp.err"
    rc=$?
    [ $rc -eq 2 ] || { echo "FAIL: '$bad' exited with $rc, not 2"; cat "$tmp.err"; exit 1; }
    [ "$(wc -l < "$tmp.err")" -eq 2 ] && grep -q '^clfleet-info: ' "$tmp.err" &&
        [ "$(sed -n 2p "$tmp.err")" = "Try 'clfleet-info --help'." ] ||
        { echo "FAIL: '$bad': not one line and a pointer to --help"; cat "$tmp.err"; exit 1; }
done

# An explicit selection that matches nothing is a failure (1), saying per device why.
$info --devices 'type=cpu;platform=portable;min_cu=100000' > /dev/null 2> "$tmp.err"
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: a selection matching nothing exited with $rc, not 1"; exit 1; }
grep -q "device 1 'pthread.*excluded by min_cu=100000 (it has [0-9]*)" "$tmp.err" ||
    { echo "FAIL: no reason per device"; cat "$tmp.err"; exit 1; }
# So is index= naming a device that does not exist, and a split larger than a device.
$info --devices 'type=cpu;platform=portable;index=1,200-201' > /dev/null 2> "$tmp.err"
rc=$?
[ $rc -eq 1 ] && grep -q 'index=200-201: no such devices (there are 3 devices' "$tmp.err" ||
    { echo "FAIL: index=200-201 ($rc)"; cat "$tmp.err"; exit 1; }
$info --devices 'type=cpu;platform=portable;name=pthread' --split 100000 > /dev/null \
    2> "$tmp.err"
rc=$?
[ $rc -eq 1 ] && grep -q "cannot split device 1 'pthread.* (cpu, [0-9]* compute unit" "$tmp.err" ||
    { echo "FAIL: --split 100000 ($rc)"; cat "$tmp.err"; exit 1; }

# A device name longer than the table's column ends in "...", the cut showing.
name=$(sed -n 's/.*"name": "\(pthread[^"]*\)".*/\1/p' "$tmp.json" | head -n 1)
if [ ${#name} -gt 34 ]; then
    cut=$(printf '%s' "$name" | cut -c 1-31)
    grep -qF " $cut... " "$tmp.txt" ||
        { echo "FAIL: '$name' not cut with '...'"; cat "$tmp.txt"; exit 1; }
else
    grep -qF " $name " "$tmp.txt" || { echo "FAIL: '$name' not in the table"; exit 1; }
fi

# --perf shows the speeds learned in the cache directory (the median of each entry's samples,
# their spread, and the fixed cost per chunk of the chunk line where one is fitted: a v2 line
# whose chunks lie on time = 100 us + units / 1e7), --perf-reset forgets them; neither needs
# a device. v1 lines (earlier versions' files) still read.
cache=$tmp.cache
mkdir -p "$cache" || exit 99
trap 'rm -rf "$tmp".*' EXIT
printf 'v1\tvadd@0123456789abcdef\tpthread-x|3.1|cu=2\t3\t100\t300\t200\n' > "$cache/perf-v1.tsv"
printf 'v1\tbusy@fedcba9876543210\tbasic-x|3.1|cu=1\t1\t5e6\n' >> "$cache/perf-v1.tsv"
printf 'v2\tline@00112233aabbccdd\tbasic-x|3.1|cu=1\t2\t5e6\t5e6\t3\t1000\t0.0002\t2000\t0.0003\t4000\t0.0005\n' \
    >> "$cache/perf-v1.tsv"
printf 'v2\tlink:h2d\tbasic-x|3.1|cu=1\t1\t6.5e9\t0\n' >> "$cache/perf-v1.tsv"
printf 'v2\tallreduce:ring:64KiB\tpthread-x|3.1|cu=2;pthread-x|3.1|cu=2;paths=unified,unified\t1\t2e9\t0\n' \
    >> "$cache/perf-v1.tsv"
CLFLEET_CACHE_DIR=$cache $info --perf > "$tmp.perf" || { echo "FAIL: --perf"; exit 1; }
grep -q "vadd@0123456789abcdef *pthread-x|3.1|cu=2 *3 *200 *50% *0 *-$" "$tmp.perf" &&
    grep -q "busy@fedcba9876543210 *basic-x|3.1|cu=1 *1 *5e+06 *0% *0 *-$" "$tmp.perf" &&
    grep -q "line@00112233aabbccdd *basic-x|3.1|cu=1 *2 *5e+06 *0% *3 *100.0$" "$tmp.perf" &&
    grep -A2 "^Host-device links" "$tmp.perf" | grep -q "link:h2d *basic-x|3.1|cu=1 *1 *6.5e+09 " &&
    grep -A2 "^All-reduce algorithms" "$tmp.perf" |
    grep -q "^  ring:64KiB *pthread-x|3.1|cu=2;pthread-x|3.1|cu=2;paths=unified,unified *1 *2e+09 " ||
    { echo "FAIL: --perf table"; cat "$tmp.perf"; exit 1; }
CLFLEET_CACHE_DIR=$cache $info --perf --json > "$tmp.pjson" ||
    { echo "FAIL: --perf --json"; exit 1; }
$lint < "$tmp.pjson" || { echo "FAIL: invalid JSON (--perf)"; cat "$tmp.pjson"; exit 1; }
[ "$(grep -c '"units_per_s":' "$tmp.pjson")" -eq 5 ] && grep -q '"units_per_s":200,' "$tmp.pjson" &&
    grep -q '"chunks":3,"rate_units_per_s":1e+07,"fixed_us":100}' "$tmp.pjson" &&
    grep -q '"chunks":0,"rate_units_per_s":null,"fixed_us":null}' "$tmp.pjson" ||
    { echo "FAIL: --perf --json"; cat "$tmp.pjson"; exit 1; }
CLFLEET_CACHE_DIR=$cache $info --perf-reset > /dev/null || { echo "FAIL: --perf-reset"; exit 1; }
[ ! -e "$cache/perf-v1.tsv" ] || { echo "FAIL: --perf-reset left the model"; exit 1; }
CLFLEET_CACHE_DIR=$cache $info --perf > "$tmp.perf" && grep -q "none yet" "$tmp.perf" ||
    { echo "FAIL: --perf after --perf-reset"; cat "$tmp.perf"; exit 1; }
CLFLEET_CACHE_DIR=$cache $info --perf-reset > /dev/null || { echo "FAIL: reset twice"; exit 1; }
CLFLEET_CACHE_DIR=$cache $info --perf --perf-reset > /dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --perf --perf-reset together accepted"; exit 1; }

# --cache: where the binary cache is, its entries and their size; --cache-clear removes the
# entries only (a file of the user's and the learned speeds stay). Neither needs a device.
cdir=$tmp.bin
CLFLEET_CACHE_DIR=$cdir $info --cache > "$tmp.c0" && grep -q "^Binary cache: $cdir (not created yet)$" "$tmp.c0" &&
    grep -q '^  program binaries  *0$' "$tmp.c0" || { echo "FAIL: --cache, no directory"; cat "$tmp.c0"; exit 1; }
mkdir -p "$cdir" || exit 99
e1=$(printf '%064d' 1).clfbin e2=$(printf '%064d' 2).clfbin
head -c 1000 /dev/zero > "$cdir/$e1"; head -c 24 /dev/zero > "$cdir/$e2"
echo mine > "$cdir/notes.txt"; echo mine > "$cdir/$(printf '%063d' 3).clfbin"
printf 'v1\tk@0123456789abcdef\td|3.1|cu=1\t1\t5\n' > "$cdir/perf-v1.tsv"
CLFLEET_CACHE_DIR=$cdir $info --cache > "$tmp.c1" || { echo "FAIL: --cache"; exit 1; }
grep -q "^Binary cache: $cdir$" "$tmp.c1" && grep -q '^  program binaries  *2$' "$tmp.c1" &&
    grep -q '^  their size (bytes)  *1024 (1.0 KiB)$' "$tmp.c1" &&
    grep -q '^  learned device speeds  *yes' "$tmp.c1" || { echo "FAIL: --cache"; cat "$tmp.c1"; exit 1; }
grep -q '^  size limit (bytes)  *none$' "$tmp.c1" || { echo "FAIL: --cache limit"; cat "$tmp.c1"; exit 1; }
CLFLEET_CACHE_MAX=2M CLFLEET_CACHE_DIR=$cdir $info --cache |
    grep -q '^  size limit (bytes)  *2097152 (2.0 MiB)$' || { echo "FAIL: --cache with CLFLEET_CACHE_MAX"; exit 1; }
if CLFLEET_CACHE_MAX=lots CLFLEET_CACHE_DIR=$cdir $info --cache > /dev/null 2> "$tmp.err"; then
    echo "FAIL: a bad CLFLEET_CACHE_MAX accepted"; exit 1
fi
grep -q "CLFLEET_CACHE_MAX: 'lots'" "$tmp.err" || { echo "FAIL: no detail"; cat "$tmp.err"; exit 1; }
CLFLEET_CACHE_DIR=$cdir $info --cache-clear > "$tmp.c2" && grep -q ' 2 program binaries removed' "$tmp.c2" ||
    { echo "FAIL: --cache-clear"; cat "$tmp.c2"; exit 1; }
[ ! -e "$cdir/$e1" ] && [ ! -e "$cdir/$e2" ] && [ -e "$cdir/notes.txt" ] &&
    [ -e "$cdir/$(printf '%063d' 3).clfbin" ] && [ -e "$cdir/perf-v1.tsv" ] ||
    { echo "FAIL: --cache-clear removed the wrong files"; ls -A "$cdir"; exit 1; }
CLFLEET_CACHE_DIR=$cdir $info --cache | grep -q '^  program binaries  *0$' ||
    { echo "FAIL: --cache after --cache-clear"; exit 1; }
CLFLEET_CACHE_DIR=$tmp.none $info --cache-clear | grep -q ' 0 program binaries removed' ||
    { echo "FAIL: --cache-clear of a missing directory"; exit 1; }

echo "PASS: $n devices, $subs sub-devices, JSON valid, path matrix, default fleet marked, -l, --all, --measure, --perf, --cache"

#!/bin/sh
# clfleet-bench mpi-stencil and mpi-allreduce --quick under mpirun -np 2 and 3
# (tests/mpi-run.sh): each exits 0 (mpi-stencil checks every form against the others and the
# host's C loop, bit for bit; mpi-allreduce counts wrong elements) and names what it
# measured, mpi-allreduce in nccl-tests' columns; mpi-stencil --json is valid JSON.
set -u
b=${top_builddir:-.}
run="sh ${top_srcdir:-.}/tests/mpi-run.sh"
bench=$b/tools/clfleet-bench
tmp=${TMPDIR:-/tmp}/clf-mpi-bench.$$
trap 'rm -f "$tmp".*' EXIT
[ -x "$bench" ] || { echo "FAIL: tools/clfleet-bench not built"; exit 99; }
check() { # STATUS FILE: pass on a skip; fail on any other non-zero status
    [ "$1" -eq 77 ] && { cat "$2"; echo "SKIP"; exit 77; }
    [ "$1" -eq 0 ] || { cat "$2"; echo "FAIL: exited with $1"; exit "$1"; }
}
# Bad usage and --help need no mpirun (nothing initialises MPI before the options).
$bench mpi-stencil --steps 0 > /dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: mpi-stencil --steps 0: want exit status 2"; exit 1; }
$bench mpi-stencil --help | grep -q -- '--size N' || { echo "FAIL: mpi-stencil --help"; exit 1; }
$run "$bench" mpi-stencil --quick > "$tmp.out" 2>&1
check $? "$tmp.out"
cat "$tmp.out"
for form in 'one rank' 'all ranks, exchange after' 'all ranks, exchange before'; do
    n=$(grep -c "^$form .*x$" "$tmp.out")
    [ "$n" -eq 2 ] ||
        { echo "FAIL: mpi-stencil: '$form' timed $n times (want 2: -np 2, 3)"; exit 1; }
done
grep -q 'the same as the host' "$tmp.out" || { echo "FAIL: mpi-stencil: not checked"; exit 1; }
$run 2 "$bench" mpi-stencil --quick --json > "$tmp.json" 2> "$tmp.err"
check $? "$tmp.err"
grep -v '^==> ' "$tmp.json" > "$tmp.doc"
"$b/tests/jsonlint" < "$tmp.doc" || { cat "$tmp.json"; echo "FAIL: invalid JSON"; exit 1; }
for key in one_rank all_ranks_overlapped all_ranks_exchange_before; do
    grep -q "\"form\": \"$key\"" "$tmp.doc" || { echo "FAIL: JSON: no $key"; exit 1; }
done
$run "$bench" mpi-allreduce --quick --max-size 64K > "$tmp.out" 2>&1
check $? "$tmp.out"
cat "$tmp.out"
# nccl-tests' columns (out-of-place n/a), a 64 KiB row and a clean footer for -np 2 and 3.
row='^ +65536 +16384 +float +sum +-1 +n/a +n/a +n/a +n/a +[0-9.]+ '
[ "$(grep -Ec "$row" "$tmp.out")" -eq 2 ] &&
    [ "$(grep -c '^# Out of bounds values : 0 OK$' "$tmp.out")" -eq 2 ] &&
    [ "$(grep -c '^# Avg bus bandwidth    : [0-9.]* GB/s' "$tmp.out")" -eq 2 ] ||
    { echo "FAIL: mpi-allreduce: want a 64 KiB row and the footer for -np 2 and 3"; exit 1; }
# Another type and operation, checked against MPI_Allreduce's and the exact result.
$run 2 "$bench" mpi-allreduce --quick -b 4K -e 16K -d int64 -o min > "$tmp.out" 2>&1
check $? "$tmp.out"
[ "$(grep -Ec '^ +16384 +2048 +int64 +min +-1 +n/a ' "$tmp.out")" -eq 1 ] &&
    grep -q '^# Out of bounds values : 0 OK$' "$tmp.out" ||
    { cat "$tmp.out"; echo "FAIL: mpi-allreduce -d int64 -o min"; exit 1; }
exit 0

#!/bin/sh
# tests/mpi-run.sh [NP...] PROGRAM [ARGS...]: run an MPI test program under mpirun, once per
# NP (default: 2, then 3), every rank with its own PoCL devices (a pthread device of one
# thread and a basic device: $CLF_MPI_POCL_DEVICES), Check without fork, and a timeout around
# each mpirun so that a hung rank fails the test instead of hanging make check. The program
# reads the size it must find in $CLF_TEST_NP: a launcher that does not match the library
# runs N single-rank jobs, each of size 1, which then fail.
# Exit: 0 all passed, 77 skipped (no devices, and CLFLEET_REQUIRE_DEVICES not set), else the
# failing run's status (124: timed out).
set -u
nps=
while [ $# -gt 0 ]; do
    case $1 in
    [0-9] | [0-9][0-9]) nps="$nps $1"; shift ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || { echo "usage: $0 [NP...] PROGRAM [ARGS...]" >&2; exit 99; }
nps=${nps:-2 3}
mpirun=${MPIRUN:-mpirun}
command -v "$mpirun" > /dev/null 2>&1 || { echo "FAIL: no $mpirun"; exit 99; }
# Open MPI: running as root, more ranks than cores; nothing from the user's settings file.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Under AddressSanitizer: Debian's Open MPI has no frame pointers, so LeakSanitizer's fast
# unwinder stops at the first MPI frame (reported as an unknown module) and tests/lsan.supp's
# MPI libraries never match; the slow unwinder reaches them. Leaks with clfleet frames are
# still reported.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0"
# Shared memory and TCP on this machine only (no network interfaces probed in containers).
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp} OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}
export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-lo}
export POCL_DEVICES=${CLF_MPI_POCL_DEVICES:-pthread basic} POCL_MAX_PTHREAD_COUNT=1
export CK_FORK=no
limit=${CLF_MPI_TEST_TIMEOUT:-300}
prog=$1
shift
# A test whose rank dies on purpose (tests/mpi/test_dead*): Open MPI kills every rank when
# one dies unless --enable-recovery, and then mpirun's status is 0 whatever happened, so the
# surviving ranks each write a PASS line to $CLF_TEST_RESULT, and those are counted.
dead=
case ${prog##*/} in test_dead*) dead=1 ;; esac
rc=0
for np in $nps; do
    echo "==> $mpirun -np $np $prog $*"
    if [ -n "$dead" ]; then
        res=${TMPDIR:-/tmp}/clf-mpi-dead.$$
        rm -f "$res"
        CLF_TEST_NP=$np CLF_TEST_RESULT=$res timeout -k 10 "$limit" "$mpirun" --enable-recovery \
            -np "$np" "$prog" "$@"
        r=$?
        got=$(grep -c '^PASS' "$res" 2>/dev/null)
        rm -f "$res"
        if [ $r -eq 0 ] && [ "${got:-0}" -ne $((np - 1)) ]; then
            echo "FAIL: -np $np: ${got:-0} of $((np - 1)) surviving ranks passed"
            r=1
        fi
    else
        CLF_TEST_NP=$np timeout -k 10 "$limit" "$mpirun" -np "$np" "$prog" "$@"
        r=$?
    fi
    case $r in
    0) ;;
    77) echo "SKIP: -np $np"; [ $rc -eq 0 ] && rc=77 ;;
    124 | 137) echo "FAIL: -np $np timed out after $limit s"; exit 124 ;;
    *) echo "FAIL: -np $np exited with $r"; exit $r ;;
    esac
done
exit $rc

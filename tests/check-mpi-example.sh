#!/bin/sh
# examples/mpi-allreduce under mpirun -np 2 and 3 (tests/mpi-run.sh), each rank with its
# share of the node's devices: it checks its own result.
set -u
b=${top_builddir:-.}
[ -x "$b/examples/mpi-allreduce" ] || { echo "FAIL: examples/mpi-allreduce not built"; exit 99; }
CLFLEET_DEVICES='type=cpu;platform=portable' exec sh "${top_srcdir:-.}/tests/mpi-run.sh" \
    "$b/examples/mpi-allreduce"

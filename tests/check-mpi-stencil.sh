#!/bin/sh
# examples/mpi-stencil under mpirun -np 2 and 3 (tests/mpi-run.sh), halos overlapped and
# exchanged before each step: it checks its grid against the host, bit for bit.
set -u
b=${top_builddir:-.}
[ -x "$b/examples/mpi-stencil" ] || { echo "FAIL: examples/mpi-stencil not built"; exit 99; }
sh "${top_srcdir:-.}/tests/mpi-run.sh" "$b/examples/mpi-stencil" --size 67 61 --steps 7 || exit
exec sh "${top_srcdir:-.}/tests/mpi-run.sh" "$b/examples/mpi-stencil" --size 40 90 --steps 5 \
    --before

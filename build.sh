#!/bin/sh
# clfleet Quick start, on a fresh Debian/Ubuntu machine:
#   ./build.sh demo   install what is missing, build, install into _build/install (with the
#                     API reference when doxygen is there), run the demo on the default
#                     devices, print how to build against the install
#   ./build.sh test   install what is missing, build, run `make check` and `make distcheck`
# Everything is built in _build/ (installed to _build/install); the OpenCL
# kernel caches live in _build/.cache, nothing is written to $HOME.
set -eu

mode=${1:-demo}
case $mode in
demo | test) ;;
*)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
root=$(cd "$(dirname "$0")" && pwd)
build=$root/_build
jobs=$(nproc 2>/dev/null || echo 2)

# ---- system packages --------------------------------------------------------
pkgs="build-essential autoconf automake libtool pkgconf ocl-icd-opencl-dev opencl-headers
      pocl-opencl-icd check libclblast-dev libpng-dev openmpi-bin libopenmpi-dev"
if command -v dpkg-query >/dev/null 2>&1; then
    missing=
    for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        line="apt-get install -y --no-install-recommends$missing"
        if [ "$(id -u)" = 0 ]; then
            sudo=
        elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=sudo
        else
            echo "clfleet needs these packages; please run as root:" >&2
            echo "  apt-get update && $line" >&2
            exit 1
        fi
        echo "==> installing:$missing"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
        $sudo env DEBIAN_FRONTEND=noninteractive $line -q
    fi
    # doxygen builds the API reference (HTML, without graphviz). Optional: when it cannot be
    # installed (no root, no network, no such package) everything else still works, and the
    # closing lines of the demo say how to get the reference.
    if ! command -v doxygen >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ]; then
            sudo=
        elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=sudo
        else
            sudo=none
        fi
        if [ "$sudo" != none ]; then
            echo "==> installing doxygen (optional: the API reference)"
            # apt-get update only when the lists were not refreshed above.
            { [ -n "$missing" ] || $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q; } &&
                $sudo env DEBIAN_FRONTEND=noninteractive \
                    apt-get install -y --no-install-recommends -q doxygen ||
                echo "==> doxygen could not be installed: going on without the API reference" >&2
        fi
    fi
else
    echo "==> not a Debian system: make sure these are installed: $pkgs" >&2
fi

# ---- configure and build ----------------------------------------------------
cd "$root"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
    echo "==> autoreconf"
    autoreconf -fi
fi
mkdir -p "$build"
cd "$build"
flags="--prefix=$build/install"
[ "$mode" = test ] && flags="$flags --enable-werror"
# The tests include the MPI layer's: on Debian it was installed above, so insist on it
# (configure then fails instead of leaving the MPI tests out).
[ "$mode" = test ] && command -v dpkg-query >/dev/null 2>&1 && flags="$flags --with-mpi=yes"
# configure looks for doxygen: run it again when doxygen came or went since.
doxygen=$(command -v doxygen 2>/dev/null || echo none)
if [ ! -f Makefile ] || [ "$(cat .configured 2>/dev/null)" != "$flags doxygen=$doxygen" ]; then
    echo "==> configure $flags"
    "$root/configure" $flags
    echo "$flags doxygen=$doxygen" > .configured
fi
echo "==> make -j$jobs"
make -j"$jobs"

export POCL_CACHE_DIR="$build/.cache/pocl"
export CLFLEET_CACHE_DIR="$build/.cache/clfleet"

if [ "$mode" = demo ]; then
    echo "==> make install (into $build/install)"
    make install >/dev/null
    # The API reference (HTML) next to the README and the guide, when doxygen is there.
    reference="needs doxygen: apt-get install doxygen, then $0 demo again"
    if [ "$doxygen" != none ]; then
        echo "==> make install-html (the API reference)"
        if make install-html >/dev/null &&
            [ -f "$build/install/share/doc/clfleet/html/index.html" ]; then
            reference="$build/install/share/doc/clfleet/html/index.html"
        else
            reference="not built: doxygen failed (make install-html in $build says why)"
        fi
    fi
    echo "==> clfleet-info"
    ./tools/clfleet-info
    echo "==> demo"
    ./examples/demo
    # What a user needs to build against the installed library, and what to try next.
    inst=$build/install
    cat <<EOF

==> clfleet is installed in $inst. To build and run programs against it:
  export PKG_CONFIG_PATH="$inst/lib/pkgconfig:\${PKG_CONFIG_PATH:-}"
  export LD_LIBRARY_PATH="$inst/lib:\${LD_LIBRARY_PATH:-}" PATH="$inst/bin:\$PATH"
Then try:
  clfleet-info                            # every device; * marks the default fleet
  clfleet-bench balance --quick           # every load-balancing strategy, in seconds
  cc -std=c11 -o vector-add examples/vector-add.c \$(pkg-config --cflags --libs clfleet OpenCL) && ./vector-add
The API reference: $reference
EOF
    exit 0
fi

echo "==> make check"
if ! make -j"$jobs" check; then
    cat test-suite.log 2>/dev/null || true
    exit 1
fi
echo "==> make distcheck"
make -j"$jobs" distcheck

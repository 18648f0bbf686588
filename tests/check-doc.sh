#!/bin/sh
# The manual pages render without warnings (groff, else man, else they are at least
# there), and with doxygen the public headers document every symbol and member: doxygen
# runs with WARN_AS_ERROR=YES (skipped, and said, without doxygen).
set -u
src=${top_srcdir:-.}
b=${top_builddir:-.}
tmp=${TMPDIR:-/tmp}/clf-doc.$$
trap 'rm -rf "$tmp" "$tmp".*' EXIT

for page in "$src/doc/clfleet-info.1" "$src/doc/clfleet-bench.1"; do
    [ -s "$page" ] || { echo "FAIL: $page missing"; exit 1; }
    if command -v groff > /dev/null 2>&1; then
        LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -P-cbou "$page" > "$tmp.txt" 2> "$tmp.err" &&
            [ ! -s "$tmp.err" ] || { cat "$tmp.err"; echo "FAIL: groff warns about $page"; exit 1; }
        how=groff
    elif command -v man > /dev/null 2>&1; then
        MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$page" 2> /dev/null | col -b > "$tmp.txt"
        [ -s "$tmp.txt" ] || { echo "FAIL: man -l $page"; exit 1; }
        how="man -l"
    else
        cp "$page" "$tmp.txt"
        how="neither groff nor man: only read"
    fi
    for section in NAME SYNOPSIS OPTIONS 'EXIT STATUS'; do
        grep -q "^$section" "$tmp.txt" || { echo "FAIL: $page has no $section"; exit 1; }
    done
done

doxy="skipped (no doxygen)"
if [ -n "${DOXYGEN:-}" ]; then
    mkdir -p "$tmp"
    CLF_DOXYGEN_OUT=$tmp CLF_DOXYGEN_WARN_AS_ERROR=YES $DOXYGEN "$b/doc/Doxyfile" 2> "$tmp.dox"
    rc=$?
    if [ $rc -ne 0 ] || [ -s "$tmp.dox" ]; then
        cat "$tmp.dox"
        echo "FAIL: doxygen warns about the public headers (exit $rc)"
        exit 1
    fi
    [ -f "$tmp/html/index.html" ] && [ -f "$tmp/man/man3/clfleet.h.3" ] ||
        { ls -R "$tmp" | head -20; echo "FAIL: doxygen wrote no HTML or man3 pages"; exit 1; }
    doxy="doxygen clean, HTML and man3 written"
fi
echo "PASS: manual pages ($how); $doxy"

#!/bin/sh
# tools/layers.sh: the dependency picture of lib/, and the check that its folders are layers.
#
# For every file under lib/ (not lib/kernels.c, which the build generates) it finds the other
# lib files it depends on:
#   - an #include "..." of a header in another folder (includes inside a folder are free);
#   - a mention of a clf__ function defined in another .c file: a call, or the name taken as
#     a function pointer. A definition is a line that starts at column 0 with a lowercase
#     letter (the return type), names clf__NAME( before any other parenthesis or "=", and
#     does not end with ";". Comments and string literals are removed first (by
#     tools/strip-c.awk), so a comment that names a function is no dependency. Headers
#     count only by their includes (their prototypes name functions that the .c files
#     define).
# It prints the file -> file edges (with the names that cause them), the folder -> folder
# summary, every circle (a strongly connected component of more than one file), and every
# edge that goes up or sideways in the layer table below (or touches a file in no layer).
# Last it checks the files' shape: each file opens with a comment (what it holds), and no .c
# file has more than 800 lines (split it by concept); .c files under 200 lines are listed,
# as candidates to join a neighbour, without failing.
# Exit status: 0 with no circle, no bad edge and no misshapen file, 1 otherwise, 99 on a
# usage error.
#
# Usage: tools/layers.sh [top_srcdir]   (default: $top_srcdir, else .)
# POSIX sh, find, sed, awk, sort; nothing to build.
set -u
top=${1:-${top_srcdir:-.}}
[ -d "$top/lib" ] || { echo "layers.sh: no $top/lib" >&2; exit 99; }
strip=$(dirname "$0")/strip-c.awk
[ -f "$strip" ] || { echo "layers.sh: no $strip" >&2; exit 99; }

# The layers, lowest first: a folder may use folders with a lower rank only. Folders on the
# same rank (coll, flow) may not use each other (sideways). fleet/ (creation and teardown) is
# an ordinary layer above xfer: the layers above it keep their state in the fleet's registry
# (core/device.c) with its finalizers, so the teardown calls none of them by name. mpi/ is
# libclfleet-mpi, on top of everything (it uses the public API only).
LAYERS='
1 util
2 plan
3 observe
4 core
5 xfer
6 fleet
7 exec
8 coll
8 flow
9 blas
9 data
10 graph
11 mpi
'

tmp=${TMPDIR:-/tmp}/clf-layers.$$
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/clean" || exit 99

(cd "$top" && find lib -name '*.[ch]' ! -path lib/kernels.c | LC_ALL=C sort) > "$tmp/files"

# Each file without comments and string or character literals, line numbers kept.
while read -r f; do
    mkdir -p "$tmp/clean/$(dirname "$f")"
    awk -f "$strip" "$top/$f" > "$tmp/clean/$f"
done < "$tmp/files"

# Definitions: "name file".
while read -r f; do
    case $f in *.c) ;; *) continue ;; esac
    awk -v f="$f" '
    /^[a-z]/ && !/;[ \t]*$/ {
        if (match($0, /clf_[a-z0-9_]*\(/)) {
            pre = substr($0, 1, RSTART - 1)
            if (pre !~ /[(=]/) print substr($0, RSTART, RLENGTH - 1), f
        }
    }' "$tmp/clean/$f"
done < "$tmp/files" | LC_ALL=C sort -u > "$tmp/defs"

# Edges: "from to why".
while read -r f; do
    # Includes of another folder's header (resolved next to the file, then from lib/).
    sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$top/$f" | while read -r h; do
        d=$(dirname "$f")
        if [ -f "$top/$d/$h" ]; then t="$d/$h"; elif [ -f "$top/lib/$h" ]; then t="lib/$h"; else continue; fi
        t=$(printf '%s\n' "$t" | sed -e 's|/\./|/|g' -e ':a' -e 's|[^/]*/\.\./||' -e 'ta')
        [ "$(dirname "$t")" = "$d" ] || echo "$f $t #include"
    done
    case $f in *.c) ;; *) continue ;; esac
    # Mentions of functions another file defines.
    grep -o 'clf_[a-z0-9_]*' "$tmp/clean/$f" | LC_ALL=C sort -u |
        awk -v f="$f" 'NR == FNR { def[$1] = def[$1] " " $2; if ($2 == f) own[$1] = 1; next }
                       ($1 in def) && !($1 in own) {
                           n = split(def[$1], t, " ")
                           for (i = 1; i <= n; i++) print f, t[i], $1
                       }' "$tmp/defs" -
done < "$tmp/files" > "$tmp/edges"

printf '%s\n' "$LAYERS" | awk 'NF == 2' > "$tmp/layers"

awk -v tmpd="$tmp" '
function folder(p,   a, n) {
    n = split(p, a, "/")
    return n >= 3 ? a[2] : "(lib)"
}
FILENAME ~ /layers$/ { rank[$2] = $1; next }
{
    k = $1 SUBSEP $2
    if (!(k in why)) { why[k] = $3; order[++ne] = k } else why[k] = why[k] " " $3
    if (!($1 in id)) { id[$1] = ++nn; name[nn] = $1 }
    if (!($2 in id)) { id[$2] = ++nn; name[nn] = $2 }
}
END {
    print "== edges: file -> file (what causes them)"
    for (e = 1; e <= ne; e++) {
        split(order[e], p, SUBSEP)
        print "  " p[1] " -> " p[2] "  (" why[order[e]] ")"
        r[id[p[1]], id[p[2]]] = 1
        fk = folder(p[1]) " -> " folder(p[2])
        if (folder(p[1]) != folder(p[2])) { if (!(fk in fe)) forder[++nf] = fk; fe[fk]++ }
    }
    print "== folder -> folder (file edges)"
    for (i = 1; i <= nf; i++) print "  " forder[i] "  " fe[forder[i]]

    # Reachability (Floyd-Warshall: a few dozen files), then mutually reachable groups.
    for (k = 1; k <= nn; k++)
        for (i = 1; i <= nn; i++)
            if ((i, k) in r)
                for (j = 1; j <= nn; j++)
                    if ((k, j) in r) r[i, j] = 1
    print "== circles (files that depend on each other, directly or not)"
    nc = 0
    for (i = 1; i <= nn; i++) {
        if (i in done) continue
        comp = name[i]; cnt = 1
        for (j = i + 1; j <= nn; j++)
            if (((i, j) in r) && ((j, i) in r)) { comp = comp " " name[j]; cnt++; done[j] = 1 }
        if (cnt > 1) { nc++; print "  circle " nc " (" cnt " files): " comp }
    }
    if (nc == 0) print "  none"

    print "== bad edges (up, sideways, or outside the layer folders)"
    nb = 0
    for (e = 1; e <= ne; e++) {
        split(order[e], p, SUBSEP)
        a = folder(p[1]); b = folder(p[2])
        if (a == b && (a in rank)) continue
        if (!(a in rank) || !(b in rank))
            kind = "NO LAYER"
        else if (rank[b] > rank[a])
            kind = "UP"
        else if (rank[b] == rank[a])
            kind = "SIDEWAYS"
        else
            continue
        nb++
        print "  " kind ": " p[1] " (" a ") -> " p[2] " (" b ")  (" why[order[e]] ")"
    }
    if (nb == 0) print "  none"
    printf "== %d files with edges, %d edges, %d circles, %d bad edges\n", nn, ne, nc, nb
    exit (nc > 0 || nb > 0) ? 1 : 0
}' "$tmp/layers" "$tmp/edges"
rc=$?

echo "== file shapes (a first comment; .c files of at most 800 lines, 200 or more preferred)"
nbad=0
while read -r f; do
    if ! head -n 1 "$top/$f" | grep -q '^/\*'; then
        echo "  NO FIRST COMMENT: $f"
        nbad=$((nbad + 1))
    fi
    case $f in
    *.c)
        n=$(wc -l < "$top/$f")
        if [ "$n" -gt 800 ]; then
            echo "  TOO LONG: $f ($n lines)"
            nbad=$((nbad + 1))
        elif [ "$n" -lt 200 ]; then
            echo "  small: $f ($n lines)"
        fi
        ;;
    esac
done < "$tmp/files"
echo "== $nbad misshapen files"
[ "$rc" -eq 0 ] && [ "$nbad" -eq 0 ]

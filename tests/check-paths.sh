#!/bin/sh
# No stale reference in the documentation: every repository path README.md and doc/*.md
# name must exist in the source tree, and every relative link must lead to a file (and,
# with a #fragment, to a heading of it). Run by `make check` (from a VPATH build and in
# distcheck, where the tree is the tarball's: a named file missing from EXTRA_DIST fails
# too). By hand: sh tests/check-paths.sh [SOURCE_TREE]
#
# What counts as a path (in `code spans`, in fenced code blocks, and as link targets):
#   - a token under one of the tree's folders (lib/ include/ examples/ tools/ tests/ doc/
#     cl/ build-aux/ m4/ .ci/), e.g. `lib/core/cmd.c`, `tests/fuzz/run.sh`, `doc/`;
#   - a file of lib/ named from its layer, e.g. `core/cmd.c` (lib/core/cmd.c);
#   - a top-level Markdown file, e.g. `README.md`.
# A program is named by its source: `examples/blur` exists when examples/blur.c does.
# Placeholders and globs (<target>, *, $VAR, %p) and build outputs (_build/...) are not
# paths of the tree and are left alone.
set -u
src=${1:-${top_srcdir:-$(dirname "$0")/..}}
[ -f "$src/README.md" ] || { echo "FAIL: no README.md in $src"; exit 1; }

# Headings as GitHub makes their anchors: lower case, punctuation dropped, spaces to '-'.
anchors() {
    awk '/^```/ { f = !f; next } !f && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
        LC_ALL=C tr 'A-Z' 'a-z' | LC_ALL=C sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# FILE<TAB>LINE<TAB>KIND<TAB>TOKEN for every candidate: KIND "link" (a Markdown link's
# target, as written) or "path" (a code span's or fenced block's path-shaped word, as a
# path relative to the source tree).
candidates() {
    awk -v layers='^(util|plan|observe|core|xfer|exec|coll|data|flow|blas|graph|fleet|mpi)/' '
    function emit(kind, tok) { printf "%s\t%d\t%s\t%s\n", FILENAME, FNR, kind, tok }
    function words(text,   n, w, i, t) {
        n = split(text, w, /[ \t]+/)
        for (i = 1; i <= n; i++) {
            t = w[i]
            sub(/^[("\047<\[]+/, "", t)
            sub(/[)"\047,.;:>\]]+$/, "", t)
            if (t == "" || t ~ /[<>*?$%{}|=]/) continue
            sub(/^\.\//, "", t)
            if (t ~ /^(lib|include|examples|tools|tests|doc|cl|build-aux|m4|\.ci)\//)
                emit("path", t)
            else if (t ~ /^[a-z]+\/[^\/]+\.[ch]$/ && t ~ layers)
                emit("path", "lib/" t)
            else if (t !~ /\// && t ~ /\.md$/)
                emit("path", t)
        }
    }
    /^```/ { fence = !fence; next }
    fence { words($0); next }
    {
        # Links, [text](target); then code spans, text between pairs of backticks.
        rest = $0
        while (match(rest, /\]\([^) ]+\)/)) {
            emit("link", substr(rest, RSTART + 2, RLENGTH - 3))
            rest = substr(rest, RSTART + RLENGTH)
        }
        n = split($0, part, "`")
        for (i = 2; i <= n; i += 2) words(part[i])
    }' "$@"
}

tmp=${TMPDIR:-/tmp}/clf-paths.$$
trap 'rm -f "$tmp"' EXIT
candidates "$src/README.md" "$src"/doc/*.md > "$tmp" ||
    { echo "FAIL: cannot read README.md and doc/*.md"; exit 1; }

bad=0
checked=0
while IFS='	' read -r file line kind tok; do
    where=${file#"$src"/}
    checked=$((checked + 1))
    if [ "$kind" = path ]; then
        [ -e "$src/$tok" ] || [ -e "$src/$tok.c" ] || {
            echo "$where:$line: '$tok' does not exist in the source tree"
            bad=$((bad + 1))
        }
        continue
    fi
    case $tok in
    *://* | mailto:*)
        checked=$((checked - 1))
        continue
        ;;
    esac
    target=${tok%%#*}
    frag=
    [ "$target" != "$tok" ] && frag=${tok#*#}
    path=$file
    [ -n "$target" ] && path=$(dirname "$file")/$target
    if [ ! -e "$path" ]; then
        echo "$where:$line: link to '$tok': no such file"
        bad=$((bad + 1))
    elif [ -n "$frag" ] && ! { [ -f "$path" ] && anchors "$path" | grep -qx -- "$frag"; }; then
        echo "$where:$line: link to '$tok': no heading with that anchor in $target"
        bad=$((bad + 1))
    fi
done < "$tmp"

if [ "$bad" -ne 0 ]; then
    echo "FAIL: $bad stale reference(s) in README.md and doc/ ($checked checked)"
    exit 1
fi
echo "PASS: $checked paths and links in README.md and doc/*.md exist"

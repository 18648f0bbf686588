# tools/calls.awk: the calls of a C file (comments and strings already removed by
# tools/strip-c.awk) that match a pattern, for tools/cmdpath.sh and tools/threads.sh.
#
# Variables: f (the file's path, as in allowed), re (an awk regular expression for the
# called name), allowed (newline-separated "file:call" pairs, "file:*" for every call),
# where (the message's tail: where such calls belong).
# Prints "ok FILE:CALL" for an allowed call, "FILE:LINE: CALL outside WHERE" for any other.
BEGIN {
    n = split(allowed, a, "\n")
    for (i = 1; i <= n; i++)
        if (a[i] != "")
            ok[a[i]] = 1
    pat = "(" re ")[ \t]*\\("
}
{
    rest = $0
    while (match(rest, pat)) {
        call = substr(rest, RSTART, RLENGTH)
        sub(/[ \t]*\($/, "", call)
        pre = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
        rest = substr(rest, RSTART + RLENGTH)
        if (pre ~ /[A-Za-z0-9_]/)
            continue # part of a longer name
        if ((f ":*") in ok || (f ":" call) in ok)
            print "ok " f ":" call
        else
            printf "%s:%d: %s outside %s\n", f, NR, call, where
    }
}

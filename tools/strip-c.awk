# tools/strip-c.awk: C source with its comments removed and its string and character literals
# emptied ("..." becomes "", '.' becomes ''), one output line per input line so that line
# numbers still hold. Used by tools/layers.sh and tools/cmdpath.sh, so that a comment or a
# string that names a function is no call. POSIX awk: awk -f tools/strip-c.awk FILE.
{
    out = ""; s = $0; n = length(s); i = 1
    while (i <= n) {
        c = substr(s, i, 1); c2 = substr(s, i, 2)
        if (incom) {
            if (c2 == "*/") { incom = 0; i += 2 } else i++
            continue
        }
        if (c2 == "/*") { incom = 1; i += 2; continue }
        if (c2 == "//") break
        if (c == "\"" || c == "\x27") {
            q = c; i++
            while (i <= n && substr(s, i, 1) != q) {
                if (substr(s, i, 1) == "\\") i++
                i++
            }
            i++; out = out q q; continue
        }
        out = out c; i++
    }
    print out
}

# Flatten JSON into "path value" lines (POSIX awk, no gawk extensions), so
# that command tests can read `--json` output without jq:
#   {"a":{"b":[1,2]},"c":"x"}  ->  a.b.0 1 / a.b.1 2 / c x
# Strings lose their quotes (escapes are kept as written); paths join object
# keys and array indexes with dots.
{ s = s $0 "\n" }
END {
    n = length(s); i = 1; depth = 0; expectkey = 0
    while (i <= n) {
        c = substr(s, i, 1)
        if (c == "{" || c == "[") {
            depth++; type[depth] = c; idx[depth] = 0; key[depth] = ""
            expectkey = (c == "{"); i++; continue
        }
        if (c == "}" || c == "]") { depth--; i++; continue }
        if (c == ",") {
            if (type[depth] == "{") expectkey = 1; else idx[depth]++
            i++; continue
        }
        if (c == ":" ) { expectkey = 0; i++; continue }
        if (c == " " || c == "\n" || c == "\t" || c == "\r") { i++; continue }
        if (c == "\"") {
            j = i + 1; tok = ""
            while (j <= n) {
                d = substr(s, j, 1)
                if (d == "\\") { tok = tok substr(s, j, 2); j += 2; continue }
                if (d == "\"") break
                tok = tok d; j++
            }
            i = j + 1
        } else {
            rest = substr(s, i)
            match(rest, /^[^],}\n ]+/)
            tok = substr(rest, 1, RLENGTH); i += RLENGTH
        }
        if (type[depth] == "{" && expectkey) { key[depth] = tok; continue }
        path = ""
        for (k = 1; k <= depth; k++)
            path = path (k > 1 ? "." : "") (type[k] == "{" ? key[k] : idx[k])
        print path, tok
    }
}

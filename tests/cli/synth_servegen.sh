#!/bin/sh
# synth --servegen on a small folder in ServeGen's layout that this test
# writes (three clients; Gamma, Weibull and plain Poisson windows; a
# reasoning ratio): the slice's rate follows the windows' rates (and
# --rate scales it), every length is one of its window's values, and the
# shares of values and the gaps' CV match the folder's, checked with awk.
set -eu
: "${LOADTRACE:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# within NAME GOT WANT TOLERANCE(relative)
within() {
    if awk -v g="$2" -v w="$3" -v t="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= t * w) }'; then
        echo "ok   $1: $2 (want $3 +- $4)"
    else
        fail "$1: got $2, want $3 +- $4"
    fi
}

rm -rf sg && mkdir -p sg/deepseek-r1
d=sg/deepseek-r1
printf '%s\n' '0,0,0,,0,0' '600,2.0,1.5,Gamma,0.4444444444,1.125' '1200,1.0,0.9,Weibull,1.1,0.96' \
    '1800,0,0,,0,0' >$d/chunk-0-trace.csv
printf '%s\n' '0,0,0,,0,0' '600,0.5,1,,0,0' '1200,3.0,2.0,Gamma,0.25,1.3333' '1800,1,1,Gamma,1,1' \
    >$d/chunk-1-trace.csv
printf '%s\n' '0,1,1,Gamma,1,1' '600,0,0,,0,0' '1200,0,0,,0,0' '1800,0,0,,0,0' >$d/chunk-7-trace.csv
cat >$d/chunk-0-dataset.json <<'JSON'
{"0": {"input_tokens": "{100: 0.5, 200: 0.5}", "output_tokens": "{10: 0.25, 30: 0.75}", "reason_ratio": "{0.0: 0.5, 0.5: 0.5}"},
 "1200": {"input_tokens": "{1000: 1.0}", "output_tokens": "{50: 1.0}", "reason_ratio": "{}"}}
JSON
cat >$d/chunk-1-dataset.json <<'JSON'
{"0": {"input_tokens": "{7: 0.2, 9: 0.8}", "output_tokens": "{3: 1.0}", "reason_ratio": "{0.9: 1.0}"}}
JSON
cat >$d/chunk-7-dataset.json <<'JSON'
{"0": {"input_tokens": "{5: 1.0}", "output_tokens": "{5: 1.0}", "reason_ratio": "{}"}}
JSON

"$LOADTRACE" synth --servegen $d --window 600 --duration 1200 --seed 3 -o sg.lt.zst 2>sg.err
cat sg.err
# one line per record: t(s) client in out reasoning
"$LOADTRACE" cat sg.lt.zst | awk 'NR > 1 {
    t = $0; sub(/.*"t":/, "", t); sub(/,.*/, "", t)
    c = $0; sub(/.*"client":/, "", c); sub(/[,}].*/, "", c)
    i = $0; sub(/.*"in":/, "", i); sub(/,.*/, "", i)
    o = $0; sub(/.*"out":/, "", o); sub(/[,}].*/, "", o)
    r = ($0 ~ /"reasoning":/) ? $0 : "\"reasoning\":-"; sub(/.*"reasoning":/, "", r); sub(/[,}].*/, "", r)
    print t / 1e6, c, i, o, r }' >sg.txt

# the rate of each client in each window is the folder's (CV 2 makes counts
# noisy: 15 %)
for cw in "0 0 1200" "0 1 600" "1 0 300" "1 1 1800"; do
    set -- $cw
    got=$(awk -v c="$1" -v w="$2" '$2 == c && int($1 / 600) == w { n++ } END { print n + 0 }' sg.txt)
    within "client $1, window $((600 + 600 * $2)) s: requests" "$got" "$3" 0.15
done
n=$(wc -l <sg.txt)
within "requests in the slice (3.25 req/s for 1200 s)" "$n" 3900 0.08
[ "$(awk '$2 == 7' sg.txt | wc -l)" -eq 0 ] && echo "ok   a client silent in the slice sends nothing" || fail "client 7 sent in a silent window"
awk '$1 < 0 || $1 >= 1200 { bad++ } END { exit bad > 0 }' sg.txt && echo "ok   every arrival inside the slice" || fail "arrivals outside [0, 1200) s"

# every length is one of its window's values (client 0 moves to its 1200 s
# dataset window halfway through the slice; an empty reason_ratio falls
# back to the window before)
bad=$(awk '{ t = $1 + 600 }
    $2 == 0 && t < 1200 && !(($3 == 100 || $3 == 200) && ($4 == 10 || $4 == 30) && ($5 == 0 || $5 == $4 / 2)) { b++ }
    $2 == 0 && t >= 1200 && !($3 == 1000 && $4 == 50 && ($5 == 0 || $5 == 25)) { b++ }
    $2 == 1 && !(($3 == 7 || $3 == 9) && $4 == 3 && $5 == 3) { b++ }
    END { print b + 0 }' sg.txt)
[ "$bad" -eq 0 ] && echo "ok   every length is one of its window's values" || fail "$bad records with lengths outside their window's distribution"
# and in the folder's shares
within "client 1: share of in = 9 (0.8)" "$(awk '$2 == 1 { n++; if ($3 == 9) k++ } END { print k / n }' sg.txt)" 0.8 0.06
within "client 0 (first window): share of out = 30 (0.75)" "$(awk '$2 == 0 && $1 < 600 { n++; if ($4 == 30) k++ } END { print k / n }' sg.txt)" 0.75 0.08
within "client 0: share with reasoning (0.5)" "$(awk '$2 == 0 { n++; if ($5 > 0) k++ } END { print k / n }' sg.txt)" 0.5 0.1
# the gaps' CV is the window's (Gamma with shape 0.25: CV 2)
cv=$(awk '$2 == 1 && $1 >= 600 { if (p != "") { g = $1 - p; s += g; q += g * g; n++ } p = $1 }
    END { m = s / n; print sqrt(q / n - m * m) / m }' sg.txt)
within "client 1, window 1200 s: gap CV (2.0)" "$cv" 2.0 0.25

# --rate scales every client alike: 13 req/s is 4 times the folder's 3.25
"$LOADTRACE" synth --servegen $d --window 600 --duration 1200 --rate 13 --seed 4 -o sg4.lt.zst 2>/dev/null
n4=$("$LOADTRACE" cat sg4.lt.zst | awk 'NR > 1' | wc -l)
within "--rate 13: requests" "$n4" 15600 0.06
# the same seed gives the same bytes
"$LOADTRACE" synth --servegen $d --window 600 --duration 1200 --seed 3 -o sg-again.lt.zst 2>/dev/null
cmp -s sg.lt.zst sg-again.lt.zst && echo "ok   the same seed gives the same trace" || fail "two runs with one seed differ"
# info sees the reasoning
"$LOADTRACE" info sg.lt.zst | grep -q '^  reasoning' && echo "ok   info shows reasoning tokens" || fail "info: no reasoning line"

# compare DIR TRACE: the trace against a fresh draw of its slice of the folder
st=0; "$LOADTRACE" compare --check $d sg.lt.zst >cmp.txt 2>&1 || st=$?
[ "$st" -eq 0 ] && grep -q 'overall: B is representative of A' cmp.txt &&
    echo "ok   compare: the trace is representative of its folder's windows" || fail "compare with its own folder: exit $st: $(cat cmp.txt)"
# a folder whose client 1 asks ten times longer prompts is not what the trace was drawn from
rm -rf sg/other && cp -r $d sg/other
sed 's/{7: 0.2, 9: 0.8}/{70: 0.2, 90: 0.8}/' $d/chunk-1-dataset.json >sg/other/chunk-1-dataset.json
st=0; "$LOADTRACE" compare --check sg/other sg.lt.zst >cmp2.txt 2>&1 || st=$?
[ "$st" -eq 3 ] && grep -q '^input length.*different' cmp2.txt &&
    echo "ok   compare: other input lengths are found different (exit 3)" || fail "compare with another folder: exit $st: $(cat cmp2.txt)"
"$LOADTRACE" synth -q --rate 5 --duration 60s --in fixed:5 --out fixed:5 -o plain.lt.zst
st=0; "$LOADTRACE" compare $d plain.lt.zst 2>err.txt >/dev/null || st=$?
[ "$st" -eq 2 ] && grep -q 'not made by synth --servegen' err.txt &&
    echo "ok   compare: a trace not from the folder is a usage error" || fail "compare with a plain trace: exit $st: $(cat err.txt)"

# a slice with no traffic, and a folder that is not one, are usage errors
if "$LOADTRACE" synth --servegen $d --window 2400 --duration 600 -o x.lt.zst 2>err.txt; then fail "silent slice accepted"; fi
grep -q 'no traffic from 2400 s to 3000 s' err.txt && echo "ok   silent slice: $(cat err.txt)" || fail "silent slice: $(cat err.txt)"
if "$LOADTRACE" synth --servegen sg -o x.lt.zst 2>err.txt; then fail "a folder without chunks accepted"; fi
grep -q 'no chunk-N-trace.csv here' err.txt && echo "ok   not a model folder: $(cat err.txt)" || fail "not a model folder: $(cat err.txt)"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }

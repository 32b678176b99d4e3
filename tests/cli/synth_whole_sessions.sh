#!/bin/sh
# synth --requests never cuts a session in half: a session that would pass
# the limit is not started. Each session of a 500-request trace has the
# same number of turns as in a much longer one with the same seed (whose
# sessions start the same way), and the count stays at most 500.
set -eu
: "${LOADTRACE:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
turns() { # session -> turns, one a line, sorted
    "$LOADTRACE" cat "$1" | sed -n 's/.*"session":\([0-9]*\),"turn":\([0-9]*\).*/\1 \2/p' |
        awk '{ if ($2 + 1 > n[$1]) n[$1] = $2 + 1 } END { for (s in n) print s, n[s] }' | sort -n
}
for turnspec in uniform:1,7 fixed:3; do
    "$LOADTRACE" synth -q --rate 20 --turns $turnspec --think 2s --in fixed:10 --out fixed:5 \
        --requests 500 --seed 9 -o small.lt.zst
    "$LOADTRACE" synth -q --rate 20 --turns $turnspec --think 2s --in fixed:10 --out fixed:5 \
        --requests 20000 --seed 9 -o big.lt.zst
    turns small.lt.zst >small.txt
    turns big.lt.zst >big.txt
    n=$("$LOADTRACE" cat small.lt.zst | awk 'NR > 1' | wc -l)
    [ "$n" -le 500 ] && [ "$n" -gt 450 ] && echo "ok   $turnspec: $n records (at most 500)" || fail "$turnspec: $n records"
    cut=$(awk 'NR == FNR { want[$1] = $2; next } want[$1] != $2 { c++ } END { print c + 0 }' big.txt small.txt)
    [ "$cut" -eq 0 ] && echo "ok   $turnspec: no session cut ($(wc -l <small.txt) sessions)" || fail "$turnspec: $cut sessions cut short"
    sum=$(awk '{ s += $2 } END { print s }' small.txt)
    [ "$sum" -eq "$n" ] || fail "$turnspec: turns add up to $sum, records $n"
done
[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }

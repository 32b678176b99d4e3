#!/bin/sh
# loadtrace demo, with a short budget: the sweep table has its four rows
# with every request Ok, the Azure slice is replayed, and every file the
# demo announces exists and is not empty.
set -u
. "$LT_SRC/tests/cli/lib.sh"
need_sample AzureLLMInferenceTrace_conv.csv
cd "$T" || exit 1
"$LOADTRACE" demo --out "$T/d" --tokens 64 --slice 5s --samples "$LT_SAMPLES" >out.txt 2>err.txt
expect_status 0 $? "demo"
for c in 1 4 16 32; do
    row=$(awk -v c="$c" -F'|' '$1 + 0 == c && NF >= 6 { print; exit }' out.txt)
    [ -n "$row" ] || { fail "no table row for C=$c"; continue; }
    ok=$(printf '%s\n' "$row" | awk -F'|' '{ gsub(/ /, "", $6); print $6 }')
    expect_eq "$c/$c" "$ok" "Ok count at C=$c"
done
expect_grep "Azure conversation trace" out.txt
expect_grep "Published" out.txt
n=0
for f in $(awk '/^Files written:/ { on = 1; next } on && /^  / { print $1 }' out.txt); do
    n=$((n + 1))
    [ -s "$f" ] || fail "announced file $f is missing or empty"
    case "$f" in *.png)
        for ext in svg dat gp; do
            [ -s "${f%.png}.$ext" ] || fail "${f%.png}.$ext is missing or empty"
        done ;;
    esac
done
[ "$n" -ge 6 ] || fail "only $n files announced"
expect_grep "<svg" "$T/d/sweep.html"

# No false alarm on the first screen: each level of the sweep is one wave
# of C requests (a batch, which holds no load through its tail), so no
# run is flagged, and each is said to be a batch of its C requests.
if grep -q "CHECK" out.txt err.txt; then fail "the demo cries wolf: $(grep CHECK out.txt err.txt)"; fi
if grep -q "CHECK" "$T/d/sweep.html" "$T/d/azure.html"; then fail "a CHECK in the demo's HTML"; fi
for c in 4 16 32; do
    expect_grep "self-check: a batch of $c requests" out.txt
done
if grep -q "e+0[0-9] req/s" out.txt; then fail "a rate of a batch's send span: $(grep 'e+0' out.txt)"; fi

# Stopped by SIGTERM during the sweep, the demo exits 128 + 15, as replay
# does (docs/cli.md), once it has said it started replaying.
"$LOADTRACE" demo --out "$T/stopped" --tokens 64 --slice 5s --samples "$LT_SAMPLES" \
    >stop.out 2>stop.err &
pid=$!
i=0
while ! grep -q '\[2/4\]' stop.err 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
wait $pid
expect_status 143 $? "demo stopped by SIGTERM"
finish

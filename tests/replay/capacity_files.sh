#!/bin/sh
# What a capacity search writes, watched with strace (every file it opens)
# and checked against the sim's own log:
#  1. the model's probes that choose the live probes' window are judged
#     from their results as they stream and open no file (they were
#     OUT.window.lt.zst, written and read back for each of up to 128);
#  2. the results file holds each live probe's requests, exactly those the
#     sim's log says it received, and analyze reads the answer from it;
#  3. the results file is opened once, for writing, and nothing else of
#     its name ever is (each probe was its own OUT.probeN.lt.zst, read
#     back into it at the end): each probe's verdict record follows its
#     results, and the answer record, last, says what the search printed.
# Nothing here reads a wall clock.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
command -v strace >/dev/null || fail "strace is needed (scripts/deps.sh installs it)"

# 400 requests at 20 req/s: a live probe replays a window of 139, chosen
# by the model among 64
"$L" synth --arrivals poisson --rate 20 --requests 400 --in fixed:40 --out fixed:8 --seed 3 \
    -q -o "$T/t.lt.zst" || fail "synth"
start_sim files
# LeakSanitizer cannot run under ptrace (an ASan build then exits 1 at the
# end): leaks are left to the other tests of the search, not this one.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    strace -f -qq -e trace=openat,creat -o "$T/opened" \
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --find-max rate --slo ttft=2s,tpot=200ms \
    --virtual-first --max-probes 2 -o "$T/out.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "a virtual-first search"
stop_sim
expect_grep "the one whose attainment in the model is nearest the whole trace's" "$T/err"
grep -q "out.lt.zst" "$T/opened" || fail "strace saw no file of the search opened"

# ---- 1. no file for the model's window probes ----
if grep -q 'window\.lt\.zst' "$T/opened"; then
    fail "the window's model probes opened files: $(grep -o '[^"]*window\.lt\.zst' "$T/opened" |
        sort -u | paste -sd' ')"
fi

# ---- 2. the live probes' requests, as the sim received them ----
live=$(runs "$T/out.lt.zst" | jq -r 'select(.engine == "live") | .run' | paste -sd' ')
[ -n "$live" ] || fail "no live probe in the file"
got=0
for r in $live; do
    n=$(results "$T/out.lt.zst" | jq -r --argjson r "$r" 'select(.run == $r) | .i' | wc -l)
    expect_eq 139 "$(echo $n)" "live probe (run $r) requests"
    got=$((got + n))
done
expect_eq "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "$got" "the sim's inference requests"
"$L" analyze --json "$T/out.lt.zst" >"$T/a.json" || fail "analyze"
expect_eq "$(echo $live | wc -w | tr -d ' ')" \
    "$(jq '[.capacity.probes[] | select(.engine == "live")] | length' "$T/a.json")" \
    "analyze's live probes"

# ---- 3. one results file, written once ----
expect_eq 1 "$(grep -c '"[^"]*/out\.lt\.zst", O_WRONLY' "$T/opened")" \
    "the results file opened for writing"
if grep -q 'out\.lt\.zst\.' "$T/opened"; then
    fail "files beside the results file were opened: $(grep -o '[^"]*out\.lt\.zst\.[^"]*' "$T/opened" |
        sort -u | paste -sd' ')"
fi
if grep '"[^"]*/out\.lt\.zst", O_RDONLY' "$T/opened"; then fail "the results file was read back"; fi
# every probe with a verdict: its verdict after its last result, one each
"$L" cat --no-header "$T/out.lt.zst" | jq -r '
    if .rec == "verdict" then "v \(.run)" elif .rec == "run" then "r \(.run)"
    elif .rec == null then "x \(.run)" else empty end' >"$T/order"
awk '$1 == "r" { runs[$2] = 1 } $1 == "x" { if ($2 in done) bad = "a result of run " $2 " after its verdict" }
     $1 == "v" { if ($2 in done) bad = "two verdicts for run " $2; done[$2] = 1; n++ }
     END { if (bad) { print bad; exit 1 } if (n < 1) { print "no verdict record"; exit 1 } }' \
    "$T/order" || fail "verdict records: $(cat "$T/order" | uniq -c | head -20)"
# the answer once, last, as the search printed it
expect_eq '"answer"' "$("$L" cat --no-header "$T/out.lt.zst" | tail -1 | jq .rec)" "the last value"
expect_eq 1 "$("$L" cat --no-header "$T/out.lt.zst" | jq -r 'select(.rec == "answer") | .end' |
    wc -l | tr -d ' ')" "answer records"
ans=$(sed -n 's/^capacity (rate, [^)]*, live): \([0-9.a-z]*\) req\/s meets it, \([0-9.a-z]*\) req\/s fails it.*/\1 \2/p' "$T/out")
expect_eq "$ans" "$("$L" cat --no-header "$T/out.lt.zst" | jq -r 'select(.rec == "answer") |
    "\(.max // "none") \(.fail // "none")"')" "the answer record's bracket"
# every probe is a run of the file: in analyze's table, or left out (the
# model's search of the whole trace, which chose the window) and said so
expect_eq "$(grep -c '^r ' "$T/order")" \
    "$(jq '(.capacity.probes | length) + (.capacity.left_out | length)' "$T/a.json")" \
    "the file's probes, in analyze's table or left out"
finish

#!/bin/sh
# A run checks itself: the load it delivered against what was asked, and
# the client's own CPU, printed at the end of every run; the delivered rate
# is the results' own (their sends), the sends are the sim's arrivals (its
# --log), and a run held back by --max-concurrency against a slow server is
# flagged. The check is also written at the run's end (its "check" record:
# docs/trace-format.md §2.8), and analyze shows it: a flagged run at the top
# of its text, JSON, CSV and HTML, a normal run unflagged; the recorded
# figures are checked against the results and the sim's log. No wall-clock
# assertion: a loaded machine changes the figures, not what they are
# computed from.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
chk() { "$L" cat --no-header "$1" | jq -c 'select(.rec == "check")'; }

"$L" synth --arrivals constant --rate 100 --requests 30 --in fixed:50 --out fixed:4 -q \
    -o "$T/t.lt.zst" || fail "synth"

# --- open loop: the printed rate is (n - 1) / (last sent - first sent)
start_sim fast --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 100 --arrivals poisson -o "$T/r.lt.zst" \
    --no-summary 2>"$T/r.err"
expect_status 0 $? "replay --rate 100"
stop_sim
line=$(grep "run 0: delivered" "$T/r.err") || fail "no self-check line: $(cat "$T/r.err")"
echo "$line" | grep -q "client CPU [0-9.]* % of a core, [0-9]* us a request, [0-9.]* us a token" ||
    fail "CPU figures: $line"
got=$(echo "$line" | sed 's/.*delivered \([0-9.]*\) req\/s of \([0-9.]*\) asked.*/\1 \2/')
want=$(results "$T/r.lt.zst" | jq -s -r '[.[] | select(.sent != null)] as $s |
    (($s | length) - 1) as $n | "\($n / ((($s | map(.sent) | max) - ($s | map(.sent) | min)) / 1e6))
    \($n / ((($s | map(.sched) | max) - ($s | map(.sched) | min)) / 1e6))"' | tr '\n' ' ')
set -- $got $want
awk -v a="$1" -v b="$3" -v c="$2" -v d="$4" 'BEGIN { exit !((a - b) / b < 0.005 && (b - a) / b < 0.005 &&
    (c - d) / d < 0.005 && (d - c) / d < 0.005) }' ||
    fail "delivered and asked rates: printed $1 $2, from the results $3 $4"
expect_eq "$(results "$T/r.lt.zst" | jq -s '[.[] | select(.sent != null)] | length')" \
    "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "every send reached the sim"

# --- closed loop: in flight against the level
start_sim cl
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --concurrency 2 -o "$T/c.lt.zst" --no-summary 2>"$T/c.err"
expect_status 0 $? "replay --concurrency 2"
stop_sim
grep -q "run 0: delivered [0-9.]* req/s, [0-9.]* in flight of 2 asked" "$T/c.err" ||
    fail "closed loop self-check: $(cat "$T/c.err")"
expect_eq 2 "$(streams "$SIM_LOG" | max_overlap)" "the sim saw 2 in flight at most"

# The level is judged where the plan could hold it: from the send that
# brought it to 2 to the last send; the mean in flight there, from the
# results' own send and end times, is what was recorded.
rec=$("$L" cat --no-header "$T/c.lt.zst" | jq -c 'select(.rec == "check")')
want=$(results "$T/c.lt.zst" | jq -s -r '(map(.sent) | sort) as $s | $s[1] as $h | ($s | max) as $l |
    (map(([.end, $l] | min) - ([.sent, $h] | max) | if . > 0 then . else 0 end) | add) / ($l - $h)')
awk -v a="$want" -v b="$(echo "$rec" | jq -r .inflight_got)" \
    'BEGIN { exit !(a > 0 && (a - b) / a < 1e-6 && (b - a) / a < 1e-6) }' ||
    fail "in flight while held: recorded $(echo "$rec" | jq -r .inflight_got), from the results $want"
expect_eq "false false 2" "$(echo "$rec" | jq -r '"\(.batch // false) \(.off // false) \(.inflight_asked)"')" \
    "a closed loop of 30 at level 2 is no batch, and held its level"

# --- a batch (no more requests than the level: the demo's sweep) holds
# nothing and is not judged on its load: said to be a batch, never flagged
# as off, no rate of its send span. The client's CPU is judged as in any
# run: a slow client (under ASan, 880 us a request against a sim that
# answers at once) did use 90 % of a core, and its delays are in the figures
start_sim batch --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --concurrency 4 --requests 4 -o "$T/b.lt.zst" \
    --no-summary 2>"$T/b.err"
expect_status 0 $? "replay a batch of 4"
stop_sim
expect_eq 4 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "the sim saw the batch of 4"
expect_grep "run 0: a batch of 4 requests, sent over [0-9.]* ms" "$T/b.err"
if grep -q "load delivered\|req/s" "$T/b.err"; then fail "a batch judged: $(cat "$T/b.err")"; fi
expect_eq "true false" "$(chk "$T/b.lt.zst" | jq -r '"\(.batch) \(.off // false)"')" "batch record"
"$L" analyze "$T/b.lt.zst" >"$T/b.txt" || fail "analyze batch"
if grep -q "load delivered" "$T/b.txt"; then fail "a batch flagged: $(cat "$T/b.txt")"; fi
expect_grep "self-check: a batch of 4 requests" "$T/b.txt"

# --- held back: 100 req/s asked, one at a time, each request at least
# 40 ms at the sim (the default profile's prefill step): at most 25 req/s
start_sim slow
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 100 --arrivals constant --max-concurrency 1 \
    --requests 10 -o "$T/s.lt.zst" --no-summary 2>"$T/s.err"
expect_status 0 $? "replay held back"
stop_sim
expect_grep "CHECK run 0: the load delivered is more than 5 % off what was asked" "$T/s.err"
expect_eq 10 "$(streams "$SIM_LOG" | jq -s '[.[] | select(.end_us - .arrival_us >= 40000)] | length')" \
    "every request took 40 ms or more at the sim"

# --- recorded: the held-back run's check record, against the results and
# the sim's log
expect_eq 1 "$(chk "$T/s.lt.zst" | wc -l | tr -d ' ')" "one check record for one run"
rec=$(chk "$T/s.lt.zst")
expect_eq "0 10 10 true" "$(echo "$rec" | jq -r '"\(.run) \(.requests) \(.sent) \(.off)"')" \
    "run, requests, sent, flag"
expect_eq 10 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "the sim saw the 10 sent"
expect_eq "$(results "$T/s.lt.zst" | jq -s '[.[] | .out] | add')" \
    "$(echo "$rec" | jq -r .out_tokens)" "output tokens"
# the rates: (n - 1) over the span of the sends and of the schedule
want=$(results "$T/s.lt.zst" | jq -s -r '(length - 1) as $n |
    "\($n / (((map(.sent) | max) - (map(.sent) | min)) / 1e6)) \($n / (((map(.sched) | max) - (map(.sched) | min)) / 1e6))"')
set -- $want $(echo "$rec" | jq -r '"\(.rate_got) \(.rate_asked)"')
awk -v a="$1" -v b="$3" -v c="$2" -v d="$4" 'BEGIN { exit !((a - b) / b < 1e-6 && (b - a) / b < 1e-6 &&
    (c - d) / d < 1e-6 && (d - c) / d < 1e-6) }' ||
    fail "recorded rates $3 $4, from the results $1 $2"
# 100 req/s asked of a one-slot client against >= 40 ms requests: under 25
awk -v g="$3" 'BEGIN { exit !(g < 25) }' || fail "delivered $3 req/s through one slot"
# the run's wall time covers the sim's span of the requests
span=$(streams "$SIM_LOG" | jq -s '((map(.end_us) | max) - (map(.arrival_us) | min)) / 1e6')
awk -v w="$(echo "$rec" | jq -r .wall_s)" -v s="$span" 'BEGIN { exit !(w >= s) }' ||
    fail "the run's wall time is shorter than the sim's span $span s"

# analyze: flagged at the top, in every format
"$L" analyze "$T/s.lt.zst" >"$T/s.txt" || fail "analyze text"
first=$(grep -n -m1 "^CHECK run 0 (rate 100/s): the load delivered is more than 5 % off" "$T/s.txt" |
    cut -d: -f1)
table=$(grep -n -m1 "Agg tok/s" "$T/s.txt" | cut -d: -f1)
[ -n "$first" ] && [ "$first" -lt "$table" ] || fail "no CHECK above the figures: $(cat "$T/s.txt")"
expect_grep "self-check: delivered [0-9.]* req/s of 100 asked .*<- CHECK" "$T/s.txt"
"$L" analyze --json "$T/s.lt.zst" >"$T/s.json" || fail "analyze json"
expect_eq "1 true 10" "$(jq -r '"\(.flagged | length) \(.runs[0].check.off) \(.runs[0].check.sent)"' \
    "$T/s.json")" "JSON flagged"
"$L" analyze --csv "$T/s.lt.zst" >"$T/s.csv" || fail "analyze csv"
col=$(head -1 "$T/s.csv" | tr ',' '\n' | grep -n '^check$' | cut -d: -f1)
expect_eq off "$(sed -n 2p "$T/s.csv" | cut -d, -f"$col")" "CSV check column"
"$L" analyze "$T/s.lt.zst" --html "$T/s.html" >/dev/null 2>&1 || fail "analyze html"
expect_grep "<p class=warn>CHECK run 0" "$T/s.html"

# --- a normal run is not flagged: 10 req/s, 20 requests, the fast
# profile answering each in a few ms (a lag of 90 ms in all would be needed
# to be 5 % off)
"$L" synth --arrivals constant --rate 10 --requests 20 --in fixed:50 --out fixed:4 -q \
    -o "$T/n.lt.zst" || fail "synth normal"
start_sim normal --profile fast
"$L" replay "$T/n.lt.zst" --target "$SIM_URL" -o "$T/n.lt.zst.out" --no-summary -q 2>"$T/n.err"
expect_status 0 $? "a normal run"
stop_sim
expect_eq "false 20" "$(chk "$T/n.lt.zst.out" | jq -r '"\(.off // false) \(.sent)"')" "not off"
expect_eq 20 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "the sim saw the 20"
"$L" analyze "$T/n.lt.zst.out" >"$T/n.txt" || fail "analyze normal"
if grep -q CHECK "$T/n.txt"; then fail "a normal run flagged: $(cat "$T/n.txt")"; fi
expect_grep "self-check: delivered" "$T/n.txt"
expect_eq 0 "$("$L" analyze --json "$T/n.lt.zst.out" | jq '.flagged | length')" "nothing flagged"

# --- a file without check records (as every file before them; a virtual
# replay has no client to check) reads as before: no check, nothing flagged
"$L" replay "$T/n.lt.zst" --target sim --virtual -o "$T/v.lt.zst" -q --no-summary ||
    fail "virtual replay"
expect_eq 0 "$("$L" cat --no-header "$T/v.lt.zst" | jq -c 'select(.rec == "check")' | wc -l |
    tr -d ' ')" "no check record in virtual time"
expect_eq "null 0" "$("$L" analyze --json "$T/v.lt.zst" | jq -r '"\(.runs[0].check) \(.flagged | length)"')" \
    "analyze of a file without checks"
if "$L" analyze "$T/v.lt.zst" | grep -q "self-check\|CHECK"; then fail "a self-check shown"; fi
finish

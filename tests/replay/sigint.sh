#!/bin/sh
# Ctrl-C (SIGINT) or SIGTERM in the middle of a run: replay records the
# requests in flight as aborted (with their partial timings) and the ones
# never sent as "unsent" without a send time (not errors: the run was
# stopped before their time), closes the file properly and
# exits 128 + the signal (130 after SIGINT, 143 after SIGTERM). Every request of the trace is accounted for, and the sim saw
# exactly the requests that were sent.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 20 --requests 60 --in fixed:64 --out fixed:200 -q \
    -o "$T/t.lt.zst" || fail "synth"

for sig in INT TERM; do
    want=130
    [ "$sig" = TERM ] && want=143
    start_sim "sig$sig"
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/r$sig.lt.zst" -q \
        --no-summary &
    RP=$!
    # the trace lasts 3 s and each answer takes over a second: once the sim
    # has a request, it is in flight and most of the trace is not yet sent
    # (the sim's count, not a sleep: a loaded machine may take over a
    # second to start replay)
    wait_sim_metric 1 vllm:num_requests_running vllm:num_requests_waiting
    kill -"$sig" $RP
    wait $RP
    expect_status "$want" $? "exit status after SIG$sig"
    stop_sim
    "$L" cat "$T/r$sig.lt.zst" > "$T/all$sig.jsonl"
    expect_status 0 $? "the results file after SIG$sig reads cleanly"
    expect_eq 60 "$(results "$T/r$sig.lt.zst" | jq -r .i | sort -u | wc -l)" "requests accounted for after SIG$sig"
    expect_eq 60 "$(results "$T/r$sig.lt.zst" | wc -l)" "results after SIG$sig"
    inflight=$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.err == "aborted" and .sent != null)] | length')
    unsent=$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.err == "unsent" and .sent == null)] | length')
    expect_eq 0 "$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.err == "aborted" and .sent == null)] | length')" \
        "unsent requests called aborted after SIG$sig"
    [ "$inflight" -ge 1 ] || fail "no request was in flight at SIG$sig"
    [ "$unsent" -ge 1 ] || fail "no request was left unsent at SIG$sig"
    # the sim saw exactly the requests that were sent
    expect_eq "$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.sent != null)] | length')" \
        "$(streams "$SIM_LOG" | wc -l)" "requests sent vs the sim's log after SIG$sig"
done
# --- what a stopped run says: the sim's fast profile, 5 s at 10 req/s,
# an idle gap of 40 s, then 5 s more (100 requests; the schedule's last
# leaves at 50 s). Drawn on a terminal (script(1) gives replay one): the
# time left is the schedule's, so through the gap it falls as the clock
# runs (elapsed + left stays 50 s), where the rate so far would grow it;
# stopped by SIGTERM in the gap, the last line says so and counts the
# unsent apart, and the summary, the check record and analyze say who
# stopped the run, when, and keep the unsent out of the errors.
awk 'BEGIN { for (i = 0; i < 50; i++) printf "{\"t\":%d,\"in\":16,\"out\":4}\n", i * 100000
             for (i = 0; i < 50; i++) printf "{\"t\":%d,\"in\":16,\"out\":4}\n", 45100000 + i * 100000 }' \
    >"$T/gap.jsonl"
"$L" import --from jsonl "$T/gap.jsonl" -o "$T/gap.lt.zst" -q || fail "import the gap trace"
span=$("$L" cat --no-header "$T/gap.lt.zst" | jq -s '((map(.t) | max) - (map(.t) | min)) / 1e6')
expect_eq 50 "$span" "the gap trace spans 50 s"
start_sim gap --profile fast
script -qfec "\"$L\" replay \"$T/gap.lt.zst\" --target \"$SIM_URL\" --no-calibrate -o \"$T/rgap.lt.zst\" \
    --no-server-metrics --no-summary --ui line" "$T/gap.err" >/dev/null </dev/null &
SP=$!
# the first 50 answered (the sim's count), then a few progress lines in the gap
wait_sim_metric 50 vllm:request_success_total
_i=0
while [ $_i -lt 100 ] && [ "$(tr '\r' '\n' <"$T/gap.err" | grep -c 'left in the schedule')" -lt 8 ]; do
    sleep 0.1
    _i=$((_i + 1))
done
RP=$(pgrep -P $SP -f "replay $T/gap.lt.zst" || pgrep -f "replay $T/gap.lt.zst" | head -1)
[ -n "$RP" ] && kill -TERM $RP
wait $SP
stop_sim
tr '\r' '\n' <"$T/gap.err" | sed 's/\x1b\[K//g' >"$T/gap.lines"
expect_grep "run 1 of 1: 100 requests, the schedule's last leaves at 50 s: the run takes about 50 s" "$T/gap.lines"
grep 'elapsed' "$T/gap.lines" | awk '/left in the schedule/ {
        for (i = 1; i <= NF; i++) { if ($i == "elapsed") el = $(i - 1); if ($i == "left") l = $(i - 1) }
        sub(/s$/, "", el); sub(/s$/, "", l); n++
        if (el + l < 49 || el + l > 51) bad = bad " " el "+" l
    } END { if (n < 8 || bad != "") { print "time left off the schedule (" n " lines):" bad; exit 1 } }' ||
    fail "$(grep elapsed "$T/gap.lines" | tail -3)"
last=$(grep '^\[run' "$T/gap.lines" | tail -1)
echo "$last" | grep -q "stopped at [0-9]*s: 50 of 100 sent, 50 never sent, 0 errors" ||
    fail "the last progress line: $last"
expect_grep "100 requests, 50 ok, 0 errors (0 aborted.*), 50 never sent" "$T/gap.lines"
expect_grep "run 0 stopped by SIGTERM at [0-9.]* s: 50 requests never sent" "$T/gap.lines"
expect_eq "50 50" "$(results "$T/rgap.lt.zst" | jq -s -r '"\([.[] | select(.sent != null)] | length) \([.[] | select(.err == "unsent" and .sent == null)] | length)"')" \
    "sent and unsent in the results"
expect_eq 50 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "the sim saw the 50 sent"
expect_eq '"SIGTERM" 50' "$("$L" cat --no-header "$T/rgap.lt.zst" | jq -r 'select(.rec == "check") | "\(.stopped_by | tojson) \(.unsent)"')" \
    "the check record says who stopped the run"
"$L" analyze "$T/rgap.lt.zst" >"$T/gap.txt" || fail "analyze the stopped run"
expect_grep "^STOPPED run 0 (speed x1): stopped by SIGTERM at [0-9.]* s: 50 requests never sent" "$T/gap.txt"
expect_grep "50 requests measured (0 warm-up excluded), 50 Ok" "$T/gap.txt"
expect_no_grep "^  errors:" "$T/gap.txt"
"$L" analyze "$T/rgap.lt.zst" --html "$T/gap.html" >/dev/null || fail "analyze --html the stopped run"
expect_grep "<p class=note>STOPPED run 0 (speed x1): stopped by SIGTERM" "$T/gap.html"
expect_eq '0 50 "SIGTERM"' "$("$L" analyze --json "$T/rgap.lt.zst" | jq -r '.runs[0] | "\(.errors | length) \(.check.unsent) \(.check.stopped_by | tojson)"')" \
    "analyze JSON: no errors, the unsent and the stop"

# a trace longer than replay's lookahead (plan/README.md "Streaming": it
# holds only a window of the trace's requests): the ones never sent are
# read in order to be recorded, each under its own record number
"$L" synth --arrivals constant --rate 20 --requests 10000 --in fixed:16 --out fixed:200 -q \
    -o "$T/tlong.lt.zst" || fail "synth"
start_sim long
"$L" replay "$T/tlong.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/rlong.lt.zst" -q \
    --no-summary &
RP=$!
wait_sim_metric 1 vllm:num_requests_running vllm:num_requests_waiting
kill -TERM $RP
wait $RP
expect_status 143 $? "exit status after SIGTERM, long trace"
stop_sim
results "$T/rlong.lt.zst" | jq -r .i | sort -n > "$T/long.i"
expect_eq 10000 "$(sort -u "$T/long.i" | wc -l)" "distinct requests accounted for, long trace"
expect_eq 10000 "$(wc -l < "$T/long.i")" "results, long trace"
expect_eq 9999 "$(tail -n 1 "$T/long.i")" "the last record's number, long trace"
# an open loop over the trace twice (every request loaded, seqs repeat
# the trace's requests): the unsent are recorded under their own record
# numbers too, each number twice
"$L" synth --arrivals constant --rate 20 --requests 1500 --in fixed:16 --out fixed:200 -q \
    -o "$T/tloop.lt.zst" || fail "synth"
start_sim loop
"$L" replay "$T/tloop.lt.zst" --target "$SIM_URL" --no-calibrate --arrivals constant --rate 20 --requests 3000 \
    -o "$T/rloop.lt.zst" -q --no-summary &
RP=$!
wait_sim_metric 1 vllm:num_requests_running vllm:num_requests_waiting
kill -TERM $RP
wait $RP
expect_status 143 $? "exit status after SIGTERM, open loop"
stop_sim
expect_eq 3000 "$(results "$T/rloop.lt.zst" | wc -l)" "results, open loop"
expect_eq "1500 2" "$(results "$T/rloop.lt.zst" | jq -r .i | sort -n | uniq -c | awk '{ n[$1]++ } END { for (c in n) print n[c], c }')" "each record twice, open loop"
# a crash (SIGKILL: nothing is cleaned up) loses at most the frame being
# filled: the file salvages to the results finished before it
"$L" synth --arrivals constant --rate 20 --requests 100 --in fixed:16 --out fixed:4 -q \
    -o "$T/t5.lt.zst" || fail "synth"
start_sim kill --profile fast
"$L" replay "$T/t5.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/rKILL.lt.zst" -q --no-summary &
RP=$!
# half the trace answered, as the sim counts it (not a sleep: see above)
wait_sim_metric 50 vllm:request_success_total
kill -KILL $RP
wait $RP 2>/dev/null
stop_sim
"$L" cat --salvage --no-header "$T/rKILL.lt.zst" 2>/dev/null | jq -c 'select(.rec == null)' > "$T/killed.jsonl"
n=$(wc -l < "$T/killed.jsonl")
# about 50 requests had finished; all but the last fraction of a second must be there
[ "$n" -ge 20 ] || fail "only $n results could be read back after SIGKILL"
expect_eq "$n" "$(jq -r .i "$T/killed.jsonl" | sort -u | wc -l)" "distinct results after SIGKILL"
expect_eq 0 "$(jq -s '[.[] | select(.err == "aborted")] | length' "$T/killed.jsonl")" "aborted results after SIGKILL (nobody could write them)"
finish

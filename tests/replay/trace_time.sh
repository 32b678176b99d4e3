#!/bin/sh
# Trace-time replay against an external sim: the schedule (each result's
# sched) is the trace's at --speed, --rate, --max-gap, --window and
# --duration, to the microsecond; the sim's arrivals (its --log) follow the
# replay's recorded send times; the sim's token counts are the ones
# recorded. No wall clock is asserted: a loaded machine delays sends
# (recorded as lag, sent - sched) and their delivery, not the schedule.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# 12 requests, one every 250 ms, 64 tokens in, 8 out
"$L" synth --arrivals constant --rate 4 --requests 12 --in fixed:64 --out fixed:8 -q \
    -o "$T/t.lt.zst" || fail "synth"

start_sim speed --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --speed 2 -o "$T/r.lt.zst" -q --no-summary
expect_status 0 $? "replay --speed 2"
stop_sim
streams "$SIM_LOG" > "$T/s.jsonl"
expect_eq 12 "$(wc -l < "$T/s.jsonl")" "requests the sim saw"
# sched k against the trace's (k * 250 ms) / 2; the arrivals follow the sends
results "$T/r.lt.zst" | jq -s -r 'sort_by(.i)[] | "\(.i * 125000) \(.sched)"' |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1) { print "off: " $0; bad = 1 } }
         END { exit bad || NR != 12 }' || fail "schedule at --speed 2 does not follow the trace"
follows_sends "$T/r.lt.zst" "$SIM_LOG" || fail "the sim's arrivals at --speed 2 do not follow the sends"
# tokens: the sim's counts are the recorded ones, request by request (in order of arrival)
jq -s -r 'sort_by(.arrival_us)[] | "\(.out) \(.prompt_tokens) \(.emitted)"' "$T/s.jsonl" > "$T/sim.txt"
results "$T/r.lt.zst" | jq -s -r 'sort_by(.sent)[] | "\(.out) \(.in) \([.chunks | range(1; length; 2) as $i | .[$i]] | add)"' > "$T/rep.txt"
expect_eq "$(cat "$T/sim.txt")" "$(cat "$T/rep.txt")" "out, in and chunk tokens vs the sim's log"
expect_eq 12 "$(results "$T/r.lt.zst" | jq -s '[.[] | select(.err == null and .status == 200)] | length')" "ok results"
expect_eq '"trace"' "$(runs "$T/r.lt.zst" | jq '.mode')" "run mode"

span() { # results -> last sched - first sched, us
    results "$1" | jq -s '(map(.sched) | max) - (map(.sched) | min)'
}

# --rate 10 rescales 11 gaps of 250 ms to a mean rate of 10/s: span 1.1 s
start_sim rate --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 10 -o "$T/r2.lt.zst" -q --no-summary
expect_status 0 $? "replay --rate"
stop_sim
expect_near 1100000 "$(span "$T/r2.lt.zst")" 1 "span at --rate 10 (us)"
follows_sends "$T/r2.lt.zst" "$SIM_LOG" || fail "the sim's arrivals at --rate 10 do not follow the sends"

# --max-gap 100ms: every 250 ms gap becomes 100 ms
start_sim gap --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --max-gap 100ms -o "$T/r3.lt.zst" -q --no-summary
expect_status 0 $? "replay --max-gap"
stop_sim
expect_near 1100000 "$(span "$T/r3.lt.zst")" 1 "span at --max-gap 100ms (us)"
follows_sends "$T/r3.lt.zst" "$SIM_LOG" || fail "the sim's arrivals at --max-gap do not follow the sends"

# --window 1s,2s keeps t = 1.0, 1.25, 1.5, 1.75 s (trace indexes 4-7);
# --speed 4 --duration 500ms keeps t / 4 < 500 ms: t < 2 s, 8 requests
start_sim win --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --window 1s,2s -o "$T/r4.lt.zst" -q --no-summary
expect_status 0 $? "replay --window"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --speed 4 --duration 500ms -o "$T/r5.lt.zst" -q --no-summary
expect_status 0 $? "replay --duration"
stop_sim
expect_eq "4 8" "$(results "$T/r4.lt.zst" | wc -l) $(results "$T/r5.lt.zst" | wc -l)" "results of --window and --duration"
expect_eq 12 "$(streams "$SIM_LOG" | wc -l)" "requests the sim saw for --window and --duration"
expect_eq "4 5 6 7" "$(results "$T/r4.lt.zst" | jq -r .i | sort -n | tr '\n' ' ' | sed 's/ $//')" "trace indexes of the window"
finish

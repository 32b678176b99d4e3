#!/bin/sh
# Trace-time replay against an external sim: the server-side arrival
# schedule (the sim's --log) follows the trace at --speed, --rate, --max-gap,
# --window and --duration; the sim's token counts are the ones recorded.
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
# arrival k - arrival 0 against the trace's (k * 250 ms) / 2, within 60 ms
jq -s -r 'sort_by(.arrival_us) | .[0].arrival_us as $a | to_entries[] |
          "\(.key * 125000) \(.value.arrival_us - $a)"' "$T/s.jsonl" |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 60000) { print "off: " $0; bad = 1 } }
         END { exit bad }' || fail "arrival schedule at --speed 2 does not follow the trace"
# tokens: the sim's counts are the recorded ones, request by request (in order of arrival)
jq -s -r 'sort_by(.arrival_us)[] | "\(.out) \(.prompt_tokens) \(.emitted)"' "$T/s.jsonl" > "$T/sim.txt"
results "$T/r.lt.zst" | jq -s -r 'sort_by(.sent)[] | "\(.out) \(.in) \([.chunks | range(1; length; 2) as $i | .[$i]] | add)"' > "$T/rep.txt"
expect_eq "$(cat "$T/sim.txt")" "$(cat "$T/rep.txt")" "out, in and chunk tokens vs the sim's log"
expect_eq 12 "$(results "$T/r.lt.zst" | jq -s '[.[] | select(.err == null and .status == 200)] | length')" "ok results"
expect_eq '"trace"' "$(runs "$T/r.lt.zst" | jq '.mode')" "run mode"

span() { # sim log -> last arrival - first arrival, us
    streams "$1" | jq -s '(map(.arrival_us) | max) - (map(.arrival_us) | min)'
}

# --rate 10 rescales 11 gaps of 250 ms to a mean rate of 10/s: span 1.1 s
start_sim rate --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 10 -o "$T/r2.lt.zst" -q --no-summary
expect_status 0 $? "replay --rate"
stop_sim
expect_near 1100000 "$(span "$SIM_LOG")" 80000 "span at --rate 10 (us)"

# --max-gap 100ms: every 250 ms gap becomes 100 ms
start_sim gap --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --max-gap 100ms -o "$T/r3.lt.zst" -q --no-summary
expect_status 0 $? "replay --max-gap"
stop_sim
expect_near 1100000 "$(span "$SIM_LOG")" 80000 "span at --max-gap 100ms (us)"

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

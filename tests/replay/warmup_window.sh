#!/bin/sh
# Warm-up is the first N requests a run sends, wherever the run starts in
# the trace: with --window the first request sent is not the trace's first,
# so a warm-up counted by trace position flagged none (or, past the window,
# all). Checked live against the sim's --log (the first N requests to
# arrive there, told apart by their max_tokens) and in virtual time against
# the trace itself (awk: the first N arrivals in the window).
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# 30 requests 100 ms apart, request i asks for i + 1 output tokens
awk 'BEGIN { for (i = 0; i < 30; i++) printf "{\"t\": %d, \"in\": 10, \"out\": %d}\n", i * 100000, i + 1 }' \
    >"$T/t.jsonl"
"$L" import --from jsonl "$T/t.jsonl" -o "$T/t.lt.zst" -q || fail "import"
# the window [1 s, 2 s) keeps requests 10-19; their first three by time
want=$(jq -r 'select(.t >= 1000000 and .t < 2000000) | .out' "$T/t.jsonl" | head -3 | sort -n | tr '\n' ' ')
expect_eq "11 12 13 " "$want" "the window's first three (jq over the trace)"

# --- live: the three that reached the sim first are the ones flagged
start_sim warm
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --window 1s,2s --warmup 3 -o "$T/l.lt.zst" -q --no-summary
expect_status 0 $? "live replay with --window and --warmup"
stop_sim
first=$(streams "$SIM_LOG" | jq -s -r 'sort_by(.arrival_us)[:3][] | .max_tokens' | sort -n | tr '\n' ' ')
expect_eq "$want" "$first" "the first three to reach the sim"
expect_eq 10 "$(results "$T/l.lt.zst" | jq -s length)" "results of the window"
expect_eq "$first" "$(results "$T/l.lt.zst" | jq -r 'select(.warmup == true) | .want_out' | sort -n | tr '\n' ' ')" \
    "live: the warm-up results are the first three sent"
"$L" analyze "$T/l.lt.zst" >"$T/l.txt" 2>&1
expect_grep "7 requests measured (3 warm-up excluded)" "$T/l.txt"

# --- virtual time: the same three
"$L" replay "$T/t.lt.zst" --target sim --virtual --window 1s,2s --warmup 3 -o "$T/v.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay with --window and --warmup"
expect_eq "$want" "$(results "$T/v.lt.zst" | jq -r 'select(.warmup == true) | .want_out' | sort -n | tr '\n' ' ')" \
    "virtual: the warm-up results are the window's first three"

# --- a closed loop: the first N sends of each level
"$L" replay "$T/t.lt.zst" --target sim --virtual --concurrency 1,2 --requests 6 --warmup 2 \
    -o "$T/c.lt.zst" -q --no-summary
expect_status 0 $? "virtual closed loop with --warmup"
expect_eq "0:1 0:2 1:1 1:2 " "$(results "$T/c.lt.zst" | jq -r 'select(.warmup == true) | "\(.run):\(.want_out)"' |
    sort | tr '\n' ' ')" "closed loop: the first two sent of each level"
finish

#!/bin/sh
# What every probe of a capacity search (replay --find-max) carries over,
# checked against the sim's --log (ground truth):
#  1. the target is asked its model (GET /v1/models) and its tokenizer
#     (POST /tokenize) once per search, not once per probe: as many
#     /tokenize calls as one plain replay makes, and one /v1/models;
#  2. the server's scrape records are kept in the search's results, one
#     per GET /metrics the sim logged, under each live probe's run, and
#     analyze shows server metrics for the probes; virtual probes carry
#     the model's values the same way;
#  3. --no-cancel reaches the virtual probes: a hand-built trace whose
#     records say where their clients left is cancelled exactly there
#     without it, and run to the end with it.
# Nothing here reads a wall clock.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
SLO=ttft=5s,tpot=500ms

# short, light requests: a probe lasts a few seconds against the sim
"$L" synth --arrivals poisson --rate 20 --requests 60 --in fixed:40 --out fixed:8 --seed 3 \
    -q -o "$T/t.lt.zst" || fail "synth"

# ---- 1. one discovery and one calibration per search ----
start_sim plain
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-server-metrics -q --no-summary \
    -o "$T/plain.lt.zst" || fail "a plain replay"
stop_sim
tok_plain=$(jq -r 'select(.path == "/tokenize") | .path' "$SIM_LOG" | wc -l | tr -d ' ')
[ "$tok_plain" -gt 0 ] || fail "a plain replay calibrated without /tokenize"

start_sim search
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --find-max rate --slo $SLO --max-probes 3 \
    -o "$T/s.lt.zst" -q >"$T/s.out" 2>"$T/s.err"
expect_status 0 $? "a live search"
stop_sim
live=$("$L" analyze --json "$T/s.lt.zst" | jq '[.capacity.probes[] | select(.engine == "live")] | length')
expect_eq 3 "$live" "three live probes"
expect_eq 1 "$(jq -r 'select(.path == "/v1/models") | .path' "$SIM_LOG" | wc -l | tr -d ' ')" \
    "GET /v1/models once per search"
expect_eq "$tok_plain" "$(jq -r 'select(.path == "/tokenize") | .path' "$SIM_LOG" | wc -l | tr -d ' ')" \
    "the prompt calibration once per search (as one replay)"
# every probe's prompts still came out at their lengths (the calibration held)
expect_eq 0 "$(jq -r 'select(.seq != null and .stream == true and .prompt_tokens != 40) | .seq' \
    "$SIM_LOG" | wc -l | tr -d ' ')" "prompt lengths in every probe"

# ---- 2. the server's scrape records are kept ----
scrapes=$("$L" cat --no-header "$T/s.lt.zst" | jq -c 'select(.rec == "scrape")' | wc -l | tr -d ' ')
gets=$(jq -r 'select(.path == "/metrics" and .status == 200) | .path' "$SIM_LOG" | wc -l | tr -d ' ')
[ "$gets" -gt 0 ] || fail "the sim was never scraped"
# each probe asks /metrics once more before its run, whether it serves
# Prometheus text; every other answer is a record
expect_eq "$gets" "$((scrapes + 3))" "one scrape record per GET /metrics the sim answered"
for run in 0 1 2; do
    n=$("$L" cat --no-header "$T/s.lt.zst" | jq -c "select(.rec == \"scrape\" and .run == $run)" |
        wc -l | tr -d ' ')
    [ "$n" -gt 0 ] || fail "probe $run has no scrape record"
done
"$L" analyze --json "$T/s.lt.zst" >"$T/s.json" || fail "analyze the search"
expect_eq 3 "$(jq '[.runs[] | select(.server != null)] | length' "$T/s.json")" \
    "analyze shows the server's side of every probe"

"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo $SLO --max-probes 2 \
    -o "$T/v.lt.zst" -q >/dev/null || fail "a virtual search"
expect_eq 2 "$("$L" analyze --json "$T/v.lt.zst" | jq '[.runs[] | select(.server != null)] | length')" \
    "virtual probes carry the model's values"

# ---- 3. --no-cancel reaches the virtual probes ----
# 60 requests; every fifth from the 10th leaves after 3 tokens of its 40
awk 'BEGIN { for (i = 0; i < 60; i++) {
    c = (i >= 10 && i % 5 == 0) ? ",\"cancel_tokens\":3" : ""
    printf "{\"t\":%d,\"in\":40,\"out\":40%s}\n", i * 100000, c } }' >"$T/c.jsonl"
"$L" import --from jsonl "$T/c.jsonl" -o "$T/c.lt.zst" -q || fail "import"
want=$(grep -c cancel_tokens "$T/c.jsonl")
cancelled() { # results file: cancelled requests per probe, joined by spaces
    "$L" analyze --json "$1" | jq -r '[.capacity.probes[].cancelled] | map(tostring) | join(" ")'
}
"$L" replay "$T/c.lt.zst" --target sim --virtual --find-max rate --slo $SLO --max-probes 2 \
    -o "$T/vc.lt.zst" -q >/dev/null || fail "a virtual search with cancellations"
expect_eq "$want $want" "$(cancelled "$T/vc.lt.zst")" "the trace's clients leave in each probe"
"$L" replay "$T/c.lt.zst" --target sim --virtual --find-max rate --slo $SLO --max-probes 2 \
    --no-cancel -o "$T/vn.lt.zst" -q >/dev/null || fail "a virtual search with --no-cancel"
expect_eq "0 0" "$(cancelled "$T/vn.lt.zst")" "--no-cancel: every request runs to its end"
expect_eq 0 "$("$L" cat --no-header "$T/vn.lt.zst" | jq -c 'select(.rec == null and .cancelled)' |
    wc -l | tr -d ' ')" "no result marked cancelled"
finish

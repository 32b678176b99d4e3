#!/bin/sh
# analyze says when a run overloaded its server: the server's waiting
# queue grew without bound while the requests arrived, or most of TTFT was
# spent waiting in it (Little's law: the queue's mean over the rate). 100
# req/s of 1000-token prompts against the sim's default profile (at
# --time-scale 10) is beyond it; 2 req/s is not. The quarters' means it
# prints are those of the results file's own scrape records (jq), the
# sim's queue as it served it.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 100 --requests 300 --in fixed:1000 --out fixed:50 -q \
    -o "$T/over.lt.zst" || fail "synth over"
start_sim over --time-scale 10
"$L" replay "$T/over.lt.zst" --target "$SIM_URL" -o "$T/over.r.lt.zst" -q --no-summary
expect_status 0 $? "replay the overload"
stop_sim
"$L" analyze "$T/over.r.lt.zst" >"$T/over.txt" || fail "analyze the overload"
line=$(grep -n -m1 '^OVERLOADED run 0 (speed x1): ' "$T/over.txt") || fail "no overload verdict: $(head -5 "$T/over.txt")"
table=$(grep -n -m1 "Agg tok/s" "$T/over.txt" | cut -d: -f1)
[ "${line%%:*}" -lt "$table" ] || fail "the verdict is not above the figures"
expect_grep "the server's waiting queue grew without bound" "$T/over.txt"
expect_grep "TTFT is mostly waiting" "$T/over.txt"
"$L" analyze "$T/over.r.lt.zst" --html "$T/over.html" >/dev/null || fail "analyze --html"
expect_grep "<p class=warn>OVERLOADED run 0" "$T/over.html"
# the quarters, from the scrapes between the first and the last send
want=$("$L" cat --no-header "$T/over.r.lt.zst" | jq -s -r '
    [.[] | select(.rec == null and .sent != null) | .sent] as $s | ($s | min) as $a | ($s | max) as $b |
    [.[] | select(.rec == "scrape" and .v.requests_waiting != null and .t >= $a and .t <= $b) |
        {k: ([((.t - $a) / ($b - $a) * 4 | floor), 3] | min), w: .v.requests_waiting}] |
    group_by(.k) | map((map(.w) | add) / length) | map(. * 1000 | round / 1000) | map(tostring) | join(" ")')
got=$(sed -n 's/.*grew without bound (\([^:]*\): means.*/\1/p' "$T/over.txt" | tr -d ',')
set -- $want
w4="$*"
set -- $got
awk -v w="$w4" -v g="$*" 'BEGIN { n = split(w, a, " "); m = split(g, b, " "); if (n != 4 || m != 4) exit 1
    for (i = 1; i <= 4; i++) { d = a[i] - b[i]; if (d < 0) d = -d; if (d > 0.005 * a[i] + 0.01) exit 1 } }' ||
    fail "quarter means printed '$got', from the scrapes '$w4'"

# --json gives the same verdict and the figures it is drawn from: the
# quarters as above, the text's sentence as its "why"
"$L" analyze "$T/over.r.lt.zst" --json >"$T/over.json" || fail "analyze --json the overload"
expect_eq "true true true" "$(jq -r '.runs[0].overload | "\(.overloaded) \(.queue_grew) \(.ttft_mostly_waiting)"' "$T/over.json")" \
    "JSON: overloaded, the queue grew, TTFT mostly waiting"
jgot=$(jq -r '.runs[0].overload.waiting_quarters | map(. * 1000 | round / 1000 | tostring) | join(" ")' "$T/over.json")
awk -v w="$w4" -v g="$jgot" 'BEGIN { n = split(w, a, " "); m = split(g, b, " "); if (n != 4 || m != 4) exit 1
    for (i = 1; i <= 4; i++) { d = a[i] - b[i]; if (d < 0) d = -d; if (d > 0.005 * a[i] + 0.01) exit 1 } }' ||
    fail "JSON quarter means '$jgot', from the scrapes '$w4'"
expect_eq "$(sed -n 's/^OVERLOADED run 0 (speed x1): //p' "$T/over.txt")" "$(jq -r '.runs[0].overload.why' "$T/over.json")" \
    "JSON's why is the text's verdict"
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
        "$LT_SRC/docs/analyze-schema.json" "$T/over.json" || fail "analyze JSON does not validate"
fi
# the wait is Little's law over the scrapes' queue: its mean over the sends' rate
jq -e '.runs[0].overload | (.wait_s - .waiting_mean / .rate_per_s | fabs) < 1e-9 * .wait_s and .wait_s > 0.5 * .ttft_mean_s' \
    "$T/over.json" >/dev/null || fail "JSON wait is not the queue over the rate: $(jq -c '.runs[0].overload' "$T/over.json")"
# and the sim's own log: requests arrived and not yet given a first token,
# at the middle of each quarter of the arrivals, grow (the queue the sim held)
grown=$(streams "$SIM_LOG" | jq -s -r 'map(select(.tokens_us[0] != null)) | . as $r |
    (map(.arrival_us) | min) as $a | (map(.arrival_us) | max) as $b |
    [range(0; 4) | ($a + ($b - $a) * (. + 0.5) / 4) as $t |
        [$r[] | select(.arrival_us <= $t and .tokens_us[0] > $t)] | length] | map(tostring) | join(" ")')
set -- $grown
[ $# = 4 ] && [ "$1" -lt "$2" ] && [ "$2" -lt "$3" ] && [ "$3" -lt "$4" ] ||
    fail "the sim's log does not show a growing queue: $grown"

# a light load: no verdict
"$L" synth --arrivals constant --rate 2 --requests 12 --in fixed:100 --out fixed:10 -q \
    -o "$T/light.lt.zst" || fail "synth light"
start_sim light --time-scale 10
"$L" replay "$T/light.lt.zst" --target "$SIM_URL" -o "$T/light.r.lt.zst" -q --no-summary
expect_status 0 $? "replay the light load"
stop_sim
"$L" analyze "$T/light.r.lt.zst" >"$T/light.txt" || fail "analyze the light load"
expect_no_grep "OVERLOADED" "$T/light.txt"
"$L" analyze "$T/light.r.lt.zst" --json >"$T/light.json" || fail "analyze --json the light load"
expect_eq "false null" "$(jq -r '.runs[0].overload | "\(.overloaded) \(.why)"' "$T/light.json")" \
    "JSON: the light load is not overloaded"
# a closed loop is not judged (its level bounds the queue): null
"$L" replay "$T/light.lt.zst" --target sim --virtual --concurrency 2 -o "$T/closed.lt.zst" -q --no-summary
"$L" analyze "$T/closed.lt.zst" --json >"$T/closed.json" || fail "analyze --json a closed loop"
expect_eq "null" "$(jq -c '.runs[0].overload' "$T/closed.json")" "JSON: a closed loop is not judged"
finish

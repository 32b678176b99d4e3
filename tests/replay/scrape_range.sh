#!/bin/sh
# Scraped values outside their range are flagged, not recorded as figures:
# a mapping file makes kv_cache_usage 7.5 x the sim's running requests
# (above 1 whenever one runs) and requests_waiting 1e300 x its prompt
# tokens (above any queue once one prompt came). Each sample keeps the raw
# series those come from (--server-metrics-keep), the ground truth: where
# the raw value makes the mapped one impossible, the sample has it under
# "bad" (the value as mapped) and not among its values; where it does not,
# among its values. replay warns with the count; analyze's figures hold no
# impossible value.
set -u
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
"$L" synth --arrivals poisson --rate 20 --requests 30 --in fixed:200 --out fixed:40 --seed 6 -q \
    -o "$T/t.lt.zst" || fail "synth"
printf 'kv_cache_usage = vllm:num_requests_running * 7.5\nrequests_waiting = vllm:prompt_tokens_total * 1e300\n' \
    >"$T/lie.map"
"$L" replay "$T/t.lt.zst" --target sim --sim-profile default --sim-time-scale 20 \
    --server-metrics-map "$T/lie.map" --metrics-interval 20ms \
    --server-metrics-keep '^vllm:(num_requests_running|prompt_tokens_total)$' \
    -o "$T/r.lt.zst" --no-summary 2>"$T/err"
expect_status 0 $? "replay with a lying mapping"
"$L" cat --no-header "$T/r.lt.zst" | jq -c 'select(.rec == "scrape" and .err == null)' >"$T/s.jsonl"
[ -s "$T/s.jsonl" ] || fail "no scrape samples"
# per sample: raw running, raw prompt tokens, v.kv, bad.kv, v.waiting, bad.waiting
jq -r '[([.raw | to_entries[] | select(.key | startswith("vllm:num_requests_running")) | .value] | add),
        ([.raw | to_entries[] | select(.key | startswith("vllm:prompt_tokens_total")) | .value] | add),
        (.v.kv_cache_usage // "-"), (.bad.kv_cache_usage // "-"),
        (.v.requests_waiting // "-"), (.bad.requests_waiting // "-")] | @tsv' "$T/s.jsonl" >"$T/s.tsv"
awk -F'\t' '
    { n++ }
    $1 > 0 && !($3 == "-" && $4 == 7.5 * $1) { bad++; print "kv, running " $1 ": " $0 }
    $1 == 0 && !($3 == 0 && $4 == "-") { bad++; print "kv, idle: " $0 }
    $2 > 0 && !($5 == "-" && $6 != "-" && $6 > 1e9) { bad++; print "waiting, prompts " $2 ": " $0 }
    $2 == 0 && !($5 == 0 && $6 == "-") { bad++; print "waiting, none yet: " $0 }
    $1 > 0 { flagged++ } $2 > 0 { flagged++ }
    END { print n, flagged + 0, bad + 0 > "/dev/stderr" }' "$T/s.tsv" >"$T/wrong" 2>"$T/count"
[ -s "$T/wrong" ] && { fail "samples that do not match their raw series:"; head -5 "$T/wrong" >&2; }
flagged=$(cut -d' ' -f2 "$T/count")
[ "$flagged" -gt 0 ] || fail "no value was ever out of range (the run never loaded the sim)"
expect_grep "WARNING: $flagged scraped values were outside their range (first: " "$T/err"
# analyze's server figures are made of the values in range only
"$L" analyze --json "$T/r.lt.zst" >"$T/a.json" 2>/dev/null || fail "analyze"
kvmax=$(jq '.runs[0].server.kv_usage_max' "$T/a.json")
wmax=$(jq '.runs[0].server.waiting_max' "$T/a.json")
awk -v m="$kvmax" 'BEGIN { exit !(m + 0 <= 1) }' || fail "analyze shows a KV-cache usage of $kvmax"
awk -v m="$wmax" 'BEGIN { exit !(m + 0 <= 1e9) }' || fail "analyze shows a waiting queue of $wmax"
finish

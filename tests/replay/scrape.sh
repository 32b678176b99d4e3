#!/bin/sh
# Server metrics during a replay (docs/server-metrics.md §6), checked
# against the sim, whose /metrics are the true values of its model:
# - replay scrapes the sim's /metrics by default and says so;
# - the last sample's counters are the sim's own totals (its --log) and
#   its final /metrics page; analyze's server table is their difference
#   and agrees with the tokens loadtrace counted (no warning);
# - a target whose /metrics is a web page is not scraped, and replay says so;
# - scrape faults (HTML, a page over the limit, an endpoint that never
#   answers: sims with metrics faults, whose logs say what each scrape got;
#   one that vanishes mid-run: a sim stopped) are recorded errors, and the
#   run sends every request on time all the same;
# - --reset-prefix-cache resets the sim's cache before each run (vLLM's
#   endpoint), and without it a second run over the same prefixes is
#   flagged as warmed by the first.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

scrapes() { # file [endpoint]: the scrape samples as JSON lines
    "$L" cat --no-header "$1" | jq -c --arg ep "${2:-}" 'select(.rec == "scrape" and ($ep == "" or .ep == $ep))'
}

"$L" synth --arrivals poisson --rate 40 --requests 40 --in fixed:64 --out fixed:16 -q \
    -o "$T/t.lt.zst" || fail "synth"

# --- default: the sim serves Prometheus text, so it is scraped
start_sim gt --time-scale 4
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --metrics-interval 20ms -o "$T/r.lt.zst" \
    --no-summary 2>"$T/r.err"
expect_status 0 $? "replay with default scraping"
curl -s "$SIM_URL/metrics" >"$T/final.prom"
stop_sim
expect_grep "server metrics: every 20 ms from $SIM_URL/metrics (the target serves them" "$T/r.err"
n=$(scrapes "$T/r.lt.zst" | wc -l)
[ "$n" -ge 10 ] || fail "only $n scrape samples over a ~1 s run at 20 ms"
expect_eq 0 "$(scrapes "$T/r.lt.zst" | jq -s '[.[] | select(.err != null)] | length')" "failed scrapes of the sim"
expect_eq vllm "$(scrapes "$T/r.lt.zst" | jq -r .server | sort -u)" "server detected"
expect_eq 40 "$(results "$T/r.lt.zst" | wc -l)" "results next to the samples"
# ground truth: the last sample is the model's totals, as the log and the final page say
last=$(scrapes "$T/r.lt.zst" | tail -1)
expect_eq "$(jq -s '[.[] | select(.seq != null) | .emitted // 0] | add' "$SIM_LOG")" \
    "$(echo "$last" | jq '.v.generation_tokens_total')" "generated tokens: last sample vs the sim's log"
expect_eq "$(jq -s '[.[] | select(.id != null) | .prompt_tokens] | add' "$SIM_LOG")" \
    "$(echo "$last" | jq '.v.prompt_tokens_total')" "prompt tokens: last sample vs the sim's log"
expect_eq "$(jq -s '[.[] | select(.id != null) | .cached_tokens] | add' "$SIM_LOG")" \
    "$(echo "$last" | jq '.v.prefix_cache_hits_total')" "prefix-cache hits: last sample vs the sim's log"
expect_eq "$(grep '^vllm:generation_tokens_total' "$T/final.prom" | awk '{print $2}')" \
    "$(echo "$last" | jq '.v.generation_tokens_total')" "generated tokens: last sample vs the final page"
expect_eq "$(grep '^vllm:time_to_first_token_seconds_count' "$T/final.prom" | awk '{print $2}')" \
    "$(echo "$last" | jq '.h.ttft_seconds[1]')" "TTFT count: last sample vs the final page"
expect_eq "0 0" "$(echo "$last" | jq -r '"\(.v.requests_running) \(.v.requests_waiting)"')" "nothing running or waiting after the run"
# samples on the run's clock, in order, none before the run
expect_eq true "$(scrapes "$T/r.lt.zst" | jq -s '[.[].t] | . == sort and .[0] >= 0')" "sample times"
# analyze: the counters' differences, next to what loadtrace counted
"$L" analyze --json "$T/r.lt.zst" >"$T/a.json" || fail "analyze --json"
first=$(scrapes "$T/r.lt.zst" | head -1)
expect_eq "$(jq -n --argjson a "$first" --argjson b "$last" '$b.v.generation_tokens_total - $a.v.generation_tokens_total')" \
    "$(jq '.runs[0].server.generation_tokens' "$T/a.json")" "analyze: generated tokens over the run"
expect_eq "$(results "$T/r.lt.zst" | jq -s '[.[].out] | add')" \
    "$(jq '.runs[0].server.client_output_tokens' "$T/a.json")" "analyze: tokens loadtrace counted"
expect_eq 0 "$(jq '.runs[0].server.preemptions' "$T/a.json")" "analyze: preemptions"
max_run=$(jq '.runs[0].server.running_max' "$T/a.json")
sim_max=$(streams "$SIM_LOG" | max_overlap)
[ "$max_run" -ge 1 ] && [ "$max_run" -le "$sim_max" ] ||
    fail "analyze: running max $max_run, the sim had at most $sim_max requests open"
expect_eq "$n" "$(jq '.runs[0].server.scrapes' "$T/a.json")" "analyze: scrapes"
for k in $(jq -r '."$defs".server.required[]' "$LT_SRC/docs/analyze-schema.json"); do
    jq -e ".runs[0].server | has(\"$k\")" "$T/a.json" >/dev/null || fail "analyze JSON: server lacks $k"
done
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
        "$LT_SRC/docs/analyze-schema.json" "$T/a.json" || fail "analyze JSON does not validate"
fi
"$L" analyze "$T/r.lt.zst" >"$T/a.txt" 2>&1
expect_grep "server metrics (vllm, $SIM_URL/metrics)" "$T/a.txt"
"$L" analyze --server-csv "$T/s.csv" --plots "$T/plots" --html "$T/r.html" "$T/r.lt.zst" \
    >/dev/null 2>&1 || fail "analyze --server-csv --plots --html"
[ -s "$T/plots/server_run0.dat" ] && [ -s "$T/plots/server_run0.gp" ] || fail "no client-and-server chart"
expect_grep "client and server over time" "$T/r.html"
expect_grep "server metrics (vllm, " "$T/r.html"
expect_eq "file,run,t_s,running,waiting,kv_usage,gpu_util,power_w" "$(head -1 "$T/s.csv")" "server CSV header"
expect_eq "$n" "$(($(wc -l <"$T/s.csv") - 1))" "server CSV rows"
expect_grep "tokens     server generated" "$T/a.txt"
expect_no_grep "loadtrace counted .* output tokens: " "$T/a.txt"

# --- scrapes have connections of their own: one request at a time keeps
# its one connection while the sim is scraped every 10 ms
start_sim conn --time-scale 20
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --concurrency 1 --requests 30 --metrics-interval 10ms \
    -o "$T/c1.lt.zst" --no-summary 2>"$T/c1.err"
expect_status 0 $? "replay at C=1 with scraping every 10 ms"
stop_sim
expect_grep "480 output tokens, 1 connections opened" "$T/c1.err"

# --- --no-server-metrics: nothing scraped, and said
start_sim off --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-server-metrics -o "$T/off.lt.zst" \
    --no-summary 2>"$T/off.err"
expect_status 0 $? "replay --no-server-metrics"
stop_sim
expect_grep "server metrics: off" "$T/off.err"
expect_eq 0 "$(scrapes "$T/off.lt.zst" | wc -l)" "samples with --no-server-metrics"

# --- a target whose /metrics is a web page (a sim with metrics-html): not
# scraped, and said; the run is untouched
start_sim htmltarget --profile fast --faults metrics-html=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/ht.lt.zst" --no-summary 2>"$T/ht.err"
expect_status 0 $? "replay against a target whose /metrics is HTML"
stop_sim
expect_grep "server metrics: not scraped (no Prometheus text at GET /metrics" "$T/ht.err"
expect_eq 0 "$(scrapes "$T/ht.lt.zst" | wc -l)" "samples of a target whose /metrics is HTML"
expect_eq "200 metrics-html" "$(jq -r 'select(.path == "/metrics") | "\(.status) \(.fault)"' "$SIM_LOG" | sort -u)" \
    "the target's /metrics was asked, and answered HTML"
# a target whose /metrics never answers within the probe's 2 s: said as
# such, not as a wrong page
start_sim slowtarget --profile fast --faults metrics-slow=1:30s
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/st.lt.zst" --no-summary 2>"$T/st.err"
expect_status 0 $? "replay against a target whose /metrics never answers"
stop_sim
expect_grep "server metrics: not scraped (GET /metrics: Timeout was reached" "$T/st.err"
expect_eq 0 "$(scrapes "$T/st.lt.zst" | wc -l)" "samples of a target whose /metrics never answers"

# --- faults: HTML, a page too big, an endpoint that never answers, one that
# vanishes mid-run; the run still sends everything on time. Each bad
# endpoint is a sim whose /metrics has a fault (docs/sim.md, metrics-*),
# and its log is the ground truth of what each scrape got.
side_sim() { # name [sim options...]: a sim of the test's own, its URL in $T/name.url
    _n=$1
    shift
    server_start "$_n" "$L" sim --log "$T/$_n.log" -q --profile fast "$@" || exit 1
    echo "$SERVER_URL/metrics" >"$T/$_n.url"
}
side_sim html --faults metrics-html=1
side_sim big --faults metrics-big=1:5000000
side_sim hang --faults metrics-slow=1:30s
side_sim gone
HTML_URL=$(cat "$T/html.url")
BIG_URL=$(cat "$T/big.url")
HANG=$(cat "$T/hang.url")
GONE_URL=$(cat "$T/gone.url")
GONE=$(server_pid gone)
"$L" synth --arrivals constant --rate 50 --requests 100 --in fixed:32 --out fixed:8 -q \
    -o "$T/f.lt.zst" || fail "synth"
start_sim faults --profile fast
# the endpoint vanishes once the run is under way (10 requests answered, as
# the sim counts them), so that it was scraped first: a fixed 0.8 s could
# end before a loaded machine had started the replay
(wait_sim_metric 10 vllm:request_success_total; kill "$GONE") &
"$L" replay "$T/f.lt.zst" --target "$SIM_URL" --metrics-interval 50ms --server-metrics-keep 'request_success' \
    --server-metrics="$HTML_URL,$BIG_URL,$HANG,$GONE_URL" -o "$T/f.out.lt.zst" \
    --no-summary 2>"$T/f.err"
expect_status 0 $? "replay with failing metrics endpoints"
stop_sim
expect_eq 100 "$(results "$T/f.out.lt.zst" | jq -s '[.[] | select(.status == 200)] | length')" "Ok requests despite scrape faults"
# on time: the median send within 10 ms of its schedule, none later than
# 250 ms (the shared test machine's bound of the other replay tests)
lag=$(results "$T/f.out.lt.zst" | jq -s '[.[] | .sent - .sched] | sort | "\(.[(length / 2 | floor)]) \(.[-1])"' -r)
[ "${lag% *}" -lt 10000 ] && [ "${lag#* }" -lt 250000 ] ||
    fail "schedule lag p50 and max ${lag} us with failing metrics endpoints"
"$L" cat --no-header "$T/f.out.lt.zst" | jq -c 'select(.rec == "scrape")' >"$T/f.scrapes"
expect_eq 0 "$(jq -s --arg u "$SIM_URL/metrics" '[.[] | select(.ep == $u and .err != null)] | length' "$T/f.scrapes")" "the target's scrapes still fine"
ntarget=$(jq -s --arg u "$SIM_URL/metrics" '[.[] | select(.ep == $u)] | length' "$T/f.scrapes")
expect_eq "$ntarget" "$(jq -s --arg u "$SIM_URL/metrics" '[.[] | select(.ep == $u and (.raw | keys) == ["vllm:request_success_total{finished_reason=\"stop\",model_name=\"loadtrace-sim-fast\"}"])] | length' "$T/f.scrapes")" \
    "--server-metrics-keep: the kept series in every sample of the target"
for side in html big hang; do
    server_stop "$side"
done
# each bad endpoint: every scrape an error of its kind, and the sim's log
# says it was asked (once per scrape, after the probe of the start) and
# answered as the fault says
sim_gets() { # sim log: its GET /metrics lines, as "status fault"
    jq -r 'select(.path == "/metrics") | "\(.status) \(.fault)"' "$1" | sort | uniq -c |
        awk '{ print $2, $3 }'
}
errs() { # URL: the distinct errors of its scrapes
    jq -r --arg u "$1" 'select(.ep == $u) | .err' "$T/f.scrapes" | sort -u
}
scraped() { # URL: how many samples the results hold
    jq -s --arg u "$1" '[.[] | select(.ep == $u)] | length' "$T/f.scrapes"
}
expect_eq "HTML, not Prometheus text (Content-Type text/html; charset=utf-8)" "$(errs "$HTML_URL")" \
    "the HTML endpoint's errors"
expect_eq "200 metrics-html" "$(sim_gets "$T/html.log")" "the HTML sim: what it answered"
nh=$(scraped "$HTML_URL")
[ "$nh" -ge 3 ] || fail "the HTML endpoint was scraped $nh times over a 2 s run"
[ "$(jq -s '[.[] | select(.path == "/metrics")] | length' "$T/html.log")" -ge "$nh" ] ||
    fail "more HTML scrape records than requests in the sim's log"
expect_eq "page larger than 4194304 bytes" "$(errs "$BIG_URL")" "the big endpoint's errors"
expect_eq "200 metrics-big" "$(sim_gets "$T/big.log")" "the big sim: what it answered"
expect_eq "timed out after 1000 ms" "$(errs "$HANG" | grep -v '^timed out after 2000 ms$')" \
    "the endpoint that never answers: its errors (2000 ms: the last scrape's)"
expect_eq "metrics-slow" "$(jq -r 'select(.path == "/metrics") | .fault' "$T/hang.log" | sort -u)" \
    "the slow sim: every GET held"
# a hung endpoint is asked again only when its scrape has ended: no more
# requests than samples, and one more for a scrape the run's end cut
# short (the last scrape takes its place)
nhang=$(jq -s '[.[] | select(.path == "/metrics")] | length' "$T/hang.log")
[ "$nhang" -ge 2 ] && [ "$nhang" -le "$(($(scraped "$HANG") + 1))" ] ||
    fail "the hung endpoint was asked $nhang times for $(scraped "$HANG") samples"
jq -r --arg u "$GONE_URL" 'select(.ep == $u) | if .err then "err" else "ok" end' "$T/f.scrapes" | uniq >"$T/e.gone"
expect_eq "ok err" "$(head -2 "$T/e.gone" | tr '\n' ' ' | sed 's/ $//')" "the vanished endpoint: scraped, then errors"

# --- prefix-cache hygiene: two runs of the same prompts (a corpus), whose
# trace shares no prefix: the second run hits the cache the first filled
"$L" synth --arrivals poisson --rate 20 --requests 20 --in fixed:600 --out fixed:4 -q \
    -o "$T/p.lt.zst" || fail "synth"
awk 'BEGIN { for (i = 0; i < 20; i++) { printf "\""; for (j = 0; j < 900; j++) printf "w%d_%d ", i, j; print "\"" } }' \
    >"$T/corpus.jsonl"
start_sim warm --time-scale 20
"$L" replay "$T/p.lt.zst" --target "$SIM_URL" --concurrency 2,2 --prompts "$T/corpus.jsonl" -o "$T/warm.lt.zst" \
    --no-summary 2>"$T/warm.err"
expect_status 0 $? "two runs without a reset"
stop_sim
"$L" analyze "$T/warm.lt.zst" >"$T/warm.txt" 2>&1
expect_grep "run 1: the server's prefix-cache hit rate .* far above what the trace allows" "$T/warm.txt"
start_sim reset --time-scale 20
"$L" replay "$T/p.lt.zst" --target "$SIM_URL" --concurrency 2,2 --reset-prefix-cache --prompts "$T/corpus.jsonl" \
    -o "$T/reset.lt.zst" --no-summary 2>"$T/reset.err"
expect_status 0 $? "two runs with --reset-prefix-cache"
stop_sim
expect_grep "prefix cache reset before 2 of 2 runs (vLLM POST /reset_prefix_cache)" "$T/reset.err"
"$L" analyze "$T/reset.lt.zst" >"$T/reset.txt" 2>&1
expect_no_grep "far above what the trace allows" "$T/reset.txt"
# --- virtual time: the model's values on the same clock, same interval
"$L" replay "$T/t.lt.zst" --target sim --virtual --metrics-interval 100ms -o "$T/v.lt.zst" \
    -q --no-summary || fail "virtual replay"
last=$(scrapes "$T/v.lt.zst" | tail -1)
expect_eq "$(results "$T/v.lt.zst" | jq -s '[.[].out] | add')" \
    "$(echo "$last" | jq '.v.generation_tokens_total')" "virtual: generated tokens of the last sample"
expect_eq true "$(scrapes "$T/v.lt.zst" | jq -s '[.[].t] | (.[1] - .[0]) == 100000')" "virtual: the interval"
"$L" replay "$T/t.lt.zst" --target sim --virtual --no-server-metrics -o "$T/v0.lt.zst" -q \
    --no-summary || fail "virtual replay --no-server-metrics"
expect_eq 0 "$(scrapes "$T/v0.lt.zst" | wc -l)" "virtual: samples with --no-server-metrics"
# --- the hit rate the trace allows (an unbounded cache), against a hand
# count: 512-token blocks; request 2 reuses request 1's two blocks (1,024
# of 1,536 tokens), request 3 starts with a new block (its second block was
# seen, but a prefix hit stops at the first miss: 0), request 4 reuses two
# blocks but has 600 tokens (600): 1,624 of 4,184 tokens = 388,145 ppm.
# The same with --requests, where replay loads the whole trace instead of
# streaming it.
printf '%s\n' '{"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [1, 2]}' \
    '{"timestamp": 100, "input_length": 1536, "output_length": 4, "hash_ids": [1, 2, 3]}' \
    '{"timestamp": 200, "input_length": 1024, "output_length": 4, "hash_ids": [4, 2]}' \
    '{"timestamp": 300, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}' >"$T/hit.jsonl"
"$L" import --from mooncake "$T/hit.jsonl" -o "$T/hit.lt.zst" 2>/dev/null || fail "import hit.jsonl"
start_sim hit --profile fast
for how in streamed "--requests 4"; do
    opt=
    [ "$how" = streamed ] || opt=$how
    # shellcheck disable=SC2086 # opt is two words or none
    "$L" replay "$T/hit.lt.zst" --target "$SIM_URL" --no-calibrate $opt -o "$T/hit.r.lt.zst" -q \
        --no-summary || fail "replay hit.lt.zst ($how)"
    expect_eq 388145 "$(runs "$T/hit.r.lt.zst" | jq -r .trace_prefix_hit_ppm)" "the trace's hit rate ($how)"
done
stop_sim
finish

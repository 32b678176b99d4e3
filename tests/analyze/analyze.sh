#!/bin/sh
# loadtrace analyze against results files with known timings (made by
# gen_results with the writer API). Expected numbers are computed here with
# jq and awk from `loadtrace cat`, never from analyze's own output; gnuplot
# must render every chart without a warning; the JSON must validate against
# docs/analyze-schema.json.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
LT=$LOADTRACE

"$LT_GEN" sweep "$T/sweep.lt.zst" || fail "gen sweep"
"$LT_GEN" late "$T/late.lt.zst" || fail "gen late"

# nearest-rank percentile of a column of numbers: pct P < numbers
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { r = int(p / 100 * NR); if (r < p / 100 * NR) r++; if (r < 1) r = 1; print v[r] }'; }

# --- the default report: seed table, knee, errors ------------------------------------
"$LT" analyze "$T/sweep.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "analyze sweep"
expect_grep '       C |  Agg tok/s | Per-req tok/s |     Tokens |  Wall(s) | Ok' "$T/out"
expect_grep '^      16 |.*| 238/238$' "$T/out"
expect_grep '^      32 |.*| 232/238$' "$T/out"
expect_grep 'knee at concurrency 16' "$T/out"
expect_grep 'errors: http_429 6' "$T/out"
expect_grep 'TTFT from sched' "$T/out"
# --per-req e2e: the seed table shows the mean over Ok requests of out / E2E.
"$LT" analyze --per-req e2e "$T/sweep.lt.zst" >"$T/out-e2e"
"$LT" cat --no-header "$T/sweep.lt.zst" >"$T/sweep.jsonl"
want=$(jq -rs '[.[] | select(.run == 2 and .rec == null and (.warmup | not) and .status == 200)
  | .out / ((.end - .sent) / 1e6)] | add / length' "$T/sweep.jsonl")
got=$(awk -F'|' '$1 + 0 == 16 { print $3 + 0 }' "$T/out-e2e")
expect_near "$want" "$got" 0.05 "per-req e2e tok/s in the seed table, C=16"

# Agg tok/s of C=1 from the file: sum of out (Ok, not warm-up) / (last end - first send).
want=$(jq -rs '[.[] | select(.run == 0 and .rec == null and (.warmup | not))] as $r
  | ([$r[] | select(.status == 200 and .err == null and .out >= 1) | .out] | add)
    / ((([$r[] | .end] | max) - ([$r[] | .sent] | min)) / 1e6)' "$T/sweep.jsonl")
"$LT" analyze --json "$T/sweep.lt.zst" >"$T/sweep.json"
expect_status 0 $? "analyze --json"
got=$(jq '.runs[0].agg_tps' "$T/sweep.json")
expect_near "$want" "$got" 0.001 "agg tok/s of C=1"
# Per-request decode tok/s of C=4: mean of (out - 1) / (E2E - TTFT).
want=$(jq -rs '[.[] | select(.run == 1 and .rec == null and (.warmup | not) and .status == 200)
  | (.out - 1) / ((.end - .ft) / 1e6)] | add / length' "$T/sweep.jsonl")
expect_near "$want" "$(jq '.runs[1].perreq_tps.decode' "$T/sweep.json")" 0.001 "per-req decode C=4"
expect_eq 16 "$(jq '.sweep.knee' "$T/sweep.json")" "knee"
expect_eq 6 "$(jq '.runs[3].errors.http_429' "$T/sweep.json")" "http_429 errors at C=32"
expect_eq 2 "$(jq '.runs[0].warmup' "$T/sweep.json")" "warm-up excluded"

# --- the server's side (scrape samples with known values: gen_results server)
"$LT_GEN" server "$T/server.lt.zst" || fail "generate the server input"
"$LT" analyze --json "$T/server.lt.zst" >"$T/server.json" || fail "analyze --json (server)"
expect_eq "22 1 4 2 0.6 0.95 2 200 200 0.3" \
    "$(jq -r '.runs[0].server | "\(.scrapes) \(.failed) \(.running_max) \(.waiting_max) \(.kv_usage_mean * 10 | round / 10) \(.kv_usage_max) \(.kv_above_90_s) \(.generation_tokens) \(.client_output_tokens) \(.prefix_hit_rate)"' "$T/server.json")" \
    "server figures"
expect_eq "100 198" "$(jq -r '.runs[0].server | "\(.ttft_p50_ms | round) \(.ttft_p99_ms | round)"' "$T/server.json")" "server TTFT p50 and p99"
expect_eq 0 "$(jq '[.warnings[] | select(test("loadtrace counted"))] | length' "$T/server.json")" "no reconciliation warning"
"$LT" analyze "$T/server.lt.zst" >"$T/server.txt"
expect_grep "server metrics (vllm, http://sim/metrics): 22 scrapes, 1 failed; last: HTTP 503" "$T/server.txt"
expect_grep "KV cache   mean .*  max 95.0 %  above 90 %: 2.0 s" "$T/server.txt"

# --- JSON schema ------------------------------------------------------------------
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 - "$LT_SRC/docs/analyze-schema.json" "$T/sweep.json" <<'EOF' || fail "JSON does not validate against docs/analyze-schema.json"
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))
EOF
else
    # No validator here: check the required top-level and run keys with jq instead.
    echo "note: python3 jsonschema not installed; checking the schema's required keys with jq" >&2
    for k in $(jq -r '.required[]' "$LT_SRC/docs/analyze-schema.json"); do
        jq -e "has(\"$k\")" "$T/sweep.json" >/dev/null || fail "JSON lacks $k"
    done
    for k in $(jq -r '."$defs".run.required[]' "$LT_SRC/docs/analyze-schema.json"); do
        jq -e ".runs[0] | has(\"$k\")" "$T/sweep.json" >/dev/null || fail "JSON run lacks $k"
    done
fi

# --- coordinated omission: late sends change the from-sched figures only -------------
"$LT" cat --no-header "$T/late.lt.zst" | jq -r 'select(.ft) | .ft - .sent' >"$T/ttft"
"$LT" cat --no-header "$T/late.lt.zst" | jq -r 'select(.ft) | .ft - .sched' >"$T/ttft_s"
"$LT" analyze --json --slo ttft=100ms "$T/late.lt.zst" >"$T/late.json"
for p in 50 90 99; do
    expect_near "$(pct $p <"$T/ttft")" "$(jq ".runs[0].latency_ms.ttft.p$p * 1000" "$T/late.json")" \
        "$(pct $p <"$T/ttft" | awk '{ print $1 / 1000 }')" "TTFT p$p"
    expect_near "$(pct $p <"$T/ttft_s")" "$(jq ".runs[0].latency_ms.ttft_sched.p$p * 1000" "$T/late.json")" \
        "$(pct $p <"$T/ttft_s" | awk '{ print $1 / 1000 }')" "TTFT from sched p$p"
done
expect_eq 50 "$(jq '.runs[0].late' "$T/late.json")" "late sends"
expect_eq 100 "$(jq '.runs[0].goodput.good' "$T/late.json")" "goodput from send"
expect_eq 50 "$(jq '.runs[0].goodput.good_sched' "$T/late.json")" "goodput from sched"
"$LT" analyze "$T/late.lt.zst" >"$T/out"
expect_grep 'warning: run 0 (rate 10/s): schedule lag p99 is 200.' "$T/out"
# a rate run's level in the seed table: under "Load", as a rate
expect_grep '^    Load |  Agg tok/s |' "$T/out"
expect_grep '^    10/s |' "$T/out"
# No late sends: the two columns agree exactly.
jq -e '.runs[] | .latency_ms.ttft == .latency_ms.ttft_sched and .latency_ms.e2e == .latency_ms.e2e_sched' \
    "$T/sweep.json" >/dev/null || fail "sends on time but corrected figures differ"

# --- CSV ------------------------------------------------------------------------------
"$LT" analyze --csv "$T/sweep.lt.zst" >"$T/out.csv"
expect_status 0 $? "analyze --csv"
expect_eq 5 "$(wc -l <"$T/out.csv" | tr -d ' ')" "CSV lines (header + 4 runs)"
expect_grep '^file,run,mode,concurrency,rate,speed,results,' "$T/out.csv"

# --- several files make one sweep -----------------------------------------------------
for c in 1 4 16 32; do "$LT_GEN" level $c "$T/c$c.lt.zst" || fail "gen level $c"; done
"$LT" analyze --json "$T/c1.lt.zst" "$T/c4.lt.zst" "$T/c16.lt.zst" "$T/c32.lt.zst" >"$T/multi.json"
expect_status 0 $? "analyze of four files"
expect_eq 4 "$(jq '.sweep.points | length' "$T/multi.json")" "points over four files"
expect_eq 16 "$(jq '.sweep.knee' "$T/multi.json")" "knee over four files"

# --- charts: every file, no gnuplot warning -------------------------------------------
"$LT" analyze --plots "$T/plots" --html "$T/report.html" "$T/sweep.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots --html"
[ -s "$T/err" ] && fail "stderr of --plots: $(cat "$T/err")"
for c in throughput pareto ttft_cdf e2e_cdf itl_hist timeseries_run0 timeseries_run3 pct_time_run2; do
    for e in dat gp png svg; do
        [ -s "$T/plots/$c.$e" ] || fail "missing chart file $c.$e"
    done
done
# The scripts rerun by hand, from their directory, without a warning.
(cd "$T/plots" && gnuplot throughput.gp 2>"$T/gperr") || fail "gnuplot throughput.gp by hand"
[ -s "$T/gperr" ] && fail "gnuplot warned: $(cat "$T/gperr")"
# The HTML is one self-contained page.
expect_grep '<svg' "$T/report.html"
expect_grep '<table>' "$T/report.html"
expect_no_grep ' src=' "$T/report.html"
expect_no_grep ' href=' "$T/report.html"
expect_eq "$(ls "$T/plots"/*.svg | wc -l | tr -d ' ')" "$(grep -c '<figure' "$T/report.html")" "charts in the HTML"

# Degenerate data (one request: every axis holds one value) still renders cleanly.
"$LT_GEN" one "$T/one.lt.zst" || fail "gen one"
"$LT" analyze --plots "$T/plots1" "$T/one.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "charts of one request"
[ -s "$T/err" ] && fail "stderr of --plots with one request: $(cat "$T/err")"
[ -s "$T/plots1/ttft_cdf.svg" ] && [ -s "$T/plots1/pct_time_run0.svg" ] || fail "charts of one request"

# --- without gnuplot: data and scripts, and how to install it ------------------------
LT_GNUPLOT=/nonexistent/gnuplot "$LT" analyze --plots "$T/nogp" "$T/sweep.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots without gnuplot"
expect_grep 'apt-get install gnuplot-nox' "$T/err"
[ -s "$T/nogp/throughput.gp" ] && [ -s "$T/nogp/throughput.dat" ] || fail "no data or script without gnuplot"
[ -e "$T/nogp/throughput.png" ] && fail "a PNG without gnuplot?"
# --html alone leaves no temporary directory behind
# (in a TMPDIR of this test's own, which other tests running at the same
# time cannot touch)
mkdir -p "$T/tmpdir"
TMPDIR="$T/tmpdir" "$LT" analyze --html "$T/only.html" "$T/sweep.lt.zst" >/dev/null 2>&1
expect_status 0 $? "analyze --html"
expect_eq 0 "$(ls "$T/tmpdir" | wc -l)" "temporary chart directories left behind"
TMPDIR="$T/no-such-dir" "$LT" analyze --html "$T/only2.html" "$T/sweep.lt.zst" >/dev/null 2>"$T/err"
expect_status 1 $? "analyze --html with TMPDIR missing"
expect_grep "cannot create a temporary directory in $T/no-such-dir" "$T/err"

# --- errors ---------------------------------------------------------------------------
"$LT" analyze "$T/nonexistent.lt.zst" >/dev/null 2>"$T/err"
expect_status 1 $? "missing file"
"$LT" analyze >/dev/null 2>&1
expect_status 2 $? "no file"
"$LT" analyze --slo ttft=fast "$T/sweep.lt.zst" >/dev/null 2>&1
expect_status 2 $? "bad --slo"
"$LT" analyze --help >"$T/out"
expect_status 0 $? "--help"
expect_grep 'TPOT    (E2E - TTFT) / (out - 1)' "$T/out"
finish

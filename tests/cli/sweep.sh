#!/bin/sh
# loadtrace sweep against real servers: the sim started by the sweep over a
# grid of --max-running, and a virtual config beside them.
#  1. a find-max sweep runs every config, stops every server, and its
#     report's figures are those of `loadtrace analyze --json` of each
#     config's results file (capacity, its bracket, goodput, latencies,
#     errors); the best config and the A/B verdicts name real configs;
#     the predicted config is labelled and ranked apart;
#  2. sweep.json records the exact command (its port filled in) and what
#     the server said of itself (/v1/models);
#  3. a rerun into the same folder skips the complete configs and leaves
#     their results as they were;
#  4. the grid reaches the server: under a closed loop of 8, the sim's own
#     /metrics (scraped into each results file) show at most --max-running
#     requests running and the rest waiting;
#  5. a server already running (url): used, never stopped; a fixed load's
#     goodput under the plan's SLO is analyze's; --report-only runs nothing.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
SLO=ttft=300ms,tpot=25ms

"$L" synth --arrivals poisson --rate 2 --requests 60 --in lognormal:200,0.6 \
    --out lognormal:100,0.5 --seed 5 -q -o "$T/t.lt.zst" || fail "synth"
cat >"$T/plan.yaml" <<PLAN
trace: t.lt.zst
load:
  find-max: concurrency
  slo: $SLO
  requests: 60
  max-probes: 6
warmup: 2
baseline: sim-mr2
configs:
  - name: sim
    command: "{loadtrace} sim --listen 127.0.0.1:{port} --time-scale 20 --max-running {mr}"
    grid:
      mr: [2, 8]
    start-timeout: 60s
  - name: twin-mr8
    virtual:
      profile: default
      set: {max_running: 8}
PLAN

# ---- 1. the sweep and its report ----
"$L" sweep "$T/plan.yaml" -o "$T/out" >"$T/out.txt" 2>"$T/err.txt"
expect_status 0 $? "sweep"
R=$T/out/report.json
for f in report.txt report.html sweep.json sim-mr2.log sim-mr8.log sim-mr2.lt.zst sim-mr8.lt.zst \
    twin-mr8.lt.zst twin-mr8.profile charts/sweep_pareto.dat; do
    [ -s "$T/out/$f" ] || fail "$f missing"
done
expect_grep "^best measured config: sim-mr" "$T/out.txt"
expect_no_grep "note:" "$T/err.txt" # gnuplot said nothing: the chart is whole
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$T/out/charts/sweep_pareto.svg" ] || fail "no Pareto chart"
    expect_grep "<svg" "$T/out/report.html"
fi
# the chart's points are the report's: measured first, predicted last
expect_eq "$(jq -r '[.configs[] | select(.kind == "measured") | .name] | sort | join(" ")' "$R")" \
    "$(awk '/^# front/ { exit } !/^#/ && NF { print $1 }' "$T/out/charts/sweep_pareto.dat" | sort | tr '\n' ' ' | sed 's/ $//')" \
    "chart's measured points"
expect_grep "best predicted config (virtual time; a prediction" "$T/out.txt"
expect_eq 3 "$(jq '.configs | length' "$R")" "configs in the report"
expect_eq predicted "$(jq -r '.configs[] | select(.name == "twin-mr8") | .kind' "$R")" "twin kind"
expect_eq twin-mr8 "$(jq -r .best_predicted.name "$R")" "best predicted"
best=$(jq -r .best_measured.name "$R")
case "$best" in sim-mr2 | sim-mr8) ;; *) fail "best measured is '$best'" ;; esac
# every figure against analyze's reading of the config's own file
for c in sim-mr2 sim-mr8 twin-mr8; do
    eng=live
    [ $c = twin-mr8 ] && eng=virtual
    "$L" analyze --json --slo $SLO "$T/out/$c.lt.zst" >"$T/$c.json" || fail "analyze $c"
    jq -c --arg c $c '.configs[] | select(.name == $c)' "$R" >"$T/$c.row"
    expect_eq complete "$(jq -r .status "$T/$c.row")" "$c status"
    for k in max_ok min_fail goodput probes; do
        expect_near "$(jq -r ".capacity.$eng.$k" "$T/$c.json")" "$(jq -r ".capacity.$k" "$T/$c.row")" \
            1e-3 "$c capacity $k"
    done
    run=$(jq -r .run "$T/$c.row")
    jq -c --argjson id "$run" '.runs[] | select(.id == $id)' "$T/$c.json" >"$T/$c.run"
    expect_near "$(jq -r .capacity.max_ok "$T/$c.row")" "$(jq -r .concurrency "$T/$c.run")" 0 \
        "$c: the headline run is the capacity probe"
    expect_near "$(jq -r .agg_tps "$T/$c.run")" "$(jq -r .agg_tps "$T/$c.row")" 0.01 "$c agg_tps"
    for m in ttft tpot e2e; do
        for q in p50 p99; do
            expect_near "$(jq -r ".latency_ms.$m.$q" "$T/$c.run")" \
                "$(jq -r ".${m}_${q}_ms" "$T/$c.row")" 0.01 "$c $m $q"
        done
    done
    expect_eq "$(jq -r '.measured - .ok - .cancelled' "$T/$c.run")" "$(jq -r .errors "$T/$c.row")" \
        "$c errors"
    expect_eq "$(jq -r .measured "$T/$c.run")" "$(jq -r .measured "$T/$c.row")" "$c measured"
done
# the common load: the highest concurrency both measured files ran, and
# each config's figures there those of that run
cx=$(jq -r '[.runs[] | select(.measured > 0) | .concurrency] | unique | .[]' "$T/sim-mr2.json" |
    while read -r x; do
        jq -e --argjson x "$x" '[.runs[] | select(.measured > 0 and .concurrency == $x)] | length > 0' \
            "$T/sim-mr8.json" >/dev/null && echo "$x"
    done | sort -n | tail -1)
expect_eq "$cx" "$(jq -r .common_load.x "$R")" "the common load"
for c in sim-mr2 sim-mr8; do
    jq -c --argjson x "$cx" '[.runs[] | select(.measured > 0 and .concurrency == $x)][0]' "$T/$c.json" >"$T/$c.crun"
    jq -c --arg c $c '.common_load.configs[] | select(.name == $c)' "$R" >"$T/$c.crow"
    for m in ttft tpot e2e; do
        for q in p50 p99; do
            expect_near "$(jq -r ".latency_ms.$m.$q" "$T/$c.crun")" \
                "$(jq -r ".${m}_${q}_ms" "$T/$c.crow")" 0.01 "$c at the common load: $m $q"
        done
    done
done
# the best is the highest capacity of the measured configs
want=$(jq -r '[.configs[] | select(.kind == "measured")] | max_by(.capacity.max_ok) | .name' "$R")
expect_eq "$want" "$best" "best = highest measured capacity"
# the A/B verdicts are compare's
"$L" compare --json "$T/out/sim-mr2.lt.zst" "$T/out/sim-mr8.lt.zst" >"$T/ab.json" 2>/dev/null
expect_eq "$(jq -r '[.. | objects | select(has("verdict"))] | length > 0' "$T/ab.json")" true \
    "compare gave verdicts"
expect_eq "$(jq -r '.configs[] | select(.name == "sim-mr8") | .vs_baseline.better' "$R")" \
    "$(jq -r '.summary.better // .better' "$T/ab.json")" "A/B better count as compare's"
# every server is stopped: nothing answers on the ports they had
for c in sim-mr2 sim-mr8; do
    port=$(jq -r ".configs[\"$c\"].port" "$T/out/sweep.json")
    if curl -s --max-time 2 "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
        fail "$c's server still answers on $port"
    fi
    expect_grep "stopped by SIGTERM" "$T/err.txt"
done

# ---- 2. what ran, against what ----
S=$T/out/sweep.json
port=$(jq -r '.configs["sim-mr8"].port' "$S")
expect_eq "$L sim --listen 127.0.0.1:$port --time-scale 20 --max-running 8" \
    "$(jq -r '.configs["sim-mr8"].command_run' "$S")" "exact command"
expect_eq "$(jq -r '.configs["sim-mr8"].server["v1/models"].data[0].id' "$S")" \
    "Qwen/Qwen3.5-397B-A17B" "the server's /v1/models"
expect_grep "loadtrace sweep: starting sim-mr8 on port $port" "$T/out/sim-mr8.log"

# ---- 3. resume: nothing to run again ----
sum1=$(cat "$T/out/"*.lt.zst | cksum)
"$L" sweep "$T/plan.yaml" -o "$T/out" >"$T/out2.txt" 2>"$T/err2.txt"
expect_status 0 $? "rerun"
expect_eq 3 "$(grep -c 'complete from an earlier sweep: skipped' "$T/err2.txt")" "all skipped"
expect_eq "$sum1" "$(cat "$T/out/"*.lt.zst | cksum)" "results untouched"
expect_grep "^best measured config: $best" "$T/out2.txt"

# ---- 4. the grid reaches the server (its own metrics) ----
cat >"$T/plan2.yaml" <<PLAN
trace: t.lt.zst
load:
  concurrency: 8
  requests: 40
configs:
  - name: sim
    command: "echo batch limit \$LT_SWEEP_MR >&2; exec {loadtrace} sim --listen 127.0.0.1:{port} --time-scale 20 --max-running {mr}"
    grid: {mr: [2, 8]}
    env: {LT_SWEEP_MR: "mr={mr}"}
PLAN
"$L" sweep "$T/plan2.yaml" -o "$T/out2" -q >/dev/null 2>"$T/err3.txt"
expect_status 0 $? "closed-loop sweep"
R2=$T/out2/report.json
expect_eq 2 "$(jq -r '.configs[] | select(.name == "sim-mr2") | .server.running_max' "$R2")" \
    "mr2: at most 2 running"
w2=$(jq -r '.configs[] | select(.name == "sim-mr2") | .server.waiting_max' "$R2")
awk -v w="$w2" 'BEGIN { exit !(w >= 1) }' || fail "mr2: nothing waited ($w2)"
r8=$(jq -r '.configs[] | select(.name == "sim-mr8") | .server.running_max' "$R2")
awk -v r="$r8" 'BEGIN { exit !(r > 2 && r <= 8) }' || fail "mr8: running max $r8"
expect_grep "^batch limit mr=2$" "$T/out2/sim-mr2.log"
expect_grep "^batch limit mr=8$" "$T/out2/sim-mr8.log"
"$L" sim --max-running 0 2>"$T/e0"
expect_status 2 $? "sim --max-running 0"
"$L" sim --set no_such_key=1 2>"$T/e1"
expect_status 2 $? "sim --set of an unknown key"
expect_grep "unknown profile key 'no_such_key'" "$T/e1"
"$L" analyze --json "$T/out2/sim-mr2.lt.zst" >"$T/c2.json"
expect_near "$(jq -r '.runs[0].agg_tps' "$T/c2.json")" \
    "$(jq -r '.configs[] | select(.name == "sim-mr2") | .agg_tps' "$R2")" 0.01 "closed agg_tps"
# the documented example plan parses: --report-only gets past it to the
# folder, which has nothing to report
"$L" sweep "$LT_SRC/docs/examples/sweep-sim.yaml" -o "$T/ex" --report-only >"$T/ex.txt" 2>&1
expect_status 1 $? "docs/examples/sweep-sim.yaml, nothing run"
expect_grep "ex has no sweep.json: nothing to report" "$T/ex.txt"

# ---- 5. a server already running, a fixed load ----
start_sim running --time-scale 20
cat >"$T/plan3.yaml" <<PLAN
trace: t.lt.zst
load:
  rate: 20
  requests: 30
  slo: ttft=100ms
configs:
  - name: theirs
    url: "$SIM_URL"
PLAN
"$L" sweep "$T/plan3.yaml" -o "$T/out3" -q >"$T/out3.txt" 2>"$T/err4.txt"
expect_status 0 $? "sweep of a running server"
curl -s --max-time 5 "$SIM_URL/health" >/dev/null || fail "the running server was stopped"
R3=$T/out3/report.json
"$L" analyze --json --slo ttft=100ms "$T/out3/theirs.lt.zst" >"$T/c3.json"
expect_near "$(jq -r '.runs[0].goodput.per_s' "$T/c3.json")" "$(jq -r '.configs[0].goodput' "$R3")" \
    1e-3 "fixed load goodput"
expect_eq "$(jq -r '.runs[0].ok' "$T/c3.json")" "$(sim_metric vllm:request_success_total)" \
    "requests the running server answered"
expect_eq null "$(jq -r '.configs.theirs.stopped' "$T/out3/sweep.json")" "not stopped"
before=$(cksum <"$T/out3/theirs.lt.zst")
"$L" sweep "$T/plan3.yaml" -o "$T/out3" --report-only >"$T/out3b.txt" 2>/dev/null
expect_status 0 $? "--report-only"
expect_eq "$before" "$(cksum <"$T/out3/theirs.lt.zst")" "--report-only ran nothing"
cmp -s "$T/out3.txt" "$T/out3b.txt" || fail "--report-only: not the same report"
stop_sim
finish

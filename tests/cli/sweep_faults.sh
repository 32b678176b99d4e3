#!/bin/sh
# loadtrace sweep when things go wrong; every server is the sweep's or the
# test's own, on loopback, and every wait is bounded.
#  1. a plan with errors: each reported with its file and line, exit 2;
#  2. a server that fails to start, and one that is never ready: each
#     config failed with an error naming its log, the server stopped, and
#     the sweep goes on to the next config, which completes;
#  3. a server that exits mid-run: its partial results are kept and
#     marked, and the sweep goes on;
#  4. a server that ignores SIGTERM: killed (SIGKILL) after the grace;
#  5. a fixed port already in use: the config fails, and what listens
#     there is left alone (alive, sent nothing);
#  6. Ctrl-C (SIGINT) during a load: the load and server stop cleanly,
#     the message says how to resume, and the rerun skips what was
#     complete and finishes the rest; after a kill -9 of the sweep, the
#     rerun says which config was caught running.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
SWEEP_PID=
STRAY_GROUPS=
cleanup() { # the test's own sim is stopped by tests/lib/servers.sh
    [ -n "$SWEEP_PID" ] && kill "$SWEEP_PID" 2>/dev/null
    for g in $STRAY_GROUPS; do kill -KILL "-$g" 2>/dev/null; done
}
servers_at_exit cleanup

"$L" synth --arrivals poisson --rate 2 --requests 40 --in lognormal:200,0.6 \
    --out lognormal:100,0.5 --seed 5 -q -o "$T/t.lt.zst" || fail "synth"
SIM="{loadtrace} sim --listen 127.0.0.1:{port} --time-scale 20"

# wait (at most 60 s) until jq filter F on sweep.json in DIR is true
state_is() { # dir filter
    [ "$(jq -r "$2" "$1/sweep.json" 2>/dev/null)" = true ]
}
wait_state() { # dir filter
    wait_until 60 state_is "$@"
}
port_closed() { # port what
    if curl -s --max-time 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1; then
        fail "$2: something still answers on port $1"
    fi
}

# ---- 1. plan errors, with lines ----
plan_err() { # what expected-line-pattern, plan on stdin
    cat >"$T/bad.yaml"
    "$L" sweep "$T/bad.yaml" -o "$T/bad" 2>"$T/bad.err"
    expect_status 2 $? "plan error: $1"
    expect_grep "$2" "$T/bad.err"
}
plan_err "unknown key" "bad.yaml:5: unknown key 'comand'" <<PLAN
trace: t.lt.zst
load: {concurrency: 2}
configs:
  - name: a
    comand: "x {port}"
PLAN
plan_err "unknown placeholder" "bad.yaml:6: '{np}' is no grid parameter" <<PLAN
trace: t.lt.zst
load:
  concurrency: 2
configs:
  - name: a
    command: "$SIM --max-running {np}"
    grid: {mr: [1, 2]}
PLAN
plan_err "find-max without slo" "bad.yaml:3: find-max needs an slo" <<PLAN
trace: t.lt.zst
load:
  find-max: rate
configs:
  - {name: a, url: "http://127.0.0.1:1"}
PLAN
plan_err "not YAML" "bad.yaml:3: not YAML" <<PLAN
trace: t.lt.zst
load: {concurrency: 2
configs: [
PLAN
plan_err "unknown baseline" "bad.yaml:6: the baseline 'zz' is no config" <<PLAN
trace: t.lt.zst
load: {concurrency: 2}
configs:
  - name: a
    url: "http://127.0.0.1:1"
baseline: zz
PLAN
plan_err "bad load option" "bad.yaml:4: unknown load option 'concurency'" <<PLAN
trace: t.lt.zst
load:
  requests: 4
  concurency: 2
configs:
  - {name: a, url: "http://127.0.0.1:1"}
PLAN
[ -e "$T/bad" ] && fail "a bad plan made its folder"
# a config whose results would overwrite the trace: refused, trace intact
mkdir -p "$T/own" && cp "$T/t.lt.zst" "$T/own/t.lt.zst"
sum=$(cksum <"$T/own/t.lt.zst")
cat >"$T/own/plan.yaml" <<PLAN
trace: t.lt.zst
load: {concurrency: 2, requests: 4}
configs:
  - name: t
    command: "$SIM"
PLAN
"$L" sweep "$T/own/plan.yaml" -o "$T/own" 2>"$T/own.err"
expect_status 2 $? "results over the trace"
expect_grep "config t (plan line 4): .*the output is the input file" "$T/own.err"
expect_eq "$sum" "$(cksum <"$T/own/t.lt.zst")" "the trace untouched"

# ---- 2, 3, 4. start failures, mid-run exit, SIGTERM ignored ----
# The mid-run server kills its sim once the sim has answered 5 requests
# (of 40; at a time scale of 5 the rest take seconds more)
# (its own /metrics say so), then exits: no time is guessed.
cat >"$T/dies.sh" <<'SH'
#!/bin/sh
"$1" sim --listen "127.0.0.1:$2" --time-scale 5 -q &
pid=$!
i=0
while [ $i -lt 600 ]; do
    n=$(curl -s --max-time 2 "http://127.0.0.1:$2/metrics" 2>/dev/null |
        awk '/^vllm:request_success_total/ { s += $NF } END { print s + 0 }')
    [ "$n" -ge 5 ] 2>/dev/null && break
    sleep 0.1
    i=$((i + 1))
done
kill -9 $pid
exit 7
SH
cat >"$T/plan.yaml" <<PLAN
trace: t.lt.zst
load:
  concurrency: 2
  requests: 400
configs:
  - name: nostart
    command: "echo cannot start on {port} >&2; exit 3"
  - name: neverready
    command: "$SIM"
    ready: {path: /not-here, timeout: 1s}
    start-timeout: 2s
  - name: dies
    command: "sh $T/dies.sh {loadtrace} {port}"
  - name: stubborn
    command: "trap '' TERM; $SIM; while :; do sleep 0.1; done"
    stop-timeout: 1s
PLAN
# stubborn's load is short: 40 requests
sed -i 's/requests: 400/requests: 40/' "$T/plan.yaml"
"$L" sweep "$T/plan.yaml" -o "$T/out" >"$T/out.txt" 2>"$T/err.txt"
expect_status 1 $? "a sweep with failed configs"
S=$T/out/sweep.json
st() { jq -r ".configs[\"$1\"].status" "$S"; }
why() { jq -r ".configs[\"$1\"].why" "$S"; }
expect_eq failed "$(st nostart)" "nostart status"
why nostart >"$T/w1"
expect_grep "exited (status 3) before it was ready; its log $T/out/nostart.log ends: cannot start" "$T/w1"
expect_eq failed "$(st neverready)" "neverready status"
why neverready >"$T/w2"
expect_grep "not ready after 2 s (GET /not-here: an error status" "$T/w2"
expect_grep "see its log $T/out/neverready.log" "$T/w2"
port_closed "$(jq -r '.configs.neverready.port' "$S")" neverready
expect_eq partial "$(st dies)" "dies status"
why dies >"$T/w3"
expect_grep "the server exited (status 7) during the load" "$T/w3"
expect_grep "results so far are kept" "$T/w3"
n=$("$L" cat --no-header "$T/out/dies.lt.zst" | jq -s '[.[] | select(.rec == null and .err == null)] | length')
awk -v n="$n" 'BEGIN { exit !(n >= 5 && n < 40) }' || fail "dies: $n ok results kept"
expect_grep "dies .*partial" "$T/out.txt"
expect_eq complete "$(st stubborn)" "stubborn status"
expect_grep "the group was killed (SIGKILL)" "$S"
port_closed "$(jq -r '.configs.stubborn.port' "$S")" stubborn
expect_grep "^best measured config: stubborn" "$T/out.txt"

# ---- 5. a port in use ----
start_sim busy --time-scale 20
busy=${SIM_URL##*:}
cat >"$T/plan5.yaml" <<PLAN
trace: t.lt.zst
load: {concurrency: 2, requests: 10}
configs:
  - name: fixed
    command: "$SIM"
    port: $busy
PLAN
sed -i "s/{port}/$busy/" "$T/plan5.yaml"
"$L" sweep "$T/plan5.yaml" -o "$T/out5" >/dev/null 2>"$T/err5.txt"
expect_status 1 $? "port in use"
expect_grep "port $busy is in use" "$T/out5/sweep.json"
curl -s --max-time 5 "$SIM_URL/health" >/dev/null || fail "the sim on the busy port was harmed"
expect_eq 0 "$(sim_metric vllm:request_success_total)" "nothing sent to the busy port"
stop_sim

# ---- 6. Ctrl-C and resume; kill -9 and resume ----
cat >"$T/plan6.yaml" <<PLAN
trace: t.lt.zst
load: {concurrency: 2, requests: 40}
configs:
  - name: first
    command: "$SIM"
  - name: slow
    command: "{loadtrace} sim --listen 127.0.0.1:{port} --seed 9 --time-scale 1"
PLAN
"$L" sweep "$T/plan6.yaml" -o "$T/out6" >"$T/out6.txt" 2>"$T/err6.txt" &
SWEEP_PID=$!
wait_state "$T/out6" '.configs.first.status == "complete" and .configs.slow.status == "running"' ||
    fail "the sweep never reached its second config"
# the load has begun: the slow server answers requests
p6=$(jq -r .configs.slow.port "$T/out6/sweep.json")
SIM_URL=http://127.0.0.1:$p6
wait_sim_metric 1 vllm:num_requests_running vllm:request_success_total
kill -INT $SWEEP_PID
wait $SWEEP_PID
expect_status 130 $? "sweep after SIGINT"
SWEEP_PID=
expect_grep "Resume with:" "$T/err6.txt"
expect_grep "loadtrace sweep $T/plan6.yaml -o $T/out6" "$T/err6.txt"
expect_eq interrupted "$(jq -r .configs.slow.status "$T/out6/sweep.json")" "slow interrupted"
port_closed "$p6" "the interrupted config's server"
sed -i 's/--seed 9 --time-scale 1"/--seed 9 --time-scale 20"/' "$T/plan6.yaml"
"$L" sweep "$T/plan6.yaml" -o "$T/out6" >/dev/null 2>"$T/err6b.txt"
expect_status 0 $? "resumed sweep"
expect_grep "first: complete from an earlier sweep: skipped" "$T/err6b.txt"
expect_eq complete "$(jq -r .configs.slow.status "$T/out6/sweep.json")" "slow resumed"
# kill -9: the sweep cannot stop its server; sweep.json names the group
sed -i 's/--seed 9 --time-scale 20"/--seed 9 --time-scale 1"/' "$T/plan6.yaml"
"$L" sweep "$T/plan6.yaml" -o "$T/out6" --redo >/dev/null 2>&1 &
SWEEP_PID=$!
wait_state "$T/out6" '.configs.slow.status == "running" and .configs.slow.pgid != null' ||
    fail "the --redo sweep never reached its second config"
g=$(jq -r .configs.slow.pgid "$T/out6/sweep.json")
STRAY_GROUPS=$g
kill -9 $SWEEP_PID
wait $SWEEP_PID 2>/dev/null
SWEEP_PID=
kill -TERM "-$g" || fail "the killed sweep's server group $g was not there to stop"
# the killed sweep's replay, left behind, ends once its server is gone
wait_until 30 sh -c '! pgrep -f "out6/slow.lt.zst" >/dev/null 2>&1'
sed -i 's/--seed 9 --time-scale 1"/--seed 9 --time-scale 20"/' "$T/plan6.yaml"
"$L" sweep "$T/plan6.yaml" -o "$T/out6" >/dev/null 2>"$T/err6c.txt"
expect_status 0 $? "sweep after a kill -9"
expect_grep "slow: was running when an earlier sweep was killed: its server (process group $g)" \
    "$T/err6c.txt"
expect_grep "first: complete from an earlier sweep: skipped" "$T/err6c.txt"
# The group was sent SIGTERM above; a loaded machine may take a while to
# end it: wait, bounded, rather than judge it at once.
group_empty() { [ -z "$(ps -o pid= -g "$1" 2>/dev/null)" ]; }
wait_until 30 group_empty "$g" || fail "process group $g still has processes"
finish

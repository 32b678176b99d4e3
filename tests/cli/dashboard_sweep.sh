#!/bin/sh
# The sweep's dashboard (docs/dashboard.md "sweep") under tmux, read with
# capture-pane: a plan of two sims the sweep starts and a virtual config.
#  1. while a config's load runs, the dashboard shows it running, the
#     configs to come, and its load's progress (requests done of the
#     plan's), read from that replay's own live page;
#  2. the last frame, left on the normal screen, says every config's
#     status as sweep.json records it, and all done;
#     and q stops a sweep as SIGINT does (exit 130, the config
#     interrupted in sweep.json and on the last frame);
#  3. standard error to a file: the lines as before, no escape code, and
#     the loads run without --live-metrics (sweep.json's argv);
#     --ui dashboard there is a usage error.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
L=$LOADTRACE

. "$LT_SRC/tests/cli/tmuxlib.sh"

"$L" synth --arrivals poisson --rate 2 --requests 300 --in fixed:64 --out fixed:32 --seed 5 -q \
    -o "$T/t.lt.zst" || fail "synth"
cat >"$T/plan.yaml" <<PLAN
trace: t.lt.zst
load:
  concurrency: 2
  requests: 150
warmup: 2
configs:
  - name: sim
    command: "{loadtrace} sim --listen 127.0.0.1:{port} --time-scale 2 --max-running {mr}"
    grid:
      mr: [2, 8]
    start-timeout: 60s
  - name: twin
    virtual:
      profile: default
PLAN

# --- 1. a config's load, live
$TM new-session -d -s d -x 120 -y 36 \
    "LC_ALL=C.UTF-8 '$L' sweep '$T/plan.yaml' -o '$T/out' --ui auto >'$T/out.txt'; echo EXIT=\$?; sleep 600" ||
    fail "tmux new-session"
wait_until 60 pane_has "loadtrace sweep · " ||
    { fail "the dashboard never came up: $(pane | tail -5)"; finish; }
wait_until 60 pane_has "configs  0 of 3 done" || fail "no configs line: $(pane | head -8)"
wait_until 120 pane_has "^ > sim-mr2 .*running: the load" || fail "sim-mr2's load not shown: $(pane | head -12)"
pane_has "^   twin .*to come" || fail "the configs to come are not shown: $(pane | head -12)"
# progress of the load: k/150 requests with 0 < k < 150, from its replay
loadline() { pane | grep -E '^ load +[0-9]+/150 requests' | tail -1; }
midway() { k=$(loadline | awk '{ split($2, a, "/"); print a[1] }'); [ -n "$k" ] && [ "$k" -gt 0 ] && [ "$k" -lt 150 ]; }
wait_until 120 midway || fail "the load's progress was not shown midway: $(pane | tail -8)"
wait_until 300 pane_has "^EXIT=" || fail "the sweep did not end: $(pane | tail -8)"
pane >"$T/pane.txt"
F=$T/pane.txt

# --- 2. the last frame against sweep.json
expect_eq "EXIT=0" "$(grep '^EXIT=' "$F")" "sweep's exit status"
expect_grep "configs  3 of 3 done" "$F"
for c in sim-mr2 sim-mr8 twin; do
    st=$(jq -r --arg c "$c" '.configs[$c].status' "$T/out/sweep.json")
    expect_eq complete "$st" "$c in sweep.json"
    grep -E "^   $c +[a-z]+ +$st \\(" "$F" >/dev/null || fail "$c: sweep.json says $st, the dashboard: $(grep "^ .  *$c " "$F" | tail -1)"
    # the load it watched is the one recorded, with the page it read
    jq -e --arg c "$c" '.configs[$c].replay | index("--live-metrics")' "$T/out/sweep.json" >/dev/null ||
        fail "$c: the load ran without --live-metrics"
    expect_eq 150 "$("$L" cat --no-header "$T/out/$c.lt.zst" | jq -s '[.[] | select(.rec == null)] | length')" \
        "$c: results recorded"
done
expect_grep "^best" "$T/out.txt"
stop_tmux

# --- q stops the sweep as SIGINT does: the load and its server stop, the
# config is recorded as interrupted, exit 130
cat >"$T/slow.yaml" <<PLAN
trace: t.lt.zst
load:
  concurrency: 1
  requests: 300
configs:
  - name: slow
    command: "{loadtrace} sim --listen 127.0.0.1:{port} --time-scale 0.5"
    start-timeout: 60s
PLAN
$TM new-session -d -s d -x 120 -y 36 \
    "LC_ALL=C.UTF-8 '$L' sweep '$T/slow.yaml' -o '$T/outq' >'$T/outq.txt'; echo EXIT=\$?; sleep 600" ||
    { fail "tmux new-session"; finish; }
slowmid() { pane | grep -qE '^ load +[1-9][0-9]*/300 requests'; }
wait_until 120 slowmid || fail "the slow load's progress was not shown: $(pane | tail -8)"
$TM send-keys -t d q
wait_until 120 pane_has "^EXIT=" || fail "q did not stop the sweep: $(pane | tail -8)"
pane >"$T/paneq.txt"
expect_eq "EXIT=130" "$(grep '^EXIT=' "$T/paneq.txt")" "exit status after q (as SIGINT)"
expect_eq interrupted "$(jq -r '.configs.slow.status' "$T/outq/sweep.json")" "slow in sweep.json after q"
expect_grep "^   slow .*interrupted" "$T/paneq.txt"
expect_grep "Resume with:" "$T/paneq.txt"
stop_tmux

# --- 3. standard error to a file: the lines as before
"$L" sweep "$T/plan.yaml" -o "$T/out2" --ui auto >"$T/out2.txt" 2>"$T/err2.txt"
expect_status 0 $? "sweep to a file"
expect_grep "^sweep: sim-mr2: running the load" "$T/err2.txt"
if grep -q "$(printf '\033')" "$T/err2.txt"; then fail "escape codes in sweep's stderr to a file"; fi
jq -e '.configs["sim-mr2"].replay | index("--live-metrics") | not' "$T/out2/sweep.json" >/dev/null ||
    fail "without the dashboard, the loads got --live-metrics"
"$L" sweep "$T/plan.yaml" -o "$T/out3" --ui dashboard 2>"$T/dash.err"
expect_status 2 $? "--ui dashboard without a terminal"
expect_grep "standard error is not a terminal" "$T/dash.err"
finish

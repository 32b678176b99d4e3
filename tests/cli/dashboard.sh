#!/bin/sh
# replay's terminal dashboard (--ui, docs/dashboard.md), driven as a person
# would: under tmux on a fixed-size terminal, read with capture-pane.
#  1. A run against a sim with faults: the dashboard is up while it runs;
#     its last frame, left on the normal screen, says what the results
#     file says (sent, ok, errors by class, tokens, TTFT and E2E p50/p99
#     and counts), and the sim's log saw as many requests as it says sent.
#  2. A long run resized to a too-small terminal and back, then stopped
#     with `q`: exit 130 as after SIGINT, and the last frame's unsent and
#     aborted are the results file's; and one stopped with Ctrl-C, alike.
#  3. Standard error to a file or a pipe: no escape code, the same lines
#     as --ui line; --ui dashboard there is a usage error.
#  4. replay --find-max: the live probes drawn, their verdicts and the
#     bracket in the dashboard's history, the answer after it.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

. "$LT_SRC/tests/cli/tmuxlib.sh"
# The row of metric NAME in the last latency table: p50w p99w p50 p99 count.
lat_row() { # file name
    grep -E "^ $2 +" "$1" | tail -1 | awk '{ print $4, $5, $6 }'
}
# Nearest-rank percentile P of the numbers on stdin, in ms.
pct_ms() { # p
    sort -n | awk -v p="$1" '{ v[NR] = $1 } END { k = int(p / 100 * NR); if (k < p / 100 * NR) k++; if (k < 1) k = 1; print v[k] / 1000 }'
}
# The histogram's answer for a value v (ms) is v .. v + v/1024, shown to
# 0.01 ms.
expect_pct() { # truth_ms shown_ms what
    awk -v t="$1" -v s="$2" 'BEGIN { exit !(s >= t - 0.006 && s <= t * (1 + 1 / 1000) + 0.006) }' ||
        fail "$3: the dashboard shows $2 ms, the results file says $1 ms"
}

# --- 1. a whole run with errors
"$L" synth --arrivals constant --rate 20 --requests 80 --in fixed:64 --out fixed:24 -q \
    -o "$T/t.lt.zst" || fail "synth"
start_sim dash --time-scale 10 --faults 500=0.1,disconnect=0.08:5
$TM new-session -d -s d -x 110 -y 36 \
    "LC_ALL=C.UTF-8 '$L' replay '$T/t.lt.zst' --target '$SIM_URL' -o '$T/r.lt.zst' --no-summary --ui auto; echo EXIT=\$?; sleep 300" ||
    fail "tmux new-session"
wait_until 60 pane_has "loadtrace replay · run 1 of 1" || fail "the dashboard never came up: $(pane | tail -5)"
wait_until 60 pane_has "latency (ms)" || fail "no latency table: $(pane | tail -5)"
wait_until 120 pane_has "^EXIT=" || fail "the run did not end: $(pane | tail -5)"
pane >"$T/pane1.txt"
expect_eq "EXIT=1" "$(grep '^EXIT=' "$T/pane1.txt")" "exit status with failed requests"
stop_sim
# the last frame sits above the summary lines, on the normal screen
expect_grep "^ loadtrace replay · run 1 of 1" "$T/pane1.txt"
expect_grep "^loadtrace replay: 80 requests" "$T/pane1.txt"
results "$T/r.lt.zst" >"$T/res.jsonl"
want_sent=$(jq -s '[.[] | select(.sent != null)] | length' "$T/res.jsonl")
want_ok=$(jq -s '[.[] | select(.err == null and (.cancelled | not))] | length' "$T/res.jsonl")
want_err=$(jq -s '[.[] | select(.err != null and .err != "unsent")] | length' "$T/res.jsonl")
want_out=$(jq -s '[.[] | .out // 0] | add' "$T/res.jsonl")
F="$T/pane1.txt"
expect_eq "$want_sent" "$(after "$F" '^ requests' sent)" "sent"
expect_eq "$want_ok" "$(after "$F" '^ requests' ok)" "ok"
expect_eq "$want_err" "$(after "$F" '^ requests' errors)" "errors"
expect_eq 0 "$(after "$F" '^ requests' unsent)" "unsent"
expect_eq "$want_out" "$(after "$F" '^ in flight' out)" "output tokens"
expect_eq 0 "$(after "$F" '^ in flight' flight)" "in flight at the end"
[ "$want_err" -ge 2 ] || fail "the faults made only $want_err errors"
[ "$want_ok" -ge 40 ] || fail "only $want_ok ok"
# errors by class, each as the results file counts it
for cls in $(jq -r 'select(.err != null) | .err' "$T/res.jsonl" | sort -u); do
    n=$(jq -s --arg c "$cls" '[.[] | select(.err == $c)] | length' "$T/res.jsonl")
    grep '^ by class' "$F" | tail -1 | grep -q "$cls $n\b" ||
        fail "errors of class $cls: the results say $n, the dashboard: $(grep '^ by class' "$F" | tail -1)"
done
# the sim saw the requests the dashboard says were sent
expect_eq "$want_sent" "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "sent vs the sim's log"
# latencies of the ok results: TTFT = ft - sent, E2E = end - sent
jq -r 'select(.err == null and (.cancelled | not) and .ft != null) | .ft - .sent' "$T/res.jsonl" >"$T/ttft"
jq -r 'select(.err == null and (.cancelled | not) and .end != null) | .end - .sent' "$T/res.jsonl" >"$T/e2e"
set -- $(lat_row "$F" TTFT)
expect_eq "$(wc -l <"$T/ttft" | tr -d ' ')" "$3" "TTFT count"
expect_pct "$(pct_ms 50 <"$T/ttft")" "$1" "TTFT p50 of the run"
expect_pct "$(pct_ms 99 <"$T/ttft")" "$2" "TTFT p99 of the run"
set -- $(lat_row "$F" E2E)
expect_eq "$(wc -l <"$T/e2e" | tr -d ' ')" "$3" "E2E count"
expect_pct "$(pct_ms 50 <"$T/e2e")" "$1" "E2E p50 of the run"
expect_pct "$(pct_ms 99 <"$T/e2e")" "$2" "E2E p99 of the run"
stop_tmux

# --- 2. resize, too small, back, then q (an ASCII terminal this time)
"$L" synth --arrivals constant --rate 20 --requests 600 --in fixed:64 --out fixed:40 -q \
    -o "$T/long.lt.zst" || fail "synth long"
start_sim long
$TM new-session -d -s d -x 100 -y 34 \
    "LC_ALL=C '$L' replay '$T/long.lt.zst' --target '$SIM_URL' -o '$T/rq.lt.zst' --no-summary; echo EXIT=\$?; sleep 300" ||
    fail "tmux new-session"
wait_until 60 pane_has "latency (ms)" || fail "no dashboard for the long run: $(pane | tail -5)"
wait_sim_metric 10 vllm:num_requests_running vllm:num_requests_waiting
$TM resize-window -t d -x 50 -y 12
wait_until 30 pane_has "terminal too small: 50x12" || fail "no word of a too-small terminal: $(pane | head -5)"
$TM resize-window -t d -x 100 -y 34
wait_until 30 pane_has "latency (ms)" || fail "the dashboard did not come back after the resize"
$TM send-keys -t d q
wait_until 90 pane_has "^EXIT=" || fail "q did not stop the run: $(pane | tail -5)"
pane >"$T/pane2.txt"
stop_sim
expect_eq "EXIT=130" "$(grep '^EXIT=' "$T/pane2.txt")" "exit status after q (as SIGINT)"
results "$T/rq.lt.zst" >"$T/resq.jsonl"
expect_eq 600 "$(wc -l <"$T/resq.jsonl" | tr -d ' ')" "every request recorded after q"
F="$T/pane2.txt"
want_unsent=$(jq -s '[.[] | select(.err == "unsent")] | length' "$T/resq.jsonl")
want_aborted=$(jq -s '[.[] | select(.err == "aborted")] | length' "$T/resq.jsonl")
[ "$want_unsent" -ge 1 ] || fail "q came after the last send"
expect_eq "$want_unsent" "$(after "$F" '^ requests' unsent)" "unsent after q"
expect_eq "$(jq -s '[.[] | select(.sent != null)] | length' "$T/resq.jsonl")" \
    "$(after "$F" '^ requests' sent)" "sent after q"
if [ "$want_aborted" -gt 0 ]; then
    grep '^ by class' "$F" | tail -1 | grep -q "aborted $want_aborted\b" ||
        fail "aborted: the results say $want_aborted, the dashboard: $(grep '^ by class' "$F" | tail -1)"
fi
expect_grep "run 0 stopped by SIGINT" "$F"
stop_tmux
# ... and Ctrl-C, which the terminal makes SIGINT, does the same
start_sim ctrlc
$TM new-session -d -s d -x 100 -y 34 \
    "'$L' replay '$T/long.lt.zst' --target '$SIM_URL' -o '$T/rc.lt.zst' --no-summary; echo EXIT=\$?; sleep 300" ||
    fail "tmux new-session"
wait_until 60 pane_has "latency (ms)" || fail "no dashboard for the Ctrl-C run: $(pane | tail -5)"
wait_sim_metric 5 vllm:num_requests_running vllm:num_requests_waiting
$TM send-keys -t d C-c
wait_until 90 pane_has "^EXIT=" || fail "Ctrl-C did not stop the run: $(pane | tail -5)"
pane >"$T/pane2c.txt"
stop_sim
expect_eq "EXIT=130" "$(grep '^EXIT=' "$T/pane2c.txt")" "exit status after Ctrl-C"
expect_eq 600 "$(results "$T/rc.lt.zst" | wc -l | tr -d ' ')" "every request recorded after Ctrl-C"
expect_eq "$(results "$T/rc.lt.zst" | jq -s '[.[] | select(.err == "unsent")] | length')" \
    "$(after "$T/pane2c.txt" '^ requests' unsent)" "unsent after Ctrl-C"
stop_tmux

# --- 4. a capacity search: the live probes on the dashboard, each probe's
# verdict in its history and the bracket; as many probes as runs recorded
"$L" synth --arrivals poisson --rate 10 --requests 120 --in fixed:32 --out fixed:16 -q \
    -o "$T/fm.lt.zst" || fail "synth fm"
start_sim fm --time-scale 20
$TM new-session -d -s d -x 110 -y 40 \
    "LC_ALL=C.UTF-8 '$L' replay '$T/fm.lt.zst' --target '$SIM_URL' --find-max rate --slo ttft=2s --max-probes 2 -o '$T/fm.out.lt.zst'; echo EXIT=\$?; sleep 300" ||
    fail "tmux new-session"
wait_until 60 pane_has "loadtrace replay --find-max" || fail "no dashboard for the search: $(pane | tail -5)"
wait_until 120 pane_has "^EXIT=" || fail "the search did not end: $(pane | tail -5)"
pane >"$T/pane4.txt"
stop_sim
expect_eq "EXIT=0" "$(grep '^EXIT=' "$T/pane4.txt")" "exit status of the search"
expect_grep "^ *probe 1: rate [0-9.]*: [0-9.]* of [0-9]* met the SLO: meets" "$T/pane4.txt"
expect_grep "^ *probe 2: rate " "$T/pane4.txt"
expect_grep "bracket: .* meets the SLO, .* fails it (2 live probes)" "$T/pane4.txt"
expect_grep "^capacity (rate, SLO ttft=2s" "$T/pane4.txt"
expect_eq 2 "$(runs "$T/fm.out.lt.zst" | wc -l | tr -d ' ')" "runs recorded for 2 probes"
stop_tmux

# --- 3. to a file or a pipe: the lines of today, no escape codes
start_sim pipe --profile fast
"$L" synth --arrivals constant --rate 50 --requests 20 --in fixed:16 --out fixed:4 -q \
    -o "$T/s.lt.zst" || fail "synth small"
TERM=xterm "$L" replay "$T/s.lt.zst" --target "$SIM_URL" -o "$T/p1.lt.zst" --no-summary \
    --no-server-metrics 2>&1 | cat >"$T/pipe.err"
TERM=xterm "$L" replay "$T/s.lt.zst" --target "$SIM_URL" -o "$T/p2.lt.zst" --no-summary \
    --no-server-metrics --ui line 2>"$T/file.err"
expect_status 0 $? "replay --ui line to a file"
if grep -q "$(printf '\033')" "$T/pipe.err"; then fail "escape codes in a pipe"; fi
# numbers vary from run to run, and so does the check's verdict on them
norm() { sed 's/[+-]\{0,1\}[0-9][0-9.]*/N/g' "$1" | grep -v 'CHECK run'; }
norm "$T/pipe.err" >"$T/pipe.n"
norm "$T/file.err" >"$T/file.n"
cmp -s "$T/pipe.n" "$T/file.n" || fail "auto to a pipe is not the line's output: $(diff "$T/pipe.n" "$T/file.n")"
expect_grep "^loadtrace replay: 20 requests, 20 ok" "$T/pipe.err"
TERM=xterm "$L" replay "$T/s.lt.zst" --target "$SIM_URL" -o "$T/p3.lt.zst" --ui dashboard 2>"$T/dash.err"
expect_status 2 $? "--ui dashboard without a terminal"
expect_grep "ui dashboard: standard error is not a terminal" "$T/dash.err"
[ ! -e "$T/p3.lt.zst" ] || fail "a refused run wrote its results file"
"$L" replay "$T/s.lt.zst" --target "$SIM_URL" -o "$T/p4.lt.zst" --ui fancy 2>"$T/bad.err"
expect_status 2 $? "--ui fancy"
expect_grep "ui: invalid value 'fancy'" "$T/bad.err"
stop_sim
finish

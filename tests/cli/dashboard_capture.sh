#!/bin/sh
# capture's dashboard and live metrics (docs/dashboard.md "capture"), under
# tmux on a fixed-size terminal, read with capture-pane, in front of a sim
# with faults:
#  1. while long streams run, the dashboard shows them as connections and
#     requests in flight;
#  2. scraped during the capture, --live-metrics counts what the trace
#     file holds and the bytes the clients (curl) received;
#  3. after `q`, the last frame, left on the normal screen, says what the
#     trace file says: records, ok and failed, output and prompt tokens,
#     TTFT/TPOT/E2E p50/p99 and counts; the sim's log saw as many requests;
#     the bytes relayed are the bytes curl received;
#     (and a resize to a too-small terminal and back survived);
#  4. standard error to a file: no escape code, the lines as before; --ui
#     dashboard there is a usage error.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"
L=$LOADTRACE

. "$LT_SRC/tests/cli/tmuxlib.sh"
lat_row() { # file name: p50 p99 count of the whole capture
    grep -E "^ $2 +" "$1" | tail -1 | awk '{ print $4, $5, $6 }'
}
pct_ms() { # p: nearest-rank percentile of the numbers (us) on stdin, in ms
    sort -n | awk -v p="$1" '{ v[NR] = $1 } END { k = int(p / 100 * NR); if (k < p / 100 * NR) k++; if (k < 1) k = 1; print v[k] / 1000 }'
}
expect_pct() { # truth_ms shown_ms what: the histogram says v .. v + v/1024, to 0.01 ms
    awk -v t="$1" -v s="$2" 'BEGIN { exit !(s >= t - 0.006 && s <= t * (1 + 1 / 1000) + 0.006) }' ||
        fail "$3: the dashboard shows $2 ms, the trace says $1 ms"
}
metric() { # name: its value on the live page
    curl -sS --max-time 5 "$LIVE" 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'
}
streams() { jq -c 'select(.seq != null and .stream == true)' "$1"; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }

start_sim up --faults 500=0.15,seed=5 --time-scale 0.25
server_start_tty "$TM" d 110x36 cap env LC_ALL=C.UTF-8 "$L" capture --upstream "$SIM_URL" \
    -o "$T/cap.lt.zst" --ui auto --live-metrics 127.0.0.1:0 || exit 1
CAP_URL=$SERVER_URL
wait_until 30 pane_has "loadtrace capture · port" ||
    { fail "the dashboard never came up: $(pane | tail -5)"; finish; }
wait_until 30 pane_has "live metrics on http" || fail "no live metrics URL on the dashboard"
LIVE=$(pane | grep -o 'http://127.0.0.1:[0-9]*/metrics' | tail -1)

# --- 1. three long streams at once: connections and requests in flight
body() { # max_tokens
    echo "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"tell me a long story please\"}],\"max_tokens\":$1,\"ignore_eos\":true,\"stream\":true}"
}
: >"$T/sizes"
# (the sim's faults are drawn by request number: with seed=5 the first
# three are not faulted, which the sim's log confirms below)
for k in 1 2 3; do
    (curl -sS -N --max-time 60 -o "$T/long$k" -w '%{size_download}\n' -H 'Content-Type: application/json' \
        --data-binary "$(body 100)" "$CAP_URL/v1/chat/completions" >>"$T/sizes" 2>/dev/null) &
    longs="${longs:-} $!"
done
wait_until 30 pane_has "connections 3   in flight 3" ||
    fail "three streams open, the dashboard says: $(pane | grep -E '^ proxy' | tail -1)"
wait $longs

# --- 2. more requests, some of them faulted (500), one at a time
k=0
while [ $k -lt 30 ]; do
    curl -sS --max-time 20 -o "$T/s$k" -w '%{size_download}\n' -H 'Content-Type: application/json' \
        --data-binary "$(body $((k % 7 + 2)))" "$CAP_URL/v1/chat/completions" >>"$T/sizes" 2>/dev/null
    k=$((k + 1))
done
want_bytes=$(awk '{ s += $1 } END { print s }' "$T/sizes")
n_req=$(wc -l <"$T/sizes" | tr -d ' ')
expect_eq 33 "$n_req" "requests sent by curl"
wait_until 20 metric_is loadtrace_capture_records_total 33 ||
    fail "live metrics: $(metric loadtrace_capture_records_total) records, 33 sent"
expect_eq "$want_bytes" "$(metric loadtrace_capture_bytes_relayed_total)" "live bytes relayed vs curl's"
expect_eq 0 "$(metric loadtrace_capture_requests_in_flight)" "live requests in flight at the end"
# every capture series the Grafana board charts is on the page
curl -sS --max-time 5 "$LIVE" >"$T/page.txt" 2>/dev/null
for n in $(grep -o 'loadtrace_capture_[a-z0-9_]*' "$LT_SRC/docs/grafana-loadtrace.json" | sort -u); do
    grep -q "^$n[ {]" "$T/page.txt" || fail "docs/grafana-loadtrace.json charts $n, which capture does not serve"
done
grep -qiE 'authorization|bearer|content-type|tell me a long story' "$T/page.txt" &&
    fail "capture's live page holds a header or a prompt"
# the trace is readable while capture runs (a frame closed each second)
wait_until 10 sh -c "'$L' cat --no-header '$T/cap.lt.zst' 2>/dev/null | wc -l | grep -qx 33"
expect_eq "$(records "$T/cap.lt.zst" | jq -s '[.[] | .out // 0] | add')" \
    "$(metric loadtrace_capture_output_tokens_total)" "live output tokens vs the trace"

# a resize to a too-small terminal and back
$TM resize-window -t d -x 50 -y 12
wait_until 30 pane_has "terminal too small: 50x12" || fail "no word of a too-small terminal: $(pane | head -3)"
$TM resize-window -t d -x 110 -y 36
wait_until 30 pane_has "latency (ms)" || fail "the dashboard did not come back after the resize"

# --- 3. q: the last frame against the trace file
$TM send-keys -t d q
wait_until 60 pane_has "^EXIT=" || fail "q did not stop capture: $(pane | tail -5)"
pane >"$T/pane.txt"
F=$T/pane.txt
expect_eq "EXIT=0" "$(grep '^EXIT=' "$F")" "exit status after q (as SIGINT)"
expect_grep "^ stopped (interrupted): the trace is closed" "$F"
expect_grep "^loadtrace capture: interrupted: " "$F"
records "$T/cap.lt.zst" >"$T/recs"
want_n=$(wc -l <"$T/recs" | tr -d ' ')
expect_eq 33 "$want_n" "records in the trace"
want_ok=$(jq -s '[.[] | select(.failed != true)] | length' "$T/recs")
want_failed=$(jq -s '[.[] | select(.failed == true)] | length' "$T/recs")
[ "$want_failed" -ge 1 ] || fail "the faults made no failed request"
expect_eq "$want_n" "$(after "$F" '^ recorded' recorded)" "records"
expect_eq 0 "$(after "$F" '^ recorded' backlog)" "writer backlog at the end"
expect_eq "$want_ok" "$(after "$F" '^ answers' ok)" "ok"
expect_eq "$want_failed" "$(after "$F" '^ answers' failed)" "failed"
expect_eq "$(jq -s '[.[] | .out // 0] | add' "$T/recs")" "$(after "$F" '^ tokens' out)" "output tokens"
expect_eq "$(jq -s '[.[] | .in // 0] | add' "$T/recs")" "$(after "$F" '^ tokens' in)" "prompt tokens"
expect_eq "$want_bytes" "$(grep '^ relayed' "$F" | tail -1 | sed 's/.*(\([0-9]*\) bytes).*/\1/')" \
    "bytes relayed vs what curl received"
jq -r 'select(.failed != true and .orig.ttft != null) | .orig.ttft' "$T/recs" >"$T/ttft"
jq -r 'select(.failed != true and .orig.e2e != null) | .orig.e2e' "$T/recs" >"$T/e2e"
jq -r 'select(.failed != true and .orig.ttft != null and .orig.e2e != null and .out > 1) |
    ((.orig.e2e - .orig.ttft) / (.out - 1) | floor)' "$T/recs" >"$T/tpot"
for m in TTFT E2E TPOT; do
    f=$T/$(echo $m | tr A-Z a-z)
    set -- $(lat_row "$F" $m)
    expect_eq "$(wc -l <"$f" | tr -d ' ')" "$3" "$m count"
    expect_pct "$(pct_ms 50 <"$f")" "$1" "$m p50"
    expect_pct "$(pct_ms 99 <"$f")" "$2" "$m p99"
done
stop_tmux
stop $SIM_PID sim # its log is whole once it stopped
expect_eq "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "$want_n" "records vs the sim's log"
expect_eq "none none none" "$(jq -r 'select(.seq != null and .seq <= 3) | .fault' "$SIM_LOG" | tr '\n' ' ' | sed 's/ $//')" \
    "the faults of the sim's first three requests (the three long streams)"

# --- 4. standard error to a file: the lines as before, no escape code
start_sim up2
start_capture plain "$SIM_URL" --ui auto
req "$CAP_URL" /v1/chat/completions "$(body 4)" "$T/p1"
stop $CAP_PID capture
expect_grep "^loadtrace capture: listening on port" "$SERVERS_DIR/plain.err"
expect_grep "^loadtrace capture: terminated: 1 requests, 1 recorded" "$SERVERS_DIR/plain.err"
if grep -q "$(printf '\033')" "$SERVERS_DIR/plain.err"; then fail "escape codes in capture's stderr to a file"; fi
"$L" capture --upstream "$SIM_URL" -o "$T/x.lt.zst" --ui dashboard 2>"$T/dash.err"
expect_status 2 $? "--ui dashboard without a terminal"
expect_grep "standard error is not a terminal" "$T/dash.err"
"$L" capture --upstream "$SIM_URL" -o "$T/x.lt.zst" --ui sideways 2>/dev/null
expect_status 2 $? "--ui sideways"
stop $SIM_PID sim
finish

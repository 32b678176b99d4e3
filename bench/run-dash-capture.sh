#!/bin/sh
# What capture's dashboard costs (bench/README.md, "The dashboard's cost"):
# the same closed loop through the same capture in front of the same sim,
# capture on a tmux terminal (110x30) with --ui none, dashboard, and
# dashboard with --live-metrics scraped every second, interleaved, REPS
# times each. Capture is pinned to core 0; the sim (the token5ms profile:
# a token every 5 ms per stream, one token per SSE event) and the replay
# that drives it to core 1. Figure: capture's whole CPU (/usr/bin/time:
# every thread, the dashboard's and the recorder's included) per output
# token relayed.
# Usage: sh bench/run-dash-capture.sh BUILD_DIR OUT_DIR   (REPS=3, N=400 requests)
set -eu
B=$1
OUT=$2/dash-capture
SRC=$(cd "$(dirname "$0")/.." && pwd)
L="$(cd "$B" && pwd)/loadtrace"
REPS=${REPS:-3}
N=${N:-400}
mkdir -p "$OUT"
SERVERS_DIR=$OUT
. "$SRC/tests/lib/servers.sh"
for t in tmux jq curl; do
    command -v $t >/dev/null || { echo "run-dash-capture: $t is missing (scripts/deps.sh)" >&2; exit 1; }
done
TM="tmux -S $OUT/tmux.sock"
servers_at_exit "$TM kill-server 2>/dev/null || :"
pane_has() { $TM capture-pane -p -t b | grep -q -- "$1"; }

"$L" synth --arrivals constant --rate 1 --requests "$N" --in fixed:32 --out fixed:500 -q \
    -o "$OUT/t.lt.zst"
server_start sim taskset -c 1 "$L" sim --profile "$SRC/bench/sim-token5ms.profile" -q
SIM_URL=$SERVER_URL

run() { # mode
    mode=$1
    extra=
    case $mode in
    none) ui=none ;;
    dashboard) ui=dashboard ;;
    dashboard+metrics) ui=dashboard extra="--live-metrics 127.0.0.1:0" ;;
    esac
    rm -f "$OUT/time"
    # shellcheck disable=SC2086
    server_start_tty "$TM" b 110x30 cap env LC_ALL=C.UTF-8 taskset -c 0 /usr/bin/time -f '%e %U %S' \
        -o "$OUT/time" "$L" capture --upstream "$SIM_URL" -o "$OUT/cap.lt.zst" --ui $ui $extra
    CAP_URL=$SERVER_URL
    scraper=
    if [ "$mode" = dashboard+metrics ]; then
        wait_until 30 pane_has "live metrics on http"
        live=$($TM capture-pane -p -t b | grep -o 'http://127.0.0.1:[0-9]*/metrics' | tail -1)
        # a scraper once a second, as Prometheus would (more often than its default 15 s)
        (while [ ! -s "$OUT/time" ]; do
            curl -s --max-time 2 -o /dev/null "$live" || :
            sleep 1
        done) &
        scraper=$!
    fi
    taskset -c 1 "$L" replay "$OUT/t.lt.zst" --target "$CAP_URL" --concurrency 100 -o "$OUT/r.lt.zst" \
        --no-summary --no-calibrate -q
    # the dashboard thread's own CPU (ns, /proc/.../schedstat) before it ends
    shell=$($TM display -p -t b '#{pane_pid}')
    tpid=$(ps -o pid= --ppid "$shell" | head -1 | tr -d ' ')
    cpid=$(ps -o pid= --ppid "$tpid" | head -1 | tr -d ' ')
    dash_ns=0
    for task in /proc/"$cpid"/task/*; do
        [ "$(cat "$task/comm" 2>/dev/null)" = lt-dash ] && dash_ns=$(cut -d' ' -f1 "$task/schedstat")
    done
    $TM send-keys -t b C-c
    wait_until 60 test -s "$OUT/time" || { echo "run-dash-capture: $mode did not end" >&2; exit 1; }
    [ -z "$scraper" ] || wait "$scraper"
    $TM kill-server 2>/dev/null || :
    read wall user sys <"$OUT/time"
    tokens=$("$L" cat --no-header "$OUT/cap.lt.zst" | jq -s '[.[] | .out // 0] | add')
    echo "$mode $wall $user $sys $tokens $dash_ns" >>"$OUT/runs"
}

rm -f "$OUT/runs"
for rep in $(seq "$REPS"); do
    for mode in none dashboard dashboard+metrics; do
        run "$mode"
    done
done
server_stop sim || :
echo "### capture's dashboard: $REPS runs per mode, $N requests x 500 tokens, C=100, sim token5ms"
echo "mode               wall_s  cpu_s  capture us/token  dashboard thread s  its us/token  (medians)"
for mode in none dashboard dashboard+metrics; do
    awk -v m="$mode" '$1 == m { n++; w[n] = $2; c[n] = $3 + $4; p[n] = ($3 + $4) / $5 * 1e6
            d[n] = $6 / 1e9; dt[n] = $6 / 1e3 / $5 }
        function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END { printf "%-18s %6.2f  %5.2f  %16.3f  %18.3f  %12.4f\n", m, med(w, n), med(c, n), med(p, n), med(d, n), med(dt, n) }' "$OUT/runs"
done

#!/bin/sh
# What the dashboard costs (bench/README.md, "dashboard"): the same closed
# loop against the same sim, on the same tmux terminal (120x40), with --ui
# none, line and dashboard (and dashboard with --live-metrics scraped every
# second), interleaved, REPS times each. Replay is pinned to core 0, the sim
# (a separate process, the token5ms profile: a token every 5 ms per
# stream) to core 1. Two figures per run: the whole replay process's CPU
# (/usr/bin/time: every thread, the dashboard's included) per output token,
# and the engine thread's alone (the run's check record, RUSAGE_THREAD).
# Usage: sh bench/run-dash.sh BUILD_DIR OUT_DIR   (REPS=3 and N=400 requests by default)
set -eu
B=$1
OUT=$2/dash
SRC=$(cd "$(dirname "$0")/.." && pwd)
L="$(cd "$B" && pwd)/loadtrace"
REPS=${REPS:-3}
mkdir -p "$OUT"
SERVERS_DIR=$OUT
. "$SRC/tests/lib/servers.sh"
command -v tmux >/dev/null || { echo "run-dash: tmux is missing (scripts/deps.sh)" >&2; exit 1; }
TM="tmux -S $OUT/tmux.sock"
servers_at_exit "$TM kill-server 2>/dev/null || :"

N=${N:-400}
"$L" synth --arrivals constant --rate 1 --requests "$N" --in fixed:32 --out fixed:500 -q \
    -o "$OUT/t.lt.zst"
server_start sim taskset -c 1 "$L" sim --profile "$SRC/bench/sim-token5ms.profile" -q
URL=$SERVER_URL

run() { # mode rep
    mode=$1
    extra=
    case $mode in
    none) ui=none ;;
    line) ui=line ;;
    dashboard) ui=dashboard ;;
    dashboard+metrics)
        # a free port, chosen here: the dashboard has the terminal, so
        # replay's word of its port is not in a file to read
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        ui=dashboard extra="--live-metrics 127.0.0.1:$port" ;;
    esac
    rm -f "$OUT/done" "$OUT/time"
    $TM new-session -d -s b -x 120 -y 40 \
        "LC_ALL=C.UTF-8 taskset -c 0 /usr/bin/time -f '%e %U %S' -o '$OUT/time' '$L' replay '$OUT/t.lt.zst' --target '$URL' --concurrency 200 -o '$OUT/r.lt.zst' --no-summary --no-calibrate --ui $ui $extra; echo \$? >'$OUT/done'"
    scraper=
    if [ "$mode" = dashboard+metrics ]; then
        # a scraper once a second, as Prometheus would (more often than its default 15 s)
        (while [ ! -e "$OUT/done" ]; do
            curl -s --max-time 2 -o /dev/null "http://127.0.0.1:$port/metrics" || :
            sleep 1
        done) &
        scraper=$!
    fi
    wait_until 300 test -e "$OUT/done" || { echo "run-dash: $mode did not end" >&2; exit 1; }
    [ -z "$scraper" ] || wait "$scraper"
    $TM kill-server 2>/dev/null || :
    read wall user sys <"$OUT/time"
    "$L" cat --no-header "$OUT/r.lt.zst" | jq -r --arg m "$mode" --arg w "$wall" --arg u "$user" --arg s "$sys" \
        'select(.rec == "check") | "\($m) \($w) \($u) \($s) \(.cpu_s) \(.out_tokens)"' >>"$OUT/runs"
}

rm -f "$OUT/runs"
for rep in $(seq "$REPS"); do
    for mode in none line dashboard dashboard+metrics; do
        run "$mode" "$rep"
    done
done
server_stop sim || :
echo "### the dashboard's cost: $REPS runs per mode, $N requests x 500 tokens, C=200, sim token5ms"
# other: the process less the engine's thread (set-up, and the dashboard's
# and libmicrohttpd's threads), in s per run and us per token
echo "mode               wall_s  process us/token  engine us/token  other s  other us/token  (medians)"
for mode in none line dashboard dashboard+metrics; do
    awk -v m="$mode" '$1 == m { n++; w[n] = $2; p[n] = ($3 + $4) / $6 * 1e6; e[n] = $5 / $6 * 1e6
            o[n] = $3 + $4 - $5; ot[n] = o[n] / $6 * 1e6 }
        function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END { printf "%-18s %6.2f  %16.3f  %15.3f  %7.3f  %14.3f\n", m, med(w, n), med(p, n), med(e, n), med(o, n), med(ot, n) }' "$OUT/runs"
done

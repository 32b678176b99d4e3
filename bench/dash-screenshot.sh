#!/bin/sh
# The dashboard's pictures in docs/images/ (docs/dashboard.md), from real
# runs against the sim: replay's dashboard midway through a run with
# faults and the sim's /metrics scraped, and capture's in front of a sim
# while a replay drives traffic through it. Each frame is read from a tmux
# terminal with its colours (capture-pane -e), turned into HTML by aha and
# photographed by headless chromium.
# Usage: sh bench/dash-screenshot.sh BUILD_DIR [OUT_DIR]   (OUT_DIR default
# docs/images). Needs tmux, aha and chromium (Debian: apt-get install -y aha
# chromium); says which is missing and does nothing without them.
set -eu
B=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${2:-$SRC/docs/images}
L="$(cd "$B" && pwd)/loadtrace"
missing=
for t in tmux aha chromium jq; do command -v $t >/dev/null || missing="$missing $t"; done
if [ -n "$missing" ]; then
    echo "dash-screenshot: missing:$missing (Debian: apt-get install -y aha chromium tmux jq)" >&2
    exit 1
fi
W=$(mktemp -d)
SERVERS_DIR=$W
. "$SRC/tests/lib/servers.sh"
TM="tmux -S $W/tmux.sock"
servers_at_exit "$TM kill-server 2>/dev/null || :; rm -rf '$W'"
pane_has() { $TM capture-pane -p -t d | grep -q -- "$1"; }

# A frame of session d as OUT/NAME.png (COLSxROWS character cells).
shoot() { # name cols rows
    $TM capture-pane -e -p -t d >"$W/$1.ansi"
    aha --black --title "loadtrace $1" <"$W/$1.ansi" |
        sed 's|<pre>|<pre style="font-family: DejaVu Sans Mono, monospace; font-size: 13px; line-height: 1.2; margin: 8px">|' \
            >"$W/$1.html"
    # 8 px per column and 16 per row at 13 px DejaVu Sans Mono, plus the margins
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=$(($2 * 8 + 24)),$(($3 * 16 + 20)) --screenshot="$OUT/$1.png" \
        "file://$W/$1.html" >/dev/null 2>&1
    [ -s "$OUT/$1.png" ] || { echo "dash-screenshot: chromium made no $OUT/$1.png" >&2; exit 1; }
    echo "dash-screenshot: $OUT/$1.png"
}

mkdir -p "$OUT"
"$L" synth --arrivals poisson --rate 16 --requests 900 --in lognormal:400,0.6 --out lognormal:120,0.5 \
    --seed 7 -q -o "$W/t.lt.zst"

# --- replay, midway through a run against a sim with faults
server_start sim "$L" sim --time-scale 3 --max-running 32 --faults 500=0.02,disconnect=0.02:5 -q
SIM_URL=$SERVER_URL
$TM new-session -d -s d -x 110 -y 27 \
    "LC_ALL=C.UTF-8 TERM=xterm-256color '$L' replay '$W/t.lt.zst' --target '$SIM_URL' -o '$W/r.lt.zst' --no-summary --ui dashboard; sleep 600"
wait_until 60 pane_has "latency (ms)"
midway() { $TM capture-pane -p -t d | grep -qE '^ +(4[0-9]|5[0-9])\.[0-9] %'; }
wait_until 300 midway || { echo "dash-screenshot: the run never reached 40 %" >&2; exit 1; }
shoot dashboard-replay 110 27
$TM capture-pane -p -t d | sed 's/ *$//' >"$OUT/dashboard-replay.txt"
$TM kill-server 2>/dev/null || :

# --- capture, in front of the sim, while a replay drives it
server_start_tty "$TM" d 110x24 cap env LC_ALL=C.UTF-8 TERM=xterm-256color "$L" capture \
    --upstream "$SIM_URL" -o "$W/cap.lt.zst" --ui dashboard
"$L" replay "$W/t.lt.zst" --target "$SERVER_URL" --requests 300 -o "$W/r2.lt.zst" --no-summary -q \
    2>/dev/null &
feeder=$!
server_track $feeder
wait_until 60 pane_has "latency (ms)"
records_at_least() { $TM capture-pane -p -t d | awk '/^ recorded/ { n = $2 } END { exit !(n + 0 >= 150) }'; }
wait_until 300 records_at_least || { echo "dash-screenshot: capture never recorded 150" >&2; exit 1; }
shoot dashboard-capture 110 24

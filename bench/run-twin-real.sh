#!/bin/sh
# The twin on a real server: llama.cpp's llama-server on loopback, fitted
# from two loads (a closed loop at 1 and at the server's slots), then
# asked for held-out loads it never saw, each predicted in virtual time and
# checked against a live run of it (compare --check's twin table):
#   c2    another concurrency (2)
#   half  an open loop (Poisson) at about half of the measured capacity
#   sat   an open loop near saturation (0.9 of it)
#   long  another trace: prompts of 200 to 600 tokens, at concurrency 2
# Every live run starts cold: the server runs with --slot-save-path and
# --cache-ram 0, so replay's --reset-prefix-cache erases every slot before
# each run (the run record says "cache at start: reset"), and the virtual
# run starts with an empty cache too.
#
# Usage: LLAMA_SERVER=path/llama-server LT_MODEL=path/model.gguf sh bench/run-twin-real.sh [BUILD_DIR]
#   LT_PORT     port for llama-server on 127.0.0.1 (default 18480; must be free)
#   LT_THREADS  llama-server threads (default 1: on a shared machine a
#               second thread waits at every barrier for a core)
#   LT_SLOTS    llama-server -np (default 4)
#   LT_N        requests per run (default 40)
#   LT_NICE     run llama-server and the live replays at this nice value
#               (e.g. -10, as root: on a machine shared with other work the
#               server's step time otherwise follows their load, and no
#               fit of one load predicts another taken minutes later)
#   KEEP=DIR    keep every file (results, fit, predictions) in DIR
#   REUSE=DIR   refit and predict again from the live runs a KEEP=DIR run
#               left there (no server is started; LLAMA_SERVER and LT_MODEL
#               are not needed)
# Prints one line per held-out load and metric (p50 and p90 error, %) and
# the throughput error; exit 0 when every figure is within the targets
# (p50 10 %, p90 15 %, throughput 5 %), 3 when not, 2 when something is
# missing.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build}
L=$B/loadtrace
if [ -n "${REUSE:-}" ]; then
    LLAMA_SERVER=${LLAMA_SERVER:-/bin/true}
    LT_MODEL=${LT_MODEL:-$REUSE/a.lt.zst}
    KEEP=$REUSE
fi
if [ -z "${LLAMA_SERVER:-}" ] || [ ! -x "${LLAMA_SERVER:-}" ]; then
    echo "run-twin-real.sh: set LLAMA_SERVER to an executable llama-server (got '${LLAMA_SERVER:-}')" >&2
    exit 2
fi
if [ -z "${LT_MODEL:-}" ] || [ ! -r "${LT_MODEL:-}" ]; then
    echo "run-twin-real.sh: set LT_MODEL to a readable GGUF model (got '${LT_MODEL:-}')" >&2
    exit 2
fi
[ -x "$L" ] || { echo "run-twin-real.sh: no loadtrace at $L (build it, or pass BUILD_DIR)" >&2; exit 2; }
PORT=${LT_PORT:-18480}
THREADS=${LT_THREADS:-1}
SLOTS=${LT_SLOTS:-4}
N=${LT_N:-40}
URL=http://127.0.0.1:$PORT
T=${KEEP:-$(mktemp -d)}
mkdir -p "$T/slots"
if [ -n "${REUSE:-}" ]; then :; else
if curl -s --max-time 2 "$URL/health" >/dev/null 2>&1; then
    echo "run-twin-real.sh: something already answers on $URL; set LT_PORT" >&2
    exit 2
fi
NICE=${LT_NICE:+nice -n $LT_NICE}
$NICE "$LLAMA_SERVER" -m "$LT_MODEL" --host 127.0.0.1 --port "$PORT" -np "$SLOTS" -c $((SLOTS * 2048)) \
    -t "$THREADS" --metrics --slots --slot-save-path "$T/slots/" --cache-ram 0 \
    >"$T/server.log" 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
i=0
until curl -sf --max-time 2 "$URL/health" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 240 ] || ! kill -0 $SPID 2>/dev/null; then
        echo "run-twin-real.sh: llama-server did not come up:" >&2
        tail -5 "$T/server.log" >&2
        exit 1
    fi
    sleep 0.5
done
# One request first: the model's first decode pays for its pages.
curl -s --max-time 60 "$URL/v1/chat/completions" \
    -d '{"messages":[{"role":"user","content":"hello"}],"max_tokens":8}' >/dev/null

fi
"$L" synth --arrivals poisson --rate 1 --requests 400 --in uniform:40,200 --out lognormal:60,0.3 \
    --seed 7 -q -o "$T/a.lt.zst" || exit 1
"$L" synth --arrivals poisson --rate 1 --requests 400 --in uniform:200,600 --out lognormal:60,0.3 \
    --seed 8 -q -o "$T/b.lt.zst" || exit 1

live() { # NAME TRACE ARGS...
    n=$1
    tr=$2
    shift 2
    [ -z "${REUSE:-}" ] || return 0
    timeout 900 $NICE "$L" replay "$tr" --target "$URL" --reset-prefix-cache --metrics-interval 1s \
        -o "$T/live-$n.lt.zst" --no-summary "$@" 2>"$T/live-$n.err" ||
        { echo "live run $n failed:" >&2; tail -3 "$T/live-$n.err" >&2; exit 1; }
}
virt() { # NAME TRACE ARGS...
    n=$1
    tr=$2
    shift 2
    "$L" replay "$tr" --target sim --virtual --profile "$T/fit.profile" -o "$T/virt-$n.lt.zst" \
        -q --no-summary "$@" || exit 1
}

echo "uptime before: $(uptime)"
live c1 "$T/a.lt.zst" --concurrency 1 --requests "$N"
live c4 "$T/a.lt.zst" --concurrency "$SLOTS" --requests $((N * 3 / 2))
"$L" sim --fit "$T/live-c1.lt.zst" "$T/live-c4.lt.zst" -o "$T/fit.profile" >"$T/fit.txt" ||
    { cat "$T/fit.txt"; exit 1; }
cat "$T/fit.txt"
# Capacity: requests/s the server finished in the closed loop at its slots.
cap=$("$L" cat --no-header "$T/live-c4.lt.zst" | jq -rs '[.[] | select(.rec == null and .status == 200)] |
    (length) / (((map(.end) | max) - (map(.sent) | min)) / 1e6)')
half=$(awk -v c="$cap" 'BEGIN { printf "%.3f", c * 0.5 }')
sat=$(awk -v c="$cap" 'BEGIN { printf "%.3f", c * 0.9 }')
echo "capacity at $SLOTS slots: $cap requests/s; held-out rates $half and $sat"

live c2 "$T/a.lt.zst" --concurrency 2 --requests "$N"
virt c2 "$T/a.lt.zst" --concurrency 2 --requests "$N"
live half "$T/a.lt.zst" --rate "$half" --requests "$N"
virt half "$T/a.lt.zst" --rate "$half" --requests "$N"
live sat "$T/a.lt.zst" --rate "$sat" --requests "$N"
virt sat "$T/a.lt.zst" --rate "$sat" --requests "$N"
live long "$T/b.lt.zst" --concurrency 2 --requests "$N"
virt long "$T/b.lt.zst" --concurrency 2 --requests "$N"
echo "uptime after: $(uptime)"

printf "%-6s %-10s %9s %9s %8s %9s %9s %8s\n" load metric "live p50" "twin p50" "err" \
    "live p90" "twin p90" "err"
: >"$T/table.txt"
for n in c2 half sat long; do
    "$L" compare "$T/live-$n.lt.zst" "$T/virt-$n.lt.zst" >"$T/cmp-$n.txt" 2>&1
    awk -v n="$n" '/twin: B as a prediction/ { on = 1; next }
        on && ($1 == "TTFT" || $1 == "TPOT" || $1 == "E2E") {
            printf "%-6s %-10s %9s %9s %8s %9s %9s %8s\n", n, $1, $2, $3, $4, $5, $6, $7 }
        on && $1 == "throughput" {
            printf "%-6s %-10s %9s %9s %8s\n", n, "tok/s", $4, $6, $7 }
        on && /twin verdict/ { on = 0 }' "$T/cmp-$n.txt" | tee -a "$T/table.txt"
done
awk '{ e50 = $5; sub(/%/, "", e50); e50 += 0; e50 = e50 < 0 ? -e50 : e50
       if ($2 == "tok/s") { if (e50 > 5) bad++; next }
       e90 = $8; sub(/%/, "", e90); e90 += 0; e90 = e90 < 0 ? -e90 : e90
       if (e50 > 10 || e90 > 15) bad++ }
     END { printf "%d of %d lines with a figure beyond the targets (p50 10 %%, p90 15 %%, throughput 5 %%)\n", bad, NR; exit bad > 0 ? 3 : 0 }' \
    "$T/table.txt"

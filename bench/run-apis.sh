#!/bin/sh
# Prompt lengths on every API of a real llama.cpp server: one trace of 24
# requests (prompts of 40 to 200 tokens, 32 output tokens forced), and one
# of the same sizes as 8 three-turn sessions, replayed
# through chat, completions, responses and messages against llama-server,
# and for each API the requests that were Ok, the share of prompts within
# 1 token of the length asked, and the mean absolute error, both against
# the server's own count (its usage, read by that API's rule).
#
# Usage: LLAMA_SERVER=path/llama-server LT_MODEL=path/model.gguf \
#            sh bench/run-apis.sh [BUILD_DIR]
# APIS="chat responses" runs some only; REPLAY_ARGS="--no-stream" adds
# replay options; KEEP=DIR keeps the files.
# The server runs on 127.0.0.1 only, on a free port, and is stopped at the
# end; nothing of it (binary, model) belongs in this tree.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build}
L=$B/loadtrace
APIS=${APIS:-"chat completions responses messages"}
if [ -z "${LLAMA_SERVER:-}" ] || [ ! -x "$LLAMA_SERVER" ]; then
    echo "run-apis.sh: set LLAMA_SERVER to a llama.cpp llama-server binary (not set, or not executable: '${LLAMA_SERVER:-}')" >&2
    exit 2
fi
if [ -z "${LT_MODEL:-}" ] || [ ! -r "$LT_MODEL" ]; then
    echo "run-apis.sh: set LT_MODEL to a GGUF model file (not set, or not readable: '${LT_MODEL:-}')" >&2
    exit 2
fi
[ -x "$L" ] || { echo "run-apis.sh: no loadtrace binary at $L" >&2; exit 2; }
command -v jq >/dev/null || { echo "run-apis.sh: needs jq" >&2; exit 2; }
T=${KEEP:-$(mktemp -d)}
mkdir -p "$T"
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A free port: bind port 0 and read back what the kernel gave.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LLAMA_SERVER" -m "$LT_MODEL" --host 127.0.0.1 --port "$PORT" -np 4 -c 4096 -t 1 \
    >"$T/server.log" 2>&1 &
PID=$!
i=0
until curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 $PID 2>/dev/null; then
        echo "run-apis.sh: llama-server did not become ready; its log:" >&2
        tail -20 "$T/server.log" >&2
        exit 1
    fi
    sleep 0.1
done

"$L" synth --arrivals poisson --rate 4 --requests 24 --in uniform:40,200 --out fixed:32 \
    --seed 7 -q -o "$T/t.lt.zst" || exit 1
# The same sizes as 8 sessions of 3 turns (each turn carries the ones
# before it: system-less user and assistant turns, the template per turn).
"$L" synth --arrivals poisson --rate 4 --requests 24 --turns fixed:3 --think 100ms \
    --in uniform:40,200 --out fixed:32 --seed 7 -q -o "$T/s.lt.zst" || exit 1
echo "| trace | API | ok | within 1 token | mean abs error | max abs error | calibration |"
echo "|---|---|---|---|---|---|---|"
rc=0
for tr in t s; do
    [ $tr = t ] && what="24 single" || what="8 x 3 turns"
    for api in $APIS; do
        # shellcheck disable=SC2086
        "$L" replay "$T/$tr.lt.zst" --target "http://127.0.0.1:$PORT" --api "$api" ${REPLAY_ARGS:-} \
            -o "$T/$tr-$api.lt.zst" -q --no-summary 2>"$T/$tr-$api.err"
        "$L" cat --no-header "$T/$tr-$api.lt.zst" >"$T/$tr-$api.jsonl" 2>>"$T/$tr-$api.err" || rc=1
        calib=$(jq -r 'select(.rec == "run") | .calib // "?"' "$T/$tr-$api.jsonl" | head -1)
        jq -r 'select(.rec == null and .want_in != null) |
               "\(.err // "ok") \(.want_in) \(.in // -1)"' "$T/$tr-$api.jsonl" |
            awk -v api="$api" -v calib="$calib" -v tr="$what" '
                { n++; if ($1 == "ok") ok++
                  if ($3 >= 0) { d = $3 - $2; if (d < 0) d = -d; m++; s += d / $2; if (d <= 1) w++
                                 if (d > mx) mx = d } }
                END { printf "| %s | %s | %d/%d | %d/%d (%.0f %%) | %.2f %% | %d | %s |\n", tr, api,
                             ok, n, w, m, m ? 100 * w / m : 0, m ? 100 * s / m : 0, mx, calib }'
    done
done
echo
echo "($(date -u +%Y-%m-%dT%H:%MZ), $(uptime | sed 's/.*load/load/'), $(basename "$LT_MODEL"))"
exit $rc

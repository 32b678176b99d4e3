#!/bin/sh
# loadtrace sweep against a real llama.cpp server: its slot count (-np 1, 2,
# 4) under a find-max concurrency search within a TTFT SLO, then the best
# config's answer checked with a plain live replay at that concurrency.
# Needs LLAMA_SERVER (the llama-server binary) and LT_MODEL (a GGUF model)
# in the environment; says so and stops when either is missing.
# Usage: LLAMA_SERVER=... LT_MODEL=... sh bench/run-sweep-llama.sh BUILD_DIR [OUT_DIR]
# Optional: TTFT_MS and PCT (the SLO: TTFT p90 within 60 ms by default),
# NP (default "1, 2, 4"), THREADS (1).
set -eu
B=${1:?usage: run-sweep-llama.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
L=$(cd "$B" && pwd)/loadtrace
if [ -z "${LLAMA_SERVER:-}" ] || [ ! -x "${LLAMA_SERVER:-}" ]; then
    echo "run-sweep-llama: LLAMA_SERVER is not set to a llama-server binary; nothing run" >&2
    exit 2
fi
if [ -z "${LT_MODEL:-}" ] || [ ! -f "${LT_MODEL:-}" ]; then
    echo "run-sweep-llama: LT_MODEL is not set to a GGUF model file; nothing run" >&2
    exit 2
fi
TTFT_MS=${TTFT_MS:-60}
PCT=${PCT:-90}
SLO="ttft:p$PCT<=${TTFT_MS}ms"
NP=${NP:-1, 2, 4}
THREADS=${THREADS:-1}
mkdir -p "$OUT"
echo "machine: $(uname -m), $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ); load: $(uptime | sed 's/.*load average/load average/')"
# short prompts and outputs: a tiny model's context is small
"$L" synth --arrivals poisson --rate 5 --requests 200 --in lognormal:48,0.4 \
    --out lognormal:48,0.4 --seed 3 -q -o "$OUT/t.lt.zst"
cat >"$OUT/plan.yaml" <<PLAN
trace: t.lt.zst
load:
  find-max: concurrency
  slo: "$SLO"
  requests: 60
  max-probes: 8
warmup: 4
baseline: llama-np1
configs:
  - name: llama
    command: "$LLAMA_SERVER -m $LT_MODEL --host 127.0.0.1 --port {port} -np {np} -c 4096 -t $THREADS"
    grid:
      np: [$NP]
    ready: {path: /health, timeout: 2s}
    start-timeout: 120s
    stop-timeout: 10s
PLAN
s0=$(date +%s)
"$L" sweep "$OUT/plan.yaml" -o "$OUT/sweep" -q >"$OUT/report.txt" || true
echo "sweep: $(($(date +%s) - s0)) s wall"
cat "$OUT/report.txt"
best=$(jq -r '.best_measured.name // empty' "$OUT/sweep/report.json")
[ -n "$best" ] || { echo "no best config" >&2; exit 1; }
cap=$(jq -r --arg b "$best" '.configs[] | select(.name == $b) | .capacity.max_ok' "$OUT/sweep/report.json")
np=$(jq -r --arg b "$best" '.configs[] | select(.name == $b) | .params' "$OUT/sweep/report.json" | sed 's/np=//')
# The check: a plain closed-loop replay at the capacity found, against a
# fresh server of the best config (the sweep's lifecycle, no search).
cat >"$OUT/check.yaml" <<PLAN
trace: t.lt.zst
load:
  concurrency: $cap
  requests: 120
warmup: 4
configs:
  - name: check-$best
    command: "$LLAMA_SERVER -m $LT_MODEL --host 127.0.0.1 --port {port} -np $np -c 4096 -t $THREADS"
    start-timeout: 120s
PLAN
"$L" sweep "$OUT/check.yaml" -o "$OUT/check" -q >/dev/null || true
"$L" analyze --json --slo "ttft=${TTFT_MS}ms" "$OUT/check/check-$best.lt.zst" >"$OUT/check.json"
jq -r --arg b "$best" --arg c "$cap" --arg p "$PCT" '.runs[0] |
    "check: \($b) at C=\($c), \(.measured) requests: TTFT p50 \(.latency_ms.ttft.p50) ms, p90 \(.latency_ms.ttft.p90) ms, p99 \(.latency_ms.ttft.p99) ms; " +
    "\(.goodput.good) of \(.measured) within the TTFT limit (\(1000 * .goodput.good / .measured | floor / 10) %, the SLO asks \($p) %)"' "$OUT/check.json"
echo "files in $OUT"

#!/bin/sh
# A fleet of 4 live `loadtrace sim` processes behind each routing policy, on
# a synthetic trace with sessions and shared system prompts (64-token
# prefix blocks, as Mooncake's hash_ids), and the same fleet in virtual time
# (--virtual --replicas 4): per policy, the load balance (max/mean
# requests), the fleet's prefix-cache hit rate from the sims' /metrics, and
# TTFT p50/p99 from sched; then the router's own cost per request
# (bench_fleet_route). Results go to bench/README.md, "Fleets".
# Usage: sh bench/run-fleet.sh BUILD_DIR [OUT_DIR]
set -eu
B=${1:?usage: run-fleet.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
SRC=$(cd "$(dirname "$0")/.." && pwd)
LOADTRACE=$B/loadtrace
L=$LOADTRACE
T=$OUT
export LOADTRACE
mkdir -p "$OUT"
. "$SRC/tests/lib/servers.sh"

# A server with a prefix cache whose hits are worth something: prefill
# 0.05 ms a token, 0.005 ms a cached one, 5 ms a decode step.
cat >"$OUT/fleet.profile" <<'P'
name = fleetbench
model = loadtrace-sim-fleetbench
step_ms = 5
step_ms_per_seq = 0.05
prefill_step_ms = 2
prefill_ms_per_seq = 0
prefill_ms_per_token = 0.05
cached_ms_per_token = 0.005
max_running = 64
kv_tokens = 10000000
batch_tokens = 100000
block_tokens = 64
cache_blocks = 20000
P
"$L" synth --rate 20 --requests 600 --in uniform:100,400 --out uniform:16,64 --turns uniform:1,6 \
    --think 2s --prefix 0.8,2048,4 --block-tokens 64 --seed 7 -o "$OUT/fleet.lt.zst" -q
"$L" info "$OUT/fleet.lt.zst" | sed -n '/^requests/p;/^sessions/p;/^prefix reuse/p'

row() { # label results
    "$L" analyze --json "$2" | jq -r --arg l "$1" '.runs[0] | "\($l): balance \(.fleet.balance * 1000 | round / 1000), fleet hit rate \(if .fleet.hit_rate == null then "-" else (.fleet.hit_rate * 1000 | round / 10 | tostring) + " %" end), TTFT p50 \(.latency_ms.ttft_sched.p50 | round) ms, p99 \(.latency_ms.ttft_sched.p99 | round) ms; per replica \([.fleet.replicas[].requests] | map(tostring) | join("/"))"'
}
for pol in round-robin least-outstanding session prefix weighted; do
    URLS=
    for s in r0 r1 r2 r3; do
        sim_start "$s" -q --profile "$OUT/fleet.profile"
        URLS="$URLS${URLS:+,}$SIM_URL"
    done
    if [ "$pol" = weighted ]; then # the third replica stated twice the capacity
        URLS=$(echo "$URLS" | awk -F, '{ $3 = $3 "=2"; print }' OFS=,)
    fi
    "$L" replay "$OUT/fleet.lt.zst" --api completions --target "$URLS" --route "$pol" \
        -o "$OUT/live-$pol.lt.zst" --no-summary -q 2>"$OUT/live-$pol.err" || :
    for s in r0 r1 r2 r3; do server_stop "$s" || :; done
    row "live    $pol" "$OUT/live-$pol.lt.zst"
    [ "$pol" = weighted ] && continue
    "$L" replay "$OUT/fleet.lt.zst" --target sim --virtual --profile "$OUT/fleet.profile" \
        --replicas 4 --route "$pol" -o "$OUT/virt-$pol.lt.zst" --no-summary -q
    row "virtual $pol" "$OUT/virt-$pol.lt.zst"
done
"$B/bench/bench_fleet_route"

# The virtual answer to "replicas needed" against live sims: one request at
# a time per replica (max_running 1), 4 tokens of 10 ms, 200 requests at
# 100 req/s; --find-max replicas says 4 (3 fall behind); then 3 and 4 live
# sims of that profile, round-robin, judged by the same SLO.
cat >"$OUT/serial.profile" <<'P'
name = serial
model = loadtrace-sim-serial
step_ms = 10
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
max_running = 1
kv_tokens = 1000000000
batch_tokens = 100000000
cache_blocks = 0
P
awk 'BEGIN { for (i = 0; i < 200; i++) printf "{\"t\":%d,\"in\":16,\"out\":4}\n", i * 10000 }' \
    >"$OUT/s.jsonl"
"$L" import --from jsonl "$OUT/s.jsonl" -o "$OUT/s.lt.zst" -q
"$L" replay "$OUT/s.lt.zst" --target sim --profile "$OUT/serial.profile" --find-max replicas \
    --rate 100 --slo 'ttft:p99<=35ms' --route round-robin -o "$OUT/fm.lt.zst" -q
for n in 3 4; do
    URLS=
    k=0
    while [ $k -lt $n ]; do
        sim_start "s$k" -q --profile "$OUT/serial.profile"
        URLS="$URLS${URLS:+,}$SIM_URL"
        k=$((k + 1))
    done
    "$L" replay "$OUT/s.lt.zst" --target "$URLS" --route round-robin --no-calibrate \
        -o "$OUT/live-$n.lt.zst" --no-summary -q 2>/dev/null || :
    k=0
    while [ $k -lt $n ]; do server_stop "s$k" || :; k=$((k + 1)); done
    "$L" analyze --json --slo 'ttft=35ms' "$OUT/live-$n.lt.zst" | jq -r --arg n "$n" \
        '.runs[0] | "live \($n) sims: TTFT p99 from sched \(.latency_ms.ttft_sched.p99 | round) ms, \(.goodput.good_sched) of \(.measured) within 35 ms"'
done

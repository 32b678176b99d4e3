#!/bin/sh
# CPU per streamed token (bench/README.md, "CPU per streamed token"): the
# floor (bench/floor_client.c: one recv per event and its share of
# epoll_wait), replay's lean HTTP/1.1 client and replay over libcurl, side
# by side, against one `loadtrace sim` with bench/sim-token5ms.profile (one
# token per stream every 5 ms, so each SSE event carries one token as real
# servers send them), at 32 and at 1,000 streams of 256 tokens. The client
# is pinned to core 0, the sim to core 1. CPU is the client's engine
# thread's from its first send to its last answer (replay's self-check,
# the "check" record; the floor measures its one thread the same way),
# divided by the tokens received (replay: from its results; the floor:
# requests x 256, what ignore_eos asks for).
# Then the schedule lag (sent - sched) of an open loop at 2,000 req/s
# (Poisson, 20,000 streamed requests of 8 tokens, sim --profile fast) at
# normal priority, with each client.
# Usage: sh bench/run-floor.sh BUILD_DIR OUT_DIR [ROUNDS (default 3)]
# LT_BENCH_ONLY=cpu or lag runs one part; LT_BENCH_RT=1 runs the lag part
# at real-time priority (chrt -f 10) instead, to show what other processes
# on core 0 add to it.
set -eu
B=$1
OUT=$2/floor
ROUNDS=${3:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
L="$B/loadtrace"
FLOOR="$B/bench/floor_client"
mkdir -p "$OUT"
SERVERS_DIR=$OUT
. "$SRC/tests/lib/servers.sh"

start_sim() { # profile
    server_start sim taskset -c 1 "$L" sim --profile "$1" -q
    PORT=$SERVER_PORT URL=$SERVER_URL
}
stop_sim() {
    server_stop sim || true
}
only() { [ -z "${LT_BENCH_ONLY:-}" ] || [ "$LT_BENCH_ONLY" = "$1" ]; }
results() {
    "$L" cat --no-header "$1" | jq -c 'select(.rec == null)'
}

if only cpu; then
echo "### CPU per streamed token: $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
start_sim "$SRC/bench/sim-token5ms.profile"
model=$(curl -s "$URL/v1/models" | jq -r '.data[0].id')
for streams in 32 1000; do
    # 32 streams: four answers each, back to back on each connection
    if [ "$streams" = 32 ]; then reqs=128; else reqs=1000; fi
    "$L" synth --arrivals constant --rate 1 --requests $reqs --in fixed:16 --out fixed:256 -q \
        -o "$OUT/t$streams.lt.zst"
    r=1
    while [ $r -le "$ROUNDS" ]; do
        line=$(taskset -c 0 "$FLOOR" "$PORT" $streams $reqs 256 "$model")
        floor=$(echo "$line" | awk '{ print $12 }')
        rpt=$(echo "$line" | awk '{ print $14 }')
        printf "%5d streams, round %d: floor %.2f us/token (%.2f recvs per token)" $streams $r "$floor" "$rpt"
        for c in lean curl; do
            taskset -c 0 "$L" replay "$OUT/t$streams.lt.zst" --target "$URL" --model "$model" \
                --concurrency $streams --no-calibrate --no-server-metrics -q --no-summary \
                --http-client $c -o "$OUT/r-$c.lt.zst" || true
            ok=$(results "$OUT/r-$c.lt.zst" | jq -s '[.[] | select(.err == null and .out == 256)] | length')
            us=$("$L" cat --no-header "$OUT/r-$c.lt.zst" |
                jq -r 'select(.rec == "check") | .cpu_s / .out_tokens * 1e6')
            [ "$ok" = $reqs ] || printf " [%s: only %s of %s ok]" $c "$ok" $reqs
            awk -v c=$c -v us="$us" -v f="$floor" 'BEGIN { printf "; %s %.2f us/token = %.2fx", c, us, us / f }'
        done
        echo
        r=$((r + 1))
    done
done
stop_sim
fi

if only lag; then
PRE=""
PRIO=normal
if [ "${LT_BENCH_RT:-}" = 1 ]; then
    chrt -f 10 true 2>/dev/null || { echo "no real-time priority here" >&2; exit 1; }
    PRE="chrt -f 10"
    PRIO=real-time
fi
echo "### schedule lag, open loop Poisson 2,000 req/s, 20,000 streamed requests of 8 tokens, $PRIO priority (load $(cut -d' ' -f1-3 /proc/loadavg))"
"$L" synth --arrivals constant --rate 1 --requests 1000 --in fixed:16 --out fixed:8 -q -o "$OUT/open.lt.zst"
start_sim fast
r=1
while [ $r -le "$ROUNDS" ]; do
    for c in lean curl; do
        taskset -c 0 $PRE "$L" replay "$OUT/open.lt.zst" --target "$URL" --rate 2000 --arrivals poisson \
            --requests 20000 -q --no-summary --no-calibrate --no-server-metrics --http-client $c \
            -o "$OUT/open-$c.lt.zst" || true
        cpu=$("$L" cat --no-header "$OUT/open-$c.lt.zst" | jq -r 'select(.rec == "check") | .cpu_s')
        errs=$(results "$OUT/open-$c.lt.zst" | jq -s '[.[] | select(.err != null)] | length')
        results "$OUT/open-$c.lt.zst" | jq -r 'select(.sent != null) | .sent - .sched' | sort -n |
            awk -v c=$c -v r=$r -v cpu="$cpu" -v e="$errs" '{ v[NR] = $1 } END {
                printf "round %d %s: lag over %d requests: p50 %d us, p90 %d us, p99 %d us, p99.9 %d us, max %d us; engine CPU %.2f s; %d errors\n",
                    r, c, NR, v[int(NR * 0.5)], v[int(NR * 0.9)], v[int(NR * 0.99)], v[int(NR * 0.999)], v[NR], cpu, e }'
    done
    r=$((r + 1))
done
stop_sim
fi

#!/bin/sh
# Replay's benchmarks (bench/README.md, "replay"): the replay process pinned
# to core 0, the sim (a separate `loadtrace sim` process) to core 1, so the
# CPU time /usr/bin/time reports is replay's alone.
#   1. streamed chunks: parse and timestamp rate, CPU per chunk
#   2. short non-streamed requests: replay vs wrk, same sim, same connections
#   3. open loop at 2,000 req/s: schedule lag p50/p99, without and with
#      scraping the sim's /metrics every 100 ms (docs/server-metrics.md §6)
#   4. 10,000 streams in flight at once: memory per in-flight request
# Usage: sh bench/run-replay.sh BUILD_DIR OUT_DIR
# LT_BENCH_ONLY=N runs case N only. Cases 1, 2 and 4 do not scrape (the
# numbers of bench/README.md were taken before replay scraped by default).
set -eu
B=$1
OUT=$2/replay
SRC=$(cd "$(dirname "$0")/.." && pwd)
L="$B/loadtrace"
SIM="${LT_BENCH_SIM:-$L}" # another build's `loadtrace sim` may be named here
mkdir -p "$OUT"
SERVERS_DIR=$OUT
. "$SRC/tests/lib/servers.sh"

start_sim() { # profile
    server_start sim taskset -c 1 "$SIM" sim --profile "$1" -q
    URL=$SERVER_URL
}
stop_sim() {
    server_stop sim || true
}
# replay under /usr/bin/time on core 0; "wall user sys maxrss_kib" to $OUT/time
timed_replay() {
    taskset -c 0 /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" "$L" replay "$@" -q --no-summary \
        --no-calibrate --no-server-metrics
}
only() { [ -z "${LT_BENCH_ONLY:-}" ] || [ "$LT_BENCH_ONLY" = "$1" ]; }
results() {
    "$L" cat --no-header "$1" | jq -c 'select(.rec == null)'
}

if only 1; then
echo "### 1. streamed chunks (sim --profile fast, 100 requests x 4,000 tokens, C=50)"
"$L" synth --arrivals constant --rate 1 --requests 100 --in fixed:16 --out fixed:4000 -q -o "$OUT/long.lt.zst"
start_sim fast
timed_replay "$OUT/long.lt.zst" --target "$URL" --concurrency 50 -o "$OUT/chunks.lt.zst"
stop_sim
read wall user sys rss < "$OUT/time"
chunks=$(results "$OUT/chunks.lt.zst" | jq -s '[.[] | (.chunks | length) / 2] | add')
reqs=$(results "$OUT/chunks.lt.zst" | wc -l)
awk -v c="$chunks" -v r="$reqs" -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN {
    cpu = u + s
    printf "chunks %d in %.2f s wall: %.0f chunks/s; replay CPU %.2f s (user %.2f, sys %.2f): %.0f chunks per CPU-second, %.2f us CPU per chunk\n",
        c, w, c / w, cpu, u, s, c / cpu, cpu / c * 1e6 }'

fi
if only 2; then
echo "### 2. short non-streamed requests, 32 connections: wrk vs replay (sim --profile fast)"
"$L" synth --arrivals constant --rate 1 --requests 1000 --in fixed:8 --out fixed:1 -q -o "$OUT/short.lt.zst"
cat > "$OUT/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"loadtrace-sim-fast","messages":[{"role":"user","content":"one two three four"}],"max_tokens":1,"min_tokens":1,"ignore_eos":true}'
LUA
start_sim fast
wrk_rps=$(taskset -c 0 wrk -t1 -c32 -d5s -s "$OUT/post.lua" "$URL/v1/chat/completions" | awk '/Requests\/sec/ { print $2 }')
timed_replay "$OUT/short.lt.zst" --target "$URL" --no-stream --concurrency 32 --requests 30000 -o "$OUT/short-r.lt.zst"
stop_sim
read wall user sys rss < "$OUT/time"
results "$OUT/short-r.lt.zst" | jq -s -r '"\(length) \([.[] | select(.err == null)] | length) \((map(.end) | max) - (map(.sent) | min))"' > "$OUT/short.txt"
read n ok span < "$OUT/short.txt"
awk -v n="$n" -v ok="$ok" -v span="$span" -v wrk="$wrk_rps" -v u="$user" -v s="$sys" 'BEGIN {
    rps = n / (span / 1e6)
    printf "wrk %.0f req/s; replay %.0f req/s (%d requests, %d ok) = %.2f of wrk; replay CPU %.1f us per request\n",
        wrk, rps, n, ok, rps / wrk, (u + s) / n * 1e6 }'

fi
if only 3; then
echo "### 3. open loop, Poisson 2,000 req/s, 20,000 streamed requests of 8 tokens (sim --profile fast)"
"$L" synth --arrivals constant --rate 1 --requests 1000 --in fixed:16 --out fixed:8 -q -o "$OUT/open.lt.zst"
start_sim fast
# at normal priority, and (when allowed) at real-time priority, which shows
# what other processes on the same core add to the lag; each without
# scraping and with the sim's /metrics scraped every 100 ms
for scrape in off 100ms; do
for prio in normal rt; do
    if [ $prio = rt ]; then
        chrt -f 10 true 2>/dev/null || { echo "(no real-time priority here)"; continue; }
        PRE="chrt -f 10"
    else
        PRE=""
    fi
    if [ $scrape = off ]; then SCRAPE=--no-server-metrics; else SCRAPE="--metrics-interval $scrape"; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timed_replay_pre() { taskset -c 0 /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" $PRE "$L" replay "$@" -q --no-summary --no-calibrate $SCRAPE; }
    timed_replay_pre "$OUT/open.lt.zst" --target "$URL" --rate 2000 --arrivals poisson --requests 20000 -o "$OUT/open-r.lt.zst"
    read wall user sys rss < "$OUT/time"
    results "$OUT/open-r.lt.zst" | jq -r 'select(.sent != null) | .sent - .sched' | sort -n |
        awk -v u="$user" -v s="$sys" -v p="$prio" -v l="$load" -v sc="$scrape" '{ v[NR] = $1 } END {
            printf "scraping %s, %s priority (load %s): schedule lag over %d requests: p50 %d us, p90 %d us, p99 %d us, p99.9 %d us, max %d us; replay CPU %.2f s\n",
                sc, p, l, NR, v[int(NR * 0.5)], v[int(NR * 0.9)], v[int(NR * 0.99)], v[int(NR * 0.999)], v[NR], u + s }'
    echo "errors: $(results "$OUT/open-r.lt.zst" | jq -s '[.[] | select(.err != null)] | length'); scrapes: $("$L" cat --no-header "$OUT/open-r.lt.zst" | jq -s '[.[] | select(.rec == "scrape")] | "\(length) (\([.[] | select(.err != null)] | length) failed)"' -r)"
done
done
stop_sim

fi
if only 4; then
echo "### 4. streams in flight: 100, then 10,000 (bench/replay-hold.profile: 20 tokens at 5 tok/s)"
"$L" synth --arrivals constant --rate 1 --requests 10000 --in fixed:16 --out fixed:20 -q -o "$OUT/hold.lt.zst"
start_sim "$SRC/bench/replay-hold.profile"
timed_replay "$OUT/hold.lt.zst" --target "$URL" --concurrency 100 --requests 100 -o "$OUT/h100.lt.zst"
read w0 u0 s0 rss0 < "$OUT/time"
timed_replay "$OUT/hold.lt.zst" --target "$URL" --concurrency 10000 --requests 10000 -o "$OUT/h10k.lt.zst"
read w1 u1 s1 rss1 < "$OUT/time"
stop_sim
peak=$(results "$OUT/h10k.lt.zst" | jq -r 'select(.sent != null) | "\(.sent) 1\n\(.end) -1"' | sort -n -k1,1 -k2,2n |
    awk '{ n += $2; if (n > m) m = n } END { print m }')
ok=$(results "$OUT/h10k.lt.zst" | jq -s '[.[] | select(.err == null)] | length')
awk -v r0="$rss0" -v r1="$rss1" -v peak="$peak" -v ok="$ok" -v w="$w1" 'BEGIN {
    printf "peak RSS %.1f MiB at C=100, %.1f MiB at C=10000 (%d in flight at once at the peak, %d ok, %.1f s): %.1f KiB per in-flight request\n",
        r0 / 1024, r1 / 1024, peak, ok, w, (r1 - r0) / 9900 }'
fi

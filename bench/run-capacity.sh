#!/bin/sh
# Capacity search (replay --find-max): probes and wall time of a live-only
# search against a search placed by virtual time first (--virtual-first),
# both against the sim at --sim-time-scale 20, rate and concurrency, each
# case twice. The trace: 400 Poisson requests (lognormal 200-token prompts
# and outputs) at 100 req/s, so that a live-only rate search starts at a
# sane load (the trace's own rate) rather than hours of probes at 0.01
# req/s, which is what the bundled BurstGPT sample would cost it.
# Prints the capacity line and the wall time of each search.
# Usage: sh bench/run-capacity.sh BUILD_DIR [OUT_DIR]
set -eu
B=${1:?usage: run-capacity.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
L=$B/loadtrace
mkdir -p "$OUT"
"$L" synth --arrivals poisson --rate 100 --requests 400 --in lognormal:200,0.6 \
    --out lognormal:200,0.5 --seed 5 -q -o "$OUT/t.lt.zst"
one() { # label, options...
    label=$1
    shift
    for k in 1 2; do
        s0=$(date +%s.%N)
        "$L" replay "$OUT/t.lt.zst" --target sim --sim-time-scale 20 --slo ttft=50ms,tpot=2.5ms \
            -o "$OUT/c.lt.zst" -q "$@" >"$OUT/out" 2>"$OUT/err" || true
        s1=$(date +%s.%N)
        echo "$label run $k: $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.1f", b - a }') s wall"
        sed 's/^/    /' "$OUT/out"
    done
}
one "rate, live only" --find-max rate
one "rate, virtual first" --find-max rate --virtual-first
one "concurrency, live only" --find-max concurrency --requests 400
one "concurrency, virtual first" --find-max concurrency --requests 400 --virtual-first

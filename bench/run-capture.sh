#!/bin/sh
# loadtrace capture against direct access to sim, side by side in one run
# (bench/capture_bench.c says what is measured): 256 and 1,000 concurrent
# streams, and 10,000 idle keep-alive connections.
# Usage: sh bench/run-capture.sh BUILD_DIR OUT_DIR
set -eu
B="$1"
OUT="$2"
SRC=$(cd "$(dirname "$0")/.." && pwd)
uptime
"$B/bench/capture_bench" "$B/loadtrace" --requests 2000 --streams 256 --out 300 --runs 2 \
    --profile "$SRC/bench/sim-paced.profile" --dir "$OUT"
uptime
"$B/bench/capture_bench" "$B/loadtrace" --requests 2000 --streams 1000 --out 300 --runs 2 \
    --profile "$SRC/bench/sim-paced.profile" --dir "$OUT" --idle 10000
uptime

#!/bin/sh
# loadtrace capture against direct access to sim, side by side in one run
# (bench/capture_bench.c says what is measured): 256 and 1,000 concurrent
# streams, and 10,000 idle keep-alive connections. With OLD (another
# build's loadtrace), each case runs for this build and then for OLD, so
# that the two are compared on the same machine minutes apart. Every run
# also relays through the floor relay (no HTTP: one recv and one send per
# chunk) and, where NGINX names an nginx binary (default: nginx on PATH,
# if any), through nginx, for what any proxy costs on this machine.
# Usage: [NGINX=/usr/sbin/nginx] sh bench/run-capture.sh BUILD_DIR OUT_DIR [OLD_LOADTRACE]
set -eu
B="$1"
OUT="$2"
OLD="${3:-}"
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
NGINX="${NGINX:-$(command -v nginx || true)}"
others="--relay 1"
if [ -n "$NGINX" ]; then
    others="$others --nginx $NGINX"
else
    echo "run-capture.sh: no nginx (set NGINX=PATH to compare with it)"
fi
for streams in 256 1000; do
    idle=""
    [ "$streams" = 1000 ] && idle="--idle 10000"
    for lt in "$B/loadtrace" $OLD; do
        echo "== $lt, $streams streams"
        uptime
        # shellcheck disable=SC2086
        "$B/bench/capture_bench" "$lt" --requests 2000 --streams "$streams" --out 300 --runs 2 \
            --profile "$SRC/bench/sim-paced.profile" --dir "$OUT" $idle $others
    done
done
uptime

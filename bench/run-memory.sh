#!/bin/sh
# Replay's memory against the trace's length (a streamed replay's should not grow with it):
# the peak RSS (/usr/bin/time's maximum resident set) of a live and a
# virtual replay of synthetic traces of 100 k, 1 M and 10 M requests
# (constant arrivals, 16-token prompts with one message and one prefix
# block, 4-token outputs, as synth writes them).
#   - virtual: the whole trace in virtual time at 1,000 req/s against the
#     `fast` profile, which keeps up (so what is in flight stays small and
#     what grows is what is held per request of the trace);
#   - live: against a separate `loadtrace sim --profile fast` (so the RSS
#     is the client's alone), the trace rescaled to 2,000 req/s and cut by
#     --duration 2s: the whole trace is read and planned, about 4,000
#     requests are sent. What grows with the trace shows without sending
#     10 M requests over HTTP.
#   - window: 100 k requests of the 10 M trace (--window 50s,51s: a second
#     of it) in virtual time, as a user samples a big trace;
#   - open: an open loop (Poisson, 1,000 req/s) of 100 k requests over the
#     10 M trace in virtual time (--requests: a sample of whole sessions);
#   - closed: a closed loop at 1 and 64 in flight, 100 k requests each,
#     over the 10 M trace in virtual time;
#   - overloaded: 200 k requests of 365 output tokens at 10,000 req/s in
#     virtual time against a model that runs 2 at a time (584 MB once, when
#     every queued request's token times were held): nearly every
#     request is in flight (queued in the model) at the end.
# Each case once (the figures are deterministic to a few hundred KiB).
# With a second binary, the same cases for it (the tree before, say).
# Usage: sh bench/run-memory.sh BUILD_DIR [OUT_DIR] [OTHER_LOADTRACE]
set -eu
B=${1:?usage: run-memory.sh BUILD_DIR [OUT_DIR] [OTHER_LOADTRACE]}
OUT=${2:-$(mktemp -d)}
OTHER=${3:-}
L=$B/loadtrace
mkdir -p "$OUT"
SERVERS_DIR=$OUT
. "$(cd "$(dirname "$0")/.." && pwd)/tests/lib/servers.sh"

for n in 100000 1000000 10000000; do
    [ -s "$OUT/t$n.lt.zst" ] ||
        "$L" synth --arrivals constant --rate 100000 --requests $n --in fixed:16 --out fixed:4 \
            -q -o "$OUT/t$n.lt.zst"
done

[ -s "$OUT/over.lt.zst" ] ||
    "$L" synth --arrivals constant --rate 10000 --requests 200000 --in fixed:16 --out fixed:365 \
        -q -o "$OUT/over.lt.zst"
printf 'name = two\nmax_running = 2\nstep_ms = 10\n' >"$OUT/two.profile"

server_start sim "$L" sim --profile fast -q || exit 1
URL=$SERVER_URL

peak() { # label binary replay-options...: prints "label KiB seconds"
    label=$1
    bin=$2
    shift 2
    /usr/bin/time -f '%M %e' -o "$OUT/time" "$bin" replay "$@" -o "$OUT/r.lt.zst" -q \
        --no-summary 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }
    echo "$label $(cat "$OUT/time")"
}

for bin in "$L" $OTHER; do
    echo "== $bin"
    for n in 100000 1000000 10000000; do
        peak "virtual $n" "$bin" "$OUT/t$n.lt.zst" --target sim --virtual --profile fast \
            --rate 1000
        peak "live $n" "$bin" "$OUT/t$n.lt.zst" --target "$URL" --rate 2000 --duration 2s
    done
    peak "overloaded 200000" "$bin" "$OUT/over.lt.zst" --target sim --virtual \
        --profile "$OUT/two.profile"
    peak "window 10000000" "$bin" "$OUT/t10000000.lt.zst" --target sim --virtual \
        --profile fast --window 50s,51s
    peak "open 10000000" "$bin" "$OUT/t10000000.lt.zst" --target sim --virtual \
        --profile fast --rate 1000 --arrivals poisson --requests 100000
    peak "closed 10000000" "$bin" "$OUT/t10000000.lt.zst" --target sim --virtual \
        --profile fast --concurrency 1,64 --requests 100000
done | awk '
    /^==/ { print; next }
    { kib[$1, $2] = $3; printf "%-8s %9s requests: peak RSS %7.1f MB, %6.1f s\n", $1, $2, $3 / 1024, $4 }
    $2 == 10000000 { printf "%-8s per request from 100 k to 10 M: %.0f bytes\n", $1,
        ($3 - kib[$1, 100000]) * 1024 / (10000000 - 100000) }'

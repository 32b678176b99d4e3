#!/bin/sh
# Virtual replay: how much CPU `loadtrace replay --target sim --virtual`
# needs for the Azure conversation sample (19,366 requests, 58 minutes of
# trace), each case three times: the default profile (which this trace
# overloads: its 1,155-token mean prompts need ~1 s of prefill each, so
# the run covers ~5.8 h of model time), a profile with 8x cheaper prefill
# that nearly keeps up (model time = the trace's hour), the same at twice
# the rate, and a batch limit of 32 at twice the rate. Prints user + system
# CPU seconds (from /usr/bin/time) and the model time the run covered.
# Usage: sh bench/run-virtual.sh BUILD_DIR [OUT_DIR]
set -eu
B=${1:?usage: run-virtual.sh BUILD_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d)}
L=$B/loadtrace
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
"$L" import --from azure "$SRC/traces/samples/AzureLLMInferenceTrace_conv.csv" -o "$OUT/conv.lt.zst" 2>/dev/null
printf 'name = fastprefill\nprefill_step_ms = 10\nprefill_ms_per_seq = 0\nprefill_ms_per_token = 0.1\n' >"$OUT/fp.profile"
printf 'name = fastprefill32\nprefill_step_ms = 10\nprefill_ms_per_seq = 0\nprefill_ms_per_token = 0.1\nmax_running = 32\n' \
    >"$OUT/fp32.profile"
one() { # label, replay options...
    label=$1
    shift
    for k in 1 2 3; do
        /usr/bin/time -f '%U %S' -o "$OUT/time" "$L" replay "$OUT/conv.lt.zst" --target sim \
            --virtual -o "$OUT/r.lt.zst" --no-summary "$@" 2>"$OUT/err"
        cpu=$(awk '{ print $1 + $2 }' "$OUT/time")
        model=$(sed -n 's/.* \([0-9.]*\) s of model time.*/\1/p' "$OUT/err")
        echo "$label run $k: $cpu s CPU, $model s of model time"
    done
}
one "default profile, trace rate" --profile default
one "fast prefill, trace rate" --profile "$OUT/fp.profile"
one "fast prefill, --speed 2" --profile "$OUT/fp.profile" --speed 2
one "fast prefill, max_running 32, --speed 2" --profile "$OUT/fp32.profile" --speed 2
# With the summary (analyze reads the 4 M chunks back)
for k in 1 2 3; do
    /usr/bin/time -f '%U %S' -o "$OUT/time" "$L" replay "$OUT/conv.lt.zst" --target sim \
        --virtual -o "$OUT/r.lt.zst" -q >/dev/null
    echo "default profile with the summary run $k: $(awk '{ print $1 + $2 }' "$OUT/time") s CPU"
done

#!/bin/sh
# The format's size promise: the Mooncake synthetic trace stored as .lt.zst
# (default import) is at most 1/8 of its JSONL size. Sizes are deterministic
# for a given zstd, so this is a test, not a benchmark.
set -u
. "$LT_SRC/tests/cli/lib.sh"
need_sample mooncake_synthetic_trace.jsonl
"$LOADTRACE" import -q --from mooncake "$LT_SAMPLES/mooncake_synthetic_trace.jsonl" -o "$T/m.lt.zst"
expect_status 0 $? "import mooncake"
j=$(wc -c <"$LT_SAMPLES/mooncake_synthetic_trace.jsonl")
z=$(wc -c <"$T/m.lt.zst")
[ $((z * 8)) -le "$j" ] || fail "mooncake .lt.zst is $z bytes, more than 1/8 of the JSONL's $j"
echo "mooncake: $j B as JSONL, $z B as .lt.zst (1/$((j / z)))"
finish

#!/bin/sh
# An overloaded virtual replay keeps token times only for the requests the
# model is running, not for every queued one (that cost 8 bytes per queued
# token, 584 MB at 200,000 requests). 20,000 requests of 2,000 tokens
# arrive in 20 s against a model that runs 2 at a time: queued token
# arrays would be 320 MB; running ones are 2 x 16 KB. The peak RSS, polled
# from /proc while it runs, must stay far below the first (a sanitizer
# build included: AddressSanitizer holds freed memory in a quarantine of
# 256 MB by default, which alone would read as held token times, so this
# run's quarantine is 16 MB), and every request still completes with its
# tokens.
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
[ -r /proc/self/status ] || fail "/proc is needed to read the peak RSS"

n=20000
out=2000
"$L" synth --arrivals constant --rate 1000 --requests $n --in fixed:16 --out fixed:$out -q \
    -o "$T/t.lt.zst" || fail "synth"
printf 'name = two\nmax_running = 2\nstep_ms = 10\n' >"$T/two.profile"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16" \
    "$L" replay "$T/t.lt.zst" --target sim --virtual --profile "$T/two.profile" -o "$T/v.lt.zst" \
    -q --no-summary &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [ -n "$v" ] && peak=$v
    sleep 0.05
done
wait "$pid"
expect_status 0 $? "the overloaded virtual replay"
queued_kib=$((n * out * 8 / 1024))
[ "$peak" -gt 0 ] || fail "no RSS was read"
[ "$peak" -lt $((queued_kib / 2)) ] ||
    fail "peak RSS $peak KiB: token times of queued requests ($queued_kib KiB) are held"
"$L" analyze --json "$T/v.lt.zst" >"$T/a.json" || fail "analyze"
expect_eq "$n $n $((n * out))" "$(jq -r '.runs[0] | "\(.results) \(.ok) \(.tokens)"' "$T/a.json")" "results, ok and tokens"
finish

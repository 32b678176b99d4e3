#!/bin/sh
# Times that would overflow are refused before anything is sent or written,
# with an error naming the option and its value: a tiny --speed (1e-12 once
# stretched 400 requests past INT64_MAX µs, replayed 1 of them and exited
# 0), a tiny open-loop --rate. A small but sane --speed still replays every
# request (checked against the sim's log).
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 10 --requests 400 --in fixed:16 --out fixed:4 -q \
    -o "$T/t.lt.zst" || fail "synth"

start_sim tiny --profile fast
for v in 1e-12 1e-10; do
    rm -f "$T/r.lt.zst"
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --speed "$v" -o "$T/r.lt.zst" \
        -q --no-summary 2>"$T/err"
    expect_status 1 $? "replay --speed $v"
    expect_grep "--speed $v would spread the requests over" "$T/err"
    [ -e "$T/r.lt.zst" ] && fail "replay --speed $v wrote results"
    "$L" replay "$T/t.lt.zst" --virtual --target sim --speed "$v" -o "$T/r.lt.zst" -q \
        --no-summary 2>"$T/err"
    expect_status 1 $? "virtual replay --speed $v"
    expect_grep "--speed $v would spread" "$T/err"
    [ -e "$T/r.lt.zst" ] && fail "virtual replay --speed $v wrote results"
done
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --arrivals poisson --rate 1e-300 \
    -o "$T/r.lt.zst" -q --no-summary 2>"$T/err"
expect_status 1 $? "replay --arrivals poisson --rate 1e-300"
expect_grep "--rate 1e-300 would put request 2 at" "$T/err"
[ -e "$T/r.lt.zst" ] && fail "replay --rate 1e-300 wrote results"
stop_sim
expect_eq 0 "$(streams "$SIM_LOG" | wc -l)" "requests the sim saw from refused replays"

# the whole trace at --speed 20: all 400 sent, as the sim's log says
start_sim fast --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --speed 20 -o "$T/ok.lt.zst" \
    -q --no-summary
expect_status 0 $? "replay --speed 20"
stop_sim
expect_eq 400 "$(streams "$SIM_LOG" | wc -l)" "requests the sim saw at --speed 20"
expect_eq 400 "$(results "$T/ok.lt.zst" | jq -s '[.[] | select(.err == null)] | length')" "ok results at --speed 20"
finish

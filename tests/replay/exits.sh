#!/bin/sh
# replay's exit status says how the run went (docs/cli.md): 0 every request
# ok, 1 some failed, 3 none ok, 128 + the signal that stopped it (130
# SIGINT, 143 SIGTERM: tests/replay/sigint.sh), 2 bad usage. And replay
# writes over none of its inputs: the results file (or the sim's log) named
# as the trace, the prompts file or an MPI part is refused with exit 2
# before anything is written, whatever name it is given under.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 100 --requests 20 --in fixed:16 --out fixed:4 -q \
    -o "$T/t.lt.zst" || fail "synth"
cp "$T/t.lt.zst" "$T/keep.lt.zst"
ln -s "$T/t.lt.zst" "$T/link.lt.zst"

# ---- nothing the user owns is written over
for out in "$T/t.lt.zst" "$T/link.lt.zst"; do
    "$L" replay "$T/t.lt.zst" --target sim --no-calibrate -q --no-summary -o "$out" 2>"$T/same.err"
    expect_status 2 $? "replay -o its own trace ($out)"
    expect_grep "nothing was written" "$T/same.err"
    cmp -s "$T/t.lt.zst" "$T/keep.lt.zst" || fail "replay -o $out changed the trace"
done
"$L" replay "$T/t.lt.zst" --target sim --no-calibrate -q --no-summary -o "$T/r.lt.zst" \
    --sim-log "$T/t.lt.zst" 2>"$T/log.err"
expect_status 2 $? "replay --sim-log its own trace"
cmp -s "$T/t.lt.zst" "$T/keep.lt.zst" || fail "--sim-log over the trace changed it"
[ -e "$T/r.lt.zst" ] && fail "a refused replay wrote its results"
"$L" replay "$T/t.lt.zst" --virtual --target sim -q --no-summary -o "$T/t.lt.zst" 2>/dev/null
expect_status 2 $? "replay --virtual -o its own trace"
cmp -s "$T/t.lt.zst" "$T/keep.lt.zst" || fail "replay --virtual -o its own trace changed it"
# --merge: the merged file must be none of the parts
"$L" replay "$T/t.lt.zst" --target sim --no-calibrate -q --no-summary -o "$T/p0.lt.zst" ||
    fail "replay for a part"
cp "$T/p0.lt.zst" "$T/p0.keep"
"$L" replay --merge -o "$T/p0.lt.zst" "$T/p0.lt.zst" --no-summary 2>"$T/merge.err" >/dev/null
expect_status 2 $? "replay --merge -o one of its parts"
cmp -s "$T/p0.lt.zst" "$T/p0.keep" || fail "replay --merge -o a part changed the part"

# ---- exit statuses, against the sim's log
# all ok: 0
start_sim ok --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/ok.lt.zst" -q --no-summary
expect_status 0 $? "replay with every request ok"
stop_sim
expect_eq 20 "$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault == "none")] | length')" "requests the sim answered"
# some failed: 1 (the sim's log says which failed)
start_sim some --profile fast --faults "500=0.5,seed=3"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/some.lt.zst" -q --no-summary
expect_status 1 $? "replay with some requests failed"
stop_sim
failed=$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault != "none")] | length')
[ "$failed" -ge 1 ] && [ "$failed" -lt 20 ] || fail "the sim failed $failed of 20 requests"
expect_eq "$failed" "$(results "$T/some.lt.zst" | jq -s '[.[] | select(.err != null)] | length')" "failed results"
# none ok: 3 (20 of 20 connect)
"$L" replay "$T/t.lt.zst" --target http://127.0.0.1:9 --model m --no-calibrate \
    -o "$T/none.lt.zst" -q --no-summary
expect_status 3 $? "replay with no request ok"
expect_eq 20 "$(results "$T/none.lt.zst" | jq -s '[.[] | select(.err == "connect")] | length')" "connect errors"
# virtual replay: every request ok
"$L" replay "$T/t.lt.zst" --virtual --target sim -o "$T/v.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay"
# bad usage: 2
"$L" replay "$T/t.lt.zst" --target sim --speed nope -o "$T/u.lt.zst" -q 2>/dev/null
expect_status 2 $? "a bad value"
# a loop keeps none of the trace's times: a transformation of them is
# refused before anything is sent or written, not dropped without a word
for m in "--concurrency 2 --window 0,1" "--concurrency 2 --max-gap 1s" \
    "--arrivals poisson --rate 5 --spread 1s" "--virtual --concurrency 2 --window 0,1"; do
    # shellcheck disable=SC2086 # the options are words
    "$L" replay "$T/t.lt.zst" --target sim $m -o "$T/w.lt.zst" -q --no-summary 2> "$T/w.err"
    expect_status 2 $? "replay $m"
    grep -q "do not apply" "$T/w.err" || fail "replay $m: no word of why: $(cat "$T/w.err")"
    [ ! -e "$T/w.lt.zst" ] || fail "replay $m wrote a results file"
done
finish

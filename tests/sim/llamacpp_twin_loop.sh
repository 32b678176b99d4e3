#!/bin/sh
# The twin against a hidden llama-server whose main loop spends a fixed
# time on each request (taking the task, launching its slot) beside steps
# of a few milliseconds (a tiny model): that work holds up every slot, so
# near saturation it decides the queue; and more time per request beside
# the loop (HTTP threads), which delays that request only. Fitted from
# closed loops at 1 and 4 with llama.cpp's per-request timings (--dialect
# llamacpp): the time outside the server's compute at an idle server (the
# client's TTFT less the server's prompt_ms, less the client's round trip)
# is split by the decode windows (what each admission held up the other
# slots) into loop_ms_per_request and front_ms_per_request, each near its
# hidden value; then an open loop near saturation (0.85 of the capacity the
# loop at 4 measured), held out and predicted in virtual time, must match
# the live sim's own log, and the same fit without the loop's cost, or
# with all of the outside time on the loop, must miss it.
set -u
. "$LT_SRC/tests/sim/twin_lib.sh"

hidden_llama name=hidden-llama-loop step_ms=3 step_ms_per_seq=0.5 prefill_step_ms=1 \
    prefill_ms_per_token=0.04 front_ms_per_token=0 loop_ms_per_request=14 front_ms_per_request=6
twin_synth "$T/t.lt.zst" --requests 120 --in uniform:40,200 --out lognormal:30,0.3 --seed 6

twin_sim
twin_loops "$T/t.lt.zst" 1:30 4:60
# the capacity at 4 slots, requests per second of the client's time
cap=$("$L" cat --no-header "$T/c4.lt.zst" | jq -rs '[.[] | select(.rec == null and .status == 200)] |
    (length) / (((map(.end) | max) - (map(.sent) | min)) / 1e6)')
sat=$(awk -v c="$cap" 'BEGIN { printf "%.3f", 0.85 * c }')
sat_model=$(awk -v c="$cap" -v k=$K 'BEGIN { printf "%.3f", 0.85 * c / k }')
twin_live l-sat "$T/t.lt.zst" --rate "$sat" --requests 80
stop_sim
twin_fit c1 c4
expect_grep "^  loop_ms_per_request .*: timelines (what each admission held up" "$T/fit.txt"
expect_grep "^  front_ms_per_request .*: timelines less timings" "$T/fit.txt"
expect_grep "^  prefill fitted on prompts of [0-9]* to [0-9]* uncached tokens" "$T/fit.txt"
# The split rests on which slots each admission held up, read back from
# the client's times; with the hidden server's slots (a hole where a
# request left is one more pass), an ASan client's slower, later sends
# moved it once in four runs (17.2 and 3.2 ms, the prediction still
# within): an ASan build reports the split and does not judge it.
# The prediction near saturation rests on the split: in CI's ASan run a
# loop of 12.2 ms (front 6.4) put its TTFT p50 at -18.9 % (TPOT -5.3 %,
# E2E -9.5 %), so an ASan build judges TPOT and E2E only, and of the two
# variants only the one without the loop (E2E -34 %), not the one with
# all of the outside time on it (E2E +10.8 % there, at the margin).
ASAN=
if asan_build "$L"; then
    ASAN=1
    TWIN_TTFT=reported
    echo "note: an ASan build: the loop/front split and the prediction's TTFT are not judged" \
        "($(val loop_ms_per_request "$T/fit.profile"), $(val front_ms_per_request "$T/fit.profile"))"
else
    within "loop_ms_per_request" "$(val loop_ms_per_request "$T/fit.profile")" 14 0.2
    # the rest is the front, the loop's error mirrored (with the slots read
    # back, 2.5 to 3 ms of 6 in 3 of 16 runs): the whole outside time is
    # what is measured, judged as such
    within "loop_ms_per_request + front_ms_per_request" "$(awk -v a="$(val loop_ms_per_request \
        "$T/fit.profile")" -v b="$(val front_ms_per_request "$T/fit.profile")" \
        'BEGIN { print a + b }')" 20 0.15
fi
# c1 1-30, c4 31-90, the held-out open loop 91-170
expect_eq 170 "$(jq -s '[.[] | select(.seq and .id_slot == null)] | length' "$T/llama.log")" "requests in the sim's log"
echo "capacity $cap requests/s (client time); held out at $sat ($sat_model of model time)"
check sat "$T/fit.profile" 91 170 --rate "$sat_model" --requests 80
expect_status 0 $? "the open loop near saturation predicted (TTFT within 15 %, TPOT and E2E 10 %)"
twin_variant noloop loop_ms_per_request 0
misses "without loop_ms_per_request the prediction near saturation misses" noloop sat 91 170 \
    --rate "$sat_model" --requests 80
awk -F' = ' '$1 == "loop_ms_per_request" { l = $2 } $1 == "front_ms_per_request" { f = $2 }
    { a[NR] = $0 } END { for (i = 1; i <= NR; i++) { n = split(a[i], kv, " = ")
        if (kv[1] == "loop_ms_per_request") print "loop_ms_per_request = " l + f
        else if (kv[1] == "front_ms_per_request") print "front_ms_per_request = 0"
        else print a[i] } }' "$T/fit.profile" >"$T/allloop.profile"
if [ -n "$ASAN" ]; then
    check sat "$T/allloop.profile" 91 170 --rate "$sat_model" --requests 80
    echo "note: an ASan build: the prediction with all of the outside time on the loop is not judged ($?)"
else
    misses "with all of the outside time on the loop the prediction near saturation misses" allloop \
        sat 91 170 --rate "$sat_model" --requests 80
fi
finish

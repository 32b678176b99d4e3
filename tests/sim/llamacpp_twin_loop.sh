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
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"
. "$LT_SRC/tests/sim/twin_lib.sh"
L=$LOADTRACE
K=2 # the sim runs K times faster than real time

cat >"$T/hidden.profile" <<'EOP'
name = hidden-llama-loop
model = tiny-llama-q8
step_ms = 3
step_ms_per_seq = 0.5
decode_ms_per_kv_token = 0
prefill_step_ms = 1
prefill_ms_per_seq = 0
prefill_ms_per_token = 0.04
front_ms_per_token = 0
loop_ms_per_request = 14
front_ms_per_request = 6
cached_ms_per_token = 0.01
max_running = 4
prefill_seqs = 4
batch_tokens = 2048
max_model_len = 4096
kv_tokens = 16384
block_tokens = 16
vocab = 512
EOP
"$L" synth --arrivals poisson --rate 2 --requests 120 --in uniform:40,200 --out lognormal:30,0.3 \
    --seed 6 -q -o "$T/t.lt.zst" || fail "synth"

start_sim llama --profile "$T/hidden.profile" --dialect llamacpp,slot-erase --time-scale $K -q
twin_live c1 "$T/t.lt.zst" --concurrency 1 --requests 30
twin_live c4 "$T/t.lt.zst" --concurrency 4 --requests 60
# the capacity at 4 slots, requests per second of the client's time
cap=$("$L" cat --no-header "$T/c4.lt.zst" | jq -rs '[.[] | select(.rec == null and .status == 200)] |
    (length) / (((map(.end) | max) - (map(.sent) | min)) / 1e6)')
sat=$(awk -v c="$cap" 'BEGIN { printf "%.3f", 0.85 * c }')
sat_model=$(awk -v c="$cap" -v k=$K 'BEGIN { printf "%.3f", 0.85 * c / k }')
twin_live l-sat "$T/t.lt.zst" --rate "$sat" --requests 80
stop_sim
"$L" sim --fit "$T/c1.lt.zst" "$T/c4.lt.zst" --time-scale $K -o "$T/fit.profile" >"$T/fit.txt"
expect_status 0 $? "sim --fit"
cat "$T/fit.txt"
expect_grep "^  loop_ms_per_request .*: timelines (what each admission held up" "$T/fit.txt"
expect_grep "^  front_ms_per_request .*: timelines less timings" "$T/fit.txt"
expect_grep "^  prefill fitted on prompts of [0-9]* to [0-9]* uncached tokens" "$T/fit.txt"
within "loop_ms_per_request" "$(val loop_ms_per_request "$T/fit.profile")" 14 0.2
within "front_ms_per_request" "$(val front_ms_per_request "$T/fit.profile")" 6 0.4
# c1 1-30, c4 31-90, the held-out open loop 91-170
expect_eq 170 "$(jq -s '[.[] | select(.seq)] | length' "$T/llama.log")" "requests in the sim's log"
echo "capacity $cap requests/s (client time); held out at $sat ($sat_model of model time)"
check sat "$T/fit.profile" 91 170 --rate "$sat_model" --requests 80
expect_status 0 $? "the open loop near saturation predicted (TTFT within 15 %, TPOT and E2E 10 %)"
sed 's/^loop_ms_per_request = .*/loop_ms_per_request = 0/' "$T/fit.profile" >"$T/noloop.profile"
check sat "$T/noloop.profile" 91 170 --rate "$sat_model" --requests 80 >"$T/noloop.txt"
expect_status 1 $? "without loop_ms_per_request the prediction near saturation misses"
cat "$T/noloop.txt"
awk -F' = ' '$1 == "loop_ms_per_request" { l = $2 } $1 == "front_ms_per_request" { f = $2 }
    { a[NR] = $0 } END { for (i = 1; i <= NR; i++) { n = split(a[i], kv, " = ")
        if (kv[1] == "loop_ms_per_request") print "loop_ms_per_request = " l + f
        else if (kv[1] == "front_ms_per_request") print "front_ms_per_request = 0"
        else print a[i] } }' "$T/fit.profile" >"$T/allloop.profile"
check sat "$T/allloop.profile" 91 170 --rate "$sat_model" --requests 80 >"$T/allloop.txt"
expect_status 1 $? "with all of the outside time on the loop the prediction near saturation misses"
cat "$T/allloop.txt"
finish

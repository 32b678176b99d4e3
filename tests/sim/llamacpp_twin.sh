#!/bin/sh
# The twin against a hidden server that behaves as llama-server does
# (--dialect llamacpp,slot-erase): 4 slots, a prompt's prefill in the same
# step as the running decodes (which wait for it), work per prompt token in
# front of the engine (the chat template and tokenizing in llama-server's
# HTTP threads: it delays a request's first token and holds up no step),
# and llama.cpp's own counters on /metrics. Fitted from a closed loop at 1
# and at 4, with the counters kept (--server-metrics-keep '^llamacpp:'):
# prefill_ms_per_token must come from the server's per-request timings
# (prompt_ms), front_ms_per_token from the TTFT slope less theirs, each
# near the hidden value; then held-out loads
# (closed loops at 2 and 3, an open loop at about half of capacity),
# predicted in virtual time, must match the live sim's figures; and the
# same fit with the front's cost taken out must miss the TTFT, so the term
# is what holds it.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"
. "$LT_SRC/tests/sim/twin_lib.sh"
L=$LOADTRACE
K=2 # the sim runs K times faster than real time (2: a loaded machine's lag stays small beside a step)

cat >"$T/hidden.profile" <<'EOF'
name = hidden-llama-front
model = tiny-llama-q8
step_ms = 9
step_ms_per_seq = 1.5
decode_ms_per_kv_token = 0
prefill_step_ms = 4
prefill_ms_per_seq = 0
prefill_ms_per_token = 0.6
front_ms_per_token = 0.4
cached_ms_per_token = 0.01
max_running = 4
prefill_seqs = 4
batch_tokens = 2048
max_model_len = 4096
kv_tokens = 16384
block_tokens = 16
vocab = 512
EOF
"$L" synth --arrivals poisson --rate 2 --requests 80 --in uniform:40,400 --out lognormal:40,0.3 \
    --seed 5 -q -o "$T/t.lt.zst" || fail "synth"

start_sim llama --profile "$T/hidden.profile" --dialect llamacpp,slot-erase --time-scale $K -q
twin_live c1 "$T/t.lt.zst" --concurrency 1 --requests 30
twin_live c4 "$T/t.lt.zst" --concurrency 4 --requests 40
"$L" sim --fit "$T/c1.lt.zst" "$T/c4.lt.zst" --time-scale $K -o "$T/fit.profile" >"$T/fit.txt"
expect_status 0 $? "sim --fit"
cat "$T/fit.txt"
expect_grep "the server's counters: prefill" "$T/fit.txt"
expect_grep "^  prefill_ms_per_token .* timings (llama.cpp prompt_ms against prompt_n" "$T/fit.txt"
expect_grep "^  front_ms_per_token .*: timelines less timings" "$T/fit.txt"
# The counters' cost per token holds the step's fixed part spread over the
# prompt (9 + 4 ms over ~220 tokens): a little above the hidden 0.6.
within "prefill_ms_per_token (metrics)" "$(val prefill_ms_per_token "$T/fit.profile")" 0.6 0.15
within "front_ms_per_token" "$(val front_ms_per_token "$T/fit.profile")" 0.4 0.25
heldout() { # NAME ARGS...: the live run of a held-out load
    n=$1
    shift
    twin_live "l-$n" "$T/t.lt.zst" "$@"
}
heldout c2 --concurrency 2 --requests 30
heldout c3 --concurrency 3 --requests 30
# about half of capacity: 2 req/s of model time, so 2 K of the client's
heldout open --rate $((2 * K)) --requests 40
stop_sim
# the sim numbers its inference requests in arrival order: c1 1-30, c4
# 31-70, then the held-out runs
expect_eq 170 "$(jq -s '[.[] | select(.seq)] | length' "$T/llama.log")" "requests in the sim's log"
check c2 "$T/fit.profile" 71 100 --concurrency 2 --requests 30
expect_status 0 $? "C = 2 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check c3 "$T/fit.profile" 101 130 --concurrency 3 --requests 30
expect_status 0 $? "C = 3 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check open "$T/fit.profile" 131 170 --rate 2 --requests 40
expect_status 0 $? "open loop at 2/s predicted (TTFT within 15 %, TPOT and E2E 10 %)"
# Without the front's cost the same fit misses the idle-ish TTFT.
sed 's/^front_ms_per_token = .*/front_ms_per_token = 0/' "$T/fit.profile" >"$T/nofront.profile"
check c2 "$T/nofront.profile" 71 100 --concurrency 2 --requests 30 >"$T/nofront.txt"
expect_status 1 $? "without front_ms_per_token the C = 2 prediction misses"
cat "$T/nofront.txt"
finish

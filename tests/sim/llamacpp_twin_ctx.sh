#!/bin/sh
# The twin against a hidden llama.cpp-like server (--dialect
# llamacpp,slot-erase) whose prefill costs more per token the longer the
# prompt (attention: each prompt token pays for the prompt before it,
# prefill_ms_per_token_ctx). Fitted from closed loops at 1 and 4 on
# prompts of 40 to 400 tokens: the fit must find the curve in the idle
# TTFTs (near the hidden cost) and take the counters' cost per token apart
# from it; then a held-out trace of longer prompts (400 to 800 tokens, at
# C = 2), predicted in virtual time, must match the live sim's own log, and
# the same fit without the curve must miss its TTFT.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"
. "$LT_SRC/tests/sim/twin_lib.sh"
L=$LOADTRACE
K=2 # the sim runs K times faster than real time

# A prompt of 200 tokens: 0.2 x 200 + 0.002 x 19,900 = 80 ms; of 600: 120 +
# 359 = 479 ms (a line through 40-400 would say about 300).
cat >"$T/hidden.profile" <<'EOF'
name = hidden-llama-ctx
model = tiny-llama-attn
step_ms = 8
step_ms_per_seq = 2
decode_ms_per_kv_token = 0
prefill_step_ms = 2
prefill_ms_per_seq = 0
prefill_ms_per_token = 0.2
prefill_ms_per_token_ctx = 0.002
cached_ms_per_token = 0.01
max_running = 4
prefill_seqs = 4
batch_tokens = 2048
max_model_len = 4096
kv_tokens = 16384
block_tokens = 16
vocab = 512
EOF
"$L" synth --arrivals poisson --rate 2 --requests 80 --in uniform:40,400 --out lognormal:30,0.3 \
    --seed 11 -q -o "$T/a.lt.zst" || fail "synth a"
"$L" synth --arrivals poisson --rate 2 --requests 80 --in uniform:400,800 --out lognormal:30,0.3 \
    --seed 12 -q -o "$T/b.lt.zst" || fail "synth b"

start_sim llama --profile "$T/hidden.profile" --dialect llamacpp,slot-erase --time-scale $K -q
twin_live c1 "$T/a.lt.zst" --concurrency 1 --requests 30
twin_live c4 "$T/a.lt.zst" --concurrency 4 --requests 40
"$L" sim --fit "$T/c1.lt.zst" "$T/c4.lt.zst" --time-scale $K -o "$T/fit.profile" >"$T/fit.txt"
expect_status 0 $? "sim --fit"
cat "$T/fit.txt"
expect_grep "^  prefill_ms_per_token_ctx .* timings (llama.cpp prompt_ms against prompt length at an idle server" \
    "$T/fit.txt"
within "prefill_ms_per_token_ctx" "$(val prefill_ms_per_token_ctx "$T/fit.profile")" 0.002 0.25
twin_live l-long "$T/b.lt.zst" --concurrency 2 --requests 30
stop_sim
# the sim numbers its inference requests in arrival order: c1 1-30, c4
# 31-70, then the held-out run of the other trace
expect_eq 100 "$(jq -s '[.[] | select(.seq)] | length' "$T/llama.log")" "requests in the sim's log"
# check reads the trace of $T/t.lt.zst
cp "$T/b.lt.zst" "$T/t.lt.zst"
check long "$T/fit.profile" 71 100 --concurrency 2 --requests 30
expect_status 0 $? "prompts of 400-800 tokens predicted (TTFT within 15 %, TPOT and E2E 10 %)"
# Without the curve, the same fit's line makes the long prompts too cheap.
sed 's/^prefill_ms_per_token_ctx = .*/prefill_ms_per_token_ctx = 0/' "$T/fit.profile" >"$T/line.profile"
check long "$T/line.profile" 71 100 --concurrency 2 --requests 30 >"$T/line.txt"
expect_status 1 $? "without prefill_ms_per_token_ctx the long prompts' prediction misses"
cat "$T/line.txt"
finish

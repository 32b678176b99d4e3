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
. "$LT_SRC/tests/sim/twin_lib.sh"

# A prompt of 200 tokens: 0.2 x 200 + 0.002 x 19,900 = 80 ms; of 600: 120 +
# 359 = 479 ms (a line through 40-400 would say about 300).
hidden_llama name=hidden-llama-ctx model=tiny-llama-attn step_ms=8 step_ms_per_seq=2 \
    prefill_step_ms=2 prefill_ms_per_token=0.2 prefill_ms_per_token_ctx=0.002
twin_synth "$T/a.lt.zst" --requests 80 --in uniform:40,400 --out lognormal:30,0.3 --seed 11
twin_synth "$T/b.lt.zst" --requests 80 --in uniform:400,800 --out lognormal:30,0.3 --seed 12

twin_sim
twin_loops "$T/a.lt.zst" 1:30 4:40
twin_fit c1 c4
expect_grep "^  prefill_ms_per_token_ctx .* timings (llama.cpp prompt_ms against prompt length at an idle server" \
    "$T/fit.txt"
within "prefill_ms_per_token_ctx" "$(val prefill_ms_per_token_ctx "$T/fit.profile")" 0.002 0.25
twin_live l-long "$T/b.lt.zst" --concurrency 2 --requests 30
stop_sim
# the runs' requests in arrival order (truth leaves out the resets' pinned ones): c1 1-30, c4
# 31-70, then the held-out run of the other trace
expect_eq 100 "$(jq -s '[.[] | select(.seq and .id_slot == null)] | length' "$T/llama.log")" "requests in the sim's log"
# check reads the trace of $T/t.lt.zst
cp "$T/b.lt.zst" "$T/t.lt.zst"
check long "$T/fit.profile" 71 100 --concurrency 2 --requests 30
expect_status 0 $? "prompts of 400-800 tokens predicted (TTFT within 15 %, TPOT and E2E 10 %)"
# Without the curve, the same fit's line makes the long prompts too cheap.
twin_variant line prefill_ms_per_token_ctx 0
misses "without prefill_ms_per_token_ctx the long prompts' prediction misses" line long 71 100 \
    --concurrency 2 --requests 30
finish

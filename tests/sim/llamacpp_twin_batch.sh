#!/bin/sh
# The twin against a hidden llama.cpp-like server (--dialect
# llamacpp,slot-erase) whose decode step is not a line in the batch, as a
# CPU's is (a matmul of a few rows is memory bound: the second decoder
# costs nearly as much as the first, the fourth little), and whose prompts
# all share a start that each slot keeps (a chat template's first tokens).
# Fitted from closed loops at 1, 2 and 4: the fit must find the cost at
# each batch size (step_ms_by_batch, near the hidden one) and the shared
# start (shared_prefix_tokens, from the cached tokens the server reported);
# then held-out loads (a closed loop at 3, an open loop at about half of
# capacity), predicted in virtual time, must match the live sim's own log;
# and the same fit with a line in the batch instead must miss the held-out
# C = 3, so the cost by batch size is what holds it.
set -u
. "$LT_SRC/tests/sim/twin_lib.sh"

# The hidden step at a batch of 1 to 4: 10, 22, 28, 31 ms (a line through
# 1 and 4 says 17 at 2 and 24 at 3).
hidden_llama name=hidden-llama-batch model=tiny-llama-cpu step_ms=6 step_ms_per_seq=3 \
    "step_ms_by_batch=10 22 28 31" prefill_step_ms=2 prefill_ms_per_token=0.5 \
    shared_prefix_tokens=30
twin_synth "$T/t.lt.zst" --requests 80 --in uniform:100,400 --out lognormal:40,0.3 --seed 9

twin_sim
twin_loops "$T/t.lt.zst" 1:30 2:30 4:40
twin_fit c1 c2 c4
expect_grep "^  step_ms_by_batch .* timelines (the decode step's cost at a batch of 1 to 4" \
    "$T/fit.txt"
expect_grep "^  shared_prefix_tokens 30: the server.s word" "$T/fit.txt"
# llama-server's slots, from its word: the fit read passes, and says so
expect_grep "^  slot_runs 1: the server's word (llama.cpp with 4 slots" "$T/fit.txt"
expect_eq on "$(val slot_runs "$T/fit.profile")" "slot_runs"
set -- $(val step_ms_by_batch "$T/fit.profile")
expect_eq 4 $# "step_ms_by_batch's costs (batch 1 to 4)"
c1=${1:-0} c4=${4:-0}
within "the step at a batch of 1" "${1:-0}" 10 0.10
within "the step at a batch of 2" "${2:-0}" 22 0.10
within "the step at a batch of 3" "${3:-0}" 28 0.10
within "the step at a batch of 4" "${4:-0}" 31 0.10
expect_eq 30 "$(val shared_prefix_tokens "$T/fit.profile")" "shared_prefix_tokens"

twin_live l-c3 "$T/t.lt.zst" --concurrency 3 --requests 30
# about half of capacity: 2 req/s of model time, so 2 K of the client's
twin_live l-open "$T/t.lt.zst" --rate $((2 * K)) --requests 40
stop_sim
# the runs' requests in arrival order (truth leaves out the resets' pinned ones): c1 1-30, c2
# 31-60, c4 61-100, then the held-out runs
expect_eq 170 "$(jq -s '[.[] | select(.seq and .id_slot == null)] | length' "$T/llama.log")" "requests in the sim's log"
# slot_runs: every request ran in one of the 4 slots, and all 4 served
expect_eq 170 "$(jq -s '[.[] | select(.seq and .id_slot == null and .slot >= 0 and .slot < 4)] | length' "$T/llama.log")" \
    "requests in the sim's log with their slot"
expect_eq 4 "$(jq -s '[.[] | select(.seq) | .slot] | unique | length' "$T/llama.log")" \
    "slots that served"
check c3 "$T/fit.profile" 101 130 --concurrency 3 --requests 30
expect_status 0 $? "C = 3 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check open "$T/fit.profile" 131 170 --rate 2 --requests 40
expect_status 0 $? "open loop at 2/s predicted (TTFT within 15 %, TPOT and E2E 10 %)"
# A line in the batch, through the fitted costs at 1 and 4, misses C = 3.
awk -v a="$c1" -v d="$c4" '/^step_ms_by_batch = / { print "step_ms_by_batch = off"; next }
    /^step_ms = / { printf "step_ms = %.6f\n", a - (d - a) / 3; next }
    /^step_ms_per_seq = / { printf "step_ms_per_seq = %.6f\n", (d - a) / 3; next } { print }' \
    "$T/fit.profile" >"$T/line.profile"
misses "with a line in the batch the C = 3 prediction misses" line c3 101 130 \
    --concurrency 3 --requests 30
finish

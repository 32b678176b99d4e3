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
. "$LT_SRC/tests/sim/twin_lib.sh"

hidden_llama name=hidden-llama-front step_ms=9 step_ms_per_seq=1.5 prefill_step_ms=4 \
    prefill_ms_per_token=0.6 front_ms_per_token=0.4
twin_synth "$T/t.lt.zst" --requests 80 --in uniform:40,400 --out lognormal:40,0.3 --seed 5

twin_sim
twin_loops "$T/t.lt.zst" 1:30 4:40
twin_fit c1 c4
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
# the runs' requests in arrival order (truth leaves out the resets' pinned ones): c1 1-30, c4
# 31-70, then the held-out runs
expect_eq 170 "$(jq -s '[.[] | select(.seq and .id_slot == null)] | length' "$T/llama.log")" "requests in the sim's log"
check c2 "$T/fit.profile" 71 100 --concurrency 2 --requests 30
expect_status 0 $? "C = 2 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check c3 "$T/fit.profile" 101 130 --concurrency 3 --requests 30
expect_status 0 $? "C = 3 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check open "$T/fit.profile" 131 170 --rate 2 --requests 40
expect_status 0 $? "open loop at 2/s predicted (TTFT within 15 %, TPOT and E2E 10 %)"
# Without the front's cost the same fit misses the idle-ish TTFT.
twin_variant nofront front_ms_per_token 0
misses "without front_ms_per_token the C = 2 prediction misses" nofront c2 71 100 \
    --concurrency 2 --requests 30
finish

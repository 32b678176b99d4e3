#!/bin/sh
# The twin against a hidden llama-server whose passes cost what a CPU's
# did (bench/README.md, rand-768x10 pinned to slots): a pass over one
# decoder 7 ms, over two 21, three 22, four 23, so a step's cost is by
# which slots decode (0+1 one pass, 21 ms; 0+2 two passes, 14), not by the
# batch. Fitted from closed loops at 1 to 4 (the fit reads each request's
# slot back by the server's rule and prices each decoded token by its
# pass), each pass's cost must come within 10 % of the hidden one, and a
# held-out closed loop at 6 (requests queue for slots) must match the live
# sim's own log. The slots the fit reads back are the sim's up to a
# relabelling (an erase keeps each slot's last-used time, which the fit
# cannot see: docs/sim.md "Fitting"): here 26 of 30 at C = 2 and 3, 40 of
# 40 at 4, against the sim's log.
set -u
. "$LT_SRC/tests/sim/twin_lib.sh"

hidden_llama name=hidden-llama-slots step_ms=7 step_ms_per_seq=5 "step_ms_by_batch=7 21 22 23" \
    prefill_step_ms=2 prefill_ms_per_token=0.3 shared_prefix_tokens=20
twin_synth "$T/t.lt.zst" --requests 160 --in uniform:40,200 --out lognormal:40,0.3 --seed 11

twin_sim
twin_loops "$T/t.lt.zst" 1:30 2:30 3:30 4:40
twin_live l-c6 "$T/t.lt.zst" --concurrency 6 --requests 40
stop_sim
twin_fit c1 c2 c3 c4
expect_grep "^  slot_runs 1: the server's word (llama.cpp with 4 slots" "$T/fit.txt"
set -- $(val step_ms_by_batch "$T/fit.profile")
expect_eq 4 $# "passes' costs (1 to 4 decoders)"
within "a pass of 1" "${1:-0}" 7 0.10
within "a pass of 2" "${2:-0}" 21 0.10
within "a pass of 3" "${3:-0}" 22 0.10
within "a pass of 4" "${4:-0}" 23 0.10
# c1 1-30, c2 31-60, c3 61-90, c4 91-130, the held-out C = 6 131-170
expect_eq 170 "$(jq -s '[.[] | select(.seq and .id_slot == null)] | length' "$T/llama.log")" "requests in the sim's log"
check c6 "$T/fit.profile" 131 170 --concurrency 6 --requests 40
expect_status 0 $? "C = 6 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
finish

#!/bin/sh
# The sim notices a client that leaves while its request waits (a
# cancelled request must stop costing): with max_running 1, request A holds the batch with an
# answer of 100,000 tokens (about ten minutes), and B (streamed) and C
# (whole answer) queue behind it; their clients give up after a second
# (curl --max-time). The sim must take B and C out of its queue at once,
# not when A is done and they would have sent their first token: its own
# /metrics count them aborted and waiting no more while A still runs, and
# its log marks them aborted, with no token emitted, closed before A's last
# token. Then A's client leaves too: the batch empties.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"

printf 'name = one\nmax_running = 1\n' >"$T/one.profile"
start_sim dep --profile "$T/one.profile"

metric() { # name: its value on the sim's /metrics (0 when absent)
    server_metric "$URL" "$1"
}
wait_metric() { # name min: at most 30 s, for the sim's own count to reach MIN
    wait_server_metric "$URL" "$2" "$1"
}
chat() { # max_tokens stream
    printf '{"model":"x","messages":[{"role":"user","content":"hi"}],"max_tokens":%d,"ignore_eos":true,"stream":%s}' "$1" "$2"
}

curl -sS -N --max-time 120 -H 'Content-Type: application/json' -d "$(chat 100000 true)" \
    "$URL/v1/chat/completions" >"$T/a.out" 2>/dev/null &
A_PID=$!
server_track "$A_PID"
# A is in the batch once its first token came
wait_until 30 grep -s -q '"content":"[^"]' "$T/a.out"
expect_grep '"content":"[^"]' "$T/a.out"

curl -sS -N --max-time 1 -H 'Content-Type: application/json' -d "$(chat 5 true)" \
    "$URL/v1/chat/completions" >"$T/b.out" 2>/dev/null &
B_PID=$!
curl -sS --max-time 1 -H 'Content-Type: application/json' -d "$(chat 6 false)" \
    "$URL/v1/chat/completions" >"$T/c.out" 2>/dev/null &
C_PID=$!
wait $B_PID
wait $C_PID
wait_metric loadtrace_sim_requests_aborted_total 2
# One snapshot of the sim's own figures: B and C aborted and out of the
# queue, A still in the batch.
curl -s --max-time 5 "$URL/metrics" >"$T/m1"
val() { awk -v n="$1" '!/^#/ { k = $1; sub(/[{].*/, "", k); if (k == n) s += $NF } END { print s + 0 }' "$T/m1"; }
expect_eq 2 "$(val loadtrace_sim_requests_aborted_total)" "aborted while queued behind A"
expect_eq 0 "$(val vllm:num_requests_waiting)" "waiting after B and C left"
expect_eq 1 "$(val vllm:num_requests_running)" "A still running"

kill "$A_PID" 2>/dev/null
wait "$A_PID" 2>/dev/null
wait_metric loadtrace_sim_requests_aborted_total 3
expect_eq 3 "$(metric loadtrace_sim_requests_aborted_total)" "A aborted when its client left"
expect_eq 0 "$(metric vllm:num_requests_running)" "the batch empty after A left"
stop_sim

# The log: one line each, told apart by max_tokens.
line() { jq -c "select(.max_tokens == $1)" "$T/dep.log"; }
line 100000 >"$T/a.json"
line 5 >"$T/b.json"
line 6 >"$T/c.json"
expect_eq "true true" "$(jq -r '"\(.aborted) \(.emitted > 0)"' "$T/a.json")" "A: aborted after tokens"
a_last=$(jq '.tokens_us[-1]' "$T/a.json")
for q in b c; do
    expect_eq "true 0 false" "$(jq -r '"\(.aborted) \(.emitted) \(.complete)"' "$T/$q.json")" \
        "$q: aborted before its first token"
    end=$(jq .end_us "$T/$q.json")
    # A emitted tokens after q was gone: q was closed while queued, long
    # before its first token could come (after A's last).
    [ "$end" -lt "$a_last" ] || fail "$q closed at $end us, not before A's last token at $a_last us"
    [ "$end" -ge "$(jq .arrival_us "$T/$q.json")" ] || fail "$q closed before it arrived"
done
finish

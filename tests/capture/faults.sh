#!/bin/sh
# loadtrace capture when things go wrong: upstream errors and faults from
# `sim --faults`, an unreachable upstream, clients that leave, bodies over
# the limit, bodies that are not JSON, and SIGTERM in the middle of a
# stream. Each is answered the way a client expects and recorded with its
# error class (`err`) and status.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"

S='{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":10,"ignore_eos":true,"stream":true}'
rec() { records "$T/$1.lt.zst" | jq -r "$2"; }
# sse_tokens FILE: content deltas in an SSE body
sse_tokens() { sed -n 's/^data: //p' "$1" | jq -r '.choices[0].delta.content // empty' 2>/dev/null | grep -c .; }

# Values as sent: max_tokens -3 is passed on unchanged, not recorded as 0
# but left out and kept in `changed`; the exit line counts such records.
start_sim vals --profile fast
start_capture cvals "$SIM_URL"
req "$CAP_URL" /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":-3}' "$T/rvals"
req "$CAP_URL" /v1/chat/completions '{"model":"m","messages":5}' "$T/rvals5"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "-3 null" "$(rec cvals 'select(.changed.max_tokens) | "\(.changed.max_tokens) \(.max_tokens)"')" \
    "max_tokens -3 kept as sent"
expect_eq '"not a list" null' "$(rec cvals 'select(.changed.messages) | "\(.changed.messages | tojson) \(.in)"')" \
    "messages: 5 has no in"
expect_grep "2 with values not as sent" "$T/cvals.err"

# Error statuses pass through with their body and headers.
start_sim e500 --profile fast --faults 500=1
start_capture c500 "$SIM_URL"
req "$CAP_URL" /v1/chat/completions "$S" "$T/r500"
req "$SIM_URL" /v1/chat/completions "$S" "$T/d500"
expect_eq 500 "$(cat "$T/r500.status")" "500 passed through"
expect_eq "$(cat "$T/d500")" "$(cat "$T/r500")" "500 body passed through"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "500 true" "$(rec c500 '"\(.orig.status) \(.failed)"')" "500 recorded"

start_sim e429 --profile fast --faults 429=1:3
start_capture c429 "$SIM_URL"
req "$CAP_URL" /v1/chat/completions "$S" "$T/r429" -D "$T/h429"
expect_eq 429 "$(cat "$T/r429.status")" "429 passed through"
expect_grep "Retry-After: 3" "$T/h429"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "429" "$(rec c429 .orig.status)" "429 recorded"

# The upstream cuts the stream after 3 tokens: so does capture, and the
# record says so, with the 3 tokens counted (estimated: no usage came).
start_sim disc --profile fast --faults disconnect=1:3
start_capture cdisc "$SIM_URL"
req "$CAP_URL" /v1/chat/completions "$S" "$T/rdisc"
rc=$(cat "$T/rdisc.rc")
[ "$rc" = 18 ] || [ "$rc" = 56 ] || fail "cut stream: curl exit $rc, expected 18 or 56"
expect_eq 3 "$(sse_tokens "$T/rdisc")" "tokens before the cut"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "upstream_cut 3 true true" "$(rec cdisc '"\(.err) \(.out) \(.est) \(.failed)"')" \
    "cut stream recorded"

# A malformed chunk reaches the client as it was; the record notes it.
start_sim malf --profile fast --faults malformed=1:1
start_capture cmalf "$SIM_URL"
req "$CAP_URL" /v1/chat/completions "$S" "$T/rmalf"
stop $CAP_PID capture
stop $SIM_PID sim
start_sim malf2 --profile fast --faults malformed=1:1
req "$SIM_URL" /v1/chat/completions "$S" "$T/dmalf"
stop $SIM_PID sim
expect_eq "$(sed 's/"created":[0-9]*//' "$T/dmalf")" "$(sed 's/"created":[0-9]*//' "$T/rmalf")" \
    "malformed stream passed through unchanged"
expect_eq "bad_chunk 200" "$(rec cmalf '"\(.err) \(.orig.status)"')" "malformed chunk recorded"

# The upstream refuses the connection: the client gets a 502 with a JSON
# error, as from any gateway.
start_sim refuse --profile fast --faults refuse=1:5s
start_capture cref "$SIM_URL"
req "$CAP_URL" /v1/chat/completions "$S" "$T/rref"
expect_eq 502 "$(cat "$T/rref.status")" "refused upstream: 502"
expect_eq upstream_error "$(jq -r .error.type "$T/rref")" "502 body"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "upstream_connect 502" "$(rec cref '"\(.err) \(.orig.status)"')" "refusal recorded"

# A client that leaves cancels its upstream request: the sim's stream is
# stalled for 2 s, the client gives up after 1 s; when the stall ends the
# sim finds its connection closed and logs the request incomplete.
start_sim stall --profile fast --faults stall=1:2s:2
start_capture cgone "$SIM_URL"
req "$CAP_URL" /v1/chat/completions "$S" "$T/rgone" --max-time 1
expect_eq 28 "$(cat "$T/rgone.rc")" "client timed out"
# The two tokens sent before the stall reached the client during it: the
# stream is relayed as it comes, not held.
expect_eq 2 "$(sse_tokens "$T/rgone")" "tokens relayed before the stall"
# Past the stall: a request still connected would now be sent whole. The
# sim's own counts say when it is done with the request either way: aborted
# (the capture closed its upstream connection) or answered whole.
wait_server_metric "$SIM_URL" 1 loadtrace_sim_requests_aborted_total vllm:request_success_total ||
    fail "the sim never finished the stalled request"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "false" "$(jq -r 'select(.seq) | .complete' "$T/stall.log")" \
    "upstream request cancelled"
expect_eq "client_gone true" "$(rec cgone '"\(.err) \(.failed)"')" "departure recorded"
expect_grep "1 clients gone" "$T/cgone.err"
# ... and where it left, for replay to leave there too: after the tokens
# the client itself received, no sooner than its --max-time after it sent.
expect_eq 2 "$(rec cgone .cancel_tokens)" "tokens the departed client had"
after=$(rec cgone .cancel_after)
[ "$after" -ge 900000 ] || fail "the client left after 1 s, recorded at $after us"
# Its record has no `out` (the whole answer is unknown): replayed, it asks
# for max_tokens (10) and leaves at the same point; the sim (the default
# profile, tokens ~6 ms apart, no stall) sees one client leave, and the
# result holds the two tokens.
expect_eq null "$(rec cgone .out)" "no out for an answer the client left"
start_sim again
"$LOADTRACE" replay "$T/cgone.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics \
    -o "$T/again.lt.zst" -q --no-summary
expect_status 0 $? "replay of the departed client"
# the sim notices a departure at its next write: wait (at most 30 s) for its count
i=0
while [ $i -lt 300 ] && ! curl -s --max-time 5 "$SIM_URL/metrics" |
    grep -q '^loadtrace_sim_requests_aborted_total{.*} 1$'; do
    sleep 0.1
    i=$((i + 1))
done
stop $SIM_PID sim
expect_eq "true 2" "$("$LOADTRACE" cat --no-header "$T/again.lt.zst" |
    jq -r 'select(.rec == null) | "\(.cancelled) \(.out)"')" "replayed: cancelled after 2 tokens"
expect_eq 1 "$(jq -s '[.[] | select(.seq != null and .aborted == true)] | length' "$T/again.log")" \
    "replayed: the sim saw the client leave"

# Bodies over the limit: 413, whether the length is announced or chunked;
# not JSON: passed on, the upstream's 400 comes back, recorded as bad_json.
start_sim lim --profile fast
start_capture clim "$SIM_URL" --max-body 1k
big=$(printf '{"model":"m","messages":[{"role":"user","content":"%0*d"}]}' 2000 0)
req "$CAP_URL" /v1/chat/completions "$big" "$T/rbig"
expect_eq 413 "$(cat "$T/rbig.status")" "announced body over the limit"
expect_grep "larger than the limit" "$T/rbig"
req "$CAP_URL" /v1/chat/completions "$big" "$T/rbigc" -H 'Transfer-Encoding: chunked'
expect_eq 413 "$(cat "$T/rbigc.status")" "chunked body over the limit"
req "$CAP_URL" /v1/chat/completions '{"model":"m","messages":[' "$T/rbad"
req "$SIM_URL" /v1/chat/completions '{"model":"m","messages":[' "$T/dbad"
expect_eq "$(cat "$T/dbad.status")" "$(cat "$T/rbad.status")" "bad JSON: the upstream's status"
expect_eq 400 "$(cat "$T/rbad.status")" "bad JSON: 400"
req "$CAP_URL" /v1/chat/completions "$S" "$T/rok"
expect_eq 200 "$(cat "$T/rok.status")" "a good request after the bad ones"
stop $CAP_PID capture
stop $SIM_PID sim
expect_eq "413 too_large|413 too_large|400 bad_json|200 null" \
    "$(rec clim '"\(.orig.status) \(.err)"' | paste -sd'|')" "limits and bad JSON recorded"

# An upstream that is not there at all.
start_sim gone --profile fast
dead=$SIM_URL
stop $SIM_PID sim
start_capture cdead "$dead"
req "$CAP_URL" /v1/chat/completions "$S" "$T/rdead"
expect_eq 502 "$(cat "$T/rdead.status")" "no upstream: 502"
stop $CAP_PID capture

# SIGTERM in the middle of a stream that outlasts the grace period:
# capture exits 0 and the trace is readable, with the cut request in it.
start_sim long --profile default
start_capture cterm "$SIM_URL" --grace 1s
L='{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4000,"ignore_eos":true,"stream":true}'
curl -sS -N --max-time 60 -H 'Content-Type: application/json' -d "$L" \
    "$CAP_URL/v1/chat/completions" >"$T/rterm" 2>/dev/null &
CURL_PID=$!
server_track "$CURL_PID"
wait_chunks "$T/rterm" 5
stop $CAP_PID capture
wait $CURL_PID
records "$T/cterm.lt.zst" >"$T/term.recs"
expect_status 0 $? "trace readable after SIGTERM"
expect_eq "shutdown true" "$(jq -r '"\(.err) \(.out > 0)"' "$T/term.recs")" "cut request recorded"

# SIGTERM drains: /healthz is capture's own and says ok; after the signal
# no new connection is taken, and a stream in flight finishes within the
# grace period, whole, and is recorded without an error. The stream is
# long (800 tokens, about 5 s at the default profile) so that the refused
# connection is seen while it is still in flight: a loaded machine may
# take a while to deliver the signal, and a short stream would be over
# (and capture gone, refusing everything) before anyone looked.
start_capture cdrain "$SIM_URL"
curl -sS --max-time 5 "$CAP_URL/healthz" >"$T/health" 2>/dev/null
expect_eq ok "$(jq -r .status "$T/health")" "/healthz answered by capture"
expect_eq 1 "$(curl -sv --max-time 5 "$CAP_URL/healthz" "$CAP_URL/healthz" 2>&1 | grep -c 'Re-using')" \
    "/healthz keeps the connection alive"
D='{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":800,"ignore_eos":true,"stream":true}'
curl -sS -N --max-time 60 -H 'Content-Type: application/json' -d "$D" \
    "$CAP_URL/v1/chat/completions" >"$T/rdrain" 2>/dev/null &
CURL_PID=$!
server_track "$CURL_PID"
wait_chunks "$T/rdrain" 3
kill -TERM $CAP_PID
i=0
while [ $i -lt 200 ] && curl -sS --max-time 2 "$CAP_URL/healthz" >/dev/null 2>&1; do
    sleep 0.1
    i=$((i + 1))
done
# (a curl that has exited may linger as a zombie: its output says whether it is done)
grep -q 'data: \[DONE\]' "$T/rdrain" && fail "the stream ended before capture refused a new connection"
[ $i -lt 200 ] || fail "a new connection was taken while draining"
wait $CURL_PID
expect_status 0 $? "the stream in flight finished"
expect_grep "data: \[DONE\]" "$T/rdrain"
wait $CAP_PID
expect_status 0 $? "capture exit status after draining"
expect_grep "1 requests in flight at the signal, 0 cut" "$T/cdrain.err"
expect_eq "null 800" "$(rec cdrain '"\(.err) \(.out)"')" "the drained request recorded whole"

# SIGKILL while one long answer streams: the 40 short requests that
# finished behind it are in the file (written as each one finished: they
# reach the disk while capture runs, which is waited for by reading the
# file, not assumed after a fixed sleep that a loaded machine outlasts),
# readers see them in arrival order, and the long one is there as begun
# and unfinished.
start_capture ckill "$SIM_URL"
curl -sS -N --max-time 60 -H 'Content-Type: application/json' -d "$L" \
    "$CAP_URL/v1/chat/completions" >"$T/rkill" 2>/dev/null &
CURL_PID=$!
server_track "$CURL_PID"
wait_chunks "$T/rkill" 5
k=0
while [ $k -lt 40 ]; do
    req "$CAP_URL" /v1/chat/completions \
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"short $k\"}],\"max_tokens\":2}" \
        "$T/rshort"
    k=$((k + 1))
done
i=0
while [ $i -lt 150 ] &&
    [ "$("$LOADTRACE" cat --salvage --no-header "$T/ckill.lt.zst" 2>/dev/null | wc -l)" -lt 41 ]; do
    sleep 0.1
    i=$((i + 1))
done
grep -q 'data: \[DONE\]' "$T/rkill" && fail "the long stream ended before the kill"
kill -KILL $CAP_PID
wait $CAP_PID 2>/dev/null
kill $CURL_PID 2>/dev/null
wait $CURL_PID 2>/dev/null
records "$T/ckill.lt.zst" >"$T/kill.recs"
expect_status 0 $? "trace readable after SIGKILL"
expect_eq 41 "$(wc -l <"$T/kill.recs")" "40 finished requests and one in flight kept after SIGKILL"
expect_eq "unfinished 4000 true null" \
    "$(jq -sr '.[0] | "\(.err) \(.max_tokens) \(.failed) \(.orig)"' "$T/kill.recs")" \
    "the request in flight: first to arrive, as sent, unfinished"
expect_eq true "$(jq -s '[.[].t] | . == sort' "$T/kill.recs")" "read back in arrival order"
"$LOADTRACE" info "$T/ckill.lt.zst" >"$T/kill.info" 2>&1
expect_status 0 $? "info reads the killed trace"
expect_eq 40 "$(jq -s '[.[] | select(.max_tokens == 2 and .orig.status == 200)] | length' \
    "$T/kill.recs")" "each as sent and answered"
stop $SIM_PID sim

# The counters capture prints at exit (what it did), against the
# records each trace holds: every request recorded, and clients gone,
# upstream failures (an err upstream_*), bodies too large and values not
# as sent counted as the records say.
for c in cvals c500 c429 cdisc cref cgone clim cdead cterm cdrain; do
    records "$T/$c.lt.zst" >"$T/$c.recs" || { fail "$c: trace unreadable"; continue; }
    want=$(jq -s -r '"terminated: \(length) requests, \(length) recorded, 0 not recorded (too many held), " +
        "0 lost (never finished, or not written), " +
        "\([.[] | select(.err == "client_gone")] | length) clients gone, " +
        "\([.[] | select(.err // "" | startswith("upstream_"))] | length) upstream failures, " +
        "\([.[] | select(.err == "too_large")] | length) too large, " +
        "\([.[] | select(.changed != null)] | length) with values not as sent"' "$T/$c.recs")
    expect_grep "$want" "$T/$c.err"
done
finish

#!/bin/sh
# What an idle keep-alive connection costs capture: 1,000 clients each
# make one chat request through it (answered by the sim) and keep their
# connection open. Capture's resident memory may grow by at most 16 KiB
# per held connection (libmicrohttpd's buffer and the connection's own
# state; no upstream handle, no per-request buffers are kept while idle).
# Memory is read from /proc (VmRSS); the counts from the clients' own
# reads (hold_conns) and from the trace.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"
[ -r /proc/self/status ] || { echo "FAIL: no /proc to read memory from" >&2; exit 1; }
[ -x "${LT_HOLD_CONNS:-}" ] || { echo "FAIL: LT_HOLD_CONNS (tests/capture/hold_conns) not set" >&2; exit 1; }
N=1000
start_sim up --profile fast
start_capture cap "$SIM_URL"
# One request first: what capture sets up once (the upstream connection,
# the trace writer) is not counted per connection.
req "$CAP_URL" /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}' "$T/first"
expect_eq 200 "$(cat "$T/first.status")" "the first request's status"
wait_stable "$CAP_PID"
base=$(rss "$CAP_PID")
port=${CAP_URL##*:}
"$LT_HOLD_CONNS" "$port" $N "$T/go" >"$T/hold.out" 2>"$T/hold.err" &
HOLD=$!
i=0
while ! grep -q '^held' "$T/hold.out" 2>/dev/null && [ $i -lt 1200 ]; do
    sleep 0.1
    i=$((i + 1))
done
expect_grep '^held' "$T/hold.out"
wait_stable "$CAP_PID"
grown=$(($(rss "$CAP_PID") - base))
: >"$T/go"
i=0
while kill -0 $HOLD 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
wait $HOLD
expect_eq "answered $N" "$(grep '^answered' "$T/hold.out")" "requests answered 200"
expect_eq "open $N" "$(grep '^open' "$T/hold.out")" "connections capture still held"
echo "capture grew by $grown kB with $N idle keep-alive connections"
# Under AddressSanitizer every block carries redzones and freed ones sit
# in its quarantine: RSS says nothing of what capture holds, so only the
# counts are judged.
if asan_build "$LOADTRACE"; then
    echo "note: an ASan build: capture's RSS is not judged"
elif [ "$grown" -gt $((N * 16)) ]; then
    fail "capture grew by $grown kB for $N idle connections (more than 16 KiB each)"
fi
stop "$CAP_PID" capture
expect_eq $((N + 1)) "$(records "$T/cap.lt.zst" | jq -s 'map(select(.orig.status == 200)) | length')" \
    "records with status 200 (the first request and one per connection)"
finish

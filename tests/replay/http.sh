#!/bin/sh
# The HTTP clients (docs/replay.md "HTTP clients"), run twice by ctest: as
# replay_http with the client auto picks for the sim (lean: plain http, no
# proxy) and as replay_http_curl with LOADTRACE_HTTP_CLIENT=curl. Against
# the sim's log (each request's client TCP port, its fault):
#   - keep-alive: a closed loop of 2 uses at most 2 connections, and the
#     connections replay says it opened are the ports the sim saw; with the
#     sim closing after every answer, one per request; HTTP/1.0 answers
#     (no chunks: a stream ends with the connection) read to their close;
#   - HTTP framing gone wrong, each by a sim fault: a chunk size that is
#     not hex is `malformed`; a Content-Length that claims more than the
#     server sends before it closes is `incomplete` (whole answers; streams,
#     which have no length, are untouched); a cut stream is `incomplete`;
#   - a failed request keeps the server's words (err_body);
#   - option errors: a bad --http-client or LOADTRACE_HTTP_CLIENT, the lean
#     client forced on https (exit 2).
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
client=${LOADTRACE_HTTP_CLIENT:-lean}

"$L" synth --arrivals constant --rate 10 --requests 8 --in fixed:16 --out fixed:6 -q \
    -o "$T/t.lt.zst" || fail "synth"

classes() { # results: the class of each request, in send order
    results "$1" | jq -s -r 'sort_by(.sent)[] | .err // "ok"' | tr '\n' ' ' | sed 's/ $//'
}
want() { # log, then sed fault->class pairs: the class each request should get
    _log=$1
    shift
    jq -s -r '[.[] | select(.seq != null)] | sort_by(.arrival_us)[] | .fault' "$_log" |
        sed -e s/^none\$/ok/ "$@" | tr '\n' ' ' | sed 's/ $//'
}
faulted() { # log fault
    jq -s "[.[] | select(.fault == \"$2\")] | length" "$1"
}
ports() { # log: connections the inference requests came on
    jq -s '[.[] | select(.seq != null) | .client_port] | unique | length' "$1"
}

# --- keep-alive
start_sim ka --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics --concurrency 2 \
    -o "$T/ka.lt.zst" 2>"$T/ka.err" >/dev/null
expect_status 0 $? "replay, keep-alive"
stop_sim
n=$(ports "$SIM_LOG")
[ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "keep-alive: $n connections for a closed loop of 2"
expect_grep "48 output tokens, $n connections opened ($client client)" "$T/ka.err"

start_sim close --profile fast --dialect close
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics --concurrency 2 \
    -o "$T/close.lt.zst" 2>"$T/close.err" >/dev/null
expect_status 0 $? "replay, a connection closed after every answer"
stop_sim
expect_eq 8 "$(ports "$SIM_LOG")" "connections the sim saw when it closes each"
expect_grep "48 output tokens, 8 connections opened ($client client)" "$T/close.err"

# HTTP/1.0 answers: no chunks, each stream ends with its connection's close
start_sim h10 --profile fast --dialect http10 --faults disconnect=0.5:3,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics --concurrency 2 \
    -o "$T/h10.lt.zst" 2>"$T/h10.err" >/dev/null
expect_status 1 $? "replay, HTTP/1.0 streams, some cut"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics --concurrency 2 \
    --no-stream -o "$T/h10w.lt.zst" -q --no-summary
expect_status 0 $? "replay, HTTP/1.0 whole answers"
stop_sim
expect_eq 16 "$(ports "$SIM_LOG")" "connections the sim saw in HTTP/1.0"
[ "$(faulted "$SIM_LOG" disconnect)" -ge 1 ] || fail "http10: no stream was cut"
# a cut stream looks like the end of an HTTP/1.0 answer: only the SSE says
expect_eq "$(jq -s '[.[] | select(.seq != null and .stream and .fault == "disconnect")] | length' "$SIM_LOG")" \
    "$(results "$T/h10.lt.zst" | jq -s '[.[] | select(.err == "incomplete" and .out == 3)] | length')" \
    "HTTP/1.0 streams cut after 3 tokens: incomplete"
expect_eq "$(jq -s '[.[] | select(.seq != null and .stream and .fault == "none")] | length' "$SIM_LOG")" \
    "$(results "$T/h10.lt.zst" | jq -s '[.[] | select(.err == null and .out == 6)] | length')" \
    "HTTP/1.0 streams read to their close: ok"

# --- framing gone wrong
start_sim chunk --profile fast --faults badchunk=0.5:2,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 1 \
    -o "$T/chunk.lt.zst" -q --no-summary
expect_status 1 $? "replay with a bad chunk size"
stop_sim
[ "$(faulted "$SIM_LOG" badchunk)" -ge 1 ] && [ "$(faulted "$SIM_LOG" none)" -ge 1 ] ||
    fail "badchunk: want both faulted and clean requests"
expect_eq "$(want "$SIM_LOG" -e s/^badchunk\$/malformed/)" "$(classes "$T/chunk.lt.zst")" \
    "classes with a chunk size that is not hex"
expect_eq "2" "$(results "$T/chunk.lt.zst" | jq -r 'select(.err == "malformed") | .out' | sort -u)" \
    "tokens before the bad chunk"

start_sim lie --profile fast --faults liesize=0.5,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-stream --concurrency 1 \
    -o "$T/lie.lt.zst" -q --no-summary
expect_status 1 $? "replay with a Content-Length that lies"
stop_sim
[ "$(faulted "$SIM_LOG" liesize)" -ge 1 ] && [ "$(faulted "$SIM_LOG" none)" -ge 1 ] ||
    fail "liesize: want both faulted and clean requests"
expect_eq "$(want "$SIM_LOG" -e s/^liesize\$/incomplete/)" "$(classes "$T/lie.lt.zst")" \
    "classes with a Content-Length that lies"
expect_eq 200 "$(results "$T/lie.lt.zst" | jq -r 'select(.err == "incomplete") | .status' | sort -u)" \
    "a cut body keeps its status"
# the same fault on streams leaves them alone
start_sim lies --profile fast --faults liesize=0.5,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 1 \
    -o "$T/lies.lt.zst" -q --no-summary
expect_status 0 $? "replay of streams with liesize"
stop_sim

start_sim cut --profile fast --faults disconnect=0.5:3,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 2 \
    -o "$T/cut.lt.zst" -q --no-summary
expect_status 1 $? "replay with cut streams"
stop_sim
expect_eq "$(faulted "$SIM_LOG" disconnect)" \
    "$(results "$T/cut.lt.zst" | jq -s '[.[] | select(.err == "incomplete" and .out == 3)] | length')" \
    "cut streams: incomplete after 3 tokens"

# --- the server's words
start_sim e500 --profile fast --faults 500=0.5,seed=2
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 2 \
    -o "$T/e500.lt.zst" -q --no-summary
expect_status 1 $? "replay with 500s"
stop_sim
[ "$(faulted "$SIM_LOG" 500)" -ge 1 ] || fail "500: no request got the fault"
expect_eq "$(faulted "$SIM_LOG" 500)" \
    "$(results "$T/e500.lt.zst" | jq -s '[.[] | select(.err == "http" and .status == 500 and (.err_body | contains("simulated internal server error")))] | length')" \
    "500s with the server's error body"

# --- option errors
"$L" replay "$T/t.lt.zst" --target http://127.0.0.1:1 --http-client nope -o "$T/x.lt.zst" \
    2>"$T/e1"
expect_status 2 $? "a bad --http-client"
LOADTRACE_HTTP_CLIENT=nope "$L" replay "$T/t.lt.zst" --target http://127.0.0.1:1 \
    -o "$T/x.lt.zst" 2>"$T/e2"
expect_status 2 $? "a bad LOADTRACE_HTTP_CLIENT"
"$L" replay "$T/t.lt.zst" --target https://127.0.0.1:1 --http-client lean -o "$T/x.lt.zst" \
    2>"$T/e3"
expect_status 2 $? "the lean client on https"
expect_grep "plain http:// only" "$T/e3"
[ ! -e "$T/x.lt.zst" ] || fail "a refused run wrote a results file"
finish

#!/bin/sh
# loadtrace capture --from-log: gateway request logs (OpenAI-style JSON
# lines in several shapes) become the same trace records the proxy writes,
# sorted by arrival, with the same privacy rules. Expected values are worked
# out by hand from the log below.
set -u
. "$LT_SRC/tests/cli/lib.sh"

SYS='{"role":"system","content":"You are terse. LOGPROMPTCANARY"}'
U1='{"role":"user","content":"Weather in Paris?"}'
A1='{"role":"assistant","content":"Sunny."}'
U2='{"role":"user","content":"And tomorrow?"}'
cat >"$T/log.jsonl" <<EOF2
{"start_time":"2026-11-29T10:00:02.000Z","end_time":"2026-11-29T10:00:03.500Z","completion_start_time":"2026-11-29T10:00:02.250Z","url":"/v1/chat/completions","headers":{"Authorization":"Bearer sk-LOGSECRETKEY","Cookie":"c=LOGCOOKIE","X-Session":"conv-LOGSESSION"},"request":{"model":"gpt-x","max_tokens":100,"messages":[$SYS,$U1]},"response":{"choices":[{"message":{"content":"Sunny."},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":5}}},"status_code":200}
{"timestamp":1795946400.5,"latency_ms":800,"body":{"model":"gpt-x","messages":[$U1],"tools":[{"type":"function","function":{"name":"get_weather"}}]},"response":{"status_code":200,"body":{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":9}}}}

{"start_time":"2026-11-29 10:00:05","end_time":"2026-11-29 10:00:06","url":"/v1/chat/completions","request":"{\"model\":\"gpt-x\",\"stream\":true,\"messages\":[$(printf '%s,%s,%s,%s' "$SYS" "$U1" "$A1" "$U2" | sed 's/"/\\"/g')]}","response":"data: {\"choices\":[{\"delta\":{\"content\":\"Rain\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" likely\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"}
{"start_time":1795946401000,"url":"/v1/completions","status":429,"request":{"model":"gpt-x","prompt":"Once upon a time"},"error":{"message":"rate limited"}}
EOF2

"$LOADTRACE" capture --from-log "$T/log.jsonl" -o "$T/t.lt.zst" 2>"$T/err"
expect_status 0 $? "from-log"
expect_grep "4 records from 5 lines" "$T/err"
"$LOADTRACE" cat "$T/t.lt.zst" >"$T/all"
expect_status 0 $? "cat"
head -1 "$T/all" >"$T/hdr"
expect_grep '"source":"capture:log"' "$T/hdr"
tail -n +2 "$T/all" >"$T/recs"
# Sorted by start: 10:00:00.5 (epoch 1795946400.5), 10:00:01 (ms), 10:00:02, 10:00:05.
expect_eq "0 500000 1500000 4500000" "$(jq -r .t "$T/recs" | xargs)" "arrival times, sorted"
expect_eq "chat completions chat chat" "$(jq -r .api "$T/recs" | xargs)" "api"
# Line 1: usage, times, finish.
expect_eq '50 20 5 32 250000 1500000 stop 200 100' \
    "$(jq -sr '.[2] | "\(.in) \(.out) \(.reasoning) \(.cached) \(.orig.ttft) \(.orig.e2e) \(.finish) \(.orig.status) \(.max_tokens)"' "$T/recs")" \
    "line 1"
# Line 2 (batch form): tool definitions and the call's argument size.
expect_eq '30 9 [1,14] [4] 800000 tool_calls' \
    "$(jq -sr '.[0] | "\(.in) \(.out) \(.tools | tojson) \(.calls | tojson) \(.orig.e2e) \(.finish)"' "$T/recs")" \
    "batch line"
# Line 4: a logged stream without usage: estimated, counted by chunks; and
# its messages extend line 1's, so it is turn 1 of line 1's session.
expect_eq 'true 2 stop 4' "$(jq -sr '.[3] | "\(.est) \(.out) \(.finish) \(.msgs | length)"' "$T/recs")" \
    "stream line"
expect_eq "$(jq -s '.[2].session' "$T/recs") 1 true" \
    "$(jq -sr '.[3] | "\(.session) \(.turn) \(.think == 1500000)"' "$T/recs")" "inferred session"
# Line 5: an error.
expect_eq '429 true upstream_error' "$(jq -sr '.[1] | "\(.orig.status) \(.failed) \(.err)"' "$T/recs")" \
    "error line"
zstd -dc "$T/t.lt.zst" >"$T/raw"
for s in LOGSECRETKEY LOGCOOKIE LOGSESSION LOGPROMPTCANARY Paris; do
    if grep -a -q "$s" "$T/raw"; then fail "'$s' found in the trace"; fi
done

# Named sessions from the logged headers (header names match in any case);
# a request without the header falls back to inference, so line 4 joins
# the session line 1 named.
"$LOADTRACE" capture --from-log "$T/log.jsonl" --session-header x-session -o "$T/h.lt.zst" 2>/dev/null
expect_status 0 $? "from-log with --session-header"
"$LOADTRACE" cat --no-header "$T/h.lt.zst" >"$T/h"
expect_eq "true false" "$(jq -sr '"\(.[2].session == .[3].session) \(.[2].session == .[0].session)"' "$T/h")" \
    "named session"
expect_false_same=$(jq -s '.[2].session' "$T/h")
[ "$expect_false_same" != "$(jq -s '.[2].session' "$T/recs")" ] ||
    fail "a named session has the id of an inferred one"

# Bad lines: an error naming the line, or skipped and reported.
printf 'not json\n' >>"$T/log.jsonl"
"$LOADTRACE" capture --from-log "$T/log.jsonl" -o "$T/b.lt.zst" 2>"$T/err"
expect_status 1 $? "bad line"
expect_grep "log.jsonl:6: not JSON" "$T/err"
"$LOADTRACE" capture --from-log "$T/log.jsonl" --skip-bad -o "$T/b.lt.zst" 2>"$T/err"
expect_status 0 $? "bad line skipped"
expect_grep "skipped .*log.jsonl:6" "$T/err"
expect_grep "4 records from 6 lines (1 skipped)" "$T/err"
"$LOADTRACE" capture --from-log "$T/missing.jsonl" -o "$T/m.lt.zst" 2>"$T/err"
expect_status 1 $? "missing log"
"$LOADTRACE" capture -o "$T/x.lt.zst" 2>/dev/null
expect_status 2 $? "neither --upstream nor --from-log"
"$LOADTRACE" capture --upstream ftp://example.com -o "$T/x.lt.zst" 2>"$T/err"
expect_status 1 $? "not an http upstream"
expect_grep "http:// or https://" "$T/err"
"$LOADTRACE" capture --upstream http://127.0.0.1:9 --max-body lots -o "$T/x.lt.zst" 2>/dev/null
expect_status 2 $? "bad --max-body"
"$LOADTRACE" capture --upstream http://127.0.0.1:9 --session-header X-Key --redact-header x-key \
    -o "$T/x.lt.zst" 2>"$T/err"
expect_status 2 $? "a redacted header as session header"
# An upstream URL with a query string or a fragment would misroute every
# request (the client's path is appended to it): refused at start.
for u in 'http://127.0.0.1:9/?k=v' 'http://127.0.0.1:9#frag'; do
    "$LOADTRACE" capture --upstream "$u" -o "$T/x.lt.zst" 2>"$T/err"
    expect_status 1 $? "upstream $u refused"
    expect_grep "query string\|fragment" "$T/err"
    [ ! -e "$T/x.lt.zst" ] || fail "a trace file was left by a refused start"
done
# A start time that is there but is no time is named, not taken for none.
printf '%s\n' '{"start_time":-5,"request":{"messages":[{"role":"user","content":"a"}]},"response":{"choices":[]}}' \
    >"$T/neg.jsonl"
"$LOADTRACE" capture --from-log "$T/neg.jsonl" -o "$T/neg.lt.zst" 2>"$T/err"
expect_status 1 $? "negative start time"
expect_grep 'neg.jsonl:1: start_time -5 is not a time' "$T/err"
# times out of range are refused by line and value before any arithmetic
# (a start_time of 1e300 once overflowed into a negative arrival and left a
# one-record trace behind); with --skip-bad the line is skipped and counted
GOOD='{"start_time":"2026-11-29T10:00:02.000Z","end_time":"2026-11-29T10:00:03.500Z","url":"/v1/chat/completions","request":{"model":"m","messages":[{"role":"user","content":"hi"}]},"response":{"choices":[{"message":{"content":"Yo."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}},"status_code":200}'
for v in 1e300 1e19 '"9223372036854.1"'; do
    printf '%s\n%s\n' "$GOOD" "$(echo "$GOOD" | jq -c ".start_time = $v | del(.end_time)")" >"$T/huge.jsonl"
    rm -f "$T/huge.lt.zst"
    "$LOADTRACE" capture --from-log "$T/huge.jsonl" -o "$T/huge.lt.zst" 2>"$T/err"
    expect_status 1 $? "start_time $v"
    expect_grep "huge.jsonl:2: " "$T/err"
    [ -e "$T/huge.lt.zst" ] && fail "start_time $v left a trace behind"
done
printf '%s\n%s\n' "$GOOD" "$(echo "$GOOD" | jq -c '.start_time = 1e300 | del(.end_time)')" >"$T/huge.jsonl"
"$LOADTRACE" capture --from-log "$T/huge.jsonl" -o "$T/huge.lt.zst" 2>"$T/err"
expect_grep "time 1e+300 is out of range" "$T/err"
"$LOADTRACE" capture --from-log "$T/huge.jsonl" --skip-bad -o "$T/huge.lt.zst" 2>"$T/err"
expect_status 0 $? "--skip-bad over a time out of range"
expect_eq 1 "$("$LOADTRACE" cat --no-header "$T/huge.lt.zst" | wc -l)" "records kept with --skip-bad"
# A 499 (the client closed the request: nginx's code, which gateways log)
# is a client that left mid-stream: where it left is recorded, the logged
# duration and the three token chunks it had (a whole-body 499, which had
# no answer yet, left after 0 tokens); a 200 stream says nothing of it.
D='data: {\"choices\":[{\"delta\":{\"content\":\"w\"}}]}\n\n'
cat >"$T/gone.jsonl" <<EOF2
{"start_time":1795946400000,"latency_ms":2500,"url":"/v1/chat/completions","status_code":499,"request":{"model":"m","stream":true,"messages":[$U1]},"response":"$D$D$D"}
{"start_time":1795946401000,"latency_ms":700,"url":"/v1/chat/completions","status_code":499,"request":{"model":"m","messages":[$U1]}}
{"start_time":1795946402000,"latency_ms":900,"url":"/v1/chat/completions","status_code":200,"request":{"model":"m","stream":true,"messages":[$U1]},"response":"$D${D}data: [DONE]\n\n"}
EOF2
"$LOADTRACE" capture --from-log "$T/gone.jsonl" -o "$T/gone.lt.zst" 2>"$T/err"
expect_status 0 $? "from-log with a 499"
expect_eq "client_gone 2500000 3|client_gone 700000 0|null null null" \
    "$("$LOADTRACE" cat --no-header "$T/gone.lt.zst" | jq -r '"\(.err) \(.cancel_after) \(.cancel_tokens)"' | paste -sd'|')" \
    "499: where the client left"
"$LOADTRACE" capture --help | grep -q -- "--from-log"
expect_status 0 $? "--help"
finish

#!/bin/sh
# loadtrace sim, bad requests: each gets the JSON error a real server gives
# (400 with {"error":{...}}, also when streaming was asked; 404, 405, 413),
# and the server keeps serving afterwards.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"

start_sim bad --profile fast --max-body 4096

M='"messages":[{"role":"user","content":"hi"}]'
# path | body | expected status | words in the message
while IFS='|' read -r path body want words; do
    [ -n "$path" ] || continue
    post "$path" "$body" >"$T/b"
    got=$(status)
    expect_eq "$want" "$got" "$path $body"
    expect_eq "$want" "$(jq .error.code "$T/b" 2>/dev/null)" "error code in body for $body"
    jq -r .error.message "$T/b" 2>/dev/null | grep -q -- "$words" || fail "message for $body lacks '$words': $(cat "$T/b")"
done <<EOT
/v1/chat/completions|{"stream":true,$M|400|invalid JSON
/v1/chat/completions|[1,2]|400|JSON object
/v1/chat/completions|{"stream":true}|400|messages
/v1/chat/completions|{"messages":[]}|400|messages
/v1/chat/completions|{"messages":[{"content":"x"}],"stream":true}|400|role
/v1/chat/completions|{"messages":[{"role":"robot","content":"x"}]}|400|role
/v1/chat/completions|{"messages":[{"role":"user","content":5}]}|400|content
/v1/chat/completions|{$M,"max_tokens":0,"stream":true}|400|max_tokens
/v1/chat/completions|{$M,"max_tokens":"ten"}|400|max_tokens
/v1/chat/completions|{$M,"max_tokens":-3}|400|max_tokens
/v1/chat/completions|{$M,"max_tokens":5,"min_tokens":9}|400|min_tokens
/v1/chat/completions|{$M,"n":2}|400|n > 1
/v1/chat/completions|{$M,"stream":"yes"}|400|stream
/v1/chat/completions|{$M,"stream_options":{"include_usage":true}}|400|stream_options
/v1/chat/completions|{$M,"max_tokens":300000,"stream":true}|400|maximum context length
/v1/chat/completions|{$M,"tool_choice":"required"}|400|tools
/v1/chat/completions|{$M,"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}|400|not in
/v1/chat/completions|{$M,"tools":"x"}|400|tools
/v1/chat/completions|{$M,"reasoning_effort":"extreme"}|400|reasoning_effort
/v1/chat/completions|{$M,"model":7}|400|model
/v1/completions|{"max_tokens":3}|400|prompt
/v1/completions|{"prompt":""}|400|empty
/v1/completions|{"prompt":[1,-2]}|400|token id
/v1/completions|{"prompt":[1,999999999]}|400|token id
/v1/completions|{"prompt":["a","b"]}|400|batched
/v1/completions|{"prompt":{"a":1},"stream":true}|400|prompt
/tokenize|{"prompt":3}|400|prompt
/nope|{}|404|no route
/health|{}|405|GET
EOT

# GET on a POST route
curl -sS --max-time 10 -w '%{stderr}%{http_code}' "$URL/v1/chat/completions" 2>"$T/status" >"$T/b"
expect_eq 405 "$(status)" "GET chat"
# A body over the limit: 413, not a crash
big=$(awk 'BEGIN { for (i = 0; i < 1000; i++) printf "word "; }')
post /v1/completions "{\"prompt\":\"$big\"}" >"$T/b"
expect_eq 413 "$(status)" "body over --max-body"
expect_eq 413 "$(jq .error.code "$T/b")" "413 body"
# Binary garbage
printf '\000\001\377{{' >"$T/garbage"
curl -sS --max-time 10 -w '%{stderr}%{http_code}' --data-binary @"$T/garbage" "$URL/v1/completions" 2>"$T/status" >"$T/b"
expect_eq 400 "$(status)" "garbage body"

# Still serving.
post /v1/chat/completions "{$M,\"max_tokens\":2,\"stream\":true}" | grep -c '^data: ' >"$T/n"
expect_eq 200 "$(status)" "serving after bad requests"

# Two Content-Length headers that disagree: 400 (request smuggling), and
# the server goes on.
curl -sS --max-time 10 -w '%{stderr}%{http_code}' -H 'Content-Length: 3' -H 'Content-Length: 4' \
    --data-binary abc "$URL/tokenize" 2>"$T/status" >"$T/b"
expect_eq 400 "$(status)" "two Content-Length headers"
jq -r .error.message "$T/b" | grep -q "Content-Length is given twice" || fail "two lengths: $(cat "$T/b")"
stop_sim

# Half-sent bodies are bounded in total (--max-pending), not only each one:
# two bodies that stop 1,000 bytes short hold 6,000 bytes, so the next body
# gets 503 until they are gone; then bodies are taken again. Each loop is
# bounded (the bodies' arrival is waited for, never assumed).
start_sim pending --profile fast --max-body 4096 --max-pending 6000
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "a" }' >"$T/b3k"
awk 'BEGIN { for (i = 0; i < 4000; i++) printf "a" }' >"$T/b4k"
for i in 1 2; do
    curl -s --max-time 8 -H 'Content-Length: 4000' --data-binary @"$T/b3k" "$URL/tokenize" \
        -o /dev/null 2>/dev/null &
    HALF="${HALF:-} $!"
done
got=""
i=0
while [ "$got" != 503 ] && [ $i -lt 30 ]; do
    sleep 0.2
    curl -sS --max-time 5 -w '%{stderr}%{http_code}' --data-binary @"$T/b4k" "$URL/tokenize" \
        2>"$T/status" >"$T/b"
    got=$(status)
    i=$((i + 1))
done
expect_eq 503 "$got" "a body beyond --max-pending while two are half-sent"
grep -q "limit of 6000 bytes" "$T/b" || fail "503 message: $(cat "$T/b")"
for p in $HALF; do kill "$p" 2>/dev/null; done
i=0
while [ "$got" != 400 ] && [ $i -lt 50 ]; do
    sleep 0.2
    curl -sS --max-time 5 -w '%{stderr}%{http_code}' --data-binary @"$T/b4k" "$URL/tokenize" \
        2>"$T/status" >"$T/b"
    got=$(status)
    i=$((i + 1))
done
expect_eq 400 "$got" "bodies are taken again (and parsed: 400, not JSON) once the half-sent ones left"
stop_sim
finish

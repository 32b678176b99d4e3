#!/bin/sh
# loadtrace sim --dialect: each variation real servers have, seen with curl:
# role-only first chunk or not, usage in its own chunk (empty choices) or in
# the last token chunk, "reasoning" vs "reasoning_content", and the
# connection closed after every response.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"

REQ='{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true,"stream":true,
 "stream_options":{"include_usage":true},"reasoning_effort":"medium"}'

"$LOADTRACE" sim --listen 127.0.0.1:0 --dialect 'vllm,bogus' >/dev/null 2>"$T/err"
expect_status 1 $? "unknown dialect item"
expect_grep "unknown dialect item 'bogus'" "$T/err"

# default (vllm): role chunk, separate usage chunk, reasoning_content, keep-alive
start_sim d1 --profile fast
post /v1/chat/completions "$REQ" | sse_json >"$T/s.json"
expect_eq '{"role":"assistant","content":""}' "$(head -1 "$T/s.json" | jq -c .choices[0].delta)" "vllm: role chunk"
expect_eq 6 "$(wc -l <"$T/s.json")" "vllm: role + 4 tokens + usage"
expect_eq 0 "$(tail -1 "$T/s.json" | jq '.choices|length')" "vllm: usage chunk has empty choices"
expect_eq 2 "$(jq -r '.choices[0].delta.reasoning_content // empty' "$T/s.json" | wc -l)" "vllm: reasoning_content"
# keep-alive: two requests on one connection (curl reuses it)
curl -sS --max-time 10 -v "$URL/health" "$URL/health" >/dev/null 2>"$T/v"
expect_grep "Re-using existing connection" "$T/v"
stop_sim

# the opposite of every default at once
start_sim d2 --profile fast --dialect no-role-chunk,usage-in-last,reasoning,close
post /v1/chat/completions "$REQ" -D "$T/hdr" | sse_json >"$T/s.json"
expect_eq 4 "$(wc -l <"$T/s.json")" "variant: 4 token chunks only"
expect_eq assistant "$(head -1 "$T/s.json" | jq -r .choices[0].delta.role)" "variant: role rides on the first token"
expect_eq reasoning "$(head -1 "$T/s.json" | jq -r '.choices[0].delta|keys_unsorted|map(select(. != "role"))|.[0]')" "variant: reasoning key"
expect_eq "length 4 2" "$(tail -1 "$T/s.json" | jq -r '[.choices[0].finish_reason, .usage.completion_tokens, .usage.completion_tokens_details.reasoning_tokens]|join(" ")')" "variant: usage in last chunk"
expect_grep "[Cc]onnection: close" "$T/hdr"
curl -sS --max-time 10 -v "$URL/health" "$URL/health" >/dev/null 2>"$T/v"
expect_no_grep "Re-using existing connection" "$T/v"
# non-streaming bodies use the same reasoning key
post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"reasoning_effort":"medium"}' >"$T/c"
expect_eq 2 "$(jq -r '.choices[0].message.reasoning|split(" ")|length-1' "$T/c")" "variant: non-stream reasoning"
stop_sim

# each item alone, so replay can be tested against one difference at a time
for d in no-role-chunk usage-in-last reasoning close; do
    start_sim "d-$d" --profile fast --dialect "$d"
    post /v1/chat/completions "$REQ" | sse_json >"$T/s.json"
    expect_eq 200 "$(status)" "$d: status"
    n=$(wc -l <"$T/s.json")
    case $d in
    no-role-chunk) expect_eq 5 "$n" "$d: chunks" ;;
    usage-in-last) expect_eq 5 "$n" "$d: chunks" ;;
    *) expect_eq 6 "$n" "$d: chunks" ;;
    esac
    stop_sim
done
finish

#!/bin/sh
# Capture records the Responses and Messages APIs: requests through capture
# in front of the sim, streamed and whole, with reasoning and tool calls.
# Each record has its API, the prompt's turns (system, user, assistant,
# tool) by role, and the sim's counts (its --log): prompt, output and
# reasoning tokens, one tool call where one was forced, the finish reason
# in chat's words; the client gets the sim's answer through unchanged.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"

start_sim up --profile fast
start_capture cap "$SIM_URL"
RTOOLS='"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required"'
MTOOLS='"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}'
RIN='"instructions":"be brief","input":[{"role":"user","content":"what is the time"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"noon"},{"role":"user","content":[{"type":"input_text","text":"and the date"}]}]'
MIN='"system":"be brief","messages":[{"role":"user","content":"what is the time"},{"role":"assistant","content":[{"type":"text","text":"let me see"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"noon"}]},{"role":"user","content":"and the date"}]'
n=0
for api in responses messages; do
    for stream in true false; do
        for tool in 0 1; do
            if [ $api = responses ]; then
                body="\"model\":\"m\",$RIN,\"max_output_tokens\":12,\"reasoning\":{\"effort\":\"medium\"}"
                [ $tool = 1 ] && body="$body,$RTOOLS"
            else
                body="\"model\":\"m\",$MIN,\"max_tokens\":12,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}"
                [ $tool = 1 ] && body="$body,$MTOOLS"
            fi
            req "$CAP_URL" "/v1/$api" "{$body,\"ignore_eos\":true,\"stream\":$stream}" "$T/r$n"
            expect_eq 200 "$(cat "$T/r$n.status")" "$api stream=$stream tool=$tool: status"
            n=$((n + 1))
        done
    done
done
grep -q '^event: response.incomplete' "$T/r0" || fail "the Responses stream reached the client"
grep -q '^data: {"type":"message_stop"}' "$T/r4" || fail "the Messages stream reached the client"
stop $CAP_PID capture
stop $SIM_PID sim
records "$T/cap.lt.zst" >"$T/recs"
expect_eq $n "$(wc -l <"$T/recs")" "captured"
jq -s -c 'sort_by(.t)[] | [.api, .in, .out, .reasoning, (.calls // [] | length), .finish,
    ([.msgs[][0]] | join(","))]' "$T/recs" >"$T/got"
jq -s -c '[.[] | select(.seq)] | sort_by(.arrival_us)[] | [.api, .prompt_tokens, .out,
    (if .api == "messages" and .stream == false then null else .reasoning_tokens end),
    (if .tool_call then 1 else 0 end), (if .tool_call then "tool_calls" else .finish end),
    "system,user,assistant,tool,user"]' \
    "$T/up.log" >"$T/want"
expect_eq "$(cat "$T/want")" "$(cat "$T/got")" "records against the sim's log"

# The same APIs from a gateway's log (capture --from-log): whole bodies,
# told apart by their path.
cat >"$T/log.jsonl" <<'EOF2'
{"start_time":"2026-11-29T10:00:00.000Z","end_time":"2026-11-29T10:00:01.000Z","url":"/v1/responses","request":{"model":"m","instructions":"be brief","input":"hi","max_output_tokens":30},"response":{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"function_call","name":"f","arguments":"{\"q\":1}"}],"usage":{"input_tokens":12,"output_tokens":30,"output_tokens_details":{"reasoning_tokens":4}}},"status_code":200}
{"start_time":"2026-11-29T10:00:02.000Z","end_time":"2026-11-29T10:00:03.000Z","url":"/v1/messages","request":{"model":"m","system":"be brief","messages":[{"role":"user","content":"hi"}],"max_tokens":20},"response":{"type":"message","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"cache_read_input_tokens":4,"output_tokens":7}},"status_code":200}
EOF2
"$LOADTRACE" capture --from-log "$T/log.jsonl" -o "$T/log.lt.zst" 2>"$T/log.err"
expect_status 0 $? "from-log"
# Anthropic's input_tokens leaves out the cache's tokens: the prompt is
# 9 + 4 read from the cache.
expect_eq '["responses",12,30,4,30,1,"length","system,user"]
["messages",13,7,null,20,0,"stop","system,user"]' \
    "$(records "$T/log.lt.zst" | jq -c '[.api, .in, .out, .reasoning, .max_tokens,
        (.calls // [] | length), .finish, ([.msgs[][0]] | join(","))]')" "records from a log"
finish

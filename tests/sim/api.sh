#!/bin/sh
# loadtrace sim, each endpoint against the real binary with curl: health,
# models, chat and completions (streaming and not), usage, max/min tokens,
# ignore_eos, token-id prompts, /tokenize and the counting rule, reasoning,
# tool calls, prefix caching, and the --log that records all of it.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"

"$LOADTRACE" sim --help >"$T/help"
expect_status 0 $? "sim --help"
for opt in --listen --port-file --profile --dialect --faults --log --time-scale --seed \
    --max-body --max-connections --threads --quiet --help; do
    expect_grep "$opt" "$T/help"
done
"$LOADTRACE" sim --bogus >/dev/null 2>&1
expect_status 2 $? "unknown option"
"$LOADTRACE" sim --listen nonsense >/dev/null 2>&1
expect_status 2 $? "bad --listen"
"$LOADTRACE" sim --threads 0 >/dev/null 2>&1
expect_status 2 $? "--threads 0"
"$LOADTRACE" sim --listen 127.0.0.1:0 --profile nosuch >/dev/null 2>"$T/err"
expect_status 1 $? "unknown profile"
expect_grep "unknown profile" "$T/err"
"$LOADTRACE" sim --listen 127.0.0.1:0 --faults 'stall=2' >/dev/null 2>"$T/err"
expect_status 1 $? "bad fault spec"

start_sim api --time-scale 50 --seed 3

curl -sS --max-time 10 "$URL/health" >"$T/h"
expect_status 0 $? "curl /health"
expect_eq "{}" "$(cat "$T/h")" "/health body"
curl -sS --max-time 10 "$URL/v1/models" | jq -r '.data[0].id' >"$T/m"
expect_eq "Qwen/Qwen3.5-397B-A17B" "$(cat "$T/m")" "/v1/models id"

# /tokenize: words cut into 4-byte pieces: 2 + 2 + 3 + 1 = 8 tokens.
post /tokenize '{"prompt":"hello there worldwide, x"}' >"$T/tok"
expect_eq 200 "$(status)" "/tokenize status"
expect_eq 8 "$(jq .count "$T/tok")" "/tokenize count"
expect_eq 8 "$(jq '.tokens|length' "$T/tok")" "/tokenize ids"
# \u0000 inside a string is accepted, as Python servers accept it (prompts of
# SGLang's bench_serving, decoded from random ids, hold it) and counted whole:
# a 9-byte word is 3 tokens; a model name with it is echoed whole.
post /tokenize '{"prompt":"abcd\u0000efgh"}' >"$T/tok"
expect_eq 200 "$(status)" "/tokenize with \\u0000"
expect_eq 3 "$(jq .count "$T/tok")" "/tokenize count with \\u0000"
# chat: 4 per message + content, + 3 for the reply: 4+1 + 4+(2+2) + 3 = 16
MSGS='[{"role":"system","content":"be"},{"role":"user","content":"brief please"}]'
post /tokenize "{\"messages\":$MSGS}" >"$T/tok"
expect_eq 16 "$(jq .count "$T/tok")" "/tokenize chat count"

# chat, streaming, with usage: role chunk, 7 token chunks, usage, [DONE].
post /v1/chat/completions "{\"model\":\"x\",\"messages\":$MSGS,\"max_tokens\":7,\"ignore_eos\":true,
  \"stream\":true,\"stream_options\":{\"include_usage\":true}}" >"$T/s"
expect_eq 200 "$(status)" "chat stream status"
expect_eq "data: [DONE]" "$(grep -v '^$' "$T/s" | tail -1)" "stream ends with [DONE]"
sse_json <"$T/s" >"$T/s.json"
expect_eq 9 "$(wc -l <"$T/s.json")" "role + 7 tokens + usage"
expect_eq '{"role":"assistant","content":""}' "$(head -1 "$T/s.json" | jq -c '.choices[0].delta')" "role-only first chunk"
expect_eq 7 "$(jq -r '.choices[0].delta.content // empty' "$T/s.json" | grep -c .)" "content chunks"
expect_eq length "$(jq -r '.choices[0].finish_reason // empty' "$T/s.json")" "finish_reason"
expect_eq '0 16 7' "$(tail -1 "$T/s.json" | jq -r '[(.choices|length), .usage.prompt_tokens, .usage.completion_tokens]|join(" ")')" "usage chunk"
expect_eq x "$(head -1 "$T/s.json" | jq -r .model)" "model echoed"

# Without include_usage there is no usage anywhere.
post /v1/chat/completions "{\"messages\":$MSGS,\"max_tokens\":3,\"stream\":true,\"ignore_eos\":true}" | sse_json >"$T/s.json"
expect_eq 0 "$(grep -c usage "$T/s.json")" "no usage unless asked"

# chat, not streaming
post /v1/chat/completions "{\"messages\":$MSGS,\"max_tokens\":5,\"min_tokens\":5}" >"$T/c"
expect_eq 200 "$(status)" "chat status"
expect_eq "chat.completion 5 16 5" "$(jq -r '[.object, (.choices[0].message.content|split(" ")|length-1), .usage.prompt_tokens, .usage.completion_tokens]|join(" ")' "$T/c")" "chat body"

# min_tokens forces a length; without ignore_eos the natural length may be shorter than max.
post /v1/completions '{"prompt":"a b c","max_tokens":50,"min_tokens":40}' >"$T/c"
n=$(jq .usage.completion_tokens "$T/c")
[ "$n" -ge 40 ] && [ "$n" -le 50 ] || fail "min_tokens 40..max 50 gave $n"

# completions: token ids as the prompt, streaming
post /v1/completions '{"prompt":[1,2,3,4,5,6],"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' | sse_json >"$T/s.json"
expect_eq 4 "$(jq -r '.choices[0].text // empty' "$T/s.json" | wc -l)" "completions text chunks"
expect_eq 6 "$(tail -1 "$T/s.json" | jq .usage.prompt_tokens)" "token id prompt counted"
expect_eq text_completion "$(head -1 "$T/s.json" | jq -r .object)" "completions object"
post /v1/completions '{"prompt":[[7,8,9]],"max_tokens":2}' | jq .usage.prompt_tokens >"$T/n"
expect_eq 3 "$(cat "$T/n")" "list of one id list"

# reasoning by request: half the output streams as reasoning_content
post /v1/chat/completions "{\"messages\":$MSGS,\"max_tokens\":10,\"ignore_eos\":true,\"stream\":true,
  \"reasoning_effort\":\"medium\",\"stream_options\":{\"include_usage\":true}}" | sse_json >"$T/s.json"
expect_eq 5 "$(jq -r '.choices[0].delta.reasoning_content // empty' "$T/s.json" | wc -l)" "reasoning chunks"
expect_eq 5 "$(jq -r '.choices[0].delta.content // empty' "$T/s.json" | grep -c .)" "content after reasoning"
expect_eq 5 "$(tail -1 "$T/s.json" | jq .usage.completion_tokens_details.reasoning_tokens)" "reasoning_tokens"
post /v1/chat/completions "{\"messages\":$MSGS,\"max_tokens\":4,\"ignore_eos\":true,
  \"chat_template_kwargs\":{\"enable_thinking\":true}}" >"$T/c"
expect_eq 2 "$(jq .usage.completion_tokens_details.reasoning_tokens "$T/c")" "enable_thinking"
expect_eq 3 "$(jq -r '.choices[0].message.reasoning_content|split(" ")|length' "$T/c")" "reasoning text (non-stream)"

# tools: tool_choice required streams tool_calls deltas, finish tool_calls
TOOLS='[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]'
post /v1/chat/completions "{\"messages\":$MSGS,\"tools\":$TOOLS,\"tool_choice\":\"required\",
  \"max_tokens\":6,\"ignore_eos\":true,\"stream\":true}" | sse_json >"$T/s.json"
expect_eq get_weather "$(jq -r '.choices[0].delta.tool_calls[0].function.name // empty' "$T/s.json")" "tool name"
expect_eq 6 "$(jq -c '.choices[0].delta.tool_calls // empty' "$T/s.json" | wc -l)" "tool call deltas"
args=$(jq -j '.choices[0].delta.tool_calls[0].function.arguments // empty' "$T/s.json")
echo "$args" | jq -e .q >/dev/null || fail "tool arguments are not JSON: $args"
expect_eq tool_calls "$(jq -r '.choices[0].finish_reason // empty' "$T/s.json")" "finish tool_calls"
post /v1/chat/completions "{\"messages\":$MSGS,\"tools\":$TOOLS,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},\"max_tokens\":3}" >"$T/c"
expect_eq get_weather "$(jq -r '.choices[0].message.tool_calls[0].function.name' "$T/c")" "named tool, non-stream"
post /v1/chat/completions "{\"messages\":$MSGS,\"tools\":$TOOLS,\"tool_choice\":\"auto\",\"max_tokens\":3}" >"$T/c"
expect_eq null "$(jq -r '.choices[0].message.tool_calls' "$T/c")" "auto does not force a call"

# prefix cache: the same long prompt twice; the second is cached.
LONG=$(awk 'BEGIN { for (i = 0; i < 300; i++) printf "w%d ", i }')
post /v1/completions "{\"prompt\":\"$LONG\",\"max_tokens\":2}" >/dev/null
post /v1/completions "{\"prompt\":\"$LONG\",\"max_tokens\":2}" >"$T/c"
expect_eq 256 "$(jq .usage.prompt_tokens_details.cached_tokens "$T/c")" "cached tokens (4 blocks of 64)"

# Streams at once (with SIM_THREADS, spread over the pool's threads): each
# ends with [DONE] after exactly its tokens.
for i in 1 2 3 4 5 6 7 8; do
    curl -sS -N --max-time 20 -H 'Content-Type: application/json' \
        -d "{\"prompt\":\"p $i\",\"max_tokens\":$((20 + i)),\"ignore_eos\":true,\"stream\":true}" \
        "$URL/v1/completions" >"$T/par$i" 2>&1 &
    PAR="${PAR:-} $!"
done
for p in $PAR; do wait "$p"; done # not a bare wait: the sim runs in the background too
for i in 1 2 3 4 5 6 7 8; do
    expect_eq $((20 + i)) "$(grep -c '"text"' "$T/par$i")" "parallel stream $i tokens"
    expect_grep 'data: \[DONE\]' "$T/par$i"
done

# Request bodies as other clients send them (field sets of vLLM's
# benchmark_serving, SGLang's bench_serving and the OpenAI Python SDK): each
# is served, with its usage.
while IFS='|' read -r path body; do
    [ -n "$path" ] || continue
    post "$path" "$body" >"$T/other"
    expect_eq 200 "$(status)" "other client: $body"
    grep -q '"prompt_tokens"' "$T/other" || fail "no usage for $body: $(head -c 300 "$T/other")"
done <<EOT
/v1/completions|{"model":"m","prompt":"a b c","temperature":0.0,"repetition_penalty":1.0,"max_tokens":2,"logprobs":null,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}
/v1/chat/completions|{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a b c"}]}],"temperature":0.0,"max_completion_tokens":2,"stream":true,"stream_options":{"include_usage":true}}
/v1/completions|{"model":"m","prompt":"x\u0000y","temperature":0.0,"best_of":1,"max_tokens":2,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"lora_path":null}
/v1/completions|{"model":"m","prompt":[5,6,7],"temperature":0.0,"max_tokens":2,"stream":false,"ignore_eos":true}
/v1/chat/completions|{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"model":"m","max_tokens":2,"n":1,"stream":true,"stream_options":{"include_usage":true},"temperature":1,"top_p":1,"presence_penalty":0,"frequency_penalty":0,"seed":1,"user":"x","logit_bias":{}}
EOT
# (after the others: the log checks below look at the first chat request)
post /v1/chat/completions '{"model":"m\u0000x","messages":[{"role":"user","content":"a\u0000b"}],"max_tokens":1}' >"$T/nul"
expect_eq 200 "$(status)" "chat with \\u0000"
expect_eq '"m\u0000x"' "$(jq -c .model "$T/nul")" "model with \\u0000 echoed whole"

stop_sim INT
# The log: one line per request, inference lines with their tokens' times.
expect_eq 0 "$(grep -vc '^{' "$T/api.log")" "every log line is JSON"
jq -e 'select(.api) | select(.status == 200 and .complete) | (.tokens_us|length) == .out' "$T/api.log" | sort -u >"$T/x"
expect_eq true "$(cat "$T/x")" "one time per token"
expect_eq 16 "$(jq -r 'select(.path == "/v1/chat/completions") | .prompt_tokens' "$T/api.log" | head -1)" "log prompt tokens"
jq -e 'select(.api and .status == 200) | .tokens_us[0] >= .arrival_us' "$T/api.log" | sort -u >"$T/x"
expect_eq true "$(cat "$T/x")" "tokens after arrival"
# Ground truth for timing: a chunk is written to the socket at or after the
# model emitted its token, and the writes of a stream are in order.
jq -e 'select(.api and .stream and .complete) | . as $r | [range(0; $r.sent)] |
    all(.[]; $r.sent_us[.] >= $r.tokens_us[.]) and
    all(.[1:][]; $r.sent_us[.] >= $r.sent_us[. - 1])' "$T/api.log" | sort -u >"$T/x"
expect_eq true "$(cat "$T/x")" "every chunk written after its token, in order"
finish

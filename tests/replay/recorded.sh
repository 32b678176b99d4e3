#!/bin/sh
# Recorded text replays at its recorded length: requests of every API
# (multi-turn chat with a system turn, a completions prompt string and
# token ids, Responses with instructions and input items, Messages with a
# system; tool calls and their answers) captured with --keep-content through `loadtrace capture` in
# front of the sim, then the capture replayed with its own --api against a
# second sim of the same profile. The second sim's count of each prompt
# must be the recorded `in` (the first sim's usage), exactly: the text is
# sent as the turns it was, not as one message holding their JSON.
# Against a sim of another tokenizer the difference is reported apart
# from the fitted prompts' (it is not a calibration error).
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

start_capture() { # name upstream
    _cap_name=$1
    server_start "$1" "$L" capture --upstream "$2" --keep-content -o "$T/$1.lt.zst" || exit 1
    CAP_URL=$SERVER_URL
}
stop_capture() {
    server_stop "$_cap_name"
}
post() { # path body
    curl -sS --max-time 20 -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
        --data-binary "$2" "$CAP_URL$1" >>"$T/codes"
}

SYS='{"role":"system","content":"You are a careful assistant who answers questions about the weather in great detail."}'
U1='{"role":"user","content":"Is it going to rain in Paris tomorrow, and should I take an umbrella?"}'
A1='{"role":"assistant","content":"Probably not; the forecast says sunny."}'
U2='{"role":"user","content":"And the day after, in Lyon?"}'

for api in chat completions responses messages; do
    start_sim "up-$api" --profile fast --seed 1
    start_capture "cap-$api" "$SIM_URL"
    : >"$T/codes"
    case $api in
    chat)
        post /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[$SYS,$U1]}"
        post /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[$SYS,$U1,$A1,$U2]}"
        post /v1/chat/completions "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Two parts,\"},{\"type\":\"text\",\"text\":\" one prompt.\"}]}]}"
        ;;
    completions)
        post /v1/completions '{"model":"m","max_tokens":4,"prompt":"Once upon a time, in a land far away, there lived a weather forecaster."}'
        post /v1/completions '{"model":"m","max_tokens":4,"prompt":[11,22,33,44,55,66,77]}'
        ;;
    responses)
        post /v1/responses '{"model":"m","max_output_tokens":4,"instructions":"Answer briefly and with care.","input":"Is it going to rain in Paris tomorrow?"}'
        post /v1/responses "{\"model\":\"m\",\"max_output_tokens\":4,\"input\":[$SYS,$U1,$A1,$U2]}"
        post /v1/responses "{\"model\":\"m\",\"max_output_tokens\":4,\"input\":[$U1,{\"type\":\"function_call\",\"call_id\":\"c9\",\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},{\"type\":\"function_call_output\",\"call_id\":\"c9\",\"output\":\"sunny, 24 degrees\"}]}"
        ;;
    messages)
        post /v1/messages "{\"model\":\"m\",\"max_tokens\":4,\"system\":\"You are a careful assistant.\",\"messages\":[$U1,$A1,$U2]}"
        post /v1/messages '{"model":"m","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"Is it going to rain in Paris tomorrow?"}]}]}'
        post /v1/messages "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[$U1,{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Let me look.\"},{\"type\":\"tool_use\",\"id\":\"t9\",\"name\":\"weather\",\"input\":{\"city\":\"Paris\"}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t9\",\"content\":\"sunny, 24 degrees\"}]}]}"
        ;;
    esac
    stop_capture
    stop_sim
    expect_eq "" "$(grep -v '^200$' "$T/codes")" "every captured $api request answered 200"
    "$L" cat --no-header "$T/cap-$api.lt.zst" | jq -r '.in' >"$T/rec-$api.txt"
    [ "$(wc -l <"$T/rec-$api.txt")" -ge 2 ] || fail "$api: too few records captured"
    "$L" cat --no-header "$T/cap-$api.lt.zst" | jq -e 'select(.text == null)' >/dev/null &&
        fail "$api: a record without its text"

    start_sim "re-$api" --profile fast --seed 1
    "$L" replay "$T/cap-$api.lt.zst" --target "$SIM_URL" --api "$api" --concurrency 1 \
        -o "$T/re-$api.lt.zst" --no-summary -q
    expect_status 0 $? "replay --api $api of the capture"
    stop_sim
    expect_eq "$(cat "$T/rec-$api.txt")" \
        "$(jq -s -r '[.[] | select(.seq != null and .max_tokens > 1)] | sort_by(.arrival_us)[] | .prompt_tokens' "$SIM_LOG")" \
        "$api: the replayed prompts' lengths are the recorded ones"
    expect_eq "$(cat "$T/rec-$api.txt")" \
        "$(results "$T/re-$api.lt.zst" | jq -s -r 'sort_by(.sent)[] | .in')" \
        "$api: in of the replayed requests"
done

# Against a server of another tokenizer (pieces of 1 byte: several tokens
# a word) the same text is longer: replay says so apart from the fitted
# prompts' check, and each result's in is that server's count.
printf 'step_ms = 0\nprefill_ms_per_token = 0\npiece_bytes = 1\n' >"$T/p1.profile"
start_sim other --profile "$T/p1.profile"
"$L" replay "$T/cap-chat.lt.zst" --target "$SIM_URL" --api chat --concurrency 1 \
    -o "$T/other.lt.zst" 2>"$T/other.err" >/dev/null
expect_status 0 $? "replay against another tokenizer"
stop_sim
expect_grep "prompts sent as recorded text vs the server's usage: mean |error| [1-9]" "$T/other.err"
grep -q "prompt lengths vs the server's usage" "$T/other.err" &&
    fail "recorded text counted as fitted prompts"
expect_eq "$(jq -s -r '[.[] | select(.seq != null and .max_tokens > 1)] | sort_by(.arrival_us)[] | .prompt_tokens' "$SIM_LOG")" \
    "$(results "$T/other.lt.zst" | jq -s -r 'sort_by(.sent)[] | .in')" "in: the other server's counts"
finish

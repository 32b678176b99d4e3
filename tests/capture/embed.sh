#!/bin/sh
# Capture records embeddings and rerank requests as shapes: through capture
# in front of the sim, /v1/embeddings (a list of strings, one string, token
# ids), /v1/rerank and /rerank (a query and documents). Each record has its
# api, one message per input ("input"; rerank: "query" and "document"),
# and the sim's prompt count (its --log) as `in`; the client gets the sim's
# answer unchanged. The captured embeddings are replayed against a fresh
# sim with --api embeddings: the same inputs, the same prompt counts.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"
cd "$T"

start_sim up --profile fast --set embed_dim=3
start_capture cap "$SIM_URL"
req "$CAP_URL" /v1/embeddings '{"model":"m","input":["hello there","a b c"]}' r1
req "$CAP_URL" /v1/embeddings '{"model":"m","input":"one two three four"}' r2
req "$CAP_URL" /v1/embeddings '{"model":"m","input":[[1,2,3],[4,5]]}' r3
req "$CAP_URL" /v1/rerank '{"model":"m","query":"what is it","documents":["a b","c d e","f"]}' r4
req "$CAP_URL" /rerank '{"model":"m","query":"q","documents":[{"text":"x y"}]}' r5
for k in 1 2 3 4 5; do expect_eq 200 "$(cat r$k.status)" "request $k"; done
expect_eq 3 "$(jq '.data[0].embedding | length' r1)" "the sim's answer reached the client"
stop $CAP_PID capture
stop $SIM_PID sim
records cap.lt.zst | jq -c -s 'sort_by(.t)[] | [.api, .in, .out, ([.msgs[][0]] | join(",")), (.failed // false)]' >got
jq -c -s '[.[] | select(.seq)] | sort_by(.arrival_us)[] | [.api, .prompt_tokens, 0]' up.log >sim
i=0
: >want
for r in "input,input" "input" "input,input" "query,document,document,document" "query,document"; do
    i=$((i + 1))
    sed -n "${i}p" sim | jq -c --arg r "$r" '. + [$r, false]' >>want
done
expect_eq "$(cat want)" "$(cat got)" "records against the sim's log"

records cap.lt.zst | jq -c 'select(.api == "embeddings")' | "$LOADTRACE" import --from jsonl -q - -o emb.lt.zst
start_sim again --profile fast --set embed_dim=3
"$LOADTRACE" replay emb.lt.zst --target "$SIM_URL" --api embeddings -o rep.lt.zst >/dev/null 2>rep.err
expect_status 0 $? "replay of the captured embeddings"
stop $SIM_PID sim
jq -c 'select(.seq and .api == "embeddings" and .status == 200) | [.prompt_tokens, .inputs]' again.log >got2
jq -c 'select(.seq) | [.prompt_tokens, .inputs]' up.log | head -3 >want2
expect_eq 3 "$(wc -l <got2 | tr -d " ")" "replayed: three embeddings"
expect_eq "$(cat want2)" "$(cat got2)" "replayed: the same prompts and inputs"
finish

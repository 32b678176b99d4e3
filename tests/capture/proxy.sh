#!/bin/sh
# loadtrace capture in front of loadtrace sim: a client sees the same bytes
# with and without capture, and the trace holds what the sim served (its
# --log is the ground truth): counts, message shapes, tool calls,
# reasoning, finish reasons, statuses; and no secret reaches the trace.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"

AUTH='Authorization: Bearer sk-CANARYKEY0123456789'
APIKEY='api-key: AZURECANARYKEY42'
COOKIE='Cookie: session=COOKIECANARY77'
CUSTOM='X-Team-Token: TEAMCANARY99'
TOOLS='[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]'
SYS='{"role":"system","content":"You are a careful assistant. PROMPTCANARY"}'
U1='{"role":"user","content":"What is the weather like in Paris today, and should I take an umbrella?"}'

# The requests, one per line: path, then body.
cat >"$T/reqs" <<EOR
/v1/chat/completions {"model":"m","messages":[$SYS,$U1],"max_tokens":12,"ignore_eos":true,"stream":true}
/v1/chat/completions {"model":"m","messages":[$SYS,$U1],"max_tokens":9,"stream":true,"stream_options":{"include_usage":true}}
/v1/chat/completions {"model":"m","messages":[$SYS,$U1],"max_tokens":7}
/v1/completions {"model":"m","prompt":"Once upon a time PROMPTCANARY there was","max_tokens":6,"stream":true}
/v1/completions {"model":"m","prompt":[1,2,3,4,5,6,7,8],"max_tokens":4}
/v1/chat/completions {"model":"m","messages":[$U1],"max_tokens":16,"ignore_eos":true,"reasoning_effort":"high","stream":true}
/v1/chat/completions {"model":"m","messages":[$SYS,$U1],"tools":$TOOLS,"tool_choice":"required","max_tokens":20,"stream":true}
/v1/chat/completions {"model":"m","messages":[$SYS,$U1],"tools":$TOOLS,"tool_choice":"required","max_tokens":20}
EOR
NREQ=$(wc -l <"$T/reqs")

# run URL PREFIX: send every request in turn (and GET /v1/models)
run() {
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        req "$1" "${line%% *}" "${line#* }" "$T/$2.$n" -H "$AUTH" -H "$APIKEY" -H "$COOKIE" \
            -H "$CUSTOM"
    done <"$T/reqs"
    curl -sS --max-time 10 -H "$AUTH" "$1/v1/models" >"$T/$2.models"
}

# Direct, against one sim; through capture, against a second sim started
# the same way, so both serve the same sequence of answers.
start_sim direct --profile fast
run "$SIM_URL" d
stop $SIM_PID "sim direct"
start_sim up --profile fast
start_capture cap "http://capuser:UPSTREAMPW@${SIM_URL#http://}" --redact-header X-Team-Token
run "$CAP_URL" c
stop $CAP_PID capture
stop $SIM_PID "sim up"

# Byte-identical bodies and statuses; only the wall-clock "created" second
# may differ between the two sims.
strip() { sed 's/"created":[0-9]*/"created":0/g' "$1"; }
n=1
while [ $n -le "$NREQ" ]; do
    expect_eq "$(cat "$T/d.$n.status")" "$(cat "$T/c.$n.status")" "request $n status"
    if [ "$(strip "$T/d.$n")" != "$(strip "$T/c.$n")" ]; then
        fail "request $n: the client saw different bytes through capture"
        diff "$T/d.$n" "$T/c.$n" | head -5 >&2
    fi
    n=$((n + 1))
done
expect_eq "$(strip "$T/d.models")" "$(strip "$T/c.models")" "GET /v1/models"

# The same through a capture with two event-loop threads.
start_sim up2 --profile fast
start_capture cap2 "$SIM_URL" --threads 2
run "$CAP_URL" c2
stop $CAP_PID "capture --threads 2"
stop $SIM_PID "sim up2"
n=1
while [ $n -le "$NREQ" ]; do
    expect_eq "$(cat "$T/d.$n.status")" "$(cat "$T/c2.$n.status")" "--threads 2: request $n status"
    [ "$(strip "$T/d.$n")" = "$(strip "$T/c2.$n")" ] ||
        fail "--threads 2: request $n: the client saw different bytes through capture"
    n=$((n + 1))
done
# Capture asked for usage on request 1 and took the extra chunk out; the
# client of request 2 asked, and got it.
expect_no_grep '"usage"' "$T/c.1"
expect_grep '"usage"' "$T/c.2"

# The trace against the sim's log, request by request (both in order).
records "$T/cap.lt.zst" >"$T/recs"
expect_status 0 $? "cat the trace"
expect_eq "$NREQ" "$(wc -l <"$T/recs")" "one record per inference request"
jq -c 'select(.seq) | [.prompt_tokens, .out, .reasoning_tokens, .finish, .status]' \
    "$T/up.log" >"$T/want"
jq -c '[.in, .out, (.reasoning // 0), .finish, .orig.status]' "$T/recs" >"$T/got"
if ! cmp -s "$T/want" "$T/got"; then
    fail "trace counts differ from the sim's log"
    paste "$T/want" "$T/got" >&2
fi
expect_eq "0" "$(jq -s '[.[] | select(.est)] | length' "$T/recs")" "every count from usage"
expect_eq "true" "$(jq -s '[.[].t] | . == sort' "$T/recs")" "arrival order"
expect_eq '[["system",11],["user",20]]' "$(jq -c 'select(.max_tokens == 12) | .msgs' "$T/recs")" \
    "message shape"
expect_eq '["chat","chat","chat","completions","completions","chat","chat","chat"]' \
    "$(jq -sc '[.[].api]' "$T/recs")" "api"
expect_eq 'm' "$(jq -r .model "$T/recs" | sort -u)" "model"
# Reasoning (request 6): the sim's reasoning tokens, part of out.
expect_eq "$(jq 'select(.seq == 6) | .reasoning_tokens' "$T/up.log")" \
    "$(jq -s '.[5].reasoning' "$T/recs")" "reasoning tokens"
# Tool calls (7 streamed, 8 whole): one call each, with arguments; tools offered.
expect_eq "true true" "$(jq -r 'select(.seq >= 7) | .tool_call' "$T/up.log" | xargs)" "sim made calls"
expect_eq "1 1" "$(jq -sr '.[6:] | map(.calls | length) | join(" ")' "$T/recs")" "tool calls"
expect_eq "true" "$(jq -s '.[6].calls[0] > 0 and .[7].calls[0] > 0' "$T/recs")" "argument sizes"
expect_eq "tool_calls" "$(jq -sr '.[6].finish' "$T/recs")" "tool-call finish"
expect_eq "[1,$(printf '%s' "$TOOLS" | jq -c . | awk '{n=0; for(i=1;i<=NF;i++) n+=int((length($i)+3)/4); print n}')]" \
    "$(jq -sc '.[6].tools' "$T/recs")" "tool definitions: count and estimated tokens"
# Times as seen at the proxy: present, ttft <= e2e.
expect_eq "0" "$(jq -s '[.[] | select(.orig.ttft == null or .orig.e2e == null or .orig.ttft > .orig.e2e)] | length' "$T/recs")" \
    "ttft and e2e"

# Secrets: not in the decompressed trace, not on capture's stderr.
zstd -dc "$T/cap.lt.zst" >"$T/raw"
for s in CANARYKEY AZURECANARY COOKIECANARY TEAMCANARY UPSTREAMPW capuser PROMPTCANARY Paris; do
    if grep -a -q "$s" "$T/raw"; then fail "secret '$s' found in the trace"; fi
    if grep -a -q "$s" "$T/cap.err"; then fail "secret '$s' found on capture's stderr"; fi
done
"$LOADTRACE" cat "$T/cap.lt.zst" | head -1 >"$T/header"
expect_grep '"upstream":"http://127.0.0.1:[0-9]*"' "$T/header"
# Block hashes below 2^53 (none here: prompts are shorter than a block).
expect_eq "0" "$(jq -s '[.[] | .blocks // [] | .[] | select(. >= 9007199254740992)] | length' "$T/recs")" \
    "block hashes below 2^53"

# Servers differ (sim --dialect): usage inside the last chunk, "reasoning"
# instead of "reasoning_content", no role chunk, a connection closed after
# every response. The counts still match the sim's log. With --no-usage,
# capture asks for nothing: counts are estimated from the chunks and marked.
R='{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":14,"ignore_eos":true,"reasoning_effort":"medium","stream":true,"stream_options":{"include_usage":true}}'
P='{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":11,"ignore_eos":true,"reasoning_effort":"low","stream":true}'
for dia in usage-in-last,reasoning,no-role-chunk close; do
    start_sim "dia-$dia" --profile fast --dialect "$dia"
    start_capture "cdia-$dia" "$SIM_URL" --no-usage
    req "$CAP_URL" /v1/chat/completions "$R" "$T/dia1"
    req "$CAP_URL" /v1/chat/completions "$P" "$T/dia2"
    req "$CAP_URL" /v1/chat/completions "$R" "$T/dia3"
    stop $CAP_PID capture
    stop $SIM_PID sim
    expect_no_grep '"usage"' "$T/dia2"
    jq -c 'select(.seq) | [.prompt_tokens, .out, .reasoning_tokens]' "$T/dia-$dia.log" >"$T/want"
    records "$T/cdia-$dia.lt.zst" | jq -c '[.in, .out, .reasoning]' >"$T/got"
    if ! cmp -s "$T/want" "$T/got"; then
        fail "dialect $dia: trace counts differ from the sim's log"
        paste "$T/want" "$T/got" >&2
    fi
    expect_eq "null true null" "$(records "$T/cdia-$dia.lt.zst" | jq -r .est | xargs)" \
        "dialect $dia: only the request without usage is estimated"
done
finish

#!/bin/sh
# loadtrace capture: sessions (inferred from growing message lists, or
# named by a header), think times, prefix block hashes, --keep-content,
# and records read back in arrival order when many concurrent requests
# finish out of order (they are written as each one finishes).
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"

SYS='{"role":"system","content":"You are a careful assistant who answers questions about the weather in great detail, with sources, caveats and a short summary at the end of every answer you give."}'
U1='{"role":"user","content":"Is it going to rain in Paris tomorrow?"}'
A1='{"role":"assistant","content":"Probably not, the forecast says sunny."}'
U2='{"role":"user","content":"And the day after?"}'
A2='{"role":"assistant","content":"Rain is likely."}'
U3='{"role":"user","content":"Thanks. What about Lyon?"}'
X1='{"role":"user","content":"Write a haiku about autumn leaves."}'
chat() { printf '{"model":"m","messages":[%s],"max_tokens":5}' "$1"; }

start_sim up --profile fast
start_capture inf "$SIM_URL" --block-tokens 16
req "$CAP_URL" /v1/chat/completions "$(chat "$SYS,$U1")" "$T/r1"
req "$CAP_URL" /v1/chat/completions "$(chat "$X1")" "$T/r2"
req "$CAP_URL" /v1/chat/completions "$(chat "$SYS,$U1,$A1,$U2")" "$T/r3"
req "$CAP_URL" /v1/chat/completions "$(chat "$SYS,$U1,$A1,$U2,$A2,$U3")" "$T/r4"
req "$CAP_URL" /v1/chat/completions "$(chat "$SYS,$X1")" "$T/r5"
stop $CAP_PID capture
records "$T/inf.lt.zst" >"$T/inf"
s1=$(jq -s '.[0].session' "$T/inf")
expect_eq "$s1 0|$s1 1|$s1 2" "$(jq -r 'select(.session == '"$s1"') | "\(.session) \(.turn)"' "$T/inf" | paste -sd'|')" \
    "turns of the inferred session"
expect_eq 3 "$(jq -s '[.[].session] | unique | length' "$T/inf")" "three conversations"
expect_eq "true true" "$(jq -sr '[.[2].think, .[3].think] | map(. >= 0) | join(" ")' "$T/inf")" \
    "think times of later turns"
expect_eq "null" "$(jq -s '.[0].think' "$T/inf")" "no think time on a first turn"
# Blocks of 16 estimated tokens: the system prompt is longer than two
# blocks, so requests 1, 3, 4 and 5 share their first two block hashes.
b=$(jq -sc '.[0].blocks[0:2]' "$T/inf")
expect_eq "$b|$b|$b" "$(jq -sc '.[2,3,4] | .blocks[0:2]' "$T/inf" | paste -sd'|')" \
    "shared prefix, shared blocks"
expect_eq "false" "$(jq -s '.[0].blocks[-1] == .[4].blocks[-1]' "$T/inf")" \
    "different text, different last block"
expect_eq 0 "$(jq -s '[.[].blocks[]? | select(. >= 9007199254740992 or . < 0)] | length' "$T/inf")" \
    "block hashes below 2^53"
expect_eq 16 "$("$LOADTRACE" cat "$T/inf.lt.zst" | head -1 | jq .block_tokens)" "block_tokens in the header"
expect_no_grep "Paris" "$T/inf"

# A second capture draws a new key: the same prompt hashes differently.
start_capture inf2 "$SIM_URL" --block-tokens 16
req "$CAP_URL" /v1/chat/completions "$(chat "$SYS,$U1")" "$T/r6"
stop $CAP_PID capture
expect_eq "false" "$(records "$T/inf2.lt.zst" | jq --argjson b "$b" '.blocks[0:2] == $b')" \
    "the key is per capture"

# A session header names the session; its value is never stored.
start_capture hdr "$SIM_URL" --session-header X-Conversation --keep-content
for v in conv-SECRETA conv-SECRETB conv-SECRETA conv-SECRETA; do
    req "$CAP_URL" /v1/chat/completions "$(chat "$X1")" "$T/rh" -H "X-Conversation: $v"
done
stop $CAP_PID capture
records "$T/hdr.lt.zst" >"$T/hdr"
expect_eq "0 0 1 2" "$(jq -r .turn "$T/hdr" | xargs)" "turns by header"
expect_eq 2 "$(jq -s '[.[].session] | unique | length' "$T/hdr")" "two named sessions"
zstd -dc "$T/hdr.lt.zst" | grep -a -q SECRET && fail "a session header value is in the trace"
# --keep-content: the prompt (the messages as JSON) and the answer text.
expect_eq "$(chat "$X1" | jq -c .messages)" "$(jq -sr '.[0].text' "$T/hdr")" "text kept"
expect_eq "$(jq -r '.choices[0].message.content' "$T/rh")" "$(jq -sr '.[3].out_text' "$T/hdr")" \
    "answer text kept"
stop $SIM_PID sim

# 40 concurrent streams whose lengths make them finish out of order: all
# recorded, read back in arrival order, each with its own length.
start_sim slow --profile default
start_capture conc "$SIM_URL"
k=0
pids=""
while [ $k -lt 40 ]; do
    n=$((80 - 2 * k))
    curl -sS -N --max-time 60 -H 'Content-Type: application/json' \
        -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"request $k\"}],\"max_tokens\":$n,\"ignore_eos\":true,\"stream\":true}" \
        "$CAP_URL/v1/chat/completions" >"$T/conc.$k" 2>/dev/null &
    pids="$pids $!"
    k=$((k + 1))
done
for p in $pids; do wait "$p" || fail "concurrent stream $p failed"; done
stop $CAP_PID capture
stop $SIM_PID sim
records "$T/conc.lt.zst" >"$T/conc"
expect_status 0 $? "cat the concurrent trace"
expect_eq 40 "$(wc -l <"$T/conc")" "40 records"
expect_eq true "$(jq -s '[.[].t] | . == sort' "$T/conc")" "arrival order"
expect_eq completion "$("$LOADTRACE" cat "$T/conc.lt.zst" | head -1 | jq -r .order)" \
    "the header says the file is in completion order"
expect_eq "$(jq -s '[.[] | select(.seq) | .out] | sort' "$T/slow.log" | jq -c .)" \
    "$(jq -s '[.[].out] | sort' "$T/conc" | jq -c .)" "lengths as served"
finish

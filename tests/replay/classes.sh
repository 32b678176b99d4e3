#!/bin/sh
# Error classes of answers that are wrong in ways a real server's can be,
# each made by a sim fault (docs/sim.md) whose log says which request got
# it: 2 MB of response headers before a complete stream is `malformed`
# (not `incomplete`), with its status 200; a body or a chunk whose choices
# is "nope" is `malformed` (not `short`); a first-token timeout after the
# headers (200) came, and nothing else, keeps `"status":200`; usage that
# the chunks disprove (2^64-1 tokens) is `bad_usage`, counted from its
# chunks (a whole answer, which has none, gets no count), and analyze
# counts it as an error, not Ok, and in no token figure. So is usage
# that claims 2^64-1 prompt tokens (more than the body's bytes could be),
# on chat and on Messages: no `in` is recorded for it, and analyze's
# prompt tokens are the true answers' only.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# the class each request got, in send order
classes() { # results
    results "$1" | jq -s -r 'sort_by(.sent)[] | .err // "ok"' | tr '\n' ' ' | sed 's/ $//'
}
# the class each request should have got, from the sim's log: its fault
# (none: ok) mapped by the sed arguments, in arrival order
want() { # log, then sed fault->class pairs
    _log=$1
    shift
    jq -s -r '[.[] | select(.seq != null)] | sort_by(.arrival_us)[] | .fault' "$_log" |
        sed -e s/^none\$/ok/ "$@" | tr '\n' ' ' | sed 's/ $//'
}
# how many requests of the log got fault $2
faulted() { # log fault
    jq -s "[.[] | select(.fault == \"$2\")] | length" "$1"
}
# both classes must be there, or the comparison proves little
both() { # log fault what
    [ "$(faulted "$1" "$2")" -ge 1 ] || fail "$3: no request got the fault"
    [ "$(faulted "$1" none)" -ge 1 ] || fail "$3: every request got the fault"
}

"$L" synth --arrivals constant --rate 10 --requests 8 --in fixed:16 --out fixed:4 -q \
    -o "$T/t.lt.zst" || fail "synth"

# bighead: 2 MiB of headers (replay takes 256 KiB), then a complete stream
start_sim head --profile fast --faults bighead=0.5:2097152,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 1 -o "$T/head.lt.zst" \
    -q --no-summary
expect_status 1 $? "replay with big headers"
stop_sim
both "$SIM_LOG" bighead "big headers"
expect_eq "$(want "$SIM_LOG" -e s/^bighead\$/malformed/)" "$(classes "$T/head.lt.zst")" "classes with 2 MB of headers"
expect_eq "$(faulted "$SIM_LOG" bighead)" "$(results "$T/head.lt.zst" | jq -s '[.[] | select(.err == "malformed" and .status == 200)] | length')" "malformed big-header answers with their status"

# badchoices, whole bodies and streams
start_sim body --profile fast --faults badchoices=0.5,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-stream --concurrency 1 \
    -o "$T/body.lt.zst" -q --no-summary
expect_status 1 $? "replay with bad bodies"
stop_sim
both "$SIM_LOG" badchoices "bad bodies"
expect_eq "$(want "$SIM_LOG" -e s/^badchoices\$/malformed/)" "$(classes "$T/body.lt.zst")" "classes with choices \"nope\" (whole bodies)"

start_sim chunk --profile fast --faults badchoices=0.5:2,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 1 \
    -o "$T/chunk.lt.zst" -q --no-summary
expect_status 1 $? "replay with bad chunks"
stop_sim
both "$SIM_LOG" badchoices "bad chunks"
expect_eq "$(want "$SIM_LOG" -e s/^badchoices\$/malformed/)" "$(classes "$T/chunk.lt.zst")" "classes with choices \"nope\" (a chunk)"

# a first token 2 s after the headers, which come alone (no role chunk)
start_sim ftt --profile fast --dialect no-role-chunk --faults stall=0.5:2s:0,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 1 \
    --first-token-timeout 500ms -o "$T/ftt.lt.zst" -q --no-summary
expect_status 1 $? "replay with slow first tokens"
stop_sim
both "$SIM_LOG" stall "slow first tokens"
expect_eq "$(want "$SIM_LOG" -e s/^stall\$/first_token_timeout/)" "$(classes "$T/ftt.lt.zst")" "classes with slow first tokens"
expect_eq "$(faulted "$SIM_LOG" stall)" "$(results "$T/ftt.lt.zst" | jq -s '[.[] | select(.err == "first_token_timeout" and .status == 200 and (.out // 0) == 0)] | length')" "first-token timeouts after the headers keep status 200"

# usage of 2^64-1 after 4 chunks, beside true usage
start_sim usage --profile fast --faults badusage=0.5,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --concurrency 1 -o "$T/usage.lt.zst" \
    -q --no-summary
expect_status 1 $? "replay with untrue usage"
stop_sim
both "$SIM_LOG" badusage "untrue usage"
expect_eq "$(want "$SIM_LOG" -e s/^badusage\$/bad_usage/)" "$(classes "$T/usage.lt.zst")" "classes with untrue usage"
expect_eq "4 chunks" "$(results "$T/usage.lt.zst" | jq -r 'select(.err == "bad_usage") | "\(.out) \(.count)"' | sort -u)" "untrue usage: out and count"
expect_eq "4 usage" "$(results "$T/usage.lt.zst" | jq -r 'select(.err == null) | "\(.out) \(.count)"' | sort -u)" "true usage: out and count"
"$L" analyze --json "$T/usage.lt.zst" >"$T/usage.json" || fail "analyze"
expect_eq "$(faulted "$SIM_LOG" badusage)" "$(jq '[.. | objects | select(has("bad_usage")) | .bad_usage] | first' "$T/usage.json")" "bad_usage in analyze's error counts"
expect_eq "$(($(faulted "$SIM_LOG" none) * 4))" "$(jq '.runs[0].tokens' "$T/usage.json")" "analyze's tokens: the true answers' only"

# the same claim in whole answers: nothing received counts their tokens,
# so they have no out (it once was the claim, clamped to 4294967295)
start_sim usagebody --profile fast --faults badusage=0.5,seed=1
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-stream --concurrency 1 \
    -o "$T/usagebody.lt.zst" -q --no-summary
expect_status 1 $? "replay with untrue usage in whole answers"
stop_sim
both "$SIM_LOG" badusage "untrue usage in whole answers"
expect_eq "$(want "$SIM_LOG" -e s/^badusage\$/bad_usage/)" "$(classes "$T/usagebody.lt.zst")" "classes with untrue usage in whole answers"
expect_eq "null null null" "$(results "$T/usagebody.lt.zst" | jq -r 'select(.err == "bad_usage") | "\(.out) \(.count) \(.chunks)"' | sort -u)" "untrue usage in whole answers: no count"
"$L" analyze --json "$T/usagebody.lt.zst" >"$T/usagebody.json" || fail "analyze"
expect_eq "$(($(faulted "$SIM_LOG" none) * 4))" "$(jq '.runs[0].tokens' "$T/usagebody.json")" "analyze's tokens with whole answers"
# a prompt count of 2^64-1 (once recorded as in 4294967295 and counted Ok)
for api in chat messages; do
    start_sim "prompt$api" --profile fast --faults badprompt=0.5,seed=1
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --api $api --no-calibrate --concurrency 1 \
        -o "$T/prompt$api.lt.zst" -q --no-summary
    expect_status 1 $? "replay --api $api with an untrue prompt count"
    stop_sim
    both "$SIM_LOG" badprompt "untrue prompt count ($api)"
    expect_eq "$(want "$SIM_LOG" -e s/^badprompt\$/bad_usage/)" "$(classes "$T/prompt$api.lt.zst")" \
        "classes with an untrue prompt count ($api)"
    expect_eq "null 4 chunks" "$(results "$T/prompt$api.lt.zst" |
        jq -r 'select(.err == "bad_usage") | "\(.in) \(.out) \(.count)"' | sort -u)" \
        "untrue prompt count ($api): no in, out from the chunks"
    expect_eq "$(jq -s '[.[] | select(.fault == "none") | .prompt_tokens] | add' "$SIM_LOG")" \
        "$(results "$T/prompt$api.lt.zst" | jq -s '[.[] | select(.err == null) | .in] | add')" \
        "true prompt counts ($api): the sim's"
    "$L" analyze --json "$T/prompt$api.lt.zst" >"$T/prompt$api.json" || fail "analyze"
    expect_eq "$(faulted "$SIM_LOG" badprompt)" \
        "$(jq '[.. | objects | select(has("bad_usage")) | .bad_usage] | first' "$T/prompt$api.json")" \
        "bad_usage in analyze's error counts ($api)"
done
finish

#!/bin/sh
# One record too large to send (300 million prompt tokens as token ids,
# --api completions: past the 256 MiB request body limit) gets its own
# error result, `request_too_large`, without being sent, and the run goes
# on: the sim's log holds every other request (it once aborted the whole run
# with "cannot build the request for trace record 2" and exit 1). The same
# for a record whose tools hold two counts of 2^32-1 (their sum overflows 32 bits).
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 20 --requests 6 --in fixed:16 --out fixed:4 -q \
    -o "$T/s.lt.zst" || fail "synth"
"$L" cat "$T/s.lt.zst" |
    jq -c 'if .t == 100000 then .in = 300000000 | .msgs = [["user", 300000000]] else . end' \
        >"$T/big.jsonl"
"$L" import --from jsonl "$T/big.jsonl" -o "$T/big.lt.zst" -q || fail "import"

start_sim big --profile fast
"$L" replay "$T/big.lt.zst" --target "$SIM_URL" --api completions --no-calibrate \
    -o "$T/r.lt.zst" -q --no-summary
expect_status 1 $? "replay with one record too large (some requests failed)"
stop_sim
expect_eq 6 "$(results "$T/r.lt.zst" | wc -l)" "results"
expect_eq "ok ok request_too_large ok ok ok" \
    "$(results "$T/r.lt.zst" | jq -s -r 'sort_by(.i)[] | .err // "ok"' | tr '\n' ' ' | sed 's/ $//')" \
    "classes by trace record"
expect_eq null "$(results "$T/r.lt.zst" | jq -r 'select(.i == 2) | .sent')" "the large request's send time"
expect_eq 5 "$(streams "$SIM_LOG" | wc -l)" "requests the sim saw"

"$L" cat "$T/s.lt.zst" | jq -c 'if .t == 150000 then .tools = [4294967295, 4294967295] else . end' \
    >"$T/tools.jsonl"
"$L" import --from jsonl "$T/tools.jsonl" -o "$T/tools.lt.zst" -q || fail "import tools"
start_sim tools --profile fast
"$L" replay "$T/tools.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/rt.lt.zst" -q --no-summary
expect_status 1 $? "replay with tools of 2^32-1 definitions (some requests failed)"
stop_sim
expect_eq "ok ok ok request_too_large ok ok" \
    "$(results "$T/rt.lt.zst" | jq -s -r 'sort_by(.i)[] | .err // "ok"' | tr '\n' ' ' | sed 's/ $//')" \
    "tools: classes by trace record"
expect_eq 5 "$(streams "$SIM_LOG" | wc -l)" "tools: requests the sim saw"
finish

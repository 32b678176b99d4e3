#!/bin/sh
# Every fault the sim can inject (--faults) lands in its error class, request
# by request (the sim's log says which request got which fault), and no
# record is lost: every request of the trace has exactly one result.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# 40 requests at 50/s (the fast profile answers in well under 20 ms)
"$L" synth --arrivals constant --rate 50 --requests 40 --in fixed:32 --out fixed:20 -q \
    -o "$T/t.lt.zst" || fail "synth"

check_fault() { # spec sim-fault-name error-class
    start_sim "f-$2" --profile fast --faults "$1,seed=3"
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --timeout 1s \
        --first-token-timeout 500ms -o "$T/$2.lt.zst" -q --no-summary
    expect_status 1 $? "replay with --faults $1 (some requests failed)"
    stop_sim
    expect_eq 40 "$(results "$T/$2.lt.zst" | jq -r .i | sort -u | wc -l)" "distinct requests recorded with $1"
    expect_eq 40 "$(results "$T/$2.lt.zst" | wc -l)" "results with $1"
    # pair the sim's requests and the results in order of arrival / send
    streams "$SIM_LOG" | jq -s -r 'sort_by(.arrival_us)[] | if .fault == "none" then "ok" else .fault end' |
        sed "s/^$2\$/$3/" > "$T/$2.want"
    results "$T/$2.lt.zst" | jq -s -r 'sort_by(.sent)[] | .err // "ok"' > "$T/$2.got"
    expect_eq "$(cat "$T/$2.want")" "$(cat "$T/$2.got")" "error classes with --faults $1"
    grep -q "$3" "$T/$2.got" || fail "--faults $1 injected nothing"
    # a failed request keeps its partial timings
    expect_eq 0 "$(results "$T/$2.lt.zst" | jq -s "[.[] | select(.err == \"$3\" and .sent == null)] | length")" "failed requests without a send time ($1)"
}
check_fault 500=0.3 500 http
check_fault 503=0.3:1 503 http
check_fault 429=0.3:1 429 ratelimit
check_fault disconnect=0.3:5 disconnect incomplete
check_fault malformed=0.3:3 malformed malformed
check_fault stall=0.3:2s:3 stall timeout
check_fault slow=0.3:1s slow first_token_timeout

# statuses are recorded too
expect_eq 12 "$(results "$T/429.lt.zst" | jq -s '[.[] | select(.status == 429)] | length')" "429 statuses"
# partial streams keep their chunks
[ "$(results "$T/disconnect.lt.zst" | jq -s '[.[] | select(.err == "incomplete") | .out] | min')" -ge 1 ] ||
    fail "a cut stream lost its partial chunks"

# --retry: a 429 is tried again after its Retry-After; each result is the
# last attempt and says how many retries it took; the sim saw every attempt
start_sim retry --profile fast --faults "429=0.3:1,seed=3"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --retry 3 -o "$T/retry.lt.zst" -q --no-summary
st=$?
stop_sim
expect_eq 40 "$(results "$T/retry.lt.zst" | wc -l)" "results with --retry"
# 0 when every request ended ok after its retries, 1 when some did not
expect_status "$(results "$T/retry.lt.zst" | jq -s '[.[] | select(.err != null)] | if length > 0 then 1 else 0 end')" "$st" "replay --retry 3"
expect_eq "$(streams "$SIM_LOG" | wc -l)" "$(results "$T/retry.lt.zst" | jq -s '40 + ([.[].retries // 0] | add)')" "attempts the sim saw vs results + retries"
expect_eq "$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault == "none")] | length')" \
    "$(results "$T/retry.lt.zst" | jq -s '[.[] | select(.err == null)] | length')" "ok after retries"

# refuse: new connections are refused for a while, and the refused
# request's connection is closed unanswered only once they are: the refused
# request (sent again at once on a new connection when its connection was a
# reused one) and the requests that need a new connection meanwhile are
# "connect", provided the client reconnects within the 200 ms
start_sim refuse --profile fast --faults "refuse=0.1:200ms,seed=3"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --timeout 1s -o "$T/refuse.lt.zst" -q --no-summary
expect_status 1 $? "replay with refuse faults (some requests failed)"
stop_sim
# which the sim's order makes sure of: its log says that each refused
# connection closed after the listener did (closed first, a retry could get
# in and carry every request of the 200 ms through one connection)
expect_eq 0 "$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault == "refuse" and .refused_us != null and
    .end_us < .refused_us)] | length')" "refused connections closed before the listener"
[ "$(streams "$SIM_LOG" | jq -s '[.[] | select(.refused_us != null)] | length')" -ge 1 ] ||
    fail "no refuse fault closed the listener"
expect_eq 40 "$(results "$T/refuse.lt.zst" | wc -l)" "results with refuse"
expect_eq "$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault == "none")] | length')" \
    "$(results "$T/refuse.lt.zst" | jq -s '[.[] | select(.err == null)] | length')" "ok requests with refuse"
[ "$(results "$T/refuse.lt.zst" | jq -s '[.[] | select(.err == "connect")] | length')" -ge \
    "$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault == "refuse")] | length')" ] ||
    fail "refused requests are not all 'connect'"
[ "$(streams "$SIM_LOG" | jq -s '[.[] | select(.fault == "refuse")] | length')" -ge 1 ] || fail "no refuse fault injected"

# a server that is not there at all
"$L" replay "$T/t.lt.zst" --target http://127.0.0.1:9 --model m --no-calibrate --requests 3 \
    --concurrency 1 -o "$T/none.lt.zst" -q --no-summary
expect_status 3 $? "replay against a closed port (no request ok)"
expect_eq "connect connect connect" "$(results "$T/none.lt.zst" | jq -r .err | tr '\n' ' ' | sed 's/ $//')" "errors against a closed port"
finish

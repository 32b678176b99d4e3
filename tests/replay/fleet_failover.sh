#!/bin/sh
# A replica killed mid-run (SIGKILL, as a crashed server): three sims behind
# --route round-robin, the third killed once its /metrics shows it has
# served a few requests. Without --failover its requests are recorded as
# errors (connect, or incomplete for the streams it cut), every one of them
# on that replica, and the run says so; with --failover it is marked down
# and its requests are sent again on the others: no error at all, and each
# live sim's log holds exactly the requests the results say it served.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
. "$LT_SRC/tests/replay/fleetlib.sh"

fleet_profile "$T/slow.profile" fleetslow 10 100000
# 60 requests, 50 ms apart, 20 tokens each (about 0.2 s)
awk 'BEGIN { for (i = 0; i < 60; i++) printf "{\"t\":%d,\"in\":32,\"out\":20}\n", i * 50000 }' \
    >"$T/k.jsonl"
"$L" import --from jsonl "$T/k.jsonl" -o "$T/k.lt.zst" -q || fail "import"

count() { # results file, jq filter -> how many results match
    results "$1" | jq -c "select($2)" | wc -l | tr -d ' '
}

run_killed() { # name, replay options...
    _n=$1
    shift
    URLS=
    for s in a b c; do
        start_sim "$s" --profile "$T/slow.profile"
        URLS="$URLS${URLS:+,}$SIM_URL"
    done
    "$L" replay "$T/k.lt.zst" --target "$URLS" --route round-robin --no-calibrate \
        --timeout 60s -o "$T/$_n.lt.zst" --no-summary -q "$@" 2>"$T/$_n.err" &
    _rp=$!
    server_track "$_rp"
    # c has streamed 100 tokens (5 requests): kill it mid-run
    wait_server_metric "$(server_url c)" 100 vllm:generation_tokens_total ||
        fail "$_n: sim c never served 5 requests"
    server_stop c KILL
    _srv_reap 120 "$_rp"
    _rc=$?
    for s in a b; do server_stop "$s"; done
    return $_rc
}

# --- default: the dead replica's requests are errors
run_killed plain
expect_status 1 $? "replay with a replica killed (errors recorded: exit 1, some failed)"
expect_eq 60 "$(count "$T/plain.lt.zst" true)" "results recorded"
errs=$(count "$T/plain.lt.zst" '.err != null')
[ "$errs" -gt 0 ] || fail "no error recorded for the killed replica"
expect_eq "$errs" "$(count "$T/plain.lt.zst" '.err != null and .replica == 2 and (.err == "connect" or .err == "incomplete")')" \
    "errors, all connect or incomplete on replica 2"
expect_grep "recorded as errors" "$T/plain.err"
for i in 0 1; do
    s=$(echo a b | cut -d' ' -f$((i + 1)))
    expect_eq "$(streams "$T/$s.log" | wc -l | tr -d ' ')" "$(count "$T/plain.lt.zst" ".replica == $i")" \
        "plain: results of replica $i against sim $s's log"
done

# --- --failover: marked down, its requests served elsewhere
run_killed fo --failover
expect_status 0 $? "replay --failover with a replica killed"
expect_eq 60 "$(count "$T/fo.lt.zst" true)" "results recorded (failover)"
expect_eq 0 "$(count "$T/fo.lt.zst" '.err != null')" "errors under --failover"
moved=$(count "$T/fo.lt.zst" '.failover_from == 2')
[ "$moved" -gt 0 ] || fail "no request failed over from replica 2"
expect_eq "$moved" "$(count "$T/fo.lt.zst" '.failover_from == 2 and .replica != 2')" \
    "failed-over requests served by another replica"
expect_grep "replica 2 .*DOWN at" "$T/fo.err"
expect_grep "\-\-failover: a replica's failure sends its requests to another" "$T/fo.err"
for i in 0 1; do
    s=$(echo a b | cut -d' ' -f$((i + 1)))
    expect_eq "$(streams "$T/$s.log" | wc -l | tr -d ' ')" "$(count "$T/fo.lt.zst" ".replica == $i")" \
        "failover: results of replica $i against sim $s's log"
done
runs "$T/fo.lt.zst" | jq -e '.failover == 1' >/dev/null || fail "the run record says failover"
finish

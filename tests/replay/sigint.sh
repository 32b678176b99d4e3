#!/bin/sh
# Ctrl-C (SIGINT) or SIGTERM in the middle of a run: replay records the
# requests in flight as aborted (with their partial timings) and the ones
# never sent as aborted without a send time, closes the file properly and
# exits 128 + the signal (130 after SIGINT, 143 after SIGTERM). Every request of the trace is accounted for, and the sim saw
# exactly the requests that were sent.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 20 --requests 60 --in fixed:64 --out fixed:200 -q \
    -o "$T/t.lt.zst" || fail "synth"

for sig in INT TERM; do
    want=130
    [ "$sig" = TERM ] && want=143
    start_sim "sig$sig"
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/r$sig.lt.zst" -q \
        --no-summary &
    RP=$!
    # the trace lasts 3 s and each answer takes over a second: once the sim
    # has a request, it is in flight and most of the trace is not yet sent
    # (the sim's count, not a sleep: a loaded machine may take over a
    # second to start replay)
    wait_sim_metric 1 vllm:num_requests_running vllm:num_requests_waiting
    kill -"$sig" $RP
    wait $RP
    expect_status "$want" $? "exit status after SIG$sig"
    stop_sim
    "$L" cat "$T/r$sig.lt.zst" > "$T/all$sig.jsonl"
    expect_status 0 $? "the results file after SIG$sig reads cleanly"
    expect_eq 60 "$(results "$T/r$sig.lt.zst" | jq -r .i | sort -u | wc -l)" "requests accounted for after SIG$sig"
    expect_eq 60 "$(results "$T/r$sig.lt.zst" | wc -l)" "results after SIG$sig"
    inflight=$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.err == "aborted" and .sent != null)] | length')
    unsent=$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.err == "aborted" and .sent == null)] | length')
    [ "$inflight" -ge 1 ] || fail "no request was in flight at SIG$sig"
    [ "$unsent" -ge 1 ] || fail "no request was left unsent at SIG$sig"
    # the sim saw exactly the requests that were sent
    expect_eq "$(results "$T/r$sig.lt.zst" | jq -s '[.[] | select(.sent != null)] | length')" \
        "$(streams "$SIM_LOG" | wc -l)" "requests sent vs the sim's log after SIG$sig"
done
# a trace longer than replay's lookahead (plan/README.md "Streaming": it
# holds only a window of the trace's requests): the ones never sent are
# read in order to be recorded, each under its own record number
"$L" synth --arrivals constant --rate 20 --requests 10000 --in fixed:16 --out fixed:200 -q \
    -o "$T/tlong.lt.zst" || fail "synth"
start_sim long
"$L" replay "$T/tlong.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/rlong.lt.zst" -q \
    --no-summary &
RP=$!
wait_sim_metric 1 vllm:num_requests_running vllm:num_requests_waiting
kill -TERM $RP
wait $RP
expect_status 143 $? "exit status after SIGTERM, long trace"
stop_sim
results "$T/rlong.lt.zst" | jq -r .i | sort -n > "$T/long.i"
expect_eq 10000 "$(sort -u "$T/long.i" | wc -l)" "distinct requests accounted for, long trace"
expect_eq 10000 "$(wc -l < "$T/long.i")" "results, long trace"
expect_eq 9999 "$(tail -n 1 "$T/long.i")" "the last record's number, long trace"
# an open loop over the trace twice (every request loaded, seqs repeat
# the trace's requests): the unsent are recorded under their own record
# numbers too, each number twice
"$L" synth --arrivals constant --rate 20 --requests 1500 --in fixed:16 --out fixed:200 -q \
    -o "$T/tloop.lt.zst" || fail "synth"
start_sim loop
"$L" replay "$T/tloop.lt.zst" --target "$SIM_URL" --no-calibrate --arrivals constant --rate 20 --requests 3000 \
    -o "$T/rloop.lt.zst" -q --no-summary &
RP=$!
wait_sim_metric 1 vllm:num_requests_running vllm:num_requests_waiting
kill -TERM $RP
wait $RP
expect_status 143 $? "exit status after SIGTERM, open loop"
stop_sim
expect_eq 3000 "$(results "$T/rloop.lt.zst" | wc -l)" "results, open loop"
expect_eq "1500 2" "$(results "$T/rloop.lt.zst" | jq -r .i | sort -n | uniq -c | awk '{ n[$1]++ } END { for (c in n) print n[c], c }')" "each record twice, open loop"
# a crash (SIGKILL: nothing is cleaned up) loses at most the frame being
# filled: the file salvages to the results finished before it
"$L" synth --arrivals constant --rate 20 --requests 100 --in fixed:16 --out fixed:4 -q \
    -o "$T/t5.lt.zst" || fail "synth"
start_sim kill --profile fast
"$L" replay "$T/t5.lt.zst" --target "$SIM_URL" --no-calibrate -o "$T/rKILL.lt.zst" -q --no-summary &
RP=$!
# half the trace answered, as the sim counts it (not a sleep: see above)
wait_sim_metric 50 vllm:request_success_total
kill -KILL $RP
wait $RP 2>/dev/null
stop_sim
"$L" cat --salvage --no-header "$T/rKILL.lt.zst" 2>/dev/null | jq -c 'select(.rec == null)' > "$T/killed.jsonl"
n=$(wc -l < "$T/killed.jsonl")
# about 50 requests had finished; all but the last fraction of a second must be there
[ "$n" -ge 20 ] || fail "only $n results could be read back after SIGKILL"
expect_eq "$n" "$(jq -r .i "$T/killed.jsonl" | sort -u | wc -l)" "distinct results after SIGKILL"
expect_eq 0 "$(jq -s '[.[] | select(.err == "aborted")] | length' "$T/killed.jsonl")" "aborted results after SIGKILL (nobody could write them)"
finish

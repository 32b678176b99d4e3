#!/bin/sh
# Closed and open loop against an external sim, checked on the sim's side:
# a concurrency sweep keeps exactly C requests in flight at the server and
# sends every request of each level; warm-up requests are recorded and
# flagged; open loop is scheduled at the asked rate and reaches the sim as
# sent; --max-concurrency caps what the server sees while the queueing shows
# in the results.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals poisson --rate 100 --requests 10 --in fixed:32 --out fixed:24 -q \
    -o "$T/t.lt.zst" || fail "synth"

# --- closed loop: C = 1 then 4, 12 requests each (the 10-request trace wraps)
start_sim closed
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --concurrency 1,4 --requests 12 --warmup 2 \
    -o "$T/c.lt.zst" -q --no-summary
expect_status 0 $? "closed-loop sweep"
stop_sim
streams "$SIM_LOG" | jq -s -c 'sort_by(.arrival_us)[]' > "$T/s.jsonl"
expect_eq 24 "$(wc -l < "$T/s.jsonl")" "requests the sim saw"
expect_eq 1 "$(head -12 "$T/s.jsonl" | max_overlap)" "requests in flight at the sim for C=1"
expect_eq 4 "$(tail -12 "$T/s.jsonl" | max_overlap)" "requests in flight at the sim for C=4"
expect_eq "1 4" "$(runs "$T/c.lt.zst" | jq -r .concurrency | tr '\n' ' ' | sed 's/ $//')" "run levels"
expect_eq "concurrency" "$(runs "$T/c.lt.zst" | jq -r .mode | sort -u)" "run mode"
expect_eq "12 12" "$(results "$T/c.lt.zst" | jq -s -r '[(map(select(.run == 0)) | length), (map(select(.run == 1)) | length)] | join(" ")')" "results per run"
expect_eq 4 "$(results "$T/c.lt.zst" | jq -s '[.[] | select(.warmup == true)] | length')" "warm-up results"
expect_eq "0 1 2 3 4 5 6 7 8 9 0 1" "$(results "$T/c.lt.zst" | jq -s -r '[map(select(.run == 0)) | sort_by(.sent)[] | .i] | join(" ")')" "trace order in a closed-loop run"
expect_eq "$(jq -s '[.[].out] | add' "$T/s.jsonl")" "$(results "$T/c.lt.zst" | jq -s '[.[].out] | add')" "output tokens vs the sim's"

# --- closed loop for a duration: stops starting requests after 1 s, records
# exactly what it sent (the sim's count), and says nothing of the rest
start_sim dur
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --concurrency 2 --requests 100000 --duration 1s \
    -o "$T/d.lt.zst" -q --no-summary
expect_status 0 $? "closed loop with --duration"
stop_sim
n=$(results "$T/d.lt.zst" | wc -l)
expect_eq "$(streams "$SIM_LOG" | wc -l)" "$n" "results vs requests the sim saw with --duration"
[ "$n" -ge 2 ] && [ "$n" -lt 100000 ] || fail "--duration 1s recorded $n requests"
expect_eq 0 "$(results "$T/d.lt.zst" | jq -s '[.[] | select(.err != null)] | length')" "errors with --duration"

# --- open loop: constant 50/s, 20 requests: span 19 / 50 = 380 ms at the sim
start_sim open --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 50 --arrivals constant --requests 20 \
    -o "$T/o.lt.zst" -q --no-summary
expect_status 0 $? "open loop constant"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 200 --arrivals poisson --requests 30 \
    -o "$T/p.lt.zst" -q --no-summary
expect_status 0 $? "open loop poisson"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 200 --arrivals gamma:2 --requests 30 \
    -o "$T/g.lt.zst" -q --no-summary
expect_status 0 $? "open loop gamma"
stop_sim
streams "$SIM_LOG" | jq -s -c 'sort_by(.arrival_us)[]' > "$T/s2.jsonl"
expect_eq 80 "$(wc -l < "$T/s2.jsonl")" "requests the sim saw in open loop"
# the constant-rate schedule, exact; the sim saw it as sent (no wall clock)
expect_eq 380000 "$(results "$T/o.lt.zst" | jq -s '(map(.sched) | max) - (map(.sched) | min)')" "constant-rate span of the schedule (us)"
head -20 "$T/s2.jsonl" > "$T/s2-constant.jsonl"
follows_sends "$T/o.lt.zst" "$T/s2-constant.jsonl" || fail "the sim's arrivals in open loop do not follow the sends"
expect_eq '"rate" 50' "$(runs "$T/o.lt.zst" | jq -r '"\"\(.mode)\" \(.rate)"')" "open-loop run record"
for f in o p g; do
    expect_eq 0 "$(results "$T/$f.lt.zst" | jq -s '[.[] | select(.err != null)] | length')" "errors in $f"
done

# --- open loop capped: 20/s for 12 requests of ~150 ms at the default
# profile, at most 1 in flight: the sim never sees 2, and the wait for a
# slot is recorded as sent - sched
start_sim cap
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --rate 20 --arrivals constant --requests 12 \
    --max-concurrency 1 -o "$T/m.lt.zst" -q --no-summary
expect_status 0 $? "open loop with --max-concurrency"
stop_sim
expect_eq 1 "$(streams "$SIM_LOG" | max_overlap)" "requests in flight at the sim with --max-concurrency 1"
expect_eq 12 "$(results "$T/m.lt.zst" | wc -l)" "results with --max-concurrency"
# the last request waited: its send is later than its schedule by more than
# what one request takes at most (no queueing would give ~0)
[ "$(results "$T/m.lt.zst" | jq -s 'map(.sent - .sched) | max')" -gt 100000 ] ||
    fail "queueing behind --max-concurrency is not recorded in sent - sched"
finish

#!/bin/sh
# The virtual fleet: replay --target sim --virtual --replicas N --route P runs
# N model instances, each with its own prefix cache, behind replay's own
# router, so a live fleet and a virtual one send each request to the same
# replica; and --find-max replicas finds the fewest that meet an SLO.
# - the same replica, live and virtual: three live sims (their logs say which
#   records each served) against --virtual --replicas 3, for session and
#   round-robin routing, record by record;
# - each instance its own cache: under session routing, every virtual
#   instance's cached tokens (its results) equal the live sim's prefix-cache
#   hits on /metrics for the same records;
# - --find-max replicas on a fleet whose answer is arithmetic: one request at
#   a time per replica (max_running 1), 40 ms each (4 tokens, 10 ms a step),
#   100 req/s evenly: 4 replicas keep up (every 4th request, 40 ms apart),
#   3 fall behind without bound.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
. "$LT_SRC/tests/replay/fleetlib.sh"
L=$LOADTRACE

fleet_setup

SIMS="a b c"
for pol in session round-robin; do
    URLS=
    for s in $SIMS; do
        start_sim "$s" --profile "$T/cache.profile"
        URLS="$URLS${URLS:+,}$SIM_URL"
    done
    "$L" replay "$T/h.lt.zst" --api completions --target "$URLS" --route "$pol" \
        -o "$T/live-$pol.lt.zst" --no-summary -q 2>"$T/live-$pol.err"
    expect_status 0 $? "live replay --route $pol"
    i=0
    : >"$T/live-$pol.where"
    for s in $SIMS; do
        eval "hits_$i=$(server_metric "$(server_url "$s")" vllm:prefix_cache_hits_total)"
        i=$((i + 1))
    done
    for s in $SIMS; do server_stop "$s"; done
    i=0
    for s in $SIMS; do
        streams "$T/$s.log" | jq -r ".max_tokens - 10 | \"\\(.) $i\"" >>"$T/live-$pol.where"
        i=$((i + 1))
    done
    "$L" replay "$T/h.lt.zst" --target sim --virtual --profile "$T/cache.profile" \
        --replicas 3 --route "$pol" -o "$T/virt-$pol.lt.zst" --no-summary -q 2>"$T/virt-$pol.err"
    expect_status 0 $? "replay --virtual --replicas 3 --route $pol"
    results "$T/virt-$pol.lt.zst" | jq -r '"\(.i) \(.replica)"' | sort -n >"$T/virt-$pol.where"
    sort -n "$T/live-$pol.where" >"$T/live-$pol.sorted"
    expect_eq 30 "$(wc -l <"$T/virt-$pol.where" | tr -d ' ')" "virtual results ($pol)"
    expect_eq "$(cat "$T/live-$pol.sorted")" "$(cat "$T/virt-$pol.where")" \
        "$pol: each record on the same replica live (the sims' logs) and virtual"
    if [ "$pol" = session ]; then
        for i in 0 1 2; do
            eval "want=\$hits_$i"
            got=$(results "$T/virt-$pol.lt.zst" | jq -s "[.[] | select(.replica == $i) | .cached] | add // 0")
            expect_eq "$want" "$got" "virtual instance $i's cached tokens against live sim $i's hits"
        done
    fi
done
runs "$T/virt-session.lt.zst" | jq -e '.route == "session" and (.replicas | length) == 3' \
    >/dev/null || fail "the virtual run record names the route and the instances"
"$L" analyze --json "$T/virt-session.lt.zst" >"$T/v.json" || fail "analyze the virtual fleet"
expect_eq 3 "$(jq '.runs[0].fleet.replicas | length' "$T/v.json")" "analyze: the virtual fleet's replicas"

# compare of two routers on the same fleet: each side's hit rate is its
# results' cached over prompt tokens, and the replicas it saves
"$L" compare --json "$T/virt-round-robin.lt.zst" "$T/virt-session.lt.zst" >"$T/cmp.json" ||
    fail "compare two routers"
for x in a b; do
    f=$([ $x = a ] && echo round-robin || echo session)
    want=$(results "$T/virt-$f.lt.zst" | jq -s '[.[] | select(.cached != null)] | (map(.cached) | add) / (map(.in) | add)')
    expect_near "$want" "$(jq ".runs[0].fleet.$x.hit_rate" "$T/cmp.json")" 0.000001 \
        "compare: $f's hit rate"
done
expect_eq "0 session" "$(jq -r '.runs[0].fleet | "\(.replicas_saved) \(.b.route)"' "$T/cmp.json")" \
    "compare: replicas saved, B's route"
"$L" compare "$T/virt-round-robin.lt.zst" "$T/virt-session.lt.zst" >"$T/cmp.txt" 2>&1
expect_grep "routers: A round-robin over 3 replicas, B session over 3" "$T/cmp.txt"

# --- --find-max replicas: the answer is 4
fleet_profile "$T/serial.profile" serial 10 1 cache_blocks=0
awk 'BEGIN { for (i = 0; i < 200; i++) printf "{\"t\":%d,\"in\":16,\"out\":4}\n", i * 10000 }' \
    >"$T/s.jsonl"
"$L" import --from jsonl "$T/s.jsonl" -o "$T/s.lt.zst" -q || fail "import the even trace"
"$L" replay "$T/s.lt.zst" --target sim --profile "$T/serial.profile" --find-max replicas \
    --rate 100 --slo 'ttft:p99<=35ms' --route round-robin -o "$T/fm.lt.zst" >"$T/fm.out" \
    2>"$T/fm.err"
expect_status 0 $? "--find-max replicas"
expect_grep "^replicas needed: 4 " "$T/fm.out"
expect_grep " at 3, 1.0000 at 4" "$T/fm.out"
# the run at 4 is the output: 4 replicas, 50 requests each
expect_eq "50 50 50 50" "$(results "$T/fm.lt.zst" | jq -r .replica | sort | uniq -c | awk '{ printf "%s%s", s, $1; s = " " }')" \
    "requests per replica of the answer's run"
ls "$T"/fm.lt.zst.replicas-* >/dev/null 2>&1 && fail "probe files left behind"
# bad input
"$L" replay "$T/s.lt.zst" --target sim --find-max replicas --slo 'ttft:p99<=35ms' -o "$T/x.lt.zst" \
    2>"$T/x.err"
expect_status 2 $? "--find-max replicas without --rate"
"$L" replay "$T/s.lt.zst" --target "http://127.0.0.1:1" --replicas 3 -o "$T/x.lt.zst" 2>"$T/x.err"
expect_status 2 $? "--replicas without --virtual"
finish

#!/bin/sh
# replay --find-max: the capacity search, against the sim where the truth
# is knowable.
#  1. usage: --find-max needs --slo, chooses the load itself, and its
#     options belong to it;
#  2. truth, in virtual time (the model is deterministic): the maximum
#     found for rate and for concurrency meets the SLO in a separate run,
#     and 15 % more load fails it; every probe is a run of the file, and
#     analyze's capacity section says what the search printed;
#  3. live and virtual searches of one profile agree within 10 %, for rate
#     and for concurrency (one --virtual-first search each against the sim
#     at a time scale: its file holds both);
#  4. faults during the probes (the sim's 500s) are reported and stop the
#     search, not taken for the capacity;
#  5. over-saturation: a live probe far beyond the capacity is stopped
#     early and recorded as a failed ("saturated") probe, saying why; the
#     sim's log shows its queue growing and fewer requests than the trace
#     reaching it; a probe well under the capacity is never stopped.
# Nothing here reads a wall clock.
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
SLO=ttft=1s,tpot=50ms

"$L" synth --arrivals poisson --rate 2 --requests 150 --in lognormal:200,0.6 \
    --out lognormal:150,0.5 --seed 5 -q -o "$T/t.lt.zst" || fail "synth"

# ---- 1. usage ----
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate -o "$T/x.lt.zst" 2>"$T/e1"
expect_status 2 $? "--find-max without --slo"
expect_grep "needs --slo" "$T/e1"
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo $SLO --rate 3 \
    -o "$T/x.lt.zst" 2>"$T/e2"
expect_status 2 $? "--find-max with --rate"
expect_grep "chooses the load" "$T/e2"
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo ttft=fast \
    -o "$T/x.lt.zst" 2>/dev/null
expect_status 2 $? "a bad --slo"
"$L" replay "$T/t.lt.zst" --target sim --slo $SLO -o "$T/x.lt.zst" 2>"$T/e3"
expect_status 2 $? "--slo without --find-max"
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo ttft:p99\<=1s \
    --attain 0.9 -o "$T/x.lt.zst" 2>"$T/e4"
expect_status 2 $? "a percentile form and a different --attain"

# attainment of run 0 of a results file under the SLO: good (from the
# schedule) / measured
attain() { # file
    "$L" analyze --json --slo $SLO "$1" |
        jq -r '.runs[0] | .goodput.good_sched / .measured'
}

# ---- 2. truth in virtual time ----
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo $SLO \
    -o "$T/vr.lt.zst" -q >"$T/vr.out"
expect_status 0 $? "virtual rate search"
expect_grep "^capacity (rate" "$T/vr.out"
"$L" analyze --json "$T/vr.lt.zst" >"$T/vr.json" || fail "analyze vr"
max=$(jq -r .capacity.virtual.max_ok "$T/vr.json")
fails=$(jq -r .capacity.virtual.min_fail "$T/vr.json")
probes=$(jq -r .capacity.virtual.probes "$T/vr.json")
expect_eq "$probes" "$(jq '.runs | length' "$T/vr.json")" "every probe a run"
pmax=$(awk -v a="$max" 'BEGIN { printf "%.6g", a }')
pfails=$(awk -v a="$fails" 'BEGIN { printf "%.6g", a }')
grep -q "^capacity (rate.*: $pmax req/s meets it, $pfails req/s fails" "$T/vr.out" ||
    fail "the printed answer ($(cat "$T/vr.out")) is not the file's ($max, $fails)"
awk -v a="$max" -v b="$fails" 'BEGIN { exit !(b > a && b <= a * 1.05 + 1e-9) }' ||
    fail "bracket $max..$fails wider than 5 %"
# the warm-up the search excluded: 5 % of the trace
"$L" replay "$T/t.lt.zst" --target sim --virtual --rate "$max" --warmup 7 -q --no-summary \
    -o "$T/at.lt.zst" || fail "replay at the max"
"$L" replay "$T/t.lt.zst" --target sim --virtual \
    --rate "$(awk -v a="$max" 'BEGIN { print a * 1.15 }')" --warmup 7 -q --no-summary \
    -o "$T/over.lt.zst" || fail "replay 15 % over"
a1=$(attain "$T/at.lt.zst")
a2=$(attain "$T/over.lt.zst")
awk -v a="$a1" 'BEGIN { exit !(a >= 0.9) }' || fail "the max ($max) attains $a1 < 0.9"
awk -v a="$a2" 'BEGIN { exit !(a < 0.9) }' || fail "15 % over the max attains $a2 >= 0.9"

"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max concurrency --slo $SLO \
    --requests 300 --warmup 15 -o "$T/vc.lt.zst" -q >"$T/vc.out"
expect_status 0 $? "virtual concurrency search"
cmax=$("$L" analyze --json "$T/vc.lt.zst" | jq -r .capacity.virtual.max_ok)
cfail=$("$L" analyze --json "$T/vc.lt.zst" | jq -r .capacity.virtual.min_fail)
expect_eq "$((cmax + 1))" "$cfail" "concurrency bracket"
c15=$(awk -v a="$cmax" 'BEGIN { print int(a * 1.15 + 0.999) }')
"$L" replay "$T/t.lt.zst" --target sim --virtual --concurrency "$cmax" --requests 300 \
    --warmup 15 -q --no-summary -o "$T/cat.lt.zst" || fail "closed loop at the max"
"$L" replay "$T/t.lt.zst" --target sim --virtual --concurrency "$c15" --requests 300 \
    --warmup 15 -q --no-summary -o "$T/cover.lt.zst" || fail "closed loop 15 % over"
a1=$(attain "$T/cat.lt.zst")
a2=$(attain "$T/cover.lt.zst")
awk -v a="$a1" 'BEGIN { exit !(a >= 0.9) }' || fail "concurrency $cmax attains $a1 < 0.9"
awk -v a="$a2" 'BEGIN { exit !(a < 0.9) }' || fail "concurrency $c15 attains $a2 >= 0.9"
"$L" analyze "$T/vc.lt.zst" >"$T/vc.txt" || fail "analyze text"
expect_grep "^Capacity (concurrency; SLO $SLO for 0.9 of requests)" "$T/vc.txt"
"$L" analyze --csv "$T/vc.lt.zst" >"$T/vc.csv" || fail "analyze csv"
expect_grep ',search,engine,load,attain,attain_lo,attain_hi,verdict,cancelled,cancelled_tokens$' "$T/vc.csv"
expect_grep ',concurrency,virtual,1,1.000000,' "$T/vc.csv"

# the percentile form: p95 of TTFT within 1 s is 95 % of requests within it
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo ttft:p95\<=1s \
    -o "$T/pc.lt.zst" -q >"$T/pc.out"
expect_status 0 $? "a percentile SLO"
expect_grep "for 0.95 of requests" "$T/pc.out"
expect_eq 0.95 "$("$L" analyze --json "$T/pc.lt.zst" | jq -r .capacity.attain_target)" \
    "the percentile's target"

# bounded: said so, and the bracket so far kept
"$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo $SLO --max-probes 3 \
    -o "$T/mp.lt.zst" -q >"$T/mp.out"
expect_status 0 $? "a search bounded by --max-probes"
expect_grep "stopped at --max-probes" "$T/mp.out"
expect_eq 3 "$("$L" analyze --json "$T/mp.lt.zst" | jq '.runs | length')" "three probes"

# ---- 3. live and virtual agree ----
# The sim runs 20 times faster than the model: the live loads are 20 times
# the virtual ones, the SLO in live time a twentieth (the search converts).
# A shorter trace keeps each live probe near a second.
"$L" synth --arrivals poisson --rate 2 --requests 100 --in lognormal:200,0.6 \
    --out lognormal:150,0.5 --seed 7 -q -o "$T/s.lt.zst" || fail "synth short"
"$L" replay "$T/s.lt.zst" --target sim --sim-time-scale 20 --find-max rate \
    --slo ttft=50ms,tpot=2.5ms --virtual-first --precision 0.05 --max-probes 12 \
    -o "$T/lv.lt.zst" -q >"$T/lv.out"
expect_status 0 $? "live search, virtual first"
expect_grep "^virtual first: " "$T/lv.out"
"$L" analyze --json "$T/lv.lt.zst" >"$T/lv.json" || fail "analyze lv"
lmax=$(jq -r .capacity.live.max_ok "$T/lv.json")
vmax=$(jq -r .capacity.virtual.max_ok "$T/lv.json")
[ "$lmax" != null ] && [ "$vmax" != null ] || fail "no answer: $(cat "$T/lv.out")"
awk -v l="$lmax" -v v="$vmax" 'BEGIN { d = l / v - 1; exit !(d < 0.1 && d > -0.1) }' ||
    fail "live ($lmax) and virtual ($vmax) disagree by more than 10 %"

# the same for the concurrency search (a closed loop): at a modest scale,
# since the client's and the sim's own CPU per token does not shrink with
# the model's times (docs/replay.md); the SLO is in live time. Short
# outputs keep each probe near ten seconds; the answer (about 20) makes a
# step of one 5 %.
"$L" synth --arrivals poisson --rate 2 --requests 150 --in lognormal:200,0.6 \
    --out lognormal:40,0.5 --seed 5 -q -o "$T/c.lt.zst" || fail "synth closed"
"$L" replay "$T/c.lt.zst" --target sim --sim-time-scale 3 --find-max concurrency \
    --slo ttft=300ms,tpot=25ms --virtual-first --requests 200 --warmup 10 --max-probes 12 \
    -o "$T/lc.lt.zst" -q >"$T/lc.out"
expect_status 0 $? "live concurrency search, virtual first"
"$L" analyze --json "$T/lc.lt.zst" >"$T/lc.json" || fail "analyze lc"
lmax=$(jq -r .capacity.live.max_ok "$T/lc.json")
vmax=$(jq -r .capacity.virtual.max_ok "$T/lc.json")
[ "$lmax" != null ] && [ "$vmax" != null ] || fail "no concurrency answer: $(cat "$T/lc.out")"
awk -v l="$lmax" -v v="$vmax" 'BEGIN { d = l / v - 1; exit !(d <= 0.1 && d >= -0.1) }' ||
    fail "live ($lmax) and virtual ($vmax) concurrency disagree by more than 10 %"

# the chart and the HTML report's section
"$L" analyze "$T/lv.lt.zst" --plots "$T/pl" --html "$T/r.html" 2>/dev/null || fail "plots"
[ -s "$T/pl/capacity.dat" ] && [ -s "$T/pl/capacity.gp" ] || fail "no capacity chart"
expect_eq "$(jq '.capacity.probes | length' "$T/lv.json")" "$(grep -vc '^#' "$T/pl/capacity.dat")" \
    "one point per probe"
expect_grep "<h2>Capacity</h2>" "$T/r.html"
# one rate means one thing: every probe's load is a rounded one (3
# significant digits at 5 %), the throughput curve holds the live probes
# only (the virtual ones ran the model at load / 20, in model time), at
# their loads, one point a load, and each probe's header gives its load
# as the capacity table does
jq -r '.capacity.probes[].load' "$T/lv.json" | awk '{ s = sprintf("%.3g", $1); if (s + 0 != $1 + 0) { print "unrounded load " $1; bad = 1 } } END { exit bad }' ||
    fail "loads with more digits than the search can tell apart"
jq -r '[.capacity.probes[] | select(.engine == "live") | .load] | unique | .[]' "$T/lv.json" |
    sort -g >"$T/live_loads"
grep -v '^#' "$T/pl/throughput.dat" | awk '{ print $1 }' | sort -g >"$T/curve_loads"
cmp -s "$T/live_loads" "$T/curve_loads" ||
    fail "the throughput curve's x ($(paste -sd' ' "$T/curve_loads")) is not the live loads ($(paste -sd' ' "$T/live_loads"))"
vload=$(jq -r '[.capacity.probes[] | select(.engine == "virtual")][0].load' "$T/lv.json")
grep -q "virtual rate $vload/s (model " "$T/r.html" ||
    fail "the first virtual probe's header does not give its load $vload"

# ---- 4. faults are not capacity ----
# (virtual first: the live probes start near the capacity, not at the
# trace's own slow rate)
"$L" replay "$T/s.lt.zst" --target sim --sim-time-scale 20 --sim-faults 500=0.2 \
    --find-max rate --slo ttft=50ms,tpot=2.5ms --virtual-first --max-probes 12 \
    -o "$T/f.lt.zst" -q >"$T/f.out"
expect_status 1 $? "a search through faults"
expect_grep "faults" "$T/f.out"
"$L" analyze --json "$T/f.lt.zst" >"$T/f.json" || fail "analyze f"
expect_eq faulted "$(jq -r '[.capacity.probes[] | select(.engine == "live")][0].verdict' \
    "$T/f.json")" "probe verdict"
expect_eq null "$(jq -r .capacity.live.max_ok "$T/f.json")" "no capacity from faults"

# ---- 5. over-saturation stops a probe early ----
. "$LT_SRC/tests/replay/simlib.sh"
# 400 requests at 40 req/s of 200 prompt and 200 output tokens: the
# default profile serves a few a second, so the queue grows from the start
"$L" synth --arrivals poisson --rate 40 --requests 400 --in fixed:200 --out fixed:200 --seed 3 \
    -q -o "$T/big.lt.zst" || fail "synth big"
start_sim over
# (--requests 400: the whole trace a probe, not the window a live probe
# would replay by itself)
"$L" replay "$T/big.lt.zst" --target "$SIM_URL" --find-max rate --slo $SLO --max-probes 1 \
    --requests 400 -o "$T/ov.lt.zst" >"$T/ov.out" 2>"$T/ov.err"
expect_status 0 $? "a search whose probe is far beyond the capacity"
stop_sim
expect_grep "^saturated: 1 live probe stopped early" "$T/ov.out"
expect_grep "live probe 1 stopped early, saturated: .* grew without bound: " "$T/ov.err"
"$L" analyze --json "$T/ov.lt.zst" >"$T/ov.json" || fail "analyze ov"
expect_eq saturated "$(jq -r '.capacity.probes[0].verdict' "$T/ov.json")" "the probe's verdict"
expect_eq null "$(jq -r .capacity.live.max_ok "$T/ov.json")" "nothing met"
jq -r '.capacity.probes[0].why' "$T/ov.json" | grep -q "grew without bound.*stopped at" ||
    fail "the run record does not say why: $(jq -c '.capacity.probes[0]' "$T/ov.json")"
"$L" analyze "$T/ov.lt.zst" | grep -q "^ *the .* grew without bound" || fail "analyze text: why"
# stopped early: fewer than the trace's 400 reached the sim, every one of
# them is accounted for in the file (sent or not)
arrived=$(streams "$SIM_LOG" | wc -l | tr -d ' ')
[ "$arrived" -lt 400 ] || fail "all $arrived requests were sent: the probe was not stopped"
expect_eq 400 "$(results "$T/ov.lt.zst" | wc -l | tr -d ' ')" "every request of the probe recorded"
expect_eq "$arrived" "$(results "$T/ov.lt.zst" | jq -s '[.[] | select(.sent != null)] | length')" \
    "the sends are the sim's arrivals"
# the sim's own queue (arrived, no token yet; tokens_us are from the
# arrival) grew: 250 ms in, and at the last arrival
queue() { # sim log, time offset (µs) from the first arrival, or "last"
    streams "$1" | jq -s --arg at "$2" '(map(.arrival_us) | min) as $t0 |
        (if $at == "last" then (map(.arrival_us) | max) else $t0 + ($at | tonumber) end) as $t |
        [.[] | (.tokens_us // []) as $k |
            select(.arrival_us <= $t and (($k | length) == 0 or .arrival_us + $k[0] > $t))] | length'
}
q1=$(queue "$SIM_LOG" 250000)
q2=$(queue "$SIM_LOG" last)
[ "$q2" -gt $((4 * q1 + 4)) ] || fail "the sim's queue did not grow: $q1 at 250 ms, $q2 at the end"

# under the capacity: never stopped, every request sent
"$L" synth --arrivals poisson --rate 1 --requests 40 --in fixed:100 --out fixed:20 --seed 4 \
    -q -o "$T/small.lt.zst" || fail "synth small"
start_sim under
"$L" replay "$T/small.lt.zst" --target "$SIM_URL" --find-max rate --slo $SLO --max-probes 1 \
    -o "$T/un.lt.zst" >"$T/un.out" 2>"$T/un.err"
expect_status 0 $? "a search whose probe is under the capacity"
stop_sim
if grep -q "stopped early" "$T/un.out" "$T/un.err"; then fail "a probe under capacity was stopped"; fi
expect_eq meets "$("$L" analyze --json "$T/un.lt.zst" | jq -r '.capacity.probes[0].verdict')" \
    "the probe under capacity"
expect_eq 40 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "every request reached the sim"
finish

#!/bin/sh
# A capacity search's probes are bounded and never judged empty, checked
# against ground truth (awk over the trace, the sim's --log and /metrics):
#  1. a probe that judges too few requests for its interval (a --duration
#     that holds too few at the load, or a warm-up that takes them all) is
#     an error that says why and what to lengthen, never a failed probe;
#     the counts it gives are the trace's, by awk;
#  2. a live rate probe replays a window of the trace, says which, and the
#     sim receives exactly that many requests;
#  3. --max-time never starts a live probe that cannot end within it: the
#     search says so and the sim receives no inference request;
#  4. SIGTERM during a live probe stops the search, which says by which
#     signal and what it knew, with exit status 143; the probe it cut
#     keeps its records in the file, without a verdict, and analyze
#     leaves it out of the answer, saying so.
# Nothing here reads a wall clock.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
SLO=ttft=1s,tpot=50ms

# ---- 1. too few to judge ----
# 500 requests at 1.6 req/s; a strict SLO fails at the trace's rate, so the
# search lowers the load until 30 s hold too few requests
"$L" synth --arrivals poisson --rate 1.6 --requests 500 --in fixed:3000 --out fixed:200 --seed 2 \
    -q -o "$T/d.lt.zst" || fail "synth"
"$L" replay "$T/d.lt.zst" --target sim --virtual --find-max rate --slo ttft=100ms,tpot=5ms \
    --duration 30s -o "$T/d.out.lt.zst" -q >"$T/d.out" 2>"$T/d.err"
expect_status 2 $? "a probe too short for its interval"
expect_grep "too few for its interval: at least 35 are needed" "$T/d.err"
expect_grep "lengthen --duration" "$T/d.err"
expect_no_grep "lowest load tried fails" "$T/d.out"
[ ! -e "$T/d.out.lt.zst" ] || fail "a results file was written with no answer"
# the replayed count is what 30 s hold of the trace at that rate (awk)
rate=$(sed -n 's/.*at rate \([0-9.e+-]*\) the probe judged.*/\1/p' "$T/d.err")
got=$(sed -n 's/.* judged [0-9]* requests (\([0-9]*\) replayed.*/\1/p' "$T/d.err")
want=$("$L" cat --no-header "$T/d.lt.zst" | jq -r .t | awk -v r="$rate" '
    NR == 1 { t0 = $1 } { t[NR] = $1 } END {
        f = (NR - 1) / ((t[NR] - t0) / 1e6) / r  # trace time to replay time
        for (i = 1; i <= NR; i++) if ((t[i] - t0) * f < 30e6) n++
        print n }')
expect_eq "$want" "$got" "requests 30 s hold at rate $rate"
"$L" replay "$T/d.lt.zst" --target sim --virtual --find-max rate --slo $SLO --duration 30s \
    --warmup 100 -o "$T/w.lt.zst" -q >/dev/null 2>"$T/w.err"
expect_status 2 $? "a warm-up that takes every request"
expect_grep "judged no request: the warm-up took all 40 requests of the probe; lower --warmup (100)" "$T/w.err"
"$L" replay "$T/d.lt.zst" --target sim --virtual --find-max rate --slo $SLO --requests 30 \
    -o "$T/r.lt.zst" -q >/dev/null 2>"$T/r.err"
expect_status 2 $? "--requests too few for the interval"
expect_grep "at least 35 are needed.*raise --requests" "$T/r.err"

# ---- 2. a live probe replays a window ----
# 400 requests at 20 req/s: a probe replays the first 139 (+-0.05 at 0.9,
# no warm-up: a slice of a running trace)
"$L" synth --arrivals poisson --rate 20 --requests 400 --in fixed:40 --out fixed:8 --seed 3 \
    -q -o "$T/t.lt.zst" || fail "synth"
start_sim window
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --find-max rate --slo ttft=5s,tpot=500ms \
    --max-probes 1 -o "$T/win.lt.zst" >"$T/win.out" 2>"$T/win.err"
expect_status 0 $? "a one-probe live search"
stop_sim
expect_grep "live probes replay requests 1-139 of the trace's 400" "$T/win.err"
expect_grep "live probe 1: rate [0-9.]*, 139 requests over about" "$T/win.err"
expect_eq 139 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "the sim received the window"
expect_eq 139 "$(results "$T/win.lt.zst" | wc -l | tr -d ' ')" "the window's requests recorded"

# ---- 3. --max-time never starts a probe it cannot end ----
# at 0.5 req/s a probe of 35 requests takes 68 s
"$L" synth --arrivals poisson --rate 0.5 --requests 100 --in fixed:40 --out fixed:8 --seed 4 \
    -q -o "$T/slow.lt.zst" || fail "synth slow"
start_sim maxtime
"$L" replay "$T/slow.lt.zst" --target "$SIM_URL" --find-max rate --slo $SLO --max-time 10s \
    -o "$T/mt.lt.zst" >"$T/mt.out" 2>"$T/mt.err"
expect_status 0 $? "a search bounded by --max-time"
stop_sim
expect_grep "stopped at --max-time: the next live probe, at [0-9.]*, would have ended past it" \
    "$T/mt.out"
expect_grep "no live probe was run: raise --max-time" "$T/mt.out"
expect_no_grep "fails" "$T/mt.err"
expect_eq 0 "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "no live request was sent"

# ---- 4. a stop says what was known ----
start_sim stop
"$L" replay "$T/slow.lt.zst" --target "$SIM_URL" --find-max rate --slo $SLO \
    -o "$T/st.lt.zst" >"$T/st.out" 2>"$T/st.err" &
RP=$!
wait_sim_metric 3 vllm:request_success_total
kill -TERM "$RP"
wait "$RP"
expect_status 143 $? "a search stopped by SIGTERM"
stop_sim
expect_grep "^capacity: stopped by SIGTERM after 0 live and 0 virtual probes (the live probe at [0-9.]* in progress was cut short" \
    "$T/st.out"
expect_grep "^capacity (rate, .*, live): none req/s meets it, none req/s fails it" "$T/st.out"
# the cut probe's records stay in the file, without a verdict: analyze
# leaves it out of the answer and says so
expect_eq 1 "$(runs "$T/st.lt.zst" | wc -l | tr -d ' ')" "the cut probe's run record"
expect_eq 0 "$("$L" cat --no-header "$T/st.lt.zst" | jq -r 'select(.rec == "verdict")' | wc -l |
    tr -d ' ')" "verdict records of a cut probe"
[ "$(results "$T/st.lt.zst" | jq -r 'select(.sent != null) | .i' | wc -l)" -ge 3 ] ||
    fail "the cut probe's sent requests are not in the file (the sim answered 3)"
"$L" analyze "$T/st.lt.zst" >"$T/st.txt" || fail "analyze the stopped search"
expect_grep "^  left out: run 0, live probe at [0-9.]*, no verdict" "$T/st.txt"
finish

#!/bin/sh
# replay --target sim --virtual: the sim's model in virtual time, no HTTP.
#  1. usage: --virtual needs --target sim; live-only options are refused;
#  2. exact: a profile whose timing is computed by hand (10 ms steps, one
#     request at a time) gives exactly the hand-computed token times;
#  3. the key check: the same model live and in virtual time. The trace is
#     replayed live against `loadtrace sim` (at --time-scale S, with
#     --speed S so the model sees the trace's own times); the sim's --log
#     records when each request arrived and when each token was emitted,
#     in the model's own time (x S). The arrivals it saw, as a trace,
#     replayed in virtual time give the same TTFT p50/p90, TPOT p50, E2E
#     p50/p90 within 5 % and aggregate tok/s within 2 % (in practice within
#     0.2 %: a request arriving a few microseconds apart can fall into the
#     next step). The sim's log, not the client's clock, is the reference:
#     a loaded machine delays the client's sends and reads, and then the
#     arrivals the sim saw, but not what the model made of them;
#  4. a closed-loop sweep 1,4,16,32 (100-token prompts, 1000-token
#     outputs) reproduces the calibration table of docs/sim.md;
#  5. trace-time transforms: --speed 2 halves every send time (ground truth
#     from the trace itself), sessions wait for the previous turn + think.
# Nothing here reads a wall clock.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
S=4  # the live sim runs S times slower than the model: its timers' jitter stays small against a step

"$L" synth --arrivals poisson --rate 2 --requests 300 --in lognormal:200,0.6 \
    --out lognormal:200,0.5 --seed 5 -q -o "$T/t.lt.zst" || fail "synth"

# ---- 1. usage ----
"$L" replay "$T/t.lt.zst" --target http://127.0.0.1:9 --virtual -o "$T/x.lt.zst" 2>"$T/err1"
expect_status 2 $? "--virtual with a URL target"
expect_grep "needs --target sim" "$T/err1"
"$L" replay "$T/t.lt.zst" --target sim --virtual --sim-faults 500=0.1 -o "$T/x.lt.zst" 2>"$T/err2"
expect_status 2 $? "--virtual --sim-faults"
expect_grep "faults are not simulated" "$T/err2"
"$L" replay "$T/t.lt.zst" --target sim --virtual --profile nosuch.profile -o "$T/x.lt.zst" 2>"$T/err3"
expect_status 2 $? "--virtual with a missing profile"

# ---- 2. exact, by hand ----
# Steps of 10 ms, prefill free, one request at a time; three requests due at
# 0, 1 and 2 ms with 5 output tokens each. Request 0's step starts at 0: its
# tokens come at 10..50 ms; request 1 is admitted when request 0 leaves
# (50 ms): 60..100 ms; request 2: 110..150 ms.
cat >"$T/one.profile" <<'EOF'
name = one-at-a-time
step_ms = 10
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
max_running = 1
EOF
"$L" synth --arrivals constant --rate 1000 --requests 3 --in fixed:50 --out fixed:5 -q \
    -o "$T/three.lt.zst" || fail "synth three"
"$L" replay "$T/three.lt.zst" --target sim --virtual --profile "$T/one.profile" \
    -o "$T/three-r.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay of three requests"
got=$(results "$T/three-r.lt.zst" | jq -s -r 'sort_by(.i)[] |
    "\(.sched) \(.sent) \(.ft) \(.end) \([.chunks | range(0; length; 2) as $k | .[$k]] | join(","))"')
want="0 0 10000 50000 10000,10000,10000,10000,10000
1000 1000 60000 100000 59000,10000,10000,10000,10000
2000 2000 110000 150000 108000,10000,10000,10000,10000"
expect_eq "$want" "$got" "sched, sent, first token, end and chunk gaps (us)"
expect_eq '{"mode":"trace","speed":1,"target":"sim:virtual","model":"one-at-a-time"}' \
    "$(runs "$T/three-r.lt.zst" | jq -c '{mode, speed, target, model}')" "run record"
expect_eq "200 length usage 5 5 50 50" \
    "$(results "$T/three-r.lt.zst" | jq -r '"\(.status) \(.finish) \(.count) \(.out) \(.want_out) \(.in) \(.want_in)"' | sort -u)" \
    "status, finish, counts"

# ---- 3. live against virtual ----
"$L" replay "$T/t.lt.zst" --target sim --virtual -o "$T/virt.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay"
expect_eq 300 "$(results "$T/virt.lt.zst" | jq -s '[.[] | select(.status == 200)] | length')" "virtual ok"
start_sim live --time-scale $S
# completions with token ids: the sim counts exactly the lengths the trace asks for
timeout 150 "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --api completions --speed $S \
    -o "$T/live.lt.zst" -q --no-summary
expect_status 0 $? "live replay"
stop_sim
expect_eq 300 "$(results "$T/live.lt.zst" | jq -s '[.[] | select(.status == 200)] | length')" "live ok"
# the arrivals the sim saw, in model time, as a trace; replayed in virtual time
streams "$SIM_LOG" | jq -s -c --argjson s $S 'sort_by(.arrival_us) | .[0].arrival_us as $a0 | .[] |
    {t: ((.arrival_us - $a0) * $s), in: .prompt_tokens, out: .out}' >"$T/seen.jsonl"
"$L" import --from jsonl "$T/seen.jsonl" -o "$T/seen.lt.zst" -q || fail "import the arrivals the sim saw"
"$L" replay "$T/seen.lt.zst" --target sim --virtual -o "$T/seen-r.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay of the arrivals the sim saw"
fig() { # stdin: "start first-token end out" per request (us); the compared figures
    jq -R -s -r 'split("\n") | map(select(length > 0) | split(" ") | map(tonumber)) as $r |
        def pct($a; $q): ($a | sort) as $x | $x[(($x | length) - 1) * $q | floor];
        ($r | map(.[1] - .[0])) as $ttft | ($r | map(.[2] - .[0])) as $e2e |
        ($r | map(select(.[3] > 1) | (.[2] - .[1]) / (.[3] - 1))) as $tpot |
        "ttft_p50 \(pct($ttft; 0.5))", "ttft_p90 \(pct($ttft; 0.9))",
        "tpot_p50 \(pct($tpot; 0.5))", "e2e_p50 \(pct($e2e; 0.5))", "e2e_p90 \(pct($e2e; 0.9))",
        "agg_tps \(($r | map(.[3]) | add) / ((($r | map(.[2]) | max) - ($r | map(.[0]) | min)) / 1e6))",
        "n \($r | length)"'
}
streams "$SIM_LOG" | jq -r --argjson s $S \
    '"\(.arrival_us * $s) \(.tokens_us[0] * $s) \(.tokens_us[-1] * $s) \(.out)"' | fig >"$T/fig-live.txt"
results "$T/seen-r.lt.zst" | jq -r '"\(.sent) \(.ft) \(.end) \(.out)"' | fig >"$T/fig-virt.txt"
paste "$T/fig-virt.txt" "$T/fig-live.txt" | awk '
    { r = $2 > 0 ? $4 / $2 : 0
      printf "  %-9s virtual %12.1f  sim log %12.1f  ratio %.4f\n", $1, $2, $4, r
      if ($1 == "n") { if ($2 != 300 || $4 != 300) bad = 1 }
      else if ($1 == "agg_tps") { if (r < 0.98 || r > 1.02) bad = 1 }
      else if (r < 0.95 || r > 1.05) bad = 1 }
    END { exit bad }' >"$T/cmp.txt"
rc=$?
cat "$T/cmp.txt"
expect_status 0 $rc "the sim's log and virtual time within 5 %"

# ---- 4. the calibration table, closed loop ----
"$L" synth --arrivals constant --rate 1 --requests 128 --in fixed:100 --out fixed:1000 -q \
    -o "$T/cal.lt.zst" || fail "synth cal"
"$L" replay "$T/cal.lt.zst" --target sim --virtual --concurrency 1,4,16,32 \
    -o "$T/cal-r.lt.zst" -q --no-summary
expect_status 0 $? "virtual sweep"
"$L" analyze --json "$T/cal-r.lt.zst" |
    jq -r '.runs[] | "\(.concurrency) \(.perreq_tps.decode) \(.agg_tps)"' >"$T/cal.txt"
# docs/sim.md: virtual-time check 169.8/166.1, 153.0/579.3, 113.4/1559.0,
# 79.6/2164.9 (prefill_seqs 16); published 176/172, 159/542, 120/1647, 81/2156.
awk 'BEGIN { split("169.8 153.0 113.4 79.6", DR); split("166.1 579.3 1559.0 2164.9", DA)
             split("176 159 120 81", PR); split("172 542 1647 2156", PA) }
    { k = NR; printf "  C=%-2d per-request %6.1f (table %5.1f, published %3d)  aggregate %7.1f (table %6.1f, published %4d)\n", $1, $2, DR[k], PR[k], $3, DA[k], PA[k]
      if ($2 / DR[k] < 0.99 || $2 / DR[k] > 1.01 || $3 / DA[k] < 0.99 || $3 / DA[k] > 1.01) bad = 1
      if ($2 / PR[k] < 0.9 || $2 / PR[k] > 1.1 || $3 / PA[k] < 0.9 || $3 / PA[k] > 1.1) bad = 1 }
    END { exit bad || NR != 4 }' "$T/cal.txt" >"$T/cal-cmp.txt"
rc=$?
cat "$T/cal-cmp.txt"
expect_status 0 $rc "the sweep reproduces the calibration table"
expect_eq "1 4 16 32" "$(runs "$T/cal-r.lt.zst" | jq -r .concurrency | tr '\n' ' ' | sed 's/ $//')" \
    "one run per level"
# in a closed loop a request is scheduled when its slot frees: at most C at once
expect_eq "" "$(results "$T/cal-r.lt.zst" | jq -r 'select(.sched != .sent) | .i')" "sched = sent in a closed loop"

# ---- 5. trace-time transforms and sessions ----
"$L" replay "$T/t.lt.zst" --target sim --virtual --speed 2 -o "$T/x2.lt.zst" -q --no-summary
expect_status 0 $? "virtual --speed 2"
"$L" cat --no-header "$T/t.lt.zst" | jq -r '.t' | awk 'NR == 1 { t0 = $1 } { print int(($1 - t0) / 2) }' >"$T/want-sched.txt"
results "$T/x2.lt.zst" | jq -s -r 'sort_by(.i)[] | .sched' >"$T/got-sched.txt"
awk 'NR == FNR { w[FNR] = $1; next } { d = w[FNR] - $1; if (d < -1 || d > 1) bad = 1 } END { exit bad }' \
    "$T/want-sched.txt" "$T/got-sched.txt" || fail "--speed 2: send times are not the trace's halved"
expect_eq 300 "$(wc -l <"$T/got-sched.txt" | tr -d ' ')" "results at --speed 2"

"$L" synth --arrivals poisson --rate 1 --requests 60 --turns fixed:3 --think 2s \
    --prefix 0.5,1024,2 --in lognormal:200,0.5 --out lognormal:100,0.5 --seed 5 -q \
    -o "$T/s.lt.zst" || fail "synth sessions"
"$L" replay "$T/s.lt.zst" --target sim --virtual -o "$T/s-r.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay with sessions"
# every later turn is sent at max(its trace time, previous turn's end + think)
"$L" cat --no-header "$T/s.lt.zst" | jq -c '{t, session, think}' >"$T/s-trace.jsonl"
results "$T/s-r.lt.zst" | jq -s -c 'sort_by(.i)[] | {sent: .sent, e: .end}' >"$T/s-res.jsonl"
jq -n -r --slurpfile tr "$T/s-trace.jsonl" --slurpfile rs "$T/s-res.jsonl" '
    reduce range(0; $tr | length) as $k ({last: {}, bad: 0};
        ($tr[$k].session | tostring) as $s |
        (if .last[$s] != null then ([$tr[$k].t, .last[$s] + $tr[$k].think] | max) else $tr[$k].t end) as $want |
        (if (($rs[$k].sent - $want) | fabs) > 1 then .bad += 1 else . end) |
        .last[$s] = $rs[$k].e) | .bad' >"$T/s-bad.txt" 2>&1
expect_eq 0 "$(cat "$T/s-bad.txt")" "session turns sent at max(trace time, previous end + think)"
# later turns find their conversation, and the shared system prompts, in the prefix cache
cached=$(results "$T/s-r.lt.zst" | jq -s '[.[].cached] | add')
[ "$cached" -gt 0 ] 2>/dev/null || fail "no prefix cache hits with sessions (cached=$cached)"
finish

#!/bin/sh
# Replay as an MPI job (docs/replay-mpi.md): `mpirun -n 3 loadtrace replay`
# on loopback against one `loadtrace sim`, checked against the sim's --log
# and against figures computed with jq from the per-rank parts:
#   - the merged results hold every request exactly once, a session on one rank;
#   - the ranks keep the trace's schedule on a common origin, and the sim's
#     arrivals follow the ranks' recorded send times;
#   - the merged summary equals the same requests' figures from the parts;
#   - a closed-loop sweep splits each level over the ranks;
#   - a rank killed mid-run (mpirun --enable-recovery): the others finish and
#     the merged run record names the rank and the requests missing; without
#     --enable-recovery mpirun ends the job and `replay --merge` rebuilds it.
# Registered only when MPI is built; mpirun missing then is a failure.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
. "$LT_SRC/tests/replay/mpilib.sh"

# 30 sessions of 3 turns (90 requests), a new session every 50 ms
"$L" synth --arrivals constant --rate 20 --requests 90 --turns fixed:3 --think 100ms \
    --in fixed:32 --out fixed:8 -q -o "$T/t.lt.zst" || fail "synth"
"$L" cat --no-header "$T/t.lt.zst" | jq -c '{t, session}' > "$T/trace.jsonl"

# ---- trace time over 3 ranks ----
start_sim trace --profile fast
mpi 3 replay "$T/t.lt.zst" --target "$SIM_URL" -o "$T/r.lt.zst" -q --keep-parts > "$T/out.txt"
expect_status 0 $? "mpirun -n 3 replay"
stop_sim
for k in 0 1 2; do
    [ -s "$T/r.lt.zst.rank$k" ] || fail "rank $k's part is missing"
done
expect_eq 90 "$(results "$T/r.lt.zst" | jq -s '[.[].i] | unique | length')" "distinct requests merged"
expect_eq 90 "$(results "$T/r.lt.zst" | wc -l)" "results merged (each request once)"
expect_eq 1 "$(runs "$T/r.lt.zst" | wc -l)" "run records merged"
# the server's metrics: scraped by rank 0 only, kept by the merge
nscr=$("$L" cat --no-header "$T/r.lt.zst.rank0" | jq -s '[.[] | select(.rec == "scrape")] | length')
[ "$nscr" -ge 1 ] || fail "rank 0 recorded no scrape sample"
expect_eq "0 0" "$(for k in 1 2; do "$L" cat --no-header "$T/r.lt.zst.rank$k" | jq -s '[.[] | select(.rec == "scrape")] | length'; done | tr '\n' ' ' | sed 's/ $//')" "scrape samples of ranks 1 and 2"
expect_eq "$nscr" "$("$L" cat --no-header "$T/r.lt.zst" | jq -s '[.[] | select(.rec == "scrape")] | length')" "scrape samples merged"
expect_eq '3 [] 0' "$(runs "$T/r.lt.zst" | jq -r '"\(.ranks) \(.missing_ranks|tojson) \(.missing_requests)"')" "merged run record"
# a session never spans ranks; every rank got a fair share (30 +- 6)
for k in 0 1 2; do
    results "$T/r.lt.zst.rank$k" | jq -c --argjson k $k '{i, k: $k}'
done > "$T/where.jsonl"
jq -n -r --slurpfile w "$T/where.jsonl" --slurpfile tr "$T/trace.jsonl" \
    '($w | map({key: (.i|tostring), value: .k}) | from_entries) as $m |
     $tr | to_entries | map({s: .value.session, k: $m[(.key|tostring)]}) |
     group_by(.s) | map(map(.k) | unique | length) | max' > "$T/span.txt"
expect_eq 1 "$(cat "$T/span.txt")" "ranks a session spans (at most)"
for k in 0 1 2; do
    c=$(results "$T/r.lt.zst.rank$k" | wc -l)
    [ "$c" -ge 24 ] && [ "$c" -le 36 ] || fail "rank $k sent $c of 90 requests: unbalanced"
done
# the schedule across the ranks: every request's sched (on the common
# origin) is its trace time t - t0, or later for a turn that waited for its
# previous turn's end + think; and the sim's arrivals follow the ranks'
# recorded send times (both sorted): each arrival - send, less the
# smallest, is the request's extra delivery time, under 250 ms. Both
# compare the ranks' own records with the sim's, not with a wall clock: a
# loaded machine delays the sends (recorded as lag, sent - sched) and their
# delivery, not the common origin.
streams "$SIM_LOG" > "$T/s.jsonl"
expect_eq 90 "$(wc -l < "$T/s.jsonl")" "requests the sim saw"
results "$T/r.lt.zst" | jq -c '{i, sched, sent}' > "$T/sent.jsonl"
jq -n -r --slurpfile r "$T/sent.jsonl" --slurpfile tr "$T/trace.jsonl" '
    ($tr[0].t) as $t0 |
    ($tr | to_entries | map(.value.session) | . as $s |
        [range(0; length) | . as $k | ($s | index($s[$k])) == $k]) as $first |
    [$r[] | ($tr[.i].t - $t0) as $want |
        select(.sched < $want - 1000 or ($first[.i] and .sched > $want + 1000)) |
        "sched \(.sched) of request \(.i) vs its trace time \($want)"] | .[]' > "$T/sched-off.txt"
expect_eq "" "$(cat "$T/sched-off.txt")" "sched against the trace's times, across the ranks"
jq -s -r 'map(.arrival_us) | sort[]' "$T/s.jsonl" > "$T/arr.txt"
jq -s -r 'map(.sent) | sort[]' "$T/sent.jsonl" > "$T/want.txt"
paste "$T/want.txt" "$T/arr.txt" |
    awk '{ d[NR] = $2 - $1; if (NR == 1 || d[NR] < m) m = d[NR]; s[NR] = $0 }
         END { for (k = 1; k <= NR; k++) if (d[k] - m > 250000) { print "off: " s[k]; bad = 1 }
               exit bad }' || fail "the sim's arrivals do not follow the ranks' send times"
# the merged summary against the same requests' figures from the parts (jq)
for k in 0 1 2; do results "$T/r.lt.zst.rank$k"; done | jq -s -c '
    map(select(.err == null and .status == 200 and .out >= 1)) as $ok |
    ($ok | map((.ft - .sent) / 1000)) as $ttft | (map(select(.sent != null) | (.sent - .sched) / 1000)) as $lag |
    {results: length, ok: ($ok | length), tokens: ($ok | map(.out) | add),
     ttft_mean: ($ttft | add / length), ttft_max: ($ttft | max),
     lag_max: ($lag | max)}' > "$T/parts.json"
"$L" analyze --json "$T/r.lt.zst" | jq -c '.runs[0] | {results, ok, tokens,
    ttft_mean: .latency_ms.ttft.mean, ttft_max: .latency_ms.ttft.max,
    lag_max: .latency_ms.lag.max}' > "$T/merged.json"
jq -n -r --slurpfile a "$T/parts.json" --slurpfile b "$T/merged.json" '
    $a[0] as $a | $b[0] as $b |
    [($a.results == $b.results), ($a.ok == $b.ok), ($a.tokens == $b.tokens),
     (($a.ttft_mean - $b.ttft_mean) | fabs) <= 0.002 * $a.ttft_mean + 0.001,
     (($a.ttft_max - $b.ttft_max) | fabs) <= 0.002 * $a.ttft_max + 0.001,
     (($a.lag_max - $b.lag_max) | fabs) <= 0.002 * $a.lag_max + 0.001] | all' > "$T/same.txt"
[ "$(cat "$T/same.txt")" = true ] ||
    fail "merged summary $(cat "$T/merged.json") differs from the parts' $(cat "$T/parts.json")"
# analyze over the three parts sees the same requests as the merged file
expect_eq 90 "$("$L" analyze --json "$T/r.lt.zst.rank0" "$T/r.lt.zst.rank1" "$T/r.lt.zst.rank2" |
    jq '[.runs[].results] | add')" "results analyze finds in the parts"
expect_grep 'merged 3 ranks' "$T/out.txt"
expect_grep 'lag p99 ms' "$T/out.txt"

# ---- a closed-loop sweep, no sessions: the levels split over the ranks ----
"$L" synth --arrivals constant --rate 50 --requests 30 --in fixed:32 --out fixed:64 -q \
    -o "$T/flat.lt.zst" || fail "synth flat"
start_sim sweep --profile default --time-scale 20
mpi 3 replay "$T/flat.lt.zst" --target "$SIM_URL" --concurrency 3,7 -o "$T/c.lt.zst" -q --no-summary \
    --keep-parts
expect_status 0 $? "mpirun -n 3 replay --concurrency 3,7"
stop_sim
expect_eq '0:3 1:7' "$(runs "$T/c.lt.zst" | jq -r '"\(.run):\(.concurrency)"' | tr '\n' ' ' | sed 's/ $//')" "merged sweep levels"
expect_eq '30 30' "$(results "$T/c.lt.zst" | jq -s -r '[group_by(.run)[] | map(.i) | unique | length] | map(tostring) | join(" ")')" "distinct requests per run"
expect_eq 4 "$(runs "$T/c.lt.zst.rank0" | jq -s -r '[.[].concurrency] | add')" "rank 0's share of 3 and 7 (1 + 3)"
expect_eq 60 "$(streams "$SIM_LOG" | wc -l)" "requests the sim saw in the sweep"
# every rank's closed loop starts at the common origin, not before it
expect_eq 0 "$(results "$T/c.lt.zst" | jq -s '[.[] | select(.sched < 0 or .sent < 0)] | length')" "requests sent before the origin"
ov=$(streams "$SIM_LOG" | max_overlap)
[ "$ov" -le 7 ] || fail "the sim saw $ov requests at once, more than the level 7"

# ---- by default a complete merge removes the parts it merged (and says so) ----
"$L" synth --arrivals constant --rate 50 --requests 6 --in fixed:16 --out fixed:4 -q \
    -o "$T/small.lt.zst" || fail "synth small"
start_sim parts --profile fast
mpi 2 replay "$T/small.lt.zst" --target "$SIM_URL" -o "$T/p.lt.zst" --no-summary 2> "$T/perr.txt"
expect_status 0 $? "mpirun -n 2 replay, parts removed"
stop_sim
expect_eq 6 "$(results "$T/p.lt.zst" | wc -l)" "the merged file holds every request"
expect_eq 6 "$(streams "$SIM_LOG" | wc -l)" "the sim saw every request"
for k in 0 1; do
    [ -e "$T/p.lt.zst.rank$k" ] && fail "rank $k's part was left behind after a complete merge"
done
expect_grep "merged 2 parts into $T/p.lt.zst and removed them" "$T/perr.txt"

# ---- a rank killed mid-run ----
# Rank 2 dies once the run is under way: when the sim's log shows $1
# answered requests (the ranks have passed their setup and its collective
# steps, whose loss Open MPI's recovery does not survive; a fixed delay
# fell inside them under a loaded sanitizer run), or after 100 s.
kill_rank2() { # SIGKILL the rank-2 process writing $2
    i=0
    while [ "$(grep -c '"path":"/v1/chat' "$SIM_LOG" 2>/dev/null)" -lt "$1" ] && [ $i -lt 2000 ]; do
        i=$((i + 1))
        sleep 0.05
    done
    for d in /proc/[0-9]*; do
        tr '\0' '\n' < "$d/cmdline" 2>/dev/null | grep -qx "$2" || continue
        tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=2 || continue
        kill -9 "${d#/proc/}"
        return 0
    done
    echo "FAIL: no rank 2 to kill" >&2
}
start_sim kill --profile fast
kill_rank2 5 "$T/k.lt.zst" &
KP=$!
timeout 120 "$MPIRUN" --oversubscribe $ROOT -x LSAN_OPTIONS --enable-recovery -n 3 "$L" replay "$T/t.lt.zst" \
    --target "$SIM_URL" -o "$T/k.lt.zst" -q > "$T/kout.txt" 2> "$T/kerr.txt"
wait $KP
stop_sim
[ -s "$T/k.lt.zst" ] || fail "no merged result after rank 2 died"
got=$(results "$T/k.lt.zst" | jq -s '[.[].i] | unique | length')
expect_eq "$got" "$(results "$T/k.lt.zst" | wc -l)" "results after the kill (each request once)"
expect_eq '[2]' "$(runs "$T/k.lt.zst" | jq -c .missing_ranks)" "missing ranks in the merged run record"
miss=$(runs "$T/k.lt.zst" | jq .missing_requests)
expect_eq 90 "$((got + miss))" "results + missing requests"
[ "$miss" -gt 0 ] || fail "rank 2 was killed but nothing is missing"
# ranks 0 and 1 finished: all their requests ended ok
expect_eq 0 "$(for k in 0 1; do results "$T/k.lt.zst.rank$k"; done | jq -s '[.[] | select(.err != null)] | length')" "errors of the surviving ranks"
expect_grep "INCOMPLETE: $miss requests missing, of rank 2" "$T/kout.txt"
# the same parts merged after the fact say the same
"$L" replay --merge -o "$T/k2.lt.zst" --no-summary "$T/k.lt.zst.rank0" "$T/k.lt.zst.rank1" \
    "$T/k.lt.zst.rank2" > "$T/m.txt"
expect_status 1 $? "replay --merge of a partial job"
expect_eq "[2] $miss" "$(runs "$T/k2.lt.zst" | jq -r '"\(.missing_ranks|tojson) \(.missing_requests)"')" "--merge's run record"
# a rank that left no file at all: all of its requests missing, count unknown
"$L" replay --merge -o "$T/k3.lt.zst" --no-summary "$T/k.lt.zst.rank0" "$T/k.lt.zst.rank1" \
    "$T/nothing.rank2" > "$T/m3.txt"
expect_status 1 $? "replay --merge without rank 2's file"
expect_eq '[2] -1' "$(runs "$T/k3.lt.zst" | jq -r '"\(.missing_ranks|tojson) \(.missing_requests)"')" "run record without rank 2's file"
finish

#!/bin/sh
# A virtual replay stopped by SIGTERM is described as a stopped live run
# is: the requests in the model are recorded as aborted, every one never
# sent as never sent (not an error), and a check record says who stopped
# it and when (in model time); analyze says so, keeps the never-sent ones
# out of the errors and the measured, and prints no client self-check (a
# virtual run has no client). Before, the signal killed the process: the
# file held what had been written and nothing said the run was cut.
# Checked against the results file itself (awk over cat): the never-sent
# are exactly the requests scheduled after the stop.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/lib/servers.sh"
L=$LOADTRACE

# a million requests at 5/s: 55 hours of schedule, a few seconds of CPU
"$L" synth --arrivals constant --rate 5 --requests 1000000 --in fixed:20 --out fixed:4 -q -o "$T/t.lt.zst" ||
    fail "synth"
"$L" replay "$T/t.lt.zst" --target sim --virtual -o "$T/v.lt.zst" --no-summary 2>"$T/v.err" &
P=$!
server_track $P
# stopped once some of it is on disk (a bounded wait), long before its end
big() { [ -s "$T/v.lt.zst" ] && [ "$(wc -c <"$T/v.lt.zst")" -gt 200000 ]; }
wait_until 60 big || fail "the virtual run wrote nothing in 60 s"
kill -TERM $P
wait $P
expect_status 143 $? "a virtual run stopped by SIGTERM"
grep -q "^loadtrace replay: run 0 stopped by SIGTERM at [0-9.]* s of model time: [0-9]* requests never sent" "$T/v.err" ||
    fail "replay does not say the run was stopped: $(cat "$T/v.err")"

"$L" cat --no-header "$T/v.lt.zst" >"$T/v.jsonl" || fail "the stopped run's file does not read back"
# ground truth from the file: results, never sent, aborted, and the stop
awk '!/"rec"/ { n++ }
     /"err":"unsent"/ { u++; if (match($0, /"sched":[0-9]+/)) { s = substr($0, RSTART + 8, RLENGTH - 8) + 0; if (umin == "" || s < umin) umin = s } }
     /"err":"aborted"/ { a++ }
     !/"rec"/ && /"sent":/ { if (match($0, /"sched":[0-9]+/)) { s = substr($0, RSTART + 8, RLENGTH - 8) + 0; if (s > smax) smax = s } }
     /"rec":"check"/ { if (match($0, /"stopped_at_s":[0-9.e+]+/)) at = substr($0, RSTART + 15, RLENGTH - 15) + 0
                       if (match($0, /"unsent":[0-9]+/)) cu = substr($0, RSTART + 9, RLENGTH - 9) + 0 }
     END { printf "%d %d %d %.0f %.0f %.0f %d\n", n, u, a, smax, umin, at * 1e6, cu }' "$T/v.jsonl" >"$T/truth"
read -r n unsent aborted smax umin at cunsent <"$T/truth"
expect_eq 1000000 "$n" "every request of the trace is recorded"
[ "$unsent" -gt 0 ] || fail "nothing was left unsent: the run ended before the signal"
expect_eq "$unsent" "$cunsent" "the check record's never-sent count"
# the never-sent are those due after the stop, the sent ones before it
awk -v s="$smax" -v u="$umin" -v t="$at" 'BEGIN { exit !(s <= t && u >= t) }' ||
    fail "sent up to sched $smax, never sent from $umin, stopped at $at us"
grep -q '"rec":"check".*"stopped_by":"SIGTERM"' "$T/v.jsonl" || fail "no check record says SIGTERM"

"$L" analyze "$T/v.lt.zst" >"$T/a.txt" 2>&1
expect_grep "^STOPPED run 0 (speed x1): stopped by SIGTERM at [0-9.]* s of model time: $unsent requests never sent (not errors" "$T/a.txt"
expect_no_grep "self-check" "$T/a.txt"
expect_no_grep "CHECK" "$T/a.txt"
"$L" analyze "$T/v.lt.zst" --json >"$T/a.json"
expect_eq "null $aborted $((n - unsent)) SIGTERM $unsent" \
    "$(jq -r '.runs[0] | "\(.errors.unsent) \(.errors.aborted // 0) \(.measured) \(.check.stopped_by) \(.check.unsent)"' "$T/a.json")" \
    "analyze --json: never-sent not errors, aborted are, measured of the sent"
# a capacity search in virtual time stops within its probe too: the probe
# cut short is not judged, the search says so and exits 143
"$L" synth --arrivals poisson --rate 5 --requests 300000 --in fixed:20 --out fixed:4 --seed 2 -q \
    -o "$T/s.lt.zst" || fail "synth the search's trace"
"$L" replay "$T/s.lt.zst" --target sim --virtual --find-max rate --slo ttft=1s -o "$T/cap.lt.zst" \
    >"$T/cap.out" 2>"$T/cap.err" &
P=$!
server_track $P
# the first probe is under way once the results file has grown (its
# records go there as they are made)
probe() { [ -s "$T/cap.lt.zst" ] && [ "$(wc -c <"$T/cap.lt.zst")" -gt 100000 ]; }
wait_until 60 probe || fail "the first virtual probe wrote nothing in 60 s"
kill -TERM $P
wait_until 30 sh -c "! kill -0 $P 2>/dev/null || ps -o stat= -p $P | grep -q Z" ||
    fail "the search did not stop within 30 s of SIGTERM"
wait $P
expect_status 143 $? "a virtual search stopped by SIGTERM"
expect_grep "^capacity: stopped by SIGTERM after 0 live and [0-9]* virtual probes (the virtual probe at [0-9.]* in progress was cut short and is not judged)" "$T/cap.out"
# its records stay in the file, without a verdict: analyze leaves it out
"$L" analyze "$T/cap.lt.zst" >"$T/cap.txt" || fail "analyze the stopped search"
expect_grep "^  left out: run 0, virtual probe at [0-9.]*, no verdict" "$T/cap.txt"

if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' \
        "$LT_SRC/docs/analyze-schema.json" "$T/a.json" || fail "analyze JSON does not validate"
fi
finish

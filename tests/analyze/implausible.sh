#!/bin/sh
# analyze refuses a results file holding a result that cannot be true, with
# exit 1 and the record named: an end before the first token, the first
# content before the first token, a time before its run's start, a time of
# 2^63 µs (a Wall of 4.6e12 s otherwise), and one request recorded twice in
# a trace-time run. What is true still reads: the same file without the
# fault, a closed loop whose laps send a record again (its index repeats),
# and real replays (a trace-time run and a closed loop over more requests
# than the trace holds). gen_results `bad KIND` writes ten results of which
# result 5 (record 6) carries the one fault named.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
L=$LOADTRACE
refused() { # kind pattern
    "$LT_GEN" bad "$1" "$T/$1.lt.zst" || fail "gen_results bad $1"
    "$L" analyze "$T/$1.lt.zst" >"$T/out" 2>"$T/err"
    expect_status 1 $? "analyze $1"
    expect_grep "$2" "$T/err"
    "$L" analyze --json "$T/$1.lt.zst" >"$T/out" 2>"$T/err"
    expect_status 1 $? "analyze --json $1"
}
accepted() { # kind
    "$LT_GEN" bad "$1" "$T/$1.lt.zst" || fail "gen_results bad $1"
    "$L" analyze "$T/$1.lt.zst" >"$T/out" 2>"$T/err"
    expect_status 0 $? "analyze $1"
    expect_grep "10 results" "$T/out"
}
accepted ok
accepted loop-dup
refused end-ft 'record 6: "end" (519999 us) is before "ft" (520000 us)'
refused fc-ft 'record 6: "fc" (519999 us) is before "ft" (520000 us)'
refused neg 'record 6: "sched" (-5000000 us) is before its run.s start'
refused neg-sent 'record 6: "sent" (-1 us) is before its run.s start'
refused huge 'record 6: "end" (9223372036854775807 us) is more than ten years after its run.s start'
refused dup 'record 6: request 4 of the trace is recorded twice in run 0, a trace-time run'

# real replays read as before
"$L" synth --arrivals poisson --rate 4 --requests 12 --in fixed:60 --out fixed:8 --seed 4 -q \
    -o "$T/t.lt.zst" || fail "synth"
"$L" replay "$T/t.lt.zst" --target sim --virtual -q -o "$T/r.lt.zst" 2>/dev/null ||
    fail "replay in trace time"
"$L" analyze "$T/r.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze of a trace-time replay"
"$L" replay "$T/t.lt.zst" --target sim --virtual --concurrency 2 --requests 30 -q \
    -o "$T/loop.lt.zst" 2>/dev/null || fail "replay loop"
reps=$("$L" cat --no-header "$T/loop.lt.zst" | jq -r 'select(.sched != null) | .i' | sort |
    uniq -d | wc -l)
[ "$reps" -gt 0 ] || fail "the closed loop repeated no index"
"$L" analyze "$T/loop.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze of a closed loop whose laps repeat indexes"
finish

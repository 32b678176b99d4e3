#!/bin/sh
# The lean HTTP client (replay/replay_h1.c) against heads gone wrong, each
# made by a sim fault on half the streams (the sim's log says which):
#   - head lines ending in LF alone (lfhead), which RFC 9112 lets a
#     recipient read and curl reads: ok, with every token;
#   - a status of 2000000000000000000000000000 (bigstatus): malformed, and
#     no status recorded (not 200);
#   - 1000 interim heads "102 Processing" before the answer (interim): a
#     run of 1xx without end is malformed, not a timeout; a few (5) are
#     read past: ok.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
"$L" synth --arrivals constant --rate 10 --requests 8 --in fixed:16 --out fixed:6 -q \
    -o "$T/t.lt.zst" || fail "synth"
classes() { # results: the class of each request, in send order
    results "$1" | jq -s -r 'sort_by(.sent)[] | .err // "ok"' | tr '\n' ' ' | sed 's/ $//'
}
want() { # log, then sed fault->class pairs: the class each request should get
    _log=$1
    shift
    jq -s -r '[.[] | select(.seq != null)] | sort_by(.arrival_us)[] | .fault' "$_log" |
        sed -e s/^none\$/ok/ "$@" | tr '\n' ' ' | sed 's/ $//'
}
faulted() { # log fault
    jq -s "[.[] | select(.fault == \"$2\")] | length" "$1"
}
run() { # name expected-exit faults
    start_sim "$1" --profile fast --faults "$3,seed=1"
    timeout 60 "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --http-client lean --no-calibrate \
        --no-server-metrics --concurrency 1 --timeout 20s -o "$T/$1.lt.zst" -q --no-summary \
        2>"$T/$1.err"
    expect_status "$2" $? "replay with $3"
    stop_sim
}

run lf 0 lfhead=0.5
[ "$(faulted "$SIM_LOG" lfhead)" -ge 1 ] && [ "$(faulted "$SIM_LOG" none)" -ge 1 ] ||
    fail "lfhead: want both faulted and clean requests"
expect_eq "$(want "$SIM_LOG" -e s/^lfhead\$/ok/)" "$(classes "$T/lf.lt.zst")" "classes with LF-only heads"
expect_eq "6" "$(results "$T/lf.lt.zst" | jq -r '.out' | sort -u)" "tokens of each answer"
expect_eq "200" "$(results "$T/lf.lt.zst" | jq -r '.status' | sort -u)" "statuses"

run big 1 bigstatus=0.5
[ "$(faulted "$SIM_LOG" bigstatus)" -ge 1 ] || fail "bigstatus: no request faulted"
expect_eq "$(want "$SIM_LOG" -e s/^bigstatus\$/malformed/)" "$(classes "$T/big.lt.zst")" \
    "classes with a 28-digit status"
expect_eq "" "$(results "$T/big.lt.zst" | jq -r 'select(.err == "malformed") | .status // empty')" \
    "a status recorded for a 28-digit one"

run many 1 interim=0.5
[ "$(faulted "$SIM_LOG" interim)" -ge 1 ] || fail "interim: no request faulted"
expect_eq "$(want "$SIM_LOG" -e s/^interim\$/malformed/)" "$(classes "$T/many.lt.zst")" \
    "classes with 1000 interim heads"

run few 0 interim=0.5:5
[ "$(faulted "$SIM_LOG" interim)" -ge 1 ] || fail "interim:5: no request faulted"
expect_eq "$(want "$SIM_LOG" -e s/^interim\$/ok/)" "$(classes "$T/few.lt.zst")" "classes with 5 interim heads"
finish

#!/bin/sh
# --slo (analyze, compare, replay --find-max) refuses what names no true
# limit, with exit 2 and the reason: an empty spec (it would pass every
# request, so any load "meets it"), an empty limit between commas, a key
# given twice (which limit holds?), and a percentile finer than --attain
# can ask for; the forms that are right still parse.
set -u
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
"$L" synth --arrivals poisson --rate 2 --requests 20 --in fixed:50 --out fixed:20 --seed 3 -q \
    -o "$T/t.lt.zst" || fail "synth"
"$L" replay "$T/t.lt.zst" --target sim --virtual --rate 2 -q -o "$T/r.lt.zst" 2>"$T/err" ||
    fail "replay --virtual"

refused() { # what, stderr pattern, command...
    what=$1 pat=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    expect_status 2 $? "$what"
    expect_grep "$pat" "$T/err"
}
for spec in '' ',' 'ttft=1s,' ',ttft=1s' 'ttft=1s,,e2e=2s'; do
    pat="empty limit"
    [ -z "$spec" ] && pat="names no limit"
    refused "analyze --slo '$spec'" "$pat" "$L" analyze --slo "$spec" "$T/r.lt.zst"
    refused "compare --slo '$spec'" "$pat" "$L" compare --slo "$spec" "$T/r.lt.zst" "$T/r.lt.zst"
    refused "replay --find-max --slo '$spec'" "$pat" \
        "$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo "$spec" \
        -o "$T/x.lt.zst"
done
for spec in 'ttft=1s,ttft=2s' 'e2e=5s,tpot=10ms,e2e=5s'; do
    refused "analyze --slo '$spec'" "given twice" "$L" analyze --slo "$spec" "$T/r.lt.zst"
    refused "compare --slo '$spec'" "given twice" \
        "$L" compare --slo "$spec" "$T/r.lt.zst" "$T/r.lt.zst"
done
refused "replay --slo ttft=1s,ttft:p90<=2s" "given twice" \
    "$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate \
    --slo 'ttft=1s,ttft:p90<=2s' -o "$T/x.lt.zst"
# --attain takes a share above 0.01 and below 0.9999: a percentile is one
for p in 99.9999999 99.99 100 1 0.5; do
    refused "replay --slo ttft:p$p" "percentile p$p: expected a number above 1 and below 99.99" \
        "$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate \
        --slo "ttft:p$p<=1s" -o "$T/x.lt.zst"
done
refused "replay --attain 0.99999" "--attain '0.99999'" \
    "$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate --slo ttft=1s \
    --attain 0.99999 -o "$T/x.lt.zst"
[ ! -e "$T/x.lt.zst" ] || fail "a refused search wrote its output"

# what is right still parses (LOADTRACE_DRY_RUN stops before any work)
"$L" analyze --slo ttft=1s,tpot=50ms,e2e=10s "$T/r.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "analyze --slo with all three keys"
LOADTRACE_DRY_RUN=1 "$L" replay "$T/t.lt.zst" --target sim --virtual --find-max rate \
    --slo 'ttft:p99.9<=1s,tpot:p99.9<=50ms' -o "$T/x.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "replay --slo at p99.9 (--attain 0.999)"
finish

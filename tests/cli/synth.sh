#!/bin/sh
# synth from distributions: the same seed gives the same bytes and another
# seed other bytes; counts and inter-arrival CVs of Poisson, gamma and
# constant arrivals within statistically justified tolerances; fixed lengths
# exact; rate shapes; sessions; usage errors. Figures are read with
# `info --json` (checked itself against independent awk in info_samples.sh)
# and, for the ramp, with awk over `cat`.
#
# Tolerances: a Poisson count over D seconds at rate R has sd sqrt(R D); we
# allow 4 sd. The sample CV of n gamma gaps with shape k (CV^2 = 1/k) has sd
# about sqrt((k + 1) / (2 k^2 n)) (delta method), i.e. 1/sqrt(n) for
# exponential gaps; we allow 5 sd. The seeds are fixed, so the test is
# deterministic; the tolerances say the figures are right, not lucky.
set -eu
: "${LOADTRACE:?}" "${LT_SRC:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
FLAT="$LT_SRC/tests/cli/json_flat.awk"

get() { awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print "missing" }' "$1"; }
check() {
    if [ "$2" = "$3" ]; then echo "ok   $1 = $3"; else
        echo "FAIL $1: expected $2, got $3" >&2; fails=$((fails + 1)); fi
}
within() { # what expected actual abstol
    if awk -v e="$2" -v a="$3" -v t="$4" 'BEGIN { d = e - a; if (d < 0) d = -d; exit !(a != "missing" && d <= t) }'; then
        echo "ok   $1 = $3 (expected $2 +- $4)"
    else
        echo "FAIL $1: expected $2 +- $4, got $3" >&2; fails=$((fails + 1))
    fi
}
info() { "$LOADTRACE" info --json "$1" | awk -f "$FLAT" > "$1.flat"; }
synth() { "$LOADTRACE" synth -q "$@"; }

# --- determinism ---------------------------------------------------------------
ALL="--arrivals gamma:2 --rate 40 --duration 60s --in lognormal:600,0.8 --out uniform:5,400
     --reasoning 0.3,0.6 --turns uniform:1,5 --think 3s --prefix 0.7,1500,4 --model m --api chat"
# shellcheck disable=SC2086
synth $ALL --seed 7 -o d1.lt.zst
# shellcheck disable=SC2086
synth $ALL --seed 7 -o d2.lt.zst
# shellcheck disable=SC2086
synth $ALL --seed 8 -o d3.lt.zst
if cmp -s d1.lt.zst d2.lt.zst; then echo "ok   same seed, same bytes"; else
    echo "FAIL same seed gave different files" >&2; fails=$((fails + 1)); fi
if cmp -s d1.lt.zst d3.lt.zst; then
    echo "FAIL another seed gave the same file" >&2; fails=$((fails + 1))
else echo "ok   another seed, other bytes"; fi
info d1.lt.zst
r=$(get d1.lt.zst.flat reasoning_share)
within "reasoning share (n ~ 2400, sd 0.01)" 0.3 "$r" 0.05
s=$(get d1.lt.zst.flat sessions.sessions)
check "sessions at most 5 turns" 5 "$(get d1.lt.zst.flat sessions.turns_max)"
awk -v s="$s" 'BEGIN { exit !(s > 100) }' && echo "ok   $s sessions" ||
    { echo "FAIL too few sessions: $s" >&2; fails=$((fails + 1)); }
# Later turns resend the conversation, and 70 % share one of 4 system prompts.
reuse=$(get d1.lt.zst.flat prefix.reuse_share)
awk -v r="$reuse" 'BEGIN { exit !(r > 0.3 && r < 0.95) }' && echo "ok   prefix reuse $reuse" ||
    { echo "FAIL prefix reuse $reuse out of 0.3..0.95" >&2; fails=$((fails + 1)); }
check "model" "$(get d1.lt.zst.flat records)" "$(get d1.lt.zst.flat models.m)"

# --- Poisson: count and CV ----------------------------------------------------
synth --arrivals poisson --rate 50 --duration 400s --in fixed:700 --out fixed:33 --seed 11 -o p.lt.zst
info p.lt.zst
n=$(get p.lt.zst.flat records)
# 1 + Poisson(20000): sd 141
within "poisson count (R D = 20000, 4 sd)" 20001 "$n" 566
within "poisson CV (n = 20000, 5 sd)" 1 "$(get p.lt.zst.flat interarrival.cv)" 0.036
within "poisson mean rate" 50 "$(get p.lt.zst.flat rate_rps)" 2
# fixed lengths are exact
check "fixed input min" 700 "$(get p.lt.zst.flat tokens.in.min)"
check "fixed input max" 700 "$(get p.lt.zst.flat tokens.in.max)"
check "fixed input sum" "$((700 * n))" "$(get p.lt.zst.flat tokens.in.sum)"
check "fixed output min" 33 "$(get p.lt.zst.flat tokens.out.min)"
check "fixed output max" 33 "$(get p.lt.zst.flat tokens.out.max)"
check "fixed output sum" "$((33 * n))" "$(get p.lt.zst.flat tokens.out.sum)"
check "no sessions" 0 "$(get p.lt.zst.flat sessions.records)"

# --- gamma: CV ----------------------------------------------------------------
synth --arrivals gamma:2 --rate 100 --requests 40000 --in fixed:10 --out fixed:10 --seed 12 -o g.lt.zst
info g.lt.zst
check "gamma count (--requests)" 40000 "$(get g.lt.zst.flat records)"
# k = 1/4: sd of the CV = sqrt(10 / 40000) = 0.016
within "gamma:2 CV (5 sd)" 2 "$(get g.lt.zst.flat interarrival.cv)" 0.08
synth --arrivals gamma:0.5 --rate 100 --requests 20000 --in fixed:10 --out fixed:10 --seed 13 -o g2.lt.zst
info g2.lt.zst
# k = 4: sd of the CV = sqrt(5 / 32 / 20000) = 0.0028
within "gamma:0.5 CV (5 sd)" 0.5 "$(get g2.lt.zst.flat interarrival.cv)" 0.015

# --- constant -------------------------------------------------------------------
synth --arrivals constant --rate 30 --duration 10s --in fixed:1 --out fixed:1 -o c.lt.zst
info c.lt.zst
check "constant count (t = 0, 1/30 s, ..., 10 s)" 301 "$(get c.lt.zst.flat records)"
within "constant CV" 0 "$(get c.lt.zst.flat interarrival.cv)" 0.001
within "constant span" 10 "$(get c.lt.zst.flat span_s)" 0.000002

# --- shapes -------------------------------------------------------------------
synth --shape ramp:10,50 --duration 100s --in fixed:5 --out fixed:5 --seed 14 -o r.lt.zst
"$LOADTRACE" cat --no-header r.lt.zst | awk '{
    i = index($0, "\"t\":"); t = substr($0, i + 4) + 0
    if (t < 50000000) a++; else b++ } END { print a + 0, b + 0 }' > r.halves
read a b < r.halves
# expected 10*50 + 40*50^2/200 = 1000 in the first half, 2000 in the second
within "ramp first half (sd 32)" 1000 "$a" 130
within "ramp second half (sd 45)" 2000 "$b" 180
synth --shape diurnal:100s,0.8 --rate 20 --duration 200s --in fixed:5 --out fixed:5 --seed 15 -o u.lt.zst
"$LOADTRACE" cat --no-header u.lt.zst | awk '{
    i = index($0, "\"t\":"); t = substr($0, i + 4) / 1e6
    if (t - 100 * int(t / 100) < 50) a++; else b++ } END { print a + 0, b + 0 }' > u.halves
read a b < u.halves
# rate 20 (1 + 0.8 sin): 2 * (1000 + 20 * 0.8 * 100 / pi) = 3019 in the rising
# half periods, 2 * (1000 - 509) = 981 in the falling ones
within "diurnal high halves (sd 55)" 3019 "$a" 220
within "diurnal low halves (sd 31)" 981 "$b" 125

# --- usage --------------------------------------------------------------------
for args in "--rate 5 --duration 1s --in fixed:1 --out fixed:1" \
            "--rate 5 --in fixed:1 --out fixed:1 -o x.lt.zst" \
            "--rate 5 --duration 1s --in fixed:1 -o x.lt.zst" \
            "--rate 5 --duration 1s --in lognormal:0,1 --out fixed:1 -o x.lt.zst" \
            "--arrivals gamma:-1 --rate 5 --duration 1s --in fixed:1 --out fixed:1 -o x.lt.zst" \
            "--shape ramp:1,2 --in fixed:1 --out fixed:1 --requests 5 -o x.lt.zst" \
            "--arrivals empirical --rate 5 --duration 1s --in fixed:1 --out fixed:1 -o x.lt.zst" \
            "--arrivals gamma:fit --rate 5 --duration 1s --in fixed:1 --out fixed:1 -o x.lt.zst"; do
    st=0
    # shellcheck disable=SC2086
    "$LOADTRACE" synth $args >/dev/null 2>&1 || st=$?
    check "usage error exits 2: synth $args" 2 "$st"
done
st=0; "$LOADTRACE" synth --fit no-such.lt.zst -o x.lt.zst >/dev/null 2>&1 || st=$?
check "missing fit file exits 1" 1 "$st"
"$LOADTRACE" synth --help > help.txt
for opt in --arrivals --rate --duration --requests --shape --round --in --out --reasoning \
           --turns --think --prefix --block-tokens --model --api --fit --fit-sample --seed \
           --output --quiet --help; do
    grep -q -- "$opt" help.txt || { echo "FAIL --help does not list $opt" >&2; fails=$((fails + 1)); }
done

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "all synth checks passed"

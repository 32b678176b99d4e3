#!/bin/sh
# One --arrivals grammar: synth and replay (live or virtual) take the same
# specs with the same CV limits (base/lt_arrivals.h), so a spec one takes
# the other takes too. They used to disagree: replay took gamma:500 and
# gamma:1e-300 (whose shape 1/CV^2 is infinite) that synth refused. Each
# accepted spec is run for real (a small synth, a virtual replay of 5
# requests); each refused one must exit 2 naming the limits, writing
# nothing.
. "$LT_SRC/tests/cli/lib.sh"
cd "$T"
bounded() { timeout 60 "$@"; }
"$LOADTRACE" synth --rate 20 --requests 20 --in fixed:16 --out fixed:4 --seed 1 -o base.lt.zst \
    >/dev/null 2>err.txt || { cat err.txt >&2; fail "the base trace"; finish; }
synth_st() { # spec: synth's exit status
    st=0
    bounded "$LOADTRACE" synth --arrivals "$1" --rate 20 --requests 20 --in fixed:16 \
        --out fixed:4 --seed 1 -o "s.lt.zst" >/dev/null 2>synth_err.txt || st=$?
    echo $st
}
replay_st() { # spec: a virtual replay's exit status
    st=0
    bounded "$LOADTRACE" replay base.lt.zst --target sim --virtual --rate 50 --requests 5 \
        --arrivals "$1" -o "r.lt.zst" >/dev/null 2>replay_err.txt || st=$?
    echo $st
}
# spec, then what both must do: 0 (run) or 2 (refused)
while read -r spec want; do
    rm -f s.lt.zst r.lt.zst
    s=$(synth_st "$spec")
    r=$(replay_st "$spec")
    expect_status "$want" "$s" "synth --arrivals $spec"
    expect_status "$want" "$r" "replay --virtual --arrivals $spec"
    if [ "$want" = 2 ]; then
        expect_grep '0.001 <= CV <= 100' synth_err.txt
        expect_grep '0.001 <= CV <= 100' replay_err.txt
        [ ! -e s.lt.zst ] || fail "synth --arrivals $spec wrote its output"
        [ ! -e r.lt.zst ] || fail "replay --arrivals $spec wrote its output"
    else
        [ -s s.lt.zst ] || fail "synth --arrivals $spec wrote no trace"
        [ -s r.lt.zst ] || fail "replay --arrivals $spec wrote no results"
    fi
done <<'SPECS'
poisson 0
constant 0
gamma:2.5 0
gamma:100 0
gamma:0.001 0
gamma:500 2
gamma:100.5 2
gamma:1e-300 2
gamma:0.0009 2
gamma:0 2
gamma:-1 2
gamma:inf 2
gamma:nan 2
gamma: 2
gamma 2
uniform 2
SPECS
# The fitted forms need synth --fit: replay refuses them plainly.
for spec in empirical gamma:fit; do
    r=$(replay_st "$spec")
    expect_status 2 "$r" "replay --virtual --arrivals $spec"
    expect_grep 'need synth --fit' replay_err.txt
done
finish

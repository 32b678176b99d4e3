#!/bin/sh
# compare of two results files replayed from different traces is no
# comparison of the same requests, and no twin: it says so (a NOTE, no
# "paired" section, traces_differ in the JSON), and --check exits 3. Two
# ways to tell: one trace index asked for different lengths (want_in,
# want_out), which a replay of one trace cannot do, or the headers name
# traces of different names that are not one file. A replay of the same
# trace twice (by another path to the same file) is compared as before, and
# a comparison where no run of A matches a run of B exits 3 under --check.
# Ground truth: the traces are made here, and awk over their JSON lines says
# whether their lengths differ.
set -u
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE
mkdir -p "$T/d1" "$T/d2"
"$L" synth --arrivals poisson --rate 4 --requests 20 --in lognormal:200,0.6 \
    --out lognormal:40,0.5 --seed 1 -q -o "$T/d1/t.lt.zst" || fail "synth 1"
"$L" synth --arrivals poisson --rate 4 --requests 20 --in lognormal:200,0.6 \
    --out lognormal:40,0.5 --seed 2 -q -o "$T/d2/t.lt.zst" || fail "synth 2"
# the two traces really differ in what they ask for (awk, not loadtrace's figures)
"$L" cat "$T/d1/t.lt.zst" | jq -r 'select(.in) | "\(.in) \(.out)"' >"$T/l1"
"$L" cat "$T/d2/t.lt.zst" | jq -r 'select(.in) | "\(.in) \(.out)"' >"$T/l2"
nd=$(paste -d' ' "$T/l1" "$T/l2" | awk '$1 != $3 || $2 != $4 { n++ } END { print n + 0 }')
[ "$nd" -gt 0 ] || fail "the two synthesized traces ask for the same lengths"
vr() { # trace out [flags]
    t=$1 o=$2
    shift 2
    "$L" replay "$t" --target sim --virtual -q -o "$o" "$@" 2>"$T/rerr" || {
        fail "replay --virtual $t"
        sed 's/^/    /' "$T/rerr" >&2
    }
}
vr "$T/d1/t.lt.zst" "$T/a.lt.zst"
vr "$T/d2/t.lt.zst" "$T/b.lt.zst"
(cd "$T" && "$L" replay d1/../d1/t.lt.zst --target sim --virtual -q -o a2.lt.zst 2>/dev/null) ||
    fail "replay --virtual by another path"

# --- the same file name, different traces: the asked lengths tell -------------------
"$L" compare --twin "$T/a.lt.zst" "$T/b.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "compare --twin of different traces, without --check"
expect_grep '^NOTE: A and B are replays of different traces (request [0-9]* of the trace asked for' \
    "$T/out"
expect_no_grep 'paired (the same' "$T/out"
"$L" compare --twin --check "$T/a.lt.zst" "$T/b.lt.zst" >"$T/out" 2>"$T/err"
expect_status 3 $? "compare --twin --check of different traces"
expect_grep 'replayed different traces' "$T/err"
"$L" compare --check "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>&1
expect_status 3 $? "compare --check of different traces"
"$L" compare --json "$T/a.lt.zst" "$T/b.lt.zst" >"$T/j" 2>/dev/null
expect_eq true "$(jq -r .traces_differ "$T/j")" "JSON traces_differ"
expect_eq null "$(jq -r '.runs[0].paired' "$T/j")" "JSON paired of different traces"

# --- different names, same lengths asked: the headers tell ---------------------------
"$L" synth --arrivals poisson --rate 4 --requests 20 --in fixed:100 --out fixed:20 --seed 1 -q \
    -o "$T/f1.lt.zst" || fail "synth f1"
"$L" synth --arrivals poisson --rate 4 --requests 20 --in fixed:100 --out fixed:20 --seed 9 -q \
    -o "$T/f2.lt.zst" || fail "synth f2"
vr "$T/f1.lt.zst" "$T/fa.lt.zst"
vr "$T/f2.lt.zst" "$T/fb.lt.zst"
"$L" compare --twin --check "$T/fa.lt.zst" "$T/fb.lt.zst" >"$T/out" 2>"$T/err"
expect_status 3 $? "compare --twin --check of differently named traces"
expect_grep "^NOTE: A and B are replays of different traces (A's header names the trace $T/f1.lt.zst and B's $T/f2.lt.zst)" \
    "$T/out"

# --- one trace, replayed twice (another path to it): compared, paired, holds ----------
"$L" compare --twin --check "$T/a.lt.zst" "$T/a2.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "compare --twin --check of one trace's two virtual replays"
expect_no_grep 'different traces' "$T/out"
expect_grep 'paired (the same 20 requests in both)' "$T/out"
expect_grep '^twin verdict: holds' "$T/out"

# --- no run of A matches a run of B: --check has nothing to judge --------------------
vr "$T/d1/t.lt.zst" "$T/c.lt.zst" --concurrency 1,2
vr "$T/d1/t.lt.zst" "$T/e.lt.zst" --concurrency 4,8
"$L" compare "$T/c.lt.zst" "$T/e.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "compare without a matching run, without --check"
expect_grep '^no run of A matches a run of B' "$T/out"
"$L" compare --twin --check "$T/c.lt.zst" "$T/e.lt.zst" >"$T/out" 2>"$T/err"
expect_status 3 $? "compare --twin --check without a matching run"
expect_grep 'nothing was judged' "$T/err"
finish

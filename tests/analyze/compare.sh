#!/bin/sh
# loadtrace compare on constructed cases: two traces drawn from the same
# distributions are representative of each other, a constant-length trace is
# not; `synth --fit a` is representative of a (a real sample trace); results
# with latencies scaled by 0.8 are "B better" with paired differences, and
# two seeds of the same configuration are "same". Charts render without a
# gnuplot warning.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
LT=$LOADTRACE

"$LT_GEN" trace "$T/a.lt.zst" 1 && "$LT_GEN" trace "$T/b.lt.zst" 2 && "$LT_GEN" trace "$T/c.lt.zst" 3 const ||
    fail "gen traces"

# --- traces -------------------------------------------------------------------------
"$LT" compare --check "$T/a.lt.zst" "$T/b.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "same distributions, --check"
expect_grep '^overall: B is representative of A' "$T/out"
"$LT" compare --check "$T/a.lt.zst" "$T/c.lt.zst" >"$T/out" 2>"$T/err"
expect_status 3 $? "constant lengths, --check"
expect_grep '^overall: B is NOT representative of A' "$T/out"
expect_grep '^input length (tokens) .* different$' "$T/out"
expect_grep '^output length (tokens) .* different$' "$T/out"
"$LT" compare --json "$T/a.lt.zst" "$T/c.lt.zst" >"$T/out.json"
expect_status 0 $? "compare --json"
expect_eq '"different"' "$(jq '.properties[] | select(.name == "input length") | .verdict' "$T/out.json")" "JSON verdict"
expect_eq '"different"' "$(jq '.overall' "$T/out.json")" "JSON overall"
# KS D of input lengths, from the records: the constant trace has all its
# mass at 1500, so D = max(F_a(1499), 1 - F_a(1500)).
want=$("$LT" cat --no-header "$T/a.lt.zst" | jq -r '.in' |
    awk '{ n++; if ($1 < 1500) lo++; if ($1 <= 1500) le++ } END { a = lo / n; b = 1 - le / n; print (a > b ? a : b) }')
expect_near "$want" "$(jq '.properties[] | select(.name == "input length") | .ks' "$T/out.json")" 0.005 "KS D input"

# synth --fit of a real trace is representative; constant lengths are not.
need_sample AzureLLMInferenceTrace_code.csv
"$LT" import --from azure "$LT_SAMPLES/AzureLLMInferenceTrace_code.csv" -o "$T/real.lt.zst" 2>/dev/null ||
    fail "import sample"
"$LT" synth --fit "$T/real.lt.zst" -o "$T/syn.lt.zst" 2>/dev/null || fail "synth --fit"
"$LT" compare --check "$T/real.lt.zst" "$T/syn.lt.zst" >"$T/out"
expect_status 0 $? "synth --fit is representative"
expect_grep '^overall: B is representative of A' "$T/out"
n=$("$LT" cat --no-header "$T/real.lt.zst" | wc -l | tr -d ' ')
"$LT" synth --in fixed:2048 --out fixed:28 --rate 2.5 --requests "$n" -o "$T/const.lt.zst" 2>/dev/null ||
    fail "synth constant"
"$LT" compare --check "$T/real.lt.zst" "$T/const.lt.zst" >"$T/out"
expect_status 3 $? "constant-length synthetic trace"
expect_grep '^overall: B is NOT representative of A' "$T/out"

# Charts: a CDF overlay and a QQ plot per distribution, no gnuplot warning.
"$LT" compare --plots "$T/plots" --html "$T/cmp.html" "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "compare --plots"
[ -s "$T/err" ] && fail "stderr of compare --plots: $(cat "$T/err")"
for c in interarrival in out reasoning turns; do
    for k in cdf qq; do
        for e in dat gp png svg; do
            [ -s "$T/plots/compare_${c}_$k.$e" ] || fail "missing compare_${c}_$k.$e"
        done
    done
done
expect_grep '<svg' "$T/cmp.html"

# --- results ------------------------------------------------------------------------
"$LT_GEN" level 16 "$T/r1.lt.zst" 1 1.0 && "$LT_GEN" level 16 "$T/r2.lt.zst" 2 1.0 &&
    "$LT_GEN" level 16 "$T/r3.lt.zst" 1 0.8 || fail "gen results"
"$LT" compare --check "$T/r1.lt.zst" "$T/r2.lt.zst" >"$T/out"
expect_status 0 $? "same config"
expect_grep 'B is better on 0, worse (or different) on 0' "$T/out"
expect_grep 'same performance .*: yes' "$T/out"
"$LT" compare --json "$T/r1.lt.zst" "$T/r3.lt.zst" >"$T/r.json"
expect_status 0 $? "compare results --json"
expect_eq '"B better"' "$(jq '.runs[0].metrics[] | select(.name == "TTFT p50") | .verdict' "$T/r.json")" "TTFT p50 verdict"
expect_eq '"same"' "$(jq '.runs[0].metrics[] | select(.name == "mean output length") | .verdict' "$T/r.json")" "output length verdict"
expect_eq 238 "$(jq '.runs[0].paired.pairs' "$T/r.json")" "paired requests"
expect_eq 1 "$(jq '.runs[0].paired.TTFT.b_faster' "$T/r.json")" "B faster for every request"
# TPOT of every request is scaled by 0.8: the paired mean difference is -0.2 TPOT(A).
want=$("$LT" cat --no-header "$T/r1.lt.zst" | jq -rs '[.[] | select(.rec == null and (.warmup | not) and .status == 200)
   | (.end - .ft) / (.out - 1) / 1000] | add / length * -0.2')
expect_near "$want" "$(jq '.runs[0].paired.TPOT.mean_ms' "$T/r.json")" 0.01 "paired TPOT difference"
"$LT" compare --check "$T/r3.lt.zst" "$T/r1.lt.zst" >/dev/null
expect_status 3 $? "B worse, --check"
"$LT" compare --plots "$T/rplots" "$T/r1.lt.zst" "$T/r3.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "compare results --plots"
[ -s "$T/rplots/compare_ttft_a0_b0_qq.png" ] || fail "results QQ plot"

# --- errors -------------------------------------------------------------------------
"$LT" compare "$T/a.lt.zst" "$T/r1.lt.zst" >/dev/null 2>"$T/err"
expect_status 1 $? "trace vs results"
expect_grep 'compare two traces or two results files' "$T/err"
"$LT" compare "$T/a.lt.zst" >/dev/null 2>&1
expect_status 2 $? "one file"
finish

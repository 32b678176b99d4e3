#!/bin/sh
# loadtrace compare's twin table against hand-computable figures: gen_results
# `twin` writes 100 requests with TTFT (k + 1) ms and 10 gaps of 10 + k % 10
# ms each, every latency times SCALE. So A (SCALE 1) has TTFT p50/p90/p99 =
# 50/90/99 ms and TPOT (= every ITL) 14/18/19 ms; B (SCALE 1.2) has them all
# 20 % higher, and the KS distances are D(TTFT) = 1 - 83/100 = 0.17 (at 100
# ms A is done and B has 1.2 (k + 1) <= 100 for k + 1 <= 83) and D(TPOT) =
# 1 - 60/100 = 0.40 (at 19 ms A is done, B has 1.2 (10 + j) <= 19 for j <=
# 5). E2E, throughput and goodput come from the records through awk.
# Checked: the table appears by itself when B's target is sim:virtual and
# only with --twin otherwise, its verdict and --check's exit codes (3 on a
# miss, 0 when it holds, even where B is "worse" as an A/B comparison), the
# JSON, the HTML.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
LT=$LOADTRACE

"$LT_GEN" twin "$T/a.lt.zst" 1 http://gpu:8000 && "$LT_GEN" twin "$T/b.lt.zst" 1.2 sim:virtual &&
    "$LT_GEN" twin "$T/c.lt.zst" 1.04 sim:virtual && "$LT_GEN" twin "$T/d.lt.zst" 1.2 http://gpu:8000 ||
    fail "gen_results twin"

# --- B 20 % slow, a virtual run: the table by itself, a miss ---------------------
"$LT" compare "$T/a.lt.zst" "$T/b.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "compare a b"
expect_grep '^  twin: B as a prediction of A' "$T/out"
expect_grep '^  twin verdict: misses: 9 of 11 figures beyond tolerance' "$T/out"
expect_grep '^twin verdict: misses (0 of 1 matched runs within tolerance)' "$T/out"
"$LT" compare --check "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>&1
expect_status 3 $? "--check on a twin that misses"

"$LT" compare --json --slo ttft=50ms "$T/a.lt.zst" "$T/b.lt.zst" >"$T/b.json"
expect_status 0 $? "compare --json --slo"
tw() { jq -r ".runs[0].twin.$1" "$T/b.json"; }
expect_eq true "$(jq -r .twin "$T/b.json")" "JSON twin"
expect_eq 1 "$(jq -r .twin_misses "$T/b.json")" "JSON twin_misses"
expect_eq misses "$(tw verdict)" "JSON verdict"
# percentiles: the histograms hold 0.1 %, so within 0.2 %
for q in 0 1 2; do
    a=$(echo "50 90 99" | cut -d' ' -f$((q + 1)))
    p=$(echo "14 18 19" | cut -d' ' -f$((q + 1)))
    expect_near "$a" "$(tw "distributions[0].a[$q]")" "$(echo "$a" | awk '{ print $1 * 0.002 }')" "TTFT A q$q"
    expect_near "$(echo "$a" | awk '{ print $1 * 1.2 }')" "$(tw "distributions[0].b[$q]")" \
        "$(echo "$a" | awk '{ print $1 * 0.0025 }')" "TTFT B q$q"
    expect_near "$p" "$(tw "distributions[1].a[$q]")" "$(echo "$p" | awk '{ print $1 * 0.002 }')" "TPOT A q$q"
    expect_near "$p" "$(tw "distributions[2].a[$q]")" "$(echo "$p" | awk '{ print $1 * 0.002 }')" "ITL A q$q"
    for d in 0 1 2 3; do
        expect_near 0.2 "$(tw "distributions[$d].error[$q]")" 0.005 "error of dist $d q$q"
    done
done
expect_near 0.17 "$(tw 'distributions[0].ks')" 0.01 "KS TTFT"
expect_near 0.40 "$(tw 'distributions[1].ks')" 0.01 "KS TPOT"
expect_eq false "$(tw 'distributions[2].judged')" "ITL not judged"
# E2E percentiles (nearest rank), throughput and goodput from the records
figs() { # FILE -> e2e p50 p90 p99 (ms, nearest rank), tok/s, good/s with TTFT <= 50 ms
    "$LT" cat --no-header "$1" | jq -r 'select(.rec != "run") | [(.end - .sent) / 1e3, .sent, .ft, .end, .out] | @tsv' |
        sort -g -k1,1 | awk '{ e[NR] = $1; tok += $5; if ($3 - $2 <= 50000) good++
            if (NR == 1 || $2 < s0) s0 = $2; if ($4 > e1) e1 = $4 }
        function r(p,   k) { k = int(p * NR / 100); if (k < p * NR / 100) k++; return k }
        END { w = (e1 - s0) / 1e6
              printf "%s %s %s %.6f %.6f\n", e[r(50)], e[r(90)], e[r(99)], tok / w, good / w }'
}
set -- $(figs "$T/a.lt.zst")
A50=$1 A90=$2 A99=$3 AT=$4 AG=$5
set -- $(figs "$T/b.lt.zst")
B50=$1 BT=$4 BG=$5
expect_near "$A50" "$(tw 'distributions[3].a[0]')" "$(echo "$A50" | awk '{ print $1 * 0.002 }')" "E2E A p50"
expect_near "$A99" "$(tw 'distributions[3].a[2]')" "$(echo "$A99" | awk '{ print $1 * 0.002 }')" "E2E A p99"
expect_near "$B50" "$(tw 'distributions[3].b[0]')" "$(echo "$B50" | awk '{ print $1 * 0.002 }')" "E2E B p50"
expect_near "$AT" "$(tw throughput.a)" 0.01 "throughput A"
expect_near "$(echo "$AT $BT" | awk '{ print $2 / $1 - 1 }')" "$(tw throughput.error)" 0.0001 "throughput error"
# goodput: 50 of A's requests meet TTFT <= 50 ms, 41 of B's (1.2 (k + 1) <= 50)
expect_near "$AG" "$(tw goodput.a)" 0.001 "goodput A"
expect_near "$(echo "$AG $BG" | awk '{ print $2 / $1 - 1 }')" "$(tw goodput.error)" 0.0001 "goodput error"
expect_near 50 "$(echo "$(tw goodput.a) $(tw throughput.a)" | awk '{ print $1 / $2 * 1100 }')" 0.01 "A: 50 good"
expect_near 41 "$(echo "$(tw goodput.b) $(tw throughput.b)" | awk '{ print $1 / $2 * 1100 }')" 0.01 "B: 41 good"
expect_eq goodput "$(tw worst.figure)" "worst figure (goodput misses by the most)"

# --- B 4 % slow: within every tolerance; --check passes although B is worse ---
"$LT" compare --check "$T/a.lt.zst" "$T/c.lt.zst" >"$T/out" 2>"$T/err"
expect_status 0 $? "--check on a twin that holds"
expect_grep '^  twin verdict: holds: all 11 figures within tolerance' "$T/out"
expect_grep '^twin verdict: holds (1 of 1 matched runs within tolerance)' "$T/out"
"$LT" compare --json "$T/a.lt.zst" "$T/c.lt.zst" >"$T/c.json"
expect_eq holds "$(jq -r '.runs[0].twin.verdict' "$T/c.json")" "JSON holds"
expect_near 0.04 "$(jq -r '.runs[0].twin.distributions[0].error[0]' "$T/c.json")" 0.003 "4 % TTFT p50"

# --- B not virtual: no twin table unless --twin --------------------------------
"$LT" compare "$T/a.lt.zst" "$T/d.lt.zst" >"$T/out" 2>"$T/err"
expect_no_grep 'twin verdict' "$T/out"
expect_eq null "$("$LT" compare --json "$T/a.lt.zst" "$T/d.lt.zst" | jq -r '.runs[0].twin')" "no twin in JSON"
"$LT" compare --twin --check "$T/a.lt.zst" "$T/d.lt.zst" >"$T/out" 2>"$T/err"
expect_status 3 $? "--twin --check"
expect_grep '^  twin verdict: misses' "$T/out"

# --- HTML: the same report, twin table included ---------------------------------
"$LT" compare --html "$T/r.html" "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "compare --html"
expect_grep 'twin verdict: misses' "$T/r.html"

# --- bad usage ------------------------------------------------------------------
"$LT" compare --slo ttft=fast "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>"$T/err"
expect_status 2 $? "bad --slo"
expect_grep 'slo' "$T/err"
"$LT" synth --arrivals poisson --rate 5 --requests 20 --in fixed:10 --out fixed:10 -q \
    -o "$T/t1.lt.zst" || fail "synth"
cp "$T/t1.lt.zst" "$T/t2.lt.zst"
"$LT" compare --twin "$T/t1.lt.zst" "$T/t2.lt.zst" >/dev/null 2>"$T/err"
expect_status 1 $? "--twin of two traces"
expect_grep 'twin compares results with results' "$T/err"
finish

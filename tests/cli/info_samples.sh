#!/bin/sh
# info on the real sample traces, checked against figures computed here
# independently with awk from the ORIGINAL files (not from loadtrace's own
# output): for the Azure code and conv traces, count, span, inter-arrival
# mean and CV, peak per second and per minute, exact token percentiles and
# means, with the timestamps parsed in (POSIX) awk; for Mooncake, count, span, timestamp rounding and
# sharing, and prefix reuse from its hash_ids; for BurstGPT, failed rows and
# models by column name.
set -eu
: "${LOADTRACE:?}" "${LT_SAMPLES:?}" "${LT_SRC:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
FLAT="$LT_SRC/tests/cli/json_flat.awk"

need() {
    [ -f "$LT_SAMPLES/$1" ] || { echo "FAIL: sample $LT_SAMPLES/$1 is missing" >&2; exit 1; }
}

# get FILE PATH: a value of flattened info --json output
get() { awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print "missing" }' "$1"; }

check() { # what expected actual
    if [ "$2" = "$3" ]; then
        echo "ok   $1 = $3"
    else
        echo "FAIL $1: expected $2, got $3" >&2
        fails=$((fails + 1))
    fi
}

near() { # what expected actual reltol [abstol]
    if awk -v e="$2" -v a="$3" -v r="$4" -v z="${5:-0}" 'BEGIN {
            d = e - a; if (d < 0) d = -d; m = e < 0 ? -e : e
            exit !(a != "missing" && d <= r * m + z) }'; then
        echo "ok   $1 = $3 (independent: $2)"
    else
        echo "FAIL $1: independent $2, info says $3 (tolerance $4 relative)" >&2
        fails=$((fails + 1))
    fi
}

# A histogram percentile may exceed the exact one by at most 1/2^10 of it
# (3 significant digits, lt_hist.h), never fall below it.
pct_ok() { # what exact got
    if awk -v e="$2" -v g="$3" 'BEGIN { exit !(g != "missing" && g >= e && g - e <= e / 1024) }'; then
        echo "ok   $1 = $3 (exact: $2)"
    else
        echo "FAIL $1: exact $2, info says $3" >&2
        fails=$((fails + 1))
    fi
}

# exact_pct FILE P: the value of rank ceil(P/100 * n) of the numbers in FILE
exact_pct() {
    sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END {
        x = p / 100 * NR; r = int(x); if (r < x) r++; if (r < 1) r = 1; print v[r] }'
}

# --- Azure code and conv: burstiness -----------------------------------------
# azure NAME: import the sample, compute the figures from the CSV, compare.
azure() {
    f=AzureLLMInferenceTrace_$1.csv
    need "$f"
    "$LOADTRACE" import --from azure "$LT_SAMPLES/$f" -o az.lt.zst 2>/dev/null
    "$LOADTRACE" info --json az.lt.zst | awk -f "$FLAT" > az.flat
    "$LOADTRACE" info az.lt.zst > az.txt
    # Timestamps like 2023-11-16 18:17:03.9799600 to microseconds, in awk:
    # days from the civil date (H. Hinnant's algorithm), fraction rounded to us.
    awk -F, '
    function days(y, m, d,   era, yoe, doy) {
        y -= (m <= 2); era = int(y / 400); yoe = y - era * 400
        doy = int((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
        return era * 146097 + yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy - 719468
    }
    NR == 1 { next }
    {
        sub(/\r$/, "")
        split($1, p, /[-: ]/); split(p[6], s, ".")
        frac = s[2] "0000000"; us = substr(frac, 1, 6) + 0
        if (substr(frac, 7, 1) + 0 >= 5) us++
        t = ((days(p[1] + 0, p[2] + 0, p[3] + 0) * 24 + p[4]) * 60 + p[5]) * 60 + s[1]
        printf "%.0f %s %s\n", t * 1e6 + us, $2, $3
    }' "$LT_SAMPLES/$f" > az.rows
    awk '{ print $2 }' az.rows > az.in
    awk '{ print $3 }' az.rows > az.out
    awk '
    NR == 1 { t0 = $1 }
    { t[NR] = $1 - t0; sec[int(t[NR] / 1e6)]++; mn[int(t[NR] / 6e7)]++ }
    END {
        n = NR; span = t[n] - t[1]; mean = span / (n - 1)
        for (i = 2; i <= n; i++) { g = t[i] - t[i - 1] - mean; ss += g * g }
        sd = sqrt(ss / (n - 1))
        for (k in sec) if (sec[k] > ps) ps = sec[k]
        for (k in mn) if (mn[k] > pm) pm = mn[k]
        printf "%d %.6f %.9g %.6g %d %d\n", n, span / 1e6, mean / 1e6, sd / mean, ps, pm
    }' az.rows > az.ind
    read n span gmean cv ps pm < az.ind
    check "azure $1 records" "$n" "$(get az.flat records)"
    near "azure $1 span_s" "$span" "$(get az.flat span_s)" 1e-9 1e-6
    near "azure $1 inter-arrival mean_s" "$gmean" "$(get az.flat interarrival.mean_s)" 1e-7
    near "azure $1 inter-arrival cv" "$cv" "$(get az.flat interarrival.cv)" 1e-4
    check "azure $1 peak per second" "$ps" "$(get az.flat peak.per_second)"
    check "azure $1 peak per minute" "$pm" "$(get az.flat peak.per_minute)"
    near "azure $1 rate" "$(awk -v n="$n" -v s="$span" 'BEGIN { printf "%.6g", (n - 1) / s }')" \
        "$(get az.flat rate_rps)" 1e-5
    for p in 50 90 99; do
        pct_ok "azure $1 input p$p" "$(exact_pct az.in $p)" "$(get az.flat tokens.in.p$p)"
        pct_ok "azure $1 output p$p" "$(exact_pct az.out $p)" "$(get az.flat tokens.out.p$p)"
    done
    check "azure $1 input max" "$(sort -n az.in | tail -1)" "$(get az.flat tokens.in.max)"
    check "azure $1 output max" "$(sort -n az.out | tail -1)" "$(get az.flat tokens.out.max)"
    near "azure $1 input mean" "$(awk '{ s += $1 } END { printf "%.6g", s / NR }' az.in)" \
        "$(get az.flat tokens.in.mean)" 1e-5
    near "azure $1 output mean" "$(awk '{ s += $1 } END { printf "%.6g", s / NR }' az.out)" \
        "$(get az.flat tokens.out.mean)" 1e-5
}
azure conv
azure code
# The code trace is known for its burstiness: CV about 13, shown in the text.
near "azure code cv is about 13" 13 "$(get az.flat interarrival.cv)" 0.1
grep -q "CV 13" az.txt && echo "ok   text output shows CV 13" ||
    { echo "FAIL text output does not show the CV" >&2; fails=$((fails + 1)); }

# --- Mooncake: rounding and prefix reuse -------------------------------------
need mooncake_synthetic_trace.jsonl
"$LOADTRACE" import --from mooncake "$LT_SAMPLES/mooncake_synthetic_trace.jsonl" -o mc.lt.zst 2>/dev/null
"$LOADTRACE" info --json mc.lt.zst | awk -f "$FLAT" > mc.flat
awk '
{
    line = $0
    i = index(line, "\"timestamp\":"); ts = substr(line, i + 12) + 0
    if (NR == 1) t0 = ts
    rel = (ts - t0) * 1000; last = rel; same[rel]++; n++
    i = index(line, "\"hash_ids\":"); s = substr(line, i + 11)
    s = substr(s, index(s, "[") + 1); s = substr(s, 1, index(s, "]") - 1)
    gsub(/ /, "", s)
    k = (s == "") ? 0 : split(s, ids, ",")
    prefix = 1
    for (j = 1; j <= k; j++) {
        blocks++
        if (ids[j] in seen) { reused++; if (prefix) hit++ } else prefix = 0
        seen[ids[j]] = 1
    }
    for (g = 1e6; g >= 1; g /= 10) if (rel % g == 0) break
    if (g < mg || n == 1) mg = g
}
END {
    for (r in same) if (same[r] > 1) shared += same[r]
    if (mg == 0 || mg > 1e6) mg = 1e6
    printf "%d %.6f %d %d %d %.6f %.6f\n", n, last / 1e6, mg, shared, blocks, reused / blocks, hit / blocks
}' "$LT_SAMPLES/mooncake_synthetic_trace.jsonl" > mc.ind
read n span gran shared blocks reuse hit < mc.ind
check "mooncake records" "$n" "$(get mc.flat records)"
near "mooncake span_s" "$span" "$(get mc.flat span_s)" 1e-9 1e-6
check "mooncake timestamp granularity (us)" "$gran" "$(get mc.flat timestamps.granularity_us)"
check "mooncake requests sharing a timestamp" "$shared" "$(get mc.flat timestamps.shared)"
check "mooncake blocks" "$blocks" "$(get mc.flat prefix.blocks)"
near "mooncake prefix reuse share" "$reuse" "$(get mc.flat prefix.reuse_share)" 1e-5
near "mooncake prefix hit share" "$hit" "$(get mc.flat prefix.prefix_hit_share)" 1e-5

# --- BurstGPT: failed rows and models, columns by name ---------------------
need BurstGPT_1_first400.csv
"$LOADTRACE" import --from burstgpt "$LT_SAMPLES/BurstGPT_1_first400.csv" -o bg.lt.zst 2>/dev/null
"$LOADTRACE" info --json bg.lt.zst | awk -f "$FLAT" > bg.flat
awk -F, '
NR == 1 { for (i = 1; i <= NF; i++) { sub(/\r$/, "", $i); col[$i] = i }; next }
{
    sub(/\r$/, "")
    if ($(col["Request tokens"]) + 0 == 0 && $(col["Response tokens"]) + 0 == 0) failed++
    model[$(col["Model"])]++; n++
}
END { printf "%d %d %d %d\n", n, failed + 0, model["ChatGPT"] + 0, model["GPT-4"] + 0 }
' "$LT_SAMPLES/BurstGPT_1_first400.csv" > bg.ind
read n failed chatgpt gpt4 < bg.ind
check "burstgpt records" "$n" "$(get bg.flat records)"
check "burstgpt failed" "$failed" "$(get bg.flat failed)"
check "burstgpt model ChatGPT" "$chatgpt" "$(get bg.flat models.ChatGPT)"
check "burstgpt model GPT-4" "$gpt4" "$(get bg.flat models.GPT-4)"
check "burstgpt granularity (whole seconds)" 1000000 "$(get bg.flat timestamps.granularity_us)"

# --- usage -------------------------------------------------------------------
st=0; "$LOADTRACE" info >/dev/null 2>&1 || st=$?
check "info without a file exits 2" 2 "$st"
st=0; "$LOADTRACE" info no-such-file.lt.zst >/dev/null 2>&1 || st=$?
check "info on a missing file exits 1" 1 "$st"
"$LOADTRACE" info --help | grep -q -- "--json" && echo "ok   --help lists --json" ||
    { echo "FAIL --help does not list --json" >&2; fails=$((fails + 1)); }

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "all info checks passed"

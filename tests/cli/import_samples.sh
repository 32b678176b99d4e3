#!/bin/sh
# import of every real sample trace, checked against figures computed here,
# independently, with awk over the original files: record counts, first and
# last arrival, token sums, failed rows (BurstGPT), and columns found by name
# wherever they stand.
set -eu
: "${LOADTRACE:?}" "${LT_SAMPLES:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0

need() {
    [ -f "$LT_SAMPLES/$1" ] || { echo "FAIL: sample $LT_SAMPLES/$1 is missing" >&2; exit 1; }
}

check() { # what expected actual
    if [ "$2" = "$3" ]; then
        echo "ok   $1 = $3"
    else
        echo "FAIL $1: expected $2, got $3" >&2
        fails=$((fails + 1))
    fi
}

# Plain POSIX awk throughout (no gawk extensions): the value of a numeric
# JSON key on a compact line, or "" when absent.
AWKLIB='
function num(line, key,   i, s) {
    i = index(line, "\"" key "\":")
    if (!i) return ""
    s = substr(line, i + length(key) + 3)
    sub(/^ */, "", s)
    match(s, /^-?[0-9]+/)
    return substr(s, 1, RLENGTH)
}'

# Figures of an imported trace, read from `cat` (compact JSON, one record a
# line): records first_t last_t sum_in sum_out failed sum_t
figures() {
    "$LOADTRACE" cat --no-header "$1" | awk "$AWKLIB"'
        { n++; t = num($0, "t"); if (n == 1) first = t; last = t; st += t
          si += num($0, "in"); so += num($0, "out")
          if (index($0, "\"failed\":true")) f++ }
        END { printf "%d %.0f %.0f %.0f %.0f %d %.0f\n", n, first, last, si, so, f, st }'
}

# ---- Azure: TIMESTAMP (7 fractional digits, UTC), ContextTokens, GeneratedTokens
for s in code conv; do
    f=AzureLLMInferenceTrace_$s.csv
    need "$f"
    "$LOADTRACE" import --from azure "$LT_SAMPLES/$f" -o "az_$s.lt.zst" 2>"az_$s.err"
    cat "az_$s.err"
    zstd -tq "az_$s.lt.zst" || { echo "FAIL: zstd cannot read az_$s.lt.zst" >&2; fails=$((fails + 1)); }
    want=$(awk -F, '
        # days from 1970-01-01 (proleptic Gregorian), then microseconds;
        # the 7th fractional digit rounds
        function days(y, m, d,   a) {
            if (m <= 2) { y--; m += 12 }
            return 365 * y + int(y / 4) - int(y / 100) + int(y / 400) + int((153 * (m - 3) + 2) / 5) + d - 719469
        }
        function us(ts,   d, frac) {
            split(ts, d, /[-: .]/)
            frac = substr(d[7] "0000000", 1, 7) + 0
            return ((days(d[1] + 0, d[2] + 0, d[3] + 0) * 24 + d[4]) * 60 + d[5]) * 60e6 + d[6] * 1e6 + int((frac + 5) / 10)
        }
        NR > 1 { n++; u = us($1); if (n == 1) first = u; last = u; st += u - first; si += $2; so += $3 + 0 }
        END { printf "%d %d %.0f %.0f %.0f %d %.0f\n", n, 0, last - first, si, so, 0, st }' "$LT_SAMPLES/$f")
    check "azure $s: records first_t last_t in out failed sum_t" "$want" "$(figures "az_$s.lt.zst")"
    # the header keeps where the trace came from
    "$LOADTRACE" cat "az_$s.lt.zst" | head -1 | grep -q "\"file\":\"$f\",\"format\":\"azure\",\"start\":\"2023-11-16T18:1" ||
        { echo "FAIL: azure $s header meta" >&2; fails=$((fails + 1)); }
done

# ---- BurstGPT: Timestamp (s from start), Model, Request/Response tokens, ...
f=BurstGPT_1_first400.csv
need "$f"
"$LOADTRACE" import --from burstgpt "$LT_SAMPLES/$f" -o bg.lt.zst 2>bg.err
cat bg.err
want=$(awk -F, 'NR > 1 { n++; if (n == 1) first = $1; last = $1; st += ($1 - first) * 1000000; si += $3; so += $4; if ($4 == 0) f++ }
    END { printf "%d %d %.0f %.0f %.0f %d %.0f\n", n, 0, (last - first) * 1000000, si, so, f, st }' "$LT_SAMPLES/$f")
check "burstgpt: records first_t last_t in out failed sum_t" "$want" "$(figures bg.lt.zst)"
grep -q "17 marked failed" bg.err || { echo "FAIL: summary does not count failed rows" >&2; fails=$((fails + 1)); }
check "burstgpt: models" "$(awk -F, 'NR > 1 { print $2 }' "$LT_SAMPLES/$f" | sort | uniq -c | tr -s ' ')" \
    "$("$LOADTRACE" cat --no-header bg.lt.zst | sed 's/.*"model":"\([^"]*\)".*/\1/' | sort | uniq -c | tr -s ' ')"

# Another release's layout: columns moved and new ones in the middle.
awk -F, -v OFS=, 'NR == 1 { print "Model", "Session ID", $1, "Elapsed time", $4, $3, $5, $6; next }
    { print $2, NR % 7, $1, "1.5", $4, $3, $5, $6 }' "$LT_SAMPLES/$f" >bg_moved.csv
"$LOADTRACE" import -q --from burstgpt bg_moved.csv -o bg_moved.lt.zst
check "burstgpt, columns moved: records first_t last_t in out failed sum_t" "$want" "$(figures bg_moved.lt.zst)"
"$LOADTRACE" cat --no-header bg.lt.zst >bg.rec
"$LOADTRACE" cat --no-header bg_moved.lt.zst | sed 's/"session":[0-9]*,//; s/,"Elapsed time":"1.5"//' >bg_moved.rec
cmp bg.rec bg_moved.rec || { echo "FAIL: moved columns give other records" >&2; fails=$((fails + 1)); }
check "burstgpt, columns moved: sessions kept" "$(awk -F, 'NR > 1 { s += $2 } END { print s }' bg_moved.csv)" \
    "$("$LOADTRACE" cat --no-header bg_moved.lt.zst | awk "$AWKLIB"'{ s += num($0, "session") } END { print s }')"

# ---- Mooncake: timestamp (ms), input_length, output_length, hash_ids
f=mooncake_synthetic_trace.jsonl
need "$f"
"$LOADTRACE" import --from mooncake "$LT_SAMPLES/$f" -o mc.lt.zst 2>mc.err
cat mc.err
want=$(awk "$AWKLIB"'{ n++; ts = num($0, "timestamp"); if (n == 1) first = ts; last = ts; st += (ts - first) * 1000
        si += num($0, "input_length"); so += num($0, "output_length") }
    END { printf "%d %d %.0f %.0f %.0f %d %.0f\n", n, 0, (last - first) * 1000, si, so, 0, st }' "$LT_SAMPLES/$f")
check "mooncake: records first_t last_t in out failed sum_t" "$want" "$(figures mc.lt.zst)"
check "mooncake: hash ids" "$(awk -F'[][]' '{ n += split($2, a, ",") } END { print n }' "$LT_SAMPLES/$f")" \
    "$("$LOADTRACE" cat --no-header mc.lt.zst | awk -F'[][]' '{ n += split($2, a, ",") } END { print n }')"
"$LOADTRACE" cat mc.lt.zst | head -1 | grep -q '"block_tokens":512' ||
    { echo "FAIL: mooncake header lacks block_tokens 512" >&2; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] || { echo "$fails checks failed" >&2; exit 1; }
echo "all import sample checks passed"

#!/bin/sh
# export: Mooncake lines for traces with 512-token blocks, other block
# sizes and no blocks; jsonl; and the errors (a record without in, a
# results file, a missing file, a damaged frame after intact ones).
set -eu
: "${LOADTRACE:?}" "${LT_SAMPLES:?}" "${LT_SRC:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# A trace without blocks (Azure): every record gets ceil(in/512) fresh ids,
# numbered from 0 and never repeated; timestamps are t in ms, rounded.
f="$LT_SAMPLES/AzureLLMInferenceTrace_code.csv"
[ -f "$f" ] || { echo "FAIL: sample $f is missing" >&2; exit 1; }
"$LOADTRACE" import -q --from azure "$f" -o az.lt.zst
"$LOADTRACE" export --to mooncake az.lt.zst -o az.jsonl 2>err.txt
grep -q '8819 records written to az.jsonl; 8819 without blocks got fresh hash_ids' err.txt || fail "summary: $(cat err.txt)"
awk -F'[][]' '{ n = split($2, a, ", "); if ($2 == "") n = 0
        match($0, /"input_length": [0-9]+/); in_ = substr($0, RSTART + 16, RLENGTH - 16) + 0
        if (n != int((in_ + 511) / 512)) { print "line " NR ": " n " ids for " in_ " tokens"; bad++ }
        for (i = 1; i <= n; i++) if (a[i] != next_id++) { print "line " NR ": id " a[i]; bad++ } }
    END { exit bad > 0 }' az.jsonl && echo "ok   fresh ids: ceil(in/512) each, sequential, unique" || fail "fresh ids"
# timestamps: the same awk figures as import_samples.sh, in ms
want=$("$LOADTRACE" cat --no-header az.lt.zst | awk -F'[:,]' '{ printf "%d\n", ($2 + 500) / 1000 }' | cksum)
got=$(awk -F'[:,]' '{ print $2 + 0 }' az.jsonl | cksum)
[ "$want" = "$got" ] && echo "ok   timestamps are t in ms, rounded" || fail "timestamps"

# Blocks of 256 tokens are re-cut into 512-token ones: equal prefixes give
# equal ids, different ones different ids.
cat >b256.jsonl <<'JL'
{"format":"loadtrace","version":1,"kind":"trace","created":"2026-01-01T00:00:00Z","source":"test","block_tokens":256}
{"t":0,"in":1000,"out":5,"blocks":[1,2,3,4]}
{"t":1000,"in":700,"out":5,"blocks":[1,2,9]}
{"t":2000,"in":1000,"out":5,"blocks":[1,2,3,4]}
{"t":3000,"in":10,"out":5,"blocks":[7]}
JL
"$LOADTRACE" import -q --from jsonl b256.jsonl -o b256.lt.zst
"$LOADTRACE" export -q --to mooncake b256.lt.zst >b256.out
awk -F'[][]' '{ n[NR] = split($2, a, ", "); for (i = 1; i <= n[NR]; i++) id[NR, i] = a[i] }
    END { ok = n[1] == 2 && n[2] == 2 && n[3] == 2 && n[4] == 1
          ok = ok && id[1, 1] == id[2, 1] && id[1, 2] != id[2, 2] && id[1, 1] == id[3, 1] && id[1, 2] == id[3, 2]
          ok = ok && id[4, 1] != id[1, 1]
          exit !ok }' b256.out && echo "ok   256-token blocks re-cut to 512" || { fail "re-cut"; cat b256.out >&2; }

# jsonl is cat
"$LOADTRACE" export -q --to jsonl b256.lt.zst | cmp -s - b256.jsonl && echo "ok   export --to jsonl" || fail "export --to jsonl"

# errors
printf '%s\n' '{"t":0,"in":1,"out":1}' '{"t":1,"out":1}' >noin.jsonl
"$LOADTRACE" import -q --from jsonl noin.jsonl -o noin.lt.zst
if "$LOADTRACE" export --to mooncake noin.lt.zst -o noin.out 2>err.txt; then
    fail "record without in exported"
else
    grep -qF 'noin.lt.zst: record 1 (t=1 us) has no "in"' err.txt && echo "ok   $(cat err.txt)" || fail "no-in message: $(cat err.txt)"
    [ ! -e noin.out ] || fail "partial export left behind"
fi
if "$LOADTRACE" export --to mooncake no-such.lt.zst 2>err.txt; then fail "missing file"; else
    grep -q 'no-such.lt.zst' err.txt && echo "ok   $(cat err.txt)" || fail "missing file message: $(cat err.txt)"
fi
# A damaged trace to standard output: the header and the 200 records before
# the damaged frame are written (as `cat` prints them), the status is 1.
if "$LOADTRACE" export --to jsonl "$LT_SRC/tests/fuzz/corpus/reader/corrupt2.lt.zst" >dmg.jsonl 2>err.txt; then
    fail "damaged trace exported"
else
    [ "$(wc -l <dmg.jsonl | tr -d ' ')" = 201 ] || fail "lines before the damage: $(wc -l <dmg.jsonl)"
    grep -q 'frame at byte' err.txt || fail "damage message: $(cat err.txt)"
fi
"$LOADTRACE" export --to csv az.lt.zst 2>/dev/null && fail "bad --to accepted" || [ $? -eq 2 ] || fail "bad --to: status not 2"

[ "$fails" -eq 0 ] || { echo "$fails checks failed" >&2; exit 1; }
echo "all export checks passed"

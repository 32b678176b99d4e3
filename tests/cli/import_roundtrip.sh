#!/bin/sh
# Round trips without loss: import -> cat -> import --from jsonl -> cat is
# byte-for-byte the same for every sample and for a hand-made file with
# every field (msgs, tools, calls, blocks, orig, text, unknown keys, 64-bit
# values); export --to jsonl is cat; Mooncake -> import -> export --to
# mooncake gives the original file back; --sort and standard input work.
set -eu
: "${LOADTRACE:?}" "${LT_SAMPLES:?}" "${LT_SRC:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

for spec in azure:AzureLLMInferenceTrace_code.csv azure:AzureLLMInferenceTrace_conv.csv \
    burstgpt:BurstGPT_1_first400.csv mooncake:mooncake_synthetic_trace.jsonl; do
    fmt=${spec%%:*}
    f=${spec#*:}
    [ -f "$LT_SAMPLES/$f" ] || { echo "FAIL: sample $LT_SAMPLES/$f is missing" >&2; exit 1; }
    "$LOADTRACE" import -q --from "$fmt" "$LT_SAMPLES/$f" -o a.lt.zst
    "$LOADTRACE" cat a.lt.zst >a.jsonl
    "$LOADTRACE" import -q --from jsonl a.jsonl -o b.lt.zst
    "$LOADTRACE" cat b.lt.zst >b.jsonl
    if cmp -s a.jsonl b.jsonl; then echo "ok   $f: cat | import --from jsonl | cat is identical"; else fail "$f: jsonl round trip differs"; fi
    "$LOADTRACE" export -q --to jsonl a.lt.zst >c.jsonl
    cmp -s a.jsonl c.jsonl && echo "ok   $f: export --to jsonl = cat" || fail "$f: export --to jsonl differs from cat"
    # the same through standard input and output
    "$LOADTRACE" import -q --from "$fmt" - -o - <"$LT_SAMPLES/$f" | "$LOADTRACE" cat --no-header - >d.jsonl
    tail -n +2 a.jsonl | cmp -s - d.jsonl && echo "ok   $f: through stdin/stdout" || fail "$f: stdin/stdout import differs"
done

# Mooncake's own format comes back byte for byte.
"$LOADTRACE" import -q --from mooncake "$LT_SAMPLES/mooncake_synthetic_trace.jsonl" -o mc.lt.zst
"$LOADTRACE" export -q --to mooncake mc.lt.zst -o mc.jsonl
cmp -s mc.jsonl "$LT_SAMPLES/mooncake_synthetic_trace.jsonl" && echo "ok   mooncake -> import -> export is the original" ||
    fail "mooncake export differs from the original"

# Every field, unknown keys, numbers above INT64_MAX, NUL in text.
ef="$LT_SRC/tests/cli/data/every_field.jsonl"
"$LOADTRACE" import -q --from jsonl "$ef" -o ef.lt.zst
"$LOADTRACE" cat ef.lt.zst >ef.jsonl
cmp -s "$ef" ef.jsonl && echo "ok   every_field.jsonl: import | cat is identical" || { fail "every_field.jsonl round trip"; diff "$ef" ef.jsonl >&2 || true; }
zstd -dc ef.lt.zst >/dev/null || fail "zstd cannot read ef.lt.zst"

# Without a header line, jsonl gets a fresh header; records stay as they are.
tail -n +2 "$ef" >nohdr.jsonl
if "$LOADTRACE" import -q --from jsonl nohdr.jsonl -o nohdr.lt.zst 2>err.txt; then
    fail "blocks without a block size accepted"
else
    grep -qF 'nohdr.jsonl:1: a record with "blocks", but no header line says how many tokens a block holds' err.txt &&
        echo "ok   $(cat err.txt)" || fail "blocks without a size: $(cat err.txt)"
fi
"$LOADTRACE" import -q --from jsonl --block-tokens 16 nohdr.jsonl -o nohdr.lt.zst
"$LOADTRACE" cat nohdr.lt.zst | head -1 | grep -q '"source":"import:jsonl","block_tokens":16,"meta":{"file":"nohdr.jsonl","format":"jsonl"}' &&
    echo "ok   header made for headerless jsonl" || fail "headerless jsonl header"
"$LOADTRACE" cat --no-header nohdr.lt.zst | cmp -s - nohdr.jsonl && echo "ok   headerless jsonl records identical" || fail "headerless jsonl records"

# --sort: shuffled input comes out in arrival order, ties in input order.
printf '%s\n' 'TIMESTAMP,ContextTokens,GeneratedTokens' \
    '2024-05-01 00:00:02.5,3,30' '2024-05-01 00:00:01,1,10' '2024-05-01 00:00:02.5,4,40' \
    '2024-05-01 00:00:00.0000005,2,20' >shuf.csv
"$LOADTRACE" import -q --from azure --sort shuf.csv -o shuf.lt.zst
got=$("$LOADTRACE" cat shuf.lt.zst | tr '\n' ' ')
want='{"format":"loadtrace","version":1,"kind":"trace","created":"'
case "$got" in "$want"*) ;; *) fail "--sort header: $got" ;; esac
got=$("$LOADTRACE" cat --no-header shuf.lt.zst | tr '\n' ' ')
want='{"t":0,"in":2,"out":20} {"t":999999,"in":1,"out":10} {"t":2499999,"in":3,"out":30} {"t":2499999,"in":4,"out":40} '
[ "$got" = "$want" ] && echo "ok   --sort" || fail "--sort gave: $got"
"$LOADTRACE" cat shuf.lt.zst | head -1 | grep -q '"start":"2024-05-01T00:00:00.000001Z"' &&
    echo "ok   --sort: header start is the earliest row" || fail "--sort header start"

[ "$fails" -eq 0 ] || { echo "$fails checks failed" >&2; exit 1; }
echo "all round trips passed"

#!/bin/sh
# Size of each shared real trace stored as .lt.zst against its original
# file (and, for Mooncake, its JSONL), after `loadtrace import`.
# usage: trace_sizes.sh LOADTRACE SAMPLES_DIR OUT_DIR
set -eu
LT="$1"; S="$2"; OUT="$3"
size() { wc -c <"$1" | tr -d ' '; }
for spec in azure:AzureLLMInferenceTrace_code.csv azure:AzureLLMInferenceTrace_conv.csv \
            burstgpt:BurstGPT_1_first400.csv mooncake:mooncake_synthetic_trace.jsonl; do
    from=${spec%%:*}; f=${spec#*:}
    "$LT" import --from "$from" "$S/$f" -o "$OUT/$f.lt.zst" 2>/dev/null
    "$LT" cat "$OUT/$f.lt.zst" >"$OUT/$f.cat.jsonl"
    o=$(size "$S/$f"); z=$(size "$OUT/$f.lt.zst"); j=$(size "$OUT/$f.cat.jsonl")
    awk -v f="$f" -v o="$o" -v z="$z" -v j="$j" 'BEGIN {
        printf "%-36s original %8d B  .lt.zst %7d B  ratio 1/%.1f  (loadtrace JSONL %8d B, 1/%.1f)\n",
               f, o, z, o / z, j, j / z }'
done

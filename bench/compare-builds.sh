#!/bin/sh
# Two builds side by side in one run (say, the last release and this tree):
#   sh bench/compare-builds.sh OLD_BUILD NEW_BUILD [OUT_DIR]
# First the CPU-bound work counted in instructions by callgrind, which a
# busy, shared machine does not disturb (the same binary and input give the
# same count): trace I/O, analyze's pass, import, a virtual replay. Then the
# live client's CPU per streamed chunk, in CPU seconds (load moves these a
# little), old and new alternating three times against one sim.
set -eu
OLD=$(cd "${1:?usage: compare-builds.sh OLD_BUILD NEW_BUILD [OUT_DIR]}" && pwd)
NEW=$(cd "${2:?usage: compare-builds.sh OLD_BUILD NEW_BUILD [OUT_DIR]}" && pwd)
OUT=${3:-$(mktemp -d)}
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ); load: $(cut -d' ' -f1-3 /proc/loadavg)"

ir() { # instructions of one command, from callgrind
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" "$@" >/dev/null 2>"$OUT/cg.err"
    sed -n 's/^summary: *//p' "$OUT/cg.out"
}
row() { # label old-command... -- new-command...: one row of instruction counts
    label=$1
    shift
    old_cmd=""
    while [ "$1" != "--" ]; do old_cmd="$old_cmd '$1'"; shift; done
    shift
    o=$(eval "ir $old_cmd")
    n=$(ir "$@")
    awk -v l="$label" -v o="$o" -v n="$n" \
        'BEGIN { printf "| %s | %.1f M | %.1f M | %+.1f %% |\n", l, o / 1e6, n / 1e6, (n / o - 1) * 100 }'
}

# The engines are compared on the same work: a build that scrapes the
# server's metrics by default (virtual replays record the model's too) is
# told not to, when it knows the option.
NOSCRAPE=""
"$NEW/loadtrace" replay --help 2>/dev/null | grep -q -- --no-server-metrics && NOSCRAPE=--no-server-metrics
echo "| work | old | new | change |"
echo "|---|---|---|---|"
row "trace I/O: write and read 200,000 records" "$OLD/bench/bench_trace_io" 200000 "$OUT" -- \
    "$NEW/bench/bench_trace_io" 200000 "$OUT"
"$NEW/bench/bench_analyze" gen "$OUT/a.lt.zst" 50000 0 seq >/dev/null
"$NEW/bench/bench_analyze" gen "$OUT/c8.lt.zst" 20000 8 >/dev/null
row "analyze: 50,000 results" "$OLD/bench/bench_analyze" run "$OUT/a.lt.zst" -- \
    "$NEW/bench/bench_analyze" run "$OUT/a.lt.zst"
row "analyze: 20,000 results with 8 chunks" "$OLD/bench/bench_analyze" run "$OUT/c8.lt.zst" -- \
    "$NEW/bench/bench_analyze" run "$OUT/c8.lt.zst"
M="$SRC/traces/samples/mooncake_synthetic_trace.jsonl"
row "import: Mooncake sample (3,993 records)" "$OLD/loadtrace" import --from mooncake "$M" -o "$OUT/m-old.lt.zst" -- \
    "$NEW/loadtrace" import --from mooncake "$M" -o "$OUT/m-new.lt.zst"
"$NEW/loadtrace" import --from azure "$SRC/traces/samples/AzureLLMInferenceTrace_code.csv" -o "$OUT/code.lt.zst" 2>/dev/null
row "virtual replay: Azure code sample (8,819 requests)" \
    "$OLD/loadtrace" replay "$OUT/code.lt.zst" --target sim --virtual -o "$OUT/v-old.lt.zst" --no-summary -- \
    "$NEW/loadtrace" replay "$OUT/code.lt.zst" --target sim --virtual -o "$OUT/v-new.lt.zst" --no-summary \
    $NOSCRAPE

echo
echo "live replay, 100 requests x 4,000 tokens at C=50 against one sim (--profile fast), client CPU per chunk:"
"$NEW/loadtrace" synth --arrivals constant --rate 1 --requests 100 --in fixed:16 --out fixed:4000 -q -o "$OUT/long.lt.zst"
SERVERS_DIR=$OUT
. "$SRC/tests/lib/servers.sh"
server_start sim taskset -c 1 "$NEW/loadtrace" sim --profile fast -q
URL=$SERVER_URL
for k in 1 2 3; do
    for which in old new; do
        B=$OLD
        [ $which = new ] && B=$NEW
        # a build that scrapes server metrics by default does not here: the same work for both
        NOSCRAPE=$("$B/loadtrace" replay --help 2>&1 | grep -q -- --no-server-metrics && echo --no-server-metrics || true)
        taskset -c 0 /usr/bin/time -f "%U %S" -o "$OUT/time" "$B/loadtrace" replay "$OUT/long.lt.zst" \
            --target "$URL" --concurrency 50 -o "$OUT/chunks-$which.lt.zst" -q --no-summary --no-calibrate $NOSCRAPE
        chunks=$("$NEW/loadtrace" cat --no-header "$OUT/chunks-$which.lt.zst" |
            jq -s '[.[] | select(.rec == null) | (.chunks | length) / 2] | add')
        awk -v w=$which -v k=$k -v c="$chunks" '{ printf "  %s, run %d: %.2f us CPU per chunk (%d chunks)\n", w, k, ($1 + $2) / c * 1e6, c }' "$OUT/time"
    done
done

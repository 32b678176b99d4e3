#!/bin/sh
# Run every benchmark and print its results; copy them, with the machine
# and the date, into bench/README.md. Usage: sh bench/run.sh [BUILD_DIR]
set -eu
B="${1:-build}"
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT="${TMPDIR:-/tmp}/loadtrace-bench"
mkdir -p "$OUT"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"

echo "## trace I/O (one core)"
taskset -c 0 "$B/bench/bench_trace_io" 5000000 "$OUT"

echo "## trace sizes (.lt.zst vs the original file)"
sh "$SRC/bench/trace_sizes.sh" "$B/loadtrace" "$SRC/traces/samples" "$OUT"

for extra in "$SRC"/bench/run-*.sh; do
    [ -f "$extra" ] || continue
    echo "## $(basename "$extra" .sh | sed 's/^run-//')"
    sh "$extra" "$B" "$OUT"
done

#!/bin/sh
# loadtrace sim under load (called by bench/run.sh, or alone):
#   sh bench/run-sim.sh BUILD_DIR SCRATCH_DIR
# The sim runs pinned to core 0 (so "one core" is literal), the sim_bench
# client on core 1. Results go to stdout; copy them into bench/README.md.
set -eu
B="${1:-build}"
OUT="${2:-${TMPDIR:-/tmp}/loadtrace-bench}"
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
LT=$(cd "$B" && pwd)/loadtrace
WRAP="$OUT/sim-on-core0.sh"
printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$LT" >"$WRAP"
chmod +x "$WRAP"
# --threads 2, not pinned: the sim's two network threads get both cores
# (one shared with the client).
WRAP2="$OUT/sim-threads2.sh"
printf '#!/bin/sh\nexec "%s" "$@" --threads 2\n' "$LT" >"$WRAP2"
chmod +x "$WRAP2"
run() {
    echo "### $*"
    taskset -c 1 "$B/bench/sim_bench" "$WRAP" "$@" --dir "$OUT" --max-seconds 120 2>&1 |
        grep -v 'serving'
}
run2() {
    echo "### --threads 2: $*"
    taskset -c 1 "$B/bench/sim_bench" "$WRAP2" "$@" --dir "$OUT" --max-seconds 120 2>&1 |
        grep -v 'serving'
}
echo "#### throughput: fast profile, 5000 streams x 1000 tokens"
run streams --profile fast --streams 5000 --out 1000 --prompt 10
echo "#### 5000 concurrent streams (one token per 100 ms each), 100 tokens"
sed 's/^step_ms = 20/step_ms = 100/' "$SRC/bench/sim-paced.profile" >"$OUT/paced100.profile"
run streams --profile "$OUT/paced100.profile" --streams 5000 --out 100 --prompt 10
echo "#### timing: default profile (max_running 256), 100 tokens per stream"
for c in 100 1000; do
    run streams --profile default --streams $c --out 100 --prompt 10
done
run2 streams --profile default --streams 1000 --out 100 --prompt 10
echo "#### timing: 1000 streams all in one batch (paced profile)"
run streams --profile "$SRC/bench/sim-paced.profile" --streams 1000 --out 250 --prompt 10
echo "#### calibration, live at --time-scale 20 (4 x C requests of 1000 tokens per level)"
run closed --time-scale 20 --per-level 4 --out 1000 --prompt 100 --conc 1,4,16,32

#!/bin/sh
# The twin's error over many hidden profiles: tests/sim/twin.sh with 20
# seeds (plain, prefix-reuse and long-prompt traces in turn), one line of
# errors per seed appended to $OUT (default bench/twin-errors.txt):
#   seed kind ttft_p50 ttft_p99 tpot_p50 tpot_p99 e2e_p50 e2e_p99 tput (% error)
# Usage: sh bench/run-twin.sh [BUILD_DIR] [SEEDS]
# TWIN_KEEP=DIR keeps every seed's files (live results, sim logs, fits,
# predictions) in DIR instead of a scratch directory removed at the end.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build}
SEEDS=${2:-"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"}
OUT=${OUT:-$SRC/bench/twin-errors.txt}
TMP=${TWIN_KEEP:-$(mktemp -d)}
: >"$OUT"
LOADTRACE=$B/loadtrace LT_SRC=$SRC LT_TMP=$TMP TWIN_SEEDS="$SEEDS" TWIN_TABLE=$OUT \
    sh "$SRC/tests/sim/twin.sh"
rc=$?
awk '{ w = 0; for (i = 3; i <= NF; i++) { v = $i < 0 ? -$i : $i; if (v > w) w = v }
       print; if (w > worst) { worst = w; ws = $1 " " $2 } }
     END { printf "worst absolute error %.1f%% (seed %s)\n", worst, ws }' "$OUT"
[ -n "${TWIN_KEEP:-}" ] || rm -rf "$TMP"
exit $rc

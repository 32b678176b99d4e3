#!/bin/sh
# Replay as an MPI job (bench/README.md, "replay under MPI"):
#   1. aggregate generated load with 1, 2 and 4 ranks on this machine
#      against one fast sim: closed loop, short streamed requests; the
#      figure is merged results / the merged run's wall time;
#   2. the merge's cost at 1 million requests: 4 parts of 250,000 results
#      (made quickly with replay --virtual), merged with replay --merge,
#      against analyze over the merged file for scale.
# Usage: sh bench/run-mpi.sh BUILD_DIR OUT_DIR
set -eu
B=$1
OUT=$2/mpi
L="$B/loadtrace"
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
SERVERS_DIR=$OUT
. "$SRC/tests/lib/servers.sh"
if ! command -v mpirun >/dev/null 2>&1 || ! ldd "$L" | grep -q libmpi; then
    echo "(no mpirun, or loadtrace built without MPI: skipped)"
    exit 0
fi
ROOT=
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
C=${LT_BENCH_MPI_C:-64}
N=${LT_BENCH_MPI_N:-40000}

echo "### 1. aggregate load: closed loop C=$C over the ranks, $N streamed requests of 16 tokens (sim --profile fast)"
"$L" synth --arrivals constant --rate 1 --requests 1000 --in fixed:16 --out fixed:16 -q -o "$OUT/short.lt.zst"
server_start sim "$L" sim --profile fast -q
URL=$SERVER_URL
for n in 1 2 4; do
    mpirun --oversubscribe $ROOT -n $n "$L" replay "$OUT/short.lt.zst" --target "$URL" \
        --no-calibrate --concurrency "$C" --requests "$N" -o "$OUT/agg$n.lt.zst" -q --no-summary
    "$L" analyze --json "$OUT/agg$n.lt.zst" | jq -r --arg n $n '.runs[0] |
        "ranks \($n): \(.results) requests, \(.ok) ok in \(.wall_s) s: \(.results / .wall_s | floor) req/s, \(.agg_tps | floor) tok/s"'
done
server_stop sim || true

echo "### 2. merge of 1,000,000 results (4 parts of 250,000)"
"$L" synth --arrivals poisson --rate 2000 --requests 250000 --in fixed:64 --out fixed:16 -q -o "$OUT/big.lt.zst"
for k in 0 1 2 3; do
    "$L" replay "$OUT/big.lt.zst" --target sim --virtual --profile fast --seed $((k + 1)) \
        -o "$OUT/big.lt.zst.rank$k" -q --no-summary
done
for rep in 1 2 3; do
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" "$L" replay --merge -o "$OUT/merged.lt.zst" \
        --no-summary "$OUT/big.lt.zst.rank0" "$OUT/big.lt.zst.rank1" "$OUT/big.lt.zst.rank2" \
        "$OUT/big.lt.zst.rank3" > /dev/null
    read wall user sys rss < "$OUT/time"
    /usr/bin/time -f "%e" -o "$OUT/atime" "$L" analyze "$OUT/merged.lt.zst" > /dev/null
    echo "merge $rep: $wall s wall (user $user, sys $sys), max RSS $rss KiB; analyze of the merged file: $(cat "$OUT/atime") s; $(ls -l "$OUT/merged.lt.zst" | awk '{print $5}') bytes"
done

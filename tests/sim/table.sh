#!/bin/sh
# The default profile against the published Qwen3.5-397B / 8x RTX PRO 6000
# table, live: a closed-loop client (sim_load, built from bench/sim_bench.c)
# drives the real binary at --time-scale 10, c = 1, 4, 16, 32, 4 x c
# requests of 1000 tokens per level. The figures are computed from the
# sim's own --log (model emission times), never from wall-clock readings of
# the test, and compared with the published ones as ratios (within 10%).
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${SIM_LOAD:?SIM_LOAD not set}"
SCALE=10

timeout 250 "$SIM_LOAD" "$LOADTRACE" closed --time-scale $SCALE --per-level 4 --out 1000 \
    --prompt 100 --conc 1,4,16,32 --dir "$T" --max-seconds 200 >"$T/client.txt" 2>"$T/client.err"
expect_status 0 $? "sim_load closed loop"
cat "$T/client.txt"

# Requests of level c have seq numbers after those of the levels before.
jq -r 'select(.seq and .status == 200) | [.seq, .arrival_us, .tokens_us[0], .tokens_us[-1], .out] | @tsv' \
    "$T/sim_bench.log" | sort -n >"$T/reqs.tsv"
expect_eq 212 "$(wc -l <"$T/reqs.tsv")" "requests in the log"
awk -v scale=$SCALE '
BEGIN { split("1 4 16 32", C, " "); split("176 159 120 81", PR, " "); split("172 542 1647 2156", AG, " ");
        lo = 1; for (l = 1; l <= 4; l++) { hi[l] = lo + 4 * C[l] - 1; lo = hi[l] + 1 } }
{
    for (l = 1; $1 > hi[l]; l++);
    n[l]++; dec[l] += ($5 - 1) / (($4 - $3) / 1e6) / scale; out[l] += $5
    if (!(l in first) || $2 < first[l]) first[l] = $2
    if ($4 > last[l]) last[l] = $4
}
END {
    bad = 0
    for (l = 1; l <= 4; l++) {
        pr = dec[l] / n[l]; ag = out[l] / ((last[l] - first[l]) / 1e6) / scale
        rp = pr / PR[l]; ra = ag / AG[l]
        printf "C=%2d per-request %6.1f tok/s (published %3d, ratio %.3f)  aggregate %7.1f tok/s (published %4d, ratio %.3f)\n", C[l], pr, PR[l], rp, ag, AG[l], ra
        if (rp < 0.9 || rp > 1.1 || ra < 0.9 || ra > 1.1) bad = 1
    }
    exit bad
}' "$T/reqs.tsv" >"$T/table.txt"
rc=$?
cat "$T/table.txt"
expect_status 0 $rc "every figure within 10% of the published table"
finish

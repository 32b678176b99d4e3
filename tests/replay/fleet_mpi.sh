#!/bin/sh
# A fleet under MPI (mpirun -n 2 replay --target URL1,URL2,URL3): every rank
# routes with the same deterministic router, so the ranks together send
# exactly what one process would. Round-robin goes by each request's place
# in the whole schedule, which every rank computes: record n (the n-th
# arrival) is served by sim n mod 3, as the sims' logs say, whichever rank
# sent it; session routing keeps every session on one sim across ranks.
# Registered only when MPI is built; mpirun missing then is a failure.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
. "$LT_SRC/tests/replay/fleetlib.sh"
. "$LT_SRC/tests/replay/mpilib.sh"

# 10 sessions of 3 turns, 60 ms apart; record n asks for 10 + n tokens
fleet_sessions "$T/h.jsonl" plain
"$L" import --from jsonl "$T/h.jsonl" -o "$T/h.lt.zst" -q || fail "import"
awk '{ match($0, /"session":[0-9]+/); print NR - 1, substr($0, RSTART + 10, RLENGTH - 10) }' \
    "$T/h.jsonl" >"$T/sess.txt"

SIMS="a b c"
for pol in round-robin session; do
    URLS=
    for s in $SIMS; do
        start_sim "$s" --profile fast
        URLS="$URLS${URLS:+,}$SIM_URL"
    done
    mpi 2 replay "$T/h.lt.zst" \
        --target "$URLS" --route "$pol" --no-calibrate -o "$T/$pol.lt.zst" -q --no-summary \
        >"$T/$pol.out" 2>"$T/$pol.err"
    expect_status 0 $? "mpirun -n 2 replay --route $pol"
    for s in $SIMS; do server_stop "$s"; done
    : >"$T/$pol.where"
    i=0
    for s in $SIMS; do
        streams "$T/$s.log" | jq -r ".max_tokens - 10 | \"\\(.) $i\"" >>"$T/$pol.where"
        i=$((i + 1))
    done
    sort -n "$T/$pol.where" -o "$T/$pol.where"
    expect_eq 30 "$(wc -l <"$T/$pol.where" | tr -d ' ')" "$pol: requests the sims served"
    # the merged results name the replica each sim's log says
    results "$T/$pol.lt.zst" | jq -r '"\(.i) \(.replica)"' | sort -n >"$T/$pol.rep"
    expect_eq "$(cat "$T/$pol.where")" "$(cat "$T/$pol.rep")" "$pol: merged results' replica"
done
expect_eq "" "$(awk '$2 != $1 % 3' "$T/round-robin.where")" \
    "round-robin over 2 ranks: record n on sim n mod 3"
split=$(awk 'NR == FNR { s[$1] = $2; next } { k = s[$1] " " $2; if (!(k in seen)) { seen[k] = 1; n[s[$1]]++ } }
    END { for (x in n) if (n[x] > 1) m++; print m + 0 }' "$T/sess.txt" "$T/session.where")
expect_eq 0 "$split" "sessions split across sims under MPI"
finish

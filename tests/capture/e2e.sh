#!/bin/sh
# Capture, then replay, then analyze, end to end: traffic recorded through
# capture in front of one sim is replayed against a second sim, and the
# analysis of the results agrees with what was captured (request count,
# output lengths as the second sim's log shows them).
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/capture/cap_lib.sh"

start_sim up --profile fast
start_capture cap "$SIM_URL"
k=0
while [ $k -lt 12 ]; do
    words=$(printf 'word%s ' $(seq 1 $((k * 20 + 5))))
    req "$CAP_URL" /v1/chat/completions \
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"$words\"}],\"max_tokens\":$((k + 5)),\"ignore_eos\":true,\"stream\":true}" \
        "$T/r$k"
    k=$((k + 1))
done
stop $CAP_PID capture
stop $SIM_PID sim
records "$T/cap.lt.zst" >"$T/recs"
expect_eq 12 "$(wc -l <"$T/recs")" "captured"

start_sim target --profile fast
"$LOADTRACE" replay "$T/cap.lt.zst" --target "$SIM_URL" --speed 20 -o "$T/res.lt.zst" \
    --no-summary -q 2>"$T/replay.err"
expect_status 0 $? "replay of the captured trace"
stop $SIM_PID sim
# The replayed requests asked for the captured lengths, and got them (the
# sim's log also holds replay's calibration probes, sent first).
expect_eq "$(jq -sc '[.[].out] | sort' "$T/recs")" \
    "$(jq -sc '[.[] | select(.seq)] | .[-12:] | map(.out) | sort' "$T/target.log")" "output lengths replayed"
expect_eq "$(jq -sc '[.[].in] | sort' "$T/recs")" \
    "$(jq -sc '[.[] | select(.seq)] | .[-12:] | map(.prompt_tokens) | sort' "$T/target.log")" "prompt lengths replayed"
"$LOADTRACE" analyze --json "$T/res.lt.zst" >"$T/an.json" 2>"$T/an.err"
expect_status 0 $? "analyze"
expect_eq "12 12 0 0" "$(jq -r '.runs[0] | "\(.results) \(.ok) \(.lengths.in.off) \(.lengths.out.off)"' "$T/an.json")" \
    "analysis: every captured request replayed, ok, at its captured lengths"
finish

#!/bin/sh
# The model probe before a live run (GET /v1/models) against a server that
# accepts connections and never answers (a sim stopped with SIGSTOP: the
# kernel still completes the handshakes, nobody reads): it gives up within
# --timeout, not 30 s whatever the options say, saying what it waits for,
# and it is not made at all when --model names the model. Every command is
# bounded by `timeout` well below the old 30 s wait, so an ignored
# --timeout fails the test instead of hanging it; no wall-clock time is
# asserted.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
"$L" synth --arrivals poisson --rate 10 --requests 3 --in fixed:20 --out fixed:4 --seed 2 -q \
    -o "$T/t.lt.zst" || fail "synth"
start_sim hung --profile fast
kill -STOP "$SIM_PID"

# --- no --model: the probe waits --timeout, says so, and fails ----------------------
timeout 25 "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --timeout 3s --no-calibrate \
    --no-server-metrics -o "$T/a.lt.zst" 2>"$T/a.err"
rc=$?
[ "$rc" -ne 124 ] || fail "the probe ignored --timeout 3s (killed after 25 s)"
expect_status 1 "$rc" "the probe of a server that does not answer"
expect_grep "waiting for $SIM_URL to answer GET /v1/models (which model it serves): [0-9]* s of at most 3 s" \
    "$T/a.err"
expect_grep "cannot discover the model of $SIM_URL (GET /v1/models: Timeout was reached); give --model" \
    "$T/a.err"
[ ! -e "$T/a.lt.zst" ] || fail "a results file was started without a model"
# -q says nothing while it waits, and still fails the same way
timeout 25 "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --timeout 2s --no-calibrate \
    --no-server-metrics -q -o "$T/q.lt.zst" 2>"$T/q.err"
expect_status 1 $? "the probe, quiet"
expect_no_grep "waiting for" "$T/q.err"
expect_grep "cannot discover the model" "$T/q.err"

# --- --model given: no probe; the requests themselves time out ------------------------
timeout 25 "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --model m --timeout 2s --no-calibrate \
    --no-server-metrics --speed 100 -q -o "$T/m.lt.zst" 2>"$T/m.err"
rc=$?
[ "$rc" -ne 124 ] || fail "with --model, replay still waited on a probe (killed after 25 s)"
expect_status 3 "$rc" "every request timed out"
expect_no_grep "v1/models" "$T/m.err"
expect_eq "timeout timeout timeout" "$(results "$T/m.lt.zst" | jq -r .err | tr '\n' ' ' | sed 's/ $//')" \
    "the three requests' errors"
kill -CONT "$SIM_PID"

# --- the server answers: the probe finds its one model --------------------------------
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --timeout 5s --speed 100 -o "$T/ok.lt.zst" \
    --no-summary 2>"$T/ok.err"
expect_status 0 $? "the probe of a server that answers"
expect_grep "model loadtrace-sim-fast" "$T/ok.err"
stop_sim
finish

#!/bin/sh
# Every README recipe that can run against the built-in sim, run as the
# README writes it (each command line is taken from README.md, not copied
# here), with the sim standing in for http://127.0.0.1:8000 and :8001
# (at --time-scale 20, so that a recipe that takes minutes against a real
# server takes seconds) and with the README's stated short form where the
# full run takes long (`--duration 10s` for the hour-long Azure trace,
# `--requests 32` for the sweep). Each must finish, print no false
# warning (no OVERLOADED line: the sim at that scale serves these loads;
# a CHECK only where the file bears it out, as a loaded machine's starved
# client may truly be off its schedule: recipelib.sh's true_checks),
# and answer its question; the answers are checked against ground truth
# computed here from the files (jq, awk), not against the program's own
# figures. Left out: capture (needs a client; tests/capture), MPI
# (tests/replay/mpi.sh), fitting (tests/sim) and --find-max
# (tests/replay/capacity.sh). The worked examples of docs/ are
# tests/cli/recipes_docs.sh.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
cd "$T" || exit 1
mkdir -p traces && ln -s "$LT_SAMPLES" traces/samples
. "$LT_SRC/tests/cli/recipelib.sh"
start_sim a --time-scale 20
SIM_A=$SIM_URL PID_A=$SIM_PID LOG_A=$SIM_LOG
start_sim b --time-scale 20
SIM_B=$SIM_URL PID_B=$SIM_PID
SIM_PID=
trap 'kill $PID_A $PID_B 2>/dev/null' EXIT

# --- import and look
what=import
for pat in '^loadtrace import --from azure' '^loadtrace import --from mooncake' '^loadtrace info azure' \
    '^loadtrace cat azure'; do
    run "$(recipe "$pat")"
    expect_status 0 $? "$pat"
done
expect_eq 10 "$(wc -l <out.txt | tr -d ' ')" "cat | head prints ten records"
n=$(awk -F, 'NR > 1 && NF >= 3' "$LT_SAMPLES/AzureLLMInferenceTrace_code.csv" | wc -l | tr -d ' ')
expect_eq "$n" "$("$L" cat --no-header azure-code.lt.zst | wc -l | tr -d ' ')" "records imported"

# --- replay at twice its speed (short form: its first 10 s of schedule)
what="replay --speed 2"
run "$(recipe 'azure-code.lt.zst --target http://127.0.0.1:8000 --speed 2 -o results')" --duration 10s
expect_status 0 $? "$what"
no_false_alarm results.lt.zst
# the schedule: the trace's times over 2, the first 20 s of them
want=$("$L" cat --no-header azure-code.lt.zst | jq -s '(.[0].t) as $f | [.[] | select((.t - $f) / 2 < 10e6)] | length')
expect_grep "run 1 of 1: $want requests, the schedule's last leaves at" err.txt
expect_eq "$want" "$("$L" cat --no-header results.lt.zst | jq -s '[.[] | select(.rec == null and .sent != null)] | length')" \
    "requests sent"

# --- the concurrency sweep (short form: 32 requests a level) and its report
what=sweep
run "$(recipe 'mooncake.lt.zst --target http://127.0.0.1:8000 --concurrency')" --requests 32
expect_status 0 $? "$what"
run "$(recipe '^loadtrace analyze sweep.lt.zst')"
expect_status 0 $? "analyze the sweep"
no_false_alarm sweep.lt.zst report.html
[ -s report.html ] && [ -s charts/throughput.png ] || fail "no report or charts"
"$L" analyze sweep.lt.zst --slo ttft=500ms,tpot=50ms --json >sweep.json
# the knee is no level below the goodput's peak
jq -e '.sweep.knee as $k | [.runs[] | {c: .concurrency, g: .goodput.per_s}] as $r |
    ($r | max_by(.g) | .c) as $peak | $k == null or $k >= $peak' sweep.json >/dev/null ||
    fail "the knee comes before the goodput peak: $(jq -c '[.sweep.knee, [.runs[] | [.concurrency, .goodput.per_s]]]' sweep.json)"

# --- the built-in sim, live at --rate 1 for a minute: says what the rate is
# of, what the minute keeps, and why it ends early
what="--rate 1 --duration 60s"
run "$(recipe 'target sim --rate 1 --duration 60s')"
expect_status 0 $? "$what"
no_false_alarm sim-results.lt.zst
want=$("$L" cat --no-header azure-code.lt.zst | jq -s '(.[0].t) as $f | (.[-1].t - $f) as $span |
    ((length - 1) / 1 * 1e6 / $span) as $k | [.[] | select((.t - $f) * $k < 60e6)] | length')
expect_grep "rescales the whole trace to a mean of 1 req/s" err.txt
expect_grep "duration 60 s keeps the schedule's first 60 s: $want requests, the last at" err.txt
expect_grep "so the run ends after about" err.txt

# --- and in virtual time
what=virtual
run "$(recipe 'target sim --virtual --speed 2')"
expect_status 0 $? "$what"
expect_eq "$n" "$("$L" cat --no-header capacity.lt.zst | jq -s '[.[] | select(.rec == null)] | length')" \
    "virtual replay of every request"

# --- is a synthetic workload representative? It says so
what=representative
run "$(recipe '^loadtrace synth --fit')"
expect_status 0 $? "synth --fit"
run "$(recipe '^loadtrace compare azure-code.lt.zst syn.lt.zst')"
expect_status 0 $? "compare"
expect_grep "^overall: B is representative of A" out.txt
# with --rate, the verdict says the rate was rescaled
"$L" synth --fit azure-code.lt.zst --rate 10 --duration 10m --seed 1 -o syn10.lt.zst -q
"$L" compare azure-code.lt.zst syn10.lt.zst >c10.txt
expect_grep "B was fitted to a rescaled rate: synth --fit --rate 10" c10.txt

# --- A/B: the same trace against two servers (short form: 10 s)
what=A/B
run "$(recipe 'azure-code.lt.zst --target http://127.0.0.1:8000 --speed 2 -o a.lt.zst')" --duration 10s
expect_status 0 $? "A"
run "$(recipe 'azure-code.lt.zst --target http://127.0.0.1:8001 --speed 2 -o b.lt.zst')" --duration 10s
expect_status 0 $? "B"
run "$(recipe '^loadtrace compare a.lt.zst b.lt.zst')"
expect_status 0 $? "compare A/B"
expect_grep "^verdict: " out.txt

# --- synthetic traffic and export
what=synth
run "$(recipe '^loadtrace synth --arrivals gamma')"
expect_status 0 $? "synth gamma"
run "$(recipe '^loadtrace export --to mooncake')"
expect_status 0 $? "export"
expect_eq "$n" "$(wc -l <azure-code.mooncake.jsonl | tr -d ' ')" "exported lines"

# --- the sim on its own, with its log: its size said at the end
what="sim --log"
line=$(recipe '^loadtrace sim --listen 127.0.0.1:8000 --log') &&
    line=$(printf '%s\n' "$line" | sed 's/127.0.0.1:8000/127.0.0.1:0 --port-file own.port/')
eval "exec $(printf '%s\n' "$line" | sed "s|^loadtrace |\"\$L\" |")" 2>sim.err &
SP=$!
i=0
while [ ! -s own.port ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
"$L" synth --arrivals constant --rate 20 --requests 5 --in fixed:10 --out fixed:3 -q -o five.lt.zst
"$L" replay five.lt.zst --target "http://127.0.0.1:$(cat own.port)" -o five.r.lt.zst -q --no-summary ||
    fail "replay against the sim on its own"
kill $SP
wait $SP
expect_grep "logging every request to sim-log.jsonl" sim.err
expect_grep "the log sim-log.jsonl holds [0-9.]* MB ($(wc -c <sim-log.jsonl | tr -d ' ') bytes)" sim.err
finish

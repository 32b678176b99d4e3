#!/bin/sh
# A stream of more than 500,000 chunks (two of 520,000 one-token chunks,
# from a sim profile with no step cost) is recorded, its timeline thinned
# as docs/trace-format.md §2.5 says (`thin` 2: 260,000 chunks of 2 tokens),
# and every count is true, live and in virtual time: against the sim's log, each request's chunks
# carry the tokens the sim sent, `out` is that, the run says 2 requests were
# recorded and the file holds 2, and analyze reads them all.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
N=520000
cat >"$T/long.profile" <<PROF
name = long
model = loadtrace-sim-long
step_ms = 0
step_ms_per_seq = 0
prefill_step_ms = 0
prefill_ms_per_seq = 0
prefill_ms_per_token = 0
cached_ms_per_token = 0
kv_tokens = 1000000000
max_model_len = 10000000
PROF
"$L" synth --arrivals constant --rate 10 --requests 2 --in fixed:16 --out fixed:$N -q \
    -o "$T/t.lt.zst" || fail "synth"
start_sim long --profile "$T/long.profile"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics --timeout 5m \
    --concurrency 1 -o "$T/r.lt.zst" --no-summary 2>"$T/err"
expect_status 0 $? "replay of two streams of $N chunks"
stop_sim
expect_grep "2 requests, 2 ok, 0 errors" "$T/err"
expect_grep "2 streams had more than 500000 chunks: their timelines were thinned" "$T/err"
results "$T/r.lt.zst" | jq -c '[.out, (.chunks | length) / 2, ([.chunks | to_entries[] | select(.key % 2 == 1) | .value] | add), .thin, .err]' >"$T/rows"
expect_eq 2 "$(wc -l <"$T/rows")" "results in the file"
sent=$(jq -s -r '[.[] | select(.seq != null) | .sent] | unique | join(" ")' "$SIM_LOG")
expect_eq "$N" "$sent" "tokens the sim sent in each stream"
expect_eq "[$N,260000,$N,2,null]" "$(sort -u "$T/rows")" "out, chunks, their tokens, thin, err"
"$L" analyze --json "$T/r.lt.zst" >"$T/a.json" 2>/dev/null || fail "analyze"
expect_eq 2 "$(jq '.runs[0].ok' "$T/a.json")" "analyze: Ok requests"

# the same in virtual time: one token a chunk, the trace's 520,000 each
"$L" replay "$T/t.lt.zst" --target sim --virtual --profile "$T/long.profile" -q --no-summary \
    -o "$T/v.lt.zst" 2>"$T/verr"
expect_status 0 $? "replay --virtual of two streams of $N chunks"
results "$T/v.lt.zst" | jq -c '[.out, (.chunks | length) / 2, ([.chunks | to_entries[] | select(.key % 2 == 1) | .value] | add), .chunks[1], .thin, .err]' >"$T/vrows"
expect_eq 2 "$(wc -l <"$T/vrows")" "virtual results in the file"
expect_eq "[$N,260000,$N,2,2,null]" "$(sort -u "$T/vrows")" \
    "virtual: out, chunks, their tokens, the first chunk's, thin, err"
finish

#!/bin/sh
# llama-server's per-request "timings" (--dialect llamacpp): the sim sends
# them where llama-server does (a whole body's root; a stream's last token
# chunk and its usage chunk) and replay records them (srv_pf, srv_pf_n,
# srv_dec, srv_dec_n, srv_cache). Checked against the sim's own log, the
# ground truth: the model's admission of each request to its batch, its
# first token and its last (admitted_us, first_us, tokens_us), its cached
# prompt tokens and the tokens it emitted; streamed and whole, chat and
# completions, with prompts that hit the prefix cache.
set -u
. "$LT_SRC/tests/sim/twin_lib.sh"

hidden_llama name=hidden-llama step_ms=6 step_ms_per_seq=1 prefill_step_ms=3 prefill_ms_per_token=0.3
# shared system prompts: later requests find their start cached
"$L" synth --arrivals poisson --rate 8 --requests 24 --in uniform:40,400 --out uniform:3,30 \
    --prefix 1,200,2 --block-tokens 16 --seed 4 -q -o "$T/t.lt.zst" || fail "synth"

twin_sim llama llamacpp
for run in "chat" "chat --no-stream" "completions" "completions --no-stream"; do
    n=$(echo "$run" | tr -d ' -')
    # shellcheck disable=SC2086 # the API and the stream option as words
    set -- --api $run
    timeout 120 "$L" replay "$T/t.lt.zst" --target "$URL" --concurrency 3 -o "$T/$n.lt.zst" -q \
        --no-summary "$@" 2>"$T/$n.err"
    expect_status 0 $? "replay $run"
done
stop_sim

# The log's truth by request, keyed by the prompt's length and the run's API
# and stream (each run sends the trace's 24 prompts once), against the
# results' keys.
jq -r 'select(.seq and .status == 200 and (.tokens_us | length) > 0) |
    [.api, .stream, .prompt_tokens, .first_us - .admitted_us, .tokens_us[-1] - .first_us,
     .prompt_tokens - .cached_tokens, .emitted, .cached_tokens] | @tsv' "$T/llama.log" |
    sort >"$T/truth.tsv"
expect_eq 96 "$(wc -l <"$T/truth.tsv")" "requests in the sim's log"
: >"$T/got.tsv"
for run in chat chatnostream completions completionsnostream; do
    api=${run%nostream}
    stream=true
    [ "$api" = "$run" ] || stream=false
    "$L" cat --no-header "$T/$run.lt.zst" |
        jq -r --arg a "$api" --arg s "$stream" 'select(.rec == null and .status == 200) |
        [$a, $s, .in, .srv_pf, .srv_dec, .srv_pf_n, .srv_dec_n, .srv_cache] | @tsv' >>"$T/got.tsv"
done
sort -o "$T/got.tsv" "$T/got.tsv"
expect_eq 96 "$(wc -l <"$T/got.tsv")" "results with timings"
# Each prompt length once per run, so the two sorted lists pair up.
expect_eq 96 "$(cut -f1-3 "$T/truth.tsv" | sort -u | wc -l)" "distinct prompts per run"
paste "$T/truth.tsv" "$T/got.tsv" | awk -F'\t' '
    { if ($1 != $9 || $2 != $10 || $3 != $11) { print "unpaired: " $0; bad = 1; next }
      # times: the log in whole us, the answer in ms to 3 decimals
      for (k = 4; k <= 5; k++) if ($k - $(k + 8) > 2 || $(k + 8) - $k > 2) {
          print "time " k ": log " $k " us, recorded " $(k + 8) " us: " $0; bad = 1 }
      for (k = 6; k <= 8; k++) if ($k != $(k + 8)) {
          print "count " k ": log " $k ", recorded " $(k + 8) ": " $0; bad = 1 }
      if ($8 > 0) cached++
      if ($4 > 0) pf++ }
    END { if (cached < 20) { print "only " cached " requests hit the cache"; bad = 1 }
          if (pf < 96) { print "only " pf " prefill times above 0"; bad = 1 }
          exit bad }'
expect_status 0 $? "the recorded timings are the sim's"
finish

#!/bin/sh
# The Responses and Messages APIs end to end: replay --api responses and
# --api messages against the sim, streamed and whole, with reasoning on and
# multi-turn prompts (system, user and assistant turns). Each request's
# prompt, output and reasoning tokens are the sim's (its --log); a streamed
# request's TTFT is never shorter than the sim's own first-token time (first
# emission - arrival) and not longer by more than a loaded machine's
# delivery lag (250 ms); its first content comes after the reasoning. A
# whole Messages body has no reasoning count (Anthropic's usage has none):
# its reasoning is recorded as unknown.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 5 --requests 6 --in fixed:300 --out fixed:16 --turns fixed:2 \
    --think 100ms --prefix 1,50 -q -o "$T/t.lt.zst" || fail "synth"

for api in responses messages; do
    if [ $api = responses ]; then think="--reasoning-effort high"; else think="--thinking on"; fi
    for mode in stream whole; do
        if [ $mode = whole ]; then ns=--no-stream; else ns=; fi
        start_sim "$api$mode" --time-scale 2
        # shellcheck disable=SC2086
        "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --api $api $think $ns -o "$T/r.lt.zst" -q \
            --no-summary
        expect_status 0 $? "replay --api $api ($mode)"
        stop_sim
        # The calibration's probes ask for one output token: the run's, 16.
        jq -c 'select(.seq != null and .path != "/tokenize" and .max_tokens > 1)' "$SIM_LOG" \
            > "$T/inf.log"
        expect_eq "$api" "$(jq -r .api "$T/inf.log" | sort -u)" "the sim's API ($api $mode)"
        jq -s -r 'sort_by(.arrival_us)[] |
            "\(.tokens_us[0] - .arrival_us) \(.out) \(.reasoning_tokens) \(.prompt_tokens)"' \
            "$T/inf.log" > "$T/sim.txt"
        results "$T/r.lt.zst" | jq -s -r 'sort_by(.sent)[] |
            "\(.ft - .sent) \(.out) \(.reasoning) \(.in) \(.fc - .ft) \(.err) \(.finish) \((.reasoning // 0) as $r | (.fc - .sent) ==
             ([.chunks // [] | to_entries[] | select(.key % 2 == 0) | .value] | .[0:$r + 1] | add))"' > "$T/rep.txt"
        expect_eq 6 "$(wc -l < "$T/sim.txt")" "requests the sim saw ($api $mode)"
        paste -d ' ' "$T/sim.txt" "$T/rep.txt" | awk -v a="$api $mode" -v m=$mode '
            { if (a == "messages whole" && $7 == "null") $7 = $3 # no count in the body
              if ($2 != $6 || $3 != $7 || $4 != $8) { print a ": out/reasoning/in " $6 "/" $7 "/" $8 " vs the sim'"'"'s " $2 "/" $3 "/" $4; bad = 1 }
              if ($3 < 1) { print a ": no reasoning"; bad = 1 }
              if ($10 != "null") { print a ": error " $10; bad = 1 }
              if ($11 != "length") { print a ": finish " $11 " (ignore_eos: length)"; bad = 1 }
              if (m == "stream") {
                  dt = $5 - $1
                  if (dt < -1000 || dt > 250000) { print a ": TTFT " $5 " us vs the sim'"'"'s " $1 " us"; bad = 1 }
                  # TTFC equals TTFT only when a stalled client read the
                  # last reasoning and the first content at once: then it
                  # is still the time of the first content chunk
                  if ($9 < 0 || ($9 == 0 && $12 != "true")) { print a ": reasoning came first but TTFC = TTFT"; bad = 1 }
                  if ($12 != "true") { print a ": TTFC is not the time of the first content chunk"; bad = 1 } } }
            END { exit bad }' >&2 || fail "$api $mode: tokens or TTFT differ from the sim's log"
    done
done

# The Messages API's headers: the key as x-api-key (from ANTHROPIC_API_KEY),
# anthropic-version; and the error body in Anthropic's shape is recorded
# as an HTTP error. A bad request: no max_tokens is sent by nobody, so ask
# for a context the sim does not have.
"$L" synth --arrivals constant --rate 50 --requests 2 --in fixed:300000 --out fixed:4 -q \
    -o "$T/big.lt.zst" || fail "synth big"
start_sim big
ANTHROPIC_API_KEY=sekrit "$L" replay "$T/big.lt.zst" --target "$SIM_URL" --api messages \
    -o "$T/big.r.lt.zst" -q --no-summary --no-calibrate
stop_sim
expect_eq 2 "$(results "$T/big.r.lt.zst" | jq -s '[.[] | select(.status == 400)] | length')" \
    "400s for prompts beyond the context"
grep -q sekrit "$T/big.r.lt.zst" "$SIM_LOG" && fail "the key was written somewhere"
finish

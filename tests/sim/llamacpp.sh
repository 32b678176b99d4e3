#!/bin/sh
# The twin against a server that behaves as llama-server does (--dialect
# llamacpp): 4 slots, a per-token prefill that holds up the decoding of its
# step, a prefix cache that outlives a run, /props and /slots, and a slot
# erase that answers 501 unless allowed (slot-erase). Checked against what
# the test controls (the hidden profile, the sim's /props and /metrics):
# replay records the server's word and the cache state in each run record;
# sim --fit takes max_running, vocabulary, context and model name from it
# (and says so), fits the prefill per token from the timelines, classes the
# runs, and flags a run that found a cache an earlier run warmed;
# --reset-prefix-cache erases llama.cpp's slots where allowed, leaving them
# in a fresh server's order (the sim's log shows the pinned requests and the
# slots the next run takes), and says what to do where it is refused.
set -u
. "$LT_SRC/tests/sim/twin_lib.sh"

hidden_llama name=hidden-llama step_ms=9 step_ms_per_seq=1.5 prefill_step_ms=4 prefill_ms_per_token=0.6
twin_synth "$T/t.lt.zst" --requests 60 --in uniform:40,400 --out lognormal:40,0.3 --seed 5

# replay NAME ARGS...: a live run (results in $T/NAME.lt.zst, stderr in $T/NAME.err)
replay() {
    n=$1
    shift
    timeout 300 "$L" replay "$T/t.lt.zst" --target "$URL" -o "$T/$n.lt.zst" ${Q--q} --no-summary "$@" \
        2>"$T/$n.err"
    expect_status 0 $? "replay $n"
}
hits() { # the sim's prefix-cache hits counter, from its own /metrics
    curl -sS --max-time 10 "$URL/metrics" | awk 'index($1, "vllm:prefix_cache_hits_total") == 1 { print $2 }'
}

# 1. The endpoints, as llama-server answers them.
twin_sim llama llamacpp
curl -sS --max-time 10 "$URL/props" >"$T/props.json"
expect_eq 4 "$(jq -r .total_slots "$T/props.json")" "/props total_slots"
expect_eq 4096 "$(jq -r .default_generation_settings.n_ctx "$T/props.json")" "/props n_ctx"
expect_eq 4 "$(curl -sS --max-time 10 "$URL/slots" | jq length)" "/slots length"
expect_eq 512 "$(curl -sS --max-time 10 "$URL/v1/models" | jq -r '.data[0].meta.n_vocab')" \
    "/v1/models meta.n_vocab"
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$URL/slots/0?action=erase")
expect_eq 501 "$code" "slot erase without slot-erase"

# 2. Two loads, fitted: a closed loop at 1 and at 4 (the server's slots).
#    The erase is refused: replay says what to do instead.
Q= replay c1 --concurrency 1 --requests 30 --reset-prefix-cache
expect_grep "slot-save-path" "$T/c1.err"
replay c4 --concurrency 4 --requests 40
stop_sim
twin_fit c1 c4
expect_grep "max_running 4: the server's word" "$T/fit.txt"
expect_grep "vocab 512 (server)" "$T/fit.txt"
expect_grep "model tiny-llama-q8 (server)" "$T/fit.txt"
expect_grep "max_model_len 4096 (server)" "$T/fit.txt"
expect_grep "file 1 run 0: stable  *used" "$T/fit.txt"
expect_grep "file 2 run 0: stable  *used" "$T/fit.txt"
expect_grep "^  prefill_ms_per_token .* timings (llama.cpp prompt_ms" "$T/fit.txt"
expect_eq "tiny-llama-q8" "$(awk -F' = ' '$1 == "model" { print $2 }' "$T/fit.profile")" \
    "fitted profile's model"
expect_eq 4 "$(awk -F' = ' '$1 == "max_running" { print $2 }' "$T/fit.profile")" \
    "fitted profile's max_running"
expect_eq 512 "$(awk -F' = ' '$1 == "vocab" { print $2 }' "$T/fit.profile")" \
    "fitted profile's vocab"
pf=$(awk -F' = ' '$1 == "prefill_ms_per_token" { print $2 }' "$T/fit.profile")
awk -v v="$pf" 'BEGIN { exit !(v > 0.6 * 0.85 && v < 0.6 * 1.15) }' ||
    fail "prefill_ms_per_token $pf, hidden 0.6 (15 %)"
# The client's share stays within its measured round trip (model time).
awk '/client share of TTFT/ { for (i = 1; i <= NF; i++) if ($i == "TTFT") { print $(i + 1); exit } }' \
    "$T/fit.txt" >"$T/client.txt"
awk '/client round trip/ { for (i = 1; i <= NF; i++) if ($i == "trip") { print $(i + 1); exit } }' \
    "$T/fit.txt" >"$T/rtt.txt"
awk -v c="$(cat "$T/client.txt")" -v r="$(cat "$T/rtt.txt")" \
    'BEGIN { exit !(c != "" && r != "" && c + 0 <= (r + 0) * 1.002) }' ||
    fail "client share $(cat "$T/client.txt") ms beyond the measured round trip $(cat "$T/rtt.txt") ms"

# 3. Cache state: the same trace twice with slot erase allowed. The first
#    run is reset (and finds nothing the trace does not allow); the second
#    is not, and its prompts are in the cache from the first: the fit says
#    it was warm.
twin_sim llama2
Q= replay w1 --concurrency 4 --requests 20 --reset-prefix-cache
expect_grep "reset before 1 of 1 runs (llama.cpp POST /slots/ID?action=erase, 4 slots, in a fresh server's order)" "$T/w1.err"
h1=$(hits)
replay w2 --concurrency 4 --requests 20
h2=$(hits)
# 3b. The erase keeps when each slot was last used, which decides where a
#     request that shares no tenth of its prompt goes: after w2 the slots'
#     order is w2's. The reset pins a one-token request to each slot from
#     the highest down (the sim's log: id_slot), then erases again, so a run
#     at C = 1 takes the slots as on a server just started: 3, 2, 1, 0.
Q= replay w3 --concurrency 1 --requests 4 --reset-prefix-cache
stop_sim
expect_eq "3 2 1 0 3 2 1 0" "$(jq -s -r '[.[] | select(.seq)] | sort_by(.seq) | .[-8:] |
    map(if .id_slot != null then .id_slot else .slot end) | map(tostring) | join(" ")' "$T/llama2.log")" \
    "the pinned requests' slots, then the reset run's"
expect_eq 8 "$(jq -s '[.[] | select(.id_slot != null)] | length' "$T/llama2.log")" \
    "pinned requests: 4 for each reset (w1's, w3's)"
expect_eq "reset: the slots empty, in a fresh server's order" \
    "$("$L" cat "$T/w3.lt.zst" | jq -r 'select(.rec == "run") | .cache_state')" "w3's cache state"
# ground truth: the sim's own counter says the second run hit its cache
awk -v a="$h1" -v b="$h2" 'BEGIN { exit !(b - a > 1000) }' ||
    fail "the second run should hit the sim's cache (hits $h1 -> $h2)"
"$L" sim --fit "$T/w1.lt.zst" "$T/w2.lt.zst" --time-scale $K -o "$T/fitw.profile" >"$T/fitw.txt"
expect_status 0 $? "sim --fit (cache)"
grep -A1 "run 0:" "$T/fitw.txt"
grep -A1 "file 1 run 0" "$T/fitw.txt" | tail -1 >"$T/w1.state"
grep -A1 "file 2 run 0" "$T/fitw.txt" | tail -1 >"$T/w2.state"
expect_grep "cache at start: reset" "$T/w1.state"
expect_no_grep "WARM" "$T/w1.state"
expect_grep "cache at start: warm: 4 of 4 slots" "$T/w2.state"
expect_grep "WARM: an earlier run warmed the cache" "$T/w2.state"

# 4. Saturated only: a closed loop far beyond the slots is backlogged, and
#    a fit on it alone is labelled a guess.
twin_sim llama3 llamacpp
replay sat --concurrency 16 --requests 48
stop_sim
"$L" sim --fit "$T/sat.lt.zst" --time-scale $K -o "$T/fits.profile" >"$T/fits.txt"
expect_status 0 $? "sim --fit (saturated)"
expect_grep "file 1 run 0: backlogged" "$T/fits.txt"
expect_grep "GUESS: every run was backlogged" "$T/fits.txt"

# 5. What cannot be: a time scale beyond any server, a file with no
#    streamed tokens.
"$L" sim --fit "$T/c1.lt.zst" --time-scale 1e308 -o "$T/bad.profile" >"$T/bad.txt" 2>&1
expect_status 1 $? "sim --fit --time-scale 1e308"
expect_grep "cannot be" "$T/bad.txt"
[ ! -e "$T/bad.profile" ] || fail "a refused fit wrote a profile"
# a server a billion times slower than real time: every cost would be 0
"$L" sim --fit "$T/c1.lt.zst" --time-scale 1e-9 -o "$T/bad.profile" >"$T/bad.txt" 2>&1
expect_status 1 $? "sim --fit --time-scale 1e-9"
expect_grep "cannot be: the server ran between a millionth of and a million times" "$T/bad.txt"
[ ! -e "$T/bad.profile" ] || fail "a refused fit wrote a profile (1e-9)"
finish

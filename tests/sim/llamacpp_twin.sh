#!/bin/sh
# The twin against a hidden server that behaves as llama-server does
# (--dialect llamacpp,slot-erase): 4 slots, a prompt's prefill in the same
# step as the running decodes (which wait for it), work per prompt token in
# front of the engine (the chat template and tokenizing in llama-server's
# HTTP threads: it delays a request's first token and holds up no step),
# and llama.cpp's own counters on /metrics. Fitted from a closed loop at 1
# and at 4, with the counters kept (--server-metrics-keep '^llamacpp:'):
# prefill_ms_per_token must come from the metrics, front_ms_per_token from
# the TTFT slope less them, each near the hidden value; then held-out loads
# (closed loops at 2 and 3, an open loop at about half of capacity),
# predicted in virtual time, must match the live sim's figures; and the
# same fit with the front's cost taken out must miss the TTFT, so the term
# is what holds it.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"
L=$LOADTRACE
K=2 # the sim runs K times faster than real time (2: a loaded machine's lag stays small beside a step)

cat >"$T/hidden.profile" <<'EOF'
name = hidden-llama-front
model = tiny-llama-q8
step_ms = 9
step_ms_per_seq = 1.5
decode_ms_per_kv_token = 0
prefill_step_ms = 4
prefill_ms_per_seq = 0
prefill_ms_per_token = 0.6
front_ms_per_token = 0.4
cached_ms_per_token = 0.01
max_running = 4
prefill_seqs = 4
batch_tokens = 2048
max_model_len = 4096
kv_tokens = 16384
block_tokens = 16
vocab = 512
EOF
"$L" synth --arrivals poisson --rate 2 --requests 80 --in uniform:40,400 --out lognormal:40,0.3 \
    --seed 5 -q -o "$T/t.lt.zst" || fail "synth"

start_sim llama --profile "$T/hidden.profile" --dialect llamacpp,slot-erase --time-scale $K -q
# live NAME ARGS...: a run from a cold cache (slot erase), the counters kept
live() {
    n=$1
    shift
    timeout 300 "$L" replay "$T/t.lt.zst" --target "$URL" --reset-prefix-cache \
        --metrics-interval 0.2s --server-metrics-keep '^llamacpp:' -o "$T/$n.lt.zst" -q \
        --no-summary "$@" 2>"$T/$n.err"
    expect_status 0 $? "live replay $n"
}
live c1 --concurrency 1 --requests 30
live c4 --concurrency 4 --requests 40
"$L" sim --fit "$T/c1.lt.zst" "$T/c4.lt.zst" --time-scale $K -o "$T/fit.profile" >"$T/fit.txt"
expect_status 0 $? "sim --fit"
cat "$T/fit.txt"
expect_grep "the server's counters: prefill" "$T/fit.txt"
expect_grep "^  prefill_ms_per_token .* metrics (llama.cpp prompt_seconds_total" "$T/fit.txt"
expect_grep "^  front_ms_per_token .*: timelines less metrics" "$T/fit.txt"
val() { awk -F' = ' -v k="$1" '$1 == k { print $2 }' "$2"; }
within() { # WHAT GOT WANT TOLERANCE
    awk -v g="$2" -v w="$3" -v t="$4" 'BEGIN { e = g / w - 1; exit (e > t || e < -t) }'
    expect_status 0 $? "$1: $2 within $4 of $3"
}
# The counters' cost per token holds the step's fixed part spread over the
# prompt (9 + 4 ms over ~220 tokens): a little above the hidden 0.6.
within "prefill_ms_per_token (metrics)" "$(val prefill_ms_per_token "$T/fit.profile")" 0.6 0.15
within "front_ms_per_token" "$(val front_ms_per_token "$T/fit.profile")" 0.4 0.25

# Held-out loads: the truth is the live sim's own log (model time, K times
# the log's, from when the model was given each request: a loaded client's
# lag is not the server's), the prediction a virtual replay's results;
# p50 of TTFT, TPOT and E2E, model ms.
p50s() { # "ttft tpot e2e" lines on stdin: their p50s
    awk '{ a[NR] = $1; b[NR] = $2; c[NR] = $3 }
        function p50(x, n,   i, j, t) { for (i = 2; i <= n; i++) { t = x[i]
                for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
            return x[int((n + 1) / 2)] }
        END { printf "%.4f %.4f %.4f\n", p50(a, NR), p50(b, NR), p50(c, NR) }'
}
truth() { # FIRST-SEQ LAST-SEQ: the sim log's figures of those requests
    jq -r --argjson lo "$1" --argjson hi "$2" --argjson k $K 'select(.seq and .seq >= $lo and
        .seq <= $hi and .status == 200 and (.tokens_us | length) > 1) |
        [(.tokens_us[0] - .model_us) * $k / 1e3,
         (.tokens_us[-1] - .tokens_us[0]) / ((.tokens_us | length) - 1) * $k / 1e3,
         (.tokens_us[-1] - .model_us) * $k / 1e3] | @tsv' "$T/llama.log" | p50s
}
pred() { # RESULTS
    "$L" cat --no-header "$1" | jq -r 'select(.rec == null and .status == 200 and .out > 1) |
        [(.ft - .sent) / 1e3, (.end - .ft) / (.out - 1) / 1e3, (.end - .sent) / 1e3] | @tsv' | p50s
}
check() { # NAME PROFILE FIRST-SEQ LAST-SEQ VIRTUAL-ARGS...: prints errors; exit 1 beyond tolerance
    n=$1 prof=$2 lo=$3 hi=$4
    shift 4
    "$L" replay "$T/t.lt.zst" --target sim --virtual --profile "$prof" -o "$T/v-$n.lt.zst" -q \
        --no-summary "$@"
    expect_status 0 $? "virtual replay $n"
    set -- $(truth "$lo" "$hi") $(pred "$T/v-$n.lt.zst")
    awk -v n="$n" -v l="$1 $2 $3" -v v="$4 $5 $6" 'BEGIN { split(l, a); split(v, b)
        split("TTFT TPOT E2E", m)
        # TTFT within 15 %: a loaded client sends the requests of a closed loop
        # late and some together, and those share their prefill steps at
        # the sim, which the virtual closed loop, on time, does not do
        for (i = 1; i <= 3; i++) { e = b[i] / a[i] - 1; tol = i == 1 ? 0.15 : 0.10
            printf "  %-8s %-4s p50 live %9.3f ms  twin %9.3f ms  %+6.1f%% (within %d%%)\n", n, m[i], a[i], b[i], 100 * e, 100 * tol
            if (e > tol || e < -tol) bad = 1 }
        exit bad }'
}
heldout() { # NAME ARGS...: the live run of a held-out load
    n=$1
    shift
    live "l-$n" "$@"
}
heldout c2 --concurrency 2 --requests 30
heldout c3 --concurrency 3 --requests 30
# about half of capacity: 2 req/s of model time, so 2 K of the client's
heldout open --rate $((2 * K)) --requests 40
stop_sim
# the sim numbers its inference requests in arrival order: c1 1-30, c4
# 31-70, then the held-out runs
expect_eq 170 "$(jq -s '[.[] | select(.seq)] | length' "$T/llama.log")" "requests in the sim's log"
check c2 "$T/fit.profile" 71 100 --concurrency 2 --requests 30
expect_status 0 $? "C = 2 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check c3 "$T/fit.profile" 101 130 --concurrency 3 --requests 30
expect_status 0 $? "C = 3 predicted (TTFT within 15 %, TPOT and E2E 10 %)"
check open "$T/fit.profile" 131 170 --rate 2 --requests 40
expect_status 0 $? "open loop at 2/s predicted (TTFT within 15 %, TPOT and E2E 10 %)"
# Without the front's cost the same fit misses the idle-ish TTFT.
sed 's/^front_ms_per_token = .*/front_ms_per_token = 0/' "$T/fit.profile" >"$T/nofront.profile"
check c2 "$T/nofront.profile" 71 100 --concurrency 2 --requests 30 >"$T/nofront.txt"
expect_status 1 $? "without front_ms_per_token the C = 2 prediction misses"
cat "$T/nofront.txt"
finish

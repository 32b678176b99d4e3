# The llama.cpp twin tests' set-up and judges (sourced by llamacpp*.sh; it
# sources tests/cli/lib.sh and sim_lib.sh): the hidden server's profile, its
# traces, the live sim and the live runs, the fit; then a fitted value
# against the hidden one, and a virtual replay's p50s against the live sim's
# own log. They read $T, $K and $L.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"
L=$LOADTRACE
K=2 # the sim runs K times faster than real time (2: a loaded machine's lag stays small beside a step)

# hidden_llama KEY=VALUE...: $T/hidden.profile, the hidden server the tests
# share (4 slots that prefill 4 prompts at once, 2048 tokens a step, a
# context of 4096, a KV cache of 16384 tokens in blocks of 16, a vocabulary
# of 512, no cost per KV token or per prefilled sequence, 0.01 ms a cached
# token, a KV stream per slot as llama-server has with -np 4: slot_runs)
# with each KEY=VALUE, the test's own, set or put in place of it.
hidden_llama() {
    {
        for _hl_kv; do printf '%s = %s\n' "${_hl_kv%%=*}" "${_hl_kv#*=}"; done
        cat <<'EOF'
model = tiny-llama-q8
decode_ms_per_kv_token = 0
prefill_ms_per_seq = 0
cached_ms_per_token = 0.01
max_running = 4
slot_runs = 1
prefill_seqs = 4
batch_tokens = 2048
max_model_len = 4096
kv_tokens = 16384
block_tokens = 16
vocab = 512
EOF
    } | awk -F' = ' '!seen[$1]++' >"$T/hidden.profile"
}
# twin_synth FILE SYNTH-ARGS...: a trace of Poisson arrivals at 2/s
twin_synth() {
    _sy_f=$1
    shift
    "$L" synth --arrivals poisson --rate 2 "$@" -q -o "$_sy_f" || fail "synth $_sy_f"
}
# twin_sim [NAME [DIALECT]]: the live sim of the hidden profile, K times
# faster than real time, its log in $T/NAME.log (llama; llamacpp,slot-erase)
twin_sim() {
    start_sim "${1:-llama}" --profile "$T/hidden.profile" --dialect "${2:-llamacpp,slot-erase}" \
        --time-scale "$K" -q
}
# twin_live NAME TRACE ARGS...: a live replay of TRACE against $URL from a
# cold cache (slot erase), llama.cpp's counters kept, into $T/NAME.lt.zst
twin_live() {
    _tl_n=$1 _tl_tr=$2
    shift 2
    timeout 300 "$LOADTRACE" replay "$_tl_tr" --target "$URL" --reset-prefix-cache \
        --metrics-interval 0.2s --server-metrics-keep '^llamacpp:' -o "$T/$_tl_n.lt.zst" -q \
        --no-summary "$@" 2>"$T/$_tl_n.err"
    expect_status 0 $? "live replay $_tl_n"
}
# twin_loops TRACE C:N...: closed loops of C requests in flight for N
# requests, each a twin_live run named cC
twin_loops() {
    _lo_tr=$1
    shift
    for _lo_cn; do
        twin_live "c${_lo_cn%%:*}" "$_lo_tr" --concurrency "${_lo_cn%%:*}" --requests "${_lo_cn#*:}"
    done
}
# twin_fit RUN...: sim --fit of the live runs $T/RUN.lt.zst into
# $T/fit.profile, its report in $T/fit.txt and on stdout
twin_fit() {
    for _fi_r; do # the arguments become the runs' files
        set -- "$@" "$T/$_fi_r.lt.zst"
        shift
    done
    "$L" sim --fit "$@" --time-scale "$K" -o "$T/fit.profile" >"$T/fit.txt"
    expect_status 0 $? "sim --fit"
    cat "$T/fit.txt"
}

val() { awk -F' = ' -v k="$1" '$1 == k { print $2 }' "$2"; }
within() { # WHAT GOT WANT TOLERANCE
    awk -v g="$2" -v w="$3" -v t="$4" 'BEGIN { e = g / w - 1; exit (e > t || e < -t) }'
    expect_status 0 $? "$1: $2 within $4 of $3"
}
# Held-out loads: the truth is the live sim's own log (model time, K times
# the log's, from when the model was given each request: a loaded client's
# lag is not the server's), the prediction a virtual replay's results;
# p50 of TTFT and E2E and the mean TPOT, model ms. TPOT by its mean: in a
# closed loop a request's TPOT is its decode's own steps plus whichever
# other prompts' prefills landed among them, so over 30 requests it spreads
# in steps (10 to 48 ms, sim_llamacpp_twin_ctx), and the p50 sits at a gap
# that one request's phase moves by 15 %; the mean moves by a thirtieth of it.
p50s() { # "ttft tpot e2e" lines on stdin: p50 of TTFT, mean TPOT, p50 of E2E
    awk '{ a[NR] = $1; b[NR] = $2; c[NR] = $3; sb += $2 }
        function p50(x, n,   i, j, t) { for (i = 2; i <= n; i++) { t = x[i]
                for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
            return x[int((n + 1) / 2)] }
        END { printf "%.4f %.4f %.4f\n", p50(a, NR), sb / NR, p50(c, NR) }'
}
# truth FIRST LAST: the sim log's figures of the runs' requests FIRST to
# LAST, numbered from 1 in arrival order; the requests a reset pins to each
# slot (id_slot, replay_server.c order_slots) are not the runs' and are left out
truth() {
    jq -s -r --argjson lo "$1" --argjson hi "$2" --argjson k $K '[.[] | select(.seq and
        .id_slot == null)] | sort_by(.seq) | .[$lo - 1:$hi][] | select(.status == 200 and
        (.tokens_us | length) > 1) |
        [(.tokens_us[0] - .model_us) * $k / 1e3,
         (.tokens_us[-1] - .tokens_us[0]) / ((.tokens_us | length) - 1) * $k / 1e3,
         (.tokens_us[-1] - .model_us) * $k / 1e3] | @tsv' "$T/llama.log" | p50s
}
pred() { # RESULTS
    "$L" cat --no-header "$1" | jq -r 'select(.rec == null and .status == 200 and .out > 1) |
        [(.ft - .sent) / 1e3, (.end - .ft) / (.out - 1) / 1e3, (.end - .sent) / 1e3] | @tsv' | p50s
}
# TWIN_TTFT=reported: TTFT is printed, not judged (an ASan build's client
# and sim cost several times more per request, which lands in TTFT)
check() { # NAME PROFILE FIRST LAST VIRTUAL-ARGS...: prints errors; exit 1 beyond tolerance
    n=$1 prof=$2 lo=$3 hi=$4
    shift 4
    "$L" replay "$T/t.lt.zst" --target sim --virtual --profile "$prof" -o "$T/v-$n.lt.zst" -q \
        --no-summary "$@"
    expect_status 0 $? "virtual replay $n"
    set -- $(truth "$lo" "$hi") $(pred "$T/v-$n.lt.zst")
    awk -v n="$n" -v l="$1 $2 $3" -v v="$4 $5 $6" -v ttft="${TWIN_TTFT:-judged}" 'BEGIN { split(l, a); split(v, b)
        split("TTFT TPOT E2E", m); split("p50 mean p50", st)
        # TTFT within 15 %: a loaded client sends the requests of a closed loop
        # late and some together, and those share their prefill steps at
        # the sim, which the virtual closed loop, on time, does not do
        for (i = 1; i <= 3; i++) { e = b[i] / a[i] - 1; tol = i == 1 ? 0.15 : 0.10
            judged = i > 1 || ttft == "judged"
            printf "  %-8s %-4s %-4s live %9.3f ms  twin %9.3f ms  %+6.1f%% (%s)\n", n, m[i], st[i], a[i], b[i],
                100 * e, judged ? sprintf("within %d%%", 100 * tol) : "not judged"
            if (judged && (e > tol || e < -tol)) bad = 1 }
        exit bad }'
}

# twin_variant NAME KEY VALUE: $T/NAME.profile, the fit with KEY set to VALUE
twin_variant() {
    sed "s/^$2 = .*/$2 = $3/" "$T/fit.profile" >"$T/$1.profile"
}
# misses WHAT VARIANT NAME FIRST LAST VIRTUAL-ARGS...: check NAME
# with $T/VARIANT.profile, whose prediction must miss; its figures printed
misses() {
    _mi_what=$1 _mi_v=$2 _mi_n=$3
    shift 3
    check "$_mi_n" "$T/$_mi_v.profile" "$@" >"$T/$_mi_v.txt"
    expect_status 1 $? "$_mi_what"
    cat "$T/$_mi_v.txt"
}

#!/bin/sh
# The twin on a real server: llama.cpp's llama-server on loopback, fitted
# from closed loops (LT_FIT_C: at every concurrency from 1 to the server's
# slots, so every batch size, because a CPU's decode step is not a line in
# the batch and a size no loop ran is a guess: rand-768x10's 3 decoders
# cost what 4 do, 23.5 ms, where the line from 2 to 4 says 21.8),
# then asked for held-out loads it never saw, each predicted in virtual
# time and checked against a live run of it (compare --check's twin table):
#   cH    another concurrency (LT_HOLD_C, the slots + 2: requests queue)
#   half  an open loop (Poisson) at about half of the measured capacity
#   sat   an open loop near saturation (0.9 of it)
#   long  another trace: prompts of 200 to 600 tokens, at concurrency 2
# and cH and sat once more, live, each compared with the first (the server
# against itself, the floor under any twin's error);
# then, with LT_FINDMAX=1 (the default), the capacity at an SLO searched
# twice on the same server: live only, and --virtual-first with the fitted
# profile (the answers and the live probes each took).
# Every live run starts cold: the server runs with --slot-save-path and
# --cache-ram 0, so replay's --reset-prefix-cache erases every slot before
# each run (the run record says "cache at start: reset"), and the virtual
# run starts with an empty cache too. Every live run keeps llama.cpp's own
# counters (--server-metrics-keep '^llamacpp:'), which the fit reads, and
# the table prints each run's prefill cost per token by them: the server's
# speed as the server measured it, run by run.
#
# Usage: LLAMA_SERVER=path/llama-server LT_MODEL="model.gguf [model2.gguf ...]" \
#            sh bench/run-twin-real.sh [BUILD_DIR]
#   LT_MODEL    one model or several (space-separated): each is served in
#               turn and gets its own table
#   LT_PORT     port for llama-server on 127.0.0.1 (default 18480; must be free)
#   LT_THREADS  llama-server threads (default 1: on a shared machine a
#               second thread waits at every barrier for a core)
#   LT_SLOTS    llama-server -np (default 4)
#   LT_N        requests per run (default 120: a p50 of 40 moves about 10 %
#               between windows of the trace, the size of the targets)
#   LT_MIN_S    seconds a run at C = 1 takes at least (default 60): a model
#               whose 20 requests at C = 1 (a run of its own, first) say it
#               is faster gets more requests in every run (fitted or held
#               out), so that each spans as much of the machine's wander (on
#               the EPYC, stories260K's server moved 20 % in its own decode
#               time between two runs of 120 requests, 7 s each, a minute
#               apart; at 831 a run, 4 %); the capacity probes then last
#               LT_MIN_S each (--duration), at whatever load
#   LT_FIT_C    the closed loops fitted (default 1 to SLOTS; "1 SLOTS" is
#               the two-load fit of docs/sim.md's short recipe)
#   LT_HOLD_C   the held-out concurrency (default SLOTS + 2)
#   LT_ORDER    interleaved (default): the live runs alternate, a fitted
#               loop then a held-out load (the one at the slots first: it
#               sets the open loops' rates), so that the fit and the loads
#               it predicts span the same minutes (on the EPYC VM the
#               server's own speed wanders 7-12 % within minutes, which the
#               sat load's queue turns into tens of per cent of TTFT);
#               fit-first: every fitted loop, then every held-out load, as a
#               user who fits today and predicts later would. Either way the
#               fit reads the fitted loops only, and the predictions are
#               made after the fit
#   LT_NICE     run llama-server and the live replays at this nice value
#               (e.g. -10, as root: on a machine shared with other work the
#               server's step time otherwise follows their load, and no
#               fit of one load predicts another taken minutes later)
#   LT_FINDMAX  1 (default): also the capacity search, live and virtual first
#   KEEP=DIR    keep every file (results, fit, predictions) in DIR/MODEL
#   REUSE=DIR   refit and predict again from the live runs a KEEP=DIR run
#               left in DIR/MODEL (no server is started)
# Prints, per model, the fit, one markdown row per held-out load (p50 and
# p90 errors, %, the throughput error and, not judged, the twin's prefill
# time a token against the server's own on the same requests: where the
# server ran faster or slower than at the fit) with the load average (and
# where the fit measured the server's speed wandering, a second table:
# the same fit's twin with that speed_cv and speed_tau_ms, beside it), and the
# capacity comparison; exit 0 when every figure is within the targets (p50
# 10 %, p90 15 %, throughput 5 %), 3 when not, 2 when something is missing.
# Takes about 20 min for a model that decodes about 110 tokens/s alone
# (one request, -t 1) and 2 for stories260K (about 1,200 tokens/s alone)
# on a 2-core machine at LT_N 120 (6.5 and under 1 at 40), plus the
# capacity searches: 4.5 min each for the first at 40, under 2 for
# stories260K (bench/README.md has the runs; a rand-1024x12 decodes about
# 65 tokens/s alone, not 120). On an Intel VM (2026-12-03): rand-768x6 at
# 112 tokens/s alone 13 min, its two capacity searches at 120 requests a
# probe 28 more; stories260K 10 min with both; 2848 s in all. On the EPYC
# (2026-12-04): rand-768x12 (123 tokens/s) 20 min, its capacity searches
# 18 more; stories260K at LT_MIN_S 60 (831 requests a run) 11 min.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build}
L=$B/loadtrace
[ -x "$L" ] || { echo "run-twin-real.sh: no loadtrace at $L (build it, or pass BUILD_DIR)" >&2; exit 2; }
if [ -z "${REUSE:-}" ]; then
    if [ -z "${LLAMA_SERVER:-}" ] || [ ! -x "${LLAMA_SERVER:-}" ]; then
        echo "run-twin-real.sh: set LLAMA_SERVER to an executable llama-server (got '${LLAMA_SERVER:-}')" >&2
        exit 2
    fi
    [ -n "${LT_MODEL:-}" ] || { echo "run-twin-real.sh: set LT_MODEL to one or more GGUF models" >&2; exit 2; }
    for m in $LT_MODEL; do
        [ -r "$m" ] || { echo "run-twin-real.sh: cannot read the model '$m' (LT_MODEL)" >&2; exit 2; }
    done
    MODELS=$LT_MODEL
else
    MODELS=${LT_MODEL:-$(ls "$REUSE")}
fi
PORT=${LT_PORT:-18480}
THREADS=${LT_THREADS:-1}
SLOTS=${LT_SLOTS:-4}
N=${LT_N:-120}
MIN_S=${LT_MIN_S:-60}
FIT_C=${LT_FIT_C:-$(seq 1 "$SLOTS" | tr '\n' ' ')}
HOLD_C=${LT_HOLD_C:-$((SLOTS + 2))}
ORDER=${LT_ORDER:-interleaved}
case " $FIT_C " in
*" $SLOTS "*) ;;
*) echo "run-twin-real.sh: LT_FIT_C must hold the slots, $SLOTS (its run gives the capacity)" >&2; exit 2 ;;
esac
case $ORDER in
interleaved | fit-first) ;;
*) echo "run-twin-real.sh: LT_ORDER is interleaved or fit-first (got '$ORDER')" >&2; exit 2 ;;
esac
URL=http://127.0.0.1:$PORT
NICE=${LT_NICE:+nice -n $LT_NICE}
ROOT=${REUSE:-${KEEP:-$(mktemp -d)}}
SPID=
cleanup() {
    [ -z "$SPID" ] || { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
    [ -n "${KEEP:-}" ] || [ -n "${REUSE:-}" ] || rm -rf "$ROOT"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
START=$(date +%s)
bad=0

start_server() { # MODEL
    if curl -s --max-time 2 "$URL/health" >/dev/null 2>&1; then
        echo "run-twin-real.sh: something already answers on $URL; set LT_PORT" >&2
        exit 2
    fi
    mkdir -p "$T/slots"
    $NICE "$LLAMA_SERVER" -m "$1" --host 127.0.0.1 --port "$PORT" -np "$SLOTS" -c $((SLOTS * 2048)) \
        -t "$THREADS" --metrics --slots --slot-save-path "$T/slots/" --cache-ram 0 \
        >"$T/server.log" 2>&1 &
    SPID=$!
    i=0
    until curl -sf --max-time 2 "$URL/health" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 240 ] || ! kill -0 "$SPID" 2>/dev/null; then
            echo "run-twin-real.sh: llama-server did not come up:" >&2
            tail -5 "$T/server.log" >&2
            exit 1
        fi
        sleep 0.5
    done
    # One request first: the model's first decode pays for its pages.
    curl -s --max-time 60 "$URL/v1/chat/completions" \
        -d '{"messages":[{"role":"user","content":"hello"}],"max_tokens":8}' >/dev/null
}
stop_server() {
    [ -z "$SPID" ] || { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
    SPID=
}
load() { cut -d' ' -f1 /proc/loadavg; }
live() { # NAME TRACE ARGS...
    n=$1
    tr=$2
    shift 2
    [ -z "${REUSE:-}" ] || return 0
    l0=$(load)
    timeout 1800 $NICE "$L" replay "$tr" --target "$URL" --reset-prefix-cache --metrics-interval 1s \
        --server-metrics-keep '^llamacpp:' -o "$T/live-$n.lt.zst" --no-summary "$@" 2>"$T/live-$n.err" ||
        { echo "live run $n failed:" >&2; tail -3 "$T/live-$n.err" >&2; exit 1; }
    echo "$l0 $(load)" >"$T/load-$n.txt"
}
virt() { # NAME TRACE ARGS...: the twin's prediction, and the wandering twin's when the fit
    # measured the server's speed wandering (wander.profile: the fit's with its speed_cv)
    n=$1
    tr=$2
    shift 2
    "$L" replay "$tr" --target sim --virtual --profile "$T/fit.profile" -o "$T/virt-$n.lt.zst" \
        -q --no-summary "$@" || exit 1
    [ ! -e "$T/wander.profile" ] ||
        "$L" replay "$tr" --target sim --virtual --profile "$T/wander.profile" \
            -o "$T/virt-wander-$n.lt.zst" -q --no-summary "$@" || exit 1
}
table() { # TITLE PREFIX: one row per held-out load, the twin of virt-PREFIX$n against live-$n;
    # the count beyond the targets; exit 1 when any is
    tp=$2
    echo
    echo "| $1 | TTFT p50 | TTFT p90 | TPOT p50 | TPOT p90 | E2E p50 | E2E p90 | throughput | server prefill a token, B against A (not judged) | server's prefill ms/token | load avg |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for n in $FIT_C; do
        n=c$n
        echo "| $n (fitted) | | | | | | | | | $(srv_pf "$T/live-$n.lt.zst") | $(cat "$T/load-$n.txt" 2>/dev/null | tr ' ' '-') |"
    done
    : >"$T/table$tp.txt"
    for n in c$HOLD_C half sat long; do
        "$L" compare "$T/live-$n.lt.zst" "$T/virt-$tp$n.lt.zst" >"$T/cmp-$tp$n.txt" 2>&1
        twin_row "$T/cmp-$tp$n.txt" >"$T/row-$tp$n.txt"
        set -- $(cat "$T/row-$tp$n.txt")
        echo "| $n | ${1:-?} | ${2:-?} | ${3:-?} | ${4:-?} | ${5:-?} | ${6:-?} | ${7:-?} | ${8:--} | $(srv_pf "$T/live-$n.lt.zst") | $(cat "$T/load-$n.txt" 2>/dev/null | tr ' ' '-') |"
        echo "$n $*" >>"$T/table$tp.txt"
    done
    awk '{ for (i = 2; i <= 8; i++) { v = $i; sub(/%/, "", v); v += 0; v = v < 0 ? -v : v
               lim = i == 8 ? 5 : (i % 2 == 0 ? 10 : 15); n++; if (v > lim) out++ } }
         END { printf "%d of %d figures beyond the targets (p50 10 %%, p90 15 %%, throughput 5 %%)\n", out, n
               exit out > 0 }' "$T/table$tp.txt"
}
twin_row() { # COMPARE-OUTPUT: the twin table's p50 and p90 errors of TTFT, TPOT, E2E, throughput's,
    # and the server's own prefill time a token against the twin's (not judged: the server's speed)
    awk '/twin: B as a prediction/ { on = 1; next }
        on && ($1 == "TTFT" || $1 == "TPOT" || $1 == "E2E") { printf " %s %s", $4, $7 }
        on && $1 == "throughput" { printf " %s", $7 }
        on && $1 == "server" && $2 == "prefill" { printf " %s", $8 }
        on && /twin verdict/ { on = 0 }' "$1"
}
# The server's own prefill cost per prompt token over a run (its counters,
# first to last sample), ms; "-" without them.
srv_pf() {
    "$L" cat --no-header "$1" | jq -rs '[.[] | select(.rec == "scrape" and .raw != null) |
        .raw | select(.["llamacpp:prompt_seconds_total"] != null)] |
        if length < 2 then "-" else
        ((.[-1]["llamacpp:prompt_seconds_total"] - .[0]["llamacpp:prompt_seconds_total"]) * 1e3 /
         ([.[-1]["llamacpp:prompt_tokens_total"] - .[0]["llamacpp:prompt_tokens_total"], 1] | max) |
         . * 1000 | round / 1000) end'
}
ok_rate() { # RESULTS: ok requests a second, from the first one sent to the last one's end
    "$L" cat --no-header "$1" | jq -rs '[.[] | select(.rec == null and .status == 200)] |
        (length) / (((map(.end) | max) - (map(.sent) | min)) / 1e6)'
}
p50() { # RESULTS FIELD-EXPR: the p50 of a jq expression over the ok results, ms
    "$L" cat --no-header "$1" | jq -rs "[.[] | select(.rec == null and .status == 200) | $2] | sort |
        if length == 0 then 0 else .[(length - 1) / 2 | floor] / 1e3 end"
}

again() { # HELD AGAIN: a table row, the live run AGAIN against the live run HELD (not a twin)
    [ -e "$T/live-$2.lt.zst" ] || return 0
    "$L" compare --twin "$T/live-$1.lt.zst" "$T/live-$2.lt.zst" >"$T/cmp-$2.txt" 2>&1
    set -- "$1" "$2" $(twin_row "$T/cmp-$2.txt")
    echo "| $1 again: the server against itself, minutes later (not a twin) | ${3:-?} | ${4:-?} | ${5:-?} | ${6:-?} | ${7:-?} | ${8:-?} | ${9:-?} | ${10:--} | $(srv_pf "$T/live-$2.lt.zst") | $(cat "$T/load-$2.txt" 2>/dev/null | tr ' ' '-') |"
}

fitted() { # cN: a fitted closed loop at concurrency N (the one at the slots
    # longer: it gives the capacity too)
    c=${1#c}
    n=$NM
    [ "$c" != "$SLOTS" ] || n=$((NM * 3 / 2))
    live "c$c" "$T/a.lt.zst" --concurrency "$c" --requests "$n"
}
held() { # NAME: a held-out load, live; again and again-sat are cH and sat
    # once more, the server against itself (the floor under any twin's
    # error: near saturation a few per cent of the server's own speed are
    # tens of per cent of queueing)
    case $1 in
    c* | again) live "$1" "$T/a.lt.zst" --concurrency "$HOLD_C" --requests "$NM" ;;
    half) live half "$T/a.lt.zst" --rate "$half" --requests "$NM" ;;
    sat | again-sat) live "$1" "$T/a.lt.zst" --rate "$sat" --requests "$NM" ;;
    long) live long "$T/b.lt.zst" --concurrency 2 --requests "$NM" ;;
    esac
}
rates() { # the capacity (requests/s the server finished in the closed loop at its slots) and the open loops' rates
    cap=$(ok_rate "$T/live-c$SLOTS.lt.zst")
    half=$(awk -v c="$cap" 'BEGIN { printf "%.3f", c * 0.5 }')
    sat=$(awk -v c="$cap" 'BEGIN { printf "%.3f", c * 0.9 }')
}
HELD="c$HOLD_C half sat long again again-sat"

for MODEL in $MODELS; do
    mname=$(basename "$MODEL" .gguf)
    T=$ROOT/$mname
    mkdir -p "$T"
    echo "== $mname"
    if [ -z "${REUSE:-}" ]; then
        # enough requests for runs lengthened by LT_MIN_S (a tiny model's)
        "$L" synth --arrivals poisson --rate 1 --requests 6000 --in uniform:40,200 --out lognormal:60,0.3 \
            --seed 7 -q -o "$T/a.lt.zst" || exit 1
        "$L" synth --arrivals poisson --rate 1 --requests 6000 --in uniform:200,600 --out lognormal:60,0.3 \
            --seed 8 -q -o "$T/b.lt.zst" || exit 1
        start_server "$MODEL"
        # How long a request takes alone: a run of 20 at C = 1, not fitted
        live cal "$T/a.lt.zst" --concurrency 1 --requests 20
        awk -v r="$(ok_rate "$T/live-cal.lt.zst")" -v n="$N" -v m="$MIN_S" \
            'BEGIN { k = int(m * r + 0.999); print (k > n ? k : n) }' >"$T/n.txt"
    fi
    # requests a run (the fit's and the held-out loads')
    NM=$(cat "$T/n.txt" 2>/dev/null || echo "$N")
    [ "$NM" = "$N" ] || echo "$N requests at C = 1 take under $MIN_S s: every run of this model has $NM (LT_MIN_S)"
    echo "uptime before: $(uptime)"
    # The fitted closed loops and the held-out loads, live; the run at the
    # slots first, as it gives the capacity the open loops are set by
    fitted c$SLOTS
    rates
    echo "capacity at $SLOTS slots: $cap requests/s; held-out rates $half and $sat"
    rest=
    for c in $FIT_C; do
        [ "$c" = "$SLOTS" ] || rest="$rest c$c"
    done
    # interleaved: one fitted loop, one held-out load, in turn (the fit and
    # the loads it predicts then span the same minutes of the machine's
    # wander); fit-first: the held-out loads after every fitted loop
    set -- $HELD
    for r in $rest; do
        fitted "$r"
        [ "$ORDER" = fit-first ] || [ $# -eq 0 ] || { held "$1"; shift; }
    done
    for h in "$@"; do
        held "$h"
    done
    fits=
    for c in $FIT_C; do
        fits="$fits $T/live-c$c.lt.zst"
    done
    "$L" sim --fit $fits -o "$T/fit.profile" >"$T/fit.txt" || { cat "$T/fit.txt"; exit 1; }
    cat "$T/fit.txt"
    rm -f "$T/wander.profile"
    # "  speed_cv 0.154, speed_tau_ms 374.6 measured: ...": a twin that wanders with it too
    cv=$(awk '$1 == "speed_cv" && $5 == "measured:" { sub(/,$/, "", $2); print $2 }' "$T/fit.txt")
    tau=$(awk '$1 == "speed_cv" && $5 == "measured:" { print $4 }' "$T/fit.txt")
    [ -z "$cv" ] || sed "s/^speed_cv = .*/speed_cv = $cv/; s/^speed_tau_ms = .*/speed_tau_ms = $tau/" \
        "$T/fit.profile" >"$T/wander.profile"
    virt c$HOLD_C "$T/a.lt.zst" --concurrency "$HOLD_C" --requests "$NM"
    virt half "$T/a.lt.zst" --rate "$half" --requests "$NM"
    virt sat "$T/a.lt.zst" --rate "$sat" --requests "$NM"
    virt long "$T/b.lt.zst" --concurrency 2 --requests "$NM"
    echo "uptime after: $(uptime)"

    table "$mname" "" || bad=1
    again c$HOLD_C again
    again sat again-sat
    [ ! -e "$T/wander.profile" ] || table "$mname, the twin whose speed wanders (the speed_cv measured)" wander- || :
    echo

    if [ "${LT_FINDMAX:-1}" = 1 ]; then
        # An SLO the server meets at low load with room to spare: TTFT and
        # E2E at 8 times their C = 1 p50 (on a shared machine a step of a
        # tiny model is a millisecond, and another process's time slice
        # stretches a request several-fold at any load; the answer is then
        # where the queue builds, near saturation).
        ttft=$(p50 "$T/live-c1.lt.zst" '.ft - .sent' | awk '{ printf "%d", $1 * 8 + 1 }')
        e2e=$(p50 "$T/live-c1.lt.zst" '.end - .sent' | awk '{ printf "%d", $1 * 8 + 1 }')
        slo="ttft=${ttft}ms,e2e=${e2e}ms"
        for how in live virtual-first; do
            [ -z "${REUSE:-}" ] || continue
            extra=
            [ "$how" = live ] || extra="--virtual-first=$T/fit.profile"
            t0=$(date +%s)
            l0=$(load)
            # --requests bounds each probe (a slow server's probes would
            # otherwise take the 118 requests of +-0.05 at ~0.5 req/s each);
            # for a model LT_MIN_S lengthened, --duration does instead: every
            # probe lasts LT_MIN_S at its load (a count would be 14 minutes
            # a probe at the trace's 1 req/s, where the live-only search
            # starts, and 8 s at stories260K's capacity, where its server
            # moved 18 % between two searches of 120-request probes)
            bound="--requests $N"
            [ "$NM" = "$N" ] || bound="--duration ${MIN_S}s"
            timeout 3600 $NICE "$L" replay "$T/a.lt.zst" --target "$URL" --find-max rate --slo "$slo" \
                $bound --reset-prefix-cache $extra -o "$T/cap-$how.lt.zst" \
                >"$T/cap-$how.txt" 2>&1
            echo "$how: $(( $(date +%s) - t0 )) s, load $l0-$(load)" >>"$T/cap-$how.txt"
        done
        echo
        echo "capacity at SLO $slo (90 % of requests):"
        for how in live virtual-first; do
            grep -E "^capacity \(|^virtual first:|^(live|virtual-first): [0-9]+ s" "$T/cap-$how.txt" |
                sed "s/^/  $how: /"
        done
    fi
    [ -n "${REUSE:-}" ] || stop_server
done
echo "run-twin-real.sh: $(( $(date +%s) - START )) s in all"
[ $bad = 0 ] || exit 3
exit 0

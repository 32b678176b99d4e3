#!/bin/sh
# replay --find-max rate --virtual-first: the live probes confirm the
# model's answer rather than search again. Against a sim (started here, its
# --log the ground truth) that runs the profile the virtual search is given:
#  1. a live-only search, for the answer and its live probes;
#  2. virtual first with the sim's own profile: at most a third of the
#     live-only search's live probes (rounded up), and its answer within a
#     step of the precision of the live-only one;
#  3. virtual first with a profile whose costs are 30 % high, and one 30 %
#     low: the model is wrong, the live search falls back and still finds
#     the live-only answer within a step.
# Live probes are counted from the sim's log: every prompt of the trace has
# a length of its own, and each probe sends each request once, so the most
# often seen length is the number of probes.
# Nothing here reads a wall clock.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
SLO=ttft=50ms,tpot=2.5ms
P=0.05

# 130 requests (a probe replays them all: fewer than a window's 139), at
# 20 req/s (Poisson, by Park and Miller's generator), prompts of 150 to 279 tokens, each its
# own length; the capacity at the SLO is about 5 times the trace's rate, so
# that a live-only search grows 3 or 4 times and then bisects.
awk 'BEGIN { x = 12345; t = 0
    for (i = 0; i < 130; i++) {
        x = (x * 16807) % 2147483647
        t += -log(x / 2147483647) / 20
        printf "{\"t\":%d,\"in\":%d,\"out\":%d}\n", t * 1e6, 150 + i, 100 + (i * 37) % 100 } }' \
    >"$T/t.jsonl"
"$L" import --from jsonl "$T/t.jsonl" -o "$T/t.lt.zst" -q || fail "import"

# The default profile's costs 20 times smaller (so that a probe near the
# capacity lasts about a second), times k: the sim's profile at k = 1.
profile() { # k file
    awk -v k="$1" 'BEGIN { s = k / 20
        printf "step_ms = %g\nstep_ms_per_seq = %g\nprefill_step_ms = %g\n", 5.7 * s, 0.19 * s, 40 * s
        printf "prefill_ms_per_seq = %g\nprefill_ms_per_token = %g\ncached_ms_per_token = %g\n",
            85 * s, 0.05 * s, 0.05 * s }' >"$2"
}
profile 1 "$T/true.profile"
profile 1.3 "$T/high.profile"
profile 0.7 "$T/low.profile"

# search NAME [replay options...]: a live search against a sim of its own
# running true.profile; its results in $T/NAME.lt.zst, its output in
# $T/NAME.out, the sim's log in $T/NAME.log (sim_start's)
search() {
    name=$1
    shift
    start_sim "$name" --profile "$T/true.profile"
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --find-max rate --slo $SLO --precision $P \
        --max-probes 24 -o "$T/$name.lt.zst" "$@" >"$T/$name.out" 2>"$T/$name.err"
    expect_status 0 $? "search $name"
    stop_sim
}
# live probes the sim saw: the count of the most often seen prompt length
sim_probes() { # name
    streams "$T/$1.log" | jq -r .prompt_tokens | sort | uniq -c | sort -rn |
        awk 'NR == 1 { print $1 } END { if (NR == 0) print 0 }'
}
# lo and hi of the live answer
answer() { # name
    "$L" analyze --json "$T/$1.lt.zst" | jq -r '"\(.capacity.live.max_ok) \(.capacity.live.min_fail)"'
}

# ---- 1. live only ----
search live
n_live=$(sim_probes live)
expect_grep "; $n_live live probes, " "$T/live.out"
set -- $(answer live)
live_lo=$1 live_hi=$2
[ "$live_lo" != null ] && [ "$live_hi" != null ] || fail "no live-only answer: $(cat "$T/live.out")"
# the test is only worth its name when the live-only search grew and
# bisected: a third of it is then 3 probes or more
[ "$n_live" -ge 7 ] || fail "the live-only search took $n_live live probes: the trace is too near the capacity"
limit=$(((n_live + 2) / 3))

# within a step: the two brackets overlap, or miss by at most one step
near_live() { # name what
    set -- "$1" "$2" $(answer "$1")
    [ "$3" != null ] && [ "$4" != null ] || { fail "$2: no answer: $(cat "$T/$1.out")"; return; }
    awk -v lo="$3" -v hi="$4" -v llo="$live_lo" -v lhi="$live_hi" -v p=$P \
        'BEGIN { exit !(hi <= lo * (1 + p) * (1 + 1e-9) && lo <= lhi * (1 + p) && llo <= hi * (1 + p)) }' ||
        fail "$2: live answer $3 / $4, live-only $live_lo / $live_hi: not within a step"
}

# ---- 2. virtual first, the sim's own profile ----
search right --virtual-first="$T/true.profile"
n_right=$(sim_probes right)
expect_grep "; $n_right live probes, " "$T/right.out"
[ "$n_right" -le "$limit" ] ||
    fail "virtual first with the sim's profile took $n_right live probes, more than a third of the live-only $n_live ($limit): $(cat "$T/right.out")"
near_live right "virtual first with the sim's profile"
expect_grep "^virtual first: the live probes confirmed the model's answer" "$T/right.out"

# ---- 3. the model 30 % off: the live search falls back ----
for off in high low; do
    search "$off" --virtual-first="$T/$off.profile"
    n_off=$(sim_probes "$off")
    expect_grep "; $n_off live probes, " "$T/$off.out"
    near_live "$off" "virtual first with costs 30 % $off"
    expect_grep "^virtual first: the model's answer .* was off by more than a step" "$T/$off.out"
done
finish

#!/bin/sh
# Replay in trace time streams the trace (plan/README.md "Streaming": it
# holds the requests 4,096 ahead of the next to leave and gives back
# those that are over), while --requests reads every request first. On a
# trace of 12,000 requests in sessions of 4 turns (3/4 of them later turns
# that wait for their previous turn's answer and think time, most of them
# beyond the first 4,096), a virtual replay streamed and one with
# --requests 12,000 (every session kept: the same schedule) must write
# the same results, request by request; and the later turns did wait (the
# model is slower than the think times), or this would test nothing.
. "$LT_SRC/tests/cli/lib.sh"
L=$LOADTRACE

"$L" synth --arrivals poisson --rate 100 --requests 12000 --turns fixed:4 --think 1s \
    --in fixed:32 --out fixed:8 --prefix 0.5,64 --seed 7 -q -o "$T/t.lt.zst" || fail "synth"
for how in streamed loaded; do
    opt=
    [ "$how" = loaded ] && opt="--requests 12000"
    # shellcheck disable=SC2086 # opt is two words or none
    "$L" replay "$T/t.lt.zst" --target sim --virtual --speed 20 $opt -o "$T/$how.lt.zst" -q \
        --no-summary || fail "virtual replay ($how)"
    "$L" cat --no-header "$T/$how.lt.zst" | jq -c 'select(.rec == null)' | sort >"$T/$how.jsonl"
done
expect_eq 12000 "$(wc -l <"$T/streamed.jsonl")" "results, streamed"
expect_eq 12000 "$(jq -r .i "$T/streamed.jsonl" | sort -u | wc -l)" "distinct requests, streamed"
cmp -s "$T/streamed.jsonl" "$T/loaded.jsonl" || fail "the streamed replay's results differ from the loaded one's"
# turns that left later than their own (sped up) time, past the lookahead
"$L" cat --no-header "$T/t.lt.zst" | jq -r .t >"$T/t.txt"
jq -r '[.i, .sched] | @tsv' "$T/streamed.jsonl" | sort -n | paste "$T/t.txt" - |
    awk '$2 > 4096 && $3 > $1 / 20 + 1000 { n++ } END { print n + 0 }' >"$T/late"
[ "$(cat "$T/late")" -ge 1000 ] || fail "only $(cat "$T/late") turns past the lookahead waited for their previous turn"
finish

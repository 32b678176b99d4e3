#!/bin/sh
# Every stream dialect of the sim (role-only first chunk or not, usage in its
# own chunk or in the last one, reasoning as "reasoning" or
# "reasoning_content", a connection closed after every response) gives the
# right TTFT, TTFC and token counts: each request's TTFT (first token-bearing
# chunk - sent) is never shorter than the sim's own first-token time (first
# emission - arrival: the client sends before the sim's arrival and reads
# after its emission, on the same clock), so a role chunk taken for a token
# (at ~0 against the sim's ~115 ms) fails; and not longer than that by more
# than a loaded machine's delivery lag; out / reasoning match the sim's;
# TTFC is the time of the first content chunk, the one after the reasoning
# chunks (equal to TTFT only when a stalled client read both at once).
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 5 --requests 5 --in fixed:1000 --out fixed:16 -q \
    -o "$T/t.lt.zst" || fail "synth"

for d in vllm no-role-chunk usage-in-last reasoning close no-role-chunk,usage-in-last,reasoning,close; do
    # --time-scale 2: a prefill of about 115 ms, far from the role chunk's ~0
    start_sim "d$d" --dialect "$d" --time-scale 2
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" --reasoning-effort high -o "$T/r.lt.zst" -q \
        --no-summary
    expect_status 0 $? "replay, dialect $d"
    stop_sim
    streams "$SIM_LOG" | jq -s -r 'sort_by(.arrival_us)[] |
        "\(.tokens_us[0] - .arrival_us) \(.out) \(.reasoning_tokens) \(.prompt_tokens)"' > "$T/sim.txt"
    results "$T/r.lt.zst" | jq -s -r 'sort_by(.sent)[] |
        "\(.ft - .sent) \(.out) \(.reasoning) \(.in) \(.fc - .ft) \(.err) \((.reasoning // 0) as $r | (.fc - .sent) ==
         ([.chunks | to_entries[] | select(.key % 2 == 0) | .value] | .[0:$r + 1] | add))"' > "$T/rep.txt"
    expect_eq 5 "$(wc -l < "$T/sim.txt")" "requests the sim saw ($d)"
    paste -d ' ' "$T/sim.txt" "$T/rep.txt" | awk -v d="$d" '
        { dt = $5 - $1
          if (dt < -1000 || dt > 250000) { print d ": TTFT " $5 " us vs the sim'"'"'s " $1 " us"; bad = 1 }
          if ($1 < 50000) { print d ": the sim'"'"'s TTFT is too short to tell a role chunk from a token"; bad = 1 }
          if ($2 != $6 || $3 != $7 || $4 != $8) { print d ": out/reasoning/in " $6 "/" $7 "/" $8 " vs the sim'"'"'s " $2 "/" $3 "/" $4; bad = 1 }
          if ($3 > 0 && ($9 < 0 || ($9 == 0 && $11 != "true"))) { print d ": reasoning came first but TTFC = TTFT"; bad = 1 }
          if ($3 > 0 && $11 != "true") { print d ": TTFC is not the time of the first content chunk"; bad = 1 }
          if ($10 != "null") { print d ": error " $10; bad = 1 } }
        END { exit bad }' >&2 || fail "dialect $d: TTFT or token counts differ from the sim's log"
done
finish

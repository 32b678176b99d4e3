#!/bin/sh
# import --infer-sessions on traces shaped as real multi-turn Mooncake
# traces are (512-token blocks): a next turn's blocks extend all but the
# last block of the previous turn, whose partial last block changed id once
# the next turn appended to it. The answers are known by construction: the
# generator prints each request's conversation and turn, and awk counts
# the sessions, the links and the turns per session. Hand-built chains
# add ties, shapes that would make cycles, and ids that do not form a
# prefix ([9,2,3] after [1,2]).
set -eu
: "${LOADTRACE:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
check() { # NAME GOT WANT
    if [ "$2" = "$3" ]; then echo "ok   $1: $(printf %s "$2" | cut -c1-100)"; else fail "$1: got '$2', want '$3'"; fi
}
# "session/turn " of every record of a trace, in order ("-" when none)
sessions_of() {
    "$LOADTRACE" cat "$1" | awk 'NR > 1 { if ($0 ~ /"session":/) { s = $0; sub(/.*"session":/, "", s); sub(/,.*/, "", s)
        k = $0; sub(/.*"turn":/, "", k); sub(/[,}].*/, "", k); printf "%s/%s ", s, k } else printf "- " }'
}

# ---- 60 conversations of 1 to 12 turns, interleaved in time. Every prompt
# starts with a full 512-token system prompt block (id 0); then come the
# conversation's blocks. A block that is full has one id for good; the last,
# partial block has an id of its turn, so the next turn, which appends the
# answer and a new message, changes it. Column 1 (cut off) is the sort key,
# column 2 the conversation, column 3 the turn.
awk 'BEGIN { srand(17)
    for (c = 1; c <= 60; c++) { n = 1 + int(rand() * 12); t = c * 41; in_ = 1025 + int(rand() * 510)
        for (k = 0; k < n; k++) { t += 300 + int(rand() * 2500); out = 5 + int(rand() * 300)
            nb = int((in_ + 511) / 512); ids = "0"
            for (j = 1; j < nb; j++)
                ids = ids ", " (c * 1000000 + j * 1000 + (((j + 1) * 512 <= in_) ? 0 : k + 1))
            printf "%09d %d %d {\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [%s]}\n", t, c, k, t, in_, out, ids
            in_ += out + 1 + int(rand() * 700) } } }' | sort -n -k1,1 -s | cut -d' ' -f2- >conv.key
cut -d' ' -f3- conv.key >conv.jsonl
check "generator: some turns kept a partial last block that the next turn changed" \
    "$(awk '$2 > 0 { n++ } END { print (n > 200) }' conv.key)" 1

"$LOADTRACE" import --from mooncake --infer-sessions conv.jsonl -o conv.lt.zst 2>conv.err
cat conv.err
# sessions are numbered in order of first appearance; turns as built
want=$(awk '{ if (!($1 in s)) s[$1] = n++; printf "%d/%d ", s[$1], $2 }' conv.key)
check "every (session, turn) as built" "$(sessions_of conv.lt.zst)" "$want"
convs=$(awk '{ s[$1] = 1 } END { print length(s) }' conv.key)
check "the summary: sessions and linked turns" \
    "$(sed -n 's/.*inferred \([0-9]*\) sessions from prefix blocks; \([0-9]*\) requests continue.*/\1 \2/p' conv.err)" \
    "$convs $(($(wc -l <conv.key) - convs))"
# turns per session in bins of 1, 2-3, 4-7, 8-15, as the summary prints them
want=$(awk '{ if ($2 + 1 > n[$1]) n[$1] = $2 + 1 } END {
    for (c in n) { b = (n[c] >= 8) ? 3 : (n[c] >= 4) ? 2 : (n[c] >= 2) ? 1 : 0; h[b]++; if (n[c] > mx) mx = n[c]; tot += n[c]; ns++ }
    printf "1: %d, 2-3: %d, 4-7: %d, 8-15: %d; longest %d, mean %.2f", h[0], h[1], h[2], h[3], mx, tot / ns }' conv.key)
check "the summary: turns per session" "$(sed -n 's/.*turns per session: //p' conv.err)" "$want"
check "info agrees on the sessions" "$("$LOADTRACE" info conv.lt.zst | awk '$1 == "sessions" { print $2 }')" "$convs"

# ---- hand-built chains, each with its known answer
cat >hand.jsonl <<'EOF'
{"timestamp": 0, "input_length": 1100, "output_length": 9, "hash_ids": [1, 2, 3]}
{"timestamp": 1, "input_length": 1700, "output_length": 9, "hash_ids": [1, 2, 4, 5]}
{"timestamp": 2, "input_length": 2300, "output_length": 9, "hash_ids": [1, 2, 4, 6, 7]}
{"timestamp": 3, "input_length": 1200, "output_length": 9, "hash_ids": [50, 51, 52]}
{"timestamp": 4, "input_length": 1200, "output_length": 9, "hash_ids": [50, 51, 53]}
{"timestamp": 5, "input_length": 1800, "output_length": 9, "hash_ids": [50, 51, 54, 55]}
{"timestamp": 6, "input_length": 800, "output_length": 9, "hash_ids": [1, 2]}
{"timestamp": 7, "input_length": 1300, "output_length": 9, "hash_ids": [9, 2, 3]}
{"timestamp": 8, "input_length": 1100, "output_length": 9, "hash_ids": [80, 81, 82]}
{"timestamp": 8, "input_length": 1200, "output_length": 9, "hash_ids": [80, 81, 83]}
{"timestamp": 8, "input_length": 1300, "output_length": 9, "hash_ids": [80, 81, 84]}
{"timestamp": 9, "input_length": 600, "output_length": 9, "hash_ids": [90, 91]}
{"timestamp": 10, "input_length": 1100, "output_length": 9, "hash_ids": [90, 91, 92]}
{"timestamp": 11, "input_length": 1100, "output_length": 9, "hash_ids": [90, 91, 92]}
{"timestamp": 12, "input_length": 1600, "output_length": 9, "hash_ids": [90, 91, 92, 96]}
{"timestamp": 13, "input_length": 10, "output_length": 9}
EOF
# 1-3: a chain whose last block grows each turn; 4: [50,51,53] is not longer
# than [50,51,52]; 5: [50,51,54,55] extends both of them but their last
# block: a tie; 7: [1,2] extends nothing earlier (it is shorter than the
# chain it begins); 8: [9,2,3] does not extend [1,2]; 9-11 at one time,
# each extends the others but their last block: linked in file order, never
# in a cycle; 12-13: a full prefix; 14: the same prompt again, its previous
# turn already continued (a branch); 15: extends 13 and 14 alike, a tie.
"$LOADTRACE" import --from mooncake --infer-sessions hand.jsonl -o hand.lt.zst 2>hand.err
check "hand-built: (session, turn) of each" "$(sessions_of hand.lt.zst)" \
    "0/0 0/1 0/2 1/0 2/0 3/0 4/0 5/0 6/0 6/1 6/2 7/0 7/1 8/0 9/0 - "
check "hand-built: the summary" "$(sed -n 's/^loadtrace import: inferred //p' hand.err)" \
    "10 sessions from prefix blocks; 5 requests continue an earlier turn; of the rest, 2 fit two earlier requests equally, 1 extend one that already has a next turn, 1 are not longer than the one they extend"
check "hand-built: turns per session" "$(sed -n 's/.*turns per session: //p' hand.err)" "1: 7, 2-3: 3; longest 3, mean 1.50"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }

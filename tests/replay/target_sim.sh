#!/bin/sh
# replay --target sim (the sim started inside replay's process), and the
# request-building features checked on the sim's side: model discovery and
# a wrong model name, token-id prompts on /v1/completions (exact lengths),
# non-streamed answers, sessions (order, think time, later turns hitting the
# prefix cache), prompts from a corpus, recorded text vs --synthetic-prompts,
# the API key kept out of every file, and the summary printed at the end.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 50 --requests 8 --in uniform:50,400 --out fixed:6 -q \
    -o "$T/t.lt.zst" || fail "synth"

# --- in-process sim, summary on stdout, model discovered
OPENAI_API_KEY=sk-test-SECRET-1234 "$L" replay "$T/t.lt.zst" --target sim --sim-profile fast \
    --sim-log "$T/sim.log" --concurrency 1,2 --requests 6 -o "$T/r.lt.zst" \
    > "$T/out.txt" 2> "$T/err.txt"
expect_status 0 $? "replay --target sim"
expect_grep "Agg tok/s" "$T/out.txt"
expect_grep "model loadtrace-sim-fast" "$T/err.txt"
expect_eq "sim sim" "$(runs "$T/r.lt.zst" | jq -r .target | tr '\n' ' ' | sed 's/ $//')" "run targets"
expect_eq "loadtrace-sim-fast" "$(runs "$T/r.lt.zst" | jq -r .model | sort -u)" "model in the run records"
expect_eq 12 "$(streams "$T/sim.log" | wc -l)" "requests the in-process sim saw"
# the key never reaches a file
for f in "$T/r.lt.zst" "$T/sim.log" "$T/out.txt" "$T/err.txt"; do
    if zstd -dcf "$f" 2>/dev/null | grep -q SECRET || grep -q SECRET "$f"; then
        fail "the API key was written to $f"
    fi
done
# prompt lengths: calibrated text is exact under the sim's rule
expect_eq "$(streams "$T/sim.log" | jq -s -r 'sort_by(.arrival_us)[] | .prompt_tokens' | sort -n | tr '\n' ' ')" \
    "$(results "$T/r.lt.zst" | jq -r '.want_in' | sort -n | tr '\n' ' ')" "prompt tokens the sim counted vs the trace's"

# --- --model is taken as given: no GET /v1/models before the run (the sim
# answers any name; tests/replay/probe.sh has a server that never answers)
"$L" replay "$T/t.lt.zst" --target sim --sim-profile fast --model nope -o "$T/named.lt.zst" \
    -q --no-summary --sim-log "$T/named.log" 2> "$T/named.txt"
expect_status 0 $? "a model named by --model"
expect_eq 0 "$(jq -s '[.[] | select(.path == "/v1/models")] | length' "$T/named.log")" \
    "GET /v1/models with --model given"

# --- the key is taken from the environment only
"$L" replay "$T/t.lt.zst" --target sim --api-key-env LT_NO_SUCH_VAR -o "$T/x.lt.zst" -q 2> "$T/k.txt"
expect_status 1 $? "--api-key-env naming an unset variable"
expect_grep "LT_NO_SUCH_VAR" "$T/k.txt"

# --- completions with token ids, and non-streamed answers, on an external sim
start_sim api --profile fast
"$L" replay "$T/t.lt.zst" --target "$SIM_URL/v1" --api completions --speed 10 -o "$T/c.lt.zst" -q --no-summary
expect_status 0 $? "--api completions"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-stream --speed 10 -o "$T/n.lt.zst" -q --no-summary
expect_status 0 $? "--no-stream"
stop_sim
expect_eq "$(jq -s -r '[.[] | select(.api == "completions")] | sort_by(.arrival_us)[] | .prompt_tokens' "$SIM_LOG" | sort -n | tr '\n' ' ')" \
    "$(results "$T/c.lt.zst" | jq -r .want_in | sort -n | tr '\n' ' ')" "token-id prompt lengths at the sim"
expect_eq 8 "$(jq -s '[.[] | select(.api == "chat" and .stream == false and .max_tokens == 6)] | length' "$SIM_LOG")" "non-streamed requests at the sim"
expect_eq "48 8" "$(results "$T/n.lt.zst" | jq -s -r '"\([.[].out] | add) \([.[] | select(.err == null)] | length)"')" "non-streamed tokens and ok"

# --- sessions: 4 conversations of 3 turns; each later turn reaches the sim
# after the previous turn ended, and finds its first prefix block cached;
# in trace time and in a closed loop. Every request of this seeded trace has
# a prompt length of its own (checked below), so the sim's requests are
# paired with the results by that length: pairing by time mixes up requests
# sent within the same millisecond, as a closed loop's are.
"$L" synth --arrivals poisson --rate 20 --requests 12 --turns fixed:3 --think 100ms \
    --in uniform:70,300 --out fixed:8 --block-tokens 64 -q -o "$T/ses.lt.zst" || fail "synth sessions"
"$L" cat --no-header "$T/ses.lt.zst" | jq -r '"\(.session) \(.turn)"' | awk '{ print NR - 1, $0 }' > "$T/turns.txt"
check_sessions() { # results sim-log what
    results "$1" | jq -r '"\(.in) \(.i)"' | sort -k1,1 > "$T/idx.txt"
    streams "$2" | jq -r '"\(.prompt_tokens) \(.arrival_us) \(.end_us) \(.cached_tokens)"' | sort -k1,1 > "$T/arr.txt"
    expect_eq 12 "$(wc -l < "$T/arr.txt")" "requests the sim saw ($3)"
    expect_eq 12 "$(cut -d ' ' -f 1 "$T/idx.txt" | sort -u | wc -l)" "prompt lengths of their own ($3)"
    join "$T/idx.txt" "$T/arr.txt" | cut -d ' ' -f 2- | sort -n > "$T/joined.txt"
    expect_eq 12 "$(wc -l < "$T/joined.txt")" "requests paired by prompt length ($3)"
    join "$T/turns.txt" "$T/joined.txt" | sort -k2,2n -k3,3n | awk -v w="$3" '
        { if ($2 == s && $4 < end) { print w ": session " s " turn " $3 " arrived before the previous turn ended"; bad = 1 }
          if ($3 > 0 && $6 < 1) { print w ": session " $2 " turn " $3 ": no cached prefix at the sim"; bad = 1 }
          s = $2; end = $5 }
        END { exit bad }' >&2 || fail "session order or prefix reuse at the sim ($3)"
}
start_sim ses
"$L" replay "$T/ses.lt.zst" --target "$SIM_URL" -o "$T/s.lt.zst" -q --no-summary
expect_status 0 $? "session replay"
stop_sim
check_sessions "$T/s.lt.zst" "$SIM_LOG" "trace time"
start_sim sesc
"$L" replay "$T/ses.lt.zst" --target "$SIM_URL" --concurrency 4 -o "$T/sc.lt.zst" -q --no-summary
expect_status 0 $? "session replay, closed loop"
stop_sim
check_sessions "$T/sc.lt.zst" "$SIM_LOG" "closed loop"

# --- prompts from a corpus, and recorded text vs --synthetic-prompts
printf '%s\n' '"a corpus prompt with a few words in it"' '{"text": "second one"}' \
    '{"messages": [{"role": "user", "content": "from messages"}]}' > "$T/corpus.jsonl"
"$L" replay "$T/t.lt.zst" --target sim --sim-profile fast --sim-log "$T/p.log" --prompts "$T/corpus.jsonl" \
    --speed 10 -o "$T/p.lt.zst" -q --no-summary
expect_status 0 $? "--prompts"
expect_eq 8 "$(results "$T/p.lt.zst" | jq -s '[.[] | select(.err == null)] | length')" "ok with --prompts"
expect_eq "19 10 10" "$(streams "$T/p.log" | jq -s -r 'sort_by(.arrival_us)[0:3][] | .prompt_tokens' | tr '\n' ' ' | sed 's/ $//')" "corpus prompt lengths at the sim (12, 3 and 3 tokens + 7 of template)"
printf '{"format":"loadtrace","version":1,"kind":"trace","created":"2026-01-01T00:00:00Z","source":"capture"}\n{"t":0,"in":20,"out":3,"text":"one two three four five six seven"}\n' > "$T/text.jsonl"
"$L" import --from jsonl "$T/text.jsonl" -o "$T/text.lt.zst" 2>/dev/null || fail "import the text trace"
"$L" replay "$T/text.lt.zst" --target sim --sim-profile fast --sim-log "$T/tx.log" -o "$T/tx.lt.zst" -q --no-summary
"$L" replay "$T/text.lt.zst" --target sim --sim-profile fast --sim-log "$T/ty.log" --synthetic-prompts -o "$T/ty.lt.zst" -q --no-summary
expect_eq "16 20" "$(streams "$T/tx.log" | jq .prompt_tokens) $(streams "$T/ty.log" | jq .prompt_tokens)" "recorded text (9 tokens + 7 of template) vs a synthetic prompt of 20 tokens"
finish

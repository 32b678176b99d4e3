#!/bin/sh
# Prompts that real servers accept at the length the trace asked for,
# checked against the sim's --log (what it counted):
#   1. token-id prompts use only ids the server's /tokenize produced: a sim
#      with a vocabulary of 512 (which refuses any other id with a 400)
#      fails none; without /tokenize the prompts are text;
#   2. prompt lengths: 95 % of requests within one token of the trace and
#      a mean |error| under 0.5 %, with pieces of 4 bytes (about a token a
#      word) and of 1 byte (several tokens a word), with /tokenize and
#      without it (usage probes, then the closed loop); on Responses and
#      Messages too, each through its own endpoint, with `in` and `cached`
#      read by the API's own usage rule;
#   3. a failed request's answer is kept (err_body) and failures are
#      grouped by the server's message in the summary and in analyze.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# Without delays (as the fast profile): only the tokenizer differs.
fast='step_ms = 0\nstep_ms_per_seq = 0\nprefill_step_ms = 0\nprefill_ms_per_seq = 0\nprefill_ms_per_token = 0\ncached_ms_per_token = 0\n'
printf "${fast}vocab = 512\npiece_bytes = 1\n" >"$T/p1.profile"
printf "${fast}vocab = 512\npiece_bytes = 4\n" >"$T/p4.profile"

# Single requests and sessions (later turns carry the earlier messages),
# and records of four messages of set sizes (system, user, assistant, user).
"$L" synth --arrivals constant --rate 200 --requests 24 --in uniform:20,1500 --out fixed:2 -q \
    -o "$T/one.lt.zst" || fail "synth"
"$L" synth --arrivals constant --rate 200 --requests 18 --turns fixed:3 --think 1ms \
    --in uniform:20,400 --out fixed:2 -q -o "$T/ses.lt.zst" || fail "synth sessions"
{
    printf '{"format":"loadtrace","version":1,"kind":"trace","created":"2026-01-01T00:00:00Z","source":"capture"}\n'
    for i in $(seq 1 16); do
        printf '{"t":%d,"in":%d,"out":2,"msgs":[["system",%d],["user",%d],["assistant",40],["user",%d]]}\n' \
            "$((i * 1000))" "$((150 + i * 53))" "$((30 + i))" "$((60 + i * 40))" "$((5 + i))"
    done
} >"$T/msgs.jsonl"
"$L" import --from jsonl "$T/msgs.jsonl" -o "$T/msgs.lt.zst" 2>/dev/null || fail "import"
# Sessions that open with one shared system prompt: cached prefixes.
"$L" synth --arrivals constant --rate 200 --requests 12 --turns fixed:2 --think 1ms \
    --in uniform:20,200 --out fixed:2 --prefix 1,150 --block-tokens 64 -q -o "$T/pre.lt.zst" ||
    fail "synth prefixes"

# The trace's lengths against the sim's counts, one request at a time so
# that sends and arrivals pair in order; prints "within1 n mean_rel".
lengths() { # results sim-log
    results "$1" | jq -s -r 'sort_by(.sent)[] | .want_in' >"$T/want.txt"
    streams "$2" | jq -s -r 'sort_by(.arrival_us)[] | .prompt_tokens' >"$T/got.txt"
    paste "$T/want.txt" "$T/got.txt" | awk '
        { d = $2 - $1; if (d < 0) d = -d; n++; if (d <= 1) w++; s += d / $1 }
        END { printf "%d %d %.5f\n", w, n, n ? s / n : 1 }'
}

# --- 1. token ids from the server's tokenizer
start_sim ids --profile "$T/p1.profile"
"$L" replay "$T/one.lt.zst" --target "$SIM_URL" --api completions --concurrency 4 \
    -o "$T/ids.lt.zst" --no-summary 2>"$T/ids.err"
expect_status 0 $? "--api completions against a vocabulary of 512"
stop_sim
expect_grep "token ids: [0-9]* the server's /tokenize produced" "$T/ids.err"
expect_eq "24 0" "$(results "$T/ids.lt.zst" | jq -s -r '"\(length) \([.[] | select(.err != null)] | length)"')" \
    "id prompts: none refused"
expect_eq 0 "$(jq -s '[.[] | select(.status == 400)] | length' "$SIM_LOG")" "no 400 at the sim"
expect_eq "$(results "$T/ids.lt.zst" | jq -r .want_in | sort -n | tr '\n' ' ')" \
    "$(streams "$SIM_LOG" | jq -r .prompt_tokens | sort -n | tr '\n' ' ')" "id prompt lengths at the sim"

start_sim idsn --profile "$T/p1.profile" --dialect no-tokenize
"$L" replay "$T/one.lt.zst" --target "$SIM_URL" --api completions --concurrency 1 \
    -o "$T/idn.lt.zst" --no-summary 2>"$T/idn.err"
expect_status 0 $? "--api completions without /tokenize"
stop_sim
expect_grep "usage probes" "$T/idn.err"
expect_eq 0 "$(results "$T/idn.lt.zst" | jq -s '[.[] | select(.err != null)] | length')" "text prompts: none refused"
expect_eq 0 "$(streams "$SIM_LOG" | jq -s '[.[] | select(.status != 200)] | length')" "no error at the sim"
set -- $(lengths "$T/idn.lt.zst" "$SIM_LOG")
expect_eq "24 24" "$1 $2" "completions text within one token (usage probes)"

# --- 2. chat prompt lengths on both counting rules, with and without /tokenize
for prof in p4 p1; do
    for dia in vllm no-tokenize; do
        for tr in one ses msgs; do
            w="$tr, $prof, $dia"
            start_sim "len-$prof-$dia-$tr" --profile "$T/$prof.profile" --dialect "$dia"
            "$L" replay "$T/$tr.lt.zst" --target "$SIM_URL" --concurrency 1 \
                -o "$T/len.lt.zst" --no-summary 2>"$T/len.err"
            expect_status 0 $? "replay ($w)"
            stop_sim
            if [ "$dia" = vllm ]; then
                expect_grep "prompt lengths: /tokenize (word by word)" "$T/len.err"
            else
                expect_grep "prompt lengths: usage probes (word by word).*closed loop" "$T/len.err"
            fi
            expect_grep "prompt lengths vs the server's usage" "$T/len.err"
            set -- $(lengths "$T/len.lt.zst" "$SIM_LOG")
            echo "lengths ($w): $1 of $2 within one token, mean |error| $3" >&2
            [ "$2" -gt 0 ] && [ $(($1 * 100)) -ge $(($2 * 95)) ] ||
                fail "lengths ($w): only $1 of $2 within one token"
            awk -v m="$3" 'BEGIN { exit !(m < 0.005) }' || fail "lengths ($w): mean |error| $3"
        done
    done
done

# --- 2b. Responses and Messages: calibrated through their own endpoints
# (Messages: count_tokens, else usage probes; Responses: usage probes),
# several tokens a word, with and without the sim's counting endpoints.
# Each request's `in` is the sim's count (Messages' usage split by the
# cache, as llama.cpp answers: later turns are cached in part), and the
# run record says how the lengths were made and how far its check found
# them off.
for api in responses messages; do
    dias="vllm no-tokenize"
    [ $api = messages ] && dias="$dias messages-usage-total" # vLLM's usage: no cache split
    for dia in $dias; do
        for tr in one ses msgs pre; do
            w="$api, $tr, $dia"
            start_sim "len-$api-$dia-$tr" --profile "$T/p1.profile" --dialect "$dia"
            "$L" replay "$T/$tr.lt.zst" --target "$SIM_URL" --api $api --concurrency 1 \
                -o "$T/len.lt.zst" --no-summary 2>"$T/len.err"
            expect_status 0 $? "replay ($w)"
            stop_sim
            if [ $api = messages ] && [ $dia != no-tokenize ]; then
                how="count_tokens (word by word)"
            else
                how="usage probes (word by word).*closed loop"
            fi
            expect_grep "prompt lengths: $how" "$T/len.err"
            runs "$T/len.lt.zst" | jq -r .calib >"$T/calib.txt"
            expect_grep "^$how" "$T/calib.txt"
            expect_eq 0 "$(runs "$T/len.lt.zst" | jq -r .calib_err)" "the run record's calib_err ($w)"
            set -- $(lengths "$T/len.lt.zst" "$SIM_LOG")
            echo "lengths ($w): $1 of $2 within one token, mean |error| $3" >&2
            [ "$2" -gt 0 ] && [ $(($1 * 100)) -ge $(($2 * 95)) ] ||
                fail "lengths ($w): only $1 of $2 within one token"
            awk -v m="$3" 'BEGIN { exit !(m < 0.005) }' || fail "lengths ($w): mean |error| $3"
            # vLLM's Messages usage has no cached count: none recorded
            expect_eq "$(streams "$SIM_LOG" | jq -s -r --arg d $dia 'sort_by(.arrival_us)[] |
                "\(.prompt_tokens) \(if $d == "messages-usage-total" then null else .cached_tokens end)"')" \
                "$(results "$T/len.lt.zst" | jq -s -r 'sort_by(.sent)[] | "\(.in) \(.cached)"')" \
                "in and cached: the sim's counts ($w)"
            if [ $tr = pre ] && [ $dia != messages-usage-total ]; then
                [ "$(streams "$SIM_LOG" | jq -s '[.[] | select(.cached_tokens > 0)] | length')" -gt 0 ] ||
                    fail "no cached prompt ($w): the split goes untested"
            fi
        done
    done
done

# --- 3. the server's words
start_sim words --profile fast --faults 500=0.5,seed=3
"$L" replay "$T/one.lt.zst" --target "$SIM_URL" --concurrency 2 -o "$T/w.lt.zst" >"$T/w.out" 2>&1
stop_sim
n500=$(results "$T/w.lt.zst" | jq -s '[.[] | select(.status == 500)] | length')
[ "$n500" -gt 0 ] || fail "no 500 among the results"
expect_eq "$n500" "$(results "$T/w.lt.zst" | jq -s '[.[] | select(.err_body != null and (.err_body | contains("simulated internal server error")))] | length')" \
    "every 500 keeps the server's answer"
expect_eq 0 "$(results "$T/w.lt.zst" | jq -s '[.[] | select(.err == null and .err_body != null)] | length')" \
    "no err_body on a request that did not fail"
expect_grep "$n500  http_500: simulated internal server error" "$T/w.out"
"$L" analyze --json "$T/w.lt.zst" >"$T/w.json" || fail "analyze --json"
expect_eq "http_500 500 simulated internal server error $n500" \
    "$(jq -r '.runs[0].error_messages[0] | "\(.class) \(.status) \(.message) \(.n)"' "$T/w.json")" \
    "analyze groups failures by the server's message"
finish

#!/bin/sh
# loadtrace sim --faults: every fault, reached with probability 1 and seen
# from the client (curl) and in the sim's own --log; and the draw is
# reproducible with a seed. Timing is only ever checked in the sim's log.
set -u
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/sim/sim_lib.sh"

S='{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"ignore_eos":true,"stream":true}'
N='{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}'
logf() { jq -r "select(.seq) | $1" "$T/$sim_name.log"; }

"$LOADTRACE" sim --listen 127.0.0.1:0 --faults '500=0.7,429=0.7' >/dev/null 2>"$T/err"
expect_status 1 $? "probabilities over 1"
expect_grep "add up to" "$T/err"
"$LOADTRACE" sim --listen 127.0.0.1:0 --faults 'explode=0.1' >/dev/null 2>"$T/err"
expect_status 1 $? "unknown fault"

# error statuses, with a JSON body even for streams; Retry-After on 429/503
for f in 500 503:7 429:2; do
    code=${f%%:*}
    start_sim "f$code" --profile fast --faults "$code=1${f#$code}"
    post /v1/chat/completions "$S" -D "$T/hdr" >"$T/b"
    expect_eq "$code" "$(status)" "fault $code status"
    expect_eq "$code" "$(jq .error.code "$T/b")" "fault $code body"
    case $f in *:*) expect_grep "Retry-After: ${f#*:}" "$T/hdr" ;; esac
    curl -sS --max-time 10 "$URL/health" >/dev/null
    expect_status 0 $? "health is never faulted ($code)"
    stop_sim
    expect_eq "$code $code" "$(logf '"\(.status) \(.fault)"')" "fault $code in the log"
done

# refuse: connections are refused for a while, and only once they are does
# this connection close unanswered (so the first connection after the close
# is refused, however late the sim's loop thread ran), then the sim listens
# again on the same port.
start_sim refuse --profile fast --faults refuse=1:2s
curl -sS --max-time 10 -d "$N" "$URL/v1/chat/completions" >/dev/null 2>"$T/e1"
rc=$?
[ $rc = 52 ] || [ $rc = 56 ] || fail "refused request: curl exit $rc, expected 52/56 (empty reply)"
curl -sS --max-time 5 "$URL/health" >/dev/null 2>&1
expect_eq 7 "$?" "the first connection after the refused one's close is refused"
i=0
while [ $i -lt 100 ]; do
    curl -sS --max-time 5 "$URL/health" >/dev/null 2>&1 && break
    i=$((i + 1))
    sleep 0.1
done
curl -sS --max-time 5 "$URL/health" >"$T/h"
expect_eq "{}" "$(cat "$T/h")" "listening again after the window"
stop_sim
expect_grep '"fault":"refuse"' "$T/refuse.log"
# the log's order: the listener closed (refused_us), then the connection (end_us)
expect_eq 1 "$(jq -s '[.[] | select(.fault == "refuse" and .refused_us != null and
    .end_us >= .refused_us)] | length' "$T/refuse.log")" "refused connections closed after the listener"

# disconnect after 3 tokens: curl sees a cut transfer and 3 tokens
start_sim disc --profile fast --faults disconnect=1:3
curl -sS -N --max-time 10 -d "$S" "$URL/v1/chat/completions" >"$T/s" 2>"$T/e"
rc=$?
[ $rc = 18 ] || [ $rc = 56 ] || fail "disconnect: curl exit $rc, expected 18 or 56"
expect_eq 3 "$(sse_json <"$T/s" | jq -r '.choices[0].delta.content // empty' | grep -c .)" "tokens before the cut"
expect_no_grep "DONE" "$T/s"
stop_sim
expect_eq "disconnect 3 false" "$(logf '"\(.fault) \(.sent) \(.complete)"')" "disconnect in the log"

# stall of 1 s after 2 tokens: the gap is in the log's token times
start_sim stall --profile fast --faults stall=1:1s:2
post /v1/chat/completions "$S" | sse_json >"$T/s.json"
expect_eq 10 "$(jq -r '.choices[0].delta.content // empty' "$T/s.json" | grep -c .)" "stalled stream completes"
stop_sim
gap=$(logf '.tokens_us[2] - .tokens_us[1]')
[ "$gap" -ge 1000000 ] || fail "stall gap $gap us, expected >= 1000000"
gap2=$(logf '.tokens_us[1] - .tokens_us[0]')
[ "$gap2" -lt 1000000 ] || fail "no stall before token 2 expected, gap $gap2"

# malformed chunk: token chunk 1 is broken JSON, the rest parse
start_sim malf --profile fast --faults malformed=1:1
post /v1/chat/completions "$S" >"$T/s"
bad=0
sse_json <"$T/s" >"$T/lines"
while IFS= read -r line; do
    printf '%s\n' "$line" | jq -e . >/dev/null 2>&1 || bad=$((bad + 1))
done <"$T/lines"
expect_eq 1 "$bad" "one malformed chunk"
expect_grep "DONE" "$T/s"
stop_sim

# slow first byte: the request enters the model only after 800 ms
start_sim slow --profile fast --faults slow=1:800ms
post /v1/chat/completions "$N" >"$T/c"
expect_eq 200 "$(status)" "slow answer arrives"
stop_sim
d=$(logf '.tokens_us[0] - .arrival_us')
[ "$d" -ge 800000 ] || fail "slow first byte: first token $d us after arrival"

# stall of 1 s after 0 tokens: the headers come at once, the first token
# only after the hold (a first-token delay after the headers, unlike slow)
start_sim stall0 --profile fast --dialect no-role-chunk --faults stall=1:1s:0
post /v1/chat/completions "$S" -D "$T/hdr" | sse_json >"$T/s.json"
expect_eq 10 "$(jq -r '.choices[0].delta.content // empty' "$T/s.json" | grep -c .)" "stream stalled before its first token completes"
stop_sim
expect_grep "200 OK" "$T/hdr"
d=$(logf '.tokens_us[0] - .arrival_us')
[ "$d" -ge 1000000 ] || fail "stall before the first token: first token $d us after arrival"

# bighead: 100,000 bytes of X-Pad headers (curl takes up to 300 KB), then
# the whole stream
start_sim bighead --profile fast --faults bighead=1:100000
post /v1/chat/completions "$S" -D "$T/hdr" >"$T/s"
expect_eq 200 "$(status)" "bighead status"
hb=$(grep '^X-Pad-' "$T/hdr" | wc -c)
[ "$hb" -ge 100000 ] && [ "$hb" -lt 101000 ] || fail "bighead: $hb bytes of X-Pad headers, expected 100000"
expect_eq 10 "$(sse_json <"$T/s" | jq -r '.choices[0].delta.content // empty' | grep -c .)" "bighead: every token"
expect_grep "DONE" "$T/s"
stop_sim
expect_eq "bighead true" "$(logf '"\(.fault) \(.complete)"')" "bighead in the log"
"$LOADTRACE" sim --listen 127.0.0.1:0 --faults 'bighead=1:67108865' >/dev/null 2>"$T/err"
expect_status 1 $? "bighead over 64 MiB"
expect_grep "bighead" "$T/err"

# badchoices: chunk 1 (valid JSON) has "choices":"nope"; a whole answer too
start_sim badch --profile fast --faults badchoices=1:1
post /v1/chat/completions "$S" >"$T/s"
sse_json <"$T/s" >"$T/lines"
expect_eq '"nope"' "$(sed -n 3p "$T/lines" | jq -c .choices)" "badchoices: chunk 1 (after the role chunk)"
expect_eq 9 "$(jq -r '.choices[0]?.delta.content // empty' "$T/lines" 2>/dev/null | grep -c .)" "badchoices: the other chunks"
post /v1/chat/completions "$N" >"$T/c"
expect_eq 200 "$(status)" "badchoices whole answer status"
expect_eq '"nope" 3' "$(jq -c '"\(.choices | tojson) \(.usage.completion_tokens)"' -r "$T/c")" "badchoices: whole answer"
stop_sim

# badusage: usage claims 2^64-1 output tokens after the true chunks
start_sim badu --profile fast --faults badusage=1
post /v1/chat/completions "$(echo "$S" | sed 's/}$/,"stream_options":{"include_usage":true}}/')" >"$T/s"
sse_json <"$T/s" >"$T/lines"
expect_eq 10 "$(jq -r '.choices[0]?.delta.content // empty' "$T/lines" | grep -c .)" "badusage: true chunks"
expect_eq 18446744073709551615 "$(grep '"usage"' "$T/lines" | grep -o '"completion_tokens":[0-9]*' | cut -d: -f2)" "badusage: the claim"
post /v1/completions '{"prompt":"hi","max_tokens":3}' >"$T/c"
expect_eq 18446744073709551615 "$(grep -o '"completion_tokens":[0-9]*' "$T/c" | cut -d: -f2)" "badusage: whole answer"
stop_sim
start_sim badu2 --profile fast --faults badusage=1:7
post /v1/chat/completions "$N" >"$T/c"
expect_eq 7 "$(jq .usage.completion_tokens "$T/c")" "badusage=1:7"
stop_sim

# reproducible: the same seed gives the same faults, another seed differs
for run in a b c; do
    seed=9
    [ $run = c ] && seed=10
    start_sim "seed$run" --profile fast --faults "500=0.3,429=0.2,disconnect=0.2:1,seed=$seed"
    k=0
    while [ $k -lt 30 ]; do
        curl -s --max-time 10 -d "$N" "$URL/v1/chat/completions" >/dev/null 2>&1
        k=$((k + 1))
    done
    stop_sim
    logf '"\(.seq) \(.fault)"' | sort -n >"$T/faults.$run"
done
# GET /metrics faults (the scrape tests use them: tests/replay/scrape.sh):
# bad values name the fault and the field; a metrics fault changes no
# inference request's draw, and at p=0.5 hits about half the scrapes
for bad in 'metrics-html=1:3|takes only a probability' 'metrics-big=1:67108865|more than 67108864' \
    'metrics-slow=0.5:-1s|the delay .-1s. is not a duration' 'metrics-html=0.6,metrics-slow=0.6|metrics fault probabilities add up to 1.200'; do
    "$LOADTRACE" sim --listen 127.0.0.1:0 --faults "${bad%%|*}" >/dev/null 2>"$T/err"
    expect_status 1 $? "--faults ${bad%%|*}"
    expect_grep "${bad#*|}" "$T/err"
done
start_sim seedm --profile fast --faults "500=0.3,429=0.2,disconnect=0.2:1,seed=9,metrics-html=0.5"
k=0
while [ $k -lt 30 ]; do
    curl -s --max-time 10 -d "$N" "$URL/v1/chat/completions" >/dev/null 2>&1
    curl -s --max-time 10 "$URL/metrics" >"$T/m.$k" 2>&1
    k=$((k + 1))
done
stop_sim
logf '"\(.seq) \(.fault)"' | sort -n >"$T/faults.m"
cmp -s "$T/faults.a" "$T/faults.m" || fail "metrics faults changed the inference faults' draw"
nhtml=$(jq -s '[.[] | select(.path == "/metrics" and .fault == "metrics-html")] | length' "$T/seedm.log")
expect_eq "$nhtml" "$(grep -l '<html>' "$T"/m.* | wc -l)" "HTML pages served, as the log says"
[ "$nhtml" -ge 5 ] && [ "$nhtml" -le 25 ] || fail "metrics-html=0.5 hit $nhtml of 30 scrapes"
# metrics-big: the true page, then whole comment lines up to the size;
# metrics-slow: the page only after the delay (the sim's log says when)
start_sim mbig --profile fast --faults metrics-big=1:200000
curl -sS --max-time 10 "$URL/metrics" >"$T/big.prom"
stop_sim
size=$(wc -c <"$T/big.prom" | tr -d ' ')
[ "$size" -ge 200000 ] && [ "$size" -lt 200064 ] || fail "metrics-big page of $size bytes, expected 200000 to 200063"
grep -q '^vllm:generation_tokens_total{model_name="loadtrace-sim-fast"} 0$' "$T/big.prom" ||
    fail "metrics-big: the true page is not in it"
expect_eq 0 "$(sed -n '/^# loadtrace sim: metrics-big/,$p' "$T/big.prom" | grep -vc '^# loadtrace sim: metrics-big fault padding')" \
    "metrics-big: lines after the padding starts that are not padding"
start_sim mslow --profile fast --faults metrics-slow=1:1s
curl -sS --max-time 10 "$URL/metrics" >"$T/slow.prom"
stop_sim
grep -q '^vllm:num_requests_running' "$T/slow.prom" || fail "metrics-slow: no page after the delay"
jq -r 'select(.path == "/metrics") | "\(.status) \(.fault) \(.end_us - .arrival_us >= 1000000)"' "$T/mslow.log" >"$T/slow.log"
expect_eq "200 metrics-slow true" "$(cat "$T/slow.log")" "metrics-slow: answered 200 after 1 s, in the sim's log"
cmp -s "$T/faults.a" "$T/faults.b" || fail "same seed, different faults"
cmp -s "$T/faults.a" "$T/faults.c" && fail "different seeds, same faults"
expect_eq 30 "$(wc -l <"$T/faults.a")" "30 requests logged"
grep -q " 500" "$T/faults.a" || fail "no 500 in 30 draws at p=0.3"
finish

#!/bin/sh
# Traces from the wild, on files this test writes itself:
# sessions by any name (BurstGPT UUIDs), any log by --map (Vidur's CSV,
# LiteLLM spend logs), and TraceLab's agent CSV. Every count is checked
# against awk over the input, not against loadtrace's own arithmetic.
set -eu
: "${LOADTRACE:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
check() { # NAME GOT WANT
    if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else fail "$1: got '$2', want '$3'"; fi
}
# the "sessions N sessions over M requests" line of info
info_sessions() { "$LOADTRACE" info "$1" | awk '$1 == "sessions" { print $2 }'; }
# sum of one integer key over the records of a trace
key_sum() { "$LOADTRACE" cat "$2" | awk -v k="\"$1\":" '{ i = index($0, k); if (i) { s += substr($0, i + length(k)) + 0 } } END { print s + 0 }'; }

# ---- BurstGPT with UUID session ids: 400 rows, 37 sessions, some rows with none
awk 'BEGIN {
    srand(7); print "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID"
    for (i = 0; i < 400; i++) {
        s = int(rand() * 37); sid = (rand() < 0.1) ? "" : sprintf("%08x-1f2e-4d3c-8b7a-%012d", s * 2654435761 % 4294967296, s)
        a = 1 + int(rand() * 900); b = int(rand() * 300)
        printf "%d.%03d,ChatGPT,%d,%d,%d,Conversation log,%s\n", i, int(rand() * 1000), a, b, a + b, sid
    }
}' >bg.csv
"$LOADTRACE" import -q --from burstgpt bg.csv -o bg.lt.zst
want=$(awk -F, 'NR > 1 && $7 != "" && !($7 in s) { s[$7] = 1; n++ } END { print n }' bg.csv)
check "burstgpt uuid sessions (info)" "$(info_sessions bg.lt.zst)" "$want"
want=$(awk -F, 'NR > 1 && $7 != "" { n++ } END { print n }' bg.csv)
check "burstgpt records with a session" "$("$LOADTRACE" cat bg.lt.zst | grep -c '"session_id":')" "$want"
# the ids are dense, in order of first appearance
want=$(awk -F, 'NR > 1 && $7 != "" { if (!($7 in s)) s[$7] = n++; printf "%d ", s[$7] }' bg.csv)
got=$("$LOADTRACE" cat bg.lt.zst | sed -n 's/.*"session":\([0-9]*\),.*/\1/p' | tr '\n' ' ')
check "burstgpt session ids dense, first appearance" "$got" "$want"

# ---- TraceLab's multi-round agent CSV: rounds are turns, tool waits think times
awk 'BEGIN {
    srand(11); print "session_id,arrival_time,round_idx,prefix_len,input_len,output_len,tool_wait_after_ms"
    for (s = 0; s < 25; s++) {
        n = 1 + int(rand() * 6); at = s * 733.25; pre = 0
        for (r = 0; r < n; r++) {
            in_ = 1 + int(rand() * 500); out = 1 + int(rand() * 200)
            w = (r == n - 1) ? 0 : int(rand() * 5000) + rand()
            printf "sess-%c%d,%.6f,%d,%d,%d,%d,%.6f\n", 97 + s % 26, s, at, r, pre, in_, out, w
            pre += in_ + out
        }
    }
}' >agent.csv
"$LOADTRACE" import -q --from tracelab agent.csv -o agent.lt.zst
check "tracelab records" "$("$LOADTRACE" cat agent.lt.zst | grep -c '"t":')" "$(($(wc -l <agent.csv) - 1))"
check "tracelab sessions (info)" "$(info_sessions agent.lt.zst)" "$(awk -F, 'NR > 1 && !($1 in s) { s[$1] = 1; n++ } END { print n }' agent.csv)"
check "tracelab in = prefix + input" "$(key_sum in agent.lt.zst)" "$(awk -F, 'NR > 1 { s += $4 + $5 } END { print s }' agent.csv)"
check "tracelab cached = prefix" "$(key_sum cached agent.lt.zst)" "$(awk -F, 'NR > 1 { s += $4 } END { print s }' agent.csv)"
check "tracelab turns" "$(key_sum turn agent.lt.zst)" "$(awk -F, 'NR > 1 { s += $3 } END { print s }' agent.csv)"
# the wait after a round is the next round's think, to the microsecond
want=$(awk -F, 'NR > 1 { if ($1 == prev) s += sprintf("%.0f", w * 1000); prev = $1; w = $7 } END { printf "%.0f\n", s }' agent.csv)
check "tracelab think = tool waits before each later round" "$(key_sum think agent.lt.zst)" "$want"
check "tracelab rounds with a think" "$("$LOADTRACE" cat agent.lt.zst | grep -c '"think":')" \
    "$(awk -F, 'NR > 1 && $3 > 0 { n++ } END { print n }' agent.csv)"

# rounds out of file order, at one arrival time (TraceLab gives every round
# the session's): they are ordered by round within the session, and each
# tool wait is the think of the round after it, as in the file in order
{ head -1 agent.csv; tail -n +2 agent.csv | awk 'BEGIN { srand(4) } { print rand() "\t" $0 }' | sort -k1,1 | cut -f2-; } >agent-shuf.csv
"$LOADTRACE" import -q --from tracelab agent-shuf.csv -o agent-shuf.lt.zst
# (the session numbers follow the names' first appearance: left out)
check "tracelab rounds shuffled: every record as in order" \
    "$("$LOADTRACE" cat agent-shuf.lt.zst | tail -n +2 | sed 's/"session":[0-9]*,//' | cksum)" \
    "$("$LOADTRACE" cat agent.lt.zst | tail -n +2 | sed 's/"session":[0-9]*,//' | cksum)"
cat >rounds.csv <<'CSV'
session_id,arrival_time,round_idx,prefix_len,input_len,output_len,tool_wait_after_ms
a,1000,1,100,10,5,700
b,1000,0,0,50,5,300
a,1000,0,0,100,5,2000
a,1000,2,115,10,5,0
CSV
"$LOADTRACE" import -q --from tracelab rounds.csv -o rounds.lt.zst
check "tracelab round 1 before round 0 in the file: (session, turn, think)" \
    "$("$LOADTRACE" cat rounds.lt.zst | awk 'NR > 1 { s = $0; sub(/.*"session_id":"/, "", s); sub(/".*/, "", s)
        k = $0; sub(/.*"turn":/, "", k); sub(/,.*/, "", k)
        th = ($0 ~ /"think":/) ? $0 : "\"think\":-"; sub(/.*"think":/, "", th); sub(/,.*/, "", th); printf "%s/%s/%s ", s, k, th }')" \
    "a/0/- a/1/2000000 a/2/700000 b/0/- "
printf 'session_id,arrival_time,round_idx,prefix_len,input_len,output_len,tool_wait_after_ms\na,5,0,0,10,5,1\nb,5,0,0,10,5,1\na,5,0,0,20,5,1\n' >dup.csv
st=0; "$LOADTRACE" import --from tracelab dup.csv -o dup.lt.zst 2>dup.err || st=$?
check "tracelab: a duplicate round_idx is refused (exit 1)" "$st" 1
check "tracelab: ... naming both lines" "$(cat dup.err)" 'loadtrace import: dup.csv:4: session "a" has round 0 twice (first on line 2)'
[ ! -e dup.lt.zst ] && echo "ok   tracelab: nothing written" || fail "tracelab: a file was left behind"

# replay (the sim, in virtual time) keeps each session's rounds in order and
# sends each round its think time after the answer before it
"$LOADTRACE" replay agent.lt.zst --target sim --virtual -o agent.res.lt.zst >/dev/null 2>&1
"$LOADTRACE" cat agent.lt.zst | awk 'NR > 1 {
    s = $0; sub(/.*"session":/, "", s); sub(/,.*/, "", s)
    k = $0; sub(/.*"turn":/, "", k); sub(/,.*/, "", k)
    th = ($0 ~ /"think":/) ? $0 : "\"think\":0"; sub(/.*"think":/, "", th); sub(/,.*/, "", th)
    print "T", NR - 2, s, k, th }' >agent.tr
"$LOADTRACE" cat agent.res.lt.zst | awk '/"i":/ {
    i = $0; sub(/.*"i":/, "", i); sub(/,.*/, "", i)
    st = $0; sub(/.*"sent":/, "", st); sub(/,.*/, "", st)
    e = $0; sub(/.*"end":/, "", e); sub(/,.*/, "", e)
    print "R", i, st, e }' >agent.rs
bad=$(awk '$1 == "T" { ses[$2] = $3; turn[$2] = $4; think[$2] = $5; idx[$3 "/" $4] = $2; nt++; next }
    { sent[$2] = $3; end[$2] = $4; n++ }
    END { for (i in turn) if (turn[i] > 0) { p = idx[ses[i] "/" (turn[i] - 1)]
            if (!(i in sent) || sent[i] < end[p] + think[i]) b++ }
          print (n == nt) ? b + 0 : "missing results" }' agent.tr agent.rs)
check "replay: every later round sent after the round before ended plus its think" "$bad" 0

# ---- Vidur's trace CSV by a map
awk 'BEGIN { srand(3); print "arrived_at,num_prefill_tokens,num_decode_tokens,num_total_tokens"
    t = 0; for (i = 0; i < 300; i++) { t += rand() * 0.2; a = 1 + int(rand() * 4000); b = 1 + int(rand() * 800)
        printf "%.6f,%d,%d,%d\n", t, a, b, a + b } }' >vidur.csv
"$LOADTRACE" import -q --from csv --map 't=arrived_at:s,in=num_prefill_tokens,out=num_decode_tokens' vidur.csv -o vidur.lt.zst
check "vidur in" "$(key_sum in vidur.lt.zst)" "$(awk -F, 'NR > 1 { s += $2 } END { print s }' vidur.csv)"
check "vidur out" "$(key_sum out vidur.lt.zst)" "$(awk -F, 'NR > 1 { s += $3 } END { print s }' vidur.csv)"
check "vidur kept column" "$(key_sum num_total_tokens vidur.lt.zst)" "$(awk -F, 'NR > 1 { s += $4 } END { print s }' vidur.csv)"
last=$("$LOADTRACE" cat vidur.lt.zst | tail -1 | sed 's/^{"t":\([0-9]*\),.*/\1/')
want=$(awk -F, 'NR == 2 { f = $1 } END { printf "%.0f\n", ($1 - f) * 1e6 }' vidur.csv)
check "vidur span (us)" "$last" "$want"

# ---- --max-context: prompt plus output clipped to a small server's context
"$LOADTRACE" import --from csv --max-context 2000 --map 't=arrived_at:s,in=num_prefill_tokens,out=num_decode_tokens' vidur.csv -o clip.lt.zst 2>clip.err
want=$(awk -F, -v N=2000 'NR > 1 && $2 + $3 > N { n++; ni = ($2 < N) ? $2 : N - 1; no = (N - ni < $3) ? N - ni : $3; di += $2 - ni; do_ += $3 - no }
    END { printf "%d records clipped, by %d prompt and %d output tokens\n", n, di, do_ }' vidur.csv)
check "--max-context summary" "$(sed -n 's/.*--max-context 2000: //p' clip.err)" "$want"
check "--max-context: no record above the context" \
    "$("$LOADTRACE" cat clip.lt.zst | awk 'NR > 1 { i = $0; sub(/.*"in":/, "", i); sub(/,.*/, "", i); o = $0; sub(/.*"out":/, "", o); sub(/[,}].*/, "", o); if (i + o > 2000) n++ } END { print n + 0 }')" 0

# ---- LiteLLM spend logs by a map: ISO times, sessions by name, out of order
cat >litellm.csv <<'CSV'
request_id,call_type,spend,total_tokens,prompt_tokens,completion_tokens,startTime,endTime,model,session_id,status
r3,acompletion,0.001,30,20,10,2025-03-01T12:00:02.500000Z,2025-03-01T12:00:03Z,gpt-4o,s-b,success
r1,acompletion,0.002,150,100,50,2025-03-01T12:00:00Z,2025-03-01T12:00:01Z,gpt-4o,s-a,success
r2,acompletion,0.000,7,7,0,2025-03-01T12:00:01.25Z,2025-03-01T12:00:02Z,gpt-4o,s-a,failure
CSV
"$LOADTRACE" import -q --from csv --sort --map 't=startTime:iso,model=model,session=session_id,in=prompt_tokens,out=completion_tokens' litellm.csv -o litellm.lt.zst
check "litellm times" "$("$LOADTRACE" cat litellm.lt.zst | sed -n 's/^{"t":\([0-9]*\),.*/\1/p' | tr '\n' ' ')" "0 1250000 2500000 "
check "litellm sessions (info)" "$(info_sessions litellm.lt.zst)" 2

# ---- --infer-sessions on Mooncake-style chains: 30 conversations of 1-8
# turns, interleaved in time; every prompt starts with a shared block 0 (a
# system prompt) and each turn extends its conversation's previous blocks
awk 'BEGIN { srand(5)
    for (c = 1; c <= 30; c++) { n = 1 + int(rand() * 8); t = c * 37
        for (k = 0; k < n; k++) { t += 200 + int(rand() * 3000); ids = "0"
            for (j = 0; j <= k; j++) ids = ids ", " (c * 1000 + j)
            printf "%09d {\"timestamp\": %d, \"input_length\": %d, \"output_length\": 5, \"hash_ids\": [%s]}\n", t, t, 512 * (k + 2), ids } } }' |
    sort -n -k1,1 -s | cut -d' ' -f2- >chains.jsonl
"$LOADTRACE" import --from mooncake --infer-sessions chains.jsonl -o chains.lt.zst 2>chains.err
# the known answer: session = order of first appearance of the conversation
# (its block ids / 1000), turn = blocks - 2
want=$(awk -F'[][]' '{ m = split($2, b, ", "); c = int(b[2] / 1000); if (!(c in s)) s[c] = n++; printf "%d/%d ", s[c], m - 2 }' chains.jsonl)
got=$("$LOADTRACE" cat chains.lt.zst | sed -n 's/.*"session":\([0-9]*\),"turn":\([0-9]*\).*/\1\/\2/p' | tr '\n' ' ')
check "infer-sessions: every (session, turn) as built" "$got" "$want"
check "infer-sessions: sessions (info)" "$(info_sessions chains.lt.zst)" 30
check "infer-sessions: the summary" "$(sed -n 's/.*inferred \([0-9]*\) sessions.*; \([0-9]*\) requests.*/\1 \2/p' chains.err)" \
    "30 $(($(wc -l <chains.jsonl) - 30))"

# ---- a map that does not parse is a usage error
if "$LOADTRACE" import --from csv --map 't=arrived_at' vidur.csv -o x.lt.zst 2>err.txt; then
    fail "a time without a unit was accepted"
else
    check "map error exit status" "$?" 2
fi
grep -q 'a time needs a unit' err.txt && echo "ok   map error names the problem" || fail "map error: $(cat err.txt)"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }

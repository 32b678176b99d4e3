#!/bin/sh
# Cancellations (docs/replay.md "Cancellations"): a hand-built trace whose
# records say where their clients left (cancel_tokens, cancel_after), each
# with its own output length, which the sim's log shows as max_tokens, so
# every result is matched with its log line. Checked against the sim's
# own ground truth: its aborted-request counter and the log lines it marks
# "aborted" are exactly the requests replay cancelled; by the token rule a
# cancelled request counted exactly cancel_tokens tokens and the sim wrote
# at least that many; by the time rule it was closed no earlier than
# cancel_after after its send and got no more tokens than the sim wrote.
# --no-cancel runs them all to the end (no new abort on the sim), the
# virtual engine cancels the same requests at the same token counts and
# times, and analyze counts them apart from Ok and errors.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

# i: out (= max_tokens in the sim's log), the cancel keys. Cancel points
# stay 20+ tokens before the end, so each departure comes while the sim
# still streams (tests/sim/departure.sh: one while queued); time points fall well inside the stream (the default
# profile: ~0.6 s to the first token, then ~6 ms a token).
cat >"$T/t.jsonl" <<'EOF'
{"t":0,"in":16,"out":40}
{"t":20000,"in":16,"out":41,"cancel_tokens":3}
{"t":40000,"in":16,"out":42,"cancel_tokens":7}
{"t":60000,"in":16,"out":43,"cancel_tokens":12,"cancel_after":60000000}
{"t":80000,"in":16,"out":44,"cancel_tokens":0}
{"t":100000,"in":16,"out":200,"cancel_after":900000}
{"t":120000,"in":16,"out":201,"cancel_after":1000}
{"t":140000,"in":16,"out":5,"cancel_tokens":10}
{"t":160000,"in":16,"out":46}
EOF
"$L" import --from jsonl "$T/t.jsonl" -o "$T/t.lt.zst" -q || fail "import"
CANCELLED=6 # records 1-6; record 7's answer ends before its point
expect_eq "$(grep -c cancel_ "$T/t.jsonl")" "$("$L" info --json "$T/t.lt.zst" | jq .cancelled)" \
    "info: records whose client left"

# a company's own log says where its clients left: mapped, no code
printf 'ts,o,gone_ms,gone_tok\n0,10,250.5,3\n1,12,,\n' >"$T/m.csv"
"$L" import --from csv "$T/m.csv" --map 't=ts:s,out=o,cancel_after=gone_ms:ms,cancel_tokens=gone_tok' \
    -o "$T/m.lt.zst" -q || fail "import --map with cancel keys"
expect_eq "250500 3|null null" \
    "$("$L" cat --no-header "$T/m.lt.zst" | jq -r '"\(.cancel_after) \(.cancel_tokens)"' | paste -sd'|')" \
    "cancel keys by --map"

start_sim live
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics \
    -o "$T/r.lt.zst" 2>"$T/r.err"
expect_status 0 $? "replay with cancellations (cancelled requests are no failures)"
expect_grep "9 requests, 3 ok, 0 errors .*, $CANCELLED cancelled" "$T/r.err"
# the sim counts a departure as its close arrives: wait for its count
wait_sim_metric $CANCELLED loadtrace_sim_requests_aborted_total
expect_eq $CANCELLED "$(sim_metric loadtrace_sim_requests_aborted_total)" "the sim's aborted requests"
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" --no-calibrate --no-server-metrics --no-cancel \
    -o "$T/n.lt.zst" -q --no-summary
expect_status 0 $? "replay --no-cancel"
stop_sim

# Results and log lines side by side, by max_tokens (want_out).
results "$T/r.lt.zst" >"$T/r.jsonl"
expect_eq $CANCELLED "$(jq -s '[.[] | select(.cancelled == true)] | length' "$T/r.jsonl")" \
    "cancelled results"
expect_eq 0 "$(jq -s '[.[] | select(.err != null)] | length' "$T/r.jsonl")" "errors"
expect_eq "1 2 3 4 5 6" "$(jq -s -r '[.[] | select(.cancelled) | .i] | sort | join(" ")' "$T/r.jsonl")" \
    "which requests were cancelled"
# the first run's log lines: the nine streams of max_tokens 40..201 before
# the --no-cancel run's (arrival order)
streams "$SIM_LOG" | jq -s -c 'sort_by(.arrival_us) | .[0:9][]' >"$T/log1.jsonl"
streams "$SIM_LOG" | jq -s -c 'sort_by(.arrival_us) | .[9:][]' >"$T/log2.jsonl"
expect_eq $CANCELLED "$(jq -s '[.[] | select(.aborted == true)] | length' "$T/log1.jsonl")" \
    "log lines marked aborted"
expect_eq "41 42 43 44 200 201" \
    "$(jq -s -r '[.[] | select(.aborted == true) | .max_tokens] | sort | join(" ")' "$T/log1.jsonl")" \
    "the aborted log lines are the cancelled requests"
expect_eq 0 "$(jq -s '[.[] | select(.aborted == true and .complete == true)] | length' "$T/log1.jsonl")" \
    "an aborted answer is never complete"
# one line per request: want_out, cancelled, out, sent->end (us); max_tokens, sim sent
jq -s -r 'sort_by(.want_out)[] | "\(.want_out) \(.cancelled // false) \(.out // 0) \(.end - .sent)"' \
    "$T/r.jsonl" >"$T/res.txt"
jq -s -r 'sort_by(.max_tokens)[] | "\(.max_tokens) \(.sent)"' "$T/log1.jsonl" >"$T/log.txt"
join "$T/res.txt" "$T/log.txt" >"$T/both.txt"
expect_eq 9 "$(wc -l <"$T/both.txt" | tr -d ' ')" "results matched with log lines"
# token rule: out == cancel_tokens, and the sim wrote at least that many
for p in "41 3" "42 7" "43 12" "44 0"; do
    set -- $p
    got=$(awk -v w="$1" '$1 == w { print $2, $3 }' "$T/both.txt")
    expect_eq "true $2" "$got" "max_tokens $1: cancelled after $2 tokens"
    sent=$(awk -v w="$1" '$1 == w { print $5 }' "$T/both.txt")
    [ "$sent" -ge "$2" ] || fail "max_tokens $1: the sim wrote $sent tokens, the client counted $2"
done
# time rule: closed no earlier than cancel_after after the send, with no
# more tokens than the sim wrote
for p in "200 900000" "201 1000"; do
    set -- $p
    read -r _ c out dur sent <<EOF2
$(awk -v w="$1" '$1 == w' "$T/both.txt")
EOF2
    expect_eq true "$c" "max_tokens $1 cancelled"
    [ "$dur" -ge "$2" ] || fail "max_tokens $1: closed $dur us after its send, before $2"
    [ "$out" -le "$sent" ] || fail "max_tokens $1: counted $out tokens, the sim wrote $sent"
    [ "$out" -lt "$1" ] || fail "max_tokens $1: got all $out tokens"
done
# its answer ended before its point: complete, not cancelled
expect_eq "5 false 5" "$(awk '$1 == 5 { print $1, $2, $3 }' "$T/both.txt")" \
    "an answer shorter than its cancel point completes"

# --no-cancel: every request complete, and the sim saw no departure
expect_eq 0 "$(results "$T/n.lt.zst" | jq -s '[.[] | select(.cancelled == true or .err != null)] | length')" \
    "--no-cancel: nothing cancelled or failed"
expect_eq 9 "$(jq -s '[.[] | select(.complete == true and .aborted != true)] | length' "$T/log2.jsonl")" \
    "--no-cancel: the sim completed every answer"

# A time point shorter than the connect: cancel_after 1 us passes before
# a fresh connection is up, yet the rule counts from the send, so each
# request still reaches the sim (which marks it aborted) and is closed no
# earlier than 1 us after its send; it used to be cancelled unsent.
printf '%s\n' '{"t":0,"in":16,"out":202,"cancel_after":1}' '{"t":0,"in":16,"out":203,"cancel_after":1}' \
    '{"t":30000,"in":16,"out":204,"cancel_after":1}' >"$T/short.jsonl"
"$L" import --from jsonl "$T/short.jsonl" -o "$T/short.lt.zst" -q || fail "import"
"$L" replay "$T/short.lt.zst" --target sim --sim-log "$T/short.log" --no-calibrate \
    -o "$T/short.r.lt.zst" -q --no-summary
expect_status 0 $? "replay with points shorter than the connect"
expect_eq "202 203 204" "$(streams "$T/short.log" | jq -s -r '[.[] | select(.aborted == true) | .max_tokens] | sort | join(" ")')" \
    "points shorter than the connect: each request reached the sim and was aborted there"
expect_eq "3 3" "$(results "$T/short.r.lt.zst" | jq -s -r '"\([.[] | select(.cancelled == true)] | length) \([.[] | select(.sent != null and .end - .sent >= 1)] | length)"')" \
    "points shorter than the connect: cancelled, each after its send"

# virtual time: the same requests, the same token counts, and a time
# point exactly cancel_after after the send
"$L" replay "$T/t.lt.zst" --target sim --virtual -o "$T/v.lt.zst" -q --no-summary
expect_status 0 $? "virtual replay with cancellations"
results "$T/v.lt.zst" >"$T/v.jsonl"
expect_eq "1 2 3 4 5 6" "$(jq -s -r '[.[] | select(.cancelled) | .i] | sort | join(" ")' "$T/v.jsonl")" \
    "virtual: which requests were cancelled"
expect_eq "41:3 42:7 43:12 44:0" \
    "$(jq -s -r '[.[] | select(.cancelled and .want_out < 100) | "\(.want_out):\(.out // 0)"] | sort | join(" ")' "$T/v.jsonl")" \
    "virtual: tokens at the token points"
expect_eq "200:900000 201:1000" \
    "$(jq -s -r '[.[] | select(.cancelled and .want_out >= 200) | "\(.want_out):\(.end - .sent)"] | sort | join(" ")' "$T/v.jsonl")" \
    "virtual: closed cancel_after after the send"
"$L" replay "$T/t.lt.zst" --target sim --virtual --no-cancel -o "$T/vn.lt.zst" -q --no-summary
expect_eq 0 "$(results "$T/vn.lt.zst" | jq -s '[.[] | select(.cancelled == true)] | length')" \
    "virtual --no-cancel"

# A capacity search leaves cancelled requests out of its attainment: a
# probe's attainment is good / (measured - cancelled), which for the first
# probe (nothing pooled with it) analyze gives independently; every other
# record of the trace leaves after its first token.
SLO=ttft=1s,tpot=50ms
"$L" synth --arrivals poisson --rate 2 --requests 120 --in fixed:100 --out fixed:60 --seed 3 -q \
    -o "$T/s.lt.zst" || fail "synth"
"$L" cat "$T/s.lt.zst" | jq -c 'if .t != null and (.t % 2 == 0) then .cancel_tokens = 1 else . end' |
    "$L" import --from jsonl - -o "$T/sc.lt.zst" -q || fail "import with cancel points"
"$L" replay "$T/sc.lt.zst" --target sim --virtual --find-max rate --slo $SLO --max-probes 3 \
    -o "$T/cap.lt.zst" -q >/dev/null
"$L" analyze --json --slo $SLO "$T/cap.lt.zst" >"$T/cap.json" || fail "analyze the search"
expect_eq true "$(jq '.runs[0].cancelled > 0' "$T/cap.json")" "the first probe had cancellations"
expect_near "$(jq '.runs[0] | .goodput.good_sched / (.measured - .cancelled)' "$T/cap.json")" \
    "$(jq '.capacity.probes[0].attain' "$T/cap.json")" 0.000001 \
    "the first probe's attainment leaves the cancelled out"
# Each probe says how many it measured (n), how many of them were
# cancelled, and how many attain is the share of (judged), counted here
# from the results themselves; the goodput at the max is attain x judged
# over the probe's wall time (first send to last end), not attain x n.
results "$T/cap.lt.zst" | jq -s -c 'map(select(.warmup != true)) | group_by(.run)[] |
    {run: .[0].run, n: length, cancelled: (map(select(.cancelled == true)) | length),
     errors: (map(select(.err != null)) | length),
     wall: (((map(.end) | max) - (map(.sent) | min)) / 1e6)}' >"$T/cap.runs"
[ "$(wc -l <"$T/cap.runs")" -ge 2 ] || fail "the search ran fewer than 2 probes"
while read -r run; do
    k=$(echo "$run" | jq .run)
    expect_eq "$(echo "$run" | jq -c '[.n, .cancelled, .errors, .n - .cancelled]')" \
        "$(jq -c ".capacity.probes[] | select(.run == $k) | [.n, .cancelled, .faults, .judged]" "$T/cap.json")" \
        "probe $k: n, cancelled, faults, judged"
done <"$T/cap.runs"
maxk=$(jq '.capacity.virtual.max_ok as $m | .capacity.probes[] | select(.load == $m) | .run' "$T/cap.json")
attain=$(jq ".capacity.probes[] | select(.run == $maxk) | .attain" "$T/cap.json")
expect_near "$(jq -s ".[] | select(.run == $maxk) | $attain * (.n - .cancelled) / .wall" "$T/cap.runs")" \
    "$(jq .capacity.virtual.goodput "$T/cap.json")" 0.000001 "goodput at the max: attain x judged / wall"

# analyze: cancelled apart from Ok and errors, in text, JSON and CSV
"$L" analyze "$T/r.lt.zst" >"$T/a.txt" 2>&1
expect_status 0 $? "analyze"
tok=$(jq -s '[.[] | select(.cancelled) | .out // 0] | add' "$T/r.jsonl")
expect_grep "3 Ok" "$T/a.txt"
expect_grep "cancelled: $CANCELLED (closed where the trace's client left; not errors), $tok tokens" "$T/a.txt"
expect_no_grep "errors:" "$T/a.txt"
"$L" analyze "$T/r.lt.zst" --json >"$T/a.json"
expect_eq "3 $CANCELLED $tok {}" \
    "$(jq -r '.runs[0] | "\(.ok) \(.cancelled) \(.cancelled_tokens) \(.errors | tojson)"' "$T/a.json")" \
    "analyze --json: ok, cancelled, their tokens, errors"
"$L" analyze "$T/r.lt.zst" --csv >"$T/a.csv"
expect_eq "$CANCELLED,$tok" \
    "$(awk -F, 'NR == 1 { for (k = 1; k <= NF; k++) c[$k] = k } NR == 2 { print $c["cancelled"] "," $c["cancelled_tokens"] }' "$T/a.csv")" \
    "analyze --csv: cancelled, cancelled_tokens"
# compare counts cancelled requests apart as analyze does (text, JSON,
# HTML), keeps them out of its samples (the paired differences are over
# the requests Ok on both sides), and says when A and B cancelled a
# different number: one trace, a quarter of its clients leaving after 2
# tokens, replayed in virtual time with and without --no-cancel. Counted
# here from the results themselves.
"$L" cat "$T/s.lt.zst" | jq -c 'if .t != null and (.t % 4 == 0) then .cancel_tokens = 2 else . end' |
    "$L" import --from jsonl - -o "$T/q.lt.zst" -q || fail "import with cancel points"
"$L" replay "$T/q.lt.zst" --target sim --virtual -o "$T/qa.lt.zst" -q --no-summary
"$L" replay "$T/q.lt.zst" --target sim --virtual --no-cancel -o "$T/qb.lt.zst" -q --no-summary
counts() { # results: ok errors cancelled cancelled_tokens
    results "$1" | jq -s -r 'map(select(.warmup != true)) |
        (map(select(.cancelled == true))) as $c |
        (map(select(.cancelled != true and .status == 200 and .err == null and (.out // 0) >= 1))) as $ok |
        "\($ok | length) \(length - ($ok | length) - ($c | length)) \($c | length) \($c | map(.out // 0) | add // 0)"'
}
ca=$(counts "$T/qa.lt.zst")
cb=$(counts "$T/qb.lt.zst")
[ "$(echo "$ca" | cut -d' ' -f3)" -gt 0 ] || fail "nothing cancelled in A: $ca"
"$L" compare "$T/qa.lt.zst" "$T/qb.lt.zst" --json >"$T/cmp.json"
expect_status 0 $? "compare --json"
expect_eq "$ca|$cb|true|1" \
    "$(jq -r '.runs[0] as $r | "\($r.a_ok) \($r.a_errors) \($r.a_cancelled) \($r.a_cancelled_tokens)|\($r.b_ok) \($r.b_errors) \($r.b_cancelled) \($r.b_cancelled_tokens)|\($r.cancelled_differ)|\(.cancelled_differ)"' "$T/cmp.json")" \
    "compare --json: ok, errors, cancelled and their tokens of A and B; they differ"
# requests Ok on both sides, by record number
okboth=$({ results "$T/qa.lt.zst"; results "$T/qb.lt.zst"; } |
    jq -s '[.[] | select(.cancelled != true and .status == 200 and .err == null and (.out // 0) >= 1) | .i] |
        group_by(.) | map(select(length == 2)) | length')
expect_eq "$okboth" "$(jq '.runs[0].paired.pairs' "$T/cmp.json")" "paired: only the requests Ok on both sides"
"$L" compare "$T/qa.lt.zst" "$T/qb.lt.zst" --html "$T/cmp.html" >"$T/cmp.txt"
set -- $ca
expect_grep "cancelled (closed where the trace's client left; not errors, in no figure below): $3 and 0, $4 and 0 tokens" "$T/cmp.txt"
expect_grep "NOTE: A and B cancelled a different number of requests ($3 and 0)" "$T/cmp.txt"
expect_grep "^cancelled: A and B differ in 1 of 1 matched runs" "$T/cmp.txt"
expect_grep "A and B cancelled a different number of requests" "$T/cmp.html"
# the same file on both sides: no difference to note
"$L" compare "$T/qa.lt.zst" "$T/qa.lt.zst" >"$T/same.txt"
expect_no_grep "NOTE: A and B cancelled" "$T/same.txt"
expect_eq false "$("$L" compare "$T/qa.lt.zst" "$T/qa.lt.zst" --json | jq .runs[0].cancelled_differ)" \
    "the same file: cancelled_differ false"
finish

#!/bin/sh
# replay --live-metrics (docs/dashboard.md "Prometheus"): the client's own
# figures served as Prometheus text while the run goes. Scraped during a
# run against a sim with faults, and once more after it (--live-metrics-
# hold): the totals are the results file's (by outcome, by error class,
# output tokens, the TTFT and E2E histograms' counts and buckets, worked
# out here from the results with jq) and the sim's log's (requests it
# received). The page holds no prompt, header or key. Bad values are
# usage errors.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE

"$L" synth --arrivals constant --rate 25 --requests 150 --in fixed:64 --out fixed:30 -q \
    -o "$T/t.lt.zst" || fail "synth"
start_sim live --time-scale 4 --faults 500=0.1,disconnect=0.05:5
KEY=sk-live-metrics-secret-1234
OPENAI_API_KEY=$KEY "$L" replay "$T/t.lt.zst" --target "$SIM_URL" -o "$T/r.lt.zst" \
    --no-summary --header 'X-Team: secret-header-value' --live-metrics 127.0.0.1:0 \
    --live-metrics-hold 120 2>"$T/replay.err" &
RP=$!
server_track $RP
url_of() { sed -n 's/^loadtrace replay: live metrics on \(http[^ ]*\)$/\1/p' "$T/replay.err"; }
has_url() { [ -n "$(url_of)" ]; }
wait_until 30 has_url || fail "no live metrics URL: $(cat "$T/replay.err")"
U=$(url_of)
case $U in http://127.0.0.1:*/metrics) ;; *) fail "not a loopback URL: $U" ;; esac
# a look in the middle of the run: some requests recorded, some in flight
metric() { # file series
    awk -v s="$2" '$1 == s { print $2; f = 1 } END { if (!f) print "absent" }' "$1"
}
mid_ok() {
    curl -s --max-time 5 "$U" >"$T/mid.txt" || return 1
    [ "$(metric "$T/mid.txt" 'loadtrace_requests_total{outcome="ok"}')" -ge 5 ] 2>/dev/null
}
wait_until 60 mid_ok || fail "no ok requests on the page mid-run: $(head -20 "$T/mid.txt")"
mid=$(metric "$T/mid.txt" 'loadtrace_requests_total{outcome="ok"}')
expect_grep "^# TYPE loadtrace_ttft_seconds histogram" "$T/mid.txt"
expect_grep "^loadtrace_requests_in_flight " "$T/mid.txt"
expect_grep "^loadtrace_schedule_lag_seconds " "$T/mid.txt"
expect_grep '^loadtrace_run_requests 150$' "$T/mid.txt"
# the run over, its final figures are held
held() { grep -q "serving the final figures" "$T/replay.err"; }
wait_until 120 held || fail "the run did not end: $(tail -3 "$T/replay.err")"
curl -s --max-time 5 "$U" >"$T/end.txt" || fail "no page after the run"
curl -s -o /dev/null -w '%{http_code}' "${U%/metrics}/other" >"$T/404" || :
expect_eq 404 "$(cat "$T/404")" "another path"
kill -INT $RP
wait $RP
expect_status 1 $? "replay's status (some requests failed), after the hold was ended"
stop_sim

results "$T/r.lt.zst" >"$T/res.jsonl"
n() { jq -s "[.[] | select($1)] | length" "$T/res.jsonl"; }
ok=$(n '.err == null and (.cancelled | not)')
[ "$mid" -lt "$ok" ] || fail "the mid-run look ($mid ok) was not mid-run ($ok ok in all)"
expect_eq "$ok" "$(metric "$T/end.txt" 'loadtrace_requests_total{outcome="ok"}')" "ok"
expect_eq "$(n '.err != null and .err != "unsent"')" \
    "$(metric "$T/end.txt" 'loadtrace_requests_total{outcome="error"}')" "errors"
expect_eq 0 "$(metric "$T/end.txt" 'loadtrace_requests_total{outcome="unsent"}')" "unsent"
for cls in http incomplete aborted; do
    expect_eq "$(n ".err == \"$cls\"")" \
        "$(metric "$T/end.txt" "loadtrace_request_errors_total{class=\"$cls\"}")" "errors of class $cls"
done
[ "$(n '.err == "http"')" -ge 1 ] || fail "the faults made no http error"
expect_eq "$(jq -s '[.[] | .out // 0] | add' "$T/res.jsonl")" \
    "$(metric "$T/end.txt" loadtrace_output_tokens_total)" "output tokens"
expect_eq 0 "$(metric "$T/end.txt" loadtrace_requests_in_flight)" "in flight at the end"
# histograms: counts, and a bucket's count against the results' own times
okq='select(.err == null and (.cancelled | not))'
expect_eq "$(jq "$okq | select(.ft != null)" -c "$T/res.jsonl" | wc -l | tr -d ' ')" \
    "$(metric "$T/end.txt" loadtrace_ttft_seconds_count)" "TTFT count"
expect_eq "$(metric "$T/end.txt" loadtrace_ttft_seconds_count)" \
    "$(metric "$T/end.txt" 'loadtrace_ttft_seconds_bucket{le="+Inf"}')" "TTFT +Inf bucket"
for le in 0.01 0.025 0.05 0.1; do
    us=$(awk -v s=$le 'BEGIN { printf "%d", s * 1e6 + 0.5 }')
    expect_eq "$(jq -c "$okq | select(.ft != null and .ft - .sent <= $us)" "$T/res.jsonl" | wc -l | tr -d ' ')" \
        "$(metric "$T/end.txt" "loadtrace_ttft_seconds_bucket{le=\"$le\"}")" "TTFT <= $le s"
    expect_eq "$(jq -c "$okq | select(.end != null and .end - .sent <= $us)" "$T/res.jsonl" | wc -l | tr -d ' ')" \
        "$(metric "$T/end.txt" "loadtrace_e2e_seconds_bucket{le=\"$le\"}")" "E2E <= $le s"
done
sum=$(jq -s "[.[] | $okq | select(.end != null) | .end - .sent] | add / 1e6" "$T/res.jsonl")
expect_near "$sum" "$(metric "$T/end.txt" loadtrace_e2e_seconds_sum)" 0.001 "E2E sum"
# the sim's word: the requests it received are the ones recorded as sent
expect_eq "$(n '.sent != null')" "$(streams "$SIM_LOG" | wc -l | tr -d ' ')" "sent vs the sim's log"
# nothing of the requests' content, their headers or the key
for secret in "$KEY" secret-header-value X-Team Authorization; do
    if grep -q -- "$secret" "$T/end.txt" "$T/mid.txt"; then fail "the page holds '$secret'"; fi
done
# the page parses as the text format: every sample line is NAME[{...}] VALUE
awk '!/^#/ && NF && !/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eE]+$/ && !/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [+-]Inf$/ { print; bad = 1 } END { exit bad }' \
    "$T/end.txt" || fail "lines that are not Prometheus text"

# bad values
for v in nope 127.0.0.1:99999 :80 "[::1]"; do
    "$L" replay "$T/t.lt.zst" --target "$SIM_URL" -o "$T/x.lt.zst" --live-metrics "$v" 2>"$T/bad.err"
    expect_status 2 $? "--live-metrics $v"
done
"$L" replay "$T/t.lt.zst" --target "$SIM_URL" -o "$T/x.lt.zst" --live-metrics-hold 5s 2>"$T/bad.err"
expect_status 2 $? "--live-metrics-hold alone"
expect_grep "belongs to --live-metrics" "$T/bad.err"
[ ! -e "$T/x.lt.zst" ] || fail "a refused run wrote its results file"
finish

#!/bin/sh
# The report a user puts in front of their team: the time series,
# the chart ranges and the HTML's summary, against figures computed here
# with jq and awk from `loadtrace cat`, never from analyze's own output.
# (tests/analyze/browser.sh opens the same pages in Chromium.)
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
LT=$LOADTRACE

"$LT_GEN" gaps "$T/gaps.lt.zst" && "$LT_GEN" sweep "$T/sweep.lt.zst" && "$LT_GEN" one "$T/one.lt.zst" ||
    fail "generate inputs"

# events RUN < jsonl: one line per fact the time series is made of, for the
# measured results of run RUN: S sent gone (in flight from sent to its end,
# or the last time known of it), T time tokens (tokens that arrived), E end
# (an Ok request ended).
events() {
    jq -r --argjson run "$1" 'select(.rec == null and .run == $run and (.warmup | not) and .sent != null)
      | . as $r
      | ($r.status == 200 and $r.err == null and ($r.out // 0) >= 1) as $ok
      | ($r.chunks // []) as $c
      | "S \($r.sent) \($r.end // $r.ft // $r.fb // $r.sent)",
        (if $ok then "E \($r.end)" else empty end),
        (reduce range(0; $c | length; 2) as $i ({t: $r.sent, o: []};
            .t += $c[$i] | .o += ["T \(.t) \($c[$i + 1])"]) | .o[]),
        (if $ok and (($r.out - ([range(1; $c | length; 2) as $i | $c[$i]] | add // 0)) > 0)
         then "T \($r.end) \($r.out - ([range(1; $c | length; 2) as $i | $c[$i]] | add // 0))"
         else empty end)'
}
# series W < events: per bucket of W us: k, in flight (time-average over the
# bucket's real length: the last ends at the latest time), tokens/s (over at
# least W/100, docs/metrics.md), and whether a request ended in it (1/0).
series() {
    awk -v W="$1" '
    { if ($2 > last) last = $2; if ($1 == "S" && $3 > last) last = $3 }
    $1 == "S" { ns++; s[ns] = $2; g[ns] = $3 }
    $1 == "T" { tok[int($2 / W)] += $3 }
    $1 == "E" { e[int($2 / W)] = 1 }
    END {
        n = int(last / W) + 1
        for (k = 0; k < n; k++) {
            lo = k * W; hi = lo + W; if (hi > last) hi = last
            len = hi - lo; busy = 0
            for (i = 1; i <= ns; i++) {
                a = s[i] > lo ? s[i] : lo; b = g[i] < hi ? g[i] : hi
                if (b > a) busy += b - a
            }
            printf "%d %.6f %.6f %d\n", k, busy / len, tok[k] / ((len > W / 100 ? len : W / 100) / 1e6), (k in e)
        }
    }'
}

"$LT" cat --no-header "$T/gaps.lt.zst" >"$T/gaps.jsonl"
"$LT" cat --no-header "$T/sweep.lt.zst" >"$T/sweep.jsonl"
events 0 <"$T/gaps.jsonl" | series 1000000 >"$T/gaps.want"
events 1 <"$T/sweep.jsonl" | series 1000000 >"$T/c4.want"

# --- the time series: in flight averaged over time, the last bucket by its length ---------
"$LT" analyze --json "$T/gaps.lt.zst" >"$T/gaps.json" || fail "analyze --json gaps"
"$LT" analyze --json "$T/sweep.lt.zst" >"$T/sweep.json" || fail "analyze --json sweep"
check_series() { # want json-file run what
    jq -r --argjson run "$3" '.runs[$run].timeseries as $s | range(0; $s.in_flight | length) as $k
      | "\($k) \($s.in_flight[$k]) \($s.tokens_per_s[$k]) \(if $s.e2e_p50_ms[$k] == null then 0 else 1 end)"' \
        "$2" >"$T/got"
    expect_eq "$(wc -l <"$1" | tr -d ' ')" "$(wc -l <"$T/got" | tr -d ' ')" "$4: buckets"
    paste -d' ' "$1" "$T/got" | awk -v what="$4" '
        { di = $2 - $6; dt = $3 - $7; if (di < 0) di = -di; if (dt < 0) dt = -dt
          if (di > 0.001 || dt > 0.01 * ($3 > 1 ? $3 : 1) || $4 != $8) {
              printf "FAIL: %s, bucket %d: in flight %s tok/s %s ended %s; expected %s %s %s\n", what, $1, $6, $7, $8, $2, $3, $4 > "/dev/stderr"; bad++ } }
        END { exit bad > 0 }' || fail "$4: time series differs from the ground truth"
}
check_series "$T/gaps.want" "$T/gaps.json" 0 "gaps run"
check_series "$T/c4.want" "$T/sweep.json" 1 "sweep C=4"
# The file's own facts, as the generator made them: the last request ends
# 0.131 s into the last bucket, while tokens still flow (no cliff to 7 tok/s).
expect_eq "18 1.000000 53.435115 1" "$(tail -1 "$T/gaps.want")" "ground truth of the last bucket"
expect_eq "7 0.000000 0.000000 0" "$(sed -n 8p "$T/gaps.want")" "ground truth of a silent bucket"

# --- the text: blank, not 0 or NaN, where nothing ended; the summary before the details -------
"$LT" analyze --details "$T/gaps.lt.zst" >"$T/gaps.txt" || fail "analyze --details"
awk '/time series/ { on = 1; getline; next } on && $1 ~ /^[0-9.]+$/ { print int($1 + 0.5), NF } on && $1 !~ /^[0-9.]+$/ { on = 0 }' "$T/gaps.txt" >"$T/nf"
awk '{ print $1, ($4 ? 6 : 5) }' "$T/gaps.want" | diff - "$T/nf" >/dev/null ||
    fail "text time series: a bucket where nothing ended must have a blank E2E p50 (fields per row: $(tr '\n' ' ' <"$T/nf"))"
"$LT" analyze --slo ttft=60ms "$T/sweep.lt.zst" >"$T/sweep.txt" || fail "analyze sweep"
sweep_at=$(grep -n '^sweep over concurrency' "$T/sweep.txt" | cut -d: -f1)
detail_at=$(grep -n '^C=1  (run 0)' "$T/sweep.txt" | cut -d: -f1)
[ -n "$sweep_at" ] && [ -n "$detail_at" ] && [ "$sweep_at" -lt "$detail_at" ] ||
    fail "text: the sweep summary (line ${sweep_at:-none}) must come before the details (line ${detail_at:-none})"
expect_grep 'goodput: Ok requests/s meeting TTFT<=60ms' "$T/sweep.txt"
# The knee row: C=16 with its E2E p99 and goodput from the file.
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { r = int(p / 100 * NR); if (r < p / 100 * NR) r++; if (r < 1) r = 1; print v[r] }'; }
jq -r 'select(.rec == null and .run == 2 and (.warmup | not) and .status == 200) | .end - .sent' \
    "$T/sweep.jsonl" | pct 99 | awk '{ print $1 / 1000 }' >"$T/e2e99"
row=$(grep -- '<- knee' "$T/sweep.txt")
expect_eq 16 "$(echo "$row" | awk '{ print $1 }')" "text: the knee row"
expect_near "$(cat "$T/e2e99")" "$(echo "$row" | awk '{ print $9 }')" "$(awk '{ print $1 / 500 }' "$T/e2e99")" \
    "text: E2E p99 at C=16"
want=$(jq -rs '[.[] | select(.rec == null and .run == 2 and (.warmup | not))] as $r
  | ([$r[] | select(.status == 200 and .ft - .sent <= 60000)] | length)
    / ((([$r[] | .end] | max) - ([$r[] | .sent] | min)) / 1e6)' "$T/sweep.jsonl")
expect_near "$want" "$(echo "$row" | awk '{ print $10 }')" 0.002 "text: goodput at C=16"
for f in "$T/gaps.txt" "$T/sweep.txt" "$T/gaps.json"; do
    grep -qi 'nan' "$f" && fail "NaN in $f"
done

# --- charts: data with holes, ranges with headroom fitted to the data --------------------------
"$LT" analyze --plots "$T/p" --html "$T/gaps.html" "$T/gaps.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots --html gaps"
[ -s "$T/err" ] && fail "stderr: $(cat "$T/err")"
# pct_time: NaN (a break in the line) exactly where no request ended or got its first token.
awk '!/^#/ && NF { print ($2 == "NaN" ? 0 : 1) }' "$T/p/pct_time_run0.dat" >"$T/has"
awk '{ print $4 }' "$T/gaps.want" | diff - "$T/has" >/dev/null ||
    fail "pct_time data: E2E p50 must be NaN exactly in the buckets where no request ended"
expect_no_grep 'datafile missing' "$T/p/pct_time_run0.gp" # NaN breaks a line; "missing" joins it
# timeseries: the averaged in-flight column, a last row closing the step at the run's end,
# and ranges above the data (no line on the frame).
awk '!/^#/ && NF { print $3 }' "$T/p/timeseries_run0.dat" | sed '$d' >"$T/col"
awk '{ print $2 }' "$T/gaps.want" | paste -d' ' - "$T/col" |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 0.001) bad++ } END { exit bad > 0 }' ||
    fail "timeseries data: in flight differs from the ground truth"
grep -qi 'nan' "$T/p/timeseries_run0.dat" && fail "NaN in the time series data (the closing row too)"
expect_eq 18.131 "$(awk '!/^#/ && NF { t = $1 } END { print t }' "$T/p/timeseries_run0.dat")" "the last step ends with the run"
gpvar() { awk -v k="$1" '$1 == k && $2 == "=" { print $3 }' "$2"; }
max_if=$(awk '{ if ($2 > m) m = $2 } END { print m }' "$T/gaps.want")
max_tps=$(awk '{ if ($3 > m) m = $3 } END { print m }' "$T/gaps.want")
awk -v a="$(gpvar y2max "$T/p/timeseries_run0.gp")" -v b="$max_if" 'BEGIN { exit !(a >= 1.05 * b && a <= 1.5 * b) }' ||
    fail "timeseries y2max $(gpvar y2max "$T/p/timeseries_run0.gp") is not just above the most in flight ($max_if)"
awk -v a="$(gpvar ymax "$T/p/timeseries_run0.gp")" -v b="$max_tps" 'BEGIN { exit !(a >= 1.05 * b && a <= 1.5 * b) }' ||
    fail "timeseries ymax $(gpvar ymax "$T/p/timeseries_run0.gp") is not just above the most tokens/s ($max_tps)"
# ITL: the gaps here are 20 ms, one of 0 and one stall of 1.5 s: the x range starts near
# 20 ms (not at the 0 gap's 1 us, six decades lower) and ends just past the stall.
# (The rule, docs in analyze_plot.c: from max(p0.5, median / 10); both are 20 ms here.)
jq -r 'select(.rec == null and .status == 200) | .chunks | [range(2; length; 2) as $i | .[$i]] | .[]' \
    "$T/gaps.jsonl" >"$T/itl"
p05=$(pct 0.5 <"$T/itl" | awk '{ print $1 / 1000 }')
maxgap=$(sort -n "$T/itl" | tail -1 | awk '{ print $1 / 1000 }')
expect_eq "20 1500" "$p05 $maxgap" "ground truth of the gaps"
xmin=$(gpvar xmin "$T/p/itl_hist.gp")
xmax=$(gpvar xmax "$T/p/itl_hist.gp")
awk -v a="$xmin" -v b="$xmax" -v p="$p05" -v m="$maxgap" 'BEGIN { exit !(a <= p && a >= p / 2 && b >= m && b <= 2 * m) }' ||
    fail "ITL x range [$xmin, $xmax] ms does not fit the data (p0.5 $p05, max $maxgap)"
# The gaps left of the axis (here the one gap of 0) are counted in the caption.
left=$(awk -v x="$xmin" '{ n++; if ($1 / 1000 < x) l++ } END { printf "%.2g", 100 * l / n }' "$T/itl")
expect_eq 0.18 "$left" "ground truth of the gaps left of the ITL axis"
expect_grep "up to $left % of a run's gaps, under" "$T/p/itl_hist.gp"
expect_no_grep '<title>gnuplot_plot_\|<title>Gnuplot' "$T/p/itl_hist.svg" # what hovering shows
expect_grep '<title>rate 2/s</title>' "$T/p/itl_hist.svg"
expect_grep '<title>Inter-token latency (gaps between token-bearing chunks); up to' "$T/p/itl_hist.svg"

# --- the HTML: summary first, names, goodput only with its SLO ---------------------------------
expect_grep '<meta name="viewport" content="width=device-width, initial-scale=1">' "$T/gaps.html"
expect_grep '<h1>One run at rate 2/s: m at sim</h1>' "$T/gaps.html"
expect_grep '<summary>rate 2/s &mdash; 29/30 Ok' "$T/gaps.html"
expect_no_grep 'Run 0 (C\|C | rate\|C rate\|<title>gnuplot_plot_\|NaN\|nan' "$T/gaps.html"
expect_no_grep 'Goodput' "$T/gaps.html"
"$LT" analyze --slo ttft=200ms,e2e=1s --html "$T/gaps-slo.html" "$T/gaps.lt.zst" >/dev/null 2>&1 ||
    fail "analyze --slo --html"
expect_grep 'Goodput (req/s)<br>TTFT&lt;=200ms, E2E&lt;=1000ms</th>' "$T/gaps-slo.html"
# goodput: Ok requests with TTFT <= 200 ms and E2E <= 1 s, per second of wall
want=$(jq -rs '[.[] | select(.rec == null)] as $r
  | ([$r[] | select(.status == 200 and .ft - .sent <= 200000 and .end - .sent <= 1000000)] | length)
    / ((([$r[] | .end] | max) - ([$r[] | .sent] | min)) / 1e6)' "$T/gaps.jsonl")
got=$(sed -n '/<table id=summary>/,/<\/table>/p' "$T/gaps-slo.html" | grep '^<tr><td' |
    sed 's/<[^>]*>/ /g' | awk '{ print $(NF - 1) }')
expect_near "$want" "$got" 0.001 "HTML goodput"
# The sweep: the table is the first thing under the title, the knee marked, numbers from the file.
"$LT" analyze --html "$T/sweep.html" "$T/sweep.lt.zst" >/dev/null 2>&1 || fail "analyze --html sweep"
expect_grep '<h1>Concurrency sweep, C=1 to 32: test-model at sim</h1>' "$T/sweep.html"
first=$(grep -n '<table\|<figure\|<details\|<h2' "$T/sweep.html" | head -1)
case "$first" in *'<table id=summary>'*) ;; *) fail "the summary table is not the first thing: $first" ;; esac
knee=$(grep '<tr class=knee>' "$T/sweep.html" | sed 's/<[^>]*>/ /g; s/&#9664;//')
expect_eq 16 "$(echo "$knee" | awk '{ print $1 }')" "HTML: the knee row"
expect_near "$(cat "$T/e2e99")" "$(echo "$knee" | awk '{ print $10 }')" "$(awk '{ print $1 / 500 }' "$T/e2e99")" \
    "HTML: E2E p99 at C=16"
jq -r 'select(.rec == null and .run == 2 and (.warmup | not) and .status == 200) | .ft - .sent' \
    "$T/sweep.jsonl" | pct 99 | awk '{ print $1 / 1000 }' >"$T/ttft99"
expect_near "$(cat "$T/ttft99")" "$(echo "$knee" | awk '{ print $6 }')" 0.15 "HTML: TTFT p99 at C=16"
expect_eq 4 "$(grep -c '^<details>' "$T/sweep.html" | awk '{ print $1 - 1 }')" "a collapsible section per level (and the full report)"
expect_grep '<summary>C=16 &mdash; 238/238 Ok' "$T/sweep.html"

# --- the client-and-server chart: each panel's range from its data with
# headroom, its key above it (inside and opaque, it hid the lines under it)
"$LT_GEN" server "$T/server.lt.zst" || fail "generate the server input"
"$LT" analyze --plots "$T/sp" "$T/server.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots with server metrics"
[ -s "$T/err" ] && fail "stderr: $(cat "$T/err")"
"$LT" cat --no-header "$T/server.lt.zst" >"$T/server.jsonl"
events 0 <"$T/server.jsonl" | series 1000000 >"$T/server.want"
srv_max=$(jq -s '[.[] | select(.rec == "scrape") | .v.requests_running, .v.requests_waiting | numbers] | max' "$T/server.jsonl")
req_max=$(awk -v s="$srv_max" 'BEGIN { m = s } { if ($2 > m) m = $2 } END { print m }' "$T/server.want")
tps_max=$(awk '{ if ($3 > m) m = $3 } END { print m }' "$T/server.want")
for v in "reqmax $req_max" "tpsmax $tps_max"; do
    got=$(gpvar "${v% *}" "$T/sp/server_run0.gp")
    awk -v a="$got" -v b="${v#* }" 'BEGIN { exit !(b > 0 && a >= 1.05 * b && a <= 1.5 * b) }' ||
        fail "server chart: ${v% *} '$got' is not just above the data's highest (${v#* })"
done
expect_grep '^set key outside top' "$T/sp/server_run0.gp"
expect_no_grep '^set key.* opaque\|^set key inside' "$T/sp/server_run0.gp"

# --- a capacity search: its answer heads the report, as its probes say
# (attainment per probe computed here from the results: Ok and TTFT <= 1 s)
"$LT" synth --arrivals poisson --rate 2 --requests 80 --in fixed:200 --out fixed:100 -q \
    -o "$T/cap-t.lt.zst" &&
    "$LT" replay "$T/cap-t.lt.zst" --target sim --virtual --find-max rate --slo ttft=1s -q \
        -o "$T/cap.lt.zst" >/dev/null || fail "capacity search"
"$LT" analyze --html "$T/cap.html" "$T/cap.lt.zst" >/dev/null 2>&1 || fail "analyze --html capacity"
"$LT" cat --no-header "$T/cap.lt.zst" | jq -s -r '
    ([.[] | select(.rec == "run") | {key: (.run | tostring), value: .rate}] | from_entries) as $rate
    | [.[] | select(.rec == null and (.warmup | not))] | group_by(.run)[] | length as $n
    | ([.[] | select(.status == 200 and .err == null and (.out // 0) >= 1 and .ft - .sent <= 1000000)]
       | length) as $k
    | "\($rate[.[0].run | tostring]) \($k / $n)"' >"$T/cap.attain"
max_ok=$(awk '$2 >= 0.9 && $1 > m { m = $1 } END { printf "%.4g", m }' "$T/cap.attain")
min_fail=$(awk '$2 < 0.9 && (m == "" || $1 < m) { m = $1 } END { printf "%.4g", m }' "$T/cap.attain")
probes=$(wc -l <"$T/cap.attain" | tr -d ' ')
[ "$probes" -ge 3 ] || fail "only $probes probes in the capacity search"
expect_grep "<p class=answer id=capacity-answer>Capacity (virtual): <b>$max_ok req/s</b> meets the SLO ttft=1s for 90 % of requests; $min_fail req/s does not ($probes probes" "$T/cap.html"
answer_at=$(grep -n 'capacity-answer' "$T/cap.html" | head -1 | cut -d: -f1)
table_at=$(grep -n '<table id=summary>' "$T/cap.html" | head -1 | cut -d: -f1)
[ -n "$answer_at" ] && [ -n "$table_at" ] && [ "$answer_at" -lt "$table_at" ] ||
    fail "the capacity answer (line ${answer_at:-none}) must come before the summary table (line ${table_at:-none})"

# --- a run too short for charts over time: said, not drawn ---------------------------------
"$LT" analyze --html "$T/one.html" "$T/one.lt.zst" >/dev/null 2>&1 || fail "analyze --html one"
expect_no_grep '<figure id="pct_time' "$T/one.html"
expect_no_grep '<figure id="timeseries' "$T/one.html"
expect_grep 'too short for charts over time (1 bucket of 1 s)' "$T/one.html"

# --- without gnuplot: no claim of files that were never kept ---------------------------------
LT_GNUPLOT=/nonexistent/gnuplot "$LT" analyze --html "$T/nogp.html" "$T/sweep.lt.zst" >/dev/null 2>&1
expect_status 0 $? "analyze --html without gnuplot"
expect_grep 'Charts not drawn: gnuplot is not installed' "$T/nogp.html"
expect_eq 1 "$(grep -c 'not drawn' "$T/nogp.html")" "one note, not one per chart"
expect_no_grep '<figure' "$T/nogp.html"
expect_no_grep '\.dat and \.gp\|loadtrace-plots-' "$T/nogp.html"
LT_GNUPLOT=/nonexistent/gnuplot "$LT" analyze --plots "$T/nogp" --html "$T/nogp2.html" "$T/sweep.lt.zst" >/dev/null 2>&1
expect_grep "scripts are in $T/nogp (NAME.dat, NAME.gp; e.g. throughput.dat and .gp)" "$T/nogp2.html"
[ -s "$T/nogp/throughput.dat" ] && [ -s "$T/nogp/throughput.gp" ] || fail "the files the page names are missing"
finish

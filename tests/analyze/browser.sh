#!/bin/sh
# Every kind of HTML report, opened in headless Chromium at 1,400 and 420 px
# (a desktop and a phone; browser.js drives it): no console error, no page
# wider than the screen (with every section open too), the summary on the
# first screen, chart text drawn at 9 px or more, hover titles that name
# what they are over, and a title that names the measurement, not a file.
# Screenshots stay in the test's directory for a person to look at.
# Without Chromium (or node) the test is skipped, and says so: ctest reports
# it as skipped (exit status 77), not passed; with LT_REQUIRE_BROWSER=1 (as
# .ci/run sets) it fails instead.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
LT=$LOADTRACE

skip() {
    if [ -n "${LT_REQUIRE_BROWSER:-}" ]; then
        echo "FAIL: $*" >&2
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}
CHROMIUM=${LT_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ] || [ ! -x "$CHROMIUM" ]; then
    skip "chromium is not installed${CHROMIUM:+ (no $CHROMIUM)}, so no HTML report was opened" \
        "in a browser (apt-get install chromium; .ci/run installs it)"
fi
if ! command -v node >/dev/null; then
    skip "node is not installed, so chromium cannot be driven (apt-get install nodejs)"
fi

# The inputs sit under a long directory, as in a CI checkout: titles and
# summaries name them, and a long path must not widen a page on a phone.
D=$T/inputs_in_a_directory_with_a_long_name_and_no_hyphen_to_break_at
mkdir -p "$D" || fail "mkdir $D"
"$LT_GEN" sweep "$D/sweep.lt.zst" && "$LT_GEN" gaps "$D/gaps.lt.zst" && "$LT_GEN" one "$D/one.lt.zst" &&
    "$LT_GEN" trace "$D/a.lt.zst" 1 && "$LT_GEN" trace "$D/b.lt.zst" 2 &&
    "$LT_GEN" level 4 "$D/r1.lt.zst" 1 1.0 && "$LT_GEN" level 4 "$D/r2.lt.zst" 2 1.1 || fail "generate inputs"
for c in 1 4 16 32; do "$LT_GEN" level $c "$D/c$c.lt.zst" || fail "gen level $c"; done
"$LT_GEN" server "$D/server.lt.zst" || fail "generate the server input"
# a capacity search (replay --find-max in virtual time: no server)
"$LT" synth --arrivals poisson --rate 2 --requests 80 --in fixed:200 --out fixed:100 -q \
    -o "$D/cap-t.lt.zst" &&
    "$LT" replay "$D/cap-t.lt.zst" --target sim --virtual --find-max rate --slo ttft=1s -q \
        -o "$D/cap.lt.zst" >/dev/null || fail "capacity search"
mkdir -p "$T/html" "$T/shots"
H=$T/html
"$LT" analyze --slo ttft=80ms,e2e=2s --plots "$T/p" --html "$H/sweep.html" "$D/sweep.lt.zst" >/dev/null 2>&1 ||
    fail "report: sweep"
"$LT" analyze --html "$H/files.html" "$D/c1.lt.zst" "$D/c4.lt.zst" "$D/c16.lt.zst" "$D/c32.lt.zst" \
    >/dev/null 2>&1 || fail "report: sweep over four files"
"$LT" analyze --html "$H/rate.html" "$D/gaps.lt.zst" >/dev/null 2>&1 || fail "report: one rate run"
"$LT" analyze --html "$H/short.html" "$D/one.lt.zst" >/dev/null 2>&1 || fail "report: one request"
"$LT" analyze --html "$H/server.html" "$D/server.lt.zst" >/dev/null 2>&1 || fail "report: server metrics"
"$LT" analyze --html "$H/capacity.html" "$D/cap.lt.zst" >/dev/null 2>&1 || fail "report: capacity search"
LT_GNUPLOT=/nonexistent/gnuplot "$LT" analyze --html "$H/nogp.html" "$D/sweep.lt.zst" >/dev/null 2>&1 ||
    fail "report: without gnuplot"
"$LT" compare --html "$H/cmp-traces.html" "$D/a.lt.zst" "$D/b.lt.zst" >/dev/null 2>&1 ||
    fail "report: compare traces"
"$LT" compare --html "$H/cmp-results.html" "$D/r1.lt.zst" "$D/r2.lt.zst" >/dev/null 2>&1 ||
    fail "report: compare results"

node "$LT_SRC/tests/analyze/browser.js" "$CHROMIUM" "$T/shots" 1400x900,420x860 "$H"/*.html \
    >"$T/pages.jsonl" 2>"$T/browser.err"
expect_status 0 $? "browser.js ($(cat "$T/browser.err"))"
expect_eq 18 "$(wc -l <"$T/pages.jsonl" | tr -d ' ')" "pages measured (9 reports x 2 widths)"

# One failure line per broken rule, naming the page, the width and the figure.
jq -r '
  "\(.file) at \(.width) px" as $p
  | (if (.errors | length) > 0 then "\($p): console errors: \(.errors | join("; "))" else empty end),
    (if .scrollWidth > .clientWidth then "\($p): the page is \(.scrollWidth) px wide, wider than the screen (\(.clientWidth) px)" else empty end),
    (if .openScrollWidth > .clientWidth then "\($p): with every section open the page is \(.openScrollWidth) px wide" else empty end),
    (if (.overflowing | length) > 0 then "\($p): boxes past the right edge: \(.overflowing | join(", "))" else empty end),
    (if .viewport | not then "\($p): no viewport meta tag" else empty end),
    (if .summaryTop == null then "\($p): no summary (#summary)"
     elif .summaryTop >= .innerHeight then "\($p): the summary starts at \(.summaryTop) px, below the first screen (\(.innerHeight) px)"
     elif .summaryTag == "table" and .summaryBottom > .innerHeight then "\($p): the summary table ends at \(.summaryBottom) px, past the first screen (\(.innerHeight) px)"
     else empty end),
    (if .charts > 0 and .minChartFontPx != null and .minChartFontPx < 9 then "\($p): chart text drawn at \(.minChartFontPx) px" else empty end),
    (if (.file | startswith("cmp-") | not) and .file != "nogp.html" and .file != "short.html" and .charts == 0 then "\($p): no chart" else empty end),
    (if ([.hoverTitles[] | select(test("^gnuplot"; "i"))] | length) > 0 then "\($p): hover titles \([.hoverTitles[] | select(test("^gnuplot"; "i"))] | unique | join(", "))" else empty end),
    (if (.file | startswith("cmp-") | not) and (.h1 | test("\\.lt\\.zst")) then "\($p): the title names a file: \(.h1)" else empty end)
' "$T/pages.jsonl" >"$T/problems"
while IFS= read -r line; do fail "$line"; done <"$T/problems"
# The titles say what was measured.
expect_eq "Concurrency sweep, C=1 to 32: test-model at sim" \
    "$(jq -r 'select(.file == "files.html" and .width == 420) | .h1' "$T/pages.jsonl")" "title of a sweep over four files"
expect_eq "One run at rate 2/s: m at sim" \
    "$(jq -r 'select(.file == "rate.html" and .width == 420) | .h1' "$T/pages.jsonl")" "title of a rate run"
echo "screenshots: $T/shots"
finish

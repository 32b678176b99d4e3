#!/bin/sh
# No command overwrites its input, and a report overwrites only a report
# (one loadtrace wrote, not a page of the user's):
# `analyze --html a.lt.zst b.lt.zst` (the report's name forgotten) and the
# same with compare, a report named as a CSV file, `--plots a.lt.zst ...`
# (a file where the charts' directory goes), `synth --fit t -o t`
# (also through another name for the same file), and `sim --fit r -o r`
# (also through a link) are refused with exit 2,
# and the files are byte for byte as they were. --plots writes only into a
# new or empty directory or one loadtrace made (.loadtrace-charts), so a
# user's file of a chart's name is never overwritten; --server-csv never
# takes an input's place and replaces only its own CSV; the HTML report,
# the server CSV and each chart file are written whole and renamed into
# place (a new inode, no temporary file left).
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
"$LT_GEN" sweep "$T/a.lt.zst" || fail "gen a"
"$LT_GEN" sweep "$T/b.lt.zst" || fail "gen b"
cp "$T/a.lt.zst" "$T/a.orig"
cp "$T/b.lt.zst" "$T/b.orig"

refused() { # what, stderr pattern, command...
    what=$1 pat=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    expect_status 2 $? "$what"
    expect_grep "$pat" "$T/err"
}
refused "analyze --html over the first results file" "is not an HTML file" \
    "$LOADTRACE" analyze --html "$T/a.lt.zst" "$T/b.lt.zst"
refused "analyze --html naming one of the inputs" "the output is the input file" \
    "$LOADTRACE" analyze --html "$T/b.lt.zst" "$T/a.lt.zst" "$T/b.lt.zst"
refused "compare --html over a results file" "the output is the input file" \
    "$LOADTRACE" compare --html "$T/b.lt.zst" "$T/a.lt.zst" "$T/b.lt.zst"
ln -s "$T/a.lt.zst" "$T/alias.html"
refused "analyze --html through a link to the input" "the output is the input file" \
    "$LOADTRACE" analyze --html "$T/alias.html" "$T/a.lt.zst"
printf 'C,tok/s\n1,100\n' >"$T/table.csv"
cp "$T/table.csv" "$T/table.orig"
refused "analyze --html over a CSV file" "is not an HTML file" \
    "$LOADTRACE" analyze --html "$T/table.csv" "$T/a.lt.zst"
# an HTML page of the user's own is not a report loadtrace wrote
printf '<!DOCTYPE html>\n<html><body><p>Our team page</p></body></html>\n' >"$T/team.html"
cp "$T/team.html" "$T/team.orig"
refused "analyze --html over the user's own page" "is an HTML file loadtrace did not write" \
    "$LOADTRACE" analyze --html "$T/team.html" "$T/a.lt.zst"
refused "compare --html over the user's own page" "is an HTML file loadtrace did not write" \
    "$LOADTRACE" compare --html "$T/team.html" "$T/a.lt.zst" "$T/b.lt.zst"
cmp -s "$T/team.html" "$T/team.orig" || fail "team.html changed"
# --plots DIR with a file's name (the directory forgotten) is refused too
refused "analyze --plots over the first results file" "exists and is not a directory" \
    "$LOADTRACE" analyze --plots "$T/a.lt.zst" "$T/b.lt.zst"
refused "compare --plots over a results file" "exists and is not a directory" \
    "$LOADTRACE" compare --plots "$T/a.lt.zst" "$T/a.lt.zst" "$T/b.lt.zst"
cmp -s "$T/a.lt.zst" "$T/a.orig" || fail "a.lt.zst changed"
cmp -s "$T/b.lt.zst" "$T/b.orig" || fail "b.lt.zst changed"
cmp -s "$T/table.csv" "$T/table.orig" || fail "table.csv changed"

# A report may replace a report (its own, written again; one from before
# reports named loadtrace as their generator: its last line says so).
printf '<!DOCTYPE html>\n<html><body><h1>x</h1>\n<p><small>Made by loadtrace 0.1.0.</small></p>\n</body>\n</html>\n' >"$T/old.html"
"$LOADTRACE" analyze --html "$T/old.html" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html over an older loadtrace report"
expect_grep '<meta name="generator" content="loadtrace ' "$T/old.html"
"$LOADTRACE" compare --html "$T/old.html" "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "compare --html over an analyze report"
"$LOADTRACE" analyze --html "$T/r.html" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html to a new file"
"$LOADTRACE" analyze --html "$T/r.html" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html over its own report"

# --plots into a directory of the user's own: a file named as a chart
# (their edited script, say) would be overwritten, so nothing is written.
mkdir -p "$T/mine"
echo "my own script" >"$T/mine/throughput.gp"
echo "notes" >"$T/mine/notes.txt"
ls -a "$T/mine" >"$T/mine.before"
refused "analyze --plots into a directory of the user's files" "holds files loadtrace did not write" \
    "$LOADTRACE" analyze --plots "$T/mine" "$T/a.lt.zst"
refused "compare --plots into a directory of the user's files" "holds files loadtrace did not write" \
    "$LOADTRACE" compare --plots "$T/mine" "$T/a.lt.zst" "$T/b.lt.zst"
expect_eq "my own script" "$(cat "$T/mine/throughput.gp")" "the user's throughput.gp"
ls -a "$T/mine" | cmp -s - "$T/mine.before" || fail "files appeared in the user's directory"
# a new directory becomes loadtrace's: written again and again, and by
# compare too; a file of another name put there is left alone
"$LOADTRACE" analyze --plots "$T/charts" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots into a new directory"
[ -s "$T/charts/.loadtrace-charts" ] || fail "no .loadtrace-charts in the directory loadtrace made"
[ -s "$T/charts/throughput.gp" ] || fail "no throughput.gp"
echo "notes" >"$T/charts/notes.txt"
ino=$(stat -c %i "$T/charts/throughput.gp")
"$LOADTRACE" analyze --plots "$T/charts" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots into the directory it made"
"$LOADTRACE" compare --plots "$T/charts" "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "compare --plots into a chart directory"
expect_eq notes "$(cat "$T/charts/notes.txt")" "a file of another name in the chart directory"
[ "$(stat -c %i "$T/charts/throughput.gp")" != "$ino" ] || fail "throughput.gp rewritten in place, not replaced whole"
mkdir -p "$T/empty"
"$LOADTRACE" analyze --plots "$T/empty" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --plots into an empty directory"

# --server-csv: never an input, never a file that is not its CSV
refused "analyze --server-csv over the results file" "the output is the input file" \
    "$LOADTRACE" analyze --server-csv "$T/a.lt.zst" "$T/a.lt.zst"
refused "analyze --server-csv over another CSV" "is not a CSV file this option wrote" \
    "$LOADTRACE" analyze --server-csv "$T/table.csv" "$T/a.lt.zst"
cmp -s "$T/a.lt.zst" "$T/a.orig" || fail "a.lt.zst changed by --server-csv"
cmp -s "$T/table.csv" "$T/table.orig" || fail "table.csv changed by --server-csv"
"$LOADTRACE" analyze --server-csv "$T/s.csv" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --server-csv to a new file"
expect_eq "file,run,t_s,running,waiting,kv_usage,gpu_util,power_w" "$(head -1 "$T/s.csv")" "server CSV header"
ino=$(stat -c %i "$T/s.csv")
"$LOADTRACE" analyze --server-csv "$T/s.csv" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --server-csv over its own CSV"
[ "$(stat -c %i "$T/s.csv")" != "$ino" ] || fail "the server CSV rewritten in place, not replaced whole"
# the report too is replaced whole (see "over its own report" above)
ino=$(stat -c %i "$T/r.html")
"$LOADTRACE" analyze --html "$T/r.html" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html over its own report, again"
[ "$(stat -c %i "$T/r.html")" != "$ino" ] || fail "the report rewritten in place, not replaced whole"
# a report reached through a link: the link stays, the file it names is
# replaced, with its permissions (a private report stays private)
mkdir -p "$T/pub"
"$LOADTRACE" analyze --html "$T/pub/r.html" "$T/a.lt.zst" >/dev/null 2>&1 || fail "report in pub/"
chmod 600 "$T/pub/r.html"
ln -s pub/r.html "$T/link.html"
ino=$(stat -c %i "$T/pub/r.html")
"$LOADTRACE" analyze --html "$T/link.html" "$T/b.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html through a link to a report"
[ -L "$T/link.html" ] || fail "the link was replaced by a file"
[ "$(stat -c %i "$T/pub/r.html")" != "$ino" ] || fail "pub/r.html rewritten in place, not replaced whole"
expect_eq 600 "$(stat -c %a "$T/pub/r.html")" "the report's permissions"
find "$T" -name '*.tmp-*' >"$T/tmps"
expect_eq "" "$(cat "$T/tmps")" "temporary files left behind"

# synth --fit T -o T, by the same name and by another name.
"$LOADTRACE" import --from azure "$LT_SRC/traces/samples/AzureLLMInferenceTrace_code.csv" \
    -o "$T/t.lt.zst" 2>/dev/null || fail "import"
cp "$T/t.lt.zst" "$T/t.orig"
refused "synth --fit t -o t" "the output is the input file" \
    "$LOADTRACE" synth --fit "$T/t.lt.zst" --requests 10 -o "$T/t.lt.zst"
mkdir -p "$T/d"
refused "synth --fit t -o d/../t" "the output is the input file" \
    "$LOADTRACE" synth --fit "$T/t.lt.zst" --requests 10 -o "$T/d/../t.lt.zst"
cmp -s "$T/t.lt.zst" "$T/t.orig" || fail "t.lt.zst changed"

# sim --fit R -o R writes a profile where the results were: refused by the
# same name, through a symbolic link, as the second of two inputs, and over
# its own base profile; nothing is written.
refused "sim --fit a -o a" "the output is the input file" \
    "$LOADTRACE" sim --fit "$T/a.lt.zst" -o "$T/a.lt.zst"
ln -s "$T/a.lt.zst" "$T/a-link.profile"
refused "sim --fit a -o link-to-a" "the output is the input file" \
    "$LOADTRACE" sim --fit "$T/a.lt.zst" -o "$T/a-link.profile"
refused "sim --fit a b -o b" "the output is the input file" \
    "$LOADTRACE" sim --fit "$T/a.lt.zst" "$T/b.lt.zst" -o "$T/d/../b.lt.zst"
printf 'max_running = 8\n' >"$T/base.profile"
cp "$T/base.profile" "$T/base.orig"
refused "sim --fit a --profile p -o p" "the output is the input file" \
    "$LOADTRACE" sim --fit "$T/a.lt.zst" --profile "$T/base.profile" -o "$T/base.profile"
cmp -s "$T/a.lt.zst" "$T/a.orig" || fail "a.lt.zst changed by sim --fit"
cmp -s "$T/b.lt.zst" "$T/b.orig" || fail "b.lt.zst changed by sim --fit"
cmp -s "$T/base.profile" "$T/base.orig" || fail "the base profile changed by sim --fit"
[ -L "$T/a-link.profile" ] || fail "sim --fit replaced the link"
finish

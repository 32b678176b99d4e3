#!/bin/sh
# No command overwrites its input, and a report overwrites only a report:
# `analyze --html a.lt.zst b.lt.zst` (the report's name forgotten) and the
# same with compare, a report named as a CSV file, `--plots a.lt.zst ...`
# (a file where the charts' directory goes), `synth --fit t -o t`
# (also through another name for the same file) are refused with exit 2,
# and the files are byte for byte as they were.
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
# --plots DIR with a file's name (the directory forgotten) is refused too
refused "analyze --plots over the first results file" "exists and is not a directory" \
    "$LOADTRACE" analyze --plots "$T/a.lt.zst" "$T/b.lt.zst"
refused "compare --plots over a results file" "exists and is not a directory" \
    "$LOADTRACE" compare --plots "$T/a.lt.zst" "$T/a.lt.zst" "$T/b.lt.zst"
cmp -s "$T/a.lt.zst" "$T/a.orig" || fail "a.lt.zst changed"
cmp -s "$T/b.lt.zst" "$T/b.orig" || fail "b.lt.zst changed"
cmp -s "$T/table.csv" "$T/table.orig" || fail "table.csv changed"

# A report may replace a report (its own, written again).
"$LOADTRACE" analyze --html "$T/r.html" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html to a new file"
"$LOADTRACE" analyze --html "$T/r.html" "$T/a.lt.zst" >/dev/null 2>"$T/err"
expect_status 0 $? "analyze --html over its own report"

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
finish

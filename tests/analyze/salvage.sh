#!/bin/sh
# analyze and compare on a damaged results file: without --salvage they stop
# at the bad frame (exit 1, saying how many results were read before it);
# with --salvage they read every intact frame, say what was skipped, count
# exactly the results of the intact frames (those cat --salvage hands out)
# and exit 1, since something was lost.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
# 960 results in frames of 50 values; damage one byte inside the 4th frame.
LT_GEN_FRAME=50 "$LT_GEN" sweep "$T/ok.lt.zst" || fail "gen"
off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$T/ok.lt.zst" | sed -n 4p | cut -d: -f1)
[ -n "$off" ] || fail "no 4th frame"
cp "$T/ok.lt.zst" "$T/bad.lt.zst"
printf 'Z' | dd of="$T/bad.lt.zst" bs=1 seek=$((off + 40)) conv=notrunc 2>/dev/null
cmp -s "$T/ok.lt.zst" "$T/bad.lt.zst" && fail "not damaged"

"$LOADTRACE" cat --no-header --salvage "$T/bad.lt.zst" 2>/dev/null | grep -c '"i":' >"$T/n"
intact=$(cat "$T/n")
[ "$intact" -gt 0 ] && [ "$intact" -lt 960 ] || fail "cat --salvage kept $intact of 960"

"$LOADTRACE" analyze --json "$T/bad.lt.zst" >"$T/a.json" 2>"$T/err"
expect_status 1 $? "analyze without --salvage"
expect_grep "results read before the error" "$T/err"

"$LOADTRACE" analyze --json --salvage "$T/bad.lt.zst" >"$T/s.json" 2>"$T/err"
expect_status 1 $? "analyze --salvage"
expect_grep "skipped: " "$T/err"
expect_grep "salvaged: skipped 1 damaged frames" "$T/err"
expect_grep "the figures cover the $intact results that were intact" "$T/err"
expect_eq "$intact" "$(jq '[.runs[].results] | add' "$T/s.json")" "results analyzed with --salvage"

"$LOADTRACE" compare "$T/ok.lt.zst" "$T/bad.lt.zst" >/dev/null 2>"$T/err"
expect_status 1 $? "compare without --salvage"
"$LOADTRACE" compare --salvage "$T/ok.lt.zst" "$T/bad.lt.zst" >"$T/c.txt" 2>"$T/err"
expect_status 1 $? "compare --salvage"
expect_grep "salvaged: skipped 1 damaged frames or values of $T/bad.lt.zst" "$T/err"
expect_grep "TTFT" "$T/c.txt"
finish

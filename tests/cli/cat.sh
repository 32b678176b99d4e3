#!/bin/sh
# loadtrace cat: JSON lines out of trace files, intact and damaged.
# Fixtures are files the unit tests wrote (their content is known by
# construction): rich.lt.zst holds records t=i*1000, in=i, out=2i for
# i < 10000; corrupt2.lt.zst holds t=i, in=i for i < 1000 in frames of 100,
# with the third data frame damaged.
set -u
. "$LT_SRC/tests/cli/lib.sh"
C="$LT_SRC/tests/fuzz/corpus/reader"

"$LOADTRACE" cat "$C/rich.lt.zst" >"$T/rich.jsonl" 2>"$T/err"
expect_status 0 $? "cat rich"
expect_eq 10001 "$(wc -l <"$T/rich.jsonl")" "header + 10000 records"
expect_eq '{"format":"loadtrace"' "$(head -1 "$T/rich.jsonl" | cut -c1-21)" "header first"
# Sum of in over all records, from the JSON, against the known 0+..+9999.
sum=$(grep -o '"in":[0-9]*' "$T/rich.jsonl" | awk -F: '{s+=$2} END {printf "%d", s}')
expect_eq 49995000 "$sum" "sum of in"
expect_eq 10000 "$("$LOADTRACE" cat --no-header "$C/rich.lt.zst" | wc -l)" "--no-header"
# The file is plain zstd: a standard tool decompresses it.
zstd -q -t "$C/rich.lt.zst"
expect_status 0 $? "zstd -t"

# A damaged frame: the 200 intact records before it are printed, the error
# names the frame's offset, the exit status is 1.
"$LOADTRACE" cat --no-header "$C/corrupt2.lt.zst" >"$T/c.jsonl" 2>"$T/err"
expect_status 1 $? "cat corrupt"
expect_eq 200 "$(wc -l <"$T/c.jsonl")" "records before the damage"
expect_grep "frame at byte" "$T/err"
expect_grep "200 records before the error were printed" "$T/err"

# --salvage: every intact frame (900 records), the skip reported, status 1.
"$LOADTRACE" cat --no-header --salvage "$C/corrupt2.lt.zst" >"$T/s.jsonl" 2>"$T/err"
expect_status 1 $? "cat --salvage"
expect_eq 900 "$(wc -l <"$T/s.jsonl")" "salvaged records"
expect_grep "skipped 1 damaged frames" "$T/err"

# Not a trace, a future version, usage errors.
printf 'TIMESTAMP,ContextTokens\n' >"$T/x.csv"
"$LOADTRACE" cat "$T/x.csv" >/dev/null 2>"$T/err"
expect_status 1 $? "cat csv"
expect_grep "not a loadtrace file" "$T/err"
"$LOADTRACE" cat "$C/v4.lt.zst" >/dev/null 2>"$T/err"
expect_status 1 $? "cat v4 (a version newer than this reader)"
expect_grep "upgrade loadtrace" "$T/err"
"$LOADTRACE" cat >/dev/null 2>&1
expect_status 2 $? "cat without a file"
"$LOADTRACE" cat --bogus x >/dev/null 2>&1
expect_status 2 $? "cat --bogus"
"$LOADTRACE" cat --help | grep -q salvage
expect_status 0 $? "cat --help"
finish

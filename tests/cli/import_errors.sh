#!/bin/sh
# Bad input: every error names the file, the line and what was wrong, the
# exit status is non-zero and no output file is left behind; --skip-bad
# skips, reports and counts instead.
set -eu
: "${LOADTRACE:?}" "${LT_SAMPLES:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# expect_error NAME FORMAT INPUT 'expected stderr text' [options...]
expect_error() {
    name=$1 fmt=$2 in=$3 want=$4
    shift 4
    rm -f out.lt.zst
    if "$LOADTRACE" import --from "$fmt" "$@" "$in" -o out.lt.zst 2>err.txt; then
        fail "$name: exit status 0"
        return
    fi
    if grep -qF -- "$want" err.txt; then
        echo "ok   $name: $(head -1 err.txt)"
    else
        fail "$name: expected \"$want\" on stderr, got: $(cat err.txt)"
    fi
    [ ! -e out.lt.zst ] || fail "$name: a partial out.lt.zst was left behind"
}

hdr=TIMESTAMP,ContextTokens,GeneratedTokens
printf '%s\r\n' 'TIMESTAMP,ContextTokens' '2023-11-16 18:17:03.9799600,4808' >nocol.csv
expect_error "missing column" azure nocol.csv \
    'nocol.csv:1: no column "GeneratedTokens" in the header line (it has "TIMESTAMP", "ContextTokens")'

printf '%s\r\n' "$hdr" '2023-11-16 18:17:03.9799600,4808,10' '2023-11-16 18:17:04.0319600,31x0,8' >badnum.csv
expect_error "bad number" azure badnum.csv \
    'badnum.csv:3: column "ContextTokens": "31x0" is not a token count'

printf '%s\r\n' "$hdr" '2023-11-16 18:17:03.9799600,4808,-1' >neg.csv
expect_error "negative number" azure neg.csv 'neg.csv:2: column "GeneratedTokens": "-1" is not a token count'

printf '%s\r\n' "$hdr" '2023-11-16 18:17:03.9799600,4808,99999999999' >big.csv
expect_error "number too large" azure big.csv 'big.csv:2: column "GeneratedTokens": "99999999999" is not a token count'

printf '%s\r\n' "$hdr" '2023-11-16 18:17:03.9799600,4808,10' '2023-11-31T25:17:04,3180,8' >badts.csv
expect_error "bad timestamp" azure badts.csv \
    'badts.csv:3: column "TIMESTAMP": "2023-11-31T25:17:04" is not a date and time'

printf '%s\r\n' "$hdr" '2023-11-16 18:17:03.9799600,4808,10' >trunc.csv
printf '2023-11-16 18:17:04.03' >>trunc.csv
expect_error "truncated last line" azure trunc.csv 'trunc.csv:3: 1 field, but the header line has 3'

printf '%s\n' 'Timestamp,Model,Request tokens,Response tokens' '5,ChatGPT,472,18' '4,ChatGPT,1087,230' >unsorted.csv
expect_error "unsorted" burstgpt unsorted.csv \
    'unsorted.csv:3: out of time order: this record arrives 1.000000 s before the one on line 2'
"$LOADTRACE" import -q --from burstgpt --sort unsorted.csv -o out.lt.zst && echo "ok   unsorted with --sort" || fail "--sort"

printf '%s\n' 'Timestamp,Model,Request tokens,Response tokens' '5,"Chat"GPT,472,18' >quote.csv
expect_error "quote inside a field" burstgpt quote.csv 'quote.csv:2: field 2 has text after the closing quote'
printf '%s\n' 'Timestamp,Model,Request tokens,Response tokens' '5,"ChatGPT,472,18' '6,x,1,1' >openq.csv
expect_error "quote never closed" burstgpt openq.csv 'openq.csv:2: field 2: quoted field never ends'
printf 'Timestamp,Model,Request tokens,Response tokens\n5,x,1,1\n6,x\000,1,1\n' >nul.csv
expect_error "NUL byte" burstgpt nul.csv 'nul.csv:3: field 2 contains a NUL byte'
printf '%s\n' 'Timestamp,Model,Request tokens,Response tokens' '5.5.5,x,1,1' >badsec.csv
expect_error "bad seconds" burstgpt badsec.csv 'badsec.csv:2: column "Timestamp": "5.5.5" is not a time in seconds'
printf '%s\n' 'Timestamp,Model,Request tokens,Timestamp' >dup.csv
expect_error "duplicate column" burstgpt dup.csv 'dup.csv:1: column "Timestamp" appears twice'
: >empty.csv
expect_error "empty file" azure empty.csv 'empty.csv: empty input: no header line'
expect_error "missing file" azure no-such-file.csv 'no-such-file.csv: cannot open: No such file or directory'

# JSON lines
head -c 200 "$LT_SAMPLES/mooncake_synthetic_trace.jsonl" >mc_trunc.jsonl
expect_error "truncated JSON line" mooncake mc_trunc.jsonl 'mc_trunc.jsonl:1: not valid JSON: '
printf '%s\n' '{"timestamp": 0, "input_length": 1, "output_length": 1}' 'hello' >mc_bad.jsonl
expect_error "non-JSON line (mooncake)" mooncake mc_bad.jsonl "mc_bad.jsonl:2: not valid JSON: '[' or '{' expected near 'hello'"
printf '%s\n' '{"timestamp": 0, "input_length": "1", "output_length": 1}' >mc_str.jsonl
expect_error "string for a number" mooncake mc_str.jsonl 'mc_str.jsonl:1: key "input_length": must be a whole number'
printf '%s\n' '{"timestamp": 10, "input_length": 1, "output_length": 1}' '{"timestamp": 5, "input_length": 1, "output_length": 1}' >mc_uns.jsonl
expect_error "unsorted (mooncake)" mooncake mc_uns.jsonl 'mc_uns.jsonl:2: out of time order: this record arrives 0.005000 s before the one on line 1'
printf '%s\n' '{"input_length": 1, "output_length": 1}' >mc_nots.jsonl
expect_error "no timestamp" mooncake mc_nots.jsonl 'mc_nots.jsonl:1: no "timestamp"'
printf '%s\n' '{"t":0,"in":1}' '{"t":1,"in":1,"in":2}' >dupkey.jsonl
expect_error "duplicate key" jsonl dupkey.jsonl "dupkey.jsonl:2: not valid JSON: duplicate object key"
printf '%s\n' '{"t":0,"in":1}' 'not json at all' >jl_bad.jsonl
expect_error "non-JSON line (jsonl)" jsonl jl_bad.jsonl 'jl_bad.jsonl:2: not valid JSON'
printf '%s\n' '{"t":0}' '[1,2]' >jl_arr.jsonl
expect_error "not an object" jsonl jl_arr.jsonl 'jl_arr.jsonl:2: not a JSON object'
printf '%s\n' '{"in":3}' >jl_not.jsonl
expect_error "no t" jsonl jl_not.jsonl 'jl_not.jsonl:1: no "t" (arrival, microseconds)'
printf '%s\n' '{"t":-1}' >jl_neg.jsonl
expect_error "negative t" jsonl jl_neg.jsonl 'jl_neg.jsonl:1: key "t": must not be negative'
printf '%s\n' '{"t":5}' '{"t":4}' >jl_uns.jsonl
expect_error "unsorted (jsonl)" jsonl jl_uns.jsonl 'jl_uns.jsonl:2: out of time order'
printf '%s\n' '{"t":0,"msgs":[["a-role-name-too-long",1]]}' >jl_role.jsonl
expect_error "role too long" jsonl jl_role.jsonl 'jl_role.jsonl:1: key "msgs": element 0: a role is at most 15 bytes'
printf '%s\n' '{"t":0,"orig":{"status":200,"tpot":3}}' >jl_orig.jsonl
expect_error "unknown key in orig" jsonl jl_orig.jsonl 'jl_orig.jsonl:1: key "orig": unknown key "tpot"'
printf '%s\n' '{"t":0,"in":4294967296}' >jl_u32.jsonl
expect_error "in too large" jsonl jl_u32.jsonl 'jl_u32.jsonl:1: key "in": must be a whole number from 0 to 4294967295'
printf '%s\n' '{"t":0,"blocks":[18446744073709551616]}' >jl_u64.jsonl
expect_error "block above 2^64" jsonl jl_u64.jsonl 'jl_u64.jsonl:1: not valid JSON: too big integer'
printf '%s\n' '{"format":"loadtrace","version":1,"kind":"results","created":"","source":""}' >jl_res.jsonl
expect_error "results file" jsonl jl_res.jsonl 'jl_res.jsonl:1: this is a results file; import takes traces only'
printf '%s\n' '{"format":"loadtrace","version":9,"kind":"trace"}' >jl_ver.jsonl
expect_error "newer version" jsonl jl_ver.jsonl 'jl_ver.jsonl:1: written with trace format version 9'
printf '%s\n' '{"format":"loadtrace","version":1,"kind":"trace"}' '{"t":0}' '{"format":"loadtrace","version":1,"kind":"trace"}' >jl_two.jsonl
expect_error "second header" jsonl jl_two.jsonl 'jl_two.jsonl:3: a second header line'

cp badnum.csv same.csv
if "$LOADTRACE" import --from azure same.csv -o same.csv 2>err.txt; then fail "output over input accepted"; else
    grep -q 'same.csv: the output is the input file' err.txt && cmp -s same.csv badnum.csv &&
        echo "ok   $(cat err.txt)" || fail "output over input: $(cat err.txt)"
fi

# -o -: standard output cannot be removed, so it keeps a readable trace of
# the rows before the bad one, and the message says so (not "nothing
# written"). 50 good rows, then a bad one.
awk 'BEGIN { print "TIMESTAMP,ContextTokens,GeneratedTokens";
             for (i = 0; i < 50; i++) printf "2023-01-01 00:%02d:%02d,5,5\n", i / 60, i % 60;
             print "2023-01-01 00:01:00,x,5" }' >part.csv
if "$LOADTRACE" import --from azure part.csv -o - >part.lt.zst 2>err.txt; then fail "-o - with a bad row: exit 0"; fi
grep -q 'standard output has the 50 records read before the error' err.txt || fail "-o - message: $(cat err.txt)"
grep -q 'nothing written' err.txt && fail "-o - says nothing written: $(cat err.txt)"
[ "$("$LOADTRACE" cat part.lt.zst 2>/dev/null | grep -c '"t":')" = 50 ] || fail "-o -: the 50 rows are not readable"

# --skip-bad: each skip on stderr, counted in the summary, the rest kept.
printf '%s\r\n' "$hdr" '2023-11-16 18:17:03.9799600,4808,10' 'garbage,1,2' '2023-11-16 18:17:04.0319600,3180,8' \
    '2023-11-16 18:17:05,1,x' '2023-11-16 18:17:06,1' '2023-11-16 18:17:07,5,6' >skip.csv
if "$LOADTRACE" import --from azure --skip-bad skip.csv -o out.lt.zst 2>err.txt; then
    n=$(grep -c '^loadtrace import: skipped: skip.csv:[0-9]*: ' err.txt || true)
    [ "$n" = 3 ] && echo "ok   --skip-bad reports each of 3 skips" || fail "--skip-bad reported $n skips: $(cat err.txt)"
    grep -q '3 records written to out.lt.zst, 0 marked failed, 3 bad rows skipped' err.txt &&
        echo "ok   --skip-bad summary counts" || fail "--skip-bad summary: $(cat err.txt)"
    grep -q 'skip.csv:3: column "TIMESTAMP": "garbage"' err.txt || fail "--skip-bad: line 3 not named"
    [ "$("$LOADTRACE" cat --no-header out.lt.zst | wc -l)" -eq 3 ] || fail "--skip-bad kept the wrong rows"
else
    fail "--skip-bad exited non-zero: $(cat err.txt)"
fi
# ... but not what is no row's fault
expect_error "--skip-bad does not skip disorder" burstgpt unsorted.csv 'out of time order' --skip-bad

# usage errors exit 2
"$LOADTRACE" import --from nosuch x -o y 2>err.txt && fail "bad --from accepted" || [ $? -eq 2 ] || fail "bad --from: status not 2"
"$LOADTRACE" import --from azure x 2>err.txt && fail "missing -o accepted" || [ $? -eq 2 ] || fail "missing -o: status not 2"

# an input that cannot be opened, or is the output, was not read: no count
# of records "read" is claimed
"$LOADTRACE" import --from azure nosuch.csv -o out.lt.zst 2>err.txt && fail "a missing input was accepted"
grep -q 'nosuch.csv: cannot open' err.txt && ! grep -q 'records had been read' err.txt &&
    echo "ok   a missing input: $(cat err.txt)" || fail "a missing input: $(cat err.txt)"
cp badnum.csv same2.csv
"$LOADTRACE" import --from azure same2.csv -o same2.csv 2>err.txt && fail "the input as the output was accepted"
! grep -q 'records had been read' err.txt && echo "ok   the input as the output: nothing claimed read" ||
    fail "the input as the output: $(cat err.txt)"

# --map syntax errors are usage errors (exit 2) that say what is wrong,
# before the file is read, not a column the file lacks
printf 'a,b,ts\n1,2,3\n' >m.csv
map_usage() { # NAME MAP 'expected stderr text'
    rm -f out.lt.zst
    st=0
    "$LOADTRACE" import --from csv --map "$2" m.csv -o out.lt.zst 2>err.txt || st=$?
    if [ "$st" -eq 2 ] && grep -qF -- "$3" err.txt; then
        echo "ok   $1: $(head -1 err.txt)"
    else
        fail "$1: exit $st, expected 2 and \"$3\", got: $(cat err.txt)"
    fi
    [ ! -e out.lt.zst ] || fail "$1: an out.lt.zst was written"
}
map_usage "--map with a quote not closed" 'in="a,out=b' '--map: the quote before a,out=b is not closed'
map_usage "--map with a quote not closed, last" 't=ts:s,in="a' '--map: the quote before a is not closed'
map_usage "--map with two units" 't=ts:s:ms' "--map: a name holding ':' or '='"
map_usage "--map with two '=' in one item" 't=ts:s,in=a=b' '"a=b"'
# (a name that holds ':' is quoted, and then it is a name)
printf '"t:s",b\n1,2\n' >colon.csv
"$LOADTRACE" import -q --from csv --map 't="t:s":s,in=b' colon.csv -o out.lt.zst &&
    echo "ok   a quoted name with ':' is a name" || fail "a quoted name with ':' was refused"

# a CSV whose lines end with CR alone is refused as such, not read as one
# line of columns "b110", "5211", ...
printf 'ts,b1\r10,52\r11,53\r' >cr.csv
expect_error "CR-only line ends" csv cr.csv \
    'cr.csv:1: a carriage return (CR) alone ends a line here: a file whose lines end with CR alone (classic Mac OS) is not read' \
    --map 't=ts:s,in=b1'
printf '%s\r' "$hdr" '2023-11-16 18:17:03.9799600,4808,10' >cr-azure.csv
expect_error "CR-only line ends (azure)" azure cr-azure.csv 'cr-azure.csv:1: a carriage return (CR) alone'
# CRLF, a CRLF file whose last CR lost its LF, and a CR inside quotes are fine
printf 'ts,b1\r\n10,52\r\n11,53\r' >crlf.csv
"$LOADTRACE" import -q --from csv --map 't=ts:s,in=b1' crlf.csv -o out.lt.zst &&
    [ "$("$LOADTRACE" cat --no-header out.lt.zst | tail -1)" = '{"t":1000000,"in":53}' ] &&
    echo "ok   CRLF, the last CR without its LF" || fail "CRLF file: $(cat err.txt)"
printf 'ts,b1,note\n10,52,"one\rtwo"\n' >crq.csv
"$LOADTRACE" import -q --from csv --map 't=ts:s,in=b1' crq.csv -o out.lt.zst &&
    "$LOADTRACE" cat --no-header out.lt.zst | grep -qF '"note":"one\rtwo"' &&
    echo "ok   a CR inside a quoted field is kept" || fail "a quoted CR: $("$LOADTRACE" cat --no-header out.lt.zst)"

[ "$fails" -eq 0 ] || { echo "$fails checks failed" >&2; exit 1; }
echo "all bad-input checks passed"

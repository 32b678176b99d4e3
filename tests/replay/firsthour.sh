#!/bin/sh
# What a new user met in the first hour and should not: a missing input
# that claimed records had been read; a per-minute rate of a trace shorter
# than a minute; a compare report whose verdict hid in a text block; a
# fitted profile whose header counted more steps used than it had.
. "$LT_SRC/tests/cli/lib.sh"
. "$LT_SRC/tests/replay/simlib.sh"
L=$LOADTRACE
cd "$T" || exit 1

# --- a missing input: the error, and no count of records never read
"$L" import --from azure nosuch.csv -o a.lt.zst 2>err.txt
expect_status 1 $? "import of a missing file"
expect_grep "nosuch.csv: cannot open: No such file or directory" err.txt
expect_no_grep "records had been read" err.txt
[ -e a.lt.zst ] && fail "an output was left behind"

# --- info of a 29.6 s trace: no per-minute rate it never had
awk 'BEGIN { for (i = 0; i < 149; i++) printf "{\"t\":%d,\"in\":10,\"out\":2}\n", i * 200000 }' >short.jsonl
"$L" import --from jsonl short.jsonl -o short.lt.zst -q || fail "import short"
expect_eq 29.6 "$("$L" cat --no-header short.lt.zst | jq -s '(.[-1].t - .[0].t) / 1e6')" "the span"
"$L" info short.lt.zst >info.txt || fail "info short"
expect_grep "^peak .* req in one second (at [0-9]* s); no peak minute: the trace spans 29.6 s" info.txt
expect_no_grep "in one minute" info.txt

# --- two results compared, and a profile fitted to them
"$L" synth --arrivals constant --rate 5 --requests 30 --in fixed:200 --out fixed:20 -q -o t.lt.zst ||
    fail "synth"
start_sim fit --time-scale 10
for s in 1 2; do
    "$L" replay t.lt.zst --target "$SIM_URL" --speed $s -o r$s.lt.zst -q --no-summary ||
        fail "replay at speed $s"
done
stop_sim
"$L" compare r1.lt.zst r2.lt.zst >cmp.txt || fail "compare"
"$L" compare r1.lt.zst r2.lt.zst --html cmp.html >/dev/null || fail "compare --html"
want=$(sed -n 's/^verdict: //p' cmp.txt)
[ -n "$want" ] || fail "no verdict in the text: $(cat cmp.txt)"
got=$(sed -n 's/^<p class=verdict id=verdict>\(.*\)<\/p>$/\1/p' cmp.html | sed 's/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g')
expect_eq "$want" "$got" "the HTML's headline is the verdict"
pre=$(grep -n "<pre id=summary>" cmp.html | cut -d: -f1)
head=$(grep -n "class=verdict" cmp.html | cut -d: -f1)
[ -n "$head" ] && [ "$head" -lt "$pre" ] || fail "the verdict is not above the text block"
"$L" sim --fit r1.lt.zst r2.lt.zst --time-scale 10 -o fit.profile >fit.txt 2>&1 || fail "sim --fit: $(cat fit.txt)"
hdr=$(grep -m1 "fitted by loadtrace sim --fit" fit.profile)
echo "$hdr" | grep -q "from 60 requests in 2 runs ([0-9]* batch steps; the regression's requests span [0-9]* decode steps" ||
    fail "the fitted profile's header: $hdr"
echo "$hdr" | grep -q "steps used" && fail "the header still says 'N of M steps used': $hdr"
finish

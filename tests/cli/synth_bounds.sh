#!/bin/sh
# synth and synth --servegen on hostile input: absurd rates are refused
# (the trace's clock counts microseconds), arrival time moves, --requests
# and --duration are honoured, a ServeGen folder's files are capped and
# must be regular files (a FIFO must not block), and out-of-range lengths,
# degenerate gap shapes, unknown families and absurd chunk names are
# refused naming the file and the value. Every run is bounded in time and
# memory, so that a regression fails instead of filling the machine.
set -eu
: "${LOADTRACE:?}" "${LT_TMP:?}"
mkdir -p "$LT_TMP"
cd "$LT_TMP"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# bounded CMD...: at most 60 s, 1 GB of address space and files of 200 MB
# AddressSanitizer reserves terabytes of address space for its shadow, so
# an ASan build is bounded by time and file size only.
VLIMIT="ulimit -v 1000000"
ldd "$LOADTRACE" 2>/dev/null | grep -q libasan && VLIMIT=:
bounded() { ($VLIMIT 2>/dev/null || true; ulimit -f 400000 2>/dev/null || true; exec timeout 60 "$@"); }
# refuse NAME PATTERN CMD...: CMD must exit 2 with PATTERN on stderr
refuse() {
    name=$1 pat=$2
    shift 2
    st=0
    bounded "$@" >/dev/null 2>err.txt || st=$?
    if [ "$st" -eq 2 ] && grep -q -- "$pat" err.txt; then
        echo "ok   $name: $(head -1 err.txt)"
    else
        fail "$name: exit $st, want 2 and '$pat': $(head -3 err.txt)"
    fi
}
records() { "$LOADTRACE" cat "$1" | awk 'NR > 1' | wc -l | tr -d ' '; }
last_t() { "$LOADTRACE" cat "$1" | tail -1 | sed 's/^{"t":\([0-9]*\),.*/\1/'; }

# ---- synth: rates
refuse "synth --rate 1e308 --duration 600" "a rate of 1e+308 req/s is more than a trace holds" \
    "$LOADTRACE" synth --rate 1e308 --duration 600 --in fixed:1 --out fixed:1 -o x.lt.zst
refuse "synth --rate 1e308 --requests 10" "more than a trace holds" \
    "$LOADTRACE" synth --rate 1e308 --requests 10 --in fixed:1 --out fixed:1 -o x.lt.zst
refuse "synth --shape ramp:0,1e300" "a rate of 1e+300 req/s" \
    "$LOADTRACE" synth --shape ramp:0,1e300 --duration 10 --in fixed:1 --out fixed:1 -o x.lt.zst
refuse "synth --shape diurnal at a peak above the bound" "a rate of 1.5e+06 req/s" \
    "$LOADTRACE" synth --rate 1e6 --shape diurnal:1h,0.5 --duration 10 --in fixed:1 --out fixed:1 -o x.lt.zst
# the highest rate allowed: time moves, --duration and --requests hold
bounded "$LOADTRACE" synth -q --rate 1e6 --duration 0.2s --in fixed:1 --out fixed:1 -o fast.lt.zst
n=$(records fast.lt.zst)
awk -v n="$n" 'BEGIN { exit !(n > 198000 && n < 202000) }' && echo "ok   1e6 req/s for 0.2 s: $n records" ||
    fail "1e6 req/s for 0.2 s: $n records, want 200000 +- 1 %"
t=$(last_t fast.lt.zst)
awk -v t="$t" 'BEGIN { exit !(t >= 199000 && t <= 200000) }' && echo "ok   1e6 req/s: the last arrival at $t us" ||
    fail "1e6 req/s: the last arrival at $t us, want 199000..200000"
bounded "$LOADTRACE" synth -q --rate 1e6 --requests 5000 --in fixed:1 --out fixed:1 -o fastn.lt.zst
n=$(records fastn.lt.zst)
t=$(last_t fastn.lt.zst)
[ "$n" = 5000 ] && awk -v t="$t" 'BEGIN { exit !(t > 4000 && t < 6000) }' &&
    echo "ok   --requests 5000 at 1e6 req/s: $n records, the last at $t us" ||
    fail "--requests 5000 at 1e6 req/s: $n records, the last at $t us"

# ---- a ServeGen folder
mkfolder() { # DIR: two clients, valid
    rm -rf "$1" && mkdir -p "$1"
    printf '%s\n' '0,2,1,Gamma,1,0.5' '600,1,1,Weibull,1.2,1' >"$1/chunk-0-trace.csv"
    printf '%s\n' '0,1,1,,0,0' '600,0,0,,0,0' >"$1/chunk-1-trace.csv"
    echo '{"0": {"input_tokens": "{100: 0.5, 200: 0.5}", "output_tokens": "{10: 1.0}", "reason_ratio": "{0.5: 1.0}"}}' >"$1/chunk-0-dataset.json"
    echo '{"0": {"input_tokens": "{7: 1.0}", "output_tokens": "{3: 1.0}"}}' >"$1/chunk-1-dataset.json"
}
mkfolder sg
bounded "$LOADTRACE" synth -q --servegen sg --window 0 --duration 1200 -o sg.lt.zst
echo "ok   a valid folder: $(records sg.lt.zst) records"

# rates: a row of 1e308, and --rate 1e308 on a valid folder
mkfolder bad && sed -i '2s/.*/600,1e308,1,Gamma,1,1/' bad/chunk-0-trace.csv
refuse "servegen: a row rate of 1e308" "chunk-0-trace.csv:2: a rate of 1e+308 req/s" \
    "$LOADTRACE" synth --servegen bad --window 0 --duration 1200 --requests 10 -o x.lt.zst
refuse "servegen --rate 1e308" "--rate 1e+308 scales chunk-0's window at 0 s" \
    "$LOADTRACE" synth --servegen sg --window 0 --duration 1200 --rate 1e308 -o x.lt.zst
# --requests is honoured, and memory stays bounded: 1e5 req/s for 600 s
# would be 6e7 arrivals, held in memory 1 GB; drawn as written, nothing
mkfolder big && sed -i '1s/.*/0,100000,1,,0,0/' big/chunk-0-trace.csv
st=0; bounded "$LOADTRACE" synth -q --servegen big --window 0 --duration 600 --requests 3000 -o big.lt.zst || st=$?
[ "$st" -eq 0 ] || fail "servegen --requests 3000 at 1e5 req/s: exit $st"
n=$(records big.lt.zst 2>/dev/null || echo none)
t=$(last_t big.lt.zst 2>/dev/null || true)
[ "$n" = 3000 ] && awk -v t="${t:-0}" 'BEGIN { exit !(t > 20000 && t < 40000) }' &&
    echo "ok   servegen --requests 3000 at 1e5 req/s: $n records, the last at $t us" ||
    fail "servegen --requests 3000 at 1e5 req/s: $n records, the last at $t us (want 3000, 30 ms)"
bounded "$LOADTRACE" synth -q --servegen sg --window 0 --duration 300 -o short.lt.zst
t=$(last_t short.lt.zst)
[ "$t" -lt 300000000 ] && echo "ok   servegen --duration 300: the last arrival at $t us" ||
    fail "servegen --duration 300: an arrival at $t us"

# the files: a FIFO does not block, a file past the cap is refused unread
mkfolder fifo && rm fifo/chunk-1-dataset.json && mkfifo fifo/chunk-1-dataset.json
refuse "servegen: a FIFO as the dataset" "chunk-1-dataset.json: not a regular file" \
    "$LOADTRACE" synth --servegen fifo -o x.lt.zst
mkfolder huge && truncate -s 100M huge/chunk-1-dataset.json
refuse "servegen: a dataset of 100 MB" "chunk-1-dataset.json: 104857600 bytes, more than the 64 MiB" \
    "$LOADTRACE" synth --servegen huge -o x.lt.zst
mkfolder dirds && rm dirds/chunk-0-dataset.json && mkdir dirds/chunk-0-dataset.json
refuse "servegen: a directory as the dataset" "chunk-0-dataset.json: not a regular file" \
    "$LOADTRACE" synth --servegen dirds -o x.lt.zst

# values: lengths, ratios, shapes, families, chunk names
mkfolder v && sed -i 's/{100: 0.5, 200: 0.5}/{1e30: 1}/' v/chunk-0-dataset.json
refuse "servegen: an input length of 1e30" "chunk-0-dataset.json: window 0: input_tokens: the value 1e30 is not a length" \
    "$LOADTRACE" synth --servegen v -o x.lt.zst
mkfolder v && sed -i 's/"{3: 1.0}"/"{-5: 1}"/' v/chunk-1-dataset.json
refuse "servegen: an output length of -5" "chunk-1-dataset.json: window 0: output_tokens: the value -5 is not a length" \
    "$LOADTRACE" synth --servegen v -o x.lt.zst
mkfolder v && sed -i 's/{100: 0.5, 200: 0.5}/{100.5: 1}/' v/chunk-0-dataset.json
refuse "servegen: a length of 100.5 tokens" "the value 100.5 is not a length" \
    "$LOADTRACE" synth --servegen v -o x.lt.zst
mkfolder v && sed -i 's/{0.5: 1.0}/{1.5: 1.0}/' v/chunk-0-dataset.json
refuse "servegen: a reason_ratio of 1.5" "reason_ratio: the value 1.5 is not a share from 0 to 1" \
    "$LOADTRACE" synth --servegen v -o x.lt.zst
mkfolder v && sed -i '2s/.*/600,1,1,Weibull,1e-300,1/' v/chunk-0-trace.csv
refuse "servegen: a Weibull shape of 1e-300" "chunk-0-trace.csv:2: a Weibull shape of 1e-300 draws no usable gaps" \
    "$LOADTRACE" synth --servegen v --window 0 --duration 1200 -o x.lt.zst
mkfolder v && sed -i '1s/.*/0,2,1,Gamma,0,1/' v/chunk-0-trace.csv
refuse "servegen: a Gamma shape of 0" "chunk-0-trace.csv:1: a Gamma shape of 0 draws no usable gaps" \
    "$LOADTRACE" synth --servegen v -o x.lt.zst
mkfolder v && sed -i '1s/.*/0,2,1,Pareto,1.5,1/' v/chunk-0-trace.csv
refuse "servegen: a family Pareto" 'chunk-0-trace.csv:1: the family "Pareto" is not one ServeGen fits' \
    "$LOADTRACE" synth --servegen v -o x.lt.zst
mkfolder v && mv v/chunk-1-trace.csv v/chunk-99999999999999999999-trace.csv
refuse "servegen: chunk-99999999999999999999" "chunk-99999999999999999999-trace.csv: the chunk number 99999999999999999999 is out of range" \
    "$LOADTRACE" synth --servegen v -o x.lt.zst

[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }

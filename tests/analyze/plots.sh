#!/bin/sh
# Every gnuplot template in plots/ is rendered by the real gnuplot, through
# analyze (a sweep) and compare (two traces, two results files), to PNG and
# SVG, with nothing on gnuplot's stderr (a warning fails the command, which
# checks it). Numbers are tested elsewhere; this is about the templates.
set -u
. "$LT_SRC/tests/cli/lib.sh"
: "${LT_GEN:?LT_GEN not set}"
LT=$LOADTRACE
command -v gnuplot >/dev/null || { echo "FAIL: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 1; }

"$LT_GEN" sweep "$T/sweep.lt.zst" && "$LT_GEN" trace "$T/a.lt.zst" 1 && "$LT_GEN" trace "$T/b.lt.zst" 2 &&
    "$LT_GEN" level 4 "$T/r1.lt.zst" 1 1.0 && "$LT_GEN" level 4 "$T/r2.lt.zst" 2 1.1 || fail "generate inputs"
"$LT" analyze --plots "$T/p" "$T/sweep.lt.zst" >/dev/null 2>"$T/err1"
expect_status 0 $? "analyze --plots"
"$LT_GEN" server "$T/server.lt.zst" || fail "generate the server input"
"$LT" analyze --plots "$T/p" "$T/server.lt.zst" >/dev/null 2>>"$T/err1"
expect_status 0 $? "analyze --plots with server metrics"
"$LT" compare --plots "$T/p" "$T/a.lt.zst" "$T/b.lt.zst" >/dev/null 2>"$T/err2"
expect_status 0 $? "compare traces --plots"
"$LT" compare --plots "$T/p" "$T/r1.lt.zst" "$T/r2.lt.zst" >/dev/null 2>"$T/err3"
expect_status 0 $? "compare results --plots"
# a capacity search (replay --find-max, in virtual time: no server)
"$LT" synth --arrivals poisson --rate 2 --requests 80 --in fixed:200 --out fixed:100 -q \
    -o "$T/cap-t.lt.zst" &&
    "$LT" replay "$T/cap-t.lt.zst" --target sim --virtual --find-max rate --slo ttft=1s -q \
        -o "$T/cap.lt.zst" >/dev/null || fail "capacity search"
"$LT" analyze --plots "$T/p" "$T/cap.lt.zst" >/dev/null 2>"$T/err4"
expect_status 0 $? "analyze --plots of a capacity search"
# levels close together (the Azure trace's capacity search, probes 3 %
# apart): the Pareto chart's level labels never overprint one another in
# the SVG the HTML embeds (each label's box: 0.6 em a character, 1 em high,
# centred on its anchor), and the lowest level keeps its label
"$LT" import --from azure "$LT_SAMPLES/AzureLLMInferenceTrace_code.csv" -o "$T/az.lt.zst" -q &&
    "$LT" replay "$T/az.lt.zst" --target sim --virtual --find-max rate --slo ttft=2s,tpot=100ms -q \
        -o "$T/azcap.lt.zst" >/dev/null || fail "the Azure capacity search"
"$LT" analyze --plots "$T/pz" "$T/azcap.lt.zst" >/dev/null 2>>"$T/err4"
expect_status 0 $? "analyze --plots of the Azure capacity search"
awk 'NR == FNR { if ($1 !~ /^#/) lev[$1] = 1; next }
     /<g transform="translate\(/ { split($0, a, /[(),]/); x = a[2]; y = a[3]; fs = 12
         if (match($0, /font-size="[0-9.]+"/)) fs = substr($0, RSTART + 11, RLENGTH - 12) + 0; next }
     /<text>/ { t = $0; gsub(/.*<text>|<\/text>.*/, "", t)
         if (t in lev) { n++; X[n] = x; Y[n] = y; W[n] = 0.6 * fs * length(t); H[n] = fs; L[n] = t } }
     END { for (i = 1; i <= n; i++) for (k = i + 1; k <= n; k++)
             if ((X[i] - X[k])^2 < ((W[i] + W[k]) / 2)^2 && (Y[i] - Y[k])^2 < ((H[i] + H[k]) / 2)^2) {
                 print "labels " L[i] " and " L[k] " overprint"; bad = 1 }
           if (n < 2) { print "fewer than two level labels: " n; bad = 1 }
           exit bad }' "$T/pz/pareto.dat" "$T/pz/pareto.svg" >"$T/labels.txt" ||
    fail "Pareto labels: $(cat "$T/labels.txt")"
# a virtual-only search: the capacity chart's key names no live series
grep -q ">virtual<" "$T/pz/capacity.svg" || fail "the capacity chart's key lacks virtual"
if grep -q ">live<" "$T/pz/capacity.svg"; then fail "the capacity chart's key names a live series it has not"; fi
low=$(awk '$1 !~ /^#/ { print $1; exit }' "$T/pz/pareto.dat")
grep -q "<text>$low</text>" "$T/pz/pareto.svg" || fail "the lowest level ($low) has no label"
# a sweep of candidate configs (its Pareto chart): two sims the sweep
# starts, a short closed loop each, and a virtual config beside them
cat >"$T/sweep.yaml" <<PLAN
trace: cap-t.lt.zst
load: {concurrency: 2, requests: 8}
configs:
  - name: sim
    command: "{loadtrace} sim --listen 127.0.0.1:{port} --time-scale 50 --max-running {mr}"
    grid: {mr: [1, 4]}
  - name: twin
    virtual: {time-scale: 50}
PLAN
"$LT" sweep "$T/sweep.yaml" -o "$T/sw" -q >/dev/null 2>"$T/err5"
expect_status 0 $? "sweep"
cp "$T"/sw/charts/sweep_pareto.* "$T/p/" || fail "the sweep drew no chart"
cat "$T/err1" "$T/err2" "$T/err3" "$T/err4" "$T/err5" >"$T/err"
[ -s "$T/err" ] && fail "stderr: $(cat "$T/err")"

for tpl in "$LT_SRC"/plots/*.gp; do
    name=$(basename "$tpl")
    used=$(grep -l "from the template plots/$name;" "$T"/p/*.gp | wc -l | tr -d ' ')
    [ "$used" -gt 0 ] || fail "template $name was never rendered"
done
for gp in "$T"/p/*.gp; do
    c=${gp%.gp}
    [ -s "$c.png" ] && [ -s "$c.svg" ] && [ -s "$c.dat" ] || fail "$(basename "$c"): missing PNG, SVG or data"
done
# The scripts rerun by hand, from their directory, without a warning.
for s in pareto.gp timeseries_run0.gp compare_in_qq.gp sweep_pareto.gp; do
    (cd "$T/p" && gnuplot "$s" 2>"$T/gperr") || fail "gnuplot $s by hand"
    [ -s "$T/gperr" ] && fail "gnuplot $s by hand warned: $(cat "$T/gperr")"
done
finish

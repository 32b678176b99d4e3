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

# A sweep's configs (loadtrace sweep): each point is one config, placed at
# its throughput (at its capacity, or under the fixed load) and its latency
# p99; lower and further right is better, and the configs no other beats on
# both are joined (the Pareto front). Measured and predicted configs are
# drawn apart: a prediction is never taken for a measurement.
# loadtrace sets above: data, out, chart_title, ylab; and has_pred (1 when
# the third block, the predicted configs, holds any).
# Columns of data: name, agg tok/s, latency p99 (ms), on the front (1/0).
# Block 0: measured configs; block 1: the front of the measured configs, by
# throughput; block 2: predicted configs (present only when has_pred: gnuplot
# does not count an empty block).
set style line 1 lc rgb "#0072B2" lw 2 dt 1 pt 7 ps 1.4
set style line 2 lc rgb "#D55E00" lw 2 dt 2 pt 6 ps 1.4
set style line 3 lc rgb "#000000" lw 1.5 dt 3 pt 0
set grid back lc rgb "#dddddd" lw 1 dt 1
set border lw 1.2
set key outside top center horizontal nobox noopaque samplen 2.5 spacing 1.1 width 1 Left reverse
set key title chart_title font ",13"
set xlabel "Aggregate throughput per replica (tokens/s)"
set ylabel ylab
set logscale y
set format y "%g"
if (exists("xmin")) { set xrange [xmin:xmax] }
if (exists("ymin")) { set yrange [ymin:ymax] }
if (exists("yticks")) { eval("set ytics ".yticks) }
do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 800,500 noenhanced font "Sans,13" dashed
    } else {
        set terminal svg size 480,350 noenhanced font "Sans,12" dashed background rgb "white"
    }
    set output out.".".fmt
    if (has_pred) {
        plot data index 1 using 2:3 with linespoints ls 3 title "Pareto front (measured)", \
             data index 0 using 2:3 with points ls 1 title "measured", \
             data index 0 using 2:3:1 with labels offset 0, 1.2 notitle, \
             data index 2 using 2:3 with points ls 2 title "predicted (virtual)", \
             data index 2 using 2:3:1 with labels offset 0, -1.2 notitle
    } else {
        plot data index 1 using 2:3 with linespoints ls 3 title "Pareto front", \
             data index 0 using 2:3 with points ls 1 title "measured", \
             data index 0 using 2:3:1 with labels offset 0, 1.2 notitle
    }
    unset output
}

# Latency percentiles over time within one run, per time bucket (by the time
# the request ended, or its first token for TTFT). Log scale: latency often
# spans decades when a server saturates.
# loadtrace analyze sets above: data, out, chart_title, bucket (s); points sit
# at the middle of their bucket.
# Columns of data: as in timeseries.gp (E2E p50, p99, TTFT p50, p99 in ms in 6..9).
# Line styles: colour-blind-safe colours, and each line also differs by
# dash pattern and point shape, so the chart stays readable in black and white.
set style line 1 lc rgb "#000000" lw 2 dt 1 pt 7 ps 1.1
set style line 2 lc rgb "#0072B2" lw 2 dt 2 pt 5 ps 1.1
set style line 3 lc rgb "#D55E00" lw 2 dt 3 pt 9 ps 1.1
set style line 4 lc rgb "#009E73" lw 2 dt 4 pt 11 ps 1.1
set style line 5 lc rgb "#CC79A7" lw 2 dt 5 pt 13 ps 1.1
set style line 6 lc rgb "#56B4E9" lw 2 dt (8,4,2,4) pt 4 ps 1.1
set style line 7 lc rgb "#E69F00" lw 2 dt (2,6) pt 6 ps 1.1
set style line 8 lc rgb "#666666" lw 2 dt (12,4) pt 8 ps 1.1
set style increment user
set grid back lc rgb "#dddddd" lw 1 dt 1
set border lw 1.2
set key box opaque samplen 3 spacing 1.1
set title chart_title
set xlabel "Time since the run's origin (s)"
set ylabel "Latency (ms, log scale)"
set logscale y
set key top left
set datafile missing "NaN"
# When every value on an axis is the same, loadtrace sets an explicit range
# (gnuplot would warn about an empty one).
if (exists("xmin")) { set xrange [xmin:xmax] }
if (exists("ymin")) { set yrange [ymin:ymax] }
if (exists("y2min")) { set y2range [y2min:y2max] }
do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 960,600 noenhanced font "Sans,11" dashed
    } else {
        set terminal svg size 960,600 noenhanced font "Sans,11" dashed background rgb "white"
    }
    set output out.".".fmt
    plot data using ($1 + bucket / 2):($6 > 0 ? $6 : NaN) with linespoints ls 1 title "E2E p50", \
         data using ($1 + bucket / 2):($7 > 0 ? $7 : NaN) with linespoints ls 2 title "E2E p99", \
         data using ($1 + bucket / 2):($8 > 0 ? $8 : NaN) with linespoints ls 3 title "TTFT p50", \
         data using ($1 + bucket / 2):($9 > 0 ? $9 : NaN) with linespoints ls 4 title "TTFT p99"
    unset output
}

# Latency against throughput (the Pareto view of a sweep): each point is one
# level (labelled); lower and further right is better.
# loadtrace analyze sets above: data, out, chart_title.
# Columns of data: level, agg tok/s, per-req decode, per-req e2e, TTFT p50,
# TTFT p99, TPOT p50, TPOT p99, E2E p50, E2E p99 (latencies in ms).
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
set xlabel "Aggregate throughput (tokens/s)"
set ylabel "Latency (ms, log scale)"
set logscale y
set xrange [0:*]
set key below
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
    plot data using 2:5 with linespoints ls 1 title "TTFT p50", \
         data using 2:6 with linespoints ls 2 title "TTFT p99", \
         data using 2:9 with linespoints ls 3 title "E2E p50", \
         data using 2:10 with linespoints ls 4 title "E2E p99", \
         data using 2:7 with linespoints ls 5 title "TPOT p50", \
         data using 2:9:(sprintf("%g", $1)) with labels offset 0, 1 font ",9" notitle
    unset output
}

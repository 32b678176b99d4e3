# Latency against throughput (the Pareto view of a sweep): each point is one
# level (labelled with its concurrency or rate above its E2E p99 point, where
# the label clears the others: column 11 says which); lower and further right
# is better.
# loadtrace analyze sets above: data, out, chart_title.
# Columns of data: level, agg tok/s, per-req decode, per-req e2e, TTFT p50,
# TTFT p99, TPOT p50, TPOT p99, E2E p50, E2E p99 (latencies in ms), label
# (1: print the level's label, 0: it would overprint one printed).
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
# The key sits above the plot, outside it and without a box: it never covers
# data or an axis label, and a browser's wider font cannot spill out of a box.
set key outside top center horizontal nobox noopaque samplen 2.5 spacing 1.1 width 1 Left reverse
# The chart's title heads the key, so the two never overlap.
set key title chart_title font ",13"
set xlabel "Aggregate throughput (tokens/s)"
set ylabel "Latency (ms, log scale)"
set logscale y
set format y "%g"
# loadtrace sets each axis' range from the data, with headroom, so that no
# line lies on the frame (and an axis where every value is the same is not
# empty, which gnuplot would warn about).
if (exists("xmin")) { set xrange [xmin:xmax] }
if (exists("ymin")) { set yrange [ymin:ymax] }
if (exists("y2min")) { set y2range [y2min:y2max] }
if (exists("xticks")) { eval("set xtics ".xticks) }
if (exists("yticks")) { eval("set ytics ".yticks) }
do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 800,500 noenhanced font "Sans,13" dashed
    } else {
        set terminal svg size 480,350 noenhanced font "Sans,12" dashed background rgb "white"
    }
    set output out.".".fmt
    plot data using 2:5 with linespoints ls 1 title "TTFT p50", \
         data using 2:6 with linespoints ls 2 title "TTFT p99", \
         data using 2:9 with linespoints ls 3 title "E2E p50", \
         data using 2:10 with linespoints ls 4 title "E2E p99", \
         data using 2:7 with linespoints ls 5 title "TPOT p50", \
         data using 2:8 with linespoints ls 6 title "TPOT p99", \
         data using 2:10:($11 > 0 ? sprintf("%g", $1) : "") with labels offset 0, 1.2 notitle
    unset output
}

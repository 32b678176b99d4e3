# Throughput against concurrency (or request rate): aggregate tokens/s on the
# left axis, per-request tokens/s (decode-only and end-to-end) on the right.
# loadtrace analyze sets above: data, out, chart_title, xlabel, xlog (1: log2
# x axis), knee (the knee's level, 0 = none).
# Columns of data: level, agg tok/s, per-req decode tok/s, per-req e2e tok/s, ...
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
set xlabel xlabel
set ylabel "Aggregate throughput (tokens/s)"
set y2label "Per-request throughput (tokens/s)"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
if (xlog) { set logscale x 2 }
if (knee > 0) {
    set arrow 1 from knee, graph 0 to knee, graph 1 nohead dt 3 lw 1.5 lc rgb "#777777"
    set label 1 "knee" at knee, graph 0.95 offset 0.6, 0
}
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
    plot data using 1:2 with linespoints ls 1 title "aggregate (left axis)", \
         data using 1:3 axes x1y2 with linespoints ls 2 title "per request, decode (right)", \
         data using 1:4 axes x1y2 with linespoints ls 3 title "per request, end to end (right)"
    unset output
}

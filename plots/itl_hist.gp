# Histogram of inter-token latency (gaps between token-bearing chunks), one
# outline per run, on log-spaced bins (20 per decade) so that bins are
# comparable across the range. Both axes are logarithmic: the x range fits
# the data (from its 0.5th percentile to its largest gap), and a log y keeps
# a stall tail of a few gaps in a thousand visible beside the main peak.
# loadtrace analyze sets above: data, out, chart_title, nsets, title1..titleN,
# and
# the ranges xmin..xmax, ymin..ymax, and yfloor: where empty bins are drawn
# (below ymin, on the frame: a log axis has no 0).
# data holds nsets blocks tracing each outline: bin edge (ms), fraction of gaps in the bin.
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
set xlabel "Inter-token latency (ms, log scale)"
set ylabel "Fraction of gaps (log scale)"
set logscale xy
set format y "%g"
# loadtrace sets each axis' range from the data, with headroom, so that no
# line lies on the frame (and an axis where every value is the same is not
# empty, which gnuplot would warn about).
if (exists("xmin")) { set xrange [xmin:xmax] }
if (exists("ymin")) { set yrange [ymin:ymax] }
if (exists("y2min")) { set y2range [y2min:y2max] }
if (exists("xticks")) { eval("set xtics ".xticks) }
if (exists("yticks")) { eval("set ytics ".yticks) }
# A set's title: title1, title2, ... (analyze), or the words of titles (compare).
set_title(i) = exists(sprintf("title%d", i)) ? value(sprintf("title%d", i)) : word(titles, i)
do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 800,500 noenhanced font "Sans,13" dashed
    } else {
        set terminal svg size 480,350 noenhanced font "Sans,12" dashed background rgb "white"
    }
    set output out.".".fmt
    plot for [i=1:nsets] data index (i-1) using 1:($2 > 0 ? $2 : yfloor) with lines ls i title set_title(i)
    unset output
}

# Histogram of inter-token latency (gaps between token-bearing chunks), one
# outline per run, on log-spaced bins (20 per decade) so that bins are
# comparable across the range.
# loadtrace analyze sets above: data, out, chart_title, nsets, titles.
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
set key box opaque samplen 3 spacing 1.1
set title chart_title
set xlabel "Inter-token latency (ms, log scale)"
set ylabel "Fraction of gaps"
set logscale x
set yrange [0:*]
set key top right
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
    plot for [i=1:nsets] data index (i-1) using 1:2 with lines ls i title word(titles, i)
    unset output
}

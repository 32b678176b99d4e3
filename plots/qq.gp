# Quantile-quantile plot of two samples: the p-th quantile of a (x) against
# the p-th quantile of b (y), for p = 1..99 %. Points on the diagonal mean the
# two distributions agree; above it, b is larger.
# loadtrace compare sets above: data, out, chart_title, xlabel (the measure),
# title_a, title_b, xlog (1: log axes).
# Columns of data: p (%), quantile of a, quantile of b.
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
set xlabel title_a." (".xlabel.")"
set ylabel title_b." (".xlabel.")"
set size ratio -1
if (xlog) { set logscale xy }
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
    plot data using 2:3 with points ls 2 title "quantiles, p = 1..99 %", \
         data using 2:2 with lines ls 8 title "y = x"
    unset output
}

# SLO attainment against load, from a capacity search (replay --find-max):
# each probe's share of requests meeting the SLO with its 95 % interval,
# live and virtual apart, the target as a horizontal line (in the key) and
# the maximum found as a vertical one.
# loadtrace analyze sets above: data, out, chart_title, xlabel, target (the
# share that must meet the SLO), found (the highest load meeting it, live
# if any; 0 = none).
# Columns of data: load, attainment, interval low, interval high, live (1)
# or virtual (0). has_live, has_virtual: which engines probed (the key names
# only those).
set style line 1 lc rgb "#000000" lw 2 dt 1 pt 7 ps 1.1
set style line 2 lc rgb "#0072B2" lw 2 dt 2 pt 5 ps 1.1
set style line 3 lc rgb "#D55E00" lw 1.5 dt 3
set grid back lc rgb "#dddddd" lw 1 dt 1
set border lw 1.2
set key outside top center horizontal nobox noopaque samplen 2.5 spacing 1.1 width 1 Left reverse
set key title chart_title font ",13"
set xlabel xlabel
set ylabel "Requests meeting the SLO (share)"
set yrange [0:1.05]
# the target is a curve of its own, named in the key: a label on the
# frame would sit on the lowest load's probe, which is always there
if (found > 0) {
    set arrow 2 from found, graph 0 to found, graph 1 nohead dt 3 lw 1.5 lc rgb "#777777"
    set label 2 "max" at found, graph 0.1 offset 0.6, 0
}
if (exists("xmin")) { set xrange [xmin:xmax] }
do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 800,500 noenhanced font "Sans,13" dashed
    } else {
        set terminal svg size 480,350 noenhanced font "Sans,12" dashed background rgb "white"
    }
    set output out.".".fmt
    plot data using 1:($5 == 1 ? $2 : NaN):3:4 with yerrorbars ls 1 \
             title (!exists("has_live") || has_live ? "live" : ""), \
         data using 1:($5 == 0 ? $2 : NaN):3:4 with yerrorbars ls 2 \
             title (!exists("has_virtual") || has_virtual ? "virtual" : ""), \
         target with lines ls 3 title sprintf("target %.3g", target)
    unset output
}

# One run, the client and the server on one time axis: stacked panels of
# output tokens/s, requests in flight (the client's average per bucket, the
# server's running and waiting per scrape), TTFT p99 per bucket, and the
# server's KV-cache usage. loadtrace analyze sets above: data, out,
# chart_title, xmin, xmax, and each panel's range from its data with
# headroom (tpsmin/tpsmax, reqmin/reqmax, ttftmin/ttftmax), so that no line
# lies on the top frame.
# data holds two blocks: index 0, the client's buckets (t_s tokens_per_s
# in_flight ttft_p99_ms; NaN: no first token in the bucket); index 1, the
# server's samples (t_s running waiting kv_usage; NaN: not on the page).
set style line 1 lc rgb "#000000" lw 2 dt 1 pt 7 ps 0.8
set style line 2 lc rgb "#0072B2" lw 2 dt 2 pt 5 ps 0.8
set style line 3 lc rgb "#D55E00" lw 2 dt 3 pt 9 ps 0.8
set style line 4 lc rgb "#009E73" lw 2 dt 4 pt 11 ps 0.8
set style increment user
set grid back lc rgb "#dddddd" lw 1 dt 1
set border lw 1.2
# Each panel's key sits above it, outside and without a box: it never
# covers data or an axis label (inside and opaque, it hid the lines under
# it), and a browser's wider font cannot spill out of a box.
set key outside top center horizontal nobox noopaque samplen 2.5 width 1 Left reverse
if (exists("xmin")) { set xrange [xmin:xmax] }
set lmargin 12
set rmargin 4
do for [fmt in "png svg"] {
    if (fmt eq "png") {
        set terminal pngcairo size 800,1000 noenhanced font "Sans,12" dashed
    } else {
        set terminal svg size 480,760 noenhanced font "Sans,12" dashed background rgb "white"
    }
    set output out.".".fmt
    set multiplot layout 4,1 title chart_title font ",13"
    set format x ""
    unset xlabel
    set ylabel "tokens/s"
    set yrange [0:*]
    if (exists("tpsmax")) { set yrange [tpsmin:tpsmax] }
    plot data index 0 using 1:2 with steps ls 1 title "client output tokens/s"
    set ylabel "requests"
    set yrange [0:*]
    if (exists("reqmax")) { set yrange [reqmin:reqmax] }
    plot data index 0 using 1:3 with steps ls 1 title "client in flight", \
         data index 1 using 1:2 with lines ls 2 title "server running", \
         data index 1 using 1:3 with lines ls 3 title "server waiting"
    set ylabel "TTFT p99 (ms)"
    set yrange [0:*]
    if (exists("ttftmax")) { set yrange [ttftmin:ttftmax] }
    plot data index 0 using 1:4 with linespoints ls 1 title "client TTFT p99"
    set format x "%g"
    set xlabel "Time since the run's origin (s)"
    set ylabel "KV cache (%)"
    set yrange [0:100]
    plot data index 1 using 1:(100*$4) with lines ls 4 title "server KV-cache usage"
    unset multiplot
    unset output
}

# eval-timeline.png: one phased run with nvme-adaptd in the loop: each queue's completion rate per
# measurement window (coloured by the mode it ran in) and its reaping mode over time. Variables from
# bench/eval/plots.py: dir (the data files' directory, ending in /), out.
load dir."eval-timeline-setup.gp"
set terminal pngcairo size 1400,900 font "DejaVu Sans,12"
set output out
set grid lc rgb "#dddddd"
set xrange [0:t_end]
set lmargin 12
set rmargin 4
do for [p = 1:phases] {
  eval sprintf('set object %d rect from phase_start_%d, graph 0 to phase_end_%d, graph 1 behind fc rgb phase_color_%d fs solid 1.0 noborder', p, p, p, p)
}

set multiplot layout 2,1 title "nvme-adaptd on uvnvme, one queue: light (QD1), heavy (QD16), light (QD1)" font ",14"
set size 1, 0.62
set origin 0, 0.36
set title "Completion rate per measurement window (8192 completions; the agent records the windows it accepts)"
set ylabel "completions per second"
set format y "%.0s%c"
set key outside top center horizontal
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
do for [p = 1:phases] {
  eval sprintf('set label %d phase_text_%d at (phase_start_%d + phase_end_%d) / 2, graph 0.90 center front', p, p, p, p)
}
plot for [q = 0:queues - 1] dir.sprintf("eval-timeline-rate-%d.dat", q) using 1:($3 == 0 ? $2 : 1/0) \
       with points pt 7 ps 0.8 lc rgb "#4878cf" title (q == 0 ? "window in interrupt mode" : ""), \
     for [q = 0:queues - 1] dir.sprintf("eval-timeline-rate-%d.dat", q) using 1:($3 == 1 ? $2 : 1/0) \
       with points pt 7 ps 0.8 lc rgb "#d65f5f" title (q == 0 ? "window in poll mode" : "")
unset label

set size 1, 0.34
set origin 0, 0.0
set title "Reaping mode as the agent switched it: ".engine_text
set ylabel "mode"
set xlabel "seconds since uvnvme-load started"
set yrange [-0.2:1.2]
set ytics ("interrupt" 0, "poll" 1)
set format y "%g"
set key off
plot for [q = 0:queues - 1] dir.sprintf("eval-timeline-mode-%d.dat", q) using 1:($2 + q * 0.04) \
       with steps lw 2 lc rgb "#333333"
unset multiplot

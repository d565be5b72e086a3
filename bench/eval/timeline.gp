# eval-timeline.png: the phased run (light and heavy phases alternating) in interrupt, poll, oracle (each phase in
# its better static mode) and adaptive mode. Top: each
# phase's IOPS per mode (steps) and, for the adaptive run, each queue's completion rate per measurement
# window (coloured by the mode it ran in). Middle: host CPU per completion per phase and mode (adaptive:
# reapers + agent). Bottom: the adaptive run's reaping mode as the agent switched it. Variables from
# bench/eval/plots.py: dir (the data files' directory, ending in /), out.
load dir."eval-timeline-setup.gp"
set terminal pngcairo size 1400,1200 font "DejaVu Sans,12"
set output out
set grid lc rgb "#dddddd"
set xrange [0:t_end]
set lmargin 12
set rmargin 4
do for [p = 1:phases] {
  eval sprintf('set object %d rect from phase_start_%d, graph 0 to phase_end_%d, graph 1 behind fc rgb phase_color_%d fs solid 1.0 noborder', p, p, p, p)
}
steps = dir."eval-timeline-phases.dat"
int = "#4878cf"; poll = "#d65f5f"; orc = "#9467bd"; ada = "#2ca02c"

set multiplot layout 3,1 title "uvnvme, one queue: light (QD1) and heavy (QD16) phases in interrupt, poll, oracle and adaptive mode\n".goal_text font ",14"
set size 1, 0.44
set origin 0, 0.52
set title "IOPS per phase (lines) and the adaptive run's completion rate per measurement window (points)"
set ylabel "completions per second"
set format y "%.0s%c"
set key outside top center horizontal
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
do for [p = 1:phases] {
  eval sprintf('set label %d phase_text_%d at (phase_start_%d + phase_end_%d) / 2, graph 0.93 center front', p, p, p, p)
}
plot for [q = 0:queues - 1] dir.sprintf("eval-timeline-rate-%d.dat", q) using 1:($3 == 0 ? $2 : 1/0) \
       with points pt 7 ps 0.6 lc rgb "#9bb5e6" title (q == 0 ? "adaptive: window in interrupt mode" : ""), \
     for [q = 0:queues - 1] dir.sprintf("eval-timeline-rate-%d.dat", q) using 1:($3 == 1 ? $2 : 1/0) \
       with points pt 7 ps 0.6 lc rgb "#eba2a2" title (q == 0 ? "adaptive: window in poll mode" : ""), \
     steps using 1:2 with steps lw 2 dt 2 lc rgb int title "interrupt", \
     steps using 1:3 with steps lw 2 dt 2 lc rgb poll title "poll", \
     steps using 1:4 with steps lw 2 dt 3 lc rgb orc title "oracle (per phase)", \
     steps using 1:5 with steps lw 3 lc rgb ada title "adaptive"
unset label

set size 1, 0.26
set origin 0, 0.26
set title "Host CPU per completion per phase (adaptive: reapers + agent)"
set ylabel "CPU us per completion (log)"
set logscale y
set yrange [*:*]
set offsets 0, 0, 0, 0
set format y "%g"
set key off
plot steps using 1:6 with steps lw 2 dt 2 lc rgb int, \
     steps using 1:7 with steps lw 2 dt 2 lc rgb poll, \
     steps using 1:8 with steps lw 2 dt 3 lc rgb orc, \
     steps using 1:9 with steps lw 3 lc rgb ada
unset logscale y

set size 1, 0.24
set origin 0, 0.0
set title "Reaping mode of the adaptive run as the agent switched it: ".engine_text
set ylabel "mode"
set xlabel "seconds since uvnvme-load started"
set yrange [-0.2:1.2]
set ytics ("interrupt" 0, "poll" 1)
plot for [q = 0:queues - 1] dir.sprintf("eval-timeline-mode-%d.dat", q) using 1:($2 + q * 0.04) \
       with steps lw 2 lc rgb "#333333"
unset multiplot

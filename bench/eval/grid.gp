# eval-grid.png: IOPS and CPU per completion per configuration and arm (interrupt, poll, adaptive, shadow;
# bars: medians; whiskers: min and max over the repetitions). Variables from bench/eval/plots.py: data, out.
set terminal pngcairo size 1400,1350 font "DejaVu Sans,12"
set output out
set style data histogram
set style histogram errorbars gap 2 lw 1.2
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set key outside top center horizontal
set xtics nomirror
set ytics nomirror
set format y "%g"
set logscale y
set lmargin 12
set tmargin 4
set bmargin 5
int = "#4878cf"; poll = "#d65f5f"; ada = "#6acc65"; sha = "#956cb4"

set multiplot layout 3,1 title "uvnvme, default device model (media 20 us, 500k IOPS per device), 2 vCPUs: interrupt, poll, nvme-adaptd adaptive, shadow (interrupt, observed)" font ",14"

set title "Throughput relative to interrupt mode (interrupt-mode IOPS under each group)"
set ylabel "IOPS / interrupt IOPS"
unset logscale y
set yrange [0:*]
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#333333" front
plot data using 2:3:4:xtic(1) title "interrupt" lc rgb int, \
     "" using 5:6:7 title "poll" lc rgb poll, \
     "" using 8:9:10 title "adaptive" lc rgb ada, \
     "" using 11:12:13 title "shadow" lc rgb sha

unset arrow 1
set logscale y
set title "Host CPU per completion: reaper threads (adaptive, shadow: + the agent)"
set ylabel "CPU us per completion (log)"
set yrange [*:*]
plot data using 14:15:16:xtic(1) title "interrupt" lc rgb int, \
     "" using 17:18:19 title "poll" lc rgb poll, \
     "" using 20:21:22 title "adaptive" lc rgb ada, \
     "" using 23:24:25 title "shadow" lc rgb sha

set title "Whole uvnvme-load process per completion: reapers + emulated devices (adaptive, shadow: + the agent)"
plot data using 26:27:28:xtic(1) title "interrupt" lc rgb int, \
     "" using 29:30:31 title "poll" lc rgb poll, \
     "" using 32:33:34 title "adaptive" lc rgb ada, \
     "" using 35:36:37 title "shadow" lc rgb sha
unset multiplot

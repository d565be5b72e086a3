# eval-grid.png: IOPS and CPU per completion per configuration and mode (bars: medians; whiskers: min and
# max over the repetitions). Variables from bench/eval/plots.py: data, out.
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
int = "#4878cf"; poll = "#d65f5f"; ada = "#6acc65"

set multiplot layout 3,1 title "uvnvme, default device model (media 20 us, 500k IOPS per device), this 2-vCPU VM: interrupt vs poll vs nvme-adaptd adaptive" font ",14"

set title "Throughput relative to interrupt mode (interrupt-mode IOPS under each group)"
set ylabel "IOPS / interrupt IOPS"
unset logscale y
set yrange [0:*]
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#333333" front
plot data using 2:3:4:xtic(1) title "interrupt" lc rgb int, \
     "" using 5:6:7 title "poll" lc rgb poll, \
     "" using 8:9:10 title "adaptive" lc rgb ada

unset arrow 1
set logscale y
set title "Host CPU per completion: reaper threads (adaptive: + the agent)"
set ylabel "CPU us per completion (log)"
set yrange [*:*]
plot data using 11:12:13:xtic(1) title "interrupt" lc rgb int, \
     "" using 14:15:16 title "poll" lc rgb poll, \
     "" using 17:18:19 title "adaptive" lc rgb ada

set title "Whole uvnvme-load process per completion: reapers + emulated devices (adaptive: + the agent)"
plot data using 20:21:22:xtic(1) title "interrupt" lc rgb int, \
     "" using 23:24:25 title "poll" lc rgb poll, \
     "" using 26:27:28 title "adaptive" lc rgb ada
unset multiplot

#!/usr/bin/env python3
"""Summary per phase of a demo run: uvnvme-load's report (IOPS, p99, CPU) next to what the agent did
(share of each queue's completions reaped in poll mode, switches), from the agent's window trace; with one
queue and a uvnvme-load that reports poll_completed, the poll share is the driver's count instead."""
import json
import sys


def main():
    load_path, trace_path, start_ns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(load_path) as f:
        report = json.load(f)
    windows = []  # (queue, mode, completions, end_ns)
    with open(trace_path) as f:
        for line in f:
            words = line.split()
            if words and words[0] == "window" and "miss=" not in line:
                windows.append((words[1], words[2], int(words[3]), int(words[5])))
    decisions = []
    with open(trace_path + ".decisions") as f:
        for line in f:
            words = line.split()
            at = int(words[1].split("=")[1])
            frm, to = words[2].split("->")
            if frm != to and "shadow" not in words:
                decisions.append((words[0], at, to))
    queues = sorted({w[0] for w in windows} | {d[0] for d in decisions})
    rows = []
    begin = start_ns
    for phase in report["phases"]:
        end = begin + int(phase["seconds"] * 1e9)
        modes = []
        for queue in queues:
            polled = sum(w[2] for w in windows if w[0] == queue and begin <= w[3] < end and w[1] == "poll")
            total = sum(w[2] for w in windows if w[0] == queue and begin <= w[3] < end)
            switches = sum(1 for d in decisions if d[0] == queue and begin <= d[1] < end)
            if len(queues) == 1 and "poll_completed" in phase:  # what the driver reaped polling
                polled, total = phase["poll_completed"], phase["completed"]
            share = f"{100 * polled / total:3.0f}% poll" if total else "  no windows"
            modes.append(f"{queue.split(':q')[-1] and 'q' + queue.split(':q')[-1]}: {share}, {switches} switches")
        # The host's CPU (the reaper threads): the emulated device's own thread spins on its CPU with the
        # faithful clock, which is the device's cost, not the host's or the agent's.
        cpu = phase["host_cpu_seconds"]
        rows.append((phase["label"], f"{phase['iops']:,.0f}", f"{phase['lat_p99_us']:.0f}", f"{cpu:.2f}",
                     f"{cpu / max(phase['completed'], 1) * 1e6:.2f}", "; ".join(modes)))
        begin = end
    header = ("phase", "IOPS", "p99 us", "CPU s", "CPU s/M IO", "queues (agent)")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print("== summary per phase")
    for row in [header] + rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
    print(f"completed {report['completed']:,} of {report['submitted']:,} submitted; "
          f"{report['mode_switches']} mode switches applied by the agent; CPU is the host's (uvnvme-load's reaper threads)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Summary per phase of a demo run: the agent (adaptive mode) beside the same load in interrupt-only and in
poll-only mode on this machine, and why the agent chose what it chose, read from its decisions.

Per phase: IOPS and host CPU per I/O of each run (the host's CPU is uvnvme-load's reaper threads, the same
measure in every run; the emulated device's own thread is the device's cost), the agent's IOPS over the
better static mode's, the share of completions it polled (the driver's count), its switches, and one
sentence from the decisions it made in the phase. Writes the same as JSON (--json)."""
import argparse
import json
import re
import statistics

KEPT = ("poll_window_faster", "max_poll_windows")
FAILED = ("behind_pace", "not_faster", "stalled")
CAP_TOLERANCE = 0.03  # static poll within 3 % of interrupt: the device, not the reaping, sets the pace


def read_trace(path):
    """Window lines (mode, completions, start, end) and the first policy's poll threshold (ns)."""
    windows, threshold = [], None
    with open(path) as f:
        for line in f:
            words = line.split()
            if words and words[0] == "window" and "miss=" not in line:
                windows.append((words[2], int(words[3]), int(words[4]), int(words[5])))
            if threshold is None:
                match = re.search(r" threshold=(\d+)", line)
                if match:
                    threshold = int(match.group(1))
    return windows, threshold


def read_decisions(path):
    decisions = []
    with open(path) as f:
        for line in f:
            words = line.split()
            d = {"shadow": "shadow" in words}
            for word in words[1:]:
                if "->" in word:
                    d["from"], d["to"] = word.split("->")
                elif "=" in word:
                    key, value = word.split("=", 1)
                    d[key] = int(value) if value.lstrip("-").isdigit() else value
            decisions.append(d)
    return decisions


def why(phase_decisions, interrupt_windows, threshold, polled_share, interrupt, poll):
    """One sentence: what the agent did in the phase and why, from its decisions."""
    reasons = {}
    for d in phase_decisions:
        reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
    tries = reasons.get("window_fast", 0)
    kept = [d["limit"] / d["measured"] for d in phase_decisions if d["reason"] in KEPT and d.get("measured")]
    failed = {r: reasons[r] for r in FAILED if r in reasons}
    capped = abs(poll["iops"] - interrupt["iops"]) <= interrupt["iops"] * CAP_TOLERANCE
    if kept:
        text = (f"polled {100 * polled_share:.0f} % of completions: its kept polling windows beat their interrupt "
                f"baseline, x{statistics.median(kept):.2f} the completion rate (median of {len(kept)})")
        if failed:
            text += f"; {sum(failed.values())} tries failed ({', '.join(f'{r} {n}' for r, n in failed.items())})"
        return text
    if tries:
        text = (f"stayed in interrupt: tried polling {tries} times and every try failed "
                f"({', '.join(f'{r} {n}' for r, n in failed.items()) or 'no verdict'}): polling was not faster here")
        if capped:
            text += (f" (device at its IOPS cap: poll-only gave {poll['iops']:,.0f} IOPS against interrupt-only's "
                     f"{interrupt['iops']:,.0f})")
        elif poll["iops"] < interrupt["iops"]:
            text += f" (poll-only was slower: {poll['iops']:,.0f} IOPS against interrupt-only's {interrupt['iops']:,.0f})"
        return text
    if interrupt_windows:
        average_us = statistics.median((end - start) / n for _, n, start, end in interrupt_windows) / 1000
        limit = f"the {threshold / 1000:.0f} us poll threshold" if threshold else "the poll threshold"
        return (f"stayed in interrupt: completions came {average_us:.1f} us apart (median window), above {limit}: "
                f"too slow for polling to pay")
    return "stayed in interrupt: no full window in the phase (too few completions to judge)"


def static(report, i):
    phase = report["phases"][i]
    return {"iops": phase["iops"], "host_cpu_us_per_io": phase["host_cpu_seconds"] / max(phase["completed"], 1) * 1e6}


def summarize(args):
    with open(args.adaptive) as f:
        adaptive_report = json.load(f)
    with open(args.interrupt) as f:
        interrupt_report = json.load(f)
    with open(args.poll) as f:
        poll_report = json.load(f)
    windows, threshold = read_trace(args.trace)
    decisions = read_decisions(args.trace + ".decisions")
    depths = [int(re.search(r"qd(\d+)", p["label"]).group(1)) for p in adaptive_report["phases"]]
    phases = []
    begin = args.start_ns
    for i, phase in enumerate(adaptive_report["phases"]):
        end = begin + int(phase["seconds"] * 1e9)
        in_phase = [d for d in decisions if begin <= d["at"] < end and not d["shadow"]]
        interrupt_windows = [w for w in windows if w[0] == "interrupt" and begin <= w[3] < end]
        adaptive, interrupt, poll = static(adaptive_report, i), static(interrupt_report, i), static(poll_report, i)
        best = max(interrupt["iops"], poll["iops"])
        polled_share = phase.get("poll_completed", 0) / max(phase["completed"], 1)
        phases.append({
            "name": f"{'heavy' if depths[i] == max(depths) and max(depths) > min(depths) else 'light'} "
                    f"{i + 1} (QD{depths[i]}, {round(phase['seconds'])} s)",
            "adaptive": adaptive, "interrupt": interrupt, "poll": poll,
            "adaptive_over_best": adaptive["iops"] / best if best else 0.0,
            "polled_share": polled_share,
            "switches": sum(1 for d in in_phase if d["from"] != d["to"]),
            "why": why(in_phase, interrupt_windows, threshold, polled_share, interrupt, poll),
        })
        begin = end
    return {"phases": phases, "agent_cpu_seconds": args.agent_cpu,
            "completed": adaptive_report["completed"], "submitted": adaptive_report["submitted"],
            "mode_switches": adaptive_report["mode_switches"]}


def print_summary(summary):
    header = ("phase", "IOPS agent", "interrupt", "poll", "agent/best", "CPU us/IO agent", "interrupt", "poll",
              "polled", "switches")
    rows = []
    for p in summary["phases"]:
        rows.append((p["name"], f"{p['adaptive']['iops']:,.0f}", f"{p['interrupt']['iops']:,.0f}",
                     f"{p['poll']['iops']:,.0f}", f"{p['adaptive_over_best']:.2f}",
                     f"{p['adaptive']['host_cpu_us_per_io']:.2f}", f"{p['interrupt']['host_cpu_us_per_io']:.2f}",
                     f"{p['poll']['host_cpu_us_per_io']:.2f}", f"{100 * p['polled_share']:.0f}%", str(p["switches"])))
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print("== summary per phase: the agent beside interrupt-only and poll-only on this machine")
    for row in [header] + rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    print()
    for p in summary["phases"]:
        print(f"{p['name']}: {p['why']}")
    print(f"\ncompleted {summary['completed']:,} of {summary['submitted']:,} submitted in the agent's run; "
          f"{summary['mode_switches']} mode switches applied; the agent itself used {summary['agent_cpu_seconds']:.2f} s "
          f"of CPU (not in the per-I/O figures, which are the reaper threads')")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adaptive", required=True, help="uvnvme-load report of the agent's run")
    parser.add_argument("--trace", required=True, help="the agent's window trace (and TRACE.decisions)")
    parser.add_argument("--start-ns", type=int, required=True, help="CLOCK_MONOTONIC at the load's start")
    parser.add_argument("--interrupt", required=True, help="uvnvme-load report, interrupt only")
    parser.add_argument("--poll", required=True, help="uvnvme-load report, poll only")
    parser.add_argument("--agent-cpu", type=float, default=0.0, help="the agent's CPU seconds over its run")
    parser.add_argument("--json", help="write the summary here")
    args = parser.parse_args()
    summary = summarize(args)
    print_summary(summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summary per phase of a demo run: the agent (adaptive mode) beside the same load in interrupt-only and in
poll-only mode on this machine, and why the agent chose what it chose, read from its decisions. The three
arms ran in turn, repeatedly; every load report's first phase is a warm-up and is left out.

Per phase, as medians over the repetitions (ratios paired within one): IOPS and host CPU per I/O of each arm
(the host's CPU is uvnvme-load's reaper threads, the same measure in every run; the emulated device's own
thread is the device's cost), the agent's IOPS over the better static mode's and its IOPS and CPU per I/O
over interrupt-only's, the share of completions it polled (the driver's count), its switches, whether the
phase meets its goal, and one sentence from the decisions it made in the phase's runs. Writes the same as
JSON (--json), each repetition's figures under the phase's `repetitions`."""
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


HEAVY_GOAL = 0.95       # heavy phase: the agent's IOPS at least this times the better static mode's
LIGHT_IOPS_GOAL = 0.95  # light phases: the agent's IOPS at least this times interrupt-only's
LIGHT_CPU_GOAL = 1.10   # light phases: the agent's host CPU per I/O at most this times interrupt-only's


def load(path):
    with open(path) as f:
        report = json.load(f)
    return dict(report, phases=report["phases"][1:])  # the first phase is the unreported warm-up


def figures(phase):
    return {"iops": phase["iops"], "host_cpu_us_per_io": phase["host_cpu_seconds"] / max(phase["completed"], 1) * 1e6}


def median_of(runs, key):
    return statistics.median(run[key] for run in runs)


def summarize(args):
    adaptive_runs = []
    with open(args.adaptive_runs) as f:
        for line in f:
            path, start_ns, agent_cpu = line.split()
            adaptive_runs.append((load(path), int(start_ns), float(agent_cpu)))
    interrupt_runs = [load(p) for p in args.interrupt]
    poll_runs = [load(p) for p in args.poll]
    if not (len(adaptive_runs) == len(interrupt_runs) == len(poll_runs)) or not adaptive_runs:
        raise SystemExit("demo_summary: each arm needs the same number of runs, at least one")
    windows, threshold = read_trace(args.trace)
    decisions = read_decisions(args.trace + ".decisions")
    first = adaptive_runs[0][0]
    depths = [int(re.search(r"qd(\d+)", p["label"]).group(1)) for p in first["phases"]]
    phases = []
    for i, phase in enumerate(first["phases"]):
        reps, in_phase, interrupt_windows = [], [], []
        for (report, start_ns, _), interrupt_report, poll_report in zip(adaptive_runs, interrupt_runs, poll_runs):
            begin = start_ns + int(sum(p["seconds"] for p in report["phases"][:i]) * 1e9)
            end = begin + int(report["phases"][i]["seconds"] * 1e9)
            mine = [d for d in decisions if begin <= d["at"] < end and not d["shadow"]]
            in_phase += mine
            interrupt_windows += [w for w in windows if w[0] == "interrupt" and begin <= w[3] < end]
            ours = report["phases"][i]
            adaptive, interrupt, poll = figures(ours), figures(interrupt_report["phases"][i]), figures(poll_report["phases"][i])
            best = max(interrupt["iops"], poll["iops"])
            reps.append({"adaptive": adaptive, "interrupt": interrupt, "poll": poll,
                         "adaptive_over_best": adaptive["iops"] / best if best else 0.0,
                         "iops_over_interrupt": adaptive["iops"] / interrupt["iops"] if interrupt["iops"] else 0.0,
                         "host_cpu_over_interrupt": (adaptive["host_cpu_us_per_io"] / interrupt["host_cpu_us_per_io"]
                                                     if interrupt["host_cpu_us_per_io"] else 0.0),
                         "polled_share": ours.get("poll_completed", 0) / max(ours["completed"], 1),
                         "switches": sum(1 for d in mine if d["from"] != d["to"])})
        arms = {arm: {key: median_of([r[arm] for r in reps], key) for key in ("iops", "host_cpu_us_per_io")}
                for arm in ("adaptive", "interrupt", "poll")}
        heavy = depths[i] == max(depths) and max(depths) > min(depths)
        entry = dict(arms, **{key: median_of(reps, key) for key in
                              ("adaptive_over_best", "iops_over_interrupt", "host_cpu_over_interrupt", "polled_share")})
        entry["switches"] = round(median_of(reps, "switches"))
        entry["name"] = f"{'heavy' if heavy else 'light'} {i + 1} (QD{depths[i]}, {round(phase['seconds'])} s)"
        if heavy:
            entry["goal"] = {"adaptive_over_best_min": HEAVY_GOAL, "met": entry["adaptive_over_best"] >= HEAVY_GOAL}
        else:
            entry["goal"] = {"iops_over_interrupt_min": LIGHT_IOPS_GOAL, "host_cpu_over_interrupt_max": LIGHT_CPU_GOAL,
                             "met": entry["iops_over_interrupt"] >= LIGHT_IOPS_GOAL
                             and entry["host_cpu_over_interrupt"] <= LIGHT_CPU_GOAL}
        entry["why"] = why(in_phase, interrupt_windows, threshold, entry["polled_share"], arms["interrupt"], arms["poll"])
        if len(reps) > 1:
            entry["why"] += f" (over {len(reps)} runs)"
        entry["repetitions"] = reps
        phases.append(entry)
    return {"phases": phases, "repetitions": len(adaptive_runs),
            "figures": "per arm the median over the repetitions; ratios the median of the ratios paired within one "
                       "repetition; host CPU is the reaper threads' (the agent's own CPU is agent_cpu_seconds)",
            "goals_met": all(p["goal"]["met"] for p in phases),
            "agent_cpu_seconds": sum(cpu for _, _, cpu in adaptive_runs),
            "completed": sum(r["completed"] for r, _, _ in adaptive_runs),
            "submitted": sum(r["submitted"] for r, _, _ in adaptive_runs),
            "mode_switches": sum(r["mode_switches"] for r, _, _ in adaptive_runs)}


def print_summary(summary):
    header = ("phase", "IOPS agent", "interrupt", "poll", "agent/best", "CPU us/IO agent", "interrupt", "poll",
              "agent/intr", "polled", "switches", "goal")
    rows = []
    for p in summary["phases"]:
        rows.append((p["name"], f"{p['adaptive']['iops']:,.0f}", f"{p['interrupt']['iops']:,.0f}",
                     f"{p['poll']['iops']:,.0f}", f"{p['adaptive_over_best']:.2f}",
                     f"{p['adaptive']['host_cpu_us_per_io']:.2f}", f"{p['interrupt']['host_cpu_us_per_io']:.2f}",
                     f"{p['poll']['host_cpu_us_per_io']:.2f}", f"{p['host_cpu_over_interrupt']:.2f}",
                     f"{100 * p['polled_share']:.0f}%", str(p["switches"]), "met" if p["goal"]["met"] else "NOT met"))
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print(f"== summary per phase: the agent beside interrupt-only and poll-only on this machine "
          f"(medians of {summary['repetitions']} runs each)")
    for row in [header] + rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    print(f"goals: heavy agent/best >= {HEAVY_GOAL}; light agent IOPS >= {LIGHT_IOPS_GOAL} x and CPU per I/O <= "
          f"{LIGHT_CPU_GOAL} x interrupt-only's (agent/intr)")
    print()
    for p in summary["phases"]:
        print(f"{p['name']}: {p['why']}")
    print(f"\ncompleted {summary['completed']:,} of {summary['submitted']:,} submitted in the agent's runs; "
          f"{summary['mode_switches']} mode switches applied; the agent itself used {summary['agent_cpu_seconds']:.2f} s "
          f"of CPU over them (not in the per-I/O figures, which are the reaper threads')")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adaptive-runs", required=True,
                        help="a file with a line per agent run: its uvnvme-load report, CLOCK_MONOTONIC ns at its "
                             "first reported phase, the agent's CPU seconds over it")
    parser.add_argument("--trace", required=True, help="the agent's window trace (and TRACE.decisions)")
    parser.add_argument("--interrupt", nargs="+", required=True, help="uvnvme-load reports, interrupt only, in turn")
    parser.add_argument("--poll", nargs="+", required=True, help="uvnvme-load reports, poll only, in turn")
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

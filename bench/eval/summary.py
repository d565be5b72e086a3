#!/usr/bin/env python3
"""Aggregates the evaluation's runs (medians with min and max over repetitions), compares adaptive with the
static modes, checks the goals, and prints the tables of docs/evaluation.md.

Usage: bench/eval/summary.py BUILD/bench-results/eval.json   (prints the Markdown tables)"""
import json
import statistics
import sys

MODES = ("interrupt", "poll", "adaptive")
METRICS = ("iops", "lat_p50_us", "lat_p99_us", "process_cpu_us", "host_cpu_us", "controller_cpu_us",
           "agent_cpu_us", "host_plus_agent_cpu_us", "process_plus_agent_cpu_us", "wakeups_per_completion",
           "poll_time_share", "controller_cpu_util")
IOPS_GOAL = 0.95      # adaptive IOPS at least this times the better static mode
QD1_CPU_GOAL = 1.10   # at QD1, adaptive CPU per completion at most this times interrupt mode's


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}


def median(summary, mode, metric):
    entry = summary["modes"].get(mode, {}).get(metric)
    return entry["median"] if entry else None


def summarize_config(config, runs):
    """config: the grid entry (dict); runs: every run of it (dicts with 'mode' and 'rep' and the metrics)."""
    out = {"config": config, "modes": {}}
    others = [r["other_cpus"] for r in runs if r.get("other_cpus") is not None]
    out["other_cpus_max"] = max(others) if others else None
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        if mine:
            out["modes"][mode] = {m: s for m in METRICS if (s := spread(r.get(m) for r in mine))}
    engines = [r["engine"] for r in runs if r["mode"] == "adaptive" and r.get("engine")]
    if engines:  # summed over the repetitions
        out["adaptive_engine"] = {
            "tries": sum(e["tries"] for e in engines),
            "polling_windows_kept": sum(e["polling_windows_kept"] for e in engines),
            "failed_tries": {k: sum(e["failed_tries"].get(k, 0) for e in engines)
                             for k in sorted({k for e in engines for k in e["failed_tries"]})},
            "backoffs": sum(e["backoffs"] for e in engines),
            "max_poll_windows_reached": sum(e["max_poll_windows_reached"] for e in engines),
        }
    irq, poll, adaptive = (median(out, m, "iops") for m in MODES)
    if None in (irq, poll, adaptive):
        return out
    best_mode = "poll" if poll > irq else "interrupt"
    best = max(irq, poll)
    out["best_static"] = best_mode
    out["adaptive_vs_interrupt_pct"] = (adaptive / irq - 1) * 100
    out["adaptive_vs_poll_pct"] = (adaptive / poll - 1) * 100
    out["adaptive_vs_best_static_pct"] = (adaptive / best - 1) * 100
    # Runs of one repetition ran back to back: their ratio is the least noisy comparison.
    paired = []
    for rep in sorted({r["rep"] for r in runs}):
        by_mode = {r["mode"]: r for r in runs if r["rep"] == rep}
        if all(m in by_mode for m in MODES):
            paired.append(by_mode["adaptive"]["iops"] / max(by_mode["interrupt"]["iops"], by_mode["poll"]["iops"]))
    out["paired_adaptive_over_best_static"] = paired
    out["goal_iops"] = {"limit": IOPS_GOAL, "ratio": adaptive / best, "met": adaptive >= IOPS_GOAL * best}
    if config["qd"] == 1:
        goal = {"limit": QD1_CPU_GOAL}
        for name, adaptive_metric, static_metric in (("host", "host_plus_agent_cpu_us", "host_cpu_us"),
                                                     ("process", "process_plus_agent_cpu_us", "process_cpu_us")):
            a, i = median(out, "adaptive", adaptive_metric), median(out, "interrupt", static_metric)
            goal[f"{name}_ratio"] = a / i if a and i else None
        goal["met"] = goal["host_ratio"] is not None and goal["host_ratio"] <= QD1_CPU_GOAL
        out["goal_qd1_cpu"] = goal
    return out


def fmt(value, digits=3):
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value / 1000:,.1f}k" if abs(value) < 1e6 else f"{value / 1e6:,.2f}M"
    return f"{value:.{digits}g}"


def cell(summary, mode, metric, digits=3):
    entry = summary["modes"].get(mode, {}).get(metric)
    if not entry:
        return "-"
    return f"{fmt(entry['median'], digits)} ({fmt(entry['min'], digits)}-{fmt(entry['max'], digits)})"


def pct(value):
    return "-" if value is None else f"{value:+.1f} %"


def markdown(result):
    configs = result["configs"]
    lines = ["| configuration | interrupt IOPS | poll IOPS | adaptive IOPS | adaptive vs interrupt | "
             "adaptive vs best static | paired runs | goal: adaptive >= 0.95 x best | other work (max CPUs) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        goal = s.get("goal_iops")
        paired = s.get("paired_adaptive_over_best_static") or []
        lines.append(f"| {s['config']['label']} | {cell(s, 'interrupt', 'iops')} | {cell(s, 'poll', 'iops')} | "
                     f"{cell(s, 'adaptive', 'iops')} | {pct(s.get('adaptive_vs_interrupt_pct'))} | "
                     f"{pct(s.get('adaptive_vs_best_static_pct'))} ({s.get('best_static', '-')}) | "
                     f"{', '.join(f'{p:.2f}' for p in paired)} | "
                     f"{'-' if not goal else ('met' if goal['met'] else 'NOT met')} ({fmt(goal and goal['ratio'])}) | "
                     f"{fmt(s.get('other_cpus_max'), 2)} |")
    lines += ["", "| configuration | host CPU us/IO: interrupt | poll | adaptive (reapers + agent) | agent alone | "
              "process CPU us/IO: interrupt | poll | adaptive (+ agent) | QD1 goal: adaptive <= 1.10 x interrupt |",
              "|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        goal = s.get("goal_qd1_cpu")
        verdict = "-" if not goal else (f"{'met' if goal['met'] else 'NOT met'} (host x{fmt(goal['host_ratio'])}, "
                                        f"process x{fmt(goal['process_ratio'])})")
        lines.append(f"| {s['config']['label']} | {cell(s, 'interrupt', 'host_cpu_us')} | {cell(s, 'poll', 'host_cpu_us')} | "
                     f"{cell(s, 'adaptive', 'host_plus_agent_cpu_us')} | {cell(s, 'adaptive', 'agent_cpu_us', 2)} | "
                     f"{cell(s, 'interrupt', 'process_cpu_us')} | {cell(s, 'poll', 'process_cpu_us')} | "
                     f"{cell(s, 'adaptive', 'process_plus_agent_cpu_us')} | {verdict} |")
    lines += ["", "| configuration | p50 us: interrupt | poll | adaptive | p99 us: interrupt | poll | adaptive | "
              "adaptive: time polling | tries | kept windows | failed tries | backoffs | device CPU: interrupt, poll, adaptive |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        engine = s.get("adaptive_engine") or {}
        failed = ", ".join(f"{k} {v}" for k, v in sorted(engine.get("failed_tries", {}).items())) or "0"
        share = s["modes"].get("adaptive", {}).get("poll_time_share")
        share = "-" if not share else f"{share['median'] * 100:.0f} %"
        lines.append(f"| {s['config']['label']} | {cell(s, 'interrupt', 'lat_p50_us')} | {cell(s, 'poll', 'lat_p50_us')} | "
                     f"{cell(s, 'adaptive', 'lat_p50_us')} | {cell(s, 'interrupt', 'lat_p99_us')} | "
                     f"{cell(s, 'poll', 'lat_p99_us')} | {cell(s, 'adaptive', 'lat_p99_us')} | "
                     f"{share} | {engine.get('tries', '-')} | "
                     f"{engine.get('polling_windows_kept', '-')} | {failed} | {engine.get('backoffs', '-')} | "
                     f"{', '.join(fmt(median(s, m, 'controller_cpu_util'), 2) for m in MODES)} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)))


if __name__ == "__main__":
    main()

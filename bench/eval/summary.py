#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Aggregates the evaluation's runs (medians with min and max over repetitions), compares adaptive with the
static modes and shadow with interrupt, checks the goals, and prints the tables of docs/evaluation.md.

Usage: bench/eval/summary.py BUILD/bench-results/eval.json   (prints the Markdown tables)"""
import json
import statistics
import sys

import node_goals

# The arms of every repetition; patch: the agent deciding by the kernel patch's rules (profile patch).
MODES = ("interrupt", "poll", "adaptive", "shadow", "node", "patch")
TABLE_MODES = MODES[:4]  # the columns of the main tables; the node arm has a table of its own (node_goals.py)
STATIC = ("interrupt", "poll")
METRICS = ("iops", "lat_p50_us", "lat_p99_us", "process_cpu_us", "host_cpu_us", "controller_cpu_us",
           "agent_cpu_us", "host_plus_agent_cpu_us", "process_plus_agent_cpu_us", "wakeups_per_completion",
           "poll_time_share", "poll_completion_share", "controller_cpu_util", "mode_switches", "app_work_per_second")
IOPS_GOAL = 0.99         # from QD8 up: adaptive IOPS at least this times the better static mode (paired, median)
GAIN_GOAL = 0.90         # from QD8 up where poll beats interrupt by over GAIN_MIN: share of the gain adaptive keeps
GAIN_MIN = 0.05
QD1_IOPS_GOAL = 0.95     # at QD1: adaptive IOPS at least this times interrupt mode's (paired, median)
QD1_CPU_GOAL = 1.10      # at QD1: adaptive host + agent CPU per completion at most this times interrupt's (paired, median)
SHADOW_TOLERANCE = 0.03  # everywhere: shadow IOPS within this of interrupt mode's (paired, median)
GOALS = {
    "iops": f"from QD8 up: adaptive >= {IOPS_GOAL} x the better static mode (median of the paired ratios)",
    "gain_kept": f"from QD8 up where poll > {1 + GAIN_MIN:g} x interrupt: (adaptive - interrupt) / (poll - "
                 f"interrupt) >= {GAIN_GOAL} (median of the per-repetition shares)",
    "qd1_iops": f"at QD1: adaptive >= {QD1_IOPS_GOAL} x interrupt (median of the paired ratios)",
    "qd1_cpu": f"at QD1: adaptive host + agent CPU per completion <= {QD1_CPU_GOAL} x interrupt's "
               "(median of the paired ratios)",
    "shadow": f"everywhere: shadow within {SHADOW_TOLERANCE * 100:.0f} % of interrupt (median of the paired ratios)",
    **node_goals.GOALS,
}


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}


def median_of(values):
    """The median of the values that are not None; None if there are none."""
    found = spread(values)
    return found["median"] if found else None


def median(summary, mode, metric):
    entry = summary["modes"].get(mode, {}).get(metric)
    return entry["median"] if entry else None


def repetitions(runs):
    """Each repetition's runs by arm ({mode: run}), in order: its runs ran back to back, the least noisy
    comparison."""
    for rep in sorted({r["rep"] for r in runs}):
        yield {r["mode"]: r for r in runs if r["rep"] == rep}


def paired(runs, numerator, denominators):
    """Per repetition, the numerator arm's IOPS over the best of the denominator arms' IOPS."""
    ratios = []
    for by_mode in repetitions(runs):
        if numerator in by_mode and all(m in by_mode for m in denominators):
            base = max(by_mode[m]["iops"] for m in denominators)
            if base:
                ratios.append(by_mode[numerator]["iops"] / base)
    return ratios


def engine_totals(engines):
    """What the engine did (adaptive) or would have done (shadow), summed over the repetitions."""
    return {
        "tries": sum(e["tries"] for e in engines),
        "polling_windows_kept": sum(e["polling_windows_kept"] for e in engines),
        "failed_tries": {k: sum(e["failed_tries"].get(k, 0) for e in engines)
                         for k in sorted({k for e in engines for k in e["failed_tries"]})},
        "backoffs": sum(e["backoffs"] for e in engines),
        "max_poll_windows_reached": sum(e["max_poll_windows_reached"] for e in engines),
        "deferred_tries": {k: sum(e.get("deferred_tries", {}).get(k, 0) for e in engines)
                           for k in sorted({k for e in engines for k in e.get("deferred_tries", {})})},
        "node_ended_runs": sum(e.get("node_ended_runs", 0) for e in engines),
    }


def ratio_goal(limit, ratio, at_least=True):
    met = ratio is not None and (ratio >= limit if at_least else ratio <= limit)
    return {"limit": limit, "ratio": ratio, "met": met}


def add_paired(out, runs, name, numerator, denominators):
    out[name] = paired(runs, numerator, denominators)
    out[f"{name}_median"] = statistics.median(out[name]) if out[name] else None
    return out[f"{name}_median"]


def summarize_config(config, runs):
    """config: the grid entry (dict); runs: every run of it (dicts with 'mode' and 'rep' and the metrics)."""
    out = {"config": config, "modes": {}}
    others = [r["other_cpus"] for r in runs if r.get("other_cpus") is not None]
    out["other_cpus_max"] = max(others) if others else None
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        if mine:
            out["modes"][mode] = {m: s for m in METRICS if (s := spread(r.get(m) for r in mine))}
    for mode in ("adaptive", "shadow", "node"):
        engines = [r["engine"] for r in runs if r["mode"] == mode and r.get("engine")]
        if engines:
            out[f"{mode}_engine"] = engine_totals(engines)
    sources = sorted({r["poll_completion_share_source"] for r in runs
                      if r["mode"] == "adaptive" and r.get("poll_completion_share_source")})
    out["poll_completion_share_source"] = sources
    irq, poll, adaptive, shadow = (median(out, m, "iops") for m in TABLE_MODES)
    node_goals.add_node_goals(out, config, runs)
    if None in (irq, poll):
        return out
    best = max(irq, poll)
    out["best_static"] = "poll" if poll > irq else "interrupt"
    if adaptive is not None:
        out["adaptive_vs_interrupt_pct"] = (adaptive / irq - 1) * 100
        out["adaptive_vs_poll_pct"] = (adaptive / poll - 1) * 100
        out["adaptive_vs_best_static_pct"] = (adaptive / best - 1) * 100
    if shadow is not None:
        out["shadow_vs_interrupt_pct"] = (shadow / irq - 1) * 100
    over_best = add_paired(out, runs, "paired_adaptive_over_best_static", "adaptive", STATIC)
    over_irq = add_paired(out, runs, "paired_adaptive_over_interrupt", "adaptive", ("interrupt",))
    shadow_ratio = add_paired(out, runs, "paired_shadow_over_interrupt", "shadow", ("interrupt",))
    add_paired(out, runs, "paired_patch_over_best_static", "patch", STATIC)
    if config["qd"] >= 8:
        out["goal_iops"] = ratio_goal(IOPS_GOAL, over_best)
        if (poll_gain := add_paired(out, runs, "paired_poll_over_interrupt", "poll", ("interrupt",))) and \
                poll_gain > 1 + GAIN_MIN:
            out["goal_gain_kept"] = gain_kept_goal(out, runs)
    else:
        out["goal_qd1_iops"] = ratio_goal(QD1_IOPS_GOAL, over_irq)
    if config["qd"] == 1:
        out["goal_qd1_cpu"] = qd1_cpu_goal(out, runs)
    if shadow_ratio is not None:
        out["goal_shadow"] = {"limit": SHADOW_TOLERANCE, "ratio": shadow_ratio,
                              "met": abs(shadow_ratio - 1) <= SHADOW_TOLERANCE}
    return out


def gain_kept_goal(out, runs):
    """Per repetition, the share of polling's gain over interrupt that adaptive kept (1: all of it, 0: none,
    negative: below interrupt); the goal takes the median. The patch profile's share sits beside it."""
    for arm in ("adaptive", "patch"):
        shares = []
        for by_mode in repetitions(runs):
            iops = {mode: run["iops"] for mode, run in by_mode.items()}
            irq, poll = iops.get("interrupt"), iops.get("poll")
            if arm in iops and irq and poll and poll > irq:
                shares.append((iops[arm] - irq) / (poll - irq))
        out[f"{arm}_gain_kept"] = shares
    shares = out["adaptive_gain_kept"]
    return ratio_goal(GAIN_GOAL, statistics.median(shares) if shares else None)


def qd1_cpu_goal(out, runs):
    """Per repetition (its arms ran back to back), adaptive's CPU per completion over interrupt's; the goal
    takes the median of these paired ratios (as bench/probe_cost.py does), so one run's bimodal wake-up cost
    cannot decide it. The ratio of the arms' medians is kept beside it."""
    goal = {"limit": QD1_CPU_GOAL}
    for name, adaptive_metric, static_metric in (("host", "host_plus_agent_cpu_us", "host_cpu_us"),
                                                 ("process", "process_plus_agent_cpu_us", "process_cpu_us")):
        pairs = []
        for by_mode in repetitions(runs):
            a, i = (by_mode.get(m, {}).get(k) for m, k in (("adaptive", adaptive_metric), ("interrupt", static_metric)))
            if a and i:
                pairs.append(a / i)
        goal[f"{name}_paired_ratios"] = pairs
        goal[f"{name}_ratio"] = statistics.median(pairs) if pairs else None
        a, i = median(out, "adaptive", adaptive_metric), median(out, "interrupt", static_metric)
        goal[f"{name}_ratio_of_medians"] = a / i if a and i else None
    goal["ratio"] = goal["host_ratio"]
    goal["met"] = goal["host_ratio"] is not None and goal["host_ratio"] <= QD1_CPU_GOAL
    return goal


def goal_entries(result):
    """Every goal checked: (where, goal name, entry)."""
    out = []
    for s in result["configs"]:
        out += [(s["config"]["label"], key[5:], s[key]) for key in sorted(s) if key.startswith("goal_")]
    goals = result.get("timeline", {}).get("goals", {})
    out += [("phased run", f"{name}_phase{g['phase'] + 1}", g) for name, gs in goals.items() for g in gs]
    out += [(f"latency {p['label']}", key[5:], p[key]) for p in result.get("latency", {}).get("points", [])
            for key in sorted(p) if key.startswith("goal_")]
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


def share(summary, mode, metric):
    entry = summary["modes"].get(mode, {}).get(metric)
    return "-" if not entry else f"{entry['median'] * 100:.0f} %"


def verdict(goal, text=None):
    if not goal:
        return "-"
    return f"{'met' if goal['met'] else 'NOT met'} ({text or fmt(goal['ratio'])})"


def ratios(values):
    return ", ".join(f"{v:.2f}" for v in values or []) or "-"


def iops_table(configs):
    lines = ["| configuration | interrupt IOPS | poll IOPS | adaptive IOPS | shadow IOPS | adaptive vs best static "
             "(medians) | paired adaptive / best static | IOPS goal | paired shadow / interrupt | shadow goal "
             "(within 3 %) | patch profile IOPS | paired patch / best static | share of poll's gain kept: adaptive; "
             "patch | other work (max CPUs) |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        if "goal_iops" in s:
            goal = f"{verdict(s['goal_iops'])} >= {IOPS_GOAL} x best"
        else:
            goal = (f"QD1: {verdict(s.get('goal_qd1_iops'))} >= {QD1_IOPS_GOAL} x interrupt "
                    f"(paired {ratios(s.get('paired_adaptive_over_interrupt'))})")
        lines.append(f"| {s['config']['label']} | {cell(s, 'interrupt', 'iops')} | {cell(s, 'poll', 'iops')} | "
                     f"{cell(s, 'adaptive', 'iops')} | {cell(s, 'shadow', 'iops')} | "
                     f"{pct(s.get('adaptive_vs_best_static_pct'))} ({s.get('best_static', '-')}) | "
                     f"{ratios(s.get('paired_adaptive_over_best_static'))} | {goal} | "
                     f"{ratios(s.get('paired_shadow_over_interrupt'))} | {verdict(s.get('goal_shadow'))} | "
                     f"{cell(s, 'patch', 'iops')} | {ratios(s.get('paired_patch_over_best_static'))} | "
                     f"{gain_cell(s)} | {fmt(s.get('other_cpus_max'), 2)} |")
    return lines


def gain_cell(summary):
    """The gain-kept goal's verdict with adaptive's and the patch profile's shares, or '-' where poll does not pay."""
    goal = summary.get("goal_gain_kept")
    if not goal:
        return "-"
    return f"{verdict(goal)} >= {GAIN_GOAL}: {ratios(summary.get('adaptive_gain_kept'))}; " \
           f"{ratios(summary.get('patch_gain_kept'))}"


def cpu_table(configs):
    lines = ["| configuration | host CPU us/IO: interrupt | poll | adaptive (reapers + agent) | shadow (reapers + agent) | "
             "agent alone: adaptive | shadow | process CPU us/IO: interrupt | poll | adaptive (+ agent) | "
             "QD1 goal: adaptive <= 1.10 x interrupt |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        goal = s.get("goal_qd1_cpu")
        text = goal and f"host x{fmt(goal['host_ratio'])}, process x{fmt(goal['process_ratio'])}"
        lines.append(f"| {s['config']['label']} | {cell(s, 'interrupt', 'host_cpu_us')} | {cell(s, 'poll', 'host_cpu_us')} | "
                     f"{cell(s, 'adaptive', 'host_plus_agent_cpu_us')} | {cell(s, 'shadow', 'host_plus_agent_cpu_us')} | "
                     f"{cell(s, 'adaptive', 'agent_cpu_us', 2)} | {cell(s, 'shadow', 'agent_cpu_us', 2)} | "
                     f"{cell(s, 'interrupt', 'process_cpu_us')} | {cell(s, 'poll', 'process_cpu_us')} | "
                     f"{cell(s, 'adaptive', 'process_plus_agent_cpu_us')} | {verdict(goal, text)} |")
    return lines


def engine_table(configs):
    lines = ["| configuration | p50 us: interrupt | poll | adaptive | shadow | p99 us: interrupt | poll | adaptive | shadow | "
             "adaptive: completions polled | time polling | tries | kept windows | failed tries | backoffs | "
             "shadow: tries it would make | device CPU: interrupt, poll, adaptive, shadow |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        engine = s.get("adaptive_engine") or {}
        failed = ", ".join(f"{k} {v}" for k, v in sorted(engine.get("failed_tries", {}).items())) or "0"
        traced = " (trace)" if any(src.startswith("trace") for src in s.get("poll_completion_share_source", [])) else ""
        lines.append(f"| {s['config']['label']} | " + " | ".join(cell(s, m, "lat_p50_us") for m in TABLE_MODES) +
                     " | " + " | ".join(cell(s, m, "lat_p99_us") for m in TABLE_MODES) + " | "
                     f"{share(s, 'adaptive', 'poll_completion_share')}{traced} | {share(s, 'adaptive', 'poll_time_share')} | "
                     f"{engine.get('tries', '-')} | {engine.get('polling_windows_kept', '-')} | {failed} | "
                     f"{engine.get('backoffs', '-')} | {(s.get('shadow_engine') or {}).get('tries', '-')} | "
                     f"{', '.join(fmt(median(s, m, 'controller_cpu_util'), 2) for m in TABLE_MODES)} |")
    return lines


def phased_table(timeline):
    modes = timeline.get("modes")
    if not modes:
        return []
    names = [m for m in ("interrupt", "poll", "oracle", "adaptive") if m in modes]
    lines = ["| phase | " + " | ".join(f"IOPS: {m}" for m in names) + " | " +
             " | ".join(f"host CPU us/IO: {m}" for m in names) + " | " +
             " | ".join(f"p50 us: {m}" for m in names) + " | oracle's mode | adaptive: completions polled | switches |",
             "|---" * (3 * len(names) + 4) + "|"]
    goals = timeline.get("goals", {})
    oracle = {g["phase"]: g.get("oracle", "-") for gs in goals.values() for g in gs}
    for i, phase in enumerate(modes[names[0]]["phases"]):
        row = [modes[m]["phases"][i] for m in names]
        cpu = [p.get("host_plus_agent_cpu_us", p["host_cpu_us"]) for p in row]
        adaptive = modes.get("adaptive", {}).get("phases", [{}] * (i + 1))[i]
        polled = adaptive.get("poll_completion_share")
        lines.append(f"| {i + 1}: {phase['name']} QD{phase['qd']} | " + " | ".join(fmt(p["iops"]) for p in row) + " | " +
                     " | ".join(fmt(c) for c in cpu) + " | " + " | ".join(fmt(p["lat_p50_us"]) for p in row) + " | "
                     f"{oracle.get(i, '-')} | {'-' if polled is None else f'{polled * 100:.0f} %'} | {adaptive.get('mode_switches', '-')} |")
    return lines


def latency_table(latency):
    """The latency points (bench/eval/latency.py): each arm's medians per point."""
    if not latency.get("points"):
        return []
    lines = ["| point | arm | IOPS | p50 us | p99 us | host CPU us/IO | reapers' cores | completions polled |",
             "|---|---|---|---|---|---|---|---|"]
    for point in latency["points"]:
        for arm, a in point["arms"].items():
            share = a["poll_completion_share"]
            lines.append(f"| {point['label']} | {arm} | {fmt(a['iops'])} | {fmt(a['lat_p50_us'])} | "
                         f"{fmt(a['lat_p99_us'])} | {fmt(a['host_cpu_us'])} | {fmt(a['host_cores'])} | "
                         f"{'-' if share is None else f'{share * 100:.0f} %'} |")
    return lines


def goal_lines(result):
    lines = []
    for where, name, goal in goal_entries(result):
        limit = f"within {goal['limit']} of 1" if name == "shadow" else f"limit {goal['limit']}"
        lines.append(f"- {where}, {name.replace('_', ' ')}: {'met' if goal['met'] else 'NOT met'} "
                     f"(ratio {fmt(goal.get('ratio'))}, {limit})")
    met = sum(1 for _, _, g in goal_entries(result) if g["met"])
    stated = "; ".join(result.get("goals", GOALS).values())
    return [f"Goals: {met} of {len(lines)} met ({stated})", ""] + lines


def markdown(result):
    configs = result["configs"]
    lines = iops_table(configs) + [""] + cpu_table(configs) + [""] + engine_table(configs) if configs else []
    node = node_goals.node_table(configs, fmt, cell, ratios, verdict)
    if len(node) > 2:
        lines += ["", "Node arm (adaptive with the node layer, issue 34):", ""] + node
    table = phased_table(result.get("timeline", {}))
    if table:
        lines += ["", "Phased run (adaptive host CPU includes the agent):", ""] + table
    table = latency_table(result.get("latency", {}))
    if table:
        lines += ["", f"Latency profile (node CPU budget {result['latency']['budget_cores']:g} core):", ""] + table
    return "\n".join(lines + [""] + goal_lines(result))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)))


if __name__ == "__main__":
    main()

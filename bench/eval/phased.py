# SPDX-License-Identifier: Apache-2.0
"""The phased run: light (QD1), heavy (QD16), light (QD1) on one queue, with the same phases in three arms:
forced interrupt, forced poll, and the agent in adaptive mode (recorded over time), the three arms repeated
PHASED_REPEATS times in turn. eval.json's `timeline` keeps the first adaptive run's fields (its windows and
switches), `modes` (each arm's phases, every figure the median over the repetitions), `repetitions` (each
repetition's phases per arm) and `goals` (medians of the paired per-repetition ratios, as the grid's)."""
import statistics

import evaluation
import traces

TIMELINE_PHASES = [("light", 8, 1), ("heavy", 12, 16), ("light", 8, 1)]  # name, seconds, queue depth
QUICK_PHASES = [("light", 4, 1), ("heavy", 5, 16), ("light", 4, 1)]
TIMELINE_MODES = ("interrupt", "poll", "adaptive")
CONFIG = dict(controllers=1, queues=1, jobs=1, qd=1)
HEAVY_GOAL = 0.95      # heavy phase: adaptive IOPS at least this times the better static mode's
LIGHT_CPU_GOAL = 1.10  # light phases: adaptive host (+ agent) CPU per completion at most this times interrupt's
PHASED_REPEATS = 5     # one light phase's host CPU per completion varied 15 % between identical phases of one run


def recorded_poll_share(windows, t_from, t_to):
    """Share of the completions of the recorded windows that ended in [t_from, t_to] reaped in poll mode."""
    mine = [w for w in windows if t_from <= w.end <= t_to]
    total = sum(w.completions for w in mine)
    return sum(w.completions for w in mine if w.mode == traces.POLL) / total if total else None


def phase_entries(plan, report, arm, started, windows, cpu_marks):
    """timeline.phases entries of one run. cpu_marks: the agent's CPU at each phase boundary (adaptive)."""
    entries, t = [], 0.0
    for index, ((name, _, qd), phase) in enumerate(zip(plan, report["phases"])):
        entry = {"name": name, "qd": qd, "start_s": t}
        entry.update(evaluation.phase_metrics(phase))
        if cpu_marks:
            evaluation.add_agent_cpu(entry, cpu_marks[index + 1] - cpu_marks[index])
        span = (started + int(t * 1e9), started + int((t + phase["seconds"]) * 1e9))
        recorded = recorded_poll_share(windows, *span) if windows else None
        entry["poll_completion_share"], entry["poll_completion_share_source"] = \
            evaluation.poll_share(report, phase, arm, recorded)
        entries.append(entry)
        t += phase["seconds"]
    return entries


def one_run(run_eval, arm, plan):
    """One phased uvnvme-load run in `arm` (interrupt, poll or adaptive). Every arm first runs a warm-up of
    --agent-warmup-seconds at the first phase's depth, not reported: the agent finds and attaches to the
    load's queues in it (about 1.6 s here), which cost the first light phase's reaper 10-18 % more host CPU
    per completion when it fell inside that phase. Times in the result count from the first phase."""
    before = run_eval.wait_until_quiet()
    warmup = run_eval.args.agent_warmup_seconds
    phases = ",".join([f"{warmup}s:qd{plan[0][2]}"] + [f"{seconds}s:qd{qd}" for _, seconds, qd in plan])
    boundaries = [warmup + sum(seconds for _, seconds, _ in plan[:i]) for i in range(len(plan))]
    pid, launched, run, report = run_eval.launch(CONFIG, arm, phases, warmup, marks=boundaries)
    report = dict(report, phases=report["phases"][1:])
    started = launched + int(warmup * 1e9)
    out = {"loadavg": run["loadavg"], "other_cpus": run["other_cpus"], "before": before,
           "device_clock": run["device_clock"], "pid": pid, "warmup_seconds": warmup}
    if arm != "adaptive":
        out["phases"] = phase_entries(plan, report, arm, started, None, None)
        return out
    windows = traces.parse_trace(run_eval.agent.trace.read_text())
    decisions = traces.parse_decisions(run_eval.agent.decisions.read_text())
    queues = sorted({w.queue for w in windows if traces.queue_pid(w.queue) == pid})
    mine = [w for w in windows if w.queue in queues]
    marks = run["agent_cpu_marks"][1:]  # from the first phase's start
    out["phases"] = phase_entries(plan, report, arm, started, mine, marks)
    out.update({
        "agent_cpu_seconds": marks[-1] - marks[0],
        "agent_found_queues_s": run["agent_found_queues_s"],
        "queues": {q: {"windows": [{"t_s": round(t, 4), "rate": round(r), "mode": m}
                                   for t, r, m in traces.rates(windows, q, started) if t >= 0],
                       "switches": [{"t_s": round((at - started) / 1e9, 4), "mode": m}
                                    for at, m in traces.mode_steps(decisions, q) if at >= started]}
                   for q in queues},
        "engine": traces.adaptive_summary(windows, decisions, pid, started, run["ended"]),
    })
    return out


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def goals(repetitions):
    """The phased run's goals, each the median over the repetitions of a ratio paired within one repetition:
    the heavy phase's IOPS against the better static mode's, each light phase's host CPU per completion
    (adaptive: + the agent) against interrupt mode's."""
    out = {"heavy_iops": [], "light_host_cpu": []}
    adaptive0 = repetitions[0]["adaptive"]["phases"]
    for i, phase in enumerate(adaptive0):
        heavy, ratios, extra = phase["name"] == "heavy", [], []
        for modes in repetitions:
            irq, poll, adaptive = (modes[m]["phases"][i] for m in TIMELINE_MODES)
            if heavy:
                best = max(poll["iops"], irq["iops"])
                ratios.append(adaptive["iops"] / best if best else None)
                extra.append("poll" if poll["iops"] > irq["iops"] else "interrupt")
            else:
                base = irq["host_cpu_us"]
                mine = adaptive.get("host_plus_agent_cpu_us", adaptive["host_cpu_us"])
                ratios.append(mine / base if mine is not None and base else None)
                extra.append(adaptive["host_cpu_us"] / base if base else None)
        ratio = median_or_none(ratios)
        if heavy:
            out["heavy_iops"].append({"phase": i, "limit": HEAVY_GOAL, "best_static": max(set(extra), key=extra.count),
                                      "ratio": ratio, "ratios": ratios,
                                      "met": ratio is not None and ratio >= HEAVY_GOAL})
        else:
            out["light_host_cpu"].append({"phase": i, "limit": LIGHT_CPU_GOAL, "ratio": ratio, "ratios": ratios,
                                          "host_only_ratio": median_or_none(extra),
                                          "met": ratio is not None and ratio <= LIGHT_CPU_GOAL})
    return out


def median_phases(runs):
    """One arm's phases with every number the median over the repetitions' same phase."""
    out = []
    for i, first in enumerate(runs[0]["phases"]):
        entry = dict(first)
        for key, value in first.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in ("qd", "start_s"):
                entry[key] = median_or_none(run["phases"][i].get(key) for run in runs)
        out.append(entry)
    return out


def timeline(run_eval, quick=False):
    """The phased runs, arms in turn, PHASED_REPEATS times (once when quick); returns eval.json's `timeline`."""
    plan = QUICK_PHASES if quick else TIMELINE_PHASES
    repetitions = []
    for rep in range(1 if quick else PHASED_REPEATS):
        modes = {}
        for arm in evaluation.arms_in_turn(TIMELINE_MODES, rep):
            modes[arm] = one_run(run_eval, arm, plan)
            print(f"eval phased {rep + 1} {arm:9s} " + "  ".join(f"{p['name']} QD{p['qd']} {p['iops']:,.0f} IOPS "
                                                       f"host {p['host_cpu_us']:.3f} us/IO" for p in modes[arm]["phases"]),
                  flush=True)
        repetitions.append(modes)
    result = dict(repetitions[0]["adaptive"])  # the first adaptive run's windows, switches and engine summary
    result["phases"] = median_phases([modes["adaptive"] for modes in repetitions])
    result["modes"] = {}
    for arm in TIMELINE_MODES:
        first = {k: v for k, v in repetitions[0][arm].items() if k not in ("queues", "engine")}
        first["phases"] = median_phases([modes[arm] for modes in repetitions])
        result["modes"][arm] = first
    result["repetitions"] = [{arm: modes[arm]["phases"] for arm in TIMELINE_MODES} for modes in repetitions]
    result["goals"] = goals(repetitions)
    return result

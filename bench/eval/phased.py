# SPDX-License-Identifier: Apache-2.0
"""The phased run: light (QD1) and heavy (QD16) phases alternating on one queue, light first and last, with the
same phases in four arms: forced interrupt, forced poll, the per-phase oracle (each phase in the better static
mode of that phase, switched by uvnvme-load itself at the phase's start), and the agent in adaptive mode
(recorded over time), repeated PHASED_REPEATS times. In each repetition the two static arms run first (in
turn), then the oracle, whose modes are chosen from them, and adaptive (in turn). eval.json's `timeline` keeps
the first adaptive run's fields (its windows and switches), `modes` (each arm's phases, every figure the median
over the repetitions), `repetitions` (each repetition's phases per arm, and the oracle's modes) and `goals`
(medians of the paired per-repetition ratios, as the grid's)."""
import evaluation
import summary
import traces

LIGHT, HEAVY = ("light", 4, 1), ("heavy", 5, 16)  # name, seconds, queue depth
TIMELINE_PHASES = [LIGHT, HEAVY] * 3 + [LIGHT]  # three heavy phases between four light ones
QUICK_PHASES = [("light", 3, 1), ("heavy", 3, 16)] * 2 + [("light", 3, 1)]
STATIC_MODES = ("interrupt", "poll")
TIMELINE_MODES = STATIC_MODES + ("oracle", "adaptive")
CONFIG = dict(controllers=1, queues=1, jobs=1, qd=1)
HEAVY_GOAL = 0.97      # heavy phases: adaptive IOPS at least this times the oracle's (issue 48)
LIGHT_CPU_GOAL = 1.05  # light phases: adaptive host + agent CPU per completion at most this times the oracle's
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


def oracle_modes(statics):
    """Each phase's better static mode in one repetition: in a heavy phase the mode with more IOPS, in a light
    phase the one with less host CPU per completion (the patch's objective: throughput per CPU)."""
    modes = []
    for irq, poll in zip(statics["interrupt"]["phases"], statics["poll"]["phases"]):
        if irq["name"] == "heavy":
            modes.append("poll" if poll["iops"] > irq["iops"] else "interrupt")
        else:
            modes.append("poll" if poll["host_cpu_us"] < irq["host_cpu_us"] else "interrupt")
    return modes


def one_run(run_eval, arm, plan, modes=None):
    """One phased uvnvme-load run in `arm` (interrupt, poll, oracle or adaptive; the oracle switches to
    modes[i] at phase i's start). Every arm first runs a warm-up of --agent-warmup-seconds at the first
    phase's depth (and, for the oracle, its mode), not reported: the agent finds and attaches to the load's
    queues in it (about 1.6 s here), which cost the first light phase's reaper 10-18 % more host CPU per
    completion when it fell inside that phase. Times in the result count from the first phase."""
    before = run_eval.wait_until_quiet()
    warmup = run_eval.args.agent_warmup_seconds
    suffix = [f":{mode}" for mode in modes] if modes else [""] * len(plan)
    phases = ",".join([f"{warmup}s:qd{plan[0][2]}{suffix[0]}"] +
                      [f"{seconds}s:qd{qd}{end}" for (_, seconds, qd), end in zip(plan, suffix)])
    boundaries = [warmup + sum(seconds for _, seconds, _ in plan[:i]) for i in range(len(plan))]
    pid, launched, run, report = run_eval.launch(CONFIG, arm, phases, warmup, marks=boundaries)
    report = dict(report, phases=report["phases"][1:])
    started = launched + int(warmup * 1e9)
    out = {"loadavg": run["loadavg"], "other_cpus": run["other_cpus"], "before": before,
           "device_clock": run["device_clock"], "pid": pid, "warmup_seconds": warmup}
    if modes:
        out["phase_modes"] = modes
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


def ratio_or_none(mine, base):
    return mine / base if mine is not None and base else None


def goals(repetitions):
    """The phased run's goals, each the median over the repetitions of a ratio paired within one repetition:
    each heavy phase's IOPS against the oracle's, each light phase's host CPU per completion (adaptive: + the
    agent) against the oracle's. Beside them, against interrupt and the better static mode, for reading."""
    out = {"heavy_iops": [], "light_host_cpu": []}
    for i, phase in enumerate(repetitions[0]["adaptive"]["phases"]):
        heavy, ratios, picked, versus_static = phase["name"] == "heavy", [], [], []
        for modes in repetitions:
            irq, poll, oracle, adaptive = (modes[m]["phases"][i] for m in TIMELINE_MODES)
            picked.append(modes["oracle"]["phase_modes"][i])
            if heavy:
                ratios.append(ratio_or_none(adaptive["iops"], oracle["iops"]))
                versus_static.append(ratio_or_none(adaptive["iops"], max(poll["iops"], irq["iops"])))
            else:
                mine = adaptive.get("host_plus_agent_cpu_us", adaptive["host_cpu_us"])
                ratios.append(ratio_or_none(mine, oracle["host_cpu_us"]))
                versus_static.append(ratio_or_none(mine, irq["host_cpu_us"]))
        ratio = summary.median_of(ratios)
        entry = {"phase": i, "ratio": ratio, "ratios": ratios, "oracle_modes": picked,
                 "oracle": max(set(picked), key=picked.count)}
        if heavy:
            out["heavy_iops"].append(dict(entry, limit=HEAVY_GOAL, versus_best_static=summary.median_of(versus_static),
                                          met=ratio is not None and ratio >= HEAVY_GOAL))
        else:
            out["light_host_cpu"].append(dict(entry, limit=LIGHT_CPU_GOAL, versus_interrupt=summary.median_of(versus_static),
                                              met=ratio is not None and ratio <= LIGHT_CPU_GOAL))
    return out


def median_phases(runs):
    """One arm's phases with every number the median over the repetitions' same phase."""
    out = []
    for i, first in enumerate(runs[0]["phases"]):
        entry = dict(first)
        for key, value in first.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in ("qd", "start_s"):
                entry[key] = summary.median_of(run["phases"][i].get(key) for run in runs)
        out.append(entry)
    return out


def timeline(run_eval, quick=False):
    """The phased runs PHASED_REPEATS times (once when quick): the static arms in turn, then the oracle (from
    them) and adaptive in turn; returns eval.json's `timeline`."""
    plan = QUICK_PHASES if quick else TIMELINE_PHASES
    repetitions = []
    for rep in range(1 if quick else PHASED_REPEATS):
        modes = {}
        for arm in evaluation.arms_in_turn(STATIC_MODES, rep) + evaluation.arms_in_turn(("oracle", "adaptive"), rep):
            modes[arm] = one_run(run_eval, arm, plan, oracle_modes(modes) if arm == "oracle" else None)
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
    result["repetitions"] = [dict({arm: modes[arm]["phases"] for arm in TIMELINE_MODES},
                                  oracle_modes=modes["oracle"]["phase_modes"]) for modes in repetitions]
    result["goals"] = goals(repetitions)
    return result

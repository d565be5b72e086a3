# SPDX-License-Identifier: Apache-2.0
"""The node arm (issue 34): nvme-adaptd in adaptive mode with the node layer (policy node_layer on), run in every
configuration beside the per-queue agent, and its goals, each on the median of paired ratios (the arms of a
repetition run back to back):
- contended (4 dev x 2 jobs, no application work): node >= 0.995 x the better static mode, at most 5 tries in
  every run;
- everywhere else: node >= the per-queue agent - 1 %;
- application work (--io-work-us): node's application work done >= 0.97 x interrupt mode's (per-queue's beside)."""
import statistics

CONTENDED_GOAL = 0.995
CONTENDED_MAX_TRIES = 5
VS_ADAPTIVE_GOAL = 0.99
APP_WORK_GOAL = 0.97
GOALS = {
    "node_contended": f"4 dev x 2 jobs: node >= {CONTENDED_GOAL} x the better static mode (median of the paired "
                      f"ratios) with at most {CONTENDED_MAX_TRIES} tries per run",
    "node_vs_adaptive": f"elsewhere: node >= {VS_ADAPTIVE_GOAL} x adaptive (median of the paired ratios)",
    "node_app_work": f"application work: node's work done >= {APP_WORK_GOAL} x interrupt's (median of the paired "
                     "ratios)",
}


def contended(config):
    return config.get("controllers") == 4 and config.get("jobs") == 8 and not config.get("io_work_us") and \
        not config.get("hog")


def paired(runs, numerator, denominators, metric="iops"):
    """Per repetition, the numerator arm's `metric` over the best of the denominator arms'."""
    ratios = []
    for rep in sorted({r["rep"] for r in runs}):
        by_mode = {r["mode"]: r for r in runs if r["rep"] == rep}
        if numerator in by_mode and all(m in by_mode for m in denominators):
            base = max((by_mode[m].get(metric) or 0) for m in denominators)
            value = by_mode[numerator].get(metric)
            if base and value is not None:
                ratios.append(value / base)
    return ratios


def goal(limit, ratios, extra_met=True, **more):
    ratio = statistics.median(ratios) if ratios else None
    return {"limit": limit, "ratio": ratio, "paired_ratios": ratios,
            "met": ratio is not None and ratio >= limit and extra_met, **more}


def add_node_goals(out, config, runs):
    """Adds the node arm's paired ratios and goals to a configuration's summary `out`."""
    if not any(r["mode"] == "node" for r in runs):
        return
    out["paired_node_over_best_static"] = paired(runs, "node", ("interrupt", "poll"))
    out["paired_node_over_adaptive"] = paired(runs, "node", ("adaptive",))
    tries = [r["engine"]["tries"] for r in runs if r["mode"] == "node" and r.get("engine")]
    out["node_tries_per_run"] = tries
    if contended(config):
        out["goal_node_contended"] = goal(CONTENDED_GOAL, out["paired_node_over_best_static"],
                                          bool(tries) and max(tries) <= CONTENDED_MAX_TRIES,
                                          max_tries=max(tries) if tries else None, tries_limit=CONTENDED_MAX_TRIES)
    else:
        out["goal_node_vs_adaptive"] = goal(VS_ADAPTIVE_GOAL, out["paired_node_over_adaptive"])
    if config.get("io_work_us"):
        node_work = paired(runs, "node", ("interrupt",), "app_work_per_second")
        adaptive_work = paired(runs, "adaptive", ("interrupt",), "app_work_per_second")
        out["goal_node_app_work"] = goal(APP_WORK_GOAL, node_work,
                                         adaptive_ratio=statistics.median(adaptive_work) if adaptive_work else None,
                                         adaptive_paired_ratios=adaptive_work)


def node_table(configs, fmt, cell, ratios, verdict):
    """The node arm's table (summary.py's formatting helpers passed in)."""
    lines = ["| configuration | adaptive IOPS | node IOPS | paired node / best static | paired node / adaptive | "
             "node tries per run | deferred tries (by reason) | node goal | application work: node, adaptive "
             "over interrupt |", "|---|---|---|---|---|---|---|---|---|"]
    for s in configs:
        if "paired_node_over_adaptive" not in s:
            continue
        engine = s.get("node_engine") or {}
        deferred = ", ".join(f"{k} {v}" for k, v in sorted(engine.get("deferred_tries", {}).items())) or "0"
        node_goal = s.get("goal_node_contended") or s.get("goal_node_vs_adaptive")
        work = s.get("goal_node_app_work")
        work_text = "-" if not work else (f"{verdict(work)}; adaptive {fmt(work.get('adaptive_ratio'))}")
        lines.append(f"| {s['config']['label']} | {cell(s, 'adaptive', 'iops')} | {cell(s, 'node', 'iops')} | "
                     f"{ratios(s.get('paired_node_over_best_static'))} | {ratios(s.get('paired_node_over_adaptive'))} | "
                     f"{', '.join(map(str, s.get('node_tries_per_run', []))) or '-'} | {deferred} | "
                     f"{verdict(node_goal)} | {work_text} |")
    return lines

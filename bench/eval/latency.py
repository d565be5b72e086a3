# SPDX-License-Identifier: Apache-2.0
"""The latency profile's points (issue 48): one queue at QD1 and QD8, four arms in turn per repetition
(interrupt, poll, the agent under its default profile, the agent under the `latency` profile), with an agent of
their own whose node layer has a CPU budget (config `node.budgetCores`; BUDGET_CORES, or
--latency-budget-cores): the budget the operator sets, by default large enough to let one queue poll. Their
own agent, so the grid's node arm keeps running without a budget. eval.json's `latency` has the runs, each arm's medians per point (IOPS, p50, p99, host CPU
per completion and in cores, completions polled) and the goals: the latency profile's p50 within P50_GOAL x
poll's, its reapers' CPU within the budget, and the default profile unchanged at QD1 (it keeps interrupt)."""
import os

import summary
from agent_session import AgentSession

CONFIGS = [dict(controllers=1, queues=1, jobs=1, qd=qd) for qd in (1, 8)]
ARMS = ("interrupt", "poll", "adaptive", "latency")
BUDGET_CORES = 1.0
P50_GOAL = 1.10          # latency profile: median of the paired p50 ratios to poll's at most this
DEFAULT_QD1_POLLED = 0.05  # default profile at QD1: at most this share of completions polled (it stays in interrupt)
REPEATS = 3
GOALS = {
    "latency_p50": f"QD1 and QD8, latency profile under a node CPU budget (--latency-budget-cores, {BUDGET_CORES:g} "
                   f"by default): p50 <= {P50_GOAL} x poll's (median of the paired ratios)",
    "latency_cpu": "QD1 and QD8, latency profile: its reapers' CPU in cores <= the node budget (median over the "
                   "repetitions)",
    "default_qd1": f"QD1 beside it: the default profile polls <= {DEFAULT_QD1_POLLED * 100:.0f} % of completions "
                   "(unchanged: interrupt mode)",
}


def host_cores(run):
    """The reaper threads' CPU in cores: CPU per completion x completions per second."""
    cpu, iops = run.get("host_cpu_us"), run.get("iops")
    return cpu * iops / 1e6 if cpu is not None and iops else None


def summarize(config_label, runs, budget_cores=BUDGET_CORES):
    """One point: each arm's medians and the goals, from its runs (every arm of every repetition)."""
    arms = {}
    for arm in ARMS:
        mine = [r for r in runs if r["mode"] == arm]
        arms[arm] = {key: summary.median_of([r.get(key) for r in mine]) for key in
                     ("iops", "lat_p50_us", "lat_p99_us", "host_cpu_us", "host_plus_agent_cpu_us",
                      "poll_completion_share")}
        arms[arm]["host_cores"] = summary.median_of([host_cores(r) for r in mine])
    p50_ratios, cores = [], []
    for rep in sorted({r["rep"] for r in runs}):
        by_arm = {r["mode"]: r for r in runs if r["rep"] == rep}
        if "latency" in by_arm and "poll" in by_arm and by_arm["poll"].get("lat_p50_us"):
            p50_ratios.append(by_arm["latency"]["lat_p50_us"] / by_arm["poll"]["lat_p50_us"])
        if "latency" in by_arm:
            cores.append(host_cores(by_arm["latency"]))
    p50 = summary.median_of(p50_ratios)
    used = summary.median_of(cores)
    out = {"label": config_label, "arms": arms,
           "goal_latency_p50": {"ratio": p50, "ratios": p50_ratios, "limit": P50_GOAL,
                                "met": p50 is not None and p50 <= P50_GOAL},
           "goal_latency_cpu": {"ratio": used, "cores": cores, "limit": budget_cores,
                                "met": used is not None and used <= budget_cores}}
    if config_label.endswith("QD1"):
        polled = arms["adaptive"]["poll_completion_share"]
        out["goal_default_qd1"] = {"ratio": polled, "limit": DEFAULT_QD1_POLLED,
                                   "met": polled is not None and polled <= DEFAULT_QD1_POLLED}
    return out


def run(evaluation, args, label):
    """The latency points with their own agent; returns eval.json's `latency`."""
    budget = args.latency_budget_cores
    agent = AgentSession(args.build, args.agent_cpus, args.policy, node={"budgetCores": budget})
    saved, evaluation.agent = evaluation.agent, agent
    agent.start()
    try:
        runs = evaluation.grid(CONFIGS, ARMS, 1 if args.quick else REPEATS)
    finally:
        agent.stop()
        evaluation.agent = saved
        agent.discard(keep_trace_as=os.path.join(args.results, "eval-latency.trace"))
    points = [summarize(label(config), [r for r in runs if r["config"] == label(config)], budget)
              for config in CONFIGS]
    return {"budget_cores": budget, "arms": ARMS, "points": points, "runs": runs}

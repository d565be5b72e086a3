#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Adaptive versus static reaping on uvnvme (issues #9, #14, #34, #48). For every grid configuration, repeated,
six uvnvme-load runs back to back: reaping forced to interrupt, forced to poll, left to nvme-adaptd in adaptive
mode, in interrupt mode with nvme-adaptd attached in shadow mode (observing, never switching), left to
nvme-adaptd in adaptive mode with its node layer (the `node` arm), and in adaptive mode under the patch's
profile (the `patch` arm); the order rotates from one repetition to the next. Then the phased run (light and
heavy phases alternating) in interrupt, poll, per-phase oracle and adaptive mode, the adaptive one recorded
over time (bench/eval/phased.py). Then the latency profile's points, QD1 and QD8 with an agent whose node layer
has a CPU budget (bench/eval/latency.py). The kernel's real-time bandwidth limit is lifted for the
whole evaluation (bench/rt_budget.py). Writes RESULTS/eval.json, eval-grid.png, eval-timeline.png and the
agent's traces (eval.trace, eval.trace.decisions; eval-latency.trace*). Needs root (the agent's BPF collector).

Usage: bench/eval/eval_bench.py BUILD_DIR RESULTS_DIR [--measure-seconds S] [--repeats N] [--quick]
       [--only ...] [--skip-grid] [--skip-phased] [--skip-latency]"""
import argparse
import contextlib
import json
import os
import pathlib
import signal
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import device_cpu  # noqa: E402  (bench/device_cpu.py)
import rt_budget  # noqa: E402  (bench/rt_budget.py)
import stall_probe  # noqa: E402  (bench/stall_probe.py)

import latency  # noqa: E402
import phased  # noqa: E402
import plots  # noqa: E402
import summary  # noqa: E402
import switches  # noqa: E402
from agent_session import AgentError  # noqa: E402
from evaluation import Evaluation, label, repeats_of  # noqa: E402

SINGLE = [dict(controllers=1, queues=1, jobs=1, qd=qd) for qd in (1, 8, 32, 64, 128)]
CONTENDED = [dict(controllers=4, queues=2, jobs=8, qd=qd) for qd in (32, 64, 128)]
# Issue 34's two: the contended layout with the application's own work per completion, where polling reapers
# take CPU from the application (its work done is measured), and one device beside a CPU hog on its reaper's CPU.
APP_WORK = [dict(controllers=4, queues=2, jobs=8, qd=32, io_work_us=2)]
HOG = [dict(controllers=1, queues=1, jobs=1, qd=32, hog=True)]
# Issue 48's device, whose completion times vary: 30 % writes at 50 us against 20 us reads, and up to 40 us of
# uniform jitter on each, at QD8, 32 and 64 on one queue and at QD32 on 3 controllers x 2 queues.
JITTER_DEVICE = dict(rwmixread=70, write_latency_us=50, jitter_us=40)
JITTERED = [dict(controllers=1, queues=1, jobs=1, qd=qd, **JITTER_DEVICE) for qd in (8, 32, 64)] + \
    [dict(controllers=3, queues=2, jobs=6, qd=32, **JITTER_DEVICE)]
RUN_OVERHEAD_S = 0.6  # per uvnvme-load run: start, drain, report, the harness's parsing (measured in --quick)


def estimate_minutes(args, configs):
    """The evaluation's expected duration on a quiet machine, and the most waiting for quiet on top."""
    static = args.warmup_seconds + args.measure_seconds + RUN_OVERHEAD_S
    agent = args.agent_warmup_seconds + args.measure_seconds + RUN_OVERHEAD_S
    agent_arms = len(summary.MODES) - 2
    per_point = 2 * static + agent_arms * agent + 1.0  # + the 1 s quiet probe before each configuration
    plan = phased.QUICK_PHASES if args.quick else phased.TIMELINE_PHASES
    phased_runs = 0 if args.skip_phased else len(phased.TIMELINE_MODES) * (1 if args.quick else phased.PHASED_REPEATS)
    phased_run = args.agent_warmup_seconds + sum(seconds for _, seconds, _ in plan)  # every arm warms up
    timeline = phased_runs * (phased_run + RUN_OVERHEAD_S + 1.0)
    latency_points = 0 if args.skip_latency else len(latency.CONFIGS) * (1 if args.quick else latency.REPEATS)
    latency_point = 2 * static + (len(latency.ARMS) - 2) * agent + 1.0
    points = sum(repeats_of(config, args) for config in configs)
    return (points * per_point + timeline + latency_points * latency_point + 10.0) / 60, \
        args.max_total_quiet_wait_seconds / 60


def flat_summary(summaries, timeline, latency_points):
    """The headline numbers, flat (bench/summarize.py prints them)."""
    flat = {}
    for s in summaries:
        key = s["config"]["label"].replace(" ", "_")
        for mode in summary.MODES:
            if (iops := summary.median(s, mode, "iops")) is not None:
                flat[f"{key}_{mode}_iops"] = iops
        for name in ("adaptive_vs_interrupt_pct", "adaptive_vs_best_static_pct", "shadow_vs_interrupt_pct",
                     "paired_adaptive_over_best_static_median", "paired_shadow_over_interrupt_median"):
            if s.get(name) is not None:
                flat[f"{key}_{name}"] = s[name]
        for name in ("paired_node_over_best_static", "paired_node_over_adaptive", "paired_patch_over_best_static"):
            if s.get(name):
                flat[f"{key}_{name}_median"] = statistics.median(s[name])
        if (share := summary.median(s, "adaptive", "poll_completion_share")) is not None:
            flat[f"{key}_adaptive_poll_completion_share"] = share
        if "goal_qd1_cpu" in s and s["goal_qd1_cpu"]["host_ratio"] is not None:
            flat[f"{key}_adaptive_over_interrupt_host_cpu"] = s["goal_qd1_cpu"]["host_ratio"]
    for mode, run in timeline.get("modes", {}).items():
        for index, phase in enumerate(run["phases"], 1):
            flat[f"phased_{index}_{phase['name']}_{mode}_iops"] = phase["iops"]
    for point in latency_points.get("points", []):
        for arm, figures in point["arms"].items():
            flat[f"latency_{point['label'].replace(' ', '_')}_{arm}_p50_us"] = figures["lat_p50_us"]
    goals = summary.goal_entries({"configs": summaries, "timeline": timeline, "latency": latency_points})
    flat["goals_checked"] = len(goals)
    flat["goals_met"] = sum(1 for _, _, goal in goals if goal["met"])
    return flat


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("results")
    parser.add_argument("--measure-seconds", type=float, default=6.0)
    parser.add_argument("--warmup-seconds", type=float, default=1.0, help="static runs, not measured")
    parser.add_argument("--agent-warmup-seconds", type=float, default=3.0,
                        help="adaptive and shadow runs, not measured: the agent's discovery runs every 2 s")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--qd1-repeats", type=int, default=7,
                        help="repetitions of the QD1 configurations, whose CPU goal is a median of paired ratios: "
                             "one run's wake-up cost there is bimodal, so it needs more pairs than the rest")
    parser.add_argument("--agent-cpus", type=lambda text: {int(c) for c in text.split(",")}, default=None,
                        help="pin nvme-adaptd to these CPUs (default: the host CPUs, every CPU but the "
                             "emulated device's, where the reapers run too)")
    parser.add_argument("--policy", type=json.loads, default=None,
                        help='engine policy in JSON, e.g. \'{"paceSlackNs": 100000}\' (diagnosis; default: the defaults)')
    parser.add_argument("--only", default=None, help="comma-separated QD list of single-device configurations "
                        "and 'contended', 'work', 'hog', 'jitter' (or 'jitter:QD': its one-queue configuration "
                        "at that depth) (diagnosis; default: the whole grid)")
    parser.add_argument("--quiet-cpus", type=float, default=0.25,
                        help="before each configuration wait until other work uses at most this many CPUs")
    parser.add_argument("--max-quiet-wait-seconds", type=float, default=60.0, help="per configuration")
    parser.add_argument("--max-total-quiet-wait-seconds", type=float, default=300.0, help="for the whole evaluation")
    parser.add_argument("--skip-phased", action="store_true", help="the grid only, no phased run (diagnosis)")
    parser.add_argument("--skip-grid", action="store_true", help="no grid (diagnosis)")
    parser.add_argument("--skip-latency", action="store_true",
                        help="no latency-profile points (QD1 and QD8 with a node CPU budget) (diagnosis)")
    parser.add_argument("--latency-budget-cores", type=float, default=latency.BUDGET_CORES,
                        help="the latency points' node CPU budget in cores (default: %(default)s, one polling queue)")
    parser.add_argument("--quick", action="store_true", help="one repetition of 3 s runs, a few configurations "
                        "(those of --only if given), a shorter phased run")
    args = parser.parse_args()
    configs = SINGLE + CONTENDED + APP_WORK + HOG + JITTERED
    if args.only:
        wanted = args.only.split(",")
        configs = [c for c in SINGLE if str(c["qd"]) in wanted] + (CONTENDED if "contended" in wanted else []) + \
            (APP_WORK if "work" in wanted else []) + (HOG if "hog" in wanted else []) + \
            [c for c in JITTERED if "jitter" in wanted or (c["controllers"] == 1 and f"jitter:{c['qd']}" in wanted)]
    if args.agent_cpus is None and len(cpus := sorted(os.sched_getaffinity(0))) >= 2:
        args.agent_cpus = set(cpus[:-1])
    if args.quick:
        args.measure_seconds, args.repeats, args.qd1_repeats = 3.0, 1, 1
        configs = configs if args.only else [SINGLE[0], SINGLE[2], CONTENDED[0]]
    if args.skip_grid and args.skip_phased and args.skip_latency:
        parser.error("--skip-grid, --skip-phased and --skip-latency leave nothing to run")
    return args, [] if args.skip_grid else configs


def device_cpu_kept_free():
    """The emulated device's CPU kept to the device (bench/device_cpu.py), where it has one of its own."""
    cpus = sorted(os.sched_getaffinity(0))
    return device_cpu.exclusive(cpus[-1]) if len(cpus) >= 2 else contextlib.nullcontext({"cpu": None})


def run_all(evaluation, configs, args):
    """The grid, the phased runs and the latency points, the real-time limit lifted and the device's CPU kept free; what was
    recorded, rt_budget's dict and device_cpu's."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("eval_bench: terminated"))
    try:
        with rt_budget.lifted() as rt, device_cpu_kept_free() as device:
            print(f"eval: real-time limit: {rt}; device CPU: {device.get('cpu')}", flush=True)
            machine = [machine_stall(args, device)]
            evaluation.agent.start()
            runs = evaluation.grid(configs)
            timeline = {} if args.skip_phased else phased.timeline(evaluation, quick=args.quick)
            evaluation.agent.stop()
            latency_points = {} if args.skip_latency else latency.run(evaluation, args, label)
            machine.append(machine_stall(args, device))
    except (AgentError, OSError, ValueError) as error:
        sys.exit(f"eval_bench: {error}")
    finally:  # also on SIGINT and SIGTERM: nothing of ours keeps running
        if evaluation.process is not None:
            evaluation.process.kill()
            evaluation.process.wait()
        if evaluation.agent.alive():
            evaluation.agent.stop()
        evaluation.agent.discard(keep_trace_as=os.path.join(args.results, "eval.trace"))
    device["machine_stall"] = machine
    return runs, timeline, latency_points, rt, device


def machine_stall(args, device):
    """The device CPU's own stall floor (bench/stall_probe.py), measured alone before and after the runs."""
    if device.get("cpu") is None:
        return {"error": "no CPU of the device's own"}
    result = stall_probe.measure(args.build, device["cpu"], 5.0)
    print(f"eval: the device CPU's own longest gap (a thread reading the clock, 5 s): "
          f"{stall_probe.describe(result)}", flush=True)
    return result


def switch_timeline(results):
    """The applied switches' steps per lever and direction (bench/eval/switches.py) from the recorded trace."""
    try:
        with open(os.path.join(results, "eval.trace")) as f:
            return switches.summarize(f.read().splitlines())
    except OSError as error:
        return {"error": f"eval.trace unreadable: {error}"}


def device_timing(runs):
    """Per configuration, the device's worst figures over every run: the longest gap between completions
    (a stalled device shows here: the real-time throttle or the fair server stopped it for tens of ms)
    and the worst p99 lateness."""
    out = {}
    for run in runs:
        entry = out.setdefault(run["config"], {"interval_max_us": None, "lateness_p99_us": None})
        for key, field in (("interval_max_us", "device_interval_max_us"), ("lateness_p99_us", "device_lateness_p99_us")):
            if run.get(field) is not None:
                entry[key] = max(entry[key] or 0.0, run[field])
    return out


def device_clocks(runs, timeline):
    """The device clocks uvnvme-load reported ('not reported' for a build without --device-clock)."""
    seen = [r.get("device_clock") for r in runs] + [m.get("device_clock") for m in timeline.get("modes", {}).values()]
    return sorted({"not reported" if c is None else str(c) for c in seen})


def poll_share_sources(runs):
    """Where the adaptive runs' poll_completion_share came from, and how often."""
    sources = {}
    for r in runs:
        if r["mode"] == "adaptive":
            sources[r["poll_completion_share_source"]] = sources.get(r["poll_completion_share_source"], 0) + 1
    return sources


def main():
    args, configs = parse_args()
    if os.geteuid() != 0:
        sys.exit("eval_bench: needs root: nvme-adaptd loads BPF programs and uvnvme-load runs its device SCHED_FIFO")
    os.makedirs(args.results, exist_ok=True)
    minutes, quiet = estimate_minutes(args, configs)
    then = "" if args.skip_phased else (f", then {len(phased.TIMELINE_MODES)} phased arms x "
                                        f"{1 if args.quick else phased.PHASED_REPEATS}")
    if not args.skip_latency:
        then += (f", then {len(latency.CONFIGS)} latency points x {len(latency.ARMS)} arms x "
                 f"{1 if args.quick else latency.REPEATS}")
    print(f"eval: {len(configs)} configurations x {len(summary.MODES)} arms x {args.repeats} repetitions of "
          f"{args.measure_seconds:g} s{then}: about {minutes:.0f} min "
          f"on a quiet machine (+ up to {quiet:.0f} min waiting for quiet)", flush=True)
    began, load_before = time.time(), os.getloadavg()
    evaluation = Evaluation(args)
    runs, timeline, latency_points, rt, device = run_all(evaluation, configs, args)

    summaries = []
    for config in configs:
        config = dict(config, label=label(config))
        summaries.append(summary.summarize_config(config, [r for r in runs if r["config"] == config["label"]]))
    result = {
        "tool": "bench/eval/eval_bench.py", "command": sys.argv,
        "model": "uvnvme defaults: media, 20 us reads, 500k IOPS and 3200 MB/s per controller, no jitter; the "
                 f"jittered configurations: {JITTER_DEVICE}",
        "placement": " ".join(evaluation.placement) or "none (one CPU)",
        "device_clock": device_clocks(runs, timeline), "rt_budget": rt, "device_cpu": device,
        "device_timing": device_timing(runs),
        "agent_cpus": sorted(args.agent_cpus) if args.agent_cpus else "not pinned",
        "policy": args.policy or "engine defaults",
        "shadow_arm": "uvnvme-load --mode external (interrupt mode, never switched) with the agent's global default "
                      "mode set to shadow (nvme-adaptctl policy set --mode shadow) before the run",
        "measure_seconds": args.measure_seconds, "warmup_seconds": args.warmup_seconds,
        "agent_warmup_seconds": args.agent_warmup_seconds, "repeats": args.repeats, "qd1_repeats": args.qd1_repeats,
        "estimated_minutes": round(minutes, 1),
        "started_unix": round(began), "minutes": round((time.time() - began) / 60, 1),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "units": "CPU in microseconds per completion (= CPU seconds per million completions): process = the "
                 "whole uvnvme-load process (reapers, emulated controllers, socket); host = the reaper threads; "
                 "controller = the emulated device threads; agent = nvme-adaptd (/proc/PID/stat) over the "
                 "measured part of adaptive and shadow runs. Medians with min and max over the repetitions. "
                 "poll_completion_share: completions reaped in poll mode / completed, from the driver "
                 "(poll_completed) where it reports it (poll_completion_share_sources says). other_cpus: CPUs "
                 "busy with work other than the evaluation's during a run (/proc/stat less the evaluation's "
                 "processes); loadavg is recorded too but counts the evaluation's own spinning threads.",
        "poll_completion_share_sources": poll_share_sources(runs),
        "goals": dict(summary.GOALS,
                      phased_heavy=f"phased run, every heavy phase: adaptive >= {phased.HEAVY_GOAL} x the oracle's "
                                   "IOPS (each phase in its better static mode)",
                      phased_light=f"phased run, every light phase: adaptive host + agent CPU per completion <= "
                                   f"{phased.LIGHT_CPU_GOAL} x the oracle's", **latency.GOALS),
        "summary": flat_summary(summaries, timeline, latency_points), "configs": summaries, "timeline": timeline,
        "latency": latency_points, "runs": runs,
        "switch_timeline": switch_timeline(args.results),
    }
    out = os.path.join(args.results, "eval.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    plots.draw(result, args.results)
    print(summary.markdown(result))
    print(f"eval_bench: {out}, eval-grid.png, eval-timeline.png ({result['minutes']} min, "
          f"estimated {minutes:.0f})")
    unmet = sorted({where for where, _, goal in summary.goal_entries(result) if not goal["met"]})
    if unmet:
        print(f"eval_bench: goal not met at: {', '.join(unmet)} (see docs/evaluation.md)")


if __name__ == "__main__":
    main()

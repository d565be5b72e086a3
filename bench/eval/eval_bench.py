#!/usr/bin/env python3
"""Adaptive versus static reaping on uvnvme (issue #9). For every grid configuration, repeated, three
uvnvme-load runs back to back: reaping forced to interrupt, forced to poll, and left to nvme-adaptd in
adaptive mode (the order rotates from one repetition to the next). Then one phased run (light, heavy,
light) with the agent, recorded over time. Writes RESULTS/eval.json, eval-grid.png, eval-timeline.png and
the agent's trace (eval.trace, eval.trace.decisions). Needs root (the agent's BPF collector).

Usage: bench/eval/eval_bench.py BUILD_DIR RESULTS_DIR [--measure-seconds S] [--repeats N] [--quick]"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import machine
import plots
import summary
import traces
from agent_session import AgentError, AgentSession

SINGLE = [dict(controllers=1, queues=1, jobs=1, qd=qd) for qd in (1, 8, 32, 64, 128)]
CONTENDED = [dict(controllers=4, queues=2, jobs=8, qd=qd) for qd in (32, 64, 128)]
TIMELINE_PHASES = [("light", 8, 1), ("heavy", 12, 16), ("light", 8, 1)]  # name, seconds, queue depth


def label(config):
    if config["controllers"] == 1 and config["jobs"] == 1:
        return f"1 dev QD{config['qd']}"
    return f"{config['controllers']} dev x {config['jobs'] // config['controllers']} jobs QD{config['qd']}"


def per_completion_us(cpu_seconds, completed):
    return cpu_seconds / completed * 1e6 if completed else None


class Evaluation:
    def __init__(self, args):
        self.args = args
        self.load = os.path.join(args.build, "uvnvme/uvnvme-load")
        if not os.access(self.load, os.X_OK):
            raise AgentError(f"{self.load} missing: build the project first")
        self.placement = machine.placement()
        self.agent = AgentSession(args.build, args.agent_cpus, args.policy)
        self.process = None  # the uvnvme-load running now, stopped if the evaluation is interrupted
        self.quiet_wait_left = args.max_total_quiet_wait_seconds

    def wait_until_quiet(self):
        """Before a configuration: let other work on the shared machine finish, within the time budget."""
        waited, other = machine.wait_until_quiet(self.agent.cpu_seconds, self.args.quiet_cpus,
                                                 min(self.args.max_quiet_wait_seconds, self.quiet_wait_left))
        self.quiet_wait_left = max(0.0, self.quiet_wait_left - waited)
        return {"quiet_wait_s": round(waited, 1), "other_cpus": round(other, 3)}

    def command(self, config, mode, phases):
        command = [self.load, "--json", "--controllers", str(config["controllers"]), "--queues",
                   str(config["queues"]), "--jobs", str(config["jobs"]), "--phases", phases] + self.placement
        if mode == "adaptive":
            return command + ["--mode", "external", "--runtime-dir", str(self.agent.runtime_dir)]
        return command + ["--mode", mode, "--no-socket"]

    def launch(self, config, mode, phases, warmup_s):
        """Runs uvnvme-load; for adaptive runs waits for the agent to take its queues and samples the
        agent's CPU at the start and end of the measured part (after warmup_s). Measures the other work
        on the machine meanwhile."""
        queues = config["controllers"] * config["queues"]
        run = {"loadavg": [round(x, 2) for x in os.getloadavg()]}
        agent_at_launch = self.agent.cpu_seconds()
        sampler = machine.Sampler()
        started = time.monotonic_ns()
        self.process = subprocess.Popen(self.command(config, mode, phases), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        if mode == "adaptive":
            found = self.agent.wait_for_queues(self.process.pid, queues, warmup_s, self.process)
            run["agent_found_queues_s"] = found
            time.sleep(max(0.0, started / 1e9 + warmup_s - time.monotonic()))
            agent_at_measure = self.agent.cpu_seconds()
        stdout, stderr = self.process.communicate()
        pid, status, self.process = self.process.pid, self.process.returncode, None
        run["ended"] = time.monotonic_ns()
        agent_at_end = self.agent.cpu_seconds()
        run["other_cpus"] = round(sampler.other_cpus(agent_at_end - agent_at_launch), 3)
        if mode == "adaptive":
            run["agent_cpu_seconds"] = agent_at_end - agent_at_measure
        if status != 0:
            raise AgentError(f"uvnvme-load ({label(config)}, {mode}) failed with {status}: {stderr.strip()}")
        report = json.loads(stdout)
        if report.get("protocol_errors"):
            raise AgentError(f"uvnvme-load ({label(config)}, {mode}): {report['protocol_errors']} protocol errors")
        return pid, started, run, report

    def grid_run(self, config, mode, rep):
        warmup = self.args.agent_warmup_seconds if mode == "adaptive" else self.args.warmup_seconds
        measure = self.args.measure_seconds
        phases = f"{warmup}s:qd{config['qd']},{measure}s:qd{config['qd']}"
        pid, started, run, report = self.launch(config, mode, phases, warmup)
        phase = report["phases"][1]
        done = phase["completed"]
        run.update({
            "config": label(config), "mode": mode, "rep": rep, "pid": pid, "seconds": phase["seconds"],
            "completed": done, "iops": phase["iops"], "lat_p50_us": phase["lat_p50_us"],
            "lat_p99_us": phase["lat_p99_us"],
            "process_cpu_us": per_completion_us(phase["cpu_seconds"], done),
            "host_cpu_us": per_completion_us(phase["host_cpu_seconds"], done),
            "controller_cpu_us": per_completion_us(phase["controller_cpu_seconds"], done),
            "wakeups_per_completion": phase["wakeups"] / done if done else None,
            # Share of its CPU the emulated device used: at 0.95 it is the real-time bandwidth limit
            # (kernel.sched_rt_runtime_us), which pauses it for up to 50 ms a second, in every mode.
            "controller_cpu_util": phase["controller_cpu_seconds"] / phase["seconds"] if phase["seconds"] else None,
            "mode_switches": phase["mode_switches"],
        })
        if mode == "adaptive":
            measured_from = started + int(warmup * 1e9)
            run["agent_cpu_us"] = per_completion_us(run["agent_cpu_seconds"], done)
            run["host_plus_agent_cpu_us"] = run["host_cpu_us"] + run["agent_cpu_us"]
            run["process_plus_agent_cpu_us"] = run["process_cpu_us"] + run["agent_cpu_us"]
            run["agent_late"] = run["agent_found_queues_s"] is None
            windows = traces.parse_trace(self.agent.trace.read_text())
            decisions = traces.parse_decisions(self.agent.decisions.read_text())
            run["engine"] = traces.adaptive_summary(windows, decisions, pid, measured_from, run["ended"])
            run["poll_time_share"] = run["engine"]["poll_time_share"]
        else:
            run["host_plus_agent_cpu_us"] = run["host_cpu_us"]
            run["process_plus_agent_cpu_us"] = run["process_cpu_us"]
        run.pop("ended")
        return run

    def grid(self, configs):
        runs = []
        total = len(configs) * 3 * self.args.repeats
        for rep in range(self.args.repeats):
            order = summary.MODES[rep % 3:] + summary.MODES[:rep % 3]
            for config in configs:
                before = self.wait_until_quiet()
                for mode in order:
                    run = self.grid_run(config, mode, rep)
                    run["before"] = before
                    runs.append(run)
                    extra = ""
                    if mode == "adaptive":
                        share = run["poll_time_share"]
                        extra = (f"  agent {run['agent_cpu_us']:.3f} us/IO, polling "
                                 f"{'-' if share is None else f'{share * 100:.0f} %'}"
                                 f"{', AGENT LATE' if run['agent_late'] else ''}")
                    print(f"eval [{len(runs)}/{total}] rep {rep} {run['config']:22s} {mode:9s} "
                          f"{run['iops']:10,.0f} IOPS  p50 {run['lat_p50_us']:6.1f} us  "
                          f"host {run['host_cpu_us']:.3f} us/IO  other work {run['other_cpus']:.2f} CPUs{extra}", flush=True)
        return runs

    def timeline(self):
        config = dict(controllers=1, queues=1, jobs=1, qd=1)
        phases = ",".join(f"{seconds}s:qd{qd}" for _, seconds, qd in TIMELINE_PHASES)
        warmup = self.args.agent_warmup_seconds
        before = self.wait_until_quiet()
        pid, started, run, report = self.launch(config, "adaptive", phases, warmup)
        windows = traces.parse_trace(self.agent.trace.read_text())
        decisions = traces.parse_decisions(self.agent.decisions.read_text())
        queues = sorted({w.queue for w in windows if traces.queue_pid(w.queue) == pid})
        boundaries, t = [], 0.0
        for (name, seconds, qd), phase in zip(TIMELINE_PHASES, report["phases"]):
            boundaries.append({"name": name, "qd": qd, "start_s": t, "seconds": phase["seconds"],
                               "iops": phase["iops"], "lat_p50_us": phase["lat_p50_us"],
                               "host_cpu_us": per_completion_us(phase["host_cpu_seconds"], phase["completed"]),
                               "mode_switches": phase["mode_switches"]})
            t += phase["seconds"]
        return {
            "phases": boundaries, "loadavg": run["loadavg"], "other_cpus": run["other_cpus"],
            "before": before,
            "agent_cpu_seconds": run["agent_cpu_seconds"],
            "agent_found_queues_s": run["agent_found_queues_s"],
            "queues": {q: {"windows": [{"t_s": round(t, 4), "rate": round(r), "mode": m}
                                       for t, r, m in traces.rates(windows, q, started)],
                           "switches": [{"t_s": round((at - started) / 1e9, 4), "mode": m}
                                        for at, m in traces.mode_steps(decisions, q)]}
                       for q in queues},
            "engine": traces.adaptive_summary(windows, decisions, pid, started, run["ended"]),
        }


def flat_summary(summaries):
    """The headline numbers, flat (bench/summarize.py prints them)."""
    flat = {}
    for s in summaries:
        key = s["config"]["label"].replace(" ", "_")
        for mode in summary.MODES:
            if (iops := summary.median(s, mode, "iops")) is not None:
                flat[f"{key}_{mode}_iops"] = iops
        for name in ("adaptive_vs_interrupt_pct", "adaptive_vs_best_static_pct"):
            if name in s:
                flat[f"{key}_{name}"] = s[name]
        if "goal_qd1_cpu" in s and s["goal_qd1_cpu"]["host_ratio"] is not None:
            flat[f"{key}_adaptive_over_interrupt_host_cpu"] = s["goal_qd1_cpu"]["host_ratio"]
    flat["goals_checked"] = sum(1 for s in summaries if "goal_iops" in s) + sum(1 for s in summaries if "goal_qd1_cpu" in s)
    flat["goals_met"] = sum(1 for s in summaries if s.get("goal_iops", {}).get("met")) + \
        sum(1 for s in summaries if s.get("goal_qd1_cpu", {}).get("met"))
    return flat


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("results")
    parser.add_argument("--measure-seconds", type=float, default=10.0)
    parser.add_argument("--warmup-seconds", type=float, default=1.0, help="static runs, not measured")
    parser.add_argument("--agent-warmup-seconds", type=float, default=3.0,
                        help="adaptive runs, not measured: the agent's discovery runs every 2 s")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--agent-cpus", type=lambda text: {int(c) for c in text.split(",")}, default=None,
                        help="pin nvme-adaptd to these CPUs, e.g. 1 (diagnosis; default: not pinned)")
    parser.add_argument("--policy", type=json.loads, default=None,
                        help='engine policy in JSON, e.g. \'{"paceSlackNs": 100000}\' (diagnosis; default: the defaults)')
    parser.add_argument("--only", default=None, help="comma-separated QD list of single-device configurations "
                        "and 'contended' (diagnosis; default: the whole grid)")
    parser.add_argument("--quiet-cpus", type=float, default=0.25,
                        help="before each configuration wait until other work uses at most this many CPUs")
    parser.add_argument("--max-quiet-wait-seconds", type=float, default=60.0, help="per configuration")
    parser.add_argument("--max-total-quiet-wait-seconds", type=float, default=300.0, help="for the whole evaluation")
    parser.add_argument("--quick", action="store_true", help="one repetition of 3 s runs, a few configurations")
    args = parser.parse_args()
    configs = SINGLE + CONTENDED
    if args.only:
        wanted = args.only.split(",")
        configs = [c for c in SINGLE if str(c["qd"]) in wanted] + (CONTENDED if "contended" in wanted else [])
    if args.quick:
        args.measure_seconds, args.repeats = 3.0, 1
        configs = [SINGLE[0], SINGLE[2], CONTENDED[0]]
    if os.geteuid() != 0:
        sys.exit("eval_bench: needs root: nvme-adaptd loads BPF programs and uvnvme-load runs its device SCHED_FIFO")
    os.makedirs(args.results, exist_ok=True)
    began, load_before = time.time(), os.getloadavg()

    evaluation = Evaluation(args)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("eval_bench: terminated"))
    try:
        evaluation.agent.start()
        runs = evaluation.grid(configs)
        timeline = evaluation.timeline()
        evaluation.agent.stop()
    except (AgentError, OSError, ValueError) as error:
        sys.exit(f"eval_bench: {error}")
    finally:  # also on SIGINT and SIGTERM: nothing of ours keeps running
        if evaluation.process is not None:
            evaluation.process.kill()
            evaluation.process.wait()
        if evaluation.agent.alive():
            evaluation.agent.stop()
        for suffix in ("", ".decisions"):
            if (evaluation.agent.workdir / f"trace{suffix}").exists():
                shutil.copy(evaluation.agent.workdir / f"trace{suffix}", os.path.join(args.results, f"eval.trace{suffix}"))
        shutil.rmtree(evaluation.agent.workdir, ignore_errors=True)

    summaries = []
    for config in configs:
        config = dict(config, label=label(config))
        summaries.append(summary.summarize_config(config, [r for r in runs if r["config"] == config["label"]]))
    result = {
        "tool": "bench/eval/eval_bench.py", "command": sys.argv,
        "model": "uvnvme defaults: media, 20 us reads, 500k IOPS and 3200 MB/s per controller, no jitter",
        "placement": " ".join(evaluation.placement) or "none (one CPU)",
        "agent_cpus": sorted(args.agent_cpus) if args.agent_cpus else "not pinned",
        "policy": args.policy or "engine defaults",
        "measure_seconds": args.measure_seconds, "warmup_seconds": args.warmup_seconds,
        "agent_warmup_seconds": args.agent_warmup_seconds, "repeats": args.repeats,
        "started_unix": round(began), "minutes": round((time.time() - began) / 60, 1),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "units": "CPU in microseconds per completion (= CPU seconds per million completions): process = the "
                 "whole uvnvme-load process (reapers, emulated controllers, socket); host = the reaper threads; "
                 "controller = the emulated device threads; agent = nvme-adaptd (/proc/PID/stat) over the "
                 "measured part of adaptive runs. Medians with min and max over the repetitions. other_cpus: CPUs "
                 "busy with work other than the evaluation's during a run (/proc/stat less the evaluation's "
                 "processes); loadavg is recorded too but counts the evaluation's own spinning threads.",
        "goals": {"iops": f"adaptive >= {summary.IOPS_GOAL} x the better static mode (medians)",
                  "qd1_cpu": f"at QD1 adaptive host + agent CPU per completion <= {summary.QD1_CPU_GOAL} x interrupt's"},
        "summary": flat_summary(summaries), "configs": summaries, "timeline": timeline, "runs": runs,
    }
    out = os.path.join(args.results, "eval.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    plots.draw(result, args.results)
    print(summary.markdown(result))
    print(f"eval_bench: {out}, eval-grid.png, eval-timeline.png ({result['minutes']} min)")
    unmet = [s["config"]["label"] for s in summaries
             if not s.get("goal_iops", {}).get("met", True) or not s.get("goal_qd1_cpu", {}).get("met", True)]
    if unmet:
        print(f"eval_bench: goal not met at: {', '.join(unmet)} (see docs/evaluation.md)")


if __name__ == "__main__":
    main()

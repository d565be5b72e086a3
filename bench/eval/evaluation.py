# SPDX-License-Identifier: Apache-2.0
"""The runs of the evaluation: one uvnvme-load run per arm (interrupt, poll: forced, the agent cannot see
them; adaptive, node, shadow, patch, latency: --mode external under the agent's runtime directory, the agent's
global default mode, node layer and profile set before the run) and the grid of configurations x repetitions x arms. A configuration
may add the application's own work per completion (io_work_us: uvnvme-load --io-work-us) or a CPU hog on the
reapers' CPUs (hog: a nice-0 busy loop for the run's length)."""
import json
import os
import subprocess
import time

import machine
import summary
import traces
from agent_session import AgentError, AgentSession

AGENT_ARMS = ("adaptive", "node", "shadow", "patch", "latency")
POLLING_ARMS = ("adaptive", "node", "patch", "latency")  # the agent switches: its poll time share is measured
# A configuration's device beyond uvnvme's defaults (media model, 20 us reads and writes, no jitter): the
# config key and uvnvme-load's option.
DEVICE_OPTIONS = (("rwmixread", "--rwmixread"), ("write_latency_us", "--write-latency-us"), ("jitter_us", "--jitter-us"))
TRACE_SHARE = "trace: completions of the agent's recorded windows (uvnvme-load reported no poll_completed)"


def label(config):
    if config["controllers"] == 1 and config["jobs"] == 1:
        text = f"1 dev QD{config['qd']}"
    else:
        text = f"{config['controllers']} dev x {config['jobs'] // config['controllers']} jobs QD{config['qd']}"
    if config.get("io_work_us"):
        text += f" work {config['io_work_us']}us"
    if config.get("jitter_us") is not None:
        text += (f" mixed {config.get('rwmixread', 100)}% reads, writes {config.get('write_latency_us', 20)}us, "
                 f"jitter {config['jitter_us']}us")
    if config.get("hog"):
        text += " + hog"
    return text


def per_completion_us(cpu_seconds, completed):
    return cpu_seconds / completed * 1e6 if completed else None


def device_clock(report):
    """The device clock uvnvme-load says it ran with, or None (a build without --device-clock)."""
    return report.get("device_clock", report.get("config", {}).get("device_clock"))


def poll_share(report, phase, arm, recorded_share=None):
    """(share of the phase's completions reaped in poll mode, where the figure comes from). From the driver's
    poll_completed when it reports it; else exact when the driver applied no switch in the whole run; else
    the agent's recorded windows (recorded_share)."""
    if "poll_completed" in phase:
        done = phase["completed"]
        return (phase["poll_completed"] / done if done else None), "driver: poll_completed"
    if report.get("mode_switches") == 0:
        return (1.0 if arm == "poll" else 0.0), "driver: no switch applied, the starting mode"
    return recorded_share, TRACE_SHARE


def phase_metrics(phase):
    """The figures of one phase of uvnvme-load's report, per completion where it applies."""
    done = phase["completed"]
    return {
        "seconds": phase["seconds"], "completed": done, "iops": phase["iops"],
        "lat_p50_us": phase["lat_p50_us"], "lat_p99_us": phase["lat_p99_us"],
        "process_cpu_us": per_completion_us(phase["cpu_seconds"], done),
        "host_cpu_us": per_completion_us(phase["host_cpu_seconds"], done),
        "controller_cpu_us": per_completion_us(phase["controller_cpu_seconds"], done),
        "wakeups_per_completion": phase["wakeups"] / done if done else None,
        # Share of its CPU the emulated device used: at 0.95 it is the real-time bandwidth limit
        # (kernel.sched_rt_runtime_us) if rt_budget could not lift it.
        "controller_cpu_util": phase["controller_cpu_seconds"] / phase["seconds"] if phase["seconds"] else None,
        "mode_switches": phase["mode_switches"],
        # The emulated device's own timing (uvnvme-load's device clock figures; None for an older build):
        # how late it posted completions, and its longest gap between completions with commands in flight.
        "device_lateness_p99_us": phase.get("lateness_p99_us"),
        "device_interval_max_us": phase.get("interval_max_us"),
        # The application's own work done (--io-work-us), in CPU seconds per second; absent without it.
        "app_work_per_second": phase.get("app_work_per_second"),
    }


def add_agent_cpu(figures, agent_cpu_seconds):
    """Adds the agent's CPU per completion to an agent arm's figures (host and process)."""
    figures["agent_cpu_us"] = per_completion_us(agent_cpu_seconds, figures["completed"])
    if figures["agent_cpu_us"] is not None:
        figures["host_plus_agent_cpu_us"] = figures["host_cpu_us"] + figures["agent_cpu_us"]
        figures["process_plus_agent_cpu_us"] = figures["process_cpu_us"] + figures["agent_cpu_us"]


class Evaluation:
    def __init__(self, args):
        self.args = args
        self.load = os.path.join(args.build, "uvnvme/uvnvme-load")
        if not os.access(self.load, os.X_OK):
            raise AgentError(f"{self.load} missing: build the project first")
        self.placement = machine.placement(self.load)
        self.agent = AgentSession(args.build, args.agent_cpus, args.policy)
        self.process = None  # the uvnvme-load running now, stopped if the evaluation is interrupted
        self.quiet_wait_left = args.max_total_quiet_wait_seconds

    def wait_until_quiet(self):
        """Before a configuration: let other work on the shared machine finish, within the time budget."""
        waited, other = machine.wait_until_quiet(self.agent.cpu_seconds, self.args.quiet_cpus,
                                                 min(self.args.max_quiet_wait_seconds, self.quiet_wait_left))
        self.quiet_wait_left = max(0.0, self.quiet_wait_left - waited)
        return {"quiet_wait_s": round(waited, 1), "other_cpus": round(other, 3)}

    def command(self, config, arm, phases):
        command = [self.load, "--json", "--controllers", str(config["controllers"]), "--queues",
                   str(config["queues"]), "--jobs", str(config["jobs"]), "--phases", phases] + self.placement
        if config.get("io_work_us"):
            command += ["--io-work-us", str(config["io_work_us"])]
        command += [option for key, option in DEVICE_OPTIONS if key in config for option in (option, str(config[key]))]
        if arm in AGENT_ARMS:
            return command + ["--mode", "external", "--runtime-dir", str(self.agent.runtime_dir)]
        # The oracle's modes are in its phases (phased.py: Ns:qdN:MODE, the warm-up's too).
        return command + ["--mode", "interrupt" if arm == "oracle" else arm, "--no-socket"]

    def launch(self, config, arm, phases, warmup_s, marks=()):
        """Runs uvnvme-load. For agent arms: sets the agent's default mode first, waits (up to warmup_s) for
        the agent to take the queues, and reads the agent's CPU at launch, at each of `marks` (seconds after
        launch) and at the end: run["agent_cpu_marks"]. Measures the other work on the machine meanwhile."""
        if arm in AGENT_ARMS:
            self.agent.set_default_mode(arm)
        run = {"loadavg": [round(x, 2) for x in os.getloadavg()]}
        agent_at_launch = self.agent.cpu_seconds()
        sampler = machine.Sampler()
        started = time.monotonic_ns()
        hog = machine.hog(self.placement) if config.get("hog") else None
        try:
            self.process = subprocess.Popen(self.command(config, arm, phases), stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True)
            cpu_marks = [agent_at_launch]
            if arm in AGENT_ARMS:
                queues = config["controllers"] * config["queues"]
                run["agent_found_queues_s"] = self.agent.wait_for_queues(self.process.pid, queues, warmup_s,
                                                                         self.process)
                for mark in marks:
                    time.sleep(max(0.0, started / 1e9 + mark - time.monotonic()))
                    cpu_marks.append(self.agent.cpu_seconds())
            stdout, stderr = self.process.communicate()
        finally:
            if hog:
                hog.kill()
                hog.wait()  # waited for: its CPU counts as the evaluation's own, not as other work
        pid, status, self.process = self.process.pid, self.process.returncode, None
        run["ended"] = time.monotonic_ns()
        cpu_marks.append(self.agent.cpu_seconds())
        run["other_cpus"] = round(sampler.other_cpus(cpu_marks[-1] - agent_at_launch), 3)
        pressure = sampler.pressure_some_share()  # what the node layer's PSI rules read, over the whole run
        run["cpu_pressure_some"] = None if pressure is None else round(pressure, 3)
        if arm in AGENT_ARMS:
            run["agent_cpu_marks"] = cpu_marks
        if status != 0:
            raise AgentError(f"uvnvme-load ({label(config)}, {arm}) failed with {status}: {stderr.strip()}")
        report = json.loads(stdout)
        if report.get("protocol_errors"):
            raise AgentError(f"uvnvme-load ({label(config)}, {arm}): {report['protocol_errors']} protocol errors")
        run["device_clock"] = device_clock(report)
        return pid, started, run, report

    def engine_summary(self, pid, t_from, t_to):
        windows = traces.parse_trace(self.agent.trace.read_text())
        decisions = traces.parse_decisions(self.agent.decisions.read_text())
        return traces.adaptive_summary(windows, decisions, pid, t_from, t_to)

    def grid_run(self, config, arm, rep):
        warmup = self.args.agent_warmup_seconds if arm in AGENT_ARMS else self.args.warmup_seconds
        phases = f"{warmup}s:qd{config['qd']},{self.args.measure_seconds}s:qd{config['qd']}"
        pid, started, run, report = self.launch(config, arm, phases, warmup, marks=(warmup,))
        phase = report["phases"][1]
        run.update({"config": label(config), "mode": arm, "rep": rep, "pid": pid})
        run.update(phase_metrics(phase))
        run["host_plus_agent_cpu_us"], run["process_plus_agent_cpu_us"] = run["host_cpu_us"], run["process_cpu_us"]
        recorded = None
        if arm in AGENT_ARMS:
            marks = run.pop("agent_cpu_marks")
            run["agent_cpu_seconds"] = marks[2] - marks[1]
            add_agent_cpu(run, run["agent_cpu_seconds"])
            run["agent_late"] = run["agent_found_queues_s"] is None
            # shadow: what the engine would have done; it switched nothing
            run["engine"] = self.engine_summary(pid, started + int(warmup * 1e9), run["ended"])
            recorded = run["engine"]["poll_completion_share_of_recorded_windows"]
            if arm in POLLING_ARMS:
                run["poll_time_share"] = run["engine"]["poll_time_share"]
        run["poll_completion_share"], run["poll_completion_share_source"] = poll_share(report, phase, arm, recorded)
        run.pop("ended")
        return run

    def grid(self, configs, arms=summary.MODES, repeats=None):
        """Every configuration x repetition x arm (repeats: each configuration's count, else repeats_of)."""
        runs = []
        count = (lambda config: repeats) if repeats else (lambda config: repeats_of(config, self.args))
        total = len(arms) * sum(count(config) for config in configs)
        for rep in range(max((count(config) for config in configs), default=0)):
            order = arms_in_turn(arms, rep)
            for config in (c for c in configs if rep < count(c)):
                before = self.wait_until_quiet()
                for arm in order:
                    run = self.grid_run(config, arm, rep)
                    run["before"] = before
                    runs.append(run)
                    print(f"eval [{len(runs)}/{total}] rep {rep} {progress(run)}", flush=True)
        return runs


def arms_in_turn(arms, rep):
    """The arms' order in repetition `rep`: each arm starts one repetition in turn, so no arm always follows the
    same one (a spinning poll run leaves the CPU in a state the next run's wake-ups pay for)."""
    shift = rep % len(arms)
    return list(arms[shift:]) + list(arms[:shift])


def repeats_of(config, args):
    """How often a configuration runs: QD1's CPU goal takes more pairs (--qd1-repeats) than the rest."""
    return max(args.repeats, args.qd1_repeats) if config["qd"] == 1 else args.repeats


def progress(run):
    """One line about a finished grid run."""
    extra = ""
    if run["mode"] in AGENT_ARMS:
        share = run["poll_completion_share"]
        agent = run.get("agent_cpu_us")
        extra = (f"  agent {'-' if agent is None else f'{agent:.3f}'} us/IO, polled "
                 f"{'-' if share is None else f'{share * 100:.0f} %'} of completions"
                 f"{', AGENT LATE' if run['agent_late'] else ''}")
    return (f"{run['config']:22s} {run['mode']:9s} {run['iops']:10,.0f} IOPS  p50 {run['lat_p50_us']:6.1f} us  "
            f"host {run['host_cpu_us']:.3f} us/IO  other work {run['other_cpus']:.2f} CPUs{extra}")

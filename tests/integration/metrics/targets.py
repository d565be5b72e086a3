# SPDX-License-Identifier: Apache-2.0
"""What the Prometheus harness scrapes and the load it runs. A target starts an exporter, runs a load with a
heavy phase to its end, and says what the load itself measured; run_scenario.py checks the same things
through Prometheus whatever the target is: the scripted fixture, or nvme-adaptd managing uvnvme-load.
"""

import json
import os
import subprocess
import time
from dataclasses import dataclass

from prometheus_server import die_with_parent


@dataclass
class LoadReport:
    iops: float              # completions per second over the whole run, as the load generator measured
    start_unix: float
    end_unix: float
    heavy_start_unix: float  # the phase with the highest load
    heavy_end_unix: float
    heavy_iops: float        # the heavy phase's known completion rate

    @staticmethod
    def from_phases(report: dict) -> "LoadReport":
        """From {"iops", "start_unix", "end_unix", "phases": [{"start_unix", "end_unix", "iops"}]}."""
        heavy = max(report["phases"], key=lambda phase: phase["iops"])
        return LoadReport(iops=report["iops"], start_unix=report["start_unix"], end_unix=report["end_unix"],
                          heavy_start_unix=heavy["start_unix"], heavy_end_unix=heavy["end_unix"],
                          heavy_iops=heavy["iops"])


class Target:
    name = ""
    # PromQL label matchers selecting the queues the load drives.
    completions_selector = "{}"
    # True when no queue may poll outside the heavy phase (a scripted target knows; a real engine may differ).
    polls_only_in_heavy_phase = False

    def start(self, workdir: str) -> str:
        """Starts the exporter; returns the host:port Prometheus scrapes."""
        raise NotImplementedError

    def run_load(self) -> LoadReport:
        """Runs the load to its end."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stops every process started; called in all cases, also after a failed start."""
        raise NotImplementedError


def spawn(command: list[str], workdir: str, log_name: str, **kwargs) -> subprocess.Popen:
    with open(os.path.join(workdir, log_name), "w") as log:
        return subprocess.Popen(command, stderr=log, preexec_fn=die_with_parent, **kwargs)


def stop(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class FixtureTarget(Target):
    """nvme-adapt-metrics-fixture: AgentMetrics driven by a scripted light-heavy-light load on two queues;
    a queue polls while its completions come at most 10 us apart."""

    name = "fixture"
    completions_selector = '{source="uvnvme"}'
    polls_only_in_heavy_phase = True
    phases = ["3:20000", "6:400000", "3:20000"]  # seconds:IOPS over both queues; 200 K/queue = 5 us apart

    def __init__(self, binary: str):
        self.binary = binary
        self.process: subprocess.Popen | None = None

    def start(self, workdir: str) -> str:
        port_file = os.path.join(workdir, "fixture.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        command = [self.binary, "--listen", "127.0.0.1:0", "--port-file", port_file, "--queues", "2"]
        for phase in self.phases:
            command += ["--phase", phase]
        self.process = spawn(command, workdir, "fixture.log", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fixture did not start (exit {self.process.poll()}); see {workdir}/fixture.log")
            time.sleep(0.05)
        with open(port_file) as f:
            return f"127.0.0.1:{int(f.read())}"

    def run_load(self) -> LoadReport:
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"fixture ended without a report (exit {self.process.poll()})")
        return LoadReport.from_phases(json.loads(line))

    def stop(self) -> None:
        if self.process is not None and self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()  # the fixture's cue to exit
        stop(self.process)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaemonTarget(Target):
    """nvme-adaptd (adaptive mode) managing a real uvnvme-load run: an idle lead-in (the daemon discovers the
    process and Prometheus sees its queue), then light (QD1), heavy (QD16), light. For the heavy phase an
    operator override (nvme-adaptctl, with an expiry of the phase's length) puts the queue in poll, so what
    Prometheus must see does not hang on whether polling wins on a busy machine: the closed-loop test judges
    the engine; this one the path from a decision to the lever, the driver, the exposition and Prometheus."""

    name = "daemon"
    completions_selector = '{source="uvnvme"}'
    # heavy_s: the check of rate() over the phase has an error of up to about 1 s of completions (the daemon
    # refreshes counters every second, Prometheus scrapes every second); over 8 s that was 22 % once.
    idle_s, light_s, heavy_s = 10, 3, 20

    def __init__(self, daemon: str, uvnvme_load: str, ctl: str):
        self.daemon_binary, self.load_binary, self.ctl = daemon, uvnvme_load, ctl
        self.daemon: subprocess.Popen | None = None
        self.load: subprocess.Popen | None = None

    def start(self, workdir: str) -> str:
        port = free_port()
        run_dir = os.path.join(workdir, "run")
        os.makedirs(run_dir, exist_ok=True)
        config = os.path.join(workdir, "daemon-config.json")
        with open(config, "w") as f:
            json.dump({"metrics": {"listenAddress": f"127.0.0.1:{port}"},
                       "api": {"unixSocket": os.path.join(workdir, "agent.sock"), "unixSocketGroup": "root"},
                       "policy": {"mode": "CONTROLLER_MODE_ADAPTIVE"}}, f)
        self.daemon = spawn([self.daemon_binary, "--config", config, "--state-dir", os.path.join(workdir, "state"),
                             "--runtime-dir", run_dir, "--sources", "uvnvme"], workdir, "daemon.log")
        time.sleep(0.5)
        phases = f"{self.idle_s}s:idle,{self.light_s}s:qd1,{self.heavy_s}s:qd16,{self.light_s}s:qd1"
        self.load_out = open(os.path.join(workdir, "load.json"), "w")
        self.started_unix = time.time()
        self.load = spawn([self.load_binary, "--runtime-dir", run_dir, "--mode", "external", "--controller-rt",
                           "--phases", phases, "--json"], workdir, "load.log", stdout=self.load_out)
        self.workdir = workdir
        return f"127.0.0.1:{port}"

    def run_load(self) -> LoadReport:
        heavy_start = self.started_unix + self.idle_s + self.light_s
        time.sleep(max(0.0, heavy_start - time.time()))
        queue = f"uvnvme:{self.load.pid}:0:q1"
        subprocess.run([self.ctl, "--addr", os.path.join(self.workdir, "agent.sock"), "override", queue, "poll",
                        "--for", f"{self.heavy_s}s"], check=True, capture_output=True, timeout=10)
        if self.load.wait(timeout=120) != 0:
            raise RuntimeError(f"uvnvme-load failed; see {self.workdir}/load.log")
        self.load_out.close()
        with open(os.path.join(self.workdir, "load.json")) as f:
            report = json.load(f)
        at = self.started_unix
        phases = []
        for phase in report["phases"]:
            phases.append({"start_unix": at, "end_unix": at + phase["seconds"], "iops": phase["iops"]})
            at += phase["seconds"]
        active = phases[1:]  # without the idle lead-in
        seconds = active[-1]["end_unix"] - active[0]["start_unix"]
        return LoadReport.from_phases({"iops": report["completed"] / seconds, "start_unix": active[0]["start_unix"],
                                       "end_unix": active[-1]["end_unix"], "phases": active})

    def stop(self) -> None:
        stop(self.load)
        stop(self.daemon)


def make_target(name: str, args) -> Target:
    if name == "fixture":
        return FixtureTarget(args.fixture)
    if name == "daemon":
        return DaemonTarget(args.daemon, args.uvnvme_load, args.ctl)
    raise ValueError(f"unknown target {name!r} (known: fixture, daemon)")

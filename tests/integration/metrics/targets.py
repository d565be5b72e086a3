"""What the Prometheus harness scrapes and the load it runs. A target starts an exporter, runs a load with a
heavy phase to its end, and says what the load itself measured; run_scenario.py checks the same things
through Prometheus whatever the target is.

Pointing the checks at the daemon needs one more class here and one line in TARGETS, e.g.:

    class DaemonTarget(Target):
        name = "daemon"
        completions_selector = '{source="uvnvme"}'
        def start(self, workdir):
            self.port = free_port()
            config = os.path.join(workdir, "config.json")   # {"metrics": {"listenAddress": "127.0.0.1:PORT"},
            ...                                             #  "policy": {"mode": "CONTROLLER_MODE_ADAPTIVE"}}
            self.daemon = spawn([args.daemon, "--config", config, ...], workdir, "daemon.log")
            return f"127.0.0.1:{self.port}"
        def run_load(self):
            out = subprocess.run([args.uvnvme_load, "--phase", "3:20000", "--phase", "6:400000", ...,
                                  "--json"], capture_output=True, check=True).stdout
            return LoadReport.from_phases(json.loads(out))   # map uvnvme-load's JSON fields
        def stop(self):
            stop(self.daemon)
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


def make_target(name: str, args) -> Target:
    if name == "fixture":
        return FixtureTarget(args.fixture)
    raise ValueError(f"unknown target {name!r} (known: fixture)")

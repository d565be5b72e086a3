# SPDX-License-Identifier: Apache-2.0
"""One nvme-adaptd for the whole evaluation: every uvnvme process it finds under its own runtime directory,
in adaptive, node (adaptive with the node layer: policy node_layer on) or shadow mode (the global default,
set over the API before each run: it applies to controllers discovered later, and each run is a new process),
every window and decision recorded, its CPU read from /proc."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class AgentError(RuntimeError):
    pass


class AgentSession:
    def __init__(self, build, cpus=None, policy=None, node=None):
        self.daemon = pathlib.Path(build) / "agent/daemon/nvme-adaptd"
        self.ctl = pathlib.Path(build) / "agent/ctl/nvme-adaptctl"
        for binary in (self.daemon, self.ctl):
            if not binary.is_file():
                raise AgentError(f"{binary} missing: build the project first")
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="nvme-adapt-eval-"))
        self.runtime_dir = self.workdir / "run"
        self.trace = self.workdir / "trace"
        self.decisions = self.workdir / "trace.decisions"
        self.log = self.workdir / "daemon.log"
        self.process = None
        self.cpus = cpus  # None: wherever the scheduler puts it (the default deployment)
        self.policy = policy  # None: the engine's defaults; else a Policy message in JSON (proto field names)
        self.node = node  # None: the node layer's defaults (no CPU budget); else a NodeConfig message in JSON
        self.default_mode = "adaptive"

    # Each agent arm as the global policy's mode, node_layer and profile (patch: the kernel patch's rules).
    ARM_POLICY = {"adaptive": ("adaptive", "off", "default"), "node": ("adaptive", "on", "default"),
                  "shadow": ("shadow", "off", "default"), "patch": ("adaptive", "off", "patch"),
                  "latency": ("adaptive", "on", "latency")}

    def start(self, timeout_s=30.0):
        self.runtime_dir.mkdir(mode=0o700)
        config = self.workdir / "config.json"
        settings = {"api": {"unixSocket": str(self.runtime_dir / "agent.sock"), "unixSocketGroup": "root"}}
        if self.policy:
            settings["policy"] = self.policy
        if self.node:
            settings["node"] = self.node
        config.write_text(json.dumps(settings) + "\n")
        command = [str(self.daemon), "--config", str(config), "--runtime-dir", str(self.runtime_dir),
                   "--state-dir", str(self.workdir / "state"), "--sources", "uvnvme", "--default-mode", "adaptive",
                   "--metrics-listen", "off", "--record-windows", str(self.trace)]
        with open(self.log, "w") as log:
            pin = (lambda: os.sched_setaffinity(0, self.cpus)) if self.cpus else None
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AgentError(f"nvme-adaptd exited with {self.process.returncode}: {self.log_tail()}")
            if " running: " in self.log.read_text():
                if "collector bpf" not in self.log.read_text():
                    self.stop()
                    raise AgentError(f"nvme-adaptd runs without its BPF collector (root needed): {self.log_tail()}")
                return
            time.sleep(0.1)
        self.stop()
        raise AgentError(f"nvme-adaptd not running after {timeout_s:.0f} s: {self.log_tail()}")

    def set_default_mode(self, arm):
        """The global default mode, node layer and profile (an agent arm: adaptive, node, shadow or patch) for
        the controllers of the next uvnvme process."""
        if arm == self.default_mode:
            return
        mode, node_layer, profile = self.ARM_POLICY[arm]
        command = [str(self.ctl), "--addr", str(self.runtime_dir / "agent.sock"), "policy", "set", "--mode", mode,
                   "--node-layer", node_layer, "--profile", profile]
        run = subprocess.run(command, capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            raise AgentError(f"nvme-adaptctl policy set --mode {mode} --node-layer {node_layer} --profile {profile} "
                             f"failed: {run.stderr.strip()}")
        self.default_mode = arm

    def log_tail(self, lines=5):
        try:
            return " | ".join(self.log.read_text().strip().splitlines()[-lines:])
        except OSError as error:
            return f"(no log: {error})"

    def cpu_seconds(self):
        """User + system CPU of the daemon so far (all its threads), in seconds."""
        stat = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime: fields 14 and 15 of stat(5)

    def wait_for_queues(self, pid, count, timeout_s, process):
        """Seconds until the trace lists `count` queues of uvnvme process `pid`, or None after timeout_s
        (or when the process ended first)."""
        prefix = f"queue uvnvme:{pid}:"
        started = time.monotonic()
        while time.monotonic() - started < timeout_s and process.poll() is None:
            try:
                found = sum(1 for line in self.trace.read_text().splitlines() if line.startswith(prefix))
            except OSError:
                found = 0
            if found >= count:
                return time.monotonic() - started
            time.sleep(0.05)
        return None

    def discard(self, keep_trace_as=None):
        """Removes the session's directory (the daemon stopped), keeping its trace and decisions at
        keep_trace_as and keep_trace_as.decisions if given."""
        if keep_trace_as:
            for suffix in ("", ".decisions"):
                if (self.workdir / f"trace{suffix}").exists():
                    shutil.copy(self.workdir / f"trace{suffix}", f"{keep_trace_as}{suffix}")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s=20.0):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AgentError(f"nvme-adaptd did not stop within {timeout_s:.0f} s of SIGTERM")
        if self.process.returncode != 0:
            raise AgentError(f"nvme-adaptd stopped with status {self.process.returncode}: {self.log_tail()}")

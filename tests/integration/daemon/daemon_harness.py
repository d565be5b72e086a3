# SPDX-License-Identifier: Apache-2.0
"""Runs nvme-adaptd, nvme-adaptctl and uvnvme-load as real processes for the daemon's integration tests.

Everything lives in one temporary directory: the config, the state dir, the runtime dir (uvnvme sockets),
the API socket and the daemon's log. Binaries come from the environment CTest sets (NVME_ADAPTD, ...).
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

NVME_ADAPTD = os.environ.get("NVME_ADAPTD", "nvme-adaptd")
NVME_ADAPTCTL = os.environ.get("NVME_ADAPTCTL", "nvme-adaptctl")
UVNVME_LOAD = os.environ.get("UVNVME_LOAD", "uvnvme-load")
NVME_ADAPT_REPLAY = os.environ.get("NVME_ADAPT_REPLAY", "nvme-adapt-replay")


def require_root(test):
    if os.geteuid() != 0:
        test.fail("needs root (BPF programs, USDT probes, the agent's sockets): run the test command as root")


class Workspace:
    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix=f"nvme-adapt-{name}-")
        self.state_dir = os.path.join(self.dir, "state")
        self.runtime_dir = os.path.join(self.dir, "run")
        self.api_socket = os.path.join(self.dir, "agent.sock")
        os.makedirs(self.runtime_dir)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_config(self, config, name="config.json"):
        merged = {"api": {"unixSocket": self.api_socket, "unixSocketGroup": "root"}}
        merged.update(config)
        path = self.path(name)
        with open(path, "w") as f:
            f.write(json.dumps(merged) if isinstance(config, dict) else config)
        return path

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Daemon:
    """nvme-adaptd in the background, its stderr in a log file."""

    def __init__(self, workspace, config=None, flags=(), log_name="daemon.log", env=None):
        self.ws = workspace
        self.env = env
        self.config_path = workspace.write_config(config or {})
        self.log_path = workspace.path(log_name)
        self.flags = list(flags)
        self.process = None

    def start(self, wait=True):
        args = [NVME_ADAPTD, "--config", self.config_path, "--state-dir", self.ws.state_dir,
                "--runtime-dir", self.ws.runtime_dir, "--metrics-listen", "off", *self.flags]
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                        env=None if self.env is None else {**os.environ, **self.env})
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"nvme-adaptd exited {self.process.returncode}:\n{self.log_text()}")
            if os.path.exists(self.ws.api_socket):
                ok = subprocess.run([NVME_ADAPTCTL, "--addr", self.ws.api_socket, "status"], capture_output=True)
                if ok.returncode == 0:
                    return
            time.sleep(0.1)
        raise AssertionError(f"nvme-adaptd not ready after {timeout} s:\n{self.log_text()}")

    def ctl(self, *args, check=True):
        result = subprocess.run([NVME_ADAPTCTL, "--addr", self.ws.api_socket, "--json", *args],
                                capture_output=True, text=True, timeout=30)
        if check and result.returncode != 0:
            raise AssertionError(f"nvme-adaptctl {' '.join(args)}: {result.returncode}: {result.stderr}")
        return result

    def ctl_json(self, *args):
        return json.loads(self.ctl(*args).stdout)

    def queues(self):
        return self.ctl_json("queues").get("queues", [])

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{self.log_text()[-4000:]}")

    def send(self, sig):
        self.process.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"nvme-adaptd did not stop within {timeout} s after signal {sig}")

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()


class Load:
    """uvnvme-load with its control socket under the workspace's runtime dir."""

    def __init__(self, workspace, *args):
        self.ws = workspace
        self.out_path = workspace.path("load.json")
        self.err_path = workspace.path("load.err")
        self.args = [UVNVME_LOAD, "--runtime-dir", workspace.runtime_dir, "--json", *args]
        self.process = None

    def start(self):
        self.started_ns = time.monotonic_ns()  # CLOCK_MONOTONIC: the clock of the daemon's trace
        self.process = subprocess.Popen(self.args, stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"))
        return self

    def socket(self):
        return os.path.join(self.ws.runtime_dir, "uvnvme", f"{self.process.pid}.sock")

    def control(self, request):
        import socket as so
        s = so.socket(so.AF_UNIX)
        s.settimeout(10)
        s.connect(self.socket())
        s.sendall((json.dumps(request) + "\n").encode())
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
        s.close()
        return json.loads(reply)

    def queue_modes(self):
        return {q["qid"]: q["mode"] for q in self.control({"op": "list"})["queues"]}

    def wait(self, timeout):
        rc = self.process.wait(timeout)
        with open(self.err_path) as f:
            err = f.read()
        if rc != 0:
            raise AssertionError(f"uvnvme-load exited {rc}: {err}")
        with open(self.out_path) as f:
            return json.load(f)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)


def journal_entries(state_dir):
    """The journal's live entries: journal.json (its last compaction) with journal.log's records over it
    (agent/state/state_store.h): "A" adds a target it does not hold, "D" drops one. A torn last line and
    the fragment a failed append left are left out, as the daemon does."""
    try:
        with open(os.path.join(state_dir, "journal.json")) as f:
            entries = json.load(f).get("entries", [])
    except FileNotFoundError:
        entries = []
    try:
        with open(os.path.join(state_dir, "journal.log")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        try:
            op, entry = line[0], json.loads(line[2:])
        except (IndexError, ValueError):
            continue
        key = (entry.get("lever"), entry.get("target"))
        held = [e for e in entries if (e.get("lever"), e.get("target")) == key]
        if op == "A" and not held:
            entries.append(entry)
        elif op == "D":
            entries = [e for e in entries if (e.get("lever"), e.get("target")) != key]
    return entries


def read_lines(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f]


def parse_decision(line):
    """'NAME at=NS from->to reason=R state=S failures=N ...' as a dict."""
    words = line.split()
    decision = {"queue": words[0]}
    for word in words[1:]:
        if "->" in word:
            decision["from"], decision["to"] = word.split("->")
        elif "=" in word:
            key, value = word.split("=", 1)
            decision[key] = value
        else:
            decision[word] = True
    decision["at"] = int(decision["at"])
    return decision

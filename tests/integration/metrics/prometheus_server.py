# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus server for tests: Debian's `prometheus`, on a free loopback port, with a generated
config, its own temporary storage and a 1 s scrape interval; killed when the test ends, however it ends
(also if the harness itself is killed: the server gets SIGKILL when its parent dies)."""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

JOB = "nvme-adapt"  # the job name the rules in dashboards/prometheus expect
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """preexec_fn for children: SIGKILL when the harness dies, even by SIGKILL (a CTest timeout)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class QueryError(Exception):
    pass


# docs/metrics.md's scrape config for hosts: the `node` label the dashboard keys on, from the target's host;
# here only for targets not given one (the regex matches an empty node label only).
NODE_FROM_ADDRESS = {"source_labels": ["node", "__address__"], "regex": ";([^:]+)(:[0-9]+)?",
                     "target_label": "node"}


class PrometheusServer:
    """Use as a context manager: `with PrometheusServer(workdir, ["127.0.0.1:9464"], rule_files) as prom:`.
    Each target gets a `node` label: from its address as docs/metrics.md relabels it, or as given in `nodes`
    (address -> node), as the ServiceMonitor gives each pod its node's name."""

    def __init__(self, workdir: str, targets: list[str], rule_files: list[str], scrape_interval_s: int = 1,
                 nodes: dict[str, str] | None = None):
        if shutil.which("prometheus") is None:
            raise RuntimeError("prometheus not found: install Debian package 'prometheus' (scripts/install-deps)")
        self.workdir = workdir
        self.targets = targets
        self.nodes = nodes or {}
        self.rule_files = rule_files
        self.scrape_interval_s = scrape_interval_s
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.storage = ""
        self.log_path = os.path.join(workdir, "prometheus.log")

    def __enter__(self) -> "PrometheusServer":
        os.makedirs(self.workdir, exist_ok=True)
        for stale in os.listdir(self.workdir):  # left by a run that was killed
            if stale.startswith("prometheus-data-"):
                shutil.rmtree(os.path.join(self.workdir, stale), ignore_errors=True)
        self.storage = tempfile.mkdtemp(prefix="prometheus-data-", dir=self.workdir)
        config_path = os.path.join(self.workdir, "prometheus.yml")
        interval = f"{self.scrape_interval_s}s"
        config = {  # JSON is YAML: no YAML library needed
            "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
            "rule_files": self.rule_files,
            "scrape_configs": [{"job_name": JOB, "relabel_configs": [NODE_FROM_ADDRESS],
                                "static_configs": [{"targets": [t], "labels": {"node": self.nodes[t]}}
                                                   if t in self.nodes else {"targets": [t]} for t in self.targets]}],
        }
        with open(config_path, "w") as f:
            json.dump(config, f, indent=2)
        self.port = free_port()
        log = open(self.log_path, "w")
        try:
            self.process = subprocess.Popen(
                ["prometheus", f"--config.file={config_path}", f"--storage.tsdb.path={self.storage}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1h",
                 "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        finally:
            log.close()
        try:
            self._wait_ready(timeout_s=60)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.storage:
            shutil.rmtree(self.storage, ignore_errors=True)
            self.storage = ""

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return f"(no log: {e})"

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready after {timeout_s} s:\n{self.log_tail()}")

    def api(self, path: str, params: dict | None = None) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                body = json.load(answer)
        except urllib.error.HTTPError as e:
            body = json.load(e)
        if body.get("status") != "success":
            raise QueryError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """Instant query; returns [{"metric": {...}, "value": float}] (scalars as one unlabelled result)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self.api("query", params)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": float(data["result"][1])}]
        if data["resultType"] != "vector":
            raise QueryError(f"{expr}: unexpected result type {data['resultType']}")
        return [{"metric": r["metric"], "value": float(r["value"][1])} for r in data["result"]]

    def wait_until(self, expr: str, timeout_s: float, what: str) -> list[dict]:
        """Polls an instant query until it returns something; raises with `what` after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            result = self.query(expr)
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"after {timeout_s} s still not true: {what} ({expr})\n{self.log_tail()}")
            time.sleep(0.25)

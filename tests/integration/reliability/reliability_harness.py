# SPDX-License-Identifier: Apache-2.0
"""What the reliability cases share: the fake driver as a process, the daemon's memory, timed commands."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

from daemon_harness import NVME_ADAPTCTL

HERE = os.path.dirname(os.path.abspath(__file__))


class DaemonBesideFakeDriver(unittest.TestCase):
    """A case whose setUp makes self.ws and self.driver, and whose test may start self.daemon: all three go."""

    daemon = None

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        self.driver.stop()
        self.ws.cleanup()


class FakeDriver:
    """fake_driver.py as a process, started with `python` (a copy of the interpreter, for --fifo-exe)."""

    def __init__(self, workspace, *args, python=sys.executable):
        self.runtime_dir = workspace.runtime_dir
        self.process = subprocess.Popen([python, os.path.join(HERE, "fake_driver.py"), workspace.runtime_dir, *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.process.kill()
            raise AssertionError(f"fake driver did not start: {line}{self.process.stderr.read()}")

    @property
    def pid(self):
        return self.process.pid

    def socket_path(self):
        return os.path.join(self.runtime_dir, "uvnvme", f"{self.pid}.sock")

    def modes(self, ctrl=0):
        """{qid: "interrupt" | "poll"} of controller `ctrl`, as the driver says over its socket."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(self.socket_path())
            s.sendall(b'{"op": "list"}\n')
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
        return {q["qid"]: q["mode"] for q in json.loads(reply)["queues"] if q["ctrl"] == ctrl}

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no VmRSS")


def timed_status(api_socket, timeout=10):
    """(exit status, seconds, output) of `nvme-adaptctl status`."""
    start = time.monotonic()
    result = subprocess.run([NVME_ADAPTCTL, "--addr", api_socket, "status"], capture_output=True, text=True,
                            timeout=timeout)
    return result.returncode, time.monotonic() - start, result.stdout + result.stderr

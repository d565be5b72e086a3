# SPDX-License-Identifier: Apache-2.0
"""Shared by uvnvme's integration tests: the binaries under test (from the environment CTest sets) and
small clients for uvnvme-load as a process and for its control socket."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

LOAD = os.environ.get("UVNVME_LOAD", "")
LIB = os.environ.get("UVNVME_LIB", "")
READELF = os.environ.get("READELF", "readelf")


def run_load(*args, timeout=120):
    return subprocess.run([LOAD, *args], capture_output=True, text=True, timeout=timeout)


class LoadProcess:
    """uvnvme-load running in the background with its control socket in a private runtime dir."""

    def __init__(self, *args):
        self.runtime_dir = tempfile.mkdtemp(prefix="uvnvme-it.")
        self.proc = subprocess.Popen([LOAD, "--runtime-dir", self.runtime_dir, "--json", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.socket_path = os.path.join(self.runtime_dir, "uvnvme", f"{self.proc.pid}.sock")
        deadline = time.monotonic() + 10
        # The file appears at bind, owner-only; the server widens it to 0660 and then listens: a socket that
        # takes a connection is the one the driver serves.
        while not self._listening():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"no control socket at {self.socket_path}: {self.proc.stderr.read()}")
            time.sleep(0.01)

    def _listening(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(self.socket_path)
            except OSError:
                return False
        return True

    def stop(self):
        """SIGTERM, then the JSON report (the run ends early, drains and reports)."""
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        if self.proc.returncode != 0:
            raise AssertionError(f"uvnvme-load exited {self.proc.returncode}: {err}")
        return json.loads(out)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.buffer = b""

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def line(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed before a response")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, request):
        self.send((request if isinstance(request, str) else json.dumps(request)) + "\n")
        return self.line()

    def close(self):
        self.sock.close()


def queue(client, ctrl, qid):
    for q in client.ask({"op": "list"})["queues"]:
        if q["ctrl"] == ctrl and q["qid"] == qid:
            return q
    raise AssertionError(f"no queue c{ctrl}q{qid} in the list")


def main(argv):
    """unittest.main over the named cases, after checking the binary under test exists."""
    import unittest
    if not LOAD or not os.access(LOAD, os.X_OK):
        sys.exit("UVNVME_LOAD must name the uvnvme-load binary (CTest sets it)")
    unittest.main(module="__main__", argv=[argv[0], "-v", *argv[1:]])

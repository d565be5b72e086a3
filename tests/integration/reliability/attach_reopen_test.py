#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A driver that swaps its binary for a FIFO after the agent checked it does not freeze the agent (issue 45,
item 1).

The driver is a copy of uvnvme-load (it has the uvnvme USDT probes) in a directory its user owns. The test
watches that directory with inotify: the moment the agent opens the binary to read its notes (the check), it
renames a FIFO over it. Before the fix libbpf opened the path again to attach the probes, and blocked in
open(2) on the FIFO with the collector's mutex held: `status` hung, SIGTERM did not stop the agent. Now the
probes attach through the descriptor that was checked: `status` answers within 1 s, the driver's probes are
attached (to the file it runs), and SIGTERM stops the agent within 2 s.
"""
import ctypes
import os
import shutil
import signal
import stat
import struct
import subprocess
import threading
import time
import unittest

from daemon_harness import UVNVME_LOAD, Daemon, Workspace, require_root
from reliability_harness import timed_status

IN_OPEN = 0x20
DRIVERS = 3  # each races the agent once more; before the fix the first one was enough


class SwapOnOpen:
    """Renames `fifo` over `binary` as soon as someone opens `binary` (inotify on its directory)."""

    def __init__(self, binary, fifo):
        self.binary, self.fifo = binary, fifo
        self.swapped = threading.Event()
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self.fd, os.path.dirname(binary).encode(), IN_OPEN) < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
        threading.Thread(target=self.watch, daemon=True).start()

    def watch(self):
        name = os.path.basename(self.binary).encode()
        while not self.swapped.is_set():
            data = os.read(self.fd, 65536)
            offset = 0
            while offset < len(data):
                _, mask, _, length = struct.unpack_from("iIII", data, offset)
                event_name = data[offset + 16:offset + 16 + length].rstrip(b"\0")
                offset += 16 + length
                if mask & IN_OPEN and event_name == name:
                    os.rename(self.fifo, self.binary)
                    self.swapped.set()
                    break

    def close(self):
        os.close(self.fd)


class AttachReopen(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("attach-reopen")
        self.daemon = None
        self.drivers = []

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        for driver in self.drivers:
            if driver.poll() is None:
                driver.kill()
                driver.wait(10)
        self.ws.cleanup()

    def start_driver(self, n):
        """A copy of uvnvme-load at bin<n>/uvnvme-load, and the watch that swaps it when the agent opens it."""
        directory = self.ws.path(f"bin{n}")
        os.makedirs(directory)
        binary = os.path.join(directory, "uvnvme-load")
        shutil.copy(UVNVME_LOAD, binary)
        fifo = os.path.join(directory, "swap.fifo")
        os.mkfifo(fifo)
        driver = subprocess.Popen([binary, "--runtime-dir", self.ws.runtime_dir, "--mode", "external", "--queues", "1",
                                   "--qd", "1", "--runtime", "600s"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        self.drivers.append(driver)
        sock = os.path.join(self.ws.runtime_dir, "uvnvme", f"{driver.pid}.sock")
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            self.assertLess(time.monotonic(), deadline, "uvnvme-load's socket did not appear")
            time.sleep(0.05)
        return driver, binary, SwapOnOpen(binary, fifo)

    def test_a_fifo_renamed_over_the_checked_binary_neither_blocks_the_attach_nor_the_loop(self):
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        for n in range(DRIVERS):
            driver, binary, swap = self.start_driver(n)
            try:
                self.assertTrue(swap.swapped.wait(20), "the agent never opened the driver's binary")
                self.assertTrue(stat.S_ISFIFO(os.stat(binary).st_mode), "the FIFO is not in place")
                self.daemon.wait_for(lambda: f"pid {driver.pid}" in self.daemon.log_text(), 10,
                                     f"the attach to pid {driver.pid} to end")
                for _ in range(3):
                    code, seconds, output = timed_status(self.ws.api_socket)
                    print(f"driver {n}: status exit {code} in {seconds * 1000:.0f} ms", flush=True)
                    self.assertEqual(code, 0, output)
                    self.assertLess(seconds, 1.0, output)
                    self.assertNotIn("agent loop:", output)
                    time.sleep(0.2)
            finally:
                swap.close()
            attached = [line for line in self.daemon.log_text().splitlines()
                        if "collector: attached" in line and f"pid {driver.pid}" in line]
            self.assertEqual(len(attached), 1, "the probes did not attach to the binary that was checked:\n"
                             + self.daemon.log_text()[-2000:])
        start = time.monotonic()
        self.daemon.send(signal.SIGTERM)
        try:
            code = self.daemon.process.wait(2)
        except subprocess.TimeoutExpired:
            self.fail(f"nvme-adaptd still running 2 s after SIGTERM:\n{self.daemon.log_text()[-3000:]}")
        print(f"SIGTERM to exit: {(time.monotonic() - start) * 1000:.0f} ms", flush=True)
        self.assertEqual(code, 0, self.daemon.log_text()[-3000:])
        self.daemon = None


if __name__ == "__main__":
    unittest.main(verbosity=2)

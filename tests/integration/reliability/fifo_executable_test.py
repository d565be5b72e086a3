#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A driver whose executable is a FIFO does not freeze the agent (issue #37, item 1).

The fake driver runs from a copy of the interpreter, deletes the copy and puts a FIFO at "PATH (deleted)",
where /proc/PID/exe points. Before the fix the daemon's loop opened that FIFO to read its ELF notes and
waited forever: status still exited 0 and SIGTERM did not stop it. Now `nvme-adaptctl status` answers
within 1 s with exit 0, the driver is said to be observed without USDT probes, its queue is listed, and
SIGTERM stops the daemon within 2 s.
"""
import os
import shutil
import signal
import stat
import sys
import time
import unittest

from daemon_harness import Daemon, Workspace, require_root
from reliability_harness import DaemonBesideFakeDriver, FakeDriver, timed_status


class FifoExecutable(DaemonBesideFakeDriver):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("fifo-exe")
        python = self.ws.path("python-copy")
        shutil.copy(os.path.realpath(sys.executable), python)
        self.driver = FakeDriver(self.ws, "--fifo-exe", python=python)
        self.fifo = python + " (deleted)"

    def test_status_answers_and_sigterm_stops_with_a_fifo_for_an_executable(self):
        self.assertTrue(stat.S_ISFIFO(os.stat(self.fifo).st_mode), "the FIFO is not in place")
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        controller = f"uvnvme:{self.driver.pid}:0"
        self.daemon.wait_for(lambda: any(q["id"]["controller"] == controller for q in self.daemon.queues()), 20,
                             f"{controller}'s queue listed")
        self.daemon.wait_for(lambda: f"pid {self.driver.pid} is observed without USDT" in self.daemon.log_text(), 10,
                             "the driver said to be observed without USDT probes")
        for _ in range(5):
            code, seconds, output = timed_status(self.ws.api_socket)
            print(f"status: exit {code} in {seconds * 1000:.0f} ms", flush=True)
            self.assertEqual(code, 0, output)
            self.assertLess(seconds, 1.0, output)
            self.assertNotIn("agent loop:", output)
            time.sleep(0.5)
        start = time.monotonic()
        self.daemon.send(signal.SIGTERM)
        try:
            code = self.daemon.process.wait(2)
        except Exception:
            self.fail(f"nvme-adaptd still running 2 s after SIGTERM:\n{self.daemon.log_text()[-3000:]}")
        print(f"SIGTERM to exit: {(time.monotonic() - start) * 1000:.0f} ms", flush=True)
        self.assertEqual(code, 0, self.daemon.log_text()[-3000:])


if __name__ == "__main__":
    unittest.main(verbosity=2)

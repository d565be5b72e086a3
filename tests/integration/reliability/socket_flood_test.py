#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Other users' files in the driver socket directory never push a driver out of management (issue 45, item 4).

Two drivers run; the agent switches a queue of the first to poll. Then 256 files named `-NNN.sock` (which sort
before any pid) and 16 stale `PID.sock` names of pids that do not run appear in the directory. Before the fix
discovery asked only the first 256 `*.sock` names: both drivers' queues were dropped as vanished and the
switched queue stayed in poll mode, unmanaged. Now every scan asks the running drivers' own sockets first:
both drivers' queues stay listed, the switched queue stays in poll and managed, and SIGTERM puts it back.
"""
import os
import signal
import time
import unittest

from daemon_harness import Daemon, Workspace, require_root
from reliability_harness import FakeDriver

FLOOD = 256
STALE = 16
SCANS_WATCHED_S = 8  # the agent scans every 2 s


class SocketFlood(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("socket-flood")
        self.drivers = [FakeDriver(self.ws, "--queues", "2") for _ in range(2)]
        self.daemon = None

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        for driver in self.drivers:
            driver.stop()
        self.ws.cleanup()

    def listed(self):
        controllers = {}
        for q in self.daemon.queues():
            controllers.setdefault(q["id"]["controller"], []).append(q)
        return controllers

    def test_every_live_driver_stays_managed_beside_256_other_sock_files(self):
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        names = [f"uvnvme:{d.pid}:0" for d in self.drivers]
        self.daemon.wait_for(lambda: all(len(self.listed().get(n, [])) == 2 for n in names), 20, "both drivers")
        self.daemon.ctl("override", f"{names[0]}:q1", "poll")
        self.assertEqual(self.drivers[0].modes()[1], "poll")

        directory = os.path.join(self.ws.runtime_dir, "uvnvme")
        for i in range(FLOOD):
            open(os.path.join(directory, f"-{i:03d}.sock"), "w").close()
        for i in range(STALE):
            open(os.path.join(directory, f"{4194304 + i}.sock"), "w").close()  # above pid_max: never running
        began = time.monotonic()
        while time.monotonic() - began < SCANS_WATCHED_S:
            listed = self.listed()
            for name in names:
                self.assertEqual(len(listed.get(name, [])), 2, f"{name} left management: {sorted(listed)}\n"
                                 + self.daemon.log_text()[-2000:])
            self.assertEqual(self.drivers[0].modes()[1], "poll")
            time.sleep(0.5)
        skips = [line for line in self.daemon.log_text().splitlines() if "no running driver's PID.sock" in line]
        print(f"{len(skips)} log line(s) about the other names: {skips[:1]}", flush=True)
        self.assertEqual(self.daemon.stop(), 0)
        self.daemon = None
        self.assertEqual(self.drivers[0].modes()[1], "interrupt", "the switched queue was not restored at SIGTERM")


if __name__ == "__main__":
    unittest.main(verbosity=2)

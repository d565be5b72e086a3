#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""connection_cap: 2,000 idle API connections against a real daemon (issue #37).

The daemon runs with the usual 1,024 open files. Without a cap each idle connection held a file descriptor
until about 900 made every open() fail: discovery then lost every controller ("vanished"). With the cap the
Unix socket holds at most its bound per peer and in all, refuses the rest with a clear error, and the daemon
keeps discovering, answering and opening files.
"""
import os
import resource
import signal
import socket
import sys
import time
import unittest

from daemon_harness import Daemon, Load, Workspace, require_root

FLOOD = 2000
DAEMON_FILES = 1024  # the soft limit systemd and most shells give a process


def uvnvme_queues(daemon):
    return [q for q in daemon.queues() if q.get("source") == "SOURCE_UVNVME"]


class ConnectionCap(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("connection-cap")
        self.load = Load(self.ws, "--mode", "external", "--queues", "2", "--qd", "4", "--runtime", "300s").start()
        self.flood = []
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.limits = (soft, hard)
        # The daemon inherits this limit; the test itself needs room for the flood afterwards.
        resource.setrlimit(resource.RLIMIT_NOFILE, (DAEMON_FILES, hard))
        try:
            self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, FLOOD + 512), hard))

    def tearDown(self):
        for s in self.flood:
            s.close()
        self.daemon.stop(signal.SIGKILL)
        self.load.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, self.limits)
        self.ws.cleanup()

    def daemon_fds(self):
        return len(os.listdir(f"/proc/{self.daemon.process.pid}/fd"))

    def test_connection_cap_2000_idle_connections(self):
        self.daemon.wait_for(lambda: len(uvnvme_queues(self.daemon)) == 2, 20, "2 uvnvme queues")
        log_before = len(self.daemon.log_text())
        connected = 0
        for _ in range(FLOOD):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            deadline = time.monotonic() + 2
            while True:
                try:
                    s.connect(self.ws.api_socket)
                    connected += 1
                    break
                except BlockingIOError:  # the listen backlog is full: wait for the daemon to accept
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.002)
            self.flood.append(s)
        self.assertGreater(connected, FLOOD // 2, "the flood did not reach the daemon")
        time.sleep(4)  # several discovery scans with the flood open

        self.assertIsNone(self.daemon.process.poll(), "the daemon died under the flood")
        fds = self.daemon_fds()
        self.assertLess(fds, DAEMON_FILES - 200, f"the daemon holds {fds} files: the connections were not capped")
        status = self.daemon.ctl("status", check=False)
        print(f"status during the flood: exit {status.returncode} {status.stderr.strip()}; daemon files {fds}",
              file=sys.stderr)
        if status.returncode != 0:
            self.assertIn("too many API connections", status.stderr, "refused without the clear error")
        log = self.daemon.log_text()[log_before:]
        self.assertIn("too many API connections", log, "no refusal logged")
        self.assertNotIn("vanished", log, "discovery lost controllers during the flood")
        self.assertNotIn("Too many open files", log)

        for s in self.flood:
            s.close()
        self.flood = []
        # Freed connections are counted out again: status answers and the queues are still there.
        self.daemon.wait_for(lambda: self.daemon.ctl("status", check=False).returncode == 0, 20,
                             "status to answer once the flood closed")
        self.assertEqual(len(uvnvme_queues(self.daemon)), 2)
        self.assertNotIn("vanished", self.daemon.log_text()[log_before:])


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A driver listing one queue 1,700 times behind 64 sockets costs the agent no memory (issue #37, item 2).

Before the fix every scan took every duplicate anew (408,000 "found:" lines a minute) and leaked the
replaced queues' engine slots: RSS grew by about 1 MiB a second. Now the agent keeps one queue, logs it
once, and its RSS stays within 10 MiB of where it started.

    duplicate_listing_test.py [SECONDS]   (default 75, or $RELIABILITY_DURATION; the issue asks 300)
"""
import os
import re
import sys
import time
import unittest

from daemon_harness import Daemon, Workspace, require_root
from reliability_harness import DaemonBesideFakeDriver, FakeDriver, rss_kib

DURATION = float(os.environ.get("RELIABILITY_DURATION", "75"))
SOCKETS, REPEAT = 64, 1700
SLACK_KIB = 10 * 1024


class DuplicateListing(DaemonBesideFakeDriver):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("duplicate-listing")
        self.driver = FakeDriver(self.ws, "--sockets", str(SOCKETS), "--repeat", str(REPEAT))

    def test_rss_stays_flat_and_the_queue_is_one(self):
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        controller = f"uvnvme:{self.driver.pid}:0"
        self.daemon.wait_for(lambda: [q for q in self.daemon.queues() if q["id"]["controller"] == controller],
                             20, f"{controller}'s queue")
        time.sleep(5)  # a few scans: the allocator's pools settle
        start = rss_kib(self.daemon.process.pid)
        samples = [(0, start)]
        began = time.monotonic()
        while time.monotonic() - began < DURATION:
            time.sleep(min(10, DURATION / 6))
            samples.append((round(time.monotonic() - began), rss_kib(self.daemon.process.pid)))
            self.assertIsNone(self.daemon.process.poll(), "the daemon exited")
        print("RSS KiB over time: " + ", ".join(f"{t}s={kib}" for t, kib in samples), flush=True)
        self.assertLessEqual(max(kib for _, kib in samples) - start, SLACK_KIB, samples)

        queues = [q for q in self.daemon.queues() if q["id"]["controller"] == controller]
        self.assertEqual(len(queues), 1, queues)
        log = self.daemon.log_text()
        found = [line for line in log.splitlines() if " found: " in line]
        self.assertEqual(len(found), 1, found[:5])
        # Each socket's skip is said when its reason changes, not at every scan (a scan each 2 s): a driver slow
        # to answer under load flips a socket between "no reply" and its usual line now and then.
        per_socket = {}
        for line in log.splitlines():
            match = re.search(r"skipped (\S+\.sock)", line)
            if match:
                per_socket[match.group(1)] = per_socket.get(match.group(1), 0) + 1
        self.assertEqual(len(per_socket), SOCKETS, sorted(per_socket)[:5])
        scans = (time.monotonic() - began + 5) / 2
        self.assertLessEqual(max(per_socket.values()), max(4, scans / 10), per_socket)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        DURATION = float(sys.argv.pop(1))
    unittest.main(verbosity=2)

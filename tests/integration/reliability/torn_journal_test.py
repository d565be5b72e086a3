#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One short write never costs the journal (issue 45, item 2), on a real full file system.

The state dir is a 64 KiB tmpfs. Queues are switched until journal.log's next record would cross into a new
page; the file system is then filled, so the next append writes what fits in the last page and fails with
ENOSPC. That switch is refused. The filler goes, more queues are switched, the daemon is killed (SIGKILL).
Before the fix the fragment stayed and the next record was glued to it: `--restore-only` refused the whole
journal ("not a journal record"), every later start too, and the queues stayed in poll mode. Now
`--restore-only` exits 0 having restored every journaled queue, the driver reports every queue in interrupt
mode, and the next start succeeds.
"""
import errno
import os
import signal
import subprocess
import unittest

from daemon_harness import NVME_ADAPTD, Daemon, Workspace, journal_entries, require_root
from reliability_harness import DaemonBesideFakeDriver, FakeDriver

PAGE = 4096
QUEUES = 32
AFTER_THE_FAILURE = 3


class TornJournal(DaemonBesideFakeDriver):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("torn-journal")
        os.makedirs(self.ws.state_dir)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0750", "tmpfs", self.ws.state_dir], check=True)
        self.driver = FakeDriver(self.ws, "--queues", str(QUEUES))

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
            self.daemon = None
        subprocess.run(["umount", "-l", self.ws.state_dir], check=False)
        super().tearDown()

    def log_size(self):
        path = os.path.join(self.ws.state_dir, "journal.log")
        return os.path.getsize(path) if os.path.exists(path) else 0

    def switch(self, qid):
        self.daemon.ctl("override", f"{self.controller}:q{qid}", "poll", check=False)
        return self.driver.modes().get(qid) == "poll"

    def fill(self):
        """Takes every free page of the state dir's file system."""
        path = os.path.join(self.ws.state_dir, "filler")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * PAGE)
        except OSError as e:
            self.assertEqual(e.errno, errno.ENOSPC, e)
        finally:
            os.close(fd)
        return path

    def test_enospc_in_the_middle_of_a_record_then_more_switches_then_sigkill_restores_everything(self):
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        self.controller = f"uvnvme:{self.driver.pid}:0"
        self.daemon.wait_for(lambda: len([q for q in self.daemon.queues() if q["id"]["controller"] == self.controller])
                             == QUEUES, 20, f"{QUEUES} queues")
        qid, record = 0, 0
        while True:  # until the next record would cross into a page the file system cannot give
            qid += 1
            self.assertLess(qid, QUEUES - AFTER_THE_FAILURE, "journal.log never came near a page boundary")
            before = self.log_size()
            self.assertTrue(self.switch(qid), f"q{qid} not switched")
            record = self.log_size() - before
            room = PAGE - self.log_size() % PAGE
            if 16 < room < record - 16:
                break
        filler = self.fill()
        torn = qid + 1
        size_before = self.log_size()
        self.assertFalse(self.switch(torn), "a switch went through on a full file system")
        queue = [q for q in self.daemon.queues() if q["id"]["controller"] == self.controller
                 and q["id"]["queue"] == torn][0]
        self.assertIn("cannot journal it", queue.get("degradedReason", ""), queue)
        print(f"journal.log: {size_before} bytes, {self.log_size()} after the failed append "
              f"(a record is {record} bytes, {PAGE - size_before % PAGE} fitted)", flush=True)
        os.remove(filler)
        for later in range(torn, torn + AFTER_THE_FAILURE):
            self.assertTrue(self.switch(later), f"q{later} not switched after the filler went")
        self.daemon.stop(signal.SIGKILL)
        self.daemon = None

        polling = sorted(q for q, mode in self.driver.modes().items() if mode == "poll")
        self.assertEqual(len(polling), torn - 1 + AFTER_THE_FAILURE, polling)
        result = subprocess.run([NVME_ADAPTD, "--restore-only", "--config", self.ws.write_config({}),
                                 "--state-dir", self.ws.state_dir, "--runtime-dir", self.ws.runtime_dir],
                                capture_output=True, text=True, timeout=60)
        output = result.stdout + result.stderr
        print(output[-1500:], flush=True)
        self.assertEqual(result.returncode, 0, output)
        restored = [line for line in result.stdout.splitlines() if line.startswith("restored")]
        self.assertEqual(len(restored), len(polling), output)
        self.assertEqual([q for q, mode in self.driver.modes().items() if mode != "interrupt"], [])
        self.assertEqual(journal_entries(self.ws.state_dir), [])

        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"], log_name="second.log").start()
        self.assertEqual(self.daemon.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

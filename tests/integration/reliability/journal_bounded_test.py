#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The journal is bounded and restores in order (issue #37, item 4).

- 10,000 entries restore in under 10 s, kernel entries first although the oldest entry is a stuck driver's
  (a socket that accepts and never answers): the kernel's go back, the stuck one is kept, every other
  entry is dropped with the reason its lever gave.
- 1,000 entries of a driver that dies are dropped while the daemon runs, and the journal's files stay
  small: a change appends a record, and the log is folded back into journal.json.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import unittest

from daemon_harness import NVME_ADAPTD, Daemon, Workspace, journal_entries, require_root
from reliability_harness import FakeDriver

ENTRIES = 10_000


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def kernel_entry(i, boot):
    controller = f"nvme{9000 + i}"  # no such controller: the lever finds its attribute gone
    path = f"/sys/class/nvme/{controller}/adaptive_poll"
    point = {"lever": "adaptive_poll_sysfs", "target": {"controller": controller, "qid": 0},
             "steps": [{"object": path, "value": "-1"}]}
    return {"controller": controller, "lever": "adaptive_poll_sysfs", "target": path,
            "safe_value": json.dumps(point), "applied_value": "0", "boot_id": boot}


def driver_entry(i, boot, socket_path):
    controller = f"uvnvme:{4000000 + i}:0"
    target = f"{controller} q1"
    point = {"lever": "uvnvme_socket", "target": {"controller": controller, "qid": 1, "socket": socket_path,
                                                  "ctrl_index": 0},
             "steps": [{"object": f"{target} mode", "value": "interrupt"}]}
    return {"controller": controller, "queue": 1, "lever": "uvnvme_socket", "target": target,
            "safe_value": json.dumps(point), "applied_value": "poll", "boot_id": boot}


class JournalBounded(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("journal-bounded")
        os.makedirs(self.ws.state_dir)
        self.cleanups = []

    def tearDown(self):
        for cleanup in reversed(self.cleanups):
            cleanup()
        self.ws.cleanup()

    def stuck_socket(self):
        """A socket that accepts and never answers: a driver stuck with the agent's queue in poll."""
        path = self.ws.path("stuck.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(16)
        held = []

        def accept_and_keep_silent():
            while True:
                held.append(listener.accept())
        threading.Thread(target=accept_and_keep_silent, daemon=True).start()
        self.cleanups.append(listener.close)
        return path

    def test_ten_thousand_entries_restore_kernel_first_within_ten_seconds(self):
        boot = boot_id()
        stuck = self.stuck_socket()
        entries = [driver_entry(0, boot, stuck)]  # the oldest
        for i in range(1, ENTRIES):
            entries.append(kernel_entry(i, boot) if i % 2 else driver_entry(i, boot, self.ws.path(f"gone{i}.sock")))
        with open(os.path.join(self.ws.state_dir, "journal.json"), "w") as f:
            json.dump({"entries": entries}, f)
        start = time.monotonic()
        result = subprocess.run([NVME_ADAPTD, "--restore-only", "--config", self.ws.write_config({}),
                                 "--state-dir", self.ws.state_dir], capture_output=True, text=True, timeout=120)
        seconds = time.monotonic() - start
        print(f"restore of {ENTRIES} entries: {seconds:.2f} s", flush=True)
        lines = [line for line in result.stdout.splitlines() if line.startswith(("restored", "dropped", "kept"))]
        self.assertEqual(len(lines), ENTRIES, result.stdout[-2000:] + result.stderr[-2000:])
        self.assertLess(seconds, 10.0)
        kinds = ["kernel" if " (adaptive_poll_sysfs " in line else "driver" for line in lines]
        self.assertEqual(kinds, sorted(kinds, key=lambda k: k != "kernel"), "a driver's entry before a kernel's")
        self.assertEqual(kinds.count("kernel"), ENTRIES // 2)
        kept = [line for line in lines if line.startswith("kept")]
        self.assertEqual(len(kept), 1, kept[:3])
        self.assertIn(stuck, kept[0])
        self.assertEqual(result.returncode, 1, "an entry was kept: exit 1")
        self.assertEqual(len(journal_entries(self.ws.state_dir)), 1)
        with open(os.path.join(self.ws.state_dir, "journal.json")) as f:
            self.assertEqual(len(json.load(f)["entries"]), 1, "what is left is compacted into journal.json")

    def test_a_thousand_entries_of_a_driver_that_died_are_dropped_while_running(self):
        driver = FakeDriver(self.ws, "--controllers", "4", "--queues", "250")
        self.cleanups.append(driver.stop)
        daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        self.cleanups.append(lambda: daemon.stop(signal.SIGKILL))
        prefix = f"uvnvme:{driver.pid}:"
        daemon.wait_for(lambda: len([q for q in daemon.queues() if q["id"]["controller"].startswith(prefix)]) == 1000,
                        60, "1,000 queues")
        for ctrl in range(4):  # a global mode reaches only controllers found later
            daemon.ctl("policy", "set", "--controller", f"{prefix}{ctrl}", "--mode", "poll")
        daemon.wait_for(lambda: len(journal_entries(self.ws.state_dir)) == 1000, 180, "1,000 journal entries")
        sizes = {name: os.path.getsize(os.path.join(self.ws.state_dir, name))
                 for name in ("journal.json", "journal.log") if os.path.exists(os.path.join(self.ws.state_dir, name))}
        print(f"journal files with 1,000 entries: {sizes}", flush=True)
        driver.stop()
        start = time.monotonic()
        daemon.wait_for(lambda: journal_entries(self.ws.state_dir) == [], 30, "the dead driver's entries dropped")
        print(f"1,000 dead-driver entries dropped in {time.monotonic() - start:.1f} s", flush=True)
        dropped = [line for line in daemon.log_text().splitlines() if "journal: dropped" in line and prefix in line]
        self.assertEqual(len(dropped), 1000, dropped[:3])
        self.assertIn("is gone", dropped[0])
        self.assertIsNone(daemon.process.poll(), "the daemon stopped")
        self.assertEqual(daemon.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

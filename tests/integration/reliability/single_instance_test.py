#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One daemon per state dir (issue #37, item 5).

A running agent holds two uvnvme queues in poll mode. A second nvme-adaptd on the same state dir, whether a
full daemon or `--restore-only`, refuses with exit 2 and the holder's pid, and leaves the journal and the
queues as they were. Once the holder is gone (kill -9 included, as before the unit's ExecStopPost=) the lock
is free and --restore-only puts the queues back.
"""
import os
import signal
import subprocess
import unittest

from daemon_harness import NVME_ADAPTD, Daemon, Load, Workspace, journal_entries, require_root


class SingleInstance(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("single-instance")
        self.load = Load(self.ws, "--mode", "external", "--queues", "2", "--qd", "4", "--runtime", "120s").start()
        self.daemon = None

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        self.load.stop()
        self.ws.cleanup()

    def journal(self):
        return journal_entries(self.ws.state_dir)

    def journal_files(self):
        """journal.json and journal.log as bytes: "as they were" means not a byte written."""
        files = {}
        for name in ("journal.json", "journal.log"):
            path = os.path.join(self.ws.state_dir, name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    files[name] = f.read()
        return files

    def second(self, *flags):
        args = [NVME_ADAPTD, "--config", self.ws.write_config({}, "second.json"), "--state-dir", self.ws.state_dir,
                "--runtime-dir", self.ws.runtime_dir, "--sources", "uvnvme", "--metrics-listen", "off", *flags]
        return subprocess.run(args, capture_output=True, text=True, timeout=30)

    def polling_agent(self):
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        queues = self.daemon.wait_for(
            lambda: (lambda q: q if len(q) == 2 else None)(
                [q for q in self.daemon.queues() if q.get("source") == "SOURCE_UVNVME"]), 20, "2 uvnvme queues")
        controller = queues[0]["id"]["controller"]
        self.daemon.ctl("policy", "set", "--controller", controller, "--mode", "poll")
        self.daemon.wait_for(lambda: self.load.queue_modes() == {1: "poll", 2: "poll"}, 10, "both queues polling")
        self.assertEqual(len(self.journal()), 2)

    def agent_modes(self):
        return sorted(q["mode"] for q in self.daemon.queues() if q.get("source") == "SOURCE_UVNVME")

    def test_restore_only_refuses_while_an_agent_holds_the_state_dir(self):
        self.polling_agent()
        before = self.journal_files()
        for flags in (["--restore-only"], []):
            result = self.second(*flags)
            self.assertEqual(result.returncode, 2, f"{flags}: {result.stdout}{result.stderr}")
            self.assertIn(f"pid {self.daemon.process.pid}", result.stderr)
            self.assertIn("nvme-adaptd.lock", result.stderr)
            self.assertNotIn("restored", result.stdout + result.stderr)
            self.assertEqual(self.journal_files(), before, f"{flags} touched the journal")
            self.assertEqual(len(self.journal()), 2)
            self.assertEqual(self.load.queue_modes(), {1: "poll", 2: "poll"}, f"{flags} restored the queues")
            self.assertEqual(self.agent_modes(), ["REAP_MODE_POLL", "REAP_MODE_POLL"])
        self.assertIsNone(self.daemon.process.poll(), "the running agent stopped")

    def test_the_lock_is_free_once_the_holder_is_killed(self):
        self.polling_agent()
        self.daemon.stop(signal.SIGKILL)
        result = self.second("--restore-only")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("2 restored", result.stdout)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"})
        self.assertEqual(self.journal(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)

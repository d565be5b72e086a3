#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Crash recovery and the socket lever against a real uvnvme process.

kill -9 after the daemon switched queues leaves them switched; the next start puts every journaled change
back (before it discovers anything) and then applies the persisted policy, which is the one last set.
SIGTERM puts everything back. --dry-run changes nothing on the device.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import unittest

from daemon_harness import NVME_ADAPTD, Daemon, Load, Workspace, journal_entries, require_root


def uvnvme_controller(daemon, count):
    def ready():
        queues = [q for q in daemon.queues() if q.get("source") == "SOURCE_UVNVME"]
        return queues if len(queues) == count else None
    return daemon.wait_for(ready, 20, f"{count} uvnvme queues")[0]["id"]["controller"]


class Recovery(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("recovery")
        self.load = Load(self.ws, "--mode", "external", "--queues", "2", "--qd", "4", "--runtime", "120s").start()
        self.daemons = []

    def tearDown(self):
        for daemon in self.daemons:
            daemon.stop(signal.SIGKILL)
        self.load.stop()
        self.ws.cleanup()

    def daemon(self, *flags, log="daemon.log"):
        daemon = Daemon(self.ws, flags=["--sources", "uvnvme", *flags], log_name=log).start()
        self.daemons.append(daemon)
        return daemon

    def switches(self):
        return {q["qid"]: q["mode_switches"] for q in self.load.control({"op": "list"})["queues"]}

    def test_kill9_then_restart_restores_first_and_keeps_the_last_policy(self):
        first = self.daemon()
        controller = uvnvme_controller(first, 2)
        first.ctl("policy", "set", "--controller", controller, "--mode", "poll")
        first.wait_for(lambda: self.load.queue_modes() == {1: "poll", 2: "poll"}, 10, "both queues polling")
        first.ctl("policy", "set", "--pace-slack", "123us")
        self.assertEqual(len(journal_entries(self.ws.state_dir)), 2)
        first.stop(signal.SIGKILL)
        self.assertEqual(self.load.queue_modes(), {1: "poll", 2: "poll"}, "kill -9 cannot restore anything")
        self.assertEqual(self.switches(), {1: 1, 2: 1})

        second = self.daemon(log="daemon2.log")
        uvnvme_controller(second, 2)
        log = second.log_text()
        restored = [i for i, line in enumerate(log.splitlines()) if "journal: restored" in line]
        found = [i for i, line in enumerate(log.splitlines()) if " found: " in line]
        self.assertEqual(len(restored), 2, log)
        self.assertLess(max(restored), min(found), "a queue was discovered before the journal was restored")
        # Restored to interrupt, then the persisted policy (controller in poll) put them back in poll.
        second.wait_for(lambda: self.switches() == {1: 3, 2: 3}, 10, "restore then re-apply")
        self.assertEqual(self.load.queue_modes(), {1: "poll", 2: "poll"})
        policy = second.ctl_json("policy", "get")["policy"]
        self.assertEqual(policy["policy"]["paceSlackNs"], "123000")
        self.assertEqual(policy["controllers"][0]["policy"]["mode"], "CONTROLLER_MODE_POLL")

        self.assertEqual(second.stop(signal.SIGTERM), 0)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"})
        self.assertEqual(journal_entries(self.ws.state_dir), [])

    def crash_with_both_queues_polling(self):
        first = self.daemon(log="crashed.log")
        controller = uvnvme_controller(first, 2)
        first.ctl("policy", "set", "--controller", controller, "--mode", "poll")
        first.wait_for(lambda: self.load.queue_modes() == {1: "poll", 2: "poll"}, 10, "both queues polling")
        first.stop(signal.SIGKILL)
        self.assertEqual(self.journal_entries(), 2)
        # The persisted policy would switch them again: the tests below judge the restore alone.
        os.remove(os.path.join(self.ws.state_dir, "policy.json"))
        return controller

    def journal_entries(self):
        return len(journal_entries(self.ws.state_dir))

    def run_daemon(self, *flags, config=None):
        args = [NVME_ADAPTD, "--config", config or self.ws.write_config({}), "--state-dir", self.ws.state_dir,
                "--runtime-dir", self.ws.runtime_dir, "--sources", "uvnvme", *flags]
        return subprocess.run(args, capture_output=True, text=True, timeout=60)

    def test_a_dry_run_start_after_a_crash_restores_for_real(self):
        self.crash_with_both_queues_polling()
        second = self.daemon("--dry-run", log="dry.log")
        uvnvme_controller(second, 2)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"}, second.log_text())
        self.assertEqual(self.journal_entries(), 0)
        self.assertEqual(second.stop(), 0)

    def test_restore_comes_before_a_bad_config_and_a_taken_metrics_port(self):
        self.crash_with_both_queues_polling()
        bad = self.ws.path("bad.json")
        with open(bad, "w") as f:
            f.write('{"polcy": {}}')
        result = self.run_daemon("--metrics-listen", "off", config=bad)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"}, result.stderr)
        self.assertEqual(self.journal_entries(), 0)

        self.crash_with_both_queues_polling()
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = self.run_daemon("--metrics-listen", f"127.0.0.1:{port}")
        taken.close()
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("metrics", result.stderr)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"}, result.stderr)
        self.assertEqual(self.journal_entries(), 0)

    def test_restore_only_reports_and_exits(self):
        self.crash_with_both_queues_polling()
        result = self.run_daemon("--restore-only")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("journal: 2 entries: 2 restored, 0 dropped by rule, 0 kept", result.stdout)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"})
        again = self.run_daemon("--restore-only")
        self.assertEqual(again.returncode, 0)
        self.assertIn("journal: 0 entries", again.stdout)

    def test_entries_are_stamped_and_judged_by_boot_and_device(self):
        self.crash_with_both_queues_polling()
        path = os.path.join(self.ws.state_dir, "journal.json")
        journal = {"entries": journal_entries(self.ws.state_dir)}
        if os.path.exists(os.path.join(self.ws.state_dir, "journal.log")):
            os.remove(os.path.join(self.ws.state_dir, "journal.log"))  # the edited entries alone, in journal.json
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        for entry in journal["entries"]:
            self.assertEqual(entry["boot_id"], boot)
            self.assertRegex(entry["device_identity"], rf"^pid={self.load.process.pid} start=\d+$")
        journal["entries"][0]["boot_id"] = "00000000-0000-0000-0000-000000000000"
        journal["entries"][1]["device_identity"] = f"pid={self.load.process.pid} start=1"
        with open(path, "w") as f:
            json.dump(journal, f)
        result = self.run_daemon("--restore-only")
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("0 restored, 2 dropped by rule", result.stdout)
        self.assertIn("did not survive the reboot", result.stdout)
        self.assertIn("now names another device", result.stdout)
        self.assertEqual(self.load.queue_modes(), {1: "poll", 2: "poll"}, "an entry was replayed blindly")

    def test_status_lists_the_working_lever(self):
        daemon = self.daemon()
        uvnvme_controller(daemon, 2)
        levers = daemon.ctl_json("status").get("levers", [])
        self.assertEqual([(l["name"], l.get("available", False)) for l in levers], [("uvnvme_socket", True)])

    def test_override_through_the_socket_lever_and_back(self):
        daemon = self.daemon()
        controller = uvnvme_controller(daemon, 2)
        daemon.ctl("override", f"{controller}:q2", "poll")
        daemon.wait_for(lambda: self.load.queue_modes() == {1: "interrupt", 2: "poll"}, 10, "q2 polling")
        queue = [q for q in daemon.queues() if q["id"]["queue"] == 2][0]
        self.assertEqual(queue["mode"], "REAP_MODE_POLL")
        self.assertEqual(queue["lever"], "uvnvme_socket")
        daemon.ctl("override", f"{controller}:q2", "none")
        daemon.wait_for(lambda: self.load.queue_modes() == {1: "interrupt", 2: "interrupt"}, 10, "q2 back")

    def test_dry_run_changes_nothing_on_the_device(self):
        daemon = self.daemon("--dry-run")
        controller = uvnvme_controller(daemon, 2)
        daemon.ctl("policy", "set", "--controller", controller, "--mode", "poll")
        daemon.wait_for(lambda: all(q["mode"] == "REAP_MODE_POLL" for q in daemon.queues()), 10,
                        "the agent believing both queues poll")
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"})
        self.assertEqual(self.switches(), {1: 0, 2: 0})
        self.assertEqual(daemon.stop(), 0)
        self.assertEqual(self.switches(), {1: 0, 2: 0})


if __name__ == "__main__":
    unittest.main(verbosity=2)

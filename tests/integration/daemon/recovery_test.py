#!/usr/bin/env python3
"""Crash recovery and the socket lever against a real uvnvme process.

kill -9 after the daemon switched queues leaves them switched; the next start puts every journaled change
back (before it discovers anything) and then applies the persisted policy, which is the one last set.
SIGTERM puts everything back. --dry-run changes nothing on the device.
"""
import json
import os
import signal
import sys
import unittest

from daemon_harness import Daemon, Load, Workspace, require_root


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
        with open(os.path.join(self.ws.state_dir, "journal.json")) as f:
            self.assertEqual(len(json.load(f)["entries"]), 2)
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
        with open(os.path.join(self.ws.state_dir, "journal.json")) as f:
            self.assertEqual(json.load(f).get("entries", []), [])

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

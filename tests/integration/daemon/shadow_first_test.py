#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/operations.md "Shadow mode first", step by step, against nvme-adaptd and a running uvnvme-load.

The shipped config (deploy/config/config.json) first: every queue observed, eligible, off. Then the step's
own words: the config's global mode becomes CONTROLLER_MODE_SHADOW and the daemon is reloaded (SIGHUP, as
the unit's ExecReload sends), and the queues that were already there must be in shadow (issue 32: they once
kept the global mode they had when discovered). Then one controller adaptive through a `controllers` entry,
and `nvme-adaptctl policy set --mode off` as the node's off switch.
"""
import json
import os
import signal
import socket
import unittest
import urllib.request

from daemon_harness import Daemon, Load, Workspace, require_root

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ShadowFirst(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("shadow-first")
        with open(os.path.join(SRC, "deploy/config/config.json")) as f:
            self.shipped = json.load(f)
        self.port = free_port()
        self.daemon = Daemon(self.ws, config=self.shipped,
                             flags=["--sources", "uvnvme", "--metrics-listen", f"127.0.0.1:{self.port}"])
        self.load = Load(self.ws, "--mode", "external", "--queues", "2", "--runtime", "60s", "--qd", "4")

    def tearDown(self):
        self.load.stop()
        self.daemon.stop()
        self.ws.cleanup()

    def reload_with(self, config):
        before = self.daemon.log_text().count("reload (SIGHUP): config")
        self.ws.write_config(config)
        self.daemon.send(signal.SIGHUP)
        self.daemon.wait_for(lambda: self.daemon.log_text().count("reload (SIGHUP): config") > before, 10,
                             "the reload's report")
        self.assertNotIn("NOT applied", self.daemon.log_text().splitlines()[-1])

    def modes(self):
        return {(q["id"]["controller"], q["id"]["queue"]): q.get("controllerMode") for q in self.daemon.queues()}

    def test_shadow_first_procedure(self):
        self.load.start()
        self.daemon.start()
        # Step 1: the shipped config observes; the queues are there, eligible, off.
        queues = self.daemon.wait_for(lambda: [q for q in self.daemon.queues() if q.get("eligible")], 20,
                                      "uvnvme's queues, eligible")
        controller = queues[0]["id"]["controller"]
        self.assertEqual(set(self.modes().values()), {"CONTROLLER_MODE_OFF"})
        scrape = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10).read().decode()
        self.assertRegex(scrape, r'nvme_adapt_queue_eligible\{[^}]*\} 1')

        # Step 2: the config's global mode to shadow, and a reload. The existing queues follow.
        shadow = dict(self.shipped, policy=dict(self.shipped.get("policy", {}), mode="CONTROLLER_MODE_SHADOW"))
        self.reload_with(shadow)
        self.assertEqual(set(self.modes().values()), {"CONTROLLER_MODE_SHADOW"}, self.daemon.log_text()[-3000:])
        modes_before = self.load.queue_modes()
        self.assertEqual(set(modes_before.values()), {"interrupt"}, "shadow changed a queue's reaping mode")

        # Step 3: the decisions are readable (`nvme-adaptctl status`).
        self.assertIn("queues", self.daemon.ctl_json("status"))

        # Step 4: one controller adaptive (a `controllers` entry), the others stay in shadow.
        adaptive = dict(shadow, controllers=[{"controller": controller,
                                              "policy": {"mode": "CONTROLLER_MODE_ADAPTIVE"}}])
        self.reload_with(adaptive)
        self.assertEqual({m for (c, _), m in self.modes().items() if c == controller}, {"CONTROLLER_MODE_ADAPTIVE"})

        # The node's off switch: every queue off and back in its safe mode, the controller's entry included.
        self.daemon.ctl("policy", "set", "--mode", "off")
        self.assertEqual(set(self.modes().values()), {"CONTROLLER_MODE_OFF"})
        self.daemon.wait_for(lambda: set(self.load.queue_modes().values()) == {"interrupt"}, 10,
                             "every queue back in interrupt mode")


if __name__ == "__main__":
    unittest.main(verbosity=2)

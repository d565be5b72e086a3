#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`nvme-adaptctl report --json` against the real daemon in shadow mode over a uvnvme QD8 load: the uvnvme
controller is reported with its lever (the control socket) and that lever's risk class, its eligible queue,
the shadow record (windows judged, fast enough to try, the would-poll share) and a verdict line; nothing was
switched. The text form prints the same verdict."""
import subprocess
import sys
import time
import unittest

from daemon_harness import NVME_ADAPTCTL, Daemon, Load, Workspace, require_root


class Report(unittest.TestCase):
    def test_report_shadow_uvnvme(self):
        require_root(self)
        ws = Workspace("report")
        daemon = Daemon(ws, config={}, flags=["--sources", "uvnvme", "--default-mode", "shadow"])
        load = Load(ws, "--mode", "external", "--controller-rt", "--phases", "1s:idle,6s:qd8,30s:idle")
        try:
            daemon.start()
            load.start()
            time.sleep(8)  # through the QD8 phase; the idle one keeps the process (and its controller) there
            report = daemon.ctl_json("report")
            text = subprocess.run([NVME_ADAPTCTL, "--addr", ws.api_socket, "report"], capture_output=True,
                                  text=True, timeout=30, check=True).stdout
            modes = load.queue_modes()
        finally:
            load.stop()
            daemon.stop()
        print(text)
        controller = f"uvnvme:{load.process.pid}:0"
        self.assertTrue(report.get("collector"), report)
        self.assertIn("kernelRelease", report)
        self.assertIn("kernelBtf", report)
        ours = [c for c in report.get("controllers", []) if c["controller"] == controller]
        self.assertEqual(len(ours), 1, report)
        c = ours[0]
        self.assertEqual(c["mode"], "CONTROLLER_MODE_SHADOW")
        self.assertEqual(c["lever"], "uvnvme_socket")
        self.assertEqual(c["leverRisk"], "changes_nothing_else")
        self.assertIn(1, c["eligibleQueues"])
        self.assertGreater(int(c["shadowWindows"]), 0)
        self.assertGreater(int(c["shadowWouldPollWindows"]), 0)
        self.assertGreater(c["shadowWouldPollShare"], 0)
        self.assertEqual(int(c["judgedWindows"]), 0, "shadow mode judged a polling window")
        self.assertTrue(c["verdict"].startswith("would poll about"), c["verdict"])
        self.assertIn("no reset needed", c["verdict"])
        self.assertIn(c["verdict"], " ".join(text.split()))
        self.assertEqual(set(modes.values()), {"interrupt"}, f"shadow mode changed a queue: {modes}")
        ws.cleanup()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)

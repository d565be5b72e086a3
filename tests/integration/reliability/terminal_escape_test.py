#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Names a driver chose reach the operator's terminal escaped (issue 45, item 8).

A driver names its control socket with an OSC that retitles the terminal, a screen clear and CSI as a C1
control, and refuses to poll: the socket lever's error, which quotes the socket's path, becomes
the queue's degraded reason and the lever's last error. Before the fix `status` and `queues` printed it raw
(the screen cleared, the terminal retitled). Now every table and text output of nvme-adaptctl holds
printable UTF-8 and newlines only, the name appears escaped (\\x1b]0;pwned...), and `-o json` is valid JSON
with the same escaped text.

A second driver names its socket with a byte of no UTF-8. Before the fix the first switch of its queue
killed the agent (its restore point, JSON, could not hold the path: an uncaught exception). Now discovery
refuses the name, once in the log, escaped, and the agent runs on.
"""
import json
import signal
import subprocess
import unittest

from daemon_harness import NVME_ADAPTCTL, Daemon, Workspace, require_root
from reliability_harness import FakeDriver

TEXT_COMMANDS = [["status"], ["queues"], ["queues", "-o", "wide"], ["policy", "get"]]


def non_printables(output):
    """The bytes of `output` a terminal would act on: C0 but newline, DEL, C1, and what is no UTF-8."""
    found = [f"\\x{b:02x}" for b in output if (b < 0x20 and b != 0x0a) or b == 0x7f]
    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError as e:
        return found + [f"no UTF-8 at byte {e.start}"]
    return found + [f"U+{ord(c):04X}" for c in text if 0x80 <= ord(c) < 0xa0]


class TerminalEscape(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("terminal-escape")
        self.driver = FakeDriver(self.ws, "--hostile-socket", "--refuse-poll")
        self.not_utf8 = FakeDriver(self.ws, "--not-utf8-socket")
        self.daemon = None

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        self.driver.stop()
        self.not_utf8.stop()
        self.ws.cleanup()

    def ctl(self, *args):
        result = subprocess.run([NVME_ADAPTCTL, "--addr", self.ws.api_socket, *args], capture_output=True, timeout=30)
        return result.stdout + result.stderr

    def test_a_socket_name_with_escape_sequences_is_printed_escaped_everywhere(self):
        self.daemon = Daemon(self.ws, flags=["--sources", "uvnvme"]).start()
        controller = f"uvnvme:{self.driver.pid}:0"
        self.daemon.wait_for(lambda: [q for q in self.daemon.queues() if q["id"]["controller"] == controller], 20,
                             f"{controller}'s queue")
        override = self.ctl("override", f"{controller}:q1", "poll")
        self.daemon.wait_for(lambda: [q for q in self.daemon.queues() if q.get("degraded")], 20, "the queue degraded")
        outputs = {"override": override}
        for command in TEXT_COMMANDS:
            outputs[" ".join(command)] = self.ctl(*command)
        for name, output in outputs.items():
            print(f"--- nvme-adaptctl {name}:\n{output.decode('utf-8', 'replace')[-1200:]}", flush=True)
            self.assertEqual(non_printables(output), [], f"nvme-adaptctl {name} printed what a terminal acts on")
        shown = outputs["status"] + outputs["queues"]
        self.assertIn(b"\\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b31m.sock", shown, "the name is not shown escaped")

        document = self.ctl("--json", "queues")
        self.assertEqual(non_printables(document), [])
        degraded = [q for q in json.loads(document)["queues"] if q.get("degraded")]
        self.assertEqual(len(degraded), 1, document)
        self.assertIn("\\x1b]0;pwned", degraded[0]["degradedReason"])

        listed = {q["id"]["controller"] for q in self.daemon.queues()}
        self.assertNotIn(f"uvnvme:{self.not_utf8.pid}:0", listed)
        refusals = [line for line in self.daemon.log_text().splitlines() if "not UTF-8" in line]
        self.assertEqual(len(refusals), 1, refusals)
        self.assertIn(f"{self.not_utf8.pid}-\\xff.sock", refusals[0])
        self.assertEqual(self.daemon.stop(), 0)
        self.daemon = None


if __name__ == "__main__":
    unittest.main(verbosity=2)

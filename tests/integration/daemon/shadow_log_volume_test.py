#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A shadow run writes a log a journal keeps (issue 45, item 6).

A real nvme-adaptd in shadow mode for 20 s beside uvnvme-load with 8 queues under load. The policy's poll
threshold is set so high (1 ms a completion) that every window is fast enough to try polling: every window
is a shadow "would poll" decision, the most decisions shadow mode can make. Those belong to the event stream,
the trace and the counters; the log gets state changes (the queues found) and errors, rate-limited per queue.

Before the fix every shadow decision was a log line at info: thousands here, 565 per queue in 20 s in the
issue's run, so a dozen queues passed journald's rate limit. The run must write fewer than 50 lines, while
the counters show that shadow mode did decide, and no queue was switched.
"""
import re
import time
import unittest
import urllib.request

from daemon_harness import Daemon, Load, Workspace, require_root
from shadow_first_test import free_port

QUEUES = 8
RUN_S = 20
MAX_LINES = 50


def shadow_decisions(port):
    """The sum of nvme_adapt_queue_shadow_decisions_total over every queue and reason, per decision."""
    scrape = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    totals = {}
    for match in re.finditer(r'^nvme_adapt_queue_shadow_decisions_total\{([^}]*)\} (\S+)$', scrape, re.M):
        decision = re.search(r'decision="([^"]*)"', match.group(1)).group(1)
        totals[decision] = totals.get(decision, 0) + float(match.group(2))
    return totals


class ShadowLogVolume(unittest.TestCase):
    def test_shadow_log_volume_of_8_queues_in_20_s(self):
        require_root(self)
        ws = Workspace("shadow-log-volume")
        port = free_port()
        config = {"policy": {"mode": "CONTROLLER_MODE_SHADOW", "pollThresholdNs": "1000000",
                             "windowCompletions": 1024}}
        daemon = Daemon(ws, config=config,
                        flags=["--sources", "uvnvme", "--metrics-listen", f"127.0.0.1:{port}"])
        load = Load(ws, "--mode", "external", "--controller-rt", "--queues", str(QUEUES), "--qd", "8",
                    "--runtime", f"{RUN_S + 15}s")
        try:
            load.start()
            daemon.start()
            daemon.wait_for(lambda: len([q for q in daemon.queues() if q.get("eligible")]) == QUEUES, 20,
                            f"uvnvme's {QUEUES} queues, eligible")
            during = len(daemon.log_text().splitlines())
            decisions_before = shadow_decisions(port)
            time.sleep(RUN_S)
            during = len(daemon.log_text().splitlines()) - during
            decisions = shadow_decisions(port)
            modes = load.queue_modes()
        finally:
            daemon.stop()
            load.stop()
        lines = daemon.log_text().splitlines()
        ws.cleanup()

        would_poll = decisions.get("poll", 0) - decisions_before.get("poll", 0)
        print(f"shadow, {QUEUES} queues, {RUN_S} s: {during} log lines in those {RUN_S} s, {len(lines)} in the "
              f"whole run (start and stop included); {would_poll:.0f} would-poll decisions "
              f"({would_poll / QUEUES:.0f} a queue)")
        for line in lines[:60]:
            print("  " + line)
        self.assertGreater(would_poll, 100 * QUEUES, "shadow mode hardly decided: the load did not run")
        self.assertEqual(set(modes.values()), {"interrupt"}, "shadow mode switched a queue")
        self.assertLess(len(lines), MAX_LINES, "the whole run's log")


if __name__ == "__main__":
    unittest.main(verbosity=2)

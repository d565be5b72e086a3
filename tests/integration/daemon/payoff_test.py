#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What polling gained and cost, and what shadow mode would have done, in the agent's Prometheus scrape.

1. Adaptive mode over a QD8 load on uvnvme (a rate the emulated device serves faster when polled): the queue's
   nvme_adapt_queue_poll_speedup is above 1 (the engine keeps only windows strictly faster than their
   baseline), completions were gained, and the reaper thread's CPU spent polling is positive.
2. Shadow mode over the same load: shadow decision counts by decision and reason, the would-poll completions,
   and no switch (no switches_total series, and uvnvme applied no mode change).
"""
import os
import socket
import sys
import time
import unittest
import urllib.request

from daemon_harness import Daemon, Load, Workspace, require_root

PHASE_S = 12


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """{(name, frozenset(labels)): value} of the text exposition."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, value = line.rsplit(" ", 1)
        name, labels = series, frozenset()
        if "{" in series:
            name, rest = series.split("{", 1)
            pairs = [p for p in rest.rstrip("}").split(",") if p]
            labels = frozenset(tuple(p.split("=", 1)) for p in pairs)
            labels = frozenset((k, v.strip('"')) for k, v in labels)
        samples[(name, labels)] = float(value)
    return samples


def of_queue(samples, name, controller, **labels):
    """Values of `name` for the controller's queue 1, with the extra labels given."""
    found = []
    for (n, ls), value in samples.items():
        d = dict(ls)
        if n == name and d.get("controller") == controller and d.get("queue") == "1" and \
                all(d.get(k) == v for k, v in labels.items()):
            found.append(value)
    return found


class Payoff(unittest.TestCase):
    def run_phase(self, name, mode):
        ws = Workspace(f"payoff-{name}")
        port = free_port()
        daemon = Daemon(ws, config={}, flags=["--sources", "uvnvme", "--default-mode", mode,
                                              "--metrics-listen", f"127.0.0.1:{port}"])
        # An idle tail keeps the process, and so its queue's series, there for the scrape.
        load = Load(ws, "--mode", "external", "--controller-rt", "--phases", f"1s:idle,{PHASE_S}s:qd8,30s:idle")
        try:
            daemon.start()
            load.start()
            time.sleep(1 + PHASE_S + 2.5)  # the last windows and a counter refresh (every second) reach the exposition
            samples = scrape(port)
            switches = sum(q["mode_switches"] for q in load.control({"op": "list"})["queues"])
        finally:
            load.stop()
            daemon.stop()
        controller = f"uvnvme:{load.process.pid}:0"
        print(f"{name}: {switches} mode switches applied by uvnvme")
        for (n, ls), value in sorted(samples.items(), key=lambda kv: kv[0][0]):
            if dict(ls).get("controller") == controller and ("payoff" in n or "poll" in n or "shadow" in n
                                                               or "gained" in n or "switches" in n):
                print(f"  {n}{dict(ls)} {value}")
        ws.cleanup()
        return samples, controller, switches

    def test_payoff_adaptive_qd8_then_shadow(self):
        require_root(self)
        samples, controller, switches = self.run_phase("adaptive", "adaptive")
        speedup = of_queue(samples, "nvme_adapt_queue_poll_speedup", controller)
        self.assertEqual(len(speedup), 1, "no kept polling window at QD8: no nvme_adapt_queue_poll_speedup")
        self.assertGreater(speedup[0], 1.0)
        gained = of_queue(samples, "nvme_adapt_queue_completions_gained_total", controller)
        self.assertTrue(gained and gained[0] > 0, f"completions gained {gained}")
        polled = of_queue(samples, "nvme_adapt_queue_polled_completions_total", controller)
        self.assertTrue(polled and polled[0] > 0, f"polled completions {polled}")
        kept_s = of_queue(samples, "nvme_adapt_queue_polling_seconds_total", controller, outcome="kept")
        self.assertTrue(kept_s and kept_s[0] > 0, f"time in kept polling windows {kept_s}")
        cpu = of_queue(samples, "nvme_adapt_queue_polling_cpu_seconds_total", controller)
        self.assertTrue(cpu and cpu[0] > 0, f"CPU spent polling {cpu}")
        self.assertGreater(switches, 0)

        samples, controller, switches = self.run_phase("shadow", "shadow")
        would_poll = of_queue(samples, "nvme_adapt_queue_shadow_decisions_total", controller, decision="poll",
                              reason="window_fast")
        stay = of_queue(samples, "nvme_adapt_queue_shadow_decisions_total", controller, decision="interrupt",
                        reason="window_slow")
        self.assertTrue(would_poll and would_poll[0] > 0, f"shadow window_fast decisions {would_poll}")
        self.assertEqual(len(stay), 1, "the window_slow series is exported beside window_fast")
        completions = of_queue(samples, "nvme_adapt_queue_shadow_completions_total", controller, decision="poll")
        self.assertTrue(completions and completions[0] > 0, f"shadow would-poll completions {completions}")
        self.assertEqual(of_queue(samples, "nvme_adapt_queue_switches_total", controller), [],
                         "shadow mode switched the queue")
        self.assertEqual(of_queue(samples, "nvme_adapt_queue_poll_speedup", controller), [])
        self.assertEqual(switches, 0, "uvnvme applied a mode change in shadow mode")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The closed loop on uvnvme: the agent in adaptive mode over a light, heavy, light load.

Bound tested: once the heavy phase ends, the queue is back in interrupt mode within 1 s and stays there.
At the light phase's rate (12-20k IOPS at QD1) a polling window's next completion falls behind pace at once
(the baseline was ~3-5 us per completion, the light phase gives 50-80 us), the BPF pace check fails the try,
and a measuring window at QD1 averages 50-80 us, above the 10 us threshold, so it never tries again; a
window that straddles the drop ends within 8192 completions. 1 s covers that with room for a loaded machine.

The policy is the default one (the patch's 20 us pace slack, the batch allowance on): a try's window
starts when uvnvme's reaper switched (its mode probe) and a reap of n completions is held to k + n - 1,
so the emulated device's batches no longer fail polling on the first reap (DESIGN.md section 3).
"""
import subprocess
import sys
import time
import unittest

from daemon_harness import NVME_ADAPT_REPLAY, Daemon, Load, Workspace, parse_decision, read_lines, require_root

LIGHT_S, HEAVY_S = 4, 8
BOUND_NS = 1_000_000_000
SLACK_NS = 500_000_000  # the phases start after uvnvme-load's setup


class ClosedLoop(unittest.TestCase):
    def test_light_heavy_light(self):
        require_root(self)
        ws = Workspace("closed-loop")
        trace = ws.path("trace")
        daemon = Daemon(ws, config={},
                        flags=["--sources", "uvnvme", "--default-mode", "adaptive", "--record-windows", trace])
        load = Load(ws, "--mode", "external", "--controller-rt",
                    "--phases", f"{LIGHT_S}s:qd1,{HEAVY_S}s:qd16,{LIGHT_S}s:qd1")
        try:
            daemon.start()
            load.start()
            report = load.wait(120)
            time.sleep(1.5)  # the last windows reach the daemon
            self.assertEqual(daemon.stop(), 0, daemon.log_text()[-3000:])
        finally:
            load.stop()
            daemon.stop()

        # No completion lost or duplicated, per queue and in total.
        self.assertEqual(report["submitted"], report["completed"])
        for queue in report["queues"]:
            self.assertEqual(queue["submitted"], queue["completed"], queue)

        decisions = [parse_decision(line) for line in read_lines(trace + ".decisions")]
        switches = [d for d in decisions if d["from"] != d["to"] and "shadow" not in d]
        heavy_start = load.started_ns + LIGHT_S * 1_000_000_000
        heavy_end = heavy_start + HEAVY_S * 1_000_000_000
        print(f"{len(decisions)} decisions, {len(switches)} switches; uvnvme-load phases:",
              [round(p["iops"]) for p in report["phases"]])
        for d in switches:
            print(f"  t={(d['at'] - load.started_ns) / 1e9:7.3f} s {d['from']}->{d['to']} {d['reason']}")

        # Light phase: the queue is measured and found too slow to poll.
        early = [d for d in switches if d["to"] == "poll" and d["at"] < heavy_start - SLACK_NS]
        self.assertEqual(early, [], "polling tried during the first light phase")
        # Heavy phase: it moves to poll, and polling is faster there (windows kept).
        tries = [d for d in switches if d["to"] == "poll" and heavy_start <= d["at"] <= heavy_end + SLACK_NS]
        self.assertTrue(tries, "no switch to poll during the heavy phase")
        self.assertTrue(all(d["reason"] == "window_fast" for d in tries), tries)
        kept = [d for d in decisions if d["reason"] == "poll_window_faster" and heavy_start <= d["at"] <= heavy_end]
        self.assertTrue(kept, "no polling window beat the interrupt-mode baseline in the heavy phase")
        # After the drop: back to interrupt within the bound, and no more polling.
        late_polls = [d for d in switches if d["to"] == "poll" and d["at"] > heavy_end + BOUND_NS]
        self.assertEqual(late_polls, [], "polling tried after the load dropped")
        mode_at_bound = "interrupt"
        for d in switches:
            if d["at"] <= heavy_end + BOUND_NS:
                mode_at_bound = d["to"]
        self.assertEqual(mode_at_bound, "interrupt", f"still polling {BOUND_NS / 1e9} s after the load dropped")

        # Every switch the engine decided was applied by the driver, and only those.
        self.assertEqual(report["mode_switches"], len(switches))
        # The decisions are the engine's: the recorded windows replayed through the engine alone agree.
        replayed = subprocess.run([NVME_ADAPT_REPLAY, trace], capture_output=True, text=True, check=True).stdout
        self.assertEqual(replayed.splitlines(), read_lines(trace + ".decisions"))
        ws.cleanup()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)

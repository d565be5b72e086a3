#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The node layer (issue 34) in a real daemon against uvnvme: a CPU hog on the queue's reaping CPU defers every
polling try, with the reason, and nothing is switched.

The reaper thread is pinned to one CPU (uvnvme-load --host-cpus), so discovery gives the queue that reaping CPU
(the reaper's affinity). A nice-19 busy loop on the same CPU keeps it busy (/proc/stat) while taking almost
nothing from the reaper (CFS weight 15 against 1024): the load's windows stay fast enough to try polling, and
the node layer (policy node_layer, facts every 200 ms, a try needing 0.9 of its CPU free of other work, PSI
limits lifted: the machine may be shared) finds no headroom for a spinning reaper on that CPU.
What must show: every window_fast decision of the queue is deferred with cpu_busy (decision log), the decision
stream (WatchEvents) carries the reason, uvnvme applied no mode change, and GetStatus and the metrics count
the deferrals.
"""
import json
import os
import socket
import subprocess
import sys
import time
import unittest
import urllib.request

from daemon_harness import NVME_ADAPTCTL, Daemon, Load, Workspace, parse_decision, read_lines, require_root

LOAD_S = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(port, name, **labels):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        if series == (f"{name}{{{want}}}" if want else name):
            return float(value)
    return None


def hog(cpu):
    """A busy loop on `cpu`, at nice 19."""
    def pin():
        os.sched_setaffinity(0, {cpu})
        os.nice(19)
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin)


class NodeLayer(unittest.TestCase):
    def test_a_hog_on_the_reaping_cpu_defers_every_try(self):
        require_root(self)
        cpus = sorted(os.sched_getaffinity(0))
        reap_cpu = cpus[0]
        placement = ["--host-cpus", str(reap_cpu)]
        if len(cpus) >= 2:
            placement += ["--controller-cpus", str(cpus[-1]), "--controller-rt"]
        ws = Workspace("node-layer")
        port = free_port()
        trace = ws.path("trace")
        # Short windows and a generous threshold: many tries in a few seconds, each one the node layer's to judge.
        # PSI is the whole machine's (other builds on a shared machine press it too): its limits are lifted, so
        # the reason is the hog on the reaping CPU alone.
        # The reaper's own share of the CPU is not other work for its try (NodeQueue.own_busy): what the hog
        # takes is, whatever share the reaper leaves it, and a try here needs the CPU nearly free of it.
        config = {"policy": {"nodeLayer": True, "windowCompletions": 2048, "pollThresholdNs": "50us"},
                  "node": {"factsIntervalNs": "200ms", "minHeadroom": 0.9, "pressureSomeLimit": 100,
                           "pressureSomeRise": 100, "pressureFullRise": 100}}
        daemon = Daemon(ws, config=config, flags=["--sources", "uvnvme", "--default-mode", "adaptive",
                                                  "--metrics-listen", f"127.0.0.1:{port}", "--record-windows", trace])
        busy = hog(reap_cpu)
        load = Load(ws, "--mode", "external", *placement, "--phases", f"{LOAD_S}s:qd8,20s:idle")
        watch = None
        try:
            daemon.start()
            time.sleep(0.6)  # two readings of the facts: the busy shares are known before the first window
            watch = subprocess.Popen([NVME_ADAPTCTL, "--addr", ws.api_socket, "--json", "watch", "--kind", "decision"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            load.start()
            time.sleep(LOAD_S + 1.5)  # the load's windows, and a facts reading that exports the counts
            status = daemon.ctl_json("status")
            switches = sum(q["mode_switches"] for q in load.control({"op": "list"})["queues"])
            deferred_metric = metric(port, "nvme_adapt_node_deferred_tries_total", reason="cpu_busy")
            decided = metric(port, "nvme_adapt_node_decided_queues")
        finally:
            if watch:
                watch.terminate()
            events, _ = watch.communicate(timeout=10) if watch else ("", "")
            load.stop()
            busy.kill()
            busy.wait()
            daemon.stop()
        prefix = f"uvnvme:{load.process.pid}:0:q1"
        decisions = [parse_decision(line) for line in read_lines(trace + ".decisions")]
        tries = [d for d in decisions if d["queue"] == prefix and d.get("reason") == "window_fast"]
        print(f"{len(tries)} tries, {sum(1 for d in tries if d.get('deferred') == 'cpu_busy')} deferred (cpu_busy); "
              f"uvnvme applied {switches} mode switches; metric {deferred_metric}; decided queues {decided}")
        self.assertGreaterEqual(len(tries), 3, "too few fast windows to judge: the load was not fast enough")
        self.assertEqual([d for d in tries if d.get("deferred") != "cpu_busy"], [],
                         "a try the node layer let through (or deferred for another reason)")
        self.assertEqual(switches, 0, "uvnvme applied a mode change: a try went through")
        self.assertIn("cpu_busy", events, "the decision stream does not carry the deferral's reason")
        streamed = [json.loads(line) for line in events.splitlines() if "cpu_busy" in line]
        self.assertTrue(streamed and all(e["decision"].get("reason") == "window_fast" for e in streamed), streamed[:2])
        node = status["nodeLayer"]
        self.assertGreaterEqual(int(node["deferredTries"]["cpu_busy"]), len(tries))
        self.assertEqual(node["decidedQueues"], 1)
        self.assertGreaterEqual(deferred_metric or 0, len(tries))
        self.assertEqual(decided, 1.0)
        ws.cleanup()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)

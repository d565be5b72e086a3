#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fault campaign of issue 15 against a real uvnvme-load: the journal and the restore path under crashes.

- kill -9 at random moments of a switch storm, and at the switch protocol's failpoints (test builds:
  NVME_ADAPT_FAILPOINT=after_journal|after_publish|after_lever), each followed by a restart of one kind in
  turn: normal, dry run, bad config (exit 2), metrics port taken (exit 1). After each kill every queue
  still polling must have its journal entry (none lost); after each restart every queue is back in
  interrupt mode (its safe value) and the journal is empty.
- a corrupt journal, a full state dir (a small tmpfs) and a read-only state dir: a clear error, no device
  changed without its record, reads keep working.
- RPC latency while the driver stops answering (SIGSTOP): levers and discovery run off the loop, so no
  status answer says the loop did not take the call; the figures printed (during the stop, and before it
  as the machine's own cost of a CLI call) are what to compare with main's in the same run.

The figures are printed as `campaign: ...` lines. NVA_CAMPAIGN_TRIALS sets the number of random kills (100).
"""
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import unittest

from daemon_harness import NVME_ADAPTCTL, NVME_ADAPTD, Daemon, Load, Workspace, journal_entries, require_root

KINDS = ["normal", "dry_run", "bad_config", "metrics_taken"]
FAILPOINTS = ["after_journal", "after_publish", "after_lever"]
RPC_WAIT_S = 2.0


class FaultCampaign(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("campaign")
        self.load = Load(self.ws, "--mode", "external", "--queues", "2", "--qd", "4", "--runtime", "1200s").start()
        self.daemons = []
        self.figures = {"restarts": {k: 0 for k in KINDS}, "left_changed": 0, "entries_lost": 0}
        self.mounts = []

    def tearDown(self):
        for daemon in self.daemons:
            daemon.stop(signal.SIGKILL)
        if self.load.process.poll() is None:
            os.kill(self.load.process.pid, signal.SIGCONT)
        self.load.stop()
        for mount in reversed(self.mounts):
            subprocess.run(["umount", "-l", mount], check=False)
        self.ws.cleanup()

    # --- helpers ---------------------------------------------------------------------------------------------

    def daemon(self, *flags, env=None, wait=True):
        daemon = Daemon(self.ws, flags=["--sources", "uvnvme", *flags], log_name="daemon.log")
        old = dict(os.environ)
        os.environ.update(env or {})
        try:
            daemon.start(wait=wait)
        finally:
            os.environ.clear()
            os.environ.update(old)
        self.daemons.append(daemon)
        return daemon

    def controller(self, daemon):
        def ready():
            queues = [q for q in daemon.queues() if q.get("source") == "SOURCE_UVNVME"]
            return queues if len(queues) == 2 else None
        return daemon.wait_for(ready, 20, "2 uvnvme queues")[0]["id"]["controller"]

    def journal(self):
        return journal_entries(self.ws.state_dir)

    def run_daemon(self, *flags, config=None):
        args = [NVME_ADAPTD, "--config", config or self.ws.write_config({}), "--state-dir", self.ws.state_dir,
                "--runtime-dir", self.ws.runtime_dir, "--sources", "uvnvme", *flags]
        return subprocess.run(args, capture_output=True, text=True, timeout=120)

    def after_kill(self):
        """Every queue still changed has its journal entry."""
        modes = self.load.queue_modes()
        journaled = {e["queue"] for e in self.journal()}
        lost = [qid for qid, mode in modes.items() if mode == "poll" and qid not in journaled]
        self.figures["entries_lost"] += len(lost)
        self.assertEqual(lost, [], f"polling without a journal entry: {lost}")

    def restart(self, kind):
        """Restarts by `kind`; returns a running normal daemon for what comes next."""
        self.figures["restarts"][kind] += 1
        if kind == "normal":
            daemon = self.daemon()
        elif kind == "dry_run":
            daemon = self.daemon("--dry-run")
        elif kind == "bad_config":
            bad = self.ws.path("bad.json")
            with open(bad, "w") as f:
                f.write('{"polcy": {}}')
            result = self.run_daemon("--metrics-listen", "off", config=bad)
            self.assertEqual(result.returncode, 2, result.stderr)
            daemon = None
        else:
            taken = socket.socket()
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            result = self.run_daemon("--metrics-listen", f"127.0.0.1:{taken.getsockname()[1]}")
            taken.close()
            self.assertEqual(result.returncode, 1, result.stderr)
            daemon = None
        modes = self.load.queue_modes()
        changed = [qid for qid, mode in modes.items() if mode != "interrupt"]
        self.figures["left_changed"] += len(changed)
        self.assertEqual(changed, [], f"restart {kind} left queues changed: {modes}")
        self.assertEqual(self.journal(), [], f"restart {kind} left journal entries")
        if kind == "dry_run":
            self.assertEqual(daemon.stop(), 0)
            daemon = None
        return daemon or self.daemon()

    def storm(self, daemon, controller, stop):
        modes = ["poll", "interrupt"]
        n = 0
        while not stop.is_set():
            qid = 1 + n % 2
            subprocess.run([NVME_ADAPTCTL, "--addr", self.ws.api_socket, "override", f"{controller}:q{qid}",
                            modes[(n // 2) % 2]], capture_output=True, timeout=30)
            n += 1

    # --- the campaign ----------------------------------------------------------------------------------------

    def test_kills_at_random_moments_and_at_failpoints_then_every_kind_of_restart(self):
        trials = int(os.environ.get("NVA_CAMPAIGN_TRIALS", "100"))
        rng = random.Random(15)
        started = time.monotonic()
        daemon = self.daemon()
        for trial in range(trials):
            controller = self.controller(daemon)
            stop = threading.Event()
            storm = threading.Thread(target=self.storm, args=(daemon, controller, stop))
            storm.start()
            time.sleep(rng.uniform(0.05, 0.6))
            daemon.stop(signal.SIGKILL)
            stop.set()
            storm.join()
            self.after_kill()
            daemon = self.restart(KINDS[trial % len(KINDS)])
        daemon.stop()
        for point in FAILPOINTS:
            for kind in KINDS:
                victim = self.daemon(env={"NVME_ADAPT_FAILPOINT": point})
                controller = self.controller(victim)
                victim.ctl("override", f"{controller}:q1", "poll", check=False)
                victim.process.wait(20)
                self.assertEqual(victim.process.returncode, -signal.SIGKILL, f"failpoint {point} not reached")
                self.assertEqual(len(self.journal()), 1, f"failpoint {point}: the entry is missing")
                self.after_kill()
                self.restart(kind).stop()
        r = self.figures["restarts"]
        print(f"campaign: trials {trials} random kills + {len(FAILPOINTS) * len(KINDS)} failpoint kills; restarts "
              + ", ".join(f"{k} {v}" for k, v in r.items())
              + f"; devices left changed {self.figures['left_changed']}; journal entries lost "
              f"{self.figures['entries_lost']}; {time.monotonic() - started:.0f} s", flush=True)

    def test_corrupt_full_and_read_only_state_dirs(self):
        os.makedirs(self.ws.state_dir, exist_ok=True)
        with open(os.path.join(self.ws.state_dir, "journal.json"), "w") as f:
            f.write('{"entries": [{"controller": ')
        daemon = self.daemon()
        controller = self.controller(daemon)
        degraded = daemon.ctl_json("status").get("degraded", [])
        self.assertTrue(any("journal.json.corrupt" in d for d in degraded), degraded)
        daemon.stop()

        # A full state dir: a change that cannot be journaled is not made; reads go on.
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", self.ws.state_dir], check=True)
        self.mounts.append(self.ws.state_dir)
        daemon = self.daemon()
        subprocess.run(["dd", "if=/dev/zero", f"of={self.ws.state_dir}/filler", "bs=4k", "count=64"],
                       capture_output=True)
        daemon.ctl("override", f"{controller}:q1", "poll")
        queue = [q for q in daemon.queues() if q["id"]["queue"] == 1][0]
        self.assertIn("cannot journal it", queue.get("degradedReason", ""), queue)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"})
        os.remove(f"{self.ws.state_dir}/filler")

        # A read-only state dir: the same.
        subprocess.run(["mount", "-o", "remount,ro", self.ws.state_dir], check=True)
        daemon.ctl("override", f"{controller}:q2", "poll")
        queue = [q for q in daemon.queues() if q["id"]["queue"] == 2][0]
        self.assertIn("cannot journal it", queue.get("degradedReason", ""), queue)
        self.assertEqual(self.load.queue_modes(), {1: "interrupt", 2: "interrupt"})
        self.assertEqual(daemon.stop(), 0)
        print("campaign: corrupt journal set aside and started; full and read-only state dirs: changes refused "
              "with 'cannot journal it', 0 devices changed, reads served", flush=True)

    def status_latencies(self, calls):
        """(seconds, answer said the loop did not take the call) per `nvme-adaptctl status`."""
        out = []
        for _ in range(calls):
            t0 = time.monotonic()
            result = subprocess.run([NVME_ADAPTCTL, "--addr", self.ws.api_socket, "--json", "status"],
                                    capture_output=True, text=True, timeout=30)
            out.append((time.monotonic() - t0, "agent loop" in result.stdout))
        return out

    @staticmethod
    def latency_figures(latencies):
        seconds = sorted(s for s, _ in latencies)
        return seconds[len(seconds) // 2], seconds[min(len(seconds) - 1, int(0.99 * len(seconds)))]

    def test_rpc_latency_while_the_driver_stops_answering(self):
        daemon = self.daemon()
        controller = self.controller(daemon)
        before = self.status_latencies(20)  # what the CLI costs on this machine now, the driver answering
        os.kill(self.load.process.pid, signal.SIGSTOP)
        try:
            daemon.ctl("override", f"{controller}:q1", "poll", check=False)
            during = self.status_latencies(20)
        finally:
            os.kill(self.load.process.pid, signal.SIGCONT)
        median_before, p99_before = self.latency_figures(before)
        median, p99 = self.latency_figures(during)
        held = sum(1 for _, said in during if said)
        print(f"campaign: RPC (nvme-adaptctl status) p99 {p99 * 1000:.0f} ms, median {median * 1000:.0f} ms while "
              f"the driver is stopped; p99 {p99_before * 1000:.0f} ms, median {median_before * 1000:.0f} ms before "
              f"(20 calls each, a new nvme-adaptctl process per call); {held} answers said the loop did not take "
              f"the call (levers and discovery run off the loop)", flush=True)
        self.assertEqual(held, 0, "the stopped driver held the loop past the RPC deadline")
        self.assertLess(p99, RPC_WAIT_S + 1.0, "an RPC waited past the loop deadline")
        daemon.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)

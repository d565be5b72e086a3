#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The journal's write path under crashes and failing writes (issue 45), beside the fault campaign.

In the manner of the storage engines' own crash tests: every append of journal.log is failed in turn, at its
first byte (a record boundary), inside it and one byte before its end, by each kind of failure a write can
have (test builds: NVME_ADAPT_WRITE_FAULT=journal_append:KIND:NTH:AT, common/failpoint.h):

- short: the write returns part of the record; the rest must follow;
- enospc, eio: the bytes that fit are written, then the write fails;
- stuck: as eio, and taking the bytes back fails too, so the fragment stays.

Each case runs a real nvme-adaptd beside a fake driver (4 queues): queues switched to poll one after the
other (each first switch appends one record; the failing one is refused), the refused queue switched again,
then SIGKILL. After the kill, every queue the driver reports in poll must have its journal entry. Then
`nvme-adaptd --restore-only` must exit 0 with every queue back in interrupt mode, and the next start (the next
case's, and a last plain one) must succeed. The restore path's own drop records are failed the same way
(the fault in --restore-only, then a second --restore-only that finishes the job).

Prints `journal campaign: N cases ...; devices left changed 0; starts refused 0; entries lost 0`.
"""
import os
import signal
import subprocess
import sys
import time
import unittest

from daemon_harness import NVME_ADAPTD, Daemon, Workspace, journal_entries, require_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
from reliability_harness import FakeDriver  # noqa: E402

KINDS = ["short", "enospc", "eio", "stuck"]
RECORDS = [1, 2, 3]       # the switched queues' records: the first, one between, the last before the retry
OFFSETS = [0, 1, 40, -1]  # at its first byte, after it, inside the entry's JSON, all but its newline
SWITCHED = [1, 2, 3]      # one record each


class JournalCrashCampaign(unittest.TestCase):
    def setUp(self):
        require_root(self)
        self.ws = Workspace("journal-campaign")
        self.driver = FakeDriver(self.ws, "--queues", "4")
        self.controller = f"uvnvme:{self.driver.pid}:0"
        self.daemon = None
        self.figures = {"cases": 0, "refused_switches": 0, "fragments_skipped": 0, "drops_refused": 0,
                        "left_changed": 0, "starts_refused": 0, "entries_lost": 0}

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)
        self.driver.stop()
        self.ws.cleanup()

    def start(self, fault=None):
        """A daemon, with `fault` in its environment; a start that does not come up is counted, not raised."""
        daemon = Daemon(self.ws, flags=["--sources", "uvnvme"], log_name="daemon.log",
                        env={"NVME_ADAPT_WRITE_FAULT": fault} if fault else None)
        try:
            daemon.start()
        except AssertionError as e:
            self.figures["starts_refused"] += 1
            daemon.stop(signal.SIGKILL)
            self.fail(f"start refused (fault {fault}): {e}")
        daemon.wait_for(lambda: len([q for q in daemon.queues() if q["id"]["controller"] == self.controller]) == 4,
                        20, "the driver's 4 queues")
        return daemon

    def restore_only(self, fault=None):
        env = dict(os.environ)
        env.pop("NVME_ADAPT_WRITE_FAULT", None)
        if fault:
            env["NVME_ADAPT_WRITE_FAULT"] = fault
        return subprocess.run([NVME_ADAPTD, "--restore-only", "--config", self.ws.write_config({}),
                               "--state-dir", self.ws.state_dir, "--runtime-dir", self.ws.runtime_dir],
                              capture_output=True, text=True, timeout=60, env=env)

    def switch(self, daemon, qid):
        daemon.ctl("override", f"{self.controller}:q{qid}", "poll", check=False)
        return self.driver.modes().get(qid) == "poll"

    def check_after_kill(self, what):
        modes = self.driver.modes()
        journaled = {e["queue"] for e in journal_entries(self.ws.state_dir)}
        lost = [qid for qid, mode in modes.items() if mode == "poll" and qid not in journaled]
        self.figures["entries_lost"] += len(lost)
        self.assertEqual(lost, [], f"{what}: polling without a journal entry")

    def check_restored(self, result, what):
        changed = [qid for qid, mode in self.driver.modes().items() if mode != "interrupt"]
        self.figures["left_changed"] += len(changed)
        if result.returncode != 0:
            self.figures["starts_refused"] += 1
        self.assertEqual(result.returncode, 0, f"{what}: --restore-only:\n{result.stdout}{result.stderr}")
        self.assertEqual(changed, [], f"{what}: left changed after --restore-only:\n{result.stdout}")
        self.assertEqual(journal_entries(self.ws.state_dir), [], f"{what}: journal entries left")

    def switch_path_case(self, kind, nth, at):
        fault = f"journal_append:{kind}:{nth}:{at}"
        daemon = self.daemon = self.start(fault)
        refused = [qid for qid in SWITCHED if not self.switch(daemon, qid)]
        # A short write of 0 bytes is an append that wrote nothing: refused as the failures are.
        expected = [] if kind == "short" and at != 0 else [SWITCHED[nth - 1]]
        self.assertEqual(refused, expected, f"{fault}: switches refused")
        self.figures["refused_switches"] += len(refused)
        for qid in refused:  # the next append after the failure
            self.assertTrue(self.switch(daemon, qid), f"{fault}: q{qid} refused again")
        daemon.stop(signal.SIGKILL)
        self.daemon = None
        self.check_after_kill(fault)
        result = self.restore_only()
        if "partial record(s) of appends that failed left out" in result.stdout:
            self.figures["fragments_skipped"] += 1
        elif kind == "stuck" and at not in (0, -1):  # -1: the fragment is a whole record without its newline
            self.fail(f"{fault}: the fragment was not said to be skipped:\n{result.stdout}")
        self.check_restored(result, fault)

    def restore_path_case(self, kind, nth, at):
        fault = f"journal_append:{kind}:{nth}:{at}"
        daemon = self.daemon = self.start()
        for qid in SWITCHED:
            self.assertTrue(self.switch(daemon, qid), f"q{qid} not switched")
        daemon.stop(signal.SIGKILL)
        self.daemon = None
        first = self.restore_only(fault)  # its drop records fail; what it could not drop stays journaled
        self.assertIn("cannot remove", first.stdout, f"{fault}: no drop record failed")
        self.figures["drops_refused"] += 1
        self.check_after_kill(f"{fault} in --restore-only")
        self.check_restored(self.restore_only(), f"{fault} in --restore-only, then again:\n{first.stdout}")

    def test_every_append_failed_at_every_place_then_sigkill_and_restore(self):
        started = time.monotonic()
        for kind in KINDS:
            for nth in RECORDS:
                for at in OFFSETS:
                    self.switch_path_case(kind, nth, at)
                    self.figures["cases"] += 1
        for kind in ["enospc", "eio", "stuck"]:
            for nth in [1, 2]:
                for at in [0, 40]:
                    self.restore_path_case(kind, nth, at)
                    self.figures["cases"] += 1
        self.daemon = self.start()  # the last case's next start
        self.assertEqual(self.daemon.stop(), 0)
        self.daemon = None
        f = self.figures
        print(f"journal campaign: {f['cases']} cases ({len(KINDS)} kinds x {len(RECORDS)} records x "
              f"{len(OFFSETS)} places in the switch path, 12 in the restore path), each SIGKILL then "
              f"--restore-only; switches refused {f['refused_switches']}, fragments skipped at load "
              f"{f['fragments_skipped']}, drop records failed {f['drops_refused']}; devices left changed {f['left_changed']}; "
              f"starts refused {f['starts_refused']}; entries lost {f['entries_lost']}; "
              f"{time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)

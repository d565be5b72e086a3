#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of tests/vm/vmrun.py's one retry: a guest whose kernel died of TCG's text-patching race
(`Oops: int3`) before its script finished is booted once more, with the first boot's console and crash kept;
any other crash, and a second int3, fail as before. No QEMU: one boot is replaced by a stand-in.

Usage: vmrun_retry_test.py PATH_TO_tests/vm"""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else "tests/vm")
import vmrun  # noqa: E402


class RetryTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.results = Path(self.dir.name) / "results"
        self.opts = vmrun.VmOptions(guest_script=Path(self.dir.name) / "guest.sh", results_dir=self.results)
        self.boots = []
        self.saved = vmrun._run_vm_once

    def tearDown(self):
        vmrun._run_vm_once = self.saved
        self.dir.cleanup()

    def boots_that(self, *outcomes):
        """Each boot writes its console and then raises the outcome's crash or returns a result."""
        def boot(opts, clock):
            crash = outcomes[len(self.boots)]
            self.boots.append(crash)
            self.results.mkdir(parents=True, exist_ok=True)
            (self.results / "console.log").write_text(f"boot {len(self.boots)}\n")
            if crash:
                raise vmrun.VmRunError("the guest kernel crashed", crash)
            return vmrun.VmResult(0, self.results, self.results / "console.log", 1.0, None)
        vmrun._run_vm_once = boot

    def test_an_int3_crash_is_booted_once_more_and_kept(self):
        self.boots_that("Oops: int3: 0000 [#1] SMP NOPTI; RIP: ttwu_do_activate", None)
        result = vmrun.run_vm(self.opts, vmrun.Clock())
        self.assertEqual(result.exit_status, 0)
        self.assertEqual(len(self.boots), 2)
        self.assertEqual((self.results / "console-first-boot.log").read_text(), "boot 1\n")
        self.assertIn("ttwu_do_activate", (self.results / "tcg-patch-race-retried.txt").read_text())

    def test_another_crash_fails_without_a_retry(self):
        self.boots_that("Kernel panic - not syncing: Fatal exception", None)
        with self.assertRaises(vmrun.VmRunError):
            vmrun.run_vm(self.opts, vmrun.Clock())
        self.assertEqual(len(self.boots), 1)

    def test_a_second_int3_crash_fails(self):
        self.boots_that("Oops: int3: first", "Oops: int3: second")
        with self.assertRaises(vmrun.VmRunError) as raised:
            vmrun.run_vm(self.opts, vmrun.Clock())
        self.assertEqual(raised.exception.crash, "Oops: int3: second")
        self.assertEqual(len(self.boots), 2)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of bench/host_idle.py on a file standing in for the haltpoll parameter (no root, the machine's
own setting untouched): the value is set for the block and put back after it, also when a signal ends the
run; a missing or unwritable parameter changes nothing and says why.

Usage: host_idle_test.py PATH_TO_bench"""
import os
import signal
import subprocess
import sys
import tempfile
import unittest

BENCH = sys.argv.pop(1) if len(sys.argv) > 1 else "bench"
sys.path.insert(0, BENCH)
import host_idle  # noqa: E402


class PollingTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "guest_halt_poll_ns")
        with open(self.path, "w") as f:
            f.write("0\n")

    def tearDown(self):
        self.dir.cleanup()

    def value(self):
        with open(self.path) as f:
            return int(f.read())

    def test_sets_for_the_block_and_puts_back(self):
        with host_idle.polling(200_000, path=self.path) as idle:
            self.assertTrue(idle["set"])
            self.assertEqual(idle["guest_halt_poll_ns_before"], 0)
            self.assertEqual(self.value(), 200_000)
        self.assertEqual(self.value(), 0)
        self.assertTrue(idle["restored"])

    def test_puts_back_when_an_exception_ends_the_block(self):
        with self.assertRaises(RuntimeError):
            with host_idle.polling(50_000, path=self.path):
                raise RuntimeError("the load failed")
        self.assertEqual(self.value(), 0)

    def test_puts_back_when_sigterm_ends_the_run(self):
        script = (f"import sys, time; sys.path.insert(0, {BENCH!r}); import host_idle\n"
                  f"with host_idle.polling(70000, path={self.path!r}):\n"
                  "    print('set', flush=True)\n"
                  "    time.sleep(30)\n")
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        self.assertEqual(child.stdout.readline().strip(), "set")
        self.assertEqual(self.value(), 70000)
        child.send_signal(signal.SIGTERM)
        self.assertEqual(child.wait(timeout=10), 128 + signal.SIGTERM)
        child.stdout.close()
        self.assertEqual(self.value(), 0)

    def test_a_missing_parameter_changes_nothing_and_says_why(self):
        with host_idle.polling(200_000, path=os.path.join(self.dir.name, "absent")) as idle:
            self.assertFalse(idle["set"])
            self.assertIn("no haltpoll governor", idle["reason"])

    def test_an_unwritable_parameter_changes_nothing_and_says_why(self):
        # A read-only sysctl holding a number: not even root may write it.
        read_only = "/proc/sys/kernel/ngroups_max"
        with open(read_only) as f:
            before = f.read()
        with host_idle.polling(200_000, path=read_only) as idle:
            self.assertFalse(idle["set"])
            self.assertIn("cannot write", idle["reason"])
        with open(read_only) as f:
            self.assertEqual(f.read(), before)

if __name__ == "__main__":
    unittest.main()

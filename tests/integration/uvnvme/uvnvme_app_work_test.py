#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""uvnvme-load's application work per completion (--io-work-us) and the work done per second it reports.
Run by CTest one case at a time: uvnvme_app_work_test.py Class.test_name."""
import json
import sys
import unittest

from uvnvme_testlib import main, run_load

WORK_US = 20


def load_report(*args):
    result = run_load("--json", "--no-socket", "--model", "fixed", "--latency-us", "20", "--qd", "1", *args)
    if result.returncode != 0:
        raise AssertionError(f"uvnvme-load exited {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


class AppWork(unittest.TestCase):
    def test_work_done_per_second_is_reported_for_every_completion(self):
        report = load_report("--runtime", "400ms", "--io-work-us", str(WORK_US))
        work = report["app_work"]
        self.assertEqual(work["io_work_us"], WORK_US)
        self.assertEqual(report["config"]["io_work_us"], WORK_US)
        self.assertGreater(work["loops_per_io"], 0)
        self.assertGreater(report["completed"], 0)
        self.assertEqual(work["ios_worked"], report["completed"], "every completion, the drain's too, is worked")
        self.assertAlmostEqual(work["per_second"], work["ios_worked"] * WORK_US * 1e-6 / report["seconds"],
                               delta=1e-9 + 1e-6 * work["per_second"])
        # One job is one thread: it cannot do more than a CPU second of work per second.
        self.assertLessEqual(work["per_second"], 1.0)
        # At depth 1 a completion's work delays the next command: at most one I/O per (work + latency).
        self.assertLessEqual(report["iops"], 1e6 / (WORK_US + 20))
        phase = report["phases"][0]
        self.assertGreater(phase["app_work_per_second"], 0)
        self.assertIn("application work", run_load("--no-socket", "--runtime", "100ms",
                                                   "--io-work-us", str(WORK_US)).stdout)

    def test_without_the_option_there_is_no_work(self):
        report = load_report("--runtime", "200ms")
        work = report["app_work"]
        self.assertEqual((work["io_work_us"], work["loops_per_io"], work["ios_worked"], work["per_second"]),
                         (0, 0, 0, 0))
        self.assertGreater(report["completed"], 0)
        self.assertEqual(report["phases"][0]["app_work_per_second"], 0)


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of bench/sim_bench.py's reading of uvnvme.json: the ratios and model parameters it derives
from the faithful clock, and the clear errors for results it cannot use. Synthetic inputs only.

Usage: sim_bench_test.py PATH_TO_bench"""
import json
import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else "bench")
import sim_bench  # noqa: E402


def result(**changes):
    r = {"model": "media read 20 us, write 25 us, cap 500000 IOPS, 3200 MB/s per controller",
         "primary_clock": "faithful",
         "clocks": {"faithful": {q: {"poll_over_interrupt_iops": v} for q, v in
                                 (("qd1", 1.9), ("qd8", 2.1), ("qd32", 1.0))}},
         "configs": {"qd1_interrupt": {"lat_p50_us": 40.0}, "qd1_poll": {"lat_p50_us": 20.5},
                     "qd32_interrupt": {"host_cpu_s_per_million": 0.8}}}
    r.update(changes)
    return r


class UvnvmeInputs(unittest.TestCase):
    def read(self, content):
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "uvnvme.json"
            path.write_text(content if isinstance(content, str) else json.dumps(content))
            return sim_bench.uvnvme_inputs(path)

    def test_derives_ratios_and_parameters_from_the_faithful_clock(self):
        ratios, settings, _ = self.read(result())
        self.assertEqual(ratios, [1.9, 2.1, 1.0])
        self.assertEqual(settings["wake_latency_ns"], 19500)
        self.assertEqual(settings["submit_ns"] + settings["job_complete_ns"], 800)
        self.assertEqual(settings["read_mean_ns"], 20000)
        self.assertEqual(settings["write_mean_ns"], 25000)
        self.assertEqual(settings["read_iops_cap"], 500000)
        self.assertEqual(settings["bandwidth"], 3.2e9)

    def test_a_missing_file_names_the_bench_that_makes_it(self):
        with self.assertRaisesRegex(sim_bench.InputError, "uvnvme_bench.py must run first"):
            sim_bench.uvnvme_inputs("/nonexistent/uvnvme.json")

    def test_refuses_what_it_cannot_use(self):
        for content, message in (
                ("{not json", "not JSON"),
                (result(clocks={"sleeping": {}}), "faithful"),
                (result(primary_clock="sleeping"), "sleeping clock"),
                (result(model="something else"), "device model")):
            with self.subTest(message=message), self.assertRaisesRegex(sim_bench.InputError, message):
                self.read(content)



class Summary(unittest.TestCase):
    def test_counts_each_policy_of_the_sweep_and_gsim_s_calibration_point(self):
        tally = {"cases": 540, "better": 30, "worse": 4, "better_max": 2.1, "run_seconds": 100}
        summary = sim_bench.summary_of({
            "calibration": {"points": [{"name": "gsim_12x8", "residual": 0.02}]},
            "sweep": {"policies": {"in_driver": tally, "gsim": dict(tally, better=12), "agent": tally}}})
        self.assertEqual(summary["calibration_gsim_12x8_residual"], 0.02)
        self.assertEqual(summary["sweep_gsim_better"], 12)
        self.assertEqual(summary["sweep_agent_worse"], 4)
        self.assertEqual(summary["sweep_in_driver_cases"], 540)

if __name__ == "__main__":
    unittest.main()

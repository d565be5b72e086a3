#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""uvnvme-load as a process: its JSON report, its argument errors and its control socket.
Run by CTest one case at a time: uvnvme_load_test.py Class.test_name."""
import json
import os
import random
import stat
import sys
import time
import unittest

from uvnvme_testlib import LOAD, Client, LoadProcess, main, queue, run_load


class LoadReport(unittest.TestCase):
    TOP = ["submitted", "completed", "iops", "lat_p50_us", "lat_p99_us", "lat_p999_us", "cpu_seconds",
           "host_cpu_seconds", "controller_cpu_seconds", "mode_switches", "wakeups", "interrupts",
           "protocol_errors", "seconds", "queues", "phases", "config"]
    QUEUE = ["ctrl", "qid", "mode", "submitted", "completed", "iops", "lat_p50_us", "lat_p99_us", "lat_p999_us",
             "wakeups", "interrupts", "mode_switches", "protocol_errors", "host_cpu_seconds"]
    PHASE = ["label", "seconds", "qd", "mode", "completed", "iops", "lat_p50_us", "lat_p99_us", "lat_p999_us",
             "cpu_seconds", "host_cpu_seconds", "controller_cpu_seconds", "wakeups", "mode_switches",
             "start_monotonic_ns", "end_monotonic_ns"]

    def test_json_fields_and_totals_agree(self):
        result = run_load("--json", "--no-socket", "--controllers", "2", "--queues", "2", "--jobs", "3",
                          "--jitter-us", "10", "--rwmixread", "70",
                          "--phases", "300ms:qd4,300ms:qd16:poll,200ms:idle:interrupt")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        for key in self.TOP:
            self.assertIn(key, report)
        self.assertGreater(report["completed"], 0)
        self.assertEqual(report["completed"], report["submitted"])
        self.assertEqual(report["protocol_errors"], 0)
        self.assertFalse(report["interrupted"])
        queues = report["queues"]
        self.assertEqual([(q["ctrl"], q["qid"]) for q in queues], [(0, 1), (0, 2), (1, 1), (1, 2)])
        for q in queues:
            for key in self.QUEUE:
                self.assertIn(key, q)
            self.assertEqual(q["completed"], q["submitted"])
            self.assertEqual(q["mode"], "interrupt")
        for key in ("submitted", "completed", "mode_switches", "wakeups", "interrupts"):
            self.assertEqual(sum(q[key] for q in queues), report[key], key)
        self.assertAlmostEqual(sum(q["iops"] for q in queues), report["iops"], delta=report["iops"] * 1e-9)
        self.assertEqual(queues[3]["submitted"], 0, "3 jobs leave the fourth queue idle")
        for q in queues:  # every queue, idle or not, went to poll and back to interrupt
            self.assertEqual(q["mode_switches"], 2)
        self.assertEqual(len(report["phases"]), 3)
        for phase in report["phases"]:
            for key in self.PHASE:
                self.assertIn(key, phase)
            self.assertLessEqual(phase["lat_p50_us"], phase["lat_p99_us"])
        self.assertEqual([p["qd"] for p in report["phases"]], [4, 16, 0])
        # bench/probe_cost.py checks its collector changes against these bounds: they must be the phases' own
        phases = report["phases"]
        for before, after in zip(phases, phases[1:]):
            self.assertEqual(before["end_monotonic_ns"], after["start_monotonic_ns"])
        for phase in phases:
            self.assertAlmostEqual((phase["end_monotonic_ns"] - phase["start_monotonic_ns"]) / 1e9, phase["seconds"],
                                   delta=1e-6)
        self.assertLess(phases[-1]["end_monotonic_ns"], time.monotonic_ns())
        self.assertEqual([p["mode"] for p in report["phases"]], [None, "poll", "interrupt"])
        # Interrupts are raised in interrupt mode, each write timed; in poll mode only until each queue's
        # switch took effect (7-489 in runs of this test, against 7,800-17,500 in the interrupt phase).
        interrupt_phase, poll_phase = report["phases"][0], report["phases"][1]
        self.assertGreater(interrupt_phase["signals"], 0)
        self.assertGreater(interrupt_phase["signal_write_p99_us"], 0)
        self.assertGreaterEqual(interrupt_phase["signal_write_p99_us"], interrupt_phase["signal_write_p50_us"])
        self.assertLess(5 * poll_phase["signals"], interrupt_phase["signals"])
        self.assertEqual(sum(p["completed"] for p in report["phases"]), report["completed"])
        self.assertEqual(sum(p["mode_switches"] for p in report["phases"]), report["mode_switches"])
        self.assertLessEqual(report["lat_p50_us"], report["lat_p99_us"])
        self.assertLessEqual(report["lat_p99_us"], report["lat_p999_us"])
        self.assertAlmostEqual(report["iops"], report["completed"] / report["seconds"], delta=1e-6 * report["iops"])
        self.assertAlmostEqual(report["host_cpu_seconds"], sum(q["host_cpu_seconds"] for q in queues), delta=1e-6)
        # The process total includes the reaper and controller threads (and a little more).
        self.assertGreaterEqual(report["cpu_seconds"] + 0.02,
                                report["host_cpu_seconds"] + report["controller_cpu_seconds"])

    def test_human_summary(self):
        result = run_load("--no-socket", "--runtime", "200ms", "--qd", "4")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"\d+ submitted, \d+ completed, \d+ IOPS, latency p50 [\d.]+")
        self.assertIn("host reapers", result.stdout)
        self.assertIn("c0q1 interrupt", result.stdout)

    def test_help(self):
        result = run_load("--help")
        self.assertEqual(result.returncode, 0)
        for option in ("--controllers", "--queues", "--jobs", "--qd", "--bs", "--rwmixread", "--runtime",
                       "--phases", "--mode", "--coalesce", "--model", "--latency-us", "--iops-cap", "--json",
                       "--runtime-dir"):
            self.assertIn(option, result.stdout)


class BadArguments(unittest.TestCase):
    CASES = [
        (["--qd", "0"], "--qd"), (["--qd", "many"], "--qd"), (["--qd"], "--qd"),
        (["--controllers", "0"], "--controllers"), (["--queues", "100"], "--queues"),
        (["--bs", "3000"], "--bs"), (["--rwmixread", "150"], "--rwmixread"),
        (["--runtime", "soon"], "--runtime"), (["--mode", "spin"], "--mode"), (["--model", "hdd"], "--model"),
        (["--coalesce", "8"], "--coalesce"), (["--phases", "2s:qd1,oops"], "--phases"),
        (["--mode", "external", "--phases", "1s:qd1:poll"], "--phases"),
        (["--qd", "2000"], "--qd"), (["--latency-us", "x"], "--latency-us"), (["--iops-cap", "lots"], "--iops-cap"),
        (["--runtime-dir", "run"], "--runtime-dir"), (["--io-work-us", "-5"], "--io-work-us"), (["--bogus"], "--bogus"), (["stray"], "stray"),
    ]

    def test_each_bad_argument_exits_2_naming_it(self):
        for args, name in self.CASES:
            with self.subTest(args=args):
                result = run_load(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(result.stdout, "")
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertTrue(lines[0].startswith(f"uvnvme-load: {name}"), lines[0])


class ControlSocket(unittest.TestCase):
    def test_socket_mode_and_removal_on_exit(self):
        load = LoadProcess("--runtime", "60s", "--qd", "4")
        try:
            st = os.lstat(load.socket_path)
            self.assertTrue(stat.S_ISSOCK(st.st_mode))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
            self.assertEqual(st.st_uid, os.geteuid())
            self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(load.socket_path)).st_mode), 0o750)
            report = load.stop()
            self.assertTrue(report["interrupted"])
            self.assertEqual(report["completed"], report["submitted"])
            self.assertFalse(os.path.exists(load.socket_path))
        finally:
            load.kill()

    def test_every_request_and_every_error(self):
        load = LoadProcess("--mode", "external", "--runtime", "60s", "--queues", "2", "--qd", "8")
        try:
            client = Client(load.socket_path)
            listing = client.ask({"op": "list"})
            self.assertEqual(listing["ok"], True)
            self.assertEqual(listing["pid"], load.proc.pid)
            self.assertEqual([q["mode"] for q in listing["queues"]], ["interrupt", "interrupt"])
            for key in ("ctrl", "qid", "mode", "submitted", "completed", "wakeups", "mode_switches",
                        "coalesce_threshold", "coalesce_time_us"):
                self.assertIn(key, listing["queues"][0])
            self.assertEqual(client.ask({"op": "set_mode", "ctrl": 0, "qid": 2, "mode": "poll"}),
                             {"ok": True, "mode": "poll"})
            self.assertEqual(client.ask({"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": 8,
                                         "time_us": 100}), {"ok": True})
            q1, q2 = queue(client, 0, 1), queue(client, 0, 2)
            self.assertEqual((q1["coalesce_threshold"], q1["coalesce_time_us"]), (8, 100))
            self.assertEqual((q2["mode"], q2["mode_switches"]), ("poll", 1))
            before = client.ask({"op": "list"})["queues"]
            for bad in ["{not json", '{"op": "reboot"}', '{"op": "set_mode", "ctrl": 5, "qid": 1, "mode": "poll"}',
                        '{"op": "set_mode", "ctrl": 0, "qid": 9, "mode": "poll"}',
                        '{"op": "set_mode", "ctrl": 0, "qid": 1, "mode": "turbo"}',
                        '{"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": "8", "time_us": 1}',
                        '"list"', "x" * 5000]:
                response = client.ask(bad)
                self.assertEqual(response["ok"], False, bad[:60])
                self.assertIsInstance(response["error"], str)
            after = client.ask({"op": "list"})["queues"]
            for b, a in zip(before, after):
                for key in ("mode", "mode_switches", "coalesce_threshold", "coalesce_time_us"):
                    self.assertEqual(a[key], b[key], key)
            client.close()
            report = load.stop()
            self.assertEqual(report["completed"], report["submitted"])
            self.assertEqual(report["protocol_errors"], 0)
        finally:
            load.kill()

    def test_disconnects_mid_request_change_nothing(self):
        load = LoadProcess("--mode", "external", "--runtime", "60s", "--qd", "8")
        try:
            for partial in ['{"op": "set_mode", "ctrl": 0, "qid": 1, "mode": "po', "{" * 6000,
                            '{"op": "set_coalescing", "ctrl": 0, "qid": 1, "threshold": 8, "time_us"']:
                client = Client(load.socket_path)
                client.send(partial)
                client.close()
            client = Client(load.socket_path)
            q = queue(client, 0, 1)
            self.assertEqual((q["mode"], q["mode_switches"], q["coalesce_threshold"]), ("interrupt", 0, 0))
            client.close()
            report = load.stop()
            self.assertEqual(report["mode_switches"], 0)
            self.assertEqual(report["completed"], report["submitted"])
        finally:
            load.kill()

    def test_ten_thousand_switches_per_queue_through_the_socket(self):
        switches = 10_000
        load = LoadProcess("--mode", "external", "--runtime", "300s", "--queues", "2", "--qd", "32",
                           "--jitter-us", "20")
        try:
            client = Client(load.socket_path)
            rng = random.Random(7)
            modes = {1: "interrupt", 2: "interrupt"}
            for _ in range(switches):
                for qid in (1, 2):
                    modes[qid] = "poll" if modes[qid] == "interrupt" else "interrupt"
                    response = client.ask({"op": "set_mode", "ctrl": 0, "qid": qid, "mode": modes[qid]})
                    self.assertEqual(response, {"ok": True, "mode": modes[qid]})
                if rng.random() < 0.3:
                    time.sleep(rng.random() * 200e-6)
            client.close()
            report = load.stop()
            self.assertEqual(report["protocol_errors"], 0)
            self.assertGreater(report["completed"], 0)
            self.assertEqual(report["completed"], report["submitted"])
            for q in report["queues"]:
                self.assertEqual(q["mode_switches"], switches)
                self.assertEqual(q["completed"], q["submitted"])
        finally:
            load.kill()


if __name__ == "__main__":
    main(sys.argv)

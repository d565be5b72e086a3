#!/usr/bin/env python3
"""uvnvme-load as a process: its JSON report, argument errors, USDT notes and control socket.

Run by CTest one case at a time: uvnvme_load_test.py Class.test_name, with UVNVME_LOAD (the binary),
UVNVME_LIB (the static library) and READELF in the environment."""
import json
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

LOAD = os.environ.get("UVNVME_LOAD", "")
LIB = os.environ.get("UVNVME_LIB", "")
READELF = os.environ.get("READELF", "readelf")


def run_load(*args, timeout=120):
    return subprocess.run([LOAD, *args], capture_output=True, text=True, timeout=timeout)


class LoadProcess:
    """uvnvme-load running in the background with its control socket in a private runtime dir."""

    def __init__(self, *args):
        self.runtime_dir = tempfile.mkdtemp(prefix="uvnvme-it.")
        self.proc = subprocess.Popen([LOAD, "--runtime-dir", self.runtime_dir, "--json", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.socket_path = os.path.join(self.runtime_dir, "uvnvme", f"{self.proc.pid}.sock")
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket_path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no control socket at {self.socket_path}: {self.proc.stderr.read()}")
            time.sleep(0.01)

    def stop(self):
        """SIGTERM, then the JSON report (the run ends early, drains and reports)."""
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        if self.proc.returncode != 0:
            raise AssertionError(f"uvnvme-load exited {self.proc.returncode}: {err}")
        return json.loads(out)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.buffer = b""

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def line(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed before a response")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def ask(self, request):
        self.send((request if isinstance(request, str) else json.dumps(request)) + "\n")
        return self.line()

    def close(self):
        self.sock.close()


def queue(client, ctrl, qid):
    for q in client.ask({"op": "list"})["queues"]:
        if q["ctrl"] == ctrl and q["qid"] == qid:
            return q
    raise AssertionError(f"no queue c{ctrl}q{qid} in the list")


class LoadReport(unittest.TestCase):
    TOP = ["submitted", "completed", "iops", "lat_p50_us", "lat_p99_us", "lat_p999_us", "cpu_seconds",
           "host_cpu_seconds", "controller_cpu_seconds", "mode_switches", "wakeups", "interrupts",
           "protocol_errors", "seconds", "queues", "phases", "config"]
    QUEUE = ["ctrl", "qid", "mode", "submitted", "completed", "iops", "lat_p50_us", "lat_p99_us", "lat_p999_us",
             "wakeups", "interrupts", "mode_switches", "protocol_errors", "host_cpu_seconds"]
    PHASE = ["label", "seconds", "qd", "mode", "completed", "iops", "lat_p50_us", "lat_p99_us", "lat_p999_us",
             "cpu_seconds", "host_cpu_seconds", "controller_cpu_seconds", "wakeups", "mode_switches"]

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
        self.assertEqual([p["mode"] for p in report["phases"]], [None, "poll", "interrupt"])
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
        (["--runtime-dir", "run"], "--runtime-dir"), (["--bogus"], "--bogus"), (["stray"], "stray"),
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


def stapsdt_notes(path):
    out = subprocess.run([READELF, "-n", path], capture_output=True, text=True, check=True).stdout
    notes = []
    for block in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), "
                             r"Semaphore: (0x[0-9a-f]+)\s+Arguments: ([^\n]*)", out):
        provider, name, _, _, semaphore, arguments = block.groups()
        notes.append({"provider": provider, "name": name, "semaphore": int(semaphore, 16),
                      "arguments": arguments.split()})
    return notes


def section(path, name):
    out = subprocess.run([READELF, "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[1] == name:
            return int(fields[3], 16), int(fields[5], 16)
    raise AssertionError(f"no section {name} in {path}")


class UsdtNotes(unittest.TestCase):
    EXPECTED = {"complete": 4, "irq": 2, "mode": 3}

    def test_uvnvme_load_has_the_three_probes_with_semaphores(self):
        notes = stapsdt_notes(LOAD)
        self.assertEqual(sorted(n["name"] for n in notes), sorted(self.EXPECTED), notes)
        start, size = section(LOAD, ".probes")
        for note in notes:
            self.assertEqual(note["provider"], "uvnvme")
            self.assertEqual(len(note["arguments"]), self.EXPECTED[note["name"]], note)
            for argument in note["arguments"]:  # 4@: four bytes, unsigned
                self.assertTrue(argument.startswith("4@"), note)
            self.assertTrue(start <= note["semaphore"] < start + size, f"{note['name']} semaphore not in .probes")
        self.assertEqual(len({n["semaphore"] for n in notes}), 3)

    def test_the_library_carries_the_probes_too(self):
        out = subprocess.run([READELF, "-n", LIB], capture_output=True, text=True, check=True).stdout
        for name in self.EXPECTED:
            self.assertRegex(out, rf"Provider: uvnvme\s+Name: {name}\b")


X86_REGISTERS = {f"{prefix}{r}{suffix}": r for r in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp")
                 for prefix, suffix in (("r", ""), ("e", ""), ("", ""))}
X86_REGISTERS.update({f"r{n}{suffix}": f"r{n}" for n in range(8, 16) for suffix in ("", "d")})


def fetcharg(spec):
    """A sys/sdt.h argument ("4@8(%rsp)", "4@%edx") as a uprobe_events fetch argument."""
    size, _, location = spec.partition("@")
    if size != "4":
        raise AssertionError(f"argument {spec} is not a 4-byte unsigned integer")
    memory = re.fullmatch(r"(-?\d*)\(%(\w+)\)", location)
    if memory:
        offset = memory.group(1) or "0"
        return f"{'+' if not offset.startswith('-') else ''}{offset}(%{X86_REGISTERS[memory.group(2)]}):u32"
    register = re.fullmatch(r"%(\w+)", location)
    if register:
        return f"%{X86_REGISTERS[register.group(1)]}:u32"
    raise AssertionError(f"argument location {location} not handled by this test")


def file_offset(path, address):
    out = subprocess.run([READELF, "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[0].startswith("[") and fields[1].startswith("."):
            start, offset, size = int(fields[3], 16), int(fields[4], 16), int(fields[5], 16)
            if start and start <= address < start + size:
                return address - start + offset
    raise AssertionError(f"address {address:#x} in no section of {path}")


def tracefs_write(path, text):
    """One write(2) in append mode: tracefs files refuse the seek that Python's "a" mode does."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class UsdtFiring(unittest.TestCase):
    """The probes fire as docs/probes.md says, read through kernel uprobes with the semaphores."""

    def test_probe_counts_match_the_report(self):
        tracing = "/sys/kernel/tracing"
        if os.geteuid() != 0 or not os.path.exists(f"{tracing}/uprobe_events"):
            self.fail(f"needs root and tracefs at {tracing} (mount -t tracefs nodev {tracing})")
        group = f"uvnvme_test_{os.getpid()}"
        instance = f"{tracing}/instances/{group}"
        notes = {n["name"]: n for n in stapsdt_notes(LOAD)}
        addresses = {}
        out = subprocess.run([READELF, "-n", LOAD], capture_output=True, text=True, check=True).stdout
        for name, location in re.findall(r"Name: (\w+)\s+Location: (0x[0-9a-f]+)", out):
            addresses[name] = int(location, 16)
        names = {"complete": ["ctrl", "qid", "n", "mode"], "irq": ["ctrl", "qid"], "mode": ["ctrl", "qid", "mode"]}
        defined = []
        try:
            for probe, arg_names in names.items():
                note = notes[probe]
                args = " ".join(f"{a}={fetcharg(spec)}" for a, spec in zip(arg_names, note["arguments"]))
                event = (f"p:{group}/{probe} {LOAD}:{file_offset(LOAD, addresses[probe]):#x}"
                         f"({file_offset(LOAD, note['semaphore']):#x}) {args}")
                tracefs_write(f"{tracing}/uprobe_events", event + "\n")
                defined.append(probe)
            os.mkdir(instance)
            tracefs_write(f"{instance}/buffer_size_kb", "16384")
            tracefs_write(f"{instance}/events/{group}/enable", "1")
            result = run_load("--json", "--no-socket", "--queues", "2", "--latency-us", "200",
                              "--phases", "150ms:qd4,150ms:qd4:poll,150ms:qd4:interrupt")
            tracefs_write(f"{instance}/events/{group}/enable", "0")
            with open(f"{instance}/trace") as f:
                trace = f.read()
            for cpu in os.listdir(f"{instance}/per_cpu"):
                with open(f"{instance}/per_cpu/{cpu}/stats") as f:
                    self.assertIn("overrun: 0", f.read(), f"{cpu} lost trace events")
        finally:
            if os.path.isdir(instance):
                os.rmdir(instance)
            for probe in defined:
                tracefs_write(f"{tracing}/uprobe_events", f"-:{group}/{probe}\n")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        fired = {name: [] for name in names}
        for event, fields in re.findall(r" (complete|irq|mode): \(0x[0-9a-f]+\) ([^\n]*)", trace):
            fired[event].append(dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", fields)))
        for q in report["queues"]:
            key = (q["ctrl"], q["qid"])
            mine = {name: [e for e in events if (e["ctrl"], e["qid"]) == key] for name, events in fired.items()}
            self.assertEqual(sum(e["n"] for e in mine["complete"]), q["completed"], key)
            self.assertTrue(all(e["n"] > 0 and e["mode"] in (0, 1) for e in mine["complete"]))
            self.assertEqual(len(mine["irq"]), q["wakeups"], key)
            self.assertEqual([e["mode"] for e in mine["mode"]], [1, 0], key)
            self.assertTrue(any(e["mode"] == 1 for e in mine["complete"]), "no batch reaped in poll mode")


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
    if not LOAD or not os.access(LOAD, os.X_OK):
        sys.exit("UVNVME_LOAD must name the uvnvme-load binary (CTest sets it)")
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[1:]])

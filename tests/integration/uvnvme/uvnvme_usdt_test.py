#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""uvnvme's USDT probes: the notes in the binary and the library (readelf), and the probes firing as
docs/probes.md says (kernel uprobes with the semaphores, as root). Run by CTest one case at a time."""
import json
import os
import re
import subprocess
import sys
import unittest

from uvnvme_testlib import LIB, LOAD, READELF, main, run_load


def stapsdt_notes(path):
    out = subprocess.run([READELF, "-n", path], capture_output=True, text=True, check=True).stdout
    notes = []
    for block in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), "
                             r"Semaphore: (0x[0-9a-f]+)\s+Arguments: ([^\n]*)", out):
        provider, name, location, _, semaphore, arguments = block.groups()
        notes.append({"provider": provider, "name": name, "location": int(location, 16),
                      "semaphore": int(semaphore, 16), "arguments": arguments.split()})
    return notes


def section(path, name):
    out = subprocess.run([READELF, "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[1] == name:
            return int(fields[3], 16), int(fields[5], 16)
    raise AssertionError(f"no section {name} in {path}")


class UsdtNotes(unittest.TestCase):
    EXPECTED = {"complete": 4, "tally": 8, "irq": 2, "mode": 3}
    WIDE = {"tally": {6, 7}}  # arguments of 8 bytes (first_ns, last_ns); every other one is 4 bytes

    def test_uvnvme_load_has_the_four_probes_with_semaphores(self):
        notes = stapsdt_notes(LOAD)
        # A probe inlined at several sites has several notes, all with the probe's one semaphore.
        self.assertEqual({n["name"] for n in notes}, set(self.EXPECTED), notes)
        start, size = section(LOAD, ".probes")
        for note in notes:
            self.assertEqual(note["provider"], "uvnvme")
            self.assertEqual(len(note["arguments"]), self.EXPECTED[note["name"]], note)
            for index, argument in enumerate(note["arguments"]):  # 4@ / 8@: four or eight bytes, unsigned
                width = "8@" if index in self.WIDE.get(note["name"], ()) else "4@"
                self.assertTrue(argument.startswith(width), note)
            self.assertTrue(start <= note["semaphore"] < start + size, f"{note['name']} semaphore not in .probes")
        semaphores = {(n["name"], n["semaphore"]) for n in notes}
        self.assertEqual(len(semaphores), 4, semaphores)
        self.assertEqual(len({semaphore for _, semaphore in semaphores}), 4, semaphores)

    def test_the_library_carries_the_probes_too(self):
        out = subprocess.run([READELF, "-n", LIB], capture_output=True, text=True, check=True).stdout
        for name in self.EXPECTED:
            self.assertRegex(out, rf"Provider: uvnvme\s+Name: {name}\b")


X86_REGISTERS = {f"{prefix}{r}{suffix}": r for r in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp")
                 for prefix, suffix in (("r", ""), ("e", ""), ("", ""))}
X86_REGISTERS.update({f"r{n}{suffix}": f"r{n}" for n in range(8, 16) for suffix in ("", "d")})


def fetcharg(spec):
    """A sys/sdt.h argument ("4@8(%rsp)", "4@%edx", "8@%rax") as a uprobe_events fetch argument."""
    size, _, location = spec.partition("@")
    if size not in ("4", "8"):
        raise AssertionError(f"argument {spec} is not a 4- or 8-byte unsigned integer")
    kind = f"u{int(size) * 8}"
    memory = re.fullmatch(r"(-?\d*)\(%(\w+)\)", location)
    if memory:
        offset = memory.group(1) or "0"
        return f"{'+' if not offset.startswith('-') else ''}{offset}(%{X86_REGISTERS[memory.group(2)]}):{kind}"
    register = re.fullmatch(r"%(\w+)", location)
    if register:
        return f"%{X86_REGISTERS[register.group(1)]}:{kind}"
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
    NAMES = {"complete": ["ctrl", "qid", "n", "mode"], "irq": ["ctrl", "qid"], "mode": ["ctrl", "qid", "mode"],
             "tally": ["ctrl", "qid", "n", "reaps", "mode", "last_reap", "first_ns", "last_ns"]}
    # docs/probes.md, "Tallies": a tally closes at the reap that brings it to COUNT completions or finds its
    # first reap AGE ns old, by the mode it was reaped in (0 interrupt, 1 poll): mode -> (COUNT, AGE).
    TALLY_BOUNDS = {0: (256, 2_000_000), 1: (64, 200_000)}
    DEFAULT_PROBES = ("tally", "mode")  # what the agent attaches (docs/probes.md)

    def trace_load(self, *load_args, probes=None):
        """Runs uvnvme-load with a tracefs uprobe event on every site of `probes` (all four by default), so
        with their semaphores raised and the others' not; returns its result and the trace."""
        tracing = "/sys/kernel/tracing"
        if os.geteuid() == 0 and not os.path.exists(f"{tracing}/uprobe_events"):
            # A fresh boot may not have it mounted yet (the agent's feature probe mounts it the same way).
            subprocess.run(["mount", "-t", "tracefs", "nodev", tracing], check=False)
        if os.geteuid() != 0 or not os.path.exists(f"{tracing}/uprobe_events"):
            self.fail(f"needs root and tracefs at {tracing} (mount -t tracefs nodev {tracing})")
        group = f"uvnvme_test_{os.getpid()}"
        instance = f"{tracing}/instances/{group}"
        defined = []
        try:
            for index, note in enumerate(stapsdt_notes(LOAD)):  # one uprobe event per probe site
                if probes is not None and note["name"] not in probes:
                    continue
                args = " ".join(f"{a}={fetcharg(spec)}" for a, spec in zip(self.NAMES[note["name"]], note["arguments"]))
                event_name = f"{note['name']}_{index}"
                event = (f"p:{group}/{event_name} {LOAD}:{file_offset(LOAD, note['location']):#x}"
                         f"({file_offset(LOAD, note['semaphore']):#x}) {args}")
                tracefs_write(f"{tracing}/uprobe_events", event + "\n")
                defined.append(event_name)
            os.mkdir(instance)
            tracefs_write(f"{instance}/buffer_size_kb", "16384")
            tracefs_write(f"{instance}/events/{group}/enable", "1")
            result = run_load(*load_args)
            tracefs_write(f"{instance}/events/{group}/enable", "0")
            with open(f"{instance}/trace") as f:
                trace = f.read()
            for cpu in os.listdir(f"{instance}/per_cpu"):
                with open(f"{instance}/per_cpu/{cpu}/stats") as f:
                    self.assertIn("overrun: 0", f.read(), f"{cpu} lost trace events")
        finally:
            if os.path.isdir(instance):
                os.rmdir(instance)
            for event_name in defined:
                tracefs_write(f"{tracing}/uprobe_events", f"-:{group}/{event_name}\n")
        self.assertEqual(result.returncode, 0, result.stderr)
        fired = {name: [] for name in self.NAMES}
        for event, fields in re.findall(r" (complete|tally|irq|mode)_\d+: \(0x[0-9a-f]+\) ([^\n]*)", trace):
            fired[event].append(dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", fields)))
        return json.loads(result.stdout), fired

    def test_qd1_interrupt_tallies_close_at_256_completions_or_2_ms_not_every_few_reaps(self):
        # At QD1 every completion is a reap; 20 us apart, the poll-mode bound (200 us) would close a tally
        # every ~10. An interrupt-mode tally closes at 256 completions or 2 ms, or at the reaper's stop.
        report, fired = self.trace_load("--json", "--no-socket", "--queues", "1", "--latency-us", "20",
                                        "--mode", "interrupt", "--phases", "300ms:qd1")
        tallies = fired["tally"]
        self.assertEqual(sum(e["n"] for e in tallies), report["queues"][0]["completed"])
        self.assertGreater(len(tallies), 2, "too few tallies to judge")
        for e in tallies[:-1]:  # the last one the stop closed
            self.assertEqual(e["mode"], 0, e)
            self.assertTrue(e["n"] >= 256 or e["last_ns"] - e["first_ns"] >= self.TALLY_BOUNDS[0][1], e)

    def test_probe_counts_match_the_report(self):
        report, fired = self.trace_load("--json", "--no-socket", "--queues", "2", "--latency-us", "200",
                                        "--phases", "150ms:qd4,150ms:qd4:poll,150ms:qd4:interrupt")
        for q in report["queues"]:
            key = (q["ctrl"], q["qid"])
            mine = {name: [e for e in events if (e["ctrl"], e["qid"]) == key] for name, events in fired.items()}
            self.assertEqual(sum(e["n"] for e in mine["complete"]), q["completed"], key)
            self.assertTrue(all(e["n"] > 0 and e["mode"] in (0, 1) for e in mine["complete"]))
            self.assertEqual(len(mine["irq"]), q["wakeups"], key)
            self.assertEqual([e["mode"] for e in mine["mode"]], [1, 0], key)
            self.assertTrue(any(e["mode"] == 1 for e in mine["complete"]), "no batch reaped in poll mode")
            # Tallies: the same completions and reaps, in order, never across a switch, closed at the count.
            tallies = mine["tally"]
            self.assertEqual(sum(e["n"] for e in tallies), q["completed"], key)
            self.assertEqual(sum(e["reaps"] for e in tallies), q["reaps"], key)
            self.assertEqual(len(mine["complete"]), q["reaps"], key)
            self.assertLess(len(tallies), len(mine["complete"]), key)
            for e in tallies:
                self.assertIn(e["mode"], (0, 1), e)
                self.assertTrue(0 < e["last_reap"] <= e["n"] < self.TALLY_BOUNDS[e["mode"]][0] + e["last_reap"], e)
                self.assertTrue(0 < e["first_ns"] <= e["last_ns"], e)
            self.assertTrue(all(a["last_ns"] <= b["first_ns"] for a, b in zip(tallies, tallies[1:])), key)
            self.assertIn(1, [e["mode"] for e in tallies], "no tally reaped in poll mode")

    def test_default_probes_fire_once_per_tally_bound_at_qd1_qd8_qd32(self):
        # The agent's default probes (tally, mode) alone, as it attaches them, one queue per run. Each tally
        # but the stop's closes at its mode's count or age and no later (a reap that brought it to the
        # count closed it), so tallies <= completions / COUNT + span / AGE + 2: fires per I/O fall with the
        # depth until the count bound rules (docs/probes.md, "Fires per completion" prints the same table).
        print("\nmode      qd  completions   reaps  wakeups | tally+mode fires per 1000 completions (bound)  "
              "| complete, irq (if attached)", file=sys.stderr)
        for mode_name, mode in (("interrupt", 0), ("poll", 1)):
            count, age = self.TALLY_BOUNDS[mode]
            for qd in (1, 8, 32):
                report, fired = self.trace_load("--json", "--no-socket", "--queues", "1", "--mode", mode_name,
                                                "--phases", f"400ms:qd{qd}", probes=self.DEFAULT_PROBES)
                queue, tallies = report["queues"][0], fired["tally"]
                completed = queue["completed"]
                self.assertEqual(sum(e["n"] for e in tallies), completed, (mode_name, qd))
                self.assertEqual(sum(e["reaps"] for e in tallies), queue["reaps"], (mode_name, qd))
                self.assertEqual(fired["mode"], [], "no switch, no mode probe")
                span = tallies[-1]["last_ns"] - tallies[0]["first_ns"]
                per_1000 = 1000 * (len(tallies) + len(fired["mode"])) / completed
                bound = 1000 * (completed / count + span / age + 2) / completed
                print(f"{mode_name:9} {qd:3} {completed:12} {queue['reaps']:7} {queue['wakeups']:8} | "
                      f"{per_1000:8.2f} ({bound:.2f}) | {1000 * queue['reaps'] / completed:.1f}, "
                      f"{1000 * queue['wakeups'] / completed:.1f}", file=sys.stderr, flush=True)
                for e in tallies:
                    self.assertEqual(e["mode"], mode, e)
                    self.assertLess(e["n"] - e["last_reap"], count, e)  # not later than the count
                for e in tallies[:-1]:  # the last one the stop closed
                    if mode == 0:  # an interrupt-mode tally's age is judged at its last reap
                        self.assertTrue(e["n"] >= count or e["last_ns"] - e["first_ns"] >= age, e)
                self.assertLessEqual(per_1000, bound, (mode_name, qd))


if __name__ == "__main__":
    main(sys.argv)

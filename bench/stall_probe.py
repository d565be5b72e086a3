# SPDX-License-Identifier: Apache-2.0
"""Runs BUILD/bench/stall_probe (bench/stall_probe.cc): the longest time the machine took a CPU from a
thread that only reads the clock, SCHED_FIFO there as uvnvme's device thread runs. It is the floor under
the device's own longest gap between completions: no emulated device posts more evenly than that.
    import stall_probe
    machine = stall_probe.measure(build, cpu, seconds)   # {"longest_gap_us": ..., "gaps_over_1ms": ...}
A probe that cannot run gives {"error": why} instead; the benchmark goes on and says so."""
import json
import os
import subprocess


def measure(build, cpu, seconds, realtime=True):
    probe = os.path.join(build, "bench", "stall_probe")
    command = [probe, str(cpu), f"{seconds:g}"] + (["--realtime"] if realtime else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"{probe}: {error}"}
    if done.returncode != 0:
        return {"error": f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}"}
    try:
        return json.loads(done.stdout)
    except ValueError as error:
        return {"error": f"{probe} printed no JSON ({error}): {done.stdout[:200]!r}"}


def describe(machine):
    if "error" in machine:
        return f"not measured ({machine['error']})"
    return (f"{machine['longest_gap_us']:.1f} us; gaps over 100 us {machine['gaps_over_100us']}, over 1 ms "
            f"{machine['gaps_over_1ms']}, steal {machine['steal_ticks']} ticks")

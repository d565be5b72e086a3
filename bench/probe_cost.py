#!/usr/bin/env python3
"""What observing a userspace driver costs its reaping threads: uvnvme-load in interrupt mode at QD1 and
QD32, with no collector, with the collector's default USDT probes (tally, mode), with the per-reap
complete probe instead of tally (CollectorOptions::userspace_per_reap) and with uvnvme's irq probe as well
(CollectorOptions::userspace_wakeups); and the same load built with sys/sdt.h's 1-byte nop
at its probe sites (uvnvme-load-nop1) instead of uvnvme's 5-byte nop, which kernels from 6.18 on turn
into a call instead of a trap. Every variant runs once per repetition, the order rotating, and the
medians are kept. Writes BUILD/bench-results/probe_cost.json: host (reaper) CPU
microseconds per completion per variant and load, the increase over no collector, and the BPF programs'
own run time per fire (kernel.bpf_stats_enabled), so the rest of the increase is the uprobe trap itself.

Usage (as root): bench/probe_cost.py BUILD_DIR OUTPUT_JSON [--phase-seconds S] [--repeats N]"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval"))
from machine import placement  # noqa: E402  (the evaluation's placement, shared)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_cpu  # noqa: E402  (nothing else runnable on the device's CPU: the fair server would stop it)
import rt_budget  # noqa: E402  (the SCHED_FIFO device thread is not throttled while it runs)

# variant -> (load binary, collector arguments or None for no collector)
VARIANTS = {"none": ("uvnvme-load", None), "default_probes": ("uvnvme-load", []),
            "per_reap_probes": ("uvnvme-load", ["--per-reap"]),
            "with_irq_probe": ("uvnvme-load", ["--wakeups"]), "nop1_none": ("uvnvme-load-nop1", None),
            "nop1_default_probes": ("uvnvme-load-nop1", [])}
BASELINE = {"nop1_default_probes": "nop1_none"}  # every other variant is compared with "none"
LOADS = ["qd1", "qd32"]


def host_cpus(where):
    """The CPUs of everything but the device: --host-cpus of the placement, or None (anywhere)."""
    return [int(c) for c in where[where.index("--host-cpus") + 1].split(",")] if "--host-cpus" in where else None


def start_collector(build, load, extra, cpus):
    command = [f"{build}/tests/bpf/na-collect", "--userspace-only", "--until-eof", "--attach-binary", load] + extra
    collector = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, preexec_fn=device_cpu.on_cpus(cpus) if cpus else None)
    for line in collector.stdout:  # the hooks are printed once the probes are attached
        if line.startswith(("hook usdt/uvnvme:tally", "hook usdt/uvnvme:complete")):
            return collector
    collector.wait()
    sys.exit(f"probe_cost: na-collect did not attach: {collector.stderr.read().strip()}")


def stop_collector(collector):
    out, err = collector.communicate(input="", timeout=30)  # closing its input ends it
    if collector.returncode != 0:
        sys.exit(f"probe_cost: na-collect failed ({collector.returncode}): {err.strip()}")
    programs = {}
    for line in out.splitlines():
        if line.startswith("program "):
            fields = dict(word.split("=", 1) for word in line.split()[2:])
            programs[line.split()[1]] = (int(fields["run_count"]), int(fields["run_time_ns"]))
    return programs


def run_load(load, phase_seconds):
    phases = ",".join(["300ms:qd1"] + [f"{phase_seconds}s:{name}" for name in LOADS])
    command = [load, "--json", "--no-socket", "--mode", "interrupt", "--phases", phases] + placement()
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"probe_cost: uvnvme-load failed ({run.returncode}): {run.stderr.strip()}")
    report = json.loads(run.stdout)
    return report["phases"][1:], report.get("device_clock")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("output")
    parser.add_argument("--phase-seconds", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("probe_cost: needs root (loads BPF programs)")
    stats_path = "/proc/sys/kernel/bpf_stats_enabled"
    stats_before = open(stats_path).read().strip()
    samples = {(variant, name): [] for variant in VARIANTS for name in LOADS}
    program_time = {}  # program -> [run count, run time ns], over every run with a collector
    names = list(VARIANTS)
    device_clocks = set()
    where = placement()
    # Both restored on the way out, the CPU first, whatever ends the run (ExitStack hands an exception
    # raised while restoring one on to the other).
    stack = contextlib.ExitStack()
    stack.__enter__()
    try:
        rt = (stack.enter_context(rt_budget.lifted()) if "--controller-rt" in where
              else {"lifted": False, "reason": "the device thread is not SCHED_FIFO"})
        exclusive = (stack.enter_context(device_cpu.exclusive(int(where[where.index("--controller-cpus") + 1])))
                     if "--controller-cpus" in where else {"exclusive": False, "reason": "the device has no CPU of its own"})
        with open(stats_path, "w") as f:
            f.write("1")
        for repeat in range(args.repeats):
            for variant in names[repeat % len(names):] + names[:repeat % len(names)]:
                binary, extra = VARIANTS[variant]
                load = os.path.abspath(f"{args.build}/uvnvme/{binary}")
                collector = start_collector(args.build, load, extra, host_cpus(where)) if extra is not None else None
                phases, device_clock = run_load(load, args.phase_seconds)
                device_clocks.add(device_clock)
                if collector:
                    for program, (count, ns) in stop_collector(collector).items():
                        total = program_time.setdefault(program, [0, 0])
                        total[0] += count
                        total[1] += ns
                for name, phase in zip(LOADS, phases):
                    host_us = phase["host_cpu_seconds"] / phase["completed"] * 1e6
                    samples[(variant, name)].append({"iops": phase["iops"], "host_cpu_us_per_io": host_us,
                                                     "lat_p50_us": phase["lat_p50_us"]})
                    print(f"probe_cost [{repeat + 1}/{args.repeats}] {variant:19} {name:5} {phase['iops']:>10,.0f} IOPS"
                          f"  host {host_us:7.3f} us/IO  p50 {phase['lat_p50_us']:.1f} us", flush=True)
                time.sleep(0.5)
    finally:
        try:
            with open(stats_path, "w") as f:
                f.write(stats_before)
        finally:
            stack.__exit__(*sys.exc_info())

    result = {"command": " ".join(sys.argv), "placement": placement(), "phase_seconds": args.phase_seconds,
              "rt_budget": rt, "device_cpu": exclusive, "device_clock": sorted(c for c in device_clocks if c), "repeats": args.repeats, "runs": {f"{v}/{n}": runs for (v, n), runs in samples.items()},
              "bpf_ns_per_fire": {p: (ns / count if count else None) for p, (count, ns) in program_time.items()}}
    summary = {}
    for name in LOADS:
        host = {v: statistics.median(r["host_cpu_us_per_io"] for r in samples[(v, name)]) for v in VARIANTS}
        for variant in VARIANTS:
            summary[f"{name}_{variant}_host_cpu_us_per_io"] = host[variant]
            summary[f"{name}_{variant}_iops"] = statistics.median(r["iops"] for r in samples[(variant, name)])
            if VARIANTS[variant][1] is not None:
                base = BASELINE.get(variant, "none")
                summary[f"{name}_{variant}_vs_{base}"] = host[variant] / host[base]
                summary[f"{name}_{variant}_added_us_per_io"] = host[variant] - host[base]
    for program, ns in result["bpf_ns_per_fire"].items():
        if ns is not None:
            summary[f"bpf_{program}_ns_per_fire"] = ns
    result["summary"] = summary
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    for key, value in summary.items():
        print(f"probe_cost: {key} = {value:.3f}")
    print(f"probe_cost: wrote {args.output}")


if __name__ == "__main__":
    main()

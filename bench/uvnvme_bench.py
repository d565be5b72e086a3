#!/usr/bin/env python3
"""Interrupt vs poll reaping on uvnvme, in one uvnvme-load run: one queue at QD1 and QD32 (and idle), the
modes alternating phase by phase so both see the same machine, each configuration repeated and the median
kept. Writes BUILD/bench-results/uvnvme.json with per-configuration IOPS, p50/p99 latency and CPU seconds
per million completions (process, host reaper, emulated controller), and poll/interrupt ratios.

Usage: bench/uvnvme_bench.py BUILD_DIR OUTPUT_JSON [--phase-seconds S] [--repeats N]"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CONFIGS = [("qd1", "interrupt"), ("qd1", "poll"), ("qd32", "interrupt"), ("qd32", "poll"),
           ("idle", "interrupt"), ("idle", "poll")]


def per_million(cpu_seconds, completed):
    return cpu_seconds / completed * 1e6 if completed else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("output")
    parser.add_argument("--phase-seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    phases = ["300ms:qd1:interrupt"]  # warm-up, not counted
    for _ in range(args.repeats):
        phases += [f"{args.phase_seconds}s:{load}:{mode}" for load, mode in CONFIGS]
    # The emulated device gets a core of its own (the last one) and SCHED_FIFO, so that it runs on time
    # while a poller spins, as hardware would; the reaper gets the other cores. Without CAP_SYS_NICE the run
    # falls back to ordinary threads and says so in the result.
    base = [f"{args.build}/uvnvme/uvnvme-load", "--json", "--no-socket", "--queues", "1", "--phases", ",".join(phases)]
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        base += ["--controller-cpus", str(cpus[-1]), "--host-cpus", ",".join(map(str, cpus[:-1]))]
    command = base + ["--controller-rt"]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode == 1 and "SCHED_FIFO" in run.stderr:
        print(f"uvnvme_bench: {run.stderr.strip()}; running the controller without SCHED_FIFO", file=sys.stderr)
        command = base
        run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"uvnvme_bench: uvnvme-load failed ({run.returncode}): {run.stderr.strip()}")
    report = json.loads(run.stdout)

    samples = {f"{load}_{mode}": [] for load, mode in CONFIGS}
    for phase in report["phases"][1:]:
        load, mode = phase["label"].split(":")[1:]
        samples[f"{load}_{mode}"].append(phase)

    configs, summary = {}, {}
    for name, runs in samples.items():
        median = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
        entry = {"repeats": len(runs), "iops": median("iops"), "lat_p50_us": median("lat_p50_us"),
                 "lat_p99_us": median("lat_p99_us"), "wakeups_per_completion": None}
        if name.startswith("idle"):  # what completes here is the previous phase's depth draining
            entry = {"repeats": len(runs)}
            entry["cpu_seconds_per_second"] = statistics.median(r["cpu_seconds"] / r["seconds"] for r in runs)
            entry["host_cpu_seconds_per_second"] = statistics.median(r["host_cpu_seconds"] / r["seconds"] for r in runs)
        else:
            for key, field in (("cpu_s_per_million", "cpu_seconds"), ("host_cpu_s_per_million", "host_cpu_seconds"),
                               ("controller_cpu_s_per_million", "controller_cpu_seconds")):
                entry[key] = statistics.median(per_million(r[field], r["completed"]) for r in runs)
            entry["wakeups_per_completion"] = statistics.median(r["wakeups"] / r["completed"] for r in runs)
        configs[name] = entry
        for key, value in entry.items():
            if key != "repeats" and value is not None:
                summary[f"{name}_{key}"] = value

    for load in ("qd1", "qd32"):
        poll, irq = configs[f"{load}_poll"], configs[f"{load}_interrupt"]
        for key in ("iops", "lat_p50_us", "lat_p99_us", "cpu_s_per_million", "host_cpu_s_per_million"):
            if irq[key]:
                summary[f"{load}_poll_over_interrupt_{key}"] = poll[key] / irq[key]

    result = {"tool": "uvnvme-load", "command": command, "model": report["config"]["model"],
              "controller_rt": "--controller-rt" in command, "controller_own_cpu": "--controller-cpus" in command,
              "phase_seconds": args.phase_seconds, "configs": configs, "summary": summary,
              "note": "medians over repeats of alternating phases in one run; CPU per million completions; "
                      "host = reaper threads, controller = emulated device threads, cpu = whole process"}
    with open(args.output, "w") as out:
        json.dump(result, out, indent=2)
    print(f"uvnvme_bench: {args.output}")
    for name, entry in configs.items():
        print(f"  {name:15s} " + "  ".join(f"{k} {v:.4g}" for k, v in entry.items() if isinstance(v, float)))


if __name__ == "__main__":
    main()

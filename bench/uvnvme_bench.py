#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Interrupt vs poll reaping on uvnvme, with each device clock: one uvnvme-load run per clock (faithful,
sleeping), each on one queue at QD1, QD8 and QD32 (and idle), the modes alternating phase by phase so both
see the same machine, each configuration repeated and the median kept, then QD64 in each mode for the
longest gap between completions under load. Writes BUILD/bench-results/uvnvme.json:
  clocks.<clock>.<qdN>: how late the device posted completions against their due time (lateness_p50/p99/
    max_us), the longest interval between them, IOPS per mode and poll/interrupt ratios; qd64 adds
    interval_max_us (a 40 ms real-time throttle stall would show here);
  configs/summary: per-configuration IOPS, p50/p99 latency and CPU seconds per million completions (process,
    host reaper, emulated controller) and poll/interrupt ratios, from the primary clock's run (faithful when
    the device gets a CPU of its own, else sleeping).
The device thread runs SCHED_FIFO on the last CPU with kernel.sched_rt_runtime_us lifted for the run
(bench/rt_budget.py; restored afterwards), so it is neither late nor throttled, and every other task is moved off
that CPU for the runs (bench/device_cpu.py: the fair server would stop the device while any ordinary task is
runnable there; affinities restored afterwards); the JSON records both as rt_budget and device_cpu.

Usage: bench/uvnvme_bench.py BUILD_DIR OUTPUT_JSON [--phase-seconds S] [--repeats N] [--qd64-seconds S]
       [--host-halt-poll-ns NS]"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_cpu  # noqa: E402
import host_idle  # noqa: E402
import rt_budget  # noqa: E402
import stall_probe  # noqa: E402

LOADS = ["qd1", "qd8", "qd32"]
MODES = ["interrupt", "poll"]
CONFIGS = [(load, mode) for load in LOADS + ["idle"] for mode in MODES]
CLOCKS = ["faithful", "sleeping"]


def per_million(cpu_seconds, completed):
    return cpu_seconds / completed * 1e6 if completed else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def largest(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def run_clock(args, clock, placement, realtime):
    phases = ["300ms:qd1:interrupt"]  # warm-up, not counted
    for _ in range(args.repeats):
        phases += [f"{args.phase_seconds}s:{load}:{mode}" for load, mode in CONFIGS]
    phases += [f"{args.qd64_seconds}s:qd64:{mode}" for mode in MODES]
    base = [f"{args.build}/uvnvme/uvnvme-load", "--json", "--no-socket", "--queues", "1", "--device-clock", clock,
            "--phases", ",".join(phases)] + placement
    command = base + (["--controller-rt"] if realtime else [])
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode == 1 and realtime and "SCHED_FIFO" in run.stderr:
        print(f"uvnvme_bench: {run.stderr.strip()}; running the controller without SCHED_FIFO", file=sys.stderr)
        command = base
        run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"uvnvme_bench: uvnvme-load ({clock}) failed ({run.returncode}): {run.stderr.strip()}")
    report = json.loads(run.stdout)
    if report.get("device_clock") != clock:
        sys.exit(f"uvnvme_bench: asked for the {clock} clock, uvnvme-load ran {report.get('device_clock')}")
    return command, report


def configs_of(report):
    samples = {f"{load}_{mode}": [] for load, mode in CONFIGS}
    for phase in report["phases"][1:]:
        load, mode = phase["label"].split(":")[1:]
        if load != "qd64":
            samples[f"{load}_{mode}"].append(phase)
    configs, summary = {}, {}
    for name, runs in samples.items():
        med = lambda key: median(r[key] for r in runs)  # noqa: E731
        entry = {"repeats": len(runs), "iops": med("iops"), "lat_p50_us": med("lat_p50_us"),
                 "lat_p99_us": med("lat_p99_us"), "wakeups_per_completion": None}
        if name.startswith("idle"):  # what completes here is the previous phase's depth draining
            entry = {"repeats": len(runs)}
            entry["cpu_seconds_per_second"] = median(r["cpu_seconds"] / r["seconds"] for r in runs)
            entry["host_cpu_seconds_per_second"] = median(r["host_cpu_seconds"] / r["seconds"] for r in runs)
            entry["controller_cpu_seconds_per_second"] = median(r["controller_cpu_seconds"] / r["seconds"] for r in runs)
        else:
            for key, field in (("cpu_s_per_million", "cpu_seconds"), ("host_cpu_s_per_million", "host_cpu_seconds"),
                               ("controller_cpu_s_per_million", "controller_cpu_seconds")):
                entry[key] = median(per_million(r[field], r["completed"]) for r in runs)
            entry["wakeups_per_completion"] = median(r["wakeups"] / r["completed"] for r in runs if r["completed"])
            entry["poll_share"] = median(r["poll_completed"] / r["completed"] for r in runs if r["completed"])
            entry["lateness_p99_us"] = med("lateness_p99_us")
        configs[name] = entry
        for key, value in entry.items():
            if key != "repeats" and value is not None:
                summary[f"{name}_{key}"] = value
    for load in LOADS:
        poll, irq = configs[f"{load}_poll"], configs[f"{load}_interrupt"]
        for key in ("iops", "lat_p50_us", "lat_p99_us", "cpu_s_per_million", "host_cpu_s_per_million"):
            if irq[key] and poll[key] is not None:
                summary[f"{load}_poll_over_interrupt_{key}"] = poll[key] / irq[key]
    return samples, configs, summary


def clock_figures(report, samples):
    figures = {"device_clock": report["device_clock"], "controller_cpu_seconds": report["controller_cpu_seconds"],
               "seconds": report["seconds"]}
    for load in LOADS:
        entry = {}
        for mode in MODES:
            runs = samples[f"{load}_{mode}"]
            entry[f"{mode}_iops"] = median(r["iops"] for r in runs)
            entry[f"{mode}_lat_p99_us"] = median(r["lat_p99_us"] for r in runs)
            # signal_write: raising an interrupt holds the device thread; what falls due meanwhile is late.
            for key in ("lateness_p50_us", "lateness_p99_us", "lateness_max_us", "interval_max_us",
                        "signal_write_p99_us"):
                entry[f"{mode}_{key}"] = median(r[key] for r in runs)
        # Both modes: the worse median (the device's timing should not depend on how the host reaps).
        for key in ("lateness_p50_us", "lateness_p99_us"):
            entry[key] = largest(entry[f"{mode}_{key}"] for mode in MODES)
        for key in ("lateness_max_us", "interval_max_us"):
            entry[key] = largest(r[key] for mode in MODES for r in samples[f"{load}_{mode}"])
        irq = entry["interrupt_iops"]
        entry["poll_over_interrupt_iops"] = entry["poll_iops"] / irq if irq else None
        figures[load] = entry
    qd64 = [p for p in report["phases"] if p["label"].split(":")[1] == "qd64"]
    figures["qd64"] = {
        "interval_max_us": largest(p["interval_max_us"] for p in qd64),
        "lateness_p99_us": largest(p["lateness_p99_us"] for p in qd64),
        "lateness_max_us": largest(p["lateness_max_us"] for p in qd64),
        "seconds": sum(p["seconds"] for p in qd64),
        **{f"{p['label'].split(':')[2]}_{k}": p[k] for p in qd64
           for k in ("iops", "interval_max_us", "lateness_p99_us", "interval_histogram_us")},
    }
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("output")
    parser.add_argument("--phase-seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--qd64-seconds", type=float, default=2.0)
    parser.add_argument("--host-halt-poll-ns", type=int, default=None,
                        help="set the idle CPUs' halt polling (bench/host_idle.py) for the runs; default: as it is")
    args = parser.parse_args()

    # The emulated device gets a core of its own (the last one) and SCHED_FIFO, so that it runs on time
    # while a poller spins, as hardware would; the reaper gets the other cores. Without CAP_SYS_NICE the run
    # falls back to ordinary threads and says so in the result. With one CPU only the sleeping clock runs.
    cpus = sorted(os.sched_getaffinity(0))
    placement = []
    clocks = CLOCKS
    if len(cpus) >= 2:
        placement = ["--controller-cpus", str(cpus[-1]), "--host-cpus", ",".join(map(str, cpus[:-1]))]
    else:
        clocks = ["sleeping"]
    runs = {}
    exclusive = device_cpu.exclusive(cpus[-1]) if placement else contextlib.nullcontext(
        {"exclusive": False, "reason": "one CPU: the device shares it"})
    idle = host_idle.polling(args.host_halt_poll_ns) if args.host_halt_poll_ns is not None else \
        contextlib.nullcontext({"set": False, "reason": "left as it is (no --host-halt-poll-ns)"})
    with rt_budget.lifted() as rt, exclusive as device, idle as idle_info:
        for clock in clocks:
            runs[clock] = run_clock(args, clock, placement, realtime=True)
        machine = stall_probe.measure(args.build, cpus[-1], args.qd64_seconds * len(MODES)) if placement else None
    primary = clocks[0]
    command, report = runs[primary]

    samples, configs, summary = configs_of(report)
    figures = {}
    for clock, (_, clock_report) in runs.items():
        clock_samples, _, _ = configs_of(clock_report)
        figures[clock] = clock_figures(clock_report, clock_samples)
        for load in LOADS + ["qd64"]:
            for key in ("lateness_p99_us", "interval_max_us", "poll_over_interrupt_iops"):
                if figures[clock][load].get(key) is not None:
                    summary[f"{clock}_{load}_{key}"] = figures[clock][load][key]
        figures[clock]["command"] = runs[clock][0]
    if machine and "longest_gap_us" in machine:
        summary["machine_longest_gap_us"] = machine["longest_gap_us"]

    result = {"tool": "uvnvme-load", "command": command, "model": report["config"]["model"],
              "primary_clock": primary, "controller_rt": "--controller-rt" in command,
              "controller_own_cpu": "--controller-cpus" in command, "rt_budget": rt,
              "device_cpu": device, "host_idle": idle_info,
              "phase_seconds": args.phase_seconds, "qd64_seconds": args.qd64_seconds, "load_average": os.getloadavg(),
              "configs": configs, "summary": summary, "clocks": figures, "machine_stall": machine,
              "note": "medians over repeats of alternating phases in one run per clock; configs/summary from the "
                      "primary clock's run; CPU per million completions; host = reaper threads, controller = "
                      "emulated device threads, cpu = whole process; lateness = device post time - due time"}
    with open(args.output, "w") as out:
        json.dump(result, out, indent=2)
    print(f"uvnvme_bench: {args.output} (rt budget: {'lifted' if rt.get('lifted') else rt.get('reason')}; device CPU: "
          f"{device.get('moved', 0)} tasks moved off, {device.get('refused', 0)} refused)")
    for name, entry in configs.items():
        print(f"  {primary} {name:15s} " + "  ".join(f"{k} {v:.4g}" for k, v in entry.items() if isinstance(v, float)))
    for clock, entry in figures.items():
        for load in LOADS:
            e = entry[load]
            print(f"  {clock:8s} {load:5s} lateness p50 {e['lateness_p50_us']:.2f} p99 {e['lateness_p99_us']:.2f} "
                  f"max {e['lateness_max_us']:.1f} us; IOPS interrupt {e['interrupt_iops']:,.0f} poll "
                  f"{e['poll_iops']:,.0f} (x{e['poll_over_interrupt_iops']:.2f}); interrupt mode: p99 "
                  f"{e['interrupt_lateness_p99_us']:.2f} us late, raising an interrupt took {e['interrupt_signal_write_p99_us']:.2f} us p99")
        q = entry["qd64"]
        print(f"  {clock:8s} qd64  longest gap {q['interval_max_us']:.1f} us, lateness p99 {q['lateness_p99_us']:.2f} us")
    if machine:
        print(f"  machine  the device CPU's own longest gap (a thread reading the clock, "
              f"{machine.get('seconds', 0):.0f} s): {stall_probe.describe(machine)}")


if __name__ == "__main__":
    main()

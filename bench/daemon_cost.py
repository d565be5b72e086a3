#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent's own cost while uvnvme-load runs at its highest rate on this machine.

One run: nvme-adaptd (adaptive, BPF collector attached to the driver's USDT probes) and uvnvme-load
(1 queue, QD32, the rate the default device model allows), placed as the evaluation places them: the emulated
device SCHED_FIFO on the last CPU with every other task moved off it (bench/device_cpu.py), the reaper and the
daemon on the others. Reports the daemon's CPU seconds (utime+stime
from /proc/PID/stat over the load's run) per million completions, its peak RSS (VmHWM), the load's own CPU
seconds from its report, and the BPF programs' run time (kernel.bpf_stats_enabled=1 for the run; that time
is spent in the load's process, at its probes). Writes BUILD/bench-results/daemon_cost.json.
Usage: bench/daemon_cost.py BUILD_DIR [RUNTIME_S, default 20: the daemon CPU is read in 10 ms ticks]
"""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval"))
from machine import placement  # noqa: E402  (the evaluation's placement, shared)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_cpu  # noqa: E402  (nothing else runnable on the device's CPU: the fair server would stop it)
import rt_budget  # noqa: E402  (the load's SCHED_FIFO device thread is not throttled while it runs)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_snapshot(pid):
    """{tid: (name, cpu seconds, context switches)} of the daemon's live threads: where its CPU goes."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = f.read()
        except FileNotFoundError:
            continue  # the thread ended between the listing and the read
        fields = rest.split()
        switches = sum(int(n) for n in re.findall(r"(?:non)?voluntary_ctxt_switches:\s+(\d+)", status))
        threads[tid] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), switches)
    return threads


def threads_by_name(before, after, total_cpu):
    """CPU seconds and wakeups over the run per thread name; threads that ended in between show in 'ended'."""
    rows = {}
    for tid, (name, cpu, switches) in after.items():
        cpu0, switches0 = before.get(tid, (name, 0.0, 0))[1:]
        row = rows.setdefault(name, {"threads": 0, "cpu_seconds": 0.0, "context_switches": 0})
        row["threads"] += 1
        row["cpu_seconds"] += cpu - cpu0
        row["context_switches"] += switches - switches0
    ended = total_cpu - sum(r["cpu_seconds"] for r in rows.values())
    rows["(threads that ended during the run)"] = {"threads": len(set(before) - set(after)),
                                                   "cpu_seconds": max(ended, 0.0), "context_switches": None}
    return dict(sorted(rows.items(), key=lambda kv: -kv[1]["cpu_seconds"]))


def peak_rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) * 1024


def bpf_run_seconds(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("nvme_adapt_bpf_run_seconds_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    runtime = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    if os.geteuid() != 0:
        sys.exit("daemon_cost: needs root (BPF, USDT)")
    work = tempfile.mkdtemp(prefix="nvme-adapt-daemon-cost-")
    results = os.path.join(build, "bench-results")
    os.makedirs(results, exist_ok=True)
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_before = f.read().strip()
    port = free_port()
    config = os.path.join(work, "config.json")
    with open(config, "w") as f:
        json.dump({"api": {"unixSocket": os.path.join(work, "agent.sock"), "unixSocketGroup": "root"}}, f)
    daemon = load = None
    where = placement()  # [] on one CPU: the device shares it
    host = [int(c) for c in where[where.index("--host-cpus") + 1].split(",")] if "--host-cpus" in where else None
    # Restored on the way out, the CPU first, whatever ends the run (ExitStack hands an exception raised while
    # restoring one on to the other).
    stack = contextlib.ExitStack()
    stack.__enter__()
    try:
        rt = stack.enter_context(rt_budget.lifted())  # the load runs its controller --controller-rt
        exclusive = (stack.enter_context(device_cpu.exclusive(int(where[where.index("--controller-cpus") + 1])))
                     if "--controller-cpus" in where else {"exclusive": False, "reason": "the device has no CPU of its own"})
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        daemon = subprocess.Popen(
            [os.path.join(build, "agent/daemon/nvme-adaptd"), "--config", config, "--state-dir", work + "/state",
             "--runtime-dir", work, "--sources", "uvnvme", "--default-mode", "adaptive",
             "--metrics-listen", f"127.0.0.1:{port}"], stderr=open(os.path.join(work, "daemon.log"), "w"),
            preexec_fn=device_cpu.on_cpus(host) if host else None)  # the agent stays off the device's CPU
        time.sleep(1.0)
        load = subprocess.Popen(
            [os.path.join(build, "uvnvme/uvnvme-load"), "--runtime-dir", work, "--mode", "external",
             "--queues", "1", "--qd", "32", "--phases", f"2500ms:idle,{runtime}s:qd32", "--json"]
            + (where if where else ["--controller-rt"]),
            stdout=subprocess.PIPE, text=True)
        time.sleep(2.2)  # the daemon finds the process (discovery every 2 s) during the idle phase
        cpu_start, bpf_start = cpu_seconds(daemon.pid), bpf_run_seconds(port)
        threads_start = thread_snapshot(daemon.pid)
        report = json.loads(load.communicate(timeout=runtime + 60)[0])
        threads_end = thread_snapshot(daemon.pid)
        cpu_end, bpf_end = cpu_seconds(daemon.pid), bpf_run_seconds(port)
        rss = peak_rss_bytes(daemon.pid)
        with open(os.path.join(work, "daemon.log")) as f:
            attached = re.search(r"collector: attached \d+ probes to \S*uvnvme-load", f.read()) is not None
    finally:
        for process in (load, daemon):
            if process and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_before)
        shutil.rmtree(work, ignore_errors=True)
        stack.__exit__(*sys.exc_info())
    if not attached:
        sys.exit("daemon_cost: the daemon never attached to uvnvme-load: the figures would mean nothing")
    completed = report["completed"]
    daemon_cpu = cpu_end - cpu_start
    load_cpu = report["cpu_seconds"]
    out = {
        "summary": {
            "completions": completed,
            "iops": report["iops"],
            "daemon_cpu_seconds": daemon_cpu,
            "daemon_cpu_seconds_per_million_completions": daemon_cpu / completed * 1e6,
            "load_cpu_seconds": load_cpu,
            "daemon_cpu_vs_load_percent": 100.0 * daemon_cpu / load_cpu,
            "daemon_peak_rss_bytes": rss,
            "bpf_run_seconds": bpf_end - bpf_start,
            "bpf_run_vs_load_percent": 100.0 * (bpf_end - bpf_start) / load_cpu,
        },
        "note": "daemon CPU from /proc/PID/stat over the load's run; load CPU is uvnvme-load's own (host reapers "
                "and the emulated controller); BPF run time is spent inside the load process at its probes",
        "daemon_threads": threads_by_name(threads_start, threads_end, daemon_cpu),
        "load_average": os.getloadavg(),
        "rt_budget": rt,
        "device_cpu": exclusive,
        "placement": where,
        "device_clock": report.get("device_clock"),
        "load_report": {k: report[k] for k in ("iops", "lat_p50_us", "lat_p99_us", "cpu_seconds", "mode_switches")},
    }
    with open(os.path.join(results, "daemon_cost.json"), "w") as f:
        json.dump(out, f, indent=2)
    s = out["summary"]
    print(f"daemon_cost: {completed} completions at {s['iops']:.0f} IOPS; daemon {daemon_cpu:.3f} CPU s "
          f"({s['daemon_cpu_seconds_per_million_completions']:.4f} s per million, {s['daemon_cpu_vs_load_percent']:.2f} % "
          f"of the load's {load_cpu:.2f} s), peak RSS {rss / 2**20:.1f} MiB, BPF {s['bpf_run_seconds']:.3f} s")
    for name, row in out["daemon_threads"].items():
        print(f"  thread {name}: {row['threads']} x, {row['cpu_seconds']:.3f} CPU s, {row['context_switches']} switches")


if __name__ == "__main__":
    main()

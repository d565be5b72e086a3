#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The scale model (nvme-adapt-sim, docs/scale.md): calibration against the patch's published points,
validation against uvnvme measured on this machine by the same `make bench` run, what the agent keeps, the
latency curve and the sweep. Reads BUILD/bench-results/uvnvme.json (bench/uvnvme_bench.py, run before this
in bench/run-all) for the faithful clock's poll/interrupt IOPS ratios at QD1, QD8, QD32 and the parameters
of the model of uvnvme: the reaper's interrupt wake-up latency (interrupt minus poll median latency at QD1),
its CPU per completion (interrupt mode at QD32, where wake-ups are rarest) and the device model. Writes
BUILD/bench-results/sim.json and sim-curve.png (gnuplot, as bench/eval does).

Usage: bench/sim_bench.py BUILD_DIR [--full] [--output JSON]
  --full: the whole sweep (540 cases: static interrupt, in-driver engine, GSIM, agent) and the finer
  latency curve, one command; docs/scale.md gives its estimated CPU time. --output docs/data/sim-full.json
  writes where docs/scale.md reads the full sweep from."""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


class InputError(RuntimeError):
    pass


def uvnvme_inputs(path):
    """The faithful clock's ratios and the uvnvme model parameters from one uvnvme_bench result."""
    try:
        result = json.loads(pathlib.Path(path).read_text())
    except FileNotFoundError:
        raise InputError(f"{path} is missing: bench/uvnvme_bench.py must run first (bench/run-all runs it before this)")
    except json.JSONDecodeError as error:
        raise InputError(f"{path} is not JSON: {error}")
    try:
        faithful = result["clocks"]["faithful"]
        ratios = [faithful[qd]["poll_over_interrupt_iops"] for qd in ("qd1", "qd8", "qd32")]
    except (KeyError, TypeError):
        raise InputError(f"{path} has no clocks.faithful.qd1/qd8/qd32.poll_over_interrupt_iops: the faithful clock "
                         "needs a CPU of its own for the device (uvnvme_bench ran the sleeping clock only)")
    if any(r is None for r in ratios):
        raise InputError(f"{path}: a faithful-clock ratio is null: {ratios}")
    if result.get("primary_clock") != "faithful":
        raise InputError(f"{path}: configs are from the {result.get('primary_clock')} clock, the model's uvnvme "
                         "parameters need the faithful clock's")
    configs = result["configs"]
    wake_ns = (configs["qd1_interrupt"]["lat_p50_us"] - configs["qd1_poll"]["lat_p50_us"]) * 1e3
    job_ns = configs["qd32_interrupt"]["host_cpu_s_per_million"] * 1e3  # us per completion -> ns
    model = result.get("model", "")
    match = re.search(r"read (\d+(?:\.\d+)?) us, write (\d+(?:\.\d+)?) us, cap (\d+) IOPS, (\d+) MB/s", model)
    if not match:
        raise InputError(f"{path}: cannot read the device model from model = {model!r}")
    read_us, write_us, cap, mbps = (float(g) for g in match.groups())
    settings = {
        "wake_latency_ns": round(max(wake_ns, 0)),
        "submit_ns": round(job_ns / 2),
        "job_complete_ns": round(job_ns / 2),
        "read_min_ns": round(read_us * 1e3), "read_mean_ns": round(read_us * 1e3),
        "write_min_ns": round(write_us * 1e3), "write_mean_ns": round(write_us * 1e3),
        "read_iops_cap": cap, "write_iops_cap": cap, "bandwidth": mbps * 1e6, "parallelism": 65536,
    }
    return ratios, settings, result


def summary_of(result):
    """The top-level figures bench/summarize.py prints (model figures, not measurements)."""
    out = {}
    for section in ("calibration", "validation"):
        for point in result.get(section, {}).get("points", []):
            out[f"{section}_{point['name']}_residual"] = point["residual"]
    for keep in result.get("agent_keeps", []):
        if keep.get("ratio") is not None:
            out[f"agent_keeps_{keep['name']}"] = keep["ratio"]
    for policy in ("in_driver", "gsim", "agent"):
        tally = result.get("sweep", {}).get("policies", {}).get(policy, {})
        for key in ("cases", "better", "worse"):
            if key in tally:
                out[f"sweep_{policy}_{key}"] = tally[key]
    return out


def plot(result, directory):
    """sim-curve.png: the agent's gain against decision-to-effect latency, the in-driver gain beside it."""
    if shutil.which("gnuplot") is None:
        raise InputError("gnuplot is missing (scripts/install-deps installs gnuplot-nox)")
    curve = result.get("latency_curve") or []
    data = directory / "sim-curve.dat"
    lines = ["# latency_ms agent_gain_pct in_driver_gain_pct"]
    lines += [f"{p['latency_ns'] / 1e6:.6g} {100 * p['agent_gain']:.6g} {100 * p['in_driver_gain']:.6g}" for p in curve]
    data.write_text("\n".join(lines) + "\n")
    keeps = {k["name"]: k for k in result.get("agent_keeps", [])}
    marked = keeps.get(result.get("latency_curve_point", ""), {})
    marker, measured_plot = "", ""
    if marked:
        x = marked["latency_to_poll_ns"] / 1e6
        point = directory / "sim-curve-measured.dat"
        point.write_text(f"{x:.6g} {100 * marked['agent_gain']:.6g}\n")
        marker = (f"set arrow from {x},graph 0 to {x},graph 1 nohead dt 2\n"
                  f"set label 'latency measured on uvnvme' at {x},graph 0.95 noenhanced\n")
        agent = {v["name"]: v["value"] for v in result.get("parameters", {}).get("agent", [])}
        wait = agent.get("to_poll_blocking_ns")
        waits = f" (loop waits {wait / 1e6:.3g} ms per switch to poll)" if wait is not None else ""
        measured_plot = f", '{point}' using 1:2 with points pt 7 ps 1.5 title 'agent as measured{waits}'"

    script = f"""set terminal pngcairo size 900,540
set output '{directory / "sim-curve.png"}'
set title 'Model (not a measurement): {result.get("latency_curve_point", "")}, gain over static interrupt' noenhanced
set logscale x
set xlabel 'decision-to-effect latency (ms)'
set ylabel 'IOPS gain (%)'
set key bottom left
set grid
{marker}plot '{data}' using 1:2 with linespoints title 'agent (loop waits as long as the latency)', \\
  '{data}' using 1:3 with lines title 'in the driver'{measured_plot}
"""
    run = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if run.returncode != 0:
        raise InputError(f"gnuplot failed: {run.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--output")
    args = parser.parse_args()
    build = pathlib.Path(args.build).resolve()
    results = build / "bench-results"
    results.mkdir(parents=True, exist_ok=True)
    output = pathlib.Path(args.output) if args.output else results / "sim.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    binary = build / "sim" / "nvme-adapt-sim"
    if not os.access(binary, os.X_OK):
        sys.exit(f"sim_bench: {binary} is missing: build the project first")
    try:
        ratios, settings, uvnvme = uvnvme_inputs(results / "uvnvme.json")
    except InputError as error:
        sys.exit(f"sim_bench: {error}")
    command = [str(binary), "report", "--out", str(output), "--uvnvme-ratios", ",".join(f"{r:.6g}" for r in ratios)]
    for name, value in settings.items():
        command += ["--uvnvme-set", f"{name}={value:.6g}"]
    if args.full:
        command.append("--full")
    print("sim_bench: " + " ".join(command), flush=True)
    run = subprocess.run(command)
    if run.returncode not in (0, 3) or not output.exists():
        sys.exit(f"sim_bench: nvme-adapt-sim failed ({run.returncode})")
    result = json.loads(output.read_text())
    result["summary"] = summary_of(result)
    result["uvnvme_source"] = {"file": str(results / "uvnvme.json"), "load_average": uvnvme.get("load_average"),
                               "model": uvnvme.get("model"), "settings": settings}
    output.write_text(json.dumps(result, indent=2) + "\n")
    try:
        plot(result, results)
    except InputError as error:
        sys.exit(f"sim_bench: {error}")
    print(f"sim_bench: {output} and {results / 'sim-curve.png'}")
    if run.returncode == 3:
        sys.exit("sim_bench: a calibration or validation point is outside 15 % (see above)")


if __name__ == "__main__":
    main()

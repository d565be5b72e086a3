#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What observing a userspace driver costs it, measured two ways.

1. Per probe fire (bench/probe_fire_bench.cc): a loop fires one probe with the collector's program attached
   and without, alternating; the median of the paired differences of thread CPU per fire is the probe's
   cost, whatever the driver around it does. For uvnvme's probes at its 5-byte-nop sites (which x86-64
   kernels from 6.18 on turn into a call instead of a trap), the same at sys/sdt.h's 1-byte nops, and
   SPDK's uprobe and return uprobe on spdk_nvme_qpair_process_completions (one call fires both).
2. Per I/O: uvnvme-load in interrupt mode at QD1, QD8 and QD32, one process per load, its measured phases
   alternating between no collector and the collector's default probes (tally, mode): the collector starts or
   stops in an unmeasured gap before each phase, the order within a pair rotating from pair to pair, and the
   phases' CLOCK_MONOTONIC bounds check that every change fell in a gap (a pair with a change inside a phase
   is dropped and counted). Per pair, the ratio of the reaper's (host) CPU per completion with the probes to
   without; the summary keeps the median of the pairs' ratios. Both sides of a pair share one process, so a
   run's own state (one QD1 run's wake-up cost is bimodal here: 1.6-1.9 or 2.6-3.4 us) cannot decide a pair.
   `--extra` adds variants to every pair (per_reap_probes, with_irq_probe, nop1: the default probes on the
   1-byte-nop build against that build's own phases without them, in a process of that build).

Writes BUILD/bench-results/probe_cost.json: summary.ns_per_fire.PROBE (and ns_per_fire_nop1.PROBE),
summary.qdN_default_probes_vs_none (median of paired ratios), qdN_default_probes_added_us_per_io (median of
paired differences), each variant's medians, every run, and the BPF programs' own run time per fire
(kernel.bpf_stats_enabled) so the rest of a fire is the trap or call itself.

Usage (as root): bench/probe_cost.py BUILD_DIR OUTPUT_JSON [--phase-seconds S] [--pairs N] [--extra V,V]"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval"))
from machine import placement  # noqa: E402  (the evaluation's placement, shared)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_cpu  # noqa: E402  (nothing else runnable on the device's CPU: the fair server would stop it)
import rt_budget  # noqa: E402  (the SCHED_FIFO device thread is not throttled while it runs)

# variant -> (load binary, collector arguments or None for no collector, the variant it is paired against)
VARIANTS = {"none": ("uvnvme-load", None, None), "default_probes": ("uvnvme-load", [], "none"),
            "per_reap_probes": ("uvnvme-load", ["--per-reap"], "none"),
            "with_irq_probe": ("uvnvme-load", ["--wakeups"], "none"),
            "nop1_none": ("uvnvme-load-nop1", None, None), "nop1_default_probes": ("uvnvme-load-nop1", [], "nop1_none")}
EXTRA = {"per_reap_probes": ["per_reap_probes"], "with_irq_probe": ["with_irq_probe"],
         "nop1": ["nop1_none", "nop1_default_probes"]}
LOADS = ["qd1", "qd8", "qd32"]
MIN_PAIRS = 7
# probe_fire_bench builds -> the summary key their figures go under
FIRE_BENCHES = {"probe_fire_bench": "ns_per_fire", "probe_fire_bench_spdk": "ns_per_fire",
                "probe_fire_bench_nop1": "ns_per_fire_nop1"}


def host_cpus(where):
    """The CPUs of everything but the device: --host-cpus of the placement, or None (anywhere)."""
    return [int(c) for c in where[where.index("--host-cpus") + 1].split(",")] if "--host-cpus" in where else None


def fire_costs(build, rounds):
    """{bench: its JSON}: each probe_fire_bench build, run once (it alternates attached and not itself)."""
    out = {}
    for bench in FIRE_BENCHES:
        with tempfile.NamedTemporaryFile(suffix=".json") as result:
            command = [f"{build}/bench/{bench}", "--rounds", str(rounds), "--out", result.name]
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"probe_cost: {bench} failed ({run.returncode}): {run.stderr.strip()}")
            out[bench] = json.load(open(result.name))
        for probe, figures in out[bench]["probes"].items():
            bpf = ", ".join(f"{p} {s['ns_per_run']:.0f} ns" for p, s in figures["bpf_programs"].items())
            print(f"probe_cost: fire {bench:22} {probe:36} {figures['ns_per_fire']:8.1f} ns  (BPF {bpf})", flush=True)
    return out


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


GAP_SECONDS = 2.0     # unmeasured phase before each measured one, in which the collector starts or stops
ACTION_DELAY_S = 0.1  # into a gap before the collector changes, so the measured phase before has surely ended
WARMUP_SECONDS = 1.0


def binary_groups(variants):
    """{load binary: the variants run in one uvnvme-load process of it}, each variant next to its base."""
    groups = {}
    for variant in variants:
        groups.setdefault(VARIANTS[variant][0], []).append(variant)
    return groups


def block_plan(group, pairs):
    """The measured blocks of one process, in order: each pair runs the group's variants back to back, the
    order rotating from pair to pair so that neither side always comes first."""
    plan = []
    for pair in range(pairs):
        order = group[pair % len(group):] + group[:pair % len(group)]
        plan += [(pair, variant) for variant in order]
    return plan


class Collectors:
    """At most one na-collect at a time, with the CLOCK_MONOTONIC span in which its probes were attached."""

    def __init__(self, build, load, where, program_time):
        self.build, self.load, self.cpus, self.program_time = build, load, host_cpus(where), program_time
        self.current, self.variant, self.attached_at = None, None, None
        self.spans = []  # (variant, attached ns, detached ns)

    def switch_to(self, variant):
        if variant == self.variant:
            return
        self.stop()
        extra = VARIANTS[variant][1]
        if extra is not None:
            self.current = start_collector(self.build, self.load, extra, self.cpus)
            self.attached_at = time.monotonic_ns()
        self.variant = variant

    def stop(self):
        if self.current is not None:
            for program, (count, ns) in stop_collector(self.current).items():
                total = self.program_time.setdefault(program, [0, 0])
                total[0] += count
                total[1] += ns
            self.spans.append((self.variant, self.attached_at, time.monotonic_ns()))
        self.current, self.variant = None, None

    def attached_during(self, start_ns, end_ns):
        """The variant whose probes were attached for all of [start, end]; None if none overlapped it; False
        if a change fell inside it (the phase is not clean)."""
        for variant, attached, detached in self.spans:
            if attached <= start_ns and end_ns <= detached:
                return variant
            if attached < end_ns and start_ns < detached:
                return False
        return None


def run_process(build, binary, group, load_name, args, where, program_time):
    """One uvnvme-load process at one load, its measured phases alternating between the group's variants:
    a run's own state (the bimodal wake-up cost at QD1) is shared by both sides of each pair instead of
    deciding one side. Returns the (pair, variant, phase report) of the phases whose probes were as planned,
    those of the phases where they were not, and the run's device clock."""
    load = os.path.abspath(f"{build}/uvnvme/{binary}")
    plan = block_plan(group, args.pairs)
    phases = [f"{WARMUP_SECONDS}s:{load_name}"]
    for _ in plan:
        phases += [f"{GAP_SECONDS}s:{load_name}", f"{args.phase_seconds}s:{load_name}"]
    command = [load, "--json", "--no-socket", "--mode", "interrupt", "--phases", ",".join(phases)] + placement()
    collectors = Collectors(build, load, where, program_time)
    spawned = time.monotonic()
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The load's phase clock starts a little after the spawn; each change waits ACTION_DELAY_S into its
        # gap, and the phases' own timestamps check afterwards that every change fell in a gap.
        block = WARMUP_SECONDS
        for _, variant in plan:
            delay = spawned + block + ACTION_DELAY_S - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            collectors.switch_to(variant)
            block += GAP_SECONDS + args.phase_seconds
        out, err = run.communicate(timeout=block + 60)
    finally:
        collectors.stop()
        if run.poll() is None:
            run.kill()
    if run.returncode != 0:
        sys.exit(f"probe_cost: uvnvme-load failed ({run.returncode}): {err.strip()}")
    report = json.loads(out)
    measured = report["phases"][2::2]  # after the warm-up, every gap's following phase
    kept, broken = [], []
    for (pair, variant), phase in zip(plan, measured):
        attached = collectors.attached_during(phase["start_monotonic_ns"], phase["end_monotonic_ns"])
        planned = variant if VARIANTS[variant][1] is not None else None
        (kept if attached == planned else broken).append((pair, variant, phase))
    return kept, broken, report.get("device_clock")


def run_pairs(build, variants, args, where, program_time):
    """runs[variant][load] = one sample per pair whose phases all ran as planned; dropped["BINARY/LOAD"] = the
    pairs of that process left out because a collector change fell inside one of their phases."""
    runs = {v: {name: [] for name in LOADS} for v in variants}
    dropped = {}
    device_clocks = set()
    for binary, group in binary_groups(variants).items():
        group = sorted(group, key=lambda v: VARIANTS[v][2] is not None)  # the base first
        for name in LOADS:
            kept, broken, device_clock = run_process(build, binary, group, name, args, where, program_time)
            device_clocks.add(device_clock)
            bad_pairs = {pair for pair, _, _ in broken}
            dropped[f"{binary}/{name}"] = sorted(bad_pairs)
            for pair, variant, phase in kept:
                if pair in bad_pairs:
                    continue
                host_us = phase["host_cpu_seconds"] / phase["completed"] * 1e6
                runs[variant][name].append({"pair": pair, "iops": phase["iops"], "host_cpu_us_per_io": host_us,
                                            "lat_p50_us": phase["lat_p50_us"]})
                print(f"probe_cost [{pair + 1}/{args.pairs}] {variant:19} {name:5} {phase['iops']:>10,.0f} IOPS"
                      f"  host {host_us:7.3f} us/IO  p50 {phase['lat_p50_us']:.1f} us", flush=True)
            if bad_pairs:
                print(f"probe_cost: {binary} {name}: pairs {sorted(bad_pairs)} dropped (a collector change fell "
                      "inside a measured phase)", flush=True)
            if args.pairs - len(bad_pairs) < MIN_PAIRS:
                sys.exit(f"probe_cost: {binary} {name}: only {args.pairs - len(bad_pairs)} clean pairs of "
                         f"{args.pairs}; the collector took longer than a {GAP_SECONDS} s gap to start or stop")
    return runs, device_clocks, dropped


def paired_summary(runs):
    """Per load and variant: medians, and against its base the median of the pairs' ratios and differences."""
    summary = {}
    for name in LOADS:
        for variant, by_load in runs.items():
            samples = by_load[name]
            summary[f"{name}_{variant}_host_cpu_us_per_io"] = statistics.median(r["host_cpu_us_per_io"] for r in samples)
            summary[f"{name}_{variant}_iops"] = statistics.median(r["iops"] for r in samples)
            base = VARIANTS[variant][2]
            if base is None:
                continue
            by_pair = {r["pair"]: r for r in runs[base][name]}
            pairs = [(a, by_pair[a["pair"]]) for a in samples if a["pair"] in by_pair]
            ratios = [a["host_cpu_us_per_io"] / b["host_cpu_us_per_io"] for a, b in pairs]
            summary[f"{name}_{variant}_vs_{base}"] = statistics.median(ratios)
            summary[f"{name}_{variant}_vs_{base}_pairs"] = ratios
            summary[f"{name}_{variant}_added_us_per_io"] = statistics.median(
                a["host_cpu_us_per_io"] - b["host_cpu_us_per_io"] for a, b in pairs)
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("output")
    parser.add_argument("--phase-seconds", type=float, default=3.0)
    parser.add_argument("--pairs", type=int, default=9, help=f"alternations of the paired phases (at least {MIN_PAIRS})")
    parser.add_argument("--extra", default="", help=f"variants added to every pair: {', '.join(EXTRA)}")
    parser.add_argument("--fire-rounds", type=int, default=9)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("probe_cost: needs root (loads BPF programs)")
    if args.pairs < MIN_PAIRS:
        sys.exit(f"probe_cost: --pairs must be at least {MIN_PAIRS} (one odd phase must not decide a median)")
    variants = ["none", "default_probes"]
    for extra in filter(None, args.extra.split(",")):
        if extra not in EXTRA:
            sys.exit(f"probe_cost: unknown --extra {extra} (one of {', '.join(EXTRA)})")
        variants += EXTRA[extra]
    build = os.path.abspath(args.build)
    stats_path = "/proc/sys/kernel/bpf_stats_enabled"
    stats_before = open(stats_path).read().strip()
    program_time = {}  # program -> [run count, run time ns], over every run with a collector
    where = placement()
    # Both restored on the way out, the CPU first, whatever ends the run (ExitStack hands an exception
    # raised while restoring one on to the other).
    stack = contextlib.ExitStack()
    stack.__enter__()
    try:
        fires = fire_costs(build, args.fire_rounds)
        rt = (stack.enter_context(rt_budget.lifted()) if "--controller-rt" in where
              else {"lifted": False, "reason": "the device thread is not SCHED_FIFO"})
        exclusive = (stack.enter_context(device_cpu.exclusive(int(where[where.index("--controller-cpus") + 1])))
                     if "--controller-cpus" in where else {"exclusive": False, "reason": "the device has no CPU of its own"})
        with open(stats_path, "w") as f:
            f.write("1")
        runs, device_clocks, dropped = run_pairs(build, variants, args, where, program_time)
    finally:
        try:
            with open(stats_path, "w") as f:
                f.write(stats_before)
        finally:
            stack.__exit__(*sys.exc_info())

    summary = {key: {} for key in sorted(set(FIRE_BENCHES.values()))}
    for bench, result in fires.items():
        for probe, figures in result["probes"].items():
            summary[FIRE_BENCHES[bench]][probe] = figures["ns_per_fire"]
    summary.update(paired_summary(runs))
    bpf_ns = {p: (ns / count if count else None) for p, (count, ns) in program_time.items()}
    for program, ns in bpf_ns.items():
        if ns is not None:
            summary[f"bpf_{program}_ns_per_fire"] = ns
    result = {"command": " ".join(sys.argv), "placement": where, "phase_seconds": args.phase_seconds,
              "pairs": args.pairs, "dropped_pairs": dropped, "gap_seconds": GAP_SECONDS, "variants": variants, "rt_budget": rt, "device_cpu": exclusive,
              "device_clock": sorted(c for c in device_clocks if c), "fire_benches": fires,
              "runs": {f"{v}/{n}": r for v, by_load in runs.items() for n, r in by_load.items()},
              "bpf_ns_per_fire": bpf_ns, "summary": summary}
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
    for key, value in summary.items():
        if isinstance(value, float):
            print(f"probe_cost: {key} = {value:.3f}")
        elif isinstance(value, dict):
            print(f"probe_cost: {key} = " + ", ".join(f"{p} {ns:.0f}" for p, ns in value.items()))
    print(f"probe_cost: wrote {args.output}")


if __name__ == "__main__":
    main()

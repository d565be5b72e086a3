#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The bill of observation at fleet scale, from the figures this run's benchmarks measured: ns of CPU per
completion when a reap brings 1, 4, 16 or 64 completions, and the CPU cores that costs at 1 M, 10 M and
45 M IOPS, for the kernel path and for uvnvme's probes. Reads BUILD/bench-results/bpf_cost.json and
probe_cost.json (run those first; bench/run-all does), writes BUILD/bench-results/cost.json and prints the
table.

How each figure is made (nothing here is measured by this script; every input names its source):
- kernel (the per-batch programs, the default where the nvme module has BTF): one reap of n CQEs runs
  fentry/nvme_irq, a per-CPU store (about what the bare counter costs), and fexit/nvme_irq or
  fexit/nvme_poll, which does the completion program's accounting once for the batch; so a batch costs
  bare_counter_ns_per_event + completion_ns_per_event of bpf_cost.json, over n completions. This host has no
  NVMe device to run them on (and the VM's emulated CPU gives no usable times), so the block program's
  measured figures stand in for them.
- kernel_per_completion (the nvme_sq fallback): the completion program runs once per CQE whatever the
  batch, plus the attribution pair (fentry + fexit, each about the bare counter) once per reap:
  completion_ns_per_event + 2 x bare_counter_ns_per_event / n.
- uvnvme (the per-reap `complete` probe, CollectorOptions::userspace_per_reap): it fires once per reaped
  batch, so a batch costs one fire: probe_cost.json's ns_per_fire.complete (the argument moves, the uprobe
  entry and the BPF program, measured in a loop that fires it), spread over the batch's completions.
- uvnvme_tally (the default `tally` probe): one fire per tally of up to 64 completions or 200 us (256 or 2 ms in interrupt mode), whatever
  the batches; the figure is the one measured at QD32, probe_cost.json's qd32_default_probes_added_us_per_io
  (the fires and the driver's bookkeeping), the same for every batch size.
Usage: bench/cost.py BUILD_DIR
"""
import json
import os
import sys

BATCHES = [1, 4, 16, 64]
RATES = {"1M": 1e6, "10M": 10e6, "45M": 45e6}


def load(results, name):
    path = os.path.join(results, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        sys.exit(f"cost: cannot read {path} ({error}); run its benchmark first (bench/run-all)")


def number(data, *keys, source):
    value = data
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            sys.exit(f"cost: {source} has no {'.'.join(keys)}")
        value = value[key]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        sys.exit(f"cost: {source} {'.'.join(keys)} is not a number: {value!r}")
    if value < 0:  # a cost below the run's noise: kept as measured, and said
        print(f"cost: warning: {source} {'.'.join(keys)} = {value:.4g} is negative (below that run's noise)")
    return float(value)


def bill(ns_per_completion):
    """batch -> {ns_per_completion, cores_at_1M, ...}"""
    return {str(batch): {"ns_per_completion": ns,
                         **{f"cores_at_{name}_iops": ns * rate / 1e9 for name, rate in RATES.items()}}
            for batch, ns in ns_per_completion.items()}


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    results = os.path.join(build, "bench-results")
    bpf = load(results, "bpf_cost.json")
    probes = load(results, "probe_cost.json")
    completion_ns = number(bpf, "summary", "completion_ns_per_event", source="bpf_cost.json")
    bare_ns = number(bpf, "summary", "bare_counter_ns_per_event", source="bpf_cost.json")
    fire_ns = number(probes, "summary", "ns_per_fire", "complete", source="probe_cost.json")
    tally_ns = 1e3 * number(probes, "summary", "qd32_default_probes_added_us_per_io", source="probe_cost.json")

    kernel = bill({batch: (completion_ns + bare_ns) / batch for batch in BATCHES})
    fallback = bill({batch: completion_ns + 2 * bare_ns / batch for batch in BATCHES})
    uvnvme = bill({batch: fire_ns / batch for batch in BATCHES})
    tally = bill({batch: max(tally_ns, 0.0) for batch in BATCHES})
    paths = (("kernel", kernel), ("kernel_per_completion", fallback), ("uvnvme", uvnvme), ("uvnvme_tally", tally))
    out = {
        "summary": {f"{path}_batch{batch}_{key}": value
                    for path, table in paths for batch, row in table.items() for key, value in row.items()},
        **dict(paths),
        "inputs": {"bpf_cost.completion_ns_per_event": completion_ns, "bpf_cost.bare_counter_ns_per_event": bare_ns,
                   "probe_cost.ns_per_fire.complete": fire_ns,
                   "probe_cost.qd32_default_probes_added_us_per_io": tally_ns / 1e3},
        "method": __doc__.split("How each figure is made", 1)[1].split("Usage:", 1)[0].strip(),
    }
    path = os.path.join(results, "cost.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"cost: ns of CPU per completion, and CPU cores at {', '.join(RATES)} IOPS")
    print(f"  {'path':21} {'batch':>5} {'ns/completion':>14} " + " ".join(f"{'cores@' + r:>11}" for r in RATES))
    for name, table in paths:
        for batch, row in table.items():
            print(f"  {name:21} {batch:>5} {row['ns_per_completion']:14.1f} "
                  + " ".join(f"{row[f'cores_at_{r}_iops']:11.3f}" for r in RATES))
    print(f"cost: wrote {path}")


if __name__ == "__main__":
    main()

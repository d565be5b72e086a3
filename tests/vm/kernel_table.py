#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the per-kernel table of docs/collectors.md from the VM tests' own records.

Reads BUILD/vm-results/vm_nvme_e2e_*/summary.json (written by nvme_e2e_test.py) and prints one Markdown row per
kernel: release, how nvme is built, BTF present, libbpf, the collector and its hooks, the fallbacks the
kernel-only attach probe could load, the levers, the checks and the test's duration.

  tests/vm/kernel_table.py [--build-dir build]
"""

import argparse
import json
import sys
from pathlib import Path

# The collectors' preference order (docs/collectors.md, "Hooks and how they are chosen"): a hook and what
# replaces it when it does not load, with the attach probe's program that stands for the replacement.
FALLBACKS = {
    "tp_btf/nvme_sq": ("raw_tp/nvme_sq", "raw_tp/nvme_complete_rq"),
    "raw_tp/nvme_sq": ("tracepoint/nvme/nvme_sq", "tracepoint/nvme/nvme_complete_rq"),
    "fentry/nvme_irq": ("block layer hooks", "tp_btf/block_rq_complete"),
    "fentry/nvme_poll": ("block layer hooks", "tp_btf/block_rq_complete"),
    "tp_btf/block_rq_complete": ("raw_tp/block_rq_complete", None),
    "tp_btf/irq_handler_entry": ("raw_tp/irq_handler_entry", None),
}


def _yes(flag):
    return "yes" if flag else "no"


def _hooks(summary):
    hooks = summary.get("hooks", {})
    chosen = [h for h in hooks.get("chosen", []) if not h.startswith(("usdt", "uprobe", "uretprobe"))]
    return hooks.get("collector"), chosen


def _compact(chosen):
    """fentry/X with fexit/X as fentry+fexit/X, tp_btf/E_entry with its _exit twin as E_entry+exit."""
    out = []
    for hook in chosen:
        kind, _, name = hook.partition("/")
        if (kind == "fexit" and f"fentry/{name}" in chosen) or (hook.endswith("_exit") and
                                                                 hook[:-5] + "_entry" in chosen):
            continue
        if kind == "fentry" and f"fexit/{name}" in chosen:
            hook = f"fentry+fexit/{name}"
        elif hook.endswith("_entry") and hook[:-6] + "_exit" in chosen:
            hook += "+exit"
        out.append(hook)
    return out


def _fallbacks(summary, chosen):
    probe = summary.get("bpf", {}).get("hooks", {})
    parts = []
    for hook in chosen:
        fallback = FALLBACKS.get(hook)
        if not fallback:
            continue
        name, stand_in = fallback
        loaded = probe.get(stand_in, {}).get("attached") if stand_in else None
        parts.append(f"{hook} → {name}" + ("" if loaded is None else f" ({stand_in} {'attached' if loaded else 'refused'})"))
    return "; ".join(parts) or "none"


def _levers(summary):
    switches = summary.get("switches", {})
    checks = {row["check"]: row["ok"] for row in summary.get("checks", [])}
    switched = sum(1 for name, ok in checks.items() if name.startswith("lever switch-") and ok)
    coalescing = summary.get("coalescing", {})
    default = "coalescing" if any(n.startswith("restart: the kernel's default lever") and ok
                                  for n, ok in checks.items()) else "?"
    return (f"poll_queues_reset: {switched}/{len(switches)} switches; coalescing: refused by QEMU (`0x410e`, "
            f"{coalescing.get('lever_errors', '?')} lever error); default lever {default}: no adaptive-poll "
            f"attribute, no GSIM")


def row(summary):
    btf = summary.get("btf", {})
    builtin = summary.get("kernel", {}).get("builtin", [])
    collector, chosen = _hooks(summary)
    checks = summary.get("checks", [])
    return "| " + " | ".join([
        f"`{summary.get('kernel_release')}`",
        "built in" if "nvme" in builtin else "modules",
        " / ".join(_yes(btf.get(m)) for m in ("vmlinux", "nvme_core", "nvme")),
        summary.get("bpf", {}).get("libbpf", "?"),
        _yes(summary.get("bpf", {}).get("tp_btf_pointer_args_nullable")),
        f"{collector}: " + ", ".join(f"`{h}`" for h in _compact(chosen)),
        _fallbacks(summary, chosen),
        _levers(summary),
        summary.get("hipri_without_poll_queue", "?"),
        summary.get("error") or f"{len(checks) - summary.get('checks_failed', 0)}/{len(checks)}",
        f"{summary.get('total_seconds', '?')} s",
    ]) + " |"


HEADER = ("| kernel (`uname -r`) | nvme | BTF vmlinux / nvme_core / nvme | libbpf | tp_btf pointer args nullable | "
          "collector: hooks chosen | "
          "fallback of each (attach probe) | levers | io_uring hipri without a poll queue | checks | test duration |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=Path(__file__).resolve().parents[2] / "build")
    args = parser.parse_args(argv)
    paths = sorted((args.build_dir / "vm-results").glob("vm_nvme_e2e_*/summary.json"),
                   key=lambda p: [int(n) if n.isdigit() else 99 for n in p.parent.name.rsplit("e2e_", 1)[1].split("_")])
    if not paths:
        print(f"kernel_table: no vm_nvme_e2e_*/summary.json under {args.build_dir / 'vm-results'}: run ctest -L vm",
              file=sys.stderr)
        return 1
    print(HEADER)
    for path in paths:
        print(row(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

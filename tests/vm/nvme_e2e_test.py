#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end test of the real Linux nvme driver (a Debian kernel: 6.1, 6.12, 7.3) against QEMU's emulated NVMe.

Boots the VM with tests/vm/guest/nvme_e2e.sh as the guest script, then asserts here, on the host, on the
files it recorded: queue layout (interrupt vs poll queues), where libaio and io_uring-hipri completions land
(tracefs hist per qid against fio's counts), the poll_queues + reset_controller lever, NVMe Set Features
FID 08h on QEMU, and which BPF hooks load and count on this kernel (the kernel-only, BPF-free cross-checks);
then the project's agent in the guest (agent_checks.py): discovery, hooks, per-queue counts, the levers
driven through nvme-adaptctl over gRPC, a crash and restart with its journal. Writes RESULTS/summary.json
(RESULTS: BUILD/vm-results/<test name>) with the guest's kernel_release and checks_failed.
A machine without QEMU, the kernel package or the built binaries fails the test with what is missing.

  tests/vm/nvme_e2e_test.py [--build-dir build] [--kernel 6.1|6.12|7.3] [--test-name vm_nvme_e2e_6_1]
"""

import argparse
import errno
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean of __pycache__
sys.path.insert(0, str(Path(__file__).resolve().parent))
import agent_checks  # noqa: E402
import collector_checks  # noqa: E402
import nvme_facts as facts  # noqa: E402
from vmkernel import BTF_MODULES, KERNELS, VmSetupError  # noqa: E402
from vmrun import (GUEST_PATH, SOURCE_DIR, VM_DIR, Clock, VmOptions, VmRunError, raise_on_sigterm,  # noqa: E402
                   require_tools, run_vm)

TOLERANCE = 0.01  # hist counts vs fio's completed I/Os, and stray completions, as a fraction
# BPF hooks on nvme_complete_rq must count exactly what the tracefs hist counts; the others are reported.
COUNTED_HOOKS = ("tp_btf/nvme_complete_rq", "raw_tp/nvme_complete_rq", "tracepoint/nvme/nvme_complete_rq")
SET_FEATURES_NOT_CHANGEABLE = "0x410e"
EOPNOTSUPP = errno.EOPNOTSUPP
# The attach probe's tp_btf/nvme_sq program that reads through the request without a NULL check.
UNCHECKED_DEREF_PROGRAM = "tp_btf_nvme_sq_unchecked"
# Host programs the guest script runs (from the shared host root), with their Debian packages.
GUEST_TOOLS = {"fio": "fio", "nvme": "nvme-cli", "bpftool": "bpftool", "python3": "python3", "bash": "bash",
               "ip": "iproute2"}
# The project's binaries the guest runs from the build tree.
AGENT_BINARIES = ("agent/daemon/nvme-adaptd", "agent/ctl/nvme-adaptctl", "tests/bpf/na-collect")


class Checks:
    def __init__(self):
        self.rows = []

    def check(self, name, ok, detail):
        self.rows.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)

    def failed(self):
        return [r["check"] for r in self.rows if not r["ok"]]


def _compile_bpf_probe(build_dir):
    require_tools({"clang": "clang"})
    clang = shutil.which("clang")
    out = build_dir / "vm-work" / "attach_probe.bpf.o"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([clang, "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", "-I/usr/include/x86_64-linux-gnu",
                    "-c", str(VM_DIR / "guest" / "attach_probe.bpf.c"), "-o", str(out)], check=True)
    return out


def _within(a, b):
    return abs(a - b) <= TOLERANCE * max(a, b, 1)


def _routing(checks, results, run, expect_on, other, summary):
    """Checks that run's completions match fio's count and landed on the `expect_on` qids, not on `other`."""
    fio_ios, errors = facts.fio_reads(results / "io" / run / "fio.json")
    per_qid = facts.hist_by_qid(results / "io" / run / "hist-qid.txt")
    io_total = sum(n for q, n in per_qid.items() if q > 0)
    on_expected = sum(per_qid.get(q, 0) for q in expect_on)
    stray = sum(per_qid.get(q, 0) for q in other)
    before = facts.nvme_vectors(results / "io" / run / "interrupts.before")
    after = facts.nvme_vectors(results / "io" / run / "interrupts.after")
    interrupts = {q: after[q][1] - before.get(q, (0, 0))[1] for q in after if q > 0}
    summary["io"][run] = {"fio_completed": fio_ios, "fio_errors": errors, "hist_by_qid": per_qid,
                          "interrupts_by_qid": interrupts}
    note = facts.timeout_note(results / "io" / run)
    checks.check(f"{run}: fio ran", fio_ios > 0 and not any(errors),
                 f"{fio_ios} reads completed, errors {errors}{note}")
    checks.check(f"{run}: hist count matches fio within 1 %", _within(io_total, fio_ios),
                 f"hist {io_total} vs fio {fio_ios}{note}")
    checks.check(f"{run}: completions on qids {sorted(expect_on)}",
                 _within(on_expected, io_total) and stray <= TOLERANCE * io_total,
                 f"per qid {dict(sorted(per_qid.items()))}; on {sorted(expect_on)}: {on_expected}, "
                 f"on {sorted(other)}: {stray}{note}")
    return interrupts


def _no_timeouts(checks, results, summary):
    """No command of any io_run timed out in the guest's nvme driver. The test asks for no timeout: one means
    the emulated device lost a command (tests/vm/README, "Lost commands"); the kernel then aborts it, resets the
    controller after another 30 s and completes it by cancelling it, so every count of that run is in doubt."""
    summary["nvme_timeouts"] = {}
    for run_dir in sorted(p for p in (results / "io").iterdir() if p.is_dir()):
        path = run_dir / "dmesg-during.txt"
        if not path.exists():
            checks.check(f"{run_dir.name}: no NVMe command timed out", False, f"{path} missing")
            continue
        timeouts = facts.nvme_timeouts(path)
        described = facts.describe_timeouts(timeouts)
        if described:
            summary["nvme_timeouts"][run_dir.name] = timeouts
        checks.check(f"{run_dir.name}: no NVMe command timed out", not described,
                     f"{described}: the emulated device lost them (tests/vm/README, Lost commands)" if described
                     else "every command completed")


def _hipri_without_poll_queue(checks, results, irq_qids, poll_qids, summary):
    """io_uring IOPOLL on a device without poll queues: 6.1 completes it on the interrupt queues, newer kernels
    refuse every polled read with EOPNOTSUPP (the block layer fails a polled bio on a queue that cannot poll)."""
    run = "hipri-no-poll-queue"
    _, errors = facts.fio_reads(results / "io" / run / "fio.json")
    if errors and all(e == EOPNOTSUPP for e in errors):
        per_qid = facts.hist_by_qid(results / "io" / run / "hist-qid.txt")
        summary["hipri_without_poll_queue"] = "refused (EOPNOTSUPP)"
        summary["io"][run] = {"fio_errors": errors, "hist_by_qid": per_qid}
        checks.check(f"{run}: polled reads refused with EOPNOTSUPP, none completed on a queue",
                     not any(per_qid.get(q, 0) for q in [*irq_qids, *poll_qids]),
                     f"fio errors {errors}, completions per qid {per_qid}")
        return
    summary["hipri_without_poll_queue"] = "completed on the interrupt queues"
    _routing(checks, results, run, irq_qids, poll_qids, summary)


def _queue_layout(checks, snapshot_dir, label, summary):
    """(irq qids, poll qids, kernel's default/read/poll split) of nvme0's I/O queues from a snapshot_queues dir.

    A blk-mq hardware queue whose nvme queue has no vector in /proc/interrupts is a poll queue."""
    hw = facts.hardware_queues(snapshot_dir / "mq-cpu-list.txt")
    vectors = facts.nvme_vectors(snapshot_dir / "interrupts.txt")
    split = facts.last_queue_split(snapshot_dir / "dmesg-queues.txt")
    modes = facts.msi_modes(snapshot_dir / "msi-irqs.txt")
    irq_qids = sorted(q for q in hw if q in vectors)
    poll_qids = sorted(q for q in hw if q not in vectors)
    vector_modes = {q: modes.get(irq) for q, (irq, _) in vectors.items()}
    summary["queues"][label] = {"hw_queues_cpu_list": hw, "vectors": {q: v[0] for q, v in vectors.items()},
                                "vector_modes": vector_modes, "irq_qids": irq_qids, "poll_qids": poll_qids,
                                "default_read_poll": split}
    checks.check(f"{label}: admin and interrupt queues have MSI-X vectors",
                 0 in vectors and all(vector_modes[q] == "msix" for q in [0, *irq_qids]),
                 f"vector modes per qid {vector_modes}")
    return irq_qids, poll_qids, split


def _btf(checks, results, builtin, summary):
    """/sys/kernel/btf has vmlinux and one file per BTF module that this kernel builds as a module."""
    present = (results / "discovery" / "btf.txt").read_text().split()
    expected = ["vmlinux", *[m for m in BTF_MODULES if m not in builtin]]
    summary["btf"] = {m: m in present for m in ("vmlinux", *BTF_MODULES)}
    summary["btf_builtin"] = [m for m in BTF_MODULES if m in builtin]
    checks.check(f"BTF in /sys/kernel/btf: {' '.join(expected)}"
                 f"{' (built in: ' + ' '.join(summary['btf_builtin']) + ')' if summary['btf_builtin'] else ''}",
                 all(m in present for m in expected), f"/sys/kernel/btf: {' '.join(present)}")


def assert_results(results, builtin=()):
    checks = Checks()
    summary = {"queues": {}, "io": {}}
    attrs = (results / "discovery" / "nvme0-attrs.txt").read_text()
    checks.check("nvme0 found and live", "state: live" in attrs and "transport: pcie" in attrs,
                 " ".join(line.strip() for line in attrs.splitlines() if line.startswith(("model", "state"))))

    _btf(checks, results, builtin, summary)
    _no_timeouts(checks, results, summary)  # first: a lost command puts every later count of its run in doubt

    irq_qids, poll_qids, split = _queue_layout(checks, results / "discovery", "poll_queues=1", summary)
    checks.check("poll_queues=1: q1, q2 have MSI-X vectors, q3 has none (poll)",
                 irq_qids == [1, 2] and poll_qids == [3] and split == (2, 0, 1),
                 f"irq qids {irq_qids}, poll qids {poll_qids}, kernel says default/read/poll {split}")

    interrupts = _routing(checks, results, "libaio", irq_qids, poll_qids, summary)
    checks.check("libaio: the I/O queues' vectors fired", sum(interrupts.values()) > 0,
                 f"interrupts per qid {interrupts}")
    _routing(checks, results, "hipri", poll_qids, irq_qids, summary)

    fid8 = (results / "set-features" / "set-fid8.txt").read_text().strip()
    fid8_status = int((results / "set-features" / "set-fid8.status").read_text())
    checks.check(f"Set Features FID 08h answered Feature Not Changeable ({SET_FEATURES_NOT_CHANGEABLE})",
                 fid8_status != 0 and SET_FEATURES_NOT_CHANGEABLE in fid8, f"status {fid8_status}: {fid8}")
    summary["set_features_fid8"] = {"status": fid8_status, "output": fid8,
                                    "get": (results / "set-features" / "get-fid8.txt").read_text().strip()}

    after_irq, after_poll, after_split = _queue_layout(checks, results / "lever", "after poll_queues=0 reset", summary)
    start, end = map(float, (results / "lever" / "reset-uptime.txt").read_text().split())
    summary["queues"]["reset_seconds"] = round(end - start, 2)
    checks.check("poll_queues=0 + reset_controller: no poll queue remains",
                 not after_poll and after_irq and after_split is not None and after_split[2] == 0,
                 f"irq qids {after_irq}, poll qids {after_poll}, default/read/poll {after_split}, "
                 f"reset took {end - start:.2f} s")
    _hipri_without_poll_queue(checks, results, after_irq, poll_qids, summary)

    _bpf_hooks(checks, results, summary)
    collector_checks.check_collector_counts(checks, results, summary)

    _routing(checks, results, "agent-libaio", irq_qids, poll_qids, summary)
    _routing(checks, results, "agent-hipri", poll_qids, irq_qids, summary)
    agent_checks.check_agent(checks, results, summary)
    print(f"        {agent_checks.describe_hooks(summary)}", flush=True)
    return checks, summary


def _feature_probe_facts(path):
    """The lines of `bpftool feature probe kernel` that matter to the collectors' hook and map choice."""
    probe = json.loads(path.read_text())
    kprobe_helpers = set(probe["helpers"].get("kprobe_available_helpers", []))
    return {
        "program_types": {t: probe["program_types"].get(f"have_{t}_prog_type")
                          for t in ("tracing", "raw_tracepoint", "tracepoint", "kprobe")},
        "ringbuf_map": probe["map_types"].get("have_ringbuf_map_type"),
        "kprobe_helpers": {h: h in kprobe_helpers for h in ("bpf_ringbuf_reserve", "bpf_get_func_ip",
                                                             "bpf_get_attach_cookie", "bpf_loop")},
        "bounded_loops": probe["misc"].get("have_bounded_loops"),
    }


def _bpf_hooks(checks, results, summary):
    attach = json.loads((results / "bpf" / "attach.json").read_text())
    hist = facts.hist_by_qid(results / "io" / "bpf-attached" / "hist-qid.txt")
    completions = sum(hist.values())
    trace_types = (results / "bpf" / "nvme_core-trace-types.txt").read_text()
    unchecked = next((p for p in attach["programs"] if p["program"] == UNCHECKED_DEREF_PROGRAM), {})
    summary["bpf"] = {"libbpf": attach["libbpf"], "hist_completions": completions, "hist_by_qid": hist,
                      "hooks": {p["section"]: {k: p.get(k) for k in ("loaded", "attached", "hits", "error")}
                                for p in attach["programs"] if p is not unchecked},
                      # The verifier types tp_btf pointer arguments trusted_ptr_or_null: a dereference needs a check.
                      "tp_btf_pointer_args_nullable": not unchecked.get("loaded"),
                      "nvme_core_btf_trace_types": re.findall(r"'(btf_trace_\w+)'", trace_types),
                      "feature_probe": _feature_probe_facts(results / "bpf" / "feature-probe.json")}
    for p in attach["programs"]:
        print(f"        bpf {p['section'] + (' (no NULL check)' if p is unchecked else ''):34} loaded={p['loaded']!s:5} attached={p['attached']!s:5} "
              f"hits={p['hits']} {p.get('error') or ''}")
    for hook in COUNTED_HOOKS:
        p = summary["bpf"]["hooks"].get(hook, {})
        checks.check(f"BPF {hook} counts every completion", p.get("attached") and _within(p.get("hits") or 0,
                     completions), f"hits {p.get('hits')} vs hist {completions} {p.get('error') or ''}")


def _write_summary(results, summary, checks_failed):
    (results / "summary.json").write_text(json.dumps({**summary, "checks_failed": checks_failed}, indent=1,
                                                     default=str) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=SOURCE_DIR / "build")
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="6.1", help="Debian guest kernel")
    parser.add_argument("--test-name", help="results go to BUILD/vm-results/TEST_NAME (default vm_nvme_e2e_<kernel>)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before QEMU is killed (the guests take 140-280 s on a quiet 2-core host, about "
                             "twice that with a build beside it)")
    args = parser.parse_args(argv)
    build_dir = args.build_dir.resolve()
    name = args.test_name or "vm_nvme_e2e_" + args.kernel.replace(".", "_").replace("-", "_")
    clock = Clock()
    raise_on_sigterm()
    try:
        require_tools(GUEST_TOOLS, path=GUEST_PATH)
        missing = [str(build_dir / b) for b in AGENT_BINARIES if not (build_dir / b).is_file()]
        if missing:
            raise VmSetupError(f"not built: {', '.join(missing)}; build the project first (cmake --build build)")
        probe = _compile_bpf_probe(build_dir)
        vm = run_vm(VmOptions(guest_script=VM_DIR / "guest" / "nvme_e2e.sh", build_dir=build_dir,
                              results_dir=build_dir / "vm-results" / name, kernel=args.kernel,
                              env={"NVA_BPF_PROBE_OBJ": str(probe)}, timeout=args.timeout), clock)
    except (VmSetupError, VmRunError, subprocess.CalledProcessError, KeyboardInterrupt) as e:
        print(f"{name}: FAILED: {e}", file=sys.stderr)
        return 1
    results = vm.results_dir
    kernel_file = results / "discovery" / "kernel.txt"
    summary = {"kernel": {"name": vm.kernel.name, "packages": vm.kernel.packages, "builtin": vm.kernel.builtin,
                          "downloaded": vm.kernel.downloaded},
               "kernel_release": kernel_file.read_text().strip() if kernel_file.exists() else None}
    steps = facts.steps(results / "steps.tsv")
    summary["steps"] = steps
    clock.log("guest steps: " + ", ".join(f"{n} {s:.1f}s{'' if st == 'ok' else ' FAILED ' + st}"
                                           for n, s, st in steps))
    if vm.exit_status != 0:
        _write_summary(results, {**summary, "error": f"guest script exit status {vm.exit_status}"}, 1)
        print(f"{name}: FAILED: the guest script exited with status {vm.exit_status}; "
              f"see {vm.console_log}", file=sys.stderr)
        return 1
    clock.log(f"checking the results in {results}")
    try:
        checks, found = assert_results(results, vm.kernel.builtin)
    except (OSError, KeyError, ValueError) as e:
        _write_summary(results, {**summary, "error": f"results incomplete or malformed: {e!r}"}, 1)
        print(f"{name}: FAILED: results incomplete or malformed: {e!r}", file=sys.stderr)
        return 1
    summary.update(found)
    summary.update({"checks": checks.rows, "vm_seconds": round(vm.seconds, 1),
                    "nvme_ready_uptime": facts.nvme_ready_uptime(vm.console_log),
                    "total_seconds": round(clock.elapsed(), 1)})
    failed = checks.failed()
    _write_summary(results, summary, len(failed))
    clock.log(f"{summary['kernel_release']}: {len(checks.rows) - len(failed)}/{len(checks.rows)} checks passed; "
              f"summary in {results / 'summary.json'}")
    if failed:
        print(f"{name}: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Our nvmet polling-queue task (kmod/nvmet) in a Debian kernel's VM guest, over NVMe/TCP on the guest's loopback.

Builds nvmet.ko and nvmet-tcp.ko for the kernel (kmod/build_module.py --module nvmet: Debian's linux-source of
the image's exact version, our patch series, cached), boots the guest with tests/vm/guest/nvmet_poll.sh (the
backing nvme0 with poll_queues=1) and asserts here on what it recorded:
- our nvmet replaces the stock one: the pqt parameters, /sys/module/nvmet/pqt, the namespace attributes, module
  BTF and nvmet_pqt_poll_bio (the task's reap, for tracers) in kallsyms;
- pqt_enable is refused on a namespace not enabled (EINVAL), on a file (EOPNOTSUPP) and on a block device without
  poll queues (EOPNOTSUPP, the device named in dmesg);
- 4 KiB random reads on the TCP host with polled submission off: the backing controller completes them on its
  interrupt queues; on: on its poll queue and none on its interrupt queues, the task reaping them; the backing
  controller's count equal to fio's within 1 % both times;
- at least 200 switches of pqt_enable under fio randrw --verify=crc32c: no verify error, no failed switch, no
  polled bio in flight after any switch-off returned, no NVMe timeout, abort, reset or reconnect in dmesg, every
  polled bio retired;
- the agent from the build tree (nvmet_agent_checks.py): AUTO gives the target's controller the lever
  nvmet_poll_task, which report names with its risk; the backing disk's completions the task reaps counted on
  its poll queue and the poll path; >= 200 switches by the agent's engine under fio randrw --verify=crc32c, with
  no verify or lever error and no NVMe timeout, abort, reset or reconnect; SIGTERM and kill -9 + restart put
  pqt_enable back as found; the module unloads at the end;
- with --compare, the seed's comparison (nvmet_poll_compare.py) as RESULTS/nvmet-poll-compare.json.
Writes RESULTS/summary.json (RESULTS: BUILD/vm-results/<test name>) with an "nvmet_poll" key.

The agent's arm of the comparison is a hook: --agent-arm EXE (a path the guest sees: the host root is shared)
is run in the guest as `EXE on` before and `EXE off` after each run of a third arm, "agent", with the agent
running through the comparison; tests/vm/guest/nvmet_agent_arm.sh sets the target controller's policy to
adaptive and off (bench/run-all gives it).

  tests/vm/nvmet_poll_test.py [--build-dir build] [--kernel 6.1|6.12|7.3] [--compare] [--agent-arm EXE]
                              [--pqt-cpu N] [--test-name vm_nvmet_poll_6_1]
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fabrics_facts as ff  # noqa: E402
import nvme_facts  # noqa: E402
import nvmet_agent_checks  # noqa: E402
import nvmet_poll_compare  # noqa: E402
from nvme_e2e_test import GUEST_TOOLS, Checks, _within  # noqa: E402
from vmkernel import FABRICS_MODULES, VmSetupError  # noqa: E402
from vmrun import (GUEST_PATH, SOURCE_DIR, VM_DIR, Clock, VmOptions, VmRunError, raise_on_sigterm,  # noqa: E402
                   require_tools, run_vm)

sys.path.insert(0, str(SOURCE_DIR / "kmod"))
import build_module  # noqa: E402

# The fabrics bed's kernel arguments (fabrics_test.py says why: 6.1's nvmet_tcp and hardened usercopy, a soft
# lockup ending the guest at once).
KERNEL_ARGS = "hardened_usercopy=off softlockup_panic=1 softlockup_all_cpu_backtrace=1 loglevel=5"
# Two vCPUs: the comparison keeps the target's work on one of them and fio on the other.
VCPUS = 2
MIN_SWITCHES = 200
# Kernel lines of a command the backing or the TCP host gave up on, or of a connection it lost.
TROUBLE = re.compile(r"nvme.*(timeout|timed out|abort|reset|reconnect|I/O error|error)", re.I)
# Lines of that shape that are not trouble: the kernel tainting itself for our unsigned module.
BENIGN = re.compile(r"module verification failed|out-of-tree module")


def _pqt(path):
    return nvmet_poll_compare.pqt_counters(path)


def _backing(hist, poll_qids):
    """(completions on the backing controller's poll queues, on its other I/O queues) from a ctrl_id,qid hist."""
    by_qid = {q: n for q, n in ff.hist_by(hist, "qid", {"ctrl_id": 0}).items() if isinstance(q, int) and q > 0}
    return sum(n for q, n in by_qid.items() if q in poll_qids), sum(n for q, n in by_qid.items()
                                                                    if q not in poll_qids), by_qid


def _trouble(path):
    return [line.strip() for line in Path(path).read_text(errors="replace").splitlines()
            if TROUBLE.search(line) and not BENIGN.search(line)]


def _load(checks, results, summary):
    d = results / "load"
    params = (d / "params.txt").read_text()
    btf = (d / "btf.txt").read_text().split()
    kallsyms = (d / "kallsyms.txt").read_text().split()
    ns_files = (d / "ns-files.txt").read_text().split()
    summary["load"] = {"params": params.split(), "state": (d / "pqt-state.txt").read_text().strip(),
                       "tainted": int((d / "tainted.txt").read_text()), "btf": "nvmet" in btf,
                       "backing_io_poll": (d / "backing-io-poll.txt").read_text().strip()}
    checks.check("our nvmet loaded: pqt parameters with their defaults, /sys/module/nvmet/pqt, no task yet",
                 all(p in params for p in ("pqt_affinity_core:-1", "pqt_idle_usecs:1000", "pqt_ring_size:1024"))
                 and summary["load"]["state"] == "none", f"{params.split()}; state {summary['load']['state']}")
    checks.check("namespace attributes pqt_enable and pqt_stats", {"pqt_enable", "pqt_stats"} <= set(ns_files),
                 ns_files)
    checks.check("module BTF of our nvmet, nvmet_pqt_poll_bio in kallsyms (fexit-able)",
                 summary["load"]["btf"] and "nvmet_pqt_poll_bio" in kallsyms, f"btf {summary['load']['btf']}, "
                 f"kallsyms {' '.join(kallsyms) or 'none'}")
    checks.check("the backing disk has a poll queue (io_poll 1)", summary["load"]["backing_io_poll"] == "1",
                 summary["load"]["backing_io_poll"])


def _refuse(checks, results, summary):
    r = results / "refuse"
    seen = {n: (r / f"{n}.txt").read_text().strip() for n in ("not-enabled", "file", "no-poll-queue")}
    device = (r / "no-poll-queue-device.txt").read_text().strip()
    dmesg = (r / "dmesg.txt").read_text()
    named = [line for line in dmesg.splitlines() if device in line and "has no poll queue" in line]
    summary["refuse"] = {**seen, "device": device, "host_disk_io_poll": (r / "host-disk-io-poll.txt").read_text()
                         .strip(), "dmesg": dmesg.splitlines()}
    checks.check("pqt_enable on a namespace not enabled: EINVAL", seen["not-enabled"] == "error: Invalid argument",
                 seen["not-enabled"])
    checks.check("pqt_enable on a file-backed namespace: EOPNOTSUPP, stays 0",
                 seen["file"] == "error: Operation not supported" and
                 (r / "file-after.txt").read_text().strip() == "0", seen["file"])
    checks.check(f"pqt_enable on a block device without poll queues ({device}): EOPNOTSUPP, named in dmesg",
                 seen["no-poll-queue"] == "error: Operation not supported" and named and
                 summary["refuse"]["host_disk_io_poll"] == "0", f"{seen['no-poll-queue']}; {named[:1]}")


def _route(checks, results, summary, poll_qids):
    summary["route"] = {}
    for name, polled in (("off", False), ("on", True)):
        d = results / "route" / name
        fio = ff.fio_io(d / "fio.json")
        status = int((d / "fio.status").read_text())
        on_poll, on_irq, by_qid = _backing(d / "hist-nvme.txt", poll_qids)
        ns, task = nvmet_poll_compare.pqt_delta(_pqt(d / "pqt.before"), _pqt(d / "pqt.after"))
        trouble = _trouble(d / "dmesg-during.txt")
        summary["route"][name] = {"fio_ios": fio["ios"], "fio_status": status, "backing_by_qid": by_qid,
                                  "pqt_ns": ns, "pqt_task": task, "enable": (d / "enable.txt").read_text().strip(),
                                  "trouble": trouble}
        label = f"polled submission {name}"
        checks.check(f"{label}: fio 4 KiB randread QD32 ran", status == 0 and fio["ios"] > 0 and not any(fio["errors"])
                     and summary["route"][name]["enable"] == "ok", f"{fio['ios']} I/Os, status {status}")
        checks.check(f"{label}: the backing controller's completions equal fio's within 1 %",
                     _within(on_poll + on_irq, fio["ios"]), f"backing {on_poll + on_irq} vs fio {fio['ios']}")
        if polled:
            checks.check(f"{label}: backing completions on its poll queue (qid {sorted(poll_qids)}), none on its "
                         "interrupt queues", on_poll > 0 and on_irq == 0, f"per qid {by_qid}")
            checks.check(f"{label}: every bio submitted polled and reaped by the task",
                         _within(ns.get("submitted", 0), fio["ios"]) and ns.get("reaped") == ns.get("retired") and
                         ns.get("unpolled") == 0 and ns.get("fallback") == 0,
                         f"namespace {ns}; task reaped {task.get('reaped')} in {task.get('polls')} polls")
        else:
            checks.check(f"{label}: backing completions on its interrupt queues only", on_poll == 0 and on_irq > 0
                         and ns.get("submitted") == 0, f"per qid {by_qid}; submitted polled {ns.get('submitted')}")
        checks.check(f"{label}: no NVMe timeout, abort, reset or error in dmesg", not trouble, trouble[:3] or "none")


def _toggle(checks, results, summary, poll_qids):
    d = results / "toggle"
    words = (d / "toggles.txt").read_text().split()
    toggles = dict(zip(words[::2], map(int, words[1::2])))
    fio = ff.fio_io(d / "fio.json")
    status = int((d / "fio.status").read_text())
    on_poll, on_irq, by_qid = _backing(d / "hist-nvme.txt", poll_qids)
    before, after = _pqt(d / "pqt.before"), _pqt(d / "pqt.after")
    ns, task = nvmet_poll_compare.pqt_delta(before, after)
    trouble = _trouble(d / "dmesg-during.txt")
    errors = (d / "toggle-errors.txt").read_text().splitlines()
    summary["toggle"] = {"toggles": toggles, "fio_ios": fio["ios"], "fio_status": status, "fio_errors": fio["errors"],
                         "backing_by_qid": by_qid, "pqt_ns": ns, "pqt_task": task, "pqt_after": after[0],
                         "trouble": trouble, "errors": errors[:10]}
    checks.check(f"switching: pqt_enable switched >= {MIN_SWITCHES} times under fio, no switch failed",
                 toggles.get("switches", 0) >= MIN_SWITCHES and toggles.get("failed") == 0, toggles)
    checks.check("switching: fio randrw --verify=crc32c without an error", status == 0 and not any(fio["errors"]),
                 f"fio exit status {status}, errors {fio['errors']}, {fio['ios']} I/Os (84: a block read back wrong)")
    checks.check("switching: no polled bio in flight once a switch-off returned (the drain)",
                 toggles.get("undrained") == 0, errors[:3] or "none")
    checks.check("switching: both paths served the run (backing completions on the poll and the interrupt queues)",
                 on_poll > 0 and on_irq > 0 and ns.get("submitted", 0) > 0, f"per qid {by_qid}; namespace {ns}")
    checks.check("switching: every polled bio retired, none in flight at the end",
                 after[0].get("inflight") == 0 and after[0].get("submitted") == after[0].get("retired"), after[0])
    checks.check("switching: no NVMe timeout, abort, reset or reconnect in dmesg", not trouble, trouble[:3] or "none")


def _final(checks, results, summary):
    unloaded = (results / "unload.txt").exists()
    trouble = _trouble(results / "dmesg.txt")
    summary["final"] = {"unloaded": unloaded, "pqt": _pqt(results / "pqt-final.txt"), "trouble": trouble}
    checks.check("the module unloads (the task stops) after the target is torn down", unloaded, unloaded)
    checks.check("the whole run's dmesg has no NVMe timeout, abort, reset or reconnect", not trouble,
                 trouble[:3] or "none")


def _compare(checks, results, summary):
    result = nvmet_poll_compare.analyse(results / "compare", results / "nvmet-poll-compare.json")
    print(nvmet_poll_compare.table(result), flush=True)
    bad = [f"{w}/{arm}/r{rep}" for w, v in result["workloads"].items() for arm, reps in v["runs"].items()
           for rep, run in reps.items() if run["fio_status"] or run["error"] or not run["ios"]]
    polled = {w: [(run["bios_polled"], run["bios_unpolled"], run["fallback_commands"])
                  for run in v["runs"].get("polled", {}).values()] for w, v in result["workloads"].items()}
    summary["compare"] = {w: v["paired_ratios"] for w, v in result["workloads"].items()}
    checks.check("compare: every run completed without an fio error", not bad, bad or "all")
    checks.check("compare: the polled arm submitted its bios polled (none fell back or off the poll queue)",
                 all(p > 0 and u == 0 and f == 0 for runs in polled.values() for p, u, f in runs),
                 {w: runs for w, runs in polled.items()})


def assert_results(results, compare):
    checks = Checks()
    summary = {}
    split = nvme_facts.last_queue_split(results / "load" / "dmesg-queues.txt")
    default, read, poll = split
    poll_qids = set(range(default + read + 1, default + read + poll + 1))
    summary["backing_queues"] = {"default": default, "read": read, "poll": poll, "poll_qids": sorted(poll_qids)}
    _load(checks, results, summary)
    _refuse(checks, results, summary)
    _route(checks, results, summary, poll_qids)
    _toggle(checks, results, summary, poll_qids)
    nvmet_agent_checks.check_agent(checks, results, summary, poll_qids, _trouble)
    _final(checks, results, summary)
    if compare:
        _compare(checks, results, summary)
    return checks, summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=SOURCE_DIR / "build")
    parser.add_argument("--kernel", choices=("6.1", "6.12", "7.3"), default="6.1")
    parser.add_argument("--compare", action="store_true", help="also run the seed's comparison")
    parser.add_argument("--agent-arm", help="executable the guest runs as `EXE on|off` around an agent arm's runs")
    parser.add_argument("--pqt-cpu", type=int, help="vCPU of the polling-queue task in the comparison "
                        "(default: the target's, 0)")
    parser.add_argument("--test-name")
    parser.add_argument("--timeout", type=float, default=1200.0)
    args = parser.parse_args(argv)
    build_dir = args.build_dir.resolve()
    name = args.test_name or "vm_nvmet_poll_" + args.kernel.replace(".", "_")
    clock = Clock()
    raise_on_sigterm()
    results = build_dir / "vm-results" / name
    try:
        require_tools(GUEST_TOOLS, path=GUEST_PATH)
        module = build_module.build(args.kernel, build_dir, "nvmet", log=clock.log)
        env = {"NVA_EXTRA_MODULES": " ".join(FABRICS_MODULES), "NVA_NVMET_DIR": str(module.parent),
               "NVA_NVMET_COMPARE": "1" if args.compare else "0"}
        if args.agent_arm:
            env["NVA_NVMET_AGENT_ARM"] = args.agent_arm
        if args.pqt_cpu is not None:
            env["NVA_NVMET_PQT_CPU"] = str(args.pqt_cpu)
        vm = run_vm(VmOptions(guest_script=VM_DIR / "guest" / "nvmet_poll.sh", build_dir=build_dir,
                              results_dir=results, kernel=args.kernel, env=env, timeout=args.timeout,
                              kernel_args=KERNEL_ARGS, smp=VCPUS), clock)
    except (VmSetupError, VmRunError, build_module.KmodBuildError, subprocess.CalledProcessError,
            KeyboardInterrupt) as e:
        print(f"{name}: FAILED: {e}", file=sys.stderr)
        return 1
    summary = {"kernel": args.kernel, "module": str(module), "kernel_args": KERNEL_ARGS,
               "steps": nvme_facts.steps(results / "steps.tsv")}
    clock.log("guest steps: " + ", ".join(f"{n} {s:.1f}s{'' if st == 'ok' else ' FAILED ' + st}"
                                           for n, s, st in summary["steps"]))
    if vm.exit_status != 0:
        (results / "summary.json").write_text(json.dumps({"nvmet_poll": summary, "checks_failed": 1}, indent=1) + "\n")
        print(f"{name}: FAILED: the guest script exited with status {vm.exit_status}; see {vm.console_log}",
              file=sys.stderr)
        return 1
    try:
        checks, found = assert_results(results, args.compare)
    except (OSError, KeyError, ValueError, IndexError, TypeError) as e:
        print(f"{name}: FAILED: results incomplete or malformed: {e!r}", file=sys.stderr)
        return 1
    summary.update(found)
    summary.update({"checks": checks.rows, "vm_seconds": round(vm.seconds, 1), "total_seconds": round(clock.elapsed(), 1)})
    failed = checks.failed()
    (results / "summary.json").write_text(json.dumps({"nvmet_poll": summary, "checks_failed": len(failed)}, indent=1,
                                                     default=str) + "\n")
    clock.log(f"{len(checks.rows) - len(failed)}/{len(checks.rows)} checks passed; summary in {results / 'summary.json'}")
    if failed:
        print(f"{name}: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

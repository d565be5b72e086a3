#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Our nvme-pci module (kmod/nvme-pci) in a Debian kernel's VM guest, against QEMU's emulated NVMe.

Builds the module for the kernel (kmod/build_module.py: Debian's linux-source of the image's exact version, our
patch series, cached), boots the guest with tests/vm/guest/kmod.sh and asserts here on what it recorded:
- the module loads in place of the stock nvme and makes its sysfs files; module BTF is there;
- the driver's own policy (adaptive_poll 1, numbers for the guest's pace from NVA_KMOD_PARAMS): the queues poll
  (over a polling stretch their vectors fire for under 10 % of their completions), the tracefs hist's count
  equals fio's within 1 %, the driver's counters show its switches;
- the agent's per-queue lever (AUTO picks it): at least 1,000 switches under fio randrw --verify=crc32c with no
  verify error, no NVMe timeout or abort in dmesg, the agent's and the hist's counts equal fio's within 1 %; the
  report names the lever and its risk;
- SIGTERM, and kill -9 then a restart, put the queues back to the mode they had before the agent.
With --only-compare (bench/kmod_compare.py, `make bench`) it runs the seed's four-arm comparison instead
(kmod_compare.py): RESULTS/kmod-compare.json, its goals printed, not asserted (TCG timing is not hardware's).
Writes RESULTS/summary.json (RESULTS: BUILD/vm-results/<test name>) with a "kmod" key.

  tests/vm/kmod_test.py [--build-dir build] [--kernel 6.1|6.12|7.3] [--only-compare [--json-out F]]
                        [--test-name vm_kmod_6_1]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kmod_compare  # noqa: E402
import kmod_facts  # noqa: E402
import nvme_facts  # noqa: E402
from nvme_e2e_test import AGENT_BINARIES, GUEST_TOOLS, Checks, _within  # noqa: E402
from vmpackages import VmSetupError  # noqa: E402
from vmrun import SOURCE_DIR, VM_DIR, Clock, VmOptions, VmRunError, raise_on_sigterm, require_tools, run_vm  # noqa: E402

sys.path.insert(0, str(SOURCE_DIR / "kmod"))
import build_module  # noqa: E402

# The driver's policy for TCG's pace (completions 100-500 us apart per queue, timer hiccups of milliseconds):
# windows long enough to span samples, a threshold and slack the guest can meet. The defaults stay the cover
# letter's (kmod/README.md); only this test sets these. The slack is a second: a loaded host deschedules the
# VM's vCPU for tens of milliseconds at a time (CI runs another test beside this one), and with 50 ms the
# driver's tries failed behind pace until it backed off for the whole run (a run at load 10 here).
PACE_SLACK_NS = 1_000_000_000
DRIVER_PARAMS = ("adaptive_poll_window=2048 adaptive_poll_threshold_ns=5000000 "
                 f"adaptive_poll_slack_ns={PACE_SLACK_NS} adaptive_poll_interval_ns=50000 adaptive_poll_backoff_windows=4")
# The agent's policy under fio --verify: the patch's rules with short windows and single-window runs, so that it
# switches every few dozen completions.
AGENT_POLICY = ('"mode": "CONTROLLER_MODE_ADAPTIVE", "profile": "patch", "windowCompletions": 16, '
                '"pollThresholdNs": "5000000", "paceSlackNs": "50000000", "maxPollWindows": 1, "backoffWindows": 1')
# The comparison's agent: the same numbers as the driver's, switched on per arm, under the profile of
# --agent-profile: default (the agent's own rules, as deployed) or patch (the driver's rules exactly).
def compare_agent_policy(profile):
    return (f'"mode": "CONTROLLER_MODE_OFF", "profile": "{profile}", "windowCompletions": 2048, '
            f'"pollThresholdNs": "5000000", "paceSlackNs": "{PACE_SLACK_NS}", "backoffWindows": 4')
MIN_AGENT_SWITCHES = 1000
STRETCH_IRQ_SHARE = 0.10  # a polling stretch: the vector fires for under this share of the completions
MIN_STRETCH_COMPLETIONS = 200
OUT_OF_TREE_TAINT = 1 << 12


def _load(checks, results, summary):
    d = results / "load"
    queues = kmod_facts.queues(d / "queues.txt")
    params = (d / "params.txt").read_text()
    tainted = int((d / "tainted.txt").read_text())
    summary["load"] = {"queues": {q: f.state for q, f in queues.items()}, "tainted": tainted,
                       "btf": "nvme" in (d / "btf.txt").read_text().split()}
    checks.check("our nvme.ko loaded: adaptive_poll parameters and per-queue files",
                 "adaptive_poll_window" in params and queues.get(1) and queues[1].state == "interrupt" and
                 queues.get(2) and queues[2].state == "interrupt",
                 f"queue states {summary['load']['queues']}; tainted {tainted} (out-of-tree: "
                 f"{bool(tainted & OUT_OF_TREE_TAINT)})")
    checks.check("module BTF of our nvme.ko in /sys/kernel/btf", summary["load"]["btf"], (d / "btf.txt").read_text().split())


def _driver(checks, results, summary):
    d = results / "driver"
    fio_ios, errors = kmod_facts.fio_totals(results / "io" / "kmod-driver" / "fio.json")
    hist = sum(n for q, n in nvme_facts.hist_by_qid(results / "io" / "kmod-driver" / "hist-qid.txt").items() if q > 0)
    stretches = kmod_facts.polling_stretches(kmod_facts.samples(d / "samples.txt"))
    queues = kmod_facts.queues(d / "queues.txt")
    good = {q: [s for s in runs if s[1] >= MIN_STRETCH_COMPLETIONS and s[2] < STRETCH_IRQ_SHARE * s[1]]
            for q, runs in stretches.items()}
    summary["driver"] = {"fio_ios": fio_ios, "hist": hist, "stretches": stretches,
                         "stats": {q: f.stats for q, f in queues.items() if f.state != "offline"},
                         "policy": {q: f.policy for q, f in queues.items() if f.state != "offline"}}
    checks.check("driver policy: fio ran", fio_ios > 0 and not any(errors), f"{fio_ios} I/Os, errors {errors}")
    checks.check("driver policy: hist count equals fio's within 1 %", _within(hist, fio_ios), f"hist {hist} vs fio {fio_ios}")
    checks.check("driver policy: its counters show tries and switches",
                 all(queues[q].stats["tries"] > 0 and queues[q].switches > 0 for q in (1, 2)),
                 {q: {k: queues[q].stats[k] for k in ("tries", "switches_to_poll", "switches_to_irq", "fails_pace",
                                                      "fails_slower", "fails_stalled", "backoffs")} for q in (1, 2)})
    checks.check(f"driver policy: each queue polled a stretch of >= {MIN_STRETCH_COMPLETIONS} completions with its "
                 f"vector firing for < {STRETCH_IRQ_SHARE:.0%} of them", all(good.get(q) for q in (1, 2)),
                 f"stretches (seconds, completions, interrupts) per qid: {stretches}")


def _agent(checks, results, summary):
    a = results / "agent"
    before, after = kmod_facts.queues(a / "queues-before.txt"), kmod_facts.queues(a / "queues-after.txt")
    switches = kmod_facts.delta(before, after, "switches")
    runs = sorted((results / "io").glob("kmod-verify-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    fio_ios, errors, fio_status, hist, timeouts, aborts = 0, [], 0, 0, "", []
    for run in runs:
        ios, errs = kmod_facts.fio_totals(run / "fio.json")
        fio_ios += ios
        errors += errs
        fio_status = max(fio_status, int((run / "fio.status").read_text()))
        hist += sum(n for q, n in nvme_facts.hist_by_qid(run / "hist-qid.txt").items() if q > 0)
        timeouts = timeouts or nvme_facts.describe_timeouts(nvme_facts.nvme_timeouts(run / "dmesg-during.txt"))
        aborts += [line for line in (run / "dmesg-during.txt").read_text().splitlines() if "abort" in line.lower()]
    counted0 = nvme_facts.agent_completions(a / "agent-queues-before.json")
    counted1 = nvme_facts.agent_completions(a / "agent-queues-after.json")
    counted = sum(counted1[q] - counted0.get(q, 0) for q in counted1 if q > 0)
    report = json.loads((a / "report.json").read_text())
    levers = {c.get("controller"): (c.get("lever"), c.get("leverRisk")) for c in report.get("controllers", [])}
    events = nvme_facts.json_lines(a / "watch.json")
    summary["agent"] = {"fio_runs": len(runs), "switches": switches, "fio_ios": fio_ios, "fio_errors": errors, "fio_status": fio_status,
                        "hist": hist, "agent_counted": counted, "lever": levers.get("nvme0"),
                        "events": len(events), "modes_before": kmod_facts.modes(a / "modes-before.txt")}
    checks.check(f"agent: its lever switched the queues >= {MIN_AGENT_SWITCHES} times (the driver's counters)",
                 switches >= MIN_AGENT_SWITCHES, f"{switches} switches in {fio_ios} I/Os")
    checks.check("agent: fio randrw --verify=crc32c without an error", fio_status == 0 and not any(errors),
                 f"fio exit status {fio_status}, job errors {errors} (84: a block read back wrong)")
    checks.check("agent: no NVMe timeout or abort in dmesg", not timeouts and not aborts,
                 timeouts or (aborts[:3] if aborts else "none"))
    checks.check("agent: hist count equals fio's within 1 %", _within(hist, fio_ios), f"hist {hist} vs fio {fio_ios}")
    checks.check("agent: its counted completions equal fio's within 1 %", _within(counted, fio_ios),
                 f"agent {counted} vs fio {fio_ios}")
    checks.check("report names the per-queue lever and its risk",
                 levers.get("nvme0") == ("adaptive_poll_queue", "changes_nothing_else"), f"nvme0: {levers.get('nvme0')}")


def _restore(checks, results, summary):
    a, k, r = results / "agent", results / "agent-kill", results / "agent-restart"
    seen = {name: kmod_facts.modes(path) for name, path in (
        ("before", a / "modes-before.txt"), ("held", a / "modes-held.txt"), ("after_term", a / "modes-after-term.txt"),
        ("after_kill", k / "modes-after-kill.txt"), ("after_restart", r / "modes-after-restart.txt"))}
    summary["restore"] = seen
    before = seen["before"]
    checks.check("restore: the queues were in auto before the agent, both eligible",
                 sorted(before) == [1, 2] and set(before.values()) == {"auto"}, before)
    checks.check("restore: SIGTERM puts back the modes found before the agent",
                 set(seen["held"].values()) == {"poll"} and seen["after_term"] == before,
                 f"held {seen['held']}, after SIGTERM {seen['after_term']}")
    checks.check("restore: kill -9 leaves them; the restart restores them from its journal",
                 set(seen["after_kill"].values()) == {"poll"} and seen["after_restart"] == before,
                 f"after kill -9 {seen['after_kill']}, after the restart {seen['after_restart']}")


def _compare(checks, results, summary, json_out, agent_policy):
    """The comparison's runs all complete without an error; its goals are figures, printed and recorded."""
    result = kmod_compare.analyse(results / "compare", results / "kmod-compare.json", agent_policy)
    if json_out:
        Path(json_out).write_text((results / "kmod-compare.json").read_text())
    print(kmod_compare.table(result), flush=True)
    for goal in result["goals"]:
        print(f"  GOAL  {'met' if goal['met'] else 'MISSED'}  {goal['point']}: {goal['goal']}: {goal['value']}")
    runs = [r for point in result["points"].values() for arm in point["runs"].values() for r in arm.values()]
    expected = result["repetitions"] * len(result["points"]) * len(kmod_compare.ARMS)
    checks.check("compare: every run of every arm completed without an error",
                 len(runs) == expected and all(r["iops"] > 0 and not any(r["errors"]) for r in runs),
                 f"{len(runs)} runs of {expected}")
    summary["compare"] = {"goals_met": result["goals_met"], "goals_total": result["goals_total"]}


def assert_results(results, only_compare, json_out=None, agent_policy=None):
    checks = Checks()
    summary = {}
    _load(checks, results, summary)
    if only_compare:
        _compare(checks, results, summary, json_out, agent_policy)
        return checks, summary
    _driver(checks, results, summary)
    _agent(checks, results, summary)
    _restore(checks, results, summary)
    return checks, summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=SOURCE_DIR / "build")
    parser.add_argument("--kernel", choices=("6.1", "6.12", "7.3"), default="6.1")
    parser.add_argument("--only-compare", action="store_true",
                        help="run the four-arm comparison instead of the checks (a benchmark: make bench)")
    parser.add_argument("--json-out", type=Path, help="with --only-compare: a copy of kmod-compare.json here")
    parser.add_argument("--repeats", type=int, default=3, help="with --only-compare: repetitions (arms rotated)")
    parser.add_argument("--seconds", type=float, default=2.0, help="with --only-compare: measured seconds per run")
    parser.add_argument("--agent-profile", choices=("default", "patch"), default="default",
                        help="with --only-compare: the agent arm's profile (default: the agent's own rules)")
    parser.add_argument("--test-name")
    parser.add_argument("--timeout", type=float, default=1200.0)
    args = parser.parse_args(argv)
    agent_policy = compare_agent_policy(args.agent_profile)
    build_dir = args.build_dir.resolve()
    name = args.test_name or "vm_kmod_" + args.kernel.replace(".", "_")
    clock = Clock()
    raise_on_sigterm()
    results = build_dir / "vm-results" / name
    try:
        require_tools(GUEST_TOOLS)
        missing = [str(build_dir / b) for b in AGENT_BINARIES if not (build_dir / b).is_file()]
        if missing:
            raise VmSetupError(f"not built: {', '.join(missing)}; build the project first (cmake --build build)")
        module = build_module.build(args.kernel, build_dir, log=clock.log)
        env = {"NVA_KMOD": str(module), "NVA_KMOD_PARAMS": DRIVER_PARAMS, "NVA_KMOD_AGENT_POLICY": AGENT_POLICY,
               "NVA_KMOD_ONLY_COMPARE": "1" if args.only_compare else "0",
               "NVA_KMOD_COMPARE_AGENT_POLICY": agent_policy,
               "NVA_KMOD_COMPARE_REPEATS": str(args.repeats), "NVA_KMOD_COMPARE_SECONDS": f"{args.seconds:g}"}
        vm = run_vm(VmOptions(guest_script=VM_DIR / "guest" / "kmod.sh", build_dir=build_dir, results_dir=results,
                              kernel=args.kernel, env=env, timeout=args.timeout), clock)
    except (VmSetupError, VmRunError, build_module.KmodBuildError, subprocess.CalledProcessError,
            KeyboardInterrupt) as e:
        print(f"{name}: FAILED: {e}", file=sys.stderr)
        return 1
    summary = {"kernel": args.kernel, "module": str(module), "steps": nvme_facts.steps(results / "steps.tsv")}
    if vm.exit_status != 0:
        (results / "summary.json").write_text(json.dumps({"kmod": summary, "checks_failed": 1}, indent=1) + "\n")
        print(f"{name}: FAILED: the guest script exited with status {vm.exit_status}; see {vm.console_log}",
              file=sys.stderr)
        return 1
    try:
        checks, found = assert_results(results, args.only_compare, args.json_out, agent_policy)
    except (OSError, KeyError, ValueError, IndexError) as e:
        print(f"{name}: FAILED: results incomplete or malformed: {e!r}", file=sys.stderr)
        return 1
    summary.update(found)
    summary.update({"checks": checks.rows, "vm_seconds": round(vm.seconds, 1), "total_seconds": round(clock.elapsed(), 1)})
    failed = checks.failed()
    (results / "summary.json").write_text(json.dumps({"kmod": summary, "checks_failed": len(failed)}, indent=1,
                                                     default=str) + "\n")
    clock.log(f"{len(checks.rows) - len(failed)}/{len(checks.rows)} checks passed; summary in {results / 'summary.json'}")
    if failed:
        print(f"{name}: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

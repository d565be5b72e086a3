# SPDX-License-Identifier: Apache-2.0
"""Host-side checks of the agent's steps of the VM test (what tests/vm/guest/nvme_e2e.sh recorded under agent/).

Run A: nvme-adaptd with the poll_queues + reset lever for nvme0 (levers config). Discovery and hooks through
nvme-adaptctl, the agent's per-queue completion counts against the tracefs hist, then the controller switched
poll / interrupt / poll / interrupt through `policy set`, and the agent killed (SIGKILL) with its journal left.
Run B: the same state dir and the kernel's default lever: the journal is restored at start, and a poll override
of nvme0:q1 meets QEMU's Feature Not Changeable, which the agent must report and survive.
"""

import json
import re

import nvme_facts as facts

TOLERANCE = 0.01
NOT_CHANGEABLE = "0x410e"
NVME_HOOKS = ("tp_btf/nvme_sq", "raw_tp/nvme_sq", "tracepoint/nvme/nvme_sq")
ATTRIBUTION_HOOKS = ("fentry/nvme_irq", "fexit/nvme_irq", "fentry/nvme_poll", "fexit/nvme_poll")
PER_BATCH_HOOKS = ("fentry/nvme_irq", "fexit/nvme_irq", "fentry/nvme_poll", "fexit/nvme_poll")


def _within(a, b):
    return abs(a - b) <= TOLERANCE * max(a, b, 1)


def _queue_summary(queues):
    return {qid: {"eligible": q.get("eligible", False), "reason": q.get("ineligibleReason", ""),
                  "mode": q.get("mode", "").removeprefix("REAP_MODE_").lower(), "irq": q.get("irq"),
                  "lever": q.get("lever", "")} for qid, q in sorted(queues.items())}


def _kernel_layout(snapshot_dir):
    """(irq qids, poll qids, default/read/poll split) of nvme0 from a snapshot_queues dir."""
    hw = facts.hardware_queues(snapshot_dir / "mq-cpu-list.txt")
    vectors = facts.nvme_vectors(snapshot_dir / "interrupts.txt")
    return (sorted(q for q in hw if q in vectors), sorted(q for q in hw if q not in vectors),
            facts.last_queue_split(snapshot_dir / "dmesg-queues.txt"), vectors)


def _expected_hooks(attach):
    """The nvme hook the collectors' probe should choose, from what the kernel-only attach probe could attach.

    docs/collectors.md: with fentry on nvme_irq and nvme_poll, tp_btf/nvme_sq if it loads, else its raw_tp or
    classic tracepoint twin; without fentry the block layer observes nvme queues. fentry on nvme_irq comes with
    the nvme module's BTF, which has struct nvme_queue: the per-batch programs, and no nvme_sq program."""
    attached = {p["section"] for p in attach["programs"] if p.get("attached")}
    if {"fentry/nvme_irq", "fentry/nvme_poll"} <= attached:
        return PER_BATCH_HOOKS
    return ("tp_btf/block_rq_complete", "raw_tp/block_rq_complete")


def _discovery(checks, a, summary):
    status = json.loads((a / "status.json").read_text())
    queues = facts.agent_queues(a / "queues.json")
    irq_qids, poll_qids, split, vectors = _kernel_layout(a)
    summary["discovery"] = {"queues": _queue_summary(queues), "kernel_split": split,
                            "start_seconds": float((a / "start-seconds").read_text())}
    checks.check("agent: nvme0 and its queues discovered (queues --json)",
                 sorted(queues) == sorted([0, *irq_qids, *poll_qids]) and status.get("queues") == len(queues),
                 f"agent qids {sorted(queues)}, kernel: admin + irq {irq_qids} + poll {poll_qids}; "
                 f"status says {status.get('queues')} queues")
    irq_ok = all(queues.get(q, {}).get("eligible") and queues[q].get("irq") == vectors[q][0] and
                 queues[q].get("mode") == "REAP_MODE_INTERRUPT" and queues[q].get("lever") == "poll_queues_reset"
                 for q in irq_qids)
    checks.check(f"agent: interrupt queues {irq_qids} eligible, with their MSI-X vectors and the configured lever",
                 irq_qids and irq_ok, str({q: _queue_summary(queues).get(q) for q in irq_qids}) +
                 f"; kernel vectors { {q: vectors[q][0] for q in irq_qids} }")
    poll_ok = all(not queues.get(q, {}).get("eligible", True) and
                  queues[q].get("ineligibleReason") == "poll queue (no vector)" and queues[q].get("irq") == -1
                  for q in poll_qids)
    checks.check(f"agent: poll queue(s) {poll_qids} not eligible: poll queue (no vector)", poll_qids and poll_ok,
                 str({q: _queue_summary(queues).get(q) for q in poll_qids}))
    admin = queues.get(0, {})
    checks.check("agent: admin queue not eligible: admin queue",
                 not admin.get("eligible", True) and admin.get("ineligibleReason") == "admin queue",
                 str(_queue_summary(queues).get(0)))
    return status, irq_qids, poll_qids


def _report(checks, a, status, irq_qids, poll_qids, summary):
    """`nvme-adaptctl report` against the real driver: nvme0's lever and risk class, and the eligible queues and
    why the others are not, as the guest has them."""
    report = json.loads((a / "report.json").read_text())
    ours = [c for c in report.get("controllers", []) if c.get("controller") == "nvme0"]
    nvme0 = ours[0] if ours else {}
    summary["report"] = {"lever": nvme0.get("lever"), "leverRisk": nvme0.get("leverRisk"),
                         "eligible": nvme0.get("eligibleQueues"), "ineligible": nvme0.get("ineligibleQueues"),
                         "verdict": nvme0.get("verdict")}
    checks.check("report: nvme0 gets the configured lever, which resets the controller",
                 nvme0.get("lever") == "poll_queues_reset" and nvme0.get("leverRisk") == "resets_controller",
                 str(summary["report"]))
    wanted = sorted(["q0: admin queue"] + [f"q{q}: poll queue (no vector)" for q in poll_qids])
    checks.check(f"report: eligible queues {irq_qids}, the admin and poll queues not, with why",
                 sorted(nvme0.get("eligibleQueues", [])) == irq_qids and
                 sorted(nvme0.get("ineligibleQueues", [])) == wanted, str(summary["report"]))
    checks.check("report: the collector and kernel facts are the agent's status, with a verdict line",
                 report.get("collector") == status.get("collector") and report.get("kernelRelease") and
                 bool(nvme0.get("verdict")) and nvme0.get("verdict", "") in (a / "report.txt").read_text(),
                 f"collector {report.get('collector')} vs {status.get('collector')}, kernel "
                 f"{report.get('kernelRelease')} BTF {report.get('kernelBtf')}")


def _hooks(checks, status, results, summary):
    attach = json.loads((results / "bpf" / "attach.json").read_text())
    hooks = status.get("hooks", [])
    expected = _expected_hooks(attach)
    chosen = [h for h in hooks if h in NVME_HOOKS or "block_rq_complete" in h]
    summary["hooks"] = {"collector": status.get("collector"), "chosen": hooks, "expected_nvme_hook": expected}
    needs_attribution = expected[0].endswith("nvme_sq")
    if expected == PER_BATCH_HOOKS:  # the block program may be there for other disks; no nvme_sq
        ok = (status.get("collector") == "bpf" and not status.get("observeOnly") and
              all(h in hooks for h in PER_BATCH_HOOKS) and not any(h in NVME_HOOKS for h in hooks))
    else:
        ok = (status.get("collector") == "bpf" and not status.get("observeOnly") and len(chosen) == 1 and
              chosen[0] in expected and (not needs_attribution or all(h in hooks for h in ATTRIBUTION_HOOKS)))
    checks.check("agent: kernel collectors chose their hooks by probing", ok,
                 f"collector {status.get('collector')}, nvme hook {chosen} (the attach probe allows {list(expected)}), "
                 f"all hooks {hooks}")


def _counts(checks, results, a, run, before, after, expect_on, summary):
    """The agent's per-queue completion deltas around an io_run against the tracefs hist of the same run."""
    hist = {q: n for q, n in facts.hist_by_qid(results / "io" / run / "hist-qid.txt").items() if q > 0}
    b = facts.agent_completions(a / before)
    c = facts.agent_completions(a / after)
    delta = {q: c.get(q, 0) - b.get(q, 0) for q in c if q > 0}
    qids = sorted(q for q in set(hist) | set(delta) if hist.get(q, 0) or delta.get(q, 0))
    summary["agent_counts"][run] = {"agent_delta_by_qid": delta, "hist_by_qid": hist}
    checks.check(f"{run}: agent's completions per queue match the tracefs hist within 1 %",
                 qids and all(_within(delta.get(q, 0), hist.get(q, 0)) for q in qids),
                 ", ".join(f"q{q}: agent {delta.get(q, 0)} hist {hist.get(q, 0)}" for q in qids)
                 + facts.timeout_note(results / "io" / run))
    on = sum(delta.get(q, 0) for q in expect_on)
    total = sum(delta.values())
    checks.check(f"{run}: agent counts them on qids {sorted(expect_on)}", total > 0 and _within(on, total),
                 f"{on} of {total}")


def _switch(checks, a, name, mode, poll_qids_wanted, summary):
    d = a / name
    queues = facts.agent_queues(d / "queues.json")
    irq_qids, poll_qids, split, _ = _kernel_layout(d)
    resets = len(re.findall("default/read/poll queues", (d / "dmesg-queues.txt").read_text()))
    resets_before = int((d / "splits-before").read_text())
    start, called, kernel_done, agent_done = map(float, (d / "uptimes").read_text().split())
    policy = json.loads((d / "set-policy.json").read_text())["policy"]
    set_mode = facts.policy_modes(policy, queues).get("nvme0")
    summary["switches"][name] = {"kernel_split": split, "agent_queues": _queue_summary(queues),
                                 "cli_seconds": round(called - start, 2),
                                 "guest_saw_it_after_seconds": round(agent_done - start, 2)}
    eligible_modes = {q: v["mode"] for q, v in _queue_summary(queues).items() if v["eligible"]}
    ok = (set_mode == f"CONTROLLER_MODE_{mode.upper()}" and resets == resets_before + 1 and
          poll_qids == poll_qids_wanted and split is not None and split[2] == len(poll_qids_wanted) and
          sorted(queues) == sorted([0, *irq_qids, *poll_qids]) and irq_qids and
          all(m == mode for m in eligible_modes.values()) and sorted(eligible_modes) == irq_qids and
          all(queues[q].get("ineligibleReason") == "poll queue (no vector)" for q in poll_qids))
    checks.check(f"lever {name}: policy set --mode {mode} reset nvme0 with poll queues {poll_qids_wanted}, "
                 "and the agent rediscovered it", ok,
                 f"kernel: split {split}, irq {irq_qids}, poll {poll_qids}, resets {resets_before} -> {resets}; "
                 f"agent: qids {sorted(queues)}, eligible in {eligible_modes}; CLI call {called - start:.1f} s, "
                 f"the guest's polling saw it {agent_done - start:.1f} s after the call")


def _events(checks, a, summary):
    events = facts.json_lines(a / "watch.json")
    q3 = [(e["kind"].removeprefix("EVENT_KIND_").lower()) for e in events
          if e.get("queue", {}).get("queue") == 3 and e["kind"] in ("EVENT_KIND_QUEUE_REMOVED", "EVENT_KIND_QUEUE_ADDED")]
    q1 = [e for e in events if e["kind"] == "EVENT_KIND_DECISION" and e.get("queue", {}).get("queue") == 1 and
          e["decision"].get("reason") == "mode_changed" and e["decision"].get("applied")]
    switches = [e["decision"]["to"].removeprefix("REAP_MODE_").lower() for e in q1]
    # A decision is stamped when made, its event once the lever is done: the lever's write and reset.
    lever_seconds = [round((int(e["timeUnixNs"]) - int(e["decision"]["timeUnixNs"])) / 1e9, 2) for e in q1]
    # A reset that renumbers a vector makes the agent drop and re-add the queue, which then switches again to
    # the mode it already had: count a mode once.
    switches = [m for i, m in enumerate(switches) if i == 0 or switches[i - 1] != m]
    # From the policy change (published once the lever's reset is done) to the agent's rediscovery of q3.
    latencies, policy_at = [], None
    for e in events:
        if e["kind"] == "EVENT_KIND_POLICY":
            policy_at = int(e["timeUnixNs"])
        elif e["kind"] in ("EVENT_KIND_QUEUE_REMOVED", "EVENT_KIND_QUEUE_ADDED") and policy_at is not None:
            latencies.append(round((int(e["timeUnixNs"]) - policy_at) / 1e9, 2))
    summary["events_a"] = {"q3": q3, "q1_switches": switches, "q1_lever_seconds": lever_seconds,
                           "rediscovery_after_policy_seconds": latencies}
    checks.check("agent events (watch --json): q3 removed and added back, q1 switched by the policy",
                 q3 == ["queue_removed", "queue_added", "queue_removed"] and
                 switches == ["poll", "interrupt", "poll", "interrupt"],
                 f"q3 events {q3}, {latencies} s after their policy events; q1 switches applied {switches}, "
                 f"the lever (write + reset) took {lever_seconds} s")


def _restart(checks, results, a, b, summary):
    journal = facts.journal_entries(a / "journal.json")
    log = (b / "daemon.log").read_text()
    irq_qids, poll_qids, split, _ = _kernel_layout(b)
    queues = facts.agent_queues(b / "queues.json")
    policy = json.loads((b / "policy.json").read_text())["policy"]
    persisted = facts.policy_modes(policy, queues)
    summary["restart"] = {"journal_after_kill": journal, "kernel_split": split, "persisted_policy": persisted,
                          "start_seconds": float((b / "start-seconds").read_text())}
    killed = int((a / "exit-status").read_text())
    checks.check("agent killed (SIGKILL) after switching to interrupt left its journal",
                 killed == 137 and any(e.get("lever") == "poll_queues_reset" and e.get("target") == "nvme0" and
                                       '"value":"1"' in e.get("safe_value", "") for e in journal),
                 f"exit status {killed}, journal {[(e.get('lever'), e.get('target'), e.get('safe_value')) for e in journal]}")
    checks.check("restart: the journal put poll_queues back and the agent found the poll queue again",
                 "journal: restored nvme0" in log and split == (2, 0, 1) and poll_qids and
                 all(q in queues and not queues[q].get("eligible") for q in poll_qids),
                 f"kernel split {split}, poll {poll_qids}; agent qids {sorted(queues)}; "
                 f"log: {[line.split(' info ')[-1][:70] for line in log.splitlines() if 'journal:' in line]}")
    checks.check("restart: the policy set over gRPC (nvme0 interrupt) persisted",
                 persisted.get("nvme0") == "CONTROLLER_MODE_INTERRUPT", f"persisted controllers {persisted}")
    return irq_qids


def _coalescing(checks, b, irq_qids, summary):
    queues = facts.agent_queues(b / "queues.json")
    levers = {q: queues[q].get("lever") for q in irq_qids if q in queues}
    checks.check("restart: the kernel's default lever on this stock kernel is coalescing",
                 levers and all(v == "coalescing" for v in levers.values()), f"levers {levers}")
    override = (b / "override.json").read_text()
    override_status = int((b / "override.status").read_text())
    status = json.loads((b / "status-after-error.json").read_text())
    lever_rows = {row["name"]: row for row in status.get("levers", [])}
    coalescing = lever_rows.get("coalescing", {})
    degraded = [d for d in status.get("degraded", []) if d.startswith("queue nvme0:q1:")]
    events = [e for e in facts.json_lines(b / "watch.json") if e["kind"] == "EVENT_KIND_LEVER_ERROR"]
    metric = facts.metric_value(b / "metrics.txt", "nvme_adapt_lever_errors_total",
                                {"lever": "coalescing", "error": "refused"})
    after = facts.agent_queues(b / "queues-after-error.json")
    last = json.loads((b / "status-before-stop.json").read_text())
    exit_status = int((b / "exit-status").read_text())
    journal = facts.journal_entries(b / "journal.json")
    log = (b / "daemon.log").read_text()
    summary["coalescing"] = {"override_status": override_status, "lever_errors": coalescing.get("errors"),
                             "metric_lever_errors_total": metric, "lever_error_events": len(events),
                             "last_error": coalescing.get("lastError"), "exit_status": exit_status}
    checks.check("override nvme0:q1 poll answered, queue degraded with Feature Not Changeable",
                 override_status == 0 and '"degraded":true' in override and NOT_CHANGEABLE in override,
                 f"exit status {override_status}: {override[:160]}")
    checks.check("agent status: degraded and a coalescing lever error (0x410e)",
                 int(coalescing.get("errors", "0")) >= 1 and NOT_CHANGEABLE in coalescing.get("lastError", "") and
                 degraded and NOT_CHANGEABLE in degraded[0],
                 f"lever {coalescing}; degraded {degraded}")
    checks.check("agent events: LEVER_ERROR for nvme0:q1 (watch --json)",
                 any(e.get("queue", {}).get("queue") == 1 and "Feature Not Changeable" in e.get("message", "")
                     for e in events), f"{len(events)} lever_error events, first: "
                                       f"{events[0].get('message', '')[:100] if events else None}")
    checks.check("metric nvme_adapt_lever_errors_total{lever=coalescing,error=refused} counts it",
                 metric is not None and metric >= 1, f"value {metric}")
    checks.check("agent still answers after the lever error and stops cleanly",
                 len(after) == len(queues) and last.get("collector") == "bpf" and exit_status == 0 and
                 "stopped" in log and "not every change" not in log and not journal,
                 f"queues listed {sorted(after)}, status answered; exit status {exit_status} after SIGTERM, "
                 f"journal entries left {len(journal)}")


def check_agent(checks, results, summary):
    """Every agent check; the agent's fio runs are routed by the caller (_routing of nvme_e2e_test)."""
    a, b = results / "agent" / "a", results / "agent" / "b"
    summary.update({"agent_counts": {}, "switches": {}})
    status, irq_qids, poll_qids = _discovery(checks, a, summary)
    _report(checks, a, status, irq_qids, poll_qids, summary)
    _hooks(checks, status, results, summary)
    _counts(checks, results, a, "agent-libaio", "queues-before-libaio.json", "queues-after-libaio.json",
            irq_qids, summary)
    _counts(checks, results, a, "agent-hipri", "queues-after-libaio.json", "queues-after-hipri.json",
            poll_qids, summary)
    for name, mode, wanted in (("switch-1-poll", "poll", poll_qids), ("switch-2-interrupt", "interrupt", []),
                               ("switch-3-poll", "poll", poll_qids), ("switch-4-interrupt", "interrupt", [])):
        _switch(checks, a, name, mode, wanted, summary)
    _events(checks, a, summary)
    _coalescing(checks, b, _restart(checks, results, a, b, summary), summary)


def describe_hooks(summary):
    """One line for the test output: which hooks the agent's probe chose in the guest."""
    hooks = summary.get("hooks", {})
    return f"agent collector {hooks.get('collector')} chose: {', '.join(hooks.get('chosen', []))}"

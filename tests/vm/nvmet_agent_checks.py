# SPDX-License-Identifier: Apache-2.0
"""Host-side checks of the agent's steps of the nvmet polling-queue task's VM test (tests/vm/guest/nvmet_agent_lib.sh):
- AUTO gives the target's controller the lever nvmet_poll_task, and `report` names it with its risk class;
- the collector sees the task's reaps of the backing disk as poll: while the agent holds the target polling,
  the backing controller's completions land on its poll queue, the agent counts them there (= the tracefs hist)
  and its metrics put them on the poll path;
- the agent's lever switches the target >= MIN_SWITCHES times under fio randrw --verify=crc32c: no verify
  error, no lever error, no NVMe timeout, abort, reset or reconnect in dmesg, every polled bio retired;
- kill -9 then a restart, and SIGTERM, put pqt_enable back as found (0 the first time, 1 the second)."""

import json

import fabrics_facts as ff
import nvme_facts
import nvmet_poll_compare
from nvme_e2e_test import _within

MIN_SWITCHES = 200
LEVER = "nvmet_poll_task"


def _stable_id(metrics, kernel_name):
    """The `controller` label (the stable ID) of the controller the kernel names `kernel_name`, from its
    nvme_adapt_queue_info samples; the other families carry only that."""
    prefix = "nvme_adapt_queue_info{"
    for line in metrics.read_text().splitlines():
        if line.startswith(prefix) and f'kernel_name="{kernel_name}"' in line:
            labels = dict(item.split("=", 1) for item in line[len(prefix):line.rindex("} ")].split(","))
            return labels.get("controller", "").strip('"')
    return None


def _reaped(metrics, qid, path):
    value = nvme_facts.metric_value(metrics, "nvme_adapt_queue_completions_reaped_total",
                                    {"controller": _stable_id(metrics, "nvme0"), "queue": str(qid), "path": path})
    return int(value or 0)


def _lever(checks, a, target, summary):
    listed = nvme_facts.agent_queues(a / "queues-listed.json", target)
    report = json.loads((a / "report.json").read_text())
    levers = {c.get("controller"): (c.get("lever"), c.get("leverRisk")) for c in report.get("controllers", [])}
    logged = [line.split(" info ")[-1][:240] for line in (a / "daemon.log").read_text().splitlines()
              if f"lever for {target}:" in line]
    summary["lever"] = {"queues": {q: (v.get("eligible", False), v.get("lever")) for q, v in listed.items()},
                        "report": levers.get(target), "log": logged}
    checks.check(f"agent: AUTO gives {target}'s I/O queue the lever {LEVER}, said why",
                 listed.get(1, {}).get("lever") == LEVER and listed[1].get("eligible") and
                 any("nvmet default: our nvmet's polling-queue task" in line for line in logged),
                 f"{summary['lever']['queues']}; log {logged}")
    checks.check(f"agent: report names {target}'s lever and its risk class",
                 levers.get(target) == (LEVER, "changes_nothing_else"), f"{target}: {levers.get(target)}")


def _route(checks, a, target, summary, poll_qids):
    d = a / "route"
    fio = ff.fio_io(d / "fio.json")
    ns, task = nvmet_poll_compare.pqt_delta(nvmet_poll_compare.pqt_counters(d / "pqt.before"),
                                            nvmet_poll_compare.pqt_counters(d / "pqt.after"))
    hist = {q: n for q, n in ff.hist_by(d / "hist-nvme.txt", "qid", {"ctrl_id": 0}).items() if isinstance(q, int) and q}
    before = nvme_facts.agent_completions(d / "queues-before.json")
    after = nvme_facts.agent_completions(d / "queues-after.json")
    agent = {q: after[q] - before.get(q, 0) for q in after if q > 0}
    # The backing poll queue served nothing before the run since the agent started: its counts are the run's.
    reaped = {q: {p: _reaped(d / "metrics-after.txt", q, p) for p in ("poll", "interrupt")} for q in poll_qids}
    held = nvme_facts.agent_queues(d / "queues-before.json", target).get(1, {})
    summary["route"] = {"fio_ios": fio["ios"], "hist": hist, "agent": agent, "reaped": reaped, "pqt_ns": ns,
                        "task_reaped": task.get("reaped"), "held_mode": held.get("mode")}
    polled = sum(agent.get(q, 0) for q in poll_qids)
    others = sum(n for q, n in agent.items() if q not in poll_qids)
    checks.check(f"agent route: the override held {target} polling (its queue in poll, pqt_enable 1)",
                 held.get("mode") == "REAP_MODE_POLL" and ns.get("submitted", 0) > 0,
                 f"mode {held.get('mode')}; namespace {ns}")
    checks.check("agent route: fio 4 KiB randread ran", int((d / "fio.status").read_text()) == 0 and fio["ios"] > 0,
                 f"{fio['ios']} I/Os")
    checks.check(f"agent route: the agent counts the backing disk's completions on its poll queue "
                 f"({sorted(poll_qids)}) = the hist, none on its interrupt queues",
                 polled > 0 and others == 0 and all(_within(agent.get(q, 0), hist.get(q, 0)) for q in poll_qids),
                 f"agent {agent}, hist {hist}")
    checks.check("agent route: the collector puts the task's reaps on the poll path (metrics)",
                 all(reaped[q]["poll"] == after.get(q, 0) and reaped[q]["interrupt"] == 0 for q in poll_qids)
                 and polled > 0, f"{reaped}; task reaped {task.get('reaped')}")


def _switching(checks, a, target, summary, poll_qids, trouble):
    d = a / "switching"
    runs = sorted(p for p in d.glob("run-*") if (p / "fio.json").exists())
    fios = [ff.fio_io(r / "fio.json") for r in runs]
    statuses = [int((r / "fio.status").read_text()) for r in runs]
    switches = sum(int(q.get("modeSwitches", "0")) for q in
                   nvme_facts.agent_queues(d / "queues-after.json", target).values())
    switches -= sum(int(q.get("modeSwitches", "0")) for q in
                    nvme_facts.agent_queues(d / "queues-before.json", target).values())
    status = json.loads((d / "status.json").read_text())
    lever_errors = {lv.get("name"): int(lv.get("errors", "0")) for lv in status.get("levers", [])}
    ns, _ = nvmet_poll_compare.pqt_delta(nvmet_poll_compare.pqt_counters(d / "pqt.before"),
                                         nvmet_poll_compare.pqt_counters(d / "pqt.after"))
    after, _ = nvmet_poll_compare.pqt_counters(d / "pqt.after")
    by_qid = {q: n for q, n in ff.hist_by(d / "hist-nvme.txt", "qid", {"ctrl_id": 0}).items() if isinstance(q, int) and q}
    found = trouble(d / "dmesg-during.txt")
    summary["switching"] = {"runs": len(runs), "switches": switches, "fio_ios": sum(f["ios"] for f in fios),
                            "fio_status": statuses, "fio_errors": [f["errors"] for f in fios],
                            "lever_errors": lever_errors, "pqt_ns": ns, "pqt_after": after, "backing_by_qid": by_qid,
                            "trouble": found}
    checks.check(f"agent switching: the lever switched {target} >= {MIN_SWITCHES} times, no lever error",
                 switches >= MIN_SWITCHES and lever_errors.get(LEVER) == 0,
                 f"{switches} switches in {len(runs)} fio runs; lever errors {lever_errors}")
    checks.check("agent switching: fio randrw --verify=crc32c without an error",
                 runs and not any(statuses) and not any(any(e) for e in summary["switching"]["fio_errors"]),
                 f"exit statuses {statuses}, errors {summary['switching']['fio_errors']}")
    checks.check("agent switching: both paths served (backing completions on the poll and the interrupt queues)",
                 any(n for q, n in by_qid.items() if q in poll_qids) and
                 any(n for q, n in by_qid.items() if q not in poll_qids) and ns.get("submitted", 0) > 0,
                 f"per qid {by_qid}; namespace {ns}")
    checks.check("agent switching: policy off put the target back in interrupt, every polled bio retired",
                 after.get("enabled") == 0 and after.get("inflight") == 0 and
                 after.get("submitted") == after.get("retired"), after)
    checks.check("agent switching: no NVMe timeout, abort, reset or reconnect in dmesg", not found, found[:3] or "none")


def _restore(checks, results, summary):
    k, r = results / "agent-kill", results / "agent-restart"
    seen = {name: path.read_text().strip() for name, path in (
        ("found", k / "pqt-found.txt"), ("after_kill", k / "pqt-after-kill.txt"),
        ("after_restart", r / "pqt-after-restart.txt"), ("found_term", r / "pqt-found.txt"),
        ("held", r / "pqt-held.txt"), ("after_term", r / "pqt-after-term.txt"))}
    exits = {name: (d / "exit-status").read_text().strip() for name, d in (("kill", k), ("term", r))}
    summary["restore"] = {"pqt_enable": seen, "exit_status": exits}
    checks.check("restore: kill -9 leaves pqt_enable as the agent put it (1, found 0); the restart restores 0 first",
                 seen["found"] == "0" and seen["after_kill"] == "1" and seen["after_restart"] == "0" and
                 exits["kill"] == "137", f"{seen}; {exits}")
    checks.check("restore: SIGTERM puts pqt_enable back as found (held 0, found 1), exit status 0",
                 seen["found_term"] == "1" and seen["held"] == "0" and seen["after_term"] == "1" and
                 exits["term"] == "0", f"{seen}; {exits}")


def check_agent(checks, results, summary, poll_qids, trouble):
    """The agent's steps; `poll_qids` are the backing controller's poll queues, `trouble` lists the kernel's
    complaints in a dmesg file."""
    a = results / "agent"
    cntlid = ff.host_state(results / "fabrics" / "pqt" / "host.txt").get("cntlid", "?")
    target = f"nvmet:c{cntlid}"
    summary["agent"] = {"target": target}
    _lever(checks, a, target, summary["agent"])
    _route(checks, a, target, summary["agent"], poll_qids)
    _switching(checks, a, target, summary["agent"], poll_qids, trouble)
    _restore(checks, results, summary["agent"])

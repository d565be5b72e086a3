# SPDX-License-Identifier: Apache-2.0
"""Host-side checks of the target vanishing under the agent (tests/vm/guest/fabrics.sh, agent-target-vanishes):
a TCP host connected with a short ctrl_loss_tmo is switched by the reconnect lever (journaled; the reconnect
keeps its timeouts), then the nvmet subsystem is removed mid-window with fio running. The host gives up and
removes its controller: the agent drops its queues with QUEUE_REMOVED events; nvme0 is no longer exported
(layer local, its queues kept); the agent answers, stops by SIGTERM with exit status 0, and the journal drops
the vanished host's entry with a log line and ends empty. The target's own queues (nvmet), listed before,
leave the list with a QUEUE_REMOVED each once idle (the agent runs with --target-idle 5): none stays stale."""

import json

import nvme_facts as facts
import fabrics_facts as ff
from fabrics_lever import _entries


def _layers(path, controller):
    return sorted({q.get("layer") for q in facts.agent_queues(path, controller).values()})


def _listed_layers(path):
    return sorted({q.get("layer") for q in json.loads(path.read_text()).get("queues", [])})


def _target_queues(path):
    """{(controller, qid)} of the target-layer queues in a queue list."""
    return {(q["id"]["controller"], q["id"].get("queue", 0)) for q in json.loads(path.read_text()).get("queues", [])
            if q.get("layer") == "target"}


def check_target_gone(checks, results, summary):
    t = results / "agent" / "target-gone"
    switched = ff.host_state(t / "poll" / "host.txt")
    host = switched.get("controller", "")
    timeouts = (t / "poll" / "host-timeouts.txt").read_text().split()
    journaled = _entries(t / "journal-before.json")
    checks.check("target gone: the switched host kept its timeouts (ctrl_loss_tmo 3, reconnect_delay 1), journaled",
                 switched.get("io_poll") == "1" and timeouts == ["3", "1"] and len(journaled) == 1,
                 f"host {switched}; ctrl_loss_tmo, reconnect_delay {timeouts}; {len(journaled)} tcp_reconnect entries")

    before, after = t / "queues-before.json", t / "queues-after.json"
    listed = facts.agent_queues(before, host)
    gone = facts.agent_queues(after, host)
    events = facts.json_lines(t / "watch.json")
    removed = {}
    for e in events:
        if e.get("kind") == "EVENT_KIND_QUEUE_REMOVED":
            q = e.get("queue", {})
            removed.setdefault(q.get("controller"), []).append(q.get("queue", 0))
    backing_before = facts.agent_queues(before, "nvme0")
    backing_after = facts.agent_queues(after, "nvme0")
    timeline = (t / "removal.txt").read_text().splitlines()
    summary["target_gone"] = {
        "host": host, "listed_qids": sorted(listed), "removed_events": {c: sorted(q) for c, q in removed.items()},
        "nvme0_layers": [_layers(before, "nvme0"), _layers(after, "nvme0")], "timeline": timeline,
        "fio_status": int((t / "fio.status").read_text())}
    target = _target_queues(before)
    summary["target_gone"]["target_queues_before"] = sorted(target)
    checks.check("target gone: the target's queues, listed before, all dropped with QUEUE_REMOVED; none left",
                 bool(target) and "target" not in _listed_layers(after) and
                 all(q in removed.get(c, []) for c, q in target),
                 f"listed before {sorted(target)}, layers after {_listed_layers(after)}, QUEUE_REMOVED "
                 f"{ {c: sorted(q) for c, q in removed.items() if c.startswith('nvmet:')} }")
    checks.check("target gone: nvme0 went from backing to local, its queues kept without QUEUE_REMOVED",
                 _layers(before, "nvme0") == ["backing"] and _layers(after, "nvme0") == ["local"] and
                 backing_before and sorted(backing_before) == sorted(backing_after) and "nvme0" not in removed,
                 f"nvme0 layers {_layers(before, 'nvme0')} -> {_layers(after, 'nvme0')}, qids "
                 f"{sorted(backing_before)} -> {sorted(backing_after)}, removed {removed.get('nvme0', [])}")
    checks.check(f"target gone: {host}'s queues dropped with one QUEUE_REMOVED each once the host gave up",
                 bool(listed) and not gone and sorted(removed.get(host, [])) == sorted(listed),
                 f"listed {sorted(listed)}, left {sorted(gone)}, QUEUE_REMOVED for {sorted(removed.get(host, []))}")

    status = json.loads((t / "status-after.json").read_text())
    stopped = int((t / "exit-status").read_text())
    checks.check("target gone: the agent answered after and stopped by SIGTERM with exit status 0",
                 bool(status) and stopped == 0, f"status answered: {bool(status)}, exit status {stopped}")
    dropped = [line.split(" info ")[-1][:200] for line in (t / "daemon.log").read_text().splitlines()
               if "dropped" in line and "tcp_reconnect" in line]
    left = _entries(t / "journal-after-stop.json")
    summary["target_gone"].update({"journal_dropped": dropped, "journal_left": left, "exit_status": stopped})
    checks.check("target gone: at stop the journal dropped the vanished host's entry (logged) and ended empty",
                 len(dropped) == 1 and not left, f"log {dropped}; journal left {left}")

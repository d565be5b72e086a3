# SPDX-License-Identifier: Apache-2.0
"""Host-side checks of the reconnect lever in the fabrics test bed (tests/vm/guest/fabrics.sh, from
agent-reconnect-poll on): `policy set --controller <host> --mode poll` reconnects the TCP host with a poll
queue (journaled first), io_uring hipri lands on it by the agent's per-queue counts and the hist, SIGTERM puts
the host back as it was; after SIGKILL the next agent restores it from the journal at start; the host
disconnecting under that agent drops its queues with events, and the agent goes on and stops cleanly."""

import json

import fabrics_facts as ff
import nvme_facts as facts
from fabrics_agent import _within


def _entries(path, lever="tcp_reconnect"):
    return [e for e in facts.journal_entries(path) if e.get("lever") == lever]


def _same_shape(a, b):
    return bool(a) and all(a.get(k) == b.get(k) for k in ("queue_count", "io_poll", "hw_queues"))


def _poll(checks, a, before, summary):
    d = a / "poll"
    after = ff.host_state(d / "host.txt")
    ctrl = after.get("controller", "")
    queues = facts.agent_queues(d / "queues.json", ctrl)
    poll_qids = sorted(q for q, v in queues.items() if v.get("mode") == "REAP_MODE_POLL" and not v.get("eligible"))
    journal = _entries(d / "journal.json")
    summary["poll"] = {"host_before": before, "host_after": after, "agent_poll_qids": poll_qids,
                       "journal": [(e.get("target"), e.get("applied_value")) for e in journal]}
    checks.check("lever: policy poll reconnected the host with one poll queue more",
                 after.get("io_poll") == "1" and before.get("io_poll") == "0" and
                 int(after.get("queue_count", 0)) == int(before.get("queue_count", 0)) + 1,
                 f"before {before}, after {after}")
    checks.check("lever: the agent lists the host's new poll queue (not eligible, mode poll)",
                 poll_qids == [int(after.get("queue_count", 0)) - 1] and
                 all("nr_poll_queues" in queues[q].get("ineligibleReason", "") for q in poll_qids),
                 f"{ctrl} poll qids {poll_qids}, queues {sorted(queues)}")
    checks.check("lever: the reconnect was journaled with its restore point (the connection) before it acted",
                 len(journal) == 1 and "nr_poll_queues" in journal[0].get("safeValue", journal[0].get("safe_value", "")),
                 f"journal entries {journal}")
    return ctrl, poll_qids


def _hipri(checks, results, a, ctrl, poll_qids, summary):
    run = results / "io" / "lever" / "agent-hipri"
    hist = {q: n for q, n in ff.hist_by(run / "hist-nvme.txt", "qid", {"ctrl_id": int(ctrl[4:])}).items() if q > 0}
    b = facts.agent_completions(a / "poll" / "queues-before.json", ctrl)
    c = facts.agent_completions(a / "poll" / "queues-after.json", ctrl)
    delta = {q: c[q] - b.get(q, 0) for q in c if q > 0 and c[q] - b.get(q, 0)}
    on_poll = sum(delta.get(q, 0) for q in poll_qids)
    summary["hipri"] = {"agent_delta_by_qid": delta, "hist_by_qid": hist, "fio_ios": ff.fio_io(run / "fio.json")}
    checks.check("lever: fio hipri after the switch lands on the host's poll queue (agent's counts)",
                 on_poll > 0 and on_poll == sum(delta.values()), f"agent deltas {delta}, poll qids {poll_qids}")
    qids = sorted(set(delta) | set(hist))
    checks.check("lever: the agent's hipri counts per queue = the hist within 1 %",
                 bool(qids) and all(_within(delta.get(q, 0), hist.get(q, 0)) for q in qids),
                 ", ".join(f"q{q}: agent {delta.get(q, 0)} hist {hist.get(q, 0)}" for q in qids))


def check_lever(checks, results, summary):
    a = results / "agent"
    out = summary.setdefault("lever", {})
    before = ff.host_state(a / "host-before.txt")
    ctrl, poll_qids = _poll(checks, a, before, out)
    _hipri(checks, results, a, ctrl, poll_qids, out)
    stopped = ff.host_state(a / "host-after-stop.txt")
    left = _entries(a / "journal-after-stop.json")
    exit_status = int((a / "exit-status").read_text())
    out["after_stop"] = {"host": stopped, "journal": left, "exit_status": exit_status}
    checks.check("lever: SIGTERM put the host back as it was (no poll queue) and emptied the journal",
                 exit_status == 0 and _same_shape(stopped, before) and not left,
                 f"exit status {exit_status}; before {before}, after stop {stopped}; journal {left}")

    b = results / "agent" / "crash"
    killed = int((b / "exit-status").read_text())
    kept = _entries(b / "journal-after-kill.json")
    after_kill = ff.host_state(b / "host-after-kill.txt")
    kill_point = (b / "kill-point.txt").read_text().strip()
    restored = ff.host_state(b / "next" / "host-restored.txt")
    log = (b / "next" / "daemon.log").read_text()
    journal_lines = [line.split(" info ")[-1][:120] for line in log.splitlines() if "journal:" in line]
    out["crash"] = {"kill_point": kill_point, "exit_status": killed, "journal_after_kill": len(kept),
                    "host_after_kill": after_kill, "host_restored": restored, "log": journal_lines}
    if kill_point == "reconnect_disconnected":
        in_flight = [e for e in kept if e.get("applied_value", e.get("appliedValue")) == "connected"]
        checks.check("lever: kill -9 between the disconnect and the connect left the host disconnected and the "
                     "in-flight entry (the connect options) in the journal",
                     killed == 137 and not after_kill and len(kept) == 2 and len(in_flight) == 1,
                     f"exit status {killed}, host {after_kill}, tcp_reconnect entries {kept}")
    else:
        checks.check("lever: SIGKILL after the switch left the reconnect in the journal, the host polled",
                     killed == 137 and len(kept) == 1 and after_kill.get("io_poll") == "1",
                     f"exit status {killed}, {len(kept)} tcp_reconnect entries, host {after_kill}")
    checks.check(f"lever: after kill -9 ({kill_point}) the next agent connected the host from the journal at start",
                 _same_shape(restored, before) and any("restored" in line for line in journal_lines),
                 f"host {restored} (before {before}); log {journal_lines}")

    n = b / "next"
    host = restored.get("controller", "")
    listed = facts.agent_queues(n / "queues-before-disconnect.json", host)
    gone = facts.agent_queues(n / "queues-after-disconnect.json", host)
    backing = facts.agent_queues(n / "queues-after-disconnect.json", "nvme0")
    events = facts.json_lines(n / "watch.json")
    removed = sorted(e["queue"].get("queue", 0) for e in events
                     if e.get("kind") == "EVENT_KIND_QUEUE_REMOVED" and e.get("queue", {}).get("controller") == host)
    status = json.loads((n / "status-after-disconnect.json").read_text())
    stopped = int((n / "exit-status").read_text())
    switched = ff.host_state(n / "poll" / "host.txt")
    left = _entries(n / "journal-after-stop.json")
    dropped = [line.split(" info ")[-1][:160] for line in (n / "daemon.log").read_text().splitlines()
               if "shutdown: dropped" in line and "tcp_reconnect" in line]
    out["vanished"] = {"removed_events": removed, "exit_status": stopped, "switched_before": switched,
                       "journal_dropped": dropped, "journal_left": left}
    checks.check(f"agent: {host} disconnected mid-window: its queues dropped with events, nvme0's kept",
                 listed and not gone and removed == sorted(listed) and backing,
                 f"listed {sorted(listed)}, left {sorted(gone)}, QUEUE_REMOVED for {removed}, nvme0 {sorted(backing)}")
    checks.check("agent: answered after the disconnect and stopped by SIGTERM with exit status 0",
                 bool(status) and stopped == 0, f"status answered: {bool(status)}, exit status {stopped}")
    checks.check("agent: the reconnect journaled before the disconnect was dropped at stop (nothing to restore)",
                 switched.get("io_poll") == "1" and len(dropped) == 1 and not left,
                 f"host before the disconnect {switched}; log {dropped}; journal left {left}")

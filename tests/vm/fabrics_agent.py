"""Host-side checks of the fabrics test bed's agent steps (tests/vm/guest/fabrics.sh, agent-fabrics and
agent-host-vanishes): nvme-adaptd on a node that is initiator (nvme_tcp) and target (nvmet over nvme0) at once.
- its queue list names each queue's transport and layer (QueueInfo.transport, .layer), the metrics too
  (nvme_adapt_queue_info);
- a TCP host queue is not eligible, with the reason (no MSI-X vector);
- its per-queue completion deltas around one fio run equal the tracefs hist per qid, host and backing;
- the host controller vanishing (nvme disconnect) drops its queues with QUEUE_REMOVED events, the agent goes
  on answering and stops with exit status 0."""

import fabrics_facts as ff
import nvme_facts as facts

TOLERANCE = 0.01


def _within(a, b):
    return abs(a - b) <= TOLERANCE * max(a, b, 1)


def check_agent(checks, results, info, summary):
    a = results / "agent"
    host, backing = info["controller"], "nvme0"
    queues = {c: facts.agent_queues(a / "queues-after.json", c) for c in (host, backing)}
    layers = {c: sorted({(q.get("transport"), q.get("layer")) for q in qs.values()}) for c, qs in queues.items()}
    summary["agent"] = {"layers": {c: [f"{t}/{l}" for t, l in v] for c, v in layers.items()}}
    checks.check(f"agent: {host} listed as tcp/host, nvme0 as pcie/backing",
                 layers[host] == [("tcp", "host")] and layers[backing] == [("pcie", "backing")],
                 f"{host}: {layers[host]}, nvme0: {layers[backing]}")
    io_host = {q: v for q, v in queues[host].items() if q > 0}
    reasons = sorted({v.get("ineligibleReason", "") for v in io_host.values()})
    checks.check(f"agent: {host}'s I/O queues not eligible: no MSI-X vector",
                 io_host and all(not v.get("eligible") for v in io_host.values()) and
                 all("no MSI-X vector" in r for r in reasons), f"reasons {reasons}")
    info_value = facts.metric_value(a / "metrics.txt", "nvme_adapt_queue_info",
                                    {"source": "kernel", "controller": host, "queue": "1", "transport": "tcp",
                                     "layer": "host"})
    checks.check("metrics: nvme_adapt_queue_info has the host queue's transport and layer", info_value == 1,
                 f"nvme_adapt_queue_info{{controller={host},queue=1,transport=tcp,layer=host}} = {info_value}")

    run = results / "io" / "poll" / "agent-4k-randrw"
    hist = {"host": ff.hist_by(run / "hist-nvme.txt", "qid", {"ctrl_id": info["instance"]}),
            "backing": ff.hist_by(run / "hist-nvme.txt", "qid", {"ctrl_id": 0})}
    counts = {}
    for layer, ctrl in (("host", host), ("backing", backing)):
        before = facts.agent_completions(a / "queues-before.json", ctrl)
        after = facts.agent_completions(a / "queues-after.json", ctrl)
        delta = {q: after[q] - before.get(q, 0) for q in after if q > 0}
        wanted = {q: n for q, n in hist[layer].items() if q > 0}
        qids = sorted(q for q in set(delta) | set(wanted) if delta.get(q) or wanted.get(q))
        counts[layer] = {"agent": delta, "hist": wanted}
        checks.check(f"agent: {layer} ({ctrl}) completions per queue = the hist within 1 %",
                     bool(qids) and all(_within(delta.get(q, 0), wanted.get(q, 0)) for q in qids),
                     ", ".join(f"q{q}: agent {delta.get(q, 0)} hist {wanted.get(q, 0)}" for q in qids))
    summary["agent"]["counts"] = counts

    gone = facts.agent_queues(a / "queues-after-disconnect.json", host)
    events = facts.json_lines(a / "watch.json")
    removed = sorted(e["queue"].get("queue", 0) for e in events
                     if e.get("kind") == "EVENT_KIND_QUEUE_REMOVED" and e.get("queue", {}).get("controller") == host)
    still = facts.agent_queues(a / "queues-after-disconnect.json", backing)
    exit_status = int((a / "exit-status").read_text())
    summary["agent"]["vanished"] = {"removed_events": removed, "exit_status": exit_status}
    checks.check(f"agent: {host} disconnected: its queues dropped with events, nvme0's kept",
                 not gone and removed == sorted(queues[host]) and len(still) == len(queues[backing]),
                 f"{host} queues left {sorted(gone)}, QUEUE_REMOVED for {removed}, nvme0 queues {sorted(still)}")
    checks.check("agent: stopped by SIGTERM with exit status 0", exit_status == 0, f"exit status {exit_status}")

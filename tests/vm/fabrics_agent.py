# SPDX-License-Identifier: Apache-2.0
"""Host-side checks of the fabrics test bed's first agent step (tests/vm/guest/fabrics.sh, agent-fabrics):
nvme-adaptd on a node that is initiator (nvme_tcp) and target (nvmet over nvme0) at once, on an interrupt-only
connection whose controller has the reconnect lever (fabrics_lever.py checks what the lever does).
- its queue list names each queue's transport and layer (QueueInfo.transport, .layer), the metrics too
  (nvme_adapt_queue_info);
- the TCP host's I/O queues are eligible, with the lever tcp_reconnect;
- its per-queue completion deltas around one fio run equal the tracefs hist per qid, host and backing;
- the target's own queues (nvmet:cCNTLID, the host's cntlid) are listed as tcp/target with the host's qids,
  decided in shadow only, and count what the host completed, per qid."""

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
    summary["agent"] = {"host": host, "layers": {c: [f"{t}/{l}" for t, l in v] for c, v in layers.items()}}
    checks.check(f"agent: {host} listed as tcp/host, nvme0 as pcie/backing",
                 layers[host] == [("tcp", "host")] and layers[backing] == [("pcie", "backing")],
                 f"{host}: {layers[host]}, nvme0: {layers[backing]}")
    io_host = {q: v for q, v in queues[host].items() if q > 0}
    levers = sorted({(v.get("eligible", False), v.get("lever", "")) for v in io_host.values()})
    checks.check(f"agent: {host}'s I/O queues eligible, lever tcp_reconnect (interrupt-only connection)",
                 levers == [(True, "tcp_reconnect")], f"(eligible, lever) {levers}")
    info_value = facts.metric_value(a / "metrics.txt", "nvme_adapt_queue_info",
                                    {"source": "kernel", "kernel_name": host, "queue": "1", "transport": "tcp",
                                     "layer": "host"})
    checks.check("metrics: nvme_adapt_queue_info has the host queue's transport and layer", info_value == 1,
                 f"nvme_adapt_queue_info{{controller={host},queue=1,transport=tcp,layer=host}} = {info_value}")

    run = results / "io" / "lever" / "agent-4k-randrw"
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
    _check_target(checks, a, run, counts["host"]["agent"], summary)


def _check_target(checks, a, run, host_delta, summary):
    """The target's own queues: the controller the host is connected to (its cntlid), listed as tcp/target
    with the host's qids, observed only (shadow decisions), counting what the host completed."""
    cntlid = ff.host_state(a / "host-before.txt").get("cntlid", "?")
    target = f"nvmet:c{cntlid}"
    host_qids = sorted(facts.agent_queues(a / "queues-after.json", summary["agent"]["host"]))
    listed = facts.agent_queues(a / "queues-after.json", target)
    layers = sorted({(q.get("transport"), q.get("layer"), q.get("source")) for q in listed.values()})
    checks.check(f"agent: the target's queues listed as {target}, tcp/target, the host's qids",
                 layers == [("tcp", "target", "SOURCE_NVMET")] and sorted(listed) == host_qids,
                 f"{target}: {layers}, qids {sorted(listed)}; host qids {host_qids}")
    levers = sorted({(v.get("eligible", False), v.get("lever", "")) for q, v in listed.items() if q > 0})
    admin = listed.get(0, {}).get("eligible", False)
    logged = [line.split(" info ")[-1][:200] for line in (a / "daemon.log").read_text().splitlines()
              if f"lever for {target}:" in line]
    checks.check(f"agent: {target}'s I/O queues decided in shadow only (lever dry_run, said why), admin not eligible",
                 levers == [(True, "dry_run")] and not admin and
                 any("nvmet target queue: shadow decisions only" in line for line in logged),
                 f"(eligible, lever) {levers}, admin eligible {admin}, log {logged}")
    io = listed.get(1, {})
    decision = io.get("lastDecision") or {}
    checks.check(f"agent: {target} set adaptive is decided in shadow (no lever), a decision per 128-completion window",
                 io.get("controllerMode") == "CONTROLLER_MODE_SHADOW" and io.get("mode") == "REAP_MODE_INTERRUPT" and
                 int(io.get("windows", "0")) >= 3 and decision.get("reason") in ("window_slow", "window_fast"),
                 f"controller mode {io.get('controllerMode')}, mode {io.get('mode')}, windows {io.get('windows')}, "
                 f"last decision {decision.get('reason')} ({decision.get('from')} -> {decision.get('to')})")
    summary["agent"]["target_shadow"] = {"windows": int(io.get("windows", "0")), "last_decision": decision}
    before = facts.agent_completions(a / "queues-before.json", target)
    after = facts.agent_completions(a / "queues-after.json", target)
    delta = {q: after[q] - before.get(q, 0) for q in after if q > 0}
    hist = {q: n for q, n in ff.hist_by(run / "hist-req_complete.txt", "qid").items() if q > 0}
    qids = sorted(q for q in set(delta) | set(hist) | set(host_delta) if delta.get(q) or hist.get(q) or host_delta.get(q))
    summary["agent"]["counts"]["target"] = {"controller": target, "agent": delta, "hist": hist}
    checks.check(f"agent: target ({target}) completions per queue = the hist and = the host's within 1 %",
                 bool(qids) and all(_within(delta.get(q, 0), hist.get(q, 0)) and
                                    _within(delta.get(q, 0), host_delta.get(q, 0)) for q in qids),
                 ", ".join(f"q{q}: agent {delta.get(q, 0)} hist {hist.get(q, 0)} host {host_delta.get(q, 0)}"
                           for q in qids))
    info_value = facts.metric_value(a / "metrics.txt", "nvme_adapt_queue_info",
                                    {"source": "nvmet", "controller": target, "queue": "1", "transport": "tcp",
                                     "layer": "target"})
    checks.check("metrics: nvme_adapt_queue_info has the target queue's transport and layer", info_value == 1,
                 f"nvme_adapt_queue_info{{controller={target},queue=1,transport=tcp,layer=target}} = {info_value}")


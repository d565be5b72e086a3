#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fleet's question after a shadow rollout, answered by a real Prometheus (Debian's) scraping two agents:
which drive models and firmwares would gain from polling, on how many nodes. Two nvme-adaptd, each with its own
state, runtime dir and metrics port (two nodes: the scrape gives them node labels node-a and node-b, as the
ServiceMonitor does), run in shadow mode over a uvnvme-load QD8 load each; Prometheus loads the tree's rules.
The by-model recording rules must show one series for the uvnvme drives (model "uvnvme") on both nodes, the
share shadow mode would poll, and the dashboard's fleet row must have data.

Usage: payoff_by_model_test.py RULES_DIR WORKDIR   (NVME_ADAPTD, NVME_ADAPTCTL, UVNVME_LOAD in the environment)"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "daemon")]

from daemon_harness import Daemon, Load, Workspace  # noqa: E402
from prometheus_server import PrometheusServer, free_port  # noqa: E402

NODES = ("node-a", "node-b")
MODEL = "uvnvme"  # what uvnvme's controllers report as their model number


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print(f"ok: {message}")


def main():
    rules_dir, workdir = sys.argv[1:3]
    os.makedirs(workdir, exist_ok=True)
    rule_files = sorted(os.path.join(rules_dir, f) for f in os.listdir(rules_dir) if f.endswith(".rules.yml"))
    agents, loads, targets = [], [], {}
    try:
        for node in NODES:
            ws = Workspace(f"payoff-by-model-{node}")
            port = free_port()
            daemon = Daemon(ws, config={}, flags=["--sources", "uvnvme", "--default-mode", "shadow",
                                                  "--metrics-listen", f"127.0.0.1:{port}"])
            agents.append(daemon.start())
            loads.append(Load(ws, "--mode", "external", "--controller-rt", "--phases", "1s:idle,60s:qd8").start())
            targets[f"127.0.0.1:{port}"] = node
        with PrometheusServer(workdir, list(targets), rule_files, nodes=targets) as prom:
            print(f"prometheus on 127.0.0.1:{prom.port} scrapes {targets}; logs in {workdir}")
            prom.wait_until('count(up{job="nvme-adapt"} == 1) == 2', 30, "both agents are scraped")
            info = prom.wait_until(f'count by (node) (nvme_adapt_queue_info{{model="{MODEL}"}}) > 0', 30,
                                   f"both nodes' queue info series with model {MODEL}")
            check(sorted(r["metric"]["node"] for r in info) == sorted(NODES),
                  f"nvme_adapt_queue_info carries the drive's model on {sorted(r['metric']['node'] for r in info)}")
            nodes = prom.wait_until(f'nvme_adapt:model_firmware_nodes:count{{model="{MODEL}"}} == 2', 30,
                                    f"the by-model rule counts the {MODEL} drives on two nodes")
            check(len(nodes) == 1, f"one series for the model across the nodes: {nodes}")
            would = prom.wait_until(
                f'nvme_adapt:model_firmware_nodes_shadow_would_poll:count{{model="{MODEL}"}} == 2', 45,
                "shadow mode would poll on both nodes")
            share = prom.wait_until(f'nvme_adapt:model_firmware_shadow_would_poll:ratio10m{{model="{MODEL}"}} > 0',
                                    30, "the share shadow mode would poll, by model")
            check(0 < share[0]["value"] <= 1,
                  f"payoff_by_model: {MODEL} drives on {int(nodes[0]['value'])} nodes, shadow mode would poll on "
                  f"{int(would[0]['value'])}, {share[0]['value']:.0%} of their completions; labels {share[0]['metric']}")
            rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
            bad = [f"{r['name']}: {r.get('lastError')}" for r in rules if r.get("health") != "ok"]
            check(not bad, f"all {len(rules)} rules evaluate without error {bad}")
            with open(os.path.join(rules_dir, "..", "grafana", "nvme-adapt.json")) as f:
                dashboard = json.load(f)
            # In shadow mode nothing is gained yet: the panels of what shadow mode records.
            shown = {"nvme_adapt:model_firmware_nodes:count", "nvme_adapt:model_firmware_nodes_shadow_would_poll:count",
                     "nvme_adapt:model_firmware_shadow_would_poll:ratio10m"}
            fleet = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", []) if t["expr"] in shown]
            check(len(fleet) == len(shown), f"the dashboard's fleet row shows {sorted(shown)}: {fleet}")
            for expr in fleet:
                check(bool(prom.query(expr)), f"the dashboard's fleet panel {expr} has data")
    finally:
        for load in loads:
            load.stop()
        for daemon in agents:
            daemon.stop()
            daemon.ws.cleanup()
    print("all checks passed")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus scrapes a target (targets.py) while it runs a load with a heavy phase; the checks query
Prometheus's HTTP API:
  1. the target is up and its queue series arrive;
  2. some queue reports mode poll during the heavy phase (and, for a scripted target, none outside it);
  3. the completions Prometheus recorded over the run, per second, match the load's own IOPS within 10 %,
     and rate() in the heavy phase matches that phase's known rate within 10 %;
  4. every query of the Grafana dashboard evaluates, and its main panels have data;
  5. the recording and alert rules evaluate without error, and no alert fires on a healthy run.
Usage: run_scenario.py --target fixture --fixture PATH --rules-dir DIR --workdir DIR"""

import argparse
import json
import os
import re
import signal
import sys
import time

from prometheus_server import JOB, PrometheusServer
from targets import LoadReport, Target, make_target

RATE_TOLERANCE = 0.10


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)
    print(f"ok: {message}")


def sum_at(prom: PrometheusServer, expr: str, at: float) -> float:
    result = prom.query(f"sum({expr})", at)
    check(len(result) == 1, f"sum({expr}) has a value at {at:.1f}")
    return result[0]["value"]


def wait_for_scrape_after(prom: PrometheusServer, at: float) -> None:
    """Waits until Prometheus has a sample of the target taken after `at`."""
    prom.wait_until(f'timestamp(up{{job="{JOB}"}}) > {at:.3f}', timeout_s=15, what="a scrape after the load")


def check_modes(prom: PrometheusServer, target: Target, report: LoadReport) -> None:
    heavy_s = max(1, int(report.heavy_end_unix - report.heavy_start_unix))
    polled = prom.query(f'max_over_time(nvme_adapt_queue_mode{{mode="poll"}}[{heavy_s}s]) == 1',
                        report.heavy_end_unix)
    queues = sorted(f"{r['metric'].get('controller')}/q{r['metric'].get('queue')}" for r in polled)
    check(bool(polled), f"some queue reports mode poll during the heavy phase: {queues}")
    if target.polls_only_in_heavy_phase:
        before_s = max(1, int(report.heavy_start_unix - report.start_unix) - 1)
        early = prom.query(f'max_over_time(nvme_adapt_queue_mode{{mode="poll"}}[{before_s}s]) == 1',
                           report.heavy_start_unix - 0.5)
        check(not early, f"no queue polls in the light phase before it ({len(early)} did)")
        interrupt = prom.query('nvme_adapt_queue_mode{mode="interrupt"} == 1')
        check(len(interrupt) >= len(polled), "the polling queues are back in interrupt mode after the run")


def check_rate(prom: PrometheusServer, target: Target, report: LoadReport) -> None:
    # The counters are flat before and after the load, so the samples just before its start and after its
    # end differ by exactly the completions of the run.
    selector = f"nvme_adapt_queue_completions_total{target.completions_selector}"
    completions = sum_at(prom, selector, report.end_unix + 1.0) - sum_at(prom, selector, report.start_unix)
    rate = completions / (report.end_unix - report.start_unix)
    error = abs(rate - report.iops) / report.iops
    check(error <= RATE_TOLERANCE,
          f"completions over the run via Prometheus {rate:.0f}/s vs the load's {report.iops:.0f} IOPS "
          f"({error:.1%} apart, tolerance {RATE_TOLERANCE:.0%})")


def check_heavy_phase_rate(prom: PrometheusServer, target: Target, report: LoadReport) -> None:
    # rate() over the heavy phase without its first and last second, evaluated by Prometheus from scrapes.
    # Each sample may be up to one scrape plus one counter refresh old (the daemon refreshes every 1 s), and
    # the two ends' ages differ by up to that much: the phase must be long against 1 s for 10 % to hold.
    window_s = max(2, int(report.heavy_end_unix - report.heavy_start_unix) - 2)
    expr = f"nvme_adapt_queue_completions_total{target.completions_selector}"
    rate = sum_at(prom, f"rate({expr}[{window_s}s])", report.heavy_end_unix - 1.0)
    error = abs(rate - report.heavy_iops) / report.heavy_iops
    check(error <= RATE_TOLERANCE,
          f"rate() in the heavy phase {rate:.0f}/s vs its known {report.heavy_iops:.0f}/s "
          f"({error:.1%} apart, tolerance {RATE_TOLERANCE:.0%})")


def dashboard_queries(path: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(panel title, expr) of every panel query, and every template variable query."""
    with open(path) as f:
        dashboard = json.load(f)
    panels = [(p.get("title", ""), t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]
    variables = [v["query"] for v in dashboard["templating"]["list"] if v.get("type") == "query"]
    return panels, variables


def grafana_to_promql(expr: str, rate_interval: str) -> str:
    expr = expr.replace("$__rate_interval", rate_interval)
    return re.sub(r"\$(node|controller|queue)\b", ".*", expr)


def check_dashboard(prom: PrometheusServer, dashboard: str, at: float) -> None:
    panels, variables = dashboard_queries(dashboard)
    with_data = set()
    for title, expr in panels:
        promql = grafana_to_promql(expr, "4s")
        result = prom.query(promql, at)  # raises on a query Prometheus cannot evaluate
        if result:
            with_data.add(title)
    check(True, f"all {len(panels)} dashboard queries evaluate")
    for title in ["Reaping mode per queue", "Completion rate", "Average interval against the poll threshold",
                  "Mode switches by reason", "CPU", "Resident memory"]:
        check(title in with_data, f"dashboard panel '{title}' has data")
    for query in variables:
        match = re.fullmatch(r"label_values\((.*), (\w+)\)", query)
        check(match is not None, f"variable query {query} is label_values(selector, label)")
        values = prom.query(f"group by ({match.group(2)}) ({grafana_to_promql(match.group(1), '4s')})", at)
        check(bool(values), f"variable {match.group(2)} has values: "
                            f"{sorted(v['metric'].get(match.group(2), '') for v in values)}")


def check_rules(prom: PrometheusServer) -> None:
    groups = prom.api("rules")["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    check(len(rules) > 0, f"{len(rules)} rules loaded")
    bad = [f"{r['name']}: {r.get('lastError')}" for r in rules if r.get("health") != "ok"]
    check(not bad, f"every rule evaluates without error {bad}")
    check(bool(prom.query("nvme_adapt:instance_completions:rate1m")), "recording rules produce series")
    firing = [r["name"] for r in rules if r.get("type") == "alerting" and r.get("state") == "firing"]
    check(not firing, f"no alert fires on a healthy run {firing}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="fixture")
    parser.add_argument("--fixture", help="nvme-adapt-metrics-fixture binary")
    parser.add_argument("--daemon", help="nvme-adaptd binary (target daemon)")
    parser.add_argument("--uvnvme-load", help="uvnvme-load binary (target daemon)")
    parser.add_argument("--ctl", help="nvme-adaptctl binary (target daemon)")
    parser.add_argument("--rules-dir", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    # A SIGTERM (CTest, a user) unwinds through the finally blocks that stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    os.makedirs(args.workdir, exist_ok=True)
    rule_files = sorted(os.path.join(args.rules_dir, f) for f in os.listdir(args.rules_dir)
                        if f.endswith(".rules.yml"))
    dashboard = os.path.join(args.rules_dir, "..", "grafana", "nvme-adapt.json")
    target = make_target(args.target, args)
    try:
        address = target.start(args.workdir)
        print(f"target {target.name} serves on {address}")
        with PrometheusServer(args.workdir, [address], rule_files) as prom:
            print(f"prometheus on 127.0.0.1:{prom.port}, logs in {args.workdir}")
            prom.wait_until(f'up{{job="{JOB}"}} == 1', timeout_s=30, what="the target is up")
            prom.wait_until(f"nvme_adapt_queue_completions_total{target.completions_selector}", timeout_s=30,
                            what="queue series arrive")
            time.sleep(1.5)  # a sample of the idle counters before the load
            report = target.run_load()
            print(f"load: {report}")
            wait_for_scrape_after(prom, report.end_unix + 1.0)
            check_modes(prom, target, report)
            check_rate(prom, target, report)
            check_heavy_phase_rate(prom, target, report)
            check_dashboard(prom, dashboard, report.heavy_end_unix)
            check_rules(prom)
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        target.stop()
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

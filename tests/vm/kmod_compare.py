# SPDX-License-Identifier: Apache-2.0
"""The seed's comparison on our nvme-pci module, from the kmod guest's compare runs: four arms (interrupt only,
poll only, the driver's own adaptive policy, the agent deciding per queue) at each point (queue depth x jobs),
repetitions in rotated order. Writes kmod-compare.json and returns it; prints a Markdown table.

Per run: IOPS and p50/p99 completion latency (fio), guest CPU per I/O (busy ticks of /proc/stat over the
measured seconds, per completion), the share of completions reaped by polling and the switches (the module's
counters). Ratios are medians of the per-repetition ratios of two arms (paired: same repetition, same point).
TCG timing is not hardware: only the ratios mean something.
"""

import json
import statistics
from pathlib import Path

import kmod_facts

ARMS = ("interrupt", "poll", "driver", "agent")
# Goals of the kernel-patch issue: the agent against the driver's own policy everywhere; where polling pays
# (poll beats interrupt by more than POLL_PAYS), both adaptive arms against poll.
AGENT_VS_DRIVER = 0.97
POLL_PAYS = 1.05
ADAPTIVE_VS_POLL = 0.95


def _run(compare_dir, row):
    name = row["run"]
    before = kmod_facts.queues(compare_dir / f"{name}.before")
    after = kmod_facts.queues(compare_dir / f"{name}.after")
    iops, p50, p99 = kmod_facts.fio_latency(compare_dir / f"{name}.fio.json")
    busy0, total0 = map(int, row["cpu_before"].split())
    busy1, total1 = map(int, row["cpu_after"].split())
    ios, errors = kmod_facts.fio_totals(compare_dir / f"{name}.fio.json")
    done = kmod_facts.delta(before, after, "completions")
    polled = kmod_facts.delta(before, after, "reaped_poll")
    return {"iops": iops, "p50_us": p50, "p99_us": p99, "errors": errors,
            "cpu_ticks_per_kio": round(1000 * (busy1 - busy0) / ios, 3) if ios else None,
            "busy_share": round((busy1 - busy0) / (total1 - total0), 3) if total1 > total0 else None,
            "share_polled": round(polled / done, 3) if done else None,
            "switches": kmod_facts.delta(before, after, "switches")}


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _paired(runs, a, b, field="iops"):
    ratios = [runs[a][r][field] / runs[b][r][field] for r in runs[a]
              if r in runs[b] and runs[b][r][field] and runs[a][r][field] is not None]
    return _median(ratios)


def analyse(compare_dir, out_path, agent_policy=None):
    compare_dir = Path(compare_dir)
    rows = [json.loads(line) for line in (compare_dir / "runs.jsonl").read_text().splitlines() if line.strip()]
    points = {}
    for row in rows:
        point = points.setdefault(f"qd{row['qd']}-j{row['jobs']}", {"qd": row["qd"], "jobs": row["jobs"],
                                                                   "runs": {arm: {} for arm in ARMS}})
        point["runs"][row["arm"]][row["rep"]] = _run(compare_dir, row)
    goals = []
    for name, point in points.items():
        runs = point["runs"]
        point["medians"] = {arm: {field: _median([r[field] for r in runs[arm].values()])
                                  for field in ("iops", "p50_us", "p99_us", "cpu_ticks_per_kio", "share_polled",
                                                "switches")} for arm in ARMS}
        ratios = {"poll_vs_interrupt": _paired(runs, "poll", "interrupt"),
                  "driver_vs_interrupt": _paired(runs, "driver", "interrupt"),
                  "agent_vs_interrupt": _paired(runs, "agent", "interrupt"),
                  "agent_vs_driver": _paired(runs, "agent", "driver"),
                  "driver_vs_poll": _paired(runs, "driver", "poll"),
                  "agent_vs_poll": _paired(runs, "agent", "poll"),
                  "agent_vs_driver_cpu_per_io": _paired(runs, "agent", "driver", "cpu_ticks_per_kio")}
        point["paired_ratios"] = ratios
        goals.append({"point": name, "goal": f"agent >= {AGENT_VS_DRIVER} x driver",
                      "value": ratios["agent_vs_driver"],
                      "met": ratios["agent_vs_driver"] is not None and ratios["agent_vs_driver"] >= AGENT_VS_DRIVER})
        if ratios["poll_vs_interrupt"] and ratios["poll_vs_interrupt"] > POLL_PAYS:
            for arm in ("driver", "agent"):
                value = ratios[f"{arm}_vs_poll"]
                goals.append({"point": name, "goal": f"polling pays: {arm} >= {ADAPTIVE_VS_POLL} x poll",
                              "value": value, "met": value is not None and value >= ADAPTIVE_VS_POLL})
    result = {"caveat": "QEMU TCG: a guest's timing is not hardware's; compare arms as ratios only",
              "agent_policy": agent_policy,
              "repetitions": len({row["rep"] for row in rows}), "points": points, "goals": goals,
              "goals_met": sum(g["met"] for g in goals), "goals_total": len(goals)}
    Path(out_path).write_text(json.dumps(result, indent=1) + "\n")
    return result


def table(result):
    """A Markdown table of the medians and paired ratios (docs/evaluation.md)."""
    lines = ["| point | arm | IOPS | p50 us | p99 us | CPU ticks / 1k I/O | polled | switches | x interrupt | "
             "x poll | agent x driver |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, point in result["points"].items():
        ratios = point["paired_ratios"]
        for arm in ARMS:
            m = point["medians"][arm]
            vs_irq = {"interrupt": 1.0, "poll": ratios["poll_vs_interrupt"], "driver": ratios["driver_vs_interrupt"],
                      "agent": ratios["agent_vs_interrupt"]}[arm]
            vs_poll = {"driver": ratios["driver_vs_poll"], "agent": ratios["agent_vs_poll"]}.get(arm, "")
            lines.append(f"| {name} | {arm} | {m['iops']} | {m['p50_us']} | {m['p99_us']} | {m['cpu_ticks_per_kio']} | "
                         f"{m['share_polled']} | {m['switches']} | {vs_irq} | {vs_poll} | "
                         f"{ratios['agent_vs_driver'] if arm == 'agent' else ''} |")
    return "\n".join(lines)

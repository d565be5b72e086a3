# SPDX-License-Identifier: Apache-2.0
"""The seed's comparison on our nvmet polling-queue task (kmod/nvmet), from the nvmet_poll guest's compare runs:
NVMe/TCP over the guest's loopback, one queue pair, QD32, one job, the target's work on one vCPU; 4 KiB randread,
randwrite, randrw and 2 MiB randread; interrupt against polled submission (and the agent's arm when the guest ran
it); repetitions in rotated order. Writes nvmet-poll-compare.json and returns it; table() gives Markdown.

Per run: IOPS and bandwidth (reads + writes), p50/p99 completion latency of the reads (of the writes for
randwrite), the guest's busy CPU ticks per 1,000 I/Os and each vCPU's busy share over the measured seconds, and
from the target's counters the share of the backing bios that went polled and were reaped by the task. Ratios are
medians of the per-repetition ratios of two arms (paired: same repetition, same workload). TCG timing is not
hardware: only the ratios mean something, and those only of this guest.
"""

import json
import statistics
from pathlib import Path

ARMS = ("interrupt", "polled", "agent")
WORKLOADS = ("4k-randread", "4k-randwrite", "4k-randrw", "2m-randread")
# The thread's table (LKML, September 2023: spdk perf initiator on another machine, NVMe/TCP, one queue pair, QD32,
# the target's TCP queue on one core): NIC throughput in MB/s, polling queue against interrupt.
SEED = {
    "4k-randread": {"polled": [873], "interrupt": [654]},
    "4k-randwrite": {"polled": [587], "interrupt": [431]},
    "4k-randrw": {"polled": [338, 335], "interrupt": [260, 258]},
    "2m-randread": {"polled": [2226], "interrupt": [2119]},
    "2m-randwrite": {"polled": [1199], "interrupt": [1146]},
    "2m-randrw": {"polled": [738, 741], "interrupt": [674, 674]},
}


def _fio(path, name):
    """The job `name` of a fio JSON output: I/Os, IOPS and MB/s (reads + writes), its error, p50/p99 completion
    latency of its reads (of its writes when it read nothing)."""
    text = Path(path).read_text()
    job = next(j for j in json.loads(text[text.index("{"):])["jobs"] if j["jobname"] == name)
    read, write = job["read"], job["write"]
    side = read if read["total_ios"] else write
    pct = side.get("clat_ns", {}).get("percentile", {})
    return {"ios": read["total_ios"] + write["total_ios"], "iops": read["iops"] + write["iops"],
            "mbps": (read["bw_bytes"] + write["bw_bytes"]) / 1e6, "error": job["error"],
            "p50_us": pct.get("50.000000", 0) / 1000, "p99_us": pct.get("99.000000", 0) / 1000}


def pqt_counters(path):
    """({ns counters}, {task counters}) from a pqt_snapshot file (kmod/nvmet/README.md gives the fields)."""
    ns, task = {}, {}
    for line in Path(path).read_text().splitlines():
        words = line.split()
        if words and words[0] == "ns":
            ns = dict(zip(("enabled", "submitted", "reaped", "retired", "unpolled", "fallback", "inflight"),
                          map(int, words[1:])))
        elif words and words[0] == "task":
            task = {"state": words[1], **dict(zip(("reaped", "polls", "retired", "busy_ns", "idle_ns", "sleep_ns",
                                                   "wakeups", "queued"), map(int, words[2:])))}
    return ns, task


def pqt_delta(before, after):
    """after - before of every numeric counter of two pqt_counters() results."""
    return tuple({k: a[k] - b.get(k, 0) for k in a if isinstance(a[k], int)} for b, a in zip(before, after))


def _cpu(path):
    """{cpuN: (busy share, busy ticks)} over the measured seconds, and the busy ticks of all CPUs."""
    blocks = Path(path).read_text().split("\n\n")
    first, second = ({w[0]: (int(w[1]), int(w[2])) for w in (line.split() for line in b.splitlines()) if w}
                     for b in blocks[:2])
    shares = {}
    for cpu, (busy1, total1) in second.items():
        busy0, total0 = first.get(cpu, (busy1, total1))
        shares[cpu] = (round((busy1 - busy0) / (total1 - total0), 3) if total1 > total0 else None, busy1 - busy0)
    return shares


def _run(compare_dir, row):
    name = row["run"]
    fio = _fio(compare_dir / row["fio"], name)
    ns, task = pqt_delta(pqt_counters(compare_dir / f"{name}.before"), pqt_counters(compare_dir / f"{name}.after"))
    cpu = _cpu(compare_dir / f"{name}.cpu")
    busy_all = cpu.get("cpu", (None, 0))[1]
    return {"iops": round(fio["iops"], 1), "mbps": round(fio["mbps"], 2), "p50_us": fio["p50_us"],
            "p99_us": fio["p99_us"], "ios": fio["ios"], "error": fio["error"],
            "fio_status": int((compare_dir / f"rep-{row['rep']}.fio.status").read_text()),
            "cpu_ticks_per_kio": round(1000 * busy_all / fio["ios"], 3) if fio["ios"] else None,
            "cpu_busy_share": {c: s for c, (s, _) in sorted(cpu.items()) if c != "cpu"},
            "bios_polled": ns.get("submitted", 0), "bios_reaped_by_task": ns.get("reaped", 0),
            "bios_unpolled": ns.get("unpolled", 0), "fallback_commands": ns.get("fallback", 0),
            "task_busy_ms": round(task.get("busy_ns", 0) / 1e6, 1)}


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _paired(runs, a, b, field):
    return _median([runs[a][r][field] / runs[b][r][field] for r in runs[a]
                    if r in runs[b] and runs[b][r][field] and runs[a][r][field] is not None])


def seed_ratios():
    return {w: round(sum(v["polled"]) / sum(v["interrupt"]), 3) for w, v in SEED.items()}


def analyse(compare_dir, out_path):
    compare_dir = Path(compare_dir)
    rows = [json.loads(line) for line in (compare_dir / "runs.jsonl").read_text().splitlines() if line.strip()]
    arms = [a for a in ARMS if any(r["arm"] == a for r in rows)]
    workloads = {}
    for row in rows:
        w = workloads.setdefault(row["workload"], {"runs": {arm: {} for arm in arms}})
        w["runs"][row["arm"]][row["rep"]] = _run(compare_dir, row)
    seed = seed_ratios()
    for name, w in workloads.items():
        runs = w["runs"]
        w["medians"] = {arm: {f: _median([r[f] for r in runs[arm].values()])
                              for f in ("iops", "mbps", "p50_us", "p99_us", "cpu_ticks_per_kio", "bios_polled",
                                        "bios_reaped_by_task", "task_busy_ms")} for arm in arms}
        w["paired_ratios"] = {f"{arm}_vs_interrupt": {f: _paired(runs, arm, "interrupt", f)
                                                      for f in ("iops", "p50_us", "p99_us", "cpu_ticks_per_kio")}
                              for arm in arms if arm != "interrupt"}
        w["seed_polled_vs_interrupt"] = seed.get(name)
    result = {"caveat": "QEMU TCG guest: its timing is not hardware's; compare the arms as ratios only, and the "
                        "seed's ratios (two machines, a 2023 NIC) only for their direction",
              "setup": (compare_dir / "setup.txt").read_text().splitlines() if (compare_dir / "setup.txt").exists()
              else [],
              "repetitions": len({row["rep"] for row in rows}), "arms": arms, "workloads": workloads,
              "seed_polled_vs_interrupt": seed}
    Path(out_path).write_text(json.dumps(result, indent=1) + "\n")
    return result


def table(result):
    """A Markdown table: per workload and arm, the medians, our paired ratio against interrupt and the seed's."""
    lines = ["| workload | arm | IOPS | MB/s | p50 us | p99 us | CPU ticks / 1k I/O | bios polled | x interrupt "
             "(IOPS) | seed x interrupt |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in [w for w in WORKLOADS if w in result["workloads"]]:
        w = result["workloads"][name]
        for arm in result["arms"]:
            m = w["medians"][arm]
            ratio = 1.0 if arm == "interrupt" else w["paired_ratios"][f"{arm}_vs_interrupt"]["iops"]
            seed = "" if arm == "interrupt" else w["seed_polled_vs_interrupt"] if arm == "polled" else ""
            lines.append(f"| {name} | {arm} | {m['iops']} | {m['mbps']} | {m['p50_us']} | {m['p99_us']} | "
                         f"{m['cpu_ticks_per_kio']} | {m['bios_polled']} | {ratio} | {seed} |")
    return "\n".join(lines)

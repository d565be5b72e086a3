# SPDX-License-Identifier: Apache-2.0
"""Parsers for what the kmod guest script records: our nvme-pci module's per-queue files (kmod/README.md), the
sampler's lines, fio's totals."""

import json
from dataclasses import dataclass
from pathlib import Path

# The fields of adaptive/q<qid>/stats, in order (kmod/nvme-pci/src/nvme-adaptive-sysfs.c).
STATS = ("reaped_irq", "reaped_poll", "interrupts", "timer_runs", "switches_to_poll", "switches_to_irq", "tries",
         "fails_pace", "fails_slower", "fails_stalled", "backoffs")


@dataclass
class QueueFiles:
    mode: str
    state: str
    stats: dict
    policy: str

    @property
    def completions(self):
        return self.stats["reaped_irq"] + self.stats["reaped_poll"]

    @property
    def switches(self):
        return self.stats["switches_to_poll"] + self.stats["switches_to_irq"]


def _stats(words):
    return dict(zip(STATS, map(int, words)))


def queues(path):
    """{qid: QueueFiles} from kmod_queues' "qN mode state stats... | policy" lines."""
    found = {}
    for line in Path(path).read_text().splitlines():
        head, _, policy = line.partition(" | ")
        words = head.split()
        found[int(words[0][1:])] = QueueFiles(words[1], words[2], _stats(words[3:]), policy.strip())
    return found


def modes(path):
    """{qid: mode file} of the eligible queues from kmod_modes' "qN MODE STATE" lines."""
    return {int(w[0][1:]): w[1] for w in (line.split() for line in Path(path).read_text().splitlines()) if w}


def delta(before, after, field):
    """The sum over the queues of `field` (a stats name, or completions/switches) grown from before to after."""
    def value(q):
        return getattr(q, field) if field in ("completions", "switches") else q.stats[field]
    return sum(value(after[qid]) - value(before[qid]) for qid in after if qid in before)


def samples(path):
    """[(uptime, {qid: (state, stats)}, {qid: interrupts})] from kmod_sample_start's lines."""
    rows, current = [], None
    for line in Path(path).read_text().splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "t":
            current = (float(words[1]), {}, {})
            rows.append(current)
        elif current and words[0] == "irq" and len(words) == 3 and "q" in words[1]:
            current[2][int(words[1].rsplit("q", 1)[1])] = int(words[2])
        elif current and words[0].startswith("q") and len(words) == 2 + len(STATS):
            current[1][int(words[0][1:])] = (words[1], _stats(words[2:]))
    return [r for r in rows if r[1] and r[2]]


def polling_stretches(rows):
    """Per queue, each run of consecutive samples in which it was polling at both ends: (seconds, completions,
    interrupts) over the run."""
    stretches = {}
    for qid in rows[0][1] if rows else {}:
        start = None
        for i, (t, states, irqs) in enumerate(rows):
            polling = states.get(qid, ("", None))[0] == "poll" and qid in irqs
            if polling and start is None:
                start = i
            if start is not None and (not polling or i == len(rows) - 1):
                end = i if polling else i - 1
                if end > start:
                    a, b = rows[start], rows[end]
                    done = lambda r: r[1][qid][1]["reaped_irq"] + r[1][qid][1]["reaped_poll"]
                    stretches.setdefault(qid, []).append((round(b[0] - a[0], 2), done(b) - done(a),
                                                          b[2][qid] - a[2][qid]))
                start = None
    return stretches


def fio_totals(path):
    """(reads + writes completed, [job errors]) from fio's JSON output. With --verify_fatal a block that reads
    back wrong ends its job with EILSEQ (84)."""
    text = Path(path).read_text()
    report = json.loads(text[text.index("{"):])
    jobs = report["jobs"]
    return sum(j["read"]["total_ios"] + j["write"]["total_ios"] for j in jobs), [j["error"] for j in jobs]


def fio_latency(path):
    """(IOPS, p50 us, p99 us) of fio's reads (group reporting: one job)."""
    text = Path(path).read_text()
    read = json.loads(text[text.index("{"):])["jobs"][0]["read"]
    pct = read.get("clat_ns", {}).get("percentile", {})
    return read["iops"], pct.get("50.000000", 0) / 1000, pct.get("99.000000", 0) / 1000

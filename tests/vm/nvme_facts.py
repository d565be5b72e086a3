# SPDX-License-Identifier: Apache-2.0
"""Parsers for the raw facts the guest scripts record (tracefs hists, /proc/interrupts, blk-mq, fio, steps)."""

import json
import re
from pathlib import Path

HIST_ENTRY = re.compile(r"^\{\s*qid:\s*(\d+)\s*\}\s*hitcount:\s*(\d+)", re.M)
NVME_VECTOR = re.compile(r"^nvme(\d+)q(\d+)$")
QUEUE_SPLIT = re.compile(r"(\d+)/(\d+)/(\d+) default/read/poll queues")
INIT_READY = re.compile(r"\[init \+([\d.]+)s\] nvme0n1 ready")
# drivers/nvme/host/pci.c nvme_timeout(): "I/O tag 576 (4240) opcode 0x2 (I/O Cmd) QID 2 timeout, aborting ..."
# (6.12; 6.1 says "I/O 576 QID 2 timeout, aborting"), then "..., reset controller" when the abort did not help.
COMMAND_TIMEOUT = re.compile(r"QID (\d+) timeout, (.*)")


def hist_by_qid(path):
    """{qid: completions} from a `hist:keys=qid` file."""
    return {int(q): int(n) for q, n in HIST_ENTRY.findall(Path(path).read_text())}


def nvme_vectors(path, controller=0):
    """{qid: (irq, interrupts summed over CPUs)} for the controller's vectors in a /proc/interrupts copy."""
    lines = Path(path).read_text().splitlines()
    ncpu = len(lines[0].split())
    vectors = {}
    for line in lines[1:]:
        fields = line.split()
        match = NVME_VECTOR.match(fields[-1]) if fields else None
        if match and int(match.group(1)) == controller:
            counts = [int(c) for c in fields[1:1 + ncpu]]
            vectors[int(match.group(2))] = (int(fields[0].rstrip(":")), sum(counts))
    return vectors


def hardware_queues(path):
    """{qid: cpu_list} from `hctx cpu_list` lines; nvme qid = blk-mq hctx index + 1."""
    queues = {}
    for line in Path(path).read_text().splitlines():
        hctx, _, cpus = line.partition(" ")
        queues[int(hctx) + 1] = cpus.strip()
    return queues


def msi_modes(path):
    """{irq: "msi" or "msix"} from `irq mode` lines of the PCI device's msi_irqs directory."""
    modes = {}
    for line in Path(path).read_text().splitlines():
        irq, _, mode = line.partition(" ")
        modes[int(irq)] = mode.strip()
    return modes


def last_queue_split(path):
    """(default, read, poll) from the last 'N/N/N default/read/poll queues' kernel message, or None."""
    found = QUEUE_SPLIT.findall(Path(path).read_text())
    return tuple(int(n) for n in found[-1]) if found else None


def nvme_timeouts(path):
    """{"by_qid": {qid: commands timed out}, "resets": controller resets they caused, "first": the first such
    kernel line} from an io_run's dmesg-during.txt."""
    by_qid, resets, first = {}, 0, None
    for line in Path(path).read_text().splitlines():
        match = COMMAND_TIMEOUT.search(line)
        if not match:
            continue
        first = first or line.strip()
        if match.group(2).startswith("reset controller"):
            resets += 1
        else:
            qid = int(match.group(1))
            by_qid[qid] = by_qid.get(qid, 0) + 1
    return {"by_qid": by_qid, "resets": resets, "first": first}


def describe_timeouts(timeouts):
    """One phrase for nvme_timeouts(), empty when nothing timed out."""
    if not timeouts["by_qid"] and not timeouts["resets"]:
        return ""
    qids = ", ".join(f"{n} on QID {q}" for q, n in sorted(timeouts["by_qid"].items()))
    return (f"commands timed out in the guest ({qids or 'none aborted'}; {timeouts['resets']} controller "
            f"resets after them; first: {timeouts['first']})")


def timeout_note(io_dir):
    """'; <describe_timeouts>' for the checks of counts of an io_run, empty when its commands all completed:
    a command the emulated device lost is completed by the reset's cancel, never by a CQE, and a reset makes the
    queues pass through a layout without vectors."""
    path = Path(io_dir) / "dmesg-during.txt"
    if not path.exists():
        return ""
    text = describe_timeouts(nvme_timeouts(path))
    return f"; {text}" if text else ""


def fio_reads(path):
    """(completed read I/Os summed over jobs, [job errors]) from fio's JSON output."""
    text = Path(path).read_text()
    report = json.loads(text[text.index("{"):])  # fio may print notes before the JSON
    jobs = report["jobs"]
    return sum(j["read"]["total_ios"] for j in jobs), [j["error"] for j in jobs]


def steps(path):
    """[(name, seconds, status)] from steps.tsv."""
    rows = []
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            name, start, end, status = line.split("\t")
            rows.append((name, round(float(end) - float(start), 2), status))
    return rows


def nvme_ready_uptime(console_log):
    """Guest uptime in seconds when nvme0n1 appeared, from the console log."""
    match = INIT_READY.search(Path(console_log).read_text(errors="replace"))
    return float(match.group(1)) if match else None


def agent_queues(path, controller="nvme0"):
    """{qid: queue} of one controller from `nvme-adaptctl --json queues` (proto3 JSON; int64 fields are strings)."""
    answer = json.loads(Path(path).read_text())
    return {q["id"].get("queue", 0): q for q in answer.get("queues", []) if q["id"]["controller"] == controller}


def policy_modes(policy, queues, controller="nvme0"):
    """{level: mode} of a policy set's controller entries, with `controller`'s entry under its kernel name too:
    the agent keeps an entry set by kernel name under the controller's stable ID (queues' controllerId)."""
    modes = {c["controller"]: c["policy"].get("mode") for c in policy.get("controllers", [])}
    ids = {q.get("controllerId") for q in queues.values() if q.get("controllerId")}
    for stable_id in ids:
        if stable_id in modes and controller not in modes:
            modes[controller] = modes[stable_id]
    return modes


def agent_completions(path, controller="nvme0"):
    """{qid: completions the agent reports} from `nvme-adaptctl --json queues`."""
    return {qid: int(q.get("completions", "0")) for qid, q in agent_queues(path, controller).items()}


def journal_entries(path):
    """The live entries of a journal copied as PATH.json, with PATH.log beside it when the guest copied one:
    journal.json is the last compaction, journal.log the records since ("A" adds a target not held, "D"
    drops one; a torn last line is left out), agent/state/state_store.h."""
    path = Path(path)
    entries = json.loads(path.read_text() or "{}").get("entries", []) if path.exists() else []
    log = path.with_suffix(".log")
    for line in (log.read_text().splitlines() if log.exists() else []):
        try:
            op, entry = line[0], json.loads(line[2:])
        except (IndexError, ValueError):
            break
        key = (entry.get("lever"), entry.get("target"))
        if op == "A" and not any((e.get("lever"), e.get("target")) == key for e in entries):
            entries.append(entry)
        elif op == "D":
            entries = [e for e in entries if (e.get("lever"), e.get("target")) != key]
    return entries


def json_lines(path):
    """The objects of a JSON-lines file (`nvme-adaptctl --json watch`), stopping at a line cut short."""
    events = []
    for line in Path(path).read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return events


def metric_value(path, name, labels):
    """The value of the Prometheus sample `name` that has `labels` (and maybe more) in an exposition text file,
    or None."""
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    for line in Path(path).read_text().splitlines():
        if line.startswith(f"{name}{{") and "} " in line:
            have = set(line[len(name) + 1:line.rindex("} ")].split(","))
            if wanted <= have:
                return float(line.rsplit(" ", 1)[1])
    return None

# SPDX-License-Identifier: Apache-2.0
"""Parsers for what the fabrics test bed's guest script records (tests/vm/guest/fabrics.sh): multi-key tracefs
hists, fio's reads and writes, nvme-cli and sysfs facts of the TCP connection, na-collect's per-layer counts."""

import json
import re
from pathlib import Path

HIST_LINE = re.compile(r"^\{(?P<keys>[^}]*)\}\s*hitcount:\s*(?P<hits>\d+)(?P<vals>.*)$", re.M)
NA_COLLECT_QUEUE = re.compile(r"^queue (?P<key>\S+) (?P<fields>.*)$", re.M)


def _number(text):
    text = text.strip()
    return int(text, 16) if text.startswith("0x") else int(text) if re.fullmatch(r"-?\d+", text) else text


def hist_rows(path):
    """[({key: value}, hitcount, {val: sum})] from a tracefs hist file with any number of keys and values.

    Keys such as `dev` print plain numbers, pointer keys hex (with .hex) or decimal."""
    rows = []
    for m in HIST_LINE.finditer(Path(path).read_text()):
        keys = {}
        for part in m.group("keys").split(","):
            name, _, value = part.partition(":")
            keys[name.strip()] = _number(value)
        vals = {name: int(v) for name, v in re.findall(r"(\w+):\s*(\d+)", m.group("vals"))}
        rows.append((keys, int(m.group("hits")), vals))
    return rows


def hist_by(path, key, where=None):
    """{value of `key`: hitcount} of the rows that match `where` ({key: value})."""
    counts = {}
    for keys, hits, _ in hist_rows(path):
        if where and any(keys.get(k) != v for k, v in where.items()):
            continue
        counts[keys.get(key)] = counts.get(keys.get(key), 0) + hits
    return counts


def fio_io(path):
    """{ios, bytes, errors} summed over jobs and directions (reads and writes) from fio's JSON output."""
    text = Path(path).read_text()
    jobs = json.loads(text[text.index("{"):])["jobs"]
    return {"ios": sum(j[d]["total_ios"] for j in jobs for d in ("read", "write")),
            "bytes": sum(j[d]["io_bytes"] for j in jobs for d in ("read", "write")),
            "errors": [j["error"] for j in jobs]}


def attrs(path):
    """{name: value} of `name: value` lines (the controller's sysfs attributes)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        name, _, value = line.partition(": ")
        out[name] = value.strip()
    return out


def words_file(path):
    """{first word: the rest} of each line (queue-limits.txt, modules.txt)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        first, _, rest = line.partition(" ")
        out[first] = rest.strip()
    return out


def kernel_dev(major_minor):
    """The kernel's dev_t (MKDEV: major << 20 | minor) of a sysfs `dev` value "259:3"."""
    major, minor = (int(n) for n in major_minor.split(":"))
    return major << 20 | minor


def na_collect_queues(path):
    """{queue key: completions} from na-collect --counters output."""
    out = {}
    for m in NA_COLLECT_QUEUE.finditer(Path(path).read_text()):
        fields = dict(w.split("=", 1) for w in m.group("fields").split() if "=" in w)
        out[m.group("key")] = int(fields.get("completions", 0))
    return out


def na_collect_hooks(path):
    return [line.split()[1] for line in Path(path).read_text().splitlines() if line.startswith("hook ")]


def host_state(path):
    """{"controller", "queue_count", "io_poll", "hw_queues", "cntlid"} from a fabrics_host_state file ({} for
    none)."""
    words = Path(path).read_text().split()
    if len(words) < 7:
        return {}
    return {"controller": words[0], **{words[i]: words[i + 1] for i in range(1, len(words) - 1, 2)}}

# SPDX-License-Identifier: Apache-2.0
"""Per-layer checks of one fio run of the fabrics test bed (called by fabrics_test.py).

Layers: host (the TCP controller's I/O queues, nvme_complete_rq with its ctrl_id), target (nvmet's queues,
nvmet_req_init / nvmet_req_complete) and backing (nvme0, the emulated PCIe controller). What each must count:
- host: fio's I/Os times the pieces the block layer splits each into (max_sectors_kb of the fabrics disk);
  the block layer's completions on the path disk agree;
- target: per qid, what the host completed on the same qid (every host request is one capsule), and as
  many submissions as completions;
- backing: the bytes fio moved (block_rq_complete's sectors on nvme0n1), its nvme_complete_rq count equal to
  the block layer's (nvmet's bios are split and merged there, so only the bytes are fio's).
All within 1 %; queues of the admin queue (qid 0: keep-alive, Connect) are left out of the I/O counts."""

import math

import fabrics_facts as ff

TOLERANCE = 0.01


def _within(a, b):
    return abs(a - b) <= TOLERANCE * max(a, b, 1)


def _block_size_kb(run):
    size = run.split("/")[-1].split("-")[0]
    return int(size[:-1]) * (1024 if size.endswith("m") else 1)


def _io_only(by_qid):
    return {q: n for q, n in by_qid.items() if isinstance(q, int) and q > 0}


def check_run(checks, d, label, info, hipri=False):
    fio = ff.fio_io(d / "fio.json")
    host = _io_only(ff.hist_by(d / "hist-nvme.txt", "qid", {"ctrl_id": info["instance"]}))
    backing = _io_only(ff.hist_by(d / "hist-nvme.txt", "qid", {"ctrl_id": 0}))
    target = _io_only(ff.hist_by(d / "hist-req_complete.txt", "qid"))
    target_init = _io_only(ff.hist_by(d / "hist-req_init.txt", "qid"))
    target_ctrls = sorted({k.get("ctrl") for k, _, _ in ff.hist_rows(d / "hist-req_complete.txt") if "ctrl" in k})
    block = {k.get("dev"): (hits, vals.get("nr_sector", 0)) for k, hits, vals in ff.hist_rows(d / "hist-block.txt")}
    # A hidden multipath path disk has no dev in sysfs: its requests are the block rows that are not nvme0n1's
    # (the multipath head is bio-based and completes no request of its own).
    host_devs = [info["dev"]["host"]] if info["dev"]["host"] is not None else [
        dev for dev in block if dev not in (info["dev"]["backing"], 0)]
    host_block = (sum(block[d][0] for d in host_devs if d in block), sum(block[d][1] for d in host_devs if d in block))
    backing_block = block.get(info["dev"]["backing"], (0, 0))
    limits = info["max_sectors_kb"]
    pieces = math.ceil(_block_size_kb(label) / min(limits["head"], limits["path"]))
    host_total, target_total, backing_total = sum(host.values()), sum(target.values()), sum(backing.values())
    run = {"fio": fio, "pieces_per_io": pieces,
           "layers": {"host": {"by_qid": host, "block_requests": host_block[0]},
                      "target": {"by_qid": target, "submitted_by_qid": target_init, "controllers": len(target_ctrls)},
                      "backing": {"by_qid": backing, "block_requests": backing_block[0],
                                  "block_bytes": backing_block[1] * 512}}}
    checks.check(f"{label}: fio ran", fio["ios"] > 0 and not any(fio["errors"]),
                 f"{fio['ios']} I/Os, {fio['bytes']} bytes, errors {fio['errors']}")
    checks.check(f"{label}: host completions = fio's I/Os x {pieces} within 1 %", _within(host_total, fio["ios"] * pieces),
                 f"host {host_total} per qid {host} vs fio {fio['ios']} x {pieces}")
    checks.check(f"{label}: host nvme completions = block layer's on the path disk",
                 _within(host_total, host_block[0]), f"nvme {host_total} vs block {host_block[0]}")
    checks.check(f"{label}: target completions per qid = host's",
                 set(target) == set(host) and all(_within(target[q], host[q]) for q in host),
                 f"target {target} vs host {host}")
    checks.check(f"{label}: target submissions = completions", _within(sum(target_init.values()), target_total),
                 f"nvmet_req_init {sum(target_init.values())} vs nvmet_req_complete {target_total}")
    checks.check(f"{label}: backing bytes = fio's within 1 %", _within(backing_block[1] * 512, fio["bytes"]),
                 f"block_rq_complete on nvme0n1: {backing_block[1] * 512} bytes vs fio {fio['bytes']}")
    checks.check(f"{label}: backing nvme completions = block layer's on nvme0n1",
                 _within(backing_total, backing_block[0]) and backing_total > 0,
                 f"nvme0 {backing_total} per qid {backing} vs block {backing_block[0]}")
    _check_collector(checks, d, label, info, {"host": host, "target": target, "backing": backing}, run)
    if hipri:
        split = info["default_read_poll"]
        poll_qids = set(range(split[0] + split[1] + 1, split[0] + split[1] + split[2] + 1))
        on_poll = sum(n for q, n in host.items() if q in poll_qids)
        checks.check(f"{label}: polled reads on the host's poll queues {sorted(poll_qids)}",
                     _within(on_poll, host_total) and host_total > 0, f"host per qid {host}")
    return run


# The agent's collector (tests/bpf/na-collect: the daemon's OpenCollector) keys each layer's queues so.
COLLECTOR_KEY = {"host": "kernel:nvme{instance}:q", "target": "nvmet:c{cntlid}:q", "backing": "kernel:nvme0:q"}
FABRICS_HOOKS = ("tp_btf/nvme_complete_rq", "tp_btf/nvmet_req_complete")


def _check_collector(checks, d, label, info, hists, run):
    """na-collect's per-queue completions of each layer against that layer's tracefs hist, within 1 %."""
    queues = ff.na_collect_queues(d / "na-collect.txt")
    hooks = ff.na_collect_hooks(d / "na-collect.txt")
    checks.check(f"{label}: collector attached the fabrics hooks", all(h in hooks for h in FABRICS_HOOKS),
                 f"hooks {hooks}")
    for layer, hist in hists.items():
        prefix = COLLECTOR_KEY[layer].format(instance=info["instance"], cntlid=info["cntlid"])
        counted = {int(k[len(prefix):]): n for k, n in queues.items() if k.startswith(prefix) and int(k[len(prefix):]) > 0}
        run["layers"][layer]["collector_by_qid"] = counted
        qids = sorted(set(hist) | set(counted))
        checks.check(f"{label}: collector's {layer} queues = the hist per qid within 1 %",
                     bool(qids) and all(_within(counted.get(q, 0), hist.get(q, 0)) for q in qids),
                     ", ".join(f"{prefix}{q}: collector {counted.get(q, 0)} hist {hist.get(q, 0)}" for q in qids))


def layer_summary(summary):
    """Per-layer queue counts of each connection: layers host, target, backing, transport tcp for the first two."""
    layers = {"host": {"transport": "tcp", "queues": {}}, "target": {"transport": "tcp", "queues": {}},
              "backing": {"transport": "pcie", "controller": "nvme0", "queues": {}}}
    for conn, info in summary["connections"].items():
        layers["host"]["controller"] = info["controller"]
        layers["host"]["queues"][conn] = info["queue_count"]
        layers["target"]["queues"][conn] = len(info["target_connect_qids"])
        layers["backing"]["queues"][conn] = summary.get("backing_queue_count")
        busy = {layer: sorted({q for r, run in summary["runs"].items() if r.startswith(conn + "/")
                               for q in run["layers"][layer]["by_qid"]}) for layer in layers}
        for layer in layers:
            layers[layer].setdefault("io_qids_with_completions", {})[conn] = busy[layer]
    return layers

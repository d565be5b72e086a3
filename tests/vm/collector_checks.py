# SPDX-License-Identifier: Apache-2.0
"""Host-side check of the guest's collector-counts step (tests/vm/guest/nvme_e2e.sh): tests/bpf/na-collect
attached during an io_run, once with the kernel nvme programs per batch (fentry/fexit on nvme_irq and nvme_poll,
each reap counted from the queue's CQ head) and once per completion (the nvme_sq tracepoint). Each
must count, per I/O queue, exactly the completions the tracefs hist of nvme_complete_rq counted in the same
run, on the interrupt queues (libaio) and the poll queue (io_uring hipri) alike."""

import nvme_facts as facts

PER_BATCH_HOOKS = ("fentry/nvme_irq", "fexit/nvme_irq", "fentry/nvme_poll", "fexit/nvme_poll")
PER_COMPLETION_HOOKS = ("tp_btf/nvme_sq", "raw_tp/nvme_sq", "tracepoint/nvme/nvme_sq")


def _na_collect(path):
    """(hooks, {qid: completions} of nvme0's kernel queues) from na-collect --counters output."""
    hooks, counts = [], {}
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] == ["hook"]:
            hooks.append(words[1])
        elif words[:1] == ["queue"] and words[1].startswith("kernel:nvme0:q"):
            fields = dict(word.split("=", 1) for word in words[2:])
            counts[int(words[1].rsplit(":q", 1)[1])] = int(fields["completions"])
    return hooks, counts


def check_collector_counts(checks, results, summary):
    summary["collector_counts"] = {}
    for path, wanted in (("per-batch", PER_BATCH_HOOKS), ("per-completion", PER_COMPLETION_HOOKS)):
        hooks, counted = _na_collect(results / "collector" / path / "na-collect.txt")
        hist = {q: n for q, n in facts.hist_by_qid(results / "io" / f"collector-{path}" / "hist-qid.txt").items()
                if q > 0}
        io = {q: n for q, n in counted.items() if q > 0}
        qids = sorted(q for q in set(hist) | set(io) if hist.get(q, 0) or io.get(q, 0))
        summary["collector_counts"][path] = {"hooks": hooks, "collector_by_qid": io, "hist_by_qid": hist}
        if path == "per-batch":
            hooks_ok = all(h in hooks for h in wanted) and not any(h in PER_COMPLETION_HOOKS for h in hooks)
        else:
            hooks_ok = any(h in hooks for h in wanted)
        checks.check(f"collector {path}: its nvme hooks attached", hooks_ok, f"hooks {hooks}")
        checks.check(f"collector {path}: completions per I/O queue equal the tracefs hist",
                     len(qids) >= 2 and all(io.get(q, 0) == hist.get(q, 0) for q in qids),
                     (", ".join(f"q{q}: collector {io.get(q, 0)} hist {hist.get(q, 0)}" for q in qids) or "no I/O")
                     + facts.timeout_note(results / "io" / f"collector-{path}"))

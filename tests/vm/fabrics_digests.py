# SPDX-License-Identifier: Apache-2.0
"""Host-side checks of the digests step of the fabrics test bed (one kernel: DIGESTS_KERNEL). The lever's
connections run header and data digest, listed in nvme-cli's JSON config the agent reads (the kernel shows
neither digest anywhere); guest/icreq_sniff.py recorded each queue's ICReq and ICResp on the wire. Every
queue the host connected from the lever connection's connect to the end of the crash step (the lever's
switch, the SIGTERM restore, the restore after kill -9 between the disconnect and the connect) negotiated
both digests, and the target granted them."""

from pathlib import Path

# The kernel whose fabrics test connects with digests and kills the agent between the lever's disconnect and
# connect: Debian 12's own (no NVMe/TCP TLS in 6.1, and the machine's nvme-cli 2.3 has no --tls either).
DIGESTS_KERNEL = "6.1"
# The steps whose connects are counted, and the least ICReqs each makes with one CPU: the lever connection
# (admin + one I/O queue), the switch to poll (+ a poll queue), the SIGTERM restore, the crash step's restore.
PHASES = (("agent-fabrics", 2), ("agent-reconnect-poll", 3), ("agent-stop-restores", 2), ("agent-crash-restores", 2))


def _step_spans(results):
    spans = {}
    for line in (results / "steps.tsv").read_text().splitlines():
        name, start, end, _ = line.split("\t")
        spans[name] = (float(start), float(end))
    return spans


def _pdus(path):
    rows = []
    for line in Path(path).read_text().splitlines():
        uptime, kind, sport, dport, hdgst, ddgst = line.split()
        rows.append({"uptime": float(uptime), "kind": kind, "sport": int(sport), "dport": int(dport),
                     "digests": (int(hdgst), int(ddgst))})
    return rows


def check_digests(checks, results, summary):
    d = results / "fabrics" / "digests"
    spans = _step_spans(results)
    pdus = _pdus(d / "pdus.txt")
    out = summary.setdefault("digests", {"pdus": len(pdus)})
    for step, least in PHASES:
        start, end = spans.get(step, (0.0, -1.0))
        requests = [p for p in pdus if p["kind"] == "icreq" and start <= p["uptime"] <= end]
        answers = [p for p in pdus if p["kind"] == "icresp" and start <= p["uptime"] <= end]
        out[step] = {"icreq": [p["digests"] for p in requests], "icresp": [p["digests"] for p in answers]}
        checks.check(f"digests: {step}: every queue connected asked for header and data digest, the target granted both",
                     len(requests) >= least and len(answers) == len(requests) and
                     all(p["digests"] == (1, 1) for p in requests + answers),
                     f"ICReq digests {out[step]['icreq']}, ICResp {out[step]['icresp']} (at least {least} queues)")
    plain = [p for p in pdus if p["digests"] != (1, 1)]
    checks.check("digests: no queue of the lever's connections ran without them (the whole run)",
                 bool(pdus) and not plain, f"{len(pdus)} PDUs, without both digests: {plain[:4]}")

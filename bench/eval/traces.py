# SPDX-License-Identifier: Apache-2.0
"""Reads what nvme-adaptd --record-windows writes: the trace (engine inputs, agent/engine/trace.h) and
PATH.decisions (one formatted decision per line). Times are CLOCK_MONOTONIC nanoseconds, as Python's
time.monotonic_ns()."""
import collections
import dataclasses

INTERRUPT, POLL = "interrupt", "poll"


@dataclasses.dataclass
class Window:
    queue: str
    mode: str
    completions: int
    start: int
    end: int
    pace_miss: bool


@dataclasses.dataclass
class Decision:
    queue: str
    at: int
    before: str
    after: str
    reason: str
    state: str
    fields: dict


def queue_pid(name):
    """uvnvme queues are named uvnvme:PID:CTRL:qQID."""
    parts = name.split(":")
    return int(parts[1]) if len(parts) == 4 and parts[0] == "uvnvme" and parts[1].isdigit() else None


def parse_trace(text):
    windows = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "window":
            continue
        if len(words) < 6:
            raise ValueError(f"trace line {number}: window line too short: {line!r}")
        windows.append(Window(words[1], words[2], int(words[3]), int(words[4]), int(words[5]),
                              any(w.startswith("miss=") for w in words[6:])))
    return windows


def parse_decisions(text):
    decisions = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        transition = next((w for w in words[1:] if "->" in w), None)
        # key=value words, and bare flags (backoff, shadow) as True
        fields = dict(w.split("=", 1) if "=" in w else (w, True) for w in words[1:] if w != transition)
        if transition is None or "at" not in fields or "reason" not in fields:
            raise ValueError(f"decisions line {number}: not a decision: {line!r}")
        before, after = transition.split("->")
        decisions.append(Decision(words[0], int(fields.pop("at")), before, after, fields.pop("reason"),
                                  fields.pop("state", ""), fields))
    return decisions


def deferred(decision):
    """The node layer's reason word when it deferred this try (nothing was applied), else None."""
    return decision.fields.get("deferred")


def mode_steps(decisions, queue, start_mode=INTERRUPT):
    """[(time, mode)] of one queue: the mode it entered at each switch, in order (deferred tries left out)."""
    steps, mode = [], start_mode
    for d in decisions:
        if d.queue == queue and d.after != mode and not deferred(d):
            mode = d.after
            steps.append((d.at, mode))
    return steps


def poll_time_share(decisions, queue, t_from, t_to):
    """Share of [t_from, t_to] the queue spent in poll mode according to its switches."""
    if t_to <= t_from:
        return None
    mode, since, polled = INTERRUPT, t_from, 0
    for at, after in mode_steps(decisions, queue):
        if at <= t_from:
            mode = after
            continue
        if at >= t_to:
            break
        if mode == POLL:
            polled += at - since
        mode, since = after, at
    if mode == POLL:
        polled += t_to - since
    return polled / (t_to - t_from)


def adaptive_summary(windows, decisions, pid, t_from, t_to):
    """What the engine did with the queues of one uvnvme process between t_from and t_to."""
    queues = sorted({w.queue for w in windows if queue_pid(w.queue) == pid} |
                    {d.queue for d in decisions if queue_pid(d.queue) == pid})
    span = [d for d in decisions if d.queue in queues and t_from <= d.at <= t_to]
    mine = [d for d in span if not deferred(d)]  # a deferred try is no try: nothing was switched
    reasons = collections.Counter(d.reason for d in mine)
    shares = [poll_time_share(decisions, q, t_from, t_to) for q in queues]
    shares = [s for s in shares if s is not None]
    in_span = [w for w in windows if w.queue in queues and t_from <= w.end <= t_to]
    completions = collections.Counter()
    for w in in_span:
        completions[w.mode] += w.completions
    total = sum(completions.values())
    return {
        "queues": len(queues),
        "poll_time_share": sum(shares) / len(shares) if shares else None,
        "switches": sum(1 for d in mine if d.before != d.after),
        "tries": reasons["window_fast"],
        "polling_windows_kept": reasons["poll_window_faster"],
        "failed_tries": {r: reasons[r] for r in FAILED if reasons[r]},
        "failures": failed_tries(decisions, set(queues), t_from, t_to),
        "backoffs": sum(1 for d in mine if d.fields.get("backoff") is True),
        "max_poll_windows_reached": reasons["max_poll_windows"],
        "decisions_by_reason": dict(reasons),
        "deferred_tries": dict(collections.Counter(deferred(d) for d in span if deferred(d))),
        "node_ended_runs": reasons["node_ended"],
        "recorded_windows": len(in_span),
        "poll_completion_share_of_recorded_windows": completions[POLL] / total if total else None,
    }


FAILED = ("behind_pace", "not_faster", "stalled")


def failed_tries(decisions, queues, t_from, t_to):
    """Each failed polling try: why, at which completion k of its window, measured against the limit, and how
    long after the switch to poll (the try's start) and after how many kept polling windows."""
    out, started, kept = [], {}, {}
    for d in decisions:
        if d.queue not in queues or deferred(d):
            continue
        if d.reason == "window_fast" and d.after == POLL:
            started[d.queue], kept[d.queue] = d.at, 0
        elif d.reason == "poll_window_faster":
            kept[d.queue] = kept.get(d.queue, 0) + 1
        elif d.reason in FAILED and t_from <= d.at <= t_to:
            out.append({"reason": d.reason, "k": int(d.fields.get("k", 0)),
                        "measured_us": int(d.fields.get("measured", 0)) / 1e3,
                        "limit_us": int(d.fields.get("limit", 0)) / 1e3,
                        "since_try_ms": (d.at - started[d.queue]) / 1e6 if d.queue in started else None,
                        "kept_windows_before": kept.get(d.queue, 0)})
    return out


def rates(windows, queue, origin):
    """[(seconds since origin at window middle, completions per second, mode)] of one queue's windows."""
    out = []
    for w in windows:
        if w.queue == queue and w.end > w.start:
            out.append(((w.start + w.end) / 2e9 - origin / 1e9, w.completions * 1e9 / (w.end - w.start), w.mode))
    return out

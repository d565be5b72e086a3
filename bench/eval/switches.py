#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The switch timelines of a window trace (nvme-adaptd --record-windows; the evaluation's eval.trace): one
`switch` line per applied switch, written once the engine's first verdict on the new mode was in. Prints,
per lever and direction, how long each step took (medians and 90th percentiles, in microseconds after the
agent had the decision), where the try's clock started (the driver's mode probe or the lever's return),
and the verdicts; then a few real timelines. --json writes the same as one object.

Usage: bench/eval/switches.py TRACE [--json OUT] [--examples N]"""
import argparse
import json
import statistics
import sys

STEPS = ("journaled", "published", "requested", "acked", "effect", "first", "at")


def parse_switch(line):
    """A `switch` line as a dict: queue, generation, from, to, and every key=value (times as ints)."""
    words = line.split()
    if len(words) < 4 or words[0] != "switch" or "->" not in words[3]:
        raise ValueError(f"not a switch line: {line[:80]}")
    entry = {"queue": words[1], "generation": int(words[2])}
    entry["from"], entry["to"] = words[3].split("->")
    for word in words[4:]:
        key, _, value = word.partition("=")
        value = value.lstrip("+")
        entry[key] = int(value) if value.lstrip("-").isdigit() else value
    return entry


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None


def summarize(lines):
    """Groups by (lever, from->to): step medians and p90 in us, effect sources, verdicts."""
    groups = {}
    for line in lines:
        if not line.startswith("switch "):
            continue
        s = parse_switch(line)
        groups.setdefault(f"{s['lever']} {s['from']}->{s['to']}", []).append(s)
    out = {}
    for name, switches in sorted(groups.items()):
        steps = {}
        for step in STEPS:
            values = [s[step] / 1000 for s in switches if isinstance(s.get(step), int) and s[step] > 0]
            if values:
                steps[step] = {"median_us": round(statistics.median(values), 1), "p90_us": round(percentile(values, 0.9), 1)}
        first_after_effect = [(s["first"] - s["effect"]) / 1000 for s in switches
                              if isinstance(s.get("first"), int) and s["first"] > 0 and s.get("effect", 0) > 0]
        verdicts = {}
        for s in switches:
            verdicts[s.get("verdict", "none")] = verdicts.get(s.get("verdict", "none"), 0) + 1
        out[name] = {
            "switches": len(switches),
            "effect_by": {by: sum(1 for s in switches if s.get("by") == by) for by in ("driver", "lever")},
            "steps_after_decision": steps,
            "first_completion_after_effect_us": {"median": round(statistics.median(first_after_effect), 1),
                                                 "p90": round(percentile(first_after_effect, 0.9), 1)}
            if first_after_effect else None,
            "verdicts": dict(sorted(verdicts.items(), key=lambda kv: -kv[1])),
        }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--json", default=None)
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    try:
        with open(args.trace) as f:
            lines = f.read().splitlines()
    except OSError as error:
        sys.exit(f"switches: {error}")
    summary = summarize(lines)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    for name, group in summary.items():
        print(f"{name}: {group['switches']} switches, effect by {group['effect_by']}")
        for step, value in group["steps_after_decision"].items():
            print(f"  {step:10s} +{value['median_us']:>10.1f} us median, +{value['p90_us']:>10.1f} us p90")
        if group["first_completion_after_effect_us"]:
            first = group["first_completion_after_effect_us"]
            print(f"  first completion after the effect: {first['median']} us median, {first['p90']} us p90")
        print(f"  verdicts: {group['verdicts']}")
    examples = [line for line in lines if line.startswith("switch ")][:args.examples]
    if examples:
        print("examples:")
        for line in examples:
            print("  " + line)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints one table over every BUILD/bench-results/*.json: Google Benchmark files show each benchmark's
counters; other files (written by the project's own benchmark drivers) show their top-level numbers and
the 'summary' object if they have one."""
import json
import pathlib
import sys


def fmt(value):
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def rows_for(path):
    data = json.loads(path.read_text())
    if isinstance(data, dict) and "benchmarks" in data and "context" in data:
        for bench in data["benchmarks"]:
            if bench.get("run_type") == "aggregate" and bench.get("aggregate_name") != "median":
                continue
            for key in ("windows_per_second", "items_per_second", "real_time"):
                if key in bench:
                    unit = bench.get("time_unit", "") if key == "real_time" else "/s"
                    yield path.stem, bench["name"], key, f"{fmt(bench[key])} {unit}".strip()
                    break
            for key in ("real_time", "exposition_bytes_per_queue"):  # metrics_bench: the scrape's time and size
                if "exposition_bytes_per_queue" in bench and key in bench:
                    yield path.stem, bench["name"], key, fmt(bench[key]) + (" " + bench.get("time_unit", "") if key == "real_time" else " B")
        return
    summary = data.get("summary", data) if isinstance(data, dict) else {}
    for key, value in summary.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            yield path.stem, "", key, fmt(value)


def main():
    results = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build/bench-results")
    rows = []
    for path in sorted(results.glob("*.json")):
        try:
            rows.extend(rows_for(path))
        except (ValueError, OSError) as error:
            rows.append((path.stem, "", "error", str(error)))
    widths = [max(len(str(r[i])) for r in rows + [("file", "benchmark", "metric", "value")]) for i in range(4)]
    line = "  ".join("{:<%d}" % w for w in widths)
    print("\n" + line.format("file", "benchmark", "metric", "value"))
    print(line.format(*("-" * w for w in widths)))
    for row in rows:
        print(line.format(*row))
    print(f"\nresults: {results}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The kernel's real-time bandwidth limit, lifted for the duration of a benchmark.

A SCHED_FIFO thread that keeps its CPU busy (uvnvme's emulated controller, --controller-rt) is held by
kernel.sched_rt_runtime_us (default 950000 of every sched_rt_period_us = 1 s): once it used 95 % of a
period the kernel stops it for the rest, and the emulated device stalls for about 40 ms once a second.
A real device never does that. `lifted()` sets the limit to -1 (none) for its duration and puts the
previous value back on exit, also when the process is ended by SIGINT or SIGTERM (it installs handlers
that raise, so the `finally` runs; the previous handlers are put back afterwards).

    import rt_budget
    with rt_budget.lifted() as rt:
        ...                      # run the load
    result["rt_budget"] = rt     # {"sched_rt_runtime_us_before": 950000, "lifted": True, ...}

Without root, or where /proc/sys is read-only, nothing changes: the dict says "lifted": False and why
("reason"). Run as a script it lifts the limit around a command: bench/rt_budget.py CMD [ARGS...]."""
import contextlib
import sys

import signal_guard  # noqa: E402  (bench/signal_guard.py, beside this file)

PATH = "/proc/sys/kernel/sched_rt_runtime_us"


def read(path=PATH):
    with open(path) as f:
        return int(f.read().strip())


@contextlib.contextmanager
def lifted(path=PATH):
    """Sets `path` (kernel.sched_rt_runtime_us) to -1 for the duration; yields what was done."""
    info = {"sysctl": "kernel.sched_rt_runtime_us"}
    try:
        before = read(path)
    except (OSError, ValueError) as error:
        info.update(lifted=False, reason=f"cannot read {path}: {error}")
        yield info
        return
    info["sched_rt_runtime_us_before"] = before
    with signal_guard.value_for_block(path, -1, before, info, "lifted", "rt_budget",
                                      already="already -1 (no limit) before the run; left as it was",
                                      refused=f"real-time threads keep the {before} us per period limit"):
        yield info

def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    command = sys.argv[2:] if sys.argv[1] == "--" else sys.argv[1:]
    return signal_guard.run_inside(lifted(), "rt_budget", command)


if __name__ == "__main__":
    sys.exit(main())

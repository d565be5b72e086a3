#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Halt polling of the guest's idle CPUs (the haltpoll cpuidle governor), set for the duration of a benchmark.

On these virtual machines an idle CPU halts at once (guest_halt_poll_ns 0), and waking a thread that sleeps
there costs the waker an inter-processor interrupt, a hypervisor exit: the emulated device thread pays it for
every interrupt it raises (its eventfd write, 2-12 us here, `signal_write_p99_us` in uvnvme-load's JSON),
and completions that fall due meanwhile are posted late. A real device's MSI-X write costs it nothing. With
halt polling an idle CPU spins for up to guest_halt_poll_ns before halting, and a wakeup in that time needs
no interrupt (the idle loop sees it). `polling(ns)` sets that for its duration and puts the previous value
back on exit, also on SIGINT, SIGTERM and SIGHUP (bench/signal_guard.py).

    import host_idle
    with host_idle.polling(200_000) as idle:
        ...                      # run the load
    result["host_idle"] = idle   # {"guest_halt_poll_ns_before": 0, "guest_halt_poll_ns": 200000, "set": True}

Where the governor is absent (bare metal, another cpuidle governor) or without root nothing changes: the dict
says "set": False and why ("reason"). Run as a script: bench/host_idle.py NS CMD [ARGS...]."""
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import signal_guard  # noqa: E402

PATH = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"
GOVERNOR = "/sys/devices/system/cpu/cpuidle/current_governor_ro"


def _read(path):
    with open(path) as f:
        return f.read().strip()


@contextlib.contextmanager
def polling(ns, path=PATH):
    """Sets `path` (the haltpoll governor's guest_halt_poll_ns) to `ns` for the duration; yields what was done."""
    info = {"parameter": "haltpoll.guest_halt_poll_ns", "guest_halt_poll_ns": ns}
    try:
        before = int(_read(path))
    except (OSError, ValueError) as error:
        info.update(set=False, reason=f"cannot read {path} ({error}): no haltpoll governor here")
        yield info
        return
    info["guest_halt_poll_ns_before"] = before
    try:
        info["governor"] = _read(GOVERNOR)
    except OSError:
        pass
    with signal_guard.value_for_block(path, ns, before, info, "set", "host_idle",
                                      already="already set before the run; left as it was",
                                      refused=f"idle CPUs keep halting after {before} ns"):
        yield info

def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__.strip().splitlines()[-1])
    return signal_guard.run_inside(polling(int(sys.argv[1])), "host_idle", sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""How busy the shared machine is with work other than the evaluation's. The load average cannot tell: the
evaluation's own spinning reapers and real-time device threads count in it for a minute after they ran.
/proc/stat's busy time minus the CPU of the processes the evaluation runs can."""
import os
import subprocess
import sys
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def busy_cpu_seconds():
    """CPU seconds spent by every CPU on anything but idle and iowait since boot."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    if fields[0] != "cpu":
        raise OSError("/proc/stat: first line is not the cpu total")
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def cpu_pressure_some_seconds():
    """Seconds some runnable task waited for a CPU since boot (PSI cpu some total); None without PSI."""
    try:
        with open("/proc/pressure/cpu") as pressure:
            for line in pressure:
                if line.startswith("some "):
                    return int(line.rsplit("total=", 1)[1]) / 1e6
    except OSError:
        return None
    raise OSError("/proc/pressure/cpu: no 'some' line")


def own_cpu_seconds():
    """This script's own CPU and that of its waited-for children so far."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Sampler:
    """Busy CPU over an interval, less what the evaluation's processes used: other work, in CPUs."""

    def __init__(self):
        self.wall, self.busy, self.own = time.monotonic(), busy_cpu_seconds(), own_cpu_seconds()
        self.pressure = cpu_pressure_some_seconds()

    def pressure_some_share(self):
        """Share of the interval in which some runnable task waited for a CPU (PSI); None without PSI."""
        now = cpu_pressure_some_seconds()
        wall = time.monotonic() - self.wall
        return None if now is None or self.pressure is None or wall <= 0 else (now - self.pressure) / wall

    def other_cpus(self, evaluation_cpu_seconds=0.0):
        """evaluation_cpu_seconds: CPU of evaluation processes that are not children waited for (the agent)."""
        wall = time.monotonic() - self.wall
        busy = busy_cpu_seconds() - self.busy
        own = own_cpu_seconds() - self.own
        return max(0.0, busy - own - evaluation_cpu_seconds) / wall if wall > 0 else None


def wait_until_quiet(agent_cpu_seconds, threshold_cpus, max_wait_s, probe_s=1.0):
    """Waits until other work uses at most threshold_cpus over a probe of probe_s, or max_wait_s passed.
    Returns (seconds waited, other CPUs of the last probe). agent_cpu_seconds: a callable (the idle agent)."""
    started = time.monotonic()
    while True:
        sampler, agent_before = Sampler(), agent_cpu_seconds()
        time.sleep(probe_s)
        other = sampler.other_cpus(agent_cpu_seconds() - agent_before)
        waited = time.monotonic() - started
        if other <= threshold_cpus or waited >= max_wait_s:
            return waited, other


def placement(load=None):
    """uvnvme-load arguments: the emulated devices get the last CPU, SCHED_FIFO (as bench/uvnvme_bench.py):
    they run on time whatever the reapers do, as hardware would. The reapers get the other CPUs. With a CPU
    of its own the device runs on uvnvme-load's faithful clock (--device-clock auto chooses it when each
    controller thread has a CPU to itself, else the sleeping clock). load: the uvnvme-load binary; if
    given and it has no --device-clock option (a build older than the option), the option is left out."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return []
    args = ["--controller-cpus", str(cpus[-1]), "--host-cpus", ",".join(map(str, cpus[:-1])), "--controller-rt"]
    if load is None or has_option(load, "--device-clock"):
        # auto: the faithful clock where each controller thread has the CPU to itself (one device), the
        # sleeping clock where several share it (spinning real-time threads on one CPU starve each other).
        args += ["--device-clock", "auto"]
    return args


def has_option(binary, option):
    """Whether `binary --help` mentions `option`."""
    run = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    return option in run.stdout + run.stderr


def hog(placement_args):
    """A CPU hog beside the load: a nice-0 busy loop on the reapers' first CPU (placement()'s --host-cpus; any CPU
    when there is no placement), until killed. Work of another application that competes with them."""
    cpus = sorted(os.sched_getaffinity(0))
    if "--host-cpus" in placement_args:
        cpus = [int(placement_args[placement_args.index("--host-cpus") + 1].split(",")[0])]
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {cpus[0]}))

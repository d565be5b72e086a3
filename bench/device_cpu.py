#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The emulated device's CPU, kept free of other work for the duration of a benchmark.

uvnvme's device thread runs SCHED_FIFO on a CPU of its own. Kernels from 6.12 on reserve time for ordinary
tasks on a CPU a real-time task starves (the fair server: up to 50 ms per second, in one piece): whenever an
ordinary task is runnable on the device's CPU, the device stops for as long as that task runs, up to 50 ms.
Lifting kernel.sched_rt_runtime_us (rt_budget.py) does not change that. So nothing else may be runnable there.

`exclusive(cpu)` moves every other task (each thread of every user process, and every kernel thread whose
affinity can change) off `cpu` for its duration and puts every affinity back on exit, also on SIGINT,
SIGTERM and SIGHUP (its handlers raise so the `finally` runs; the previous handlers are put back). Tasks
whose affinity cannot change (per-CPU kernel threads: PF_NO_SETAFFINITY, or bound to `cpu` alone) are
skipped; tasks the kernel refuses (EPERM without root, EINVAL) are counted. Tasks that other processes
start meanwhile inherit their parent's narrowed mask (a build's new compilers stay off `cpu`); on exit those
still running with exactly their parent's narrowed mask get the parent's original one.

The calling process is left as it is, so what it starts inside the context may still use `cpu`: uvnvme-load
with --controller-cpus and --host-cpus puts its device threads there and every other thread of its own on
the host CPUs itself. Start anything else that runs during the benchmark (the agent) on the host CPUs:
`subprocess.Popen(..., preexec_fn=device_cpu.on_cpus(record["host_cpus"]))`.

    import device_cpu
    with device_cpu.exclusive(cpu) as record:
        ...                            # run the load
    result["device_cpu"] = record      # {"cpu": 1, "moved": 412, "refused": 0, ...}

Run as a script it keeps a CPU free around a command: bench/device_cpu.py CPU CMD [ARGS...]."""
import contextlib
import errno
import os
import subprocess
import sys

import signal_guard  # noqa: E402  (bench/signal_guard.py, beside this file)

PF_KTHREAD = 0x00200000
PF_NO_SETAFFINITY = 0x04000000
EXAMPLES = 8  # refusals named in the record


def on_cpus(cpus):
    """A preexec_fn for subprocess: the child (and every thread it creates) runs on `cpus` only."""
    cpus = set(cpus)
    return lambda: os.sched_setaffinity(0, cpus)


def _tasks():
    """(tgid, tid) of every task now."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for tid in os.listdir(f"/proc/{entry}/task"):
                yield int(entry), int(tid)
        except OSError:
            continue  # exited


def _stat(tgid, tid):
    """(comm, flags, start time) of a task, or None once it exited."""
    try:
        with open(f"/proc/{tgid}/task/{tid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, int(fields[6]), int(fields[19])  # flags is field 9, starttime field 22 of proc(5)


def _parent(tgid):
    try:
        with open(f"/proc/{tgid}/status") as f:
            for line in f:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _move_off(cpu, own, only, saved, record, refused_seen):
    """One pass over every task (of the processes `only`, if given); returns how many it moved."""
    moved = 0
    for tgid, tid in _tasks():
        if tgid == own or tid in saved or tid in refused_seen or (only is not None and tgid not in only):
            continue
        stat = _stat(tgid, tid)
        if stat is None:
            continue
        comm, flags, start = stat
        try:
            mask = os.sched_getaffinity(tid)
        except OSError:
            continue
        if cpu not in mask:
            record["already_off"] += 1
            refused_seen.add(tid)  # nothing to do; not looked at again
            continue
        kthread = bool(flags & PF_KTHREAD)
        if (kthread and flags & PF_NO_SETAFFINITY) or mask == {cpu}:
            record["skipped_per_cpu_kthreads" if kthread else "skipped_bound_to_cpu"] += 1
            refused_seen.add(tid)
            continue
        try:
            os.sched_setaffinity(tid, mask - {cpu})
        except ProcessLookupError:
            continue
        except OSError as error:
            record["refused"] += 1
            refused_seen.add(tid)
            if len(record["refused_examples"]) < EXAMPLES:
                record["refused_examples"].append(f"{comm} ({tid}): {errno.errorcode.get(error.errno, error.errno)}")
            continue
        saved[tid] = (tgid, start, mask)
        record["moved_kernel_threads" if kthread else "moved_user_threads"] += 1
        moved += 1
    return moved


def _restore(cpu, own, saved, record):
    for tid, (tgid, start, mask) in saved.items():
        stat = _stat(tgid, tid)
        if stat is None or stat[2] != start:
            record["exited"] += 1
            continue
        try:
            os.sched_setaffinity(tid, mask)
            record["restored"] += 1
        except ProcessLookupError:
            record["exited"] += 1
        except OSError as error:
            record["restore_failed"] += 1
            print(f"device_cpu: could not restore the affinity of {stat[0]} ({tid}): {error}", file=sys.stderr)
    # Tasks started meanwhile by a moved task inherited its narrowed mask: give them the original back.
    originals = {}  # tgid -> original mask of its main thread (or of any moved thread of it)
    for tid, (tgid, _, mask) in saved.items():
        if tid == tgid or tgid not in originals:
            originals[tgid] = mask
    pending = []
    for tgid, tid in _tasks():
        if tgid == own or tid in saved:
            continue
        try:
            mask = os.sched_getaffinity(tid)
        except OSError:
            continue
        if cpu not in mask:
            pending.append((tgid, tid, mask))
    for _ in range(4):  # children of children: their parents get resolved in the pass before
        left = []
        for tgid, tid, mask in pending:
            origin = originals.get(tgid) if tgid in originals else originals.get(_parent(tgid))
            if origin is None:
                left.append((tgid, tid, mask))
                continue
            if cpu in origin and mask == origin - {cpu}:
                try:
                    os.sched_setaffinity(tid, origin)
                    record["inherited_restored"] += 1
                    originals.setdefault(tgid, origin)
                except OSError:
                    pass
        if len(left) == len(pending):
            break
        pending = left


@contextlib.contextmanager
def exclusive(cpu, only=None):
    """Keeps every other task off `cpu` for the duration; yields what was done (see the module's doc).
    only: a set of process ids to move instead of every process (tests)."""
    online = os.sched_getaffinity(0)
    own = os.getpid()
    record = {"cpu": cpu, "exempt_pid": own, "host_cpus": sorted(online - {cpu}), "root": os.geteuid() == 0,
              "moved_user_threads": 0, "moved_kernel_threads": 0, "refused": 0, "refused_examples": [],
              "skipped_per_cpu_kthreads": 0, "skipped_bound_to_cpu": 0, "already_off": 0, "passes": 0}
    if cpu not in online or len(online) < 2:
        record.update(exclusive=False, reason=f"CPU {cpu} is not one of this process's {sorted(online)}, or "
                                              f"there is no other CPU to move work to")
        yield record
        return
    saved = {}  # tid -> (tgid, start time, original mask)

    def restore():
        record.update(restored=0, restore_failed=0, exited=0, inherited_restored=0)
        _restore(cpu, own, saved, record)

    with signal_guard.restore_on_signals(restore):
        refused_seen = set()
        # Repeat while a pass still finds tasks: those forked by a task before it was moved.
        while record["passes"] < 5:
            record["passes"] += 1
            if _move_off(cpu, own, None if only is None else set(only), saved, record, refused_seen) == 0:
                break
        record["moved"] = record["moved_user_threads"] + record["moved_kernel_threads"]
        record["exclusive"] = record["refused"] == 0 and record["skipped_bound_to_cpu"] == 0
        yield record


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__.strip().splitlines()[-1])
    command = sys.argv[3:] if sys.argv[2] == "--" else sys.argv[2:]
    with exclusive(int(sys.argv[1])) as record:
        print(f"device_cpu: {record}", file=sys.stderr)
        child = subprocess.Popen(command)
        try:
            status = child.wait()
        except BaseException:
            child.terminate()
            child.wait()
            raise
    print(f"device_cpu: {record}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""Putting back what a benchmark changed on the machine (a sysctl, task affinities), also when it is ended
by SIGINT, SIGTERM or SIGHUP: `restore_on_signals(restore)` installs handlers that raise for the duration
of its block (in the main thread only; elsewhere signals cannot be caught), runs `restore()` however the
block ends, puts the previous handlers back, and then gives the signal its usual effect: KeyboardInterrupt
for SIGINT, exit status 128 + N otherwise."""
import contextlib
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Ended(BaseException):
    """Raised by the handlers; turned into the ordinary exit for that signal after restoring."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def restore_on_signals(restore):
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        def ended(signum, _frame):
            raise Ended(signum)
        for signum in SIGNALS:
            handlers[signum] = signal.signal(signum, ended)
    ended_by = None
    try:
        yield
    except Ended as end:
        ended_by = end.signum
    finally:
        try:
            restore()
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
    if ended_by is not None:
        if ended_by == signal.SIGINT:
            raise KeyboardInterrupt
        sys.exit(128 + ended_by)


def write_value(path, value):
    """One number into a sysctl or module parameter file."""
    with open(path, "w") as f:
        f.write(f"{value}\n")


@contextlib.contextmanager
def value_for_block(path, value, before, info, done_key, tool, already, refused):
    """Writes `value` to `path` (which held `before`) for the block and `before` back however it ends (also on
    signals). info[done_key] says whether the value is in effect, info["reason"] why not or why nothing was
    written (`already` when it held the value; `refused`: what stays in effect when the write fails), and
    info["restored"] whether putting it back worked; a failure there is printed as `tool: could not restore`."""
    if before == value:
        info.update({done_key: True, "reason": already})
        yield
        return
    try:
        write_value(path, value)
    except OSError as error:
        why = "not root" if os.geteuid() != 0 else str(error)
        info.update({done_key: False, "reason": f"cannot write {path} ({why}): {refused}"})
        yield
        return
    info[done_key] = True

    def restore():
        try:
            write_value(path, before)
            info["restored"] = True
        except OSError as error:
            info["restored"] = False
            print(f"{tool}: could not restore {path} to {before}: {error}", file=sys.stderr)

    with restore_on_signals(restore):
        yield


def run_inside(context, tool, command):
    """Runs `command` inside `context` (a context manager that yields what it did, printed as `tool: ...`)
    and returns its exit status; the child is ended if this process is."""
    import subprocess
    with context as done:
        print(f"{tool}: {done}", file=sys.stderr)
        child = subprocess.Popen(command)
        try:
            return child.wait()
        except BaseException:
            child.terminate()
            child.wait()
            raise

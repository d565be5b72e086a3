"""Putting back what a benchmark changed on the machine (a sysctl, task affinities), also when it is ended
by SIGINT, SIGTERM or SIGHUP: `restore_on_signals(restore)` installs handlers that raise for the duration
of its block (in the main thread only; elsewhere signals cannot be caught), runs `restore()` however the
block ends, puts the previous handlers back, and then gives the signal its usual effect: KeyboardInterrupt
for SIGINT, exit status 128 + N otherwise."""
import contextlib
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

"""Whatever the measured commands left running, stopped: they run in sessions of their own,
so a Ctrl-C at the terminal never reaches them."""

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

from bench.lib.proc_stats import descendants


@contextlib.contextmanager
def leftovers_stopped() -> Iterator[None]:
    """On the way out, Ctrl-C or an error included, end whatever the measured commands left
    running: they run in sessions of their own, so the terminal's SIGINT never reaches them."""
    try:
        yield
    finally:
        stop_leftovers()


def stop_leftovers(grace: float = 10.0) -> None:
    """SIGTERM this process's descendants (their process groups), SIGKILL after `grace`."""
    # An interrupted `run_measured` leaves its timeout timer running: not a daemon thread, it
    # would hold the interpreter's exit for up to the whole timeout.
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
    me, my_group = os.getpid(), os.getpgid(0)
    deadline = time.monotonic() + grace
    sig = signal.SIGTERM
    while pids := [p for p in descendants(me) if p != me]:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                group = os.getpgid(pid)
                if group != my_group:
                    os.killpg(group, sig)
                else:
                    os.kill(pid, sig)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reaps it when it is a child of this process
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                break  # not even SIGKILL ended it: say so rather than wait forever
            sig, deadline = signal.SIGKILL, time.monotonic() + grace
        time.sleep(0.1)
    if pids:
        print(f"still running after SIGKILL: {pids}", file=sys.stderr)

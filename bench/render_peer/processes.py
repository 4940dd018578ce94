"""The processes this benchmark starts, and their stopping: whether a process is alive, a Node
run in a session of its own, and SIGTERM handled as Ctrl-C so every run is stopped."""

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from bench.lib.proc_stats import descendants


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class NodeRun:
    """`node crawl.mjs ...` in a session of its own; `stop()` ends it and every process below
    it (Chromium runs in process groups of its own), whatever state it is in."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.tree: set[int] = {self.proc.pid}

    def pids(self) -> list[int]:
        found = descendants(self.proc.pid)
        self.tree.update(found)
        return found

    def stop(self) -> None:
        """SIGTERM to Node's group (Playwright closes its browsers on it), then SIGKILL to
        whatever of its tree and their groups is left after 5 s."""
        if self.proc.poll() is None:
            self.pids()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        left = [pid for pid in self.tree if alive(pid)]
        groups = set()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                groups.add(os.getpgid(pid))
        for group in groups:
            if group != os.getpgrp():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._log.close()


# The Node runs going now: `stopped_on_signals` stops them on the way out.
running: list[NodeRun] = []


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C; `signum` for the exit status."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


@contextlib.contextmanager
def stopped_on_signals() -> Iterator[None]:
    """SIGTERM handled as Ctrl-C (KeyboardInterrupt), so every `finally` below stops what it
    started; any Node run still going is stopped on the way out."""

    def interrupt(signum: int, _frame: object) -> None:
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        for run in list(running):
            run.stop()
        signal.signal(signal.SIGTERM, previous)

"""A long-lived command (dagster dev, the webserver) in its own process group, sampled meanwhile."""

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.lib.measured import tail
from bench.lib.repo import REPO
from bench.lib.tree_sampler import TreeSampler


class Service:
    """A long-lived command (dagster dev, the webserver) in its own process group.

    Stopped with SIGTERM to the group (then SIGKILL), so its children go too.
    """

    def __init__(self, cmd: Sequence[str], *, env: Mapping[str, str], log_path: Path) -> None:
        self.cmd = list(cmd)
        self.env = dict(env)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.sampler: TreeSampler | None = None

    def __enter__(self) -> "Service":
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.sampler = TreeSampler(self.proc.pid, interval=0.5).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sampler is not None:
            self.sampler.__exit__()
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        # Children that ignored SIGTERM (grpc servers) still belong to the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, limit: int = 4000) -> str:
        return tail(self.log_path, limit)

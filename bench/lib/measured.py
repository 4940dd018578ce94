"""One command run to its end: wall time, CPU, and peak RSS of its whole process tree.

CPU and the tree's peak RSS come from `os.wait4` (the child and every descendant it waited for);
the peak RSS of each process comes from /proc/<pid>/status (VmHWM) sampled meanwhile, so a run
worker spawned by the `dagster` CLI is told apart from the CLI itself; `MachineLoad` tells how
many cores other processes kept busy meanwhile (the machine may be shared).
"""

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.lib.proc_stats import MachineLoad
from bench.lib.repo import REPO
from bench.lib.tree_sampler import ProcPeak, TreeSampler


@dataclass
class Measured:
    """What `run_measured` saw of one command."""

    label: str
    cmd: list[str]
    seconds: float
    returncode: int
    cpu_user_seconds: float
    cpu_system_seconds: float
    tree_peak_rss_mib: float  # os.wait4: max over the child and its waited-for descendants
    processes: list[ProcPeak] = field(default_factory=list)
    roles: dict[str, dict[str, float | None]] = field(default_factory=dict)
    machine_busy_cores: float | None = None
    other_busy_cores: float | None = None  # busy cores not used by this tree (nor `extra_cpu`)
    stdout_tail: str = ""
    stderr_tail: str = ""

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_user_seconds + self.cpu_system_seconds

    def role_peak(self, role_prefix: str) -> float | None:
        peaks = [v["peak_rss_mib"] for k, v in self.roles.items() if k.startswith(role_prefix)]
        values = [p for p in peaks if p is not None]
        return max(values) if values else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cpu_seconds"] = self.cpu_seconds
        return data


def tail(path: Path, limit: int = 3000) -> str:
    """The last `limit` bytes of `path` as text ('' when it cannot be read)."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode(errors="replace")


def run_measured(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str],
    label: str = "",
    cwd: Path = REPO,
    timeout: float = 1800,
    check: bool = True,
    extra_cpu: Callable[[], float | None] | None = None,
    sample_interval: float = 0.2,
) -> Measured:
    """Run `cmd` to its end; wall time, CPU and peak RSS of its process tree.

    `extra_cpu` returns the CPU seconds of a helper process (e.g. the site) so that it is not
    counted as "other" load.

    Raises:
        RuntimeError: when `check` and the command exits non-zero or times out.
    """
    with tempfile.TemporaryDirectory(prefix="bench-out-") as tmp:
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        load = MachineLoad()
        extra0 = extra_cpu() if extra_cpu else None
        with out_path.open("wb") as out, err_path.open("wb") as err:
            load.start()
            started = time.perf_counter()
            proc = subprocess.Popen(
                list(cmd), cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
            )
            timed_out = threading.Event()

            def kill_on_timeout() -> None:
                timed_out.set()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill_on_timeout)
            timer.start()
            with TreeSampler(proc.pid, sample_interval) as sampler:
                _pid, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            timer.cancel()
            load.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        # Leftovers of the tree (a forkserver, a grpc server) must not outlive the measurement.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        extra1 = extra_cpu() if extra_cpu else None
        # ru_maxrss is KiB on Linux
        measured = Measured(
            label=label,
            cmd=list(cmd),
            seconds=seconds,
            returncode=proc.returncode,
            cpu_user_seconds=usage.ru_utime,
            cpu_system_seconds=usage.ru_stime,
            tree_peak_rss_mib=usage.ru_maxrss / 1024,
            processes=sorted(sampler.peaks.values(), key=lambda p: -p.peak_rss_mib),
            roles=sampler.by_role(),
            stdout_tail=tail(out_path),
            stderr_tail=tail(err_path),
        )
    if load.busy_seconds is not None:
        measured.machine_busy_cores = load.busy_seconds / seconds
        helper = (extra1 - extra0) if extra0 is not None and extra1 is not None else 0.0
        measured.other_busy_cores = max(
            0.0, (load.busy_seconds - measured.cpu_seconds - helper) / seconds
        )
    if check and (measured.returncode != 0 or timed_out.is_set()):
        why = "timed out" if timed_out.is_set() else f"exit {measured.returncode}"
        raise RuntimeError(
            f"{label or cmd[0]} failed ({why}): {' '.join(cmd)}\n"
            f"--- stdout tail\n{measured.stdout_tail}\n--- stderr tail\n{measured.stderr_tail}"
        )
    return measured

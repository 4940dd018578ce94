"""One command run to its end: wall time, CPU, and peak RSS of its whole process tree.

CPU and the tree's peak RSS come from `os.wait4` (the child and every descendant it waited for,
and what the child left running when it exited: a forkserver whose own parent was the command
is adopted here, waited for, and counted too; on Linux, see `_adopt_orphans`);
the peak RSS of each process comes from /proc/<pid>/status (VmHWM) sampled meanwhile, so a run
worker spawned by the `dagster` CLI is told apart from the CLI itself; `MachineLoad` tells how
many cores other processes kept busy meanwhile (the machine may be shared).
"""

import contextlib
import ctypes
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
            _adopt_orphans()
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
        # Leftovers of the tree (a forkserver, a grpc server) must not outlive the measurement;
        # those adopted here are waited for, their CPU counted.
        left_usage = _reap_leftovers(proc.pid)
        extra1 = extra_cpu() if extra_cpu else None
        # ru_maxrss is KiB on Linux
        measured = Measured(
            label=label,
            cmd=list(cmd),
            seconds=seconds,
            returncode=proc.returncode,
            cpu_user_seconds=usage.ru_utime + sum(u.ru_utime for u in left_usage),
            cpu_system_seconds=usage.ru_stime + sum(u.ru_stime for u in left_usage),
            tree_peak_rss_mib=max([usage.ru_maxrss, *(u.ru_maxrss for u in left_usage)]) / 1024,
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


# prctl(2) option: orphaned descendants are re-parented to this process instead of init.
_PR_SET_CHILD_SUBREAPER = 36
# How long what a command left running may take to end by itself (a forkserver ends when its
# parent's pipe closes) before it is sent SIGTERM.
_LEFTOVER_GRACE_SECONDS = 5.0


def _adopt_orphans() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux), so that a process a
    measured command leaves running is waited for here and its CPU counted; returns whether
    it is."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _reap_leftovers(group: int) -> list[Any]:
    """Wait for this process's children in process group `group` (adopted from the measured
    command): SIGTERM for those still running after the grace period, SIGKILL after another;
    returns their
    resource usage (each with the descendants it waited for)."""
    usages = []
    deadline = time.monotonic() + _LEFTOVER_GRACE_SECONDS
    termed = False
    while pids := _children_in_group(group):
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                done, _status, usage = os.wait4(pid, os.WNOHANG)
                if done:
                    usages.append(usage)
        overdue = time.monotonic() - deadline
        if overdue > 2 * _LEFTOVER_GRACE_SECONDS:
            break  # not even SIGKILL ended it (another user's, or stuck in the kernel)
        if overdue > 0 and not termed or overdue > _LEFTOVER_GRACE_SECONDS:
            termed = True
            kill = signal.SIGTERM if overdue <= _LEFTOVER_GRACE_SECONDS else signal.SIGKILL
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, kill)
        time.sleep(0.02)
    # Not adopted (another platform), or descendants of the leftovers: as before.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)
    return usages


def _children_in_group(group: int) -> list[int]:
    """This process's children whose process group is `group` (zombies included)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and int(fields[2]) == group:
            found.append(int(entry))
    return found

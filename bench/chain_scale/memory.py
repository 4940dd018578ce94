"""The summed RSS and PSS of the measured commands' process trees, sampled together in a
thread, and the wall time and memory figures of one measured command."""

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.lib.measured import Measured
from bench.lib.polling import Poller
from bench.lib.proc_stats import descendants
from bench.lib.smaps import smaps_rollup_kib

MEMORY_SAMPLE_SECONDS = 0.5


class TreeMemory(Poller):
    """The summed RSS and PSS of this process's descendants (but `exclude`), sampled together in
    a thread; their highest values. Descendants, not one root's tree: the measured command runs
    in a session of its own and what it orphans is re-parented here (`run_measured` makes this
    process their subreaper)."""

    def __init__(self, exclude: Sequence[int]) -> None:
        self.exclude = {os.getpid(), *exclude}
        self.peak_rss_mib: float | None = None
        self.peak_pss_mib: float | None = None
        # When the PSS peak came (seconds from the start) and each process's share of it.
        self.peak_pss_seconds: float | None = None
        self.peak_pss_parts: list[dict[str, Any]] = []
        self._started = time.perf_counter()
        super().__init__()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = pss = 0
            parts = []
            for pid in descendants(os.getpid()):
                if pid in self.exclude:
                    continue
                rollup = smaps_rollup_kib(pid)
                if "Pss" in rollup:
                    rss += rollup.get("Rss", 0)
                    pss += rollup["Pss"]
                    parts.append({"pid": pid, "pss_mib": rollup["Pss"] / 1024, "cmd": _cmd(pid)})
            if parts:
                self.peak_rss_mib = max(self.peak_rss_mib or 0.0, rss / 1024)
                if pss / 1024 > (self.peak_pss_mib or 0.0):
                    self.peak_pss_mib = pss / 1024
                    self.peak_pss_seconds = time.perf_counter() - self._started
                    self.peak_pss_parts = sorted(parts, key=lambda p: -p["pss_mib"])
            self._stop.wait(MEMORY_SAMPLE_SECONDS)


def _cmd(pid: int) -> str:
    """The first 80 characters of `pid`'s command line ('' once it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")[:80]


def tree_figures(m: Measured, memory: TreeMemory) -> dict[str, Any]:
    """Wall time and the memory figures of one measured command's process tree."""
    largest = max(m.processes, key=lambda p: p.peak_rss_mib, default=None)
    return {
        "seconds": m.seconds,
        "cpu_seconds": m.cpu_seconds,
        "returncode": m.returncode,
        "largest_peak_rss_mib": largest.peak_rss_mib if largest else None,
        "largest_role": largest.role if largest else None,
        # An upper bound of the tree's peak: each process's own peak, whenever it was.
        "tree_sum_peak_rss_mib": sum(p.peak_rss_mib for p in m.processes) or None,
        "tree_concurrent_rss_mib": memory.peak_rss_mib,
        "tree_concurrent_pss_mib": memory.peak_pss_mib,
        "tree_pss_peak_seconds": memory.peak_pss_seconds,
        "tree_pss_peak_parts": memory.peak_pss_parts,
        "wait4_peak_rss_mib": m.tree_peak_rss_mib,
        # What the tree's processes wrote to storage (file data; a process's last sample).
        "disk_write_bytes": sum(p.write_bytes or 0 for p in m.processes),
        "other_busy_cores": m.other_busy_cores,
        "roles": m.roles,
        "processes": [
            {
                "role": p.role,
                "peak_rss_mib": p.peak_rss_mib,
                "write_bytes": p.write_bytes,
                "cmdline": p.cmdline[:160],
            }
            for p in m.processes
        ],
    }

"""The memory of one side of the benchmark: the summed RSS and PSS of its processes (and of
its Chromium processes), sampled in a thread, their peaks, and the PSS of each kind of process
(`kinds`) when the whole side's PSS peaked."""

from collections.abc import Callable
from typing import Any

from bench.bench_render import SAMPLE_SECONDS
from bench.lib.polling import Poller
from bench.lib.proc_stats import cmdline, proc_cpu_seconds
from bench.lib.smaps import smaps_rollup_kib
from bench.render_peer.kinds import kind_of


class SideMemory(Poller):
    """Every `SAMPLE_SECONDS` in a thread: the summed RSS and PSS (MiB) of the processes
    `pids()` names, and of those among them that are Chromium's; their peaks, and the CPU
    seconds the processes seen had used when last seen."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.samples = 0
        self.peak_rss_mib = 0.0
        self.peak_pss_mib = 0.0
        self.peak_chromium_rss_mib = 0.0
        self.peak_chromium_pss_mib = 0.0
        self.processes_seen: set[int] = set()
        self._cpu: dict[int, float] = {}
        self._chromium: dict[int, bool] = {}
        self._kinds: dict[int, str] = {}
        # At the sample whose whole PSS was the highest: PSS (MiB) and processes per kind.
        self.peak_kinds: dict[str, dict[str, float]] = {}
        super().__init__()

    def _is_chromium(self, pid: int) -> bool:
        known = self._chromium.get(pid)
        if known is None:
            # By its program (or the script a shell runs: Debian's wrappers), not its
            # arguments: our shards name the Chromium they drive (`--chromium=...`).
            known = "chromium" in " ".join(cmdline(pid).split(" ")[:3])
            self._chromium[pid] = known
        return known

    def _kind(self, pid: int) -> str:
        known = self._kinds.get(pid)
        if known is None:
            known = kind_of(pid)
            if known != "other":  # a shell that execs Chromium (Debian's wrapper) is one soon
                self._kinds[pid] = known
        return known

    def sample(self) -> None:
        rss = pss = chromium_rss = chromium_pss = 0
        kinds: dict[str, dict[str, float]] = {}
        for pid in self.pids():
            figures = smaps_rollup_kib(pid)
            if not figures:
                continue
            self.processes_seen.add(pid)
            rss += figures.get("Rss", 0)
            pss += figures.get("Pss", 0)
            kind = kinds.setdefault(self._kind(pid), {"pss_mib": 0.0, "processes": 0})
            kind["pss_mib"] += figures.get("Pss", 0) / 1024
            kind["processes"] += 1
            if self._is_chromium(pid):
                chromium_rss += figures.get("Rss", 0)
                chromium_pss += figures.get("Pss", 0)
            cpu = proc_cpu_seconds(pid)
            if cpu is not None:
                self._cpu[pid] = cpu
        self.samples += 1
        if pss / 1024 > self.peak_pss_mib:
            self.peak_kinds = kinds
        self.peak_rss_mib = max(self.peak_rss_mib, rss / 1024)
        self.peak_pss_mib = max(self.peak_pss_mib, pss / 1024)
        self.peak_chromium_rss_mib = max(self.peak_chromium_rss_mib, chromium_rss / 1024)
        self.peak_chromium_pss_mib = max(self.peak_chromium_pss_mib, chromium_pss / 1024)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.sample()

    def cpu_seconds(self, exclude: int | None = None) -> float:
        """CPU seconds of the processes seen (but `exclude`), as last sampled."""
        return sum(cpu for pid, cpu in self._cpu.items() if pid != exclude)

    def figures(self) -> dict[str, Any]:
        return {
            "peak_pss_mib": self.peak_pss_mib,
            "peak_rss_mib": self.peak_rss_mib,
            "peak_chromium_pss_mib": self.peak_chromium_pss_mib,
            "peak_chromium_rss_mib": self.peak_chromium_rss_mib,
            "peak_pss_by_kind": self.peak_kinds,
            "samples": self.samples,
            "processes_seen": len(self.processes_seen),
        }

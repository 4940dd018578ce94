"""Peak RSS (VmHWM) and CPU of every process of a command's tree, sampled in a thread.

Sampling per process tells a run worker spawned by the `dagster` CLI apart from the CLI itself,
which `os.wait4`'s single maximum over the tree cannot.
"""

import threading
from dataclasses import dataclass

from bench.lib.proc_stats import (
    cmdline,
    descendants,
    proc_cpu_seconds,
    proc_write_bytes,
    read_status_kib,
)


def process_role(command: str) -> str:
    """A short name for a process of a Dagster command tree, from its command line."""
    rules = (
        # Forked step processes keep their forkserver's command line (the server counts too:
        # it holds the preloaded code location, less than any step that ran in a fork of it).
        (
            ("multiprocessing.spawn", "spawn_main", "multiprocessing.forkserver"),
            "step worker (multiprocess executor)",
        ),
        (("multiprocessing.resource_tracker",), "resource tracker"),
        (("api execute_run", "api execute_step"), "run worker (dagster api execute_run)"),
        (("dagster_webserver", "dagster-webserver"), "webserver"),
        (("dagster-daemon", "dagster._daemon", "daemon run"), "daemon"),
        (("api grpc", "code-server start", "code_server"), "code server"),
        (("dagster dev", "dagster.__main__ dev", "-m dagster dev"), "dagster dev"),
        (("asset materialize",), "dagster asset materialize (CLI)"),
        (("scrapeflow_dagster.cli",), "scrapeflow CLI"),
        (("tail -F",), "compute log tail"),
    )
    for needles, role in rules:
        if any(n in command for n in needles):
            return role
    return command[:60]


@dataclass
class ProcPeak:
    pid: int
    role: str
    cmdline: str
    peak_rss_mib: float
    cpu_seconds: float | None
    # /proc/<pid>/io's write_bytes at the last sample (what came after it is missed).
    write_bytes: int | None = None


class TreeSampler:
    """Samples VmHWM (peak RSS) and CPU of every process under `root_pid` in a thread.

    VmHWM is a high-water mark, so a process seen once near its end reports its true peak;
    one that lives less than `interval` may be missed (os.wait4's maximum still covers it).
    """

    def __init__(self, root_pid: int, interval: float = 0.2) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.peaks: dict[int, ProcPeak] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "TreeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        for pid in descendants(self.root_pid):
            status = read_status_kib(pid, ("VmHWM",))
            if "VmHWM" not in status:
                continue
            known = self.peaks.get(pid)
            if known is None:
                cmd = cmdline(pid)
                known = ProcPeak(pid, process_role(cmd), cmd[:300], 0.0, None)
                self.peaks[pid] = known
            known.peak_rss_mib = max(known.peak_rss_mib, status["VmHWM"] / 1024)
            cpu = proc_cpu_seconds(pid)
            if cpu is not None:
                known.cpu_seconds = cpu
            written = proc_write_bytes(pid)
            if written is not None:
                known.write_bytes = written

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def by_role(self) -> dict[str, dict[str, float | None]]:
        """Per role: the largest peak RSS of its processes and their summed CPU seconds."""
        roles: dict[str, dict[str, float | None]] = {}
        for p in self.peaks.values():
            r = roles.setdefault(p.role, {"peak_rss_mib": 0.0, "cpu_seconds": 0.0, "count": 0})
            r["peak_rss_mib"] = max(r["peak_rss_mib"] or 0.0, p.peak_rss_mib)
            r["cpu_seconds"] = (r["cpu_seconds"] or 0.0) + (p.cpu_seconds or 0.0)
            r["count"] = (r["count"] or 0) + 1
        return roles

"""CPU seconds per role of a scale-out run (the CLI, the forkserver and its forks, the site,
Celery workers, Postgres, Redis, the rest of the machine), sampled from /proc."""

import bisect
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.lib.proc_stats import cmdline, machine_busy_seconds, read_status_kib
from bench.lib.tree_sampler import ProcPeak, TreeSampler, process_role

CLK_TCK = os.sysconf("SC_CLK_TCK")
STEP_PROCESS_ROLE = "step worker (multiprocess executor)"  # process_role: forkserver and forks
CLI_ROLE = "dagster asset materialize (CLI)"
FORKSERVER_ROLE = "forkserver (preloads the location)"
FORKED_ROLE = "forked step processes"
SITE_ROLE = "site (bundled HTTP site)"
CELERY_ROLE = "celery workers"
POSTGRES_ROLE = "postgres server"
REDIS_ROLE = "redis server"
BENCH_ROLE = "this bench (sampler thread)"
OTHER_ROLE = "rest of the machine (+ unsampled)"
MACHINE_ROLE = "machine busy (all cores)"
STEP_PREFIX = "  of which step "
SERVICE_NAMES = {"postgres": POSTGRES_ROLE, "redis-server": REDIS_ROLE}


def ppid_and_cpu(pid: int) -> tuple[int, float] | None:
    """Parent pid and user + system CPU seconds of `pid` from one read of /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def service_roots() -> dict[int, str]:
    """The local Postgres and Redis servers' first processes (Postgres backends are their
    children), by process name; empty where /proc cannot tell."""
    procs: dict[int, tuple[str, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
            name = text[text.index("(") + 1 : text.rindex(")")]
            procs[int(entry.name)] = (name, int(text.rsplit(")", 1)[1].split()[1]))
        except (OSError, ValueError, IndexError):
            continue
    return {
        pid: SERVICE_NAMES[name]
        for pid, (name, ppid) in procs.items()
        if name in SERVICE_NAMES and procs.get(ppid, ("", 0))[0] != name
    }


class PhaseSampler(TreeSampler):
    """A `TreeSampler` of the measured command (`peaks`, `by_role` as usual) that also keeps each
    process's CPU over time, so that CPU can be split by phase; samples processes outside the
    command's tree (the site, Celery workers, Postgres, Redis, this bench) under roles of their
    own, and the machine's busy seconds.

    Within the command's tree the forkserver (it imports the code location once) is told apart
    from the step processes forked from it, which keep its command line. One /proc listing per
    sample; /proc/<pid>/stat is read only for new processes and those of interest. A process's
    CPU is known as of its last sample (up to `interval` short for one that ended); one that
    lived less than `interval` is missed, and counts with the rest of the machine.
    """

    def __init__(self, helpers: Mapping[int, str], interval: float = 0.1) -> None:
        super().__init__(0, interval)  # the command's pid comes with `watch`
        self.roots: dict[int, str | None] = {os.getpid(): BENCH_ROLE, **helpers}
        self.role_of: dict[int, str] = {}
        self.cpu: dict[int, list[tuple[float, float]]] = {}  # pid: (time, CPU seconds) samples
        self.busy: list[tuple[float, float]] = []  # (time, machine busy seconds)
        self._member: dict[int, int | None] = {}  # pid: the root it runs under (None: no root)

    def watch(self, pid: int) -> None:
        """Sample the tree under `pid` (the measured command) from now on."""
        self.root_pid = pid
        self.roots[pid] = None
        self._member.pop(pid, None)

    def sample(self) -> None:
        now = time.time()
        busy = machine_busy_seconds()
        try:
            pids = sorted(int(e.name) for e in os.scandir("/proc") if e.name.isdigit())
        except OSError:
            return
        for pid in pids:
            if pid in self._member:
                continue
            if pid in self.roots:
                self._member[pid] = pid
                continue
            stat = ppid_and_cpu(pid)
            self._member[pid] = None if stat is None else self._member.get(stat[0])
        for pid in pids:
            root = self._member.get(pid)
            stat = None if root is None else ppid_and_cpu(pid)
            if root is None or stat is None:
                continue
            if pid not in self.role_of:
                self.role_of[pid] = self._role(pid, root, stat[0])
            self.cpu.setdefault(pid, []).append((now, stat[1]))
            if root == self.root_pid:
                self._peak(pid, stat[1])
        if busy is not None:
            self.busy.append((now, busy))

    def _role(self, pid: int, root: int, ppid: int) -> str:
        helper = self.roots.get(root)
        if helper is not None:
            return helper
        command = cmdline(pid)
        role = process_role(command) or "(gone)"
        script = re.search(r"[\w.]+\.py\b", command)
        if role == command[:60] and script:  # no rule matched: name it by its script
            role = f"helper {script.group(0)}"
        if role == STEP_PROCESS_ROLE and "multiprocessing.forkserver" in command:
            forked = self.role_of.get(ppid) in (FORKSERVER_ROLE, FORKED_ROLE)
            role = FORKED_ROLE if forked else FORKSERVER_ROLE
        return role

    def _peak(self, pid: int, cpu: float) -> None:
        status = read_status_kib(pid, ("VmHWM",))
        if "VmHWM" not in status:
            return
        known = self.peaks.get(pid)
        if known is None:
            known = ProcPeak(pid, self.role_of[pid], cmdline(pid)[:300], 0.0, None)
            self.peaks[pid] = known
        known.peak_rss_mib = max(known.peak_rss_mib, status["VmHWM"] / 1024)
        known.cpu_seconds = cpu

    @staticmethod
    def _at(samples: Sequence[tuple[float, float]], when: float) -> float:
        """The last sampled value at or before `when` (0 before the first)."""
        i = bisect.bisect_right(samples, when, key=lambda s: s[0])
        return samples[i - 1][1] if i else 0.0

    def cpu_by_role(
        self, start: float, end: float, names: Mapping[int, str] | None = None
    ) -> dict[str, float]:
        """CPU seconds per role between two wall-clock times (`names`: roles of some pids of
        their own), with the machine's busy seconds and what our roles leave of them."""
        roles: dict[str, float] = {}
        for pid, samples in self.cpu.items():
            role = (names or {}).get(pid) or self.role_of[pid]
            used = self._at(samples, end) - self._at(samples, start)
            roles[role] = roles.get(role, 0.0) + used
        if self.busy:
            machine = self._at(self.busy, end) - self._at(self.busy, start)
            roles[OTHER_ROLE] = machine - sum(roles.values())
            roles[MACHINE_ROLE] = machine
        return roles

"""CPU of one process and of the whole machine, and the processes of a tree, from /proc (Linux).

The machine may be shared: what other processes kept busy in the same window is reported with
each figure, so a noisy run can be told from a slow one.
"""

import os
from collections.abc import Sequence
from pathlib import Path


def read_status_kib(pid: int, fields: Sequence[str]) -> dict[str, int]:
    """The KiB `fields` of /proc/<pid>/status (VmHWM, VmRSS...); missing ones left out."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in fields:
                    out[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (its own, not its children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_write_bytes(pid: int) -> int | None:
    """Bytes process `pid` has caused to be written to storage so far (`write_bytes` of
    /proc/<pid>/io: file data it dirtied, not the file system's journal); None when unreadable
    (another user's process, or gone)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name == "write_bytes":
                    return int(rest)
    except (OSError, ValueError):
        pass
    return None


def machine_busy_seconds() -> float | None:
    """CPU seconds all cores of the machine spent busy since boot (Linux only)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class MachineLoad:
    """Busy CPU seconds of the whole machine between `start()` and `stop()` (from /proc/stat)."""

    def __init__(self) -> None:
        self.busy0: float | None = None
        self.busy_seconds: float | None = None

    def start(self) -> None:
        self.busy0 = machine_busy_seconds()

    def stop(self) -> None:
        busy1 = machine_busy_seconds()
        if self.busy0 is not None and busy1 is not None:
            self.busy_seconds = busy1 - self.busy0


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(root_pid: int) -> list[int]:
    """`root_pid` and every process below it, from /proc (Linux)."""
    children = _children_map()
    found: list[int] = []
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def cmdline(pid: int) -> str:
    """The command line of process `pid`, its arguments joined by spaces ('' once it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)

"""Open-ledger markers: where DuckDB may lag behind the status files, and since when.

A runner writes a task's status file first and records its step row in a `Ledger` after; the
row reaches the spool only when the ledger's buffer is flushed. So each open Ledger keeps one
small marker file, `<spool_dir>/.open/<pid>-<uuid>.json`, from its creation until it is closed
with nothing buffered, holding `since`: a wall-clock time (Unix seconds) no later than the
write of any status file whose row it may still hold unspooled. A status file last written
before the oldest marker's `since` therefore has its step rows in the spool or in DuckDB.

`since` is the start of the batch *before* the one being buffered: a runner records a step
row a moment after writing its status file, and a flush may fall in that moment, so the
current batch may hold a row whose file was written in the previous batch's time.

A marker whose process is gone (same host, pid not running or running another program) was
left by a killed run: its buffered rows are lost, and `scrapeflow status` repairs them from the
status files changed since its `since` (`status_counts`), then removes it. Markers of other
hosts (a shared data folder) cannot be checked and are taken as live.
"""

import functools
import logging
import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.state.atomic import process_alive, write_bytes_atomic

logger = logging.getLogger(__name__)

OPEN_DIR_NAME = ".open"
MARKER_SUFFIX = ".json"


def open_dir(spool_dir: Path) -> Path:
    """The folder of the markers of `spool_dir` (a dot-folder: spool listings skip it)."""
    return Path(spool_dir) / OPEN_DIR_NAME


@functools.cache
def _host() -> str:
    return socket.gethostname()


def process_start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux `/proc/<pid>/stat`).

    Tells a process from a later one that was given the same pid. None where there is no
    `/proc` or the process is gone.
    """
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Field 22; the command name (field 2, in parentheses) may itself hold spaces or ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


class LedgerMarker:
    """The marker one Ledger keeps; `hold` writes (or rewrites) it, `release` removes it.

    Not thread-safe on its own: the Ledger calls it under its lock.
    """

    def __init__(self, spool_dir: Path) -> None:
        self.path = open_dir(spool_dir) / f"{os.getpid()}-{uuid.uuid4().hex}{MARKER_SUFFIX}"
        self.since: float | None = None  # None while no marker is on disk

    @property
    def held(self) -> bool:
        """Whether the marker is on disk."""
        return self.since is not None

    def hold(self, since: float) -> None:
        """Write the marker saying rows may be unspooled since `since` (Unix seconds).

        Raises:
            OSError: when the marker cannot be written (the folder is made when missing).
        """
        if since == self.since:
            return  # already says so: no write
        pid = os.getpid()
        data = orjson.dumps(
            {"pid": pid, "host": _host(), "started": process_start_ticks(pid), "since": since}
        )
        try:
            write_bytes_atomic(self.path, data)
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(self.path, data)
        self.since = since

    def release(self) -> None:
        """Remove the marker: everything its Ledger recorded is in the spool.

        Raises:
            OSError: when it exists but cannot be removed.
        """
        if self.since is None:
            return
        self.path.unlink(missing_ok=True)
        self.since = None


@dataclass(frozen=True, slots=True)
class OpenMarker:
    """A marker as `read_markers` found it.

    Attributes:
        path: The marker file.
        since: Status files written from this time (Unix seconds) on may lack DuckDB rows;
            0.0 for a marker that could not be read (every file is then suspect).
        pid: The process of its Ledger (None when unreadable).
        host: The host name of that process.
        started: The process's start time in clock ticks (None when unknown).
    """

    path: Path
    since: float
    pid: int | None = None
    host: str | None = None
    started: int | None = None

    @property
    def elsewhere(self) -> bool:
        """Written on another host (a shared data folder): its process cannot be checked."""
        return self.host is not None and self.host != _host()

    def is_dead(self) -> bool:
        """Whether its process is known to be gone (its buffered rows lost)."""
        if self.pid is None or self.elsewhere:
            return False
        if not process_alive(self.pid):
            return True
        # The pid runs, but maybe as a later process: a start time that differs says so.
        now = process_start_ticks(self.pid)
        return self.started is not None and now is not None and now != self.started


def rewrite_since(marker: OpenMarker, since: float) -> None:
    """Move a dead marker's time up to `since`: the rows it stood for up to there are repaired.

    Raises:
        OSError: when the marker cannot be written.
    """
    data = {"pid": marker.pid, "host": marker.host, "started": marker.started, "since": since}
    write_bytes_atomic(marker.path, orjson.dumps(data))


def read_markers(spool_dir: Path) -> list[OpenMarker]:
    """Every marker in `spool_dir`'s marker folder (none when it is missing).

    A file that is not a marker this version wrote is returned with `since` 0.0 (all status
    files suspect), never skipped: it may stand for rows DuckDB lacks.

    Raises:
        OSError: when the folder exists but cannot be listed.
    """
    try:
        entries = list(os.scandir(open_dir(spool_dir)))
    except FileNotFoundError:
        return []
    markers = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(MARKER_SUFFIX):
            continue  # the atomic writer's temp files
        try:
            raw = Path(entry.path).read_bytes()
        except FileNotFoundError:
            continue  # released since the listing: its rows are in the spool
        markers.append(_parse(Path(entry.path), raw))
    return markers


def _parse(path: Path, raw: bytes) -> OpenMarker:
    try:
        data = orjson.loads(raw)
        since, pid = data["since"], data["pid"]
        host, started = data.get("host"), data.get("started")
        if not isinstance(since, int | float) or not isinstance(pid, int):
            raise TypeError("since/pid")
        return OpenMarker(
            path,
            float(since),
            pid,
            host if isinstance(host, str) else None,
            started if isinstance(started, int) else None,
        )
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        logger.warning("ledger marker %s is unreadable (%s): all status files suspect", path, exc)
        return OpenMarker(path, 0.0)

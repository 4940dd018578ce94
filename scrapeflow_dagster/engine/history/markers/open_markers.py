"""Open markers as `scrapeflow status` reads them (`OpenMarker`, `read_markers`), and the dead
ones removed or moved up once their rows are repaired (the reading side of the format the
package's docstring describes).
"""

import glob
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.history.markers.names import (
    JOURNAL_SUFFIX,
    MARKER_SUFFIX,
    open_dir,
    process_start_ticks,
    this_host,
)
from scrapeflow_dagster.engine.state.atomic import process_alive, write_bytes_atomic

logger = logging.getLogger(__name__)


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
        keys: The keys its journal names (None: it keeps no journal, or it could not be
            read); meaningful only while the marker is live (see the package).
    """

    path: Path
    since: float
    pid: int | None = None
    host: str | None = None
    started: int | None = None
    keys: frozenset[str] | None = None

    @property
    def elsewhere(self) -> bool:
        """Written on another host (a shared data folder): its process cannot be checked."""
        return self.host is not None and self.host != this_host()

    def is_dead(self) -> bool:
        """Whether its process is known to be gone (its buffered rows lost)."""
        if self.pid is None or self.elsewhere:
            return False
        if not process_alive(self.pid):
            return True
        # The pid runs, but maybe as a later process: a start time that differs says so.
        now = process_start_ticks(self.pid)
        return self.started is not None and now is not None and now != self.started


def remove_marker(marker: OpenMarker) -> None:
    """Remove a dead marker and its journal files (`<marker name>.<n>.keys`).

    Raises:
        OSError: when one exists but cannot be removed.
    """
    stem = marker.path.name[: -len(MARKER_SUFFIX)]
    for journal in marker.path.parent.glob(f"{glob.escape(stem)}.*{JOURNAL_SUFFIX}"):
        journal.unlink(missing_ok=True)
    marker.path.unlink(missing_ok=True)


def sweep_orphan_journals(spool_dir: Path) -> int:
    """Remove journal files whose marker is gone and whose process (this host's, by the pid
    their name starts with) no longer runs: left by a process killed while it released its
    marker. A live process's file is never touched (it opens its journal just before it
    first writes the marker that lists it). Returns how many were removed.

    Raises:
        OSError: when the folder exists but cannot be listed.
    """
    folder = open_dir(spool_dir)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    markers = {name[: -len(MARKER_SUFFIX)] for name in names if name.endswith(MARKER_SUFFIX)}
    removed = 0
    for name in names:
        if not name.endswith(JOURNAL_SUFFIX) or name.startswith("."):
            continue
        stem = name[: -len(JOURNAL_SUFFIX)].rpartition(".")[0]
        pid = stem.partition("-")[0]
        if stem in markers or not pid.isdigit() or process_alive(int(pid)):
            continue
        (folder / name).unlink(missing_ok=True)
        removed += 1
    return removed


def rewrite_since(marker: OpenMarker, since: float) -> None:
    """Move a dead marker's time up to `since`: the rows it stood for up to there are repaired.
    (Its journal, if any, is no longer listed: a dead marker is taken by its time.)

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
        journal = data.get("journal")
        return OpenMarker(
            path,
            float(since),
            pid,
            host if isinstance(host, str) else None,
            started if isinstance(started, int) else None,
            _read_journal(path.parent, journal) if journal is not None else None,
        )
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        logger.warning("ledger marker %s is unreadable (%s): all status files suspect", path, exc)
        return OpenMarker(path, 0.0)


def _read_journal(folder: Path, names: object) -> frozenset[str] | None:
    """The keys the journal files `names` (in `folder`) hold; None when they are not a list
    of plain file names or one cannot be read (the marker is then taken by its time)."""
    if not isinstance(names, list) or not all(_plain_name(name) for name in names):
        logger.warning("ledger marker in %s lists a journal it cannot have: %r", folder, names)
        return None
    keys: set[str] = set()
    for name in names:
        try:
            raw = (folder / name).read_bytes()
        except FileNotFoundError:
            continue  # the oldest, removed once its rows were spooled (see the package)
        except OSError:
            logger.warning("ledger journal %s unreadable: its marker taken by time", name)
            return None
        *lines, last = raw.split(b"\n")  # `last`: b"", or a line still being written
        for line in lines:
            try:
                key = orjson.loads(line)
            except orjson.JSONDecodeError:
                key = None
            if not isinstance(key, str):
                logger.warning("ledger journal %s has a bad line: its marker taken by time", name)
                return None
            keys.add(key)
        # A line still being written names a file not yet written (announced first): left out.
    return frozenset(keys)


def _plain_name(name: object) -> bool:
    return (
        isinstance(name, str)
        and name.endswith(JOURNAL_SUFFIX)
        and "/" not in name
        and not name.startswith(".")
    )

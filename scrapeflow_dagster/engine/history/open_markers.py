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

Finding the files changed since a time takes a `stat` of every status file: 2 s of the 4.8 s
`scrapeflow status` took at a million tasks with a run going on. So a run's Ledger also keeps
a **journal** (`Ledger(journal=True)`): before the runner writes a status file it names the
key there (`announce`: one `write` to a file opened for appending, 2 us against ~0.1 ms for
the status file's own atomic write, measured 2026-11-30). The marker lists its journal files,
one per batch: the current one and the one before (the same batch `since` goes back to); a
flush starts a new one and removes the oldest, whose keys' rows are spooled by then. A live
journaled marker thus names every status file its rows may lag behind, and `scrapeflow status`
reads those, stat'ing no other file. A dead one (its last lines may not have reached the
disk in a power loss), one without a journal (an older version, a Ledger made without) or an
unreadable one is taken by its time, as before. A journal file gone when read was the oldest,
removed after its rows were spooled: the reader's sync, after it, takes them.
"""

import contextlib
import functools
import glob
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
JOURNAL_SUFFIX = ".keys"
# Journal files a marker lists: the current batch's and the one before (see the module).
JOURNAL_FILES = 2


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

    With `journal`, it also keeps the Ledger's journal (see the module): `announce` names a
    key there, `rotate` starts the next batch's file.

    Not thread-safe on its own: the Ledger calls it under its lock.
    """

    def __init__(self, spool_dir: Path, *, journal: bool = False) -> None:
        self.path = open_dir(spool_dir) / f"{os.getpid()}-{uuid.uuid4().hex}{MARKER_SUFFIX}"
        self.since: float | None = None  # None while no marker is on disk
        self.journal = journal
        self._journals: list[Path] = []  # listed in the marker, oldest first
        self._fd: int | None = None  # the newest journal file, open for appending
        self._next_journal = 0

    @property
    def held(self) -> bool:
        """Whether the marker is on disk."""
        return self.since is not None

    def hold(self, since: float) -> None:
        """Write the marker saying rows may be unspooled since `since` (Unix seconds), with
        its journal file open first when it keeps one.

        Raises:
            OSError: when the marker or its journal cannot be written (the folder is made
                when missing).
        """
        if since == self.since:
            return  # already says so: no write
        opened = self.journal and self._fd is None
        if opened:
            self._open_journal()
        try:
            self._write(since)
        except OSError:
            if opened:  # not listed anywhere: nothing may go there
                self._close_journals()
            raise

    def rotate(self, since: float) -> None:
        """After a flush: start the next batch's journal file, move the marker to `since` and
        remove the journal file older than the batch before (its rows are spooled).

        Raises:
            OSError: when the marker or the new journal cannot be written.
        """
        if not self.journal:
            self.hold(since)
            return
        previous, listed = self._fd, list(self._journals)
        self._open_journal()
        dropped = self._journals[:-JOURNAL_FILES]
        self._journals = self._journals[-JOURNAL_FILES:]
        try:
            self._write(since)  # lists the new file before any key goes there
        except OSError:
            # Keys go on to the file the marker on disk lists, which keeps the older ones.
            assert self._fd is not None
            os.close(self._fd)
            self._journals[-1].unlink(missing_ok=True)
            self._fd, self._journals = previous, listed
            raise
        if previous is not None:
            os.close(previous)
        for path in dropped:
            path.unlink(missing_ok=True)

    def announce(self, keys: tuple[str, ...]) -> None:
        """Name `keys` in the journal before their status files are written (held first).

        Raises:
            OSError: when the journal cannot be written.
        """
        assert self._fd is not None, "announce on a marker without an open journal"
        data = memoryview(b"".join(orjson.dumps(key) + b"\n" for key in keys))
        while data:  # a short write (a full disk) goes on where it stopped, or raises
            data = data[os.write(self._fd, data) :]

    def drop_journal(self) -> None:
        """Keep no journal from now on: the marker is rewritten without one (taken by its
        time, as an older version's), after the journal could not be written.

        Raises:
            OSError: when the marker cannot be rewritten either.
        """
        if not self.journal:
            return
        self.journal = False
        if self.since is not None:
            try:
                self._write(self.since)  # before the files go: a reader must not trust them
            except OSError:
                self.journal = True  # the marker on disk still lists them
                raise
        self._close_journals()

    def release(self) -> None:
        """Remove the marker: everything its Ledger recorded is in the spool.

        Raises:
            OSError: when it exists but cannot be removed.
        """
        if self.since is None:
            return
        self._close_journals()  # first: a kill between leaves a marker, never a lone journal
        self.path.unlink(missing_ok=True)
        self.since = None

    def _close_journals(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):  # a failing disk's error: the file goes anyway
                os.close(self._fd)
            self._fd = None
        for journal in self._journals:
            journal.unlink(missing_ok=True)
        self._journals = []

    def _open_journal(self) -> None:
        stem = self.path.name[: -len(MARKER_SUFFIX)]
        path = self.path.parent / f"{stem}.{self._next_journal}{JOURNAL_SUFFIX}"
        self._next_journal += 1
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        try:
            self._fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, flags, 0o644)
        self._journals.append(path)

    def _write(self, since: float) -> None:
        pid = os.getpid()
        data: dict[str, object] = {
            "pid": pid,
            "host": _host(),
            "started": process_start_ticks(pid),
            "since": since,
        }
        if self.journal:
            data["journal"] = [path.name for path in self._journals]
        try:
            write_bytes_atomic(self.path, orjson.dumps(data))
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(self.path, orjson.dumps(data))
        self.since = since


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
            read); meaningful only while the marker is live (see the module).
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
            continue  # the oldest, removed once its rows were spooled (see the module)
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

"""`LedgerMarker`: the marker one open Ledger keeps, and its journal (the writing side of the
format the package's docstring describes).
"""

import contextlib
import os
import uuid
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.history.markers.names import (
    JOURNAL_FILES,
    JOURNAL_SUFFIX,
    MARKER_SUFFIX,
    open_dir,
    process_start_ticks,
    this_host,
)
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic


class LedgerMarker:
    """The marker one Ledger keeps; `hold` writes (or rewrites) it, `release` removes it.

    With `journal`, it also keeps the Ledger's journal (see the package): `announce` names a
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
            "host": this_host(),
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

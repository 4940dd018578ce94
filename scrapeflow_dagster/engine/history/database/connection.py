"""Opening the DuckDB file under its one-writer-process rule: wait with backoff, or give up.

DuckDB lets one process open a file read-write, and none while another process holds it (even
read-only). Both openers here retry a lock conflict with jittered exponential backoff until a
deadline; any other failure (a missing or broken file) is raised at once. A lock that never came
is reported with the process holding it (DuckDB's error names its PID).
"""

import contextlib
import logging
import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

from scrapeflow_dagster.engine.redact import redact

logger = logging.getLogger(__name__)

_MAX_BACKOFF_SECONDS = 0.5
# One thread and a memory cap: a sync is small batched inserts, and DuckDB's defaults (all
# cores, 80% of RAM) doubled the peak RSS of a run that syncs at its end.
_WRITER_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "threads": 1,
    "memory_limit": "256MB",
}


class LedgerLockedError(RuntimeError):
    """Another process held the DuckDB file for longer than we were willing to wait."""


def connect_readonly(
    db_path: Path, *, lock_timeout_seconds: float = 10.0
) -> duckdb.DuckDBPyConnection:
    """Open the ledger read-only, waiting while a sync holds it read-write.

    Close it soon: while it is open, syncs in other processes report `locked` and wait.

    Raises:
        LedgerLockedError: when a writer held the file for `lock_timeout_seconds`.
        duckdb.IOException: when the file does not exist.
    """
    return _connect_waiting(db_path, lock_timeout_seconds, read_only=True)


def connect_read_write(
    db_path: Path, lock_timeout_seconds: float
) -> duckdb.DuckDBPyConnection | None:
    """Open the ledger read-write (creating the file), waiting while another process holds it.

    Returns:
        The connection, or None when the lock did not come within `lock_timeout_seconds`.

    Raises:
        duckdb.Error: for anything but a lock conflict (a broken file, a bad path).
    """
    try:
        return _connect_waiting(db_path, lock_timeout_seconds, read_only=False)
    except LedgerLockedError as exc:
        # Expected whenever two runs end together: the caller reports it, so no warning here.
        logger.info("%s", exc)
        return None


def _connect_waiting(
    db_path: Path, lock_timeout_seconds: float, *, read_only: bool
) -> duckdb.DuckDBPyConnection:
    # A writer gets one thread and a memory cap (see _WRITER_CONFIG); a reader DuckDB's defaults.
    config = {} if read_only else _WRITER_CONFIG
    if not read_only and not db_path.exists():
        _create_empty(db_path)
    deadline = time.monotonic() + lock_timeout_seconds
    for delay in _backoff_delays():
        try:
            conn = duckdb.connect(str(db_path), read_only=read_only, config=config)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_conflict(exc):
                raise
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                holder = lock_holder(str(exc)) or str(exc)
                raise LedgerLockedError(
                    f"ledger {db_path} stayed locked for {lock_timeout_seconds:g} s: "
                    f"held by {holder}"
                ) from exc
            time.sleep(min(delay, remaining))
            continue
        # DuckDB draws a progress bar on stdout for a query past 2 s, amid a command's table
        # or export (settable per connection only, not in `config`).
        conn.execute("SET enable_progress_bar = false")
        return conn
    raise AssertionError("unreachable: _backoff_delays is endless")


def _create_empty(db_path: Path) -> None:
    """Make `db_path` an empty DuckDB file, whole or not at all: two processes that each
    created the missing file in place raced, and one read the other's half-written header
    ("not a valid DuckDB database file"). It is made under a name of this process's own, then
    linked into place (a link never replaces: the first one made wins, the others are
    dropped)."""
    temp = db_path.with_name(f".{db_path.name}.{os.getpid()}.creating")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()  # left by a killed process of the same pid
    try:
        duckdb.connect(str(temp), config=_WRITER_CONFIG).close()
        # FileExistsError: another process linked its file first, whole. Any other OSError: a
        # file system without hard links, where DuckDB creates the file in place as before.
        with contextlib.suppress(OSError):
            os.link(temp, db_path)
    finally:
        for leftover in (temp, temp.with_name(temp.name + ".wal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _backoff_delays() -> Iterator[float]:
    delay = 0.02
    while True:
        # Jitter keeps processes that collided once from retrying in lockstep.
        yield delay * random.uniform(0.5, 1.5)
        delay = min(delay * 2, _MAX_BACKOFF_SECONDS)


def _is_lock_conflict(exc: duckdb.Error) -> bool:
    text = str(exc)
    # The second one: this process already has the file open read-only (or vice versa).
    return "Could not set lock" in text or "different configuration" in text


# DuckDB's text: `Conflicting lock is held in /usr/bin/python3 (PID 12345)`.
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.*?) \(PID (?P<pid>\d+)\)")
_MAX_COMMAND_CHARS = 200


def lock_holder(error_text: str) -> str | None:
    """The process a DuckDB lock error names, as `PID 12345 (its command line)`.

    The command line is read from `/proc/<pid>/cmdline` when the system has it (redacted,
    shortened), else it is the program DuckDB names.

    Returns:
        The description, or None when the text names no process.
    """
    found = _LOCK_HOLDER.search(error_text)
    if found is None:
        return None
    pid = int(found["pid"])
    command = _command_line(pid) or found["program"]
    return f"PID {pid} ({command})"


def find_lock_holder(db_path: Path) -> str | None:
    """Try once to open `db_path` read-write, and describe the process that holds it.

    For a message after a wait ran out: the opener that waited may not keep DuckDB's text.

    Returns:
        `lock_holder`'s description, or None when the file is free now (or the holder unnamed).
    """
    try:
        conn = duckdb.connect(str(db_path), read_only=False, config=_WRITER_CONFIG)
    except (duckdb.IOException, duckdb.ConnectionException) as exc:
        return lock_holder(str(exc)) if _is_lock_conflict(exc) else None
    conn.close()
    return None


def _command_line(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # not Linux, or the process is gone
        return None
    # A `python -c` script may span lines: one line, and never a credential, in our message.
    parts = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    command = " ".join(redact(" ".join(parts)).split())
    if len(command) > _MAX_COMMAND_CHARS:
        command = command[: _MAX_COMMAND_CHARS - 3] + "..."
    return command or None

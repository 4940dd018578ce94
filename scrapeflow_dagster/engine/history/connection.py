"""Opening the DuckDB file under its one-writer-process rule: wait with backoff, or give up.

DuckDB lets one process open a file read-write, and none while another process holds it (even
read-only). Both openers here retry a lock conflict with jittered exponential backoff until a
deadline; any other failure (a missing or broken file) is raised at once.
"""

import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

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
    deadline = time.monotonic() + lock_timeout_seconds
    for delay in _backoff_delays():
        try:
            return duckdb.connect(str(db_path), read_only=read_only, config=config)
        except (duckdb.IOException, duckdb.ConnectionException) as exc:
            if not _is_lock_conflict(exc):
                raise
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LedgerLockedError(f"ledger {db_path} stayed locked: {exc}") from exc
            time.sleep(min(delay, remaining))
    raise AssertionError("unreachable: _backoff_delays is endless")


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

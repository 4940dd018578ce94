"""Spool files on disk: where they go, how they are named, listed, and set aside when unusable.

A spool file is a batch of rows as JSONL, written atomically by a `Ledger` and deleted by the
sync that ingested it. Names sort in write order, so rows of one key replay in order.
"""

import logging
import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import orjson

logger = logging.getLogger(__name__)

SPOOL_DIR_NAME = "ledger-spool"
SPOOL_SUFFIX = ".jsonl"
# A spool file that DuckDB cannot read is renamed with this suffix, out of the next sync's way.
BAD_SPOOL_SUFFIX = ".bad"


def default_spool_dir(db_path: Path) -> Path:
    """The spool folder used when none is given: `<db_path.parent>/ledger-spool/`."""
    return Path(db_path).parent / SPOOL_DIR_NAME


def new_spool_name() -> str:
    """A unique spool file name `<ts>-<pid>-<uuid>.jsonl` whose name order is write order."""
    # Zero-padded nanoseconds so that sorting names sorts files by the time they were written.
    return f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex}{SPOOL_SUFFIX}"


def spool_files(spool_dir: Path) -> list[Path]:
    """The complete spool files in `spool_dir`, oldest first; none when the folder is missing.

    Raises:
        OSError: when the folder exists but cannot be listed.
    """
    try:
        entries = list(os.scandir(spool_dir))
    except FileNotFoundError:
        return []
    # Dot-files are the atomic writer's temp files, not yet complete.
    names = sorted(
        e.name for e in entries if e.name.endswith(SPOOL_SUFFIX) and not e.name.startswith(".")
    )
    return [spool_dir / name for name in names]


def quarantine(path: Path, exc: Exception) -> Path | None:
    """Rename an unusable spool file to `*.jsonl.bad` and log why.

    Returns:
        The new path, or None when the file had already gone.

    Raises:
        OSError: when the rename fails for another reason.
    """
    bad = path.with_name(path.name + BAD_SPOOL_SUFFIX)
    try:
        os.replace(path, bad)
    except FileNotFoundError:
        return None  # Deleted by hand while we read it: nothing left to set aside.
    logger.error("spool file %s is unusable, moved to %s: %s", path, bad, exc)
    return bad


def bad_spool_files(spool_dir: Path) -> list[Path]:
    """The spool files a sync set aside as unreadable (`quarantine`); none when the folder is
    missing.

    Raises:
        OSError: when the folder exists but cannot be listed.
    """
    try:
        entries = list(os.scandir(spool_dir))
    except FileNotFoundError:
        return []
    suffix = SPOOL_SUFFIX + BAD_SPOOL_SUFFIX
    return sorted(Path(e.path) for e in entries if e.name.endswith(suffix))


def step_keys(paths: Iterable[Path]) -> tuple[set[str], int]:
    """The task keys of the step rows in spool files, line by line (a bad line is counted,
    the others still read; a file gone meanwhile is skipped).

    Returns:
        The keys, and how many lines could not be read as a row.
    """
    keys: set[str] = set()
    bad_lines = 0
    for path in paths:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue  # ingested since the listing
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                bad_lines += 1
                continue
            if not isinstance(row, dict):
                bad_lines += 1
            elif row.get("kind") == "s":
                key = row.get("key")
                if isinstance(key, str):
                    keys.add(key)
                else:
                    bad_lines += 1
    return keys, bad_lines

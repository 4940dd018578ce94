"""Status files on disk: one `<key>.status.json` per task, read safely, written atomically."""

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import orjson
from pydantic import ValidationError

from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.state.atomic import (
    create_bytes_atomic,
    json_bytes,
    write_json_atomic,
)
from scrapeflow_dagster.engine.state.schema import STATUS_SUFFIX, StatusData, StatusModel

logger = logging.getLogger(__name__)


def status_path(directory: Path, key: str) -> Path:
    """Where the status file of `key` lives."""
    return Path(directory) / f"{key}{STATUS_SUFFIX}"


def parse_status_bytes(data: bytes, path: Path) -> StatusData:
    """Parse and validate a status file's bytes.

    Raises:
        StatusFileError: naming `path`, for truncated, non-JSON or foreign content.
    """
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise StatusFileError(f"status file {path} is not valid JSON (truncated?): {exc}") from None
    try:
        StatusModel.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        raise StatusFileError(
            f"status file {path} is not a scrapeflow status ({where}: {first['msg']})"
        ) from None
    status: StatusData = raw
    return status


def load_status(directory: Path, key: str) -> StatusData | None:
    """Read the status of `key`, or None when it has none yet.

    Raises:
        StatusFileError: when the file exists but is corrupt or foreign.
    """
    # Plain strings and os.open(): this runs once per task per step, and pathlib parsing showed
    # up in profiles of 10,000-task runs.
    path = os.path.join(directory, key + STATUS_SUFFIX)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):  # status files are small: one read, then EOF
            chunks.append(chunk)
    finally:
        os.close(fd)
    return parse_status_bytes(b"".join(chunks), Path(path))


def write_status(directory: Path, key: str, status: StatusData) -> None:
    """Write the status of `key` atomically (temp file, then rename)."""
    write_json_atomic(os.path.join(directory, key + STATUS_SUFFIX), status)


def create_status(directory: Path, key: str, status: StatusData) -> bool:
    """Write the first status of `key` atomically, unless it has one (even one that another
    process wrote a moment ago: that one is left untouched).

    Returns:
        True when written, False when `key` already had a status file.
    """
    return create_bytes_atomic(os.path.join(directory, key + STATUS_SUFFIX), json_bytes(status))


def stored_keys(directory: Path) -> set[str]:
    """The keys that have a status file in `directory` (one listing; empty when missing)."""
    try:
        entries = os.scandir(directory)
    except FileNotFoundError:
        return set()
    cut = len(STATUS_SUFFIX)
    with entries:
        return {name[:-cut] for name in (entry.name for entry in entries) if is_status_name(name)}


def is_status_name(name: str) -> bool:
    """Whether a file `name` in a status folder is a task's status file (not a temp file)."""
    return name.endswith(STATUS_SUFFIX) and not name.startswith(".")


def iter_status_files(directory: Path) -> Iterator[Path]:
    """Every status file in `directory` (not recursive), in no particular order."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if is_status_name(entry.name):
                yield Path(entry.path)


def iter_statuses(
    directory: Path, *, errors: list[tuple[Path, str]] | None = None
) -> Iterator[tuple[str, StatusData]]:
    """Yield `(key, status)` for every readable status file; bad files are logged and skipped.

    Args:
        directory: the status folder.
        errors: if given, `(path, message)` of each unreadable file is appended to it.
    """
    for path in iter_status_files(directory):
        key = path.name[: -len(STATUS_SUFFIX)]
        try:
            yield key, parse_status_bytes(path.read_bytes(), path)
        except (StatusFileError, OSError) as exc:
            logger.warning("%s", exc)
            if errors is not None:
                errors.append((path, str(exc)))
